/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the lock-layer test programs (tests/test_lock_*.c),
 * on top of conntest.h's raw connections and commands: clients and lock
 * options, waiter threads, the tick-mode driver, Cluster slots, the
 * derived keys of a lock, and a proxy that can cut a reply.
 *
 * The program defines nothing of this itself but sets slow, MARGIN, srv,
 * srv_url and admin before the tests run (CLIENT() and the helpers that
 * look at a lock's keys use the shared server).
 */
#ifndef RESPLOCK_TEST_LOCKTEST_H
#define RESPLOCK_TEST_LOCKTEST_H

#include "conntest.h"
#include "fakeserver.h"
#include "resplock.h"
#include "server.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

extern int slow;        /* under valgrind: wider margins */
extern int64_t MARGIN;  /* how late a timed event may come */
long gettid_(void);

/* Whether s is a simple lock's token: "rlk:" and 32 hex digits. */
int is_token(const char *s);

extern ts_server *srv;   /* shared, for the tests that do not stop it */
extern char srv_url[64];
extern rlk_conn *admin;  /* a raw RESP3 connection to srv */

void client_cfg(rlk_client_config *cfg, const char *url);

rlk_client *client_with(const rlk_client_config *cfg, int line);
#define CLIENT_WITH(cfg) client_with(cfg, __LINE__)

rlk_client *client_ex(const char *url, int protocol, int64_t recheck_ms, const char *name,
                      int line);
#define CLIENT() client_ex(srv_url, 0, 0, NULL, __LINE__)
#define CLIENT_EX(url, proto, recheck, name) client_ex(url, proto, recheck, name, __LINE__)

/* What on_lost saw. */
struct lost_rec {
    int calls;
    int64_t at;
    int64_t remaining;
    int is_lost;
    pthread_t thread;
};

void rec_lost(void *ctx, rlk_lock *l);

int lost_calls(struct lost_rec *r);

void opts(rlk_lock_options *o, int64_t ttl, int64_t wait, rlk_lock_kind kind, int watchdog,
          struct lost_rec *lost);

/* Acquires; failure is a test failure (and NULL). */
rlk_lock *acquire(rlk_client *cl, const char *name, int64_t ttl, rlk_lock_kind kind,
                  int watchdog, struct lost_rec *lost, int line);
#define ACQ(cl, name, ttl) acquire(cl, name, ttl, RLK_LOCK_SIMPLE, 0, NULL, __LINE__)
#define ACQ_R(cl, name, ttl) acquire(cl, name, ttl, RLK_LOCK_REENTRANT, 0, NULL, __LINE__)
#define ACQ_WD(cl, name, ttl, lost) acquire(cl, name, ttl, RLK_LOCK_SIMPLE, 1, lost, __LINE__)

/* One attempt's status (wait 0); a lock got by mistake is released. */
int try_acquire(rlk_client *cl, const char *name, rlk_lock_kind kind);

/* Polls EXISTS key until it is want, within ms.  1 when it got there. */
int wait_exists(rlk_conn *c, const char *key, int want, int64_t ms);

/* The calls of a command since the last CONFIG RESETSTAT, from INFO
 * commandstats (0 when absent); "a+b" sums those of a and b. */
long long stat_calls(rlk_conn *c, const char *cmd);

/* The calls that run the library's scripts: as FUNCTIONs where the
 * server has them, else by SHA1. */
#define SCRIPT_CALLS "evalsha+fcall"

void reset_stats(rlk_conn *c);

/* Waits until cmd was called at least n times since the reset. */
int wait_calls(rlk_conn *c, const char *cmd, long long n, int64_t ms);

/* Connections of the server whose name is name. */
int count_clients(rlk_conn *c, const char *name);

/* The last pub/sub message a raw connection got (on_push of
 * connect_url), and how many. */
struct pushes {
    int n;
    char channel[96];
    char payload[16];
};

void rec_push(void *ctx, rlk_conn *c, const rlk_resp_value *m);

/* v is a string (a word of a push message) equal to w. */
int word_is(const rlk_resp_value *v, const char *w);

/* Everything the server sent c before this call has reached its
 * on_push: the server wrote it before PING's reply. */
void drain(rlk_conn *c, int line);
#define DRAIN(c) drain(c, __LINE__)

/* Reads c until *n (counted by its on_push) reaches want, within
 * LONG_MS.  1 when it did. */
int wait_heard(rlk_conn *c, const int *n, int want);

/* A thread that waits for a lock. */
struct waiter {
    rlk_client *cl;
    const char *name;
    rlk_lock_options o;
    int rc;
    rlk_lock *l;
    int64_t done_at;
    int done;          /* set (atomically) last: waiter_done() */
    char err[256];
    pthread_t th;
};

void *waiter_main(void *arg);

/* Whether the waiter's rlk_lock_acquire has returned (readable while the
 * thread runs; join it before reading the rest). */
int waiter_done(struct waiter *w);

int waiter_start(struct waiter *w, rlk_client *cl, const char *name, int64_t ttl,
                 int64_t wait, rlk_lock_kind kind);

/* Ends the waiters w[0..n-1], whatever state a test left them in: joins
 * each not joined[] yet in turn (a release hands the lock on to the next
 * one) and releases what it got. */
void waiters_end(struct waiter *w, int *joined, int n);

/* Runs the tick-mode watchdog as a program would: poll on the client's
 * fd with the timeout the last tick asked for, then tick.  Before each
 * tick it samples the key's PTTL (the minimum is what the renewals
 * kept) and the lock's validity (now + remaining: when it ends). */
struct ticker {
    rlk_client *cl;
    rlk_lock *l;
    rlk_conn *adm;     /* samples PTTL of key when both are set */
    const char *key;
    struct lost_rec *lost;
    int64_t next;
    long long min_pttl;
    int64_t valid_est;
    int ticks, errors, last_rc;
};

void ticker_init(struct ticker *t, rlk_client *cl, rlk_lock *l, rlk_conn *adm,
                 const char *key, struct lost_rec *lost);

void tick_for(struct ticker *t, int64_t ms, int until_lost);

/* CRC16/XMODEM by table, written here independently of the library. */
uint16_t t_crc16(const char *s, size_t n);

/* The Cluster slot of a key (hash tags as in the Cluster specification). */
unsigned t_slot(const char *key);

/* The key of kind what ("fence", "released") that belongs to name, by
 * the forms the header documents; "" when there is none. */
void find_derived(const char *name, const char *what, char *out, size_t n);

/* A proxy between the client and the server that, when told, drops the
 * next reply coming from the server and closes both sides: the server
 * executed the command, the client never learns it.  While hold is set,
 * a new connection is accepted but not passed on: a re-send waits.
 * reset, once: one connection's client side is reset (closed with
 * SO_LINGER 0, as a server that crashed or a middlebox that dropped it):
 * PROXY_RESET_NOW at once (within 20 ms), PROXY_RESET_AT_REPLY when the
 * next reply comes, which is dropped (the client waits for it): any
 * reply, so a test arms it after a round trip of the client's, as the
 * client's connection set-up is not waited for. */
enum { PROXY_RESET_NOW = 1, PROXY_RESET_AT_REPLY = 2 };
struct proxy {
    int upstream_port;
    int cut;    /* set by the test */
    int cuts;   /* replies dropped */
    int hold;   /* set by the test */
    int reset;  /* set by the test; back to 0 once done */
    int resets; /* connections reset */
    /* Set by the test: on connections accepted from then on, what the
     * client sends after its first chunk (the handshake) reaches the
     * server this many ms late, even after the client closed: a request
     * delayed on the way. */
    int lag_ms;
    int lagged; /* chunks passed on late */
};

void proxy_conn(fake_conn *fc, void *arg);

/* Starts a proxy (px zeroed) to the shared server and gives its URL in
 * url; a client of that URL whose reply px cuts.  NULL on failure (a test
 * failure). */
fake_server *proxy_start(struct proxy *px, char *url, size_t n);

/* The derived key `what` ("waiters", "queue") of a name without braces. */
#define HO_KEY(buf, name, what) snprintf(buf, sizeof buf, "{%s}:%s", name, what)

/* Polls HLEN of name's waiters hash until it is n, within ms. */
/* The entries (tokens) of a waiters hash, not its "~" fields (the
 * chain of handoffs, the yield window); LLONG_MIN on error. */
long long waiter_entries(const char *key);
int wait_waiters(const char *name, long long n, int64_t ms);

/* How many keys matching match (a SCAN pattern) have no TTL (PTTL -1),
 * the first of them into first (n bytes); -1 on failure (a test
 * failure).  Every key resplock writes has a TTL. */
long long keys_without_ttl(rlk_conn *c, const char *match, char *first, size_t n);

/* The server's clock (TIME) in ms, or -1 (a test failure). */
long long server_time_ms(void);

/* Sets slow and MARGIN (under valgrind, or with $RLK_TEST_SLOW or
 * $RLK_WRAP set) and makes SIGPIPE fatal (the library must never raise
 * it). */
void locktest_timing(void);
/* locktest_timing, then starts the shared server srv and connects admin.
 * 0, or -1 (a failure printed). */
int locktest_setup(void);
/* Frees admin, stops srv, prints the total time of the run (started at
 * t0) and the counts; returns the exit status. */
int locktest_finish(int64_t t0);

/* Runs a test and prints its verdict and time. */
extern int ran_any;
#define RUN(fn)                                                                             \
    do {                                                                                    \
        int64_t t_ = ts_now_ms();                                                           \
        int n_ = tl_state.passed + tl_state.failed, f_ = tl_state.failed;                   \
        RUN_TEST(fn);                                                                       \
        if (tl_state.passed + tl_state.failed != n_) {                                      \
            ran_any = 1;                                                                    \
            printf("%s %s (%lld ms)\n", tl_state.failed != f_ ? "FAILED" : "ok", #fn,       \
                   (long long)(ts_now_ms() - t_));                                          \
            fflush(stdout);                                                                 \
        }                                                                                   \
    } while (0)

#endif
