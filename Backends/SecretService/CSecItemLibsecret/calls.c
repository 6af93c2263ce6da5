/* Single D-Bus method calls on the Secret Service, straight through GDBus. */
#include "internal.h"

/* In C because it builds an a{ss} GVariant from a table (g_variant_builder_add
 * with a format string is variadic). Shared with pipelined.c (internal.h). */
GVariant *csecitem_attributes_variant(GHashTable *attributes) {
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

/* In C because the call's parameters and reply are GVariant tuples built and
 * read with variadic format strings. Collection.SearchItems(attributes) →
 * object paths (NULL-terminated, g_strfreev). */
gchar **csecitem_search(GDBusConnection *connection, const char *collection_path, GHashTable *attributes,
                        gint timeout_ms, GCancellable *cancellable, GError **error) {
    GVariant *parameters = csecitem_attributes_variant(attributes);
    GVariant *reply = g_dbus_connection_call_sync(
        connection, CSECITEM_BUS_NAME, collection_path, CSECITEM_COLLECTION_IFACE, "SearchItems",
        g_variant_new_tuple(&parameters, 1), G_VARIANT_TYPE("(ao)"), G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable,
        error);
    if (reply == NULL) return NULL;
    gchar **paths = NULL;
    g_variant_get(reply, "(^ao)", &paths);
    g_variant_unref(reply);
    return paths;
}

/* In C for the variadic GVariant calls (see csecitem_search). Properties.GetAll
 * on an item: its attributes (two parallel NULL-terminated arrays), label and
 * locked state, as csecitem_parse_properties gives them. */
gboolean csecitem_item_properties(GDBusConnection *connection, const char *item_path, gint timeout_ms,
                                  GCancellable *cancellable, gchar ***keys, gchar ***values, gchar **label,
                                  gboolean *locked, GError **error) {
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

/* In C for the variadic GVariant calls (see csecitem_search).
 * Properties.Get(Locked) on a collection (or item). */
gboolean csecitem_get_locked(GDBusConnection *connection, const char *path, const char *interface, gint timeout_ms,
                             GCancellable *cancellable, gboolean *locked, GError **error) {
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

/* In C because it builds the CreateItem call's GVariants and seals the secret with the
 * session's key. Collection.CreateItem in `collection_path`, the secret sent in the backend's
 * own session (no libsecret proxy, no libsecret session), `replace` false. Returns the new
 * item's path (g_free); or NULL with *prompt set (g_free) when the provider answered with a
 * prompt instead (a locked collection: the caller runs it, whose result is the item's path);
 * or NULL with *error set. */
gchar *csecitem_create_item(const CSecItemSession *session, GDBusConnection *connection, const char *collection_path,
                            const char *label, GHashTable *attributes, const void *bytes, gsize length,
                            gint timeout_ms, GCancellable *cancellable, gchar **prompt, GError **error) {
    *prompt = NULL;
    GVariant *secret = csecitem_session_seal(session, bytes, length, csecitem_content_type(bytes, length));
    if (secret == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED, "could not encode the secret for the session");
        return NULL;
    }
    g_variant_ref_sink(secret);
    GVariantBuilder properties;
    g_variant_builder_init(&properties, G_VARIANT_TYPE("a{sv}"));
    g_variant_builder_add(&properties, "{sv}", CSECITEM_ITEM_IFACE ".Label", g_variant_new_string(label));
    g_variant_builder_add(&properties, "{sv}", CSECITEM_ITEM_IFACE ".Attributes",
                          csecitem_attributes_variant(attributes));
    GVariant *children[3] = {g_variant_builder_end(&properties), secret, g_variant_new_boolean(FALSE)};
    GVariant *reply = g_dbus_connection_call_sync(connection, CSECITEM_BUS_NAME, collection_path,
                                                  CSECITEM_COLLECTION_IFACE, "CreateItem",
                                                  g_variant_new_tuple(children, 3), G_VARIANT_TYPE("(oo)"),
                                                  G_DBUS_CALL_FLAGS_NONE, timeout_ms, cancellable, error);
    g_variant_unref(secret);
    if (reply == NULL) return NULL;
    const gchar *item = NULL;
    const gchar *prompt_path = NULL;
    g_variant_get(reply, "(&o&o)", &item, &prompt_path);
    gchar *path = NULL;
    if (g_strcmp0(item, "/") != 0) {
        path = g_strdup(item);
    } else if (g_strcmp0(prompt_path, "/") != 0) {
        *prompt = g_strdup(prompt_path);
    } else {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED, "CreateItem answered with neither an item nor a prompt");
    }
    g_variant_unref(reply);
    return path;
}

/* Item.Delete of `item_path` as a direct call. Returns TRUE when the provider deleted it,
 * or sets *prompt (g_free) when it answered with a prompt to run first; FALSE with *error
 * set on failure. */
gboolean csecitem_delete_item(GDBusConnection *connection, const char *item_path, gint timeout_ms,
                              GCancellable *cancellable, gchar **prompt, GError **error) {
    *prompt = NULL;
    GVariant *reply = g_dbus_connection_call_sync(connection, CSECITEM_BUS_NAME, item_path, CSECITEM_ITEM_IFACE,
                                                  "Delete", NULL, G_VARIANT_TYPE("(o)"), G_DBUS_CALL_FLAGS_NONE,
                                                  timeout_ms, cancellable, error);
    if (reply == NULL) return FALSE;
    const gchar *prompt_path = NULL;
    g_variant_get(reply, "(&o)", &prompt_path);
    if (g_strcmp0(prompt_path, "/") != 0) *prompt = g_strdup(prompt_path);
    g_variant_unref(reply);
    return TRUE;
}

/* In C for the prompt's result type (a GVariantType macro). Runs the prompt at `prompt_path`
 * through libsecret (its prompter, or gnome-keyring's headless dismissal). Returns TRUE when
 * the user completed it, with *item_path (g_free) set to the object path it returned when
 * `item_path` is not NULL (CreateItem's prompt returns the new item); FALSE when it was
 * dismissed (no error) or failed (*error set). */
gboolean csecitem_run_prompt(SecretService *service, const char *prompt_path, GCancellable *cancellable,
                             gchar **item_path, GError **error) {
    if (item_path != NULL) *item_path = NULL;
    GVariant *result = secret_service_prompt_at_dbus_path_sync(
        service, prompt_path, cancellable, item_path != NULL ? G_VARIANT_TYPE("o") : NULL, error);
    if (result == NULL) return FALSE;
    if (item_path != NULL) {
        const gchar *path = NULL;
        g_variant_get(result, "&o", &path);
        *item_path = g_strdup(path);
    }
    g_variant_unref(result);
    return TRUE;
}
