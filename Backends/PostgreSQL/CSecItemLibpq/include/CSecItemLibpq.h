#ifndef CSECITEM_LIBPQ_H
#define CSECITEM_LIBPQ_H
/*
 * libpq for the PostgreSQL backend, loaded on first use.
 *
 * Nothing links libpq: a process that never opens the PostgreSQL backend never maps
 * libpq.so.5 nor its Kerberos, LDAP, SASL and TLS dependencies (a dozen libraries).
 * The backend calls csecitem_libpq_load() before anything else; after it succeeds,
 * each csecitem_PQxxx function calls libpq's PQxxx through a pointer resolved once
 * with dlsym. libpq's types, enumerations and macros come from its own header, so
 * the declarations below are checked against it at compile time.
 */
#if __has_include(<libpq-fe.h>)
#include <libpq-fe.h>
#else
#include <postgresql/libpq-fe.h> /* Debian's libpq-dev, without pkg-config's -I */
#endif
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>

/* The library's file name: its SONAME, so the loader finds what libpq5 installs. */
#define CSECITEM_LIBPQ_SONAME "libpq.so.5"

/*
 * Loads libpq once per process and resolves every function below. Returns 1 when
 * they are all available; otherwise 0, with the reason (the library or the symbol
 * that is missing) in error. Thread-safe; later calls return the first answer.
 */
int csecitem_libpq_load(char *error, size_t error_size);

/*
 * Tries to load the named library and resolve every function, without keeping it
 * (the loader's own state is untouched): what csecitem_libpq_load reports for a
 * library that is missing or too old. Returns 1 or 0 as above.
 */
int csecitem_libpq_probe(const char *library, char *error, size_t error_size);

/* The libpq functions the backend calls: (return type, name, parameters, arguments). */
#define CSECITEM_LIBPQ_FUNCTIONS(X, V)                                                                                  \
    V(PQclear, (PGresult * res), (res))                                                                                 \
    X(char *, PQcmdTuples, (PGresult * res), (res))                                                                     \
    X(PGconn *, PQconnectdbParams, (const char *const *keywords, const char *const *values, int expand_dbname),         \
      (keywords, values, expand_dbname))                                                                                \
    V(PQconninfoFree, (PQconninfoOption * connOptions), (connOptions))                                                  \
    X(PQconninfoOption *, PQconninfoParse, (const char *conninfo, char **errmsg), (conninfo, errmsg))                   \
    X(int, PQconsumeInput, (PGconn * conn), (conn))                                                                     \
    X(char *, PQdb, (const PGconn *conn), (conn))                                                                       \
    X(char *, PQerrorMessage, (const PGconn *conn), (conn))                                                             \
    V(PQfinish, (PGconn * conn), (conn))                                                                                \
    X(int, PQflush, (PGconn * conn), (conn))                                                                            \
    V(PQfreemem, (void *ptr), (ptr))                                                                                    \
    X(PGresult *, PQgetResult, (PGconn * conn), (conn))                                                                 \
    X(int, PQgetisnull, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))                   \
    X(int, PQgetlength, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))                   \
    X(char *, PQgetvalue, (const PGresult *res, int tup_num, int field_num), (res, tup_num, field_num))                 \
    X(char *, PQhost, (const PGconn *conn), (conn))                                                                     \
    X(int, PQisBusy, (PGconn * conn), (conn))                                                                           \
    X(int, PQntuples, (const PGresult *res), (res))                                                                     \
    X(const char *, PQparameterStatus, (const PGconn *conn, const char *paramName), (conn, paramName))                  \
    X(char *, PQport, (const PGconn *conn), (conn))                                                                     \
    X(char *, PQresultErrorField, (const PGresult *res, int fieldcode), (res, fieldcode))                               \
    X(ExecStatusType, PQresultStatus, (const PGresult *res), (res))                                                     \
    X(int, PQsendPrepare, (PGconn * conn, const char *stmtName, const char *query, int nParams, const Oid *paramTypes), \
      (conn, stmtName, query, nParams, paramTypes))                                                                     \
    X(int, PQsendQuery, (PGconn * conn, const char *query), (conn, query))                                              \
    X(int, PQsendQueryParams,                                                                                           \
      (PGconn * conn, const char *command, int nParams, const Oid *paramTypes, const char *const *paramValues,          \
       const int *paramLengths, const int *paramFormats, int resultFormat),                                             \
      (conn, command, nParams, paramTypes, paramValues, paramLengths, paramFormats, resultFormat))                      \
    X(int, PQsendQueryPrepared,                                                                                         \
      (PGconn * conn, const char *stmtName, int nParams, const char *const *paramValues, const int *paramLengths,       \
       const int *paramFormats, int resultFormat),                                                                      \
      (conn, stmtName, nParams, paramValues, paramLengths, paramFormats, resultFormat))                                 \
    X(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn * conn, PQnoticeProcessor proc, void *arg), (conn, proc, arg))  \
    X(PQnoticeReceiver, PQsetNoticeReceiver, (PGconn * conn, PQnoticeReceiver proc, void *arg), (conn, proc, arg))     \
    X(int, PQsocket, (const PGconn *conn), (conn))                                                                      \
    X(ConnStatusType, PQstatus, (const PGconn *conn), (conn))                                                           \
    X(PGTransactionStatusType, PQtransactionStatus, (const PGconn *conn), (conn))                                       \
    X(char *, PQuser, (const PGconn *conn), (conn))

/* csecitem_PQxxx: libpq's PQxxx, through the loaded library (call csecitem_libpq_load first). */
#define CSECITEM_LIBPQ_DECLARE(type, name, parameters, arguments) type csecitem_##name parameters;
#define CSECITEM_LIBPQ_DECLARE_VOID(name, parameters, arguments) void csecitem_##name parameters;
CSECITEM_LIBPQ_FUNCTIONS(CSECITEM_LIBPQ_DECLARE, CSECITEM_LIBPQ_DECLARE_VOID)
#undef CSECITEM_LIBPQ_DECLARE
#undef CSECITEM_LIBPQ_DECLARE_VOID

/* The PG_DIAG_* field codes are character-literal macros Swift cannot import. */
static const int csecitem_pg_diag_sqlstate = PG_DIAG_SQLSTATE;
static const int csecitem_pg_diag_message_primary = PG_DIAG_MESSAGE_PRIMARY;
static const int csecitem_pg_diag_constraint_name = PG_DIAG_CONSTRAINT_NAME;

/*
 * A notice receiver that counts the notices of severity WARNING (arg: the int the
 * connection owns). Nothing is printed: libpq's default writes notices to stderr, a
 * library stays quiet. A WARNING during COMMIT means the server cancelled the
 * commit's wait for its synchronous standby (pg_cancel_backend, or a shutdown): the
 * transaction is committed on the primary alone. The severity is compared in its
 * untranslated form (sent by PostgreSQL 9.6 and later; else the localized one).
 */
static inline void csecitem_pq_count_warnings(void *arg, const PGresult *res) {
    const char *severity = csecitem_PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (severity == NULL) severity = csecitem_PQresultErrorField(res, PG_DIAG_SEVERITY);
    if (severity != NULL && strcmp(severity, "WARNING") == 0) ++*(int *)arg;
}

/*
 * Waits until the socket is readable (and writable too when want_write), or
 * timeout_ms passes. Returns 1 when ready, 0 on timeout, -1 on error. EINTR is
 * retried by the caller's loop (it recomputes the remaining time).
 */
static inline int csecitem_pq_wait(int fd, int want_write, int timeout_ms) {
    struct pollfd p;
    p.fd = fd;
    p.events = POLLIN | (want_write ? POLLOUT : 0);
    p.revents = 0;
    int rc = poll(&p, 1, timeout_ms);
    if (rc < 0) return errno == EINTR ? 0 : -1;
    return rc > 0 ? 1 : 0;
}

#endif
