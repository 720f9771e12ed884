/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The scripts as a FUNCTION library (src/core/script.c): on Redis 7 the lock
 * calls go as FCALL of the library resplock_H, loaded by the client when
 * it is missing (a fresh server, FUNCTION FLUSH, a restart without
 * persistence); where FUNCTION LOAD or FCALL is refused (an ACL, a
 * managed service) and on servers before 7 they go as EVALSHA.  Against
 * real redis-server 7.0 processes, and fake servers that answer HELLO as
 * Redis 6.2 and as a Redis 7 whose FUNCTION commands are blocked.
 */
#include "config.h"

#define TESTLIB_MAIN
#include "testlib.h"

#include "locktest.h"
#include "conn_internal.h"
#include "internal.h"
#include "lua.h"
#include "sha1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The value of key in map (or RESP2 flat array) m, or NULL. */
static const rlk_resp_value *map_get(const rlk_resp_value *m, const char *key)
{
    for (const rlk_resp_value *k = m ? m->child : NULL; k && k->next; k = k->next->next)
        if (k->str && k->len == strlen(key) && memcmp(k->str, key, k->len) == 0) return k->next;
    return NULL;
}

/* The names of the functions the server has in library lib ("" when it
 * has no such library), space-separated, into out. */
static void library_functions(rlk_conn *c, const char *lib, char *out, size_t n)
{
    rlk_resp_value *v = CMD(c, "FUNCTION", "LIST", "LIBRARYNAME", lib);
    out[0] = '\0';
    if (!CHECK(v && v->type == RLK_RESP_ARRAY)) return;
    for (const rlk_resp_value *l = v->child; l; l = l->next) {
        const rlk_resp_value *name = map_get(l, "library_name");
        const rlk_resp_value *fns = map_get(l, "functions");
        if (!name || !fns || strlen(lib) != name->len || memcmp(name->str, lib, name->len))
            continue;
        for (const rlk_resp_value *f = fns->child; f; f = f->next) {
            const rlk_resp_value *fn = map_get(f, "name");
            size_t used = strlen(out);
            if (fn && fn->str)
                snprintf(out + used, n - used, "%s%.*s", used ? " " : "", (int)fn->len,
                         fn->str);
        }
    }
}

/* 1 when every embedded script's function is in the server's library. */
static int library_complete(rlk_conn *c)
{
    char names[1024];
    library_functions(c, rlk__lua_library.name, names, sizeof names);
    for (size_t i = 0; i < rlk__lua_library.nfunctions; i++)
        if (!CHECK_MSG(strstr(names, rlk__lua_library.functions[i].name) != NULL,
                       "%s not among the library's functions: \"%s\"",
                       rlk__lua_library.functions[i].name, names))
            return 0;
    return 1;
}

/* One lock's life through every script: acquire (as a script: wait),
 * extend, status, release. */
static int lock_cycle(rlk_client *cl, const char *name)
{
    rlk_lock_options o;
    rlk_lock_status st;
    rlk_lock *l = NULL;
    int ok;
    opts(&o, 10000, 1000, RLK_LOCK_REENTRANT, 0, NULL);
    ok = CHECK_MSG(rlk_lock_acquire(cl, name, &o, &l) == RLK_OK, "acquire %s: %s", name,
                   rlk_client_errmsg(cl));
    if (!ok) return 0;
    ok &= CHECK(rlk_lock_extend(l, 5000, RLK_EXTEND_ADD) == RLK_OK);
    ok &= CHECK(rlk_lock_get_status(cl, name, &st) == RLK_OK && st.held == 1);
    ok &= CHECK(rlk_lock_release(l) == RLK_OK);
    return ok;
}

/* The rejected calls of cmd (refused before they ran: an ACL) since the
 * last CONFIG RESETSTAT, from INFO commandstats; -1 on failure. */
static long long rejected_calls(rlk_conn *c, const char *cmd)
{
    char key[64];
    long long n = 0;
    rlk_resp_value *v = CMD(c, "INFO", "commandstats");
    if (!v || !v->str) return -1;
    snprintf(key, sizeof key, "cmdstat_%s:", cmd);
    for (size_t i = 0; i + strlen(key) <= v->len; i++) {
        if (memcmp(v->str + i, key, strlen(key)) != 0) continue;
        for (size_t j = i; j + 15 <= v->len && v->str[j] != '\n'; j++)
            if (memcmp(v->str + j, "rejected_calls=", 15) == 0) {
                n = strtoll(v->str + j + 15, NULL, 10);
                break;
            }
        break;
    }
    return n;
}

/* A raw connection given the embedded library (as the client gives its
 * own): the embedded scripts go as FCALL where the server has them. */
static rlk_conn *connect_lib(const char *url, int line)
{
    rlk_conn *c = connect_url(url, 0, NULL, NULL, line);
    if (c) rlk__conn_set_library(c, &rlk__lua_library);
    return c;
}
#define CONNECT_LIB(url) connect_lib(url, __LINE__)

static void forget_scripts(rlk_conn *c)
{
    CMD(c, "FUNCTION", "FLUSH");
    CMD(c, "SCRIPT", "FLUSH");
}

/* ------------------------------------------------------------------ */
/* The library                                                         */

/* The library's functions, in its order, and their flags. */
static const struct {
    const char *name, *flags;
} want[] = {{"acquire", NULL},           {"release", "allow-oom"},
            {"extend", "allow-oom"},     {"renew", "allow-oom"},
            {"status", "no-writes"},     {"rate", NULL},
            {"sem_acquire", NULL},       {"sem_release", "allow-oom"},
            {"sem_status", "no-writes"}, {"sem_rs_acquire", NULL},
            {"sem_rs_release", "allow-oom"}, {"sem_rs_status", "no-writes"},
            {"rw_acquire", NULL},        {"rw_release", "allow-oom"},
            {"rw_status", "no-writes"}};

/* Its name is resplock_ and the first 12 hex digits of the SHA1 of the
 * library written with that part empty; every function is named
 * after it. */
static void test_library_name(void)
{
    const char *name = rlk__lua_library.name;
    size_t n = 0, k = 0;
    char *lib = rlk__script_library_text(&rlk__lua_library, &n);
    char *bare = malloc(n + 1), sha[41], head[64];
    if (!CHECK(lib != NULL && bare != NULL && n == strlen(lib))) {
        rlk__free(lib);
        free(bare);
        return;
    }
    CHECK_EQ_INT(strlen(name), strlen("resplock_") + 12);
    for (size_t i = 0; i < n;) {
        if (strncmp(lib + i, name, strlen(name)) == 0) {
            memcpy(bare + k, "resplock_", 9);
            k += 9;
            i += strlen(name);
        } else {
            bare[k++] = lib[i++];
        }
    }
    bare[k] = '\0';
    rlk__sha1_hex(bare, k, sha);
    CHECK_MSG(strncmp(name + 9, sha, 12) == 0, "library %s, SHA1 of its text %s", name, sha);
    snprintf(head, sizeof head, "#!lua name=%s\n", name);
    CHECK(strncmp(lib, head, strlen(head)) == 0);
    CHECK_EQ_INT(rlk__lua_library.nfunctions, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < rlk__lua_library.nfunctions; i++) {
        CHECK(strncmp(rlk__lua_library.functions[i].name, name, strlen(name)) == 0);
        CHECK(strstr(lib, rlk__lua_library.functions[i].name) != NULL);
        const rlk__script_fn *f = &rlk__lua_library.functions[i];
        CHECK_EQ_INT(f->len, strlen(f->text));
        /* Each script's text once in the binary: the library refers to it. */
        CHECK(strstr(lib, rlk__lua_library.functions[i].text) != NULL);
    }
    free(bare);
    rlk__free(lib);
}

/* The scripts that free or keep a lock, permits or holds (release,
 * extend, renew, the semaphore's and the read-write lock's releases) may
 * run at maxmemory (allow-oom), as
 * functions and as EVAL on Redis 7: their text for EVAL is the line
 * "#!lua flags=allow-oom" and their code, with that text's SHA1.  The
 * acquires and the rate limiter's decision, which grow the data, have no
 * flags; the status reads write nothing (no-writes). */
static void test_script_flags(void)
{
    size_t n = 0;
    char *lib = rlk__script_library_text(&rlk__lua_library, &n);
    if (!CHECK(lib != NULL)) return;
    CHECK_EQ_INT(rlk__lua_library.nfunctions, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < rlk__lua_library.nfunctions && i < sizeof want / sizeof want[0];
         i++) {
        const rlk__script_fn *f = &rlk__lua_library.functions[i];
        const char *body = strstr(lib, f->text);
        char tail[64], line[64], sha[41];
        size_t nl = strlen(f->name) - strlen(want[i].name);
        CHECK_EQ_STR(f->name + nl, want[i].name);
        if (!want[i].flags) {
            CHECK(f->flagged == NULL);
            CHECK(body && strncmp(body + f->len, "end}\n", 5) == 0);
            continue;
        }
        snprintf(tail, sizeof tail, "end, flags={'%s'}}\n", want[i].flags);
        CHECK(body && strncmp(body + f->len, tail, strlen(tail)) == 0);
        snprintf(line, sizeof line, "#!lua flags=%s\n", want[i].flags);
        if (!CHECK(f->flagged != NULL)) continue;
        CHECK_EQ_INT(f->flagged_len, strlen(line) + f->len);
        CHECK_EQ_INT(strlen(f->flagged), f->flagged_len);
        CHECK(strncmp(f->flagged, line, strlen(line)) == 0);
        /* The code once in the binary: the text without flags is the end
         * of the text with them. */
        CHECK(f->text == f->flagged + strlen(line));
        rlk__sha1_hex(f->flagged, f->flagged_len, sha);
        CHECK_EQ_STR(f->flagged_sha1, sha);
    }
    rlk__free(lib);
}

/* The first lock call finds no function, loads the library and runs
 * again once as EVAL (sent with the load, it does not depend on it);
 * every later script runs as FCALL, none by EVALSHA. */
static void test_calls_are_fcall(void)
{
    rlk_client *cl;
    forget_scripts(admin);
    cl = CLIENT();
    if (!cl) return;
    reset_stats(admin);
    if (lock_cycle(cl, "fn-first")) {
        CHECK(library_complete(admin));
        CHECK_EQ_INT(stat_calls(admin, "function|load"), 1);
        CHECK_MSG(stat_calls(admin, "fcall") >= 4, "%lld FCALL", stat_calls(admin, "fcall"));
        CHECK_EQ_INT(stat_calls(admin, "evalsha"), 0);
        CHECK_EQ_INT(stat_calls(admin, "eval"), 1);
        CHECK_EQ_INT(stat_calls(admin, "script|load"), 0);
    }
    /* Loaded once: the next cycle only calls. */
    reset_stats(admin);
    if (lock_cycle(cl, "fn-second")) {
        CHECK_EQ_INT(stat_calls(admin, "function|load"), 0);
        CHECK_EQ_INT(stat_calls(admin, "fcall"), 4);
        CHECK_EQ_INT(stat_calls(admin, "evalsha"), 0);
    }
    rlk_client_free(cl);
}

/* FUNCTION FLUSH under a connected client: its next calls load the
 * library again and succeed, alone and in a pipeline. */
static void test_function_flush(void)
{
    rlk_client *cl = CLIENT();
    rlk_conn *c = CONNECT_LIB(srv_url);
    rlk_script status;
    enum { N = 20 }; /* more than go without allocating */
    rlk_request reqs[N];
    rlk_resp_value *replies[N];
    const char *keys[3] = {"fn-p", "{fn-p}:queue", "{fn-p}:waiters"};
    if (!cl || !c) goto out;
    CHECK(lock_cycle(cl, "fn-flush"));
    for (int round = 0; round < 2; round++) {
        CMD(admin, "FUNCTION", "FLUSH");
        reset_stats(admin);
        CHECK(lock_cycle(cl, "fn-flush"));
        CHECK_EQ_INT(stat_calls(admin, "function|load"), 1);
        CHECK_EQ_INT(stat_calls(admin, "evalsha"), 0);
        CHECK(library_complete(admin));
    }

    /* A pipeline of status calls: one load for all of them. */
    rlk_script_init(&status, rlk__lua_status, 0);
    for (int i = 0; i < N; i++) {
        reqs[i].script = &status;
        reqs[i].nkeys = 3;
        reqs[i].argc = 3;
        reqs[i].argv = keys;
        reqs[i].argvlen = NULL;
    }
    CHECK_EQ_INT(rlk_conn_pipeline(c, N, reqs, replies), RLK_OK); /* loaded, detected */
    CMD(admin, "FUNCTION", "FLUSH");
    reset_stats(admin);
    CHECK_EQ_INT(rlk_conn_pipeline(c, N, reqs, replies), RLK_OK);
    for (int i = 0; i < N; i++) {
        const rlk_resp_value *held = replies[i] ? rlk_resp_value_at(replies[i], 0) : NULL;
        CHECK_MSG(held && held->type == RLK_RESP_INTEGER && held->integer == 0,
                  "reply %d: %.*s", i, replies[i] ? (int)replies[i]->len : 0,
                  replies[i] && replies[i]->str ? replies[i]->str : "");
    }
    CHECK_EQ_INT(stat_calls(admin, "function|load"), 1);
    CHECK_EQ_INT(stat_calls(admin, "fcall"), 2 * N);
    CHECK_EQ_INT(stat_calls(admin, "evalsha"), 0);
out:
    rlk_conn_free(c);
    rlk_client_free(cl);
}

/* A restart without persistence loses the library: the client's next
 * calls, on a new connection, load it again.  Where the server has a
 * native compare-and-delete (DELIFEQ, DELEX IFEQ), the release goes by
 * it, not by a script. */
static void test_restart(void)
{
    ts_server *s = ts_start(NULL);
    rlk_client *cl = NULL;
    rlk_conn *adm = NULL;
    rlk_lock *l;
    char url[64];
    if (!CHECK(s != NULL)) return;
    url_of(url, sizeof url, s);
    cl = CLIENT_EX(url, 0, 0, NULL);
    if (!cl) goto out;
    l = ACQ(cl, "fn-restart", 10000);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    if (!CHECK(ts_restart(s) == 0)) goto out;
    adm = CONNECT(url);
    if (!adm) goto out;
    CHECK_EQ_INT(CMD_INT(adm, "EXISTS", "fn-restart"), 0);
    l = ACQ(cl, "fn-restart", 10000);
    if (l) CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    CHECK(library_complete(adm));
    CHECK_EQ_INT(stat_calls(adm, "function|load"), 1);
    CHECK_EQ_INT(stat_calls(adm, "evalsha"), 0);
    long long fcalls = stat_calls(adm, "fcall"), deletes = stat_calls(adm, "delifeq+delex");
    int native = server_has_delifeq(adm) || server_has_delex_ifeq(adm); /* after the counts */
    CHECK_MSG(fcalls >= (native ? 1 : 2), "%lld FCALL", fcalls);
    CHECK_MSG(deletes == native, "%lld DELIFEQ or DELEX (the server has %s)", deletes,
              native ? "one" : "neither");
out:
    rlk_conn_free(adm);
    rlk_client_free(cl);
    ts_stop(s);
}

/* A connection given no library knows no function: an embedded script
 * goes by EVALSHA there, as any caller's, and no FUNCTION LOAD is sent. */
static void test_no_library_evalsha(void)
{
    rlk_conn *c = CONNECT(srv_url);
    rlk_script status;
    rlk_resp_value *v;
    const char *argv[3] = {"fn-nolib", "{fn-nolib}:queue", "{fn-nolib}:waiters"};
    if (!c) return;
    rlk_script_init(&status, rlk__lua_status, 0);
    CHECK_EQ_INT(rlk_conn_eval(c, &v, &status, 3, 3, argv, NULL), RLK_OK); /* loads it */
    reset_stats(admin);
    CHECK_EQ_INT(rlk_conn_eval(c, &v, &status, 3, 3, argv, NULL), RLK_OK);
    CHECK(v && v->type == RLK_RESP_ARRAY);
    CHECK_EQ_INT(stat_calls(admin, "evalsha"), 1);
    CHECK_EQ_INT(stat_calls(admin, "fcall"), 0);
    CHECK_EQ_INT(stat_calls(admin, "function|load"), 0);
    rlk_conn_free(c);
}

/* A caller's own script keeps going by EVALSHA. */
static void test_own_script_evalsha(void)
{
    rlk_conn *c = CONNECT_LIB(srv_url);
    rlk_script s;
    rlk_resp_value *v;
    const char *argv[1] = {"fn-own"};
    if (!c) return;
    rlk_script_init(&s, "return redis.call('exists', KEYS[1])", 0);
    CHECK_EQ_INT(rlk_conn_eval(c, &v, &s, 1, 1, argv, NULL), RLK_OK); /* loads it */
    reset_stats(admin);
    CHECK_EQ_INT(rlk_conn_eval(c, &v, &s, 1, 1, argv, NULL), RLK_OK);
    CHECK(v && v->type == RLK_RESP_INTEGER && v->integer == 0);
    CHECK_EQ_INT(stat_calls(admin, "evalsha"), 1);
    CHECK_EQ_INT(stat_calls(admin, "fcall"), 0);
    CHECK_EQ_INT(stat_calls(admin, "function|load"), 0);
    rlk_conn_free(c);
}

/* ------------------------------------------------------------------ */
/* Where functions are refused                                         */

/* A user that may not load functions (ACL -function), and one that may
 * not call them either (-fcall): their clients fall back to EVALSHA, and
 * try FCALL once per connection, not once per call. */
static void acl_fallback(const char *user, const char *const *rules, long long fcall_tries,
                         long long fcall_rejected)
{
    char url[128], acl_user[32];
    const char *argv[12];
    int argc = 0;
    rlk_client *cl = NULL;
    rlk_resp_value *v;
    snprintf(acl_user, sizeof acl_user, "%s", user);
    argv[argc++] = "ACL";
    argv[argc++] = "SETUSER";
    argv[argc++] = acl_user;
    argv[argc++] = "reset";
    argv[argc++] = "on";
    argv[argc++] = ">fnpass";
    argv[argc++] = "~*";
    argv[argc++] = "&*";
    argv[argc++] = "+@all";
    while (*rules) argv[argc++] = *rules++;
    if (!CHECK(rlk_conn_command(admin, &v, argc, argv, NULL) == RLK_OK &&
               v->type == RLK_RESP_SIMPLE))
        return;
    forget_scripts(admin);
    snprintf(url, sizeof url, "redis://%s:fnpass@%s:%d", user, srv->host, srv->port);
    cl = CLIENT_EX(url, 0, 0, NULL);
    if (!cl) goto out;
    reset_stats(admin);
    if (lock_cycle(cl, "fn-acl")) {
        char names[256];
        library_functions(admin, rlk__lua_library.name, names, sizeof names);
        CHECK_EQ_STR(names, "");
        /* The call that met the refusal went again as EVAL, the
         * others as EVALSHA (and EVAL after NOSCRIPT). */
        CHECK_MSG(stat_calls(admin, "evalsha") >= 3, "%lld EVALSHA", stat_calls(admin, "evalsha"));
        CHECK_EQ_INT(stat_calls(admin, "fcall"), fcall_tries);
        CHECK_EQ_INT(rejected_calls(admin, "fcall"), fcall_rejected);
    }
    reset_stats(admin);
    if (lock_cycle(cl, "fn-acl")) {
        CHECK_EQ_INT(stat_calls(admin, "fcall"), 0);
        CHECK_EQ_INT(rejected_calls(admin, "fcall"), 0);
        CHECK_EQ_INT(stat_calls(admin, "evalsha"), 4);
        CHECK_EQ_INT(stat_calls(admin, "script|load"), 0);
    }
out:
    rlk_client_free(cl);
    CMD(admin, "ACL", "DELUSER", acl_user);
}

static void test_acl_no_function_load(void)
{
    static const char *const rules[] = {"-function", NULL};
    /* FCALL runs and finds no function once: the call goes again as
     * EVAL with the FUNCTION LOAD, which is refused. */
    acl_fallback("fn-noload", rules, 1, 0);
}

static void test_acl_no_fcall(void)
{
    static const char *const rules[] = {"-function", "-fcall", "-fcall_ro", NULL};
    /* FCALL is rejected before it runs (not counted as a call), once. */
    acl_fallback("fn-nocall", rules, 0, 1);
}

/* ------------------------------------------------------------------ */
/* Fake servers: another version, a blocked FUNCTION                   */

/* A server that answers HELLO as `version` of Redis, every script call
 * with 1 and everything else with OK, and counts what it was sent. */
struct persona {
    const char *version;
    const char *fcall_reply;      /* NULL: FCALL answered 1 */
    const char *function_reply;   /* NULL: FUNCTION LOAD answered with a name */
    int evalsha, fcall, function, other; /* atomic */
};

static void persona_server(fake_conn *fc, void *arg)
{
    struct persona *p = arg;
    char **argv, hello[512];
    int argc;
    snprintf(hello, sizeof hello,
             "%%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$%zu\r\n%s\r\n"
             "$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
             "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n",
             strlen(p->version), p->version);
    while ((argc = fake_read_command(fc, &argv, -1, NULL)) > 0) {
        const char *r = "+OK\r\n";
        if (strcasecmp(argv[0], "HELLO") == 0) {
            r = hello;
        } else if (strcasecmp(argv[0], "EVALSHA") == 0) {
            __atomic_fetch_add(&p->evalsha, 1, __ATOMIC_SEQ_CST);
            r = ":1\r\n";
        } else if (strcasecmp(argv[0], "FCALL") == 0) {
            __atomic_fetch_add(&p->fcall, 1, __ATOMIC_SEQ_CST);
            r = p->fcall_reply ? p->fcall_reply : ":1\r\n";
        } else if (strcasecmp(argv[0], "FUNCTION") == 0) {
            __atomic_fetch_add(&p->function, 1, __ATOMIC_SEQ_CST);
            r = p->function_reply ? p->function_reply : "+resplock\r\n";
        } else {
            __atomic_fetch_add(&p->other, 1, __ATOMIC_SEQ_CST);
        }
        if (fake_send_str(fc, r)) break;
    }
}

/* Three calls of the release script by rlk_conn_eval to a server
 * answering as p; the counts of what it got are p's. */
static void calls_to(struct persona *p)
{
    fake_server *fs = fake_start(persona_server, p);
    rlk_conn *c = NULL;
    rlk_script release;
    char url[64];
    const char *argv[4] = {"fn-fake", "{fn-fake}:queue", "{fn-fake}:waiters", "tok"};
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    c = CONNECT_LIB(url);
    rlk_script_init(&release, rlk__lua_release, 0);
    for (int i = 0; c && i < 3; i++) {
        rlk_resp_value *v;
        int r = rlk_conn_eval(c, &v, &release, 3, 4, argv, NULL);
        CHECK_MSG(r == RLK_OK, "call %d: %d %s", i, r, rlk_conn_errmsg(c));
        if (r == RLK_OK) CHECK(v->type == RLK_RESP_INTEGER && v->integer == 1);
    }
    rlk_conn_free(c);
    fake_stop(fs);
}

/* A server without HELLO (Redis 5, a proxy without RESP3): HELLO
 * refused as unknown, everything a first try sends answered; SETs
 * counted. */
static void resp2_only_server(fake_conn *fc, void *arg)
{
    int *sets = arg;
    char **argv;
    while (fake_read_command(fc, &argv, -1, NULL) > 0) {
        const char *r = "+OK\r\n";
        if (strcasecmp(argv[0], "HELLO") == 0) r = "-ERR unknown command 'HELLO'\r\n";
        else if (strcasecmp(argv[0], "HGET") == 0) r = "$-1\r\n";
        else if (strcasecmp(argv[0], "TIME") == 0) r = "*2\r\n$10\r\n1700000000\r\n$6\r\n123456\r\n";
        else if (strcasecmp(argv[0], "SET") == 0) __atomic_fetch_add(sets, 1, __ATOMIC_SEQ_CST);
        else if (strcasecmp(argv[0], "EVALSHA") == 0 || strcasecmp(argv[0], "EVAL") == 0) r = ":1\r\n";
        if (fake_send_str(fc, r)) break;
    }
}

/* protocol 3 is RESP3 only for a client too, as for a connection: the
 * client asked for it never locks over RESP2 (the driver passed the
 * value to a session that read 3 as "RESP3, else RESP2"); protocol 0
 * falls back. */
static void test_resp3_only_client(void)
{
    for (int protocol = 3; protocol >= 0; protocol -= 3) {
        int sets = 0;
        fake_server *fs = fake_start(resp2_only_server, &sets);
        if (!CHECK(fs != NULL)) return;
        char u[64];
        snprintf(u, sizeof u, "redis://127.0.0.1:%d", fake_port(fs));
        rlk_client_config cfg;
        rlk_client_config_init(&cfg);
        cfg.conn.url = u;
        cfg.conn.protocol = protocol;
        cfg.conn.connect_timeout_ms = 2000;
        cfg.conn.reconnect_attempts = 1;
        rlk_client *cl = rlk_client_new(&cfg);
        rlk_lock *l = NULL;
        rlk_lock_options o;
        rlk_lock_options_init(&o);
        o.ttl_ms = 10000;
        int r = cl ? rlk_lock_acquire(cl, "resp3-only", &o, &l) : RLK_ERR_NOMEM;
        if (protocol == 3) {
            CHECK_MSG(r != RLK_OK, "protocol 3 locked over RESP2");
            CHECK_EQ_INT(__atomic_load_n(&sets, __ATOMIC_SEQ_CST), 0);
            CHECK_MSG(cl && strstr(rlk_client_errmsg(cl), "HELLO") != NULL, "errmsg: %s",
                      cl ? rlk_client_errmsg(cl) : "");
        } else {
            CHECK_MSG(r == RLK_OK, "protocol 0: %d %s", r, cl ? rlk_client_errmsg(cl) : "");
            CHECK(__atomic_load_n(&sets, __ATOMIC_SEQ_CST) >= 1);
        }
        if (l) rlk_lock_forget(l);
        rlk_client_free(cl);
        fake_stop(fs);
    }
}

/* Redis 6.2 has no FUNCTION: no FUNCTION LOAD, no FCALL, EVALSHA. */
static void test_fake_redis62(void)
{
    struct persona p = {"6.2.14", "-ERR unknown command 'FCALL'\r\n",
                        "-ERR unknown command 'FUNCTION'\r\n", 0, 0, 0, 0};
    calls_to(&p);
    CHECK_EQ_INT(p.evalsha, 3);
    CHECK_EQ_INT(p.fcall, 0);
    CHECK_EQ_INT(p.function, 0);
}

/* A newer Redis has them: FCALL only. */
static void test_fake_redis74(void)
{
    struct persona p = {"7.4.1", NULL, NULL, 0, 0, 0, 0};
    calls_to(&p);
    CHECK_EQ_INT(p.fcall, 3);
    CHECK_EQ_INT(p.evalsha, 0);
    CHECK_EQ_INT(p.function, 0);
}

/* A managed Redis 7 that blocks FUNCTION and FCALL with errors of its
 * own: tried once, then EVALSHA for the connection. */
static void test_fake_functions_blocked(void)
{
    struct persona p = {"7.2.6", "-ERR Function not found\r\n",
                        "-ERR command not allowed by the service\r\n", 0, 0, 0, 0};
    struct persona q = {"7.2.6", "-ERR unknown command 'FCALL', with args beginning with: \r\n",
                        NULL, 0, 0, 0, 0};
    calls_to(&p);
    CHECK_EQ_INT(p.function, 1);
    CHECK_EQ_INT(p.fcall, 2); /* the first call and its retry after the load */
    CHECK_EQ_INT(p.evalsha, 3);
    calls_to(&q);
    CHECK_EQ_INT(q.fcall, 1);
    CHECK_EQ_INT(q.function, 0);
    CHECK_EQ_INT(q.evalsha, 3);
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (locktest_setup() != 0) return 1;

    RUN(test_library_name);
    RUN(test_script_flags);
    RUN(test_calls_are_fcall);
    RUN(test_function_flush);
    RUN(test_restart);
    RUN(test_own_script_evalsha);
    RUN(test_no_library_evalsha);
    RUN(test_acl_no_function_load);
    RUN(test_acl_no_fcall);
    RUN(test_fake_redis62);
    RUN(test_resp3_only_client);
    RUN(test_fake_redis74);
    RUN(test_fake_functions_blocked);

    return locktest_finish(t0);
}
