/* SPDX-License-Identifier: BSD-3-Clause */
/* resplock ping: what a connection learned, and how long a round trip
 * takes.  The first thing to run when a lock will not work. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PINGS 5

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cmd_ping(cli_opts *o, int argc, char **argv)
{
    optind = 0;
    int r = cli_getopt(o, argc, argv, NULL, NULL, NULL, NULL);
    if (r) return r;
    if (optind < argc) return cli_usage_error("ping takes no arguments");

    int status;
    rlk_conn *c = cli_connect(o, &status);
    if (!c) return status;
    const rlk_conn_info *in = rlk_conn_get_info(c);
    char server[64], version[64], user[128];
    snprintf(server, sizeof server, "%s", in->server[0] ? in->server : "");
    snprintf(version, sizeof version, "%s", in->version);
    snprintf(user, sizeof user, "%s", in->user);
    rlk_resp_value *v;

    double rtt[PINGS];
    const char *ping[] = {"PING"};
    for (int i = 0; i < PINGS; i++) {
        double t0 = now_ms();
        status = rlk_conn_command(c, &v, 1, ping, NULL);
        rtt[i] = now_ms() - t0;
        if (status != RLK_OK) {
            cli_err("PING: %s", rlk_conn_errmsg(c));
            rlk_conn_free(c);
            return cli_exit_for(status);
        }
        if (rlk_reply_error_class(v) != RLK_EC_NONE) {
            cli_err("PING: %.*s", (int)v->len, v->str);
            rlk_conn_free(c);
            return CLI_EX_UNAVAILABLE;
        }
    }
    qsort(rtt, PINGS, sizeof rtt[0], cmp_double);

    const char *whoami[] = {"ACL", "WHOAMI"};
    if (rlk_conn_command(c, &v, 2, whoami, NULL) == RLK_OK &&
        (v->type == RLK_RESP_BULK || v->type == RLK_RESP_SIMPLE))
        snprintf(user, sizeof user, "%.*s", (int)v->len, v->str);
    if (!version[0]) {
        const char *info[] = {"INFO", "server"};
        if (rlk_conn_command(c, &v, 2, info, NULL) == RLK_OK &&
            (v->type == RLK_RESP_BULK || v->type == RLK_RESP_VERBATIM)) {
            cli_info_field(v, "redis_version", version, sizeof version);
            if (!server[0]) {
                char valkey[64] = "";
                cli_info_field(v, "valkey_version", valkey, sizeof valkey);
                snprintf(server, sizeof server, "%s", valkey[0] ? "valkey" : "redis");
            }
        }
    }
    in = rlk_conn_get_info(c);
    printf("server:     %s %s\n", server[0] ? server : "unknown", version[0] ? version : "(version unknown)");
    printf("address:    %s\n", in->peer);
    printf("protocol:   RESP%d\n", in->protocol);
    if (in->tls_version)
        printf("tls:        %s %s%s\n", in->tls_version, in->tls_cipher ? in->tls_cipher : "",
               o->tls.insecure ? " (certificate NOT verified)" : "");
    else
        printf("tls:        none\n");
    printf("user:       %s\n", user);
    printf("round trip: %.3f ms (median of %d PINGs)\n", rtt[PINGS / 2], PINGS);
    rlk_conn_free(c);
    return 0;
}
