/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rate limiter (rate.h): a file of callbacks over the host.  The
 * host finds the key's node, holds a decision until that node's
 * connection is ready and follows a cluster's redirects; what is left
 * here is the decision's words, its reply read into a result, and the
 * wait form's sleeps, which are this primitive's own times in the
 * host's fan-out.  The algorithm is the script's (rate.lua): the
 * client's clock decides nothing but how long it sleeps.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "rate.h"

#include "internal.h"
#include "keys.h"
#include "lua.h"
#include "reply.h"

#include <stdio.h>
#include <string.h>

enum { SENT, SLEEPING };

typedef struct call {
    struct call *prev, *next;
    rlk__rates *r;
    int state;
    int wait;                 /* sleep refusals away (o->wait_ms != 0) */
    int64_t wake;             /* SLEEPING: when it asks again */
    int64_t reply_by, wait_until;
    rlk_rate_result res;
    rlk__rate_cb cb;
    void *ctx;
    unsigned slot;
    /* The script's four arguments, as sent (again on each re-send). */
    char args[4][24];
    char msg[256];
    char key[];               /* "resplock:rate:" NAME */
} call;

struct rlk__rates {
    rlk__host *h;
    rlk_script script;
    call *calls;
    size_t n;
    int64_t now;              /* the clock of the call that calls back */
};

size_t rlk__rate_key_cap(const char *name) { return sizeof RLK__RATE_PREFIX + strlen(name); }

void rlk__rate_key(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", RLK__RATE_PREFIX, name);
}

void rlk_rate_options_init(rlk_rate_options *o)
{
    memset(o, 0, sizeof *o);
    o->period_ms = 1000;
    o->burst = 1;
    o->n = 1;
}

int rlk__rate_check(const char *name, const rlk_rate_options *o, int status_only, char *err,
                    size_t errlen)
{
    const char *why = NULL;
    if (!name || !*name) why = "an empty limiter name";
    else if (!o) why = "no options (count is not defaulted)";
    else if (o->count < 1) why = "the rate's count must be at least 1";
    else if (o->period_ms < 1) why = "the rate's period must be at least 1 ms";
    else if (o->burst < 1) why = "the burst must be at least 1";
    else if (!status_only && o->n < 1) why = "a decision takes at least 1 token";
    else if (!status_only && o->n > o->burst)
        why = "a decision of more tokens than the burst is never allowed";
    else if (!status_only && o->wait_ms < 0 && o->wait_ms != RLK_WAIT_FOREVER)
        why = "a negative wait (other than RLK_WAIT_FOREVER)";
    /* The script takes whole numbers below 2^53; an emission interval of
     * period/count in microseconds must stay one. */
    else if (o->count > ((int64_t)1 << 40) || o->period_ms > ((int64_t)1 << 40) ||
             o->burst > ((int64_t)1 << 40))
        why = "count, period and burst must be below 2^40";
    /* The limiter counts the server's microseconds: a shorter emission
     * interval would not move it. */
    else if (o->count > o->period_ms * 1000)
        why = "over one decision a microsecond";
    if (!why) return RLK_OK;
    snprintf(err, errlen, "rate: %s", why);
    return RLK_ERR_INVALID;
}

static void unlink_call(rlk__rates *r, call *k)
{
    if (k->prev) k->prev->next = k->next;
    else r->calls = k->next;
    if (k->next) k->next->prev = k->prev;
    r->n--;
}

/* The call's end: its callback, then it is gone. */
static void finish(call *k, int status)
{
    rlk__rates *r = k->r;
    unlink_call(r, k);
    if (status == RLK_OK || status == RLK_RATE_LIMITED) k->msg[0] = '\0';
    if (k->cb) k->cb(k->ctx, status, &k->res, k->msg);
    rlk__free(k);
}

static int build(rlk__core *c, rlk__req *q)
{
    call *k = q->ctx;
    const char *argv[5] = {k->key, k->args[0], k->args[1], k->args[2], k->args[3]};
    return rlk__core_put_script(c, q, &k->r->script, 1, 5, argv, NULL);
}

static void reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v);

static const rlk__req_ops decide_ops = {build, reply, NULL, RLK__T_ARRAY};

static int send_call(call *k)
{
    k->state = SENT;
    k->res.decisions++;
    return rlk__host_submit(k->r->h, k->slot, &decide_ops, k, 0, k->reply_by, 0);
}

static void reply(rlk__core *c, rlk__req *q, const rlk_resp_value *v)
{
    call *k = q->ctx;
    rlk__rates *r = k->r;
    int64_t allowed, wait, left, reset, now = c ? rlk__core_now(c) : r->now;
    if (!v) {
        const char *why = NULL;
        int st = c ? RLK_ERR_CLOSED : rlk__host_why(r->h, &why);
        if (c || st == RLK_OK) st = RLK_ERR_CLOSED;
        /* Not sent again: the lost decision may have taken the tokens. */
        snprintf(k->msg, sizeof k->msg, "rate %s: %s", k->key + sizeof RLK__RATE_PREFIX - 1,
                 c ? "the connection closed before the decision's reply (its tokens may "
                     "have been taken)"
                   : why && *why ? why : rlk_strerror(st));
        finish(k, st);
        return;
    }
    if (rlk__is_error(v)) {
        snprintf(k->msg, sizeof k->msg, "rate %s: the server refused the decision: %.*s",
                 k->key + sizeof RLK__RATE_PREFIX - 1, (int)(v->len > 160 ? 160 : v->len),
                 v->str ? v->str : "");
        finish(k, RLK_ERR_SERVER);
        return;
    }
    if (v->len != 4 || rlk__int_at(v, 0, &allowed) || rlk__int_at(v, 1, &wait) ||
        rlk__int_at(v, 2, &left) || rlk__int_at(v, 3, &reset) || (allowed != 0 && allowed != 1) ||
        wait < 0 || left < 0 || reset < 0) {
        snprintf(k->msg, sizeof k->msg, "rate %s: the decision's reply is not the rate script's",
                 k->key + sizeof RLK__RATE_PREFIX - 1);
        finish(k, RLK_ERR_PROTO);
        return;
    }
    k->res.allowed = (int)allowed;
    k->res.wait_ms = wait;
    k->res.left = left;
    k->res.reset_ms = reset;
    if (allowed) {
        finish(k, RLK_OK);
        return;
    }
    /* Asked again when the server said the tokens are there, not
     * before (polling would only be refused), and only within the wait:
     * a sleep that ends past it would be a wait the caller did not give. */
    if (!k->wait || (k->wait_until >= 0 && now + wait > k->wait_until)) {
        finish(k, RLK_RATE_LIMITED);
        return;
    }
    /* One millisecond more: the clock here reads whole milliseconds, so
     * a wake at now + wait may come up to 1 ms before wait has passed
     * since the reply (seen: a second refusal of 1 ms). */
    k->state = SLEEPING;
    k->wake = now + wait + 1;
    k->res.slept_ms += wait + 1;
}

static int64_t next_wake(void *ctx)
{
    rlk__rates *r = ctx;
    int64_t soonest = -1;
    for (call *k = r->calls; k; k = k->next)
        if (k->state == SLEEPING && (soonest < 0 || k->wake < soonest)) soonest = k->wake;
    return soonest;
}

static int tick(void *ctx, int64_t now)
{
    rlk__rates *r = ctx;
    call *k = r->calls, *next;
    r->now = now;
    for (; k; k = next) {
        next = k->next;
        if (k->state != SLEEPING || k->wake > now) continue;
        int st = send_call(k);
        if (st != RLK_OK) {
            snprintf(k->msg, sizeof k->msg, "rate %s: the decision could not be sent again (%s)",
                     k->key + sizeof RLK__RATE_PREFIX - 1, rlk_strerror(st));
            finish(k, st);
        }
    }
    return RLK_OK;
}

static void enter(void *ctx, int64_t now) { ((rlk__rates *)ctx)->now = now; }
static int leave(void *ctx, int status) { (void)ctx; return status; }

/* The cores will not come: a sleeper would wake to a request held for
 * ever, so it ends now, as the requests held did. */
static void refused(void *ctx, int status, const char *msg)
{
    rlk__rates *r = ctx;
    call *k = r->calls, *next;
    for (; k; k = next) {
        next = k->next;
        if (k->state != SLEEPING) continue;
        snprintf(k->msg, sizeof k->msg, "rate %s: %s", k->key + sizeof RLK__RATE_PREFIX - 1,
                 msg && *msg ? msg : rlk_strerror(status));
        finish(k, status);
    }
}

static const rlk__host_ops host_ops = {
    .refused = refused, .deadline = next_wake, .tick = tick, .enter = enter, .leave = leave};

rlk__rates *rlk__rates_new(rlk__host *h)
{
    rlk__rates *r = rlk__malloc(sizeof *r);
    if (!r) return NULL;
    memset(r, 0, sizeof *r);
    r->h = h;
    rlk_script_init(&r->script, rlk__lua_rate, 0);
    if (rlk__host_join(h, &host_ops, r) != RLK_OK) {
        rlk__free(r);
        return NULL;
    }
    return r;
}

void rlk__rates_free(rlk__rates *r)
{
    if (!r) return;
    rlk__host_part(r->h, &host_ops, r);
    while (r->calls) {
        call *k = r->calls;
        unlink_call(r, k);
        rlk__free(k);
    }
    rlk__free(r);
}

size_t rlk__rates_pending(const rlk__rates *r) { return r->n; }

int rlk__rate_take(rlk__rates *r, const char *name, const rlk_rate_options *o, int status_only,
                   int64_t reply_by, int64_t wait_until, rlk__rate_cb cb, void *ctx, int64_t now)
{
    char err[160];
    int st = rlk__rate_check(name, o, status_only, err, sizeof err);
    if (st != RLK_OK) return st;
    size_t cap = rlk__rate_key_cap(name);
    call *k = rlk__malloc(sizeof *k + cap);
    if (!k) return RLK_ERR_NOMEM;
    memset(k, 0, sizeof *k);
    rlk__rate_key(name, k->key, cap);
    k->r = r;
    k->cb = cb;
    k->ctx = ctx;
    k->wait = !status_only && o->wait_ms != 0;
    k->reply_by = reply_by;
    k->wait_until = o->wait_ms == RLK_WAIT_FOREVER ? -1 : wait_until;
    k->slot = rlk__keyslot(k->key, cap - 1);
    snprintf(k->args[0], sizeof k->args[0], "%lld", (long long)o->count);
    snprintf(k->args[1], sizeof k->args[1], "%lld", (long long)o->period_ms);
    snprintf(k->args[2], sizeof k->args[2], "%lld", (long long)o->burst);
    snprintf(k->args[3], sizeof k->args[3], "%lld", status_only ? 0LL : (long long)o->n);
    k->next = r->calls;
    if (r->calls) r->calls->prev = k;
    r->calls = k;
    r->n++;
    r->now = now;
    st = send_call(k);
    if (st != RLK_OK) {
        unlink_call(r, k);
        rlk__free(k);
    }
    return st;
}
