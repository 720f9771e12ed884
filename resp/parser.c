/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The incremental RESP2/RESP3 parser: a pull state machine over the
 * caller's bytes.  One call yields at most one event.  Nothing is
 * allocated per reply; the only heap memory is the frame stack, and only
 * once nesting goes past the inline frames.
 *
 * Why lines are consumed whole and headers eagerly: a line (type byte up to
 * CRLF) is short or bounded by max_bulk, and `scanned` remembers how far the
 * search for its LF got, so a resumed call never rescans.  A bulk header is
 * consumed as soon as it is read and only the payload length is kept, so
 * waiting for a large payload costs O(1) per call.
 */
#include "resp.h"
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    ST_TYPE = 0,  /* expecting a type byte                       */
    ST_PAYLOAD,   /* header read; expecting want bytes then CRLF */
    ST_CHUNK_HDR  /* inside $?: expecting ";len" or ";0"         */
};

/* Longest line for integers, lengths, booleans and nulls: a sign, 19
 * digits and room for leading zeros; beyond it a value cannot be valid. */
#define NUM_LINE_MAX 64

void rlk_resp_limits_default(rlk_resp_limits *l)
{
    l->max_depth = RLK_RESP_DEFAULT_MAX_DEPTH;
    l->max_bulk = RLK_RESP_DEFAULT_MAX_BULK;
    l->max_elements = RLK_RESP_DEFAULT_MAX_ELEMENTS;
}

const char *rlk_resp_type_name(int type)
{
    switch (type) {
    case RLK_RESP_SIMPLE: return "simple string";
    case RLK_RESP_ERROR: return "error";
    case RLK_RESP_INTEGER: return "integer";
    case RLK_RESP_BULK: return "bulk string";
    case RLK_RESP_ARRAY: return "array";
    case RLK_RESP_NULL: return "null";
    case RLK_RESP_BOOL: return "boolean";
    case RLK_RESP_DOUBLE: return "double";
    case RLK_RESP_BIGNUM: return "big number";
    case RLK_RESP_BLOB_ERROR: return "blob error";
    case RLK_RESP_VERBATIM: return "verbatim string";
    case RLK_RESP_MAP: return "map";
    case RLK_RESP_SET: return "set";
    case RLK_RESP_ATTR: return "attribute";
    case RLK_RESP_PUSH: return "push";
    default: return "?";
    }
}

void rlk_resp_parser_init(rlk_resp_parser *p, const rlk_resp_limits *limits)
{
    memset(p, 0, offsetof(rlk_resp_parser, inline_stack));
    rlk_resp_limits_default(&p->limits);
    if (limits) {
        if (limits->max_depth) p->limits.max_depth = limits->max_depth;
        if (limits->max_bulk) p->limits.max_bulk = limits->max_bulk;
        if (limits->max_elements) p->limits.max_elements = limits->max_elements;
    }
    p->stack = p->inline_stack;
    p->cap = RLK_RESP_INLINE_FRAMES;
}

void rlk_resp_parser_free(rlk_resp_parser *p)
{
    if (p->stack && p->stack != p->inline_stack) rlk__free(p->stack);
    p->stack = p->inline_stack;
    p->cap = RLK_RESP_INLINE_FRAMES;
    p->sp = 0;
}

void rlk_resp_parser_reset(rlk_resp_parser *p)
{
    p->offset = 0;
    p->sp = 0;
    p->state = ST_TYPE;
    p->error = 0;
    p->error_offset = 0;
    p->want = 0;
    p->scanned = 0;
    p->streamed_total = 0;
    p->bulk_type = 0;
    p->top_attr = 0;
    p->error_msg[0] = '\0';
}

int rlk_resp_parser_idle(const rlk_resp_parser *p)
{
    return !p->error && p->sp == 0 && p->state == ST_TYPE && !p->top_attr;
}

uint64_t rlk_resp_parser_want(const rlk_resp_parser *p)
{
    /* `scanned` holds, while waiting for a payload, how many of its bytes
     * the last call saw (see need_more_payload). */
    if (p->state == ST_PAYLOAD && p->want + 2 > p->scanned)
        return p->want + 2 - p->scanned;
    return 1;
}

int rlk_resp_parser_error(const rlk_resp_parser *p, uint64_t *offset,
                          const char **reason)
{
    if (offset) *offset = p->error ? p->error_offset : 0;
    if (reason) *reason = p->error ? p->error_msg : "";
    return p->error;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5), cold, noinline))
#endif
static int fail(rlk_resp_parser *p, int status, uint64_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->error_msg, sizeof p->error_msg, fmt, ap);
    va_end(ap);
    p->error = status;
    p->error_offset = p->offset + at;
    return status;
}

/* Used by the tree reader to make its own failures sticky too. */
int rlk__parser_fail(rlk_resp_parser *p, int status, uint64_t at, const char *msg);
int rlk__parser_fail(rlk_resp_parser *p, int status, uint64_t at, const char *msg)
{
    return fail(p, status, at, "%s", msg);
}

/* A printable rendering of one byte for error messages. */
static const char *show_byte(unsigned char c, char out[8])
{
    if (c >= 0x21 && c <= 0x7e && c != '\'')
        snprintf(out, 8, "'%c'", c);
    else
        snprintf(out, 8, "0x%02x", c);
    return out;
}

static int line_too_long(rlk_resp_parser *p, int type, uint64_t max_line)
{
    return fail(p, RLK_ERR_LIMIT, max_line, "%s line longer than %llu bytes",
                rlk_resp_type_name(type), (unsigned long long)max_line);
}

/*
 * Finds the CRLF ending the text line that starts at buf[0] (the type
 * byte).  Returns the index of the LF, 0 when it has not arrived yet, or
 * -1 after recording an error: a LF without CR, a CR not followed by LF
 * (CR inside the text), or a line longer than max_line, CRLF included.
 * Short lines are scanned byte by byte, long ones with memchr; `scanned`
 * makes a resumed search start where the last one stopped.
 */
static long long find_line_end(rlk_resp_parser *p, const char *buf, size_t len,
                               uint64_t max_line)
{
    size_t i = p->scanned > 1 ? (size_t)p->scanned : 1;
    size_t quick = len - i < 32 ? len : i + 32;
    for (; i < quick; i++)
        if (buf[i] == '\r' || buf[i] == '\n') goto found;
    if (i < len) {
        const char *cr = memchr(buf + i, '\r', len - i);
        size_t stop = cr ? (size_t)(cr - buf) : len;
        const char *lf = memchr(buf + i, '\n', stop - i);
        i = lf ? (size_t)(lf - buf) : stop;
        if (i < len) goto found;
    }
    if ((uint64_t)len > max_line) return line_too_long(p, (unsigned char)buf[0], max_line), -1;
    p->scanned = len;
    return 0;
found:
    /* The bound first: a feed cut before the terminator reports it too
     * (above), and the outcome must not depend on where input is cut. */
    if ((uint64_t)i > max_line) return line_too_long(p, (unsigned char)buf[0], max_line), -1;
    if (buf[i] == '\n') return fail(p, RLK_ERR_PROTO, i, "line ends in LF without CR"), -1;
    if ((uint64_t)i + 2 > max_line) return line_too_long(p, (unsigned char)buf[0], max_line), -1;
    if (i + 1 == len) {
        p->scanned = i;
        return 0;
    }
    if (buf[i + 1] != '\n')
        return fail(p, RLK_ERR_PROTO, i, "CR inside a %s",
                    rlk_resp_type_name((unsigned char)buf[0])), -1;
    return (long long)i + 1;
}

/*
 * Reads "[-]digits" CRLF after the type byte, parsing while it scans:
 * integers and lengths need no separate search for their line end.
 * Returns the index of the LF, 0 when incomplete, or -1 after recording
 * an error at the offending byte ("bad WHAT" / "WHAT out of range").
 */
static int number_error(rlk_resp_parser *p, uint64_t at, int kind, int range)
{
    if (kind == RLK_RESP_INTEGER)
        return fail(p, RLK_ERR_PROTO, at, range ? "integer out of 64-bit range"
                                                : "bad integer value");
    const char *name = kind == ';' ? "streamed string chunk" : rlk_resp_type_name(kind);
    return fail(p, RLK_ERR_PROTO, at, range ? "%s length out of range" : "bad %s length", name);
}

/* kind: RLK_RESP_INTEGER for a value, else the type whose length it is
 * (';' for a chunk), for messages. */
static long long scan_number(rlk_resp_parser *p, const char *buf, size_t len,
                             int64_t *out, int kind)
{
    size_t i = 1, over_at = 0;
    int neg = 0;
    if (i < len && buf[i] == '-') { neg = 1; i++; }
    size_t start = i;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    /* The CR must sit at most at NUM_LINE_MAX - 2. */
    size_t stop = len < NUM_LINE_MAX - 1 ? len : NUM_LINE_MAX - 1;
    for (; i < stop; i++) {
        unsigned d = (unsigned)(unsigned char)buf[i] - '0';
        if (d > 9) break;
        if (!over_at && v > (limit - d) / 10) over_at = i;
        v = v * 10 + d;
    }
    if (i == stop) {
        if (stop == NUM_LINE_MAX - 1) return line_too_long(p, (unsigned char)buf[0], NUM_LINE_MAX), -1;
        return 0;
    }
    if (buf[i] != '\r' || i == start) {
        if (buf[i] == '\n' && i > start)
            return fail(p, RLK_ERR_PROTO, i, "line ends in LF without CR"), -1;
        return number_error(p, i, kind, 0), -1;
    }
    if (i + 1 == len) return 0;
    if (buf[i + 1] != '\n') return number_error(p, i, kind, 0), -1;
    if (over_at) return number_error(p, over_at, kind, 1), -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return (long long)i + 1;
}

static int word_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

static const double pow10_exact[] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * Decimal text to the nearest double (ties to even), as strtod converts
 * it, but for the plain grammar only and whatever the locale.  The digits
 * are held in decimal (the first RLK_DEC_DIGITS of them; past those only
 * whether any was not zero, which is all that can still decide a tie)
 * and shifted by powers of two until the 53 bits of the mantissa stand
 * before the decimal point; the digits after it round.  The shifts are
 * exact, so the result is.  No allocation, and no general scanner (C
 * libraries' strtod also reads hex, "infinity" and the locale's point:
 * most of the float code of a static program).
 */
#define RLK_DEC_DIGITS 800
#define RLK_DEC_SHIFT 60 /* a digit times 2^60, plus a carry, fits 64 bits */

typedef struct {
    unsigned char d[RLK_DEC_DIGITS]; /* digits, none after the last nonzero one */
    int nd;                          /* digits held; 0 is zero */
    long dp;                         /* value = 0.d[0]d[1]... * 10^dp */
    int trunc;                       /* a nonzero digit was dropped */
} rlk_dec;

static void dec_store(rlk_dec *a, const unsigned char *d, int n)
{
    int i = n;
    while (i > RLK_DEC_DIGITS) a->trunc |= d[--i] != 0;
    while (i > 0 && d[i - 1] == 0) i--;
    memmove(a->d, d, (size_t)i);
    a->nd = i;
}

/* a *= 2^k (k <= RLK_DEC_SHIFT), from the last digit up. */
static void dec_lshift(rlk_dec *a, unsigned k)
{
    unsigned char t[RLK_DEC_DIGITS + 20]; /* 2^60 < 10^19 */
    int r = a->nd, w = (int)sizeof t;
    uint64_t n = 0;
    while (r > 0 || n > 0) {
        if (r > 0) n += (uint64_t)a->d[--r] << k;
        t[--w] = (unsigned char)(n % 10);
        n /= 10;
    }
    a->dp += (int)sizeof t - w - a->nd;
    dec_store(a, t + w, (int)sizeof t - w);
}

/* a /= 2^k (k <= RLK_DEC_SHIFT), from the first digit down. */
static void dec_rshift(rlk_dec *a, unsigned k)
{
    uint64_t n = 0, mask = ((uint64_t)1 << k) - 1;
    int r = 0, w = 0;
    while (n >> k == 0) { /* the first quotient digit */
        n = n * 10 + (r < a->nd ? a->d[r] : 0);
        r++;
    }
    a->dp -= r - 1;
    for (;;) {
        unsigned char q = (unsigned char)(n >> k);
        n &= mask;
        if (w < RLK_DEC_DIGITS) a->d[w++] = q;
        else a->trunc |= q != 0;
        if (r >= a->nd && n == 0) break;
        n = n * 10 + (r < a->nd ? a->d[r] : 0);
        r++;
    }
    while (w > 0 && a->d[w - 1] == 0) w--;
    a->nd = w;
}

static void dec_shift(rlk_dec *a, long k)
{
    for (; k > RLK_DEC_SHIFT; k -= RLK_DEC_SHIFT) dec_lshift(a, RLK_DEC_SHIFT);
    for (; k < -RLK_DEC_SHIFT; k += RLK_DEC_SHIFT) dec_rshift(a, RLK_DEC_SHIFT);
    if (k > 0) dec_lshift(a, (unsigned)k);
    else if (k < 0) dec_rshift(a, (unsigned)-k);
}

double rlk__decimal_double(const char *s, size_t n)
{
    /* Shifts that bring 10^dp near 1 (2^shift[i] < 10^i). */
    static const unsigned char shift[] = {1, 3, 6, 9, 13, 16, 19, 23, 26};
    rlk_dec a;
    size_t i = 0;
    int neg = 0, dot = 0;
    long bexp = 0; /* value = a * 2^bexp */
    uint64_t bits;
    double out;

    a.nd = 0, a.dp = 0, a.trunc = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    for (; i < n && s[i] != 'e' && s[i] != 'E'; i++) {
        unsigned c = (unsigned)(s[i] - '0');
        if (s[i] == '.') {
            dot = 1;
        } else if (c == 0 && a.nd == 0) {
            a.dp -= dot; /* a leading zero */
        } else {
            a.dp += !dot;
            if (a.nd < RLK_DEC_DIGITS) a.d[a.nd++] = (unsigned char)c;
            else a.trunc |= c != 0;
        }
    }
    if (i < n) { /* the exponent */
        long e = 0;
        int eneg = 0;
        if (++i < n && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
        for (; i < n; i++)
            if (e < 100000000) e = e * 10 + (s[i] - '0');
        a.dp += eneg ? -e : e;
    }
    while (a.nd > 0 && a.d[a.nd - 1] == 0) a.nd--;

    if (a.nd == 0 || a.dp < -330) {
        bits = 0;
    } else if (a.dp > 310) {
        bits = (uint64_t)0x7ff << 52;
    } else {
        /* To [0.5, 1): 0.d * 2^bexp. */
        while (a.dp > 0) {
            long k = a.dp < (long)sizeof shift ? shift[a.dp] : 27;
            dec_shift(&a, -k);
            bexp += k;
        }
        while (a.dp < 0 || (a.dp == 0 && a.d[0] < 5)) {
            long k = -a.dp < (long)sizeof shift ? shift[-a.dp] : 27;
            dec_shift(&a, k);
            bexp -= k;
        }
        bexp--; /* [1, 2) * 2^bexp; below 2^-1022, subnormal */
        if (bexp < -1022) {
            dec_shift(&a, -(-1022 - bexp));
            bexp = -1022;
        }
        uint64_t mant = 0;
        dec_shift(&a, 53);
        /* The integer part, rounded by the digits after it (none when
         * the value is below 1/10: zero). */
        long j;
        for (j = 0; j < a.dp; j++) mant = mant * 10 + (j < a.nd ? a.d[j] : 0);
        if (a.dp >= 0 && j < a.nd && (a.d[j] > 5 || (a.d[j] == 5 && (j + 1 < a.nd || a.trunc || (mant & 1)))))
            mant++;
        if (mant == (uint64_t)2 << 52) {
            mant >>= 1;
            bexp++;
        }
        if (bexp > 1023)
            bits = (uint64_t)0x7ff << 52;
        else if (!(mant >> 52)) /* subnormal */
            bits = mant;
        else
            bits = (uint64_t)(bexp + 1023) << 52 | (mant & (((uint64_t)1 << 52) - 1));
    }
    bits |= (uint64_t)neg << 63;
    memcpy(&out, &bits, sizeof out);
    return out;
}

/*
 * Validates a RESP3 double: [+-]inf | [+-]nan | [+-]digits[.digits][e[+-]digits]
 * (at least one digit before the exponent; "inf" and "nan" in lowercase,
 * as servers write them).  Converts exactly: short mantissas with small
 * exponents by one exact IEEE operation, the rest by rlk__decimal_double.
 * Returns 0, or 1 for bad syntax.
 */
static int parse_double(const char *s, size_t n, double *out)
{
    size_t i = 0;
    int neg = 0;
    if (n && (s[0] == '-' || s[0] == '+')) { neg = s[0] == '-'; i = 1; }
    if (word_is(s + i, n - i, "inf")) {
        *out = neg ? -INFINITY : INFINITY;
        return 0;
    }
    if (word_is(s + i, n - i, "nan")) {
        *out = neg ? -NAN : NAN;
        return 0;
    }
    uint64_t mant = 0;
    int digits = 0, sig = 0, exp10 = 0, any = 0;
    for (; i < n && (unsigned)(s[i] - '0') <= 9; i++, any = 1) {
        if (mant == 0 && s[i] == '0') continue;
        if (sig < 19) { mant = mant * 10 + (unsigned)(s[i] - '0'); sig++; }
        else exp10++;
        digits++;
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && (unsigned)(s[i] - '0') <= 9; i++, any = 1) {
            if (mant == 0 && s[i] == '0') { exp10--; continue; }
            if (sig < 19) { mant = mant * 10 + (unsigned)(s[i] - '0'); sig++; exp10--; }
            digits++;
        }
    }
    if (!any) return 1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '-' || s[i] == '+')) { eneg = s[i] == '-'; i++; }
        if (i == n) return 1;
        long e = 0;
        for (; i < n && (unsigned)(s[i] - '0') <= 9; i++)
            if (e < 100000) e = e * 10 + (s[i] - '0');
        exp10 += eneg ? -(int)e : (int)e;
    }
    if (i != n) return 1;
    (void)digits;
    if (mant == 0) {
        *out = neg ? -0.0 : 0.0;
    } else if (sig <= 15 && exp10 >= -22 && exp10 <= 22) {
        double m = (double)mant;
        double v = exp10 >= 0 ? m * pow10_exact[exp10] : m / pow10_exact[-exp10];
        *out = neg ? -v : v;
    } else {
        *out = rlk__decimal_double(s, n);
    }
    return 0;
}

static int grow_stack(rlk_resp_parser *p)
{
    uint32_t ncap = p->cap * 2;
    if (ncap > p->limits.max_depth) ncap = p->limits.max_depth;
    rlk_resp_frame *ns;
    if (p->stack == p->inline_stack) {
        ns = rlk__malloc(sizeof *ns * ncap);
        if (ns) memcpy(ns, p->stack, sizeof *ns * p->sp);
    } else {
        ns = rlk__realloc(p->stack, sizeof *ns * ncap);
    }
    if (!ns) return RLK_ERR_NOMEM;
    p->stack = ns;
    p->cap = ncap;
    return 0;
}

/* Records that a value (scalar, or an aggregate that just ended) is
 * complete in its parent, and flags the end of a top-level reply. */
static int value_done(rlk_resp_parser *p, rlk_resp_event *ev, int is_attr)
{
    if (p->sp == 0) {
        if (is_attr) {
            p->top_attr = 1;
        } else {
            p->top_attr = 0;
            ev->flags |= RLK_EV_F_REPLY_END;
        }
        return 1;
    }
    rlk_resp_frame *f = &p->stack[p->sp - 1];
    if (is_attr) {
        f->attr_pending = 1;
    } else {
        f->attr_pending = 0;
        if (f->streamed) f->seen++;
        else f->remaining--;
    }
    return 1;
}

static void set_ev(rlk_resp_event *ev, rlk_resp_event_kind kind, int type, uint32_t depth)
{
    ev->kind = kind;
    ev->type = (rlk_resp_type)type;
    ev->depth = depth;
    ev->flags = 0;
}

/* Opens an aggregate; count is in elements (pairs doubled), or -1. */
static int begin_aggregate(rlk_resp_parser *p, rlk_resp_event *ev, int type,
                           int64_t declared, size_t at)
{
    if (p->sp >= p->limits.max_depth)
        return fail(p, RLK_ERR_LIMIT, at, "nesting deeper than %u aggregates",
                    (unsigned)p->limits.max_depth);
    if (p->sp == p->cap && grow_stack(p) != 0)
        return fail(p, RLK_ERR_NOMEM, at, "out of memory for nesting");
    rlk_resp_frame *f = &p->stack[p->sp++];
    int pairs = type == RLK_RESP_MAP || type == RLK_RESP_ATTR;
    f->type = (uint8_t)type;
    f->streamed = declared < 0;
    f->attr_pending = 0;
    f->seen = 0;
    f->remaining = declared < 0 ? 0 : (uint64_t)declared << pairs;
    set_ev(ev, RLK_EV_BEGIN, type, p->sp - 1);
    ev->integer = declared;
    if (declared < 0) ev->flags = RLK_EV_F_STREAMED;
    return 1;
}

/* Payload of a bulk-like value has fully arrived at buf[0..want+2). */
static int finish_payload(rlk_resp_parser *p, const char *buf, rlk_resp_event *ev)
{
    size_t n = (size_t)p->want;
    int type = p->bulk_type;
    uint32_t depth = p->sp;
    p->state = ST_TYPE;
    p->scanned = 0;
    if (type == ';') {
        set_ev(ev, RLK_EV_CHUNK, RLK_RESP_BULK, depth);
        ev->str = buf;
        ev->len = n;
        p->state = ST_CHUNK_HDR;
        return 1;
    }
    set_ev(ev, RLK_EV_VALUE, type, depth);
    if (type == RLK_RESP_VERBATIM) {
        if (n < 4 || buf[3] != ':')
            return fail(p, RLK_ERR_PROTO, 0,
                        "verbatim string without a \"xxx:\" format prefix");
        memcpy(ev->format, buf, 3);
        ev->format[3] = '\0';
        ev->str = buf + 4;
        ev->len = n - 4;
    } else {
        ev->str = buf;
        ev->len = n;
    }
    return value_done(p, ev, 0);
}

/* A length header: "-1" (null, where allowed), "?" (streamed, where
 * allowed; *out = -2) or 0..limit.  Returns as scan_number. */
static long long scan_length(rlk_resp_parser *p, const char *buf, size_t len,
                             int type, uint64_t limit, int64_t *out)
{
    if (len > 1 && buf[1] == '?') {
        if (type != RLK_RESP_BULK && type != RLK_RESP_ARRAY &&
            type != RLK_RESP_MAP && type != RLK_RESP_SET)
            return fail(p, RLK_ERR_PROTO, 1, "%s cannot be streamed",
                        rlk_resp_type_name(type)), -1;
        if (len < 4) {
            if (len == 3 && buf[2] != '\r')
                return fail(p, RLK_ERR_PROTO, 2, "bad streamed header"), -1;
            return 0;
        }
        if (buf[2] != '\r' || buf[3] != '\n')
            return fail(p, RLK_ERR_PROTO, buf[2] != '\r' ? 2 : 3, "bad streamed header"), -1;
        *out = -2;
        return 3;
    }
    int64_t v = 0;
    long long e = scan_number(p, buf, len, &v, type);
    if (e <= 0) return e;
    if (v < -1 || (v == -1 && type != RLK_RESP_BULK && type != RLK_RESP_ARRAY))
        return number_error(p, 1, type, 1), -1;
    if (v > 0 && (uint64_t)v > limit)
        return fail(p, RLK_ERR_LIMIT, 1, "%s length %lld over the limit of %llu",
                    rlk_resp_type_name(type), (long long)v, (unsigned long long)limit), -1;
    *out = v;
    return e;
}

/* Waiting for a payload: remember how much of it has been seen, for
 * rlk_resp_parser_want, and check the CR early when it is there. */
static int need_more_payload(rlk_resp_parser *p, const char *buf, size_t len)
{
    p->scanned = len;
    if (len > p->want && buf[p->want] != '\r')
        return fail(p, RLK_ERR_PROTO, p->want, "%s payload not followed by CRLF",
                    p->bulk_type == ';' ? "chunk" : rlk_resp_type_name(p->bulk_type));
    return 0;
}

static int read_payload(rlk_resp_parser *p, const char *buf, size_t len,
                        size_t *consumed, rlk_resp_event *ev)
{
    uint64_t need = p->want + 2;
    if ((uint64_t)len < need) return need_more_payload(p, buf, len);
    if (buf[p->want] != '\r' || buf[p->want + 1] != '\n')
        return fail(p, RLK_ERR_PROTO, buf[p->want] != '\r' ? p->want : p->want + 1,
                    "%s payload not followed by CRLF",
                    p->bulk_type == ';' ? "chunk" : rlk_resp_type_name(p->bulk_type));
    int r = finish_payload(p, buf, ev);
    if (r > 0) *consumed = (size_t)need;
    return r;
}

/* A header of *consumed bytes was just read; read the payload behind it
 * in the same call when it is all there.  Offsets in errors must count
 * from the payload, hence the temporary shift. */
static int payload_after_header(rlk_resp_parser *p, const char *buf, size_t len,
                                size_t *consumed, rlk_resp_event *ev)
{
    size_t hdr = *consumed, c2 = 0;
    p->offset += hdr;
    int r = read_payload(p, buf + hdr, len - hdr, &c2, ev);
    p->offset -= hdr;
    if (r < 0) {
        *consumed = 0;
        return r;
    }
    *consumed = hdr + c2;
    return r;
}

static int read_chunk_header(rlk_resp_parser *p, const char *buf, size_t len,
                             size_t *consumed, rlk_resp_event *ev)
{
    char b[8];
    if (len == 0) return 0;
    if (buf[0] != ';')
        return fail(p, RLK_ERR_PROTO, 0,
                    "expected ';' chunk in a streamed string, got %s",
                    show_byte((unsigned char)buf[0], b));
    int64_t n = 0;
    long long e = scan_number(p, buf, len, &n, ';');
    if (e <= 0) return (int)e < 0 ? p->error : 0;
    if (n < 0) return number_error(p, 1, ';', 1);
    if ((uint64_t)n > p->limits.max_bulk - p->streamed_total)
        return fail(p, RLK_ERR_LIMIT, 1, "streamed string longer than %llu bytes",
                    (unsigned long long)p->limits.max_bulk);
    *consumed = (size_t)e + 1;
    p->scanned = 0;
    if (n == 0) {
        p->state = ST_TYPE;
        set_ev(ev, RLK_EV_END, RLK_RESP_BULK, p->sp);
        ev->flags = RLK_EV_F_STREAMED;
        return value_done(p, ev, 0);
    }
    p->streamed_total += (uint64_t)n;
    p->want = (uint64_t)n;
    p->bulk_type = ';';
    p->state = ST_PAYLOAD;
    return payload_after_header(p, buf, len, consumed, ev);
}

/* '.' closing a streamed aggregate. */
static int read_end_marker(rlk_resp_parser *p, const char *buf, size_t len,
                           size_t *consumed, rlk_resp_event *ev)
{
    rlk_resp_frame *f = p->sp ? &p->stack[p->sp - 1] : NULL;
    if (!f || !f->streamed)
        return fail(p, RLK_ERR_PROTO, 0, "'.' outside a streamed aggregate");
    long long e = find_line_end(p, buf, len, NUM_LINE_MAX);
    if (e <= 0) return (int)e < 0 ? p->error : 0;
    if (e != 2) return fail(p, RLK_ERR_PROTO, 1, "bytes after '.' end marker");
    if (f->attr_pending)
        return fail(p, RLK_ERR_PROTO, 0, "attribute not followed by a value");
    if ((f->type == RLK_RESP_MAP) && (f->seen & 1))
        return fail(p, RLK_ERR_PROTO, 0, "streamed map ended after a key");
    *consumed = 3;
    p->scanned = 0;
    p->sp--;
    set_ev(ev, RLK_EV_END, f->type, p->sp);
    ev->flags = RLK_EV_F_STREAMED;
    return value_done(p, ev, 0);
}

static int read_value(rlk_resp_parser *p, const char *buf, size_t len,
                      size_t *consumed, rlk_resp_event *ev)
{
    char b[8];
    if (len == 0) return 0;
    int type = (unsigned char)buf[0];
    uint64_t max_line = NUM_LINE_MAX;

    switch (type) {
    case RLK_RESP_SIMPLE: case RLK_RESP_ERROR:
    case RLK_RESP_DOUBLE: case RLK_RESP_BIGNUM:
        /* type byte + text + CRLF, saturating for huge limits */
        max_line = p->limits.max_bulk > UINT64_MAX - 3 ? UINT64_MAX
                                                       : p->limits.max_bulk + 3;
        break;
    case RLK_RESP_INTEGER: case RLK_RESP_BULK: case RLK_RESP_ARRAY:
    case RLK_RESP_NULL: case RLK_RESP_BOOL: case RLK_RESP_BLOB_ERROR:
    case RLK_RESP_VERBATIM: case RLK_RESP_MAP: case RLK_RESP_SET:
    case RLK_RESP_ATTR: case RLK_RESP_PUSH:
        break;
    case '.':
        return read_end_marker(p, buf, len, consumed, ev);
    default:
        return fail(p, RLK_ERR_PROTO, 0, "unknown type byte %s",
                    show_byte((unsigned char)type, b));
    }

    /* A new element of a streamed aggregate: enforce the running count
     * before anything of it is reported. */
    if (p->sp) {
        rlk_resp_frame *f = &p->stack[p->sp - 1];
        if (f->streamed && type != RLK_RESP_ATTR) {
            uint64_t lim = p->limits.max_elements;
            int pairs = f->type == RLK_RESP_MAP;
            if ((f->seen >> pairs) >= lim)
                return fail(p, RLK_ERR_LIMIT, 0,
                            "streamed %s with more than %llu elements",
                            rlk_resp_type_name(f->type), (unsigned long long)lim);
        }
    }

    uint32_t depth = p->sp;
    long long e;
    int64_t v = 0;
    switch (type) {
    case RLK_RESP_INTEGER:
        e = scan_number(p, buf, len, &v, RLK_RESP_INTEGER);
        if (e <= 0) return (int)e < 0 ? p->error : 0;
        set_ev(ev, RLK_EV_VALUE, type, depth);
        ev->integer = v;
        break;
    case RLK_RESP_BULK: case RLK_RESP_BLOB_ERROR: case RLK_RESP_VERBATIM:
        e = scan_length(p, buf, len, type, p->limits.max_bulk, &v);
        if (e <= 0) return (int)e < 0 ? p->error : 0;
        *consumed = (size_t)e + 1;
        p->scanned = 0;
        if (v == -1) {
            set_ev(ev, RLK_EV_VALUE, RLK_RESP_NULL, depth);
            ev->null_wire = '$';
            return value_done(p, ev, 0);
        }
        if (v == -2) {
            set_ev(ev, RLK_EV_BEGIN, RLK_RESP_BULK, depth);
            ev->flags = RLK_EV_F_STREAMED;
            ev->integer = -1;
            p->streamed_total = 0;
            p->state = ST_CHUNK_HDR;
            return 1;
        }
        if (type == RLK_RESP_VERBATIM && v < 4)
            return fail(p, RLK_ERR_PROTO, 1, "verbatim string shorter than its format");
        p->want = (uint64_t)v;
        p->bulk_type = (uint8_t)type;
        p->state = ST_PAYLOAD;
        return payload_after_header(p, buf, len, consumed, ev);
    case RLK_RESP_ARRAY: case RLK_RESP_MAP: case RLK_RESP_SET:
    case RLK_RESP_ATTR: case RLK_RESP_PUSH: {
        e = scan_length(p, buf, len, type, p->limits.max_elements, &v);
        if (e <= 0) return (int)e < 0 ? p->error : 0;
        *consumed = (size_t)e + 1;
        p->scanned = 0;
        if (v == -1) {
            set_ev(ev, RLK_EV_VALUE, RLK_RESP_NULL, depth);
            ev->null_wire = '*';
            return value_done(p, ev, 0);
        }
        int r = begin_aggregate(p, ev, type, v == -2 ? -1 : v, 0);
        if (r < 0) *consumed = 0;
        return r;
    }
    default: { /* text lines */
        e = find_line_end(p, buf, len, max_line);
        if (e <= 0) return (int)e < 0 ? p->error : 0;
        const char *line = buf + 1;
        size_t n = (size_t)e - 2;
        set_ev(ev, RLK_EV_VALUE, type, depth);
        ev->str = line;
        ev->len = n;
        switch (type) {
        case RLK_RESP_DOUBLE:
            if (parse_double(line, n, &ev->dbl) != 0)
                return fail(p, RLK_ERR_PROTO, 1, "bad double value");
            break;
        case RLK_RESP_BIGNUM: {
            size_t i = (n && (line[0] == '-' || line[0] == '+')) ? 1 : 0;
            if (i == n) return fail(p, RLK_ERR_PROTO, 1, "bad big number");
            for (; i < n; i++)
                if ((unsigned)(line[i] - '0') > 9)
                    return fail(p, RLK_ERR_PROTO, 1 + i, "bad big number");
            break;
        }
        case RLK_RESP_NULL:
            if (n != 0) return fail(p, RLK_ERR_PROTO, 1, "bad null value (non-empty)");
            ev->null_wire = '_';
            break;
        case RLK_RESP_BOOL:
            if (n != 1 || (line[0] != 't' && line[0] != 'f'))
                return fail(p, RLK_ERR_PROTO, 1, "bad bool value (not t or f)");
            ev->integer = line[0] == 't';
            break;
        default:
            break;
        }
    }
    }
    *consumed = (size_t)e + 1;
    p->scanned = 0;
    return value_done(p, ev, 0);
}

/* Reads up to `max` decimal digits at s[*i..len) into *v; returns how
 * many there were. */
static inline size_t small_digits(const char *s, size_t len, size_t *i, size_t max,
                                  uint64_t *v)
{
    size_t n = 0;
    uint64_t x = 0;
    while (*i < len && n < max) {
        unsigned d = (unsigned)(unsigned char)s[*i] - '0';
        if (d > 9) break;
        x = x * 10 + d;
        (*i)++;
        n++;
    }
    *v = x;
    return n;
}

/*
 * The common shapes, well formed and whole in buf: a short simple string,
 * an integer or length of at most 18 digits, a bulk string whose payload
 * is there, an aggregate header within the limits, outside any streamed
 * form.  Anything else returns -1 having changed nothing, and the general
 * path below decides; so the general path alone defines what is valid.
 */
static inline int next_fast(rlk_resp_parser *p, const char *buf, size_t len,
                            size_t *consumed, rlk_resp_event *ev)
{
    size_t i = 1;
    uint64_t v;
    int type = (unsigned char)buf[0];
    uint32_t depth = p->sp;
    switch (type) {
    case RLK_RESP_SIMPLE: {
        size_t end = len < 64 ? len : 64;
        while (i < end && buf[i] != '\r' && buf[i] != '\n') i++;
        if (i + 1 >= end || buf[i] != '\r' || buf[i + 1] != '\n' ||
            i - 1 > p->limits.max_bulk)
            return -1;
        set_ev(ev, RLK_EV_VALUE, type, depth);
        ev->str = buf + 1;
        ev->len = i - 1;
        *consumed = i + 2;
        break;
    }
    case RLK_RESP_INTEGER: {
        int neg = buf[1] == '-';
        i += (size_t)neg;
        if (!small_digits(buf, len, &i, 18, &v) || i + 1 >= len || buf[i] != '\r' ||
            buf[i + 1] != '\n')
            return -1;
        set_ev(ev, RLK_EV_VALUE, type, depth);
        ev->integer = neg ? -(int64_t)v : (int64_t)v;
        *consumed = i + 2;
        break;
    }
    case RLK_RESP_BULK:
        if (len >= 5 && buf[1] == '-' && buf[2] == '1' && buf[3] == '\r' && buf[4] == '\n') {
            set_ev(ev, RLK_EV_VALUE, RLK_RESP_NULL, depth);
            ev->null_wire = '$';
            *consumed = 5;
            break;
        }
        if (!small_digits(buf, len, &i, 18, &v) || v > p->limits.max_bulk ||
            i + 1 >= len || buf[i] != '\r' || buf[i + 1] != '\n' ||
            v > len - i - 2 || len - i - 2 - v < 2)
            return -1;
        i += 2;
        if (buf[i + v] != '\r' || buf[i + v + 1] != '\n') return -1;
        set_ev(ev, RLK_EV_VALUE, type, depth);
        ev->str = buf + i;
        ev->len = (size_t)v;
        *consumed = i + (size_t)v + 2;
        break;
    case RLK_RESP_ARRAY: case RLK_RESP_MAP: case RLK_RESP_SET: case RLK_RESP_PUSH:
        if (!small_digits(buf, len, &i, 9, &v) || v > p->limits.max_elements ||
            i + 1 >= len || buf[i] != '\r' || buf[i + 1] != '\n' ||
            p->sp >= p->limits.max_depth || p->sp >= p->cap)
            return -1;
        *consumed = i + 2;
        p->offset += *consumed;
        return begin_aggregate(p, ev, type, (int64_t)v, 0);
    default:
        return -1;
    }
    p->offset += *consumed;
    return value_done(p, ev, 0);
}

int rlk_resp_next(rlk_resp_parser *p, const char *buf, size_t len,
                  size_t *consumed, rlk_resp_event *ev)
{
    *consumed = 0;
    if (RLK_UNLIKELY(p->error)) return p->error;

    int r;
    int plain = 1; /* not inside a streamed aggregate */
    if (p->sp) {
        rlk_resp_frame *f = &p->stack[p->sp - 1];
        if (!f->streamed && f->remaining == 0) {
            /* A counted aggregate is complete: report its END before
             * reading anything else.  It consumes no bytes. */
            p->sp--;
            set_ev(ev, RLK_EV_END, f->type, p->sp);
            return value_done(p, ev, f->type == RLK_RESP_ATTR);
        }
        plain = !f->streamed;
    }
    if (RLK_LIKELY(p->state == ST_TYPE && plain && len >= 4)) {
        r = next_fast(p, buf, len, consumed, ev);
        if (r >= 0) {
            p->scanned = 0;
            return r;
        }
        *consumed = 0;
    }
    switch (p->state) {
    case ST_PAYLOAD: r = read_payload(p, buf, len, consumed, ev); break;
    case ST_CHUNK_HDR: r = read_chunk_header(p, buf, len, consumed, ev); break;
    default: r = read_value(p, buf, len, consumed, ev); break;
    }
    if (r < 0) {
        *consumed = 0;
        return r;
    }
    p->offset += *consumed;
    return r;
}
