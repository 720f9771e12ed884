/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Byte streams under a connection: TCP, Unix socket, TLS over TCP.
 * Internal to the library (rlk__ prefix, not installed).
 *
 * Every socket is non-blocking; every wait is bounded by an absolute
 * deadline on the monotonic clock, in milliseconds (rlk__now_ms()).  A
 * deadline of -1 means none.  A failing call leaves a one-line reason in
 * t->err, such as "connect 127.0.0.1:6390: Connection refused" or "TLS:
 * certificate verify failed: hostname mismatch"; never a password.
 */
#ifndef RESPLOCK_TRANSPORT_H
#define RESPLOCK_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "resplock.h"

/* Results of read and write besides a byte count. */
#define RLK__WANT_READ (-1000)  /* try again when the fd is readable    */
#define RLK__WANT_WRITE (-1001) /* try again when the fd is writable    */
/* Result of a connect's start or step: it goes on (see rlk__connect_step). */
#define RLK__IN_PROGRESS (-1002)

typedef struct rlk__transport rlk__transport;

typedef struct rlk__transport_ops {
    /* > 0 bytes; 0 the peer closed; RLK__WANT_*; or a negative status
     * (RLK_ERR_IO, RLK_ERR_TLS) with t->err set. */
    ssize_t (*read)(rlk__transport *t, void *buf, size_t n);
    ssize_t (*write)(rlk__transport *t, const void *buf, size_t n);
    /* Bytes already decrypted and buffered inside the transport, which
     * poll() cannot see. */
    size_t (*pending)(rlk__transport *t);
    void (*close)(rlk__transport *t);
} rlk__transport_ops;

struct addrinfo;

/* A connect under way (see "Connecting in steps" below).  Read events
 * and wake; the rest belongs to transport.c and tls.c. */
typedef struct rlk__connecting {
    /* The layer's step (the socket's, or TLS's over it); NULL when no
     * connect is under way. */
    int (*step)(rlk__transport *t, short revents);
    /* Frees what the layer holds besides the socket, when the connect
     * is given up (NULL: nothing). */
    void (*drop)(rlk__transport *t);
    short events;          /* POLLIN or POLLOUT on t->fd the step waits
                              for; 0: only the time (t->fd may be -1)   */
    int64_t wake;          /* the step is due by then (-1: no bound)    */
    int64_t deadline;      /* of the whole connect (-1: none)           */
    int64_t began;         /* when the connect began (TLS's messages)   */
    int64_t start;         /* when the socket's tries began             */
    struct addrinfo *owned;          /* getaddrinfo's list, freed at the end */
    const struct addrinfo *next;     /* the addresses not tried yet          */
    char addr[64];         /* the address being tried, for messages     */
    int unix_sock;         /* a Unix socket (its path in t->peer)       */
    int pause_ms;          /* its next pause while the server's queue is
                              full                                      */
    int upper;             /* the socket is connected: TLS shakes hands */
} rlk__connecting;

struct rlk__transport {
    const rlk__transport_ops *ops; /* NULL until connected */
    int fd;               /* -1 when closed; while connecting, the
                             socket being connected (or -1)            */
    void *tls;            /* SSL * when TLS; use the functions below, the
                             SSL does not write to fd directly (see tls.c) */
    void *tls_ctx;        /* SSL_CTX * when TLS */
    char peer[300];       /* "host:port" or the socket path, for messages */
    char err[512];
    int blocking;         /* plain socket switched to blocking reads      */
    int rcvtimeo_ms;      /* SO_RCVTIMEO last set (-2: never)              */
    int lasting;          /* with RLK_ERR_TLS: another try would fail the
                             same way (see rlk__tls_connect)               */
    rlk__connecting cs;   /* a connect under way                          */
};

/* Sets t to closed, with no error.  Every connect function expects an
 * initialised t, and closes it first if it is still open (or still
 * connecting). */
void rlk__transport_init(rlk__transport *t);

/*
 * Connecting in steps.  Each connect below has a _start function that
 * never waits (but see name resolution): it returns RLK_OK (connected
 * already), a failure (t closed, the reason in t->err), or
 * RLK__IN_PROGRESS.  Then t->cs.events says what the connect waits for
 * on t->fd (POLLOUT for a TCP connect; POLLIN or POLLOUT as the TLS
 * handshake asks; 0 for nothing but the time: a Unix socket whose
 * server's queue is full, where no event tells when it has room, is
 * tried again after a short pause), and t->cs.wake the time by which
 * rlk__connect_step must be called even without that event (the
 * connect's deadline, or the next try).  When a step fails on one
 * address the next one is tried; the TLS handshake follows the TCP
 * connect as further steps.  rlk__transport_close gives a connect up.
 * The blocking functions are these steps in a loop (rlk__connect_finish).
 *
 * Name resolution (getaddrinfo) is the one part that blocks, and cannot
 * be interrupted: a numeric address (or rlk__tcp_connect_list_start's
 * list, resolved beforehand) never waits for a resolver.
 */

/* Advances a connect under way.  revents: what poll reported for t->fd
 * (0: nothing came, or it was not polled; the step then only looks at
 * the time).  Results as a _start function's.  RLK_ERR_INVALID when no
 * connect is under way. */
int rlk__connect_step(rlk__transport *t, short revents);

/* Ends a connect under way now, as its deadline would (its timeout
 * status and message: "timed out after" the time it had), for a caller
 * whose own deadline bounds it.  RLK_OK when none is under way. */
int rlk__connect_expire(rlk__transport *t);

/* Waits for what a connect wants and steps it until it ends, from rc, a
 * _start function's result.  Returns the final status. */
int rlk__connect_finish(rlk__transport *t, int rc);

int rlk__tcp_connect_start(rlk__transport *t, const char *host, int port, int64_t deadline);
/* list must outlive the connect. */
int rlk__tcp_connect_list_start(rlk__transport *t, const struct addrinfo *list, int64_t deadline);
int rlk__unix_connect_start(rlk__transport *t, const char *path, int64_t deadline);
int rlk__tls_connect_start(rlk__transport *t, const char *host, int port,
                           const rlk_tls_config *cfg, int64_t deadline);

/* Connects to host:port, trying every address getaddrinfo returns (IPv4
 * and IPv6) in turn until one answers, all under one deadline; sets
 * TCP_NODELAY and SO_KEEPALIVE.  host may be an IPv6 literal without
 * brackets.  RLK_OK, RLK_ERR_CONNECT (refused, unreachable, name not
 * found), RLK_ERR_TIMEOUT, RLK_ERR_INVALID (host NULL or empty, port
 * outside 1-65535).  Name resolution itself (getaddrinfo) cannot be
 * interrupted: a slow resolver can overrun the deadline, which is then
 * reported as RLK_ERR_TIMEOUT before any connect is tried. */
int rlk__tcp_connect(rlk__transport *t, const char *host, int port, int64_t deadline);

/* The address loop of rlk__tcp_connect, for a list already resolved:
 * each address in turn until one answers, under one deadline. */
int rlk__tcp_connect_list(rlk__transport *t, const struct addrinfo *list, int64_t deadline);

/* Connects to a Unix stream socket.  RLK_OK, RLK_ERR_CONNECT,
 * RLK_ERR_TIMEOUT, RLK_ERR_INVALID (path too long). */
int rlk__unix_connect(rlk__transport *t, const char *path, int64_t deadline);

/* TCP connect then TLS handshake (TLS 1.2 minimum), under one deadline.
 * Verifies the peer against cfg's CA file/dir or the system store, sends
 * SNI (cfg->server_name, else host unless it is an IP literal), checks the
 * certificate's DNS or IP SAN against server_name or host; client
 * certificate when cfg->cert_file is set (its key from cfg->key_file, or
 * from cert_file itself when key_file is NULL; encrypted keys are refused,
 * never prompted for).  cfg->insecure skips verification (and loading
 * CAs).  cfg NULL: verify against the system store.  Files are loaded
 * and names checked before connecting, so their errors come without
 * network traffic (cfg's strings are not kept).
 * RLK_OK, RLK_ERR_CONNECT, RLK_ERR_TIMEOUT, RLK_ERR_TLS, RLK_ERR_INVALID,
 * RLK_ERR_NOMEM; without OpenSSL: RLK_ERR_TLS "TLS support not compiled
 * in".  Under TLS 1.3 a server that rejects the client certificate (or
 * its absence) says so only after the client finished the handshake, so
 * that failure surfaces at the first read or write, as RLK_ERR_TLS with
 * "(the server requires a client certificate)" or "(the server rejected
 * the client certificate)" in the message.  t->lasting tells, with
 * RLK_ERR_TLS from here or from such a read or write, a failure another
 * try would meet again (the set-up: files, names, no TLS compiled in;
 * or a certificate refused, by either side) from one that may pass (the
 * server closed or reset the connection during the handshake, as a
 * server full of clients does; any other handshake failure). */
int rlk__tls_connect(rlk__transport *t, const char *host, int port,
                     const rlk_tls_config *cfg, int64_t deadline);

/* TLS protocol version and cipher names of a connected TLS transport,
 * or NULL. */
const char *rlk__tls_version(const rlk__transport *t);
const char *rlk__tls_cipher(const rlk__transport *t);

/* Writes all n bytes before the deadline.  RLK_OK, RLK_ERR_IO (also when
 * not connected), RLK_ERR_TLS, RLK_ERR_TIMEOUT.  Never raises SIGPIPE. */
int rlk__transport_write_all(rlk__transport *t, const void *buf, size_t n,
                             int64_t deadline);

/* Reads at least one byte (at most n, n > 0) before the deadline.
 * Returns the count, 0 when the peer closed (for TLS also a close without
 * close_notify: RESP frames itself, so truncation is detected above), or
 * RLK_ERR_IO (also when not connected) / RLK_ERR_TLS / RLK_ERR_TIMEOUT /
 * RLK_ERR_INVALID (n == 0). */
ssize_t rlk__transport_read_some(rlk__transport *t, void *buf, size_t n,
                                 int64_t deadline);

/* A plain socket's one read that waits until the deadline (-1: none):
 * the socket is switched to blocking reads (its other reads and writes
 * pass MSG_DONTWAIT), so that a caller with nothing else to watch waits
 * in recv instead of poll and recv.  The count, 0 when the peer closed,
 * RLK__WANT_READ when the deadline (or a little before it) passed or a
 * signal came first, RLK_ERR_IO (also for a TLS transport). */
ssize_t rlk__transport_recv_until(rlk__transport *t, void *buf, size_t n, int64_t deadline);

/* Waits until the transport is readable (or has buffered bytes), or the
 * deadline.  1 readable, 0 deadline passed, RLK_ERR_IO on poll failure or
 * when not connected.  Readable is a hint for TLS: the bytes may be a
 * record without application data, so a read can still want more (and
 * read_some waits for it). */
int rlk__transport_wait_readable(rlk__transport *t, int64_t deadline);

/* Closes and frees what the transport holds; t may be connected again.
 * t->err and t->peer are kept, so a failure can still be reported. */
void rlk__transport_close(rlk__transport *t);

/* For the transport's own files (transport.c, tls.c). */

/* The socket's step (TCP's addresses, or a Unix socket), for a layer
 * over it: RLK_OK when the socket is connected (plain ops set), the
 * address list freed; a failure with the socket closed; or
 * RLK__IN_PROGRESS.  It leaves t->cs.step and drop to the layer. */
int rlk__socket_step(rlk__transport *t, short revents);

/* Waits for events (POLLIN, POLLOUT) on fd until the deadline, resuming
 * after signals.  1 ready (also on error or hang-up: the next call will
 * tell), 0 deadline passed, -1 poll failed (errno set). */
int rlk__wait_fd(int fd, short events, int64_t deadline);

/* Formats a message into t->err. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void rlk__transport_seterr(rlk__transport *t, const char *fmt, ...);

#endif
