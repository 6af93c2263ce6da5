#ifndef SECITEM_TLS_PROBE_H
#define SECITEM_TLS_PROBE_H
#include <stddef.h>

/*
 * A TLS client for the tests (issue 25): connects to 127.0.0.1:port, presents the client
 * certificate (DER) and its private key (Apple's external representation, key_type 73 EC or
 * 42 RSA, loaded through CSecItemKeys), trusts only ca_pem, sends `line` and reads the reply
 * into reply. Returns 0 when the handshake (with the server verifying the client) and the
 * exchange succeeded, else -1 with a message in `message`.
 */
int secitem_tls_probe(int port, const unsigned char *cert_der, size_t cert_length, int key_type,
                      const unsigned char *key, size_t key_length, const char *ca_pem_path, const char *line,
                      char *reply, size_t reply_size, char *message, size_t message_size);
#endif
