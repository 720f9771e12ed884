/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Tests of the RESP parser: the event API (rlk_resp_next) and the tree API
 * (rlk_resp_read), against the contract in resp/resp.h.
 *
 * Most cases go through check_parse(), which feeds an input whole, one
 * byte at a time, in pieces of 2, 3 and 7 bytes and (for inputs up to
 * SPLIT_ALL_MAX bytes) split at every single point, through both APIs,
 * following the caller contract: unconsumed bytes are presented again at
 * the start of the buffer, followed by the new ones.  Every call gets a
 * fresh buffer of exactly the pending size, so a parser that keeps
 * pointers into an old buffer or reads past `len` is caught (by the
 * comparisons, or by valgrind / ASan).  All runs must give the same
 * result, which must match the expectation written next to the input.
 *
 * Event string: one token per event, each ending in ';'
 *   V<depth><flags> <scalar>    a VALUE
 *   B<depth><flags> <type><n>   a BEGIN with its count (-1: streamed)
 *   E<depth><flags> <type>      an END
 *   C<depth><flags> <type>"..." a CHUNK of a streamed string (at the
 *                               string's own depth)
 * flags: r = RLK_EV_F_REPLY_END, s = RLK_EV_F_STREAMED.
 * scalar: +"..." -"..." $"..." !"..." ("..." (strings; bytes outside
 *   printable ASCII, and " and \, as \xHH), =fmt"..." (verbatim), :n, #0/#1,
 *   ,"raw"=value (double; value printed with %.17g, any NaN as nan),
 *   _w (null that came as w: '_', '$' or '*').
 * The run ends with !STATUS@offset; on an error (from
 * rlk_resp_parser_error), or +more; when input ran out inside a reply.
 * In an expectation, '^' stands for any run of letters and digits
 * (an offset or a status that the contract leaves open).
 *
 * Tree string: each value followed by a space; aggregates as T[...],
 * an attribute as |[...] written just before the value it belongs to, a
 * streamed string as the bulk string of all its chunks.  The event
 * stream is also turned into this form (complete replies only), and must
 * equal what rlk_resp_read built.
 */
#define TESTLIB_MAIN
#include "testlib.h"
#include "resp.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S(lit) (lit), (sizeof(lit) - 1)
#define SPLIT_ALL_MAX 700

/* ------------------------------------------------------------------ */
/* A growable string (plain malloc: the library's hook stays out of it) */

typedef struct dstr {
    char *p;
    size_t n, cap;
} dstr;

static void ds_add(dstr *d, const void *s, size_t n)
{
    if (d->n + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 64;
        while (cap < d->n + n + 1) cap *= 2;
        d->p = realloc(d->p, cap);
        if (!d->p) abort();
        d->cap = cap;
    }
    if (n) memcpy(d->p + d->n, s, n);
    d->n += n;
    d->p[d->n] = '\0';
}

static void ds_adds(dstr *d, const char *s) { ds_add(d, s, strlen(s)); }

static void ds_printf(dstr *d, const char *fmt, ...)
{
    char tmp[256];
    int n;
    va_list ap;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) ds_add(d, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void ds_esc(dstr *d, const char *s, size_t n)
{
    size_t i;
    ds_add(d, "\"", 1);
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ds_add(d, &s[i], 1);
        else ds_printf(d, "\\x%02x", c);
    }
    ds_add(d, "\"", 1);
}

static const char *ds_str(dstr *d)
{
    if (!d->p) ds_add(d, "", 0);
    return d->p;
}

static void ds_free(dstr *d)
{
    free(d->p);
    d->p = NULL;
    d->n = d->cap = 0;
}

/* ------------------------------------------------------------------ */
/* Serializations                                                        */

static const char *status_name(int st)
{
    switch (st) {
    case RLK_ERR_NOMEM: return "NOMEM";
    case RLK_ERR_PROTO: return "PROTO";
    case RLK_ERR_LIMIT: return "LIMIT";
    case RLK_ERR_INVALID: return "INVALID";
    case RLK_ERR_SPACE: return "SPACE";
    default: return "UNKNOWN";
    }
}

static void ds_dbl(dstr *d, double x)
{
    if (isnan(x)) ds_adds(d, "nan");
    else ds_printf(d, "%.17g", x);
}

static void ser_scalar(dstr *d, int type, const char *str, size_t len, int64_t integer,
                       double dbl, const char *format, char null_wire)
{
    switch (type) {
    case RLK_RESP_SIMPLE:
    case RLK_RESP_ERROR:
    case RLK_RESP_BULK:
    case RLK_RESP_BLOB_ERROR:
    case RLK_RESP_BIGNUM:
        ds_printf(d, "%c", type);
        ds_esc(d, str, len);
        break;
    case RLK_RESP_VERBATIM:
        ds_adds(d, "=");
        ds_add(d, format, 3);
        ds_esc(d, str, len);
        break;
    case RLK_RESP_INTEGER:
        ds_printf(d, ":%lld", (long long)integer);
        break;
    case RLK_RESP_BOOL:
        ds_printf(d, "#%lld", (long long)integer);
        break;
    case RLK_RESP_DOUBLE:
        ds_adds(d, ",");
        ds_esc(d, str, len);
        ds_adds(d, "=");
        ds_dbl(d, dbl);
        break;
    case RLK_RESP_NULL:
        ds_printf(d, "_%c", null_wire ? null_wire : '?');
        break;
    default:
        ds_printf(d, "?%d", type);
        break;
    }
}

static int is_string_type(int t)
{
    return t == RLK_RESP_SIMPLE || t == RLK_RESP_ERROR || t == RLK_RESP_BULK ||
           t == RLK_RESP_BLOB_ERROR || t == RLK_RESP_BIGNUM || t == RLK_RESP_VERBATIM ||
           t == RLK_RESP_DOUBLE;
}

static void ser_event(dstr *d, const rlk_resp_event *ev)
{
    char k = ev->kind == RLK_EV_VALUE ? 'V' : ev->kind == RLK_EV_BEGIN ? 'B'
           : ev->kind == RLK_EV_END ? 'E' : ev->kind == RLK_EV_CHUNK ? 'C' : '?';
    uint32_t other = ev->flags & ~(uint32_t)(RLK_EV_F_REPLY_END | RLK_EV_F_STREAMED);
    ds_printf(d, "%c%u", k, (unsigned)ev->depth);
    if (ev->flags & RLK_EV_F_REPLY_END) ds_adds(d, "r");
    if (ev->flags & RLK_EV_F_STREAMED) ds_adds(d, "s");
    if (other) ds_printf(d, "+%x", (unsigned)other);
    ds_adds(d, " ");
    switch (ev->kind) {
    case RLK_EV_VALUE:
        ser_scalar(d, ev->type, ev->str, ev->len, ev->integer, ev->dbl, ev->format,
                   ev->null_wire);
        break;
    case RLK_EV_BEGIN:
        ds_printf(d, "%c%lld", ev->type, (long long)ev->integer);
        break;
    case RLK_EV_END:
        ds_printf(d, "%c", ev->type);
        break;
    case RLK_EV_CHUNK:
        ds_printf(d, "%c", ev->type);
        ds_esc(d, ev->str, ev->len);
        break;
    default:
        ds_printf(d, "kind%d", (int)ev->kind);
        break;
    }
    ds_adds(d, ";");
}

/* Turns events into the tree form, one complete reply at a time. */
typedef struct ev2tree {
    dstr reply; /* the reply being built */
    dstr acc;   /* chunks of the open streamed string */
} ev2tree;

static void ev2tree_feed(ev2tree *st, dstr *out, const rlk_resp_event *ev)
{
    dstr *d = &st->reply;
    switch (ev->kind) {
    case RLK_EV_VALUE:
        ser_scalar(d, ev->type, ev->str, ev->len, ev->integer, ev->dbl, ev->format,
                   ev->null_wire);
        ds_adds(d, " ");
        break;
    case RLK_EV_BEGIN:
        if (ev->type == RLK_RESP_BULK) st->acc.n = 0;
        else ds_printf(d, "%c[", ev->type);
        break;
    case RLK_EV_CHUNK:
        ds_add(&st->acc, ev->str, ev->len);
        break;
    case RLK_EV_END:
        if (ev->type == RLK_RESP_BULK) {
            ds_adds(d, "$");
            ds_esc(d, st->acc.p ? st->acc.p : "", st->acc.n);
            ds_adds(d, " ");
        } else {
            ds_adds(d, ev->type == RLK_RESP_ATTR ? "]" : "] ");
        }
        break;
    default:
        ds_adds(d, "?? ");
    }
    if (ev->flags & RLK_EV_F_REPLY_END) {
        ds_add(out, d->p, d->n);
        d->n = 0;
    }
}

static void ser_tree(dstr *d, const rlk_resp_value *v);

static void ser_children(dstr *d, const rlk_resp_value *v)
{
    const rlk_resp_value *c;
    size_t n = 0;
    for (c = v->child; c; c = c->next) {
        ser_tree(d, c);
        n++;
    }
    if (v->type == RLK_RESP_MAP || v->type == RLK_RESP_ATTR) {
        if (n % 2 || v->len != n / 2) ds_printf(d, "LEN!%zu/%zu ", v->len, n);
    } else if (v->len != n) {
        ds_printf(d, "LEN!%zu/%zu ", v->len, n);
    }
}

static void ser_tree(dstr *d, const rlk_resp_value *v)
{
    if (!v) {
        ds_adds(d, "NULLNODE ");
        return;
    }
    if (v->attr) {
        if (v->attr->type != RLK_RESP_ATTR) ds_adds(d, "ATTRTYPE!");
        if (v->attr->attr) ds_adds(d, "ATTR-ON-ATTR!");
        ds_adds(d, "|[");
        ser_children(d, v->attr);
        ds_adds(d, "]");
    }
    switch (v->type) {
    case RLK_RESP_ARRAY:
    case RLK_RESP_MAP:
    case RLK_RESP_SET:
    case RLK_RESP_PUSH:
    case RLK_RESP_ATTR:
        ds_printf(d, "%c[", v->type);
        ser_children(d, v);
        ds_adds(d, "] ");
        break;
    default:
        ser_scalar(d, v->type, v->str, v->len, v->integer, v->dbl, v->format, v->null_wire);
        if (v->child) ds_adds(d, "CHILD!");
        ds_adds(d, " ");
    }
}

/* ------------------------------------------------------------------ */
/* Feeding harnesses                                                     */

/* Pieces: the first of `first` bytes, then `step` bytes each. */
typedef struct plan {
    size_t first, step;
} plan;

typedef struct pending {
    const char *in;
    size_t len, arrived;
    char *buf; /* bytes arrived and not consumed */
    size_t n;
    size_t piece;
    size_t step;
} pending;

static void pend_init(pending *q, const char *in, size_t len, plan pl)
{
    q->in = in;
    q->len = len;
    q->arrived = 0;
    q->buf = malloc(len + 1);
    if (!q->buf) abort();
    q->n = 0;
    q->piece = pl.first ? pl.first : 1;
    q->step = pl.step ? pl.step : 1;
}

/* Next piece arrives; 0 when there is nothing more. */
static int pend_more(pending *q)
{
    size_t k;
    if (q->arrived == q->len) return 0;
    k = q->piece < q->len - q->arrived ? q->piece : q->len - q->arrived;
    memcpy(q->buf + q->n, q->in + q->arrived, k);
    q->n += k;
    q->arrived += k;
    q->piece = q->step;
    return 1;
}

static void pend_drop(pending *q, size_t c)
{
    if (c > q->n) c = q->n;
    memmove(q->buf, q->buf + c, q->n - c);
    q->n -= c;
}

/* A fresh heap copy of exactly the pending bytes. */
static char *pend_copy(const pending *q)
{
    char *b = malloc(q->n ? q->n : 1);
    if (!b) abort();
    memcpy(b, q->buf, q->n);
    return b;
}

#define MAX_CALLS 2000000L

static int view_ok(const char *s, size_t n, const char *buf, size_t len)
{
    if (n == 0) return 1;
    return s >= buf && s <= buf + len && n <= (size_t)(buf + len - s);
}

/* Event API; appends the event string to *evs and the tree form of the
 * complete replies to *trees (may be NULL). */
static void run_events(const rlk_resp_limits *lim, const char *in, size_t len, plan pl,
                       dstr *evs, dstr *trees)
{
    rlk_resp_parser p;
    pending q;
    ev2tree st;
    long calls = 0;
    int done = 0;

    memset(&st, 0, sizeof st);
    rlk_resp_parser_init(&p, lim);
    pend_init(&q, in, len, pl);
    while (!done) {
        for (;;) {
            char *b = pend_copy(&q);
            size_t c = (size_t)-1;
            rlk_resp_event ev;
            int ret;
            memset(&ev, 0xa5, sizeof ev);
            ret = rlk_resp_next(&p, b, q.n, &c, &ev);
            if (++calls > MAX_CALLS) {
                ds_adds(evs, "#LOOPING;");
                free(b);
                done = 1;
                break;
            }
            if (ret == 1) {
                if (c > q.n) ds_adds(evs, "#CONSUMED>LEN;");
                if ((ev.kind == RLK_EV_CHUNK ||
                     (ev.kind == RLK_EV_VALUE && is_string_type(ev.type))) &&
                    !view_ok(ev.str, ev.len, b, q.n))
                    ds_adds(evs, "#VIEW;");
                ser_event(evs, &ev);
                if (trees) ev2tree_feed(&st, trees, &ev);
                free(b);
                pend_drop(&q, c);
                continue;
            }
            free(b);
            if (ret == 0) {
                if (c > q.n) ds_adds(evs, "#CONSUMED>LEN;");
                pend_drop(&q, c);
                break;
            } else {
                uint64_t off = 0;
                const char *why = NULL;
                int est = rlk_resp_parser_error(&p, &off, &why);
                if (c != 0) ds_adds(evs, "#ERR-CONSUMED;");
                if (est != ret && ret != RLK_ERR_NOMEM) ds_adds(evs, "#ERR-STATUS;");
                if (ret != RLK_ERR_NOMEM && (!why || !*why)) ds_adds(evs, "#NO-REASON;");
                ds_printf(evs, "!%s@%llu;", status_name(ret), (unsigned long long)off);
                if (trees) ds_printf(trees, "!%s@%llu;", status_name(ret), (unsigned long long)off);
                done = 2;
                break;
            }
        }
        if (!done && !pend_more(&q)) break;
    }
    if (!done && (q.n || !rlk_resp_parser_idle(&p))) {
        ds_adds(evs, "+more;");
        if (trees) ds_adds(trees, "+more;");
    }
    free(q.buf);
    ds_free(&st.reply);
    ds_free(&st.acc);
    rlk_resp_parser_free(&p);
}

/* Tree API; appends the tree string of every reply read. */
static void run_tree(const rlk_resp_limits *lim, const char *in, size_t len, plan pl,
                     dstr *out)
{
    rlk_resp_arena a;
    rlk_resp_reader r;
    pending q;
    long calls = 0;
    int done = 0;

    rlk_resp_arena_init(&a, NULL, 0, 0);
    rlk_resp_reader_init(&r, &a, lim);
    pend_init(&q, in, len, pl);
    while (!done) {
        for (;;) {
            char *b = pend_copy(&q);
            size_t c = (size_t)-1;
            rlk_resp_value *root = NULL;
            int ret = rlk_resp_read(&r, b, q.n, &c, &root);
            if (++calls > MAX_CALLS) {
                ds_adds(out, "#LOOPING;");
                free(b);
                done = 1;
                break;
            }
            if (ret == 1) {
                if (c == 0 || c > q.n) ds_printf(out, "#CONSUMED=%zu/%zu;", c, q.n);
                ser_tree(out, root);
                free(b);
                rlk_resp_arena_reset(&a);
                pend_drop(&q, c);
                continue;
            }
            free(b);
            if (ret == 0) {
                if (c != 0) ds_printf(out, "#PARTIAL-CONSUMED=%zu;", c);
                break;
            } else {
                uint64_t off = 0;
                rlk_resp_parser_error(&r.parser, &off, NULL);
                if (c != 0) ds_adds(out, "#ERR-CONSUMED;");
                ds_printf(out, "!%s@%llu;", status_name(ret), (unsigned long long)off);
                done = 2;
                break;
            }
        }
        if (!done && !pend_more(&q)) break;
    }
    if (!done && q.n) ds_adds(out, "+more;");
    free(q.buf);
    rlk_resp_reader_free(&r);
    rlk_resp_arena_free(&a);
}

/* Does got match want, where '^' in want stands for a run of [A-Za-z0-9]? */
static int wild_match(const char *got, const char *want)
{
    while (*want) {
        if (*want == '^') {
            const char *s = got;
            while ((*got >= '0' && *got <= '9') || (*got >= 'A' && *got <= 'Z') ||
                   (*got >= 'a' && *got <= 'z'))
                got++;
            if (got == s) return 0;
            want++;
            continue;
        }
        if (*got != *want) return 0;
        got++;
        want++;
    }
    return *got == '\0';
}

static void expect_match(const char *file, int line, const char *what, const char *in,
                         size_t len, const char *got, const char *want)
{
    tl_state.checks++;
    if (wild_match(got, want)) return;
    tl_fail(file, line, "%s", what);
    tl_show("input: ", in, len, 0);
    tl_show("got:   ", got, strlen(got), 0);
    tl_show("want:  ", want, strlen(want), 0);
}

static void expect_same(const char *file, int line, const char *what, const char *in,
                        size_t len, const char *got, const char *want)
{
    size_t i = 0;
    tl_state.checks++;
    if (strcmp(got, want) == 0) return;
    while (got[i] && got[i] == want[i]) i++;
    tl_fail(file, line, "%s", what);
    tl_show("input:  ", in, len, 0);
    tl_show("got:    ", got, strlen(got), i);
    tl_show("whole:  ", want, strlen(want), i);
}

/* The heart of the suite: see the comment at the top. */
static void check_parse_at(const char *file, int line, const rlk_resp_limits *lim,
                           const char *in, size_t len, const char *want_events,
                           const char *want_tree)
{
    dstr e0 = {0}, t0 = {0}, x = {0};
    size_t k;
    static const size_t pieces[] = {1, 2, 3, 7};
    char what[128];

    run_events(lim, in, len, (plan){len ? len : 1, 1}, &e0, &t0);
    if (want_events) expect_match(file, line, "events (fed whole)", in, len, ds_str(&e0), want_events);
    if (want_tree) expect_match(file, line, "tree form of events (fed whole)", in, len, ds_str(&t0), want_tree);

    run_tree(lim, in, len, (plan){len ? len : 1, 1}, &x);
    expect_same(file, line, "rlk_resp_read trees vs events (fed whole)", in, len, ds_str(&x), ds_str(&t0));

    for (k = 0; k < sizeof pieces / sizeof pieces[0]; k++) {
        dstr e = {0}, t = {0};
        snprintf(what, sizeof what, "events fed in pieces of %zu", pieces[k]);
        run_events(lim, in, len, (plan){pieces[k], pieces[k]}, &e, NULL);
        expect_same(file, line, what, in, len, ds_str(&e), ds_str(&e0));
        snprintf(what, sizeof what, "trees fed in pieces of %zu", pieces[k]);
        run_tree(lim, in, len, (plan){pieces[k], pieces[k]}, &t);
        expect_same(file, line, what, in, len, ds_str(&t), ds_str(&t0));
        ds_free(&e);
        ds_free(&t);
    }
    if (len <= SPLIT_ALL_MAX) {
        int ebad = 0, tbad = 0;
        for (k = 1; k < len && !(ebad && tbad); k++) {
            dstr e = {0}, t = {0};
            if (!ebad) {
                run_events(lim, in, len, (plan){k, len}, &e, NULL);
                if (strcmp(ds_str(&e), ds_str(&e0)) != 0) {
                    snprintf(what, sizeof what, "events split at %zu", k);
                    expect_same(file, line, what, in, len, ds_str(&e), ds_str(&e0));
                    ebad = 1;
                }
            }
            if (!tbad) {
                run_tree(lim, in, len, (plan){k, len}, &t);
                if (strcmp(ds_str(&t), ds_str(&t0)) != 0) {
                    snprintf(what, sizeof what, "trees split at %zu", k);
                    expect_same(file, line, what, in, len, ds_str(&t), ds_str(&t0));
                    tbad = 1;
                }
            }
            ds_free(&e);
            ds_free(&t);
        }
        tl_state.checks++;
    }
    ds_free(&e0);
    ds_free(&t0);
    ds_free(&x);
}

#define EXPECT(lim, in, want) check_parse_at(__FILE__, __LINE__, (lim), S(in), (want), NULL)
#define EXPECT_TREE(lim, in, want) check_parse_at(__FILE__, __LINE__, (lim), S(in), NULL, (want))
#define EXPECT_BUF(lim, in, len, want) check_parse_at(__FILE__, __LINE__, (lim), (in), (len), (want), NULL)

/* ------------------------------------------------------------------ */
/* A counting allocator, with optional failure injection                */

typedef union hdr {
    size_t n;
    max_align_t align;
} hdr;

static struct {
    long calls;      /* malloc + realloc calls */
    size_t total;    /* bytes requested by them, all added up */
    size_t live, peak;
    long fail_from;  /* calls numbered >= this fail (0: never) */
} ca;

static int ca_should_fail(void)
{
    ca.calls++;
    return ca.fail_from > 0 && ca.calls >= ca.fail_from;
}

static void *ca_malloc(void *ctx, size_t n)
{
    hdr *h;
    (void)ctx;
    if (ca_should_fail()) return NULL;
    h = malloc(sizeof *h + n);
    if (!h) return NULL;
    h->n = n;
    ca.total += n;
    ca.live += n;
    if (ca.live > ca.peak) ca.peak = ca.live;
    return h + 1;
}

static void *ca_realloc(void *ctx, void *ptr, size_t n)
{
    hdr *h, *nh;
    if (!ptr) return ca_malloc(ctx, n);
    if (ca_should_fail()) return NULL;
    h = (hdr *)ptr - 1;
    nh = realloc(h, sizeof *nh + n);
    if (!nh) return NULL;
    ca.live -= nh->n;
    nh->n = n;
    ca.total += n;
    ca.live += n;
    if (ca.live > ca.peak) ca.peak = ca.live;
    return nh + 1;
}

static void ca_free(void *ctx, void *ptr)
{
    hdr *h;
    (void)ctx;
    if (!ptr) return;
    h = (hdr *)ptr - 1;
    ca.live -= h->n;
    free(h);
}

static void counting_on(long fail_from)
{
    rlk_allocator a;
    memset(&ca, 0, sizeof ca);
    ca.fail_from = fail_from;
    a.malloc_fn = ca_malloc;
    a.realloc_fn = ca_realloc;
    a.free_fn = ca_free;
    a.ctx = NULL;
    rlk_set_allocator(&a);
}

static void counting_off(void) { rlk_set_allocator(NULL); }

/* ------------------------------------------------------------------ */
/* Small helpers for direct calls                                       */

static rlk_resp_limits limits(uint32_t depth, uint64_t bulk, uint64_t elements)
{
    rlk_resp_limits l;
    rlk_resp_limits_default(&l);
    if (depth) l.max_depth = depth;
    if (bulk) l.max_bulk = bulk;
    if (elements) l.max_elements = elements;
    return l;
}

static char *repeat(const char *unit, size_t times, const char *tail, size_t *len)
{
    size_t ul = strlen(unit), tl = tail ? strlen(tail) : 0, i;
    char *s = malloc(ul * times + tl + 1);
    if (!s) abort();
    for (i = 0; i < times; i++) memcpy(s + i * ul, unit, ul);
    if (tl) memcpy(s + ul * times, tail, tl);
    s[ul * times + tl] = '\0';
    *len = ul * times + tl;
    return s;
}

/* ------------------------------------------------------------------ */
/* Every type                                                           */

static void test_simple_and_error(void)
{
    EXPECT(NULL, "+OK\r\n", "V0r +\"OK\";");
    EXPECT(NULL, "+\r\n", "V0r +\"\";");
    EXPECT(NULL, "+hello world\r\n", "V0r +\"hello world\";");
    EXPECT(NULL, "+a\r\n+b\r\n", "V0r +\"a\";V0r +\"b\";");
    EXPECT(NULL, "-ERR unknown command 'foo'\r\n", "V0r -\"ERR unknown command 'foo'\";");
    EXPECT(NULL, "-\r\n", "V0r -\"\";");
    EXPECT(NULL, "+OK\r\n-WRONGTYPE x\r\n", "V0r +\"OK\";V0r -\"WRONGTYPE x\";");
    EXPECT(NULL, "+OK", "+more;");
    EXPECT(NULL, "+OK\r", "+more;");
}

static void test_integer(void)
{
    EXPECT(NULL, ":0\r\n", "V0r :0;");
    EXPECT(NULL, ":-0\r\n", "V0r :0;");
    EXPECT(NULL, ":123\r\n", "V0r :123;");
    EXPECT(NULL, ":-42\r\n", "V0r :-42;");
    EXPECT(NULL, ":9223372036854775807\r\n", "V0r :9223372036854775807;");
    EXPECT(NULL, ":-9223372036854775808\r\n", "V0r :-9223372036854775808;");
    EXPECT(NULL, ":9223372036854775808\r\n", "!PROTO@^;");
    EXPECT(NULL, ":-9223372036854775809\r\n", "!PROTO@^;");
    EXPECT(NULL, ":18446744073709551616\r\n", "!PROTO@^;");
    EXPECT(NULL, ":99999999999999999999999\r\n", "!PROTO@^;");
    EXPECT(NULL, ":\r\n", "!PROTO@^;");
    EXPECT(NULL, ":-\r\n", "!PROTO@^;");
    EXPECT(NULL, ":1a\r\n", "!PROTO@2;");
    EXPECT(NULL, ": 1\r\n", "!PROTO@1;");
    EXPECT(NULL, ":1 \r\n", "!PROTO@2;");
    EXPECT(NULL, ":1.0\r\n", "!PROTO@2;");
    EXPECT(NULL, ":0x1\r\n", "!PROTO@^;");
    EXPECT(NULL, ":--1\r\n", "!PROTO@^;");
    EXPECT(NULL, ":1-\r\n", "!PROTO@^;");
    EXPECT(NULL, "+OK\r\n:12x\r\n", "V0r +\"OK\";!PROTO@8;");
}

static void test_bulk(void)
{
    static const char bin[] = "$6\r\na\0b\r\nc\r\n";
    EXPECT(NULL, "$3\r\nfoo\r\n", "V0r $\"foo\";");
    EXPECT(NULL, "$0\r\n\r\n", "V0r $\"\";");
    EXPECT(NULL, "$-1\r\n", "V0r _$;");
    EXPECT_BUF(NULL, bin, sizeof bin - 1, "V0r $\"a\\x00b\\x0d\\x0ac\";");
    EXPECT(NULL, "$2\r\n\r\n\r\n", "V0r $\"\\x0d\\x0a\";");
    EXPECT(NULL, "$1\r\n$\r\n", "V0r $\"$\";");
    EXPECT(NULL, "$10\r\n0123456789\r\n$1\r\nx\r\n", "V0r $\"0123456789\";V0r $\"x\";");
    EXPECT(NULL, "$3\r\nfoo", "+more;");
    EXPECT(NULL, "$3\r\nfoo\r", "+more;");
    /* the payload must be followed by CRLF */
    EXPECT(NULL, "$3\r\nfooX\r\n", "!PROTO@7;");
    EXPECT(NULL, "$3\r\nfoo\n", "!PROTO@7;");
    EXPECT(NULL, "$3\r\nfoo\rX", "!PROTO@8;");
    EXPECT(NULL, "$3\r\nfo\r\n\r\n", "!PROTO@7;");
    EXPECT(NULL, "$-2\r\n", "!PROTO@^;");
    EXPECT(NULL, "$\r\n", "!PROTO@^;");
    EXPECT(NULL, "$x\r\n", "!PROTO@1;");
    EXPECT(NULL, "$1x\r\n", "!PROTO@2;");
    EXPECT(NULL, "$3\n", "!PROTO@2;");
}

static void test_array(void)
{
    EXPECT(NULL, "*2\r\n:1\r\n+a\r\n", "B0 *2;V1 :1;V1 +\"a\";E0r *;");
    EXPECT(NULL, "*0\r\n", "B0 *0;E0r *;");
    EXPECT(NULL, "*-1\r\n", "V0r _*;");
    EXPECT(NULL, "*2\r\n*1\r\n:1\r\n*0\r\n", "B0 *2;B1 *1;V2 :1;E1 *;B1 *0;E1 *;E0r *;");
    EXPECT(NULL, "*3\r\n$-1\r\n*-1\r\n_\r\n", "B0 *3;V1 _$;V1 _*;V1 __;E0r *;");
    EXPECT(NULL, "*1\r\n*1\r\n*1\r\n+deep\r\n", "B0 *1;B1 *1;B2 *1;V3 +\"deep\";E2 *;E1 *;E0r *;");
    EXPECT(NULL, "*0\r\n*0\r\n", "B0 *0;E0r *;B0 *0;E0r *;");
    EXPECT(NULL, "*2\r\n:1\r\n", "B0 *2;V1 :1;+more;");
    EXPECT(NULL, "*-2\r\n", "!PROTO@^;");
    EXPECT(NULL, "*x\r\n", "!PROTO@1;");
    EXPECT(NULL, "*1\r\n@", "B0 *1;!PROTO@4;");
    EXPECT_TREE(NULL, "*2\r\n*1\r\n:1\r\n*0\r\n", "*[*[:1 ] *[] ] ");
}

static void test_null_and_bool(void)
{
    EXPECT(NULL, "_\r\n", "V0r __;");
    EXPECT(NULL, "#t\r\n", "V0r #1;");
    EXPECT(NULL, "#f\r\n", "V0r #0;");
    EXPECT(NULL, "*2\r\n#t\r\n_\r\n", "B0 *2;V1 #1;V1 __;E0r *;");
    EXPECT(NULL, "_x\r\n", "!PROTO@1;");
    EXPECT(NULL, "_nil\r\n", "!PROTO@1;");
    EXPECT(NULL, "_ \r\n", "!PROTO@1;");
    EXPECT(NULL, "#x\r\n", "!PROTO@1;");
    EXPECT(NULL, "#1\r\n", "!PROTO@1;");
    EXPECT(NULL, "#T\r\n", "!PROTO@1;");
    EXPECT(NULL, "#tt\r\n", "!PROTO@^;");
    EXPECT(NULL, "#\r\n", "!PROTO@^;");
}

static void test_double(void)
{
    static const char nul[] = ",1\0" "5\r\n";
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c;

    EXPECT(NULL, ",1.5\r\n", "V0r ,\"1.5\"=1.5;");
    EXPECT(NULL, ",3e10\r\n", "V0r ,\"3e10\"=30000000000;");
    EXPECT(NULL, ",-1.5E-3\r\n", "V0r ,\"-1.5E-3\"=-0.0015;");
    EXPECT(NULL, ",1e+5\r\n", "V0r ,\"1e+5\"=100000;");
    EXPECT(NULL, ",1E-2\r\n", "V0r ,\"1E-2\"=0.01;");
    EXPECT(NULL, ",10\r\n", "V0r ,\"10\"=10;");
    EXPECT(NULL, ",-7\r\n", "V0r ,\"-7\"=-7;");
    EXPECT(NULL, ",0.25\r\n", "V0r ,\"0.25\"=0.25;");
    EXPECT(NULL, ",0\r\n", "V0r ,\"0\"=0;");
    EXPECT(NULL, ",-0.0\r\n", "V0r ,\"-0.0\"=-0;");
    EXPECT(NULL, ",inf\r\n", "V0r ,\"inf\"=inf;");
    EXPECT(NULL, ",-inf\r\n", "V0r ,\"-inf\"=-inf;");
    EXPECT(NULL, ",nan\r\n", "V0r ,\"nan\"=nan;");
    EXPECT(NULL, ",-nan\r\n", "V0r ,\"-nan\"=nan;");
    EXPECT(NULL, ",3.14159265358979323846\r\n",
           "V0r ,\"3.14159265358979323846\"=3.1415926535897931;");
    EXPECT(NULL, ",0.1000000000000000055511151231257827\r\n",
           "V0r ,\"0.1000000000000000055511151231257827\"=0.10000000000000001;");
    EXPECT(NULL, ",1e-300\r\n", "V0r ,\"1e-300\"=1e-300;");

    EXPECT(NULL, ",1.2.3\r\n", "!PROTO@^;");
    EXPECT(NULL, ",abc\r\n", "!PROTO@^;");
    EXPECT(NULL, ",\r\n", "!PROTO@^;");
    EXPECT(NULL, ",1e\r\n", "!PROTO@^;");
    EXPECT_BUF(NULL, nul, sizeof nul - 1, "!PROTO@^;");
    EXPECT(NULL, ",0x10\r\n", "!PROTO@^;");
    EXPECT(NULL, ", 1\r\n", "!PROTO@^;");
    EXPECT(NULL, ",1 \r\n", "!PROTO@^;");
    EXPECT(NULL, ",-\r\n", "!PROTO@^;");
    EXPECT(NULL, ",e5\r\n", "!PROTO@^;");
    EXPECT(NULL, ",1e5.5\r\n", "!PROTO@^;");
    EXPECT(NULL, ",infinity\r\n", "!PROTO@^;");
    EXPECT(NULL, ",nan(1)\r\n", "!PROTO@^;");

    /* the sign of zero and of infinity survive */
    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S(",-0.0\r\n"), &c, &ev), 1);
    CHECK(ev.type == RLK_RESP_DOUBLE && ev.dbl == 0.0 && signbit(ev.dbl));
    CHECK_EQ_INT(rlk_resp_next(&p, S(",-inf\r\n"), &c, &ev), 1);
    CHECK(isinf(ev.dbl) && ev.dbl < 0);
    CHECK_EQ_INT(rlk_resp_next(&p, S(",nan\r\n"), &c, &ev), 1);
    CHECK(isnan(ev.dbl));
    rlk_resp_parser_free(&p);
}

static void test_bignum(void)
{
    EXPECT(NULL, "(3492890328409238509324850943850943825024385\r\n",
           "V0r (\"3492890328409238509324850943850943825024385\";");
    EXPECT(NULL, "(-123\r\n", "V0r (\"-123\";");
    EXPECT(NULL, "(0\r\n", "V0r (\"0\";");
    EXPECT(NULL, "(\r\n", "!PROTO@^;");
    EXPECT(NULL, "(-\r\n", "!PROTO@^;");
    EXPECT(NULL, "(12a\r\n", "!PROTO@3;");
    EXPECT(NULL, "(1.5\r\n", "!PROTO@2;");
    EXPECT(NULL, "( 1\r\n", "!PROTO@1;");
    EXPECT(NULL, "(1e5\r\n", "!PROTO@2;");
}

static void test_blob_error(void)
{
    EXPECT(NULL, "!21\r\nSYNTAX invalid syntax\r\n", "V0r !\"SYNTAX invalid syntax\";");
    EXPECT(NULL, "!0\r\n\r\n", "V0r !\"\";");
    EXPECT(NULL, "!4\r\na\r\nb\r\n", "V0r !\"a\\x0d\\x0ab\";");
    EXPECT(NULL, "!-1\r\n", "!PROTO@^;");
    EXPECT(NULL, "!3\r\nabcd\r\n", "!PROTO@7;");
}

static void test_verbatim(void)
{
    static const char in[] = "=15\r\ntxt:Some string\r\n";
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c = 0;

    EXPECT(NULL, "=15\r\ntxt:Some string\r\n", "V0r =txt\"Some string\";");
    EXPECT(NULL, "=4\r\nmkd:\r\n", "V0r =mkd\"\";");
    EXPECT(NULL, "=6\r\ntxt:\r\n\r\n", "V0r =txt\"\\x0d\\x0a\";");
    EXPECT(NULL, "=3\r\ntxt\r\n", "!PROTO@^;");
    EXPECT(NULL, "=0\r\n\r\n", "!PROTO@^;");
    EXPECT(NULL, "=5\r\ntxtxx\r\n", "!PROTO@^;");
    EXPECT(NULL, "=-1\r\n", "!PROTO@^;");

    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, in, sizeof in - 1, &c, &ev), 1);
    CHECK_EQ_INT(c, sizeof in - 1);
    CHECK(ev.type == RLK_RESP_VERBATIM);
    CHECK_EQ_STR(ev.format, "txt"); /* NUL-terminated */
    CHECK(ev.str == in + 9);
    CHECK_EQ_INT(ev.len, 11);
    rlk_resp_parser_free(&p);
}

static void test_map_set_push(void)
{
    EXPECT(NULL, "%2\r\n+first\r\n:1\r\n$6\r\nsecond\r\n#t\r\n",
           "B0 %2;V1 +\"first\";V1 :1;V1 $\"second\";V1 #1;E0r %;");
    EXPECT(NULL, "%0\r\n", "B0 %0;E0r %;");
    EXPECT(NULL, "%1\r\n*1\r\n:1\r\n%1\r\n+a\r\n+b\r\n",
           "B0 %1;B1 *1;V2 :1;E1 *;B1 %1;V2 +\"a\";V2 +\"b\";E1 %;E0r %;");
    EXPECT(NULL, "%1\r\n+a\r\n", "B0 %1;V1 +\"a\";+more;");
    EXPECT(NULL, "~2\r\n+a\r\n:1\r\n", "B0 ~2;V1 +\"a\";V1 :1;E0r ~;");
    EXPECT(NULL, "~0\r\n", "B0 ~0;E0r ~;");
    EXPECT(NULL, ">3\r\n$7\r\nmessage\r\n$3\r\nch1\r\n$2\r\nhi\r\n",
           "B0 >3;V1 $\"message\";V1 $\"ch1\";V1 $\"hi\";E0r >;");
    EXPECT_TREE(NULL, "%1\r\n*1\r\n:1\r\n%1\r\n+a\r\n+b\r\n", "%[*[:1 ] %[+\"a\" +\"b\" ] ] ");
    EXPECT(NULL, "%x\r\n", "!PROTO@1;");
}

static void test_attribute(void)
{
    EXPECT(NULL, "|1\r\n+ttl\r\n:3600\r\n+OK\r\n", "B0 |1;V1 +\"ttl\";V1 :3600;E0 |;V0r +\"OK\";");
    EXPECT_TREE(NULL, "|1\r\n+ttl\r\n:3600\r\n+OK\r\n", "|[+\"ttl\" :3600 ]+\"OK\" ");
    /* not an element of its parent */
    EXPECT(NULL, "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n",
           "B0 *2;B1 |1;V2 +\"a\";V2 +\"b\";E1 |;V1 :1;V1 :2;E0r *;");
    EXPECT_TREE(NULL, "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", "*[|[+\"a\" +\"b\" ]:1 :2 ] ");
    EXPECT(NULL, "*1\r\n|1\r\n+a\r\n+b\r\n", "B0 *1;B1 |1;V2 +\"a\";V2 +\"b\";E1 |;+more;");
    EXPECT(NULL, "|1\r\n+a\r\n+b\r\n*1\r\n:1\r\n", "B0 |1;V1 +\"a\";V1 +\"b\";E0 |;B0 *1;V1 :1;E0r *;");
    EXPECT(NULL, "|1\r\n+a\r\n*1\r\n:1\r\n:2\r\n", "B0 |1;V1 +\"a\";B1 *1;V2 :1;E1 *;E0 |;V0r :2;");
    EXPECT(NULL, "%1\r\n+k\r\n|1\r\n+a\r\n+b\r\n:1\r\n",
           "B0 %1;V1 +\"k\";B1 |1;V2 +\"a\";V2 +\"b\";E1 |;V1 :1;E0r %;");
    EXPECT(NULL, "|1\r\n+a\r\n+b\r\n", "B0 |1;V1 +\"a\";V1 +\"b\";E0 |;+more;");
    EXPECT(NULL, "|0\r\n:1\r\n", "B0 |0;E0 |;V0r :1;");
    EXPECT(NULL, "|1\r\n+a\r\n+b\r\n$-1\r\n", "B0 |1;V1 +\"a\";V1 +\"b\";E0 |;V0r _$;");
    EXPECT(NULL, "|1\r\n+k\r\n+v\r\n$?\r\n;1\r\nz\r\n;0\r\n",
           "B0 |1;V1 +\"k\";V1 +\"v\";E0 |;B0s $-1;C0 $\"z\";E0rs $;");
    EXPECT_TREE(NULL, "|1\r\n+k\r\n+v\r\n$?\r\n;1\r\nz\r\n;0\r\n", "|[+\"k\" +\"v\" ]$\"z\" ");
    EXPECT(NULL, "|-1\r\n", "!PROTO@^;");
}

static void test_streamed_string(void)
{
    EXPECT(NULL, "$?\r\n;4\r\nHell\r\n;1\r\no\r\n;0\r\n", "B0s $-1;C0 $\"Hell\";C0 $\"o\";E0rs $;");
    EXPECT_TREE(NULL, "$?\r\n;4\r\nHell\r\n;1\r\no\r\n;0\r\n", "$\"Hello\" ");
    EXPECT(NULL, "$?\r\n;0\r\n", "B0s $-1;E0rs $;");
    EXPECT(NULL, "$?\r\n;2\r\n\r\n\r\n;0\r\n", "B0s $-1;C0 $\"\\x0d\\x0a\";E0rs $;");
    EXPECT(NULL, "*2\r\n$?\r\n;1\r\na\r\n;0\r\n:1\r\n", "B0 *2;B1s $-1;C1 $\"a\";E1s $;V1 :1;E0r *;");
    EXPECT(NULL, "$?\r\n;1\r\na\r\n", "B0s $-1;C0 $\"a\";+more;");
    EXPECT(NULL, "$?\r\n+a\r\n", "B0s $-1;!PROTO@4;");
    EXPECT(NULL, "$?\r\n;-1\r\n", "B0s $-1;!PROTO@^;");
    EXPECT(NULL, "$?\r\n;x\r\n", "B0s $-1;!PROTO@5;");
    EXPECT(NULL, "$?\r\n;1\r\nab\r\n", "B0s $-1;!PROTO@9;");
    EXPECT(NULL, "$?x\r\n", "!PROTO@^;");
    /* ';' outside a streamed string */
    EXPECT(NULL, ";3\r\nabc\r\n", "!PROTO@0;");
    EXPECT(NULL, "*1\r\n;1\r\na\r\n", "B0 *1;!PROTO@4;");
    EXPECT(NULL, "*?\r\n;1\r\na\r\n", "B0s *-1;!PROTO@4;");
}

static void test_streamed_aggregates(void)
{
    EXPECT(NULL, "*?\r\n:1\r\n:2\r\n.\r\n", "B0s *-1;V1 :1;V1 :2;E0rs *;");
    EXPECT_TREE(NULL, "*?\r\n:1\r\n:2\r\n.\r\n", "*[:1 :2 ] ");
    EXPECT(NULL, "*?\r\n.\r\n", "B0s *-1;E0rs *;");
    EXPECT(NULL, "%?\r\n+a\r\n:1\r\n.\r\n", "B0s %-1;V1 +\"a\";V1 :1;E0rs %;");
    EXPECT_TREE(NULL, "%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n", "%[+\"a\" :1 +\"b\" :2 ] ");
    EXPECT(NULL, "~?\r\n+x\r\n.\r\n", "B0s ~-1;V1 +\"x\";E0rs ~;");
    EXPECT(NULL, "*?\r\n*?\r\n.\r\n*1\r\n:1\r\n.\r\n", "B0s *-1;B1s *-1;E1s *;B1 *1;V2 :1;E1 *;E0rs *;");
    EXPECT(NULL, "*1\r\n*?\r\n.\r\n", "B0 *1;B1s *-1;E1s *;E0r *;");
    EXPECT(NULL, "*?\r\n:1\r\n", "B0s *-1;V1 :1;+more;");
    /* '.' outside a streamed aggregate */
    EXPECT(NULL, ".\r\n", "!PROTO@0;");
    EXPECT(NULL, "*1\r\n.\r\n", "B0 *1;!PROTO@4;");
    EXPECT(NULL, "+OK\r\n.\r\n", "V0r +\"OK\";!PROTO@5;");
    EXPECT(NULL, "%1\r\n+a\r\n.\r\n", "B0 %1;V1 +\"a\";!PROTO@8;");
    /* a streamed map that ends after a key */
    EXPECT(NULL, "%?\r\n+a\r\n.\r\n", "B0s %-1;V1 +\"a\";!PROTO@8;");
    EXPECT(NULL, "%?\r\n+a\r\n:1\r\n+b\r\n.\r\n", "B0s %-1;V1 +\"a\";V1 :1;V1 +\"b\";!PROTO@16;");
    EXPECT(NULL, "*?\r\n.x\r\n", "B0s *-1;!PROTO@^;");
    /* an attribute must be followed by its value */
    EXPECT(NULL, "*?\r\n|1\r\n+a\r\n+b\r\n.\r\n", "B0s *-1;B1 |1;V2 +\"a\";V2 +\"b\";E1 |;!PROTO@16;");
}

/* ------------------------------------------------------------------ */
/* Strictness                                                           */

static void test_unknown_type_byte(void)
{
    static const char bytes[] = "@xX ?\r\n\t0\x7f\x80\xff";
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c = 99, i;
    uint64_t off = 99;
    const char *why = NULL;

    /* seen as soon as it is seen: no line end needed */
    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, "@", 1, &c, &ev), RLK_ERR_PROTO);
    CHECK_EQ_INT(c, 0);
    CHECK_EQ_INT(rlk_resp_parser_error(&p, &off, &why), RLK_ERR_PROTO);
    CHECK_EQ_U64(off, 0);
    CHECK(why != NULL && why[0] != '\0');
    rlk_resp_parser_free(&p);

    EXPECT(NULL, "@", "!PROTO@0;");
    EXPECT(NULL, "@foo\r\n", "!PROTO@0;");
    EXPECT(NULL, "+OK\r\n@", "V0r +\"OK\";!PROTO@5;");
    EXPECT(NULL, "+OK\r\n:1\r\n@foo\r\n", "V0r +\"OK\";V0r :1;!PROTO@9;");
    EXPECT(NULL, "*2\r\n:1\r\n@", "B0 *2;V1 :1;!PROTO@8;");
    EXPECT(NULL, "\r\n", "!PROTO@0;");
    EXPECT_BUF(NULL, "\0", 1, "!PROTO@0;");
    for (i = 0; i < sizeof bytes - 1; i++)
        check_parse_at(__FILE__, __LINE__, NULL, &bytes[i], 1, "!PROTO@0;", NULL);
}

static void test_line_endings(void)
{
    EXPECT(NULL, "+OK\n", "!PROTO@3;");
    EXPECT(NULL, "+a\nb\r\n", "!PROTO@2;");
    EXPECT(NULL, "+a\rb\r\n", "!PROTO@^;");
    EXPECT(NULL, "-E\rr\r\n", "!PROTO@^;");
    EXPECT(NULL, ":1\n", "!PROTO@2;");
    EXPECT(NULL, "*1\r\n:1\n", "B0 *1;!PROTO@6;");
    EXPECT(NULL, "*1\n", "!PROTO@2;");
    EXPECT(NULL, "_\n", "!PROTO@1;");
    EXPECT(NULL, "+OK\r\r\n", "!PROTO@^;");
}

static void test_bad_lengths(void)
{
    /* below -1, and -1 where no null form exists */
    EXPECT(NULL, "$-2\r\n", "!PROTO@^;");
    EXPECT(NULL, "*-2\r\n", "!PROTO@^;");
    EXPECT(NULL, "$-10\r\n", "!PROTO@^;");
    EXPECT(NULL, "*-9223372036854775808\r\n", "!PROTO@^;");
    EXPECT(NULL, "%-1\r\n", "!PROTO@^;");
    EXPECT(NULL, "~-1\r\n", "!PROTO@^;");
    EXPECT(NULL, ">-1\r\n", "!PROTO@^;");
    EXPECT(NULL, "|-1\r\n", "!PROTO@^;");
    EXPECT(NULL, "!-1\r\n", "!PROTO@^;");
    EXPECT(NULL, "=-1\r\n", "!PROTO@^;");
    EXPECT(NULL, "*1 \r\n", "!PROTO@2;");
    EXPECT(NULL, "$99999999999999999999999\r\n", "!^@^;");
    EXPECT(NULL, "*99999999999999999999999\r\n", "!^@^;");
}

static void test_sticky_error_and_reset(void)
{
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c = 0;
    uint64_t off = 99;
    rlk_resp_limits l = limits(2, 0, 0);

    rlk_resp_parser_init(&p, &l);
    CHECK_EQ_INT(rlk_resp_parser_error(&p, NULL, NULL), 0);
    CHECK_EQ_INT(rlk_resp_next(&p, S("+OK\r\n"), &c, &ev), 1);
    CHECK_EQ_INT(c, 5);
    CHECK_EQ_INT(rlk_resp_next(&p, S("@"), &c, &ev), RLK_ERR_PROTO);
    c = 99;
    CHECK_EQ_INT(rlk_resp_next(&p, S("+OK\r\n"), &c, &ev), RLK_ERR_PROTO);
    CHECK_EQ_INT(c, 0);
    CHECK_EQ_INT(rlk_resp_next(&p, S(":1\r\n"), &c, &ev), RLK_ERR_PROTO);
    CHECK_EQ_INT(rlk_resp_parser_error(&p, &off, NULL), RLK_ERR_PROTO);
    CHECK_EQ_U64(off, 5);

    rlk_resp_parser_reset(&p);
    CHECK_EQ_INT(rlk_resp_parser_error(&p, NULL, NULL), 0);
    CHECK(rlk_resp_parser_idle(&p));
    CHECK_EQ_INT(rlk_resp_next(&p, S("+OK\r\n"), &c, &ev), 1);
    CHECK(ev.kind == RLK_EV_VALUE && ev.type == RLK_RESP_SIMPLE && ev.len == 2);
    /* offsets count again from the reset */
    CHECK_EQ_INT(rlk_resp_next(&p, S("@"), &c, &ev), RLK_ERR_PROTO);
    CHECK_EQ_INT(rlk_resp_parser_error(&p, &off, NULL), RLK_ERR_PROTO);
    CHECK_EQ_U64(off, 5);

    /* limit errors are sticky too, and reset keeps the limits */
    rlk_resp_parser_reset(&p);
    CHECK_EQ_INT(rlk_resp_next(&p, S("*1\r\n*1\r\n*1\r\n"), &c, &ev), 1);
    CHECK_EQ_INT(rlk_resp_next(&p, S("*1\r\n*1\r\n"), &c, &ev), 1);
    CHECK_EQ_INT(rlk_resp_next(&p, S("*1\r\n"), &c, &ev), RLK_ERR_LIMIT);
    CHECK_EQ_INT(rlk_resp_next(&p, S("*1\r\n"), &c, &ev), RLK_ERR_LIMIT);
    CHECK_EQ_INT(rlk_resp_parser_error(&p, &off, NULL), RLK_ERR_LIMIT);
    CHECK_EQ_U64(off, 8);
    rlk_resp_parser_reset(&p);
    CHECK_EQ_INT(rlk_resp_next(&p, S(":7\r\n"), &c, &ev), 1);
    CHECK_EQ_INT(ev.integer, 7);
    rlk_resp_parser_free(&p);

    /* and through the tree API */
    {
        rlk_resp_arena a;
        rlk_resp_reader r;
        rlk_resp_value *v = NULL;
        rlk_resp_arena_init(&a, NULL, 0, 0);
        rlk_resp_reader_init(&r, &a, NULL);
        CHECK_EQ_INT(rlk_resp_read(&r, S("#x\r\n"), &c, &v), RLK_ERR_PROTO);
        CHECK_EQ_INT(rlk_resp_read(&r, S("+OK\r\n"), &c, &v), RLK_ERR_PROTO);
        CHECK_EQ_INT(c, 0);
        rlk_resp_reader_reset(&r);
        CHECK_EQ_INT(rlk_resp_read(&r, S("*1\r\n+OK\r\n"), &c, &v), 1);
        CHECK_EQ_INT(c, 9);
        CHECK(v && v->type == RLK_RESP_ARRAY && v->len == 1);
        /* a partial reply is forgotten too */
        rlk_resp_arena_reset(&a);
        CHECK_EQ_INT(rlk_resp_read(&r, S("*2\r\n:1\r\n"), &c, &v), 0);
        rlk_resp_reader_reset(&r);
        CHECK_EQ_INT(rlk_resp_read(&r, S(":5\r\n"), &c, &v), 1);
        CHECK(v && v->type == RLK_RESP_INTEGER && v->integer == 5);
        rlk_resp_reader_free(&r);
        rlk_resp_arena_free(&a);
    }
}

/* ------------------------------------------------------------------ */
/* Limits                                                               */

/* n nested arrays of one element around ":1", as input and expectation. */
static void nested(size_t n, char **in, size_t *len, dstr *want, int over_at)
{
    size_t i;
    *in = repeat("*1\r\n", n, ":1\r\n", len);
    for (i = 0; i < n && (over_at < 0 || i < (size_t)over_at); i++)
        ds_printf(want, "B%zu *1;", i);
    if (over_at >= 0) {
        ds_printf(want, "!LIMIT@%zu;", (size_t)over_at * 4);
        return;
    }
    ds_printf(want, "V%zu :1;", n);
    for (i = n; i-- > 0;) ds_printf(want, i ? "E%zu *;" : "E%zur *;", i);
}

static void test_limit_depth_default(void)
{
    char *in;
    size_t len;
    dstr want = {0};

    nested(1024, &in, &len, &want, -1);
    EXPECT_BUF(NULL, in, len, ds_str(&want));
    free(in);
    ds_free(&want);

    nested(1025, &in, &len, &want, 1024);
    EXPECT_BUF(NULL, in, len, ds_str(&want));
    free(in);
    ds_free(&want);
}

static void test_limit_depth_custom(void)
{
    rlk_resp_limits l3 = limits(3, 0, 0), l1 = limits(1, 0, 0), l20 = limits(20, 0, 0);
    char *in;
    size_t len;
    dstr want = {0};

    EXPECT(&l3, "*1\r\n*1\r\n*1\r\n:1\r\n", "B0 *1;B1 *1;B2 *1;V3 :1;E2 *;E1 *;E0r *;");
    EXPECT(&l3, "*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", "B0 *1;B1 *1;B2 *1;!LIMIT@12;");
    EXPECT(&l3, "%1\r\n+k\r\n~1\r\n*1\r\n*1\r\n:1\r\n", "B0 %1;V1 +\"k\";B1 ~1;B2 *1;!LIMIT@16;");
    /* attributes count */
    EXPECT(&l1, "|1\r\n+a\r\n+b\r\n:1\r\n", "B0 |1;V1 +\"a\";V1 +\"b\";E0 |;V0r :1;");
    EXPECT(&l1, "*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", "B0 *1;!LIMIT@4;");
    EXPECT(&l1, "|1\r\n+a\r\n*1\r\n:1\r\n:1\r\n", "B0 |1;V1 +\"a\";!LIMIT@8;");
    EXPECT(&l1, "*?\r\n*?\r\n.\r\n.\r\n", "B0s *-1;!LIMIT@4;");
    EXPECT(&l1, "*1\r\n:1\r\n", "B0 *1;V1 :1;E0r *;");

    /* a limit above the inline frames */
    nested(20, &in, &len, &want, -1);
    EXPECT_BUF(&l20, in, len, ds_str(&want));
    free(in);
    ds_free(&want);
    nested(21, &in, &len, &want, 20);
    EXPECT_BUF(&l20, in, len, ds_str(&want));
    free(in);
    ds_free(&want);
}

static void test_limit_bulk(void)
{
    rlk_resp_limits l10 = limits(0, 10, 0);
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c = 99;

    /* the default, 512 MiB: a header is accepted as a header */
    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S("$536870912\r\n"), &c, &ev), 0);
    CHECK(c == 0 || c == 12);
    rlk_resp_parser_free(&p);
    EXPECT(NULL, "$536870912\r\n", "+more;");
    EXPECT(NULL, "$536870913\r\n", "!LIMIT@^;");
    EXPECT(NULL, "!536870913\r\n", "!LIMIT@^;");
    EXPECT(NULL, "=536870913\r\n", "!LIMIT@^;");
    EXPECT(NULL, "$?\r\n;536870912\r\n", "B0s $-1;+more;");
    EXPECT(NULL, "$?\r\n;536870913\r\n", "B0s $-1;!LIMIT@^;");

    /* a custom limit, at its boundary */
    EXPECT(&l10, "$10\r\n0123456789\r\n", "V0r $\"0123456789\";");
    EXPECT(&l10, "$11\r\n", "!LIMIT@^;");
    EXPECT(&l10, "!10\r\n0123456789\r\n", "V0r !\"0123456789\";");
    EXPECT(&l10, "!11\r\n", "!LIMIT@^;");
    EXPECT(&l10, "=10\r\ntxt:012345\r\n", "V0r =txt\"012345\";");
    EXPECT(&l10, "=11\r\n", "!LIMIT@^;");
    /* lines */
    EXPECT(&l10, "+0123456789\r\n", "V0r +\"0123456789\";");
    EXPECT(&l10, "+0123456789A\r\n", "!LIMIT@^;");
    EXPECT(&l10, "-0123456789\r\n", "V0r -\"0123456789\";");
    EXPECT(&l10, "-0123456789A\r\n", "!LIMIT@^;");
    EXPECT(&l10, "(1234567890\r\n", "V0r (\"1234567890\";");
    EXPECT(&l10, "(12345678901\r\n", "!LIMIT@^;");
    EXPECT(&l10, ",1.00000000\r\n", "V0r ,\"1.00000000\"=1;");
    EXPECT(&l10, ",1.000000000\r\n", "!LIMIT@^;");
    /* a line with no end in sight is refused once it is longer than any
     * valid line, its CRLF included: the bytes held stay bounded */
    EXPECT(&l10, "+0123456789ABC", "!LIMIT@^;");
    EXPECT(&l10, "-0123456789ABCDEFGHIJ", "!LIMIT@^;");
    /* a streamed string counts all its chunks */
    EXPECT(&l10, "$?\r\n;6\r\naaaaaa\r\n;4\r\nbbbb\r\n;0\r\n", "B0s $-1;C0 $\"aaaaaa\";C0 $\"bbbb\";E0rs $;");
    EXPECT(&l10, "$?\r\n;6\r\naaaaaa\r\n;5\r\nbbbbb\r\n;0\r\n", "B0s $-1;C0 $\"aaaaaa\";!LIMIT@^;");
    EXPECT(&l10, "$?\r\n;11\r\n", "B0s $-1;!LIMIT@^;");
    /* the count restarts with each streamed string */
    EXPECT(&l10, "*2\r\n$?\r\n;10\r\n0123456789\r\n;0\r\n$?\r\n;10\r\n0123456789\r\n;0\r\n",
           "B0 *2;B1s $-1;C1 $\"0123456789\";E1s $;B1s $-1;C1 $\"0123456789\";E1s $;E0r *;");
}

static void test_limit_elements(void)
{
    rlk_resp_limits l3 = limits(0, 0, 3), l1 = limits(0, 0, 1);
    dstr d = {0};

    EXPECT(NULL, "*4294967295\r\n", "B0 *4294967295;+more;");
    EXPECT(NULL, "*4294967296\r\n", "!LIMIT@^;");
    EXPECT(NULL, "%4294967295\r\n", "B0 %4294967295;+more;");
    EXPECT(NULL, "%4294967296\r\n", "!LIMIT@^;");
    EXPECT(NULL, "~4294967296\r\n", "!LIMIT@^;");
    EXPECT(NULL, ">4294967296\r\n", "!LIMIT@^;");
    EXPECT(NULL, "|4294967296\r\n", "!LIMIT@^;");

    EXPECT(&l3, "*3\r\n:1\r\n:2\r\n:3\r\n", "B0 *3;V1 :1;V1 :2;V1 :3;E0r *;");
    EXPECT(&l3, "*4\r\n", "!LIMIT@^;");
    EXPECT(&l3, "%3\r\n", "B0 %3;+more;"); /* pairs */
    EXPECT(&l3, "%4\r\n", "!LIMIT@^;");
    EXPECT(&l3, "~4\r\n", "!LIMIT@^;");
    EXPECT(&l3, ">4\r\n", "!LIMIT@^;");
    EXPECT(&l3, "|4\r\n", "!LIMIT@^;");
    EXPECT(&l3, "*1\r\n*4\r\n", "B0 *1;!LIMIT@^;");
    /* the running count of streamed aggregates */
    EXPECT(&l3, "*?\r\n:1\r\n:2\r\n:3\r\n.\r\n", "B0s *-1;V1 :1;V1 :2;V1 :3;E0rs *;");
    EXPECT(&l3, "*?\r\n:1\r\n:2\r\n:3\r\n:4\r\n.\r\n", "B0s *-1;V1 :1;V1 :2;V1 :3;!LIMIT@16;");
    EXPECT(&l3, "~?\r\n:1\r\n:2\r\n:3\r\n:4\r\n.\r\n", "B0s ~-1;V1 :1;V1 :2;V1 :3;!LIMIT@16;");
    EXPECT(&l3, "%?\r\n:1\r\n:1\r\n:2\r\n:2\r\n:3\r\n:3\r\n.\r\n",
           "B0s %-1;V1 :1;V1 :1;V1 :2;V1 :2;V1 :3;V1 :3;E0rs %;");
    /* the fourth pair: refused at its key or at its value */
    run_events(&l3, S("%?\r\n:1\r\n:1\r\n:2\r\n:2\r\n:3\r\n:3\r\n:4\r\n:4\r\n.\r\n"),
               (plan){64, 64}, &d, NULL);
    CHECK_MSG(wild_match(ds_str(&d), "B0s %-1;V1 :1;V1 :1;V1 :2;V1 :2;V1 :3;V1 :3;!LIMIT@28;") ||
              wild_match(ds_str(&d), "B0s %-1;V1 :1;V1 :1;V1 :2;V1 :2;V1 :3;V1 :3;V1 :4;!LIMIT@32;"),
              "streamed map over 3 pairs: %s", ds_str(&d));
    ds_free(&d);
    /* an attribute is not an element */
    EXPECT(&l1, "*?\r\n|1\r\n+a\r\n+b\r\n:1\r\n.\r\n", "B0s *-1;B1 |1;V2 +\"a\";V2 +\"b\";E1 |;V1 :1;E0rs *;");
    EXPECT(&l1, "*1\r\n|1\r\n+a\r\n+b\r\n:1\r\n", "B0 *1;B1 |1;V2 +\"a\";V2 +\"b\";E1 |;V1 :1;E0r *;");
    EXPECT(&l1, "|2\r\n", "!LIMIT@^;");
    /* the count restarts with each streamed aggregate */
    EXPECT(&l1, "*?\r\n*?\r\n:1\r\n.\r\n.\r\n", "B0s *-1;B1s *-1;V2 :1;E1s *;E0rs *;");
}

static void test_zero_limits_mean_default(void)
{
    rlk_resp_limits z;
    rlk_resp_limits d;
    char *in;
    size_t len;
    dstr want = {0};

    memset(&z, 0, sizeof z);
    rlk_resp_limits_default(&d);
    CHECK_EQ_U64(d.max_depth, RLK_RESP_DEFAULT_MAX_DEPTH);
    CHECK_EQ_U64(d.max_bulk, RLK_RESP_DEFAULT_MAX_BULK);
    CHECK_EQ_U64(d.max_elements, RLK_RESP_DEFAULT_MAX_ELEMENTS);
    EXPECT(&z, "*4294967295\r\n", "B0 *4294967295;+more;");
    EXPECT(&z, "*4294967296\r\n", "!LIMIT@^;");
    EXPECT(&z, "$536870912\r\n", "+more;");
    EXPECT(&z, "$536870913\r\n", "!LIMIT@^;");
    nested(1025, &in, &len, &want, 1024);
    EXPECT_BUF(&z, in, len, ds_str(&want));
    free(in);
    ds_free(&want);
}

/* A declared size is never a basis for an allocation. */
static void test_declared_sizes_cost_nothing(void)
{
    rlk_resp_parser p;
    rlk_resp_event ev;
    rlk_resp_arena a;
    rlk_resp_reader r;
    rlk_resp_value *v = NULL;
    rlk_resp_limits unlimited = limits(0, UINT64_MAX, UINT64_MAX);
    size_t c = 0;

    counting_on(0);
    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S("$536870912\r\nabc"), &c, &ev), 0);
    CHECK_MSG(ca.total < 64 * 1024, "event API: %zu bytes allocated", ca.total);
    rlk_resp_parser_free(&p);

    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S("*4294967295\r\n"), &c, &ev), 1);
    CHECK(ev.kind == RLK_EV_BEGIN && ev.integer == 4294967295LL);
    CHECK_EQ_INT(rlk_resp_next(&p, S(":1\r\n"), &c, &ev), 1);
    CHECK_MSG(ca.total < 64 * 1024, "event API: %zu bytes allocated", ca.total);
    rlk_resp_parser_free(&p);

    rlk_resp_arena_init(&a, NULL, 0, 0);
    rlk_resp_reader_init(&r, &a, NULL);
    CHECK_EQ_INT(rlk_resp_read(&r, S("*4294967295\r\n"), &c, &v), 0);
    CHECK_EQ_INT(rlk_resp_read(&r, S("*4294967295\r\n:1\r\n:2\r\n"), &c, &v), 0);
    CHECK_EQ_INT(c, 0);
    CHECK_MSG(ca.total < 64 * 1024, "tree API, array: %zu bytes allocated", ca.total);
    rlk_resp_reader_free(&r);
    rlk_resp_arena_free(&a);

    rlk_resp_arena_init(&a, NULL, 0, 0);
    rlk_resp_reader_init(&r, &a, NULL);
    CHECK_EQ_INT(rlk_resp_read(&r, S("$536870912\r\nabc"), &c, &v), 0);
    CHECK_MSG(ca.total < 64 * 1024, "tree API, bulk: %zu bytes allocated", ca.total);
    rlk_resp_reader_free(&r);
    rlk_resp_arena_free(&a);

    rlk_resp_arena_init(&a, NULL, 0, 0);
    rlk_resp_reader_init(&r, &a, NULL);
    CHECK_EQ_INT(rlk_resp_read(&r, S("%4294967295\r\n+a\r\n"), &c, &v), 0);
    CHECK_MSG(ca.total < 64 * 1024, "tree API, map: %zu bytes allocated", ca.total);
    rlk_resp_reader_free(&r);
    rlk_resp_arena_free(&a);

    /* with no limits at all */
    rlk_resp_arena_init(&a, NULL, 0, 0);
    rlk_resp_reader_init(&r, &a, &unlimited);
    CHECK_EQ_INT(rlk_resp_read(&r, S("*9223372036854775807\r\n:1\r\n"), &c, &v), 0);
    CHECK_EQ_INT(rlk_resp_read(&r, S("*9223372036854775807\r\n:1\r\n:2\r\n"), &c, &v), 0);
    CHECK_MSG(ca.total < 64 * 1024, "tree API, unlimited: %zu bytes allocated", ca.total);
    rlk_resp_reader_free(&r);
    rlk_resp_arena_free(&a);

    CHECK_EQ_INT(ca.live, 0);
    counting_off();
}

/* ------------------------------------------------------------------ */
/* Incremental feeding                                                   */

static const char rich[] =
    "+OK\r\n"
    "-ERR wrong type\r\n"
    ":0\r\n"
    ":-9223372036854775808\r\n"
    "$5\r\nhe\0\r\n\r\n"
    "$0\r\n\r\n"
    "$-1\r\n"
    "*-1\r\n"
    "*0\r\n"
    "_\r\n"
    "#t\r\n"
    ",-1.5e-3\r\n"
    ",inf\r\n"
    "(-123456789012345678901234567890\r\n"
    "!10\r\nERR a\r\nb c\r\n"
    "=9\r\ntxt:hello\r\n"
    "*3\r\n:1\r\n*2\r\n+a\r\n$1\r\nb\r\n%1\r\n+k\r\n~2\r\n#f\r\n_\r\n"
    "|1\r\n+ttl\r\n:3600\r\n%2\r\n+x\r\n,1.5\r\n+y\r\n|1\r\n+meta\r\n_\r\n#t\r\n"
    ">3\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nkey\r\n_\r\n"
    "$?\r\n;3\r\nabc\r\n;2\r\n\r\n\r\n;0\r\n"
    "*?\r\n:1\r\n$?\r\n;1\r\nx\r\n;0\r\n%?\r\n+a\r\n~?\r\n.\r\n.\r\n*0\r\n.\r\n"
    "|1\r\n+k\r\n+v\r\n$?\r\n;1\r\nz\r\n;0\r\n"
    "*2\r\n|1\r\n+a\r\n*?\r\n.\r\n*1\r\n|1\r\n+b\r\n+c\r\n:7\r\n:8\r\n"
    "+last\r\n";

static const char rich_tree[] =
    "+\"OK\" "
    "-\"ERR wrong type\" "
    ":0 "
    ":-9223372036854775808 "
    "$\"he\\x00\\x0d\\x0a\" "
    "$\"\" "
    "_$ "
    "_* "
    "*[] "
    "__ "
    "#1 "
    ",\"-1.5e-3\"=-0.0015 "
    ",\"inf\"=inf "
    "(\"-123456789012345678901234567890\" "
    "!\"ERR a\\x0d\\x0ab c\" "
    "=txt\"hello\" "
    "*[:1 *[+\"a\" $\"b\" ] %[+\"k\" ~[#0 __ ] ] ] "
    "|[+\"ttl\" :3600 ]%[+\"x\" ,\"1.5\"=1.5 +\"y\" |[+\"meta\" __ ]#1 ] "
    ">[$\"invalidate\" *[$\"key\" ] __ ] "
    "$\"abc\\x0d\\x0a\" "
    "*[:1 $\"x\" %[+\"a\" ~[] ] *[] ] "
    "|[+\"k\" +\"v\" ]$\"z\" "
    "*[|[+\"a\" *[] ]*[|[+\"b\" +\"c\" ]:7 ] :8 ] "
    "+\"last\" ";

static void test_incremental_rich(void)
{
    dstr e = {0};
    size_t i, n = 0;

    check_parse_at(__FILE__, __LINE__, NULL, rich, sizeof rich - 1, NULL, rich_tree);
    /* 24 replies, each ended by one event flagged as the reply's end */
    run_events(NULL, rich, sizeof rich - 1, (plan){sizeof rich - 1, 1}, &e, NULL);
    for (i = 0; i + 1 < e.n; i++)
        if (e.p[i] >= '0' && e.p[i] <= '9' && e.p[i + 1] == 'r') n++;
    CHECK_EQ_INT(n, 24);
    ds_free(&e);
}

static void test_incremental_deep_mixed(void)
{
    /* nesting beyond the inline frames, so the stack grows mid-reply */
    char *in;
    size_t len;
    dstr want = {0};
    size_t i;

    in = repeat("*2\r\n|1\r\n+k\r\n+v\r\n", 20, "$?\r\n;1\r\nx\r\n;0\r\n", &len);
    {
        char *full = malloc(len + 20 * 4 + 1);
        memcpy(full, in, len);
        for (i = 0; i < 20; i++) memcpy(full + len + i * 4, ":9\r\n", 4);
        len += 80;
        free(in);
        in = full;
    }
    for (i = 0; i < 20; i++) ds_adds(&want, "*[|[+\"k\" +\"v\" ]");
    ds_adds(&want, "$\"x\" ");
    for (i = 0; i < 20; i++) ds_adds(&want, ":9 ] ");
    check_parse_at(__FILE__, __LINE__, NULL, in, len, NULL, ds_str(&want));
    free(in);
    ds_free(&want);

    /* pushes between replies, as a subscribed connection sees them */
    EXPECT_TREE(NULL,
                ">3\r\n+message\r\n+ch\r\n$5\r\nhello\r\n"
                "+OK\r\n"
                ">4\r\n+pmessage\r\n+c*\r\n+ch\r\n$0\r\n\r\n"
                "*2\r\n$1\r\na\r\n:1\r\n",
                ">[+\"message\" +\"ch\" $\"hello\" ] +\"OK\" "
                ">[+\"pmessage\" +\"c*\" +\"ch\" $\"\" ] *[$\"a\" :1 ] ");
}

static void test_crlf_across_calls(void)
{
    rlk_resp_parser p;
    rlk_resp_event ev;
    rlk_resp_arena a;
    rlk_resp_reader r;
    rlk_resp_value *v = NULL;
    char buf[8];
    size_t c = 99;

    rlk_resp_parser_init(&p, NULL);
    memcpy(buf, "+OK\r", 4);
    CHECK_EQ_INT(rlk_resp_next(&p, buf, 4, &c, &ev), 0);
    CHECK(c <= 4);
    memmove(buf, buf + c, 4 - c);
    buf[4 - c] = '\n';
    CHECK_EQ_INT(rlk_resp_next(&p, buf, 5 - c, &c, &ev), 1);
    CHECK(ev.kind == RLK_EV_VALUE && ev.type == RLK_RESP_SIMPLE);
    CHECK_EQ_MEM(ev.str, ev.len, "OK", 2);
    CHECK(ev.flags & RLK_EV_F_REPLY_END);
    CHECK(rlk_resp_parser_idle(&p));
    rlk_resp_parser_free(&p);

    rlk_resp_arena_init(&a, NULL, 0, 0);
    rlk_resp_reader_init(&r, &a, NULL);
    CHECK_EQ_INT(rlk_resp_read(&r, "+OK\r", 4, &c, &v), 0);
    CHECK_EQ_INT(c, 0);
    memcpy(buf, "+OK\r\n", 5);
    CHECK_EQ_INT(rlk_resp_read(&r, buf, 5, &c, &v), 1);
    CHECK_EQ_INT(c, 5);
    CHECK(v && v->type == RLK_RESP_SIMPLE && v->len == 2 && memcmp(v->str, "OK", 2) == 0);
    rlk_resp_reader_free(&r);
    rlk_resp_arena_free(&a);
}

/* ------------------------------------------------------------------ */
/* Memory                                                               */

static const char *const mixed_replies[] = {
    "+OK\r\n", "-ERR x\r\n", ":12345\r\n", "$5\r\nhello\r\n", "$-1\r\n", "*-1\r\n",
    "_\r\n", "#t\r\n", ",3.25\r\n", "(12345678901234567890\r\n", "!3\r\nERR\r\n",
    "=7\r\ntxt:abc\r\n",
    "*3\r\n:1\r\n$1\r\na\r\n%1\r\n+k\r\n~1\r\n#f\r\n",
    "|1\r\n+ttl\r\n:5\r\n*1\r\n|1\r\n+x\r\n+y\r\n:1\r\n",
    ">2\r\n+message\r\n$2\r\nhi\r\n",
    "$?\r\n;2\r\nab\r\n;1\r\nc\r\n;0\r\n",
    "*?\r\n%?\r\n+a\r\n:1\r\n.\r\n~?\r\n.\r\n.\r\n",
    /* 15 nested aggregates */
    "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"
    "*1\r\n:1\r\n",
    /* 14 nested and an attribute inside */
    "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"
    "|1\r\n+a\r\n+b\r\n:1\r\n",
};

static void test_event_api_allocates_nothing(void)
{
    const size_t nrep = sizeof mixed_replies / sizeof mixed_replies[0];
    size_t i, len = 0, off, ends = 0;
    char *in;
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c;
    int ret = 0;
    long guard = 0;
    static char window[1200];

    for (i = 0; i < 10000; i++) len += strlen(mixed_replies[i % nrep]);
    in = malloc(len);
    for (i = 0, off = 0; i < 10000; i++) {
        size_t n = strlen(mixed_replies[i % nrep]);
        memcpy(in + off, mixed_replies[i % nrep], n);
        off += n;
    }

    counting_on(0);
    /* all at once */
    rlk_resp_parser_init(&p, NULL);
    off = 0;
    while ((ret = rlk_resp_next(&p, in + off, len - off, &c, &ev)) == 1 && ends <= 10000 &&
           ++guard < 10000000L) {
        off += c;
        if (ev.flags & RLK_EV_F_REPLY_END) ends++;
    }
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(off, len);
    CHECK_EQ_INT(ends, 10000);
    rlk_resp_parser_free(&p);

    /* through a 1200-byte receive window, 1000 bytes at a time */
    rlk_resp_parser_init(&p, NULL);
    {
        size_t have = 0, fed = 0;
        ends = 0;
        for (;;) {
            size_t k = len - fed < 1000 ? len - fed : 1000;
            if (k > sizeof window - have) k = sizeof window - have;
            memcpy(window + have, in + fed, k);
            have += k;
            fed += k;
            off = 0;
            while ((ret = rlk_resp_next(&p, window + off, have - off, &c, &ev)) == 1 &&
                   ++guard < 10000000L) {
                off += c;
                if (ev.flags & RLK_EV_F_REPLY_END) ends++;
            }
            if (ret < 0) break;
            off += c;
            memmove(window, window + off, have - off);
            have -= off;
            if (fed == len) break;
        }
        CHECK_EQ_INT(ret, 0);
        CHECK_EQ_INT(have, 0);
        CHECK_EQ_INT(ends, 10000);
    }
    rlk_resp_parser_free(&p);
    counting_off();
    CHECK_EQ_INT(ca.calls, 0);
    free(in);
}

static void test_stack_growth_and_free(void)
{
    char *in;
    size_t len, off = 0, c;
    rlk_resp_parser p;
    rlk_resp_event ev;
    int ret;
    uint32_t deepest = 0;
    long guard = 0;

    in = repeat("*1\r\n", 40, ":1\r\n", &len);
    counting_on(0);
    rlk_resp_parser_init(&p, NULL);
    while ((ret = rlk_resp_next(&p, in + off, len - off, &c, &ev)) == 1 && ++guard < 1000) {
        off += c;
        if (ev.depth > deepest) deepest = ev.depth;
    }
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(off, len);
    CHECK_EQ_INT(deepest, 40);
    CHECK(ca.calls > 0);
    /* reset keeps the memory; parsing again needs no more */
    {
        long calls = ca.calls;
        rlk_resp_parser_reset(&p);
        off = 0;
        while ((ret = rlk_resp_next(&p, in + off, len - off, &c, &ev)) == 1 && ++guard < 2000)
            off += c;
        CHECK_EQ_INT(off, len);
        CHECK_EQ_INT(ca.calls, calls);
    }
    rlk_resp_parser_free(&p);
    CHECK_EQ_INT(ca.live, 0);
    /* initialized again after free */
    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S(":5\r\n"), &c, &ev), 1);
    CHECK_EQ_INT(ev.integer, 5);
    rlk_resp_parser_free(&p);
    CHECK_EQ_INT(ca.live, 0);
    counting_off();

    /* the stack cannot grow: RLK_ERR_NOMEM, nothing consumed */
    counting_on(1);
    rlk_resp_parser_init(&p, NULL);
    off = 0;
    deepest = 0;
    while ((ret = rlk_resp_next(&p, in + off, len - off, &c, &ev)) == 1 && deepest < 100) {
        off += c;
        deepest++;
    }
    CHECK_EQ_INT(ret, RLK_ERR_NOMEM);
    CHECK_EQ_INT(c, 0);
    CHECK_EQ_INT(deepest, RLK_RESP_INLINE_FRAMES);
    rlk_resp_parser_free(&p);
    CHECK_EQ_INT(ca.live, 0);
    counting_off();
    free(in);
}

/* The largest limits the types allow mean "no limit", not overflow. */
static void test_extreme_limits(void)
{
    rlk_resp_limits l;
    l.max_depth = UINT32_MAX;
    l.max_bulk = UINT64_MAX;
    l.max_elements = UINT64_MAX;
    EXPECT(&l, "+OK\r\n", "V0r +\"OK\";");
    EXPECT(&l, "-ERR x\r\n", "V0r -\"ERR x\";");
    EXPECT(&l, ",1.5\r\n", "V0r ,\"1.5\"=1.5;");
    EXPECT(&l, "(12\r\n", "V0r (\"12\";");
    EXPECT(&l, "$3\r\nfoo\r\n", "V0r $\"foo\";");
    EXPECT(&l, "$?\r\n;3\r\nfoo\r\n;0\r\n", "B0s $-1;C0 $\"foo\";E0rs $;");
    EXPECT(&l, "*?\r\n:1\r\n.\r\n", "B0s *-1;V1 :1;E0rs *;");
    EXPECT(&l, "%1\r\n:1\r\n:2\r\n", "B0 %1;V1 :1;V1 :2;E0r %;");
    EXPECT(&l, "*9223372036854775807\r\n", "B0 *9223372036854775807;+more;");
    EXPECT(&l, "%9223372036854775807\r\n", "B0 %9223372036854775807;+more;");
}

/* A double too long for the fast conversion: exact, and still no
 * allocation (a reply of the event API allocates nothing), nor a wrong
 * value when the allocator fails. */
static void test_long_double(void)
{
    char in[400];
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c = 0, n;
    int ret;
    double want;

    memcpy(in, ",0.", 3);
    memset(in + 3, '0', 300);
    memcpy(in + 303, "15\r\n", 4);
    n = 307;
    in[n] = '\0';
    want = strtod(in + 1, NULL);
    CHECK(want > 0 && want < 1e-299);

    counting_on(0);
    rlk_resp_parser_init(&p, NULL);
    ret = rlk_resp_next(&p, in, n, &c, &ev);
    CHECK_EQ_INT(ret, 1);
    CHECK(ret == 1 && ev.type == RLK_RESP_DOUBLE && ev.dbl == want);
    rlk_resp_parser_free(&p);
    counting_off();
    CHECK_MSG(ca.calls == 0, "%ld allocations for one double", ca.calls);

    counting_on(1); /* every allocation fails */
    rlk_resp_parser_init(&p, NULL);
    ret = rlk_resp_next(&p, in, n, &c, &ev);
    CHECK_MSG(ret == RLK_ERR_NOMEM || (ret == 1 && ev.dbl == want),
              "allocator failing: status %d, value %g (want %g)", ret,
              ret == 1 ? ev.dbl : 0.0, want);
    rlk_resp_parser_free(&p);
    counting_off();
}

/* The double a RESP3 double's text stands for, bit for bit as strtod
 * reads it in the C locale: mantissas too long or exponents too large
 * for one exact IEEE operation, ties between two doubles (decided by a
 * digit past the 17th, or the 780th), subnormals, the limits of the
 * range and past them. */
static int dbl_mismatches;

static void dbl_same(const char *text)
{
    char in[2100];
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c = 0, n = (size_t)snprintf(in, sizeof in, ",%s\r\n", text);
    double want = strtod(text, NULL);

    rlk_resp_parser_init(&p, NULL);
    int ret = rlk_resp_next(&p, in, n, &c, &ev);
    if (ret != 1 || ev.type != RLK_RESP_DOUBLE || memcmp(&ev.dbl, &want, sizeof want) != 0) {
        if (dbl_mismatches++ < 10)
            CHECK_MSG(0, "%.60s: status %d, %.17g (want %.17g)", text, ret,
                      ret == 1 ? ev.dbl : 0.0, want);
    }
    rlk_resp_parser_free(&p);
}

static uint64_t dbl_rand(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

static void test_double_exact(void)
{
    static const char *const fixed[] = {
        "9007199254740993", "9007199254740993.0000000001", "9007199254740992.9999999",
        "1.00000000000000011102230246251565404236316680908203125",
        "1.00000000000000011102230246251565404236316680908203124",
        "1.00000000000000011102230246251565404236316680908203126",
        "123456789012345678901234567890", "1e23", "8.9255e-308", "1e-320",
        "2.2250738585072011e-308", "2.2250738585072012e-308", "4.9406564584124654e-324",
        "2.4703282292062327e-324", "2.4703282292062328e-324", "5e-324", "3e-324", "7e-324",
        "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308",
        "1e400", "-1e400", "1e-400", "1e99999999999", "0.000000000000000000000000000001e30",
        "00012.5000e+3", "-12.5E-3", ".5", "1.", "1.0005", "0.0015",
    };
    char t[2000];
    uint64_t x = 88172645463325252u;

    dbl_mismatches = 0;
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) dbl_same(fixed[i]);
    for (int it = 0; it < 20000; it++) {
        uint64_t r = dbl_rand(&x), bits = dbl_rand(&x) & 0x7fefffffffffffffu;
        double d, e;
        int len = 0;
        if (r % 4 == 0) bits &= 0x000fffffffffffffu; /* subnormal */
        memcpy(&d, &bits, sizeof d);
        switch (r / 4 % 4) {
        case 0: /* digits, a point, an exponent */
            for (int k = 0, nd = 1 + (int)(r / 16 % 30); k < nd; k++) {
                if (k == (int)(r / 512 % 31)) t[len++] = '.';
                t[len++] = (char)('0' + dbl_rand(&x) % 10);
            }
            snprintf(t + len, sizeof t - (size_t)len, "e%d", (int)(dbl_rand(&x) % 700) - 350);
            break;
        case 1: /* a double's decimal forms, short and long */
            snprintf(t, sizeof t, "%.*e", (int)(r / 16 % 25), d);
            break;
        case 2: /* the tie between two doubles, exactly and nearly */
            bits++;
            memcpy(&e, &bits, sizeof e);
            len = snprintf(t, sizeof t, "%.*Le", r / 16 % 2 ? 780 : 17 + (int)(r / 32 % 10),
                           ((long double)d + (long double)e) / 2);
            if (r / 64 % 3) { /* a digit past the tie's last one */
                char *ep = strchr(t, 'e'), ex[16];
                snprintf(ex, sizeof ex, "%s", ep);
                snprintf(ep, sizeof t - (size_t)(ep - t), "%s%s",
                         r / 64 % 3 == 1 ? "000001" : "9", ex);
            }
            break;
        default: /* many digits, mostly zeros, far exponents */
            for (int k = 0, nd = 1 + (int)(r / 16 % 1500); k < nd; k++)
                t[len++] = (char)('0' + (k < 3 || dbl_rand(&x) % 7 == 0 ? dbl_rand(&x) % 10 : 0));
            snprintf(t + len, sizeof t - (size_t)len, "e%d", (int)(dbl_rand(&x) % 1400) - 1100);
        }
        dbl_same(t);
    }
    CHECK_MSG(dbl_mismatches == 0, "%d of 20000 doubles differ from strtod's", dbl_mismatches);
}

/* ------------------------------------------------------------------ */
/* Parser state queries                                                 */

static void test_want(void)
{
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c;
    uint64_t w;

    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S("$10\r\nabc"), &c, &ev), 0);
    w = rlk_resp_parser_want(&p);
    CHECK_MSG(w >= 1 && w <= 9, "want %llu for $10 with 3 bytes", (unsigned long long)w);
    rlk_resp_parser_free(&p);

    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S("*1\r\n$5\r\nab"), &c, &ev), 1);
    CHECK_EQ_INT(rlk_resp_next(&p, "*1\r\n$5\r\nab" + c, 10 - c, &c, &ev), 0);
    w = rlk_resp_parser_want(&p);
    CHECK_MSG(w >= 1 && w <= 5, "want %llu for $5 with 2 bytes", (unsigned long long)w);
    rlk_resp_parser_free(&p);

    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S("+OK"), &c, &ev), 0);
    w = rlk_resp_parser_want(&p);
    CHECK_MSG(w >= 1 && w <= 2, "want %llu for +OK", (unsigned long long)w);
    rlk_resp_parser_free(&p);

    rlk_resp_parser_init(&p, NULL);
    CHECK_EQ_INT(rlk_resp_next(&p, S("$536870912\r\nabc"), &c, &ev), 0);
    w = rlk_resp_parser_want(&p);
    CHECK_MSG(w >= 1 && w <= 536870911ull, "want %llu for $536870912", (unsigned long long)w);
    rlk_resp_parser_free(&p);
}

static void test_idle(void)
{
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c;
    static const char in[] = "*2\r\n:1\r\n:2\r\n";

    rlk_resp_parser_init(&p, NULL);
    CHECK(rlk_resp_parser_idle(&p));
    CHECK_EQ_INT(rlk_resp_next(&p, in, 8, &c, &ev), 1);
    CHECK_EQ_INT(c, 4);
    CHECK(!rlk_resp_parser_idle(&p));
    CHECK_EQ_INT(rlk_resp_next(&p, in + 4, 4, &c, &ev), 1);
    CHECK(!rlk_resp_parser_idle(&p));
    CHECK_EQ_INT(rlk_resp_next(&p, in + 8, 0, &c, &ev), 0);
    CHECK(!rlk_resp_parser_idle(&p));
    CHECK_EQ_INT(rlk_resp_next(&p, in + 8, 4, &c, &ev), 1);
    CHECK_EQ_INT(rlk_resp_next(&p, in + 8 + c, 4 - c, &c, &ev), 1);
    CHECK(ev.kind == RLK_EV_END && (ev.flags & RLK_EV_F_REPLY_END));
    CHECK(rlk_resp_parser_idle(&p));

    /* an attribute alone leaves a reply pending */
    CHECK_EQ_INT(rlk_resp_next(&p, S("|0\r\n"), &c, &ev), 1);
    CHECK_EQ_INT(rlk_resp_next(&p, "", 0, &c, &ev), 1);
    CHECK(ev.kind == RLK_EV_END && ev.type == RLK_RESP_ATTR && !(ev.flags & RLK_EV_F_REPLY_END));
    CHECK(!rlk_resp_parser_idle(&p));
    CHECK_EQ_INT(rlk_resp_next(&p, S("_\r\n"), &c, &ev), 1);
    CHECK(ev.flags & RLK_EV_F_REPLY_END);
    CHECK(rlk_resp_parser_idle(&p));
    rlk_resp_parser_free(&p);
}

/* ------------------------------------------------------------------ */
/* The tree API                                                         */

typedef struct treeio {
    rlk_resp_arena a;
    rlk_resp_reader r;
    rlk_resp_value *v;
    size_t c;
} treeio;

static void tio_open(treeio *t, const rlk_resp_limits *lim, void *buf, size_t cap, size_t max)
{
    memset(t, 0, sizeof *t);
    rlk_resp_arena_init(&t->a, buf, cap, max);
    rlk_resp_reader_init(&t->r, &t->a, lim);
}

static void tio_close(treeio *t)
{
    rlk_resp_reader_free(&t->r);
    rlk_resp_arena_free(&t->a);
}

/* After a read that must have produced a tree: stop the test if not. */
#define NEED_TREE(t) do { \
        if (!CHECK_MSG((t).v != NULL, "no tree")) { tio_close(&(t)); return; } \
    } while (0)

static int tree_is(const rlk_resp_value *v, const char *want)
{
    dstr d = {0};
    int ok;
    ser_tree(&d, v);
    ok = strcmp(ds_str(&d), want) == 0;
    if (!ok) printf("    tree: %s\n    want: %s\n", ds_str(&d), want);
    ds_free(&d);
    return ok;
}

static void test_tree_incomplete_then_complete(void)
{
    static const char in[] = "*2\r\n:1\r\n$3\r\nfoo\r\n";
    treeio t;
    size_t k;

    tio_open(&t, NULL, NULL, 0, 0);
    for (k = 0; k < sizeof in - 1; k++) {
        t.c = 99;
        CHECK_EQ_INT(rlk_resp_read(&t.r, in, k, &t.c, &t.v), 0);
        CHECK_EQ_INT(t.c, 0);
    }
    CHECK_EQ_INT(rlk_resp_read(&t.r, in, sizeof in - 1, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, sizeof in - 1);
    NEED_TREE(t);
    CHECK(tree_is(t.v, "*[:1 $\"foo\" ] "));
    CHECK(!(t.v->flags & RLK_RESP_V_STREAMED));
    CHECK(t.v->child && t.v->child->next && t.v->child->next->str == in + 12);
    CHECK(rlk_resp_value_at(t.v, 0) == t.v->child);
    CHECK(rlk_resp_value_at(t.v, 1) == t.v->child->next);
    CHECK(rlk_resp_value_at(t.v, 2) == NULL);
    CHECK(rlk_resp_value_at(t.v->child, 0) == NULL); /* a scalar */
    tio_close(&t);
}

static void test_tree_nested_maps(void)
{
    static const char in[] = "%2\r\n+a\r\n%1\r\n+b\r\n:1\r\n+c\r\n*1\r\n_\r\n";
    treeio t;
    const rlk_resp_value *m;

    tio_open(&t, NULL, NULL, 0, 0);
    CHECK_EQ_INT(rlk_resp_read(&t.r, in, sizeof in - 1, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, sizeof in - 1);
    NEED_TREE(t);
    CHECK(tree_is(t.v, "%[+\"a\" %[+\"b\" :1 ] +\"c\" *[__ ] ] "));
    CHECK(t.v->type == RLK_RESP_MAP && t.v->len == 2);
    m = rlk_resp_value_at(t.v, 1);
    CHECK(m && m->type == RLK_RESP_MAP && m->len == 1);
    CHECK(m && rlk_resp_value_at(m, 1) && rlk_resp_value_at(m, 1)->integer == 1);
    CHECK(rlk_resp_value_at(t.v, 2) && rlk_resp_value_at(t.v, 2)->len == 1 &&
          rlk_resp_value_at(t.v, 2)->str[0] == 'c');
    CHECK(rlk_resp_value_at(t.v, 3) && rlk_resp_value_at(t.v, 3)->child &&
          rlk_resp_value_at(t.v, 3)->child->type == RLK_RESP_NULL &&
          rlk_resp_value_at(t.v, 3)->child->null_wire == '_');
    CHECK(rlk_resp_value_at(t.v, 4) == NULL);
    CHECK(t.v->attr == NULL);
    tio_close(&t);
}

static void test_tree_attributes(void)
{
    static const char in[] =
        "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
        "*2\r\n:2039123\r\n:9543892\r\n";
    static const char in2[] = "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n";
    treeio t;
    const rlk_resp_value *at;

    tio_open(&t, NULL, NULL, 0, 0);
    CHECK_EQ_INT(rlk_resp_read(&t.r, in, sizeof in - 1, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, sizeof in - 1);
    NEED_TREE(t);
    CHECK(t.v->type == RLK_RESP_ARRAY && t.v->len == 2);
    at = t.v->attr;
    CHECK(at && at->type == RLK_RESP_ATTR && at->len == 1);
    if (at) {
        CHECK(at->child && at->child->len == 14 && memcmp(at->child->str, "key-popularity", 14) == 0);
        CHECK(rlk_resp_value_at(at, 1) && rlk_resp_value_at(at, 1)->type == RLK_RESP_MAP);
    }
    CHECK(rlk_resp_value_at(t.v, 0) && rlk_resp_value_at(t.v, 0)->integer == 2039123);
    CHECK(rlk_resp_value_at(t.v, 0) && rlk_resp_value_at(t.v, 0)->attr == NULL);
    CHECK(tree_is(t.v, "|[+\"key-popularity\" %[$\"a\" ,\"0.1923\"=0.1923 "
                       "$\"b\" ,\"0.0012\"=0.0011999999999999999 ] ]*[:2039123 :9543892 ] "));
    rlk_resp_arena_reset(&t.a);

    CHECK_EQ_INT(rlk_resp_read(&t.r, in2, sizeof in2 - 1, &t.c, &t.v), 1);
    NEED_TREE(t);
    CHECK(t.v->attr == NULL && t.v->len == 2);
    at = rlk_resp_value_at(t.v, 0);
    CHECK(at && at->integer == 1 && at->attr && at->attr->len == 1);
    CHECK(rlk_resp_value_at(t.v, 1) && rlk_resp_value_at(t.v, 1)->attr == NULL);
    tio_close(&t);
}

static void test_tree_streamed(void)
{
    static const char s1[] = "$?\r\n;3\r\nfoo\r\n;3\r\nbar\r\n;0\r\n";
    char *buf = malloc(sizeof s1);
    treeio t;

    memcpy(buf, s1, sizeof s1);
    tio_open(&t, NULL, NULL, 0, 0);
    CHECK_EQ_INT(rlk_resp_read(&t.r, buf, sizeof s1 - 1, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, sizeof s1 - 1);
    if (!CHECK(t.v != NULL)) {
        free(buf);
        tio_close(&t);
        return;
    }
    CHECK(t.v->type == RLK_RESP_BULK && t.v->len == 6);
    CHECK(t.v->flags & RLK_RESP_V_STREAMED);
    /* copied into the arena: survives the receive buffer */
    CHECK(!(t.v->str >= buf && t.v->str < buf + sizeof s1));
    memset(buf, 'X', sizeof s1);
    free(buf);
    CHECK(memcmp(t.v->str, "foobar", 6) == 0);
    rlk_resp_arena_reset(&t.a);

    CHECK_EQ_INT(rlk_resp_read(&t.r, S("$?\r\n;0\r\n"), &t.c, &t.v), 1);
    NEED_TREE(t);
    CHECK(t.v->type == RLK_RESP_BULK && t.v->len == 0);
    rlk_resp_arena_reset(&t.a);

    CHECK_EQ_INT(rlk_resp_read(&t.r, S("*?\r\n:1\r\n$?\r\n;2\r\nab\r\n;0\r\n.\r\n"), &t.c, &t.v), 1);
    NEED_TREE(t);
    CHECK(tree_is(t.v, "*[:1 $\"ab\" ] "));
    CHECK(t.v->flags & RLK_RESP_V_STREAMED);
    CHECK(t.v->child && !(t.v->child->flags & RLK_RESP_V_STREAMED));
    CHECK(t.v->child && t.v->child->next && (t.v->child->next->flags & RLK_RESP_V_STREAMED));
    rlk_resp_arena_reset(&t.a);

    CHECK_EQ_INT(rlk_resp_read(&t.r, S("%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n"), &t.c, &t.v), 1);
    NEED_TREE(t);
    CHECK(t.v->type == RLK_RESP_MAP && t.v->len == 2);
    tio_close(&t);
}

/* The unconsumed bytes come back in another buffer (the caller's receive
 * buffer grew and moved): the tree must point into the new one. */
static void test_tree_buffer_moves(void)
{
    static const char in[] = "*3\r\n$3\r\nfoo\r\n+bar\r\n:1\r\n";
    char *a1 = malloc(sizeof in), *a2 = malloc(sizeof in);
    treeio t;
    const rlk_resp_value *e;

    memcpy(a1, in, sizeof in);
    memcpy(a2, in, sizeof in);
    tio_open(&t, NULL, NULL, 0, 0);
    CHECK_EQ_INT(rlk_resp_read(&t.r, a1, 19, &t.c, &t.v), 0);
    CHECK_EQ_INT(t.c, 0);
    memset(a1, 'X', sizeof in);
    free(a1);
    CHECK_EQ_INT(rlk_resp_read(&t.r, a2, sizeof in - 1, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, sizeof in - 1);
    CHECK(tree_is(t.v, "*[$\"foo\" +\"bar\" :1 ] "));
    e = rlk_resp_value_at(t.v, 0);
    CHECK(e && e->str == a2 + 8);
    e = rlk_resp_value_at(t.v, 1);
    CHECK(e && e->str == a2 + 14);
    tio_close(&t);
    free(a2);
}

static void test_tree_arena_grows(void)
{
    union {
        max_align_t align;
        unsigned char b[256];
    } small;
    char *in;
    size_t len, i;
    treeio t;
    const rlk_resp_value *e;
    int inside = 0, all7 = 1;

    in = repeat(":7\r\n", 100, NULL, &len);
    {
        char *full = malloc(len + 7);
        memcpy(full, "*100\r\n", 6);
        memcpy(full + 6, in, len);
        free(in);
        in = full;
        len += 6;
    }
    counting_on(0);
    tio_open(&t, NULL, small.b, sizeof small.b, 0);
    CHECK_EQ_INT(rlk_resp_read(&t.r, in, len, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, len);
    CHECK(t.v && t.v->len == 100);
    for (e = t.v ? t.v->child : NULL, i = 0; e; e = e->next, i++) {
        if ((const unsigned char *)e >= small.b && (const unsigned char *)e < small.b + sizeof small.b)
            inside = 1;
        if (e->type != RLK_RESP_INTEGER || e->integer != 7) all7 = 0;
    }
    if ((const unsigned char *)t.v >= small.b && (const unsigned char *)t.v < small.b + sizeof small.b)
        inside = 1;
    CHECK_EQ_INT(i, 100);
    CHECK(all7);
    CHECK_MSG(inside, "no node in the caller's buffer");
    CHECK_MSG(ca.calls > 0, "the arena did not grow on the heap");
    tio_close(&t);
    CHECK_EQ_INT(ca.live, 0);
    counting_off();
    free(in);
}

static void test_tree_arena_full(void)
{
    char *in;
    size_t len;
    treeio t;
    unsigned char buf[128];
    int ret;

    in = repeat(":7\r\n", 100, NULL, &len);
    {
        char *full = malloc(len + 7);
        memcpy(full, "*100\r\n", 6);
        memcpy(full + 6, in, len);
        free(in);
        in = full;
        len += 6;
    }
    counting_on(0);
    tio_open(&t, NULL, NULL, 0, 512);
    t.c = 99;
    ret = rlk_resp_read(&t.r, in, len, &t.c, &t.v);
    CHECK_EQ_INT(ret, RLK_ERR_NOMEM);
    CHECK_EQ_INT(t.c, 0);
    tio_close(&t);

    tio_open(&t, NULL, buf, sizeof buf, sizeof buf);
    ret = rlk_resp_read(&t.r, in, len, &t.c, &t.v);
    CHECK_EQ_INT(ret, RLK_ERR_NOMEM);
    tio_close(&t);
    CHECK_EQ_INT(ca.live, 0);
    counting_off();
    free(in);
}

static void test_tree_back_to_back(void)
{
    static const char in[] = "+a\r\n:1\r\n*1\r\n$1\r\nx\r\n|1\r\n+k\r\n+v\r\n#t\r\n";
    treeio t;
    size_t off = 0;

    tio_open(&t, NULL, NULL, 0, 0);
    CHECK_EQ_INT(rlk_resp_read(&t.r, in + off, sizeof in - 1 - off, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, 4);
    CHECK(tree_is(t.v, "+\"a\" "));
    off += t.c;
    rlk_resp_arena_reset(&t.a);
    CHECK_EQ_INT(rlk_resp_read(&t.r, in + off, sizeof in - 1 - off, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, 4);
    CHECK(tree_is(t.v, ":1 "));
    off += t.c;
    rlk_resp_arena_reset(&t.a);
    CHECK_EQ_INT(rlk_resp_read(&t.r, in + off, sizeof in - 1 - off, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, 11);
    CHECK(tree_is(t.v, "*[$\"x\" ] "));
    off += t.c;
    rlk_resp_arena_reset(&t.a);
    CHECK_EQ_INT(rlk_resp_read(&t.r, in + off, sizeof in - 1 - off, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, 16);
    CHECK(tree_is(t.v, "|[+\"k\" +\"v\" ]#1 "));
    off += t.c;
    CHECK_EQ_INT(off, sizeof in - 1);
    t.c = 99;
    CHECK_EQ_INT(rlk_resp_read(&t.r, in + off, 0, &t.c, &t.v), 0);
    CHECK_EQ_INT(t.c, 0);
    tio_close(&t);
}

static void test_tree_deep(void)
{
    char *in;
    size_t len, i;
    treeio t;
    const rlk_resp_value *v;

    in = repeat("*1\r\n", 1024, ":5\r\n", &len);
    tio_open(&t, NULL, NULL, 0, 0);
    CHECK_EQ_INT(rlk_resp_read(&t.r, in, len, &t.c, &t.v), 1);
    CHECK_EQ_INT(t.c, len);
    for (v = t.v, i = 0; v && v->type == RLK_RESP_ARRAY; v = rlk_resp_value_at(v, 0)) i++;
    CHECK_EQ_INT(i, 1024);
    CHECK(v && v->type == RLK_RESP_INTEGER && v->integer == 5);
    tio_close(&t);
    free(in);
}

/* Every allocation in turn fails: a clean RLK_ERR_NOMEM, no leak. */
static void test_tree_allocation_failures(void)
{
    static const char in[] =
        "|1\r\n+a\r\n*?\r\n$?\r\n;3\r\nabc\r\n;0\r\n.\r\n"
        "*3\r\n%1\r\n+k\r\n*20\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n:8\r\n:9\r\n:10\r\n"
        ":11\r\n:12\r\n:13\r\n:14\r\n:15\r\n:16\r\n:17\r\n:18\r\n:19\r\n:20\r\n"
        "$?\r\n;1\r\nx\r\n;2\r\nyz\r\n;0\r\n"
        "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n"
        "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n_\r\n";
    dstr want = {0};
    long k;
    int succeeded = 0, failures = 0;

    {
        treeio t;
        tio_open(&t, NULL, NULL, 0, 0);
        CHECK_EQ_INT(rlk_resp_read(&t.r, in, sizeof in - 1, &t.c, &t.v), 1);
        ser_tree(&want, t.v);
        tio_close(&t);
    }
    for (k = 1; k < 2000 && !succeeded; k++) {
        treeio t;
        int ret;
        counting_on(k);
        tio_open(&t, NULL, NULL, 0, 0);
        t.c = 99;
        ret = rlk_resp_read(&t.r, in, sizeof in - 1, &t.c, &t.v);
        if (ret == 1) {
            succeeded = 1;
            CHECK(ca.calls < k); /* nothing failed */
            CHECK(tree_is(t.v, ds_str(&want)));
        } else {
            failures++;
            CHECK_MSG(ret == RLK_ERR_NOMEM, "allocation %ld failing gave %d", k, ret);
            CHECK_EQ_INT(t.c, 0);
        }
        tio_close(&t);
        CHECK_MSG(ca.live == 0, "allocation %ld failing: %zu bytes leaked", k, ca.live);
        counting_off();
    }
    CHECK(succeeded);
    CHECK(failures > 0);
    ds_free(&want);
}

static void test_arena_alloc(void)
{
    static union {
        max_align_t align;
        unsigned char b[256];
    } raw;
    rlk_resp_arena a;
    unsigned char *p[4];
    static const size_t sz[4] = {1, 3, 100, 1000};
    size_t i, j, n;
    void *q;

    rlk_resp_arena_init(&a, raw.b + 1, 200, 0); /* misaligned on purpose */
    for (i = 0; i < 4; i++) {
        p[i] = rlk_resp_arena_alloc(&a, sz[i]);
        CHECK(p[i] != NULL);
        if (!p[i]) return;
        CHECK_MSG((uintptr_t)p[i] % _Alignof(max_align_t) == 0, "allocation %zu misaligned", i);
        memset(p[i], (int)(0x10 + i), sz[i]);
    }
    for (i = 0; i < 4; i++)
        for (j = 0; j < sz[i]; j++)
            if (p[i][j] != 0x10 + i) {
                CHECK_MSG(0, "allocation %zu overlaps another", i);
                break;
            }
    rlk_resp_arena_reset(&a);
    CHECK(rlk_resp_arena_alloc(&a, 64) != NULL);
    rlk_resp_arena_free(&a);

    rlk_resp_arena_init(&a, NULL, 0, 1024);
    for (n = 0; n < 100 && rlk_resp_arena_alloc(&a, 64); n++) {}
    CHECK_MSG(n >= 1 && n * 64 <= 1024, "%zu allocations of 64 bytes with max_bytes 1024", n);
    CHECK(rlk_resp_arena_alloc(&a, 2000) == NULL);
    rlk_resp_arena_reset(&a);
    q = rlk_resp_arena_alloc(&a, 64);
    CHECK(q != NULL);
    rlk_resp_arena_free(&a);
}

static void test_names(void)
{
    CHECK_EQ_STR(rlk_resp_type_name(RLK_RESP_BULK), "bulk string");
    CHECK_EQ_STR(rlk_resp_type_name(RLK_RESP_MAP), "map");
    CHECK_EQ_STR(rlk_resp_type_name(0), "?");
    CHECK_EQ_STR(rlk_resp_type_name('@'), "?");
    CHECK(strlen(rlk_resp_type_name(RLK_RESP_ATTR)) > 1);
    CHECK(strcmp(rlk_strerror(RLK_ERR_PROTO), rlk_strerror(RLK_ERR_LIMIT)) != 0);
}

int main(int argc, char **argv)
{
    tl_init(argc, argv);

    RUN_TEST(test_simple_and_error);
    RUN_TEST(test_integer);
    RUN_TEST(test_bulk);
    RUN_TEST(test_array);
    RUN_TEST(test_null_and_bool);
    RUN_TEST(test_double);
    RUN_TEST(test_bignum);
    RUN_TEST(test_blob_error);
    RUN_TEST(test_verbatim);
    RUN_TEST(test_map_set_push);
    RUN_TEST(test_attribute);
    RUN_TEST(test_streamed_string);
    RUN_TEST(test_streamed_aggregates);

    RUN_TEST(test_unknown_type_byte);
    RUN_TEST(test_line_endings);
    RUN_TEST(test_bad_lengths);
    RUN_TEST(test_sticky_error_and_reset);

    RUN_TEST(test_limit_depth_default);
    RUN_TEST(test_limit_depth_custom);
    RUN_TEST(test_limit_bulk);
    RUN_TEST(test_limit_elements);
    RUN_TEST(test_zero_limits_mean_default);
    RUN_TEST(test_declared_sizes_cost_nothing);

    RUN_TEST(test_incremental_rich);
    RUN_TEST(test_incremental_deep_mixed);
    RUN_TEST(test_crlf_across_calls);

    RUN_TEST(test_event_api_allocates_nothing);
    RUN_TEST(test_extreme_limits);
    RUN_TEST(test_long_double);
    RUN_TEST(test_double_exact);
    RUN_TEST(test_stack_growth_and_free);
    RUN_TEST(test_want);
    RUN_TEST(test_idle);

    RUN_TEST(test_tree_incomplete_then_complete);
    RUN_TEST(test_tree_nested_maps);
    RUN_TEST(test_tree_attributes);
    RUN_TEST(test_tree_streamed);
    RUN_TEST(test_tree_buffer_moves);
    RUN_TEST(test_tree_arena_grows);
    RUN_TEST(test_tree_arena_full);
    RUN_TEST(test_tree_back_to_back);
    RUN_TEST(test_tree_deep);
    RUN_TEST(test_tree_allocation_failures);
    RUN_TEST(test_arena_alloc);
    RUN_TEST(test_names);

    run_hiredis_cases();

    return tl_finish();
}
