/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Redlock benchmark: an uncontended acquire + release (wait 0, TTL 30 s)
 * by a Redlock client over 5 servers (rlk_client_config.redlock) against
 * the same cycle by a client of one of those servers, in one run, with
 * node-redlock's figures for the same two beside them (bench_redlock.js:
 * npm redlock 4.2.0 over redis 3.1.2, which `make bench-redlock` installs
 * into the build's bench/node-redlock).  The 5 servers are started here
 * on free loopback ports (tests/server.c: $RLK_REDIS_SERVER, else
 * redis-server on PATH) and stopped at the end.
 *
 * resplock sends a Redlock acquire's SET NX PX to the 5 servers at once
 * and returns once a majority took it, and its release the same way: a
 * cycle costs about two round trips whatever the number of servers (a
 * client that asks them in turn pays five times that).  The bound the
 * project sets: Redlock's cycle at most 1.5 times the single server's.
 *
 * ROUNDS rounds of N / ROUNDS cycles per side, the two sides alternating
 * first, after a warm-up; the median of the rounds' microseconds per
 * cycle, and the median of the same-round ratios Redlock / one server.
 * node-redlock runs once per side (N cycles each, its own warm-up) after
 * resplock's rounds.  RLK_BENCH_REDLOCK_N sets N (default 20,000);
 * RLK_NODE the node program.  The last line is "summary:" and key=value
 * pairs.
 */
#include "resplock.h"
#include "pin.h"
#include "server.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BENCH_REDLOCK_JS
#define BENCH_REDLOCK_JS "bench/bench_redlock.js"
#endif
#ifndef BENCH_NODE_DIR
#define BENCH_NODE_DIR "bench/node-redlock"
#endif

#define NS 5
#define ROUNDS 7

static ts_server *sv[NS];
static char url[NS][64];

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_redlock: %s%s%s\n", what, why ? ": " : "", why ? why : "");
    for (int i = 0; i < NS; i++) ts_stop(sv[i]);
    exit(1);
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

static rlk_client *redlock_client(void)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    const char *seeds[NS - 1];
    for (int i = 1; i < NS; i++) seeds[i - 1] = url[i];
    cfg.conn.url = url[0];
    cfg.seeds = seeds;
    cfg.nseeds = NS - 1;
    cfg.redlock = 1;
    rlk_client *cl = rlk_client_new(&cfg);
    if (!cl) die("rlk_client_new (Redlock)", "out of memory");
    if (rlk_client_connect(cl) != RLK_OK) die("rlk_client_connect (Redlock)", rlk_client_errmsg(cl));
    return cl;
}

/* Microseconds per cycle over n cycles. */
static double cycles(rlk_client *cl, const char *name, long n)
{
    double us;
    if (bench_cycles_us(cl, name, n, &us) != RLK_OK) die("a cycle failed", rlk_client_errmsg(cl));
    return us;
}

/* node-redlock's microseconds per cycle over the first nports servers;
 * its version into ver.  -1 when it could not run (why printed). */
static double node_cycles(long n, int nports, char *ver, size_t cap)
{
    const char *prog = env_or("RLK_NODE", "node"), *js = env_or("RLK_BENCH_REDLOCK_JS", BENCH_REDLOCK_JS);
    const char *dir = env_or("RLK_BENCH_NODE_DIR", BENCH_NODE_DIR);
    char cmd[2048], probe[700];
    snprintf(probe, sizeof probe, "%s/node_modules/redlock/package.json", dir);
    if (access(probe, R_OK) != 0) die("node-redlock is not installed (make bench-redlock installs it)", probe);
    int k = snprintf(cmd, sizeof cmd, "NODE_PATH='%s/node_modules' '%s' '%s' %ld", dir, prog, js, n);
    for (int i = 0; i < nports && k < (int)sizeof cmd; i++)
        k += snprintf(cmd + k, sizeof cmd - (size_t)k, " %d", sv[i]->port);
    FILE *p = popen(cmd, "r");
    if (!p) die("popen", strerror(errno));
    char line[256];
    double us = -1;
    while (fgets(line, sizeof line, p)) {
        char a[64], b[64];
        if (sscanf(line, "version %63s %63s", a, b) == 2) snprintf(ver, cap, "%s (node %s)", a, b);
        sscanf(line, "cycle %lf", &us);
    }
    if (pclose(p) != 0 || us <= 0) die("node-redlock's run failed (see above)", NULL);
    return us;
}

int main(void)
{
    long n = atol(env_or("RLK_BENCH_REDLOCK_N", "20000"));
    if (n < ROUNDS * 10) n = ROUNDS * 10;
    for (int i = 0; i < NS; i++) {
        if (!(sv[i] = ts_start(NULL))) die("a server did not start", NULL);
        snprintf(url[i], sizeof url[i], "redis://127.0.0.1:%d", sv[i]->port);
    }
    char why[300];
    rlk_client *one = bench_client(url[0], why, sizeof why);
    if (!one) die("the single server's client", why);
    rlk_client *rl = redlock_client();
    const rlk_conn_info *in = rlk_client_info(one);
    printf("Redlock over %d servers against one server: %ld cycles each (acquire wait 0, TTL 30 s, "
           "release), %d rounds\nserver: %s %s, RESP%d, loopback; load: ",
           NS, n, ROUNDS, in->server, in->version, in->protocol);
    char load[64];
    bench_loadavg(load, sizeof load);
    printf("%s\n", load);
    long per = n / ROUNDS;
    cycles(one, "bench:one", per / 5 + 1);
    cycles(rl, "bench:redlock", per / 5 + 1);
    double us1[ROUNDS], usr[ROUNDS], ratio[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        if (r % 2 == 0) {
            us1[r] = cycles(one, "bench:one", per);
            usr[r] = cycles(rl, "bench:redlock", per);
        } else {
            usr[r] = cycles(rl, "bench:redlock", per);
            us1[r] = cycles(one, "bench:one", per);
        }
        ratio[r] = usr[r] / us1[r];
    }
    double m1 = bench_quantile(us1, ROUNDS, 0.5), mr = bench_quantile(usr, ROUNDS, 0.5);
    double q = bench_quantile(ratio, ROUNDS, 0.5);
    rlk_client_free(rl);
    rlk_client_free(one);
    char ver[160] = "?";
    double n1 = node_cycles(n, 1, ver, sizeof ver), n5 = node_cycles(n, NS, ver, sizeof ver);
    printf("\n%-34s %12s %12s %8s\n", "", "one server", "5 servers", "ratio");
    printf("%-34s %9.1f us %9.1f us %7.2fx\n", "resplock (parallel fan-out)", m1, mr, q);
    printf("%-34s %9.1f us %9.1f us %7.2fx\n", "node-redlock", n1, n5, n5 / n1);
    printf("node-redlock: %s\n", ver);
    printf("bound: resplock's Redlock cycle at most 1.50x one server's: %s\n",
           q <= 1.5 ? "met" : "NOT met");
    printf("summary: one_us=%.1f redlock_us=%.1f ratio=%.2f node_one_us=%.1f node_redlock_us=%.1f "
           "node_ratio=%.2f\n",
           m1, mr, q, n1, n5, n5 / n1);
    for (int i = 0; i < NS; i++) ts_stop(sv[i]);
    return q <= 1.5 ? 0 : 1;
}
