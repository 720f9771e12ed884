/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RESP encoder: the growable output buffer, commands (arrays of bulk
 * strings, the only thing a client sends), and appenders for every RESP3
 * value, used by fake servers in the tests and by round trips.
 *
 * Every appender reserves the exact number of bytes it needs once and then
 * writes, so a failed call leaves the buffer as it was.
 */
#include "resp.h"
#include "internal.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Decimal digits without snprintf: commands are written on every request,
 * and a format-string interpreter costs more than the rest of the encoder. */

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Number of decimal digits of v (1 for 0). */
static inline unsigned u64_len(uint64_t v)
{
    unsigned n = 1;
    for (;;) {
        if (v < 10) return n;
        if (v < 100) return n + 1;
        if (v < 1000) return n + 2;
        if (v < 10000) return n + 3;
        v /= 10000;
        n += 4;
    }
}

/* Writes the n = u64_len(v) digits of v at dst; two digits per division
 * halves the divisions. */
static inline void u64_write(char *dst, unsigned n, uint64_t v)
{
    char *p = dst + n;
    while (v >= 100) {
        unsigned i = (unsigned)(v % 100) * 2;
        v /= 100;
        p -= 2;
        p[0] = digit_pairs[i];
        p[1] = digit_pairs[i + 1];
    }
    if (v >= 10) {
        unsigned i = (unsigned)v * 2;
        p[-2] = digit_pairs[i];
        p[-1] = digit_pairs[i + 1];
    } else {
        p[-1] = (char)('0' + v);
    }
}

/* Magnitude of a signed value as unsigned; INT64_MIN has no positive twin. */
static inline uint64_t i64_abs(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

/* ------------------------------------------------------------------ */
/* rlk_buf */

void rlk_buf_init(rlk_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = 0;
}

/* Keeps max: a buffer that is freed and used again keeps its bound. */
void rlk_buf_free(rlk_buf *b)
{
    rlk__free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

static int buf_grow(rlk_buf *b, size_t need)
{
    size_t cap;
    char *p;

    if (b->max && need > b->max) return RLK_ERR_LIMIT;
    /* Doubling keeps appends amortized linear; the floor avoids a string
     * of tiny reallocations for the first few bytes. */
    cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > (size_t)-1 / 2) { cap = need; break; }
        cap *= 2;
    }
    if (b->max && cap > b->max) cap = b->max;
    /* malloc for the first block: a custom realloc hook need not accept
     * NULL. */
    p = b->data ? rlk__realloc(b->data, cap) : rlk__malloc(cap);
    if (!p) return RLK_ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return RLK_OK;
}

int rlk_buf_reserve(rlk_buf *b, size_t n)
{
    if (RLK_LIKELY(b->cap - b->len >= n)) return RLK_OK;
    if (n > (size_t)-1 - b->len) return b->max ? RLK_ERR_LIMIT : RLK_ERR_NOMEM;
    return buf_grow(b, b->len + n);
}

int rlk_buf_append(rlk_buf *b, const void *p, size_t n)
{
    int rc;

    if (n == 0) return RLK_OK;
    if (!p) return RLK_ERR_INVALID;
    if ((rc = rlk_buf_reserve(b, n)) != RLK_OK) return rc;
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return RLK_OK;
}

void rlk_buf_consume(rlk_buf *b, size_t n)
{
    if (n >= b->len) {
        b->len = 0;
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

/* ------------------------------------------------------------------ */
/* Commands */

static inline size_t add_sat(size_t a, size_t b)
{
    return a > (size_t)-1 - b ? (size_t)-1 : a + b;
}

/* Validates the arguments and returns the exact wire size through *size
 * (saturated at SIZE_MAX, which no buffer can hold). */
static int command_check(int argc, const char *const *argv,
                         const size_t *argvlen, size_t *size)
{
    size_t total;
    int i;

    if (argc < 1 || !argv) return RLK_ERR_INVALID;
    total = 1 + u64_len((uint64_t)argc) + 2;
    for (i = 0; i < argc; i++) {
        size_t len;
        if (argvlen) {
            len = argvlen[i];
            if (!argv[i] && len) return RLK_ERR_INVALID;
        } else {
            /* Without lengths a NULL pointer has no length at all. */
            if (!argv[i]) return RLK_ERR_INVALID;
            len = strlen(argv[i]);
        }
        total = add_sat(total, 1 + u64_len(len) + 2 + 2);
        total = add_sat(total, len);
    }
    *size = total;
    return RLK_OK;
}

/* Writes a validated command at p, which has room for all of it. */
static char *command_write(char *p, int argc, const char *const *argv,
                           const size_t *argvlen)
{
    unsigned n;
    int i;

    *p++ = '*';
    n = u64_len((uint64_t)argc);
    u64_write(p, n, (uint64_t)argc);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
    for (i = 0; i < argc; i++) {
        size_t len = argvlen ? argvlen[i] : strlen(argv[i]);
        *p++ = '$';
        if (len < 10) {
            *p++ = (char)('0' + len);
        } else {
            n = u64_len(len);
            u64_write(p, n, len);
            p += n;
        }
        *p++ = '\r';
        *p++ = '\n';
        if (len) memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r';
        *p++ = '\n';
    }
    return p;
}

/* Returns 0 for arguments that rlk_resp_append_command would refuse: the
 * contract has no error channel here, and no valid command is 0 bytes. */
size_t rlk_resp_command_size(int argc, const char *const *argv,
                             const size_t *argvlen)
{
    size_t size;
    if (command_check(argc, argv, argvlen, &size) != RLK_OK) return 0;
    return size;
}

int rlk_resp_append_command(rlk_buf *b, int argc, const char *const *argv,
                            const size_t *argvlen)
{
    size_t size, lens[16];
    char *end;
    int rc;

    if (!argvlen && argv && argc > 0 && argc <= 16) {
        /* Each length read once, not again by command_write. */
        for (int i = 0; i < argc; i++) {
            if (!argv[i]) return RLK_ERR_INVALID;
            lens[i] = strlen(argv[i]);
        }
        argvlen = lens;
    }
    if ((rc = command_check(argc, argv, argvlen, &size)) != RLK_OK) return rc;
    if ((rc = rlk_buf_reserve(b, size)) != RLK_OK) return rc;
    end = command_write(b->data + b->len, argc, argv, argvlen);
    b->len = (size_t)(end - b->data);
    return RLK_OK;
}

long long rlk_resp_write_command(char *dst, size_t cap, int argc,
                                 const char *const *argv,
                                 const size_t *argvlen)
{
    size_t size;
    int rc;

    if ((rc = command_check(argc, argv, argvlen, &size)) != RLK_OK) return rc;
    if (size > cap) return RLK_ERR_SPACE;
    if (!dst) return RLK_ERR_INVALID;
    command_write(dst, argc, argv, argvlen);
    return (long long)size;
}

/* ------------------------------------------------------------------ */
/* Values */

/* type byte, decimal (with sign), CRLF. */
size_t rlk__i64_dec(char *out, long long v)
{
    uint64_t m = i64_abs((int64_t)v);
    unsigned n = u64_len(m);
    size_t k = (size_t)(v < 0);
    if (v < 0) out[0] = '-';
    u64_write(out + k, n, m);
    out[k + n] = '\0';
    return k + n;
}

static int put_number_line(rlk_buf *b, char type, int64_t v)
{
    uint64_t m = i64_abs(v);
    unsigned n = u64_len(m);
    size_t need = 1 + (v < 0) + n + 2;
    char *p;
    int rc;

    if ((rc = rlk_buf_reserve(b, need)) != RLK_OK) return rc;
    p = b->data + b->len;
    *p++ = type;
    if (v < 0) *p++ = '-';
    u64_write(p, n, m);
    p += n;
    p[0] = '\r';
    p[1] = '\n';
    b->len += need;
    return RLK_OK;
}

/* type byte, raw text, CRLF; the text is already known to be one line. */
static int put_raw_line(rlk_buf *b, char type, const char *s, size_t len)
{
    char *p;
    int rc;

    if (len > (size_t)-1 - 3) return RLK_ERR_NOMEM;
    if ((rc = rlk_buf_reserve(b, len + 3)) != RLK_OK) return rc;
    p = b->data + b->len;
    *p++ = type;
    if (len) memcpy(p, s, len);
    p += len;
    p[0] = '\r';
    p[1] = '\n';
    b->len += len + 3;
    return RLK_OK;
}

static int has_crlf(const char *s, size_t len)
{
    return len && (memchr(s, '\r', len) || memchr(s, '\n', len));
}

int rlk_resp_put_line(rlk_buf *b, rlk_resp_type type, const char *s,
                      size_t len)
{
    if (type != RLK_RESP_SIMPLE && type != RLK_RESP_ERROR &&
        type != RLK_RESP_BIGNUM)
        return RLK_ERR_INVALID;
    if (!s && len) return RLK_ERR_INVALID;
    if (has_crlf(s, len)) return RLK_ERR_INVALID;
    return put_raw_line(b, (char)type, s, len);
}

int rlk_resp_put_blob(rlk_buf *b, rlk_resp_type type, const char *format,
                      const char *s, size_t len)
{
    size_t plen, need;
    unsigned n;
    char *p;
    int rc;

    if (type != RLK_RESP_BULK && type != RLK_RESP_BLOB_ERROR &&
        type != RLK_RESP_VERBATIM)
        return RLK_ERR_INVALID;
    if (!s && len) return RLK_ERR_INVALID;
    if (type == RLK_RESP_VERBATIM && !format) return RLK_ERR_INVALID;
    /* A verbatim payload is "fmt:" followed by the text. */
    plen = len;
    if (type == RLK_RESP_VERBATIM) {
        if (plen > (size_t)-1 - 4) return RLK_ERR_NOMEM;
        plen += 4;
    }
    n = u64_len(plen);
    need = 1 + n + 2 + 2;
    if (plen > (size_t)-1 - need) return RLK_ERR_NOMEM;
    need += plen;
    if ((rc = rlk_buf_reserve(b, need)) != RLK_OK) return rc;
    p = b->data + b->len;
    *p++ = (char)type;
    u64_write(p, n, plen);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
    if (type == RLK_RESP_VERBATIM) {
        memcpy(p, format, 3);
        p[3] = ':';
        p += 4;
    }
    if (len) memcpy(p, s, len);
    p += len;
    p[0] = '\r';
    p[1] = '\n';
    b->len += need;
    return RLK_OK;
}

int rlk_resp_put_integer(rlk_buf *b, int64_t v)
{
    return put_number_line(b, ':', v);
}

/*
 * Writes the shortest of %.15g, %.16g and %.17g that reads back as v
 * (%.17g always does for IEEE doubles), with '.' as the decimal point
 * whatever the locale.  Returns the length; out needs 40 bytes.
 */
static size_t format_double(char *out, double v)
{
    char tmp[64];
    size_t n, i, j, k;
    int prec, len = 0;

    if (v != v) { memcpy(out, "nan", 3); return 3; }
    if (v > DBL_MAX) { memcpy(out, "inf", 3); return 3; }
    if (v < -DBL_MAX) { memcpy(out, "-inf", 4); return 4; }
    for (prec = 15; prec <= 17; prec++) {
        double back;
        len = snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (len <= 0 || (size_t)len >= sizeof tmp) { len = 0; break; }
        /* strtod reads with the same locale snprintf wrote with, so the
         * check holds before the decimal point is rewritten.  Bits, not
         * ==, so that -0.0 keeps its sign. */
        back = strtod(tmp, NULL);
        if (memcmp(&back, &v, sizeof v) == 0) break;
    }
    if (len <= 0) { memcpy(out, "0", 1); return 1; } /* not reached */
    /* %g writes only digits, sign, 'e' and the locale's decimal point,
     * which may be several bytes (some locales use a multibyte one): the
     * run of any other bytes is that point. */
    n = (size_t)len;
    for (i = 0, k = 0; i < n; ) {
        char c = tmp[i];
        if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e' ||
            c == 'E') {
            out[k++] = c;
            i++;
            continue;
        }
        for (j = i; j < n; j++) {
            c = tmp[j];
            if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == 'e' ||
                c == 'E')
                break;
        }
        out[k++] = '.';
        i = j;
    }
    return k;
}

int rlk_resp_put_double(rlk_buf *b, double v)
{
    char txt[64];
    size_t n = format_double(txt, v);
    return put_raw_line(b, ',', txt, n);
}

int rlk_resp_put_bool(rlk_buf *b, int v)
{
    return rlk_buf_append(b, v ? "#t\r\n" : "#f\r\n", 4);
}

/* wire 0 is taken as '_': a zeroed value means "the RESP3 null". */
int rlk_resp_put_null(rlk_buf *b, char wire)
{
    switch (wire) {
    case 0:
    case '_': return rlk_buf_append(b, "_\r\n", 3);
    case '$': return rlk_buf_append(b, "$-1\r\n", 5);
    case '*': return rlk_buf_append(b, "*-1\r\n", 5);
    default: return RLK_ERR_INVALID;
    }
}

int rlk_resp_put_header(rlk_buf *b, rlk_resp_type type, int64_t count)
{
    switch (type) {
    case RLK_RESP_ARRAY:
    case RLK_RESP_MAP:
    case RLK_RESP_SET:
        if (count == -1) {
            char h[4] = {(char)type, '?', '\r', '\n'};
            return rlk_buf_append(b, h, 4);
        }
        break;
    case RLK_RESP_ATTR:
    case RLK_RESP_PUSH:
        break;
    default:
        return RLK_ERR_INVALID;
    }
    if (count < 0) return RLK_ERR_INVALID;
    return put_number_line(b, (char)type, count);
}

int rlk_resp_put_stream_begin(rlk_buf *b)
{
    return rlk_buf_append(b, "$?\r\n", 4);
}

/* An empty chunk writes nothing: on the wire ";0" is the terminator, so
 * writing it would end the string early. */
int rlk_resp_put_chunk(rlk_buf *b, const char *s, size_t len)
{
    size_t need;
    unsigned n;
    char *p;
    int rc;

    if (len == 0) return RLK_OK;
    if (!s) return RLK_ERR_INVALID;
    n = u64_len(len);
    need = 1 + n + 2 + 2;
    if (len > (size_t)-1 - need) return RLK_ERR_NOMEM;
    need += len;
    if ((rc = rlk_buf_reserve(b, need)) != RLK_OK) return rc;
    p = b->data + b->len;
    *p++ = ';';
    u64_write(p, n, len);
    p += n;
    *p++ = '\r';
    *p++ = '\n';
    memcpy(p, s, len);
    p += len;
    p[0] = '\r';
    p[1] = '\n';
    b->len += need;
    return RLK_OK;
}

int rlk_resp_put_stream_end(rlk_buf *b)
{
    return rlk_buf_append(b, ";0\r\n", 4);
}

int rlk_resp_put_end(rlk_buf *b)
{
    return rlk_buf_append(b, ".\r\n", 3);
}

/* A double keeps the text it came with when there is one, so that a round
 * trip is byte-exact ("1.50", "1E3", ...); text that is not one line is
 * not trusted and the value is written instead. */
static int put_double_text(rlk_buf *b, const char *s, size_t len, double v)
{
    if (s && len && !has_crlf(s, len)) return put_raw_line(b, ',', s, len);
    return rlk_resp_put_double(b, v);
}

/* A scalar of the given type with the fields events and values share. */
static int put_scalar(rlk_buf *b, rlk_resp_type type, const char *s,
                      size_t len, const char *format, int64_t integer,
                      double dbl, char null_wire)
{
    switch (type) {
    case RLK_RESP_SIMPLE:
    case RLK_RESP_ERROR:
    case RLK_RESP_BIGNUM:
        return rlk_resp_put_line(b, type, s, len);
    case RLK_RESP_BULK:
    case RLK_RESP_BLOB_ERROR:
    case RLK_RESP_VERBATIM:
        return rlk_resp_put_blob(b, type, format, s, len);
    case RLK_RESP_INTEGER:
        return rlk_resp_put_integer(b, integer);
    case RLK_RESP_NULL:
        return rlk_resp_put_null(b, null_wire);
    case RLK_RESP_BOOL:
        return rlk_resp_put_bool(b, integer != 0);
    case RLK_RESP_DOUBLE:
        return put_double_text(b, s, len, dbl);
    default:
        return RLK_ERR_INVALID;
    }
}

int rlk_resp_put_event(rlk_buf *b, const rlk_resp_event *ev)
{
    int streamed;

    if (!ev) return RLK_ERR_INVALID;
    streamed = (ev->flags & RLK_EV_F_STREAMED) != 0;
    switch (ev->kind) {
    case RLK_EV_VALUE:
        return put_scalar(b, ev->type, ev->str, ev->len, ev->format,
                          ev->integer, ev->dbl, ev->null_wire);
    case RLK_EV_BEGIN:
        if (ev->type == RLK_RESP_BULK) return rlk_resp_put_stream_begin(b);
        return rlk_resp_put_header(b, ev->type,
                                   streamed || ev->integer < 0 ? -1
                                                               : ev->integer);
    case RLK_EV_CHUNK:
        return rlk_resp_put_chunk(b, ev->str, ev->len);
    case RLK_EV_END:
        if (ev->type == RLK_RESP_BULK) return rlk_resp_put_stream_end(b);
        /* A counted aggregate ends where its count says: no bytes. */
        return streamed ? rlk_resp_put_end(b) : RLK_OK;
    default:
        return RLK_ERR_INVALID;
    }
}

/* ------------------------------------------------------------------ */
/* Trees, without recursion: a hostile reply may be as deep as the parser
 * allows, and the caller's stack is not ours to spend. */

typedef struct put_frame {
    const rlk_resp_value *next; /* next sibling to write in this list    */
    const rlk_resp_value *owner;/* when the list is done, write this
                                   value's body (its attribute was first) */
} put_frame;

#define PUT_INLINE_FRAMES 32

typedef struct put_stack {
    put_frame *f;
    size_t sp, cap;
    put_frame inline_f[PUT_INLINE_FRAMES];
} put_stack;

static int stack_push(put_stack *s, const rlk_resp_value *next,
                      const rlk_resp_value *owner)
{
    if (s->sp == s->cap) {
        size_t cap = s->cap * 2;
        put_frame *nf;
        if (cap > (size_t)-1 / sizeof *nf) return RLK_ERR_NOMEM;
        if (s->f == s->inline_f) {
            nf = rlk__malloc(cap * sizeof *nf);
            if (!nf) return RLK_ERR_NOMEM;
            memcpy(nf, s->f, s->sp * sizeof *nf);
        } else {
            nf = rlk__realloc(s->f, cap * sizeof *nf);
            if (!nf) return RLK_ERR_NOMEM;
        }
        s->f = nf;
        s->cap = cap;
    }
    s->f[s->sp].next = next;
    s->f[s->sp].owner = owner;
    s->sp++;
    return RLK_OK;
}

/* Writes v itself: a scalar, or an aggregate's header, then queues its
 * elements.  The header counts the children actually present, so what is
 * written is always valid RESP whatever v->len says. */
static int put_body(rlk_buf *b, put_stack *s, const rlk_resp_value *v)
{
    const rlk_resp_value *c;
    uint64_t count = 0;
    int rc;

    switch (v->type) {
    case RLK_RESP_ARRAY:
    case RLK_RESP_MAP:
    case RLK_RESP_SET:
    case RLK_RESP_ATTR:
    case RLK_RESP_PUSH:
        for (c = v->child; c; c = c->next) count++;
        if (v->type == RLK_RESP_MAP || v->type == RLK_RESP_ATTR) {
            if (count % 2) return RLK_ERR_INVALID;
            count /= 2;
        }
        if (count > INT64_MAX) return RLK_ERR_INVALID;
        if ((rc = rlk_resp_put_header(b, v->type, (int64_t)count)) != RLK_OK)
            return rc;
        return v->child ? stack_push(s, v->child, NULL) : RLK_OK;
    default:
        return put_scalar(b, v->type, v->str, v->len, v->format, v->integer,
                          v->dbl, v->null_wire);
    }
}

/* Starts v: its attribute chain first (an attribute may carry one too),
 * each owner's body deferred until its attribute is written. */
static int put_start(rlk_buf *b, put_stack *s, const rlk_resp_value *v)
{
    int rc;
    while (v->attr) {
        if ((rc = stack_push(s, NULL, v)) != RLK_OK) return rc;
        v = v->attr;
    }
    return put_body(b, s, v);
}

int rlk_resp_put_value(rlk_buf *b, const rlk_resp_value *v)
{
    put_stack s;
    size_t saved = b->len;
    int rc;

    if (!v) return RLK_ERR_INVALID;
    s.f = s.inline_f;
    s.sp = 0;
    s.cap = PUT_INLINE_FRAMES;
    rc = put_start(b, &s, v);
    while (rc == RLK_OK && s.sp > 0) {
        put_frame *f = &s.f[s.sp - 1];
        const rlk_resp_value *n = f->next;
        if (!n) {
            const rlk_resp_value *owner = f->owner;
            s.sp--;
            if (owner) rc = put_body(b, &s, owner);
            continue;
        }
        /* Advance before starting n: starting may move the stack. */
        f->next = n->next;
        rc = put_start(b, &s, n);
    }
    if (s.f != s.inline_f) rlk__free(s.f);
    /* All or nothing, like the single-value appenders. */
    if (rc != RLK_OK) b->len = saved;
    return rc;
}
