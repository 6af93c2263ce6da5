#ifndef CSECITEM_GLIB_H
#define CSECITEM_GLIB_H
/*
 * GLib, GIO and libsecret, loaded on first use (issue 24).
 *
 * Nothing links them: a process that never talks to the Secret Service or to polkit/logind
 * (a `secitem find -w` on the encrypted file) maps none of libsecret, GIO, GObject, GLib or
 * the dozen libraries they pull in (libgcrypt, libmount, libblkid, libselinux, libpcre2,
 * libffi, libz), and runs none of GObject's constructors. The functions below carry GLib's
 * own names and types, so the C code of the Secret Service backend (CSecItemLibsecret) and
 * of the system-bus client (CSecItemDBus) and their Swift callers read as they would against
 * GLib's headers; each is a `static inline` call through a pointer that dlsym resolved once.
 *
 * This header declares the part of GLib's API the project uses, as GLib's headers declare it
 * (same struct tags, same typedefs, same enumerator values), because those headers can only
 * be had through pkg-config, and SwiftPM would then link the libraries into every program
 * that depends on them. Tests/CSecItemGLibCheck compiles this header against GLib's and
 * libsecret's real headers and fails to build on any difference (a function's type, an
 * enumerator's value, a structure's size).
 *
 * Loading: csecitem_glib_load (GLib and GIO) or csecitem_secret_load (libsecret, which loads
 * GLib and GIO too) before the first call; both are thread-safe and return the first
 * answer. A call made before them loads the libraries itself and, should they be missing,
 * ends the process with a message naming the library: the entry points (the Secret Service
 * backend's connect, the portal key source, the polkit client's open) load first and turn a
 * missing library into an error, so that path is a programming error, never a user's.
 */
#include <stddef.h>
#include <stdarg.h>

/* ---- Scalar types (glib/gtypes.h, glibconfig.h for LP64 Linux) ---------------------- */
typedef char gchar;
typedef int gint;
typedef gint gboolean;
typedef unsigned int guint;
typedef unsigned char guchar;
typedef unsigned char guint8;
typedef unsigned long gsize;
typedef signed long gssize;
typedef void *gpointer;
typedef const void *gconstpointer;
typedef unsigned int guint32;
typedef signed long gint64;
typedef guint32 GQuark;
typedef gsize GType;

#ifndef CSECITEM_GLIB_CHECK
#ifndef TRUE
#define TRUE (!FALSE)
#endif
#ifndef FALSE
#define FALSE (0)
#endif
#define G_MAXINT 2147483647
#define G_MAXUINT32 0xffffffffU
#define G_SOURCE_REMOVE FALSE
#endif

/* ---- Opaque types: GLib's own struct tags, so pointers are the same types ----------- */
typedef struct _GVariant GVariant;
typedef struct _GVariantType GVariantType;
typedef struct _GHashTable GHashTable;
typedef struct _GPtrArray GPtrArray;
typedef struct _GMainContext GMainContext;
typedef struct _GMainLoop GMainLoop;
typedef struct _GSource GSource;
typedef struct _GThread GThread;
typedef struct _GObject GObject;
typedef struct _GCancellable GCancellable;
typedef struct _GAsyncResult GAsyncResult;
typedef struct _GDBusConnection GDBusConnection;
typedef struct _GDBusMessage GDBusMessage;
typedef struct _GDBusProxy GDBusProxy;
typedef struct _GDBusAuthObserver GDBusAuthObserver;
typedef struct _GUnixFDList GUnixFDList;
typedef struct _GError GError;
typedef struct _GList GList;
typedef struct _GVariantIter GVariantIter;
typedef struct _GVariantBuilder GVariantBuilder;
typedef struct _GHashTableIter GHashTableIter;
typedef union _GMutex GMutex;
typedef struct _GCond GCond;
typedef struct _SecretService SecretService;
typedef struct _SecretValue SecretValue;
typedef struct _SecretItem SecretItem;

/* ---- Callbacks ------------------------------------------------------------------------ */
typedef void (*GDestroyNotify)(gpointer data);
typedef guint (*GHashFunc)(gconstpointer key);
typedef gboolean (*GEqualFunc)(gconstpointer a, gconstpointer b);
typedef gboolean (*GSourceFunc)(gpointer user_data);
typedef gpointer (*GThreadFunc)(gpointer data);
typedef void (*GAsyncReadyCallback)(GObject *source_object, GAsyncResult *res, gpointer data);
typedef GDBusMessage *(*GDBusMessageFilterFunction)(GDBusConnection *connection, GDBusMessage *message,
                                                     gboolean incoming, gpointer user_data);
typedef void (*GDBusSignalCallback)(GDBusConnection *connection, const gchar *sender_name, const gchar *object_path,
                                    const gchar *interface_name, const gchar *signal_name, GVariant *parameters,
                                    gpointer user_data);

/* ---- Enumerations: (type, enumerator, value); checked against GLib's ------------------ */
#define CSECITEM_GLIB_CONSTANTS(C)                                        \
    C(GBusType, G_BUS_TYPE_STARTER, -1)                                   \
    C(GBusType, G_BUS_TYPE_SYSTEM, 1)                                     \
    C(GBusType, G_BUS_TYPE_SESSION, 2)                                    \
    C(GDBusCallFlags, G_DBUS_CALL_FLAGS_NONE, 0)                          \
    C(GDBusSignalFlags, G_DBUS_SIGNAL_FLAGS_NONE, 0)                      \
    C(GDBusConnectionFlags, G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT, 1) \
    C(GDBusConnectionFlags, G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, 8) \
    C(GDBusMessageType, G_DBUS_MESSAGE_TYPE_SIGNAL, 4)                    \
    C(GChecksumType, G_CHECKSUM_SHA256, 2)                                \
    C(GIOErrorEnum, G_IO_ERROR_FAILED, 0)                                 \
    C(GIOErrorEnum, G_IO_ERROR_NOT_FOUND, 1)                              \
    C(GIOErrorEnum, G_IO_ERROR_NOT_SUPPORTED, 15)                         \
    C(GIOErrorEnum, G_IO_ERROR_CLOSED, 18)                                \
    C(GIOErrorEnum, G_IO_ERROR_CANCELLED, 19)                             \
    C(GIOErrorEnum, G_IO_ERROR_TIMED_OUT, 24)                             \
    C(GIOErrorEnum, G_IO_ERROR_BROKEN_PIPE, 44)                           \
    C(GIOErrorEnum, G_IO_ERROR_CONNECTION_CLOSED, 44)                     \
    C(GIOErrorEnum, G_IO_ERROR_NOT_CONNECTED, 45)                         \
    C(GDBusError, G_DBUS_ERROR_SERVICE_UNKNOWN, 2)                        \
    C(GDBusError, G_DBUS_ERROR_NAME_HAS_NO_OWNER, 3)                      \
    C(GDBusError, G_DBUS_ERROR_NO_REPLY, 4)                               \
    C(GDBusError, G_DBUS_ERROR_TIMEOUT, 12)                               \
    C(GDBusError, G_DBUS_ERROR_DISCONNECTED, 15)                          \
    C(GDBusError, G_DBUS_ERROR_UNKNOWN_METHOD, 19)                        \
    C(GDBusError, G_DBUS_ERROR_TIMED_OUT, 20)                             \
    C(GDBusError, G_DBUS_ERROR_UNKNOWN_OBJECT, 41)                        \
    C(SecretError, SECRET_ERROR_IS_LOCKED, 2)                             \
    C(SecretError, SECRET_ERROR_NO_SUCH_OBJECT, 3)                        \
    C(SecretServiceFlags, SECRET_SERVICE_NONE, 0)                         \
    C(SecretServiceFlags, SECRET_SERVICE_OPEN_SESSION, 2)                 \
    C(SecretItemCreateFlags, SECRET_ITEM_CREATE_NONE, 0)                  \
    C(SecretSearchFlags, SECRET_SEARCH_NONE, 0)                           \
    C(SecretSearchFlags, SECRET_SEARCH_ALL, 2)                            \
    C(SecretSearchFlags, SECRET_SEARCH_UNLOCK, 4)                         \
    C(SecretSearchFlags, SECRET_SEARCH_LOAD_SECRETS, 8)

#ifndef CSECITEM_GLIB_CHECK
/* GLib's enumerations, with the enumerators the project uses (GLib's headers declare more;
 * an enumeration's type is unsigned int either way). */
/* G_BUS_TYPE_STARTER (-1) makes GLib's GBusType a signed enumeration: so is this one. */
typedef enum { G_BUS_TYPE_STARTER = -1, G_BUS_TYPE_SYSTEM = 1, G_BUS_TYPE_SESSION = 2 } GBusType;
typedef enum { G_DBUS_CALL_FLAGS_NONE = 0 } GDBusCallFlags;
typedef enum { G_DBUS_SIGNAL_FLAGS_NONE = 0 } GDBusSignalFlags;
typedef enum {
    G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT = 1,
    G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION = 8
} GDBusConnectionFlags;
typedef enum { G_DBUS_MESSAGE_TYPE_SIGNAL = 4 } GDBusMessageType;
typedef enum { G_CHECKSUM_SHA256 = 2 } GChecksumType;
typedef enum {
    G_IO_ERROR_FAILED = 0,
    G_IO_ERROR_NOT_FOUND = 1,
    G_IO_ERROR_NOT_SUPPORTED = 15,
    G_IO_ERROR_CLOSED = 18,
    G_IO_ERROR_CANCELLED = 19,
    G_IO_ERROR_TIMED_OUT = 24,
    G_IO_ERROR_BROKEN_PIPE = 44,
    G_IO_ERROR_CONNECTION_CLOSED = 44,
    G_IO_ERROR_NOT_CONNECTED = 45
} GIOErrorEnum;
typedef enum {
    G_DBUS_ERROR_SERVICE_UNKNOWN = 2,
    G_DBUS_ERROR_NAME_HAS_NO_OWNER = 3,
    G_DBUS_ERROR_NO_REPLY = 4,
    G_DBUS_ERROR_TIMEOUT = 12,
    G_DBUS_ERROR_DISCONNECTED = 15,
    G_DBUS_ERROR_UNKNOWN_METHOD = 19,
    G_DBUS_ERROR_TIMED_OUT = 20,
    G_DBUS_ERROR_UNKNOWN_OBJECT = 41
} GDBusError;
typedef enum { SECRET_ERROR_IS_LOCKED = 2, SECRET_ERROR_NO_SUCH_OBJECT = 3 } SecretError;
typedef enum { SECRET_SERVICE_NONE = 0, SECRET_SERVICE_OPEN_SESSION = 2 } SecretServiceFlags;
typedef enum { SECRET_ITEM_CREATE_NONE = 0 } SecretItemCreateFlags;
typedef enum {
    SECRET_SEARCH_NONE = 0,
    SECRET_SEARCH_ALL = 2,
    SECRET_SEARCH_UNLOCK = 4,
    SECRET_SEARCH_LOAD_SECRETS = 8
} SecretSearchFlags;
/* libsecret's schema (an anonymous struct there); the project passes NULL only. */
typedef struct CSecItemSecretSchema SecretSchema;

/* ---- Structures the caller allocates (sizes checked against GLib's) ------------------ */
struct _GError {
    GQuark domain;
    gint code;
    gchar *message;
};
struct _GList {
    gpointer data;
    GList *next;
    GList *prev;
};
struct _GVariantIter {
    gsize x[16];
};
struct _GVariantBuilder {
    gsize x[16];
};
struct _GHashTableIter {
    gpointer dummy1;
    gpointer dummy2;
    gpointer dummy3;
    int dummy4;
    gboolean dummy5;
    gpointer dummy6;
};
union _GMutex {
    gpointer p;
    guint i[2];
};
struct _GCond {
    gpointer p;
    guint i[2];
};
#endif /* CSECITEM_GLIB_CHECK */

/* ---- Functions: (return type, name, parameters, arguments) ---------------------------- */
/* GLib, GObject and GIO (csecitem_glib_load: libgio-2.0.so.0 and what it links). */
#define CSECITEM_GLIB_FUNCTIONS(X, V)                                                                                   \
    V(g_bus_get, (GBusType bus_type, GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data),      \
      (bus_type, cancellable, callback, user_data))                                                                     \
    X(GDBusConnection *, g_bus_get_finish, (GAsyncResult *res, GError **error), (res, error))                           \
    V(g_cancellable_cancel, (GCancellable *cancellable), (cancellable))                                                 \
    X(GCancellable *, g_cancellable_new, (void), ())                                                                    \
    V(g_clear_error, (GError **err), (err))                                                                             \
    X(gchar *, g_compute_checksum_for_data, (GChecksumType checksum_type, const guchar *data, gsize length),            \
      (checksum_type, data, length))                                                                                    \
    V(g_cond_broadcast, (GCond *cond), (cond))                                                                          \
    V(g_cond_clear, (GCond *cond), (cond))                                                                              \
    V(g_cond_init, (GCond *cond), (cond))                                                                               \
    V(g_cond_wait, (GCond *cond, GMutex *mutex), (cond, mutex))                                                         \
    X(gchar *, g_dbus_address_get_for_bus_sync, (GBusType bus_type, GCancellable *cancellable, GError **error),         \
      (bus_type, cancellable, error))                                                                                   \
    X(guint, g_dbus_connection_add_filter,                                                                              \
      (GDBusConnection *connection, GDBusMessageFilterFunction filter_function, gpointer user_data,                     \
       GDestroyNotify user_data_free_func),                                                                             \
      (connection, filter_function, user_data, user_data_free_func))                                                    \
    V(g_dbus_connection_call,                                                                                           \
      (GDBusConnection *connection, const gchar *bus_name, const gchar *object_path, const gchar *interface_name,       \
       const gchar *method_name, GVariant *parameters, const GVariantType *reply_type, GDBusCallFlags flags,            \
       gint timeout_msec, GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data),                 \
      (connection, bus_name, object_path, interface_name, method_name, parameters, reply_type, flags, timeout_msec,     \
       cancellable, callback, user_data))                                                                               \
    X(GVariant *, g_dbus_connection_call_finish, (GDBusConnection *connection, GAsyncResult *res, GError **error),      \
      (connection, res, error))                                                                                         \
    X(GVariant *, g_dbus_connection_call_sync,                                                                          \
      (GDBusConnection *connection, const gchar *bus_name, const gchar *object_path, const gchar *interface_name,       \
       const gchar *method_name, GVariant *parameters, const GVariantType *reply_type, GDBusCallFlags flags,            \
       gint timeout_msec, GCancellable *cancellable, GError **error),                                                   \
      (connection, bus_name, object_path, interface_name, method_name, parameters, reply_type, flags, timeout_msec,     \
       cancellable, error))                                                                                             \
    X(GVariant *, g_dbus_connection_call_with_unix_fd_list_sync,                                                        \
      (GDBusConnection *connection, const gchar *bus_name, const gchar *object_path, const gchar *interface_name,       \
       const gchar *method_name, GVariant *parameters, const GVariantType *reply_type, GDBusCallFlags flags,            \
       gint timeout_msec, GUnixFDList *fd_list, GUnixFDList **out_fd_list, GCancellable *cancellable, GError **error),  \
      (connection, bus_name, object_path, interface_name, method_name, parameters, reply_type, flags, timeout_msec,     \
       fd_list, out_fd_list, cancellable, error))                                                                       \
    X(gboolean, g_dbus_connection_close_sync, (GDBusConnection *connection, GCancellable *cancellable, GError **error), \
      (connection, cancellable, error))                                                                                 \
    X(const gchar *, g_dbus_connection_get_unique_name, (GDBusConnection *connection), (connection))                    \
    X(GDBusConnection *, g_dbus_connection_new_for_address_sync,                                                        \
      (const gchar *address, GDBusConnectionFlags flags, GDBusAuthObserver *observer, GCancellable *cancellable,        \
       GError **error),                                                                                                 \
      (address, flags, observer, cancellable, error))                                                                   \
    V(g_dbus_connection_remove_filter, (GDBusConnection *connection, guint filter_id), (connection, filter_id))          \
    V(g_dbus_connection_set_exit_on_close, (GDBusConnection *connection, gboolean exit_on_close),                       \
      (connection, exit_on_close))                                                                                      \
    X(guint, g_dbus_connection_signal_subscribe,                                                                        \
      (GDBusConnection *connection, const gchar *sender, const gchar *interface_name, const gchar *member,              \
       const gchar *object_path, const gchar *arg0, GDBusSignalFlags flags, GDBusSignalCallback callback,               \
       gpointer user_data, GDestroyNotify user_data_free_func),                                                         \
      (connection, sender, interface_name, member, object_path, arg0, flags, callback, user_data, user_data_free_func)) \
    V(g_dbus_connection_signal_unsubscribe, (GDBusConnection *connection, guint subscription_id),                       \
      (connection, subscription_id))                                                                                    \
    X(gchar *, g_dbus_error_get_remote_error, (const GError *error), (error))                                           \
    X(gboolean, g_dbus_error_is_remote_error, (const GError *error), (error))                                           \
    X(GQuark, g_dbus_error_quark, (void), ())                                                                           \
    X(gboolean, g_dbus_error_strip_remote_error, (GError *error), (error))                                              \
    X(const gchar *, g_dbus_message_get_member, (GDBusMessage *message), (message))                                     \
    X(GDBusMessageType, g_dbus_message_get_message_type, (GDBusMessage *message), (message))                            \
    X(const gchar *, g_dbus_message_get_path, (GDBusMessage *message), (message))                                       \
    X(GDBusConnection *, g_dbus_proxy_get_connection, (GDBusProxy *proxy), (proxy))                                     \
    V(g_dbus_proxy_set_default_timeout, (GDBusProxy *proxy, gint timeout_msec), (proxy, timeout_msec))                  \
    V(g_error_free, (GError *error), (error))                                                                           \
    X(gboolean, g_error_matches, (const GError *error, GQuark domain, gint code), (error, domain, code))                \
    V(g_free, (gpointer mem), (mem))                                                                                    \
    X(gint64, g_get_monotonic_time, (void), ())                                                                         \
    X(const gchar *, g_getenv, (const gchar *variable), (variable))                                                     \
    X(gboolean, g_hash_table_insert, (GHashTable *hash_table, gpointer key, gpointer value), (hash_table, key, value))  \
    V(g_hash_table_iter_init, (GHashTableIter *iter, GHashTable *hash_table), (iter, hash_table))                       \
    X(gboolean, g_hash_table_iter_next, (GHashTableIter *iter, gpointer *key, gpointer *value), (iter, key, value))     \
    X(gpointer, g_hash_table_lookup, (GHashTable *hash_table, gconstpointer key), (hash_table, key))                    \
    X(GHashTable *, g_hash_table_new_full,                                                                              \
      (GHashFunc hash_func, GEqualFunc key_equal_func, GDestroyNotify key_destroy_func,                                 \
       GDestroyNotify value_destroy_func),                                                                              \
      (hash_func, key_equal_func, key_destroy_func, value_destroy_func))                                                \
    X(gboolean, g_hash_table_replace, (GHashTable *hash_table, gpointer key, gpointer value), (hash_table, key, value)) \
    X(guint, g_hash_table_size, (GHashTable *hash_table), (hash_table))                                                  \
    V(g_hash_table_unref, (GHashTable *hash_table), (hash_table))                                                       \
    X(GQuark, g_io_error_quark, (void), ())                                                                             \
    V(g_list_free_full, (GList *list, GDestroyNotify free_func), (list, free_func))                                     \
    V(g_main_context_invoke, (GMainContext *context, GSourceFunc function, gpointer data), (context, function, data))   \
    X(gboolean, g_main_context_iteration, (GMainContext *context, gboolean may_block), (context, may_block))            \
    X(GMainContext *, g_main_context_new, (void), ())                                                                   \
    V(g_main_context_pop_thread_default, (GMainContext *context), (context))                                            \
    V(g_main_context_push_thread_default, (GMainContext *context), (context))                                           \
    V(g_main_context_unref, (GMainContext *context), (context))                                                         \
    V(g_main_context_wakeup, (GMainContext *context), (context))                                                        \
    X(GMainLoop *, g_main_loop_new, (GMainContext *context, gboolean is_running), (context, is_running))                \
    V(g_main_loop_quit, (GMainLoop *loop), (loop))                                                                      \
    V(g_main_loop_run, (GMainLoop *loop), (loop))                                                                       \
    V(g_main_loop_unref, (GMainLoop *loop), (loop))                                                                     \
    X(gpointer, g_malloc0_n, (gsize n_blocks, gsize n_block_bytes), (n_blocks, n_block_bytes))                          \
    V(g_mutex_clear, (GMutex *mutex), (mutex))                                                                          \
    V(g_mutex_init, (GMutex *mutex), (mutex))                                                                           \
    V(g_mutex_lock, (GMutex *mutex), (mutex))                                                                           \
    V(g_mutex_unlock, (GMutex *mutex), (mutex))                                                                         \
    X(gpointer, g_object_get_data, (GObject *object, const gchar *key), (object, key))                                  \
    X(gpointer, g_object_ref, (gpointer object), (object))                                                              \
    V(g_object_set_data_full, (GObject *object, const gchar *key, gpointer data, GDestroyNotify destroy),              \
      (object, key, data, destroy))                                                                                     \
    V(g_object_unref, (gpointer object), (object))                                                                      \
    V(g_propagate_error, (GError **dest, GError *src), (dest, src))                                                     \
    V(g_ptr_array_add, (GPtrArray *array, gpointer data), (array, data))                                                \
    X(gpointer *, g_ptr_array_free, (GPtrArray *array, gboolean free_seg), (array, free_seg))                           \
    X(GPtrArray *, g_ptr_array_new, (void), ())                                                                         \
    X(guint32, g_random_int, (void), ())                                                                                \
    V(g_set_error_literal, (GError **err, GQuark domain, gint code, const gchar *message),                              \
      (err, domain, code, message))                                                                                     \
    X(guint, g_source_attach, (GSource *source, GMainContext *context), (source, context))                              \
    V(g_source_destroy, (GSource *source), (source))                                                                    \
    V(g_source_set_callback, (GSource *source, GSourceFunc func, gpointer data, GDestroyNotify notify),                 \
      (source, func, data, notify))                                                                                     \
    V(g_source_unref, (GSource *source), (source))                                                                      \
    X(gboolean, g_str_equal, (gconstpointer v1, gconstpointer v2), (v1, v2))                                            \
    X(guint, g_str_hash, (gconstpointer v), (v))                                                                        \
    X(int, g_strcmp0, (const char *str1, const char *str2), (str1, str2))                                               \
    X(gchar *, g_strdelimit, (gchar *string, const gchar *delimiters, gchar new_delimiter),                             \
      (string, delimiters, new_delimiter))                                                                              \
    X(gchar *, g_strdup, (const gchar *str), (str))                                                                     \
    X(gchar *, g_strdup_vprintf, (const gchar *format, va_list args), (format, args))                                   \
    V(g_strfreev, (gchar **str_array), (str_array))                                                                     \
    X(gboolean, g_strv_contains, (const gchar *const *strv, const gchar *str), (strv, str))                             \
    X(gpointer, g_thread_join, (GThread *thread), (thread))                                                             \
    X(GThread *, g_thread_new, (const gchar *name, GThreadFunc func, gpointer data), (name, func, data))                \
    X(GSource *, g_timeout_source_new, (guint interval), (interval))                                                    \
    X(gint, g_unix_fd_list_append, (GUnixFDList *list, gint fd, GError **error), (list, fd, error))                     \
    X(GUnixFDList *, g_unix_fd_list_new, (void), ())                                                                    \
    X(gboolean, g_unix_open_pipe, (gint *fds, gint flags, GError **error), (fds, flags, error))                         \
    X(gboolean, g_utf8_validate, (const gchar *str, gssize max_len, const gchar **end), (str, max_len, end))            \
    V(g_variant_builder_add_value, (GVariantBuilder *builder, GVariant *value), (builder, value))                       \
    X(GVariant *, g_variant_builder_end, (GVariantBuilder *builder), (builder))                                         \
    V(g_variant_builder_init, (GVariantBuilder *builder, const GVariantType *type), (builder, type))                     \
    X(gboolean, g_variant_get_boolean, (GVariant *value), (value))                                                      \
    X(GVariant *, g_variant_get_child_value, (GVariant *value, gsize index_), (value, index_))                          \
    X(gconstpointer, g_variant_get_data, (GVariant *value), (value))                                                    \
    X(gconstpointer, g_variant_get_fixed_array, (GVariant *value, gsize *n_elements, gsize element_size),              \
      (value, n_elements, element_size))                                                                                \
    X(gsize, g_variant_get_size, (GVariant *value), (value))                                                            \
    X(guint32, g_variant_get_uint32, (GVariant *value), (value))                                                        \
    V(g_variant_get_va, (GVariant *value, const gchar *format_string, const gchar **endptr, va_list *app),              \
      (value, format_string, endptr, app))                                                                              \
    X(gboolean, g_variant_is_of_type, (GVariant *value, const GVariantType *type), (value, type))                       \
    X(gsize, g_variant_iter_init, (GVariantIter *iter, GVariant *value), (iter, value))                                 \
    X(GVariant *, g_variant_iter_next_value, (GVariantIter *iter), (iter))                                              \
    X(GVariant *, g_variant_lookup_value, (GVariant *dictionary, const gchar *key, const GVariantType *expected_type),   \
      (dictionary, key, expected_type))                                                                                 \
    X(GVariant *, g_variant_new_boolean, (gboolean value), (value))                                                     \
    X(GVariant *, g_variant_new_fixed_array,                                                                            \
      (const GVariantType *element_type, gconstpointer elements, gsize n_elements, gsize element_size),                 \
      (element_type, elements, n_elements, element_size))                                                               \
    X(GVariant *, g_variant_new_from_data,                                                                              \
      (const GVariantType *type, gconstpointer data, gsize size, gboolean trusted, GDestroyNotify notify,               \
       gpointer user_data),                                                                                             \
      (type, data, size, trusted, notify, user_data))                                                                   \
    X(GVariant *, g_variant_new_string, (const gchar *string), (string))                                                \
    X(GVariant *, g_variant_new_tuple, (GVariant *const *children, gsize n_children), (children, n_children))           \
    X(GVariant *, g_variant_new_va, (const gchar *format_string, const gchar **endptr, va_list *app),                   \
      (format_string, endptr, app))                                                                                     \
    X(GVariant *, g_variant_ref_sink, (GVariant *value), (value))                                                       \
    X(gboolean, g_variant_type_string_is_valid, (const gchar *type_string), (type_string))                              \
    V(g_variant_unref, (GVariant *value), (value))

/* libsecret (csecitem_secret_load: libsecret-1.so.0, which links GLib and GIO). */
#define CSECITEM_SECRET_FUNCTIONS(X, V)                                                                                 \
    X(GQuark, secret_error_get_quark, (void), ())                                                                       \
    X(gboolean, secret_item_set_attributes_sync,                                                                        \
      (SecretItem *self, const SecretSchema *schema, GHashTable *attributes, GCancellable *cancellable, GError **error), \
      (self, schema, attributes, cancellable, error))                                                                   \
    X(GHashTable *, secret_item_get_attributes, (SecretItem *self), (self))                                             \
    X(gboolean, secret_item_set_secret_sync,                                                                            \
      (SecretItem *self, SecretValue *value, GCancellable *cancellable, GError **error),                                \
      (self, value, cancellable, error))                                                                                \
    X(gboolean, secret_password_clearv_sync,                                                                            \
      (const SecretSchema *schema, GHashTable *attributes, GCancellable *cancellable, GError **error),                  \
      (schema, attributes, cancellable, error))                                                                         \
    X(SecretValue *, secret_password_lookupv_binary_sync,                                                               \
      (const SecretSchema *schema, GHashTable *attributes, GCancellable *cancellable, GError **error),                  \
      (schema, attributes, cancellable, error))                                                                         \
    X(gboolean, secret_password_storev_binary_sync,                                                                     \
      (const SecretSchema *schema, GHashTable *attributes, const gchar *collection, const gchar *label,                 \
       SecretValue *value, GCancellable *cancellable, GError **error),                                                  \
      (schema, attributes, collection, label, value, cancellable, error))                                               \
    X(SecretValue *, secret_service_decode_dbus_secret, (SecretService *service, GVariant *value), (service, value))    \
    X(GVariant *, secret_service_encode_dbus_secret, (SecretService *service, SecretValue *value), (service, value))    \
    X(const gchar *, secret_service_get_session_dbus_path, (SecretService *self), (self))                               \
    X(GType, secret_service_get_type, (void), ())                                                                       \
    X(GVariant *, secret_service_prompt_at_dbus_path_sync,                                                              \
      (SecretService *self, const gchar *prompt_path, GCancellable *cancellable, const GVariantType *return_type,       \
       GError **error),                                                                                                 \
      (self, prompt_path, cancellable, return_type, error))                                                             \
    V(secret_service_open,                                                                                              \
      (GType service_gtype, const gchar *service_bus_name, SecretServiceFlags flags, GCancellable *cancellable,         \
       GAsyncReadyCallback callback, gpointer user_data),                                                               \
      (service_gtype, service_bus_name, flags, cancellable, callback, user_data))                                       \
    X(SecretService *, secret_service_open_finish, (GAsyncResult *result, GError **error), (result, error))             \
    X(GList *, secret_service_search_sync,                                                                              \
      (SecretService *service, const SecretSchema *schema, GHashTable *attributes, SecretSearchFlags flags,             \
       GCancellable *cancellable, GError **error),                                                                      \
      (service, schema, attributes, flags, cancellable, error))                                                         \
    X(gint, secret_service_unlock_dbus_paths_sync,                                                                      \
      (SecretService *self, const gchar **paths, GCancellable *cancellable, gchar ***unlocked, GError **error),         \
      (self, paths, cancellable, unlocked, error))                                                                      \
    X(const gchar *, secret_value_get, (SecretValue *value, gsize *length), (value, length))                            \
    X(SecretValue *, secret_value_new, (const gchar *secret, gssize length, const gchar *content_type),                 \
      (secret, length, content_type))                                                                                   \
    V(secret_value_unref, (gpointer value), (value))

/* The sonames opened. */
#define CSECITEM_GLIB_SONAME "libgio-2.0.so.0"
#define CSECITEM_SECRET_SONAME "libsecret-1.so.0"

/*
 * Loads GLib and GIO (csecitem_glib_load) or libsecret with them (csecitem_secret_load) once
 * per process and resolves every function above. Returns 1 when all resolved; otherwise 0,
 * with the library or the function missing (and the package to install) in error.
 */
int csecitem_glib_load(char *error, size_t error_size);
int csecitem_secret_load(char *error, size_t error_size);

/* Whether this process has loaded them (for tests and `secitem diagnose`: a lookup on the
 * encrypted file must leave both 0). */
int csecitem_glib_is_loaded(void);
int csecitem_secret_is_loaded(void);

#ifndef CSECITEM_GLIB_CHECK
/* The resolved pointers, one per function, named as the libraries name them. */
struct csecitem_glib_functions {
#define CSECITEM_GLIB_FIELD(type, name, parameters, arguments) type(*name) parameters;
#define CSECITEM_GLIB_FIELD_VOID(name, parameters, arguments) void(*name) parameters;
    CSECITEM_GLIB_FUNCTIONS(CSECITEM_GLIB_FIELD, CSECITEM_GLIB_FIELD_VOID)
};
struct csecitem_secret_functions {
    CSECITEM_SECRET_FUNCTIONS(CSECITEM_GLIB_FIELD, CSECITEM_GLIB_FIELD_VOID)
#undef CSECITEM_GLIB_FIELD
#undef CSECITEM_GLIB_FIELD_VOID
};

/* The tables once loaded (NULL before), and the loads a call before csecitem_*_load falls
 * back to (they end the process when the library is missing: see the top of this file). */
extern const struct csecitem_glib_functions *csecitem_glib_table;
extern const struct csecitem_secret_functions *csecitem_secret_table;
const struct csecitem_glib_functions *csecitem_glib_require(void);
const struct csecitem_secret_functions *csecitem_secret_require(void);

static inline const struct csecitem_glib_functions *csecitem_glib(void) {
    const struct csecitem_glib_functions *table = __atomic_load_n(&csecitem_glib_table, __ATOMIC_ACQUIRE);
    return table != NULL ? table : csecitem_glib_require();
}
static inline const struct csecitem_secret_functions *csecitem_secret(void) {
    const struct csecitem_secret_functions *table = __atomic_load_n(&csecitem_secret_table, __ATOMIC_ACQUIRE);
    return table != NULL ? table : csecitem_secret_require();
}

/* Each function under its own name, calling through the table. */
#define CSECITEM_GLIB_INLINE(type, name, parameters, arguments) \
    static inline type name parameters { return csecitem_glib()->name arguments; }
#define CSECITEM_GLIB_INLINE_VOID(name, parameters, arguments) \
    static inline void name parameters { csecitem_glib()->name arguments; }
CSECITEM_GLIB_FUNCTIONS(CSECITEM_GLIB_INLINE, CSECITEM_GLIB_INLINE_VOID)
#undef CSECITEM_GLIB_INLINE
#undef CSECITEM_GLIB_INLINE_VOID
#define CSECITEM_SECRET_INLINE(type, name, parameters, arguments) \
    static inline type name parameters { return csecitem_secret()->name arguments; }
#define CSECITEM_SECRET_INLINE_VOID(name, parameters, arguments) \
    static inline void name parameters { csecitem_secret()->name arguments; }
CSECITEM_SECRET_FUNCTIONS(CSECITEM_SECRET_INLINE, CSECITEM_SECRET_INLINE_VOID)
#undef CSECITEM_SECRET_INLINE
#undef CSECITEM_SECRET_INLINE_VOID

/* GLib's variadic functions, over their va_list forms (a pointer cannot forward `...`).
 * Same behaviour as GLib's own (which are written the same way over the same calls). */
GVariant *csecitem_g_variant_new(const gchar *format_string, ...);
void csecitem_g_variant_get(GVariant *value, const gchar *format_string, ...);
gboolean csecitem_g_variant_iter_next(GVariantIter *iter, const gchar *format_string, ...);
/* Formats of a basic type only, '&' allowed ("s", "&s", "b", "u"): the project's. */
gboolean csecitem_g_variant_lookup(GVariant *dictionary, const gchar *key, const gchar *format_string, ...);
void csecitem_g_variant_builder_add(GVariantBuilder *builder, const gchar *format_string, ...);
gchar *csecitem_g_strdup_printf(const gchar *format, ...) __attribute__((format(printf, 1, 2)));
#define g_variant_new csecitem_g_variant_new
#define g_variant_get csecitem_g_variant_get
#define g_variant_iter_next csecitem_g_variant_iter_next
#define g_variant_lookup csecitem_g_variant_lookup
#define g_variant_builder_add csecitem_g_variant_builder_add
#define g_strdup_printf csecitem_g_strdup_printf

/* GLib's macros the project uses, as GLib defines them (less the debug-build type checks). */
#define G_VARIANT_TYPE(type_string) ((const GVariantType *)(type_string))
#define G_VARIANT_TYPE_BOOLEAN ((const GVariantType *)"b")
#define G_VARIANT_TYPE_UINT32 ((const GVariantType *)"u")
#define G_VARIANT_TYPE_VARDICT ((const GVariantType *)"a{sv}")
#define g_new0(struct_type, n_structs) ((struct_type *)g_malloc0_n((gsize)(n_structs), sizeof(struct_type)))
#define G_DBUS_PROXY(object) ((GDBusProxy *)(object))
#define G_DBUS_CONNECTION(object) ((GDBusConnection *)(object))
#define G_IO_ERROR (g_io_error_quark())
#define G_DBUS_ERROR (g_dbus_error_quark())
#define SECRET_ERROR (secret_error_get_quark())
#define SECRET_TYPE_SERVICE (secret_service_get_type())
#define g_atomic_int_get(atomic) (__atomic_load_n((atomic), __ATOMIC_SEQ_CST))
#define g_atomic_int_set(atomic, newval) (__atomic_store_n((atomic), (newval), __ATOMIC_SEQ_CST))
#define g_atomic_int_inc(atomic) ((void)__atomic_fetch_add((atomic), 1, __ATOMIC_SEQ_CST))
#endif /* CSECITEM_GLIB_CHECK */

#endif
