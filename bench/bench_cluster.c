/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Cluster benchmark: resplock's locks on one redis-server against the
 * same locks on a real Redis Cluster of 3 primaries and 3 replicas, in
 * one run.  This program starts both on free loopback ports
 * (tests/server.c, tests/cluster.c) and stops them at the end.
 * `make bench-cluster` builds and runs it.
 *
 * Three workloads, each measured on both targets in alternating rounds,
 * the ratio being the median of the same-round ratios (the two ran next
 * to each other, so a busy stretch of the machine weighs on both):
 *
 *   1. uncontended   acquire + release cycles of one client on one free
 *                    lock: rlk_lock_acquire (wait 0, TTL 30 s) +
 *                    rlk_lock_release.  On the cluster the client is
 *                    given one node's URL (the seed) and the lock's slot
 *                    is served by another primary: the library finds the
 *                    owner by itself.
 *   2. server time   the server's own time per cycle: INFO commandstats
 *                    after CONFIG RESETSTAT on the node that served the
 *                    cycles, summed over the commands a cycle sends (SET,
 *                    HGET, TIME and the release's FCALL or EVALSHA; a
 *                    script's inner calls are inside its caller's time).
 *                    The calls are counted: one of each per cycle, or the
 *                    run stops.  The cluster's replica of that primary
 *                    applies the writes too: its time is printed beside,
 *                    out of the ratio.
 *   3. aggregate     K client threads (one rlk_client each), each cycling
 *                    over names of its own, one name per primary of the
 *                    cluster, for a fixed time: the cycles/s of all
 *                    together, on the cluster (every client seeded with
 *                    the same node) and with the same names on the one
 *                    server.  The CPU time of the clients and of every
 *                    server process per cycle is printed beside it, with
 *                    how busy that kept the machine's CPUs: the cluster
 *                    spreads the server's work over three processes, but
 *                    the machine's CPUs are shared by all of them and the
 *                    clients.
 *
 * Placement: in 1 and 2 the servers (all six nodes of the cluster, or the
 * one server) are pinned to one CPU and this program to another, as on
 * two machines, when the program may run on two CPUs (otherwise, or with
 * RLK_BENCH_PIN=0, nothing is pinned).  In 3 nothing is pinned: every
 * process may run on every CPU, since the point is the capacity of the
 * whole machine.
 *
 * Before the cluster workloads the program checks that the library routes
 * by itself: the seed's HELLO says mode "cluster", and a lock whose slot
 * the seed does not serve is acquired and released through the seed.
 *
 * Every reply is checked (an acquire of a free lock that does not
 * acquire stops the run); speed is printed, never judged.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* sched_setaffinity, in pin.h */
#endif
#include "resplock.h"
#include "cluster.h"
#include "keys.h"
#include "pin.h"
#include "server.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UNC_ROUNDS 11     /* rounds of the uncontended workload, per target */
#define UNC_OPS 2000      /* cycles per round                               */
#define UNC_WARMUP 1000
#define SRV_ROUNDS 5      /* rounds of the server-time workload, per target */
#define SRV_OPS 4000
#ifndef AGG_THREADS
#define AGG_THREADS 6     /* K: client threads, two per primary             */
#endif
#define AGG_ROUNDS 3      /* rounds of the aggregate workload, per target   */
#define AGG_WARMUP_MS 300 /* each round's start, not counted                */
#define AGG_MS 3000       /* each round's measured time                     */
#define MAX_ROUNDS BENCH_MAX_ROUNDS
#define PRIMARIES 3

static const char unc_base[] = "resplock:bench:cluster:uncontended";

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

#define now_ns bench_now_ns
#define cpu_now bench_cpu_now
#define quantile bench_quantile
#define fmt_rate bench_fmt_rate
#define proc_cpu bench_proc_cpu

static ts_server *one;       /* the one server  */
static tc_cluster *cluster;  /* the cluster     */

static void die(const char *what)
{
    fprintf(stderr, "bench_cluster: %s\n", what);
    tc_stop(cluster);
    ts_stop(one);
    exit(1);
}

static void die2(const char *what, const char *why)
{
    char msg[700];
    snprintf(msg, sizeof msg, "%s: %s", what, why);
    die(msg);
}

static void node_url(int port, char *out, size_t n)
{
    snprintf(out, n, "redis://127.0.0.1:%d", port);
}

static rlk_client *new_client(const char *u)
{
    char why[600];
    rlk_client *cl = bench_client(u, why, sizeof why);
    if (!cl) die(why);
    return cl;
}

#define cycle bench_cycle

static void cycles(rlk_client *cl, const char *name, long n)
{
    for (long i = 0; i < n; i++)
        if (cycle(cl, name) != RLK_OK) die2(name, rlk_client_errmsg(cl));
}

/* A connection of the library to port, for INFO and CONFIG. */
static rlk_conn *admin_conn(int port)
{
    char u[64];
    rlk_conn_config icfg;
    rlk_conn_config_init(&icfg);
    node_url(port, u, sizeof u);
    icfg.url = u;
    rlk_conn *c = rlk_conn_new(&icfg);
    if (!c || rlk_conn_connect(c) != RLK_OK) die("INFO connection");
    return c;
}

/* ------------------------------------------------------------------ */
/* Where the names are                                                  */

static unsigned slot_of(const char *name)
{
    return rlk__keyslot(name, strlen(name));
}

/* The primaries of the cluster, in node order. */
static int primary[PRIMARIES];

/* Which of primary[] serves slot (-1: none of them). */
static int primary_index(unsigned slot)
{
    int owner = tc_owner(cluster, slot);
    for (int p = 0; p < PRIMARIES; p++)
        if (primary[p] == owner) return p;
    return -1;
}

/* base:N with the smallest N from *next on whose slot primary p serves,
 * into out; *next moves past it. */
static void name_on(int p, const char *base, int *next, char *out, size_t cap)
{
    for (int tries = 0; tries < 1000; tries++, (*next)++) {
        snprintf(out, cap, "%s:%d", base, *next);
        if (primary_index(slot_of(out)) == p) {
            (*next)++;
            return;
        }
    }
    die("no name found on a primary (is the cluster's slot table as expected?)");
}

/* ------------------------------------------------------------------ */
/* Placement                                                            */

static cpu_set_t all_cpus;  /* what this program may run on, at the start */
static int pinning;         /* 1 and 2 pinned                             */
static int cpu_srv, cpu_cli;

static void set_mask(pid_t pid, const cpu_set_t *set)
{
    if (pid == 0) {
        sched_setaffinity(0, sizeof *set, set);
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') sched_setaffinity(atoi(e->d_name), sizeof *set, set);
    closedir(d);
}

/* Every server process on cpu_srv and this thread on cpu_cli (pinned),
 * or every one of them free on all_cpus. */
static void place(int pinned)
{
    pid_t pids[1 + TC_NODES];
    int n = 0;
    pids[n++] = one->pid;
    for (int i = 0; i < TC_NODES; i++) pids[n++] = cluster->node[i].srv->pid;
    for (int i = 0; i < n; i++) {
        if (!pinned) set_mask(pids[i], &all_cpus);
        else if (bench_pin(pids[i], cpu_srv) != 0) die2("sched_setaffinity", strerror(errno));
    }
    if (!pinned) set_mask(0, &all_cpus);
    else if (bench_pin(0, cpu_cli) != 0) die2("sched_setaffinity", strerror(errno));
}

/* The first two CPUs this program may run on; 0 when there is one. */
static int two_cpus(int *a, int *b)
{
    int n = 0;
    for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
        if (CPU_ISSET(i, &all_cpus)) {
            if (n == 0) *a = i;
            else *b = i;
            n++;
        }
    return n == 2;
}

/* ------------------------------------------------------------------ */
/* The targets                                                          */

typedef struct target {
    const char *label;
    char seed[64];          /* the URL the clients are given             */
    int port;               /* the node serving the uncontended lock     */
    int replica_port;       /* its replica (0: none)                     */
    char unc_name[96];      /* the uncontended lock                      */
} target;

static target tg[2]; /* 0: the one server, 1: the cluster */

/* ------------------------------------------------------------------ */
/* 1. Uncontended                                                       */

/* rounds rounds of fn on each target, the order alternating from round
 * to round, over one client per target warmed up first. */
typedef void round_fn(int t, rlk_client *cl, int r, void *ctx);

static void alternate(int rounds, round_fn *fn, void *ctx)
{
    rlk_client *cl[2];
    for (int t = 0; t < 2; t++) {
        cl[t] = new_client(tg[t].seed);
        cycles(cl[t], tg[t].unc_name, UNC_WARMUP);
    }
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 2; k++) {
            int t = (k + r) % 2;
            fn(t, cl[t], r, ctx);
        }
    for (int t = 0; t < 2; t++) rlk_client_free(cl[t]);
}

typedef struct unc {
    double secs[MAX_ROUNDS], cpu[MAX_ROUNDS];
} unc;

static void unc_round(int t, rlk_client *cl, int r, void *ctx)
{
    unc *u = ctx;
    double c0 = cpu_now();
    int64_t t0 = now_ns();
    cycles(cl, tg[t].unc_name, UNC_OPS);
    u[t].secs[r] = (double)(now_ns() - t0) * 1e-9;
    u[t].cpu[r] = cpu_now() - c0;
}

/* ------------------------------------------------------------------ */
/* 2. Server time                                                       */

/* The commands of one cycle, in INFO commandstats' names. */
enum { ST_SET, ST_HGET, ST_TIME, ST_EVALSHA, ST_FCALL, ST_N };
static const char *const st_names[ST_N] = {"set", "hget", "time", "evalsha", "fcall"};

static char *cmdstats_text(rlk_conn *c)
{
    const char *why;
    char *text = bench_cmdstats_text(c, &why);
    if (!text) die2("INFO", why);
    return text;
}

/* The usec of every command in the text but the ones of the benchmark's
 * own connections and of the cluster's upkeep (INFO, CONFIG, the
 * replication's REPLCONF, PING). */
static double cmdstats_other_us(const char *text)
{
    double sum = 0;
    for (const char *p = strstr(text, "cmdstat_"); p; p = strstr(p + 1, "cmdstat_")) {
        const char *name = p + 8;
        size_t n = strcspn(name, ":");
        const char *u = strstr(name, "usec=");
        if (!u) break;
        if ((n == 4 && memcmp(name, "info", 4) == 0) || strncmp(name, "config|", 7) == 0 ||
            (n == 8 && memcmp(name, "replconf", 8) == 0) || (n == 4 && memcmp(name, "ping", 4) == 0))
            continue;
        sum += atof(u + 5);
    }
    return sum;
}

static void reset_stats(rlk_conn *c)
{
    const char *why;
    if (bench_reset_stats(c, &why) != 0) die2("CONFIG RESETSTAT", why);
}

typedef struct srvtime {
    double cycle[MAX_ROUNDS];            /* us per cycle on the serving node */
    double call[ST_N][MAX_ROUNDS];       /* us per call of each command      */
    double replica[MAX_ROUNDS];          /* us per cycle on its replica      */
    int fcall;                           /* the release went as FCALL        */
} srvtime;

static void server_round(int t, rlk_client *cl, int r, void *ctx)
{
    srvtime *s = (srvtime *)ctx + t;
    rlk_conn *admin = admin_conn(tg[t].port);
    rlk_conn *rep = tg[t].replica_port ? admin_conn(tg[t].replica_port) : NULL;
    reset_stats(admin);
    if (rep) reset_stats(rep);
    cycles(cl, tg[t].unc_name, SRV_OPS);
    char *text = cmdstats_text(admin);
    long long calls[ST_N];
    double usec[ST_N], sum = 0;
    for (int k = 0; k < ST_N; k++) bench_cmdstat(text, st_names[k], &calls[k], &usec[k]);
    free(text);
    s->fcall = calls[ST_FCALL] > 0;
    for (int k = 0; k < ST_N; k++) {
        long long want = k == ST_EVALSHA ? !s->fcall * SRV_OPS
                         : k == ST_FCALL ? s->fcall * SRV_OPS
                                         : SRV_OPS;
        if (calls[k] != want) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "server time on %s: %lld calls of %s in %d cycles, not %lld: the cycle "
                     "did not take the uncontended path", tg[t].label, calls[k], st_names[k],
                     SRV_OPS, want);
            die(msg);
        }
        s->call[k][r] = calls[k] ? usec[k] / (double)calls[k] : 0;
        sum += usec[k];
    }
    s->cycle[r] = sum / SRV_OPS;
    if (rep) {
        /* The replica's wait for the writes to arrive: they are sent
         * as the primary runs the commands; a last cycle's DEL may still
         * be on its way, which shifts the sum by one cycle in SRV_OPS. */
        char *rt = cmdstats_text(rep);
        s->replica[r] = cmdstats_other_us(rt) / SRV_OPS;
        free(rt);
        rlk_conn_free(rep);
    }
    rlk_conn_free(admin);
}

/* ------------------------------------------------------------------ */
/* 3. Aggregate                                                         */

typedef struct worker {
    pthread_t th;
    int t;                        /* the target                             */
    char seed[64];
    char names[PRIMARIES][96];    /* its names, one per primary             */
    int nnames;
    _Atomic long done;            /* cycles so far                          */
    int failed;
    char why[300];
} worker;

static worker workers[AGG_THREADS];
static atomic_int agg_stop, agg_ready;

static void *worker_main(void *arg)
{
    worker *w = arg;
    rlk_client *cl = new_client(w->seed);
    atomic_fetch_add(&agg_ready, 1);
    for (long i = 0; !atomic_load(&agg_stop); i++) {
        const char *name = w->names[i % w->nnames];
        if (cycle(cl, name) != RLK_OK) {
            snprintf(w->why, sizeof w->why, "%s: %s", name, rlk_client_errmsg(cl));
            w->failed = 1;
            break;
        }
        atomic_fetch_add_explicit(&w->done, 1, memory_order_relaxed);
    }
    rlk_client_free(cl);
    return NULL;
}

typedef struct agg {
    double rate[MAX_ROUNDS];
    double cpu_cli[MAX_ROUNDS], cpu_pri[MAX_ROUNDS], cpu_rep[MAX_ROUNDS]; /* s per cycle */
    double busy[MAX_ROUNDS];       /* CPU seconds of ours per wall second */
    double machine[MAX_ROUNDS];    /* the same of every process          */
} agg;

/* The CPU time so far of the target's primaries (or its one server) and
 * of its replicas. */
static void server_cpu(int t, double *pri, double *rep)
{
    *pri = *rep = 0;
    if (t == 0) {
        *pri = proc_cpu(one->pid);
        return;
    }
    for (int i = 0; i < TC_NODES; i++) {
        int is_pri = 0;
        for (int p = 0; p < PRIMARIES; p++) is_pri |= primary[p] == i;
        *(is_pri ? pri : rep) += proc_cpu(cluster->node[i].srv->pid);
    }
}

static long total_done(void)
{
    long n = 0;
    for (int i = 0; i < AGG_THREADS; i++) n += atomic_load(&workers[i].done);
    return n;
}

static void agg_round(int t, agg *a, int r)
{
    atomic_store(&agg_stop, 0);
    atomic_store(&agg_ready, 0);
    for (int i = 0; i < AGG_THREADS; i++) {
        worker *w = &workers[i];
        w->t = t;
        atomic_store(&w->done, 0);
        w->failed = 0;
        if (pthread_create(&w->th, NULL, worker_main, w) != 0) die("cannot start a thread");
    }
    /* The clients connected, then a warm-up (scripts loaded, caches
     * filled) before the measured time. */
    while (atomic_load(&agg_ready) < AGG_THREADS) ts_pause_ms(1);
    ts_pause_ms(AGG_WARMUP_MS);
    double p0, r0, p1, r1;
    server_cpu(t, &p0, &r0);
    double c0 = cpu_now(), m0 = bench_machine_busy();
    long n0 = total_done();
    int64_t t0 = now_ns();
    ts_pause_ms(AGG_MS);
    long n1 = total_done();
    int64_t t1 = now_ns();
    double c1 = cpu_now(), m1 = bench_machine_busy();
    server_cpu(t, &p1, &r1);
    atomic_store(&agg_stop, 1);
    for (int i = 0; i < AGG_THREADS; i++) {
        pthread_join(workers[i].th, NULL);
        if (workers[i].failed) die2("aggregate", workers[i].why);
    }
    double secs = (double)(t1 - t0) * 1e-9, n = (double)(n1 - n0);
    if (n1 - n0 <= 0) die("aggregate: no cycle in the measured time");
    a->rate[r] = n / secs;
    a->cpu_cli[r] = (c1 - c0) / n;
    a->cpu_pri[r] = (p1 - p0) / n;
    a->cpu_rep[r] = (r1 - r0) / n;
    a->busy[r] = ((c1 - c0) + (p1 - p0) + (r1 - r0)) / secs;
    a->machine[r] = (m1 - m0) / secs;
}

/* Thread i's names: one on each primary, the same names on both
 * targets. */
static void agg_names(void)
{
    int next = 0;
    for (int i = 0; i < AGG_THREADS; i++) {
        worker *w = &workers[i];
        char base[64];
        snprintf(base, sizeof base, "resplock:bench:cluster:t%d", i);
        w->nnames = PRIMARIES;
        for (int p = 0; p < PRIMARIES; p++)
            name_on(p, base, &next, w->names[p], sizeof w->names[p]);
    }
}

static void aggregate(agg *a)
{
    for (int r = 0; r < AGG_ROUNDS; r++)
        for (int k = 0; k < 2; k++) {
            int t = (k + r) % 2;
            for (int i = 0; i < AGG_THREADS; i++)
                snprintf(workers[i].seed, sizeof workers[i].seed, "%s", tg[t].seed);
            agg_round(t, &a[t], r);
        }
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */

/* Finds the primaries, checks that the library routes from a seed, and
 * sets up both targets. */
static void setup_targets(void)
{
    int np = 0;
    for (int i = 0; i < TC_NODES && np < PRIMARIES; i++)
        if (tc_is_primary(cluster, i) == 1) primary[np++] = i;
    if (np != PRIMARIES) die("the cluster has not 3 primaries");

    /* The seed: the first primary.  A lock on the second one shows that
     * the library finds the owner by itself. */
    int next = 0;
    char probe[96], seed[64];
    name_on(1, "resplock:bench:cluster:probe", &next, probe, sizeof probe);
    node_url(tc_port(cluster, primary[0]), seed, sizeof seed);
    rlk_client *cl = new_client(seed);
    if (strcmp(rlk_client_info(cl)->mode, "cluster") != 0)
        die2("the seed's HELLO did not say mode cluster", rlk_client_info(cl)->mode);
    if (cycle(cl, probe) != RLK_OK) die2("a lock on another primary than the seed",
                                         rlk_client_errmsg(cl));
    rlk_client_free(cl);

    tg[0].label = "one server";
    node_url(one->port, tg[0].seed, sizeof tg[0].seed);
    tg[0].port = one->port;
    tg[1].label = "cluster";
    next = 0;
    name_on(1, unc_base, &next, tg[1].unc_name, sizeof tg[1].unc_name);
    snprintf(tg[0].unc_name, sizeof tg[0].unc_name, "%s", tg[1].unc_name);
    int owner = primary[1];
    snprintf(tg[1].seed, sizeof tg[1].seed, "%s", seed);
    tg[1].port = tc_port(cluster, owner);
    int rep = tc_replica_of(cluster, owner);
    if (rep < 0) die("the owner of the uncontended lock has no replica");
    tg[1].replica_port = tc_port(cluster, rep);
}

int main(void)
{
    int64_t t_start = now_ns();
    signal(SIGPIPE, SIG_IGN);
    if (sched_getaffinity(0, sizeof all_cpus, &all_cpus) != 0) CPU_ZERO(&all_cpus);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int allowed = CPU_COUNT(&all_cpus);

    one = ts_start(NULL);
    if (!one) die("cannot start redis-server");
    int64_t c_start = now_ns();
    cluster = tc_start(0);
    if (!cluster) die("cannot start the cluster (see above)");
    double cluster_s = (double)(now_ns() - c_start) * 1e-9;
    setup_targets();

    const char *pe = getenv("RLK_BENCH_PIN");
    pinning = !(pe && strcmp(pe, "0") == 0) && two_cpus(&cpu_srv, &cpu_cli);

    rlk_client *probe = new_client(tg[0].seed);
    const rlk_conn_info *info = rlk_client_info(probe);
    char srv[80], load0[64];
    snprintf(srv, sizeof srv, "%s %s", info->server[0] ? info->server : "redis", info->version);
    const char *proto = info->protocol == 3 ? "RESP3" : "RESP2";
    rlk_client_free(probe);
    bench_loadavg(load0, sizeof load0);

    printf("resplock cluster benchmark: resplock %s (%s), %s\n"
           "one server: 127.0.0.1:%d; cluster: 3 primaries + 3 replicas on 127.0.0.1 ports",
           RLK_VERSION, proto, srv, one->port);
    for (int i = 0; i < TC_NODES; i++) printf(" %d", tc_port(cluster, i));
    printf(" (ready in %.1f s);\nall started by this program.  CPUs: %ld online (sysconf), "
           "%d this program may use; load average %s at the start\n\n",
           cluster_s, ncpu, allowed, load0);
    printf("The lines below:\n"
           "1. Uncontended: acquire + release (wait 0, TTL 30 s) of one free lock by one\n"
           "   client, %d rounds of %d cycles on each target, alternating; the median and\n"
           "   best rounds' rates, the client's CPU time per cycle, and cluster / one\n"
           "   server as the median of the same-round ratios.  The cluster's client is\n"
           "   given the URL of one primary (its HELLO says mode \"cluster\"); the lock,\n"
           "   %s, is on another: the library routes by itself.\n"
           "2. Server time per cycle: INFO commandstats (usec) of the node that served\n"
           "   the cycles, after CONFIG RESETSTAT, summed over SET, HGET, TIME and the\n"
           "   release's FCALL/EVALSHA (one call of each per cycle, counted); %d rounds\n"
           "   of %d cycles per target, alternating; the cluster's ratio as in 1.  The\n"
           "   replica of the cluster's primary applies the same writes: its time\n"
           "   (every command but INFO, CONFIG, REPLCONF and PING) is printed apart.\n"
           "3. Aggregate: %d client threads (one rlk_client each) for %.1f s per round,\n"
           "   %d rounds per target, alternating; each thread cycles over %d names of\n"
           "   its own, one on each primary, every client given the same primary's\n"
           "   URL; the same names on the one server.  Beside the rate, the CPU time\n"
           "   per cycle of the clients (this process) and the servers (/proc), and\n"
           "   the CPUs kept busy (CPU seconds per wall second) by these processes and\n"
           "   by all (/proc/stat: other work on the machine too); then what bounds the\n"
           "   ratio on this machine, from these figures.\n"
           "%s\n\n",
           UNC_ROUNDS, UNC_OPS, tg[1].unc_name, SRV_ROUNDS, SRV_OPS, AGG_THREADS,
           AGG_MS / 1000.0, AGG_ROUNDS, PRIMARIES,
           pinning ? "In 1 and 2 the servers (all six nodes, or the one server) run pinned to one\n"
                     "CPU and this program to another, as on two machines (the replicas share\n"
                     "their primaries' CPU); in 3 nothing is pinned."
                   : "Nothing is pinned (one CPU, or RLK_BENCH_PIN=0).");
    fflush(stdout);

    /* ---- 1 */
    place(pinning);
    unc u[2];
    alternate(UNC_ROUNDS, unc_round, u);
    printf("1. uncontended acquire + release, one client, one lock%s\n",
           pinning ? " (servers on CPU A, client on CPU B)" : "");
    printf("   %-34s %10s %10s %6s %9s\n", "target", "median/s", "best/s", "IQR", "cpu us");
    double med_rate[2];
    for (int t = 0; t < 2; t++) {
        double v[MAX_ROUNDS], cpu[MAX_ROUNDS];
        for (int r = 0; r < UNC_ROUNDS; r++) {
            v[r] = UNC_OPS / u[t].secs[r];
            cpu[r] = u[t].cpu[r] / UNC_OPS;
        }
        char med[32], best[32];
        med_rate[t] = quantile(v, UNC_ROUNDS, 0.5);
        fmt_rate(med, sizeof med, med_rate[t]);
        fmt_rate(best, sizeof best, quantile(v, UNC_ROUNDS, 1));
        double iqr = (quantile(v, UNC_ROUNDS, 0.75) - quantile(v, UNC_ROUNDS, 0.25)) /
                     med_rate[t] * 100;
        printf("   %-34s %10s %10s %5.1f%% %9.2f\n", tg[t].label, med, best, iqr,
               quantile(cpu, UNC_ROUNDS, 0.5) * 1e6);
    }
    double ratio[MAX_ROUNDS];
    for (int r = 0; r < UNC_ROUNDS; r++) ratio[r] = u[0].secs[r] / u[1].secs[r];
    printf("   %-34s %9.3fx  (ratio of the medians %.3fx)\n\n", "cluster / one server",
           quantile(ratio, UNC_ROUNDS, 0.5), med_rate[1] / med_rate[0]);
    fflush(stdout);

    /* ---- 2 */
    srvtime s[2];
    memset(s, 0, sizeof s);
    alternate(SRV_ROUNDS, server_round, s);
    printf("2. server time per uncontended cycle (INFO commandstats, us)\n");
    printf("   %-34s %9s %13s %7s %7s %7s %9s\n", "node", "us/cycle", "(min..max)", "SET",
           "HGET", "TIME", s[0].fcall ? "FCALL" : "EVALSHA");
    double med_srv[2];
    for (int t = 0; t < 2; t++) {
        char range[32], label[64];
        int rel = s[t].fcall ? ST_FCALL : ST_EVALSHA;
        med_srv[t] = quantile(s[t].cycle, SRV_ROUNDS, 0.5);
        snprintf(range, sizeof range, "(%.2f..%.2f)", quantile(s[t].cycle, SRV_ROUNDS, 0),
                 quantile(s[t].cycle, SRV_ROUNDS, 1));
        snprintf(label, sizeof label, "%s%s", t ? "cluster: the lock's primary" : "one server",
                 s[t].fcall == s[0].fcall ? "" : " (other release)");
        printf("   %-34s %9.2f %13s %7.2f %7.2f %7.2f %9.2f\n", label, med_srv[t], range,
               quantile(s[t].call[ST_SET], SRV_ROUNDS, 0.5),
               quantile(s[t].call[ST_HGET], SRV_ROUNDS, 0.5),
               quantile(s[t].call[ST_TIME], SRV_ROUNDS, 0.5),
               quantile(s[t].call[rel], SRV_ROUNDS, 0.5));
    }
    for (int r = 0; r < SRV_ROUNDS; r++) ratio[r] = s[1].cycle[r] / s[0].cycle[r];
    printf("   %-34s %9.2fx  (ratio of the medians %.2fx)\n", "cluster / one server",
           quantile(ratio, SRV_ROUNDS, 0.5), med_srv[1] / med_srv[0]);
    printf("   %-34s %9.2f  (applying the writes; not in the ratio)\n\n",
           "cluster: that primary's replica", quantile(s[1].replica, SRV_ROUNDS, 0.5));
    fflush(stdout);

    /* ---- 3 */
    place(0);
    agg_names();
    agg a[2];
    memset(a, 0, sizeof a);
    aggregate(a);
    printf("3. aggregate: %d client threads, %d names each, nothing pinned\n", AGG_THREADS,
           PRIMARIES);
    printf("   %-14s %9s %9s %30s %18s\n", "target", "median/s", "best/s",
           "CPU us per cycle: clients +", "CPUs busy: ours,");
    printf("   %-14s %9s %9s %30s %18s\n", "", "", "", "servers (+ replicas) = all", "all processes");
    double med_agg[2], med_cpu[2], med_busy[2], med_mach[2];
    for (int t = 0; t < 2; t++) {
        char med[32], best[32], cpu[64];
        med_agg[t] = quantile(a[t].rate, AGG_ROUNDS, 0.5);
        fmt_rate(med, sizeof med, med_agg[t]);
        fmt_rate(best, sizeof best, quantile(a[t].rate, AGG_ROUNDS, 1));
        double cc = quantile(a[t].cpu_cli, AGG_ROUNDS, 0.5) * 1e6,
               cp = quantile(a[t].cpu_pri, AGG_ROUNDS, 0.5) * 1e6,
               cr = quantile(a[t].cpu_rep, AGG_ROUNDS, 0.5) * 1e6;
        med_cpu[t] = cc + cp + cr;
        med_busy[t] = quantile(a[t].busy, AGG_ROUNDS, 0.5);
        med_mach[t] = quantile(a[t].machine, AGG_ROUNDS, 0.5);
        if (t) snprintf(cpu, sizeof cpu, "%.1f + %.1f (+ %.1f) = %.1f", cc, cp, cr, med_cpu[t]);
        else snprintf(cpu, sizeof cpu, "%.1f + %.1f = %.1f", cc, cp, med_cpu[t]);
        printf("   %-14s %9s %9s %30s %10.2f, %5.2f\n", tg[t].label, med, best, cpu, med_busy[t],
               med_mach[t]);
    }
    double ar[MAX_ROUNDS];
    for (int r = 0; r < AGG_ROUNDS; r++) ar[r] = a[1].rate[r] / a[0].rate[r];
    printf("   %-34s %.2fx  (ratio of the medians %.2fx)\n", "cluster / one server",
           quantile(ar, AGG_ROUNDS, 0.5), med_agg[1] / med_agg[0]);
    /* The ceilings the CPU costs just measured put on each target. */
    double srv1 = quantile(a[0].cpu_pri, AGG_ROUNDS, 0.5) * 1e6;
    double one_thread = 1e3 / srv1, one_cpus = allowed * 1e3 / med_cpu[0],
           cl_cpus = allowed * 1e3 / med_cpu[1];
    printf("\n   What bounds 3: %ld CPUs (sysconf), %d for this program, shared by the %d\n"
           "   client threads and the servers (1 process, or 6 on the cluster):\n"
           "   - one server runs every command on one thread, at most 1 CPU: at its\n"
           "     %.1f us per cycle, %.1f k cycles/s at most;\n"
           "   - %d CPUs give %d CPU-seconds a second: at most %.1f k cycles/s at one\n"
           "     server's %.1f us per cycle (clients + server), %.1f k/s at the\n"
           "     cluster's %.1f us (clients + primaries + replicas, which apply every\n"
           "     write again);\n"
           "   - so on this machine the cluster can reach %.2fx of one server's measured\n"
           "     rate at most: it adds capacity only where one server's thread, not the\n"
           "     CPUs, is the limit (3x needs the CPU of three servers free beside the\n"
           "     clients', and the cluster's per-cycle cost, higher here, counts too);\n"
           "   - other work on the machine: %.2f / %.2f CPUs busy besides ours (one\n"
           "     server / cluster rounds).\n\n",
           ncpu, allowed, AGG_THREADS, srv1, one_thread, allowed, allowed, one_cpus, med_cpu[0],
           cl_cpus, med_cpu[1], cl_cpus / med_agg[0] * 1e3, med_mach[0] - med_busy[0],
           med_mach[1] - med_busy[1]);

    char load1[64];
    bench_loadavg(load1, sizeof load1);
    printf("Load average at the end: %s (other work on the machine moves the numbers).\n",
           load1);
    tc_stop(cluster);
    cluster = NULL;
    ts_stop(one);
    one = NULL;
    printf("Total time %.1f s.\n", (double)(now_ns() - t_start) * 1e-9);
    return 0;
}
