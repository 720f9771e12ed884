/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The version macros of <resplock/resplock_version.h>, the library's
 * rlk_version() and rlk_version_number(), and configure.ac's AC_INIT
 * version (read from $top_srcdir/configure.ac) all say the same.
 */
#include "config.h"
#include "resplock.h"
#include "testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The version of configure.ac's AC_INIT([resplock], [VERSION], ...), into
 * out; 0 when it cannot be read. */
static int configure_ac_version(char *out, size_t cap)
{
    const char *top = getenv("top_srcdir");
    char path[4096], line[512];
    int found = 0;
    snprintf(path, sizeof path, "%s/configure.ac", top ? top : ".");
    FILE *f = fopen(path, "r");
    if (!CHECK_MSG(f != NULL, "cannot open %s (make check sets top_srcdir)", path)) return 0;
    while (!found && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "AC_INIT([resplock], [");
        if (!p) continue;
        p += strlen("AC_INIT([resplock], [");
        size_t n = strcspn(p, "]");
        if (p[n] == ']' && n < cap) {
            memcpy(out, p, n);
            out[n] = '\0';
            found = 1;
        }
    }
    fclose(f);
    return CHECK_MSG(found, "%s: no AC_INIT([resplock], [VERSION]...)", path);
}

static void test_macros_are_configure_version(void)
{
    char v[64];
    if (configure_ac_version(v, sizeof v)) CHECK_EQ_STR(RLK_VERSION_STRING, v);
    CHECK_EQ_STR(RLK_VERSION_STRING, PACKAGE_VERSION);
    CHECK_EQ_STR(RLK_VERSION, RLK_VERSION_STRING);
}

static void test_numbers_match_string(void)
{
    char v[64];
    snprintf(v, sizeof v, "%d.%d.%d", RLK_VERSION_MAJOR, RLK_VERSION_MINOR, RLK_VERSION_PATCH);
    CHECK_EQ_STR(v, RLK_VERSION_STRING);
    CHECK_EQ_INT(RLK_VERSION_NUMBER,
                 RLK_VERSION_MAJOR * 10000 + RLK_VERSION_MINOR * 100 + RLK_VERSION_PATCH);
    /* Usable in #if, as a program checks the header it is built with. */
#if RLK_VERSION_NUMBER < 100
    CHECK_MSG(0, "RLK_VERSION_NUMBER %d is below 0.1.0's 100", RLK_VERSION_NUMBER);
#endif
}

static void test_library_says_the_same(void)
{
    CHECK(rlk_version() != NULL);
    if (rlk_version()) CHECK_EQ_STR(rlk_version(), RLK_VERSION_STRING);
    CHECK_EQ_INT(rlk_version_number(), RLK_VERSION_NUMBER);
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_macros_are_configure_version),
           TL_TEST(test_numbers_match_string),
           TL_TEST(test_library_says_the_same));
