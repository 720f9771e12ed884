/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The lock layer under faults, against real redis-server processes: a
 * waiter paused (SIGSTOP) while in line, a lost reply of a waiting try,
 * foreign waiters beside cycling resplock clients, nested reentrant
 * holds of different TTLs, batched renewal on a cluster-enabled server,
 * renewal while a tick-mode client waits, local calls while the watchdog
 * thread's server is frozen, release at maxmemory (and a reentrant
 * lock's releases, an extend and renewals there), a release by a user
 * without PUBLISH, a release that yields with a dead waiter first in
 * line (the line's TTLs), a reentrant release's re-send that comes late,
 * a retried release that handed the lock over, fences after eviction and
 * restart, one deadline per call (frozen server, bounded wait, restart,
 * late start), reconnects refused by a server full of clients, a
 * connection reset under a waiting acquire, and tries refused for now
 * (BUSY: tried again) told from errors that only name LOADING or BUSY.
 *
 * A waiter that must be paused runs in a process of its own: this
 * program again, started with --child-wait, which reports its result on
 * stdout (a pipe to the test).
 *
 * Every wait is on a condition under a deadline; bounds grow under
 * valgrind (RLK_WRAP set, or detected).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "locktest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* A bound on a duration that includes this program's own work. */
#define SLOWX(ms) ((int64_t)(slow ? (ms) * 3 : (ms)))

static const char *self_path; /* this program, for the child waiters */

/* ------------------------------------------------------------------ */
/* A waiter in a process of its own                                    */

/* What the child reports: "RC REMAINING FENCE HOLDS DONE_AT TOKEN". */
struct child {
    pid_t pid;
    int fd;           /* the read end of its stdout */
    char buf[512];
    size_t len;
    int reported;
    int rc;
    long long remaining, fence, done_at;
    int holds;        /* the server held its token when it returned */
    char token[256];
};

/* The child's side: acquire with these options, check the server with a
 * connection of its own, report, release, exit. */
static int child_wait_main(char **argv)
{
    const char *url = argv[0], *name = argv[1];
    rlk_client_config cfg;
    rlk_lock_options o;
    rlk_client *cl;
    rlk_conn *adm;
    rlk_lock *l = NULL;
    char got[256] = "";
    int rc, holds = 0;
    int64_t done_at;
    rlk_client_config_init(&cfg);
    cfg.conn.url = url;
    cfg.conn.protocol = 3;
    cfg.conn.connect_timeout_ms = LONG_MS;
    cfg.conn.command_timeout_ms = LONG_MS;
    cl = rlk_client_new(&cfg);
    if (!cl || rlk_client_connect(cl) != RLK_OK) return 2;
    rlk_lock_options_init(&o);
    o.ttl_ms = atoll(argv[2]);
    o.wait_ms = atoll(argv[3]);
    rc = rlk_lock_acquire(cl, name, &o, &l);
    done_at = ts_now_ms();
    if (rc == RLK_OK) {
        rlk_conn_config cc;
        rlk_resp_value *v = NULL;
        const char *get[2] = {"GET", name};
        rlk_conn_config_init(&cc);
        cc.url = url;
        cc.connect_timeout_ms = LONG_MS;
        cc.command_timeout_ms = LONG_MS;
        adm = rlk_conn_new(&cc);
        if (adm && rlk_conn_connect(adm) == RLK_OK &&
            rlk_conn_command(adm, &v, 2, get, NULL) == RLK_OK && v && v->str)
            snprintf(got, sizeof got, "%.*s", (int)v->len, v->str);
        holds = strcmp(got, rlk_lock_token(l)) == 0;
        rlk_conn_free(adm);
    }
    printf("%d %lld %llu %d %lld %s\n", rc, l ? (long long)rlk_lock_remaining_ms(l) : -1LL,
           l ? (unsigned long long)rlk_lock_fence(l) : 0ULL, holds, (long long)done_at,
           l ? rlk_lock_token(l) : "-");
    fflush(stdout);
    if (l) rlk_lock_release(l);
    rlk_client_free(cl);
    return 0;
}

static int child_start(struct child *ch, const char *url, const char *name, int64_t ttl,
                       int64_t wait)
{
    int p[2];
    char ttl_s[32], wait_s[32];
    memset(ch, 0, sizeof *ch);
    ch->pid = -1;
    ch->fd = -1;
    snprintf(ttl_s, sizeof ttl_s, "%lld", (long long)ttl);
    snprintf(wait_s, sizeof wait_s, "%lld", (long long)wait);
    if (!CHECK(pipe(p) == 0)) return 0;
    ch->pid = fork();
    if (ch->pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        /* Runs natively even under valgrind: only this process is checked. */
        execl(self_path, self_path, "--child-wait", url, name, ttl_s, wait_s, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    ch->fd = p[0];
    if (!CHECK(ch->pid > 0)) {
        close(p[0]);
        ch->fd = -1;
        return 0;
    }
    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
    return 1;
}

/* Reads what the child wrote, for up to ms; 1 once it has reported. */
static int child_poll(struct child *ch, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    while (!ch->reported) {
        struct pollfd p = {ch->fd, POLLIN, 0};
        int64_t left = deadline - ts_now_ms();
        ssize_t n;
        if (left < 0) left = 0;
        if (poll(&p, 1, (int)left) <= 0) return 0;
        n = read(ch->fd, ch->buf + ch->len, sizeof ch->buf - 1 - ch->len);
        if (n <= 0) return 0; /* it died without a word */
        ch->len += (size_t)n;
        ch->buf[ch->len] = '\0';
        if (strchr(ch->buf, '\n')) {
            ch->reported = sscanf(ch->buf, "%d %lld %lld %d %lld %95s", &ch->rc, &ch->remaining,
                                  &ch->fence, &ch->holds, &ch->done_at, ch->token) == 6;
            if (!ch->reported) {
                CHECK_MSG(0, "child's report: \"%s\"", ch->buf);
                return 0;
            }
        }
        if (ts_now_ms() >= deadline) break;
    }
    return ch->reported;
}

/* Ends the child whatever its state. */
static void child_end(struct child *ch)
{
    int status;
    if (ch->pid > 0) {
        kill(ch->pid, SIGKILL);
        kill(ch->pid, SIGCONT);
        while (waitpid(ch->pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    if (ch->fd >= 0) close(ch->fd);
    ch->pid = -1;
    ch->fd = -1;
}

/* Polls the status of name until `waiters` resplock waiters are in line. */
static int wait_in_line(rlk_client *cl, const char *name, int64_t n, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    for (;;) {
        rlk_lock_status st;
        int rc = rlk_lock_get_status(cl, name, &st);
        if (rc == RLK_OK && st.waiters == n) return 1;
        if (ts_now_ms() >= deadline)
            return CHECK_MSG(0, "%s: %lld waiters in line, want %lld (status %d)", name,
                             rc == RLK_OK ? (long long)st.waiters : -1LL, (long long)n, rc);
        ts_pause_ms(5);
    }
}

/* GET key into out: 1, or 0 when the key does not exist (-1: a test
 * failure). */
static int held_by(rlk_conn *c, const char *key, char *out, size_t n)
{
    /* The holder's token: the value, less the "+w" waiters in line
     * append to it (see src/lua/acquire.lua). */
    int r = cmd_str(c, out, n, __LINE__, "GET", key, (const char *)NULL);
    size_t len = r == 1 ? strlen(out) : 0;
    if (len > 2 && strcmp(out + len - 2, "+w") == 0) out[len - 2] = '\0';
    return r;
}

/* Joins a waiter thread still running (*started) and releases what it
 * got. */
static void waiter_end(struct waiter *w, int *started)
{
    if (!*started) return;
    pthread_join(w->th, NULL);
    *started = 0;
    if (w->l) rlk_lock_release(w->l);
    w->l = NULL;
}

/* A server of its own, started with extra arguments (NULL-terminated),
 * its URL in url; NULL on failure (a test failure). */
static ts_server *own_server(const char *const *extra, char *url, size_t n)
{
    ts_options to;
    ts_server *s;
    memset(&to, 0, sizeof to);
    to.extra = extra;
    s = ts_start(&to);
    if (!CHECK(s != NULL)) return NULL;
    url_of(url, n, s);
    return s;
}

/* A client of a server of its own, with these timeouts (0: LONG_MS). */
static rlk_client *own_client(ts_server *s, char *url, size_t n, int timeout_ms, int connect)
{
    rlk_client_config cfg;
    rlk_client *cl;
    url_of(url, n, s);
    client_cfg(&cfg, url);
    if (timeout_ms) cfg.conn.command_timeout_ms = cfg.conn.connect_timeout_ms = timeout_ms;
    if (connect) return CLIENT_WITH(&cfg);
    cl = rlk_client_new(&cfg);
    CHECK(cl != NULL);
    return cl;
}

/* ------------------------------------------------------------------ */
/* 2. Acquire never returns a lock whose validity is over              */

/* A waiter paused in line is handed the lock, which lapses; a third
 * client takes it; the waiter resumes: it must not report the lock while
 * the third client holds it, and whenever it reports it, it holds it. */
static void test_stale_handoff(void)
{
    const char *name = "f-stale";
    rlk_client *h = CLIENT(), *t = CLIENT();
    rlk_lock *lh, *lt = NULL;
    struct child w;
    int64_t t_resume, t_release = 0, deadline;
    char got[256];
    w.pid = -1;
    w.fd = -1;
    if (!h || !t) goto out;
    CMD(admin, "DEL", name);
    lh = ACQ(h, name, 60000);
    if (!lh || !child_start(&w, srv_url, name, 1000, 15000)) goto out;
    if (!wait_in_line(h, name, 1, SLOWX(5000))) goto out;
    CHECK_EQ_INT(kill(w.pid, SIGSTOP), 0);
    CHECK_EQ_INT(rlk_lock_release(lh), RLK_OK); /* handed to the paused waiter */
    /* Its TTL (or its claim) runs out. */
    CHECK(wait_exists(admin, name, 0, 1000 + LONG_MS));
    lt = ACQ(t, name, 60000);
    if (!lt) goto out;
    CHECK_EQ_INT(kill(w.pid, SIGCONT), 0);
    t_resume = ts_now_ms();
    /* The third client holds it for 1.5 s after the waiter resumed. */
    while (ts_now_ms() - t_resume < 1500 && !w.reported)
        child_poll(&w, 1500 - (ts_now_ms() - t_resume));
    if (w.reported) {
        CHECK_MSG(w.rc != RLK_OK,
                  "the waiter reported the lock %lld ms after it resumed, while another "
                  "client held it: rc %d, remaining %lld ms, held on the server: %d",
                  w.done_at - t_resume, w.rc, w.remaining, w.holds);
    }
    CHECK(held_by(admin, name, got, sizeof got) == 1);
    CHECK_EQ_STR(got, rlk_lock_token(lt));
    /* From the call's start: the release may hand the lock to the waiter
     * before it returns. */
    t_release = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_release(lt), RLK_OK);
    lt = NULL;
    deadline = t_release + 15000 + LONG_MS;
    if (!w.reported) CHECK_MSG(child_poll(&w, deadline - ts_now_ms()), "the waiter never returned");
    if (w.reported) {
        printf("    waiter: rc %d, %lld ms after the resume, remaining %lld ms, held %d\n", w.rc,
               w.done_at - t_resume, w.remaining, w.holds);
        if (w.rc == RLK_OK) {
            CHECK_MSG(w.done_at >= t_release, "OK %lld ms before the other client released",
                      t_release - w.done_at);
            CHECK_MSG(w.remaining > 0, "OK with remaining %lld ms", w.remaining);
            CHECK_MSG(w.holds, "OK, but the server does not hold the waiter's token");
        }
    }
out:
    if (lt) rlk_lock_release(lt);
    child_end(&w);
    CMD(admin, "DEL", name);
    rlk_client_free(h);
    rlk_client_free(t);
}

/* The reply of a waiting acquire's first try is lost; the re-send finds
 * the lock taken by that try: acquired, valid for about the TTL. */
static void test_lost_first_waiting_try(void)
{
    const char *name = "f-lost-first";
    struct proxy px;
    fake_server *fs;
    rlk_client *a = NULL, *other = NULL;
    rlk_lock *l = NULL, *lo;
    rlk_lock_options o;
    char url[64], got[256];
    int rc;
    fs = proxy_start(&px, url, sizeof url);
    if (!fs) return;
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a) goto out;
    CMD(admin, "DEL", name);
    /* A wait that times out loads the waiting script (so the cut reply
     * is its result and not a NOSCRIPT) and leaves the client subscribed
     * (RESP3): the next wait for this lock joins the line in its first
     * try. */
    other = CLIENT();
    lo = ACQ(other, name, 60000);
    if (!lo) goto out;
    opts(&o, 10000, 200, RLK_LOCK_SIMPLE, 0, NULL);
    rc = rlk_lock_acquire(a, name, &o, &l);
    CHECK_MSG(rc == RLK_LOCK_BUSY, "warm-up wait: %d %s", rc, rlk_client_errmsg(a));
    if (l) rlk_lock_release(l);
    l = NULL;
    /* Freed without a release message: one arriving later would be the
     * reply the proxy cuts. */
    rlk_lock_forget(lo);
    CMD(admin, "DEL", name);

    opts(&o, 10000, 5000, RLK_LOCK_SIMPLE, 0, NULL);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    rc = rlk_lock_acquire(a, name, &o, &l);
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 1);
    CHECK_MSG(rc == RLK_OK && l, "acquire: %d %s", rc, rlk_client_errmsg(a));
    if (l) {
        int64_t rem = rlk_lock_remaining_ms(l);
        CHECK_MSG(rem >= 5000, "remaining %lld ms after a lost first try (TTL 10000)",
                  (long long)rem);
        CHECK(held_by(admin, name, got, sizeof got) == 1);
        CHECK_EQ_STR(got, rlk_lock_token(l));
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    }
out:
    rlk_client_free(a);
    rlk_client_free(other);
    fake_stop(fs);
    CMD(admin, "DEL", name);
}

/* A waiter paused in line holds the lock up for about one re-check
 * period at most, not for its TTL. */
static void test_paused_waiter_does_not_stall(void)
{
    const char *name = "f-stall";
    rlk_client *h = CLIENT(), *tc = CLIENT();
    rlk_lock *lh;
    struct child w;
    struct waiter t;
    int started = 0;
    int64_t t_rel;
    w.pid = -1;
    w.fd = -1;
    if (!h || !tc) goto out;
    CMD(admin, "DEL", name);
    lh = ACQ(h, name, 60000);
    if (!lh || !child_start(&w, srv_url, name, 30000, 20000)) goto out;
    if (!wait_in_line(h, name, 1, SLOWX(5000))) goto out;
    started = waiter_start(&t, tc, name, 10000, SLOWX(6000), RLK_LOCK_SIMPLE);
    if (!started || !wait_in_line(h, name, 2, SLOWX(5000))) goto out;
    CHECK_EQ_INT(kill(w.pid, SIGSTOP), 0);
    CHECK_EQ_INT(rlk_lock_release(lh), RLK_OK);
    t_rel = ts_now_ms();
    pthread_join(t.th, NULL);
    started = 0;
    printf("    second waiter: rc %d after %lld ms\n", t.rc, (long long)(t.done_at - t_rel));
    CHECK_MSG(t.rc == RLK_OK, "second waiter: %d %s (after %lld ms)", t.rc, t.err,
              (long long)(t.done_at - t_rel));
    if (t.rc == RLK_OK)
        CHECK_MSG(t.done_at - t_rel <= SLOWX(4000), "second waiter got it %lld ms after the release",
                  (long long)(t.done_at - t_rel));
    if (t.l) CHECK_EQ_INT(rlk_lock_release(t.l), RLK_OK);
out:
    waiter_end(&t, &started);
    child_end(&w);
    CMD(admin, "DEL", name);
    rlk_client_free(h);
    rlk_client_free(tc);
}

/* Two resplock clients cycle a lock; a foreign client polling with SET NX
 * (redis-py's blocking lock) gets it within a few seconds. */
struct cycler {
    rlk_client *cl;
    const char *name;
    int *stop;
    int cycles, errors;
    pthread_t th;
};

static void *cycler_main(void *arg)
{
    struct cycler *c = arg;
    while (!__atomic_load_n(c->stop, __ATOMIC_SEQ_CST)) {
        rlk_lock_options o;
        rlk_lock *l = NULL;
        opts(&o, 10000, RLK_WAIT_FOREVER, RLK_LOCK_SIMPLE, 0, NULL);
        if (rlk_lock_acquire(c->cl, c->name, &o, &l) != RLK_OK) {
            c->errors++;
            break;
        }
        ts_pause_ms(5); /* the hold */
        if (rlk_lock_release(l) != RLK_OK) c->errors++;
        c->cycles++;
    }
    return NULL;
}

static void test_foreign_waiter_not_starved(void)
{
    const char *name = "f-foreign";
    struct cycler cy[2];
    rlk_conn *foreign = CONNECT(srv_url);
    int stop = 0, i, started = 0, got = 0, tries = 0;
    int64_t t0, waited = 0;
    memset(cy, 0, sizeof cy);
    if (!foreign) return;
    CMD(admin, "DEL", name);
    for (i = 0; i < 2; i++) {
        cy[i].cl = CLIENT();
        cy[i].name = name;
        cy[i].stop = &stop;
        if (!cy[i].cl) goto out;
    }
    for (i = 0; i < 2; i++) {
        if (!CHECK(pthread_create(&cy[i].th, NULL, cycler_main, &cy[i]) == 0)) goto out;
        started++;
    }
    /* Both are cycling before the foreign client starts. */
    t0 = ts_now_ms();
    while ((cy[0].cycles < 5 || cy[1].cycles < 5) && ts_now_ms() - t0 < SLOWX(5000))
        ts_pause_ms(5);
    CHECK_MSG(cy[0].cycles >= 5 && cy[1].cycles >= 5, "cycles %d and %d", cy[0].cycles,
              cy[1].cycles);
    t0 = ts_now_ms();
    while (ts_now_ms() - t0 < SLOWX(5000)) {
        rlk_resp_value *v = CMD(foreign, "SET", name, "foreign", "NX", "PX", "10000");
        tries++;
        if (v && v->type == RLK_RESP_SIMPLE) {
            got = 1;
            break;
        }
        ts_pause_ms(100); /* redis-py's polling interval */
    }
    waited = ts_now_ms() - t0;
    printf("    foreign client: %s after %lld ms, %d tries; resplock cycles %d + %d\n",
           got ? "got it" : "nothing", (long long)waited, tries, cy[0].cycles, cy[1].cycles);
    CHECK_MSG(got, "the foreign client got nothing in %lld ms (%d tries) while resplock "
              "clients cycled %d times", (long long)waited, tries, cy[0].cycles + cy[1].cycles);
    if (got) {
        char v[256];
        CHECK(held_by(admin, name, v, sizeof v) == 1);
        CHECK_EQ_STR(v, "foreign");
    }
out:
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    /* The foreign hold ends with a plain DEL (no message): the cyclers see
     * it at their next re-check and wind down. */
    CMD(foreign, "EVAL", "if redis.call('get', KEYS[1]) == 'foreign' then "
                         "return redis.call('del', KEYS[1]) end return 0",
        "1", name);
    for (i = 0; i < started; i++) pthread_join(cy[i].th, NULL);
    for (i = 0; i < 2; i++) {
        CHECK_EQ_INT(cy[i].errors, 0);
        rlk_client_free(cy[i].cl);
    }
    rlk_conn_free(foreign);
    CMD(admin, "DEL", name);
}

/* ------------------------------------------------------------------ */
/* 3. Holds and renewals                                               */

/* An inner hold with a shorter TTL never shortens the expiry the outer
 * hold relies on. */
static void test_reentrant_inner_ttl(void)
{
    const char *name = "f-reent";
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *outer, *inner;
    long long pttl;
    int64_t t_rel;
    int rc;
    if (!a || !b) goto out;
    CMD(admin, "DEL", name);
    outer = ACQ_R(a, name, 30000);
    if (!outer) goto out;
    inner = ACQ_R(a, name, 1000);
    if (inner) {
        pttl = CMD_INT(admin, "PTTL", name);
        CHECK_MSG(pttl > 25000, "PTTL %lld after the inner acquire (outer TTL 30000, inner 1000)",
                  pttl);
        CHECK_EQ_INT(rlk_lock_release(inner), RLK_OK);
    }
    t_rel = ts_now_ms();
    pttl = CMD_INT(admin, "PTTL", name);
    CHECK_MSG(pttl > 25000, "PTTL %lld after the inner release", pttl);
    while (ts_now_ms() - t_rel < 1300) ts_pause_ms(10); /* past the inner TTL */
    rc = try_acquire(b, name, RLK_LOCK_REENTRANT);
    CHECK_MSG(rc == RLK_LOCK_BUSY,
              "another client's try 1.3 s after the inner release: %d (outer handle: %lld ms "
              "left, PTTL %lld)",
              rc, (long long)rlk_lock_remaining_ms(outer), CMD_INT(admin, "PTTL", name));
    CHECK_EQ_INT(rlk_lock_release(outer), RLK_OK);
out:
    CMD(admin, "DEL", name);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* Waits until CLUSTER INFO says cluster_state:ok. */
static int wait_cluster_ok(rlk_conn *c, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    for (;;) {
        rlk_resp_value *v = CMD(c, "CLUSTER", "INFO");
        if (v && v->str && ts_contains(v->str, "cluster_state:ok")) return 1;
        if (!v || ts_now_ms() >= deadline) return 0;
        ts_pause_ms(20);
    }
}

/* Two watchdog locks in different slots of a cluster-enabled server,
 * renewed in tick mode: neither is lost. */
static void test_cluster_renewal(void)
{
    /* The bus port is given: the default (port + 10000) fails for ports
     * above 55535. */
    char bus[16];
    const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                           "--cluster-port", bus, NULL};
    const char *names[2] = {"f-cl-a", "f-cl-b"};
    ts_options to;
    ts_server *s;
    rlk_conn *adm = NULL;
    rlk_client *cl = NULL;
    rlk_lock *l[2] = {NULL, NULL};
    struct lost_rec lr;
    struct ticker t;
    rlk_resp_value *v;
    char url[64], got[256];
    int i;
    memset(&to, 0, sizeof to);
    memset(&lr, 0, sizeof lr);
    snprintf(bus, sizeof bus, "%d", ts_free_port(0));
    to.extra = extra;
    s = ts_start(&to);
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    adm = CONNECT(url);
    if (!adm) goto out;
    v = CMD(adm, "CLUSTER", "ADDSLOTSRANGE", "0", "16383");
    CHECK(v && v->type == RLK_RESP_SIMPLE);
    if (!CHECK(wait_cluster_ok(adm, SLOWX(10000)))) goto out;
    CHECK_MSG(t_slot(names[0]) != t_slot(names[1]), "slots %u and %u", t_slot(names[0]),
              t_slot(names[1]));
    cl = CLIENT_EX(url, 0, 0, NULL);
    if (!cl) goto out;
    for (i = 0; i < 2; i++) {
        l[i] = ACQ_WD(cl, names[i], 1000, &lr);
        if (!l[i]) goto out;
    }
    ticker_init(&t, cl, NULL, NULL, NULL, &lr);
    tick_for(&t, 3000, 1);
    printf("    %d ticks, %d errors (last %d: %s), %d lost\n", t.ticks, t.errors, t.last_rc,
           t.errors ? rlk_client_errmsg(cl) : "", lost_calls(&lr));
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(t.errors, 0);
    for (i = 0; i < 2; i++) {
        CHECK_MSG(!rlk_lock_is_lost(l[i]), "%s reported lost", names[i]);
        CHECK_MSG(held_by(adm, names[i], got, sizeof got) == 1, "%s is gone", names[i]);
        CHECK_EQ_STR(got, rlk_lock_token(l[i]));
    }
out:
    rlk_client_free(cl);
    rlk_conn_free(adm);
    ts_stop(s);
}

/* A tick-mode client holding A and waiting for B keeps A alive. */
struct sampler {
    const char *key, *token;
    int *stop;
    int samples, missing;
    int64_t first_missing; /* ms after start, or -1 */
    pthread_t th;
};

static void *sampler_main(void *arg)
{
    struct sampler *s = arg;
    rlk_conn *c = CONNECT(srv_url);
    int64_t t0 = ts_now_ms();
    s->first_missing = -1;
    while (c && !__atomic_load_n(s->stop, __ATOMIC_SEQ_CST)) {
        char got[256];
        s->samples++;
        if (held_by(c, s->key, got, sizeof got) != 1 || strcmp(got, s->token) != 0) {
            if (s->missing++ == 0) s->first_missing = ts_now_ms() - t0;
        }
        ts_pause_ms(50); /* sampling interval */
    }
    rlk_conn_free(c);
    return NULL;
}

static void test_tick_mode_renews_while_waiting(void)
{
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *la = NULL, *lb = NULL, *l2 = NULL;
    rlk_lock_options o;
    struct lost_rec lr;
    struct sampler sm;
    int stop = 0, started = 0, rc;
    int64_t t0;
    memset(&lr, 0, sizeof lr);
    memset(&sm, 0, sizeof sm);
    if (!a || !b) goto out;
    CMD(admin, "DEL", "f-tick-a", "f-tick-b");
    lb = ACQ(b, "f-tick-b", 60000);
    la = ACQ_WD(a, "f-tick-a", 1500, &lr);
    if (!la || !lb) goto out;
    sm.key = "f-tick-a";
    sm.token = rlk_lock_token(la);
    sm.stop = &stop;
    if (!CHECK(pthread_create(&sm.th, NULL, sampler_main, &sm) == 0)) goto out;
    started = 1;
    opts(&o, 10000, 4000, RLK_LOCK_SIMPLE, 0, NULL);
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(a, "f-tick-b", &o, &l2);
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(sm.th, NULL);
    started = 0;
    printf("    wait for B: rc %d after %lld ms; A missing in %d of %d samples (first at %lld "
           "ms), lost %d\n",
           rc, (long long)(ts_now_ms() - t0), sm.missing, sm.samples, (long long)sm.first_missing,
           lost_calls(&lr));
    CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
    CHECK_MSG(sm.missing == 0, "A was not held in %d of %d samples, first %lld ms into the wait",
              sm.missing, sm.samples, (long long)sm.first_missing);
    CHECK_MSG(!rlk_lock_is_lost(la), "A reported lost");
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
out:
    if (started) {
        __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
        pthread_join(sm.th, NULL);
    }
    if (l2) rlk_lock_release(l2);
    if (lb) rlk_lock_release(lb);
    CMD(admin, "DEL", "f-tick-a", "f-tick-b");
    rlk_client_free(a);
    rlk_client_free(b);
}

/* With the server frozen during a renewal round of the watchdog thread,
 * a local call (rlk_lock_forget) does not wait for the network. */
static void test_watchdog_thread_local_calls(void)
{
    ts_server *s = ts_start(NULL);
    rlk_client *cl = NULL;
    rlk_lock *l1, *l2;
    char url[64];
    int frozen = 0;
    int64_t t_acq, t0, took;
    if (!CHECK(s != NULL)) return;
    cl = own_client(s, url, sizeof url, 5000, 1);
    if (!cl) goto out;
    CHECK_EQ_INT(rlk_client_watchdog_start(cl), RLK_OK);
    l1 = ACQ_WD(cl, "f-wd-1", 6000, NULL);
    l2 = ACQ_WD(cl, "f-wd-2", 6000, NULL);
    t_acq = ts_now_ms();
    if (!l1 || !l2) goto out;
    frozen = CHECK(kill(s->pid, SIGSTOP) == 0);
    /* The round is due at a third of the TTL: past that, it is in flight
     * against the frozen server. */
    while (ts_now_ms() - t_acq < 6000 / 3 + SLOWX(500)) ts_pause_ms(10);
    t0 = ts_now_ms();
    rlk_lock_forget(l1);
    took = ts_now_ms() - t0;
    printf("    rlk_lock_forget took %lld ms with the server frozen\n", (long long)took);
    CHECK_MSG(took < SLOWX(200), "rlk_lock_forget took %lld ms", (long long)took);
out:
    if (frozen) kill(s->pid, SIGCONT);
    rlk_client_free(cl);
    ts_stop(s);
}

/* ------------------------------------------------------------------ */
/* 4. Release and its result                                           */

/* Fills the server with values until a write answers OOM, then with
 * smaller ones until those do too: the data alone, not the query buffer
 * of the refused write, is then over the limit.  1 then. */
static int fill_to_oom(rlk_conn *c)
{
    static char big[65536];
    static const size_t sizes[] = {sizeof big - 1, 4096, 256, 16};
    size_t k;
    int i = 0, oom = 0;
    memset(big, 'x', sizeof big - 1);
    for (k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        big[sizes[k]] = '\0';
        for (oom = 0; !oom && i < 100000; i++) {
            char key[32];
            rlk_resp_value *v;
            snprintf(key, sizeof key, "f-fill:%d", i);
            v = CMD(c, "SET", key, big);
            if (!v) return 0;
            oom = v->type == RLK_RESP_ERROR && v->str && ts_contains(v->str, "OOM");
        }
    }
    return CHECK_MSG(oom, "no OOM after %d values", i);
}

static void test_release_at_maxmemory(void)
{
    static const char *const extra[] = {"--maxmemory", "3mb", "--maxmemory-policy", "noeviction",
                                        NULL};
    const char *name = "f-oom";
    ts_server *s;
    rlk_conn *adm = NULL;
    rlk_client *a = NULL, *b = NULL;
    rlk_lock *l;
    struct waiter w;
    int started = 0, rc;
    int64_t t_rel;
    char url[64], got[256];
    if (!(s = own_server(extra, url, sizeof url))) return;
    adm = CONNECT(url);
    a = CLIENT_EX(url, 0, 0, NULL);
    b = CLIENT_EX(url, 0, 0, NULL);
    if (!adm || !a || !b) goto out;

    /* Alone. */
    l = ACQ(a, name, 60000);
    if (!l || !fill_to_oom(adm)) goto out;
    rc = rlk_lock_release(l);
    CHECK_MSG(rc == RLK_OK, "release at OOM: %d %s", rc, rlk_client_errmsg(a));
    CHECK_MSG(CMD_INT(adm, "EXISTS", name) == 0, "the lock is still there after the release");
    /* SYNC: the memory is free when it returns (Valkey frees it in the
     * background by default, lazyfree-lazy-user-flush yes). */
    CMD(adm, "FLUSHALL", "SYNC");

    /* With a waiter in line. */
    l = ACQ(a, name, 60000);
    if (!l) goto out;
    started = waiter_start(&w, b, name, 60000, SLOWX(3000), RLK_LOCK_SIMPLE);
    if (!started || !wait_in_line(a, name, 1, SLOWX(5000)) || !fill_to_oom(adm)) goto out;
    rc = rlk_lock_release(l);
    t_rel = ts_now_ms();
    CHECK_MSG(rc == RLK_OK, "release at OOM with a waiter: %d %s", rc, rlk_client_errmsg(a));
    pthread_join(w.th, NULL);
    started = 0;
    printf("    waiter: rc %d %lld ms after the release (%s)\n", w.rc,
           (long long)(w.done_at - t_rel), w.err);
    /* It gets the lock, or at least finds it free: what it cannot do is
     * wait out the releaser's TTL. */
    if (w.rc == RLK_OK && w.l) {
        CHECK(held_by(adm, name, got, sizeof got) == 1);
        CHECK_EQ_STR(got, rlk_lock_token(w.l));
        CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    } else {
        long long ex = CMD_INT(adm, "EXISTS", name);
        CHECK_MSG(w.rc != RLK_LOCK_BUSY && ex == 0,
                  "waiter at OOM: %d %s; the lock exists: %lld", w.rc, w.err, ex);
    }
out:
    waiter_end(&w, &started);
    rlk_client_free(a);
    rlk_client_free(b);
    rlk_conn_free(adm);
    ts_stop(s);
}

/* How many errors with code (their first word: "OOM") the server gave
 * since the last CONFIG RESETSTAT, from INFO errorstats; -1 on failure. */
static long long errors_of(rlk_conn *c, const char *code)
{
    char key[64];
    size_t kl;
    rlk_resp_value *v = CMD(c, "INFO", "errorstats");
    if (!v || !v->str) return -1;
    kl = (size_t)snprintf(key, sizeof key, "errorstat_%s:count=", code);
    for (size_t i = 0; i + kl <= v->len; i++)
        if (memcmp(v->str + i, key, kl) == 0) return strtoll(v->str + i + kl, NULL, 10);
    return 0;
}

/* cmd's calls refused before they ran (INFO commandstats'
 * rejected_calls): 0 when it has none. */
static long long rejected_of(rlk_conn *c, const char *cmd)
{
    char key[64];
    size_t kl;
    rlk_resp_value *v = CMD(c, "INFO", "commandstats");
    if (!v || !v->str) return -1;
    kl = (size_t)snprintf(key, sizeof key, "cmdstat_%s:", cmd);
    for (size_t i = 0; i + kl <= v->len; i++) {
        if (memcmp(v->str + i, key, kl) != 0) continue;
        const char *p = memmem(v->str + i, v->len - i, "rejected_calls=", 15);
        const char *eol = memchr(v->str + i, '\n', v->len - i);
        return p && (!eol || p < eol) ? strtoll(p + 15, NULL, 10) : 0;
    }
    return 0;
}

/* Whether the server takes SET ... IFEQ (asked of a key nobody uses: a
 * syntax error where it does not). */
static int has_set_ifeq(rlk_conn *c)
{
    rlk_resp_value *v = CMD(c, "SET", "f-oom-probe", "x", "IFEQ", "y");
    return v && v->type != RLK_RESP_ERROR;
}

/* Puts the server over maxmemory for good: maxmemory set to half of
 * what it uses, which noeviction does not free, so that every write
 * that may grow the data is refused whatever the server's own buffers
 * do meanwhile.  1 when a SET is refused then. */
static int stay_oom(rlk_conn *c)
{
    rlk_resp_value *v = CMD(c, "INFO", "memory");
    long long used = 0;
    char max[32];
    const char *p = v && v->str ? strstr(v->str, "used_memory:") : NULL;
    if (p) used = strtoll(p + strlen("used_memory:"), NULL, 10);
    if (!CHECK_MSG(used > 2, "used_memory %lld", used)) return 0;
    snprintf(max, sizeof max, "%lld", used / 2);
    v = CMD(c, "CONFIG", "SET", "maxmemory", max);
    if (!CHECK(v && v->type == RLK_RESP_SIMPLE)) return 0;
    v = CMD(c, "SET", "f-oom-probe", "x");
    return CHECK_MSG(v && v->type == RLK_RESP_ERROR && ts_contains(v->str, "OOM"),
                     "SET over maxmemory: %s", v && v->str ? v->str : "(no error)");
}

/* One user's locks at maxmemory (noeviction), each taken before the
 * server filled up: a reentrant lock held twice is released twice, a
 * lock is extended, the watchdog renews a lock past its TTL.  None of
 * those calls grows the data, so none is refused: not FCALL of the
 * function before it runs, not EVAL or EVALSHA at a write inside.
 * fcall: the user's calls go as FCALL (else EVALSHA, and EVAL once per
 * script). */
static void oom_holds(const char *url, rlk_conn *adm, int fcall)
{
    const char *re = "f-oom-re", *ex = "f-oom-ex", *wd = "f-oom-wd";
    rlk_client *cl = CLIENT_EX(url, 0, 0, NULL);
    rlk_lock *r1 = NULL, *r2 = NULL, *e = NULL, *w = NULL;
    struct lost_rec lost;
    char got[256];
    int rc;
    long long n, sets;
    /* The server has SET IFEQ (Valkey 8.1+): the SET in INFO's list. */
    int native = has_set_ifeq(adm);
    memset(&lost, 0, sizeof lost);
    if (!cl) return;
    r1 = ACQ_R(cl, re, 60000);
    r2 = ACQ_R(cl, re, 60000);
    e = ACQ(cl, ex, 60000);
    w = ACQ_WD(cl, wd, 1500, &lost);
    if (!r1 || !r2 || !e || !w || !CHECK(rlk_client_watchdog_start(cl) == RLK_OK) ||
        !stay_oom(adm))
        goto out;
    reset_stats(adm);

    /* Extended: from 60 s to 90 s.  Where the server has SET IFEQ, the
     * extend goes by it first, which a server at maxmemory refuses (SET
     * may grow the data), then by the script: one refused SET at most,
     * no refused script. */
    rc = rlk_lock_extend(e, 90000, RLK_EXTEND_SET);
    CHECK_MSG(rc == RLK_OK, "extend at OOM: %d %s", rc, rlk_client_errmsg(cl));
    n = CMD_INT(adm, "PTTL", ex);
    CHECK_MSG(n > 60000, "PTTL %lld after the extend to 90 s", n);
    sets = rejected_of(adm, "set");
    CHECK_MSG(sets <= (native ? 1 : 0), "extend at OOM: %lld SETs refused", sets);
    n = errors_of(adm, "OOM") - sets;
    CHECK_MSG(n == 0, "extend at OOM: %lld script calls refused for OOM", n);

    /* Renewed by the watchdog thread, four rounds (two TTLs) at least:
     * by the script (after one refused SET IFEQ where the server has
     * it). */
    reset_stats(adm);
    CHECK_MSG(wait_calls(adm, "fcall+evalsha+eval", 4, SLOWX(10000)),
              "%lld renewal calls", stat_calls(adm, "fcall+evalsha+eval"));
    sets = rejected_of(adm, "set");
    CHECK_MSG(sets <= (native ? 1 : 0), "renewals at OOM: %lld SETs refused", sets);
    n = errors_of(adm, "OOM") - sets;
    CHECK_MSG(n == 0, "renewals at OOM: %lld script calls refused for OOM", n);
    CHECK_EQ_INT(lost_calls(&lost), 0);
    if (CHECK(held_by(adm, wd, got, sizeof got) == 1)) CHECK_EQ_STR(got, rlk_lock_token(w));

    /* Released twice: one hold, then the lock. */
    reset_stats(adm);
    rc = rlk_lock_release(r2);
    r2 = NULL;
    CHECK_MSG(rc == RLK_OK, "first release at OOM: %d %s", rc, rlk_client_errmsg(cl));
    n = CMD_INT(adm, "EXISTS", re);
    CHECK_MSG(n == 1, "EXISTS %lld after one release of two holds", n);
    rc = rlk_lock_release(r1);
    r1 = NULL;
    CHECK_MSG(rc == RLK_OK, "second release at OOM: %d %s", rc, rlk_client_errmsg(cl));
    n = CMD_INT(adm, "EXISTS", re);
    CHECK_MSG(n == 0, "EXISTS %lld after both releases", n);
    n = errors_of(adm, "OOM");
    CHECK_MSG(n == 0, "releases at OOM: %lld calls refused for OOM", n);

    /* By the path meant. */
    if (fcall) {
        CHECK_MSG(stat_calls(adm, "fcall") > 0, "no FCALL");
        CHECK_EQ_INT(stat_calls(adm, "evalsha+eval"), 0);
    } else {
        CHECK_EQ_INT(stat_calls(adm, "fcall"), 0);
        CHECK_MSG(stat_calls(adm, "evalsha") > 0, "no EVALSHA");
    }
out:
    if (r2) rlk_lock_release(r2);
    if (r1) rlk_lock_release(r1);
    if (e) rlk_lock_release(e);
    if (w) rlk_lock_release(w);
    rlk_client_free(cl);
    CMD(adm, "CONFIG", "SET", "maxmemory", "0");
    /* SYNC: the next fill measures memory already freed (Valkey frees it
     * in the background by default). */
    CMD(adm, "FLUSHALL", "SYNC");
}

/* The scripts that free or keep a lock run at maxmemory, as FCALL of
 * their functions and as EVALSHA (a user without FCALL and FUNCTION). */
static void test_holds_at_maxmemory(void)
{
    static const char *const extra[] = {"--maxmemory-policy", "noeviction", NULL};
    ts_server *s;
    rlk_conn *adm = NULL;
    char url[64], user_url[128];
    if (!(s = own_server(extra, url, sizeof url))) return;
    adm = CONNECT(url);
    if (!adm) goto out;
    printf("    by FCALL\n");
    oom_holds(url, adm, 1);
    CMD(adm, "ACL", "SETUSER", "f-nofn", "on", ">f-pw", "~*", "&*", "+@all", "-fcall",
        "-function");
    snprintf(user_url, sizeof user_url, "redis://f-nofn:f-pw@%s:%d", s->host, s->port);
    printf("    by EVALSHA\n");
    oom_holds(user_url, adm, 0);
out:
    rlk_conn_free(adm);
    ts_stop(s);
}

/* A releaser whose user may not PUBLISH (ACL -publish; channels &*, so
 * that its client's own SUBSCRIBE of its handoff channel passes): its
 * release still frees the lock, with a waiter in line (of a user that
 * may publish), who gets it at its next look rather than at the end of
 * the releaser's TTL; and a reentrant lock's release, which publishes
 * "0" on Redisson's channel, frees it too. */
static void test_release_without_publish(void)
{
    const char *name = "f-nopub", *rname = "f-nopub-r";
    char url[128], got[256];
    rlk_client *a = NULL, *b = CLIENT();
    rlk_lock *l = NULL;
    struct waiter w;
    int started = 0, rc;
    int64_t t_rel, deadline;
    CMD(admin, "ACL", "SETUSER", "f-nopub", "reset", "on", ">f-pw", "~*", "&*", "+@all",
        "-publish");
    snprintf(url, sizeof url, "redis://f-nopub:f-pw@%s:%d", srv->host, srv->port);
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a || !b) goto out;

    /* Nobody in line: a reentrant lock. */
    l = ACQ_R(a, rname, 60000);
    if (!l) goto out;
    rc = rlk_lock_release(l);
    CHECK_MSG(rc == RLK_OK, "reentrant release without PUBLISH: %d %s", rc,
              rlk_client_errmsg(a));
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", rname), 0);

    /* A waiter in line. */
    l = ACQ(a, name, 60000);
    if (!l) goto out;
    started = waiter_start(&w, b, name, 60000, SLOWX(20000), RLK_LOCK_SIMPLE);
    if (!started || !wait_in_line(a, name, 1, SLOWX(5000))) goto out;
    rc = rlk_lock_release(l);
    t_rel = ts_now_ms();
    CHECK_MSG(rc == RLK_OK, "release without PUBLISH: %d %s", rc, rlk_client_errmsg(a));
    /* The waiter looks again at least every second (its re-check). */
    deadline = t_rel + SLOWX(5000);
    while (!waiter_done(&w) && ts_now_ms() < deadline) ts_pause_ms(5);
    CHECK_MSG(waiter_done(&w), "the waiter has not got the lock %lld ms after the release",
              (long long)(ts_now_ms() - t_rel));
    pthread_join(w.th, NULL);
    started = 0;
    printf("    waiter: rc %d %lld ms after the release\n", w.rc, (long long)(w.done_at - t_rel));
    if (CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) {
        CHECK(held_by(admin, name, got, sizeof got) == 1);
        CHECK_EQ_STR(got, rlk_lock_token(w.l));
        CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
        w.l = NULL;
    }
out:
    waiter_end(&w, &started);
    rlk_client_free(a);
    rlk_client_free(b);
    CMD(admin, "ACL", "DELUSER", "f-nopub");
}

/* The line of a name whose only waiter died, when a release yields
 * (after a chain of handoffs, the lock is freed once and the waiter kept
 * first in line): every key under the name still has a TTL.  The waiter
 * is a process of its own, killed in line; the chain (the "~chain" field
 * of the waiters hash: "c START LAST", server ms) is written here as a
 * run of handoffs that started 3 s ago and goes on. */
static void test_yield_keeps_ttls(void)
{
    const char *name = "f-yield";
    rlk_client *a = CLIENT();
    rlk_lock *l = NULL;
    struct child ch;
    char waiters[64], chain[64], first[256];
    long long now, n;
    int rc;
    memset(&ch, 0, sizeof ch);
    ch.pid = -1;
    ch.fd = -1;
    HO_KEY(waiters, name, "waiters");
    if (!a || !(l = ACQ(a, name, 60000))) goto out;
    if (!child_start(&ch, srv_url, name, 10000, 60000) || !wait_in_line(a, name, 1, SLOWX(5000)))
        goto out;
    child_end(&ch);
    now = server_time_ms();
    snprintf(chain, sizeof chain, "c %lld %lld", now - 3000, now);
    CMD(admin, "HSET", waiters, "~chain", chain);
    rc = rlk_lock_release(l);
    l = NULL;
    CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(a));
    /* It yielded (what this test is about): waiters keep away a while. */
    CHECK_EQ_INT(CMD_INT(admin, "HEXISTS", waiters, "~yield"), 1);
    n = keys_without_ttl(admin, "*f-yield*", first, sizeof first);
    CHECK_MSG(n == 0, "%lld keys without a TTL after the release, %s first", n, first);
out:
    child_end(&ch);
    if (l) rlk_lock_release(l);
    rlk_client_free(a);
}

/* A release that handed the lock over, whose reply was lost, is sent
 * again after the next holder released: it still reports that it
 * released. */
struct releaser {
    rlk_lock *l;
    int rc;
    pthread_t th;
};

static void *releaser_main(void *arg)
{
    struct releaser *r = arg;
    r->rc = rlk_lock_release(r->l);
    return NULL;
}

static void test_retried_release_exact(void)
{
    const char *name = "f-retry-rel";
    struct proxy px;
    struct releaser r;
    struct waiter w;
    fake_server *fs;
    rlk_client *a = NULL, *b = CLIENT(), *c = CLIENT();
    rlk_lock *l;
    char url[64];
    int started = 0, releasing = 0;
    fs = proxy_start(&px, url, sizeof url);
    if (!fs) goto out;
    a = CLIENT_EX(url, 0, 0, NULL);
    if (!a || !b || !c) goto out;
    CMD(admin, "DEL", name);
    /* The release script is loaded first, so the cut reply is its result
     * and not a NOSCRIPT. */
    l = ACQ(a, name, 60000);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    l = ACQ(a, name, 60000);
    if (!l) goto out;
    started = waiter_start(&w, b, name, 60000, SLOWX(10000), RLK_LOCK_SIMPLE);
    if (!started || !wait_in_line(c, name, 1, SLOWX(5000))) goto out;
    /* Where the server has SET IFEQ, this extend finds the lock marked by
     * the waiter: the holder goes by the scripts from then on, so that
     * the reply cut below is the release script's (else a DELIFEQ's 0,
     * before the script). */
    CHECK_EQ_INT(rlk_lock_extend(l, 60000, RLK_EXTEND_SET), RLK_OK);
    /* The reply is cut, and the re-send is held until the next holder
     * released. */
    __atomic_store_n(&px.hold, 1, __ATOMIC_SEQ_CST);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    r.l = l;
    r.rc = 1;
    if (!CHECK(pthread_create(&r.th, NULL, releaser_main, &r) == 0)) {
        __atomic_store_n(&px.hold, 0, __ATOMIC_SEQ_CST);
        goto out;
    }
    releasing = 1;
    pthread_join(w.th, NULL);
    started = 0;
    CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err);
    {
        /* The waiter may have the lock before the proxy has counted the
         * reply it cut: wait for the count. */
        int64_t until = ts_now_ms() + SLOWX(5000);
        while (__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST) < 1 && ts_now_ms() < until)
            ts_pause_ms(2);
    }
    CHECK_EQ_INT(__atomic_load_n(&px.cuts, __ATOMIC_SEQ_CST), 1);
    if (w.l) CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    __atomic_store_n(&px.hold, 0, __ATOMIC_SEQ_CST);
    pthread_join(r.th, NULL);
    releasing = 0;
    CHECK_MSG(r.rc == RLK_OK, "the re-sent release that handed the lock over: %d %s", r.rc,
              rlk_client_errmsg(a));
out:
    __atomic_store_n(&px.hold, 0, __ATOMIC_SEQ_CST);
    if (releasing) pthread_join(r.th, NULL);
    waiter_end(&w, &started);
    rlk_client_free(a);
    rlk_client_free(b);
    rlk_client_free(c);
    fake_stop(fs);
    CMD(admin, "DEL", name);
}

/* A hash field's value as a number; 0 when missing. */
static long long hget_int(const char *key, const char *field)
{
    char v[32] = "";
    CMD_STR(admin, v, "HGET", key, field);
    return atoll(v);
}

/* A reentrant lock held twice: the inner release's reply is lost, and
 * its re-send reaches the server late, after the tombstone of the first
 * attempt (which did take one hold away) is gone.  The re-send must not
 * take the outer hold too: the lock stays held, once, by its holder. */
static void test_late_resend_reentrant_release(void)
{
    const char *name = "f-late-rel";
    struct proxy px;
    fake_server *fs;
    rlk_client_config cfg;
    rlk_client *a = NULL, *b = CLIENT();
    rlk_lock *outer = NULL, *inner = NULL;
    char url[64], field[160];
    int rc;
    long long holds;
    int64_t until;
    fs = proxy_start(&px, url, sizeof url);
    if (!fs || !b) goto out;
    /* A command timeout of 1 s: the tombstone lives 2 s; the re-send
     * comes 3 s late. */
    client_cfg(&cfg, url);
    cfg.conn.command_timeout_ms = 1000;
    a = CLIENT_WITH(&cfg);
    if (!a) goto out;
    CMD(admin, "DEL", name);
    /* The release script is loaded first, so the cut reply is its result
     * and not a NOSCRIPT. */
    outer = ACQ_R(a, name, 60000);
    if (outer) CHECK_EQ_INT(rlk_lock_release(outer), RLK_OK);
    outer = ACQ_R(a, name, 60000);
    inner = ACQ_R(a, name, 60000);
    if (!outer || !inner) goto out;
    snprintf(field, sizeof field, "%s", rlk_lock_token(outer));
    CHECK_EQ_INT(hget_int(name, field), 2);
    __atomic_store_n(&px.lag_ms, SLOWX(3000), __ATOMIC_SEQ_CST);
    __atomic_store_n(&px.cut, 1, __ATOMIC_SEQ_CST);
    rc = rlk_lock_release(inner);
    inner = NULL;
    printf("    inner release: %d %s\n", rc, rc ? rlk_client_errmsg(a) : "");
    /* Whatever it says, the re-send it sent reaches the server. */
    until = ts_now_ms() + SLOWX(10000);
    while (__atomic_load_n(&px.lagged, __ATOMIC_SEQ_CST) < 1 && ts_now_ms() < until)
        ts_pause_ms(5);
    if (!CHECK_MSG(__atomic_load_n(&px.lagged, __ATOMIC_SEQ_CST) >= 1, "no re-send came late"))
        goto out;
    /* The lagged chunk is executed by the time a later command of admin's
     * is (one server, one thread): poll the hold count until it settles. */
    until = ts_now_ms() + SLOWX(2000);
    do {
        holds = hget_int(name, field);
    } while (holds == 2 && ts_now_ms() < until && (ts_pause_ms(5), 1));
    CHECK_MSG(holds == 1, "holds %lld after the late re-send, want 1 (the outer one)", holds);
    CHECK_MSG(rlk_lock_remaining_ms(outer) > 0 && !rlk_lock_is_lost(outer),
              "the outer handle: %lld ms left, lost %d", (long long)rlk_lock_remaining_ms(outer),
              rlk_lock_is_lost(outer));
    /* And nobody else can take it. */
    CHECK_EQ_INT(try_acquire(b, name, RLK_LOCK_SIMPLE), RLK_LOCK_BUSY);
out:
    __atomic_store_n(&px.lag_ms, 0, __ATOMIC_SEQ_CST);
    if (inner) rlk_lock_release(inner);
    if (outer) rlk_lock_release(outer);
    rlk_client_free(a);
    rlk_client_free(b);
    fake_stop(fs);
    CMD(admin, "DEL", name);
}

/* The payload of the first message a raw subscriber got. */
struct first_msg {
    char payload[256];
    int got;
};

static void rec_first_msg(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    struct first_msg *fm = ctx;
    const rlk_resp_value *kind = rlk_resp_value_at(m, 0), *pl = rlk_resp_value_at(m, 2);
    (void)c;
    if (fm->got || !kind || !kind->str || kind->len != 7 || memcmp(kind->str, "message", 7) != 0 ||
        !pl || !pl->str)
        return;
    snprintf(fm->payload, sizeof fm->payload, "%.*s", (int)pl->len, pl->str);
    fm->got = 1;
}

/* Subscribes c to the handoff channels there are now (each connected
 * client has one; only the waiter's gets a message here): 1, or 0 (a
 * test failure). */
static int listen_handoff(rlk_conn *c)
{
    rlk_resp_value *v = CMD(admin, "PUBSUB", "CHANNELS", "resplock:handoff:*");
    char names[8][96];
    int n = 0;
    for (const rlk_resp_value *ch = v ? v->child : NULL; ch && n < 8; ch = ch->next)
        if (ch->str) snprintf(names[n++], sizeof names[0], "%.*s", (int)ch->len, ch->str);
    if (!CHECK_MSG(n > 0, "no handoff channel")) return 0;
    for (int i = 0; i < n; i++)
        if (!CHECK(rlk_conn_subscribe(c, names[i], strlen(names[i])) == RLK_OK)) return 0;
    return 1;
}

/* The fencing token never goes back: it is the server's clock, not a
 * stored counter that a release, an eviction or a lost data set could
 * reset, and a handoff message carries it exactly. */
static void test_fence_never_back(void)
{
    const char *name = "f-fence";
    /* The waiter re-checks only after its wait: it can get the lock only
     * through the handoff message (or its last try, at the end). */
    rlk_client *a = CLIENT(), *b = CLIENT_EX(srv_url, 0, 60000, NULL);
    rlk_lock *l;
    struct waiter w;
    struct first_msg fm;
    rlk_conn *spy = NULL;
    uint64_t f1 = 0, f2 = 0, f3 = 0;
    unsigned long long before_us, after_us, msg_fence;
    int started = 0;
    int64_t t_rel, deadline;
    memset(&fm, 0, sizeof fm);
    if (!a || !b) goto out;
    CMD(admin, "DEL", name);
    l = ACQ(a, name, 10000);
    if (!l) goto out;
    f1 = rlk_lock_fence(l);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    /* Nothing is stored for the fence: nothing to evict or to lose. */
    {
        rlk_resp_value *k = CMD(admin, "KEYS", "*f-fence*");
        CHECK_MSG(k && k->type == RLK_RESP_ARRAY && !k->child, "a key of the lock is left");
    }
    l = ACQ(a, name, 10000);
    if (!l) goto out;
    f2 = rlk_lock_fence(l);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK_MSG(f2 > f1, "fence %llu after a release, %llu before", (unsigned long long)f2,
              (unsigned long long)f1);
    CMD(admin, "FLUSHALL"); /* a restart without persistence */
    l = ACQ(a, name, 10000);
    if (!l) goto out;
    f3 = rlk_lock_fence(l);
    CHECK_MSG(f3 > f2, "fence %llu after FLUSHALL, %llu before", (unsigned long long)f3,
              (unsigned long long)f2);

    /* Handed over: the message carries the server's clock at the
     * release in microseconds, above 2^50, exactly. */
    started = waiter_start(&w, b, name, 60000, SLOWX(6000), RLK_LOCK_SIMPLE);
    if (!started || !wait_in_line(a, name, 1, SLOWX(5000))) goto out;
    spy = connect_url(srv_url, 3, rec_first_msg, &fm, __LINE__);
    if (!spy || !listen_handoff(spy)) goto out;
    before_us = (unsigned long long)server_time_ms() * 1000ULL;
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    t_rel = ts_now_ms();
    after_us = ((unsigned long long)server_time_ms() + 1) * 1000ULL;
    deadline = t_rel + LONG_MS;
    while (!fm.got && ts_now_ms() < deadline)
        if (rlk_conn_wait_push(spy, 100) < 0) break;
    printf("    handoff message: \"%s\"\n", fm.payload);
    msg_fence = strtoull(fm.payload, NULL, 10);
    CHECK_MSG(msg_fence > f3 && msg_fence >= before_us && msg_fence <= after_us &&
                  msg_fence > (1ULL << 50),
              "the handoff message \"%s\": not the clock at the release (%llu..%llu), above "
              "the last fence %llu", fm.payload, before_us, after_us, (unsigned long long)f3);
    pthread_join(w.th, NULL);
    started = 0;
    printf("    waiter: rc %d %lld ms after the release, fence %llu\n", w.rc,
           (long long)(w.done_at - t_rel), w.l ? (unsigned long long)rlk_lock_fence(w.l) : 0ULL);
    CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err);
    CHECK_MSG(w.done_at - t_rel < SLOWX(2000),
              "the waiter got the lock %lld ms after the release: not through the handoff",
              (long long)(w.done_at - t_rel));
    if (w.l) {
        CHECK_EQ_U64(rlk_lock_fence(w.l), msg_fence);
        CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    }
out:
    waiter_end(&w, &started);
    CMD(admin, "DEL", name);
    rlk_conn_free(spy);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* ------------------------------------------------------------------ */
/* 5. One deadline per call                                            */

static void test_deadline_frozen_server(void)
{
    ts_server *s = ts_start(NULL);
    rlk_client *cl = NULL;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    char url[64];
    int rc, frozen = 0;
    int64_t t0, took;
    if (!CHECK(s != NULL)) return;
    cl = own_client(s, url, sizeof url, 2000, 1);
    if (!cl) goto out;
    frozen = CHECK(kill(s->pid, SIGSTOP) == 0);
    opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(cl, "f-frozen", &o, &l);
    took = ts_now_ms() - t0;
    printf("    acquire against a frozen server: %d after %lld ms (%s)\n", rc, (long long)took,
           rlk_client_errmsg(cl));
    CHECK_EQ_INT(rc, RLK_ERR_TIMEOUT);
    CHECK_MSG(took < (slow ? 3600 : 2600), "took %lld ms with a 2000 ms timeout",
              (long long)took);
out:
    if (frozen) kill(s->pid, SIGCONT);
    rlk_client_free(cl);
    ts_stop(s);
}

static void test_deadline_bounded_wait(void)
{
    const char *name = "f-bounded";
    rlk_client *a = CLIENT(), *b = CLIENT();
    rlk_lock *la, *l = NULL;
    rlk_lock_options o;
    int rc;
    int64_t t0, took;
    if (!a || !b) goto out;
    CMD(admin, "DEL", name);
    la = ACQ(a, name, 60000);
    if (!la) goto out;
    opts(&o, 10000, 3000, RLK_LOCK_SIMPLE, 0, NULL);
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(b, name, &o, &l);
    took = ts_now_ms() - t0;
    printf("    wait 3000 ms on a held lock: %d after %lld ms\n", rc, (long long)took);
    CHECK_EQ_INT(rc, RLK_LOCK_BUSY);
    CHECK_MSG(took >= 3000 && took < 3500 + (slow ? MARGIN : 0), "took %lld ms", (long long)took);
    if (l) rlk_lock_release(l);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
out:
    CMD(admin, "DEL", name);
    rlk_client_free(a);
    rlk_client_free(b);
}

static void test_deadline_wait_across_restart(void)
{
    const char *name = "f-restart";
    ts_server *s = ts_start(NULL);
    rlk_client *a = NULL, *b = NULL;
    rlk_lock *la;
    struct waiter w;
    char url[64];
    int started = 0;
    int64_t t_restart;
    if (!CHECK(s != NULL)) return;
    a = own_client(s, url, sizeof url, 0, 1);
    b = own_client(s, url, sizeof url, 0, 1);
    if (!a || !b) goto out;
    la = ACQ(a, name, 60000);
    if (!la) goto out;
    started = waiter_start(&w, b, name, 10000, SLOWX(10000), RLK_LOCK_SIMPLE);
    if (!started || !wait_in_line(a, name, 1, SLOWX(5000))) goto out;
    rlk_lock_forget(la);
    t_restart = ts_now_ms();
    CHECK_EQ_INT(ts_restart(s), 0); /* a fresh, empty server on the same port */
    pthread_join(w.th, NULL);
    started = 0;
    printf("    waiter across a restart: rc %d %lld ms after it (%s)\n", w.rc,
           (long long)(w.done_at - t_restart), w.err);
    CHECK_MSG(w.rc == RLK_OK && w.l, "waiter across a restart: %d %s", w.rc, w.err);
    if (w.l) CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
out:
    waiter_end(&w, &started);
    rlk_client_free(a);
    rlk_client_free(b);
    ts_stop(s);
}

struct late_start {
    ts_server *s;
    int rc;
    pthread_t th;
};

static void *late_start_main(void *arg)
{
    struct late_start *ls = arg;
    ts_pause_ms(500); /* the server's downtime, not a synchronisation */
    ls->rc = ts_start_again(ls->s);
    return NULL;
}

static void test_deadline_first_connect_waits(void)
{
    ts_server *s = ts_start(NULL);
    rlk_client *cl = NULL;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    struct late_start ls;
    char url[64];
    int rc, started = 0;
    int64_t t0;
    if (!CHECK(s != NULL)) return;
    cl = own_client(s, url, sizeof url, 0, 0); /* never connected */
    if (!cl || !CHECK(ts_halt(s) == 0)) goto out;
    ls.s = s;
    ls.rc = -1;
    started = CHECK(pthread_create(&ls.th, NULL, late_start_main, &ls) == 0);
    if (!started) goto out;
    opts(&o, 10000, 5000, RLK_LOCK_SIMPLE, 0, NULL);
    t0 = ts_now_ms();
    rc = rlk_lock_acquire(cl, "f-late", &o, &l);
    printf("    acquire (wait 5000) on a server down for 500 ms: %d after %lld ms (%s)\n", rc,
           (long long)(ts_now_ms() - t0), rlk_client_errmsg(cl));
    CHECK_MSG(rc == RLK_OK && l, "acquire: %d %s", rc, rlk_client_errmsg(cl));
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
out:
    if (started) {
        pthread_join(ls.th, NULL);
        CHECK_EQ_INT(ls.rc, 0);
    }
    rlk_client_free(cl);
    ts_stop(s);
}

/* ------------------------------------------------------------------ */
/* 6. A lost connection is tried again                                 */

/* A number of INFO's section, -1 when absent (a test failure). */
static long long info_num(rlk_conn *c, const char *section, const char *field)
{
    char key[64];
    const char *p;
    rlk_resp_value *v = CMD(c, "INFO", section);
    if (!v || !v->str) return -1;
    snprintf(key, sizeof key, "\n%s:", field);
    p = strstr(v->str, key);
    if (!CHECK_MSG(p != NULL, "INFO %s has no %s", section, field)) return -1;
    return strtoll(p + strlen(key), NULL, 10);
}

/* Kills, from c, the connections named name: how many. */
static int kill_named(rlk_conn *c, const char *name)
{
    char needle[80], ids[8][24];
    int n = 0, killed = 0;
    const char *p;
    rlk_resp_value *v = CMD(c, "CLIENT", "LIST");
    if (!v || !v->str) return -1;
    snprintf(needle, sizeof needle, " name=%s ", name);
    for (p = v->str; n < 8 && (p = strstr(p, needle)) != NULL; p++) {
        const char *line = p;
        while (line > v->str && line[-1] != '\n') line--;
        snprintf(ids[n++], sizeof ids[0], "%lld", strtoll(line + 3, NULL, 10)); /* "id=" */
    }
    for (int i = 0; i < n; i++) killed += CMD_INT(c, "CLIENT", "KILL", "ID", ids[i]) == 1;
    return killed;
}

/* A server of its own that takes at most n connections (--maxclients),
 * its URL in url; NULL on failure (a test failure). */
static ts_server *small_server(const char *n, char *url, size_t len)
{
    const char *extra[] = {"--maxclients", n, NULL};
    ts_options o;
    ts_server *s;
    memset(&o, 0, sizeof o);
    o.extra = extra;
    s = ts_start(&o);
    if (CHECK(s != NULL)) url_of(url, len, s);
    return s;
}

/* A tick-mode client turned by the test as a program's loop turns it:
 * ticked when its fd is readable and when the last tick asked (at: the
 * time, -1: none).  cl NULL: the client's watchdog thread turns it. */
struct tick_loop {
    rlk_client *cl;
    int64_t at;
};

/* The client's life for ms: the tick loop's turns, or a pause. */
static void live_for(struct tick_loop *t, int ms)
{
    int64_t end = ts_now_ms() + ms;
    if (!t->cl) {
        ts_pause_ms(ms);
        return;
    }
    for (;;) {
        int64_t now = ts_now_ms(), wait = end - now, next;
        struct pollfd p = {rlk_client_fd(t->cl), POLLIN, 0};
        if (t->at >= 0 && t->at - now < wait) wait = t->at - now;
        if (poll(&p, 1, wait < 0 ? 0 : (int)wait) == 0 && (t->at < 0 || ts_now_ms() < t->at)) {
            if (ts_now_ms() >= end) return;
            continue;
        }
        rlk_client_tick(t->cl, &next);
        t->at = next < 0 ? -1 : ts_now_ms() + next;
        if (ts_now_ms() >= end) return;
    }
}

/* Waits until INFO's rejected_connections reaches min, within ms, the
 * client living meanwhile.  1 then. */
static int wait_rejected(struct tick_loop *t, rlk_conn *c, long long min, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    for (;;) {
        long long v = info_num(c, "stats", "rejected_connections");
        if (v >= min) return 1;
        if (v < 0 || ts_now_ms() >= deadline)
            return CHECK_MSG(0, "%lld connections refused, want %lld", v, min);
        live_for(t, 10);
    }
}

/* Waits until l's validity ends later than end (a renewal), within ms,
 * as above.  1 then. */
static int wait_renewed(struct tick_loop *t, rlk_lock *l, int64_t end, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    for (;;) {
        int64_t now = ts_now_ms();
        if (!rlk_lock_is_lost(l) && now + rlk_lock_remaining_ms(l) > end) return 1;
        if (rlk_lock_is_lost(l) || now >= deadline)
            return CHECK_MSG(0, "not renewed: lost %d, validity %lld ms", rlk_lock_is_lost(l),
                             (long long)rlk_lock_remaining_ms(l));
        live_for(t, 10);
    }
}

/* A client holding a lock under the watchdog loses its connection, and
 * the server refuses the reconnect: other connections took the slots
 * ("-ERR max number of clients reached" to its handshake).  Refused for
 * a while only: the client tries again after the backoff's pauses,
 * connects once the slots are free, and the watchdog renews the lock
 * before its validity ends; later calls work.  thread: the watchdog
 * thread, else tick mode. */
static void refused_reconnect(int thread)
{
    const char *name = thread ? "f-refused-thread" : "f-refused-tick";
    struct proxy px;
    struct tick_loop tl = {NULL, -1};
    struct lost_rec lr;
    fake_server *fs = NULL;
    rlk_conn *adm = NULL, *fill[2] = {NULL, NULL};
    rlk_client *cl = NULL;
    rlk_lock *l = NULL;
    char url[64], purl[64], tok[256];
    long long refused0;
    int64_t ttl = SLOWX(4000), end0;
    ts_server *s = small_server("3", url, sizeof url);
    memset(&lr, 0, sizeof lr);
    if (!s) return;
    adm = CONNECT(url);
    fs = proxy_start(&px, purl, sizeof purl);
    if (!adm || !fs) goto out;
    px.upstream_port = s->port; /* before any connection */
    cl = CLIENT_EX(purl, 0, 0, name);
    if (!cl) goto out;
    if (thread && !CHECK(rlk_client_watchdog_start(cl) == RLK_OK)) goto out;
    l = ACQ_WD(cl, name, ttl, &lr);
    if (!l) goto out;
    if (!thread) tl.cl = cl;
    /* The proxy holds the reconnect until the slot the client had is
     * taken: then the server has adm and the two others, its three. */
    __atomic_store_n(&px.hold, 1, __ATOMIC_SEQ_CST);
    if (!CHECK(kill_named(adm, name) == 1)) goto out;
    fill[0] = CONNECT(url);
    fill[1] = CONNECT(url);
    refused0 = info_num(adm, "stats", "rejected_connections");
    if (!fill[0] || !fill[1] || refused0 < 0) goto out;
    __atomic_store_n(&px.hold, 0, __ATOMIC_SEQ_CST);
    /* Refused, and tried again. */
    wait_rejected(&tl, adm, refused0 + 2, SLOWX(5000));
    end0 = ts_now_ms() + rlk_lock_remaining_ms(l);
    rlk_conn_free(fill[0]);
    rlk_conn_free(fill[1]);
    fill[0] = fill[1] = NULL;
    printf("    refused %lld times; renewed after: %s\n",
           info_num(adm, "stats", "rejected_connections") - refused0,
           wait_renewed(&tl, l, end0, ttl) ? "yes" : "no");
    CHECK_EQ_INT(lost_calls(&lr), 0);
    CHECK(held_by(adm, name, tok, sizeof tok) == 1 && strcmp(tok, rlk_lock_token(l)) == 0);
    CHECK_EQ_INT(rlk_lock_extend(l, ttl, RLK_EXTEND_SET), RLK_OK);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    l = NULL;
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", name), 0);
    CHECK_EQ_INT(try_acquire(cl, name, RLK_LOCK_SIMPLE), RLK_OK);
out:
    if (l) rlk_lock_release(l);
    rlk_client_free(cl);
    rlk_conn_free(fill[0]);
    rlk_conn_free(fill[1]);
    fake_stop(fs);
    rlk_conn_free(adm);
    ts_stop(s);
}

static void test_refused_reconnect_tick(void) { refused_reconnect(0); }
static void test_refused_reconnect_thread(void) { refused_reconnect(1); }

/* A handshake refused (the server full) fails a call that does not
 * wait, with the server's words; a waiting call goes on trying and gets
 * the lock once a slot is free, and later calls work. */
static void test_refused_then_served(void)
{
    const char *name = "f-refused";
    rlk_conn *adm = NULL, *fill = NULL;
    rlk_client *cl = NULL;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    struct waiter w;
    struct tick_loop tl = {NULL, -1};
    char url[64];
    long long refused0;
    int rc, started = 0;
    ts_server *s = small_server("2", url, sizeof url);
    if (!s) return;
    adm = CONNECT(url);
    fill = CONNECT(url);
    cl = own_client(s, url, sizeof url, 0, 0);
    if (!adm || !fill || !cl) goto out;
    opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
    rc = rlk_lock_acquire(cl, name, &o, &l);
    CHECK_EQ_INT(rc, RLK_ERR_SERVER);
    CHECK_MSG(ts_contains(rlk_client_errmsg(cl), "max number of clients reached"), "%s",
              rlk_client_errmsg(cl));
    refused0 = info_num(adm, "stats", "rejected_connections");
    started = waiter_start(&w, cl, name, 10000, SLOWX(10000), RLK_LOCK_SIMPLE);
    if (!started) goto out;
    wait_rejected(&tl, adm, refused0 + 1, SLOWX(5000));
    rlk_conn_free(fill);
    fill = NULL;
    pthread_join(w.th, NULL);
    started = 0;
    CHECK_MSG(w.rc == RLK_OK && w.l, "waiting acquire: %d %s", w.rc, w.err);
    if (w.l) CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(try_acquire(cl, name, RLK_LOCK_SIMPLE), RLK_OK);
out:
    waiter_end(&w, &started);
    if (l) rlk_lock_release(l);
    rlk_client_free(cl);
    rlk_conn_free(fill);
    rlk_conn_free(adm);
    ts_stop(s);
}

/* Waits until fd has had its connection reset (POLLERR or POLLHUP)
 * within ms: the next write on it fails.  1 then. */
static int wait_reset(int fd, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = (int)(deadline - ts_now_ms());
        if (fd < 0 || left <= 0) return CHECK_MSG(0, "fd %d: no reset within %lld ms", fd, (long long)ms);
        if (poll(&p, 1, left) == 1 && (p.revents & (POLLERR | POLLHUP))) return 1;
    }
}

/* The connection of a client was reset (a server that crashed, a
 * middlebox that dropped it) before a waiting acquire: its first write
 * fails with ECONNRESET.  A lost connection as any other: the wait
 * connects again, joins the line and gets the lock once it is free. */
static void test_write_reset_in_wait(void)
{
    const char *name = "f-reset";
    struct proxy px;
    struct waiter w;
    char purl[64];
    fake_server *fs = proxy_start(&px, purl, sizeof purl);
    rlk_client *a = fs ? CLIENT_EX(purl, 0, 0, NULL) : NULL, *b = CLIENT();
    rlk_lock *lb = NULL;
    int started = 0;
    lb = ACQ(b, name, 60000);
    if (!a || !lb) goto out;
    __atomic_store_n(&px.reset, PROXY_RESET_NOW, __ATOMIC_SEQ_CST);
    if (!wait_reset(rlk_client_fd(a), SLOWX(2000))) goto out;
    started = waiter_start(&w, a, name, 10000, SLOWX(10000), RLK_LOCK_SIMPLE);
    if (!started || !wait_in_line(b, name, 1, SLOWX(3000))) goto out;
    CHECK_EQ_INT(rlk_lock_release(lb), RLK_OK);
    lb = NULL;
    pthread_join(w.th, NULL);
    started = 0;
    CHECK_MSG(w.rc == RLK_OK && w.l, "waiting acquire: %d %s", w.rc, w.err);
    CHECK_EQ_U64(rlk_client_generation(a), 2);
    CHECK_EQ_INT(__atomic_load_n(&px.resets, __ATOMIC_SEQ_CST), 1);
out:
    waiter_end(&w, &started);
    if (lb) rlk_lock_release(lb);
    CMD(admin, "DEL", name);
    rlk_client_free(a);
    rlk_client_free(b);
    fake_stop(fs);
}

/* With reconnecting off, a reset connection fails the call with the
 * transport's words once: the write that met it, or the read. */
static void test_reset_messages(void)
{
    const char *name = "f-reset-msg";
    struct proxy px;
    rlk_client_config cfg;
    rlk_client *a = NULL;
    rlk_lock_options o;
    rlk_lock *l = NULL;
    char purl[64], want[160];
    fake_server *fs = proxy_start(&px, purl, sizeof purl);
    if (!fs) return;
    client_cfg(&cfg, purl);
    cfg.conn.reconnect_attempts = -1;
    opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
    for (int at_reply = 0; at_reply < 2; at_reply++) {
        a = CLIENT_WITH(&cfg);
        if (!a) break;
        if (at_reply) {
            /* The connection's set-up goes out with the first call and is
             * not waited for: a reset at its reply would meet the write of
             * the call.  One lock taken and let go first leaves only the
             * acquire's own reply to come after the flag. */
            if (!CHECK(rlk_lock_acquire(a, "f-reset-msg-first", &o, &l) == RLK_OK)) break;
            CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
            l = NULL;
        }
        __atomic_store_n(&px.reset, at_reply ? PROXY_RESET_AT_REPLY : PROXY_RESET_NOW,
                         __ATOMIC_SEQ_CST);
        if (!at_reply && !wait_reset(rlk_client_fd(a), SLOWX(2000))) break;
        CHECK_EQ_INT(rlk_lock_acquire(a, name, &o, &l), RLK_ERR_IO);
        snprintf(want, sizeof want, "acquire: %s 127.0.0.1:%d: Connection reset by peer",
                 at_reply ? "read" : "write", fake_port(fs));
        CHECK_EQ_STR(rlk_client_errmsg(a), want);
        if (l) rlk_lock_release(l);
        l = NULL;
        rlk_client_free(a);
        a = NULL;
    }
    CHECK_EQ_INT(__atomic_load_n(&px.resets, __ATOMIC_SEQ_CST), 2);
    rlk_client_free(a);
    CMD(admin, "DEL", name);
    fake_stop(fs);
}

/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* 7. A try refused for now goes again, known by its code alone        */

/* An error whose text names LOADING or BUSY without being one is the
 * try's result: one try, not the pauses and tries owed to a server
 * loading its data or busy with a script.  Here the server echoes the
 * lock's name in "ERR unknown command 'SET', with args beginning with:
 * 'LOADING-report' ...", its SET renamed away. */
static void test_refusal_named_not_coded(void)
{
    static const char *const extra[] = {"--rename-command", "SET", "", NULL};
    static const char *const names[] = {"LOADING-report", "nightly-BUSY"};
    ts_server *s;
    rlk_conn *adm = NULL;
    rlk_client *cl = NULL;
    char url[64];
    if (!(s = own_server(extra, url, sizeof url))) return;
    adm = CONNECT(url);
    cl = CLIENT_EX(url, 0, 0, NULL);
    if (!adm || !cl) goto out;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        rlk_lock_options o;
        rlk_lock *l = NULL;
        opts(&o, 10000, 0, RLK_LOCK_SIMPLE, 0, NULL);
        CMD(adm, "CONFIG", "RESETSTAT");
        int rc = rlk_lock_acquire(cl, names[i], &o, &l);
        CHECK_MSG(rc == RLK_ERR_SERVER && ts_contains(rlk_client_errmsg(cl), "unknown command"),
                  "acquire %s: %d %s", names[i], rc, rlk_client_errmsg(cl));
        /* The server's error's class, from its code, with the status. */
        CHECK_EQ_INT(rlk_client_errclass(cl), RLK_EC_OTHER);
        /* One SET refused, one try. */
        long long errs = errors_of(adm, "ERR");
        CHECK_MSG(errs == 1, "acquire %s: %lld tries refused, want 1", names[i], errs);
        if (l) rlk_lock_release(l);
    }
out:
    rlk_client_free(cl);
    rlk_conn_free(adm);
    ts_stop(s);
}

/* A script that keeps the server busy for ARGV[1] ms by its clock, run
 * on a connection of its own. */
struct busy_script {
    char url[64];
    int64_t ms;
    int rc;
};

static void *busy_script_main(void *arg)
{
    struct busy_script *b = arg;
    static const char script[] =
        "local t = redis.call('TIME') local s = t[1] * 1000 + t[2] / 1000 "
        "while true do local n = redis.call('TIME') "
        "if n[1] * 1000 + n[2] / 1000 >= s + tonumber(ARGV[1]) then return 1 end end";
    char ms[24];
    rlk_conn_config cfg;
    rlk_conn *c;
    rlk_resp_value *v;
    snprintf(ms, sizeof ms, "%lld", (long long)b->ms);
    const char *argv[4] = {"EVAL", script, "0", ms};
    cfg_init(&cfg, b->url);
    cfg.command_timeout_ms = LONG_MS + (int)b->ms;
    b->rc = -1;
    if ((c = rlk_conn_new(&cfg)) != NULL) {
        b->rc = rlk_conn_command(c, &v, 4, argv, NULL);
        if (b->rc == RLK_OK && v->type != RLK_RESP_INTEGER) b->rc = RLK_ERR_SERVER;
        rlk_conn_free(c);
    }
    return NULL;
}

/* A try the server refuses with BUSY (a script runs past
 * busy-reply-threshold) goes again after a pause while the wait lasts,
 * and takes the lock once the script is over. */
static void test_refused_busy_tried_again(void)
{
    static const char *const extra[] = {"--lua-time-limit", "50", NULL};
    const char *name = "f-busy-again";
    ts_server *s;
    rlk_conn *adm = NULL, *probe = NULL;
    rlk_client *cl = NULL;
    rlk_lock *l = NULL;
    rlk_lock_options o;
    struct busy_script b;
    pthread_t th;
    int started = 0, rc;
    long long probe_busy = 0;
    char url[64];
    if (!(s = own_server(extra, url, sizeof url))) return;
    adm = CONNECT(url);
    probe = CONNECT(url);
    cl = CLIENT_EX(url, 0, 0, NULL);
    if (!adm || !probe || !cl) goto out;
    /* Connected, and its scripts loaded, before the server is busy. */
    l = ACQ(cl, name, 10000);
    if (!l || !CHECK(rlk_lock_release(l) == RLK_OK)) goto out;
    l = NULL;
    CMD(adm, "CONFIG", "RESETSTAT");

    memset(&b, 0, sizeof b);
    snprintf(b.url, sizeof b.url, "%s", url);
    b.ms = SLOWX(2000);
    if (!CHECK(pthread_create(&th, NULL, busy_script_main, &b) == 0)) goto out;
    started = 1;
    /* Busy once a PING is refused with BUSY. */
    for (int64_t until = ts_now_ms() + LONG_MS; ts_now_ms() < until; ts_pause_ms(2)) {
        rlk_resp_value *v = CMD(probe, "PING");
        if (v && v->type == RLK_RESP_ERROR && v->len >= 4 && memcmp(v->str, "BUSY", 4) == 0) {
            probe_busy++;
            break;
        }
    }
    if (!CHECK_MSG(probe_busy == 1, "the server never answered BUSY")) goto out;

    opts(&o, 10000, SLOWX(10000), RLK_LOCK_SIMPLE, 0, NULL);
    rc = rlk_lock_acquire(cl, name, &o, &l);
    CHECK_MSG(rc == RLK_OK, "acquire while the server is busy: %d %s", rc,
              rlk_client_errmsg(cl));
    pthread_join(th, NULL);
    started = 0;
    CHECK_EQ_INT(b.rc, RLK_OK);
    /* It was refused, then tried again. */
    long long busy = errors_of(adm, "BUSY") - probe_busy;
    CHECK_MSG(busy >= 1, "the client's tries refused with BUSY: %lld", busy);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
out:
    if (started) {
        /* The script ends by itself; SCRIPT KILL makes sure of it. */
        rlk_resp_value *v = probe ? CMD(probe, "SCRIPT", "KILL") : NULL;
        (void)v;
        pthread_join(th, NULL);
    }
    rlk_client_free(cl);
    rlk_conn_free(probe);
    rlk_conn_free(adm);
    ts_stop(s);
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    if (argc == 6 && strcmp(argv[1], "--child-wait") == 0) return child_wait_main(argv + 2);
    self_path = strchr(argv[0], '/') ? argv[0] : "/proc/self/exe"; /* found through PATH */
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;

    RUN(test_stale_handoff);
    RUN(test_lost_first_waiting_try);
    RUN(test_paused_waiter_does_not_stall);
    RUN(test_foreign_waiter_not_starved);
    RUN(test_reentrant_inner_ttl);
    RUN(test_cluster_renewal);
    RUN(test_tick_mode_renews_while_waiting);
    RUN(test_watchdog_thread_local_calls);
    RUN(test_release_at_maxmemory);
    RUN(test_late_resend_reentrant_release);
    RUN(test_holds_at_maxmemory);
    RUN(test_release_without_publish);
    RUN(test_yield_keeps_ttls);
    RUN(test_retried_release_exact);
    RUN(test_fence_never_back);
    RUN(test_deadline_frozen_server);
    RUN(test_deadline_bounded_wait);
    RUN(test_deadline_wait_across_restart);
    RUN(test_deadline_first_connect_waits);
    RUN(test_refused_reconnect_tick);
    RUN(test_refused_reconnect_thread);
    RUN(test_refused_then_served);
    RUN(test_write_reset_in_wait);
    RUN(test_reset_messages);
    RUN(test_refusal_named_not_coded);
    RUN(test_refused_busy_tried_again);

    return locktest_finish(t0);
}
