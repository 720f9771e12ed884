/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A very small test framework shared by the test programs.
 *
 * A test is a function `static void name(void)` run with RUN_TEST(name).
 * Checks record a failure (file:line and a message) and carry on, so one
 * run shows every broken case.  The counts printed at the end are of test
 * FUNCTIONS: a test passes when none of its checks failed.  The last line
 * of output is exactly "N passed, N failed"; tl_finish() returns the exit
 * status (non-zero when anything failed).
 *
 * Exactly one file of a program defines TESTLIB_MAIN before including
 * this header; it holds the counters that every file shares (for the
 * programs registered with TL_PROGRAM, tests/testmain.c).  Arguments
 * given to the program (tl_init) select the tests whose names contain one
 * of them.
 */
#ifndef RESPLOCK_TESTLIB_H
#define RESPLOCK_TESTLIB_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tl_state {
    const char *test; /* running test, NULL outside one */
    int test_failed;  /* checks failed in the running test */
    long checks;      /* checks made, all tests */
    int passed, failed, argc;
    char **argv;
};
extern struct tl_state tl_state;
#ifdef TESTLIB_MAIN
struct tl_state tl_state;
#endif

static inline void tl_vfail(const char *file, int line, const char *fmt, va_list ap)
{
    tl_state.test_failed++;
    printf("FAIL %s (%s:%d): ", tl_state.test ? tl_state.test : "-", file, line);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

/* Records a failure (for checks made by hand; count them in checks). */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline void tl_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tl_vfail(file, line, fmt, ap);
    va_end(ap);
}

/* Records the outcome of one check; returns ok. */
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static inline int tl_ok(int ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    tl_state.checks++;
    if (ok) return 1;
    va_start(ap, fmt);
    tl_vfail(file, line, fmt, ap);
    va_end(ap);
    return 0;
}

/* Prints a (possibly long, possibly binary) string around offset `at`. */
static inline void tl_show(const char *tag, const char *s, size_t n, size_t at)
{
    size_t i = at > 60 ? at - 60 : 0, to = at + 100 < n ? at + 100 : n;
    printf("    %s%s\"", tag, i ? "..." : "");
    for (; i < to; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') putchar(c);
        else printf("\\x%02x", c);
    }
    printf("\"%s\n", to < n ? "..." : "");
}

static inline int tl_mem(const char *file, int line, const char *what,
                         const void *a, size_t alen, const void *b, size_t blen)
{
    size_t i = 0;
    tl_state.checks++;
    if (a && b && alen == blen && memcmp(a, b, alen) == 0) return 1;
    if (!a || !b) {
        tl_fail(file, line, "%s: %s is NULL", what, a ? "want" : "got");
        return 0;
    }
    while (i < alen && i < blen && ((const char *)a)[i] == ((const char *)b)[i]) i++;
    tl_fail(file, line, "%s: differ at byte %zu (lengths %zu, %zu)", what, i, alen, blen);
    tl_show("got:  ", (const char *)a, alen, i);
    tl_show("want: ", (const char *)b, blen, i);
    return 0;
}

/* Each evaluates to 1 when the check held, 0 when it failed; the actual
 * value comes first, then what it should be. */
#define CHECK(c) tl_ok(!!(c), __FILE__, __LINE__, "%s", #c)
#define CHECK_MSG(c, ...) tl_ok(!!(c), __FILE__, __LINE__, __VA_ARGS__)
#define CHECK_EQ_INT(a, b) do { long long tl_a_ = (long long)(a), tl_b_ = (long long)(b); \
        tl_ok(tl_a_ == tl_b_, __FILE__, __LINE__, "%s == %s: got %lld, want %lld", \
              #a, #b, tl_a_, tl_b_); } while (0)
#define CHECK_EQ_U64(a, b) do { uint64_t tl_a_ = (uint64_t)(a), tl_b_ = (uint64_t)(b); \
        tl_ok(tl_a_ == tl_b_, __FILE__, __LINE__, "%s == %s: got %" PRIu64 ", want %" \
              PRIu64, #a, #b, tl_a_, tl_b_); } while (0)
#define CHECK_EQ_MEM(a, alen, b, blen) \
    tl_mem(__FILE__, __LINE__, #a " == " #b, (a), (alen), (b), (blen))
#define CHECK_EQ_STR(a, b) do { const char *tl_s_ = (a), *tl_t_ = (b); \
        tl_mem(__FILE__, __LINE__, #a " == " #b, tl_s_, tl_s_ ? strlen(tl_s_) : 0, \
               tl_t_, tl_t_ ? strlen(tl_t_) : 0); } while (0)

static inline void tl_init(int argc, char **argv)
{
    tl_state.argc = argc;
    tl_state.argv = argv;
}

static inline void tl_run(const char *name, void (*fn)(void))
{
    int i, selected = tl_state.argc <= 1;
    for (i = 1; i < tl_state.argc && !selected; i++)
        selected = strstr(name, tl_state.argv[i]) != NULL;
    if (!selected) return;
    if (tl_state.test_failed && !tl_state.test) tl_state.failed++; /* outside a test */
    tl_state.test = name;
    tl_state.test_failed = 0;
    fn();
    if (tl_state.test_failed) tl_state.failed++;
    else tl_state.passed++;
    tl_state.test = NULL;
    tl_state.test_failed = 0; /* counted: not again as outside a test */
    fflush(stdout);
}
#define RUN_TEST(fn) tl_run(#fn, fn)

static inline int tl_finish(void)
{
    /* A check that failed outside any test (a server that did not start
     * in the program's set-up) fails the program: never a silent skip. */
    if (tl_state.test_failed && !tl_state.test) {
        tl_state.failed++;
        tl_state.test_failed = 0;
    }
    printf("%d passed, %d failed\n", tl_state.passed, tl_state.failed);
    fflush(stdout);
    return tl_state.failed ? 1 : 0;
}

/*
 * One way to register a program's tests, and one main for the programs
 * that use it (tests/testmain.c, which defines TESTLIB_MAIN): a program
 * lists its tests, in the order they run, with
 *
 *     TL_PROGRAM(setup, teardown,
 *                TL_TEST(test_a),
 *                TL_TEST_NAMED("a name of its own", test_b));
 *
 * and links tests/testmain.c.  setup (NULL: none) gets the program's
 * arguments before any test and returns TL_RUN_TESTS, or an exit status
 * with which the program ends at once (a set-up that failed says why on
 * stdout first).  teardown (NULL: none) runs after the last test, before
 * the closing line.  The arguments select tests by name, as tl_run does.
 */
typedef struct tl_test {
    const char *name;
    void (*fn)(void);
} tl_test;

struct tl_program {
    int (*setup)(int argc, char **argv);
    void (*teardown)(void);
    const tl_test *tests;
    size_t ntests;
};

#define TL_RUN_TESTS (-1)
#define TL_TEST(fn) {#fn, fn}
#define TL_TEST_NAMED(name, fn) {name, fn}
#define TL_PROGRAM(setup_, teardown_, ...)                                              \
    static const tl_test tl_tests_[] = {__VA_ARGS__};                                   \
    const struct tl_program tl_program = {setup_, teardown_, tl_tests_,                 \
                                   sizeof tl_tests_ / sizeof tl_tests_[0]}

/* The exit status of a program that cannot run here (automake's SKIP):
 * only when what it needs is missing and nothing requires it (a server:
 * tests/server.h, ts_need_server). */
#define TL_SKIP 77

/* Ends the program as skipped, with why on stdout. */
static inline void tl_skip(const char *why)
{
    printf("SKIP: %s\n", why);
    fflush(stdout);
    exit(TL_SKIP);
}

/* The program's, for tests/testmain.c. */
extern const struct tl_program tl_program;

/* Suites that live in a file of their own and run from a program's main(). */
void run_hiredis_cases(void); /* tests/hiredis_cases.c */

#endif
