/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The read-write lock through the public API (rlk_rw_*), against a real
 * server and then a real 3-primary Cluster: two readers at once; a
 * writer that excludes readers and writers; a waiting writer that stops
 * a new reader (resplock's readers do not pass it, as Redisson's do) and
 * gets the lock when the first readers are gone; waiters served in the
 * order they joined; reentrant reads and writes; downgrade; a reader
 * killed with kill -9 pruned after its TTL and not before; a waiting
 * writer killed whose place lapses, after which readers come in; a holder
 * that stopped renewing told it lost; the watchdog keeping a read hold
 * past its TTL; a wait woken by a release, not by its recheck slice; a
 * write hold that survives a restart of a server with AOF.
 *
 * Waits are conditions with deadlines (a status read, a thread's done
 * flag), never a bare sleep as synchronisation.
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

enum { R = RLK_RW_READ, W = RLK_RW_WRITE };

static rlk_rw_options ropts(int mode, int64_t ttl, int64_t wait)
{
    rlk_rw_options o;
    rlk_rw_options_init(&o);
    o.mode = (rlk_rw_mode)mode;
    o.ttl_ms = ttl;
    o.wait_ms = wait;
    return o;
}

static void rw_name(char *out, size_t n, const char *what)
{
    snprintf(out, n, "%s%s-%ld", where, what, (long)getpid());
}

static rlk_client *rclient(int64_t recheck_ms, int line)
{
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    cfg.recheck_ms = recheck_ms;
    return client_with(&cfg, line);
}
#define RCLIENT(recheck) rclient(recheck, __LINE__)

/* A hold taken at once (as holder's holder, or a new one when NULL). */
static rlk_rw *take(rlk_client *cl, const char *name, int mode, const rlk_rw *holder, int line)
{
    rlk_rw_options o = ropts(mode, 30000, 0);
    o.holder = holder;
    rlk_rw *h = NULL;
    int rc = rlk_rw_acquire(cl, name, &o, &h);
    tl_ok(rc == RLK_OK && h, __FILE__, line, "acquire %s %s: %d %s", name,
          mode == W ? "write" : "read", rc, rlk_client_errmsg(cl));
    return rc == RLK_OK ? h : NULL;
}
#define TAKE(cl, name, mode) take(cl, name, mode, NULL, __LINE__)
#define TAKE_AS(cl, name, mode, holder) take(cl, name, mode, holder, __LINE__)

/* One try (no wait) by a new holder: its status, the hold released. */
static int try_take(rlk_client *cl, const char *name, int mode)
{
    rlk_rw_options o = ropts(mode, 30000, 0);
    rlk_rw *h = NULL;
    int rc = rlk_rw_acquire(cl, name, &o, &h);
    if (h) rlk_rw_release(h);
    return rc;
}

static int status(rlk_client *cl, const char *name, rlk_rw_status *st, int line)
{
    int rc = rlk_rw_get_status(cl, name, st);
    return tl_ok(rc == RLK_OK, __FILE__, line, "status %s: %d %s", name, rc,
                 rlk_client_errmsg(cl));
}
#define STATUS(cl, name, st) status(cl, name, st, __LINE__)

/* Waits until name has want waiters in line, within ms. */
static int wait_line(rlk_client *cl, const char *name, int64_t want, int64_t ms)
{
    int64_t until = ts_now_ms() + ms;
    for (;;) {
        rlk_rw_status st;
        int rc = rlk_rw_get_status(cl, name, &st);
        int64_t w = st.waiters;
        rlk_rw_status_free(&st);
        if (rc == RLK_OK && w == want) return 1;
        if (ts_now_ms() >= until) return 0;
        ts_pause_ms(5);
    }
}

/* ------------------------------------------------------------------ */
/* A thread that waits for a hold, each on a client of its own          */

static int rank_next;

struct rw {
    rlk_client *cl;
    char name[96];
    rlk_rw_options o;
    int hold_ms;         /* held this long, then released (-1: kept) */
    int rc, rank;
    int64_t done_at;
    uint64_t fence;
    rlk_rw *h;
    int done;            /* atomic */
    pthread_t th;
};

static void *rw_main(void *arg)
{
    struct rw *w = arg;
    w->rc = rlk_rw_acquire(w->cl, w->name, &w->o, &w->h);
    w->done_at = ts_now_ms();
    w->rank = __atomic_fetch_add(&rank_next, 1, __ATOMIC_SEQ_CST);
    if (w->h) w->fence = rlk_rw_fence(w->h);
    if (w->rc == RLK_OK && w->hold_ms >= 0) {
        if (w->hold_ms > 0) ts_pause_ms(w->hold_ms); /* the holder's work */
        rlk_rw_release(w->h);
        w->h = NULL;
    }
    __atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static int rw_done(struct rw *w) { return __atomic_load_n(&w->done, __ATOMIC_SEQ_CST); }

/* Starts w waiting for a hold of name in mode, then waits until name has
 * line waiters (5 s at most): 1 when it has; *started says whether w
 * must be ended. */
static int rw_join(struct rw *w, int *started, rlk_client *h, const char *name, int mode,
                   int hold_ms, int64_t recheck, int64_t ttl, int64_t line)
{
    memset(w, 0, sizeof *w);
    *started = 0;
    w->cl = RCLIENT(recheck);
    if (!w->cl) return 0;
    snprintf(w->name, sizeof w->name, "%s", name);
    w->o = ropts(mode, ttl, 30000);
    w->hold_ms = hold_ms;
    if (!CHECK(pthread_create(&w->th, NULL, rw_main, w) == 0)) {
        rlk_client_free(w->cl);
        w->cl = NULL;
        return 0;
    }
    *started = 1;
    return CHECK_MSG(wait_line(h, name, line, 5000), "%lld not in line", (long long)line);
}

static int rw_wait(struct rw *w, int64_t ms)
{
    int64_t until = ts_now_ms() + ms;
    while (!rw_done(w) && ts_now_ms() < until) ts_pause_ms(2);
    return rw_done(w);
}

static void rw_end(struct rw *w)
{
    if (!w->cl) return;
    pthread_join(w->th, NULL);
    if (w->h) rlk_rw_release(w->h);
    rlk_client_free(w->cl);
    w->cl = NULL;
}

/* ------------------------------------------------------------------ */
/* The tests                                                            */

static void test_defaults_and_refusals(void)
{
    rlk_rw_options o;
    memset(&o, 0x5a, sizeof o);
    rlk_rw_options_init(&o);
    CHECK_EQ_INT(o.mode, RLK_RW_READ);
    CHECK_EQ_INT(o.ttl_ms, 0);
    CHECK_EQ_INT(o.wait_ms, 0);
    CHECK_EQ_INT(o.watchdog, 0);
    CHECK(o.holder == NULL);
    rlk_client *cl = RCLIENT(0), *other = RCLIENT(0);
    if (!cl || !other) goto out;
    rlk_rw *h = (rlk_rw *)1;
    rlk_rw_options b = ropts(3, 1000, 0);
    CHECK_EQ_INT(rlk_rw_acquire(cl, "x", &b, &h), RLK_ERR_INVALID);
    CHECK(h == NULL);
    b = ropts(R, -5, 0);
    CHECK_EQ_INT(rlk_rw_acquire(cl, "x", &b, &h), RLK_ERR_INVALID);
    b = ropts(R, 1000, 0);
    CHECK_EQ_INT(rlk_rw_acquire(cl, "", &b, &h), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk_rw_acquire(cl, "}{x", &b, &h), RLK_ERR_INVALID);
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *plain = rlk_client_new(&cfg);
    if (CHECK(plain != NULL)) {
        b.watchdog = 1; /* nothing renews a plain client's holds */
        CHECK_EQ_INT(rlk_rw_acquire(plain, "x", &b, &h), RLK_ERR_INVALID);
        CHECK(strstr(rlk_client_errmsg(plain), "watchdog") != NULL);
        rlk_client_free(plain);
    }
    /* A holder of another client is refused. */
    char name[96];
    rw_name(name, sizeof name, "refuse");
    rlk_rw *mine = TAKE(other, name, R);
    if (mine) {
        b = ropts(R, 1000, 0);
        b.holder = mine;
        CHECK_EQ_INT(rlk_rw_acquire(cl, name, &b, &h), RLK_ERR_INVALID);
        CHECK_MSG(strstr(rlk_client_errmsg(cl), "another client"), "%s", rlk_client_errmsg(cl));
        CHECK_EQ_INT(rlk_rw_release(mine), RLK_OK);
    }
    CHECK_EQ_INT(rlk_rw_release(NULL), RLK_ERR_INVALID);
    rlk_rw_forget(NULL);
out:
    rlk_client_free(cl);
    rlk_client_free(other);
}

/* Two readers at once; no writer while they read; the fence grows. */
static void test_two_readers(void)
{
    char name[96];
    rw_name(name, sizeof name, "readers");
    rlk_client *a = RCLIENT(0), *b = RCLIENT(0);
    rlk_rw *r1 = NULL, *r2 = NULL;
    if (!a || !b) goto out;
    r1 = TAKE(a, name, R);
    r2 = r1 ? TAKE(b, name, R) : NULL;
    if (!r2) goto out;
    CHECK(rlk_rw_fence(r2) == rlk_rw_fence(r1) + 1);
    CHECK(strcmp(rlk_rw_token(r1), rlk_rw_token(r2)) != 0);
    CHECK_EQ_INT(rlk_rw_mode_of(r1), RLK_RW_READ);
    CHECK(rlk_rw_remaining_ms(r1) > 0 && !rlk_rw_is_lost(r1));
    rlk_rw_status st;
    if (STATUS(a, name, &st)) {
        CHECK(st.exists && !st.not_a_rw);
        CHECK_EQ_INT(st.readers, 2);
        CHECK_EQ_INT(st.writers, 0);
        CHECK_EQ_INT(st.nholds, 2);
        CHECK(st.fence == rlk_rw_fence(r2));
        CHECK(st.nholds == 2 && st.hold[0].has_facts && st.hold[0].pid == getpid());
        rlk_rw_status_free(&st);
    }
    CHECK_EQ_INT(try_take(b, name, W), RLK_LOCK_BUSY);
    CHECK_EQ_INT(rlk_rw_release(r1), RLK_OK);
    r1 = NULL;
    CHECK_EQ_INT(try_take(b, name, W), RLK_LOCK_BUSY); /* one reader left */
    CHECK_EQ_INT(rlk_rw_release(r2), RLK_OK);
    r2 = NULL;
    CHECK_EQ_INT(try_take(b, name, W), RLK_OK);
    if (STATUS(a, name, &st)) {
        CHECK_EQ_INT(st.exists, 1); /* its fence is kept while the keys live */
        CHECK_EQ_INT(st.nholds, 0);
        rlk_rw_status_free(&st);
    }
out:
    if (r1) rlk_rw_release(r1);
    if (r2) rlk_rw_release(r2);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* A writer excludes readers and writers; released, a reader comes in. */
static void test_writer_excludes(void)
{
    char name[96];
    rw_name(name, sizeof name, "writer");
    rlk_client *a = RCLIENT(0), *b = RCLIENT(0);
    rlk_rw *w = NULL;
    if (!a || !b) goto out;
    if (!(w = TAKE(a, name, W))) goto out;
    CHECK_EQ_INT(rlk_rw_mode_of(w), RLK_RW_WRITE);
    CHECK_EQ_INT(try_take(b, name, R), RLK_LOCK_BUSY);
    CHECK_EQ_INT(try_take(b, name, W), RLK_LOCK_BUSY);
    rlk_rw_status st;
    if (STATUS(b, name, &st)) {
        CHECK_EQ_INT(st.writers, 1);
        CHECK_EQ_INT(st.readers, 0);
        CHECK_EQ_INT(st.waiters, 0); /* the tries once joined no line */
        rlk_rw_status_free(&st);
    }
    CHECK_EQ_INT(rlk_rw_release(w), RLK_OK);
    w = NULL;
    CHECK_EQ_INT(try_take(b, name, R), RLK_OK);
out:
    if (w) rlk_rw_release(w);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* A waiting writer stops a new reader: the reader does not pass it (as
 * Redisson's read lock would while the mode is read); the writer gets
 * the lock when the first reader releases, the reader after the writer. */
static void test_waiting_writer_blocks_readers(void)
{
    char name[96];
    rw_name(name, sizeof name, "nostarve");
    rlk_client *h = RCLIENT(0);
    struct rw wr, rd;
    int nw = 0, nr = 0;
    rlk_rw *r1 = h ? TAKE(h, name, R) : NULL;
    if (!r1) goto out;
    rank_next = 0;
    if (!rw_join(&wr, &nw, h, name, W, 200, 0, 30000, 1)) goto out;
    /* A reader that tries once is refused while the writer waits ... */
    CHECK_EQ_INT(try_take(h, name, R), RLK_LOCK_BUSY);
    /* ... and one that waits queues behind the writer. */
    if (!rw_join(&rd, &nr, h, name, R, 0, 0, 30000, 2)) goto out;
    CHECK(!rw_done(&rd) && !rw_done(&wr));
    rlk_rw_status st;
    if (STATUS(h, name, &st)) {
        CHECK_EQ_INT(st.readers, 1);
        CHECK_EQ_INT(st.writers_waiting, 1);
        rlk_rw_status_free(&st);
    }
    CHECK_EQ_INT(rlk_rw_release(r1), RLK_OK);
    r1 = NULL;
    CHECK(rw_wait(&wr, 10000));
    CHECK(rw_wait(&rd, 10000));
    rw_end(&wr);
    rw_end(&rd);
    nw = nr = 0;
    CHECK_EQ_INT(wr.rc, RLK_OK);
    CHECK_EQ_INT(rd.rc, RLK_OK);
    CHECK_MSG(wr.rank == 0 && rd.rank == 1, "the writer served as %d, the reader as %d",
              wr.rank, rd.rank);
    CHECK(rd.fence > wr.fence);
    CHECK(rd.done_at >= wr.done_at + 150); /* after the writer's release */
out:
    if (nw) rw_end(&wr);
    if (nr) rw_end(&rd);
    if (r1) rlk_rw_release(r1);
    rlk_client_free(h);
}

/* Waiters of both modes served in the order they joined. */
static void test_first_come_first_served(void)
{
    enum { N = 5 };
    static const int modes[N] = {W, R, W, R, W};
    char name[96];
    rw_name(name, sizeof name, "fifo");
    rlk_client *h = RCLIENT(0);
    struct rw w[N];
    int started = 0;
    rlk_rw *held = h ? TAKE(h, name, W) : NULL;
    if (!held) goto out;
    rank_next = 0;
    for (int in = 1, one = 0; started < N && in; started += one)
        in = rw_join(&w[started], &one, h, name, modes[started], 30, 0, 30000, started + 1);
    CHECK_EQ_INT(rlk_rw_release(held), RLK_OK);
    held = NULL;
    for (int i = 0; i < started; i++) {
        CHECK_MSG(rw_wait(&w[i], 10000), "waiter %d never served", i);
        rw_end(&w[i]);
        CHECK_EQ_INT(w[i].rc, RLK_OK);
        CHECK_MSG(w[i].rank == i, "waiter %d served as number %d", i, w[i].rank);
    }
    for (int i = 1; i < started; i++) CHECK(w[i].fence > w[i - 1].fence);
    started = 0;
out:
    for (int i = 0; i < started; i++) rw_end(&w[i]);
    if (held) rlk_rw_release(held);
    rlk_client_free(h);
}

/* Reentrance: a writer takes reads and writes again as itself; a reader
 * reads again as itself even with a writer waiting (else it would wait
 * on itself); others stay out until every hold is released. */
static void test_reentrant(void)
{
    char name[96];
    rw_name(name, sizeof name, "reenter");
    rlk_client *a = RCLIENT(0), *b = RCLIENT(0);
    rlk_rw *w1 = NULL, *w2 = NULL, *r1 = NULL, *r2 = NULL;
    struct rw wr;
    int nw = 0;
    if (!a || !b) goto out;
    if (!(w1 = TAKE(a, name, W))) goto out;
    w2 = TAKE_AS(a, name, W, w1);
    r1 = TAKE_AS(a, name, R, w1);
    if (!w2 || !r1) goto out;
    CHECK(strcmp(rlk_rw_token(w1), rlk_rw_token(w2)) == 0);
    CHECK(strcmp(rlk_rw_token(w1), rlk_rw_token(r1)) == 0);
    CHECK(rlk_rw_fence(w2) > rlk_rw_fence(w1));
    rlk_rw_status st;
    if (STATUS(b, name, &st)) {
        CHECK_EQ_INT(st.writers, 2);
        CHECK_EQ_INT(st.readers, 1);
        rlk_rw_status_free(&st);
    }
    CHECK_EQ_INT(try_take(b, name, R), RLK_LOCK_BUSY);
    CHECK_EQ_INT(rlk_rw_release(w2), RLK_OK);
    w2 = NULL;
    CHECK_EQ_INT(try_take(b, name, R), RLK_LOCK_BUSY); /* w1 still writes */
    CHECK_EQ_INT(rlk_rw_release(w1), RLK_OK);
    w1 = NULL;
    /* r1 alone: a read of another holder comes in, a write does not. */
    CHECK_EQ_INT(try_take(b, name, R), RLK_OK);
    CHECK_EQ_INT(try_take(b, name, W), RLK_LOCK_BUSY);
    /* A writer waits; r1's holder reads again at once, a new reader not. */
    if (!rw_join(&wr, &nw, b, name, W, -1, 0, 30000, 1)) goto out;
    r2 = TAKE_AS(a, name, R, r1);
    CHECK_EQ_INT(try_take(b, name, R), RLK_LOCK_BUSY);
    CHECK(!rw_done(&wr));
    if (r2) CHECK_EQ_INT(rlk_rw_release(r2), RLK_OK);
    r2 = NULL;
    CHECK(!rw_done(&wr) || (CHECK_MSG(0, "the writer came in past a read hold"), 0));
    CHECK_EQ_INT(rlk_rw_release(r1), RLK_OK);
    r1 = NULL;
    CHECK(rw_wait(&wr, 10000));
    CHECK_EQ_INT(wr.rc, RLK_OK);
out:
    if (nw) rw_end(&wr);
    if (r2) rlk_rw_release(r2);
    if (r1) rlk_rw_release(r1);
    if (w2) rlk_rw_release(w2);
    if (w1) rlk_rw_release(w1);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* Downgrade: a read taken under the write, the write released: the
 * holder reads, others read beside it, no one writes. */
static void test_downgrade(void)
{
    char name[96];
    rw_name(name, sizeof name, "downgrade");
    rlk_client *a = RCLIENT(0), *b = RCLIENT(0);
    rlk_rw *w = NULL, *r = NULL;
    if (!a || !b) goto out;
    if (!(w = TAKE(a, name, W))) goto out;
    if (!(r = TAKE_AS(a, name, R, w))) goto out;
    CHECK_EQ_INT(try_take(b, name, R), RLK_LOCK_BUSY);
    CHECK_EQ_INT(rlk_rw_release(w), RLK_OK);
    w = NULL;
    CHECK_EQ_INT(rlk_rw_mode_of(r), RLK_RW_READ);
    CHECK(!rlk_rw_is_lost(r));
    CHECK_EQ_INT(try_take(b, name, R), RLK_OK);
    CHECK_EQ_INT(try_take(b, name, W), RLK_LOCK_BUSY);
    rlk_rw_status st;
    if (STATUS(b, name, &st)) {
        CHECK_EQ_INT(st.readers, 1);
        CHECK_EQ_INT(st.writers, 0);
        rlk_rw_status_free(&st);
    }
    CHECK_EQ_INT(rlk_rw_release(r), RLK_OK);
    r = NULL;
    CHECK_EQ_INT(try_take(b, name, W), RLK_OK);
out:
    if (r) rlk_rw_release(r);
    if (w) rlk_rw_release(w);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* The child: takes a read hold of name (no watchdog), says so on fd,
 * and waits to be killed. */
static int child_hold(const char *name, int64_t ttl, int fd)
{
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *cl = rlk_client_new(&cfg);
    if (!cl) _exit(2);
    rlk_rw_options o = ropts(R, ttl, 0);
    rlk_rw *h = NULL;
    if (rlk_rw_acquire(cl, name, &o, &h) != RLK_OK) _exit(3);
    if (write(fd, "ok\n", 3) != 3) _exit(4);
    for (;;) pause();
}

/* A reader killed with kill -9: pruned after its TTL, not before. */
static void test_reader_killed(void)
{
    enum { TTL = 1000 };
    char name[96];
    rw_name(name, sizeof name, "killed");
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
    rlk_client *c = RCLIENT(50);
    if (!c) return;
    CHECK_EQ_INT(try_take(c, name, W), RLK_LOCK_BUSY); /* still its, dead as it is */
    rlk_rw_options o = ropts(W, 30000, 5000);
    rlk_rw *h = NULL;
    CHECK_EQ_INT(rlk_rw_acquire(c, name, &o, &h), RLK_OK);
    int64_t got = ts_now_ms();
    printf("# the dead reader was pruned %lld ms after its acquire (TTL %d)\n",
           (long long)(got - t0), TTL);
    CHECK_MSG(got >= t0 + TTL, "free after %lld ms, before the TTL", (long long)(got - t0));
    CHECK_MSG(got <= t_acq + TTL + 50 + MARGIN, "free only after %lld ms", (long long)(got - t0));
    if (h) CHECK_EQ_INT(rlk_rw_release(h), RLK_OK);
    rlk_client_free(c);
}

/* The child: waits in name's line for a write hold until killed. */
static int child_wait(const char *name)
{
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *cl = rlk_client_new(&cfg);
    if (!cl) _exit(2);
    rlk_rw_options o = ropts(W, 30000, 60000);
    rlk_rw *h = NULL;
    rlk_rw_acquire(cl, name, &o, &h);
    _exit(5); /* never served: it is killed first */
}

/* A waiting writer killed with kill -9: it stops new readers only until
 * its place lapses (two of its recheck slices, 1 s each, and a little),
 * then a reader comes in beside the one that holds. */
static void test_dead_writer_lapses(void)
{
    char name[96];
    rw_name(name, sizeof name, "deadwriter");
    rlk_client *h = RCLIENT(0);
    struct rw w;
    int nw = 0;
    pid_t kid = -1;
    rlk_rw *held = h ? TAKE(h, name, R) : NULL;
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
    CHECK_EQ_INT(try_take(h, name, R), RLK_LOCK_BUSY); /* its place is still live */
    rank_next = 0;
    if (!rw_join(&w, &nw, h, name, R, 0, 50, 30000, 2)) goto out;
    CHECK(rw_wait(&w, 8000));
    rw_end(&w);
    nw = 0;
    CHECK_EQ_INT(w.rc, RLK_OK);
    int64_t after = w.done_at - killed;
    printf("# a reader came in %lld ms after the waiting writer was killed\n", (long long)after);
    CHECK_MSG(after >= 1200 - 50, "in after %lld ms: the dead writer's place was passed",
              (long long)after);
    CHECK_MSG(after <= 2200 + 50 + MARGIN + 200, "in only after %lld ms", (long long)after);
out:
    if (kid > 0) kill(kid, SIGKILL), waitpid(kid, NULL, 0);
    if (nw) rw_end(&w);
    if (held) rlk_rw_release(held);
    rlk_client_free(h);
}

static int lost_n;
static rlk_rw *lost_of;
static void on_lost(void *ctx, rlk_rw *h)
{
    (void)ctx;
    lost_of = h;
    __atomic_add_fetch(&lost_n, 1, __ATOMIC_SEQ_CST);
}

/* A tick-mode reader that stops ticking past its TTL: a writer gets the
 * lock, and the reader is told it lost its hold at its next tick. */
static void test_paused_holder_lost(void)
{
    enum { TTL = 600 };
    char name[96];
    rw_name(name, sizeof name, "paused");
    rlk_client *a = RCLIENT(0), *b = RCLIENT(50);
    if (!a || !b) goto out;
    rlk_rw_options o = ropts(R, TTL, 0);
    o.watchdog = 1;
    o.on_lost = on_lost;
    lost_n = 0;
    lost_of = NULL;
    rlk_rw *h = NULL;
    int64_t t0 = ts_now_ms();
    if (!CHECK(rlk_rw_acquire(a, name, &o, &h) == RLK_OK)) goto out;
    rlk_rw_options ob = ropts(W, 30000, 5000);
    rlk_rw *hb = NULL;
    CHECK_EQ_INT(rlk_rw_acquire(b, name, &ob, &hb), RLK_OK);
    CHECK(ts_now_ms() >= t0 + TTL);
    CHECK_EQ_INT(lost_n, 0);
    CHECK(rlk_rw_remaining_ms(h) == 0);
    int64_t next;
    CHECK_EQ_INT(rlk_client_tick(a, &next), RLK_OK);
    CHECK_EQ_INT(lost_n, 1);
    CHECK(lost_of == h);
    CHECK(rlk_rw_is_lost(h));
    CHECK_EQ_INT(rlk_rw_release(h), RLK_LOCK_LOST);
    CHECK_EQ_INT(lost_n, 1);
    if (hb) CHECK_EQ_INT(rlk_rw_release(hb), RLK_OK);
out:
    rlk_client_free(a);
    rlk_client_free(b);
}

/* The watchdog thread keeps a read hold past its TTL, on the server. */
static void test_watchdog_renews(void)
{
    enum { TTL = 500 };
    char name[96];
    rw_name(name, sizeof name, "watchdog");
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    rlk_client *a = rlk_client_new(&cfg), *b = RCLIENT(0);
    rlk_rw *h = NULL;
    if (!CHECK(a != NULL) || !b) goto out;
    CHECK_EQ_INT(rlk_client_watchdog_start(a), RLK_OK);
    rlk_rw_options o = ropts(R, TTL, 0);
    o.watchdog = 1;
    o.on_lost = on_lost;
    lost_n = 0;
    if (!CHECK(rlk_rw_acquire(a, name, &o, &h) == RLK_OK)) goto out;
    int64_t until = ts_now_ms() + 4 * TTL, min_ttl = TTL;
    while (ts_now_ms() < until) {
        rlk_rw_status st;
        if (!STATUS(b, name, &st)) break;
        if (!CHECK_MSG(st.nholds == 1 && st.readers == 1, "the hold went: %zu holds",
                       st.nholds)) {
            rlk_rw_status_free(&st);
            break;
        }
        if (st.hold[0].ttl_ms < min_ttl) min_ttl = st.hold[0].ttl_ms;
        rlk_rw_status_free(&st);
        ts_pause_ms(20);
    }
    printf("# the least TTL left seen: %lld ms of %d\n", (long long)min_ttl, TTL);
    CHECK(min_ttl > 0);
    CHECK_EQ_INT(try_take(b, name, W), RLK_LOCK_BUSY);
    CHECK(!rlk_rw_is_lost(h));
    CHECK_EQ_INT(lost_n, 0);
    CHECK_EQ_INT(rlk_rw_release(h), RLK_OK);
    h = NULL;
    CHECK_EQ_INT(try_take(b, name, W), RLK_OK);
out:
    if (h) rlk_rw_release(h);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* A wait is woken by the release, not by its recheck slice: the waiters'
 * slice is 100 s (recheck 100 s, TTL 300 s), so a wait that finishes
 * within the 20 s given was woken by the lock's channel.  First a
 * writer waiting on a reader, then two readers on a writer (the second
 * woken by the first one's grant). */
static void test_wait_wakes_on_release(void)
{
    enum { SLICE = 100000, TTL = 300000 };
    char name[96];
    rw_name(name, sizeof name, "wake");
    rlk_client *h = RCLIENT(0);
    struct rw w1, w2;
    int n1 = 0, n2 = 0;
    rlk_rw *held = h ? TAKE(h, name, R) : NULL;
    if (!held) goto out;
    if (!rw_join(&w1, &n1, h, name, W, -1, SLICE, TTL, 1)) goto out;
    CHECK_EQ_INT(rlk_rw_release(held), RLK_OK);
    held = NULL;
    CHECK_MSG(rw_wait(&w1, 20000), "the writer was not woken by the release");
    CHECK_EQ_INT(w1.rc, RLK_OK);
    /* w1 writes now; two readers wait. */
    if (!rw_join(&w2, &n2, h, name, R, -1, SLICE, TTL, 1)) goto out;
    struct rw w3;
    int n3 = 0;
    if (rw_join(&w3, &n3, h, name, R, -1, SLICE, TTL, 2)) {
        pthread_join(w1.th, NULL);
        CHECK_EQ_INT(rlk_rw_release(w1.h), RLK_OK);
        w1.h = NULL;
        CHECK_MSG(rw_wait(&w2, 20000) && rw_wait(&w3, 20000),
                  "the readers were not both woken");
        CHECK_EQ_INT(w2.rc, RLK_OK);
        CHECK_EQ_INT(w3.rc, RLK_OK);
        rlk_rw_status st;
        if (STATUS(h, name, &st)) {
            CHECK_EQ_INT(st.readers, 2);
            rlk_rw_status_free(&st);
        }
    }
    if (n3) rw_end(&w3);
out:
    if (n2) rw_end(&w2);
    if (n1) rw_end(&w1);
    if (held) rlk_rw_release(held);
    rlk_client_free(h);
}

/* A write hold survives a restart of a server with AOF (appendfsync
 * always), with its TTL and the fence: a read and a write are refused
 * after it. */
static void test_aof_restart(void)
{
    static const char *const extra[] = {"--appendonly", "yes", "--appendfsync", "always", NULL};
    ts_options opt;
    memset(&opt, 0, sizeof opt);
    opt.extra = extra;
    ts_server *s = ts_start(&opt);
    if (!CHECK(s != NULL)) return;
    char saved[128];
    snprintf(saved, sizeof saved, "%s", url);
    url_of(url, sizeof url, s);
    char name[96];
    rw_name(name, sizeof name, "aof");
    rlk_client *a = RCLIENT(0);
    rlk_rw_options o = ropts(W, 60000, 0);
    rlk_rw *h = NULL;
    if (!a || !CHECK(rlk_rw_acquire(a, name, &o, &h) == RLK_OK)) goto out;
    uint64_t fence = rlk_rw_fence(h);
    rlk_rw_forget(h);
    rlk_client_free(a);
    a = NULL;
    kill(-s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = -1;
    if (!CHECK(ts_start_again(s) == 0)) goto out;
    if (!(a = RCLIENT(0))) goto out;
    rlk_rw_status st;
    if (STATUS(a, name, &st)) {
        CHECK_EQ_INT(st.writers, 1);
        CHECK_EQ_U64(st.fence, fence);
        if (st.nholds == 1) CHECK(st.hold[0].ttl_ms > 50000);
        rlk_rw_status_free(&st);
    }
    CHECK_EQ_INT(try_take(a, name, R), RLK_LOCK_BUSY);
    CHECK_EQ_INT(try_take(a, name, W), RLK_LOCK_BUSY);
out:
    rlk_client_free(a);
    ts_stop(s);
    snprintf(url, sizeof url, "%s", saved);
}

static void run_all(int standalone)
{
    RUN(test_defaults_and_refusals);
    RUN(test_two_readers);
    RUN(test_writer_excludes);
    RUN(test_waiting_writer_blocks_readers);
    RUN(test_first_come_first_served);
    RUN(test_reentrant);
    RUN(test_downgrade);
    RUN(test_reader_killed);
    RUN(test_dead_writer_lapses);
    RUN(test_paused_holder_lost);
    RUN(test_watchdog_renews);
    RUN(test_wait_wakes_on_release);
    if (standalone) RUN(test_aof_restart);
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
    tc_cluster *cl = tc_start(0);
    if (CHECK_MSG(cl != NULL, "the cluster did not start")) {
        tc_url(cl, 0, url, sizeof url);
        where = "cluster-";
        printf("# a cluster: %s\n", url);
        run_all(0);
        tc_stop(cl);
    }
    return locktest_finish(t0);
}
