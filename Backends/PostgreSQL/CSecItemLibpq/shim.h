#ifndef CSECITEM_LIBPQ_SHIM_H
#define CSECITEM_LIBPQ_SHIM_H
/*
 * libpq for the PostgreSQL backend. Everything libpq exports imports into Swift
 * as is; this header only adds poll() on the connection's socket with a bound,
 * which the backend uses to wait for results without blocking past its deadline.
 */
#include <libpq-fe.h>
#include <poll.h>
#include <errno.h>

/* The PG_DIAG_* field codes are character-literal macros Swift cannot import. */
static const int csecitem_pg_diag_sqlstate = PG_DIAG_SQLSTATE;
static const int csecitem_pg_diag_message_primary = PG_DIAG_MESSAGE_PRIMARY;
static const int csecitem_pg_diag_constraint_name = PG_DIAG_CONSTRAINT_NAME;

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
