/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lock layer (rlk_client_*, rlk_lock_*) against real redis-server
 * processes on free loopback ports: simple and reentrant locks and their
 * keys as other clients see them (the string of redis-py and go-redsync,
 * the hash and release message of Redisson), fencing tokens and their
 * Cluster slots, release and extend outcomes (also a release whose reply
 * was lost, through a cutting proxy), validity, waiting that wakes on a
 * release and on expiry (RESP3 and RESP2), the handoff of a released
 * lock to the first live waiter in line (order, dead and deaf entries,
 * timeouts, reentrant and by-token releases, forged messages, kept
 * subscriptions), mutual exclusion between threads, and the watchdog in
 * tick and thread mode: renewal, loss, killed, frozen and restarted
 * servers, batches of 10,000 locks, reconnects and SCRIPT FLUSH.
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

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Fences grow (by the server's clock, not by one). */
#define CHECK_FENCE_AFTER(f, prev)                                                            \
    CHECK_MSG((f) > (prev), "fence %llu after %llu", (unsigned long long)(f),                 \
              (unsigned long long)(prev))

/* ------------------------------------------------------------------ */
/* Basics                                                              */

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

static void test_basic_acquire_release(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l, *l2;
    char got[128], tok1[64];
    long long pttl;
    uint64_t f1;
    int rc;
    if (!a || !b) goto out;
    CMD(admin, "DEL", "basic");

    l = ACQ(a, "basic", 10000);
    if (!l) goto out;
    CHECK_MSG(is_hex32(rlk_lock_token(l)), "token \"%s\" is not 32 hex digits", rlk_lock_token(l));
    CHECK_EQ_STR(rlk_lock_name(l), "basic");
    CHECK_EQ_INT(rlk_lock_ttl_ms(l), 10000);
    CHECK_EQ_INT(rlk_lock_holds(l), 1);
    CHECK_EQ_INT(rlk_lock_is_lost(l), 0);
    CHECK(rlk_lock_fence(l) >= 1);
    f1 = rlk_lock_fence(l);
    snprintf(tok1, sizeof tok1, "%s", rlk_lock_token(l));

    /* The key as any client sees it: a plain string holding the token. */
    CMD_STR(admin, got, "TYPE", "basic");
    CHECK_EQ_STR(got, "string");
    CHECK(CMD_STR(admin, got, "GET", "basic") == 1);
    CHECK_EQ_STR(got, tok1);
    pttl = CMD_INT(admin, "PTTL", "basic");
    CHECK_MSG(pttl > 10000 - MARGIN && pttl <= 10000, "PTTL %lld", pttl);

    /* Held: another client, and the same one (simple locks do not
     * nest), get BUSY with a message. */
    rc = try_acquire(b, "basic", RLK_LOCK_SIMPLE);
    CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
    CHECK_MSG(ts_contains(rlk_client_errmsg(b), "basic"), "errmsg \"%s\"", rlk_client_errmsg(b));
    CHECK_EQ_INT(try_acquire(a, "basic", RLK_LOCK_SIMPLE), RLK_LOCK_BUSY);
    CHECK(CMD_STR(admin, got, "GET", "basic") == 1);
    CHECK_EQ_STR(got, tok1);

    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "basic"), 0);

    /* Free again: the other client takes it, with a new token and a
     * higher fence. */
    l2 = ACQ(b, "basic", 10000);
    if (l2) {
        CHECK(strcmp(rlk_lock_token(l2), tok1) != 0);
        CHECK_MSG(rlk_lock_fence(l2) > f1, "fence %llu after %llu",
                  (unsigned long long)rlk_lock_fence(l2), (unsigned long long)f1);
        CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    }
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

static void test_default_options(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l = NULL;
    long long pttl;
    int rc;
    if (!a) return;
    CMD(admin, "DEL", "defaults");
    rc = rlk_lock_acquire(a, "defaults", NULL, &l);
    CHECK_EQ_INT(rc, RLK_OK);
    if (l) {
        CHECK_EQ_INT(rlk_lock_ttl_ms(l), 30000);
        pttl = CMD_INT(admin, "PTTL", "defaults");
        CHECK_MSG(pttl > 30000 - MARGIN && pttl <= 30000, "PTTL %lld", pttl);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    rlk_client_free(a);
}

static void test_acquire_errors(void)
{
    rlk_client *a = CLIENT(), *dead;
    rlk_client_config cfg;
    rlk_lock_options o;
    rlk_lock *l = (rlk_lock *)&o;
    char url[64];
    int rc;
    if (!a) return;
    rlk_lock_options_init(&o);
    CHECK_EQ_INT(rlk_lock_acquire(a, "", &o, &l), RLK_ERR_INVALID);
    CHECK(l == NULL);
    l = (rlk_lock *)&o;
    CHECK_EQ_INT(rlk_lock_acquire(a, NULL, &o, &l), RLK_ERR_INVALID);
    CHECK(l == NULL);
    o.kind = (rlk_lock_kind)7;
    CHECK_EQ_INT(rlk_lock_acquire(a, "bad-kind", &o, &l), RLK_ERR_INVALID);
    CHECK(l == NULL);
    CHECK(ts_contains(rlk_client_errmsg(a), "kind"));
    rlk_client_free(a);
    rlk_client_free(NULL);

    /* Nobody listens: a connection status, not BUSY. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", ts_free_port(0));
    client_cfg(&cfg, url);
    cfg.conn.connect_timeout_ms = 2000;
    dead = rlk_client_new(&cfg);
    if (!CHECK(dead != NULL)) return;
    rc = rlk_client_connect(dead);
    CHECK_EQ_INT(rc, RLK_ERR_CONNECT);
    CHECK_MSG(rlk_client_errmsg(dead)[0] != '\0', "no message");
    rlk_lock_options_init(&o);
    l = (rlk_lock *)&o;
    rc = rlk_lock_acquire(dead, "nobody", &o, &l);
    CHECK_EQ_INT(rc, RLK_ERR_CONNECT);
    CHECK(l == NULL);
    rlk_client_free(dead);
}

/* The client keeps its own copies of the configuration's strings: the
 * connections it opens later (the RESP2 waiting connection, the watchdog
 * thread's) must not read the caller's buffers. */
static void test_config_strings_copied(void)
{
    rlk_client_config cfg;
    rlk_client *cl, *holder = CLIENT();
    rlk_lock *h = NULL, *l = NULL;
    rlk_lock_options o;
    char *url = malloc(64), *name = malloc(32);
    int rc;
    if (!holder || !url || !name) goto out;
    snprintf(url, 64, "%s", srv_url);
    snprintf(name, 32, "copied-name");
    client_cfg(&cfg, url);
    cfg.conn.protocol = 2;
    cfg.conn.client_name = name;
    cfg.recheck_ms = 100;
    cl = rlk_client_new(&cfg);
    if (!CHECK(cl != NULL)) goto out;
    /* The caller reuses its buffers at once. */
    snprintf(url, 64, "redis://127.0.0.1:1");
    snprintf(name, 32, "clobbered");
    CHECK_EQ_INT(rlk_client_connect(cl), RLK_OK);
    h = ACQ(holder, "copied", 10000);
    opts(&o, 10000, 300, RLK_LOCK_SIMPLE, 0, NULL);
    rc = rlk_lock_acquire(cl, "copied", &o, &l); /* opens the RESP2 waiting connection */
    CHECK_MSG(rc == RLK_LOCK_BUSY, "acquire: %d %s", rc, rlk_client_errmsg(cl));
    rc = rlk_client_watchdog_start(cl); /* opens the thread's connection */
    CHECK_MSG(rc == RLK_OK, "watchdog: %d %s", rc, rlk_client_errmsg(cl));
    CHECK_EQ_INT(count_clients(admin, "clobbered"), 0);
    CHECK(count_clients(admin, "copied-name") >= 2);
    rlk_client_watchdog_stop(cl);
    rlk_client_free(cl);
    if (h) rlk_lock_release(h);
out:
    rlk_client_free(holder);
    free(url);
    free(name);
}

/* ------------------------------------------------------------------ */
/* Fencing                                                             */

static void test_fence_increasing(void)
{
    rlk_client *c[3] = {CLIENT(), CLIENT(), CLIENT()};
    uint64_t last = 0;
    char got[64], want[32];
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
    /* The counter holds the last fence, with a TTL of at least a minute
     * (the clock carries the fence on when it is gone). */
    CHECK(CMD_STR(admin, got, "GET", "{fence-order}:fence") == 1);
    snprintf(want, sizeof want, "%llu", (unsigned long long)last);
    CHECK_EQ_STR(got, want);
    {
        long long pttl = CMD_INT(admin, "PTTL", "{fence-order}:fence");
        CHECK_MSG(pttl > 50000 && pttl <= 60000, "fence counter PTTL %lld", pttl);
    }
out:
    for (i = 0; i < 3; i++) rlk_client_free(c[i]);
}

static void test_fence_same_slot(void)
{
    static const char *const names[] = {"job", "{tag}job", "a}b", "{}x", "x{", "{a", "}{x",
                                        "{}{x}"};
    rlk_client *a = CLIENT();
    size_t i;
    if (!a) return;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        char key[256], got[64], want[32];
        rlk_lock *l = ACQ(a, names[i], 10000);
        if (!l) continue;
        find_derived(names[i], "fence", key, sizeof key);
        if (i == 0) CHECK_EQ_STR(key, "{job}:fence");
        if (i == 1) CHECK_EQ_STR(key, "{tag}job:fence");
        if (i == 4) CHECK_EQ_STR(key, "{x{}:fence");
        CHECK_MSG(key[0] && t_slot(key) == t_slot(names[i]),
                  "\"%s\" (slot %u) and its fence key \"%s\" (slot %u)", names[i],
                  t_slot(names[i]), key, key[0] ? t_slot(key) : 0);
        CMD_STR(admin, got, "GET", key);
        snprintf(want, sizeof want, "%llu", (unsigned long long)rlk_lock_fence(l));
        CHECK_EQ_STR(got, want);
        {
            /* The release's tombstone (the tombstones' prefix, then the
             * token) is in the slot too. */
            char tomb[300];
            const char *f = strstr(key, "fence");
            snprintf(tomb, sizeof tomb, "%.*sreleased%s:%s", (int)(f ? f - key : 0), key,
                     f ? f + 5 : "", rlk_lock_token(l));
            CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
            CHECK_MSG(CMD_INT(admin, "EXISTS", tomb) == 1, "no tombstone %s", tomb);
            CHECK_MSG(tomb[0] && t_slot(tomb) == t_slot(names[i]),
                      "\"%s\" and its tombstone \"%s\"", names[i], tomb);
        }
    }
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* Release and extend                                                  */

static void test_release_not_held(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l;
    if (!a) return;
    l = ACQ(a, "rel-expired", 200);
    if (l) {
        CHECK(wait_exists(admin, "rel-expired", 0, 200 + LONG_MS));
        CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_HELD);
        CHECK(ts_contains(rlk_client_errmsg(a), "not held"));
    }
    rlk_client_free(a);
}

static void test_release_not_owner(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l;
    char got[64];
    if (!a) return;
    l = ACQ(a, "rel-other", 10000);
    if (l) {
        /* Someone else holds it now (our key expired and was retaken). */
        CMD(admin, "SET", "rel-other", "othertoken", "PX", "10000");
        CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_OWNER);
        CHECK(ts_contains(rlk_client_errmsg(a), "someone else"));
        CHECK(CMD_STR(admin, got, "GET", "rel-other") == 1);
        CHECK_EQ_STR(got, "othertoken");
        CHECK(CMD_INT(admin, "PTTL", "rel-other") > 10000 - MARGIN);
    }
    /* By token too. */
    CHECK_EQ_INT(rlk_release_token(a, "rel-other", "0123456789abcdef0123456789abcdef"),
                 RLK_LOCK_NOT_OWNER);
    CHECK(CMD_STR(admin, got, "GET", "rel-other") == 1);
    CHECK_EQ_STR(got, "othertoken");
    CMD(admin, "DEL", "rel-other");
    rlk_client_free(a);
}

/* A release whose reply was lost is sent again; the tombstone makes the
 * second attempt report what the first did. */
static void test_release_twice_by_token(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l, *lb;
    char tok[64], got[64], tomb[128];
    long long pttl;
    if (!a || !b) goto out;
    l = ACQ(a, "rel-twice", 10000);
    if (!l) goto out;
    snprintf(tok, sizeof tok, "%s", rlk_lock_token(l));
    rlk_lock_forget(l);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "rel-twice"), 1); /* forget does not release */
    CHECK_EQ_INT(rlk_release_token(a, "rel-twice", tok), RLK_OK);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "rel-twice"), 0);
    CHECK_EQ_INT(rlk_release_token(a, "rel-twice", tok), RLK_OK);
    snprintf(tomb, sizeof tomb, "{rel-twice}:released:%s", tok);
    CHECK(CMD_STR(admin, got, "GET", tomb) == 1);
    CHECK_EQ_STR(got, "1");
    pttl = CMD_INT(admin, "PTTL", tomb);
    CHECK_MSG(pttl > 0 && pttl <= 60000, "tombstone PTTL %lld", pttl);
    /* A token that never held it. */
    CHECK_EQ_INT(rlk_release_token(a, "rel-twice", "ffffffffffffffffffffffffffffffff"),
                 RLK_LOCK_NOT_HELD);

    /* Someone else takes it: the late repeat still says the first
     * release happened, and deletes nothing. */
    lb = ACQ(b, "rel-twice", 10000);
    if (lb) {
        CHECK_EQ_INT(rlk_release_token(a, "rel-twice", tok), RLK_OK);
        CHECK(CMD_STR(admin, got, "GET", "rel-twice") == 1);
        CHECK_EQ_STR(got, rlk_lock_token(lb));
        CHECK_EQ_INT(rlk_lock_release(lb), RLK_OK);
        /* Each token has its own tombstone: b's release leaves a's, and
         * a's late repeat still learns that it released. */
        CHECK_EQ_INT(rlk_release_token(a, "rel-twice", tok), RLK_OK);
        CHECK_EQ_INT(CMD_INT(admin, "DEL", tomb), 1);
        CHECK_EQ_INT(rlk_release_token(a, "rel-twice", tok), RLK_LOCK_NOT_HELD);
    }
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

static void test_release_reply_lost(void)
{
    struct proxy px = {0, 0, 0, 0};
    fake_server *fs;
    rlk_client *a = NULL;
    rlk_lock *l, *warm, *r1, *r2;
    rlk_lock_options o;
    char url[64], fence_before[32], fence_after[32], field[96], got[16];
    uint64_t gen;
    int rc;
    fs = proxy_start(&px, url, sizeof url);
    if (!fs) return;
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a) goto out;
    CMD(admin, "DEL", "lost-rel", "lost-acq", "{lost-acq}:fence", "lost-re");

    /* The scripts are loaded first, so the cut reply is the script's
     * result and not a NOSCRIPT. */
    warm = ACQ(a, "lost-warm", 10000);
    if (warm) CHECK_EQ_INT(rlk_lock_release(warm), RLK_OK);
    warm = ACQ_R(a, "lost-warm", 10000);
    if (warm) CHECK_EQ_INT(rlk_lock_release(warm), RLK_OK);

    l = ACQ(a, "lost-rel", 10000);
    if (!l) goto out;
    gen = rlk_conn_generation(rlk_client_conn(a));
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    rc = rlk_lock_release(l);
    CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(a));
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 1);
    CHECK_EQ_U64(rlk_conn_generation(rlk_client_conn(a)), gen + 1); /* sent again */
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "lost-rel"), 0);

    /* A simple lock's acquisition whose reply was lost is sent again on a
     * new connection, as the waiting script, which finds that the lost
     * try took the lock: acquired, with that try's fence (one
     * acquisition, not two) and the lock holding this token, valid for
     * about the TTL from the call's start. */
    CMD_STR(admin, fence_before, "GET", "{lost-acq}:fence");
    opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
    gen = rlk_conn_generation(rlk_client_conn(a));
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    l = NULL;
    rc = rlk_lock_acquire(a, "lost-acq", &o, &l);
    CHECK_MSG(rc == RLK_OK, "acquire: %d %s", rc, rlk_client_errmsg(a));
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 2);
    CHECK_EQ_U64(rlk_conn_generation(rlk_client_conn(a)), gen + 1); /* sent again */
    CMD_STR(admin, fence_after, "GET", "{lost-acq}:fence");
    CHECK(atoll(fence_after) > atoll(fence_before));
    if (l) {
        char tok[96];
        CHECK_EQ_U64(rlk_lock_fence(l), (uint64_t)atoll(fence_after));
        CHECK_MSG(rlk_lock_remaining_ms(l) > 5000, "remaining %lld",
                  (long long)rlk_lock_remaining_ms(l));
        CHECK(CMD_STR(admin, tok, "GET", "lost-acq") == 1);
        CHECK_EQ_STR(tok, rlk_lock_token(l));
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "lost-acq"), 0);

    /* A reentrant lock's acquisition is sent again the same way when
     * this client holds no hold of it: the waiting script finds the
     * field and counts nothing more (one hold, the lost try's fence). */
    CMD(admin, "DEL", "lost-acq");
    CMD_STR(admin, fence_before, "GET", "{lost-acq}:fence");
    opts(&o, 10000, 0, RLK_LOCK_REENTRANT, 0, NULL);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    l = NULL;
    rc = rlk_lock_acquire(a, "lost-acq", &o, &l);
    CHECK_MSG(rc == RLK_OK, "acquire: %d %s", rc, rlk_client_errmsg(a));
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 3);
    CMD_STR(admin, fence_after, "GET", "{lost-acq}:fence");
    CHECK(atoll(fence_after) > atoll(fence_before));
    if (l) {
        CHECK_EQ_U64(rlk_lock_fence(l), (uint64_t)atoll(fence_after));
        CHECK_EQ_INT(rlk_lock_holds(l), 1);
        snprintf(field, sizeof field, "%s", rlk_lock_token(l));
        CMD_STR(admin, got, "HGET", "lost-acq", field);
        CHECK_EQ_STR(got, "1");
        CHECK(rlk_lock_remaining_ms(l) > 5000);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "lost-acq"), 0);

    /* When this client holds it already, a lost re-entry is not sent
     * again (a hold counted by the lost try could not be told from the
     * one before): the call fails, and the hold it took expires. */
    r1 = ACQ_R(a, "lost-acq", 300);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    l = (rlk_lock *)&o;
    opts(&o, 300, 0, RLK_LOCK_REENTRANT, 0, NULL);
    rc = rlk_lock_acquire(a, "lost-acq", &o, &l);
    CHECK_MSG(rc == RLK_ERR_IO || rc == RLK_ERR_CLOSED, "acquire: %d %s", rc,
              rlk_client_errmsg(a));
    CHECK(l == NULL);
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 4);
    if (r1) {
        CMD_STR(admin, got, "HGET", "lost-acq", field);
        CHECK_EQ_STR(got, "2");
        rlk_lock_forget(r1);
    }
    r1 = NULL;
    CHECK(wait_exists(admin, "lost-acq", 0, 300 + LONG_MS));

    /* A reentrant lock held twice: a release of one hold whose reply was
     * lost, sent again, takes one hold away, not both. */
    r1 = ACQ_R(a, "lost-re", 10000);
    r2 = ACQ_R(a, "lost-re", 10000);
    if (r1 && r2) {
        snprintf(field, sizeof field, "%s", rlk_lock_token(r1));
        __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
        rc = rlk_lock_release(r2);
        r2 = NULL;
        CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(a));
        CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 5);
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "lost-re"), 1);
        CMD_STR(admin, got, "HGET", "lost-re", field);
        CHECK_EQ_STR(got, "1");
        /* And the last hold, the same way. */
        __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
        rc = rlk_lock_release(r1);
        r1 = NULL;
        CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(a));
        CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 6);
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "lost-re"), 0);
    }
    if (r2) rlk_lock_release(r2);
    if (r1) rlk_lock_release(r1);
out:
    rlk_client_free(a);
    fake_stop(fs);
}

static void test_extend(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l, *l2, *lr;
    char tok[64], got[64];
    long long pttl;
    int64_t rem0, rem, after = 0;
    if (!a) return;
    CMD(admin, "DEL", "ext", "ext2", "ext-r");
    l = ACQ(a, "ext", 5000);
    if (!l) goto out;
    snprintf(tok, sizeof tok, "%s", rlk_lock_token(l));
    rem0 = rlk_lock_remaining_ms(l);

    CHECK_EQ_INT(rlk_lock_extend(l, 10000, RLK_EXTEND_ADD), RLK_OK);
    pttl = CMD_INT(admin, "PTTL", "ext");
    CHECK_MSG(pttl > 15000 - MARGIN && pttl <= 15000, "PTTL after add %lld", pttl);
    /* Added time is a one-off: renewals keep the lock's TTL. */
    CHECK_MSG(rlk_lock_ttl_ms(l) == 5000, "ttl %lld", (long long)rlk_lock_ttl_ms(l));
    rem = rlk_lock_remaining_ms(l);
    CHECK_MSG(rem > rem0 + 9000, "remaining %lld after, %lld before", (long long)rem,
              (long long)rem0);

    CHECK_EQ_INT(rlk_lock_extend(l, 3000, RLK_EXTEND_SET), RLK_OK);
    pttl = CMD_INT(admin, "PTTL", "ext");
    CHECK_MSG(pttl > 3000 - MARGIN && pttl <= 3000, "PTTL after set %lld", pttl);
    rem = rlk_lock_remaining_ms(l);
    CHECK_MSG(rem <= 3000 - (3000 / 100 + 2) && rem > 3000 - 32 - MARGIN, "remaining %lld",
              (long long)rem);

    /* By token, handle-less. */
    CHECK_EQ_INT(rlk_extend_token(a, "ext", tok, 20000, RLK_EXTEND_SET, &after), RLK_OK);
    CHECK_EQ_INT(after, 20000);
    CHECK_EQ_INT(rlk_extend_token(a, "ext", "0123456789abcdef0123456789abcdef", 1000,
                                  RLK_EXTEND_ADD, NULL),
                 RLK_LOCK_NOT_OWNER);
    pttl = CMD_INT(admin, "PTTL", "ext");
    CHECK_MSG(pttl > 20000 - MARGIN && pttl <= 20000, "PTTL %lld", pttl);

    CHECK_EQ_INT(rlk_lock_extend(l, 0, RLK_EXTEND_ADD), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_lock_extend(l, 100, 7), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_lock_is_lost(l), 0);

    /* After expiry. */
    CHECK_EQ_INT(rlk_lock_extend(l, 150, RLK_EXTEND_SET), RLK_OK);
    CHECK(wait_exists(admin, "ext", 0, 150 + LONG_MS));
    CHECK_EQ_INT(rlk_extend_token(a, "ext", tok, 1000, RLK_EXTEND_ADD, NULL), RLK_LOCK_NOT_HELD);
    CHECK_EQ_INT(rlk_lock_extend(l, 1000, RLK_EXTEND_ADD), RLK_LOCK_NOT_HELD);
    CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
    CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
    CHECK_EQ_INT(rlk_lock_extend(l, 1000, RLK_EXTEND_ADD), RLK_LOCK_LOST);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "ext"), 0);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_HELD);

    /* Someone else's. */
    l2 = ACQ(a, "ext2", 10000);
    if (l2) {
        CMD(admin, "SET", "ext2", "other", "PX", "10000");
        CHECK_EQ_INT(rlk_lock_extend(l2, 5000, RLK_EXTEND_ADD), RLK_LOCK_NOT_OWNER);
        CHECK_EQ_INT(rlk_lock_is_lost(l2), 1);
        CHECK(CMD_STR(admin, got, "GET", "ext2") == 1);
        CHECK_EQ_STR(got, "other");
        pttl = CMD_INT(admin, "PTTL", "ext2");
        CHECK_MSG(pttl <= 10000, "the other holder's key was extended: %lld", pttl);
        CHECK_EQ_INT(rlk_lock_release(l2), RLK_LOCK_NOT_OWNER);
        CMD(admin, "DEL", "ext2");
    }

    /* A reentrant lock. */
    lr = ACQ_R(a, "ext-r", 5000);
    if (lr) {
        CHECK_EQ_INT(rlk_lock_extend(lr, 5000, RLK_EXTEND_ADD), RLK_OK);
        pttl = CMD_INT(admin, "PTTL", "ext-r");
        CHECK_MSG(pttl > 10000 - MARGIN && pttl <= 10000, "PTTL %lld", pttl);
        /* A reentrant lock's expiry never shortens (other holds may rely
         * on it): a shorter SET leaves it, and the handle learns so. */
        CHECK_EQ_INT(rlk_lock_extend(lr, 2000, RLK_EXTEND_SET), RLK_OK);
        pttl = CMD_INT(admin, "PTTL", "ext-r");
        CHECK_MSG(pttl > 10000 - 2 * MARGIN && pttl <= 10000, "PTTL %lld", pttl);
        CHECK_MSG(rlk_lock_remaining_ms(lr) > 5000, "remaining %lld",
                  (long long)rlk_lock_remaining_ms(lr));
        CMD(admin, "PEXPIRE", "ext-r", "1000");
        CHECK_EQ_INT(rlk_lock_extend(lr, 2000, RLK_EXTEND_SET), RLK_OK);
        pttl = CMD_INT(admin, "PTTL", "ext-r");
        CHECK_MSG(pttl > 2000 - MARGIN && pttl <= 2000, "PTTL %lld", pttl);
        CHECK_EQ_INT(rlk_lock_release(lr), RLK_OK);
    }
out:
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* Validity                                                            */

static void validity_case(rlk_client *cl, int64_t ttl, int64_t drift_ms)
{
    char name[48];
    int64_t t0, t1, rem, d = ttl / 100 + drift_ms;
    rlk_lock *l;
    snprintf(name, sizeof name, "valid-%lld", (long long)ttl);
    t0 = ts_now_ms();
    l = ACQ(cl, name, ttl);
    if (!l) return;
    rem = rlk_lock_remaining_ms(l);
    t1 = ts_now_ms();
    /* Known held at most TTL minus the drift from the attempt's start;
     * at least that minus the time the attempt and the check took. */
    CHECK_MSG(rem <= ttl - d, "ttl %lld: remaining %lld > %lld", (long long)ttl, (long long)rem,
              (long long)(ttl - d));
    CHECK_MSG(rem >= ttl - d - (t1 - t0) - 1, "ttl %lld: remaining %lld < %lld", (long long)ttl,
              (long long)rem, (long long)(ttl - d - (t1 - t0) - 1));
    rlk_lock_release(l);
}

static void test_validity(void)
{
    static const int64_t ttls[] = {100, 300, 1000, 10000, 30000, 120000};
    rlk_client_config cfg;
    rlk_client *a = CLIENT(), *b;
    size_t i;
    if (!a) return;
    for (i = 0; i < sizeof ttls / sizeof ttls[0]; i++) validity_case(a, ttls[i], 2);
    rlk_client_free(a);
    client_cfg(&cfg, srv_url);
    cfg.drift_ms = 50;
    b = CLIENT_WITH(&cfg);
    if (!b) return;
    for (i = 0; i < sizeof ttls / sizeof ttls[0]; i++) validity_case(b, ttls[i], 50);
    rlk_client_free(b);
}

/* The timing the library offers to plan with is the one it keeps: the
 * documented formulas, in the order a holder that renews and stops in
 * time (resplock run) relies on, for long and short TTLs alike. */
static void test_plan(void)
{
    static const int64_t ttls[] = {100, 1000, 30000};
    rlk_client_config cfg;
    rlk_client *a;
    rlk_lock *l;
    size_t i;
    CHECK_EQ_INT(RLK_DEFAULT_TTL_MS, 30000);
    CHECK_EQ_INT(rlk_plan_drift_ms(NULL, 30000), 302);
    CHECK_EQ_INT(rlk_plan_valid_ms(NULL, 30000), 29698);
    CHECK_EQ_INT(rlk_plan_renew_period_ms(NULL, 30000), 10000);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(NULL, 30000, 0), 26698);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(NULL, 30000, 8000), 21698);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(NULL, 100, 0), 87);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(NULL, 40, 0), 33);
    for (i = 0; i < sizeof ttls / sizeof ttls[0]; i++) {
        int64_t t = ttls[i], renew = rlk_plan_renew_period_ms(NULL, t),
                lost = rlk_plan_lost_after_ms(NULL, t, 0), valid = rlk_plan_valid_ms(NULL, t);
        CHECK_EQ_INT(valid, t - rlk_plan_drift_ms(NULL, t));
        CHECK_MSG(renew > 0 && renew < lost && lost < valid && valid < t,
                  "ttl %lld: renew %lld, lost %lld, valid %lld", (long long)t, (long long)renew,
                  (long long)lost, (long long)valid);
    }
    /* A client's own drift and renewal period count, and NULL is the
     * defaults'. */
    client_cfg(&cfg, srv_url);
    CHECK_EQ_INT(rlk_plan_drift_ms(&cfg, 1000), rlk_plan_drift_ms(NULL, 1000));
    cfg.drift_ms = 50;
    cfg.renew_divisor = 4;
    CHECK_EQ_INT(rlk_plan_drift_ms(&cfg, 1000), 60);
    CHECK_EQ_INT(rlk_plan_valid_ms(&cfg, 1000), 940);
    CHECK_EQ_INT(rlk_plan_renew_period_ms(&cfg, 1000), 250);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(&cfg, 1000, 0), 840);
    /* The validity of a lock just taken is the plan's, less the time the
     * try and the look took. */
    a = CLIENT_WITH(&cfg);
    if (!a) return;
    int64_t t0 = ts_now_ms();
    l = ACQ(a, "plan", 1000);
    if (l) {
        int64_t rem = rlk_lock_remaining_ms(l), t1 = ts_now_ms();
        CHECK_MSG(rem <= rlk_plan_valid_ms(&cfg, 1000) &&
                  rem >= rlk_plan_valid_ms(&cfg, 1000) - (t1 - t0) - 1,
                  "remaining %lld after %lld ms", (long long)rem, (long long)(t1 - t0));
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* Reentrant locks (Redisson's layout)                                 */

struct pushes {
    int n;
    char channel[96];
    char payload[16];
};

static void rec_push(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    struct pushes *p = ctx;
    const rlk_resp_value *kind = rlk_resp_value_at(m, 0), *ch = rlk_resp_value_at(m, 1),
                         *pl = rlk_resp_value_at(m, 2);
    (void)c;
    if (!kind || !ch || !pl || kind->len != 7 || memcmp(kind->str, "message", 7) != 0) return;
    snprintf(p->channel, sizeof p->channel, "%.*s", (int)ch->len, ch->str);
    snprintf(p->payload, sizeof p->payload, "%.*s", (int)pl->len, pl->str);
    p->n++;
}

struct busy_try {
    rlk_client *cl;
    const char *name;
    int rc;
    long tid;
    char token[96];
};

static void *busy_try_main(void *arg)
{
    struct busy_try *t = arg;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    opts(&o, 10000, 0, RLK_LOCK_REENTRANT, 0, NULL);
    t->tid = gettid_();
    t->rc = rlk_lock_acquire(t->cl, t->name, &o, &l);
    if (l) {
        snprintf(t->token, sizeof t->token, "%s", rlk_lock_token(l));
        rlk_lock_release(l);
    }
    return NULL;
}

static void test_reentrant(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    struct pushes ps;
    rlk_conn *sub;
    rlk_lock *l1 = NULL, *l2 = NULL, *lb;
    char want[64], got[64], field[96];
    const char *tok, *colon;
    struct busy_try bt;
    pthread_t th;
    long long pttl;
    int64_t deadline;
    memset(&ps, 0, sizeof ps);
    sub = connect_url(srv_url, 3, rec_push, &ps, __LINE__);
    if (!a || !b || !sub) goto out;
    CMD(admin, "DEL", "re");
    CHECK_EQ_INT(rlk_conn_subscribe(sub, "redisson_lock__channel:{re}", 27), RLK_OK);

    l1 = ACQ_R(a, "re", 10000);
    if (!l1) goto out;
    CHECK_EQ_INT(rlk_lock_holds(l1), 1);
    /* The field: "<client-id>:<thread-id>", the id a random UUID. */
    tok = rlk_lock_token(l1);
    snprintf(field, sizeof field, "%s", tok);
    colon = strrchr(tok, ':');
    snprintf(want, sizeof want, ":%ld", gettid_());
    CHECK_MSG(colon && strcmp(colon, want) == 0, "field \"%s\", thread %ld", tok, gettid_());
    CHECK_MSG(colon && colon - tok == 36 && tok[8] == '-' && tok[13] == '-' && tok[14] == '4' &&
                  tok[18] == '-' && strchr("89ab", tok[19]) && tok[23] == '-',
              "client id of \"%s\" is not a version 4 UUID", tok);
    CMD_STR(admin, got, "TYPE", "re");
    CHECK_EQ_STR(got, "hash");
    CMD_STR(admin, got, "HGET", "re", field);
    CHECK_EQ_STR(got, "1");

    /* Again by the same client and thread: one more hold, same fence. */
    l2 = ACQ_R(a, "re", 10000);
    if (!l2) goto out;
    CHECK_EQ_INT(rlk_lock_holds(l2), 2);
    CHECK_EQ_U64(rlk_lock_fence(l2), rlk_lock_fence(l1));
    CHECK_EQ_STR(rlk_lock_token(l2), field);
    CMD_STR(admin, got, "HGET", "re", field);
    CHECK_EQ_STR(got, "2");
    CHECK_EQ_INT(CMD_INT(admin, "HLEN", "re"), 1);

    /* Another client, simple or reentrant, and another thread of the
     * same client (while this one waits for it) are refused. */
    CHECK_EQ_INT(try_acquire(b, "re", RLK_LOCK_REENTRANT), RLK_LOCK_BUSY);
    CHECK_EQ_INT(try_acquire(b, "re", RLK_LOCK_SIMPLE), RLK_LOCK_BUSY);
    memset(&bt, 0, sizeof bt);
    bt.cl = a;
    bt.name = "re";
    if (CHECK(pthread_create(&th, NULL, busy_try_main, &bt) == 0)) {
        pthread_join(th, NULL);
        CHECK_MSG(bt.rc == RLK_LOCK_BUSY, "other thread: %d (token %s)", bt.rc, bt.token);
        CHECK(bt.tid != gettid_());
    }
    CMD_STR(admin, got, "HGET", "re", field);
    CHECK_EQ_STR(got, "2");

    /* One release: still held, one hold left, the expiry left as it is
     * (the hold left relies on it), no message. */
    CMD(admin, "PEXPIRE", "re", "5000");
    CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    l2 = NULL;
    CMD_STR(admin, got, "HGET", "re", field);
    CHECK_EQ_STR(got, "1");
    pttl = CMD_INT(admin, "PTTL", "re");
    CHECK_MSG(pttl > 5000 - MARGIN && pttl <= 5000, "PTTL %lld after a partial release", pttl);
    CHECK_EQ_INT(rlk_conn_wait_push(sub, 0), 0);
    CHECK_EQ_INT(ps.n, 0);

    /* The last release deletes it and publishes "0". */
    CHECK_EQ_INT(rlk_lock_release(l1), RLK_OK);
    l1 = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "re"), 0);
    deadline = ts_now_ms() + LONG_MS;
    while (ps.n == 0 && ts_now_ms() < deadline)
        if (rlk_conn_wait_push(sub, (int)(deadline - ts_now_ms())) < 0) break;
    CHECK_EQ_INT(ps.n, 1);
    CHECK_EQ_STR(ps.channel, "redisson_lock__channel:{re}");
    CHECK_EQ_STR(ps.payload, "0");

    lb = ACQ_R(b, "re", 10000);
    if (lb) CHECK_EQ_INT(rlk_lock_release(lb), RLK_OK);
out:
    if (l2) rlk_lock_release(l2);
    if (l1) rlk_lock_release(l1);
    rlk_conn_free(sub);
    rlk_client_free(a);
    rlk_client_free(b);
}

static void test_reentrant_client_id(void)
{
    rlk_client_config cfg;
    rlk_client *a;
    rlk_lock *l;
    char want[64];
    client_cfg(&cfg, srv_url);
    cfg.client_id = "my-service-7";
    a = CLIENT_WITH(&cfg);
    if (!a) return;
    l = ACQ_R(a, "re-id", 10000);
    if (l) {
        snprintf(want, sizeof want, "my-service-7:%ld", gettid_());
        CHECK_EQ_STR(rlk_lock_token(l), want);
        CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", "re-id", want), 1);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    rlk_client_free(a);
}

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
    CHECK(wait_calls(admin, "evalsha", 2, LONG_MS));
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

static void test_reentrant_watchdog(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    char got[16];
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    l = acquire(a, "re-wd", 600, RLK_LOCK_REENTRANT, 1, &lr, __LINE__);
    if (l) {
        ticker_init(&t, a, l, admin, "re-wd", &lr);
        tick_for(&t, 1500, 1);
        CHECK_EQ_INT(lost_calls(&lr), 0);
        CHECK_MSG(t.min_pttl >= (slow ? 100 : 200), "min PTTL %lld", t.min_pttl);
        CMD_STR(admin, got, "HGET", "re-wd", rlk_lock_token(l));
        CHECK_EQ_STR(got, "1");
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "re-wd"), 0);
    }
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* Waiting                                                             */

static void test_wait_zero_is_one_try(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l;
    int64_t t0;
    if (!a || !b) goto out;
    l = ACQ(a, "w0", 10000);
    if (!l) goto out;
    CHECK_EQ_INT(try_acquire(b, "w0", RLK_LOCK_SIMPLE), RLK_LOCK_BUSY); /* loads the script */
    reset_stats(admin);
    t0 = ts_now_ms();
    CHECK_EQ_INT(try_acquire(b, "w0", RLK_LOCK_SIMPLE), RLK_LOCK_BUSY);
    CHECK(ts_now_ms() - t0 < MARGIN);
    CHECK_EQ_INT(stat_calls(admin, "evalsha"), 1);
    CHECK_EQ_INT(stat_calls(admin, "subscribe"), 0);
    rlk_lock_release(l);
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

static void test_wait_bounded(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT_EX(srv_url, 0, 200, NULL), *c = CLIENT();
    rlk_lock_options o;
    rlk_lock *l, *got = NULL;
    int64_t t0, el;
    long long calls;
    int rc;
    if (!a || !b || !c) goto out;
    l = ACQ(a, "wb", 30000);
    if (!l) goto out;

    /* Re-checks every 200 ms: BUSY after the wait, a few tries. */
    opts(&o, 10000, 900, RLK_LOCK_SIMPLE, 0, NULL);
    reset_stats(admin);
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(b, "wb", &o, &got);
    el = ts_now_ms() - t0;
    CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
    CHECK(got == NULL);
    CHECK_MSG(el >= 900 - 1 && el <= 900 + MARGIN, "returned after %lld ms (wait 900)",
              (long long)el);
    calls = stat_calls(admin, "evalsha");
    CHECK_MSG(calls >= 5 && calls <= 12, "%lld tries in 900 ms with re-check 200", calls);
    /* The release channel and the client's handoff channel; under RESP3
     * both stay subscribed for the next wait. */
    CHECK_EQ_INT(stat_calls(admin, "subscribe"), 2);
    CHECK_EQ_INT(stat_calls(admin, "unsubscribe"), 0);

    /* The default re-check (1000 ms): no busy polling at all. */
    opts(&o, 10000, 600, RLK_LOCK_SIMPLE, 0, NULL);
    reset_stats(admin);
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(c, "wb", &o, &got);
    el = ts_now_ms() - t0;
    CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
    CHECK_MSG(el >= 600 - 1 && el <= 600 + MARGIN, "returned after %lld ms (wait 600)",
              (long long)el);
    calls = stat_calls(admin, "evalsha");
    CHECK_MSG(calls >= 2 && calls <= 4, "%lld tries in 600 ms with re-check 1000", calls);
    rlk_lock_release(l);
out:
    rlk_client_free(a);
    rlk_client_free(b);
    rlk_client_free(c);
}

static void wake_on_release(int protocol)
{
    char name[32], cname[32];
    rlk_client *a = CLIENT(), *w;
    struct waiter wt;
    rlk_lock *l;
    int64_t t_rel, limit = slow ? 2000 : 500;
    snprintf(name, sizeof name, "wake-rel-%d", protocol);
    snprintf(cname, sizeof cname, "waiter-resp%d", protocol);
    w = CLIENT_EX(srv_url, protocol, 5000, cname);
    if (!a || !w) goto out;
    CHECK_EQ_INT(rlk_conn_get_info(rlk_client_conn(w))->protocol, protocol);
    CMD(admin, "DEL", name);
    l = ACQ(a, name, 30000);
    if (!l) goto out;
    reset_stats(admin);
    if (!waiter_start(&wt, w, name, 10000, 10000, RLK_LOCK_SIMPLE)) goto out;
    CHECK(wait_calls(admin, "evalsha", 2, LONG_MS));
    CHECK(wait_calls(admin, "subscribe", 1, LONG_MS));
    /* RESP2 waits on a second connection; RESP3 on the same one. */
    CHECK_EQ_INT(count_clients(admin, cname), protocol == 2 ? 2 : 1);
    t_rel = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    pthread_join(wt.th, NULL);
    CHECK_MSG(wt.rc == RLK_OK, "waiter: %d %s", wt.rc, wt.err);
    CHECK_MSG(wt.done_at - t_rel < limit, "acquired %lld ms after the release (re-check 5000)",
              (long long)(wt.done_at - t_rel));
    if (wt.l) {
        CHECK(rlk_lock_remaining_ms(wt.l) > 0);
        CHECK_EQ_INT(rlk_lock_release(wt.l), RLK_OK);
    }
    /* The waiting connection is gone (RESP2); under RESP3 the
     * subscription stays on the one connection, for the next wait. */
    {
        int64_t deadline = ts_now_ms() + LONG_MS;
        while (count_clients(admin, cname) != 1 && ts_now_ms() < deadline) ts_pause_ms(5);
        CHECK_EQ_INT(count_clients(admin, cname), 1);
        char ch[64];
        const rlk_resp_value *cnt;
        rlk_resp_value *v;
        snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
        v = CMD(admin, "PUBSUB", "NUMSUB", ch);
        cnt = v ? rlk_resp_value_at(v, 1) : NULL;
        CHECK_MSG(cnt && cnt->type == RLK_RESP_INTEGER && cnt->integer == (protocol == 3),
                  "subscribers of %s: %lld, want %d", ch, cnt ? (long long)cnt->integer : -1,
                  protocol == 3);
    }
out:
    rlk_client_free(a);
    rlk_client_free(w);
}

static void test_wake_on_release_resp3(void) { wake_on_release(3); }
static void test_wake_on_release_resp2(void) { wake_on_release(2); }

/* The holder never releases (it forgot the lock): the waiter wakes when
 * the TTL runs out, not at its re-check. */
static void wake_on_expiry(int protocol)
{
    char name[32];
    rlk_client *a = CLIENT(), *w = CLIENT_EX(srv_url, protocol, 10000, NULL);
    rlk_lock_options o;
    rlk_lock *l, *got = NULL;
    int64_t t0, el;
    int rc;
    snprintf(name, sizeof name, "wake-ttl-%d", protocol);
    if (!a || !w) goto out;
    CMD(admin, "DEL", name);
    t0 = ts_now_ms();
    l = ACQ(a, name, 500);
    if (!l) goto out;
    rlk_lock_forget(l);
    opts(&o, 10000, 10000, RLK_LOCK_SIMPLE, 0, NULL);
    rc = rlk_lock_acquire(w, name, &o, &got);
    el = ts_now_ms() - t0;
    CHECK_MSG(rc == RLK_OK, "waiter: %d %s", rc, rlk_client_errmsg(w));
    CHECK_MSG(el >= 480 && el <= 500 + MARGIN, "acquired %lld ms after the holder (TTL 500)",
              (long long)el);
    if (got) CHECK_EQ_INT(rlk_lock_release(got), RLK_OK);
out:
    rlk_client_free(a);
    rlk_client_free(w);
}

static void test_wake_on_expiry_resp3(void) { wake_on_expiry(3); }
static void test_wake_on_expiry_resp2(void) { wake_on_expiry(2); }

/* ------------------------------------------------------------------ */
/* Handoff: a release hands the lock to the first live waiter          */

/* The longest a waiter of these tests waits: any handoff comes long
 * before, and a broken one fails the test instead of hanging it. */
#define HO_WAIT_MS (slow ? 60000 : 20000)

/* The field of name's waiters hash that is not among known[0..k-1]: the
 * token of the waiter that registered last.  1 when there is exactly
 * one such field (else a test failure). */
static int newest_waiter(const char *name, char known[][96], int k, char *out, size_t n)
{
    char key[128];
    rlk_resp_value *v;
    const rlk_resp_value *e;
    int found = 0, j;
    out[0] = '\0';
    HO_KEY(key, name, "waiters");
    v = CMD(admin, "HKEYS", key);
    for (e = v ? v->child : NULL; e; e = e->next) {
        for (j = 0; j < k; j++)
            if (strlen(known[j]) == e->len && memcmp(known[j], e->str, e->len) == 0) break;
        if (j < k) continue;
        found++;
        snprintf(out, n, "%.*s", (int)e->len, e->str);
    }
    return CHECK_MSG(found == 1, "%d new entries in %s", found, key);
}

/* Whether name's queue is exactly toks[0..n-1], in this order. */
static int queue_is(const char *name, char toks[][96], int n, int line)
{
    char key[128];
    rlk_resp_value *v;
    const rlk_resp_value *e;
    int i = 0, ok = 1;
    HO_KEY(key, name, "queue");
    v = run_cmd(admin, line, "LRANGE", key, "0", "-1", (const char *)NULL);
    if (!v) return 0;
    for (e = v->child; e; e = e->next, i++)
        if (i >= n || strlen(toks[i]) != e->len || memcmp(toks[i], e->str, e->len) != 0) ok = 0;
    return tl_ok(ok && i == n, __FILE__, line, "queue %s: %d entries, not the %d expected in order",
                 key, i, n);
}

/* The channel a waiter's entry names ("EXPIRYMS TTLMS CHANNEL"): its
 * client's handoff channel.  1 when found. */
static int waiter_channel(const char *name, const char *tok, char *out, size_t n)
{
    char key[128], val[256];
    const char *sp;
    HO_KEY(key, name, "waiters");
    out[0] = '\0';
    if (!CHECK(CMD_STR(admin, val, "HGET", key, tok) == 1)) return 0;
    /* "EXPIRY TTL CLAIM KIND CHANNEL" */
    sp = strchr(val, ' ');
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    sp = sp ? strchr(sp + 1, ' ') : NULL;
    if (!CHECK_MSG(sp && ts_contains(sp + 1, "resplock:handoff:"), "entry \"%s\"", val)) return 0;
    snprintf(out, n, "%s", sp + 1);
    return 1;
}

/* Nobody in line, and nothing left for good: no queue, no waiter entry,
 * and the waiters hash (which may keep the "~chain" of the last
 * handoffs) goes within a minute. */
static int nothing_in_line(const char *waiters, const char *queue)
{
    long long pttl = CMD_INT(admin, "PTTL", waiters);
    return CHECK_MSG(CMD_INT(admin, "EXISTS", queue) == 0 && waiter_entries(waiters) == 0 &&
                         (pttl == -2 || (pttl > 0 && pttl <= 60000)),
                     "queue %lld, %lld entries, waiters PTTL %lld",
                     CMD_INT(admin, "EXISTS", queue), waiter_entries(waiters), pttl);
}

/* PUBSUB NUMSUB of one channel, or -1. */
static long long numsub(const char *ch)
{
    rlk_resp_value *v = CMD(admin, "PUBSUB", "NUMSUB", ch);
    const rlk_resp_value *cnt = v ? rlk_resp_value_at(v, 1) : NULL;
    return cnt && cnt->type == RLK_RESP_INTEGER ? cnt->integer : -1;
}

/* Runs the simple lock's acquire and release scripts once, so that the
 * server has them: a count of EVALSHA calls then holds no NOSCRIPT
 * attempt (a fresh server, when a test runs alone). */
static void load_scripts(rlk_client *cl)
{
    rlk_lock *l = ACQ(cl, "ho-load-scripts", 10000);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
}

/* Ends the waiters started so far, whatever state a test left them in:
 * joins each in turn (a release hands the lock on to the next one) and
 * releases what it got. */
static void waiters_end(struct waiter *w, int *joined, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        if (!joined[i]) pthread_join(w[i].th, NULL);
        joined[i] = 1;
        if (w[i].l) rlk_lock_release(w[i].l);
        w[i].l = NULL;
    }
}

/* The holder *la releases (RLK_OK), and the waiter w, joined, has the
 * lock.  *la is NULL after. */
static int hand_over(rlk_lock **la, struct waiter *w, int *joined)
{
    CHECK_EQ_INT(rlk_lock_release(*la), RLK_OK);
    *la = NULL;
    pthread_join(w->th, NULL);
    *joined = 1;
    return CHECK_MSG(w->rc == RLK_OK && w->l, "waiter: %d %s", w->rc, w->err);
}

/* Waiters are served in the order they came: a release hands the lock
 * to the first of them only, with that waiter's TTL (each has its own,
 * 5 s apart, to tell them by) and the next fence; the others keep their
 * places.  When the last one releases, nothing is left behind. */
static void test_handoff_fifo(void)
{
    static const int64_t ttls[3] = {20000, 25000, 30000};
    const char *name = "ho-fifo";
    rlk_client *a = CLIENT(), *c[3];
    struct waiter w[3];
    int joined[3] = {0, 0, 0}, started = 0, i, j;
    char tok[3][96], waiters[64], queue[64], got[128];
    rlk_lock *la = NULL;
    uint64_t fence;
    long long pttl;
    for (i = 0; i < 3; i++) c[i] = CLIENT();
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c[0] || !c[1] || !c[2]) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    /* Each starts once the one before is in the queue: the order is
     * known, and so is each one's token. */
    for (i = 0; i < 3; i++) {
        if (!waiter_start(&w[i], c[i], name, ttls[i], HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
        started++;
        if (!CHECK_MSG(wait_waiters(name, i + 1, LONG_MS), "waiter %d did not register", i + 1) ||
            !newest_waiter(name, tok, i, tok[i], sizeof tok[i]))
            goto out;
    }
    if (!queue_is(name, tok, 3, __LINE__)) goto out;
    {
        rlk_lock_status st;
        CHECK_EQ_INT(rlk_lock_get_status(a, name, &st), RLK_OK);
        CHECK_EQ_INT(st.waiters, 3);
    }

    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    for (i = 0; i < 3; i++) {
        pthread_join(w[i].th, NULL);
        joined[i] = 1;
        if (!CHECK_MSG(w[i].rc == RLK_OK && w[i].l, "waiter %d: %d %s", i + 1, w[i].rc, w[i].err))
            goto out;
        CHECK_EQ_STR(rlk_lock_token(w[i].l), tok[i]);
        CHECK(CMD_STR(admin, got, "GET", name) == 1);
        CHECK_EQ_STR(got, tok[i]);
        pttl = CMD_INT(admin, "PTTL", name);
        CHECK_MSG(pttl > ttls[i] - MARGIN && pttl <= ttls[i], "waiter %d: PTTL %lld, its TTL %lld",
                  i + 1, pttl, (long long)ttls[i]);
        CHECK_FENCE_AFTER(rlk_lock_fence(w[i].l), fence);
        fence = rlk_lock_fence(w[i].l);
        /* The ones behind it still wait, in their places. */
        for (j = i + 1; j < 3; j++)
            CHECK_MSG(!waiter_done(&w[j]), "waiter %d returned while %d held the lock", j + 1,
                      i + 1);
        queue_is(name, tok + i + 1, 2 - i, __LINE__);
        CHECK_EQ_INT(waiter_entries(waiters), 2 - i);
        CHECK_EQ_INT(rlk_lock_release(w[i].l), RLK_OK);
        w[i].l = NULL;
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    CHECK(nothing_in_line(waiters, queue));
out:
    if (la) rlk_lock_release(la);
    waiters_end(w, joined, started);
    rlk_client_free(a);
    for (i = 0; i < 3; i++) rlk_client_free(c[i]);
}

/* An entry whose lease ran out (its waiter died) is passed over and
 * removed, even though its channel has a listener (here: the live
 * waiter's own), and costs no fence; the waiter behind it gets the
 * lock. */
static void test_handoff_skips_dead_entry(void)
{
    const char *name = "ho-dead";
    rlk_client *a = CLIENT(), *c = CLIENT();
    struct waiter w;
    int joined = 0, started = 0;
    char tok[2][96], waiters[64], queue[64], got[128], ch[96], entry[160];
    rlk_lock *la = NULL;
    uint64_t fence;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[1], sizeof tok[1]) ||
        !waiter_channel(name, tok[1], ch, sizeof ch))
        goto out;
    /* In front of it: an entry that expired long ago. */
    snprintf(tok[0], sizeof tok[0], "dead-waiter");
    snprintf(entry, sizeof entry, "1 30000 s %s", ch);
    CHECK_EQ_INT(CMD_INT(admin, "HSET", waiters, tok[0], entry), 1);
    CHECK_EQ_INT(CMD_INT(admin, "LPUSH", queue, tok[0]), 2);
    if (!queue_is(name, tok, 2, __LINE__)) goto out;
    {
        /* status counts the live waiter, not the lapsed entry. */
        rlk_lock_status st;
        CHECK_EQ_INT(rlk_lock_get_status(a, name, &st), RLK_OK);
        CHECK_EQ_INT(st.waiters, 1);
    }

    if (!hand_over(&la, &w, &joined)) goto out;
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[1]);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, tok[1]);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, tok[0]), 0);
    CHECK(nothing_in_line(waiters, queue));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A live entry whose channel nobody listens on (its client is gone) is
 * passed over: the PUBLISH reached no one.  The waiter behind it gets
 * the lock; the skipped one may have used up a fence.  With no one else
 * in line, the release frees the lock and says so on the release
 * channel, as without waiters. */
static void test_handoff_skips_not_listening(void)
{
    const char *name = "ho-deaf", *deaf_ch = "resplock:handoff:nobody-listens";
    rlk_client *a = CLIENT(), *c = CLIENT();
    struct waiter w;
    struct pushes ps;
    rlk_conn *sub = NULL;
    int joined = 0, started = 0;
    char tok[2][96], waiters[64], queue[64], got[128], entry[160];
    rlk_lock *la = NULL, *lc;
    uint64_t fence;
    long long now;
    int64_t deadline;
    memset(&ps, 0, sizeof ps);
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    CHECK_EQ_INT(numsub(deaf_ch), 0);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[1], sizeof tok[1]))
        goto out;
    /* In front of it: an entry good for ten minutes, on a deaf channel. */
    now = server_time_ms();
    if (now < 0) goto out;
    snprintf(tok[0], sizeof tok[0], "deaf-waiter");
    snprintf(entry, sizeof entry, "%lld 30000 s %s", now + 600000, deaf_ch);
    CHECK_EQ_INT(CMD_INT(admin, "HSET", waiters, tok[0], entry), 1);
    CHECK_EQ_INT(CMD_INT(admin, "LPUSH", queue, tok[0]), 2);
    if (!queue_is(name, tok, 2, __LINE__)) goto out;

    if (!hand_over(&la, &w, &joined)) goto out;
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[1]);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, tok[1]);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, tok[0]), 0);
    CHECK(nothing_in_line(waiters, queue));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);

    /* Only the deaf entry in line: the lock is freed, "0" published. */
    sub = connect_url(srv_url, 3, rec_push, &ps, __LINE__);
    if (!sub) goto out;
    CHECK_EQ_INT(rlk_conn_subscribe(sub, "redisson_lock__channel:{ho-deaf}", 32), RLK_OK);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    CHECK_EQ_INT(CMD_INT(admin, "HSET", waiters, tok[0], entry), 1);
    CHECK_EQ_INT(CMD_INT(admin, "RPUSH", queue, tok[0]), 1);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    CHECK(nothing_in_line(waiters, queue));
    deadline = ts_now_ms() + LONG_MS;
    while (ps.n == 0 && ts_now_ms() < deadline)
        if (rlk_conn_wait_push(sub, (int)(deadline - ts_now_ms())) < 0) break;
    CHECK_EQ_INT(ps.n, 1);
    CHECK_EQ_STR(ps.payload, "0");
    /* Free indeed: anyone takes it at once. */
    lc = ACQ(c, name, 10000);
    if (lc) CHECK_EQ_INT(rlk_lock_release(lc), RLK_OK);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_conn_free(sub);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A waiter whose wait runs out leaves the queue: nothing of it remains,
 * and the next release frees the lock rather than handing it to the
 * client, which under RESP3 still listens on its handoff channel. */
static void test_handoff_wait_timeout_leaves_queue(void)
{
    const char *name = "ho-timeout";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 3, 0, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char tok[1][96], waiters[64], queue[64], ch[96];
    rlk_lock *la = NULL;
    int64_t wait = slow ? 3000 : 500;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 10000, wait, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    /* It was in line... */
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]) ||
        !waiter_channel(name, tok[0], ch, sizeof ch))
        goto out;
    pthread_join(w.th, NULL);
    joined = 1;
    CHECK_MSG(w.rc == RLK_LOCK_BUSY, "waiter: %d %s", w.rc, w.err);
    CHECK(w.l == NULL);
    /* ... and left it. */
    CHECK_EQ_INT(CMD_INT(admin, "HLEN", waiters), 0);
    CHECK_EQ_INT(CMD_INT(admin, "LLEN", queue), 0);
    CHECK_EQ_INT(numsub(ch), 1);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A waiter that finds the lock free (its holder went away without a
 * release) takes it and leaves the queue; otherwise its own release,
 * under RESP3 still subscribed, would hand the lock back to itself. */
static void test_handoff_acquire_when_free_leaves_queue(void)
{
    const char *name = "ho-free";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 3, 0, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char tok[1][96], waiters[64], queue[64];
    rlk_lock *la;
    uint64_t fence;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, slow ? 3000 : 500);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    rlk_lock_forget(la);
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]))
        goto out;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[0]);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK(nothing_in_line(waiters, queue));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* Reentrant: a release that only takes one hold away hands nothing
 * over; the final one gives the waiter the hash with its own field at 1
 * hold, its TTL and the next fence, in the message (the waiter makes no
 * try of its own: its re-check is 6.7 s away). */
static void test_handoff_reentrant(void)
{
    const char *name = "ho-re";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 0, 30000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char tok[1][96], afield[96], waiters[64], got[128];
    rlk_lock *l1 = NULL, *l2 = NULL;
    uint64_t fence;
    long long pttl;
    HO_KEY(waiters, name, "waiters");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, "{ho-re}:queue");
    l1 = ACQ_R(a, name, 30000);
    l2 = ACQ_R(a, name, 30000);
    if (!l1 || !l2) goto out;
    CHECK_EQ_INT(rlk_lock_holds(l2), 2);
    fence = rlk_lock_fence(l1);
    snprintf(afield, sizeof afield, "%s", rlk_lock_token(l1));
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, RLK_LOCK_REENTRANT)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]))
        goto out;

    /* One hold fewer: still A's, the waiter still in line. */
    CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    l2 = NULL;
    CMD_STR(admin, got, "HGET", name, afield);
    CHECK_EQ_STR(got, "1");
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, tok[0]), 1);
    CHECK(!waiter_done(&w));

    reset_stats(admin);
    CHECK_EQ_INT(rlk_lock_release(l1), RLK_OK);
    l1 = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    /* The release, and the waiter's confirmation of the handoff (an EVAL). */
    CHECK_MSG(stat_calls(admin, "evalsha") == 1 && stat_calls(admin, "eval") == 1,
              "%lld scripts run: the release and %s", stat_calls(admin, "evalsha"),
              "the waiter's confirmation");
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[0]);
    CHECK_EQ_INT(rlk_lock_holds(w.l), 1);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CMD_STR(admin, got, "TYPE", name);
    CHECK_EQ_STR(got, "hash");
    CHECK_EQ_INT(CMD_INT(admin, "HLEN", name), 1);
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", name, afield), 0);
    CMD_STR(admin, got, "HGET", name, tok[0]);
    CHECK_EQ_STR(got, "1");
    pttl = CMD_INT(admin, "PTTL", name);
    CHECK_MSG(pttl > 20000 - MARGIN && pttl <= 20000, "PTTL %lld, the waiter's TTL 20000", pttl);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (l2) rlk_lock_release(l2);
    if (l1) rlk_lock_release(l1);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A release by token (what `resplock release NAME TOKEN` does) hands
 * the lock over just the same, in the message (no try of the waiter's
 * own: its re-check is 6.7 s away). */
static void test_handoff_release_by_token(void)
{
    const char *name = "ho-bytoken";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 0, 30000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    char tok[1][96], atok[96], got[128];
    rlk_lock *la;
    uint64_t fence = 0;
    int held = 0;
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, "{ho-bytoken}:waiters", "{ho-bytoken}:queue");
    load_scripts(a);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    snprintf(atok, sizeof atok, "%s", rlk_lock_token(la));
    rlk_lock_forget(la);
    held = 1;
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]))
        goto out;
    reset_stats(admin);
    CHECK_EQ_INT(rlk_release_token(a, name, atok), RLK_OK);
    held = 0;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    CHECK_MSG(stat_calls(admin, "evalsha") == 1 && stat_calls(admin, "eval") == 1,
              "%lld scripts run: the release and %s", stat_calls(admin, "evalsha"),
              "the waiter's confirmation");
    CHECK_EQ_STR(rlk_lock_token(w.l), tok[0]);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, tok[0]);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (held) rlk_release_token(a, name, atok);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A lock got by handoff is valid, until the waiter's confirmation is
 * read, for the claim (the re-check, 1000 ms, plus a second) from the
 * waiter's last try before the release; once it is read (the client's
 * next call: here a tick), for the TTL from when it was sent.  Never
 * longer than the server keeps it (PTTL, read first, is at least the
 * validity read after). */
static void test_handoff_validity(void)
{
    const char *name = "ho-valid";
    const int64_t ttl = 10000, drift = 10000 / 100 + 2;
    rlk_client *a = CLIENT(), *c = CLIENT();
    struct waiter w;
    int joined = 0, started = 0;
    rlk_lock *la = NULL;
    long long pttl;
    int64_t rem;
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, "{ho-valid}:waiters", "{ho-valid}:queue");
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, ttl, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    if (!hand_over(&la, &w, &joined)) goto out;
    pttl = CMD_INT(admin, "PTTL", name);
    rem = rlk_lock_remaining_ms(w.l);
    CHECK_MSG(rem > 0 && rem <= 2000, "remaining %lld before the confirmation is read",
              (long long)rem);
    CHECK_MSG(pttl >= rem, "PTTL %lld < remaining %lld", pttl, (long long)rem);
    CHECK_EQ_INT(rlk_client_tick(c, NULL), RLK_OK);
    rem = rlk_lock_remaining_ms(w.l);
    pttl = CMD_INT(admin, "PTTL", name);
    CHECK_MSG(rem > 0 && rem <= ttl - drift, "remaining %lld (TTL %lld)", (long long)rem,
              (long long)ttl);
    CHECK_MSG(pttl + MARGIN >= rem, "PTTL %lld < remaining %lld", pttl, (long long)rem);
    CHECK_MSG(rem >= ttl - drift - MARGIN, "remaining %lld (TTL %lld)", (long long)rem,
              (long long)ttl);
    CHECK_EQ_INT(rlk_lock_is_lost(w.l), 0);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* Waiting twice for the same lock.  Under RESP3 the subscriptions of the
 * first wait stay: the second one subscribes to nothing and is in line
 * after its first try.  Under RESP2 the waiting connection is closed
 * after each wait, so each wait subscribes to both channels again (and
 * tries once before joining).  Both times the lock comes by handoff. */
static void wait_twice(int protocol)
{
    char name[32], got[128];
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, protocol, 5000, NULL);
    struct waiter w;
    int joined = 0, started = 0, round;
    rlk_lock *la = NULL;
    uint64_t fence;
    long long subs, tries;
    snprintf(name, sizeof name, "ho-again-%d", protocol);
    if (!a || !c) goto out;
    CHECK_EQ_INT(rlk_conn_get_info(rlk_client_conn(c))->protocol, protocol);
    load_scripts(a);
    for (round = 0; round < 2; round++) {
        la = ACQ(a, name, 30000);
        if (!la) goto out;
        fence = rlk_lock_fence(la);
        reset_stats(admin);
        if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
        started = 1;
        joined = 0;
        if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
        /* It subscribes before it joins the line: the counts are final
         * (its next re-check is 3 s away). */
        subs = stat_calls(admin, "subscribe");
        tries = stat_calls(admin, "evalsha");
        if (protocol == 3 && round == 1) {
            CHECK_MSG(subs == 0, "second wait (RESP3): %lld SUBSCRIBE", subs);
            CHECK_MSG(tries == 1, "second wait (RESP3): %lld tries to join the line", tries);
        } else {
            CHECK_MSG(subs == 2, "wait %d (RESP%d): %lld SUBSCRIBE", round + 1, protocol, subs);
            if (round == 1)
                CHECK_MSG(tries == 2, "second wait (RESP2): %lld tries to join the line", tries);
        }
        CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
        la = NULL;
        pthread_join(w.th, NULL);
        joined = 1;
        if (!CHECK_MSG(w.rc == RLK_OK && w.l, "wait %d: %d %s", round + 1, w.rc, w.err)) goto out;
        /* Handed over: the release and the waiter's confirmation (an
         * EVAL) were the only scripts since. */
        CHECK_MSG(stat_calls(admin, "evalsha") == tries + 1 && stat_calls(admin, "eval") == 1,
                  "wait %d: %lld scripts, %lld before the release", round + 1,
                  stat_calls(admin, "evalsha"), tries);
        CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
        CHECK(CMD_STR(admin, got, "GET", name) == 1);
        CHECK_EQ_STR(got, rlk_lock_token(w.l));
        CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
        w.l = NULL;
    }
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* RESP3: the subscriptions kept after a wait go with the connection.  A
 * client whose connection was killed in between (its first try then
 * finds the connection closed, and is sent again on a new one) subscribes
 * again on the new connection, and is handed the lock by the release
 * (its re-check is 5 s away, so only the handoff can give it the lock in
 * time). */
static void test_wait_after_reconnect_subscribes_again(void)
{
    const char *name = "ho-reconn";
    char id[32], got[128];
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 3, 5000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    rlk_lock *la = NULL;
    uint64_t gen, fence;
    int64_t t_rel;
    if (!a || !c) goto out;
    load_scripts(a);
    /* A first wait: the subscriptions are made and kept. */
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "first wait: %d %s", w.rc, w.err)) goto out;
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;

    /* The server drops the waiter's connection, and with it the
     * subscriptions. */
    gen = rlk_conn_generation(rlk_client_conn(c));
    snprintf(id, sizeof id, "%lld", (long long)rlk_conn_get_info(rlk_client_conn(c))->client_id);
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);

    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    reset_stats(admin);
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    joined = 0;
    /* Registered, and subscribed again on the new connection. */
    if (!CHECK_MSG(wait_waiters(name, 1, LONG_MS), "waiter: %s",
                   waiter_done(&w) ? w.err : "still waiting"))
        goto out;
    CHECK(wait_calls(admin, "subscribe", 2, LONG_MS));
    t_rel = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "second wait: %d %s", w.rc, w.err)) goto out;
    CHECK(rlk_conn_generation(rlk_client_conn(c)) > gen);
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK_MSG(w.done_at - t_rel < (slow ? 2500 : 1000),
              "acquired %lld ms after the release (re-check 5000)", (long long)(w.done_at - t_rel));
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, rlk_lock_token(w.l));
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A wait whose waiting connection breaks goes on: a RESP2 waiter whose
 * waiting connection the server closes connects and subscribes again,
 * keeps its place in line, and is handed the lock by the release. */
static void test_wait_survives_lost_connection(void)
{
    const char *name = "ho-failed";
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 2, 5000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    rlk_lock *la = NULL;
    if (!a || !c) goto out;
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    reset_stats(admin);
    if (!waiter_start(&w, c, name, 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    CHECK(wait_calls(admin, "subscribe", 2, LONG_MS));
    /* The only subscribed connection is the waiter's. */
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "TYPE", "pubsub"), 1);
    CHECK_MSG(wait_calls(admin, "subscribe", 4, LONG_MS), "the waiter did not subscribe again");
    CHECK(!waiter_done(&w));
    CHECK_EQ_INT(waiter_entries("{ho-failed}:waiters"), 1);
    if (!hand_over(&la, &w, &joined)) goto out;
    CHECK_EQ_INT(rlk_client_tick(c, NULL), RLK_OK); /* reads the confirmation */
    CHECK(rlk_lock_remaining_ms(w.l) > 5000);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (la) rlk_lock_release(la);
    if (w.l) rlk_lock_release(w.l);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void test_wait_again_resp3_keeps_subscription(void) { wait_twice(3); }
static void test_wait_again_resp2_subscribes_again(void) { wait_twice(2); }

/* A message on the waiter's handoff channel that does not name its
 * token (a handoff meant for an earlier wait, or a forgery) is not the
 * lock: the waiter looks again at once, stays in line, and gets the
 * lock from the real release with the real fence. */
static void test_handoff_other_token_ignored(void)
{
    const char *name = "ho-forged";
    /* Re-check 30 s, TTL 30 s: the waiter's next own try is 10 s away,
     * so a try soon after a message is the message's doing. */
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, 0, 30000, NULL);
    struct waiter w;
    int joined = 0, started = 0, i;
    char tok[1][96], ch[96], msg[3][160], got[128], waiters[64];
    rlk_lock *la = NULL;
    uint64_t fence;
    HO_KEY(waiters, name, "waiters");
    if (!a || !c) goto out;
    CMD(admin, "DEL", name, waiters, "{ho-forged}:queue");
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    if (!waiter_start(&w, c, name, 30000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS)) ||
        !newest_waiter(name, tok, 0, tok[0], sizeof tok[0]) ||
        !waiter_channel(name, tok[0], ch, sizeof ch))
        goto out;
    snprintf(msg[0], sizeof msg[0], "999 sometoken");
    snprintf(msg[1], sizeof msg[1], "999 %sx", tok[0]); /* its token and more */
    snprintf(msg[2], sizeof msg[2], "999 %.31s", tok[0]); /* a prefix of it */
    reset_stats(admin);
    for (i = 0; i < 3; i++) {
        CHECK_EQ_INT(CMD_INT(admin, "PUBLISH", ch, msg[i]), 1);
        CHECK_MSG(wait_calls(admin, "evalsha", i + 1, LONG_MS), "no try after message %d", i + 1);
        CHECK_MSG(!waiter_done(&w), "the waiter returned on \"%s\"", msg[i]);
    }
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, tok[0]), 1);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, rlk_lock_token(la));

    if (!hand_over(&la, &w, &joined)) goto out;
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence);
    CHECK(CMD_STR(admin, got, "GET", name) == 1);
    CHECK_EQ_STR(got, tok[0]);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    rlk_client_free(a);
    rlk_client_free(c);
}

/* A reentrant lock taken again by its holder (same client, same thread)
 * with a wait is one more hold at once, valid for its TTL, whatever the
 * client's earlier waits left behind.  Here the first hold came from a
 * wait, which under RESP3 leaves the client subscribed to the lock's
 * channels (so the second acquire starts with the wait script). */
static void reentrant_again_after_wait(int protocol)
{
    char name[32], got[16];
    rlk_client *a = CLIENT(), *c = CLIENT_EX(srv_url, protocol, 0, NULL);
    rlk_lock_options o;
    rlk_lock *la, *l1 = NULL, *l2 = NULL;
    int64_t drift = 10000 / 100 + 2, rem;
    int rc;
    snprintf(name, sizeof name, "ho-renest-%d", protocol);
    if (!a || !c) goto out;
    CMD(admin, "DEL", name);
    /* A holder that goes away: its hold runs out in 300 ms. */
    la = ACQ_R(a, name, 300);
    if (!la) goto out;
    rlk_lock_forget(la);
    opts(&o, 10000, LONG_MS, RLK_LOCK_REENTRANT, 0, NULL);
    rc = rlk_lock_acquire(c, name, &o, &l1);
    if (!CHECK_MSG(rc == RLK_OK && l1, "first: %d %s", rc, rlk_client_errmsg(c))) goto out;
    CHECK_EQ_INT(rlk_lock_holds(l1), 1);

    rc = rlk_lock_acquire(c, name, &o, &l2);
    if (!CHECK_MSG(rc == RLK_OK && l2, "again: %d %s", rc, rlk_client_errmsg(c))) goto out;
    CHECK_EQ_INT(rlk_lock_holds(l2), 2);
    CMD_STR(admin, got, "HGET", name, rlk_lock_token(l2));
    CHECK_EQ_STR(got, "2");
    rem = rlk_lock_remaining_ms(l2);
    CHECK_MSG(rem > 10000 - drift - MARGIN, "remaining %lld of a hold just taken (TTL 10000)",
              (long long)rem);
    CHECK_EQ_INT(rlk_lock_is_lost(l2), 0);

    /* The inner release leaves the outer hold. */
    CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    l2 = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 1);
    CMD_STR(admin, got, "HGET", name, rlk_lock_token(l1));
    CHECK_EQ_STR(got, "1");
    CHECK_EQ_INT(rlk_lock_release(l1), RLK_OK);
    l1 = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (l2) rlk_lock_release(l2);
    if (l1) rlk_lock_release(l1);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void test_reentrant_again_after_wait_resp3(void) { reentrant_again_after_wait(3); }
static void test_reentrant_again_after_wait_resp2(void) { reentrant_again_after_wait(2); }

/* A waiter gets a lock of the kind it asked for, whatever the kind of
 * the holder that hands it over: a simple waiter behind a reentrant
 * holder gets a string it can release, a reentrant waiter behind a
 * simple holder a hash with its field. */
static void handoff_other_kind(rlk_lock_kind holder, rlk_lock_kind waiter)
{
    const char *name = holder == RLK_LOCK_REENTRANT ? "ho-kind-rs" : "ho-kind-sr";
    rlk_client *a = CLIENT(), *c = CLIENT();
    struct waiter w;
    int joined = 0, started = 0;
    char got[128];
    rlk_lock *la = NULL;
    int rc;
    if (!a || !c) goto out;
    CMD(admin, "DEL", name);
    la = acquire(a, name, 30000, holder, 0, NULL, __LINE__);
    if (!la) goto out;
    if (!waiter_start(&w, c, name, 20000, HO_WAIT_MS, waiter)) goto out;
    started = 1;
    if (!CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    if (!hand_over(&la, &w, &joined)) goto out;
    CMD_STR(admin, got, "TYPE", name);
    CHECK_EQ_STR(got, waiter == RLK_LOCK_SIMPLE ? "string" : "hash");
    rc = rlk_lock_release(w.l);
    w.l = NULL;
    CHECK_MSG(rc == RLK_OK, "the waiter's release: %d %s", rc, rlk_client_errmsg(c));
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
out:
    if (la) rlk_lock_release(la);
    waiters_end(&w, &joined, started);
    CMD(admin, "DEL", name);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void test_handoff_simple_waiter_reentrant_holder(void)
{
    handoff_other_kind(RLK_LOCK_REENTRANT, RLK_LOCK_SIMPLE);
}

static void test_handoff_reentrant_waiter_simple_holder(void)
{
    handoff_other_kind(RLK_LOCK_SIMPLE, RLK_LOCK_REENTRANT);
}

/* ------------------------------------------------------------------ */
/* Mutual exclusion                                                    */

#define MX_THREADS 8
#define MX_ITERS 200

struct mx_shared {
    pthread_mutex_t mu;
    int inside, overlaps, nonmonotonic, enters;
    uint64_t last_fence;
};

struct mx_thread {
    struct mx_shared *sh;
    rlk_client *cl;
    rlk_conn *raw;
    int released, failures;
    char err[256];
};

static void *mx_main(void *arg)
{
    struct mx_thread *t = arg;
    struct mx_shared *sh = t->sh;
    int i;
    for (i = 0; i < MX_ITERS; i++) {
        rlk_lock_options o;
        rlk_lock *l = NULL;
        rlk_resp_value *v;
        const char *get[2] = {"GET", "mx-counter"};
        const char *set[3] = {"SET", "mx-counter", NULL};
        char num[32];
        long long n;
        int rc;
        struct timespec work = {0, 200000};

        opts(&o, 10000, RLK_WAIT_FOREVER, RLK_LOCK_SIMPLE, 0, NULL);
        rc = rlk_lock_acquire(t->cl, "mx", &o, &l);
        if (rc != RLK_OK) {
            snprintf(t->err, sizeof t->err, "acquire: %d %s", rc, rlk_client_errmsg(t->cl));
            t->failures++;
            break;
        }
        pthread_mutex_lock(&sh->mu);
        if (sh->inside) sh->overlaps++;
        sh->inside = 1;
        if (rlk_lock_fence(l) <= sh->last_fence) sh->nonmonotonic++;
        sh->last_fence = rlk_lock_fence(l);
        sh->enters++;
        pthread_mutex_unlock(&sh->mu);

        /* The critical section: a read-modify-write that only the lock
         * makes safe. */
        rc = rlk_conn_command(t->raw, &v, 2, get, NULL);
        n = rc == RLK_OK && v && v->type == RLK_RESP_BULK && v->str ? strtoll(v->str, NULL, 10) : 0;
        if (rc != RLK_OK) t->failures++;
        nanosleep(&work, NULL); /* the workload, not a synchronisation */
        snprintf(num, sizeof num, "%lld", n + 1);
        set[2] = num;
        rc = rlk_conn_command(t->raw, &v, 3, set, NULL);
        if (rc != RLK_OK) t->failures++;

        pthread_mutex_lock(&sh->mu);
        sh->inside = 0;
        pthread_mutex_unlock(&sh->mu);
        rc = rlk_lock_release(l);
        if (rc == RLK_OK) t->released++;
        else {
            snprintf(t->err, sizeof t->err, "release: %d %s", rc, rlk_client_errmsg(t->cl));
            t->failures++;
        }
    }
    return NULL;
}

static void test_mutual_exclusion(void)
{
    struct mx_shared sh;
    struct mx_thread t[MX_THREADS];
    pthread_t th[MX_THREADS];
    int i, started = 0, released = 0, failures = 0;
    char got[32];
    memset(&sh, 0, sizeof sh);
    memset(t, 0, sizeof t);
    pthread_mutex_init(&sh.mu, NULL);
    CMD(admin, "DEL", "mx", "mx-counter");
    for (i = 0; i < MX_THREADS; i++) {
        t[i].sh = &sh;
        t[i].cl = CLIENT();
        t[i].raw = CONNECT(srv_url);
        if (!t[i].cl || !t[i].raw) goto out;
    }
    for (i = 0; i < MX_THREADS; i++, started++)
        if (!CHECK(pthread_create(&th[i], NULL, mx_main, &t[i]) == 0)) break;
    for (i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (i = 0; i < MX_THREADS; i++) {
        released += t[i].released;
        failures += t[i].failures;
        if (t[i].err[0]) printf("    thread %d: %s\n", i, t[i].err);
    }
    CHECK_EQ_INT(failures, 0);
    CHECK_EQ_INT(released, MX_THREADS * MX_ITERS);
    CHECK_EQ_INT(sh.enters, MX_THREADS * MX_ITERS);
    CHECK_EQ_INT(sh.overlaps, 0);
    CHECK_EQ_INT(sh.nonmonotonic, 0);
    CHECK(CMD_STR(admin, got, "GET", "mx-counter") == 1);
    CHECK_EQ_INT(atoll(got), MX_THREADS * MX_ITERS);
out:
    for (i = 0; i < MX_THREADS; i++) {
        rlk_client_free(t[i].cl);
        rlk_conn_free(t[i].raw);
    }
    pthread_mutex_destroy(&sh.mu);
}

/* A holder that stopped past its TTL (no watchdog) finds someone else's
 * lock when it resumes, and must not touch it. */
static void test_stopped_holder(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *la, *lb;
    char got[64];
    if (!a || !b) goto out;
    CMD(admin, "DEL", "stopped");
    la = ACQ(a, "stopped", 300);
    if (!la) goto out;
    CHECK(wait_exists(admin, "stopped", 0, 300 + LONG_MS));
    CHECK_EQ_INT(rlk_lock_remaining_ms(la), 0);
    lb = ACQ(b, "stopped", 10000);
    if (lb) {
        CHECK(rlk_lock_fence(lb) > rlk_lock_fence(la));
        CHECK_EQ_INT(rlk_lock_release(la), RLK_LOCK_NOT_OWNER);
        CHECK(CMD_STR(admin, got, "GET", "stopped") == 1);
        CHECK_EQ_STR(got, rlk_lock_token(lb));
        CHECK(CMD_INT(admin, "PTTL", "stopped") > 10000 - MARGIN);
        CHECK_EQ_INT(rlk_lock_release(lb), RLK_OK);
    } else {
        rlk_lock_forget(la);
    }
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

/* ------------------------------------------------------------------ */
/* Watchdog, tick mode                                                 */

static void test_watchdog_tick(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    char got[64];
    int64_t t0;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-tick");
    l = ACQ_WD(a, "wd-tick", 600, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, admin, "wd-tick", &lr);
    tick_for(&t, 3000, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(rlk_lock_is_lost(l), 0);
    CHECK(rlk_lock_remaining_ms(l) > 0);
    CHECK(CMD_STR(admin, got, "GET", "wd-tick") == 1);
    CHECK_EQ_STR(got, rlk_lock_token(l));
    CHECK_MSG(t.min_pttl >= (slow ? 100 : 200), "PTTL fell to %lld (TTL 600)", t.min_pttl);
    /* Renewing every 200 ms: about 15 ticks, not a busy loop. */
    CHECK_MSG(t.ticks >= 10 && t.ticks <= 60, "%d ticks in 3 s", t.ticks);
    CHECK_EQ_INT(t.errors, 0);
    CHECK_MSG(t.next > 0 && t.next <= 200, "next_ms %lld", (long long)t.next);

    /* Without ticks it expires; the next tick reports it. */
    t0 = ts_now_ms();
    CHECK(wait_exists(admin, "wd-tick", 0, 600 + LONG_MS));
    CHECK(ts_now_ms() - t0 <= 600 + MARGIN);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
    CHECK_EQ_INT(rlk_client_tick(a, &t.next), RLK_OK);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
    CHECK_EQ_INT(t.next, -1);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_HELD);
out:
    rlk_client_free(a);
}

/* Tick mode calls on_lost with the client's internal lock released: the
 * callback may call into the client, here releasing the lost lock and
 * acquiring another; a callback under the lock would deadlock here. */
struct reentry {
    rlk_client *cl;
    int calls, release_status, acquire_status;
    rlk_lock *next;
};

static void lost_reenters(void *ctx, rlk_lock *l)
{
    struct reentry *e = ctx;
    e->calls++;
    e->release_status = rlk_lock_release(l);
    e->acquire_status = rlk_lock_acquire(e->cl, "wd-reenter-2", NULL, &e->next);
}

static void test_watchdog_on_lost_may_call_client(void)
{
    rlk_client *a = CLIENT();
    struct reentry e;
    rlk_lock_options o;
    rlk_lock *l;
    int64_t deadline;
    memset(&e, 0, sizeof e);
    if (!a) return;
    e.cl = a;
    CMD(admin, "DEL", "wd-reenter", "wd-reenter-2");
    rlk_lock_options_init(&o);
    o.ttl_ms = 600;
    o.watchdog = 1;
    o.on_lost = lost_reenters;
    o.ctx = &e;
    if (!CHECK(rlk_lock_acquire(a, "wd-reenter", &o, &l) == RLK_OK)) goto out;
    CMD(admin, "DEL", "wd-reenter");
    deadline = ts_now_ms() + 600 + LONG_MS;
    while (e.calls == 0 && ts_now_ms() < deadline) {
        int64_t next = -1;
        rlk_client_tick(a, &next);
        if (e.calls) break;
        struct pollfd p = {rlk_client_fd(a), POLLIN, 0};
        poll(&p, 1, (int)(next < 0 || next > 50 ? 50 : next));
    }
    CHECK_EQ_INT(e.calls, 1);
    CHECK_EQ_INT(e.release_status, RLK_LOCK_NOT_HELD);
    CHECK_EQ_INT(e.acquire_status, RLK_OK);
    if (e.next) CHECK_EQ_INT(rlk_lock_release(e.next), RLK_OK);
out:
    rlk_client_free(a);
}

static void test_watchdog_lost_on_delete(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    int64_t t_del;
    char got[32];
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-del", "wd-taken");
    l = ACQ_WD(a, "wd-del", 600, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, 300, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CMD(admin, "DEL", "wd-del");
    t_del = ts_now_ms();
    tick_for(&t, 600 + LONG_MS, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        CHECK_MSG(lr.at - t_del <= 200 + MARGIN, "on_lost %lld ms after the DEL",
                  (long long)(lr.at - t_del));
        CHECK_MSG(lr.at <= t.valid_est, "on_lost at %lld, the validity ended at %lld",
                  (long long)lr.at, (long long)t.valid_est);
        CHECK_EQ_INT(lr.is_lost, 1);
        CHECK_EQ_INT(lr.remaining, 0);
    }
    /* Once only, and nothing left to renew. */
    tick_for(&t, 300, 0);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK_EQ_INT(t.next, -1);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_HELD);

    /* Taken by someone else meanwhile: lost, and their key is intact. */
    memset(&lr, 0, sizeof lr);
    l = ACQ_WD(a, "wd-taken", 600, &lr);
    if (!l) goto out;
    CMD(admin, "SET", "wd-taken", "other", "PX", "10000");
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, 600 + LONG_MS, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK(lr.at <= t.valid_est);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_OWNER);
    CHECK(CMD_STR(admin, got, "GET", "wd-taken") == 1);
    CHECK_EQ_STR(got, "other");
    CMD(admin, "DEL", "wd-taken");
out:
    rlk_client_free(a);
}

enum { SERVER_HALT, SERVER_FREEZE, SERVER_RESTART };

static void watchdog_server_trouble(int what)
{
    ts_server *s = ts_start(NULL);
    char url[64];
    rlk_client *a = NULL;
    rlk_conn *adm = NULL;
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    int64_t t_event, ttl = what == SERVER_RESTART ? 3000 : 1000;
    memset(&lr, 0, sizeof lr);
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a) goto out;
    l = ACQ_WD(a, "wd-trouble", ttl, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, ttl / 2, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(t.errors, 0);
    if (what == SERVER_HALT) {
        CHECK_EQ_INT(ts_halt(s), 0);
    } else if (what == SERVER_FREEZE) {
        CHECK_EQ_INT(kill(s->pid, SIGSTOP), 0);
    } else {
        CHECK_EQ_INT(ts_restart(s), 0);
    }
    t_event = ts_now_ms();
    t.ticks = 0;
    tick_for(&t, ttl + LONG_MS, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        printf("    on_lost %lld ms after the event, %lld ms before the validity ended "
               "(%d ticks)\n", (long long)(lr.at - t_event), (long long)(t.valid_est - lr.at),
               t.ticks);
        /* Before the validity ends, so the holder can still stop. */
        CHECK_MSG(lr.at < t.valid_est, "on_lost at +%lld ms, validity ended at +%lld ms",
                  (long long)(lr.at - t_event), (long long)(t.valid_est - t_event));
        if (what == SERVER_RESTART)
            CHECK_MSG(lr.at - t_event <= ttl / 3 + MARGIN,
                      "lost %lld ms after the restart", (long long)(lr.at - t_event));
    }
    CHECK_MSG(t.ticks < 100, "%d ticks until the loss: a busy loop", t.ticks);
    if (what != SERVER_RESTART) CHECK(t.errors > 0);
    if (what == SERVER_FREEZE) kill(s->pid, SIGCONT);
    if (what == SERVER_RESTART) {
        adm = CONNECT(url);
        CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "wd-trouble"), 0);
    }
out:
    rlk_client_free(a);
    rlk_conn_free(adm);
    ts_stop(s);
}

static void test_watchdog_server_killed(void) { watchdog_server_trouble(SERVER_HALT); }
static void test_watchdog_server_frozen(void) { watchdog_server_trouble(SERVER_FREEZE); }
static void test_watchdog_server_restarted(void) { watchdog_server_trouble(SERVER_RESTART); }

/* Ticks until a renewal round reached the server (EVALSHA counted);
 * *took is how long that tick took. */
static int tick_until_round(rlk_client *cl, rlk_conn *adm, int64_t ms, int64_t *took)
{
    int64_t deadline = ts_now_ms() + ms, next = 0;
    while (ts_now_ms() < deadline) {
        int64_t t0 = ts_now_ms();
        if (rlk_client_tick(cl, &next) != RLK_OK) return 0;
        *took = ts_now_ms() - t0;
        if (stat_calls(adm, "evalsha") > 0) return 1;
        if (next > 0) ts_pause_ms((int)(next < 1000 ? next : 1000)); /* as the library asks */
    }
    return 0;
}

#define BATCH_LOCKS 10000

static void test_watchdog_batching(void)
{
    ts_server *s = ts_start(NULL);
    rlk_client_config cfg;
    rlk_client *cl = NULL;
    rlk_conn *adm = NULL;
    rlk_lock **locks = calloc(BATCH_LOCKS, sizeof *locks);
    rlk_resp_value *v;
    char url[64], name[32];
    int i, n = 0, lost = 0;
    int64_t t0, t_round = 0;
    long long calls;
    if (!CHECK(s != NULL) || !locks) goto out;
    url_of(url, sizeof url, s);
    adm = CONNECT(url);
    client_cfg(&cfg, url);
    cfg.renew_divisor = 100; /* TTL 30 s: a round every 300 ms */
    cl = CLIENT_WITH(&cfg);
    if (!cl || !adm) goto out;
    t0 = ts_now_ms();
    for (i = 0; i < BATCH_LOCKS; i++) {
        rlk_lock_options o;
        int rc;
        snprintf(name, sizeof name, "batch:%d", i);
        opts(&o, 30000, 0, RLK_LOCK_SIMPLE, 1, NULL);
        rc = rlk_lock_acquire(cl, name, &o, &locks[i]);
        if (rc != RLK_OK) {
            CHECK_MSG(0, "acquire %s: %d %s", name, rc, rlk_client_errmsg(cl));
            break;
        }
        n++;
    }
    printf("    %d locks acquired in %lld ms\n", n, (long long)(ts_now_ms() - t0));
    if (n != BATCH_LOCKS) goto out;

    /* The first round also loads the renewal script. */
    reset_stats(adm);
    CHECK(tick_until_round(cl, adm, LONG_MS, &t_round));
    calls = stat_calls(adm, "evalsha");
    CHECK_MSG(calls == 10 || calls == 20, "first round: %lld EVALSHA", calls);
    CHECK(stat_calls(adm, "script") <= 1);

    /* Age every key, then one more round: 10 script calls of 1000
     * locks each, and every key renewed. */
    v = CMD(adm, "EVAL",
            "for i = 0, 9999 do redis.call('pexpire', 'batch:' .. i, 20000) end return 1", "0");
    CHECK(v && v->type == RLK_RESP_INTEGER);
    reset_stats(adm);
    CHECK(tick_until_round(cl, adm, LONG_MS, &t_round));
    CHECK_EQ_INT(stat_calls(adm, "evalsha"), (BATCH_LOCKS + 999) / 1000);
    CHECK_EQ_INT(stat_calls(adm, "script"), 0);
    printf("    renewal round of %d locks: %lld ms\n", n, (long long)t_round);
    v = CMD(adm, "EVAL",
            "local n = 0 for i = 0, 9999 do if redis.call('pttl', 'batch:' .. i) > 25000 "
            "then n = n + 1 end end return n",
            "0");
    CHECK_MSG(v && v->type == RLK_RESP_INTEGER && v->integer == BATCH_LOCKS,
              "%lld keys renewed of %d", v ? (long long)v->integer : -1LL, BATCH_LOCKS);
    for (i = 0; i < n; i++) lost += rlk_lock_is_lost(locks[i]);
    CHECK_EQ_INT(lost, 0);
out:
    rlk_client_free(cl); /* frees the handles without releasing */
    rlk_conn_free(adm);
    free(locks);
    ts_stop(s);
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
    CMD(admin, "SCRIPT", "FLUSH");
    CHECK_EQ_INT(rlk_lock_extend(l, 5000, RLK_EXTEND_ADD), RLK_OK);
    CMD(admin, "SCRIPT", "FLUSH");
    CHECK_EQ_INT(rlk_lock_get_status(a, "flush", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 1);
    CMD(admin, "SCRIPT", "FLUSH");
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "flush"), 0);
    CMD(admin, "SCRIPT", "FLUSH");
    CHECK_EQ_INT(try_acquire(a, "flush", RLK_LOCK_REENTRANT), RLK_OK);

    /* The renewal pipeline meets NOSCRIPT too. */
    l = ACQ_WD(a, "flush-wd", 600, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, admin, "flush-wd", &lr);
    tick_for(&t, 100, 1);
    CMD(admin, "SCRIPT", "FLUSH");
    tick_for(&t, 1000, 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_MSG(t.min_pttl >= (slow ? 100 : 200), "min PTTL %lld", t.min_pttl);
    CHECK_EQ_INT(t.errors, 0);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
out:
    rlk_client_free(a);
}

/* A reconnect makes the watchdog check every lock at once: the server
 * may be a new one that lost its keys. */
static void test_reconnect_rechecks(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    struct ticker t;
    rlk_lock *l;
    rlk_lock_status st;
    char id[32];
    long long pttl;
    int64_t t_kill;
    uint64_t gen;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "reconn");
    l = ACQ_WD(a, "reconn", 30000, &lr);
    if (!l) goto out;
    ticker_init(&t, a, l, NULL, NULL, &lr);
    tick_for(&t, 50, 0);
    CHECK_MSG(t.next > 5000, "next_ms %lld", (long long)t.next);

    /* Killed while idle: the fd polls readable, the tick notices,
     * reconnects and renews (nothing was due for 10 s). */
    gen = rlk_conn_generation(rlk_client_conn(a));
    CMD(admin, "PEXPIRE", "reconn", "20000");
    snprintf(id, sizeof id, "%lld", (long long)rlk_conn_get_info(rlk_client_conn(a))->client_id);
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);
    t_kill = ts_now_ms();
    t.ticks = 0;
    pttl = 0;
    while (ts_now_ms() - t_kill < 2000) {
        tick_for(&t, 100, 0);
        pttl = CMD_INT(admin, "PTTL", "reconn");
        if (pttl > 25000) break;
    }
    CHECK_MSG(pttl > 25000, "not renewed after the reconnect: PTTL %lld", pttl);
    CHECK_MSG(t.ticks <= 20, "%d ticks: a busy loop on a closed connection", t.ticks);
    CHECK_EQ_U64(rlk_conn_generation(rlk_client_conn(a)), gen + 1);
    CHECK_EQ_INT(lost_calls(&lr), 0);

    /* Reconnected by another call: the next tick renews at once. */
    CMD(admin, "PEXPIRE", "reconn", "20000");
    snprintf(id, sizeof id, "%lld", (long long)rlk_conn_get_info(rlk_client_conn(a))->client_id);
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);
    CHECK_EQ_INT(rlk_lock_get_status(a, "something-else", &st), RLK_OK);
    CHECK_EQ_U64(rlk_conn_generation(rlk_client_conn(a)), gen + 2);
    CHECK_EQ_INT(rlk_client_tick(a, &t.next), RLK_OK);
    pttl = CMD_INT(admin, "PTTL", "reconn");
    CHECK_MSG(pttl > 25000, "not renewed after the reconnect: PTTL %lld", pttl);

    /* The key vanished with the connection: lost at once. */
    CMD(admin, "DEL", "reconn");
    snprintf(id, sizeof id, "%lld", (long long)rlk_conn_get_info(rlk_client_conn(a))->client_id);
    CHECK_EQ_INT(CMD_INT(admin, "CLIENT", "KILL", "ID", id), 1);
    t_kill = ts_now_ms();
    tick_for(&t, 2000, 1);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    CHECK_MSG(lr.at - t_kill < MARGIN, "lost %lld ms after the kill", (long long)(lr.at - t_kill));
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_HELD);
out:
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* Watchdog, thread mode                                               */

static void test_watchdog_thread(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    rlk_lock *l;
    long long min_pttl = LLONG_MAX, v;
    int64_t t0, est = 0, t_del, deadline;
    char got[64];
    int i, errors = 0;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-thread");
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK); /* already running */
    /* Taken after the thread went to sleep: it must still be renewed
     * in time (TTL shorter than the thread's idle wait). */
    l = ACQ_WD(a, "wd-thread", 600, &lr);
    if (!l) goto out;
    t0 = ts_now_ms();
    while (ts_now_ms() - t0 < 3000 && !lost_calls(&lr)) {
        v = CMD_INT(admin, "PTTL", "wd-thread");
        if (v < min_pttl) min_pttl = v;
        ts_pause_ms(20); /* sampling interval */
    }
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_MSG(min_pttl >= (slow ? 100 : 200), "PTTL fell to %lld (TTL 600)", min_pttl);
    CHECK(CMD_STR(admin, got, "GET", "wd-thread") == 1);
    CHECK_EQ_STR(got, rlk_lock_token(l));
    CHECK(rlk_lock_remaining_ms(l) > 0);

    /* The client's calls from this thread while the watchdog runs. */
    for (i = 0; i < 30; i++) {
        rlk_lock_status st;
        rlk_lock *o = ACQ_WD(a, "wd-thread-other", 1000, NULL);
        if (!o) {
            errors++;
            break;
        }
        if (rlk_lock_extend(o, 500, RLK_EXTEND_ADD) != RLK_OK) errors++;
        if (rlk_lock_get_status(a, "wd-thread-other", &st) != RLK_OK || !st.held) errors++;
        if (rlk_lock_release(o) != RLK_OK) errors++;
    }
    CHECK_EQ_INT(errors, 0);
    CHECK_EQ_INT(lost_calls(&lr), 0);

    /* Deleted: on_lost comes from the watchdog thread, in time. */
    CMD(admin, "DEL", "wd-thread");
    t_del = ts_now_ms();
    est = t_del + rlk_lock_remaining_ms(l);
    deadline = t_del + 600 + LONG_MS;
    while (!lost_calls(&lr) && ts_now_ms() < deadline) ts_pause_ms(2);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        CHECK(!pthread_equal(lr.thread, pthread_self()));
        CHECK_MSG(lr.at - t_del <= 200 + MARGIN, "on_lost %lld ms after the DEL",
                  (long long)(lr.at - t_del));
        CHECK_MSG(lr.at <= est, "on_lost at %lld, validity ended at %lld", (long long)lr.at,
                  (long long)est);
    }
    CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
    t0 = ts_now_ms();
    rlk_client_watchdog_stop(a);
    CHECK_MSG(ts_now_ms() - t0 < 100 + MARGIN, "stop took %lld ms", (long long)(ts_now_ms() - t0));
    rlk_client_watchdog_stop(a); /* not running: nothing */
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_HELD);

    /* Started again, and freed while running. */
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    l = ACQ_WD(a, "wd-thread", 600, NULL);
    (void)l;
out:
    rlk_client_free(a);
}

/* The server goes away under the watchdog thread: on_lost from the
 * thread, before the validity ends. */
static void test_watchdog_thread_server_killed(void)
{
    ts_server *s = ts_start(NULL);
    char url[64];
    rlk_client *a = NULL;
    struct lost_rec lr;
    rlk_lock *l;
    int64_t t0, t_halt, est, deadline;
    memset(&lr, 0, sizeof lr);
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a) goto out;
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    l = ACQ_WD(a, "wdt-killed", 1000, &lr);
    if (!l) goto out;
    t0 = ts_now_ms();
    while (ts_now_ms() - t0 < 500 && !lost_calls(&lr)) ts_pause_ms(10); /* held meanwhile */
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(ts_halt(s), 0);
    t_halt = ts_now_ms();
    est = t_halt + rlk_lock_remaining_ms(l); /* no renewal can succeed from here */
    deadline = t_halt + 1000 + LONG_MS;
    while (!lost_calls(&lr) && ts_now_ms() < deadline) ts_pause_ms(2);
    CHECK_EQ_INT(lost_calls(&lr), 1);
    if (lost_calls(&lr) == 1) {
        CHECK(!pthread_equal(lr.thread, pthread_self()));
        CHECK_MSG(lr.at < est, "on_lost at +%lld ms, validity ended at +%lld ms",
                  (long long)(lr.at - t_halt), (long long)(est - t_halt));
    }
    CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
    rlk_client_watchdog_stop(a);
    CHECK_MSG(rlk_lock_release(l) == RLK_ERR_CONNECT, "release with the server gone: %s",
              rlk_client_errmsg(a));
out:
    rlk_client_free(a);
    ts_stop(s);
}

/* A SET-extend to a short time while the thread sleeps: renewed in time
 * for the new TTL. */
static void test_watchdog_thread_extend_shorter(void)
{
    rlk_client *a = CLIENT();
    struct lost_rec lr;
    rlk_lock *l;
    long long min_pttl = LLONG_MAX, v;
    int64_t t0;
    memset(&lr, 0, sizeof lr);
    if (!a) return;
    CMD(admin, "DEL", "wd-short");
    l = ACQ_WD(a, "wd-short", 30000, &lr);
    if (!l) goto out;
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    CHECK_EQ_INT(rlk_lock_extend(l, 600, RLK_EXTEND_SET), RLK_OK);
    t0 = ts_now_ms();
    while (ts_now_ms() - t0 < 2000 && !lost_calls(&lr)) {
        v = CMD_INT(admin, "PTTL", "wd-short");
        if (v < min_pttl) min_pttl = v;
        ts_pause_ms(20); /* sampling interval */
    }
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_MSG(min_pttl >= (slow ? 100 : 200), "PTTL fell to %lld (TTL 600)", min_pttl);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
out:
    rlk_client_free(a);
}

/* ------------------------------------------------------------------ */
/* Status and interoperation                                           */

static void test_status(void)
{
    rlk_client *a = CLIENT();
    rlk_lock_status st;
    rlk_lock *l, *r1, *r2;
    uint64_t fence;
    if (!a) return;
    CMD(admin, "DEL", "st-free", "{st-free}:fence", "st-s", "st-r", "st-nottl");
    CHECK_EQ_INT(rlk_lock_get_status(a, "st-free", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 0);
    CHECK_EQ_U64(st.fence, 0);
    CHECK_EQ_INT(st.holds, 0);
    CHECK_EQ_INT(st.waiters, 0);

    l = ACQ(a, "st-s", 10000);
    if (l) {
        CHECK_EQ_INT(rlk_lock_get_status(a, "st-s", &st), RLK_OK);
        CHECK_EQ_INT(st.held, 1);
        CHECK_EQ_INT(st.kind, RLK_LOCK_SIMPLE);
        CHECK_MSG(st.ttl_ms > 10000 - MARGIN && st.ttl_ms <= 10000, "ttl %lld",
                  (long long)st.ttl_ms);
        CHECK_EQ_U64(st.fence, rlk_lock_fence(l));
        fence = rlk_lock_fence(l);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        CHECK_EQ_INT(rlk_lock_get_status(a, "st-s", &st), RLK_OK);
        CHECK_EQ_INT(st.held, 0);
        CHECK_EQ_U64(st.fence, fence); /* the counter stays */
    }

    r1 = ACQ_R(a, "st-r", 10000);
    r2 = ACQ_R(a, "st-r", 10000);
    if (r1 && r2) {
        CHECK_EQ_INT(rlk_lock_get_status(a, "st-r", &st), RLK_OK);
        CHECK_EQ_INT(st.held, 1);
        CHECK_EQ_INT(st.kind, RLK_LOCK_REENTRANT);
        CHECK_EQ_INT(st.holds, 2);
        CHECK_EQ_U64(st.fence, rlk_lock_fence(r1));
        CHECK(st.ttl_ms > 0 && st.ttl_ms <= 10000);
    }
    if (r2) rlk_lock_release(r2);
    if (r1) rlk_lock_release(r1);

    CMD(admin, "SET", "st-nottl", "x");
    CHECK_EQ_INT(rlk_lock_get_status(a, "st-nottl", &st), RLK_OK);
    CHECK_EQ_INT(st.held, 1);
    CHECK_EQ_INT(st.ttl_ms, -1);
    CMD(admin, "DEL", "st-nottl");
    rlk_client_free(a);
}

/* redis-py's Lock and go-redsync write the same layout: a string holding
 * a token, set with SET NX PX. */
static void test_interop_string_layout(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l;
    rlk_resp_value *v;
    char got[64];
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

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;

    RUN(test_crc16_self_check);
    RUN(test_basic_acquire_release);
    RUN(test_default_options);
    RUN(test_acquire_errors);
    RUN(test_config_strings_copied);
    RUN(test_fence_increasing);
    RUN(test_fence_same_slot);
    RUN(test_release_not_held);
    RUN(test_release_not_owner);
    RUN(test_release_twice_by_token);
    RUN(test_release_reply_lost);
    RUN(test_extend);
    RUN(test_validity);
    RUN(test_plan);
    RUN(test_reentrant);
    RUN(test_reentrant_client_id);
    RUN(test_redisson_holder);
    RUN(test_reentrant_watchdog);
    RUN(test_wait_zero_is_one_try);
    RUN(test_wait_bounded);
    RUN(test_wake_on_release_resp3);
    RUN(test_wake_on_release_resp2);
    RUN(test_wake_on_expiry_resp3);
    RUN(test_wake_on_expiry_resp2);
    RUN(test_handoff_fifo);
    RUN(test_handoff_skips_dead_entry);
    RUN(test_handoff_skips_not_listening);
    RUN(test_handoff_wait_timeout_leaves_queue);
    RUN(test_handoff_acquire_when_free_leaves_queue);
    RUN(test_handoff_reentrant);
    RUN(test_handoff_release_by_token);
    RUN(test_handoff_validity);
    RUN(test_wait_again_resp3_keeps_subscription);
    RUN(test_wait_after_reconnect_subscribes_again);
    RUN(test_wait_survives_lost_connection);
    RUN(test_wait_again_resp2_subscribes_again);
    RUN(test_handoff_other_token_ignored);
    RUN(test_reentrant_again_after_wait_resp3);
    RUN(test_reentrant_again_after_wait_resp2);
    RUN(test_handoff_simple_waiter_reentrant_holder);
    RUN(test_handoff_reentrant_waiter_simple_holder);
    RUN(test_mutual_exclusion);
    RUN(test_stopped_holder);
    RUN(test_watchdog_tick);
    RUN(test_watchdog_lost_on_delete);
    RUN(test_watchdog_on_lost_may_call_client);
    RUN(test_watchdog_server_killed);
    RUN(test_watchdog_server_frozen);
    RUN(test_watchdog_server_restarted);
    RUN(test_watchdog_batching);
    RUN(test_script_flush);
    RUN(test_reconnect_rechecks);
    RUN(test_watchdog_thread);
    RUN(test_watchdog_thread_extend_shorter);
    RUN(test_watchdog_thread_server_killed);
    RUN(test_status);
    RUN(test_interop_string_layout);

    return locktest_finish(t0);
}
