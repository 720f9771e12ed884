/* SPDX-License-Identifier: BSD-3-Clause */
/* The helpers of locktest.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "testlib.h"

#include "locktest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <signal.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define HAVE_VALGRIND_H 1
#endif
#endif

int slow;
int64_t MARGIN;
int ran_any;

/* ------------------------------------------------------------------ */
/* Helpers                                                             */

long gettid_(void)
{
    return (long)syscall(SYS_gettid);
}

int is_token(const char *s)
{
    size_t i;
    if (!s || strlen(s) < 37 || strncmp(s, "rlk:", 4) != 0 || s[36] != ';') return 0;
    for (i = 4; i < 36; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    /* The holder's facts, percent-encoded: no space, '+' or other byte
     * a shell's read or the waiters' mark would trip on. */
    for (; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= 'A' && s[i] <= 'Z') || strchr("._/@:%=;-", s[i])))
            return 0;
    char pid[40];
    snprintf(pid, sizeof pid, ";p=%ld;t=", (long)getpid());
    return strncmp(s + 36, ";h=", 3) == 0 && strstr(s, pid) != NULL;
}

/* ------------------------------------------------------------------ */
/* Servers and clients                                                  */

ts_server *srv;
char srv_url[64];
rlk_conn *admin;

void client_cfg(rlk_client_config *cfg, const char *url)
{
    rlk_client_config_init(cfg);
    cfg->conn.url = url;
    cfg->conn.connect_timeout_ms = LONG_MS;
    cfg->conn.command_timeout_ms = LONG_MS;
}

rlk_client *client_with(const rlk_client_config *cfg, int line)
{
    rlk_client *cl = rlk_client_new(cfg);
    int rc;
    if (!tl_ok(cl != NULL, __FILE__, line, "rlk_client_new")) return NULL;
    rc = rlk_client_connect(cl);
    if (!tl_ok(rc == RLK_OK, __FILE__, line, "client connect %s: %d %s", cfg->conn.url, rc,
               rlk_client_errmsg(cl))) {
        rlk_client_free(cl);
        return NULL;
    }
    /* Tick mode: the tests renew watchdog locks by rlk_client_tick (or
     * start the watchdog thread), sometimes only after acquiring. */
    rc = rlk_client_tick(cl, NULL);
    if (!tl_ok(rc == RLK_OK, __FILE__, line, "tick: %d %s", rc, rlk_client_errmsg(cl))) {
        rlk_client_free(cl);
        return NULL;
    }
    return cl;
}

rlk_client *client_ex(const char *url, int protocol, int64_t recheck_ms, const char *name,
                      int line)
{
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    cfg.conn.protocol = protocol;
    cfg.conn.client_name = name;
    cfg.recheck_ms = recheck_ms;
    return client_with(&cfg, line);
}

void rec_lost(void *ctx, rlk_lock *l)
{
    struct lost_rec *r = ctx;
    r->at = ts_now_ms();
    r->remaining = rlk_lock_remaining_ms(l);
    r->is_lost = rlk_lock_is_lost(l);
    r->thread = pthread_self();
    __atomic_add_fetch(&r->calls, 1, __ATOMIC_SEQ_CST);
}

int lost_calls(struct lost_rec *r)
{
    return __atomic_load_n(&r->calls, __ATOMIC_SEQ_CST);
}

void opts(rlk_lock_options *o, int64_t ttl, int64_t wait, rlk_lock_kind kind, int watchdog,
          struct lost_rec *lost)
{
    rlk_lock_options_init(o);
    o->ttl_ms = ttl;
    o->wait_ms = wait;
    o->kind = kind;
    o->watchdog = watchdog;
    if (lost) {
        o->on_lost = rec_lost;
        o->ctx = lost;
    }
}

rlk_lock *acquire(rlk_client *cl, const char *name, int64_t ttl, rlk_lock_kind kind,
                  int watchdog, struct lost_rec *lost, int line)
{
    rlk_lock_options o;
    rlk_lock *l = NULL;
    int rc;
    if (!cl) return NULL;
    opts(&o, ttl, 0, kind, watchdog, lost);
    rc = rlk_lock_acquire(cl, name, &o, &l);
    if (!tl_ok(rc == RLK_OK && l != NULL, __FILE__, line, "acquire %s: %d %s", name, rc,
               rlk_client_errmsg(cl)))
        return NULL;
    return l;
}

int try_acquire(rlk_client *cl, const char *name, rlk_lock_kind kind)
{
    rlk_lock_options o;
    rlk_lock *l = (rlk_lock *)&o; /* must be set to NULL on failure */
    int rc;
    opts(&o, 10000, 0, kind, 0, NULL);
    rc = rlk_lock_acquire(cl, name, &o, &l);
    if (rc == RLK_OK) rlk_lock_release(l);
    else CHECK_MSG(l == NULL, "*out not NULL after a failed acquire");
    return rc;
}

int wait_exists(rlk_conn *c, const char *key, int want, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    for (;;) {
        long long v = CMD_INT(c, "EXISTS", key);
        if (v == want) return 1;
        if (v == LLONG_MIN || ts_now_ms() >= deadline) return 0;
        ts_pause_ms(5);
    }
}

long long stat_calls(rlk_conn *c, const char *cmd)
{
    char key[64], *text;
    const char *p, *word = cmd;
    long long n = 0;
    rlk_resp_value *v = CMD(c, "INFO", "commandstats");
    if (!v || !v->str) return -1;
    text = malloc(v->len + 1);
    if (!text) return -1;
    memcpy(text, v->str, v->len);
    text[v->len] = '\0';
    /* "a+b": the calls of both. */
    for (;;) {
        size_t len = strcspn(word, "+");
        snprintf(key, sizeof key, "cmdstat_%.*s:calls=", (int)len, word);
        p = strstr(text, key);
        if (p) n += strtoll(p + strlen(key), NULL, 10);
        if (!word[len]) break;
        word += len + 1;
    }
    free(text);
    return n;
}

void reset_stats(rlk_conn *c)
{
    rlk_resp_value *v = CMD(c, "CONFIG", "RESETSTAT");
    CHECK(v && v->type == RLK_RESP_SIMPLE);
}

int wait_calls(rlk_conn *c, const char *cmd, long long n, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    for (;;) {
        long long got = stat_calls(c, cmd);
        if (got >= n) return 1;
        if (got < 0 || ts_now_ms() >= deadline) return 0;
        ts_pause_ms(2);
    }
}

int count_clients(rlk_conn *c, const char *name)
{
    char needle[80];
    const char *p;
    int n = 0;
    rlk_resp_value *v = CMD(c, "CLIENT", "LIST");
    if (!v || !v->str) return -1;
    snprintf(needle, sizeof needle, " name=%s ", name);
    for (p = v->str; (p = strstr(p, needle)) != NULL && p < v->str + v->len; p++) n++;
    return n;
}

void rec_push(void *ctx, rlk_conn *c, const rlk_resp_value *m)
{
    struct pushes *p = ctx;
    const rlk_resp_value *kind = rlk_resp_value_at(m, 0), *ch = rlk_resp_value_at(m, 1),
                         *pl = rlk_resp_value_at(m, 2);
    (void)c;
    if (!kind || !ch || !pl || kind->len != 7 || memcmp(kind->str, "message", 7) != 0) return;
    snprintf(p->channel, sizeof p->channel, "%.*s", (int)ch->len, ch->str);
    snprintf(p->payload, sizeof p->payload, "%.*s", (int)pl->len, pl->str);
    p->n++;
}

int word_is(const rlk_resp_value *v, const char *w)
{
    return v && v->str && v->len == strlen(w) && memcmp(v->str, w, v->len) == 0;
}

void drain(rlk_conn *c, int line)
{
    rlk_resp_value *v = NULL;
    if (c)
        tl_ok(rlk_conn_command(c, &v, 1, (const char *[]){"PING"}, NULL) == RLK_OK, __FILE__,
              line, "PING: %s", rlk_conn_errmsg(c));
}

int wait_heard(rlk_conn *c, const int *n, int want)
{
    int64_t deadline = ts_now_ms() + LONG_MS;
    while (*n < want && ts_now_ms() < deadline)
        if (rlk_conn_wait_push(c, (int)(deadline - ts_now_ms())) < 0) break;
    return *n >= want;
}

void *waiter_main(void *arg)
{
    struct waiter *w = arg;
    w->rc = rlk_lock_acquire(w->cl, w->name, &w->o, &w->l);
    w->done_at = ts_now_ms();
    snprintf(w->err, sizeof w->err, "%s", rlk_client_errmsg(w->cl));
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

void waiters_end(struct waiter *w, int *joined, int n)
{
    for (int i = 0; i < n; i++) {
        if (!joined[i]) pthread_join(w[i].th, NULL);
        joined[i] = 1;
        if (w[i].l) rlk_lock_release(w[i].l);
        w[i].l = NULL;
    }
}

int waiter_done(struct waiter *w)
{
    return __atomic_load_n(&w->done, __ATOMIC_ACQUIRE);
}

int waiter_start(struct waiter *w, rlk_client *cl, const char *name, int64_t ttl,
                 int64_t wait, rlk_lock_kind kind)
{
    memset(w, 0, sizeof *w);
    w->cl = cl;
    w->name = name;
    opts(&w->o, ttl, wait, kind, 0, NULL);
    return CHECK(pthread_create(&w->th, NULL, waiter_main, w) == 0);
}

void ticker_init(struct ticker *t, rlk_client *cl, rlk_lock *l, rlk_conn *adm,
                 const char *key, struct lost_rec *lost)
{
    memset(t, 0, sizeof *t);
    t->cl = cl;
    t->l = l;
    t->adm = adm;
    t->key = key;
    t->lost = lost;
    t->min_pttl = LLONG_MAX;
}

void tick_for(struct ticker *t, int64_t ms, int until_lost)
{
    int64_t end = ts_now_ms() + ms;
    for (;;) {
        int64_t left = end - ts_now_ms(), wait;
        struct pollfd p;
        if (left <= 0) break;
        if (until_lost && t->lost && lost_calls(t->lost)) break;
        wait = t->next < 0 || t->next > left ? left : t->next;
        p.fd = rlk_client_fd(t->cl);
        p.events = POLLIN;
        p.revents = 0;
        if (poll(&p, 1, (int)wait) == 0 && wait == left) break;
        if (t->adm && t->key) {
            long long v = CMD_INT(t->adm, "PTTL", t->key);
            if (v < t->min_pttl) t->min_pttl = v;
        }
        if (t->l && !rlk_lock_is_lost(t->l)) t->valid_est = ts_now_ms() + rlk_lock_remaining_ms(t->l);
        t->last_rc = rlk_client_tick(t->cl, &t->next);
        t->ticks++;
        if (t->last_rc != RLK_OK) t->errors++;
    }
}

/* CRC16/XMODEM by table, written here independently of the library. */
static uint16_t crc_table[256];

uint16_t t_crc16(const char *s, size_t n)
{
    uint16_t crc = 0;
    size_t i;
    if (!crc_table[1]) {
        unsigned b, k;
        for (b = 0; b < 256; b++) {
            uint16_t c = (uint16_t)(b << 8);
            for (k = 0; k < 8; k++) c = (uint16_t)((c & 0x8000) ? (c << 1) ^ 0x1021 : c << 1);
            crc_table[b] = c;
        }
    }
    for (i = 0; i < n; i++)
        crc = (uint16_t)((crc << 8) ^ crc_table[((crc >> 8) ^ (unsigned char)s[i]) & 0xff]);
    return crc;
}

unsigned t_slot(const char *key)
{
    const char *open = strchr(key, '{');
    if (open) {
        const char *close = strchr(open + 1, '}');
        if (close && close > open + 1) return t_crc16(open + 1, (size_t)(close - open - 1)) & 16383u;
    }
    return t_crc16(key, strlen(key)) & 16383u;
}

void find_derived(const char *name, const char *what, char *out, size_t n)
{
    char pattern[64], suffix[128];
    rlk_resp_value *v;
    const rlk_resp_value *e;
    int found = 0;
    out[0] = '\0';
    snprintf(out, n, "{%s}:%s", name, what);
    if (CMD_INT(admin, "EXISTS", out) == 1) return;
    snprintf(out, n, "%s:%s", name, what);
    if (CMD_INT(admin, "EXISTS", out) == 1) return;
    out[0] = '\0';
    snprintf(pattern, sizeof pattern, "resplock:%s:*", what);
    snprintf(suffix, sizeof suffix, "}:%s", name);
    v = CMD(admin, "KEYS", pattern);
    for (e = v ? v->child : NULL; e; e = e->next) {
        size_t sl = strlen(suffix);
        if (e->len > sl && memcmp(e->str + e->len - sl, suffix, sl) == 0) {
            found++;
            snprintf(out, n, "%.*s", (int)e->len, e->str);
        }
    }
    CHECK_MSG(found == 1, "%s key of \"%s\": %d candidates", what, name, found);
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The client's bytes held back by a lagging proxy: one chunk at a time
 * (a client waiting for a reply sends no more). */
struct lagged {
    char buf[65536];
    size_t n;
    int64_t due;
};

/* Takes px->reset when it is `when`, and resets the client's side: the
 * caller then returns, and the close sends a reset instead of a FIN. */
static int proxy_reset(struct proxy *px, fake_conn *fc, int when)
{
    struct linger lg = {1, 0};
    int want = when;
    if (!__atomic_compare_exchange_n(&px->reset, &want, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return 0;
    setsockopt(fake_fd(fc), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    __atomic_add_fetch(&px->resets, 1, __ATOMIC_SEQ_CST);
    return 1;
}

void proxy_conn(fake_conn *fc, void *arg)
{
    struct proxy *px = arg;
    struct sockaddr_in a;
    char buf[65536];
    int up, lag = __atomic_load_n(&px->lag_ms, __ATOMIC_SEQ_CST), chunks = 0, client_gone = 0;
    struct lagged *held = NULL;
    while (__atomic_load_n(&px->hold, __ATOMIC_SEQ_CST))
        if (fake_pause(fc, 5) < 0) return;
    if (lag > 0 && !(held = calloc(1, sizeof *held))) return;
    up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (up < 0) return;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)px->upstream_port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(up, (struct sockaddr *)&a, sizeof a) != 0) {
        close(up);
        return;
    }
    for (;;) {
        struct pollfd p[2] = {{client_gone ? -1 : fake_fd(fc), POLLIN, 0}, {up, POLLIN, 0}};
        int r = poll(p, 2, 5);
        ssize_t n;
        if (fake_pause(fc, 0) < 0) break; /* the fake server is stopping */
        if (proxy_reset(px, fc, PROXY_RESET_NOW)) break;
        if (held && held->n && ts_now_ms() >= held->due) {
            if (send_all(up, held->buf, held->n) != 0) break;
            held->n = 0;
            __atomic_add_fetch(&px->lagged, 1, __ATOMIC_SEQ_CST);
        }
        if (client_gone && (!held || !held->n)) {
            /* What was held went on: the server answers it, to nobody. */
            shutdown(up, SHUT_WR);
            while (poll(p + 1, 1, 1000) > 0 && recv(up, buf, sizeof buf, 0) > 0) {
            }
            break;
        }
        if (r <= 0) continue;
        if (p[0].revents) {
            n = recv(fake_fd(fc), buf, sizeof buf, 0);
            if (n <= 0 && held && held->n) {
                client_gone = 1;
                continue;
            }
            if (n <= 0) break;
            if (held && chunks++ > 0) {
                if (held->n + (size_t)n > sizeof held->buf) break;
                memcpy(held->buf + held->n, buf, (size_t)n);
                if (!held->n) held->due = ts_now_ms() + lag;
                held->n += (size_t)n;
                continue;
            }
            if (send_all(up, buf, (size_t)n) != 0) break;
        }
        if (p[1].revents) {
            n = recv(up, buf, sizeof buf, 0);
            if (n <= 0 || proxy_reset(px, fc, PROXY_RESET_AT_REPLY)) break;
            if (__atomic_exchange_n(&px->cut, 0, __ATOMIC_SEQ_CST)) {
                __atomic_add_fetch(&px->cuts, 1, __ATOMIC_SEQ_CST);
                break;
            }
            if (!client_gone && fake_send(fc, buf, (size_t)n) != 0) break;
        }
    }
    free(held);
    close(up);
}

fake_server *proxy_start(struct proxy *px, char *url, size_t n)
{
    fake_server *fs;
    memset(px, 0, sizeof *px);
    px->upstream_port = srv->port;
    fs = fake_start(proxy_conn, px);
    if (!CHECK(fs != NULL)) return NULL;
    snprintf(url, n, "redis://127.0.0.1:%d", fake_port(fs));
    return fs;
}

long long waiter_entries(const char *key)
{
    rlk_resp_value *v = CMD(admin, "HKEYS", key);
    const rlk_resp_value *e;
    long long n = 0;
    if (!v) return LLONG_MIN;
    for (e = v->child; e; e = e->next)
        if (e->len && e->str[0] != '~') n++;
    return n;
}

int wait_waiters(const char *name, long long n, int64_t ms)
{
    char key[128];
    int64_t deadline = ts_now_ms() + ms;
    HO_KEY(key, name, "waiters");
    for (;;) {
        long long v = waiter_entries(key);
        if (v == n) return 1;
        if (v == LLONG_MIN || ts_now_ms() >= deadline) return 0;
        ts_pause_ms(2);
    }
}

long long keys_without_ttl(rlk_conn *c, const char *match, char *first, size_t n)
{
    char cursor[32] = "0";
    long long found = 0;
    if (n) first[0] = '\0';
    do {
        rlk_resp_value *v = CMD(c, "SCAN", cursor, "MATCH", match, "COUNT", "1000");
        const rlk_resp_value *next = v ? rlk_resp_value_at(v, 0) : NULL;
        const rlk_resp_value *keys = v ? rlk_resp_value_at(v, 1) : NULL;
        size_t nkeys = 0;
        if (!CHECK(next && next->str && keys && keys->type == RLK_RESP_ARRAY)) return -1;
        snprintf(cursor, sizeof cursor, "%.*s", (int)next->len, next->str);
        /* The keys copied first: the PTTL calls reuse the reply's memory. */
        for (const rlk_resp_value *k = keys->child; k; k = k->next) nkeys++;
        char (*names)[256] = calloc(nkeys ? nkeys : 1, sizeof *names);
        if (!CHECK(names != NULL)) return -1;
        size_t i = 0;
        for (const rlk_resp_value *k = keys->child; k; k = k->next, i++)
            snprintf(names[i], sizeof names[i], "%.*s", (int)k->len, k->str);
        for (i = 0; i < nkeys; i++) {
            if (CMD_INT(c, "PTTL", names[i]) != -1) continue;
            if (!found++ && n) snprintf(first, n, "%s", names[i]);
        }
        free(names);
    } while (strcmp(cursor, "0") != 0);
    return found;
}

long long server_time_ms(void)
{
    char s[32], us[32];
    rlk_resp_value *v = CMD(admin, "TIME");
    const rlk_resp_value *a = v ? rlk_resp_value_at(v, 0) : NULL;
    const rlk_resp_value *b = v ? rlk_resp_value_at(v, 1) : NULL;
    if (!CHECK(a && b && a->str && b->str)) return -1;
    snprintf(s, sizeof s, "%.*s", (int)a->len, a->str);
    snprintf(us, sizeof us, "%.*s", (int)b->len, b->str);
    return strtoll(s, NULL, 10) * 1000 + strtoll(us, NULL, 10) / 1000;
}

void locktest_timing(void)
{
    const char *wrap = getenv("RLK_WRAP");
    signal(SIGPIPE, SIG_DFL);
#ifdef HAVE_VALGRIND_H
    if (RUNNING_ON_VALGRIND) slow = 1;
#endif
    if (getenv("RLK_TEST_SLOW") || (wrap && wrap[0])) slow = 1;
    MARGIN = slow ? 1500 : 250;
    if (slow) printf("# slow mode (valgrind): timing margins %lld ms\n", (long long)MARGIN);
}

int locktest_setup(void)
{
    locktest_timing();
    srv = ts_start(NULL);
    if (!srv) {
        printf("FAIL main: cannot start redis-server\n");
        return -1;
    }
    url_of(srv_url, sizeof srv_url, srv);
    admin = connect_url(srv_url, 3, NULL, NULL, __LINE__);
    return admin ? 0 : -1;
}

/* Every key resplock writes has a TTL: once the tests ran, no key on the
 * shared server is left without one (the tests' own keys have one too,
 * or are deleted).  Counted as a test of its own, whatever the filter. */
static void no_key_without_ttl(void)
{
    char first[256];
    long long n;
    tl_state.test = "no key without a TTL";
    tl_state.test_failed = 0;
    n = keys_without_ttl(admin, "*", first, sizeof first);
    CHECK_MSG(n == 0, "%lld keys without a TTL on the shared server, %s first", n, first);
    if (tl_state.test_failed) tl_state.failed++;
    else tl_state.passed++;
    printf("%s no key without a TTL\n", tl_state.test_failed ? "FAILED" : "ok");
    tl_state.test = NULL;
}

int locktest_finish(int64_t t0)
{
    if (ran_any && admin) no_key_without_ttl();
    rlk_conn_free(admin);
    ts_stop(srv);
    if (ran_any) printf("# total %lld ms\n", (long long)(ts_now_ms() - t0));
    return tl_finish();
}
