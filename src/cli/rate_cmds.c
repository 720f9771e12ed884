/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resplock rate: run a command when a rate limiter allows it (the
 * library's rlk_rate_take: GCRA on the server's clock), and rate status.
 *
 * Once allowed nothing is held, so the command is exec'd in resplock's
 * place: its exit code and signals are its own, with nothing between.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OPT_RATE = 3000, OPT_BURST, OPT_WAIT_FLAG };

static const cli_option rate_long[] = {
    {"rate", 1, OPT_RATE},
    {"burst", 1, OPT_BURST},
    {"count", 1, 'n'},
    {"wait", 0, OPT_WAIT_FLAG},
    {"wait-max", 1, 'w'},
    {"conflict-exit-code", 1, 'E'},
    {NULL, 0, 0}};

typedef struct rate_args {
    rlk_rate_options ro;
    int rate_set, waits, conflict_code;
    int64_t wait_max;        /* -1: none given */
} rate_args;

/* A whole number 1..2^40 (the library's bound), or -1. */
static int64_t whole(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 1 || v > (1LL << 40)) return -1;
    return v;
}

/* "10/s", "100/m", "5/h", "3/500ms", "20/2s": a count per period. */
static int parse_rate(const char *arg, rlk_rate_options *ro)
{
    const char *slash = strchr(arg, '/');
    char num[24], per[40];
    if (!slash || (size_t)(slash - arg) >= sizeof num || strlen(slash + 1) + 2 > sizeof per)
        return -1;
    memcpy(num, arg, (size_t)(slash - arg));
    num[slash - arg] = '\0';
    /* A unit alone is one of it: "s" is "1s". */
    snprintf(per, sizeof per, "%s%s", slash[1] >= 'a' && slash[1] <= 'z' ? "1" : "",
             slash + 1);
    int64_t ms;
    ro->count = whole(num);
    if (ro->count < 1 || cli_parse_duration(per, &ms) != 0 || ms < 1) return -1;
    ro->period_ms = ms;
    return 0;
}

static int rate_opt(void *ctx, int c, const char *arg)
{
    rate_args *a = ctx;
    switch (c) {
    case OPT_RATE:
        if (parse_rate(arg, &a->ro) != 0)
            return cli_usage_error("bad --rate '%s' (COUNT/PERIOD, COUNT at least 1: 10/s, "
                                   "100/m, 3/500ms)", arg), -1;
        a->rate_set = 1;
        return 1;
    case OPT_BURST:
        if ((a->ro.burst = whole(arg)) < 1)
            return cli_usage_error("bad --burst '%s' (a whole number, at least 1)", arg), -1;
        return 1;
    case 'n':
        if ((a->ro.n = whole(arg)) < 1)
            return cli_usage_error("bad -n '%s' (tokens a run takes, at least 1)", arg), -1;
        return 1;
    case OPT_WAIT_FLAG: a->waits = 1; return 1;
    case 'w':
        if (cli_parse_duration(arg, &a->wait_max) != 0)
            return cli_usage_error("bad -w '%s' (a duration such as 500ms, 10s or 5m)", arg), -1;
        a->waits = 1;
        return 1;
    case 'E': {
        char *end;
        long v = strtol(arg, &end, 10);
        if (!*arg || *end || v < 0 || v > 255)
            return cli_usage_error("bad --conflict-exit-code '%s' (0 to 255)", arg), -1;
        a->conflict_code = (int)v;
        return 1;
    }
    default: return 0;
    }
}

static const char usage[] =
    "usage: resplock rate NAME --rate COUNT/PERIOD [--burst B] [-n N] [--wait] [-w D] "
    "[--] COMMAND [ARG...]\n"
    "       resplock rate status NAME --rate COUNT/PERIOD [--burst B]";

int cmd_rate(cli_opts *o, int argc, char **argv)
{
    rate_args a;
    const char *pos[2] = {NULL, NULL};
    char **cmd = NULL;
    int got = 0;
    memset(&a, 0, sizeof a);
    rlk_rate_options_init(&a.ro);
    a.wait_max = -1;
    a.conflict_code = 1;
    /* Options stand anywhere before "--" or COMMAND, as run's. */
    for (;;) {
        int next;
        int r = cli_getopt(o, argc, argv, rate_long, rate_opt, &a, &next);
        if (r) return r;
        if (next >= argc) break;
        int dashdash = next > 1 && strcmp(argv[next - 1], "--") == 0;
        int status_form = got == 1 && strcmp(pos[0], "status") == 0;
        if (dashdash || got == 2 || (got == 1 && !status_form)) {
            /* After "--" a command: "rate status -- CMD" is a limiter
             * named status. */
            cmd = argv + next;
            break;
        }
        pos[got++] = argv[next];
        argv += next;
        argc -= next;
    }
    int status = got == 2 && strcmp(pos[0], "status") == 0;
    if (got == 0 || (status && cmd) || (!status && !cmd)) return cli_usage_error("%s", usage);
    const char *name = status ? pos[1] : pos[0];
    if (!*name) return cli_usage_error("the limiter NAME is empty");
    if (!a.rate_set) return cli_usage_error("--rate COUNT/PERIOD is needed (10/s, 100/m)");
    if (o->redlock) return cli_usage_error("rate is for one server, not --redlock");
    if (!status && a.ro.n > a.ro.burst)
        return cli_usage_error("-n %" PRId64 " is more than the burst (%" PRId64
                               "): no decision would ever allow it",
                               a.ro.n, a.ro.burst);
    if (status && (a.waits || a.ro.n != 1)) return cli_usage_error("status takes no -n or wait");
    a.ro.wait_ms = !a.waits ? 0 : a.wait_max < 0 ? RLK_WAIT_FOREVER : a.wait_max;
    /* -w 0 asks once, as without --wait. */
    int r = cli_resolve(o);
    if (r) return r;
    const char *key = cli_key(o, name);
    if (!key) return cli_usage_error("--prefix and NAME are too long together");
    char *limiter = strdup(key);
    if (!limiter) {
        cli_err("out of memory");
        return CLI_EX_SOFTWARE;
    }
    rlk_client *cl = cli_client(o, NULL, a.ro.wait_ms, &r);
    if (!cl) {
        free(limiter);
        return r;
    }
    rlk_rate_result res;
    int st = status ? rlk_rate_status(cl, limiter, &a.ro, &res)
                    : rlk_rate_take(cl, limiter, &a.ro, &res);
    if (st != RLK_OK && st != RLK_RATE_LIMITED) {
        r = st == RLK_ERR_INVALID ? cli_usage_error("%s", rlk_client_errmsg(cl))
                                  : cli_connect_error(o, st, rlk_client_errmsg(cl));
        rlk_client_free(cl);
        free(limiter);
        return r;
    }
    rlk_client_free(cl);
    if (status) {
        printf("%s: %" PRId64 " of %" PRId64 " left, all back in %" PRId64 " ms\n", name,
               res.left, a.ro.burst, res.reset_ms);
        free(limiter);
        return res.left > 0 ? 0 : 1;
    }
    if (st == RLK_RATE_LIMITED) {
        /* Refused is what the limiter is for: silent, as run -n when busy. */
        cli_verbose("'%s' refused: %" PRId64 " token(s) there in %" PRId64 " ms%s", limiter,
                    a.ro.n, res.wait_ms, a.waits ? ", past the wait" : "");
        free(limiter);
        return a.conflict_code;
    }
    cli_verbose("'%s' allowed (%" PRId64 " left) after %" PRId64 " decision(s), %" PRId64
                " ms slept", limiter, res.left, res.decisions, res.slept_ms);
    free(limiter);
    fflush(stdout);
    execvp(cmd[0], cmd);
    int e = errno;
    cli_err("cannot run '%s': %s", cmd[0], strerror(e));
    return e == ENOENT ? 127 : 126;
}
