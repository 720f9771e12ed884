/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Nothing left behind: every key the library writes has a TTL, and once
 * the locks are released and those TTLs pass, the server holds no key
 * of ours.  A service that locks one name per order or per user must not
 * leak a key per name.  Also: places of waiters that died do not pile up
 * in a line while the holders use other clients (no release of ours
 * prunes it then).
 */
#include "config.h"

#define TESTLIB_MAIN
#include "testlib.h"

#include "locktest.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOWX(ms) ((int64_t)(slow ? (ms) * 3 : (ms)))

static long long dbsize(void) { return CMD_INT(admin, "DBSIZE"); }

/* Every key of the server has a TTL: 1, else 0 (a test failure naming
 * the first key without one). */
static int all_keys_expire(const char *what)
{
    char cursor[32] = "0";
    long long seen = 0;
    do {
        rlk_resp_value *v = CMD(admin, "SCAN", cursor, "COUNT", "1000");
        const rlk_resp_value *c = v ? rlk_resp_value_at(v, 0) : NULL,
                             *keys = v ? rlk_resp_value_at(v, 1) : NULL;
        if (!CHECK(c && c->str && keys)) return 0;
        snprintf(cursor, sizeof cursor, "%.*s", (int)c->len, c->str);
        /* Copied out: the next command reuses the reply's memory. */
        size_t n = 0;
        for (const rlk_resp_value *k = keys->child; k; k = k->next) n++;
        char(*names)[128] = calloc(n ? n : 1, sizeof *names);
        if (!CHECK(names)) return 0;
        size_t i = 0;
        for (const rlk_resp_value *k = keys->child; k; k = k->next, i++)
            snprintf(names[i], sizeof names[i], "%.*s", (int)k->len, k->str);
        for (i = 0; i < n; i++) {
            long long pttl = CMD_INT(admin, "PTTL", names[i]);
            seen++;
            if (pttl == -1) {
                CHECK_MSG(0, "%s: key '%s' has no TTL", what, names[i]);
                free(names);
                return 0;
            }
        }
        free(names);
    } while (strcmp(cursor, "0") != 0);
    printf("  %s: %lld keys, all with a TTL\n", what, seen);
    return 1;
}

/* Waits until the server holds `want` keys again; 1 when it did. */
static int wait_dbsize(long long want, int64_t ms, const char *what)
{
    int64_t start = ts_now_ms(), until = start + ms;
    long long n;
    while ((n = dbsize()) != want && ts_now_ms() < until) ts_pause_ms(50);
    printf("  %s: %lld keys after %lld ms (%lld at the start)\n", what, n,
           (long long)(ts_now_ms() - start), want);
    return CHECK_MSG(n == want, "%s: %lld keys left, %lld at the start", what, n, want);
}

/* 10,000 distinct names, acquired and released: simple locks, reentrant
 * ones (taken twice, released twice: a tombstone per release), and some
 * left to run out by their TTL (forgotten). */
static void test_ten_thousand_names(void)
{
    rlk_client_config cfg;
    client_cfg(&cfg, srv_url);
    /* Tombstones live twice the command timeout. */
    cfg.conn.command_timeout_ms = 1000;
    rlk_client *cl = CLIENT_WITH(&cfg);
    if (!cl) return;
    long long start = dbsize();
    int failures = 0;
    for (int i = 0; i < 10000 && failures < 5; i++) {
        char name[32];
        snprintf(name, sizeof name, "gc:order:%05d", i);
        rlk_lock_options o;
        rlk_lock *l = NULL, *l2 = NULL;
        opts(&o, 2000, 0, i % 10 == 0 ? RLK_LOCK_REENTRANT : RLK_LOCK_SIMPLE, 0, NULL);
        if (rlk_lock_acquire(cl, name, &o, &l) != RLK_OK) {
            CHECK_MSG(0, "acquire %s: %s", name, rlk_client_errmsg(cl));
            failures++;
            continue;
        }
        if (i % 10 == 0 && rlk_lock_acquire(cl, name, &o, &l2) != RLK_OK) {
            CHECK_MSG(0, "acquire %s again: %s", name, rlk_client_errmsg(cl));
            failures++;
        }
        if (l2 && rlk_lock_release(l2) != RLK_OK) failures++;
        if (i % 7 == 3) {
            rlk_lock_forget(l); /* runs out by its TTL */
        } else if (rlk_lock_release(l) != RLK_OK) {
            CHECK_MSG(0, "release %s: %s", name, rlk_client_errmsg(cl));
            failures++;
        }
    }
    CHECK_EQ_INT(failures, 0);
    all_keys_expire("after 10,000 names");
    wait_dbsize(start, SLOWX(20000), "10,000 names");
    rlk_client_free(cl);
}

/* Names with a holder and a waiter each: the lock is handed over, so a
 * line (queue and waiters) and tombstones were written.  All of it has a
 * TTL and goes. */
static void test_contended_names(void)
{
    rlk_client_config cfg;
    client_cfg(&cfg, srv_url);
    cfg.conn.command_timeout_ms = 1000;
    rlk_client *a = CLIENT_WITH(&cfg), *b = CLIENT_WITH(&cfg);
    long long start = dbsize();
    if (!a || !b) goto out;
    for (int i = 0; i < 20; i++) {
        char name[32];
        struct waiter w;
        snprintf(name, sizeof name, "gc:busy:%02d", i);
        rlk_lock *l = ACQ(a, name, 5000);
        if (!l) break;
        if (!waiter_start(&w, b, name, 5000, SLOWX(10000),
                          i % 2 ? RLK_LOCK_REENTRANT : RLK_LOCK_SIMPLE)) {
            rlk_lock_release(l);
            break;
        }
        int in_line = wait_waiters(name, 1, LONG_MS);
        CHECK_MSG(in_line, "%s: the waiter is not in line", name);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        pthread_join(w.th, NULL);
        CHECK_MSG(w.rc == RLK_OK && w.l, "%s: waiter %d %s", name, w.rc, w.err);
        if (w.l) CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
        if (!in_line) break;
    }
    CHECK(dbsize() > start); /* lines and tombstones, for now */
    all_keys_expire("after handoffs");
    wait_dbsize(start, SLOWX(20000), "handoffs");
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

/* A line whose holders use another client (a plain SET NX and DEL): the
 * places of 100 waiters that died are pruned by the live waiter's
 * re-checks, so the line does not grow for ever. */
static void test_dead_waiters_pruned(void)
{
    const char *name = "gc:dead";
    char queue[64], waiters[64], tok[32], entry[128];
    HO_KEY(queue, name, "queue");
    HO_KEY(waiters, name, "waiters");
    CMD(admin, "DEL", name, queue, waiters);
    CMD(admin, "SET", name, "someone-else", "PX", "60000");
    long long now = server_time_ms();
    /* What a waiter that died leaves: its place, lapsed. */
    for (int i = 0; i < 100; i++) {
        snprintf(tok, sizeof tok, "dead-%03d", i);
        snprintf(entry, sizeof entry, "%lld 30000 2000 s resplock:handoff:gone", now - 1000);
        CMD(admin, "HSET", waiters, tok, entry);
        CMD(admin, "RPUSH", queue, tok);
    }
    CMD(admin, "PEXPIRE", queue, "60000");
    CMD(admin, "PEXPIRE", waiters, "60000");
    rlk_client *cl = CLIENT_EX(srv_url, 0, 20, NULL);
    struct waiter w;
    if (!cl || !waiter_start(&w, cl, name, 30000, SLOWX(30000), RLK_LOCK_SIMPLE)) goto out;
    int64_t until = ts_now_ms() + SLOWX(LONG_MS);
    long long left;
    while ((left = waiter_entries(waiters)) != 1 && ts_now_ms() < until) ts_pause_ms(20);
    CHECK_MSG(left == 1, "places in line: %lld (100 dead and one live waiter at the start)", left);
    CHECK_EQ_INT((int)CMD_INT(admin, "LLEN", queue), 1);
    CMD(admin, "DEL", name); /* the other client's release */
    pthread_join(w.th, NULL);
    CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err);
    if (w.l) CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    CHECK_EQ_INT((int)waiter_entries(waiters), 0);
out:
    rlk_client_free(cl);
    CMD(admin, "DEL", name, queue, waiters);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;
    RUN(test_ten_thousand_names);
    RUN(test_contended_names);
    RUN(test_dead_waiters_pruned);
    return locktest_finish(t0);
}
