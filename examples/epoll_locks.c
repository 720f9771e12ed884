/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * epoll_locks: two Redis servers, one lock on each, one thread, one epoll
 * set.  The sans-I/O session (rlk_session_*) does the lock protocol; this
 * program owns everything else: the sockets, the event loop and the clock.
 * Nothing here ever blocks on a server, so a server that stops answering
 * costs the lock on that server and nothing more: the other lock goes on
 * being renewed by its watchdog.
 *
 *   epoll_locks [-t TTL_MS] [-h HOLD_MS] [-w WAIT_MS] HOST:PORT HOST:PORT NAME
 *
 * It takes NAME on both servers (with the watchdog, TTL_MS, default 2000;
 * waiting up to WAIT_MS, default 5000), holds both for HOLD_MS (default
 * 3 * TTL_MS) from the moment both are taken, then releases them.  One
 * line per event on standard output:
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
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum phase {
    P_CONNECTING, /* before the session's handshake is done         */
    P_ACQUIRING,  /* rlk_session_acquire called, no result yet      */
    P_HELD,
    P_RELEASING,  /* rlk_session_release called, RELEASED not yet   */
    P_DONE        /* nothing more will happen on this server        */
};

struct app;

struct server {
    struct app *app;
    int idx;
    const char *where;       /* HOST:PORT as given                     */
    int fd;                  /* -1: no connection                      */
    int connecting;          /* connect() still under way              */
    uint32_t interest;       /* the events epoll watches on fd now     */
    rlk_session *s;
    rlk_session_lock *lock;  /* until RELEASED or NOT_ACQUIRED         */
    enum phase phase;
    int failed;              /* not acquired, or never connected       */
    int lost;                /* lost, or released with another status  */
};

struct app {
    const char *name;
    rlk_lock_options opts;
    int64_t hold_ms;
    int64_t hold_until;      /* -1: the hold has not started           */
    int epfd;
    struct server srv[2];
};

/* The clock every session call is given: monotonic, so that the
 * session's deadlines and the lock's validity ignore changes of the
 * wall clock. */
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

/* The statuses a lock event can carry, by a short name (rlk_strerror
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
/* Events                                                              */

static void release(struct server *sv)
{
    /* The phase first: RELEASED may come from within this call. */
    sv->phase = P_RELEASING;
    /* It fails only when a release is under way, which the phases rule
     * out: only a lock in P_HELD is released. */
    (void)rlk_session_release(sv->lock, mono_ms());
}

/* Called by the session from within rlk_session_feed, _tick, _closed,
 * _acquire and _release: never behind the program's back, so no state
 * here needs guarding. */
static void on_event(void *ctx, rlk_session *s, rlk_session_event ev,
                     rlk_session_lock *l, int status)
{
    struct server *sv = ctx;
    struct app *a = sv->app;

    switch (ev) {
    case RLK_SEV_READY:
        say("ready %d", sv->idx);
        if (sv->phase != P_CONNECTING)
            break;
        /* The acquire could be queued before the handshake too; waiting
         * for READY keeps a server that cannot be reached apart from a
         * lock that cannot be taken. */
        sv->phase = P_ACQUIRING;
        sv->lock = rlk_session_acquire(s, a->name, &a->opts, sv, mono_ms());
        if (!sv->lock) {
            say("not-acquired %d %s status=%s", sv->idx, a->name, "out-of-memory");
            sv->phase = P_DONE;
            sv->failed = 1;
        }
        break;
    case RLK_SEV_ACQUIRED:
        say("acquired %d %s token=%s fence=%" PRIu64, sv->idx, a->name,
            rlk_session_lock_token(l), rlk_session_lock_fence(l));
        sv->phase = P_HELD;
        break;
    case RLK_SEV_NOT_ACQUIRED:
        say("not-acquired %d %s status=%s", sv->idx, a->name, status_name(status));
        sv->lock = NULL;  /* the session frees it when we return */
        sv->phase = P_DONE;
        sv->failed = 1;
        break;
    case RLK_SEV_LOST:
        say("lost %d %s", sv->idx, a->name);
        sv->lost = 1;
        /* Whatever the lock guarded must stop now: its validity ends
         * soon.  The handle is released (the server may still hold the
         * key, until its TTL ends it). */
        if (sv->phase == P_HELD)
            release(sv);
        break;
    case RLK_SEV_RELEASED:
        say("released %d %s status=%s", sv->idx, a->name, status_name(status));
        if (status != RLK_OK && !sv->failed)
            sv->lost = 1;  /* it ended before we let it go */
        sv->lock = NULL;
        sv->phase = P_DONE;
        break;
    case RLK_SEV_EXTENDED:  /* this program never calls rlk_session_extend */
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Sockets                                                             */

/* epoll watches for input always (a reply, or the server closing), and
 * for room to write only while the session has bytes waiting: a socket
 * is writable nearly always, and watching for it then would spin. */
static void set_interest(struct server *sv)
{
    uint32_t want;
    const char *buf;

    if (sv->fd < 0)
        return;
    if (sv->connecting)
        want = EPOLLOUT;
    else
        want = EPOLLIN | (rlk_session_output(sv->s, &buf) > 0 ? EPOLLOUT : 0);
    if (want != sv->interest) {
        struct epoll_event e = {.events = want, .data.ptr = sv};
        epoll_ctl(sv->app->epfd, EPOLL_CTL_MOD, sv->fd, &e);
        sv->interest = want;
    }
}

/* The connection is gone: the session ends what was under way on it
 * (an acquire: NOT_ACQUIRED; a release: RELEASED) and keeps a held lock
 * while its validity lasts, reporting it LOST from a later tick.  A
 * long-lived program would connect again instead (after a pause), and
 * call rlk_session_connected: its first renewal round re-checks the
 * locks held. */
static void drop(struct server *sv, const char *why)
{
    say("closed %d %s", sv->idx, why);
    if (sv->fd >= 0)
        close(sv->fd);  /* also takes it out of the epoll set */
    sv->fd = -1;
    sv->connecting = 0;
    rlk_session_closed(sv->s, mono_ms());
    if (sv->phase == P_CONNECTING) {  /* no acquire was started */
        sv->phase = P_DONE;
        sv->failed = 1;
    }
}

static void drop_errno(struct server *sv, const char *what, int err)
{
    char why[256];
    snprintf(why, sizeof why, "%s: %s", what, strerror(err));
    drop(sv, why);
}

static void session_failed(struct server *sv, int rc)
{
    char why[512];
    snprintf(why, sizeof why, "%s: %s", status_name(rc), rlk_session_errmsg(sv->s));
    drop(sv, why);
}

/* Sends what the session has to send, as much as the socket takes now;
 * the rest waits for EPOLLOUT. */
static void flush_output(struct server *sv)
{
    const char *buf;
    size_t n;

    while (sv->fd >= 0 && !sv->connecting && (n = rlk_session_output(sv->s, &buf)) > 0) {
        /* MSG_NOSIGNAL: a server that went away is an error to handle
         * here, not a SIGPIPE that kills the program. */
        ssize_t w = send(sv->fd, buf, n, MSG_NOSIGNAL);
        if (w > 0)
            rlk_session_consume(sv->s, (size_t)w);
        else if (w < 0 && errno == EINTR)
            continue;
        else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        else
            drop_errno(sv, "send", errno);
    }
    set_interest(sv);
}

/* Reads what has come, until the socket has no more (epoll is
 * level-triggered, so stopping earlier would be fine too). */
static void read_input(struct server *sv)
{
    char buf[16384];

    while (sv->fd >= 0) {
        ssize_t r = read(sv->fd, buf, sizeof buf);
        if (r > 0) {
            int rc = rlk_session_feed(sv->s, buf, (size_t)r, mono_ms());
            if (rc != RLK_OK)
                session_failed(sv, rc);
            else if ((size_t)r < sizeof buf)
                break;
        } else if (r == 0) {
            drop(sv, "by the server");
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            drop_errno(sv, "read", errno);
        }
    }
}

static void connected(struct server *sv)
{
    int rc;

    sv->connecting = 0;
    rc = rlk_session_connected(sv->s, mono_ms());
    if (rc != RLK_OK)
        session_failed(sv, rc);
}

/* EPOLLOUT on a socket whose connect() was under way: SO_ERROR says how
 * it ended. */
static void finish_connect(struct server *sv)
{
    int err = 0;
    socklen_t len = sizeof err;

    if (getsockopt(sv->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err)
        drop_errno(sv, "connect", err);
    else
        connected(sv);
}

/* Starts a non-blocking connect.  The name is resolved here, before the
 * loop, with the blocking getaddrinfo: fine for a numeric address or a
 * program's start; a loop that resolves names as it runs needs an
 * asynchronous resolver. */
static int start_connect(struct server *sv)
{
    char host[256];
    const char *colon = strrchr(sv->where, ':');
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    size_t hl;
    int rc, one = 1;

    if (!colon || colon == sv->where || !colon[1]) {
        fprintf(stderr, "epoll_locks: %s: want HOST:PORT\n", sv->where);
        exit(64);
    }
    hl = (size_t)(colon - sv->where);
    if (sv->where[0] == '[' && colon[-1] == ']') {  /* [IPv6]:PORT */
        sv->where++;
        hl -= 2;
    }
    if (hl >= sizeof host) {
        fprintf(stderr, "epoll_locks: %s: host name too long\n", sv->where);
        exit(64);
    }
    memcpy(host, sv->where, hl);
    host[hl] = '\0';
    rc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (rc != 0) {
        char why[512];
        snprintf(why, sizeof why, "resolve %s: %s", sv->where, gai_strerror(rc));
        drop(sv, why);
        return 0;
    }

    /* The first address only, to keep the example short. */
    sv->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (sv->fd < 0) {
        drop_errno(sv, "socket", errno);
        freeaddrinfo(ai);
        return 0;
    }
    /* Requests are small and each waits for its reply: no Nagle delay. */
    setsockopt(sv->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    rc = connect(sv->fd, ai->ai_addr, ai->ai_addrlen);
    freeaddrinfo(ai);

    sv->connecting = rc < 0 && errno == EINPROGRESS;
    if (rc < 0 && !sv->connecting) {
        drop_errno(sv, "connect", errno);
        return 0;
    }
    {
        struct epoll_event e = {.events = EPOLLOUT, .data.ptr = sv};
        if (epoll_ctl(sv->app->epfd, EPOLL_CTL_ADD, sv->fd, &e) < 0) {
            perror("epoll_locks: epoll_ctl");
            return -1;
        }
        sv->interest = EPOLLOUT;
    }
    if (!sv->connecting)  /* loopback may connect at once */
        connected(sv);
    return 0;
}

/* ------------------------------------------------------------------ */
/* The loop                                                            */

/* What the program does between events: start the hold once both
 * acquires have ended, and release when it ends, or at once when a lock
 * could not be taken (holding the other alone is of no use). */
static void plan(struct app *a, int64_t now)
{
    int i, acquiring = 0, failed = 0;

    for (i = 0; i < 2; i++) {
        acquiring += a->srv[i].phase <= P_ACQUIRING;
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

/* How long epoll_wait may sleep: until the first deadline of either
 * session (replies overdue, renewals, waits, losses) or the end of the
 * hold. */
static int wait_timeout(const struct app *a, int64_t now)
{
    int64_t next = -1, d;
    int i;

    for (i = 0; i < 2; i++) {
        d = rlk_session_deadline(a->srv[i].s);
        if (d >= 0 && (next < 0 || d < next))
            next = d;
    }
    if (a->hold_until >= 0 && (next < 0 || a->hold_until < next))
        next = a->hold_until;
    if (next < 0)
        return -1;
    if (next <= now)
        return 0;
    return next - now > 60000 ? 60000 : (int)(next - now);
}

static int all_done(const struct app *a)
{
    return a->srv[0].phase == P_DONE && a->srv[1].phase == P_DONE;
}

static int run(struct app *a, int64_t *longest_us)
{
    while (!all_done(a)) {
        struct epoll_event evs[2];
        int64_t t0, now;
        int n, i;

        n = epoll_wait(a->epfd, evs, 2, wait_timeout(a, mono_ms()));
        if (n < 0 && errno != EINTR) {
            perror("epoll_locks: epoll_wait");
            return -1;
        }
        t0 = mono_us();

        for (i = 0; i < n; i++) {
            struct server *sv = evs[i].data.ptr;
            if (sv->fd < 0)
                continue;
            if (sv->connecting)
                finish_connect(sv);
            else if (evs[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                read_input(sv);
            /* EPOLLOUT alone needs nothing here: every server's output
             * is flushed below. */
        }

        /* Deadlines are checked after every wake, not only on a
         * timeout: a busy socket must not starve the other's timers. */
        now = mono_ms();
        for (i = 0; i < 2; i++) {
            struct server *sv = &a->srv[i];
            int64_t d = rlk_session_deadline(sv->s);
            if (d >= 0 && d <= now) {
                int rc = rlk_session_tick(sv->s, now);
                if (rc != RLK_OK && sv->fd >= 0)
                    session_failed(sv, rc);
            }
        }

        plan(a, mono_ms());
        for (i = 0; i < 2; i++)
            flush_output(&a->srv[i]);

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
    fputs("usage: epoll_locks [-t TTL_MS] [-h HOLD_MS] [-w WAIT_MS] HOST:PORT HOST:PORT NAME\n",
          stderr);
    exit(64);
}

int main(int argc, char **argv)
{
    struct app a;
    rlk_session_config cfg;
    int64_t longest_us = 0, hold = -1;
    int i, c, rc, status;

    memset(&a, 0, sizeof a);
    rlk_lock_options_init(&a.opts);
    a.opts.ttl_ms = 2000;
    a.opts.wait_ms = 5000;
    a.opts.watchdog = 1;
    a.hold_until = -1;
    while ((c = getopt(argc, argv, "t:h:w:")) != -1) {
        switch (c) {
        case 't': a.opts.ttl_ms = number(optarg, "-t"); break;
        case 'h': hold = number(optarg, "-h"); break;
        case 'w': a.opts.wait_ms = number(optarg, "-w"); break;
        default: usage();
        }
    }
    if (argc - optind != 3 || a.opts.ttl_ms <= 0)
        usage();
    a.hold_ms = hold >= 0 ? hold : 3 * a.opts.ttl_ms;
    a.name = argv[optind + 2];

    a.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (a.epfd < 0) {
        perror("epoll_locks: epoll_create1");
        return 70;
    }
    for (i = 0; i < 2; i++) {
        struct server *sv = &a.srv[i];
        sv->app = &a;
        sv->idx = i;
        sv->where = argv[optind + i];
        sv->fd = -1;
        rlk_session_config_init(&cfg);
        cfg.client_name = "epoll_locks";
        cfg.cb = on_event;
        cfg.ctx = sv;
        sv->s = rlk_session_new(&cfg);
        if (!sv->s) {
            fputs("epoll_locks: no session (out of memory?)\n", stderr);
            return 70;
        }
    }
    rc = 0;
    for (i = 0; i < 2 && rc == 0; i++)
        rc = start_connect(&a.srv[i]);
    if (rc == 0)
        rc = run(&a, &longest_us);

    printf("longest loop iteration: %.1f ms\n", (double)longest_us / 1000.0);
    status = rc < 0 ? 70 : 0;
    for (i = 0; i < 2; i++) {
        struct server *sv = &a.srv[i];
        if (status == 0 && sv->failed)
            status = 1;
        if (sv->fd >= 0)
            close(sv->fd);
        rlk_session_free(sv->s);  /* frees any handle left */
    }
    for (i = 0; i < 2 && status == 0; i++)
        if (a.srv[i].lost)
            status = 3;
    close(a.epfd);
    return status;
}
