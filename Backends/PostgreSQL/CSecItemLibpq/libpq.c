/* libpq through dlopen/dlsym: see include/CSecItemLibpq.h. */
#define _GNU_SOURCE
#include "CSecItemLibpq.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One pointer per function, named as libpq names it. */
struct libpq_table {
#define FIELD(type, name, parameters, arguments) type(*name) parameters;
#define FIELD_VOID(name, parameters, arguments) void(*name) parameters;
    CSECITEM_LIBPQ_FUNCTIONS(FIELD, FIELD_VOID)
#undef FIELD
#undef FIELD_VOID
};

static struct libpq_table table;
static int loaded;
static char load_error[512];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* Opens library and fills *out, returning its handle; on failure closes it, says why in
 * error and returns NULL. */
static void *open_library(const char *library, struct libpq_table *out, char *error, size_t error_size) {
    /* RTLD_LOCAL: libpq's symbols stay out of the global scope, as a linked library's
     * would not be interposed either; RTLD_NOW: a missing symbol fails here, not later. */
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(error, error_size, "cannot load %s (%s); install libpq (Debian/Ubuntu: apt-get install libpq5)",
                 library, reason ? reason : "not found");
        return NULL;
    }
    struct libpq_table found;
    memset(&found, 0, sizeof found);
    void *symbol;
#define RESOLVE(name)                                                                                       \
    symbol = dlsym(handle, #name);                                                                          \
    if (symbol == NULL) {                                                                                   \
        snprintf(error, error_size, "%s has no %s: it is not libpq, or a libpq too old", library, #name); \
        dlclose(handle);                                                                                    \
        return NULL;                                                                                        \
    }                                                                                                       \
    memcpy(&found.name, &symbol, sizeof symbol);
#define RESOLVE_TYPED(type, name, parameters, arguments) RESOLVE(name)
#define RESOLVE_VOID(name, parameters, arguments) RESOLVE(name)
    CSECITEM_LIBPQ_FUNCTIONS(RESOLVE_TYPED, RESOLVE_VOID)
#undef RESOLVE_TYPED
#undef RESOLVE_VOID
#undef RESOLVE
    *out = found;
    return handle;
}

static void load_default(void) {
    /* The handle stays open for the life of the process. */
    loaded = open_library(CSECITEM_LIBPQ_SONAME, &table, load_error, sizeof load_error) != NULL;
}

int csecitem_libpq_load(char *error, size_t error_size) {
    pthread_once(&load_once, load_default);
    if (!loaded && error != NULL && error_size > 0) snprintf(error, error_size, "%s", load_error);
    return loaded;
}

int csecitem_libpq_probe(const char *library, char *error, size_t error_size) {
    struct libpq_table scratch;
    char ignored[1];
    if (error == NULL || error_size == 0) {
        error = ignored;
        error_size = sizeof ignored;
    }
    void *handle = open_library(library, &scratch, error, error_size);
    if (handle == NULL) return 0;
    dlclose(handle);
    return 1;
}

/* Reached only if the backend skipped csecitem_libpq_load: a programming error. */
static void require_loaded(void) {
    pthread_once(&load_once, load_default);
    if (!loaded) {
        fprintf(stderr, "secitem: the PostgreSQL backend called libpq without loading it: %s\n", load_error);
        abort();
    }
}

#define TRAMPOLINE(type, name, parameters, arguments) \
    type csecitem_##name parameters {                 \
        require_loaded();                             \
        return table.name arguments;                  \
    }
#define TRAMPOLINE_VOID(name, parameters, arguments) \
    void csecitem_##name parameters {                \
        require_loaded();                            \
        table.name arguments;                        \
    }
CSECITEM_LIBPQ_FUNCTIONS(TRAMPOLINE, TRAMPOLINE_VOID)
