/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sentinel benchmark: an uncontended acquire + release (wait 0, TTL 30 s)
 * by a client given the redis+sentinel:// URL of a real Sentinel setup
 * against the same cycle by a client of redis://127.0.0.1:PORT of the
 * same primary, in one run.  The setup (tests/sentinel.c: a primary, a
 * replica, 3 sentinels, each a redis-server on a free loopback port) is
 * started here and stopped at the end.  `make bench-sentinel` builds and
 * runs it.
 *
 * The library asks a sentinel for the primary's address only before it
 * connects (src/route/sentinel.c); once connected, a cycle is the same
 * commands on the same primary as the direct client's: no extra round
 * trip.  The expectation (printed, not enforced): the Sentinel client's
 * cycle at most 1.10 times the direct one's, and no sentinel asked during
 * the timed rounds.
 *
 * ROUNDS rounds of N / ROUNDS cycles per side, the side that goes first
 * alternating, after a warm-up; the median of the rounds' microseconds
 * per cycle, and the median of the same-round ratios sentinel / direct.
 * Around each round: CONFIG RESETSTAT on the primary before, INFO
 * commandstats after (both outside the timed part), for the commands per
 * cycle of each side; the sentinels' upkeep of the primary (PING, the
 * PUBLISH of their hello) and the replica's REPLCONF are counted apart,
 * INFO (theirs and ours) and CONFIG not at all.
 * The Sentinel client's SENTINEL GET-MASTER-ADDR-BY-NAME are counted at
 * connect (with the warm-up) and during the timed rounds: by a relay in
 * this program in front of each sentinel (the client is given the
 * relays' ports; below), and also by the sentinels' INFO commandstats
 * when they have that section (Redis 7.0's sentinels do not).
 *
 * Placement: the five server processes pinned to one CPU and this
 * program to another, as on two machines, when the program may run on
 * two CPUs (otherwise, or with RLK_BENCH_PIN=0, nothing is pinned).
 * RLK_BENCH_SENTINEL_N sets N (default 20,000).  Every cycle is checked
 * (one that fails stops the run).  The last line is "summary:" and
 * key=value pairs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* sched_setaffinity, in pin.h */
#endif
#include "resplock.h"
#include "pin.h"
#include "sentinel.h"
#include "server.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ROUNDS 7
#define MAX_CMDS 32
#define BOUND 1.10

static tsn_env *env;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "bench_sentinel: %s%s%s\n", what, why ? ": " : "", why ? why : "");
    tsn_stop(env);
    exit(1);
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* A RESP2 connection of the library to port, for INFO and CONFIG. */
static rlk_conn *admin_conn(int port)
{
    char u[64];
    rlk_conn_config cfg;
    rlk_conn_config_init(&cfg);
    snprintf(u, sizeof u, "redis://127.0.0.1:%d", port);
    cfg.url = u;
    cfg.protocol = 2;
    rlk_conn *c = rlk_conn_new(&cfg);
    if (!c) die("rlk_conn_new", "out of memory");
    if (rlk_conn_connect(c) != RLK_OK) die("an INFO connection", rlk_conn_errmsg(c));
    return c;
}

/* Microseconds per cycle over n cycles. */
static double cycles(rlk_client *cl, const char *name, long n)
{
    double us;
    if (bench_cycles_us(cl, name, n, &us) != RLK_OK) die("a cycle failed", rlk_client_errmsg(cl));
    return us;
}

/* ------------------------------------------------------------------ */
/* Counting the asks                                                    */

/* The Sentinel client is given, instead of the sentinels' ports, those
 * of a relay in this program, one per sentinel, which passes the bytes
 * on both ways and counts "GET-MASTER-ADDR-BY-NAME" (any case) in what
 * the client sends.  Redis 7.0's sentinels have no INFO commandstats,
 * and their other counters also grow with the sentinels' talk among
 * themselves.  The primary the sentinels name is the real one: the
 * cycles do not pass the relay. */
#define RELAY_MAX 32 /* connections at once */
static const char ask_word[] = "get-master-addr-by-name";
#define ASK_LEN (sizeof ask_word - 1)

typedef struct relay_pair {
    int cli, srv;            /* -1: free */
    char tail[ASK_LEN];      /* the client's last bytes, for a word across reads */
    size_t ntail;
} relay_pair;

static struct {
    int lfd[TSN_SENTINELS], to_port[TSN_SENTINELS], port[TSN_SENTINELS];
    relay_pair pair[RELAY_MAX];
    int stop[2]; /* a pipe: written to stop */
    pthread_t th;
    _Atomic long long asks;
} relay;

/* Counts the word in tail + buf[0..n), keeping the last bytes in tail. */
static void count_asks(relay_pair *p, const char *buf, size_t n)
{
    char w[ASK_LEN + 16384];
    size_t len = p->ntail;
    memcpy(w, p->tail, p->ntail);
    memcpy(w + len, buf, n);
    len += n;
    for (size_t i = 0; i + ASK_LEN <= len; i++) {
        size_t k = 0;
        while (k < ASK_LEN && tolower((unsigned char)w[i + k]) == ask_word[k]) k++;
        if (k == ASK_LEN) atomic_fetch_add(&relay.asks, 1);
    }
    /* Keep fewer than ASK_LEN bytes: a word counted is not kept whole. */
    p->ntail = len < ASK_LEN - 1 ? len : ASK_LEN - 1;
    memcpy(p->tail, w + len - p->ntail, p->ntail);
}

static int write_all(int fd, const char *b, ssize_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, b, (size_t)n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= k;
    }
    return 0;
}

static void pair_close(relay_pair *p)
{
    close(p->cli);
    close(p->srv);
    p->cli = p->srv = -1;
}

static void relay_accept(int s)
{
    int c = accept(relay.lfd[s], NULL, NULL);
    if (c < 0) return;
    int u = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)relay.to_port[s])};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (u < 0 || connect(u, (struct sockaddr *)&a, sizeof a) != 0) {
        if (u >= 0) close(u);
        close(c);
        return;
    }
    for (int i = 0; i < RELAY_MAX; i++)
        if (relay.pair[i].cli < 0) {
            relay.pair[i] = (relay_pair){.cli = c, .srv = u};
            return;
        }
    close(u);
    close(c);
}

static void *relay_main(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd pf[1 + TSN_SENTINELS + 2 * RELAY_MAX];
        int who[2 * RELAY_MAX], n = 0;
        pf[n++] = (struct pollfd){.fd = relay.stop[0], .events = POLLIN};
        for (int s = 0; s < TSN_SENTINELS; s++) pf[n++] = (struct pollfd){.fd = relay.lfd[s], .events = POLLIN};
        int base = n;
        for (int i = 0; i < RELAY_MAX; i++)
            if (relay.pair[i].cli >= 0) {
                who[n - base] = 2 * i;
                pf[n++] = (struct pollfd){.fd = relay.pair[i].cli, .events = POLLIN};
                who[n - base] = 2 * i + 1;
                pf[n++] = (struct pollfd){.fd = relay.pair[i].srv, .events = POLLIN};
            }
        if (poll(pf, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            return NULL;
        }
        if (pf[0].revents) return NULL;
        for (int s = 0; s < TSN_SENTINELS; s++)
            if (pf[1 + s].revents & POLLIN) relay_accept(s);
        for (int j = base; j < n; j++) {
            if (!pf[j].revents) continue;
            relay_pair *p = &relay.pair[who[j - base] / 2];
            int from_cli = who[j - base] % 2 == 0;
            if (p->cli < 0) continue; /* closed by its other half */
            char buf[16384];
            ssize_t k = read(from_cli ? p->cli : p->srv, buf, sizeof buf);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0 || write_all(from_cli ? p->srv : p->cli, buf, k) != 0) {
                pair_close(p);
                continue;
            }
            if (from_cli) count_asks(p, buf, (size_t)k);
        }
    }
}

/* A relay in front of each sentinel, on free loopback ports. */
static void relay_start(void)
{
    for (int i = 0; i < RELAY_MAX; i++) relay.pair[i].cli = relay.pair[i].srv = -1;
    if (pipe(relay.stop) != 0) die("pipe", strerror(errno));
    for (int s = 0; s < TSN_SENTINELS; s++) {
        struct sockaddr_in a = {.sin_family = AF_INET};
        socklen_t alen = sizeof a;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int l = socket(AF_INET, SOCK_STREAM, 0);
        if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 16) != 0 ||
            getsockname(l, (struct sockaddr *)&a, &alen) != 0)
            die("the relay's socket", strerror(errno));
        relay.lfd[s] = l;
        relay.port[s] = ntohs(a.sin_port);
        relay.to_port[s] = tsn_sentinel_port(env, s);
    }
    if (pthread_create(&relay.th, NULL, relay_main, NULL) != 0) die("pthread_create", NULL);
}

static void relay_stop(void)
{
    if (write(relay.stop[1], "x", 1) != 1) return;
    pthread_join(relay.th, NULL);
    for (int i = 0; i < RELAY_MAX; i++)
        if (relay.pair[i].cli >= 0) pair_close(&relay.pair[i]);
    for (int s = 0; s < TSN_SENTINELS; s++) close(relay.lfd[s]);
}

/* ------------------------------------------------------------------ */
/* The rounds                                                           */

/* The primary's upkeep by the sentinels and the replica, not the
 * clients' (INFO and CONFIG are left out by bench_cmdstats_all). */
static int upkeep(const char *name)
{
    return strcmp(name, "ping") == 0 || strcmp(name, "publish") == 0 ||
           strcmp(name, "replconf") == 0;
}

/* The commands of one round on the primary. */
typedef struct round_stats {
    bench_cmdstat_row row[MAX_CMDS];
    int n;
    long long clients, upkeep; /* calls of the clients' commands, of upkeep */
} round_stats;

static int row_cmp(const void *a, const void *b)
{
    return strcmp(((const bench_cmdstat_row *)a)->name, ((const bench_cmdstat_row *)b)->name);
}

static void read_stats(rlk_conn *admin, round_stats *s)
{
    const char *why;
    s->n = bench_cmdstats_all(admin, s->row, MAX_CMDS, &why);
    if (s->n < 0) die("INFO commandstats on the primary", why);
    qsort(s->row, (size_t)s->n, sizeof s->row[0], row_cmp);
    s->clients = s->upkeep = 0;
    for (int k = 0; k < s->n; k++) *(upkeep(s->row[k].name) ? &s->upkeep : &s->clients) += s->row[k].calls;
}

/* One timed round of per cycles, the primary's counters reset before
 * and read after. */
static double round_on(rlk_client *cl, const char *name, long per, rlk_conn *admin,
                       round_stats *s)
{
    const char *why;
    if (bench_reset_stats(admin, &why) != 0) die("CONFIG RESETSTAT on the primary", why);
    double us = cycles(cl, name, per);
    read_stats(admin, s);
    return us;
}

/* The calls of SENTINEL GET-MASTER-ADDR-BY-NAME so far by the sentinels'
 * INFO commandstats, summed; -1 when they have no such section (Redis
 * 7.0's sentinels). */
static long long sentinel_cmdstat_asks(rlk_conn *const *sc)
{
    long long sum = 0;
    for (int i = 0; i < TSN_SENTINELS; i++) {
        const char *why;
        char *text = bench_cmdstats_text(sc[i], &why);
        if (!text) die("INFO commandstats on a sentinel", why);
        long long calls;
        double usec;
        int has = strstr(text, "cmdstat_") != NULL;
        bench_cmdstat(text, "sentinel|get-master-addr-by-name", &calls, &usec);
        free(text);
        if (!has) return -1;
        sum += calls;
    }
    return sum;
}

/* "set 1.00, hget 1.00, ..." : the clients' commands per cycle. */
static void per_cycle_list(const round_stats *s, long per, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = '\0';
    for (int i = 0; i < s->n && k < cap; i++) {
        if (upkeep(s->row[i].name)) continue;
        k += (size_t)snprintf(out + k, cap - k, "%s%s %.2f", k ? ", " : "", s->row[i].name,
                              (double)s->row[i].calls / (double)per);
    }
}

static void pin_all(int cpu_srv, int cpu_cli)
{
    for (int i = 0; i < TSN_DATA; i++)
        if (bench_pin(env->data[i]->pid, cpu_srv) != 0) die("sched_setaffinity", strerror(errno));
    for (int i = 0; i < TSN_SENTINELS; i++)
        if (bench_pin(env->sent[i]->pid, cpu_srv) != 0) die("sched_setaffinity", strerror(errno));
    if (bench_pin(0, cpu_cli) != 0) die("sched_setaffinity", strerror(errno));
}

int main(void)
{
    int64_t t_start = bench_now_ns();
    signal(SIGPIPE, SIG_IGN);
    long n = atol(env_or("RLK_BENCH_SENTINEL_N", "20000"));
    if (n < ROUNDS * 10) n = ROUNDS * 10;
    long per = n / ROUNDS;

    env = tsn_start(0);
    if (!env) die("the Sentinel setup did not start (see above)", NULL);
    int p = tsn_primary(env);
    if (p < 0) die("the sentinels do not name a primary", NULL);
    int pport = tsn_data_port(env, p);

    /* Placement: the servers on one CPU, this program on another. */
    cpu_set_t all;
    int cpus[2], ncpus = 0;
    if (sched_getaffinity(0, sizeof all, &all) != 0) CPU_ZERO(&all);
    for (int i = 0; i < CPU_SETSIZE && ncpus < 2; i++)
        if (CPU_ISSET(i, &all)) cpus[ncpus++] = i;
    const char *pe = getenv("RLK_BENCH_PIN");
    int pinning = !(pe && strcmp(pe, "0") == 0) && ncpus == 2;
    if (pinning) pin_all(cpus[0], cpus[1]);

    char surl[256], rurl[256], durl[64], why[600];
    tsn_url(env, surl, sizeof surl);
    snprintf(durl, sizeof durl, "redis://127.0.0.1:%d", pport);
    rlk_conn *admin = admin_conn(pport);
    rlk_conn *sc[TSN_SENTINELS];
    for (int i = 0; i < TSN_SENTINELS; i++) sc[i] = admin_conn(tsn_sentinel_port(env, i));

    relay_start();
    snprintf(rurl, sizeof rurl, "redis+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/%s",
             relay.port[0], relay.port[1], relay.port[2], TSN_NAME);
    long long asks0 = atomic_load(&relay.asks), cs0 = sentinel_cmdstat_asks(sc);
    rlk_client *cl[2]; /* 0: direct, 1: Sentinel */
    const char *label[2] = {"direct", "sentinel"};
    const char *name[2] = {"resplock:bench:sentinel:direct", "resplock:bench:sentinel:sentinel"};
    if (!(cl[0] = bench_client(durl, why, sizeof why))) die("the direct client", why);
    if (!(cl[1] = bench_client(rurl, why, sizeof why))) die("the Sentinel client", why);
    for (int t = 0; t < 2; t++) cycles(cl[t], name[t], per / 5 + 1);
    long long asks1 = atomic_load(&relay.asks), cs1 = sentinel_cmdstat_asks(sc);

    const rlk_conn_info *in0 = rlk_client_info(cl[0]), *in1 = rlk_client_info(cl[1]);
    char load0[64];
    bench_loadavg(load0, sizeof load0);
    printf("resplock Sentinel benchmark: resplock %s, %s %s, RESP%d, loopback\n"
           "a primary (port %d), a replica (port %d), 3 sentinels (ports %d %d %d), all "
           "started by this program\n"
           "direct client: %s; Sentinel client: %s\n"
           "  (%s, each port a counting relay in this program to a sentinel; connected to %s)\n"
           "%ld cycles per side (acquire wait 0, TTL 30 s, release), %d alternating rounds of "
           "%ld after a warm-up of %ld\n%s; load average %s at the start\n\n",
           RLK_VERSION, in0->server[0] ? in0->server : "redis", in0->version, in0->protocol, pport,
           tsn_data_port(env, 1 - p), tsn_sentinel_port(env, 0), tsn_sentinel_port(env, 1),
           tsn_sentinel_port(env, 2), durl, rurl, surl, in1->peer, per * ROUNDS, ROUNDS, per,
           per / 5 + 1,
           pinning ? "the 5 servers pinned to one CPU, this program to another"
                   : "nothing pinned (one CPU, or RLK_BENCH_PIN=0)",
           load0);
    fflush(stdout);

    double us[2][ROUNDS], ratio[ROUNDS], cpc[2][ROUNDS], upk[2][ROUNDS];
    round_stats last[2];
    for (int r = 0; r < ROUNDS; r++) {
        for (int k = 0; k < 2; k++) {
            int t = (k + r) % 2;
            us[t][r] = round_on(cl[t], name[t], per, admin, &last[t]);
            cpc[t][r] = (double)last[t].clients / (double)per;
            upk[t][r] = (double)last[t].upkeep;
        }
        ratio[r] = us[1][r] / us[0][r];
    }
    long long asks2 = atomic_load(&relay.asks), cs2 = sentinel_cmdstat_asks(sc);
    long long during = asks2 - asks1;

    double med[2], best[2], cmd[2], cmin[2], cmax[2];
    for (int t = 0; t < 2; t++) {
        med[t] = bench_quantile(us[t], ROUNDS, 0.5);
        best[t] = bench_quantile(us[t], ROUNDS, 0);
        cmd[t] = bench_quantile(cpc[t], ROUNDS, 0.5);
        cmin[t] = bench_quantile(cpc[t], ROUNDS, 0);
        cmax[t] = bench_quantile(cpc[t], ROUNDS, 1);
    }
    double q = bench_quantile(ratio, ROUNDS, 0.5);

    printf("%-40s %12s %12s %10s\n", "", "direct", "sentinel", "ratio");
    printf("%-40s %9.1f us %9.1f us %9.3fx\n", "us per cycle, median of the rounds", med[0],
           med[1], q);
    printf("%-40s %9.1f us %9.1f us %9.3fx\n", "us per cycle, best round", best[0], best[1],
           best[1] / best[0]);
    printf("%-40s %12.2f %12.2f\n", "commands per cycle on the primary (*)", cmd[0], cmd[1]);
    char range[2][32];
    for (int t = 0; t < 2; t++) snprintf(range[t], sizeof range[t], "%.2f..%.2f", cmin[t], cmax[t]);
    printf("%-40s %12s %12s\n", "  (min..max of the rounds)", range[0], range[1]);
    printf("%-40s %12.0f %12.0f\n", "upkeep calls per round, median (apart)",
           bench_quantile(upk[0], ROUNDS, 0.5), bench_quantile(upk[1], ROUNDS, 0.5));
    for (int t = 0; t < 2; t++) {
        char list[512];
        per_cycle_list(&last[t], per, list, sizeof list);
        printf("%s, last round, per cycle: %s\n", label[t], list);
    }
    printf("(*) INFO commandstats after CONFIG RESETSTAT, a script's inner calls included; "
           "upkeep: the\n    sentinels' PING and PUBLISH, the replica's REPLCONF; INFO and "
           "CONFIG not counted\n");
    printf("SENTINEL GET-MASTER-ADDR-BY-NAME sent by the Sentinel client (counted by the relays): "
           "%lld at connect + warm-up, %lld during the timed rounds\n",
           asks1 - asks0, during);
    if (cs0 >= 0 && cs1 >= 0 && cs2 >= 0)
        printf("the same by the sentinels' INFO commandstats: %lld at connect + warm-up, %lld "
               "during the timed rounds\n", cs1 - cs0, cs2 - cs1);
    else
        printf("(the sentinels' INFO has no commandstats section on this server: the relays' "
               "count only)\n");

    int met = q <= BOUND && during == 0;
    printf("expectation: sentinel/direct at most %.2fx (%.3fx) and no sentinel asked during the "
           "rounds (%lld): %s\n",
           BOUND, q, during, met ? "met" : "NOT met");
    char load1[64];
    bench_loadavg(load1, sizeof load1);
    printf("load average at the end: %s; total time %.1f s\n", load1,
           (double)(bench_now_ns() - t_start) * 1e-9);
    printf("summary: direct_us=%.1f sentinel_us=%.1f ratio=%.3f direct_cmds_per_cycle=%.2f "
           "sentinel_cmds_per_cycle=%.2f sentinel_asks_at_connect=%lld "
           "sentinel_asks_during_rounds=%lld\n",
           med[0], med[1], q, cmd[0], cmd[1], asks1 - asks0, during);

    for (int t = 0; t < 2; t++) rlk_client_free(cl[t]);
    for (int i = 0; i < TSN_SENTINELS; i++) rlk_conn_free(sc[i]);
    rlk_conn_free(admin);
    relay_stop();
    tsn_stop(env);
    return 0;
}
