/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The resplock command's global options (accepted before the command and
 * again after it, by every subcommand's own parsing) and its usage text.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"

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
    "                        exit 0 when broken, 1 when free or when it changed\n"
    "                        hands meanwhile (the new holder is left alone)\n"
    "  ping                  check the server: name, version, protocol, TLS,\n"
    "                        user, round-trip time; on a cluster every node: its\n"
    "                        role, slots, health and round-trip time\n"
    "  rate NAME --rate COUNT/PERIOD [--burst B] [-n N] [--wait] [-w D] [--]\n"
    "       COMMAND [ARG...]\n"
    "                        run COMMAND (exec'd: its exit code) if the rate\n"
    "                        limiter NAME allows N tokens (default 1) now: at\n"
    "                        most COUNT per PERIOD (10/s, 100/m, 3/500ms), B at\n"
    "                        once from idle (default 1), by the server's clock;\n"
    "                        refused: exit 1 (-E N), or with --wait sleep the\n"
    "                        time the server says and ask again, within -w D\n"
    "  rate status NAME --rate COUNT/PERIOD [--burst B]\n"
    "                        tokens left now and when all are back; exit 0 when\n"
    "                        one is left, 1 when none\n"
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
    "Values: -t 10s, -t10s, --ttl 10s or --ttl=10s; flags bundle (-nv); a\n"
    "long option may be shortened to a beginning no other option has (--nonb).\n"
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

static const cli_option global_long[] = {
    {"url", 1, 'u'},
    {"host", 1, 'h'},
    {"port", 1, 'p'},
    {"pass", 1, 'a'},
    {"user", 1, OPT_USER},
    {"askpass", 0, OPT_ASKPASS},
    {"pass-file", 1, OPT_PASS_FILE},
    {"tls", 0, OPT_TLS},
    {"cacert", 1, OPT_TLS_CA},
    {"cacertdir", 1, OPT_TLS_CA_DIR},
    {"cert", 1, OPT_TLS_CERT},
    {"key", 1, OPT_TLS_KEY},
    {"sni", 1, OPT_TLS_SERVER_NAME},
    {"insecure", 0, OPT_TLS_INSECURE},
    {"tls-ca", 1, OPT_TLS_CA},
    {"tls-ca-dir", 1, OPT_TLS_CA_DIR},
    {"tls-cert", 1, OPT_TLS_CERT},
    {"tls-key", 1, OPT_TLS_KEY},
    {"tls-server-name", 1, OPT_TLS_SERVER_NAME},
    {"tls-insecure", 0, OPT_TLS_INSECURE},
    {"prefix", 1, OPT_PREFIX},
    {"no-auth-warning", 0, OPT_NO_AUTH_WARNING},
    {"timeout", 1, 'T'},
    {"verbose", 0, 'v'},
    {"quiet", 0, 'q'},
    {"help", 0, OPT_HELP},
    {"version", 0, 'V'},
    {NULL, 0, 0}};

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

/* The option of global_long or own (in that order) named by the len
 * bytes at name: its whole name, or else the beginning of one option's
 * name only (of several with the same code: the first).  NULL when none;
 * *ambiguous is set when several differ. */
static const cli_option *long_option(const cli_option *own, const char *name, size_t len,
                                     int *ambiguous)
{
    const cli_option *found = NULL;
    *ambiguous = 0;
    if (!len) return NULL;
    for (int t = 0; t < 2; t++)
        for (const cli_option *p = t ? own : global_long; p && p->name; p++) {
            if (strncmp(p->name, name, len) != 0) continue;
            if (!p->name[len]) return p;
            if (!found) found = p;
            else if (found->val != p->val) *ambiguous = 1;
        }
    return *ambiguous ? NULL : found;
}

/* The usage error for word, whose name (len bytes at name) begins
 * several options' names: it names them. */
static int ambiguous_error(const cli_option *own, const char *word, const char *name, size_t len)
{
    char list[512] = "";
    for (int t = 0; t < 2; t++)
        for (const cli_option *p = t ? own : global_long; p && p->name; p++) {
            if (strncmp(p->name, name, len) != 0) continue;
            size_t n = strlen(list);
            if (n + strlen(p->name) + 5 >= sizeof list) break;
            strcat(strcat(strcat(list, n ? ", " : ""), "--"), p->name);
        }
    return cli_usage_error("ambiguous option '%s' (%s)", word, list);
}

/* The option whose short form is c (its code, below 128), or NULL. */
static const cli_option *short_option(const cli_option *own, int c)
{
    static const cli_option help = {"help", 0, OPT_HELP};
    if (c == '?') return &help;
    for (int t = 0; t < 2; t++)
        for (const cli_option *p = t ? own : global_long; p && p->name; p++)
            if (p->val < 128 && p->val == c) return p;
    return NULL;
}

/* Option p of argv word `word` with its value arg (NULL: none): 0 when
 * taken, or an exit code (CLI_DONE after --help, --version). */
static int take_option(cli_opts *o, const cli_option *p, const char *arg, const char *word,
                       int (*own)(void *ctx, int c, const char *arg), void *ctx)
{
    int r = cli_global_option(o, p->val, arg);
    if (r == 0 && own) r = own(ctx, p->val, arg);
    if (r < 0) return CLI_EX_USAGE;
    if (r == 2) return CLI_DONE;
    return r ? 0 : cli_usage_error("unknown option '%s'", word);
}

int cli_getopt(cli_opts *o, int argc, char **argv, const cli_option *own_options,
               int (*own)(void *ctx, int c, const char *arg), void *ctx, int *next)
{
    int i = 1;
    for (; i < argc; i++) {
        const char *w = argv[i], *arg = NULL;
        const cli_option *p = NULL;
        int r = 0;
        if (w[0] != '-' || !w[1]) break; /* the first operand ends the options */
        if (strcmp(w, "--") == 0) {
            i++;
            break;
        }
        if (w[1] == '-') {
            /* --name, --name=VALUE, --name VALUE; name may be shortened. */
            const char *name = w + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            int ambiguous;
            p = long_option(own_options, name, len, &ambiguous);
            if (ambiguous) return ambiguous_error(own_options, w, name, len);
            if (!p) return cli_usage_error("unknown option '%s'", w);
            if (eq && !p->takes_value)
                return cli_usage_error("option '--%s' takes no value", p->name);
            if (eq) arg = eq + 1;
            else if (p->takes_value && !(arg = ++i < argc ? argv[i] : NULL))
                return cli_usage_error("option '%s' needs a value", w);
            r = take_option(o, p, arg, w, own, ctx);
        } else {
            /* -x, bundled flags -xy, a value in the word (-t10s) or the next. */
            for (const char *s = w + 1; *s && !r && !arg; s++) {
                if (!(p = short_option(own_options, (unsigned char)*s)))
                    return cli_usage_error("unknown option '-%c'", *s);
                if (p->takes_value && !(arg = s[1] ? s + 1 : ++i < argc ? argv[i] : NULL))
                    return cli_usage_error("option '%s' needs a value", w);
                r = take_option(o, p, arg, w, own, ctx);
            }
        }
        if (r) return r;
    }
    *next = i;
    return 0;
}
