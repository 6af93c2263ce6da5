/* GLib, GIO and libsecret through dlopen/dlsym: see include/CSecItemGLib.h. */
#define _GNU_SOURCE
#include "CSecItemGLib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct csecitem_glib_functions *csecitem_glib_table;
const struct csecitem_secret_functions *csecitem_secret_table;

static struct csecitem_glib_functions glib_functions;
static struct csecitem_secret_functions secret_functions;
static char glib_error[512];
static char secret_error[512];
static pthread_once_t glib_once = PTHREAD_ONCE_INIT;
static pthread_once_t secret_once = PTHREAD_ONCE_INIT;

/* Opens `library` for good (RTLD_NOW: a missing symbol fails here, not at a call; RTLD_LOCAL:
 * nothing enters the global scope; never closed: GLib cannot be unloaded). NULL and a reason
 * naming the package when it is missing. */
static void *open_library(const char *library, const char *package, char *error, size_t error_size) {
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == NULL) {
        const char *reason = dlerror();
        snprintf(error, error_size, "cannot load %s (%s); install it (Debian/Ubuntu: apt-get install %s)", library,
                 reason ? reason : "not found", package);
    }
    return handle;
}

#define RESOLVE(name)                                                                                      \
    symbol = dlsym(handle, #name);                                                                         \
    if (symbol == NULL) {                                                                                  \
        snprintf(error, error_size, "%s has no %s: it is not the library expected, or too old", library, #name); \
        return 0;                                                                                          \
    }                                                                                                      \
    memcpy(&found->name, &symbol, sizeof symbol);
#define RESOLVE_TYPED(type, name, parameters, arguments) RESOLVE(name)
#define RESOLVE_VOID(name, parameters, arguments) RESOLVE(name)

static int resolve_glib(void *handle, const char *library, struct csecitem_glib_functions *found, char *error,
                        size_t error_size) {
    void *symbol;
    CSECITEM_GLIB_FUNCTIONS(RESOLVE_TYPED, RESOLVE_VOID)
    return 1;
}

static int resolve_secret(void *handle, const char *library, struct csecitem_secret_functions *found, char *error,
                          size_t error_size) {
    void *symbol;
    CSECITEM_SECRET_FUNCTIONS(RESOLVE_TYPED, RESOLVE_VOID)
    return 1;
}
#undef RESOLVE_TYPED
#undef RESOLVE_VOID
#undef RESOLVE

static void load_glib(void) {
    void *handle = open_library(CSECITEM_GLIB_SONAME, "libglib2.0-0", glib_error, sizeof glib_error);
    if (handle != NULL && resolve_glib(handle, CSECITEM_GLIB_SONAME, &glib_functions, glib_error, sizeof glib_error)) {
        __atomic_store_n(&csecitem_glib_table, &glib_functions, __ATOMIC_RELEASE);
    }
}

static void load_secret(void) {
    pthread_once(&glib_once, load_glib);
    if (csecitem_glib_table == NULL) {
        snprintf(secret_error, sizeof secret_error, "%s", glib_error);
        return;
    }
    void *handle = open_library(CSECITEM_SECRET_SONAME, "libsecret-1-0", secret_error, sizeof secret_error);
    if (handle != NULL &&
        resolve_secret(handle, CSECITEM_SECRET_SONAME, &secret_functions, secret_error, sizeof secret_error)) {
        __atomic_store_n(&csecitem_secret_table, &secret_functions, __ATOMIC_RELEASE);
    }
}

int csecitem_glib_load(char *error, size_t error_size) {
    pthread_once(&glib_once, load_glib);
    int loaded = __atomic_load_n(&csecitem_glib_table, __ATOMIC_ACQUIRE) != NULL;
    if (!loaded && error != NULL && error_size > 0) snprintf(error, error_size, "%s", glib_error);
    return loaded;
}

int csecitem_secret_load(char *error, size_t error_size) {
    pthread_once(&secret_once, load_secret);
    int loaded = __atomic_load_n(&csecitem_secret_table, __ATOMIC_ACQUIRE) != NULL;
    if (!loaded && error != NULL && error_size > 0) snprintf(error, error_size, "%s", secret_error);
    return loaded;
}

int csecitem_glib_is_loaded(void) { return __atomic_load_n(&csecitem_glib_table, __ATOMIC_ACQUIRE) != NULL; }
int csecitem_secret_is_loaded(void) { return __atomic_load_n(&csecitem_secret_table, __ATOMIC_ACQUIRE) != NULL; }

const struct csecitem_glib_functions *csecitem_glib_require(void) {
    char error[512];
    if (!csecitem_glib_load(error, sizeof error)) {
        fprintf(stderr, "secitem: GLib was called before it was loaded, and it cannot be: %s\n", error);
        abort();
    }
    return csecitem_glib_table;
}

const struct csecitem_secret_functions *csecitem_secret_require(void) {
    char error[512];
    if (!csecitem_secret_load(error, sizeof error)) {
        fprintf(stderr, "secitem: libsecret was called before it was loaded, and it cannot be: %s\n", error);
        abort();
    }
    return csecitem_secret_table;
}

/* ---- GLib's variadic functions over their va_list forms --------------------------------- */

GVariant *csecitem_g_variant_new(const gchar *format_string, ...) {
    va_list ap;
    va_start(ap, format_string);
    GVariant *value = csecitem_glib()->g_variant_new_va(format_string, NULL, &ap);
    va_end(ap);
    return value;
}

void csecitem_g_variant_get(GVariant *value, const gchar *format_string, ...) {
    va_list ap;
    va_start(ap, format_string);
    csecitem_glib()->g_variant_get_va(value, format_string, NULL, &ap);
    va_end(ap);
}

/* As GLib's g_variant_iter_next: the next child read with the format, then released (a
 * '&' pointer stays valid: it points into the container's data, which the caller holds). */
gboolean csecitem_g_variant_iter_next(GVariantIter *iter, const gchar *format_string, ...) {
    GVariant *child = csecitem_glib()->g_variant_iter_next_value(iter);
    if (child == NULL) return FALSE;
    va_list ap;
    va_start(ap, format_string);
    csecitem_glib()->g_variant_get_va(child, format_string, NULL, &ap);
    va_end(ap);
    csecitem_glib()->g_variant_unref(child);
    return TRUE;
}

/* As GLib's g_variant_lookup, for a format of a basic type ('&' allowed): its type is the
 * format without '&' (GLib derives it with a function it does not export). The dictionary
 * is serialised first, so that a '&' pointer into the value stays valid once it is released. */
gboolean csecitem_g_variant_lookup(GVariant *dictionary, const gchar *key, const gchar *format_string, ...) {
    const struct csecitem_glib_functions *glib = csecitem_glib();
    char type[8];
    size_t length = 0;
    for (const char *c = format_string; *c != '\0'; c++) {
        if (*c == '&') continue;
        if (length + 1 >= sizeof type) return FALSE;
        type[length++] = *c;
    }
    type[length] = '\0';
    if (!glib->g_variant_type_string_is_valid(type)) return FALSE;
    glib->g_variant_get_data(dictionary);
    GVariant *value = glib->g_variant_lookup_value(dictionary, key, G_VARIANT_TYPE(type));
    if (value == NULL) return FALSE;
    va_list ap;
    va_start(ap, format_string);
    glib->g_variant_get_va(value, format_string, NULL, &ap);
    va_end(ap);
    glib->g_variant_unref(value);
    return TRUE;
}

void csecitem_g_variant_builder_add(GVariantBuilder *builder, const gchar *format_string, ...) {
    va_list ap;
    va_start(ap, format_string);
    GVariant *value = csecitem_glib()->g_variant_new_va(format_string, NULL, &ap);
    va_end(ap);
    csecitem_glib()->g_variant_builder_add_value(builder, value);
}

gchar *csecitem_g_strdup_printf(const gchar *format, ...) {
    va_list ap;
    va_start(ap, format);
    gchar *text = csecitem_glib()->g_strdup_vprintf(format, ap);
    va_end(ap);
    return text;
}
