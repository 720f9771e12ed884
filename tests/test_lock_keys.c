/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A lock's keys and scripts as other clients and the server see them,
 * against real redis-server processes on free loopback ports: the
 * string of redis-py and go-redsync, the hash and release message of
 * Redisson, fencing tokens and their Cluster slots, and scripts flushed
 * from the server (NOSCRIPT, and the library of FUNCTIONs) under every
 * call and the watchdog.
 *
 * Every wait is on a condition under a deadline.  Timing assertions have
 * margins (MARGIN) that grow under valgrind.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "fakeserver.h"
#include "locktest.h"
#include "resplock.h"
#include "server.h"

#include <pthread.h>

/* ------------------------------------------------------------------ */
/* Cluster slots                                                       */

static void test_crc16_self_check(void)
{
    /* CLUSTER KEYSLOT refuses on a standalone server ("cluster support
     * disabled"), so the test's own CRC16 is checked against known
     * values instead. */
    rlk_resp_value *v = CMD(admin, "CLUSTER", "KEYSLOT", "foo");
    CHECK(v && (v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR ||
                (v->type == RLK_RESP_INTEGER && v->integer == 12182)));
    CHECK_EQ_INT(t_crc16("123456789", 9), 0x31C3);
    CHECK_EQ_INT(t_slot("foo"), 12182);
    CHECK_EQ_INT(t_slot("bar"), 5061);
    CHECK_EQ_INT(t_slot("{user1000}.following"), t_slot("{user1000}.followers"));
    CHECK_EQ_INT(t_slot("foo{}{bar}"), t_crc16("foo{}{bar}", 10) & 16383u);
    CHECK_EQ_INT(t_slot("foo{{bar}}zap"), t_crc16("{bar", 4) & 16383u);
    CHECK_EQ_INT(t_slot("foo{bar}{zap}"), t_slot("bar"));
}

/* ------------------------------------------------------------------ */
/* Fencing                                                             */

static void test_fence_increasing(void)
{
    rlk_client *c[3] = {CLIENT(), CLIENT(), CLIENT()};
    uint64_t last = 0;
    int i, bad = 0;
    if (!c[0] || !c[1] || !c[2]) goto out;
    for (i = 0; i < 30; i++) {
        rlk_lock *l = acquire(c[i % 3], "fence-order", 10000,
                              i % 2 ? RLK_LOCK_REENTRANT : RLK_LOCK_SIMPLE, 0, NULL, __LINE__);
        if (!l) break;
        if (rlk_lock_fence(l) <= last) bad++;
        last = rlk_lock_fence(l);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    CHECK_MSG(bad == 0, "%d fences did not increase", bad);
    /* From the server's clock: not ahead of it, and nothing stored. */
    CHECK_MSG(last <= ((uint64_t)server_time_ms() + 1) * 1000, "fence %llu ahead of the clock",
              (unsigned long long)last);
    {
        rlk_resp_value *k = CMD(admin, "KEYS", "*:fence");
        CHECK_MSG(k && k->type == RLK_RESP_ARRAY && !k->child, "a fence key was written");
    }
out:
    for (i = 0; i < 3; i++) rlk_client_free(c[i]);
}

/* The keys beside a lock are in its Cluster slot, whatever braces its
 * name has: here a reentrant release's tombstone, made by the same rule
 * as the queue and the waiters. */
static void test_keys_same_slot(void)
{
    static const char *const names[] = {"job", "{tag}job", "a}b", "{}x", "x{", "{a", "}{x",
                                        "{}{x}"};
    static const char *const prefix[] = {"{job}:released:", "{tag}job:released:", NULL, NULL,
                                         "{x{}:released:", NULL, NULL, NULL};
    rlk_client *a = CLIENT();
    size_t i;
    if (!a) return;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        char key[300];
        rlk_resp_value *k = CMD(admin, "KEYS", "*released*");
        for (const rlk_resp_value *e = k ? k->child : NULL; e; e = e->next) {
            snprintf(key, sizeof key, "%.*s", (int)e->len, e->str);
            CMD(admin, "DEL", key);
        }
        rlk_lock *l = ACQ_R(a, names[i], 10000);
        if (!l) continue;
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        k = CMD(admin, "KEYS", "*released*");
        if (!CHECK_MSG(k && k->child && !k->child->next, "\"%s\": not one tombstone", names[i]))
            continue;
        snprintf(key, sizeof key, "%.*s", (int)k->child->len, k->child->str);
        if (prefix[i])
            CHECK_MSG(strncmp(key, prefix[i], strlen(prefix[i])) == 0, "\"%s\": tombstone %s",
                      names[i], key);
        CHECK_MSG(t_slot(key) == t_slot(names[i]), "\"%s\" (slot %u) and its tombstone \"%s\" "
                  "(slot %u)", names[i], t_slot(names[i]), key, t_slot(key));
        CMD(admin, "DEL", key);
    }
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* Layouts of other clients                                            */

/* A holder written the way Redisson writes it blocks us; its release
 * message wakes a waiter long before the waiter's re-check. */
static void test_redisson_holder(void)
{
    rlk_client *a = CLIENT(), *w = CLIENT_EX(srv_url, 0, 5000, NULL);
    rlk_lock_status st;
    struct waiter wt;
    int64_t t_pub, limit = slow ? 2500 : 1000;
    if (!a || !w) goto out;
    CMD(admin, "DEL", "rs");
    CMD(admin, "HSET", "rs", "someuuid:1", "1");
    CMD(admin, "PEXPIRE", "rs", "30000");
    CHECK_EQ_INT(try_acquire(a, "rs", RLK_LOCK_REENTRANT), RLK_LOCK_BUSY);
    CHECK_EQ_INT(try_acquire(a, "rs", RLK_LOCK_SIMPLE), RLK_LOCK_BUSY);
    CHECK_EQ_INT(rlk_lock_get_status(a, "rs", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 1);
    CHECK_EQ_INT(st.kind, RLK_LOCK_REENTRANT);
    CHECK_EQ_INT(st.holds, 1);

    reset_stats(admin);
    if (!waiter_start(&wt, w, "rs", 10000, 10000, RLK_LOCK_REENTRANT)) goto out;
    /* Subscribed, and tried again after subscribing: it now waits. */
    CHECK(wait_calls(admin, SCRIPT_CALLS, 2, LONG_MS));
    CHECK(wait_calls(admin, "subscribe", 1, LONG_MS));
    CMD(admin, "DEL", "rs");
    t_pub = ts_now_ms();
    CHECK_EQ_INT(CMD_INT(admin, "PUBLISH", "redisson_lock__channel:{rs}", "0"), 1);
    pthread_join(wt.th, NULL);
    CHECK_MSG(wt.rc == RLK_OK, "waiter: %d %s", wt.rc, wt.err);
    CHECK_MSG(wt.done_at - t_pub < limit, "acquired %lld ms after the message (re-check 5000)",
              (long long)(wt.done_at - t_pub));
    if (wt.l) CHECK_EQ_INT(rlk_lock_release(wt.l), RLK_OK);
out:
    rlk_client_free(a);
    rlk_client_free(w);
}

/* redis-py's Lock and go-redsync write the same layout: a string holding
 * a token, set with SET NX PX. */
static void test_interop_string_layout(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l;
    rlk_resp_value *v;
    char got[256];
    if (!a) return;
    CMD(admin, "DEL", "interop");
    v = CMD(admin, "SET", "interop", "othertoken", "NX", "PX", "10000");
    CHECK(v && v->type == RLK_RESP_SIMPLE);
    CHECK_EQ_INT(try_acquire(a, "interop", RLK_LOCK_SIMPLE), RLK_LOCK_BUSY);
    CHECK_EQ_INT(try_acquire(a, "interop", RLK_LOCK_REENTRANT), RLK_LOCK_BUSY);
    CHECK_EQ_INT(rlk_release_token(a, "interop", "0123456789abcdef0123456789abcdef"),
                 RLK_LOCK_NOT_OWNER);
    CHECK(CMD_STR(admin, got, "GET", "interop") == 1);
    CHECK_EQ_STR(got, "othertoken");
    /* They release it by token with their own script; then it is ours. */
    CHECK_EQ_INT(rlk_release_token(a, "interop", "othertoken"), RLK_OK);
    l = ACQ(a, "interop", 10000);
    if (!l) goto out;
    /* What they see: held (SET NX fails), a string with our token. */
    v = CMD(admin, "SET", "interop", "theirs", "NX", "PX", "10000");
    CHECK(v && (v->type == RLK_RESP_NULL || (v->type == RLK_RESP_BULK && !v->str)));
    CMD_STR(admin, got, "TYPE", "interop");
    CHECK_EQ_STR(got, "string");
    CHECK(CMD_STR(admin, got, "GET", "interop") == 1);
    CHECK_EQ_STR(got, rlk_lock_token(l));
    /* redis-py's release script, given our token (as `resplock acquire`
     * prints it), releases our lock. */
    v = CMD(admin, "EVAL",
            "local token = redis.call('get', KEYS[1]) "
            "if not token or token ~= ARGV[1] then return 0 end "
            "redis.call('del', KEYS[1]) return 1",
            "1", "interop", rlk_lock_token(l));
    CHECK(v && v->type == RLK_RESP_INTEGER && v->integer == 1);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_HELD);
out:
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* Scripts                                                             */

/* Scripts and functions gone, as after a restart without persistence:
 * every call loads what it needs (by SCRIPT LOAD or FUNCTION LOAD). */
static void flush_scripts(void)
{
    CMD(admin, "SCRIPT", "FLUSH");
    CMD(admin, "FUNCTION", "FLUSH");
}

static void test_script_flush(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l;
    rlk_lock_status st;
    struct lost_rec lr;
    struct ticker t;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    l = ACQ(a, "flush", 10000);
    if (!l) goto out;
    flush_scripts();
    CHECK_EQ_INT(rlk_lock_extend(l, 5000, RLK_EXTEND_ADD), RLK_OK);
    flush_scripts();
    CHECK_EQ_INT(rlk_lock_get_status(a, "flush", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 1);
    flush_scripts();
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "flush"), 0);
    flush_scripts();
    CHECK_EQ_INT(try_acquire(a, "flush", RLK_LOCK_REENTRANT), RLK_OK);

    /* The renewal pipeline meets them gone too. */
    l = ACQ_WD(a, "flush-wd", 600, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, admin, "flush-wd", &lr);
    tick_for(&t, 100, 1);
    flush_scripts();
    tick_for(&t, 1000, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_MSG(t.min_pttl >= (slow ? 100 : 200), "min PTTL %lld", t.min_pttl);
    CHECK_EQ_INT(t.errors, 0);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
out:
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;

    RUN(test_crc16_self_check);
    RUN(test_fence_increasing);
    RUN(test_keys_same_slot);
    RUN(test_redisson_holder);
    RUN(test_script_flush);
    RUN(test_interop_string_layout);

    return locktest_finish(t0);
}
