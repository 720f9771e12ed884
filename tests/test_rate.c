/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rate limiter through the public API (rlk_rate_take, rlk_rate_status,
 * rlk_rate_take_async) against a real server: arguments refused before
 * anything is sent, burst from idle, n tokens at once, a status that
 * writes nothing, the wait form sleeping exactly the server's answer
 * (the decision sequence and the server's count of script calls: no
 * polling), a wait shorter than the server's answer returning at once,
 * a key that holds no limiter's value, the event loop's form, and
 * several processes taking from one limiter across second boundaries,
 * the admitted count bounded by rate * time + burst.
 *
 * Timings are bounds a call must keep (MARGIN wider under valgrind),
 * never exact durations; the admitted counts are the point.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "adapters/poll.h"
#include "locktest.h"
#include "resplock.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static rlk_rate_options rate(int64_t count, int64_t period, int64_t burst, int64_t n,
                             int64_t wait)
{
    rlk_rate_options o;
    rlk_rate_options_init(&o);
    o.count = count;
    o.period_ms = period;
    o.burst = burst;
    o.n = n;
    o.wait_ms = wait;
    return o;
}

/* The server's clock, in microseconds. */
static int64_t server_us(void)
{
    rlk_resp_value *v = CMD(admin, "TIME");
    if (!v || v->len != 2 || !v->child || !v->child->next) return -1;
    return strtoll(v->child->str, NULL, 10) * 1000000 + strtoll(v->child->next->str, NULL, 10);
}

static void test_defaults(void)
{
    rlk_rate_options o;
    memset(&o, 0x5a, sizeof o);
    rlk_rate_options_init(&o);
    CHECK_EQ_INT(o.count, 0);
    CHECK_EQ_INT(o.period_ms, 1000);
    CHECK_EQ_INT(o.burst, 1);
    CHECK_EQ_INT(o.n, 1);
    CHECK_EQ_INT(o.wait_ms, 0);
    for (size_t i = 0; i < sizeof o.reserved_ / sizeof o.reserved_[0]; i++)
        CHECK(o.reserved_[i] == NULL);
    CHECK(strstr(rlk_strerror(RLK_RATE_LIMITED), "rate") != NULL);
}

static void test_bad_arguments(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    static const struct {
        int64_t count, period, burst, n, wait;
        const char *name, *says;
    } bad[] = {
        {0, 1000, 5, 1, 0, "api", "count"},       /* rate 0 */
        {-3, 1000, 5, 1, 0, "api", "count"},
        {10, 0, 5, 1, 0, "api", "period"},
        {10, 1000, 0, 1, 0, "api", "burst"},     /* burst 0 */
        {10, 1000, 5, 6, 0, "api", "never"},     /* n > burst */
        {10, 1000, 5, 0, 0, "api", "at least 1 token"},
        {10, 1000, 5, 1, -5, "api", "negative wait"},
        {10, 1000, 5, 1, 0, "", "empty"},
        {1000001, 1000, 5, 1, 0, "api", "microsecond"}, /* the server's clock's grain */
        {1000000000, 1000, 5, 1, 0, "api", "microsecond"},
    };
    reset_stats(admin);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rlk_rate_options o = rate(bad[i].count, bad[i].period, bad[i].burst, bad[i].n, bad[i].wait);
        rlk_rate_result res;
        int r = rlk_rate_take(cl, bad[i].name, &o, &res);
        CHECK_MSG(r == RLK_ERR_INVALID, "case %zu: %d (%s)", i, r, rlk_client_errmsg(cl));
        CHECK_MSG(strstr(rlk_client_errmsg(cl), bad[i].says) != NULL, "case %zu: \"%s\"", i,
                  rlk_client_errmsg(cl));
    }
    CHECK_EQ_INT(rlk_rate_take(cl, "api", NULL, NULL), RLK_ERR_INVALID);
    /* A status reads no n: only count, period, burst are checked. */
    rlk_rate_options st = rate(10, 1000, 0, 0, 0);
    CHECK_EQ_INT(rlk_rate_status(cl, "api", &st, NULL), RLK_ERR_INVALID);
    /* Nothing went to the server. */
    CHECK_EQ_INT(stat_calls(admin, SCRIPT_CALLS "+eval"), 0);
    rlk_client_free(cl);
}

static void test_burst_from_idle(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    CMD(admin, "DEL", "resplock:rate:burst");
    rlk_rate_options o = rate(10, 1000, 5, 1, 0);
    rlk_rate_result res;
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(rlk_rate_take(cl, "burst", &o, &res), RLK_OK);
        CHECK_EQ_INT(res.allowed, 1);
        CHECK_EQ_INT(res.left, 4 - i);
        CHECK_EQ_INT(res.wait_ms, 0);
        CHECK_EQ_INT(res.decisions, 1);
    }
    int r = rlk_rate_take(cl, "burst", &o, &res);
    CHECK_EQ_INT(r, RLK_RATE_LIMITED);
    CHECK_EQ_INT(res.allowed, 0);
    CHECK_EQ_INT(res.left, 0);
    CHECK_MSG(res.wait_ms >= 1 && res.wait_ms <= 100, "wait %lld ms: one interval is 100",
              (long long)res.wait_ms);
    CHECK_MSG(res.reset_ms > 300 && res.reset_ms <= 500, "reset %lld ms", (long long)res.reset_ms);
    /* The key: the TAT, expiring when the limiter is idle again. */
    long long pttl = CMD_INT(admin, "PTTL", "resplock:rate:burst");
    CHECK_MSG(pttl > 0 && pttl <= 500, "PTTL %lld", pttl);
    rlk_client_free(cl);
}

/* A client that sat idle past its command timeout: the next decision
 * counts its reply's deadline from now, not from the client's last turn
 * (a deadline in the past timed the connection out at once, after the
 * decision was sent: "closed before the decision's reply"). */
static void test_after_idle(void)
{
    rlk_client_config cfg;
    client_cfg(&cfg, srv_url);
    cfg.conn.command_timeout_ms = 300;
    rlk_client *cl = CLIENT_WITH(&cfg);
    if (!cl) return;
    CMD(admin, "DEL", "resplock:rate:idle");
    rlk_rate_options o = rate(1000, 1000, 100, 1, 0);
    rlk_rate_result res;
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(rlk_rate_take(cl, "idle", &o, &res), RLK_OK);
        CHECK_EQ_INT(res.allowed, 1);
        /* The idle time is what is tested: twice the command timeout. */
        usleep(600 * 1000);
    }
    rlk_client_free(cl);
}

static void test_n_tokens(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    CMD(admin, "DEL", "resplock:rate:n");
    rlk_rate_options o = rate(10, 1000, 5, 3, 0);
    rlk_rate_result res;
    CHECK_EQ_INT(rlk_rate_take(cl, "n", &o, &res), RLK_OK);
    CHECK_EQ_INT(res.left, 2);
    /* Three more are not there: none is taken, and the wait is for all
     * three (one interval: 100 ms). */
    CHECK_EQ_INT(rlk_rate_take(cl, "n", &o, &res), RLK_RATE_LIMITED);
    CHECK_EQ_INT(res.left, 2);
    CHECK_MSG(res.wait_ms >= 1 && res.wait_ms <= 100, "wait %lld", (long long)res.wait_ms);
    o.n = 2;
    CHECK_EQ_INT(rlk_rate_take(cl, "n", &o, &res), RLK_OK);
    CHECK_EQ_INT(res.left, 0);
    rlk_client_free(cl);
}

static void test_status_writes_nothing(void)
{
    rlk_client *cl = CLIENT();
    char before[64] = "", after[64] = "";
    if (!cl) return;
    CMD(admin, "DEL", "resplock:rate:st");
    rlk_rate_options o = rate(10, 1000, 4, 1, 0);
    rlk_rate_result res;
    CHECK_EQ_INT(rlk_rate_status(cl, "st", &o, &res), RLK_OK);
    CHECK_EQ_INT(res.left, 4);
    CHECK_EQ_INT(res.reset_ms, 0);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "resplock:rate:st"), 0);
    o.n = 3;
    CHECK_EQ_INT(rlk_rate_take(cl, "st", &o, &res), RLK_OK);
    CMD_STR(admin, before, "GET", "resplock:rate:st");
    CHECK_EQ_INT(rlk_rate_status(cl, "st", &o, &res), RLK_OK);
    CMD_STR(admin, after, "GET", "resplock:rate:st");
    CHECK_EQ_STR(after, before);
    CHECK_EQ_INT(res.allowed, 1);
    CHECK_EQ_INT(res.left, 1);
    CHECK_MSG(res.reset_ms > 200 && res.reset_ms <= 300, "reset %lld", (long long)res.reset_ms);
    rlk_client_free(cl);
}

/* The wait sleeps what the server said, then asks once more: two
 * decisions, no polling in between, and not woken before its time. */
static void test_wait_sleeps_the_servers_answer(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    CMD(admin, "DEL", "resplock:rate:w");
    rlk_rate_options o = rate(2, 1000, 1, 1, 0); /* one every 500 ms */
    rlk_rate_result res, look;
    CHECK_EQ_INT(rlk_rate_take(cl, "w", &o, &res), RLK_OK);
    CHECK_EQ_INT(rlk_rate_take(cl, "w", &o, &look), RLK_RATE_LIMITED);
    reset_stats(admin);
    o.wait_ms = 3000;
    int64_t t0 = ts_now_ms();
    int r = rlk_rate_take(cl, "w", &o, &res);
    int64_t took = ts_now_ms() - t0;
    CHECK_EQ_INT(r, RLK_OK);
    CHECK_EQ_INT(res.allowed, 1);
    CHECK_EQ_INT(res.decisions, 2);
    /* The server's wait and the 1 ms of the client's clock's grain. */
    CHECK_MSG(res.slept_ms >= 1 && res.slept_ms <= look.wait_ms + 1, "slept %lld, the refusal said %lld",
              (long long)res.slept_ms, (long long)look.wait_ms);
    CHECK_MSG(took >= res.slept_ms && took < res.slept_ms + MARGIN,
              "took %lld ms for a sleep of %lld", (long long)took, (long long)res.slept_ms);
    CHECK_EQ_INT(stat_calls(admin, SCRIPT_CALLS "+eval"), 2);
    rlk_client_free(cl);
}

/* A wait shorter than the server's answer: refused at once, nothing
 * slept, the server's wait said. */
static void test_wait_shorter_than_the_answer(void)
{
    rlk_client *cl = CLIENT();
    if (!cl) return;
    CMD(admin, "DEL", "resplock:rate:slow");
    rlk_rate_options o = rate(1, 10000, 1, 1, 0); /* one every 10 s */
    rlk_rate_result res;
    CHECK_EQ_INT(rlk_rate_take(cl, "slow", &o, &res), RLK_OK);
    o.wait_ms = 300;
    int64_t t0 = ts_now_ms();
    CHECK_EQ_INT(rlk_rate_take(cl, "slow", &o, &res), RLK_RATE_LIMITED);
    int64_t took = ts_now_ms() - t0;
    CHECK_MSG(took < 300, "took %lld ms: it should not sleep a wait it cannot finish",
              (long long)took);
    CHECK_MSG(res.wait_ms > 9000, "wait %lld", (long long)res.wait_ms);
    CHECK_EQ_INT(res.decisions, 1);
    CHECK_EQ_INT(res.slept_ms, 0);
    /* RLK_WAIT_FOREVER is refused nothing, but n > burst would be for
     * ever: refused at once. */
    o.wait_ms = RLK_WAIT_FOREVER;
    o.n = 2;
    t0 = ts_now_ms();
    CHECK_EQ_INT(rlk_rate_take(cl, "slow", &o, &res), RLK_ERR_INVALID);
    CHECK(ts_now_ms() - t0 < MARGIN);
    rlk_client_free(cl);
}

static void test_not_a_limiter(void)
{
    rlk_client *cl = CLIENT();
    char got[64] = "";
    if (!cl) return;
    CMD(admin, "SET", "resplock:rate:app", "hello");
    rlk_rate_options o = rate(10, 1000, 1, 1, 0);
    CHECK_EQ_INT(rlk_rate_take(cl, "app", &o, NULL), RLK_ERR_SERVER);
    CHECK_MSG(strstr(rlk_client_errmsg(cl), "no limiter") != NULL, "%s", rlk_client_errmsg(cl));
    CMD_STR(admin, got, "GET", "resplock:rate:app");
    CHECK_EQ_STR(got, "hello");
    CMD(admin, "DEL", "resplock:rate:app");
    CMD(admin, "HSET", "resplock:rate:app", "f", "v");
    CHECK_EQ_INT(rlk_rate_take(cl, "app", &o, NULL), RLK_ERR_SERVER);
    CMD(admin, "DEL", "resplock:rate:app");
    rlk_client_free(cl);
}

typedef struct async_rec {
    int calls, status;
    rlk_rate_result res;
} async_rec;

static void async_done(void *ctx, int status, const rlk_rate_result *res)
{
    async_rec *a = ctx;
    a->calls++;
    a->status = status;
    a->res = *res;
}

/* The event loop's form: the sleep is one of the deadlines the watch
 * gives, the callback comes from a handle. */
static void test_async(void)
{
    rlk_client *cl = CLIENT();
    async_rec a = {0, 0, {0}}, b = {0, 0, {0}};
    if (!cl) return;
    CMD(admin, "DEL", "resplock:rate:loop");
    rlk_rate_options o = rate(4, 1000, 1, 1, 2000); /* one every 250 ms */
    CHECK_EQ_INT(rlk_rate_take_async(cl, "loop", &o, async_done, &a), RLK_OK);
    CHECK_EQ_INT(rlk_rate_take_async(cl, "loop", &o, async_done, &b), RLK_OK);
    CHECK_EQ_INT(a.calls + b.calls, 0); /* never from the call */
    CHECK_EQ_INT(rlk_rate_take_async(cl, "loop", &o, NULL, NULL), RLK_ERR_INVALID);
    int64_t t0 = ts_now_ms(), deadline = t0 + 3000 + MARGIN;
    while ((a.calls == 0 || b.calls == 0) && ts_now_ms() < deadline) rlk_client_poll_once(cl, 100);
    CHECK_EQ_INT(a.calls, 1);
    CHECK_EQ_INT(b.calls, 1);
    CHECK_EQ_INT(a.status, RLK_OK);
    CHECK_EQ_INT(b.status, RLK_OK);
    /* One was allowed at once, the other after sleeping one refusal. */
    CHECK_EQ_INT(a.res.decisions + b.res.decisions, 3);
    CHECK_MSG(ts_now_ms() - t0 >= a.res.slept_ms + b.res.slept_ms, "woken early");
    rlk_client_free(cl);
}

static const char *self_path; /* this program, for the children */

/* Children take from one limiter for span_ms, counting what they got.
 * They are this program again (exec'd, not only forked), so that under
 * valgrind only the parent is checked and the children run natively
 * with nothing of the parent's heap. */
static int child_take(const char *name, int64_t until_ms, int pipe_fd)
{
    rlk_client_config cfg;
    client_cfg(&cfg, srv_url);
    rlk_client *cl = rlk_client_new(&cfg);
    long got = 0, refused = 0;
    if (!cl) _exit(2);
    rlk_rate_options o = rate(20, 1000, 5, 1, 0);
    while (ts_now_ms() < until_ms) {
        int r = rlk_rate_take(cl, name, &o, NULL);
        if (r == RLK_OK) got++;
        else if (r == RLK_RATE_LIMITED) refused++;
        else _exit(3);
        /* Demand far above the rate, without taking both CPUs. */
        usleep(2000);
    }
    char line[64];
    int n = snprintf(line, sizeof line, "%ld %ld\n", got, refused);
    if (write(pipe_fd, line, (size_t)n) != n) _exit(4);
    rlk_client_free(cl);
    _exit(0);
}

/* Four processes, 20/s with a burst of 5, for 2.2 s from a half second
 * of the server's clock (across two second boundaries): admitted at
 * most 20 * time + 5, the time being what the parent saw from before
 * the first decision to after the last. */
static void test_processes_share_one_limiter(void)
{
    enum { KIDS = 4 };
    int fds[2];
    pid_t kids[KIDS];
    if (!CHECK(pipe(fds) == 0)) return;
    CMD(admin, "DEL", "resplock:rate:shared");
    /* Start at .5 s of the server's clock. */
    int64_t s = server_us(), wait_us = (1500000 - s % 1000000) % 1000000;
    ts_pause_ms((int)(wait_us / 1000));
    int64_t t0 = ts_now_ms(), until = t0 + 2200;
    fflush(stdout);
    for (int i = 0; i < KIDS; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            char until_s[32], fd_s[16];
            close(fds[0]);
            snprintf(until_s, sizeof until_s, "%lld", (long long)until);
            snprintf(fd_s, sizeof fd_s, "%d", fds[1]);
            execl(self_path, self_path, "--child-take", srv_url, "shared", until_s, fd_s,
                  (char *)NULL);
            _exit(127);
        }
    }
    close(fds[1]);
    long got = 0, refused = 0;
    for (int i = 0; i < KIDS; i++) {
        int st;
        CHECK(kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i] && WIFEXITED(st) &&
              WEXITSTATUS(st) == 0);
    }
    int64_t t1 = ts_now_ms();
    FILE *f = fdopen(fds[0], "r");
    long g, rf;
    int lines = 0;
    while (f && fscanf(f, "%ld %ld", &g, &rf) == 2) got += g, refused += rf, lines++;
    if (f) fclose(f);
    CHECK_EQ_INT(lines, KIDS);
    /* (The clock read in whole ms: the span may be 1 ms longer.) */
    double bound = 20.0 * (double)(t1 - t0 + 1) / 1000.0 + 5;
    printf("# %d processes for %lld ms: %ld admitted (bound %.1f), %ld refused\n", KIDS,
           (long long)(t1 - t0), got, bound, refused);
    CHECK_MSG(got <= (long)bound, "%ld admitted, more than 20/s * %lld ms + 5", got,
              (long long)(t1 - t0));
    /* The limiter refills: more than the burst went through, and the
     * demand was above the rate. */
    CHECK_MSG(got > 5 + 20, "%ld admitted", got);
    CHECK(refused > 0);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    if (argc == 6 && strcmp(argv[1], "--child-take") == 0) {
        snprintf(srv_url, sizeof srv_url, "%s", argv[2]);
        return child_take(argv[3], strtoll(argv[4], NULL, 10), atoi(argv[5]));
    }
    self_path = strchr(argv[0], '/') ? argv[0] : "/proc/self/exe"; /* found through PATH */
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;
    RUN(test_defaults);
    RUN(test_bad_arguments);
    RUN(test_burst_from_idle);
    RUN(test_after_idle);
    RUN(test_n_tokens);
    RUN(test_status_writes_nothing);
    RUN(test_wait_sleeps_the_servers_answer);
    RUN(test_wait_shorter_than_the_answer);
    RUN(test_not_a_limiter);
    RUN(test_async);
    RUN(test_processes_share_one_limiter);
    return locktest_finish(t0);
}
