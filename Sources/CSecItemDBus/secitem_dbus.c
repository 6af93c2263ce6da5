// The system-bus client of SecItemPolkit over GDBus (see include/secitem_dbus.h).
//
// GDBus rather than sd-bus: GIO is already there for the Secret Service backend
// (libsecret is built on it), so this adds no library, and GDBus's connection is
// thread-safe and dispatches signal subscriptions on a main context of our
// choosing, which is how the LockedHint watch stays current without a round trip
// per read. GIO is loaded on first use (CSecItemGLib): secitem_dbus_open loads it, so
// a process that never opens the system bus maps none of GLib.
#pragma clang diagnostic warning "-Wall"
#pragma clang diagnostic warning "-Wextra"

#include "secitem_dbus.h"

#include "CSecItemGLib.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POLKIT_NAME "org.freedesktop.PolicyKit1"
#define POLKIT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_IFACE "org.freedesktop.PolicyKit1.Authority"
#define LOGIN_NAME "org.freedesktop.login1"
#define LOGIN_PATH "/org/freedesktop/login1"
#define LOGIN_MANAGER "org.freedesktop.login1.Manager"
#define LOGIN_SESSION "org.freedesktop.login1.Session"
#define LOGIN_USER "org.freedesktop.login1.User"
#define PROPERTIES "org.freedesktop.DBus.Properties"

struct secitem_dbus {
    GDBusConnection *connection;
    GMutex lock;  // guards the watch fields while it starts and stops
    GThread *thread;
    GMainContext *context;
    GMainLoop *loop;
    char *session_path;
    guint subscription;
    gint locked;  // atomic: -1 not watching, 0 unlocked, 1 locked
    // Start-up hand-off between secitem_logind_watch and the watch thread.
    GCond ready;
    gboolean started;
};

static char *message_of(GError *error) {
    if (error == NULL) return g_strdup("unknown error");
    char *remote = g_dbus_error_get_remote_error(error);
    char *text;
    if (remote != NULL) {
        g_dbus_error_strip_remote_error(error);
        text = g_strdup_printf("%s (%s)", error->message, remote);
        g_free(remote);
    } else {
        text = g_strdup(error->message);
    }
    // One line: a service's message may carry a whole traceback (python-dbus).
    char *newline = strchr(text, '\n');
    if (newline != NULL) *newline = '\0';
    return text;
}

static char *dup_out(const char *text) { return text == NULL ? NULL : strdup(text); }

static void set_out(char **out, char *glib_text) {
    if (out != NULL) *out = dup_out(glib_text);
    g_free(glib_text);
}

void secitem_dbus_free_string(char *string) { free(string); }

secitem_dbus *secitem_dbus_open(const char *address, char **error_out) {
    char load_error[512];
    if (!csecitem_glib_load(load_error, sizeof load_error)) {
        if (error_out != NULL) *error_out = dup_out(load_error);
        return NULL;
    }
    GError *error = NULL;
    char *bus_address = address != NULL ? g_strdup(address)
                                        : g_dbus_address_get_for_bus_sync(G_BUS_TYPE_SYSTEM, NULL, &error);
    if (bus_address == NULL) {
        set_out(error_out, g_strdup_printf("no system bus address: %s", error ? error->message : "unknown"));
        g_clear_error(&error);
        return NULL;
    }
    GDBusConnection *connection = g_dbus_connection_new_for_address_sync(
        bus_address,
        G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION, NULL, NULL,
        &error);
    if (connection == NULL) {
        char *why = message_of(error);
        set_out(error_out, g_strdup_printf("cannot connect to the system bus at %s: %s", bus_address, why));
        g_free(why);
        g_clear_error(&error);
        g_free(bus_address);
        return NULL;
    }
    g_free(bus_address);
    g_dbus_connection_set_exit_on_close(connection, FALSE);
    secitem_dbus *bus = g_new0(secitem_dbus, 1);
    bus->connection = connection;
    g_mutex_init(&bus->lock);
    g_cond_init(&bus->ready);
    g_atomic_int_set(&bus->locked, -1);
    return bus;
}

static gboolean quit_loop(gpointer data) {
    g_main_loop_quit((GMainLoop *)data);
    return G_SOURCE_REMOVE;
}

void secitem_dbus_close(secitem_dbus *bus) {
    if (bus == NULL) return;
    g_mutex_lock(&bus->lock);
    GThread *thread = bus->thread;
    bus->thread = NULL;
    g_mutex_unlock(&bus->lock);
    if (thread != NULL) {
        // Queued on the watch's own context: it runs once the loop runs, so no quit is lost.
        g_main_context_invoke(bus->context, quit_loop, bus->loop);
        g_thread_join(thread);
    }
    if (bus->subscription != 0) g_dbus_connection_signal_unsubscribe(bus->connection, bus->subscription);
    if (bus->loop != NULL) g_main_loop_unref(bus->loop);
    if (bus->context != NULL) g_main_context_unref(bus->context);
    g_free(bus->session_path);
    g_dbus_connection_close_sync(bus->connection, NULL, NULL);
    g_object_unref(bus->connection);
    g_mutex_clear(&bus->lock);
    g_cond_clear(&bus->ready);
    g_free(bus);
}

// MARK: polkit

static GVariant *check_call(
    secitem_dbus *bus, const char *action_id, const char *message, int allow_interaction, int timeout_ms,
    GError **error) {
    GVariantBuilder subject;
    g_variant_builder_init(&subject, G_VARIANT_TYPE("a{sv}"));
    const char *unique = g_dbus_connection_get_unique_name(bus->connection);
    g_variant_builder_add(&subject, "{sv}", "name", g_variant_new_string(unique != NULL ? unique : ""));
    GVariantBuilder details;
    g_variant_builder_init(&details, G_VARIANT_TYPE("a{ss}"));
    if (message != NULL) g_variant_builder_add(&details, "{ss}", "polkit.message", message);
    GVariant *parameters = g_variant_new(
        "((sa{sv})sa{ss}us)", "system-bus-name", &subject, action_id, &details,
        (guint32)(allow_interaction ? 1 : 0), "");
    return g_dbus_connection_call_sync(
        bus->connection, POLKIT_NAME, POLKIT_PATH, POLKIT_IFACE, "CheckAuthorization", parameters,
        G_VARIANT_TYPE("((bba{ss}))"), G_DBUS_CALL_FLAGS_NONE, timeout_ms, NULL, error);
}

static gboolean is_remote_error(GError *error, const char *name) {
    char *remote = g_dbus_error_get_remote_error(error);
    gboolean same = remote != NULL && strcmp(remote, name) == 0;
    g_free(remote);
    return same;
}

secitem_polkit_result secitem_polkit_check(
    secitem_dbus *bus, const char *action_id, const char *message, int allow_interaction, int timeout_ms,
    char **reason_out) {
    GError *error = NULL;
    GVariant *reply = check_call(bus, action_id, message, allow_interaction, timeout_ms, &error);
    if (reply == NULL && message != NULL && is_remote_error(error, "org.freedesktop.PolicyKit1.Error.NotAuthorized")) {
        // "Only trusted callers (e.g. uid 0 or an action owner) can use CheckAuthorization() and pass details":
        // the dialog shows the action's own message instead of the caller's prompt.
        g_clear_error(&error);
        reply = check_call(bus, action_id, NULL, allow_interaction, timeout_ms, &error);
    }
    if (reply == NULL) {
        char *why = message_of(error);
        gboolean absent = g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN)
            || g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER);
        const char *hint = strstr(why, "not registered") != NULL
            ? "; install org.secitem.policy in /usr/share/polkit-1/actions (docs/secitem-semantics.md, section 9)"
            : "";
        set_out(reason_out, absent ? g_strdup_printf("polkit is not running on the system bus (%s)", why)
                                   : g_strdup_printf("polkit did not answer: %s%s", why, hint));
        g_free(why);
        g_clear_error(&error);
        return SECITEM_POLKIT_UNAVAILABLE;
    }
    gboolean authorized = FALSE, challenge = FALSE;
    GVariant *details = NULL;
    g_variant_get(reply, "((bb@a{ss}))", &authorized, &challenge, &details);
    const char *dismissed = NULL;
    gboolean has_dismissed = g_variant_lookup(details, "polkit.dismissed", "&s", &dismissed);
    secitem_polkit_result result;
    if (authorized) {
        result = SECITEM_POLKIT_AUTHORIZED;
    } else if (has_dismissed && dismissed != NULL && strcmp(dismissed, "true") == 0) {
        result = SECITEM_POLKIT_DISMISSED;
    } else if (challenge) {
        // Interaction was allowed and authentication still only "could" happen: nobody asked the user.
        result = SECITEM_POLKIT_NO_AGENT;
        set_out(reason_out, g_strdup("no polkit authentication agent is registered for this session"));
    } else {
        result = SECITEM_POLKIT_DENIED;
    }
    g_variant_unref(details);
    g_variant_unref(reply);
    return result;
}

// MARK: logind

static GVariant *call(secitem_dbus *bus, const char *path, const char *iface, const char *method, GVariant *args,
                      const char *reply_type, GError **error) {
    return g_dbus_connection_call_sync(bus->connection, LOGIN_NAME, path, iface, method, args,
                                       G_VARIANT_TYPE(reply_type), G_DBUS_CALL_FLAGS_NONE, 5000, NULL, error);
}

static char *object_path_reply(GVariant *reply) {
    const char *path = NULL;
    g_variant_get(reply, "(&o)", &path);
    char *copy = g_strdup(path);
    g_variant_unref(reply);
    return copy;
}

// Whether logind answers for the session at `path` (its LockedHint can be read).
static gboolean session_answers(secitem_dbus *bus, const char *path) {
    GVariant *reply = call(bus, path, PROPERTIES, "Get", g_variant_new("(ss)", LOGIN_SESSION, "LockedHint"), "(v)", NULL);
    if (reply == NULL) return FALSE;
    g_variant_unref(reply);
    return TRUE;
}

// The session to watch, or NULL with *error set (the last way tried). A session id
// given (`session_id`, else $XDG_SESSION_ID) that logind does not know is passed over
// for the session of this process, then the user's display session, and
// `*named_unknown` is set: when neither exists the caller counts the session as
// locked, never as unlocked (an environment variable must not open WhenUnlocked items).
static char *find_session(secitem_dbus *bus, const char *session_id, gboolean *named_unknown, GError **error) {
    const char *id = session_id != NULL ? session_id : g_getenv("XDG_SESSION_ID");
    GVariant *reply;
    *named_unknown = FALSE;
    if (id != NULL && id[0] != '\0') {
        reply = call(bus, LOGIN_PATH, LOGIN_MANAGER, "GetSession", g_variant_new("(s)", id), "(o)", error);
        if (reply != NULL) {
            char *path = object_path_reply(reply);
            if (session_answers(bus, path)) return path;
            g_free(path);
        }
        g_clear_error(error);
        *named_unknown = TRUE;
    }
    reply = call(bus, LOGIN_PATH, LOGIN_MANAGER, "GetSessionByPID", g_variant_new("(u)", (guint32)getpid()), "(o)",
                 error);
    if (reply != NULL) return object_path_reply(reply);
    // A user service is in no session: the user's display session is the one whose lock counts.
    g_clear_error(error);
    reply = call(bus, LOGIN_PATH, LOGIN_MANAGER, "GetUser", g_variant_new("(u)", (guint32)getuid()), "(o)", error);
    if (reply == NULL) return NULL;
    char *user = object_path_reply(reply);
    reply = call(bus, user, PROPERTIES, "Get", g_variant_new("(ss)", LOGIN_USER, "Display"), "(v)", error);
    g_free(user);
    if (reply == NULL) return NULL;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    g_variant_unref(reply);
    char *path = NULL;
    if (g_variant_is_of_type(value, G_VARIANT_TYPE("(so)"))) {
        const char *p = NULL;
        g_variant_get(value, "(&s&o)", NULL, &p);
        if (p != NULL && strcmp(p, "/") != 0) path = g_strdup(p);
    }
    g_variant_unref(value);
    if (path == NULL) g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "the user has no display session");
    return path;
}

static void store_locked(secitem_dbus *bus, GVariant *value) {
    if (value != NULL && g_variant_is_of_type(value, G_VARIANT_TYPE_BOOLEAN)) {
        g_atomic_int_set(&bus->locked, g_variant_get_boolean(value) ? 1 : 0);
    }
}

static void read_locked(secitem_dbus *bus) {
    GVariant *reply = call(bus, bus->session_path, PROPERTIES, "Get", g_variant_new("(ss)", LOGIN_SESSION, "LockedHint"),
                           "(v)", NULL);
    if (reply == NULL) return;
    GVariant *value = NULL;
    g_variant_get(reply, "(v)", &value);
    store_locked(bus, value);
    g_variant_unref(value);
    g_variant_unref(reply);
}

static void on_properties_changed(GDBusConnection *connection, const char *sender, const char *path,
                                  const char *iface, const char *signal, GVariant *parameters, gpointer data) {
    (void)connection, (void)sender, (void)path, (void)iface, (void)signal;
    secitem_dbus *bus = data;
    const char *changed_iface = NULL;
    GVariant *changed = NULL;
    const char **invalidated = NULL;
    g_variant_get(parameters, "(&s@a{sv}^a&s)", &changed_iface, &changed, &invalidated);
    GVariant *value = g_variant_lookup_value(changed, "LockedHint", G_VARIANT_TYPE_BOOLEAN);
    if (value != NULL) {
        store_locked(bus, value);
        g_variant_unref(value);
    } else if (invalidated != NULL && g_strv_contains(invalidated, "LockedHint")) {
        read_locked(bus);
    }
    g_free(invalidated);
    g_variant_unref(changed);
}

static gpointer watch_thread(gpointer data) {
    secitem_dbus *bus = data;
    g_main_context_push_thread_default(bus->context);
    // Subscribe first, then read: a change in between is queued and applied after.
    bus->subscription = g_dbus_connection_signal_subscribe(
        bus->connection, LOGIN_NAME, PROPERTIES, "PropertiesChanged", bus->session_path, LOGIN_SESSION,
        G_DBUS_SIGNAL_FLAGS_NONE, on_properties_changed, bus, NULL);
    read_locked(bus);
    // LockedHint could not be read: the session counts as locked (closed), never as unlocked.
    if (g_atomic_int_get(&bus->locked) < 0) g_atomic_int_set(&bus->locked, 1);
    g_mutex_lock(&bus->lock);
    bus->started = TRUE;
    g_cond_broadcast(&bus->ready);
    g_mutex_unlock(&bus->lock);
    g_main_loop_run(bus->loop);
    g_main_context_pop_thread_default(bus->context);
    return NULL;
}

int secitem_logind_watch(secitem_dbus *bus, const char *session_id, char **session_out, char **reason_out) {
    g_mutex_lock(&bus->lock);
    if (bus->thread != NULL) {
        if (session_out != NULL) *session_out = dup_out(bus->session_path);
        g_mutex_unlock(&bus->lock);
        return 0;
    }
    GError *error = NULL;
    gboolean named_unknown = FALSE;
    char *path = find_session(bus, session_id, &named_unknown, &error);
    if (path == NULL) {
        char *why = message_of(error);
        gboolean absent = g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_SERVICE_UNKNOWN)
            || g_error_matches(error, G_DBUS_ERROR, G_DBUS_ERROR_NAME_HAS_NO_OWNER);
        int result = -1;
        if (absent) {
            set_out(reason_out, g_strdup_printf("logind is not running on the system bus (%s)", why));
        } else if (named_unknown) {
            const char *id = session_id != NULL ? session_id : g_getenv("XDG_SESSION_ID");
            set_out(reason_out, g_strdup_printf("logind knows no session '%s' (named by %s), and this process and its "
                                                "user have no other session (%s)",
                                                id != NULL ? id : "", session_id != NULL ? "the caller" : "XDG_SESSION_ID",
                                                why));
            result = -2;
        } else {
            set_out(reason_out, g_strdup_printf("logind knows no session of this process (%s)", why));
        }
        g_free(why);
        g_clear_error(&error);
        g_mutex_unlock(&bus->lock);
        return result;
    }
    bus->session_path = path;
    bus->context = g_main_context_new();
    bus->loop = g_main_loop_new(bus->context, FALSE);
    bus->thread = g_thread_new("secitem-logind", watch_thread, bus);
    while (!bus->started) g_cond_wait(&bus->ready, &bus->lock);
    if (session_out != NULL) *session_out = dup_out(bus->session_path);
    g_mutex_unlock(&bus->lock);
    return 0;
}

int secitem_logind_locked(secitem_dbus *bus) { return g_atomic_int_get(&bus->locked); }

int secitem_dbus_name_has_owner(secitem_dbus *bus, const char *name) {
    GVariant *reply = g_dbus_connection_call_sync(
        bus->connection, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
        g_variant_new("(s)", name), G_VARIANT_TYPE("(b)"), G_DBUS_CALL_FLAGS_NONE, 5000, NULL, NULL);
    if (reply == NULL) return -1;
    gboolean owned = FALSE;
    g_variant_get(reply, "(b)", &owned);
    g_variant_unref(reply);
    return owned ? 1 : 0;
}
