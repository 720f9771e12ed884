/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lease planning (src/prim/lease.c), with no server: the timing formulas
 * (drift, validity, renewal, lost margin), a lease's validity, renew_at
 * and lost_at, which leases a round takes, its requests grouped per hash
 * slot and batched, and its replies applied (renewed, lost, tried again,
 * CROSSSLOT), leases removed while a round holds them.  The numbers are
 * worked out by hand from resplock.h's rlk_plan_* documentation.
 */
#include "testlib.h"
#include "lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_plan_formulas(void)
{
    /* The defaults: 1% + 2 ms of drift, renewal at a third, lost a
     * tenth (at least 5 ms) before the validity ends. */
    CHECK_EQ_INT(rlk_plan_drift_ms(NULL, 30000), 302);
    CHECK_EQ_INT(rlk_plan_valid_ms(NULL, 30000), 29698);
    CHECK_EQ_INT(rlk_plan_renew_period_ms(NULL, 30000), 10000);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(NULL, 30000, 0), 26698);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(NULL, 30000, 100), 26698); /* less than the tenth */
    CHECK_EQ_INT(rlk_plan_lost_after_ms(NULL, 30000, 5000), 24698);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(NULL, 40, 0), 33);          /* 40 - 2 - 5 */
    CHECK_EQ_INT(rlk__lease_margin(30000), 3000);
    CHECK_EQ_INT(rlk__lease_margin(60), 6);
    CHECK_EQ_INT(rlk__lease_margin(49), 5);
    CHECK_EQ_INT(rlk__lease_margin(1), 5);
    /* A client's own drift and divisor. */
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.drift_ms = 10;
    cfg.renew_divisor = 4;
    CHECK_EQ_INT(rlk_plan_drift_ms(&cfg, 30000), 310);
    CHECK_EQ_INT(rlk_plan_valid_ms(&cfg, 30000), 29690);
    CHECK_EQ_INT(rlk_plan_renew_period_ms(&cfg, 30000), 7500);
    CHECK_EQ_INT(rlk_plan_lost_after_ms(&cfg, 30000, 0), 26690);
}

/* ------------------------------------------------------------------ */

struct owner {
    rlk__lease l;
    char key[32], token[32];
    int lost_calls, destroyed;
};

static void on_lost(void *ctx, void *owner)
{
    (void)ctx;
    ((struct owner *)owner)->lost_calls++;
}

static void destroy(void *owner) { ((struct owner *)owner)->destroyed++; }

/* A watchdog lease of ttl in slot, valid from start. */
static void lease(rlk__leases *reg, struct owner *o, int i, unsigned slot, int64_t ttl,
                  int64_t start)
{
    memset(o, 0, sizeof *o);
    snprintf(o->key, sizeof o->key, "lock:%d", i);
    snprintf(o->token, sizeof o->token, "token-%d", i);
    o->l.key = o->key;
    o->l.token = o->token;
    o->l.kind = i % 2 ? 'r' : 's';
    o->l.slot = slot;
    o->l.ttl = ttl;
    o->l.watchdog = 1;
    o->l.on_lost = on_lost;
    o->l.owner = o;
    o->l.destroy = destroy;
    rlk__lease_set_validity(reg, &o->l, start, ttl);
    rlk__lease_add(reg, &o->l);
}

static void test_validity(void)
{
    rlk__leases reg;
    struct owner o;
    if (!CHECK(rlk__leases_init(&reg, NULL) == 0)) return;
    lease(&reg, &o, 0, 0, 30000, 1000);
    CHECK_EQ_INT(o.l.valid_until, 1000 + 29698);
    CHECK_EQ_INT(o.l.lost_at, 1000 + 26698);
    CHECK_EQ_INT(o.l.renew_at, 1000 + 10000);
    /* A large margin: lost sooner, and the first renewal a third of the
     * way to it, so that it still comes in time. */
    o.l.margin = 20000;
    rlk__lease_set_validity(&reg, &o.l, 1000, 30000);
    CHECK_EQ_INT(o.l.valid_until, 1000 + 29698);
    CHECK_EQ_INT(o.l.lost_at, 1000 + 9698);
    CHECK_EQ_INT(o.l.renew_at, 1000 + 9698 / 3);
    /* Marked lost once: validity gone, on_lost queued once. */
    rlk__lease_mark_lost(&reg, &o.l);
    rlk__lease_mark_lost(&reg, &o.l);
    CHECK_EQ_INT(o.l.lost, 1);
    CHECK_EQ_INT(o.l.valid_until, 0);
    rlk__leases_notify_lost(&reg, 0);
    CHECK_EQ_INT(o.lost_calls, 1);
    rlk__leases_notify_lost(&reg, 0);
    CHECK_EQ_INT(o.lost_calls, 1);
    CHECK_EQ_INT(rlk__lease_unlink(&reg, &o.l), 1);
    CHECK(reg.head == NULL);
    rlk__leases_destroy(&reg);
}

/* Applies a NULL reply (it will not come) to every request left: the
 * round ends and frees itself. */
static void end_round(rlk__leases *reg, rlk__round *rd)
{
    for (size_t q = rd->applied; q < rd->nreq; q++)
        if (rlk__round_apply_one(reg, rd, NULL)) return;
}

static void test_round_plan(void)
{
    rlk__leases reg;
    struct owner o[5];
    rlk__round rd;
    if (!CHECK(rlk__leases_init(&reg, NULL) == 0)) return;
    for (int i = 0; i < 5; i++) lease(&reg, &o[i], i, 0, 30000, 0);
    o[4].l.watchdog = 0; /* renewed by nobody */
    /* Before any renew_at: nothing due, nothing held. */
    CHECK_EQ_INT(rlk__round_plan(&reg, 9999, 1, &rd), 0);
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(o[i].l.refs, 0);
    /* One due: every watchdog lease not lost joins; one past its
     * lost_at is marked lost instead. */
    o[1].l.renew_at = 4000;
    o[2].l.lost_at = 4500;
    if (!CHECK(rlk__round_plan(&reg, 5000, 1, &rd) == 1)) return; /* nothing is held */
    CHECK_EQ_INT(rd.n, 3);
    CHECK_EQ_INT(rd.start, 5000);
    CHECK_EQ_INT(rd.end, 26698);
    CHECK_EQ_INT(rd.async, 1);
    CHECK_EQ_INT(o[2].l.lost, 1);
    for (int i = 0; i < 5; i++) {
        int in = i == 0 || i == 1 || i == 3;
        CHECK_MSG(o[i].l.refs == in && o[i].l.inflight == in, "lease %d: refs %d inflight %d",
                  i, o[i].l.refs, o[i].l.inflight);
    }
    for (size_t k = 0; k < rd.n; k++) {
        CHECK_EQ_INT(rd.e[k].ttl, 30000);
        CHECK_EQ_STR(rd.e[k].ttls, "30000");
        CHECK_EQ_INT(rd.e[k].ttls_len, 5);
    }
    rlk__leases_notify_lost(&reg, 0);
    CHECK_EQ_INT(o[2].lost_calls, 1);
    rlk_script sc;
    rlk_script_init(&sc, "return 1", 8);
    CHECK_EQ_INT(rlk__round_requests(&rd, &sc, 0), 1);
    end_round(&reg, &rd);
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(o[i].l.refs, 0);
    /* After a reconnect every lease is checked, due or not. */
    reg.recheck_all = 1;
    if (!CHECK(rlk__round_plan(&reg, 5001, 0, &rd) == 1)) return; /* nothing is held */
    CHECK_EQ_INT(rd.n, 3);
    CHECK_EQ_INT(rd.all, 1);
    CHECK_EQ_INT(o[0].l.inflight, 0); /* not async */
    CHECK_EQ_INT(rlk__round_requests(&rd, &sc, 0), 1);
    end_round(&reg, &rd);
    for (int i = 0; i < 5; i++) rlk__lease_unlink(&reg, &o[i].l);
    rlk__leases_destroy(&reg);
}

/* Request q's keys, as the renew script gets them. */
static const char *req_key(const rlk__round *rd, size_t q, int k)
{
    return rd->reqs[q].argv[k];
}

static void test_round_requests(void)
{
    static const unsigned slots[5] = {7, 3, 7, 3, 9};
    rlk__leases reg;
    struct owner o[5];
    rlk__round rd;
    rlk_script sc;
    rlk_script_init(&sc, "return 1", 8);
    if (!CHECK(rlk__leases_init(&reg, NULL) == 0)) return;
    for (int i = 0; i < 5; i++) lease(&reg, &o[i], i, slots[i], 30000, 0);

    /* Per slot: one request per slot, slots in order, each with its
     * leases' keys, their kinds, then a token and a TTL per key. */
    if (!CHECK(rlk__round_plan(&reg, 10000, 1, &rd) == 1)) return; /* nothing is held */
    CHECK_EQ_INT(rlk__round_requests(&rd, &sc, 1), 3);
    CHECK_EQ_INT(rd.per_slot, 1);
    static const int want_n[3] = {2, 2, 1};
    static const unsigned want_slot[3] = {3, 7, 9};
    for (size_t q = 0; q < 3 && q < rd.nreq; q++) {
        const rlk_request *r = &rd.reqs[q];
        int n = r->nkeys;
        CHECK_EQ_INT(n, want_n[q]);
        CHECK(r->script == &sc);
        CHECK_EQ_INT(r->argc, 3 * n + 1);
        if (n != want_n[q]) continue;
        for (int k = 0; k < n; k++) {
            int i = atoi(req_key(&rd, q, k) + 5); /* "lock:I" */
            CHECK_MSG(o[i].l.slot == want_slot[q], "request %zu has lock:%d of slot %u", q, i,
                      o[i].l.slot);
            CHECK_EQ_INT(r->argv[n][k], o[i].l.kind);
            CHECK_EQ_STR(r->argv[n + 1 + 2 * k], o[i].token);
            CHECK_EQ_STR(r->argv[n + 2 + 2 * k], "30000");
            CHECK_EQ_INT(r->argvlen[n + 1 + 2 * k], strlen(o[i].token));
        }
        CHECK_EQ_INT(r->argvlen[n], n);
    }
    end_round(&reg, &rd);

    /* One request for all of them otherwise. */
    reg.per_slot = 0;
    reg.recheck_all = 1;
    if (!CHECK(rlk__round_plan(&reg, 10001, 1, &rd) == 1)) return; /* nothing is held */
    CHECK_EQ_INT(rlk__round_requests(&rd, &sc, 0), 1);
    CHECK_EQ_INT(rd.reqs[0].nkeys, 5);
    CHECK_EQ_INT(rd.per_slot, 0);
    end_round(&reg, &rd);
    for (int i = 0; i < 5; i++) rlk__lease_unlink(&reg, &o[i].l);
    rlk__leases_destroy(&reg);
}

/* At most RLK__RENEW_BATCH keys per script call. */
static void test_round_batches(void)
{
    enum { N = RLK__RENEW_BATCH + 1 };
    rlk__leases reg;
    struct owner *o = calloc(N, sizeof *o);
    rlk__round rd;
    rlk_script sc;
    rlk_script_init(&sc, "return 1", 8);
    if (!CHECK(o != NULL) || !CHECK(rlk__leases_init(&reg, NULL) == 0)) {
        free(o);
        return;
    }
    for (int i = 0; i < N; i++) lease(&reg, &o[i], i, 5, 30000, 0);
    if (!CHECK(rlk__round_plan(&reg, 10000, 1, &rd) == 1)) {
        free(o);
        return;
    }
    if (CHECK(rlk__round_requests(&rd, &sc, 0) == 2)) {
        CHECK_EQ_INT(rd.reqs[0].nkeys, RLK__RENEW_BATCH);
        CHECK_EQ_INT(rd.reqs[1].nkeys, 1);
    }
    end_round(&reg, &rd);
    for (int i = 0; i < N; i++) rlk__lease_unlink(&reg, &o[i].l);
    rlk__leases_destroy(&reg);
    free(o);
}

/* A reply of integers (NULL elements: a bulk string, which is no
 * answer for that lease). */
struct reply {
    rlk_resp_value top, e[4];
};

static const rlk_resp_value *ints(struct reply *r, int n, const int *v)
{
    memset(r, 0, sizeof *r);
    r->top.type = RLK_RESP_ARRAY;
    r->top.len = (size_t)n;
    r->top.child = n ? &r->e[0] : NULL;
    for (int i = 0; i < n; i++) {
        r->e[i].type = v[i] < 0 ? RLK_RESP_BULK : RLK_RESP_INTEGER;
        r->e[i].str = v[i] < 0 ? "x" : NULL;
        r->e[i].len = v[i] < 0 ? 1 : 0;
        r->e[i].integer = v[i];
        r->e[i].next = i + 1 < n ? &r->e[i + 1] : NULL;
    }
    return &r->top;
}

static void test_round_apply(void)
{
    rlk__leases reg;
    struct owner o[3];
    rlk__round rd;
    rlk_script sc;
    struct reply rep;
    rlk_script_init(&sc, "return 1", 8);
    if (!CHECK(rlk__leases_init(&reg, NULL) == 0)) return;
    reg.manual_clock = 1;
    for (int i = 0; i < 3; i++) lease(&reg, &o[i], i, 0, 30000, 0);
    reg.recheck_all = 1;

    /* Renewed, refused (lost), no answer (tried again soon). */
    if (!CHECK(rlk__round_plan(&reg, 10000, 1, &rd) == 1)) return; /* nothing is held */
    CHECK_EQ_INT(rlk__round_requests(&rd, &sc, 0), 1);
    /* The round's leases are in the registry's order (the last added
     * first); the reply goes by the round's order. */
    struct owner *ord[3];
    for (int k = 0; k < 3; k++) ord[k] = (struct owner *)rd.e[k].l->owner;
    reg.clock_now = 10050;
    static const int v1[3] = {1, 0, -1};
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, ints(&rep, 3, v1)), 1);
    CHECK_EQ_INT(ord[0]->l.valid_until, 10000 + 29698);
    CHECK_EQ_INT(ord[0]->l.renew_at, 10000 + 10000);
    CHECK_EQ_INT(ord[1]->l.lost, 1);
    CHECK_EQ_INT(ord[2]->l.lost, 0);
    CHECK_EQ_INT(ord[2]->l.renew_at, 10050 + 3000 / 2 + 1);
    CHECK_EQ_INT(reg.recheck_all, 0);
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(o[i].l.refs + o[i].l.inflight, 0);
    rlk__leases_notify_lost(&reg, 0);
    CHECK_EQ_INT(ord[1]->lost_calls, 1);

    /* A reply that does not come: tried again soon, but never past
     * lost_at; a reconnect's re-check stays owed. */
    reg.recheck_all = 1;
    if (!CHECK(rlk__round_plan(&reg, 26000, 1, &rd) == 1)) return; /* nothing is held */
    CHECK_EQ_INT(rd.n, 2);
    CHECK_EQ_INT(rlk__round_requests(&rd, &sc, 0), 1);
    reg.clock_now = 26690;
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, NULL), 1);
    CHECK_EQ_INT(ord[2]->l.renew_at, 26698); /* its lost_at: 0 + 26698 */
    CHECK_EQ_INT(ord[0]->l.renew_at, 26690 + 1501);
    CHECK_EQ_INT(reg.recheck_all, 1);

    /* CROSSSLOT: per slot from now on, and due at once. */
    rlk_resp_value err;
    memset(&err, 0, sizeof err);
    err.type = RLK_RESP_ERROR;
    err.str = "CROSSSLOT Keys in request don't hash to the same slot";
    err.len = strlen(err.str);
    CHECK(rlk__round_crossslot(&err));
    if (!CHECK(rlk__round_plan(&reg, 26691, 1, &rd) == 1)) return; /* nothing is held */
    CHECK_EQ_INT(rlk__round_requests(&rd, &sc, rd.per_slot), 1);
    reg.clock_now = 26691;
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, &err), 1);
    CHECK_EQ_INT(reg.per_slot, 1);
    CHECK_EQ_INT(ord[0]->l.renew_at, 26691);
    err.type = RLK_RESP_SIMPLE;
    CHECK(!rlk__round_crossslot(&err));
    err.type = RLK_RESP_ERROR;
    err.str = "ERR CROSSSLOT";
    err.len = strlen(err.str);
    CHECK(!rlk__round_crossslot(&err));
    CHECK(!rlk__round_crossslot(NULL));
    for (int i = 0; i < 3; i++) rlk__lease_unlink(&reg, &o[i].l);
    rlk__leases_destroy(&reg);
}

/* A native round (the server has SET IFEQ): the reentrant leases and the
 * scripted simple one go by the script, per slot, first; each other
 * simple lease alone after them, as a one-key call's arguments.  OK
 * renews; nil or an error makes the lease scripted and due at once. */
static void test_round_native(void)
{
    static const unsigned slots[5] = {7, 3, 7, 3, 9};
    rlk__leases reg;
    struct owner o[5];
    rlk__round rd;
    rlk_script sc;
    rlk_script_init(&sc, "return 1", 8);
    if (!CHECK(rlk__leases_init(&reg, NULL) == 0)) return;
    reg.manual_clock = 1;
    /* Simple: 0, 2, 4; reentrant: 1, 3. */
    for (int i = 0; i < 5; i++) lease(&reg, &o[i], i, slots[i], 30000, 0);
    o[4].l.scripted = 1;
    if (!CHECK(rlk__round_plan(&reg, 10000, 1, &rd) == 1)) return; /* nothing is held */
    rd.native = 1;
    /* The script: slot 3 (locks 1 and 3), slot 9 (lock 4); native:
     * locks 0 and 2. */
    if (!CHECK(rlk__round_requests(&rd, &sc, 1) == 4)) {
        end_round(&reg, &rd);
        return;
    }
    CHECK(rd.reqs[0].script == &sc && rd.reqs[1].script == &sc);
    CHECK_EQ_INT(rd.reqs[0].nkeys, 2);
    CHECK_EQ_INT(rd.reqs[1].nkeys, 1);
    CHECK_EQ_STR(req_key(&rd, 1, 0), "lock:4");
    int seen = 0;
    for (size_t q = 2; q < 4; q++) {
        const rlk_request *r = &rd.reqs[q];
        CHECK(r->script == NULL);
        CHECK(rlk__round_native(&rd, q));
        CHECK_EQ_INT(r->nkeys, 1);
        CHECK_EQ_INT(r->argc, 4);
        int i = atoi(r->argv[0] + 5);
        CHECK_MSG(i == 0 || i == 2, "native request %zu has lock:%d", q, i);
        seen |= 1 << i;
        CHECK_EQ_STR(r->argv[2], o[i].token);
        CHECK_EQ_STR(r->argv[3], "30000");
    }
    CHECK_EQ_INT(seen, 5);
    CHECK(!rlk__round_native(&rd, 0));
    /* Replies: the script's two, then OK for the first native, nil for
     * the second. */
    struct reply rep;
    static const int one[2] = {1, 1};
    reg.clock_now = 10050;
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, ints(&rep, 2, one)), 0);
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, ints(&rep, 1, one)), 0);
    struct owner *a = rd.reqs[2].argv[0][5] == '0' ? &o[0] : &o[2];
    struct owner *b = a == &o[0] ? &o[2] : &o[0];
    rlk_resp_value ok, nil;
    memset(&ok, 0, sizeof ok);
    ok.type = RLK_RESP_SIMPLE;
    ok.str = "OK";
    ok.len = 2;
    memset(&nil, 0, sizeof nil);
    nil.type = RLK_RESP_NULL;
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, &ok), 0);
    CHECK_EQ_INT(a->l.valid_until, 10000 + 29698);
    CHECK_EQ_INT(a->l.scripted, 0);
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, &nil), 1);
    CHECK_EQ_INT(b->l.scripted, 1);
    CHECK_EQ_INT(b->l.lost, 0);
    CHECK_EQ_INT(b->l.renew_at, 10050);
    /* The next round sends it by the script. */
    if (!CHECK(rlk__round_plan(&reg, 10050, 1, &rd) == 1)) return; /* nothing is held */
    rd.native = 1;
    size_t nreq = rlk__round_requests(&rd, &sc, 1);
    int native = 0;
    for (size_t q = 0; q < nreq; q++) {
        if (!rlk__round_native(&rd, q)) continue;
        native++;
        CHECK_MSG(strcmp(rd.reqs[q].argv[0], b->key) != 0, "%s went native again", b->key);
    }
    CHECK_EQ_INT(native, 1);
    end_round(&reg, &rd);
    for (int i = 0; i < 5; i++) rlk__lease_unlink(&reg, &o[i].l);
    rlk__leases_destroy(&reg);
}

/* A lease removed while a round holds it is the round's to destroy, at
 * its end, once; its reply changes nothing. */
static void test_removed_during_round(void)
{
    rlk__leases reg;
    struct owner o[2];
    rlk__round rd;
    rlk_script sc;
    struct reply rep;
    rlk_script_init(&sc, "return 1", 8);
    if (!CHECK(rlk__leases_init(&reg, NULL) == 0)) return;
    for (int i = 0; i < 2; i++) lease(&reg, &o[i], i, i, 30000, 0);
    if (!CHECK(rlk__round_plan(&reg, 10000, 1, &rd) == 1)) return; /* nothing is held */
    if (!CHECK(rlk__round_requests(&rd, &sc, 1) == 2)) {
        end_round(&reg, &rd);
        return;
    }
    CHECK_EQ_INT(rlk__lease_unlink(&reg, &o[0].l), 0);
    CHECK_EQ_INT(o[0].l.dead, 1);
    static const int one[1] = {0};
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, ints(&rep, 1, one)), 0);
    CHECK_EQ_INT(o[0].destroyed + o[1].destroyed, 0);
    CHECK_EQ_INT(rlk__round_apply_one(&reg, &rd, ints(&rep, 1, one)), 1);
    CHECK_EQ_INT(o[0].destroyed, 1);
    CHECK_EQ_INT(o[1].destroyed, 0);
    CHECK_EQ_INT(o[0].l.lost, 0); /* removed: not reported */
    CHECK_EQ_INT(o[1].l.lost, 1);
    rlk__leases_notify_lost(&reg, 0);
    CHECK_EQ_INT(o[0].lost_calls, 0);
    CHECK_EQ_INT(o[1].lost_calls, 1);
    CHECK_EQ_INT(rlk__lease_unlink(&reg, &o[1].l), 1);
    rlk__leases_destroy(&reg);
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_plan_formulas),
           TL_TEST(test_validity),
           TL_TEST(test_round_plan),
           TL_TEST(test_round_requests),
           TL_TEST(test_round_batches),
           TL_TEST(test_round_apply),
           TL_TEST(test_round_native),
           TL_TEST(test_removed_during_round));
