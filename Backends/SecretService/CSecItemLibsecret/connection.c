/* The session bus, the encryption session and (for what needs libsecret) the Secret
 * Service proxy, opened on a private main context with a GLib timer as the bound: no
 * extra thread (a Dispatch timer) just to cancel a call that runs late. */
#include "internal.h"

/* A bound on a private main context: after `timeout_ms` the cancellable is
 * cancelled and every call still pending on it ends with G_IO_ERROR_CANCELLED. */
typedef struct {
    GMainContext *context;
    GCancellable *cancellable;
    GSource *timer;
    gboolean fired;
    guint pending;
} CSecItemBounded;

static gboolean csecitem_bounded_fire(gpointer data) {
    CSecItemBounded *bounded = (CSecItemBounded *)data;
    bounded->fired = TRUE;
    g_cancellable_cancel(bounded->cancellable);
    return G_SOURCE_REMOVE;
}

/* Pushes a new thread-default context (so that every asynchronous call started
 * until csecitem_bounded_finish completes on it) and arms the timer. */
static void csecitem_bounded_begin(CSecItemBounded *bounded, gint timeout_ms) {
    bounded->context = g_main_context_new();
    g_main_context_push_thread_default(bounded->context);
    bounded->cancellable = g_cancellable_new();
    bounded->fired = FALSE;
    bounded->pending = 0;
    bounded->timer = g_timeout_source_new((guint)(timeout_ms > 0 ? timeout_ms : 0));
    g_source_set_callback(bounded->timer, csecitem_bounded_fire, bounded, NULL);
    g_source_attach(bounded->timer, bounded->context);
}

/* One asynchronous call of the batch has completed. */
static void csecitem_bounded_done(CSecItemBounded *bounded) {
    bounded->pending--;
    g_main_context_wakeup(bounded->context);
}

/* Runs the context until every call has completed (cancelled ones included),
 * then drops the timer and the context. Returns whether the timer fired. */
static gboolean csecitem_bounded_finish(CSecItemBounded *bounded) {
    while (bounded->pending > 0) g_main_context_iteration(bounded->context, TRUE);
    g_source_destroy(bounded->timer);
    g_source_unref(bounded->timer);
    g_object_unref(bounded->cancellable);
    g_main_context_pop_thread_default(bounded->context);
    g_main_context_unref(bounded->context);
    return bounded->fired;
}

typedef struct {
    CSecItemBounded *bounded;
    GDBusConnection *connection;
    GError *error;
} CSecItemConnecting;

static void csecitem_connect_done(GObject *source, GAsyncResult *result, gpointer data) {
    (void)source;
    CSecItemConnecting *connecting = (CSecItemConnecting *)data;
    connecting->connection = g_bus_get_finish(result, &connecting->error);
    csecitem_bounded_done(connecting->bounded);
}

/* In C because it runs GLib's asynchronous connect on a private main context
 * (above) and because exit-on-close must be turned off on the connection before
 * any other code can see it: GLib's default for g_bus_get connections terminates
 * the process when the bus goes away, which a library must never do. This is the
 * process's session-bus connection (a singleton GLib keeps while referenced),
 * the one libsecret's SecretService then uses (its constructor forces
 * G_BUS_TYPE_SESSION): the caller keeps this reference as long as it may open the
 * service, so that both are the same connection (one connection per process). */
GDBusConnection *csecitem_connect(gint timeout_ms, gboolean *timed_out, GError **error) {
    CSecItemBounded bounded;
    csecitem_bounded_begin(&bounded, timeout_ms);
    CSecItemConnecting connecting = {.bounded = &bounded, .connection = NULL, .error = NULL};
    bounded.pending = 1;
    g_bus_get(G_BUS_TYPE_SESSION, bounded.cancellable, csecitem_connect_done, &connecting);
    *timed_out = csecitem_bounded_finish(&bounded);
    if (connecting.connection == NULL) {
        g_propagate_error(error, connecting.error);
        return NULL;
    }
    g_dbus_connection_set_exit_on_close(connecting.connection, FALSE);
    return connecting.connection;
}

typedef struct {
    CSecItemBounded *bounded;
    SecretService *service;
    GError *service_error;
    GVariant *alias_reply;
    GError *alias_error;
    GVariant *session_reply;
    GError *session_error;
} CSecItemOpening;

static void csecitem_session_opened(GObject *source, GAsyncResult *result, gpointer data) {
    CSecItemOpening *opening = (CSecItemOpening *)data;
    opening->session_reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &opening->session_error);
    csecitem_bounded_done(opening->bounded);
}

/* Whether the provider refused the session's algorithm (it then offers "plain" only). */
static gboolean csecitem_session_unsupported(const GError *error) {
    gchar *name = g_dbus_error_get_remote_error(error);
    gboolean unsupported = g_strcmp0(name, "org.freedesktop.DBus.Error.NotSupported") == 0;
    g_free(name);
    return unsupported;
}

static void csecitem_service_opened(GObject *source, GAsyncResult *result, gpointer data) {
    (void)source;
    CSecItemOpening *opening = (CSecItemOpening *)data;
    opening->service = secret_service_open_finish(result, &opening->service_error);
    csecitem_bounded_done(opening->bounded);
}

static void csecitem_alias_read(GObject *source, GAsyncResult *result, gpointer data) {
    CSecItemOpening *opening = (CSecItemOpening *)data;
    opening->alias_reply = g_dbus_connection_call_finish(G_DBUS_CONNECTION(source), result, &opening->alias_error);
    csecitem_bounded_done(opening->bounded);
}

/* Sends Service.ReadAlias(alias) on the opening's context (pending + 1). */
static void csecitem_alias_send(CSecItemOpening *opening, GDBusConnection *connection, const char *alias,
                                gint timeout_ms) {
    opening->bounded->pending++;
    g_dbus_connection_call(connection, CSECITEM_BUS_NAME, CSECITEM_SERVICE_PATH, CSECITEM_SERVICE_IFACE, "ReadAlias",
                           g_variant_new("(s)", alias), G_VARIANT_TYPE("(o)"), G_DBUS_CALL_FLAGS_NONE, timeout_ms,
                           opening->bounded->cancellable, csecitem_alias_read, opening);
}

/* The ReadAlias reply (or its failure) into *alias_path / *alias_error. */
static void csecitem_alias_take(CSecItemOpening *opening, gchar **alias_path, GError **alias_error) {
    if (alias_path != NULL) *alias_path = NULL;
    if (opening->alias_reply != NULL) {
        if (alias_path != NULL) g_variant_get(opening->alias_reply, "(o)", alias_path);
        g_variant_unref(opening->alias_reply);
    } else if (opening->alias_error != NULL) {
        g_propagate_error(alias_error, opening->alias_error);
    }
}

/* In C because it sends Service.OpenSession and Service.ReadAlias at once on a private
 * main context (csecitem_bounded_*) and does the session's Diffie-Hellman (session.c).
 *
 * The encryption session (dh-ietf1024-sha256-aes128-cbc-pkcs7, plain only if the
 * provider offers nothing else, as libsecret negotiates) opened with plain GDBus calls on
 * `connection`: no libsecret proxy (its set-up costs the bus daemon's AddMatch,
 * GetNameOwner and StartServiceByName, the provider's Properties.GetAll and millions of
 * instructions of GObject and GDBusProxy work; issue 24). When `alias` is not NULL,
 * Service.ReadAlias(alias) is sent at the same time: *alias_path is then the
 * collection's path (g_free; "/" when the alias is unset) or NULL with *alias_error set.
 * Everything is bounded by `timeout_ms`; *timed_out says whether the bound cut it short.
 * The session is the caller's (csecitem_session_free); NULL with *error set on failure. */
CSecItemSession *csecitem_session_begin(GDBusConnection *connection, const char *alias, gint timeout_ms,
                                        gchar **alias_path, GError **alias_error, gboolean *timed_out,
                                        GError **error) {
    if (alias_path != NULL) *alias_path = NULL;
    *timed_out = FALSE;
    CSecItemSessionOffer *offer = csecitem_session_offer_new();
    if (offer == NULL) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_FAILED, "cannot make a Diffie-Hellman key for the session");
        return NULL;
    }
    CSecItemBounded bounded;
    csecitem_bounded_begin(&bounded, timeout_ms);
    CSecItemOpening opening = {.bounded = &bounded};
    bounded.pending = 1;
    g_dbus_connection_call(connection, CSECITEM_BUS_NAME, CSECITEM_SERVICE_PATH, CSECITEM_SERVICE_IFACE,
                           "OpenSession", csecitem_session_offer_parameters(offer), G_VARIANT_TYPE("(vo)"),
                           G_DBUS_CALL_FLAGS_NONE, timeout_ms, bounded.cancellable, csecitem_session_opened, &opening);
    if (alias != NULL) csecitem_alias_send(&opening, connection, alias, timeout_ms);
    *timed_out = csecitem_bounded_finish(&bounded);
    csecitem_alias_take(&opening, alias_path, alias_error);
    if (opening.session_error != NULL && csecitem_session_unsupported(opening.session_error)) {
        /* The provider offers no encrypted session: ask for "plain", as libsecret does. */
        g_error_free(opening.session_error);
        opening.session_error = NULL;
        csecitem_session_offer_free(offer);
        offer = NULL;
        opening.session_reply = g_dbus_connection_call_sync(
            connection, CSECITEM_BUS_NAME, CSECITEM_SERVICE_PATH, CSECITEM_SERVICE_IFACE, "OpenSession",
            csecitem_session_offer_parameters(NULL), G_VARIANT_TYPE("(vo)"), G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL,
            &opening.session_error);
    }
    CSecItemSession *session = NULL;
    if (opening.session_reply != NULL) {
        session = csecitem_session_from_reply(offer, opening.session_reply, error);
    } else {
        g_propagate_error(error, opening.session_error);
    }
    csecitem_session_offer_free(offer);
    return session;
}

/* In C because it runs libsecret's asynchronous open (and a direct call beside it) on a
 * private main context (csecitem_bounded_*), and because SECRET_TYPE_SERVICE and
 * G_DBUS_PROXY are macros Swift cannot import.
 *
 * A new (not the process-wide cached) SecretService proxy, without a session (libsecret
 * opens its own when a call needs one), on the process's session bus: `connection`, the
 * connection csecitem_connect returned, which the caller keeps referenced so that
 * libsecret's g_bus_get finds the same one. Only what needs libsecret's prompt handling
 * (unlocking, a prompted delete or create) opens it, on first use. Its own later calls
 * time out after `timeout_ms`. When `alias` is not NULL, Service.ReadAlias(alias) is
 * sent at the same time (see csecitem_session_begin). Everything is bounded by
 * `timeout_ms`; *timed_out says whether the bound cut it short. */
SecretService *csecitem_service_open(GDBusConnection *connection, const char *alias, gint timeout_ms,
                                     gchar **alias_path, GError **alias_error, gboolean *timed_out,
                                     GError **error) {
    CSecItemBounded bounded;
    csecitem_bounded_begin(&bounded, timeout_ms);
    CSecItemOpening opening = {.bounded = &bounded};
    bounded.pending = 1;
    secret_service_open(SECRET_TYPE_SERVICE, NULL, SECRET_SERVICE_NONE, bounded.cancellable, csecitem_service_opened,
                        &opening);
    if (alias != NULL) csecitem_alias_send(&opening, connection, alias, timeout_ms);
    *timed_out = csecitem_bounded_finish(&bounded);
    csecitem_alias_take(&opening, alias_path, alias_error);
    if (opening.service == NULL) {
        g_propagate_error(error, opening.service_error);
        return NULL;
    }
    g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(opening.service), timeout_ms);
    return opening.service;
}

/* In C for the G_DBUS_PROXY cast macro. Changes the bound of the proxy's own
 * calls (a session opened by the probe's short bound keeps serving the backend
 * with the backend's bound). */
void csecitem_service_set_timeout(SecretService *service, gint timeout_ms) {
    g_dbus_proxy_set_default_timeout(G_DBUS_PROXY(service), timeout_ms);
}
