/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain byte streams (TCP, Unix socket) and the deadline-bounded loops
 * that every transport, TLS included, goes through. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "transport.h"
#include "clock.h"

#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

void rlk__transport_seterr(rlk__transport *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
}

int rlk__wait_fd(int fd, short events, int64_t deadline)
{
    struct pollfd p;
    int r;
    for (;;) {
        p.fd = fd;
        p.events = events;
        p.revents = 0;
        r = poll(&p, 1, rlk__ms_left(deadline));
        if (r > 0) {
            if (p.revents & POLLNVAL) {
                errno = EBADF;
                return -1;
            }
            return 1;
        }
        if (r == 0) {
            /* poll may return a little early (rounding), or the wait was
             * clamped to INT_MAX ms: only the clock decides. */
            if (deadline >= 0 && rlk__now_ms() >= deadline) return 0;
            continue;
        }
        if (errno != EINTR) return -1;
    }
}

void rlk__transport_init(rlk__transport *t)
{
    memset(t, 0, sizeof *t);
    t->fd = -1;
}

/* ---- plain sockets ---- */

static ssize_t plain_read(rlk__transport *t, void *buf, size_t n)
{
    ssize_t r;
    do r = recv(t->fd, buf, n, MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return RLK__WANT_READ;
    rlk__transport_seterr(t, "read %s: %s", t->peer, strerror(errno));
    return RLK_ERR_IO;
}

static ssize_t plain_write(rlk__transport *t, const void *buf, size_t n)
{
    ssize_t r;
    /* MSG_NOSIGNAL: a peer that went away must be an error code, not a
     * SIGPIPE that kills the host process. */
    do r = send(t->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return RLK__WANT_WRITE;
    rlk__transport_seterr(t, "write %s: %s", t->peer, strerror(errno));
    return RLK_ERR_IO;
}

static size_t plain_pending(rlk__transport *t)
{
    return 0;
}

static void plain_close(rlk__transport *t)
{
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
}

static const rlk__transport_ops plain_ops = {plain_read, plain_write, plain_pending, plain_close};

static void free_list(rlk__transport *t)
{
    if (t->cs.owned) freeaddrinfo(t->cs.owned);
    t->cs.owned = NULL;
    t->cs.next = NULL;
}

void rlk__transport_close(rlk__transport *t)
{
    if (t->cs.step) { /* a connect given up */
        if (t->cs.drop) t->cs.drop(t);
        free_list(t);
        memset(&t->cs, 0, sizeof t->cs);
    }
    if (t->ops && t->ops->close) t->ops->close(t);
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
    t->ops = NULL;
    t->tls = NULL;
    t->tls_ctx = NULL;
    t->blocking = 0;
    t->rcvtimeo_ms = -2;
}

/* ---- connecting ---- */

/* Numeric: inet_ntop rather than getnameinfo, which a static build would
 * carry for nothing (a scope id is not shown). */
static void format_addr(const struct sockaddr *sa, socklen_t len, char *out, size_t outlen)
{
    char host[INET6_ADDRSTRLEN];
    const void *addr;
    unsigned port;
    if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)(const void *)sa;
        addr = &s6->sin6_addr;
        port = ntohs(s6->sin6_port);
    } else if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)(const void *)sa;
        addr = &s4->sin_addr;
        port = ntohs(s4->sin_port);
    } else {
        snprintf(out, outlen, "?");
        return;
    }
    if (!inet_ntop(sa->sa_family, addr, host, sizeof host)) {
        snprintf(out, outlen, "?");
        return;
    }
    snprintf(out, outlen, sa->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
}

static void set_peer(rlk__transport *t, const char *host, int port)
{
    if (strchr(host, ':'))
        snprintf(t->peer, sizeof t->peer, "[%s]:%d", host, port);
    else
        snprintf(t->peer, sizeof t->peer, "%s:%d", host, port);
}

/* What a connect's messages name: the address being tried, or the
 * socket's path. */
static const char *where(const rlk__transport *t)
{
    return t->cs.unix_sock ? t->peer : t->cs.addr;
}

/* The milliseconds a connect had, for "timed out after" messages. */
static long long allowed_ms(int64_t deadline, int64_t start)
{
    return (long long)(deadline > start ? deadline - start : 0);
}

/* The socket is connected: the plain transport from now on. */
static int sock_connected(rlk__transport *t)
{
    int one = 1;
    free_list(t);
    if (!t->cs.unix_sock) {
        /* Commands are small and latency matters more than packet
         * count; keepalive finds peers that vanished while nothing is
         * sent. */
        setsockopt(t->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        setsockopt(t->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    }
    t->ops = &plain_ops;
    t->err[0] = '\0';
    t->cs.events = 0;
    return RLK_OK;
}

/* The socket's try failed or ran out of time: closed, the reason
 * already in t->err. */
static void sock_close(rlk__transport *t)
{
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
}

/* Starts on the addresses not tried yet, each in turn until one
 * connects at once or is under way.  When none is left, the failure of
 * the last one. */
static int tcp_next(rlk__transport *t)
{
    rlk__connecting *c = &t->cs;
    while (c->next) {
        const struct addrinfo *ai = c->next;
        c->next = ai->ai_next;
        format_addr(ai->ai_addr, ai->ai_addrlen, c->addr, sizeof c->addr);
        int fd =
            socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            rlk__transport_seterr(t, "connect %s: %s", c->addr, strerror(errno));
            continue;
        }
        t->fd = fd;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) return sock_connected(t);
        /* After EINTR the connection attempt goes on in the background
         * and is finished exactly like an EINPROGRESS one. */
        if (errno == EINPROGRESS || errno == EINTR) {
            c->events = POLLOUT;
            c->wake = c->deadline;
            return RLK__IN_PROGRESS;
        }
        rlk__transport_seterr(t, "connect %s: %s", c->addr, strerror(errno));
        sock_close(t);
    }
    free_list(t);
    return RLK_ERR_CONNECT;
}

/* Tries a Unix socket's connect (again). */
static int unix_try(rlk__transport *t)
{
    rlk__connecting *c = &t->cs;
    struct sockaddr_un sa;
    int r;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, t->peer, strlen(t->peer) + 1); /* its length checked at the start */
    do r = connect(t->fd, (struct sockaddr *)&sa, sizeof sa);
    while (r != 0 && errno == EINTR);
    if (r == 0 || errno == EISCONN) return sock_connected(t);
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
        /* The server's queue is full.  No event tells when it has room
         * (poll() reports an unconnected Unix socket as hung up), so the
         * connect is tried again after a pause: 1 ms doubling to 64. */
        int64_t next = rlk__now_ms() + c->pause_ms;
        c->pause_ms = c->pause_ms < 64 ? c->pause_ms * 2 : 64;
        c->events = 0;
        c->wake = c->deadline >= 0 && c->deadline < next ? c->deadline : next;
        return RLK__IN_PROGRESS;
    }
    if (errno == EINPROGRESS) {
        c->events = POLLOUT;
        c->wake = c->deadline;
        return RLK__IN_PROGRESS;
    }
    rlk__transport_seterr(t, "connect %s: %s", t->peer, strerror(errno));
    sock_close(t);
    return RLK_ERR_CONNECT;
}

/* The outcome of a connect that poll() reported on: 0 connected, else
 * an errno value, or -1 for none yet (a report that was not about the
 * connect). */
static int connect_outcome(int fd, short revents)
{
    int err = 0;
    socklen_t len = sizeof err;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
    if (err) return err;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) return 0;
    if (errno != ENOTCONN) return errno;
    return revents & (POLLERR | POLLHUP) ? ENOTCONN : -1;
}

int rlk__socket_step(rlk__transport *t, short revents)
{
    rlk__connecting *c = &t->cs;
    int64_t now;
    if (c->events && revents && t->fd >= 0) {
        int err = connect_outcome(t->fd, revents);
        if (err == 0) return sock_connected(t);
        if (err > 0) {
            rlk__transport_seterr(t, "connect %s: %s", where(t), strerror(err));
            sock_close(t);
            if (c->unix_sock) return RLK_ERR_CONNECT;
            return tcp_next(t);
        }
    }
    now = rlk__now_ms();
    if (c->deadline >= 0 && now >= c->deadline) {
        /* The deadline is shared: no time is left for another address. */
        rlk__transport_seterr(t, "connect %s: timed out after %lld ms", where(t),
                              allowed_ms(c->deadline, c->start));
        sock_close(t);
        free_list(t);
        return RLK_ERR_TIMEOUT;
    }
    if (c->unix_sock && !c->events && now >= c->wake) return unix_try(t);
    return RLK__IN_PROGRESS;
}

/* The step of a plain connect: the socket's, and the connect is over
 * when it is. */
static int plain_step(rlk__transport *t, short revents)
{
    int rc = rlk__socket_step(t, revents);
    if (rc != RLK__IN_PROGRESS) memset(&t->cs, 0, sizeof t->cs);
    return rc;
}

int rlk__connect_step(rlk__transport *t, short revents)
{
    if (!t->cs.step) {
        rlk__transport_seterr(t, "connect: none under way");
        return RLK_ERR_INVALID;
    }
    return t->cs.step(t, revents);
}

int rlk__connect_expire(rlk__transport *t)
{
    if (!t->cs.step) return RLK_OK;
    t->cs.deadline = rlk__now_ms();
    return rlk__connect_step(t, 0);
}

int rlk__connect_finish(rlk__transport *t, int rc)
{
    while (rc == RLK__IN_PROGRESS) {
        struct pollfd p = {t->cs.events ? t->fd : -1, t->cs.events, 0};
        int r = poll(&p, 1, rlk__ms_left(t->cs.wake));
        if (r < 0 && errno != EINTR) {
            rlk__transport_seterr(t, "connect %s: poll: %s", t->peer, strerror(errno));
            rlk__transport_close(t);
            return RLK_ERR_IO;
        }
        /* A signal, or a poll that woke a little early: the step looks
         * at the clock. */
        rc = rlk__connect_step(t, r > 0 ? p.revents : 0);
    }
    return rc;
}

/* A new connect on t: the old connection (or connect) closed, the
 * state cleared. */
static void connect_begin(rlk__transport *t, int64_t deadline)
{
    if (t->fd >= 0 || t->ops || t->cs.step) rlk__transport_close(t);
    memset(&t->cs, 0, sizeof t->cs);
    t->cs.step = plain_step;
    t->cs.deadline = deadline;
    t->cs.began = t->cs.start = rlk__now_ms();
    t->cs.wake = deadline;
}

/* A plain start's result: the state cleared once the connect is over. */
static int started(rlk__transport *t, int rc)
{
    if (rc != RLK__IN_PROGRESS) {
        if (rc != RLK_OK) free_list(t);
        memset(&t->cs, 0, sizeof t->cs);
    }
    return rc;
}

int rlk__tcp_connect_start(rlk__transport *t, const char *host, int port, int64_t deadline)
{
    struct addrinfo hints, *res = NULL;
    char service[16];
    int rc;

    connect_begin(t, deadline);
    t->err[0] = '\0';
    t->peer[0] = '\0';
    if (!host || !*host || port < 1 || port > 65535) {
        rlk__transport_seterr(t, "connect: %s", !host || !*host ? "no host" : "port out of range");
        return started(t, RLK_ERR_INVALID);
    }
    set_peer(t, host, port);

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    /* No AI_ADDRCONFIG: glibc ignores loopback addresses when deciding
     * which families are "configured", which would hide ::1 on a host
     * whose only IPv6 address is the loopback one. */
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(service, sizeof service, "%d", port);
    rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        rlk__transport_seterr(t, "resolve %s: %s", host,
                              rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return started(t, RLK_ERR_CONNECT);
    }
    t->cs.owned = res;
    t->cs.next = res;
    t->cs.start = rlk__now_ms();
    if (deadline >= 0 && t->cs.start >= deadline) {
        rlk__transport_seterr(t, "resolve %s: timed out after %lld ms", host,
                              allowed_ms(deadline, t->cs.began));
        return started(t, RLK_ERR_TIMEOUT);
    }
    return started(t, tcp_next(t));
}

int rlk__tcp_connect_list_start(rlk__transport *t, const struct addrinfo *list, int64_t deadline)
{
    char peer[sizeof t->peer];
    /* The list alone names no peer: the caller's, if any, is kept. */
    memcpy(peer, t->peer, sizeof peer);
    connect_begin(t, deadline);
    memcpy(t->peer, peer, sizeof peer);
    t->cs.next = list;
    return started(t, tcp_next(t));
}

int rlk__unix_connect_start(rlk__transport *t, const char *path, int64_t deadline)
{
    struct sockaddr_un sa;
    size_t len;

    connect_begin(t, deadline);
    t->cs.unix_sock = 1;
    t->cs.pause_ms = 1;
    t->err[0] = '\0';
    t->peer[0] = '\0';
    len = path ? strlen(path) : 0;
    if (len == 0) {
        rlk__transport_seterr(t, "connect: no socket path");
        return started(t, RLK_ERR_INVALID);
    }
    snprintf(t->peer, sizeof t->peer, "%s", path);
    if (len >= sizeof sa.sun_path) {
        rlk__transport_seterr(t, "connect %s: socket path too long (%zu bytes, at most %zu)",
                              t->peer, len, sizeof sa.sun_path - 1);
        return started(t, RLK_ERR_INVALID);
    }
    t->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (t->fd < 0) {
        rlk__transport_seterr(t, "connect %s: %s", t->peer, strerror(errno));
        return started(t, RLK_ERR_CONNECT);
    }
    return started(t, unix_try(t));
}

int rlk__tcp_connect(rlk__transport *t, const char *host, int port, int64_t deadline)
{
    return rlk__connect_finish(t, rlk__tcp_connect_start(t, host, port, deadline));
}

int rlk__tcp_connect_list(rlk__transport *t, const struct addrinfo *list, int64_t deadline)
{
    return rlk__connect_finish(t, rlk__tcp_connect_list_start(t, list, deadline));
}

int rlk__unix_connect(rlk__transport *t, const char *path, int64_t deadline)
{
    return rlk__connect_finish(t, rlk__unix_connect_start(t, path, deadline));
}

/* ---- reading and writing under a deadline ---- */

/* Waits as the transport asked (want is RLK__WANT_READ or _WRITE); a TLS
 * read may need the socket writable and a TLS write readable. */
static int wait_for(rlk__transport *t, ssize_t want, int64_t deadline, const char *what)
{
    int w = rlk__wait_fd(t->fd, want == RLK__WANT_READ ? POLLIN : POLLOUT, deadline);
    if (w > 0) return RLK_OK;
    if (w == 0) {
        rlk__transport_seterr(t, "%s %s: timed out", what, t->peer);
        return RLK_ERR_TIMEOUT;
    }
    rlk__transport_seterr(t, "%s %s: poll: %s", what, t->peer, strerror(errno));
    return RLK_ERR_IO;
}

int rlk__transport_write_all(rlk__transport *t, const void *buf, size_t n, int64_t deadline)
{
    const char *p = buf;
    size_t off = 0;
    if (t->fd < 0 || !t->ops) {
        rlk__transport_seterr(t, "write: not connected");
        return RLK_ERR_IO;
    }
    while (off < n) {
        ssize_t r = t->ops->write(t, p + off, n - off);
        if (r > 0) {
            off += (size_t)r;
        } else if (r == RLK__WANT_READ || r == RLK__WANT_WRITE) {
            int rc = wait_for(t, r, deadline, "write");
            if (rc != RLK_OK) return rc;
        } else if (r == 0) {
            rlk__transport_seterr(t, "write %s: connection closed", t->peer);
            return RLK_ERR_IO;
        } else {
            return (int)r;
        }
    }
    return RLK_OK;
}

/* The socket's reads block from now on (its other reads and writes pass
 * MSG_DONTWAIT); 0, or RLK_ERR_IO. */
static int blocking_reads(rlk__transport *t)
{
    if (t->blocking) return 0;
    int flags = fcntl(t->fd, F_GETFL);
    if (flags < 0 || fcntl(t->fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
        rlk__transport_seterr(t, "read %s: fcntl: %s", t->peer, strerror(errno));
        return RLK_ERR_IO;
    }
    t->blocking = 1;
    t->rcvtimeo_ms = -2;
    return 0;
}

/* SO_RCVTIMEO of left ms (> 0), unless it is set so already; 0, or
 * RLK_ERR_IO. */
static int rcvtimeo(rlk__transport *t, int left)
{
    if (left == t->rcvtimeo_ms) return 0;
    struct timeval tv = {left / 1000, (left % 1000) * 1000};
    if (setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) {
        rlk__transport_seterr(t, "read %s: setsockopt: %s", t->peer, strerror(errno));
        return RLK_ERR_IO;
    }
    t->rcvtimeo_ms = left;
    return 0;
}

/*
 * A plain socket waits for its reply inside recv: one system call where
 * poll and recv would be two (and a recv tried too early, three).  The
 * wait is bounded by SO_RCVTIMEO, set again only when the time left
 * changes; a timeout that fires early by rounding is resumed.
 */
static ssize_t plain_read_wait(rlk__transport *t, void *buf, size_t n, int64_t deadline)
{
    for (;;) {
        ssize_t r = rlk__transport_recv_until(t, buf, n, deadline);
        if (r != RLK__WANT_READ) return r;
        if (deadline >= 0 && rlk__now_ms() >= deadline) {
            rlk__transport_seterr(t, "read %s: timed out", t->peer);
            return RLK_ERR_TIMEOUT;
        }
    }
}

ssize_t rlk__transport_recv_until(rlk__transport *t, void *buf, size_t n, int64_t deadline)
{
    if (t->fd < 0 || t->tls) {
        rlk__transport_seterr(t, "read: not a plain socket");
        return RLK_ERR_IO;
    }
    int left = rlk__ms_left(deadline);
    if (left == 0) return plain_read(t, buf, n);
    if (blocking_reads(t)) return RLK_ERR_IO;
    /* Always a timeout: a signal then ends the wait (EINTR) even under
     * SA_RESTART.  Rounded down to 32 ms past 64 (waking a little early
     * costs a turn; setting it at every wait would cost a call each). */
    if (left < 0 || left > 3600000) left = 3600000;
    if (left >= 64) left &= ~31;
    if (rcvtimeo(t, left)) return RLK_ERR_IO;
    ssize_t r = recv(t->fd, buf, n, 0);
    if (r >= 0) return r;
    if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) return RLK__WANT_READ;
    rlk__transport_seterr(t, "read %s: %s", t->peer, strerror(errno));
    return RLK_ERR_IO;
}

ssize_t rlk__transport_read_some(rlk__transport *t, void *buf, size_t n, int64_t deadline)
{
    if (n == 0) {
        rlk__transport_seterr(t, "read: empty buffer");
        return RLK_ERR_INVALID;
    }
    if (t->fd < 0 || !t->ops) {
        rlk__transport_seterr(t, "read: not connected");
        return RLK_ERR_IO;
    }
    if (!t->tls) return plain_read_wait(t, buf, n, deadline);
    for (;;) {
        ssize_t r = t->ops->read(t, buf, n);
        if (r >= 0) return r;
        if (r == RLK__WANT_READ || r == RLK__WANT_WRITE) {
            int rc = wait_for(t, r, deadline, "read");
            if (rc != RLK_OK) return rc;
        } else {
            return r;
        }
    }
}

int rlk__transport_wait_readable(rlk__transport *t, int64_t deadline)
{
    int w;
    if (t->fd < 0 || !t->ops) {
        rlk__transport_seterr(t, "wait: not connected");
        return RLK_ERR_IO;
    }
    if (t->ops->pending && t->ops->pending(t) > 0) return 1;
    w = rlk__wait_fd(t->fd, POLLIN, deadline);
    if (w >= 0) return w;
    rlk__transport_seterr(t, "wait %s: poll: %s", t->peer, strerror(errno));
    return RLK_ERR_IO;
}
