/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Who holds a lock, and names that are no lock, against a real
 * redis-server on a free loopback port: the holder's facts in a simple
 * lock's token and in a reentrant lock's rlk:holder field (written by a
 * handed-over waiter's confirmation too), as
 * rlk_lock_get_status reads them back; an application's key under the
 * lock's name (another type, no TTL, a hash of other values) refused at
 * once with RLK_LOCK_NOT_A_LOCK, with and without a wait, while others'
 * locks stay busy.
 *
 * Every wait is on a condition under a deadline.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "locktest.h"
#include "resplock.h"
#include "server.h"

#include <time.h>
#include <unistd.h>

/* The wall clock, as the holder's facts read it. */
static int64_t wall_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Acquires name with cmd recorded; NULL (a test failure) when not. */
static rlk_lock *acq_cmd(rlk_client *cl, const char *name, rlk_lock_kind kind, const char *cmd)
{
    rlk_lock_options o;
    opts(&o, 30000, 0, kind, 0, NULL);
    o.holder_cmd = cmd;
    rlk_lock *l = NULL;
    int r = rlk_lock_acquire(cl, name, &o, &l);
    CHECK_MSG(r == RLK_OK, "acquire %s: %d %s", name, r, rlk_client_errmsg(cl));
    return r == RLK_OK ? l : NULL;
}

static void host_name(char *out, size_t n)
{
    char h[256] = "";
    gethostname(h, sizeof h - 1);
    h[sizeof h - 1] = '\0';
    snprintf(out, n, "%s", h);
}

/* The facts of a simple lock: in its token, read back by the status. */
static void test_simple_facts(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l = NULL;
    char host[RLK_HOLDER_HOST_MAX + 1], got[512];
    rlk_lock_status st;
    if (!a || !b) goto out;
    host_name(host, sizeof host);
    int64_t t0 = wall_ms();
    l = acq_cmd(a, "facts-s", RLK_LOCK_SIMPLE, "report.sh --day 'a b';x+y");
    int64_t t1 = wall_ms();
    if (!l) goto out;
    const char *tok = rlk_lock_token(l);
    CHECK_MSG(is_token(tok), "token %s", tok);
    /* Encoded: no space, and ';' only between the facts. */
    CHECK_MSG(strstr(tok, ";c=report.sh%20--day%20%27a%20b%27%3Bx%2By") != NULL, "token %s", tok);
    CHECK(strchr(tok, ' ') == NULL && strchr(tok, '+') == NULL);
    CHECK(CMD_STR(admin, got, "GET", "facts-s") == 1);
    CHECK_EQ_STR(got, tok);
    memset(&st, 0x5a, sizeof st);
    CHECK_EQ_INT(rlk_lock_get_status(b, "facts-s", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 1);
    CHECK_EQ_INT(st.kind, RLK_LOCK_SIMPLE);
    CHECK_EQ_INT(st.not_a_lock, 0);
    CHECK_EQ_INT(st.has_facts, 1);
    CHECK_EQ_STR(st.host, host);
    CHECK_EQ_INT(st.pid, (long long)getpid());
    CHECK_MSG(st.since_ms >= t0 && st.since_ms <= t1, "since %lld, acquired in [%lld, %lld]",
              (long long)st.since_ms, (long long)t0, (long long)t1);
    CHECK_EQ_STR(st.cmd, "report.sh --day 'a b';x+y");
    CHECK_EQ_U64(st.fence, 0);
    /* Marked by a waiter: the facts read the same. */
    CHECK_EQ_INT(CMD_INT(admin, "APPEND", "facts-s", "+w"), (long long)strlen(tok) + 2);
    CHECK_EQ_INT(rlk_lock_get_status(b, "facts-s", &st), RLK_OK);
    CHECK_EQ_STR(st.cmd, "report.sh --day 'a b';x+y");
    CHECK_EQ_INT(st.pid, (long long)getpid());
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    l = NULL;
    /* Free: no facts. */
    CHECK_EQ_INT(rlk_lock_get_status(b, "facts-s", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 0);
    CHECK_EQ_INT(st.has_facts, 0);
    CHECK_EQ_STR(st.host, "");

    /* A long command: at most RLK_HOLDER_CMD_MAX bytes kept, encoded,
     * no escape cut; none given: no c=. */
    char lng[300];
    memset(lng, 'x', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    lng[62] = ' ';
    l = acq_cmd(a, "facts-long", RLK_LOCK_SIMPLE, lng);
    if (!l) goto out;
    const char *c = strstr(rlk_lock_token(l), ";c=");
    CHECK(c && strlen(c + 3) <= RLK_HOLDER_CMD_MAX && strlen(c + 3) == 62);
    CHECK_EQ_INT(rlk_lock_get_status(b, "facts-long", &st), RLK_OK);
    CHECK_EQ_INT((long long)strlen(st.cmd), 62);
    rlk_lock_release(l);
    l = acq_cmd(a, "facts-none", RLK_LOCK_SIMPLE, NULL);
    if (!l) goto out;
    CHECK(strstr(rlk_lock_token(l), ";c=") == NULL);
    CHECK_EQ_INT(rlk_lock_get_status(b, "facts-none", &st), RLK_OK);
    CHECK_EQ_INT(st.has_facts, 1);
    CHECK_EQ_STR(st.cmd, "");
    /* Another client's token: no facts. */
    CMD(admin, "SET", "facts-py", "0123456789abcdef0123456789abcdef", "PX", "30000");
    CHECK_EQ_INT(rlk_lock_get_status(b, "facts-py", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 1);
    CHECK_EQ_INT(st.has_facts, 0);
    CHECK_EQ_INT(st.not_a_lock, 0);
out:
    if (l) rlk_lock_release(l);
    CMD(admin, "DEL", "facts-py");
    rlk_client_free(a);
    rlk_client_free(b);
}

/* A reentrant lock's facts: the field rlk:holder, beside the holds, which
 * it does not count; gone with the key. */
static void test_reentrant_facts(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l1 = NULL, *l2 = NULL;
    char got[512];
    rlk_lock_status st;
    if (!a || !b) goto out;
    l1 = acq_cmd(a, "facts-r", RLK_LOCK_REENTRANT, "svc worker");
    l2 = l1 ? acq_cmd(a, "facts-r", RLK_LOCK_REENTRANT, "other") : NULL;
    if (!l2) goto out;
    CHECK(CMD_STR(admin, got, "HGET", "facts-r", "rlk:holder") == 1);
    CHECK_MSG(strncmp(got, "h=", 2) == 0 && strstr(got, ";c=svc%20worker") != NULL, "rlk:holder %s", got);
    CHECK_EQ_INT(CMD_INT(admin, "HLEN", "facts-r"), 2);
    CHECK_EQ_INT(rlk_lock_get_status(b, "facts-r", &st), RLK_OK);
    CHECK_EQ_INT(st.kind, RLK_LOCK_REENTRANT);
    CHECK_EQ_INT(st.holds, 2);
    CHECK_EQ_INT(st.not_a_lock, 0);
    CHECK_EQ_INT(st.has_facts, 1);
    CHECK_EQ_INT(st.pid, (long long)getpid());
    CHECK_EQ_STR(st.cmd, "svc worker"); /* the first hold's, which made the hash */
    /* Another holder: busy, not "not a lock". */
    CHECK_EQ_INT(try_acquire(b, "facts-r", RLK_LOCK_REENTRANT), RLK_LOCK_BUSY);
    CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    l2 = NULL;
    CHECK_EQ_INT(rlk_lock_release(l1), RLK_OK);
    l1 = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "facts-r"), 0);
out:
    if (l2) rlk_lock_release(l2);
    if (l1) rlk_lock_release(l1);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* A reentrant lock handed over to a waiter in line: the handoff's hash
 * has no rlk:holder; the waiter's confirmation writes its facts. */
static void test_reentrant_handoff_facts(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l = NULL;
    struct waiter w;
    int started = 0;
    rlk_lock_status st;
    if (!a || !b) goto out;
    l = acq_cmd(a, "facts-rh", RLK_LOCK_REENTRANT, "first");
    if (!l || !waiter_start(&w, b, "facts-rh", 30000, 10000, RLK_LOCK_REENTRANT)) goto out;
    started = 1;
    if (!CHECK(wait_waiters("facts-rh", 1, 5000))) goto out;
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    l = NULL;
    pthread_join(w.th, NULL);
    started = 0;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    /* Reported held at the handoff's message; its confirmation, sent
     * then, writes the facts within a round trip. */
    int64_t until = ts_now_ms() + MARGIN;
    do CHECK_EQ_INT(rlk_lock_get_status(a, "facts-rh", &st), RLK_OK);
    while (!st.has_facts && ts_now_ms() < until);
    CHECK_EQ_INT(st.holds, 1);
    CHECK_EQ_INT(st.has_facts, 1);
    CHECK_EQ_INT(st.pid, (long long)getpid());
    CHECK_EQ_STR(st.cmd, ""); /* the waiter's, which named none */
    rlk_lock_release(w.l);
out:
    if (started) {
        pthread_join(w.th, NULL);
        if (w.l) rlk_lock_release(w.l);
    }
    if (l) rlk_lock_release(l);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* An acquire of kind on name, waiting up to wait_ms: its status, and how
 * long it took. */
static int try_for(rlk_client *cl, const char *name, rlk_lock_kind kind, int64_t wait_ms,
                   int64_t *took)
{
    rlk_lock_options o;
    opts(&o, 10000, wait_ms, kind, 0, NULL);
    rlk_lock *l = NULL;
    int64_t t0 = ts_now_ms();
    int r = rlk_lock_acquire(cl, name, &o, &l);
    *took = ts_now_ms() - t0;
    if (l) rlk_lock_release(l);
    return r;
}

/* Names that are an application's keys: not a lock, at once, with or
 * without a wait, for both kinds; the key left as it was.  Others'
 * locks (a string or a hash of counts, with a TTL) stay busy. */
static void test_not_a_lock(void)
{
    static const struct {
        const char *name;
        int why;
    } keys[] = {
        {"nal-str", RLK_NOT_A_LOCK_NO_TTL},   {"nal-hash", RLK_NOT_A_LOCK_NO_TTL},
        {"nal-list", RLK_NOT_A_LOCK_TYPE},    {"nal-hvals", RLK_NOT_A_LOCK_HASH},
        {"nal-zset", RLK_NOT_A_LOCK_TYPE},
    };
    rlk_client *a = CLIENT(), *b = CLIENT_EX(srv_url, 2, 0, NULL);
    rlk_lock_status st;
    int64_t took;
    char got[64];
    if (!a || !b) goto out;
    CMD(admin, "SET", "nal-str", "an application's value");
    CMD(admin, "HSET", "nal-hash", "f", "1");
    CMD(admin, "RPUSH", "nal-list", "a");
    CMD(admin, "HSET", "nal-hvals", "f", "not a count");
    CMD(admin, "PEXPIRE", "nal-hvals", "60000");
    CMD(admin, "ZADD", "nal-zset", "1", "m");
    CMD(admin, "PEXPIRE", "nal-zset", "60000");
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *k = keys[i].name;
        for (int kind = 0; kind < 2; kind++) {
            for (int w = 0; w < 2; w++) {
                rlk_client *cl = w ? b : a; /* a wait under RESP2 too */
                int r = try_for(cl, k, kind ? RLK_LOCK_REENTRANT : RLK_LOCK_SIMPLE, w ? 5000 : 0, &took);
                CHECK_MSG(r == RLK_LOCK_NOT_A_LOCK, "%s, %s, wait %d: %d %s", k,
                          kind ? "reentrant" : "simple", w ? 5000 : 0, r, rlk_client_errmsg(cl));
                CHECK_MSG(ts_contains(rlk_client_errmsg(cl), "is not a lock") &&
                              ts_contains(rlk_client_errmsg(cl), k),
                          "message: %s", rlk_client_errmsg(cl));
                CHECK_MSG(took < MARGIN, "%s: %lld ms (a wait of 5 s must not be waited)", k,
                          (long long)took);
            }
        }
        CHECK_EQ_INT(rlk_lock_get_status(a, k, &st), RLK_OK);
        CHECK_EQ_INT(st.held, 1);
        CHECK_MSG(st.not_a_lock == keys[i].why, "%s: not_a_lock %d, want %d", k, st.not_a_lock,
                  keys[i].why);
        CHECK_EQ_INT(st.has_facts, 0);
        /* Left as it was, and nobody in line. */
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "{nal-str}:queue"), 0);
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "{nal-list}:waiters"), 0);
    }
    CHECK(CMD_STR(admin, got, "GET", "nal-str") == 1);
    CHECK_EQ_STR(got, "an application's value");
    CHECK_EQ_INT(CMD_INT(admin, "PTTL", "nal-str"), -1);
    CHECK_EQ_INT(CMD_INT(admin, "LLEN", "nal-list"), 1);
    CHECK_MSG(strcmp(rlk_strerror(RLK_LOCK_NOT_A_LOCK), "unknown status") != 0, "rlk_strerror: %s",
              rlk_strerror(RLK_LOCK_NOT_A_LOCK));

    /* Others' locks: busy, not refused. */
    CMD(admin, "SET", "nal-py", "0123456789abcdef0123456789abcdef", "PX", "60000");
    CMD(admin, "HSET", "nal-rlock", "0f5e3a4c-1b2d-4e6f-8a9b-0c1d2e3f4a5b:57", "2");
    CMD(admin, "PEXPIRE", "nal-rlock", "60000");
    CHECK_EQ_INT(try_for(a, "nal-py", RLK_LOCK_SIMPLE, 0, &took), RLK_LOCK_BUSY);
    CHECK_EQ_INT(try_for(b, "nal-py", RLK_LOCK_SIMPLE, 300, &took), RLK_LOCK_BUSY);
    CHECK_MSG(took >= 300, "a wait of 300 ms on a held lock ended after %lld ms", (long long)took);
    CHECK_EQ_INT(try_for(a, "nal-rlock", RLK_LOCK_REENTRANT, 0, &took), RLK_LOCK_BUSY);
    CHECK_EQ_INT(try_for(a, "nal-rlock", RLK_LOCK_SIMPLE, 0, &took), RLK_LOCK_BUSY);
    CHECK_EQ_INT(rlk_lock_get_status(a, "nal-rlock", &st), RLK_OK);
    CHECK_EQ_INT(st.not_a_lock, 0);
    CHECK_EQ_INT(st.holds, 2);
out:
    CMD(admin, "DEL", "nal-str", "nal-hash", "nal-list", "nal-hvals", "nal-zset", "nal-py",
        "nal-rlock");
    rlk_client_free(a);
    rlk_client_free(b);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;

    RUN(test_simple_facts);
    RUN(test_reentrant_facts);
    RUN(test_reentrant_handoff_facts);
    RUN(test_not_a_lock);

    return locktest_finish(t0);
}
