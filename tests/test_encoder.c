/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Encoder tests: exact bytes of commands and of every value appender, the
 * buffer's growth and limit, round trips through the parser (events and
 * trees), and allocation failure at every allocation.
 */
#include "testlib.h"

#include "resp.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LIT(s) (s), (sizeof(s) - 1)
/* got (pointer, length) against a string literal, NULs included */
#define CHECK_BYTES(a, alen, lit) CHECK_EQ_MEM(a, alen, lit, sizeof(lit) - 1)

/* ------------------------------------------------------------------ */
/* Allocator that counts live blocks and can fail the Nth allocation.  */

static long live_blocks;   /* allocated and not yet freed              */
static long alloc_calls;   /* malloc and realloc calls since arming     */
static long fail_at;       /* 1-based call to fail; 0: never            */
static long failures;      /* calls that were failed                    */

static int should_fail(void)
{
    alloc_calls++;
    if (fail_at && alloc_calls == fail_at) {
        failures++;
        return 1;
    }
    return 0;
}

static void *t_malloc(void *ctx, size_t n)
{
    void *p;
    (void)ctx;
    if (should_fail()) return NULL;
    p = malloc(n);
    if (p) live_blocks++;
    return p;
}

static void *t_realloc(void *ctx, void *ptr, size_t n)
{
    void *p;
    (void)ctx;
    if (should_fail()) return NULL;
    p = realloc(ptr, n);
    if (p && !ptr) live_blocks++;
    return p;
}

static void t_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (ptr) live_blocks--;
    free(ptr);
}

static void counting_allocator(long fail_nth)
{
    static const rlk_allocator a = {t_malloc, t_realloc, t_free, NULL};
    live_blocks = 0;
    alloc_calls = 0;
    failures = 0;
    fail_at = fail_nth;
    rlk_set_allocator(&a);
}

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

/* What a bulk string looks like, built with snprintf: an oracle written
 * independently of the encoder's digit routine. */
static void expect_bulk(rlk_buf *e, const char *s, size_t n)
{
    char h[40];
    int k = snprintf(h, sizeof h, "$%zu\r\n", n);
    rlk_buf_append(e, h, (size_t)k);
    rlk_buf_append(e, s, n);
    rlk_buf_append(e, "\r\n", 2);
}

static void expect_command(rlk_buf *e, int argc, const char *const *argv,
                           const size_t *argvlen)
{
    char h[40];
    int i, k = snprintf(h, sizeof h, "*%d\r\n", argc);
    rlk_buf_append(e, h, (size_t)k);
    for (i = 0; i < argc; i++)
        expect_bulk(e, argv[i], argvlen ? argvlen[i] : strlen(argv[i]));
}

/* Parses one whole value from wire and returns its first event (a
 * scalar).  Returns 1 on success. */
static int parse_scalar(const char *wire, size_t n, rlk_resp_event *ev)
{
    rlk_resp_parser p;
    size_t used = 0;
    int r;

    rlk_resp_parser_init(&p, NULL);
    r = rlk_resp_next(&p, wire, n, &used, ev);
    r = r == 1 && used == n && ev->kind == RLK_EV_VALUE &&
        rlk_resp_parser_idle(&p);
    rlk_resp_parser_free(&p);
    return r;
}

/* Parses `in` event by event and writes every event back with
 * rlk_resp_put_event.  Returns the status of the first failure, or
 * RLK_OK when all of `in` was consumed and the parser is idle. */
static int events_back(const char *in, size_t n, rlk_buf *out)
{
    rlk_resp_parser p;
    rlk_resp_event ev;
    size_t off = 0;
    int r = RLK_OK;

    rlk_resp_parser_init(&p, NULL);
    for (;;) {
        size_t used = 0;
        int got = rlk_resp_next(&p, in + off, n - off, &used, &ev);
        if (got < 0) { r = got; break; }
        off += used;
        if (got == 0) {
            if (off != n || !rlk_resp_parser_idle(&p)) r = RLK_ERR_PROTO;
            break;
        }
        if ((r = rlk_resp_put_event(out, &ev)) != RLK_OK) break;
    }
    rlk_resp_parser_free(&p);
    return r;
}

/* Reads every reply of `in` as a tree and writes each back with
 * rlk_resp_put_value. */
static int trees_back(const char *in, size_t n, rlk_buf *out)
{
    rlk_resp_arena arena;
    rlk_resp_reader rd;
    size_t off = 0;
    int r = RLK_OK;

    rlk_resp_arena_init(&arena, NULL, 0, 0);
    rlk_resp_reader_init(&rd, &arena, NULL);
    while (off < n) {
        rlk_resp_value *v = NULL;
        size_t used = 0;
        int got = rlk_resp_read(&rd, in + off, n - off, &used, &v);
        if (got < 0) { r = got; break; }
        if (got == 0) { r = RLK_ERR_PROTO; break; }
        off += used;
        if ((r = rlk_resp_put_value(out, v)) != RLK_OK) break;
        rlk_resp_arena_reset(&arena);
    }
    rlk_resp_reader_free(&rd);
    rlk_resp_arena_free(&arena);
    return r;
}

/* ------------------------------------------------------------------ */
/* rlk_buf                                                              */

static void test_buf_basics(void)
{
    rlk_buf b;
    char big[1000];
    size_t i;

    rlk_buf_init(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0 && b.max == 0);
    CHECK_EQ_INT(rlk_buf_append(&b, "abc", 3), RLK_OK);
    CHECK_EQ_INT(rlk_buf_append(&b, NULL, 0), RLK_OK);
    CHECK_EQ_INT(rlk_buf_append(&b, NULL, 1), RLK_ERR_INVALID);
    CHECK_EQ_MEM(b.data, b.len, "abc", 3);
    for (i = 0; i < sizeof big; i++) big[i] = (char)i;
    /* Growth past the first block keeps what was there. */
    for (i = 0; i < 50; i++) CHECK_EQ_INT(rlk_buf_append(&b, big, sizeof big), RLK_OK);
    CHECK_EQ_U64(b.len, 3 + 50 * sizeof big);
    CHECK(b.cap >= b.len);
    CHECK_EQ_MEM(b.data, 3, "abc", 3);
    CHECK_EQ_MEM(b.data + 3 + 49 * sizeof big, sizeof big, big, sizeof big);

    /* Consuming moves the rest to the front. */
    rlk_buf_consume(&b, 3);
    CHECK_EQ_U64(b.len, 50 * sizeof big);
    CHECK_EQ_MEM(b.data, sizeof big, big, sizeof big);
    rlk_buf_consume(&b, 10);
    CHECK_EQ_MEM(b.data, sizeof big - 10, big + 10, sizeof big - 10);
    rlk_buf_consume(&b, 0);
    CHECK_EQ_U64(b.len, 50 * sizeof big - 10);
    rlk_buf_consume(&b, b.len + 100);
    CHECK_EQ_U64(b.len, 0);

    /* Reserve makes room without changing the contents. */
    CHECK_EQ_INT(rlk_buf_append(&b, "xy", 2), RLK_OK);
    CHECK_EQ_INT(rlk_buf_reserve(&b, 100000), RLK_OK);
    CHECK(b.cap - b.len >= 100000);
    CHECK_EQ_MEM(b.data, b.len, "xy", 2);
    CHECK_EQ_INT(rlk_buf_reserve(&b, (size_t)-1), RLK_ERR_NOMEM);
    CHECK_EQ_MEM(b.data, b.len, "xy", 2);

    rlk_buf_free(&b);
    CHECK(b.data == NULL && b.len == 0 && b.cap == 0);
    /* A freed buffer can be used again. */
    CHECK_EQ_INT(rlk_buf_append(&b, "z", 1), RLK_OK);
    CHECK_EQ_MEM(b.data, b.len, "z", 1);
    rlk_buf_free(&b);
}

static void test_buf_max(void)
{
    rlk_buf b;
    const char *argv[] = {"GET", "key"};
    size_t cmd = rlk_resp_command_size(2, argv, NULL);

    rlk_buf_init(&b);
    b.max = 10;
    CHECK_EQ_INT(rlk_buf_append(&b, "0123456789", 10), RLK_OK);
    CHECK_EQ_INT(rlk_buf_append(&b, "x", 1), RLK_ERR_LIMIT);
    CHECK_EQ_INT(rlk_buf_reserve(&b, 1), RLK_ERR_LIMIT);
    CHECK_EQ_INT(rlk_buf_reserve(&b, (size_t)-1), RLK_ERR_LIMIT);
    CHECK_EQ_MEM(b.data, b.len, "0123456789", 10);
    CHECK(b.cap <= 10);
    rlk_buf_consume(&b, 4);
    CHECK_EQ_INT(rlk_buf_append(&b, "abcd", 4), RLK_OK);
    CHECK_EQ_MEM(b.data, b.len, "456789abcd", 10);
    rlk_buf_free(&b);

    /* A command that does not fit in max is refused whole. */
    b.max = cmd - 1;
    CHECK_EQ_INT(rlk_buf_append(&b, "+", 1), RLK_OK);
    CHECK_EQ_INT(rlk_resp_append_command(&b, 2, argv, NULL), RLK_ERR_LIMIT);
    CHECK_EQ_MEM(b.data, b.len, "+", 1);
    CHECK_EQ_INT(rlk_resp_put_integer(&b, INT64_MIN), RLK_ERR_LIMIT);
    CHECK_EQ_INT(rlk_resp_put_double(&b, 0.1), RLK_OK);
    CHECK_EQ_MEM(b.data, b.len, "+,0.1\r\n", 7);
    rlk_buf_free(&b);
    b.max = cmd;
    CHECK_EQ_INT(rlk_resp_append_command(&b, 2, argv, NULL), RLK_OK);
    CHECK_EQ_MEM(b.data, b.len, "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", cmd);
    rlk_buf_free(&b);
}

/* ------------------------------------------------------------------ */
/* Commands                                                             */

static void test_command_bytes(void)
{
    rlk_buf b;
    const char *set[] = {"SET", "key", "value"};
    const char bin[] = {'a', '\0', '\r', '\n', 'b', '\r', '\n'};
    const char *argv[] = {"X", bin, "", NULL};
    const size_t argvlen[] = {1, sizeof bin, 0, 0};

    rlk_buf_init(&b);
    CHECK_EQ_INT(rlk_resp_append_command(&b, 3, set, NULL), RLK_OK);
    CHECK_BYTES(b.data, b.len, "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n");
    b.len = 0;
    /* Binary-safe with lengths: NUL, CR, LF inside; an empty argument; a
     * NULL pointer with length 0. */
    CHECK_EQ_INT(rlk_resp_append_command(&b, 4, argv, argvlen), RLK_OK);
    CHECK_BYTES(b.data, b.len, "*4\r\n$1\r\nX\r\n$7\r\na\0\r\nb\r\n\r\n$0\r\n\r\n$0\r\n\r\n");
    b.len = 0;
    /* Appending keeps what is there (pipelining). */
    CHECK_EQ_INT(rlk_resp_append_command(&b, 1, set, NULL), RLK_OK);
    CHECK_EQ_INT(rlk_resp_append_command(&b, 1, set + 2, NULL), RLK_OK);
    CHECK_BYTES(b.data, b.len, "*1\r\n$3\r\nSET\r\n*1\r\n$5\r\nvalue\r\n");
    rlk_buf_free(&b);
}

/* Lengths at every digit boundary and many arguments, against an oracle
 * built with snprintf. */
static void test_command_lengths(void)
{
    static const size_t lens[] = {0, 1, 9, 10, 11, 99, 100, 101, 999, 1000,
                                  9999, 10000, 65535, 100000, 1000000};
    size_t nl = sizeof lens / sizeof lens[0], i;
    char *payload = malloc(1000000);
    const char **argv = malloc(1200 * sizeof *argv);
    size_t *argvlen = malloc(1200 * sizeof *argvlen);
    rlk_buf b, e;
    int argc;

    if (!CHECK(payload && argv && argvlen)) goto out;
    for (i = 0; i < 1000000; i++) payload[i] = (char)(i * 7 + 3);
    rlk_buf_init(&b);
    rlk_buf_init(&e);
    for (i = 0; i < nl; i++) {
        argv[0] = "SET";
        argvlen[0] = 3;
        argv[1] = payload;
        argvlen[1] = lens[i];
        b.len = e.len = 0;
        CHECK_EQ_INT(rlk_resp_append_command(&b, 2, argv, argvlen), RLK_OK);
        expect_command(&e, 2, argv, argvlen);
        CHECK_EQ_MEM(b.data, b.len, e.data, e.len);
        CHECK_EQ_U64(rlk_resp_command_size(2, argv, argvlen), e.len);
    }
    /* argc across digit boundaries, with argument lengths varying. */
    for (argc = 1; argc <= 1200; argc += (argc < 12 ? 1 : 97)) {
        int k;
        for (k = 0; k < argc; k++) {
            argv[k] = payload + k;
            argvlen[k] = (size_t)(k * 13) % 120;
        }
        b.len = e.len = 0;
        CHECK_EQ_INT(rlk_resp_append_command(&b, argc, argv, argvlen), RLK_OK);
        expect_command(&e, argc, argv, argvlen);
        CHECK_EQ_MEM(b.data, b.len, e.data, e.len);
        CHECK_EQ_U64(rlk_resp_command_size(argc, argv, argvlen), b.len);
    }
    rlk_buf_free(&b);
    rlk_buf_free(&e);
out:
    free(payload);
    free(argv);
    free(argvlen);
}

static void test_command_strlen(void)
{
    const char *argv[] = {"HSET", "h", "field-with-a-longer-name", "1"};
    const size_t argvlen[] = {4, 1, 24, 1};
    rlk_buf a, b;

    rlk_buf_init(&a);
    rlk_buf_init(&b);
    CHECK_EQ_INT(rlk_resp_append_command(&a, 4, argv, NULL), RLK_OK);
    CHECK_EQ_INT(rlk_resp_append_command(&b, 4, argv, argvlen), RLK_OK);
    CHECK_EQ_MEM(a.data, a.len, b.data, b.len);
    CHECK_BYTES(a.data, a.len, "*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$24\r\nfield-with-a-longer-name\r\n$1\r\n1\r\n");
    CHECK_EQ_U64(rlk_resp_command_size(4, argv, NULL), a.len);
    rlk_buf_free(&a);
    rlk_buf_free(&b);
}

static void test_write_command(void)
{
    const char *argv[] = {"EVALSHA", "0123456789abcdef0123456789abcdef01234567",
                          "1", "lock:x", "tok\r\n\0"};
    const size_t argvlen[] = {7, 40, 1, 6, 6};
    char dst[256], want[256];
    size_t size = rlk_resp_command_size(5, argv, argvlen);
    rlk_buf e;
    long long n;
    size_t cap, i;

    rlk_buf_init(&e);
    expect_command(&e, 5, argv, argvlen);
    CHECK_EQ_U64(size, e.len);
    CHECK(size < sizeof dst);
    /* Exact fit. */
    memset(dst, 0x5a, sizeof dst);
    n = rlk_resp_write_command(dst, size, 5, argv, argvlen);
    CHECK_EQ_INT(n, (long long)size);
    CHECK_EQ_MEM(dst, size, e.data, e.len);
    CHECK_EQ_INT((unsigned char)dst[size], 0x5a);
    /* Every smaller capacity: RLK_ERR_SPACE, and not one byte written. */
    memset(want, 0x5a, sizeof want);
    for (cap = 0; cap < size; cap++) {
        memset(dst, 0x5a, sizeof dst);
        n = rlk_resp_write_command(dst, cap, 5, argv, argvlen);
        CHECK_EQ_INT(n, RLK_ERR_SPACE);
        CHECK_EQ_MEM(dst, sizeof dst, want, sizeof want);
    }
    CHECK_EQ_INT(rlk_resp_write_command(NULL, 0, 5, argv, argvlen), RLK_ERR_SPACE);
    /* Larger buffers: same bytes, same count. */
    for (i = size; i < sizeof dst; i += 17) {
        n = rlk_resp_write_command(dst, i, 5, argv, argvlen);
        CHECK_EQ_INT(n, (long long)size);
        CHECK_EQ_MEM(dst, size, e.data, e.len);
    }
    rlk_buf_free(&e);
}

static void test_command_invalid(void)
{
    const char *argv[] = {"GET", NULL, "k"};
    const size_t lens_bad[] = {3, 1, 1};
    const size_t lens_ok[] = {3, 0, 1};
    char dst[64];
    rlk_buf b;

    rlk_buf_init(&b);
    rlk_buf_append(&b, "keep", 4);
    CHECK_EQ_INT(rlk_resp_append_command(&b, 0, argv, NULL), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_resp_append_command(&b, -1, argv, NULL), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_resp_append_command(&b, 1, NULL, NULL), RLK_ERR_INVALID);
    /* NULL with a non-zero length, and NULL without lengths at all. */
    CHECK_EQ_INT(rlk_resp_append_command(&b, 3, argv, lens_bad), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_resp_append_command(&b, 3, argv, NULL), RLK_ERR_INVALID);
    CHECK_EQ_MEM(b.data, b.len, "keep", 4);
    CHECK_EQ_INT(rlk_resp_write_command(dst, sizeof dst, 0, argv, NULL), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_resp_write_command(dst, sizeof dst, 3, argv, lens_bad),
                 RLK_ERR_INVALID);
    /* Invalid arguments are reported before a too-small buffer. */
    CHECK_EQ_INT(rlk_resp_write_command(dst, 0, 3, argv, lens_bad), RLK_ERR_INVALID);
    CHECK_EQ_U64(rlk_resp_command_size(0, argv, NULL), 0);
    CHECK_EQ_U64(rlk_resp_command_size(3, argv, lens_bad), 0);
    CHECK_EQ_U64(rlk_resp_command_size(1, NULL, NULL), 0);
    /* NULL with length 0 is an empty argument. */
    CHECK_EQ_INT(rlk_resp_append_command(&b, 3, argv, lens_ok), RLK_OK);
    CHECK_BYTES(b.data, b.len, "keep*3\r\n$3\r\nGET\r\n$0\r\n\r\n$1\r\nk\r\n");
    rlk_buf_free(&b);
}

/* ------------------------------------------------------------------ */
/* Value appenders                                                      */

static void test_put_scalars(void)
{
    rlk_buf b;

    rlk_buf_init(&b);
#define EXPECT(call, bytes) do { \
        b.len = 0; \
        CHECK_EQ_INT(call, RLK_OK); \
        CHECK_BYTES(b.data, b.len, bytes); \
    } while (0)
#define REFUSE(call, status) do { \
        b.len = 0; \
        rlk_buf_append(&b, "=", 1); \
        CHECK_EQ_INT(call, status); \
        CHECK_EQ_MEM(b.data, b.len, "=", 1); \
    } while (0)
    EXPECT(rlk_resp_put_line(&b, RLK_RESP_SIMPLE, LIT("OK")), "+OK\r\n");
    EXPECT(rlk_resp_put_line(&b, RLK_RESP_SIMPLE, NULL, 0), "+\r\n");
    EXPECT(rlk_resp_put_line(&b, RLK_RESP_ERROR, LIT("ERR bad\tthing")),
           "-ERR bad\tthing\r\n");
    EXPECT(rlk_resp_put_line(&b, RLK_RESP_BIGNUM, LIT("-123456789012345678901234567890")),
           "(-123456789012345678901234567890\r\n");
    REFUSE(rlk_resp_put_line(&b, RLK_RESP_SIMPLE, LIT("a\rb")), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_line(&b, RLK_RESP_SIMPLE, LIT("a\nb")), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_line(&b, RLK_RESP_ERROR, LIT("x\r\n")), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_line(&b, RLK_RESP_BULK, LIT("x")), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_line(&b, RLK_RESP_SIMPLE, NULL, 2), RLK_ERR_INVALID);

    EXPECT(rlk_resp_put_blob(&b, RLK_RESP_BULK, NULL, LIT("hello")), "$5\r\nhello\r\n");
    EXPECT(rlk_resp_put_blob(&b, RLK_RESP_BULK, NULL, NULL, 0), "$0\r\n\r\n");
    EXPECT(rlk_resp_put_blob(&b, RLK_RESP_BULK, NULL, LIT("a\r\n\0b")),
           "$5\r\na\r\n\0b\r\n");
    EXPECT(rlk_resp_put_blob(&b, RLK_RESP_BLOB_ERROR, NULL, LIT("SYNTAX invalid")),
           "!14\r\nSYNTAX invalid\r\n");
    EXPECT(rlk_resp_put_blob(&b, RLK_RESP_VERBATIM, "txt", LIT("Some string")),
           "=15\r\ntxt:Some string\r\n");
    EXPECT(rlk_resp_put_blob(&b, RLK_RESP_VERBATIM, "mkd", NULL, 0), "=4\r\nmkd:\r\n");
    REFUSE(rlk_resp_put_blob(&b, RLK_RESP_VERBATIM, NULL, LIT("x")), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_blob(&b, RLK_RESP_SIMPLE, NULL, LIT("x")), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_blob(&b, RLK_RESP_BULK, NULL, NULL, 1), RLK_ERR_INVALID);

    EXPECT(rlk_resp_put_integer(&b, 0), ":0\r\n");
    EXPECT(rlk_resp_put_integer(&b, 7), ":7\r\n");
    EXPECT(rlk_resp_put_integer(&b, -1), ":-1\r\n");
    EXPECT(rlk_resp_put_integer(&b, 1000), ":1000\r\n");
    EXPECT(rlk_resp_put_integer(&b, INT64_MAX), ":9223372036854775807\r\n");
    EXPECT(rlk_resp_put_integer(&b, INT64_MIN), ":-9223372036854775808\r\n");

    EXPECT(rlk_resp_put_bool(&b, 1), "#t\r\n");
    EXPECT(rlk_resp_put_bool(&b, 42), "#t\r\n");
    EXPECT(rlk_resp_put_bool(&b, 0), "#f\r\n");

    EXPECT(rlk_resp_put_null(&b, '_'), "_\r\n");
    EXPECT(rlk_resp_put_null(&b, '$'), "$-1\r\n");
    EXPECT(rlk_resp_put_null(&b, '*'), "*-1\r\n");
    EXPECT(rlk_resp_put_null(&b, 0), "_\r\n");
    REFUSE(rlk_resp_put_null(&b, 'x'), RLK_ERR_INVALID);
    rlk_buf_free(&b);
}

/* Every integer of a sweep across digit boundaries, against snprintf. */
static void test_put_integer_sweep(void)
{
    rlk_buf b;
    char want[32];
    int64_t v;
    int k;

    rlk_buf_init(&b);
    /* 10^0 .. 10^18 and their neighbours, both signs. */
    for (v = 1, k = 0;; k++) {
        int64_t probes[6] = {v - 1, v, v + 1, -(v - 1), -v, -(v + 1)};
        int j;
        for (j = 0; j < 6; j++) {
            int n = snprintf(want, sizeof want, ":%lld\r\n", (long long)probes[j]);
            b.len = 0;
            CHECK_EQ_INT(rlk_resp_put_integer(&b, probes[j]), RLK_OK);
            CHECK_EQ_MEM(b.data, b.len, want, (size_t)n);
        }
        if (k == 18) break;
        v *= 10;
    }
    rlk_buf_free(&b);
}

static void test_put_aggregates(void)
{
    rlk_buf b;

    rlk_buf_init(&b);
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_ARRAY, 3), "*3\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_ARRAY, 0), "*0\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_MAP, 12), "%12\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_SET, 1), "~1\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_ATTR, 2), "|2\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_PUSH, 4), ">4\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_ARRAY, -1), "*?\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_MAP, -1), "%?\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_SET, -1), "~?\r\n");
    EXPECT(rlk_resp_put_header(&b, RLK_RESP_ARRAY, INT64_MAX),
           "*9223372036854775807\r\n");
    REFUSE(rlk_resp_put_header(&b, RLK_RESP_ATTR, -1), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_header(&b, RLK_RESP_PUSH, -1), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_header(&b, RLK_RESP_ARRAY, -2), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_header(&b, RLK_RESP_BULK, 1), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_header(&b, RLK_RESP_INTEGER, 1), RLK_ERR_INVALID);

    EXPECT(rlk_resp_put_stream_begin(&b), "$?\r\n");
    EXPECT(rlk_resp_put_chunk(&b, LIT("Hell")), ";4\r\nHell\r\n");
    EXPECT(rlk_resp_put_chunk(&b, LIT("0123456789\r\n")), ";12\r\n0123456789\r\n\r\n");
    /* An empty chunk would be the terminator: nothing is written. */
    EXPECT(rlk_resp_put_chunk(&b, NULL, 0), "");
    REFUSE(rlk_resp_put_chunk(&b, NULL, 3), RLK_ERR_INVALID);
    EXPECT(rlk_resp_put_stream_end(&b), ";0\r\n");
    EXPECT(rlk_resp_put_end(&b), ".\r\n");
    rlk_buf_free(&b);
}

/* ------------------------------------------------------------------ */
/* Doubles                                                              */

static void test_put_double_text(void)
{
    rlk_buf b;

    rlk_buf_init(&b);
    /* The shortest form that reads back: %.15g when it does. */
    EXPECT(rlk_resp_put_double(&b, 3.5), ",3.5\r\n");
    EXPECT(rlk_resp_put_double(&b, 0.1), ",0.1\r\n");
    EXPECT(rlk_resp_put_double(&b, 0.0), ",0\r\n");
    EXPECT(rlk_resp_put_double(&b, -0.0), ",-0\r\n");
    EXPECT(rlk_resp_put_double(&b, 100.0), ",100\r\n");
    EXPECT(rlk_resp_put_double(&b, 1e308), ",1e+308\r\n");
    EXPECT(rlk_resp_put_double(&b, -2.5e-300), ",-2.5e-300\r\n");
    EXPECT(rlk_resp_put_double(&b, 5e-324), ",4.94065645841247e-324\r\n");
    /* 0.1 + 0.2 needs 17 digits, 1/3 needs 16. */
    EXPECT(rlk_resp_put_double(&b, 0.1 + 0.2), ",0.30000000000000004\r\n");
    EXPECT(rlk_resp_put_double(&b, 1.0 / 3), ",0.3333333333333333\r\n");
    EXPECT(rlk_resp_put_double(&b, HUGE_VAL), ",inf\r\n");
    EXPECT(rlk_resp_put_double(&b, -HUGE_VAL), ",-inf\r\n");
    EXPECT(rlk_resp_put_double(&b, NAN), ",nan\r\n");
    EXPECT(rlk_resp_put_double(&b, -NAN), ",nan\r\n");
    rlk_buf_free(&b);
}

/* put_double then the parser: the same double, bit for bit. */
static int double_round_trips(double v, rlk_buf *b)
{
    rlk_resp_event ev;

    b->len = 0;
    if (rlk_resp_put_double(b, v) != RLK_OK) return 0;
    if (!parse_scalar(b->data, b->len, &ev) || ev.type != RLK_RESP_DOUBLE) return 0;
    if (isnan(v)) return isnan(ev.dbl);
    return memcmp(&ev.dbl, &v, sizeof v) == 0;
}

static void test_double_round_trip(void)
{
    static const double fixed[] = {
        0.1, 0.2, 0.3, 1e308, 1.7976931348623157e308, 5e-324, 2.2250738585072014e-308,
        2.2250738585072009e-308, -0.0, 0.0, 1.0, -1.0, 3.141592653589793,
        123456789012345678.0, 9007199254740993.0, 1e22, 1e23, 0.1 + 0.2,
        1.0 / 3, 2.0 / 3, 4.35, 1e-5, 123e-20, -7.0e15, 9.999999999999999e22};
    rlk_buf b;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t i;
    int bad = 0;

    rlk_buf_init(&b);
    for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        CHECK_MSG(double_round_trips(fixed[i], &b), "%.17g: wrote %.*s", fixed[i],
                  (int)b.len, b.data ? b.data : "");
    CHECK(double_round_trips(HUGE_VAL, &b));
    CHECK(double_round_trips(-HUGE_VAL, &b));
    CHECK(double_round_trips(NAN, &b));
    /* Random bit patterns cover every exponent and mantissa shape. */
    for (i = 0; i < 20000 && bad < 5; i++) {
        double v;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(&v, &x, sizeof v);
        if (!double_round_trips(v, &b)) {
            bad++;
            tl_state.checks++;
            tl_fail(__FILE__, __LINE__, "%a (%.17g): wrote %.*s", v, v, (int)b.len, b.data);
        }
    }
    rlk_buf_free(&b);
}

/* Locales for test_double_locale, made by localedef in a temporary
 * directory found through LOCPATH: the test then needs neither root nor the
 * locales package nor a locale someone happened to install.  The charmap is
 * ASCII plus U+066B, the Arabic decimal separator, two bytes in UTF-8. */
static char loc_dir[64];

static int write_file(const char *dir, const char *name, const char *text)
{
    char path[128];
    FILE *f;
    int ok;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f)
        return 0;
    ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

static int make_locales(void)
{
    static const char *const srcs[][2] = {
        {"rlk_comma", "LC_NUMERIC\ndecimal_point \"<U002C>\"\nthousands_sep \"<U002E>\"\n"
                      "grouping 3;3\nEND LC_NUMERIC\n"},
        {"rlk_arabic", "LC_NUMERIC\ndecimal_point \"<U066B>\"\nthousands_sep \"\"\n"
                       "grouping -1\nEND LC_NUMERIC\n"},
    };
    const char *tmp = getenv("TMPDIR");
    char path[128], cmd[512];
    FILE *f;
    int i, ok;

    snprintf(loc_dir, sizeof loc_dir, "%s/rlk-locale-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (strlen(loc_dir) >= sizeof loc_dir - 1 || !mkdtemp(loc_dir)) {
        loc_dir[0] = '\0';
        return 0;
    }
    snprintf(path, sizeof path, "%s/charmap", loc_dir);
    if (!(f = fopen(path, "w")))
        return 0;
    fputs("<code_set_name> RLK-TEST\n<mb_cur_max> 2\n<mb_cur_min> 1\nCHARMAP\n", f);
    for (i = 0; i < 128; i++)
        fprintf(f, "<U%04X> \\x%02x\n", i, i);
    fputs("<U066B> \\xd9\\xab\nEND CHARMAP\n", f);
    ok = fclose(f) == 0;
    for (i = 0; ok && i < 2; i++) {
        ok = write_file(loc_dir, "src", srcs[i][1]);
        /* localedef exits 1 for the categories left out even though it
         * wrote the locale (-c): setlocale is the judge. */
        snprintf(cmd, sizeof cmd, "localedef -c -f '%s/charmap' -i '%s/src' '%s/%s' >/dev/null 2>&1",
                 loc_dir, loc_dir, loc_dir, srcs[i][0]);
        if (ok && system(cmd) == -1)
            ok = 0;
    }
    return ok && setenv("LOCPATH", loc_dir, 1) == 0;
}

static void remove_locales(void)
{
    char cmd[128];
    if (!loc_dir[0])
        return;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", loc_dir);
    if (system(cmd) != 0)
        printf("note: could not remove %s\n", loc_dir);
    unsetenv("LOCPATH");
}

/* A locale whose decimal point is not '.' must not leak into the wire nor
 * into what the parser reads. */
static void double_locale_checks(const char *name, const char *want_point)
{
    rlk_buf b;
    const char *set = setlocale(LC_NUMERIC, name);
    char t[16];

    if (!set) {
        tl_fail(__FILE__, __LINE__, "could not make the locale %s with localedef in %s",
                name, loc_dir);
        return;
    }
    /* The C library really writes and reads numbers another way now, or
     * the checks below would prove nothing. */
    snprintf(t, sizeof t, "%.1f", 1.5);
    CHECK_EQ_STR(localeconv()->decimal_point, want_point);
    CHECK(strcmp(t, "1.5") != 0);
    CHECK(strtod("1.5", NULL) == 1.0);
    printf("note: test_double_locale: in %s, 1.5 is \"%s\"\n", name, t);

    rlk_buf_init(&b);
    EXPECT(rlk_resp_put_double(&b, 3.5), ",3.5\r\n");
    EXPECT(rlk_resp_put_double(&b, -1.25e-10), ",-1.25e-10\r\n");
    EXPECT(rlk_resp_put_double(&b, 0.1 + 0.2), ",0.30000000000000004\r\n");
    EXPECT(rlk_resp_put_double(&b, 1.0 / 3), ",0.3333333333333333\r\n");
    EXPECT(rlk_resp_put_double(&b, 1234567.5), ",1234567.5\r\n");
    /* The parser too: the exact fast path and the strtod path. */
    {
        static const char in[] = ",3.5\r\n,0.30000000000000004\r\n,1.5e-300\r\n";
        const double want[] = {3.5, 0.1 + 0.2, 1.5e-300};
        rlk_resp_parser p;
        rlk_resp_event ev;
        size_t off = 0, used;
        rlk_resp_parser_init(&p, NULL);
        for (int k = 0; k < 3; k++) {
            CHECK(rlk_resp_next(&p, in + off, sizeof in - 1 - off, &used, &ev) == 1);
            off += used;
            CHECK(ev.type == RLK_RESP_DOUBLE && ev.dbl == want[k]);
        }
        rlk_resp_parser_free(&p);
    }
    setlocale(LC_NUMERIC, "C");
    CHECK(double_round_trips(0.1 + 0.2, &b));
    rlk_buf_free(&b);
}

static void test_double_locale(void)
{
    if (!make_locales())
        tl_fail(__FILE__, __LINE__, "could not write the locale sources in %s",
                loc_dir[0] ? loc_dir : "a temporary directory");
    double_locale_checks("rlk_comma", ",");
    /* A decimal point of two bytes, a harder case for the parser. */
    double_locale_checks("rlk_arabic", "\xd9\xab");
    remove_locales();
}

/* ------------------------------------------------------------------ */
/* Events and trees                                                     */

/* Canonical inputs: what the parser reads, put_event writes back byte for
 * byte. */
static const struct {
    const char *name;
    const char *wire;
    size_t len;
    int streamed; /* a tree does not keep the streamed form */
} canon[] = {
#define C(name, s) {name, s, sizeof(s) - 1, 0}
#define S(name, s) {name, s, sizeof(s) - 1, 1}
    C("simple", "+OK\r\n"),
    C("error", "-ERR unknown command\r\n"),
    C("integers", ":0\r\n:-42\r\n:9223372036854775807\r\n:-9223372036854775808\r\n"),
    C("bulk", "$5\r\nhello\r\n$0\r\n\r\n$4\r\na\r\n\0\r\n"),
    C("nulls", "_\r\n$-1\r\n*-1\r\n"),
    C("bools", "#t\r\n#f\r\n"),
    C("doubles", ",3.5\r\n,1.50\r\n,1E3\r\n,-0\r\n,inf\r\n,-inf\r\n,nan\r\n,1e+308\r\n"),
    C("bignum", "(3492890328409238509324850943850943825024385\r\n"),
    C("blob error", "!21\r\nSYNTAX invalid syntax\r\n"),
    C("verbatim", "=15\r\ntxt:Some string\r\n=4\r\nmkd:\r\n"),
    C("array", "*3\r\n:1\r\n$1\r\na\r\n*2\r\n+x\r\n*0\r\n"),
    C("map", "%2\r\n+first\r\n:1\r\n+second\r\n%1\r\n:2\r\n~1\r\n#t\r\n"),
    C("set", "~3\r\n+a\r\n+b\r\n:3\r\n"),
    C("push", ">3\r\n+message\r\n+chan\r\n$2\r\nhi\r\n"),
    C("attr top", "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n"
                  ",0.0012\r\n*2\r\n:2039123\r\n:9543892\r\n"),
    C("attr inside", "*3\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n|1\r\n+a\r\n+b\r\n*1\r\n:3\r\n"),
    C("attr in map", "%1\r\n|1\r\n+k\r\n+v\r\n+key\r\n|1\r\n+x\r\n_\r\n:5\r\n"),
    S("streamed string", "$?\r\n;4\r\nHell\r\n;7\r\no world\r\n;0\r\n"),
    S("streamed empty", "$?\r\n;0\r\n"),
    S("streamed array", "*?\r\n:1\r\n*?\r\n.\r\n$?\r\n;1\r\nx\r\n;0\r\n.\r\n"),
    S("streamed map", "%?\r\n+a\r\n:1\r\n+b\r\n~?\r\n:2\r\n.\r\n.\r\n"),
#undef C
#undef S
};

static void test_put_event_round_trip(void)
{
    rlk_buf b;
    size_t i;

    rlk_buf_init(&b);
    for (i = 0; i < sizeof canon / sizeof canon[0]; i++) {
        b.len = 0;
        CHECK_MSG(events_back(canon[i].wire, canon[i].len, &b) == RLK_OK, "%s",
                  canon[i].name);
        CHECK_MSG(b.len == canon[i].len && memcmp(b.data, canon[i].wire, b.len) == 0,
                  "%s: not byte-exact", canon[i].name);
        if (b.len != canon[i].len || memcmp(b.data, canon[i].wire, b.len) != 0) {
            tl_show("got:  ", b.data, b.len, 0);
            tl_show("want: ", canon[i].wire, canon[i].len, 0);
        }
    }
    rlk_buf_free(&b);
}

/* Events made by hand, as a fake server would. */
static void test_put_event_made(void)
{
    rlk_resp_event ev;
    rlk_buf b;

    rlk_buf_init(&b);
    memset(&ev, 0, sizeof ev);
    ev.kind = RLK_EV_VALUE;
    ev.type = RLK_RESP_DOUBLE;
    ev.dbl = 0.25;
    /* No text: the value is written. */
    EXPECT(rlk_resp_put_event(&b, &ev), ",0.25\r\n");
    /* Text that is not one line is not trusted. */
    ev.str = "1\r\n:2";
    ev.len = 5;
    EXPECT(rlk_resp_put_event(&b, &ev), ",0.25\r\n");
    ev.str = "2.5e-1";
    ev.len = 6;
    EXPECT(rlk_resp_put_event(&b, &ev), ",2.5e-1\r\n");

    memset(&ev, 0, sizeof ev);
    ev.kind = RLK_EV_VALUE;
    ev.type = RLK_RESP_NULL;
    ev.null_wire = '$';
    EXPECT(rlk_resp_put_event(&b, &ev), "$-1\r\n");
    ev.type = RLK_RESP_VERBATIM;
    memcpy(ev.format, "txt", 4);
    ev.str = "hi";
    ev.len = 2;
    EXPECT(rlk_resp_put_event(&b, &ev), "=6\r\ntxt:hi\r\n");
    ev.type = RLK_RESP_SIMPLE;
    ev.str = "a\nb";
    ev.len = 3;
    REFUSE(rlk_resp_put_event(&b, &ev), RLK_ERR_INVALID);

    memset(&ev, 0, sizeof ev);
    ev.kind = RLK_EV_BEGIN;
    ev.type = RLK_RESP_MAP;
    ev.integer = 2;
    EXPECT(rlk_resp_put_event(&b, &ev), "%2\r\n");
    ev.flags = RLK_EV_F_STREAMED;
    ev.integer = -1;
    EXPECT(rlk_resp_put_event(&b, &ev), "%?\r\n");
    ev.kind = RLK_EV_END;
    EXPECT(rlk_resp_put_event(&b, &ev), ".\r\n");
    ev.flags = 0;
    EXPECT(rlk_resp_put_event(&b, &ev), "");
    ev.type = RLK_RESP_BULK;
    ev.flags = RLK_EV_F_STREAMED;
    EXPECT(rlk_resp_put_event(&b, &ev), ";0\r\n");
    ev.kind = RLK_EV_BEGIN;
    EXPECT(rlk_resp_put_event(&b, &ev), "$?\r\n");
    ev.kind = RLK_EV_CHUNK;
    ev.str = "abc";
    ev.len = 3;
    EXPECT(rlk_resp_put_event(&b, &ev), ";3\r\nabc\r\n");
    ev.kind = (rlk_resp_event_kind)99;
    REFUSE(rlk_resp_put_event(&b, &ev), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_event(&b, NULL), RLK_ERR_INVALID);
    rlk_buf_free(&b);
}

static void test_put_value_round_trip(void)
{
    rlk_buf b;
    size_t k;

    rlk_buf_init(&b);
    /* Trees lose only the streamed forms; counted inputs come back
     * exactly. */
    for (k = 0; k < sizeof canon / sizeof canon[0]; k++) {
        if (canon[k].streamed) continue;
        b.len = 0;
        CHECK_MSG(trees_back(canon[k].wire, canon[k].len, &b) == RLK_OK, "%s",
                  canon[k].name);
        CHECK_MSG(b.len == canon[k].len && memcmp(b.data, canon[k].wire, b.len) == 0,
                  "%s: not byte-exact", canon[k].name);
        if (b.len != canon[k].len || memcmp(b.data, canon[k].wire, b.len) != 0) {
            tl_show("got:  ", b.data, b.len, 0);
            tl_show("want: ", canon[k].wire, canon[k].len, 0);
        }
    }
    /* Streamed forms come back counted, with the same content. */
    b.len = 0;
    CHECK_EQ_INT(trees_back(LIT("*?\r\n:1\r\n*?\r\n.\r\n$?\r\n;1\r\nx\r\n;2\r\nyz\r\n;0\r\n.\r\n"
                                "%?\r\n+a\r\n~?\r\n:2\r\n.\r\n.\r\n"), &b),
                 RLK_OK);
    CHECK_BYTES(b.data, b.len, "*3\r\n:1\r\n*0\r\n$3\r\nxyz\r\n%1\r\n+a\r\n~1\r\n:2\r\n");
    rlk_buf_free(&b);
}

/* A deep reply, deeper than the encoder's inline stack, read by the tree
 * reader and written back. */
static void test_put_value_deep(void)
{
    enum { DEPTH = 1000 };
    rlk_buf in, out;
    int i;

    rlk_buf_init(&in);
    rlk_buf_init(&out);
    for (i = 0; i < DEPTH; i++) {
        /* An attribute every 7 levels, a sibling every 3. */
        if (i % 7 == 3) rlk_buf_append(&in, LIT("|1\r\n+a\r\n*1\r\n:7\r\n"));
        rlk_buf_append(&in, i % 3 ? "*1\r\n" : "*2\r\n", 4);
        if (i % 3 == 0) rlk_buf_append(&in, LIT(":1\r\n"));
    }
    rlk_buf_append(&in, LIT("$4\r\nleaf\r\n"));
    CHECK_EQ_INT(trees_back(in.data, in.len, &out), RLK_OK);
    CHECK_EQ_MEM(out.data, out.len, in.data, in.len);
    out.len = 0;
    CHECK_EQ_INT(events_back(in.data, in.len, &out), RLK_OK);
    CHECK_EQ_MEM(out.data, out.len, in.data, in.len);
    rlk_buf_free(&in);
    rlk_buf_free(&out);
}

/* Trees made by hand: the header follows the children present. */
static void test_put_value_made(void)
{
    rlk_resp_value v[8];
    rlk_buf b;

    memset(v, 0, sizeof v);
    rlk_buf_init(&b);
    v[0].type = RLK_RESP_MAP;
    v[0].len = 99; /* not trusted */
    v[0].child = &v[1];
    v[1].type = RLK_RESP_SIMPLE;
    v[1].str = "k";
    v[1].len = 1;
    v[1].next = &v[2];
    v[2].type = RLK_RESP_DOUBLE;
    v[2].dbl = 1.5;
    v[2].attr = &v[3];
    v[3].type = RLK_RESP_ATTR;
    v[3].child = &v[4];
    v[4].type = RLK_RESP_BOOL;
    v[4].integer = 1;
    v[4].next = &v[5];
    v[5].type = RLK_RESP_NULL; /* null_wire 0: "_" */
    /* v[0].next is a sibling of the root: not part of this value. */
    v[0].next = &v[6];
    v[6].type = RLK_RESP_INTEGER;
    v[6].integer = 5;
    EXPECT(rlk_resp_put_value(&b, &v[0]), "%1\r\n+k\r\n|1\r\n#t\r\n_\r\n,1.5\r\n");
    /* A map with an odd number of children is refused whole. */
    v[5].next = &v[7];
    v[7].type = RLK_RESP_INTEGER;
    REFUSE(rlk_resp_put_value(&b, &v[0]), RLK_ERR_INVALID);
    v[5].next = NULL;
    /* A bad scalar deep inside is refused whole too. */
    v[1].str = "k\r\n";
    v[1].len = 3;
    REFUSE(rlk_resp_put_value(&b, &v[0]), RLK_ERR_INVALID);
    v[1].type = (rlk_resp_type)'@';
    REFUSE(rlk_resp_put_value(&b, &v[0]), RLK_ERR_INVALID);
    REFUSE(rlk_resp_put_value(&b, NULL), RLK_ERR_INVALID);
    rlk_buf_free(&b);
}

/* ------------------------------------------------------------------ */
/* Allocation failure                                                    */

enum { CHAIN = 300 };

/* One scenario that allocates through every path of the encoder: buffer
 * growth (first block and realloc), a command, values, and a tree deep
 * enough to move the walk's stack to the heap and grow it there. */
static int alloc_scenario(rlk_resp_value *chain, int *saw_nomem)
{
    static const char *argv[] = {"SET", "a-key", "a-value-long-enough-to-grow"};
    rlk_buf b;
    size_t before;
    int rc, ok = 1, i;

    rlk_buf_init(&b);
#define STEP(call) do { \
        before = b.len; \
        rc = (call); \
        if (rc == RLK_ERR_NOMEM) { \
            *saw_nomem = 1; \
            if (b.len != before) ok = 0; \
        } else if (rc != RLK_OK) { \
            ok = 0; \
        } \
    } while (0)
    STEP(rlk_resp_append_command(&b, 3, argv, NULL));
    for (i = 0; i < 20; i++) STEP(rlk_resp_put_blob(&b, RLK_RESP_BULK, NULL,
                                                    "0123456789abcdef0123456789abcdef", 32));
    STEP(rlk_resp_put_double(&b, 0.1));
    STEP(rlk_resp_put_value(&b, chain));
    STEP(rlk_buf_reserve(&b, 1 << 20));
#undef STEP
    rlk_buf_free(&b);
    return ok;
}

static void test_alloc_failure(void)
{
    rlk_resp_value *chain = calloc(CHAIN, sizeof *chain);
    long n, total;
    int i, saw;

    if (!CHECK(chain != NULL)) return;
    for (i = 0; i < CHAIN; i++) {
        chain[i].type = RLK_RESP_ARRAY;
        chain[i].child = i + 1 < CHAIN ? &chain[i + 1] : NULL;
    }
    chain[CHAIN - 1].type = RLK_RESP_INTEGER;
    chain[CHAIN - 1].integer = 1;

    /* Count the allocations of a clean run, then fail each in turn. */
    counting_allocator(0);
    saw = 0;
    CHECK(alloc_scenario(chain, &saw));
    CHECK(!saw);
    total = alloc_calls;
    CHECK_EQ_INT(live_blocks, 0);
    CHECK(total >= 4); /* buffer first block, growth, stack to heap, stack growth */
    for (n = 1; n <= total; n++) {
        counting_allocator(n);
        saw = 0;
        CHECK_MSG(alloc_scenario(chain, &saw), "failing allocation %ld: a call "
                  "returned something else than OK/NOMEM or changed the buffer", n);
        CHECK_MSG(failures == 1 && saw, "failing allocation %ld not reported", n);
        CHECK_MSG(live_blocks == 0, "failing allocation %ld: %ld blocks leaked", n,
                  live_blocks);
    }
    rlk_set_allocator(NULL);
    free(chain);
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_buf_basics),
           TL_TEST(test_buf_max),
           TL_TEST(test_command_bytes),
           TL_TEST(test_command_lengths),
           TL_TEST(test_command_strlen),
           TL_TEST(test_write_command),
           TL_TEST(test_command_invalid),
           TL_TEST(test_put_scalars),
           TL_TEST(test_put_integer_sweep),
           TL_TEST(test_put_aggregates),
           TL_TEST(test_put_double_text),
           TL_TEST(test_double_round_trip),
           TL_TEST(test_double_locale),
           TL_TEST(test_put_event_round_trip),
           TL_TEST(test_put_event_made),
           TL_TEST(test_put_value_round_trip),
           TL_TEST(test_put_value_deep),
           TL_TEST(test_put_value_made),
           TL_TEST(test_alloc_failure));
