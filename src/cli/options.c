/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The resplock command's global options (accepted before the command and
 * again after it, by every subcommand's own parsing) and its usage text
 * (src/cli/usage.txt).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The usage text: src/cli/usage.txt, packed at build time (usage.c). */
const char *cli_usage(void);

void cli_print_usage(FILE *to) { fputs(cli_usage(), to); }

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
    OPT_REDLOCK,
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
    {"redlock", 0, OPT_REDLOCK},
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
            /* Several: seeds of one cluster (the library checks that),
             * or with --redlock independent servers. */
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
    case OPT_REDLOCK: o->redlock = 1; return 1;
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
    case OPT_HELP: fputs(cli_usage(), stdout); return 2;
    case 'V':
        printf("resplock %s\nTLS: %s\n", RLK_VERSION,
               rlk_tls_library() ? rlk_tls_library() : "not compiled in");
        return 2;
    default: return 0;
    }
}

/* The option of own or global_long (in that order: a subcommand's short
 * form may stand for its own option, as sem's -p for --permits) named by
 * the len bytes at name: its whole name, or else the beginning of one
 * option's name only (of several with the same code: the first).  NULL
 * when none; *ambiguous is set when several differ; *mine when it is
 * own's. */
static const cli_option *long_option(const cli_option *own, const char *name, size_t len,
                                     int *ambiguous, int *mine)
{
    const cli_option *found = NULL;
    *ambiguous = 0;
    if (!len) return NULL;
    for (int t = 0; t < 2; t++)
        for (const cli_option *p = t ? global_long : own; p && p->name; p++) {
            if (strncmp(p->name, name, len) != 0) continue;
            if (!p->name[len]) return *mine = !t, p;
            if (!found) found = p, *mine = !t;
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

/* The option whose short form is c (its code, below 128), own's first
 * (*mine then), or NULL. */
static const cli_option *short_option(const cli_option *own, int c, int *mine)
{
    static const cli_option help = {"help", 0, OPT_HELP};
    *mine = 0;
    if (c == '?') return &help;
    for (int t = 0; t < 2; t++)
        for (const cli_option *p = t ? global_long : own; p && p->name; p++)
            if (p->val < 128 && p->val == c) return *mine = !t, p;
    return NULL;
}

/* Option p (own's when mine) of argv word `word` with its value arg
 * (NULL: none): 0 when taken, or an exit code (CLI_DONE after --help,
 * --version). */
static int take_option(cli_opts *o, const cli_option *p, int mine, const char *arg,
                       const char *word, int (*own)(void *ctx, int c, const char *arg), void *ctx)
{
    int r = mine ? 0 : cli_global_option(o, p->val, arg);
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
        int r = 0, mine = 0;
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
            p = long_option(own_options, name, len, &ambiguous, &mine);
            if (ambiguous) return ambiguous_error(own_options, w, name, len);
            if (!p) return cli_usage_error("unknown option '%s'", w);
            if (eq && !p->takes_value)
                return cli_usage_error("option '--%s' takes no value", p->name);
            if (eq) arg = eq + 1;
            else if (p->takes_value && !(arg = ++i < argc ? argv[i] : NULL))
                return cli_usage_error("option '%s' needs a value", w);
            r = take_option(o, p, mine, arg, w, own, ctx);
        } else {
            /* -x, bundled flags -xy, a value in the word (-t10s) or the next. */
            for (const char *s = w + 1; *s && !r && !arg; s++) {
                if (!(p = short_option(own_options, (unsigned char)*s, &mine)))
                    return cli_usage_error("unknown option '-%c'", *s);
                if (p->takes_value && !(arg = s[1] ? s + 1 : ++i < argc ? argv[i] : NULL))
                    return cli_usage_error("option '%s' needs a value", w);
                r = take_option(o, p, mine, arg, w, own, ctx);
            }
        }
        if (r) return r;
    }
    *next = i;
    return 0;
}
