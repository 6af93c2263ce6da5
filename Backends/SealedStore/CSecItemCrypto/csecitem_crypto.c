#include "csecitem_crypto.h"

#include <limits.h>
#include <stdlib.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

void csecitem_cleanse(void *p, size_t len) {
    if (p && len) OPENSSL_cleanse(p, len);
}

int csecitem_random_bytes(unsigned char *out, size_t len) {
    if (len > INT_MAX) return -1;
    return RAND_bytes(out, (int)len) == 1 ? 0 : -1;
}

int csecitem_hmac_sha256(const unsigned char *key, size_t keylen, const unsigned char *msg, size_t msglen,
                         unsigned char *out) {
    static const unsigned char empty = 0;
    unsigned int outlen = 0;
    if (keylen > INT_MAX) return -1;
    if (HMAC(EVP_sha256(), key, (int)keylen, msg ? msg : &empty, msglen, out, &outlen) == NULL) return -1;
    return outlen == 32 ? 0 : -1;
}

int csecitem_hkdf_sha256(const unsigned char *key, size_t keylen, const unsigned char *salt, size_t saltlen,
                         const unsigned char *info, size_t infolen, unsigned char *out, size_t outlen) {
    int rc = -1;
    size_t len = outlen;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    if (!ctx) return -1;
    if (keylen > INT_MAX || saltlen > INT_MAX || infolen > INT_MAX) goto done;
    if (EVP_PKEY_derive_init(ctx) <= 0) goto done;
    if (EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) <= 0) goto done;
    if (saltlen > 0 && EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt, (int)saltlen) <= 0) goto done;
    if (EVP_PKEY_CTX_set1_hkdf_key(ctx, key, (int)keylen) <= 0) goto done;
    if (infolen > 0 && EVP_PKEY_CTX_add1_hkdf_info(ctx, info, (int)infolen) <= 0) goto done;
    if (EVP_PKEY_derive(ctx, out, &len) <= 0 || len != outlen) goto done;
    rc = 0;
done:
    EVP_PKEY_CTX_free(ctx);
    return rc;
}

int csecitem_scrypt(const char *pass, size_t passlen, const unsigned char *salt, size_t saltlen, uint64_t n,
                    uint64_t r, uint64_t p, uint64_t maxmem, unsigned char *out, size_t outlen) {
    return EVP_PBE_scrypt(pass, passlen, salt, saltlen, n, r, p, maxmem, out, outlen) == 1 ? 0 : -1;
}

/* Seals with a context that already holds the key (and cipher); nonce set per call. */
static int gcm_seal(EVP_CIPHER_CTX *ctx, const unsigned char *nonce, const unsigned char *aad, size_t aadlen,
                    const unsigned char *pt, size_t ptlen, unsigned char *ct, unsigned char *tag) {
    int len = 0;
    unsigned char final_block[16];
    if (aadlen > INT_MAX || ptlen > INT_MAX) return -1;
    if (EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, nonce) != 1) return -1;
    if (aadlen > 0 && EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aadlen) != 1) return -1;
    if (ptlen > 0 && EVP_EncryptUpdate(ctx, ct, &len, pt, (int)ptlen) != 1) return -1;
    if (EVP_EncryptFinal_ex(ctx, final_block, &len) != 1 || len != 0) return -1;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1) return -1;
    return 0;
}

/* Opens with a keyed context; the plaintext is wiped when the tag does not verify. */
static int gcm_open(EVP_CIPHER_CTX *ctx, const unsigned char *nonce, const unsigned char *aad, size_t aadlen,
                    const unsigned char *ct, size_t ctlen, const unsigned char *tag, unsigned char *pt) {
    int rc = -1, len = 0;
    unsigned char final_block[16];
    if (aadlen > INT_MAX || ctlen > INT_MAX) return -1;
    if (EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, nonce) != 1) goto done;
    if (aadlen > 0 && EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aadlen) != 1) goto done;
    if (ctlen > 0 && EVP_DecryptUpdate(ctx, pt, &len, ct, (int)ctlen) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)(uintptr_t)tag) != 1) goto done;
    rc = EVP_DecryptFinal_ex(ctx, final_block, &len) == 1 ? 0 : 1;
done:
    if (rc != 0 && ctlen > 0) OPENSSL_cleanse(pt, ctlen);
    return rc;
}

static EVP_CIPHER_CTX *gcm_context(const unsigned char *key, int encrypt) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx) return NULL;
    if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, encrypt) != 1
        || EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) != 1
        || EVP_CipherInit_ex(ctx, NULL, NULL, key, NULL, encrypt) != 1) {
        EVP_CIPHER_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

int csecitem_aes256gcm_seal(const unsigned char *key, const unsigned char *nonce, const unsigned char *aad,
                            size_t aadlen, const unsigned char *pt, size_t ptlen, unsigned char *ct,
                            unsigned char *tag) {
    EVP_CIPHER_CTX *ctx = gcm_context(key, 1);
    if (!ctx) return -1;
    int rc = gcm_seal(ctx, nonce, aad, aadlen, pt, ptlen, ct, tag);
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

int csecitem_aes256gcm_open(const unsigned char *key, const unsigned char *nonce, const unsigned char *aad,
                            size_t aadlen, const unsigned char *ct, size_t ctlen, const unsigned char *tag,
                            unsigned char *pt) {
    EVP_CIPHER_CTX *ctx = gcm_context(key, 0);
    if (!ctx) {
        if (ctlen > 0) OPENSSL_cleanse(pt, ctlen);
        return -1;
    }
    int rc = gcm_open(ctx, nonce, aad, aadlen, ct, ctlen, tag, pt);
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

/* MARK: reused keyed contexts */

struct csecitem_hmac {
    EVP_MAC_CTX *ctx;
};

csecitem_hmac *csecitem_hmac_new(const unsigned char *key, size_t keylen) {
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (!mac) return NULL;
    csecitem_hmac *out = calloc(1, sizeof *out);
    if (out) out->ctx = EVP_MAC_CTX_new(mac);
    EVP_MAC_free(mac);
    if (!out || !out->ctx || EVP_MAC_init(out->ctx, key, keylen, params) != 1) {
        csecitem_hmac_free(out);
        return NULL;
    }
    return out;
}

void csecitem_hmac_free(csecitem_hmac *ctx) {
    if (!ctx) return;
    EVP_MAC_CTX_free(ctx->ctx);
    free(ctx);
}

int csecitem_hmac_run(csecitem_hmac *ctx, const unsigned char *part1, size_t len1, const unsigned char *part2,
                      size_t len2, unsigned char *out) {
    size_t outlen = 0;
    /* A NULL key re-initialises with the key already set: the pads are not recomputed. */
    if (EVP_MAC_init(ctx->ctx, NULL, 0, NULL) != 1) return -1;
    if (len1 > 0 && EVP_MAC_update(ctx->ctx, part1, len1) != 1) return -1;
    if (part2 && len2 > 0 && EVP_MAC_update(ctx->ctx, part2, len2) != 1) return -1;
    if (EVP_MAC_final(ctx->ctx, out, &outlen, 32) != 1) return -1;
    return outlen == 32 ? 0 : -1;
}

struct csecitem_gcm {
    EVP_CIPHER_CTX *seal;
    EVP_CIPHER_CTX *open;
};

csecitem_gcm *csecitem_gcm_new(const unsigned char *key, size_t keylen) {
    if (keylen != 32) return NULL;
    csecitem_gcm *out = calloc(1, sizeof *out);
    if (!out) return NULL;
    out->seal = gcm_context(key, 1);
    out->open = gcm_context(key, 0);
    if (!out->seal || !out->open) {
        csecitem_gcm_free(out);
        return NULL;
    }
    return out;
}

void csecitem_gcm_free(csecitem_gcm *ctx) {
    if (!ctx) return;
    EVP_CIPHER_CTX_free(ctx->seal);
    EVP_CIPHER_CTX_free(ctx->open);
    free(ctx);
}

int csecitem_gcm_seal(csecitem_gcm *ctx, const unsigned char *nonce, const unsigned char *aad, size_t aadlen,
                      const unsigned char *pt, size_t ptlen, unsigned char *ct, unsigned char *tag) {
    return gcm_seal(ctx->seal, nonce, aad, aadlen, pt, ptlen, ct, tag);
}

int csecitem_gcm_open(csecitem_gcm *ctx, const unsigned char *nonce, const unsigned char *aad, size_t aadlen,
                      const unsigned char *ct, size_t ctlen, const unsigned char *tag, unsigned char *pt) {
    return gcm_open(ctx->open, nonce, aad, aadlen, ct, ctlen, tag, pt);
}
