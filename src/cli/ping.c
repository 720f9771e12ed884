/* SPDX-License-Identifier: BSD-3-Clause */
/* resplock ping: what a connection learned, and how long a round trip
 * takes; on a Redis Cluster, every node with its role, slots and health,
 * and a round trip of its own.  The first thing to run when a lock will
 * not work. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"
#include "reply.h"
#include "slots.h"
#include "url.h"

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

/* The median of PINGS round trips on c, in *ms: RLK_OK, or the status of
 * the failure (RLK_ERR_SERVER: an error reply) with why in err. */
static int round_trip(rlk_conn *c, double *ms, char *err, size_t n)
{
    double rtt[PINGS];
    const char *ping[] = {"PING"};
    rlk_resp_value *v;
    for (int i = 0; i < PINGS; i++) {
        double t0 = now_ms();
        int status = rlk_conn_command(c, &v, 1, ping, NULL);
        rtt[i] = now_ms() - t0;
        if (status != RLK_OK) {
            snprintf(err, n, "PING: %s", rlk_conn_errmsg(c));
            return status;
        }
        if (rlk_reply_error_class(v) != RLK_EC_NONE) {
            snprintf(err, n, "PING: %.*s", (int)(v->len > 200 ? 200 : v->len), v->str);
            return RLK_ERR_SERVER;
        }
    }
    qsort(rtt, PINGS, sizeof rtt[0], cmp_double);
    *ms = rtt[PINGS / 2];
    return RLK_OK;
}

/* A node's own round trip, "0.105ms", or "failed: " and why, in out. */
static void ping_node(const cli_opts *o, const rlk__node *n, int tls, const char *addr,
                      char *out, size_t cap)
{
    char err[400];
    double ms;
    const char *url = n->host[0] && cli_node_port(n, tls) ? cli_node_url(o, n->host,
                                                                         cli_node_port(n, tls))
                                                          : NULL;
    if (!url) {
        snprintf(out, cap, "failed: %s", n->host[0] ? "no port known" : "no address known");
        return;
    }
    rlk_conn *c = cli_conn_new(o, url);
    if (!c) {
        snprintf(out, cap, "failed: out of memory");
        return;
    }
    cli_verbose("connecting to node %s", addr);
    int r = rlk_conn_connect(c);
    if (r != RLK_OK) snprintf(err, sizeof err, "%s", rlk_conn_errmsg(c));
    else r = round_trip(c, &ms, err, sizeof err);
    if (r == RLK_OK) snprintf(out, cap, "%.3fms", ms);
    else snprintf(out, cap, "failed: %s", err);
    rlk_conn_free(c);
}

/* A node's slot ranges, "0-5460,10923" ("none" when it serves none). */
static void print_ranges(const rlk__slots *t, size_t i)
{
    int any = 0;
    for (unsigned s = 0; s < RLK__NSLOTS; s++) {
        if (t->owner[s] != i) continue;
        unsigned e = s;
        while (e + 1 < RLK__NSLOTS && t->owner[e + 1] == i) e++;
        printf(e > s ? "%s%u-%u" : "%s%u", any ? "," : "", s, e);
        any = 1;
        s = e;
    }
    if (!any) printf("none");
}

static void show_node(const cli_opts *o, const rlk__slots *t, size_t i, int tls)
{
    static const char *const health[] = {"unknown", "online", "loading", "failed"};
    const rlk__node *n = &t->nodes[i];
    char addr[RLK__SLOTS_HOST_MAX + 16], of[RLK__SLOTS_HOST_MAX + 16], ping[600];
    cli_node_addr(n, tls, addr, sizeof addr);
    ping_node(o, n, tls, addr, ping, sizeof ping);
    printf("node:       %s ", addr);
    if (n->role == RLK__ROLE_PRIMARY) {
        printf("primary slots=");
        print_ranges(t, i);
    } else {
        if (n->primary < t->nnodes) cli_node_addr(&t->nodes[n->primary], tls, of, sizeof of);
        else snprintf(of, sizeof of, "?");
        printf("replica of=%s", of);
    }
    printf(" health=%s ping=%s\n", health[n->health], ping);
}

/* Primary i, then its replicas. */
static void show_shard(const cli_opts *o, const rlk__slots *t, size_t i, int tls, char *shown)
{
    show_node(o, t, i, tls);
    shown[i] = 1;
    for (size_t j = 0; j < t->nnodes; j++)
        if (!shown[j] && t->nodes[j].primary == i) {
            show_node(o, t, j, tls);
            shown[j] = 1;
        }
}

/* The cluster c's server is a node of: a summary, then each primary and
 * its replicas, each node PINGed.  0, or an exit code when c failed. */
static int show_cluster(const cli_opts *o, rlk_conn *c)
{
    rlk__slots t;
    const char *source;
    char err[400], shown[RLK__SLOTS_MAX_NODES] = {0}, owns[RLK__SLOTS_MAX_NODES] = {0};
    int tls = rlk_conn_get_info(c)->tls_version != NULL;
    unsigned served = 0;
    size_t primaries = 0;
    rlk__slots_init(&t);
    int r = cli_cluster_read(o, c, &t, &source, err, sizeof err);
    if (r == RLK_ERR_PROTO) {
        /* The server answered: ping's question.  What it would not say
         * is said instead of the nodes. */
        printf("cluster:    yes; the nodes cannot be read: %s\n", err);
        return 0;
    }
    if (r != RLK_OK) {
        cli_err("%s", err);
        return cli_exit_for(r);
    }
    for (unsigned s = 0; s < RLK__NSLOTS; s++) {
        if (t.owner[s] == RLK__SLOTS_NONE) continue;
        served++;
        primaries += !owns[t.owner[s]];
        owns[t.owner[s]] = 1;
    }
    printf("cluster:    %zu node%s, %u of %d slots served by %zu primar%s (%s)\n", t.nnodes,
           t.nnodes == 1 ? "" : "s", served, RLK__NSLOTS, primaries, primaries == 1 ? "y" : "ies",
           source);
    /* Each primary followed by its replicas, in the order of their
     * slots; then the primaries serving none (a failed one), then any
     * node of no known shard. */
    for (unsigned s = 0; s < RLK__NSLOTS; s++)
        if (t.owner[s] != RLK__SLOTS_NONE && !shown[t.owner[s]])
            show_shard(o, &t, t.owner[s], tls, shown);
    for (size_t i = 0; i < t.nnodes; i++)
        if (!shown[i] && t.nodes[i].role == RLK__ROLE_PRIMARY) show_shard(o, &t, i, tls, shown);
    for (size_t j = 0; j < t.nnodes; j++)
        if (!shown[j]) show_node(o, &t, j, tls);
    rlk__slots_free(&t);
    return 0;
}

/* Behind Sentinel: what each sentinel names, and how many agree with
 * the primary reached (peer); one that disagrees or does not answer is
 * shown, not a failure (the primary answered).  0. */
static int show_sentinels(const cli_opts *o, const char *peer)
{
    rlk__sentinel_url su;
    if (rlk__sentinel_url_split(&su, o->final_url, NULL, 0) != RLK_OK) return 0;
    const char *argv[3] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", su.master};
    size_t agree = 0;
    printf("sentinels:\n");
    for (size_t i = 0; i < su.n; i++) {
        rlk_conn *c = cli_conn_new(o, su.sentinels[i]);
        rlk_resp_value *v = NULL;
        char host[256];
        int port = 0;
        int r = c ? rlk_conn_connect(c) : RLK_ERR_NOMEM;
        if (r == RLK_OK) r = rlk_conn_command(c, &v, 3, argv, NULL);
        if (r == RLK_OK) port = rlk__addr_reply(v, host);
        const char *at = strstr(su.sentinels[i], "@");
        at = at ? at + 1 : strstr(su.sentinels[i], "//") + 2;
        if (port) {
            char named[300];
            snprintf(named, sizeof named, "%s:%d", host, port);
            int same = strcmp(named, peer) == 0;
            agree += same;
            printf("  %-21s names %s%s\n", at, named, same ? "" : " (not the primary reached)");
        } else {
            printf("  %-21s %s\n", at, r != RLK_OK ? rlk_conn_errmsg(c) : "does not know the name");
        }
        rlk_conn_free(c);
    }
    printf("agreed:     %zu of %zu sentinels name %s as '%s'\n", agree, su.n, peer, su.master);
    rlk__sentinel_url_free(&su);
    return 0;
}

/* Under Redlock: each server, whether it answers and how fast; 0 when a
 * majority does, else 69. */
static int show_redlock(cli_opts *o)
{
    int code = cli_resolve(o);
    if (code) return code;
    size_t n = 1 + (size_t)o->nseeds, up = 0;
    printf("redlock:    %zu servers, a majority of %zu needed\n", n, n / 2 + 1);
    for (size_t i = 0; i < n; i++) {
        char url[1100], err[400];
        const char *name = i ? o->seeds[i - 1] : o->final_url;
        snprintf(url, sizeof url, "%s", name);
        if (i) {
            rlk__url su;
            if (rlk__url_parse(&su, name, err, sizeof err) == RLK_OK && su.kind != RLK__URL_UNIX) {
                const char *nu = cli_node_url(o, su.host, su.port);
                if (nu) snprintf(url, sizeof url, "%s", nu);
            }
            rlk__url_free(&su);
        }
        const char *at = strstr(name, "@");
        at = at ? at + 1 : strstr(name, "//") ? strstr(name, "//") + 2 : name;
        rlk_conn *c = cli_conn_new(o, url);
        int r = c ? rlk_conn_connect(c) : RLK_ERR_NOMEM;
        double rtt = 0;
        snprintf(err, sizeof err, "%s", c ? rlk_conn_errmsg(c) : "out of memory");
        if (r == RLK_OK) r = round_trip(c, &rtt, err, sizeof err);
        if (r == RLK_OK) {
            const rlk_conn_info *in = rlk_conn_get_info(c);
            up++;
            printf("  %-21s %s %s, RESP%d, %.3f ms\n", at, in->server[0] ? in->server : "server",
                   in->version[0] ? in->version : "(version unknown)", in->protocol, rtt);
        } else {
            printf("  %-21s %s\n", at, err);
        }
        rlk_conn_free(c);
    }
    printf("answer:     %zu of %zu servers\n", up, n);
    if (up > n / 2) return 0;
    cli_err("no majority of the Redlock servers answers (%zu of %zu)", up, n);
    return CLI_EX_UNAVAILABLE;
}

int cmd_ping(cli_opts *o, int argc, char **argv)
{
    int next;
    int r = cli_getopt(o, argc, argv, NULL, NULL, NULL, &next);
    if (r) return r;
    if (next < argc) return cli_usage_error("ping takes no arguments");
    if (o->redlock) return show_redlock(o);

    int status;
    rlk_conn *c = cli_connect(o, &status);
    if (!c) return status;
    const rlk_conn_info *in = rlk_conn_get_info(c);
    char server[64], version[64], user[128], err[400];
    snprintf(server, sizeof server, "%s", in->server[0] ? in->server : "");
    snprintf(version, sizeof version, "%s", in->version);
    snprintf(user, sizeof user, "%s", in->user);
    rlk_resp_value *v;

    double rtt;
    status = round_trip(c, &rtt, err, sizeof err);
    if (status != RLK_OK) {
        cli_err("%s", err);
        rlk_conn_free(c);
        return cli_exit_for(status);
    }

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
    printf("round trip: %.3f ms (median of %d PINGs)\n", rtt, PINGS);
    /* A cluster: its nodes too.  Another server: what it printed before
     * clusters were known, nothing more. */
    r = cli_is_cluster(c)                       ? show_cluster(o, c)
        : rlk__url_is_sentinel(o->final_url) ? show_sentinels(o, in->peer)
                                             : 0;
    rlk_conn_free(c);
    return r;
}
