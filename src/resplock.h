/*
 * resplock: distributed locks for Redis-compatible servers.
 * Installed as <resplock/resplock.h>; includes <resplock/resp.h>.
 *
 * This part: one connection to one server (TCP, Unix socket or TLS),
 * its handshake, commands, pipelines, push messages, reconnection, and
 * server-side scripts called by SHA1.
 *
 * Thread use: a connection is used by one thread at a time; distinct
 * connections may be used concurrently.  Nothing here starts a thread.
 * Time: every timeout is measured on CLOCK_MONOTONIC.
 */
#ifndef RESPLOCK_H
#define RESPLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "resp.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLK_VERSION "0.1.0"

/* Status codes beyond those of resp.h (RLK_OK, RLK_ERR_NOMEM, ...). */
enum {
    RLK_ERR_IO = -10,      /* read or write failed, or the peer closed      */
    RLK_ERR_TIMEOUT = -11, /* a deadline passed; the connection is closed   */
    RLK_ERR_CONNECT = -12, /* could not connect: refused, unreachable, DNS  */
    RLK_ERR_TLS = -13,     /* TLS handshake or verification failed, or TLS
                              support not compiled in                     */
    RLK_ERR_AUTH = -14,    /* authentication refused (WRONGPASS, NOAUTH...)*/
    RLK_ERR_URL = -15,     /* the URL cannot be parsed                      */
    RLK_ERR_SERVER = -16,  /* the server answered with an error where the
                              library needed success (handshake, SELECT,
                              SCRIPT LOAD)                                 */
    RLK_ERR_CLOSED = -17   /* not connected, and reconnecting is off or
                              every attempt failed                          */
};

/* ------------------------------------------------------------------ */
/* Configuration                                                       */

typedef struct rlk_tls_config {
    const char *ca_file;     /* PEM bundle of trusted CAs; NULL: system store */
    const char *ca_dir;      /* hashed CA directory; NULL: system store       */
    const char *cert_file;   /* client certificate (PEM, chain allowed)       */
    const char *key_file;    /* its private key (PEM)                         */
    const char *server_name; /* SNI and name checked; NULL: the URL's host    */
    int insecure;            /* 1: do not verify the peer (warns on stderr of
                                the CLI; the library only records it)       */
} rlk_tls_config;

typedef struct rlk_conn rlk_conn;

typedef struct rlk_conn_config {
    /* redis://[user[:password]@]host[:port][/db], rediss://... for TLS,
     * unix:///path[?db=N]; NULL or "": $REDIS_URL, else
     * redis://127.0.0.1:6379. */
    const char *url;
    rlk_tls_config tls;
    const char *client_name;   /* sent with HELLO SETNAME / CLIENT SETNAME */
    int protocol;              /* 0: HELLO 3, falling back to RESP2;
                                  2: RESP2 only (no HELLO); 3: RESP3 only */
    int connect_timeout_ms;    /* connect + TLS + handshake; 0: 5000       */
    int command_timeout_ms;    /* per command or pipeline; 0: 5000; -1 none */
    int reconnect_attempts;    /* tries in rlk_conn_reconnect and before a
                                  command on a closed connection; 0: 5;
                                  -1: never reconnect automatically        */
    int backoff_initial_ms;    /* first pause between tries; 0: 50          */
    int backoff_max_ms;        /* pauses double up to this, with jitter;
                                  0: 2000                                    */
    rlk_resp_limits limits;    /* zeros: the codec's defaults               */
    /* Push messages (RESP3 '>' and, on a RESP2 connection that has
     * subscribed, pub/sub messages).  The message is valid during the
     * call only.  May be NULL. */
    void (*on_push)(void *ctx, rlk_conn *c, const rlk_resp_value *msg);
    /* Called after every successful connect and handshake;
     * reconnected is 1 when it replaces an earlier connection, so the
     * layer above can treat what it believed of the server as unknown. */
    void (*on_connect)(void *ctx, rlk_conn *c, int reconnected);
    void *ctx;
} rlk_conn_config;

/* Fills *cfg with the defaults: everything 0/NULL. */
void rlk_conn_config_init(rlk_conn_config *cfg);

/* ------------------------------------------------------------------ */
/* Connection                                                          */

/* Makes an unconnected connection with a copy of cfg (strings copied;
 * the URL is parsed here).  Returns NULL only when memory runs out;
 * a bad URL is reported by rlk_conn_connect. */
rlk_conn *rlk_conn_new(const rlk_conn_config *cfg);

/* Closes the connection (if open) and frees it.  NULL is allowed. */
void rlk_conn_free(rlk_conn *c);

/*
 * Connects and shakes hands, once, under connect_timeout_ms: transport
 * (TCP, Unix, TLS), then HELLO 3 with AUTH and SETNAME; when the server
 * does not know HELLO or refuses protocol 3, RESP2 with AUTH and CLIENT
 * SETNAME; then SELECT when db is not 0.  Returns RLK_OK, RLK_ERR_URL,
 * RLK_ERR_CONNECT, RLK_ERR_TIMEOUT, RLK_ERR_TLS, RLK_ERR_AUTH,
 * RLK_ERR_SERVER, RLK_ERR_IO, RLK_ERR_PROTO, RLK_ERR_NOMEM; the reason is
 * in rlk_conn_errmsg().
 */
int rlk_conn_connect(rlk_conn *c);

/* Closes the connection, then tries to connect up to reconnect_attempts
 * times (at least once), pausing with exponential backoff and jitter
 * between tries.  Returns the last try's status. */
int rlk_conn_reconnect(rlk_conn *c);

/* Closes the transport; the object stays usable. */
void rlk_conn_close(rlk_conn *c);

/* Non-zero while the transport is open. */
int rlk_conn_is_connected(const rlk_conn *c);

/* Counts established connections: 1 after the first connect, +1 for
 * every reconnect.  A caller that remembers it can tell that its
 * connection was replaced (and its server-side state may be gone). */
uint64_t rlk_conn_generation(const rlk_conn *c);

/* The reason of the last failure on this connection ("" if none).  Valid
 * until the next call on c.  Never contains a password. */
const char *rlk_conn_errmsg(const rlk_conn *c);

/* The socket, for poll(); -1 when closed. */
int rlk_conn_fd(const rlk_conn *c);

typedef struct rlk_conn_info {
    int protocol;              /* 2 or 3 */
    char server[32];           /* "redis", "valkey"...; "" if unknown */
    char version[32];          /* "7.0.15"; "" if unknown */
    int64_t client_id;         /* -1 if unknown */
    char user[64];             /* authenticated user ("default" if none) */
    const char *tls_version;   /* "TLSv1.3", or NULL without TLS */
    const char *tls_cipher;    /* or NULL */
    char peer[300];            /* "host:port" or socket path */
    int db;
} rlk_conn_info;

/* What the handshake learned.  Valid while connected. */
const rlk_conn_info *rlk_conn_get_info(const rlk_conn *c);

/* ------------------------------------------------------------------ */
/* Commands                                                            */

/*
 * Sends one command (argv with lengths, binary-safe; argvlen NULL:
 * strlen) and reads its reply, under command_timeout_ms.  Push messages
 * arriving meanwhile go to on_push.  When the connection is closed it is
 * first re-established (rlk_conn_reconnect) unless reconnecting is off; a
 * command is never re-sent after a failure.  A server error is a reply
 * like any other (type RLK_RESP_ERROR or RLK_RESP_BLOB_ERROR) with
 * RLK_OK.  *reply is valid until the next call on c.  A timeout or an I/O
 * or protocol failure closes the connection, so that it never gets out of
 * step with the server.
 */
int rlk_conn_command(rlk_conn *c, rlk_resp_value **reply, int argc,
                     const char *const *argv, const size_t *argvlen);

/* A server-side script, called by SHA1 (EVALSHA), loaded on NOSCRIPT. */
typedef struct rlk_script {
    const char *text;        /* not copied: must outlive the script      */
    size_t len;
    char sha1[41];           /* lowercase hex, computed locally          */
} rlk_script;

/* Computes the script's SHA1 (len 0: strlen). */
void rlk_script_init(rlk_script *s, const char *text, size_t len);

/* One entry of a pipeline: a command, or a script call when script is set
 * (then argv holds the keys, then the arguments; nkeys of them are keys). */
typedef struct rlk_request {
    const rlk_script *script;
    int nkeys;
    int argc;
    const char *const *argv;
    const size_t *argvlen;   /* NULL: strlen */
} rlk_request;

/*
 * Calls a script: EVALSHA sha nkeys argv...; on a NOSCRIPT error, SCRIPT
 * LOAD and one retry, so the caller never sees NOSCRIPT.  Otherwise like
 * rlk_conn_command.
 */
int rlk_conn_eval(rlk_conn *c, rlk_resp_value **reply, const rlk_script *s,
                  int nkeys, int argc, const char *const *argv,
                  const size_t *argvlen);

/*
 * Sends n requests in one pipeline and collects the n replies in order
 * into replies[0..n), valid until the next call on c.  Writing and
 * reading overlap, so pipelines of any length cannot deadlock.  Script
 * calls answered NOSCRIPT are loaded and re-sent at the end of the
 * pipeline; their final replies take their place.  The deadline is
 * command_timeout_ms for the whole pipeline.  Errors as
 * rlk_conn_command.
 */
int rlk_conn_pipeline(rlk_conn *c, size_t n, const rlk_request *reqs,
                      rlk_resp_value **replies);

/* ------------------------------------------------------------------ */
/* Pub/sub                                                             */

/*
 * Subscribes to a channel (SUBSCRIBE) and waits for the confirmation.
 * Under RESP3 the connection stays usable for commands, messages arrive
 * as push messages.  Under RESP2 the connection becomes a dedicated
 * subscriber: only (UN)SUBSCRIBE, PING and rlk_conn_wait_push are
 * allowed until every channel is unsubscribed (else RLK_ERR_INVALID).
 * After a reconnect subscriptions are gone; on_connect tells.
 */
int rlk_conn_subscribe(rlk_conn *c, const char *channel, size_t len);
int rlk_conn_unsubscribe(rlk_conn *c, const char *channel, size_t len);

/* Reads until at least one push message was given to on_push, or
 * timeout_ms passed (-1: no limit).  Returns 1, 0 on timeout, or an
 * error (connection closed). */
int rlk_conn_wait_push(rlk_conn *c, int timeout_ms);

/* ------------------------------------------------------------------ */
/* Error replies                                                       */

typedef enum rlk_error_class {
    RLK_EC_NONE = 0,    /* not an error reply */
    RLK_EC_MOVED,
    RLK_EC_ASK,
    RLK_EC_NOSCRIPT,
    RLK_EC_LOADING,
    RLK_EC_BUSY,
    RLK_EC_READONLY,
    RLK_EC_WRONGPASS,
    RLK_EC_NOAUTH,
    RLK_EC_OTHER
} rlk_error_class;

/* Classifies a reply by its error code (the first word of an error). */
rlk_error_class rlk_reply_error_class(const rlk_resp_value *reply);

#ifdef __cplusplus
}
#endif

#endif /* RESPLOCK_H */
