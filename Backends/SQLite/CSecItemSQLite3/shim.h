#ifndef CSECITEM_SQLITE3_SHIM_H
#define CSECITEM_SQLITE3_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a macro casting -1 to a function pointer; Swift cannot import it. */
static inline sqlite3_destructor_type csecitem_sqlite_transient(void) { return SQLITE_TRANSIENT; }
static inline sqlite3_destructor_type csecitem_sqlite_static(void) { return SQLITE_STATIC; }
/* sqlite3_db_config is variadic. */
static inline int csecitem_sqlite_db_config_int(sqlite3 *db, int op, int value) {
    return sqlite3_db_config(db, op, value, (int *)0);
}
/* sqlite3_config is variadic. Turns off SQLite's memory statistics, which take one
   process-wide mutex on every allocation and free (threads reading on separate
   connections queued on it). Only possible before SQLite initialises; returns
   SQLITE_MISUSE, harmlessly, after. */
static inline int csecitem_sqlite_memstatus_off(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
