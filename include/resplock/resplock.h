/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resplock: distributed locks for Redis-compatible servers.
 * Installed as <resplock/resplock.h>; includes <resplock/resp.h> and
 * <resplock/resplock_version.h>.
 *
 * This part: one connection to one server (TCP, Unix socket or TLS),
 * its handshake, commands, pipelines, push messages, reconnection, and
 * server-side scripts called by SHA1 (the lock's own by FCALL, on Redis
 * 7+).
 *
 * Thread use: a connection is used by one thread at a time; distinct
 * connections may be used concurrently.  Nothing here starts a thread.
 * Each function's comment says what it returns, when, and from which
 * thread it may be called; "the owner's thread" is whichever thread uses
 * the object at that moment.
 * Time: every timeout is measured on CLOCK_MONOTONIC.
 *
 * ABI: the configuration and option structs (rlk_tls_config,
 * rlk_conn_config, rlk_client_config, rlk_lock_options, and
 * rlk_resp_limits in resp.h) end in reserved fields that the *_init
 * functions zero.  Later versions put new fields there, so a program
 * built against this header keeps working, unchanged and unrebuilt, with
 * a library that knows more: always fill a struct with its *_init
 * function first.  See the README for the soname policy.
 */
#ifndef RESPLOCK_H
#define RESPLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "resp.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version this header belongs to: RLK_VERSION_MAJOR, _MINOR, _PATCH,
 * RLK_VERSION_NUMBER (MAJOR * 10000 + MINOR * 100 + PATCH) and
 * RLK_VERSION_STRING ("0.1.0"); RLK_VERSION is the same string. */
#include "resplock_version.h"
#define RLK_VERSION RLK_VERSION_STRING

/* The library's version, which may be newer than the header a program
 * was built with: rlk_version() its string ("0.1.0"), rlk_version_number()
 * its RLK_VERSION_NUMBER, to compare with the header's at run time.
 * Cannot fail; any thread. */
const char *rlk_version(void);
int rlk_version_number(void);

/* Status codes beyond those of resp.h (RLK_OK, RLK_ERR_NOMEM, ...);
 * rlk_strerror() (resp.h) names every one of them. */
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
    RLK_ERR_CLOSED = -17,  /* not connected, and reconnecting is off or
                              every attempt failed                          */
    RLK_ERR_REPLICAS = -18 /* fewer replicas acknowledged a lock's write in
                              time than it asked for (WAIT, WAITAOF)        */
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
    void *reserved_[4];      /* zero: room for later fields               */
} rlk_tls_config;

typedef struct rlk_conn rlk_conn;

typedef struct rlk_conn_config {
    /* redis://[user[:password]@]host[:port][/db], rediss://... for TLS,
     * unix:///path[?db=N]; NULL or "": $REDIS_URL, else
     * redis://127.0.0.1:6379.  An rlk_conn talks to that server alone;
     * an rlk_client given any node of a Redis Cluster finds the others
     * (see rlk_client_new).  Behind Redis Sentinel:
     * redis+sentinel://[user[:password]@]host[:port][,host[:port]...]/NAME[/db]
     * [?sentinel_user=U&sentinel_password=P] (rediss+sentinel:// for
     * TLS; sentinels' port 26379 by default): the sentinels are asked
     * for the primary NAME before each connect, and its ROLE must say
     * primary; the user and password are the data nodes', the query's
     * the sentinels'.  An rlk_client also leaves the primary at once on
     * +switch-master or a READONLY reply; it takes no cfg.seeds with
     * such a URL (rlk_client_new returns NULL). */
    const char *url;
    rlk_tls_config tls;
    const char *client_name;   /* sent with HELLO SETNAME / CLIENT SETNAME */
    int protocol;              /* 0: HELLO 3, falling back to RESP2;
                                  2: RESP2 only (no HELLO); 3: RESP3 only */
    int connect_timeout_ms;    /* connect + TLS + handshake; 0: 5000       */
    int command_timeout_ms;    /* per command or pipeline; 0: 5000; -1 none.
                                  Every deadline holds whatever the server
                                  sends meanwhile (a flood of pushes). */
    int reconnect_attempts;    /* tries in rlk_conn_reconnect and before a
                                  command on a closed connection (after a
                                  failed try, even of an earlier call, the
                                  next waits the backoff's pause); 0: 5;
                                  -1: never reconnect automatically        */
    int backoff_initial_ms;    /* first pause between tries; 0: 50          */
    int backoff_max_ms;        /* pauses double up to this, with jitter;
                                  0: 2000                                    */
    rlk_resp_limits limits;    /* zeros: the codec's defaults               */
    /* Before a command on a connection idle at least this long, check
     * whether the server closed it meanwhile (a restart, a proxy's idle
     * timeout), and reconnect instead of failing the command; 0: 1 ms;
     * negative: before every command (one more system call each). */
    int stale_check_ms;
    /* Bounds one reply: its bytes as received, apart from them the
     * memory of its tree as it is read, and apart from both the copy
     * handed out (a pipeline: of all its replies), so that a reply costs
     * at most about three times this much.  A reply over it, and a bulk
     * string announced longer, fail with RLK_ERR_LIMIT and close the
     * connection.  0: 64 MiB. */
    size_t max_reply_bytes;
    /* Push messages (RESP3 '>' and, on a RESP2 connection that has
     * subscribed, pub/sub messages).  The message is valid during the
     * call only.  May be NULL. */
    void (*on_push)(void *ctx, rlk_conn *c, const rlk_resp_value *msg);
    /* Called after every successful connect and handshake;
     * reconnected is 1 when it replaces an earlier connection, so the
     * layer above can treat what it believed of the server as unknown. */
    void (*on_connect)(void *ctx, rlk_conn *c, int reconnected);
    void *ctx;
    void *reserved_[8];        /* zero: room for later fields               */
} rlk_conn_config;

/* Fills *cfg with the defaults: everything 0/NULL (each field's 0 means
 * its default), the reserved fields included.  Cannot fail; any thread. */
void rlk_conn_config_init(rlk_conn_config *cfg);

/* ------------------------------------------------------------------ */
/* Connection                                                          */

/* The TLS library compiled in ("OpenSSL 3.0.19 ..."), or NULL when the
 * library was built without TLS (then rediss:// fails with RLK_ERR_TLS
 * "TLS support not compiled in").  Cannot fail; any thread. */
const char *rlk_tls_library(void);

/* Makes an unconnected connection with a copy of cfg (strings copied;
 * the URL is parsed here; cfg NULL: the defaults).  Returns NULL only when
 * memory runs out; a bad URL is reported by rlk_conn_connect.  Any
 * thread; the connection is then that thread's until handed over. */
rlk_conn *rlk_conn_new(const rlk_conn_config *cfg);

/* Closes the connection (if open) and frees it.  NULL is allowed.  The
 * owner's thread; no other thread may use c any more. */
void rlk_conn_free(rlk_conn *c);

/*
 * Connects and shakes hands, once, under connect_timeout_ms: transport
 * (TCP, Unix, TLS), then HELLO 3 with AUTH and SETNAME; when the server
 * does not know HELLO or refuses protocol 3 (unknown command or
 * subcommand, NOPROTO, "unknown or unsupported", a syntax error), RESP2
 * with AUTH and CLIENT SETNAME (refused: ignored, unless NOAUTH), unless
 * protocol is 3; then SELECT when db is not 0.  The lock client's
 * connections shake hands by the same rules.  Returns RLK_OK, RLK_ERR_URL,
 * RLK_ERR_CONNECT, RLK_ERR_TIMEOUT, RLK_ERR_TLS, RLK_ERR_AUTH,
 * RLK_ERR_SERVER, RLK_ERR_IO, RLK_ERR_PROTO, RLK_ERR_LIMIT (a handshake
 * reply over max_reply_bytes), RLK_ERR_NOMEM; the reason is in
 * rlk_conn_errmsg().  The owner's thread.
 */
int rlk_conn_connect(rlk_conn *c);

/* Closes the connection, then tries to connect up to reconnect_attempts
 * times (at least once): the first try at once, the others after
 * pauses with exponential backoff and jitter, as the client's
 * connections do.  Returns the last try's status (those of
 * rlk_conn_connect); it stops early on a status a new try would not
 * change (RLK_ERR_URL, RLK_ERR_AUTH, and RLK_ERR_TLS for a certificate
 * refused or TLS files that do not load); a handshake the server refuses
 * for now (RLK_ERR_SERVER: "max number of clients reached", LOADING) is
 * tried again.  The owner's thread. */
int rlk_conn_reconnect(rlk_conn *c);

/* Closes the transport; the object stays usable.  Cannot fail.  The
 * owner's thread. */
void rlk_conn_close(rlk_conn *c);

/* Non-zero while the transport is open.  The owner's thread (as the
 * accessors below). */
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
    /* HELLO's "mode": "standalone", "cluster" (a Redis Cluster node:
     * rlk_client then routes each name to its slot's primary),
     * "sentinel"; "" when unknown (RESP2, no HELLO). */
    char mode[16];
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
 * step with the server.  Bytes that arrived while no command was waiting
 * are read before sending: pushes are delivered, and a reply (one the
 * server sent twice, say) closes the connection as out of step, which
 * is then re-established as above or the command fails.  The socket is
 * looked at only when the connection was idle stale_check_ms or more
 * (no system call more on busy connections): a stray reply arriving
 * within that window after the previous call, and not read along with
 * that call's reply, would still be taken for this command's reply.
 * Refused with RLK_ERR_INVALID: the (P|S)(UN)SUBSCRIBE
 * family (use rlk_conn_subscribe), HELLO, RESET and MONITOR, which would
 * change what the connection keeps track of.  A SELECT sent here is not
 * repeated after a reconnect: put the database in the URL.
 * Returns RLK_OK; RLK_ERR_INVALID (no command, a refused one, or any but
 * PING on a RESP2 connection that subscribed); RLK_ERR_TIMEOUT;
 * RLK_ERR_IO, RLK_ERR_TLS (the stream failed or the server closed it);
 * RLK_ERR_PROTO (bytes that are not RESP, or out of step); RLK_ERR_LIMIT
 * (a reply over max_reply_bytes or the codec's limits); RLK_ERR_NOMEM;
 * RLK_ERR_CLOSED (not connected and reconnecting off); or, from the
 * reconnect before it, a status of rlk_conn_connect.  The owner's thread.
 */
int rlk_conn_command(rlk_conn *c, rlk_resp_value **reply, int argc,
                     const char *const *argv, const size_t *argvlen);

/* A server-side script, called by SHA1 (EVALSHA), loaded on NOSCRIPT.
 * The lock layer's own scripts go as FCALL of their function in the
 * library "resplock_H" where the server has FUNCTIONs (Redis 7+); any
 * other script, a caller's, always as EVALSHA. */
typedef struct rlk_script {
    const char *text;        /* not copied: must outlive the script      */
    size_t len;
    char sha1[41];           /* lowercase hex, computed locally          */
} rlk_script;

/* Computes the script's SHA1 (len 0: strlen).  Cannot fail; any thread
 * (s is the caller's). */
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
 * rlk_conn_command; the load and the retry share the first command's
 * deadline (command_timeout_ms from the call's start).  The lock layer's
 * own scripts go as FCALL on a server with FUNCTIONs (told by HELLO, or
 * one INFO server per connection where HELLO is missing): "Function not
 * found" is met with FUNCTION LOAD of the library and one retry, as
 * NOSCRIPT is; where FCALL or FUNCTION LOAD is refused (an ACL, a
 * service that blocks them) they go as EVALSHA until the next reconnect,
 * and a call refused before it ran for the server's state (OOM, MISCONF,
 * NOREPLICAS, READONLY, MASTERDOWN) is sent again as EVALSHA, whose
 * script meets that state only when it writes, as before.  Returns the
 * statuses of rlk_conn_command, plus RLK_ERR_INVALID when nkeys is not
 * within 0..argc and RLK_ERR_SERVER when SCRIPT LOAD is refused.  The
 * owner's thread.
 */
int rlk_conn_eval(rlk_conn *c, rlk_resp_value **reply, const rlk_script *s,
                  int nkeys, int argc, const char *const *argv,
                  const size_t *argvlen);

/*
 * Sends n requests in one pipeline and collects the n replies in order
 * into replies[0..n), valid until the next call on c.  Writing and
 * reading overlap, so pipelines of any length cannot deadlock.  Script
 * calls answered NOSCRIPT (or "Function not found", as rlk_conn_eval
 * says) are loaded and re-sent at the end of the pipeline; their final
 * replies take their place.  The deadline is
 * command_timeout_ms for the whole pipeline.  Returns the statuses of
 * rlk_conn_command (RLK_ERR_INVALID also for a malformed request), plus
 * RLK_ERR_SERVER when a SCRIPT LOAD is refused.  The owner's thread.
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
 * After a reconnect subscriptions are gone; on_connect tells.  Returns
 * the statuses of rlk_conn_command, plus RLK_ERR_SERVER when the server
 * refuses (an ACL without the channel).  The owner's thread.
 */
int rlk_conn_subscribe(rlk_conn *c, const char *channel, size_t len);
int rlk_conn_unsubscribe(rlk_conn *c, const char *channel, size_t len);

/* Reads until at least one push message was given to on_push, or
 * timeout_ms passed (-1: no limit), even while subscription
 * confirmations keep arriving.  Returns 1, 0 on timeout (the connection
 * stays open), or RLK_ERR_CLOSED (not connected), RLK_ERR_IO,
 * RLK_ERR_TLS, RLK_ERR_PROTO (also a reply while no command waited),
 * RLK_ERR_LIMIT, RLK_ERR_NOMEM, each of which closed the connection.
 * The owner's thread. */
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
    RLK_EC_OTHER,       /* any other error */
    RLK_EC_TRYAGAIN,    /* Cluster: a multi-key command during a migration */
    RLK_EC_CLUSTERDOWN, /* Cluster: the slot is not served for now */
    RLK_EC_CROSSSLOT,   /* Cluster: keys of several slots in one command */
    RLK_EC_OOM,         /* a write refused over maxmemory */
    RLK_EC_NOPERM       /* an ACL refused a command, key or channel */
} rlk_error_class;

/* Classifies a reply by its error code (the first word of an error).
 * Cannot fail (NULL: RLK_EC_NONE); any thread. */
rlk_error_class rlk_reply_error_class(const rlk_resp_value *reply);

/* Changes the timeouts of a connection (0 keeps the current value, -1
 * for the command timeout means none).  Cannot fail.  The owner's
 * thread. */
void rlk_conn_set_timeouts(rlk_conn *c, int connect_ms, int command_ms);

/* ================================================================== */
/* Locks                                                               */
/*
 * A simple lock is the key NAME holding a random token ("rlk:" and 128
 * bits from getrandom in 32 hex digits; "+w" is appended by waiters in
 * line, see resplock-protocol(7)), set with SET NX PX: the layout of
 * redis-py's Lock, go-redsync and node-redlock, so they and resplock
 * exclude each other on the same key.  A reentrant lock is a hash at NAME whose field
 * "[<client_id>:]<uuid>:<thread-id>" (the uuid random per client) counts
 * the holds, with a TTL on the key, and
 * a PUBLISH of "0" on "redisson_lock__channel:{NAME}" when released
 * ("redisson_lock__channel:NAME" when NAME has braces already; on a
 * Redis Cluster an SPUBLISH, in the lock's slot): the
 * layout of Redisson's RLock.  Release, extend and renewal are server-side
 * scripts that act only if the token (or field) still matches.
 *
 * Every acquisition also takes a fencing token, a 64-bit number that
 * grows with every acquisition of the lock: the server's clock (TIME) in
 * microseconds, read after the SET in the same round trip (for a
 * handoff, in the release's script).  A later holder's SET comes after
 * this hold ended, so its fence is larger while the server's clock does
 * not step back; nothing is stored for it, so nothing can be evicted or
 * lost in a restart.  A fence can go back when the server's clock steps
 * back (keep it slewed, not stepped: chrony's or ntpd's default after
 * boot) or after a failover to a replica whose clock is behind.  Fences
 * are exact (below 2^53) until the year 2255.  An uncontended simple
 * lock's whole cost on the server is SET NX PX, an HGET (of the window
 * below), TIME, and at release one script of GET, EXISTS and DEL: nothing else is written, and nothing is
 * left behind (see the releases below).
 *
 * Waiting in line: a waiter joins a queue kept next to the lock (a list
 * "{NAME}:queue" of tokens in arrival order and a hash "{NAME}:waiters"
 * of token -> "expiry ttl claim kind channel"; "{NAME}:what", or
 * "NAME:what" when NAME has a hash tag, or a "resplock:what:{...}" key
 * with a computed tag for names whose braces make both impossible: the
 * same Cluster slot as NAME; both expire two leases (at least 5 s) after
 * the last waiter renewed its place, and each waiter's re-check drops
 * places that lapsed from the head of the line).  A resplock release that finds a live waiter does not free
 * the lock: in the same script it sets the lock to that waiter's token,
 * for a short claim (the waiter's re-check period plus a second, at most
 * its TTL), and publishes "FENCE TOKEN" (the fence from the clock) on the
 * waiter's client's channel ("resplock:handoff:<random>"; on a Redis
 * Cluster, SPUBLISHed on the lock's release channel, to which the
 * waiter SSUBSCRIBEs on the lock's node).  The waiter
 * confirms (extends the lock to its TTL): a waiter that reads the message
 * late (it was paused, or starved of CPU) finds the claim gone and waits
 * on, and a waiter paused before it confirms holds the lock up for the
 * claim only.  A lock with a watchdog waits for the confirmation's reply
 * (one round trip), and is then valid for its TTL from the
 * confirmation's sending.  A lock without one, under RESP3, returns at
 * once, so that a handoff costs no more than the message: it is valid
 * for the claim from the waiter's last try before the handoff (the
 * message came after that try's reply, on the same connection), and
 * its confirmation's reply is read by the client's next turn (any call
 * on the client, rlk_client_tick, or the watchdog thread), which makes
 * it valid for its TTL from the confirmation's sending, or reports it
 * lost (on_lost) when the claim was gone.  Under RESP2 the message comes
 * on another connection, in no order with the try's reply, and the
 * acquire waits for the confirmation.  So does a waiter whose last try
 * was so long before the message that under a quarter of the claim is
 * left.  Waiters are
 * served first come, first served, as a best effort (what it does not
 * promise, and the kind that does: RLK_LOCK_FAIR).  A waiter's place lapses when it has
 * not renewed it for two re-check periods and a little (it died, or was
 * stopped), and a waiter whose channel has no subscriber is skipped; a
 * releaser whose user may not PUBLISH (an ACL) frees the lock instead,
 * publishing nothing: waiters find it free at their next re-check.
 * After 2 s of handing the lock from waiter to waiter (with gaps under
 * 1 s), a release frees it once instead, publishes "0", and resplock's
 * clients keep away from it for 200 ms, new ones too: a first try whose
 * SET NX took the lock in that window gives it back at once (the HGET
 * sent with it tells the window) and waits until the window's end, or
 * reports RLK_LOCK_BUSY without a wait.  So clients that poll (redis-py,
 * node-redlock) or that wait for that message (Redisson) get their
 * turn.  Holders using
 * other clients do not hand over: their waiters find the lock free at
 * their next re-check or when its TTL runs out, and take it with SET NX
 * like anyone (no queue order then).  Requires Redis 5 or later (scripts
 * read TIME before writing).
 *
 * Releases: a simple lock with nobody in line is deleted and nothing
 * else is written or published.  A reentrant release leaves a tombstone
 * "{NAME}:released:ID" (one per release) that lives twice the command
 * timeout (at least 1 s; 60 s without a timeout), so that a release
 * re-sent after a lost reply gets the first one's result and takes no
 * second hold away.  A simple lock's release needs none: re-sent after a
 * lost reply, it reports RLK_OK when the lock is gone or held by another
 * while the lock's validity is not over (nothing but the first attempt
 * ends a lock before then, short of a flush, an eviction or a failover),
 * and RLK_LOCK_NOT_HELD or RLK_LOCK_NOT_OWNER after it (it cannot tell
 * whether the first attempt or the TTL ended the lock);
 * rlk_release_token, which knows no validity, reports those too.  At
 * maxmemory (noeviction) a release still frees the lock, and extends
 * and renewals go on.  On Redis 7+ (told by HELLO, which protocol 2
 * skips) the release, extend and renewal scripts run there as anywhere
 * (flag allow-oom, as functions and as EVAL): one of several holds is
 * taken away, a tombstone left, a lock handed over.  Elsewhere, where
 * EVAL meets maxmemory at its first write that may grow the data, taking
 * one of several holds away fails there, and a tombstone and a handoff
 * are best effort (without them the lock is simply freed).
 *
 * Reentrant holds: another hold of the same lock (same client and
 * thread) never shortens the key's expiry, and releasing one of several
 * holds leaves it as it is: a hold never cuts short the time another
 * hold relies on.  rlk_lock_extend with RLK_EXTEND_SET does not shorten a
 * reentrant lock either.
 *
 * Validity: a lock is known to be held until the start of the acquire
 * attempt that took it (or of the confirmation of a handoff, or of the
 * last successful renewal) plus the TTL minus a drift allowance of 1% of
 * the TTL plus 2 ms, on the monotonic clock.  An acquisition never
 * returns a lock whose validity is over.
 *
 * What no lease lock can promise: a holder that is itself paused (a stop
 * signal, a long GC, swapping) past its validity and then resumes still
 * believes it holds the lock until it looks at the clock or renews; the
 * fencing token is what the storage it writes to can check.  And the
 * server must keep the lock: without persistence (appendonly yes,
 * appendfsync always or everysec) a restart forgets every lock, and a
 * second holder can start at once.
 */

/* Statuses of the lock calls, beyond the connection's. */
enum {
    RLK_LOCK_BUSY = -20,      /* not acquired: held by someone else for the
                                 whole wait                               */
    RLK_LOCK_NOT_HELD = -21,  /* the lock is not held any more (expired)  */
    RLK_LOCK_NOT_OWNER = -22, /* the lock is held by someone else         */
    RLK_LOCK_LOST = -23,      /* the handle was lost earlier: reported lost,
                                 or its validity over (rlk_lock_is_lost)  */
    RLK_LOCK_NOT_A_LOCK = -24 /* not acquired: the name's key is no lock
                                 (an application's key: another type, no
                                 TTL, a hash of other than hold counts);
                                 said at once, without a wait             */
};

typedef struct rlk_client rlk_client;
typedef struct rlk_lock rlk_lock;

typedef struct rlk_client_config {
    /* The connection: url, TLS, timeouts, limits, client_name.  on_push,
     * on_connect and ctx are the client's own and must be left NULL.  On
     * a Redis Cluster, the URL of any node (the seed): every node's
     * connection takes its scheme, user, password and TLS settings, at
     * the node's announced address (see rlk_client_new). */
    rlk_conn_config conn;
    /* A readable prefix of this client's reentrant locks' fields (its
     * first 64 bytes): "ID:UUID:THREAD-ID" instead of "UUID:THREAD-ID",
     * to tell in the server's data which service holds a lock.  It does
     * not identify the holder: the UUID is random and new for every
     * client, so two clients (two processes, two containers each running
     * as PID 1) never share holds, whatever their client_id.  NULL: no
     * prefix. */
    const char *client_id;
    /* Drift allowance beyond 1% of the TTL; 0: 2 ms. */
    int64_t drift_ms;
    /* The watchdog renews every ttl / renew_divisor; 0: 3. */
    int renew_divisor;
    /* A waiter re-checks at least this often, for holders using clients
     * that do not publish on release; 0: 1000 ms. */
    int64_t recheck_ms;
    /* More nodes of the same Redis Cluster as conn.url's (URLs, nseeds
     * of them, at most 15, else rlk_client_new fails; copied): the
     * cluster is found through the
     * first that answers.  Seeds that are not all nodes of one cluster
     * (as it announces them) are a configuration error: found once they
     * answer, every call then waiting for a connection fails with
     * RLK_ERR_INVALID and a message naming the seed, whatever its wait,
     * and so do the calls after.  Checked against the first slot table
     * only: a later one that lacks a seed's node (failed over, removed)
     * changes nothing.  NULL:
     * conn.url alone, which is enough for a cluster too. */
    const char *const *seeds;
    size_t nseeds;
    /* 1: Redlock (see "Redlock" below): conn.url and each of seeds are
     * independent servers (3 or more, an odd number, at most 15; else
     * rlk_client_new fails), each a single server or a Cluster, and a
     * lock is held while a majority of them hold it.  0: seeds are
     * nodes of one cluster. */
    long redlock;
    void *reserved_[5];   /* zero: room for later fields                  */
} rlk_client_config;

/* Fills *cfg with the defaults (all 0/NULL, the reserved fields
 * included).  Cannot fail; any thread. */
void rlk_client_config_init(rlk_client_config *cfg);

/*
 * Makes a client with a copy of cfg (cfg NULL: the defaults); NULL when
 * memory runs out or the kernel gives no random bytes (for its id).  Any
 * thread; the client is then that thread's (see the watchdog thread
 * below for the one exception).
 *
 * Redis Cluster: cfg->conn.url may name any node; nothing else is set.
 * The client learns that it is a cluster from the node's HELLO (mode
 * "cluster", rlk_conn_info.mode) or a first MOVED (protocol 2), reads
 * CLUSTER SHARDS (CLUSTER SLOTS where SHARDS is unknown), and sends each
 * lock to the primary that serves the hash slot of its name (CRC16 of
 * the name or of its {hash tag}; a lock's other keys share that slot),
 * opening that node's connection when first needed (at most 62
 * connections per client).  MOVED is followed (the table patched, the
 * request sent again: it did not run), ASK once after ASKING, TRYAGAIN
 * and CLUSTERDOWN after the one backoff's pauses until the request's
 * deadline.  Renewal rounds go per node, one
 * script call per slot; waits use sharded pub/sub (SSUBSCRIBE, SPUBLISH)
 * on "redisson_lock__channel:{NAME}" on the lock's node, which carries
 * the handoff too.
 * A failover: replication is asynchronous, so a promoted replica may
 * lack a lock acquired just before its primary died.  Once a new slot
 * table names the new primary, each lock held on the old one is renewed
 * there by a script that checks its token: kept when found, reported
 * lost at once (on_lost, rlk_lock_is_lost) when missing or another's.
 * Until then a lock is held only within its validity, and reported lost
 * at its usual time when the failover takes longer.  Without WAIT a
 * second holder is possible meanwhile (the old primary acknowledged a
 * SET that never reached the replica).  Locks on other shards are
 * untouched; a migrating slot's locks follow it.  A primary frozen with
 * its connection up (SIGSTOP, a paused VM) is known by its silence: a
 * renewal there is waited for half the time left before its leases
 * would be reported lost, a release's first sending half the command
 * timeout; past that the node counts as down and the table is read
 * again from another node every 250 ms until a new primary serves the
 * slot, where the locks are re-checked and the release sent again.
 * Limits today: with one seed URL its node must answer when the client
 * starts (cfg.seeds gives more); tick mode's fd is the seed's
 * connection, the others are read by the ticks (see rlk_client_fd);
 * under RESP2 waits re-check every recheck_ms and releases PUBLISH.
 * README.md, "On a Redis Cluster", says more.
 */
rlk_client *rlk_client_new(const rlk_client_config *cfg);

/* Connects (see rlk_conn_connect, whose statuses it returns).  Optional:
 * the first call that needs the server connects.  After a connection is
 * lost, the calls and the watchdog connect again: at once after one
 * that served, then after growing, jittered pauses (backoff_initial_ms
 * doubling up to backoff_max_ms), also while the server refuses the
 * handshake for now ("max number of clients reached", LOADING); a call
 * without a wait gives up after reconnect_attempts tries in a row.  A
 * refused password (RLK_ERR_AUTH), a certificate refused or TLS files
 * that do not load (RLK_ERR_TLS) and a bad URL are not tried again:
 * every later call that needs the server returns them at once.  The
 * owner's thread. */
int rlk_client_connect(rlk_client *cl);

/* Stops the watchdog thread if any, frees every handle still held
 * (without releasing: the locks then expire on the server) and the
 * client.  NULL is allowed.  The
 * owner's thread; no other thread may use the client or its handles any
 * more. */
void rlk_client_free(rlk_client *cl);

/* The reason of the last failure on this client ("" if none); valid
 * until the next call on the client.  The owner's thread. */
const char *rlk_client_errmsg(const rlk_client *cl);

/* The class of the server's error reply behind the last failure on this
 * client, when it was RLK_ERR_SERVER (RLK_EC_LOADING, RLK_EC_BUSY,
 * RLK_EC_OOM, RLK_EC_NOPERM, RLK_EC_READONLY...: see
 * rlk_reply_error_class); RLK_EC_NONE after any other failure, or a
 * RLK_ERR_SERVER that no error reply gave.  Read it instead of the
 * message's text, which quotes the server's and may change.  Changes
 * with rlk_client_errmsg; the owner's thread. */
rlk_error_class rlk_client_errclass(const rlk_client *cl);

/* What the handshake of the client's lock connection learned (the
 * server, its version, the protocol, the mode, the client id, the user,
 * db, peer and TLS; on a cluster, the seed's connection), or NULL while
 * it is not connected; valid until the next call on the client.  The
 * owner's thread. */
const rlk_conn_info *rlk_client_info(rlk_client *cl);

/* NULL while the client's waits wait in line (see rlk_lock_acquire), or
 * before anything says otherwise; else why they re-check instead: the
 * server refused a SUBSCRIBE on the lock connection (RESP3, see
 * rlk_session_wait_note) or on a RESP2 wait's own.  Valid until the
 * next call on the client.  The owner's thread. */
const char *rlk_client_wait_note(rlk_client *cl);

/* How many connections the client has made so far (0 before the first;
 * one more after each reconnect; on a cluster, to the seed's node).  The
 * owner's thread. */
uint64_t rlk_client_generation(rlk_client *cl);

/* A connection of the caller's own, for commands of its own: made at the
 * first call with the client's settings, owned and freed by the client,
 * separate from the connection the locks use (whose protocol the client
 * alone speaks); on a Redis Cluster a plain connection to the seed's
 * node, which follows no redirect.  NULL when memory runs out.  The
 * owner's thread. */
rlk_conn *rlk_client_conn(rlk_client *cl);

/*
 * The fair kind is a simple lock (a string, the same token, release,
 * extend, watchdog and status) whose order among resplock waiters is
 * guaranteed, where the simple kind's line is best effort:
 * - a fair acquire takes a free lock only when no earlier waiter's place
 *   is live in the line ({NAME}:queue): a newcomer joins the line's tail
 *   instead, also while a handoff is under way or the lock was freed
 *   for others (the simple kind's first try is a plain SET NX PX, which
 *   takes any free lock: when a holder's TTL ran out, after a handoff
 *   to a waiter that did not confirm, after the yield window);
 * - a release hands the lock to the line's head, and the order in which
 *   waiters joined is the order they are served;
 * - a fair waiter that cannot hear its handoff (RESP2 without a
 *   listener, a subscription refused) still keeps its place and polls
 *   (the simple kind's is not in line at all); a release that finds it
 *   at the head alive but unheard frees the lock for it alone;
 * - a waiter that died holds the line up until its place lapses (two
 *   re-check periods and a little), plus the next one's re-check: the
 *   first try that finds the head's place lapsed drops it.  A waiter
 *   whose own place lapsed (paused that long) joins again at the tail.
 * What it costs: the fair kind's every try is the script (no SET NX
 *   first); the simple kind's fast path is unchanged.
 * What it does not promise: clients that take the lock by a plain
 * SET NX (redis-py, node-redlock, or resplock's simple kind on the same
 * name) ignore the line and may take it whenever it is free (when
 * resplock frees it after 2 s of handoffs, for 200 ms resplock keeps
 * away and they get their turn); Redisson's RFairLock keeps a line of
 * its own (redisson_lock_queue:{NAME}) that resplock does not read: use
 * one or the other on a name.  Not offered under Redlock.
 */
typedef enum rlk_lock_kind {
    RLK_LOCK_SIMPLE = 0,
    RLK_LOCK_REENTRANT = 1,
    RLK_LOCK_FAIR = 2
} rlk_lock_kind;

#define RLK_WAIT_FOREVER (-1)

/*
 * Redlock (rlk_client_config.redlock): conn.url and each of seeds name
 * an independent server (3 to 15, an odd number; each a single server or
 * a Cluster, with conn's other settings), and a lock is held while a
 * majority (N / 2 + 1) of them hold it with one token.  What changes:
 * - rlk_lock_acquire sends one random token's SET NX PX (resplock's
 *   script where the lock is taken) to every server at once and
 *   succeeds once a majority took it within the attempt's deadline (one
 *   command timeout, and the lock's validity); its validity counts from
 *   the start of the attempt that succeeded: TTL less the drift
 *   allowance (1% of the TTL + drift_ms); the other servers are given
 *   as long again as the majority took to answer too (a lock on more
 *   servers survives the loss of more).  As soon as no majority can be
 *   had it fails, and what it took is released on all at once; with a
 *   wait it tries again after a random pause of 100 to 300 ms until the
 *   wait runs out (the last attempt starts at its end and may last 250
 *   ms more).  RLK_LOCK_BUSY: the servers that answered make a majority
 *   and another holder has the lock on enough of them; otherwise the
 *   servers' most common failure (RLK_ERR_CONNECT, RLK_ERR_TIMEOUT...),
 *   rlk_client_errmsg naming each server that failed ("no quorum").
 *   A frozen server does not hold it up: it returns once a majority
 *   answered; the others' answers are read by later calls.
 * - a watchdog lock is renewed on each server (tick mode, or the event
 *   loop's rlk_client_watch and rlk_client_handle, which under Redlock
 *   watch one fd: rlk_client_fd, readable when any server's connection
 *   is); rlk_lock_remaining_ms is the time by which a majority of the
 *   servers are known to hold it (the majority-th latest of their
 *   validities, none before it is renewed later than the acquire's own),
 *   and the lock is lost (on_lost) when fewer than a majority hold it.
 *   While a majority holds it, a server that lost its part (restarted
 *   empty, or down at the acquire) is asked again with the same token,
 *   one try a renewal period.
 * - rlk_lock_extend and rlk_lock_release go to every server at once and
 *   need a majority (a release returns once a majority released it, the
 *   others' releases written with theirs, and a server whose acquire had
 *   not answered yet given back within a grace of as long again; a failed attempt's giving
 *   back waits for every server that is connected, but once a majority
 *   answered the others get only as long again as that took);
 *   rlk_release_token, rlk_extend_token and rlk_lock_get_status ask each
 *   server in turn (rlk_lock_status.servers, answered, held_on).
 * - the fence is the largest of the servers' clocks (microseconds at
 *   their acquire) among those that took the lock by the time the
 *   acquire returned: it grows from holder to holder while the servers'
 *   clocks agree to within the time between two acquisitions.
 * - not offered (RLK_ERR_INVALID, said by rlk_client_errmsg): reentrant
 *   locks, the watchdog thread, the _async lock calls, the rate limiter.
 *   rlk_client_conn is the first server's; rlk_client_info the first
 *   connected server's; rlk_client_free first gives the releases still
 *   under way (a release returns once a majority released) up to the
 *   command timeout, at most 1 s, to end on the servers that are up; rlk_client_connect connects to each in turn and
 *   succeeds when a majority connected.
 * What it cannot promise: servers that lose the lock together (a flush,
 * restarts without persistence on a majority within a TTL) let a second
 * holder in; each server should persist (appendonly) or stay down for a
 * TTL after a restart.
 */

/*
 * Replicas (min_replicas, min_replicas_aof below).  Redis replicates
 * asynchronously: a primary that fails over right after an acquire or a
 * renewal may hand its role to a replica that never saw it, and the new
 * primary then lets another holder in.  With min_replicas N, every write
 * of the lock (the acquire's try, a handoff's confirmation, each
 * watchdog renewal) is followed on the same connection, in the same
 * pipeline, by WAIT N timeout (a blocking command cannot run inside a
 * script), and counts only when N replicas acknowledged it:
 * - an acquire they did not acknowledge in time fails with
 *   RLK_ERR_REPLICAS ("1 of 2 replicas acknowledged ...") and the lock is
 *   given back at once; a server that refuses WAIT (an ACL, a proxy, a
 *   replica) fails it with RLK_ERR_SERVER and the server's words, the
 *   lock given back, and every later acquire that asks for replicas on
 *   that connection fails so without sending anything (until it
 *   reconnects).  Never a silent acquire without the replicas asked for.
 * - a renewal they did not acknowledge counts as a failed renewal: tried
 *   again soon, and the lock is reported lost (on_lost) at its lost
 *   margin, as for any renewal that fails, although the primary still
 *   holds it.
 * - a release never waits and never fails for lack of replicas, and an
 *   extend by rlk_lock_extend (or rlk_extend_token) does not wait for
 *   them either: its new TTL is the primary's alone.
 * min_replicas_aof N sends WAITAOF 1 N timeout instead: the primary's
 * own AOF and N replicas' have it fsynced (the primary needs appendonly
 * yes; Redis or Valkey 7.2 or later, else the server's error as above).
 * WAIT holds the connection on the server until N replicas answered or
 * the timeout: other requests on it (other locks' renewals) wait behind
 * it, and their reply deadlines count that much later, so none of them
 * times out for it; a lagging replica slows the connection by up to the
 * timeout each time.  What it narrows: the window in which a failover
 * forgets a lock that was acknowledged.  What it cannot close: a replica
 * that acknowledged and then lost the write itself (restarted without
 * AOF), a failover to a replica that did not acknowledge (WAIT counts,
 * it does not choose the next primary), and a primary that restarts
 * empty without failing over.  WAIT makes replication synchronous for
 * the lock, not consistent.
 */
typedef struct rlk_lock_options {
    int64_t ttl_ms;       /* 0: RLK_DEFAULT_TTL_MS                           */
    int64_t wait_ms;      /* 0: try once; RLK_WAIT_FOREVER; or up to this    */
    rlk_lock_kind kind;
    int watchdog;         /* 1: renew while held, by rlk_client_tick (tick
                             mode) or the watchdog thread: rlk_lock_acquire
                             refuses it while neither is in use           */
    /* Called once when the lock is found lost (renewal or extend refused,
     * or not renewed in time), before its validity ends while renewals
     * are driven.  A lock nothing renewed (no watchdog, or a tick-mode
     * client that did not tick) is lost once its validity is over: its
     * on_lost comes from the next call on the client (any call: the
     * release of this very lock calls it before it goes on, from the
     * caller's thread without the client's internal lock, also while the
     * thread runs), or from the watchdog thread when the validity ends.  In tick mode it is called
     * from the call that found it (rlk_client_tick, rlk_lock_extend...;
     * with an event loop, rlk_client_handle or a blocking call) after
     * the client's internal lock is released: it may call any function
     * of the client, release this lock among them.  From the
     * watchdog thread it is called with that lock held: it must not call
     * the client's functions (the accessors rlk_lock_name, _fence,
     * _token, _is_lost, _remaining_ms aside); set a flag for your own
     * thread instead. */
    void (*on_lost)(void *ctx, rlk_lock *l);
    void *ctx;
    /* Report the lock lost (and bound every renewal attempt) at least
     * this long before its validity ends, for a holder that needs time to
     * stop its work; 0: a tenth of the TTL, at least 5 ms. */
    int64_t lost_margin_ms;
    /* A reentrant lock's holder in a session (rlk_session_acquire): the
     * hash field whose holds it counts.  NULL: a holder of the handle's
     * own.  Ignored for simple locks, and by rlk_lock_acquire (whose
     * holder is the client's own UUID and the thread). */
    const char *holder;
    /* 1: a lock handed over by its last holder (waiting in line, RESP3)
     * is reported held only once its confirmation has extended it to the
     * full TTL.  0 (the default): it is reported held at the handoff's
     * message, valid for the short claim the release gave it (about a
     * second or two; rlk_lock_remaining_ms tells exactly), and its
     * confirmation's reply is read by the client's next turn (any call,
     * rlk_client_tick, the watchdog thread), which extends the validity
     * to the TTL or reports the lock lost.  Set it when the caller hands
     * the token on and stops turning the client (the resplock acquire
     * command does).  A watchdog lock is always confirmed first. */
    long full_ttl;
    /* What the holder is doing, recorded with the lock for rlk_lock_get_status
     * and `resplock status` (the resplock run command gives its command
     * line); at most RLK_HOLDER_CMD_MAX bytes are kept, percent-encoded.
     * NULL: none.  The host name, process id and wall-clock time of the
     * acquire's start are always recorded. */
    const char *holder_cmd;
    /* Replicas that must have the lock before it counts (see "Replicas"
     * below): the acquire and every renewal are followed, on the same
     * connection, by WAIT min_replicas, or by WAITAOF 1 min_replicas_aof
     * (the primary's own AOF and that many replicas' have it fsynced;
     * appendonly on the primary, Redis or Valkey 7.2 or later), within
     * replicas_timeout_ms (0: a tenth of the TTL, at most 1000 ms; at
     * most a quarter of the TTL).  One of the two, or neither (0). */
    long min_replicas;
    long min_replicas_aof;
    long replicas_timeout_ms;
    void *reserved_[2];   /* zero: room for later fields                  */
} rlk_lock_options;

/* Fills *o with the defaults (all 0/NULL, the reserved fields included).
 * Cannot fail; any thread. */
void rlk_lock_options_init(rlk_lock_options *o);

/*
 * The lock's timing, for a holder that plans its work around it (the
 * resplock command does).  Each is the formula the library itself uses,
 * for a client made with cfg (NULL: the defaults) and a lock of ttl_ms
 * (> 0), counted in milliseconds from the start of the try that took or
 * renewed the lock.  Pure: no I/O, any thread.
 */
#define RLK_DEFAULT_TTL_MS 30000

/* The clock-drift allowance: 1% of the TTL plus cfg->drift_ms. */
int64_t rlk_plan_drift_ms(const rlk_client_config *cfg, int64_t ttl_ms);

/* The lock's validity: ttl_ms less the drift allowance.  The holder's
 * work must have stopped by then (rlk_lock_remaining_ms counts down to
 * it). */
int64_t rlk_plan_valid_ms(const rlk_client_config *cfg, int64_t ttl_ms);

/* When the watchdog renews, at the latest: ttl_ms / cfg->renew_divisor
 * (a large lost margin makes it sooner). */
int64_t rlk_plan_renew_period_ms(const rlk_client_config *cfg, int64_t ttl_ms);

/* When a lock that was not renewed is reported lost (on_lost,
 * rlk_lock_is_lost): lost_margin_ms (rlk_lock_options.lost_margin_ms; 0:
 * a tenth of the TTL, at least 5 ms, which is also the least) before its
 * validity ends. */
int64_t rlk_plan_lost_after_ms(const rlk_client_config *cfg, int64_t ttl_ms,
                               int64_t lost_margin_ms);

/*
 * Acquires the lock NAME.  With a wait, the caller subscribes to the
 * lock's release channel and to the client's handoff channel, joins the
 * queue, and returns when a release hands the lock over; it also wakes
 * when the lock is freed (Redisson holders publish "0"), when the holder's
 * TTL runs out, and at least every min(recheck_ms, ttl / 3) to try again
 * and keep its place; it never polls in a busy loop.  A wait that runs
 * out, or fails while the connection still works (the RESP2 waiting
 * connection lost, a server error), leaves the queue in a last try, which
 * may still find the lock handed over: then the call succeeds.  Under RESP3 the subscriptions
 * ride the same connection and stay after the wait (the last lock waited
 * for, and the handoff channel): waiting again for the same lock joins
 * the queue in the first try, without subscribing again; their messages
 * outside a wait are dropped.  Under RESP2, when the first try finds
 * the lock busy, a second connection is opened for the wait (subscribed
 * to both channels) and closed after it; it connects and subscribes in
 * steps, in the same turns that renew the locks held (a server slow to
 * answer it holds back no renewal); one that fails, or is not
 * subscribed within a connect and a command timeout, leaves the wait
 * re-checking, not in line.  Where the server refuses the
 * SUBSCRIBE (an ACL user without the channels, which is Redis 7's
 * default for new users), the wait is not in line and tries again at
 * each re-check instead (rlk_client_wait_note says so).  A reentrant lock acquired again by the same
 * client and thread counts one more hold (and keeps its fencing token).
 * A try that fails with the connection (the server restarted, closed it
 * while idle, or the reply was lost) is sent again on a new connection,
 * and one the server refuses with LOADING or BUSY is sent again later,
 * in a form that also finds whether the lost try took the lock: once
 * without a wait, and with growing pauses (100 ms to 3.2 s) until the
 * wait runs out with one; a wait whose connection breaks connects and
 * subscribes again and goes on waiting.  Not for a reentrant lock that
 * this client already holds (a hold counted by a lost try could not be
 * told from the ones before): that call fails, and a hold it may have
 * taken expires.  The first connect is retried the same way.
 * Deadlines: the whole call ends by its start plus wait_ms (without a
 * wait: plus the command timeout), whatever the server does (a silent or
 * flooding server, a reconnect), except for a last try of at most 250 ms
 * (or the command timeout when shorter) that leaves the line when the
 * wait runs out; with RLK_WAIT_FOREVER each round trip is bounded by the
 * command timeout.  In tick mode, the client's other watchdog locks are renewed
 * during a wait, and their on_lost may be called from inside this call
 * (it may release or forget locks there, not acquire).
 * Returns RLK_OK with *out set; RLK_LOCK_BUSY (held by someone else for
 * the whole wait); RLK_LOCK_NOT_A_LOCK (the name's key is no lock: a key
 * of another type, a string or hash without a TTL, a hash whose values
 * are not hold counts; said at once, whatever the wait: an application's
 * key under the lock's name; a string with a TTL is someone's lock and
 * stays busy); RLK_ERR_INVALID (an empty name, an unknown kind, a
 * TTL that leaves no validity: rlk_plan_valid_ms(cfg, ttl) <= 0, which
 * every try would take and give back at once, a watchdog lock that
 * nothing would renew: the watchdog thread not running, and neither
 * rlk_client_tick nor the event loop's calls (rlk_client_watch...) ever
 * called on the client, no random bytes from the kernel; nothing is
 * sent); RLK_ERR_NOMEM; RLK_ERR_SERVER (a script
 * refused: at maxmemory, an ACL, a key of another type, LOADING past the
 * wait); RLK_ERR_PROTO (an unexpected reply); or a connection status
 * (RLK_ERR_TIMEOUT, RLK_ERR_IO, RLK_ERR_CONNECT, RLK_ERR_TLS,
 * RLK_ERR_AUTH, RLK_ERR_URL, RLK_ERR_CLOSED, RLK_ERR_LIMIT).  *out is NULL
 * unless RLK_OK.  The client's owner thread.
 */
int rlk_lock_acquire(rlk_client *cl, const char *name, const rlk_lock_options *o,
                     rlk_lock **out);

/*
 * Releases (one hold of a reentrant lock) and frees the handle, whatever
 * the outcome.  Returns RLK_OK (released), RLK_LOCK_LOST (lost before the
 * release, as rlk_lock_is_lost says: reported lost, or its validity over,
 * renewed or not; the release is still sent, which frees the key if it
 * is still this holder's, and the message says what it found; on_lost,
 * if not called yet, is called first), RLK_LOCK_NOT_HELD (gone although
 * its validity was not over: a flush, an eviction, a restart without
 * persistence), RLK_LOCK_NOT_OWNER (someone else holds it now; nothing
 * was deleted), or a connection status: then the lock expires by
 * itself.  A release sent again after a reconnect because its reply was
 * lost reports RLK_OK when the first attempt had released it: exactly
 * for a reentrant lock (tombstones), and for a simple lock when its
 * validity is not over at the re-send, even after later holders came and
 * went (see "Releases" above).  The call and its
 * re-send share one command timeout (on a cluster the first sending has
 * half of it, so that a re-send can reach a failed node's successor).  Also
 * RLK_ERR_NOMEM, RLK_ERR_INVALID (no random bytes for a reentrant
 * release's id), RLK_ERR_SERVER, RLK_ERR_PROTO.  The client's owner
 * thread.
 */
int rlk_lock_release(rlk_lock *l);

#define RLK_EXTEND_ADD 0 /* add ms to the time the lock has left */
#define RLK_EXTEND_SET 1 /* make the time left ms                */

/* Extends the lock on the server and its validity here.  RLK_OK,
 * RLK_LOCK_NOT_HELD (expired: the handle is marked lost),
 * RLK_LOCK_NOT_OWNER (someone else holds it: marked lost), RLK_LOCK_LOST
 * (lost earlier, or its validity is over: nothing is sent), RLK_ERR_INVALID (ms < 1, or an unknown how),
 * RLK_ERR_SERVER, RLK_ERR_PROTO, or a connection status.  An RLK_EXTEND_SET
 * call is re-sent once after a lost reply, an RLK_EXTEND_ADD is not.
 * on_lost is called before it returns when it marks the lock lost.  The
 * client's owner thread. */
int rlk_lock_extend(rlk_lock *l, int64_t ms, int how);

/* Frees the handle without releasing: the lock stays held on the server
 * until its TTL runs out (for `resplock acquire`).  No network I/O (it
 * never waits for a renewal round); the lock is not renewed any more.
 * Cannot fail.  The client's owner thread. */
void rlk_lock_forget(rlk_lock *l);

/* The accessors below cannot fail and may be called from any thread
 * while the handle exists (also from on_lost in the watchdog thread).
 * Milliseconds the lock is still known to be held (0 when lost or
 * expired), by the monotonic clock.  A lock handed over without full_ttl
 * counts down its claim until its confirmation's reply is read (see
 * rlk_lock_options), and the TTL from then. */
int64_t rlk_lock_remaining_ms(const rlk_lock *l);
/* Non-zero once the lock is lost: reported lost, or its validity over by
 * the monotonic clock (rlk_lock_remaining_ms 0), whatever renews it or
 * nothing does. */
int rlk_lock_is_lost(const rlk_lock *l);
/* The fencing token of this acquisition. */
uint64_t rlk_lock_fence(const rlk_lock *l);
/* The token (simple) or hash field (reentrant), NUL-terminated. */
const char *rlk_lock_token(const rlk_lock *l);
const char *rlk_lock_name(const rlk_lock *l);
/* The TTL renewals use: the acquired one, or the last one set by
 * rlk_lock_extend with RLK_EXTEND_SET (RLK_EXTEND_ADD adds once and leaves
 * it). */
int64_t rlk_lock_ttl_ms(const rlk_lock *l);
/* Holds of a reentrant lock by this handle's holder, as last seen. */
int64_t rlk_lock_holds(const rlk_lock *l);

/*
 * Tick-mode watchdog, for single-threaded and event-loop programs (no
 * thread is started).  It returns at once, without waiting for the
 * server: call it when rlk_client_fd is readable, and when *next_ms
 * (milliseconds from now; -1: no lock to renew) has passed.  Each call
 * first takes the replies that have come (of a renewal round, of a
 * handoff's confirmation, push messages) and applies the complete ones;
 * then, when a renewal is due and no round is in flight, it sends the
 * round: every watchdog lock of the client, in one pipeline (one script
 * call per 1000 locks of one hash slot: on a cluster-enabled server,
 * which refuses keys of several slots in one call, the calls are grouped
 * by slot), whose replies later calls read.  Other calls on the client
 * (acquire, release...) work meanwhile: they read the round's replies
 * ahead of their own.  A lock whose renewal has no reply by the time it
 * is due to be reported lost is reported lost (on_lost), and the
 * connection is given up (RLK_ERR_TIMEOUT); a failed round is tried
 * again soon while validity lasts.  Only sending or connecting may wait:
 * connecting (after the connection closed) waits for the connect and
 * the handshake, within the round's deadline.  Returns RLK_OK, or the
 * status of a failed round (the locks stay held while their validity
 * lasts; the next tick tries again).  Call it again after other calls on
 * the client too: a reconnect they made is re-checked at the next tick,
 * which *next_ms did not foresee.  rlk_lock_acquire renews while it
 * waits, there waiting for the replies.  The first call puts the client
 * in tick mode: rlk_lock_acquire takes watchdog locks from then on
 * (without the watchdog thread it refuses them before); while the
 * client holds no lock and is not connected, a tick does nothing else
 * (no connect), so a program can declare tick mode before its first
 * acquire.  Statuses: RLK_OK,
 * RLK_ERR_NOMEM, RLK_ERR_TIMEOUT (no reply in time), or a connection
 * status.  The client's owner thread; not while the watchdog thread
 * runs.
 */
int rlk_client_tick(rlk_client *cl, int64_t *next_ms);

/* The fd to poll between ticks (-1 when not connected).  On a Redis
 * Cluster it is the seed's connection only: the other nodes' connections
 * are read when rlk_client_tick runs, and *next_ms asks for a tick
 * within 10 ms while a reply is owed on one of them.  The watchdog
 * thread, and rlk_client_watch with rlk_client_handle, poll every
 * connection instead.  The client's owner thread. */
int rlk_client_fd(const rlk_client *cl);

/*
 * Event loops: the caller's own loop (poll, epoll, libuv...) turns the
 * client, with no thread and no call that waits for a server.  The
 * client keeps doing everything else as for its blocking calls: the
 * connects (TCP, then TLS, in steps), the handshake, reconnects after
 * the backoff's pauses, renewals, waits in line and losses.  One turn:
 * rlk_client_watch says what to wait for, the loop waits, and
 * rlk_client_handle takes what came.  <resplock/adapters/poll.h> is
 * such a turn over poll(2) (rlk_client_poll_once).  These calls, the
 * _async lock calls below and their callbacks are the client's owner
 * thread's (one thread at a time).  They refuse to run while the
 * watchdog thread runs (RLK_ERR_INVALID), and once one of them was
 * called rlk_client_watchdog_start refuses (RLK_ERR_INVALID).  The
 * blocking calls still work on such a client (and wait, as they do).
 * Call rlk_client_watch right before the wait: what was asked since the
 * last turn (a request to send, a result owed) is in what it returns.
 */
#define RLK_EV_READ 0x1u
#define RLK_EV_WRITE 0x2u

typedef struct rlk_watch {
    int fd;
    unsigned events;   /* RLK_EV_READ | RLK_EV_WRITE: what to wait for   */
    unsigned revents;  /* what came, set by the loop for rlk_client_handle
                          (an error or a hang-up: RLK_EV_READ)           */
} rlk_watch;

/*
 * What to wait for: an entry in w[0..max) for each connection of the
 * client that has an fd (a connect under way among them: its socket and
 * the event its TCP connect or TLS handshake waits for), revents 0, and
 * in *deadline_ms the time (CLOCK_MONOTONIC, ms) by which
 * rlk_client_handle must be called if nothing came: a reply overdue, a
 * renewal, a wait's re-check, a lock's loss, a connect's timeout or next
 * try; -1: none; now or earlier: at once (a result is owed).  It starts
 * a connect when one is due and writes what it can, but never waits
 * (name resolution aside: a host name is resolved by the blocking
 * getaddrinfo; give an address where that matters).  Returns the number
 * of entries (only max are filled when there are more: call again with
 * room for them); RLK_ERR_INVALID (the watchdog thread runs);
 * RLK_ERR_NOMEM; or, when the client cannot go on, that failure, its
 * reason in rlk_client_errmsg: one no retry mends (RLK_ERR_URL,
 * RLK_ERR_AUTH, RLK_ERR_TLS for a certificate refused or TLS files that
 * do not load), or RLK_ERR_CLOSED (the connection closed and
 * reconnect_attempts is -1), which rlk_client_handle then returns too.
 * A failure of a connect it started is returned by the next
 * rlk_client_handle.
 */
int rlk_client_watch(rlk_client *cl, rlk_watch *w, size_t max, int64_t *deadline_ms);

/*
 * After the loop's wait (or any time): w[0..n) as rlk_client_watch
 * filled them, with revents set to what came (w NULL and n 0: nothing
 * came).  It advances a connect under way, reads and applies replies,
 * runs what is due (renewal rounds, waits' re-checks, replies overdue,
 * losses) and writes what it can; then it calls the callbacks owed, each
 * once and without the client's internal lock, so that they may call any
 * function of the client but rlk_client_free: the _async calls' results
 * and on_lost of the locks found lost (for one handle: its acquire's
 * result, its on_lost, its extend's result, its release's result).  It
 * never waits for a server.  Returns RLK_OK; the first failure of a connection since the
 * last call, its reason in rlk_client_errmsg (a connect try refused or
 * timed out, the connection closed, a reply overdue: the client
 * connects again when allowed, and locks held stay held while their
 * validity lasts, the first renewal round re-checking them);
 * RLK_ERR_INVALID (the watchdog thread runs); or a failure after which
 * the client cannot go on (as rlk_client_watch's), which also ends
 * every acquire and release under way with that status.
 */
int rlk_client_handle(rlk_client *cl, const rlk_watch *w, size_t n);

/* The result of an _async call: status as the blocking call's would be,
 * l its handle.  Called from rlk_client_handle only. */
typedef void (*rlk_lock_done)(void *ctx, rlk_lock *l, int status);

/*
 * Starts acquiring NAME and returns at once: RLK_OK with *out, a handle
 * whose acquire is under way (until done is called, only
 * rlk_lock_release_async, which calls the acquire off, rlk_lock_forget,
 * after which it goes on unheard and a lock it takes expires by its TTL,
 * and rlk_lock_name apply to it).  done(ctx, l, status) comes once,
 * with rlk_lock_acquire's statuses: RLK_OK, the lock is held (a
 * watchdog lock is renewed by rlk_client_handle, and on_lost comes from
 * there); any other, and the handle is freed when done returns.  As
 * rlk_lock_acquire, except that: a try the server refused with LOADING
 * or BUSY is not tried again (RLK_ERR_SERVER); under RESP2 a wait
 * re-checks every recheck_ms instead of waiting in line (no second
 * connection is opened); an acquire whose connection cannot be had ends
 * at its wait plus the command timeout (RLK_ERR_TIMEOUT; never with
 * RLK_WAIT_FOREVER), or when the client cannot go on.  Refused at once,
 * nothing queued and done never called: RLK_ERR_INVALID
 * (rlk_lock_acquire's cases but the watchdog lock, which is allowed;
 * done NULL; the watchdog thread runs), RLK_ERR_NOMEM.
 */
int rlk_lock_acquire_async(rlk_client *cl, const char *name, const rlk_lock_options *o,
                           rlk_lock_done done, void *ctx, rlk_lock **out);

/*
 * Releases a held lock (one hold of a reentrant lock), or calls off an
 * acquire under way (whose done is then never called; a lock it took
 * meanwhile is given back), and returns at once.  RLK_OK: done(ctx, l,
 * status) (NULL: none) comes with rlk_lock_release's statuses (a
 * call-off: RLK_LOCK_NOT_HELD when the acquire had taken nothing, else
 * the giving back's), and the handle is freed when it returns, whatever
 * the status.  Without a connection the release waits for one up to the
 * command timeout (then a connection status: the lock expires by
 * itself).  RLK_ERR_INVALID: a release or an extend under way on l, a
 * handle that ended (in its last callback), or the watchdog thread
 * runs.  The blocking rlk_lock_release and rlk_lock_extend refuse a
 * handle with an _async call under way, or that ended (RLK_ERR_INVALID).
 */
int rlk_lock_release_async(rlk_lock *l, rlk_lock_done done, void *ctx);

/*
 * Extends a held lock as rlk_lock_extend does, and returns at once.
 * RLK_OK: done (NULL: none) comes with rlk_lock_extend's statuses, the
 * handle staying; a lost reply is not sent again (RLK_ERR_CLOSED: call
 * again when connected).  Refused at once, nothing sent:
 * RLK_ERR_INVALID (ms < 1, an unknown how, not held, a release or an
 * extend under way, the watchdog thread runs), RLK_LOCK_LOST (lost:
 * on_lost, if owed, comes from the next rlk_client_handle),
 * RLK_ERR_CLOSED (not connected now).
 */
int rlk_lock_extend_async(rlk_lock *l, int64_t ms, int how, rlk_lock_done done, void *ctx);

/*
 * Opt-in watchdog thread: from then on the thread alone does the
 * client's I/O, on the client's one connection.  It renews as
 * rlk_client_tick does; on_lost is called from that thread.  While it
 * runs, the client's other calls may be made from one other thread: each
 * hands its request to the thread and waits for the result (within the
 * call's own deadline).  The thread holds the client's internal lock
 * except while it polls; a connect it makes (after the connection
 * closed) holds it up to the connect timeout.  The accessors never take
 * that lock.  Returns RLK_OK (also when already running), RLK_ERR_IO (no
 * pipe, or no thread), RLK_ERR_INVALID (an event loop turns the client:
 * one of rlk_client_watch, rlk_client_handle or the _async calls was
 * called).  rlk_client_watchdog_stop stops and joins it
 * (nothing when none runs).  Both from the client's owner thread.
 */
int rlk_client_watchdog_start(rlk_client *cl);
void rlk_client_watchdog_stop(rlk_client *cl);

/* Without a handle (for shell scripts): release or extend by token.
 * Simple locks only.  Statuses as rlk_lock_release / rlk_lock_extend
 * (RLK_ERR_NOMEM too); *ttl_ms_after (may be NULL) is the TTL after
 * extending.  The client's owner thread. */
int rlk_release_token(rlk_client *cl, const char *name, const char *token);
int rlk_extend_token(rlk_client *cl, const char *name, const char *token, int64_t ms,
                     int how, int64_t *ttl_ms_after);

/* The longest host name and command a lock records (bytes, encoded). */
#define RLK_HOLDER_HOST_MAX 64
#define RLK_HOLDER_CMD_MAX 64

/* Why a key is not a lock (rlk_lock_status.not_a_lock; not a status). */
enum rlk_not_a_lock_why {
    RLK_NOT_A_LOCK_TYPE = 1,   /* neither a string nor a hash              */
    RLK_NOT_A_LOCK_NO_TTL = 2, /* a string or hash that never expires     */
    RLK_NOT_A_LOCK_HASH = 3    /* a hash whose values are not hold counts */
};

typedef struct rlk_lock_status {
    int held;            /* 1 when the key exists                        */
    rlk_lock_kind kind;  /* simple (string), reentrant (hash), or fair (a
                            string whose facts say resplock's fair
                            acquire took it)                              */
    int64_t ttl_ms;      /* -1: no TTL                                    */
    int64_t holds;       /* reentrant: the sum of the hold counts         */
    uint64_t fence;      /* always 0: a lock's fence is not stored (it is
                            the server's clock at the acquisition, which
                            only its holder was told)                     */
    int64_t waiters;     /* resplock waiters in line (places not lapsed)  */
    int not_a_lock;      /* 0, or RLK_NOT_A_LOCK_*: the key is no lock   */
    /* The holder's facts, as resplock's acquire recorded them: in a
     * simple lock's value (its token), in a reentrant lock's hash field
     * "rlk:holder".  has_facts 0: none recorded (another client's lock,
     * a reentrant lock handed over to a waiter that has not confirmed
     * yet, or no lock at all). */
    int has_facts;
    int64_t pid;         /* the holder's process id                      */
    int64_t since_ms;    /* wall-clock ms since 1970 on the holder's host
                            when its acquire began (a simple lock's; a
                            reentrant lock's: the server's clock when its
                            first hold was taken)                         */
    char host[RLK_HOLDER_HOST_MAX + 1]; /* gethostname, decoded          */
    char cmd[RLK_HOLDER_CMD_MAX + 1];   /* holder_cmd, decoded ("": none) */
    /* Under Redlock: the servers, how many answered, and on how many of
     * them the holder above (the one most of them name) holds it; the
     * fields above are one of those servers'.  0 otherwise. */
    int servers, answered, held_on, unused_;
    void *reserved_[6];  /* room for later fields (the library fills them) */
} rlk_lock_status;

/* What the server holds at NAME, with its holder's facts and whether it
 * is a lock at all (the whole struct is written).  RLK_OK, RLK_ERR_NOMEM,
 * RLK_ERR_SERVER, RLK_ERR_PROTO, or a connection status.  The client's
 * owner thread. */
int rlk_lock_get_status(rlk_client *cl, const char *name, rlk_lock_status *st);


/* ------------------------------------------------------------------ */
/* The sans-I/O session: the lock protocol without I/O                  */

/*
 * One server connection's side of the lock protocol, for a program that
 * owns the socket and its event loop (epoll, libuv, libevent...).  A
 * session never reads, writes, connects, sleeps or reads a clock: the
 * caller connects the socket (TCP, Unix or TLS: the session sees only
 * bytes), hands it the bytes received (rlk_session_feed), sends the
 * bytes it asks for (rlk_session_output, then rlk_session_consume), and
 * calls rlk_session_tick when rlk_session_deadline comes.  Every call
 * takes the time, now: milliseconds on a monotonic clock of the caller's
 * choice (CLOCK_MONOTONIC for rlk_plan_* to hold), never going back.
 * One thread at a time per session; any number of sessions per thread.
 *
 * It speaks what the blocking client speaks: the handshake (HELLO 3 with
 * AUTH and SETNAME, RESP2 with AUTH where HELLO is missing, SELECT), the
 * same scripts (src/lua/) called the same way: where HELLO tells a
 * server with FUNCTIONs (Redis 7+, Valkey), FCALL of the library's
 * functions, FUNCTION LOAD of the library on "Function not found";
 * elsewhere, without HELLO, or once FCALL or FUNCTION LOAD was refused on
 * the connection, EVALSHA; a call whose script or library was missing,
 * or whose FCALL was refused, goes again once as EVAL.  The same
 * keys, tokens, fences, lines of waiters and handoffs, so sessions and
 * blocking clients share locks.  Locks are simple or reentrant (see
 * rlk_session_acquire), and held ones can be extended
 * (rlk_session_extend).  A
 * waiter wakes on the release message and takes a handoff under RESP3;
 * under RESP2 (one connection cannot both subscribe and send), and
 * where the server refused its SUBSCRIBE (rlk_session_wait_note), it
 * tries again every recheck_ms (and when the holder's TTL runs out),
 * and a release hands nothing to it (the line skips waiters nobody
 * listens for).  Held locks with a watchdog are renewed in rounds, one pipeline
 * of script calls per round.
 *
 * Results come as events (rlk_session_config.cb), called from within
 * rlk_session_feed, _tick, _closed, _connected (READY at once, under
 * RESP2 with nothing to send), _acquire and _release, never from
 * anywhere else.  The callback may call
 * rlk_session_acquire, rlk_session_release, rlk_session_extend and the
 * handle's accessors (not rlk_session_feed, _tick, _closed, _connected
 * or _free).
 *
 * Deadlines: every request sent has the command timeout for its reply; a
 * wait ends at its wait_ms; an acquire queued before the handshake ends
 * fails at its own deadline.  A reply overdue fails the session (a
 * renewal's reply is due by the time its lock is to be reported lost:
 * then the lock is reported LOST and the connection given up): the
 * call returns RLK_ERR_TIMEOUT, as it returns RLK_ERR_PROTO for bytes
 * that are not RESP or that read as the reply of a request not yet
 * consumed (sent) from the output, or as no answer to the request whose
 * reply is next (a type it never gets, a confirmation of another
 * channel than its SUBSCRIBE's), and RLK_ERR_LIMIT past the input bound.  After a
 * failure the caller closes the socket and calls rlk_session_closed:
 * an acquire under way is tried again after the next handshake, as the
 * blocking client does, while its own deadline allows (wait_ms plus one
 * command timeout from the acquire; the re-sent try's reply is due by
 * then too), in the script's form that finds a lock its lost try took
 * (same token; validity from the re-sent try), else it ends
 * (RLK_ERR_TIMEOUT when no handshake came in time); another hold of a
 * reentrant lock this session holds for the same holder is not tried
 * again (a hold the lost try counted could not be told from the earlier
 * ones): it ends RLK_ERR_CLOSED.  A release under way is sent again once
 * after the next handshake, within one command timeout of its first
 * sending (a simple lock's flagged as a re-send while its validity
 * lasts, a reentrant one's told by its tombstone, see release.lua: a
 * lock the lost attempt freed is reported RLK_OK); a second close, or
 * no handshake in that time, ends it (RLK_ERR_CLOSED, RLK_ERR_TIMEOUT;
 * the lock runs out by its TTL).  Extends under way report
 * RLK_ERR_CLOSED, held locks stay held while their validity lasts.
 * After a reconnect
 * (rlk_session_connected again) the first renewal round re-checks every
 * held lock; a lock that cannot be renewed in time is reported lost.
 */
typedef struct rlk_session rlk_session;
typedef struct rlk_session_lock rlk_session_lock;

typedef enum rlk_session_event {
    RLK_SEV_READY = 1,      /* the handshake is done (lock NULL, status 0) */
    RLK_SEV_ACQUIRED,       /* the lock is held (status RLK_OK)            */
    RLK_SEV_NOT_ACQUIRED,   /* status: RLK_LOCK_BUSY, RLK_ERR_SERVER,
                               RLK_ERR_TIMEOUT, RLK_ERR_CLOSED...; the
                               handle is freed when the callback returns   */
    RLK_SEV_LOST,           /* a held lock was found lost, before its
                               validity ends; release the handle          */
    RLK_SEV_RELEASED,       /* status RLK_OK, RLK_LOCK_NOT_HELD,
                               RLK_LOCK_NOT_OWNER, or a failure; the
                               handle is freed when the callback returns   */
    RLK_SEV_EXTENDED        /* rlk_session_extend's result: RLK_OK,
                               RLK_LOCK_NOT_HELD, RLK_LOCK_NOT_OWNER (both
                               also report the lock LOST), RLK_LOCK_LOST,
                               RLK_ERR_TIMEOUT, RLK_ERR_SERVER,
                               RLK_ERR_PROTO, RLK_ERR_CLOSED               */
} rlk_session_event;

typedef void (*rlk_session_cb)(void *ctx, rlk_session *s, rlk_session_event ev,
                               rlk_session_lock *l, int status);

typedef struct rlk_session_config {
    const char *username;   /* AUTH (in HELLO); NULL: "default" in HELLO,
                               the password alone in a RESP2 AUTH        */
    const char *password;   /* NULL: no AUTH                               */
    const char *client_name; /* CLIENT SETNAME (in HELLO); NULL: none       */
    int db;                 /* SELECT when > 0                             */
    int protocol;           /* as rlk_conn_config's: 0: RESP3, RESP2 where
                               HELLO is refused as unknown; 2: RESP2 (no
                               HELLO); 3: RESP3 only (a server without it
                               fails the handshake, RLK_ERR_SERVER)     */
    int command_timeout_ms; /* for each reply; 0: 5000; -1: none           */
    size_t max_input;       /* bytes of one reply (or push) buffered at
                               most; 0: 1 MiB                              */
    /* The timing: drift_ms, renew_divisor, recheck_ms (rlk_plan_*); NULL:
     * the defaults.  Copied. */
    const rlk_client_config *timing;
    rlk_session_cb cb;
    void *ctx;
    void *reserved_[8];     /* zero: room for later fields                 */
} rlk_session_config;

/* Fills *cfg with the defaults (all 0/NULL). */
void rlk_session_config_init(rlk_session_config *cfg);

/* A session (copies cfg and its strings); NULL when memory runs out or
 * the kernel gives no random bytes (for the handoff channel). */
rlk_session *rlk_session_new(const rlk_session_config *cfg);

/* Frees the session and its handles (no event; locks run out by their
 * TTL).  NULL is allowed.  Not from its callback. */
void rlk_session_free(rlk_session *s);

/* The socket is connected: the handshake is queued (RLK_SEV_READY when
 * it is done).  RLK_OK, RLK_ERR_NOMEM, RLK_ERR_INVALID when already
 * connected. */
int rlk_session_connected(rlk_session *s, int64_t now);

/* The socket was closed (by either side, or after a failure): see
 * above.  Nothing when not connected. */
void rlk_session_closed(rlk_session *s, int64_t now);

/* Bytes received.  RLK_OK, or a failure of the session (RLK_ERR_PROTO,
 * RLK_ERR_LIMIT, RLK_ERR_NOMEM, RLK_ERR_INVALID when not connected):
 * close the socket and call rlk_session_closed. */
int rlk_session_feed(rlk_session *s, const char *buf, size_t len, int64_t now);

/* The bytes to send (*buf; 0: none), valid until the next call on s.
 * rlk_session_consume(n) drops the first n of them, once sent. */
size_t rlk_session_output(const rlk_session *s, const char **buf);
void rlk_session_consume(rlk_session *s, size_t n);

/* When rlk_session_tick is next due (ms on the caller's clock), or -1:
 * nothing is. */
int64_t rlk_session_deadline(const rlk_session *s);

/* The time has come: timeouts, waits, renewals, losses.  RLK_OK, or
 * RLK_ERR_TIMEOUT (a reply overdue) or RLK_ERR_NOMEM: close the socket
 * and call rlk_session_closed. */
int rlk_session_tick(rlk_session *s, int64_t now);

/* 1 after RLK_SEV_READY, until rlk_session_closed. */
int rlk_session_ready(const rlk_session *s);

/* The reason of the last failure ("" if none). */
const char *rlk_session_errmsg(const rlk_session *s);

/* NULL while waits on this connection wait in line as above (or before
 * it is known); else why they do not: the server refused a SUBSCRIBE
 * (an ACL user without channel permission, which is Redis 7's default
 * for new users, acl-pubsub-default resetchannels; or without the
 * SUBSCRIBE command), and its waiters then try again at each re-check
 * (every recheck_ms, and when the holder's TTL runs out): not in line
 * when the handoff channel was refused, in line but not woken by
 * releases when a release channel was.  Until the next connection. */
const char *rlk_session_wait_note(const rlk_session *s);

/* Starts taking the lock NAME with o (NULL: the defaults; on_lost is not
 * used: RLK_SEV_LOST is).  Before the handshake is done the acquire waits
 * for it.  The handle is returned, and reported by one RLK_SEV_ACQUIRED
 * or RLK_SEV_NOT_ACQUIRED event; user is handed back by
 * rlk_session_lock_user.  A reentrant lock (kind RLK_LOCK_REENTRANT) is
 * the blocking client's: a hash whose field, the holder, counts its
 * holds.  The session has no threads, so o->holder names the holder
 * (copied; rlk_session_lock_token returns it); NULL: a holder of this
 * handle's own, the session's random id, ':' and a counter, so that
 * handles acquired without one exclude each other.  Acquiring a lock its
 * holder holds already takes another hold (rlk_session_lock_holds);
 * when another handle of this session holds it for the same holder, the
 * new hold has that hold's fence.  Each release takes one hold away; the
 * last frees the lock (or hands it over).  A holder named as a blocking
 * client's (its rlk_lock_token) shares that client's holds.  A lock
 * handed over under RESP3 without a watchdog is reported ACQUIRED at the
 * handoff's message, valid for the claim (see "Waiting in line" above);
 * its confirmation's reply, fed later, extends the validity to the TTL,
 * or gives RLK_SEV_LOST.  NULL (no event) for an empty name or holder, an
 * unknown kind, a TTL that leaves no validity (rlk_plan_valid_ms of the
 * session's timing 0 or less), or no memory; rlk_session_errmsg says
 * which. */
rlk_session_lock *rlk_session_acquire(rlk_session *s, const char *name,
                                      const rlk_lock_options *o, void *user, int64_t now);

/* Releases a held (or lost) lock: one RLK_SEV_RELEASED event follows
 * (from this call when nothing need be sent), after which the handle is
 * freed.  An acquire still under way is called off: its wait ends now
 * (leaving the line), a lock it took after all is released, and
 * RLK_SEV_RELEASED comes instead of its result (RLK_LOCK_NOT_HELD when
 * it took none).  RLK_OK; RLK_ERR_INVALID when a release is under way
 * already; RLK_ERR_NOMEM when the request could not be queued (the
 * session is then broken: close, as after a failed feed). */
int rlk_session_release(rlk_session_lock *l, int64_t now);

/* Extends a held lock on the server (the extend script, as
 * rlk_lock_extend: how RLK_EXTEND_ADD adds ms to the time it has left,
 * RLK_EXTEND_SET makes that ms, and then ms becomes the TTL its renewals
 * set; a reentrant lock's expiry never shortens).  One RLK_SEV_EXTENDED
 * event follows with the result; on RLK_OK the lock is valid for the TTL
 * the server set, from when this call queued the request, less the
 * drift.  A reply that comes after that validity is over reports
 * RLK_ERR_TIMEOUT and the lock lost; RLK_LOCK_NOT_HELD (expired) and
 * RLK_LOCK_NOT_OWNER (someone else holds it) report it lost too
 * (RLK_SEV_LOST after the EXTENDED event).  The request is never re-sent
 * after a lost reply: closing reports RLK_ERR_CLOSED, and the lock stays
 * held while its validity lasts.  Answered NOSCRIPT (or "Function not
 * found", or its FCALL refused), it goes again as EVAL, unless the lock's release is queued behind it: then it reports
 * RLK_ERR_SERVER (an EXTENDED event always comes before RELEASED).  Returns RLK_OK (the event comes later,
 * never from this call); RLK_LOCK_LOST (found lost earlier);
 * RLK_ERR_INVALID (ms < 1, an unknown how, a lock not held or being
 * released, or an extend of it under way); RLK_ERR_CLOSED (not ready);
 * RLK_ERR_NOMEM (the session is then broken, as after a failed feed). */
int rlk_session_extend(rlk_session_lock *l, int64_t ms, int how, int64_t now);

void *rlk_session_lock_user(const rlk_session_lock *l);
const char *rlk_session_lock_name(const rlk_session_lock *l);
const char *rlk_session_lock_token(const rlk_session_lock *l);
uint64_t rlk_session_lock_fence(const rlk_session_lock *l);
/* A reentrant lock's holds by its holder, as the acquire saw them (1 for
 * a simple lock; 0 before it is held). */
int64_t rlk_session_lock_holds(const rlk_session_lock *l);
/* Milliseconds the lock is known held from now (0: not held, lost, or
 * not acquired yet). */
int64_t rlk_session_lock_remaining_ms(const rlk_session_lock *l, int64_t now);


/*
 * Rate limiting: a limiter NAME admits count decisions per period_ms,
 * up to burst of them at once from idle, and no more than burst +
 * t * count / period_ms in any span of t ms, whatever the number of
 * clients and whatever their clocks: GCRA (the generic cell rate
 * algorithm) on the server's clock, one key per limiter
 * ("resplock:rate:" NAME, holding when the limiter is idle again, with
 * an expiry then, so that an idle limiter holds no memory), one round
 * trip per decision (the rate script, src/lua/rate.lua).  Clients that
 * share a limiter must give it the same count, period_ms and burst.
 * On a cluster the decision goes to the key's node.
 */

/* Status of a rate decision refused, beyond the connection's. */
enum {
    RLK_RATE_LIMITED = -30  /* refused: the tokens are not there now, and
                               (with a wait) would not be within it      */
};

typedef struct rlk_rate_options {
    int64_t count;        /* decisions per period: 1..period_ms * 1000
                             (one a microsecond at most; no default)     */
    int64_t period_ms;    /* > 0; the init's: 1000                       */
    int64_t burst;        /* decisions at once from idle, > 0; init's: 1 */
    int64_t n;            /* tokens one decision takes, 1..burst; init's:
                             1 (rlk_rate_status ignores it)               */
    /* 0: decide once; > 0: while refused, sleep the time the server said
     * and ask again, so long as the wake-up comes within wait_ms of the
     * call's start; RLK_WAIT_FOREVER: without bound. */
    int64_t wait_ms;
    void *reserved_[6];   /* zero: room for later fields                */
} rlk_rate_options;

/* Fills *o with the defaults (count 0, which the caller sets; period
 * 1000 ms, burst 1, n 1, no wait; the reserved fields zero).  Cannot
 * fail; any thread. */
void rlk_rate_options_init(rlk_rate_options *o);

typedef struct rlk_rate_result {
    int allowed;          /* 1: the n tokens were taken                 */
    int64_t wait_ms;      /* refused: ms until n would be allowed, by the
                             server's clock (0 when allowed)              */
    int64_t left;         /* tokens that could be taken now, after it   */
    int64_t reset_ms;     /* ms until the limiter is idle (burst left)  */
    int64_t decisions;    /* decisions asked in the call (a wait asks again
                             after each sleep)                            */
    int64_t slept_ms;     /* the waits slept in the call, by the server's
                             word and 1 ms each (the client's monotonic
                             clock runs them)                             */
    int64_t reserved_[4];
} rlk_rate_result;

/*
 * Takes o->n tokens of limiter NAME: one decision, or with o->wait_ms a
 * wait that sleeps the time each refusal names and 1 ms (the client's
 * clock reads whole milliseconds; a timer of the client's turns: no
 * polling, nothing sent meanwhile) and asks again.
 * A refusal whose wait would end past the call's start plus wait_ms
 * returns at once, with the server's wait in res->wait_ms: the call
 * never sleeps past its wait, and never for ever unless asked
 * (RLK_WAIT_FOREVER).  Each decision's reply is bounded by the command
 * timeout (with a wait, by the wait's end when that is later).  A
 * decision whose reply is lost (the connection closed) is not sent
 * again, since it may have taken the tokens: RLK_ERR_CLOSED or
 * RLK_ERR_IO.  On a cluster it follows MOVED, ASK, TRYAGAIN and
 * CLUSTERDOWN within its deadline.  res (may be NULL) gets the last
 * decision.  Returns RLK_OK (allowed: the tokens are taken);
 * RLK_RATE_LIMITED (refused, for the whole wait); RLK_ERR_INVALID (an
 * empty name, count, period_ms or burst < 1, a rate above one decision
 * a microsecond (count > period_ms * 1000), n < 1 or n > burst, which
 * no decision would ever allow, a negative wait other than
 * RLK_WAIT_FOREVER; nothing is sent; the reason in rlk_client_errmsg);
 * RLK_ERR_SERVER (the script refused: the key holds something else than
 * a limiter's value, maxmemory, an ACL); RLK_ERR_PROTO (an unexpected
 * reply); RLK_ERR_NOMEM; or a connection status (RLK_ERR_TIMEOUT,
 * RLK_ERR_CONNECT, RLK_ERR_IO, RLK_ERR_TLS, RLK_ERR_AUTH, RLK_ERR_CLOSED,
 * ...).  The client's owner thread.
 */
int rlk_rate_take(rlk_client *cl, const char *name, const rlk_rate_options *o,
                  rlk_rate_result *res);

/*
 * What limiter NAME has now, without taking anything (a decision of 0
 * tokens: nothing is written): res->left tokens could be taken at once,
 * the whole burst is back in res->reset_ms; allowed is 1.  o's count,
 * period_ms and burst as rlk_rate_take's (n and wait_ms ignored).
 * Returns RLK_OK, or rlk_rate_take's failures.  The owner's thread.
 */
int rlk_rate_status(rlk_client *cl, const char *name, const rlk_rate_options *o,
                    rlk_rate_result *res);

/* The result of an event loop's rate decision, res the last decision
 * (status as rlk_rate_take's).  Called from rlk_client_handle only. */
typedef void (*rlk_rate_done)(void *ctx, int status, const rlk_rate_result *res);

/*
 * rlk_rate_take for an event loop (rlk_client_watch, rlk_client_handle):
 * starts the decision (or the wait) and returns; done is called once
 * from a later rlk_client_handle with its result, the wait's sleeps
 * being among the deadlines rlk_client_watch gives the loop.  Returns
 * RLK_OK (done will be called), or at once, without calling done,
 * RLK_ERR_INVALID (as rlk_rate_take's, or a client whose watchdog thread
 * runs, which turns the client itself), RLK_ERR_NOMEM.  The owner's
 * thread.
 */
int rlk_rate_take_async(rlk_client *cl, const char *name, const rlk_rate_options *o,
                        rlk_rate_done done, void *ctx);

/* ------------------------------------------------------------------ */
/* Semaphores with expirable permits                                    */

/*
 * A semaphore NAME holds up to `permits` permits among its holders; a
 * holder takes k of them at once (1..permits), with a TTL its watchdog
 * renews, and gives them back on release, or when it dies and its TTL
 * passes.  Every expiry is on the server's clock (TIME inside the
 * scripts, src/lua/sem_*.lua); the scripts prune the holders whose TTL
 * passed, so no holder's clock matters.  One name's state lives in one
 * hash slot ("resplock:sem:{" NAME "}" and keys beside it: see
 * resplock-protocol(7)); on a cluster every call goes to its node.
 *
 * Waiting: a holder that cannot have its k permits at once joins the
 * semaphore's line (with a wait_ms) and is woken by a release (a
 * message on the semaphore's channel; no polling), served first come,
 * first served: no later waiter takes permits while an earlier one
 * waits for more, so a waiter for k > 1 is not starved by waiters for
 * 1.  A waiter's place lapses when it stops renewing it (it died): it
 * renews it by a try at least every recheck slice (rlk_client_config's
 * recheck_ms, at most a third of the TTL), and the place lasts two
 * slices and 200 ms.  A wait that ends without its permits leaves the
 * line at once.  Under RESP2 (no subscription on the connection that
 * carries the tries) a wait looks again every slice instead of being
 * woken.
 *
 * The size: every acquire sets the semaphore's size to its o->permits;
 * a change takes effect at once and takes no permit away from its
 * holders (with fewer permits than are held, new acquires wait until
 * enough were given back).  Clients that share a name should give the
 * same size.
 *
 * Each acquire gets a fencing number (rlk_sem_fence): one more than the
 * last one given on NAME, so that it grows from holder to holder.  A
 * semaphore idle long enough that its keys expired starts again from
 * the server's clock in microseconds, above every fence given before
 * (unless fences were drawn faster than one a microsecond).
 */
typedef struct rlk_sem rlk_sem;

/* The semaphore NAME's state is the hash RLK_SEM_KEY_PREFIX NAME "}"
 * (resplock-protocol(7) has the rest). */
#define RLK_SEM_KEY_PREFIX "resplock:sem:{"

/* The layout on the server (rlk_sem_options.layout). */
typedef enum rlk_sem_layout {
    RLK_SEM_LAYOUT_RESPLOCK = 0,        /* the portable one above (default) */
    /* redis-semaphore's (npm 5.x): the sorted set "semaphore:" NAME (no
     * hash tag: on a cluster, that whole key's slot), a member per
     * permit (TOKEN, or TOKEN_0 .. TOKEN_{k-1}) scored by its holder's
     * last acquire or refresh and pruned lock_timeout_ms after, so that
     * resplock and redis-semaphore's Semaphore and MultiSemaphore share
     * NAME.  resplock scores on the server's clock, redis-semaphore on
     * each client's: its guarantees are redis-semaphore's, holders'
     * clocks must agree to within lock_timeout_ms.  The permits' TTL is
     * the lockTimeout (rlk_sem_extend at most that); no size is kept on
     * the server (each holder's permits is its own limit); no line and
     * no channel (a waiter tries again every 10 ms, as redis-semaphore
     * does, in no order); fence 0. */
    RLK_SEM_LAYOUT_REDIS_SEMAPHORE = 1
} rlk_sem_layout;

typedef struct rlk_sem_options {
    int64_t permits;      /* the semaphore's size, >= 1 (no default)     */
    int64_t k;            /* permits taken at once, 1..permits; init's 1 */
    int64_t ttl_ms;       /* 0: RLK_DEFAULT_TTL_MS                       */
    int64_t wait_ms;      /* 0: try once; RLK_WAIT_FOREVER; or up to this */
    int watchdog;         /* 1: renew while held (as rlk_lock_options')  */
    /* Called once when the permits are found lost, as a lock's on_lost
     * (rlk_lock_options.on_lost says from where, and what it may do). */
    void (*on_lost)(void *ctx, rlk_sem *s);
    void *ctx;
    int64_t lost_margin_ms; /* as rlk_lock_options'                      */
    const char *holder_cmd; /* as rlk_lock_options' (status shows it)   */
    rlk_sem_layout layout;
    int unused_;
    /* RLK_SEM_LAYOUT_REDIS_SEMAPHORE: its lockTimeout, the permits' TTL
     * there (0: ttl_ms; both given, they must be equal). */
    int64_t lock_timeout_ms;
    void *reserved_[6];   /* zero: room for later fields                 */
} rlk_sem_options;

/* Fills *o with the defaults (permits 0, which the caller sets; k 1; the
 * rest 0/NULL).  Cannot fail; any thread. */
void rlk_sem_options_init(rlk_sem_options *o);

/*
 * Takes o->k permits of semaphore NAME (setting its size to o->permits),
 * waiting up to o->wait_ms in the semaphore's line.  Returns RLK_OK with
 * *out set; RLK_LOCK_BUSY (not k permits free within the wait);
 * RLK_ERR_INVALID (an empty name or one that begins with '}' (its keys
 * would share no hash slot), out NULL, permits < 1, k < 1 or
 * k > permits, a negative TTL or wait (but RLK_WAIT_FOREVER), permits or
 * a TTL of 2^40 or more, a watchdog with neither tick mode, an event
 * loop nor the thread, a layout not known, for RLK_SEM_LAYOUT_REDIS_SEMAPHORE
 * a negative lock_timeout_ms or one and a ttl_ms that differ, or a
 * Redlock client; nothing sent; the reason in
 * rlk_client_errmsg); RLK_ERR_SERVER (a script refused: the keys hold
 * something else, maxmemory, an ACL); RLK_ERR_PROTO; RLK_ERR_NOMEM; or a
 * connection status.  The client's owner thread.
 */
int rlk_sem_acquire(rlk_client *cl, const char *name, const rlk_sem_options *o, rlk_sem **out);

/*
 * Gives the permits back (atomically, only if this holder still has
 * them), wakes the line, and frees s in every case.  Returns RLK_OK,
 * RLK_LOCK_LOST (lost before: on_lost was called, by this call if it
 * was owed; nothing sent), RLK_LOCK_NOT_HELD (expired: the holder was
 * pruned, or its TTL passed), RLK_ERR_INVALID (s NULL), RLK_ERR_SERVER,
 * RLK_ERR_PROTO, or a connection status (the permits then expire with
 * their TTL).  The client's owner thread.
 */
int rlk_sem_release(rlk_sem *s);

/* Drops the handle without telling the server (the permits expire with
 * their TTL); stops its renewals.  NULL is allowed. */
void rlk_sem_forget(rlk_sem *s);

/* Sets the permits' TTL to ms from now (on the server's clock), if this
 * holder still has them: RLK_OK, RLK_LOCK_NOT_HELD (pruned), RLK_LOCK_LOST
 * (reported lost before), RLK_ERR_INVALID (ms < 1), or a connection
 * status.  The command's --hold-min keeps the permits so. */
int rlk_sem_extend(rlk_sem *s, int64_t ms);

int64_t rlk_sem_remaining_ms(const rlk_sem *s); /* as rlk_lock_remaining_ms */
int rlk_sem_is_lost(const rlk_sem *s);
uint64_t rlk_sem_fence(const rlk_sem *s);
const char *rlk_sem_token(const rlk_sem *s);
const char *rlk_sem_name(const rlk_sem *s);
int64_t rlk_sem_k(const rlk_sem *s);              /* the permits it holds */
int64_t rlk_sem_ttl_ms(const rlk_sem *s);

/* One holder, as rlk_sem_get_status reads it. */
typedef struct rlk_sem_holder {
    char token[64];       /* the holder's token (its identifier)         */
    int64_t k;            /* permits it holds                            */
    int64_t ttl_ms;       /* until the server prunes it                  */
    uint64_t fence;
    /* The holder's facts as resplock recorded them (has_facts 0: none,
     * as for another client's holder). */
    int has_facts;
    int64_t pid;
    int64_t since_ms;     /* wall-clock ms since 1970 on the holder's host */
    char host[RLK_HOLDER_HOST_MAX + 1];
    char cmd[RLK_HOLDER_CMD_MAX + 1];
    /* RLK_SEM_LAYOUT_REDIS_SEMAPHORE: ms since its last acquire or
     * refresh, on the server's clock (0 in resplock's layout). */
    int64_t age_ms;
} rlk_sem_holder;

typedef struct rlk_sem_status {
    int exists;           /* 1 when NAME has a semaphore's keys          */
    int not_a_sem;        /* 1: NAME's keys hold something else          */
    int64_t permits;      /* the size last set (0: none kept: the
                             redis-semaphore layout)                      */
    int64_t used;         /* permits held by holders not expired         */
    int64_t waiters;      /* resplock waiters in line (places not lapsed) */
    uint64_t fence;       /* the last fence given                        */
    size_t nholders;      /* holders not expired, in holder[]            */
    rlk_sem_holder *holder; /* the library's: rlk_sem_status_free        */
    void *reserved_[4];
} rlk_sem_status;

/* What the server holds for semaphore NAME in layout (with lock_timeout_ms
 * for the redis-semaphore layout: 0 takes 10000, its default; not read
 * for RLK_SEM_LAYOUT_RESPLOCK); *st is written whole (zeroed on a
 * failure).  Nothing is written on the server.  RLK_OK (also for a name
 * with no semaphore: exists 0; or keys of another type: not_a_sem 1),
 * RLK_ERR_INVALID (a name refused as rlk_sem_acquire's, st NULL, a Redlock client, a
 * negative lock_timeout_ms), RLK_ERR_NOMEM, RLK_ERR_SERVER,
 * RLK_ERR_PROTO, or a connection status.  The client's owner thread. */
int rlk_sem_get_status(rlk_client *cl, const char *name, rlk_sem_layout layout,
                       int64_t lock_timeout_ms, rlk_sem_status *st);
/* Frees st's holders (st itself is the caller's). */
void rlk_sem_status_free(rlk_sem_status *st);

/* ------------------------------------------------------------------ */
/* Read-write locks                                                     */

/*
 * A read-write lock NAME has many readers or one writer.  Each hold
 * (one acquire) has a TTL its watchdog renews, and ends on release, or
 * when its holder dies and the TTL passes on the server's clock (TIME
 * inside the scripts, src/lua/rw_*.lua, which prune expired holds: no
 * holder's clock matters).  One name's state lives in one hash slot
 * ("resplock:rw:{" NAME "}" and keys beside it: resplock-protocol(7));
 * on a cluster every call goes to its node.
 *
 * Waiting: an acquire that cannot be granted at once joins the lock's
 * line (with a wait_ms) and is woken by a release (a message on the
 * lock's channel; no polling but the recheck slice, as a semaphore's
 * wait), served first come, first served.  A waiting writer stops the
 * readers that come after it (writers are not starved); readers that
 * come before it, or while no writer waits, read together.  (Redisson's
 * RReadWriteLock admits a reader whenever the lock is in read mode, even
 * with a writer waiting; resplock's readers do not pass a waiting
 * writer, and the layouts differ: resplock-protocol(7).)
 *
 * Reentrance: an acquire with o->holder set to a hold of the same client
 * takes another hold as the same holder (its token): a holder with a
 * write hold is granted any hold at once, one with a read hold another
 * read hold.  Downgrade: take a read hold under the write hold, then
 * release the write.  An upgrade (a write asked by a holder of only read
 * holds) is a write like any other, granted when no other holder holds
 * anything and no waiter is ahead; while other readers stay it waits.
 * Each hold is released (or forgotten) on its own.
 *
 * Each acquire gets a fencing number (rlk_rw_fence), as a semaphore's:
 * one more than the last one given on NAME.
 */
typedef struct rlk_rw rlk_rw;

/* The read-write lock NAME's state is the hash RLK_RW_KEY_PREFIX NAME "}". */
#define RLK_RW_KEY_PREFIX "resplock:rw:{"

typedef enum rlk_rw_mode { RLK_RW_READ = 1, RLK_RW_WRITE = 2 } rlk_rw_mode;

typedef struct rlk_rw_options {
    rlk_rw_mode mode;     /* RLK_RW_READ (init's) or RLK_RW_WRITE          */
    int unused_;
    int64_t ttl_ms;       /* 0: RLK_DEFAULT_TTL_MS                         */
    int64_t wait_ms;      /* 0: try once; RLK_WAIT_FOREVER; or up to this  */
    int watchdog;         /* 1: renew while held (as rlk_lock_options')    */
    /* Called once when the hold is found lost, as a lock's on_lost. */
    void (*on_lost)(void *ctx, rlk_rw *h);
    void *ctx;
    int64_t lost_margin_ms; /* as rlk_lock_options'                        */
    const char *holder_cmd; /* as rlk_lock_options' (status shows it)     */
    /* A hold of this client (a handle not yet released or forgotten,
     * lost or not) whose holder takes this hold too (reentrance,
     * downgrade); NULL: a new holder. */
    const rlk_rw *holder;
    void *reserved_[6];   /* zero: room for later fields                   */
} rlk_rw_options;

/* Fills *o with the defaults (a read, the rest 0/NULL).  Cannot fail. */
void rlk_rw_options_init(rlk_rw_options *o);

/*
 * Takes a read or a write hold of NAME, waiting up to o->wait_ms in the
 * lock's line.  Returns RLK_OK with *out set; RLK_LOCK_BUSY (not granted
 * within the wait); RLK_ERR_INVALID (an empty name or one that begins
 * with '}', out NULL, a mode not known, a negative TTL or wait (but
 * RLK_WAIT_FOREVER), a TTL of 2^40 or more, a holder of another client,
 * a watchdog with neither tick mode, an event loop nor the thread, or a
 * Redlock client; nothing sent; the reason in rlk_client_errmsg);
 * RLK_ERR_SERVER (a script refused: the keys hold something else,
 * maxmemory, an ACL); RLK_ERR_PROTO; RLK_ERR_NOMEM; or a connection
 * status.  The client's owner thread.
 */
int rlk_rw_acquire(rlk_client *cl, const char *name, const rlk_rw_options *o, rlk_rw **out);

/* Ends the hold (only if it is still held), wakes the line, and frees h
 * in every case.  Returns RLK_OK, RLK_LOCK_LOST (lost before: on_lost
 * was called; nothing sent), RLK_LOCK_NOT_HELD (expired, pruned),
 * RLK_ERR_INVALID (h NULL), RLK_ERR_SERVER, RLK_ERR_PROTO, or a
 * connection status (the hold then expires with its TTL).  The client's
 * owner thread. */
int rlk_rw_release(rlk_rw *h);

/* Drops the handle without telling the server (the hold expires with
 * its TTL); stops its renewals.  NULL is allowed. */
void rlk_rw_forget(rlk_rw *h);

/* Sets the hold's TTL to ms from now (on the server's clock), if it is
 * still held: RLK_OK, RLK_LOCK_NOT_HELD (pruned), RLK_LOCK_LOST (reported
 * lost before), RLK_ERR_INVALID (ms < 1), or a connection status. */
int rlk_rw_extend(rlk_rw *h, int64_t ms);

int64_t rlk_rw_remaining_ms(const rlk_rw *h); /* as rlk_lock_remaining_ms */
int rlk_rw_is_lost(const rlk_rw *h);
uint64_t rlk_rw_fence(const rlk_rw *h);
/* The holder's token (shared by the holds taken with o->holder). */
const char *rlk_rw_token(const rlk_rw *h);
const char *rlk_rw_name(const rlk_rw *h);
rlk_rw_mode rlk_rw_mode_of(const rlk_rw *h);
int64_t rlk_rw_ttl_ms(const rlk_rw *h);

/* One hold, as rlk_rw_get_status reads it. */
typedef struct rlk_rw_hold {
    char token[80];       /* the holder's token, ':', the hold's number    */
    rlk_rw_mode mode;
    int has_facts;        /* as rlk_sem_holder's                           */
    int64_t ttl_ms;       /* until the server prunes it                    */
    uint64_t fence;
    int64_t pid;
    int64_t since_ms;
    char host[RLK_HOLDER_HOST_MAX + 1];
    char cmd[RLK_HOLDER_CMD_MAX + 1];
} rlk_rw_hold;

typedef struct rlk_rw_status {
    int exists;           /* 1 when NAME has a read-write lock's keys      */
    int not_a_rw;         /* 1: NAME's keys hold something else            */
    int64_t readers;      /* read holds not expired                        */
    int64_t writers;      /* write holds not expired                       */
    int64_t waiters;      /* waiters in line (places not lapsed)           */
    int64_t writers_waiting; /* of them, writers                           */
    uint64_t fence;       /* the last fence given                          */
    size_t nholds;        /* holds not expired, in hold[]                  */
    rlk_rw_hold *hold;    /* the library's: rlk_rw_status_free             */
    void *reserved_[4];
} rlk_rw_status;

/* What the server holds for read-write lock NAME; *st is written whole
 * (zeroed on a failure); nothing is written on the server.  RLK_OK (also
 * for no lock there: exists 0; or keys of another type: not_a_rw 1),
 * RLK_ERR_INVALID (a name refused as rlk_rw_acquire's, st NULL, a
 * Redlock client), RLK_ERR_NOMEM, RLK_ERR_SERVER, RLK_ERR_PROTO, or a
 * connection status.  The client's owner thread. */
int rlk_rw_get_status(rlk_client *cl, const char *name, rlk_rw_status *st);
/* Frees st's holds (st itself is the caller's). */
void rlk_rw_status_free(rlk_rw_status *st);

#ifdef __cplusplus
}
#endif

#endif /* RESPLOCK_H */
