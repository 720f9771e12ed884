/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Keys and slots (src/prim/keys.c), with no server: the Cluster hash slot of
 * a key (CRC16 values of the Redis Cluster specification, and its hash
 * tag rules), the keys derived from a lock's name (all in the name's
 * slot), tokens, and the readings of replies the lock front ends share.
 */
#include "testlib.h"
#include "internal.h"
#include "keys.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned slot(const char *k) { return rlk__keyslot(k, strlen(k)); }

/* The specification's check value: CRC16/XMODEM of "123456789" is
 * 0x31C3, and the slot is its low 14 bits; "foo" and "bar" as
 * CLUSTER KEYSLOT answers them. */
static void test_keyslot_values(void)
{
    CHECK_EQ_INT(slot("123456789"), 0x31C3 & 16383);
    CHECK_EQ_INT(slot("123456789"), 12739);
    CHECK_EQ_INT(slot("foo"), 12182);
    CHECK_EQ_INT(slot("bar"), 5061);
    CHECK_EQ_INT(slot("user1000"), 3443);
    CHECK_EQ_INT(slot(""), 0);
    /* The length given counts, not a NUL. */
    CHECK_EQ_INT(rlk__keyslot("foobar", 3), 12182);
    CHECK_EQ_INT(rlk__keyslot("a\0b", 3), 8383);
    for (int i = 0; i < 1000; i++) {
        char k[16];
        snprintf(k, sizeof k, "key:%d", i);
        if (!CHECK_MSG(slot(k) < 16384, "slot of %s: %u", k, slot(k))) break;
    }
}

/* The hash tag: the part between the first '{' and the first '}' after
 * it, when that part is not empty; else the whole key. */
static void test_keyslot_hash_tags(void)
{
    CHECK_EQ_INT(slot("{user1000}.following"), 3443);
    CHECK_EQ_INT(slot("{user1000}.followers"), 3443);
    /* An empty tag: the whole key. */
    CHECK_EQ_INT(slot("foo{}{bar}"), 8363);
    /* The first '{' opens: the tag is "{bar". */
    CHECK_EQ_INT(slot("foo{{bar}}zap"), 4015);
    CHECK_EQ_INT(slot("foo{{bar}}zap"), slot("{bar"));
    /* The first '}' after it closes: "bar". */
    CHECK_EQ_INT(slot("foo{bar}{zap}"), 5061);
    /* No '}' after the '{', or no '{' at all: the whole key. */
    CHECK_EQ_INT(slot("foo{bar"), 15278);
    CHECK_EQ_INT(slot("}bar{"), 1498);
}

/* The keys of a lock, in the scripts' order, each in the name's slot;
 * the release channel is Redisson's (redisson_lock__channel:{NAME}, or
 * :NAME when NAME has braces). */
static void check_keys(const char *name, const char *want_queue)
{
    size_t cap = rlk__key_cap(name);
    char *buf = malloc(RLK__NKEYS * cap);
    if (!CHECK(buf != NULL)) return;
    memset(buf, 'x', RLK__NKEYS * cap);
    rlk__make_keys(name, buf, cap);
    CHECK_EQ_STR(buf + RLK__K_LOCK * cap, name);
    if (want_queue) CHECK_EQ_STR(buf + RLK__K_QUEUE * cap, want_queue);
    unsigned s = slot(name);
    for (int k = RLK__K_QUEUE; k <= RLK__K_TOMB; k++) {
        const char *key = buf + (size_t)k * cap;
        CHECK_MSG(strlen(key) < cap, "key %d of %s overflows", k, name);
        CHECK_MSG(slot(key) == s, "key %d of %s: %s in slot %u, the name in %u", k, name, key,
                  slot(key), s);
        CHECK_MSG(strstr(key, name) != NULL, "key %d of %s: %s does not name it", k, name, key);
    }
    CHECK(strcmp(buf + RLK__K_QUEUE * cap, buf + RLK__K_WAITERS * cap) != 0);
    CHECK(strcmp(buf + RLK__K_WAITERS * cap, buf + RLK__K_TOMB * cap) != 0);
    char ch[512]; /* Redisson's prefixName: no braces added to a name that has some */
    snprintf(ch, sizeof ch, strchr(name, '{') ? "redisson_lock__channel:%s" : "redisson_lock__channel:{%s}",
             name);
    CHECK_EQ_STR(buf + RLK__K_CHANNEL * cap, ch);
    free(buf);
}

static void test_make_keys(void)
{
    check_keys("job", "{job}:queue");
    check_keys("{app}:job", "{app}:job:queue");
    check_keys("a}b", NULL);   /* a '}' and no tag: a computed tag */
    check_keys("{}x", NULL);   /* an empty tag: likewise */
    check_keys("a{b", "{a{b}:queue");
    check_keys("foo{{bar}}zap", "foo{{bar}}zap:queue");
    char longname[300];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    check_keys(longname, NULL);
}

static void test_hex_and_random(void)
{
    const unsigned char in[4] = {0x00, 0x0f, 0xa5, 0xff};
    char out[9];
    rlk__hex(in, 4, out);
    CHECK_EQ_STR(out, "000fa5ff");
    unsigned char a[16], b[16];
    CHECK_EQ_INT(rlk__random_bytes(a, sizeof a), 0);
    CHECK_EQ_INT(rlk__random_bytes(b, sizeof b), 0);
    /* Each byte is handed out once: two draws of 128 bits differ. */
    CHECK(memcmp(a, b, sizeof a) != 0);
    unsigned char big[1024];
    CHECK_EQ_INT(rlk__random_bytes(big, sizeof big), 0);
}

/* The numbers a request carries: as snprintf's "%lld" writes them. */
static void test_decimal(void)
{
    const long long vs[] = {0, 1, -1, 9, 10, -10, 99, 100, 123456789, 1700000000123LL,
                            9999999999999999LL, LLONG_MAX, LLONG_MIN, LLONG_MIN + 1};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
        char got[24], want[24];
        memset(got, 'x', sizeof got);
        size_t n = rlk__i64_dec(got, vs[i]);
        snprintf(want, sizeof want, "%lld", vs[i]);
        CHECK_EQ_STR(got, want);
        CHECK_EQ_INT(n, strlen(want));
    }
}

/* The cached process id is the process's, and a forked child's its own
 * (the holder's facts carry it: p=PID). */
static void test_pid(void)
{
    CHECK_EQ_INT(rlk__pid(), (long)getpid());
    CHECK_EQ_INT(rlk__pid(), (long)getpid());
    int fd[2];
    if (!CHECK(pipe(fd) == 0)) return;
    pid_t c = fork();
    if (c == 0) {
        long got[2] = {rlk__pid(), (long)getpid()};
        ssize_t w = write(fd[1], got, sizeof got);
        _exit(w == (ssize_t)sizeof got ? 0 : 1);
    }
    close(fd[1]);
    long got[2] = {0, 0};
    CHECK(read(fd[0], got, sizeof got) == (ssize_t)sizeof got);
    close(fd[0]);
    int st = 0;
    CHECK(waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ_INT(got[0], (long)c);
    CHECK_EQ_INT(got[1], (long)c);
    CHECK_EQ_INT(rlk__pid(), (long)getpid());
}

/* A value of a reply made by hand. */
static rlk_resp_value val(rlk_resp_type t, const char *s)
{
    rlk_resp_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    v.str = s;
    v.len = s ? strlen(s) : 0;
    return v;
}

static void test_reply_readings(void)
{
    rlk_resp_value e = val(RLK_RESP_ERROR, "ERR x"), be = val(RLK_RESP_BLOB_ERROR, "ERR y"),
                   st = val(RLK_RESP_SIMPLE, "OK"), bu = val(RLK_RESP_BULK, "OK");
    CHECK(rlk__is_error(&e));
    CHECK(rlk__is_error(&be));
    CHECK(!rlk__is_error(&st));
    CHECK(!rlk__is_error(NULL));
    CHECK(rlk__str_is(&st, "OK", 2));
    CHECK(rlk__str_is(&bu, "OK", 2));
    CHECK(!rlk__str_is(&e, "ERR x", 5));
    CHECK(!rlk__str_is(&st, "O", 1));

    /* TIME: seconds and microseconds as strings. */
    rlk_resp_value t = val(RLK_RESP_ARRAY, NULL), sec = val(RLK_RESP_BULK, "1700000000"),
                   us = val(RLK_RESP_BULK, "123456");
    t.child = &sec;
    t.len = 2;
    sec.next = &us;
    CHECK_EQ_U64(rlk__fence_of_time(&t), 1700000000123456ULL);
    us = val(RLK_RESP_BULK, "1000000"); /* not a microsecond count */
    CHECK_EQ_U64(rlk__fence_of_time(&t), 0);
    us = val(RLK_RESP_BULK, "12a");
    CHECK_EQ_U64(rlk__fence_of_time(&t), 0);
    sec.next = NULL;
    CHECK_EQ_U64(rlk__fence_of_time(&t), 0);

    int64_t x = 0;
    rlk_resp_value arr = val(RLK_RESP_ARRAY, NULL), i0 = val(RLK_RESP_INTEGER, NULL),
                   s1 = val(RLK_RESP_BULK, "7");
    i0.integer = -42;
    arr.child = &i0;
    i0.next = &s1;
    arr.len = 2;
    CHECK_EQ_INT(rlk__int_at(&arr, 0, &x), 0);
    CHECK_EQ_INT(x, -42);
    CHECK_EQ_INT(rlk__int_at(&arr, 1, &x), -1);
    CHECK_EQ_INT(rlk__int_at(&arr, 2, &x), -1);

    /* release.lua's yield window: "y END". */
    rlk_resp_value w = val(RLK_RESP_BULK, "y 1700000000123");
    CHECK_EQ_U64(rlk__window_end(&w), 1700000000123ULL);
    w = val(RLK_RESP_BULK, "y ");
    CHECK_EQ_U64(rlk__window_end(&w), 0);
    w = val(RLK_RESP_BULK, "x 12");
    CHECK_EQ_U64(rlk__window_end(&w), 0);
    w = val(RLK_RESP_NULL, NULL);
    CHECK_EQ_U64(rlk__window_end(&w), 0);
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_keyslot_values),
           TL_TEST(test_keyslot_hash_tags),
           TL_TEST(test_make_keys),
           TL_TEST(test_hex_and_random),
           TL_TEST(test_decimal),
           TL_TEST(test_pid),
           TL_TEST(test_reply_readings));
