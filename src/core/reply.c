/* SPDX-License-Identifier: BSD-3-Clause */
/* Readings of one reply (see reply.h). */
#include "reply.h"

#include <string.h>

int rlk__is_error(const rlk_resp_value *v)
{
    return v && (v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR);
}

int rlk__int_at(const rlk_resp_value *v, size_t i, int64_t *out)
{
    const rlk_resp_value *e = rlk_resp_value_at(v, i);
    if (!e || e->type != RLK_RESP_INTEGER) return -1;
    *out = e->integer;
    return 0;
}

int rlk__str_is(const rlk_resp_value *v, const char *s, size_t n)
{
    return v && (v->type == RLK_RESP_SIMPLE || v->type == RLK_RESP_BULK) && v->len == n &&
           memcmp(v->str, s, n) == 0;
}

/* The one classifier of server errors: every layer (the core's script
 * calls, the route's redirects, the primitives' retries and refusals)
 * reads an error's class here, by its code, the first word, never by a
 * word elsewhere in its text (a key's name the server echoes). */
rlk_error_class rlk__reply_class(const rlk_resp_value *v)
{
    if (!v || !rlk__is_error(v)) return RLK_EC_NONE;
    static const struct {
        const char *code;
        rlk_error_class ec;
    } codes[] = {
        {"MOVED", RLK_EC_MOVED},         {"ASK", RLK_EC_ASK},
        {"NOSCRIPT", RLK_EC_NOSCRIPT},   {"LOADING", RLK_EC_LOADING},
        {"BUSY", RLK_EC_BUSY},           {"READONLY", RLK_EC_READONLY},
        {"WRONGPASS", RLK_EC_WRONGPASS}, {"NOAUTH", RLK_EC_NOAUTH},
        {"TRYAGAIN", RLK_EC_TRYAGAIN},   {"CLUSTERDOWN", RLK_EC_CLUSTERDOWN},
        {"CROSSSLOT", RLK_EC_CROSSSLOT}, {"OOM", RLK_EC_OOM},
        {"NOPERM", RLK_EC_NOPERM},
    };
    size_t w = 0;
    while (w < v->len && v->str[w] != ' ') w++;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (strlen(codes[i].code) == w && memcmp(v->str, codes[i].code, w) == 0)
            return codes[i].ec;
    return RLK_EC_OTHER;
}

int rlk__addr_reply(const rlk_resp_value *v, char *host)
{
    if (!v || v->type != RLK_RESP_ARRAY || v->len != 2) return 0;
    const rlk_resp_value *h = rlk_resp_value_at(v, 0), *p = rlk_resp_value_at(v, 1);
    if (h->type != RLK_RESP_BULK || !h->len || h->len > 255 || memchr(h->str, '\0', h->len) ||
        p->type != RLK_RESP_BULK || !p->len || p->len > 5)
        return 0;
    long port = 0;
    for (size_t i = 0; i < p->len; i++) {
        if (p->str[i] < '0' || p->str[i] > '9') return 0;
        port = port * 10 + (p->str[i] - '0');
    }
    if (port < 1 || port > 65535) return 0;
    memcpy(host, h->str, h->len);
    host[h->len] = '\0';
    return (int)port;
}
