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

/* In C because the properties table holds GVariants with g_variant_unref as
 * its destroy function (a function pointer) and the keys are the "Item.Label"
 * and "Item.Attributes" constants. Service.CreateItem in `collection_path`;
 * returns the new item's path (g_free). */
gchar *csecitem_create_item(SecretService *service, const char *collection_path, const char *label,
                            GHashTable *attributes, const void *bytes, gsize length, GCancellable *cancellable,
                            GError **error) {
    GHashTable *properties = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_variant_unref);
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
