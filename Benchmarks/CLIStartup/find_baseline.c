/* The smallest program doing the irreducible work of `secitem find-generic-password -w`
 * on the file backend, for the CLI table of SecItemBenchmarks (`--filter cli`,
 * CLIStartupBenchmarks.swift): the whole-process baseline.
 *
 *   find_baseline create FILE KEYFILE COUNT   fills its own keychain-like file
 *   find_baseline lookup FILE KEYFILE ACCOUNT prints the secret and a newline
 *
 * lookup does what the file backend does to answer one lookup, with nothing else:
 * load libsqlite3 and libcrypto, read the key file (O_NOFOLLOW|O_NONBLOCK, fstat),
 * open the SQLite file (WAL, synchronous=FULL), read the wrapped data key and the key
 * epoch in a read transaction, unwrap the data key (AES-256-GCM), derive the
 * encryption and MAC keys (two HKDF-SHA256), HMAC the primary key, select the row by
 * it, check its four attribute HMACs, open its AES-256-GCM box bound to uuid and
 * primary key, write the secret. Its file has the same shape as the file backend's
 * (one row per item, HMAC columns, a sealed box) but its own simple encoding, so it
 * does not follow format changes of the real file; the work per lookup is the same.
 */
#define _GNU_SOURCE
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(const char *what) {
    fprintf(stderr, "find_baseline: %s\n", what);
    return 1;
}

static int read_key_file(const char *path, unsigned char key[32]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        close(fd);
        return -1;
    }
    char hex[65];
    ssize_t n = read(fd, hex, 64);
    close(fd);
    if (n != 64) return -1;
    for (int i = 0; i < 32; i++) {
        unsigned int byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1) return -1;
        key[i] = (unsigned char)byte;
    }
    return 0;
}

static int hkdf(const unsigned char *key, const char *info, unsigned char out[32]) {
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(EVP_PKEY_HKDF, NULL);
    size_t len = 32;
    int ok = ctx && EVP_PKEY_derive_init(ctx) > 0 && EVP_PKEY_CTX_set_hkdf_md(ctx, EVP_sha256()) > 0
        && EVP_PKEY_CTX_set1_hkdf_key(ctx, key, 32) > 0
        && EVP_PKEY_CTX_add1_hkdf_info(ctx, (const unsigned char *)info, (int)strlen(info)) > 0
        && EVP_PKEY_derive(ctx, out, &len) > 0 && len == 32;
    EVP_PKEY_CTX_free(ctx);
    return ok ? 0 : -1;
}

static void mac(const unsigned char key[32], const char *name, const char *value, unsigned char out[32]) {
    unsigned char message[512];
    int n = snprintf((char *)message, sizeof message, "v1%cgenp%c%s%c%s", 0, 0, name, 0, value);
    unsigned int outlen = 32;
    HMAC(EVP_sha256(), key, 32, message, (size_t)n, out, &outlen);
}

static void primary_key(const unsigned char key[32], const char *account, unsigned char out[32]) {
    char message[512];
    int n = snprintf(message, sizeof message, "genp%c%zu:%s%c7:default%c4:bulk%c1:0", 0, strlen(account), account, 0, 0, 0);
    unsigned int outlen = 32;
    HMAC(EVP_sha256(), key, 32, (unsigned char *)message, (size_t)n, out, &outlen);
}

/* AES-256-GCM: box = nonce(12) ‖ ciphertext ‖ tag(16). */
static int seal(const unsigned char key[32], const unsigned char *pt, int ptlen, const unsigned char *aad, int aadlen,
                unsigned char *box) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len, ok = RAND_bytes(box, 12) == 1 && EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, box) == 1
        && EVP_EncryptUpdate(ctx, NULL, &len, aad, aadlen) == 1 && EVP_EncryptUpdate(ctx, box + 12, &len, pt, ptlen) == 1
        && EVP_EncryptFinal_ex(ctx, box + 12 + ptlen, &len) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, box + 12 + ptlen) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? 0 : -1;
}

static int open_box(const unsigned char key[32], const unsigned char *box, int boxlen, const unsigned char *aad, int aadlen,
                    unsigned char *pt) {
    if (boxlen < 28) return -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int len, ctlen = boxlen - 28;
    int ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, box) == 1
        && EVP_DecryptUpdate(ctx, NULL, &len, aad, aadlen) == 1 && EVP_DecryptUpdate(ctx, pt, &len, box + 12, ctlen) == 1
        && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)(box + 12 + ctlen)) == 1
        && EVP_DecryptFinal_ex(ctx, pt + ctlen, &len) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok ? ctlen : -1;
}

static int create(const char *path, const unsigned char kek[32], int count) {
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) return fail("cannot create the file");
    sqlite3_exec(db,
                 "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                 "CREATE TABLE meta(key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID;"
                 "CREATE TABLE items(seq INTEGER PRIMARY KEY, uuid BLOB NOT NULL UNIQUE, class TEXT NOT NULL,"
                 " pk BLOB NOT NULL UNIQUE, h_acct BLOB, h_svce BLOB, h_agrp BLOB, h_sync BLOB, ct BLOB NOT NULL);"
                 "BEGIN IMMEDIATE;",
                 NULL, NULL, NULL);
    unsigned char data_key[32], wrapped[12 + 32 + 16], enc[32], mackey[32];
    RAND_bytes(data_key, 32);
    seal(kek, data_key, 32, (const unsigned char *)"dk", 2, wrapped);
    hkdf(data_key, "enc", enc);
    hkdf(data_key, "mac", mackey);
    sqlite3_stmt *meta;
    sqlite3_prepare_v2(db, "INSERT INTO meta VALUES (?, ?)", -1, &meta, NULL);
    sqlite3_bind_text(meta, 1, "wrapped", -1, SQLITE_STATIC);
    sqlite3_bind_blob(meta, 2, wrapped, sizeof wrapped, SQLITE_STATIC);
    sqlite3_step(meta);
    sqlite3_reset(meta);
    sqlite3_bind_text(meta, 1, "epoch", -1, SQLITE_STATIC);
    sqlite3_bind_int(meta, 2, 1);
    sqlite3_step(meta);
    sqlite3_finalize(meta);
    sqlite3_stmt *insert;
    sqlite3_prepare_v2(db, "INSERT INTO items(uuid, class, pk, h_acct, h_svce, h_agrp, h_sync, ct) VALUES (?,'genp',?,?,?,?,?,?)",
                       -1, &insert, NULL);
    for (int i = 0; i < count; i++) {
        char account[64], secret[64];
        snprintf(account, sizeof account, "account-%d", i);
        snprintf(secret, sizeof secret, "secret-%d", i);
        unsigned char uuid[16], pk[32], h[4][32], aad[48], box[12 + 64 + 16];
        RAND_bytes(uuid, 16);
        primary_key(mackey, account, pk);
        mac(mackey, "acct", account, h[0]);
        mac(mackey, "svce", "bulk", h[1]);
        mac(mackey, "agrp", "default", h[2]);
        mac(mackey, "sync", "0", h[3]);
        memcpy(aad, uuid, 16);
        memcpy(aad + 16, pk, 32);
        int len = (int)strlen(secret);
        seal(enc, (unsigned char *)secret, len, aad, 48, box);
        sqlite3_bind_blob(insert, 1, uuid, 16, SQLITE_STATIC);
        sqlite3_bind_blob(insert, 2, pk, 32, SQLITE_STATIC);
        for (int c = 0; c < 4; c++) sqlite3_bind_blob(insert, 3 + c, h[c], 32, SQLITE_STATIC);
        sqlite3_bind_blob(insert, 7, box, 12 + len + 16, SQLITE_STATIC);
        if (sqlite3_step(insert) != SQLITE_DONE) return fail("insert failed");
        sqlite3_reset(insert);
    }
    sqlite3_finalize(insert);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    return 0;
}

static int lookup(const char *path, const unsigned char kek[32], const char *account) {
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) return fail("cannot open the file");
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; BEGIN", NULL, NULL, NULL);
    sqlite3_stmt *stmt;
    sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &stmt, NULL);
    sqlite3_bind_text(stmt, 1, "epoch", -1, SQLITE_STATIC);
    if (sqlite3_step(stmt) != SQLITE_ROW) return fail("no epoch");
    sqlite3_reset(stmt);
    sqlite3_bind_text(stmt, 1, "wrapped", -1, SQLITE_STATIC);
    if (sqlite3_step(stmt) != SQLITE_ROW || sqlite3_column_bytes(stmt, 0) != 60) return fail("no wrapped key");
    unsigned char data_key[32 + 16], enc[32], mackey[32];
    if (open_box(kek, sqlite3_column_blob(stmt, 0), 60, (const unsigned char *)"dk", 2, data_key) != 32)
        return fail("the key does not unlock the file");
    sqlite3_finalize(stmt);
    hkdf(data_key, "enc", enc);
    hkdf(data_key, "mac", mackey);
    unsigned char pk[32], h[4][32];
    primary_key(mackey, account, pk);
    sqlite3_prepare_v2(db, "SELECT uuid, h_acct, h_svce, h_agrp, h_sync, ct FROM items WHERE pk = ?", -1, &stmt, NULL);
    sqlite3_bind_blob(stmt, 1, pk, 32, SQLITE_STATIC);
    if (sqlite3_step(stmt) != SQLITE_ROW) return fail("not found");
    mac(mackey, "acct", account, h[0]);
    mac(mackey, "svce", "bulk", h[1]);
    mac(mackey, "agrp", "default", h[2]);
    mac(mackey, "sync", "0", h[3]);
    for (int c = 0; c < 4; c++) {
        if (sqlite3_column_bytes(stmt, 1 + c) != 32 || memcmp(sqlite3_column_blob(stmt, 1 + c), h[c], 32) != 0)
            return fail("damaged row");
    }
    unsigned char aad[48], plain[4096];
    memcpy(aad, sqlite3_column_blob(stmt, 0), 16);
    memcpy(aad + 16, pk, 32);
    int boxlen = sqlite3_column_bytes(stmt, 5);
    if (boxlen > (int)sizeof plain) return fail("too large");
    int n = open_box(enc, sqlite3_column_blob(stmt, 5), boxlen, aad, 48, plain);
    if (n < 0) return fail("damaged row");
    sqlite3_finalize(stmt);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(db);
    plain[n] = '\n';
    if (write(STDOUT_FILENO, plain, (size_t)n + 1) != n + 1) return 1;
    OPENSSL_cleanse(plain, sizeof plain);
    OPENSSL_cleanse(data_key, sizeof data_key);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) return fail("usage: find_baseline create FILE KEYFILE COUNT | lookup FILE KEYFILE ACCOUNT");
    unsigned char kek[32];
    if (read_key_file(argv[3], kek) != 0) return fail("cannot read the key file");
    if (strcmp(argv[1], "create") == 0) return create(argv[2], kek, atoi(argv[4]));
    if (strcmp(argv[1], "lookup") == 0) return lookup(argv[2], kek, argv[4]);
    return fail("unknown mode");
}
