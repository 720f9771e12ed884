/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The native forms of a simple lock's calls, and CLIENT NO-EVICT, against
 * the server $RLK_REDIS_SERVER names (Redis 7.0, Redis 8.0, Valkey 8.1,
 * Valkey 9...) and fake servers for the forms no packaged server has.
 *
 * What the server can do is read here from INFO server (server_name,
 * valkey_version, redis_version), by the table of the commands' first
 * versions, independently of the library's own detection:
 *
 *   SET key value IFEQ old PX ms   Valkey 8.1+, Redis 8.4+
 *   DELIFEQ key value              Valkey 9.0+
 *   DELEX key IFEQ value           Valkey 9.2+, Redis 8.4+
 *   CLIENT NO-EVICT on             Valkey, Redis 7.0+
 *
 * and every test asserts what that server must see: the commands of an
 * uncontended cycle, of an extend and of the watchdog's renewals counted
 * with INFO commandstats; the waiters' mark ("+w") sending a marked
 * lock's release, confirmation and renewal to the scripts, with the
 * handoff as fast and in the same order as before; ACL users without
 * the native release (it falls back to the script, silently) or without
 * scripts (the native cycle alone works); the exact commands sent to a
 * fake Redis 8.4 (DELEX IFEQ, SET IFEQ PX), its answers 0 and "unknown
 * command", and a fake Valkey 9.2 (DELIFEQ preferred); and the lock's
 * connections flagged no-evict (CLIENT LIST), which keep a lock renewed
 * while the server evicts every other client over maxmemory-clients.
 * Where a server lacks a command, the checks that apply are made and
 * said on stdout.
 *
 * Every wait is on a condition under a deadline; timing margins grow
 * under valgrind.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "fakeserver.h"
#include "locktest.h"
#include "lua.h"
#include "resplock.h"
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* The calls that run a script, whatever form the library chose. */
#define ANY_SCRIPT "evalsha+eval+fcall+fcall_ro+evalsha_ro+eval_ro"

/* The longest a waiter of these tests waits: a handoff comes long
 * before, and a broken one fails the test instead of hanging it. */
#define HO_WAIT_MS (slow ? 60000 : 20000)

#define CHECK_FENCE_AFTER(f, prev)                                                            \
    CHECK_MSG((f) > (prev), "fence %llu after %llu", (unsigned long long)(f),                 \
              (unsigned long long)(prev))

/* ------------------------------------------------------------------ */
/* The server's facts, from INFO server                                */

static struct {
    char name[16];    /* "redis" or "valkey" */
    char version[32];
    int set_ifeq, delifeq, delex, noevict;
} sv;

/* The value of field in INFO's text, into out: 1 when found. */
static int info_field(const char *text, size_t len, const char *field, char *out, size_t n)
{
    size_t fl = strlen(field);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end;
        if ((size_t)(le - p) > fl && memcmp(p, field, fl) == 0 && p[fl] == ':') {
            const char *v = p + fl + 1, *ve = le;
            while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ')) ve--;
            snprintf(out, n, "%.*s", (int)(ve - v), v);
            return 1;
        }
        p = le + 1;
    }
    return 0;
}

static int at_least(int maj, int min, int want_maj, int want_min)
{
    return maj > want_maj || (maj == want_maj && min >= want_min);
}

static int read_facts(void)
{
    rlk_resp_value *v = CMD(admin, "INFO", "server");
    char name[32] = "", vk[32] = "", rd[32] = "";
    int maj = 0, min = 0;
    if (!CHECK(v && v->str)) return -1;
    info_field(v->str, v->len, "server_name", name, sizeof name);
    info_field(v->str, v->len, "valkey_version", vk, sizeof vk);
    info_field(v->str, v->len, "redis_version", rd, sizeof rd);
    if (vk[0] || strcasecmp(name, "valkey") == 0) {
        snprintf(sv.name, sizeof sv.name, "valkey");
        snprintf(sv.version, sizeof sv.version, "%s", vk[0] ? vk : rd);
    } else {
        snprintf(sv.name, sizeof sv.name, "redis");
        snprintf(sv.version, sizeof sv.version, "%s", rd);
    }
    if (!CHECK_MSG(sscanf(sv.version, "%d.%d", &maj, &min) == 2, "INFO server: version \"%s\"",
                   sv.version))
        return -1;
    if (strcmp(sv.name, "valkey") == 0) {
        sv.set_ifeq = at_least(maj, min, 8, 1);
        sv.delifeq = at_least(maj, min, 9, 0);
        sv.delex = at_least(maj, min, 9, 2);
        sv.noevict = 1;
    } else {
        sv.set_ifeq = sv.delex = at_least(maj, min, 8, 4);
        sv.delifeq = 0;
        sv.noevict = at_least(maj, min, 7, 0);
    }
    printf("# %s %s: SET IFEQ %s, DELIFEQ %s, DELEX IFEQ %s, CLIENT NO-EVICT %s\n", sv.name,
           sv.version, sv.set_ifeq ? "yes" : "no", sv.delifeq ? "yes" : "no",
           sv.delex ? "yes" : "no", sv.noevict ? "yes" : "no");
    return 0;
}

/* The command a simple lock's release must go by first (commandstats'
 * name), or NULL: the script alone.  DELIFEQ where both exist. */
static const char *native_release(void)
{
    return sv.delifeq ? "delifeq" : sv.delex ? "delex" : NULL;
}

/* ------------------------------------------------------------------ */
/* INFO commandstats                                                   */

/* A field ("calls", "rejected_calls") of cmd's commandstats line; 0
 * when the command was not called; -1 on failure. */
static long long stat_field(rlk_conn *c, const char *cmd, const char *field)
{
    char key[96];
    const char *p, *end;
    rlk_resp_value *v = CMD(c, "INFO", "commandstats");
    if (!v || !v->str) return -1;
    snprintf(key, sizeof key, "cmdstat_%s:", cmd);
    end = v->str + v->len;
    for (p = v->str; p < end; p++) {
        size_t kl = strlen(key), fl = strlen(field);
        const char *eol;
        if ((size_t)(end - p) < kl || memcmp(p, key, kl) != 0) continue;
        eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        for (const char *q = p + kl; q + fl < eol; q++)
            if ((q == p + kl || q[-1] == ',') && memcmp(q, field, fl) == 0 && q[fl] == '=')
                return strtoll(q + fl + 1, NULL, 10);
        return 0;
    }
    return 0;
}

/* The commands called since the reset that are not in allowed (a
 * comma-separated list), INFO and CONFIG aside (the test's own), into
 * out ("" when none).  Returns their number, or -1. */
static int other_calls(rlk_conn *c, const char *allowed, char *out, size_t n)
{
    rlk_resp_value *v = CMD(c, "INFO", "commandstats");
    const char *p, *end;
    int found = 0;
    out[0] = '\0';
    if (!v || !v->str) return -1;
    end = v->str + v->len;
    for (p = v->str; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p)), *colon, *calls;
        char name[64], list[256];
        if (!eol) eol = end;
        colon = memchr(p, ':', (size_t)(eol - p));
        calls = colon ? strstr(colon, "calls=") : NULL;
        if (colon && calls && calls < eol && strncmp(p, "cmdstat_", 8) == 0 &&
            strtoll(calls + 6, NULL, 10) > 0) {
            snprintf(name, sizeof name, "%.*s", (int)(colon - p - 8), p + 8);
            snprintf(list, sizeof list, ",%s,", allowed);
            char probe[80];
            snprintf(probe, sizeof probe, ",%s,", name);
            if (!strstr(list, probe) && strncmp(name, "info", 4) != 0 &&
                strncmp(name, "config", 6) != 0) {
                size_t used = strlen(out);
                snprintf(out + used, n - used, "%s%s", used ? " " : "", name);
                found++;
            }
        }
        p = eol + 1;
    }
    return found;
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */

/* The GET of key into out (n bytes): 1 a string, 0 none. */
static int get_value(const char *key, char *out, size_t n)
{
    return cmd_str(admin, out, n, __LINE__, "GET", key, (const char *)NULL) == 1;
}

/* Waits until key's PTTL is at most ms (and the key there). */
static int wait_pttl_below(rlk_conn *c, const char *key, long long ms, int64_t within)
{
    int64_t deadline = ts_now_ms() + within;
    for (;;) {
        long long p = CMD_INT(c, "PTTL", key);
        if (p >= 0 && p <= ms) return 1;
        if (p == LLONG_MIN || ts_now_ms() >= deadline) return 0;
        ts_pause_ms(2);
    }
}

/* Waits until key's PTTL is above ms (a confirmation or renewal came). */
static int wait_pttl_above(rlk_conn *c, const char *key, long long ms, int64_t within)
{
    int64_t deadline = ts_now_ms() + within;
    for (;;) {
        long long p = CMD_INT(c, "PTTL", key);
        if (p > ms) return 1;
        if (p == LLONG_MIN || ts_now_ms() >= deadline) return 0;
        ts_pause_ms(2);
    }
}

/* Waits until key holds want with a PTTL above ms (a handoff's
 * confirmation came), within LONG_MS; 0 as soon as the value is another
 * (or none). */
static int wait_confirmed(const char *key, const char *want, long long ms)
{
    int64_t deadline = ts_now_ms() + LONG_MS;
    char got[256];
    for (;;) {
        long long p = CMD_INT(admin, "PTTL", key);
        if (!get_value(key, got, sizeof got) || strcmp(got, want) != 0) return 0;
        if (p > ms) return 1;
        if (p == LLONG_MIN || ts_now_ms() >= deadline) return 0;
        ts_pause_ms(2);
    }
}

/* A warm-up that leaves the server with the library's scripts (an
 * extend by adding runs a script on every server): a count of script
 * calls then holds no call that found them missing. */
static void warm_up(rlk_client *cl)
{
    rlk_lock *l = ACQ(cl, "nat-warm-up", 10000);
    if (!l) return;
    CHECK_EQ_INT(rlk_lock_extend(l, 1000, RLK_EXTEND_ADD), RLK_OK);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
}

/* The flags of the connection whose id is id (CLIENT LIST ID), into
 * out: 1 when it is there, 0 when it is gone, -1 on failure. */
static int client_flags(rlk_conn *c, long long id, char *out, size_t n)
{
    char ids[24];
    const char *f;
    rlk_resp_value *v;
    out[0] = '\0';
    snprintf(ids, sizeof ids, "%lld", id);
    v = CMD(c, "CLIENT", "LIST", "ID", ids);
    if (!v || !v->str) return -1;
    if (v->len == 0) return 0;
    f = strstr(v->str, " flags=");
    if (!f) return -1;
    f += 7;
    snprintf(out, n, "%.*s", (int)strcspn(f, " \r\n"), f);
    return 1;
}

/* The flags of every connection named name, space-separated into out;
 * their number. */
static int named_flags(rlk_conn *c, const char *name, char *out, size_t n)
{
    char needle[80];
    const char *p;
    int found = 0;
    rlk_resp_value *v = CMD(c, "CLIENT", "LIST");
    out[0] = '\0';
    if (!v || !v->str) return -1;
    snprintf(needle, sizeof needle, " name=%s ", name);
    for (p = v->str; (p = strstr(p, needle)) != NULL; p++) {
        const char *line = p, *f;
        while (line > v->str && line[-1] != '\n') line--;
        f = strstr(line, " flags=");
        if (f && f < p + strlen(needle) + 200) {
            size_t used = strlen(out);
            f += 7;
            snprintf(out + used, n - used, "%s%.*s", used ? " " : "", (int)strcspn(f, " \r\n"), f);
        }
        found++;
    }
    return found;
}

/* Whether every word of the space-separated flags has an 'e'. */
static int all_noevict(const char *flags)
{
    const char *p = flags;
    if (!*p) return 0;
    while (*p) {
        size_t len = strcspn(p, " ");
        if (!memchr(p, 'e', len)) return 0;
        p += len;
        while (*p == ' ') p++;
    }
    return 1;
}

/* A user by ACL SETUSER NAME reset on >PW ~* &* +@all RULES... */
static int make_user(const char *name, const char *const *rules)
{
    const char *argv[40];
    int argc = 0;
    rlk_resp_value *v = NULL;
    char pw[64];
    snprintf(pw, sizeof pw, ">%s-pw", name);
    argv[argc++] = "ACL";
    argv[argc++] = "SETUSER";
    argv[argc++] = name;
    argv[argc++] = "reset";
    argv[argc++] = "on";
    argv[argc++] = pw;
    argv[argc++] = "~*";
    argv[argc++] = "&*";
    argv[argc++] = "+@all";
    for (; rules && *rules && argc < 39; rules++) argv[argc++] = *rules;
    if (!CHECK(rlk_conn_command(admin, &v, argc, argv, NULL) == RLK_OK)) return 0;
    return CHECK_MSG(v->type == RLK_RESP_SIMPLE, "ACL SETUSER %s: %.*s", name, (int)v->len,
                     v->str ? v->str : "");
}

static void user_url(char *out, size_t n, const char *user)
{
    snprintf(out, n, "redis://%s:%s-pw@127.0.0.1:%d", user, user, srv->port);
}

static int start_watchdog(rlk_client *cl)
{
    int rc = rlk_client_watchdog_start(cl);
    return CHECK_MSG(rc == RLK_OK, "watchdog start: %d %s", rc, rlk_client_errmsg(cl));
}

static int no_refusal_seen(rlk_client *cl)
{
    const char *m = rlk_client_errmsg(cl);
    return CHECK_MSG(!ts_contains(m, "NOPERM") && !ts_contains(m, "permission") &&
                         !ts_contains(m, "unknown command"),
                     "errmsg: %s", m);
}

/* ------------------------------------------------------------------ */
/* 1. Uncontended: the cycle, the extend, the watchdog's renewals      */

/* SET NX PX, the window's HGET, TIME, and the release: by DELIFEQ (or
 * DELEX IFEQ) alone where the server has it, with no script at all;
 * else by the release script. */
static void test_cycle_uncontended(void)
{
    const char *name = "nat-cycle", *nat = native_release();
    rlk_client *cl = CLIENT();
    rlk_lock *l;
    char others[512], waiters[64], queue[64];
    int rc;
    if (!cl) return;
    warm_up(cl);
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    CMD(admin, "DEL", name, waiters, queue);
    reset_stats(admin);
    l = ACQ(cl, name, 10000);
    if (!l) goto out;
    rc = rlk_lock_release(l);
    CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(cl));
    CHECK_EQ_INT(stat_calls(admin, "set"), 1);
    CHECK_EQ_INT(stat_calls(admin, "hget"), 1);
    CHECK_EQ_INT(stat_calls(admin, "time"), 1);
    if (nat) {
        char allowed[64];
        CHECK_EQ_INT(stat_calls(admin, nat), 1);
        CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 0);
        CHECK_EQ_INT(stat_calls(admin, "function"), 0);
        snprintf(allowed, sizeof allowed, "set,hget,time,%s", nat);
        CHECK_MSG(other_calls(admin, allowed, others, sizeof others) == 0,
                  "commands besides SET NX PX, HGET, TIME and %s: %s", nat, others);
        printf("# %s %s: the uncontended cycle is SET NX PX, HGET, TIME, %s: no script\n",
               sv.name, sv.version, nat);
    } else {
        CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 1);
        CHECK_EQ_INT(stat_calls(admin, "delifeq+delex"), 0);
        printf("# %s %s: no native release: the cycle releases by one script call\n", sv.name,
               sv.version);
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name, waiters, queue), 0);
out:
    rlk_client_free(cl);
}

/* rlk_lock_extend's set form: SET IFEQ PX where the server has it (one
 * SET, no script), else the extend script.  The add form has no native
 * equivalent: a script everywhere. */
static void test_extend_set_form(void)
{
    const char *name = "nat-extend";
    rlk_client *cl = CLIENT();
    rlk_lock *l = NULL;
    char got[256], others[512];
    long long pttl;
    int rc;
    if (!cl) return;
    warm_up(cl);
    CMD(admin, "DEL", name);
    l = ACQ(cl, name, 10000);
    if (!l) goto out;
    reset_stats(admin);
    rc = rlk_lock_extend(l, 20000, RLK_EXTEND_SET);
    CHECK_MSG(rc == RLK_OK, "extend: %d %s", rc, rlk_client_errmsg(cl));
    pttl = CMD_INT(admin, "PTTL", name);
    CHECK_MSG(pttl > 20000 - MARGIN && pttl <= 20000, "PTTL %lld after extend to 20000", pttl);
    CHECK_EQ_INT(rlk_lock_ttl_ms(l), 20000);
    CHECK(get_value(name, got, sizeof got));
    CHECK_EQ_STR(got, rlk_lock_token(l));
    if (sv.set_ifeq) {
        CHECK_EQ_INT(stat_calls(admin, "set"), 1);
        CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 0);
        CHECK_MSG(other_calls(admin, "set,pttl,get", others, sizeof others) == 0,
                  "commands besides SET IFEQ PX: %s", others);
    } else {
        CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 1);
    }
    reset_stats(admin);
    rc = rlk_lock_extend(l, 5000, RLK_EXTEND_ADD);
    CHECK_MSG(rc == RLK_OK, "extend add: %d %s", rc, rlk_client_errmsg(cl));
    CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 1);
    pttl = CMD_INT(admin, "PTTL", name);
    CHECK_MSG(pttl > 25000 - 2 * MARGIN && pttl <= 25000, "PTTL %lld after adding 5000", pttl);
    rc = rlk_lock_release(l);
    l = NULL;
    CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(cl));
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    printf("# %s %s: extend (set form) by %s\n", sv.name, sv.version,
           sv.set_ifeq ? "SET IFEQ PX" : "the extend script");
out:
    if (l) rlk_lock_release(l);
    rlk_client_free(cl);
}

/* The watchdog renews a simple lock by SET IFEQ PX where the server has
 * it: at least three renewals, each putting the PTTL back up, without a
 * script; elsewhere by the renew script. */
static void test_watchdog_renewal(void)
{
    const char *name = "nat-wd";
    int64_t ttl = slow ? 3000 : 600;
    rlk_client *cl = CLIENT();
    struct lost_rec lost;
    rlk_lock *l = NULL;
    char got[256];
    long long p1;
    int started = 0, rc;
    memset(&lost, 0, sizeof lost);
    if (!cl) return;
    warm_up(cl);
    CMD(admin, "DEL", name);
    l = ACQ_WD(cl, name, ttl, &lost);
    if (!l) goto out;
    reset_stats(admin);
    if (!start_watchdog(cl)) goto out;
    started = 1;
    CHECK_MSG(wait_calls(admin, sv.set_ifeq ? "set" : ANY_SCRIPT, 3, LONG_MS),
              "fewer than 3 renewals (%s) in %d ms", sv.set_ifeq ? "SET" : "scripts", LONG_MS);
    /* The PTTL runs down, and a renewal puts it back up. */
    p1 = ttl * 3 / 4;
    CHECK_MSG(wait_pttl_below(admin, name, p1, LONG_MS), "the PTTL never went down to %lld", p1);
    CHECK_MSG(wait_pttl_above(admin, name, p1, LONG_MS), "the PTTL never went back above %lld",
              p1);
    if (sv.set_ifeq) CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 0);
    CHECK(!rlk_lock_is_lost(l));
    CHECK_EQ_INT(lost_calls(&lost), 0);
    CHECK(get_value(name, got, sizeof got));
    CHECK_EQ_STR(got, rlk_lock_token(l));
    printf("# %s %s: %lld renewals by %s\n", sv.name, sv.version,
           stat_calls(admin, sv.set_ifeq ? "set" : ANY_SCRIPT),
           sv.set_ifeq ? "SET IFEQ PX, no script" : "the renew script");
out:
    if (started) rlk_client_watchdog_stop(cl);
    if (l) {
        rc = rlk_lock_release(l);
        CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(cl));
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
    rlk_client_free(cl);
}

/* ------------------------------------------------------------------ */
/* 2. Contended: the mark, the fallback, the handoff                   */

/* The holder's release finds its value marked by the waiter: the
 * native release answers 0, the script hands the lock over, fast (long
 * before the waiter's re-check), with a larger fence; the new holder,
 * alone in line, has an unmarked value, confirmed by the script; having
 * waited in line, it releases by the script too (others would likely be
 * behind it: a native release would cost a round trip more). */
static void test_contended_handoff(void)
{
    const char *name = "nat-ho", *nat = native_release();
    rlk_client *a = CLIENT(), *b = CLIENT_EX(srv_url, 0, 10000, "nat-ho-b");
    struct waiter w;
    int joined = 0, started = 0;
    rlk_lock *la = NULL;
    char waiters[64], queue[64], got[256], want[256];
    uint64_t fence_a;
    int64_t t_rel, limit = slow ? 2000 : 500;
    long long pttl;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !b) goto out;
    warm_up(a);
    warm_up(b);
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence_a = rlk_lock_fence(la);
    if (!waiter_start(&w, b, name, 30000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK_MSG(wait_waiters(name, 1, LONG_MS), "the waiter did not register")) goto out;
    /* The waiter marked the value, and kept its TTL. */
    snprintf(want, sizeof want, "%s+w", rlk_lock_token(la));
    CHECK(get_value(name, got, sizeof got));
    CHECK_EQ_STR(got, want);
    pttl = CMD_INT(admin, "PTTL", name);
    CHECK_MSG(pttl > 30000 - 2 * MARGIN && pttl <= 30000, "PTTL %lld after the mark", pttl);

    reset_stats(admin);
    t_rel = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    CHECK_MSG(w.done_at - t_rel < limit, "handed over %lld ms after the release (re-check 10000)",
              (long long)(w.done_at - t_rel));
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence_a);
    /* Alone in line: the new holder's value is its token, unmarked. */
    CHECK(get_value(name, got, sizeof got));
    CHECK_EQ_STR(got, rlk_lock_token(w.l));
    /* Its confirmation puts the TTL to 30 s (the claim is ~11 s). */
    CHECK_MSG(wait_pttl_above(admin, name, 20000, LONG_MS), "no confirmation");
    if (nat) CHECK_EQ_INT(stat_calls(admin, nat), 1); /* answered 0: not deleted */
    /* The release script (A's), and the confirmation's: a handoff's
     * confirmation goes by the script on every server (a lock handed
     * over with others in line carries their mark). */
    CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 2);
    printf("# %s %s: a marked release: %s%s; the confirmation by the extend script\n", sv.name,
           sv.version, nat ? nat : "", nat ? " answered 0, then the script" : "the script");

    /* Nobody in line; a holder that waited in line releases by the
     * script alone (no native try first), and leaves nothing. */
    reset_stats(admin);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(stat_calls(admin, "delifeq+delex"), 0);
    CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 1);
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name, queue), 0);
    CHECK_EQ_INT(waiter_entries(waiters), 0);
out:
    if (la) rlk_lock_release(la);
    if (started && !joined) pthread_join(w.th, NULL);
    if (started && w.l) rlk_lock_release(w.l);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* An extend of a marked lock: SET IFEQ misses (nil), the extend script
 * does it and keeps the mark; the lock keeps to the scripts from then:
 * its release goes by the script at once, and hands the lock over. */
static void test_marked_extend(void)
{
    const char *name = "nat-marked-ext";
    rlk_client *a = CLIENT(), *b = CLIENT_EX(srv_url, 0, 10000, NULL);
    struct waiter w;
    int joined = 0, started = 0;
    rlk_lock *la = NULL;
    char waiters[64], queue[64], got[256], want[256];
    long long pttl;
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !b) goto out;
    warm_up(a);
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    if (!waiter_start(&w, b, name, 30000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK_MSG(wait_waiters(name, 1, LONG_MS), "the waiter did not register")) goto out;
    snprintf(want, sizeof want, "%s+w", rlk_lock_token(la));
    reset_stats(admin);
    CHECK_EQ_INT(rlk_lock_extend(la, 40000, RLK_EXTEND_SET), RLK_OK);
    pttl = CMD_INT(admin, "PTTL", name);
    CHECK_MSG(pttl > 40000 - MARGIN && pttl <= 40000, "PTTL %lld after extend to 40000", pttl);
    CHECK(get_value(name, got, sizeof got));
    CHECK_EQ_STR(got, want);
    CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 1);
    if (sv.set_ifeq) CHECK_EQ_INT(stat_calls(admin, "set"), 1); /* the SET IFEQ that missed */
    reset_stats(admin);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err);
    CHECK_EQ_INT(stat_calls(admin, "delifeq+delex"), 0);
    if (w.l) CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name, queue), 0);
out:
    if (la) rlk_lock_release(la);
    if (started && !joined) pthread_join(w.th, NULL);
    if (started && w.l) rlk_lock_release(w.l);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* Whether name's queue is exactly toks[0..n-1], in this order. */
static int queue_is(const char *name, char toks[][256], int n, int line)
{
    char key[128];
    rlk_resp_value *v;
    const rlk_resp_value *e;
    int i = 0, ok = 1;
    HO_KEY(key, name, "queue");
    v = run_cmd(admin, line, "LRANGE", key, "0", "-1", (const char *)NULL);
    if (!v) return 0;
    for (e = v->child; e; e = e->next, i++)
        if (i >= n || strlen(toks[i]) != e->len || memcmp(toks[i], e->str, e->len) != 0) ok = 0;
    return tl_ok(ok && i == n, __FILE__, line, "queue %s: %d entries, not the %d expected in order",
                 key, i, n);
}

/* The field of name's waiters hash not among known[0..k-1]. */
static int newest_waiter(const char *name, char known[][256], int k, char *out, size_t n)
{
    char key[128];
    rlk_resp_value *v;
    const rlk_resp_value *e;
    int found = 0, j;
    out[0] = '\0';
    HO_KEY(key, name, "waiters");
    v = CMD(admin, "HKEYS", key);
    for (e = v ? v->child : NULL; e; e = e->next) {
        if (e->len && e->str[0] == '~') continue;
        for (j = 0; j < k; j++)
            if (strlen(known[j]) == e->len && memcmp(known[j], e->str, e->len) == 0) break;
        if (j < k) continue;
        found++;
        snprintf(out, n, "%.*s", (int)e->len, e->str);
    }
    return CHECK_MSG(found == 1, "%d new entries in %s", found, key);
}

/* Three waiters are served in the order they came, each handed the
 * lock marked while others are still in line; every marked release
 * falls back to the script, the waiters' (they waited in line) go by
 * the script alone. */
static void test_fifo_three_waiters(void)
{
    static const int64_t ttls[3] = {20000, 25000, 30000};
    const char *name = "nat-fifo", *nat = native_release();
    rlk_client *a = CLIENT(), *c[3];
    struct waiter w[3];
    int joined[3] = {0, 0, 0}, started = 0, i, j;
    char tok[3][256], waiters[64], queue[64], got[256], want[256];
    rlk_lock *la = NULL;
    uint64_t fence;
    for (i = 0; i < 3; i++) c[i] = CLIENT();
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !c[0] || !c[1] || !c[2]) goto out;
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ(a, name, 30000);
    if (!la) goto out;
    fence = rlk_lock_fence(la);
    for (i = 0; i < 3; i++) {
        if (!waiter_start(&w[i], c[i], name, ttls[i], HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
        started++;
        if (!CHECK_MSG(wait_waiters(name, i + 1, LONG_MS), "waiter %d did not register", i + 1) ||
            !newest_waiter(name, tok, i, tok[i], sizeof tok[i]))
            goto out;
    }
    if (!queue_is(name, tok, 3, __LINE__)) goto out;
    snprintf(want, sizeof want, "%s+w", rlk_lock_token(la));
    CHECK(get_value(name, got, sizeof got));
    CHECK_EQ_STR(got, want);

    reset_stats(admin);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    for (i = 0; i < 3; i++) {
        long long pttl;
        pthread_join(w[i].th, NULL);
        joined[i] = 1;
        if (!CHECK_MSG(w[i].rc == RLK_OK && w[i].l, "waiter %d: %d %s", i + 1, w[i].rc, w[i].err))
            goto out;
        CHECK_EQ_STR(rlk_lock_token(w[i].l), tok[i]);
        snprintf(want, sizeof want, "%s%s", tok[i], i < 2 ? "+w" : "");
        CHECK(get_value(name, got, sizeof got));
        CHECK_EQ_STR(got, want);
        /* Confirmed: the waiter's own TTL (script or SET IFEQ), its
         * value as it was handed over. */
        CHECK_MSG(wait_confirmed(name, want, ttls[i] - 4000),
                  "waiter %d: no confirmation of \"%s\"", i + 1, want);
        pttl = CMD_INT(admin, "PTTL", name);
        CHECK_MSG(pttl > ttls[i] - MARGIN && pttl <= ttls[i], "waiter %d: PTTL %lld, its TTL %lld",
                  i + 1, pttl, (long long)ttls[i]);
        CHECK_FENCE_AFTER(rlk_lock_fence(w[i].l), fence);
        fence = rlk_lock_fence(w[i].l);
        for (j = i + 1; j < 3; j++)
            CHECK_MSG(!waiter_done(&w[j]), "waiter %d returned while %d held the lock", j + 1,
                      i + 1);
        queue_is(name, tok + i + 1, 2 - i, __LINE__);
        CHECK_EQ_INT(rlk_lock_release(w[i].l), RLK_OK);
        w[i].l = NULL;
    }
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name, queue), 0);
    CHECK_EQ_INT(waiter_entries(waiters), 0);
    /* Four releases: the first holder's tried natively first (it found
     * the mark); the three that waited in line go by the script alone. */
    if (nat) CHECK_EQ_INT(stat_calls(admin, nat), 1);
    else CHECK_EQ_INT(stat_calls(admin, "delifeq+delex"), 0);
out:
    if (la) rlk_lock_release(la);
    for (i = 0; i < started; i++) {
        if (!joined[i]) pthread_join(w[i].th, NULL);
        if (w[i].l) rlk_lock_release(w[i].l);
    }
    rlk_client_free(a);
    for (i = 0; i < 3; i++) rlk_client_free(c[i]);
}

/* A watchdog lock marked by a waiter is renewed by the script (SET IFEQ
 * no longer matches): held, marked, past four TTLs; then its release
 * hands it over. */
static void test_marked_lock_renewed(void)
{
    const char *name = "nat-marked-wd";
    int64_t ttl = slow ? 3000 : 600, t_end, t_rel, limit = slow ? 2000 : 500;
    rlk_client *a = CLIENT(), *b = CLIENT_EX(srv_url, 0, 10000, NULL);
    struct lost_rec lost;
    struct waiter w;
    int joined = 0, started = 0, wd = 0, rounds = 0, bad = 0;
    rlk_lock *la = NULL;
    char waiters[64], queue[64], got[256], want[256];
    uint64_t fence_a;
    memset(&lost, 0, sizeof lost);
    HO_KEY(waiters, name, "waiters");
    HO_KEY(queue, name, "queue");
    if (!a || !b) goto out;
    warm_up(a);
    CMD(admin, "DEL", name, waiters, queue);
    la = ACQ_WD(a, name, ttl, &lost);
    if (!la) goto out;
    fence_a = rlk_lock_fence(la);
    if (!start_watchdog(a)) goto out;
    wd = 1;
    if (!waiter_start(&w, b, name, 30000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    if (!CHECK_MSG(wait_waiters(name, 1, LONG_MS), "the waiter did not register")) goto out;
    snprintf(want, sizeof want, "%s+w", rlk_lock_token(la));
    /* Four TTLs: without renewals the lock would be gone three times. */
    t_end = ts_now_ms() + 4 * ttl;
    while (ts_now_ms() < t_end) {
        rounds++;
        if (!get_value(name, got, sizeof got) || strcmp(got, want) != 0 || rlk_lock_is_lost(la) ||
            waiter_done(&w)) {
            bad++;
            CHECK_MSG(0, "round %d: value \"%s\" (want \"%s\"), lost %d, waiter done %d", rounds,
                      got, want, rlk_lock_is_lost(la), waiter_done(&w));
            break;
        }
        ts_pause_ms(10);
    }
    CHECK_EQ_INT(lost_calls(&lost), 0);
    if (!bad) printf("# %s %s: a marked lock held by the renew script for 4 TTLs (%d looks)\n",
                     sv.name, sv.version, rounds);
    t_rel = ts_now_ms();
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    if (!CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err)) goto out;
    CHECK_MSG(w.done_at - t_rel < limit, "handed over %lld ms after the release",
              (long long)(w.done_at - t_rel));
    CHECK_FENCE_AFTER(rlk_lock_fence(w.l), fence_a);
    CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;
    CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name, queue), 0);
out:
    if (la) rlk_lock_release(la);
    if (wd) rlk_client_watchdog_stop(a);
    if (started && !joined) pthread_join(w.th, NULL);
    if (started && w.l) rlk_lock_release(w.l);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* ------------------------------------------------------------------ */
/* 3. ACL users                                                        */

/* A user who may run everything but the native release: the release
 * is refused once (rejected_calls), falls back to the script with no
 * error seen, frees the lock; the connection then goes to the script
 * at once. */
static void test_acl_without_native_release(void)
{
    const char *nat = native_release();
    char deny[16] = "", url[128];
    const char *rules[2] = {NULL, NULL};
    rlk_client *cl = NULL;
    rlk_lock *l;
    int rc, round;
    if (nat) {
        snprintf(deny, sizeof deny, "-%s", nat);
        rules[0] = deny;
    }
    if (!make_user("n-nodel", rules)) return;
    user_url(url, sizeof url, "n-nodel");
    {
        /* The scripts loaded by another client: this one's first
         * release is its first DELIFEQ. */
        rlk_client *w = CLIENT();
        if (w) warm_up(w);
        rlk_client_free(w);
    }
    cl = CLIENT_EX(url, 0, 0, NULL);
    if (!cl) goto out;
    for (round = 0; round < 2; round++) {
        reset_stats(admin);
        l = ACQ(cl, "nat-acl-nodel", 10000);
        if (!l) break;
        rc = rlk_lock_release(l);
        CHECK_MSG(rc == RLK_OK, "round %d: release %d %s", round, rc, rlk_client_errmsg(cl));
        no_refusal_seen(cl);
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", "nat-acl-nodel"), 0);
        CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 1);
        if (nat) {
            /* Refused in the first round only: dropped for the
             * connection after. */
            long long rejected = stat_field(admin, nat, "rejected_calls");
            CHECK_MSG(rejected == (round == 0), "round %d: %s refused %lld times, want %d", round,
                      nat, rejected, round == 0);
            CHECK_EQ_INT(stat_calls(admin, nat), 0);
        }
    }
    if (nat)
        printf("# %s %s: a user without %s: refused once, released by the script, then the "
               "script alone\n", sv.name, sv.version, nat);
    else
        printf("# %s %s: no native release to refuse: the user (+@all) releases by the script\n",
               sv.name, sv.version);
out:
    rlk_client_free(cl);
    CMD(admin, "ACL", "DELUSER", "n-nodel");
}

/* A user who may run the native commands but no script: the cycle
 * SET NX PX + HGET + TIME + DELIFEQ (DELEX) works, and the extend's set
 * form by SET IFEQ; where the server lacks them, the script they need
 * is refused (NOPERM), as it must be. */
static void test_acl_without_scripts(void)
{
    static const char *const rules[] = {"-eval", "-evalsha", "-eval_ro", "-evalsha_ro", "-fcall",
                                        "-fcall_ro", "-function", "-script", NULL};
    const char *name = "nat-acl-noscript", *nat = native_release();
    char url[128];
    rlk_client *cl = NULL;
    rlk_lock *l = NULL;
    int rc;
    if (!make_user("n-noscript", rules)) return;
    user_url(url, sizeof url, "n-noscript");
    cl = CLIENT_EX(url, 0, 0, NULL);
    if (!cl) goto out;
    CMD(admin, "DEL", name);
    reset_stats(admin);
    l = ACQ(cl, name, 10000);
    if (!l) goto out;
    rc = rlk_lock_extend(l, 20000, RLK_EXTEND_SET);
    if (sv.set_ifeq) {
        long long pttl = CMD_INT(admin, "PTTL", name);
        CHECK_MSG(rc == RLK_OK, "extend: %d %s", rc, rlk_client_errmsg(cl));
        CHECK_MSG(pttl > 20000 - MARGIN && pttl <= 20000, "PTTL %lld", pttl);
    } else {
        CHECK_MSG(rc == RLK_ERR_SERVER && ts_contains(rlk_client_errmsg(cl), "NOPERM"),
                  "extend without scripts nor SET IFEQ: %d %s", rc, rlk_client_errmsg(cl));
    }
    rc = rlk_lock_release(l);
    l = NULL;
    if (nat) {
        CHECK_MSG(rc == RLK_OK, "release: %d %s", rc, rlk_client_errmsg(cl));
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 0);
        CHECK_EQ_INT(stat_calls(admin, nat), 1);
    } else {
        CHECK_MSG(rc == RLK_ERR_SERVER && ts_contains(rlk_client_errmsg(cl), "NOPERM"),
                  "release without scripts nor a native release: %d %s", rc,
                  rlk_client_errmsg(cl));
        CHECK_EQ_INT(CMD_INT(admin, "EXISTS", name), 1); /* it runs out by its TTL */
        CMD(admin, "DEL", name);
    }
    CHECK_EQ_INT(stat_calls(admin, ANY_SCRIPT), 0);
    {
        /* Refused where a script was needed (FCALL, then EVALSHA...). */
        long long rejected = stat_field(admin, "fcall", "rejected_calls") +
                             stat_field(admin, "evalsha", "rejected_calls") +
                             stat_field(admin, "eval", "rejected_calls");
        int needed = !nat || !sv.set_ifeq;
        CHECK_MSG(needed ? rejected > 0 : rejected == 0, "%lld script calls refused", rejected);
    }
    printf("# %s %s: a user without scripts: acquire yes, extend %s, release %s (waits need "
           "the acquire script: not tried)\n",
           sv.name, sv.version, sv.set_ifeq ? "yes (SET IFEQ)" : "refused (NOPERM)",
           nat ? "yes (native)" : "refused (NOPERM)");
out:
    if (l) rlk_lock_release(l);
    rlk_client_free(cl);
    CMD(admin, "ACL", "DELUSER", "n-noscript");
}

/* ------------------------------------------------------------------ */
/* 4. Fake servers: the forms no packaged server has                    */

#define FK_LOG 64

/* A fake server with one string key, answering as server/version in
 * HELLO, and logging every command it gets ("WORD WORD ...").  DELEX
 * IFEQ: 0 compares, 1 answers 0, 2 is an unknown command.  SET IFEQ: 0
 * compares, 1 is a syntax error.  CLIENT NO-EVICT: 0 OK, 1 refused as
 * Redis 6.2 refuses it.  Script calls of the release and extend are
 * done as the scripts would (the library's FCALL; EVALSHA of the
 * release on a server without FUNCTIONs). */
struct fk {
    const char *server, *version;
    int delex, setifeq, noevict;
    char release_sha[41];
    pthread_mutex_t mu;
    int n;
    char log[FK_LOG][256];
    char key[64], val[128];
    int has;
};

static void fk_init(struct fk *f, const char *server, const char *version)
{
    memset(f, 0, sizeof *f);
    f->server = server;
    f->version = version;
    pthread_mutex_init(&f->mu, NULL);
}

static int fk_count(struct fk *f)
{
    pthread_mutex_lock(&f->mu);
    int n = f->n;
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* Index of the first entry from `from` equal to s, or -1. */
static int fk_find(struct fk *f, int from, const char *s)
{
    int i, at = -1;
    pthread_mutex_lock(&f->mu);
    for (i = from; i < f->n && at < 0; i++)
        if (strcmp(f->log[i], s) == 0) at = i;
    pthread_mutex_unlock(&f->mu);
    return at;
}

static int fk_del_if(struct fk *f, const char *key, const char *val)
{
    if (f->has && strcmp(f->key, key) == 0 && strcmp(f->val, val) == 0) {
        f->has = 0;
        return 1;
    }
    return 0;
}

static void fk_conn(fake_conn *fc, void *arg)
{
    struct fk *f = arg;
    char **argv, reply[512];
    int argc;
    while ((argc = fake_read_command(fc, &argv, -1, NULL)) > 0) {
        const char *r = reply;
        char line[256] = "";
        for (int i = 0; i < argc; i++) {
            size_t used = strlen(line);
            snprintf(line + used, sizeof line - used, "%s%s", i ? " " : "", argv[i]);
        }
        pthread_mutex_lock(&f->mu);
        if (f->n < FK_LOG) snprintf(f->log[f->n++], sizeof f->log[0], "%s", line);
        if (!strcasecmp(argv[0], "HELLO")) {
            snprintf(reply, sizeof reply,
                     "%%7\r\n$6\r\nserver\r\n$%zu\r\n%s\r\n$7\r\nversion\r\n$%zu\r\n%s\r\n"
                     "$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
                     "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
                     strlen(f->server), f->server, strlen(f->version), f->version);
        } else if (!strcasecmp(argv[0], "CLIENT")) {
            r = f->noevict ? "-ERR Unknown subcommand or wrong number of arguments for "
                             "'NO-EVICT'. Try CLIENT HELP.\r\n"
                           : "+OK\r\n";
        } else if (!strcasecmp(argv[0], "PING")) {
            r = "+PONG\r\n";
        } else if (!strcasecmp(argv[0], "SUBSCRIBE") && argc == 2) {
            snprintf(reply, sizeof reply, ">3\r\n$9\r\nsubscribe\r\n$%zu\r\n%s\r\n:1\r\n",
                     strlen(argv[1]), argv[1]);
        } else if (!strcasecmp(argv[0], "HGET")) {
            r = "_\r\n";
        } else if (!strcasecmp(argv[0], "TIME")) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            snprintf(reply, sizeof reply, "*2\r\n$10\r\n%lld\r\n$6\r\n%06ld\r\n",
                     (long long)ts.tv_sec, ts.tv_nsec / 1000);
        } else if (!strcasecmp(argv[0], "SET") && argc == 6 && !strcasecmp(argv[3], "NX")) {
            if (f->has && strcmp(f->key, argv[1]) == 0) {
                r = "_\r\n";
            } else {
                snprintf(f->key, sizeof f->key, "%s", argv[1]);
                snprintf(f->val, sizeof f->val, "%s", argv[2]);
                f->has = 1;
                r = "+OK\r\n";
            }
        } else if (!strcasecmp(argv[0], "SET") && argc == 7 && !strcasecmp(argv[3], "IFEQ")) {
            if (f->setifeq) r = "-ERR syntax error\r\n";
            else if (f->has && !strcmp(f->key, argv[1]) && !strcmp(f->val, argv[4])) {
                snprintf(f->val, sizeof f->val, "%s", argv[2]);
                r = "+OK\r\n";
            } else r = "_\r\n";
        } else if (!strcasecmp(argv[0], "DELEX") && argc == 4) {
            if (f->delex == 2)
                snprintf(reply, sizeof reply,
                         "-ERR unknown command 'DELEX', with args beginning with: '%.40s' "
                         "'IFEQ' '%.40s' \r\n", argv[1], argv[3]);
            else if (f->delex == 1) r = ":0\r\n";
            else r = fk_del_if(f, argv[1], argv[3]) ? ":1\r\n" : ":0\r\n";
        } else if (!strcasecmp(argv[0], "DELIFEQ") && argc == 3) {
            r = fk_del_if(f, argv[1], argv[2]) ? ":1\r\n" : ":0\r\n";
        } else if ((!strcasecmp(argv[0], "FCALL") || !strcasecmp(argv[0], "EVALSHA")) &&
                   argc >= 4) {
            const char *fn = argv[1];
            int nk = atoi(argv[2]);
            size_t fl = strlen(fn);
            int release = !strcasecmp(argv[0], "EVALSHA") ? strcmp(fn, f->release_sha) == 0
                                                          : fl > 8 && !strcmp(fn + fl - 8, "_release");
            int extend = !strcasecmp(argv[0], "FCALL") && fl > 7 && !strcmp(fn + fl - 7, "_extend");
            if (release && argc > 3 + nk) {
                r = fk_del_if(f, argv[3], argv[3 + nk]) ? ":1\r\n" : ":0\r\n";
            } else if (extend && argc > 4 + nk) {
                snprintf(reply, sizeof reply, ":%s\r\n", argv[4 + nk]);
            } else {
                r = "-ERR this fake runs no such script\r\n";
            }
        } else {
            r = "-ERR this fake has no such command\r\n";
        }
        pthread_mutex_unlock(&f->mu);
        if (fake_send_str(fc, r)) break;
    }
}

/* Whether a logged command is w ("...*": starts with what is before
 * the '*'). */
static int fk_match(const char *got, const char *w)
{
    size_t n = strlen(w);
    if (n && w[n - 1] == '*') return strncmp(got, w, n - 1) == 0;
    return strcmp(got, w) == 0;
}

/* Checks that the log from entry `from` is exactly want[0..n-1]
 * (prints both on a difference). */
static int fk_expect(struct fk *f, int from, const char *const *want, int n, int line)
{
    int ok, i;
    pthread_mutex_lock(&f->mu);
    ok = f->n - from == n;
    for (i = 0; ok && i < n; i++) ok = fk_match(f->log[from + i], want[i]);
    if (!ok) {
        printf("    got (%s %s), from entry %d:\n", f->server, f->version, from);
        for (i = from; i < f->n; i++) printf("      %s\n", f->log[i]);
        printf("    want:\n");
        for (i = 0; i < n; i++) printf("      %s\n", want[i]);
    }
    pthread_mutex_unlock(&f->mu);
    return tl_ok(ok, __FILE__, line, "the commands the fake %s %s got", f->server, f->version);
}
#define FK_EXPECT(f, from, ...)                                                                 \
    do {                                                                                        \
        const char *const want_[] = {__VA_ARGS__};                                              \
        fk_expect(f, from, want_, (int)(sizeof want_ / sizeof want_[0]), __LINE__);           \
    } while (0)

static rlk_client *fk_client(fake_server *fs)
{
    static char url[64];
    rlk_client_config cfg;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    client_cfg(&cfg, url);
    cfg.conn.command_timeout_ms = slow ? 10000 : 3000;
    cfg.conn.reconnect_attempts = 1;
    return CLIENT_WITH(&cfg);
}

/* The token of l into buf (64 bytes): it stays after the handle. */
static const char *copy_token(char *buf, const rlk_lock *l)
{
    snprintf(buf, 256, "%s", rlk_lock_token(l));
    return buf;
}

/* "FCALL <library>_<fn>" */
static void fcall_of(char *out, size_t n, const char *fn)
{
    snprintf(out, n, "FCALL %s_%s", rlk__lua_library.name, fn);
}

/* A fake Redis 8.4: release by DELEX IFEQ, extend and renewal by SET
 * IFEQ PX, NO-EVICT in the handshake, and nothing else. */
static void test_fake_redis84_native(void)
{
    struct fk f;
    fake_server *fs;
    rlk_client *cl = NULL;
    rlk_lock *l = NULL;
    char c1[640], c2[640], c3[640], c4[640], c5[640], c6[640];
    const char *t;
    char tok[256];
    int from;
    fk_init(&f, "redis", "8.4.0");
    fs = fake_start(fk_conn, &f);
    if (!CHECK(fs != NULL)) return;
    cl = fk_client(fs);
    if (!cl) goto out;
    l = ACQ(cl, "fk", 10000);
    if (!l) goto out;
    t = copy_token(tok, l);
    CHECK_EQ_INT(rlk_lock_extend(l, 20000, RLK_EXTEND_SET), RLK_OK);
    CHECK_EQ_INT(rlk_lock_ttl_ms(l), 20000);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    snprintf(c1, sizeof c1, "SET fk %s NX PX 10000", t);
    snprintf(c2, sizeof c2, "SET fk %s IFEQ %s PX 20000", t, t);
    snprintf(c3, sizeof c3, "DELEX fk IFEQ %s", t);
    FK_EXPECT(&f, 0, "HELLO 3", "CLIENT NO-EVICT on", "SUBSCRIBE resplock:handoff:*", c1, "HGET {fk}:waiters ~yield", "TIME", c2,
              c3);
    l = NULL;

    /* The watchdog's renewal: SET IFEQ PX with the lock's TTL. */
    {
        int64_t ttl = slow ? 3000 : 600, deadline = ts_now_ms() + LONG_MS, next = 0;
        struct lost_rec lost;
        memset(&lost, 0, sizeof lost);
        from = fk_count(&f);
        l = ACQ_WD(cl, "fk-wd", ttl, &lost);
        if (!l) goto out;
        t = copy_token(tok, l);
        snprintf(c4, sizeof c4, "SET fk-wd %s NX PX %lld", t, (long long)ttl);
        snprintf(c5, sizeof c5, "SET fk-wd %s IFEQ %s PX %lld", t, t, (long long)ttl);
        snprintf(c6, sizeof c6, "DELEX fk-wd IFEQ %s", t);
        /* Two renewals. */
        while (ts_now_ms() < deadline) {
            int first = fk_find(&f, from, c5);
            if (first >= 0 && fk_find(&f, first + 1, c5) >= 0) break;
            struct pollfd p = {rlk_client_fd(cl), POLLIN, 0};
            poll(&p, 1, next < 0 || next > 50 ? 50 : (int)next);
            CHECK_EQ_INT(rlk_client_tick(cl, &next), RLK_OK);
        }
        CHECK(!rlk_lock_is_lost(l));
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        l = NULL;
        FK_EXPECT(&f, from, c4, "HGET {fk-wd}:waiters ~yield", "TIME", c5, c5, c6);
    }
out:
    if (l) rlk_lock_forget(l);
    rlk_client_free(cl);
    fake_stop(fs);
}

/* DELEX answered 0 (the value marked): the release script follows, and
 * a later lock's release tries DELEX again (a 0 drops nothing). */
static void test_fake_redis84_delex_zero(void)
{
    struct fk f;
    fake_server *fs;
    rlk_client *cl = NULL;
    rlk_lock *l;
    char c1[640], c2[640], c3[640], fc[256];
    int from, i;
    fk_init(&f, "redis", "8.4.0");
    f.delex = 1;
    fcall_of(fc, sizeof fc, "release");
    fs = fake_start(fk_conn, &f);
    if (!CHECK(fs != NULL)) return;
    cl = fk_client(fs);
    for (i = 0; cl && i < 2; i++) {
        const char *t;
        char tok[256];
        from = fk_count(&f);
        l = ACQ(cl, "fk", 10000);
        if (!l) break;
        t = copy_token(tok, l);
        snprintf(c1, sizeof c1, "SET fk %s NX PX 10000", t);
        snprintf(c2, sizeof c2, "DELEX fk IFEQ %s", t);
        snprintf(c3, sizeof c3, "%s 3 fk {fk}:queue {fk}:waiters %s", fc, t);
        CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        if (i == 0)
            FK_EXPECT(&f, 0, "HELLO 3", "CLIENT NO-EVICT on", "SUBSCRIBE resplock:handoff:*", c1,
                      "HGET {fk}:waiters ~yield", "TIME", c2, c3);
        else
            FK_EXPECT(&f, from, c1, "HGET {fk}:waiters ~yield", "TIME", c2, c3);
    }
    rlk_client_free(cl);
    fake_stop(fs);
}

/* DELEX refused as unknown: the script follows, and the connection's
 * later releases go to the script at once; SET IFEQ stays. */
static void test_fake_redis84_delex_unknown(void)
{
    struct fk f;
    fake_server *fs;
    rlk_client *cl = NULL;
    rlk_lock *l;
    char c1[640], c2[640], c3[640], c4[640], fc[256];
    const char *t;
    char tok[256];
    int from;
    fk_init(&f, "redis", "8.4.0");
    f.delex = 2;
    fcall_of(fc, sizeof fc, "release");
    fs = fake_start(fk_conn, &f);
    if (!CHECK(fs != NULL)) return;
    cl = fk_client(fs);
    if (!cl) goto out;
    l = ACQ(cl, "fk", 10000);
    if (!l) goto out;
    t = copy_token(tok, l);
    snprintf(c1, sizeof c1, "SET fk %s NX PX 10000", t);
    snprintf(c2, sizeof c2, "DELEX fk IFEQ %s", t);
    snprintf(c3, sizeof c3, "%s 3 fk {fk}:queue {fk}:waiters %s", fc, t);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    FK_EXPECT(&f, 0, "HELLO 3", "CLIENT NO-EVICT on", "SUBSCRIBE resplock:handoff:*", c1,
              "HGET {fk}:waiters ~yield", "TIME", c2, c3);
    CHECK_EQ_STR(rlk_client_errmsg(cl), "");

    from = fk_count(&f);
    l = ACQ(cl, "fk", 10000);
    if (!l) goto out;
    t = copy_token(tok, l);
    CHECK_EQ_INT(rlk_lock_extend(l, 20000, RLK_EXTEND_SET), RLK_OK);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    snprintf(c1, sizeof c1, "SET fk %s NX PX 10000", t);
    snprintf(c4, sizeof c4, "SET fk %s IFEQ %s PX 20000", t, t);
    snprintf(c3, sizeof c3, "%s 3 fk {fk}:queue {fk}:waiters %s", fc, t);
    FK_EXPECT(&f, from, c1, "HGET {fk}:waiters ~yield", "TIME", c4, c3);
out:
    rlk_client_free(cl);
    fake_stop(fs);
}

/* SET IFEQ refused as a syntax error: the extend script follows, and
 * later extends go to it at once; DELEX stays. */
static void test_fake_redis84_set_ifeq_refused(void)
{
    struct fk f;
    fake_server *fs;
    rlk_client *cl = NULL;
    rlk_lock *l = NULL;
    char c1[640], c2[640], c3[640], c4[640], c5[640], fc[256];
    const char *t;
    char tok[256];
    fk_init(&f, "redis", "8.4.0");
    f.setifeq = 1;
    fcall_of(fc, sizeof fc, "extend");
    fs = fake_start(fk_conn, &f);
    if (!CHECK(fs != NULL)) return;
    cl = fk_client(fs);
    if (!cl) goto out;
    l = ACQ(cl, "fk", 10000);
    if (!l) goto out;
    t = copy_token(tok, l);
    CHECK_EQ_INT(rlk_lock_extend(l, 20000, RLK_EXTEND_SET), RLK_OK);
    CHECK_EQ_INT(rlk_lock_ttl_ms(l), 20000);
    CHECK_EQ_INT(rlk_lock_extend(l, 30000, RLK_EXTEND_SET), RLK_OK);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    l = NULL;
    snprintf(c1, sizeof c1, "SET fk %s NX PX 10000", t);
    snprintf(c2, sizeof c2, "SET fk %s IFEQ %s PX 20000", t, t);
    snprintf(c3, sizeof c3, "%s 1 fk %s 20000 set s", fc, t);
    snprintf(c4, sizeof c4, "%s 1 fk %s 30000 set s", fc, t);
    snprintf(c5, sizeof c5, "DELEX fk IFEQ %s", t);
    FK_EXPECT(&f, 0, "HELLO 3", "CLIENT NO-EVICT on", "SUBSCRIBE resplock:handoff:*", c1,
              "HGET {fk}:waiters ~yield", "TIME", c2, c3, c4, c5);
out:
    if (l) rlk_lock_forget(l);
    rlk_client_free(cl);
    fake_stop(fs);
}

/* A fake Valkey 9.2 has DELIFEQ and DELEX IFEQ: the release is by
 * DELIFEQ. */
static void test_fake_valkey92_prefers_delifeq(void)
{
    struct fk f;
    fake_server *fs;
    rlk_client *cl = NULL;
    rlk_lock *l;
    char c1[640], c2[640], c3[640];
    const char *t;
    char tok[256];
    fk_init(&f, "valkey", "9.2.0");
    fs = fake_start(fk_conn, &f);
    if (!CHECK(fs != NULL)) return;
    cl = fk_client(fs);
    if (!cl) goto out;
    l = ACQ(cl, "fk", 10000);
    if (!l) goto out;
    t = copy_token(tok, l);
    CHECK_EQ_INT(rlk_lock_extend(l, 20000, RLK_EXTEND_SET), RLK_OK);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    snprintf(c1, sizeof c1, "SET fk %s NX PX 10000", t);
    snprintf(c2, sizeof c2, "SET fk %s IFEQ %s PX 20000", t, t);
    snprintf(c3, sizeof c3, "DELIFEQ fk %s", t);
    FK_EXPECT(&f, 0, "HELLO 3", "CLIENT NO-EVICT on", "SUBSCRIBE resplock:handoff:*", c1, "HGET {fk}:waiters ~yield", "TIME", c2,
              c3);
out:
    rlk_client_free(cl);
    fake_stop(fs);
}

/* A server without CLIENT NO-EVICT (Redis 6.2, whose HELLO says so) is
 * not asked for it (a fake that would refuse it); the cycle goes by
 * EVALSHA there. */
static void test_fake_noevict_refused(void)
{
    struct fk f;
    fake_server *fs;
    rlk_client *cl = NULL;
    rlk_lock *l;
    rlk_script rel;
    char c1[640], c2[640];
    const char *t;
    char tok[256];
    fk_init(&f, "redis", "6.2.14");
    f.noevict = 1;
    rlk_script_init(&rel, rlk__lua_release, 0);
    snprintf(f.release_sha, sizeof f.release_sha, "%s", rel.sha1);
    fs = fake_start(fk_conn, &f);
    if (!CHECK(fs != NULL)) return;
    cl = fk_client(fs);
    if (!cl) goto out;
    l = ACQ(cl, "fk", 10000);
    if (!l) goto out;
    t = copy_token(tok, l);
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    snprintf(c1, sizeof c1, "SET fk %s NX PX 10000", t);
    snprintf(c2, sizeof c2, "EVALSHA %s 3 fk {fk}:queue {fk}:waiters %s", rel.sha1, t);
    FK_EXPECT(&f, 0, "HELLO 3", "SUBSCRIBE resplock:handoff:*", c1, "HGET {fk}:waiters ~yield", "TIME", c2);
out:
    rlk_client_free(cl);
    fake_stop(fs);
}

/* ------------------------------------------------------------------ */
/* 5. CLIENT NO-EVICT                                                  */

/* The lock's connections, RESP3 and RESP2 (and a RESP2 wait's second
 * connection), are flagged no-evict ('e' in CLIENT LIST); a user who may
 * not set it still locks, unflagged. */
static void test_noevict_flag(void)
{
    static const char *const deny[] = {"-client|no-evict", NULL};
    rlk_client *c3 = NULL, *c2 = NULL, *a = NULL, *cu = NULL;
    char flags[256], url[128];
    struct waiter w;
    int started = 0, joined = 0;
    rlk_lock *la = NULL, *l;
    if (!sv.noevict) {
        printf("# %s %s has no CLIENT NO-EVICT: only that locking works is checked\n", sv.name,
               sv.version);
        c3 = CLIENT();
        l = c3 ? ACQ(c3, "nat-ne", 10000) : NULL;
        if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
        rlk_client_free(c3);
        return;
    }
    c3 = CLIENT_EX(srv_url, 3, 0, "ne-resp3");
    c2 = CLIENT_EX(srv_url, 2, 0, "ne-resp2");
    a = CLIENT();
    if (!c3 || !c2 || !a) goto out;
    CHECK_EQ_INT(client_flags(admin, rlk_client_info(c3)->client_id, flags, sizeof flags), 1);
    CHECK_MSG(strchr(flags, 'e') != NULL, "RESP3 lock connection flags=%s", flags);
    /* RESP2 tells no id (no HELLO): by its name. */
    CHECK_EQ_INT(named_flags(admin, "ne-resp2", flags, sizeof flags), 1);
    CHECK_MSG(all_noevict(flags), "RESP2 lock connection flags=%s", flags);

    /* A RESP2 wait's own connection too. */
    CMD(admin, "DEL", "nat-ne");
    la = ACQ(a, "nat-ne", 30000);
    if (!la) goto out;
    if (!waiter_start(&w, c2, "nat-ne", 10000, HO_WAIT_MS, RLK_LOCK_SIMPLE)) goto out;
    started = 1;
    {
        int64_t deadline = ts_now_ms() + LONG_MS;
        while (count_clients(admin, "ne-resp2") != 2 && ts_now_ms() < deadline) ts_pause_ms(5);
    }
    CHECK_EQ_INT(named_flags(admin, "ne-resp2", flags, sizeof flags), 2);
    CHECK_MSG(all_noevict(flags), "RESP2 connections (lock, wait) flags=%s", flags);
    CHECK_EQ_INT(rlk_lock_release(la), RLK_OK);
    la = NULL;
    pthread_join(w.th, NULL);
    joined = 1;
    CHECK_MSG(w.rc == RLK_OK && w.l, "waiter: %d %s", w.rc, w.err);
    if (w.l) CHECK_EQ_INT(rlk_lock_release(w.l), RLK_OK);
    w.l = NULL;

    /* Refused by an ACL: no failure, no flag. */
    if (make_user("n-noevict", deny)) {
        user_url(url, sizeof url, "n-noevict");
        cu = CLIENT_EX(url, 0, 0, NULL);
        l = cu ? ACQ(cu, "nat-ne-user", 10000) : NULL;
        if (l) {
            CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
            CHECK_EQ_INT(client_flags(admin, rlk_client_info(cu)->client_id, flags, sizeof flags),
                         1);
            CHECK_MSG(strchr(flags, 'e') == NULL, "flags=%s for a user without NO-EVICT", flags);
        }
        CHECK_EQ_INT(stat_field(admin, "client|no-evict", "rejected_calls") > 0, 1);
        CMD(admin, "ACL", "DELUSER", "n-noevict");
    }
    printf("# %s %s: lock connections (RESP3, RESP2, a RESP2 wait's) flagged no-evict; an ACL "
           "refusal ignored\n", sv.name, sv.version);
out:
    if (la) rlk_lock_release(la);
    if (started && !joined) pthread_join(w.th, NULL);
    if (started && w.l) rlk_lock_release(w.l);
    rlk_client_free(c3);
    rlk_client_free(c2);
    rlk_client_free(a);
    rlk_client_free(cu);
}

/* A plain TCP connection to 127.0.0.1:port (no library: no NO-EVICT). */
static int raw_open(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int raw_send(int fd, const char *p, size_t n)
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

/* Sends an inline command and reads its one-line reply into out. */
static int raw_cmd(int fd, const char *cmd, char *out, size_t n)
{
    size_t got = 0;
    int64_t deadline = ts_now_ms() + LONG_MS;
    out[0] = '\0';
    if (raw_send(fd, cmd, strlen(cmd)) != 0 || raw_send(fd, "\r\n", 2) != 0) return -1;
    while (got + 1 < n && ts_now_ms() < deadline) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t r;
        if (poll(&p, 1, 100) <= 0) continue;
        r = recv(fd, out + got, 1, 0);
        if (r <= 0) return -1;
        got++;
        out[got] = '\0';
        if (got >= 2 && out[got - 2] == '\r' && out[got - 1] == '\n') return 0;
    }
    return -1;
}

/* Waits until the server closed fd (end of stream or reset), within ms:
 * 1 when it did. */
static int raw_closed(int fd, int64_t ms)
{
    int64_t deadline = ts_now_ms() + ms;
    char buf[512];
    while (ts_now_ms() < deadline) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t r;
        if (poll(&p, 1, 50) <= 0) continue;
        r = recv(fd, buf, sizeof buf, 0);
        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) return 1;
    }
    return 0;
}

static long long info_number(rlk_conn *c, const char *section, const char *field)
{
    char val[64];
    rlk_resp_value *v = CMD(c, "INFO", section);
    if (!v || !v->str || !info_field(v->str, v->len, field, val, sizeof val)) return -1;
    return strtoll(val, NULL, 10);
}

/* The server evicts clients over maxmemory-clients (set to 1 byte: the
 * servers take anything under 128 KiB as 128 KiB) while a no-evict
 * client holds an 8 MB query buffer: every evictable client goes, an
 * idle one at once and a new one at its first command.  The lock's
 * connection stays (the same id, flagged), its lock renewed past three
 * TTLs and never lost. */
static void test_noevict_under_pressure(void)
{
    const char *name = "nat-pressure";
    int64_t ttl = slow ? 3000 : 600;
    ts_server *p = NULL;
    rlk_conn *adm = NULL;
    rlk_client *h = NULL;
    rlk_lock *l = NULL;
    struct lost_rec lost;
    char url[64], line[256], flags[128], got[256];
    int plain = -1, late = -1, press = -1, wd = 0;
    long long hid, evicted0, renewals;
    char *big = NULL;
    memset(&lost, 0, sizeof lost);
    if (!sv.noevict) {
        printf("# %s %s has no CLIENT NO-EVICT: no eviction test\n", sv.name, sv.version);
        return;
    }
    p = ts_start(NULL);
    if (!CHECK_MSG(p != NULL, "cannot start a server")) return;
    url_of(url, sizeof url, p);
    adm = CONNECT(url);
    if (!adm) goto out;
    /* The test's own connection must stay whatever the library does. */
    CMD(adm, "CLIENT", "NO-EVICT", "on");
    h = CLIENT_EX(url, 0, 0, "ne-holder");
    if (!h) goto out;
    hid = rlk_client_info(h)->client_id;
    l = ACQ_WD(h, name, ttl, &lost);
    if (!l) goto out;
    if (!start_watchdog(h)) goto out;
    wd = 1;
    plain = raw_open(p->port);
    if (!CHECK(plain >= 0) || !CHECK(raw_cmd(plain, "CLIENT SETNAME ne-plain", line, sizeof line) == 0) ||
        !CHECK_MSG(strcmp(line, "+OK\r\n") == 0, "reply %s", line))
        goto out;
    evicted0 = info_number(adm, "stats", "evicted_clients");

    if (!CHECK(CMD(adm, "CONFIG", "SET", "maxmemory-clients", "1") != NULL)) goto out;
    press = raw_open(p->port);
    if (!CHECK(press >= 0) || !CHECK(raw_cmd(press, "CLIENT NO-EVICT on", line, sizeof line) == 0) ||
        !CHECK_MSG(strcmp(line, "+OK\r\n") == 0, "reply %s", line))
        goto out;
    {
        static const char head[] = "*3\r\n$3\r\nSET\r\n$15\r\nnat-pressure-qb\r\n$8000000\r\n";
        size_t n = 1000000;
        big = malloc(n);
        if (!CHECK(big != NULL)) goto out;
        memset(big, 'x', n);
        if (!CHECK(raw_send(press, head, sizeof head - 1) == 0) || !CHECK(raw_send(press, big, n) == 0))
            goto out;
    }
    /* The pressure is real: the idle plain client is evicted. */
    CHECK_MSG(raw_closed(plain, LONG_MS), "the plain client was not evicted");
    CHECK_MSG(info_number(adm, "stats", "evicted_clients") >= evicted0 + 1,
              "evicted_clients %lld (before: %lld)", info_number(adm, "stats", "evicted_clients"),
              evicted0);
    reset_stats(adm); /* evicted_clients too */
    /* Three TTLs of renewals (three per TTL). */
    CHECK_MSG(wait_calls(adm, sv.set_ifeq ? "set" : ANY_SCRIPT, 9, LONG_MS),
              "renewals under pressure: %lld", stat_calls(adm, sv.set_ifeq ? "set" : ANY_SCRIPT));
    renewals = stat_calls(adm, sv.set_ifeq ? "set" : ANY_SCRIPT);
    /* ... and still: a new plain client goes once it sent a command
     * (its reply may come first, or not). */
    late = raw_open(p->port);
    CHECK(late >= 0 && raw_send(late, "PING\r\n", 6) == 0);
    CHECK_MSG(late >= 0 && raw_closed(late, LONG_MS), "a new plain client was not evicted");
    /* Over the servers' floor of maxmemory-clients (the query buffer
     * may have been trimmed to what it holds, 1 MB, meanwhile). */
    CHECK_MSG(info_number(adm, "memory", "mem_clients_normal") > 128 * 1024,
              "mem_clients_normal %lld: the pressure is gone",
              info_number(adm, "memory", "mem_clients_normal"));
    CHECK_MSG(info_number(adm, "stats", "evicted_clients") >= 1, "evicted_clients %lld",
              info_number(adm, "stats", "evicted_clients"));
    /* The holder's one connection is there, flagged, never replaced. */
    CHECK_EQ_INT(client_flags(adm, hid, flags, sizeof flags), 1);
    CHECK_MSG(strchr(flags, 'e') != NULL, "holder's flags=%s", flags);
    CHECK_EQ_INT(count_clients(adm, "ne-holder"), 1);
    CHECK(!rlk_lock_is_lost(l));
    CHECK_EQ_INT(lost_calls(&lost), 0);
    CHECK(cmd_str(adm, got, sizeof got, __LINE__, "GET", name, (const char *)NULL) == 1);
    CHECK_EQ_STR(got, rlk_lock_token(l));
    printf("# %s %s: under maxmemory-clients pressure, %lld renewals on the holder's one "
           "connection while plain clients were evicted\n",
           sv.name, sv.version, renewals);
out:
    if (wd) rlk_client_watchdog_stop(h);
    if (h) CHECK_EQ_INT(rlk_client_generation(h), 1);
    if (adm) CMD(adm, "CONFIG", "SET", "maxmemory-clients", "0");
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    if (plain >= 0) close(plain);
    if (late >= 0) close(late);
    if (press >= 0) close(press);
    free(big);
    rlk_client_free(h);
    rlk_conn_free(adm);
    ts_stop(p);
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;
    if (read_facts() != 0) {
        printf("FAIL main: cannot read INFO server\n");
        return 1;
    }

    RUN(test_cycle_uncontended);
    RUN(test_extend_set_form);
    RUN(test_watchdog_renewal);
    RUN(test_contended_handoff);
    RUN(test_marked_extend);
    RUN(test_fifo_three_waiters);
    RUN(test_marked_lock_renewed);
    RUN(test_acl_without_native_release);
    RUN(test_acl_without_scripts);
    RUN(test_fake_redis84_native);
    RUN(test_fake_redis84_delex_zero);
    RUN(test_fake_redis84_delex_unknown);
    RUN(test_fake_redis84_set_ifeq_refused);
    RUN(test_fake_valkey92_prefers_delifeq);
    RUN(test_fake_noevict_refused);
    RUN(test_noevict_flag);
    RUN(test_noevict_under_pressure);

    return locktest_finish(t0);
}
