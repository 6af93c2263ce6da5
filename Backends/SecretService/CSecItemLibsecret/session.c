/* The encryption session with the provider (the Secret Service specification's
 * "dh-ietf1024-sha256-aes128-cbc-pkcs7"), done here with libcrypto instead of by
 * libsecret (issue 24). libsecret's own session generates its Diffie-Hellman pair and
 * the shared secret with libgcrypt's generic modular exponentiation: 23 million of the
 * 31.7 million instructions of a `secret-tool lookup` (callgrind), and as much of every
 * `secitem find -w` on the Secret Service. OpenSSL's does the same two exponentiations in
 * well under a million. The wire format is libsecret's, byte for byte (so every provider
 * that talks to libsecret talks to this): the client's public key as 128 big-endian bytes,
 * the shared secret padded with zero bytes to the prime's 128, HKDF-SHA256 with no salt
 * and no info to a 16-byte AES-128 key, each secret AES-128-CBC with PKCS#7 padding under
 * a random 16-byte IV. A provider that offers no such session is asked for "plain", as
 * libsecret does. The exponentiations are libcrypto's (its BIGNUM arithmetic, which needs
 * none of OpenSSL's providers); HMAC-SHA256 and AES-128-CBC are libgcrypt's, from the
 * libsecret already loaded (gcrypt_api.h), or libcrypto's EVP when it has none.
 *
 * The session is opened with plain GDBus calls (csecitem_session_begin, connection.c) and
 * belongs to the backend's session object (csecitem_session_free), not to a libsecret
 * proxy: the read path creates none. */
#include "internal.h"
#include "gcrypt_api.h"
#include <dlfcn.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>

#define CSECITEM_DH_BYTES 128
#define CSECITEM_AES_BYTES 16

struct CSecItemSession {
    gchar *path;
    gboolean plain;
    unsigned char key[CSECITEM_AES_BYTES];
};

struct CSecItemSessionOffer {
    BIGNUM *prime;
    BIGNUM *private_key;
    unsigned char public_key[CSECITEM_DH_BYTES];
};

void csecitem_session_free(gpointer data) {
    CSecItemSession *session = (CSecItemSession *)data;
    if (session == NULL) return;
    OPENSSL_cleanse(session->key, sizeof session->key);
    g_free(session->path);
    g_free(session);
}

void csecitem_session_offer_free(CSecItemSessionOffer *offer) {
    if (offer == NULL) return;
    BN_free(offer->prime);
    BN_clear_free(offer->private_key);
    g_free(offer);
}

/* The client's half: a private exponent x and its public value 2^x mod p (constant time
 * in x), in the IETF 1024-bit MODP group (RFC 2409, group 2). x is 256 random bits from
 * the kernel (getrandom), its top bit set: twice the group's ~80-bit strength and more, as
 * NIST SP 800-56A and RFC 7919 ask of a safe-prime group's exponent (OpenSSL's own DH keys
 * in named groups are that short), and a quarter of the exponentiation of a 1024-bit one;
 * the kernel's generator saves starting OpenSSL's (8 million instructions, callgrind).
 * NULL when there is no randomness or libcrypto fails. */
CSecItemSessionOffer *csecitem_session_offer_new(void) {
    CSecItemSessionOffer *offer = g_new0(CSecItemSessionOffer, 1);
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *generator = BN_new();
    BIGNUM *public_key = BN_new();
    unsigned char exponent[32];
    gboolean drawn = getrandom(exponent, sizeof exponent, 0) == (ssize_t)sizeof exponent;
    exponent[0] |= 0x80;
    offer->prime = BN_get_rfc2409_prime_1024(NULL);
    offer->private_key = BN_secure_new();
    gboolean ok = drawn && ctx != NULL && generator != NULL && public_key != NULL && offer->prime != NULL
                  && offer->private_key != NULL && BN_set_word(generator, 2)
                  && BN_bin2bn(exponent, sizeof exponent, offer->private_key) != NULL;
    OPENSSL_cleanse(exponent, sizeof exponent);
    if (ok) BN_set_flags(offer->private_key, BN_FLG_CONSTTIME);
    ok = ok && BN_mod_exp_mont_consttime(public_key, generator, offer->private_key, offer->prime, ctx, NULL)
         && BN_bn2binpad(public_key, offer->public_key, CSECITEM_DH_BYTES) == CSECITEM_DH_BYTES;
    BN_free(public_key);
    BN_free(generator);
    BN_CTX_free(ctx);
    if (!ok) {
        csecitem_session_offer_free(offer);
        return NULL;
    }
    return offer;
}

/* Service.OpenSession's parameters for the offer: (s v), the algorithm and the public key. */
GVariant *csecitem_session_offer_parameters(const CSecItemSessionOffer *offer) {
    if (offer == NULL) return g_variant_new("(sv)", "plain", g_variant_new_string(""));
    return g_variant_new("(sv)", "dh-ietf1024-sha256-aes128-cbc-pkcs7",
                         g_variant_new_fixed_array(G_VARIANT_TYPE("y"), offer->public_key, CSECITEM_DH_BYTES, 1));
}

/* libgcrypt, from the libsecret the process has loaded (gcrypt_api.h says why); when it
 * cannot be had (a libsecret built without it), libcrypto's EVP does the same. */
#define CSECITEM_GCRY_FIELD(type, name, parameters) type(*name) parameters;
static struct {
    CSECITEM_GCRYPT_FUNCTIONS(CSECITEM_GCRY_FIELD)
} csecitem_gcry;
static gboolean csecitem_gcry_ready;
static pthread_once_t csecitem_gcry_once = PTHREAD_ONCE_INIT;

static void csecitem_gcry_load(void) {
    void *handle = dlopen(CSECITEM_GCRYPT_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) return;
    gboolean found = TRUE;
#define CSECITEM_GCRY_RESOLVE(type, name, parameters)                         \
    *(void **)&csecitem_gcry.name = dlsym(handle, #name);                     \
    found = found && csecitem_gcry.name != NULL;
    CSECITEM_GCRYPT_FUNCTIONS(CSECITEM_GCRY_RESOLVE)
    /* gcry_check_version initialises the library (libsecret's own initialisation, when it
     * needs libgcrypt later, still runs: it checks GCRYCTL_INITIALIZATION_FINISHED_P). */
    csecitem_gcry_ready = found && csecitem_gcry.gcry_check_version(NULL) != NULL;
}

static gboolean csecitem_gcry_available(void) {
    pthread_once(&csecitem_gcry_once, csecitem_gcry_load);
    return csecitem_gcry_ready;
}

/* HMAC-SHA256 of one message: 32 bytes into `out`. */
static gboolean csecitem_session_hmac(const unsigned char *key, size_t key_length, const unsigned char *message,
                                      size_t length, unsigned char *out) {
    if (csecitem_gcry_available()) {
        csecitem_gcry_buffer_t parts[2] = {
            {.size = key_length, .off = 0, .len = key_length, .data = (void *)key},
            {.size = length, .off = 0, .len = length, .data = (void *)message},
        };
        return csecitem_gcry.gcry_md_hash_buffers(CSECITEM_GCRY_MD_SHA256, CSECITEM_GCRY_MD_FLAG_HMAC, out, parts, 2)
               == 0;
    }
    unsigned int written = 0;
    return HMAC(EVP_sha256(), key, (int)key_length, message, length, out, &written) != NULL && written == 32;
}

/* AES-128-CBC of whole blocks (`length` a multiple of 16; the caller pads), into `out`. */
static gboolean csecitem_session_cbc(gboolean encrypt, const unsigned char *key, const unsigned char *iv,
                                     const unsigned char *in, size_t length, unsigned char *out) {
    if (csecitem_gcry_available()) {
        csecitem_gcry_cipher_hd_t cipher = NULL;
        if (csecitem_gcry.gcry_cipher_open(&cipher, CSECITEM_GCRY_CIPHER_AES128, CSECITEM_GCRY_CIPHER_MODE_CBC, 0) != 0)
            return FALSE;
        gboolean ok = csecitem_gcry.gcry_cipher_setkey(cipher, key, CSECITEM_AES_BYTES) == 0
                      && csecitem_gcry.gcry_cipher_setiv(cipher, iv, CSECITEM_AES_BYTES) == 0
                      && (encrypt ? csecitem_gcry.gcry_cipher_encrypt(cipher, out, length, in, length)
                                  : csecitem_gcry.gcry_cipher_decrypt(cipher, out, length, in, length))
                             == 0;
        csecitem_gcry.gcry_cipher_close(cipher);
        return ok;
    }
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int written = 0;
    gboolean ok = ctx != NULL && EVP_CipherInit_ex(ctx, EVP_aes_128_cbc(), NULL, key, iv, encrypt ? 1 : 0)
                  && EVP_CIPHER_CTX_set_padding(ctx, 0) && EVP_CipherUpdate(ctx, out, &written, in, (int)length)
                  && (size_t)written == length;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/* HKDF-SHA256 (RFC 5869) with no salt (a hash's length of zeros) and no info, 16 bytes out. */
static gboolean csecitem_session_hkdf(const unsigned char *ikm, size_t length, unsigned char *key) {
    static const unsigned char salt[32] = {0};
    static const unsigned char counter[1] = {1};
    unsigned char prk[32], okm[32];
    gboolean ok = csecitem_session_hmac(salt, sizeof salt, ikm, length, prk)
                  && csecitem_session_hmac(prk, sizeof prk, counter, sizeof counter, okm);
    if (ok) memcpy(key, okm, CSECITEM_AES_BYTES);
    OPENSSL_cleanse(prk, sizeof prk);
    OPENSSL_cleanse(okm, sizeof okm);
    return ok;
}

/* OpenSession's reply ((vo), consumed) for `offer` (NULL: the plain session) → the
 * session, or NULL with *error set when the provider's public value is not one (not a
 * byte array, outside 1 < y < p - 1, or longer than 128 bytes without its leading zeros)
 * or libcrypto fails. */
CSecItemSession *csecitem_session_from_reply(const CSecItemSessionOffer *offer, GVariant *reply, GError **error) {
    GVariant *output = NULL;
    gchar *path = NULL;
    g_variant_get(reply, "(vo)", &output, &path);
    g_variant_unref(reply);
    CSecItemSession *session = g_new0(CSecItemSession, 1);
    session->path = path;
    session->plain = offer == NULL;
    gboolean ok = TRUE;
    if (offer != NULL) {
        gsize length = 0;
        const unsigned char *peer = g_variant_is_of_type(output, G_VARIANT_TYPE("ay"))
                                        ? g_variant_get_fixed_array(output, &length, 1)
                                        : NULL;
        /* An unsigned big-endian number, of any length: KWallet (QCA) sends a leading zero
         * byte before a value whose top bit is set (129 bytes), as libsecret's own
         * reading (gcry_mpi_scan, unsigned) accepts. */
        while (peer != NULL && length > 0 && peer[0] == 0) {
            peer++;
            length--;
        }
        BN_CTX *ctx = BN_CTX_new();
        BIGNUM *y = peer != NULL && length > 0 && length <= CSECITEM_DH_BYTES ? BN_bin2bn(peer, (int)length, NULL) : NULL;
        BIGNUM *bound = BN_new();
        BIGNUM *shared = BN_secure_new();
        unsigned char ikm[CSECITEM_DH_BYTES];
        ok = ctx != NULL && y != NULL && bound != NULL && shared != NULL && BN_sub(bound, offer->prime, BN_value_one())
             && BN_cmp(y, BN_value_one()) > 0 && BN_cmp(y, bound) < 0
             && BN_mod_exp_mont_consttime(shared, y, offer->private_key, offer->prime, ctx, NULL)
             && BN_bn2binpad(shared, ikm, CSECITEM_DH_BYTES) == CSECITEM_DH_BYTES
             && csecitem_session_hkdf(ikm, sizeof ikm, session->key);
        OPENSSL_cleanse(ikm, sizeof ikm);
        BN_clear_free(shared);
        BN_free(bound);
        BN_free(y);
        BN_CTX_free(ctx);
    }
    g_variant_unref(output);
    if (!ok) {
        csecitem_session_free(session);
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                            "the Secret Service's session key is not a valid Diffie-Hellman public value");
        return NULL;
    }
    return session;
}

/* A secret as the provider sent it ((oayays): session, IV, ciphertext, content type) →
 * a SecretValue (secret_value_unref, which wipes), or NULL when this session cannot
 * decrypt it (another session's, a bad length, bad padding). */
SecretValue *csecitem_session_open(const CSecItemSession *session, GVariant *encoded) {
    if (session == NULL || !g_variant_is_of_type(encoded, G_VARIANT_TYPE("(oayays)"))) return NULL;
    const gchar *path = NULL;
    GVariant *parameters = NULL, *value = NULL;
    g_variant_get(encoded, "(&o@ay@ay&s)", &path, &parameters, &value, NULL);
    gsize iv_length = 0, length = 0;
    const unsigned char *iv = g_variant_get_fixed_array(parameters, &iv_length, 1);
    const unsigned char *bytes = g_variant_get_fixed_array(value, &length, 1);
    SecretValue *result = NULL;
    if (g_strcmp0(path, session->path) != 0) {
        /* another session's secret */
    } else if (session->plain) {
        result = csecitem_value_new(bytes, length);
    } else if (iv_length == CSECITEM_AES_BYTES && length > 0 && length % CSECITEM_AES_BYTES == 0 && length <= G_MAXINT) {
        unsigned char *plain = g_malloc0_n(length, 1);
        if (csecitem_session_cbc(FALSE, session->key, iv, bytes, length, plain)) {
            /* PKCS#7: 1 to 16 bytes, each the count. */
            unsigned char pad = plain[length - 1];
            gboolean padded = pad >= 1 && pad <= CSECITEM_AES_BYTES;
            for (size_t i = 0; padded && i < pad; i++) padded = plain[length - 1 - i] == pad;
            if (padded) result = csecitem_value_new(plain, length - pad);
        }
        OPENSSL_cleanse(plain, length);
        g_free(plain);
    }
    g_variant_unref(parameters);
    g_variant_unref(value);
    return result;
}

/* The secrets of a GetSecrets reply ((a{o(oayays)}), consumed) as a table path →
 * SecretValue (secret_value_unref on removal, which wipes). A secret the session
 * cannot decrypt is left out and counted in *undecodable: KWallet answers with a key
 * the session does not share in about 1 session in 100–250 (docs/secret-service-mapping.md). */
GHashTable *csecitem_session_open_all(const CSecItemSession *session, GVariant *reply, guint *undecodable) {
    GHashTable *table = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)secret_value_unref);
    GVariant *all = g_variant_get_child_value(reply, 0);
    GVariantIter iter;
    const gchar *path;
    GVariant *encoded;
    *undecodable = 0;
    g_variant_iter_init(&iter, all);
    while (g_variant_iter_next(&iter, "{&o@(oayays)}", &path, &encoded)) {
        SecretValue *value = csecitem_session_open(session, encoded);
        g_variant_unref(encoded);
        if (value != NULL) {
            g_hash_table_replace(table, g_strdup(path), value);
        } else {
            (*undecodable)++;
        }
    }
    g_variant_unref(all);
    g_variant_unref(reply);
    return table;
}

/* `length` bytes as a secret for the provider ((oayays), floating), encrypted for this
 * session under a fresh IV; NULL when there is no session or libcrypto fails. */
GVariant *csecitem_session_seal(const CSecItemSession *session, const void *bytes, gsize length,
                                const char *content_type) {
    static const unsigned char nothing[1] = {0};
    if (session == NULL || length > G_MAXINT - CSECITEM_AES_BYTES) return NULL;
    if (bytes == NULL) bytes = nothing;
    if (session->plain) {
        return g_variant_new("(o@ay@ays)", session->path, g_variant_new_fixed_array(G_VARIANT_TYPE("y"), "", 0, 1),
                             g_variant_new_fixed_array(G_VARIANT_TYPE("y"), bytes, length, 1), content_type);
    }
    unsigned char iv[CSECITEM_AES_BYTES];
    /* PKCS#7: 1 to 16 bytes, each the count (a whole block when the length is a multiple). */
    gsize pad = CSECITEM_AES_BYTES - length % CSECITEM_AES_BYTES;
    gsize padded = length + pad;
    unsigned char *plain = g_malloc0_n(padded, 1);
    unsigned char *sealed = g_malloc0_n(padded, 1);
    memcpy(plain, bytes, length);
    memset(plain + length, (int)pad, pad);
    GVariant *result = NULL;
    if (getrandom(iv, sizeof iv, 0) == (ssize_t)sizeof iv
        && csecitem_session_cbc(TRUE, session->key, iv, plain, padded, sealed)) {
        result = g_variant_new("(o@ay@ays)", session->path,
                               g_variant_new_fixed_array(G_VARIANT_TYPE("y"), iv, sizeof iv, 1),
                               g_variant_new_fixed_array(G_VARIANT_TYPE("y"), sealed, padded, 1), content_type);
    }
    OPENSSL_cleanse(plain, padded);
    g_free(plain);
    g_free(sealed);
    return result;
}

/* ---- The readings of provider bytes, for the fuzz target (see the public header) ---- */

void csecitem_session_offer_public_value(const CSecItemSessionOffer *offer, guint8 *out) {
    memcpy(out, offer->public_key, CSECITEM_DH_BYTES);
}

const gchar *csecitem_session_object_path(const CSecItemSession *session) { return session->path; }

/* Untrusted serialized bytes as a GVariant of `type`, in memory of its own (malloc's
 * alignment, which every GVariant type's reading assumes), as GDBus makes a message's body. */
static GVariant *csecitem_untrusted_variant(const char *type, const guint8 *data, gsize length) {
    guint8 *copy = g_malloc0_n(length > 0 ? length : 1, 1);
    if (length > 0) memcpy(copy, data, length);
    return g_variant_ref_sink(g_variant_new_from_data(G_VARIANT_TYPE(type), copy, length, FALSE, g_free, copy));
}

/* A GVariant's serialized bytes in memory of their own (g_free); the variant consumed. */
static guint8 *csecitem_variant_bytes(GVariant *variant, gsize *out_length) {
    GVariant *owned = g_variant_ref_sink(variant);
    gsize length = g_variant_get_size(owned);
    guint8 *copy = g_malloc0_n(length > 0 ? length : 1, 1);
    if (length > 0) memcpy(copy, g_variant_get_data(owned), length);
    g_variant_unref(owned);
    *out_length = length;
    return copy;
}

CSecItemSession *csecitem_session_read_reply(const CSecItemSessionOffer *offer, const guint8 *data, gsize length,
                                             GError **error) {
    return csecitem_session_from_reply(offer, csecitem_untrusted_variant("(vo)", data, length), error);
}

guint8 *csecitem_session_reply_bytes(const guint8 *value, gsize length, const char *path, gsize *out_length) {
    GVariant *reply =
        g_variant_new("(vo)", g_variant_new_fixed_array(G_VARIANT_TYPE("y"), value, length, 1), path);
    return csecitem_variant_bytes(reply, out_length);
}

GHashTable *csecitem_session_read_secrets(const CSecItemSession *session, const guint8 *data, gsize length,
                                          guint *undecodable) {
    return csecitem_session_open_all(session, csecitem_untrusted_variant("(a{o(oayays)})", data, length), undecodable);
}

guint8 *csecitem_session_secrets_bytes(const CSecItemSession *session, guint count, const char *const *paths,
                                       const guint8 *const *values, const gsize *lengths, gsize *out_length) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{o(oayays)}"));
    gboolean sealed = TRUE;
    for (guint i = 0; i < count; i++) {
        GVariant *secret = csecitem_session_seal(session, values[i], lengths[i], "application/octet-stream");
        if (secret == NULL) {
            sealed = FALSE;
            break;
        }
        g_variant_builder_add(&builder, "{o@(oayays)}", paths[i], secret);
    }
    GVariant *all = g_variant_builder_end(&builder);
    if (!sealed) {
        g_variant_unref(g_variant_ref_sink(all));
        return NULL;
    }
    return csecitem_variant_bytes(g_variant_new_tuple(&all, 1), out_length);
}
