/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The resplock command: the dispatch to its subcommands.  options.c
 * parses the global options, util.c holds the messages and the exit
 * codes, which follow sysexits(3), as documented in resplock(1):
 *   0  success          64 usage error        69 server unreachable,
 *   70 internal error   75 lock lost             TLS or auth failure
 *   78 configuration   124 run --max-time
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"
#include "defaults.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int (*fn)(cli_opts *o, int argc, char **argv);
} commands[] = {
    {"run", cmd_run},
    {"acquire", cmd_acquire},
    {"release", cmd_release},
    {"extend", cmd_extend},
    {"status", cmd_status},
    {"list", cmd_list},
    {"break", cmd_break},
    {"ping", cmd_ping},
    {"rate", cmd_rate},
    {"sem", cmd_sem},
    {"rw", cmd_rw},
};

int main(int argc, char **argv)
{
    cli_opts o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = RLK__DEFAULT_TIMEOUT_MS;
    cli_messages_for(&o);

    int next;
    int r = cli_getopt(&o, argc, argv, NULL, NULL, NULL, &next);
    if (r) return r == CLI_DONE ? 0 : r;
    if (next >= argc) {
        cli_print_usage(stderr);
        return CLI_EX_USAGE;
    }
    const char *name = argv[next];
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(name, commands[i].name) == 0) {
            /* The subcommand parses its own options (and the global ones
             * again) from its own argv. */
            int sub_argc = argc - next;
            char **sub_argv = argv + next;
            r = commands[i].fn(&o, sub_argc, sub_argv);
            return r == CLI_DONE ? 0 : r;
        }
    }
    return cli_usage_error("unknown command '%s'", name);
}
