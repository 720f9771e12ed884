/* SPDX-License-Identifier: BSD-3-Clause */
/* The route (see route.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "route.h"
#include "clock.h"
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

int rlk__route_init(rlk__route *r, int kind, size_t n, const rlk_conn_config *conns,
                    const rlk_session_config *sc)
{
    memset(r, 0, sizeof *r);
    if (n == 0 || (kind == RLK__ROUTE_ONE && n != 1) ||
        (kind != RLK__ROUTE_ONE && kind != RLK__ROUTE_SET) || n > 64) {
        snprintf(r->err, sizeof r->err, "route: %zu servers for this kind", n);
        return RLK_ERR_INVALID;
    }
    r->drivers = rlk__malloc(n * sizeof *r->drivers);
    if (!r->drivers) {
        snprintf(r->err, sizeof r->err, "out of memory");
        return RLK_ERR_NOMEM;
    }
    r->kind = kind;
    for (size_t i = 0; i < n; i++) {
        int st = rlk__driver_init(&r->drivers[i], &conns[i], sc);
        r->n = i + 1; /* destroyed with the others, whatever happened */
        if (st != RLK_OK) {
            snprintf(r->err, sizeof r->err, "server %zu: %s", i + 1, r->drivers[i].err);
            return st;
        }
    }
    return RLK_OK;
}

void rlk__route_destroy(rlk__route *r)
{
    for (size_t i = 0; i < r->n; i++) rlk__driver_destroy(&r->drivers[i]);
    rlk__free(r->drivers);
    r->drivers = NULL;
    r->n = 0;
}

size_t rlk__route_servers(rlk__route *r, const char *key, rlk__driver **out, size_t max)
{
    (void)key; /* neither kind yet looks at the key: Cluster's will */
    size_t k = 0;
    for (size_t i = 0; i < r->n && k < max; i++) out[k++] = &r->drivers[i];
    return k;
}

static int note(rlk__route *r, int first, int status, size_t i)
{
    if (first != RLK_OK || status == RLK_OK) return first;
    snprintf(r->err, sizeof r->err, "server %zu: %s", i + 1, r->drivers[i].err);
    return status;
}

int rlk__route_step(rlk__route *r, int64_t until)
{
    struct pollfd p[64];
    int64_t wake = until;
    int first = RLK_OK;
    for (size_t i = 0; i < r->n; i++) {
        int64_t w;
        first = note(r, first, rlk__driver_prepare(&r->drivers[i], &p[i], until, &w), i);
        if (w >= 0 && (wake < 0 || w < wake)) wake = w;
    }
    if (rlk__poll_until(p, r->n, wake) < 0) {
        snprintf(r->err, sizeof r->err, "poll: %s", strerror(errno));
        return RLK_ERR_IO;
    }
    for (size_t i = 0; i < r->n; i++)
        first = note(r, first, rlk__driver_after(&r->drivers[i], &p[i]), i);
    return first;
}

int rlk__route_run(rlk__route *r, int (*done)(void *ctx), void *ctx, int64_t until)
{
    for (;;) {
        if (done(ctx)) return RLK_OK;
        if (until >= 0 && rlk__now_ms() >= until) return RLK_ERR_TIMEOUT;
        int st = rlk__route_step(r, until);
        int live = 0;
        for (size_t i = 0; i < r->n; i++) live += rlk__driver_can_go_on(&r->drivers[i]);
        if (!live) return st != RLK_OK ? st : RLK_ERR_CLOSED;
    }
}
