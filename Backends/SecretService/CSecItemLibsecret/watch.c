/* Watching the collection's lock state: a counter bumped, on GDBus's worker
 * thread and in the order messages arrive, by every signal the provider sends
 * on the service or the collection (CollectionChanged, PropertiesChanged
 * "Locked", ItemCreated, …) and by NameOwnerChanged of org.freedesktop.secrets
 * (a restarted provider). A reply is handed to its caller only after every
 * message received before it went through the filters, so a lock state read
 * when the counter had value g is still current as long as the counter still
 * reads g. */
#include "CSecItemLibsecret.h"
#include <string.h>

struct CSecItemWatch {
    gint generation;
    gchar *collection_path;
    GDBusConnection *connection;
    guint filter_id;
    gchar *rules[3];
};

/* In C because GDBus calls message filters on its worker thread, for every
 * message, with a C function pointer; Swift code there would need the Swift
 * runtime on a GLib thread for a counter bump. */
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

/* In C because GDBus frees the watch through this destroy function once no
 * filter call can still use it. */
static void csecitem_watch_free(gpointer data) {
    CSecItemWatch *watch = (CSecItemWatch *)data;
    g_free(watch->collection_path);
    for (int i = 0; i < 3; i++) g_free(watch->rules[i]);
    g_free(watch);
}

/* In C because g_atomic_int_get is a macro. The counter now. */
gint csecitem_watch_generation(CSecItemWatch *watch) { return g_atomic_int_get(&watch->generation); }

/* In C because it installs the filter above (a C callback) and builds the
 * match rules with printf formats. Starts watching: the bus match rules that
 * route the provider's signals to this connection, then the filter. NULL when
 * a rule cannot be added (then the lock state is never taken as known). */
CSecItemWatch *csecitem_watch_start(GDBusConnection *connection, const char *collection_path, gint timeout_ms) {
    CSecItemWatch *watch = g_new0(CSecItemWatch, 1);
    watch->collection_path = g_strdup(collection_path);
    watch->connection = connection;
    watch->rules[0] = g_strdup_printf("type='signal',sender='" CSECITEM_BUS_NAME "',path='%s'", CSECITEM_SERVICE_PATH);
    watch->rules[1] = g_strdup_printf("type='signal',sender='" CSECITEM_BUS_NAME "',path='%s'", collection_path);
    watch->rules[2] =
        g_strdup("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" CSECITEM_BUS_NAME "'");
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

/* In C as the counterpart of csecitem_watch_start (the rules' variadic
 * parameters). Stops watching; the watch is freed once no filter call can
 * still use it. */
void csecitem_watch_stop(CSecItemWatch *watch) {
    for (int i = 0; i < 3; i++) {
        g_dbus_connection_call(watch->connection, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "RemoveMatch", g_variant_new("(s)", watch->rules[i]), NULL,
                               G_DBUS_CALL_FLAGS_NONE, -1, NULL, NULL, NULL);
    }
    g_dbus_connection_remove_filter(watch->connection, watch->filter_id);
}
