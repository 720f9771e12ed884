/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The static command's own vfprintf (src/cli/static_printf.c, compiled
 * here as rlk__vfmt) against the C library's snprintf, byte for byte:
 * every conversion, flag, width and precision the project's formats use,
 * the integer limits, strings cut by a precision, the doubles the command
 * prints and the exact rounding of doubles; and the truncation of an
 * snprintf-like string FILE, and of its own vsnprintf (rlk__vsnfmt), at
 * every size, with the untruncated length returned, and -1 when the
 * FILE's writes fail.
 */
#define _GNU_SOURCE 1
#include "config.h"
#include "testlib.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rlk__vfmt(FILE *restrict f, const char *restrict fmt, va_list ap);
int rlk__vsnfmt(char *restrict s, size_t n, const char *restrict fmt, va_list ap);
int rlk__snfmt(char *restrict s, size_t n, const char *restrict fmt, ...);

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-truncation"
#endif

/* A string FILE as a C library's vsnprintf makes one: writes fill the
 * buffer up to its size - 1 and report every byte written. */
struct sn {
    char *buf;
    size_t cap, len;
    int fail; /* writes fail */
};

static ssize_t sn_write(void *c, const char *s, size_t n)
{
    struct sn *w = c;
    if (w->fail) return -1;
    if (w->cap && w->len < w->cap - 1) {
        size_t k = w->cap - 1 - w->len;
        if (k > n) k = n;
        memcpy(w->buf + w->len, s, k);
        w->len += k;
    }
    return (ssize_t)n;
}

static FILE *sn_open(struct sn *w)
{
    cookie_io_functions_t io = { .write = sn_write };
    FILE *f = fopencookie(w, "w", io);
    if (f) setvbuf(f, NULL, _IONBF, 0);
    return f;
}

/* rlk__vfmt as snprintf; -2 when the FILE cannot be made. */
static int my_vsnprintf(char *buf, size_t cap, const char *fmt, va_list ap)
{
    struct sn w = { buf, cap, 0, 0 };
    FILE *f = sn_open(&w);
    int r;
    if (!f) return -2;
    r = rlk__vfmt(f, fmt, ap);
    fclose(f);
    if (cap) buf[w.len] = '\0';
    return r;
}

static int mine_snprintf(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    int r;
    va_start(ap, fmt);
    r = my_vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return r;
}

static int fprintf_mine(FILE *f, const char *fmt, ...)
{
    va_list ap;
    int r;
    va_start(ap, fmt);
    r = rlk__vfmt(f, fmt, ap);
    va_end(ap);
    return r;
}

static long compared;

/* The same output and result as the C library's, at every buffer size
 * from 0 to the length + 1. */
static void same(const char *fmt, ...)
{
    char want[4096], got[4096];
    va_list ap, aq;
    int n, r;
    va_start(ap, fmt);
    va_copy(aq, ap);
    n = vsnprintf(want, sizeof want, fmt, aq);
    va_end(aq);
    if (!CHECK_MSG(n >= 0 && n < (int)sizeof want, "libc vsnprintf(%s) = %d", fmt, n)) {
        va_end(ap);
        return;
    }
    /* Through the string FILE (own 0), then through its own vsnprintf. */
    for (size_t i = 0, own = 0, cap = 0; i < 2 * ((size_t)n + 2); i++, own = i % 2, cap = i / 2) {
        memset(got, 'Z', sizeof got);
        va_copy(aq, ap);
        r = own ? rlk__vsnfmt(got, cap, fmt, aq) : my_vsnprintf(got, cap, fmt, aq);
        va_end(aq);
        compared++;
        if (!CHECK_MSG(got[cap] == 'Z' || cap > (size_t)n, "\"%s\" size %zu: wrote past", fmt, cap)) break;
        if (!CHECK_MSG(r == n, "\"%s\": returned %d, libc %d", fmt, r, n)) break;
        if (cap == 0) {
            if (!CHECK_MSG(got[0] == 'Z', "\"%s\": size 0 wrote", fmt)) break;
            continue;
        }
        size_t k = cap - 1 < (size_t)n ? cap - 1 : (size_t)n;
        if (!CHECK_MSG(memcmp(got, want, k) == 0 && got[k] == '\0',
                       "\"%s\" size %zu: \"%.*s\", libc \"%.*s\"", fmt, cap,
                       (int)k, got, (int)k, want))
            break;
    }
    va_end(ap);
}

static const char *const flag_sets[] = { "", "-", "0", " ", "+", "#", "-0", "+0", "- ", "#0", "-#", "+ " };
static const char *const widths[] = { "", "1", "2", "3", "4", "8", "25" };
static const char *const precs[] = { "", ".", ".0", ".1", ".2", ".3", ".5", ".12" };

#define EACH_SPEC(body)                                                              \
    for (size_t fi = 0; fi < sizeof flag_sets / sizeof *flag_sets; fi++)            \
        for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++)               \
            for (size_t pi = 0; pi < sizeof precs / sizeof *precs; pi++) { body }

static void spec(char *f, size_t cap, size_t fi, size_t wi, size_t pi, const char *conv)
{
    snprintf(f, cap, "[%%%s%s%s%s]", flag_sets[fi], widths[wi], precs[pi], conv);
}

/* Its own snprintf: the untruncated length, the string cut and ended,
 * nothing written at size 0. */
static void test_snprintf(void)
{
    char b[8];
    CHECK_EQ_INT(rlk__snfmt(b, sizeof b, "%d-%s", 42, "abcdef"), 9);
    CHECK(strcmp(b, "42-abcd") == 0);
    CHECK_EQ_INT(rlk__snfmt(NULL, 0, "%d", 12345), 5);
    memset(b, 'Z', sizeof b);
    CHECK_EQ_INT(rlk__snfmt(b, 1, "%s", "xy"), 2);
    CHECK(b[0] == '\0' && b[1] == 'Z');
    CHECK_EQ_INT(rlk__snfmt(b, sizeof b, "%.3f|%x", 1.5, 255u), 8);
    CHECK(strcmp(b, "1.500|f") == 0);
}

static void test_int(void)
{
    static const int v[] = { 0, 1, -1, 7, 42, -42, 255, 4096, 65535, INT_MAX, INT_MIN };
    char f[64];
    EACH_SPEC(
        for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
            spec(f, sizeof f, fi, wi, pi, "d"); same(f, v[i]);
            spec(f, sizeof f, fi, wi, pi, "i"); same(f, v[i]);
            spec(f, sizeof f, fi, wi, pi, "u"); same(f, (unsigned)v[i]);
            spec(f, sizeof f, fi, wi, pi, "x"); same(f, (unsigned)v[i]);
            spec(f, sizeof f, fi, wi, pi, "X"); same(f, (unsigned)v[i]);
            spec(f, sizeof f, fi, wi, pi, "o"); same(f, (unsigned)v[i]);
            spec(f, sizeof f, fi, wi, pi, "hhd"); same(f, v[i]);
            spec(f, sizeof f, fi, wi, pi, "hu"); same(f, v[i]);
        })
}

static void test_long(void)
{
    static const long long v[] = { 0, 1, -1, 999, -1000, 1700000000123LL, INT64_MAX, INT64_MIN,
                                   (long long)INT_MIN - 1 };
    char f[64];
    EACH_SPEC(
        for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
            spec(f, sizeof f, fi, wi, pi, "ld"); same(f, (long)v[i]);
            spec(f, sizeof f, fi, wi, pi, "lu"); same(f, (unsigned long)v[i]);
            spec(f, sizeof f, fi, wi, pi, "lx"); same(f, (unsigned long)v[i]);
            spec(f, sizeof f, fi, wi, pi, "lld"); same(f, v[i]);
            spec(f, sizeof f, fi, wi, pi, "llu"); same(f, (unsigned long long)v[i]);
            spec(f, sizeof f, fi, wi, pi, "zu"); same(f, (size_t)v[i]);
            spec(f, sizeof f, fi, wi, pi, "zd"); same(f, (ssize_t)v[i]);
            spec(f, sizeof f, fi, wi, pi, "jd"); same(f, (intmax_t)v[i]);
        })
    same("%" PRId64 " %" PRIu64 " %" PRIx64, INT64_MIN, UINT64_MAX, UINT64_MAX);
    same("%" PRId64 "/%" PRIu64, (int64_t)-5, (uint64_t)0);
}

static void test_string_char(void)
{
    static const char *const v[] = { "", "a", "ok", "resplock", "a longer string of text" };
    char f[64];
    EACH_SPEC(
        for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
            spec(f, sizeof f, fi, wi, pi, "s"); same(f, v[i]);
        }
        if (pi == 0) {
            spec(f, sizeof f, fi, wi, pi, "c"); same(f, 'x');
            spec(f, sizeof f, fi, wi, pi, "c"); same(f, 0xe9);
        })
    /* A precision reads no further than it says: no NUL needed (ASan's
     * snprintf interceptor reads one more, so the C library's is not
     * asked). */
    char unterminated[4] = { 'a', 'b', 'c', 'd' }, got[32];
    CHECK_EQ_INT(mine_snprintf(got, sizeof got, "%.4s|%.2s|%.0s|%-6.4s|", unterminated,
                               unterminated, unterminated, unterminated), 16);
    CHECK_EQ_STR(got, "abcd|ab||abcd  |");
    same("%.4s|%.2s|%.0s|%-6.4s|", "abcd", "abcd", "abcd", "abcd");
    same("%.*s|%*s|%-*s|%.*s", 3, "abcdef", 6, "ab", 6, "ab", -1, "all");
    same("%*d|%-*d|%*d", 5, 42, 5, 42, -5, 42);
    same("%.*d|%.*d", 4, 7, -1, 7);
    same("100%% %s%%", "done");
    same("%s", (char *)NULL);
    same("%p %p", (void *)&compared, (void *)NULL);
    same("%-20p|%20p", (void *)&compared, (void *)&compared);
    /* Longer than the formatter's 256-byte chunks. */
    char big[1500];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    same("<%s>", big);
    same("<%.400s|%600s|%-700d>", big, "x", 3);
}

/* The formats the project's sources use, as they use them. */
static void test_project_formats(void)
{
    same("%02d:%02d:%02d.%03ld", 7, 5, 9, 42L);
    same("%04d-%02d-%02dT%02d:%02d:%02d", 2026, 11, 26, 7, 3, 0);
    same("%04x %02x %02X %01d %03d", 0xbeef, 0x0a, 0xab, 3, 7);
    same("%.64s %.8s %.12s %.200s", "k", "0123456789", "abcdefghijklmnop", "x");
    same("%lx", 0xdeadbeefUL);
    same("round trip: %.3f ms (median of %d PINGs)\n", 0.123456, 5);
    same("%.3fms", 12.0005);
}

static const double dv[] = {
    0.0, -0.0, 1.5, -1.5, 0.0005, 0.0015, 0.0025, 0.00049999, 123456.789, -123456.789,
    2.675, 2.5, 3.5, 0.5, 1.0 / 3, 2.0 / 3, 0.1, 0.125, 9.9995, 99.9995, 999999.5, 1e15, 1e16,
    1e17, 1e21, 1.7976931348623157e308, 1e300, -1e300, 1e-300, 2.2250738585072014e-308,
    4.9406564584124654e-324, 123.456e-7, 6.02214076e23, 1.602176634e-19, 0.30000000000000004,
};

static void test_double(void)
{
    static const char *const conv[] = { "f", "e", "g", "E", "G", "F" };
    static const char *const dprecs[] = { "", ".0", ".1", ".2", ".3", ".6", ".15", ".16", ".17", ".40" };
    static const char *const dflags[] = { "", "-", "0", "+", " ", "#", "-+", "#0" };
    static const char *const dwidths[] = { "", "9", "30" };
    char f[64];
    for (size_t c = 0; c < sizeof conv / sizeof *conv; c++)
        for (size_t fl = 0; fl < sizeof dflags / sizeof *dflags; fl++)
            for (size_t w = 0; w < sizeof dwidths / sizeof *dwidths; w++)
                for (size_t p = 0; p < sizeof dprecs / sizeof *dprecs; p++) {
                    snprintf(f, sizeof f, "[%%%s%s%s%s]", dflags[fl], dwidths[w], dprecs[p], conv[c]);
                    for (size_t i = 0; i < sizeof dv / sizeof *dv; i++) {
                        /* glibc's %#g goes wrong when rounding carries
                         * into a new digit (999999.5: "1.e+06", 99.9995
                         * at %#.2g: "1.e+02"); the standard's output is
                         * checked below. */
                        if (strchr(dflags[fl], '#') && (conv[c][0] | 32) == 'g' &&
                            (dv[i] == 999999.5 || dv[i] == 99.9995))
                            continue;
                        same(f, dv[i]);
                    }
                    same(f, NAN);
                    same(f, -NAN);
                    same(f, INFINITY);
                    same(f, -INFINITY);
                }
    /* Every digit of the largest and the smallest. */
    same("%.0f|%f", DBL_MAX, -DBL_MAX);
    same("%.1074f", 4.9406564584124654e-324);
    same("%.*g|%.*g|%.*g", 15, 0.1, 16, 0.1, 17, 0.1);
    same("%Lf", 2.5L);
    char got[64];
    CHECK_EQ_INT(mine_snprintf(got, sizeof got, "%#g|%#.3G|%#.2g", 999999.5, 999.5, 99.9995), 28);
    CHECK_EQ_STR(got, "1.00000e+06|1.00E+03|1.0e+02");
}

/* Doubles from their bits, as the RESP encoder prints them. */
static void test_double_bits(void)
{
    uint64_t x = 0x243f6a8885a308d3ULL;
    for (int i = 0; i < 3000; i++) {
        double v;
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        memcpy(&v, &x, sizeof v);
        if (v != v) continue;
        same("%.15g|%.16g|%.17g", v, v, v);
        same("%.3f|%e", v, v);
        char buf[64];
        mine_snprintf(buf, sizeof buf, "%.17g", v);
        double back = strtod(buf, NULL);
        CHECK(memcmp(&back, &v, sizeof v) == 0);
    }
}

/* Unknown conversions are written as they stand. */
static void test_unknown(void)
{
    char got[64];
    CHECK_EQ_INT(mine_snprintf(got, sizeof got, "a%yb%"), 5);
    CHECK_EQ_STR(got, "a%yb%");
}

/* A FILE whose writes fail: -1. */
static void test_write_error(void)
{
    struct sn w = { NULL, 0, 0, 1 };
    FILE *f = sn_open(&w);
    if (!CHECK(f != NULL)) return;
    CHECK_EQ_INT(fprintf_mine(f, "%s %d", "x", 1), -1);
    fclose(f);
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_snprintf), TL_TEST(test_int),
           TL_TEST(test_long),
           TL_TEST(test_string_char),
           TL_TEST(test_project_formats),
           TL_TEST(test_double),
           TL_TEST(test_double_bits),
           TL_TEST(test_unknown),
           TL_TEST(test_write_error));
