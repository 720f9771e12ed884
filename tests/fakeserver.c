/* SPDX-License-Identifier: BSD-3-Clause */
/* Scripted servers for tests: see fakeserver.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, pipe2 */
#endif
#include "fakeserver.h"
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_ARGS 64

struct fake_server {
    int listen_fd, port;
    int stop_pipe[2]; /* readable once stopping: every wait watches it */
    fake_behaviour fn;
    void *arg;
    pthread_t acceptor;
    pthread_mutex_t lock;
    pthread_t *threads;
    size_t nthreads, cap;
    int accepted;
    size_t received;
};

struct fake_conn {
    fake_server *fs;
    int fd;
    char buf[65536]; /* unparsed input */
    size_t len;
    char *argv[MAX_ARGS + 1];
    char *args; /* storage for argv */
};

/* Waits for events on fd, or stop, up to ms (-1: none).  1 ready, 0
 * timeout, -1 stopping or error. */
static int wait_fd(fake_server *fs, int fd, short events, int ms)
{
    int64_t deadline = ms < 0 ? -1 : ts_now_ms() + ms;
    for (;;) {
        struct pollfd p[2];
        int left = deadline < 0 ? -1 : (int)(deadline - ts_now_ms()), r;
        if (deadline >= 0 && left < 0) left = 0;
        p[0].fd = fs->stop_pipe[0];
        p[0].events = POLLIN;
        p[1].fd = fd;
        p[1].events = events;
        p[0].revents = p[1].revents = 0;
        r = poll(p, fd >= 0 ? 2 : 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 || p[0].revents) return -1;
        if (r > 0) return 1;
        if (deadline >= 0 && ts_now_ms() >= deadline) return 0;
    }
}

int fake_fd(fake_conn *c)
{
    return c->fd;
}

int fake_pause(fake_conn *c, int ms)
{
    return wait_fd(c->fs, -1, 0, ms) == 0 ? 0 : -1;
}

int fake_send(fake_conn *c, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t r = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0) {
            p += r;
            n -= (size_t)r;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_fd(c->fs, c->fd, POLLOUT, -1) < 0) return -1;
        } else {
            return -1;
        }
    }
    return 0;
}

int fake_send_str(fake_conn *c, const char *s)
{
    return fake_send(c, s, strlen(s));
}

ssize_t fake_recv(fake_conn *c, void *buf, size_t n, int ms)
{
    for (;;) {
        ssize_t r = recv(c->fd, buf, n, MSG_DONTWAIT);
        if (r >= 0) {
            if (r > 0) {
                pthread_mutex_lock(&c->fs->lock);
                c->fs->received += (size_t)r;
                pthread_mutex_unlock(&c->fs->lock);
            }
            return r;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
        if (wait_fd(c->fs, c->fd, POLLIN, ms) <= 0) return -1;
    }
}

void fake_hold(fake_conn *c)
{
    char buf[4096];
    while (fake_recv(c, buf, sizeof buf, -1) > 0)
        ;
}

/* Parses "*N\r\n" then N "$len\r\nbytes\r\n" from c->buf.  >0 argc and
 * consumed bytes in *used; 0 incomplete; -1 not a command. */
static int parse_command(fake_conn *c, size_t *used)
{
    const char *p = c->buf, *end = c->buf + c->len, *nl;
    long argc, i, blen;
    size_t total = 0;
    char *store;

    if (c->len == 0) return 0;
    if (*p != '*') return -1;
    nl = memchr(p, '\n', c->len);
    if (!nl) return c->len > 32 ? -1 : 0;
    argc = strtol(p + 1, NULL, 10);
    if (argc < 1 || argc > MAX_ARGS) return -1;
    p = nl + 1;
    /* First pass: find the end and the room needed. */
    for (i = 0; i < argc; i++) {
        if (p >= end) return 0;
        if (*p != '$') return -1;
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) return (end - p) > 32 ? -1 : 0;
        blen = strtol(p + 1, NULL, 10);
        if (blen < 0 || blen > (long)sizeof c->buf) return -1;
        p = nl + 1;
        if (end - p < blen + 2) return 0;
        total += (size_t)blen + 1;
        p += blen + 2;
    }
    *used = (size_t)(p - c->buf);
    free(c->args);
    c->args = store = malloc(total);
    if (!store) return -1;
    p = (const char *)memchr(c->buf, '\n', c->len) + 1;
    for (i = 0; i < argc; i++) {
        nl = memchr(p, '\n', (size_t)(end - p));
        blen = strtol(p + 1, NULL, 10);
        p = nl + 1;
        memcpy(store, p, (size_t)blen);
        store[blen] = '\0';
        c->argv[i] = store;
        store += blen + 1;
        p += blen + 2;
    }
    c->argv[argc] = NULL;
    return (int)argc;
}

int fake_read_command(fake_conn *c, char ***argv, int ms, int *bad)
{
    int64_t deadline = ms < 0 ? -1 : ts_now_ms() + ms;
    if (bad) *bad = 0;
    for (;;) {
        size_t used = 0;
        ssize_t r;
        int argc = parse_command(c, &used);
        if (argc > 0) {
            memmove(c->buf, c->buf + used, c->len - used);
            c->len -= used;
            *argv = c->argv;
            return argc;
        }
        if (argc < 0 || c->len == sizeof c->buf) {
            if (bad) *bad = 1;
            return -1;
        }
        r = fake_recv(c, c->buf + c->len, sizeof c->buf - c->len,
                      deadline < 0 ? -1 : (int)(deadline - ts_now_ms() > 0 ? deadline - ts_now_ms() : 0));
        if (r <= 0) return r == 0 ? 0 : -1;
        c->len += (size_t)r;
    }
}

/* ---- ready-made behaviours ---- */

void fake_silent(fake_conn *c, void *arg)
{
    fake_hold(c);
}

void fake_stall(fake_conn *c, void *arg)
{
    fake_pause(c, -1);
}

void fake_close_at_once(fake_conn *c, void *arg) {}

void fake_send_then_hold(fake_conn *c, void *arg)
{
    if (fake_send_str(c, arg) == 0) fake_hold(c);
}

void fake_send_then_close(fake_conn *c, void *arg)
{
    fake_send_str(c, arg);
}

void fake_drip(fake_conn *c, void *arg)
{
    const char *s = arg;
    for (; *s; s++)
        if (fake_send(c, s, 1) != 0 || fake_pause(c, 100) != 0) return;
    fake_hold(c);
}

void fake_sink(fake_conn *c, void *arg)
{
    fake_hold(c);
}

static int eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if ((*a | 0x20) != (*b | 0x20)) return 0;
    return *a == *b;
}

void fake_resp2(fake_conn *c, void *arg)
{
    char **argv, reply[256];
    int argc, bad;
    for (;;) {
        argc = fake_read_command(c, &argv, -1, &bad);
        if (argc <= 0) {
            if (bad) fake_send_str(c, "-ERR Protocol error: expected '*', got something else\r\n");
            return;
        }
        if (eq(argv[0], "PING")) {
            if (fake_send_str(c, "+PONG\r\n")) return;
        } else if (eq(argv[0], "ECHO") && argc == 2) {
            snprintf(reply, sizeof reply, "$%zu\r\n", strlen(argv[1]));
            if (fake_send_str(c, reply) || fake_send_str(c, argv[1]) || fake_send_str(c, "\r\n"))
                return;
        } else if (eq(argv[0], "AUTH") || eq(argv[0], "SELECT") || eq(argv[0], "CLIENT")) {
            if (fake_send_str(c, "+OK\r\n")) return;
        } else if (eq(argv[0], "QUIT")) {
            fake_send_str(c, "+OK\r\n");
            return;
        } else {
            snprintf(reply, sizeof reply,
                     "-ERR unknown command '%.64s', with args beginning with: \r\n", argv[0]);
            if (fake_send_str(c, reply)) return;
        }
    }
}

#define FAKE_HELLO3 "%1\r\n$5\r\nproto\r\n:3\r\n"

/* Reads commands up to HELLO's and answers it.  0, or -1 when the peer
 * left or sent something else first. */
static int answer_hello(fake_conn *c)
{
    char **argv;
    int argc = fake_read_command(c, &argv, -1, NULL);
    if (argc <= 0 || !eq(argv[0], "HELLO")) return -1;
    return fake_send_str(c, FAKE_HELLO3);
}

/* Sends unit repeated into buf, as many whole copies as fit. */
static size_t fill_units(char *buf, size_t cap, const char *unit)
{
    size_t n = strlen(unit), used = 0;
    while (n && used + n <= cap) {
        memcpy(buf + used, unit, n);
        used += n;
    }
    return used;
}

void fake_flood(fake_conn *c, void *arg)
{
    struct fake_flood *f = arg;
    char buf[65536];
    size_t n = fill_units(buf, sizeof buf, f->msg);
    int64_t end;
    if (f->after_hello && answer_hello(c) != 0) return;
    end = ts_now_ms() + f->max_ms;
    while ((f->max_ms <= 0 || ts_now_ms() < end) && fake_send(c, buf, n) == 0)
        __atomic_add_fetch(&f->sent, n, __ATOMIC_SEQ_CST);
    fake_hold(c);
}

void fake_stream(fake_conn *c, void *arg)
{
    struct fake_stream *f = arg;
    char **argv, buf[65536];
    size_t n = fill_units(buf, sizeof buf, f->unit), sent;
    if (answer_hello(c) != 0 || fake_read_command(c, &argv, -1, NULL) <= 0) return;
    if (fake_send_str(c, f->head) != 0) return;
    sent = strlen(f->head);
    while (sent < f->limit) {
        size_t k = f->limit - sent < n ? f->limit - sent : n;
        if (fake_send(c, buf, k) != 0) return;
        sent += k;
        __atomic_store_n(&f->sent, sent, __ATOMIC_SEQ_CST);
    }
    fake_hold(c);
}

void fake_twice(fake_conn *c, void *arg)
{
    struct fake_twice *f = arg;
    char **argv, reply[300];
    int argc, one = 1;
    /* As a real server does: else the copy waits for the client's
     * delayed acknowledgement, which comes with its next command. */
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (answer_hello(c) != 0) return;
    while ((argc = fake_read_command(c, &argv, -1, NULL)) > 0) {
        if (!eq(argv[0], "ECHO") || argc != 2) {
            if (fake_send_str(c, "-ERR only ECHO here\r\n")) return;
            continue;
        }
        snprintf(reply, sizeof reply, "$%zu\r\n%.200s\r\n", strlen(argv[1]), argv[1]);
        if (fake_send_str(c, reply) != 0) return;
        if (f->delay_ms > 0 && fake_pause(c, f->delay_ms) != 0) return;
        if (fake_send_str(c, reply) != 0) return;
        __atomic_add_fetch(&f->dups, 1, __ATOMIC_SEQ_CST);
    }
}

/* ---- the server ---- */

static void *conn_main(void *p)
{
    fake_conn *c = p;
    c->fs->fn(c, c->fs->arg);
    close(c->fd);
    free(c->args);
    free(c);
    return NULL;
}

static void *accept_main(void *p)
{
    fake_server *fs = p;
    for (;;) {
        fake_conn *c;
        pthread_t th;
        int fd;
        if (wait_fd(fs, fs->listen_fd, POLLIN, -1) < 0) break;
        fd = accept4(fs->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fs = fs;
        c->fd = fd;
        pthread_mutex_lock(&fs->lock);
        fs->accepted++;
        if (fs->nthreads == fs->cap) {
            size_t ncap = fs->cap ? fs->cap * 2 : 8;
            pthread_t *t = realloc(fs->threads, ncap * sizeof *t);
            if (!t) {
                pthread_mutex_unlock(&fs->lock);
                close(fd);
                free(c);
                continue;
            }
            fs->threads = t;
            fs->cap = ncap;
        }
        if (pthread_create(&th, NULL, conn_main, c) == 0) {
            fs->threads[fs->nthreads++] = th;
        } else {
            close(fd);
            free(c);
        }
        pthread_mutex_unlock(&fs->lock);
    }
    return NULL;
}

static fake_server *start(fake_behaviour fn, void *arg, int ipv6)
{
    fake_server *fs = calloc(1, sizeof *fs);
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1;

    if (!fs) return NULL;
    fs->fn = fn;
    fs->arg = arg;
    fs->stop_pipe[0] = fs->stop_pipe[1] = -1;
    pthread_mutex_init(&fs->lock, NULL);
    len = ts_loopback(ipv6, &ss);
    fs->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fs->listen_fd < 0) goto fail;
    setsockopt(fs->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fs->listen_fd, (struct sockaddr *)&ss, len) != 0 || listen(fs->listen_fd, 64) != 0 ||
        getsockname(fs->listen_fd, (struct sockaddr *)&ss, &len) != 0)
        goto fail;
    fs->port = ntohs(ipv6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                          : ((struct sockaddr_in *)&ss)->sin_port);
    if (pipe2(fs->stop_pipe, O_CLOEXEC) != 0) goto fail;
    if (pthread_create(&fs->acceptor, NULL, accept_main, fs) != 0) goto fail;
    return fs;
fail:
    fprintf(stderr, "fake server: %s\n", strerror(errno));
    if (fs->listen_fd >= 0) close(fs->listen_fd);
    if (fs->stop_pipe[0] >= 0) close(fs->stop_pipe[0]);
    if (fs->stop_pipe[1] >= 0) close(fs->stop_pipe[1]);
    pthread_mutex_destroy(&fs->lock);
    free(fs);
    return NULL;
}

fake_server *fake_start(fake_behaviour fn, void *arg)
{
    return start(fn, arg, 0);
}

fake_server *fake_start6(fake_behaviour fn, void *arg)
{
    return start(fn, arg, 1);
}

int fake_port(const fake_server *fs)
{
    return fs->port;
}

int fake_accepted(fake_server *fs)
{
    int n;
    pthread_mutex_lock(&fs->lock);
    n = fs->accepted;
    pthread_mutex_unlock(&fs->lock);
    return n;
}

size_t fake_received(fake_server *fs)
{
    size_t n;
    pthread_mutex_lock(&fs->lock);
    n = fs->received;
    pthread_mutex_unlock(&fs->lock);
    return n;
}

void fake_stop(fake_server *fs)
{
    size_t i;
    char b = 1;
    if (!fs) return;
    while (write(fs->stop_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
    pthread_join(fs->acceptor, NULL);
    /* The acceptor is gone: the thread list no longer changes. */
    for (i = 0; i < fs->nthreads; i++) pthread_join(fs->threads[i], NULL);
    close(fs->listen_fd);
    close(fs->stop_pipe[0]);
    close(fs->stop_pipe[1]);
    pthread_mutex_destroy(&fs->lock);
    free(fs->threads);
    free(fs);
}
