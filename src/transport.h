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

struct rlk__transport {
    const rlk__transport_ops *ops;
    int fd;               /* -1 when closed */
    void *tls;            /* SSL * when TLS */
    void *tls_ctx;        /* SSL_CTX * when TLS */
    char peer[300];       /* "host:port" or the socket path, for messages */
    char err[512];
};

/* Monotonic clock in milliseconds. */
int64_t rlk__now_ms(void);

/* Milliseconds from now until deadline, clamped to [0, INT_MAX]; -1 for
 * no deadline (as poll() takes it). */
int rlk__ms_left(int64_t deadline);

/* Sets t to closed, with no error. */
void rlk__transport_init(rlk__transport *t);

/* Connects to host:port, trying every address getaddrinfo returns (IPv4
 * and IPv6) in turn until one answers, all under one deadline; sets
 * TCP_NODELAY and SO_KEEPALIVE.  RLK_OK, RLK_ERR_CONNECT (refused,
 * unreachable, name not found), RLK_ERR_TIMEOUT. */
int rlk__tcp_connect(rlk__transport *t, const char *host, int port, int64_t deadline);

/* Connects to a Unix stream socket.  RLK_OK, RLK_ERR_CONNECT,
 * RLK_ERR_TIMEOUT, RLK_ERR_INVALID (path too long). */
int rlk__unix_connect(rlk__transport *t, const char *path, int64_t deadline);

/* TCP connect then TLS handshake (TLS 1.2 minimum), under one deadline.
 * Verifies the peer against cfg's CA file/dir or the system store, sends
 * SNI (cfg->server_name, else host unless it is an IP literal), checks the
 * certificate's DNS or IP SAN against server_name or host; client
 * certificate when cfg->cert_file is set.  cfg->insecure skips
 * verification.  RLK_OK, RLK_ERR_CONNECT, RLK_ERR_TIMEOUT, RLK_ERR_TLS;
 * without OpenSSL: RLK_ERR_TLS "TLS support not compiled in". */
int rlk__tls_connect(rlk__transport *t, const char *host, int port,
                     const rlk_tls_config *cfg, int64_t deadline);

/* TLS protocol version and cipher names of a TLS transport, or NULL. */
const char *rlk__tls_version(const rlk__transport *t);
const char *rlk__tls_cipher(const rlk__transport *t);

/* Writes all n bytes before the deadline.  RLK_OK, RLK_ERR_IO,
 * RLK_ERR_TLS, RLK_ERR_TIMEOUT. */
int rlk__transport_write_all(rlk__transport *t, const void *buf, size_t n,
                             int64_t deadline);

/* Reads at least one byte (at most n) before the deadline.  Returns the
 * count, 0 when the peer closed, or RLK_ERR_IO / RLK_ERR_TLS /
 * RLK_ERR_TIMEOUT. */
ssize_t rlk__transport_read_some(rlk__transport *t, void *buf, size_t n,
                                 int64_t deadline);

/* Waits until the transport is readable (or has buffered bytes), or the
 * deadline.  1 readable, 0 deadline passed, RLK_ERR_IO on poll failure. */
int rlk__transport_wait_readable(rlk__transport *t, int64_t deadline);

/* Closes and frees what the transport holds; t may be connected again. */
void rlk__transport_close(rlk__transport *t);

/* ---- URLs ---- */

typedef struct rlk__url {
    int kind;              /* RLK__URL_TCP, RLK__URL_TLS, RLK__URL_UNIX */
    char *user;            /* NULL when absent; percent-decoded          */
    char *password;        /* NULL when absent; percent-decoded          */
    char *host;            /* without [] for IPv6 literals               */
    int port;              /* default 6379                               */
    char *path;            /* unix socket path                           */
    int db;                /* default 0                                  */
} rlk__url;

#define RLK__URL_TCP 1
#define RLK__URL_TLS 2
#define RLK__URL_UNIX 3

/*
 * Parses redis://[user[:password]@]host[:port][/db], rediss://... (TLS),
 * unix:///path/to/socket[?db=N] (also unix://[user[:password]@]/path),
 * IPv6 literals in brackets, percent-encoding in user, password, host
 * and path.  A URL of "" or NULL means: $REDIS_URL when set and not
 * empty, else redis://127.0.0.1:6379.  RLK_OK, RLK_ERR_URL (reason in
 * err, never the password), RLK_ERR_NOMEM.  Free with rlk__url_free.
 */
int rlk__url_parse(rlk__url *u, const char *url, char *err, size_t errlen);
void rlk__url_free(rlk__url *u);

/* ---- SHA1 ---- */

/* SHA1 of data (OpenSSL's when built with it, else a small internal one),
 * as 40 lowercase hex digits and a NUL. */
void rlk__sha1_hex(const void *data, size_t len, char out[41]);

#endif
