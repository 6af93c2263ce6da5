#ifndef CSECITEM_CRYPTO_SHIM_H
#define CSECITEM_CRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>

/* OPENSSL_free and OPENSSL_cleanse helpers are macros or need wrappers for Swift. */
static inline void csecitem_openssl_free(void *p) { OPENSSL_free(p); }
#endif
