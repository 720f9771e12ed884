/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Connection benchmark: resplock's connection layer against a raw-socket
 * floor and hiredis, in one run, on one local redis-server that this
 * program starts on a free loopback port (tests/server.c) and stops at
 * the end.  `make bench` builds and runs it.
 *
 * Three workloads:
 *   PING round trips     rlk_conn_command  / raw loop / redisCommand
 *   EVALSHA round trips  rlk_conn_eval     / raw loop / redisCommand
 *   100,000 pipelined SETs
 *                        rlk_conn_pipeline / raw write-all read-all /
 *                        redisAppendCommand(Argv) x N, redisGetReply x N
 *
 * Every contender keeps one connection open to the same server for the
 * whole run.  After a warm-up, each workload runs many short rounds
 * (RT_ROUNDS, PIPE_ROUNDS); in each round every contender does the same
 * work, one after the other, and the order rotates from round to round,
 * so that none always runs first or always follows the same neighbour.
 * Per contender the median round's rate is reported, with the best and
 * the interquartile range.  A ratio between two contenders is the median
 * over rounds of the ratio of their rates in the same round: the two ran
 * next to each other, so a busy stretch of the machine (other processes,
 * a CPU shared with the server) weighs on both; short rounds make that
 * pairing tight.
 *
 * Besides the rate, the client's own CPU time (user + system, from
 * CLOCK_PROCESS_CPUTIME_ID) per operation is shown: on loopback the round
 * trip is mostly the kernel and the server, so the rate moves little with
 * the client's overhead, while its CPU time shows it directly.
 *
 * The raw floor is the least a client can do: a blocking TCP_NODELAY
 * socket, the request bytes prepared in advance, one write, reads until
 * the reply's length, one memcmp; no parser, no timeout, no tree.
 * Every contender checks every reply (value and type), so none can skip
 * work; the request bytes of all three are checked to be identical.
 *
 * `bench_conn WORKLOAD CLIENT [N]` runs one client alone, for a profiler
 * (perf record, perf stat -e 'syscalls:*', valgrind --tool=callgrind).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* sched_setaffinity, in pin.h */
#endif
#include "resplock.h"
#include "pin.h"
#include "raw.h"
#include "server.h"

#include <hiredis.h>

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS 31
#define RT_ROUNDS 21      /* rounds of round trips */
#define RT_OPS 8000       /* round trips per client per round */
#define RT_WARMUP 5000
#define PIPE_ROUNDS 11    /* rounds of pipelines: one pipeline per client */
#define PIPE_N 100000     /* SETs in one pipeline */

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static ts_server *server;


static void die(const char *what)
{
    fprintf(stderr, "bench_conn: %s\n", what);
    ts_stop(server);
    exit(1);
}

static void die2(const char *what, const char *why)
{
    char msg[600];
    snprintf(msg, sizeof msg, "%s: %s", what, why);
    die(msg);
}

static const char token[] = "4f3c2a1e-9b7d-4c5e-8a6f-0123456789ab"; /* 36 bytes */
static const char lock_key[] = "resplock:bench:lock";
static const char ttl_ms[] = "30000";

/* The lock-extend script: renews the key's TTL only while it holds our
 * token. */
static const char extend_lua[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

/* ------------------------------------------------------------------ */
/* The raw floor                                                        */

static int raw_connect(int port)
{
    int fd = bench_raw_connect(port);
    if (fd < 0) die2("raw connect", strerror(errno));
    return fd;
}

static void raw_write_all(int fd, const char *p, size_t n)
{
    if (bench_raw_write_all(fd, p, n) != 0) die2("raw write", errno ? strerror(errno) : "closed");
}

/* One request, then reads until the expected reply's length and checks
 * it; anything more would mean the stream is out of step. */
static void raw_roundtrip(int fd, const char *req, size_t reqlen, const char *want,
                          size_t wantlen)
{
    char buf[256];
    size_t have = 0;
    raw_write_all(fd, req, reqlen);
    while (have < wantlen) {
        ssize_t r = read(fd, buf + have, sizeof buf - have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die2("raw read", r < 0 ? strerror(errno) : "closed");
        have += (size_t)r;
    }
    if (have != wantlen || memcmp(buf, want, wantlen) != 0) die("raw: unexpected reply");
}

/* ------------------------------------------------------------------ */
/* Contenders                                                           */

typedef struct env {
    int raw_fd;
    rlk_conn *conn;
    redisContext *hi;
    rlk_script script;
    /* the requests, prepared before timing */
    const char *ping_wire;
    size_t ping_len;
    char eval_wire[256];
    size_t eval_len;
    /* the pipeline */
    char (*keys)[32];
    size_t *keylens;
    const char *(*argvs)[3];
    size_t (*lens)[3];
    rlk_request *reqs;
    rlk_resp_value **replies;
    rlk_buf pipe_wire;       /* the raw floor's 100,000 SETs */
    char *pipe_rx;
} env;

typedef void (*op_fn)(env *e, long n);

/* ---- PING */

static void ping_raw(env *e, long n)
{
    for (long i = 0; i < n; i++)
        raw_roundtrip(e->raw_fd, e->ping_wire, e->ping_len, "+PONG\r\n", 7);
}

static void ping_resplock(env *e, long n)
{
    static const char *const argv[1] = {"PING"};
    static const size_t lens[1] = {4};
    for (long i = 0; i < n; i++) {
        rlk_resp_value *v;
        if (rlk_conn_command(e->conn, &v, 1, argv, lens) != RLK_OK)
            die2("rlk_conn_command PING", rlk_conn_errmsg(e->conn));
        if (v->type != RLK_RESP_SIMPLE || v->len != 4 || memcmp(v->str, "PONG", 4) != 0)
            die("resplock: PING: unexpected reply");
    }
}

static void ping_hiredis(env *e, long n)
{
    for (long i = 0; i < n; i++) {
        redisReply *r = redisCommand(e->hi, "PING");
        if (!r) die2("redisCommand PING", e->hi->errstr);
        if (r->type != REDIS_REPLY_STATUS || r->len != 4 || memcmp(r->str, "PONG", 4) != 0)
            die("hiredis: PING: unexpected reply");
        freeReplyObject(r);
    }
}

/* ---- EVALSHA */

static void eval_raw(env *e, long n)
{
    for (long i = 0; i < n; i++) raw_roundtrip(e->raw_fd, e->eval_wire, e->eval_len, ":1\r\n", 4);
}

static void eval_resplock(env *e, long n)
{
    const char *argv[3] = {lock_key, token, ttl_ms};
    const size_t lens[3] = {sizeof lock_key - 1, sizeof token - 1, sizeof ttl_ms - 1};
    for (long i = 0; i < n; i++) {
        rlk_resp_value *v;
        if (rlk_conn_eval(e->conn, &v, &e->script, 1, 3, argv, lens) != RLK_OK)
            die2("rlk_conn_eval", rlk_conn_errmsg(e->conn));
        if (v->type != RLK_RESP_INTEGER || v->integer != 1)
            die("resplock: EVALSHA: unexpected reply");
    }
}

static void eval_hiredis(env *e, long n)
{
    for (long i = 0; i < n; i++) {
        redisReply *r = redisCommand(e->hi, "EVALSHA %s 1 %s %s %s", e->script.sha1, lock_key,
                                     token, ttl_ms);
        if (!r) die2("redisCommand EVALSHA", e->hi->errstr);
        if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
            die("hiredis: EVALSHA: unexpected reply");
        freeReplyObject(r);
    }
}

/* ---- pipelined SETs; n is the pipeline's length */

static void pipe_raw(env *e, long n)
{
    /* Written in 64 KiB pieces; between them, whatever replies have come
     * are taken without waiting, so neither side's buffers fill up. */
    const size_t want = (size_t)n * 5;
    const char *p = e->pipe_wire.data;
    size_t left = e->pipe_wire.len, have = 0;
    if (n != PIPE_N) die("pipe_raw: the prepared bytes are for PIPE_N SETs");
    while (left > 0 || have < want) {
        if (left > 0) {
            size_t k = left < 65536 ? left : 65536;
            raw_write_all(e->raw_fd, p, k);
            p += k;
            left -= k;
        }
        ssize_t r = recv(e->raw_fd, e->pipe_rx + have, want - have, left > 0 ? MSG_DONTWAIT : 0);
        if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (r <= 0) die2("raw pipeline read", r < 0 ? strerror(errno) : "closed");
        have += (size_t)r;
    }
    for (size_t i = 0; i < want; i += 5)
        if (memcmp(e->pipe_rx + i, "+OK\r\n", 5) != 0) die("raw: SET: unexpected reply");
}

static void pipe_resplock(env *e, long n)
{
    if (rlk_conn_pipeline(e->conn, (size_t)n, e->reqs, e->replies) != RLK_OK)
        die2("rlk_conn_pipeline", rlk_conn_errmsg(e->conn));
    for (long i = 0; i < n; i++) {
        const rlk_resp_value *v = e->replies[i];
        if (v->type != RLK_RESP_SIMPLE || v->len != 2 || memcmp(v->str, "OK", 2) != 0)
            die("resplock: SET: unexpected reply");
    }
}

static void hiredis_collect(env *e, long n)
{
    for (long i = 0; i < n; i++) {
        redisReply *r;
        if (redisGetReply(e->hi, (void **)&r) != REDIS_OK) die2("redisGetReply", e->hi->errstr);
        if (r->type != REDIS_REPLY_STATUS || r->len != 2 || memcmp(r->str, "OK", 2) != 0)
            die("hiredis: SET: unexpected reply");
        freeReplyObject(r);
    }
}

static void pipe_hiredis_argv(env *e, long n)
{
    for (long i = 0; i < n; i++)
        if (redisAppendCommandArgv(e->hi, 3, e->argvs[i], e->lens[i]) != REDIS_OK)
            die2("redisAppendCommandArgv", e->hi->errstr);
    hiredis_collect(e, n);
}

static void pipe_hiredis_fmt(env *e, long n)
{
    for (long i = 0; i < n; i++)
        if (redisAppendCommand(e->hi, "SET %b %b", e->keys[i], e->keylens[i], token,
                               sizeof token - 1) != REDIS_OK)
            die2("redisAppendCommand", e->hi->errstr);
    hiredis_collect(e, n);
}

/* ------------------------------------------------------------------ */
/* Measuring                                                            */

typedef struct contender {
    const char *label;
    const char *protocol;
    op_fn fn;
    int role;                 /* ROLE_* */
    struct {
        double secs[MAX_ROUNDS], cpu[MAX_ROUNDS];
        int rounds;
        long ops;
    } m;                      /* filled by measure() */
} contender;

enum { ROLE_RAW, ROLE_OURS, ROLE_HIREDIS, ROLE_OTHER };

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n), interpolated. */
static double quantile(const double *v, int n, double q)
{
    double s[MAX_ROUNDS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof s[0], cmp_double);
    double at = q * (n - 1);
    int i = (int)at;
    return i + 1 < n ? s[i] + (s[i + 1] - s[i]) * (at - i) : s[i];
}

/* Rates of each round, in operations per second. */
static void rates(const contender *c, double *out)
{
    for (int r = 0; r < c->m.rounds; r++) out[r] = (double)c->m.ops / c->m.secs[r];
}

static double rate_quantile(const contender *c, double q)
{
    double v[MAX_ROUNDS];
    rates(c, v);
    return quantile(v, c->m.rounds, q);
}

/* a's rate over b's: the median of the ratios of the same round, where
 * the two ran next to each other, so that a slow stretch of the machine
 * weighs on both. */
static double paired_ratio(const contender *a, const contender *b)
{
    double v[MAX_ROUNDS];
    for (int r = 0; r < a->m.rounds; r++) v[r] = b->m.secs[r] / a->m.secs[r];
    return quantile(v, a->m.rounds, 0.5);
}

/* Warm-up, then `rounds` rounds of every contender in rotating order. */
static void measure(env *e, contender *c, int nc, int rounds, long ops, long warmup)
{
    for (int i = 0; i < nc; i++) c[i].fn(e, warmup);
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < nc; k++) {
            contender *x = &c[(k + r) % nc];
            double c0 = cpu_now(), t0 = now();
            x->fn(e, ops);
            x->m.secs[r] = now() - t0;
            x->m.cpu[r] = cpu_now() - c0;
        }
    }
    for (int i = 0; i < nc; i++) {
        c[i].m.rounds = rounds;
        c[i].m.ops = ops;
    }
}

/* ------------------------------------------------------------------ */
/* Report                                                               */

static void fmt_rate(char *out, size_t cap, double v)
{
    if (v >= 1e6) snprintf(out, cap, "%.2f M", v / 1e6);
    else if (v >= 1e3) snprintf(out, cap, "%.1f k", v / 1e3);
    else snprintf(out, cap, "%.1f", v);
}

typedef struct verdict {
    const char *what;
    double ratio, best_ratio, target;
} verdict;

static verdict verdicts[8];
static int nverdicts;

static void add_verdict(const char *what, const contender *ours, const contender *other,
                        double target)
{
    verdicts[nverdicts].what = what;
    verdicts[nverdicts].ratio = paired_ratio(ours, other);
    verdicts[nverdicts].best_ratio = rate_quantile(ours, 1) / rate_quantile(other, 1);
    verdicts[nverdicts].target = target;
    nverdicts++;
}

static void report(const char *title, const char *unit, contender *c, int nc,
                   double raw_target, const char *raw_what, const char *hi_what)
{
    const contender *raw = NULL, *ours = NULL, *hi = NULL;
    for (int i = 0; i < nc; i++) {
        if (c[i].role == ROLE_RAW) raw = &c[i];
        if (c[i].role == ROLE_OURS) ours = &c[i];
        if (c[i].role == ROLE_HIREDIS) hi = &c[i];
    }
    printf("  %s: %d rounds of %ld %s per client\n", title, c[0].m.rounds, c[0].m.ops, unit);
    for (int i = 0; i < nc; i++) {
        char med[32], best[32], vs_raw[16] = "", vs_hi[16] = "";
        double m = rate_quantile(&c[i], 0.5);
        fmt_rate(med, sizeof med, m);
        fmt_rate(best, sizeof best, rate_quantile(&c[i], 1));
        double iqr = (rate_quantile(&c[i], 0.75) - rate_quantile(&c[i], 0.25)) / m * 100;
        double cpu = quantile(c[i].m.cpu, c[i].m.rounds, 0.5) / (double)c[i].m.ops;
        if (raw && &c[i] != raw) snprintf(vs_raw, sizeof vs_raw, "%.3fx", paired_ratio(&c[i], raw));
        if (hi && &c[i] != hi) snprintf(vs_hi, sizeof vs_hi, "%.3fx", paired_ratio(&c[i], hi));
        printf("    %-34s %-5s %9s %9s %5.1f%% %9.2f %8s %9s\n", c[i].label, c[i].protocol, med,
               best, iqr, cpu * 1e6, vs_raw, vs_hi);
    }
    if (raw_what && raw && ours) add_verdict(raw_what, ours, raw, raw_target);
    if (hi_what && hi && ours) add_verdict(hi_what, ours, hi, 1.0);
}

/* ------------------------------------------------------------------ */
/* Set-up                                                               */

static void prepare_pipeline(env *e)
{
    e->keys = malloc(sizeof *e->keys * PIPE_N);
    e->keylens = malloc(sizeof *e->keylens * PIPE_N);
    e->argvs = malloc(sizeof *e->argvs * PIPE_N);
    e->lens = malloc(sizeof *e->lens * PIPE_N);
    e->reqs = malloc(sizeof *e->reqs * PIPE_N);
    e->replies = malloc(sizeof *e->replies * PIPE_N);
    e->pipe_rx = malloc((size_t)PIPE_N * 5);
    if (!e->keys || !e->keylens || !e->argvs || !e->lens || !e->reqs || !e->replies ||
        !e->pipe_rx)
        die("out of memory");
    rlk_buf_init(&e->pipe_wire);
    for (long i = 0; i < PIPE_N; i++) {
        int k = snprintf(e->keys[i], sizeof e->keys[i], "resplock:bench:k:%06ld", i);
        e->keylens[i] = (size_t)k;
        e->argvs[i][0] = "SET";
        e->argvs[i][1] = e->keys[i];
        e->argvs[i][2] = token;
        e->lens[i][0] = 3;
        e->lens[i][1] = (size_t)k;
        e->lens[i][2] = sizeof token - 1;
        e->reqs[i].script = NULL;
        e->reqs[i].nkeys = 0;
        e->reqs[i].argc = 3;
        e->reqs[i].argv = e->argvs[i];
        e->reqs[i].argvlen = e->lens[i];
        if (rlk_resp_append_command(&e->pipe_wire, 3, e->argvs[i], e->lens[i]) != RLK_OK)
            die("rlk_resp_append_command");
        /* The same bytes from hiredis, for the first few. */
        if (i < 3) {
            char *h = NULL;
            int hn = redisFormatCommand(&h, "SET %b %b", e->keys[i], e->keylens[i], token,
                                        sizeof token - 1);
            size_t ours = rlk_resp_command_size(3, e->argvs[i], e->lens[i]);
            if (hn <= 0 || (size_t)hn != ours ||
                memcmp(h, e->pipe_wire.data + e->pipe_wire.len - ours, ours) != 0)
                die("resplock and hiredis encode SET differently");
            redisFreeCommand(h);
        }
    }
}

/* The raw requests, built by hand and checked against both encoders. */
static void prepare_requests(env *e)
{
    e->ping_wire = "*1\r\n$4\r\nPING\r\n";
    e->ping_len = strlen(e->ping_wire);
    int n = snprintf(e->eval_wire, sizeof e->eval_wire,
                     "*6\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$%zu\r\n%s\r\n"
                     "$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                     e->script.sha1, sizeof lock_key - 1, lock_key, sizeof token - 1, token,
                     sizeof ttl_ms - 1, ttl_ms);
    e->eval_len = (size_t)n;

    const char *argv[6] = {"EVALSHA", e->script.sha1, "1", lock_key, token, ttl_ms};
    rlk_buf b;
    rlk_buf_init(&b);
    if (rlk_resp_append_command(&b, 6, argv, NULL) != RLK_OK) die("rlk_resp_append_command");
    char *h = NULL;
    int hn = redisFormatCommand(&h, "EVALSHA %s 1 %s %s %s", e->script.sha1, lock_key, token,
                                ttl_ms);
    if (b.len != e->eval_len || memcmp(b.data, e->eval_wire, b.len) != 0 || hn != (int)b.len ||
        memcmp(h, e->eval_wire, b.len) != 0)
        die("the three clients would send different EVALSHA bytes");
    redisFreeCommand(h);
    b.len = 0;
    const char *ping[1] = {"PING"};
    hn = redisFormatCommand(&h, "PING");
    if (rlk_resp_append_command(&b, 1, ping, NULL) != RLK_OK || b.len != e->ping_len ||
        memcmp(b.data, e->ping_wire, b.len) != 0 || hn != (int)b.len ||
        memcmp(h, e->ping_wire, b.len) != 0)
        die("the three clients would send different PING bytes");
    redisFreeCommand(h);
    rlk_buf_free(&b);
}

/* SET the lock key and SCRIPT LOAD the script, checking its SHA1. */
static void prepare_server(env *e)
{
    redisReply *r = redisCommand(e->hi, "SET %s %s", lock_key, token);
    if (!r || r->type != REDIS_REPLY_STATUS) die("SET of the lock key failed");
    freeReplyObject(r);
    r = redisCommand(e->hi, "SCRIPT LOAD %s", extend_lua);
    if (!r || r->type != REDIS_REPLY_STRING || strcmp(r->str, e->script.sha1) != 0)
        die("SCRIPT LOAD: the server's SHA1 differs from resplock's");
    freeReplyObject(r);
}

/* ------------------------------------------------------------------ */

/* `bench_conn WORKLOAD CLIENT [N]`: one client alone, N operations (or
 * pipelines), for a profiler (perf record, valgrind --tool=callgrind). */
static int run_alone(env *e, const char *workload, const char *client, long n)
{
    static const struct {
        const char *workload, *client;
        op_fn fn;
        long ops, dflt;
    } table[] = {
        {"ping", "raw", ping_raw, 1, RT_OPS * RT_ROUNDS},
        {"ping", "resplock", ping_resplock, 1, RT_OPS * RT_ROUNDS},
        {"ping", "hiredis", ping_hiredis, 1, RT_OPS * RT_ROUNDS},
        {"eval", "raw", eval_raw, 1, RT_OPS * RT_ROUNDS},
        {"eval", "resplock", eval_resplock, 1, RT_OPS * RT_ROUNDS},
        {"eval", "hiredis", eval_hiredis, 1, RT_OPS * RT_ROUNDS},
        {"pipe", "raw", pipe_raw, PIPE_N, PIPE_ROUNDS},
        {"pipe", "resplock", pipe_resplock, PIPE_N, PIPE_ROUNDS},
        {"pipe", "hiredis", pipe_hiredis_argv, PIPE_N, PIPE_ROUNDS},
        {"pipe", "hiredis-fmt", pipe_hiredis_fmt, PIPE_N, PIPE_ROUNDS},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].workload, workload) != 0 || strcmp(table[i].client, client) != 0)
            continue;
        if (n <= 0) n = table[i].dflt;
        double c0 = cpu_now(), t0 = now();
        for (long k = 0; k < n; k++) table[i].fn(e, table[i].ops);
        double t = now() - t0, c = cpu_now() - c0;
        double ops = (double)n * (double)table[i].ops;
        printf("%s %s: %.0f operations in %.3f s, %.1f k/s, client CPU %.2f us/op\n", workload,
               client, ops, t, ops / t / 1e3, c / ops * 1e6);
        return 0;
    }
    fprintf(stderr, "usage: bench_conn [ping|eval|pipe raw|resplock|hiredis|hiredis-fmt [N]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    double start = now();
    env e;
    memset(&e, 0, sizeof e);
    if (argc != 1 && argc != 3 && argc != 4) {
        fprintf(stderr, "usage: bench_conn [ping|eval|pipe raw|resplock|hiredis|hiredis-fmt [N]]\n");
        return 2;
    }

    server = ts_start(NULL);
    if (!server) die("cannot start redis-server");
    /* Server on CPU 0, clients on CPU 1, as client and server on two
     * machines would be; RLK_BENCH_PIN=0 leaves placement to the kernel
     * (round trips then swing between two speeds). */
    const char *pe = getenv("RLK_BENCH_PIN");
    int pinned = !(pe && strcmp(pe, "0") == 0) && sysconf(_SC_NPROCESSORS_ONLN) >= 2;
    if (pinned && (bench_pin(server->pid, 0) != 0 || bench_pin(0, 1) != 0))
        die2("sched_setaffinity", strerror(errno));

    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", server->port);
    rlk_conn_config cfg;
    rlk_conn_config_init(&cfg);
    cfg.url = url; /* protocol 0: HELLO 3, as shipped */
    e.conn = rlk_conn_new(&cfg);
    if (!e.conn) die("rlk_conn_new: out of memory");
    if (rlk_conn_connect(e.conn) != RLK_OK) die2("rlk_conn_connect", rlk_conn_errmsg(e.conn));
    const rlk_conn_info *info = rlk_conn_get_info(e.conn);

    struct timeval tv = {5, 0};
    e.hi = redisConnectWithTimeout("127.0.0.1", server->port, tv);
    if (!e.hi || e.hi->err) die2("redisConnect", e.hi ? e.hi->errstr : "out of memory");
    e.raw_fd = raw_connect(server->port);

    rlk_script_init(&e.script, extend_lua, 0);
    prepare_server(&e);
    prepare_requests(&e);
    prepare_pipeline(&e);

    if (argc > 1) {
        int rc = run_alone(&e, argv[1], argv[2], argc > 3 ? atol(argv[3]) : 0);
        redisFree(e.hi);
        close(e.raw_fd);
        rlk_conn_free(e.conn);
        ts_stop(server);
        return rc;
    }

    char rlk_proto[8];
    snprintf(rlk_proto, sizeof rlk_proto, "RESP%d", info->protocol);
    char load0[64];
    bench_loadavg(load0, sizeof load0);

    printf("resplock connection benchmark: resplock %s against a raw socket and hiredis %d.%d.%d\n"
           "server: %s %s on 127.0.0.1:%d, started by this program; %ld CPUs online,\n"
           "load average %s at the start; %s\n\n",
           RLK_VERSION, HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH,
           info->server[0] ? info->server : "redis", info->version, server->port,
           sysconf(_SC_NPROCESSORS_ONLN), load0,
           pinned ? "server pinned to CPU 0, clients to CPU 1" : "placement left to the kernel");
    printf("Each client keeps one connection to the same server.  After a warm-up, many\n"
           "short rounds; in each, every client does the same work in turn, the order\n"
           "rotating from round to round.  Shown per client: the median round's rate,\n"
           "the best round's, the IQR (rates of the middle half of the rounds, as a share\n"
           "of the median), and its own CPU time (user + system) per operation in the\n"
           "median round.  \"/ raw\" and \"/ hiredis\": the median over rounds of the ratio\n"
           "of the two clients' rates in the same round (neighbours in time, so that a\n"
           "busy moment of the machine weighs on both).\n"
           "  raw       blocking TCP_NODELAY socket, request bytes prepared in advance,\n"
           "            write, read to the reply's length, memcmp: no parser, no timeout\n"
           "  resplock  rlk_conn_* as shipped: HELLO 3 handshake (%s here), a deadline\n"
           "            per call (command_timeout_ms 5000), non-blocking socket and poll,\n"
           "            a reply tree per reply\n"
           "  hiredis   blocking redisContext (RESP2 only), a redisReply per reply\n"
           "The request bytes of all three are identical (checked), and so are the reply\n"
           "bytes: +PONG, :1 and +OK read the same in RESP2 and RESP3.\n\n",
           rlk_proto);

    printf("  %-36s %-5s %9s %9s %6s %9s %8s %9s\n", "workload / client", "proto", "median/s",
           "best/s", "IQR", "cpu us/op", "/ raw", "/ hiredis");

    contender ping[3] = {
        {.label = "raw socket (floor)", .protocol = "RESP2", .fn = ping_raw, .role = ROLE_RAW},
        {.label = "resplock rlk_conn_command", .protocol = rlk_proto, .fn = ping_resplock,
         .role = ROLE_OURS},
        {.label = "hiredis redisCommand", .protocol = "RESP2", .fn = ping_hiredis,
         .role = ROLE_HIREDIS},
    };
    measure(&e, ping, 3, RT_ROUNDS, RT_OPS, RT_WARMUP);
    report("PING round trips", "PINGs", ping, 3, 0.95, "PING: resplock / raw floor",
           "PING: resplock / hiredis");

    contender eval[3] = {
        {.label = "raw socket (floor)", .protocol = "RESP2", .fn = eval_raw, .role = ROLE_RAW},
        {.label = "resplock rlk_conn_eval", .protocol = rlk_proto, .fn = eval_resplock,
         .role = ROLE_OURS},
        {.label = "hiredis redisCommand EVALSHA", .protocol = "RESP2", .fn = eval_hiredis,
         .role = ROLE_HIREDIS},
    };
    measure(&e, eval, 3, RT_ROUNDS, RT_OPS, RT_WARMUP);
    report("EVALSHA round trips (lock extend script)", "calls", eval, 3, 0.95,
           "EVALSHA: resplock / raw floor", "EVALSHA: resplock / hiredis");

    contender pipe[4] = {
        {.label = "raw socket (floor)", .protocol = "RESP2", .fn = pipe_raw, .role = ROLE_RAW},
        {.label = "resplock rlk_conn_pipeline", .protocol = rlk_proto, .fn = pipe_resplock,
         .role = ROLE_OURS},
        {.label = "hiredis AppendCommandArgv", .protocol = "RESP2", .fn = pipe_hiredis_argv,
         .role = ROLE_HIREDIS},
        {.label = "hiredis AppendCommand \"SET %b %b\"", .protocol = "RESP2",
         .fn = pipe_hiredis_fmt, .role = ROLE_OTHER},
    };
    measure(&e, pipe, 4, PIPE_ROUNDS, PIPE_N, PIPE_N);
    report("pipelined SETs", "SETs, one pipeline", pipe, 4, 0, NULL,
           "pipeline: resplock / hiredis");
    printf("    (resplock / hiredis redisAppendCommand with a format: %.3fx)\n",
           paired_ratio(&pipe[1], &pipe[3]));

    char load1[64];
    bench_loadavg(load1, sizeof load1);
    printf("\n  Notes: round trips are counted in calls per second, the pipelines in SETs\n"
           "  per second.  The raw pipeline sends bytes encoded before timing, in 64 KiB\n"
           "  writes, taking the replies that have come between them; resplock and\n"
           "  hiredis encode inside the timed call.  hiredis's anchor for the pipeline is\n"
           "  redisAppendCommandArgv, which takes the same prepared argv as resplock (no\n"
           "  format string to parse); redisAppendCommand, what most hiredis code\n"
           "  writes, is slower.  On loopback a round trip is mostly the kernel's TCP\n"
           "  path, two wake-ups and the server's event loop: rates within each other's\n"
           "  IQR are hard to tell apart, and other work on the machine moves them; the\n"
           "  CPU column shows each client's own cost.\n"
           "  Load average at the end: %s.\n\n",
           load1);

    printf("Targets (median of same-round ratios; best round over best round in brackets):\n");
    for (int i = 0; i < nverdicts; i++) {
        int met = verdicts[i].ratio >= verdicts[i].target;
        printf("  %-32s %6.3fx (%5.3fx)  target >= %.2fx  %s\n", verdicts[i].what,
               verdicts[i].ratio, verdicts[i].best_ratio, verdicts[i].target,
               met ? "met" : "NOT MET");
    }

    redisFree(e.hi);
    close(e.raw_fd);
    rlk_conn_free(e.conn);
    ts_stop(server);
    server = NULL;
    rlk_buf_free(&e.pipe_wire);
    free(e.keys);
    free(e.keylens);
    free(e.argvs);
    free(e.lens);
    free(e.reqs);
    free(e.replies);
    free(e.pipe_rx);
    printf("\nTotal time %.1f s.\n", now() - start);
    return 0;
}
