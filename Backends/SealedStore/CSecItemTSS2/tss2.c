/*
 * The TPM calls of the `tpm2` key source (see include/CSecItemTSS2.h): tpm2-tss's ESAPI
 * and TCTI loader, opened with dlopen on first use.
 */
#include "CSecItemTSS2.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<tss2/tss2_esys.h>) && __has_include(<tss2/tss2_tctildr.h>) && __has_include(<tss2/tss2_mu.h>) && \
    __has_include(<tss2/tss2_rc.h>)
/* tpm2-tss's headers are installed: the declarations below use its types, and each
 * function pointer type is checked against the library's own prototype. */
#include <tss2/tss2_esys.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#include <tss2/tss2_tctildr.h>
#define CSECITEM_TSS2_CHECKED 1
typedef ESYS_CONTEXT cs_esys;
typedef TSS2_TCTI_CONTEXT cs_tcti;
typedef TSS2_ABI_VERSION cs_abi;
typedef TPM2B_PUBLIC cs_public;
typedef TPM2B_PRIVATE cs_private;
typedef TPM2B_SENSITIVE_CREATE cs_sensitive_create;
typedef TPM2B_SENSITIVE_DATA cs_sensitive_data;
typedef TPM2B_DATA cs_data;
typedef TPM2B_DIGEST cs_digest;
typedef TPM2B_NONCE cs_nonce;
typedef TPML_PCR_SELECTION cs_pcr_selection;
typedef TPMT_SYM_DEF cs_sym_def;
typedef TPM2B_CREATION_DATA cs_creation_data;
typedef TPMT_TK_CREATION cs_tk_creation;
typedef TPM2B_AUTH cs_auth;
typedef TPM2B_NAME cs_name;
typedef TPM2B_NV_PUBLIC cs_nv_public;
typedef TPM2B_MAX_NV_BUFFER cs_nv_buffer;
#else
/* Without them the structures stay incomplete types: this file only ever holds them in
 * buffers of CS_STRUCT_MAX bytes, filled and read by libtss2-mu. */
typedef struct cs_esys cs_esys;
typedef struct cs_tcti cs_tcti;
typedef struct cs_abi cs_abi;
typedef struct cs_public cs_public;
typedef struct cs_private cs_private;
typedef struct cs_sensitive_create cs_sensitive_create;
typedef struct cs_sensitive_data cs_sensitive_data;
typedef struct cs_data cs_data;
typedef struct cs_digest cs_digest;
typedef struct cs_nonce cs_nonce;
typedef struct cs_pcr_selection cs_pcr_selection;
typedef struct cs_sym_def cs_sym_def;
typedef struct cs_creation_data cs_creation_data;
typedef struct cs_tk_creation cs_tk_creation;
typedef struct cs_auth cs_auth;
typedef struct cs_name cs_name;
typedef struct cs_nv_public cs_nv_public;
typedef struct cs_nv_buffer cs_nv_buffer;
#endif

/* Zero-initialised before use: libtss2-mu refuses to unmarshal into a TPM2B whose size is
 * not 0. Room for any structure this file unmarshals (the largest, TPM2B_PRIVATE, is 1552 bytes). */
#define CS_STRUCT_MAX 4096
#ifdef CSECITEM_TSS2_CHECKED
_Static_assert(sizeof(TPM2B_PUBLIC) <= CS_STRUCT_MAX && sizeof(TPM2B_PRIVATE) <= CS_STRUCT_MAX &&
                   sizeof(TPM2B_SENSITIVE_CREATE) <= CS_STRUCT_MAX && sizeof(TPML_PCR_SELECTION) <= CS_STRUCT_MAX &&
                   sizeof(TPM2B_NV_PUBLIC) <= CS_STRUCT_MAX && sizeof(TPM2B_MAX_NV_BUFFER) <= CS_STRUCT_MAX,
               "a TSS structure outgrew CS_STRUCT_MAX");
#endif
typedef union {
    uint8_t bytes[CS_STRUCT_MAX];
    uint64_t align;
} cs_struct;

/* ESYS_TR values and constants from the TPM 2.0 specification (Part 2) and tss2_esys.h. */
#define CS_TR_NONE 0xfffU
#define CS_TR_PASSWORD 0x0ffU
#define CS_TR_RH_OWNER 0x101U
#define CS_SE_HMAC 0x00
#define CS_SE_POLICY 0x01
#define CS_SE_TRIAL 0x03
#define CS_SESSION_CONTINUE 0x01
#define CS_SESSION_DECRYPT 0x20
#define CS_SESSION_ENCRYPT 0x40
#define CS_ALG_SHA256 0x000B
#define CS_ALG_AES 0x0006
#define CS_ALG_CFB 0x0043
#define CS_ALG_NULL 0x0010
#define CS_ALG_ECC 0x0023
#define CS_ALG_KEYEDHASH 0x0008
#define CS_ECC_NIST_P256 0x0003
#define CS_OBJECT_FIXEDTPM 0x00000002U
#define CS_OBJECT_FIXEDPARENT 0x00000010U
#define CS_OBJECT_SENSITIVEDATAORIGIN 0x00000020U
#define CS_OBJECT_USERWITHAUTH 0x00000040U
#define CS_OBJECT_NODA 0x00000400U
#define CS_OBJECT_RESTRICTED 0x00010000U
#define CS_OBJECT_DECRYPT 0x00020000U

/* The functions used, by library: (return type, name, parameters). */
#define CS_ESYS_FUNCTIONS(X)                                                                                            \
    X(uint32_t, Esys_Initialize, (cs_esys * *esys_context, cs_tcti * tcti, cs_abi * abiVersion))                       \
    X(void, Esys_Finalize, (cs_esys * *context))                                                                       \
    X(uint32_t, Esys_CreatePrimary,                                                                                    \
      (cs_esys * esysContext, uint32_t primaryHandle, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3,         \
       const cs_sensitive_create *inSensitive, const cs_public *inPublic, const cs_data *outsideInfo,                  \
       const cs_pcr_selection *creationPCR, uint32_t *objectHandle, cs_public **outPublic,                             \
       cs_creation_data **creationData, cs_digest **creationHash, cs_tk_creation **creationTicket))                    \
    X(uint32_t, Esys_Create,                                                                                           \
      (cs_esys * esysContext, uint32_t parentHandle, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3,          \
       const cs_sensitive_create *inSensitive, const cs_public *inPublic, const cs_data *outsideInfo,                  \
       const cs_pcr_selection *creationPCR, cs_private **outPrivate, cs_public **outPublic,                            \
       cs_creation_data **creationData, cs_digest **creationHash, cs_tk_creation **creationTicket))                    \
    X(uint32_t, Esys_Load,                                                                                             \
      (cs_esys * esysContext, uint32_t parentHandle, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3,          \
       const cs_private *inPrivate, const cs_public *inPublic, uint32_t *objectHandle))                                \
    X(uint32_t, Esys_Unseal,                                                                                           \
      (cs_esys * esysContext, uint32_t itemHandle, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3,            \
       cs_sensitive_data **outData))                                                                                   \
    X(uint32_t, Esys_StartAuthSession,                                                                                 \
      (cs_esys * esysContext, uint32_t tpmKey, uint32_t bind, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3, \
       const cs_nonce *nonceCaller, uint8_t sessionType, const cs_sym_def *symmetric, uint16_t authHash,               \
       uint32_t *sessionHandle))                                                                                       \
    X(uint32_t, Esys_PolicyPCR,                                                                                        \
      (cs_esys * esysContext, uint32_t policySession, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3,         \
       const cs_digest *pcrDigest, const cs_pcr_selection *pcrs))                                                      \
    X(uint32_t, Esys_PolicyGetDigest,                                                                                  \
      (cs_esys * esysContext, uint32_t policySession, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3,         \
       cs_digest **policyDigest))                                                                                      \
    X(uint32_t, Esys_FlushContext, (cs_esys * esysContext, uint32_t flushHandle))                                      \
    X(uint32_t, Esys_TRSess_SetAttributes, (cs_esys * esysContext, uint32_t session, uint8_t flags, uint8_t mask))     \
    X(uint32_t, Esys_TR_FromTPMPublic,                                                                                 \
      (cs_esys * esysContext, uint32_t tpm_handle, uint32_t optionalSession1, uint32_t optionalSession2,               \
       uint32_t optionalSession3, uint32_t *object))                                                                   \
    X(uint32_t, Esys_TR_Close, (cs_esys * esys_context, uint32_t *rsrc_handle))                                        \
    X(uint32_t, Esys_NV_ReadPublic,                                                                                    \
      (cs_esys * esysContext, uint32_t nvIndex, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3,               \
       cs_nv_public **nvPublic, cs_name **nvName))                                                                     \
    X(uint32_t, Esys_NV_DefineSpace,                                                                                   \
      (cs_esys * esysContext, uint32_t authHandle, uint32_t shandle1, uint32_t shandle2, uint32_t shandle3,            \
       const cs_auth *auth, const cs_nv_public *publicInfo, uint32_t *nvHandle))                                       \
    X(uint32_t, Esys_NV_Increment,                                                                                     \
      (cs_esys * esysContext, uint32_t authHandle, uint32_t nvIndex, uint32_t shandle1, uint32_t shandle2,             \
       uint32_t shandle3))                                                                                             \
    X(uint32_t, Esys_NV_Read,                                                                                          \
      (cs_esys * esysContext, uint32_t authHandle, uint32_t nvIndex, uint32_t shandle1, uint32_t shandle2,             \
       uint32_t shandle3, uint16_t size, uint16_t offset, cs_nv_buffer **data))                                        \
    X(uint32_t, Esys_NV_Write,                                                                                         \
      (cs_esys * esysContext, uint32_t authHandle, uint32_t nvIndex, uint32_t shandle1, uint32_t shandle2,             \
       uint32_t shandle3, const cs_nv_buffer *data, uint16_t offset))                                                  \
    X(uint32_t, Esys_NV_UndefineSpace,                                                                                 \
      (cs_esys * esysContext, uint32_t authHandle, uint32_t nvIndex, uint32_t shandle1, uint32_t shandle2,             \
       uint32_t shandle3))                                                                                             \
    X(uint32_t, Esys_NV_WriteLock,                                                                                     \
      (cs_esys * esysContext, uint32_t authHandle, uint32_t nvIndex, uint32_t shandle1, uint32_t shandle2,             \
       uint32_t shandle3))                                                                                             \
    X(void, Esys_Free, (void *__ptr))
#define CS_TCTILDR_FUNCTIONS(X)                                                                                         \
    X(uint32_t, Tss2_TctiLdr_Initialize, (const char *nameConf, cs_tcti **context))                                    \
    X(void, Tss2_TctiLdr_Finalize, (cs_tcti * *context))
#define CS_MU_FUNCTIONS(X)                                                                                              \
    X(uint32_t, Tss2_MU_TPM2B_PUBLIC_Marshal, (cs_public const *src, uint8_t buffer[], size_t size, size_t *offset))  \
    X(uint32_t, Tss2_MU_TPM2B_PUBLIC_Unmarshal, (uint8_t const buffer[], size_t size, size_t *offset, cs_public *dest)) \
    X(uint32_t, Tss2_MU_TPM2B_PRIVATE_Marshal, (cs_private const *src, uint8_t buffer[], size_t size, size_t *offset)) \
    X(uint32_t, Tss2_MU_TPM2B_PRIVATE_Unmarshal,                                                                       \
      (uint8_t const buffer[], size_t size, size_t *offset, cs_private *dest))                                         \
    X(uint32_t, Tss2_MU_TPM2B_SENSITIVE_CREATE_Unmarshal,                                                              \
      (uint8_t const buffer[], size_t size, size_t *offset, cs_sensitive_create *dest))                                \
    X(uint32_t, Tss2_MU_TPM2B_SENSITIVE_DATA_Marshal,                                                                  \
      (cs_sensitive_data const *src, uint8_t buffer[], size_t size, size_t *offset))                                   \
    X(uint32_t, Tss2_MU_TPM2B_DIGEST_Marshal, (cs_digest const *src, uint8_t buffer[], size_t size, size_t *offset))  \
    X(uint32_t, Tss2_MU_TPM2B_DIGEST_Unmarshal, (uint8_t const buffer[], size_t size, size_t *offset, cs_digest *dest)) \
    X(uint32_t, Tss2_MU_TPM2B_DATA_Unmarshal, (uint8_t const buffer[], size_t size, size_t *offset, cs_data *dest))   \
    X(uint32_t, Tss2_MU_TPML_PCR_SELECTION_Unmarshal,                                                                  \
      (uint8_t const buffer[], size_t size, size_t *offset, cs_pcr_selection *dest))                                   \
    X(uint32_t, Tss2_MU_TPMT_SYM_DEF_Unmarshal, (uint8_t const buffer[], size_t size, size_t *offset, cs_sym_def *dest)) \
    X(uint32_t, Tss2_MU_TPM2B_AUTH_Unmarshal, (uint8_t const buffer[], size_t size, size_t *offset, cs_auth *dest))   \
    X(uint32_t, Tss2_MU_TPM2B_NV_PUBLIC_Marshal,                                                                       \
      (cs_nv_public const *src, uint8_t buffer[], size_t size, size_t *offset))                                        \
    X(uint32_t, Tss2_MU_TPM2B_NV_PUBLIC_Unmarshal,                                                                     \
      (uint8_t const buffer[], size_t size, size_t *offset, cs_nv_public *dest))                                       \
    X(uint32_t, Tss2_MU_TPM2B_MAX_NV_BUFFER_Marshal,                                                                   \
      (cs_nv_buffer const *src, uint8_t buffer[], size_t size, size_t *offset))                                        \
    X(uint32_t, Tss2_MU_TPM2B_MAX_NV_BUFFER_Unmarshal,                                                                 \
      (uint8_t const buffer[], size_t size, size_t *offset, cs_nv_buffer *dest))
#define CS_RC_FUNCTIONS(X) X(const char *, Tss2_RC_Decode, (uint32_t rc))

#define CS_ALL_FUNCTIONS(X) CS_ESYS_FUNCTIONS(X) CS_TCTILDR_FUNCTIONS(X) CS_MU_FUNCTIONS(X) CS_RC_FUNCTIONS(X)

#define CS_TYPEDEF(type, name, parameters) typedef type(*cs_##name##_fn) parameters;
CS_ALL_FUNCTIONS(CS_TYPEDEF)
#undef CS_TYPEDEF

#ifdef CSECITEM_TSS2_CHECKED
#define CS_CHECK(type, name, parameters)                                                                               \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), cs_##name##_fn), #name " differs from tpm2-tss's");
CS_ALL_FUNCTIONS(CS_CHECK)
#undef CS_CHECK
#endif

static struct {
#define CS_FIELD(type, name, parameters) cs_##name##_fn name;
    CS_ALL_FUNCTIONS(CS_FIELD)
#undef CS_FIELD
} fn;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[256];

static void *open_library(const char *soname) {
    void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL && load_error[0] == 0) {
        snprintf(load_error, sizeof load_error,
                 "%s is not installed (Debian: libtss2-esys-3.0.2-0, libtss2-tctildr0, libtss2-mu0, libtss2-rc0)", soname);
    }
    return handle;
}

static void load(void) {
    if (getenv("TSS2_LOG") == NULL) setenv("TSS2_LOG", "all+none", 0);
    void *esys = open_library("libtss2-esys.so.0");
    void *tctildr = open_library("libtss2-tctildr.so.0");
    void *mu = open_library("libtss2-mu.so.0");
    void *rc = open_library("libtss2-rc.so.0");
    if (esys == NULL || tctildr == NULL || mu == NULL || rc == NULL) return;
#define CS_RESOLVE_IN(library, name)                                                                                      \
    do {                                                                                                               \
        void *symbol = dlsym(library, #name);                                                                          \
        if (symbol == NULL) {                                                                                          \
            snprintf(load_error, sizeof load_error, "tpm2-tss lacks %s (too old?)", #name);                            \
            return;                                                                                                    \
        }                                                                                                              \
        memcpy(&fn.name, &symbol, sizeof symbol);                                                                      \
    } while (0);
#define CS_ESYS(type, name, parameters) CS_RESOLVE_IN(esys, name)
#define CS_TCTILDR(type, name, parameters) CS_RESOLVE_IN(tctildr, name)
#define CS_MU(type, name, parameters) CS_RESOLVE_IN(mu, name)
#define CS_RC(type, name, parameters) CS_RESOLVE_IN(rc, name)
    CS_ESYS_FUNCTIONS(CS_ESYS)
    CS_TCTILDR_FUNCTIONS(CS_TCTILDR)
    CS_MU_FUNCTIONS(CS_MU)
    CS_RC_FUNCTIONS(CS_RC)
#undef CS_ESYS
#undef CS_TCTILDR
#undef CS_MU
#undef CS_RC
#undef CS_RESOLVE_IN
    loaded = 1;
}

static void fail(csecitem_tpm2_error *error, uint32_t rc, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void fail(csecitem_tpm2_error *error, uint32_t rc, const char *format, ...) {
    error->rc = rc;
    va_list args;
    va_start(args, format);
    vsnprintf(error->message, sizeof error->message, format, args);
    va_end(args);
    if (rc != 0) {
        size_t used = strlen(error->message);
        snprintf(error->message + used, sizeof error->message - used, ": %s (0x%x)", fn.Tss2_RC_Decode(rc), rc);
    }
}

int csecitem_tpm2_load(csecitem_tpm2_error *error) {
    pthread_once(&load_once, load);
    if (!loaded) fail(error, 0, "%s", load_error);
    return loaded;
}

/* A writer of the TPM's wire format (big-endian). */
typedef struct {
    uint8_t bytes[512];
    size_t size;
} cs_wire;

static void put8(cs_wire *w, uint8_t v) {
    if (w->size < sizeof w->bytes) w->bytes[w->size++] = v;
}
static void put16(cs_wire *w, uint16_t v) {
    put8(w, (uint8_t)(v >> 8));
    put8(w, (uint8_t)v);
}
static void put32(cs_wire *w, uint32_t v) {
    put16(w, (uint16_t)(v >> 16));
    put16(w, (uint16_t)v);
}
static void put_bytes(cs_wire *w, const uint8_t *bytes, size_t n) {
    for (size_t i = 0; i < n; i++) put8(w, bytes[i]);
}
/* Writes the big-endian size of what was written since `start` (after its 2-byte slot). */
static void patch_size(cs_wire *w, size_t start) {
    size_t n = w->size - start - 2;
    w->bytes[start] = (uint8_t)(n >> 8);
    w->bytes[start + 1] = (uint8_t)n;
}

struct csecitem_tpm2 {
    cs_tcti *tcti;
    cs_esys *esys;
    uint32_t primary;
};

static int connect_to(const char *tcti, int with_primary, csecitem_tpm2 **out, csecitem_tpm2_error *error);

static int unmarshal_failed(csecitem_tpm2_error *error, uint32_t rc, const char *what) {
    fail(error, rc, "building the %s", what);
    return 0;
}

/* A PCR selection: `count` 0 (none) or 1 bank with the PCRs of mask. */
static int pcr_selection(uint16_t bank, uint32_t mask, cs_struct *out, csecitem_tpm2_error *error) {
    cs_wire w = {.size = 0};
    if (mask == 0) {
        put32(&w, 0);
    } else {
        put32(&w, 1);
        put16(&w, bank);
        put8(&w, 3);
        put8(&w, (uint8_t)mask);
        put8(&w, (uint8_t)(mask >> 8));
        put8(&w, (uint8_t)(mask >> 16));
    }
    size_t offset = 0;
    uint32_t rc = fn.Tss2_MU_TPML_PCR_SELECTION_Unmarshal(w.bytes, w.size, &offset, (cs_pcr_selection *)out);
    return rc == 0 ? 1 : unmarshal_failed(error, rc, "PCR selection");
}

/* An empty TPM2B_DATA, TPM2B_DIGEST. */
static const uint8_t empty_tpm2b[2] = {0, 0};
static int empty_data(cs_struct *out) {
    size_t offset = 0;
    return fn.Tss2_MU_TPM2B_DATA_Unmarshal(empty_tpm2b, sizeof empty_tpm2b, &offset, (cs_data *)out) == 0;
}
static int empty_digest(cs_struct *out) {
    size_t offset = 0;
    return fn.Tss2_MU_TPM2B_DIGEST_Unmarshal(empty_tpm2b, sizeof empty_tpm2b, &offset, (cs_digest *)out) == 0;
}

/* AES-128-CFB parameter encryption for a session. */
static int session_symmetric(uint16_t algorithm, cs_struct *out, csecitem_tpm2_error *error) {
    cs_wire w = {.size = 0};
    put16(&w, algorithm);
    if (algorithm != CS_ALG_NULL) {
        put16(&w, 128);
        put16(&w, CS_ALG_CFB);
    }
    size_t offset = 0;
    uint32_t rc = fn.Tss2_MU_TPMT_SYM_DEF_Unmarshal(w.bytes, w.size, &offset, (cs_sym_def *)out);
    return rc == 0 ? 1 : unmarshal_failed(error, rc, "session's symmetric definition");
}

/* A session salted with the primary key (its secret reaches the TPM encrypted to it),
 * that encrypts the first command or response parameter (flags). */
static int salted_session(csecitem_tpm2 *tpm, uint8_t type, uint8_t flags, uint32_t *session, csecitem_tpm2_error *error) {
    cs_struct symmetric = {{0}};
    if (!session_symmetric(CS_ALG_AES, &symmetric, error)) return 0;
    uint32_t rc = fn.Esys_StartAuthSession(tpm->esys, tpm->primary, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, NULL, type,
                                           (cs_sym_def *)&symmetric, CS_ALG_SHA256, session);
    if (rc != 0) {
        fail(error, rc, "TPM2_StartAuthSession");
        return 0;
    }
    rc = fn.Esys_TRSess_SetAttributes(tpm->esys, *session, (uint8_t)(flags | CS_SESSION_CONTINUE), 0xff);
    if (rc != 0) {
        fn.Esys_FlushContext(tpm->esys, *session);
        *session = CS_TR_NONE;
        fail(error, rc, "setting the session's attributes");
        return 0;
    }
    return 1;
}

int csecitem_tpm2_connect(const char *tcti, csecitem_tpm2 **out, csecitem_tpm2_error *error) {
    return connect_to(tcti, 1, out, error);
}

int csecitem_tpm2_connect_nv(const char *tcti, csecitem_tpm2 **out, csecitem_tpm2_error *error) {
    return connect_to(tcti, 0, out, error);
}

static int connect_to(const char *tcti, int with_primary, csecitem_tpm2 **out, csecitem_tpm2_error *error) {
    *out = NULL;
    if (!csecitem_tpm2_load(error)) return 0;
    csecitem_tpm2 *tpm = calloc(1, sizeof *tpm);
    if (tpm == NULL) {
        fail(error, 0, "out of memory");
        return 0;
    }
    tpm->primary = CS_TR_NONE;
    uint32_t rc = fn.Tss2_TctiLdr_Initialize(tcti != NULL && tcti[0] != 0 ? tcti : NULL, &tpm->tcti);
    if (rc != 0) {
        fail(error, rc, "no TPM reachable through the TCTI \"%s\"", tcti != NULL && tcti[0] != 0 ? tcti : "device:/dev/tpmrm0");
        free(tpm);
        return 0;
    }
    rc = fn.Esys_Initialize(&tpm->esys, tpm->tcti, NULL);
    if (rc != 0) {
        fail(error, rc, "the TPM behind \"%s\" did not answer", tcti != NULL && tcti[0] != 0 ? tcti : "device:/dev/tpmrm0");
        csecitem_tpm2_disconnect(tpm);
        return 0;
    }
    if (!with_primary) {
        *out = tpm;
        return 1;
    }
    /* The TCG's storage root key template: every process on this TPM derives the same
     * key from the owner hierarchy's seed, so nothing has to be kept in the TPM. */
    cs_wire w = {.size = 0};
    put16(&w, 0);
    put16(&w, CS_ALG_ECC);
    put16(&w, CS_ALG_SHA256);
    put32(&w, CS_OBJECT_FIXEDTPM | CS_OBJECT_FIXEDPARENT | CS_OBJECT_SENSITIVEDATAORIGIN | CS_OBJECT_USERWITHAUTH |
                  CS_OBJECT_NODA | CS_OBJECT_RESTRICTED | CS_OBJECT_DECRYPT);
    put16(&w, 0);                 /* authPolicy */
    put16(&w, CS_ALG_AES);        /* symmetric */
    put16(&w, 128);
    put16(&w, CS_ALG_CFB);
    put16(&w, CS_ALG_NULL);       /* scheme */
    put16(&w, CS_ECC_NIST_P256);  /* curve */
    put16(&w, CS_ALG_NULL);       /* kdf */
    put16(&w, 0);                 /* unique.x */
    put16(&w, 0);                 /* unique.y */
    patch_size(&w, 0);
    cs_struct public = {{0}}, sensitive = {{0}}, outside = {{0}}, creation = {{0}};
    size_t offset = 0;
    rc = fn.Tss2_MU_TPM2B_PUBLIC_Unmarshal(w.bytes, w.size, &offset, (cs_public *)&public);
    if (rc != 0) {
        unmarshal_failed(error, rc, "primary key's template");
        csecitem_tpm2_disconnect(tpm);
        return 0;
    }
    static const uint8_t empty_sensitive[6] = {0, 4, 0, 0, 0, 0};
    offset = 0;
    if (fn.Tss2_MU_TPM2B_SENSITIVE_CREATE_Unmarshal(empty_sensitive, sizeof empty_sensitive, &offset,
                                                    (cs_sensitive_create *)&sensitive) != 0 ||
        !empty_data(&outside) ||
        !pcr_selection(CS_ALG_SHA256, 0, &creation, error)) {
        unmarshal_failed(error, 0, "primary key's inputs");
        csecitem_tpm2_disconnect(tpm);
        return 0;
    }
    rc = fn.Esys_CreatePrimary(tpm->esys, CS_TR_RH_OWNER, CS_TR_PASSWORD, CS_TR_NONE, CS_TR_NONE,
                               (cs_sensitive_create *)&sensitive, (cs_public *)&public, (cs_data *)&outside,
                               (cs_pcr_selection *)&creation, &tpm->primary, NULL, NULL, NULL, NULL);
    if (rc != 0) {
        tpm->primary = CS_TR_NONE;
        fail(error, rc, "creating the storage primary key under the owner hierarchy");
        csecitem_tpm2_disconnect(tpm);
        return 0;
    }
    *out = tpm;
    return 1;
}

void csecitem_tpm2_disconnect(csecitem_tpm2 *tpm) {
    if (tpm == NULL) return;
    if (tpm->esys != NULL) {
        if (tpm->primary != CS_TR_NONE) fn.Esys_FlushContext(tpm->esys, tpm->primary);
        fn.Esys_Finalize(&tpm->esys);
    }
    if (tpm->tcti != NULL) fn.Tss2_TctiLdr_Finalize(&tpm->tcti);
    free(tpm);
}

/* Runs PolicyPCR in session over the PCRs' current values. */
static int policy_pcr(csecitem_tpm2 *tpm, uint32_t session, uint16_t bank, uint32_t mask, csecitem_tpm2_error *error) {
    cs_struct selection = {{0}}, digest = {{0}};
    if (!pcr_selection(bank, mask, &selection, error)) return 0;
    if (!empty_digest(&digest)) {
        return unmarshal_failed(error, 0, "PCR digest");
    }
    uint32_t rc = fn.Esys_PolicyPCR(tpm->esys, session, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, (cs_digest *)&digest,
                                    (cs_pcr_selection *)&selection);
    if (rc != 0) {
        fail(error, rc, "TPM2_PolicyPCR");
        return 0;
    }
    return 1;
}

/* The policy digest of "these PCRs hold their current values" (a trial session). */
static int pcr_policy_digest(csecitem_tpm2 *tpm, uint16_t bank, uint32_t mask, uint8_t *out, size_t *out_size,
                             csecitem_tpm2_error *error) {
    cs_struct symmetric = {{0}};
    if (!session_symmetric(CS_ALG_NULL, &symmetric, error)) return 0;
    uint32_t session = CS_TR_NONE;
    uint32_t rc = fn.Esys_StartAuthSession(tpm->esys, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, NULL,
                                           CS_SE_TRIAL, (cs_sym_def *)&symmetric, CS_ALG_SHA256, &session);
    if (rc != 0) {
        fail(error, rc, "TPM2_StartAuthSession (trial)");
        return 0;
    }
    int ok = policy_pcr(tpm, session, bank, mask, error);
    cs_digest *digest = NULL;
    if (ok) {
        rc = fn.Esys_PolicyGetDigest(tpm->esys, session, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, &digest);
        if (rc != 0) {
            fail(error, rc, "TPM2_PolicyGetDigest");
            ok = 0;
        }
    }
    if (ok) {
        uint8_t wire[80];
        size_t offset = 0;
        rc = fn.Tss2_MU_TPM2B_DIGEST_Marshal(digest, wire, sizeof wire, &offset);
        if (rc != 0 || offset < 2 || offset - 2 > 64) {
            fail(error, rc, "reading the policy digest");
            ok = 0;
        } else {
            *out_size = offset - 2;
            memcpy(out, wire + 2, *out_size);
        }
    }
    fn.Esys_Free(digest);
    fn.Esys_FlushContext(tpm->esys, session);
    return ok;
}

int csecitem_tpm2_seal(csecitem_tpm2 *tpm, const uint8_t *secret, size_t secret_size, uint16_t pcr_bank, uint32_t pcr_mask,
                       uint8_t *blob, size_t blob_capacity, size_t *blob_size, csecitem_tpm2_error *error) {
    *blob_size = 0;
    if (secret_size == 0 || secret_size > CSECITEM_TPM2_SECRET_MAX) {
        fail(error, 0, "a sealed secret must be 1 to %d bytes", CSECITEM_TPM2_SECRET_MAX);
        return 0;
    }
    uint8_t policy[64];
    size_t policy_size = 0;
    if (pcr_mask != 0 && !pcr_policy_digest(tpm, pcr_bank, pcr_mask, policy, &policy_size, error)) return 0;

    cs_wire w = {.size = 0};
    put16(&w, 0);
    put16(&w, CS_ALG_KEYEDHASH);
    put16(&w, CS_ALG_SHA256);
    put32(&w, CS_OBJECT_FIXEDTPM | CS_OBJECT_FIXEDPARENT | CS_OBJECT_NODA | (pcr_mask == 0 ? CS_OBJECT_USERWITHAUTH : 0));
    put16(&w, (uint16_t)policy_size);
    put_bytes(&w, policy, policy_size);
    put16(&w, CS_ALG_NULL); /* keyed-hash scheme: none, a sealed data object */
    put16(&w, 0);           /* unique */
    patch_size(&w, 0);
    cs_struct public = {{0}}, sensitive = {{0}}, outside = {{0}}, creation = {{0}};
    size_t offset = 0;
    uint32_t rc = fn.Tss2_MU_TPM2B_PUBLIC_Unmarshal(w.bytes, w.size, &offset, (cs_public *)&public);
    if (rc != 0) return unmarshal_failed(error, rc, "sealed object's template");

    /* TPM2B_SENSITIVE_CREATE { userAuth: empty, data: the secret } */
    cs_wire s = {.size = 0};
    put16(&s, (uint16_t)(4 + secret_size));
    put16(&s, 0);
    put16(&s, (uint16_t)secret_size);
    put_bytes(&s, secret, secret_size);
    offset = 0;
    rc = fn.Tss2_MU_TPM2B_SENSITIVE_CREATE_Unmarshal(s.bytes, s.size, &offset, (cs_sensitive_create *)&sensitive);
    explicit_bzero(&s, sizeof s);
    if (rc != 0) {
        explicit_bzero(&sensitive, sizeof sensitive);
        return unmarshal_failed(error, rc, "sealed object's data");
    }
    if (!empty_data(&outside) ||
        !pcr_selection(CS_ALG_SHA256, 0, &creation, error)) {
        explicit_bzero(&sensitive, sizeof sensitive);
        return unmarshal_failed(error, 0, "sealed object's inputs");
    }
    uint32_t session = CS_TR_NONE;
    if (!salted_session(tpm, CS_SE_HMAC, CS_SESSION_DECRYPT, &session, error)) {
        explicit_bzero(&sensitive, sizeof sensitive);
        return 0;
    }
    cs_private *out_private = NULL;
    cs_public *out_public = NULL;
    rc = fn.Esys_Create(tpm->esys, tpm->primary, session, CS_TR_NONE, CS_TR_NONE, (cs_sensitive_create *)&sensitive,
                        (cs_public *)&public, (cs_data *)&outside, (cs_pcr_selection *)&creation, &out_private, &out_public,
                        NULL, NULL, NULL);
    explicit_bzero(&sensitive, sizeof sensitive);
    fn.Esys_FlushContext(tpm->esys, session);
    int ok = 1;
    if (rc != 0) {
        fail(error, rc, "TPM2_Create (sealing the key)");
        ok = 0;
    }
    size_t written = 0;
    if (ok) {
        rc = fn.Tss2_MU_TPM2B_PRIVATE_Marshal(out_private, blob, blob_capacity, &written);
        if (rc == 0) rc = fn.Tss2_MU_TPM2B_PUBLIC_Marshal(out_public, blob, blob_capacity, &written);
        if (rc != 0) {
            fail(error, rc, "writing the sealed blob");
            ok = 0;
        } else {
            *blob_size = written;
        }
    }
    fn.Esys_Free(out_private);
    fn.Esys_Free(out_public);
    return ok;
}

/* The blob's two structures (zeroed first: libtss2-mu refuses a TPM2B whose size is not 0). */
static int unmarshal_blob(const uint8_t *blob, size_t blob_size, cs_struct *private, cs_struct *public,
                          csecitem_tpm2_error *error) {
    memset(private, 0, sizeof *private);
    memset(public, 0, sizeof *public);
    size_t offset = 0;
    uint32_t rc = blob == NULL ? 1 : fn.Tss2_MU_TPM2B_PRIVATE_Unmarshal(blob, blob_size, &offset, (cs_private *)private);
    if (rc == 0) rc = fn.Tss2_MU_TPM2B_PUBLIC_Unmarshal(blob, blob_size, &offset, (cs_public *)public);
    /* Exactly as csecitem_tpm2_seal wrote it: libtss2-mu reads a TPM2B_PUBLIC whose size
     * prefix is 0 (or otherwise not its content's) and writes the right one back, so a
     * damaged header parsed, and only the TPM refused it, as another TPM's key (found by
     * the fuzz target tpm2-sealed-blob). */
    uint8_t again[CSECITEM_TPM2_BLOB_MAX];
    size_t written = 0;
    if (rc == 0 && offset == blob_size) {
        rc = fn.Tss2_MU_TPM2B_PRIVATE_Marshal((cs_private *)private, again, sizeof again, &written);
        if (rc == 0) rc = fn.Tss2_MU_TPM2B_PUBLIC_Marshal((cs_public *)public, again, sizeof again, &written);
    }
    if (rc != 0 || offset != blob_size || written != blob_size || memcmp(again, blob, blob_size) != 0) {
        fail(error, 0, "the sealed blob in the keychain's header is malformed");
        return 0;
    }
    return 1;
}

int csecitem_tpm2_parse_blob(const uint8_t *blob, size_t blob_size, uint8_t *canonical, size_t canonical_capacity,
                             size_t *canonical_size, csecitem_tpm2_error *error) {
    *canonical_size = 0;
    if (!csecitem_tpm2_load(error)) return 0;
    cs_struct private, public;
    if (!unmarshal_blob(blob, blob_size, &private, &public, error)) return 0;
    size_t written = 0;
    uint32_t rc = fn.Tss2_MU_TPM2B_PRIVATE_Marshal((cs_private *)&private, canonical, canonical_capacity, &written);
    if (rc == 0) rc = fn.Tss2_MU_TPM2B_PUBLIC_Marshal((cs_public *)&public, canonical, canonical_capacity, &written);
    if (rc != 0) {
        fail(error, rc, "writing the sealed blob back");
        return 0;
    }
    *canonical_size = written;
    return 1;
}

int csecitem_tpm2_unseal(csecitem_tpm2 *tpm, const uint8_t *blob, size_t blob_size, uint16_t pcr_bank, uint32_t pcr_mask,
                         uint8_t *secret, size_t secret_capacity, size_t *secret_size, csecitem_tpm2_error *error) {
    *secret_size = 0;
    cs_struct private, public;
    if (!unmarshal_blob(blob, blob_size, &private, &public, error)) return 0;
    uint32_t rc = 0;
    uint32_t object = CS_TR_NONE;
    rc = fn.Esys_Load(tpm->esys, tpm->primary, CS_TR_PASSWORD, CS_TR_NONE, CS_TR_NONE, (cs_private *)&private,
                      (cs_public *)&public, &object);
    if (rc != 0) {
        fail(error, rc, "TPM2_Load (the sealed key)");
        return 0;
    }
    uint32_t session = CS_TR_NONE;
    int ok = salted_session(tpm, pcr_mask != 0 ? CS_SE_POLICY : CS_SE_HMAC, CS_SESSION_ENCRYPT, &session, error);
    if (ok && pcr_mask != 0) ok = policy_pcr(tpm, session, pcr_bank, pcr_mask, error);
    cs_sensitive_data *data = NULL;
    if (ok) {
        rc = fn.Esys_Unseal(tpm->esys, object, session, CS_TR_NONE, CS_TR_NONE, &data);
        if (rc != 0) {
            fail(error, rc, "TPM2_Unseal");
            ok = 0;
        }
    }
    if (ok) {
        uint8_t wire[2 + CSECITEM_TPM2_SECRET_MAX + 2];
        size_t written = 0;
        rc = fn.Tss2_MU_TPM2B_SENSITIVE_DATA_Marshal(data, wire, sizeof wire, &written);
        if (rc != 0 || written < 2 || written - 2 > secret_capacity) {
            fail(error, rc, "reading the unsealed key");
            ok = 0;
        } else {
            *secret_size = written - 2;
            memcpy(secret, wire + 2, *secret_size);
        }
        explicit_bzero(wire, sizeof wire);
    }
    if (data != NULL) {
        /* A TPM2B_SENSITIVE_DATA: a 16-bit size, then at most CSECITEM_TPM2_SECRET_MAX bytes. */
        explicit_bzero(data, 2 + CSECITEM_TPM2_SECRET_MAX);
        fn.Esys_Free(data);
    }
    if (session != CS_TR_NONE) fn.Esys_FlushContext(tpm->esys, session);
    fn.Esys_FlushContext(tpm->esys, object);
    return ok;
}

/* ---- NV indices: the rollback witness's counter and its base ---- */

#define CS_RH_OWNER_HANDLE 0x40000001U
#define CS_RC_HANDLE 0x08BU          /* format 1: the handle is not defined */
#define CS_RC_NV_DEFINED 0x14CU      /* TPM_RC_NV_DEFINED */
#define CS_RC_NV_UNINITIALIZED 0x14AU /* TPM_RC_NV_UNINITIALIZED */

/* Whether rc is the TPM's format-1 error `code` (whatever parameter, handle or session it names). */
static int rc_is_fmt1(uint32_t rc, uint32_t code) { return (rc & 0xFFFF0000U) == 0 && (rc & 0x80U) != 0 && (rc & 0xBFU) == code; }

/* The ESYS_TR of an NV index: 1; not defined: 2 (nothing to close); 0 with error. */
static int nv_object(csecitem_tpm2 *tpm, uint32_t index, uint32_t *object, csecitem_tpm2_error *error) {
    *object = CS_TR_NONE;
    uint32_t rc = fn.Esys_TR_FromTPMPublic(tpm->esys, index, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, object);
    if (rc == 0) return 1;
    *object = CS_TR_NONE;
    if (rc_is_fmt1(rc, CS_RC_HANDLE)) return 2;
    fail(error, rc, "reading the public area of NV index 0x%08x", index);
    return 0;
}

static void nv_close(csecitem_tpm2 *tpm, uint32_t *object) {
    if (*object != CS_TR_NONE) fn.Esys_TR_Close(tpm->esys, object);
    *object = CS_TR_NONE;
}

int csecitem_tpm2_nv_read(csecitem_tpm2 *tpm, uint32_t index, uint32_t *attributes, uint16_t *data_size, uint8_t *data,
                          size_t capacity, size_t *size, csecitem_tpm2_error *error) {
    *attributes = 0;
    *data_size = 0;
    *size = 0;
    uint32_t object;
    int found = nv_object(tpm, index, &object, error);
    if (found != 1) return found == 2 ? 2 : 0;
    cs_nv_public *public = NULL;
    uint32_t rc = fn.Esys_NV_ReadPublic(tpm->esys, object, CS_TR_NONE, CS_TR_NONE, CS_TR_NONE, &public, NULL);
    if (rc != 0) {
        fail(error, rc, "TPM2_NV_ReadPublic (index 0x%08x)", index);
        nv_close(tpm, &object);
        return 0;
    }
    /* TPM2B_NV_PUBLIC: size(2) nvIndex(4) nameAlg(2) attributes(4) authPolicy(2 + n) dataSize(2) */
    uint8_t wire[128];
    size_t offset = 0;
    rc = fn.Tss2_MU_TPM2B_NV_PUBLIC_Marshal(public, wire, sizeof wire, &offset);
    fn.Esys_Free(public);
    if (rc != 0 || offset < 14) {
        fail(error, rc, "reading the public area of NV index 0x%08x", index);
        nv_close(tpm, &object);
        return 0;
    }
    *attributes = (uint32_t)wire[8] << 24 | (uint32_t)wire[9] << 16 | (uint32_t)wire[10] << 8 | wire[11];
    size_t policy = (size_t)wire[12] << 8 | wire[13];
    if (offset < 16 + policy) {
        fail(error, 0, "the public area of NV index 0x%08x is malformed", index);
        nv_close(tpm, &object);
        return 0;
    }
    *data_size = (uint16_t)((uint16_t)wire[14 + policy] << 8 | wire[15 + policy]);
    int ok = 1;
    size_t wanted = *data_size < capacity ? *data_size : capacity;
    if (wanted > 0 && (*attributes & 0x20000000U) != 0) { /* TPMA_NV_WRITTEN */
        cs_nv_buffer *out = NULL;
        rc = fn.Esys_NV_Read(tpm->esys, object, object, CS_TR_PASSWORD, CS_TR_NONE, CS_TR_NONE, (uint16_t)wanted, 0, &out);
        if (rc != 0) {
            if (!rc_is_fmt1(rc, CS_RC_NV_UNINITIALIZED) && rc != CS_RC_NV_UNINITIALIZED) {
                fail(error, rc, "TPM2_NV_Read (index 0x%08x)", index);
                ok = 0;
            }
        } else {
            uint8_t buffer[2 + 2048];
            size_t written = 0;
            rc = fn.Tss2_MU_TPM2B_MAX_NV_BUFFER_Marshal(out, buffer, sizeof buffer, &written);
            if (rc != 0 || written < 2 || written - 2 > capacity) {
                fail(error, rc, "reading NV index 0x%08x", index);
                ok = 0;
            } else {
                *size = written - 2;
                memcpy(data, buffer + 2, *size);
            }
        }
        fn.Esys_Free(out);
    }
    nv_close(tpm, &object);
    return ok;
}

int csecitem_tpm2_nv_define(csecitem_tpm2 *tpm, uint32_t index, uint32_t attributes, uint16_t data_size,
                            csecitem_tpm2_error *error) {
    cs_wire w = {.size = 0};
    put16(&w, 0);
    put32(&w, index);
    put16(&w, CS_ALG_SHA256);
    put32(&w, attributes);
    put16(&w, 0); /* authPolicy: none */
    put16(&w, data_size);
    patch_size(&w, 0);
    cs_struct public = {{0}}, auth = {{0}};
    size_t offset = 0;
    uint32_t rc = fn.Tss2_MU_TPM2B_NV_PUBLIC_Unmarshal(w.bytes, w.size, &offset, (cs_nv_public *)&public);
    if (rc != 0) return unmarshal_failed(error, rc, "NV index's public area");
    offset = 0;
    rc = fn.Tss2_MU_TPM2B_AUTH_Unmarshal(empty_tpm2b, sizeof empty_tpm2b, &offset, (cs_auth *)&auth);
    if (rc != 0) return unmarshal_failed(error, rc, "NV index's authorization");
    uint32_t object = CS_TR_NONE;
    rc = fn.Esys_NV_DefineSpace(tpm->esys, CS_TR_RH_OWNER, CS_TR_PASSWORD, CS_TR_NONE, CS_TR_NONE, (cs_auth *)&auth,
                                (cs_nv_public *)&public, &object);
    if (rc != 0) {
        if (rc_is_fmt1(rc, CS_RC_NV_DEFINED) || rc == CS_RC_NV_DEFINED) return 2;
        fail(error, rc, "TPM2_NV_DefineSpace (index 0x%08x, under the owner hierarchy)", index);
        return 0;
    }
    nv_close(tpm, &object);
    return 1;
}

int csecitem_tpm2_nv_increment(csecitem_tpm2 *tpm, uint32_t index, uint32_t count, csecitem_tpm2_error *error) {
    uint32_t object;
    int found = nv_object(tpm, index, &object, error);
    if (found == 2) fail(error, 0, "NV index 0x%08x is not defined", index);
    if (found != 1) return 0;
    int ok = 1;
    for (uint32_t i = 0; i < count && ok; i++) {
        uint32_t rc = fn.Esys_NV_Increment(tpm->esys, object, object, CS_TR_PASSWORD, CS_TR_NONE, CS_TR_NONE);
        if (rc != 0) {
            fail(error, rc, "TPM2_NV_Increment (index 0x%08x)", index);
            ok = 0;
        }
    }
    nv_close(tpm, &object);
    return ok;
}

int csecitem_tpm2_nv_write(csecitem_tpm2 *tpm, uint32_t index, const uint8_t *data, size_t size, csecitem_tpm2_error *error) {
    if (size == 0 || size > 256) {
        fail(error, 0, "an NV write must be 1 to 256 bytes");
        return 0;
    }
    uint32_t object;
    int found = nv_object(tpm, index, &object, error);
    if (found == 2) fail(error, 0, "NV index 0x%08x is not defined", index);
    if (found != 1) return 0;
    cs_wire w = {.size = 0};
    put16(&w, (uint16_t)size);
    put_bytes(&w, data, size);
    cs_struct buffer = {{0}};
    size_t offset = 0;
    uint32_t rc = fn.Tss2_MU_TPM2B_MAX_NV_BUFFER_Unmarshal(w.bytes, w.size, &offset, (cs_nv_buffer *)&buffer);
    int ok = 1;
    if (rc != 0) {
        ok = unmarshal_failed(error, rc, "NV data");
    } else {
        rc = fn.Esys_NV_Write(tpm->esys, object, object, CS_TR_PASSWORD, CS_TR_NONE, CS_TR_NONE, (cs_nv_buffer *)&buffer, 0);
        if (rc != 0) {
            fail(error, rc, "TPM2_NV_Write (index 0x%08x)", index);
            ok = 0;
        }
    }
    nv_close(tpm, &object);
    return ok;
}

int csecitem_tpm2_nv_write_lock(csecitem_tpm2 *tpm, uint32_t index, csecitem_tpm2_error *error) {
    uint32_t object;
    int found = nv_object(tpm, index, &object, error);
    if (found == 2) fail(error, 0, "NV index 0x%08x is not defined", index);
    if (found != 1) return 0;
    uint32_t rc = fn.Esys_NV_WriteLock(tpm->esys, object, object, CS_TR_PASSWORD, CS_TR_NONE, CS_TR_NONE);
    if (rc != 0) fail(error, rc, "TPM2_NV_WriteLock (index 0x%08x)", index);
    nv_close(tpm, &object);
    return rc == 0;
}

int csecitem_tpm2_nv_undefine(csecitem_tpm2 *tpm, uint32_t index, csecitem_tpm2_error *error) {
    uint32_t object;
    int found = nv_object(tpm, index, &object, error);
    if (found != 1) return found == 2 ? 2 : 0;
    uint32_t rc = fn.Esys_NV_UndefineSpace(tpm->esys, CS_TR_RH_OWNER, object, CS_TR_PASSWORD, CS_TR_NONE, CS_TR_NONE);
    if (rc != 0) {
        fail(error, rc, "TPM2_NV_UndefineSpace (index 0x%08x, under the owner hierarchy)", index);
        nv_close(tpm, &object);
        return 0;
    }
    /* Esys_NV_UndefineSpace released the object. */
    return 1;
}
