/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lock client over a rediss+sentinel:// URL, against the real
 * Sentinel setup of tests/sentinel.h over TLS only (tsn_start_tls: data
 * nodes, replication and sentinels all TLS, no plain port open): with
 * the test CA the lock lands on the primary (read back over a TLS
 * admin connection) and the client's connection says its TLS version;
 * after SENTINEL FAILOVER a new acquire lands on the new primary; a CA
 * that did not sign the servers' certificates fails with RLK_ERR_TLS
 * within the connect timeout, not a hang.
 *
 * The tests run in order on one setup.  A build without OpenSSL skips.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "conntest.h"
#include "resplock.h"
#include "sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tsn_env *env;

static rlk_client *client_for(const char *ca, int connect_ms)
{
    char url[256];
    rlk_client_config cfg;
    tsn_url(env, url, sizeof url);
    rlk_client_config_init(&cfg);
    cfg.conn.url = url; /* copied by rlk_client_new */
    cfg.conn.tls.ca_file = ts_cert(ca);
    cfg.conn.connect_timeout_ms = connect_ms;
    cfg.conn.command_timeout_ms = 3000;
    return rlk_client_new(&cfg);
}

/* The lock lands on data node at, its key read back over TLS. */
static void lock_lands_on(rlk_client *cl, const char *name, int at)
{
    CHECK_MSG(tsn_lock_lands_on(env, cl, name, at) == 0, "%s on data node %d (stderr says why)",
              name, at);
}

static void test_acquire_over_tls(void)
{
    int p = tsn_primary(env);
    if (!CHECK(p >= 0)) return;
    rlk_client *cl = client_for("ca.crt", 5000);
    if (!CHECK(cl != NULL)) return;
    lock_lands_on(cl, "snt-first", p);
    const rlk_conn_info *in = rlk_client_info(cl);
    if (CHECK(in != NULL)) {
        CHECK_MSG(in->tls_version && ts_contains(in->tls_version, "TLS"), "tls_version %s",
                  in->tls_version ? in->tls_version : "NULL");
        printf("# %s\n", in->tls_version ? in->tls_version : "no TLS");
    }
    rlk_client_free(cl);
}

/* A client made before the failover acquires on the new primary after
 * it, and so does one made after. */
static void test_after_a_failover(void)
{
    int old = tsn_primary(env);
    if (!CHECK(old >= 0)) return;
    rlk_client *cl = client_for("ca.crt", 5000);
    if (!CHECK(cl != NULL)) return;
    CHECK_EQ_INT(rlk_client_connect(cl), RLK_OK);
    int ms = tsn_failover(env, TSN_READY_MS);
    if (CHECK_MSG(ms >= 0, "no failover") && CHECK(tsn_primary(env) == 1 - old)) {
        printf("# failover in %d ms\n", ms);
        lock_lands_on(cl, "snt-after", 1 - old);
        rlk_client *later = client_for("ca.crt", 5000);
        if (CHECK(later != NULL)) lock_lands_on(later, "snt-after-new", 1 - old);
        rlk_client_free(later);
    }
    rlk_client_free(cl);
}

/* other-ca.crt signed none of the servers' certificates: every
 * sentinel's handshake fails verification, and the connect says so
 * with RLK_ERR_TLS, within its timeout (a few of them at most: the
 * sentinels are tried in turn). */
static void test_wrong_ca(void)
{
    rlk_client *cl = client_for("other-ca.crt", 2000);
    if (!CHECK(cl != NULL)) return;
    int64_t t0 = ts_now_ms();
    int rc = rlk_client_connect(cl);
    int64_t took = ts_now_ms() - t0;
    CHECK_MSG(rc == RLK_ERR_TLS, "%d (%s): %s", rc, rlk_strerror(rc), rlk_client_errmsg(cl));
    CHECK_MSG(took < 10000, "took %lld ms", (long long)took);
    printf("# %s (%lld ms)\n", rlk_client_errmsg(cl), (long long)took);
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    rlk_lock *l = NULL;
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(cl, "snt-wrong-ca", &o, &l);
    took = ts_now_ms() - t0;
    CHECK_MSG(rc == RLK_ERR_TLS, "acquire: %d: %s", rc, rlk_client_errmsg(cl));
    CHECK_MSG(took < 10000, "acquire took %lld ms", (long long)took);
    CHECK(l == NULL);
    rlk_client_free(cl);
}

int main(int argc, char **argv)
{
    tl_init(argc, argv);
#ifndef RLK_HAVE_OPENSSL
    tl_skip("a build without OpenSSL has no rediss+sentinel://");
#endif
    env = tsn_start_tls(0);
    if (!CHECK_MSG(env != NULL, "the TLS sentinel setup did not start")) return tl_finish();
    RUN_TEST(test_acquire_over_tls);
    RUN_TEST(test_wrong_ca);
    RUN_TEST(test_after_a_failover);
    tsn_stop(env);
    return tl_finish();
}
