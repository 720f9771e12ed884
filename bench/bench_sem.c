/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Semaphore benchmark: resplock's semaphore (rlk_sem_*, src/lua/sem_*.lua)
 * beside resplock's plain lock and beside redis-semaphore's Semaphore
 * (npm 5.8.0, over ioredis, in a node process), in one run, on one local
 * server that this program starts on a free loopback port
 * (tests/server.c: $RLK_REDIS_SERVER, else redis-server on PATH) and
 * stops at the end.  `make bench-sem` installs redis-semaphore 5.8.0 and
 * ioredis 5 with npm (into the build's bench/node-sem), builds this and
 * runs it.
 *
 * redis-semaphore runs in a node process (bench/bench_sem.js: one ioredis
 * connection for its cycles), driven over lines on its stdin and stdout;
 * resplock in this process, one client.  Each side's work is sequential.
 *
 *   1. uncontended acquire + release cycles per second: resplock's plain
 *      lock (rlk_lock_acquire wait 0, TTL 30 s, + rlk_lock_release),
 *      resplock's semaphore (rlk_sem_acquire k 1 of permits 5, wait 0,
 *      TTL 30 s, + rlk_sem_release) and redis-semaphore's (a new
 *      Semaphore(client, key, 5), acquire(), release()); ROUNDS rounds of
 *      N / ROUNDS cycles per side, the sides taking turns first, after a
 *      warm-up; the medians of the rounds, and the medians of same-round
 *      ratios.  Every cycle is checked: a failed acquire or release ends
 *      the run.
 *   2. server time per cycle, in the same rounds: INFO commandstats after
 *      CONFIG RESETSTAT, the top-level commands only (those the client
 *      sends itself: the script calls, whose time includes their own
 *      calls, and the plain commands; top_cmds below), each counted
 *      exactly so many times per cycle, or the run stops.  Beside it the
 *      server's CPU (INFO cpu).  The target: the semaphore's server time
 *      per cycle at most TARGET times the plain lock's (the median of
 *      same-round ratios), judged in each placement.  Beside it what
 *      bounds it: a script call with no work measured on the same server
 *      (null_script_us), twice, plus the semaphore's scripts' own
 *      commands, against what the scripts cost in all.
 *   3. release to wake: PERMITS holders (1 permit each) take every permit;
 *      a waiter asks for one (resplock: rlk_sem_acquire with a long
 *      wait_ms, in a thread of this process with its own client, woken by
 *      the release's message; redis-semaphore: acquire() on a second
 *      connection, polling every 10 ms, its default retryInterval); once
 *      it waits (resplock: the semaphore's line counts it; both: then a
 *      random pause of 20 to 40 ms) one holder releases.  The time from
 *      just before the release call to the waiter's acquire returning,
 *      each library measured within its own process on its own monotonic
 *      clock (CLOCK_MONOTONIC here, process.hrtime in node); median and
 *      p90 over WAKE trials.
 *
 * The read-write lock's rows: a read hold and a write hold (rlk_rw_*,
 * src/lua/rw_*.lua) taken and given back, in 1. and 2., beside the plain
 * lock.
 *
 * As bench_rate does, everything runs twice, pinned: the server and the
 * clients on one CPU, then the server on one and the clients on the
 * other.  RLK_BENCH_PIN=0 runs once, unpinned.  RLK_BENCH_SEM_N sets N
 * (default 10,000), RLK_BENCH_SEM_WAKE the trials of 3. (default 21).
 *
 * The last line is "summary:" and key=value pairs of the key figures.
 */
#define _GNU_SOURCE 1 /* sched_setaffinity, pipe2 */
#include "resplock.h"
#include "node.h"
#include "pin.h"
#include "server.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_SEM_JS
#define BENCH_SEM_JS "bench/bench_sem.js"
#endif
#ifndef BENCH_SEM_DIR
#define BENCH_SEM_DIR "bench/node-sem"
#endif

#define ROUNDS 5
#define WARMUP 500
#define MAXCMD 16      /* commands of one phase told apart */
#define PERMITS 5
#define TARGET 2.0     /* semaphore's server time / plain lock's, at most */
#define WAKE_MAX 101
#define WAKE_WAIT_MS 10000
#define WAKE_SLOW_US 50000 /* a wake this slow is listed */

enum { PLAIN, SEM, RS, READ, WRITE, NSIDE };
static const char *const side_label[NSIDE] = {"resplock plain lock", "resplock semaphore",
                                              "redis-semaphore", "resplock read lock",
                                              "resplock write lock"};
static const char *const side_key[NSIDE] = {"plain", "sem", "rs", "read", "write"};

static ts_server *server;
static char url[64];
static long n_total = 10000, n_round;
static int n_wake = 21;

static void die(const char *what)
{
    fprintf(stderr, "bench_sem: %s\n", what);
    ts_stop(server);
    exit(1);
}

static void die2(const char *what, const char *why)
{
    char msg[700];
    snprintf(msg, sizeof msg, "%s: %s", what, why);
    die(msg);
}

/* ------------------------------------------------------------------ */
/* The server: what it is, its statistics                              */

static char srv_name[16], srv_version[32];

static rlk_conn *admin_conn(void)
{
    rlk_conn *c = bench_conn_to(url);
    if (!c) die("the INFO connection");
    return c;
}

static void server_facts(rlk_conn *c)
{
    const char *why = "";
    if (bench_server_facts(c, srv_name, sizeof srv_name, srv_version, sizeof srv_version, &why) != 0)
        die2("INFO server", why);
}

static double server_cpu(rlk_conn *c)
{
    const char *why = "";
    double s = bench_server_cpu(c, &why);
    if (s < 0) die2("INFO cpu", why);
    return s;
}

typedef bench_cmdstat_row cmdstat;

/* The commands each side sends itself (its top-level commands), and how
 * many of each per cycle, from the libraries' code: resplock's plain
 * lock pipelines SET NX PX, the window's HGET and TIME to acquire (its
 * first try) and releases by a script; its semaphore acquires and
 * releases by a script each, and so does the read-write lock (a read
 * hold or a write hold); redis-semaphore acquires by its script
 * (EVALSHA) and releases by ZREM (its script calls ZREMRANGEBYSCORE, no
 * ZREM).  SCRIPT stands for the script calls of any name (FCALL,
 * EVALSHA, EVAL).  Every other command counted is a script's own call,
 * within the script's time; a top-level command counted other than so
 * many times per cycle (a script calling it too, or a library sending
 * other commands) stops the run. */
#define SCRIPT "(script)"
static const struct top_cmd {
    int side;
    const char *name;
    int per_cycle;
} top_cmds[] = {
    {PLAIN, "set", 1}, {PLAIN, "hget", 1}, {PLAIN, "time", 1}, {PLAIN, SCRIPT, 1},
    {SEM, SCRIPT, 2},
    {RS, SCRIPT, 1},   {RS, "zrem", 1},
    {READ, SCRIPT, 2}, {WRITE, SCRIPT, 2},
};
#define NTOP (int)(sizeof top_cmds / sizeof top_cmds[0])

/* The entry of top_cmds for command n of side, or -1: not top-level. */
static int top_level(int side, const char *n)
{
    for (int i = 0; i < NTOP; i++)
        if (top_cmds[i].side == side &&
            (strcmp(top_cmds[i].name, SCRIPT) == 0 ? bench_is_script_call(n)
                                                   : strcmp(top_cmds[i].name, n) == 0))
            return i;
    return -1;
}

static int is_top_level(int side, const char *n) { return top_level(side, n) >= 0; }

/* ------------------------------------------------------------------ */
/* redis-semaphore, in a node process                                  */

typedef struct nodeproc {
    bench_node p;
    char rs_version[32], ioredis_version[32], node_version[32];
} nodeproc;

static nodeproc node;

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Starts bench_sem.js (node from $RLK_NODE, else node on PATH; the script
 * $RLK_BENCH_SEM_JS; its modules under $RLK_BENCH_SEM_DIR, where npm
 * installed them) and reads its "ready" line. */
static void node_start(nodeproc *np)
{
    const char *prog = env_or("RLK_NODE", "node"), *js = env_or("RLK_BENCH_SEM_JS", BENCH_SEM_JS);
    const char *dir = env_or("RLK_BENCH_SEM_DIR", BENCH_SEM_DIR);
    char modules[600], probe[700], line[256], why[200];
    snprintf(modules, sizeof modules, "%s/node_modules", dir);
    snprintf(probe, sizeof probe, "%s/redis-semaphore/package.json", modules);
    if (access(probe, R_OK) != 0)
        die2("redis-semaphore is not installed (make bench-sem installs it with npm)", probe);
    if (bench_node_start(&np->p, prog, js, modules, server->port, line, sizeof line, why,
                         sizeof why) != 0)
        die(why);
    if (sscanf(line, "ready %31s %31s %31s", np->rs_version, np->ioredis_version,
               np->node_version) != 3)
        die2("the node process did not start: it said", line);
}

static void node_stop(nodeproc *np)
{
    if (bench_node_stop(&np->p) != 0) die("the node process failed at its end");
}

static void node_line(nodeproc *np, char *line, size_t cap)
{
    if (!fgets(line, (int)cap, np->p.out)) die("the node process gave no answer (see above)");
}

/* ------------------------------------------------------------------ */
/* 1. and 2.: uncontended cycles, and their server time                */

static const char plain_name[] = "bench:plain", sem_name[] = "bench:sem",
                  wake_name[] = "bench:semwake", rw_name[] = "bench:rw";

static void sem_opts(rlk_sem_options *o, int64_t wait_ms)
{
    rlk_sem_options_init(o);
    o->permits = PERMITS;
    o->k = 1;
    o->ttl_ms = 30000;
    o->wait_ms = wait_ms;
}

/* One read or write hold of rw_name taken and given back, checked. */
static void rw_cycle(rlk_client *cl, rlk_rw_mode mode)
{
    rlk_rw_options o;
    rlk_rw_options_init(&o);
    o.mode = mode;
    o.ttl_ms = 30000;
    o.wait_ms = 0;
    rlk_rw *h;
    int rc = rlk_rw_acquire(cl, rw_name, &o, &h);
    if (rc != RLK_OK)
        die2(rc == RLK_LOCK_BUSY ? "rlk_rw_acquire: busy (uncontended)" : "rlk_rw_acquire",
             rlk_client_errmsg(cl));
    if ((rc = rlk_rw_release(h)) != RLK_OK) die2("rlk_rw_release", rlk_strerror(rc));
}

/* n cycles of resplock's side (PLAIN, SEM, READ or WRITE), each checked. */
static void rlk_cycles(rlk_client *cl, int side, long n, double *secs, double *cpu)
{
    rlk_sem_options so;
    sem_opts(&so, 0);
    double c0 = bench_cpu_now();
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        if (side == PLAIN) {
            int rc = bench_cycle(cl, plain_name);
            if (rc != RLK_OK) die2("plain lock cycle", rlk_client_errmsg(cl));
            continue;
        }
        if (side == READ || side == WRITE) {
            rw_cycle(cl, side == READ ? RLK_RW_READ : RLK_RW_WRITE);
            continue;
        }
        rlk_sem *s;
        int rc = rlk_sem_acquire(cl, sem_name, &so, &s);
        if (rc != RLK_OK)
            die2(rc == RLK_LOCK_BUSY ? "rlk_sem_acquire: busy (no permit free, uncontended)"
                                     : "rlk_sem_acquire",
                 rlk_client_errmsg(cl));
        if (rlk_sem_k(s) != 1) die("rlk_sem_acquire: not 1 permit held");
        rc = rlk_sem_release(s);
        if (rc != RLK_OK) die2("rlk_sem_release", rlk_strerror(rc));
    }
    *secs = (double)(bench_now_ns() - t0) * 1e-9;
    *cpu = bench_cpu_now() - c0;
}

static void rs_cycles(long n, double *secs, double *cpu)
{
    char line[128];
    fprintf(node.p.in, "cycle %d %ld\n", PERMITS, n);
    fflush(node.p.in);
    node_line(&node, line, sizeof line);
    if (sscanf(line, "%lf %lf", secs, cpu) != 2) die2("redis-semaphore: unexpected answer", line);
}

static void cycles(rlk_client *cl, int side, long n, double *secs, double *cpu)
{
    if (side == RS) rs_cycles(n, secs, cpu);
    else rlk_cycles(cl, side, n, secs, cpu);
}

typedef struct phase {
    double secs[ROUNDS], cpu[ROUNDS];   /* wall and client CPU of a round      */
    double srv_us[ROUNDS];              /* top-level commands' time per cycle */
    double srv_cpu_us[ROUNDS];          /* server CPU per cycle (INFO cpu)    */
    cmdstat cmd[MAXCMD];                /* over every round                   */
    int ncmd;
} phase;

typedef struct wakes {
    double us[WAKE_MAX];
    int n;
} wakes;

typedef struct regime {
    const char *title;
    int server_cpu, client_cpu;         /* -1: not pinned */
    phase ph[NSIDE];
    wakes wk[2];                        /* resplock, redis-semaphore */
    double null_us, floor_ratio;        /* what bounds the target    */
} regime;

static void phase_add(phase *p, int side, int r, const cmdstat *cs, int n, long cyc)
{
    long long calls[NTOP] = {0};
    double usec = 0;
    for (int i = 0; i < n; i++) {
        if (!cs[i].calls) continue;
        int t = top_level(side, cs[i].name);
        if (t >= 0) {
            usec += cs[i].usec;
            calls[t] += cs[i].calls;
        }
        int j = 0;
        while (j < p->ncmd && strcmp(p->cmd[j].name, cs[i].name) != 0) j++;
        if (j == p->ncmd) {
            if (j == MAXCMD) die("too many commands in a phase");
            p->cmd[p->ncmd++] = (cmdstat){.calls = 0};
            snprintf(p->cmd[j].name, sizeof p->cmd[j].name, "%.31s", cs[i].name);
        }
        p->cmd[j].calls += cs[i].calls;
        p->cmd[j].usec += cs[i].usec;
    }
    for (int t = 0; t < NTOP; t++) {
        if (top_cmds[t].side != side || calls[t] == (long long)top_cmds[t].per_cycle * cyc)
            continue;
        fprintf(stderr, "bench_sem: %s, %ld cycles: %s counted %lld times, not %lld; the round's"
                        " commands:\n",
                side_label[side], cyc, top_cmds[t].name, calls[t],
                (long long)top_cmds[t].per_cycle * cyc);
        for (int i = 0; i < n; i++)
            fprintf(stderr, "  %s calls=%lld usec=%.0f\n", cs[i].name, cs[i].calls, cs[i].usec);
        die("not the top-level commands expected");
    }
    p->srv_us[r] = usec / (double)cyc;
}

/* One round of one side, with the server's statistics. */
static void run_phase(rlk_conn *admin, rlk_client *cl, int side, phase *p, int r)
{
    const char *why;
    double c0 = server_cpu(admin);
    if (bench_reset_stats(admin, &why) != 0) die2("CONFIG RESETSTAT", why);
    cycles(cl, side, n_round, &p->secs[r], &p->cpu[r]);
    double c1 = server_cpu(admin);
    cmdstat cs[MAXCMD];
    const char *w2 = "";
    int n = bench_cmdstats_all(admin, cs, MAXCMD, &w2);
    if (n < 0) die2("INFO commandstats", w2);
    phase_add(p, side, r, cs, n, n_round);
    p->srv_cpu_us[r] = (c1 - c0) * 1e6 / (double)n_round;
}

static double med(const double *v) { return bench_quantile(v, ROUNDS, 0.5); }

static double rate_q(const phase *p, double q)
{
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) v[r] = (double)n_round / p->secs[r];
    return bench_quantile(v, ROUNDS, q);
}

/* The median over rounds of a[r] / b[r]. */
static double paired(const double *a, const double *b)
{
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) v[r] = a[r] / b[r];
    return bench_quantile(v, ROUNDS, 0.5);
}

/* side a's rate over side b's: the inverse of their times. */
static double speed_ratio(const regime *g, int a, int b)
{
    return paired(g->ph[b].secs, g->ph[a].secs);
}

static double srv_ratio(const regime *g, int a, int b)
{
    return paired(g->ph[a].srv_us, g->ph[b].srv_us);
}

static double srv_cpu_ratio(const regime *g, int a, int b)
{
    return paired(g->ph[a].srv_cpu_us, g->ph[b].srv_cpu_us);
}

/* ------------------------------------------------------------------ */
/* 3.: release to wake                                                 */

typedef struct waiter {
    rlk_client *cl;
    int rc;
    int64_t woke_ns;
    char why[256];
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    rlk_sem_options o;
    sem_opts(&o, WAKE_WAIT_MS);
    rlk_sem *s;
    w->rc = rlk_sem_acquire(w->cl, wake_name, &o, &s);
    w->woke_ns = bench_now_ns();
    if (w->rc != RLK_OK) {
        snprintf(w->why, sizeof w->why, "%s", rlk_client_errmsg(w->cl));
        return NULL;
    }
    w->rc = rlk_sem_release(s);
    if (w->rc != RLK_OK) snprintf(w->why, sizeof w->why, "release: %s", rlk_strerror(w->rc));
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void rlk_wake(rlk_client *cl, rlk_client *wcl, wakes *out)
{
    rlk_sem_options o;
    sem_opts(&o, 0);
    out->n = 0;
    for (int t = 0; t < n_wake; t++) {
        rlk_sem *h[PERMITS];
        for (int i = 0; i < PERMITS; i++)
            if (rlk_sem_acquire(cl, wake_name, &o, &h[i]) != RLK_OK)
                die2("wake: a holder's rlk_sem_acquire", rlk_client_errmsg(cl));
        waiter w = {.cl = wcl, .rc = -1000};
        pthread_t th;
        if (pthread_create(&th, NULL, waiter_main, &w) != 0) die("pthread_create");
        /* until the line counts the waiter (bounded: 5 s) */
        int64_t until = bench_now_ns() + 5000000000LL;
        for (;;) {
            rlk_sem_status st;
            if (rlk_sem_get_status(cl, wake_name, RLK_SEM_LAYOUT_RESPLOCK, 0, &st) != RLK_OK)
                die2("wake: rlk_sem_get_status", rlk_client_errmsg(cl));
            int64_t waiting = st.waiters;
            rlk_sem_status_free(&st);
            if (waiting >= 1) break;
            if (bench_now_ns() > until) die("wake: the waiter never joined the line");
            sleep_ms(1);
        }
        sleep_ms(20 + rand() % 21);
        int64_t released = bench_now_ns();
        int rc = rlk_sem_release(h[0]);
        if (rc != RLK_OK) die2("wake: the holder's rlk_sem_release", rlk_strerror(rc));
        pthread_join(th, NULL);
        if (w.rc != RLK_OK) die2("wake: the waiter", w.why);
        if (w.woke_ns < released) die("wake: the waiter acquired before the release");
        if (out->n < WAKE_MAX) out->us[out->n++] = (double)(w.woke_ns - released) / 1e3;
        for (int i = 1; i < PERMITS; i++)
            if ((rc = rlk_sem_release(h[i])) != RLK_OK)
                die2("wake: a holder's rlk_sem_release", rlk_strerror(rc));
    }
}

static void rs_wake(wakes *out)
{
    static char line[WAKE_MAX * 16 + 64];
    fprintf(node.p.in, "wake %d %d\n", PERMITS, n_wake);
    fflush(node.p.in);
    node_line(&node, line, sizeof line);
    if (strncmp(line, "w ", 2) != 0) die2("redis-semaphore: wake: unexpected answer", line);
    out->n = 0;
    char *p = line + 2, *end;
    for (;;) {
        double v = strtod(p, &end);
        if (end == p) break;
        if (out->n == WAKE_MAX || v < 0) die2("redis-semaphore: wake: unexpected answer", line);
        out->us[out->n++] = v;
        p = end;
    }
    if (out->n != n_wake) die2("redis-semaphore: wake: not one time per trial", line);
}

static double wake_q(const wakes *w, double q)
{
    double s[WAKE_MAX];
    memcpy(s, w->us, sizeof(double) * (size_t)w->n);
    return bench_quantile_sorted(s, w->n, q);
}

/* ------------------------------------------------------------------ */
/* What bounds the target: a script call's own cost                     */

#define NULL_CALLS 5000

/* The server's time (us) of a script call with no work in it: FCALL of
 * an empty function (loaded here, in a library of the benchmark's own),
 * or EVAL "return 0" where the server has no FUNCTION; NULL_CALLS of
 * them, by INFO commandstats.  *how names which. */
static double null_script_us(rlk_conn *admin, const char **how)
{
    static const char lib[] = "#!lua name=bench_sem_null\n"
                              "redis.register_function('bench_sem_null', function() return 0 end)";
    const char *load[] = {"FUNCTION", "LOAD", "REPLACE", lib};
    const char *fcall[] = {"FCALL", "bench_sem_null", "0"}, *eval[] = {"EVAL", "return 0", "0"};
    rlk_resp_value *v;
    int fn = rlk_conn_command(admin, &v, 4, load, NULL) == RLK_OK && v->type != RLK_RESP_ERROR;
    const char *const *argv = fn ? fcall : eval;
    const char *why = "";
    if (bench_reset_stats(admin, &why) != 0) die2("CONFIG RESETSTAT", why);
    for (int i = 0; i < NULL_CALLS; i++)
        if (rlk_conn_command(admin, &v, 3, argv, NULL) != RLK_OK || v->type == RLK_RESP_ERROR)
            die2("an empty script call", rlk_conn_errmsg(admin));
    char *text = bench_cmdstats_text(admin, &why);
    if (!text) die2("INFO commandstats", why);
    long long calls;
    double usec;
    bench_cmdstat(text, fn ? "fcall" : "eval", &calls, &usec);
    free(text);
    if (calls != NULL_CALLS) die("an empty script call: not counted as sent");
    *how = fn ? "FCALL of an empty function" : "EVAL \"return 0\" 0";
    return usec / (double)calls;
}

static void run_regime(regime *g, rlk_conn *admin, rlk_client *cl, rlk_client *wcl)
{
    if (g->server_cpu >= 0 && (bench_pin(server->pid, g->server_cpu) != 0 ||
                               bench_pin(0, g->client_cpu) != 0 ||
                               bench_pin(node.p.pid, g->client_cpu) != 0))
        die2("sched_setaffinity", strerror(errno));
    if (g->server_cpu >= 0)
        printf("== %s: server on CPU %d, this program and the node process on CPU %d\n",
               g->title, g->server_cpu, g->client_cpu);
    else
        printf("== %s: server and clients placed by the kernel (RLK_BENCH_PIN=0)\n", g->title);

    double s, u;
    for (int i = 0; i < NSIDE; i++) cycles(cl, i, WARMUP, &s, &u);
    memset(g->ph, 0, sizeof g->ph);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < NSIDE; i++) {
            int side = (i + r) % NSIDE;
            run_phase(admin, cl, side, &g->ph[side], r);
        }

    printf("   1. uncontended acquire + release cycles per second, %d rounds of %ld per\n"
           "      side; ratios: the median of same-round ratios (in brackets the ratio of\n"
           "      the medians)\n",
           ROUNDS, n_round);
    printf("    %-22s %10s %10s %12s %18s\n", "client", "median/s", "best/s", "client cpu",
           "X/this");
    for (int i = 0; i < NSIDE; i++) {
        const phase *p = &g->ph[i];
        char m[32], b[32], ratio[40] = "";
        /* The semaphore against the plain lock and redis-semaphore; the
         * read and write locks against the plain lock. */
        int x = i == READ || i == WRITE ? i : SEM, y = x == SEM ? i : PLAIN;
        bench_fmt_rate(m, sizeof m, rate_q(p, 0.5));
        bench_fmt_rate(b, sizeof b, rate_q(p, 1));
        if (i != SEM)
            snprintf(ratio, sizeof ratio, "%.2fx (%.2fx)", speed_ratio(g, x, y),
                     rate_q(&g->ph[x], 0.5) / rate_q(&g->ph[y], 0.5));
        printf("    %-22s %10s %10s %9.1f us %18s\n", side_label[i], m, b,
               med(p->cpu) / (double)n_round * 1e6, ratio);
    }
    printf("    (X/this: the semaphore's over the plain lock's and redis-semaphore's;\n"
           "    the read and the write lock's over the plain lock's)\n");

    printf("\n   2. server time per cycle, same rounds: the top-level commands' time (INFO\n"
           "      commandstats; a script call's time includes its own calls) and the\n"
           "      server's CPU (INFO cpu), medians of the rounds; the last two columns\n"
           "      X's over this side's, same-round ratios (X as in 1.)\n");
    printf("    %-22s %10s %10s %10s %10s\n", "client", "top us", "cpu us", "top", "cpu");
    for (int i = 0; i < NSIDE; i++) {
        const phase *p = &g->ph[i];
        char r1[16] = "", r2[16] = "";
        int x = i == READ || i == WRITE ? i : SEM, y = x == SEM ? i : PLAIN;
        if (i != SEM) {
            snprintf(r1, sizeof r1, "%.2fx", srv_ratio(g, x, y));
            snprintf(r2, sizeof r2, "%.2fx", srv_cpu_ratio(g, x, y));
        }
        printf("    %-22s %10.2f %10.2f %10s %10s\n", side_label[i], med(p->srv_us),
               med(p->srv_cpu_us), r1, r2);
        long long d = (long long)n_round * ROUNDS;
        int col = printf("     ");
        for (int inner = 0; inner < 2; inner++)
            for (int j = 0; j < p->ncmd; j++) {
                const cmdstat *c = &p->cmd[j];
                if (is_top_level(i, c->name) == inner) continue;
                if (col > 64) col = printf("\n     ") - 1;
                col += printf(" %s%s %.2f x %.2f us", c->name, inner ? "*" : "",
                              (double)c->calls / (double)d, c->calls ? c->usec / (double)c->calls : 0);
            }
        printf("\n");
    }
    printf("    (per command: calls per cycle x us per call; *: a script's own call,\n"
           "    within the script's time)\n");
    double target = srv_ratio(g, SEM, PLAIN);
    printf("    target: the semaphore's server time per cycle <= %.0fx the plain lock's:\n"
           "    %.2fx (%.2f / %.2f us, medians): %s\n",
           TARGET, target, med(g->ph[SEM].srv_us), med(g->ph[PLAIN].srv_us),
           target <= TARGET ? "met" : "not met");
    /* What bounds it: two script calls a cycle, and their own commands. */
    const char *how;
    g->null_us = null_script_us(admin, &how);
    double inner = 0;
    for (int j = 0; j < g->ph[SEM].ncmd; j++)
        if (!is_top_level(SEM, g->ph[SEM].cmd[j].name))
            inner += g->ph[SEM].cmd[j].usec / ((double)n_round * ROUNDS);
    g->floor_ratio = (2 * g->null_us + inner) / med(g->ph[PLAIN].srv_us);
    printf("    what bounds it: a script call with no work (%s, %d calls)\n"
           "    costs %.2f us here; the semaphore's cycle is two script calls whose own\n"
           "    commands took %.2f us (the starred rows): %.2f us, %.2fx the plain lock's,\n"
           "    with no other work in its scripts.  The other %.2f us are the scripts'\n"
           "    Lua and each redis.call's cost beyond its command's own time.\n",
           how, NULL_CALLS, g->null_us, inner, 2 * g->null_us + inner, g->floor_ratio,
           med(g->ph[SEM].srv_us) - (2 * g->null_us + inner));

    rlk_wake(cl, wcl, &g->wk[0]);
    rs_wake(&g->wk[1]);
    printf("\n   3. release to wake, %d trials each (ms): %d holders of a permit each hold\n"
           "      all %d, one releases, the waiter's acquire returns\n",
           n_wake, PERMITS, PERMITS);
    printf("    %-52s %8s %8s %8s\n", "waiter", "median", "p90", "max");
    static const char *const wl[2] = {"resplock rlk_sem_acquire (woken by the release)",
                                      "redis-semaphore acquire() (polls every 10 ms)"};
    for (int i = 0; i < 2; i++)
        printf("    %-52s %8.3f %8.3f %8.3f\n", wl[i], wake_q(&g->wk[i], 0.5) / 1e3,
               wake_q(&g->wk[i], 0.9) / 1e3, wake_q(&g->wk[i], 1) / 1e3);
    /* each trial slower than WAKE_SLOW_US, listed (redis-semaphore's
     * slice is 10 ms; resplock's recheck, 1 s by default, would find a
     * permit that no message told of) */
    for (int i = 0; i < 2; i++)
        for (int t = 0; t < g->wk[i].n; t++)
            if (g->wk[i].us[t] > WAKE_SLOW_US)
                printf("    slow: %s, trial %d of %d: %.3f ms\n",
                       i == 0 ? "resplock" : "redis-semaphore", t + 1, g->wk[i].n,
                       g->wk[i].us[t] / 1e3);
    printf("\n");
}

int main(void)
{
    int64_t t_start = bench_now_ns();
    signal(SIGPIPE, SIG_IGN);
    srand((unsigned)t_start);
    const char *ne = getenv("RLK_BENCH_SEM_N");
    if (ne && *ne) n_total = atol(ne);
    const char *we = getenv("RLK_BENCH_SEM_WAKE");
    if (we && *we) n_wake = atoi(we);
    if (n_total < ROUNDS || n_wake < 1 || n_wake > WAKE_MAX) {
        fprintf(stderr,
                "bench_sem: RLK_BENCH_SEM_N must be at least %d, RLK_BENCH_SEM_WAKE 1 to %d\n",
                ROUNDS, WAKE_MAX);
        return 2;
    }
    n_round = n_total / ROUNDS;
    server = ts_start(NULL);
    if (!server) die("cannot start redis-server");
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", server->port);
    rlk_conn *admin = admin_conn();
    server_facts(admin);
    node_start(&node);
    char why[600];
    rlk_client *cl = bench_client(url, why, sizeof why);
    if (!cl) die(why);
    rlk_client *wcl = bench_client(url, why, sizeof why);
    if (!wcl) die(why);
    char load0[64];
    bench_loadavg(load0, sizeof load0);
    const rlk_conn_info *ci = rlk_client_info(cl);

    printf("resplock semaphore benchmark on %s %s: resplock %s against\n"
           "redis-semaphore %s (its Semaphore, ioredis %s, node %s)\n"
           "server: %s %s on 127.0.0.1:%d, started by this program; %ld CPUs online,\n"
           "load average %s at the start.  resplock speaks RESP%d, ioredis RESP2.\n\n",
           srv_name, srv_version, RLK_VERSION, node.rs_version, node.ioredis_version,
           node.node_version, srv_name, srv_version, server->port,
           sysconf(_SC_NPROCESSORS_ONLN), load0, ci && ci->protocol == 3 ? 3 : 2);
    printf("1. Uncontended acquire + release cycles per second, one connection each, one\n"
           "   cycle after the other: resplock's plain lock (rlk_lock_acquire wait 0, TTL\n"
           "   30 s, rlk_lock_release), resplock's semaphore (rlk_sem_acquire k 1 of\n"
           "   permits %d, wait 0, TTL 30 s, rlk_sem_release) and redis-semaphore's (new\n"
           "   Semaphore(client, key, %d), await acquire(), await release()).  %d rounds\n"
           "   of %ld cycles per side after %d of warm-up, the sides taking turns first;\n"
           "   every cycle checked.  And resplock's read-write lock beside the plain\n"
           "   lock: a read hold, then a write hold (rlk_rw_acquire wait 0, TTL 30 s,\n"
           "   rlk_rw_release).\n\n",
           PERMITS, PERMITS, ROUNDS, n_round, WARMUP);
    printf("2. Server time per cycle in those rounds: the top-level commands' time by INFO\n"
           "   commandstats after CONFIG RESETSTAT (those the client sends itself, a\n"
           "   script call's time including its own calls: the plain lock SET NX PX,\n"
           "   HGET and TIME pipelined, then its release script; the semaphore and\n"
           "   the read-write lock a script each way; redis-semaphore its acquire\n"
           "   script and ZREM; their counts checked per round), and the server's CPU\n"
           "   by INFO cpu before and after.\n"
           "   Target: the semaphore's <= %.0fx the plain lock's (same-round ratios).\n\n",
           TARGET);
    printf("3. Release to wake: each library timed within its own process, on its own\n"
           "   monotonic clock, from just before the holder's release call to the\n"
           "   waiter's acquire returning; the waiter asks once it waits (resplock: once\n"
           "   the line counts it) and 20 to 40 ms more, at random.  resplock's waiter\n"
           "   (a thread with its own client, wait_ms %d) is woken by the release's\n"
           "   message; redis-semaphore's (a second connection) tries again every 10 ms.\n\n",
           WAKE_WAIT_MS);

    regime g[2];
    int ng = 0, a = 0, b = 1;
    memset(g, 0, sizeof g);
    const char *pe = getenv("RLK_BENCH_PIN");
    if (pe && strcmp(pe, "0") == 0) {
        g[ng++] = (regime){.title = "unpinned", .server_cpu = -1, .client_cpu = -1};
    } else if (bench_two_cpus(&a, &b)) {
        g[ng++] = (regime){.title = "same CPU", .server_cpu = a, .client_cpu = a};
        g[ng++] = (regime){.title = "separate CPUs", .server_cpu = a, .client_cpu = b};
    } else {
        g[ng++] = (regime){.title = "same CPU", .server_cpu = a, .client_cpu = a};
    }
    int met = 1;
    for (int i = 0; i < ng; i++) {
        run_regime(&g[i], admin, cl, wcl);
        if (srv_ratio(&g[i], SEM, PLAIN) > TARGET) met = 0;
    }

    char load1[64];
    bench_loadavg(load1, sizeof load1);
    printf("Target (semaphore's server time per cycle <= %.0fx the plain lock's, in every\n"
           "placement): %s.\n",
           TARGET, met ? "met" : "not met");
    printf("Load average at the end: %s (other work on the machine moves the numbers).\n", load1);
    printf("Total time %.1f s.\n\n", (double)(bench_now_ns() - t_start) * 1e-9);

    /* One line of the key figures: key=value, placements by prefix. */
    printf("summary: server=%s-%s redis_semaphore=%s ioredis=%s load_start=%.4s load_end=%.4s",
           srv_name, srv_version, node.rs_version, node.ioredis_version, load0, load1);
    for (int i = 0; i < ng; i++) {
        const regime *x = &g[i];
        const char *pl = x->server_cpu < 0 ? "unpinned"
                         : x->server_cpu == x->client_cpu ? "same" : "separate";
        for (int s = 0; s < NSIDE; s++)
            printf(" %s.%s_per_s=%.0f %s.%s_srv_us=%.2f", pl, side_key[s], rate_q(&x->ph[s], 0.5),
                   pl, side_key[s], med(x->ph[s].srv_us));
        printf(" %s.sem_vs_plain=%.2f %s.sem_vs_rs=%.2f %s.srv_sem_over_plain=%.2f"
               " %s.srv_sem_over_rs=%.2f %s.null_script_us=%.2f %s.floor_over_plain=%.2f",
               pl, speed_ratio(x, SEM, PLAIN), pl, speed_ratio(x, SEM, RS), pl,
               srv_ratio(x, SEM, PLAIN), pl, srv_ratio(x, SEM, RS), pl, x->null_us, pl,
               x->floor_ratio);
        printf(" %s.wake_rlk_ms=%.3f %s.wake_rlk_p90_ms=%.3f %s.wake_rs_ms=%.3f"
               " %s.wake_rs_p90_ms=%.3f",
               pl, wake_q(&x->wk[0], 0.5) / 1e3, pl, wake_q(&x->wk[0], 0.9) / 1e3, pl,
               wake_q(&x->wk[1], 0.5) / 1e3, pl, wake_q(&x->wk[1], 0.9) / 1e3);
    }
    printf(" target=%.0f target_met=%s\n", TARGET, met ? "yes" : "no");

    node_stop(&node);
    rlk_client_free(wcl);
    rlk_client_free(cl);
    rlk_conn_free(admin);
    ts_stop(server);
    return 0;
}
