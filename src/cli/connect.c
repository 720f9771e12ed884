/* SPDX-License-Identifier: BSD-3-Clause */
/* Connecting as the options and the configuration say (cli.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"

rlk_conn *cli_conn_new(const cli_opts *o, const char *url)
{
    rlk_conn_config cfg;
    rlk_conn_config_init(&cfg);
    cfg.url = url;
    cfg.tls = o->tls;
    cfg.client_name = "resplock";
    cfg.connect_timeout_ms = (int)o->timeout_ms;
    cfg.command_timeout_ms = (int)o->timeout_ms;
    cfg.reconnect_attempts = -1;
    return rlk_conn_new(&cfg);
}

void cli_insecure_warning(const cli_opts *o)
{
    static int said;
    if (o->tls.insecure && !said)
        cli_err("warning: --tls-insecure: the server's certificate is not verified");
    said = said || o->tls.insecure;
}

rlk_conn *cli_connect(cli_opts *o, int *code)
{
    *code = cli_resolve(o);
    if (*code) return NULL;
    cli_insecure_warning(o);
    rlk_conn *c = cli_conn_new(o, o->final_url);
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
