/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lock layer's basics (rlk_client_*, rlk_lock_*) against real
 * redis-server processes on free loopback ports: acquire and release
 * (also a release whose reply was lost, through a cutting proxy), extend
 * and its outcomes, validity and the timing the library plans with,
 * tokens, reentrant holds, status, and mutual exclusion between threads.
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

#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Basics                                                              */

static void test_basic_acquire_release(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l, *l2;
    char got[256], tok1[256];
    long long pttl;
    uint64_t f1;
    int rc;
    if (!a || !b) goto out;
    CMD(admin, "DEL", "basic");

    l = ACQ(a, "basic", 10000);
    if (!l) goto out;
    CHECK_MSG(is_token(rlk_lock_token(l)), "token \"%s\" is not rlk:, 32 hex digits and the holder's facts", rlk_lock_token(l));
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

    /* No room (a listener whose queue is full): the call ends at its
     * deadline, not before. */
    ts_hole h;
    if (!CHECK_MSG(ts_hole_open(&h) == 0, "no listener with a full queue")) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", h.port);
    client_cfg(&cfg, url);
    cfg.conn.connect_timeout_ms = 300;
    dead = rlk_client_new(&cfg);
    if (CHECK(dead != NULL)) {
        int64_t t0 = ts_now_ms();
        CHECK_EQ_INT(rlk_client_connect(dead), RLK_ERR_TIMEOUT);
        CHECK_MSG(ts_now_ms() - t0 >= 290, "gave up after %lld ms", (long long)(ts_now_ms() - t0));
        CHECK_MSG(ts_contains(rlk_client_errmsg(dead), "connect: timed out"), "errmsg: %s",
                  rlk_client_errmsg(dead));
    }
    rlk_client_free(dead);
    ts_hole_close(&h);
}

/* The client keeps its own copies of the configuration's strings: the
 * connections it opens later (after a wait, with the watchdog thread, the
 * caller's own of rlk_client_conn) must not read the caller's buffers. */
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
    rc = rlk_lock_acquire(cl, "copied", &o, &l);
    CHECK_MSG(rc == RLK_LOCK_BUSY, "acquire: %d %s", rc, rlk_client_errmsg(cl));
    rc = rlk_client_watchdog_start(cl);
    CHECK_MSG(rc == RLK_OK, "watchdog: %d %s", rc, rlk_client_errmsg(cl));
    {
        const char *ping[1] = {"PING"};
        rlk_resp_value *pv;
        rlk_conn *own = rlk_client_conn(cl); /* the caller's own connection */
        CHECK(own != NULL && rlk_conn_command(own, &pv, 1, ping, NULL) == RLK_OK);
    }
    CHECK_EQ_INT(count_clients(admin, "clobbered"), 0);
    CHECK_EQ_INT(count_clients(admin, "copied-name"), 2);
    rlk_client_watchdog_stop(cl);
    rlk_client_free(cl);
    if (h) rlk_lock_release(h);
out:
    rlk_client_free(holder);
    free(url);
    free(name);
}

/* ------------------------------------------------------------------ */
/* Release and extend                                                  */

static void test_release_not_held(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l;
    if (!a) return;
    /* Gone while it was still thought held (a flush, an eviction, a
     * restart without persistence): not held. */
    l = ACQ(a, "rel-gone", 10000);
    if (l) {
        CMD(admin, "DEL", "rel-gone");
        CHECK_EQ_INT(rlk_lock_is_lost(l), 0);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_NOT_HELD);
        CHECK(ts_contains(rlk_client_errmsg(a), "not held"));
    }
    /* Expired: its validity was over before the release, which says so
     * (lost), and what it found. */
    l = ACQ(a, "rel-expired", 200);
    if (l) {
        CHECK(wait_exists(admin, "rel-expired", 0, 200 + LONG_MS));
        CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
        CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);
        CHECK_MSG(ts_contains(rlk_client_errmsg(a), "lost before its release") &&
                      ts_contains(rlk_client_errmsg(a), "not held"),
                  "message \"%s\"", rlk_client_errmsg(a));
    }
    rlk_client_free(a);
}

static void test_release_not_owner(void)
{
    rlk_client *a = CLIENT();
    rlk_lock *l;
    char got[256];
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

/* Releasing by token: once, then the lock is not held any more; with
 * someone else holding it, nothing is deleted. */
static void test_release_twice_by_token(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l, *lb;
    char tok[256], got[256];
    if (!a || !b) goto out;
    l = ACQ(a, "rel-twice", 10000);
    if (!l) goto out;
    snprintf(tok, sizeof tok, "%s", rlk_lock_token(l));
    rlk_lock_forget(l);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "rel-twice"), 1); /* forget does not release */
    CHECK_EQ_INT(rlk_release_token(a, "rel-twice", tok), RLK_OK);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "rel-twice"), 0);
    CHECK_EQ_INT(rlk_release_token(a, "rel-twice", tok), RLK_LOCK_NOT_HELD);
    /* Nothing is left behind by a release of an uncontended lock. */
    {
        rlk_resp_value *k = CMD(admin, "KEYS", "*rel-twice*");
        CHECK_MSG(k && k->type == RLK_RESP_ARRAY && !k->child, "a key of the lock is left");
    }
    /* A token that never held it. */
    CHECK_EQ_INT(rlk_release_token(a, "rel-twice", "ffffffffffffffffffffffffffffffff"),
                 RLK_LOCK_NOT_HELD);
    /* Someone else takes it: a late repeat is refused and deletes
     * nothing. */
    lb = ACQ(b, "rel-twice", 10000);
    if (lb) {
        CHECK_EQ_INT(rlk_release_token(a, "rel-twice", tok), RLK_LOCK_NOT_OWNER);
        CHECK(CMD_STR(admin, got, "GET", "rel-twice") == 1);
        CHECK_EQ_STR(got, rlk_lock_token(lb));
        CHECK_EQ_INT(rlk_lock_release(lb), RLK_OK);
    }
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

static void test_release_reply_lost(void)
{
    struct proxy px = {0};
    fake_server *fs;
    rlk_client *a = NULL;
    rlk_lock *l, *warm, *r1, *r2;
    rlk_lock_options o;
    char url[64], field[96], got[16];
    uint64_t us_before, us_after;
    uint64_t gen;
    int rc;
    fs = proxy_start(&px, url, sizeof url);
    if (!fs) return;
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a) goto out;
    CMD(admin, "DEL", "lost-rel", "lost-acq", "lost-re");

    /* The scripts are loaded first, so the cut reply is the script's
     * result and not a NOSCRIPT. */
    warm = ACQ(a, "lost-warm", 10000);
    if (warm) CHECK_EQ_INT(rlk_lock_release(warm), RLK_OK);
    warm = ACQ_R(a, "lost-warm", 10000);
    if (warm) CHECK_EQ_INT(rlk_lock_release(warm), RLK_OK);

    l = ACQ(a, "lost-rel", 10000);
    if (!l) goto out;
    gen = rlk_client_generation(a);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    rc = rlk_lock_release(l);
    CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(a));
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 1);
    CHECK_EQ_U64(rlk_client_generation(a), gen + 1); /* sent again */
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "lost-rel"), 0);

    /* A simple lock's acquisition whose reply was lost is sent again on a
     * new connection, as the waiting script, which finds that the lost
     * try took the lock: acquired (one acquisition, not two), with a
     * fence from the server's clock during the call, and the lock holding
     * this token, valid for about the TTL from the call's start. */
    us_before = (uint64_t)server_time_ms() * 1000;
    opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
    gen = rlk_client_generation(a);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    l = NULL;
    rc = rlk_lock_acquire(a, "lost-acq", &o, &l);
    CHECK_MSG(rc == RLK_OK, "acquire: %d %s", rc, rlk_client_errmsg(a));
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 2);
    CHECK_EQ_U64(rlk_client_generation(a), gen + 1); /* sent again */
    us_after = ((uint64_t)server_time_ms() + 1) * 1000;
    if (l) {
        char tok[256];
        CHECK_MSG(rlk_lock_fence(l) >= us_before && rlk_lock_fence(l) <= us_after,
                  "fence %llu, not the server's clock during the call (%llu..%llu)",
                  (unsigned long long)rlk_lock_fence(l), (unsigned long long)us_before,
                  (unsigned long long)us_after);
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
    us_before = (uint64_t)server_time_ms() * 1000;
    opts(&o, 10000, 0, RLK_LOCK_REENTRANT, 0, NULL);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    l = NULL;
    rc = rlk_lock_acquire(a, "lost-acq", &o, &l);
    CHECK_MSG(rc == RLK_OK, "acquire: %d %s", rc, rlk_client_errmsg(a));
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 3);
    us_after = ((uint64_t)server_time_ms() + 1) * 1000;
    if (l) {
        CHECK(rlk_lock_fence(l) >= us_before && rlk_lock_fence(l) <= us_after);
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
    char tok[256], got[256];
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
    /* Its validity over: lost, nothing sent. */
    CHECK_EQ_INT(rlk_lock_is_lost(l), 1);
    CHECK_EQ_INT(rlk_lock_remaining_ms(l), 0);
    CHECK_EQ_INT(rlk_lock_extend(l, 1000, RLK_EXTEND_ADD), RLK_LOCK_LOST);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "ext"), 0);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_LOCK_LOST);

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
        CHECK_EQ_INT(rlk_lock_release(l2), RLK_LOCK_LOST); /* found lost by the extend */
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
/* Reentrant locks                                                     */

struct busy_try {
    rlk_client *cl;
    const char *name;
    int rc;
    long tid;
    char token[256];
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
    char want[256], got[256], field[96];
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
    /* The holder's field and its facts (rlk:holder). */
    CHECK_EQ_INT(CMD_INT(admin, "HLEN", "re"), 2);

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
    char want[256];
    client_cfg(&cfg, srv_url);
    cfg.client_id = "my-service-7";
    a = CLIENT_WITH(&cfg);
    if (!a) return;
    l = ACQ_R(a, "re-id", 10000);
    if (l) {
        /* "ID:UUID:THREAD": the id, the client's random part, the thread. */
        const char *f = rlk_lock_token(l);
        snprintf(want, sizeof want, ":%ld", gettid_());
        CHECK_MSG(strlen(f) == strlen("my-service-7:") + 36 + strlen(want) &&
                      strncmp(f, "my-service-7:", 13) == 0 && f[13 + 8] == '-' &&
                      strcmp(f + 13 + 36, want) == 0,
                  "field \"%s\"", f);
        CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", "re-id", f), 1);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
    rlk_client_free(a);
}

/* Two clients configured with the same client_id are two holders: the
 * id is only a readable prefix of the hash field, whose random part is
 * the client's own.  On one thread of one process the fields were the
 * same ("svc:TID"), and the second client counted a hold of the first's
 * lock instead of finding it busy. */
static void test_reentrant_same_client_id(void)
{
    rlk_client_config cfg;
    rlk_client *a, *b = NULL;
    rlk_lock *la = NULL, *lb = NULL;
    rlk_lock_options o;
    char tid[32], got[32];
    int rc;
    client_cfg(&cfg, srv_url);
    cfg.client_id = "svc";
    a = CLIENT_WITH(&cfg);
    b = CLIENT_WITH(&cfg);
    if (!a || !b) goto out;
    CMD(admin, "DEL", "re-same-id");
    la = ACQ_R(a, "re-same-id", 10000);
    if (!la) goto out;
    opts(&o, 10000, 0, RLK_LOCK_REENTRANT, 0, NULL);
    rc = rlk_lock_acquire(b, "re-same-id", &o, &lb);
    CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
    /* The holder's field and its facts (rlk:holder). */
    CHECK_EQ_INT(CMD_INT(admin, "HLEN", "re-same-id"), 2);
    CHECK(CMD_STR(admin, got, "HGET", "re-same-id", rlk_lock_token(la)) == 1);
    CHECK_EQ_STR(got, "1");
    /* The id still reads first, the thread last (Redisson's "ID:THREAD"). */
    snprintf(tid, sizeof tid, ":%ld", gettid_());
    CHECK_MSG(strncmp(rlk_lock_token(la), "svc:", 4) == 0, "field \"%s\"", rlk_lock_token(la));
    CHECK_MSG(strlen(rlk_lock_token(la)) > strlen(tid) &&
                  strcmp(rlk_lock_token(la) + strlen(rlk_lock_token(la)) - strlen(tid), tid) == 0,
              "field \"%s\" does not end in \"%s\"", rlk_lock_token(la), tid);
    if (lb) { /* a hold counted on a's lock (the bug) */
        rlk_lock_release(lb);
        lb = NULL;
    }
out:
    if (la) CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* The child's side of test_reentrant_client_id_pid_namespaces: as PID 1
 * of a PID namespace of its own, client_id "svc", one try at the
 * reentrant lock; reports "PID STATUS HOLDS FIELD", then holds it until
 * its standard input closes. */
static int child_reentrant_main(char **argv)
{
    rlk_client_config cfg;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    char buf[16];
    client_cfg(&cfg, argv[0]);
    cfg.client_id = "svc";
    rlk_client *cl = rlk_client_new(&cfg);
    if (!cl) return 2;
    opts(&o, 20000, 0, RLK_LOCK_REENTRANT, 0, NULL);
    int rc = rlk_lock_acquire(cl, argv[1], &o, &l);
    printf("%ld %d %lld %s\n", (long)getpid(), rc, l ? (long long)rlk_lock_holds(l) : 0LL,
           l ? rlk_lock_token(l) : "-");
    fflush(stdout);
    while (read(0, buf, sizeof buf) > 0) {
    }
    if (l) rlk_lock_release(l);
    rlk_client_free(cl);
    return 0;
}

static const char *self_path; /* this program, for the children */

struct ns_child {
    pid_t pid;
    int in, out;   /* its standard input (closed: it ends) and output */
    long pid_inside;
    int rc;
    long long holds;
    char field[160];
};

/* Starts this program as PID 1 of a new PID namespace (unshare(1), as
 * root) and reads its report, within ms.  1 when it reported. */
static int ns_child_start(struct ns_child *c, const char *name, int64_t ms)
{
    int in[2], out[2];
    char line[256];
    size_t len = 0;
    memset(c, 0, sizeof *c);
    c->pid = -1;
    c->in = c->out = -1;
    if (!CHECK(pipe(in) == 0)) return 0;
    if (!CHECK(pipe(out) == 0)) {
        close(in[0]);
        close(in[1]);
        return 0;
    }
    c->pid = fork();
    if (c->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        /* Runs natively even under valgrind: only this process is checked. */
        execlp("unshare", "unshare", "--pid", "--fork", "--mount-proc", self_path,
               "--child-reentrant", srv_url, name, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->in = in[1];
    c->out = out[0];
    if (!CHECK(c->pid > 0)) return 0;
    int64_t deadline = ts_now_ms() + ms;
    while (!memchr(line, '\n', len)) {
        struct pollfd p = {c->out, POLLIN, 0};
        int64_t left = deadline - ts_now_ms();
        ssize_t n;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0) break;
        n = read(c->out, line + len, sizeof line - 1 - len);
        if (n <= 0) break;
        len += (size_t)n;
    }
    line[len] = '\0';
    return CHECK_MSG(sscanf(line, "%ld %d %lld %159s", &c->pid_inside, &c->rc, &c->holds,
                            c->field) == 4,
                     "no report from the child in a PID namespace (unshare needs root): \"%s\"",
                     line);
}

static void ns_child_end(struct ns_child *c)
{
    int st;
    if (c->in >= 0) close(c->in);
    if (c->out >= 0) close(c->out);
    if (c->pid > 0) {
        CHECK(waitpid(c->pid, &st, 0) == c->pid);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
    }
}

/* Two containers, each running its service as PID 1 with the same
 * configured client_id: the same id and the same thread id.  The
 * second must find the first's reentrant lock busy, not count a hold
 * of it. */
static void test_reentrant_client_id_pid_namespaces(void)
{
    struct ns_child c1, c2;
    char got[32];
    CMD(admin, "DEL", "re-ns");
    int ok1 = ns_child_start(&c1, "re-ns", LONG_MS);
    int ok2 = ok1 && ns_child_start(&c2, "re-ns", LONG_MS);
    if (ok1) {
        CHECK_EQ_INT(c1.pid_inside, 1);
        CHECK_EQ_INT(c1.rc, RLK_OK);
        CHECK_EQ_INT(c1.holds, 1);
    }
    if (ok2) {
        CHECK_EQ_INT(c2.pid_inside, 1);
        CHECK_MSG(c2.rc == RLK_LOCK_BUSY, "second holder: status %d, holds %lld, field %s (first: %s)",
                  c2.rc, c2.holds, c2.field, c1.field);
        /* The holder's field and its facts (rlk:holder). */
        CHECK_EQ_INT(CMD_INT(admin, "HLEN", "re-ns"), 2);
        CHECK(CMD_STR(admin, got, "HGET", "re-ns", c1.field) == 1);
        CHECK_EQ_STR(got, "1");
    }
    if (ok1 && ok2) ns_child_end(&c2);
    ns_child_end(&c1);
    CHECK(wait_exists(admin, "re-ns", 0, LONG_MS));
}

/* A TTL within the drift allowance leaves the lock no validity: every
 * try would take it, find its validity over already, give it back and
 * try again (tens of thousands of calls a second).  It is refused before
 * anything is sent, by the blocking client and the session alike. */
static void test_ttl_without_validity(void)
{
    rlk_client_config cfg;
    rlk_client *a;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    long long calls;
    client_cfg(&cfg, srv_url);
    a = CLIENT_WITH(&cfg);
    if (!a) return;
    CMD(admin, "DEL", "no-validity");
    CHECK_EQ_INT(rlk_plan_valid_ms(NULL, 1), -1);
    reset_stats(admin);
    opts(&o, 1, 1000, RLK_LOCK_SIMPLE, 0, NULL);
    CHECK_EQ_INT(rlk_lock_acquire(a, "no-validity", &o, &l), RLK_ERR_INVALID);
    CHECK(l == NULL);
    CHECK_MSG(ts_contains(rlk_client_errmsg(a), "TTL 1 ms"), "message \"%s\"",
              rlk_client_errmsg(a));
    calls = stat_calls(admin, "set+eval+" SCRIPT_CALLS);
    CHECK_MSG(calls == 0, "%lld lock calls on the server", calls);
    /* The bound is the client's own drift allowance: 1% and drift_ms. */
    opts(&o, 2, 0, RLK_LOCK_REENTRANT, 0, NULL);
    CHECK_EQ_INT(rlk_lock_acquire(a, "no-validity", &o, &l), RLK_ERR_INVALID);
    rlk_client_free(a);
    cfg.drift_ms = 50;
    a = CLIENT_WITH(&cfg);
    if (!a) return;
    opts(&o, 50, 0, RLK_LOCK_SIMPLE, 0, NULL);
    CHECK_EQ_INT(rlk_lock_acquire(a, "no-validity", &o, &l), RLK_ERR_INVALID);
    opts(&o, 100, 0, RLK_LOCK_SIMPLE, 0, NULL);
    CHECK_EQ_INT(rlk_lock_acquire(a, "no-validity", &o, &l), RLK_OK);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    calls = stat_calls(admin, "set");
    CHECK_MSG(calls == 1, "%lld SET calls", calls);
    rlk_client_free(a);

    /* The session refuses it the same way (no event). */
    rlk_session_config sc;
    rlk_session_config_init(&sc);
    rlk_session *s = rlk_session_new(&sc);
    if (!CHECK(s != NULL)) return;
    opts(&o, 1, 0, RLK_LOCK_SIMPLE, 0, NULL);
    CHECK(rlk_session_acquire(s, "no-validity", &o, NULL, 0) == NULL);
    CHECK_MSG(ts_contains(rlk_session_errmsg(s), "TTL 1 ms"), "message \"%s\"",
              rlk_session_errmsg(s));
    rlk_session_free(s);
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
    CMD(admin, "DEL", "mx-counter"); /* the test's, not a lock's: no key without a TTL is left */
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
    char got[256];
    if (!a || !b) goto out;
    CMD(admin, "DEL", "stopped");
    la = ACQ(a, "stopped", 300);
    if (!la) goto out;
    CHECK(wait_exists(admin, "stopped", 0, 300 + LONG_MS));
    CHECK_EQ_INT(rlk_lock_remaining_ms(la), 0);
    lb = ACQ(b, "stopped", 10000);
    if (lb) {
        CHECK(rlk_lock_fence(lb) > rlk_lock_fence(la));
        CHECK_EQ_INT(rlk_lock_release(la), RLK_LOCK_LOST);
        CHECK_MSG(ts_contains(rlk_client_errmsg(a), "someone else"), "message \"%s\"",
                  rlk_client_errmsg(a));
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
/* Status                                                              */

static void test_status(void)
{
    rlk_client *a = CLIENT();
    rlk_lock_status st;
    rlk_lock *l, *r1, *r2;
    if (!a) return;
    CMD(admin, "DEL", "st-free", "st-s", "st-r", "st-nottl");
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
        CHECK_EQ_U64(st.fence, 0); /* fences are not stored */
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        CHECK_EQ_INT(rlk_lock_get_status(a, "st-s", &st), RLK_OK);
        CHECK_EQ_INT(st.held, 0);
    }

    r1 = ACQ_R(a, "st-r", 10000);
    r2 = ACQ_R(a, "st-r", 10000);
    if (r1 && r2) {
        CHECK_EQ_INT(rlk_lock_get_status(a, "st-r", &st), RLK_OK);
        CHECK_EQ_INT(st.held, 1);
        CHECK_EQ_INT(st.kind, RLK_LOCK_REENTRANT);
        CHECK_EQ_INT(st.holds, 2);
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

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    if (argc == 4 && strcmp(argv[1], "--child-reentrant") == 0)
        return child_reentrant_main(argv + 2);
    self_path = strchr(argv[0], '/') ? argv[0] : "/proc/self/exe"; /* found through PATH */
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;

    RUN(test_basic_acquire_release);
    RUN(test_default_options);
    RUN(test_acquire_errors);
    RUN(test_config_strings_copied);
    RUN(test_release_not_held);
    RUN(test_release_not_owner);
    RUN(test_release_twice_by_token);
    RUN(test_release_reply_lost);
    RUN(test_extend);
    RUN(test_validity);
    RUN(test_plan);
    RUN(test_ttl_without_validity);
    RUN(test_reentrant);
    RUN(test_reentrant_client_id);
    RUN(test_reentrant_same_client_id);
    RUN(test_reentrant_client_id_pid_namespaces);
    RUN(test_mutual_exclusion);
    RUN(test_stopped_holder);
    RUN(test_status);

    return locktest_finish(t0);
}
