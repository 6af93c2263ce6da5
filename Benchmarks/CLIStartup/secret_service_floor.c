/* The floor of a Secret Service lookup, for the CLI table of SecItemBenchmarks (`--filter cli`,
 * CLIStartupBenchmarks.swift; issue 24): the
 * least a program does to read one secret from the session bus's provider with an
 * encrypted session, as `secret-tool lookup` and `secitem find -w` do, and nothing else.
 *
 *   secret_service_floor SERVICE ACCOUNT
 *
 * One GDBus connection; Service.OpenSession (dh-ietf1024-sha256-aes128-cbc-pkcs7, its
 * Diffie-Hellman in libcrypto with a 256-bit private exponent from getrandom, HKDF and
 * AES in libgcrypt, as the backend does), Collection.SearchItems(service, account) on the `default`
 * alias, Service.GetSecrets, AES-128-CBC open; the secret on stdout. No libsecret, no
 * proxy (no property cache, no name watching), no lock check. Exit 44 when nothing matches. */
#include <gcrypt.h>
#include <gio/gio.h>
#include <openssl/bn.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#define BUS "org.freedesktop.secrets"
#define SERVICE_PATH "/org/freedesktop/secrets"
#define SERVICE_IFACE "org.freedesktop.Secret.Service"

static GVariant *call(GDBusConnection *c, const char *path, const char *iface, const char *method, GVariant *params,
                      const char *type) {
    GError *error = NULL;
    GVariant *reply = g_dbus_connection_call_sync(c, BUS, path, iface, method, params, G_VARIANT_TYPE(type),
                                                  G_DBUS_CALL_FLAGS_NONE, 5000, NULL, &error);
    if (reply == NULL) {
        fprintf(stderr, "%s: %s\n", method, error->message);
        exit(1);
    }
    return reply;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    GError *error = NULL;
    GDBusConnection *c = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
    if (c == NULL) return 1;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *p = BN_get_rfc2409_prime_1024(NULL), *g = BN_new(), *x = BN_new(), *pub = BN_new(), *y, *s = BN_new();
    BN_set_word(g, 2);
    unsigned char exponent[32];
    if (getrandom(exponent, sizeof exponent, 0) != sizeof exponent) return 1;
    BN_bin2bn(exponent, sizeof exponent, x);
    BN_mod_exp_mont_consttime(pub, g, x, p, ctx, NULL);
    unsigned char mine[128], shared[128], prk[32], okm[32], zeros[32] = {0}, one = 1, key[16];
    BN_bn2binpad(pub, mine, 128);
    GVariant *reply = call(c, SERVICE_PATH, SERVICE_IFACE, "OpenSession",
                           g_variant_new("(sv)", "dh-ietf1024-sha256-aes128-cbc-pkcs7",
                                         g_variant_new_fixed_array(G_VARIANT_TYPE_BYTE, mine, 128, 1)),
                           "(vo)");
    GVariant *output;
    const char *session;
    g_variant_get(reply, "(v&o)", &output, &session);
    gsize n;
    const unsigned char *theirs = g_variant_get_fixed_array(output, &n, 1);
    y = BN_bin2bn(theirs, (int)n, NULL);
    BN_mod_exp_mont_consttime(s, y, x, p, ctx, NULL);
    BN_bn2binpad(s, shared, 128);
    gcry_check_version(NULL);
    gcry_buffer_t extract[2] = {{32, 0, 32, zeros}, {128, 0, 128, shared}}, expand[2] = {{32, 0, 32, prk}, {1, 0, 1, &one}};
    gcry_md_hash_buffers(GCRY_MD_SHA256, GCRY_MD_FLAG_HMAC, prk, extract, 2);
    gcry_md_hash_buffers(GCRY_MD_SHA256, GCRY_MD_FLAG_HMAC, okm, expand, 2);
    memcpy(key, okm, 16);

    GVariantBuilder attributes;
    g_variant_builder_init(&attributes, G_VARIANT_TYPE("a{ss}"));
    g_variant_builder_add(&attributes, "{ss}", "service", argv[1]);
    g_variant_builder_add(&attributes, "{ss}", "account", argv[2]);
    GVariant *found = call(c, SERVICE_PATH "/aliases/default", "org.freedesktop.Secret.Collection", "SearchItems",
                           g_variant_new("(a{ss})", &attributes), "(ao)");
    const char **paths = NULL;
    g_variant_get(found, "(^a&o)", &paths);
    if (paths[0] == NULL) return 44;
    const char *one_path[2] = {paths[0], NULL};
    GVariant *secrets = call(c, SERVICE_PATH, SERVICE_IFACE, "GetSecrets",
                             g_variant_new("(^aoo)", one_path, session), "(a{o(oayays)})");
    GVariant *all = g_variant_get_child_value(secrets, 0), *secret = g_variant_get_child_value(all, 0);
    GVariant *encoded = g_variant_get_child_value(secret, 1), *iv = g_variant_get_child_value(encoded, 1),
             *value = g_variant_get_child_value(encoded, 2);
    gsize iv_n, value_n;
    const unsigned char *iv_bytes = g_variant_get_fixed_array(iv, &iv_n, 1);
    const unsigned char *value_bytes = g_variant_get_fixed_array(value, &value_n, 1);
    unsigned char plain[4096];
    gcry_cipher_hd_t cipher;
    if (iv_n != 16 || value_n == 0 || value_n % 16 || value_n > sizeof plain
        || gcry_cipher_open(&cipher, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_CBC, 0) || gcry_cipher_setkey(cipher, key, 16)
        || gcry_cipher_setiv(cipher, iv_bytes, 16) || gcry_cipher_decrypt(cipher, plain, value_n, value_bytes, value_n))
        return 1;
    unsigned char pad = plain[value_n - 1];
    if (pad < 1 || pad > 16) return 1;
    fwrite(plain, 1, value_n - pad, stdout);
    return 0;
}
