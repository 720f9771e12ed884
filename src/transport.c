/* SPDX-License-Identifier: BSD-3-Clause */
/* Plain byte streams (TCP, Unix socket) and the deadline-bounded loops
 * that every transport, TLS included, goes through. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "transport.h"
#include "url.h"
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

void rlk__transport_close(rlk__transport *t)
{
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

/* 0 connected, -1 the deadline passed, else an errno value. */
static int connect_wait(int fd, const struct sockaddr *sa, socklen_t len, int64_t deadline)
{
    int err = 0, w;
    socklen_t elen = sizeof err;
    if (connect(fd, sa, len) == 0) return 0;
    /* After EINTR the connection attempt goes on in the background and is
     * finished exactly like an EINPROGRESS one. */
    if (errno != EINPROGRESS && errno != EINTR) return errno;
    w = rlk__wait_fd(fd, POLLOUT, deadline);
    if (w == 0) return -1;
    if (w < 0) return errno;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) return errno;
    return err;
}

static void set_peer(rlk__transport *t, const char *host, int port)
{
    if (strchr(host, ':'))
        snprintf(t->peer, sizeof t->peer, "[%s]:%d", host, port);
    else
        snprintf(t->peer, sizeof t->peer, "%s:%d", host, port);
}

int rlk__tcp_connect(rlk__transport *t, const char *host, int port, int64_t deadline)
{
    struct addrinfo hints, *res = NULL;
    char service[16];
    int64_t start = rlk__now_ms();
    int rc, status;

    if (t->fd >= 0 || t->ops) rlk__transport_close(t);
    t->err[0] = '\0';
    t->peer[0] = '\0';
    if (!host || !*host || port < 1 || port > 65535) {
        rlk__transport_seterr(t, "connect: %s", !host || !*host ? "no host" : "port out of range");
        return RLK_ERR_INVALID;
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
        return RLK_ERR_CONNECT;
    }
    if (deadline >= 0 && rlk__now_ms() >= deadline) {
        freeaddrinfo(res);
        rlk__transport_seterr(t, "resolve %s: timed out after %lld ms", host,
                              (long long)(deadline > start ? deadline - start : 0));
        return RLK_ERR_TIMEOUT;
    }

    status = rlk__tcp_connect_list(t, res, deadline);
    freeaddrinfo(res);
    return status;
}

int rlk__tcp_connect_list(rlk__transport *t, const struct addrinfo *list, int64_t deadline)
{
    const struct addrinfo *ai;
    char addr[NI_MAXHOST + NI_MAXSERV + 4];
    int64_t start = rlk__now_ms();
    int rc, status = RLK_ERR_CONNECT, one = 1;

    for (ai = list; ai; ai = ai->ai_next) {
        int fd =
            socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        format_addr(ai->ai_addr, ai->ai_addrlen, addr, sizeof addr);
        if (fd < 0) {
            rlk__transport_seterr(t, "connect %s: %s", addr, strerror(errno));
            continue;
        }
        rc = connect_wait(fd, ai->ai_addr, ai->ai_addrlen, deadline);
        if (rc == 0) {
            /* Commands are small and latency matters more than packet
             * count; keepalive finds peers that vanished while a lock is
             * held and nothing is sent. */
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
            t->fd = fd;
            t->ops = &plain_ops;
            t->err[0] = '\0';
            return RLK_OK;
        }
        close(fd);
        if (rc < 0) {
            /* The deadline is shared: no time is left for the next address. */
            rlk__transport_seterr(t, "connect %s: timed out after %lld ms", addr,
                                  (long long)(deadline > start ? deadline - start : 0));
            status = RLK_ERR_TIMEOUT;
            break;
        }
        rlk__transport_seterr(t, "connect %s: %s", addr, strerror(rc));
    }
    return status;
}

int rlk__unix_connect(rlk__transport *t, const char *path, int64_t deadline)
{
    struct sockaddr_un sa;
    struct timeval tv;
    int64_t start = rlk__now_ms();
    size_t len;
    int fd, r, ms, flags;

    if (t->fd >= 0 || t->ops) rlk__transport_close(t);
    t->err[0] = '\0';
    t->peer[0] = '\0';
    len = path ? strlen(path) : 0;
    if (len == 0) {
        rlk__transport_seterr(t, "connect: no socket path");
        return RLK_ERR_INVALID;
    }
    snprintf(t->peer, sizeof t->peer, "%s", path);
    memset(&sa, 0, sizeof sa);
    if (len >= sizeof sa.sun_path) {
        rlk__transport_seterr(t, "connect %s: socket path too long (%zu bytes, at most %zu)",
                              t->peer, len, sizeof sa.sun_path - 1);
        return RLK_ERR_INVALID;
    }
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, len + 1);

    /* A non-blocking connect to a Unix socket whose backlog is full fails
     * with EAGAIN and cannot be waited for with poll(); a blocking one
     * waits for room, bounded by SO_SNDTIMEO.  The socket becomes
     * non-blocking once connected. */
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rlk__transport_seterr(t, "connect %s: %s", t->peer, strerror(errno));
        return RLK_ERR_CONNECT;
    }
    for (;;) {
        ms = rlk__ms_left(deadline);
        if (ms == 0) ms = 1; /* 0 would mean no limit at all */
        if (ms > 0) {
            tv.tv_sec = ms / 1000;
            tv.tv_usec = (ms % 1000) * 1000;
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        }
        r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
        if (r == 0 || errno == EISCONN) break;
        if (errno == EINTR && (deadline < 0 || rlk__now_ms() < deadline)) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS || errno == EINTR) {
            close(fd);
            rlk__transport_seterr(t, "connect %s: timed out after %lld ms", t->peer,
                                  (long long)(deadline > start ? deadline - start : 0));
            return RLK_ERR_TIMEOUT;
        }
        rlk__transport_seterr(t, "connect %s: %s", t->peer, strerror(errno));
        close(fd);
        return RLK_ERR_CONNECT;
    }
    memset(&tv, 0, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        rlk__transport_seterr(t, "connect %s: %s", t->peer, strerror(errno));
        close(fd);
        return RLK_ERR_CONNECT;
    }
    t->fd = fd;
    t->ops = &plain_ops;
    return RLK_OK;
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

int rlk__connect_url(rlk__transport *t, const rlk__url *u, const rlk_tls_config *tls,
                     int64_t deadline)
{
    switch (u->kind) {
    case RLK__URL_UNIX:
        return rlk__unix_connect(t, u->path, deadline);
    case RLK__URL_TLS:
        return rlk__tls_connect(t, u->host, u->port, tls, deadline);
    default:
        return rlk__tcp_connect(t, u->host, u->port, deadline);
    }
}
