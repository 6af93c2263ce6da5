#ifndef CSECITEM_LIBSECRET_SHIM_H
#define CSECITEM_LIBSECRET_SHIM_H
#include <libsecret/secret.h>
#endif
