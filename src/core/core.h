/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The request core (core.c): one server connection's protocol, sans-I/O.
 *
 * It is fed the bytes received and asked for the bytes to send (the
 * caller owns the socket), and it keeps a queue of requests, each with
 * its own reply callback, context, deadline and re-send policy: replies
 * come back in the order requests went out, so the oldest request owed
 * is answered by the next reply that is not a push.  It does the one
 * handshake (HELLO 3 with AUTH and SETNAME; RESP2 with AUTH, CLIENT
 * SETNAME and SELECT where HELLO is refused), calls scripts (FCALL where
 * the server has the library's functions, else EVALSHA; EVAL once after
 * NOSCRIPT or a missing function, FUNCTION LOAD of the library), routes
 * pushes, and classifies error replies in one place.
 *
 * It names no primitive: what a request means is its owner's business,
 * told through its callbacks.  Internal (rlk__ prefix, not installed).
 *
 * Time: every call that may queue or expire a request takes the caller's
 * monotonic clock (ms), never going back.  One thread at a time.
 */
#ifndef RESPLOCK_CORE_H
#define RESPLOCK_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "defaults.h"
#include "reply.h"
#include "scriptlib.h"
#include "resplock.h"

typedef struct rlk__core rlk__core;
typedef struct rlk__req rlk__req;

/* The reply types a request can get besides an error (rlk__req_ops.expect). */
#define RLK__T_SIMPLE 0x01u
#define RLK__T_BULK 0x02u
#define RLK__T_INTEGER 0x04u
#define RLK__T_ARRAY 0x08u
#define RLK__T_NULL 0x10u
#define RLK__T_MAP 0x20u
#define RLK__T_VERBATIM 0x40u
#define RLK__T_ANY 0xffffu

/* A request's kind of reply (rlk__req.sub) besides a plain one. */
enum { RLK__SUB_NONE, RLK__SUB_ON, RLK__SUB_OFF };

typedef struct rlk__req_ops {
    /* Writes the request's command into the core's output, by
     * rlk__core_put or rlk__core_put_script, exactly once: RLK_OK, or a
     * failure (the request is not queued; nothing of it is sent).
     * Called when the request is submitted, and again when the core
     * sends it again (as EVAL after NOSCRIPT or a missing function). */
    int (*build)(rlk__core *c, rlk__req *q);
    /* The request's answer: the reply v (an error too, unless the core
     * answered it itself by sending the request again), or NULL when no
     * reply will come (the connection closed).  q is a copy, valid during
     * the call.  It may submit requests; it must not feed, close or free
     * the core. */
    void (*reply)(rlk__core *c, rlk__req *q, const rlk_resp_value *v);
    /* Whether a script call answered "missing" (NOSCRIPT, a missing
     * function, a refused FCALL) is sent again as EVAL; NULL: always.
     * When not, its reply gets the error with q->missing set. */
    int (*again)(rlk__core *c, const rlk__req *q);
    unsigned expect;           /* RLK__T_* */
} rlk__req_ops;

struct rlk__req {
    const rlk__req_ops *ops;
    void *ctx;                 /* the owner's */
    int64_t arg;               /* the owner's */
    int64_t deadline;          /* of its reply (monotonic ms); -1: none */
    uint64_t out_end;          /* its last byte, counted over the output */
    uint64_t chan;             /* a subscription's channel (its hash) */
    unsigned char sub;         /* RLK__SUB_* */
    unsigned char eval;        /* a script call sent as EVAL (forced) */
    unsigned char fcall;       /* a script call sent as FCALL */
    unsigned char script;      /* build wrote a script call */
    unsigned char missing;     /* see rlk__req_ops.again */
    unsigned char hs;          /* a handshake step (the core's own) */
};

/* What the core tells its owner. */
typedef struct rlk__core_hooks {
    /* A new connection: its handshake is about to be queued. */
    void (*connected)(void *ctx, rlk__core *c);
    /* The handshake is done: requests may be submitted. */
    void (*ready)(void *ctx, rlk__core *c);
    /* The connection went, after every request owed heard so. */
    void (*closed)(void *ctx, rlk__core *c);
    /* A push that answers no request (a message, an unsubscribe the server
     * sent by itself). */
    void (*push)(void *ctx, rlk__core *c, const rlk_resp_value *v);
    /* The owner's own times (its waits, renewals): its next one (-1:
     * none), which rlk__core_deadline counts in, and what is due then,
     * which rlk__core_tick runs after the core's own checks (a failure
     * it returns is rlk__core_tick's). */
    int64_t (*deadline)(void *ctx);
    int (*tick)(void *ctx, int64_t now);
    /* Around every call that may call back (feed, tick, connected,
     * closed): the owner's callbacks run between its enter and leave;
     * leave gets the call's status and returns it. */
    void (*enter)(void *ctx, int64_t now);
    int (*leave)(void *ctx, int status);
    void *ctx;
} rlk__core_hooks;

typedef struct rlk__core_config {
    const char *username;      /* as rlk_conn_config's URL gives (copied) */
    const char *password;
    const char *client_name;
    int db;
    /* 0: HELLO 3, RESP2 where the server refuses it as unknown; 2: RESP2
     * (no HELLO); 3: RESP3 only (a server without it fails the handshake,
     * RLK_ERR_PROTO). */
    int protocol;
    int command_timeout_ms;    /* 0: RLK__DEFAULT_TIMEOUT_MS; -1: none */
    size_t max_input;          /* 0: 1 MiB: a reply's bytes */
    /* The memory of a reply's tree (0: 24 * max_input + 64 KiB), apart
     * from its bytes: a reply that needs more fails the core with
     * RLK_ERR_LIMIT. */
    size_t max_tree;
    /* The parser's limits (NULL: a bulk up to max_input, nesting 8, as
     * many elements as max_input's bytes can hold). */
    const rlk_resp_limits *limits;
    /* A subscription's confirmation that answers no request goes to
     * hooks.push (a blocking connection drops it there); 0: it is a
     * reply out of step, and fails the core. */
    int stray_confirmations;
    /* The script library whose scripts go as FCALL where the server
     * has FUNCTIONs, FUNCTION LOAD sending its text (scriptlib.h); it
     * outlives the core.  NULL: FCALL is never used. */
    const rlk__script_library *library;
    /* The handshake asks ROLE and fails (RLK_ERR_SERVER, a failure
     * another try may mend) unless the server says it is a primary: a
     * server that was named as the primary (by sentinels). */
    int require_primary;
    rlk__core_hooks hooks;
} rlk__core_config;

/* A core (copies cfg's strings); NULL when out of memory. */
rlk__core *rlk__core_new(const rlk__core_config *cfg);
/* Replaces the hooks given at creation. */
void rlk__core_set_hooks(rlk__core *c, const rlk__core_hooks *hooks);
/* Frees it; the requests owed end without their callbacks. */
void rlk__core_free(rlk__core *c);

/* The connection is up: queues the handshake.  RLK_OK, RLK_ERR_NOMEM,
 * RLK_ERR_INVALID (connected already). */
int rlk__core_connected(rlk__core *c, int64_t now);
/* The connection went: every request owed gets its reply callback with
 * NULL, in order; buffers are emptied.  Nothing when not connected. */
void rlk__core_closed(rlk__core *c, int64_t now);

/* Bytes received: replies are parsed and handed to their requests.
 * RLK_OK, or a failure after which the caller closes the connection
 * (RLK_ERR_PROTO, RLK_ERR_LIMIT, RLK_ERR_NOMEM, RLK_ERR_AUTH or
 * RLK_ERR_SERVER from the handshake, RLK_ERR_INVALID when not
 * connected); the reason in rlk__core_errmsg. */
int rlk__core_feed(rlk__core *c, const char *buf, size_t len, int64_t now);
/* The bytes to send, and those sent. */
size_t rlk__core_output(const rlk__core *c, const char **buf);
void rlk__core_consume(rlk__core *c, size_t n);
/* The soonest reply deadline of the requests owed, or the owner's next
 * time (-1: none). */
int64_t rlk__core_deadline(const rlk__core *c);
/* A reply overdue fails the core (RLK_ERR_TIMEOUT); then the owner's
 * tick.  Also while not connected (the owner's times go on). */
int rlk__core_tick(rlk__core *c, int64_t now);

/* Queues a request: ops (with a build), ctx, arg and the deadline of
 * its reply are the caller's (RLK__DL_DEFAULT: the command timeout from
 * now).  flags RLK__REQ_EVAL: a script call goes as EVAL at once (its
 * owner cannot hear of a NOSCRIPT: the request is never built again).
 * RLK_OK, or a failure (RLK_ERR_CLOSED before the handshake is done,
 * RLK_ERR_INVALID without build, a failure of build; RLK_ERR_NOMEM: the
 * core is broken then). */
#define RLK__DL_DEFAULT (-2)
#define RLK__REQ_EVAL 1
int rlk__core_submit(rlk__core *c, const rlk__req_ops *ops, void *ctx, int64_t arg,
                     int64_t deadline, int flags);
/* (UN)SUBSCRIBE (sharded: SSUBSCRIBE, SUNSUBSCRIBE) of ch: its answer
 * is the server's confirmation naming ch (a push, in the reply's
 * place; under RESP2 an array) or an error, given to ops->reply.  Under
 * RESP2 a connection that subscribed gets its messages as arrays, which
 * go to hooks.push as RESP3's pushes do. */
int rlk__core_subscribe(rlk__core *c, int on, int sharded, const char *ch,
                        const rlk__req_ops *ops, void *ctx, int64_t arg);
/* The same for a channel of len bytes (binary). */
int rlk__core_subscribe_n(rlk__core *c, int on, int sharded, const char *ch, size_t len,
                          const rlk__req_ops *ops, void *ctx, int64_t arg);
/* The subscriptions the server's last confirmation counted (0: none). */
int64_t rlk__core_subscribed(const rlk__core *c);
/* Whether v is a subscription's confirmation ([(s)(un)subscribe,
 * channel, count]), not a message: a hook that hears stray ones (see
 * stray_confirmations) tells them apart so. */
int rlk__core_is_confirmation(const rlk_resp_value *v);

/* For build: the command argv[0..argc) (lens NULL: strlen).  A
 * command that cannot be encoded (RLK_ERR_INVALID, RLK_ERR_LIMIT) leaves
 * the core as it was; out of memory fails it. */
int rlk__core_put(rlk__core *c, int argc, const char *const *argv, const size_t *lens);
/* For build: one command of the words head[0..nhead), then
 * argv[0..argc) (lens NULL: strlen), without gathering them first. */
int rlk__core_put_parts(rlk__core *c, int nhead, const char *const *head, const size_t *headlen,
                        int argc, const char *const *argv, const size_t *lens);
/* For build: a call of script s with nkeys keys and its arguments
 * argv[0..argc): FCALL, EVALSHA or EVAL as the connection and q allow. */
int rlk__core_put_script(rlk__core *c, rlk__req *q, const rlk_script *s, int nkeys, int argc,
                         const char *const *argv, const size_t *lens);

/* For build: the server may hold q's reply, and so every reply after
 * it on this connection, up to ms (a WAIT's timeout): q's reply
 * deadline is ms later, and so is that of every request queued while
 * the hold lasts, so that no reply behind it is overdue for it. */
void rlk__core_hold(rlk__core *c, rlk__req *q, int64_t ms);

/* The command timeout from now (-1: none), and the timeout itself. */
int64_t rlk__core_reply_deadline(const rlk__core *c);
int64_t rlk__core_timeout_ms(const rlk__core *c);
/* The caller's clock as last given, and giving it (a time before the
 * last is taken as the last): a caller that submits sets it first. */
int64_t rlk__core_now(const rlk__core *c);
void rlk__core_clock(rlk__core *c, int64_t now);

/* Marks the core failed (the caller then closes the connection):
 * status, with its message. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int rlk__core_fail(rlk__core *c, int status, const char *fmt, ...);

int rlk__core_connected_now(const rlk__core *c); /* between connected and closed */
int rlk__core_ready(const rlk__core *c);     /* the handshake is done */
int rlk__core_resp3(const rlk__core *c);
/* The native commands this connection's server has (RLK_CAP_SET_IFEQ,
 * RLK_CAP_DELIFEQ, RLK_CAP_DELEX_IFEQ of serverinfo.h; 0 before HELLO's
 * reply and without HELLO), less those dropped: a native form refused
 * (an ACL without the command, a server that has it not after all) is
 * dropped by its caller, which sends the script instead. */
unsigned rlk__core_caps(const rlk__core *c);
void rlk__core_drop_caps(rlk__core *c, unsigned caps);
int rlk__core_broken(const rlk__core *c);    /* the failure status, or 0 */
const char *rlk__core_errmsg(const rlk__core *c);
/* What the handshake learned (peer and TLS fields empty). */
const rlk_conn_info *rlk__core_info(const rlk__core *c);
/* Its server is a Redis Cluster node (its HELLO said mode "cluster"). */
int rlk__core_cluster(const rlk__core *c);
/* Requests owed, and bytes received not parsed yet. */
size_t rlk__core_owed(const rlk__core *c);
size_t rlk__core_buffered(const rlk__core *c);

/* (rlk__reply_class, the one classifier of error replies: reply.h.) */
/* v is an error reply starting with prefix. */
int rlk__error_starts(const rlk_resp_value *v, const char *prefix);

#endif
