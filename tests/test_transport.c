/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transport layer: URLs, SHA1, TCP, IPv6, Unix sockets and TLS
 * against real redis-server processes and scripted fake servers.  All
 * traffic stays on the loopback interface.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "fakeserver.h"
#include "server.h"
#include "transport.h"
#include "clock.h"
#include "sha1.h"
#include "url.h"
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef RLK_HAVE_OPENSSL
#include <openssl/err.h>
#endif

#define LONG_MS 10000 /* for things that should succeed: generous under valgrind */

static int64_t in_ms(int ms)
{
    return rlk__now_ms() + ms;
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Equal strings, or both NULL. */
#define CHECK_STR_OR_NULL(got, want) check_str_or_null(got, want, #got, __LINE__)
static void check_str_or_null(const char *got, const char *want, const char *what, int line)
{
    if (got && want)
        tl_ok(strcmp(got, want) == 0, __FILE__, line, "%s: \"%s\", want \"%s\"", what, got, want);
    else
        tl_ok(got == want, __FILE__, line, "%s: %s, want %s", what, got ? got : "NULL",
              want ? want : "NULL");
}

/* Reads until want arrives whole (or something else, or the end). */
static int read_exactly(rlk__transport *t, const char *want, int64_t deadline)
{
    char buf[256];
    size_t n = strlen(want), have = 0;
    while (have < n) {
        ssize_t r = rlk__transport_read_some(t, buf + have, n - have, deadline);
        if (r <= 0) {
            tl_fail(__FILE__, __LINE__, "reading %s: %zd (%s)", want, r, t->err);
            return 0;
        }
        have += (size_t)r;
    }
    return CHECK_EQ_MEM(buf, have, want, n);
}

/* An inline PING and its +PONG, through the transport. */
static int ping(rlk__transport *t)
{
    int64_t deadline = in_ms(LONG_MS);
    int rc = rlk__transport_write_all(t, "PING\r\n", 6, deadline);
    CHECK_MSG(rc == RLK_OK, "write PING: %d %s", rc, t->err);
    return rc == RLK_OK && read_exactly(t, "+PONG\r\n", deadline);
}

/* ------------------------------------------------------------------ */
/* URLs                                                                */

struct url_case {
    const char *url;
    int kind;
    const char *user, *password, *host;
    int port;
    const char *path;
    int db;
};

static void test_url_valid(void)
{
    static const struct url_case cases[] = {
        {"redis://localhost", RLK__URL_TCP, NULL, NULL, "localhost", 6379, NULL, 0},
        {"redis://127.0.0.1:6390", RLK__URL_TCP, NULL, NULL, "127.0.0.1", 6390, NULL, 0},
        {"redis://h:1", RLK__URL_TCP, NULL, NULL, "h", 1, NULL, 0},
        {"redis://h:65535/", RLK__URL_TCP, NULL, NULL, "h", 65535, NULL, 0},
        {"redis://h/0", RLK__URL_TCP, NULL, NULL, "h", 6379, NULL, 0},
        {"redis://h/15", RLK__URL_TCP, NULL, NULL, "h", 6379, NULL, 15},
        {"redis://h/2147483647", RLK__URL_TCP, NULL, NULL, "h", 6379, NULL, INT_MAX},
        {"redis://h?db=3", RLK__URL_TCP, NULL, NULL, "h", 6379, NULL, 3},
        {"redis://h/?db=4", RLK__URL_TCP, NULL, NULL, "h", 6379, NULL, 4},
        {"rediss://user:secret@cache.example.com:6380/2", RLK__URL_TLS, "user", "secret",
         "cache.example.com", 6380, NULL, 2},
        {"rediss://cache.example.com", RLK__URL_TLS, NULL, NULL, "cache.example.com", 6379, NULL,
         0},
        {"redis://:secret@h", RLK__URL_TCP, NULL, "secret", "h", 6379, NULL, 0},
        {"redis://user@h", RLK__URL_TCP, "user", NULL, "h", 6379, NULL, 0},
        {"redis://user:@h", RLK__URL_TCP, "user", NULL, "h", 6379, NULL, 0},
        {"redis://:@h", RLK__URL_TCP, NULL, NULL, "h", 6379, NULL, 0},
        {"redis://u:p@ss@h", RLK__URL_TCP, "u", "p@ss", "h", 6379, NULL, 0},
        {"redis://us%40er:p%40ss%3Aw%2Fo%25rd@h", RLK__URL_TCP, "us@er", "p@ss:w/o%rd", "h", 6379,
         NULL, 0},
        {"redis://u:%e2%82%ac@h", RLK__URL_TCP, "u", "\xe2\x82\xac", "h", 6379, NULL, 0},
        {"redis://[::1]:6379/1", RLK__URL_TCP, NULL, NULL, "::1", 6379, NULL, 1},
        {"redis://[::1]", RLK__URL_TCP, NULL, NULL, "::1", 6379, NULL, 0},
        {"redis://u:p@[2001:db8::7]:7000", RLK__URL_TCP, "u", "p", "2001:db8::7", 7000, NULL, 0},
        {"redis://[fe80::1%25eth0]:7000", RLK__URL_TCP, NULL, NULL, "fe80::1%eth0", 7000, NULL, 0},
        {"redis://[::ffff:127.0.0.1]", RLK__URL_TCP, NULL, NULL, "::ffff:127.0.0.1", 6379, NULL, 0},
        {"REDIS://Host.Example", RLK__URL_TCP, NULL, NULL, "Host.Example", 6379, NULL, 0},
        {"RedisS://h", RLK__URL_TLS, NULL, NULL, "h", 6379, NULL, 0},
        {"redis://h%2Dx", RLK__URL_TCP, NULL, NULL, "h-x", 6379, NULL, 0},
        {"unix:///tmp/redis.sock", RLK__URL_UNIX, NULL, NULL, NULL, 6379, "/tmp/redis.sock", 0},
        {"unix:///tmp/redis.sock?db=4", RLK__URL_UNIX, NULL, NULL, NULL, 6379, "/tmp/redis.sock",
         4},
        {"unix://user:pw@/var/run/redis%20x.sock?db=1", RLK__URL_UNIX, "user", "pw", NULL, 6379,
         "/var/run/redis x.sock", 1},
        {"unix://:pw@/s", RLK__URL_UNIX, NULL, "pw", NULL, 6379, "/s", 0},
        {"UNIX:///s", RLK__URL_UNIX, NULL, NULL, NULL, 6379, "/s", 0},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct url_case *c = &cases[i];
        rlk__url u;
        char err[256];
        int rc = rlk__url_parse(&u, c->url, err, sizeof err);
        if (!CHECK_MSG(rc == RLK_OK, "%s: %d %s", c->url, rc, err)) continue;
        CHECK_MSG(err[0] == '\0', "%s: err set on success: %s", c->url, err);
        CHECK_MSG(u.kind == c->kind, "%s: kind %d", c->url, u.kind);
        CHECK_STR_OR_NULL(u.user, c->user);
        CHECK_STR_OR_NULL(u.password, c->password);
        CHECK_STR_OR_NULL(u.host, c->host);
        CHECK_STR_OR_NULL(u.path, c->path);
        CHECK_MSG(u.port == c->port, "%s: port %d", c->url, u.port);
        CHECK_MSG(u.db == c->db, "%s: db %d", c->url, u.db);
        rlk__url_free(&u);
        CHECK(u.user == NULL && u.password == NULL && u.host == NULL && u.path == NULL);
    }
}

static void test_url_invalid(void)
{
    static const struct {
        const char *url, *err;
    } cases[] = {
        {"http://h", "URL: unknown scheme 'http' (redis://, rediss://, unix://)"},
        {"redis+sentinel://h",
         "URL: unknown scheme 'redis+sentinel' (redis://, rediss://, unix://)"},
        {"://h", "URL: unknown scheme (redis://, rediss://, unix://)"},
        {"user:s3cret@redis://h", "URL: unknown scheme (redis://, rediss://, unix://)"},
        {"localhost:6379", "URL: missing scheme (redis://, rediss://, unix://)"},
        {"redis:/h", "URL: missing scheme (redis://, rediss://, unix://)"},
        {"redis://u:s3cret@h:0", "URL: bad port"},
        {"redis://u:s3cret@h:65536", "URL: bad port"},
        {"redis://u:s3cret@h:", "URL: bad port"},
        {"redis://h:-1", "URL: bad port"},
        {"redis://h:+1", "URL: bad port"},
        {"redis://h:12a", "URL: bad port"},
        {"redis://h:99999999999999999999", "URL: bad port"},
        {"redis://[::1]:x", "URL: bad port"},
        {"redis://u:s3cret@h/-1", "URL: bad database number"},
        {"redis://h/x", "URL: bad database number"},
        {"redis://h/1/2", "URL: bad database number"},
        {"redis://h/2147483648", "URL: bad database number"},
        {"redis://h?db=x", "URL: bad database number"},
        {"redis://h?db=", "URL: bad database number"},
        {"redis://h?db", "URL: bad database number"},
        {"redis://h/1?db=2", "URL: database given twice"},
        {"redis://h?db=1&db=2", "URL: database given twice"},
        {"redis://h?foo=1", "URL: unknown parameter 'foo' (only db=N)"},
        {"redis://h?db=1&password=s3cret", "URL: unknown parameter 'password' (only db=N)"},
        {"redis://h?%41=1", "URL: unknown parameter (only db=N)"},
        {"redis://u:s3c?x=1&r3t@h", "URL: unknown parameter (only db=N)"},
        {"redis://u:s3c#r3t@h", "URL: fragment ('#') not allowed"},
        {"redis://h#frag", "URL: fragment ('#') not allowed"},
        {"redis://", "URL: missing host"},
        {"redis://:6379", "URL: missing host"},
        {"redis://u:s3cret@", "URL: missing host"},
        {"redis://u:s3cret@:6379/0", "URL: missing host"},
        {"redis:///0", "URL: missing host"},
        {"redis://[::1", "URL: missing ']' after an IPv6 address"},
        {"redis://[::1]x", "URL: unexpected text after ']'"},
        {"redis://[notv6]", "URL: bad IPv6 address"},
        {"redis://[127.0.0.1]", "URL: bad IPv6 address"},
        {"redis://[]", "URL: missing host"},
        {"redis://[fe80::1%25]", "URL: bad IPv6 address"},
        {"redis://ho st", "URL: bad character in the host"},
        {"redis://h%2Fx", "URL: bad character in the host"},
        {"redis://h%3A1", "URL: bad character in the host"},
        {"redis://h\n", "URL: control character in the URL"},
        {"redis://u:s3cr\tt@h", "URL: control character in the URL"},
        {"redis://u:s3cret%zz@h", "URL: bad percent-encoding in the password"},
        {"redis://u:s3cret%4@h", "URL: bad percent-encoding in the password"},
        {"redis://u:s3cret%@h", "URL: bad percent-encoding in the password"},
        {"redis://u:s3cret%00@h", "URL: bad percent-encoding in the password"},
        {"redis://u%g0:s3cret@h", "URL: bad percent-encoding in the user name"},
        {"redis://h%2", "URL: bad percent-encoding in the host"},
        {"unix://", "URL: missing socket path"},
        {"unix:///", "URL: missing socket path"},
        {"unix://u:s3cret@", "URL: missing socket path"},
        {"unix://u:s3cret@/", "URL: missing socket path"},
        {"unix://host/path", "URL: unix:// takes no host (unix:///path or unix://user:pass@/path)"},
        {"unix://u:s3cret@host/path",
         "URL: unix:// takes no host (unix:///path or unix://user:pass@/path)"},
        {"unix:///p%zz", "URL: bad percent-encoding in the socket path"},
        {"unix:///p?db=-1", "URL: bad database number"},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlk__url u;
        char err[256];
        int rc = rlk__url_parse(&u, cases[i].url, err, sizeof err);
        CHECK_MSG(rc == RLK_ERR_URL, "%s: %d", cases[i].url, rc);
        CHECK_MSG(strcmp(err, cases[i].err) == 0, "%s: got \"%s\", want \"%s\"", cases[i].url, err,
                  cases[i].err);
        CHECK_MSG(strstr(err, "s3cr") == NULL, "%s: the password is in \"%s\"", cases[i].url, err);
        CHECK(u.user == NULL && u.password == NULL && u.host == NULL && u.path == NULL);
        rlk__url_free(&u); /* allowed after a failure */
    }
}

static void test_url_err_buffer(void)
{
    rlk__url u;
    char err[8];
    memset(err, 'x', sizeof err);
    CHECK_EQ_INT(rlk__url_parse(&u, "redis://h:0", err, sizeof err), RLK_ERR_URL);
    CHECK_EQ_STR(err, "URL: ba"); /* truncated, terminated */
    CHECK_EQ_INT(rlk__url_parse(&u, "redis://h:0", NULL, 0), RLK_ERR_URL);
    CHECK_EQ_INT(rlk__url_parse(&u, "redis://h:7", NULL, 0), RLK_OK);
    CHECK_EQ_INT(u.port, 7);
    rlk__url_free(&u);
    rlk__url_free(NULL);
}

static void test_url_default(void)
{
    const char *saved = getenv("REDIS_URL");
    char *copy = saved ? strdup(saved) : NULL;
    char err[256];
    rlk__url u;

    unsetenv("REDIS_URL");
    CHECK_EQ_INT(rlk__url_parse(&u, NULL, err, sizeof err), RLK_OK);
    CHECK_EQ_INT(u.kind, RLK__URL_TCP);
    CHECK_EQ_STR(u.host, "127.0.0.1");
    CHECK_EQ_INT(u.port, 6379);
    CHECK_EQ_INT(u.db, 0);
    rlk__url_free(&u);

    setenv("REDIS_URL", "", 1);
    CHECK_EQ_INT(rlk__url_parse(&u, "", err, sizeof err), RLK_OK);
    CHECK_EQ_STR(u.host, "127.0.0.1");
    rlk__url_free(&u);

    setenv("REDIS_URL", "rediss://envuser:envpass@envhost:7000/3", 1);
    CHECK_EQ_INT(rlk__url_parse(&u, NULL, err, sizeof err), RLK_OK);
    CHECK_EQ_INT(u.kind, RLK__URL_TLS);
    CHECK_EQ_STR(u.user, "envuser");
    CHECK_EQ_STR(u.password, "envpass");
    CHECK_EQ_STR(u.host, "envhost");
    CHECK_EQ_INT(u.port, 7000);
    CHECK_EQ_INT(u.db, 3);
    rlk__url_free(&u);
    CHECK_EQ_INT(rlk__url_parse(&u, "", err, sizeof err), RLK_OK);
    CHECK_EQ_STR(u.host, "envhost");
    rlk__url_free(&u);
    /* An explicit URL wins over the environment. */
    CHECK_EQ_INT(rlk__url_parse(&u, "redis://other", err, sizeof err), RLK_OK);
    CHECK_EQ_STR(u.host, "other");
    rlk__url_free(&u);

    setenv("REDIS_URL", "redis://u:s3cret@h:0", 1);
    CHECK_EQ_INT(rlk__url_parse(&u, NULL, err, sizeof err), RLK_ERR_URL);
    CHECK_EQ_STR(err, "URL: bad port");

    if (copy)
        setenv("REDIS_URL", copy, 1);
    else
        unsetenv("REDIS_URL");
    free(copy);
}

/* An allocator that fails from the nth call on. */
static int alloc_left;
static void *failing_malloc(void *ctx, size_t n)
{
    return alloc_left-- > 0 ? malloc(n) : NULL;
}
static void *failing_realloc(void *ctx, void *p, size_t n)
{
    return alloc_left-- > 0 ? realloc(p, n) : NULL;
}
static void plain_free(void *ctx, void *p)
{
    free(p);
}

static void test_url_out_of_memory(void)
{
    static const rlk_allocator failing = {failing_malloc, failing_realloc, plain_free, NULL};
    const char *url = "unix://user:pass@/tmp/x.sock?db=2";
    int n, rc = RLK_ERR_NOMEM;
    char err[256];
    rlk__url u;
    rlk_set_allocator(&failing);
    for (n = 0; n < 10 && rc == RLK_ERR_NOMEM; n++) {
        alloc_left = n;
        rc = rlk__url_parse(&u, url, err, sizeof err);
        if (rc == RLK_ERR_NOMEM) {
            CHECK(u.user == NULL && u.password == NULL && u.path == NULL);
            CHECK_EQ_STR(err, "out of memory");
        }
    }
    rlk_set_allocator(NULL);
    CHECK_EQ_INT(rc, RLK_OK);
    CHECK_EQ_INT(n, 4); /* three strings: failures at 0, 1 and 2 */
    CHECK_EQ_STR(u.path, "/tmp/x.sock");
    rlk__url_free(&u);
}

/* A configuration's strings copied into one block: the copy outlives
 * the caller's strings; one that names none allocates nothing; out of
 * memory leaves the configuration as it was. */
static void test_conn_config_copy(void)
{
    static const rlk_allocator failing = {failing_malloc, failing_realloc, plain_free, NULL};
    char url[] = "redis://h:1", name[] = "me", ca[] = "/ca", dir[] = "/cadir", cert[] = "/c",
         key[] = "/k", sni[] = "sni";
    rlk_conn_config cfg, was;
    char *strings = (char *)1;
    rlk_conn_config_init(&cfg);
    CHECK_EQ_INT(rlk__conn_config_copy(&cfg, &strings), RLK_OK);
    CHECK(strings == NULL);
    cfg.url = url;
    cfg.client_name = name;
    cfg.tls.ca_file = ca;
    cfg.tls.ca_dir = dir;
    cfg.tls.cert_file = cert;
    cfg.tls.key_file = key;
    cfg.tls.server_name = sni;
    was = cfg;
    rlk_set_allocator(&failing);
    alloc_left = 0;
    CHECK_EQ_INT(rlk__conn_config_copy(&cfg, &strings), RLK_ERR_NOMEM);
    rlk_set_allocator(NULL);
    CHECK(strings == NULL);
    CHECK(memcmp(&cfg, &was, sizeof cfg) == 0);
    CHECK_EQ_INT(rlk__conn_config_copy(&cfg, &strings), RLK_OK);
    if (!CHECK(strings != NULL)) return;
    memset(url, 'x', sizeof url - 1);
    memset(name, 'x', sizeof name - 1);
    memset(ca, 'x', sizeof ca - 1);
    memset(dir, 'x', sizeof dir - 1);
    memset(cert, 'x', sizeof cert - 1);
    memset(key, 'x', sizeof key - 1);
    memset(sni, 'x', sizeof sni - 1);
    CHECK_EQ_STR(cfg.url, "redis://h:1");
    CHECK_EQ_STR(cfg.client_name, "me");
    CHECK_EQ_STR(cfg.tls.ca_file, "/ca");
    CHECK_EQ_STR(cfg.tls.ca_dir, "/cadir");
    CHECK_EQ_STR(cfg.tls.cert_file, "/c");
    CHECK_EQ_STR(cfg.tls.key_file, "/k");
    CHECK_EQ_STR(cfg.tls.server_name, "sni");
    rlk__free(strings);
}

/* ------------------------------------------------------------------ */
/* SHA1                                                                */

static void check_sha1(const void *data, size_t len, const char *want)
{
    char a[41], b[41];
    rlk__sha1_internal_hex(data, len, a);
    rlk__sha1_hex(data, len, b);
    CHECK_MSG(strcmp(a, want) == 0, "internal sha1 of %zu bytes: %s, want %s", len, a, want);
    CHECK_MSG(strcmp(b, want) == 0, "sha1 of %zu bytes: %s, want %s", len, b, want);
}

static void test_sha1_vectors(void)
{
    static const char rfc4[] = "0123456701234567012345670123456701234567012345670123456701234567";
    char *big;
    size_t i;

    /* FIPS 180 / RFC 3174 test vectors */
    check_sha1("abc", 3, "a9993e364706816aba3e25717850c26c9cd0d89d");
    check_sha1("", 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    check_sha1(NULL, 0, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    check_sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
               "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    big = malloc(1000000);
    if (!CHECK(big != NULL)) return;
    memset(big, 'a', 1000000);
    check_sha1(big, 1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    for (i = 0; i < 10; i++) memcpy(big + i * 64, rfc4, 64);
    check_sha1(big, 640, "dea356a2cddd90c7a7ecedc5ebb563934f460452");
    free(big);
    check_sha1("The quick brown fox jumps over the lazy dog", 43,
               "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
}

static void test_sha1_agree(void)
{
    /* Random inputs of every length around the padding boundaries and
     * beyond, internal against OpenSSL's (in a build without OpenSSL
     * both sides are the internal one, which the vectors test). */
    static unsigned char buf[4200];
    uint64_t x = 0x9e3779b97f4a7c15u;
    size_t len, i;
    int bad = 0;
    for (i = 0; i < sizeof buf; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    /* Every length up to 300, then a stride; odd offsets for alignment. */
    for (len = 0; len + 7 <= sizeof buf; len += len < 300 ? 1 : 97) {
        char a[41], b[41];
        rlk__sha1_internal_hex(buf + len % 7, len, a);
        rlk__sha1_hex(buf + len % 7, len, b);
        if (strcmp(a, b) != 0 && bad++ < 5)
            tl_fail(__FILE__, __LINE__, "length %zu: internal %s, OpenSSL %s", len, a, b);
        tl_state.checks++;
    }
    CHECK_EQ_INT(bad, 0);
}

/* ------------------------------------------------------------------ */
/* Time                                                                */

static void test_clock(void)
{
    int64_t a = rlk__now_ms(), b = rlk__now_ms();
    int left;
    CHECK(a > 0);
    CHECK(b >= a);
    CHECK_EQ_INT(rlk__ms_left(-1), -1);
    CHECK_EQ_INT(rlk__ms_left(a - 5), 0);
    CHECK_EQ_INT(rlk__ms_left(0), 0);
    left = rlk__ms_left(rlk__now_ms() + 1000);
    CHECK_MSG(left > 900 && left <= 1000, "ms_left %d", left);
    CHECK_EQ_INT(rlk__ms_left(INT64_MAX / 2), INT_MAX);
}

/* ------------------------------------------------------------------ */
/* TCP                                                                 */

static ts_server *plain_server; /* shared by the TCP tests */

static ts_server *get_plain_server(void)
{
    if (!plain_server) plain_server = ts_start(NULL);
    return plain_server;
}

static void test_tcp_ping(void)
{
    ts_server *s = get_plain_server();
    rlk__transport t;
    char peer[64];
    int v = 0, fl;
    socklen_t len = sizeof v;

    if (!CHECK(s != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(t.fd, -1);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", s->port, in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_STR(t.err, "");
    snprintf(peer, sizeof peer, "127.0.0.1:%d", s->port);
    CHECK_EQ_STR(t.peer, peer);
    if (!CHECK(t.fd >= 0)) return;
    CHECK(getsockopt(t.fd, IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0 && v == 1);
    v = 0;
    CHECK(getsockopt(t.fd, SOL_SOCKET, SO_KEEPALIVE, &v, &len) == 0 && v == 1);
    fl = fcntl(t.fd, F_GETFL);
    CHECK(fl >= 0 && (fl & O_NONBLOCK));
    fl = fcntl(t.fd, F_GETFD);
    CHECK(fl >= 0 && (fl & FD_CLOEXEC));
    CHECK(rlk__tls_version(&t) == NULL);
    CHECK(rlk__tls_cipher(&t) == NULL);
    CHECK(ping(&t));
    CHECK(ping(&t));
    rlk__transport_close(&t);
    CHECK_EQ_INT(t.fd, -1);
    CHECK(t.ops == NULL);
    rlk__transport_close(&t); /* twice is harmless */

    /* The same object connects again, and connecting an open one first
     * closes it. */
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", s->port, in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", s->port, in_ms(LONG_MS)), RLK_OK);
    CHECK(ping(&t));
    /* No deadline at all. */
    rlk__transport_close(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", s->port, -1), RLK_OK);
    CHECK(rlk__transport_write_all(&t, "PING\r\n", 6, -1) == RLK_OK);
    CHECK_EQ_INT(rlk__transport_wait_readable(&t, -1), 1);
    CHECK(read_exactly(&t, "+PONG\r\n", -1));
    rlk__transport_close(&t);
}

/* A host name, not an address.  A minimal root has no /etc/hosts, where
 * "localhost" resolves to nothing: then the failure must be a clear
 * resolution error, the other half of what is tested here. */
static void test_tcp_localhost(void)
{
    ts_server *s = get_plain_server();
    rlk__transport t;
    struct addrinfo hints, *res = NULL;
    char peer[64];
    int rc;
    if (!CHECK(s != NULL)) return;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    rlk__transport_init(&t);
    rc = rlk__tcp_connect(&t, "localhost", s->port, in_ms(LONG_MS));
    snprintf(peer, sizeof peer, "localhost:%d", s->port);
    CHECK_EQ_STR(t.peer, peer);
    if (getaddrinfo("localhost", NULL, &hints, &res) == 0) {
        freeaddrinfo(res);
        CHECK_EQ_INT(rc, RLK_OK);
        CHECK(ping(&t));
    } else {
        printf("note: \"localhost\" does not resolve here: its error is checked instead\n");
        CHECK_EQ_INT(rc, RLK_ERR_CONNECT);
        CHECK_MSG(strncmp(t.err, "resolve localhost: ", 19) == 0, "err \"%s\"", t.err);
        CHECK(t.fd == -1);
    }
    rlk__transport_close(&t);
}

/* Every address of a name is tried: needs a name with both ::1 and
 * 127.0.0.1, and a server on one of them only. */
/* Every address is tried in turn: a list whose first address refuses
 * (::1, where the server does not listen) and whose second answers
 * (127.0.0.1).  No name here resolves to both families, so the list is
 * made by hand and given to the loop rlk__tcp_connect runs. */
static void test_tcp_every_address(void)
{
    struct sockaddr_in6 a6;
    struct sockaddr_in a4;
    struct sockaddr_storage peer;
    socklen_t plen = sizeof peer;
    struct addrinfo first, second;
    fake_server *fs;
    rlk__transport t;

    CHECK(ts_have_ipv6());
    fs = fake_start(fake_resp2, NULL);
    if (!CHECK(fs != NULL)) return;
    memset(&a6, 0, sizeof a6);
    a6.sin6_family = AF_INET6;
    a6.sin6_addr = in6addr_loopback;
    a6.sin6_port = htons((uint16_t)fake_port(fs));
    memset(&a4, 0, sizeof a4);
    a4.sin_family = AF_INET;
    a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a4.sin_port = htons((uint16_t)fake_port(fs));
    memset(&first, 0, sizeof first);
    memset(&second, 0, sizeof second);
    first.ai_family = AF_INET6;
    first.ai_socktype = SOCK_STREAM;
    first.ai_addr = (struct sockaddr *)&a6;
    first.ai_addrlen = sizeof a6;
    first.ai_next = &second;
    second.ai_family = AF_INET;
    second.ai_socktype = SOCK_STREAM;
    second.ai_addr = (struct sockaddr *)&a4;
    second.ai_addrlen = sizeof a4;

    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect_list(&t, &first, in_ms(LONG_MS)), RLK_OK);
    CHECK(getpeername(t.fd, (struct sockaddr *)&peer, &plen) == 0 && peer.ss_family == AF_INET);
    CHECK(rlk__transport_write_all(&t, "*1\r\n$4\r\nPING\r\n", 14, in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, "+PONG\r\n", in_ms(LONG_MS)));
    rlk__transport_close(&t);

    /* Only the refusing address: the error names it. */
    first.ai_next = NULL;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect_list(&t, &first, in_ms(LONG_MS)), RLK_ERR_CONNECT);
    CHECK(strstr(t.err, "[::1]") != NULL && strstr(t.err, "refused") != NULL);
    rlk__transport_close(&t);
    fake_stop(fs);
}

static void test_tcp_ipv6(void)
{
    ts_options o;
    ts_server *s;
    rlk__transport t;
    char want[128];
    int port;

    /* IPv6 loopback is part of the machines this runs on: its absence
     * is a failure, not a reason to skip. */
    if (!CHECK(ts_have_ipv6())) return;
    memset(&o, 0, sizeof o);
    o.ipv6 = 1;
    s = ts_start(&o);
    if (!CHECK(s != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "::1", s->port, in_ms(LONG_MS)), RLK_OK);
    snprintf(want, sizeof want, "[::1]:%d", s->port);
    CHECK_EQ_STR(t.peer, want);
    CHECK(ping(&t));
    rlk__transport_close(&t);
    /* The server listens on ::1 only. */
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", s->port, in_ms(LONG_MS)), RLK_ERR_CONNECT);
    ts_stop(s);

    port = ts_free_port(1);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "::1", port, in_ms(LONG_MS)), RLK_ERR_CONNECT);
    snprintf(want, sizeof want, "connect [::1]:%d: Connection refused", port);
    CHECK_EQ_STR(t.err, want);
}

static void test_tcp_refused(void)
{
    rlk__transport t;
    char want[128];
    int port = ts_free_port(0);
    int64_t start = rlk__now_ms();
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", port, in_ms(LONG_MS)), RLK_ERR_CONNECT);
    snprintf(want, sizeof want, "connect 127.0.0.1:%d: Connection refused", port);
    CHECK_EQ_STR(t.err, want);
    CHECK_EQ_INT(t.fd, -1);
    CHECK(rlk__now_ms() - start < LONG_MS);
    /* Still closed: reading and writing say so. */
    CHECK_EQ_INT(rlk__transport_write_all(&t, "x", 1, in_ms(100)), RLK_ERR_IO);
    CHECK_EQ_STR(t.err, "write: not connected");
    CHECK_EQ_INT(rlk__transport_read_some(&t, want, sizeof want, in_ms(100)), RLK_ERR_IO);
    CHECK_EQ_STR(t.err, "read: not connected");
    CHECK_EQ_INT(rlk__transport_wait_readable(&t, in_ms(100)), RLK_ERR_IO);
}

static void test_tcp_bad_arguments(void)
{
    rlk__transport t;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, NULL, 6379, in_ms(100)), RLK_ERR_INVALID);
    CHECK_EQ_STR(t.err, "connect: no host");
    CHECK_EQ_INT(rlk__tcp_connect(&t, "", 6379, in_ms(100)), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", 0, in_ms(100)), RLK_ERR_INVALID);
    CHECK_EQ_STR(t.err, "connect: port out of range");
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", 65536, in_ms(100)), RLK_ERR_INVALID);
    CHECK_EQ_INT(t.fd, -1);
}

static void test_tcp_resolve_error(void)
{
    rlk__transport t;
    /* An empty label fails inside the resolver library itself: no query
     * leaves the machine. */
    const char *name = "no..such.invalid";
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, name, 6379, in_ms(LONG_MS)), RLK_ERR_CONNECT);
    CHECK_MSG(starts_with(t.err, "resolve no..such.invalid: ") && strlen(t.err) > 27, "err: %s",
              t.err);
    CHECK_EQ_INT(t.fd, -1);
}

/* A listener that never accepts, whose queue is already full: the
 * kernel drops further SYNs, so a connect waits for its deadline. */
static void test_tcp_connect_timeout(void)
{
    ts_hole h;
    rlk__transport t;
    char prefix[128];
    int64_t start, took;

    if (!CHECK_MSG(ts_hole_open(&h) == 0, "no listener with a full queue")) return;
    rlk__transport_init(&t);
    start = rlk__now_ms();
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", h.port, start + 300), RLK_ERR_TIMEOUT);
    took = rlk__now_ms() - start;
    CHECK_MSG(took >= 299 && took < 3000, "took %lld ms", (long long)took);
    snprintf(prefix, sizeof prefix, "connect 127.0.0.1:%d: timed out after ", h.port);
    CHECK_MSG(starts_with(t.err, prefix) && ends_with(t.err, " ms"), "err: %s", t.err);
    CHECK_EQ_INT(t.fd, -1);
    ts_hole_close(&h);
}

static void test_read_timeout(void)
{
    fake_server *fs = fake_start(fake_stall, NULL);
    rlk__transport t;
    char buf[16], want[128];
    int64_t start, took;

    if (!CHECK(fs != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    start = rlk__now_ms();
    CHECK_EQ_INT(rlk__transport_read_some(&t, buf, sizeof buf, start + 200), RLK_ERR_TIMEOUT);
    took = rlk__now_ms() - start;
    CHECK_MSG(took >= 199 && took < 3000, "took %lld ms", (long long)took);
    snprintf(want, sizeof want, "read 127.0.0.1:%d: timed out", fake_port(fs));
    CHECK_EQ_STR(t.err, want);
    start = rlk__now_ms();
    CHECK_EQ_INT(rlk__transport_wait_readable(&t, start + 100), 0);
    CHECK(rlk__now_ms() - start >= 99);
    /* A deadline already past: no wait at all. */
    CHECK_EQ_INT(rlk__transport_read_some(&t, buf, sizeof buf, 0), RLK_ERR_TIMEOUT);
    CHECK_EQ_INT(rlk__transport_read_some(&t, buf, 0, in_ms(100)), RLK_ERR_INVALID);
    rlk__transport_close(&t);
    fake_stop(fs);
}

static void test_write_timeout(void)
{
    fake_server *fs = fake_start(fake_stall, NULL);
    rlk__transport t;
    size_t chunk = 1 << 20;
    char *buf = calloc(1, chunk), want[128];
    int64_t start, deadline;
    int rc = RLK_OK, i;

    if (!CHECK(fs != NULL && buf != NULL)) goto out;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    start = rlk__now_ms();
    deadline = start + 300;
    /* The peer never reads: the socket buffers fill, then the deadline. */
    for (i = 0; i < 1024 && rc == RLK_OK; i++)
        rc = rlk__transport_write_all(&t, buf, chunk, deadline);
    CHECK_EQ_INT(rc, RLK_ERR_TIMEOUT);
    CHECK(rlk__now_ms() - start < 5000);
    snprintf(want, sizeof want, "write 127.0.0.1:%d: timed out", fake_port(fs));
    CHECK_EQ_STR(t.err, want);
    rlk__transport_close(&t);
out:
    fake_stop(fs);
    free(buf);
}

static void test_large_write(void)
{
    fake_server *fs = fake_start(fake_sink, NULL);
    rlk__transport t;
    size_t n = 8u << 20;
    char *buf = malloc(n);
    int64_t deadline;

    if (!CHECK(fs != NULL && buf != NULL)) goto out;
    memset(buf, 'x', n);
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_INT(rlk__transport_write_all(&t, buf, n, in_ms(30000)), RLK_OK);
    CHECK_EQ_INT(rlk__transport_write_all(&t, buf, 0, in_ms(100)), RLK_OK);
    deadline = in_ms(30000);
    while (fake_received(fs) < n && rlk__now_ms() < deadline) poll(NULL, 0, 5);
    CHECK_EQ_U64(fake_received(fs), n);
    rlk__transport_close(&t);
out:
    fake_stop(fs);
    free(buf);
}

static void test_peer_closes(void)
{
    fake_server *fs = fake_start(fake_close_at_once, NULL);
    rlk__transport t;
    char buf[16];
    if (!CHECK(fs != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_INT(rlk__transport_wait_readable(&t, in_ms(LONG_MS)), 1);
    CHECK_EQ_INT(rlk__transport_read_some(&t, buf, sizeof buf, in_ms(LONG_MS)), 0);
    rlk__transport_close(&t);
    fake_stop(fs);
}

static void test_close_mid_reply(void)
{
    fake_server *fs = fake_start(fake_send_then_close, "$10\r\nabc");
    rlk__transport t;
    char buf[64];
    size_t have = 0;
    ssize_t r;
    if (!CHECK(fs != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    while ((r = rlk__transport_read_some(&t, buf + have, sizeof buf - have, in_ms(LONG_MS))) > 0)
        have += (size_t)r;
    CHECK_EQ_INT(r, 0);
    CHECK_EQ_MEM(buf, have, "$10\r\nabc", 8);
    rlk__transport_close(&t);
    fake_stop(fs);
}

static void test_drip(void)
{
    fake_server *fs = fake_start(fake_drip, "+PONG\r\n");
    rlk__transport t;
    char buf[16];
    size_t have = 0;
    int reads = 0;
    if (!CHECK(fs != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    while (have < 7) {
        ssize_t r = rlk__transport_read_some(&t, buf + have, sizeof buf - have, in_ms(LONG_MS));
        if (!CHECK(r > 0)) break;
        have += (size_t)r;
        reads++;
    }
    CHECK_EQ_MEM(buf, have, "+PONG\r\n", 7);
    CHECK_MSG(reads >= 2, "%d reads", reads); /* it came in pieces */
    rlk__transport_close(&t);
    fake_stop(fs);
}

/* Writing to a peer that has gone must be an error, not SIGPIPE (which
 * is left at its default here: it would end the program). */
static void test_no_sigpipe(void)
{
    fake_server *fs = fake_start(fake_close_at_once, NULL);
    rlk__transport t;
    size_t chunk = 256 * 1024;
    char *buf = calloc(1, chunk);
    int rc = RLK_OK, i;
    if (!CHECK(fs != NULL && buf != NULL)) goto out;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_INT(rlk__transport_read_some(&t, buf, chunk, in_ms(LONG_MS)), 0);
    for (i = 0; i < 64 && rc == RLK_OK; i++)
        rc = rlk__transport_write_all(&t, buf, chunk, in_ms(LONG_MS));
    CHECK_EQ_INT(rc, RLK_ERR_IO);
    CHECK_MSG(strstr(t.err, "Broken pipe") || strstr(t.err, "Connection reset"), "err: %s", t.err);
    rlk__transport_close(&t);
out:
    fake_stop(fs);
    free(buf);
}

static void test_wait_readable(void)
{
    fake_server *fs = fake_start(fake_send_then_hold, "+HELLO\r\n");
    rlk__transport t;
    if (!CHECK(fs != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_INT(rlk__transport_wait_readable(&t, in_ms(LONG_MS)), 1);
    CHECK(read_exactly(&t, "+HELLO\r\n", in_ms(LONG_MS)));
    CHECK_EQ_INT(rlk__transport_wait_readable(&t, in_ms(50)), 0);
    rlk__transport_close(&t);
    fake_stop(fs);
}

/* The fake server's RESP2 behaviour, which later tests build on. */
static void test_fake_resp2(void)
{
    fake_server *fs = fake_start(fake_resp2, NULL);
    rlk__transport t;
    const char *hello = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n";
    if (!CHECK(fs != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    CHECK(rlk__transport_write_all(&t, hello, strlen(hello), in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, "-ERR unknown command 'HELLO', with args beginning with: \r\n",
                       in_ms(LONG_MS)));
    hello = "*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*1\r\n$4\r\nPING\r\n";
    CHECK(rlk__transport_write_all(&t, hello, strlen(hello), in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, "$2\r\nhi\r\n+PONG\r\n", in_ms(LONG_MS)));
    CHECK_EQ_INT(fake_accepted(fs), 1);
    rlk__transport_close(&t);
    fake_stop(fs);
}

/* Signals every 2 ms, without SA_RESTART: every poll, connect and read
 * is interrupted again and again, and must neither fail nor stop early. */
static volatile sig_atomic_t ticks;
static void on_tick(int sig)
{
    ticks++;
}

static void ticking_start(void)
{
    struct sigaction sa;
    struct itimerval every = {{0, 2000}, {0, 2000}};
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_tick;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGALRM, &sa, NULL);
    ticks = 0;
    setitimer(ITIMER_REAL, &every, NULL);
}

/* Returns how many signals came.  The handler stays: a tick already
 * generated may still be delivered (valgrind delays them), and the
 * default action would end the program. */
static int ticking_stop(void)
{
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    return ticks;
}

static void test_signals(void)
{
    ts_server *s = get_plain_server();
    fake_server *fs = fake_start(fake_stall, NULL);
    rlk__transport t;
    char buf[16];
    int64_t start, took;
    int i;

    if (!CHECK(s != NULL && fs != NULL)) goto out;
    ticking_start();

    rlk__transport_init(&t);
    for (i = 0; i < 20; i++) {
        CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", s->port, in_ms(LONG_MS)), RLK_OK);
        CHECK(ping(&t));
    }
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", fake_port(fs), in_ms(LONG_MS)), RLK_OK);
    start = rlk__now_ms();
    CHECK_EQ_INT(rlk__transport_read_some(&t, buf, sizeof buf, start + 300), RLK_ERR_TIMEOUT);
    took = rlk__now_ms() - start;
    CHECK_MSG(took >= 299 && took < 3000, "took %lld ms", (long long)took);
    start = rlk__now_ms();
    CHECK_EQ_INT(rlk__transport_wait_readable(&t, start + 100), 0);
    CHECK(rlk__now_ms() - start >= 99);
#ifdef RLK_HAVE_OPENSSL
    {
        rlk_tls_config cfg;
        memset(&cfg, 0, sizeof cfg);
        start = rlk__now_ms();
        CHECK_EQ_INT(rlk__tls_connect(&t, "127.0.0.1", fake_port(fs), &cfg, start + 300),
                     RLK_ERR_TIMEOUT);
        CHECK(rlk__now_ms() - start >= 299);
    }
#endif
    rlk__transport_close(&t);

    i = ticking_stop();
    CHECK_MSG(i > 50, "only %d signals", i);
out:
    fake_stop(fs);
}

/* ------------------------------------------------------------------ */
/* Unix sockets                                                        */

static void test_unix_ping(void)
{
    ts_options o;
    ts_server *s;
    rlk__transport t;
    int fl;
    memset(&o, 0, sizeof o);
    o.unix_socket = 1;
    s = ts_start(&o);
    if (!CHECK(s != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__unix_connect(&t, s->unix_path, in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_STR(t.peer, s->unix_path);
    fl = fcntl(t.fd, F_GETFL);
    CHECK(fl >= 0 && (fl & O_NONBLOCK));
    fl = fcntl(t.fd, F_GETFD);
    CHECK(fl >= 0 && (fl & FD_CLOEXEC));
    CHECK(ping(&t));
    rlk__transport_close(&t);
    CHECK_EQ_INT(rlk__unix_connect(&t, s->unix_path, -1), RLK_OK);
    CHECK(ping(&t));
    rlk__transport_close(&t);
    ts_stop(s);
}

static void test_unix_errors(void)
{
    rlk__transport t;
    char longpath[200];
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__unix_connect(&t, "/nonexistent/redis.sock", in_ms(LONG_MS)), RLK_ERR_CONNECT);
    CHECK_EQ_STR(t.err, "connect /nonexistent/redis.sock: No such file or directory");
    CHECK_EQ_INT(t.fd, -1);
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    CHECK_EQ_INT(rlk__unix_connect(&t, longpath, in_ms(LONG_MS)), RLK_ERR_INVALID);
    CHECK_MSG(strstr(t.err, "socket path too long (199 bytes, at most 107)") != NULL, "err: %s",
              t.err);
    CHECK_EQ_INT(rlk__unix_connect(&t, "", in_ms(LONG_MS)), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__unix_connect(&t, NULL, in_ms(LONG_MS)), RLK_ERR_INVALID);
}

/* A Unix listener whose queue is full: a connect to it fails with
 * EAGAIN until there is room. */
typedef struct unix_full {
    struct sockaddr_un sa;
    char dir[32];
    int lfd, fillers[8], nfill;
} unix_full;

static void unix_full_close(unix_full *u)
{
    for (int i = 0; i < u->nfill; i++) close(u->fillers[i]);
    if (u->lfd >= 0) close(u->lfd);
    unlink(u->sa.sun_path);
    rmdir(u->dir);
}

/* 1, or 0 (a test failure; u closed). */
static int unix_full_open(unix_full *u)
{
    int full = 0;
    memset(u, 0, sizeof *u);
    u->lfd = -1;
    snprintf(u->dir, sizeof u->dir, "/tmp/resplock-unix-XXXXXX");
    if (!CHECK(mkdtemp(u->dir) != NULL)) return 0;
    u->sa.sun_family = AF_UNIX;
    snprintf(u->sa.sun_path, sizeof u->sa.sun_path, "%s/s", u->dir);
    u->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (CHECK(u->lfd >= 0 && bind(u->lfd, (struct sockaddr *)&u->sa, sizeof u->sa) == 0 &&
              listen(u->lfd, 0) == 0)) {
        while (u->nfill < 8 && !full) {
            int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            u->fillers[u->nfill++] = fd;
            full = connect(fd, (struct sockaddr *)&u->sa, sizeof u->sa) != 0 && errno == EAGAIN;
        }
        if (CHECK_MSG(full, "the listen queue never filled")) return 1;
    }
    unix_full_close(u);
    return 0;
}

/* A Unix listener with a full queue: connect waits for room until the
 * deadline. */
static void unix_timeout(int with_signals)
{
    unix_full u;
    rlk__transport t;
    int64_t start, took;

    if (!unix_full_open(&u)) return;
    rlk__transport_init(&t);
    if (with_signals) ticking_start();
    start = rlk__now_ms();
    CHECK_EQ_INT(rlk__unix_connect(&t, u.sa.sun_path, start + 200), RLK_ERR_TIMEOUT);
    took = rlk__now_ms() - start;
    if (with_signals) CHECK(ticking_stop() > 20);
    CHECK_MSG(took >= 190 && took < 3000, "took %lld ms", (long long)took);
    CHECK_MSG(strstr(t.err, ": timed out after ") != NULL, "err: %s", t.err);
    CHECK_EQ_INT(t.fd, -1);
    unix_full_close(&u);
}

static void test_unix_timeout(void)
{
    unix_timeout(0);
    unix_timeout(1); /* connect interrupted by signals, again and again */
}

/* ------------------------------------------------------------------ */
/* Connecting in steps                                                  */

/* 1 when fd is no open descriptor any more. */
static int is_closed(int fd)
{
    return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

/* A server: the steps end connected.  A listener with a full queue: the
 * start returns at once, the connect waiting for the socket to be
 * writable until its deadline; expired, it times out with the message a
 * blocking connect gives; given up (closed), its socket is closed. */
static void test_steps_tcp(void)
{
    ts_server *s = get_plain_server();
    ts_hole h;
    rlk__transport t;
    int64_t deadline = in_ms(LONG_MS);
    char prefix[128];
    int rc, fd;

    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__connect_step(&t, 0), RLK_ERR_INVALID);
    CHECK_EQ_INT(rlk__connect_expire(&t), RLK_OK);
    if (CHECK(s != NULL)) {
        rc = rlk__tcp_connect_start(&t, "127.0.0.1", s->port, deadline);
        CHECK_MSG(rc == RLK_OK || rc == RLK__IN_PROGRESS, "rc %d: %s", rc, t.err);
        if (rc == RLK__IN_PROGRESS)
            CHECK(t.cs.events == POLLOUT && t.cs.wake == deadline && t.fd >= 0 && !t.ops);
        CHECK_EQ_INT(rlk__connect_finish(&t, rc), RLK_OK);
        CHECK(t.cs.step == NULL && t.ops != NULL);
        CHECK(ping(&t));
        rlk__transport_close(&t);
    }

    if (!CHECK_MSG(ts_hole_open(&h) == 0, "no listener with a full queue")) return;
    CHECK_EQ_INT(rlk__tcp_connect_start(&t, "127.0.0.1", h.port, deadline), RLK__IN_PROGRESS);
    CHECK_EQ_INT(t.cs.events, POLLOUT);
    CHECK_EQ_INT(t.cs.wake, deadline);
    CHECK(t.fd >= 0 && !t.ops);
    /* Nothing came: a step changes nothing before the deadline. */
    CHECK_EQ_INT(rlk__connect_step(&t, 0), RLK__IN_PROGRESS);
    fd = t.fd;
    CHECK_EQ_INT(rlk__connect_expire(&t), RLK_ERR_TIMEOUT);
    snprintf(prefix, sizeof prefix, "connect 127.0.0.1:%d: timed out after ", h.port);
    CHECK_MSG(starts_with(t.err, prefix) && ends_with(t.err, " ms"), "err: %s", t.err);
    CHECK(t.fd == -1 && t.cs.step == NULL && is_closed(fd));

    CHECK_EQ_INT(rlk__tcp_connect_start(&t, "127.0.0.1", h.port, deadline), RLK__IN_PROGRESS);
    fd = t.fd;
    rlk__transport_close(&t);
    CHECK(t.fd == -1 && t.cs.step == NULL && is_closed(fd));
    ts_hole_close(&h);
}

/* A Unix socket whose server's queue is full: no event tells when there
 * is room, so the connect waits for its next try's time (before the
 * deadline); once there is room, a try connects. */
static void test_steps_unix(void)
{
    unix_full u;
    rlk__transport t;
    int64_t deadline = in_ms(LONG_MS);
    int rc, a = -1, b = -1;
    char c = 0;

    if (!unix_full_open(&u)) return;
    rlk__transport_init(&t);
    rc = rlk__unix_connect_start(&t, u.sa.sun_path, deadline);
    CHECK_EQ_INT(rc, RLK__IN_PROGRESS);
    CHECK_EQ_INT(t.cs.events, 0);
    CHECK_MSG(t.cs.wake >= 0 && t.cs.wake < deadline, "wake in %lld ms",
              (long long)(t.cs.wake - rlk__now_ms()));
    /* Room: the server takes the connection at the head of its queue. */
    a = accept(u.lfd, NULL, NULL);
    CHECK(a >= 0);
    CHECK_EQ_INT(rlk__connect_finish(&t, rc), RLK_OK);
    /* ...and the next one is ours. */
    b = accept(u.lfd, NULL, NULL);
    if (CHECK(b >= 0)) {
        CHECK_EQ_INT(rlk__transport_write_all(&t, "x", 1, in_ms(LONG_MS)), RLK_OK);
        CHECK(read(b, &c, 1) == 1 && c == 'x');
    }
    rlk__transport_close(&t);
    if (a >= 0) close(a);
    if (b >= 0) close(b);
    unix_full_close(&u);
}

/* ------------------------------------------------------------------ */
/* The test servers themselves                                         */

static void test_server_restart(void)
{
    ts_options o;
    ts_server *s;
    rlk__transport t;
    const char *set = "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n";
    const char *get = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
    char buf[64];
    ssize_t r;
    int port;

    memset(&o, 0, sizeof o);
    o.password = "pw";
    s = ts_start(&o);
    if (!CHECK(s != NULL)) return;
    port = s->port;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", port, in_ms(LONG_MS)), RLK_OK);
    CHECK(rlk__transport_write_all(&t, "PING\r\n", 6, in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, "-NOAUTH Authentication required.\r\n", in_ms(LONG_MS)));
    CHECK(rlk__transport_write_all(&t, "AUTH pw\r\n", 9, in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, "+OK\r\n", in_ms(LONG_MS)));
    CHECK(rlk__transport_write_all(&t, set, strlen(set), in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, "+OK\r\n", in_ms(LONG_MS)));

    CHECK_EQ_INT(ts_restart(s), 0);
    CHECK_EQ_INT(s->port, port);
    /* The old connection ends (EOF or reset), promptly. */
    r = rlk__transport_read_some(&t, buf, sizeof buf, in_ms(LONG_MS));
    CHECK_MSG(r == 0 || r == RLK_ERR_IO, "read after restart: %zd %s", r, t.err);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", port, in_ms(LONG_MS)), RLK_OK);
    CHECK(rlk__transport_write_all(&t, "AUTH pw\r\n", 9, in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, "+OK\r\n", in_ms(LONG_MS)));
    CHECK(rlk__transport_write_all(&t, get, strlen(get), in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, "$-1\r\n", in_ms(LONG_MS))); /* a fresh data set */
    rlk__transport_close(&t);

    CHECK_EQ_INT(ts_halt(s), 0);
    CHECK_EQ_INT(s->pid, -1);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", port, in_ms(LONG_MS)), RLK_ERR_CONNECT);
    CHECK_EQ_INT(ts_start_again(s), 0);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", port, in_ms(LONG_MS)), RLK_OK);
    rlk__transport_close(&t);
    ts_stop(s);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", port, in_ms(LONG_MS)), RLK_ERR_CONNECT);
}

/* The SHA1 of a script as the server computes it. */
static void test_sha1_matches_server(void)
{
    static const char script[] = "return redis.call('GET', KEYS[1]) -- \xc3\xa9t\xc3\xa9";
    ts_server *s = get_plain_server();
    rlk__transport t;
    char cmd[256], want[64], sha[41];
    if (!CHECK(s != NULL)) return;
    rlk__sha1_hex(script, strlen(script), sha);
    snprintf(cmd, sizeof cmd, "*3\r\n$6\r\nSCRIPT\r\n$4\r\nLOAD\r\n$%zu\r\n%s\r\n", strlen(script),
             script);
    snprintf(want, sizeof want, "$40\r\n%s\r\n", sha);
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", s->port, in_ms(LONG_MS)), RLK_OK);
    CHECK(rlk__transport_write_all(&t, cmd, strlen(cmd), in_ms(LONG_MS)) == RLK_OK);
    CHECK(read_exactly(&t, want, in_ms(LONG_MS)));
    rlk__transport_close(&t);
}

/* ------------------------------------------------------------------ */
/* TLS                                                                 */

#ifdef RLK_HAVE_OPENSSL

static ts_server *tls_main, *tls_mtls, *tls_wrong_host, *tls_expired;

static ts_server *tls_server(ts_server **slot, const char *cert, const char *key, int mtls,
                             int ipv6)
{
    ts_options o;
    if (*slot) return *slot;
    if (!ts_certs_dir()) return NULL;
    memset(&o, 0, sizeof o);
    o.ipv6 = ipv6;
    o.tls_cert = ts_cert(cert);
    o.tls_key = ts_cert(key);
    o.tls_ca = ts_cert("ca.crt");
    o.tls_auth_clients = mtls;
    o.tls_client_cert = ts_cert("client.crt");
    o.tls_client_key = ts_cert("client.key");
    *slot = ts_start(&o);
    return *slot;
}

static rlk_tls_config tls_cfg(const char *ca)
{
    rlk_tls_config c;
    memset(&c, 0, sizeof c);
    c.ca_file = ca ? ts_cert(ca) : NULL;
    return c;
}

/* Connects with cfg; checks the outcome, the message (exact, or a prefix
 * when it ends with '*') and that OpenSSL's error queue is empty. */
static void tls_expect(const char *host, int port, const rlk_tls_config *cfg, int want_rc,
                       const char *want_err, int line)
{
    rlk__transport t;
    int64_t start = rlk__now_ms();
    int rc;
    size_t n = want_err ? strlen(want_err) : 0;
    rlk__transport_init(&t);
    rc = rlk__tls_connect(&t, host, port, cfg, start + LONG_MS);
    tl_ok(rc == want_rc, __FILE__, line, "%s:%d: rc %d, want %d (%s)", host, port, rc, want_rc,
          t.err);
    if (want_err && n && want_err[n - 1] == '*')
        tl_ok(strncmp(t.err, want_err, n - 1) == 0, __FILE__, line, "err \"%s\", want \"%s\"",
              t.err, want_err);
    else if (want_err)
        tl_ok(strcmp(t.err, want_err) == 0, __FILE__, line, "err \"%s\", want \"%s\"", t.err,
              want_err);
    tl_ok(ERR_peek_error() == 0, __FILE__, line, "OpenSSL error queue not empty");
    tl_ok(rlk__now_ms() - start < LONG_MS, __FILE__, line, "took too long");
    if (rc == RLK_OK) {
        tl_ok(ping(&t), __FILE__, line, "no PONG over TLS");
    } else {
        tl_ok(t.fd == -1 && t.tls == NULL && t.tls_ctx == NULL, __FILE__, line,
              "not closed after a failure");
    }
    rlk__transport_close(&t);
}

static void test_tls_ping(void)
{
    ts_server *s = tls_server(&tls_main, "server.crt", "server.key", 0, 0);
    rlk_tls_config cfg = tls_cfg("ca.crt");
    rlk__transport t;
    const char *v, *c;
    if (!CHECK(s != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tls_connect(&t, "127.0.0.1", s->port, &cfg, in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_STR(t.err, "");
    v = rlk__tls_version(&t);
    c = rlk__tls_cipher(&t);
    CHECK_EQ_STR(v, "TLSv1.3");
    CHECK_MSG(c && strlen(c) > 5, "cipher %s", c ? c : "(null)");
    CHECK(ping(&t));
    CHECK(ping(&t));
    CHECK(ERR_peek_error() == 0);
    rlk__transport_close(&t);
    CHECK(rlk__tls_version(&t) == NULL);
    CHECK(t.tls == NULL && t.tls_ctx == NULL && t.fd == -1);

    /* By name: DNS SAN and SNI, the name given apart from the address so
     * that nothing depends on a name resolving. */
    cfg.server_name = "redis.resplock.test";
    tls_expect("127.0.0.1", s->port, &cfg, RLK_OK, "", __LINE__);
    /* A hashed CA directory instead of a file. */
    cfg = tls_cfg(NULL);
    cfg.ca_dir = ts_cert("cadir");
    tls_expect("127.0.0.1", s->port, &cfg, RLK_OK, "", __LINE__);
}

static void test_tls_ipv6(void)
{
    static ts_server *s6;
    rlk_tls_config cfg = tls_cfg("ca.crt");
    if (!CHECK(ts_have_ipv6())) return;
    if (!CHECK(tls_server(&s6, "server.crt", "server.key", 0, 1) != NULL)) return;
    tls_expect("::1", s6->port, &cfg, RLK_OK, "", __LINE__);
    ts_stop(s6);
    s6 = NULL;
}

static void test_tls_big_value(void)
{
    /* Many records each way: partial writes, and reads that leave
     * decrypted bytes pending inside OpenSSL. */
    ts_server *s = tls_server(&tls_main, "server.crt", "server.key", 0, 0);
    rlk_tls_config cfg = tls_cfg("ca.crt");
    rlk__transport t;
    size_t n = 3u << 20, have = 0, total, vstart;
    char head[64], *buf = NULL, *got = NULL;
    int hl, pending_seen = 0;
    if (!CHECK(s != NULL)) return;
    buf = malloc(n + 128);
    got = malloc(n + 128);
    if (!CHECK(buf && got)) goto out;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tls_connect(&t, "127.0.0.1", s->port, &cfg, in_ms(LONG_MS)), RLK_OK);
    hl = snprintf(head, sizeof head, "*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$%zu\r\n", n);
    vstart = (size_t)hl;
    memcpy(buf, head, vstart);
    for (total = 0; total < n; total++) buf[vstart + total] = (char)('a' + total % 26);
    memcpy(buf + vstart + n, "\r\n", 2);
    CHECK_EQ_INT(rlk__transport_write_all(&t, buf, (size_t)hl + n + 2, in_ms(30000)), RLK_OK);
    CHECK(read_exactly(&t, "+OK\r\n", in_ms(LONG_MS)));
    CHECK_EQ_INT(
        rlk__transport_write_all(&t, "*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", 22, in_ms(LONG_MS)),
        RLK_OK);
    hl = snprintf(head, sizeof head, "$%zu\r\n", n);
    total = (size_t)hl + n + 2;
    while (have < total) {
        /* Small reads, so that OpenSSL holds the rest of a record. */
        ssize_t r = rlk__transport_read_some(
            &t, got + have, total - have < 1000 ? total - have : 1000, in_ms(30000));
        if (!CHECK_MSG(r > 0, "read %zd: %s", r, t.err)) break;
        have += (size_t)r;
        if (t.ops->pending(&t) > 0) {
            pending_seen = 1;
            CHECK_EQ_INT(rlk__transport_wait_readable(&t, in_ms(0)), 1);
        }
    }
    CHECK(pending_seen);
    CHECK_EQ_MEM(got, (size_t)hl, head, (size_t)hl);
    CHECK_EQ_U64(have, total);
    if (have == total) {
        CHECK(memcmp(got + hl, buf + vstart, n) == 0);
        CHECK(memcmp(got + hl + n, "\r\n", 2) == 0);
    }
    rlk__transport_close(&t);
out:
    free(buf);
    free(got);
}

static void test_tls_client_cert(void)
{
    ts_server *s = tls_server(&tls_mtls, "server.crt", "server.key", 1, 0);
    rlk_tls_config cfg = tls_cfg("ca.crt");
    rlk__transport t;
    char buf[64];
    int rc, i;
    static const char *const want[] = {"(the server requires a client certificate)",
                                       "(the server rejected the client certificate)"};
    if (!CHECK(s != NULL)) return;

    cfg.cert_file = ts_cert("client.crt");
    cfg.key_file = ts_cert("client.key");
    tls_expect("127.0.0.1", s->port, &cfg, RLK_OK, "", __LINE__);

    /* Without a certificate: under TLS 1.3 the client's handshake ends
     * before the server says no, so the refusal may come at the first
     * read; either way it is a TLS error that says what is missing. */
    cfg.cert_file = cfg.key_file = NULL;
    for (i = 0; i < 2; i++) {
        rlk__transport_init(&t);
        rc = rlk__tls_connect(&t, "127.0.0.1", s->port, &cfg, in_ms(LONG_MS));
        if (rc == RLK_OK) rc = rlk__transport_write_all(&t, "PING\r\n", 6, in_ms(LONG_MS));
        if (rc == RLK_OK) rc = (int)rlk__transport_read_some(&t, buf, sizeof buf, in_ms(LONG_MS));
        CHECK_EQ_INT(rc, RLK_ERR_TLS);
        CHECK_MSG(strstr(t.err, want[i]) != NULL, "err: %s", t.err);
        CHECK(ERR_peek_error() == 0);
        rlk__transport_close(&t);
        /* Then a certificate from a CA the server does not trust. */
        cfg.cert_file = ts_cert("other-client.crt");
        cfg.key_file = ts_cert("other-client.key");
    }
}

static void test_tls_verify_failures(void)
{
    ts_server *m = tls_server(&tls_main, "server.crt", "server.key", 0, 0);
    ts_server *w = tls_server(&tls_wrong_host, "wrong-host.crt", "wrong-host.key", 0, 0);
    ts_server *e = tls_server(&tls_expired, "expired.crt", "expired.key", 0, 0);
    rlk_tls_config cfg;
    if (!CHECK(m && w && e)) return;

    /* Redis sends its CA along with its certificate (OpenSSL builds the
     * chain), so an unknown CA shows as a self-signed one in the chain. */
    cfg = tls_cfg("other-ca.crt");
    tls_expect("127.0.0.1", m->port, &cfg, RLK_ERR_TLS,
               "TLS: certificate verify failed: self-signed certificate in certificate chain",
               __LINE__);
    cfg = tls_cfg(NULL); /* the system store does not know the test CA */
    tls_expect("127.0.0.1", m->port, &cfg, RLK_ERR_TLS,
               "TLS: certificate verify failed: self-signed certificate in certificate chain",
               __LINE__);
    tls_expect("127.0.0.1", m->port, NULL, RLK_ERR_TLS,
               "TLS: certificate verify failed: self-signed certificate in certificate chain",
               __LINE__);

    cfg = tls_cfg("ca.crt");
    tls_expect("127.0.0.1", w->port, &cfg, RLK_ERR_TLS,
               "TLS: certificate verify failed: IP address mismatch", __LINE__);
    cfg.server_name = "redis.resplock.test"; /* in server.crt, not in this one */
    tls_expect("127.0.0.1", w->port, &cfg, RLK_ERR_TLS,
               "TLS: certificate verify failed: hostname mismatch", __LINE__);
    cfg.server_name = "other.example";
    tls_expect("127.0.0.1", w->port, &cfg, RLK_ERR_TLS,
               "TLS: certificate verify failed: hostname mismatch", __LINE__);
    cfg.server_name = "wrong.example";
    tls_expect("127.0.0.1", w->port, &cfg, RLK_OK, "", __LINE__);
    /* A certificate for 127.0.0.1 does not cover other names. */
    cfg.server_name = "127.0.0.2";
    tls_expect("127.0.0.1", m->port, &cfg, RLK_ERR_TLS,
               "TLS: certificate verify failed: IP address mismatch", __LINE__);

    cfg = tls_cfg("ca.crt");
    tls_expect("127.0.0.1", e->port, &cfg, RLK_ERR_TLS,
               "TLS: certificate verify failed: certificate has expired", __LINE__);
}

static void test_tls_insecure(void)
{
    ts_server *m = tls_server(&tls_main, "server.crt", "server.key", 0, 0);
    ts_server *w = tls_server(&tls_wrong_host, "wrong-host.crt", "wrong-host.key", 0, 0);
    ts_server *e = tls_server(&tls_expired, "expired.crt", "expired.key", 0, 0);
    rlk_tls_config cfg = tls_cfg("other-ca.crt");
    if (!CHECK(m && w && e)) return;
    cfg.insecure = 1;
    tls_expect("127.0.0.1", m->port, &cfg, RLK_OK, "", __LINE__);
    cfg.server_name = "redis.resplock.test";
    tls_expect("127.0.0.1", w->port, &cfg, RLK_OK, "", __LINE__);
    cfg.server_name = NULL;
    tls_expect("127.0.0.1", e->port, &cfg, RLK_OK, "", __LINE__);
    /* No CA is even read. */
    cfg.ca_file = "/nonexistent/ca.crt";
    tls_expect("127.0.0.1", m->port, &cfg, RLK_OK, "", __LINE__);
}

static void test_tls_bad_files(void)
{
    /* Files are loaded before connecting: nothing listens on the port. */
    int port = ts_free_port(0);
    rlk_tls_config cfg;
    char want[600];
    if (!CHECK(ts_certs_dir() != NULL)) return;

    cfg = tls_cfg(NULL);
    cfg.ca_file = "/nonexistent/ca.crt";
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS,
               "TLS: cannot load CA file /nonexistent/ca.crt: *", __LINE__);
    cfg.ca_file = ts_cert("client.key"); /* not a certificate */
    snprintf(want, sizeof want, "TLS: cannot load CA file %s: *", cfg.ca_file);
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS, want, __LINE__);
    cfg = tls_cfg(NULL);
    cfg.ca_dir = "/nonexistent/cadir";
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS,
               "TLS: cannot load CA directory /nonexistent/cadir: No such file or directory",
               __LINE__);

    cfg = tls_cfg("ca.crt");
    cfg.cert_file = "/nonexistent/client.crt";
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS,
               "TLS: cannot load client certificate /nonexistent/client.crt: *", __LINE__);
    cfg.cert_file = ts_cert("client.crt");
    cfg.key_file = "/nonexistent/client.key";
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS,
               "TLS: cannot load private key /nonexistent/client.key: *", __LINE__);
    cfg.key_file = ts_cert("server.key");
    snprintf(want, sizeof want, "TLS: private key %s does not match certificate %s", cfg.key_file,
             cfg.cert_file);
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS, want, __LINE__);
    /* A passphrase is never asked for (on a terminal this would hang).
     * The message is the same whatever the key's random salt makes
     * OpenSSL say (see pem_is_encrypted). */
    cfg.key_file = ts_cert("client-encrypted.key");
    snprintf(want, sizeof want,
             "TLS: cannot load private key %s: it is encrypted (encrypted keys are not supported)",
             cfg.key_file);
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS, want, __LINE__);
    /* The key missing: taken from the certificate file, which has none. */
    cfg.key_file = NULL;
    snprintf(want, sizeof want, "TLS: cannot load private key %s: *", cfg.cert_file);
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS, want, __LINE__);
    cfg.cert_file = NULL;
    cfg.key_file = ts_cert("client.key");
    snprintf(want, sizeof want, "TLS: key_file %s given without cert_file", cfg.key_file);
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_TLS, want, __LINE__);

    /* Good files, nothing listening: the TCP error. */
    cfg = tls_cfg("ca.crt");
    snprintf(want, sizeof want, "connect 127.0.0.1:%d: Connection refused", port);
    tls_expect("127.0.0.1", port, &cfg, RLK_ERR_CONNECT, want, __LINE__);
    tls_expect("", port, &cfg, RLK_ERR_INVALID, "connect: no host", __LINE__);
}

static void test_tls_against_plaintext(void)
{
    ts_server *plain = get_plain_server();
    fake_server *fs = fake_start(fake_resp2, NULL);
    rlk_tls_config cfg = tls_cfg("ca.crt");
    rlk__transport t;
    int64_t start;
    int rc;
    char prefix[128];
    if (!CHECK(plain && fs)) goto out;

    /* A RESP server answers the ClientHello with an error line. */
    tls_expect("127.0.0.1", fake_port(fs), &cfg, RLK_ERR_TLS,
               "TLS: wrong version number (is it a plaintext port?)", __LINE__);

    /* Redis itself may wait for a line end that a ClientHello does not
     * have: then the deadline ends it, and says so. */
    rlk__transport_init(&t);
    start = rlk__now_ms();
    rc = rlk__tls_connect(&t, "127.0.0.1", plain->port, &cfg, start + 1000);
    CHECK_MSG(rc == RLK_ERR_TLS || rc == RLK_ERR_TIMEOUT, "rc %d: %s", rc, t.err);
    CHECK(rlk__now_ms() - start < 1000 + 2000);
    snprintf(prefix, sizeof prefix, "TLS: handshake with 127.0.0.1:%d timed out after ",
             plain->port);
    if (rc == RLK_ERR_TIMEOUT)
        CHECK_MSG(starts_with(t.err, prefix) && ends_with(t.err, " ms"), "err: %s", t.err);
    else
        CHECK_EQ_STR(t.err, "TLS: wrong version number (is it a plaintext port?)");
    CHECK(ERR_peek_error() == 0);
    CHECK_EQ_INT(t.fd, -1);
out:
    fake_stop(fs);
}

static void test_plaintext_against_tls(void)
{
    ts_server *s = tls_server(&tls_main, "server.crt", "server.key", 0, 0);
    rlk__transport t;
    char buf[256];
    ssize_t r;
    int64_t start;
    if (!CHECK(s != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", s->port, in_ms(LONG_MS)), RLK_OK);
    start = rlk__now_ms();
    CHECK_EQ_INT(rlk__transport_write_all(&t, "PING\r\n", 6, start + 3000), RLK_OK);
    /* The server may send an alert first; then it closes.  No hang. */
    while ((r = rlk__transport_read_some(&t, buf, sizeof buf, start + 3000)) > 0)
        CHECK(memchr(buf, '+', (size_t)r) == NULL || buf[0] == 0x15);
    CHECK_MSG(r == 0 || r == RLK_ERR_IO, "read: %zd %s", r, t.err);
    CHECK(rlk__now_ms() - start < 3000);
    rlk__transport_close(&t);
}

/* A fatal handshake_failure alert in answer to the ClientHello. */
static void send_alert(fake_conn *c, void *arg)
{
    char hello[5];
    if (fake_recv(c, hello, sizeof hello, 5000) > 0)
        fake_send(c, "\x15\x03\x03\x00\x02\x02\x28", 7);
    fake_hold(c);
}

static void test_tls_hostile_servers(void)
{
    fake_server *closer = fake_start(fake_close_at_once, NULL);
    fake_server *staller = fake_start(fake_stall, NULL);
    fake_server *garbage = fake_start(send_alert, NULL);
    rlk_tls_config cfg = tls_cfg("ca.crt");
    rlk__transport t;
    char prefix[128];
    int64_t start, took;
    if (!CHECK(closer && staller && garbage)) goto out;

    tls_expect("127.0.0.1", fake_port(closer), &cfg, RLK_ERR_TLS,
               "TLS: peer closed the connection during the handshake (is it a TLS port?)",
               __LINE__);

    rlk__transport_init(&t);
    start = rlk__now_ms();
    CHECK_EQ_INT(rlk__tls_connect(&t, "127.0.0.1", fake_port(staller), &cfg, start + 300),
                 RLK_ERR_TIMEOUT);
    took = rlk__now_ms() - start;
    CHECK_MSG(took >= 299 && took < 3000, "took %lld ms", (long long)took);
    snprintf(prefix, sizeof prefix, "TLS: handshake with 127.0.0.1:%d timed out after ",
             fake_port(staller));
    CHECK_MSG(starts_with(t.err, prefix) && ends_with(t.err, " ms"), "err: %s", t.err);
    CHECK(ERR_peek_error() == 0);
    CHECK_EQ_INT(t.fd, -1);

    snprintf(prefix, sizeof prefix,
             "TLS: handshake with 127.0.0.1:%d failed: sslv3 alert handshake failure",
             fake_port(garbage));
    tls_expect("127.0.0.1", fake_port(garbage), &cfg, RLK_ERR_TLS, prefix, __LINE__);
out:
    fake_stop(closer);
    fake_stop(staller);
    fake_stop(garbage);
}

/* A server: the steps (its answers may all have come by the first
 * SSL_connect on loopback) end connected.  A listener that never answers the ClientHello: the
 * step waits for reading; expired, it times out with the blocking
 * connect's message, and nothing of OpenSSL's is left behind.  A
 * connect given up (closed) in its handshake or in its TCP connect frees
 * what it held (valgrind's leak check). */
static void test_steps_tls(void)
{
    ts_server *s = tls_server(&tls_main, "server.crt", "server.key", 0, 0);
    rlk_tls_config cfg = tls_cfg("ca.crt");
    rlk__transport t;
    ts_hole h;
    char prefix[128];
    int rc, port = 0, silent;

    rlk__transport_init(&t);
    if (CHECK(s != NULL)) {
        rc = rlk__tls_connect_start(&t, "127.0.0.1", s->port, &cfg, in_ms(LONG_MS));
        while (rc == RLK__IN_PROGRESS) {
            struct pollfd p = {t.fd, t.cs.events, 0};
            if (!CHECK(t.fd >= 0 && t.cs.events && !t.ops)) break;
            int r = poll(&p, 1, rlk__ms_left(t.cs.wake));
            rc = rlk__connect_step(&t, r > 0 ? p.revents : 0);
        }
        CHECK_EQ_INT(rc, RLK_OK);
        CHECK(t.cs.step == NULL && t.ops != NULL && t.tls != NULL);
        CHECK(ping(&t));
        rlk__transport_close(&t);
    }

    silent = ts_silent_listener(&port);
    if (!CHECK(silent >= 0)) return;
    rc = ts_steps_to_handshake(&t, rlk__tls_connect_start(&t, "127.0.0.1", port, &cfg, -1));
    CHECK_EQ_INT(rc, RLK__IN_PROGRESS);
    CHECK(t.cs.upper && t.cs.events == POLLIN && t.cs.wake == -1 && !t.ops);
    CHECK_EQ_INT(rlk__connect_step(&t, 0), RLK__IN_PROGRESS);
    CHECK_EQ_INT(rlk__connect_expire(&t), RLK_ERR_TIMEOUT);
    snprintf(prefix, sizeof prefix, "TLS: handshake with 127.0.0.1:%d timed out after ", port);
    CHECK_MSG(starts_with(t.err, prefix) && ends_with(t.err, " ms"), "err: %s", t.err);
    CHECK(t.fd == -1 && t.tls == NULL && t.tls_ctx == NULL && t.cs.step == NULL);
    CHECK(ERR_peek_error() == 0);

    rc = ts_steps_to_handshake(&t, rlk__tls_connect_start(&t, "127.0.0.1", port, &cfg, -1));
    CHECK(rc == RLK__IN_PROGRESS && t.cs.upper);
    rlk__transport_close(&t);
    CHECK(t.fd == -1 && t.tls == NULL && t.tls_ctx == NULL && t.cs.step == NULL);
    close(silent);

    if (!CHECK_MSG(ts_hole_open(&h) == 0, "no listener with a full queue")) return;
    CHECK_EQ_INT(rlk__tls_connect_start(&t, "127.0.0.1", h.port, &cfg, -1), RLK__IN_PROGRESS);
    CHECK(!t.cs.upper && t.cs.events == POLLOUT && t.tls != NULL);
    rlk__transport_close(&t);
    CHECK(t.fd == -1 && t.tls == NULL && t.tls_ctx == NULL && t.cs.step == NULL);
    CHECK(ERR_peek_error() == 0);
    ts_hole_close(&h);
}

static void test_tls_reuse(void)
{
    ts_server *s = tls_server(&tls_main, "server.crt", "server.key", 0, 0);
    rlk_tls_config good = tls_cfg("ca.crt"), bad = tls_cfg("other-ca.crt");
    rlk__transport t;
    if (!CHECK(s != NULL)) return;
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tls_connect(&t, "127.0.0.1", s->port, &good, in_ms(LONG_MS)), RLK_OK);
    CHECK(ping(&t));
    /* Connecting an open transport closes it first. */
    CHECK_EQ_INT(rlk__tls_connect(&t, "127.0.0.1", s->port, &bad, in_ms(LONG_MS)), RLK_ERR_TLS);
    CHECK_EQ_INT(t.fd, -1);
    CHECK_EQ_INT(rlk__tls_connect(&t, "127.0.0.1", s->port, &good, in_ms(LONG_MS)), RLK_OK);
    CHECK_EQ_STR(t.err, "");
    CHECK(ping(&t));
    /* A plain connection after a TLS one on the same object. */
    CHECK_EQ_INT(rlk__tcp_connect(&t, "127.0.0.1", get_plain_server()->port, in_ms(LONG_MS)),
                 RLK_OK);
    CHECK(t.tls == NULL && rlk__tls_version(&t) == NULL);
    CHECK(ping(&t));
    rlk__transport_close(&t);
}

#else /* no OpenSSL */

static void test_tls_not_compiled(void)
{
    rlk__transport t;
    rlk_tls_config cfg;
    memset(&cfg, 0, sizeof cfg);
    rlk__transport_init(&t);
    CHECK_EQ_INT(rlk__tls_connect(&t, "127.0.0.1", 6379, &cfg, in_ms(100)), RLK_ERR_TLS);
    CHECK_EQ_STR(t.err, "TLS support not compiled in");
    CHECK_EQ_INT(t.fd, -1);
    CHECK(rlk__tls_version(&t) == NULL && rlk__tls_cipher(&t) == NULL);
}

#endif

int main(int argc, char **argv)
{
    tl_init(argc, argv);
    /* SIGPIPE stays at its default on purpose: see test_no_sigpipe. */
    signal(SIGPIPE, SIG_DFL);

    RUN_TEST(test_url_valid);
    RUN_TEST(test_url_invalid);
    RUN_TEST(test_url_err_buffer);
    RUN_TEST(test_url_default);
    RUN_TEST(test_url_out_of_memory);
    RUN_TEST(test_conn_config_copy);
    RUN_TEST(test_sha1_vectors);
    RUN_TEST(test_sha1_agree);
    RUN_TEST(test_clock);

    RUN_TEST(test_tcp_ping);
    RUN_TEST(test_tcp_localhost);
    RUN_TEST(test_tcp_every_address);
    RUN_TEST(test_tcp_ipv6);
    RUN_TEST(test_tcp_refused);
    RUN_TEST(test_tcp_bad_arguments);
    RUN_TEST(test_tcp_resolve_error);
    RUN_TEST(test_tcp_connect_timeout);
    RUN_TEST(test_read_timeout);
    RUN_TEST(test_write_timeout);
    RUN_TEST(test_large_write);
    RUN_TEST(test_peer_closes);
    RUN_TEST(test_close_mid_reply);
    RUN_TEST(test_drip);
    RUN_TEST(test_no_sigpipe);
    RUN_TEST(test_wait_readable);
    RUN_TEST(test_fake_resp2);
    RUN_TEST(test_signals);
    RUN_TEST(test_unix_ping);
    RUN_TEST(test_unix_errors);
    RUN_TEST(test_unix_timeout);
    RUN_TEST(test_steps_tcp);
    RUN_TEST(test_steps_unix);
    RUN_TEST(test_server_restart);
    RUN_TEST(test_sha1_matches_server);

#ifdef RLK_HAVE_OPENSSL
    RUN_TEST(test_tls_ping);
    RUN_TEST(test_tls_ipv6);
    RUN_TEST(test_tls_big_value);
    RUN_TEST(test_tls_client_cert);
    RUN_TEST(test_tls_verify_failures);
    RUN_TEST(test_tls_insecure);
    RUN_TEST(test_tls_bad_files);
    RUN_TEST(test_tls_against_plaintext);
    RUN_TEST(test_plaintext_against_tls);
    RUN_TEST(test_tls_hostile_servers);
    RUN_TEST(test_tls_reuse);
    RUN_TEST(test_steps_tls);
    ts_stop(tls_main);
    ts_stop(tls_mtls);
    ts_stop(tls_wrong_host);
    ts_stop(tls_expired);
#else
    RUN_TEST(test_tls_not_compiled);
#endif
    ts_stop(plain_server);
    return tl_finish();
}
