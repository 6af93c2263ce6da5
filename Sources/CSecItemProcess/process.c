#define _GNU_SOURCE
#include "CSecItemProcess.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <termios.h>
#include <unistd.h>

int csecitem_process_harden(void) {
    int result = 0;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) result = errno;
    struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0 && result == 0) result = errno;
    return result;
}

void csecitem_process_short_lived(void) { (void)OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL); }

int csecitem_process_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

long long csecitem_process_core_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_CORE, &limit) != 0) return -2;
    if (limit.rlim_cur == RLIM_INFINITY) return -1;
    return (long long)limit.rlim_cur;
}

/* The prompt's state, read by the signal handler. */
static const int prompt_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define PROMPT_SIGNAL_COUNT (sizeof prompt_signals / sizeof prompt_signals[0])
static struct termios prompt_saved;
static struct sigaction prompt_previous[PROMPT_SIGNAL_COUNT];
static volatile sig_atomic_t prompt_fd = -1;
static int prompt_installed = 0;
static sigset_t prompt_previous_mask;

static void prompt_restore_on_signal(int signal_number) {
    int saved_errno = errno;
    int fd = prompt_fd;
    if (fd >= 0) {
        tcsetattr(fd, TCSAFLUSH, &prompt_saved);
        /* The user's Enter never came: end the prompt's line. */
        ssize_t ignored = write(STDERR_FILENO, "\n", 1);
        (void)ignored;
        prompt_fd = -1;
    }
    /* End as the signal would have without us (the shell sees "killed by SIGINT"). */
    signal(signal_number, SIG_DFL);
    errno = saved_errno;
    raise(signal_number);
}

int csecitem_prompt_begin(int fd) {
    if (tcgetattr(fd, &prompt_saved) != 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = prompt_restore_on_signal;
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < PROMPT_SIGNAL_COUNT; i++) sigaddset(&action.sa_mask, prompt_signals[i]);
    prompt_fd = fd;
    for (size_t i = 0; i < PROMPT_SIGNAL_COUNT; i++) sigaction(prompt_signals[i], &action, &prompt_previous[i]);
    /* A parent may have left them blocked (test runners do): the prompt must be interruptible. */
    pthread_sigmask(SIG_UNBLOCK, &action.sa_mask, &prompt_previous_mask);
    prompt_installed = 1;
    struct termios quiet = prompt_saved;
    quiet.c_lflag &= ~(tcflag_t)ECHO;
    quiet.c_lflag |= (tcflag_t)ECHONL;
    if (tcsetattr(fd, TCSAFLUSH, &quiet) != 0) {
        csecitem_prompt_end();
        return -1;
    }
    return 0;
}

void csecitem_prompt_end(void) {
    if (!prompt_installed) return;
    prompt_installed = 0;
    int fd = prompt_fd;
    if (fd >= 0) tcsetattr(fd, TCSAFLUSH, &prompt_saved);
    prompt_fd = -1;
    pthread_sigmask(SIG_SETMASK, &prompt_previous_mask, NULL);
    for (size_t i = 0; i < PROMPT_SIGNAL_COUNT; i++) sigaction(prompt_signals[i], &prompt_previous[i], NULL);
}

void csecitem_wipe(void *bytes, size_t count) {
    if (bytes != NULL && count > 0) explicit_bzero(bytes, count);
}
