/* Runs one command and reports its wall time and peak memory, for the CLI table of
 * SecItemBenchmarks (`--filter cli`, Benchmarks/SecItemBenchmarks/CLIStartupBenchmarks.swift).
 *
 *   spawn_measure REPORT COMMAND [ARGUMENTS…]
 *
 * The child's standard streams pass through; one line
 * "NANOSECONDS MAXRSS_KIB STATUS USER_US SYSTEM_US" is written to the file REPORT: wall
 * time, peak memory, exit status, and the CPU time the command used in user and kernel
 * mode (from wait4, so a loaded machine, which stretches wall time, still gives a CPU
 * time that compares across programs). The fork happens here, in a process of about 1 MiB, so the
 * child's ru_maxrss (which counts the memory it had between fork and exec) is the
 * command's own peak, not the harness's (the benchmark process, tens to hundreds of MiB). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t pid = fork();
    if (pid < 0) return 2;
    if (pid == 0) {
        execv(argv[2], argv + 2);
        _exit(127);
    }
    int status;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) != pid) return 2;
    clock_gettime(CLOCK_MONOTONIC, &end);
    long long ns = (long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec);
    FILE *report = fopen(argv[1], "w");
    if (report == NULL) return 2;
    fprintf(report, "%lld %ld %d %lld %lld\n", ns, usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
            (long long)usage.ru_utime.tv_sec * 1000000LL + usage.ru_utime.tv_usec,
            (long long)usage.ru_stime.tv_sec * 1000000LL + usage.ru_stime.tv_usec);
    return fclose(report) == 0 ? 0 : 2;
}
