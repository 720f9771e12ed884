/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The resplock command: argument parsing, dispatch to subcommands, exit
 * codes.  The codes follow sysexits(3), as documented in resplock(1):
 *   0  success          64 usage error        69 server unreachable,
 *   70 internal error   75 lock lost             TLS or auth failure
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
    "usage: resplock [global options] COMMAND [ARGS...]\n"
    "\n"
    "Commands:\n"
    "  run NAME [options] [--] COMMAND [ARG...]\n"
    "                        acquire NAME, run COMMAND while renewing the lock,\n"
    "                        release it when COMMAND exits; exit with its code\n"
    "  acquire NAME [options]\n"
    "                        acquire NAME and print \"TOKEN FENCE\"; the lock\n"
    "                        stays held until released or its TTL runs out\n"
    "  release NAME TOKEN    release NAME if TOKEN still holds it\n"
    "  extend NAME TOKEN DURATION [--add]\n"
    "                        set the time NAME has left (--add: add to it)\n"
    "  status NAME           show whether NAME is held, its TTL, kind, fence,\n"
    "                        waiters in line; exit 0 when held, 1 when free\n"
    "  ping                  check the server: name, version, protocol, TLS,\n"
    "                        user, round-trip time\n"
    "\n"
    "Lock options (run, acquire; -E also for release, extend):\n"
    "  -t, --ttl DURATION    lock time to live (default 30s); run renews it every\n"
    "                        third of it while COMMAND runs\n"
    "  -w, --wait DURATION   wait at most this long for the lock (default: wait\n"
    "                        forever, as flock does)\n"
    "  -n, --nonblock        do not wait: give up at once if the lock is held\n"
    "  -E, --conflict-exit-code N\n"
    "                        exit code when the lock is not acquired (default 1)\n"
    "      --hold-min DURATION\n"
    "                        run: keep the lock at least this long after acquiring\n"
    "                        it, even if COMMAND ends sooner (its TTL is shortened\n"
    "                        to what is left instead of releasing)\n"
    "      --kill-after DURATION\n"
    "                        run: when the lock is lost, COMMAND gets SIGTERM, and\n"
    "                        SIGKILL this long after (default 5s, less for short\n"
    "                        TTLs); must fit in two thirds of the TTL\n"
    "\n"
    "Global options (also accepted after COMMAND):\n"
    "  -u, --url URL         server URL (default: $REDIS_URL, then\n"
    "                        redis://127.0.0.1:6379); redis://, rediss:// (TLS),\n"
    "                        unix:///path; user:password@ and /db allowed\n"
    "  -T, --timeout DURATION\n"
    "                        connect and command timeout (default 5s)\n"
    "      --tls-ca FILE     trust the CAs in FILE (PEM) instead of the system's\n"
    "      --tls-ca-dir DIR  trust the CAs in the hashed directory DIR\n"
    "      --tls-cert FILE   client certificate (PEM) for mutual TLS\n"
    "      --tls-key FILE    its private key (PEM)\n"
    "      --tls-server-name NAME\n"
    "                        name sent as SNI and checked in the certificate\n"
    "                        (default: the URL's host)\n"
    "      --tls-insecure    do not verify the server's certificate (warns)\n"
    "  -v, --verbose         progress on stderr, with timestamps\n"
    "  -q, --quiet           no messages on stderr, except usage errors\n"
    "  -h, --help            this help\n"
    "  -V, --version         the version\n"
    "\n"
    "Durations: a number with a unit: 500ms, 10s, 5m, 1h (a bare number is\n"
    "seconds).\n"
    "\n"
    "COMMAND gets RESPLOCK_NAME, RESPLOCK_TOKEN, RESPLOCK_FENCE and\n"
    "RESPLOCK_TTL_MS in its environment.  COMMAND runs in a process group of\n"
    "its own; SIGINT, SIGTERM, SIGHUP and SIGQUIT are forwarded to that group,\n"
    "and a supervisor process stops the group in time should resplock die or\n"
    "stall.\n"
    "\n"
    "Exit codes: run exits with COMMAND's code (128+N if it died of signal N);\n"
    "1 (or -E) when the lock is not acquired, or not held (release, extend);\n"
    "64 usage error; 69 server unreachable, TLS or authentication failure;\n"
    "70 internal error; 75 the lock was lost, or not held to the end of the\n"
    "run; 126/127 COMMAND could not be run.  See resplock(1).\n";

/* ------------------------------------------------------------------ */
/* Messages                                                            */

static cli_opts *msg_opts;

void cli_err(const char *fmt, ...)
{
    if (msg_opts && msg_opts->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("resplock: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_verbose(const char *fmt, ...)
{
    if (!msg_opts || !msg_opts->verbose || msg_opts->quiet) return;
    struct timespec ts;
    struct tm tm;
    char when[32];
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "resplock: %s.%03ld ", when, ts.tv_nsec / 1000000);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("resplock: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'resplock --help'.\n", stderr);
    va_end(ap);
    return CLI_EX_USAGE;
}

/* ------------------------------------------------------------------ */
/* Durations                                                           */

int cli_parse_duration(const char *s, int64_t *ms)
{
    if (!s || !*s) return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0 || v != v) return -1;
    /* strtod accepts hex and inf; durations are plain decimals. */
    for (const char *c = s; c < end; c++)
        if (!((*c >= '0' && *c <= '9') || *c == '.')) return -1;
    double mult;
    if (!*end || !strcmp(end, "s")) mult = 1000;
    else if (!strcmp(end, "ms")) mult = 1;
    else if (!strcmp(end, "m")) mult = 60000;
    else if (!strcmp(end, "h")) mult = 3600000;
    else return -1;
    double r = v * mult;
    if (r > 9.2e15) return -1;
    *ms = (int64_t)(r + 0.5);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Options                                                             */

enum {
    OPT_TLS_CA = 1000,
    OPT_TLS_CA_DIR,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_TLS_SERVER_NAME,
    OPT_TLS_INSECURE
};

static const struct option global_long[] = {
    {"url", required_argument, NULL, 'u'},
    {"timeout", required_argument, NULL, 'T'},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"tls-ca-dir", required_argument, NULL, OPT_TLS_CA_DIR},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"tls-server-name", required_argument, NULL, OPT_TLS_SERVER_NAME},
    {"tls-insecure", no_argument, NULL, OPT_TLS_INSECURE},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

#define GLOBAL_SHORT "u:T:vqhV"

static int cli_global_option(cli_opts *o, int c, const char *arg)
{
    switch (c) {
    case 'u': o->url = arg; return 1;
    case 'T':
        if (cli_parse_duration(arg, &o->timeout_ms) != 0 || o->timeout_ms <= 0 ||
            o->timeout_ms > 86400000)
            return cli_usage_error("bad --timeout '%s' (a duration such as 500ms or 5s)", arg), -1;
        return 1;
    case OPT_TLS_CA: o->tls.ca_file = arg; return 1;
    case OPT_TLS_CA_DIR: o->tls.ca_dir = arg; return 1;
    case OPT_TLS_CERT: o->tls.cert_file = arg; return 1;
    case OPT_TLS_KEY: o->tls.key_file = arg; return 1;
    case OPT_TLS_SERVER_NAME: o->tls.server_name = arg; return 1;
    case OPT_TLS_INSECURE: o->tls.insecure = 1; return 1;
    case 'v': o->verbose = 1; return 1;
    case 'q': o->quiet = 1; return 1;
    case 'h': fputs(usage_text, stdout); exit(0);
    case 'V':
        printf("resplock %s\nTLS: %s\n", RLK_VERSION,
               rlk_tls_library() ? rlk_tls_library() : "not compiled in");
        exit(0);
    default: return 0;
    }
}

int cli_getopt(cli_opts *o, int argc, char **argv, const char *shortopts,
               const struct option *longopts, int (*own)(void *ctx, int c, const char *arg),
               void *ctx)
{
    char shortbuf[128];
    struct option all[64];
    size_t n = 0;
    snprintf(shortbuf, sizeof shortbuf, "+:%s%s", GLOBAL_SHORT, shortopts ? shortopts : "");
    for (const struct option *p = global_long; p->name; p++) all[n++] = *p;
    for (const struct option *p = longopts; p && p->name && n < 63; p++) all[n++] = *p;
    memset(&all[n], 0, sizeof all[n]);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shortbuf, all, NULL)) != -1) {
        if (c == '?')
            return optopt ? cli_usage_error("unknown option '-%c'", optopt)
                          : cli_usage_error("unknown option '%s'", argv[optind - 1]);
        if (c == ':') return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        int r = cli_global_option(o, c, optarg);
        if (r < 0) return CLI_EX_USAGE;
        if (r > 0) continue;
        r = own ? own(ctx, c, optarg) : 0;
        if (r < 0) return CLI_EX_USAGE;
        if (r == 0) return cli_usage_error("unknown option '%s'", argv[optind - 1]);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Connecting                                                          */

int cli_exit_for(int status)
{
    switch (status) {
    case RLK_OK: return 0;
    case RLK_ERR_CONNECT: case RLK_ERR_TIMEOUT: case RLK_ERR_TLS: case RLK_ERR_AUTH:
    case RLK_ERR_URL: case RLK_ERR_IO: case RLK_ERR_CLOSED: case RLK_ERR_PROTO:
    case RLK_ERR_SERVER: case RLK_ERR_LIMIT:
        return CLI_EX_UNAVAILABLE;
    default:
        return CLI_EX_SOFTWARE;
    }
}

rlk_conn *cli_connect(cli_opts *o, int *status)
{
    rlk_conn_config cfg;
    rlk_conn_config_init(&cfg);
    cfg.url = o->url;
    cfg.tls = o->tls;
    cfg.client_name = "resplock";
    cfg.connect_timeout_ms = (int)o->timeout_ms;
    cfg.command_timeout_ms = (int)o->timeout_ms;
    cfg.reconnect_attempts = -1;
    if (o->tls.insecure)
        cli_err("warning: --tls-insecure: the server's certificate is not verified");
    rlk_conn *c = rlk_conn_new(&cfg);
    if (!c) {
        cli_err("out of memory");
        *status = RLK_ERR_NOMEM;
        return NULL;
    }
    cli_verbose("connecting to %s", o->url && *o->url ? "the server" : "$REDIS_URL or 127.0.0.1:6379");
    *status = rlk_conn_connect(c);
    if (*status != RLK_OK) {
        cli_err("%s", rlk_conn_errmsg(c));
        rlk_conn_free(c);
        return NULL;
    }
    const rlk_conn_info *in = rlk_conn_get_info(c);
    cli_verbose("connected to %s (RESP%d%s%s)", in->peer, in->protocol,
                in->tls_version ? ", " : "", in->tls_version ? in->tls_version : "");
    return c;
}

/* ------------------------------------------------------------------ */

static const struct {
    const char *name;
    int (*fn)(cli_opts *o, int argc, char **argv);
} commands[] = {
    {"run", cmd_run},
    {"acquire", cmd_acquire},
    {"release", cmd_release},
    {"extend", cmd_extend},
    {"status", cmd_status},
    {"ping", cmd_ping},
};

int main(int argc, char **argv)
{
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = 5000;
    msg_opts = &o;

    int r = cli_getopt(&o, argc, argv, NULL, NULL, NULL, NULL);
    if (r) return r;
    if (optind >= argc) {
        fputs(usage_text, stderr);
        return CLI_EX_USAGE;
    }
    const char *name = argv[optind];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(name, commands[i].name) == 0) {
            /* The subcommand parses its own options (and the global ones
             * again) from its own argv. */
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 0;
            return commands[i].fn(&o, sub_argc, sub_argv);
        }
    }
    return cli_usage_error("unknown command '%s'", name);
}
