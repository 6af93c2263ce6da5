#ifndef CSECITEM_LIBSECRET_SYSTEM_SHIM_H
#define CSECITEM_LIBSECRET_SYSTEM_SHIM_H

/* libsecret-1 and GIO as the system provides them (pkg-config libsecret-1): the
 * include paths and link flags for CSecItemLibsecret, which holds our C code.
 *
 * The D-Bus-path API of libsecret (secret-paths.h) is marked "subject to
 * change" but has been stable since 0.18 and is what secret-tool itself uses.
 * It lets the backend work on object paths without building SecretItem /
 * SecretCollection proxies (8-10 D-Bus round trips each). */
#ifndef SECRET_API_SUBJECT_TO_CHANGE
#define SECRET_API_SUBJECT_TO_CHANGE 1
#endif
#include <libsecret/secret.h>
#include <gio/gio.h>

#endif
