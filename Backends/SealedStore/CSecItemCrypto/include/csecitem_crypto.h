#ifndef CSECITEM_CRYPTO_H
#define CSECITEM_CRYPTO_H
#include <stddef.h>
#include <stdint.h>

/*
 * The libcrypto (OpenSSL 3) primitives of the file format, as plain C functions
 * Swift can call. Each returns 0 on success, 1 when authentication failed
 * (AES-GCM open only) and -1 on any other failure. The Swift side owns every key
 * buffer and zeroes it when freed; the contexts below hold key schedules and are
 * cleansed by libcrypto when freed.
 */

void csecitem_cleanse(void *p, size_t len);
int csecitem_random_bytes(unsigned char *out, size_t len);

/* One-shot HMAC-SHA256; out must hold 32 bytes. */
int csecitem_hmac_sha256(const unsigned char *key, size_t keylen, const unsigned char *msg, size_t msglen,
                         unsigned char *out);

/* HKDF-SHA256 (RFC 5869), extract and expand. */
int csecitem_hkdf_sha256(const unsigned char *key, size_t keylen, const unsigned char *salt, size_t saltlen,
                         const unsigned char *info, size_t infolen, unsigned char *out, size_t outlen);

/* scrypt (RFC 7914) through EVP_PBE_scrypt. */
int csecitem_scrypt(const char *pass, size_t passlen, const unsigned char *salt, size_t saltlen, uint64_t n,
                    uint64_t r, uint64_t p, uint64_t maxmem, unsigned char *out, size_t outlen);

/* One-shot AES-256-GCM with a 12-byte nonce: ct gets ptlen bytes, tag 16 bytes. */
int csecitem_aes256gcm_seal(const unsigned char *key, const unsigned char *nonce, const unsigned char *aad,
                            size_t aadlen, const unsigned char *pt, size_t ptlen, unsigned char *ct,
                            unsigned char *tag);
int csecitem_aes256gcm_open(const unsigned char *key, const unsigned char *nonce, const unsigned char *aad,
                            size_t aadlen, const unsigned char *ct, size_t ctlen, const unsigned char *tag,
                            unsigned char *pt);

/*
 * Keyed contexts, made once per key and reused for every operation: the HMAC's
 * inner and outer pads and the AES key schedule are computed once. Not
 * thread-safe: one thread at a time per context.
 */
typedef struct csecitem_hmac csecitem_hmac;
csecitem_hmac *csecitem_hmac_new(const unsigned char *key, size_t keylen);
void csecitem_hmac_free(csecitem_hmac *ctx);
/* HMAC-SHA256 of the concatenation of up to two parts (part2 may be NULL); out gets 32 bytes. */
int csecitem_hmac_run(csecitem_hmac *ctx, const unsigned char *part1, size_t len1, const unsigned char *part2,
                      size_t len2, unsigned char *out);

typedef struct csecitem_gcm csecitem_gcm;
csecitem_gcm *csecitem_gcm_new(const unsigned char *key, size_t keylen);
void csecitem_gcm_free(csecitem_gcm *ctx);
int csecitem_gcm_seal(csecitem_gcm *ctx, const unsigned char *nonce, const unsigned char *aad, size_t aadlen,
                      const unsigned char *pt, size_t ptlen, unsigned char *ct, unsigned char *tag);
int csecitem_gcm_open(csecitem_gcm *ctx, const unsigned char *nonce, const unsigned char *aad, size_t aadlen,
                      const unsigned char *ct, size_t ctlen, const unsigned char *tag, unsigned char *pt);
#endif
