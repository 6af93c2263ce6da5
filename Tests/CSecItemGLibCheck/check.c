/* CSecItemGLib's declarations against the real headers (see include/CSecItemGLibCheck.h).
 * CSecItemGLib.h, read with CSECITEM_GLIB_CHECK, repeats its typedefs (which C11 accepts only
 * when they name the same types) and skips its enumerations, structures and wrappers, which
 * are compared here instead: each function's type, each enumerator's value, each structure's
 * size and the fields the code reads. */
#define SECRET_API_SUBJECT_TO_CHANGE 1
#include <libsecret/secret.h>
#include <gio/gio.h>
#include <gio/gunixfdlist.h>
#include <glib-unix.h>
#include <stddef.h>

#define CSECITEM_GLIB_CHECK 1
#include "../../Sources/CSecItemGLib/include/CSecItemGLib.h"

/* The encryption session's libgcrypt calls (Backends/SecretService/CSecItemLibsecret/gcrypt_api.h). */
#include <gcrypt.h>
#define CSECITEM_GCRYPT_CHECK 1
#include "../../Backends/SecretService/CSecItemLibsecret/gcrypt_api.h"
#define CHECK_GCRYPT(type, name, parameters) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), type(*) parameters), #name " is declared otherwise in gcrypt.h");
CSECITEM_GCRYPT_FUNCTIONS(CHECK_GCRYPT)
_Static_assert(CSECITEM_GCRY_CIPHER_AES128 == GCRY_CIPHER_AES128 && CSECITEM_GCRY_CIPHER_MODE_CBC == GCRY_CIPHER_MODE_CBC
                   && CSECITEM_GCRY_MD_SHA256 == GCRY_MD_SHA256 && CSECITEM_GCRY_MD_FLAG_HMAC == GCRY_MD_FLAG_HMAC,
               "libgcrypt's constants");

#include "CSecItemGLibCheck.h"

#define CHECK(type, name, parameters, arguments) \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), type(*) parameters), #name " is declared otherwise in GLib's headers");
#define CHECK_VOID(name, parameters, arguments) CHECK(void, name, parameters, arguments)
CSECITEM_GLIB_FUNCTIONS(CHECK, CHECK_VOID)
CSECITEM_SECRET_FUNCTIONS(CHECK, CHECK_VOID)

#define CHECK_CONSTANT(type, name, value)                                                   \
    _Static_assert((long)(name) == (value), #name " has another value in GLib's headers"); \
    _Static_assert(sizeof(type) == sizeof(int), #type " is not an int-sized enumeration");
CSECITEM_GLIB_CONSTANTS(CHECK_CONSTANT)
/* Signedness, as CSecItemGLib.h's enumerations get it from their enumerators. */
_Static_assert(__builtin_types_compatible_p(GBusType, int), "GBusType is signed (G_BUS_TYPE_STARTER)");
#define UNSIGNED(type) _Static_assert(__builtin_types_compatible_p(type, unsigned int), #type " is unsigned");
UNSIGNED(GDBusCallFlags) UNSIGNED(GDBusSignalFlags) UNSIGNED(GDBusConnectionFlags) UNSIGNED(GDBusMessageType)
UNSIGNED(GChecksumType) UNSIGNED(GIOErrorEnum) UNSIGNED(GDBusError) UNSIGNED(SecretError) UNSIGNED(SecretServiceFlags)
UNSIGNED(SecretItemCreateFlags) UNSIGNED(SecretSearchFlags)

_Static_assert(G_MAXINT == 2147483647 && G_MAXUINT32 == 0xffffffffU && G_SOURCE_REMOVE == 0 && TRUE == 1, "GLib's limits");
_Static_assert(sizeof(GVariantIter) == 16 * sizeof(gsize), "GVariantIter");
_Static_assert(sizeof(GVariantBuilder) == 16 * sizeof(gsize), "GVariantBuilder");
_Static_assert(sizeof(GHashTableIter) == 3 * sizeof(gpointer) + 2 * sizeof(int) + sizeof(gpointer), "GHashTableIter");
_Static_assert(sizeof(GMutex) == sizeof(gpointer) && sizeof(GCond) == sizeof(gpointer) + 2 * sizeof(guint), "GMutex, GCond");
_Static_assert(offsetof(GError, domain) == 0 && offsetof(GError, code) == 4 && offsetof(GError, message) == 8
                   && sizeof(GError) == 16, "GError");
_Static_assert(offsetof(GList, data) == 0 && offsetof(GList, next) == 8 && offsetof(GList, prev) == 16, "GList");

#define COUNT(type, name, parameters, arguments) +1
#define COUNT_VOID(name, parameters, arguments) +1
int csecitem_glib_checked_functions(void) {
    return 0 CSECITEM_GLIB_FUNCTIONS(COUNT, COUNT_VOID) CSECITEM_SECRET_FUNCTIONS(COUNT, COUNT_VOID);
}
