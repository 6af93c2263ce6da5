// The system-bus client SecItemPolkit uses: polkit's CheckAuthorization and
// logind's LockedHint of the caller's session, over GDBus. Plain C types only,
// so no GLib type reaches Swift. Every function is safe to call from any thread.
#ifndef SECITEM_DBUS_H
#define SECITEM_DBUS_H

/// A private connection to the system bus, and the logind session it watches.
typedef struct secitem_dbus secitem_dbus;

/// Connects to `address`, or to the system bus (DBUS_SYSTEM_BUS_ADDRESS, else
/// the well-known socket) when `address` is NULL. On failure returns NULL and
/// sets `*error_out` to a message to free with `secitem_dbus_free_string`.
secitem_dbus *secitem_dbus_open(const char *address, char **error_out);

/// Stops the session watch and closes the connection.
void secitem_dbus_close(secitem_dbus *bus);

/// Frees a string this API returned.
void secitem_dbus_free_string(char *string);

/// What CheckAuthorization answered.
typedef enum {
    SECITEM_POLKIT_AUTHORIZED = 0,
    SECITEM_POLKIT_DENIED = 1,
    SECITEM_POLKIT_DISMISSED = 2,
    /// Authentication was needed and nobody could ask (no authentication agent).
    SECITEM_POLKIT_NO_AGENT = 3,
    /// polkit could not be asked (not running, no answer); `*reason_out` says why.
    SECITEM_POLKIT_UNAVAILABLE = 4,
} secitem_polkit_result;

/// Asks polkit whether this process (its system-bus name) may do `action_id`,
/// letting the authentication agent ask the user when `allow_interaction`.
/// `message` (may be NULL) is passed as the `polkit.message` detail; polkit takes
/// details only from trusted callers (uid 0, the action's owner), so when it
/// refuses them the call is repeated without. Blocks up to `timeout_ms`.
secitem_polkit_result secitem_polkit_check(
    secitem_dbus *bus, const char *action_id, const char *message, int allow_interaction, int timeout_ms,
    char **reason_out);

/// Starts following the LockedHint of a logind session: `session_id`, else
/// $XDG_SESSION_ID, else the session of this process, else the user's display
/// session. A session id logind does not know is passed over for the next way.
/// Returns 0 when watching (and `*session_out` names the session), -1 when there
/// is no session or no logind, -2 when a session id was given that logind does not
/// know and there is no other session: the caller counts that as locked
/// (`*reason_out` says which). A session whose LockedHint cannot be read counts as locked.
int secitem_logind_watch(secitem_dbus *bus, const char *session_id, char **session_out, char **reason_out);

/// The watched session's LockedHint: 1 locked, 0 unlocked, -1 not watching.
/// An atomic read of a value logind's PropertiesChanged signals keep current.
int secitem_logind_locked(secitem_dbus *bus);

/// Whether `name` has an owner on the bus: 1 yes, 0 no, -1 the bus did not answer.
int secitem_dbus_name_has_owner(secitem_dbus *bus, const char *name);

#endif
