/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The semaphore with expirable permits through the public API
 * (rlk_sem_*), against a real server and then a real 3-primary Cluster:
 * k permits at once, busy when full, given back, a fence one more each
 * acquire, holders' facts in the status; waiters served in the order
 * they joined, a waiter for 2 not passed by waiters for 1 behind it; a
 * wait woken by a release far sooner than its recheck slice; the size
 * changed while permits are held; a holder killed with kill -9 whose
 * permit comes back after its TTL and not before; a waiter killed in
 * line whose place lapses; a holder that stopped
 * renewing told it lost and its permit taken by another; permits that
 * survive a kill -9 and restart of a server with AOF (on the Cluster,
 * of the primary that holds them); and the watchdog keeping
 * permits past their TTL; on the Cluster, a holder and a waiter across
 * the move of their slot to another primary; Redlock refused.
 *
 * Waits are conditions with deadlines (a status read, a thread's done
 * flag), never a bare sleep; timings are bounds (MARGIN wider under
 * valgrind).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "cluster.h"
#include "locktest.h"
#include "resplock.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char url[128];          /* the server (or the cluster's seed) the tests use */
static const char *where = ""; /* "", or "cluster-": names differ per run */
static const char *self_path;

static rlk_sem_options sopts(int64_t permits, int64_t k, int64_t ttl, int64_t wait)
{
    rlk_sem_options o;
    rlk_sem_options_init(&o);
    o.permits = permits;
    o.k = k;
    o.ttl_ms = ttl;
    o.wait_ms = wait;
    return o;
}

static void sem_name(char *out, size_t n, const char *what)
{
    snprintf(out, n, "%s%s-%ld", where, what, (long)getpid());
}

static int sprotocol; /* the protocol of the clients SCLIENT makes (0: RESP3) */

static rlk_client *sclient(int64_t recheck_ms, int line)
{
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    cfg.recheck_ms = recheck_ms;
    cfg.conn.protocol = sprotocol;
    return client_with(&cfg, line);
}
#define SCLIENT(recheck) sclient(recheck, __LINE__)

static rlk_sem *take(rlk_client *cl, const char *name, int64_t permits, int64_t k, int64_t ttl,
                     int line)
{
    rlk_sem_options o = sopts(permits, k, ttl, 0);
    rlk_sem *s = NULL;
    int rc = rlk_sem_acquire(cl, name, &o, &s);
    tl_ok(rc == RLK_OK && s, __FILE__, line, "acquire %s k=%lld of %lld: %d %s", name,
          (long long)k, (long long)permits, rc, rlk_client_errmsg(cl));
    return rc == RLK_OK ? s : NULL;
}
#define TAKE(cl, name, permits, k, ttl) take(cl, name, permits, k, ttl, __LINE__)

static int try_take(rlk_client *cl, const char *name, int64_t permits, int64_t k)
{
    rlk_sem_options o = sopts(permits, k, 30000, 0);
    rlk_sem *s = NULL;
    int rc = rlk_sem_acquire(cl, name, &o, &s);
    if (s) rlk_sem_release(s);
    return rc;
}

/* The status, or a test failure (st zeroed). */
static int status(rlk_client *cl, const char *name, rlk_sem_status *st, int line)
{
    int rc = rlk_sem_get_status(cl, name, RLK_SEM_LAYOUT_RESPLOCK, 0, st);
    return tl_ok(rc == RLK_OK, __FILE__, line, "status %s: %d %s", name, rc,
                 rlk_client_errmsg(cl));
}
#define STATUS(cl, name, st) status(cl, name, st, __LINE__)

/* Waits until name has want waiters in line, within ms. */
static int wait_line(rlk_client *cl, const char *name, int64_t want, int64_t ms)
{
    int64_t until = ts_now_ms() + ms;
    for (;;) {
        rlk_sem_status st;
        int rc = rlk_sem_get_status(cl, name, RLK_SEM_LAYOUT_RESPLOCK, 0, &st);
        int64_t w = st.waiters;
        rlk_sem_status_free(&st);
        if (rc == RLK_OK && w == want) return 1;
        if (ts_now_ms() >= until) return 0;
        ts_pause_ms(5);
    }
}

/* ------------------------------------------------------------------ */
/* A thread that waits for permits, each on a client of its own         */

static int rank_next;

struct sw {
    rlk_client *cl;
    char name[96];
    rlk_sem_options o;
    int hold_ms;         /* held this long, then given back (-1: kept) */
    int rc, rank;
    int64_t done_at;
    uint64_t fence;
    rlk_sem *s;
    int done;            /* atomic, last */
    pthread_t th;
};

static void *sw_main(void *arg)
{
    struct sw *w = arg;
    w->rc = rlk_sem_acquire(w->cl, w->name, &w->o, &w->s);
    w->done_at = ts_now_ms();
    w->rank = __atomic_fetch_add(&rank_next, 1, __ATOMIC_SEQ_CST);
    if (w->s) w->fence = rlk_sem_fence(w->s);
    if (w->rc == RLK_OK && w->hold_ms >= 0) {
        if (w->hold_ms > 0) ts_pause_ms(w->hold_ms); /* the holder's work */
        rlk_sem_release(w->s);
        w->s = NULL;
    }
    __atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static int sw_done(struct sw *w) { return __atomic_load_n(&w->done, __ATOMIC_SEQ_CST); }

static int sw_start(struct sw *w, const char *name, int64_t permits, int64_t k, int64_t wait,
                    int hold_ms, int64_t recheck)
{
    memset(w, 0, sizeof *w);
    w->cl = SCLIENT(recheck);
    if (!w->cl) return -1;
    snprintf(w->name, sizeof w->name, "%s", name);
    w->o = sopts(permits, k, 30000, wait);
    w->hold_ms = hold_ms;
    if (pthread_create(&w->th, NULL, sw_main, w) != 0) {
        rlk_client_free(w->cl);
        w->cl = NULL;
        return -1;
    }
    return 0;
}

/* Starts w (as sw_start) and waits until name has line waiters (5 s at
 * most): 1 when it has; *started says whether w must be ended. */
static int sw_join(struct sw *w, int *started, rlk_client *h, const char *name, int64_t permits,
                   int64_t k, int hold_ms, int64_t recheck, int64_t line)
{
    *started = CHECK(sw_start(w, name, permits, k, 20000, hold_ms, recheck) == 0);
    return *started && CHECK_MSG(wait_line(h, name, line, 5000), "%lld not in line",
                                 (long long)line);
}

/* Waits until w is done, within ms: 1 when it is. */
static int sw_wait(struct sw *w, int64_t ms)
{
    int64_t until = ts_now_ms() + ms;
    while (!sw_done(w) && ts_now_ms() < until) ts_pause_ms(2);
    return sw_done(w);
}

static void sw_end(struct sw *w)
{
    if (!w->cl) return;
    pthread_join(w->th, NULL);
    if (w->s) rlk_sem_release(w->s);
    rlk_client_free(w->cl);
    w->cl = NULL;
}

/* ------------------------------------------------------------------ */
/* The tests                                                            */

static void test_defaults_and_refusals(void)
{
    rlk_sem_options o;
    memset(&o, 0x5a, sizeof o);
    rlk_sem_options_init(&o);
    CHECK_EQ_INT(o.permits, 0);
    CHECK_EQ_INT(o.k, 1);
    CHECK_EQ_INT(o.ttl_ms, 0);
    CHECK_EQ_INT(o.wait_ms, 0);
    CHECK_EQ_INT(o.watchdog, 0);
    CHECK_EQ_INT(o.layout, RLK_SEM_LAYOUT_RESPLOCK);
    rlk_client *cl = SCLIENT(0);
    if (!cl) return;
    static const struct {
        int64_t permits, k, ttl;
        int watchdog, layout;
        const char *name, *says;
    } bad[] = {
        {0, 1, 1000, 0, 0, "x", "permits"},
        {3, 0, 1000, 0, 0, "x", "k must"},
        {3, 4, 1000, 0, 0, "x", "k must"},
        {3, 1, -5, 0, 0, "x", "TTL"},
        {3, 1, 1000, 0, 0, "", "empty"},
        {3, 1, 1000, 0, 0, "}{x", "begins with"},
        {3, 1, 1000, 0, 7, "x", "layout"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rlk_sem_options b = sopts(bad[i].permits, bad[i].k, bad[i].ttl, 0);
        b.layout = (rlk_sem_layout)bad[i].layout;
        rlk_sem *s = (rlk_sem *)1;
        CHECK_EQ_INT(rlk_sem_acquire(cl, bad[i].name, &b, &s), RLK_ERR_INVALID);
        CHECK(s == NULL);
        CHECK_MSG(strstr(rlk_client_errmsg(cl), bad[i].says) != NULL, "case %zu: %s", i,
                  rlk_client_errmsg(cl));
    }
    /* A watchdog with nothing to renew it: a client not in tick mode. */
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *plain = rlk_client_new(&cfg);
    if (CHECK(plain != NULL)) {
        rlk_sem_options w = sopts(2, 1, 1000, 0);
        w.watchdog = 1;
        rlk_sem *s = NULL;
        CHECK_EQ_INT(rlk_sem_acquire(plain, "x", &w, &s), RLK_ERR_INVALID);
        CHECK(strstr(rlk_client_errmsg(plain), "watchdog") != NULL);
        rlk_client_free(plain);
    }
    /* redis-semaphore's layout: a permit's TTL is its lockTimeout. */
    rlk_sem_options r = sopts(3, 1, 1000, 0);
    r.layout = RLK_SEM_LAYOUT_REDIS_SEMAPHORE;
    r.lock_timeout_ms = 2000;
    rlk_sem *s = (rlk_sem *)1;
    CHECK_EQ_INT(rlk_sem_acquire(cl, "x", &r, &s), RLK_ERR_INVALID);
    CHECK(s == NULL && strstr(rlk_client_errmsg(cl), "TTL is the lockTimeout") != NULL);
    r.lock_timeout_ms = -1;
    CHECK_EQ_INT(rlk_sem_acquire(cl, "x", &r, &s), RLK_ERR_INVALID);
    CHECK(strstr(rlk_client_errmsg(cl), "negative lockTimeout") != NULL);
    rlk_sem_status st;
    CHECK_EQ_INT(rlk_sem_get_status(cl, "x", RLK_SEM_LAYOUT_REDIS_SEMAPHORE, -1, &st),
                 RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_sem_get_status(cl, "x", (rlk_sem_layout)7, 0, &st), RLK_ERR_INVALID);
    rlk_client_free(cl);
}

static rlk_sem_options rs_opts(int64_t permits, int64_t k, int64_t lock_timeout)
{
    rlk_sem_options o = sopts(permits, k, 0, 0);
    o.layout = RLK_SEM_LAYOUT_REDIS_SEMAPHORE;
    o.lock_timeout_ms = lock_timeout;
    return o;
}

static int rs_status(rlk_client *cl, const char *name, rlk_sem_status *st)
{
    return rlk_sem_get_status(cl, name, RLK_SEM_LAYOUT_REDIS_SEMAPHORE, 5000, st);
}

/* redis-semaphore's layout through the API (tests/cli-sem-rs.sh has it
 * against redis-semaphore itself): k permits as k members, no fence, the
 * TTL its lockTimeout, status by holder with its age, an extend no
 * longer than the lockTimeout, a release that gives them back; a name
 * may begin with '}' there (its key has no hash tag to share). */
static void test_redis_semaphore_layout(void)
{
    char name[96];
    sem_name(name, sizeof name, "}rs");
    rlk_client *a = SCLIENT(0), *b = SCLIENT(0);
    rlk_sem *s = NULL, *t = NULL;
    if (!a || !b) goto out;
    rlk_sem_options o = rs_opts(3, 2, 5000);
    if (!CHECK(rlk_sem_acquire(a, name, &o, &s) == RLK_OK)) goto out;
    CHECK_EQ_U64(rlk_sem_fence(s), 0);
    CHECK_EQ_INT(rlk_sem_ttl_ms(s), 5000);
    CHECK_EQ_INT(rlk_sem_k(s), 2);
    rlk_sem_options o2 = rs_opts(3, 2, 5000);
    CHECK_EQ_INT(rlk_sem_acquire(b, name, &o2, &t), RLK_LOCK_BUSY);
    /* The same name in resplock's layout is another semaphore. */
    CHECK_EQ_INT(try_take(b, name + 1, 1, 1), RLK_OK);
    rlk_sem_options o1 = rs_opts(3, 1, 5000);
    if (CHECK(rlk_sem_acquire(b, name, &o1, &t) == RLK_OK)) {
        rlk_sem *u = NULL;
        CHECK_EQ_INT(rlk_sem_acquire(a, name, &o1, &u), RLK_LOCK_BUSY);
        CHECK_EQ_INT(rlk_sem_release(t), RLK_OK);
    }
    t = NULL;
    rlk_sem_status st;
    if (CHECK(rs_status(b, name, &st) == RLK_OK)) {
        CHECK_EQ_INT(st.exists, 1);
        CHECK_EQ_INT(st.permits, 0);
        CHECK_EQ_INT(st.used, 2);
        if (CHECK(st.nholders == 1)) {
            CHECK_EQ_STR(st.holder[0].token, rlk_sem_token(s));
            CHECK_EQ_INT(st.holder[0].k, 2);
            CHECK(st.holder[0].ttl_ms > 3000 && st.holder[0].ttl_ms <= 5000);
            CHECK(st.holder[0].age_ms >= 0 && st.holder[0].age_ms < 2000);
            CHECK_EQ_U64(st.holder[0].fence, 0);
        }
        rlk_sem_status_free(&st);
    }
    /* Beyond the lockTimeout: refused; within it, the permits expire so. */
    CHECK_EQ_INT(rlk_sem_extend(s, 6000), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_sem_extend(s, 1000), RLK_OK);
    if (CHECK(rs_status(b, name, &st) == RLK_OK)) {
        if (CHECK(st.nholders == 1)) CHECK(st.holder[0].ttl_ms <= 1000);
        rlk_sem_status_free(&st);
    }
    CHECK_EQ_INT(rlk_sem_release(s), RLK_OK);
    s = NULL;
    if (CHECK(rs_status(b, name, &st) == RLK_OK)) {
        CHECK_EQ_INT(st.exists, 0);
        rlk_sem_status_free(&st);
    }
    CHECK_EQ_INT(rlk_sem_acquire(b, name, &o2, &t), RLK_OK);
out:
    if (s) rlk_sem_release(s);
    if (t) rlk_sem_release(t);
    rlk_client_free(a);
    rlk_client_free(b);
}

static void test_permits_busy_release_fence(void)
{
    char name[96];
    sem_name(name, sizeof name, "basic");
    rlk_client *a = SCLIENT(0), *b = SCLIENT(0);
    if (!a || !b) goto out;
    rlk_sem_options o = sopts(3, 2, 30000, 0);
    o.holder_cmd = "backup --all";
    rlk_sem *s1 = NULL;
    CHECK_EQ_INT(rlk_sem_acquire(a, name, &o, &s1), RLK_OK);
    rlk_sem *s2 = TAKE(b, name, 3, 1, 30000);
    if (!s1 || !s2) goto out;
    CHECK_EQ_INT(rlk_sem_k(s1), 2);
    CHECK_EQ_STR(rlk_sem_name(s1), name);
    CHECK_EQ_INT(rlk_sem_ttl_ms(s1), 30000);
    CHECK(strncmp(rlk_sem_token(s1), "rlk:", 4) == 0 && strlen(rlk_sem_token(s1)) == 36);
    CHECK(strcmp(rlk_sem_token(s1), rlk_sem_token(s2)) != 0);
    CHECK_EQ_U64(rlk_sem_fence(s2), rlk_sem_fence(s1) + 1);
    CHECK(rlk_sem_remaining_ms(s1) > 29000 && rlk_sem_remaining_ms(s1) <= 30000);
    CHECK(!rlk_sem_is_lost(s1));
    /* Full: no third permit, for k 1 nor for k 2. */
    CHECK_EQ_INT(try_take(b, name, 3, 1), RLK_LOCK_BUSY);
    CHECK_EQ_INT(try_take(a, name, 3, 2), RLK_LOCK_BUSY);

    rlk_sem_status st;
    if (STATUS(b, name, &st)) {
        CHECK_EQ_INT(st.exists, 1);
        CHECK_EQ_INT(st.not_a_sem, 0);
        CHECK_EQ_INT(st.permits, 3);
        CHECK_EQ_INT(st.used, 3);
        CHECK_EQ_INT(st.nholders, 2);
        CHECK_EQ_INT(st.waiters, 0);
        CHECK_EQ_U64(st.fence, rlk_sem_fence(s2));
        int seen = 0;
        for (size_t i = 0; i < st.nholders; i++) {
            rlk_sem_holder *h = &st.holder[i];
            CHECK(h->has_facts);
            CHECK_EQ_INT(h->pid, getpid());
            CHECK(h->ttl_ms > 29000 && h->ttl_ms <= 30000);
            CHECK(h->since_ms > 1600000000000LL);
            if (strcmp(h->token, rlk_sem_token(s1)) == 0) {
                seen++;
                CHECK_EQ_INT(h->k, 2);
                CHECK_EQ_U64(h->fence, rlk_sem_fence(s1));
                CHECK_EQ_STR(h->cmd, "backup --all");
            } else if (strcmp(h->token, rlk_sem_token(s2)) == 0) {
                seen++;
                CHECK_EQ_INT(h->k, 1);
                CHECK_EQ_STR(h->cmd, "");
            }
        }
        CHECK_EQ_INT(seen, 2);
        rlk_sem_status_free(&st);
        CHECK(st.holder == NULL);
    }
    /* Given back: two free again, and the fence goes on growing. */
    uint64_t f2 = rlk_sem_fence(s2);
    CHECK_EQ_INT(rlk_sem_release(s1), RLK_OK);
    rlk_sem *s3 = TAKE(a, name, 3, 2, 30000);
    if (s3) {
        CHECK_EQ_U64(rlk_sem_fence(s3), f2 + 1);
        CHECK_EQ_INT(try_take(b, name, 3, 1), RLK_LOCK_BUSY);
        CHECK_EQ_INT(rlk_sem_release(s3), RLK_OK);
    }
    CHECK_EQ_INT(rlk_sem_release(s2), RLK_OK);
    if (STATUS(b, name, &st)) {
        CHECK_EQ_INT(st.used, 0);
        CHECK_EQ_INT(st.nholders, 0);
        rlk_sem_status_free(&st);
    }
    /* Expired unrenewed while another holds on (the keys stay): the
     * release finds it expired and says so. */
    rlk_sem *s5 = TAKE(a, name, 3, 1, 30000);
    rlk_sem *s4 = s5 ? TAKE(a, name, 3, 1, 300) : NULL;
    if (s4) {
        int64_t until = ts_now_ms() + 2000;
        int gone = 0;
        while (!gone && ts_now_ms() < until) {
            if (!STATUS(b, name, &st)) break;
            gone = st.nholders == 1 && rlk_sem_remaining_ms(s4) == 0;
            rlk_sem_status_free(&st);
            if (!gone) ts_pause_ms(10);
        }
        CHECK(gone);
        CHECK_EQ_INT(rlk_sem_release(s4), RLK_LOCK_NOT_HELD);
    }
    if (s5) CHECK_EQ_INT(rlk_sem_release(s5), RLK_OK);
    /* A name with no semaphore. */
    if (STATUS(b, "no-such-semaphore", &st)) {
        CHECK_EQ_INT(st.exists, 0);
        CHECK_EQ_INT(st.used, 0);
    }
    /* Keys of another type are refused, not taken (admin is the one
     * server's). */
    char key[128];
    snprintf(key, sizeof key, "resplock:sem:{%s-str}", name);
    if (!*where && CMD(admin, "SET", key, "x", "PX", "60000")) {
        char n2[112];
        snprintf(n2, sizeof n2, "%s-str", name);
        CHECK_EQ_INT(try_take(a, n2, 3, 1), RLK_ERR_SERVER);
        if (STATUS(b, n2, &st)) CHECK_EQ_INT(st.not_a_sem, 1);
    }
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

/* Five waiters that joined in a known order get the one permit in that
 * order. */
static void test_first_come_first_served(void)
{
    enum { N = 5 };
    char name[96];
    sem_name(name, sizeof name, "fifo");
    rlk_client *h = SCLIENT(0);
    struct sw w[N];
    int started = 0;
    rlk_sem *held = h ? TAKE(h, name, 1, 1, 30000) : NULL;
    if (!held) goto out;
    rank_next = 0;
    /* The next joins only once this one has its place. */
    for (int in = 1, one = 0; started < N && in; started += one)
        in = sw_join(&w[started], &one, h, name, 1, 1, 0, 0, started + 1);
    CHECK_EQ_INT(rlk_sem_release(held), RLK_OK);
    for (int i = 0; i < started; i++) {
        CHECK_MSG(sw_wait(&w[i], 10000), "waiter %d never served", i);
        sw_end(&w[i]);
        CHECK_EQ_INT(w[i].rc, RLK_OK);
        CHECK_MSG(w[i].rank == i, "waiter %d served as number %d", i, w[i].rank);
    }
    for (int i = 1; i < started; i++) CHECK(w[i].fence > w[i - 1].fence);
    started = 0;
out:
    for (int i = 0; i < started; i++) sw_end(&w[i]);
    rlk_client_free(h);
}

/* A waiter for 2 is not passed by a waiter for 1 that came after it. */
static void test_head_of_line(void)
{
    char name[96];
    sem_name(name, sizeof name, "hol");
    rlk_client *h = SCLIENT(0);
    struct sw big, small;
    int nb = 0, ns = 0;
    rlk_sem *h1 = h ? TAKE(h, name, 2, 1, 30000) : NULL;
    rlk_sem *h2 = h1 ? TAKE(h, name, 2, 1, 30000) : NULL;
    if (!h2) goto out;
    rank_next = 0;
    if (!sw_join(&big, &nb, h, name, 2, 2, 300, 0, 1) ||
        !sw_join(&small, &ns, h, name, 2, 1, 0, 0, 2))
        goto out;
    /* One permit free: the waiter for 1 must not take it. */
    CHECK_EQ_INT(rlk_sem_release(h1), RLK_OK);
    h1 = NULL;
    CHECK_MSG(!sw_wait(&small, 500), "the waiter for 1 passed the waiter for 2");
    rlk_sem_status st;
    if (STATUS(h, name, &st)) {
        CHECK_EQ_INT(st.used, 1);
        CHECK_EQ_INT(st.waiters, 2);
        rlk_sem_status_free(&st);
    }
    CHECK_EQ_INT(rlk_sem_release(h2), RLK_OK);
    h2 = NULL;
    CHECK(sw_wait(&big, 5000));
    CHECK(sw_wait(&small, 5000));
    sw_end(&big);
    sw_end(&small);
    nb = ns = 0;
    CHECK_EQ_INT(big.rc, RLK_OK);
    CHECK_EQ_INT(small.rc, RLK_OK);
    CHECK_EQ_INT(big.rank, 0);
    CHECK_EQ_INT(small.rank, 1);
    CHECK(small.done_at >= big.done_at + 250); /* after big gave its 2 back */
out:
    if (nb) sw_end(&big);
    if (ns) sw_end(&small);
    if (h1) rlk_sem_release(h1);
    if (h2) rlk_sem_release(h2);
    rlk_client_free(h);
}

/* One permit of name held by h, one waiter (recheck slice recheck, the
 * protocol sprotocol's) joined, the permit given back: the ms until the
 * waiter was served (-1: not within 4 s, a failure). */
static int64_t served_after_release(rlk_client *h, const char *name, int64_t recheck)
{
    struct sw w;
    int nw = 0, proto = sprotocol;
    int64_t took = -1;
    rlk_sem *held = TAKE(h, name, 1, 1, 30000);
    if (!held) return -1;
    rank_next = 0;
    int in = sw_join(&w, &nw, h, name, 1, 1, -1, recheck, 1);
    sprotocol = 0;
    if (in) {
        int64_t t0 = ts_now_ms();
        CHECK_EQ_INT(rlk_sem_release(held), RLK_OK);
        held = NULL;
        if (CHECK(sw_wait(&w, 4000))) took = w.done_at - t0;
    }
    if (nw) {
        sw_end(&w);
        CHECK_EQ_INT(w.rc, RLK_OK);
    }
    if (held) rlk_sem_release(held);
    printf("# %sserved %lld ms after the release (slice %lld)\n", proto == 2 ? "RESP2: " : "",
           (long long)took, (long long)recheck);
    return took;
}

/* A wait wakes on a release, far sooner than its recheck slice (5 s
 * here); and one that ends gives up its place. */
static void test_wait_wakes_on_release(void)
{
    char name[96];
    sem_name(name, sizeof name, "wake");
    rlk_client *h = SCLIENT(0);
    struct sw w;
    int nw = 0;
    rlk_sem *held = NULL;
    int64_t t0, took;
    if (!h) return;
    took = served_after_release(h, name, 5000);
    CHECK_MSG(took >= 0 && took < 1000 + (slow ? MARGIN : 0),
              "woken after %lld ms (the slice is 5000)", (long long)took);

    /* Two waiters for 1 behind each other, 2 given back at once: the
     * second is woken too (by the first one's grant), not at its slice. */
    struct sw w2;
    int nw2 = 0;
    held = TAKE(h, name, 2, 2, 30000);
    if (held && sw_join(&w, &nw, h, name, 2, 1, -1, 5000, 1) &&
        sw_join(&w2, &nw2, h, name, 2, 1, -1, 5000, 2)) {
        t0 = ts_now_ms();
        CHECK_EQ_INT(rlk_sem_release(held), RLK_OK);
        held = NULL;
        CHECK(sw_wait(&w, 4000) && sw_wait(&w2, 4000));
        took = (w.done_at > w2.done_at ? w.done_at : w2.done_at) - t0;
        printf("# both woken within %lld ms of the release\n", (long long)took);
        CHECK_MSG(took < 1000 + (slow ? MARGIN : 0), "the second woken after %lld ms",
                  (long long)took);
    }
    if (nw2) sw_end(&w2);
    if (nw) sw_end(&w);
    nw = 0;
    if (held) rlk_sem_release(held);

    /* A wait that ends without the permits leaves the line at once. */
    held = TAKE(h, name, 1, 1, 30000);
    rlk_client *c = SCLIENT(5000);
    if (held && c) {
        rlk_sem_options o = sopts(1, 1, 30000, 300);
        rlk_sem *s = NULL;
        int64_t t1 = ts_now_ms();
        CHECK_EQ_INT(rlk_sem_acquire(c, name, &o, &s), RLK_LOCK_BUSY);
        int64_t spent = ts_now_ms() - t1;
        CHECK_MSG(spent >= 300 && spent < 300 + MARGIN + 500, "waited %lld ms",
                  (long long)spent);
        CHECK(wait_line(h, name, 0, 2000));
    }
    rlk_client_free(c);
    if (held) rlk_sem_release(held);
    rlk_client_free(h);
}

/* Under RESP2 a wait cannot listen on the connection that carries its
 * tries: it looks again every slice (200 ms here), and is served then. */
static void test_resp2_wait(void)
{
    char name[96];
    sem_name(name, sizeof name, "resp2");
    rlk_client *h = SCLIENT(0);
    if (!h) return;
    sprotocol = 2;
    int64_t took = served_after_release(h, name, 200);
    CHECK_MSG(took >= 0 && took <= 200 + 50 + MARGIN, "served after %lld ms", (long long)took);
    rlk_client_free(h);
}

/* The size changed while permits are held: none is lost, and new
 * acquires wait until fewer are used than the new size. */
static void test_resize_while_held(void)
{
    char name[96];
    sem_name(name, sizeof name, "resize");
    rlk_client *a = SCLIENT(0);
    struct sw w;
    int nw = 0;
    rlk_sem *s1 = a ? TAKE(a, name, 3, 2, 30000) : NULL;
    rlk_sem *s2 = s1 ? TAKE(a, name, 3, 1, 30000) : NULL;
    if (!s2) goto out;
    /* Down to 2 with 3 held. */
    CHECK_EQ_INT(try_take(a, name, 2, 1), RLK_LOCK_BUSY);
    rlk_sem_status st;
    if (STATUS(a, name, &st)) {
        CHECK_EQ_INT(st.permits, 2);
        CHECK_EQ_INT(st.used, 3);
        CHECK_EQ_INT(st.nholders, 2);
        rlk_sem_status_free(&st);
    }
    CHECK(!rlk_sem_is_lost(s1) && !rlk_sem_is_lost(s2));
    rank_next = 0;
    if (!sw_join(&w, &nw, a, name, 2, 1, -1, 0, 1)) goto out;
    /* 2 used of 2: still none for it. */
    CHECK_EQ_INT(rlk_sem_release(s2), RLK_OK);
    s2 = NULL;
    CHECK_MSG(!sw_wait(&w, 400), "a permit given over the new size");
    /* 0 used of 2: it gets one. */
    CHECK_EQ_INT(rlk_sem_release(s1), RLK_OK);
    s1 = NULL;
    CHECK(sw_wait(&w, 5000));
    pthread_join(w.th, NULL); /* it keeps its permit */
    CHECK_EQ_INT(w.rc, RLK_OK);
    /* Up to 5 while it holds 1: 4 more at once. */
    rlk_sem *s3 = TAKE(a, name, 5, 4, 30000);
    if (s3) {
        CHECK_EQ_INT(try_take(a, name, 5, 1), RLK_LOCK_BUSY);
        if (STATUS(a, name, &st)) {
            CHECK_EQ_INT(st.permits, 5);
            CHECK_EQ_INT(st.used, 5);
            rlk_sem_status_free(&st);
        }
        rlk_sem_release(s3);
    }
    if (w.s) {
        CHECK_EQ_INT(rlk_sem_release(w.s), RLK_OK);
        w.s = NULL;
    }
    rlk_client_free(w.cl);
    nw = 0;
out:
    if (nw) sw_end(&w);
    if (s1) rlk_sem_release(s1);
    if (s2) rlk_sem_release(s2);
    rlk_client_free(a);
}

/* The child: takes 1 permit of name with ttl, says so on fd, waits to
 * be killed. */
static int child_hold(const char *name, int64_t ttl, int fd)
{
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *cl = rlk_client_new(&cfg);
    if (!cl) _exit(2);
    rlk_sem_options o = sopts(1, 1, ttl, 0);
    rlk_sem *s = NULL;
    if (rlk_sem_acquire(cl, name, &o, &s) != RLK_OK) _exit(3);
    if (write(fd, "ok\n", 3) != 3) _exit(4);
    for (;;) pause();
}

/* A holder killed with kill -9: its permit comes back after its TTL,
 * not before. */
static void test_holder_killed(void)
{
    enum { TTL = 1000 };
    char name[96];
    sem_name(name, sizeof name, "killed");
    int fds[2];
    if (!CHECK(pipe(fds) == 0)) return;
    fflush(stdout);
    int64_t t0 = ts_now_ms();
    pid_t kid = fork();
    if (kid == 0) {
        char fd_s[16], ttl_s[16];
        close(fds[0]);
        snprintf(fd_s, sizeof fd_s, "%d", fds[1]);
        snprintf(ttl_s, sizeof ttl_s, "%d", TTL);
        execl(self_path, self_path, "--child-hold", url, name, ttl_s, fd_s, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[8] = "";
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    if (!CHECK(kid > 0 && n == 3 && strcmp(buf, "ok\n") == 0)) {
        if (kid > 0) kill(kid, SIGKILL), waitpid(kid, NULL, 0);
        return;
    }
    int64_t t_acq = ts_now_ms();
    kill(kid, SIGKILL);
    int wst;
    CHECK(waitpid(kid, &wst, 0) == kid && WIFSIGNALED(wst));
    rlk_client *c = SCLIENT(50);
    if (!c) return;
    /* Still its, dead as it is. */
    CHECK_EQ_INT(try_take(c, name, 1, 1), RLK_LOCK_BUSY);
    rlk_sem_options o = sopts(1, 1, 30000, 5000);
    rlk_sem *s = NULL;
    CHECK_EQ_INT(rlk_sem_acquire(c, name, &o, &s), RLK_OK);
    int64_t got = ts_now_ms();
    printf("# the dead holder's permit came back %lld ms after its acquire (TTL %d)\n",
           (long long)(got - t0), TTL);
    /* Its TTL ran from its acquire, after t0: never before t0 + TTL. */
    CHECK_MSG(got >= t0 + TTL, "free after %lld ms, before the TTL", (long long)(got - t0));
    CHECK_MSG(got <= t_acq + TTL + 50 + MARGIN, "free only after %lld ms", (long long)(got - t0));
    if (s) CHECK_EQ_INT(rlk_sem_release(s), RLK_OK);
    rlk_client_free(c);
}

/* The child: waits in name's line for its one permit until killed. */
static int child_wait(const char *name)
{
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *cl = rlk_client_new(&cfg);
    if (!cl) _exit(2);
    rlk_sem_options o = sopts(1, 1, 30000, 60000);
    rlk_sem *s = NULL;
    rlk_sem_acquire(cl, name, &o, &s);
    _exit(5); /* never served: it is killed first */
}

/* A waiter killed with kill -9 while in line: its place lapses (two of
 * its recheck slices, 1 s each, and a little), and the waiter behind it
 * is served then, not before. */
static void test_dead_waiter_lapses(void)
{
    char name[96];
    sem_name(name, sizeof name, "deadwaiter");
    rlk_client *h = SCLIENT(0);
    struct sw w;
    int nw = 0;
    pid_t kid = -1;
    rlk_sem *held = h ? TAKE(h, name, 1, 1, 30000) : NULL;
    if (!held) goto out;
    fflush(stdout);
    kid = fork();
    if (kid == 0) {
        execl(self_path, self_path, "--child-wait", url, name, (char *)NULL);
        _exit(127);
    }
    if (!CHECK(kid > 0) || !CHECK(wait_line(h, name, 1, 5000))) goto out;
    int64_t killed = ts_now_ms();
    kill(kid, SIGKILL);
    int wst;
    CHECK(waitpid(kid, &wst, 0) == kid && WIFSIGNALED(wst));
    kid = -1;
    rank_next = 0;
    nw = CHECK(sw_start(&w, name, 1, 1, 8000, 0, 50) == 0);
    if (!nw || !CHECK(wait_line(h, name, 2, 5000))) goto out;
    CHECK_EQ_INT(rlk_sem_release(held), RLK_OK);
    held = NULL;
    CHECK(sw_wait(&w, 8000));
    sw_end(&w);
    nw = 0;
    CHECK_EQ_INT(w.rc, RLK_OK);
    int64_t after = w.done_at - killed;
    printf("# served %lld ms after the waiter ahead was killed\n", (long long)after);
    /* Its last try was at most a slice (1 s) before the kill; its place
     * lasts 2.2 s from it. */
    CHECK_MSG(after >= 1200 - 50, "served after %lld ms: the dead waiter's place was passed",
              (long long)after);
    CHECK_MSG(after <= 2200 + 50 + MARGIN + 200, "served only after %lld ms", (long long)after);
out:
    if (kid > 0) kill(kid, SIGKILL), waitpid(kid, NULL, 0);
    if (nw) sw_end(&w);
    if (held) rlk_sem_release(held);
    rlk_client_free(h);
}

/* Redlock: refused, nothing sent. */
static void test_redlock_refused(void)
{
    char u1[64], u2[64];
    snprintf(u1, sizeof u1, "redis://127.0.0.1:%d", ts_free_port(0));
    snprintf(u2, sizeof u2, "redis://127.0.0.1:%d", ts_free_port(0));
    const char *seeds[2] = {u1, u2};
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    cfg.seeds = seeds;
    cfg.nseeds = 2;
    cfg.redlock = 1;
    rlk_client *cl = rlk_client_new(&cfg);
    if (!CHECK(cl != NULL)) return;
    rlk_sem_options o = sopts(2, 1, 1000, 0);
    rlk_sem *s = (rlk_sem *)1;
    CHECK_EQ_INT(rlk_sem_acquire(cl, "x", &o, &s), RLK_ERR_INVALID);
    CHECK(s == NULL);
    CHECK(strstr(rlk_client_errmsg(cl), "Redlock") != NULL);
    rlk_sem_status st;
    CHECK_EQ_INT(rlk_sem_get_status(cl, "x", RLK_SEM_LAYOUT_RESPLOCK, 0, &st), RLK_ERR_INVALID);
    rlk_client_free(cl);
}

static int lost_n;
static rlk_sem *lost_of;
/* (Called from the watchdog thread too: counted atomically.) */
static void on_lost(void *ctx, rlk_sem *s)
{
    (void)ctx;
    lost_of = s;
    __atomic_add_fetch(&lost_n, 1, __ATOMIC_SEQ_CST);
}

/* A tick-mode holder that stops ticking past its TTL: the permit goes to
 * another, and the holder is told it lost it at its next tick. */
static void test_paused_holder_lost(void)
{
    enum { TTL = 600 };
    char name[96];
    sem_name(name, sizeof name, "paused");
    rlk_client *a = SCLIENT(0), *b = SCLIENT(50);
    if (!a || !b) goto out;
    rlk_sem_options o = sopts(1, 1, TTL, 0);
    o.watchdog = 1;
    o.on_lost = on_lost;
    lost_n = 0;
    lost_of = NULL;
    rlk_sem *s = NULL;
    int64_t t0 = ts_now_ms();
    if (!CHECK(rlk_sem_acquire(a, name, &o, &s) == RLK_OK)) goto out;
    /* a does not tick: nobody renews it. */
    rlk_sem_options ob = sopts(1, 1, 30000, 5000);
    rlk_sem *sb = NULL;
    CHECK_EQ_INT(rlk_sem_acquire(b, name, &ob, &sb), RLK_OK);
    CHECK(ts_now_ms() >= t0 + TTL);
    CHECK_EQ_INT(lost_n, 0);
    CHECK(rlk_sem_remaining_ms(s) == 0);
    int64_t next;
    CHECK_EQ_INT(rlk_client_tick(a, &next), RLK_OK);
    CHECK_EQ_INT(lost_n, 1);
    CHECK(lost_of == s);
    CHECK(rlk_sem_is_lost(s));
    CHECK_EQ_INT(rlk_sem_release(s), RLK_LOCK_LOST);
    CHECK_MSG(strstr(rlk_client_errmsg(a), name) && strstr(rlk_client_errmsg(a), "lost"), "%s",
              rlk_client_errmsg(a));
    CHECK_EQ_INT(lost_n, 1);
    if (sb) CHECK_EQ_INT(rlk_sem_release(sb), RLK_OK);
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

/* The watchdog thread keeps permits past their TTL, on the server. */
static void test_watchdog_renews(void)
{
    enum { TTL = 500 };
    char name[96];
    sem_name(name, sizeof name, "watchdog");
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *a = rlk_client_new(&cfg), *b = SCLIENT(0);
    rlk_sem *s = NULL;
    if (!CHECK(a != NULL) || !b) goto out;
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    rlk_sem_options o = sopts(2, 2, TTL, 0);
    o.watchdog = 1;
    o.on_lost = on_lost;
    lost_n = 0;
    if (!CHECK(rlk_sem_acquire(a, name, &o, &s) == RLK_OK)) goto out;
    int64_t until = ts_now_ms() + 4 * TTL, min_ttl = TTL;
    /* Four TTLs: the holder's expiry, as the server keeps it, never
     * runs out. */
    while (ts_now_ms() < until) {
        rlk_sem_status st;
        if (!STATUS(b, name, &st)) break;
        if (!CHECK_MSG(st.nholders == 1 && st.used == 2, "the permits went: %zu holders",
                       st.nholders)) {
            rlk_sem_status_free(&st);
            break;
        }
        if (st.holder[0].ttl_ms < min_ttl) min_ttl = st.holder[0].ttl_ms;
        rlk_sem_status_free(&st);
        ts_pause_ms(20);
    }
    printf("# the least TTL left seen: %lld ms of %d\n", (long long)min_ttl, TTL);
    CHECK(min_ttl > 0);
    CHECK_EQ_INT(try_take(b, name, 2, 1), RLK_LOCK_BUSY);
    CHECK(!rlk_sem_is_lost(s));
    CHECK(rlk_sem_remaining_ms(s) > 0);
    CHECK_EQ_INT(lost_n, 0);
    CHECK_EQ_INT(rlk_sem_release(s), RLK_OK);
    s = NULL;
    CHECK_EQ_INT(try_take(b, name, 2, 2), RLK_OK);
out:
    if (s) rlk_sem_release(s);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* A cluster run's cluster (NULL in the one server's), and a raw
 * connection to each of its nodes, made when first asked for. */
static tc_cluster *cluster;
static rlk_conn *nconn[TC_NODES];

static rlk_conn *node_conn(int i)
{
    char u[64];
    if (i < 0 || i >= TC_NODES) return NULL;
    if (!nconn[i]) {
        tc_url(cluster, i, u, sizeof u);
        nconn[i] = connect_url(u, 3, NULL, NULL, __LINE__);
    }
    return nconn[i];
}

static void nodes_forget(void)
{
    for (int i = 0; i < TC_NODES; i++) {
        rlk_conn_free(nconn[i]);
        nconn[i] = NULL;
    }
}

/* The slot of semaphore name's keys (its hash tag is the name). */
static unsigned sem_slot(const char *name) { return t_crc16(name, strlen(name)) & 16383; }

/* A raw connection to the node that holds name's keys. */
static rlk_conn *key_node(const char *name)
{
    return cluster ? node_conn(tc_owner(cluster, sem_slot(name))) : admin;
}

/* Permits taken from under their holder (the keys deleted, on the node
 * that holds them): the watchdog thread's renewal finds them gone and
 * calls on_lost from the thread. */
static void test_lost_from_thread(void)
{
    char name[96], key[128];
    sem_name(name, sizeof name, "thread-lost");
    snprintf(key, sizeof key, "resplock:sem:{%s}", name);
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *a = rlk_client_new(&cfg);
    rlk_sem *s = NULL;
    if (!CHECK(a != NULL) || !CHECK(rlk_client_watchdog_start(a) == RLK_OK)) goto out;
    rlk_sem_options o = sopts(2, 1, 600, 0);
    o.watchdog = 1;
    o.on_lost = on_lost;
    __atomic_store_n(&lost_n, 0, __ATOMIC_SEQ_CST);
    if (!CHECK(rlk_sem_acquire(a, name, &o, &s) == RLK_OK)) goto out;
    CHECK(CMD(key_node(name), "DEL", key) != NULL);
    int64_t until = ts_now_ms() + 2000;
    while (__atomic_load_n(&lost_n, __ATOMIC_SEQ_CST) == 0 && ts_now_ms() < until) ts_pause_ms(5);
    CHECK_EQ_INT(__atomic_load_n(&lost_n, __ATOMIC_SEQ_CST), 1);
    CHECK(lost_of == s);
    CHECK(rlk_sem_is_lost(s));
    CHECK_EQ_INT(rlk_sem_release(s), RLK_LOCK_LOST);
    s = NULL;
    CHECK_EQ_INT(__atomic_load_n(&lost_n, __ATOMIC_SEQ_CST), 1);
out:
    if (s) rlk_sem_release(s);
    rlk_client_free(a);
}

/* A try whose reply was lost (a proxy cuts it and closes): the permit it
 * took is given back at once, not after its TTL (one server: the proxy
 * is to it). */
static void test_lost_reply_gives_back(void)
{
    char name[96], purl[64];
    sem_name(name, sizeof name, "lost-reply");
    struct proxy px;
    fake_server *fs = proxy_start(&px, purl, sizeof purl);
    if (!CHECK(fs != NULL)) return;
    rlk_client_config cfg;
    client_cfg(&cfg, purl);
    rlk_client *a = CLIENT_WITH(&cfg), *b = SCLIENT(0);
    if (!a || !b) goto out;
    /* Connected, the library loaded: the cut reply is the try's. */
    CHECK_EQ_INT(try_take(a, name, 1, 1), RLK_OK);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    rlk_sem_options o = sopts(1, 1, 30000, 0);
    rlk_sem *s = NULL;
    int rc = rlk_sem_acquire(a, name, &o, &s);
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 1);
    CHECK_MSG(rc != RLK_OK && s == NULL, "acquire: %d %s", rc, rlk_client_errmsg(a));
    rlk_sem_status st;
    /* a's next call connects again and sends the give-back first. */
    if (STATUS(a, name, &st)) {
        CHECK_EQ_INT(st.used, 0);
        rlk_sem_status_free(&st);
    }
    CHECK_EQ_INT(try_take(b, name, 1, 1), RLK_OK);
out:
    rlk_client_free(a);
    rlk_client_free(b);
    fake_stop(fs);
}

/* Held permits survive a kill -9 and restart of a server with AOF
 * (appendfsync always): on the one server, a server of its own; on the
 * Cluster, the primary that holds the semaphore's slot, its AOF turned
 * on first. */
static void test_aof_restart(void)
{
    static const char *const extra[] = {"--appendonly", "yes", "--appendfsync", "always", NULL};
    ts_options opt;
    memset(&opt, 0, sizeof opt);
    opt.extra = extra;
    char name[96], saved[128];
    sem_name(name, sizeof name, "aof");
    int node = cluster ? tc_owner(cluster, sem_slot(name)) : -1;
    ts_server *s = NULL;
    snprintf(saved, sizeof saved, "%s", url);
    if (cluster) {
        if (!CHECK(node >= 0) || !CHECK(tc_aof_on(cluster, node) == 0)) return;
    } else {
        s = ts_start(&opt);
        if (!CHECK(s != NULL)) return;
        url_of(url, sizeof url, s);
    }
    rlk_client *a = SCLIENT(0);
    rlk_sem *h = a ? TAKE(a, name, 3, 2, 60000) : NULL;
    uint64_t fence = h ? rlk_sem_fence(h) : 0;
    if (!h) goto out;
    rlk_sem_forget(h);
    rlk_client_free(a);
    a = NULL;
    if (cluster) {
        /* Back before its replica could be promoted (the node timeout). */
        nodes_forget();
        if (!CHECK(tc_kill(cluster, node) == 0) || !CHECK(tc_restart(cluster, node) == 0) ||
            !CHECK(tc_wait_ready(cluster, 20000) == 0))
            goto out;
    } else {
        kill(-s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = -1;
        if (!CHECK(ts_start_again(s) == 0)) goto out;
    }
    a = SCLIENT(0);
    if (!a) goto out;
    rlk_sem_status st;
    if (STATUS(a, name, &st)) {
        CHECK_EQ_INT(st.used, 2);
        CHECK_EQ_INT(st.nholders, 1);
        CHECK_EQ_U64(st.fence, fence);
        if (st.nholders == 1) CHECK(st.holder[0].ttl_ms > 50000);
        rlk_sem_status_free(&st);
    }
    CHECK_EQ_INT(try_take(a, name, 3, 2), RLK_LOCK_BUSY);
    rlk_sem *one = TAKE(a, name, 3, 1, 1000);
    if (one) {
        CHECK_EQ_U64(rlk_sem_fence(one), fence + 1);
        rlk_sem_release(one);
    }
out:
    rlk_client_free(a);
    if (s) ts_stop(s);
    snprintf(url, sizeof url, "%s", saved);
}

/*
 * Cluster: the slot of a semaphore's keys moved to another primary while
 * A holds its one permit (the watchdog thread renewing it, a 1.5 s TTL)
 * and B waits for it.  A's renewals reach the new owner (the holder's TTL,
 * read there through the route, seen renewed after the move), A is never
 * told it lost, and B does not return while A holds, for two TTLs after
 * the move; after A's release, B is served, on the new owner.
 */
static void test_cluster_migration(void)
{
    enum { TTL = 1500 };
    char name[96];
    sem_name(name, sizeof name, "mig");
    unsigned slot = sem_slot(name);
    int from = tc_owner(cluster, slot), to = -1;
    for (int i = 0; i < TC_NODES && to < 0; i++)
        if (i != from && tc_is_primary(cluster, i) == 1) to = i;
    if (!CHECK_MSG(from >= 0 && to >= 0, "slot %u: owner %d, another primary %d", slot, from, to))
        return;
    rlk_client *a = SCLIENT(0), *c = SCLIENT(0);
    rlk_sem *s = NULL;
    struct sw w;
    int started = 0;
    if (!a || !c || !CHECK(rlk_client_watchdog_start(a) == RLK_OK)) goto out;
    rlk_sem_options o = sopts(1, 1, TTL, 0);
    o.watchdog = 1;
    o.on_lost = on_lost;
    __atomic_store_n(&lost_n, 0, __ATOMIC_SEQ_CST);
    if (!CHECK(rlk_sem_acquire(a, name, &o, &s) == RLK_OK)) goto out;
    started = CHECK(sw_start(&w, name, 1, 1, 30000, 0, 0) == 0);
    if (!started || !CHECK_MSG(wait_line(c, name, 1, 5000), "B not in line")) goto out;
    if (!CHECK(tc_migrate(cluster, slot, to) == 0)) goto out;
    CHECK_EQ_INT(tc_owner(cluster, slot), to);
    int64_t moved = ts_now_ms(), first = -1, least = TTL;
    int renewed = 0;
    /* Two TTLs from the move: A keeps it, renewed on the new owner. */
    while (ts_now_ms() < moved + 2 * TTL) {
        rlk_sem_status st;
        if (!STATUS(c, name, &st)) break;
        if (CHECK_MSG(st.nholders == 1, "%d holders", (int)st.nholders)) {
            int64_t left = st.holder[0].ttl_ms;
            if (left < least) least = left;
            if (first < 0) first = left;
            else if (left > first) renewed = 1;
        }
        rlk_sem_status_free(&st);
        if (!CHECK(!sw_done(&w)) || !CHECK(!rlk_sem_is_lost(s))) break;
        ts_pause_ms(20);
    }
    printf("# slot %u moved from node %d to %d; the least TTL left seen after: %lld ms of %d\n",
           slot, from, to, (long long)least, TTL);
    CHECK_MSG(renewed, "A's TTL not seen renewed on the new owner");
    CHECK_EQ_INT(__atomic_load_n(&lost_n, __ATOMIC_SEQ_CST), 0);
    CHECK_EQ_INT(rlk_sem_release(s), RLK_OK);
    s = NULL;
    CHECK_MSG(sw_wait(&w, 10000), "B not served after A's release");
    CHECK_EQ_INT(w.rc, RLK_OK);
    CHECK_EQ_INT(tc_owner(cluster, slot), to);
out:
    if (started) sw_end(&w);
    if (s) rlk_sem_release(s);
    rlk_client_free(a);
    rlk_client_free(c);
}

static void run_all(int standalone)
{
    RUN(test_defaults_and_refusals);
    RUN(test_permits_busy_release_fence);
    RUN(test_redis_semaphore_layout);
    RUN(test_first_come_first_served);
    RUN(test_head_of_line);
    RUN(test_wait_wakes_on_release);
    RUN(test_resp2_wait);
    RUN(test_resize_while_held);
    RUN(test_holder_killed);
    RUN(test_dead_waiter_lapses);
    RUN(test_paused_holder_lost);
    RUN(test_watchdog_renews);
    RUN(test_lost_from_thread);
    if (!standalone) RUN(test_cluster_migration);
    if (standalone) RUN(test_lost_reply_gives_back);
    RUN(test_aof_restart);
    if (standalone) RUN(test_redlock_refused);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    if (argc == 6 && strcmp(argv[1], "--child-hold") == 0) {
        snprintf(url, sizeof url, "%s", argv[2]);
        return child_hold(argv[3], strtoll(argv[4], NULL, 10), atoi(argv[5]));
    }
    if (argc == 4 && strcmp(argv[1], "--child-wait") == 0) {
        snprintf(url, sizeof url, "%s", argv[2]);
        return child_wait(argv[3]);
    }
    self_path = strchr(argv[0], '/') ? argv[0] : "/proc/self/exe";
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;
    snprintf(url, sizeof url, "%s", srv_url);
    printf("# one server: %s\n", url);
    run_all(1);
    cluster = tc_start(0);
    if (CHECK_MSG(cluster != NULL, "the cluster did not start")) {
        tc_url(cluster, 0, url, sizeof url);
        where = "cluster-";
        printf("# a cluster: %s\n", url);
        run_all(0);
        nodes_forget();
        tc_stop(cluster);
        cluster = NULL;
    }
    return locktest_finish(t0);
}
