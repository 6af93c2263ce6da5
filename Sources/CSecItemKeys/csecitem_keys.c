#include "csecitem_keys.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* A csk_key is an EVP_PKEY: the typedef only keeps libcrypto's names out of Swift. */
static EVP_PKEY *pkey(const csk_key *key) { return (EVP_PKEY *)(void *)(uintptr_t)key; }
static csk_key *wrap(EVP_PKEY *key) { return (csk_key *)(void *)key; }

void csk_buffer_free(unsigned char *buffer, size_t length) {
    if (buffer != NULL) OPENSSL_clear_free(buffer, length);
}

void csk_key_free(csk_key *key) { EVP_PKEY_free(pkey(key)); }

static const EVP_MD *digest_md(int digest) {
    switch (digest) {
    case CSK_SHA1: return EVP_sha1();
    case CSK_SHA224: return EVP_sha224();
    case CSK_SHA256: return EVP_sha256();
    case CSK_SHA384: return EVP_sha384();
    case CSK_SHA512: return EVP_sha512();
    default: return NULL;
    }
}

static const char *curve_name(int bits) {
    switch (bits) {
    case 256: return "prime256v1";
    case 384: return "secp384r1";
    case 521: return "secp521r1";
    default: return NULL;
    }
}

/* The field size in bytes of the curve of `bits`. */
static size_t field_bytes(int bits) { return (size_t)(bits + 7) / 8; }

csk_key *csk_generate(int type, int bits) {
    EVP_PKEY *key = NULL;
    if (type == CSK_TYPE_EC) {
        const char *name = curve_name(bits);
        if (name == NULL) return NULL;
        key = EVP_EC_gen(name);
    } else if (type == CSK_TYPE_RSA) {
        if (bits < 1024 || bits > 8192) return NULL;
        key = EVP_RSA_gen((unsigned int)bits);
    }
    return key == NULL ? NULL : wrap(key);
}

int csk_bits(const csk_key *key) { return EVP_PKEY_get_bits(pkey(key)); }

int csk_max_signature_size(const csk_key *key) { return EVP_PKEY_get_size(pkey(key)); }

static int is_ec(const EVP_PKEY *key) { return EVP_PKEY_get_base_id(key) == EVP_PKEY_EC; }

/* The EC key of `data` (04‖X‖Y, or 04‖X‖Y‖K when is_private) on the curve its length names. */
static EVP_PKEY *import_ec(int is_private, const unsigned char *data, size_t length) {
    static const int sizes[] = {256, 384, 521};
    int bits = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t point = 1 + 2 * field_bytes(sizes[i]);
        if (length == point + (is_private ? field_bytes(sizes[i]) : 0)) bits = sizes[i];
    }
    if (bits == 0 || data[0] != 0x04) return NULL;
    size_t point_length = 1 + 2 * field_bytes(bits);
    EVP_PKEY *key = NULL;
    BIGNUM *secret = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    OSSL_PARAM_BLD *build = OSSL_PARAM_BLD_new();
    if (build == NULL) goto done;
    if (!OSSL_PARAM_BLD_push_utf8_string(build, OSSL_PKEY_PARAM_GROUP_NAME, curve_name(bits), 0)) goto done;
    if (!OSSL_PARAM_BLD_push_octet_string(build, OSSL_PKEY_PARAM_PUB_KEY, data, point_length)) goto done;
    if (is_private) {
        secret = BN_secure_new();
        if (secret == NULL || BN_bin2bn(data + point_length, (int)field_bytes(bits), secret) == NULL) goto done;
        if (!OSSL_PARAM_BLD_push_BN(build, OSSL_PKEY_PARAM_PRIV_KEY, secret)) goto done;
    }
    params = OSSL_PARAM_BLD_to_param(build);
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0) goto done;
    if (EVP_PKEY_fromdata(ctx, &key, is_private ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params) <= 0) {
        key = NULL;
        goto done;
    }
done:
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(build);
    BN_clear_free(secret);
    return key;
}

static EVP_PKEY *import_rsa(int is_private, const unsigned char *data, size_t length) {
    if (length > 0x100000) return NULL;
    const unsigned char *p = data;
    EVP_PKEY *key = is_private ? d2i_PrivateKey(EVP_PKEY_RSA, NULL, &p, (long)length)
                               : d2i_PublicKey(EVP_PKEY_RSA, NULL, &p, (long)length);
    if (key != NULL && p != data + length) {  /* bytes after the DER */
        EVP_PKEY_free(key);
        key = NULL;
    }
    return key;
}

/* Whether the private operation of an RSA key is undone by its public one (a raw RSA
 * round trip of the value 2): libcrypto's private check looks at d's range only, so a key
 * whose d and CRT values do not belong to its n and e loaded, and signed what its own
 * public key did not verify (found by the fuzz target key). One private and one public
 * operation; libcrypto's full pairwise check would also test p and q for primality. */
static int rsa_round_trip(EVP_PKEY *key) {
    int size = EVP_PKEY_get_size(key);
    if (size < 2 || size > 2048) return 0;
    unsigned char *m = OPENSSL_zalloc((size_t)size), *s = OPENSSL_zalloc((size_t)size), *back = OPENSSL_zalloc((size_t)size);
    EVP_PKEY_CTX *sign = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    EVP_PKEY_CTX *recover = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    int ok = 0;
    if (m != NULL && s != NULL && back != NULL && sign != NULL && recover != NULL) {
        m[size - 1] = 2;
        size_t s_length = (size_t)size, back_length = (size_t)size;
        ok = EVP_PKEY_sign_init(sign) > 0 && EVP_PKEY_CTX_set_rsa_padding(sign, RSA_NO_PADDING) > 0 &&
             EVP_PKEY_sign(sign, s, &s_length, m, (size_t)size) > 0 && EVP_PKEY_verify_recover_init(recover) > 0 &&
             EVP_PKEY_CTX_set_rsa_padding(recover, RSA_NO_PADDING) > 0 &&
             EVP_PKEY_verify_recover(recover, back, &back_length, s, s_length) > 0 && back_length == (size_t)size &&
             CRYPTO_memcmp(back, m, (size_t)size) == 0;
    }
    EVP_PKEY_CTX_free(sign);
    EVP_PKEY_CTX_free(recover);
    OPENSSL_free(m);
    OPENSSL_clear_free(s, (size_t)size);
    OPENSSL_free(back);
    ERR_clear_error();
    return ok;
}

csk_key *csk_import(int type, int is_private, const unsigned char *data, size_t length) {
    if (data == NULL || length == 0) return NULL;
    EVP_PKEY *key = NULL;
    if (type == CSK_TYPE_EC) key = import_ec(is_private, data, length);
    else if (type == CSK_TYPE_RSA) key = import_rsa(is_private, data, length);
    if (key == NULL) return NULL;
    /* The point is on the curve, the private key matches the public one. */
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, key, NULL);
    int ok = ctx != NULL && EVP_PKEY_public_check(ctx) == 1;
    if (ok && is_private) ok = type == CSK_TYPE_RSA ? EVP_PKEY_private_check(ctx) == 1 : EVP_PKEY_pairwise_check(ctx) == 1;
    EVP_PKEY_CTX_free(ctx);
    if (ok && is_private && type == CSK_TYPE_RSA) ok = rsa_round_trip(key);
    if (!ok || (type == CSK_TYPE_RSA && EVP_PKEY_get_bits(key) < 512)) {
        EVP_PKEY_free(key);
        return NULL;
    }
    return wrap(key);
}

int csk_export(const csk_key *key, int is_private, unsigned char **out, size_t *out_length) {
    EVP_PKEY *k = pkey(key);
    *out = NULL;
    *out_length = 0;
    if (is_ec(k)) {
        size_t field = field_bytes(EVP_PKEY_get_bits(k));
        unsigned char point[1 + 2 * 66];
        size_t point_length = 0;
        if (EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point, &point_length) != 1)
            return -1;
        if (point_length != 1 + 2 * field || point[0] != 0x04) {
            /* Stored compressed: ask for the uncompressed encoding. */
            unsigned char *encoded = NULL;
            EVP_PKEY *copy = EVP_PKEY_dup(k);
            int ok = copy != NULL && EVP_PKEY_set_utf8_string_param(copy, OSSL_PKEY_PARAM_EC_POINT_CONVERSION_FORMAT,
                                                                     "uncompressed") == 1;
            size_t n = ok ? EVP_PKEY_get1_encoded_public_key(copy, &encoded) : 0;
            EVP_PKEY_free(copy);
            if (n != 1 + 2 * field) {
                OPENSSL_free(encoded);
                return -1;
            }
            memcpy(point, encoded, n);
            point_length = n;
            OPENSSL_free(encoded);
        }
        size_t total = point_length + (is_private ? field : 0);
        unsigned char *buffer = OPENSSL_malloc(total);
        if (buffer == NULL) return -1;
        memcpy(buffer, point, point_length);
        if (is_private) {
            BIGNUM *secret = NULL;
            int ok = EVP_PKEY_get_bn_param(k, OSSL_PKEY_PARAM_PRIV_KEY, &secret) == 1 &&
                     BN_bn2binpad(secret, buffer + point_length, (int)field) == (int)field;
            BN_clear_free(secret);
            if (!ok) {
                OPENSSL_clear_free(buffer, total);
                return -1;
            }
        }
        *out = buffer;
        *out_length = total;
        return 0;
    }
    if (EVP_PKEY_get_base_id(k) != EVP_PKEY_RSA) return -1;
    unsigned char *der = NULL;
    int n = is_private ? i2d_PrivateKey(k, &der) : i2d_PublicKey(k, &der);
    if (n <= 0) return -1;
    *out = der;
    *out_length = (size_t)n;
    return 0;
}

int csk_digest(int digest, const unsigned char *data, size_t length, unsigned char *out) {
    const EVP_MD *md = digest_md(digest);
    unsigned int n = 0;
    if (md == NULL || EVP_Digest(data, length, out, &n, md, NULL) != 1) return -1;
    return (int)n;
}

/* Sets the padding and digests of a sign, verify, encrypt or decrypt context. */
static int configure(EVP_PKEY_CTX *ctx, const EVP_PKEY *key, int padding, int digest) {
    const EVP_MD *md = digest == 0 ? NULL : digest_md(digest);
    if (digest != 0 && md == NULL) return 0;
    if (is_ec(key)) {
        if (padding != CSK_PAD_ECDSA) return 0;
        return md == NULL || EVP_PKEY_CTX_set_signature_md(ctx, md) > 0;
    }
    switch (padding) {
    case CSK_PAD_PKCS1:
        return EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) > 0;
    case CSK_PAD_RAW:
        return EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_NO_PADDING) > 0;
    case CSK_PAD_PSS:
        return md != NULL && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PSS_PADDING) > 0 &&
               EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_DIGEST) > 0 &&
               EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) > 0;
    case CSK_PAD_OAEP:
        return md != NULL && EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_OAEP_PADDING) > 0 &&
               EVP_PKEY_CTX_set_rsa_oaep_md(ctx, md) > 0 && EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, md) > 0;
    default:
        return 0;
    }
}

static int configure_signature(EVP_PKEY_CTX *ctx, const EVP_PKEY *key, int padding, int digest) {
    if (!configure(ctx, key, padding, digest)) return 0;
    /* PKCS #1 v1.5 and PSS sign a DigestInfo / encoded digest of the named digest. */
    if (!is_ec(key) && digest != 0 && padding != CSK_PAD_RAW)
        return EVP_PKEY_CTX_set_signature_md(ctx, digest_md(digest)) > 0;
    return 1;
}

typedef int (*init_fn)(EVP_PKEY_CTX *);
typedef int (*run_fn)(EVP_PKEY_CTX *, unsigned char *, size_t *, const unsigned char *, size_t);

static int run(const csk_key *key, init_fn init, run_fn fn, int signature, int padding, int digest,
               const unsigned char *input, size_t input_length, unsigned char **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    EVP_PKEY *k = pkey(key);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL);
    unsigned char *buffer = NULL;
    size_t length = 0;
    int result = -1;
    if (ctx == NULL || init(ctx) <= 0) goto done;
    if (!(signature ? configure_signature(ctx, k, padding, digest) : configure(ctx, k, padding, digest))) goto done;
    if (fn(ctx, NULL, &length, input, input_length) <= 0) goto done;
    buffer = OPENSSL_malloc(length == 0 ? 1 : length);
    if (buffer == NULL) goto done;
    size_t capacity = length;
    if (fn(ctx, buffer, &length, input, input_length) <= 0) {
        OPENSSL_clear_free(buffer, capacity);
        buffer = NULL;
        goto done;
    }
    if (length < capacity) OPENSSL_cleanse(buffer + length, capacity - length);
    *out = buffer;
    *out_length = length;
    result = 0;
done:
    EVP_PKEY_CTX_free(ctx);
    return result;
}

int csk_sign(const csk_key *key, int padding, int digest, const unsigned char *input, size_t input_length,
             unsigned char **out, size_t *out_length) {
    return run(key, EVP_PKEY_sign_init, EVP_PKEY_sign, 1, padding, digest, input, input_length, out, out_length);
}

int csk_verify(const csk_key *key, int padding, int digest, const unsigned char *input, size_t input_length,
               const unsigned char *signature, size_t signature_length) {
    EVP_PKEY *k = pkey(key);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL);
    int result = -1;
    if (ctx == NULL || EVP_PKEY_verify_init(ctx) <= 0 || !configure_signature(ctx, k, padding, digest)) goto done;
    result = EVP_PKEY_verify(ctx, signature, signature_length, input, input_length) == 1 ? 1 : 0;
done:
    EVP_PKEY_CTX_free(ctx);
    return result;
}

int csk_encrypt(const csk_key *key, int padding, int digest, const unsigned char *input, size_t input_length,
                unsigned char **out, size_t *out_length) {
    if (is_ec(pkey(key))) return -1;
    return run(key, EVP_PKEY_encrypt_init, EVP_PKEY_encrypt, 0, padding, digest, input, input_length, out, out_length);
}

int csk_decrypt(const csk_key *key, int padding, int digest, const unsigned char *input, size_t input_length,
                unsigned char **out, size_t *out_length) {
    if (is_ec(pkey(key))) return -1;
    return run(key, EVP_PKEY_decrypt_init, EVP_PKEY_decrypt, 0, padding, digest, input, input_length, out, out_length);
}

int csk_ecdh(const csk_key *private_key, const csk_key *public_key, int cofactor, unsigned char **out,
             size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    if (!is_ec(pkey(private_key)) || !is_ec(pkey(public_key))) return -1;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(NULL, pkey(private_key), NULL);
    unsigned char *buffer = NULL;
    size_t length = 0;
    int result = -1;
    if (ctx == NULL || EVP_PKEY_derive_init(ctx) <= 0) goto done;
    if (cofactor && EVP_PKEY_CTX_set_ecdh_cofactor_mode(ctx, 1) <= 0) goto done;
    if (EVP_PKEY_derive_set_peer(ctx, pkey(public_key)) <= 0) goto done;
    if (EVP_PKEY_derive(ctx, NULL, &length) <= 0) goto done;
    buffer = OPENSSL_malloc(length);
    if (buffer == NULL) goto done;
    if (EVP_PKEY_derive(ctx, buffer, &length) <= 0) {
        OPENSSL_clear_free(buffer, length);
        goto done;
    }
    *out = buffer;
    *out_length = length;
    result = 0;
done:
    EVP_PKEY_CTX_free(ctx);
    return result;
}

int csk_x963_kdf(int digest, const unsigned char *z, size_t z_length, const unsigned char *shared_info,
                 size_t shared_info_length, unsigned char *out, size_t out_length) {
    const EVP_MD *md = digest_md(digest);
    if (md == NULL) return -1;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL) return -1;
    unsigned char block[EVP_MAX_MD_SIZE];
    int result = 0;
    for (uint32_t counter = 1; out_length > 0; counter++) {
        unsigned char be[4] = {(unsigned char)(counter >> 24), (unsigned char)(counter >> 16),
                               (unsigned char)(counter >> 8), (unsigned char)counter};
        unsigned int n = 0;
        if (EVP_DigestInit_ex(ctx, md, NULL) != 1 || EVP_DigestUpdate(ctx, z, z_length) != 1 ||
            EVP_DigestUpdate(ctx, be, sizeof be) != 1 ||
            (shared_info_length > 0 && EVP_DigestUpdate(ctx, shared_info, shared_info_length) != 1) ||
            EVP_DigestFinal_ex(ctx, block, &n) != 1) {
            result = -1;
            break;
        }
        size_t take = out_length < n ? out_length : n;
        memcpy(out, block, take);
        out += take;
        out_length -= take;
    }
    OPENSSL_cleanse(block, sizeof block);
    EVP_MD_CTX_free(ctx);
    return result;
}

static const EVP_CIPHER *gcm_cipher(size_t key_length) {
    switch (key_length) {
    case 16: return EVP_aes_128_gcm();
    case 24: return EVP_aes_192_gcm();
    case 32: return EVP_aes_256_gcm();
    default: return NULL;
    }
}

static int gcm(int encrypt, const unsigned char *key, size_t key_length, const unsigned char *iv, size_t iv_length,
               const unsigned char *input, size_t input_length, unsigned char *out, unsigned char *tag) {
    const EVP_CIPHER *cipher = gcm_cipher(key_length);
    if (cipher == NULL || iv_length == 0 || input_length > 0x7fffffff) return -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return -1;
    int n = 0;
    int result = -1;
    if (EVP_CipherInit_ex(ctx, cipher, NULL, NULL, NULL, encrypt) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, (int)iv_length, NULL) != 1) goto done;
    if (EVP_CipherInit_ex(ctx, NULL, NULL, key, iv, encrypt) != 1) goto done;
    if (input_length > 0 && EVP_CipherUpdate(ctx, out, &n, input, (int)input_length) != 1) goto done;
    if (!encrypt && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) != 1) goto done;
    if (EVP_CipherFinal_ex(ctx, out + n, &n) != 1) {
        result = encrypt ? -1 : 1;
        if (!encrypt) OPENSSL_cleanse(out, input_length);
        goto done;
    }
    if (encrypt && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1) goto done;
    result = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    return result;
}

int csk_gcm_seal(const unsigned char *key, size_t key_length, const unsigned char *iv, size_t iv_length,
                 const unsigned char *input, size_t input_length, unsigned char *out, unsigned char *tag) {
    return gcm(1, key, key_length, iv, iv_length, input, input_length, out, tag);
}

int csk_gcm_open(const unsigned char *key, size_t key_length, const unsigned char *iv, size_t iv_length,
                 const unsigned char *input, size_t input_length, const unsigned char *tag, unsigned char *out) {
    return gcm(0, key, key_length, iv, iv_length, input, input_length, out, (unsigned char *)(uintptr_t)tag);
}

/* MARK: Certificates */

static X509 *x509(const csk_cert *cert) { return (X509 *)(void *)(uintptr_t)cert; }

csk_cert *csk_cert_parse(const unsigned char *der, size_t length) {
    if (der == NULL || length == 0 || length > 0x1000000) return NULL;
    const unsigned char *p = der;
    X509 *cert = d2i_X509(NULL, &p, (long)length);
    if (cert != NULL && p != der + length) {
        X509_free(cert);
        cert = NULL;
    }
    return (csk_cert *)(void *)cert;
}

void csk_cert_free(csk_cert *cert) { X509_free(x509(cert)); }

static int take_bytes(const unsigned char *bytes, size_t length, unsigned char **out, size_t *out_length) {
    *out = OPENSSL_malloc(length == 0 ? 1 : length);
    if (*out == NULL) return -1;
    if (length > 0) memcpy(*out, bytes, length);
    *out_length = length;
    return 0;
}

/* The content of one DER TLV (tag and length skipped). */
static int der_content(const unsigned char *der, long length, const unsigned char **content, long *content_length) {
    const unsigned char *p = der;
    long n = 0;
    int tag = 0, xclass = 0;
    if (ASN1_get_object(&p, &n, &tag, &xclass, length) & 0x80) return -1;
    if (p + n != der + length) return -1;
    *content = p;
    *content_length = n;
    return 0;
}

int csk_cert_der(const csk_cert *cert, unsigned char **out, size_t *out_length) {
    unsigned char *der = NULL;
    int n = i2d_X509(x509(cert), &der);
    if (n <= 0) return -1;
    *out = der;
    *out_length = (size_t)n;
    return 0;
}

int csk_cert_version(const csk_cert *cert) { return (int)X509_get_version(x509(cert)) + 1; }

int csk_cert_serial(const csk_cert *cert, unsigned char **out, size_t *out_length) {
    unsigned char *der = NULL;
    int n = i2d_ASN1_INTEGER(X509_get0_serialNumber(x509(cert)), &der);
    const unsigned char *content = NULL;
    long content_length = 0;
    int result = -1;
    if (n > 0 && der_content(der, n, &content, &content_length) == 0)
        result = take_bytes(content, (size_t)content_length, out, out_length);
    OPENSSL_free(der);
    return result;
}

/* `value` as Apple normalizes it: UTF-8, ASCII upper case, spaces trimmed and collapsed. */
static ASN1_STRING *normalized_string(const ASN1_STRING *value) {
    unsigned char *utf8 = NULL;
    int n = ASN1_STRING_to_UTF8(&utf8, value);
    if (n < 0) return NULL;
    unsigned char *w = utf8;
    int space = 0;
    for (int i = 0; i < n; i++) {
        unsigned char ch = utf8[i];
        if (ch == ' ') {
            space = (w != utf8);
            continue;
        }
        if (space) *w++ = ' ';
        space = 0;
        *w++ = (ch >= 'a' && ch <= 'z') ? (unsigned char)(ch - 'a' + 'A') : ch;
    }
    ASN1_STRING *out = ASN1_STRING_type_new(V_ASN1_UTF8STRING);
    if (out != NULL && !ASN1_STRING_set(out, utf8, (int)(w - utf8))) {
        ASN1_STRING_free(out);
        out = NULL;
    }
    OPENSSL_free(utf8);
    return out;
}

/* A new name with the entries of `name`, their string values normalized, in the same RDNs. */
static X509_NAME *normalized_name(const X509_NAME *name) {
    X509_NAME *out = X509_NAME_new();
    if (out == NULL) return NULL;
    int previous_set = -1;
    for (int i = 0; i < X509_NAME_entry_count(name); i++) {
        const X509_NAME_ENTRY *entry = X509_NAME_get_entry(name, i);
        const ASN1_STRING *value = X509_NAME_ENTRY_get_data(entry);
        int set = X509_NAME_ENTRY_set(entry);
        int type = ASN1_STRING_type(value);
        int ok;
        /* A new RDN (set 0), or a further value of the previous one (set -1). */
        int where = (i > 0 && set == previous_set) ? -1 : 0;
        previous_set = set;
        if (type == V_ASN1_BIT_STRING || type == V_ASN1_OCTET_STRING || type == V_ASN1_SEQUENCE) {
            ok = X509_NAME_add_entry_by_OBJ(out, X509_NAME_ENTRY_get_object(entry), type, ASN1_STRING_get0_data(value),
                                            ASN1_STRING_length(value), -1, where);
        } else {
            ASN1_STRING *normal = normalized_string(value);
            ok = normal != NULL && X509_NAME_add_entry_by_OBJ(out, X509_NAME_ENTRY_get_object(entry), V_ASN1_UTF8STRING,
                                                              ASN1_STRING_get0_data(normal), ASN1_STRING_length(normal), -1,
                                                              where);
            ASN1_STRING_free(normal);
        }
        if (!ok) {
            X509_NAME_free(out);
            return NULL;
        }
    }
    return out;
}

int csk_cert_name(const csk_cert *cert, int issuer, int normalized, unsigned char **out, size_t *out_length) {
    const X509_NAME *name = issuer ? X509_get_issuer_name(x509(cert)) : X509_get_subject_name(x509(cert));
    X509_NAME *normal = normalized ? normalized_name(name) : NULL;
    if (normalized && normal == NULL) return -1;
    unsigned char *der = NULL;
    int n = i2d_X509_NAME(normalized ? normal : name, &der);
    X509_NAME_free(normal);
    const unsigned char *content = NULL;
    long content_length = 0;
    int result = -1;
    if (n > 0 && der_content(der, n, &content, &content_length) == 0)
        result = take_bytes(content, (size_t)content_length, out, out_length);
    OPENSSL_free(der);
    return result;
}

int csk_cert_subject_key_id(const csk_cert *cert, unsigned char **out, size_t *out_length) {
    const ASN1_OCTET_STRING *id = X509_get0_subject_key_id(x509(cert));
    if (id == NULL) return -1;
    return take_bytes(ASN1_STRING_get0_data(id), (size_t)ASN1_STRING_length(id), out, out_length);
}

int csk_cert_public_key_bits(const csk_cert *cert, unsigned char **out, size_t *out_length) {
    X509_PUBKEY *spki = X509_get_X509_PUBKEY(x509(cert));
    const unsigned char *bits = NULL;
    int n = 0;
    if (spki == NULL || !X509_PUBKEY_get0_param(NULL, &bits, &n, NULL, spki) || n < 0) return -1;
    return take_bytes(bits, (size_t)n, out, out_length);
}

int csk_cert_public_key_type(const csk_cert *cert) {
    EVP_PKEY *key = X509_get0_pubkey(x509(cert));
    if (key == NULL) return 0;
    if (EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA) return CSK_TYPE_RSA;
    if (is_ec(key) && curve_name(EVP_PKEY_get_bits(key)) != NULL) return CSK_TYPE_EC;
    return 0;
}

/* Appends `length` bytes and a NUL to the growing buffer. */
static int append(unsigned char **buffer, size_t *used, const unsigned char *bytes, size_t length) {
    unsigned char *grown = OPENSSL_realloc(*buffer, *used + length + 1);
    if (grown == NULL) return -1;
    memcpy(grown + *used, bytes, length);
    grown[*used + length] = 0;
    *buffer = grown;
    *used += length + 1;
    return 0;
}

int csk_cert_subject_values(const csk_cert *cert, int nid, int san_emails, unsigned char **out, size_t *out_length) {
    const X509_NAME *name = X509_get_subject_name(x509(cert));
    unsigned char *buffer = NULL;
    size_t used = 0;
    int ok = 1;
    for (int i = X509_NAME_get_index_by_NID(name, nid, -1); ok && i >= 0; i = X509_NAME_get_index_by_NID(name, nid, i)) {
        unsigned char *utf8 = NULL;
        int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
        ok = n >= 0 && append(&buffer, &used, utf8, (size_t)n) == 0;
        OPENSSL_free(utf8);
    }
    if (ok && san_emails) {
        GENERAL_NAMES *names = X509_get_ext_d2i(x509(cert), NID_subject_alt_name, NULL, NULL);
        for (int i = 0; ok && names != NULL && i < sk_GENERAL_NAME_num(names); i++) {
            const GENERAL_NAME *general = sk_GENERAL_NAME_value(names, i);
            if (general->type != GEN_EMAIL) continue;
            ok = append(&buffer, &used, ASN1_STRING_get0_data(general->d.rfc822Name),
                        (size_t)ASN1_STRING_length(general->d.rfc822Name)) == 0;
        }
        GENERAL_NAMES_free(names);
    }
    if (!ok) {
        OPENSSL_free(buffer);
        return -1;
    }
    if (buffer == NULL) return take_bytes(NULL, 0, out, out_length);
    *out = buffer;
    *out_length = used;
    return 0;
}

int csk_cert_subject_line(const csk_cert *cert, unsigned char **out, size_t *out_length) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return -1;
    int result = -1;
    if (X509_NAME_print_ex(bio, X509_get_subject_name(x509(cert)), 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) >= 0) {
        char *data = NULL;
        long n = BIO_get_mem_data(bio, &data);
        if (n >= 0) result = take_bytes((const unsigned char *)data, (size_t)n, out, out_length);
    }
    BIO_free(bio);
    return result;
}

int csk_cert_matches_key(const csk_cert *cert, const csk_key *key) {
    EVP_PKEY *certificate_key = X509_get0_pubkey(x509(cert));
    return certificate_key != NULL && EVP_PKEY_eq(certificate_key, pkey(key)) == 1;
}

/* MARK: PKCS #12 and PEM */

struct csk_pkcs12 {
    EVP_PKEY *key;
    X509 *cert;
    STACK_OF(X509) *chain;
};

static PKCS12 *pkcs12_read(const unsigned char *data, size_t length) {
    const unsigned char *p = data;
    PKCS12 *p12 = d2i_PKCS12(NULL, &p, (long)length);
    if (p12 != NULL && p != data + length) {
        PKCS12_free(p12);
        p12 = NULL;
    }
    return p12;
}

/* The most iterations a key derivation in a file may ask for (the MAC's, and each
 * encrypted bag's PBKDF2 or PKCS #12 PBE). openssl writes 2048, other tools up to a few
 * hundred thousand; a crafted file asking for 2^31 or more would keep the caller busy for
 * minutes or years (found by the fuzz target pkcs12), so it is refused before any derivation. */
#define CSK_PKCS12_MAX_ITERATIONS 10000000L

static int iterations_ok(const ASN1_INTEGER *iterations) {
    if (iterations == NULL) return 1; /* DEFAULT 1 */
    long n = ASN1_INTEGER_get(iterations);
    return n >= 1 && n <= CSK_PKCS12_MAX_ITERATIONS;
}

/* Whether a PBE algorithm's iteration count is within the bound (PBES2 with PBKDF2, or
 * a PKCS #5 v1 / PKCS #12 PBE); another algorithm is left to libcrypto (it refuses what it
 * does not know, and scrypt has its own memory bound). */
static int pbe_ok(const X509_ALGOR *algorithm) {
    if (algorithm == NULL) return 1;
    int nid = OBJ_obj2nid(algorithm->algorithm);
    if (nid == NID_pbes2) {
        PBE2PARAM *pbe2 = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(PBE2PARAM), algorithm->parameter);
        if (pbe2 == NULL) return 0;
        int ok = 1;
        if (pbe2->keyfunc != NULL && OBJ_obj2nid(pbe2->keyfunc->algorithm) == NID_id_pbkdf2) {
            PBKDF2PARAM *kdf = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(PBKDF2PARAM), pbe2->keyfunc->parameter);
            ok = kdf != NULL && iterations_ok(kdf->iter);
            PBKDF2PARAM_free(kdf);
        }
        PBE2PARAM_free(pbe2);
        return ok;
    }
    if (EVP_PBE_find(EVP_PBE_TYPE_OUTER, nid, NULL, NULL, NULL)) {
        PBEPARAM *pbe = ASN1_TYPE_unpack_sequence(ASN1_ITEM_rptr(PBEPARAM), algorithm->parameter);
        int ok = pbe != NULL && iterations_ok(pbe->iter);
        PBEPARAM_free(pbe);
        return ok;
    }
    return 1;
}

/* Walks the bags as PKCS12_parse will (nested safe contents included) and checks every
 * shrouded key bag's PBE. */
static int bags_ok(const STACK_OF(PKCS12_SAFEBAG) *bags, int depth) {
    if (depth > 8) return 0;
    for (int i = 0; i < sk_PKCS12_SAFEBAG_num(bags); i++) {
        const PKCS12_SAFEBAG *bag = sk_PKCS12_SAFEBAG_value(bags, i);
        int nid = PKCS12_SAFEBAG_get_nid(bag);
        if (nid == NID_pkcs8ShroudedKeyBag) {
            const X509_ALGOR *algorithm = NULL;
            X509_SIG_get0(PKCS12_SAFEBAG_get0_pkcs8(bag), &algorithm, NULL);
            if (!pbe_ok(algorithm)) return 0;
        } else if (nid == NID_safeContentsBag) {
            if (!bags_ok(PKCS12_SAFEBAG_get0_safes(bag), depth + 1)) return 0;
        }
    }
    return 1;
}

/* Whether every key derivation the file asks for (its MAC's, every encrypted content's
 * and shrouded key's) stays within CSK_PKCS12_MAX_ITERATIONS: 1 yes, 0 no (or contents
 * that do not unpack: PKCS12_parse would refuse them anyway), -1 yes as far as it could
 * see, but an encrypted content did not decrypt (a wrong passphrase, or a cipher of the
 * legacy provider not loaded yet). Decrypts each encrypted content once, after its own
 * count was checked. */
static int work_ok(const PKCS12 *p12, const char *pass) {
    if (PKCS12_mac_present(p12)) {
        const ASN1_INTEGER *iterations = NULL;
        PKCS12_get0_mac(NULL, NULL, NULL, &iterations, p12);
        if (!iterations_ok(iterations)) return 0;
    }
    STACK_OF(PKCS7) *contents = PKCS12_unpack_authsafes(p12);
    if (contents == NULL) return 0;
    int ok = 1;
    for (int i = 0; ok != 0 && i < sk_PKCS7_num(contents); i++) {
        PKCS7 *p7 = sk_PKCS7_value(contents, i);
        STACK_OF(PKCS12_SAFEBAG) *bags = NULL;
        int nid = OBJ_obj2nid(p7->type);
        if (nid == NID_pkcs7_data) {
            bags = PKCS12_unpack_p7data(p7);
        } else if (nid == NID_pkcs7_encrypted) {
            const X509_ALGOR *algorithm = NULL;
            if (p7->d.encrypted != NULL && p7->d.encrypted->enc_data != NULL) algorithm = p7->d.encrypted->enc_data->algorithm;
            if (algorithm == NULL || !pbe_ok(algorithm)) {
                ok = 0;
                break;
            }
            bags = PKCS12_unpack_p7encdata(p7, pass, -1);
        } else {
            continue; /* PKCS12_parse skips other content types */
        }
        if (bags == NULL) ok = -1; /* not decrypted: its bags were not seen */
        else if (!bags_ok(bags, 0)) ok = 0;
        sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
    }
    sk_PKCS7_pop_free(contents, PKCS7_free);
    ERR_clear_error();
    return ok;
}

static CRYPTO_ONCE legacy_once = CRYPTO_ONCE_STATIC_INIT;
static OSSL_PROVIDER *legacy_provider = NULL;
static void load_legacy(void) { legacy_provider = OSSL_PROVIDER_try_load(NULL, "legacy", 1); }

csk_pkcs12 *csk_pkcs12_parse(const unsigned char *data, size_t length, const char *passphrase, int *status) {
    *status = -1;
    if (data == NULL || length == 0 || length > 0x4000000) return NULL;
    PKCS12 *p12 = pkcs12_read(data, length);
    if (p12 == NULL) return NULL;
    const char *pass = passphrase == NULL ? "" : passphrase;
    if (PKCS12_mac_present(p12)) {
        const ASN1_INTEGER *iterations = NULL;
        PKCS12_get0_mac(NULL, NULL, NULL, &iterations, p12);
        if (!iterations_ok(iterations)) {
            PKCS12_free(p12);
            return NULL;
        }
    }
    if (PKCS12_mac_present(p12) && !PKCS12_verify_mac(p12, pass, -1)) {
        *status = 1;
        PKCS12_free(p12);
        return NULL;
    }
    /* After the MAC (a wrong passphrase is reported as such): the bags' own counts; a
     * content that decrypts only with the legacy provider is looked into with it. What
     * still does not decrypt, PKCS12_parse cannot decrypt either: no derivation unchecked. */
    int work = work_ok(p12, pass);
    if (work < 0 && CRYPTO_THREAD_run_once(&legacy_once, load_legacy) && legacy_provider != NULL) work = work_ok(p12, pass);
    if (work == 0) {
        PKCS12_free(p12);
        return NULL;
    }
    struct csk_pkcs12 *out = OPENSSL_zalloc(sizeof *out);
    if (out == NULL) {
        PKCS12_free(p12);
        return NULL;
    }
    int ok = PKCS12_parse(p12, pass, &out->key, &out->cert, &out->chain);
    if (!ok) {
        /* RC2-40 and 3DES bags (openssl pkcs12 -legacy) need the legacy provider; keep the default one. */
        ERR_clear_error();
        if (CRYPTO_THREAD_run_once(&legacy_once, load_legacy) && legacy_provider != NULL)
            ok = PKCS12_parse(p12, pass, &out->key, &out->cert, &out->chain);
    }
    PKCS12_free(p12);
    if (!ok || out->cert == NULL) {
        csk_pkcs12_free(out);
        return NULL;
    }
    *status = 0;
    return out;
}

void csk_pkcs12_free(csk_pkcs12 *p12) {
    if (p12 == NULL) return;
    EVP_PKEY_free(p12->key);
    X509_free(p12->cert);
    sk_X509_pop_free(p12->chain, X509_free);
    OPENSSL_free(p12);
}

const csk_key *csk_pkcs12_key(const csk_pkcs12 *p12) { return p12->key == NULL ? NULL : wrap(p12->key); }
const csk_cert *csk_pkcs12_cert(const csk_pkcs12 *p12) { return (const csk_cert *)(void *)p12->cert; }
int csk_pkcs12_chain_count(const csk_pkcs12 *p12) { return p12->chain == NULL ? 0 : sk_X509_num(p12->chain); }
const csk_cert *csk_pkcs12_chain_cert(const csk_pkcs12 *p12, int index) {
    return (const csk_cert *)(void *)sk_X509_value(p12->chain, index);
}

int csk_cert_alias(const csk_cert *cert, unsigned char **out, size_t *out_length) {
    int n = 0;
    unsigned char *alias = X509_alias_get0(x509(cert), &n);
    if (alias == NULL || n < 0) return -1;
    return take_bytes(alias, (size_t)n, out, out_length);
}

int csk_cert_local_key_id(const csk_cert *cert, unsigned char **out, size_t *out_length) {
    int n = 0;
    unsigned char *id = X509_keyid_get0(x509(cert), &n);
    if (id == NULL || n < 0) return -1;
    return take_bytes(id, (size_t)n, out, out_length);
}

int csk_key_type(const csk_key *key) {
    EVP_PKEY *k = pkey(key);
    if (EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA) return CSK_TYPE_RSA;
    if (is_ec(k) && curve_name(EVP_PKEY_get_bits(k)) != NULL) return CSK_TYPE_EC;
    return 0;
}

int csk_pem_certificates(const unsigned char *pem, size_t length, unsigned char **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    if (length > 0x4000000) return -1;
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return -1;
    unsigned char *buffer = NULL;
    size_t used = 0;
    int count = 0;
    X509 *cert = NULL;
    while ((cert = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        unsigned char *der = NULL;
        int n = i2d_X509(cert, &der);
        X509_free(cert);
        if (n <= 0) break;
        /* Each certificate: a 4-byte big-endian length, then its DER. */
        unsigned char *grown = OPENSSL_realloc(buffer, used + 4 + (size_t)n);
        if (grown == NULL) {
            OPENSSL_free(der);
            break;
        }
        buffer = grown;
        buffer[used] = (unsigned char)(n >> 24);
        buffer[used + 1] = (unsigned char)(n >> 16);
        buffer[used + 2] = (unsigned char)(n >> 8);
        buffer[used + 3] = (unsigned char)n;
        memcpy(buffer + used + 4, der, (size_t)n);
        used += 4 + (size_t)n;
        OPENSSL_free(der);
        count++;
    }
    ERR_clear_error();
    BIO_free(bio);
    *out = buffer;
    *out_length = used;
    return count;
}

static int no_password(char *buf, int size, int rwflag, void *u) {
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return -1;
}

csk_key *csk_pem_private_key(const unsigned char *pem, size_t length) {
    if (length > 0x4000000) return NULL;
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, no_password, NULL);
    ERR_clear_error();
    BIO_free(bio);
    return key == NULL ? NULL : wrap(key);
}

csk_key *csk_der_key(const unsigned char *der, size_t length, int *is_private) {
    if (der == NULL || length == 0 || length > 0x1000000) return NULL;
    const unsigned char *p = der;
    EVP_PKEY *key = d2i_AutoPrivateKey(NULL, &p, (long)length);
    *is_private = 1;
    if (key == NULL || p != der + length) {
        EVP_PKEY_free(key);
        p = der;
        key = d2i_PUBKEY(NULL, &p, (long)length);
        *is_private = 0;
        if (key != NULL && p != der + length) {
            EVP_PKEY_free(key);
            key = NULL;
        }
    }
    ERR_clear_error();
    return key == NULL ? NULL : wrap(key);
}

int csk_export_spki(const csk_key *key, unsigned char **out, size_t *out_length) {
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(pkey(key), &der);
    if (n <= 0) return -1;
    *out = der;
    *out_length = (size_t)n;
    return 0;
}

int csk_ecdsa_der_to_raw(const unsigned char *der, size_t length, size_t field, unsigned char **out, size_t *out_length) {
    if (der == NULL || length == 0 || length > 0x10000 || field == 0 || field > 66) return -1;
    const unsigned char *p = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)length);
    int result = -1;
    if (sig != NULL && p == der + length) {
        const BIGNUM *r = NULL, *s = NULL;
        ECDSA_SIG_get0(sig, &r, &s);
        unsigned char *buffer = OPENSSL_malloc(2 * field);
        if (buffer != NULL && BN_bn2binpad(r, buffer, (int)field) == (int)field &&
            BN_bn2binpad(s, buffer + field, (int)field) == (int)field) {
            *out = buffer;
            *out_length = 2 * field;
            result = 0;
        } else {
            OPENSSL_free(buffer);
        }
    }
    ECDSA_SIG_free(sig);
    return result;
}

int csk_ecdsa_raw_to_der(const unsigned char *raw, size_t length, unsigned char **out, size_t *out_length) {
    if (raw == NULL || length == 0 || length % 2 != 0 || length > 132) return -1;
    size_t half = length / 2;
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, (int)half, NULL);
    BIGNUM *s = BN_bin2bn(raw + half, (int)half, NULL);
    int result = -1;
    if (sig != NULL && r != NULL && s != NULL && ECDSA_SIG_set0(sig, r, s) == 1) {
        r = s = NULL; /* owned by sig now */
        unsigned char *der = NULL;
        int n = i2d_ECDSA_SIG(sig, &der);
        if (n > 0) {
            *out = der;
            *out_length = (size_t)n;
            result = 0;
        }
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    return result;
}
