/* SPDX-License-Identifier: BSD-3-Clause */
/* A node process that a benchmark drives over lines: its stdin takes the
 * requests, its stdout gives the answers (its stderr is the benchmark's).
 * Nothing here ends the program: failures are returned for the caller to
 * report. */
#ifndef RESPLOCK_BENCH_NODE_H
#define RESPLOCK_BENCH_NODE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct bench_node {
    pid_t pid;
    FILE *in, *out; /* its stdin, its stdout */
} bench_node;

/* Runs prog (node) on script js with one argument, the server's port,
 * NODE_PATH modules, and reads its first line into line[0..cap).  0, or
 * -1 with the reason in why[0..wcap) (its own message, if any, on
 * stderr). */
static inline int bench_node_start(bench_node *np, const char *prog, const char *js,
                                   const char *modules, int port, char *line, size_t cap,
                                   char *why, size_t wcap)
{
    char arg[16];
    snprintf(arg, sizeof arg, "%d", port);
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC) != 0) goto sys;
    if (pipe2(from, O_CLOEXEC) != 0) {
        close(to[0]);
        close(to[1]);
        goto sys;
    }
    fflush(NULL);
    np->pid = fork();
    if (np->pid < 0) goto sys;
    if (np->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        setenv("NODE_PATH", modules, 1);
        execlp(prog, "node", js, arg, (char *)NULL);
        fprintf(stderr, "cannot run %s: %s\n", prog, strerror(errno));
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    np->in = fdopen(to[1], "w");
    np->out = fdopen(from[0], "r");
    if (!np->in || !np->out || !fgets(line, (int)cap, np->out)) {
        snprintf(why, wcap, "the node process did not start (see its message above)");
        return -1;
    }
    return 0;
sys:
    snprintf(why, wcap, "starting node: %s", strerror(errno));
    return -1;
}

/* Closes its stdin (its EOF ends it) and waits for it: 0 when it exited
 * 0. */
static inline int bench_node_stop(bench_node *np)
{
    int st;
    fclose(np->in);
    fclose(np->out);
    if (waitpid(np->pid, &st, 0) != np->pid) return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

#endif
