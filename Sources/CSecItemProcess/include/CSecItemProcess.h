#ifndef CSECITEM_PROCESS_H
#define CSECITEM_PROCESS_H
/* Process hardening for the `secitem` command (docs/cli.md, "The process").
 *
 * These live in C because prctl is variadic (Swift cannot call it) and because a
 * signal handler must only do async-signal-safe work: restore the terminal and
 * re-raise. Nothing here allocates. */
#include <stddef.h>

/* Turns core dumps off for this process: prctl(PR_SET_DUMPABLE, 0) (also keeps
 * other processes of the same user from ptrace-attaching and from reading
 * /proc/PID/mem and /proc/PID/environ) and RLIMIT_CORE 0 (soft and hard).
 * Returns 0, or the errno of the first call that failed. */
int csecitem_process_harden(void);

/* Tells libcrypto (OpenSSL) not to register its exit-time cleanup: a one-shot
 * command's memory goes back with the process, and the cleanup (freeing every
 * provider and algorithm table) is a quarter of a millisecond at each exit. Must
 * run before any other OpenSSL call; costs nothing else (no configuration is read). */
void csecitem_process_short_lived(void);

/* PR_GET_DUMPABLE: 0 when core dumps are off. */
int csecitem_process_dumpable(void);

/* The soft RLIMIT_CORE in bytes (-1 when unlimited, -2 on error). */
long long csecitem_process_core_limit(void);

/* Turns echo off on terminal `fd` for a hidden prompt, remembering its state.
 * Until csecitem_prompt_end, SIGINT, SIGTERM, SIGHUP and SIGQUIT restore the
 * remembered state before the process ends with the signal's default action.
 * Returns 0, or -1 when `fd` is not a terminal (nothing changed). */
int csecitem_prompt_begin(int fd);

/* Restores the terminal and the previous signal dispositions. */
void csecitem_prompt_end(void);

/* Zeroes `count` bytes at `bytes` in a way the compiler may not remove. */
void csecitem_wipe(void *bytes, size_t count);

#endif
