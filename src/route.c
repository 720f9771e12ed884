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
                    const rlk__core_config *cc)
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
        int st = rlk__driver_init(&r->drivers[i], &conns[i], cc);
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

size_t rlk__route_cores(rlk__route *r, unsigned slot, rlk__core **out, size_t max)
{
    (void)slot; /* neither kind yet looks at the slot: Cluster's will */
    size_t k = 0;
    for (size_t i = 0; i < r->n && k < max; i++)
        if (r->drivers[i].core) out[k++] = r->drivers[i].core;
    return k;
}

rlk__core *rlk__route_core(rlk__route *r, size_t i) { return r->drivers[i].core; }

static int note(rlk__route *r, int first, int status, size_t i)
{
    if (first != RLK_OK || status == RLK_OK) return first;
    snprintf(r->err, sizeof r->err, "server %zu: %s", i + 1, r->drivers[i].err);
    return status;
}

int rlk__route_prepare(rlk__route *r, struct pollfd *p, int64_t until, int64_t *wake)
{
    int first = RLK_OK;
    *wake = until;
    for (size_t i = 0; i < r->n; i++) {
        int64_t w;
        first = note(r, first, rlk__driver_prepare(&r->drivers[i], &p[i], until, &w), i);
        if (w >= 0 && (*wake < 0 || w < *wake)) *wake = w;
    }
    return first;
}

int rlk__route_after(rlk__route *r, const struct pollfd *p)
{
    int first = RLK_OK;
    for (size_t i = 0; i < r->n; i++)
        first = note(r, first, rlk__driver_after(&r->drivers[i], &p[i]), i);
    return first;
}

int rlk__route_step(rlk__route *r, int64_t until)
{
    struct pollfd p[64];
    int64_t wake;
    int first = rlk__route_prepare(r, p, until, &wake);
    if (rlk__poll_until(p, r->n, wake) < 0) {
        snprintf(r->err, sizeof r->err, "poll: %s", strerror(errno));
        return RLK_ERR_IO;
    }
    int second = rlk__route_after(r, p);
    return first != RLK_OK ? first : second;
}

int rlk__route_turn_alone(rlk__route *r, int64_t until)
{
    if (r->n != 1) return rlk__route_step(r, until);
    int st = rlk__driver_turn_alone(&r->drivers[0], until);
    return note(r, RLK_OK, st, 0);
}

int rlk__route_can_go_on(const rlk__route *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (rlk__driver_can_go_on(&r->drivers[i])) return 1;
    return 0;
}

int rlk__route_run(rlk__route *r, int (*done)(void *ctx), void *ctx, int64_t until)
{
    for (;;) {
        if (done(ctx)) return RLK_OK;
        if (until >= 0 && rlk__now_ms() >= until) return RLK_ERR_TIMEOUT;
        int st = rlk__route_step(r, until);
        if (!rlk__route_can_go_on(r)) return st != RLK_OK ? st : RLK_ERR_CLOSED;
    }
}

void rlk__route_health_of(const rlk__route *r, size_t i, rlk__route_health *h)
{
    const rlk__driver *d = &r->drivers[i];
    h->up = d->up;
    h->connecting = rlk__driver_connecting(d);
    h->fails = d->fails;
    h->last = d->last;
    h->fatal = d->fatal;
    h->connects = d->connects;
    h->retry_at = d->retry_at;
    h->err = d->err;
}

int rlk__route_fd(const rlk__route *r, size_t i) { return rlk__driver_fd(&r->drivers[i]); }

void rlk__route_peer(const rlk__route *r, size_t i, rlk_conn_info *info)
{
    const rlk__driver *d = &r->drivers[i];
    snprintf(info->peer, sizeof info->peer, "%s", d->t.peer);
    info->tls_version = rlk__tls_version(&d->t);
    info->tls_cipher = rlk__tls_cipher(&d->t);
}

void rlk__route_close(rlk__route *r, size_t i) { rlk__driver_close(&r->drivers[i]); }

int rlk__route_connect_through(rlk__route *r, size_t i)
{
    return rlk__driver_connect_through(&r->drivers[i]);
}
