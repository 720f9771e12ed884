/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The reply-reader cases of hiredis's test suite (test.c,
 * test_reply_reader(), including the RESP3 cases of recent versions),
 * each reimplemented against our API with the same input bytes and the
 * outcome hiredis expects: an error, or a value of the same type and
 * contents.  Differences of design are noted where they change the
 * expected outcome:
 *   - a limit hiredis reports as a protocol error ("Multi-bulk length out
 *     of range") is RLK_ERR_LIMIT here;
 *   - hiredis preallocates a declared count and so can fail with "Out of
 *     memory"; we never size an allocation from a declared count, so with
 *     no limit the same input is simply incomplete, and cheap;
 *   - an attribute attaches to the value that follows it (hiredis returns
 *     it as a reply of its own).
 *
 * Cases, by their hiredis names:
 *   Error handling in reply parser
 *   Memory cleanup in reply parser
 *   Can handle arbitrarily nested multi-bulks
 *   Can parse arbitrarily nested multi-bulks correctly
 *   Correctly parses LLONG_MAX
 *   Set error when > LLONG_MAX
 *   Correctly parses LLONG_MIN
 *   Set error when < LLONG_MIN
 *   Set error when array < -1
 *   Set error when bulk < -1
 *   Can configure maximum multi-bulk elements
 *   Multi-bulk never overflows regardless of maxelements
 *   Set error when array > SIZE_MAX
 *   Set error when bulk > SIZE_MAX
 *   Works with NULL functions for reply
 *   Works when a single newline (\r\n) covers two calls to feed
 *   Don't reset state after protocol error
 *   Don't reset state after protocol error(not segfault)
 *   Don't do empty allocation for empty multi bulk
 *   Can parse RESP3 verbatim strings
 *   Can parse RESP3 push messages
 *   Can parse RESP3 doubles
 *   Set error on invalid RESP3 double
 *   Correctly parses RESP3 double INFINITY
 *   Correctly parses RESP3 double NaN   (older hiredis: "Set error when
 *                                        RESP3 double is NaN"; nan is
 *                                        valid RESP3, as hiredis now agrees)
 *   Correctly parses RESP3 double -Nan
 *   Can parse RESP3 nil
 *   Set error on invalid RESP3 nil
 *   Can parse RESP3 bool (true)
 *   Can parse RESP3 bool (false)
 *   Set error on invalid RESP3 bool
 *   Can parse RESP3 map
 *   Can parse RESP3 attribute
 *   Can parse RESP3 set
 *   Can parse RESP3 bignum
 *   Can parse RESP3 doubles in an array
 * Old hiredis versions also had "Set error on nested multi bulks with
 * depth > 2" (later > 7): a limit of those versions, replaced by the
 * arbitrarily nested cases above; our own depth limit is tested in
 * test_parser.c.
 */
#include "testlib.h"
#include "resp.h"

#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define S(lit) (lit), (sizeof(lit) - 1)

/* A reader fed the way hiredis's tests feed theirs: bytes are appended,
 * then a reply is asked for. */
typedef struct hreader {
    rlk_resp_arena arena;
    rlk_resp_reader reader;
    char *buf;
    size_t len, done; /* bytes fed; bytes consumed by replies */
    rlk_resp_value *reply;
} hreader;

static void hr_open(hreader *h, const rlk_resp_limits *lim)
{
    memset(h, 0, sizeof *h);
    rlk_resp_arena_init(&h->arena, NULL, 0, 0);
    rlk_resp_reader_init(&h->reader, &h->arena, lim);
}

static void hr_feed(hreader *h, const char *s, size_t n)
{
    h->buf = realloc(h->buf, h->len + n + 1);
    if (!h->buf) abort();
    memcpy(h->buf + h->len, s, n);
    h->len += n;
}

/* Returns what rlk_resp_read returned; on 1, h->reply is set. */
static int hr_get(hreader *h)
{
    size_t c = 99;
    int ret;
    h->reply = NULL;
    ret = rlk_resp_read(&h->reader, h->buf ? h->buf + h->done : "", h->len - h->done, &c,
                        &h->reply);
    if (ret == 1) {
        CHECK(c > 0 && c <= h->len - h->done);
        h->done += c;
    } else {
        CHECK_EQ_INT(c, 0);
    }
    return ret;
}

static void hr_close(hreader *h)
{
    rlk_resp_reader_free(&h->reader);
    rlk_resp_arena_free(&h->arena);
    free(h->buf);
}

/* One input through the tree API: the status, and the reply on 1. */
static int read_one(hreader *h, const rlk_resp_limits *lim, const char *in, size_t len)
{
    hr_open(h, lim);
    hr_feed(h, in, len);
    return hr_get(h);
}

/* The same input through the event API: the last status (0: needs more). */
static int events_status(const rlk_resp_limits *lim, const char *in, size_t len, uint64_t *off)
{
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c, pos = 0;
    int ret;
    rlk_resp_parser_init(&p, lim);
    long guard = 0;
    while ((ret = rlk_resp_next(&p, in + pos, len - pos, &c, &ev)) == 1 && ++guard < 100000)
        pos += c;
    if (off) {
        *off = UINT64_MAX;
        rlk_resp_parser_error(&p, off, NULL);
    }
    rlk_resp_parser_free(&p);
    return ret;
}

static int str_is(const rlk_resp_value *v, int type, const char *s)
{
    size_t n = strlen(s);
    return v && (int)v->type == type && v->len == n && memcmp(v->str, s, n) == 0;
}

static const rlk_resp_value *at(const rlk_resp_value *v, size_t i)
{
    return v ? rlk_resp_value_at(v, i) : NULL;
}

/* Checks an input that hiredis rejects: both APIs fail with `status`. */
static void expect_fail(const char *in, size_t len, const rlk_resp_limits *lim, int status)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, lim, in, len), status);
    hr_close(&h);
    CHECK_EQ_INT(events_status(lim, in, len, NULL), status);
}

/* A tiny counting allocator: how many bytes were asked for. */
static size_t hc_bytes;
static void *hc_malloc(void *ctx, size_t n) { (void)ctx; hc_bytes += n; return malloc(n); }
static void *hc_realloc(void *ctx, void *p, size_t n) { (void)ctx; hc_bytes += n; return realloc(p, n); }
static void hc_free(void *ctx, void *p) { (void)ctx; free(p); }

/* ------------------------------------------------------------------ */

static void hiredis_error_handling(void)
{
    uint64_t off = 99;
    expect_fail(S("@foo\r\n"), NULL, RLK_ERR_PROTO);
    CHECK_EQ_INT(events_status(NULL, S("@foo\r\n"), &off), RLK_ERR_PROTO);
    CHECK_EQ_U64(off, 0);
}

static void hiredis_memory_cleanup(void)
{
    hreader h;
    uint64_t off = 99;
    hr_open(&h, NULL);
    hr_feed(&h, S("*2\r\n"));
    CHECK_EQ_INT(hr_get(&h), 0);
    hr_feed(&h, S("$5\r\nhello\r\n"));
    CHECK_EQ_INT(hr_get(&h), 0);
    hr_feed(&h, S("@foo\r\n"));
    CHECK_EQ_INT(hr_get(&h), RLK_ERR_PROTO);
    CHECK_EQ_INT(rlk_resp_parser_error(&h.reader.parser, &off, NULL), RLK_ERR_PROTO);
    CHECK_EQ_U64(off, 15);
    hr_close(&h); /* valgrind reports anything left behind */
}

static hreader nested_reader;
static int nested_open, nested_ret;

static void hiredis_nested_multi_bulks(void)
{
    int i;
    hr_open(&nested_reader, NULL);
    nested_open = 1;
    for (i = 0; i < 128; i++) {
        hr_feed(&nested_reader, S("*1\r\n"));
        CHECK_EQ_INT(hr_get(&nested_reader), 0);
    }
    hr_feed(&nested_reader, S("$6\r\nLOLWUT\r\n"));
    nested_ret = hr_get(&nested_reader);
    CHECK_EQ_INT(nested_ret, 1);
    CHECK(nested_reader.reply && nested_reader.reply->type == RLK_RESP_ARRAY &&
          nested_reader.reply->len == 1);
}

static void hiredis_nested_multi_bulks_correctly(void)
{
    const rlk_resp_value *v = nested_reader.reply;
    int i;
    CHECK_EQ_INT(nested_ret, 1);
    for (i = 0; i < 128 && v; i++) {
        CHECK(v->type == RLK_RESP_ARRAY && v->len == 1);
        v = at(v, 0);
    }
    CHECK(str_is(v, RLK_RESP_BULK, "LOLWUT"));
    if (nested_open) hr_close(&nested_reader);
    nested_open = 0;
}

static void hiredis_llong_max(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S(":9223372036854775807\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_INTEGER && h.reply->integer == INT64_MAX);
    hr_close(&h);
}

static void hiredis_over_llong_max(void)
{
    expect_fail(S(":9223372036854775808\r\n"), NULL, RLK_ERR_PROTO);
}

static void hiredis_llong_min(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S(":-9223372036854775808\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_INTEGER && h.reply->integer == INT64_MIN);
    hr_close(&h);
}

static void hiredis_under_llong_min(void)
{
    expect_fail(S(":-9223372036854775809\r\n"), NULL, RLK_ERR_PROTO);
}

static void hiredis_array_below_minus_one(void)
{
    expect_fail(S("*-2\r\n+asdf\r\n"), NULL, RLK_ERR_PROTO);
}

static void hiredis_bulk_below_minus_one(void)
{
    expect_fail(S("$-2\r\nasdf\r\n"), NULL, RLK_ERR_PROTO);
}

static void hiredis_max_elements(void)
{
    rlk_resp_limits l;
    hreader h;
    rlk_resp_limits_default(&l);
    l.max_elements = 1024;
    expect_fail(S("*1025\r\n"), &l, RLK_ERR_LIMIT);
    /* and the limit itself is accepted */
    CHECK_EQ_INT(read_one(&h, &l, S("*1024\r\n")), 0);
    hr_close(&h);
}

static void hiredis_multi_bulk_never_overflows(void)
{
    char in[100];
    size_t len;
    rlk_resp_limits l;
    rlk_allocator a = {hc_malloc, hc_realloc, hc_free, NULL};
    hreader h;

    len = (size_t)snprintf(in, sizeof in, "*%llu\r\n+asdf\r\n",
                           (unsigned long long)(SIZE_MAX / sizeof(void *) + 3));
    /* the default limit refuses it */
    expect_fail(in, len, NULL, RLK_ERR_LIMIT);
    /* no limit: nothing is sized from the count, the reply is incomplete */
    rlk_resp_limits_default(&l);
    l.max_elements = UINT64_MAX;
    hc_bytes = 0;
    rlk_set_allocator(&a);
    CHECK_EQ_INT(read_one(&h, &l, in, len), 0);
    hr_close(&h);
    CHECK_EQ_INT(events_status(&l, in, len, NULL), 0);
    rlk_set_allocator(NULL);
    CHECK_MSG(hc_bytes < 64 * 1024, "%zu bytes allocated", hc_bytes);
}

static void hiredis_array_over_size_max(void)
{
    expect_fail(S("*9223372036854775807\r\n+asdf\r\n"), NULL, RLK_ERR_LIMIT);
}

static void hiredis_bulk_over_size_max(void)
{
    expect_fail(S("$9223372036854775807\r\nasdf\r\n"), NULL, RLK_ERR_LIMIT);
}

static void hiredis_status_reply(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("+OK\r\n")), 1);
    CHECK(str_is(h.reply, RLK_RESP_SIMPLE, "OK"));
    hr_close(&h);
}

static void hiredis_newline_across_feeds(void)
{
    hreader h;
    hr_open(&h, NULL);
    hr_feed(&h, S("+OK\r"));
    CHECK_EQ_INT(hr_get(&h), 0);
    hr_feed(&h, S("\n"));
    CHECK_EQ_INT(hr_get(&h), 1);
    CHECK(str_is(h.reply, RLK_RESP_SIMPLE, "OK"));
    hr_close(&h);
}

static void hiredis_no_reset_after_error(void)
{
    hreader h;
    hr_open(&h, NULL);
    hr_feed(&h, S("x"));
    CHECK_EQ_INT(hr_get(&h), RLK_ERR_PROTO);
    CHECK_EQ_INT(hr_get(&h), RLK_ERR_PROTO);
    CHECK(h.reply == NULL);
    hr_close(&h);
}

static void hiredis_no_reset_not_segfault(void)
{
    hreader h;
    hr_open(&h, NULL);
    hr_feed(&h, S("*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$"));
    CHECK_EQ_INT(hr_get(&h), 0);
    hr_feed(&h, S("3\r\nval\r\n"));
    CHECK_EQ_INT(hr_get(&h), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_ARRAY && h.reply->len == 3);
    CHECK(str_is(at(h.reply, 0), RLK_RESP_BULK, "SET"));
    CHECK(str_is(at(h.reply, 1), RLK_RESP_BULK, "hello"));
    CHECK(str_is(at(h.reply, 2), RLK_RESP_BULK, "val"));
    hr_close(&h);
}

static void hiredis_empty_multi_bulk(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("*0\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_ARRAY && h.reply->len == 0 &&
          h.reply->child == NULL);
    hr_close(&h);
}

static void hiredis_resp3_verbatim(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("=10\r\ntxt:LOLWUT\r\n")), 1);
    CHECK(str_is(h.reply, RLK_RESP_VERBATIM, "LOLWUT"));
    CHECK(h.reply && memcmp(h.reply->format, "txt", 4) == 0);
    hr_close(&h);
}

static void hiredis_resp3_push(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S(">2\r\n$6\r\nLOLWUT\r\n:42\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_PUSH && h.reply->len == 2);
    CHECK(str_is(at(h.reply, 0), RLK_RESP_BULK, "LOLWUT"));
    CHECK(at(h.reply, 1) && at(h.reply, 1)->type == RLK_RESP_INTEGER &&
          at(h.reply, 1)->integer == 42);
    hr_close(&h);
}

static void check_pi(const rlk_resp_value *v)
{
    CHECK(v && v->type == RLK_RESP_DOUBLE);
    if (!v) return;
    CHECK(fabs(v->dbl - 3.14159265358979323846) < 0.00000001);
    CHECK_EQ_MEM(v->str, v->len, "3.14159265358979323846", 22);
}

static void hiredis_resp3_double(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S(",3.14159265358979323846\r\n")), 1);
    check_pi(h.reply);
    hr_close(&h);
}

static void hiredis_resp3_invalid_double(void)
{
    expect_fail(S(",3.14159\000265358979323846\r\n"), NULL, RLK_ERR_PROTO);
}

static void hiredis_resp3_double_inf(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S(",inf\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_DOUBLE && isinf(h.reply->dbl) && h.reply->dbl > 0);
    hr_close(&h);
}

static void hiredis_resp3_double_nan(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S(",nan\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_DOUBLE && isnan(h.reply->dbl));
    hr_close(&h);
}

static void hiredis_resp3_double_minus_nan(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S(",-nan\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_DOUBLE && isnan(h.reply->dbl));
    hr_close(&h);
}

static void hiredis_resp3_nil(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("_\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_NULL && h.reply->null_wire == '_');
    hr_close(&h);
}

static void hiredis_resp3_invalid_nil(void)
{
    expect_fail(S("_nil\r\n"), NULL, RLK_ERR_PROTO);
}

static void hiredis_resp3_bool_true(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("#t\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_BOOL && h.reply->integer == 1);
    hr_close(&h);
}

static void hiredis_resp3_bool_false(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("#f\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_BOOL && h.reply->integer == 0);
    hr_close(&h);
}

static void hiredis_resp3_invalid_bool(void)
{
    expect_fail(S("#foobar\r\n"), NULL, RLK_ERR_PROTO);
}

static void hiredis_resp3_map(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("%2\r\n+first\r\n:123\r\n$6\r\nsecond\r\n#t\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_MAP && h.reply->len == 2); /* pairs */
    CHECK(str_is(at(h.reply, 0), RLK_RESP_SIMPLE, "first"));
    CHECK(at(h.reply, 1) && at(h.reply, 1)->type == RLK_RESP_INTEGER && at(h.reply, 1)->integer == 123);
    CHECK(str_is(at(h.reply, 2), RLK_RESP_BULK, "second"));
    CHECK(at(h.reply, 3) && at(h.reply, 3)->type == RLK_RESP_BOOL && at(h.reply, 3)->integer == 1);
    CHECK(at(h.reply, 4) == NULL);
    hr_close(&h);
}

static void hiredis_resp3_attribute(void)
{
    static const char in[] = "|2\r\n+foo\r\n:123\r\n+bar\r\n#t\r\n";
    hreader h;
    const rlk_resp_value *a;
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t c, pos = 0;
    int n = 0, ret;

    /* the attribute alone is not a reply: it waits for its value */
    CHECK_EQ_INT(read_one(&h, NULL, in, sizeof in - 1), 0);
    hr_feed(&h, S("+OK\r\n"));
    CHECK_EQ_INT(hr_get(&h), 1);
    CHECK_EQ_INT(h.done, sizeof in - 1 + 5);
    CHECK(str_is(h.reply, RLK_RESP_SIMPLE, "OK"));
    a = h.reply ? h.reply->attr : NULL;
    CHECK(a && a->type == RLK_RESP_ATTR && a->len == 2);
    CHECK(str_is(at(a, 0), RLK_RESP_SIMPLE, "foo"));
    CHECK(at(a, 1) && at(a, 1)->type == RLK_RESP_INTEGER && at(a, 1)->integer == 123);
    CHECK(str_is(at(a, 2), RLK_RESP_SIMPLE, "bar"));
    CHECK(at(a, 3) && at(a, 3)->type == RLK_RESP_BOOL && at(a, 3)->integer == 1);
    hr_close(&h);

    /* events: the attribute map, none of it ending a reply */
    rlk_resp_parser_init(&p, NULL);
    while ((ret = rlk_resp_next(&p, in + pos, sizeof in - 1 - pos, &c, &ev)) == 1 && n < 100) {
        pos += c;
        CHECK(!(ev.flags & RLK_EV_F_REPLY_END));
        if (n == 0) CHECK(ev.kind == RLK_EV_BEGIN && ev.type == RLK_RESP_ATTR && ev.integer == 2);
        if (n == 5) CHECK(ev.kind == RLK_EV_END && ev.type == RLK_RESP_ATTR && ev.depth == 0);
        n++;
    }
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(n, 6);
    CHECK(!rlk_resp_parser_idle(&p));
    rlk_resp_parser_free(&p);
}

static void hiredis_resp3_set(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("~5\r\n+orange\r\n$5\r\napple\r\n#f\r\n:100\r\n:999\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_SET && h.reply->len == 5);
    CHECK(str_is(at(h.reply, 0), RLK_RESP_SIMPLE, "orange"));
    CHECK(str_is(at(h.reply, 1), RLK_RESP_BULK, "apple"));
    CHECK(at(h.reply, 2) && at(h.reply, 2)->type == RLK_RESP_BOOL && at(h.reply, 2)->integer == 0);
    CHECK(at(h.reply, 3) && at(h.reply, 3)->type == RLK_RESP_INTEGER && at(h.reply, 3)->integer == 100);
    CHECK(at(h.reply, 4) && at(h.reply, 4)->type == RLK_RESP_INTEGER && at(h.reply, 4)->integer == 999);
    hr_close(&h);
}

static void hiredis_resp3_bignum(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("(3492890328409238509324850943850943825024385\r\n")), 1);
    CHECK(str_is(h.reply, RLK_RESP_BIGNUM, "3492890328409238509324850943850943825024385"));
    hr_close(&h);
}

static void hiredis_resp3_doubles_in_array(void)
{
    hreader h;
    CHECK_EQ_INT(read_one(&h, NULL, S("*1\r\n,3.14159265358979323846\r\n")), 1);
    CHECK(h.reply && h.reply->type == RLK_RESP_ARRAY && h.reply->len == 1);
    check_pi(at(h.reply, 0));
    hr_close(&h);
}

void run_hiredis_cases(void)
{
    RUN_TEST(hiredis_error_handling);
    RUN_TEST(hiredis_memory_cleanup);
    RUN_TEST(hiredis_nested_multi_bulks);
    RUN_TEST(hiredis_nested_multi_bulks_correctly);
    RUN_TEST(hiredis_llong_max);
    RUN_TEST(hiredis_over_llong_max);
    RUN_TEST(hiredis_llong_min);
    RUN_TEST(hiredis_under_llong_min);
    RUN_TEST(hiredis_array_below_minus_one);
    RUN_TEST(hiredis_bulk_below_minus_one);
    RUN_TEST(hiredis_max_elements);
    RUN_TEST(hiredis_multi_bulk_never_overflows);
    RUN_TEST(hiredis_array_over_size_max);
    RUN_TEST(hiredis_bulk_over_size_max);
    RUN_TEST(hiredis_status_reply);
    RUN_TEST(hiredis_newline_across_feeds);
    RUN_TEST(hiredis_no_reset_after_error);
    RUN_TEST(hiredis_no_reset_not_segfault);
    RUN_TEST(hiredis_empty_multi_bulk);
    RUN_TEST(hiredis_resp3_verbatim);
    RUN_TEST(hiredis_resp3_push);
    RUN_TEST(hiredis_resp3_double);
    RUN_TEST(hiredis_resp3_invalid_double);
    RUN_TEST(hiredis_resp3_double_inf);
    RUN_TEST(hiredis_resp3_double_nan);
    RUN_TEST(hiredis_resp3_double_minus_nan);
    RUN_TEST(hiredis_resp3_nil);
    RUN_TEST(hiredis_resp3_invalid_nil);
    RUN_TEST(hiredis_resp3_bool_true);
    RUN_TEST(hiredis_resp3_bool_false);
    RUN_TEST(hiredis_resp3_invalid_bool);
    RUN_TEST(hiredis_resp3_map);
    RUN_TEST(hiredis_resp3_attribute);
    RUN_TEST(hiredis_resp3_set);
    RUN_TEST(hiredis_resp3_bignum);
    RUN_TEST(hiredis_resp3_doubles_in_array);
}
