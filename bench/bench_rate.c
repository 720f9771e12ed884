/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rate-limiter benchmark: resplock's rlk_rate_take (GCRA on the server's
 * clock, src/lua/rate.lua) beside rate-limiter-flexible's
 * RateLimiterRedis (a fixed window: its script SET NX EX, INCRBY, PTTL),
 * in one run, on one local server that this program starts on a free
 * loopback port (tests/server.c: $RLK_REDIS_SERVER, else redis-server on
 * PATH) and stops at the end.  `make bench-rate` installs
 * rate-limiter-flexible 11 and ioredis 5 with npm (into the build's
 * bench/node-rlf), builds this and runs it.
 *
 * rate-limiter-flexible runs in a node process (bench/bench_rate.js: one
 * ioredis connection, its default store client), driven over lines on
 * its stdin and stdout; resplock in this process, one client.  Each
 * side's work is sequential: one decision, its answer, the next.
 *
 *   1. decisions per second: allowed decisions (a limiter whose rate is
 *      far above the demand: every decision allowed) and refused ones (a
 *      limiter of one token per hour, taken before: every decision
 *      refused, each still a round trip to the server); ROUNDS rounds of
 *      N / ROUNDS decisions per side and kind, the sides alternating
 *      first, after a warm-up; the median of the rounds' rates, and the
 *      median of the same-round ratios resplock / rate-limiter-flexible.
 *      Every decision is checked: one the other way ends the run.
 *   2. server time per decision, in the same rounds: INFO commandstats
 *      after CONFIG RESETSTAT (the script calls are the top-level
 *      commands; the commands counted beside them are the scripts' own
 *      calls, within the scripts' time), and the server's CPU (INFO cpu:
 *      used_cpu_sys + used_cpu_user, before and after).  The script calls
 *      must be one per decision, or the run stops.
 *   3. accuracy at a window's edge, once: 10 decisions per second, a
 *      fixed window of rate-limiter-flexible (points 10, duration 1)
 *      against resplock's GCRA (count 10, period 1000 ms) with burst 1
 *      and with burst 10.  Each limiter is opened by one decision, at T;
 *      the window's edge is T + 1 s (the key's expiry, which the script
 *      sets).  From 100 ms before the edge a steady demand of one
 *      decision every 5 ms (200 a second: 20 times the rate), paced by
 *      the monotonic clock, runs for 3 s.  Each admitted decision is
 *      stamped with the midpoint of its call (CLOCK_MONOTONIC: the
 *      server decided between the two stamps); printed: those admitted in
 *      the 200 ms straddling the edge, and the most admitted in any 1 s
 *      span (the opener included), beside the bound each algorithm
 *      claims.  resplock's limiters get the same schedule, their "edge"
 *      being a second after their opener's decision too.
 *
 * Where the processes run changes a loopback round trip several times
 * over; as bench_lock does, 1. and 2. run twice, pinned: the server and
 * both clients on one CPU, then the server on one and the clients on the
 * other.  3. runs once, in the first placement.  RLK_BENCH_PIN=0 runs
 * once, unpinned.  RLK_BENCH_RATE_N sets N (default 20,000).
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

#ifndef BENCH_RATE_JS
#define BENCH_RATE_JS "bench/bench_rate.js"
#endif
#ifndef BENCH_RLF_DIR
#define BENCH_RLF_DIR "bench/node-rlf"
#endif

#define ROUNDS 5
#define WARMUP 2000
#define MAXCMD 16            /* commands of one phase told apart            */

/* The edge (3.) */
#define EDGE_POINTS 10       /* per period                                  */
#define EDGE_PERIOD_MS 1000  /* rlf's duration 1 s                          */
#define EDGE_LEAD_MS 100     /* the demand starts this long before the edge */
#define EDGE_LENGTH_MS 3000  /* ... and runs this long                      */
#define EDGE_STEP_US 5000    /* one decision every 5 ms                     */
#define EDGE_NEAR_MS 100     /* the span straddling the edge: 100 ms a side */
#define EDGE_MAX (EDGE_LENGTH_MS * 1000 / EDGE_STEP_US + 2)

enum { RLK, RLF, NSIDE };
enum { ALLOWED, REFUSED, NKIND };
static const char *const side_label[NSIDE] = {"resplock rlk_rate_take", "rlf consume()"};
static const char *const kind_name[NKIND] = {"allowed", "refused"};

static ts_server *server;
static char url[64];
static long n_total = 20000, n_round;

static void die(const char *what)
{
    fprintf(stderr, "bench_rate: %s\n", what);
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

/* Every command INFO commandstats names but INFO and CONFIG. */
static int cmdstats_all(rlk_conn *c, cmdstat *out, int cap)
{
    const char *why = "";
    int n = bench_cmdstats_all(c, out, cap, &why);
    if (n < 0) die2("INFO commandstats", why);
    return n;
}

/* ------------------------------------------------------------------ */
/* rate-limiter-flexible, in a node process                            */

typedef struct nodeproc {
    bench_node p;
    char rlf_version[32], ioredis_version[32], node_version[32];
} nodeproc;

static nodeproc node;

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Starts bench_rate.js (node from $RLK_NODE, else node on PATH; the
 * script $RLK_BENCH_RATE_JS; its modules under $RLK_BENCH_RLF_DIR, where
 * npm installed them) and reads its "ready" line. */
static void node_start(nodeproc *np)
{
    const char *prog = env_or("RLK_NODE", "node"), *js = env_or("RLK_BENCH_RATE_JS", BENCH_RATE_JS);
    const char *dir = env_or("RLK_BENCH_RLF_DIR", BENCH_RLF_DIR);
    char modules[600], probe[700], line[256], why[200];
    snprintf(modules, sizeof modules, "%s/node_modules", dir);
    snprintf(probe, sizeof probe, "%s/rate-limiter-flexible/package.json", modules);
    if (access(probe, R_OK) != 0)
        die2("rate-limiter-flexible is not installed (make bench-rate installs it with npm)", probe);
    if (bench_node_start(&np->p, prog, js, modules, server->port, line, sizeof line, why,
                         sizeof why) != 0)
        die(why);
    if (sscanf(line, "ready %31s %31s %31s", np->rlf_version, np->ioredis_version,
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
/* 1. and 2.: decisions, and their server time                         */

static const char rlk_allowed_name[] = "bench:allowed", rlk_refused_name[] = "bench:refused";

static void rate_opts(rlk_rate_options *o, int64_t count, int64_t period_ms, int64_t burst)
{
    rlk_rate_options_init(o);
    o->count = count;
    o->period_ms = period_ms;
    o->burst = burst;
}

/* n decisions of resplock on the kind's limiter, each checked. */
static void rlk_decide(rlk_client *cl, int kind, long n, double *secs, double *cpu)
{
    rlk_rate_options o;
    /* allowed: 10^6 a second, as many at once (no demand here reaches
     * it); refused: one an hour, taken at the start */
    if (kind == ALLOWED) rate_opts(&o, 1000000, 1000, 1000000);
    else rate_opts(&o, 1, 3600000, 1);
    const char *name = kind == ALLOWED ? rlk_allowed_name : rlk_refused_name;
    rlk_rate_result res;
    double c0 = bench_cpu_now();
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        int rc = rlk_rate_take(cl, name, &o, &res);
        if (kind == ALLOWED ? rc != RLK_OK || !res.allowed : rc != RLK_RATE_LIMITED) {
            if (rc != RLK_OK && rc != RLK_RATE_LIMITED)
                die2("rlk_rate_take", rlk_client_errmsg(cl));
            die(kind == ALLOWED ? "resplock: an allowed decision was refused"
                                : "resplock: a refused decision was allowed");
        }
    }
    *secs = (double)(bench_now_ns() - t0) * 1e-9;
    *cpu = bench_cpu_now() - c0;
}

static void rlf_decide(int kind, long n, double *secs, double *cpu)
{
    char line[128];
    fprintf(node.p.in, "decide %s %ld\n", kind_name[kind], n);
    fflush(node.p.in);
    node_line(&node, line, sizeof line);
    if (sscanf(line, "%lf %lf", secs, cpu) != 2) die2("rlf: unexpected answer", line);
}

typedef struct phase {
    double secs[ROUNDS], cpu[ROUNDS];   /* wall and client CPU of a round    */
    double srv_us[ROUNDS];              /* script time per decision (INFO)    */
    double srv_cpu_us[ROUNDS];          /* server CPU per decision (INFO cpu) */
    cmdstat cmd[MAXCMD];                /* over every round                   */
    int ncmd;
} phase;

typedef struct regime {
    const char *title;
    int server_cpu, client_cpu;         /* -1: not pinned                    */
    phase ph[NKIND][NSIDE];
} regime;

static void phase_add(phase *p, int r, const cmdstat *cs, int n, long decisions)
{
    long long scripts = 0;
    double usec = 0;
    for (int i = 0; i < n; i++) {
        if (!cs[i].calls) continue;
        if (bench_is_script_call(cs[i].name)) {
            scripts += cs[i].calls;
            usec += cs[i].usec;
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
    if (scripts != decisions) {
        char msg[200];
        snprintf(msg, sizeof msg, "%lld script calls for %ld decisions: not one call a decision",
                 scripts, decisions);
        die(msg);
    }
    p->srv_us[r] = usec / (double)decisions;
}

/* One round of one side and kind, with the server's statistics. */
static void run_phase(rlk_conn *admin, rlk_client *cl, int side, int kind, phase *p, int r)
{
    const char *why;
    double c0 = server_cpu(admin);
    if (bench_reset_stats(admin, &why) != 0) die2("CONFIG RESETSTAT", why);
    if (side == RLK) rlk_decide(cl, kind, n_round, &p->secs[r], &p->cpu[r]);
    else rlf_decide(kind, n_round, &p->secs[r], &p->cpu[r]);
    double c1 = server_cpu(admin);
    cmdstat cs[MAXCMD];
    int n = cmdstats_all(admin, cs, MAXCMD);
    phase_add(p, r, cs, n, n_round);
    p->srv_cpu_us[r] = (c1 - c0) * 1e6 / (double)n_round;
}

static double rate_med(const phase *p)
{
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) v[r] = (double)n_round / p->secs[r];
    return bench_quantile(v, ROUNDS, 0.5);
}

static double rate_best(const phase *p)
{
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) v[r] = (double)n_round / p->secs[r];
    return bench_quantile(v, ROUNDS, 1);
}

/* The median over rounds of a[r] / b[r]. */
static double paired(const double *a, const double *b)
{
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) v[r] = a[r] / b[r];
    return bench_quantile(v, ROUNDS, 0.5);
}

/* resplock's rate over rlf's: the inverse of their times. */
static double speed_ratio(const regime *g, int kind)
{
    return paired(g->ph[kind][RLF].secs, g->ph[kind][RLK].secs);
}

static double srv_ratio(const regime *g, int kind)
{
    return paired(g->ph[kind][RLK].srv_us, g->ph[kind][RLF].srv_us);
}

static double srv_cpu_ratio(const regime *g, int kind)
{
    return paired(g->ph[kind][RLK].srv_cpu_us, g->ph[kind][RLF].srv_cpu_us);
}

static double med(const double *v) { return bench_quantile(v, ROUNDS, 0.5); }

static void run_regime(regime *g, rlk_conn *admin, rlk_client *cl)
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
    for (int k = 0; k < NKIND; k++) {
        rlk_decide(cl, k, WARMUP, &s, &u);
        rlf_decide(k, WARMUP, &s, &u);
    }
    memset(g->ph, 0, sizeof g->ph);
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < NKIND; k++)
            for (int i = 0; i < NSIDE; i++) {
                int side = (i + r + k) % NSIDE;
                run_phase(admin, cl, side, k, &g->ph[k][side], r);
            }

    printf("   1. decisions per second, %d rounds of %ld per side and kind; resplock/rlf:\n"
           "      the median of same-round ratios (in brackets the ratio of the medians)\n",
           ROUNDS, n_round);
    printf("    %-8s %-24s %10s %10s %12s %16s\n", "decision", "client", "median/s", "best/s",
           "client cpu", "resplock/rlf");
    for (int k = 0; k < NKIND; k++)
        for (int i = 0; i < NSIDE; i++) {
            const phase *p = &g->ph[k][i];
            char m[32], b[32], ratio[32] = "";
            bench_fmt_rate(m, sizeof m, rate_med(p));
            bench_fmt_rate(b, sizeof b, rate_best(p));
            if (i == RLK)
                snprintf(ratio, sizeof ratio, "%.2fx (%.2fx)", speed_ratio(g, k),
                         rate_med(p) / rate_med(&g->ph[k][RLF]));
            printf("    %-8s %-24s %10s %10s %9.1f us %16s\n", i == 0 ? kind_name[k] : "",
                   side_label[i], m, b, med(p->cpu) / (double)n_round * 1e6, ratio);
        }
    printf("\n   2. server time per decision, same rounds: the script calls' time (INFO\n"
           "      commandstats) and the server's CPU (INFO cpu), medians of the rounds;\n"
           "      the last two columns resplock/rlf, same-round ratios\n");
    printf("    %-8s %-24s %10s %10s %10s %10s\n", "decision", "client", "script us",
           "cpu us", "script", "cpu");
    for (int k = 0; k < NKIND; k++)
        for (int i = 0; i < NSIDE; i++) {
            const phase *p = &g->ph[k][i];
            char r1[16] = "", r2[16] = "";
            if (i == RLK) {
                snprintf(r1, sizeof r1, "%.2fx", srv_ratio(g, k));
                snprintf(r2, sizeof r2, "%.2fx", srv_cpu_ratio(g, k));
            }
            printf("    %-8s %-24s %10.2f %10.2f %10s %10s\n", i == 0 ? kind_name[k] : "",
                   side_label[i], med(p->srv_us), med(p->srv_cpu_us), r1, r2);
            /* the script call first, then its own calls */
            long long d = (long long)n_round * ROUNDS;
            int col = printf("     ");
            for (int inner = 0; inner < 2; inner++)
                for (int j = 0; j < p->ncmd; j++) {
                    const cmdstat *c = &p->cmd[j];
                    if (bench_is_script_call(c->name) == inner) continue;
                    if (col > 64) col = printf("\n     ") - 1;
                    col += printf(" %s%s %.2f x %.2f us", c->name, inner ? "*" : "",
                                  (double)c->calls / (double)d,
                                  c->calls ? c->usec / (double)c->calls : 0);
                }
            printf("\n");
        }
    printf("    (per command: calls per decision x us per call; *: the script's own call)\n\n");
}

/* ------------------------------------------------------------------ */
/* 3.: a window's edge                                                  */

typedef struct edgerun {
    const char *label;
    double t_us[EDGE_MAX];   /* admitted, from the edge (the opener's too) */
    int n, attempts;
    int near, most;          /* in the span straddling the edge; in 1 s   */
    int bound_near, bound_most;
} edgerun;

/* One decision of resplock: whether admitted, the midpoint of its call. */
static int rlk_attempt(rlk_client *cl, const char *name, const rlk_rate_options *o, int64_t *mid)
{
    rlk_rate_result res;
    int64_t a = bench_now_ns();
    int rc = rlk_rate_take(cl, name, o, &res);
    *mid = a + (bench_now_ns() - a) / 2;
    if (rc != RLK_OK && rc != RLK_RATE_LIMITED) die2("rlk_rate_take", rlk_client_errmsg(cl));
    return rc == RLK_OK;
}

static void edge_rlk(rlk_client *cl, int64_t burst, edgerun *e)
{
    char name[64];
    snprintf(name, sizeof name, "bench:edge:burst%lld", (long long)burst);
    rlk_rate_options o;
    rate_opts(&o, EDGE_POINTS, EDGE_PERIOD_MS, burst);
    int64_t at;
    if (!rlk_attempt(cl, name, &o, &at)) die("edge: resplock's opener was refused");
    int64_t edge = at + (int64_t)EDGE_PERIOD_MS * 1000000;
    int64_t start = edge - (int64_t)EDGE_LEAD_MS * 1000000;
    e->n = 0;
    e->t_us[e->n++] = (double)(at - edge) / 1e3;
    e->attempts = EDGE_LENGTH_MS * 1000 / EDGE_STEP_US;
    for (int i = 0; i < e->attempts; i++) {
        int64_t due = start + (int64_t)i * EDGE_STEP_US * 1000;
        struct timespec ts = {(time_t)(due / 1000000000), (long)(due % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        int64_t t;
        if (rlk_attempt(cl, name, &o, &t) && e->n < EDGE_MAX)
            e->t_us[e->n++] = (double)(t - edge) / 1e3;
    }
}

static void edge_rlf(edgerun *e)
{
    char line[128];
    fprintf(node.p.in, "edge %d %d %d %d %d\n", EDGE_POINTS, EDGE_PERIOD_MS / 1000, EDGE_LEAD_MS,
            EDGE_LENGTH_MS, EDGE_STEP_US);
    fflush(node.p.in);
    e->n = 0;
    for (;;) {
        node_line(&node, line, sizeof line);
        if (sscanf(line, "end %d", &e->attempts) == 1) break;
        if (e->n == EDGE_MAX || sscanf(line, "a %lf", &e->t_us[e->n]) != 1)
            die2("rlf: edge: unexpected answer", line);
        e->n++;
    }
}

static void edge_counts(edgerun *e)
{
    e->near = e->most = 0;
    for (int i = 0; i < e->n; i++) {
        if (e->t_us[i] >= -EDGE_NEAR_MS * 1e3 && e->t_us[i] < EDGE_NEAR_MS * 1e3) e->near++;
        int k = 0;
        for (int j = i; j < e->n && e->t_us[j] < e->t_us[i] + EDGE_PERIOD_MS * 1e3; j++) k++;
        if (k > e->most) e->most = k;
    }
}

static void edge_print(const edgerun *e)
{
    printf("    %-44s %8d %8d %6d (%2d) %6d (%2d)\n", e->label, e->attempts, e->n, e->near,
           e->bound_near, e->most, e->bound_most);
}

/* The admitted decisions of e within the span straddling the edge, in
 * ms from it. */
static void edge_times(const edgerun *e)
{
    int col = printf("      %s:", e->label);
    for (int i = 0; i < e->n; i++) {
        if (e->t_us[i] < -EDGE_NEAR_MS * 1e3 || e->t_us[i] >= EDGE_NEAR_MS * 1e3) continue;
        if (col > 72) col = printf("\n       ") - 1;
        col += printf(" %+.1f", e->t_us[i] / 1e3);
    }
    printf("\n");
}

int main(void)
{
    int64_t t_start = bench_now_ns();
    signal(SIGPIPE, SIG_IGN);
    const char *ne = getenv("RLK_BENCH_RATE_N");
    if (ne && *ne) n_total = atol(ne);
    if (n_total < ROUNDS) {
        fprintf(stderr, "bench_rate: RLK_BENCH_RATE_N must be at least %d\n", ROUNDS);
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
    {
        /* the refusing limiter's one token */
        rlk_rate_options o;
        rlk_rate_result res;
        rate_opts(&o, 1, 3600000, 1);
        if (rlk_rate_take(cl, rlk_refused_name, &o, &res) != RLK_OK)
            die2("the refusing limiter", rlk_client_errmsg(cl));
    }
    char load0[64];
    bench_loadavg(load0, sizeof load0);
    const rlk_conn_info *ci = rlk_client_info(cl);

    printf("resplock rate-limiter benchmark on %s %s: resplock %s against\n"
           "rate-limiter-flexible %s (rlf: RateLimiterRedis, ioredis %s, node %s)\n"
           "server: %s %s on 127.0.0.1:%d, started by this program; %ld CPUs online,\n"
           "load average %s at the start.  resplock speaks RESP%d, ioredis RESP2.\n\n",
           srv_name, srv_version, RLK_VERSION, node.rlf_version, node.ioredis_version,
           node.node_version, srv_name, srv_version, server->port,
           sysconf(_SC_NPROCESSORS_ONLN), load0, ci && ci->protocol == 3 ? 3 : 2);
    printf("1. Decisions per second, one connection each, one decision after the other:\n"
           "   allowed (a limiter far above the demand: resplock count 10^6 per 1000 ms,\n"
           "   burst 10^6; rlf points 10^15, duration 3600) and refused (one per hour,\n"
           "   taken before: resplock count 1 per 3,600,000 ms, burst 1; rlf points 1,\n"
           "   duration 3600).  resplock: rlk_rate_take (wait 0); rlf: await consume(),\n"
           "   which resolves when allowed and rejects with a RateLimiterRes when refused.\n"
           "   %d rounds of %ld decisions per side and kind after %d of warm-up, the\n"
           "   sides alternating first; median and best round, the client's own CPU per\n"
           "   decision (median), and resplock/rlf the median of same-round ratios.\n\n",
           ROUNDS, n_round, WARMUP);
    printf("2. Server time per decision in those rounds: the script calls' time by INFO\n"
           "   commandstats after CONFIG RESETSTAT (the scripts' own calls are within\n"
           "   it), and the server's CPU by INFO cpu (used_cpu_sys + used_cpu_user)\n"
           "   before and after; resplock/rlf: same-round ratios (lower: less server).\n\n");
    printf("3. A window's edge: %d decisions per %d ms, rlf a fixed window (points %d,\n"
           "   duration %d s), resplock GCRA with burst 1 and burst %d.  Each limiter is\n"
           "   opened by one decision; its edge is %d ms later (rlf's key expires then).\n"
           "   From %d ms before the edge, one decision every %d ms for %d ms, paced by\n"
           "   the monotonic clock; each admitted decision stamped with its call's\n"
           "   midpoint.  Counted: admitted within %d ms either side of the edge, and\n"
           "   the most admitted in any %d ms (the opener included); in brackets the\n"
           "   algorithm's bound: a fixed window 2 x points in any span no longer than\n"
           "   its duration, GCRA burst + span x count / period.\n\n",
           EDGE_POINTS, EDGE_PERIOD_MS, EDGE_POINTS, EDGE_PERIOD_MS / 1000, EDGE_POINTS,
           EDGE_PERIOD_MS, EDGE_LEAD_MS, EDGE_STEP_US / 1000, EDGE_LENGTH_MS, EDGE_NEAR_MS,
           EDGE_PERIOD_MS);

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

    static edgerun e[3];
    for (int i = 0; i < ng; i++) {
        run_regime(&g[i], admin, cl);
        if (i != 0) continue;
        /* ---- 3., in the first placement */
        e[0] = (edgerun){.label = "rlf fixed window, points 10, duration 1 s",
                         .bound_near = 2 * EDGE_POINTS, .bound_most = 2 * EDGE_POINTS};
        e[1] = (edgerun){.label = "resplock GCRA 10/1000 ms, burst 1",
                         .bound_near = 1 + 2 * EDGE_NEAR_MS * EDGE_POINTS / EDGE_PERIOD_MS,
                         .bound_most = 1 + EDGE_POINTS};
        e[2] = (edgerun){.label = "resplock GCRA 10/1000 ms, burst 10",
                         .bound_near =
                             EDGE_POINTS + 2 * EDGE_NEAR_MS * EDGE_POINTS / EDGE_PERIOD_MS,
                         .bound_most = EDGE_POINTS + EDGE_POINTS};
        edge_rlf(&e[0]);
        edge_rlk(cl, 1, &e[1]);
        edge_rlk(cl, EDGE_POINTS, &e[2]);
        printf("   3. a window's edge (%s placement)\n", g[i].title);
        printf("    %-44s %8s %8s %11s %11s\n", "limiter", "attempts", "admitted", "edge+-100ms",
               "most in 1 s");
        for (int k = 0; k < 3; k++) {
            edge_counts(&e[k]);
            edge_print(&e[k]);
        }
        printf("    admitted within 100 ms of the edge (ms from it):\n");
        for (int k = 0; k < 3; k++) edge_times(&e[k]);
        printf("\n");
    }

    char load1[64];
    bench_loadavg(load1, sizeof load1);
    printf("Load average at the end: %s (other work on the machine moves the numbers).\n", load1);
    printf("Total time %.1f s.\n\n", (double)(bench_now_ns() - t_start) * 1e-9);

    /* One line of the key figures: key=value, placements by prefix. */
    printf("summary: server=%s-%s rlf=%s ioredis=%s", srv_name, srv_version, node.rlf_version,
           node.ioredis_version);
    for (int i = 0; i < ng; i++) {
        const regime *x = &g[i];
        const char *pl = x->server_cpu < 0 ? "unpinned"
                         : x->server_cpu == x->client_cpu ? "same" : "separate";
        for (int k = 0; k < NKIND; k++) {
            const char *kn = kind_name[k];
            printf(" %s.%s.rlk_per_s=%.0f %s.%s.rlf_per_s=%.0f %s.%s.ratio=%.2f", pl, kn,
                   rate_med(&x->ph[k][RLK]), pl, kn, rate_med(&x->ph[k][RLF]), pl, kn,
                   speed_ratio(x, k));
            printf(" %s.%s.rlk_srv_us=%.2f %s.%s.rlf_srv_us=%.2f %s.%s.srv_ratio=%.2f", pl, kn,
                   med(x->ph[k][RLK].srv_us), pl, kn, med(x->ph[k][RLF].srv_us), pl, kn,
                   srv_ratio(x, k));
            printf(" %s.%s.rlk_cpu_us=%.2f %s.%s.rlf_cpu_us=%.2f", pl, kn,
                   med(x->ph[k][RLK].srv_cpu_us), pl, kn, med(x->ph[k][RLF].srv_cpu_us));
        }
    }
    printf(" edge100.rlf=%d edge100.gcra_b1=%d edge100.gcra_b10=%d max1s.rlf=%d max1s.gcra_b1=%d"
           " max1s.gcra_b10=%d\n",
           e[0].near, e[1].near, e[2].near, e[0].most, e[1].most, e[2].most);

    node_stop(&node);
    rlk_client_free(cl);
    rlk_conn_free(admin);
    ts_stop(server);
    return 0;
}
