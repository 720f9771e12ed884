/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Subscribing as Redisson does, on a real single (non-cluster)
 * redis-server 7.0: Redisson's waiters listen on
 * redisson_lock__channel:{NAME} for the "0" a release publishes.
 *
 * First what the server does with the two kinds of pub/sub on one
 * channel name: PUBLISH reaches SUBSCRIBE's subscribers only, SPUBLISH
 * SSUBSCRIBE's only (Redis 7 keeps them apart on a server without
 * cluster mode too).  Then resplock's releases as a Redisson waiter sees
 * them, on a RESP2 subscriber connection (Redisson's own) and a RESP3
 * one: a reentrant lock freed publishes "0" once; with a resplock waiter
 * in line the release hands the lock over instead (nothing for Redisson:
 * the lock is not free), and the waiter's own release publishes "0".
 * resplock publishes with PUBLISH: a Redisson-style SSUBSCRIBE on the
 * same channel is counted and printed ("# ..."), not asserted: the
 * sharded form belongs to the cluster support.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "conn_internal.h"
#include "locktest.h"
#include "resplock.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* What a subscriber connection got: messages by kind, the last one. */
struct heard {
    int message, smessage;
    char channel[96], payload[64];
};

static void on_msg(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    struct heard *h = ctx;
    const rlk_resp_value *kind = rlk_resp_value_at(m, 0), *ch = rlk_resp_value_at(m, 1),
                         *pl = rlk_resp_value_at(m, 2);
    (void)c;
    if (!ch || !pl || !ch->str || !pl->str) return;
    if (word_is(kind, "message")) h->message++;
    else if (word_is(kind, "smessage")) h->smessage++;
    else return;
    snprintf(h->channel, sizeof h->channel, "%.*s", (int)ch->len, ch->str);
    snprintf(h->payload, sizeof h->payload, "%.*s", (int)pl->len, pl->str);
}

/* A subscriber: SUBSCRIBE (sharded 0) over RESP2 or RESP3, or SSUBSCRIBE
 * (sharded 1, RESP3: rlk_conn sends it raw, its confirmation a push). */
static rlk_conn *subscriber(const char *channel, int protocol, int sharded, struct heard *h,
                            int line)
{
    rlk_conn *c = connect_url(srv_url, protocol, on_msg, h, line);
    const char *argv[2] = {"SSUBSCRIBE", channel};
    rlk_resp_value *v;
    if (!c) return NULL;
    if (!sharded) {
        tl_ok(rlk_conn_subscribe(c, channel, strlen(channel)) == RLK_OK, __FILE__, line,
              "SUBSCRIBE %s: %s", channel, rlk_conn_errmsg(c));
        return c;
    }
    /* rlk_conn has no SSUBSCRIBE: the command goes straight onto its
     * (plain TCP) socket.  Once PING is answered the server has taken it
     * (under RESP3 its confirmation is a push, which on_msg ignores). */
    rlk_buf b;
    rlk_buf_init(&b);
    int sent = rlk_resp_append_command(&b, 2, argv, NULL) == RLK_OK &&
               write(rlk_conn_fd(c), b.data, b.len) == (ssize_t)b.len;
    rlk_buf_free(&b);
    tl_ok(sent && rlk_conn_command(c, &v, 1, (const char *[]){"PING"}, NULL) == RLK_OK,
          __FILE__, line, "SSUBSCRIBE %s: %s", channel, rlk_conn_errmsg(c));
    v = run_cmd(admin, line, "PUBSUB", "SHARDNUMSUB", channel, (const char *)NULL);
    tl_ok(v && rlk_resp_value_at(v, 1) && rlk_resp_value_at(v, 1)->integer == 1, __FILE__, line,
          "PUBSUB SHARDNUMSUB %s: not 1", channel);
    return c;
}
#define SUBSCRIBER(ch, proto, sharded, h) subscriber(ch, proto, sharded, h, __LINE__)

/* h got exactly one message, Redisson's "0" on ch. */
static void heard_release(int line, const struct heard *h, const char *ch)
{
    tl_ok(h->message == 1 && !strcmp(h->channel, ch) && !strcmp(h->payload, "0"), __FILE__, line,
          "%d message(s), the last \"%s\" on \"%s\"; want one \"0\" on \"%s\"", h->message,
          h->payload, h->channel, ch);
}
#define HEARD_RELEASE(h, ch) heard_release(__LINE__, h, ch)

/* ------------------------------------------------------------------ */

/* Redis 7.0 without cluster mode: PUBLISH and SPUBLISH on one channel
 * name reach different subscribers. */
static void test_server_keeps_the_two_apart(void)
{
    const char *ch = "redisson_lock__channel:{apart}";
    struct heard plain, sharded;
    rlk_conn *p, *s;
    memset(&plain, 0, sizeof plain);
    memset(&sharded, 0, sizeof sharded);
    p = SUBSCRIBER(ch, 3, 0, &plain);
    s = SUBSCRIBER(ch, 3, 1, &sharded);
    if (!p || !s) goto out;
    CHECK_EQ_INT(CMD_INT(admin, "PUBLISH", ch, "p"), 1);
    CHECK_EQ_INT(CMD_INT(admin, "SPUBLISH", ch, "s"), 1);
    DRAIN(p);
    DRAIN(s);
    CHECK_EQ_INT(plain.message, 1);
    CHECK_EQ_INT(plain.smessage, 0);
    CHECK_EQ_STR(plain.payload, "p");
    CHECK_EQ_INT(sharded.message, 0);
    CHECK_EQ_INT(sharded.smessage, 1);
    CHECK_EQ_STR(sharded.payload, "s");
    CHECK_EQ_STR(sharded.channel, ch);
out:
    rlk_conn_free(p);
    rlk_conn_free(s);
}

/* A reentrant lock freed: "0" on redisson_lock__channel:{NAME}, once, to
 * a RESP2 and a RESP3 subscriber. */
static void test_release_wakes_redisson(void)
{
    const char *name = "rch-free", *ch = "redisson_lock__channel:{rch-free}";
    struct heard h2, h3, hs;
    rlk_conn *s2, *s3, *ss;
    rlk_client *a = CLIENT();
    rlk_lock *l;
    memset(&h2, 0, sizeof h2);
    memset(&h3, 0, sizeof h3);
    memset(&hs, 0, sizeof hs);
    s2 = SUBSCRIBER(ch, 2, 0, &h2);
    s3 = SUBSCRIBER(ch, 3, 0, &h3);
    ss = SUBSCRIBER(ch, 3, 1, &hs);
    if (!a || !s2 || !s3 || !ss) goto out;
    l = ACQ_R(a, name, 10000);
    if (!l) goto out;
    DRAIN(s2);
    DRAIN(s3);
    CHECK_EQ_INT(h2.message + h3.message, 0);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK(wait_heard(s2, &h2.message, 1));
    CHECK(wait_heard(s3, &h3.message, 1));
    DRAIN(s2);
    DRAIN(s3);
    DRAIN(ss);
    HEARD_RELEASE(&h2, ch);
    HEARD_RELEASE(&h3, ch);
    printf("# a release (no waiter in line): SUBSCRIBE got %d, SSUBSCRIBE got %d message(s)\n",
           h3.message, hs.smessage + hs.message);
out:
    rlk_conn_free(s2);
    rlk_conn_free(s3);
    rlk_conn_free(ss);
    rlk_client_free(a);
}

/* A name with braces already: Redisson's channel is
 * redisson_lock__channel:NAME, no braces added (its prefixName rule), and
 * a freed reentrant lock publishes "0" there. */
static void test_release_braced_name(void)
{
    const char *name = "{tag}rch", *ch = "redisson_lock__channel:{tag}rch";
    struct heard h2;
    rlk_conn *s2;
    rlk_client *a = CLIENT();
    rlk_lock *l;
    memset(&h2, 0, sizeof h2);
    s2 = SUBSCRIBER(ch, 2, 0, &h2);
    if (!a || !s2) goto out;
    l = ACQ_R(a, name, 10000);
    if (!l) goto out;
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK(wait_heard(s2, &h2.message, 1));
    DRAIN(s2);
    HEARD_RELEASE(&h2, ch);
out:
    rlk_conn_free(s2);
    rlk_client_free(a);
}

/* A resplock waiter in line: the release hands the lock over (nothing
 * for a Redisson waiter: the lock is not free), and the waiter's own
 * release, with nobody left in line, publishes "0". */
static void test_release_with_a_waiter(void)
{
    const char *name = "rch-line", *ch = "redisson_lock__channel:{rch-line}";
    struct heard h2, hs;
    struct waiter w;
    rlk_conn *s2, *ss;
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *l = NULL;
    int started = 0;
    memset(&h2, 0, sizeof h2);
    memset(&hs, 0, sizeof hs);
    s2 = SUBSCRIBER(ch, 2, 0, &h2);
    ss = SUBSCRIBER(ch, 3, 1, &hs);
    if (!a || !b || !s2 || !ss) goto out;
    l = ACQ_R(a, name, 10000);
    if (!l) goto out;
    started = waiter_start(&w, b, name, 10000, LONG_MS, RLK_LOCK_REENTRANT);
    if (!started || !CHECK(wait_waiters(name, 1, LONG_MS))) goto out;
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    l = NULL;
    pthread_join(w.th, NULL);
    started = 0;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "the waiter: %d %s", w.rc, w.err)) goto out;
    DRAIN(s2);
    CHECK_EQ_INT(h2.message, 0);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    CHECK(wait_heard(s2, &h2.message, 1));
    DRAIN(s2);
    DRAIN(ss);
    HEARD_RELEASE(&h2, ch);
    printf("# a release after a handoff: SUBSCRIBE got %d, SSUBSCRIBE got %d message(s)\n",
           h2.message, hs.smessage + hs.message);
out:
    if (started) pthread_join(w.th, NULL);
    if (l) rlk_lock_release(l);
    rlk_conn_free(s2);
    rlk_conn_free(ss);
    rlk_client_free(a);
    rlk_client_free(b);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;
    RUN(test_server_keeps_the_two_apart);
    RUN(test_release_wakes_redisson);
    RUN(test_release_with_a_waiter);
    RUN(test_release_braced_name);
    return locktest_finish(t0);
}
