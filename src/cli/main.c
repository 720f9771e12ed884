/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The resplock command: argument parsing, dispatch to subcommands, exit
 * codes.  The codes follow sysexits(3), as documented in resplock(1):
 *   0  success          64 usage error        69 server unreachable,
 *   70 internal error   75 lock lost             TLS or auth failure
 *   78 configuration   124 run --max-time
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
    "  run NAME [options] -c STRING\n"
    "                        acquire NAME, run COMMAND (or /bin/sh -c STRING)\n"
    "                        while renewing the lock, release it when COMMAND\n"
    "                        exits; exit with its code\n"
    "  acquire NAME [options]\n"
    "                        acquire NAME and print \"TOKEN FENCE\"; the lock\n"
    "                        stays held until released or its TTL runs out\n"
    "  release NAME TOKEN    release NAME if TOKEN still holds it\n"
    "  extend NAME TOKEN DURATION [--add]\n"
    "                        set the time NAME has left (--add: add to it)\n"
    "  status NAME           show whether NAME is held, by what kind of holder,\n"
    "                        its TTL, fence, waiters in line; exit 0 when held,\n"
    "                        1 when free\n"
    "  ping                  check the server: name, version, protocol, TLS,\n"
    "                        user, round-trip time\n"
    "\n"
    "Lock options (run, acquire; -E also for release, extend):\n"
    "  -t, --ttl DURATION    lock time to live (default 30s); run renews it every\n"
    "                        third of it while COMMAND runs\n"
    "  -w, --wait DURATION   wait at most this long for the lock (default: wait\n"
    "                        forever, as flock does)\n"
    "  -n, --nonblock        do not wait: give up at once, silently (unless -v),\n"
    "                        if the lock is held\n"
    "  -E, --conflict-exit-code N\n"
    "                        exit code when the lock is not acquired (default 1)\n"
    "  -c, --command STRING  run: the command is /bin/sh -c STRING\n"
    "      --max-time DURATION\n"
    "                        run: stop COMMAND after this long (SIGTERM, then\n"
    "                        SIGKILL after --kill-after), release the lock and\n"
    "                        exit 124 (default: no limit)\n"
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
    "  -u, --url URL         server URL (default: $REDIS_URL, then the config\n"
    "                        file's url, then redis://127.0.0.1:6379); redis://,\n"
    "                        rediss:// (TLS), unix:///path; user@ and /db allowed\n"
    "  -h, --host HOST       server host (replaces the URL's)\n"
    "  -p, --port PORT       server port (replaces the URL's)\n"
    "  -a, --pass PASSWORD   password (visible to other users: prefer --askpass,\n"
    "                        --pass-file or $REDISCLI_AUTH)\n"
    "      --user USER       ACL user name (replaces the URL's)\n"
    "      --askpass         read the password from the terminal, without echo,\n"
    "                        or from the first line of standard input\n"
    "      --pass-file FILE  read the password from the first line of FILE\n"
    "      --tls             connect with TLS (rediss://)\n"
    "      --cacert FILE     trust the CAs in FILE (PEM) instead of the system's\n"
    "      --cacertdir DIR   trust the CAs in the hashed directory DIR\n"
    "      --cert FILE       client certificate (PEM) for mutual TLS\n"
    "      --key FILE        its private key (PEM)\n"
    "      --sni NAME        name sent as SNI and checked in the certificate\n"
    "                        (default: the URL's host)\n"
    "      --insecure        do not verify the server's certificate (warns)\n"
    "      --tls-ca, --tls-ca-dir, --tls-cert, --tls-key, --tls-server-name,\n"
    "      --tls-insecure    the older names of the six options above\n"
    "      --prefix STR      the lock's key on the server is STR followed by NAME,\n"
    "                        nothing added (--prefix app: nightly: app:nightly)\n"
    "  -T, --timeout DURATION\n"
    "                        connect and command timeout (default 5s)\n"
    "  -v, --verbose         progress on stderr, with timestamps\n"
    "  -q, --quiet           no messages on stderr, except usage errors\n"
    "  -?, --help            this help\n"
    "  -V, --version         the version\n"
    "\n"
    "Settings are read from /etc/resplock.conf, then from the file named by\n"
    "$RESPLOCK_CONFIG (key = value lines); the environment ($REDIS_URL,\n"
    "$REDISCLI_AUTH) and the options override them.  See resplock(1).\n"
    "\n"
    "Durations: a number with a unit: 500ms, 10s, 5m, 1h, or several in\n"
    "decreasing order: 1m30s, 2h30m (a bare number is seconds).\n"
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
    "run; 78 configuration error (a bad config file, a password that cannot\n"
    "be read, TLS not compiled in); 124 COMMAND ran past --max-time;\n"
    "126/127 COMMAND could not be run.  See resplock(1).\n";

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
    /* The time of day in UTC, worked out here: localtime and strftime
     * would bring the time zone code into a static build (5 KB). */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long day = (long)(ts.tv_sec % 86400);
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "resplock: %02ld:%02ld:%02ld.%03ldZ ", day / 3600, day / 60 % 60, day % 60,
            ts.tv_nsec / 1000000);
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

/* One number and its unit at *s; the unit's rank (h 4, m 3, s 2, ms 1,
 * none 0) and *s moved past them, or -1. */
static int duration_part(const char **s, double *ms)
{
    const char *p = *s;
    while ((*p >= '0' && *p <= '9') || *p == '.') p++;
    if (p == *s) return -1;
    /* strtod would take hex, exponents and inf; durations are plain
     * decimals, checked above. */
    char num[64];
    if ((size_t)(p - *s) >= sizeof num) return -1;
    memcpy(num, *s, (size_t)(p - *s));
    num[p - *s] = '\0';
    errno = 0;
    char *end;
    double v = strtod(num, &end);
    if (errno || *end) return -1;
    int rank;
    double mult;
    if (p[0] == 'm' && p[1] == 's') rank = 1, mult = 1, p += 2;
    else if (p[0] == 'h') rank = 4, mult = 3600000, p++;
    else if (p[0] == 'm') rank = 3, mult = 60000, p++;
    else if (p[0] == 's') rank = 2, mult = 1000, p++;
    else rank = 0, mult = 1000;
    *ms = v * mult;
    *s = p;
    return rank;
}

int cli_parse_duration(const char *s, int64_t *ms)
{
    if (!s || !*s) return -1;
    double total = 0, part;
    int last = 5, parts = 0;
    while (*s) {
        int rank = duration_part(&s, &part);
        /* A bare number stands alone; units go from hours down, once. */
        if (rank < 0 || rank >= last || (rank == 0 && (parts > 0 || *s))) return -1;
        last = rank;
        parts++;
        total += part;
    }
    if (total > 9.2e15) return -1;
    *ms = (int64_t)(total + 0.5);
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
    OPT_TLS_INSECURE,
    OPT_USER,
    OPT_ASKPASS,
    OPT_PASS_FILE,
    OPT_TLS,
    OPT_PREFIX,
    OPT_HELP
};

static const struct option global_long[] = {
    {"url", required_argument, NULL, 'u'},
    {"host", required_argument, NULL, 'h'},
    {"port", required_argument, NULL, 'p'},
    {"pass", required_argument, NULL, 'a'},
    {"user", required_argument, NULL, OPT_USER},
    {"askpass", no_argument, NULL, OPT_ASKPASS},
    {"pass-file", required_argument, NULL, OPT_PASS_FILE},
    {"tls", no_argument, NULL, OPT_TLS},
    {"cacert", required_argument, NULL, OPT_TLS_CA},
    {"cacertdir", required_argument, NULL, OPT_TLS_CA_DIR},
    {"cert", required_argument, NULL, OPT_TLS_CERT},
    {"key", required_argument, NULL, OPT_TLS_KEY},
    {"sni", required_argument, NULL, OPT_TLS_SERVER_NAME},
    {"insecure", no_argument, NULL, OPT_TLS_INSECURE},
    {"tls-ca", required_argument, NULL, OPT_TLS_CA},
    {"tls-ca-dir", required_argument, NULL, OPT_TLS_CA_DIR},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"tls-server-name", required_argument, NULL, OPT_TLS_SERVER_NAME},
    {"tls-insecure", no_argument, NULL, OPT_TLS_INSECURE},
    {"prefix", required_argument, NULL, OPT_PREFIX},
    {"timeout", required_argument, NULL, 'T'},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

#define GLOBAL_SHORT "u:h:p:a:T:vqV"

static int cli_global_option(cli_opts *o, int c, const char *arg)
{
    char *end;
    switch (c) {
    case 'u': o->url = arg; return 1;
    case 'h':
        if (!*arg) return cli_usage_error("bad --host '' (a host name or address)"), -1;
        o->host = arg;
        return 1;
    case 'p': {
        long v = strtol(arg, &end, 10);
        if (!*arg || *end || v < 1 || v > 65535)
            return cli_usage_error("bad --port '%s' (1 to 65535)", arg), -1;
        o->port = (int)v;
        return 1;
    }
    case 'a':
        o->password = arg;
        o->password_from = CLI_PW_ARG;
        if (*arg)
            cli_err("warning: a password on the command line can be seen by other users; "
                    "use --askpass, --pass-file or $REDISCLI_AUTH");
        return 1;
    case OPT_USER: o->user = arg; return 1;
    case OPT_ASKPASS: o->password_from = CLI_PW_ASK; return 1;
    case OPT_PASS_FILE:
        o->pass_file = arg;
        o->password_from = CLI_PW_FILE;
        return 1;
    case OPT_TLS: o->tls_on = 1; return 1;
    case OPT_PREFIX: o->prefix = arg; return 1;
    case 'T':
        if (cli_parse_duration(arg, &o->timeout_ms) != 0 || o->timeout_ms <= 0 ||
            o->timeout_ms > 86400000)
            return cli_usage_error("bad --timeout '%s' (a duration such as 500ms or 5s)", arg), -1;
        o->timeout_set = 1;
        return 1;
    case OPT_TLS_CA: o->tls.ca_file = arg; return 1;
    case OPT_TLS_CA_DIR: o->tls.ca_dir = arg; return 1;
    case OPT_TLS_CERT: o->tls.cert_file = arg; return 1;
    case OPT_TLS_KEY: o->tls.key_file = arg; return 1;
    case OPT_TLS_SERVER_NAME: o->tls.server_name = arg; return 1;
    case OPT_TLS_INSECURE: o->tls.insecure = 1; return 1;
    case 'v': o->verbose = 1; return 1;
    case 'q': o->quiet = 1; return 1;
    case OPT_HELP: fputs(usage_text, stdout); return 2;
    case 'V':
        printf("resplock %s\nTLS: %s\n", RLK_VERSION,
               rlk_tls_library() ? rlk_tls_library() : "not compiled in");
        return 2;
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
        /* -? is an unknown option to getopt, as any other. */
        if (c == '?' && optopt == '?') c = OPT_HELP;
        if (c == '?')
            return optopt ? cli_usage_error("unknown option '-%c'", optopt)
                          : cli_usage_error("unknown option '%s'", argv[optind - 1]);
        if (c == ':') return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        int r = cli_global_option(o, c, optarg);
        if (r < 0) return CLI_EX_USAGE;
        if (r == 2) return CLI_DONE;
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

rlk_conn *cli_connect(cli_opts *o, int *code)
{
    *code = cli_resolve(o);
    if (*code) return NULL;
    rlk_conn_config cfg;
    rlk_conn_config_init(&cfg);
    cfg.url = o->final_url;
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
        *code = CLI_EX_SOFTWARE;
        return NULL;
    }
    cli_verbose("connecting to %s", o->server);
    int status = rlk_conn_connect(c);
    if (status != RLK_OK) {
        *code = cli_connect_error(o, status, rlk_conn_errmsg(c));
        rlk_conn_free(c);
        return NULL;
    }
    cli_connected(rlk_conn_get_info(c));
    return c;
}

void cli_connected(const rlk_conn_info *in)
{
    if (!in) return;
    cli_verbose("connected to %s, %s server %s, RESP%d, %s", in->peer,
                in->server[0] ? in->server : "a", in->version[0] ? in->version : "(version unknown)",
                in->protocol, in->tls_version ? in->tls_version : "no TLS");
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
    if (r) return r == CLI_DONE ? 0 : r;
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
            r = commands[i].fn(&o, sub_argc, sub_argv);
            return r == CLI_DONE ? 0 : r;
        }
    }
    return cli_usage_error("unknown command '%s'", name);
}
