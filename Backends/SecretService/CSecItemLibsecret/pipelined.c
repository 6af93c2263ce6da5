/* Pipelined calls: several independent method calls sent at once on the same
 * connection, then every reply awaited: one round trip of latency instead of
 * one per call. Each call is bounded by `timeout_ms` and by `cancellable`, like
 * the single calls. The daemon handles them in the order sent. */
#include "internal.h"
#include <string.h>

typedef struct {
    const gchar *path;
    const gchar *interface;
    const gchar *method;
    GVariant *parameters;           /* floating or owned; consumed */
    const GVariantType *reply_type; /* NULL: any */
    GVariant *reply;                /* out (g_variant_unref) */
    GError *error;                  /* out (g_error_free) */
    guint *pending;
    GMainContext *context;
} CSecItemCall;

/* In C because GIO calls it back on the thread-default main context with a
 * GAsyncResult; a Swift closure cannot be passed as a C callback with state. */
static void csecitem_call_done(GObject *source, GAsyncResult *result, gpointer data) {
    CSecItemCall *call = (CSecItemCall *)data;
    call->reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &call->error);
    (*call->pending)--;
    g_main_context_wakeup(call->context);
}

/* In C because it runs a private GLib main context on the calling thread until
 * every reply is in: the asynchronous calls and their callbacks (above) are
 * GLib's machinery, not something Swift can drive. */
static void csecitem_call_all(GDBusConnection *connection, CSecItemCall *calls, guint count, gint timeout_ms,
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

/* Reads the boolean inside a Properties.Get reply ((v) holding b). */
static gboolean csecitem_boolean_reply(GVariant *reply) {
    GVariant *inner = NULL;
    g_variant_get(reply, "(v)", &inner);
    gboolean value = g_variant_is_of_type(inner, G_VARIANT_TYPE_BOOLEAN) ? g_variant_get_boolean(inner) : FALSE;
    g_variant_unref(inner);
    return value;
}

/* In C because it is a pipelined pair (csecitem_call_all). Collection.SearchItems
 * and, when `check_lock`, Properties.Get(Locked) of the collection, sent
 * together: an empty result needs the lock state (a locked collection can hide
 * its items), and asking at once costs no extra round trip (but daemon time,
 * which a hit does not need). */
gchar **csecitem_search_checking_lock(GDBusConnection *connection, const char *collection_path,
                                      GHashTable *attributes, gboolean check_lock, gint timeout_ms,
                                      GCancellable *cancellable, gboolean *locked, GError **lock_error,
                                      GError **error) {
    GVariant *search = csecitem_attributes_variant(attributes);
    CSecItemCall calls[2] = {
        {.path = collection_path, .interface = CSECITEM_COLLECTION_IFACE, .method = "SearchItems",
         .parameters = g_variant_new_tuple(&search, 1), .reply_type = G_VARIANT_TYPE("(ao)")},
        {.path = collection_path, .interface = CSECITEM_PROPS_IFACE, .method = "Get",
         .parameters = check_lock ? g_variant_new("(ss)", CSECITEM_COLLECTION_IFACE, "Locked") : NULL,
         .reply_type = G_VARIANT_TYPE("(v)")},
    };
    csecitem_call_all(connection, calls, check_lock ? 2 : 1, timeout_ms, cancellable);
    *locked = FALSE;
    if (check_lock) {
        if (calls[1].reply != NULL) {
            *locked = csecitem_boolean_reply(calls[1].reply);
            g_variant_unref(calls[1].reply);
        } else {
            g_propagate_error(lock_error, calls[1].error);
        }
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

/* In C because it pipelines one call per item plus Service.GetSecrets
 * (csecitem_call_all) and decodes the secrets with the session's key.
 * Properties.GetAll of every item in `paths` (count of them) — or, when
 * `attributes_only`, Properties.Get of its Attributes alone, which costs
 * gnome-keyring far less — and, when `secrets` is not NULL, Service.GetSecrets
 * of all of them in one call, all sent at once. properties[i] is the a{sv} of
 * paths[i] (with Attributes only when `attributes_only`) or NULL with errors[i]
 * set; *secrets is a table path → SecretValue (secret_value_unref on removal,
 * which wipes) or NULL with *secrets_error set; *undecodable (when secrets is not
 * NULL) counts the secrets the session could not decrypt. */
void csecitem_read_items(const CSecItemSession *session, GDBusConnection *connection, const gchar *const *paths,
                         guint count, gboolean attributes_only, gint timeout_ms, GCancellable *cancellable,
                         GVariant **properties, GError **errors, GHashTable **secrets, GError **secrets_error,
                         guint *undecodable) {
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
            g_variant_new("(^aoo)", (gchar **)paths, csecitem_session_object_path(session));
        calls[count].reply_type = G_VARIANT_TYPE("(a{o(oayays)})");
    }
    csecitem_call_all(connection, calls, total, timeout_ms, cancellable);
    for (guint i = 0; i < count; i++) {
        properties[i] = NULL;
        errors[i] = NULL;
        if (calls[i].reply == NULL) {
            errors[i] = calls[i].error;
        } else if (attributes_only) {
            /* (v) holding a{ss} → {"Attributes": <a{ss}>}, the shape GetAll gives. */
            GVariant *inner = NULL;
            g_variant_get(calls[i].reply, "(v)", &inner);
            GVariantBuilder builder;
            g_variant_builder_init(&builder, G_VARIANT_TYPE("a{sv}"));
            g_variant_builder_add(&builder, "{sv}", "Attributes", inner);
            properties[i] = g_variant_ref_sink(g_variant_builder_end(&builder));
            g_variant_unref(inner);
            g_variant_unref(calls[i].reply);
        } else {
            properties[i] = g_variant_get_child_value(calls[i].reply, 0);
            g_variant_unref(calls[i].reply);
        }
    }
    if (secrets != NULL) {
        *secrets = NULL;
        if (calls[count].reply != NULL) {
            *secrets = csecitem_session_open_all(session, calls[count].reply, undecodable);
        } else {
            g_propagate_error(secrets_error, calls[count].error);
        }
    }
    g_free(calls);
}

/* Service.GetSecrets of `paths` (NULL-terminated), decoded: the table of
 * csecitem_read_items, or NULL with *error set. *undecodable counts the secrets
 * the provider sent that this session could not decrypt. */
GHashTable *csecitem_get_secrets(const CSecItemSession *session, GDBusConnection *connection, const gchar *const *paths,
                                 gint timeout_ms, GCancellable *cancellable, guint *undecodable, GError **error) {
    CSecItemCall call = {.path = CSECITEM_SERVICE_PATH, .interface = CSECITEM_SERVICE_IFACE, .method = "GetSecrets",
                         .parameters = g_variant_new("(^aoo)", (gchar **)paths,
                                                     csecitem_session_object_path(session)),
                         .reply_type = G_VARIANT_TYPE("(a{o(oayays)})")};
    *undecodable = 0;
    csecitem_call_all(connection, &call, 1, timeout_ms, cancellable);
    if (call.reply == NULL) {
        g_propagate_error(error, call.error);
        return NULL;
    }
    return csecitem_session_open_all(session, call.reply, undecodable);
}

/* In C because it pipelines up to three writes (csecitem_call_all) and encodes
 * the secret with the session's key. An item's changes sent at once:
 * Item.SetSecret (when `set_secret`), Properties.Set(Attributes) (when
 * `attributes`), Properties.Set(Label) (when `label`), in that order.
 * errors[0..2] are set for the calls that failed. */
void csecitem_item_write(const CSecItemSession *session, GDBusConnection *connection, const char *item_path,
                         gboolean set_secret, const void *bytes, gsize length, GHashTable *attributes,
                         const char *label, gint timeout_ms, GCancellable *cancellable, GError **errors) {
    CSecItemCall calls[3];
    guint slot[3];
    guint count = 0;
    memset(calls, 0, sizeof calls);
    errors[0] = errors[1] = errors[2] = NULL;
    if (set_secret) {
        GVariant *encoded = csecitem_session_seal(session, bytes, length, csecitem_content_type(bytes, length));
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
            .parameters =
                g_variant_new("(ssv)", CSECITEM_ITEM_IFACE, "Attributes", csecitem_attributes_variant(attributes))};
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
