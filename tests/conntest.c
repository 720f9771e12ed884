/* SPDX-License-Identifier: BSD-3-Clause */
/* The helpers of conntest.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "testlib.h"

#include "conntest.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cfg_init(rlk_conn_config *cfg, const char *url)
{
    rlk_conn_config_init(cfg);
    cfg->url = url;
    cfg->connect_timeout_ms = LONG_MS;
    cfg->command_timeout_ms = LONG_MS;
}

rlk_conn *connect_url(const char *url, int protocol,
                      void (*on_push)(void *, rlk_conn *, const rlk_resp_value *),
                      void *ctx, int line)
{
    rlk_conn_config cfg;
    rlk_conn *c;
    int rc;
    cfg_init(&cfg, url);
    cfg.protocol = protocol;
    cfg.on_push = on_push;
    cfg.ctx = ctx;
    c = rlk_conn_new(&cfg);
    if (!tl_ok(c != NULL, __FILE__, line, "rlk_conn_new")) return NULL;
    rc = rlk_conn_connect(c);
    if (!tl_ok(rc == RLK_OK, __FILE__, line, "connect %s: %d %s", url, rc, rlk_conn_errmsg(c))) {
        rlk_conn_free(c);
        return NULL;
    }
    return c;
}

int collect_args(const char **argv, va_list ap)
{
    int argc = 0;
    while (argc < 32 && (argv[argc] = va_arg(ap, const char *)) != NULL) argc++;
    return argc;
}

rlk_resp_value *run_cmd(rlk_conn *c, int line, ...)
{
    const char *argv[33];
    int argc, rc;
    rlk_resp_value *v = NULL;
    va_list ap;
    va_start(ap, line);
    argc = collect_args(argv, ap);
    va_end(ap);
    if (!c) return NULL;
    rc = rlk_conn_command(c, &v, argc, argv, NULL);
    if (!tl_ok(rc == RLK_OK && v != NULL, __FILE__, line, "%s: %d %s", argv[0], rc,
               rlk_conn_errmsg(c)))
        return NULL;
    return v;
}

long long cmd_int(rlk_conn *c, int line, ...)
{
    const char *argv[33];
    int argc, rc;
    rlk_resp_value *v = NULL;
    va_list ap;
    va_start(ap, line);
    argc = collect_args(argv, ap);
    va_end(ap);
    if (!c) return LLONG_MIN;
    rc = rlk_conn_command(c, &v, argc, argv, NULL);
    if (!tl_ok(rc == RLK_OK && v && v->type == RLK_RESP_INTEGER, __FILE__, line,
               "%s: not an integer: %d %s (type %c %.*s)", argv[0], rc, rlk_conn_errmsg(c),
               v ? v->type : '?', v && v->str ? (int)v->len : 0, v && v->str ? v->str : ""))
        return LLONG_MIN;
    return v->integer;
}

int cmd_str(rlk_conn *c, char *out, size_t n, int line, ...)
{
    const char *argv[33];
    int argc, rc;
    rlk_resp_value *v = NULL;
    va_list ap;
    va_start(ap, line);
    argc = collect_args(argv, ap);
    va_end(ap);
    out[0] = '\0';
    if (!c) return -1;
    rc = rlk_conn_command(c, &v, argc, argv, NULL);
    if (!tl_ok(rc == RLK_OK && v, __FILE__, line, "%s: %d %s", argv[0], rc, rlk_conn_errmsg(c)))
        return -1;
    if (v->type == RLK_RESP_NULL || (v->type == RLK_RESP_BULK && !v->str)) return 0;
    if (v->type == RLK_RESP_BULK || v->type == RLK_RESP_SIMPLE || v->type == RLK_RESP_VERBATIM) {
        size_t len = v->len < n - 1 ? v->len : n - 1;
        memcpy(out, v->str, len);
        out[len] = '\0';
        return 1;
    }
    tl_fail(__FILE__, line, "%s: not a string (type %c)", argv[0], v->type);
    return -1;
}

void url_of(char *out, size_t n, const ts_server *s)
{
    snprintf(out, n, "redis://127.0.0.1:%d", s->port);
}

/* The value of INFO's line "field:value" in text[0..len), into out. */
static int info_field(const char *text, size_t len, const char *field, char *out, size_t n)
{
    size_t fl = strlen(field);
    for (size_t i = 0; i + fl < len; i++) {
        if ((i > 0 && text[i - 1] != '\n') || memcmp(text + i, field, fl) != 0 ||
            text[i + fl] != ':')
            continue;
        size_t j = i + fl + 1, k = 0;
        while (j < len && text[j] != '\r' && text[j] != '\n' && k + 1 < n) out[k++] = text[j++];
        out[k] = '\0';
        return 1;
    }
    out[0] = '\0';
    return 0;
}

int server_identity(rlk_conn *c, struct server_id *out, int line)
{
    char name[32], vv[32], rv[32];
    rlk_resp_value *v = run_cmd(c, line, "INFO", "server", (const char *)NULL);
    memset(out, 0, sizeof *out);
    if (!v) return 0;
    if (!tl_ok(v->str != NULL, __FILE__, line, "INFO server: not a string (type %c)", v->type))
        return 0;
    info_field(v->str, v->len, "server_name", name, sizeof name);
    info_field(v->str, v->len, "valkey_version", vv, sizeof vv);
    info_field(v->str, v->len, "redis_version", rv, sizeof rv);
    if (strcmp(name, "valkey") == 0 || vv[0]) {
        snprintf(out->name, sizeof out->name, "valkey");
        snprintf(out->version, sizeof out->version, "%s", vv);
    } else {
        snprintf(out->name, sizeof out->name, "redis");
        snprintf(out->version, sizeof out->version, "%s", rv);
    }
    if (!tl_ok(sscanf(out->version, "%d.%d.%d", &out->major, &out->minor, &out->patch) == 3,
               __FILE__, line, "INFO server: %s version '%s' is not N.N.N", out->name,
               out->version))
        return 0;
    return 1;
}

static int takes(rlk_conn *c, int argc, const char **argv)
{
    rlk_resp_value *v = NULL;
    int rc = rlk_conn_command(c, &v, argc, argv, NULL);
    return rc == RLK_OK && v && v->type != RLK_RESP_ERROR && v->type != RLK_RESP_BLOB_ERROR;
}

int server_has_set_ifeq(rlk_conn *c)
{
    const char *argv[] = {"SET", "conntest:probe", "x", "IFEQ", "y"};
    return takes(c, 5, argv);
}

int server_has_delifeq(rlk_conn *c)
{
    const char *argv[] = {"DELIFEQ", "conntest:probe", "y"};
    return takes(c, 3, argv);
}

int server_has_delex_ifeq(rlk_conn *c)
{
    const char *argv[] = {"DELEX", "conntest:probe", "IFEQ", "y"};
    return takes(c, 4, argv);
}
