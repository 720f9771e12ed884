/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The resplock command's global options (accepted before the command and
 * again after it, by every subcommand's own parsing) and its usage text.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "  status NAME [--json]  show whether NAME is held, by what kind of holder,\n"
    "                        its TTL, the holder's host, pid, command and since\n"
    "                        when, waiters in line (on a cluster: the node\n"
    "                        serving NAME; the fence is not stored); exit 0 when\n"
    "                        held, 1 when free; --json: one JSON object\n"
    "  list [PATTERN] [--json]\n"
    "                        the locks that exist (SCAN for PATTERN, default *,\n"
    "                        after --prefix), one line each: kind, TTL, holder,\n"
    "                        waiters; exit 1 when none; one server, no cluster\n"
    "  break NAME            forced release: say who held NAME and release it\n"
    "                        (waiters get their turn; its holder finds it lost);\n"
    "                        exit 0 when broken, 1 when free\n"
    "  ping                  check the server: name, version, protocol, TLS,\n"
    "                        user, round-trip time; on a cluster every node: its\n"
    "                        role, slots, health and round-trip time\n"
    "\n"
    "Lock options (run, acquire; -E also for release, extend):\n"
    "  -t, --ttl DURATION    lock time to live (default 30s); run renews it every\n"
    "                        third of it while COMMAND runs\n"
    "  -w, --wait DURATION   wait at most this long for the lock (default: wait\n"
    "                        forever, as flock does)\n"
    "  -n, --nonblock        do not wait: give up at once, silently (unless -v),\n"
    "                        if the lock is held\n"
    "  -E, --conflict-exit-code N\n"
    "                        exit code when the lock is not acquired (default 1;\n"
    "                        a NAME that is an application's key, not a lock,\n"
    "                        always exits 65)\n"
    "  -c, --command STRING  run: the command is /bin/sh -c STRING\n"
    "      --max-time DURATION\n"
    "                        run: stop COMMAND after this long (SIGTERM, then\n"
    "                        SIGKILL after --kill-after), release the lock (or\n"
    "                        keep it for what is left of --hold-min) and exit\n"
    "                        124 (default: no limit)\n"
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
    "  -u, --url URL         server URL (default: $RESPLOCK_URL, then the config\n"
    "                        file's server, then $REDIS_URL, then\n"
    "                        redis://127.0.0.1:6379); redis://, rediss:// (TLS),\n"
    "                        unix:///path; user@ and /db allowed; again: more\n"
    "                        nodes of one Redis Cluster\n"
    "  -h, --host HOST       server host (replaces the URL's)\n"
    "  -p, --port PORT       server port (replaces the URL's)\n"
    "  -a, --pass PASSWORD   password (visible to other users: prefer --askpass,\n"
    "                        --pass-file or $REDISCLI_AUTH)\n"
    "      --user USER       ACL user name (replaces the URL's)\n"
    "      --askpass         read the password from the terminal, without echo,\n"
    "                        or from the first line of standard input\n"
    "      --pass-file FILE  read the password from the first line of FILE\n"
    "      --no-auth-warning no warning for a password on the command line\n"
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
    "  -v, --verbose         progress on stderr, with timestamps (none when\n"
    "                        stderr is the journal: $JOURNAL_STREAM)\n"
    "  -q, --quiet           no messages on stderr, except usage errors\n"
    "  -?, --help            this help\n"
    "  -V, --version         the version\n"
    "\n"
    "Settings are read from /etc/resplock.conf, then from the file named by\n"
    "$RESPLOCK_CONFIG (key = value lines: the server, TLS files, prefix, and\n"
    "run's ttl, wait, hold-min, max-time, kill-after); the options override\n"
    "them, and $RESPLOCK_URL the file's server, which $REDIS_URL does not\n"
    "(a warning says so).  See resplock(1).\n"
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
    "64 usage error (a malformed -u too); 65 NAME is not a lock (an\n"
    "application's key: another type, no TTL); 69 server unreachable, TLS or\n"
    "authentication failure; 70 internal error; 75 the lock was lost, or not\n"
    "held to the end of the run; 78 configuration error (a bad config file, a\n"
    "malformed URL in it or in the environment, a password that cannot be\n"
    "read, TLS not compiled in); 124 COMMAND ran past --max-time;\n"
    "126/127 COMMAND could not be run.  See resplock(1).\n";

void cli_print_usage(FILE *to) { fputs(usage_text, to); }

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
    OPT_NO_AUTH_WARNING,
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
    {"no-auth-warning", no_argument, NULL, OPT_NO_AUTH_WARNING},
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
    case 'u':
        if (!o->url) {
            o->url = arg;
        } else {
            /* Several: seeds of one cluster (the library checks that). */
            if (o->nseeds >= 15) return cli_usage_error("at most 16 --url (seeds of one cluster)"), -1;
            o->seeds[o->nseeds++] = arg;
        }
        return 1;
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
        o->password_from = CLI_PW_ARG; /* warned of by cli_resolve */
        return 1;
    case OPT_USER: o->user = arg; return 1;
    case OPT_ASKPASS: o->password_from = CLI_PW_ASK; return 1;
    case OPT_PASS_FILE:
        o->pass_file = arg;
        o->password_from = CLI_PW_FILE;
        return 1;
    case OPT_TLS: o->tls_on = 1; return 1;
    case OPT_PREFIX: o->prefix = arg; return 1;
    case OPT_NO_AUTH_WARNING: o->no_auth_warning = 1; return 1;
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
