#ifndef CSECITEM_LIBSECRET_INTERNAL_H
#define CSECITEM_LIBSECRET_INTERNAL_H
/* Shared by this target's .c files; not part of the public header. */
#include "CSecItemLibsecret.h"

GVariant *csecitem_attributes_variant(GHashTable *attributes);

#endif
