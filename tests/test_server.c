/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Server detection (src/core/serverinfo.h, and over a connection
 * rlk__server_detect in src/core/script.h): which server, which version, and
 * which native commands it has.  The pure function over a table of
 * versions and garbage; the real server under test, whichever it is
 * (RESP3 through HELLO, and RESP2 through INFO server), whose facts must
 * be those of the name and version its INFO server gives, and whose
 * capability bits must match the commands it takes; fake servers answering HELLO and INFO as
 * newer ones do (Valkey 9.0, Redis 8.4, a Valkey that claims Redis 7.2.4),
 * as Redis 5 does (no HELLO), and a failover to a server of another
 * version, which a new detection must see.
 */
#include "testlib.h"

#include "fakeserver.h"
#include "resplock.h"
#include "script.h"
#include "server.h"
#include "serverinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LONG_MS 10000 /* for things that should succeed: generous under valgrind */

/* What every Redis 7.0+ and Valkey 7.2+ has: script flags, functions,
 * CLIENT NO-EVICT. */
#define SCRIPTING (RLK_CAP_SCRIPT_FLAGS | RLK_CAP_FUNCTIONS | RLK_CAP_NO_EVICT)
#define IFEQ_ALL (RLK_CAP_SET_IFEQ | RLK_CAP_DELIFEQ | RLK_CAP_DELEX_IFEQ)

static const char *flavor_name(rlk__flavor f)
{
    return f == RLK__FLAVOR_REDIS ? "redis" : f == RLK__FLAVOR_VALKEY ? "valkey" : "unknown";
}

/* Checks *s against what it should be; returns 1 when all of it held. */
static int check_facts(int line, const rlk__server *s, rlk__flavor flavor, int major, int minor,
                       int patch, unsigned caps)
{
    int ok = s->flavor == flavor && s->major == major && s->minor == minor &&
             s->patch == patch && s->caps == caps;
    return tl_ok(ok, __FILE__, line, "got %s %d.%d.%d caps 0x%02x, want %s %d.%d.%d caps 0x%02x",
                 flavor_name(s->flavor), s->major, s->minor, s->patch, s->caps,
                 flavor_name(flavor), major, minor, patch, caps);
}
#define CHECK_FACTS(s, ...) check_facts(__LINE__, s, __VA_ARGS__)

/* ------------------------------------------------------------------ */
/* The pure function                                                    */

static void test_versions(void)
{
    static const struct {
        const char *name, *version;
        rlk__flavor flavor;
        int v[3];
        unsigned caps;
    } t[] = {
        {"redis", "5.0.14", RLK__FLAVOR_REDIS, {5, 0, 14}, 0},
        {"redis", "6.2.14", RLK__FLAVOR_REDIS, {6, 2, 14}, 0},
        {"redis", "6.9.99", RLK__FLAVOR_REDIS, {6, 9, 99}, 0},
        {"redis", "7.0.0", RLK__FLAVOR_REDIS, {7, 0, 0}, SCRIPTING},
        {"redis", "7.0.15", RLK__FLAVOR_REDIS, {7, 0, 15}, SCRIPTING},
        {"redis", "7.4.1", RLK__FLAVOR_REDIS, {7, 4, 1}, SCRIPTING},
        {"redis", "8.2.0", RLK__FLAVOR_REDIS, {8, 2, 0}, SCRIPTING},
        {"redis", "8.3.99", RLK__FLAVOR_REDIS, {8, 3, 99}, SCRIPTING},
        {"redis", "8.4.0", RLK__FLAVOR_REDIS, {8, 4, 0},
         SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELEX_IFEQ},
        {"redis", "10.0.1", RLK__FLAVOR_REDIS, {10, 0, 1},
         SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELEX_IFEQ},
        {"REDIS", "8.4", RLK__FLAVOR_REDIS, {8, 4, 0},
         SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELEX_IFEQ},
        {"redis", "8.4.0-rc1", RLK__FLAVOR_REDIS, {8, 4, 0},
         SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELEX_IFEQ},
        {"valkey", "7.2.5", RLK__FLAVOR_VALKEY, {7, 2, 5}, SCRIPTING},
        {"valkey", "8.0.1", RLK__FLAVOR_VALKEY, {8, 0, 1}, SCRIPTING},
        {"valkey", "8.1.0", RLK__FLAVOR_VALKEY, {8, 1, 0}, SCRIPTING | RLK_CAP_SET_IFEQ},
        {"valkey", "9.0.0", RLK__FLAVOR_VALKEY, {9, 0, 0},
         SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELIFEQ},
        {"valkey", "9.1.7", RLK__FLAVOR_VALKEY, {9, 1, 7},
         SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELIFEQ},
        {"valkey", "9.2.0", RLK__FLAVOR_VALKEY, {9, 2, 0}, SCRIPTING | IFEQ_ALL},
        {"Valkey", "12.0.0", RLK__FLAVOR_VALKEY, {12, 0, 0}, SCRIPTING | IFEQ_ALL},
        /* Not Redis or Valkey: nothing is assumed of it. */
        {"dragonfly", "9.2.0", RLK__FLAVOR_UNKNOWN, {9, 2, 0}, 0},
        {NULL, "8.4.0", RLK__FLAVOR_UNKNOWN, {8, 4, 0}, 0},
        {"", "8.4.0", RLK__FLAVOR_UNKNOWN, {8, 4, 0}, 0},
        {"redisx", "8.4.0", RLK__FLAVOR_UNKNOWN, {8, 4, 0}, 0},
        /* Versions that do not parse: no capability. */
        {"redis", NULL, RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"valkey", "", RLK__FLAVOR_VALKEY, {0, 0, 0}, 0},
        {"redis", "8", RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"redis", "8.", RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"redis", ".4.0", RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"redis", "8..4", RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"redis", "8.4.0.1", RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"redis", "8.4.x", RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"redis", " 8.4.0", RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"redis", "8.4.0 ", RLK__FLAVOR_REDIS, {0, 0, 0}, 0},
        {"valkey", "v9.0.0", RLK__FLAVOR_VALKEY, {0, 0, 0}, 0},
        {"valkey", "9.0.0\n", RLK__FLAVOR_VALKEY, {0, 0, 0}, 0},
        {"valkey", "-9.0.0", RLK__FLAVOR_VALKEY, {0, 0, 0}, 0},
        {"valkey", "99999999999999999999.0.0", RLK__FLAVOR_VALKEY, {0, 0, 0}, 0},
        {"valkey", "9.99999999999999999999", RLK__FLAVOR_VALKEY, {0, 0, 0}, 0},
        {"valkey", "garbage", RLK__FLAVOR_VALKEY, {0, 0, 0}, 0},
        {NULL, NULL, RLK__FLAVOR_UNKNOWN, {0, 0, 0}, 0},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        rlk__server s;
        memset(&s, 0xa5, sizeof s); /* every field must be written */
        rlk__server_facts(&s, t[i].name, t[i].version);
        if (!CHECK_FACTS(&s, t[i].flavor, t[i].v[0], t[i].v[1], t[i].v[2], t[i].caps))
            printf("    for %s \"%s\"\n", t[i].name ? t[i].name : "(null)",
                   t[i].version ? t[i].version : "(null)");
    }
}

/* Random bytes as versions: no crash, and what parses is digits and
 * dots only. */
static void test_versions_garbage(void)
{
    unsigned seed = 12345;
    char v[16];
    int parsed = 0;
    for (int i = 0; i < 200000; i++) {
        size_t n = (seed = seed * 1103515245u + 12345u) >> 16 & 15;
        for (size_t k = 0; k < n; k++) {
            seed = seed * 1103515245u + 12345u;
            /* Mostly digits and dots, which make near misses. */
            unsigned x = seed >> 16;
            v[k] = x % 4 ? "0123456789..-"[x % 13] : (char)(x >> 8);
        }
        v[n] = '\0';
        rlk__server s;
        rlk__server_facts(&s, "valkey", v);
        if (s.caps) {
            parsed++;
            size_t digits = strspn(v, "0123456789.");
            if (!CHECK_MSG(v[digits] == '\0' || v[digits] == '-', "\"%s\" parsed", v)) break;
        }
    }
    CHECK_MSG(parsed > 100, "only %d random versions parsed: the test makes no near misses",
              parsed);
}

/* ------------------------------------------------------------------ */
/* The real server under test                                           */

static rlk_conn *connect_url(const char *url, int protocol)
{
    rlk_conn_config cfg;
    rlk_conn_config_init(&cfg);
    cfg.url = url;
    cfg.protocol = protocol;
    rlk_conn *c = rlk_conn_new(&cfg);
    if (c && !CHECK_MSG(rlk_conn_connect(c) == RLK_OK, "connect %s: %s", url, rlk_conn_errmsg(c))) {
        rlk_conn_free(c);
        return NULL;
    }
    return c;
}

/* The server's count of INFO commands, read through admin (which counts
 * its own INFO once per reading). */
static long info_calls(rlk_conn *admin)
{
    const char *argv[2] = {"INFO", "commandstats"};
    rlk_resp_value *v;
    if (rlk_conn_command(admin, &v, 2, argv, NULL) != RLK_OK || !v->str) return -1;
    char text[8192];
    snprintf(text, sizeof text, "%.*s", (int)v->len, v->str);
    const char *p = strstr(text, "cmdstat_info:calls=");
    return p ? strtol(p + 19, NULL, 10) : 0;
}

/* INFO's line "field:value" of text, into out (n bytes); "" without it.
 * Read here, apart from the library's reading. */
static void info_line(const char *text, const char *field, char *out, size_t n)
{
    size_t fl = strlen(field);
    out[0] = '\0';
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, field, fl) == 0 && p[fl] == ':') {
            size_t k = strcspn(p + fl + 1, "\r\n");
            snprintf(out, n, "%.*s", (int)(k < n ? k : n - 1), p + fl + 1);
            return;
        }
    }
}

/* Whether the server runs a command (any reply but an error). */
static int takes(rlk_conn *c, int argc, const char **argv)
{
    rlk_resp_value *v = NULL;
    return rlk_conn_command(c, &v, argc, argv, NULL) == RLK_OK && v &&
           v->type != RLK_RESP_ERROR && v->type != RLK_RESP_BLOB_ERROR;
}

/* The capabilities the server really has, asked of it command by
 * command (on a key nothing else uses, which none of them creates). */
static unsigned real_caps(rlk_conn *c)
{
    static const char *set_ifeq[] = {"SET", "srv-probe", "x", "IFEQ", "y"};
    static const char *delifeq[] = {"DELIFEQ", "srv-probe", "y"};
    static const char *delex[] = {"DELEX", "srv-probe", "IFEQ", "y"};
    static const char *flags[] = {"EVAL", "#!lua flags=no-writes\nreturn 1", "0"};
    static const char *functions[] = {"FUNCTION", "LIST"};
    static const char *no_evict[] = {"CLIENT", "NO-EVICT", "on"};
    unsigned caps = 0;
    if (takes(c, 5, set_ifeq)) caps |= RLK_CAP_SET_IFEQ;
    if (takes(c, 3, delifeq)) caps |= RLK_CAP_DELIFEQ;
    if (takes(c, 4, delex)) caps |= RLK_CAP_DELEX_IFEQ;
    if (takes(c, 3, flags)) caps |= RLK_CAP_SCRIPT_FLAGS;
    if (takes(c, 2, functions)) caps |= RLK_CAP_FUNCTIONS;
    if (takes(c, 3, no_evict)) caps |= RLK_CAP_NO_EVICT;
    return caps;
}

static void test_real_server(void)
{
    ts_server *srv = ts_start(NULL);
    char url[64];
    if (!CHECK(srv != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", srv->port);
    rlk_conn *admin = connect_url(url, 0);
    rlk_conn *c3 = connect_url(url, 0), *c2 = connect_url(url, 2);
    if (!CHECK(admin && c3 && c2)) goto out;

    /* What the server says of itself, to compare with: Valkey names
     * itself (server_name, valkey_version) and claims redis_version
     * 7.2.4; Redis gives redis_version alone. */
    const char *argv[2] = {"INFO", "server"};
    rlk_resp_value *v;
    CHECK_EQ_INT(rlk_conn_command(admin, &v, 2, argv, NULL), RLK_OK);
    if (!CHECK(v && v->str)) goto out;
    char text[8192], name[32], vv[32], rv[32];
    snprintf(text, sizeof text, "%.*s", (int)v->len, v->str);
    info_line(text, "server_name", name, sizeof name);
    info_line(text, "valkey_version", vv, sizeof vv);
    info_line(text, "redis_version", rv, sizeof rv);
    int valkey = strcmp(name, "valkey") == 0 || vv[0];
    const char *want_name = valkey ? "valkey" : "redis", *want_version = valkey ? vv : rv;
    int w[3] = {0, 0, 0};
    if (!CHECK_MSG(sscanf(want_version, "%d.%d.%d", &w[0], &w[1], &w[2]) == 3,
                   "INFO server: %s version '%s'", want_name, want_version))
        goto out;
    rlk__flavor flavor = valkey ? RLK__FLAVOR_VALKEY : RLK__FLAVOR_REDIS;

    /* What it can do: the table's facts for that name and version, and
     * the commands it really takes; they must agree. */
    rlk__server want;
    rlk__server_facts(&want, want_name, want_version);
    CHECK_FACTS(&want, flavor, w[0], w[1], w[2], want.caps);
    unsigned real = real_caps(admin);
    printf("    the server: %s %s, caps 0x%02x\n", want_name, want_version, real);
    CHECK_MSG(want.caps == real, "%s %s: caps 0x%02x by the table, 0x%02x by the commands it takes",
              want_name, want_version, want.caps, real);

    /* RESP3: HELLO named the server and its version (as INFO does: no
     * Valkey here claims to be Redis 7.2.4), which told all of it; no
     * INFO is sent. */
    CHECK_EQ_STR(rlk_conn_get_info(c3)->server, want_name);
    CHECK_EQ_STR(rlk_conn_get_info(c3)->version, want_version);
    long base0 = info_calls(admin), base1 = info_calls(admin), idle = base1 - base0;
    rlk__server s;
    memset(&s, 0, sizeof s);
    CHECK_EQ_INT(rlk__server_detect(c3, &s), RLK_OK);
    CHECK_FACTS(&s, flavor, w[0], w[1], w[2], want.caps);
    long after = info_calls(admin);
    CHECK_EQ_INT(after - base1 - idle, 0);

    /* RESP2 without HELLO: one INFO server, then the cache. */
    memset(&s, 0, sizeof s);
    CHECK_EQ_INT(rlk_conn_get_info(c2)->server[0], '\0');
    base1 = info_calls(admin);
    CHECK_EQ_INT(rlk__server_detect(c2, &s), RLK_OK);
    CHECK_FACTS(&s, flavor, w[0], w[1], w[2], want.caps);
    CHECK_EQ_INT(rlk__server_detect(c2, &s), RLK_OK);
    CHECK_FACTS(&s, flavor, w[0], w[1], w[2], want.caps);
    after = info_calls(admin);
    CHECK_EQ_INT(after - base1 - idle, 1);

    /* A RESP2 connection that subscribed cannot ask: unknown, and said. */
    rlk_conn *sub = connect_url(url, 2);
    if (CHECK(sub != NULL)) {
        CHECK_EQ_INT(rlk_conn_subscribe(sub, "ch", 2), RLK_OK);
        memset(&s, 0, sizeof s);
        CHECK_EQ_INT(rlk__server_detect(sub, &s), RLK_ERR_INVALID);
        CHECK_FACTS(&s, RLK__FLAVOR_UNKNOWN, 0, 0, 0, 0);
        CHECK(s.conn == NULL);
        rlk_conn_free(sub);
    }
out:
    rlk_conn_free(admin);
    rlk_conn_free(c3);
    rlk_conn_free(c2);
    ts_stop(srv);
}

/* ------------------------------------------------------------------ */
/* Fake servers that answer as other versions                          */

/* How one server answers: HELLO with hello (NULL: unknown command, as
 * Redis 5), INFO with info as a bulk string (a verbatim one after HELLO
 * 3, as Redis 6+ sends it). */
struct persona {
    const char *hello, *info;
    int close_after_hello;  /* goes away once told to (a failover) */
};

/* The n personas answer the connections in turn (the last one all the
 * connections after it). */
struct personas {
    const struct persona *p;
    int n;
    int conns, hellos, infos, ended; /* atomic */
    int go_away;                      /* atomic: close_after_hello closes */
};

#define HELLO_MAP(server, version) \
    "%7\r\n$6\r\nserver\r\n$" server "\r\n$7\r\nversion\r\n$" version "\r\n" \
    "$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:7\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n" \
    "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n"

static int send_text(fake_conn *fc, int verbatim, const char *text)
{
    char head[64];
    size_t n = strlen(text);
    if (verbatim) snprintf(head, sizeof head, "=%zu\r\ntxt:", n + 4);
    else snprintf(head, sizeof head, "$%zu\r\n", n);
    return fake_send_str(fc, head) || fake_send_str(fc, text) || fake_send_str(fc, "\r\n") ? -1 : 0;
}

static void persona_server(fake_conn *fc, void *arg)
{
    struct personas *ps = arg;
    int i = __atomic_fetch_add(&ps->conns, 1, __ATOMIC_SEQ_CST);
    const struct persona *p = &ps->p[i < ps->n ? i : ps->n - 1];
    int resp3 = 0;
    char **argv;
    int argc;
    while ((argc = fake_read_command(fc, &argv, -1, NULL)) > 0) {
        int r;
        if (strcasecmp(argv[0], "HELLO") == 0) {
            __atomic_fetch_add(&ps->hellos, 1, __ATOMIC_SEQ_CST);
            resp3 = p->hello != NULL;
            r = fake_send_str(fc, p->hello ? p->hello
                                           : "-ERR unknown command `HELLO`, with args "
                                             "beginning with: `3`, \r\n");
            if (p->close_after_hello) {
                while (!r && !__atomic_load_n(&ps->go_away, __ATOMIC_SEQ_CST))
                    r = fake_pause(fc, 2);
                break;
            }
        } else if (strcasecmp(argv[0], "INFO") == 0) {
            __atomic_fetch_add(&ps->infos, 1, __ATOMIC_SEQ_CST);
            r = send_text(fc, resp3, p->info);
        } else if (strcasecmp(argv[0], "PING") == 0) {
            r = fake_send_str(fc, "+PONG\r\n");
        } else {
            r = fake_send_str(fc, "-ERR unknown command\r\n");
        }
        if (r) break;
    }
    __atomic_fetch_add(&ps->ended, 1, __ATOMIC_SEQ_CST);
}

static const char INFO_REDIS5[] =
    "# Server\r\nredis_version:5.0.14\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n"
    "os:Linux\r\narch_bits:64\r\n";
static const char INFO_REDIS84[] =
    "# Server\r\nredis_version:8.4.0\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n";
static const char INFO_REDIS70[] = "# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n";
static const char INFO_VALKEY90[] =
    "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.0.0\r\n"
    "server_mode:standalone\r\n";
static const char INFO_VALKEY725[] =
    "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:7.2.5\r\n"
    "redis_mode:standalone\r\n";
static const char INFO_VALKEY81[] =
    "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.0\r\n"
    "redis_mode:standalone\r\n";

/* Connects to a server answering as p, detects twice (the second time
 * from the cache) and checks what was found and how many INFO it took. */
static void detect_persona(int line, const struct persona *p, int protocol, rlk__flavor flavor,
                           int major, int minor, int patch, unsigned caps, int infos)
{
    struct personas ps = {p, 1, 0, 0, 0, 0, 0};
    fake_server *fs = fake_start(persona_server, &ps);
    char url[64];
    if (!tl_ok(fs != NULL, __FILE__, line, "fake server")) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    rlk_conn *c = connect_url(url, protocol);
    if (c) {
        rlk__server s;
        memset(&s, 0, sizeof s);
        for (int k = 0; k < 2; k++) {
            int r = rlk__server_detect(c, &s);
            tl_ok(r == RLK_OK, __FILE__, line, "detect: %d %s", r, rlk_conn_errmsg(c));
            check_facts(line, &s, flavor, major, minor, patch, caps);
        }
        int got = __atomic_load_n(&ps.infos, __ATOMIC_SEQ_CST);
        tl_ok(got == infos, __FILE__, line, "%d INFO commands, want %d", got, infos);
        rlk_conn_free(c);
    }
    fake_stop(fs);
}
#define DETECT_PERSONA(p, protocol, ...) detect_persona(__LINE__, p, protocol, __VA_ARGS__)

static void test_fake_newer(void)
{
    static const struct persona valkey90 = {HELLO_MAP("6\r\nvalkey", "5\r\n9.0.0"),
                                            INFO_VALKEY90, 0};
    static const struct persona redis84 = {HELLO_MAP("5\r\nredis", "5\r\n8.4.0"), INFO_REDIS84,
                                           0};
    DETECT_PERSONA(&valkey90, 0, RLK__FLAVOR_VALKEY, 9, 0, 0,
                   SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELIFEQ, 0);
    DETECT_PERSONA(&redis84, 0, RLK__FLAVOR_REDIS, 8, 4, 0,
                   SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELEX_IFEQ, 0);
    /* The same servers under RESP2, without HELLO: INFO tells it. */
    DETECT_PERSONA(&valkey90, 2, RLK__FLAVOR_VALKEY, 9, 0, 0,
                   SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELIFEQ, 1);
    DETECT_PERSONA(&redis84, 2, RLK__FLAVOR_REDIS, 8, 4, 0,
                   SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELEX_IFEQ, 1);
}

/* A Valkey that says "redis" 7.2.4 in HELLO, as Valkey 7.2 does and a
 * later one with extended-redis-compatibility on: INFO tells the truth. */
static void test_fake_valkey_as_redis(void)
{
    static const struct persona valkey725 = {HELLO_MAP("5\r\nredis", "5\r\n7.2.4"),
                                             INFO_VALKEY725, 0};
    static const struct persona valkey81 = {HELLO_MAP("5\r\nredis", "5\r\n7.2.4"),
                                            INFO_VALKEY81, 0};
    DETECT_PERSONA(&valkey725, 0, RLK__FLAVOR_VALKEY, 7, 2, 5, SCRIPTING, 1);
    DETECT_PERSONA(&valkey81, 0, RLK__FLAVOR_VALKEY, 8, 1, 0, SCRIPTING | RLK_CAP_SET_IFEQ, 1);
}

/* Redis 5: HELLO is an unknown command; one INFO server, bulk. */
static void test_fake_redis5(void)
{
    static const struct persona redis5 = {NULL, INFO_REDIS5, 0};
    DETECT_PERSONA(&redis5, 0, RLK__FLAVOR_REDIS, 5, 0, 14, 0, 1);
}

/* The server goes away after the handshake and another, of another
 * version, takes its address (a failover): the detection after the
 * reconnect is the new server's. */
static void test_fake_failover(void)
{
    static const struct persona p[2] = {
        {HELLO_MAP("5\r\nredis", "6\r\n7.0.15"), INFO_REDIS70, 1},
        {HELLO_MAP("6\r\nvalkey", "5\r\n9.0.0"), INFO_VALKEY90, 0},
    };
    struct personas ps = {p, 2, 0, 0, 0, 0, 0};
    fake_server *fs = fake_start(persona_server, &ps);
    char url[64];
    if (!CHECK(fs != NULL)) return;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", fake_port(fs));
    rlk_conn *c = connect_url(url, 0);
    rlk__server s;
    memset(&s, 0, sizeof s);
    if (!c) goto out;
    CHECK_EQ_INT(rlk__server_detect(c, &s), RLK_OK);
    CHECK_FACTS(&s, RLK__FLAVOR_REDIS, 7, 0, 15, SCRIPTING);
    CHECK_EQ_U64(rlk_conn_generation(c), 1);

    /* The first server goes; commands reconnect, to the second. */
    __atomic_store_n(&ps.go_away, 1, __ATOMIC_SEQ_CST);
    int64_t until = ts_now_ms() + LONG_MS;
    while (__atomic_load_n(&ps.ended, __ATOMIC_SEQ_CST) < 1 && ts_now_ms() < until)
        ts_pause_ms(2);
    CHECK_EQ_INT(__atomic_load_n(&ps.ended, __ATOMIC_SEQ_CST), 1);
    int r = RLK_ERR_CLOSED;
    while (ts_now_ms() < until) {
        const char *argv[1] = {"PING"};
        rlk_resp_value *v;
        if ((r = rlk_conn_command(c, &v, 1, argv, NULL)) == RLK_OK) break;
        ts_pause_ms(2);
    }
    CHECK_MSG(r == RLK_OK, "no PING answered after the failover: %s", rlk_conn_errmsg(c));
    CHECK_EQ_U64(rlk_conn_generation(c), 2);
    CHECK_EQ_INT(rlk__server_detect(c, &s), RLK_OK);
    CHECK_FACTS(&s, RLK__FLAVOR_VALKEY, 9, 0, 0, SCRIPTING | RLK_CAP_SET_IFEQ | RLK_CAP_DELIFEQ);
    CHECK_EQ_U64(s.generation, 2);
    CHECK_EQ_INT(__atomic_load_n(&ps.infos, __ATOMIC_SEQ_CST), 0);
out:
    rlk_conn_free(c);
    fake_stop(fs);
}

TL_PROGRAM(NULL, NULL,
           TL_TEST(test_versions),
           TL_TEST(test_versions_garbage),
           TL_TEST(test_real_server),
           TL_TEST(test_fake_newer),
           TL_TEST(test_fake_valkey_as_redis),
           TL_TEST(test_fake_redis5),
           TL_TEST(test_fake_failover));
