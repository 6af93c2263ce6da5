#ifndef CSECITEM_LIBSECRET_INTERNAL_H
#define CSECITEM_LIBSECRET_INTERNAL_H
/* Shared by this target's .c files; not part of the public header. */
#include "CSecItemLibsecret.h"

GVariant *csecitem_attributes_variant(GHashTable *attributes);
const char *csecitem_content_type(const void *bytes, gsize length);

/* session.c: the encryption session, with libcrypto (see there). The types and the
 * readings of provider bytes are in the public header (the fuzz target reaches them). */
GVariant *csecitem_session_offer_parameters(const CSecItemSessionOffer *offer);
CSecItemSession *csecitem_session_from_reply(const CSecItemSessionOffer *offer, GVariant *reply, GError **error);
SecretValue *csecitem_session_open(const CSecItemSession *session, GVariant *encoded);
GVariant *csecitem_session_seal(const CSecItemSession *session, const void *bytes, gsize length,
                                const char *content_type);
GHashTable *csecitem_session_open_all(const CSecItemSession *session, GVariant *reply, guint *undecodable);

#endif
