/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The driver (see driver.h): one connection under one request core,
 * with poll(), the library's transports and its reconnect pacing.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "driver.h"
#include "clock.h"
#include "connect.h"
#include "conn_internal.h"
#include "internal.h"
#include "random.h"
#include "url.h"
#include "core.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DEFAULT_CONNECT_MS 5000
#define READ_CHUNK 16384
/* Reads per turn: a server that never stops sending cannot keep a turn
 * from ticking the core. */
#define READS_PER_TURN 16

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int set_err(rlk__driver *d, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->err, sizeof d->err, fmt, ap);
    va_end(ap);
    return status;
}

int rlk__driver_init(rlk__driver *d, const rlk_conn_config *conn, const rlk__core_config *base)
{
    memset(d, 0, sizeof *d);
    rlk__transport_init(&d->t);
    if (conn) d->cfg = *conn;
    else rlk_conn_config_init(&d->cfg);
    if (rlk__conn_config_copy(&d->cfg, &d->strings) != RLK_OK)
        return set_err(d, RLK_ERR_NOMEM, "out of memory");
    if (d->cfg.connect_timeout_ms <= 0) d->cfg.connect_timeout_ms = DEFAULT_CONNECT_MS;
    uint64_t seed = 0;
    rlk__random_bytes((unsigned char *)&seed, sizeof seed); /* jitter only: 0 will do */
    rlk__backoff_init(&d->backoff, d->cfg.backoff_initial_ms, d->cfg.backoff_max_ms, seed);
    d->url_status = rlk__url_parse(&d->url, d->cfg.url, d->err, sizeof d->err);
    if (d->url_status == RLK_ERR_NOMEM) return set_err(d, RLK_ERR_NOMEM, "out of memory");
    /* A URL that does not parse: the core is made all the same (its
     * calls then fail by the driver's status, every turn). */
    if (d->url_status != RLK_OK) d->fatal = d->url_status;

    rlk__core_config cc;
    if (base) cc = *base;
    else memset(&cc, 0, sizeof cc);
    cc.username = d->url.user;
    cc.password = d->url.password;
    cc.db = d->url.db;
    cc.client_name = d->cfg.client_name;
    cc.protocol = d->cfg.protocol;
    cc.command_timeout_ms = d->cfg.command_timeout_ms;
    d->core = rlk__core_new(&cc);
    if (!d->core) return set_err(d, RLK_ERR_NOMEM, "out of memory");
    return d->url_status;
}

int rlk__driver_init_at(rlk__driver *d, const rlk_conn_config *conn,
                        const rlk__core_config *cc, const char *host, int port)
{
    int r = rlk__driver_init(d, conn, cc);
    return r == RLK_OK ? rlk__driver_set_addr(d, host, port) : r;
}

int rlk__driver_set_addr(rlk__driver *d, const char *host, int port)
{
    if (d->url.kind == RLK__URL_UNIX || port < 1 || port > 65535 || !host || !*host) {
        d->fatal = RLK_ERR_URL;
        return set_err(d, RLK_ERR_URL, "no TCP address for a server (%s:%d)",
                       host ? host : "", port);
    }
    size_t n = strlen(host) + 1;
    char *h = rlk__malloc(n);
    if (!h) return set_err(d, RLK_ERR_NOMEM, "out of memory");
    memcpy(h, host, n);
    rlk__free(d->url.host);
    d->url.host = h;
    d->url.port = port;
    d->held = 0;
    return RLK_OK;
}

void rlk__driver_destroy(rlk__driver *d)
{
    rlk__transport_close(&d->t);
    rlk__core_free(d->core);
    d->core = NULL;
    rlk__url_free(&d->url);
    rlk__free(d->strings);
    d->strings = NULL;
}

int rlk__driver_fd(const rlk__driver *d) { return d->up ? d->t.fd : -1; }

static int connecting(const rlk__driver *d) { return d->t.cs.step != NULL; }

/* The connection is gone (status: why, the reason in d->err).  The next
 * try comes at once after a connection that served, else after the
 * backoff's pause. */
static int drop(rlk__driver *d, int status)
{
    int served = rlk__core_ready(d->core);
    d->last = status;
    /* A node paused (SIGSTOP, a VM frozen) keeps its TCP connection up
     * and the kernel still accepts new ones: a timeout is the only sign,
     * and the reconnect that follows looks connected.  The route reads
     * its table again meanwhile. */
    if (status == RLK_ERR_TIMEOUT) d->silent = 1;
    d->held = d->ask_each;
    rlk__transport_close(&d->t);
    int64_t now = rlk__now_ms();
    if (d->up) {
        d->up = 0;
        rlk__core_closed(d->core, now);
    }
    if (served) {
        rlk__backoff_served(&d->backoff);
        d->fails = 0;
    } else {
        d->fails++;
        rlk__backoff_failed(&d->backoff, now);
        if (!rlk__retry_mends(status, d->t.lasting)) d->fatal = status;
    }
    return status;
}

void rlk__driver_close(rlk__driver *d)
{
    /* A connect try given up is no failed try: the next turn may start
     * another at once. */
    if (connecting(d)) {
        rlk__transport_close(&d->t);
        d->held = d->ask_each;
    } else if (d->t.fd >= 0 || d->up) {
        drop(d, RLK_ERR_CLOSED);
    }
}

static int core_failed(rlk__driver *d, int status)
{
    set_err(d, status, "%s", rlk__core_errmsg(d->core));
    return drop(d, status);
}

/* The transport is connected (TLS included): the core's handshake
 * starts. */
static int connected(rlk__driver *d)
{
    d->up = 1;
    d->connects++;
    d->allow_once = 0;
    int r = rlk__core_connected(d->core, rlk__now_ms());
    return r == RLK_OK ? r : core_failed(d, r);
}

/* A connect try's result r, from its start or a step: RLK_OK while it
 * goes on or once connected, else the try's failure. */
static int connect_result(rlk__driver *d, int r)
{
    if (r == RLK__IN_PROGRESS) return RLK_OK;
    if (r == RLK_OK) return connected(d);
    set_err(d, r, "%s", d->t.err[0] ? d->t.err : rlk_strerror(r));
    return drop(d, r);
}

/* Starts a connect try.  Its deadline is the connect timeout's alone:
 * the try goes on over the turns that follow (their polls wait for its
 * events too), whatever each turn's own bound. */
static int connect_start(rlk__driver *d)
{
    int64_t deadline = rlk__now_ms() + d->cfg.connect_timeout_ms;
    return connect_result(d, rlk__connect_url_start(&d->t, &d->url, &d->cfg.tls, deadline));
}

int rlk__driver_connecting(const rlk__driver *d) { return connecting(d); }

/* Ends a connect try under way now as timed out (for rlk__driver_run,
 * whose bound passed): a failed try, counted, its reason in d->err
 * ("connect HOST:PORT: timed out after N ms").  RLK_OK when none was
 * under way, else that failure. */
static int connect_expire(rlk__driver *d)
{
    if (!connecting(d)) return RLK_OK;
    return connect_result(d, rlk__connect_expire(&d->t));
}

/* Writes what the core has to send, as far as the socket takes it. */
static int flush(rlk__driver *d)
{
    const char *buf;
    size_t n;
    while (d->up && (n = rlk__core_output(d->core, &buf)) > 0) {
        ssize_t w = d->t.ops->write(&d->t, buf, n);
        if (w == RLK__WANT_READ || w == RLK__WANT_WRITE) break;
        if (w == 0) rlk__transport_seterr(&d->t, "write %s: connection closed", d->t.peer);
        if (w <= 0) { /* the transport's message names the write and the peer */
            set_err(d, RLK_ERR_IO, "%s", d->t.err);
            return drop(d, w < 0 ? (int)w : RLK_ERR_IO);
        }
        rlk__core_consume(d->core, (size_t)w);
    }
    return RLK_OK;
}

/* A read's result n, of buf: fed to the core, or the connection's
 * end. */
static int take(rlk__driver *d, const char *buf, ssize_t n)
{
    if (n == 0) {
        set_err(d, RLK_ERR_CLOSED, "%s closed the connection", d->t.peer);
        return drop(d, RLK_ERR_CLOSED);
    }
    if (n < 0) { /* as a write's: the message is the transport's */
        set_err(d, (int)n, "%s", d->t.err);
        return drop(d, (int)n);
    }
    int r = rlk__core_feed(d->core, buf, (size_t)n, rlk__now_ms());
    if (r != RLK_OK) return core_failed(d, r);
    if ((d->fails || d->silent) && rlk__core_ready(d->core)) { /* the handshake is done */
        d->fails = 0;
        d->silent = 0;
        rlk__backoff_reset(&d->backoff);
    }
    return RLK_OK;
}

static int read_some(rlk__driver *d)
{
    char buf[READ_CHUNK];
    for (int i = 0; i < READS_PER_TURN && d->up; i++) {
        ssize_t n = d->t.ops->read(&d->t, buf, sizeof buf);
        if (n == RLK__WANT_READ || n == RLK__WANT_WRITE) break;
        int r = take(d, buf, n);
        if (r != RLK_OK) return r;
        /* A short read took what there was: no read that would only say
         * so (a TLS layer's own buffer is asked by the turn). */
        if ((size_t)n < sizeof buf) break;
    }
    return RLK_OK;
}

/* The sooner of two deadlines, -1 being none. */
static int64_t sooner(int64_t a, int64_t b)
{
    if (a < 0) return b;
    if (b < 0) return a;
    return a < b ? a : b;
}

/* The wake-up of a wait until: the core's deadline if sooner. */
static __attribute__((noinline)) int64_t core_wake(const rlk__driver *d, int64_t until)
{
    return sooner(rlk__core_deadline(d->core), until);
}

static int tick_if_due(rlk__driver *d)
{
    int64_t due = rlk__core_deadline(d->core), now = rlk__now_ms();
    if (due < 0 || due > now) return RLK_OK;
    int r = rlk__core_tick(d->core, now);
    if (r != RLK_OK && d->up) return core_failed(d, r);
    return RLK_OK;
}

static int reconnect_allowed(const rlk__driver *d)
{
    return d->connects == 0 || d->allow_once || d->cfg.reconnect_attempts >= 0;
}

/* prepare lost the connection (a connect try failed, or a write): what
 * is due is ticked, and the caller's wait ends by the next connect try
 * at the latest, whether the connection had served (the try is due at
 * once) or not (after the backoff's pause). */
static int prepare_lost(rlk__driver *d, int64_t until, int64_t *wake, int status)
{
    tick_if_due(d);
    *wake = sooner(core_wake(d, until), d->backoff.at);
    return status;
}

int rlk__driver_prepare(rlk__driver *d, struct pollfd *pfd, int64_t until, int64_t *wake)
{
    pfd->fd = -1;
    pfd->events = pfd->revents = 0;
    *wake = until;
    if (!d->core) return d->url_status != RLK_OK ? d->url_status : RLK_ERR_NOMEM;
    /* The core's deadline is read where a branch returns; a connection
     * that sends (the common case) reads it once, after the flush. */
    if (d->fatal) {
        *wake = core_wake(d, until);
        return d->fatal;
    }
    int r;
    if (!d->up && !connecting(d)) {
        *wake = core_wake(d, until);
        int64_t now = rlk__now_ms();
        if (!reconnect_allowed(d)) {
            tick_if_due(d);
            return set_err(d, RLK_ERR_CLOSED, "not connected, and reconnecting is off");
        }
        if (now < d->backoff.at) {
            *wake = sooner(*wake, d->backoff.at);
            return RLK_OK;
        }
        if (d->held) {
            tick_if_due(d);
            return RLK_OK;
        }
        r = connect_start(d);
        if (r != RLK_OK) return prepare_lost(d, until, wake, r);
    }
    if (d->up && rlk__core_broken(d->core)) {
        /* Broken between turns (a primitive's request could not be
         * queued): the connection goes. */
        r = core_failed(d, rlk__core_broken(d->core));
        return prepare_lost(d, until, wake, r);
    }
    if (connecting(d)) {
        /* The connect's next step: when its event comes, or by its
         * time (its deadline, or a Unix socket's next try). */
        pfd->fd = d->t.cs.events ? d->t.fd : -1;
        pfd->events = d->t.cs.events;
        *wake = sooner(core_wake(d, until), d->t.cs.wake);
        return RLK_OK;
    }
    if ((r = flush(d)) != RLK_OK) return prepare_lost(d, until, wake, r);
    *wake = core_wake(d, until);
    const char *out;
    pfd->fd = d->t.fd;
    pfd->events = (short)(POLLIN | (rlk__core_output(d->core, &out) > 0 ? POLLOUT : 0));
    /* Bytes the TLS layer holds already: poll would not see them. */
    if (d->t.ops->pending && d->t.ops->pending(&d->t) > 0) *wake = rlk__now_ms();
    return RLK_OK;
}

int rlk__driver_after(rlk__driver *d, const struct pollfd *pfd)
{
    int r;
    if (connecting(d)) {
        short revents = pfd->fd >= 0 && pfd->fd == d->t.fd ? pfd->revents : 0;
        if ((r = connect_result(d, rlk__connect_step(&d->t, revents))) != RLK_OK) {
            tick_if_due(d);
            return r;
        }
    } else if (d->up && pfd->fd == d->t.fd &&
        (pfd->revents || (d->t.ops->pending && d->t.ops->pending(&d->t) > 0)) &&
        (r = read_some(d)) != RLK_OK) {
        tick_if_due(d);
        return r;
    }
    if ((r = tick_if_due(d)) != RLK_OK) return r;
    return flush(d);
}

int rlk__driver_step(rlk__driver *d, int64_t until)
{
    struct pollfd p;
    int64_t wake;
    int r = rlk__driver_prepare(d, &p, until, &wake);
    if (r != RLK_OK) return r;
    if (rlk__poll_until(&p, 1, wake) < 0) {
        set_err(d, RLK_ERR_IO, "poll: %s", strerror(errno));
        return drop(d, RLK_ERR_IO);
    }
    return rlk__driver_after(d, &p);
}

int rlk__driver_turn_alone(rlk__driver *d, int64_t until)
{
    struct pollfd p;
    int64_t wake;
    int r = rlk__driver_prepare(d, &p, until, &wake);
    if (r == RLK_OK && d->up && p.fd >= 0 && p.events == POLLIN && !d->t.tls) {
        /* All sent, a plain socket, only a reply to wait for: one
         * recv that waits, not poll and then recv. */
        char buf[READ_CHUNK];
        ssize_t n = rlk__transport_recv_until(&d->t, buf, sizeof buf, wake);
        p.revents = 0;
        if (n != RLK__WANT_READ) {
            if ((r = take(d, buf, n)) != RLK_OK) {
                tick_if_due(d);
                return r;
            }
            if ((size_t)n == sizeof buf) p.revents = POLLIN; /* more may wait */
        }
        return rlk__driver_after(d, &p);
    }
    if (r != RLK_OK && !rlk__driver_can_go_on(d)) return r;
    rlk__poll_until(&p, 1, wake);
    int r2 = rlk__driver_after(d, &p);
    return r != RLK_OK ? r : r2;
}

int rlk__driver_can_go_on(const rlk__driver *d)
{
    return d->core && !d->fatal && (d->up || connecting(d) || reconnect_allowed(d));
}

int rlk__driver_run(rlk__driver *d, int (*done)(void *ctx), void *ctx, int64_t until)
{
    for (;;) {
        if (done(ctx)) return RLK_OK;
        if (until >= 0 && rlk__now_ms() >= until) {
            connect_expire(d);
            if (!d->err[0]) set_err(d, RLK_ERR_TIMEOUT, "timed out");
            return RLK_ERR_TIMEOUT;
        }
        int r = rlk__driver_step(d, until);
        if (r == RLK_OK) continue;
        if (!rlk__driver_can_go_on(d)) return r;
    }
}

int rlk__driver_connect_through(rlk__driver *d)
{
    int r = RLK_OK;
    while (r == RLK_OK && connecting(d)) {
        struct pollfd p;
        int64_t wake;
        r = rlk__driver_prepare(d, &p, -1, &wake);
        if (r != RLK_OK || !connecting(d)) break;
        rlk__poll_until(&p, 1, wake);
        r = rlk__driver_after(d, &p);
    }
    return r;
}

static int is_ready(void *ctx) { return rlk__core_ready(ctx); }

int rlk__driver_reconnect(rlk__driver *d)
{
    rlk__driver_close(d);
    d->fatal = 0;
    d->allow_once = 1;
    rlk__backoff_served(&d->backoff);
    d->err[0] = '\0';
    int r = rlk__driver_run(d, is_ready, d->core, rlk__now_ms() + d->cfg.connect_timeout_ms);
    if (r == RLK_ERR_TIMEOUT && d->fails) r = RLK_ERR_CONNECT;
    return r;
}
