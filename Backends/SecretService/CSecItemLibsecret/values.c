/* Attribute tables, item properties, secret values and error domains. */
#include "internal.h"

#include <string.h>

/* The content type a stored secret declares: "text/plain" for UTF-8 text without NUL, which
 * every provider hands back as it was given and `secret-tool lookup` prints; anything else
 * "application/octet-stream", which KWallet and KeePassXC keep as bytes (docs/secret-service-mapping.md). */
#define CSECITEM_CONTENT_TYPE_TEXT "text/plain"
#define CSECITEM_CONTENT_TYPE_BYTES "application/octet-stream"

/* In C because g_str_hash, g_str_equal and g_free are passed as function
 * pointers, which Swift cannot form from imported C functions. */
GHashTable *csecitem_strhash_new(void) { return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free); }

/* In C so that the table owns copies (g_strdup) freed by the table's own
 * destroy functions; a Swift string's storage would not outlive the call. */
void csecitem_strhash_insert(GHashTable *table, const char *key, const char *value) {
    g_hash_table_replace(table, g_strdup(key), g_strdup(value));
}

/* In C because the GVariant format strings ("{&s&s}", "s", "b") are variadic
 * calls Swift cannot make. An item's attributes (two parallel NULL-terminated
 * arrays, g_strfreev), label (g_free) and locked state from its
 * Properties.GetAll dictionary (a{sv}). */
void csecitem_parse_properties(GVariant *props, gchar ***keys, gchar ***values, gchar **label, gboolean *locked) {
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

/* In C so that an empty secret still gets a valid pointer and the content
 * type stays one constant. A SecretValue holding a copy of `length` bytes
 * (libsecret keeps it in non-pageable memory and wipes it in secret_value_unref). */
SecretValue *csecitem_value_new(const void *bytes, gsize length) {
    static const char empty[1] = {0};
    const gchar *text = length == 0 ? empty : (const gchar *)bytes;
    return secret_value_new(text, (gssize)length, csecitem_content_type(text, length));
}

/* The content type a secret of these bytes is stored with: text when it is UTF-8 without NUL. */
const char *csecitem_content_type(const void *bytes, gsize length) {
    if (length == 0) return CSECITEM_CONTENT_TYPE_TEXT;
    const gchar *text = (const gchar *)bytes;
    gboolean textual = memchr(text, 0, length) == NULL && g_utf8_validate(text, (gssize)length, NULL);
    return textual ? CSECITEM_CONTENT_TYPE_TEXT : CSECITEM_CONTENT_TYPE_BYTES;
}

/* In C for the typed lookup in a table whose values are SecretValue pointers
 * (gpointer to Swift). The secret of `item_path` in a table from
 * secret_service_get_secrets_for_dbus_paths_sync or csecitem_read_items. */
const void *csecitem_secret_bytes(GHashTable *secrets, const char *item_path, gsize *length) {
    SecretValue *value = (SecretValue *)g_hash_table_lookup(secrets, item_path);
    if (value == NULL) return NULL;
    return secret_value_get(value, length);
}

/* In C because G_IO_ERROR, G_DBUS_ERROR and SECRET_ERROR are macros calling
 * the quark functions, which Swift does not import as constants. */
GQuark csecitem_io_error_quark(void) { return G_IO_ERROR; }
GQuark csecitem_dbus_error_quark(void) { return G_DBUS_ERROR; }
GQuark csecitem_secret_error_quark(void) { return SECRET_ERROR; }
