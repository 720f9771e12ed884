/* SPDX-License-Identifier: BSD-3-Clause */
/* Which server a connection talks to, and what it can do (serverinfo.h):
 * the readings of HELLO's and INFO's replies, with no connection (the
 * detection over one is script.c's). */
#include "serverinfo.h"

#include <string.h>
#include <strings.h>

/* Decimal digits at *p as a version part (at most 6 digits: no overflow,
 * and no server counts further).  -1 when there are none or too many. */
static int version_part(const char **p)
{
    const char *s = *p;
    int v = 0, n = 0;
    while (*s >= '0' && *s <= '9') {
        if (++n > 6) return -1;
        v = v * 10 + (*s++ - '0');
    }
    if (!n) return -1;
    *p = s;
    return v;
}

/* "major.minor[.patch][-suffix]"; 0 when s is anything else. */
static int parse_version(const char *s, int v[3])
{
    int i = 0, x = 0;
    v[0] = v[1] = v[2] = 0;
    for (; s; i++) {
        if ((x = version_part(&s)) < 0) break;
        v[i] = x;
        if (*s != '.' || i == 2) break;
        s++;
    }
    if (s && x >= 0 && i >= 1 && (!*s || *s == '-')) return 1;
    v[0] = v[1] = v[2] = 0;
    return 0;
}

/* Whether version v is major.minor or later. */
static int at_least(const int v[3], int major, int minor)
{
    return v[0] > major || (v[0] == major && v[1] >= minor);
}

void rlk__server_facts(rlk__server *out, const char *name, const char *version)
{
    int v[3];
    int known = parse_version(version, v);
    out->flavor = RLK__FLAVOR_UNKNOWN;
    if (name && strcasecmp(name, "redis") == 0) out->flavor = RLK__FLAVOR_REDIS;
    else if (name && strcasecmp(name, "valkey") == 0) out->flavor = RLK__FLAVOR_VALKEY;
    out->major = v[0];
    out->minor = v[1];
    out->patch = v[2];
    out->caps = 0;
    if (!known) return;
    if (out->flavor == RLK__FLAVOR_REDIS) {
        if (at_least(v, 7, 0))
            out->caps |= RLK_CAP_SCRIPT_FLAGS | RLK_CAP_FUNCTIONS | RLK_CAP_NO_EVICT;
        if (at_least(v, 8, 4)) out->caps |= RLK_CAP_SET_IFEQ | RLK_CAP_DELEX_IFEQ;
    } else if (out->flavor == RLK__FLAVOR_VALKEY) {
        if (at_least(v, 7, 2))
            out->caps |= RLK_CAP_SCRIPT_FLAGS | RLK_CAP_FUNCTIONS | RLK_CAP_NO_EVICT;
        if (at_least(v, 8, 1)) out->caps |= RLK_CAP_SET_IFEQ;
        if (at_least(v, 9, 0)) out->caps |= RLK_CAP_DELIFEQ;
        if (at_least(v, 9, 2)) out->caps |= RLK_CAP_DELEX_IFEQ;
    }
}

/* v's text NUL-terminated into out, cut to n - 1 bytes. */
static void copy_str(char *out, size_t n, const rlk_resp_value *v)
{
    size_t m = v->len < n - 1 ? v->len : n - 1;
    memcpy(out, v->str, m);
    out[m] = '\0';
}

static int key_is(const rlk_resp_value *k, const char *s)
{
    size_t n = strlen(s);
    return (k->type == RLK_RESP_BULK || k->type == RLK_RESP_SIMPLE) && k->len == n &&
           strncasecmp(k->str, s, n) == 0;
}

void rlk__hello_info(rlk_conn_info *info, int *proto, const rlk_resp_value *m)
{
    const rlk_resp_value *k = m && (m->type == RLK_RESP_MAP || m->type == RLK_RESP_ARRAY)
                                  ? m->child
                                  : NULL;
    for (; k && k->next; k = k->next->next) {
        const rlk_resp_value *v = k->next;
        int text = v->type == RLK_RESP_BULK || v->type == RLK_RESP_SIMPLE;
        if (key_is(k, "server") && text) copy_str(info->server, sizeof info->server, v);
        else if (key_is(k, "version") && text) copy_str(info->version, sizeof info->version, v);
        else if (key_is(k, "mode") && text) copy_str(info->mode, sizeof info->mode, v);
        else if (key_is(k, "id") && v->type == RLK_RESP_INTEGER) info->client_id = v->integer;
        else if (key_is(k, "proto") && v->type == RLK_RESP_INTEGER && proto)
            *proto = (int)v->integer;
    }
}

void rlk__server_from_hello(rlk__server *out, const rlk_resp_value *m)
{
    rlk_conn_info info;
    memset(&info, 0, sizeof info);
    rlk__hello_info(&info, NULL, m);
    rlk__server_facts(out, info.server[0] ? info.server : NULL,
                      info.version[0] ? info.version : NULL);
    out->conn = NULL;
    out->generation = 0;
}

/* The value of "key:" on a line of INFO's text, NUL-terminated into out;
 * 0 when no line has it. */
static int info_field(const char *text, size_t len, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && text[end] != '\n') end++;
        if (end - i > kl && memcmp(text + i, key, kl) == 0 && text[i + kl] == ':') {
            size_t from = i + kl + 1, to = end;
            if (to > from && text[to - 1] == '\r') to--;
            size_t m = to - from < n - 1 ? to - from : n - 1;
            memcpy(out, text + from, m);
            out[m] = '\0';
            return 1;
        }
        i = end + 1;
    }
    return 0;
}

/* Redis and every Valkey answer INFO server with redis_version; Valkey
 * (7.2.5 on) adds server_name and valkey_version, its own version. */
void rlk__server_from_info(rlk__server *out, const char *text, size_t len)
{
    char name[32] = "redis", version[32] = "";
    int valkey = info_field(text, len, "valkey_version", version, sizeof version);
    if (valkey || (info_field(text, len, "server_name", name, sizeof name) &&
                   strcasecmp(name, "valkey") == 0))
        strcpy(name, "valkey");
    if (!valkey) info_field(text, len, "redis_version", version, sizeof version);
    rlk__server_facts(out, name, version);
}
