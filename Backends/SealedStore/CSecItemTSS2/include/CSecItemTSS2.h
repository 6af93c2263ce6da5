#ifndef CSECITEM_TSS2_H
#define CSECITEM_TSS2_H
/*
 * A TPM 2.0 through the TPM2 Software Stack (tpm2-tss), loaded on first use.
 *
 * Nothing links libtss2 and nothing needs its headers to build: a process that never
 * uses the `tpm2` key source maps none of it, and an app built with no optional
 * -dev package can still open a TPM-sealed store where the runtime libraries are
 * installed (libtss2-esys, -tctildr, -mu, -rc and a TCTI such as -tcti-device).
 * The TSS structures never cross this header: inputs are built in the TPM's own
 * wire format and turned into structures by libtss2-mu, outputs are marshalled
 * back to bytes. Where tpm2-tss's headers are installed, tss2.c checks its
 * declarations of the library's functions against them at compile time.
 *
 * A secret passed in or out is zeroed in every buffer this code owns before it is
 * freed. No message below ever holds a secret.
 */
#include <stddef.h>
#include <stdint.h>

/* Why a call failed: the TSS2 response code (0 when the failure is not the stack's or
 * the TPM's: a library missing, a bad argument) and a message naming the step. */
typedef struct {
    uint32_t rc;
    char message[320];
} csecitem_tpm2_error;

/* One connection to a TPM: a TCTI and an ESAPI context (not thread-safe: the caller locks). */
typedef struct csecitem_tpm2 csecitem_tpm2;

/* The largest sealed blob (TPM2B_PRIVATE then TPM2B_PUBLIC, marshalled). */
#define CSECITEM_TPM2_BLOB_MAX 2048
/* The most bytes a sealed object holds (MAX_SYM_DATA). */
#define CSECITEM_TPM2_SECRET_MAX 128

/*
 * Loads the libraries once per process. Returns 1 when every function resolved;
 * otherwise 0, with the library or symbol missing in error. Thread-safe. Also sets
 * TSS2_LOG=all+none unless the environment sets it (tpm2-tss would otherwise print
 * its own warnings on stderr for every refused command), as systemd does.
 */
int csecitem_tpm2_load(csecitem_tpm2_error *error);

/* Connects to the TPM the TCTI string names (NULL or "": tpm2-tss's default, normally
 * /dev/tpmrm0) and creates the storage primary key (the TCG SRK template: ECC P-256,
 * AES-128-CFB, under the owner hierarchy with its empty authorization), which is the
 * same key for every process on the same TPM. Returns 1, or 0 with error filled. */
int csecitem_tpm2_connect(const char *tcti, csecitem_tpm2 **out, csecitem_tpm2_error *error);

/* Connects as csecitem_tpm2_connect does, without the primary key: for the NV calls
 * below, which need none (creating it is the slowest command of a connection). */
int csecitem_tpm2_connect_nv(const char *tcti, csecitem_tpm2 **out, csecitem_tpm2_error *error);

/* Flushes the primary key and closes the connection (NULL is ignored). */
void csecitem_tpm2_disconnect(csecitem_tpm2 *tpm);

/*
 * Seals secret (1...CSECITEM_TPM2_SECRET_MAX bytes) as a keyed-hash object under the
 * primary key. With a nonzero pcr_mask (bit i: PCR i, 0...23, of the bank pcr_bank, a
 * TPM2_ALG_ID such as 0x000B for SHA-256), the object can only be unsealed while those
 * PCRs hold the values they hold now; otherwise with its empty authorization. The
 * secret travels to the TPM encrypted (a session salted with the primary key).
 * Writes the blob (at most CSECITEM_TPM2_BLOB_MAX bytes) to blob. Returns 1 or 0.
 */
int csecitem_tpm2_seal(
    csecitem_tpm2 *tpm, const uint8_t *secret, size_t secret_size, uint16_t pcr_bank, uint32_t pcr_mask,
    uint8_t *blob, size_t blob_capacity, size_t *blob_size, csecitem_tpm2_error *error);

/*
 * Unseals a blob csecitem_tpm2_seal wrote, with the same pcr_bank and pcr_mask. The
 * secret comes back encrypted on the wire and is written to secret (capacity
 * CSECITEM_TPM2_SECRET_MAX). Returns 1 or 0 (the TPM's refusal in error->rc).
 */
int csecitem_tpm2_unseal(
    csecitem_tpm2 *tpm, const uint8_t *blob, size_t blob_size, uint16_t pcr_bank, uint32_t pcr_mask,
    uint8_t *secret, size_t secret_capacity, size_t *secret_size, csecitem_tpm2_error *error);

/*
 * NV indices (the rollback witness's counter and the record beside it), each used with
 * its own empty authorization (TPMA_NV_AUTHREAD | TPMA_NV_AUTHWRITE).
 *
 * csecitem_tpm2_nv_read: the index's attributes (TPMA_NV, TPMA_NV_WRITTEN included) and
 * declared size, and, once written, its first min(size, capacity) bytes (a counter: its
 * 8-byte big-endian value). Returns 1; 2 when no index is defined there; 0 with error.
 *
 * csecitem_tpm2_nv_define: defines the index (owner hierarchy, its empty authorization;
 * SHA-256 names; no policy). Returns 1; 2 when one is already defined there; 0 with error.
 *
 * csecitem_tpm2_nv_increment: TPM2_NV_Increment, count times (a counter only goes up).
 * csecitem_tpm2_nv_write: writes data (1-256 bytes) at offset 0. Both return 1 or 0.
 */
int csecitem_tpm2_nv_read(csecitem_tpm2 *tpm, uint32_t index, uint32_t *attributes, uint16_t *data_size, uint8_t *data,
                          size_t capacity, size_t *size, csecitem_tpm2_error *error);
int csecitem_tpm2_nv_define(csecitem_tpm2 *tpm, uint32_t index, uint32_t attributes, uint16_t data_size,
                            csecitem_tpm2_error *error);
int csecitem_tpm2_nv_increment(csecitem_tpm2 *tpm, uint32_t index, uint32_t count, csecitem_tpm2_error *error);
int csecitem_tpm2_nv_write(csecitem_tpm2 *tpm, uint32_t index, const uint8_t *data, size_t size, csecitem_tpm2_error *error);
/* TPM2_NV_WriteLock (an index with TPMA_NV_WRITEDEFINE: no write until it is undefined). 1 or 0. */
int csecitem_tpm2_nv_write_lock(csecitem_tpm2 *tpm, uint32_t index, csecitem_tpm2_error *error);
/* TPM2_NV_UndefineSpace under the owner hierarchy. Returns 1; 2 when none was defined; 0 with error. */
int csecitem_tpm2_nv_undefine(csecitem_tpm2 *tpm, uint32_t index, csecitem_tpm2_error *error);

/*
 * The parse step of csecitem_tpm2_unseal alone, with no TPM: unmarshals the blob
 * (TPM2B_PRIVATE then TPM2B_PUBLIC, nothing after) as unseal does before it talks to
 * the TPM, and marshals the two structures back into canonical (at most
 * canonical_capacity bytes; CSECITEM_TPM2_BLOB_MAX holds any). Loads libtss2 like
 * csecitem_tpm2_load. Returns 1, or 0 with error filled (rc 0: malformed).
 */
int csecitem_tpm2_parse_blob(const uint8_t *blob, size_t blob_size, uint8_t *canonical, size_t canonical_capacity,
                             size_t *canonical_size, csecitem_tpm2_error *error);

#endif
