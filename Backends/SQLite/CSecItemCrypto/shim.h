#ifndef CSECITEM_CRYPTO_SHIM_H
#define CSECITEM_CRYPTO_SHIM_H
#include <stddef.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

/*
 * Thin, one-shot wrappers over libcrypto for the file backend. Each returns 0 on
 * success, 1 when authentication failed (AES-GCM open only) and -1 on any other
 * failure. No wrapper keeps state; the Swift side owns every key buffer and
 * zeroes it when freed.
 */

/* OPENSSL_free and OPENSSL_cleanse are macros or need wrappers for Swift. */
static inline void csecitem_openssl_free(void *p) { OPENSSL_free(p); }
static inline void csecitem_cleanse(void *p, size_t len) { if (p && len) OPENSSL_cleanse(p, len); }

static inline int csecitem_random_bytes(unsigned char *out, size_t len) {
    if (len > INT_MAX) return -1;
    return RAND_bytes(out, (int)len) == 1 ? 0 : -1;
}

/* HMAC-SHA256; out must hold 32 bytes. */
static inline int csecitem_hmac_sha256(const unsigned char *key, size_t keylen,
                                       const unsigned char *msg, size_t msglen,
                                       unsigned char *out) {
    static const unsigned char empty = 0;
    unsigned int outlen = 0;
    if (keylen > INT_MAX) return -1;
    if (HMAC(EVP_sha256(), key, (int)keylen, msg ? msg : &empty, msglen, out, &outlen) == NULL) return -1;
    return outlen == 32 ? 0 : -1;
}

/* HKDF-SHA256 (RFC 5869), extract and expand. */
static inline int csecitem_hkdf_sha256(const unsigned char *key, size_t keylen,
                                       const unsigned char *salt, size_t saltlen,
                                       const unsigned char *info, size_t infolen,
                                       unsigned char *out, size_t outlen) {
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

/* scrypt (RFC 7914) through EVP_PBE_scrypt. */
static inline int csecitem_scrypt(const char *pass, size_t passlen,
                                  const unsigned char *salt, size_t saltlen,
                                  uint64_t n, uint64_t r, uint64_t p, uint64_t maxmem,
                                  unsigned char *out, size_t outlen) {
    return EVP_PBE_scrypt(pass, passlen, salt, saltlen, n, r, p, maxmem, out, outlen) == 1 ? 0 : -1;
}

/* AES-256-GCM seal with a 12-byte nonce: ct gets ptlen bytes, tag 16 bytes. */
static inline int csecitem_aes256gcm_seal(const unsigned char *key, const unsigned char *nonce,
                                          const unsigned char *aad, size_t aadlen,
                                          const unsigned char *pt, size_t ptlen,
                                          unsigned char *ct, unsigned char *tag) {
    int rc = -1, len = 0;
    unsigned char final_block[16];
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx) return -1;
    if (aadlen > INT_MAX || ptlen > INT_MAX) goto done;
    if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) != 1) goto done;
    if (EVP_EncryptInit_ex(ctx, NULL, NULL, key, nonce) != 1) goto done;
    if (aadlen > 0 && EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aadlen) != 1) goto done;
    if (ptlen > 0 && EVP_EncryptUpdate(ctx, ct, &len, pt, (int)ptlen) != 1) goto done;
    if (EVP_EncryptFinal_ex(ctx, final_block, &len) != 1 || len != 0) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1) goto done;
    rc = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

/* AES-256-GCM open: 0 on success, 1 when the tag does not verify, -1 on error. */
static inline int csecitem_aes256gcm_open(const unsigned char *key, const unsigned char *nonce,
                                          const unsigned char *aad, size_t aadlen,
                                          const unsigned char *ct, size_t ctlen,
                                          const unsigned char *tag, unsigned char *pt) {
    int rc = -1, len = 0;
    unsigned char final_block[16];
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx) return -1;
    if (aadlen > INT_MAX || ctlen > INT_MAX) goto done;
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) != 1) goto done;
    if (EVP_DecryptInit_ex(ctx, NULL, NULL, key, nonce) != 1) goto done;
    if (aadlen > 0 && EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aadlen) != 1) goto done;
    if (ctlen > 0 && EVP_DecryptUpdate(ctx, pt, &len, ct, (int)ctlen) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) != 1) goto done;
    rc = EVP_DecryptFinal_ex(ctx, final_block, &len) == 1 ? 0 : 1;
done:
    EVP_CIPHER_CTX_free(ctx);
    if (rc != 0 && ctlen > 0 && ctlen <= INT_MAX) OPENSSL_cleanse(pt, ctlen);
    return rc;
}
#endif
