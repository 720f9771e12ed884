/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness for the sans-I/O session (rlk_session_*).  The input is a
 * small program that plays the server's side of one client session, and
 * the time: it connects and closes, feeds replies to what the session
 * sent (read back from rlk_session_output with the library's own RESP
 * reader), pushes handoffs and release messages, feeds raw bytes, takes
 * and releases locks, moves the clock and ticks.
 *
 *   byte 0  the session's configuration:
 *             bits 0-1  protocol        0, 3, 2, 0
 *             bit  2    a password (AUTH)
 *             bit  3    a client name (SETNAME)
 *             bit  4    db 2 (SELECT)
 *             bits 5-6  command timeout 50, 100, 200, 500 ms
 *             bit  7    a lock lost is released from the callback
 *   byte 1  bits 0-1  max_input       256, 4096, 65536, 0 (1 MiB)
 *           bits 2-3  recheck_ms      0 (1000), 50, 200, 1000
 *           bits 4-5  renew_divisor   0 (3), 2, 3, 5
 *           bit  6    connect before the first step
 *           bit  7    the session's host follows redirects as over a
 *                     cluster (every node named being its server), and
 *                     an error reply (variant 4) with bit 6 set is
 *                     MOVED, ASK, TRYAGAIN or CLUSTERDOWN
 *   (a HELLO answered with variant bit 3 tells Redis 7.0, whose script
 *   calls go as FCALL; else Redis 6.2: EVALSHA)
 *   rest    steps: an opcode byte (its value modulo OP_COUNT, but for
 *           0xf0-0xf3, the steps added later: see enum op2) and its
 *           operands (see enum op below); a missing byte reads as 0.
 *
 * The properties checked, each an abort() when violated:
 *   (a) no success for a lock whose validity is over: on ACQUIRED and on
 *       an EXTENDED with RLK_OK the lock has time left, and at every step
 *       no held lock is counted valid past the TTL (or the longest an
 *       extend asked for or was answered) from the last time a request
 *       naming its token left the session (was consumed from
 *       rlk_session_output); another hold of a reentrant lock the
 *       session holds for the same holder keeps that hold's fence;
 *   (b) every deadline ends the call: an acquire ends by its start plus
 *       its wait and a few command timeouts, a release, an extend and a
 *       call without a handle by its start plus a few command timeouts,
 *       once the session has been ticked at that
 *       time; after rlk_session_tick(now) the next deadline is -1 or later
 *       than now; a held lock with a watchdog whose validity is over has
 *       been reported lost; rlk_session_closed ends every extend and
 *       call without a handle under way, and a release at its second;
 *   (c) memory stays bounded (the session's live heap and its output),
 *       and everything is freed by rlk_session_free;
 *   (d) events are well formed: only from within calls, only for handles
 *       the harness holds, one result per handle in the right order, the
 *       statuses the header allows; the output is RESP commands (arrays
 *       of bulk strings);
 *   (e) no reply answers another request: while the bytes fed are the
 *       replies the harness made for the requests it read, in order (no
 *       raw bytes since the connection began), a lock is reported
 *       ACQUIRED only while the reply to a try of its own token (TIME
 *       after its SET, the acquire script, a handoff's confirmation) or
 *       a handoff message naming that token is fed.
 *
 * Built with RLK_FUZZ_MAIN it is a program that runs files, directories
 * of files, or stdin; with RLK_FUZZ_AFL as well it uses AFL++'s
 * persistent mode when compiled by afl-clang-fast.
 */
#include "resplock.h"
#include "session_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_STEPS 4000
#define MAX_HANDLES 12
#define MAX_PENDING 512          /* requests awaiting the harness's reply */
#define OUT_BOUND (256u * 1024)  /* rlk_session_output's length, at most  */
#define SLACK_MS 2

/* ------------------------------------------------------------------ */
/* Failure reporting                                                    */

static const uint8_t *cur_input;
static size_t cur_size;
static size_t cur_pos;
static int64_t now;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void violated(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fuzz_session: property violated at input byte %zu, time %lld: ",
            cur_pos, (long long)now);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nfuzz_session: input (%zu bytes, hex):", cur_size);
    for (size_t i = 0; i < cur_size && i < 1024; i++)
        fprintf(stderr, "%s%02x", i % 32 ? "" : "\n  ", cur_input[i]);
    if (cur_size > 1024) fputs("\n  ...", stderr);
    fputc('\n', stderr);
    abort();
}

/* FUZZ_SESSION_TRACE=1 in the environment: what happens, on stderr. */
static int trace_on;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void trace(const char *fmt, ...)
{
    if (!trace_on) return;
    va_list ap;
    fprintf(stderr, "[%lld] ", (long long)now);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void trace_bytes(const char *what, const char *p, size_t n)
{
    if (!trace_on) return;
    fprintf(stderr, "[%lld] %s \"", (long long)now, what);
    for (size_t i = 0; i < n && i < 300; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c == '\r') fputs("\\r", stderr);
        else if (c == '\n') fputs("\\n", stderr);
        else if (c >= 0x20 && c < 0x7f) fputc(c, stderr);
        else fprintf(stderr, "\\x%02x", c);
    }
    fputs(n > 300 ? "...\"\n" : "\"\n", stderr);
}

#define CHECK(cond, ...) do { if (!(cond)) violated(__VA_ARGS__); } while (0)

/* ------------------------------------------------------------------ */
/* Counting allocator.  Each block carries its size and whose it is: the */
/* session's, or the harness's own reader's (which is not the session's */
/* memory to bound).                                                     */

typedef union blk_hdr {
    struct { size_t size; int harness; } h;
    max_align_t align_;
} blk_hdr;

static int harness_alloc;            /* allocations now are the harness's */
static size_t live_session, live_harness, peak_session;
static long fail_in = -1;            /* session allocations until one fails */

static void account(const blk_hdr *b, int sign)
{
    size_t *c = b->h.harness ? &live_harness : &live_session;
    if (sign > 0) *c += b->h.size;
    else *c -= b->h.size;
    if (live_session > peak_session) peak_session = live_session;
}

static int inject_failure(void)
{
    if (harness_alloc || fail_in < 0) return 0;
    if (fail_in == 0) {
        fail_in = -1;      /* one failure at a time: then the session goes on */
        return 1;
    }
    fail_in--;
    return 0;
}

static void *count_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (inject_failure() || n > SIZE_MAX - sizeof(blk_hdr)) return NULL;
    blk_hdr *b = malloc(sizeof *b + n);
    if (!b) return NULL;
    b->h.size = n;
    b->h.harness = harness_alloc;
    account(b, 1);
    return b + 1;
}

static void count_free(void *ctx, void *p)
{
    (void)ctx;
    if (!p) return;
    blk_hdr *b = (blk_hdr *)p - 1;
    account(b, -1);
    free(b);
}

static void *count_realloc(void *ctx, void *p, size_t n)
{
    if (!p) return count_malloc(ctx, n);
    if (inject_failure() || n > SIZE_MAX - sizeof(blk_hdr)) return NULL;
    blk_hdr *b = (blk_hdr *)p - 1, saved = *b;
    blk_hdr *nb = realloc(b, sizeof *nb + n);
    if (!nb) return NULL;
    account(&saved, -1);
    nb->h.size = n;
    account(nb, 1);
    return nb + 1;
}

/* ------------------------------------------------------------------ */
/* The input                                                             */

static int at_end(void)
{
    return cur_pos >= cur_size;
}

static unsigned u8(void)
{
    return cur_pos < cur_size ? cur_input[cur_pos++] : 0;
}

static unsigned u16(void)
{
    unsigned hi = u8();
    return hi << 8 | u8();
}

/* ------------------------------------------------------------------ */
/* The harness's state                                                   */

enum hstate { H_FREE, H_ACQUIRING, H_HELD, H_LOST, H_RELEASING };

typedef struct hnd {
    rlk_session_lock *l;
    enum hstate state;
    int watchdog, name;
    int64_t t0, wait, ttl;       /* the acquire: start, wait_ms, ttl_ms   */
    int64_t rel_t0;              /* the release's start                   */
    int rel_closes;              /* closes while it was under way          */
    int64_t late0;               /* H.late when the call started          */
    int64_t last_sent;           /* a request naming the token last left  */
    int sent;                    /* one did                               */
    int64_t seen_at;             /* -1, or when a request naming it was
                                    first seen in output not yet taken    */
    int64_t max_ttl;             /* the TTL, or more after an extend       */
    int reentrant;
    int lost;                    /* reported LOST                          */
    int ext_on;                  /* an extend under way, since ext_t0      */
    int64_t ext_t0, ext_late0;
    char token[96];
} hnd;

/* A call without a handle under way. */
#define MAX_CALLS 8
typedef struct hcall {
    int on;
    int which;                   /* 0 status, 1 release, 2 extend by token */
    int64_t t0, late0;
} hcall;

static const char *const names[] = {"job", "a{b}c", "order:42"};
#define NNAMES (sizeof names / sizeof names[0])

enum cmd {
    C_OTHER, C_HELLO, C_AUTH, C_SELECT, C_CLIENT, C_PING, C_INFO, C_SUBSCRIBE,
    C_UNSUBSCRIBE, C_SET, C_TIME, C_HGET, C_ACQUIRE, C_RELEASE, C_EXTEND, C_RENEW, C_SCRIPT,
    C_STATUS, C_FUNCTION,
    C_MESSAGE                    /* not a request: a message fed (see (e)) */
};

typedef struct pending {
    enum cmd cmd;
    int hello3;                  /* HELLO 3 (not HELLO 2)                 */
    int fcall;                   /* a script call sent as FCALL           */
    int n;                       /* RENEW: keys; SUBSCRIBE: channels      */
    int64_t ttl;                 /* EXTEND: the ttl asked for             */
    int reentrant;               /* ACQUIRE: kind 'r'                     */
    char chan[2][96];            /* SUBSCRIBE: the first channels         */
    char tok[96];                /* SET, TIME (its SET's), ACQUIRE, EXTEND:
                                    the token the request names           */
} pending;

static struct {
    rlk_session *s;
    rlk_session_config cfg;
    rlk_client_config timing;
    int connected, resp3, in_call, in_acquire, release_on_lost;
    int routed;                  /* the host follows redirects (byte 1, bit 7) */
    int must_close;              /* a call broke the session: close it    */
    int64_t ct;                  /* the command timeout                   */
    int64_t closed_at;           /* -1: never closed                      */
    int64_t late;                /* ms ticks came after the deadline      */
    hnd h[MAX_HANDLES];
    hcall calls[MAX_CALLS];
    rlk_session_lock *new_lock;  /* the handle being returned by acquire  */
    int new_slot;
    int stall;                   /* steps left without sending output     */
    /* what the session sent, read back */
    char *obuf;
    size_t olen, ocap;
    rlk_resp_arena arena;
    rlk_resp_reader rd;
    pending pend[MAX_PENDING];
    size_t phead, pcount;
    char handoff_chan[96];
    int in_handoff;              /* a handoff message is being fed        */
    uint64_t fence;
    char feed_tail[24];          /* the last bytes fed (note_integers)     */
    size_t feed_tn;
    /* (e): what is being fed (feeding set: the reply to a request of
     * kind feed_kind naming feed_tok, or a message), and whether the
     * bytes fed on this connection may be out of step with the requests
     * (raw bytes, a reply nobody asked for, requests not recorded). */
    int feeding, feed_kind, desync;
    char feed_tok[96];
    char last_set_tok[96];       /* a TIME goes right after its SET       */
} H;

static hnd *find(const rlk_session_lock *l)
{
    for (int i = 0; i < MAX_HANDLES; i++)
        if (H.h[i].state != H_FREE && H.h[i].l == l) return &H.h[i];
    return NULL;
}

/* The bound of (a): the lock's validity is counted from no later than
 * its last request left, for at most its TTL. */
static void check_validity(const hnd *h, const char *when)
{
    int64_t rem = rlk_session_lock_remaining_ms(h->l, now);
    CHECK(rem >= 0, "%s: remaining_ms %lld < 0", when, (long long)rem);
    if (rem == 0) return;
    CHECK(h->sent, "%s: lock %s counted held (%lld ms) though no request with its token"
          " was sent", when, h->token, (long long)rem);
    int64_t ttl = h->max_ttl > h->ttl ? h->max_ttl : h->ttl;
    CHECK(now + rem <= h->last_sent + ttl,
          "%s: lock %s valid until %lld, past its TTL %lld from its last request at %lld",
          when, h->token, (long long)(now + rem), (long long)ttl, (long long)h->last_sent);
}

/* rlk_session_release: RLK_OK, or a failure that broke the session
 * (no memory for the request): the caller closes, which ends the
 * release. */
static void release_status(int r, const char *what)
{
    CHECK(r == RLK_OK || r == RLK_ERR_NOMEM, "%s returned %d", what, r);
    if (r != RLK_OK) H.must_close = 1;
}

/* ------------------------------------------------------------------ */
/* Events                                                                */

static void on_event(void *ctx, rlk_session *s, rlk_session_event ev, rlk_session_lock *l,
                     int status)
{
    (void)ctx;
    trace("event %d lock %p status %d", (int)ev, (void *)l, status);
    CHECK(H.in_call, "event %d outside any call of the session", (int)ev);
    CHECK(s == H.s, "event for another session");
    if (ev == RLK_SEV_READY) {
        CHECK(l == NULL && status == 0, "READY with a lock or status %d", status);
        CHECK(H.connected, "READY while not connected");
        return;
    }
    hnd *h = l ? find(l) : NULL;
    if (!h && l && H.in_acquire && !H.new_lock) {
        /* the acquire under way reports before it returns its handle */
        H.new_lock = l;
        h = &H.h[H.new_slot];
        h->l = l;
        h->state = H_ACQUIRING;
    }
    CHECK(h != NULL, "event %d for a handle %p the harness does not hold", (int)ev, (void *)l);
    switch (ev) {
    case RLK_SEV_ACQUIRED:
        CHECK(h->state == H_ACQUIRING, "ACQUIRED in state %d", (int)h->state);
        CHECK(status == RLK_OK, "ACQUIRED with status %d", status);
        snprintf(h->token, sizeof h->token, "%s", rlk_session_lock_token(l));
        CHECK(H.desync ||
              (H.feeding &&
               (H.feed_kind == C_TIME || H.feed_kind == C_ACQUIRE || H.feed_kind == C_EXTEND ||
                H.feed_kind == C_MESSAGE) &&
               strcmp(H.feed_tok, h->token) == 0),
              "ACQUIRED lock %s while %s (kind %d, naming '%s')", h->token,
              H.feeding ? "feeding what answers another request" : "nothing is fed",
              H.feed_kind, H.feed_tok);
        CHECK(rlk_session_lock_remaining_ms(l, now) > 0,
              "ACQUIRED lock %s whose validity is over", h->token);
        check_validity(h, "ACQUIRED");
        if (H.in_handoff) {
            /* Held at a handoff's message, before its confirmation's
             * reply: for the claim (the waiter's re-check, or a third
             * of its TTL, and a second; at most the TTL) from its last
             * request's sending at the latest. */
            int64_t slice = H.timing.recheck_ms > 0 ? H.timing.recheck_ms : 1000;
            if (h->ttl / 3 < slice) slice = h->ttl / 3 > 10 ? h->ttl / 3 : 10;
            int64_t claim = slice + 1000 < h->ttl ? slice + 1000 : h->ttl;
            CHECK(now + rlk_session_lock_remaining_ms(l, now) <= h->last_sent + claim,
                  "lock %s handed over valid until %lld, past its claim %lld from %lld",
                  h->token, (long long)(now + rlk_session_lock_remaining_ms(l, now)),
                  (long long)claim, (long long)h->last_sent);
        }
        if (h->reentrant && rlk_session_lock_holds(l) > 1) {
            /* A made-up server may count holds that do not add up: the
             * fence is then one of the other holds', any of them (also
             * one whose validity ran out unreported: no watchdog). */
            int others = 0, sure = 0, same = 0;
            for (int i = 0; i < MAX_HANDLES; i++) {
                const hnd *o = &H.h[i];
                /* Releasing: once held (a fence), not an acquire called
                 * off before it took the lock; never one found lost. */
                if (o == h || !o->reentrant || o->name != h->name || o->lost ||
                    (o->state != H_HELD &&
                     (o->state != H_RELEASING || !rlk_session_lock_fence(o->l))) ||
                    strcmp(o->token, h->token) != 0)
                    continue;
                others++;
                /* Time left: not lost (a lock being released is found
                 * lost without an event). */
                sure += rlk_session_lock_remaining_ms(o->l, now) > 0;
                same += rlk_session_lock_fence(l) == rlk_session_lock_fence(o->l);
            }
            CHECK(!sure || same, "another hold of %s has fence %llu, none of the %d held ones'",
                  h->token, (unsigned long long)rlk_session_lock_fence(l), others);
        }
        h->state = H_HELD;
        break;
    case RLK_SEV_NOT_ACQUIRED:
        CHECK(h->state == H_ACQUIRING, "NOT_ACQUIRED in state %d", (int)h->state);
        CHECK(status != RLK_OK, "NOT_ACQUIRED with status 0");
        h->state = H_FREE;
        break;
    case RLK_SEV_LOST:
        CHECK(h->state == H_HELD, "LOST in state %d", (int)h->state);
        CHECK(rlk_session_lock_remaining_ms(l, now) == 0,
              "a lost lock still has %lld ms", (long long)rlk_session_lock_remaining_ms(l, now));
        h->state = H_LOST;
        h->lost = 1;
        if (H.release_on_lost) {
            h->rel_t0 = now;
            h->rel_closes = 0;
            h->late0 = H.late;
            h->state = H_RELEASING;
            int r = rlk_session_release(l, now);
            release_status(r, "release from the LOST callback");
        }
        break;
    case RLK_SEV_RELEASED:
        CHECK(h->state == H_RELEASING, "RELEASED in state %d", (int)h->state);
        CHECK(!h->ext_on, "RELEASED before the extend under way reported");
        h->state = H_FREE;
        break;
    case RLK_SEV_EXTENDED:
        CHECK(h->ext_on, "EXTENDED with no extend under way");
        CHECK(h->state == H_HELD || h->state == H_LOST || h->state == H_RELEASING,
              "EXTENDED in state %d", (int)h->state);
        CHECK(status == RLK_OK || status == RLK_LOCK_NOT_HELD || status == RLK_LOCK_NOT_OWNER ||
              status == RLK_LOCK_LOST || status == RLK_ERR_TIMEOUT || status == RLK_ERR_SERVER ||
              status == RLK_ERR_PROTO || status == RLK_ERR_CLOSED, "EXTENDED with status %d",
              status);
        if (status == RLK_OK)
            CHECK(rlk_session_lock_remaining_ms(l, now) > 0,
                  "EXTENDED lock %s whose validity is over", h->token);
        if (status == RLK_OK) check_validity(h, "EXTENDED");
        h->ext_on = 0;
        break;
    default:
        violated("unknown event %d", (int)ev);
    }
}

/* ------------------------------------------------------------------ */
/* Reading what the session sends                                        */

static int arg_is(const rlk_resp_value *a, const char *s)
{
    size_t n = strlen(s);
    if (a->len != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = a->str[i];
        if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
        if (c != s[i]) return 0;
    }
    return 1;
}

static int64_t arg_int(const rlk_resp_value *a)
{
    int64_t v = 0;
    for (size_t i = 0; a && i < a->len && i < 18; i++) {
        if (a->str[i] < '0' || a->str[i] > '9') return -1;
        v = v * 10 + (a->str[i] - '0');
    }
    return a && a->len ? v : -1;
}

static void copy_arg(char *dst, size_t cap, const rlk_resp_value *a)
{
    size_t n = a->len < cap - 1 ? a->len : cap - 1;
    memcpy(dst, a->str, n);
    dst[n] = '\0';
}

/* Which script an EVALSHA, EVAL or FCALL runs, from the shape of its
 * keys and arguments (see src/lua/). */
static enum cmd script_kind(const rlk_resp_value *argv[], size_t argc, pending *p)
{
    if (argc < 3) return C_SCRIPT;
    int64_t nk = arg_int(argv[2]);
    if (nk < 0 || (size_t)nk > argc - 3) return C_SCRIPT;
    const rlk_resp_value **args = argv + 3 + nk;
    size_t na = argc - 3 - (size_t)nk;
    if (nk == 3 && na == 7) {
        p->reentrant = arg_is(args[2], "R");
        copy_arg(p->tok, sizeof p->tok, args[0]);
        return C_ACQUIRE;
    }
    if (nk == 3 && na == 0) return C_STATUS;
    if ((nk == 3 && na >= 1 && na <= 2) || (nk == 4 && na >= 3 && na <= 4)) return C_RELEASE;
    if (nk == 1 && na == 4) {
        p->ttl = arg_int(args[1]);
        copy_arg(p->tok, sizeof p->tok, args[0]);
        return C_EXTEND;
    }
    if (na >= 1 && (int64_t)args[0]->len == nk) {
        p->n = (int)nk;
        return C_RENEW;
    }
    return C_SCRIPT;
}

/* One command the session sent, at time now. */
static void sent_command(const rlk_resp_value *v)
{
    const rlk_resp_value *argv[64];
    size_t argc = 0;
    CHECK(v->type == RLK_RESP_ARRAY && v->len > 0,
          "the session sent a '%c' where a command belongs", (char)v->type);
    for (const rlk_resp_value *a = v->child; a; a = a->next) {
        CHECK(a->type == RLK_RESP_BULK, "a command argument of type '%c'", (char)a->type);
        if (argc < 64) argv[argc++] = a;
    }
    /* the time each live handle's token last left */
    for (int i = 0; i < MAX_HANDLES; i++) {
        hnd *h = &H.h[i];
        if (h->state == H_FREE) continue;
        const char *tok = rlk_session_lock_token(h->l);
        size_t tl = tok ? strlen(tok) : 0;
        if (!tl) continue;
        for (size_t k = 1; k < argc; k++) {
            if (argv[k]->len == tl && memcmp(argv[k]->str, tok, tl) == 0) {
                h->last_sent = now;
                h->sent = 1;
                h->seen_at = -1;
                break;
            }
        }
    }
    pending p;
    memset(&p, 0, sizeof p);
    p.cmd = C_OTHER;
    if (arg_is(argv[0], "HELLO")) {
        p.cmd = C_HELLO;
        p.hello3 = argc > 1 && arg_is(argv[1], "3");
    } else if (arg_is(argv[0], "AUTH")) p.cmd = C_AUTH;
    else if (arg_is(argv[0], "SELECT")) p.cmd = C_SELECT;
    else if (arg_is(argv[0], "CLIENT")) p.cmd = C_CLIENT;
    else if (arg_is(argv[0], "PING")) p.cmd = C_PING;
    else if (arg_is(argv[0], "INFO")) p.cmd = C_INFO;
    else if (arg_is(argv[0], "FUNCTION")) p.cmd = C_FUNCTION;
    else if (arg_is(argv[0], "SET")) {
        p.cmd = C_SET;
        if (argc > 2) copy_arg(p.tok, sizeof p.tok, argv[2]);
        memcpy(H.last_set_tok, p.tok, sizeof p.tok);
    } else if (arg_is(argv[0], "TIME") || arg_is(argv[0], "HGET")) {
        /* The first try's other parts: SET NX PX, HGET of the window,
         * TIME (the lock is reported at TIME's reply). */
        p.cmd = arg_is(argv[0], "TIME") ? C_TIME : C_HGET;
        memcpy(p.tok, H.last_set_tok, sizeof p.tok);
    }
    else if (arg_is(argv[0], "SUBSCRIBE") || arg_is(argv[0], "UNSUBSCRIBE")) {
        p.cmd = arg_is(argv[0], "SUBSCRIBE") ? C_SUBSCRIBE : C_UNSUBSCRIBE;
        p.n = (int)argc - 1;
        for (size_t k = 1; k < argc && k <= 2; k++) copy_arg(p.chan[k - 1], sizeof p.chan[0], argv[k]);
        for (size_t k = 1; k < argc; k++)
            if (p.cmd == C_SUBSCRIBE && argv[k]->len > 17 &&
                memcmp(argv[k]->str, "resplock:handoff:", 17) == 0)
                copy_arg(H.handoff_chan, sizeof H.handoff_chan, argv[k]);
    } else if (arg_is(argv[0], "EVALSHA") || arg_is(argv[0], "EVAL") ||
               arg_is(argv[0], "FCALL")) {
        p.cmd = script_kind(argv, argc, &p);
        p.fcall = arg_is(argv[0], "FCALL");
        if (p.cmd == C_ACQUIRE && argc == 13 && !H.handoff_chan[0])
            copy_arg(H.handoff_chan, sizeof H.handoff_chan, argv[11]);
    }
    if (H.pcount < MAX_PENDING) {
        H.pend[(H.phead + H.pcount) % MAX_PENDING] = p;
        H.pcount++;
    } else {
        H.desync = 1; /* its reply will not be the harness's */
    }
}

static int contains(const char *p, size_t n, const char *s)
{
    size_t k = strlen(s);
    for (size_t i = 0; k <= n && i <= n - k; i++)
        if (memcmp(p + i, s, k) == 0) return 1;
    return 0;
}

/* Takes what the session has to send (unless the socket is stalled) and
 * reads the commands in it. */
static void pump_output(void)
{
    if (!H.s) return;
    const char *buf = NULL;
    size_t n = rlk_session_output(H.s, &buf);
    CHECK(n <= OUT_BOUND, "%zu bytes of output waiting", n);
    if (n && H.connected && H.stall > 0) {
        /* Not taken yet, but the session may count from now: the input
         * can answer requests the harness did not take (raw bytes). */
        for (int i = 0; i < MAX_HANDLES; i++) {
            hnd *h = &H.h[i];
            const char *tok = h->state != H_FREE ? rlk_session_lock_token(h->l) : NULL;
            if (!tok || !*tok || h->seen_at >= 0 || !contains(buf, n, tok)) continue;
            h->seen_at = now;
            h->last_sent = now;
            h->sent = 1;
        }
    }
    if (!n || !H.connected || H.stall > 0) return;
    CHECK(buf != NULL, "output of %zu bytes at NULL", n);
    if (H.olen + n > H.ocap) {
        size_t cap = H.ocap ? H.ocap : 4096;
        while (cap < H.olen + n) cap *= 2;
        char *nb = realloc(H.obuf, cap);
        if (!nb) abort();
        H.obuf = nb;
        H.ocap = cap;
    }
    memcpy(H.obuf + H.olen, buf, n);
    H.olen += n;
    trace_bytes("sent", buf, n);
    H.in_call++;
    rlk_session_consume(H.s, n);
    H.in_call--;
    size_t off = 0;
    for (;;) {
        size_t used = 0;
        rlk_resp_value *v = NULL;
        harness_alloc = 1;
        int r = rlk_resp_read(&H.rd, H.obuf + off, H.olen - off, &used, &v);
        harness_alloc = 0;
        CHECK(r >= 0, "the session's output is not RESP (%s)", rlk_strerror(r));
        if (r == 0) break;
        off += used;
        sent_command(v);
        rlk_resp_arena_reset(&H.arena);
    }
    memmove(H.obuf, H.obuf + off, H.olen - off);
    H.olen -= off;
}

static void forget_connection(void)
{
    H.connected = 0;
    H.resp3 = 0;
    H.phead = H.pcount = 0;
    H.olen = 0;
    H.stall = 0;
    H.handoff_chan[0] = '\0';
    H.desync = 0;
    harness_alloc = 1;
    rlk_resp_reader_reset(&H.rd);
    rlk_resp_arena_reset(&H.arena);
    harness_alloc = 0;
}

/* ------------------------------------------------------------------ */
/* Calling the session                                                   */

/* Acquires outlive a close (tried again after the next handshake, they
 * end by their own deadline), and a release outlives its first (sent
 * again once); every other call under way ends.  With the host routed
 * as over a cluster, what waits for its slot's connection is held until
 * one is ready, as a cluster node's connection opening: it outlives the
 * close and ends by its own deadline (property (b)). */
static void do_closed(void)
{
    int was[MAX_HANDLES];
    for (int i = 0; i < MAX_HANDLES; i++)
        was[i] = H.h[i].state == H_RELEASING && ++H.h[i].rel_closes > 1;
    int calls = 0;
    for (int i = 0; i < MAX_CALLS; i++) calls += H.calls[i].on;
    H.in_call++;
    trace("closed");
    rlk_session_closed(H.s, now);
    H.in_call--;
    forget_connection();
    H.closed_at = now;
    CHECK(!rlk_session_ready(H.s), "ready after rlk_session_closed");
    for (int i = 0; i < MAX_HANDLES; i++)
        CHECK(H.routed || !was[i] || (H.h[i].state != H_ACQUIRING && H.h[i].state != H_RELEASING),
              "a call under way (handle %d, state %d) survived rlk_session_closed", i,
              (int)H.h[i].state);
    for (int i = 0; i < MAX_HANDLES; i++)
        CHECK(H.routed || !H.h[i].ext_on, "an extend under way (handle %d) survived rlk_session_closed", i);
    for (int i = 0; i < MAX_CALLS; i++)
        CHECK(H.routed || !H.calls[i].on, "a call without a handle (%d of %d) survived rlk_session_closed", i,
              calls);
}

/* A status the header says ends the session: close, as a caller would. */
static void after_status(int r, const char *what)
{
    if (r == RLK_OK) return;
    CHECK(r == RLK_ERR_PROTO || r == RLK_ERR_LIMIT || r == RLK_ERR_NOMEM ||
          r == RLK_ERR_TIMEOUT || r == RLK_ERR_AUTH || r == RLK_ERR_SERVER,
          "%s returned %d (%s)", what, r, rlk_strerror(r));
    do_closed();
}

static void do_connect(void)
{
    if (H.connected) {
        H.in_call++;
        int r = rlk_session_connected(H.s, now);
        H.in_call--;
        CHECK(r == RLK_ERR_INVALID, "rlk_session_connected twice returned %d", r);
        return;
    }
    forget_connection();
    H.connected = 1;
    H.in_call++;
    int r = rlk_session_connected(H.s, now);
    H.in_call--;
    CHECK(r == RLK_OK || r == RLK_ERR_NOMEM, "rlk_session_connected returned %d", r);
    if (r != RLK_OK) do_closed();
}

/* The TTL an extend's success may count is the server's number, which
 * the harness cannot always tie to its request (raw bytes, replies out
 * of step): any integer fed while an extend is under way may be it, and
 * raises the bound of (a) for every lock being extended.  The last bytes
 * of the previous feed are scanned again: a number may be split. */
static void note_integers(const char *buf, size_t len)
{
    char *tail = H.feed_tail;
    size_t tn = H.feed_tn;
    int any = 0;
    for (int i = 0; i < MAX_HANDLES; i++) any |= H.h[i].state != H_FREE && H.h[i].ext_on;
    if (!any) {
        H.feed_tn = 0;
        return;
    }
    char *all = malloc(tn + len + 1);
    if (!all) abort();
    memcpy(all, tail, tn);
    memcpy(all + tn, buf, len);
    size_t n = tn + len;
    for (size_t i = 0; i < n; i++) {
        if (all[i] != ':') continue;
        int64_t v = 0;
        for (size_t k = i + 1; k < n && k < i + 19 && all[k] >= '0' && all[k] <= '9'; k++)
            v = v * 10 + (all[k] - '0');
        for (int j = 0; j < MAX_HANDLES; j++) {
            hnd *h = &H.h[j];
            if (h->state != H_FREE && h->ext_on && v > h->max_ttl) h->max_ttl = v;
        }
    }
    H.feed_tn = n < sizeof H.feed_tail ? n : sizeof H.feed_tail;
    memcpy(tail, all + n - H.feed_tn, H.feed_tn);
    free(all);
}

static void do_feed(const char *buf, size_t len)
{
    note_integers(buf, len);
    if (!H.connected) {
        H.in_call++;
        int r = rlk_session_feed(H.s, buf, len, now);
        H.in_call--;
        CHECK(r == RLK_ERR_INVALID, "feed while not connected returned %d", r);
        return;
    }
    trace_bytes("feed", buf, len);
    H.in_call++;
    int r = rlk_session_feed(H.s, buf, len, now);
    H.in_call--;
    if (r) trace("feed: %d %s", r, rlk_session_errmsg(H.s));
    after_status(r, "rlk_session_feed");
}

/* The deadlines of (b), checked after a tick at now.  A call ends by
 * its start, its wait and a few command timeouts (the last try that
 * leaves the line, a NOSCRIPT's EVAL, a handoff's confirmation, a
 * release after a cancelled acquire), plus however late the harness
 * ticked meanwhile: the session cannot act before it is called. */
static void check_deadlines(void)
{
    int64_t d = rlk_session_deadline(H.s);
    CHECK(d == -1 || d > now, "after tick(%lld) the deadline is %lld", (long long)now,
          (long long)d);
    for (int i = 0; i < MAX_HANDLES; i++) {
        hnd *h = &H.h[i];
        if (h->state == H_ACQUIRING && h->wait != RLK_WAIT_FOREVER) {
            int64_t end = h->t0 + h->wait + 4 * H.ct + (H.late - h->late0) + SLACK_MS;
            CHECK(now < end, "an acquire (wait %lld ms, from %lld) still under way at %lld",
                  (long long)h->wait, (long long)h->t0, (long long)now);
        }
        if (h->state == H_RELEASING) {
            int64_t end = h->rel_t0 + 4 * H.ct + (H.late - h->late0) + SLACK_MS;
            CHECK(now < end, "a release (from %lld) still under way at %lld",
                  (long long)h->rel_t0, (long long)now);
        }
        if (h->ext_on) {
            int64_t end = h->ext_t0 + 4 * H.ct + (H.late - h->ext_late0) + SLACK_MS;
            CHECK(now < end, "an extend (from %lld) still under way at %lld",
                  (long long)h->ext_t0, (long long)now);
        }
        if (h->state == H_HELD && h->watchdog)
            CHECK(rlk_session_lock_remaining_ms(h->l, now) > 0,
                  "a watchdog lock %s whose validity is over was not reported lost",
                  h->token);
    }
}

static void check_call_deadlines(void)
{
    for (int i = 0; i < MAX_CALLS; i++) {
        const hcall *c = &H.calls[i];
        if (!c->on) continue;
        int64_t end = c->t0 + 4 * H.ct + (H.late - c->late0) + SLACK_MS;
        CHECK(now < end, "a call without a handle (from %lld) still under way at %lld",
              (long long)c->t0, (long long)now);
    }
}

static void do_tick(void)
{
    int64_t d = rlk_session_deadline(H.s);
    if (d != -1 && d < now) H.late += now - d;
    H.in_call++;
    int r = rlk_session_tick(H.s, now);
    H.in_call--;
    trace("tick: %d %s", r, r ? rlk_session_errmsg(H.s) : "");
    if (r == RLK_OK) {
        check_deadlines();
        check_call_deadlines();
    } else {
        after_status(r, "rlk_session_tick");
    }
}

static void advance(int64_t ms)
{
    now += ms;
    int64_t d = rlk_session_deadline(H.s);
    if (d != -1 && d <= now) do_tick();
}

static const int64_t ttls[] = {100, 250, 1000, 2000};
static const int64_t waits[] = {0, 0, 100, 400, 1500, RLK_WAIT_FOREVER};

static const char *const holders[] = {NULL, "h1", "h2", "h1"};

/* reentrant: 1 + which holder (holders[]), 0 a simple lock. */
static void do_acquire(unsigned a, unsigned b, int reentrant)
{
    int slot = -1;
    for (int i = 0; i < MAX_HANDLES && slot < 0; i++)
        if (H.h[i].state == H_FREE) slot = i;
    if (slot < 0) return;
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = ttls[a & 3];
    o.wait_ms = waits[(a >> 2) % 6];
    o.watchdog = (a >> 5) & 1;
    if (b & 0x80) o.lost_margin_ms = b & 0x7f;
    if (reentrant) {
        o.kind = RLK_LOCK_REENTRANT;
        o.holder = holders[(reentrant - 1) & 3];
    }
    hnd *h = &H.h[slot];
    memset(h, 0, sizeof *h);
    h->t0 = now;
    h->seen_at = -1;
    h->late0 = H.late;
    h->ttl = o.ttl_ms;
    h->wait = o.wait_ms;
    h->watchdog = o.watchdog;
    h->reentrant = reentrant != 0;
    h->name = (int)((a >> 6) % NNAMES);
    H.new_lock = NULL;
    H.new_slot = slot;
    H.in_call++;
    H.in_acquire = 1;
    rlk_session_lock *l = rlk_session_acquire(H.s, names[h->name], &o, h, now);
    H.in_acquire = 0;
    H.in_call--;
    trace("acquire %s ttl %lld wait %lld watchdog %d: %p", names[h->name], (long long)o.ttl_ms,
          (long long)o.wait_ms, o.watchdog, (void *)l);
    if (H.new_lock) {
        /* it reported before returning: a failure, freed already */
        CHECK(l == NULL || l == H.new_lock, "acquire returned another handle than it reported");
        if (h->state == H_FREE) return;
    }
    if (!l) {
        CHECK(h->state == H_FREE || !H.new_lock, "NULL from acquire after an event");
        h->state = H_FREE;
        return;
    }
    h->l = l;
    if (h->state == H_FREE) h->state = H_ACQUIRING;
    CHECK(rlk_session_lock_user(l) == h, "the handle's user is not the one given");
    CHECK(strcmp(rlk_session_lock_name(l), names[h->name]) == 0, "the handle's name changed");
    snprintf(h->token, sizeof h->token, "%s", rlk_session_lock_token(l));
}

static hnd *pick(unsigned b, int want_held)
{
    int n = 0;
    hnd *list[MAX_HANDLES];
    for (int i = 0; i < MAX_HANDLES; i++) {
        hnd *h = &H.h[i];
        if (h->state == H_FREE) continue;
        if (want_held == 1 && h->state != H_HELD) continue;
        if (want_held == 2 && h->state != H_ACQUIRING) continue;
        list[n++] = h;
    }
    return n ? list[b % (unsigned)n] : NULL;
}

static void do_release(unsigned b)
{
    hnd *h = pick(b, 0);
    if (!h) return;
    enum hstate was = h->state;
    int64_t t0 = h->rel_t0;
    int64_t late0 = h->late0;
    if (was != H_RELEASING) {
        h->state = H_RELEASING;
        h->rel_t0 = now;
        h->rel_closes = 0;
        h->late0 = H.late;
    }
    H.in_call++;
    int r = rlk_session_release(h->l, now);
    H.in_call--;
    trace("release %p: %d", (void *)h->l, r);
    if (was == H_RELEASING) {
        CHECK(r == RLK_ERR_INVALID, "a second release returned %d", r);
        h->rel_t0 = t0;
        h->late0 = late0;
        return;
    }
    release_status(r, "release");
}

static const int64_t ext_ms[] = {1, 100, 1000, 3000};

/* b: bits 0-1 the duration, bit 2 RLK_EXTEND_SET, bit 3 an unknown how,
 * the rest picks the handle (a held one, or any). */
static void do_extend(unsigned b)
{
    hnd *h = pick(b >> 5, (b & 16) ? 0 : 1);
    if (!h) return;
    int64_t ms = ext_ms[b & 3];
    int how = (b & 8) ? 7 : (b & 4) ? RLK_EXTEND_SET : RLK_EXTEND_ADD;
    H.in_call++;
    int r = rlk_session_extend(h->l, ms, how, now);
    H.in_call--;
    trace("extend %p %lld %d: %d", (void *)h->l, (long long)ms, how, r);
    if (r == RLK_OK) {
        CHECK(h->state == H_HELD && !h->ext_on && how != 7, "an extend queued in state %d",
              (int)h->state);
        h->ext_on = 1;
        h->ext_t0 = now;
        h->ext_late0 = H.late;
        /* A set TTL is what renewals set from now on. */
        if (how == RLK_EXTEND_SET && ms > h->max_ttl) h->max_ttl = ms;
        return;
    }
    CHECK(r == RLK_ERR_INVALID || r == RLK_LOCK_LOST || r == RLK_ERR_CLOSED || r == RLK_ERR_NOMEM,
          "extend returned %d", r);
    CHECK(r != RLK_ERR_INVALID || h->state != H_HELD || h->ext_on || how == 7,
          "extend of a held lock refused as invalid");
    CHECK(r != RLK_LOCK_LOST || rlk_session_lock_remaining_ms(h->l, now) == 0,
          "extend refused as lost with time left");
    if (r == RLK_ERR_NOMEM) H.must_close = 1;
}

static void on_call(void *ctx, rlk_session *s, const rlk__session_result *res)
{
    hcall *c = ctx;
    trace("call %d result %d", c->which, res->status);
    CHECK(H.in_call, "a call's result outside any call of the session");
    CHECK(s == H.s, "a call's result for another session");
    CHECK(c->on, "a call's result twice");
    int st = res->status;
    CHECK(st == RLK_OK || st == RLK_ERR_SERVER || st == RLK_ERR_PROTO || st == RLK_ERR_CLOSED ||
          st == RLK_ERR_NOMEM ||
          (c->which != 0 && (st == RLK_LOCK_NOT_HELD || st == RLK_LOCK_NOT_OWNER)),
          "call %d with status %d", c->which, st);
    if (st == RLK_OK && c->which == 2) CHECK(res->ttl_ms_after >= 0, "extended to %lld ms",
                                              (long long)res->ttl_ms_after);
    c->on = 0;
}

/* b: bits 0-1 which call (status, release, extend by token), bits 2-3
 * the name, bit 4 a handle's token (else one nobody holds). */
static void do_call(unsigned b)
{
    hcall *c = NULL;
    for (int i = 0; i < MAX_CALLS && !c; i++)
        if (!H.calls[i].on) c = &H.calls[i];
    if (!c) return;
    int which = (int)(b & 3) % 3;
    const char *name = names[((b >> 2) & 3) % NNAMES];
    hnd *h = (b & 16) ? pick(b >> 5, 0) : NULL;
    const char *tok = h ? h->token : "nobody";
    c->which = which;
    c->t0 = now;
    c->late0 = H.late;
    c->on = 1;
    H.in_call++;
    int r = which == 0   ? rlk__session_status(H.s, name, on_call, c, now)
            : which == 1 ? rlk__session_release_token(H.s, name, tok, on_call, c, now)
                         : rlk__session_extend_token(H.s, name, tok, ext_ms[(b >> 6) & 3],
                                                     RLK_EXTEND_SET, on_call, c, now);
    H.in_call--;
    trace("call %d %s: %d", which, name, r);
    if (r != RLK_OK) {
        CHECK(c->on, "a call that failed (%d) reported a result", r);
        c->on = 0;
        CHECK(r == RLK_ERR_CLOSED || r == RLK_ERR_NOMEM, "a call returned %d", r);
        CHECK(r != RLK_ERR_CLOSED || !rlk_session_ready(H.s), "a call refused while ready");
        if (r == RLK_ERR_NOMEM) H.must_close = 1;
    }
}

/* ------------------------------------------------------------------ */
/* Playing the server                                                    */

typedef struct wbuf {
    char d[2048];
    size_t n;
} wbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(wbuf *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(w->d + w->n, sizeof w->d - w->n, fmt, ap);
    va_end(ap);
    if (k > 0) w->n += (size_t)k < sizeof w->d - w->n ? (size_t)k : sizeof w->d - w->n - 1;
}

static void put_bulk(wbuf *w, const char *s)
{
    put(w, "$%zu\r\n%s\r\n", strlen(s), s);
}

static void put_null(wbuf *w)
{
    put(w, "%s", H.resp3 ? "_\r\n" : "$-1\r\n");
}

/* A push (RESP3) or, under RESP2, the array a subscribed connection gets. */
static void put_push_head(wbuf *w, int n)
{
    put(w, "%c%d\r\n", H.resp3 ? '>' : '*', n);
}

/* HELLO's reply: Redis 6.2 (scripts by EVALSHA), or with fn 7.0 (by
 * FCALL, the library loaded when missing). */
static void put_hello(wbuf *w, int proto, int fn)
{
    if (proto == 3) put(w, "%%7\r\n");
    else put(w, "*14\r\n");
    put_bulk(w, "server");
    put_bulk(w, "redis");
    put_bulk(w, "version");
    put_bulk(w, fn ? "7.0.15" : "6.2.14");
    put_bulk(w, "proto");
    put(w, ":%d\r\n", proto);
    put_bulk(w, "id");
    put(w, ":7\r\n");
    put_bulk(w, "mode");
    put_bulk(w, "standalone");
    put_bulk(w, "role");
    put_bulk(w, "master");
    put_bulk(w, "modules");
    put(w, "*0\r\n");
}

static const char *const errors[] = {
    "-ERR unknown command\r\n",
    "-NOSCRIPT No matching script. Please use EVAL.\r\n",
    "-LOADING Redis is loading the dataset in memory\r\n",
    "-BUSY Redis is busy running a script.\r\n",
    "-OOM command not allowed when used memory > 'maxmemory'.\r\n",
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    "-NOPERM this user has no permissions\r\n",
    "-READONLY You can't write against a read only replica.\r\n",
};

/* The reply to p, variant c (0-3: what a server of the lock says; 4-7: an
 * error or a reply of the wrong shape), values from the input. */
static void server_reply(wbuf *w, const pending *p, unsigned c)
{
    unsigned v = c & 3;
    if ((c & 7) >= 4 && p->cmd != C_SUBSCRIBE && p->cmd != C_UNSUBSCRIBE) {
        switch (c & 7) {
        case 4:
            if (H.routed && (c & 0x40)) {
                static const char *const redirects[] = {
                    "-MOVED 6103 127.0.0.1:6379\r\n",
                    "-ASK 6103 127.0.0.1:6379\r\n",
                    "-TRYAGAIN Multiple keys request during rehashing of slot\r\n",
                    "-CLUSTERDOWN The cluster is down\r\n",
                };
                put(w, "%s", redirects[(c >> 3) & 3]);
                return;
            }
            put(w, "%s", errors[(c >> 3) & 7]);
            return;
        case 5:
            /* the script (or its library) missing */
            put(w, "%s", p->fcall ? "-ERR Function not found\r\n"
                         : p->cmd >= C_ACQUIRE && p->cmd != C_FUNCTION ? errors[1] : errors[0]);
            return;
        case 6: put_null(w); return;
        default: put(w, ":%d\r\n", (int)(c >> 3) - 8); return;
        }
    }
    switch (p->cmd) {
    case C_HELLO:
        if (v == 0) {
            put_hello(w, p->hello3 ? 3 : 2, (c >> 3) & 1);
            if (p->hello3) H.resp3 = 1;
        } else if (v == 1) put(w, "-ERR unknown command 'HELLO'\r\n");
        else if (v == 2) put(w, "-NOPROTO unsupported protocol version\r\n");
        else put(w, "-WRONGPASS invalid username-password pair\r\n");
        return;
    case C_SUBSCRIBE: case C_UNSUBSCRIBE:
        if ((c & 7) == 7) {
            /* Refused: by an ACL without the channel (Redis 7's default
             * for new users) or without the command; or answered with
             * what answers no (UN)SUBSCRIBE of this one's channel. */
            static const char *const refusals[] = {
                "-ERR subscribe refused\r\n",
                "-NOPERM this user has no permissions to access one of the channels used as "
                "arguments\r\n",
                "-NOPERM this user has no permissions to run the 'subscribe' command\r\n",
                "+OK\r\n",
                ">3\r\n$9\r\nsubscribe\r\n$5\r\nother\r\n:1\r\n",
            };
            put(w, "%s", refusals[(c >> 3) % 5]);
            return;
        }
        for (int k = 0; k < p->n; k++) {
            put_push_head(w, 3);
            put_bulk(w, p->cmd == C_SUBSCRIBE ? "subscribe" : "unsubscribe");
            put_bulk(w, k < 2 ? p->chan[k] : "x");
            put(w, ":%d\r\n", p->cmd == C_SUBSCRIBE ? k + 1 : p->n - k - 1);
        }
        return;
    case C_SET:
        if (v < 2) put(w, "+OK\r\n");
        else if (v == 2) put_null(w);
        else put(w, "$-1\r\n");
        return;
    case C_TIME: {
        int64_t t = now + (int64_t)(c >> 2) - 32;  /* the server's clock, a little off */
        put(w, "*2\r\n");
        put_bulk(w, v == 3 ? "0" : "1700000000");
        char us[24];
        snprintf(us, sizeof us, "%lld", (long long)((t % 1000000 + 1000000) % 1000000));
        put_bulk(w, us);
        return;
    }
    case C_HGET:             /* the window: none, none, open, over (TIME's second) */
        if (v < 2) put_null(w);
        else put_bulk(w, v == 2 ? "y 1700000001000" : "y 1699999999000");
        return;
    case C_FUNCTION:         /* LOAD: loaded, there already, refused twice */
        if (v == 0) put_bulk(w, "resplock_0123456789ab");
        else if (v == 1) put(w, "-ERR Library 'resplock_0123456789ab' already exists\r\n");
        else if (v == 2)
            put(w, "-NOPERM this user has no permissions to run the 'function|load' command\r\n");
        else put(w, "-ERR unknown command 'FUNCTION'\r\n");
        return;
    case C_INFO:
        put_bulk(w, "# Server\r\nredis_version:7.0.15\r\n");
        return;
    case C_PING:
        put(w, "+PONG\r\n");
        return;
    case C_ACQUIRE: {
        unsigned x = u8();
        H.fence += 1 + x;
        if (v < 2)
            put(w, "*4\r\n:1\r\n:%llu\r\n:%u\r\n:%u\r\n", (unsigned long long)H.fence,
                p->reentrant ? 1 + (x & 1) : 1, v);
        else
            put(w, "*2\r\n:0\r\n:%u\r\n", v == 2 ? x * 10 : x % 4);
        return;
    }
    case C_RELEASE:
        put(w, ":%d\r\n", v == 0 ? 1 : v == 1 ? 0 : v == 2 ? -1 : 2);
        return;
    case C_EXTEND:
        put(w, ":%lld\r\n", v == 0 ? (long long)p->ttl : v == 1 ? -1LL : v == 2 ? -2LL : 0LL);
        return;
    case C_STATUS:
        put(w, "*5\r\n:%d\r\n+%s\r\n:%d\r\n:%u\r\n:%u\r\n", v != 0, v == 2 ? "hash" : "string",
            v ? 900 : -2, v == 2 ? 2u : 0u, v);
        return;
    case C_RENEW: {
        unsigned bits = u16();
        put(w, "*%d\r\n", p->n);
        for (int k = 0; k < p->n; k++) {
            unsigned r = (bits >> (2 * (k % 8))) & 3;
            put(w, ":%d\r\n", v == 3 ? 1 : r == 2 ? -1 : r == 3 ? -2 : 1);
        }
        return;
    }
    case C_SCRIPT:
        put(w, ":%u\r\n", v);
        return;
    default:        /* AUTH, SELECT, CLIENT, others */
        if (v < 3) put(w, "+OK\r\n");
        else put(w, "-ERR refused\r\n");
        return;
    }
}

/* Feeds w whole, or in two pieces (the split from the input). */
static void feed_split(const wbuf *w, unsigned split)
{
    size_t cut = split ? (size_t)split % (w->n + 1) : w->n;
    do_feed(w->d, cut);
    if (cut < w->n && H.connected) do_feed(w->d + cut, w->n - cut);
}

static void op_reply(void)
{
    unsigned c = u8(), split = u8() & 0x1f;
    wbuf w = {.n = 0};
    if (H.pcount == 0) {
        put(&w, "+OK\r\n");      /* nobody asked */
        H.desync = 1;
    } else {
        pending p = H.pend[H.phead];
        H.phead = (H.phead + 1) % MAX_PENDING;
        H.pcount--;
        server_reply(&w, &p, c);
        H.feed_kind = (int)p.cmd;
        memcpy(H.feed_tok, p.tok, sizeof H.feed_tok);
    }
    H.feeding = 1;
    feed_split(&w, split);
    H.feeding = 0;
}

/* (e): a message fed, naming tok (a handoff to it) or no token. */
static void feed_message(const wbuf *w, unsigned split, const char *tok)
{
    /* Under RESP2 (or before HELLO's reply) a message is a plain array:
     * to the session it reads as the reply of its oldest request, bytes
     * no server sends a connection that subscribed to nothing.  The
     * harness's requests and replies part ways then. */
    if (!H.resp3) H.desync = 1;
    H.feed_kind = C_MESSAGE;
    snprintf(H.feed_tok, sizeof H.feed_tok, "%s", tok);
    H.feeding = 1;
    feed_split(w, split);
    H.feeding = 0;
}

/* A handoff on the handoff channel naming a waiter's token. */
static void op_handoff(void)
{
    unsigned b = u8(), f = u8();
    hnd *h = pick(b >> 2, 2);
    const char *tok = h ? rlk_session_lock_token(h->l) : "nobody";
    wbuf w = {.n = 0};
    char pl[160];
    H.fence += 1 + f;
    if (b & 1) snprintf(pl, sizeof pl, "%llu %s", (unsigned long long)H.fence, tok);
    else snprintf(pl, sizeof pl, "%u%s", f, (b & 2) ? " other-token" : "");
    put_push_head(&w, 3);
    put_bulk(&w, "message");
    put_bulk(&w, H.handoff_chan[0] ? H.handoff_chan : "resplock:handoff:0");
    put_bulk(&w, pl);
    /* Alone: no reply's start waits in the session for these bytes. */
    H.in_handoff = rlk__session_buffered(H.s) == 0;
    feed_message(&w, (b & 2) ? f & 0x1f : 0, (b & 1) ? tok : "");
    H.in_handoff = 0;
}

/* The "0" a release publishes on redisson_lock__channel:{NAME}. */
static void op_release_msg(void)
{
    unsigned b = u8();
    char ch[96];
    snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", names[b % NNAMES]);
    wbuf w = {.n = 0};
    put_push_head(&w, 3);
    put_bulk(&w, "message");
    put_bulk(&w, ch);
    put_bulk(&w, (b & 8) ? "1" : "0");
    feed_message(&w, 0, "");
}

static void op_raw(void)
{
    H.desync = H.connected;
    size_t n = u8() % 64;
    char buf[64];
    for (size_t i = 0; i < n; i++) buf[i] = (char)u8();
    do_feed(buf, n);
}

/* A large value (a bulk string or an array of many), past small input
 * limits. */
static void op_big(void)
{
    H.desync = 1;
    unsigned b = u8();
    size_t n = (size_t)(b & 0x7f) * 512 + 1;
    char *buf = malloc(n + 32);
    if (!buf) abort();
    int k = (b & 0x80) ? snprintf(buf, 32, "*%zu\r\n", n / 4) : snprintf(buf, 32, "$%zu\r\n", n);
    size_t len = (size_t)k;
    if (b & 0x80) {
        for (size_t i = 0; i < n / 4; i++) {
            memcpy(buf + len, ":1\r\n", 4);
            len += 4;
            if (len + 4 > n + 32) break;
        }
    } else {
        memset(buf + len, 'x', n);
        len += n;
        memcpy(buf + len, "\r\n", 2);
        len += 2;
    }
    do_feed(buf, len < n + 32 ? len : n + 32);
    free(buf);
}

enum op {
    OP_ADVANCE, OP_TICK_DUE, OP_REPLY, OP_REPLY2, OP_ACQUIRE, OP_RELEASE, OP_HANDOFF,
    OP_RELEASE_MSG, OP_RAW, OP_CLOSE, OP_CONNECT, OP_STALL, OP_FAIL_ALLOC, OP_BIG,
    OP_TICK, OP_COUNT
};

/* The steps added later, at opcode bytes 0xf0 on, so that the inputs
 * written before read as they did:
 *   EXTEND B     rlk_session_extend (see do_extend)
 *   ACQ_R A B C  a reentrant acquire: A and B as ACQ's, C's bits 0-1 the
 *                holder (NULL, "h1", "h2", "h1")
 *   CALL B       a call without a handle (see do_call) */
enum op2 { OP2_EXTEND = 0xf0, OP2_ACQ_R, OP2_CALL, OP2_END };

static void step(void)
{
    unsigned byte = u8(), op = byte % OP_COUNT;
    if (byte >= OP2_EXTEND && byte < OP2_END) {
        if (byte == OP2_EXTEND) {
            do_extend(u8());
        } else if (byte == OP2_ACQ_R) {
            unsigned a = u8(), b = u8();
            do_acquire(a, b, 1 + (int)(u8() & 3));
        } else {
            do_call(u8());
        }
        op = OP_COUNT; /* done */
    }
    switch (op) {
    case OP_COUNT:
        break;
    case OP_ADVANCE: {
        unsigned b = u8();
        advance(b < 128 ? b : b < 192 ? (b - 128) * 20 : (int64_t)(b - 192) * 100);
        break;
    }
    case OP_TICK_DUE: {
        /* an event loop that wakes exactly at the deadline */
        int64_t d = rlk_session_deadline(H.s);
        if (d != -1) {
            if (d > now) now = d;
            do_tick();
        }
        break;
    }
    case OP_REPLY: case OP_REPLY2:
        if (H.connected) op_reply();
        break;
    case OP_ACQUIRE: {
        unsigned a = u8(), b = u8();
        do_acquire(a, b, 0);
        break;
    }
    case OP_RELEASE:
        do_release(u8());
        break;
    case OP_HANDOFF:
        if (H.connected) op_handoff();
        break;
    case OP_RELEASE_MSG:
        if (H.connected) op_release_msg();
        break;
    case OP_RAW:
        op_raw();
        break;
    case OP_CLOSE:
        if (H.connected) do_closed();
        break;
    case OP_CONNECT:
        do_connect();
        break;
    case OP_STALL:
        H.stall = (int)(u8() % 8);
        break;
    case OP_FAIL_ALLOC:
        fail_in = u8() % 16;
        break;
    case OP_BIG:
        if (H.connected) op_big();
        break;
    default:
        do_tick();
        break;
    }
    if (H.must_close) {
        H.must_close = 0;
        if (H.connected) do_closed();
    }
    if (H.stall > 0) H.stall--;
    pump_output();
    CHECK(peak_session <= ((size_t)4 << 20) + 32 * (H.cfg.max_input ? H.cfg.max_input : (1u << 20)),
          "the session holds %zu bytes", peak_session);
    for (int i = 0; i < MAX_HANDLES; i++) {
        hnd *h = &H.h[i];
        if (h->state == H_HELD || h->state == H_LOST) check_validity(h, "held");
        if (h->state == H_LOST)
            CHECK(rlk_session_lock_remaining_ms(h->l, now) == 0, "a lost lock has time left");
    }
}

/* ------------------------------------------------------------------ */

static const int64_t timeouts[] = {50, 100, 200, 500};
static const size_t max_inputs[] = {256, 4096, 65536, 0};
static const int64_t rechecks[] = {0, 50, 200, 1000};
static const int divisors[] = {0, 2, 3, 5};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const rlk_allocator counting = {count_malloc, count_realloc, count_free, NULL};
    static unsigned char arena_buf[16384];
    trace_on = getenv("FUZZ_SESSION_TRACE") != NULL;
    rlk_set_allocator(&counting);

    cur_input = data;
    cur_size = size;
    cur_pos = 0;
    now = 1000000;
    memset(&H, 0, sizeof H);
    H.closed_at = -1;
    fail_in = -1;
    harness_alloc = 0;
    live_session = peak_session = 0;
    size_t harness0 = live_harness;

    unsigned c0 = u8(), c1 = u8();
    static const int protos[] = {0, 3, 2, 0};
    rlk_session_config_init(&H.cfg);
    rlk_client_config_init(&H.timing);
    H.cfg.protocol = protos[c0 & 3];
    if (c0 & 4) H.cfg.password = "secret";
    if (c0 & 8) H.cfg.client_name = "fuzz";
    if (c0 & 16) H.cfg.db = 2;
    H.ct = timeouts[(c0 >> 5) & 3];
    H.cfg.command_timeout_ms = (int)H.ct;
    H.release_on_lost = (c0 >> 7) & 1;
    H.cfg.max_input = max_inputs[c1 & 3];
    H.timing.recheck_ms = rechecks[(c1 >> 2) & 3];
    H.timing.renew_divisor = divisors[(c1 >> 4) & 3];
    H.cfg.timing = &H.timing;
    H.cfg.cb = on_event;
    H.cfg.ctx = &H;

    harness_alloc = 1;
    rlk_resp_arena_init(&H.arena, arena_buf, sizeof arena_buf, 0);
    rlk_resp_reader_init(&H.rd, &H.arena, NULL);
    harness_alloc = 0;

    H.routed = (c1 >> 7) & 1;
    H.s = H.routed ? rlk__session_new_routed(&H.cfg) : rlk_session_new(&H.cfg);
    CHECK(H.s != NULL, "rlk_session_new failed");
    if (c1 & 0x40) {
        do_connect();
        pump_output();
    }
    for (int n = 0; n < MAX_STEPS && !at_end(); n++) step();

    rlk_session_free(H.s);
    H.s = NULL;
    CHECK(live_session == 0, "%zu bytes of the session not freed", live_session);
    harness_alloc = 1;
    rlk_resp_reader_free(&H.rd);
    rlk_resp_arena_free(&H.arena);
    harness_alloc = 0;
    free(H.obuf);
    H.obuf = NULL;
    CHECK(live_harness == harness0, "the harness's reader leaked");
    rlk_set_allocator(NULL);
    return 0;
}

#define FUZZ_NAME "fuzz_session"
#include "fuzz_main.h"
