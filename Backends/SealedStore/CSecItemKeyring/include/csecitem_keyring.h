#ifndef CSECITEM_KEYRING_H
#define CSECITEM_KEYRING_H
#include <stddef.h>

/*
 * The kernel key retention service (keyrings(7)), for the session key cache: a few
 * "user" keys in the calling user's keyring (@u), through add_key(2) and keyctl(2)
 * called with syscall(2), so nothing links libkeyutils. (Swift cannot call the
 * variadic syscall(2); that is why these are C.)
 *
 * Every function returns a non-negative value on success and -errno on failure:
 * -ENOKEY (no such key), -EKEYEXPIRED, -EKEYREVOKED, -EACCES, -EDQUOT (the user's key
 * quota is full), -ENOSYS (no keyrings, or a seccomp filter that refuses them).
 */

/*
 * Adds a "user" key named `description` holding `payload` to the user keyring,
 * replacing one of the same name in one step. Its permissions are
 * possessor and user only (no group, no other); it expires `timeout` seconds later.
 * It is made in the thread keyring and given its permissions and timeout there, then
 * linked into the user keyring: if the process dies half-way, the key goes with the
 * thread instead of staying without its timeout. Returns the key's serial number.
 */
long csecitem_keyring_store(const char *description, const void *payload, size_t length, unsigned timeout);

/* The serial number of the "user" key `description` in the user keyring. */
long csecitem_keyring_find(const char *description);

/*
 * Reads the payload of the "user" key `description` in the user keyring into
 * `buffer` (`capacity` bytes). Returns the payload's length, which may exceed
 * `capacity` (then only `capacity` bytes were read).
 */
long csecitem_keyring_read(const char *description, void *buffer, size_t capacity);

/* Invalidates (removes at once) the "user" key `description` of the user keyring. Returns 0. */
long csecitem_keyring_drop(const char *description);

/*
 * Invalidates every "user" key of the user keyring whose description starts with
 * `prefix`. Returns how many were.
 */
long csecitem_keyring_drop_prefix(const char *prefix);

#endif
