/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The waiter's rules (src/prim/waiter.c), with no server: the plan of a wait
 * (how often a waiter looks again, how long its place in line and a
 * handoff's claim last) and the reading of a handoff message.
 */
#include "testlib.h"
#include "waiter.h"

#include <string.h>

#define CHECK_PLAN(recheck, ttl, s, l, c)                                                   \
    do {                                                                                \
        rlk__wait_plan p_;                                                              \
        memset(&p_, 0xa5, sizeof p_);                                                   \
        rlk__wait_plan_for(&p_, recheck, ttl);                                          \
        CHECK_MSG(p_.slice == (s) && p_.lease == (l) && p_.claim == (c),                \
                  "plan(recheck %d, ttl %d): slice %lld lease %lld claim %lld, want %d %d %d", \
                  recheck, ttl, (long long)p_.slice, (long long)p_.lease,               \
                  (long long)p_.claim, s, l, c);                                        \
    } while (0)

static void test_wait_plan(void)
{
    /* The default recheck (1 s): a slice of it; the place lasts two
     * slices and 200 ms; the claim a slice and a second. */
    CHECK_PLAN(0, 30000, 1000, 2200, 2000);
    CHECK_PLAN(-5, 30000, 1000, 2200, 2000);
    /* The client's own recheck. */
    CHECK_PLAN(250, 30000, 250, 700, 1250);
    CHECK_PLAN(5000, 60000, 5000, 10200, 6000);
    /* A short TTL: a third of it, and the claim no longer than the TTL. */
    CHECK_PLAN(0, 900, 300, 800, 900);
    CHECK_PLAN(0, 3000, 1000, 2200, 2000);
    CHECK_PLAN(0, 2999, 999, 2198, 1999);
    CHECK_PLAN(5000, 1200, 400, 1000, 1200);
    /* Never below 10 ms. */
    CHECK_PLAN(0, 20, 10, 220, 20);
    CHECK_PLAN(0, 1, 10, 220, 1);
}

/* A pub/sub message [kind, channel, payload] made by hand. */
struct msg {
    rlk_resp_value top, kind, ch, pl;
};

static const rlk_resp_value *mk(struct msg *m, rlk_resp_type top, const char *kind,
                                const char *ch, rlk_resp_type plt, const char *pl)
{
    memset(m, 0, sizeof *m);
    m->top.type = top;
    m->top.len = 3;
    m->top.child = &m->kind;
    m->kind.type = RLK_RESP_BULK;
    m->kind.str = kind;
    m->kind.len = strlen(kind);
    m->kind.next = &m->ch;
    m->ch.type = RLK_RESP_BULK;
    m->ch.str = ch;
    m->ch.len = strlen(ch);
    m->ch.next = &m->pl;
    m->pl.type = plt;
    m->pl.str = pl;
    m->pl.len = pl ? strlen(pl) : 0;
    return &m->top;
}

static void test_handoff_parse(void)
{
    struct msg m;
    const char *ch = "resplock:handoff:abc", *tok = "0123456789abcdef";
    uint64_t f = 7;
    /* The handoff: "FENCE TOKEN", under RESP3 (a push) and RESP2. */
    CHECK_EQ_INT(rlk__handoff_parse(mk(&m, RLK_RESP_PUSH, "message", ch, RLK_RESP_BULK,
                                       "1700000000123456 0123456789abcdef"),
                                    ch, tok, &f),
                 1);
    CHECK_EQ_U64(f, 1700000000123456ULL);
    f = 7;
    CHECK_EQ_INT(rlk__handoff_parse(mk(&m, RLK_RESP_ARRAY, "message", ch, RLK_RESP_SIMPLE,
                                       "42 0123456789abcdef"),
                                    ch, tok, &f),
                 1);
    CHECK_EQ_U64(f, 42);
    /* Not it: *fence stays. */
    struct {
        const char *kind, *ch, *pl;
        rlk_resp_type plt;
    } bad[] = {
        {"message", "resplock:handoff:abd", "42 0123456789abcdef", RLK_RESP_BULK},
        {"pmessage", ch, "42 0123456789abcdef", RLK_RESP_BULK},
        {"message", ch, "42 0123456789abcdee", RLK_RESP_BULK},   /* an earlier wait's */
        {"message", ch, "42 0123456789abcdefX", RLK_RESP_BULK},  /* longer token */
        {"message", ch, "42 0123456789abcde", RLK_RESP_BULK},    /* shorter */
        {"message", ch, "420123456789abcdef", RLK_RESP_BULK},    /* no space */
        {"message", ch, " 0123456789abcdef", RLK_RESP_BULK},     /* no fence */
        {"message", ch, "4x 0123456789abcdef", RLK_RESP_BULK},
        {"message", ch, "12345678901234567890 0123456789abcdef", RLK_RESP_BULK}, /* 20 digits */
        {"message", ch, "42 0123456789abcdef", RLK_RESP_ERROR},
        {"message", ch, NULL, RLK_RESP_NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        f = 7;
        int r = rlk__handoff_parse(mk(&m, RLK_RESP_PUSH, bad[i].kind, bad[i].ch, bad[i].plt,
                                      bad[i].pl),
                                   ch, tok, &f);
        CHECK_MSG(r == 0 && f == 7, "case %zu (%s): %d, fence %llu", i,
                  bad[i].pl ? bad[i].pl : "null", r, (unsigned long long)f);
    }
    /* Fewer than three elements. */
    mk(&m, RLK_RESP_PUSH, "message", ch, RLK_RESP_BULK, "42 0123456789abcdef");
    m.ch.next = NULL;
    m.top.len = 2;
    f = 7;
    CHECK_EQ_INT(rlk__handoff_parse(&m.top, ch, tok, &f), 0);
    CHECK_EQ_U64(f, 7);
    /* The largest fence of 19 digits. */
    CHECK_EQ_INT(rlk__handoff_parse(mk(&m, RLK_RESP_PUSH, "message", ch, RLK_RESP_BULK,
                                       "9999999999999999999 0123456789abcdef"),
                                    ch, tok, &f),
                 1);
    CHECK_EQ_U64(f, 9999999999999999999ULL);
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_wait_plan),
           TL_TEST(test_handoff_parse));
