/* The session bus and the Secret Service proxy. */
#include "CSecItemLibsecret.h"

/* In C because exit-on-close must be turned off on the connection before any
 * other code can see it: GLib's default for g_bus_get connections terminates
 * the process when the bus goes away, which a library must never do. This is
 * the process's session-bus connection, the one libsecret's SecretService
 * always uses (its constructor forces G_BUS_TYPE_SESSION). */
GDBusConnection *csecitem_connect(GCancellable *cancellable, GError **error) {
    GDBusConnection *connection = g_bus_get_sync(G_BUS_TYPE_SESSION, cancellable, error);
    if (connection != NULL) g_dbus_connection_set_exit_on_close(connection, FALSE);
    return connection;
}

/* In C because SECRET_TYPE_SERVICE and G_DBUS_PROXY are macros (a type lookup
 * and a checked cast) that Swift cannot import. A new (not the process-wide
 * cached) SecretService proxy with an encryption session open; its own calls
 * time out after `timeout_ms`. */
SecretService *csecitem_service_open(gint timeout_ms, GCancellable *cancellable, GError **error) {
    SecretService *service =
        secret_service_open_sync(SECRET_TYPE_SERVICE, NULL, SECRET_SERVICE_OPEN_SESSION, cancellable, error);
    if (service != NULL) g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(service), timeout_ms);
    return service;
}

/* In C for the G_DBUS_PROXY cast macro. Changes the bound of the proxy's own
 * calls (a session opened by the probe's short bound keeps serving the backend
 * with the backend's bound). */
void csecitem_service_set_timeout(SecretService *service, gint timeout_ms) {
    g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(service), timeout_ms);
}

/* In C for the G_DBUS_PROXY cast macro: the connection the proxy talks on. */
GDBusConnection *csecitem_service_connection(SecretService *service) {
    return g_dbus_proxy_get_connection(G_DBUS_PROXY(service));
}

/* In C because g_object_ref is a macro in GLib (a typeof cast around the
 * function) that Swift cannot import. */
gpointer csecitem_object_ref(gpointer object) { return g_object_ref(object); }
