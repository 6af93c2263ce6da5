/* The Flatpak Secret portal's RetrieveSecret, as libsecret's file backend calls it
 * (secret-file-backend.c): a pipe's write end passed as a Unix fd, the Request
 * object's Response signal, then the secret read from the pipe. In C because the fd
 * list, the signal subscription and the private main context are GDBus calls with
 * callbacks. The secret goes from the pipe straight into the caller's buffer. */
#include "CSecItemLibsecret.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#define PORTAL_BUS_NAME "org.freedesktop.portal.Desktop"
#define PORTAL_OBJECT_PATH "/org/freedesktop/portal/desktop"
#define PORTAL_REQUEST_INTERFACE "org.freedesktop.portal.Request"
#define PORTAL_REQUEST_PATH_PREFIX "/org/freedesktop/portal/desktop/request/"
#define PORTAL_SECRET_INTERFACE "org.freedesktop.portal.Secret"

typedef struct {
    gchar *expected_path;
    gchar *returned_path;
    gboolean answered;
    guint32 response;
    gboolean timed_out;
} CSecItemPortalWait;

static void csecitem_portal_response(GDBusConnection *connection, const gchar *sender, const gchar *path,
                                     const gchar *interface, const gchar *signal, GVariant *parameters,
                                     gpointer data) {
    (void)connection;
    (void)sender;
    (void)interface;
    (void)signal;
    CSecItemPortalWait *wait = (CSecItemPortalWait *)data;
    if (wait->answered) return;
    if (g_strcmp0(path, wait->expected_path) != 0 && g_strcmp0(path, wait->returned_path) != 0) return;
    if (!g_variant_is_of_type(parameters, G_VARIANT_TYPE("(ua{sv})"))) return;
    g_variant_get(parameters, "(u@a{sv})", &wait->response, NULL);
    wait->answered = TRUE;
}

static gboolean csecitem_portal_timer(gpointer data) {
    ((CSecItemPortalWait *)data)->timed_out = TRUE;
    return G_SOURCE_REMOVE;
}

/* Reads until EOF, `capacity` bytes, or the deadline (monotonic µs). Returns the
 * count, -1 on a read error, -2 on the deadline, -3 when more than `capacity` came. */
static gssize csecitem_portal_read(int fd, guint8 *out, gsize capacity, gint64 deadline) {
    gsize total = 0;
    for (;;) {
        gint64 left = (deadline - g_get_monotonic_time()) / 1000;
        if (left <= 0) return -2;
        struct pollfd p = {.fd = fd, .events = POLLIN, .revents = 0};
        int ready = poll(&p, 1, left > G_MAXINT ? G_MAXINT : (int)left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return -1;
        if (ready == 0) return -2;
        guint8 extra;
        ssize_t n = total < capacity ? read(fd, out + total, capacity - total) : read(fd, &extra, 1);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return -1;
        if (n == 0) return (gssize)total;
        if (total >= capacity) {
            explicit_bzero(&extra, sizeof extra);
            return -3;
        }
        total += (gsize)n;
    }
}

/* The secret read from the pipe by `deadline`: OK with *length set, TIMED_OUT, or
 * BAD_SECRET (none, a read error, more than `capacity`); `out` is zeroed unless OK. */
static csecitem_portal_result csecitem_portal_read_until(int fd, guint8 *out, gsize capacity, gint64 deadline,
                                                         gsize *length) {
    *length = 0;
    gssize n = csecitem_portal_read(fd, out, capacity, deadline);
    csecitem_portal_result result = CSECITEM_PORTAL_OK;
    if (n == -2) result = CSECITEM_PORTAL_TIMED_OUT;
    else if (n <= 0) result = CSECITEM_PORTAL_BAD_SECRET;
    else *length = (gsize)n;
    if (result != CSECITEM_PORTAL_OK) explicit_bzero(out, capacity);
    return result;
}

csecitem_portal_result csecitem_portal_read_secret(int fd, guint8 *out, gsize capacity, gint timeout_ms, gsize *length) {
    gint64 deadline = g_get_monotonic_time() + (gint64)(timeout_ms > 0 ? timeout_ms : 0) * 1000;
    return csecitem_portal_read_until(fd, out, capacity, deadline, length);
}

csecitem_portal_result csecitem_portal_retrieve_secret(GDBusConnection *connection, gint timeout_ms, guint8 *out,
                                                       gsize capacity, gsize *length, guint32 *response,
                                                       GError **error) {
    *length = 0;
    *response = G_MAXUINT32;
    gint64 deadline = g_get_monotonic_time() + (gint64)(timeout_ms > 0 ? timeout_ms : 0) * 1000;

    int fds[2];
    if (!g_unix_open_pipe(fds, FD_CLOEXEC, error)) return CSECITEM_PORTAL_CALL_ERROR;
    GUnixFDList *fd_list = g_unix_fd_list_new();
    gint index = g_unix_fd_list_append(fd_list, fds[1], error);
    close(fds[1]); /* the list holds its own copy; the portal's copy is the only writer */
    if (index < 0) {
        close(fds[0]);
        g_object_unref(fd_list);
        return CSECITEM_PORTAL_CALL_ERROR;
    }

    /* The request's object path is known before the call (handle_token), so the
     * Response cannot arrive before the subscription. */
    gchar *token = g_strdup_printf("secitem%u", g_random_int());
    gchar *sender = g_strdup(g_dbus_connection_get_unique_name(connection) + 1);
    g_strdelimit(sender, ".", '_');
    CSecItemPortalWait wait = {0};
    wait.expected_path = g_strdup_printf(PORTAL_REQUEST_PATH_PREFIX "%s/%s", sender, token);
    g_free(sender);

    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    guint subscription = g_dbus_connection_signal_subscribe(connection, NULL, PORTAL_REQUEST_INTERFACE, "Response",
                                                            NULL, NULL, G_DBUS_SIGNAL_FLAGS_NONE,
                                                            csecitem_portal_response, &wait, NULL);

    GVariantBuilder options;
    g_variant_builder_init(&options, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add(&options, "{sv}", "handle_token", g_variant_new_string(token));
    g_free(token);
    GVariant *reply = g_dbus_connection_call_with_unix_fd_list_sync(
        connection, PORTAL_BUS_NAME, PORTAL_OBJECT_PATH, PORTAL_SECRET_INTERFACE, "RetrieveSecret",
        g_variant_new("(h@a{sv})", index, g_variant_builder_end(&options)), G_VARIANT_TYPE("(o)"),
        G_DBUS_CALL_FLAGS_NONE, timeout_ms, fd_list, NULL, NULL, error);
    g_object_unref(fd_list);

    csecitem_portal_result result = CSECITEM_PORTAL_OK;
    if (reply == NULL) {
        result = CSECITEM_PORTAL_CALL_ERROR;
    } else {
        g_variant_get(reply, "(o)", &wait.returned_path);
        g_variant_unref(reply);
        gint64 left = (deadline - g_get_monotonic_time()) / 1000;
        GSource *timer = g_timeout_source_new((guint)(left > 0 ? left : 0));
        g_source_set_callback(timer, csecitem_portal_timer, &wait, NULL);
        g_source_attach(timer, context);
        while (!wait.answered && !wait.timed_out) g_main_context_iteration(context, TRUE);
        g_source_destroy(timer);
        g_source_unref(timer);
        if (!wait.answered) {
            result = CSECITEM_PORTAL_TIMED_OUT;
        } else {
            *response = wait.response;
            if (wait.response == 1) result = CSECITEM_PORTAL_CANCELLED;
            else if (wait.response != 0) result = CSECITEM_PORTAL_FAILED;
        }
    }
    g_dbus_connection_signal_unsubscribe(connection, subscription);
    /* Let the unsubscription's pending callbacks run, then drop the context. */
    while (g_main_context_iteration(context, FALSE)) {}
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);
    g_free(wait.expected_path);
    g_free(wait.returned_path);

    if (result == CSECITEM_PORTAL_OK) result = csecitem_portal_read_until(fds[0], out, capacity, deadline, length);
    close(fds[0]);
    return result;
}

guint32 csecitem_portal_secret_version(GDBusConnection *connection, gint timeout_ms, GError **error) {
    GVariant *reply = g_dbus_connection_call_sync(
        connection, PORTAL_BUS_NAME, PORTAL_OBJECT_PATH, "org.freedesktop.DBus.Properties", "Get",
        g_variant_new("(ss)", PORTAL_SECRET_INTERFACE, "version"), G_VARIANT_TYPE("(v)"), G_DBUS_CALL_FLAGS_NONE,
        timeout_ms, NULL, error);
    if (reply == NULL) return 0;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    guint32 version = 0;
    if (value != NULL && g_variant_is_of_type(value, G_VARIANT_TYPE_UINT32)) version = g_variant_get_uint32(value);
    if (value != NULL) g_variant_unref(value);
    g_variant_unref(reply);
    if (version == 0) g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED, "the portal's Secret interface has no version");
    return version;
}
