/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * epoll_locks: two Redis servers, one lock on each, one thread, one epoll
 * set.  A client (rlk_client) per server does the sockets, the connects
 * (TCP, then TLS), the reconnects and the lock protocol; this program's
 * loop turns both through rlk_client_watch (what to wait for) and
 * rlk_client_handle (what came), and says what to do.  Nothing here ever
 * waits for a server, so a server that stops answering costs the lock on
 * that server and nothing more: the other lock goes on being renewed by
 * its watchdog.
 *
 *   epoll_locks [-t TTL_MS] [-h HOLD_MS] [-w WAIT_MS] [-C CA_FILE] SERVER SERVER NAME
 *
 * SERVER is HOST:PORT, or a URL: redis://HOST:PORT, rediss://HOST:PORT
 * (TLS, the server checked against the CAs of CA_FILE, else the
 * system's), unix:///PATH.  It takes NAME on both servers (with the
 * watchdog, TTL_MS, default 2000; waiting up to WAIT_MS, default 5000),
 * holds both for HOLD_MS (default 3 * TTL_MS) from the moment both are
 * taken, then releases them.  One line per event on standard output:
 *
 *   ready I                           the handshake with server I is done
 *   acquired I NAME token=T fence=F   the lock on server I is held
 *   not-acquired I NAME status=S      it could not be taken
 *   lost I NAME                       it was found lost (then released)
 *   released I NAME status=S          the release's outcome
 *   closed I WHY                      the connection to server I ended
 *
 * and at the end "longest loop iteration: N ms", the longest time spent
 * handling one return of epoll_wait: the bound on how long any server can
 * hold the other one up.
 *
 * Exit status: 0 both locks held to the end and released; 1 a lock could
 * not be taken (or its server reached); 3 a lock was lost (reported lost,
 * or its release did not find it held: gone, or not known); 64 usage; 70
 * the loop itself failed.
 *
 * In a program of your own, include <resplock/resplock.h> and link with
 * `pkg-config --libs resplock`.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "resplock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

enum phase {
    P_ACQUIRING,  /* rlk_lock_acquire_async called, no result yet */
    P_HELD,
    P_RELEASING,  /* rlk_lock_release_async called, no result yet */
    P_DONE        /* nothing more will happen on this server      */
};

struct server {
    int idx;
    rlk_client *cl;
    rlk_lock *lock;          /* until its release's (or acquire's) end */
    enum phase phase;
    int failed;              /* not acquired, or never reached         */
    int lost;                /* lost, or released with another status  */
    int reached;             /* a handshake was done                   */
    uint64_t generation;     /* the connection "ready" was said of     */
    rlk_watch w[4];          /* what the client waits for, this turn   */
    int nw;
};

struct app {
    const char *name;
    rlk_lock_options opts;
    int64_t hold_ms;
    int64_t hold_until;      /* -1: the hold has not started           */
    int epfd;
    struct server srv[2];
};

/* CLOCK_MONOTONIC, the clock of the client's deadlines. */
static int64_t mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t mono_ms(void) { return mono_us() / 1000; }

/* Flushed line by line, so that whoever reads the output (a test, a
 * pipe) sees each event when it happens. */
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* The statuses a lock call can end with, by a short name (rlk_strerror
 * knows the codec's statuses only). */
static const char *status_name(int st)
{
    switch (st) {
    case RLK_OK: return "ok";
    case RLK_LOCK_BUSY: return "busy";
    case RLK_LOCK_NOT_HELD: return "not-held";
    case RLK_LOCK_NOT_OWNER: return "not-owner";
    case RLK_LOCK_LOST: return "lost";
    case RLK_ERR_TIMEOUT: return "timeout";
    case RLK_ERR_CLOSED: return "closed";
    case RLK_ERR_SERVER: return "server-error";
    case RLK_ERR_IO: return "io-error";
    default: return rlk_strerror(st);
    }
}

/* ------------------------------------------------------------------ */
/* The lock's events: called by rlk_client_handle, never behind the     */
/* program's back, so no state here needs guarding.                     */

static struct app app;

static void on_released(void *ctx, rlk_lock *l, int status)
{
    struct server *sv = ctx;
    (void)l;  /* freed when this returns */
    say("released %d %s status=%s", sv->idx, app.name, status_name(status));
    if (status != RLK_OK)
        sv->lost = 1;  /* it ended before we let it go */
    sv->lock = NULL;
    sv->phase = P_DONE;
}

static void release(struct server *sv)
{
    sv->phase = P_RELEASING;
    /* Refused only while a release is under way, which the phases rule
     * out: only a lock in P_HELD is released. */
    (void)rlk_lock_release_async(sv->lock, on_released, sv);
}

static void on_acquired(void *ctx, rlk_lock *l, int status)
{
    struct server *sv = ctx;
    if (status == RLK_OK) {
        say("acquired %d %s token=%s fence=%" PRIu64, sv->idx, app.name, rlk_lock_token(l),
            rlk_lock_fence(l));
        sv->phase = P_HELD;
    } else {
        say("not-acquired %d %s status=%s", sv->idx, app.name, status_name(status));
        sv->lock = NULL;  /* freed when this returns */
        sv->phase = P_DONE;
        sv->failed = 1;
    }
}

/* Whatever the lock guarded must stop now: its validity ends soon.  The
 * handle is released (the server may still hold the key, until its TTL
 * ends it). */
static void on_lost(void *ctx, rlk_lock *l)
{
    struct server *sv = ctx;
    (void)l;
    say("lost %d %s", sv->idx, app.name);
    sv->lost = 1;
    if (sv->phase == P_HELD)
        release(sv);
}

/* An acquire called off: the server could not be reached. */
static void on_called_off(void *ctx, rlk_lock *l, int status)
{
    struct server *sv = ctx;
    (void)l;
    (void)status;
    sv->lock = NULL;
    sv->phase = P_DONE;
    sv->failed = 1;
}

/* ------------------------------------------------------------------ */
/* The loop                                                            */

/* The epoll set follows what the clients ask for at every turn: each fd
 * wanted is (re)registered, and a socket a client closed left the set by
 * itself (its number may come back as another socket: hence MOD, else
 * ADD, every time).  data: the server and the fd. */
static int watch_all(struct app *a, int64_t *next)
{
    static int registered[8], nreg;
    int wanted[8], nwant = 0;

    for (int i = 0; i < 2; i++) {
        struct server *sv = &a->srv[i];
        int64_t dl;
        sv->nw = 0;
        if (sv->phase == P_DONE)
            continue;
        int n = rlk_client_watch(sv->cl, sv->w, 4, &dl);
        if (n < 0)  /* it cannot go on: rlk_client_handle ends its calls */
            dl = mono_ms();
        sv->nw = n < 0 ? 0 : n > 4 ? 4 : n;
        if (dl >= 0 && (*next < 0 || dl < *next))
            *next = dl;
        for (int j = 0; j < sv->nw && nwant < 8; j++) {
            struct epoll_event e = {
                .events = (sv->w[j].events & RLK_EV_READ ? EPOLLIN : 0u) |
                          (sv->w[j].events & RLK_EV_WRITE ? EPOLLOUT : 0u),
                .data.u64 = (uint64_t)i << 32 | (uint32_t)sv->w[j].fd};
            if (epoll_ctl(a->epfd, EPOLL_CTL_MOD, sv->w[j].fd, &e) < 0 &&
                (errno != ENOENT || epoll_ctl(a->epfd, EPOLL_CTL_ADD, sv->w[j].fd, &e) < 0)) {
                perror("epoll_locks: epoll_ctl");
                return -1;
            }
            wanted[nwant++] = sv->w[j].fd;
        }
    }
    for (int k = 0; k < nreg; k++) {  /* fds no longer wanted */
        int still = 0;
        for (int j = 0; j < nwant; j++)
            still |= wanted[j] == registered[k];
        if (!still)
            epoll_ctl(a->epfd, EPOLL_CTL_DEL, registered[k], NULL);  /* may be closed */
    }
    memcpy(registered, wanted, sizeof wanted);
    nreg = nwant;
    return 0;
}

/* What the program does between events: start the hold once both
 * acquires have ended, and release when it ends, or at once when a lock
 * could not be taken (holding the other alone is of no use). */
static void plan(struct app *a, int64_t now)
{
    int i, acquiring = 0, failed = 0;

    for (i = 0; i < 2; i++) {
        acquiring += a->srv[i].phase == P_ACQUIRING;
        failed += a->srv[i].failed;
    }
    if (acquiring)
        return;
    if (a->hold_until < 0)
        a->hold_until = now + a->hold_ms;
    if (!failed && now < a->hold_until)
        return;
    for (i = 0; i < 2; i++)
        if (a->srv[i].phase == P_HELD)
            release(&a->srv[i]);
}

/* After epoll_wait: each client takes what came on its fds (and does
 * what is due); a connection that ended is said, and a server never
 * reached is given up (its acquire called off). */
static void handle_all(struct app *a, const struct epoll_event *evs, int n)
{
    for (int i = 0; i < 2; i++) {
        struct server *sv = &a->srv[i];
        if (sv->phase == P_DONE)
            continue;
        for (int k = 0; k < n; k++)
            for (int j = 0; j < sv->nw; j++)
                if (evs[k].data.u64 >> 32 == (uint64_t)i &&
                    (uint32_t)evs[k].data.u64 == (uint32_t)sv->w[j].fd)
                    sv->w[j].revents = (evs[k].events & EPOLLOUT ? RLK_EV_WRITE : 0u) |
                                       (evs[k].events & ~(uint32_t)EPOLLOUT ? RLK_EV_READ : 0u);
        int rc = rlk_client_handle(sv->cl, sv->w, (size_t)sv->nw);
        uint64_t g = rlk_client_generation(sv->cl);
        if (g != sv->generation && rlk_client_info(sv->cl)) {
            say("ready %d", i);
            sv->generation = g;
            sv->reached = 1;
        }
        if (rc == RLK_OK)
            continue;
        /* The client connects again by itself (a lock held stays held
         * while its validity lasts); a server never reached is given
         * up here. */
        say("closed %d %s", i, rlk_client_errmsg(sv->cl));
        if (!sv->reached && sv->phase == P_ACQUIRING &&
            rlk_lock_release_async(sv->lock, on_called_off, sv) != RLK_OK)
            on_called_off(sv, NULL, rc);
    }
}

static int run(struct app *a, int64_t *longest_us)
{
    while (a->srv[0].phase != P_DONE || a->srv[1].phase != P_DONE) {
        struct epoll_event evs[8];
        int64_t next = a->hold_until, t0, now;
        int n, timeout;

        if (watch_all(a, &next) < 0)
            return -1;
        now = mono_ms();
        timeout = next < 0 ? -1 : next <= now ? 0 : next - now > 60000 ? 60000 : (int)(next - now);
        n = epoll_wait(a->epfd, evs, 8, timeout);
        if (n < 0 && errno != EINTR) {
            perror("epoll_locks: epoll_wait");
            return -1;
        }
        t0 = mono_us();
        handle_all(a, evs, n < 0 ? 0 : n);
        plan(a, mono_ms());
        if (mono_us() - t0 > *longest_us)
            *longest_us = mono_us() - t0;
    }
    return 0;
}

static int64_t number(const char *s, const char *what)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < 0) {
        fprintf(stderr, "epoll_locks: %s: not a number of milliseconds: %s\n", what, s);
        exit(64);
    }
    return v;
}

static void usage(void)
{
    fputs("usage: epoll_locks [-t TTL_MS] [-h HOLD_MS] [-w WAIT_MS] [-C CA_FILE] SERVER SERVER "
          "NAME\n  SERVER: HOST:PORT, redis://HOST:PORT, rediss://HOST:PORT, unix:///PATH\n",
          stderr);
    exit(64);
}

int main(int argc, char **argv)
{
    struct app *a = &app;
    const char *ca_file = NULL;
    char urls[2][512];
    int64_t longest_us = 0, hold = -1;
    int i, c, rc, status;

    rlk_lock_options_init(&a->opts);
    a->opts.ttl_ms = 2000;
    a->opts.wait_ms = 5000;
    a->opts.watchdog = 1;
    a->opts.on_lost = on_lost;
    a->hold_until = -1;
    while ((c = getopt(argc, argv, "t:h:w:C:")) != -1) {
        switch (c) {
        case 't': a->opts.ttl_ms = number(optarg, "-t"); break;
        case 'h': hold = number(optarg, "-h"); break;
        case 'w': a->opts.wait_ms = number(optarg, "-w"); break;
        case 'C': ca_file = optarg; break;
        default: usage();
        }
    }
    if (argc - optind != 3 || a->opts.ttl_ms <= 0)
        usage();
    a->hold_ms = hold >= 0 ? hold : 3 * a->opts.ttl_ms;
    a->name = argv[optind + 2];

    a->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (a->epfd < 0) {
        perror("epoll_locks: epoll_create1");
        return 70;
    }
    for (i = 0; i < 2; i++) {
        struct server *sv = &a->srv[i];
        const char *where = argv[optind + i];
        rlk_client_config cfg;
        /* HOST:PORT is a redis:// URL's; a name is resolved when the
         * client connects, by the blocking getaddrinfo: give an address
         * where a loop must never wait. */
        snprintf(urls[i], sizeof urls[i], "%s%s", strstr(where, "://") ? "" : "redis://", where);
        rlk_client_config_init(&cfg);
        cfg.conn.url = urls[i];
        cfg.conn.client_name = "epoll_locks";
        cfg.conn.tls.ca_file = ca_file;
        sv->idx = i;
        sv->cl = rlk_client_new(&cfg);
        if (!sv->cl) {
            fputs("epoll_locks: no client (out of memory?)\n", stderr);
            return 70;
        }
        /* Queued at once: the client sends it after the handshake. */
        a->opts.ctx = sv;
        rc = rlk_lock_acquire_async(sv->cl, a->name, &a->opts, on_acquired, sv, &sv->lock);
        if (rc != RLK_OK) {
            say("not-acquired %d %s status=%s", i, a->name, status_name(rc));
            fprintf(stderr, "epoll_locks: %s\n", rlk_client_errmsg(sv->cl));
            sv->phase = P_DONE;
            sv->failed = 1;
        }
    }
    rc = run(a, &longest_us);

    printf("longest loop iteration: %.1f ms\n", (double)longest_us / 1000.0);
    status = rc < 0 ? 70 : 0;
    for (i = 0; i < 2; i++) {
        if (status == 0 && a->srv[i].failed)
            status = 1;
        rlk_client_free(a->srv[i].cl);  /* frees any handle left */
    }
    for (i = 0; i < 2 && status == 0; i++)
        if (a->srv[i].lost)
            status = 3;
    close(a->epfd);
    return status;
}
