#include "csecitem_keyring.h"

#include <errno.h>
#include <linux/keyctl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* keyutils.h's permission bits (linux/keyctl.h does not define them). */
#define POS_ALL 0x3f000000u /* view, read, write, search, link, setattr */
#define USR_ALL 0x003f0000u

static const char key_type[] = "user";

static long result(long rc) { return rc < 0 ? -errno : rc; }

static long keyctl2(int op, unsigned long a2) { return result(syscall(SYS_keyctl, op, a2, 0UL, 0UL, 0UL)); }

static long keyctl3(int op, unsigned long a2, unsigned long a3) {
    return result(syscall(SYS_keyctl, op, a2, a3, 0UL, 0UL));
}

static long keyctl4(int op, unsigned long a2, unsigned long a3, unsigned long a4) {
    return result(syscall(SYS_keyctl, op, a2, a3, a4, 0UL));
}

long csecitem_keyring_store(const char *description, const void *payload, size_t length, unsigned timeout) {
    long id = result(syscall(SYS_add_key, key_type, description, payload, length, (long)KEY_SPEC_THREAD_KEYRING));
    if (id < 0) return id;
    long rc = keyctl3(KEYCTL_SETPERM, (unsigned long)id, POS_ALL | USR_ALL);
    if (rc == 0) rc = keyctl3(KEYCTL_SET_TIMEOUT, (unsigned long)id, timeout);
    /* Linking displaces a key of the same type and description: the replacement is one step. */
    if (rc == 0) rc = keyctl3(KEYCTL_LINK, (unsigned long)id, (unsigned long)(long)KEY_SPEC_USER_KEYRING);
    keyctl3(KEYCTL_UNLINK, (unsigned long)id, (unsigned long)(long)KEY_SPEC_THREAD_KEYRING);
    if (rc < 0) {
        keyctl2(KEYCTL_INVALIDATE, (unsigned long)id);
        return rc;
    }
    return id;
}

long csecitem_keyring_find(const char *description) {
    return keyctl4(KEYCTL_SEARCH, (unsigned long)(long)KEY_SPEC_USER_KEYRING, (unsigned long)key_type,
                   (unsigned long)description);
}

long csecitem_keyring_read(const char *description, void *buffer, size_t capacity) {
    long id = csecitem_keyring_find(description);
    if (id < 0) return id;
    return keyctl4(KEYCTL_READ, (unsigned long)id, (unsigned long)buffer, capacity);
}

static long drop(long id) {
    long rc = keyctl2(KEYCTL_INVALIDATE, (unsigned long)id);
    if (rc == -EOPNOTSUPP || rc == -EINVAL)  /* a kernel before 3.5 */
        rc = keyctl3(KEYCTL_UNLINK, (unsigned long)id, (unsigned long)(long)KEY_SPEC_USER_KEYRING);
    return rc;
}

long csecitem_keyring_drop(const char *description) {
    long id = csecitem_keyring_find(description);
    return id < 0 ? id : drop(id);
}

long csecitem_keyring_drop_prefix(const char *prefix) {
    /* The user keyring's contents: an array of serial numbers, read until it fits. */
    int32_t *ids = NULL;
    long capacity = 64 * (long)sizeof(int32_t), size = 0;
    for (int attempt = 0; attempt < 4; attempt++) {
        int32_t *grown = realloc(ids, (size_t)capacity);
        if (grown == NULL) {
            free(ids);
            return -ENOMEM;
        }
        ids = grown;
        size = keyctl4(KEYCTL_READ, (unsigned long)(long)KEY_SPEC_USER_KEYRING, (unsigned long)ids,
                       (unsigned long)capacity);
        if (size < 0 || size <= capacity) break;
        capacity = size; /* it grew meanwhile: read again with room for all */
    }
    if (size < 0) {
        free(ids);
        return size;
    }
    if (size > capacity) size = capacity;
    long dropped = 0;
    size_t prefix_length = strlen(prefix);
    char text[512];
    for (size_t i = 0; i < (size_t)size / sizeof(int32_t); i++) {
        /* "type;uid;gid;perm;description" */
        long n = keyctl4(KEYCTL_DESCRIBE, (unsigned long)(long)ids[i], (unsigned long)text, sizeof text);
        if (n <= 0 || (size_t)n > sizeof text) continue;
        text[sizeof text - 1] = 0;
        if (strncmp(text, "user;", 5) != 0) continue;
        const char *description = text;
        for (int fields = 0; fields < 4 && description; fields++) {
            description = strchr(description, ';');
            if (description) description++;
        }
        if (description == NULL || strncmp(description, prefix, prefix_length) != 0) continue;
        if (drop(ids[i]) == 0) dropped++;
    }
    free(ids);
    return dropped;
}
