#ifndef CSECITEM_GCRYPT_API_H
#define CSECITEM_GCRYPT_API_H
/* The part of libgcrypt the encryption session (session.c) uses: HMAC-SHA256 and AES-128-CBC,
 * declared as gcrypt.h declares them, and resolved with dlsym from the libgcrypt libsecret
 * already mapped (Debian's libsecret links it), so that nothing links it and no build needs
 * its header. Why not libcrypto's: OpenSSL 3's first HMAC and first cipher build its
 * provider's algorithm tables, 8.7 million instructions and 1.9 MiB of heap in a process
 * that needs neither otherwise (callgrind, Benchmarks/CLIStartup/secret_service_floor.c);
 * libgcrypt's are plain calls (with AES-NI where the CPU has it). Tests/CSecItemGLibCheck
 * compiles these declarations against gcrypt.h. */
#include <stddef.h>

#ifdef CSECITEM_GCRYPT_CHECK
typedef gcry_buffer_t csecitem_gcry_buffer_t;
typedef gcry_cipher_hd_t csecitem_gcry_cipher_hd_t;
typedef gcry_error_t csecitem_gcry_error_t;
#else
/* gcry_buffer_t: one buffer of a scatter-gather hash (for HMAC, the key first). */
typedef struct {
    size_t size;
    size_t off;
    size_t len;
    void *data;
} csecitem_gcry_buffer_t;
typedef struct gcry_cipher_handle *csecitem_gcry_cipher_hd_t;
typedef unsigned int csecitem_gcry_error_t;
#endif

#define CSECITEM_GCRY_CIPHER_AES128 7 /* GCRY_CIPHER_AES */
#define CSECITEM_GCRY_CIPHER_MODE_CBC 3
#define CSECITEM_GCRY_MD_SHA256 8
#define CSECITEM_GCRY_MD_FLAG_HMAC 2

#define CSECITEM_GCRYPT_FUNCTIONS(X)                                                                                     \
    X(const char *, gcry_check_version, (const char *req_version))                                                      \
    X(csecitem_gcry_error_t, gcry_md_hash_buffers,                                                                      \
      (int algo, unsigned int flags, void *digest, const csecitem_gcry_buffer_t *iov, int iovcnt))                      \
    X(csecitem_gcry_error_t, gcry_cipher_open, (csecitem_gcry_cipher_hd_t * handle, int algo, int mode, unsigned int flags)) \
    X(void, gcry_cipher_close, (csecitem_gcry_cipher_hd_t h))                                                           \
    X(csecitem_gcry_error_t, gcry_cipher_setkey, (csecitem_gcry_cipher_hd_t hd, const void *key, size_t keylen))        \
    X(csecitem_gcry_error_t, gcry_cipher_setiv, (csecitem_gcry_cipher_hd_t hd, const void *iv, size_t ivlen))           \
    X(csecitem_gcry_error_t, gcry_cipher_encrypt,                                                                       \
      (csecitem_gcry_cipher_hd_t h, void *out, size_t outsize, const void *in, size_t inlen))                           \
    X(csecitem_gcry_error_t, gcry_cipher_decrypt,                                                                       \
      (csecitem_gcry_cipher_hd_t h, void *out, size_t outsize, const void *in, size_t inlen))

#define CSECITEM_GCRYPT_SONAME "libgcrypt.so.20"

#endif
