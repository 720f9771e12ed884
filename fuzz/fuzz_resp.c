/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness for the RESP codec.  One input is one byte stream from a
 * (possibly hostile) server, behind a two-byte header:
 *
 *   byte 0  parser limits and the tree arena's size:
 *             bits 0-1  max_depth     default, 1, 3, 8
 *             bits 2-3  max_bulk      default, 4, 16, 200
 *             bits 4-5  max_elements  default, 1, 3, 20
 *             bits 6-7  arena bytes   1024, 256, 8192, 65536
 *   byte 1  seed of the pseudo-random split points
 *   rest    the stream (at most MAX_STREAM bytes of it are used)
 *
 * Inputs shorter than the header are streams with default settings.
 *
 * The properties checked, each an abort() when violated:
 *   (a) the events are the same whether the stream is fed whole, in
 *       pseudo-random pieces, or one byte at a time (short streams), down
 *       to the error status, offset and reason; rlk_resp_parser_want() is
 *       a true lower bound; errors are sticky; no view leaves the buffer;
 *   (b) every complete reply re-encoded event by event with
 *       rlk_resp_put_event() parses back to the same events, and encoding
 *       those again gives the same bytes;
 *   (c) the limits hold and the events are well formed (depths, counts,
 *       END matching BEGIN, REPLY_END exactly where a reply ends);
 *   (d) the tree reader, fed in pieces, builds the same replies (compared
 *       value by value) and stops with the same error; with a small
 *       arena, or failing allocations, it agrees until memory runs out;
 *       with copy_strings its replies outlive the (freed) buffer;
 *   (e) everything allocated through the library's hook is freed, also
 *       when allocations fail (injected), and the event parser allocates
 *       nothing unless nesting outgrows its inline frames.
 *
 * Built with RLK_FUZZ_MAIN it is a program that runs files, directories
 * of files, or stdin; with RLK_FUZZ_AFL as well it uses AFL++'s
 * persistent mode when compiled by afl-clang-fast.
 */
#include "resp.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_STREAM (64u * 1024)     /* bytes of one input that are used   */
#define BYTEWISE_MAX 4096u          /* streams fed one byte at a time     */

/* ------------------------------------------------------------------ */
/* Failure reporting                                                    */

static const uint8_t *cur_input;
static size_t cur_size;
struct evlog;
static const struct evlog *cur_events; /* the whole feed's events, once known */
static void dump_events(const struct evlog *l);

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void violated(const char *fmt, ...)
{
    va_list ap;
    fputs("fuzz_resp: property violated: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nfuzz_resp: input (%zu bytes, hex):", cur_size);
    for (size_t i = 0; i < cur_size && i < 1024; i++)
        fprintf(stderr, "%s%02x", i % 32 ? "" : "\n  ", cur_input[i]);
    if (cur_size > 1024) fputs("\n  ...", stderr);
    fputc('\n', stderr);
    if (cur_events) dump_events(cur_events);
    abort();
}

#define CHECK(cond, ...) do { if (!(cond)) violated(__VA_ARGS__); } while (0)

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("fuzz_resp: out of memory in the harness\n", stderr);
        abort();
    }
    return p;
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        fputs("fuzz_resp: out of memory in the harness\n", stderr);
        abort();
    }
    return q;
}

/* ------------------------------------------------------------------ */
/* Counting allocator: leaks and per-reply allocations show up here     */
/* whatever runs the harness (AFL has no leak checker).                 */

static long long live_blocks;
static unsigned long long alloc_calls;
/* Failure injection: when 0, every allocation fails; when positive, that
 * many more succeed first; -1: none fails. */
static long fail_in = -1;

static int inject_failure(void)
{
    if (fail_in == 0) return 1;
    if (fail_in > 0) fail_in--;
    return 0;
}

static void *count_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (inject_failure()) return NULL;
    void *p = malloc(n);
    if (p) { live_blocks++; alloc_calls++; }
    return p;
}

static void *count_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    if (inject_failure()) return NULL;
    void *q = realloc(p, n);
    if (q) { if (!p) live_blocks++; alloc_calls++; }
    return q;
}

static void count_free(void *ctx, void *p)
{
    (void)ctx;
    if (p) { live_blocks--; free(p); }
}

/* ------------------------------------------------------------------ */
/* Pseudo-random split points                                            */

static uint32_t rng_next(uint32_t *s)
{
    /* xorshift32; the state is never 0 */
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* Mostly tiny pieces (they cut through lines and CRLFs), some larger
 * ones, now and then no new bytes at all. */
static size_t next_piece(uint32_t *s)
{
    uint32_t r = rng_next(s);
    switch (r & 15) {
    case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7:
        return 1 + (r >> 4) % 4;
    case 8: case 9: case 10: case 11:
        return 1 + (r >> 4) % 32;
    case 12: case 13:
        return (r >> 4) % 512;
    case 14:
        return 0;
    default:
        return (r >> 4) % 8192;
    }
}

/* ------------------------------------------------------------------ */
/* Event logs                                                            */

typedef struct rec {
    uint8_t kind, type;
    char null_wire;
    char format[4];
    uint32_t depth, flags;
    int64_t integer;
    double dbl;
    size_t off, len;      /* string bytes: pool[off .. off+len)          */
} rec;

typedef struct evlog {
    rec *ev;
    size_t n, cap;
    char *pool;
    size_t pool_len, pool_cap;
    size_t replies;       /* events carrying REPLY_END                   */
    int status;           /* 0, or the error returned                    */
    uint64_t err_off;
    char reason[128];
    int idle;             /* rlk_resp_parser_idle() at the end           */
    size_t max_open;      /* most aggregate frames open at once          */
} evlog;

static void log_init(evlog *l)
{
    memset(l, 0, sizeof *l);
}

static void log_free(evlog *l)
{
    free(l->ev);
    free(l->pool);
    memset(l, 0, sizeof *l);
}

static int has_string(int kind, int type)
{
    if (kind == RLK_EV_CHUNK) return 1;
    if (kind != RLK_EV_VALUE) return 0;
    switch (type) {
    case RLK_RESP_SIMPLE: case RLK_RESP_ERROR: case RLK_RESP_BULK:
    case RLK_RESP_BLOB_ERROR: case RLK_RESP_VERBATIM: case RLK_RESP_BIGNUM:
    case RLK_RESP_DOUBLE:
        return 1;
    default:
        return 0;
    }
}

/* Keeps the fields that mean something for this event, and a copy of its
 * string (the view dies with the caller's buffer).  buf/len is what the
 * call that produced the event was given: views must stay inside it. */
static void log_event(evlog *l, const rlk_resp_event *ev, const char *buf, size_t len)
{
    rec r;
    memset(&r, 0, sizeof r);
    CHECK(ev->kind >= RLK_EV_VALUE && ev->kind <= RLK_EV_CHUNK,
          "event kind %d out of range", (int)ev->kind);
    r.kind = (uint8_t)ev->kind;
    r.type = (uint8_t)ev->type;
    r.depth = ev->depth;
    r.flags = ev->flags;
    CHECK(!(ev->flags & ~(RLK_EV_F_REPLY_END | RLK_EV_F_STREAMED)),
          "unknown event flags 0x%x", (unsigned)ev->flags);
    if (ev->kind == RLK_EV_BEGIN) r.integer = ev->integer;
    if (ev->kind == RLK_EV_VALUE) {
        switch (ev->type) {
        case RLK_RESP_INTEGER: case RLK_RESP_BOOL:
            r.integer = ev->integer;
            break;
        case RLK_RESP_NULL:
            r.null_wire = ev->null_wire;
            break;
        case RLK_RESP_DOUBLE:
            r.dbl = ev->dbl;
            break;
        case RLK_RESP_VERBATIM:
            CHECK(memchr(ev->format, '\0', 4) != NULL, "verbatim format not terminated");
            memcpy(r.format, ev->format, 4);
            break;
        default:
            break;
        }
    }
    if (has_string(ev->kind, ev->type)) {
        if (ev->len) {
            CHECK(ev->str && ev->str >= buf && ev->len <= len &&
                  (size_t)(ev->str - buf) <= len - ev->len,
                  "event %zu: string view outside the buffer given", l->n);
        }
        if (l->pool_len + ev->len > l->pool_cap) {
            size_t cap = l->pool_cap ? l->pool_cap : 256;
            while (cap < l->pool_len + ev->len) cap *= 2;
            l->pool = xrealloc(l->pool, cap);
            l->pool_cap = cap;
        }
        r.off = l->pool_len;
        r.len = ev->len;
        if (ev->len) memcpy(l->pool + l->pool_len, ev->str, ev->len);
        l->pool_len += ev->len;
    }
    if (ev->flags & RLK_EV_F_REPLY_END) l->replies++;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->ev = xrealloc(l->ev, l->cap * sizeof *l->ev);
    }
    l->ev[l->n++] = r;
}

static void log_error(evlog *l, const rlk_resp_parser *p, int status)
{
    const char *reason = NULL;
    uint64_t off = 0;
    int st = rlk_resp_parser_error(p, &off, &reason);
    CHECK(st == status, "rlk_resp_parser_error says %d after a call returned %d", st, status);
    CHECK(reason != NULL, "no error reason");
    l->status = status;
    l->err_off = off;
    snprintf(l->reason, sizeof l->reason, "%s", reason);
}

static uint64_t dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* exact: doubles compared by bits and text; otherwise any NaN equals any
 * NaN and the text is not compared (an encoder may spell it its way). */
static int same_double(double a, double b, int exact)
{
    if (!exact && isnan(a) && isnan(b)) return 1;
    return dbits(a) == dbits(b);
}

static int same_rec(const evlog *la, const rec *a, const evlog *lb, const rec *b, int exact)
{
    if (a->kind != b->kind || a->type != b->type || a->depth != b->depth ||
        a->flags != b->flags || a->integer != b->integer ||
        a->null_wire != b->null_wire || memcmp(a->format, b->format, 4) != 0)
        return 0;
    if (a->kind == RLK_EV_VALUE && a->type == RLK_RESP_DOUBLE) {
        if (!same_double(a->dbl, b->dbl, exact)) return 0;
        if (!exact) return 1;
    }
    return a->len == b->len && (a->len == 0 ||
           memcmp(la->pool + a->off, lb->pool + b->off, a->len) == 0);
}

static void describe(char *out, size_t cap, const evlog *l, const rec *r)
{
    static const char *kinds[] = {"?", "VALUE", "BEGIN", "END", "CHUNK"};
    char s[40] = "", extra[96] = "";
    size_t i, n = r->len < 24 ? r->len : 24;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)l->pool[r->off + i];
        s[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '.';
    }
    s[i] = '\0';
    if (r->kind == RLK_EV_BEGIN)
        snprintf(extra, sizeof extra, " count %lld", (long long)r->integer);
    else if (r->kind == RLK_EV_VALUE && (r->type == RLK_RESP_INTEGER || r->type == RLK_RESP_BOOL))
        snprintf(extra, sizeof extra, " %lld", (long long)r->integer);
    else if (r->kind == RLK_EV_VALUE && r->type == RLK_RESP_NULL)
        snprintf(extra, sizeof extra, " from '%c'", r->null_wire ? r->null_wire : '0');
    else if (r->kind == RLK_EV_VALUE && r->type == RLK_RESP_DOUBLE)
        snprintf(extra, sizeof extra, " %.17g (%a) \"%s\"", r->dbl, r->dbl, s);
    else if (has_string(r->kind, r->type))
        snprintf(extra, sizeof extra, "%s%.3s len %zu \"%s%s\"",
                 r->type == RLK_RESP_VERBATIM ? " fmt " : "", r->format, r->len, s,
                 r->len > 24 ? "..." : "");
    snprintf(out, cap, "%s '%c' depth %u%s%s%s", kinds[r->kind <= 4 ? r->kind : 0],
             r->type ? r->type : '0', r->depth, r->flags & RLK_EV_F_REPLY_END ? " REPLY_END" : "",
             r->flags & RLK_EV_F_STREAMED ? " STREAMED" : "", extra);
}

static void dump_events(const evlog *l)
{
    char d[256];
    fprintf(stderr, "fuzz_resp: events of the whole feed (%zu):\n", l->n);
    for (size_t i = 0; i < l->n && i < 100; i++) {
        describe(d, sizeof d, l, &l->ev[i]);
        fprintf(stderr, "  %3zu %*s%s\n", i, 2 * (int)(l->ev[i].depth < 20 ? l->ev[i].depth : 20),
                "", d);
    }
    if (l->n > 100) fputs("  ...\n", stderr);
    if (l->status)
        fprintf(stderr, "  then %s at offset %llu: %s\n", rlk_strerror(l->status),
                (unsigned long long)l->err_off, l->reason);
}

/* Property (a): two feedings of the same stream agree on everything. */
static void compare_logs(const char *what, const evlog *a, const evlog *b)
{
    size_t n = a->n < b->n ? a->n : b->n;
    for (size_t i = 0; i < n; i++) {
        if (!same_rec(a, &a->ev[i], b, &b->ev[i], 1)) {
            char da[256], db[256];
            describe(da, sizeof da, a, &a->ev[i]);
            describe(db, sizeof db, b, &b->ev[i]);
            violated("%s: event %zu differs:\n  whole: %s\n  other: %s", what, i, da, db);
        }
    }
    CHECK(a->n == b->n, "%s: %zu events fed whole, %zu otherwise (status %d vs %d)",
          what, a->n, b->n, a->status, b->status);
    CHECK(a->status == b->status && a->err_off == b->err_off,
          "%s: whole feed ends with status %d at offset %llu (%s), other with %d at %llu (%s)",
          what, a->status, (unsigned long long)a->err_off, a->reason,
          b->status, (unsigned long long)b->err_off, b->reason);
    CHECK(strcmp(a->reason, b->reason) == 0, "%s: error reasons differ: \"%s\" vs \"%s\"",
          what, a->reason, b->reason);
    CHECK(a->idle == b->idle, "%s: idle at the end %d vs %d", what, a->idle, b->idle);
}

/* ------------------------------------------------------------------ */
/* Feeding the event parser                                              */

enum feed_mode { FEED_WHOLE, FEED_PIECES, FEED_BYTES };

/* A second call after an error must give the same error, unchanged. */
static void check_sticky(rlk_resp_parser *p, const char *buf, size_t len, int status,
                         const evlog *l)
{
    rlk_resp_event ev;
    size_t c = 12345;
    int r = rlk_resp_next(p, buf, len, &c, &ev);
    uint64_t off;
    CHECK(r == status && c == 0, "error %d not sticky: next call returned %d, consumed %zu",
          status, r, c);
    rlk_resp_parser_error(p, &off, NULL);
    CHECK(off == l->err_off, "error offset moved from %llu to %llu",
          (unsigned long long)l->err_off, (unsigned long long)off);
    CHECK(!rlk_resp_parser_idle(p), "parser idle after an error");
}

/*
 * Feeds in[0..n) to p.  The caller's receive buffer is modelled as the
 * contract describes it: the bytes not consumed, then the new ones.  In
 * WHOLE and PIECES mode every call gets a buffer allocated to its exact
 * length, so a read past the end is caught by ASan or valgrind; BYTES
 * mode uses a window over one copy (one allocation per byte would be
 * quadratic).
 */
static void feed_events(rlk_resp_parser *p, const uint8_t *in, size_t n,
                        enum feed_mode mode, uint32_t seed, evlog *l)
{
    char *buf = NULL;          /* PIECES/WHOLE: pending bytes + new ones */
    size_t have = 0;           /* bytes in buf                          */
    size_t fed = 0;            /* bytes of in[] given so far             */
    char *copy = NULL;         /* BYTES: the whole stream               */
    size_t start = 0;          /* BYTES: first unconsumed byte in copy  */
    uint64_t need = 0, added = 0; /* want() after the last 0, bytes since */
    int need_valid = 0;
    size_t open = 0;
    uint32_t rs = seed ? seed : 1;

    if (mode == FEED_BYTES) {
        copy = xmalloc(n);
        memcpy(copy, in, n);
    }
    for (;;) {
        size_t piece = mode == FEED_WHOLE ? n - fed
                     : mode == FEED_BYTES ? 1 : next_piece(&rs);
        if (piece > n - fed) piece = n - fed;
        const char *base;
        if (mode == FEED_BYTES) {
            fed += piece;
            base = copy + start;
            have = fed - start;
        } else {
            char *nb = xmalloc(have + piece);
            if (have) memcpy(nb, buf, have);
            if (piece) memcpy(nb + have, in + fed, piece);
            free(buf);
            buf = nb;
            have += piece;
            fed += piece;
            base = buf;
        }
        added += piece;

        size_t pos = 0;
        int r;
        for (;;) {
            rlk_resp_event ev;
            size_t c = (size_t)-1;
            memset(&ev, 0xa5, sizeof ev);
            r = rlk_resp_next(p, base + pos, have - pos, &c, &ev);
            if (r < 0) {
                CHECK(r == RLK_ERR_PROTO || r == RLK_ERR_LIMIT || r == RLK_ERR_NOMEM,
                      "rlk_resp_next returned %d", r);
                CHECK(c == 0, "consumed %zu with an error", c);
                log_error(l, p, r);
                check_sticky(p, base + pos, have - pos, r, l);
                break;
            }
            CHECK(r == 0 || r == 1, "rlk_resp_next returned %d", r);
            CHECK(c <= have - pos, "consumed %zu of %zu bytes", c, have - pos);
            if (r == 1) {
                if (need_valid) {
                    CHECK(added >= need, "want() promised %llu more bytes, an event came after %llu",
                          (unsigned long long)need, (unsigned long long)added);
                    need_valid = 0;
                }
                log_event(l, &ev, base + pos, have - pos);
                if (ev.kind == RLK_EV_BEGIN && ev.type != RLK_RESP_BULK) {
                    if (++open > l->max_open) l->max_open = open;
                } else if (ev.kind == RLK_EV_END && ev.type != RLK_RESP_BULK && open) {
                    open--;
                }
                pos += c;
                continue;
            }
            pos += c;
            need = rlk_resp_parser_want(p);
            CHECK(need >= 1, "want() is 0 while more input is needed");
            need_valid = 1;
            added = 0;
            break;
        }
        if (mode == FEED_BYTES) {
            start += pos;
        } else if (r >= 0) {
            /* Keep the unconsumed bytes, exactly, for the next call. */
            char *nb = xmalloc(have - pos);
            memcpy(nb, buf + pos, have - pos);
            free(buf);
            buf = nb;
            have -= pos;
        }
        if (r < 0) break;
        if (fed == n) {
            if (mode == FEED_WHOLE) {
                /* Without new bytes nothing more can happen. */
                rlk_resp_event ev;
                size_t c = 1;
                int again = rlk_resp_next(p, buf, have, &c, &ev);
                CHECK(again == 0 && c == 0, "no new bytes, yet the call returned %d "
                      "consuming %zu", again, c);
            }
            break;
        }
    }
    l->idle = rlk_resp_parser_idle(p);
    if (l->status == 0 && n == 0) CHECK(l->idle, "parser not idle before any input");
    free(buf);
    free(copy);
}

/* ------------------------------------------------------------------ */
/* (c) limits and shape of the event stream                              */

typedef struct open_frame {
    uint8_t type, streamed;
    uint32_t depth;
    int64_t declared;
    uint64_t children;   /* elements, attributes not counted          */
    uint64_t bytes;      /* streamed string: chunk bytes so far        */
    int attr_waiting;    /* an attribute was read, its value is next   */
} open_frame;

static int is_aggregate(int t)
{
    return t == RLK_RESP_ARRAY || t == RLK_RESP_MAP || t == RLK_RESP_SET ||
           t == RLK_RESP_ATTR || t == RLK_RESP_PUSH;
}

static int is_pairs(int t)
{
    return t == RLK_RESP_MAP || t == RLK_RESP_ATTR;
}

static void check_shape(const evlog *l, const rlk_resp_limits *lim)
{
    open_frame *st = NULL;
    size_t sp = 0, cap = 0, aggs = 0;
    int top_attr = 0;
    size_t replies = 0;

    for (size_t i = 0; i < l->n; i++) {
        const rec *e = &l->ev[i];
        open_frame *top = sp ? &st[sp - 1] : NULL;
        int in_string = top && top->type == RLK_RESP_BULK;
        int completes = 0;   /* a value finishes in the current parent */
        int is_attr_end = 0;

        if (in_string) {
            CHECK(e->kind == RLK_EV_CHUNK || (e->kind == RLK_EV_END && e->type == RLK_RESP_BULK),
                  "event %zu: kind %d inside a streamed string", i, e->kind);
            CHECK(e->depth == top->depth, "event %zu: depth %u inside a streamed string at %u",
                  i, e->depth, top->depth);
        } else {
            CHECK(e->kind != RLK_EV_CHUNK, "event %zu: CHUNK outside a streamed string", i);
            CHECK(e->kind != RLK_EV_END || aggs > 0, "event %zu: END with nothing open", i);
            CHECK(e->depth == (e->kind == RLK_EV_END ? aggs - 1 : aggs),
                  "event %zu: depth %u with %zu aggregates open", i, e->depth, aggs);
        }
        CHECK(e->depth <= lim->max_depth, "event %zu: depth %u over max_depth %u",
              i, e->depth, lim->max_depth);

        switch (e->kind) {
        case RLK_EV_VALUE:
            CHECK(!is_aggregate(e->type) && e->type != 0, "event %zu: VALUE of type '%c'", i, e->type);
            if (has_string(e->kind, e->type))
                CHECK(e->len <= lim->max_bulk && (e->type != RLK_RESP_VERBATIM ||
                      e->len + 4 <= lim->max_bulk),
                      "event %zu: string of %zu bytes over max_bulk %llu", i, e->len,
                      (unsigned long long)lim->max_bulk);
            if (e->type == RLK_RESP_NULL)
                CHECK(e->null_wire == '_' || e->null_wire == '$' || e->null_wire == '*',
                      "event %zu: null from wire '%c'", i, e->null_wire);
            if (e->type == RLK_RESP_BOOL)
                CHECK(e->integer == 0 || e->integer == 1, "event %zu: bool %lld", i,
                      (long long)e->integer);
            completes = 1;
            break;
        case RLK_EV_BEGIN:
            CHECK(is_aggregate(e->type) || e->type == RLK_RESP_BULK,
                  "event %zu: BEGIN of type '%c'", i, e->type);
            if (e->flags & RLK_EV_F_STREAMED) {
                CHECK(e->integer == -1, "event %zu: streamed BEGIN with count %lld", i,
                      (long long)e->integer);
                CHECK(e->type == RLK_RESP_BULK || e->type == RLK_RESP_ARRAY ||
                      e->type == RLK_RESP_MAP || e->type == RLK_RESP_SET,
                      "event %zu: streamed '%c'", i, e->type);
            } else {
                CHECK(e->type != RLK_RESP_BULK, "event %zu: bulk BEGIN not streamed", i);
                CHECK(e->integer >= 0 && (uint64_t)e->integer <= lim->max_elements,
                      "event %zu: count %lld against max_elements %llu", i,
                      (long long)e->integer, (unsigned long long)lim->max_elements);
            }
            if (e->type != RLK_RESP_BULK) {
                CHECK(e->depth < lim->max_depth, "event %zu: aggregate at depth %u, max_depth %u",
                      i, e->depth, lim->max_depth);
                aggs++;
            }
            if (sp == cap) {
                cap = cap ? cap * 2 : 32;
                st = xrealloc(st, cap * sizeof *st);
            }
            st[sp].type = e->type;
            st[sp].streamed = (e->flags & RLK_EV_F_STREAMED) != 0;
            st[sp].depth = e->depth;
            st[sp].declared = e->integer;
            st[sp].children = 0;
            st[sp].bytes = 0;
            st[sp].attr_waiting = 0;
            sp++;
            break;
        case RLK_EV_CHUNK:
            CHECK(e->len > 0, "event %zu: empty CHUNK", i);
            top->bytes += e->len;
            CHECK(top->bytes <= lim->max_bulk, "event %zu: streamed string of %llu bytes "
                  "over max_bulk %llu", i, (unsigned long long)top->bytes,
                  (unsigned long long)lim->max_bulk);
            break;
        case RLK_EV_END:
            CHECK(top != NULL, "event %zu: END with nothing open", i);
            CHECK(e->type == top->type, "event %zu: END of '%c' closes '%c'", i, e->type, top->type);
            CHECK(e->depth == top->depth, "event %zu: END depth %u, BEGIN depth %u", i,
                  e->depth, top->depth);
            CHECK(((e->flags & RLK_EV_F_STREAMED) != 0) == top->streamed,
                  "event %zu: STREAMED flag of END differs from BEGIN", i);
            CHECK(!top->attr_waiting, "event %zu: aggregate ends after an attribute", i);
            if (top->type != RLK_RESP_BULK) {
                uint64_t mult = is_pairs(top->type) ? 2 : 1;
                if (top->streamed) {
                    CHECK(top->children % mult == 0, "event %zu: map ends after a key", i);
                    CHECK(top->children / mult <= lim->max_elements,
                          "event %zu: streamed aggregate of %llu over max_elements %llu", i,
                          (unsigned long long)(top->children / mult),
                          (unsigned long long)lim->max_elements);
                } else {
                    CHECK(top->children == (uint64_t)top->declared * mult,
                          "event %zu: aggregate declared %lld, has %llu elements", i,
                          (long long)top->declared, (unsigned long long)top->children);
                }
                aggs--;
            }
            is_attr_end = top->type == RLK_RESP_ATTR;
            sp--;
            completes = 1;
            break;
        default:
            violated("event %zu: kind %d", i, e->kind);
        }

        if (completes) {
            if (sp) {
                open_frame *parent = &st[sp - 1];
                if (is_attr_end) {
                    parent->attr_waiting = 1;
                } else {
                    parent->attr_waiting = 0;
                    parent->children++;
                    if (!parent->streamed)
                        CHECK(parent->children <= (uint64_t)parent->declared *
                              (is_pairs(parent->type) ? 2 : 1),
                              "event %zu: more elements than declared", i);
                }
            } else {
                top_attr = is_attr_end;
            }
        }
        int want_end = completes && sp == 0 && !is_attr_end;
        CHECK(((e->flags & RLK_EV_F_REPLY_END) != 0) == want_end,
              "event %zu: REPLY_END flag %s where a reply %s", i,
              want_end ? "missing" : "set", want_end ? "ends" : "does not end");
        replies += want_end;
    }
    CHECK(replies == l->replies, "reply count mismatch");
    /* (A header may have been consumed with no event yet: not idle with
     * nothing open is possible.) */
    if (l->idle)
        CHECK(sp == 0 && !top_attr, "idle() with %zu frames open%s", sp,
              top_attr ? " after an attribute" : "");
    free(st);
}

/* ------------------------------------------------------------------ */
/* (b) round trip through the encoder                                     */

static void event_from_rec(const evlog *l, const rec *r, rlk_resp_event *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = (rlk_resp_event_kind)r->kind;
    ev->type = (rlk_resp_type)r->type;
    ev->depth = r->depth;
    ev->flags = r->flags;
    ev->str = l->pool ? l->pool + r->off : "";
    ev->len = r->len;
    memcpy(ev->format, r->format, 4);
    ev->integer = r->integer;
    ev->dbl = r->dbl;
    ev->null_wire = r->null_wire;
}

/* Encodes the first `count` events of l (whole replies) into b. */
static void encode_log(const evlog *l, size_t count, rlk_buf *b)
{
    for (size_t i = 0; i < count; i++) {
        rlk_resp_event ev;
        event_from_rec(l, &l->ev[i], &ev);
        int r = rlk_resp_put_event(b, &ev);
        if (r != RLK_OK) {
            char d[256];
            describe(d, sizeof d, l, &l->ev[i]);
            violated("rlk_resp_put_event failed (%d, %s) on event %zu: %s", r,
                     rlk_strerror(r), i, d);
        }
    }
}

static void check_round_trip(const evlog *l)
{
    size_t complete = 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->ev[i].flags & RLK_EV_F_REPLY_END) complete = i + 1;
    if (complete == 0) return;

    rlk_buf b, b2;
    rlk_buf_init(&b);
    rlk_buf_init(&b2);
    encode_log(l, complete, &b);

    /* Parsed back with the default limits: the encoder may spell a double
     * longer than the server did. */
    rlk_resp_parser p;
    evlog back;
    log_init(&back);
    rlk_resp_parser_init(&p, NULL);
    feed_events(&p, (const uint8_t *)b.data, b.len, FEED_WHOLE, 0, &back);
    rlk_resp_parser_free(&p);

    if (back.status != 0)
        violated("re-encoded replies do not parse: %s at offset %llu (%s); "
                 "%zu events parsed back of %zu", rlk_strerror(back.status),
                 (unsigned long long)back.err_off, back.reason, back.n, complete);
    for (size_t i = 0; i < complete && i < back.n; i++) {
        if (!same_rec(l, &l->ev[i], &back, &back.ev[i], 0)) {
            char da[256], db[256];
            describe(da, sizeof da, l, &l->ev[i]);
            describe(db, sizeof db, &back, &back.ev[i]);
            violated("round trip: event %zu differs:\n  parsed:   %s\n  reparsed: %s",
                     i, da, db);
        }
    }
    CHECK(back.n == complete && back.idle, "round trip: %zu events became %zu (idle %d)",
          complete, back.n, back.idle);

    /* The encoding of the parsed-back events is the same bytes. */
    encode_log(&back, back.n, &b2);
    CHECK(b.len == b2.len && memcmp(b.data, b2.data, b.len) == 0,
          "re-encoding is not stable: %zu bytes, then %zu", b.len, b2.len);

    log_free(&back);
    rlk_buf_free(&b);
    rlk_buf_free(&b2);
}

/* ------------------------------------------------------------------ */
/* (d) the tree reader                                                   */

/* The event stream as the tree holds it: one node per value, a streamed
 * string as one string, a streamed aggregate with the count it had. */
typedef struct crec {
    uint8_t kind, type, streamed;
    char null_wire;
    char format[4];
    uint32_t depth;
    int64_t integer;      /* INTEGER/BOOL value, aggregate count          */
    double dbl;
    size_t off, len;
} crec;

typedef struct canon {
    crec *c;
    size_t n;
    size_t *reply_end;    /* index after the last crec of each reply      */
    size_t replies;
} canon;

static void canonicalize(const evlog *l, canon *out)
{
    size_t *stack = xmalloc((l->n + 1) * sizeof *stack);
    uint64_t *kids = xmalloc((l->n + 1) * sizeof *kids);
    size_t sp = 0;
    out->c = xmalloc((l->n + 1) * sizeof *out->c);
    out->reply_end = xmalloc((l->replies + 1) * sizeof *out->reply_end);
    out->n = 0;
    out->replies = 0;

    for (size_t i = 0; i < l->n; i++) {
        const rec *e = &l->ev[i];
        crec *c = &out->c[out->n];
        int completes = 0, attr_end = 0;
        memset(c, 0, sizeof *c);
        c->type = e->type;
        c->depth = e->depth;
        switch (e->kind) {
        case RLK_EV_VALUE:
            c->kind = RLK_EV_VALUE;
            c->null_wire = e->null_wire;
            memcpy(c->format, e->format, 4);
            c->integer = e->integer;
            c->dbl = e->dbl;
            c->off = e->off;
            c->len = e->len;
            out->n++;
            completes = 1;
            break;
        case RLK_EV_BEGIN:
            c->kind = e->type == RLK_RESP_BULK ? RLK_EV_VALUE : RLK_EV_BEGIN;
            c->streamed = (e->flags & RLK_EV_F_STREAMED) != 0;
            c->integer = e->type == RLK_RESP_BULK ? 0 : e->integer;
            /* chunks are logged back to back: the string is the pool
             * from the first chunk to the last */
            c->off = l->pool_len;
            if (i + 1 < l->n && l->ev[i + 1].kind == RLK_EV_CHUNK) c->off = l->ev[i + 1].off;
            stack[sp] = out->n++;
            kids[sp++] = 0;
            break;
        case RLK_EV_CHUNK:
            out->c[stack[sp - 1]].len += e->len;
            break;
        case RLK_EV_END: {
            crec *b = &out->c[stack[--sp]];
            if (e->type != RLK_RESP_BULK) {
                if (b->streamed) b->integer = (int64_t)(kids[sp] >> is_pairs(e->type));
                c->kind = RLK_EV_END;
                out->n++;
                attr_end = e->type == RLK_RESP_ATTR;
            }
            completes = 1;
            break;
        }
        }
        if (completes && sp && !attr_end) kids[sp - 1]++;
        if (e->flags & RLK_EV_F_REPLY_END) out->reply_end[out->replies++] = out->n;
    }
    free(stack);
    free(kids);
}

static void canon_free(canon *c)
{
    free(c->c);
    free(c->reply_end);
}

typedef struct tree_cmp {
    const evlog *l;
    const canon *cn;
    size_t at, end;       /* next crec to match; end of this reply       */
    size_t reply;
} tree_cmp;

/* Reports a difference at the crec last taken (t->at - 1). */
static void tree_mismatch(tree_cmp *t, const char *what)
{
    size_t first = t->reply ? t->cn->reply_end[t->reply - 1] : 0;
    if (t->at > first && t->at - 1 < t->end) {
        const crec *c = &t->cn->c[t->at - 1];
        violated("tree reply %zu, value %zu of the reply: %s (events there: %s type '%c' "
                 "depth %u)", t->reply, t->at - 1 - first, what,
                 c->kind == RLK_EV_BEGIN ? "BEGIN" : c->kind == RLK_EV_END ? "END" : "VALUE",
                 c->type ? c->type : '0', c->depth);
    }
    violated("tree reply %zu: %s", t->reply, what);
}

static void tree_walk(tree_cmp *t, const rlk_resp_value *v, uint32_t depth, int as_attr);

static void tree_walk_list(tree_cmp *t, const rlk_resp_value *v, uint32_t depth)
{
    /* The list of elements is walked iteratively; only nesting recurses. */
    for (; v; v = v->next) tree_walk(t, v, depth, 0);
}

static void tree_walk(tree_cmp *t, const rlk_resp_value *v, uint32_t depth, int as_attr)
{
    if (v->attr) {
        if (v->attr->type != RLK_RESP_ATTR) tree_mismatch(t, "attr is not an attribute");
        tree_walk(t, v->attr, depth, 1);
    }
    if (t->at >= t->end) {
        t->at = t->end + 1;
        tree_mismatch(t, "the tree has more values than the events");
    }
    const crec *c = &t->cn->c[t->at++];
    if (as_attr != (v->type == RLK_RESP_ATTR))
        tree_mismatch(t, "attribute where an element belongs, or the reverse");
    if (c->type != v->type) tree_mismatch(t, "type differs");
    if (c->depth != depth) tree_mismatch(t, "depth differs");
    if (c->streamed != ((v->flags & RLK_RESP_V_STREAMED) != 0))
        tree_mismatch(t, "streamed flag differs");
    if (is_aggregate(v->type)) {
        if (c->kind != RLK_EV_BEGIN) tree_mismatch(t, "aggregate where a scalar was");
        if ((int64_t)v->len != c->integer) tree_mismatch(t, "element count differs");
        size_t k = 0;
        for (const rlk_resp_value *e = v->child; e; e = e->next) k++;
        if (k != v->len * (is_pairs(v->type) ? 2 : 1))
            tree_mismatch(t, "len does not match the elements linked");
        tree_walk_list(t, v->child, depth + 1);
        if (t->at >= t->end) {
            t->at = t->end + 1;
            tree_mismatch(t, "aggregate ends after the events' reply");
        }
        const crec *e = &t->cn->c[t->at++];
        if (e->kind != RLK_EV_END || e->type != v->type) tree_mismatch(t, "aggregate end differs");
        return;
    }
    if (c->kind != RLK_EV_VALUE) tree_mismatch(t, "scalar where an aggregate was");
    if (v->child) tree_mismatch(t, "scalar with children");
    switch (v->type) {
    case RLK_RESP_INTEGER: case RLK_RESP_BOOL:
        if (v->integer != c->integer) tree_mismatch(t, "integer differs");
        return;
    case RLK_RESP_NULL:
        if (v->null_wire != c->null_wire) tree_mismatch(t, "null wire form differs");
        return;
    case RLK_RESP_DOUBLE:
        if (dbits(v->dbl) != dbits(c->dbl)) tree_mismatch(t, "double differs");
        break;
    case RLK_RESP_VERBATIM:
        if (memcmp(v->format, c->format, 4) != 0) tree_mismatch(t, "verbatim format differs");
        break;
    default:
        break;
    }
    if (v->len != c->len) tree_mismatch(t, "string length differs");
    if (v->len && memcmp(v->str, t->l->pool + c->off, v->len) != 0)
        tree_mismatch(t, "string bytes differ");
}

static void compare_tree(const evlog *l, const canon *cn, size_t reply,
                         const rlk_resp_value *root)
{
    tree_cmp t;
    t.l = l;
    t.cn = cn;
    t.reply = reply;
    t.at = reply ? cn->reply_end[reply - 1] : 0;
    t.end = cn->reply_end[reply];
    if (!root) tree_mismatch(&t, "NULL root");
    if (root->next) tree_mismatch(&t, "root has a sibling");
    tree_walk(&t, root, 0, 0);
    if (t.at != t.end) {
        t.at++; /* report the first value the tree lacks */
        tree_mismatch(&t, "the tree lacks values the events have");
    }
}

/*
 * Reads the stream with rlk_resp_read.  pieces: fed in pseudo-random
 * pieces, each call's buffer allocated to its exact size; else whole.
 * Returns the status it stopped with (0: input ran out) and the number of
 * replies in *replies; every reply is compared with the events.
 */
static int feed_tree(const uint8_t *in, size_t n, const rlk_resp_limits *lim,
                     rlk_resp_arena *arena, int pieces, int copy, uint32_t seed,
                     const evlog *l, const canon *cn, size_t *replies,
                     uint64_t *err_off)
{
    rlk_resp_reader rd;
    char *buf = NULL;
    size_t have = 0, fed = 0;
    uint32_t rs = seed ? seed : 1;
    int status = 0;

    rlk_resp_reader_init(&rd, arena, lim);
    rd.copy_strings = copy;
    *replies = 0;
    *err_off = 0;
    for (;;) {
        size_t piece = pieces ? next_piece(&rs) : n - fed;
        if (piece > n - fed) piece = n - fed;
        char *nb = xmalloc(have + piece);
        if (have) memcpy(nb, buf, have);
        if (piece) memcpy(nb + have, in + fed, piece);
        free(buf);
        buf = nb;
        have += piece;
        fed += piece;

        size_t pos = 0;
        for (;;) {
            rlk_resp_value *root = (rlk_resp_value *)1;
            size_t c = (size_t)-1;
            int r = rlk_resp_read(&rd, buf + pos, have - pos, &c, &root);
            if (r < 0) {
                CHECK(c == 0, "tree: consumed %zu with an error", c);
                CHECK(rlk_resp_parser_error(&rd.parser, err_off, NULL) == r,
                      "tree: returned %d, the parser holds another status", r);
                status = r;
                break;
            }
            CHECK(r == 0 || r == 1, "rlk_resp_read returned %d", r);
            if (r == 0) {
                CHECK(c == 0, "tree: consumed %zu without a whole reply", c);
                break;
            }
            CHECK(c > 0 && c <= have - pos, "tree: consumed %zu of %zu", c, have - pos);
            CHECK(*replies < cn->replies, "tree: more replies than the events have");
            if (copy) {
                /* The reply must outlive the buffer: scribble over it and
                 * free it before looking at the tree. */
                size_t rest = have - pos - c;
                char *rb = xmalloc(rest);
                memcpy(rb, buf + pos + c, rest);
                memset(buf, 0xee, have);
                free(buf);
                buf = rb;
                have = rest;
                pos = 0;
            } else {
                pos += c;
            }
            compare_tree(l, cn, *replies, root);
            ++*replies;
            rlk_resp_arena_reset(arena);
        }
        if (status) break;
        char *keep = xmalloc(have - pos);
        memcpy(keep, buf + pos, have - pos);
        free(buf);
        buf = keep;
        have -= pos;
        if (fed == n) break;
    }
    free(buf);
    rlk_resp_reader_free(&rd);
    return status;
}

static void check_tree(const uint8_t *in, size_t n, const rlk_resp_limits *lim,
                       size_t small_arena, uint32_t seed, const evlog *l)
{
    canon cn;
    size_t replies;
    uint64_t off;
    int st;

    canonicalize(l, &cn);
    CHECK(cn.replies == l->replies, "canonical reply count");

    /* A generous arena that starts in a small caller buffer: every
     * node (~80 bytes) takes at least 3 input bytes, and block growth
     * at most doubles what is used. */
    {
        unsigned char first[200];
        rlk_resp_arena a;
        rlk_resp_arena_init(&a, first + 1, sizeof first - 1, 64 * n + 65536);
        st = feed_tree(in, n, lim, &a, 1, 0, seed ^ 0x5bd1e995u, l, &cn, &replies, &off);
        rlk_resp_arena_free(&a);
        CHECK(st == l->status, "tree ends with %d (%s), the events with %d", st,
              rlk_strerror(st), l->status);
        CHECK(replies == l->replies, "tree read %zu replies, the events have %zu",
              replies, l->replies);
        if (st) CHECK(off == l->err_off, "tree error at offset %llu, events at %llu",
                      (unsigned long long)off, (unsigned long long)l->err_off);
    }

    /* A small arena; then strings copied (copy_strings, the buffer is
     * freed before each reply is looked at) with an allocator that fails
     * after a few calls: the same replies, until memory runs out. */
    for (int run = 0; run < 2; run++) {
        const char *what = run ? "copied strings, failing allocator" : "small arena";
        rlk_resp_arena a;
        rlk_resp_arena_init(&a, NULL, 0, run ? 0 : small_arena);
        if (run) fail_in = (long)((seed >> 8) % 8);
        st = feed_tree(in, n, lim, &a, 0, run, 0, l, &cn, &replies, &off);
        fail_in = -1;
        rlk_resp_arena_free(&a);
        if (st == RLK_ERR_NOMEM && l->status != RLK_ERR_NOMEM) {
            CHECK(replies <= l->replies, "%s: too many replies", what);
        } else {
            CHECK(st == l->status && replies == l->replies,
                  "%s: status %d after %zu replies, events: %d after %zu",
                  what, st, replies, l->status, l->replies);
            if (st) CHECK(off == l->err_off, "%s: error offset differs", what);
        }
    }
    canon_free(&cn);
}

/* ------------------------------------------------------------------ */
/* Entry point                                                           */

static void set_limits(uint8_t h, rlk_resp_limits *lim, size_t *arena)
{
    static const uint32_t depth[4] = {0, 1, 3, 8};
    static const uint64_t bulk[4] = {0, 4, 16, 200};
    static const uint64_t elems[4] = {0, 1, 3, 20};
    static const size_t arenas[4] = {1024, 256, 8192, 65536};
    /* Zero means the default, as for the parser. */
    rlk_resp_limits_default(lim);
    if (depth[h & 3]) lim->max_depth = depth[h & 3];
    if (bulk[(h >> 2) & 3]) lim->max_bulk = bulk[(h >> 2) & 3];
    if (elems[(h >> 4) & 3]) lim->max_elements = elems[(h >> 4) & 3];
    *arena = arenas[(h >> 6) & 3];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int hooked;
    if (!hooked) {
        rlk_allocator a = {count_malloc, count_realloc, count_free, NULL};
        rlk_set_allocator(&a);
        hooked = 1;
    }
    cur_input = data;
    cur_size = size;

    uint8_t h0 = 0, h1 = 0;
    const uint8_t *in = data;
    size_t n = size;
    if (size >= 2) {
        h0 = data[0];
        h1 = data[1];
        in = data + 2;
        n = size - 2;
    }
    if (n > MAX_STREAM) n = MAX_STREAM;

    rlk_resp_limits lim;
    size_t small_arena;
    set_limits(h0, &lim, &small_arena);
    uint32_t seed = 0x9e3779b9u * ((uint32_t)h1 + 1) ^ (uint32_t)n;
    long long live0 = live_blocks;

    /* Whole, then (after a reset of the same parser) in pieces. */
    evlog whole, split;
    log_init(&whole);
    log_init(&split);
    rlk_resp_parser p;
    rlk_resp_parser_init(&p, &lim);
    unsigned long long calls0 = alloc_calls;
    feed_events(&p, in, n, FEED_WHOLE, 0, &whole);
    if (whole.max_open <= RLK_RESP_INLINE_FRAMES && whole.status != RLK_ERR_NOMEM)
        CHECK(alloc_calls == calls0, "the event parser allocated %llu times with at most "
              "%zu aggregates open", alloc_calls - calls0, whole.max_open);
    cur_events = &whole;
    check_shape(&whole, &lim);

    /* Nesting past the inline frames needs the heap: when it fails, the
     * parser stops with RLK_ERR_NOMEM after the same events, and works
     * again after a reset. */
    if (whole.max_open > RLK_RESP_INLINE_FRAMES) {
        evlog oom, again;
        rlk_resp_parser q;
        log_init(&oom);
        log_init(&again);
        rlk_resp_parser_init(&q, &lim);
        fail_in = 0;
        feed_events(&q, in, n, FEED_WHOLE, 0, &oom);
        fail_in = -1;
        CHECK(oom.status == RLK_ERR_NOMEM, "no RLK_ERR_NOMEM (%d) when the nesting stack "
              "cannot grow", oom.status);
        CHECK(oom.n < whole.n, "more events without memory than with it");
        for (size_t i = 0; i < oom.n; i++)
            CHECK(same_rec(&whole, &whole.ev[i], &oom, &oom.ev[i], 1),
                  "event %zu differs when memory runs out", i);
        rlk_resp_parser_reset(&q);
        feed_events(&q, in, n, FEED_WHOLE, 0, &again);
        rlk_resp_parser_free(&q);
        compare_logs("after RLK_ERR_NOMEM and a reset", &whole, &again);
        log_free(&oom);
        log_free(&again);
    }

    rlk_resp_parser_reset(&p);
    CHECK(rlk_resp_parser_idle(&p), "parser not idle after reset");
    feed_events(&p, in, n, FEED_PIECES, seed, &split);
    compare_logs("pieces", &whole, &split);
    rlk_resp_parser_free(&p);
    log_free(&split);

    if (n <= BYTEWISE_MAX) {
        evlog bytes;
        log_init(&bytes);
        rlk_resp_parser_init(&p, &lim);
        feed_events(&p, in, n, FEED_BYTES, 0, &bytes);
        rlk_resp_parser_free(&p);
        compare_logs("bytes", &whole, &bytes);
        log_free(&bytes);
    }

    check_round_trip(&whole);
    check_tree(in, n, &lim, small_arena, seed, &whole);
    cur_events = NULL;
    log_free(&whole);

    CHECK(live_blocks == live0, "%lld blocks allocated through the hook were not freed",
          live_blocks - live0);
    return 0;
}

#define FUZZ_NAME "fuzz_resp"
#include "fuzz_main.h"
