#ifndef CSECITEM_KEYS_H
#define CSECITEM_KEYS_H
#include <stddef.h>
#include <stdint.h>

/*
 * The public-key primitives behind SecKey, SecCertificate and SecPKCS12Import, over
 * libcrypto (OpenSSL 3), as plain C functions Swift can call. Keys travel in Apple's
 * external representations (ANSI X9.63 for elliptic-curve keys, PKCS #1 DER for RSA);
 * the libcrypto object lives only for the length of one call.
 *
 * Every function returns 0 on success and -1 on failure, unless it says otherwise.
 * Buffers a function allocates (`unsigned char **out`) are released with
 * csk_buffer_free, which zeroes them first.
 */

/* A key as libcrypto holds it (an EVP_PKEY). */
typedef struct csk_key csk_key;

/* Key types, as Apple numbers them (kSecAttrKeyType). */
enum { CSK_TYPE_RSA = 42, CSK_TYPE_EC = 73 };

/* Digests, named by their size in bits (1 is SHA-1). */
enum { CSK_SHA1 = 1, CSK_SHA224 = 224, CSK_SHA256 = 256, CSK_SHA384 = 384, CSK_SHA512 = 512 };

/* Signature and encryption paddings. */
enum {
    CSK_PAD_ECDSA = 1,      /* ECDSA, DER (X9.62) signature */
    CSK_PAD_PKCS1 = 2,      /* RSA PKCS #1 v1.5 (signature: with DigestInfo when a digest is named) */
    CSK_PAD_PSS = 3,        /* RSA PSS, MGF1 with the same digest, salt as long as the digest */
    CSK_PAD_OAEP = 4,       /* RSA OAEP, MGF1 with the same digest, no label */
    CSK_PAD_RAW = 5,        /* RSA without padding */
};

void csk_buffer_free(unsigned char *buffer, size_t length);
void csk_key_free(csk_key *key);

/* A new key: type CSK_TYPE_EC with bits 256, 384 or 521; CSK_TYPE_RSA with 1024…8192. NULL on failure. */
csk_key *csk_generate(int type, int bits);

/*
 * A key from Apple's external representation: EC public 04‖X‖Y, EC private 04‖X‖Y‖K
 * (the curve follows from the length), RSA public RSAPublicKey DER, RSA private
 * RSAPrivateKey DER. The key is checked (point on the curve, private matches public,
 * no bytes after the DER). NULL for anything else.
 */
csk_key *csk_import(int type, int is_private, const unsigned char *data, size_t length);

/* Apple's external representation of the key (is_private 0: of its public half). */
int csk_export(const csk_key *key, int is_private, unsigned char **out, size_t *out_length);

/* The key's size in bits (the curve's, or the modulus'); 0 on failure. */
int csk_bits(const csk_key *key);

/* The largest signature the key makes, in bytes. */
int csk_max_signature_size(const csk_key *key);

/* One-shot digest; out holds 64 bytes. Returns the digest's length, or -1. */
int csk_digest(int digest, const unsigned char *data, size_t length, unsigned char *out);

/*
 * Signs a digest (digest 0 with CSK_PAD_PKCS1: `input` is signed as it is, without
 * DigestInfo; with CSK_PAD_RAW: `input` is the whole block). Returns 0, or -1.
 */
int csk_sign(const csk_key *key, int padding, int digest, const unsigned char *input, size_t input_length,
             unsigned char **out, size_t *out_length);

/* 1 when the signature is valid, 0 when it is not, -1 on failure. */
int csk_verify(const csk_key *key, int padding, int digest, const unsigned char *input, size_t input_length,
               const unsigned char *signature, size_t signature_length);

/* RSA encryption and decryption (CSK_PAD_PKCS1, CSK_PAD_OAEP with a digest, CSK_PAD_RAW). */
int csk_encrypt(const csk_key *key, int padding, int digest, const unsigned char *input, size_t input_length,
                unsigned char **out, size_t *out_length);
int csk_decrypt(const csk_key *key, int padding, int digest, const unsigned char *input, size_t input_length,
                unsigned char **out, size_t *out_length);

/* ECDH: the x coordinate of private × public (cofactor 1: with the curve's cofactor). */
int csk_ecdh(const csk_key *private_key, const csk_key *public_key, int cofactor, unsigned char **out,
             size_t *out_length);

/* ANSI X9.63 KDF: out_length bytes of Hash(Z ‖ counter ‖ shared_info) for counter 1, 2, … */
int csk_x963_kdf(int digest, const unsigned char *z, size_t z_length, const unsigned char *shared_info,
                 size_t shared_info_length, unsigned char *out, size_t out_length);

/*
 * AES-GCM with a key of 16, 24 or 32 bytes and an IV of any length (Apple's ECIES uses
 * 16 bytes), no additional data, a 16-byte tag. Open returns 1 when the tag is wrong.
 */
int csk_gcm_seal(const unsigned char *key, size_t key_length, const unsigned char *iv, size_t iv_length,
                 const unsigned char *input, size_t input_length, unsigned char *out, unsigned char *tag);
int csk_gcm_open(const unsigned char *key, size_t key_length, const unsigned char *iv, size_t iv_length,
                 const unsigned char *input, size_t input_length, const unsigned char *tag, unsigned char *out);

/*
 * Certificates (an X509). Parsed from DER only, with no bytes after it; NULL for anything else.
 * Byte-returning functions allocate *out (release with csk_buffer_free) and return 0, or -1
 * (also when the certificate has no such field).
 */
typedef struct csk_cert csk_cert;
csk_cert *csk_cert_parse(const unsigned char *der, size_t length);
void csk_cert_free(csk_cert *cert);
/* The certificate's DER. */
int csk_cert_der(const csk_cert *cert, unsigned char **out, size_t *out_length);
/* The X.509 version: 1, 2 or 3. */
int csk_cert_version(const csk_cert *cert);
/* The serial number's content bytes (the DER INTEGER without tag and length). */
int csk_cert_serial(const csk_cert *cert, unsigned char **out, size_t *out_length);
/*
 * The subject (issuer 0) or issuer (issuer 1) name's DER content without its SEQUENCE
 * header; normalized 1: each string value as UTF8String, ASCII letters upper-cased,
 * leading and trailing spaces dropped and inner runs of spaces collapsed to one.
 */
int csk_cert_name(const csk_cert *cert, int issuer, int normalized, unsigned char **out, size_t *out_length);
/* The subject key identifier extension's bytes. */
int csk_cert_subject_key_id(const csk_cert *cert, unsigned char **out, size_t *out_length);
/* The subjectPublicKey BIT STRING's bytes (X9.63 point, or RSAPublicKey DER). */
int csk_cert_public_key_bits(const csk_cert *cert, unsigned char **out, size_t *out_length);
/* The public key's type: CSK_TYPE_EC (P-256/384/521), CSK_TYPE_RSA, or 0 for any other. */
int csk_cert_public_key_type(const csk_cert *cert);
/*
 * The subject's values of attribute `nid` (13 commonName, 48 emailAddress, 17 organizationalUnitName,
 * 18 organizationName, …) as UTF-8, each followed by a NUL; with san_emails 1, the rfc822Name
 * subject alternative names after them.
 */
int csk_cert_subject_values(const csk_cert *cert, int nid, int san_emails, unsigned char **out, size_t *out_length);
/* The subject as one line, RFC 2253 style, for a summary of last resort. */
int csk_cert_subject_line(const csk_cert *cert, unsigned char **out, size_t *out_length);
/* 1 when the certificate's public key is the public half of `key`. */
int csk_cert_matches_key(const csk_cert *cert, const csk_key *key);

/*
 * PKCS #12 (openssl pkcs12 -export, modern AES/PBKDF2 or -legacy RC2/3DES: libcrypto's
 * legacy provider is loaded on the first file that needs it). *status: 0 parsed, 1 the
 * passphrase is wrong (the MAC does not verify), -1 not a PKCS #12 file or no key in it.
 */
typedef struct csk_pkcs12 csk_pkcs12;
csk_pkcs12 *csk_pkcs12_parse(const unsigned char *data, size_t length, const char *passphrase, int *status);
void csk_pkcs12_free(csk_pkcs12 *p12);
/* Borrowed: valid until csk_pkcs12_free. The key may be NULL (a file of certificates only). */
const csk_key *csk_pkcs12_key(const csk_pkcs12 *p12);
const csk_cert *csk_pkcs12_cert(const csk_pkcs12 *p12);
int csk_pkcs12_chain_count(const csk_pkcs12 *p12);
const csk_cert *csk_pkcs12_chain_cert(const csk_pkcs12 *p12, int index);
/* The certificate's friendlyName (UTF-8) and localKeyID bags; -1 when absent. */
int csk_cert_alias(const csk_cert *cert, unsigned char **out, size_t *out_length);
int csk_cert_local_key_id(const csk_cert *cert, unsigned char **out, size_t *out_length);
/* The key type of a csk_key: CSK_TYPE_EC, CSK_TYPE_RSA or 0. */
int csk_key_type(const csk_key *key);

/* PEM: the DER of every "CERTIFICATE" block, and the first private key (any PEM key form, unencrypted). */
int csk_pem_certificates(const unsigned char *pem, size_t length, unsigned char **out, size_t *out_length);
csk_key *csk_pem_private_key(const unsigned char *pem, size_t length);
/* A key from DER: PKCS #8 PrivateKeyInfo, SEC1/PKCS #1 private keys, SubjectPublicKeyInfo. */
csk_key *csk_der_key(const unsigned char *der, size_t length, int *is_private);
/* The SubjectPublicKeyInfo DER of the key's public half (what a PEM "PUBLIC KEY" holds). */
int csk_export_spki(const csk_key *key, unsigned char **out, size_t *out_length);
/* ECDSA signatures between DER (X9.62) and r ‖ s, each `field` bytes (RFC 4754). */
int csk_ecdsa_der_to_raw(const unsigned char *der, size_t length, size_t field, unsigned char **out, size_t *out_length);
int csk_ecdsa_raw_to_der(const unsigned char *raw, size_t length, unsigned char **out, size_t *out_length);
#endif
