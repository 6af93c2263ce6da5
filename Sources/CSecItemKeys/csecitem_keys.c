#include "csecitem_keys.h"

#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>

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
