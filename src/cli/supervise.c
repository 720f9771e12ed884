/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The supervisor of `resplock run`: a dead man's switch for the job.
 *
 * resplock renews the lock; if resplock is killed, stopped or starved of
 * CPU, nobody renews it and the job must not outlive the lock's validity.
 * A small process forked before anything else is allocated learns from a
 * pipe the job's process group and, after every renewal, the time by
 * which the job must have been sent SIGTERM.  When that time passes with
 * no newer one, or the pipe closes without "done" (resplock died), it
 * stops the whole group: SIGTERM, then SIGKILL --kill-after later, still
 * before the validity ends.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HAVE_CLOSE_RANGE
#include <sys/syscall.h>
/* musl has the system call but no wrapper; failing sends the caller to
 * its close() loop. */
static int close_range(unsigned first, unsigned last, int flags)
{
#ifdef SYS_close_range
    return (int)syscall(SYS_close_range, first, last, flags);
#else
    errno = ENOSYS;
    return -1;
#endif
}
#endif

/* One message: whole, since a pipe write of at most PIPE_BUF bytes is. */
typedef struct sup_msg {
    int64_t kind;
    int64_t value;
} sup_msg;

enum { MSG_JOB = 1, MSG_DEADLINE, MSG_DONE };

int64_t cli_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void stop_group(pid_t pgid, const char *why)
{
    cli_err("supervisor: %s; stopping the job (process group %d)", why, (int)pgid);
    kill(-pgid, SIGTERM);
}

/* Descriptors the caller gave resplock would be held open by a
 * supervisor that outlives it (a pipe's reader would not see its end).
 * Returns where the pipe now is. */
static int close_others(int keep)
{
    if (keep < 3) keep = fcntl(keep, F_DUPFD, 3);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        if (null > 2 && null != keep) close(null);
    }
    if (close_range(3, (unsigned)keep - 1, 0) != 0 || close_range((unsigned)keep + 1, ~0U, 0) != 0) {
        /* The descriptor limit, as sysconf(_SC_OPEN_MAX) gives it (which
         * drags a table of every sysconf name into the static command). */
        struct rlimit lim;
        int max = getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur > 65536
                      ? 65536 : (int)lim.rlim_cur;
        for (int fd = 3; fd < max; fd++)
            if (fd != keep) close(fd);
    }
    return keep;
}

static void supervise(int fd, int64_t kill_after_ms)
{
    pid_t pgid = 0;
    int64_t stop_at = -1, kill_at = -1;
    int open_pipe = 1;
    sup_msg buf[8];
    size_t have = 0;
    for (;;) {
        int64_t now = cli_mono_ms();
        if (pgid > 0 && kill_at < 0 && stop_at >= 0 && now >= stop_at) {
            stop_group(pgid, "the lock was not renewed in time");
            kill_at = stop_at + kill_after_ms;
        }
        if (kill_at >= 0 && now >= kill_at) {
            kill(-pgid, SIGKILL);
            _exit(CLI_SUPERVISOR_ACTED);
        }
        int64_t wake = kill_at >= 0 ? kill_at : pgid > 0 ? stop_at : -1;
        int64_t left = wake - now;
        int timeout = wake < 0 ? -1 : left < 0 ? 0 : left > 60000 ? 60000 : (int)left;
        struct pollfd p = {open_pipe ? fd : -1, POLLIN, 0};
        if (poll(&p, 1, timeout) <= 0) continue;
        ssize_t n = read(fd, (char *)buf + have, sizeof buf - have);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
            open_pipe = 0;
            if (pgid <= 0) _exit(0); /* resplock died before starting the job */
            if (kill_at < 0) stop_group(pgid, "resplock is gone");
            /* Never later than the SIGKILL the last deadline allowed. */
            int64_t by = cli_mono_ms() + kill_after_ms;
            if (kill_at < 0 || by < kill_at) kill_at = by;
            if (stop_at >= 0 && stop_at + kill_after_ms < kill_at) kill_at = stop_at + kill_after_ms;
            continue;
        }
        have += (size_t)n;
        size_t whole = have / sizeof *buf;
        for (size_t i = 0; i < whole; i++) {
            if (buf[i].kind == MSG_JOB) pgid = (pid_t)buf[i].value;
            else if (buf[i].kind == MSG_DEADLINE) stop_at = buf[i].value;
            else if (buf[i].kind == MSG_DONE) _exit(kill_at >= 0 ? CLI_SUPERVISOR_ACTED : 0);
        }
        have -= whole * sizeof *buf;
        memmove(buf, (char *)buf + whole * sizeof *buf, have);
    }
}

int cli_supervisor_start(cli_supervisor *s, int64_t kill_after_ms)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        /* Out of resplock's group, so that what is sent to that group
         * (SIGSTOP of a whole job of the shell's, a terminal's signals)
         * does not reach the switch. */
        setpgid(0, 0);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGTTOU, SIG_IGN);
        close(p[1]);
        supervise(close_others(p[0]), kill_after_ms);
    }
    close(p[0]);
    /* resplock never waits on the switch: a message that does not fit
     * is dropped, and the switch then acts on an earlier deadline. */
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    s->pid = pid;
    s->fd = p[1];
    s->reaped = 0;
    s->wstatus = 0;
    return 0;
}

static int send_msg(cli_supervisor *s, int64_t kind, int64_t value)
{
    sup_msg m = {kind, value};
    if (s->fd < 0) return -1;
    return write(s->fd, &m, sizeof m) == (ssize_t)sizeof m ? 0 : -1;
}

int cli_supervisor_job(cli_supervisor *s, pid_t pgid) { return send_msg(s, MSG_JOB, pgid); }

int cli_supervisor_deadline(cli_supervisor *s, int64_t stop_at_ms)
{
    return send_msg(s, MSG_DEADLINE, stop_at_ms);
}

int cli_supervisor_reaped(cli_supervisor *s, pid_t pid, int wstatus)
{
    if (pid != s->pid || s->reaped) return 0;
    s->reaped = 1;
    s->wstatus = wstatus;
    return 1;
}

int cli_supervisor_finish(cli_supervisor *s)
{
    send_msg(s, MSG_DONE, 0);
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    while (!s->reaped) {
        int st;
        pid_t r = waitpid(s->pid, &st, 0);
        if (r == s->pid) cli_supervisor_reaped(s, r, st);
        else if (r < 0 && errno != EINTR) return -1;
    }
    if (WIFEXITED(s->wstatus)) return WEXITSTATUS(s->wstatus);
    return -1;
}
