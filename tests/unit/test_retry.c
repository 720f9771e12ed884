/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reconnect rule (src/core/retry.c), with no server: the pauses double
 * from the first up to the most, each with half of it fixed and half
 * random; the defaults; a reset; the jitter's seed; when the next try is
 * due after a failed one and after a connection that served; which
 * failures another try may mend.
 */
#include "testlib.h"
#include "resplock.h"
#include "retry.h"

#include <string.h>

static void test_defaults(void)
{
    rlk__backoff b;
    memset(&b, 0xa5, sizeof b);
    rlk__backoff_init(&b, 0, 0, 1);
    CHECK_EQ_INT(b.initial, 50);
    CHECK_EQ_INT(b.max, 2000);
    CHECK_EQ_INT(b.pause, 50);
    rlk__backoff_init(&b, -3, -1, 1);
    CHECK_EQ_INT(b.initial, 50);
    CHECK_EQ_INT(b.max, 2000);
    /* A most below the first pause is raised to it. */
    rlk__backoff_init(&b, 300, 100, 1);
    CHECK_EQ_INT(b.initial, 300);
    CHECK_EQ_INT(b.max, 300);
}

/* Each pause within [P/2, P] for P = initial * 2^i, at most max. */
static void check_sequence(int initial, int max, uint64_t seed)
{
    rlk__backoff b;
    rlk__backoff_init(&b, initial, max, seed);
    int64_t p = initial;
    for (int i = 0; i < 20; i++) {
        int64_t got = rlk__backoff_next(&b);
        if (!CHECK_MSG(got >= p / 2 && got <= p,
                       "pause %d of (%d, %d, seed %llu): %lld, want %lld..%lld", i, initial,
                       max, (unsigned long long)seed, (long long)got, (long long)(p / 2),
                       (long long)p))
            return;
        p = p * 2 > max ? max : p * 2;
    }
}

static void test_doubling(void)
{
    check_sequence(50, 2000, 1);
    check_sequence(50, 2000, 0); /* 0 is allowed */
    check_sequence(1, 1000, 99);
    check_sequence(100, 100, 5);
    check_sequence(3, 7, 12345);
}

/* After a reset, the first pause again. */
static void test_reset(void)
{
    rlk__backoff b;
    rlk__backoff_init(&b, 50, 2000, 3);
    for (int i = 0; i < 10; i++) rlk__backoff_next(&b);
    CHECK_EQ_INT(b.pause, 2000);
    rlk__backoff_reset(&b);
    CHECK_EQ_INT(b.pause, 50);
    int64_t got = rlk__backoff_next(&b);
    CHECK_MSG(got >= 25 && got <= 50, "first pause after a reset: %lld", (long long)got);
}

/* The random half spreads clients: the same seed gives the same pauses,
 * other seeds others, and pauses at the most are not all alike. */
static void test_jitter(void)
{
    rlk__backoff a, b, c;
    int same_ab = 1, diff_ac = 0, distinct = 0;
    int64_t first = -1;
    rlk__backoff_init(&a, 50, 2000, 42);
    rlk__backoff_init(&b, 50, 2000, 42);
    rlk__backoff_init(&c, 50, 2000, 43);
    for (int i = 0; i < 40; i++) {
        int64_t x = rlk__backoff_next(&a), y = rlk__backoff_next(&b), z = rlk__backoff_next(&c);
        if (x != y) same_ab = 0;
        if (x != z) diff_ac = 1;
        if (i >= 10) { /* at the most: 1000..2000 */
            if (first < 0) first = x;
            else if (x != first) distinct = 1;
        }
    }
    CHECK(same_ab);
    CHECK(diff_ac);
    CHECK(distinct);
}

/* The random half takes every value from none to all of it: with a
 * pause of 4, each of 2, 3 and 4, and nothing else. */
static void test_jitter_range(void)
{
    rlk__backoff b;
    int seen[6] = {0};
    rlk__backoff_init(&b, 4, 4, 7);
    for (int i = 0; i < 1000; i++) {
        int64_t x = rlk__backoff_next(&b);
        if (!CHECK_MSG(x >= 2 && x <= 4, "pause %lld, want 2..4", (long long)x)) return;
        seen[x]++;
    }
    CHECK_MSG(seen[2] && seen[3] && seen[4], "2: %d, 3: %d, 4: %d times", seen[2], seen[3],
              seen[4]);
}

/* A failed try puts the next one a pause later, the pauses growing
 * over failures; a connection that served makes the next try due at
 * once and the pauses start over. */
static void test_failed_served(void)
{
    rlk__backoff b;
    rlk__backoff_init(&b, 100, 400, 9);
    CHECK_EQ_INT(b.at, 0); /* the first try at once */
    rlk__backoff_failed(&b, 1000);
    CHECK_MSG(b.at >= 1050 && b.at <= 1100, "after one failure: %lld", (long long)b.at);
    rlk__backoff_failed(&b, 2000);
    CHECK_MSG(b.at >= 2100 && b.at <= 2200, "after two: %lld", (long long)b.at);
    rlk__backoff_failed(&b, 3000);
    rlk__backoff_failed(&b, 4000);
    CHECK_MSG(b.at >= 4200 && b.at <= 4400, "at the most: %lld", (long long)b.at);
    rlk__backoff_served(&b);
    CHECK_EQ_INT(b.at, 0);
    rlk__backoff_failed(&b, 5000);
    CHECK_MSG(b.at >= 5050 && b.at <= 5100, "after serving, one failure: %lld", (long long)b.at);
}

/* The failures that end the tries, and the ones tried again. */
static void test_mends(void)
{
    static const struct {
        int status, lasting, mends;
    } cases[] = {
        {RLK_ERR_URL, 0, 0},      {RLK_ERR_INVALID, 0, 0}, {RLK_ERR_AUTH, 0, 0},
        {RLK_ERR_TLS, 1, 0},      {RLK_ERR_TLS, 0, 1},     {RLK_ERR_CONNECT, 0, 1},
        {RLK_ERR_TIMEOUT, 0, 1},  {RLK_ERR_IO, 0, 1},      {RLK_ERR_CLOSED, 0, 1},
        {RLK_ERR_SERVER, 0, 1},   {RLK_ERR_PROTO, 0, 1},   {RLK_ERR_NOMEM, 0, 1},
        {RLK_ERR_LIMIT, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(rlk__retry_mends(cases[i].status, cases[i].lasting) == cases[i].mends,
                  "%s (lasting %d): want %d", rlk_strerror(cases[i].status), cases[i].lasting,
                  cases[i].mends);
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_failed_served),
           TL_TEST(test_mends),
           TL_TEST(test_defaults),
           TL_TEST(test_doubling),
           TL_TEST(test_reset),
           TL_TEST(test_jitter),
           TL_TEST(test_jitter_range));
