/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Real redis-server processes for tests, on free loopback ports.
 *
 * Each server runs in a temporary directory of its own (under $TMPDIR or
 * /tmp) with persistence off, in its own process group, and is stopped
 * (SIGTERM, then SIGKILL after a deadline) by ts_stop or, for those still
 * running, when the test program exits.  On Linux a server also dies with
 * the test program if that crashes.  Readiness is "answers PING" (through
 * the library's own transport), polled under a deadline.
 *
 * The program redis-server is taken from $RLK_REDIS_SERVER, or looked up
 * in $PATH: one rule for every test (tests/redis-lib.sh, for the test
 * scripts, puts the directory of a $RLK_REDIS_SERVER given as a path
 * first on PATH, and cluster.c runs the redis-cli beside it), so that
 * `RLK_REDIS_SERVER=$(scripts/servers path NAME)/redis-server make check`
 * runs the whole suite against NAME.  Failures are explained on stderr
 * (with the end of the server's log) and return NULL or -1.
 */
#ifndef RESPLOCK_TEST_SERVER_H
#include <stdint.h>
#include <sys/socket.h>

#define RESPLOCK_TEST_SERVER_H

#include <sys/types.h>

typedef struct ts_options {
    int ipv6;                    /* listen on ::1 instead of 127.0.0.1     */
    int unix_socket;             /* also on DIR/redis.sock, mode 700       */
    const char *password;        /* requirepass                            */
    /* TLS: when tls_cert is set the server listens with TLS only (its
     * port is the TLS port).  The readiness check does not verify the
     * server; it presents tls_client_cert/key when given, which
     * tls_auth_clients needs. */
    const char *tls_cert, *tls_key, *tls_ca;
    int tls_auth_clients;
    const char *tls_client_cert, *tls_client_key;
    const char *const *extra;    /* more arguments, NULL-terminated        */
    /* Sentinel mode: this text is written to DIR/sentinel.conf (on the
     * first start only: Sentinel rewrites the file with what it learns,
     * and a restart must keep that), and the server runs as
     * `redis-server DIR/sentinel.conf --sentinel` and then the usual
     * options: Sentinel takes its config file only as the first
     * argument, and refuses to run without one it can write. */
    const char *sentinel_conf;
} ts_options;

typedef struct ts_server {
    pid_t pid;                   /* -1 while stopped                       */
    int port;                    /* the TCP (or TLS) port                  */
    char host[16];               /* "127.0.0.1" or "::1"                   */
    char dir[256];               /* its temporary directory                */
    char unix_path[300];         /* "" without a Unix socket               */
    ts_options opt;              /* a copy: the strings must outlive it    */
} ts_server;

/* Whether the server program is there ($RLK_REDIS_SERVER as a path: an
 * executable file; else looked up in $PATH): 0 yes.  When it is not, the
 * program ends skipped (exit 77, tl_skip, why on stdout), unless
 * $RLK_REQUIRE_SERVER is set (not empty, not "0"): then it says why on
 * stderr (once) and returns -1, a failure.  ts_start calls it first. */
int ts_need_server(void);

/* Starts a server (opt NULL: plain TCP on 127.0.0.1) and waits until it
 * answers.  Retries with another port when the chosen one was taken.
 * Without a server program, see ts_need_server. */
ts_server *ts_start(const ts_options *opt);

/* Stops the server and starts it again on the same port (a fresh empty
 * data set): for reconnect tests.  0, or -1 when it does not come back. */
int ts_restart(ts_server *s);

/* Stops the server and waits for it, without restarting; ts_start_again
 * brings it back on the same port.  Both 0 or -1. */
int ts_halt(ts_server *s);
int ts_start_again(ts_server *s);

/* Stops the server, removes its directory, frees s.  NULL is allowed. */
void ts_stop(ts_server *s);

/* A loopback TCP port that nobody listens on right now (ipv6: on ::1),
 * or -1. */
int ts_free_port(int ipv6);

/* 1 when this machine can listen on ::1. */
int ts_have_ipv6(void);

/* A TCP listener on 127.0.0.1 that lets no connection in: listen(fd, 0),
 * its queue filled by connects of its own until one stays pending (on
 * Linux the kernel then drops further SYNs, so a connect to it waits for
 * its deadline).  Never accepts. */
typedef struct ts_hole {
    int lfd;
    int fillers[8];
    int nfill;
    int port;
} ts_hole;

/* 0, or -1 when the queue never filled (h is closed then). */
int ts_hole_open(ts_hole *h);
void ts_hole_close(ts_hole *h);

/* Steps a connect of the library's transport (rc: its _start's result)
 * until its TLS handshake has begun, or the connect ended, or 10 s
 * passed: the last result. */
struct rlk__transport;
int ts_steps_to_handshake(struct rlk__transport *t, int rc);

/* A TCP listener on 127.0.0.1 (its port in *port) that never accepts
 * and never answers: connects complete (the kernel queues them), and
 * whatever is sent stays unread.  The fd, or -1. */
int ts_silent_listener(int *port);

/* Runs prog (looked up in $PATH) with argv in its own process group,
 * stdin from /dev/null, stdout and stderr appended to outpath; on Linux
 * it dies with the test program (when started from its main thread).
 * The child's pid (the caller reaps it), or -1. */
pid_t ts_spawn(const char *prog, char *const argv[], const char *outpath);

/* Prints the last 4 KiB of a (log) file on stderr. */
void ts_show_file_tail(const char *path);

/* Helpers the test programs share. */
/* Monotonic clock in milliseconds. */
int64_t ts_now_ms(void);
/* The polling interval of a deadline loop, not a synchronisation. */
void ts_pause_ms(int ms);
/* Non-zero when s is not NULL and contains needle. */
int ts_contains(const char *s, const char *needle);
/* The loopback address (::1 when ipv6, else 127.0.0.1), port 0, in *ss;
 * returns its length. */
socklen_t ts_loopback(int ipv6, struct sockaddr_storage *ss);

/* The directory of certificates made by tests/gen-certs.sh (made on the
 * first call, removed at exit), or NULL when that failed.  The script is
 * found through $top_srcdir (set by make check), else next to this
 * file's source. */
const char *ts_certs_dir(void);

/* "DIR/name" for a file of ts_certs_dir(), valid until exit; NULL when
 * the certificates could not be made. */
const char *ts_cert(const char *name);

#endif
