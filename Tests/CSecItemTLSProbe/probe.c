#include "secitem_tls_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "csecitem_keys.h"

static int fail(char *message, size_t size, const char *what) {
    unsigned long code = ERR_get_error();
    char detail[256] = "";
    if (code != 0) ERR_error_string_n(code, detail, sizeof detail);
    snprintf(message, size, "%s %s", what, detail);
    return -1;
}

int secitem_tls_probe(int port, const unsigned char *cert_der, size_t cert_length, int key_type,
                      const unsigned char *key, size_t key_length, const char *ca_pem_path, const char *line,
                      char *reply, size_t reply_size, char *message, size_t message_size) {
    int result = -1;
    int fd = -1;
    SSL *ssl = NULL;
    csk_key *client_key = csk_import(key_type, 1, key, key_length);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (client_key == NULL) return fail(message, message_size, "the key does not load");
    if (ctx == NULL) {
        fail(message, message_size, "SSL_CTX_new");
        goto done;
    }
    if (SSL_CTX_use_certificate_ASN1(ctx, (int)cert_length, cert_der) != 1) {
        fail(message, message_size, "client certificate");
        goto done;
    }
    /* A csk_key is an EVP_PKEY (csecitem_keys.c); SSL_CTX takes its own reference. */
    if (SSL_CTX_use_PrivateKey(ctx, (EVP_PKEY *)(void *)client_key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        fail(message, message_size, "client key");
        goto done;
    }
    if (SSL_CTX_load_verify_locations(ctx, ca_pem_path, NULL) != 1) {
        fail(message, message_size, "CA file");
        goto done;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        snprintf(message, message_size, "connect to 127.0.0.1:%d failed", port);
        goto done;
    }
    ssl = SSL_new(ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || SSL_set1_host(ssl, "localhost") != 1) {
        fail(message, message_size, "SSL_new");
        goto done;
    }
    if (SSL_connect(ssl) != 1) {
        fail(message, message_size, "handshake");
        goto done;
    }
    size_t length = strlen(line);
    if (SSL_write(ssl, line, (int)length) != (int)length) {
        fail(message, message_size, "write");
        goto done;
    }
    size_t used = 0;
    while (used + 1 < reply_size) {
        int n = SSL_read(ssl, reply + used, (int)(reply_size - 1 - used));
        if (n <= 0) break;
        used += (size_t)n;
        if (memchr(reply, '\n', used) != NULL) break;
    }
    reply[used] = 0;
    if (used == 0) {
        fail(message, message_size, "no reply (did the server refuse the client certificate?)");
        goto done;
    }
    result = 0;
done:
    if (ssl != NULL) {
        SSL_shutdown(ssl);
        SSL_free(ssl);
    }
    if (fd >= 0) close(fd);
    SSL_CTX_free(ctx);
    csk_key_free(client_key);
    return result;
}
