/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lock benchmark: resplock's lock layer against a raw-socket floor and
 * redis-py's Lock, in one run, on one local server that this program
 * starts on a free loopback port (tests/server.c: $RLK_REDIS_SERVER,
 * default redis-server) and stops at the end.  `make bench` builds and
 * runs it; `make bench-servers` runs it on each server of
 * scripts/servers and prints one table (bench/servers).
 *
 * What the server is comes from INFO server (server_name, valkey_version,
 * redis_version), and from that which native forms it has: DELIFEQ
 * (Valkey 9.0+), DELEX key IFEQ (Redis 8.4+, Valkey 9.2+), SET IFEQ
 * (Valkey 8.1+, Redis 8.4+).  They decide the minimal cycle and the
 * minimal renewal below; the header prints them.
 *
 * Five workloads:
 *
 *   uncontended   acquire + release cycles on one free lock, one client:
 *                 rlk_lock_acquire (wait 0) + rlk_lock_release, against
 *                 the raw floor (the same requests, byte for byte, as the
 *                 same two round trips over a blocking socket: SET NX PX,
 *                 HGET of the window resplock keeps away in (see
 *                 src/lua/release.lua) and TIME together, then the
 *                 release as the library sent it: DELIFEQ or DELEX IFEQ
 *                 where the server has it, else FCALL, or EVALSHA on a
 *                 server without FUNCTIONs) and
 *                 against redis-py (python3-redis: r.lock(name,
 *                 timeout=30), acquire(blocking=False), release(), timed
 *                 in Python).
 *   contended     8 processes on one lock, each looping acquire (wait
 *                 forever), a tiny critical section, release, for a fixed
 *                 time; then the same with 8 Python processes and
 *                 redis-py's blocking acquire (its default polling,
 *                 sleep=0.1).  Every process stamps CLOCK_MONOTONIC (one
 *                 clock for all processes) when its acquire returns and
 *                 when it calls release; a handoff is the time from one
 *                 holder calling release to the next holder's acquire
 *                 returning.  The median is also given in round trips,
 *                 taking the median PING round trip of an idle raw
 *                 socket as the unit.  A third row runs resplock with 2
 *                 processes: fewer processes on the CPUs, to show the
 *                 protocol path with less queueing for the CPU.  The CPU
 *                 time of all processes and of the server per
 *                 acquisition is printed beside the wall time per
 *                 acquisition: when they are equal the CPUs are saturated.
 *   watchdog      renewing 10,000 held locks: one rlk_client_tick (the
 *                 library's batched renewal: a SET IFEQ PX per lock where
 *                 the server has it, else 10 script calls of 1000 keys,
 *                 in one pipeline) against one rlk_extend_token per lock,
 *                 one after the other, and against the minimal renewal
 *                 of every lock, sent raw in one pipeline.
 *   server time   the server's own time per uncontended cycle (INFO
 *   per cycle     commandstats after CONFIG RESETSTAT, summed over the
 *                 top-level commands: SET, HGET, TIME, EVALSHA, FCALL,
 *                 DELIFEQ, DELEX; a script's inner calls are within its
 *                 caller's time), resplock's cycle against the minimal
 *                 correct one the server allows, sent raw: SET NX PX, then
 *                 DELIFEQ (or DELEX IFEQ where only that exists), else a
 *                 compare-and-delete script by EVALSHA.  Where a native
 *                 release exists the script cycle runs too, for
 *                 reference.  Rounds alternate; the medians and the
 *                 median of the same-round ratios are printed, with the
 *                 time per call of each command.  The calls are counted:
 *                 as many SETs, releases (and for resplock HGETs and
 *                 TIMEs) as cycles, and no other, or the run stops.
 *   server time   the server's own time per lock in a renewal round of
 *   per renewal   the watchdog workload (INFO commandstats after CONFIG
 *                 RESETSTAT): resplock's batched round against the
 *                 minimal per-lock renewal of the same locks, pipelined
 *                 raw: SET key token IFEQ token PX ttl where the server
 *                 has SET IFEQ, else a compare-and-pexpire script by
 *                 EVALSHA.  Summed over the top-level commands: where a
 *                 round called scripts, SET and the script calls (the
 *                 other commands counted are the scripts' inner calls);
 *                 else every command.  Each command's calls per lock and
 *                 time per call are printed.
 *
 * Where the processes run changes a loopback round trip several times
 * over (one CPU: two context switches; two CPUs: a wake-up of the other
 * CPU, in a VM through the hypervisor), and left to the kernel the
 * placement changes from round to round.  So every workload runs twice,
 * pinned: server and clients on the same CPU, then on separate CPUs.
 * RLK_BENCH_PIN=0 runs once, unpinned.
 *
 * The raw floor's bytes are captured, not rebuilt: one client of the
 * library talks to the server through a small relay in this program,
 * which records what the client sends during one acquire + release
 * cycle after a warm-up (so the scripts are loaded and no SCRIPT LOAD is
 * in the way).  Those bytes are split into the requests and checked:
 * the acquire's round trip is SET NX PX on the lock, HGET of the window
 * and TIME (its fence), the release's is DELIFEQ, DELEX IFEQ, FCALL or
 * EVALSHA on the lock.
 * They are replayed as they are, and the replies checked: +OK, a null
 * (no window) and TIME's two numbers, then :1.  Only the
 * random token differs from what the library sends in each cycle (same
 * length).
 *
 * After the targets, the run prints what bounds them on this machine,
 * from its own measurements: the raw floor against redis-py (no client
 * making the same two round trips can do better), the server's CPU time
 * per contended acquisition, and the server's time in a batched renewal
 * round (INFO commandstats) against one call per lock.  The server time
 * per uncontended cycle and per renewed lock are targets of their own
 * (resplock's within 1.5x of the minimal's); the server CPU per contended
 * acquisition stays among the bounds.  At the end one line per placement
 * ("summary" and key=value pairs) gives the figures for bench/servers.
 *
 * Correctness is checked as the numbers are taken: every reply is
 * checked; in the contended runs a critical section that finds another
 * process inside (an owner word in shared memory, compare-and-swap), an
 * acquire stamped before the previous holder called release, or a fencing
 * token that does not increase, is counted and reported as a failure.
 */
#define _GNU_SOURCE 1 /* sched_setaffinity */
#include "resplock.h"
#include "pin.h"
#include "raw.h"
#include "server.h"
#include "util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define UNC_ROUNDS 11        /* rounds of the uncontended workload          */
#define UNC_OPS 2000         /* cycles per contender per round              */
#define UNC_WARMUP 1000
#define NPROC 8              /* contending processes                        */
#define CONT_SECONDS 3       /* length of each contended run                */
#define MAXREC 200000        /* records per contending process              */
#define WD_LOCKS 10000       /* locks held for the watchdog workload        */
#define WD_ROUNDS 11
#define PING_N 20000         /* PINGs timed one by one for the round trip   */
#define MAX_ROUNDS BENCH_MAX_ROUNDS
#define SRV_ROUNDS 7         /* rounds of each cycle for the server's time  */
#define SRV_OPS 10000        /* cycles per round                            */
#define SRV_WARMUP 2000

static const char unc_name[] = "resplock:bench:uncontended";
static const char cont_name[] = "resplock:bench:contended";
static const char py_cont_name[] = "resplock:bench:contended-py";

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

#define now_ns bench_now_ns
#define cpu_now bench_cpu_now
#define quantile bench_quantile
#define quantile_sorted bench_quantile_sorted
#define fmt_rate bench_fmt_rate
#define proc_cpu bench_proc_cpu

static ts_server *server;
static pid_t main_pid;


static void die(const char *what)
{
    fprintf(stderr, "bench_lock: %s\n", what);
    if (getpid() != main_pid) _exit(1); /* a child: the parent stops the server */
    ts_stop(server);
    exit(1);
}

static void die2(const char *what, const char *why)
{
    char msg[700];
    snprintf(msg, sizeof msg, "%s: %s", what, why);
    die(msg);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static char url[64];

#define pin bench_pin

static rlk_client *new_client(const char *u)
{
    char why[600];
    rlk_client *cl = bench_client(u, why, sizeof why);
    if (!cl) die(why);
    return cl;
}

static void acquire_release(rlk_client *cl, const char *name)
{
    if (bench_cycle(cl, name) != RLK_OK) die2("acquire + release", rlk_client_errmsg(cl));
}

/* ------------------------------------------------------------------ */
/* Raw sockets                                                          */

static int raw_connect(int port)
{
    int fd = bench_raw_connect(port);
    if (fd < 0) die2("raw connect", strerror(errno));
    return fd;
}

static void write_all(int fd, const char *p, size_t n)
{
    if (bench_raw_write_all(fd, p, n) != 0) die2("write", errno ? strerror(errno) : "closed");
}

/* Sends req, reads a reply of exactly `lines` lines (CRLF-terminated,
 * none of them a bulk payload) into buf, and returns its length.  The
 * least a client can do: no parser, no timeout. */
static size_t raw_roundtrip(int fd, const char *req, size_t reqlen, int lines, char *buf,
                            size_t cap)
{
    size_t have = 0;
    int seen = 0;
    write_all(fd, req, reqlen);
    while (seen < lines) {
        ssize_t r = read(fd, buf + have, cap - have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) die2("raw read", r < 0 ? strerror(errno) : "closed");
        for (ssize_t i = 0; i < r; i++)
            if (buf[have + (size_t)i] == '\n') seen++;
        have += (size_t)r;
    }
    if (buf[have - 1] != '\n') die("raw: reply out of step");
    return have;
}

/* The median PING round trip of an idle raw socket, in ns. */
static double ping_rtt_ns(int port)
{
    static double t[PING_N];
    int fd = raw_connect(port);
    char buf[64];
    static const char ping[] = "*1\r\n$4\r\nPING\r\n";
    for (int i = 0; i < 2000; i++) raw_roundtrip(fd, ping, sizeof ping - 1, 1, buf, sizeof buf);
    for (int i = 0; i < PING_N; i++) {
        int64_t t0 = now_ns();
        size_t n = raw_roundtrip(fd, ping, sizeof ping - 1, 1, buf, sizeof buf);
        t[i] = (double)(now_ns() - t0);
        if (n != 7 || memcmp(buf, "+PONG\r\n", 7) != 0) die("raw: PING: unexpected reply");
    }
    close(fd);
    return quantile_sorted(t, PING_N, 0.5);
}

/* ------------------------------------------------------------------ */
/* The relay that captures what the library sends                      */

typedef struct relay {
    int lfd, port, up_port;
    int stop[2];
    pthread_t th;
    pthread_mutex_t mu;
    int recording;
    rlk_buf rec;              /* client-to-server bytes while recording */
} relay;

static void *relay_main(void *arg)
{
    relay *p = arg;
    int c = accept(p->lfd, NULL, NULL);
    if (c < 0) die2("relay accept", strerror(errno));
    int u = raw_connect(p->up_port);
    char buf[65536];
    struct pollfd f[3] = {{c, POLLIN, 0}, {u, POLLIN, 0}, {p->stop[0], POLLIN, 0}};
    for (;;) {
        if (poll(f, 3, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (f[2].revents) break;
        if (f[0].revents) {
            ssize_t n = read(c, buf, sizeof buf);
            if (n <= 0) break;
            pthread_mutex_lock(&p->mu);
            if (p->recording && rlk_buf_append(&p->rec, buf, (size_t)n) != RLK_OK)
                die("relay: out of memory");
            pthread_mutex_unlock(&p->mu);
            write_all(u, buf, (size_t)n);
        }
        if (f[1].revents) {
            ssize_t n = read(u, buf, sizeof buf);
            if (n <= 0) break;
            write_all(c, buf, (size_t)n);
        }
    }
    close(c);
    close(u);
    return NULL;
}

static void relay_start(relay *p, int up_port)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(p, 0, sizeof *p);
    p->up_port = up_port;
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->lfd, 1) != 0 || getsockname(p->lfd, (struct sockaddr *)&a, &len) != 0 ||
        pipe(p->stop) != 0)
        die2("relay", strerror(errno));
    p->port = ntohs(a.sin_port);
    rlk_buf_init(&p->rec);
    pthread_mutex_init(&p->mu, NULL);
    if (pthread_create(&p->th, NULL, relay_main, p) != 0) die("relay: cannot start a thread");
}

static void relay_stop(relay *p)
{
    if (write(p->stop[1], "x", 1) != 1) die2("relay stop", strerror(errno));
    pthread_join(p->th, NULL);
    close(p->lfd);
    close(p->stop[0]);
    close(p->stop[1]);
    pthread_mutex_destroy(&p->mu);
}

/* The forms of a release, in the order of their commands in st_names. */
enum { REL_EVALSHA, REL_FCALL, REL_DELIFEQ, REL_DELEX, REL_N };
static const char *const rel_names[REL_N] = {"EVALSHA", "FCALL", "DELIFEQ", "DELEX IFEQ"};

typedef struct captured {
    rlk_buf acquire, release;        /* the two round trips' bytes, as sent */
    size_t set_len;                  /* acquire's first request: the SET    */
    char token[256];                 /* the SET's token                     */
    char acq_desc[300], rel_desc[300];
    int rel_form;                    /* how the release went: REL_*         */
} captured;

/* Appends "EVALSHA 3f5c.. 2 key1 key2 arg..." with long arguments
 * shortened to out (joined by " + " to what it holds). */
static void describe(const rlk_resp_value *v, char *out, size_t cap)
{
    size_t used = strlen(out);
    if (used && used + 3 < cap) used += (size_t)snprintf(out + used, cap - used, " +");
    for (const rlk_resp_value *e = v->child; e && used + 1 < cap; e = e->next) {
        int n = e->len > 12 ? 8 : (int)e->len;
        int w = snprintf(out + used, cap - used, "%s%.*s%s", used ? " " : "", n, e->str,
                         e->len > 12 ? ".." : "");
        if (w < 0) break;
        used += (size_t)w;
    }
}

static int arg_is(const rlk_resp_value *a, const char *s)
{
    return a && a->len == strlen(s) && strncasecmp(a->str, s, a->len) == 0;
}

static int arg_eq(const rlk_resp_value *a, const char *s)
{
    return a && a->len == strlen(s) && memcmp(a->str, s, a->len) == 0;
}

static void capture_fail(const char *what)
{
    char msg[200];
    snprintf(msg, sizeof msg, "capture: %s", what);
    die(msg);
}

/* Checks the i-th request of a cycle: SET name token NX PX ttl, HGET
 * {name}:waiters ~yield, TIME, then the release: DELIFEQ name token,
 * DELEX name IFEQ token, FCALL of the library's release or EVALSHA with
 * the lock as its first key. */
static void check_request(const rlk_resp_value *v, int i, const char *name, captured *cap)
{
    const rlk_resp_value *cmd = rlk_resp_value_at(v, 0);
    if (v->type != RLK_RESP_ARRAY || !cmd) capture_fail("a request is not a command");
    if (i == 0) {
        int nx = 0, px = 0;
        for (size_t k = 3; k < v->len; k++) {
            const rlk_resp_value *a = rlk_resp_value_at(v, k);
            nx |= arg_is(a, "NX");
            if (arg_is(a, "PX") && k + 1 < v->len) px = 1;
        }
        if (!arg_is(cmd, "SET") || !arg_eq(rlk_resp_value_at(v, 1), name) || !nx || !px)
            capture_fail("the acquire's first request is not SET NX PX on the lock");
    } else if (i == 1) {
        char waiters[128];
        snprintf(waiters, sizeof waiters, "{%s}:waiters", name);
        if (!arg_is(cmd, "HGET") || v->len != 3 || !arg_eq(rlk_resp_value_at(v, 1), waiters) ||
            !arg_eq(rlk_resp_value_at(v, 2), "~yield"))
            capture_fail("the acquire's second request is not HGET of the window");
    } else if (i == 2) {
        if (!arg_is(cmd, "TIME") || v->len != 1)
            capture_fail("the acquire's third request is not TIME");
    } else if (arg_is(cmd, "DELIFEQ") || arg_is(cmd, "DELEX")) {
        int delex = arg_is(cmd, "DELEX");
        cap->rel_form = delex ? REL_DELEX : REL_DELIFEQ;
        if (v->len != (delex ? 4u : 3u) || (delex && !arg_is(rlk_resp_value_at(v, 2), "IFEQ")))
            capture_fail("the release is neither DELIFEQ key token nor DELEX key IFEQ token");
        if (!arg_eq(rlk_resp_value_at(v, 1), name) ||
            !arg_eq(rlk_resp_value_at(v, delex ? 3 : 2), cap->token))
            capture_fail("the release is not on the lock with its token");
    } else {
        const rlk_resp_value *sha = rlk_resp_value_at(v, 1);
        cap->rel_form = arg_is(cmd, "FCALL") ? REL_FCALL : REL_EVALSHA;
        if (cap->rel_form == REL_FCALL
                ? !sha || sha->len < 9 || memcmp(sha->str, "resplock_", 9) != 0
                : !arg_is(cmd, "EVALSHA") || !sha || sha->len != 40)
            capture_fail("the release is none of DELIFEQ, DELEX, FCALL of resplock's, EVALSHA");
        if (!arg_eq(rlk_resp_value_at(v, 3), name))
            capture_fail("the release is not on the lock");
    }
}

static void capture(int port, captured *cap)
{
    relay p;
    relay_start(&p, port);
    char rurl[64];
    snprintf(rurl, sizeof rurl, "redis://127.0.0.1:%d", p.port);
    rlk_client *cl = new_client(rurl);
    for (int i = 0; i < 3; i++) acquire_release(cl, unc_name); /* scripts loaded */
    pthread_mutex_lock(&p.mu);
    p.recording = 1;
    pthread_mutex_unlock(&p.mu);
    acquire_release(cl, unc_name);
    /* The library had every reply, so the relay had forwarded (and
     * recorded) every request. */
    pthread_mutex_lock(&p.mu);
    p.recording = 0;
    rlk_buf all = p.rec;
    pthread_mutex_unlock(&p.mu);
    rlk_client_free(cl);
    relay_stop(&p);

    rlk_resp_arena arena;
    rlk_resp_reader rd;
    rlk_resp_arena_init(&arena, NULL, 0, 0);
    rlk_resp_reader_init(&rd, &arena, NULL);
    size_t off = 0, used;
    rlk_resp_value *v;
    rlk_buf_init(&cap->acquire);
    rlk_buf_init(&cap->release);
    cap->acq_desc[0] = cap->rel_desc[0] = '\0';
    /* One round trip of SET, HGET and TIME (the fence), then the release. */
    for (int i = 0; i < 4; i++) {
        if (rlk_resp_read(&rd, all.data + off, all.len - off, &used, &v) != 1)
            capture_fail("not SET, HGET, TIME and a release, each whole");
        check_request(v, i, unc_name, cap);
        if (i == 0) {
            const rlk_resp_value *tok = rlk_resp_value_at(v, 2);
            if (!tok || tok->len >= sizeof cap->token) capture_fail("the SET's token");
            memcpy(cap->token, tok->str, tok->len);
            cap->token[tok->len] = '\0';
            cap->set_len = used;
        }
        describe(v, i < 3 ? cap->acq_desc : cap->rel_desc, sizeof cap->acq_desc);
        if (rlk_buf_append(i < 3 ? &cap->acquire : &cap->release, all.data + off, used) != RLK_OK)
            die("out of memory");
        off += used;
        rlk_resp_arena_reset(&arena);
    }
    if (off != all.len) capture_fail("more than an acquire and a release were sent");
    rlk_resp_reader_free(&rd);
    rlk_resp_arena_free(&arena);
    rlk_buf_free(&p.rec);
}

/* ------------------------------------------------------------------ */
/* redis-py                                                             */

static const char *python(void)
{
    const char *p = getenv("RLK_PYTHON");
    return p && *p ? p : "/usr/bin/python3";
}

/* Uncontended: reads "N" lines, answers "seconds cpu-seconds" for N
 * cycles. */
static const char py_uncontended[] =
    "import sys, time, redis\n"
    "r = redis.Redis(host='127.0.0.1', port=int(sys.argv[1]))\n"
    "name = sys.argv[2]\n"
    "r.ping()\n"
    "print('ready', flush=True)\n"
    "for line in sys.stdin:\n"
    "    n = int(line)\n"
    "    c0 = time.process_time(); t0 = time.perf_counter()\n"
    "    for _ in range(n):\n"
    "        lock = r.lock(name, timeout=30)\n"
    "        if not lock.acquire(blocking=False):\n"
    "            sys.exit('redis-py: the free lock was not acquired')\n"
    "        lock.release()\n"
    "    t = time.perf_counter() - t0; c = time.process_time() - c0\n"
    "    print('%.9f %.9f' % (t, c), flush=True)\n";

/* Contended: says "ready", reads the end time (CLOCK_MONOTONIC ns), loops
 * until then, prints "acquired release-called released" per cycle and
 * "end". */
static const char py_contended[] =
    "import sys, time, redis\n"
    "r = redis.Redis(host='127.0.0.1', port=int(sys.argv[1]))\n"
    "name = sys.argv[2]\n"
    "clk = time.CLOCK_MONOTONIC\n"
    "r.ping()\n"
    "print('ready', flush=True)\n"
    "end = int(sys.stdin.readline())\n"
    "recs = []\n"
    "while True:\n"
    "    lock = r.lock(name, timeout=30)\n"
    "    if not lock.acquire(blocking=True):\n"
    "        sys.exit('redis-py: acquire(blocking=True) returned False')\n"
    "    a = time.clock_gettime_ns(clk)\n"
    "    rel = time.clock_gettime_ns(clk)\n"
    "    lock.release()\n"
    "    d = time.clock_gettime_ns(clk)\n"
    "    recs.append('%d %d %d' % (a, rel, d))\n"
    "    if d >= end:\n"
    "        break\n"
    "sys.stdout.write('\\n'.join(recs) + '\\nend\\n')\n";

typedef struct pyproc {
    pid_t pid;
    FILE *in, *out;
} pyproc;

static int py_start(pyproc *pp, const char *script, const char *name)
{
    int to[2], from[2];
    char port[16];
    snprintf(port, sizeof port, "%d", server->port);
    /* Close-on-exec: a later Python process must not hold this one's
     * stdin open (its EOF ends it). */
    if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) die2("pipe", strerror(errno));
    fflush(NULL);
    pp->pid = fork();
    if (pp->pid < 0) die2("fork", strerror(errno));
    if (pp->pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]);
        close(to[1]);
        close(from[0]);
        close(from[1]);
        execl(python(), "python3", "-c", script, port, name, (char *)NULL);
        _exit(127);
    }
    close(to[0]);
    close(from[1]);
    pp->in = fdopen(to[1], "w");
    pp->out = fdopen(from[0], "r");
    char line[64];
    if (!pp->in || !pp->out || !fgets(line, sizeof line, pp->out) ||
        strcmp(line, "ready\n") != 0)
        return -1;
    return 0;
}

static void py_stop(pyproc *pp)
{
    int st;
    if (pp->in) fclose(pp->in);
    if (pp->out) fclose(pp->out);
    pp->in = pp->out = NULL;
    waitpid(pp->pid, &st, 0);
}

/* Whether redis-py can be imported at all. */
static int have_redis_py(char *version, size_t cap)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "%s -c 'import redis; print(redis.__version__)' 2>/dev/null",
             python());
    FILE *f = popen(cmd, "r");
    if (!f) return 0;
    int ok = fgets(version, (int)cap, f) != NULL;
    if (pclose(f) != 0) ok = 0;
    if (ok) version[strcspn(version, "\n")] = '\0';
    return ok;
}

/* ------------------------------------------------------------------ */
/* Uncontended                                                          */

typedef struct env {
    int raw_fd;
    rlk_client *cl;
    captured cap;
    pyproc py;
    int have_py;
} env;

typedef struct contender {
    const char *label, *protocol;
    void (*fn)(env *e, long n, double *secs, double *cpu);
    double secs[MAX_ROUNDS], cpu[MAX_ROUNDS];
    int rounds;
    long ops;
} contender;

/* The digits of one RESP2 bulk string at *p, which moves past it. */
static int bulk_digits(const char **p, const char *end)
{
    char *q;
    if (*p >= end || **p != '$') return 0;
    long n = strtol(*p + 1, &q, 10);
    if (n < 1 || n > 12 || end - q < 2 + n + 2 || memcmp(q, "\r\n", 2) != 0) return 0;
    for (long i = 0; i < n; i++)
        if (q[2 + i] < '0' || q[2 + i] > '9') return 0;
    if (memcmp(q + 2 + n, "\r\n", 2) != 0) return 0;
    *p = q + 2 + n + 2;
    return 1;
}

/* Whether the n bytes at buf are SET's +OK, HGET's null (no window) and
 * TIME's two numbers. */
static int acquired_and_time(const char *buf, size_t n)
{
    const char *p = buf + 14, *end = buf + n;
    return n > 14 && memcmp(buf, "+OK\r\n$-1\r\n*2\r\n", 14) == 0 && bulk_digits(&p, end) &&
           bulk_digits(&p, end) && p == end;
}

static void unc_raw(env *e, long n, double *secs, double *cpu)
{
    char buf[128];
    double c0 = cpu_now();
    int64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        size_t k = raw_roundtrip(e->raw_fd, e->cap.acquire.data, e->cap.acquire.len, 7, buf,
                                 sizeof buf);
        if (!acquired_and_time(buf, k)) die("raw: acquire: not acquired, or no TIME");
        k = raw_roundtrip(e->raw_fd, e->cap.release.data, e->cap.release.len, 1, buf,
                          sizeof buf);
        if (k != 4 || memcmp(buf, ":1\r\n", 4) != 0) die("raw: release: not released");
    }
    *secs = (double)(now_ns() - t0) * 1e-9;
    *cpu = cpu_now() - c0;
}

static void unc_resplock(env *e, long n, double *secs, double *cpu)
{
    double c0 = cpu_now();
    int64_t t0 = now_ns();
    for (long i = 0; i < n; i++) acquire_release(e->cl, unc_name);
    *secs = (double)(now_ns() - t0) * 1e-9;
    *cpu = cpu_now() - c0;
}

static void unc_redispy(env *e, long n, double *secs, double *cpu)
{
    char line[128];
    fprintf(e->py.in, "%ld\n", n);
    fflush(e->py.in);
    if (!fgets(line, sizeof line, e->py.out) || sscanf(line, "%lf %lf", secs, cpu) != 2)
        die("redis-py: no answer (see its message above)");
}

static void measure(env *e, contender *c, int nc, int rounds, long ops, long warmup)
{
    double s, u;
    for (int i = 0; i < nc; i++) c[i].fn(e, warmup, &s, &u);
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nc; k++) {
            contender *x = &c[(k + r) % nc];
            x->fn(e, ops, &x->secs[r], &x->cpu[r]);
        }
    for (int i = 0; i < nc; i++) {
        c[i].rounds = rounds;
        c[i].ops = ops;
    }
}

static double rate_q(const contender *c, double q)
{
    double v[MAX_ROUNDS];
    for (int r = 0; r < c->rounds; r++) v[r] = (double)c->ops / c->secs[r];
    return quantile(v, c->rounds, q);
}

/* a's rate over b's: the median over rounds of the ratio in the same
 * round, where the two ran next to each other. */
static double paired_ratio(const contender *a, const contender *b)
{
    double v[MAX_ROUNDS];
    for (int r = 0; r < a->rounds; r++) v[r] = b->secs[r] / a->secs[r];
    return quantile(v, a->rounds, 0.5);
}

/* ------------------------------------------------------------------ */
/* Contended                                                            */

typedef struct rec {
    int64_t acq, rel, rel_done; /* acquire returned, release called, returned */
    uint64_t fence;
    int proc;
} rec;

typedef struct shared {
    int owner;                  /* 1 + the process inside, or 0 */
    int overlaps;               /* critical sections that found another inside */
    int failed;
    int count[NPROC];
    rec recs[NPROC][MAXREC];
} shared;

static void contend_child(shared *sh, int id, int go_fd)
{
    rlk_client *cl = new_client(url);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 30000;
    o.wait_ms = RLK_WAIT_FOREVER;
    int64_t end;
    if (read(go_fd, &end, sizeof end) != (ssize_t)sizeof end) die("child: no start signal");
    for (;;) {
        rlk_lock *l;
        if (rlk_lock_acquire(cl, cont_name, &o, &l) != RLK_OK) {
            __atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
            die2("child: rlk_lock_acquire", rlk_client_errmsg(cl));
        }
        int64_t a = now_ns();
        int expected = 0;
        if (!__atomic_compare_exchange_n(&sh->owner, &expected, id + 1, 0, __ATOMIC_SEQ_CST,
                                         __ATOMIC_SEQ_CST))
            __atomic_add_fetch(&sh->overlaps, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&sh->owner, 0, __ATOMIC_SEQ_CST);
        uint64_t fence = rlk_lock_fence(l);
        int64_t r = now_ns();
        if (rlk_lock_release(l) != RLK_OK) {
            __atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
            die2("child: rlk_lock_release", rlk_client_errmsg(cl));
        }
        int64_t d = now_ns();
        int k = sh->count[id];
        if (k < MAXREC) {
            sh->recs[id][k] = (rec){a, r, d, fence, id};
            sh->count[id] = k + 1;
        }
        if (d >= end) break;
    }
    rlk_client_free(cl);
    _exit(0);
}

typedef struct cstats {
    long acquisitions, cross;    /* in the window; cross: by another process */
    double seconds;
    double cpu_clients, cpu_server; /* seconds of CPU over the whole run      */
    long all_acq;                   /* acquisitions over the whole run        */
    double med_all_ns, med_cross_ns, p90_cross_ns;
    int min_per_proc, max_per_proc;
    long overlaps, fence_errors;
} cstats;

static int cmp_rec(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    return x->acq < y->acq ? -1 : x->acq > y->acq;
}

/* Handoffs among records acquired in [start, end): sorted by acquire
 * time, each must come after the previous holder called release. */
static void analyse(rec *all, long n, int nproc, int64_t start, int64_t end, int fenced,
                    cstats *st)
{
    qsort(all, (size_t)n, sizeof *all, cmp_rec);
    int64_t *h_all = malloc(sizeof(int64_t) * (size_t)(n + 1));
    int64_t *h_cross = malloc(sizeof(int64_t) * (size_t)(n + 1));
    long na = 0, nx = 0;
    int per[NPROC] = {0};
    if (!h_all || !h_cross) die("out of memory");
    for (long i = 0; i < n; i++) {
        if (all[i].acq < start || all[i].acq >= end) continue;
        per[all[i].proc]++;
        st->acquisitions++;
        if (i == 0) continue;
        if (all[i].acq <= all[i - 1].rel) st->overlaps++;
        if (fenced && all[i].fence <= all[i - 1].fence) st->fence_errors++;
        int64_t h = all[i].acq - all[i - 1].rel;
        h_all[na++] = h;
        if (all[i].proc != all[i - 1].proc) h_cross[nx++] = h;
    }
    st->cross = nx;
    st->seconds = (double)(end - start) * 1e-9;
    qsort(h_all, (size_t)na, sizeof *h_all, cmp_i64);
    qsort(h_cross, (size_t)nx, sizeof *h_cross, cmp_i64);
    st->med_all_ns = na ? (double)h_all[na / 2] : -1;
    st->med_cross_ns = nx ? (double)h_cross[nx / 2] : -1;
    st->p90_cross_ns = nx ? (double)h_cross[nx * 9 / 10] : -1;
    st->min_per_proc = st->max_per_proc = per[0];
    for (int i = 1; i < nproc; i++) {
        if (per[i] < st->min_per_proc) st->min_per_proc = per[i];
        if (per[i] > st->max_per_proc) st->max_per_proc = per[i];
    }
    free(h_all);
    free(h_cross);
}

static double children_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec * 1e-6;
}

static void contended_resplock(int nproc, cstats *st)
{
    double srv0 = proc_cpu(server->pid), kids0 = children_cpu();
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) die2("mmap", strerror(errno));
    int go[2];
    if (pipe(go) != 0) die2("pipe", strerror(errno));
    pid_t pids[NPROC];
    fflush(NULL);
    for (int i = 0; i < nproc; i++) {
        pids[i] = fork();
        if (pids[i] < 0) die2("fork", strerror(errno));
        if (pids[i] == 0) {
            close(go[1]);
            contend_child(sh, i, go[0]);
        }
    }
    close(go[0]);
    /* Each child reads one end time: eight 8-byte writes, each atomic. */
    int64_t start = now_ns(), end = start + (int64_t)CONT_SECONDS * 1000000000;
    for (int i = 0; i < nproc; i++)
        if (write(go[1], &end, sizeof end) != (ssize_t)sizeof end) die2("write", strerror(errno));
    close(go[1]);
    int bad = 0;
    for (int i = 0; i < nproc; i++) {
        int s;
        if (waitpid(pids[i], &s, 0) != pids[i] || !WIFEXITED(s) || WEXITSTATUS(s) != 0) bad = 1;
    }
    if (bad || sh->failed) die("a contending process failed (see above)");
    double srv1 = proc_cpu(server->pid), kids1 = children_cpu();
    long n = 0;
    for (int i = 0; i < nproc; i++) n += sh->count[i];
    rec *all = malloc(sizeof *all * (size_t)n);
    if (!all) die("out of memory");
    n = 0;
    for (int i = 0; i < nproc; i++)
        for (int k = 0; k < sh->count[i]; k++) all[n++] = sh->recs[i][k];
    memset(st, 0, sizeof *st);
    analyse(all, n, nproc, start, end, 1, st);
    st->overlaps += sh->overlaps;
    st->cpu_clients = kids1 - kids0;
    st->cpu_server = srv1 - srv0;
    st->all_acq = n;
    free(all);
    munmap(sh, sizeof *sh);
}

static int contended_redispy(cstats *st)
{
    pyproc pp[NPROC];
    for (int i = 0; i < NPROC; i++)
        if (py_start(&pp[i], py_contended, py_cont_name) != 0) {
            for (int k = 0; k <= i; k++) py_stop(&pp[k]); /* EOF on stdin ends them */
            return -1;
        }
    int64_t start = now_ns(), end = start + (int64_t)CONT_SECONDS * 1000000000;
    for (int i = 0; i < NPROC; i++) {
        fprintf(pp[i].in, "%" PRId64 "\n", end);
        fflush(pp[i].in);
    }
    long n = 0, cap = 1024;
    rec *all = malloc(sizeof *all * (size_t)cap);
    if (!all) die("out of memory");
    int complete = 1;
    for (int i = 0; i < NPROC; i++) {
        char line[128];
        int ended = 0;
        while (fgets(line, sizeof line, pp[i].out)) {
            if (strcmp(line, "end\n") == 0) {
                ended = 1;
                break;
            }
            if (n == cap) {
                cap *= 2;
                all = realloc(all, sizeof *all * (size_t)cap);
                if (!all) die("out of memory");
            }
            rec *r = &all[n];
            if (sscanf(line, "%" SCNd64 " %" SCNd64 " %" SCNd64, &r->acq, &r->rel,
                       &r->rel_done) != 3)
                die("redis-py: unexpected output");
            r->fence = 0;
            r->proc = i;
            n++;
        }
        if (!ended) complete = 0;
        py_stop(&pp[i]);
    }
    if (!complete) die("a redis-py process failed (see above)");
    memset(st, 0, sizeof *st);
    analyse(all, n, NPROC, start, end, 0, st);
    free(all);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Watchdog                                                             */

/* One integer reply of a raw round trip. */
static long long raw_integer(int fd, const char *req)
{
    char buf[64];
    size_t n = raw_roundtrip(fd, req, strlen(req), 1, buf, sizeof buf - 1);
    buf[n] = '\0';
    if (buf[0] != ':') die("raw: not an integer reply");
    return atoll(buf + 1);
}

/* Each call of watchdog() holds a fresh set of locks (those of an earlier
 * call stay held until they expire). */
static int wd_gen;

/* Shortens the TTL of lock i on the server, behind the library's back. */
static void shorten(int fd, int i)
{
    char req[128];
    snprintf(req, sizeof req, "PEXPIRE resplock:bench:held:%d:%05d 5000\r\n", wd_gen, i);
    if (raw_integer(fd, req) != 1) die("PEXPIRE: the lock key is missing");
}

/* The TTL of lock i on the server. */
static long long server_pttl(int fd, int i)
{
    char req[128];
    snprintf(req, sizeof req, "PTTL resplock:bench:held:%d:%05d\r\n", wd_gen, i);
    return raw_integer(fd, req);
}

/* A connection of the library for INFO and CONFIG, beside the
 * workload's. */
static rlk_conn *admin_conn(void)
{
    rlk_conn_config icfg;
    memset(&icfg, 0, sizeof icfg);
    icfg.url = url;
    rlk_conn *c = rlk_conn_new(&icfg);
    if (!c || rlk_conn_connect(c) != RLK_OK) die("INFO connection");
    return c;
}

static void reset_stats(rlk_conn *c)
{
    const char *why;
    if (bench_reset_stats(c, &why) != 0) die2("CONFIG RESETSTAT", why);
}

#define MAXCMD 24 /* commands of one round told apart */

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
/* What the server is, by INFO server                                   */

typedef struct srvfacts {
    /* as INFO server gives them; "" when it has no such field */
    char server_name[32], valkey_version[32], redis_version[32];
    char name[16], version[32]; /* "valkey" "9.1.2", "redis" "7.0.15" */
    int major, minor;
    int delifeq, delex_ifeq, set_ifeq; /* the native forms it has */
} srvfacts;

static srvfacts facts;

/* Valkey where INFO server has valkey_version or server_name valkey, at
 * that version (valkey_version, else redis_version); else Redis at
 * redis_version.  The native forms by version: DELIFEQ Valkey 9.0+;
 * DELEX key IFEQ Redis 8.4+ and Valkey 9.2+; SET IFEQ Valkey 8.1+ and
 * Redis 8.4+. */
static void server_facts(srvfacts *f)
{
    rlk_conn *c = admin_conn();
    const char *argv[2] = {"INFO", "server"};
    rlk_resp_value *v;
    if (rlk_conn_command(c, &v, 2, argv, NULL) != RLK_OK) die2("INFO server", rlk_conn_errmsg(c));
    if (v->type != RLK_RESP_BULK && v->type != RLK_RESP_VERBATIM) die("INFO server: not a string");
    char *text = malloc(v->len + 1);
    if (!text) die("out of memory");
    memcpy(text, v->str, v->len);
    text[v->len] = '\0';
    rlk_conn_free(c);
    memset(f, 0, sizeof *f);
    bench_info_field(text, "server_name", f->server_name, sizeof f->server_name);
    bench_info_field(text, "valkey_version", f->valkey_version, sizeof f->valkey_version);
    bench_info_field(text, "redis_version", f->redis_version, sizeof f->redis_version);
    free(text);
    int valkey = f->valkey_version[0] || strcasecmp(f->server_name, "valkey") == 0;
    snprintf(f->name, sizeof f->name, "%s", valkey ? "valkey" : "redis");
    snprintf(f->version, sizeof f->version, "%s",
             valkey && f->valkey_version[0] ? f->valkey_version : f->redis_version);
    if (sscanf(f->version, "%d.%d", &f->major, &f->minor) != 2)
        die("INFO server: no version the benchmark can read");
#define AT_LEAST(a, b) (f->major > (a) || (f->major == (a) && f->minor >= (b)))
    f->delifeq = valkey && AT_LEAST(9, 0);
    f->delex_ifeq = valkey ? AT_LEAST(9, 2) : AT_LEAST(8, 4);
    f->set_ifeq = valkey ? AT_LEAST(8, 1) : AT_LEAST(8, 4);
#undef AT_LEAST
}

/* The minimal correct release the server allows: REL_DELIFEQ,
 * REL_DELEX or REL_EVALSHA (a compare-and-delete script). */
static int minimal_release(const srvfacts *f)
{
    return f->delifeq ? REL_DELIFEQ : f->delex_ifeq ? REL_DELEX : REL_EVALSHA;
}

/* SCRIPT LOAD of script on a raw socket: its SHA1 into sha[0..41). */
static void script_load(int fd, const char *script, char *sha)
{
    static const char load_fmt[] = "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n$%zu\r\n%s\r\n";
    char req[512], buf[128];
    snprintf(req, sizeof req, load_fmt, strlen(script), script);
    size_t k = raw_roundtrip(fd, req, strlen(req), 2, buf, sizeof buf);
    if (k != 47 || memcmp(buf, "$40\r\n", 5) != 0) die("SCRIPT LOAD: unexpected reply");
    memcpy(sha, buf + 5, 40);
    sha[40] = '\0';
}

/* ------------------------------------------------------------------ */
/* The minimal renewal, and the server time of renewal rounds          */

/* The minimal renewal of one lock by script: extend it if it holds the
 * token. */
static const char cap_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then "
    "return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0";

/* The server's time per lock in renewal rounds, by command. */
typedef struct rnstats {
    int ncmd;
    char name[MAXCMD][32];
    int inner[MAXCMD];                 /* counted inside scripts: not summed */
    double calls[MAXCMD][MAX_ROUNDS];  /* calls per lock in round r          */
    double usec[MAXCMD][MAX_ROUNDS];   /* us per call in round r             */
    double per_lock[MAX_ROUNDS];       /* us of top-level commands per lock  */
    double cpu_per_lock[MAX_ROUNDS];   /* us of the server process's CPU     */
} rnstats;

/* The CPU time the server process has used so far (all its threads,
 * nanosecond resolution: clock_getcpuclockid), in seconds; -1 when it
 * cannot be read. */
static double server_cpu_s(void)
{
    clockid_t k;
    struct timespec t;
    if (clock_getcpuclockid(server->pid, &k) != 0 || clock_gettime(k, &t) != 0) return -1;
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Round r's commands s[0..n) into rs.  Where scripts ran, SET and the
 * script calls are the top-level commands (the others counted are the
 * scripts' own calls, whose time is inside theirs); else all are. */
static void rn_add(rnstats *rs, int r, const cmdstat *s, int n)
{
    int scripts = 0;
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (s[i].calls && bench_is_script_call(s[i].name)) scripts = 1;
    for (int i = 0; i < n; i++) {
        if (!s[i].calls) continue;
        int j = 0;
        while (j < rs->ncmd && strcmp(rs->name[j], s[i].name) != 0) j++;
        if (j == rs->ncmd) {
            if (j == MAXCMD) die("renewal: too many commands in a round");
            snprintf(rs->name[j], sizeof rs->name[j], "%.31s", s[i].name);
            rs->ncmd++;
        }
        rs->calls[j][r] = (double)s[i].calls / WD_LOCKS;
        rs->usec[j][r] = s[i].usec / (double)s[i].calls;
        rs->inner[j] = scripts && !bench_is_script_call(s[i].name) && strcmp(s[i].name, "set") != 0;
        if (!rs->inner[j]) sum += s[i].usec;
    }
    rs->per_lock[r] = sum / WD_LOCKS;
}

/* The minimal renewal of every lock, raw, in one pipeline. */
typedef struct renewal {
    int fd;
    rlk_buf req;
    const char *reply; /* each lock's reply */
    size_t reply_len;
} renewal;

static void renewal_init(renewal *m, rlk_lock **locks, int set_ifeq)
{
    char sha[41] = "", one[512];
    m->fd = raw_connect(server->port);
    rlk_buf_init(&m->req);
    if (!set_ifeq) script_load(m->fd, cap_script, sha);
    for (int i = 0; i < WD_LOCKS; i++) {
        const char *k = rlk_lock_name(locks[i]), *t = rlk_lock_token(locks[i]);
        size_t kl = strlen(k), tl = strlen(t);
        int n = set_ifeq
                    ? snprintf(one, sizeof one,
                               "*7\r\n$3\r\nSET\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n$4\r\nIFEQ\r\n"
                               "$%zu\r\n%s\r\n$2\r\nPX\r\n$5\r\n30000\r\n",
                               kl, k, tl, t, tl, t)
                    : snprintf(one, sizeof one,
                               "*6\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$%zu\r\n%s\r\n"
                               "$%zu\r\n%s\r\n$5\r\n30000\r\n",
                               sha, kl, k, tl, t);
        if (n < 0 || (size_t)n >= sizeof one) die("minimal renewal: too long");
        if (rlk_buf_append(&m->req, one, (size_t)n) != RLK_OK) die("out of memory");
    }
    m->reply = set_ifeq ? "+OK\r\n" : ":1\r\n";
    m->reply_len = strlen(m->reply);
}

/* Sends every lock's renewal and reads every reply, each checked (a lock
 * not renewed ends the run). */
static void renewal_round(renewal *m)
{
    size_t sent = 0, got = 0, want = (size_t)WD_LOCKS * m->reply_len;
    char buf[65536];
    while (got < want) {
        struct pollfd p = {m->fd, (short)(POLLIN | (sent < m->req.len ? POLLOUT : 0)), 0};
        int pr = poll(&p, 1, 10000);
        if (pr < 0 && errno == EINTR) continue;
        if (pr <= 0) die("minimal renewal: no progress in 10 s");
        if (p.revents & POLLOUT) {
            ssize_t w = send(m->fd, m->req.data + sent, m->req.len - sent,
                             MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0) sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR) die2("write", strerror(errno));
        }
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = recv(m->fd, buf, sizeof buf, MSG_DONTWAIT);
            if (r == 0) die("minimal renewal: the server closed the connection");
            if (r < 0) {
                if (errno == EAGAIN || errno == EINTR) continue;
                die2("read", strerror(errno));
            }
            if (got + (size_t)r > want) die("minimal renewal: more replies than requests");
            for (ssize_t i = 0; i < r; i++)
                if (buf[i] != m->reply[(got + (size_t)i) % m->reply_len])
                    die("minimal renewal: a lock was not renewed (or an error reply)");
            got += (size_t)r;
        }
    }
}

static void renewal_free(renewal *m)
{
    close(m->fd);
    rlk_buf_free(&m->req);
}

/* Ticks cl, as an event loop would (polling its fd, or until the time
 * the tick asked for), until every lock is valid (for valid_ms) from a
 * renewal round that started at from_ms or later. */
static void wd_round(rlk_client *cl, rlk_lock **locks, int64_t from_ms, int64_t valid_ms)
{
    int64_t fresh = from_ms + valid_ms, next = 0;
    int64_t give_up = now_ns() + 10000000000LL;
    if (rlk_client_tick(cl, &next) != RLK_OK) die2("rlk_client_tick", rlk_client_errmsg(cl));
    for (int i = 0; i < WD_LOCKS; i++) {
        while (rlk_lock_remaining_ms(locks[i]) + now_ns() / 1000000 < fresh) {
            struct pollfd p = {rlk_client_fd(cl), POLLIN, 0};
            if (now_ns() > give_up) die("rlk_client_tick: no round in 10 s");
            poll(&p, 1, (int)(next > 0 && next < 1000 ? next : next == 0 ? 1 : 1000));
            if (rlk_client_tick(cl, &next) != RLK_OK)
                die2("rlk_client_tick", rlk_client_errmsg(cl));
        }
    }
}

typedef struct wdstats {
    double batched_ms, single_ms, minimal_ms; /* medians of the rounds' wall time */
    double rb[MAX_ROUNDS], rs[MAX_ROUNDS], rm[MAX_ROUNDS];
    double acquire_s;
    double srv_ms;          /* the server's time in a batched round, median */
    rnstats rlk, min;       /* server time per lock: resplock's, the minimal */
    double ratio;           /* resplock / minimal per lock, same-round median */
} wdstats;

static void watchdog(wdstats *w)
{
    rlk_conn *info = admin_conn();
    int check_fd = raw_connect(server->port);
    wd_gen++;
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = url;
    /* A renewal due 1 s after the last (30000 ms / 30): a round renews
     * every watchdog lock of the client once any is due, so after one
     * round they come due together, one round a second.  Every call on
     * the client renews the locks due as it goes. */
    cfg.renew_divisor = 30;
    rlk_client *cl = rlk_client_new(&cfg), *single = rlk_client_new(&cfg);
    if (!cl || rlk_client_connect(cl) != RLK_OK) die("watchdog client");
    if (rlk_client_tick(cl, NULL) != RLK_OK) die2("rlk_client_tick", rlk_client_errmsg(cl));
    if (!single || rlk_client_connect(single) != RLK_OK) die("extending client");
    rlk_lock **locks = malloc(sizeof *locks * WD_LOCKS);
    if (!locks) die("out of memory");
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 30000;
    o.watchdog = 1;
    int64_t t0 = now_ns();
    for (int i = 0; i < WD_LOCKS; i++) {
        char name[64];
        snprintf(name, sizeof name, "resplock:bench:held:%d:%05d", wd_gen, i);
        if (rlk_lock_acquire(cl, name, &o, &locks[i]) != RLK_OK)
            die2("watchdog: rlk_lock_acquire", rlk_client_errmsg(cl));
    }
    w->acquire_s = (double)(now_ns() - t0) * 1e-9;
    renewal m;
    renewal_init(&m, locks, facts.set_ifeq);
    int64_t next;
    /* Settles: ticks until one round renewed every lock, started after
     * the last acquire (the rounds that the acquires set off are over). */
    int64_t valid = rlk_plan_valid_ms(&cfg, o.ttl_ms);
    wd_round(cl, locks, now_ns() / 1000000, valid);
    renewal_round(&m); /* warm */
    memset(&w->rlk, 0, sizeof w->rlk);
    memset(&w->min, 0, sizeof w->min);
    for (int r = 0; r < WD_ROUNDS; r++) {
        /* 0: the client's batched round; 1: one rlk_extend_token per
         * lock; 2: the minimal renewal, raw.  The two whose server time
         * is compared run next to each other (other work on the machine
         * comes and goes), in turn first; the one-by-one calls before
         * them, then after. */
        static const int order[2][3] = {{1, 0, 2}, {2, 0, 1}};
        int waited = 0;
        for (int k = 0; k < 3; k++) {
            int which = order[r % 2][k];
            /* Proof on the server that a round renewed: three keys
             * (first, a middle one, last) get 5 s left before it, and
             * must have the full TTL after it. */
            int probe[3] = {0, (r * 997 + 1) % WD_LOCKS, WD_LOCKS - 1};
            if (which != 1 && !waited) {
                /* The next round comes due: no round is in flight
                 * meanwhile, so the round measured is that one alone. */
                if (rlk_client_tick(cl, &next) != RLK_OK)
                    die2("rlk_client_tick", rlk_client_errmsg(cl));
                if (next > 0) poll(NULL, 0, (int)next + 1);
                waited = 1;
            }
            for (int q = 0; q < 3; q++) shorten(check_fd, probe[q]);
            cmdstat cs[MAXCMD];
            if (which == 0) {
                reset_stats(info);
                double c0 = server_cpu_s();
                int64_t a = now_ns();
                /* The tick sends the round; later ticks read the replies
                 * as they come, as an event loop would: done once every
                 * lock is valid from a round that started now or later
                 * (after the shortening). */
                wd_round(cl, locks, a / 1000000, valid);
                w->rb[r] = (double)(now_ns() - a) * 1e-6;
                w->rlk.cpu_per_lock[r] = (server_cpu_s() - c0) * 1e6 / WD_LOCKS;
                rn_add(&w->rlk, r, cs, cmdstats_all(info, cs, MAXCMD));
                for (int i = 0; i < WD_LOCKS; i++)
                    if (rlk_lock_is_lost(locks[i]))
                        die("rlk_client_tick: a lock was reported lost");
            } else if (which == 1) {
                /* One call per lock, from a second client with the
                 * holders' tokens (the first one's calls would renew
                 * its locks due as they go). */
                int64_t a = now_ns();
                for (int i = 0; i < WD_LOCKS; i++)
                    if (rlk_extend_token(single, rlk_lock_name(locks[i]), rlk_lock_token(locks[i]),
                                         30000, RLK_EXTEND_SET, NULL) != RLK_OK)
                        die2("rlk_extend_token", rlk_client_errmsg(single));
                w->rs[r] = (double)(now_ns() - a) * 1e-6;
            } else {
                reset_stats(info);
                double c0 = server_cpu_s();
                int64_t a = now_ns();
                renewal_round(&m);
                w->rm[r] = (double)(now_ns() - a) * 1e-6;
                w->min.cpu_per_lock[r] = (server_cpu_s() - c0) * 1e6 / WD_LOCKS;
                rn_add(&w->min, r, cs, cmdstats_all(info, cs, MAXCMD));
            }
            static const char *const failed[3] = {
                "rlk_client_tick did not renew every lock",
                "rlk_extend_token did not renew every lock",
                "the minimal renewal did not renew every lock"};
            for (int q = 0; q < 3; q++)
                if (server_pttl(check_fd, probe[q]) < 10000) /* 5000 if not renewed */
                    die(failed[which]);
        }
    }
    close(check_fd);
    renewal_free(&m);
    double ratio[MAX_ROUNDS], srv[MAX_ROUNDS];
    for (int r = 0; r < WD_ROUNDS; r++) {
        ratio[r] = w->rlk.per_lock[r] / w->min.per_lock[r];
        srv[r] = w->rlk.per_lock[r] * WD_LOCKS * 1e-3;
    }
    w->batched_ms = quantile(w->rb, WD_ROUNDS, 0.5);
    w->single_ms = quantile(w->rs, WD_ROUNDS, 0.5);
    w->minimal_ms = quantile(w->rm, WD_ROUNDS, 0.5);
    w->srv_ms = quantile(srv, WD_ROUNDS, 0.5);
    w->ratio = quantile(ratio, WD_ROUNDS, 0.5);
    rlk_conn_free(info);
    /* The handles are freed with the client; the keys go with the server. */
    rlk_client_free(cl);
    rlk_client_free(single);
    free(locks);
}

/* ------------------------------------------------------------------ */
/* Server time per uncontended cycle                                    */

/* The minimal correct release by script: delete the lock if it holds
 * the token. */
static const char cad_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
    "return 0";

/* The top-level commands of the cycles; a release of form REL_x is
 * ST_EVALSHA + REL_x. */
enum { ST_SET, ST_HGET, ST_TIME, ST_EVALSHA, ST_FCALL, ST_DELIFEQ, ST_DELEX, ST_N };
static const char *const st_names[ST_N] = {"set",   "hget",    "time", "evalsha",
                                           "fcall", "delifeq", "delex"};
static const char *const st_heads[ST_N] = {"SET",   "HGET",    "TIME", "EVALSHA",
                                           "FCALL", "DELIFEQ", "DELEX"};
#define ST_REL(form) (ST_EVALSHA + (form))

typedef struct srvcycle {
    char label[64];
    double cycle[MAX_ROUNDS];          /* us of server time per cycle       */
    double call[ST_N][MAX_ROUNDS];     /* us per call of each command       */
    long long want[ST_N];              /* calls of each command per cycle   */
    /* a script's own calls: calls per cycle, us per call */
    int ninner;
    char inner[8][32];
    double inner_calls[8][MAX_ROUNDS], inner_usec[8][MAX_ROUNDS];
} srvcycle;

/* A minimal cycle, raw: the library's SET as captured, then the release
 * of form REL_DELIFEQ, REL_DELEX or REL_EVALSHA (the compare-and-delete
 * script). */
typedef struct minimal {
    int fd;
    const char *set;
    size_t set_len, rel_len;
    char rel[512];
} minimal;

static void minimal_init(minimal *m, const captured *c, int form)
{
    char sha[41];
    int n;
    size_t kl = strlen(unc_name), tl = strlen(c->token);
    m->fd = raw_connect(server->port);
    m->set = c->acquire.data;
    m->set_len = c->set_len;
    if (form == REL_DELIFEQ) {
        n = snprintf(m->rel, sizeof m->rel, "*3\r\n$7\r\nDELIFEQ\r\n$%zu\r\n%s\r\n$%zu\r\n%s\r\n",
                     kl, unc_name, tl, c->token);
    } else if (form == REL_DELEX) {
        n = snprintf(m->rel, sizeof m->rel,
                     "*4\r\n$5\r\nDELEX\r\n$%zu\r\n%s\r\n$4\r\nIFEQ\r\n$%zu\r\n%s\r\n", kl,
                     unc_name, tl, c->token);
    } else {
        script_load(m->fd, cad_script, sha);
        n = snprintf(m->rel, sizeof m->rel,
                     "*5\r\n$7\r\nEVALSHA\r\n$40\r\n%s\r\n$1\r\n1\r\n$%zu\r\n%s\r\n"
                     "$%zu\r\n%s\r\n",
                     sha, kl, unc_name, tl, c->token);
    }
    if (n < 0 || (size_t)n >= sizeof m->rel) die("minimal release: too long");
    m->rel_len = (size_t)n;
}

static void minimal_cycles(minimal *m, long n)
{
    char buf[256];
    for (long i = 0; i < n; i++) {
        size_t k = raw_roundtrip(m->fd, m->set, m->set_len, 1, buf, sizeof buf);
        if (k != 5 || memcmp(buf, "+OK\r\n", 5) != 0) die("minimal cycle: SET: not acquired");
        k = raw_roundtrip(m->fd, m->rel, m->rel_len, 1, buf, sizeof buf - 1);
        if (k != 4 || memcmp(buf, ":1\r\n", 4) != 0) {
            buf[k] = '\0';
            die2("minimal cycle: the release did not release", buf);
        }
    }
}

/* Round r of one cycle: SRV_OPS cycles between CONFIG RESETSTAT and INFO
 * commandstats, nothing else sent to the server meanwhile. */
static void server_round(rlk_conn *admin, srvcycle *s, int r, minimal *m, rlk_client *cl)
{
    long long calls[ST_N] = {0};
    double usec[ST_N] = {0}, sum = 0;
    cmdstat all[MAXCMD];
    reset_stats(admin);
    if (m) minimal_cycles(m, SRV_OPS);
    else
        for (long i = 0; i < SRV_OPS; i++) acquire_release(cl, unc_name);
    int n = cmdstats_all(admin, all, MAXCMD);
    /* Without a script, no command but those wanted may run at all (with
     * one, its own calls are counted too). */
    int scripted = s->want[ST_EVALSHA] || s->want[ST_FCALL];
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < ST_N && strcmp(st_names[k], all[i].name) != 0) k++;
        if (k < ST_N) {
            calls[k] = all[i].calls;
            usec[k] = all[i].usec;
        } else if (scripted && all[i].calls) {
            int j = 0;
            while (j < s->ninner && strcmp(s->inner[j], all[i].name) != 0) j++;
            if (j == 8) continue;
            if (j == s->ninner)
                snprintf(s->inner[s->ninner++], sizeof s->inner[0], "%.31s", all[i].name);
            s->inner_calls[j][r] = (double)all[i].calls / SRV_OPS;
            s->inner_usec[j][r] = all[i].usec / (double)all[i].calls;
        } else if (all[i].calls) {
            char msg[400];
            snprintf(msg, sizeof msg, "server time: %.63s: %lld calls of %.31s in %d cycles: the "
                     "cycle did not take the uncontended path", s->label, all[i].calls,
                     all[i].name, SRV_OPS);
            die(msg);
        }
    }
    for (int k = 0; k < ST_N; k++) {
        if (calls[k] != s->want[k] * SRV_OPS) {
            char msg[300];
            snprintf(msg, sizeof msg,
                     "server time: %s: %lld calls of %s in %d cycles, not %lld: the cycle "
                     "did not take the uncontended path", s->label, calls[k], st_names[k],
                     SRV_OPS, s->want[k] * SRV_OPS);
            die(msg);
        }
        s->call[k][r] = calls[k] ? usec[k] / (double)calls[k] : 0;
        sum += usec[k];
    }
    s->cycle[r] = sum / SRV_OPS;
}

/* s[0] the minimal cycle, s[1] resplock's, and where the minimal is not
 * the script cycle, s[2] that (for reference); the order rotating from
 * round to round.  The number of cycles into *ns. */
static void server_time(const captured *c, srvcycle *s, int *ns)
{
    rlk_conn *admin = admin_conn();
    rlk_client *cl = new_client(url);
    int form = minimal_release(&facts);
    minimal m[2];
    minimal *run[3] = {&m[0], NULL, &m[1]};
    memset(s, 0, sizeof *s * 3);
    minimal_init(&m[0], c, form);
    snprintf(s[0].label, sizeof s[0].label, "minimal: SET NX PX + %s",
             form == REL_EVALSHA ? "compare-and-delete" : rel_names[form]);
    s[0].want[ST_SET] = s[0].want[ST_REL(form)] = 1;
    snprintf(s[1].label, sizeof s[1].label, "resplock acquire+release");
    s[1].want[ST_SET] = s[1].want[ST_HGET] = s[1].want[ST_TIME] = 1;
    s[1].want[ST_REL(c->rel_form)] = 1;
    *ns = 2;
    if (form != REL_EVALSHA) {
        minimal_init(&m[1], c, REL_EVALSHA);
        snprintf(s[2].label, sizeof s[2].label, "script: SET NX PX + compare-and-delete");
        s[2].want[ST_SET] = s[2].want[ST_EVALSHA] = 1;
        *ns = 3;
    }
    for (int i = 0; i < *ns; i++)
        if (run[i]) minimal_cycles(run[i], SRV_WARMUP);
        else
            for (long k = 0; k < SRV_WARMUP; k++) acquire_release(cl, unc_name);
    for (int r = 0; r < SRV_ROUNDS; r++)
        for (int k = 0; k < *ns; k++) {
            int w = (k + r) % *ns;
            server_round(admin, &s[w], r, run[w], w == 1 ? cl : NULL);
        }
    close(m[0].fd);
    if (*ns == 3) close(m[1].fd);
    rlk_client_free(cl);
    rlk_conn_free(admin);
}

/* ------------------------------------------------------------------ */
/* One regime: all the workloads with the CPUs placed one way           */

typedef struct regime {
    const char *title;      /* for the tables                            */
    int server_cpu, client_cpu; /* -1: not pinned                        */
    /* results */
    double rtt_ns, raw_cycle_ns;
    contender unc[3];
    int nunc;
    double r_raw, r_py;     /* paired ratios; r_py < 0: not measured     */
    double r_floor_py;      /* raw floor / redis-py; < 0: not measured   */
    cstats cr, cp, c2;
    int have_cp;
    wdstats wd;
    srvcycle srv[3];        /* the minimal cycle, resplock's, the script
                               cycle where the minimal is not that        */
    int nsrv;
    double srv_ratio;       /* resplock's server time / the minimal's,
                               median of the same-round ratios            */
    double srv_ratio_script; /* resplock's / the script cycle's (nsrv 3)  */
} regime;

static captured cap;
static int have_py;
static char pyver[32];

static void print_cstats(const char *label, const cstats *st, double rtt_ns)
{
    char med_all[32], med_x[32], p90[32];
    snprintf(med_all, sizeof med_all, "%.1f us %4.1f RT", st->med_all_ns / 1e3,
             st->med_all_ns / rtt_ns);
    if (st->cross) {
        snprintf(med_x, sizeof med_x, "%.1f us %4.1f RT", st->med_cross_ns / 1e3,
                 st->med_cross_ns / rtt_ns);
        snprintf(p90, sizeof p90, "%.1f us", st->p90_cross_ns / 1e3);
    } else {
        snprintf(med_x, sizeof med_x, "none");
        snprintf(p90, sizeof p90, "-");
    }
    printf("    %-26s %8.0f %8.0f %6d..%-6d %19s %19s %10s\n", label,
           (double)st->acquisitions / st->seconds, (double)st->cross / st->seconds,
           st->min_per_proc, st->max_per_proc, med_all, med_x, p90);
}

static void run_regime(regime *g)
{
    if (g->server_cpu >= 0 &&
        (pin(server->pid, g->server_cpu) != 0 || pin(0, g->client_cpu) != 0))
        die2("sched_setaffinity", strerror(errno));
    if (g->server_cpu >= 0)
        printf("== %s: server on CPU %d, this program and its client processes on CPU %d\n",
               g->title, g->server_cpu, g->client_cpu);
    else
        printf("== %s: server and clients placed by the kernel (RLK_BENCH_PIN=0)\n", g->title);

    g->rtt_ns = ping_rtt_ns(server->port);
    printf("   RT: median of %d PINGs on an idle raw socket: %.1f us\n\n", PING_N,
           g->rtt_ns / 1e3);

    /* ---- uncontended */
    env e;
    memset(&e, 0, sizeof e);
    e.cap = cap;
    e.cl = new_client(url);
    e.raw_fd = raw_connect(server->port);
    e.have_py = have_py;
    if (e.have_py && py_start(&e.py, py_uncontended, unc_name) != 0) {
        fprintf(stderr, "bench_lock: redis-py did not start; its columns are left out\n");
        e.have_py = 0;
    }
    const rlk_conn_info *info = rlk_client_info(e.cl);
    contender init[3] = {
        {.label = "raw socket (floor)", .protocol = "RESP2", .fn = unc_raw},
        {.label = "resplock acquire+release", .protocol = info->protocol == 3 ? "RESP3" : "RESP2",
         .fn = unc_resplock},
        {.label = "redis-py Lock", .protocol = "RESP2", .fn = unc_redispy},
    };
    memcpy(g->unc, init, sizeof init);
    g->nunc = e.have_py ? 3 : 2;
    measure(&e, g->unc, g->nunc, UNC_ROUNDS, UNC_OPS, UNC_WARMUP);
    printf("   1. uncontended acquire + release cycles\n");
    printf("    %-28s %-5s %10s %10s %6s %9s %8s %10s\n", "client", "proto", "median/s",
           "best/s", "IQR", "cpu us", "/ raw", "/ redis-py");
    for (int i = 0; i < g->nunc; i++) {
        contender *c = &g->unc[i];
        char med[32], best[32], vr[16] = "", vp[16] = "";
        double m = rate_q(c, 0.5);
        fmt_rate(med, sizeof med, m);
        fmt_rate(best, sizeof best, rate_q(c, 1));
        double iqr = (rate_q(c, 0.75) - rate_q(c, 0.25)) / m * 100;
        double cpu = quantile(c->cpu, c->rounds, 0.5) / (double)c->ops;
        if (i != 0) snprintf(vr, sizeof vr, "%.3fx", paired_ratio(c, &g->unc[0]));
        if (e.have_py && i != 2) snprintf(vp, sizeof vp, "%.2fx", paired_ratio(c, &g->unc[2]));
        printf("    %-28s %-5s %10s %10s %5.1f%% %9.2f %8s %10s\n", c->label, c->protocol, med,
               best, iqr, cpu * 1e6, vr, vp);
    }
    g->r_raw = paired_ratio(&g->unc[1], &g->unc[0]);
    g->r_py = e.have_py ? paired_ratio(&g->unc[1], &g->unc[2]) : -1;
    g->r_floor_py = e.have_py ? paired_ratio(&g->unc[0], &g->unc[2]) : -1;
    g->raw_cycle_ns = 1e9 / rate_q(&g->unc[0], 0.5);
    if (e.have_py) py_stop(&e.py);
    close(e.raw_fd);
    rlk_client_free(e.cl);

    /* ---- contended */
    printf("\n   2. contended, %d s per row (raw acquire + release cycle, idle: %.1f us = %.1f "
           "RT)\n", CONT_SECONDS, g->raw_cycle_ns / 1e3, g->raw_cycle_ns / g->rtt_ns);
    printf("    %-26s %8s %8s %14s %19s %19s %10s\n", "processes on one lock", "acq/s",
           "other/s", "per process", "median handoff", "median to other", "p90 other");
    contended_resplock(NPROC, &g->cr);
    print_cstats("resplock, 8 processes", &g->cr, g->rtt_ns);
    g->have_cp = 0;
    if (have_py) {
        if (contended_redispy(&g->cp) == 0) {
            g->have_cp = 1;
            print_cstats("redis-py Lock, 8 processes", &g->cp, g->rtt_ns);
        } else {
            fprintf(stderr, "bench_lock: redis-py did not start; its row is left out\n");
        }
    }
    /* The same with two processes, where fewer processes share the CPU
     * and one waiter is woken per release: what the protocol path costs. */
    contended_resplock(2, &g->c2);
    print_cstats("resplock, 2 processes", &g->c2, g->rtt_ns);
    /* Where the time of a handoff goes when the CPUs are saturated: the
     * CPU time all processes and the server spend per acquisition,
     * against the wall time per acquisition. */
    for (int k = 0; k < 2; k++) {
        const cstats *c = k ? &g->c2 : &g->cr;
        double wall = 1e6 / ((double)c->acquisitions / c->seconds);
        printf("    %s: CPU per acquisition %.1f us (clients %.1f + server %.1f), wall %.1f us"
               " per acquisition\n", k ? "2 processes" : "8 processes",
               (c->cpu_clients + c->cpu_server) * 1e6 / (double)c->all_acq,
               c->cpu_clients * 1e6 / (double)c->all_acq, c->cpu_server * 1e6 / (double)c->all_acq,
               wall);
    }
    printf("    checks: %ld overlapping critical sections, %ld fences out of order\n",
           g->cr.overlaps + g->c2.overlaps + (g->have_cp ? g->cp.overlaps : 0),
           g->cr.fence_errors + g->c2.fence_errors);
    if (g->cr.overlaps || g->cr.fence_errors || g->c2.overlaps || g->c2.fence_errors ||
        (g->have_cp && g->cp.overlaps))
        die("mutual exclusion or fencing was violated");

    /* ---- watchdog */
    watchdog(&g->wd);
    const wdstats *w = &g->wd;
    printf("\n   3. renewing %d held locks (acquired one by one in %.2f s), median of %d rounds\n",
           WD_LOCKS, w->acquire_s, WD_ROUNDS);
    printf("    %-56s %8.2f ms  (best %.2f)\n",
           "batched: one rlk_client_tick (one pipeline; see 5.)", w->batched_ms,
           quantile(w->rb, WD_ROUNDS, 0));
    printf("    %-56s %8.2f ms  (best %.2f)\n", "one rlk_extend_token per lock, sequential",
           w->single_ms, quantile(w->rs, WD_ROUNDS, 0));
    printf("    %-56s %8.2f ms  (best %.2f)\n",
           facts.set_ifeq ? "minimal: SET IFEQ PX per lock, raw, one pipeline"
                          : "minimal: EVALSHA compare-and-pexpire per lock, raw, pipelined",
           w->minimal_ms, quantile(w->rm, WD_ROUNDS, 0));
    printf("    %-56s %8.1fx\n", "batched / one by one (speed)", w->single_ms / w->batched_ms);
    printf("    %-56s %8.2f ms  (%.2f us per lock)\n",
           "of a batched round, the server's time (INFO)", w->srv_ms,
           w->srv_ms * 1e3 / WD_LOCKS);

    /* ---- server time per uncontended cycle */
    server_time(&cap, g->srv, &g->nsrv);
    printf("\n   4. server time per uncontended cycle (INFO commandstats, top-level commands),"
           "\n      median of %d rounds of %d cycles; per command: us per call\n", SRV_ROUNDS,
           SRV_OPS);
    int used[ST_N] = {0};
    for (int i = 0; i < g->nsrv; i++)
        for (int k = 0; k < ST_N; k++) used[k] |= g->srv[i].want[k] != 0;
    printf("    %-46s %9s %13s", "cycle", "us/cycle", "(min..max)");
    for (int k = 0; k < ST_N; k++)
        if (used[k]) printf(" %8s", st_heads[k]);
    printf("\n");
    double med[3];
    for (int i = 0; i < g->nsrv; i++) {
        srvcycle *s = &g->srv[i];
        char range[32];
        med[i] = quantile(s->cycle, SRV_ROUNDS, 0.5);
        snprintf(range, sizeof range, "(%.2f..%.2f)", quantile(s->cycle, SRV_ROUNDS, 0),
                 quantile(s->cycle, SRV_ROUNDS, 1));
        printf("    %-46s %9.2f %13s", s->label, med[i], range);
        for (int k = 0; k < ST_N; k++)
            if (!used[k]) continue;
            else if (s->want[k]) printf(" %8.2f", quantile(s->call[k], SRV_ROUNDS, 0.5));
            else printf(" %8s", "-");
        printf("\n");
        if (s->ninner) {
            printf("      %-44s", "inside the script, per cycle:");
            for (int j = 0; j < s->ninner; j++)
                printf(" %s %.2f x %.2f us", s->inner[j],
                       quantile(s->inner_calls[j], SRV_ROUNDS, 0.5),
                       quantile(s->inner_usec[j], SRV_ROUNDS, 0.5));
            printf("\n");
        }
    }
    /* Rounds of the cycles ran next to each other: the median of the
     * same-round ratios, as in 1. */
    double ratio[MAX_ROUNDS];
    for (int r = 0; r < SRV_ROUNDS; r++) ratio[r] = g->srv[1].cycle[r] / g->srv[0].cycle[r];
    g->srv_ratio = quantile(ratio, SRV_ROUNDS, 0.5);
    printf("    %-46s %9.2fx  (ratio of the medians %.2fx)\n",
           "resplock / minimal, same-round ratios", g->srv_ratio, med[1] / med[0]);
    g->srv_ratio_script = -1;
    if (g->nsrv == 3) {
        for (int r = 0; r < SRV_ROUNDS; r++)
            ratio[r] = g->srv[1].cycle[r] / g->srv[2].cycle[r];
        g->srv_ratio_script = quantile(ratio, SRV_ROUNDS, 0.5);
        printf("    %-46s %9.2fx  (ratio of the medians %.2fx)\n",
               "resplock / script cycle, same-round ratios", g->srv_ratio_script,
               med[1] / med[2]);
    }

    /* ---- server time per renewed lock */
    printf("\n   5. server time per renewed lock, in the rounds of 3. (INFO commandstats after\n"
           "      CONFIG RESETSTAT), median of %d rounds of %d locks; per command: calls\n"
           "      per lock and us per call (\"in scripts\": a script's own calls, inside its\n"
           "      time)\n", WD_ROUNDS, WD_LOCKS);
    printf("    %-46s %9s %13s\n", "round", "us/lock", "(min..max)");
    for (int i = 0; i < 2; i++) {
        const rnstats *rs = i ? &w->rlk : &w->min;
        printf("    %-46s %9.3f (%.3f..%.3f)\n",
               i ? "resplock: the watchdog's batched round"
                 : facts.set_ifeq ? "minimal: SET key token IFEQ token PX ttl"
                                  : "minimal: EVALSHA compare-and-pexpire",
               quantile(rs->per_lock, WD_ROUNDS, 0.5), quantile(rs->per_lock, WD_ROUNDS, 0),
               quantile(rs->per_lock, WD_ROUNDS, 1));
        for (int k = 0; k < rs->ncmd; k++)
            printf("      %-20s %-10s %9.4f calls/lock x %8.3f us\n", rs->name[k],
                   rs->inner[k] ? "(in scripts)" : "", quantile(rs->calls[k], WD_ROUNDS, 0.5),
                   quantile(rs->usec[k], WD_ROUNDS, 0.5));
        printf("      %-31s %9.3f us/lock (%.3f..%.3f)\n", "(the server's CPU, all of it)",
               quantile(rs->cpu_per_lock, WD_ROUNDS, 0.5), quantile(rs->cpu_per_lock, WD_ROUNDS, 0),
               quantile(rs->cpu_per_lock, WD_ROUNDS, 1));
    }
    printf("    %-46s %9.2fx  (ratio of the medians %.2fx)\n\n",
           "resplock / minimal, same-round ratios", w->ratio,
           quantile(w->rlk.per_lock, WD_ROUNDS, 0.5) / quantile(w->min.per_lock, WD_ROUNDS, 0.5));
}

static void verdict_row(const char *what, const char *target, regime *g, int ng,
                        double (*value)(const regime *), const char *fmt, int higher_better,
                        double limit)
{
    printf("  %-46s", what);
    for (int i = 0; i < ng; i++) {
        double v = value(&g[i]);
        char s[32];
        if (v < 0) snprintf(s, sizeof s, "-");
        else snprintf(s, sizeof s, fmt, v);
        int met = higher_better ? v >= limit : v <= limit;
        /* limit < 0: a figure without a target */
        printf(" %9s %-7s", s, v < 0 || limit < 0 ? "" : met ? "met" : "NOT MET");
    }
    printf("  %s\n", target);
}

static double v_raw(const regime *g) { return g->r_raw; }
static double v_py(const regime *g) { return g->r_py; }
static double v_cross(const regime *g) { return g->cr.cross ? g->cr.med_cross_ns / g->rtt_ns : -1; }
static double v_all(const regime *g) { return g->cr.med_all_ns / g->rtt_ns; }
static double v_two(const regime *g) { return g->c2.cross ? g->c2.med_cross_ns / g->rtt_ns : -1; }
static double v_wd(const regime *g) { return g->wd.single_ms / g->wd.batched_ms; }
static double v_srv(const regime *g) { return g->srv_ratio; }
static double v_rn(const regime *g) { return g->wd.ratio; }
static double b_floor_py(const regime *g) { return g->r_floor_py; }
static double b_srv_rt(const regime *g)
{
    return g->cr.cpu_server * 1e9 / (double)g->cr.all_acq / g->rtt_ns;
}
static double b_wd(const regime *g)
{
    return g->wd.srv_ms > 0 ? g->wd.single_ms / g->wd.srv_ms : -1;
}

/* A figure measured in this run that bounds what a target can reach. */
static void bound_row(const char *what, regime *g, int ng, double (*value)(const regime *),
                      const char *fmt)
{
    verdict_row(what, "", g, ng, value, fmt, 1, -1);
}

int main(void)
{
    int64_t t_start = now_ns();
    main_pid = getpid();
    signal(SIGPIPE, SIG_IGN);
    server = ts_start(NULL);
    if (!server) die("cannot start redis-server");
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", server->port);

    server_facts(&facts);
    char load0[64];
    have_py = have_redis_py(pyver, sizeof pyver);
    bench_loadavg(load0, sizeof load0);
    capture(server->port, &cap);

    int form = minimal_release(&facts);
    printf("resplock lock benchmark on %s %s: resplock %s against a raw socket and redis-py %s\n"
           "server: %s %s on 127.0.0.1:%d, started by this program; %ld CPUs online,\n"
           "load average %s at the start\n"
           "INFO server: server_name %s, valkey_version %s, redis_version %s; so\n"
           "DELIFEQ %s, DELEX IFEQ %s, SET IFEQ %s.  resplock released by %s.\n\n",
           facts.name, facts.version, RLK_VERSION, have_py ? pyver : "(not available)",
           facts.name, facts.version, server->port, sysconf(_SC_NPROCESSORS_ONLN), load0,
           facts.server_name[0] ? facts.server_name : "(none)",
           facts.valkey_version[0] ? facts.valkey_version : "(none)",
           facts.redis_version[0] ? facts.redis_version : "(none)", facts.delifeq ? "yes" : "no",
           facts.delex_ifeq ? "yes" : "no", facts.set_ifeq ? "yes" : "no", rel_names[cap.rel_form]);
    printf("On loopback a round trip (RT) costs very different amounts depending on where\n"
           "the two processes run: on one CPU it is two context switches; across CPUs\n"
           "the sleeping side must be woken on the other CPU (in a VM, a virtual CPU\n"
           "woken by the hypervisor).  Left to the kernel, the placement changes from\n"
           "round to round and so do the results, so every workload runs twice, with\n"
           "the server and the clients pinned: on the same CPU (short RT: the clients'\n"
           "own cost weighs most), and on separate CPUs (every RT wakes the other CPU,\n"
           "as a server on another machine would, and more slowly).\n\n");
    printf("1. Uncontended: acquire + release of one free lock, one client, %d rounds of\n"
           "   %d cycles per client, the order of the clients rotating from round to\n"
           "   round; rates of the median and best rounds, IQR of the rates as a share\n"
           "   of the median, the client's own CPU time (user + system) per cycle, and\n"
           "   the median over rounds of the same-round ratios.\n"
           "   resplock: rlk_lock_acquire (wait 0, TTL 30 s) + rlk_lock_release, as\n"
           "   shipped (HELLO 3, a deadline per call, a fresh 128-bit token per cycle).\n"
           "   raw: the bytes the library sent for one cycle, captured through a relay,\n"
           "   replayed as two round trips on a blocking TCP_NODELAY socket, reading to\n"
           "   the reply's last line, no parser, no timeout:\n"
           "     acquire (%zu bytes): %s\n"
           "     release (%zu bytes): %s\n"
           "   redis-py: lock = r.lock(name, timeout=30); lock.acquire(blocking=False);\n"
           "   lock.release(), timed in Python (SET NX PX, then its release script by\n"
           "   EVALSHA; RESP2).\n\n",
           UNC_ROUNDS, UNC_OPS, cap.acquire.len, cap.acq_desc, cap.release.len, cap.rel_desc);
    printf("2. Contended: processes on one lock, each looping acquire (wait forever), a\n"
           "   critical section of a few instructions, release, for %d s.  A handoff:\n"
           "   from a holder calling release to the next acquire returning (stamped with\n"
           "   CLOCK_MONOTONIC, one clock for all processes).  \"other\": handoffs to\n"
           "   another process than the one that released.  per process: fewest..most\n"
           "   acquisitions of one process.  In RT: divided by the idle PING RT.\n"
           "   resplock: RLK_WAIT_FOREVER (joins the lock's queue; the release hands\n"
           "   the lock over with one message); redis-py: acquire(blocking=True), which\n"
           "   polls every 0.1 s (its default).\n\n", CONT_SECONDS);
    printf("3. Watchdog: %d locks held by one client (watchdog on, TTL 30 s,\n"
           "   renew_divisor 30: a renewal round a second, every lock in it); each\n"
           "   round renews all of them, batched (the client's ticks, from the one that\n"
           "   finds the round due to the last reply), or one rlk_extend_token per lock\n"
           "   from a second client, or the minimal renewal of every lock with its\n"
           "   holder's token, raw, in one pipeline (%s);\n"
           "   the batched and the minimal round next to each other, in turn first.\n"
           "   Before each round three of the keys get 5 s left on the server behind the\n"
           "   library's back; after it their TTL must be close to 30 s again (checked\n"
           "   with PTTL).\n\n",
           WD_LOCKS, facts.set_ifeq ? "SET key token IFEQ token PX 30000"
                                    : "EVALSHA of a compare-and-pexpire script");
    printf("4. Server time per uncontended cycle: the server's own time in the commands\n"
           "   the client sent (INFO commandstats, top-level commands only: a script's\n"
           "   inner calls are inside EVALSHA's or FCALL's time), after CONFIG RESETSTAT;\n"
           "   %d rounds\n"
           "   of %d cycles of each, alternating; the ratio is the median of the\n"
           "   same-round ratios.  minimal: the least a correct lock does on this\n"
           "   server, sent raw: the library's SET NX PX as captured, then %s.\n"
           "   The compare-and-delete script (by EVALSHA; where the minimal release is\n"
           "   native, its cycle is a third row, for reference):\n"
           "     %s\n"
           "   resplock: rlk_lock_acquire + rlk_lock_release as in 1 (its release as\n"
           "   captured).  The calls of SET, HGET, TIME and the release are counted\n"
           "   against the cycles, and no other command may be called: a cycle off\n"
           "   the uncontended path ends the run.\n\n",
           SRV_ROUNDS, SRV_OPS,
           form == REL_DELIFEQ ? "DELIFEQ key token"
           : form == REL_DELEX ? "DELEX key IFEQ token"
                               : "by EVALSHA the compare-and-delete script",
           cad_script);
    printf("5. Server time per renewed lock: in each round of 3., the server's time\n"
           "   (INFO commandstats after CONFIG RESETSTAT) in resplock's batched round\n"
           "   and in the minimal renewal's, per lock; the ratio is the median of the\n"
           "   same-round ratios.  Top-level commands only: where a round called\n"
           "   scripts, SET and the script calls; else every command.  Beside it, not\n"
           "   in the ratio: the server process's CPU time per lock in the same round\n"
           "   (reading, parsing and replying included; clock_getcpuclockid).  The\n"
           "   minimal renewal on this server: %s%s\n\n",
           facts.set_ifeq ? "SET key token IFEQ token PX 30000."
                          : "by EVALSHA the compare-and-pexpire\n     ",
           facts.set_ifeq ? "" : cap_script);

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
    for (int i = 0; i < ng; i++) run_regime(&g[i]);

    char load1[64];
    bench_loadavg(load1, sizeof load1);
    printf("Notes: uncontended, every client makes the same two round trips per cycle,\n"
           "so the ratios compare each client's own cost on top of the kernel and the\n"
           "server (the cpu column).  The library's cycle also draws a token from\n"
           "getrandom and builds a handle; the raw floor replays one captured token.\n"
           "Contended, a release hands the lock to the first waiter in line (one\n"
           "message; the waiter pays no further round trip), and the releaser joins\n"
           "the back of the line in one script call.  When the CPU time per\n"
           "acquisition (all processes and the server) is about the wall time per\n"
           "acquisition, the CPUs are saturated: a handoff then waits for the CPU,\n"
           "not for the protocol, and the RT figures divide by an idle round trip.\n"
           "Load average at the end: %s (other work on the machine moves the numbers).\n\n",
           load1);

    printf("Targets%*s", 41, "");
    for (int i = 0; i < ng; i++) printf(" %-17s", g[i].title);
    printf("  target\n");
    verdict_row("uncontended: resplock / raw floor", ">= 0.90x", g, ng, v_raw, "%.3fx", 1, 0.9);
    verdict_row("uncontended: resplock / redis-py", ">= 3x", g, ng, v_py, "%.2fx", 1, 3);
    verdict_row("contended, 8 processes: median handoff to other", "<= 3 RT", g, ng, v_cross,
                "%.1f RT", 0, 3);
    verdict_row("contended, 8 processes: median handoff (all)", "<= 3 RT", g, ng, v_all,
                "%.1f RT", 0, 3);
    verdict_row("(2 processes: median handoff to other)", "<= 3 RT", g, ng, v_two, "%.1f RT",
                0, 3);
    verdict_row("watchdog: batched / one call per lock", ">= 10x", g, ng, v_wd, "%.1fx", 1, 10);
    verdict_row("server time per uncontended cycle / minimal", "<= 1.5x", g, ng, v_srv,
                "%.2fx", 0, 1.5);
    verdict_row("server time per renewed lock / minimal", "<= 1.5x", g, ng, v_rn, "%.2fx", 0,
                1.5);
    printf("   (the minimal on %s %s: cycle SET NX PX + %s; renewal %s)\n", facts.name,
           facts.version, form == REL_EVALSHA ? "compare-and-delete script" : rel_names[form],
           facts.set_ifeq ? "SET IFEQ PX" : "compare-and-pexpire script");
    printf("\nWhat bounds them, measured in this run:\n");
    bound_row("raw floor / redis-py (the most a client making", g, ng, b_floor_py, "%.2fx");
    printf("   the same two round trips can reach)\n");
    bound_row("8 processes: server CPU per acquisition, in RT", g, ng, b_srv_rt, "%.1f RT");
    printf("   (a cycle is a handoff and a hold of a few instructions: when the CPUs\n"
           "   are saturated, it cannot take less than the CPU it needs)\n");
    bound_row("one call per lock / the server's time in", g, ng, b_wd, "%.1fx");
    printf("   of a batched round (the most batching can reach)\n");

    /* One line per placement for bench/servers: tab-separated key=value. */
    printf("\nSummary, one line per placement (server times in us):\n");
    for (int i = 0; i < ng; i++) {
        const regime *x = &g[i];
        char script[32] = "-";
        if (x->nsrv == 3)
            snprintf(script, sizeof script, "%.3f", quantile(x->srv[2].cycle, SRV_ROUNDS, 0.5));
        printf("summary\tplacement=%s\tserver=%s %s\tmin_release=%s\trlk_release=%s"
               "\tmin_cycle_us=%.3f\trlk_cycle_us=%.3f\tcycle_ratio=%.3f\tscript_cycle_us=%s"
               "\tmin_renewal=%s\tmin_renew_us=%.4f\trlk_renew_us=%.4f\trenew_ratio=%.3f"
               "\trtt_us=%.1f\tunc_rlk_per_s=%.0f\tunc_raw_per_s=%.0f\tunc_vs_raw=%.3f"
               "\tunc_vs_py=%.2f\thandoff8_rt=%.1f\thandoff2_rt=%.1f\twd_batched_ms=%.2f"
               "\twd_speedup=%.1f\n",
               x->title, facts.name, facts.version, rel_names[form], rel_names[cap.rel_form],
               quantile(x->srv[0].cycle, SRV_ROUNDS, 0.5),
               quantile(x->srv[1].cycle, SRV_ROUNDS, 0.5), x->srv_ratio, script,
               facts.set_ifeq ? "SET IFEQ PX" : "EVALSHA",
               quantile(x->wd.min.per_lock, WD_ROUNDS, 0.5),
               quantile(x->wd.rlk.per_lock, WD_ROUNDS, 0.5), x->wd.ratio, x->rtt_ns / 1e3,
               rate_q(&x->unc[1], 0.5), rate_q(&x->unc[0], 0.5), x->r_raw, x->r_py,
               v_cross(x), v_two(x), x->wd.batched_ms, v_wd(x));
    }

    ts_stop(server);
    server = NULL;
    rlk_buf_free(&cap.acquire);
    rlk_buf_free(&cap.release);
    printf("\nTotal time %.1f s.\n", (double)(now_ns() - t_start) * 1e-9);
    return 0;
}
