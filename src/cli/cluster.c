/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A Redis Cluster's nodes and slots for `ping` and `status` (cli.h): read
 * over one connection into the library's slot table (slots.h), the same
 * parsing the client routes by.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"
#include "slots.h"
#include "url.h"

#include <stdio.h>
#include <string.h>

static int is_text(const rlk_resp_value *v)
{
    return v->type == RLK_RESP_BULK || v->type == RLK_RESP_VERBATIM;
}

int cli_is_cluster(rlk_conn *c)
{
    /* HELLO said (RESP3); else INFO, which RESP2 has too. */
    const rlk_conn_info *in = rlk_conn_get_info(c);
    if (in && in->mode[0]) return strcmp(in->mode, "cluster") == 0;
    rlk_resp_value *v;
    const char *info[] = {"INFO", "cluster"};
    char enabled[8] = "";
    /* An error (INFO renamed, or denied by an ACL) says nothing: as a
     * server that is no cluster, which the library's replies would then
     * show (MOVED). */
    if (rlk_conn_command(c, &v, 2, info, NULL) != RLK_OK || !is_text(v)) return 0;
    cli_info_field(v, "cluster_enabled", enabled, sizeof enabled);
    return strcmp(enabled, "1") == 0;
}

int cli_cluster_read(const cli_opts *o, rlk_conn *c, rlk__slots *t, const char **source,
                     char *err, size_t n)
{
    const char *shards[] = {"CLUSTER", "SHARDS"}, *slots[] = {"CLUSTER", "SLOTS"};
    rlk_resp_value *v;
    rlk__url u;
    char uerr[8];
    int tls = rlk_conn_get_info(c)->tls_version != NULL;
    /* The host the replies' empty endpoints stand for: the one asked. */
    int have_url = rlk__url_parse(&u, o->final_url, uerr, sizeof uerr) == RLK_OK;
    const char *origin = have_url && u.kind != RLK__URL_UNIX ? u.host : NULL;
    int r = rlk_conn_command(c, &v, 2, shards, NULL);
    *source = "CLUSTER SHARDS";
    if (r == RLK_OK && rlk_reply_error_class(v) != RLK_EC_NONE) {
        /* Refused (older than Redis 7, or not allowed): SLOTS says where
         * the slots are, not the nodes' health. */
        *source = "CLUSTER SLOTS";
        r = rlk_conn_command(c, &v, 2, slots, NULL);
    }
    if (r != RLK_OK) {
        snprintf(err, n, "%s: %s", *source, rlk_conn_errmsg(c));
    } else if (rlk_reply_error_class(v) != RLK_EC_NONE) {
        snprintf(err, n, "%s: %.*s", *source, (int)(v->len > 200 ? 200 : v->len), v->str);
        r = RLK_ERR_PROTO;
    } else {
        r = strcmp(*source, "CLUSTER SHARDS") == 0 ? rlk__slots_from_shards(t, v, origin)
                                                   : rlk__slots_from_slots(t, v, origin, tls);
        if (r != RLK_OK) snprintf(err, n, "%s: %s", *source, t->err);
        if (r != RLK_OK && r != RLK_ERR_NOMEM) r = RLK_ERR_PROTO;
    }
    if (have_url) rlk__url_free(&u);
    return r;
}

int cli_node_port(const rlk__node *n, int tls)
{
    return tls ? n->tls_port : n->port;
}

void cli_node_addr(const rlk__node *n, int tls, char *out, size_t cap)
{
    const char *h = n->host[0] ? n->host : "?";
    snprintf(out, cap, strchr(h, ':') ? "[%s]:%d" : "%s:%d", h, cli_node_port(n, tls));
}
