#ifndef CSECITEM_LIBSECRET_INTERNAL_H
#define CSECITEM_LIBSECRET_INTERNAL_H
/* Shared by this target's .c files; not part of the public header. */
#include "CSecItemLibsecret.h"

GVariant *csecitem_attributes_variant(GHashTable *attributes);
const char *csecitem_content_type(const void *bytes, gsize length);

/* session.c: the encryption session, with libcrypto (see there). */
typedef struct CSecItemSession CSecItemSession;
typedef struct CSecItemSessionOffer CSecItemSessionOffer;
CSecItemSessionOffer *csecitem_session_offer_new(void);
void csecitem_session_offer_free(CSecItemSessionOffer *offer);
GVariant *csecitem_session_offer_parameters(const CSecItemSessionOffer *offer);
gboolean csecitem_session_accept(SecretService *service, const CSecItemSessionOffer *offer, GVariant *reply,
                                 GError **error);
SecretValue *csecitem_session_decode(SecretService *service, GVariant *encoded);
GVariant *csecitem_session_encode(SecretService *service, const void *bytes, gsize length, const char *content_type);

#endif
