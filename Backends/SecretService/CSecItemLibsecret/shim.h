#ifndef CSECITEM_LIBSECRET_SHIM_H
#define CSECITEM_LIBSECRET_SHIM_H

/* The D-Bus-path API of libsecret (secret-paths.h) is marked "subject to
 * change" but has been stable since 0.18 and is what secret-tool itself uses.
 * It lets the backend work on object paths without building SecretItem /
 * SecretCollection proxies (8-10 D-Bus round trips each). */
#ifndef SECRET_API_SUBJECT_TO_CHANGE
#define SECRET_API_SUBJECT_TO_CHANGE 1
#endif
#include <libsecret/secret.h>
#include <gio/gio.h>
#include <string.h>

#define CSECITEM_BUS_NAME "org.freedesktop.secrets"
#define CSECITEM_SERVICE_PATH "/org/freedesktop/secrets"
#define CSECITEM_ITEM_IFACE "org.freedesktop.Secret.Item"
#define CSECITEM_COLLECTION_IFACE "org.freedesktop.Secret.Collection"
#define CSECITEM_SERVICE_IFACE "org.freedesktop.Secret.Service"
#define CSECITEM_PROPS_IFACE "org.freedesktop.DBus.Properties"
#define CSECITEM_CONTENT_TYPE "application/octet-stream"

/* ---- Connection ---------------------------------------------------------- */

/* The process's session-bus connection (the one libsecret's SecretService
 * always uses: its constructor forces G_BUS_TYPE_SESSION), with exit-on-close
 * turned off: GLib's default for g_bus_get connections is to terminate the
 * process when the bus goes away, which a library must never do. */
static inline GDBusConnection *csecitem_connect(GCancellable *cancellable, GError **error) {
    GDBusConnection *connection = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellable, error);
    if (connection != NULL) g_dbus_connection_set_exit_on_close(connection, FALSE);
    return connection;
}

/* A new (not the process-wide cached) SecretService proxy with an encryption
 * session open; its own calls time out after `timeout_ms`. */
static inline SecretService *csecitem_service_open(gint timeout_ms, GCancellable *cancellable, GError **error) {
    SecretService *service =
        secret_service_open_sync(SECRET_TYPE_SERVICE, NULL, SECRET_SERVICE_OPEN_SESSION, cancellable, error);
    if (service != NULL) g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(service), timeout_ms);
    return service;
}

static inline GDBusConnection *csecitem_service_connection(SecretService *service) {
    return g_dbus_proxy_get_connection(G_DBUS_PROXY(service));
}

static inline void csecitem_object_unref(gpointer object) { g_object_unref(object); }
static inline gpointer csecitem_object_ref(gpointer object) { return g_object_ref(object); }

/* ---- String hash tables (attribute sets) --------------------------------- */

static inline GHashTable *csecitem_strhash_new(void) {
    return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

static inline void csecitem_strhash_insert(GHashTable *table, const char *key, const char *value) {
    g_hash_table_replace(table, g_strdup(key), g_strdup(value));
}

static inline GVariant *csecitem_attributes_variant(GHashTable *attributes) {
    GVariantBuilder builder;
    g_variant_builder_init(&builder, G_VARIANT_TYPE("a{ss}"));
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init(&iter, attributes);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        g_variant_builder_add(&builder, "{ss}", (const char *)key, (const char *)value);
    }
    return g_variant_builder_end(&builder);
}

/* ---- Calls ---------------------------------------------------------------- */

/* Collection.SearchItems(attributes) → object paths (NULL-terminated, g_strfreev). */
static inline gchar **csecitem_search(GDBusConnection *connection, const char *collection_path,
                                      GHashTable *attributes, gint timeout_ms, GCancellable *cancellable,
                                      GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, CSECITEM_BUS_NAME, collection_path, CSECITEM_COLLECTION_IFACE, "SearchItems",
        g_variant_new_tuple((GVariant *[]){csecitem_attributes_variant(attributes)}, 1), G_VARIANT_TYPE("(ao)"),
        G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable, error);
    if (reply == NULL) return NULL;
    gchar **paths = NULL;
    g_variant_get(reply, "(^ao)", &paths);
    g_variant_unref(reply);
    return paths;
}

/* An item's attributes (two parallel NULL-terminated arrays), label and locked
 * state from its Properties.GetAll dictionary (a{sv}). */
static inline void csecitem_parse_properties(GVariant *props, gchar ***keys, gchar ***values, gchar **label,
                                             gboolean *locked) {
    *locked = FALSE;
    *label = NULL;
    GPtrArray *k = g_ptr_array_new();
    GPtrArray *v = g_ptr_array_new();
    GVariant *attributes = g_variant_lookup_value(props, "Attributes", G_VARIANT_TYPE("a{ss}"));
    if (attributes != NULL) {
        GVariantIter iter;
        const gchar *ak, *av;
        g_variant_iter_init(&iter, attributes);
        while (g_variant_iter_next(&iter, "{&s&s}", &ak, &av)) {
            g_ptr_array_add(k, g_strdup(ak));
            g_ptr_array_add(v, g_strdup(av));
        }
        g_variant_unref(attributes);
    }
    g_ptr_array_add(k, NULL);
    g_ptr_array_add(v, NULL);
    *keys = (gchar **)g_ptr_array_free(k, FALSE);
    *values = (gchar **)g_ptr_array_free(v, FALSE);
    g_variant_lookup(props, "Label", "s", label);
    g_variant_lookup(props, "Locked", "b", locked);
}

/* Properties.GetAll on an item: its attributes (as two parallel NULL-terminated
 * arrays), label and locked state. */
static inline gboolean csecitem_item_properties(GDBusConnection *connection, const char *item_path, gint timeout_ms,
                                                GCancellable *cancellable, gchar ***keys, gchar ***values,
                                                gchar **label, gboolean *locked, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, CSECITEM_BUS_NAME, item_path, CSECITEM_PROPS_IFACE, "GetAll",
        g_variant_new("(s)", CSECITEM_ITEM_IFACE), G_VARIANT_TYPE("(a{sv})"), G_DBUS_CALL_FLAGS_NONE, timeout_ms,
        cancellable, error);
    if (reply == NULL) return FALSE;
    GVariant *props = g_variant_get_child_value(reply, 0);
    csecitem_parse_properties(props, keys, values, label, locked);
    g_variant_unref(props);
    g_variant_unref(reply);
    return TRUE;
}

/* Properties.Get(Locked) on a collection (or item). */
static inline gboolean csecitem_get_locked(GDBusConnection *connection, const char *path, const char *interface,
                                           gint timeout_ms, GCancellable *cancellable, gboolean *locked,
                                           GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, CSECITEM_BUS_NAME, path, CSECITEM_PROPS_IFACE, "Get", g_variant_new("(ss)", interface, "Locked"),
        G_VARIANT_TYPE("(v)"), G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable, error);
    if (reply == NULL) return FALSE;
    GVariant *inner = NULL;
    g_variant_get(reply, "(v)", &inner);
    *locked = g_variant_is_of_type(inner, G_VARIANT_TYPE_BOOLEAN) ? g_variant_get_boolean(inner) : FALSE;
    g_variant_unref(inner);
    g_variant_unref(reply);
    return TRUE;
}

/* Properties.Set of one property of an item (takes the floating `value`). */
static inline gboolean csecitem_item_set_property(GDBusConnection *connection, const char *item_path,
                                                  const char *name, GVariant *value, gint timeout_ms,
                                                  GCancellable *cancellable, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, CSECITEM_BUS_NAME, item_path, CSECITEM_PROPS_IFACE, "Set",
        g_variant_new("(ssv)", CSECITEM_ITEM_IFACE, name, value), NULL, G_DBUS_CALL_FLAGS_NONE, timeout_ms,
        cancellable, error);
    if (reply == NULL) return FALSE;
    g_variant_unref(reply);
    return TRUE;
}

/* Properties.Set(Attributes) and Properties.Set(Label) on an item. */
static inline gboolean csecitem_item_set_attributes(GDBusConnection *connection, const char *item_path,
                                                    GHashTable *attributes, gint timeout_ms,
                                                    GCancellable *cancellable, GError **error) {
    return csecitem_item_set_property(connection, item_path, "Attributes", csecitem_attributes_variant(attributes),
                                      timeout_ms, cancellable, error);
}

static inline gboolean csecitem_item_set_label(GDBusConnection *connection, const char *item_path, const char *label,
                                               gint timeout_ms, GCancellable *cancellable, GError **error) {
    return csecitem_item_set_property(connection, item_path, "Label", g_variant_new_string(label), timeout_ms,
                                      cancellable, error);
}

/* A SecretValue holding a copy of `length` bytes (libsecret keeps it in
 * non-pageable memory and wipes it in secret_value_unref). */
static inline SecretValue *csecitem_value_new(const void *bytes, gsize length) {
    static const char empty[1] = {0};
    return secret_value_new(length == 0 ? empty : (const gchar *)bytes, (gssize)length, CSECITEM_CONTENT_TYPE);
}

/* Item.SetSecret, encrypted for the open session. */
static inline gboolean csecitem_item_set_secret(SecretService *service, GDBusConnection *connection,
                                                const char *item_path, const void *bytes, gsize length,
                                                gint timeout_ms, GCancellable *cancellable, GError **error) {
    SecretValue *value = csecitem_value_new(bytes, length);
    GVariant *encoded = secret_service_encode_dbus_secret(service, value);
    secret_value_unref(value);
    if (encoded == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED, "could not encode the secret for the session");
        return FALSE;
    }
    g_variant_ref_sink(encoded);
    GVariant *reply = g_dbus_connection_call_sync(
        connection, CSECITEM_BUS_NAME, item_path, CSECITEM_ITEM_IFACE, "SetSecret",
        g_variant_new_tuple(&encoded, 1), NULL, G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable, error);
    g_variant_unref(encoded);
    if (reply == NULL) return FALSE;
    g_variant_unref(reply);
    return TRUE;
}

/* Service.CreateItem in `collection_path`; returns the new item's path (g_free). */
static inline gchar *csecitem_create_item(SecretService *service, const char *collection_path, const char *label,
                                          GHashTable *attributes, const void *bytes, gsize length,
                                          GCancellable *cancellable, GError **error) {
    GHashTable *properties =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_variant_unref);
    g_hash_table_insert(properties, CSECITEM_ITEM_IFACE ".Label", g_variant_ref_sink(g_variant_new_string(label)));
    g_hash_table_insert(properties, CSECITEM_ITEM_IFACE ".Attributes",
                        g_variant_ref_sink(csecitem_attributes_variant(attributes)));
    SecretValue *value = csecitem_value_new(bytes, length);
    gchar *path = secret_service_create_item_dbus_path_sync(service, collection_path, properties, value,
                                                            SECRET_ITEM_CREATE_NONE, cancellable, error);
    secret_value_unref(value);
    g_hash_table_unref(properties);
    return path;
}

/* The secret of `item_path` in a table from secret_service_get_secrets_for_dbus_paths_sync. */
static inline const void *csecitem_secret_bytes(GHashTable *secrets, const char *item_path, gsize *length) {
    SecretValue *value = (SecretValue *)g_hash_table_lookup(secrets, item_path);
    if (value == NULL) return NULL;
    return secret_value_get(value, length);
}

static inline void csecitem_hash_unref(GHashTable *table) { g_hash_table_unref(table); }

/* ---- Pipelined calls -------------------------------------------------------
 * Several independent method calls sent at once on the same connection, then
 * every reply awaited: one round trip of latency instead of one per call. Each
 * call is bounded by `timeout_ms` and by `cancellable`, like the sync calls.
 * The daemon handles them in the order sent. */

typedef struct {
    const gchar *path;
    const gchar *interface;
    const gchar *method;
    GVariant *parameters; /* floating or owned; consumed */
    const GVariantType *reply_type; /* NULL: any */
    GVariant *reply;      /* out (g_variant_unref) */
    GError *error;        /* out (g_error_free) */
    guint *pending;
    GMainContext *context;
} CSecItemCall;

static void csecitem_call_done(GObject *source, GAsyncResult *result, gpointer data) {
    CSecItemCall *call = (CSecItemCall *)data;
    call->reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &call->error);
    (*call->pending)--;
    g_main_context_wakeup(call->context);
}

static inline void csecitem_call_all(GDBusConnection *connection, CSecItemCall *calls, guint count, gint timeout_ms,
                                     GCancellable *cancellable) {
    if (count == 0) return;
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    guint pending = count;
    for (guint i = 0; i < count; i++) {
        calls[i].reply = NULL;
        calls[i].error = NULL;
        calls[i].pending = &pending;
        calls[i].context = context;
        g_dbus_connection_call(connection, CSECITEM_BUS_NAME, calls[i].path, calls[i].interface, calls[i].method,
                               calls[i].parameters, calls[i].reply_type, G_DBUS_CALL_FLAGS_NONE, timeout_ms,
                               cancellable, csecitem_call_done, &calls[i]);
    }
    while (pending > 0) g_main_context_iteration(context, TRUE);
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
}

/* Collection.SearchItems and, when `check_lock`, Properties.Get(Locked) of the
 * collection, sent together: an empty result needs the lock state (a locked
 * collection can hide its items), and asking at once costs no extra round trip
 * (but daemon time, which a hit does not need). */
static inline gchar **csecitem_search_checking_lock(GDBusConnection *connection, const char *collection_path,
                                                    GHashTable *attributes, gboolean check_lock, gint timeout_ms,
                                                    GCancellable *cancellable, gboolean *locked,
                                                    GError **lock_error, GError **error) {
    CSecItemCall calls[2] = {
        {.path = collection_path, .interface = CSECITEM_COLLECTION_IFACE, .method = "SearchItems",
         .parameters = g_variant_new_tuple((GVariant *[]){csecitem_attributes_variant(attributes)}, 1),
         .reply_type = G_VARIANT_TYPE("(ao)")},
        {.path = collection_path, .interface = CSECITEM_PROPS_IFACE, .method = "Get",
         .parameters = g_variant_new("(ss)", CSECITEM_COLLECTION_IFACE, "Locked"), .reply_type = G_VARIANT_TYPE("(v)")},
    };
    if (!check_lock) g_variant_unref(g_variant_ref_sink(calls[1].parameters));
    csecitem_call_all(connection, calls, check_lock ? 2 : 1, timeout_ms, cancellable);
    *locked = FALSE;
    if (!check_lock) {
        /* not asked */
    } else if (calls[1].reply != NULL) {
        GVariant *inner = NULL;
        g_variant_get(calls[1].reply, "(v)", &inner);
        *locked = g_variant_is_of_type(inner, G_VARIANT_TYPE_BOOLEAN) ? g_variant_get_boolean(inner) : FALSE;
        g_variant_unref(inner);
        g_variant_unref(calls[1].reply);
    } else {
        g_propagate_error(lock_error, calls[1].error);
    }
    if (calls[0].reply == NULL) {
        g_propagate_error(error, calls[0].error);
        return NULL;
    }
    gchar **paths = NULL;
    g_variant_get(calls[0].reply, "(^ao)", &paths);
    g_variant_unref(calls[0].reply);
    return paths;
}


/* Properties.GetAll of every item in `paths` (count of them) — or, when
 * `attributes_only`, Properties.Get of its Attributes alone, which costs
 * gnome-keyring far less — and, when `secrets` is not NULL, Service.GetSecrets
 * of all of them in one call, all sent at once. properties[i] is the a{sv} of
 * paths[i] (with Attributes only when `attributes_only`) or NULL with errors[i]
 * set; *secrets is a table path → SecretValue (secret_value_unref on removal,
 * which wipes) or NULL with *secrets_error set. */
static inline void csecitem_read_items(SecretService *service, GDBusConnection *connection,
                                       const gchar *const *paths, guint count, gboolean attributes_only,
                                       gint timeout_ms, GCancellable *cancellable, GVariant **properties,
                                       GError **errors, GHashTable **secrets, GError **secrets_error) {
    guint total = count + (secrets != NULL ? 1 : 0);
    CSecItemCall *calls = g_new0(CSecItemCall, total);
    for (guint i = 0; i < count; i++) {
        calls[i].path = paths[i];
        calls[i].interface = CSECITEM_PROPS_IFACE;
        if (attributes_only) {
            calls[i].method = "Get";
            calls[i].parameters = g_variant_new("(ss)", CSECITEM_ITEM_IFACE, "Attributes");
            calls[i].reply_type = G_VARIANT_TYPE("(v)");
        } else {
            calls[i].method = "GetAll";
            calls[i].parameters = g_variant_new("(s)", CSECITEM_ITEM_IFACE);
            calls[i].reply_type = G_VARIANT_TYPE("(a{sv})");
        }
    }
    if (secrets != NULL) {
        calls[count].path = CSECITEM_SERVICE_PATH;
        calls[count].interface = CSECITEM_SERVICE_IFACE;
        calls[count].method = "GetSecrets";
        calls[count].parameters =
            g_variant_new("(^aoo)", (gchar **)paths, secret_service_get_session_dbus_path(service));
        calls[count].reply_type = G_VARIANT_TYPE("(a{o(oayays)})");
    }
    csecitem_call_all(connection, calls, total, timeout_ms, cancellable);
    for (guint i = 0; i < count; i++) {
        if (calls[i].reply != NULL && attributes_only) {
            /* (v) holding a{ss} → {"Attributes": <a{ss}>}, the shape GetAll gives. */
            GVariant *inner = NULL;
            g_variant_get(calls[i].reply, "(v)", &inner);
            GVariantBuilder builder;
            g_variant_builder_init(&builder, G_VARIANT_TYPE("a{sv}"));
            g_variant_builder_add(&builder, "{sv}", "Attributes", inner);
            properties[i] = g_variant_ref_sink(g_variant_builder_end(&builder));
            g_variant_unref(inner);
            g_variant_unref(calls[i].reply);
            errors[i] = NULL;
        } else if (calls[i].reply != NULL) {
            properties[i] = g_variant_get_child_value(calls[i].reply, 0);
            g_variant_unref(calls[i].reply);
            errors[i] = NULL;
        } else {
            properties[i] = NULL;
            errors[i] = calls[i].error;
        }
    }
    if (secrets != NULL) {
        *secrets = NULL;
        if (calls[count].reply != NULL) {
            GHashTable *table =
                g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)secret_value_unref);
            GVariant *all = g_variant_get_child_value(calls[count].reply, 0);
            GVariantIter iter;
            const gchar *path;
            GVariant *encoded;
            g_variant_iter_init(&iter, all);
            while (g_variant_iter_loop(&iter, "{&o@(oayays)}", &path, &encoded)) {
                SecretValue *value = secret_service_decode_dbus_secret(service, encoded);
                if (value != NULL) g_hash_table_replace(table, g_strdup(path), value);
            }
            g_variant_unref(all);
            g_variant_unref(calls[count].reply);
            *secrets = table;
        } else {
            g_propagate_error(secrets_error, calls[count].error);
        }
    }
    g_free(calls);
}

static inline void csecitem_variant_unref(GVariant *value) { g_variant_unref(value); }

/* An item's changes sent at once: Item.SetSecret (when `set_secret`),
 * Properties.Set(Attributes) (when `attributes`), Properties.Set(Label) (when
 * `label`), in that order. errors[0..2] are set for the calls that failed. */
static inline void csecitem_item_write(SecretService *service, GDBusConnection *connection, const char *item_path,
                                       gboolean set_secret, const void *bytes, gsize length, GHashTable *attributes,
                                       const char *label, gint timeout_ms, GCancellable *cancellable,
                                       GError **errors) {
    CSecItemCall calls[3];
    guint slot[3];
    guint count = 0;
    memset(calls, 0, sizeof calls);
    errors[0] = errors[1] = errors[2] = NULL;
    if (set_secret) {
        SecretValue *value = csecitem_value_new(bytes, length);
        GVariant *encoded = secret_service_encode_dbus_secret(service, value);
        secret_value_unref(value);
        if (encoded == NULL) {
            g_set_error_literal(&errors[0], G_IO_ERROR, G_IO_ERROR_FAILED, "could not encode the secret for the session");
            return;
        }
        g_variant_ref_sink(encoded);
        calls[count] = (CSecItemCall){.path = item_path, .interface = CSECITEM_ITEM_IFACE, .method = "SetSecret",
                                      .parameters = g_variant_new_tuple(&encoded, 1)};
        g_variant_unref(encoded);
        slot[count++] = 0;
    }
    if (attributes != NULL) {
        calls[count] = (CSecItemCall){
            .path = item_path, .interface = CSECITEM_PROPS_IFACE, .method = "Set",
            .parameters = g_variant_new("(ssv)", CSECITEM_ITEM_IFACE, "Attributes", csecitem_attributes_variant(attributes))};
        slot[count++] = 1;
    }
    if (label != NULL) {
        calls[count] = (CSecItemCall){
            .path = item_path, .interface = CSECITEM_PROPS_IFACE, .method = "Set",
            .parameters = g_variant_new("(ssv)", CSECITEM_ITEM_IFACE, "Label", g_variant_new_string(label))};
        slot[count++] = 2;
    }
    csecitem_call_all(connection, calls, count, timeout_ms, cancellable);
    for (guint i = 0; i < count; i++) {
        if (calls[i].reply != NULL) g_variant_unref(calls[i].reply);
        errors[slot[i]] = calls[i].error;
    }
}

/* ---- Errors --------------------------------------------------------------- */

/* ---- Watching the collection's lock state ---------------------------------
 * A counter bumped, on GDBus's worker thread and in the order messages arrive,
 * by every signal the provider sends on the service or the collection
 * (CollectionChanged, PropertiesChanged "Locked", ItemCreated, …) and by
 * NameOwnerChanged of org.freedesktop.secrets (a restarted provider). A reply
 * is handed to its caller only after every message received before it went
 * through the filters, so a lock state read when the counter had value g is
 * still current as long as the counter still reads g. */

typedef struct {
    gint generation;
    gchar *collection_path;
    GDBusConnection *connection;
    guint filter_id;
    gchar *rules[3];
} CSecItemWatch;

static GDBusMessage *csecitem_watch_filter(GDBusConnection *connection, GDBusMessage *message, gboolean incoming,
                                           gpointer data) {
    (void)connection;
    if (!incoming || g_dbus_message_get_message_type(message) != G_DBUS_MESSAGE_TYPE_SIGNAL) return message;
    CSecItemWatch *watch = (CSecItemWatch *)data;
    const gchar *path = g_dbus_message_get_path(message);
    const gchar *member = g_dbus_message_get_member(message);
    if ((path != NULL && (strcmp(path, watch->collection_path) == 0 || strcmp(path, CSECITEM_SERVICE_PATH) == 0)) ||
        (member != NULL && strcmp(member, "NameOwnerChanged") == 0)) {
        g_atomic_int_inc(&watch->generation);
    }
    return message;
}

static void csecitem_watch_free(gpointer data) {
    CSecItemWatch *watch = (CSecItemWatch *)data;
    g_free(watch->collection_path);
    for (int i = 0; i < 3; i++) g_free(watch->rules[i]);
    g_free(watch);
}

static inline gint csecitem_watch_generation(CSecItemWatch *watch) { return g_atomic_int_get(&watch->generation); }

/* Starts watching: the filter, then the bus match rules that route the
 * provider's signals to this connection. NULL when a rule cannot be added
 * (then the lock state is never taken as known). */
static inline CSecItemWatch *csecitem_watch_start(GDBusConnection *connection, const char *collection_path,
                                                  gint timeout_ms) {
    CSecItemWatch *watch = g_new0(CSecItemWatch, 1);
    watch->collection_path = g_strdup(collection_path);
    watch->connection = connection;
    watch->rules[0] = g_strdup_printf("type='signal',sender='" CSECITEM_BUS_NAME "',path='%s'", CSECITEM_SERVICE_PATH);
    watch->rules[1] = g_strdup_printf("type='signal',sender='" CSECITEM_BUS_NAME "',path='%s'", collection_path);
    watch->rules[2] = g_strdup("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='"
                               CSECITEM_BUS_NAME "'");
    for (int i = 0; i < 3; i++) {
        GVariant *reply = g_dbus_connection_call_sync(
            connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "AddMatch",
            g_variant_new("(s)", watch->rules[i]), NULL, G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, NULL);
        if (reply == NULL) {
            for (int j = 0; j < i; j++) {
                g_dbus_connection_call(connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "RemoveMatch", g_variant_new("(s)", watch->rules[j]),
                                       NULL, G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
            }
            csecitem_watch_free(watch);
            return NULL;
        }
        g_variant_unref(reply);
    }
    watch->filter_id = g_dbus_connection_add_filter(connection, csecitem_watch_filter, watch, csecitem_watch_free);
    return watch;
}

/* Stops watching; the watch is freed once no filter call can still use it. */
static inline void csecitem_watch_stop(CSecItemWatch *watch) {
    for (int i = 0; i < 3; i++) {
        g_dbus_connection_call(watch->connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "RemoveMatch", g_variant_new("(s)", watch->rules[i]), NULL,
                               G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
    }
    g_dbus_connection_remove_filter(watch->connection, watch->filter_id);
}

static inline GQuark csecitem_io_error_quark(void) { return G_IO_ERROR; }
static inline GQuark csecitem_dbus_error_quark(void) { return G_DBUS_ERROR; }
static inline GQuark csecitem_secret_error_quark(void) { return SECRET_ERROR; }

#endif
