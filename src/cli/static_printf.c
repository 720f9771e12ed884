/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small vfprintf for the fully static command (--enable-static-binary):
 * linked before the C library, it replaces the library's, and with it the
 * engine behind snprintf, vsnprintf, fprintf, printf and dprintf, which
 * all call vfprintf.  The default build keeps the C library's.
 *
 * Supported: conversions d i u o x X c s p f F e E g G %; flags - 0 space
 * + #; a width and a precision, given or '*'; lengths hh h l ll z j t L
 * (L: long double, printed as a double); a double's precision is at
 * most 1100 (past 1074 decimals its digits are all zeros).  Doubles are printed exactly,
 * rounded half to even as the C library does (the decimal digits of the
 * binary value are computed in full, in a fixed-size big number), so
 * %.17g reads back to the same double.  The decimal point is always '.'.
 * Anything else (%n, %a, wide characters) is written as it stands.
 *
 * The output is formatted into a local buffer and written in chunks with
 * fwrite, with the FILE locked for the whole call as the C library's
 * does.  snprintf and vsnprintf are its own too: the chunks are copied
 * into the caller's buffer (the rest of them dropped past its size, the
 * string always ended with a NUL when the size is not 0), where the C
 * library's make a string FILE for its vfprintf (musl's: 670 bytes of
 * the command; the command is 380 bytes smaller with these).  The
 * result is the number of bytes written, or -1 when a write failed (fwrite
 * wrote less, or set the FILE's error flag) or the count exceeds INT_MAX.
 * Nothing is allocated.
 *
 * The unit test compiles this file with RLK_VFPRINTF_NAME,
 * RLK_VSNPRINTF_NAME and RLK_SNPRINTF_NAME set to other names and
 * compares them with the C library's snprintf.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef RLK_VFPRINTF_NAME
#define RLK_VFPRINTF_NAME vfprintf
#define RLK_VSNPRINTF_NAME vsnprintf
#define RLK_SNPRINTF_NAME snprintf
#endif

int RLK_VFPRINTF_NAME(FILE *restrict f, const char *restrict fmt, va_list ap);
int RLK_VSNPRINTF_NAME(char *restrict s, size_t n, const char *restrict fmt, va_list ap);
int RLK_SNPRINTF_NAME(char *restrict s, size_t n, const char *restrict fmt, ...);

struct out {
    FILE *f;         /* NULL: into dst, at most cap bytes more */
    char *dst;
    size_t cap;
    size_t n, total;
    int err;         /* a write failed */
    char buf[256];
};

static void flush(struct out *o)
{
    if (!o->f) {
        size_t k = o->n < o->cap ? o->n : o->cap;
        memcpy(o->dst, o->buf, k);
        o->dst += k, o->cap -= k;
    } else if (o->n && fwrite(o->buf, 1, o->n, o->f) != o->n) {
        o->err = 1;
    }
    o->n = 0;
}

static void put(struct out *o, const char *s, size_t len)
{
    o->total += len;
    while (len) {
        size_t k = sizeof o->buf - o->n;
        if (k > len) k = len;
        memcpy(o->buf + o->n, s, k);
        o->n += k, s += k, len -= k;
        if (o->n == sizeof o->buf) flush(o);
    }
}

static void pad(struct out *o, char c, long n)
{
    for (; n > 0; n--) put(o, &c, 1);
}

enum { F_LEFT = 1, F_ZERO = 2, F_SPACE = 4, F_PLUS = 8, F_ALT = 16 };

/* [pre][zeros to width when F_ZERO][zeros][body], padded to width. */
static void field(struct out *o, int flags, long width, const char *pre, size_t npre,
                  long zeros, const char *body, size_t nbody)
{
    long fill = width - (long)npre - zeros - (long)nbody;
    if (!(flags & (F_LEFT | F_ZERO))) pad(o, ' ', fill);
    put(o, pre, npre);
    if (flags & F_ZERO && !(flags & F_LEFT)) pad(o, '0', fill);
    pad(o, '0', zeros);
    put(o, body, nbody);
    if (flags & F_LEFT) pad(o, ' ', fill);
}

/* The sign or blank for a signed conversion, into pre; its length. */
static size_t sign_of(int neg, int flags, char *pre)
{
    if (neg) { pre[0] = '-'; return 1; }
    if (flags & F_PLUS) { pre[0] = '+'; return 1; }
    if (flags & F_SPACE) { pre[0] = ' '; return 1; }
    return 0;
}

/* ---- doubles: all decimal digits of the binary value ---- */

/* A double is m * 2^e with m < 2^53 and -1074 <= e <= 971: m * 5^-e
 * (e < 0, then -e decimals) or m * 2^e has at most 767 digits. */
#define LIMBS 90
#define MAXDIG (LIMBS * 9)
/* The largest precision of a double: past 1074 decimals its digits are
 * zeros; a larger one is taken as this. */
#define MAXPREC 1100

struct dec {
    char d[MAXDIG]; /* digits, no leading or trailing zeros; n = 0: zero */
    int n;
    int dp;         /* value = 0.d[0]d[1]... * 10^dp */
};

static void mul_small(uint32_t *l, int *nl, uint32_t by)
{
    uint64_t carry = 0;
    for (int i = 0; i < *nl; i++) {
        carry += (uint64_t)l[i] * by;
        l[i] = (uint32_t)(carry % 1000000000u);
        carry /= 1000000000u;
    }
    for (; carry; carry /= 1000000000u) l[(*nl)++] = (uint32_t)(carry % 1000000000u);
}

static void to_dec(double v, struct dec *x)
{
    uint64_t bits, m;
    int e, nl = 0, k = 0;
    uint32_t l[LIMBS];
    memcpy(&bits, &v, sizeof bits);
    m = bits & ((UINT64_C(1) << 52) - 1);
    e = (int)(bits >> 52 & 0x7ff);
    if (e) m |= UINT64_C(1) << 52, e -= 1075;
    else e = -1074;
    x->n = 0, x->dp = 0;
    if (!m) return;
    for (; m; m /= 1000000000u) l[nl++] = (uint32_t)(m % 1000000000u);
    for (; e >= 29; e -= 29) mul_small(l, &nl, UINT32_C(1) << 29);
    if (e > 0) mul_small(l, &nl, UINT32_C(1) << e);
    for (k = e < 0 ? -e : 0; e <= -13; e += 13) mul_small(l, &nl, 1220703125u); /* 5^13 */
    for (; e < 0; e++) mul_small(l, &nl, 5);
    for (int i = nl - 1; i >= 0; i--)
        for (uint32_t p = 100000000u; p; p /= 10) {
            char c = (char)('0' + l[i] / p % 10);
            if (x->n || c != '0') x->d[x->n++] = c; /* no leading zeros */
        }
    x->dp = x->n - k;
    while (x->n && x->d[x->n - 1] == '0') x->n--;
}

/* Keeps the first keep digits, rounded half to even. */
static void round_at(struct dec *x, int keep)
{
    int up, i;
    if (keep >= x->n) return;
    if (keep < 0) { x->n = 0; return; }
    /* Digits after keep: d[keep] then the rest (no trailing zeros). */
    up = x->d[keep] > '5' || (x->d[keep] == '5' &&
         (x->n > keep + 1 || (keep > 0 && (x->d[keep - 1] - '0') % 2)));
    x->n = keep;
    if (up) {
        for (i = keep - 1; i >= 0 && x->d[i] == '9'; i--) x->n--;
        if (i >= 0) x->d[i]++;
        else { x->d[0] = '1'; x->n = 1; x->dp++; }
    }
    while (x->n && x->d[x->n - 1] == '0') x->n--;
}

static char digit_at(const struct dec *x, int i)
{
    return i >= 0 && i < x->n ? x->d[i] : '0';
}

/* The body of %f (prec decimals) or %e (prec decimals, e or E) of x,
 * already rounded, into b (sized for the widest); its length. */
static size_t body_f(const struct dec *x, int prec, int alt, char *b)
{
    size_t k = 0;
    if (x->dp <= 0) b[k++] = '0';
    for (int i = 0; i < x->dp; i++) b[k++] = digit_at(x, i);
    if (prec || alt) b[k++] = '.';
    for (int i = 0; i < prec; i++) b[k++] = digit_at(x, x->dp + i);
    return k;
}

static size_t body_e(const struct dec *x, int prec, int alt, char ech, char *b)
{
    size_t k = 0;
    int ex = x->n ? x->dp - 1 : 0;
    b[k++] = digit_at(x, 0);
    if (prec || alt) b[k++] = '.';
    for (int i = 1; i <= prec; i++) b[k++] = digit_at(x, i);
    b[k++] = ech;
    b[k++] = ex < 0 ? '-' : '+';
    if (ex < 0) ex = -ex;
    if (ex >= 100) b[k++] = (char)('0' + ex / 100);
    b[k++] = (char)('0' + ex / 10 % 10);
    b[k++] = (char)('0' + ex % 10);
    return k;
}

static void fmt_double(struct out *o, double v, int flags, long width, int prec, char conv)
{
    struct dec x;
    char b[2 + 309 + MAXPREC];
    char pre[1], lower = (char)(conv | 32);
    int neg = v < 0 || (v == 0 && 1 / v < 0);
    size_t npre, nb;
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (v != v) neg = (int)(bits >> 63);
    npre = sign_of(neg, flags, pre);
    if (v != v || v - v != 0) { /* nan, inf */
        const char *s = v != v ? (conv == lower ? "nan" : "NAN") : (conv == lower ? "inf" : "INF");
        field(o, flags & ~F_ZERO, width, pre, npre, 0, s, 3);
        return;
    }
    if (prec < 0) prec = 6;
    if (prec > MAXPREC) prec = MAXPREC;
    to_dec(neg ? -v : v, &x);
    if (lower == 'g') {
        int p = prec ? prec : 1, ex;
        round_at(&x, p);
        ex = x.n ? x.dp - 1 : 0;
        if (p > ex && ex >= -4) {
            nb = body_f(&x, p - 1 - ex, flags & F_ALT, b);
        } else {
            nb = body_e(&x, p - 1, flags & F_ALT, (char)(conv - 2), b);
        }
        if (!(flags & F_ALT) && memchr(b, '.', nb)) { /* drop trailing zeros */
            size_t end = nb, ep = nb;
            char *e = memchr(b, conv - 2, nb);
            if (e) end = ep = (size_t)(e - b);
            while (b[end - 1] == '0') end--;
            if (b[end - 1] == '.') end--;
            memmove(b + end, b + ep, nb - ep);
            nb = end + (nb - ep);
        }
    } else if (lower == 'e') {
        round_at(&x, prec + 1);
        nb = body_e(&x, prec, flags & F_ALT, conv, b);
    } else {
        round_at(&x, x.dp + prec);
        nb = body_f(&x, prec, flags & F_ALT, b);
    }
    field(o, flags, width, pre, npre, 0, b, nb);
}

/* ---- the format ---- */

/* Into f, else (f NULL) into dst: cap bytes at most, then a NUL. */
static int format(FILE *f, char *dst, size_t cap, const char *restrict fmt, va_list ap)
{
    struct out o;
    va_list a;
    int olderr = 0;
    if (f) {
        flockfile(f); /* one call's chunks are not interleaved with another thread's */
        olderr = ferror(f);
    }
    o.f = f, o.dst = dst, o.cap = cap, o.n = 0, o.total = 0, o.err = 0;
    va_copy(a, ap);
    while (*fmt) {
        const char *start = fmt, *s;
        int flags = 0, prec = -1, lng = 0, base = 10, neg = 0;
        long width = 0;
        char num[24 + 1], pre[2], conv;
        size_t npre = 0, ns;
        uintmax_t u;
        if (*fmt != '%') {
            s = strchr(fmt, '%');
            ns = s ? (size_t)(s - fmt) : strlen(fmt);
            put(&o, fmt, ns);
            fmt += ns;
            continue;
        }
        for (fmt++;; fmt++) {
            if (*fmt == '-') flags |= F_LEFT;
            else if (*fmt == '0') flags |= F_ZERO;
            else if (*fmt == ' ') flags |= F_SPACE;
            else if (*fmt == '+') flags |= F_PLUS;
            else if (*fmt == '#') flags |= F_ALT;
            else break;
        }
        if (*fmt == '*') {
            int w = va_arg(a, int);
            fmt++;
            if (w < 0) flags |= F_LEFT, width = -(long)w;
            else width = w;
        } else {
            for (; *fmt >= '0' && *fmt <= '9'; fmt++)
                if (width < INT_MAX) width = width * 10 + (*fmt - '0');
        }
        if (*fmt == '.') {
            prec = 0;
            if (*++fmt == '*') {
                prec = va_arg(a, int);
                fmt++;
                if (prec < 0) prec = -1;
            } else {
                for (; *fmt >= '0' && *fmt <= '9'; fmt++)
                    if (prec < INT_MAX / 10) prec = prec * 10 + (*fmt - '0');
            }
        }
        /* lng: -2 hh, -1 h, 1 l, 2 ll, j, z, t (all 64-bit here), 3 L */
        for (;; fmt++) {
            if (*fmt == 'h') lng--;
            else if (*fmt == 'l') lng++;
            else if (*fmt == 'j' || *fmt == 'z' || *fmt == 't') lng = 2;
            else if (*fmt == 'L') lng = 3;
            else break;
        }
        conv = *fmt;
        if (conv) fmt++;
        switch (conv) {
        case '%':
            put(&o, "%", 1);
            continue;
        case 'c':
            num[0] = (char)va_arg(a, int);
            field(&o, flags & F_LEFT, width, "", 0, 0, num, 1);
            continue;
        case 's':
            s = va_arg(a, const char *);
            if (!s) s = prec < 0 || prec >= 6 ? "(null)" : "";
            if (prec < 0) {
                ns = strlen(s);
            } else {
                const char *z = memchr(s, 0, (size_t)prec);
                ns = z ? (size_t)(z - s) : (size_t)prec;
            }
            field(&o, flags & F_LEFT, width, "", 0, 0, s, ns);
            continue;
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
            fmt_double(&o, lng == 3 ? (double)va_arg(a, long double) : va_arg(a, double),
                       flags, width, prec, conv);
            continue;
        case 'p':
            u = (uintptr_t)va_arg(a, void *);
            if (!u) {
                field(&o, flags & F_LEFT, width, "", 0, 0, "(nil)", 5);
                continue;
            }
            flags |= F_ALT, base = 16, conv = 'x';
            break;
        case 'd': case 'i':
            {
                intmax_t v = lng >= 2 ? va_arg(a, long long) : lng == 1 ? va_arg(a, long)
                           : va_arg(a, int);
                if (lng == -1) v = (short)v;
                if (lng <= -2) v = (signed char)v;
                neg = v < 0;
                u = neg ? 0 - (uintmax_t)v : (uintmax_t)v;
                npre = sign_of(neg, flags, pre);
            }
            break;
        case 'o': case 'u': case 'x': case 'X':
            u = lng >= 2 ? va_arg(a, unsigned long long) : lng == 1 ? va_arg(a, unsigned long)
              : va_arg(a, unsigned);
            if (lng == -1) u = (unsigned short)u;
            if (lng <= -2) u = (unsigned char)u;
            base = conv == 'o' ? 8 : conv == 'u' ? 10 : 16;
            break;
        default: /* unknown: written as it stands */
            put(&o, start, (size_t)(fmt - start));
            continue;
        }
        /* Integers: digits right to left. */
        {
            const char *dig = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
            char *p = num + sizeof num;
            long zeros;
            for (uintmax_t t = u; t; t /= (unsigned)base) *--p = dig[t % (unsigned)base];
            if (!u && prec != 0) *--p = '0'; /* zero at precision 0: no digit */
            ns = (size_t)(num + sizeof num - p);
            if (flags & F_ALT && base == 16 && u) pre[0] = '0', pre[1] = conv, npre = 2;
            if (flags & F_ALT && base == 8 && (!ns || *p != '0')) *--p = '0', ns++;
            zeros = prec > (long)ns ? prec - (long)ns : 0;
            field(&o, prec >= 0 ? flags & ~F_ZERO : flags, width, pre, npre, zeros, p, ns);
        }
    }
    va_end(a);
    flush(&o);
    if (f) {
        if (!olderr && ferror(f)) o.err = 1;
        funlockfile(f);
    } else {
        *o.dst = 0;
    }
    if (o.err) return -1;
    if (o.total > INT_MAX) { errno = EOVERFLOW; return -1; }
    return (int)o.total;
}

int RLK_VFPRINTF_NAME(FILE *restrict f, const char *restrict fmt, va_list ap)
{
    return format(f, NULL, 0, fmt, ap);
}

int RLK_VSNPRINTF_NAME(char *restrict s, size_t n, const char *restrict fmt, va_list ap)
{
    char none;
    return n ? format(NULL, s, n - 1, fmt, ap) : format(NULL, &none, 0, fmt, ap);
}

int RLK_SNPRINTF_NAME(char *restrict s, size_t n, const char *restrict fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = RLK_VSNPRINTF_NAME(s, n, fmt, ap);
    va_end(ap);
    return r;
}
