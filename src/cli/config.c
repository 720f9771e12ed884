/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where resplock's connection settings come from: the configuration
 * files, the environment and the options, merged into one URL.
 *
 * Nothing here allocates: `run` forks its supervisor after the settings
 * are known, and a forked copy must hold no heap of ours.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"
#include "url.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>

#define SYSTEM_CONFIG "/etc/resplock.conf"
#define DEFAULT_URL "redis://127.0.0.1:6379"
#define CONF_MAX 16384

/* One setting of a configuration file, and where it was read. */
typedef struct conf_value {
    const char *value;
    const char *file;
    int line;
} conf_value;

enum {
    K_URL, K_HOST, K_PORT, K_USER, K_PASSWORD_FILE, K_TLS, K_CACERT, K_CACERTDIR, K_CERT,
    K_KEY, K_SNI, K_PREFIX, K_TIMEOUT,
    /* run's defaults, in the order of CLI_D_* */
    K_TTL, K_WAIT, K_HOLD_MIN, K_MAX_TIME, K_KILL_AFTER, K_COUNT
};

static const char *const conf_keys[K_COUNT] = {
    "url", "host", "port", "user", "password-file", "tls", "cacert", "cacertdir", "cert",
    "key", "sni", "prefix", "timeout", "ttl", "wait", "hold-min", "max-time", "kill-after"};

/* Both files are kept whole (the values point into them) until exit. */
static char conf_text[2][CONF_MAX + 1];
static char conf_path[2][1024];
static conf_value conf[K_COUNT];

static int conf_error(const char *file, int line, const char *fmt, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    if (line > 0) cli_err("%s, line %d: %s", file, line, msg);
    else cli_err("%s: %s", file, msg);
    return CLI_EX_CONFIG;
}

static char *trim(char *s, char *end)
{
    while (s < end && (*s == ' ' || *s == '\t')) s++;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r')) end--;
    *end = '\0';
    return s;
}

/* Reads one file into slot; a missing file is skipped when optional.
 * `var` names the variable that named the file, or is NULL. */
static int conf_load(int slot, const char *path, int optional, const char *var)
{
    snprintf(conf_path[slot], sizeof conf_path[slot], "%s", path);
    const char *file = conf_path[slot];
    /* open and read, not stdio: a static build would link fopen, fread
     * and fclose (about 1,400 bytes of musl) for these two files alone. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (optional && errno == ENOENT) return 0;
        if (var) {
            cli_err("%s (named by $%s): %s", file, var, strerror(errno));
            return CLI_EX_CONFIG;
        }
        return conf_error(file, 0, "%s", strerror(errno));
    }
    char *text = conf_text[slot];
    size_t n = 0;
    ssize_t r = 0;
    while (n <= CONF_MAX) {
        r = read(fd, text + n, CONF_MAX + 1 - n);
        if (r > 0) n += (size_t)r;
        else if (r == 0 || errno != EINTR) break;
    }
    close(fd);
    if (r < 0) return conf_error(file, 0, "%s", "read error");
    if (n > CONF_MAX) return conf_error(file, 0, "%s", "larger than 16 KiB");
    text[n] = '\0';
    if (memchr(text, '\0', n)) return conf_error(file, 0, "%s", "not a text file");
    cli_verbose("reading settings from %s", file);

    int line = 0;
    for (char *s = text; *s;) {
        char *eol = strchr(s, '\n');
        char *next = eol ? eol + 1 : s + strlen(s);
        line++;
        char *l = trim(s, eol ? eol : next);
        s = next;
        if (!*l || *l == '#') continue;
        char *eq = strchr(l, '=');
        if (!eq) return conf_error(file, line, "%s", "expected 'key = value'");
        char *key = trim(l, eq);
        char *value = trim(eq + 1, eq + 1 + strlen(eq + 1));
        int k;
        for (k = 0; k < K_COUNT; k++)
            if (strcmp(key, conf_keys[k]) == 0) break;
        if (k == K_COUNT) return conf_error(file, line, "unknown key '%.64s'", key);
        if (!*value) return conf_error(file, line, "no value for '%s'", key);
        conf[k].value = value;
        conf[k].file = file;
        conf[k].line = line;
    }
    return 0;
}

static int conf_bad(int k, const char *what)
{
    char msg[128];
    snprintf(msg, sizeof msg, "%s: %s", conf_keys[k], what);
    return conf_error(conf[k].file, conf[k].line, "%s", msg);
}

/* ------------------------------------------------------------------ */
/* Passwords                                                           */

static char password_buf[1024];

/* One line from fd, read byte by byte: what follows it stays for the
 * job, which inherits standard input.  Its length, or -1 at once at the
 * end of input, or -2 when the line is too long. */
static int read_line(int fd, char *buf, size_t size)
{
    size_t n = 0;
    int any = 0;
    for (;;) {
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        any = 1;
        if (c == '\n') break;
        if (n + 1 >= size) return -2;
        buf[n++] = c;
    }
    if (n > 0 && buf[n - 1] == '\r') n--;
    buf[n] = '\0';
    return any ? (int)n : -1;
}

static int ask_password(void)
{
    int tty = isatty(0);
    struct termios old, quiet;
    if (tty && tcgetattr(0, &old) == 0) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        quiet.c_lflag |= ECHONL;
        /* Echo off before the prompt: what is typed after it is kept. */
        tcsetattr(0, TCSAFLUSH, &quiet);
        fputs("Password: ", stderr);
        fflush(stderr);
    } else {
        tty = 0;
    }
    int n = read_line(0, password_buf, sizeof password_buf);
    if (tty) tcsetattr(0, TCSAFLUSH, &old);
    if (n == -2) return cli_err("--askpass: the password is too long"), CLI_EX_CONFIG;
    if (n <= 0)
        return cli_err("--askpass: no password on %s", tty ? "the terminal" : "standard input"),
               CLI_EX_CONFIG;
    return 0;
}

/* The first line of a file; `what` names the option or the setting. */
static int read_password_file(const char *path, const char *what)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return cli_err("%s %s: %s", what, path, strerror(errno)), CLI_EX_CONFIG;
    int n = read_line(fd, password_buf, sizeof password_buf);
    close(fd);
    if (n == -2) return cli_err("%s %s: the password is too long", what, path), CLI_EX_CONFIG;
    if (n <= 0) return cli_err("%s %s: no password in its first line", what, path), CLI_EX_CONFIG;
    return 0;
}

/* ------------------------------------------------------------------ */
/* URLs                                                                */

/* The pieces of a URL, still encoded; only as far as needed to replace
 * some of them. */
typedef struct url_parts {
    int tls, unix_socket;
    const char *user, *pass, *host, *port, *rest;
    size_t user_len, pass_len, host_len, port_len;
} url_parts;

static int split_url(const char *url, url_parts *u)
{
    memset(u, 0, sizeof *u);
    const char *sep = strstr(url, "://");
    if (!sep) return -1;
    size_t slen = (size_t)(sep - url);
    if (slen == 6 && strncasecmp(url, "rediss", 6) == 0) u->tls = 1;
    else if (slen == 4 && strncasecmp(url, "unix", 4) == 0) u->unix_socket = 1;
    else if (!(slen == 5 && strncasecmp(url, "redis", 5) == 0)) return -2;
    const char *a = sep + 3;
    size_t alen = strcspn(a, "/?#");
    u->rest = a + alen;
    const char *at = NULL;
    for (size_t i = alen; i > 0; i--)
        if (a[i - 1] == '@') {
            at = a + i - 1;
            break;
        }
    const char *hp = a;
    if (at) {
        const char *colon = memchr(a, ':', (size_t)(at - a));
        u->user = a;
        u->user_len = colon ? (size_t)(colon - a) : (size_t)(at - a);
        if (colon) {
            u->pass = colon + 1;
            u->pass_len = (size_t)(at - colon - 1);
        }
        hp = at + 1;
    }
    size_t hplen = (size_t)(a + alen - hp);
    const char *colon = NULL;
    if (hplen && hp[0] == '[') {
        const char *close = memchr(hp, ']', hplen);
        if (close && close + 1 < hp + hplen && close[1] == ':') colon = close + 1;
    } else {
        colon = memchr(hp, ':', hplen);
    }
    u->host = hp;
    u->host_len = colon ? (size_t)(colon - hp) : hplen;
    if (colon) {
        u->port = colon + 1;
        u->port_len = (size_t)(hp + hplen - colon - 1);
    }
    return 0;
}

typedef struct outbuf {
    char *p;
    size_t len, cap;
    int overflow;
} outbuf;

static void put(outbuf *b, const char *s, size_t n)
{
    if (n == 0) return; /* s may be NULL then: a part the URL lacks */
    if (b->len + n >= b->cap) {
        b->overflow = 1;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(outbuf *b, const char *s) { put(b, s, strlen(s)); }

/* Percent-encodes all but the unreserved characters (and `keep`). */
static void put_encoded(outbuf *b, const char *s, const char *keep)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c) || (keep && strchr(keep, c))) {
            put(b, s, 1);
        } else {
            char e[4];
            snprintf(e, sizeof e, "%%%02X", c);
            put(b, e, 3);
        }
    }
}

static char url_buf[8192];
static char server_buf[600];
static char key_buf[4096];

/* "host:port", "the Unix socket /path", for messages: never the user
 * information. */
static void describe(const url_parts *u)
{
    outbuf b = {server_buf, 0, sizeof server_buf, 0};
    server_buf[0] = '\0';
    if (u->unix_socket) {
        size_t n = strcspn(u->rest, "?#");
        puts_(&b, "the Unix socket ");
        put(&b, u->rest, n);
    } else {
        put(&b, u->host, u->host_len);
        puts_(&b, ":");
        if (u->port_len) put(&b, u->port, u->port_len);
        else puts_(&b, "6379");
        if (u->tls) puts_(&b, " with TLS");
    }
    if (b.overflow) snprintf(server_buf, sizeof server_buf, "the server");
}

/* Builds the URL from the base one with some parts replaced, into
 * out[cap]: 0, or -1 when it does not fit. */
static int compose(char *out, size_t cap, const url_parts *u, const char *host, int port,
                   const char *user, const char *password, int tls)
{
    outbuf b = {out, 0, cap, 0};
    int to_tcp = u->unix_socket && (host || port);
    int unix_socket = u->unix_socket && !to_tcp;
    puts_(&b, unix_socket ? "unix://" : tls || u->tls ? "rediss://" : "redis://");
    int has_user = user || u->user_len;
    if (has_user || password || u->pass) {
        if (user) put_encoded(&b, user, NULL);
        else put(&b, u->user, u->user_len);
        if (password) {
            puts_(&b, ":");
            put_encoded(&b, password, NULL);
        } else if (u->pass) {
            puts_(&b, ":");
            put(&b, u->pass, u->pass_len);
        }
        puts_(&b, "@");
    }
    if (unix_socket) {
        puts_(&b, u->rest);
    } else {
        if (host && strchr(host, ':')) {
            puts_(&b, "[");
            put_encoded(&b, host, ":");
            puts_(&b, "]");
        } else if (host) {
            put_encoded(&b, host, NULL);
        } else if (u->unix_socket) {
            puts_(&b, "127.0.0.1");
        } else {
            put(&b, u->host, u->host_len);
        }
        char p[16];
        if (port) {
            snprintf(p, sizeof p, ":%d", port);
            puts_(&b, p);
        } else if (u->port_len && !u->unix_socket) {
            puts_(&b, ":");
            put(&b, u->port, u->port_len);
        }
        /* A socket's database (?db=N) is the query; a TCP URL's path and
         * query stay as they were. */
        if (u->unix_socket) {
            const char *q = strchr(u->rest, '?');
            if (q) puts_(&b, q);
        } else {
            puts_(&b, u->rest);
        }
    }
    return b.overflow ? -1 : 0;
}

/* A bad URL, named by where it came from: a usage error on the command
 * line, a configuration error from a file or the environment; never
 * "unreachable", which wrappers retry. */
static int url_error(cli_opts *o, const char *msg)
{
    if (o->url_conf_line > 0) {
        cli_err("%s, line %d: url: %s", o->url_from, o->url_conf_line, msg);
        return CLI_EX_CONFIG;
    }
    if (strcmp(o->url_from, "--url") == 0) {
        cli_err("URL: %s", msg);
        return CLI_EX_USAGE;
    }
    cli_err("%s: %s", o->url_from, msg);
    return CLI_EX_CONFIG;
}

/* The run defaults of the files, checked as the options are. */
static int conf_defaults(cli_opts *o)
{
    static const int64_t min_ms[CLI_D_COUNT] = {1, 0, 0, 1, 0};
    for (int d = 0; d < CLI_D_COUNT; d++) {
        const conf_value *v = &conf[K_TTL + d];
        if (!v->value) continue;
        int64_t ms;
        if (cli_parse_duration(v->value, &ms) != 0 || ms < min_ms[d])
            return conf_bad(K_TTL + d, min_ms[d] ? "a duration such as 500ms, 10s or 5m, not 0"
                                                 : "a duration such as 500ms, 10s or 5m");
        if (d == CLI_D_TTL && rlk_plan_valid_ms(NULL, ms) <= 0)
            return conf_bad(K_TTL, "too short: the lock would be valid for no time");
        o->conf_ms[d] = ms;
        o->conf_set[d] = 1;
        snprintf(o->conf_where[d], sizeof o->conf_where[d], "%s, line %d", v->file, v->line);
    }
    return 0;
}

static int load(cli_opts *o)
{
    int r;
    const char *sys = getenv("RESPLOCK_CONFIG_SYSTEM");
    int sys_env = sys && *sys;
    if ((r = conf_load(0, sys_env ? sys : SYSTEM_CONFIG, 1, sys_env ? "RESPLOCK_CONFIG_SYSTEM" : NULL)))
        return r;
    const char *user_conf = getenv("RESPLOCK_CONFIG");
    if (user_conf && *user_conf && (r = conf_load(1, user_conf, 0, "RESPLOCK_CONFIG")) != 0) return r;
    return conf_defaults(o);
}

int cli_config(cli_opts *o)
{
    if (!o->loaded) {
        o->loaded = 1;
        o->load_code = load(o);
    }
    return o->load_code;
}

/* The password given on the command line, or in -u's URL, can be seen by
 * other users (ps): said unless --no-auth-warning. */
static void password_warning(const cli_opts *o, const url_parts *u)
{
    int in_url = o->url && *o->url && u->pass && u->pass_len;
    int in_arg = o->password_from == CLI_PW_ARG && o->password && *o->password;
    if ((in_url || in_arg) && !o->no_auth_warning)
        cli_err("warning: a password on the command line can be seen by other users; "
                "use --askpass, --pass-file or $REDISCLI_AUTH (--no-auth-warning: not this "
                "warning)");
}

static int resolve(cli_opts *o)
{
    int r;
    if ((r = cli_config(o)) != 0) return r;

    /* The settings that are not the server's address. */
    if (!o->timeout_set && conf[K_TIMEOUT].value &&
        (cli_parse_duration(conf[K_TIMEOUT].value, &o->timeout_ms) != 0 || o->timeout_ms <= 0 ||
         o->timeout_ms > 86400000))
        return conf_bad(K_TIMEOUT, "a duration such as 500ms or 5s");
    if (!o->prefix) o->prefix = conf[K_PREFIX].value;
    if (!o->tls.ca_file) o->tls.ca_file = conf[K_CACERT].value;
    if (!o->tls.ca_dir) o->tls.ca_dir = conf[K_CACERTDIR].value;
    if (!o->tls.cert_file) o->tls.cert_file = conf[K_CERT].value;
    if (!o->tls.key_file) o->tls.key_file = conf[K_KEY].value;
    if (!o->tls.server_name) o->tls.server_name = conf[K_SNI].value;

    /* The server: --url, then $RESPLOCK_URL, each whole; then the file's
     * server settings (url, host, port, user, password-file, tls: any of
     * them makes it the file's server, on its url or the default); then
     * $REDIS_URL, an application's variable, which never beats what an
     * operator wrote in a file; then the default. */
    const char *env = getenv("RESPLOCK_URL");
    const char *redis_env = getenv("REDIS_URL");
    int conf_server = 0;
    for (int k = K_URL; k <= K_TLS; k++) conf_server = conf_server || conf[k].value;
    const char *base;
    int from_conf = 0;
    o->url_conf_line = 0;
    if (o->url && *o->url) {
        base = o->url;
        o->url_from = "--url";
    } else if (env && *env) {
        base = env;
        o->url_from = "$RESPLOCK_URL";
    } else if (conf_server || !redis_env || !*redis_env) {
        from_conf = 1;
        base = conf[K_URL].value ? conf[K_URL].value : DEFAULT_URL;
        o->url_from = conf[K_URL].value ? conf[K_URL].file : "the default URL";
        o->url_conf_line = conf[K_URL].value ? conf[K_URL].line : 0;
    } else {
        base = redis_env;
        o->url_from = "$REDIS_URL";
    }
    int ck = K_URL; /* the file's first server setting */
    while (ck < K_TLS && !conf[ck].value) ck++;
    if (!from_conf && conf_server) {
        int k = ck;
        cli_verbose("%s, line %d: the file's server settings are not used: the server is %s's",
                    conf[k].file, conf[k].line, o->url_from);
    }
    url_parts u;
    int split = split_url(base, &u);
    password_warning(o, &u);

    /* The file's values are checked even when something overrides
     * them: an error shows up on the day it is made. */
    int conf_port = 0, conf_tls = 0;
    if (conf[K_PORT].value) {
        char *end;
        long v = strtol(conf[K_PORT].value, &end, 10);
        if (*end || v < 1 || v > 65535) return conf_bad(K_PORT, "a port number, 1 to 65535");
        conf_port = (int)v;
    }
    if (conf[K_TLS].value) {
        const char *t = conf[K_TLS].value;
        if (!strcmp(t, "yes") || !strcmp(t, "true") || !strcmp(t, "on") || !strcmp(t, "1"))
            conf_tls = 1;
        else if (strcmp(t, "no") && strcmp(t, "false") && strcmp(t, "off") && strcmp(t, "0"))
            return conf_bad(K_TLS, "yes or no");
    }
    const char *host = o->host, *user = o->user, *password = NULL;
    int port = o->port, tls = o->tls_on;
    if (from_conf) {
        if (!host) host = conf[K_HOST].value;
        if (!user) user = conf[K_USER].value;
        if (!port) port = conf_port;
        tls = tls || conf_tls;
    }
    switch (o->password_from) {
    case CLI_PW_ARG: password = o->password; break;
    case CLI_PW_ASK:
        if ((r = ask_password()) != 0) return r;
        password = password_buf;
        break;
    case CLI_PW_FILE:
        if ((r = read_password_file(o->pass_file, "--pass-file")) != 0) return r;
        password = password_buf;
        break;
    default:
        if (from_conf && conf[K_PASSWORD_FILE].value) {
            char what[1100];
            snprintf(what, sizeof what, "%s, line %d: password-file", conf[K_PASSWORD_FILE].file,
                     conf[K_PASSWORD_FILE].line);
            if ((r = read_password_file(conf[K_PASSWORD_FILE].value, what)) != 0) return r;
            password = password_buf;
        } else if (!u.pass) {
            /* As redis-cli: when nothing else gave one. */
            const char *a = getenv("REDISCLI_AUTH");
            if (a && *a) password = a;
        }
    }

    if (tls && u.unix_socket && !host && !port)
        return cli_err("--tls: the server is a Unix socket (%s); TLS needs a host", o->url_from),
               CLI_EX_USAGE;
    o->final_url = base;
    o->server = "the server";
    if (rlk__url_is_sentinel(base) &&
        (o->nseeds || host || port || user || o->password_from != CLI_PW_NONE || tls))
        return url_error(o, o->nseeds ? "a Sentinel URL lists its sentinels itself: give one -u"
                                      : "a Sentinel URL carries its own user and password "
                                        "(-h, -p, --user, -a and --tls do not apply to it)");
    if (split != 0 && !(host || port || user || password || tls))
        return 0; /* the library says what is wrong with it */
    if (split == -1) return url_error(o, "missing scheme (redis://, rediss://, unix://)");
    if (split == -2) return url_error(o, "unknown scheme (redis://, rediss://, unix://)");
    if (host || port || user || password || tls) {
        if (compose(url_buf, sizeof url_buf, &u, host, port, user, password, tls) != 0)
            return cli_err("the server's URL is too long"), CLI_EX_USAGE;
        o->final_url = url_buf;
        split_url(url_buf, &u);
    }
    describe(&u);
    o->server = server_buf;
    if (from_conf && redis_env && *redis_env) {
        /* The file wins; said once, when $REDIS_URL names another server. */
        char mine[sizeof server_buf];
        url_parts e;
        snprintf(mine, sizeof mine, "%s", server_buf);
        if (split_url(redis_env, &e) != 0) snprintf(server_buf, sizeof server_buf, "?");
        else describe(&e);
        if (strcmp(mine, server_buf) != 0)
            cli_err("warning: $REDIS_URL (%s) is not used: the settings in %s name the server "
                    "(%s); to use another, give -u or $RESPLOCK_URL",
                    server_buf, conf[ck].file, mine);
        snprintf(server_buf, sizeof server_buf, "%s", mine);
    }
    if (u.tls && !rlk_tls_library())
        return cli_err("TLS support not compiled in (%s asks for TLS)", server_buf), CLI_EX_CONFIG;
    return 0;
}

int cli_resolve(cli_opts *o)
{
    if (!o->resolved) {
        o->resolved = 1;
        o->resolve_code = resolve(o);
    }
    return o->resolve_code;
}

const char *cli_node_url(const cli_opts *o, const char *host, int port)
{
    static char node_buf[sizeof url_buf];
    url_parts u;
    if (!o->resolved || o->resolve_code || split_url(o->final_url, &u) != 0 ||
        compose(node_buf, sizeof node_buf, &u, host, port, NULL, NULL, 0) != 0)
        return NULL;
    return node_buf;
}

const char *cli_key(const cli_opts *o, const char *name)
{
    if (!o->prefix || !*o->prefix) return name;
    size_t pl = strlen(o->prefix), nl = strlen(name);
    if (pl + nl >= sizeof key_buf) return NULL;
    memcpy(key_buf, o->prefix, pl);
    memcpy(key_buf + pl, name, nl + 1);
    return key_buf;
}

/* The server closed a plain connection, or answered it with what is not
 * RESP: a TLS port's way of refusing it. */
static int maybe_tls_port(int status, const char *msg)
{
    if (status == RLK_ERR_PROTO) return 1;
    return (status == RLK_ERR_IO || status == RLK_ERR_CLOSED || status == RLK_ERR_CONNECT) &&
           (strstr(msg, "reset by peer") || strstr(msg, "closed") || strstr(msg, "end of"));
}

int cli_connect_error(cli_opts *o, int status, const char *msg)
{
    /* The library names a bad URL "URL: ..."; say which one. */
    if (status == RLK_ERR_URL && o->url_from) {
        const char *u = strstr(msg, "URL: ");
        return url_error(o, u ? u + 5 : msg);
    }
    url_parts u;
    int plain_tcp = o->final_url && split_url(o->final_url, &u) == 0 && !u.tls && !u.unix_socket;
    /* A URL from -u or $RESPLOCK_URL takes none of the file's server
     * settings ($REDIS_URL is used only when the file has none). */
    int file_pw_unused = conf[K_PASSWORD_FILE].value && o->url_from &&
                         (!strcmp(o->url_from, "--url") || !strcmp(o->url_from, "$RESPLOCK_URL"));
    if (status == RLK_ERR_AUTH && file_pw_unused)
        cli_err("%s (the password: --askpass or --pass-file FILE; the password-file of %s, "
                "line %d, is for the file's server, not %s's)", msg, conf[K_PASSWORD_FILE].file,
                conf[K_PASSWORD_FILE].line, o->url_from);
    else if (status == RLK_ERR_AUTH)
        cli_err("%s (the password: --askpass, --pass-file FILE, or password-file in the "
                "configuration file)", msg);
    else if (plain_tcp && maybe_tls_port(status, msg))
        cli_err("%s (does the server want TLS? use rediss://)", msg);
    else
        cli_err("%s", msg);
    return cli_exit_for(status);
}
