/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resplock run / acquire / release / extend / status.
 *
 * `run` holds the lock while a child runs in a process group of its own
 * (the job): it forwards the usual terminating signals to that group,
 * renews the lock with the library's tick watchdog (no thread), and when
 * the lock is lost it stops the group early enough that, after
 * --kill-after, the SIGKILL lands before the lock's validity ends.  A
 * supervisor process (supervise.c) does the same if resplock dies or
 * stops renewing.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"
#include "keys.h"
#include "lock.h"
#include "lua.h"
#include "sem.h"
#include "rw.h"
#include "random.h"
#include "slots.h"
#include "url.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_KILL_AFTER_MS 5000

typedef struct lock_args {
    int64_t ttl_ms;
    int64_t wait_ms;         /* RLK_WAIT_FOREVER by default, as flock */
    int conflict_code;
    int64_t hold_min_ms;
    int64_t kill_after_ms;   /* -1: not given */
    int64_t max_time_ms;     /* run: 0 when none */
    const char *shell;       /* run -c */
    int add;                 /* extend: add instead of set */
    unsigned from_conf;      /* bit CLI_D_*: the value is the config file's */
    int json;                /* status, list: one JSON object per lock */
    long replicas, replicas_aof; /* --replicas, --replicas-aof (0: none) */
    int64_t replicas_ms;     /* --replicas-timeout (0: the library's) */
    /* sem run: the size, the permits taken, the layout on the server and
     * its lockTimeout (redis-semaphore's). */
    int sem;
    int64_t permits, take, lock_timeout_ms;
    int layout;
    int fair;                /* --fair: RLK_LOCK_FAIR */
    int rw, rw_mode;         /* rw run: --read (RLK_RW_READ) or --write */
} lock_args;

/* A value no option gave (yet): the config file's, or the default. */
#define UNSET INT64_MIN

enum { OPT_HOLD_MIN = 2000, OPT_KILL_AFTER, OPT_ADD, OPT_MAX_TIME, OPT_JSON, OPT_REPLICAS,
       OPT_REPLICAS_AOF, OPT_REPLICAS_TIMEOUT, OPT_LAYOUT, OPT_LOCK_TIMEOUT, OPT_FAIR, OPT_READ,
       OPT_WRITE };

/* sem run's own options first (its -p is --permits: the port is --port
 * there), then rw run's; rw run skips sem's (rw_long), the lock's
 * commands both (lock_long). */
#define SEM_OPTIONS 4
#define RW_OPTIONS 2
static const cli_option run_long[] = {
    {"permits", 1, 'p'},
    {"take", 1, 'k'},
    {"layout", 1, OPT_LAYOUT},
    {"lock-timeout", 1, OPT_LOCK_TIMEOUT},
    {"read", 0, OPT_READ},
    {"write", 0, OPT_WRITE},
    {"ttl", 1, 't'},
    {"wait", 1, 'w'},
    {"nonblock", 0, 'n'},
    {"conflict-exit-code", 1, 'E'},
    {"hold-min", 1, OPT_HOLD_MIN},
    {"kill-after", 1, OPT_KILL_AFTER},
    {"add", 0, OPT_ADD},
    {"command", 1, 'c'},
    {"max-time", 1, OPT_MAX_TIME},
    {"json", 0, OPT_JSON},
    {"replicas", 1, OPT_REPLICAS},
    {"replicas-aof", 1, OPT_REPLICAS_AOF},
    {"replicas-timeout", 1, OPT_REPLICAS_TIMEOUT},
    {"fair", 0, OPT_FAIR},
    {NULL, 0, 0}};
static const cli_option *const rw_long = run_long + SEM_OPTIONS;
static const cli_option *const lock_long = run_long + SEM_OPTIONS + RW_OPTIONS;

/* A whole number 1..2^40, or -1. */
static int64_t count_of(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    return !*s || *end || errno || v < 1 || v > (1LL << 40) ? -1 : v;
}

static int duration_opt(const char *opt, const char *arg, int64_t *out, int allow_zero)
{
    if (cli_parse_duration(arg, out) != 0 || (*out == 0 && !allow_zero))
        return cli_usage_error("bad %s '%s' (a duration such as 500ms, 10s or 5m)", opt, arg), -1;
    return 1;
}

static int lock_opt(void *ctx, int c, const char *arg)
{
    lock_args *a = ctx;
    char *end;
    switch (c) {
    case 't':
        if (duration_opt("--ttl", arg, &a->ttl_ms, 0) < 0) return -1;
        /* The library refuses it too (RLK_ERR_INVALID); said here as the
         * usage error it is. */
        if (rlk_plan_valid_ms(NULL, a->ttl_ms) <= 0)
            return cli_usage_error("--ttl %s is too short: the lock would be valid for no time "
                                   "(%" PRId64 " ms go to the clock-drift allowance)",
                                   arg, rlk_plan_drift_ms(NULL, a->ttl_ms)), -1;
        return 1;
    case 'w': return duration_opt("--wait", arg, &a->wait_ms, 1);
    case 'n': a->wait_ms = 0; return 1;
    case 'E': {
        long v = strtol(arg, &end, 10);
        if (!*arg || *end || v < 0 || v > 255)
            return cli_usage_error("bad --conflict-exit-code '%s' (0 to 255)", arg), -1;
        a->conflict_code = (int)v;
        return 1;
    }
    case OPT_HOLD_MIN: return duration_opt("--hold-min", arg, &a->hold_min_ms, 1);
    case OPT_KILL_AFTER: return duration_opt("--kill-after", arg, &a->kill_after_ms, 1);
    case OPT_ADD: a->add = 1; return 1;
    case OPT_FAIR: a->fair = 1; return 1;
    case OPT_READ:
    case OPT_WRITE: a->rw_mode = c == OPT_READ ? RLK_RW_READ : RLK_RW_WRITE; return 1;
    case 'c': a->shell = arg; return 1;
    case OPT_MAX_TIME: return duration_opt("--max-time", arg, &a->max_time_ms, 0);
    case OPT_JSON: a->json = 1; return 1;
    case OPT_REPLICAS:
    case OPT_REPLICAS_AOF: {
        long v = strtol(arg, &end, 10);
        if (!*arg || *end || v < 1 || v > 1000000)
            return cli_usage_error("bad --%s '%s' (1 to 1000000 replicas)",
                                   c == OPT_REPLICAS ? "replicas" : "replicas-aof", arg), -1;
        *(c == OPT_REPLICAS ? &a->replicas : &a->replicas_aof) = v;
        return 1;
    }
    case OPT_REPLICAS_TIMEOUT: return duration_opt("--replicas-timeout", arg, &a->replicas_ms, 0);
    case 'p':
    case 'k':
        if ((*(c == 'p' ? &a->permits : &a->take) = count_of(arg)) < 1)
            return cli_usage_error("bad %s '%s' (a whole number, at least 1)",
                                   c == 'p' ? "--permits" : "--take", arg), -1;
        return 1;
    case OPT_LAYOUT:
        if (strcmp(arg, "resplock") == 0) a->layout = RLK_SEM_LAYOUT_RESPLOCK;
        else if (strcmp(arg, "redis-semaphore") == 0) a->layout = RLK_SEM_LAYOUT_REDIS_SEMAPHORE;
        else return cli_usage_error("bad --layout '%s' (resplock or redis-semaphore)", arg), -1;
        return 1;
    case OPT_LOCK_TIMEOUT: return duration_opt("--lock-timeout", arg, &a->lock_timeout_ms, 0);
    default: return 0;
    }
}

/*
 * Options may stand before and after the positional words: `run NAME -n
 * -- cmd` as well as `run -n NAME -- cmd`.  Fills pos[0..npos); *rest is
 * what follows them (run's COMMAND), or NULL.  Returns 0, an exit code,
 * or -1 when words are missing.
 */
static int parse_args(cli_opts *o, lock_args *a, int argc, char **argv, const char **pos,
                      int npos, char ***rest)
{
    int got = 0;
    *rest = NULL;
    for (;;) {
        int next;
        int r = cli_getopt(o, argc, argv,
                           a->sem ? run_long : a->rw ? rw_long : lock_long, lock_opt, a, &next);
        if (r) return r;
        if (next >= argc) break;
        int dashdash = next > 1 && strcmp(argv[next - 1], "--") == 0;
        if (dashdash || got == npos) {
            int i = next;
            while (got < npos && i < argc) pos[got++] = argv[i++];
            if (i < argc) *rest = argv + i;
            break;
        }
        pos[got++] = argv[next];
        /* Go on after the word; it stands in for the program name. */
        argv += next;
        argc -= next;
    }
    if (got > 0 && !*pos[0]) return cli_usage_error("the lock NAME is empty");
    return got == npos ? 0 : -1;
}

/* A connected client of the server at url (NULL: the options'); on
 * failure prints the reason, sets *status and returns NULL.  With a wait
 * of its own (wait_ms > 0) it is not connected yet: the acquisition
 * connects, and tries again, within its wait (a server restarting), which
 * bounds the whole call. */
static rlk_client *lock_client(cli_opts *o, const char *url, int64_t wait_ms, int *code)
{
    *code = cli_resolve(o);
    if (*code) return NULL;
    if (o->redlock && (url || o->nseeds < 2 || o->nseeds % 2 || o->nseeds > 14)) {
        *code = cli_usage_error("--redlock needs 3 to 15 servers, an odd number of them (a -u "
                                "for each; %d given)", url ? 1 : 1 + o->nseeds);
        return NULL;
    }
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = url ? url : o->final_url;
    cfg.redlock = o->redlock;
    /* More seeds (-u again), each with the options' user, password and
     * TLS, as the first URL has them once resolved. */
    char *seedbuf[15] = {NULL};
    const char *seeds[15];
    int nseeds = 0;
    for (int i = 0; i < o->nseeds && !url; i++) {
        rlk__url su;
        char err[160];
        int ur = rlk__url_parse(&su, o->seeds[i], err, sizeof err);
        if (ur == RLK_OK && su.kind == RLK__URL_UNIX) {
            snprintf(err, sizeof err, o->redlock ? "a Redlock server needs a host here"
                                                 : "a cluster node needs a host");
            ur = RLK_ERR_URL;
        }
        if (ur != RLK_OK) {
            cli_err("--url %s: %s", o->seeds[i], err);
            rlk__url_free(&su);
            for (int k = 0; k < nseeds; k++) free(seedbuf[k]);
            *code = CLI_EX_USAGE;
            return NULL;
        }
        const char *nu = cli_node_url(o, su.host, su.port);
        seedbuf[nseeds] = nu ? strdup(nu) : NULL;
        rlk__url_free(&su);
        if (seedbuf[nseeds]) seeds[nseeds] = seedbuf[nseeds], nseeds++;
    }
    cfg.seeds = nseeds ? seeds : NULL;
    cfg.nseeds = (size_t)nseeds;
    cfg.conn.tls = o->tls;
    cfg.conn.client_name = "resplock";
    cfg.conn.connect_timeout_ms = (int)o->timeout_ms;
    cfg.conn.command_timeout_ms = (int)o->timeout_ms;
    cli_insecure_warning(o);
    rlk_client *cl = rlk_client_new(&cfg);
    for (int k = 0; k < nseeds; k++) free(seedbuf[k]); /* the client copied them */
    if (!cl) {
        cli_err("out of memory");
        *code = CLI_EX_SOFTWARE;
        return NULL;
    }
    if (wait_ms > 0 || o->redlock) {
        /* The acquisition connects, within its wait (under Redlock, to
         * every server at once, within its own deadline). */
        cli_verbose("connecting to %s within the wait", o->server);
        return cl;
    }
    cli_verbose("connecting to %s", o->server);
    int status = rlk_client_connect(cl);
    if (status != RLK_OK) {
        *code = cli_connect_error(o, status, rlk_client_errmsg(cl));
        rlk_client_free(cl);
        return NULL;
    }
    cli_connected(rlk_client_info(cl));
    return cl;
}

rlk_client *cli_client(cli_opts *o, const char *url, int64_t wait_ms, int *code)
{
    return lock_client(o, url, wait_ms, code);
}

/* Exit code of a lock call that did not succeed. */
static int lock_failure(cli_opts *o, rlk_client *cl, int status, const lock_args *a)
{
    switch (status) {
    case RLK_LOCK_BUSY:
        /* Skipping a held lock is what -n is for: silent, as flock. */
        cli_verbose("%s", rlk_client_errmsg(cl));
        return a->conflict_code;
    case RLK_LOCK_NOT_HELD: case RLK_LOCK_NOT_OWNER:
        cli_err("%s", rlk_client_errmsg(cl));
        return a->conflict_code;
    case RLK_LOCK_NOT_A_LOCK:
        /* Never silent, and not a conflict: it would be skipped for ever. */
        cli_err("%s (an application's key? use a --prefix, or prefix in the config file)",
                rlk_client_errmsg(cl));
        return CLI_EX_DATAERR;
    default:
        return cli_connect_error(o, status, rlk_client_errmsg(cl));
    }
}

static void init_args(lock_args *a)
{
    memset(a, 0, sizeof *a);
    a->ttl_ms = a->wait_ms = a->hold_min_ms = a->max_time_ms = a->kill_after_ms = UNSET;
    a->conflict_code = 1;
}

/* What no option gave: the configuration file's value (run's own ones
 * for run only), else the default.  0, or an exit code. */
static int fill_defaults(cli_opts *o, lock_args *a, int run)
{
    int r = cli_config(o);
    if (r) return r;
    int64_t *v[CLI_D_COUNT] = {&a->ttl_ms, &a->wait_ms, &a->hold_min_ms, &a->max_time_ms,
                               &a->kill_after_ms};
    const int64_t dflt[CLI_D_COUNT] = {RLK_DEFAULT_TTL_MS, RLK_WAIT_FOREVER, 0, 0, -1};
    for (int d = 0; d < CLI_D_COUNT; d++) {
        if (*v[d] != UNSET) continue;
        int mine = d == CLI_D_TTL || d == CLI_D_WAIT || run;
        *v[d] = mine && o->conf_set[d] ? o->conf_ms[d] : dflt[d];
        if (mine && o->conf_set[d]) a->from_conf |= 1u << d;
    }
    if ((a->replicas && a->replicas_aof) || (a->replicas_ms && !a->replicas && !a->replicas_aof) ||
        a->replicas_ms > a->ttl_ms / 4)
        return cli_usage_error("--replicas or --replicas-aof: one of them, with a "
                               "--replicas-timeout within a quarter of the TTL");
    return 0;
}

/* run's TTL and --kill-after do not fit together: a usage error, or a
 * configuration error when the file gave one of them. */
static int misfit(const cli_opts *o, const lock_args *a, const char *msg)
{
    int d = a->from_conf & (1u << CLI_D_KILL_AFTER) ? CLI_D_KILL_AFTER
            : a->from_conf & (1u << CLI_D_TTL)      ? CLI_D_TTL
                                                    : -1;
    if (d < 0) return cli_usage_error("%s", msg);
    cli_err("%s: %s", o->conf_where[d], msg);
    return CLI_EX_CONFIG;
}

/* run's command line, recorded with what it holds (the library keeps
 * RLK_HOLDER_CMD_MAX bytes of it, encoded), into line; "" without one. */
static void holder_line(char line[RLK_HOLDER_CMD_MAX + 1], char **cmd)
{
    line[0] = '\0';
    for (size_t n = 0; cmd && *cmd && n < RLK_HOLDER_CMD_MAX; cmd++)
        n += (size_t)snprintf(line + n, RLK_HOLDER_CMD_MAX + 1 - n, "%s%s", n ? " " : "", *cmd);
}

static int acquire(const cli_opts *o, rlk_client *cl, const char *name, const lock_args *a, int watchdog,
                   void (*on_lost)(void *, rlk_lock *), int64_t margin, char **cmd, rlk_lock **l)
{
    rlk_lock_options lo;
    rlk_lock_options_init(&lo);
    char line[RLK_HOLDER_CMD_MAX + 1];
    holder_line(line, cmd);
    lo.holder_cmd = line;
    lo.ttl_ms = a->ttl_ms;
    lo.wait_ms = a->wait_ms;
    lo.kind = a->fair ? RLK_LOCK_FAIR : RLK_LOCK_SIMPLE;
    lo.watchdog = watchdog;
    lo.on_lost = on_lost;
    lo.lost_margin_ms = margin;
    lo.min_replicas = a->replicas;
    lo.min_replicas_aof = a->replicas_aof;
    lo.replicas_timeout_ms = a->replicas_ms;
    /* acquire hands the token on and ends: no turn would read a
     * handoff's confirmation after it. */
    lo.full_ttl = !watchdog;
    /* One try first: -v says it waits only when it does (the lock is
     * held).  A server not reached yet, or loading, is tried again within
     * the wait.  The try is bounded by --timeout, not by the wait: with a
     * shorter wait it is made only on a connection that is there already;
     * nor with several seeds, which only a wait checks to the end. */
    int64_t start = cli_mono_ms();
    int r = RLK_LOCK_BUSY;
    int try_first = a->wait_ms == RLK_WAIT_FOREVER || rlk_client_fd(cl) >= 0 ||
                    (a->wait_ms >= o->timeout_ms && o->nseeds == 0);
    if (a->wait_ms != 0 && !try_first) cli_verbose("trying '%s' within the wait", name);
    if (a->wait_ms != 0 && try_first) {
        rlk_lock_options once = lo;
        once.wait_ms = 0;
        r = rlk_lock_acquire(cl, name, &once, l);
        if (r == RLK_LOCK_BUSY) cli_verbose("waiting for '%s'", name);
    }
    int again = r == RLK_LOCK_BUSY || r == RLK_ERR_CONNECT || r == RLK_ERR_TIMEOUT ||
                r == RLK_ERR_IO || r == RLK_ERR_CLOSED || r == RLK_ERR_SERVER;
    if (a->wait_ms > 0) lo.wait_ms = a->wait_ms - (cli_mono_ms() - start);
    if (again && (a->wait_ms == 0 || a->wait_ms == RLK_WAIT_FOREVER || lo.wait_ms > 0))
        r = rlk_lock_acquire(cl, name, &lo, l);
    /* The server refused the wait's SUBSCRIBE (an ACL user without the
     * channels): waits re-check instead of waiting in line. */
    const char *note = rlk_client_wait_note(cl);
    if (note) cli_verbose("%s", note);
    if (r == RLK_OK) {
        if (a->wait_ms > 0) cli_connected(rlk_client_info(cl));
        cli_verbose("acquired '%s' with fence %" PRIu64 ", ttl %" PRId64 " ms", name,
                    rlk_lock_fence(*l), a->ttl_ms);
    }
    return r;
}

/* ------------------------------------------------------------------ */
/* run                                                                  */

static int lost_flag;

static void on_lost(void *ctx, rlk_lock *l)
{
    (void)ctx;
    (void)l;
    lost_flag = 1;
}

static void on_lost_sem(void *ctx, rlk_sem *s)
{
    (void)ctx;
    (void)s;
    lost_flag = 1;
}

static void on_lost_rw(void *ctx, rlk_rw *w)
{
    (void)ctx;
    (void)w;
    lost_flag = 1;
}

/* What run holds while COMMAND runs: a lock, sem run's permits, or rw
 * run's hold. */
typedef struct held {
    rlk_lock *l;
    rlk_sem *s;
    rlk_rw *w;
} holding;

static int64_t held_left(const holding *h)
{
    if (RLK_CLI_RW && h->w) return rlk_rw_remaining_ms(h->w);
    return RLK_CLI_SEM && h->s ? rlk_sem_remaining_ms(h->s) : rlk_lock_remaining_ms(h->l);
}
static int64_t held_ttl(const holding *h)
{
    if (RLK_CLI_RW && h->w) return rlk_rw_ttl_ms(h->w);
    return RLK_CLI_SEM && h->s ? rlk_sem_ttl_ms(h->s) : rlk_lock_ttl_ms(h->l);
}
static void held_forget(const holding *h)
{
    if (RLK_CLI_RW && h->w) rlk_rw_forget(h->w);
    else RLK_CLI_SEM && h->s ? rlk_sem_forget(h->s) : rlk_lock_forget(h->l);
}
static int held_release(const holding *h)
{
    if (RLK_CLI_RW && h->w) return rlk_rw_release(h->w);
    return RLK_CLI_SEM && h->s ? rlk_sem_release(h->s) : rlk_lock_release(h->l);
}
static int held_extend(const holding *h, int64_t ms)
{
    if (RLK_CLI_RW && h->w) return rlk_rw_extend(h->w, ms);
    return RLK_CLI_SEM && h->s ? rlk_sem_extend(h->s, ms) : rlk_lock_extend(h->l, ms, RLK_EXTEND_SET);
}
static const char *held_token(const holding *h)
{
    if (RLK_CLI_RW && h->w) return rlk_rw_token(h->w);
    return RLK_CLI_SEM && h->s ? rlk_sem_token(h->s) : rlk_lock_token(h->l);
}
static uint64_t held_fence(const holding *h)
{
    if (RLK_CLI_RW && h->w) return rlk_rw_fence(h->w);
    return RLK_CLI_SEM && h->s ? rlk_sem_fence(h->s) : rlk_lock_fence(h->l);
}

/* rw run's acquire: a read or a write hold, within the wait. */
static int acquire_rw(rlk_client *cl, const char *name, const lock_args *a, int64_t margin,
                      char **cmd, rlk_rw **w)
{
    if (!RLK_CLI_RW) return RLK_ERR_INVALID;
    rlk_rw_options ro;
    rlk_rw_options_init(&ro);
    char line[RLK_HOLDER_CMD_MAX + 1];
    holder_line(line, cmd);
    const char *mode = a->rw_mode == RLK_RW_WRITE ? "write" : "read";
    ro.holder_cmd = line;
    ro.mode = (rlk_rw_mode)a->rw_mode;
    ro.ttl_ms = a->ttl_ms;
    ro.wait_ms = a->wait_ms;
    ro.watchdog = 1;
    ro.on_lost = on_lost_rw;
    ro.lost_margin_ms = margin;
    if (a->wait_ms != 0) cli_verbose("taking a %s hold of '%s' within the wait", mode, name);
    int r = rlk_rw_acquire(cl, name, &ro, w);
    if (r == RLK_OK)
        cli_verbose("took a %s hold of '%s' with fence %" PRIu64 ", ttl %" PRId64 " ms", mode,
                    name, rlk_rw_fence(*w), a->ttl_ms);
    return r;
}

/* sem run's acquire: a.take permits of a.permits, within the wait. */
static int acquire_sem(rlk_client *cl, const char *name, const lock_args *a, int64_t margin,
                       char **cmd, rlk_sem **s)
{
    if (!RLK_CLI_SEM) return RLK_ERR_INVALID;
    rlk_sem_options so;
    rlk_sem_options_init(&so);
    char line[RLK_HOLDER_CMD_MAX + 1];
    holder_line(line, cmd);
    so.holder_cmd = line;
    so.permits = a->permits;
    so.k = a->take;
    so.ttl_ms = a->ttl_ms;
    so.wait_ms = a->wait_ms;
    so.watchdog = 1;
    so.on_lost = on_lost_sem;
    so.lost_margin_ms = margin;
    so.layout = a->layout;
    so.lock_timeout_ms = a->lock_timeout_ms;
    if (a->wait_ms != 0) cli_verbose("taking %" PRId64 " of %" PRId64 " permits of '%s' within the wait",
                                     a->take, a->permits, name);
    int r = rlk_sem_acquire(cl, name, &so, s);
    if (r == RLK_OK)
        cli_verbose("took %" PRId64 " of %" PRId64 " permits of '%s' with fence %" PRIu64
                    ", ttl %" PRId64 " ms", a->take, a->permits, name, rlk_sem_fence(*s), a->ttl_ms);
    return r;
}

static void set_env_num(const char *k, uint64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%" PRIu64, v);
    setenv(k, b, 1);
}

static int exit_code_of(int wstatus)
{
    if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
    return CLI_EX_SOFTWARE;
}

/* Some process of the group is still there (a zombie of ours aside, once
 * it is reaped). */
static int group_alive(pid_t pgid)
{
    return kill(-pgid, 0) == 0 || errno == EPERM;
}

/* When resplock holds the terminal's foreground, the job's group gets it,
 * as a shell gives it to a job: the keys that send signals then reach the
 * job's group once, and the job can read the terminal.  Returns the
 * terminal to give back, or -1. */
static int take_terminal(pid_t pgid)
{
    int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (tcgetpgrp(fd) != getpgrp() || tcsetpgrp(fd, pgid) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void give_back_terminal(int fd)
{
    if (fd < 0) return;
    /* From the background, tcsetpgrp raises SIGTTOU unless it is blocked. */
    sigset_t s, old;
    sigemptyset(&s);
    sigaddset(&s, SIGTTOU);
    sigprocmask(SIG_BLOCK, &s, &old);
    tcsetpgrp(fd, getpgrp());
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(fd);
}

/* The child: in its own process group, it waits for resplock's "go"
 * (the supervisor knows the group by then), and gives up without running
 * COMMAND if resplock died first. */
static void run_child(char **cmd, int go, const sigset_t *mask, const struct sigaction *pipe_act)
{
    setpgid(0, 0);
    sigaction(SIGPIPE, pipe_act, NULL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    char c;
    ssize_t n;
    do n = read(go, &c, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1) _exit(CLI_EX_SOFTWARE);
    execvp(cmd[0], cmd);
    int e = errno;
    cli_err("cannot run '%s': %s", cmd[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
}

/* run, or with kind 1 sem run, with kind 2 rw run: hold NAME while
 * COMMAND runs. */
static int run_as(cli_opts *o, int argc, char **argv, int kind)
{
    int sem = kind == 1, rw = kind == 2;
    lock_args a;
    init_args(&a);
    a.sem = sem;
    a.rw = rw;
    const char *pos[1];
    char **cmd;
    int r = parse_args(o, &a, argc, argv, pos, 1, &cmd);
    if (r > 0) return r;
    if (r == 0 && a.shell && cmd)
        return cli_usage_error("run takes a COMMAND or -c STRING, not both");
    /* As flock -c: the string is for the shell. */
    static char *shell_cmd[4] = {"/bin/sh", "-c", NULL, NULL};
    if (r == 0 && a.shell) {
        shell_cmd[2] = (char *)a.shell;
        cmd = shell_cmd;
    }
    if (r < 0 || !cmd)
        return cli_usage_error(sem  ? "sem run needs a semaphore NAME, -p PERMITS and a COMMAND"
                               : rw ? "rw run needs a NAME, --read or --write, and a COMMAND"
                                    : "run needs a lock NAME and a COMMAND");
    if (a.json) return cli_usage_error("--json is for status and list");
    if (sem && !a.permits) return cli_usage_error("sem run needs -p PERMITS, the semaphore's size");
    if (sem && a.take > a.permits)
        return cli_usage_error("-k %" PRId64 " is more than the %" PRId64 " permits", a.take,
                               a.permits);
    if (sem && (a.replicas || a.replicas_aof || o->redlock))
        return cli_usage_error("sem run takes no --replicas, --replicas-aof or --redlock");
    if (sem && a.rw_mode) return cli_usage_error("sem run takes no --read or --write");
    if (rw && !a.rw_mode) return cli_usage_error("rw run needs --read or --write");
    if (rw && (a.replicas || a.replicas_aof || o->redlock || a.fair))
        return cli_usage_error("rw run takes no --replicas, --replicas-aof, --redlock or --fair");
    if (!a.take) a.take = 1;
    /* redis-semaphore's layout: a permit's TTL is its lockTimeout
     * (--lock-timeout, else the TTL). */
    if (sem && a.layout == RLK_SEM_LAYOUT_REDIS_SEMAPHORE && a.lock_timeout_ms > 0) {
        if (a.ttl_ms != UNSET && a.ttl_ms != a.lock_timeout_ms)
            return cli_usage_error("--layout redis-semaphore: the TTL is --lock-timeout; give "
                                   "one of --ttl and --lock-timeout");
        a.ttl_ms = a.lock_timeout_ms;
    }
    if ((r = fill_defaults(o, &a, 1)) != 0) return r;
    if (sem && a.layout == RLK_SEM_LAYOUT_REDIS_SEMAPHORE) {
        a.lock_timeout_ms = a.ttl_ms;
        if (a.hold_min_ms > a.ttl_ms)
            return cli_usage_error("--layout redis-semaphore keeps a permit at most its "
                                   "--lock-timeout: --hold-min must not be longer");
    }

    /* Between the first failed renewal and the end of the validity,
     * SIGTERM, the grace and a safety margin must fit (the library's
     * client has the default timing: see lock_client). */
    int64_t safety = a.ttl_ms / 20 < 100 ? 100 : a.ttl_ms / 20;
    int64_t room = rlk_plan_valid_ms(NULL, a.ttl_ms) - rlk_plan_renew_period_ms(NULL, a.ttl_ms) -
                   safety;
    char msg[256];
    if (room <= 0) {
        snprintf(msg, sizeof msg, "--ttl %" PRId64 "ms is too short for run: the lock could run "
                 "out before COMMAND is stopped", a.ttl_ms);
        return misfit(o, &a, msg);
    }
    if (a.kill_after_ms < 0) {
        a.kill_after_ms = DEFAULT_KILL_AFTER_MS;
        if (a.kill_after_ms > room / 2) a.kill_after_ms = room / 2 > 0 ? room / 2 : 0;
    } else if (a.kill_after_ms >= room) {
        snprintf(msg, sizeof msg, "--kill-after %" PRId64 "ms does not fit in --ttl %" PRId64
                 "ms: it must be below %" PRId64 "ms (two thirds of the TTL less margins)",
                 a.kill_after_ms, a.ttl_ms, room > 0 ? room : 0);
        return misfit(o, &a, msg);
    }

    /* The settings before the supervisor: a configuration error stops
     * here, and they allocate nothing. */
    if ((r = cli_resolve(o)) != 0) return r;
    const char *name = cli_key(o, pos[0]);
    if (!name) return cli_usage_error("--prefix and NAME are too long together");

    /* The supervisor first, while resplock has allocated nothing: the
     * forked copy holds no heap of ours (and no socket). */
    cli_supervisor sup;
    if (cli_supervisor_start(&sup, a.kill_after_ms) != 0) {
        cli_err("cannot start the supervisor: %s", strerror(errno));
        return CLI_EX_SOFTWARE;
    }
    /* A supervisor gone makes writes to its pipe fail rather than kill
     * resplock (to its end: the last write is "done"); the child gets
     * back the disposition we were given. */
    struct sigaction ign, pipe_act;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &pipe_act);

    int status;
    rlk_client *cl = lock_client(o, NULL, a.wait_ms, &status);
    if (!cl) {
        cli_supervisor_finish(&sup);
        return status;
    }
    holding h = {NULL, NULL, NULL};
    const char *what = sem ? "permits of" : rw ? "read-write lock" : "lock";
    /* Tick mode (the loop below renews): the library refuses a watchdog
     * lock that nothing renews.  Without a lock or a connection yet, the
     * tick does no I/O. */
    rlk_client_tick(cl, NULL);
    /* The library reports the loss, and bounds each renewal attempt, in
     * time for SIGTERM, the grace and the margin: a renewal stuck on a
     * frozen server cannot delay the SIGKILL past the lock's validity. */
    r = sem  ? acquire_sem(cl, name, &a, a.kill_after_ms + safety, cmd, &h.s)
        : rw ? acquire_rw(cl, name, &a, a.kill_after_ms + safety, cmd, &h.w)
             : acquire(o, cl, name, &a, 1, on_lost, a.kill_after_ms + safety, cmd, &h.l);
    if (r != RLK_OK) {
        int code = lock_failure(o, cl, r, &a);
        rlk_client_free(cl);
        cli_supervisor_finish(&sup);
        return code;
    }
    int64_t acquired_at = cli_mono_ms();

    /* Signals arrive through a signalfd: no handler races, and the child
     * gets the mask we had before.  SIGTTOU is only blocked: resplock may
     * write to a terminal whose foreground the job has. */
    sigset_t mask, old;
    sigemptyset(&mask);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    sigaddset(&mask, SIGCHLD);
    sigset_t blocked = mask;
    sigaddset(&blocked, SIGTTOU);
    sigprocmask(SIG_BLOCK, &blocked, &old);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    int go[2] = {-1, -1};
    if (sfd < 0 || pipe2(go, O_CLOEXEC) != 0) {
        cli_err("%s: %s", sfd < 0 ? "signalfd" : "pipe", strerror(errno));
        if (sfd >= 0) close(sfd);
        held_release(&h);
        rlk_client_free(cl);
        cli_supervisor_finish(&sup);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return CLI_EX_SOFTWARE;
    }
    /* Members of the job's group that lose their parent become ours, so
     * that we can reap them and see the group end. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);

    setenv("RESPLOCK_NAME", name, 1); /* the key, --prefix included */
    setenv("RESPLOCK_TOKEN", held_token(&h), 1);
    set_env_num("RESPLOCK_FENCE", held_fence(&h));
    set_env_num("RESPLOCK_TTL_MS", (uint64_t)a.ttl_ms);
    if (sem) set_env_num("RESPLOCK_PERMITS", (uint64_t)a.take);
    if (rw) setenv("RESPLOCK_MODE", a.rw_mode == RLK_RW_WRITE ? "write" : "read", 1);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(go[1]);
        close(sup.fd);
        run_child(cmd, go[0], &old, &pipe_act);
    }
    close(go[0]);
    /* The SIGTERM of the supervisor is due this long before the lock's
     * validity ends: half the safety margin after resplock's own. */
    int64_t lead = a.kill_after_ms + safety - safety / 2;
    int tty = -1;
    if (pid > 0) {
        setpgid(pid, pid); /* the child does it too: whoever runs first */
        tty = take_terminal(pid);
    }
    int started = pid > 0 && cli_supervisor_job(&sup, pid) == 0 &&
                  cli_supervisor_deadline(&sup, cli_mono_ms() + held_left(&h) - lead) == 0;
    /* resplock may have been stopped or starved since the acquisition:
     * the job starts only while the lock has time enough left for it to
     * be stopped in time.  (A pause after this check is the supervisor's:
     * it has the deadline before the job has "go", and a job stopped
     * before "go" dies waiting for it.) */
    if (started && held_left(&h) <= a.kill_after_ms + safety) {
        cli_err("%s '%s' ran out before '%s' could start", what, name, cmd[0]);
        close(go[1]); /* the child sees the end and exits */
        waitpid(pid, NULL, 0);
        give_back_terminal(tty);
        close(sfd);
        held_release(&h); /* frees it early if it is still ours */
        rlk_client_free(cl);
        cli_supervisor_finish(&sup);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return CLI_EX_TEMPFAIL;
    }
    if (!started || write(go[1], "g", 1) != 1) {
        cli_err("%s: %s", pid < 0 ? "fork" : "cannot start the supervisor", strerror(errno));
        close(go[1]); /* the child sees the end and exits */
        if (pid > 0) waitpid(pid, NULL, 0);
        give_back_terminal(tty);
        close(sfd);
        held_release(&h);
        rlk_client_free(cl);
        cli_supervisor_finish(&sup);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return CLI_EX_SOFTWARE;
    }
    close(go[1]);
    cli_verbose("started '%s' (pid %d, process group %d)", cmd[0], (int)pid, (int)pid);

    int wstatus = 0, child_done = 0, lost = 0, timed_out = 0;
    int64_t stop_at = -1, kill_at = -1, killed_at = -1, next_tick = 0;
    int64_t max_at = a.max_time_ms > 0 ? cli_mono_ms() + a.max_time_ms : -1;
    for (;;) {
        int64_t now = cli_mono_ms();
        if (!lost && now >= next_tick) {
            int64_t next = -1, before = held_left(&h);
            if (rlk_client_tick(cl, &next) != RLK_OK)
                cli_verbose("renewal failed: %s; retrying", rlk_client_errmsg(cl));
            int64_t left = held_left(&h);
            if (!lost_flag && left > before + 1) {
                cli_verbose("renewed, valid for %" PRId64 " ms", left);
                cli_supervisor_deadline(&sup, cli_mono_ms() + left - lead);
            }
            now = cli_mono_ms();
            next_tick = next < 0 ? now + 1000 : now + next;
        }
        /* Lost: reported by the watchdog, or not renewed in time for the
         * job to be stopped before the validity ends. */
        if (!lost && (lost_flag || held_left(&h) <= a.kill_after_ms + safety)) {
            lost = 1;
            cli_err("%s '%s' lost; stopping '%s' (process group %d)", what, name, cmd[0],
                    (int)pid);
        }
        if (!lost && sup.reaped) {
            lost = 1;
            if (!(WIFEXITED(sup.wstatus) && WEXITSTATUS(sup.wstatus) == CLI_SUPERVISOR_ACTED))
                cli_err("the supervisor ended unexpectedly; stopping '%s' (process group %d)",
                        cmd[0], (int)pid);
        }
        if (!lost && !timed_out && !child_done && max_at >= 0 && cli_mono_ms() >= max_at) {
            timed_out = 1;
            cli_err("'%s' ran past --max-time; stopping it (process group %d)", cmd[0], (int)pid);
        }
        /* What is left of the group once the child is done would run
         * on without the lock: it is stopped before the release. */
        if (stop_at < 0 && (lost || timed_out || (child_done && group_alive(pid)))) {
            if (!lost && !timed_out)
                cli_verbose("process group %d still has processes: SIGTERM", (int)pid);
            kill(-pid, SIGTERM);
            stop_at = cli_mono_ms();
            kill_at = stop_at + a.kill_after_ms;
        }
        if (kill_at >= 0 && cli_mono_ms() >= kill_at) {
            cli_verbose("process group %d still running after --kill-after: SIGKILL", (int)pid);
            kill(-pid, SIGKILL);
            kill_at = -1;
            killed_at = cli_mono_ms();
        }
        if (child_done && !group_alive(pid)) break;
        if (child_done && killed_at >= 0 && cli_mono_ms() - killed_at > 1000) {
            cli_err("process group %d is still there after SIGKILL", (int)pid);
            break;
        }
        now = cli_mono_ms();
        int64_t wake = lost ? now + 1000 : next_tick;
        if (kill_at >= 0 && kill_at < wake) wake = kill_at;
        int64_t lost_deadline = now + held_left(&h) - a.kill_after_ms - safety;
        if (!lost && lost_deadline < wake) wake = lost_deadline;
        if (!timed_out && !child_done && max_at >= 0 && max_at < wake) wake = max_at;
        /* Processes that are not our children end without SIGCHLD. */
        if (child_done && now + 10 < wake) wake = now + 10;
        int64_t timeout = wake - now;
        if (timeout < 0) timeout = 0;
        /* The client's fd too: a tick sends a renewal round without
         * waiting, and reads its replies at the tick after they came. */
        struct pollfd p[2] = {{sfd, POLLIN, 0}, {lost ? -1 : rlk_client_fd(cl), POLLIN, 0}};
        int pr = poll(p, 2, (int)(timeout > 60000 ? 60000 : timeout));
        if (pr < 0 && errno != EINTR) break;
        if (pr > 0 && p[1].revents) next_tick = 0;
        if (pr > 0 && p[0].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo != SIGCHLD) {
                    cli_verbose("forwarding signal %u to process group %d", si.ssi_signo, (int)pid);
                    kill(-pid, (int)si.ssi_signo);
                }
                struct pollfd q = {sfd, POLLIN, 0};
                if (poll(&q, 1, 0) <= 0) break;
            }
        }
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
            if (w == pid) {
                wstatus = st;
                child_done = 1;
            } else {
                cli_supervisor_reaped(&sup, w, st);
            }
        }
    }
    give_back_terminal(tty);
    close(sfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int code = exit_code_of(wstatus);
    cli_verbose("'%s' exited with %d", cmd[0], code);
    /* The job is over: nothing left to supervise while we release (a
     * release slow to answer is no reason to stop an empty group). */
    int sr = cli_supervisor_finish(&sup);
    if (sr == CLI_SUPERVISOR_ACTED) lost = 1;
    else if (sr != 0 && !lost) cli_err("the supervisor ended with status %d", sr);

    if (lost) {
        held_forget(&h);
        rlk_client_free(cl);
        return CLI_EX_TEMPFAIL;
    }
    int64_t held = cli_mono_ms() - acquired_at;
    if (a.hold_min_ms > held) {
        /* Keep the lock for the rest of --hold-min, then let it expire:
         * a node whose clock is a little behind must not run the job
         * again in the same window. */
        int64_t left = a.hold_min_ms - held;
        r = held_extend(&h, left);
        if (r == RLK_OK) cli_verbose("holding '%s' for %" PRId64 " ms more (--hold-min)", name, left);
        else cli_err("--hold-min: %s", rlk_client_errmsg(cl));
        held_forget(&h);
    } else {
        /* The key's expiry, should the release fail: the TTL from the
         * last renewal's sending (the validity left and the drift
         * allowance add up to it), short by that renewal's round trip. */
        int64_t expiry = cli_mono_ms() + held_left(&h) +
                         rlk_plan_drift_ms(NULL, held_ttl(&h));
        r = held_release(&h);
        if (r == RLK_OK) {
            cli_verbose("released %s'%s'", sem ? "the permits of " : rw ? "the hold of " : "", name);
        } else if (r == RLK_LOCK_NOT_HELD || r == RLK_LOCK_NOT_OWNER || r == RLK_LOCK_LOST) {
            cli_err("%s", rlk_client_errmsg(cl));
        } else {
            /* The job ran holding the lock to its end: its exit code
             * stands (as flock's would), and the name is taken until
             * the key expires, as with --hold-min.  "May": a frozen
             * node that wakes up still runs the release it was sent. */
            int64_t left = expiry - cli_mono_ms();
            if (left < 0) left = 0;
            cli_err("%s; '%s' may stay locked until its TTL runs out, in about %" PRId64
                    ".%03" PRId64 " s", rlk_client_errmsg(cl), name, left / 1000, left % 1000);
        }
    }
    rlk_client_free(cl);
    /* Not held to the end (it expired or was taken while resplock could
     * not renew it, paused for example; lost: its validity was over
     * before the release): the run was not exclusive. */
    if (r == RLK_LOCK_NOT_HELD || r == RLK_LOCK_NOT_OWNER || r == RLK_LOCK_LOST)
        code = CLI_EX_TEMPFAIL;
    else if (timed_out) code = CLI_EX_MAX_TIME;
    return code;
}

int cmd_run(cli_opts *o, int argc, char **argv) { return run_as(o, argc, argv, 0); }
int cli_sem_run(cli_opts *o, int argc, char **argv) { return run_as(o, argc, argv, 1); }

int cmd_rw(cli_opts *o, int argc, char **argv)
{
    if (!RLK_CLI_RW) {
        cli_err("rw is not in this resplock (the static command leaves the read-write lock out)");
        return CLI_EX_CONFIG;
    }
    if (argc >= 2 && strcmp(argv[1], "run") == 0) return run_as(o, argc - 1, argv + 1, 2);
    return cli_usage_error("usage: resplock rw run NAME --read|--write [options] [--] COMMAND");
}

/* ------------------------------------------------------------------ */
/* acquire, release, extend, status                                     */

/* The common start of acquire, release, extend and status: the words and
 * options (and extend's DURATION, the last word, when duration is not
 * NULL), then a connected client.  0 with *cl set, or an exit code. */
static int lock_args_of(cli_opts *o, lock_args *a, int argc, char **argv, const char **pos,
                        int npos, const char *usage, int64_t *duration)
{
    char **extra;
    init_args(a);
    int r = parse_args(o, a, argc, argv, pos, npos, &extra);
    if (r > 0) return r;
    if (r < 0 || extra) return cli_usage_error("usage: resplock %s", usage);
    if (a->shell || a->max_time_ms != UNSET) return cli_usage_error("-c and --max-time are for run");
    /* A usage error, even when the server cannot be reached. */
    if (duration && duration_opt("DURATION", pos[npos - 1], duration, 0) < 0) return CLI_EX_USAGE;
    if ((r = fill_defaults(o, a, 0)) != 0) return r;
    if ((r = cli_resolve(o)) != 0) return r;
    pos[0] = cli_key(o, pos[0]);
    if (!pos[0]) return cli_usage_error("--prefix and NAME are too long together");
    return 0;
}

/* The arguments as lock_args_of reads them, then the client. */
static int begin(cli_opts *o, lock_args *a, int argc, char **argv, const char **pos, int npos,
                 const char *usage, int64_t *duration, rlk_client **cl)
{
    int code = lock_args_of(o, a, argc, argv, pos, npos, usage, duration);
    if (code) return code;
    if (a->json) return cli_usage_error("--json is for status and list");
    *cl = lock_client(o, NULL, a->wait_ms, &code);
    return *cl ? 0 : code;
}

int cmd_acquire(cli_opts *o, int argc, char **argv)
{
    lock_args a;
    const char *pos[1];
    rlk_client *cl;
    int r = begin(o, &a, argc, argv, pos, 1, "acquire NAME [options]", NULL, &cl);
    if (r) return r;
    rlk_lock *l;
    r = acquire(o, cl, pos[0], &a, 0, NULL, 0, NULL, &l);
    if (r != RLK_OK) {
        int code = lock_failure(o, cl, r, &a);
        rlk_client_free(cl);
        return code;
    }
    if (rlk_lock_is_lost(l)) {
        cli_err("lock '%s' was lost right after it was handed over", pos[0]);
        rlk_lock_forget(l);
        rlk_client_free(cl);
        return a.conflict_code;
    }
    printf("%s %" PRIu64 "\n", rlk_lock_token(l), rlk_lock_fence(l));
    if (fflush(stdout) != 0 || ferror(stdout)) {
        /* Nobody learns the token: do not leave the lock held.  (musl
         * reports the failed write at printf, leaving fflush nothing.) */
        cli_err("cannot write the token: %s; releasing '%s'", strerror(errno), pos[0]);
        rlk_lock_release(l);
        rlk_client_free(cl);
        return CLI_EX_SOFTWARE;
    }
    rlk_lock_forget(l);
    rlk_client_free(cl);
    return 0;
}

int cmd_release(cli_opts *o, int argc, char **argv)
{
    lock_args a;
    const char *pos[2];
    rlk_client *cl;
    int r = begin(o, &a, argc, argv, pos, 2, "release NAME TOKEN", NULL, &cl);
    if (r) return r;
    r = rlk_release_token(cl, pos[0], pos[1]);
    int code;
    if (r == RLK_LOCK_NOT_HELD) {
        /* No key: the release cannot tell which. */
        cli_err("release: lock '%s' is not held: released already, expired, or never taken", pos[0]);
        code = a.conflict_code;
    } else {
        code = r == RLK_OK ? 0 : lock_failure(o, cl, r, &a);
    }
    if (r == RLK_OK) cli_verbose("released '%s'", pos[0]);
    rlk_client_free(cl);
    return code;
}

int cmd_extend(cli_opts *o, int argc, char **argv)
{
    lock_args a;
    const char *pos[3];
    rlk_client *cl;
    int64_t ms, after = 0;
    int r = begin(o, &a, argc, argv, pos, 3, "extend NAME TOKEN DURATION [--add]", &ms, &cl);
    if (r) return r;
    r = rlk_extend_token(cl, pos[0], pos[1], ms, a.add ? RLK_EXTEND_ADD : RLK_EXTEND_SET, &after);
    int code = r == RLK_OK ? 0 : lock_failure(o, cl, r, &a);
    if (r == RLK_OK) cli_verbose("'%s' now expires in %" PRId64 " ms", pos[0], after);
    rlk_client_free(cl);
    return code;
}

static int is_bulk(const rlk_resp_value *v, const char *s)
{
    int str = v->type == RLK_RESP_BULK || v->type == RLK_RESP_SIMPLE;
    return str && (!s || (v->len == strlen(s) && memcmp(v->str, s, v->len) == 0));
}

static int all_of(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i])) return 0;
    return n > 0;
}

/* "UUID:thread": the field of Redisson's RLock, resplock's reentrant
 * locks among them; "ID:UUID:thread" from a resplock client configured
 * with a client_id. */
static int is_rlock_field(const rlk_resp_value *v)
{
    static const char hex[] = "0123456789abcdefABCDEF";
    if (!is_bulk(v, NULL)) return 0;
    const char *colon = memrchr(v->str, ':', v->len);
    if (!colon || colon - v->str < 36) return 0;
    const char *s = colon - 36;
    if (s > v->str && s[-1] != ':') return 0;
    for (int i = 0; i < 36; i++)
        if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-' : !strchr(hex, s[i]) || !s[i])
            return 0;
    return all_of(colon + 1, v->len - (size_t)(colon + 1 - v->str), "0123456789");
}

static const char *const not_lock_why[] = {"", "", "that never expires",
                                           "whose values are not hold counts"};

/* The kind of holder, from the key's type and value: the status alone
 * tells a string from a hash. */
static void holder_kind(rlk_client *cl, const char *name, const rlk_lock_status *st, char *out,
                        size_t n)
{
    rlk_conn *c = rlk_client_conn(cl);
    if (!c) return;
    rlk_resp_value *v;
    const char *type[] = {"TYPE", name};
    snprintf(out, n, "unknown (the server did not say)");
    if (rlk_conn_command(c, &v, 2, type, NULL) != RLK_OK || !is_bulk(v, NULL)) return;
    if (st->not_a_lock) {
        const char *why = not_lock_why[st->not_a_lock];
        snprintf(out, n, "not a lock: a %.*s%s%s", (int)(v->len > 32 ? 32 : v->len), v->str,
                 *why ? " " : "", why);
    } else if (is_bulk(v, "string")) {
        const char *get[] = {"GETRANGE", name, "0", "39"};
        if (rlk_conn_command(c, &v, 4, get, NULL) != RLK_OK || !is_bulk(v, NULL)) return;
        /* "rlk:" and 32 hex digits, then ';' and the holder's facts (or
         * nothing: an older resplock), "+w" when waiters marked it. */
        if (v->len >= 36 && memcmp(v->str, "rlk:", 4) == 0 && all_of(v->str + 4, 32, "0123456789abcdef"))
            snprintf(out, n, "%s: resplock's layout (an rlk: token%s)",
                     st->kind == RLK_LOCK_FAIR ? "fair" : "simple",
                     v->len > 36 && v->str[36] == '+' ? ", marked: waiters in line" : "");
        else if (v->len == 32 && all_of(v->str, v->len, "0123456789abcdef"))
            snprintf(out, n, "simple: a 32-hex-digit token (redis-py, node-redlock)");
        else
            snprintf(out, n, "simple: another client's string value");
    } else if (is_bulk(v, "hash")) {
        const char *keys[] = {"HKEYS", name};
        if (rlk_conn_command(c, &v, 2, keys, NULL) != RLK_OK ||
            (v->type != RLK_RESP_ARRAY && v->type != RLK_RESP_SET))
            return;
        int rlock = 0, other = 0;
        for (const rlk_resp_value *f = v->child; f; f = f->next) {
            if (is_bulk(f, "rlk:holder")) continue; /* resplock's holder facts */
            if (is_rlock_field(f)) rlock++;
            else other++;
        }
        if (rlock && !other)
            snprintf(out, n, "reentrant: Redisson's RLock layout ([ID:]UUID:thread fields), "
                             "from resplock or Redisson");
        else
            snprintf(out, n, "hash: not a lock layout resplock knows");
    }
}

/* The length of the valid UTF-8 sequence at p (at most n bytes), its
 * code point in *cp; or 0: a stray or overlong byte, a surrogate, beyond
 * U+10FFFF. */
static size_t utf8_at(const unsigned char *p, size_t n, uint32_t *cp)
{
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    size_t len = p[0] < 0x80 ? 1 : p[0] < 0xc0 ? 0 : p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3
               : p[0] < 0xf8 ? 4 : 0;
    if (!len || len > n) return 0;
    uint32_t c = p[0] & (0xffu >> (len + (len > 1)));
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        c = c << 6 | (p[i] & 0x3f);
    }
    *cp = c;
    return c < least[len] || (c >= 0xd800 && c < 0xe000) || c > 0x10ffff ? 0 : len;
}

static void put_byte(const char *pre, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    fputs(pre, stdout);
    putchar(hex[c >> 4]);
    putchar(hex[c & 15]);
}

/* s on stdout, for one line of a terminal (json 0) or in a JSON string
 * (json 1, its quotes the caller's).  What a job's argv or a key's name
 * holds may be anything, and a newline or an escape sequence there would
 * forge a line or drive the operator's terminal: control characters
 * (C0, DEL, C1), a backslash and bytes that are not UTF-8 are written as
 * C's escapes \n, \t, \\ and \xNN, as systemd's tools show them (visible,
 * and the bytes can be told back).  JSON is kept valid UTF-8: a byte that
 * is not becomes U+FFFD, and 1 is returned. */
static int put_str(const char *s, int json)
{
    int lossy = 0;
    const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
    while (p < end) {
        uint32_t cp = 0;
        size_t n = utf8_at(p, (size_t)(end - p), &cp);
        if (n && cp >= 0x20 && (cp < 0x7f || cp >= 0xa0) && cp != '\\' && (!json || cp != '"')) {
            fwrite(p, 1, n, stdout);
            p += n;
        } else if (json) {
            if (!n) fputs("\\ufffd", stdout), lossy = 1;
            else put_byte("\\u00", (unsigned char)cp);
            p += n ? n : 1;
        } else {
            for (size_t i = 0; i < (n ? n : 1); i++, p++) {
                const char *e = *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : *p == '\\' ? "\\\\" : NULL;
                if (e) fputs(e, stdout);
                else put_byte("\\x", *p);
            }
        }
    }
    return lossy;
}

static void put_text(const char *s) { put_str(s, 0); }

static void put_line(const char *label, const char *s)
{
    fputs(label, stdout);
    put_text(s);
    putchar('\n');
}

/* JSON's string: s in quotes; 1 when a byte was not UTF-8. */
static int json_str(const char *s)
{
    putchar('"');
    int lossy = put_str(s, 1);
    putchar('"');
    return lossy;
}

/* "KEY":"S", and when S is not UTF-8 ,"KEY_raw":"..." too: its exact
 * bytes, those outside printable ASCII (and '%', '"', '\') as %XX, so
 * that a reader can tell what each U+FFFD stood for. */
static void json_field(const char *key, const char *s)
{
    printf("\"%s\":", key);
    if (!json_str(s)) return;
    printf(",\"%s_raw\":\"", key);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p > 0x20 && *p < 0x7f && !strchr("%\"\\", *p)) putchar(*p);
        else put_byte("%", *p);
    putchar('"');
}

/* The holder's start as ISO 8601 UTC into iso. */
static void facts_iso(const rlk_lock_status *st, char *iso, size_t isn)
{
    cli_date u;
    int64_t ms = st->since_ms % 1000;
    cli_utc(st->since_ms / 1000 - (ms < 0), &u);
    snprintf(iso, isn, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d.%03dZ", u.year, u.mon, u.mday,
             u.hour, u.min, u.sec, (int)(ms < 0 ? ms + 1000 : ms));
}

/* The holder's facts on stdout: "host H, pid P, since ISO (AGE ago)",
 * and with cmd ", command C" when one was recorded. */
static void put_facts(const rlk_lock_status *st, int cmd)
{
    struct timespec now;
    char iso[80];
    clock_gettime(CLOCK_REALTIME, &now);
    facts_iso(st, iso, sizeof iso);
    int64_t age = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - st->since_ms;
    fputs("host ", stdout);
    put_text(st->host);
    printf(", pid %" PRId64 ", since %s (%" PRId64 ".%01d s ago)", st->pid, iso, age / 1000,
           (int)(age < 0 ? 0 : age % 1000 / 100));
    if (cmd && st->cmd[0]) fputs(", command ", stdout), put_text(st->cmd);
}

/* A lock's status on stdout, as text or one JSON object. */
static void print_status(const char *name, const char *where, const char *kind,
                         const rlk_lock_status *st, int json)
{
    char iso[80];
    if (json) {
        putchar('{');
        json_field("name", name);
        if (where[0]) printf(",\"node\":"), json_str(where);
        if (st->servers)
            printf(",\"servers\":%d,\"answered\":%d,\"held_on\":%d", st->servers, st->answered,
                   st->held_on);
        printf(",\"held\":%s", st->held ? "true" : "false");
        if (st->held) {
            printf(",\"kind\":"), json_str(kind);
            printf(",\"lock\":%s,\"ttl_ms\":%" PRId64, st->not_a_lock ? "false" : "true", st->ttl_ms);
            if (st->kind == RLK_LOCK_REENTRANT) printf(",\"holds\":%" PRId64, st->holds);
        }
        if (st->has_facts) {
            facts_iso(st, iso, sizeof iso);
            printf(",\"holder\":{"), json_field("host", st->host);
            printf(",\"pid\":%" PRId64 ",\"since_ms\":%" PRId64 ",\"since\":\"%s\",", st->pid,
                   st->since_ms, iso);
            json_field("cmd", st->cmd);
            putchar('}');
        } else if (st->held) {
            printf(",\"holder\":null");
        }
        printf(",\"fence\":null,\"waiting\":%" PRId64 "}\n", st->waiters);
        return;
    }
    put_line("name:  ", name);
    if (where[0]) put_line("node:  ", where);
    if (st->servers)
        printf("servers: held on %d of %d (%d answered, a majority of %d needed)\n", st->held_on,
               st->servers, st->answered, st->servers / 2 + 1);
    printf("held:  %s\n", st->held ? "yes" : "no");
    if (st->held) {
        put_line("kind:  ", kind);
        if (st->ttl_ms >= 0) printf("ttl:   %" PRId64 " ms\n", st->ttl_ms);
        else printf("ttl:   none (the key never expires)\n");
        if (st->kind == RLK_LOCK_REENTRANT) printf("holds: %" PRId64 "\n", st->holds);
        if (st->has_facts) {
            fputs("holder: ", stdout), put_facts(st, 0), putchar('\n');
            if (st->cmd[0]) put_line("command: ", st->cmd);
        } else if (!st->not_a_lock) {
            printf("holder: unknown (no facts recorded: another client's lock, an older "
                   "resplock, or a reentrant lock handed over, not confirmed yet)\n");
        }
        if (!st->not_a_lock) printf("fence: not stored (the holder alone was told it)\n");
    }
    printf("waiting: %" PRId64 "\n", st->waiters);
}

/* The server of key: on a Redis Cluster the node serving its slot, named
 * in where as "HOST:PORT (slot N)"; behind Sentinel the primary, named
 * so; elsewhere the one given (where "").
 * Its URL, or NULL with an exit code in *code after a message. */
static const char *locate(cli_opts *o, const char *key, char *where, size_t n, int *code)
{
    const char *url = o->final_url;
    where[0] = '\0';
    rlk_conn *c = cli_connect(o, code);
    if (!c) return NULL;
    if (cli_is_cluster(c)) {
        rlk__slots t;
        const char *source;
        char err[400], addr[RLK__SLOTS_HOST_MAX + 16];
        int tls = rlk_conn_get_info(c)->tls_version != NULL;
        rlk__slots_init(&t);
        int r = cli_cluster_read(o, c, &t, &source, err, sizeof err);
        unsigned slot = rlk__keyslot(key, strlen(key));
        const rlk__node *at = r == RLK_OK ? rlk__slots_owner(&t, slot) : NULL;
        if (at && at->host[0] && cli_node_port(at, tls)) {
            cli_node_addr(at, tls, addr, sizeof addr);
            snprintf(where, n, "%s (slot %u)", addr, slot);
            url = cli_node_url(o, at->host, cli_node_port(at, tls));
            if (!url) *code = cli_usage_error("the URL of node %s is too long", addr);
        } else if (r == RLK_OK) {
            /* Asked anyway: the server says why (CLUSTERDOWN). */
            snprintf(where, n, "none (slot %u is served by no node known)", slot);
        } else if (r == RLK_ERR_PROTO) {
            /* The name may be served there; if not, its MOVED says so. */
            cli_err("warning: %s; asking %s", err, o->server);
        } else {
            cli_err("%s", err);
            *code = cli_exit_for(r);
            url = NULL;
        }
        rlk__slots_free(&t);
    } else if (rlk__url_is_sentinel(url)) {
        snprintf(where, n, "%.200s (the primary the sentinels name)", rlk_conn_get_info(c)->peer);
    }
    rlk_conn_free(c);
    return url;
}

/* The status of pos[0] (where the lock lives on a cluster), and its
 * client; 0, or an exit code after a message. */
static int status_of(cli_opts *o, lock_args *a, const char *name, char *where, size_t wn,
                     rlk_client **cl, rlk_lock_status *st, char *kind, size_t kn)
{
    int r;
    /* On a cluster the lock is read where it lives; under Redlock on
     * every server. */
    const char *url = o->redlock ? NULL : locate(o, name, where, wn, &r);
    if (!url && !o->redlock) return r;
    if (o->redlock) where[0] = '\0';
    *cl = lock_client(o, url, a->wait_ms, &r);
    if (!*cl) return r;
    r = rlk_lock_get_status(*cl, name, st);
    if (r != RLK_OK) {
        int code = lock_failure(o, *cl, r, a);
        rlk_client_free(*cl);
        return code;
    }
    kind[0] = '\0';
    if (st->held) holder_kind(*cl, name, st, kind, kn);
    return 0;
}

/* Under Redlock: each server, whether it has NAME and for how long. */
static void print_servers(cli_opts *o, const char *name)
{
    const char *argv[2] = {"PTTL", name};
    for (int i = 0; i <= o->nseeds; i++) {
        const char *u = i ? o->seeds[i - 1] : o->final_url, *url = u;
        char err[200];
        rlk__url su;
        if (i && rlk__url_parse(&su, u, err, sizeof err) == RLK_OK) {
            const char *nu = su.kind != RLK__URL_UNIX ? cli_node_url(o, su.host, su.port) : NULL;
            url = nu ? nu : u;
        }
        if (i) rlk__url_free(&su);
        const char *at = strstr(u, "@") ? strstr(u, "@") + 1 : strstr(u, "//") ? strstr(u, "//") + 2 : u;
        rlk_conn *c = cli_conn_new(o, url);
        rlk_resp_value *v = NULL;
        int r = c ? rlk_conn_connect(c) : RLK_ERR_NOMEM;
        if (r == RLK_OK) r = rlk_conn_command(c, &v, 2, argv, NULL);
        if (r == RLK_OK && v->type == RLK_RESP_INTEGER && v->integer >= -2)
            printf("  %-21s %s", at, v->integer == -2 ? "free\n" : "held");
        else
            printf("  %-21s %s%.*s\n", at,
                   !c ? "out of memory" : r != RLK_OK ? rlk_conn_errmsg(c) : "an unexpected reply: ",
                   r == RLK_OK && v->str ? (int)(v->len > 200 ? 200 : v->len) : 0,
                   r == RLK_OK && v->str ? v->str : "");
        if (r == RLK_OK && v->type == RLK_RESP_INTEGER && v->integer >= 0)
            printf(", ttl %lld ms\n", (long long)v->integer);
        else if (r == RLK_OK && v->type == RLK_RESP_INTEGER && v->integer == -1)
            printf(", no TTL\n");
        rlk_conn_free(c);
    }
}

static void print_sem(const char *name, const char *where, const rlk_sem_status *st, int json);
static void print_rw(const char *name, const char *where, const rlk_rw_status *st, int json);

int cmd_status(cli_opts *o, int argc, char **argv)
{
    lock_args a;
    const char *pos[1];
    char where[RLK__SLOTS_HOST_MAX + 64], kind[128];
    rlk_client *cl;
    rlk_lock_status st;
    int r = lock_args_of(o, &a, argc, argv, pos, 1, "status NAME [--json]", NULL);
    if (r || (r = status_of(o, &a, pos[0], where, sizeof where, &cl, &st, kind, sizeof kind)))
        return r;
    /* No lock there, but a semaphore of that name: its status. */
    rlk_sem_status ss;
    if (RLK_CLI_SEM && !st.held && !o->redlock &&
        rlk_sem_get_status(cl, pos[0], RLK_SEM_LAYOUT_RESPLOCK, 0, &ss) == RLK_OK) {
        int sem = ss.exists && !ss.not_a_sem;
        if (sem) print_sem(pos[0], where, &ss, a.json);
        r = ss.used > 0 ? 0 : 1;
        rlk_sem_status_free(&ss);
        if (sem) {
            rlk_client_free(cl);
            return r;
        }
    }
    /* Nor a semaphore, but a read-write lock: its status. */
    rlk_rw_status ws;
    if (RLK_CLI_RW && !st.held && !o->redlock && rlk_rw_get_status(cl, pos[0], &ws) == RLK_OK) {
        int rw = ws.exists && !ws.not_a_rw;
        if (rw) print_rw(pos[0], where, &ws, a.json);
        r = ws.nholds > 0 ? 0 : 1;
        rlk_rw_status_free(&ws);
        if (rw) {
            rlk_client_free(cl);
            return r;
        }
    }
    print_status(pos[0], where, kind, &st, a.json);
    rlk_client_free(cl);
    if (o->redlock && !a.json) print_servers(o, pos[0]);
    return st.held ? 0 : 1;
}

/* ------------------------------------------------------------------ */
/* sem: run and status                                                  */

/* A semaphore holder's facts on stdout, as a lock holder's. */
static void put_holder_facts(const rlk_sem_holder *hd)
{
    rlk_lock_status f;
    memset(&f, 0, sizeof f);
    f.pid = hd->pid;
    f.since_ms = hd->since_ms;
    memcpy(f.host, hd->host, sizeof f.host);
    memcpy(f.cmd, hd->cmd, sizeof f.cmd);
    if (hd->has_facts) fputs("; ", stdout), put_facts(&f, 1);
}

static void print_sem(const char *name, const char *where, const rlk_sem_status *st, int json)
{
    char iso[80];
    if (json) {
        putchar('{');
        json_field("name", name);
        if (where[0]) printf(",\"node\":"), json_str(where);
        printf(",\"exists\":%s,\"permits\":%" PRId64 ",\"used\":%" PRId64 ",\"holders\":[",
               st->exists ? "true" : "false", st->permits, st->used);
        for (size_t i = 0; i < st->nholders; i++) {
            const rlk_sem_holder *hd = &st->holder[i];
            printf("%s{", i ? "," : "");
            json_field("token", hd->token);
            printf(",\"permits\":%" PRId64 ",\"ttl_ms\":%" PRId64 ",\"fence\":%" PRIu64,
                   hd->k, hd->ttl_ms, hd->fence);
            if (st->permits == 0) printf(",\"age_ms\":%" PRId64, hd->age_ms);
            printf(",\"holder\":");
            if (!hd->has_facts) {
                printf("null}");
                continue;
            }
            rlk_lock_status f;
            memset(&f, 0, sizeof f);
            f.since_ms = hd->since_ms;
            facts_iso(&f, iso, sizeof iso);
            putchar('{'), json_field("host", hd->host);
            printf(",\"pid\":%" PRId64 ",\"since_ms\":%" PRId64 ",\"since\":\"%s\",", hd->pid,
                   hd->since_ms, iso);
            json_field("cmd", hd->cmd);
            printf("}}");
        }
        printf("],\"fence\":%" PRIu64 ",\"waiting\":%" PRId64 "}\n", st->fence, st->waiters);
        return;
    }
    put_line("name:    ", name);
    if (where[0]) put_line("node:    ", where);
    if (st->permits > 0)
        printf("permits: %" PRId64 " (%" PRId64 " held, %" PRId64 " free)\n", st->permits,
               st->used, st->permits > st->used ? st->permits - st->used : 0);
    else
        printf("permits: %" PRId64 " held (the size is each holder's own)\n", st->used);
    for (size_t i = 0; i < st->nholders; i++) {
        const rlk_sem_holder *hd = &st->holder[i];
        fputs("holder:  ", stdout), put_text(hd->token);
        printf(": %" PRId64 " permit%s, ttl %" PRId64 " ms", hd->k, hd->k == 1 ? "" : "s",
               hd->ttl_ms);
        /* No size kept: redis-semaphore's layout, where a holder's age
         * (since its last acquire or refresh) tells who stopped. */
        if (st->permits == 0) printf(", age %" PRId64 " ms", hd->age_ms);
        if (hd->fence) printf(", fence %" PRIu64, hd->fence);
        put_holder_facts(hd);
        putchar('\n');
    }
    if (st->fence) printf("fence:   %" PRIu64 " (the last given)\n", st->fence);
    printf("waiting: %" PRId64 "\n", st->waiters);
}

/* A read-write lock's hold's facts, as a semaphore holder's. */
static void put_hold_facts(const rlk_rw_hold *hd)
{
    rlk_sem_holder f;
    memset(&f, 0, sizeof f);
    f.has_facts = hd->has_facts;
    f.pid = hd->pid;
    f.since_ms = hd->since_ms;
    memcpy(f.host, hd->host, sizeof f.host);
    memcpy(f.cmd, hd->cmd, sizeof f.cmd);
    put_holder_facts(&f);
}

/* A read-write lock's status (status NAME), as a semaphore's. */
static void print_rw(const char *name, const char *where, const rlk_rw_status *st, int json)
{
    if (json) {
        putchar('{');
        json_field("name", name);
        if (where[0]) printf(",\"node\":"), json_str(where);
        printf(",\"kind\":\"rw\",\"readers\":%" PRId64 ",\"writers\":%" PRId64 ",\"holds\":[",
               st->readers, st->writers);
        for (size_t i = 0; i < st->nholds; i++) {
            const rlk_rw_hold *hd = &st->hold[i];
            printf("%s{", i ? "," : "");
            json_field("token", hd->token);
            printf(",\"mode\":\"%s\",\"ttl_ms\":%" PRId64 ",\"fence\":%" PRIu64 ",\"pid\":%" PRId64
                   "}", hd->mode == RLK_RW_WRITE ? "write" : "read", hd->ttl_ms, hd->fence,
                   hd->has_facts ? hd->pid : 0);
        }
        printf("],\"fence\":%" PRIu64 ",\"waiting\":%" PRId64 ",\"writers_waiting\":%" PRId64 "}\n",
               st->fence, st->waiters, st->writers_waiting);
        return;
    }
    put_line("name:    ", name);
    if (where[0]) put_line("node:    ", where);
    printf("rw:      %" PRId64 " reading, %" PRId64 " writing\n", st->readers, st->writers);
    for (size_t i = 0; i < st->nholds; i++) {
        const rlk_rw_hold *hd = &st->hold[i];
        fputs("hold:    ", stdout), put_text(hd->token);
        printf(": %s, ttl %" PRId64 " ms, fence %" PRIu64, hd->mode == RLK_RW_WRITE ? "write" : "read",
               hd->ttl_ms, hd->fence);
        put_hold_facts(hd);
        putchar('\n');
    }
    if (st->fence) printf("fence:   %" PRIu64 " (the last given)\n", st->fence);
    printf("waiting: %" PRId64 " (%" PRId64 " writers)\n", st->waiters, st->writers_waiting);
}

static int sem_status(cli_opts *o, int argc, char **argv)
{
    lock_args a;
    init_args(&a);
    a.sem = 1;
    const char *pos[1];
    char **rest;
    int r = parse_args(o, &a, argc, argv, pos, 1, &rest);
    if (r > 0) return r;
    if (r < 0 || rest)
        return cli_usage_error("usage: resplock sem status NAME [--layout L] [--lock-timeout D] [--json]");
    if (o->redlock) return cli_usage_error("sem is for one server or a cluster, not --redlock");
    if ((r = fill_defaults(o, &a, 0)) != 0) return r;
    if ((r = cli_resolve(o)) != 0) return r;
    const char *name = cli_key(o, pos[0]);
    if (!name) return cli_usage_error("--prefix and NAME are too long together");
    char *sname = strdup(name), where[RLK__SLOTS_HOST_MAX + 64];
    if (!sname) {
        cli_err("out of memory");
        return CLI_EX_SOFTWARE;
    }
    /* On a cluster the semaphore is read where it lives: the slot of its
     * keys' hash tag, NAME; in redis-semaphore's layout that of its key,
     * semaphore:NAME. */
    char tag[RLK__SLOTS_HOST_MAX + 16];
    int rs = a.layout == RLK_SEM_LAYOUT_REDIS_SEMAPHORE;
    if (rs) snprintf(tag, sizeof tag, "semaphore:%.*s", (int)(sizeof tag - 11), sname);
    else snprintf(tag, sizeof tag, "{%.*s}", (int)(sizeof tag - 3), sname);
    /* Its lockTimeout: --lock-timeout, else the TTL. */
    if (rs && a.lock_timeout_ms <= 0) a.lock_timeout_ms = a.ttl_ms;
    const char *url = locate(o, tag, where, sizeof where, &r);
    rlk_client *cl = url ? lock_client(o, url, a.wait_ms, &r) : NULL;
    if (!cl) {
        free(sname);
        return r;
    }
    rlk_sem_status st;
    int s = rlk_sem_get_status(cl, sname, a.layout, a.lock_timeout_ms, &st);
    if (s != RLK_OK) {
        r = s == RLK_ERR_INVALID ? cli_usage_error("%s", rlk_client_errmsg(cl))
                                 : cli_connect_error(o, s, rlk_client_errmsg(cl));
    } else if (st.not_a_sem) {
        cli_err("'%s' is not a semaphore (an application's key? use a --prefix)", sname);
        r = CLI_EX_DATAERR;
    } else {
        print_sem(sname, where, &st, a.json);
        r = st.used > 0 ? 0 : 1;
    }
    if (s == RLK_OK) rlk_sem_status_free(&st);
    rlk_client_free(cl);
    free(sname);
    return r;
}

int cmd_sem(cli_opts *o, int argc, char **argv)
{
    if (!RLK_CLI_SEM) {
        cli_err("sem is not in this resplock (the static command leaves the semaphore out)");
        return CLI_EX_CONFIG;
    }
    static const char usage[] =
        "usage: resplock sem run NAME -p PERMITS [-k K] [--layout L] [options] [--] COMMAND\n"
        "       resplock sem status NAME [--layout L] [--lock-timeout D] [--json]";
    if (argc >= 2 && strcmp(argv[1], "run") == 0) return cli_sem_run(o, argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "status") == 0) return sem_status(o, argc - 1, argv + 1);
    return cli_usage_error("%s", usage);
}

/* A key of resplock's own beside a lock: a line, its waiters, a
 * reentrant release's tombstone (see keys.c). */
static int side_key(const char *k, size_t n)
{
    static const char *const ends[] = {":queue", ":waiters"};
    for (int i = 0; i < 2; i++) {
        size_t e = strlen(ends[i]);
        if (n > e && memcmp(k + n - e, ends[i], e) == 0) return 1;
    }
    const char *r = n > 42 ? k + n - 42 : NULL; /* ":released:" and 32 hex digits */
    return (r && memcmp(r, ":released:", 10) == 0 && all_of(r + 10, 32, "0123456789abcdef")) ||
           (n > 9 && memcmp(k, "resplock:", 9) == 0);
}

/* One page of SCAN from cursor (updated) for pattern: its names, copied
 * one after another with their NULs (the connection's next reply
 * replaces the page), *nk of them; NULL with *nk 0 when out of memory.
 * *code: 0, or an exit code after a message. */
static char *scan_page(rlk_conn *c, char *cursor, const char *pattern, size_t *nk, int *code)
{
    rlk_resp_value *v;
    const char *scan[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
    int s = rlk_conn_command(c, &v, 6, scan, NULL);
    const rlk_resp_value *cur = s == RLK_OK ? rlk_resp_value_at(v, 0) : NULL;
    const rlk_resp_value *keys = s == RLK_OK ? rlk_resp_value_at(v, 1) : NULL;
    *nk = 0;
    *code = 0;
    if (!cur || !keys || !is_bulk(cur, NULL) || cur->len >= 32 || keys->type != RLK_RESP_ARRAY) {
        cli_err("SCAN: %s", s != RLK_OK ? rlk_conn_errmsg(c) : "unexpected reply");
        *code = s != RLK_OK ? cli_exit_for(s) : CLI_EX_SOFTWARE;
        return NULL;
    }
    memcpy(cursor, cur->str, cur->len);
    cursor[cur->len] = '\0';
    size_t total = 0;
    for (const rlk_resp_value *k = keys->child; k; k = k->next) ++*nk, total += k->len + 1;
    char *names = malloc(total + 1), *p = names;
    for (const rlk_resp_value *k = keys->child; names && k; k = k->next) {
        /* A name with a NUL byte is no name resplock could lock. */
        size_t kl = memchr(k->str, '\0', k->len) ? 0 : k->len;
        memcpy(p, k->str, kl);
        p[kl] = '\0';
        p += kl + 1;
    }
    if (!names) *nk = 0;
    return names;
}

/* One semaphore NAME (key) of list's, shown as shown: 1 when it is one. */
static int list_one_sem(rlk_client *cl, const char *key, const char *shown, int json)
{
    rlk_sem_status st;
    if (rlk_sem_get_status(cl, key, RLK_SEM_LAYOUT_RESPLOCK, 0, &st) != RLK_OK) return 0;
    int is = st.exists && !st.not_a_sem;
    if (is && json) {
        print_sem(shown, "", &st, 1);
    } else if (is) {
        put_text(shown);
        printf("  semaphore  %" PRId64 " of %" PRId64 " permits held, %zu holder%s  waiting %" PRId64 "\n",
               st.used, st.permits, st.nholders, st.nholders == 1 ? "" : "s", st.waiters);
    }
    rlk_sem_status_free(&st);
    return is;
}

/* One read-write lock of list's, as list_one_sem. */
static int list_one_rw(rlk_client *cl, const char *key, const char *shown, int json)
{
    rlk_rw_status st;
    if (rlk_rw_get_status(cl, key, &st) != RLK_OK) return 0;
    int is = st.exists && !st.not_a_rw;
    if (is && json) {
        print_rw(shown, "", &st, 1);
    } else if (is) {
        put_text(shown);
        printf("  rw  %" PRId64 " reading, %" PRId64 " writing  waiting %" PRId64 " (%" PRId64
               " writers)\n", st.readers, st.writers, st.waiters, st.writers_waiting);
    }
    rlk_rw_status_free(&st);
    return is;
}

/* list's semaphores (kprefix RLK_SEM_KEY_PREFIX, one list_one_sem) or
 * read-write locks: the state keys kprefix NAME "}" whose NAME (after
 * --prefix) matches pattern, each shown by one.  0, or an exit code. */
static int list_kind(const cli_opts *o, rlk_conn *c, rlk_client *cl, const char *pattern, int json,
                     int *found, const char *kprefix,
                     int (*one)(rlk_client *, const char *, const char *, int))
{
    size_t pre = strlen(kprefix), pl = o->prefix ? strlen(o->prefix) : 0;
    char *match = malloc(pre + strlen(pattern) + 2);
    if (!match) {
        cli_err("out of memory");
        return CLI_EX_SOFTWARE;
    }
    sprintf(match, "%s%s}", kprefix, pattern);
    char cursor[32] = "0";
    int r = 0;
    do {
        size_t nk;
        char *names = scan_page(c, cursor, match, &nk, &r), *p, *next;
        for (p = names; names && nk--; p = next) {
            size_t n = strlen(p);
            next = p + n + 1;
            /* NAME is between the prefix and the last '}' (a NAME with
             * braces of its own matches too). */
            if (!n || p[n - 1] != '}') continue;
            p[n - 1] = '\0';
            if (n < pre + 1 + pl || strncmp(p + pre, o->prefix ? o->prefix : "", pl)) continue;
            *found += one(cl, p + pre, p + pre + pl, json);
        }
        free(names);
    } while (!r && strcmp(cursor, "0") != 0);
    free(match);
    return r;
}

int cmd_list(cli_opts *o, int argc, char **argv)
{
    lock_args a;
    char **extra;
    const char *pos[1] = {"*"};
    init_args(&a);
    int r = parse_args(o, &a, argc, argv, pos, 1, &extra);
    if (r > 0) return r;
    if (extra || a.shell || a.max_time_ms != UNSET)
        return cli_usage_error("usage: resplock list [PATTERN] [--json]");
    if (o->redlock) return cli_usage_error("list is for one server, not --redlock");
    if ((r = fill_defaults(o, &a, 0)) != 0) return r;
    if ((r = cli_resolve(o)) != 0) return r;
    if (!cli_key(o, pos[0])) return cli_usage_error("--prefix and PATTERN are too long together");
    /* The prefix is a string, PATTERN alone a glob: the prefix's glob
     * characters are escaped for SCAN MATCH. */
    size_t pl = o->prefix ? strlen(o->prefix) : 0;
    char *pattern = malloc(2 * pl + strlen(pos[0]) + 1), *e = pattern;
    for (size_t i = 0; pattern && i < pl; i++) {
        if (strchr("*?[]\\", o->prefix[i])) *e++ = '\\';
        *e++ = o->prefix[i];
    }
    if (pattern) strcpy(e, pos[0]);
    rlk_conn *c = pattern ? cli_connect(o, &r) : NULL;
    rlk_client *cl = NULL;
    if (!pattern) {
        cli_err("out of memory");
        r = CLI_EX_SOFTWARE;
    } else if (c && cli_is_cluster(c)) {
        cli_err("list reads one server: on a Redis Cluster, run it against each primary "
                "(status NAME finds a lock's node by itself)");
        r = CLI_EX_USAGE;
    } else if (c) {
        cl = lock_client(o, NULL, a.wait_ms, &r);
    }
    if (cl) {
        /* SCAN, never KEYS: the server serves others between the pages. */
        char cursor[32] = "0";
        int found = 0;
        do {
            size_t nk;
            char *names = scan_page(c, cursor, pattern, &nk, &r), *p;
            if (r) break;
            for (p = names; names && nk--; p += strlen(p) + 1) {
                rlk_lock_status st;
                char kind[128];
                /* What the prefix's escape let through, and what no
                 * name under it could be (the prefix itself), are not
                 * listed: a cut name would be another key's. */
                if (strncmp(p, o->prefix ? o->prefix : "", pl) != 0 || !p[pl] ||
                    side_key(p, strlen(p)))
                    continue;
                if (rlk_lock_get_status(cl, p, &st) != RLK_OK || !st.held || st.not_a_lock) continue;
                holder_kind(cl, p, &st, kind, sizeof kind);
                found++;
                if (a.json) {
                    print_status(p + pl, "", kind, &st, 1);
                    continue;
                }
                put_text(p + pl);
                printf("  %s  ttl %" PRId64 " ms  ", st.kind == RLK_LOCK_REENTRANT ? "reentrant" : st.kind ? "fair" : "simple",
                       st.ttl_ms);
                if (st.has_facts) put_facts(&st, 1);
                else fputs("holder unknown", stdout);
                printf("  waiting %" PRId64 "\n", st.waiters);
            }
            free(names);
        } while (strcmp(cursor, "0") != 0);
        if (!r && RLK_CLI_SEM)
            r = list_kind(o, c, cl, pattern, a.json, &found, RLK_SEM_KEY_PREFIX, list_one_sem);
        if (!r && RLK_CLI_RW)
            r = list_kind(o, c, cl, pattern, a.json, &found, RLK_RW_KEY_PREFIX, list_one_rw);
        if (!r && !found) cli_verbose("no lock matches '%s'", pattern);
        if (!r) r = found ? 0 : 1;
    }
    if (cl) rlk_client_free(cl);
    if (c) rlk_conn_free(c);
    free(pattern);
    return r;
}

/* The holder of NAME now, read once: its token into *tok (a simple
 * lock's value, the waiters' mark cut; a reentrant lock's hold count's
 * field; malloc'd) and the facts recorded with it into f.  RLK_OK,
 * RLK_LOCK_NOT_HELD (gone), RLK_LOCK_NOT_OWNER (the key is no longer a
 * lock of that kind: not the holder status saw), RLK_ERR_NOMEM, or a
 * connection status. */
static int holder_now(rlk_conn *c, const char *name, int reentrant, char **tok, rlk_lock_status *f)
{
    rlk_resp_value *v;
    const rlk_resp_value *t = NULL;
    const char *get[] = {reentrant ? "HGETALL" : "GET", name};
    size_t n = 0;
    memset(f, 0, sizeof *f);
    *tok = NULL;
    int r = rlk_conn_command(c, &v, 2, get, NULL);
    if (r != RLK_OK) return r;
    if (v->type == RLK_RESP_NULL || ((v->type == RLK_RESP_ARRAY || v->type == RLK_RESP_MAP) && !v->child))
        return RLK_LOCK_NOT_HELD;
    if (!reentrant && is_bulk(v, NULL) && (n = v->len) > 4 && memcmp(v->str, "rlk:", 4) == 0) {
        /* "rlk:", 32 hex digits, ';' and the facts; "+w" when marked. */
        const char *semi = memchr(v->str, ';', n);
        if (semi) rlk__facts_read(f, semi + 1, n - (size_t)(semi + 1 - v->str));
        if (memcmp(v->str + n - 2, "+w", 2) == 0) n -= 2;
    }
    if (!reentrant && is_bulk(v, NULL)) t = v;
    for (const rlk_resp_value *k = reentrant ? v->child : NULL; k && k->next; k = k->next->next) {
        if (is_bulk(k, "rlk:holder")) rlk__facts_read(f, k->next->str, k->next->len);
        else if (!t && is_bulk(k, NULL)) t = k, n = k->len;
    }
    /* (A value with a NUL byte is cut there: that token holds nothing.) */
    if (!t || !n) return RLK_LOCK_NOT_OWNER;
    return (*tok = strndup(t->str, n)) ? RLK_OK : RLK_ERR_NOMEM;
}

/* A reentrant lock's holds, all of field's, released one by one through
 * the release script (its tombstones and handoff), as the holder would;
 * the script compares the field, so another holder is never touched.
 * RLK_OK, RLK_LOCK_NOT_HELD, RLK_LOCK_NOT_OWNER (at the first release:
 * another holds it), RLK_ERR_SERVER (the script failed), or a
 * connection status. */
static int break_reentrant(rlk_conn *c, const char *name, const char *field)
{
    rlk_resp_value *v;
    size_t cap = rlk__key_cap(name);
    char *keys = malloc(RLK__NKEYS * cap);
    if (!keys) return RLK_ERR_NOMEM;
    rlk__make_keys(name, keys, cap);
    int64_t got = 2;
    int i, r = RLK_OK;
    for (i = 0; i < 100000 && got == 2 && r == RLK_OK; i++) {
        unsigned char rnd[16];
        size_t tl = strlen(keys + RLK__K_TOMB * cap);
        char *t = rlk__random_bytes(rnd, sizeof rnd) == 0 ? malloc(tl + 34) : NULL;
        if (!t) {
            r = RLK_ERR_NOMEM;
            break;
        }
        memcpy(t, keys + RLK__K_TOMB * cap, tl);
        t[tl] = ':';
        rlk__hex(rnd, sizeof rnd, t + tl + 1);
        const char *ev[] = {"EVAL", rlk__lua_release, "4", keys, keys + RLK__K_QUEUE * cap,
                            keys + RLK__K_WAITERS * cap, t, field, "0", "60000", "0"};
        r = rlk_conn_command(c, &v, 11, ev, NULL);
        if (r == RLK_OK && v->type != RLK_RESP_INTEGER) r = RLK_ERR_SERVER;
        got = r == RLK_OK ? v->integer : 0;
        free(t);
    }
    free(keys);
    /* Holds taken away, then none left to the holder: it let go of the
     * rest itself meanwhile; broken all the same. */
    if (r != RLK_OK || got == 1 || (i > 1 && (got == 0 || got == -1))) return r;
    return got == 0 ? RLK_LOCK_NOT_HELD : got == -1 ? RLK_LOCK_NOT_OWNER : RLK_ERR_SERVER;
}

/* break of a semaphore: every holder's permits given back by the
 * release script (each holder then finds them lost at its next renewal;
 * the line is woken), each holder named.  0, 1 when none was held, or
 * an exit code after a message. */
static int break_sem(rlk_client *cl, const char *name)
{
    rlk_sem_status st;
    rlk_conn *c = rlk_client_conn(cl);
    int r = c ? rlk_sem_get_status(cl, name, RLK_SEM_LAYOUT_RESPLOCK, 0, &st) : RLK_ERR_NOMEM;
    if (r != RLK_OK) {
        cli_err("break: %s", c ? rlk_client_errmsg(cl) : rlk_strerror(r));
        return cli_exit_for(r);
    }
    /* The semaphore's keys, as the library makes them; the channel is
     * sharded on a cluster. */
    size_t n = rlk__sem_key_cap(name);
    char *state = malloc(3 * n), *line = state + n, *wake = line + n;
    const char *pub = cli_is_cluster(c) ? "s" : "p";
    int broke = 0, code = st.nholders ? 0 : 1;
    if (state) {
        rlk__sem_key(name, "", state, n);
        rlk__sem_key(name, ":line", line, n);
        rlk__sem_key(name, ":wake", wake, n);
    }
    for (size_t i = 0; state && i < st.nholders; i++) {
        const rlk_sem_holder *hd = &st.holder[i];
        const char *ev[] = {"EVAL", rlk__lua_sem_release, "2", state, line, hd->token, wake, pub, "r"};
        rlk_resp_value *v;
        r = rlk_conn_command(c, &v, 9, ev, NULL);
        if (r == RLK_OK && v->type == RLK_RESP_INTEGER && v->integer == 1) {
            printf("broke %" PRId64 " permit%s of '%s', held by ", hd->k, hd->k == 1 ? "" : "s", name);
            put_text(hd->token);
            put_holder_facts(hd);
            putchar('\n');
            broke++;
        } else if (r != RLK_OK || v->type != RLK_RESP_INTEGER) {
            cli_err("break: cannot give back '%s''s permits of %s: %s", name, hd->token,
                    r != RLK_OK ? rlk_conn_errmsg(c) : "an unexpected reply");
            code = r != RLK_OK ? cli_exit_for(r) : CLI_EX_SOFTWARE;
        }
    }
    if (!state) cli_err("out of memory"), code = CLI_EX_SOFTWARE;
    else if (!code && !broke) printf("'%s' has no permit held (given back or expired meanwhile)\n", name), code = 1;
    else if (!st.nholders) printf("'%s' has no permit held\n", name);
    free(state);
    rlk_sem_status_free(&st);
    return code;
}

/* break of a read-write lock: every hold ended by the lock's release
 * script, each named; its holders find their holds lost. */
static int break_rw(rlk_client *cl, const char *name)
{
    rlk_rw_status st;
    rlk_conn *c = rlk_client_conn(cl);
    int r = c ? rlk_rw_get_status(cl, name, &st) : RLK_ERR_NOMEM;
    if (r != RLK_OK) {
        cli_err("break: %s", c ? rlk_client_errmsg(cl) : rlk_strerror(r));
        return cli_exit_for(r);
    }
    size_t n = rlk__rw_key_cap(name);
    char *state = malloc(3 * n), *line = state + n, *wake = line + n;
    const char *pub = cli_is_cluster(c) ? "s" : "p";
    int broke = 0, code = st.nholds ? 0 : 1;
    if (state) {
        rlk__rw_key(name, "", state, n);
        rlk__rw_key(name, ":line", line, n);
        rlk__rw_key(name, ":wake", wake, n);
    }
    for (size_t i = 0; state && i < st.nholds; i++) {
        const rlk_rw_hold *hd = &st.hold[i];
        /* TOKEN:N: the holder's token, the hold's number after the last ':'. */
        char tok[sizeof hd->token];
        snprintf(tok, sizeof tok, "%s", hd->token);
        char *num = strrchr(tok, ':');
        if (!num) continue;
        *num++ = '\0';
        const char *ev[] = {"EVAL", rlk__lua_rw_release, "2", state, line, tok, num, wake, pub, "r"};
        rlk_resp_value *v;
        r = rlk_conn_command(c, &v, 10, ev, NULL);
        if (r == RLK_OK && v->type == RLK_RESP_INTEGER && v->integer == 1) {
            printf("broke the %s hold of '%s', held by ", hd->mode == RLK_RW_WRITE ? "write" : "read",
                   name);
            put_text(hd->token);
            put_hold_facts(hd);
            putchar('\n');
            broke++;
        } else if (r != RLK_OK || v->type != RLK_RESP_INTEGER) {
            cli_err("break: cannot end '%s''s hold %s: %s", name, hd->token,
                    r != RLK_OK ? rlk_conn_errmsg(c) : "an unexpected reply");
            code = r != RLK_OK ? cli_exit_for(r) : CLI_EX_SOFTWARE;
        }
    }
    if (!state) cli_err("out of memory"), code = CLI_EX_SOFTWARE;
    else if (!code && !broke) printf("'%s' has no hold (released or expired meanwhile)\n", name), code = 1;
    else if (!st.nholds) printf("'%s' has no hold\n", name);
    free(state);
    rlk_rw_status_free(&st);
    return code;
}

int cmd_break(cli_opts *o, int argc, char **argv)
{
    lock_args a;
    const char *pos[1];
    char where[RLK__SLOTS_HOST_MAX + 64], kind[128];
    rlk_client *cl;
    rlk_lock_status st, f;
    int r = lock_args_of(o, &a, argc, argv, pos, 1, "break NAME", NULL);
    if (!r && o->redlock) return cli_usage_error("break is for one server, not --redlock");
    if (r || (r = status_of(o, &a, pos[0], where, sizeof where, &cl, &st, kind, sizeof kind)))
        return r;
    rlk_sem_status ss;
    int sem = 0;
    if (RLK_CLI_SEM && !a.json && !st.held &&
        rlk_sem_get_status(cl, pos[0], RLK_SEM_LAYOUT_RESPLOCK, 0, &ss) == RLK_OK) {
        sem = ss.exists && !ss.not_a_sem;
        rlk_sem_status_free(&ss);
    }
    if (sem) {
        r = break_sem(cl, pos[0]);
        rlk_client_free(cl);
        return r;
    }
    rlk_rw_status ws;
    if (RLK_CLI_RW && !a.json && !st.held && rlk_rw_get_status(cl, pos[0], &ws) == RLK_OK) {
        int rw = ws.exists && !ws.not_a_rw;
        rlk_rw_status_free(&ws);
        if (rw) {
            r = break_rw(cl, pos[0]);
            rlk_client_free(cl);
            return r;
        }
    }
    if (a.json) r = cli_usage_error("--json is for status and list");
    else if (!st.held) printf("'%s' is not held\n", pos[0]), r = 1;
    else if (st.not_a_lock)
        cli_err("'%s' is not a lock: %s; left as it is", pos[0], kind), r = CLI_EX_DATAERR;
    if (r || !st.held) {
        rlk_client_free(cl);
        return r;
    }
    /* The holder is read once, and its very token released: the facts
     * printed are that token's, and if the lock changed hands since,
     * the release's comparison leaves the new holder alone (waiters in
     * line are handed the lock, as at its holder's release). */
    char *tok = NULL;
    rlk_conn *c = rlk_client_conn(cl);
    int reentrant = st.kind == RLK_LOCK_REENTRANT, lib = !c;
    r = c ? holder_now(c, pos[0], reentrant, &tok, &f) : RLK_ERR_NOMEM;
    if (r == RLK_OK && reentrant) r = break_reentrant(c, pos[0], tok);
    else if (r == RLK_OK) r = rlk_release_token(cl, pos[0], tok), lib = 1;
    free(tok);
    if (r == RLK_OK) {
        printf("broke '%s', held by ", pos[0]);
        if (f.has_facts) put_facts(&f, 1);
        else fputs("a holder of unknown facts (", stdout), put_text(kind), putchar(')');
        putchar('\n');
    } else if (r == RLK_LOCK_NOT_HELD) {
        printf("'%s' is not held (it was released or expired meanwhile)\n", pos[0]);
        r = 1;
    } else if (r == RLK_LOCK_NOT_OWNER) {
        cli_err("break: '%s' changed hands meanwhile: its new holder is left alone", pos[0]);
        r = 1;
    } else {
        cli_err("break: cannot release '%s': %s", pos[0],
                lib ? rlk_client_errmsg(cl) : r == RLK_ERR_SERVER ? rlk_strerror(r) : rlk_conn_errmsg(c));
        r = cli_exit_for(r);
    }
    rlk_client_free(cl);
    return r;
}
