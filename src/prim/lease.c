/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lease registry: validity, renewal rounds planned and applied, loss
 * reported.  No I/O here (see lease.h); times are monotonic milliseconds.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "lease.h"
#include "clock.h"
#include "internal.h"
#include "keys.h"
#include "reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rlk__leases_init(rlk__leases *reg, const rlk_client_config *cfg)
{
    memset(reg, 0, sizeof *reg);
    reg->cfg = cfg;
    return pthread_mutex_init(&reg->mu, NULL) == 0 ? 0 : -1;
}

void rlk__leases_destroy(rlk__leases *reg) { pthread_mutex_destroy(&reg->mu); }

int64_t rlk__leases_now(const rlk__leases *reg)
{
    return reg->manual_clock ? reg->clock_now : rlk__now_ms();
}

void rlk__leases_clock(rlk__leases *reg, int64_t now)
{
    if (now > reg->clock_now) reg->clock_now = now;
}

/* ------------------------------------------------------------------ */
/* Timing                                                               */

/* When to report a lost lease, by default: a tenth of the TTL (at least
 * 5 ms) before its validity ends, so the holder still has time to stop;
 * rlk_lock_options.lost_margin_ms asks for more. */
int64_t rlk__lease_margin(int64_t ttl)
{
    int64_t m = ttl / 10;
    return m < 5 ? 5 : m;
}

int64_t rlk_plan_drift_ms(const rlk_client_config *cfg, int64_t ttl_ms)
{
    return ttl_ms / 100 + (cfg && cfg->drift_ms ? cfg->drift_ms : RLK__DEFAULT_DRIFT_MS);
}

int64_t rlk_plan_valid_ms(const rlk_client_config *cfg, int64_t ttl_ms)
{
    return ttl_ms - rlk_plan_drift_ms(cfg, ttl_ms);
}

int64_t rlk_plan_renew_period_ms(const rlk_client_config *cfg, int64_t ttl_ms)
{
    return ttl_ms / (cfg && cfg->renew_divisor > 0 ? cfg->renew_divisor : 3);
}

int64_t rlk_plan_lost_after_ms(const rlk_client_config *cfg, int64_t ttl_ms,
                               int64_t lost_margin_ms)
{
    int64_t m = rlk__lease_margin(ttl_ms);
    return rlk_plan_valid_ms(cfg, ttl_ms) - (lost_margin_ms > m ? lost_margin_ms : m);
}

/* valid_until and lost are read by rlk_lock_remaining_ms and
 * rlk_lock_is_lost from any thread while the watchdog thread writes them. */
void rlk__lease_set_validity(rlk__leases *reg, rlk__lease *l, int64_t start, int64_t ttl)
{
    reg->gen++;
    __atomic_store_n(&l->valid_until, start + rlk_plan_valid_ms(reg->cfg, ttl),
                     __ATOMIC_RELAXED);
    l->lost_at = start + rlk_plan_lost_after_ms(reg->cfg, ttl, l->margin);
    l->renew_at = start + rlk_plan_renew_period_ms(reg->cfg, ttl);
    /* With a large margin, the first renewal must still come before the
     * lease is reported lost. */
    if (l->renew_at > l->lost_at - (l->lost_at - start) / 3)
        l->renew_at = start + (l->lost_at - start) / 3;
}

/* ------------------------------------------------------------------ */
/* The list, loss                                                       */

void rlk__lease_mark_lost(rlk__leases *reg, rlk__lease *l)
{
    if (l->lost) return;
    reg->gen++;
    __atomic_store_n(&l->lost, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&l->valid_until, 0, __ATOMIC_RELAXED);
    if (l->on_lost && !l->lost_pending) {
        l->lost_pending = 1;
        l->lost_next = reg->lost_head;
        __atomic_store_n(&reg->lost_head, l, __ATOMIC_RELEASE);
    }
}

void rlk__lease_add(rlk__leases *reg, rlk__lease *l)
{
    pthread_mutex_lock(&reg->mu);
    reg->gen++;
    l->prev = NULL;
    l->next = reg->head;
    if (reg->head) reg->head->prev = l;
    reg->head = l;
    pthread_mutex_unlock(&reg->mu);
}

int rlk__lease_unlink(rlk__leases *reg, rlk__lease *l)
{
    reg->gen++;
    if (l->lost_pending) {
        /* An on_lost call removed another lost lease before its turn. */
        for (rlk__lease **pp = &reg->lost_head; *pp; pp = &(*pp)->lost_next)
            if (*pp == l) {
                __atomic_store_n(pp, l->lost_next, __ATOMIC_RELAXED);
                break;
            }
        l->lost_pending = 0;
    }
    if (l->prev) l->prev->next = l->next;
    else if (reg->head == l) reg->head = l->next;
    if (l->next) l->next->prev = l->prev;
    l->prev = l->next = NULL;
    if (l->refs) {
        l->dead = 1;
        return 0;
    }
    return 1;
}

void rlk__leases_notify_lost(rlk__leases *reg, int locked)
{
    /* None lost (the rule): no mutex taken.  One marked lost just after
     * this look is told at the next call, as it would be had it come
     * just after the mutex was let go. */
    if (!locked && !__atomic_load_n(&reg->lost_head, __ATOMIC_ACQUIRE)) return;
    for (;;) {
        if (!locked) pthread_mutex_lock(&reg->mu);
        rlk__lease *l = reg->lost_head;
        if (l) {
            __atomic_store_n(&reg->lost_head, l->lost_next, __ATOMIC_RELAXED);
            l->lost_pending = 0;
        }
        if (!locked) pthread_mutex_unlock(&reg->mu);
        if (!l) return;
        l->on_lost(l->ctx, l->owner);
    }
}

void rlk__leases_expire(rlk__leases *reg, int64_t now)
{
    for (rlk__lease *l = reg->head; l; l = l->next)
        if (l->watchdog && !l->lost && now >= l->lost_at) rlk__lease_mark_lost(reg, l);
}

/* ------------------------------------------------------------------ */
/* Rounds                                                               */

static void round_free(rlk__round *rd)
{
    rlk__free(rd->e);
    rlk__free(rd->reqs);
    rlk__free(rd->argv);
    rlk__free(rd->lens);
    rlk__free(rd->kinds);
    rlk__free(rd->got);
    memset(rd, 0, sizeof *rd);
}

int rlk__round_plan(rlk__leases *reg, int64_t now, int async, rlk__round *rd)
{
    return rlk__round_plan_for(reg, now, async, NULL,
                               __atomic_load_n(&reg->recheck_all, __ATOMIC_RELAXED), rd);
}

int rlk__round_plan_for(rlk__leases *reg, int64_t now, int async, const void *group, int all,
                        rlk__round *rd)
{
    memset(rd, 0, sizeof *rd);
    pthread_mutex_lock(&reg->mu);
    size_t due = 0, n = 0;
    int64_t end = -1;
    for (rlk__lease *l = reg->head; l; l = l->next) {
        if (!l->watchdog || l->lost || (group && l->group != group)) continue;
        if (now >= l->lost_at) {
            rlk__lease_mark_lost(reg, l);
            continue;
        }
        n++;
        if (all || now >= l->renew_at) due++;
        if (end < 0 || l->lost_at < end) end = l->lost_at;
    }
    if (!due) {
        pthread_mutex_unlock(&reg->mu);
        return 0;
    }
    rd->e = rlk__malloc(sizeof *rd->e * n);
    rd->reqs = rlk__malloc(sizeof *rd->reqs * n);
    rd->argv = rlk__malloc(sizeof *rd->argv * 4 * n);
    rd->lens = rlk__malloc(sizeof *rd->lens * 4 * n);
    rd->kinds = rlk__malloc(n);
    rd->got = rlk__malloc(n);
    if (!rd->e || !rd->reqs || !rd->argv || !rd->lens || !rd->kinds || !rd->got) {
        pthread_mutex_unlock(&reg->mu);
        round_free(rd);
        return RLK_ERR_NOMEM;
    }
    size_t i = 0;
    for (rlk__lease *l = reg->head; l; l = l->next) {
        if (!l->watchdog || l->lost || (group && l->group != group)) continue;
        l->refs++;
        l->inflight = async;
        rlk__renewal *w = &rd->e[i++];
        w->l = l;
        w->ttl = l->ttl;
        w->ttls_len = (size_t)snprintf(w->ttls, sizeof w->ttls, "%lld", (long long)l->ttl);
    }
    memset(rd->got, 0, n);
    rd->n = n;
    rd->all = all;
    rd->group = group;
    rd->async = async;
    rd->end = end;
    rd->per_slot = reg->per_slot;
    pthread_mutex_unlock(&reg->mu);
    rd->start = now;
    return 1;
}

/* Orders a round's leases by hash slot, for a cluster. */
static int by_slot(const void *a, const void *b)
{
    unsigned x = ((const rlk__renewal *)a)->l->slot, y = ((const rlk__renewal *)b)->l->slot;
    return x < y ? -1 : x > y;
}

/* Request q's arguments (keys, the kinds, then a token and a TTL per
 * key: 3 cnt + 1) start at argv[3 first + q]. */
/* Whether renewal x goes as SET IFEQ in a native round. */
static int native_one(const rlk__round *rd, const rlk__renewal *x)
{
    return rd->native && x->l->kind == 's' && !x->l->scripted;
}

int rlk__round_native(const rlk__round *rd, size_t i) { return rd->reqs[i].script == NULL; }

size_t rlk__round_requests(rlk__round *rd, const rlk_script *s, int per_slot)
{
    rlk__renewal *e = rd->e;
    size_t n = rd->n, nreq = 0, first = 0, scripted = n;
    if (rd->native) {
        /* The script's leases first, the native ones after them. */
        scripted = 0;
        for (size_t i = 0; i < n; i++)
            if (!native_one(rd, &e[i])) {
                rlk__renewal t = e[scripted];
                e[scripted++] = e[i];
                e[i] = t;
            }
    }
    if (per_slot) qsort(e, scripted, sizeof *e, by_slot);
    while (first < n) {
        size_t cnt = 1;
        while (first < scripted && first + cnt < scripted && cnt < RLK__RENEW_BATCH &&
               (!per_slot || e[first + cnt].l->slot == e[first].l->slot))
            cnt++;
        const char **a = rd->argv + 3 * first + nreq;
        size_t *al = rd->lens + 3 * first + nreq;
        for (size_t i = 0; i < cnt; i++) {
            const rlk__renewal *x = &e[first + i];
            rd->kinds[first + i] = x->l->kind;
            a[i] = x->l->key;
            al[i] = strlen(x->l->key);
            a[cnt + 1 + 2 * i] = x->l->token;
            al[cnt + 1 + 2 * i] = strlen(x->l->token);
            a[cnt + 2 + 2 * i] = x->ttls;
            al[cnt + 2 + 2 * i] = x->ttls_len;
        }
        a[cnt] = rd->kinds + first;
        al[cnt] = cnt;
        rd->reqs[nreq].script = first < scripted ? s : NULL;
        rd->reqs[nreq].nkeys = (int)cnt;
        rd->reqs[nreq].argc = (int)(3 * cnt + 1);
        rd->reqs[nreq].argv = a;
        rd->reqs[nreq].argvlen = al;
        nreq++;
        first += cnt;
    }
    if (per_slot) rd->per_slot = 1;
    rd->nreq = nreq;
    return nreq;
}

int rlk__round_crossslot(const rlk_resp_value *v)
{
    return rlk__reply_class(v) == RLK_EC_CROSSSLOT;
}

/* The next try of a lease whose renewal failed: soon, while validity
 * lasts. */
static int64_t retry_at(const rlk__leases *reg, const rlk__lease *l)
{
    return rlk__leases_now(reg) + rlk__lease_margin(l->ttl) / 2 + 1;
}

long rlk__wait_count(const rlk_resp_value *v, int aof)
{
    if (!v) return -1;
    if (!aof) return v->type == RLK_RESP_INTEGER ? (long)v->integer : -1;
    const rlk_resp_value *x = v->type == RLK_RESP_ARRAY && v->len == 2 ? v->child : NULL;
    if (!x || x->type != RLK_RESP_INTEGER || x->integer < 1 || x->next->type != RLK_RESP_INTEGER)
        return -1;
    return (long)x->next->integer;
}

/* Whether l's renewal lacks the replicas it asked for. */
static int short_of_acks(const rlk__round *rd, const rlk__lease *l)
{
    return l->acks && (l->acks_aof ? rd->acked_aof : rd->acked) < l->acks;
}

/* Applies the reply v of the request whose leases are e[first..first +
 * cnt), with the mutex held. */
static void apply_locked(rlk__leases *reg, const rlk__round *rd, size_t first, size_t cnt,
                         const rlk_resp_value *v)
{
    const rlk_resp_value *x = v ? v->child : NULL;
    int bad = !v || v->type != RLK_RESP_ARRAY || v->len != cnt;
    for (size_t k = 0; k < cnt; k++, x = x ? x->next : NULL) {
        const rlk__renewal *w = &rd->e[first + k];
        rlk__lease *l = w->l;
        if (l->dead || !l->watchdog || l->lost) continue;
        if (bad || !x || x->type != RLK_RESP_INTEGER) {
            /* The server could not answer for it (a script error):
             * try again soon; validity decides. */
            l->renew_at = retry_at(reg, l);
            continue;
        }
        if (x->integer != 1) rlk__lease_mark_lost(reg, l);
        else if (short_of_acks(rd, l)) l->renew_at = retry_at(reg, l);
        else rlk__lease_set_validity(reg, l, rd->start, w->ttl);
    }
}

/* Drops the round's references, with the mutex held; a failed round's
 * leases are tried again soon, but not past their lost_at. */
static void end_locked(rlk__leases *reg, rlk__round *rd, int failed)
{
    for (size_t i = 0; i < rd->n; i++) {
        rlk__lease *l = rd->e[i].l;
        l->inflight = 0;
        if (failed && !l->dead) {
            int64_t t = retry_at(reg, l);
            l->renew_at = t > l->lost_at ? l->lost_at : t;
        }
        if (--l->refs == 0 && l->dead) l->destroy(l->owner);
    }
}

int rlk__round_apply_one(rlk__leases *reg, rlk__round *rd, const rlk_resp_value *v)
{
    size_t i = 0;
    while (i < rd->nreq && rd->got[i]) i++;
    return i < rd->nreq ? rlk__round_apply_at(reg, rd, i, v) : 1;
}

size_t rlk__round_leases(const rlk__round *rd, size_t i, size_t *first)
{
    /* Request i's arguments start at argv[3 first + i] (see
     * rlk__round_requests). */
    *first = ((size_t)(rd->reqs[i].argv - rd->argv) - i) / 3;
    return (size_t)rd->reqs[i].nkeys;
}

int rlk__round_apply_at(rlk__leases *reg, rlk__round *rd, size_t i, const rlk_resp_value *v)
{
    if (i >= rd->nreq || rd->got[i]) return 0;
    pthread_mutex_lock(&reg->mu);
    rd->got[i] = 1;
    rd->applied++;
    size_t first, cnt = rlk__round_leases(rd, i, &first);
    int crossslot = !rd->per_slot && rlk__round_crossslot(v);
    if (crossslot) reg->per_slot = 1;
    if (!v || crossslot) {
        if (!v) rd->failed = 1;
        int64_t now = rlk__leases_now(reg);
        for (size_t k = first; k < first + cnt; k++) {
            rlk__lease *l = rd->e[k].l;
            if (l->dead) continue;
            /* Sent again per slot at once; after a failure, soon. */
            int64_t t = crossslot ? now : retry_at(reg, l);
            l->renew_at = t > l->lost_at ? l->lost_at : t;
        }
    } else if (!rd->reqs[i].script) {
        /* SET IFEQ: OK renewed; nil (the value not exactly the token:
         * waiters marked it, or it is not ours), or an error: the
         * script renews it, at once, from now on, and tells which. */
        rlk__lease *l = rd->e[first].l;
        if (!l->dead && l->watchdog && !l->lost) {
            if (v->type == RLK_RESP_SIMPLE) {
                if (short_of_acks(rd, l)) l->renew_at = retry_at(reg, l);
                else rlk__lease_set_validity(reg, l, rd->start, rd->e[first].ttl);
            } else {
                l->scripted = 1;
                l->renew_at = rlk__leases_now(reg);
            }
        }
    } else {
        apply_locked(reg, rd, first, cnt, v);
    }
    for (size_t k = first; k < first + cnt; k++) rd->e[k].l->inflight = 0;
    int done = rd->applied == rd->nreq;
    if (done) {
        if (rd->per_slot) reg->per_slot = 1;
        if (!rd->failed && !rd->group) __atomic_store_n(&reg->recheck_all, 0, __ATOMIC_RELAXED);
        end_locked(reg, rd, 0);
    }
    pthread_mutex_unlock(&reg->mu);
    if (done) round_free(rd);
    return done;
}

/* ------------------------------------------------------------------ */
/* A connection's rounds                                                */

int rlk__conn_round_plan(rlk__leases *reg, rlk__conn_round *cr, int64_t now, const void *group,
                         int all, const rlk_script *s, int native, int per_slot, size_t *nreq,
                         int *eval)
{
    rlk__round *rd = &cr->round;
    int r = rlk__round_plan_for(reg, now, 1, group, all, rd);
    if (r <= 0) return r;
    rd->native = native;
    *nreq = rlk__round_requests(rd, s, rd->per_slot || per_slot);
    *eval = cr->eval;
    cr->eval = 0;
    cr->on = 1;
    cr->gen++;
    cr->all = rd->all;
    cr->failed = 0;
    return 1;
}

int64_t rlk__conn_round_arg(const rlk__conn_round *cr, size_t i)
{
    return (int64_t)((uint64_t)cr->gen << 32 | i);
}

const rlk_request *rlk__conn_round_req(const rlk__conn_round *cr, int64_t arg, size_t *i)
{
    uint64_t a = (uint64_t)arg;
    *i = (size_t)(a & 0xffffffffu);
    if (!cr->on || (uint32_t)(a >> 32) != cr->gen || *i >= cr->round.nreq) return NULL;
    return &cr->round.reqs[*i];
}

int rlk__conn_round_reply(rlk__leases *reg, rlk__conn_round *cr, size_t i,
                          const rlk_resp_value *v)
{
    if (!cr->on) return 0;
    if (!v) cr->failed = 1;
    if (!rlk__round_apply_at(reg, &cr->round, i, v) || cr->round.applied < cr->round.nreq)
        return 0;
    cr->on = 0;
    return cr->all && !cr->failed;
}

void rlk__conn_round_abandon(rlk__leases *reg, rlk__conn_round *cr)
{
    for (size_t i = 0; cr->on && i < cr->round.nreq; i++) rlk__conn_round_reply(reg, cr, i, NULL);
    cr->on = 0;
}
