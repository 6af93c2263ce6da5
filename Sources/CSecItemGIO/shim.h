// GIO (GDBus) for the C D-Bus client of SecItemPolkit. The flags come from
// pkg-config gio-2.0; GIO is already on every machine that has libsecret.
#ifndef CSECITEMGIO_SHIM_H
#define CSECITEMGIO_SHIM_H
#include <gio/gio.h>
#endif
