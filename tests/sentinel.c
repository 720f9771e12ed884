/* SPDX-License-Identifier: BSD-3-Clause */
/* A Redis Sentinel setup of real processes for tests: see sentinel.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "sentinel.h"
#include "resplock.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define POLL_MS 20
#define FAILOVER_TIMEOUT_MS 5000

static char why[512];

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void because(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
}

static int give_up(const char *what)
{
    fprintf(stderr, "test sentinel: %s: %s\n", what, why);
    return -1;
}

int tsn_data_port(const tsn_env *e, int i)
{
    return i >= 0 && i < TSN_DATA && e->data[i] ? e->data[i]->port : -1;
}

int tsn_sentinel_port(const tsn_env *e, int i)
{
    return i >= 0 && i < TSN_SENTINELS && e->sent[i] ? e->sent[i]->port : -1;
}

void tsn_url(const tsn_env *e, char *out, size_t n)
{
    snprintf(out, n, "%s://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/%s",
             e->tls ? "rediss+sentinel" : "redis+sentinel", tsn_sentinel_port(e, 0),
             tsn_sentinel_port(e, 1), tsn_sentinel_port(e, 2), TSN_NAME);
}

static int data_alive(const tsn_env *e, int i)
{
    return i >= 0 && i < TSN_DATA && e->data[i] && e->data[i]->pid > 0 && !e->data_paused[i];
}

static int sentinel_alive(const tsn_env *e, int i)
{
    return i >= 0 && i < TSN_SENTINELS && e->sent[i] && e->sent[i]->pid > 0 &&
           !e->sent_paused[i];
}

static int data_of_port(const tsn_env *e, long port)
{
    for (int i = 0; i < TSN_DATA; i++)
        if (tsn_data_port(e, i) == port) return i;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Talking to one process                                               */

/* A RESP2 connection that never reconnects by itself: a process that
 * went away must fail the call, not be waited for.  Of a TLS setup:
 * rediss://, the test CA trusted. */
static rlk_conn *open_port(const tsn_env *e, int port, const char *what)
{
    rlk_conn_config cfg;
    char url[64];
    rlk_conn *k;
    snprintf(url, sizeof url, "%s://127.0.0.1:%d", e->tls ? "rediss" : "redis", port);
    rlk_conn_config_init(&cfg);
    cfg.url = url;
    if (e->tls) cfg.tls.ca_file = ts_cert("ca.crt");
    cfg.protocol = 2;
    cfg.connect_timeout_ms = 2000;
    cfg.command_timeout_ms = 5000;
    cfg.reconnect_attempts = -1;
    k = rlk_conn_new(&cfg);
    if (!k) {
        because("out of memory");
        return NULL;
    }
    if (rlk_conn_connect(k) != RLK_OK) {
        because("%s (port %d): %s", what, port, rlk_conn_errmsg(k));
        rlk_conn_free(k);
        return NULL;
    }
    return k;
}

static rlk_conn *open_data(const tsn_env *e, int i)
{
    char what[32];
    if (!data_alive(e, i)) {
        because("data node %d is not running", i);
        return NULL;
    }
    snprintf(what, sizeof what, "data node %d", i);
    return open_port(e, tsn_data_port(e, i), what);
}

static rlk_conn *open_sentinel(const tsn_env *e, int i)
{
    char what[32];
    if (!sentinel_alive(e, i)) {
        because("sentinel %d is not running", i);
        return NULL;
    }
    snprintf(what, sizeof what, "sentinel %d", i);
    return open_port(e, tsn_sentinel_port(e, i), what);
}

rlk_conn *tsn_connect_data(const tsn_env *e, int i)
{
    rlk_conn *k = open_data(e, i);
    if (!k) give_up("connect");
    return k;
}

static int is_err(const rlk_resp_value *v)
{
    return v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR;
}

/* NULL-terminated words on k: the reply (valid until the next call on
 * k), or NULL when the call failed or the server answered an error. */
static rlk_resp_value *call(rlk_conn *k, const char *what, ...)
{
    const char *argv[16];
    rlk_resp_value *v = NULL;
    int argc = 0;
    va_list ap;
    va_start(ap, what);
    while (argc < 15 && (argv[argc] = va_arg(ap, const char *)) != NULL) argc++;
    va_end(ap);
    if (rlk_conn_command(k, &v, argc, argv, NULL) != RLK_OK || !v) {
        because("%s: %s: %s", what, argv[0], rlk_conn_errmsg(k));
        return NULL;
    }
    if (is_err(v)) {
        because("%s: %s %s: %.*s", what, argv[0], argc > 1 ? argv[1] : "", (int)v->len,
                v->str);
        return NULL;
    }
    return v;
}

static int text_is(const rlk_resp_value *v, const char *want)
{
    return v && (v->type == RLK_RESP_BULK || v->type == RLK_RESP_SIMPLE) &&
           v->len == strlen(want) && memcmp(v->str, want, v->len) == 0;
}

/* A string reply's number, or -1. */
static long number_of(const rlk_resp_value *v)
{
    char buf[24];
    if (!v) return -1;
    if (v->type == RLK_RESP_INTEGER) return (long)v->integer;
    if ((v->type != RLK_RESP_BULK && v->type != RLK_RESP_SIMPLE) || v->len == 0 ||
        v->len >= sizeof buf)
        return -1;
    memcpy(buf, v->str, v->len);
    buf[v->len] = '\0';
    return strtol(buf, NULL, 10);
}

/* ------------------------------------------------------------------ */
/* What the processes say                                               */

static int primary_by(tsn_env *e, rlk_conn *k, int s)
{
    char what[32];
    rlk_resp_value *v;
    int i;
    snprintf(what, sizeof what, "sentinel %d", s);
    v = call(k, what, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", TSN_NAME, (const char *)NULL);
    if (!v) return -1;
    if (v->type != RLK_RESP_ARRAY || v->len != 2 || !text_is(v->child, "127.0.0.1")) {
        because("sentinel %d: GET-MASTER-ADDR-BY-NAME answered type %c (%zu)", s, v->type,
                v->len);
        return -1;
    }
    i = data_of_port(e, number_of(v->child->next));
    if (i < 0) because("sentinel %d names port %ld, not ours", s, number_of(v->child->next));
    return i;
}

int tsn_primary_by(tsn_env *e, int s)
{
    rlk_conn *k = open_sentinel(e, s);
    int r;
    if (!k) return -1;
    r = primary_by(e, k, s);
    rlk_conn_free(k);
    return r;
}

int tsn_primary(tsn_env *e)
{
    int p = -1, asked = 0;
    for (int s = 0; s < TSN_SENTINELS; s++) {
        int q;
        if (!sentinel_alive(e, s)) continue;
        q = tsn_primary_by(e, s);
        if (q < 0) return -1;
        if (asked++ && q != p) {
            because("sentinels name data nodes %d and %d", p, q);
            return -1;
        }
        p = q;
    }
    if (!asked) because("no sentinel running");
    return p;
}

int tsn_replica(tsn_env *e)
{
    int p = tsn_primary(e);
    return p < 0 ? -1 : 1 - p;
}

/* ROLE of data node i: 1 master, 0 slave (then its primary's port in
 * *mport and whether its link is "connected" in *linked), -1. */
static int role_of(tsn_env *e, int i, long *mport, int *linked)
{
    rlk_conn *k = open_data(e, i);
    char what[32];
    rlk_resp_value *v;
    int r = -1;
    if (!k) return -1;
    snprintf(what, sizeof what, "data node %d", i);
    v = call(k, what, "ROLE", (const char *)NULL);
    if (v && v->type == RLK_RESP_ARRAY && v->child) {
        if (text_is(v->child, "master")) {
            r = 1;
        } else if (text_is(v->child, "slave") && v->len >= 4) {
            r = 0;
            if (mport) *mport = number_of(rlk_resp_value_at(v, 2));
            if (linked) *linked = text_is(rlk_resp_value_at(v, 3), "connected");
        } else {
            because("data node %d: ROLE %.*s", i, (int)v->child->len,
                    v->child->str ? v->child->str : "");
        }
    } else if (v) {
        because("data node %d: ROLE answered type %c", i, v->type);
    }
    rlk_conn_free(k);
    return r;
}

int tsn_is_master(tsn_env *e, int i)
{
    return role_of(e, i, NULL, NULL);
}

/* INFO replication of data node i has master_link_status:up. */
static int link_up(tsn_env *e, int i)
{
    rlk_conn *k = open_data(e, i);
    rlk_resp_value *v;
    int r = 0;
    if (!k) return 0;
    v = call(k, "replica", "INFO", "replication", (const char *)NULL);
    if (v && (v->type == RLK_RESP_BULK || v->type == RLK_RESP_VERBATIM)) {
        static const char want[] = "master_link_status:up\r\n";
        for (size_t j = 0; j + sizeof want - 1 <= v->len && !r; j++)
            r = memcmp(v->str + j, want, sizeof want - 1) == 0;
        if (!r) because("data node %d: master_link_status is not up", i);
    }
    rlk_conn_free(k);
    return r;
}

/* SENTINEL MASTER (Valkey: SENTINEL PRIMARY where MASTER is refused)
 * of sentinel s: the primary counted healthy (flags exactly "master"),
 * with 2 other sentinels and 1 replica.  1, or 0 (why says). */
static int sentinel_sees_all(tsn_env *e, rlk_conn *k, int s)
{
    char what[32];
    rlk_resp_value *v;
    long others = -1, replicas = -1;
    int healthy = 0;
    snprintf(what, sizeof what, "sentinel %d", s);
    v = call(k, what, "SENTINEL", "MASTER", TSN_NAME, (const char *)NULL);
    if (!v) v = call(k, what, "SENTINEL", "PRIMARY", TSN_NAME, (const char *)NULL);
    if (!v) return 0;
    if (v->type != RLK_RESP_ARRAY) {
        because("sentinel %d: SENTINEL MASTER answered type %c", s, v->type);
        return 0;
    }
    for (const rlk_resp_value *f = v->child; f && f->next; f = f->next->next) {
        if (text_is(f, "flags")) healthy = text_is(f->next, "master");
        else if (text_is(f, "num-other-sentinels")) others = number_of(f->next);
        else if (text_is(f, "num-slaves") || text_is(f, "num-replicas"))
            replicas = number_of(f->next);
    }
    if (healthy && others == TSN_SENTINELS - 1 && replicas == TSN_DATA - 1) return 1;
    because("sentinel %d: primary %s, %ld other sentinels, %ld replicas", s,
            healthy ? "healthy" : "flagged", others, replicas);
    return 0;
}

/* Ready (sentinel.h): 1, or 0 with why saying what is missing. */
static int ready_once(tsn_env *e)
{
    int p = -1, asked = 0, r;
    long mport = -1;
    int linked = 0;
    for (int s = 0; s < TSN_SENTINELS; s++) {
        rlk_conn *k;
        int q, ok;
        if (!sentinel_alive(e, s)) continue;
        if (!(k = open_sentinel(e, s))) return 0;
        q = primary_by(e, k, s);
        ok = q >= 0 && sentinel_sees_all(e, k, s);
        rlk_conn_free(k);
        if (!ok) return 0;
        if (asked++ && q != p) {
            because("sentinels name data nodes %d and %d", p, q);
            return 0;
        }
        p = q;
    }
    if (!asked) {
        because("no sentinel running");
        return 0;
    }
    if (role_of(e, p, NULL, NULL) != 1) {
        because("data node %d, named primary, is not a master by ROLE", p);
        return 0;
    }
    if (!data_alive(e, 1 - p)) return 1;
    r = role_of(e, 1 - p, &mport, &linked);
    if (r != 0 || mport != tsn_data_port(e, p) || !linked) {
        because("data node %d: ROLE %s (of port %ld, %s), primary is %d (port %d)", 1 - p,
                r == 1 ? "master" : r == 0 ? "slave" : "unknown", mport,
                linked ? "connected" : "not connected", p, tsn_data_port(e, p));
        return 0;
    }
    return link_up(e, 1 - p);
}

int tsn_ready(tsn_env *e)
{
    return ready_once(e);
}

int tsn_wait_ready(tsn_env *e, int timeout_ms)
{
    int64_t deadline = ts_now_ms() + timeout_ms;
    for (;;) {
        if (ready_once(e)) return 0;
        if (ts_now_ms() >= deadline) return give_up("not ready");
        ts_pause_ms(POLL_MS);
    }
}

int tsn_wait_primary(tsn_env *e, int i, int timeout_ms)
{
    int64_t t0 = ts_now_ms(), deadline = t0 + timeout_ms;
    int p;
    while ((p = tsn_primary(e)) != i) {
        if (p >= 0) because("the sentinels still name data node %d", p);
        if (ts_now_ms() >= deadline) return give_up("promotion");
        ts_pause_ms(POLL_MS);
    }
    if (tsn_wait_ready(e, (int)(deadline > ts_now_ms() ? deadline - ts_now_ms() : 0)) != 0)
        return -1;
    return (int)(ts_now_ms() - t0);
}

int tsn_failover(tsn_env *e, int timeout_ms)
{
    int64_t t0 = ts_now_ms(), deadline = t0 + timeout_ms;
    int p = tsn_primary(e), s, ms;
    if (p < 0) return give_up("failover");
    for (s = 0; s < TSN_SENTINELS && !sentinel_alive(e, s); s++)
        ;
    /* Refused (NOGOODSLAVE, INPROG) while the sentinel's view of the
     * replica is not fresh enough: asked again until the deadline. */
    for (;;) {
        rlk_conn *k = open_sentinel(e, s);
        rlk_resp_value *v =
            k ? call(k, "sentinel", "SENTINEL", "FAILOVER", TSN_NAME, (const char *)NULL) : NULL;
        rlk_conn_free(k);
        if (v) break;
        if (ts_now_ms() >= deadline) return give_up("failover");
        ts_pause_ms(100);
    }
    ms = tsn_wait_primary(e, 1 - p, (int)(deadline > ts_now_ms() ? deadline - ts_now_ms() : 0));
    return ms < 0 ? -1 : (int)(ts_now_ms() - t0);
}

/* The value of key on data node i into out ("" when none); 0, or -1
 * (why says). */
static int value_on(const tsn_env *e, int i, const char *key, char *out, size_t n)
{
    rlk_conn *k = open_data(e, i);
    rlk_resp_value *v = k ? call(k, "GET", "GET", key, (const char *)NULL) : NULL;
    int r = -1;
    out[0] = '\0';
    if (v && v->type == RLK_RESP_NULL) {
        r = 0;
    } else if (v && v->type == RLK_RESP_BULK) {
        snprintf(out, n, "%.*s", (int)v->len, v->str);
        r = 0;
    } else if (v) {
        because("data node %d: GET %s answered type %c", i, key, v->type);
    }
    rlk_conn_free(k);
    return r;
}

int tsn_lock_lands_on(const tsn_env *e, rlk_client *cl, const char *name, int at)
{
    char got[256];
    rlk_lock_options o;
    rlk_lock *l = NULL;
    int rc, r = -1;
    rlk_lock_options_init(&o);
    o.ttl_ms = 30000;
    o.wait_ms = 10000;
    rc = rlk_lock_acquire(cl, name, &o, &l);
    if (rc != RLK_OK) {
        because("acquire %s: %d: %s", name, rc, rlk_client_errmsg(cl));
        return give_up("lock");
    }
    if (value_on(e, at, name, got, sizeof got) != 0) {
        /* why says */
    } else if (strcmp(got, rlk_lock_token(l)) != 0) {
        because("data node %d holds '%s', not the token '%s'", at, got, rlk_lock_token(l));
    } else if ((rc = rlk_lock_release(l)) != RLK_OK) {
        because("release %s: %d: %s", name, rc, rlk_client_errmsg(cl));
        l = NULL;
    } else {
        l = NULL;
        if (value_on(e, at, name, got, sizeof got) == 0 && !got[0]) r = 0;
        else if (got[0]) because("data node %d still holds '%s' after the release", at, got);
    }
    if (l) rlk_lock_release(l);
    return r == 0 ? 0 : give_up("lock");
}

/* ------------------------------------------------------------------ */
/* Start and stop                                                       */

static void kill_server(ts_server *s)
{
    int status;
    if (!s || s->pid <= 0) return;
    if (kill(-s->pid, SIGKILL) != 0) kill(s->pid, SIGKILL);
    while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
        ;
    s->pid = -1;
}

/* Of a TLS setup: TLS only (tls-port, port 0), server.crt, the test
 * CA; no client certificates asked for. */
static void tls_options(const tsn_env *e, ts_options *opt)
{
    memset(opt, 0, sizeof *opt);
    if (!e->tls) return;
    opt->tls_cert = ts_cert("server.crt");
    opt->tls_key = ts_cert("server.key");
    opt->tls_ca = ts_cert("ca.crt");
}

static tsn_env *start(int down_after_ms, int tls)
{
    tsn_env *e;
    ts_options opt;
    int64_t deadline;
    size_t n = 0;
    if (ts_need_server() != 0) return NULL; /* or skipped, before anything is made */
    if (tls && !ts_certs_dir()) {
        fprintf(stderr, "test sentinel: no test certificates (tests/gen-certs.sh)\n");
        return NULL;
    }
    e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->tls = tls;
    e->down_after_ms = down_after_ms > 0 ? down_after_ms : 1000;
    e->failover_timeout_ms = FAILOVER_TIMEOUT_MS;
    /* A replica's first sync at once, not after the 5 s a primary waits
     * for more replicas to share a diskless transfer. */
    e->primary_extra[n++] = "--repl-diskless-sync-delay";
    e->primary_extra[n++] = "0";
    /* Replication over TLS, on both nodes: after a failover the old
     * primary replicates from the new one. */
    if (tls) {
        e->primary_extra[n++] = "--tls-replication";
        e->primary_extra[n++] = "yes";
    }
    e->primary_extra[n] = NULL;
    tls_options(e, &opt);
    opt.extra = e->primary_extra;
    if (!(e->data[0] = ts_start(&opt))) goto fail;
    snprintf(e->replicaof_port, sizeof e->replicaof_port, "%d", e->data[0]->port);
    memcpy(e->replica_extra, e->primary_extra, n * sizeof e->replica_extra[0]);
    e->replica_extra[n++] = "--replicaof";
    e->replica_extra[n++] = "127.0.0.1";
    e->replica_extra[n++] = e->replicaof_port;
    e->replica_extra[n] = NULL;
    opt.extra = e->replica_extra;
    if (!(e->data[1] = ts_start(&opt))) goto fail;
    /* Linked before the sentinels look: a primary's INFO lists its
     * replicas only once they are connected, and the sentinels ask again
     * only every 10 s. */
    deadline = ts_now_ms() + TSN_READY_MS;
    while (!link_up(e, 1)) {
        if (ts_now_ms() >= deadline) {
            give_up("replica");
            goto fail;
        }
        ts_pause_ms(POLL_MS);
    }
    snprintf(e->conf, sizeof e->conf,
             "sentinel monitor %s 127.0.0.1 %d 2\n"
             "sentinel down-after-milliseconds %s %d\n"
             "sentinel failover-timeout %s %d\n"
             "sentinel parallel-syncs %s 1\n",
             TSN_NAME, e->data[0]->port, TSN_NAME, e->down_after_ms, TSN_NAME,
             e->failover_timeout_ms, TSN_NAME);
    tls_options(e, &opt);
    opt.sentinel_conf = e->conf;
    /* Sentinels of a TLS setup speak TLS to the data nodes and to one
     * another (they announce their TLS port). */
    e->sentinel_extra[0] = tls ? "--tls-replication" : NULL;
    e->sentinel_extra[1] = "yes";
    e->sentinel_extra[2] = NULL;
    opt.extra = e->sentinel_extra;
    for (int s = 0; s < TSN_SENTINELS; s++)
        if (!(e->sent[s] = ts_start(&opt))) {
            fprintf(stderr, "test sentinel: sentinel %d did not start\n", s);
            goto fail;
        }
    if (tsn_wait_ready(e, TSN_READY_MS) != 0) goto fail;
    if (tsn_primary(e) != 0) {
        because("data node %d named primary at the start", tsn_primary(e));
        give_up("start");
        goto fail;
    }
    return e;
fail:
    tsn_stop(e);
    return NULL;
}

tsn_env *tsn_start(int down_after_ms)
{
    return start(down_after_ms, 0);
}

tsn_env *tsn_start_tls(int down_after_ms)
{
#ifdef RLK_HAVE_OPENSSL
    return start(down_after_ms, 1);
#else
    (void)down_after_ms;
    fprintf(stderr, "test sentinel: TLS needs a build with OpenSSL\n");
    return NULL;
#endif
}

void tsn_stop(tsn_env *e)
{
    if (!e) return;
    for (int s = 0; s < TSN_SENTINELS; s++) {
        kill_server(e->sent[s]);
        ts_stop(e->sent[s]);
    }
    for (int i = 0; i < TSN_DATA; i++) {
        kill_server(e->data[i]);
        ts_stop(e->data[i]);
    }
    free(e);
}

/* ------------------------------------------------------------------ */
/* Faults                                                               */

int tsn_kill(tsn_env *e, int i)
{
    if (i < 0 || i >= TSN_DATA || !e->data[i] || e->data[i]->pid <= 0) return -1;
    kill_server(e->data[i]);
    e->data_paused[i] = 0;
    return 0;
}

int tsn_restart(tsn_env *e, int i)
{
    if (i < 0 || i >= TSN_DATA || !e->data[i] || e->data[i]->pid > 0) return -1;
    e->data[i]->opt.extra = e->primary_extra;
    return ts_start_again(e->data[i]);
}

/* Sends sig to s and waits for the state change it makes. */
static int signal_server(ts_server *srv, int *paused, int sig, int stop)
{
    pid_t pid;
    int status;
    if (!srv || (pid = srv->pid) <= 0 || *paused == stop) return -1;
    if (kill(pid, sig) != 0) return -1;
    for (;;) {
        pid_t w = waitpid(pid, &status, stop ? WUNTRACED : WCONTINUED);
        if (w < 0 && errno == EINTR) continue;
        if (w != pid) return -1;
        if (stop ? WIFSTOPPED(status) : WIFCONTINUED(status)) break;
        if (WIFEXITED(status) || WIFSIGNALED(status)) {
            srv->pid = -1;
            return -1;
        }
    }
    *paused = stop;
    return 0;
}

int tsn_pause_data(tsn_env *e, int i)
{
    return i >= 0 && i < TSN_DATA ? signal_server(e->data[i], &e->data_paused[i], SIGSTOP, 1)
                                  : -1;
}

int tsn_resume_data(tsn_env *e, int i)
{
    return i >= 0 && i < TSN_DATA ? signal_server(e->data[i], &e->data_paused[i], SIGCONT, 0)
                                  : -1;
}

int tsn_pause_sentinel(tsn_env *e, int i)
{
    return i >= 0 && i < TSN_SENTINELS
               ? signal_server(e->sent[i], &e->sent_paused[i], SIGSTOP, 1)
               : -1;
}

int tsn_resume_sentinel(tsn_env *e, int i)
{
    return i >= 0 && i < TSN_SENTINELS
               ? signal_server(e->sent[i], &e->sent_paused[i], SIGCONT, 0)
               : -1;
}
