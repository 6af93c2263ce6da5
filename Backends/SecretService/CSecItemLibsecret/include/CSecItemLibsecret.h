#ifndef CSECITEM_LIBSECRET_H
#define CSECITEM_LIBSECRET_H

/* The C half of the Secret Service backend: what Swift cannot express or
 * would express at the cost of a D-Bus round trip. Each function says why it
 * is in C. libsecret and GIO themselves come through CSecItemGLib, which loads
 * them on first use (nothing links them: issue 24). */

#include "CSecItemGLib.h"

#define CSECITEM_BUS_NAME "org.freedesktop.secrets"
#define CSECITEM_SERVICE_PATH "/org/freedesktop/secrets"
#define CSECITEM_ITEM_IFACE "org.freedesktop.Secret.Item"
#define CSECITEM_COLLECTION_IFACE "org.freedesktop.Secret.Collection"
#define CSECITEM_SERVICE_IFACE "org.freedesktop.Secret.Service"
#define CSECITEM_PROPS_IFACE "org.freedesktop.DBus.Properties"

/* The encryption session with the provider (session.c) and the client's half of its
 * Diffie-Hellman exchange. */
typedef struct CSecItemSession CSecItemSession;
typedef struct CSecItemSessionOffer CSecItemSessionOffer;

/* ---- connection.c: the bus, the session and the service -------------------- */

GDBusConnection *csecitem_connect(gint timeout_ms, gboolean *timed_out, GError **error);
CSecItemSession *csecitem_session_begin(GDBusConnection *connection, const char *alias, gint timeout_ms,
                                        gchar **alias_path, GError **alias_error, gboolean *timed_out,
                                        GError **error);
SecretService *csecitem_service_open(GDBusConnection *connection, const char *alias, gint timeout_ms,
                                     gchar **alias_path, GError **alias_error, gboolean *timed_out,
                                     GError **error);
void csecitem_service_set_timeout(SecretService *service, gint timeout_ms);

/* ---- session.c: the encryption session (libcrypto, not libsecret's) --------- */

/* The session's readings of what the provider sends, reached by the fuzz target
 * (Fuzz/SecItemFuzz, `secret-service-session`; docs/fuzzing.md) without a bus: the
 * provider's OpenSession reply and its GetSecrets reply, each as a serialized GVariant
 * (the bytes untrusted, as GDBus hands a message's body over), through the same code
 * the backend runs on the message. csecitem_secret_load first. */
/* The client's half of a new Diffie-Hellman exchange (NULL when there is no randomness). */
CSecItemSessionOffer *csecitem_session_offer_new(void);
void csecitem_session_offer_free(CSecItemSessionOffer *offer);
/* The offer's public value: 128 big-endian bytes into `out`. */
void csecitem_session_offer_public_value(const CSecItemSessionOffer *offer, guint8 *out);
/* OpenSession's reply, serialized "(vo)" → the session for `offer` (NULL: a plain one),
 * or NULL with *error set when the provider's value is refused. */
CSecItemSession *csecitem_session_read_reply(const CSecItemSessionOffer *offer, const guint8 *data, gsize length,
                                             GError **error);
/* A serialized "(vo)" reply holding `value` as a byte array ("ay") and session `path`
 * (g_free; *out_length set): what a provider that answers with `value` sends. */
guint8 *csecitem_session_reply_bytes(const guint8 *value, gsize length, const char *path, gsize *out_length);
/* GetSecrets' reply, serialized "(a{o(oayays)})" → path → secret (csecitem_secret_bytes;
 * g_hash_table_unref), with *undecodable the secrets this session could not open. */
GHashTable *csecitem_session_read_secrets(const CSecItemSession *session, const guint8 *data, gsize length,
                                          guint *undecodable);
/* A serialized GetSecrets reply holding secret i (`values[i]`, `lengths[i]` bytes) for
 * item `paths[i]`, each sealed for `session` (g_free; *out_length set; NULL when
 * sealing fails). */
guint8 *csecitem_session_secrets_bytes(const CSecItemSession *session, guint count, const char *const *paths,
                                       const guint8 *const *values, const gsize *lengths, gsize *out_length);
/* The session's object path. */
const gchar *csecitem_session_object_path(const CSecItemSession *session);
void csecitem_session_free(gpointer session);

/* ---- values.c: attribute tables, properties, secrets ---------------------- */

GHashTable *csecitem_strhash_new(void);
void csecitem_strhash_insert(GHashTable *table, const char *key, const char *value);
void csecitem_parse_properties(GVariant *props, gchar ***keys, gchar ***values, gchar **label, gboolean *locked);
SecretValue *csecitem_value_new(const void *bytes, gsize length);
const void *csecitem_secret_bytes(GHashTable *secrets, const char *item_path, gsize *length);
GQuark csecitem_io_error_quark(void);
GQuark csecitem_dbus_error_quark(void);
GQuark csecitem_secret_error_quark(void);

/* ---- calls.c: one method call each ----------------------------------------- */

gchar **csecitem_search(GDBusConnection *connection, const char *collection_path, GHashTable *attributes,
                        gint timeout_ms, GCancellable *cancellable, GError **error);
gboolean csecitem_item_properties(GDBusConnection *connection, const char *item_path, gint timeout_ms,
                                  GCancellable *cancellable, gchar ***keys, gchar ***values, gchar **label,
                                  gboolean *locked, GError **error);
gboolean csecitem_get_locked(GDBusConnection *connection, const char *path, const char *interface, gint timeout_ms,
                             GCancellable *cancellable, gboolean *locked, GError **error);
gchar *csecitem_create_item(const CSecItemSession *session, GDBusConnection *connection, const char *collection_path,
                            const char *label, GHashTable *attributes, const void *bytes, gsize length,
                            gint timeout_ms, GCancellable *cancellable, gchar **prompt, GError **error);
gboolean csecitem_delete_item(GDBusConnection *connection, const char *item_path, gint timeout_ms,
                              GCancellable *cancellable, gchar **prompt, GError **error);
gboolean csecitem_run_prompt(SecretService *service, const char *prompt_path, GCancellable *cancellable,
                             gchar **item_path, GError **error);

/* ---- pipelined.c: several calls sent at once, one round trip --------------- */

gchar **csecitem_search_checking_lock(GDBusConnection *connection, const char *collection_path,
                                      GHashTable *attributes, gboolean check_lock, gint timeout_ms,
                                      GCancellable *cancellable, gboolean *locked, GError **lock_error,
                                      GError **error);
void csecitem_read_items(const CSecItemSession *session, GDBusConnection *connection, const gchar *const *paths,
                         guint count, gboolean attributes_only, gint timeout_ms, GCancellable *cancellable,
                         GVariant **properties, GError **errors, GHashTable **secrets, GError **secrets_error,
                         guint *undecodable);
GHashTable *csecitem_get_secrets(const CSecItemSession *session, GDBusConnection *connection, const gchar *const *paths,
                                 gint timeout_ms, GCancellable *cancellable, guint *undecodable, GError **error);
void csecitem_item_write(const CSecItemSession *session, GDBusConnection *connection, const char *item_path,
                         gboolean set_secret, const void *bytes, gsize length, GHashTable *attributes,
                         const char *label, gint timeout_ms, GCancellable *cancellable, GError **errors);

/* ---- watch.c: the provider's signals, counted ------------------------------ */

typedef struct CSecItemWatch CSecItemWatch;

CSecItemWatch *csecitem_watch_start(GDBusConnection *connection, const char *collection_path, gint timeout_ms);
gint csecitem_watch_generation(CSecItemWatch *watch);
void csecitem_watch_stop(CSecItemWatch *watch);

/* ---- portal.c: the Flatpak Secret portal (org.freedesktop.portal.Secret) ---- */

/* What RetrieveSecret ended with. */
typedef enum {
    CSECITEM_PORTAL_OK = 0,
    /* Response 1: the user (or the portal backend) cancelled. */
    CSECITEM_PORTAL_CANCELLED = 1,
    /* Response 2, or another code: the portal ended the request otherwise. */
    CSECITEM_PORTAL_FAILED = 2,
    /* The call itself failed: *error says why (no portal, no Secret interface, …). */
    CSECITEM_PORTAL_CALL_ERROR = 3,
    /* No Response within the bound, or the secret did not arrive in it. */
    CSECITEM_PORTAL_TIMED_OUT = 4,
    /* The portal answered but wrote no secret, or one longer than the buffer. */
    CSECITEM_PORTAL_BAD_SECRET = 5,
} csecitem_portal_result;

/* Asks the portal on `connection` for this application's secret: RetrieveSecret
 * with the write end of a new pipe, then waits (at most `timeout_ms` in all) for the
 * Request's Response signal and reads the secret from the pipe into `out` (up to
 * `capacity` bytes; `*length` set). `*response` gets the Response code when one came. */
csecitem_portal_result csecitem_portal_retrieve_secret(GDBusConnection *connection, gint timeout_ms, guint8 *out,
                                                       gsize capacity, gsize *length, guint32 *response,
                                                       GError **error);

/* The step of csecitem_portal_retrieve_secret after the Response: reads the secret
 * from `fd` (the pipe's read end) to its end, within `timeout_ms`, into `out` (up to
 * `capacity` bytes; `*length` set). OK, TIMED_OUT, or BAD_SECRET (none, a read error,
 * more than `capacity`); `out` is zeroed unless OK. */
csecitem_portal_result csecitem_portal_read_secret(int fd, guint8 *out, gsize capacity, gint timeout_ms, gsize *length);

/* The portal's Secret interface version (its `version` property), without asking for
 * a secret: 0 and *error set when there is no portal or no Secret interface. */
guint32 csecitem_portal_secret_version(GDBusConnection *connection, gint timeout_ms, GError **error);

#endif
