/* SPDX-License-Identifier: BSD-3-Clause */
/* Connection URLs: redis://, rediss://, unix://.
 *
 * Error messages quote only the scheme (when it looks like one) and
 * parameter names, never any part of the user information, so a
 * password cannot end up in a log through a typo elsewhere in the URL. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "url.h"
#include "internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_URL "redis://127.0.0.1:6379"

static int fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen) snprintf(err, errlen, "URL: %s", msg);
    return RLK_ERR_URL;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into a new string.  RLK_OK, RLK_ERR_URL (bad
 * escape or %00, which a C string cannot carry), RLK_ERR_NOMEM. */
static int decode(const char *s, size_t n, char **out)
{
    char *d = rlk__malloc(n + 1);
    size_t i, j = 0;
    *out = NULL;
    if (!d) return RLK_ERR_NOMEM;
    for (i = 0; i < n; i++) {
        if (s[i] != '%') {
            d[j++] = s[i];
            continue;
        }
        if (i + 2 >= n) goto bad; /* fewer than two characters left */
        if (hexval((unsigned char)s[i + 1]) < 0 || hexval((unsigned char)s[i + 2]) < 0) goto bad;
        d[j] = (char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]));
        if (d[j] == '\0') goto bad;
        j++;
        i += 2;
    }
    d[j] = '\0';
    *out = d;
    return RLK_OK;
bad:
    rlk__free(d);
    return RLK_ERR_URL;
}

/* Decodes one component, naming it in the error. */
static int decode_part(const char *s, size_t n, char **out, const char *what, char *err,
                       size_t errlen)
{
    char msg[64];
    int rc = decode(s, n, out);
    if (rc == RLK_ERR_URL) {
        snprintf(msg, sizeof msg, "bad percent-encoding in the %s", what);
        return fail(err, errlen, msg);
    }
    if (rc == RLK_ERR_NOMEM && err && errlen) snprintf(err, errlen, "out of memory");
    return rc;
}

/* A non-negative decimal integer of at most max, digits only. */
static int parse_uint(const char *s, size_t n, long max, long *out)
{
    long v = 0;
    size_t i;
    if (n == 0) return 0;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (s[i] - '0');
        if (v > max) return 0;
    }
    *out = v;
    return 1;
}

/* The query: only db=N.  *db is -1 when absent. */
static int parse_query(const char *q, size_t n, long *db, char *err, size_t errlen)
{
    char msg[96];
    /* An '@' after the '?' means the '?' was in an unencoded password:
     * then no name is quoted, it would be a piece of the password. */
    int quiet = memchr(q, '@', n) != NULL;
    *db = -1;
    while (n > 0) {
        const char *amp = memchr(q, '&', n);
        size_t len = amp ? (size_t)(amp - q) : n;
        const char *eq = memchr(q, '=', len);
        size_t klen = eq ? (size_t)(eq - q) : len;
        if (len > 0) {
            if (klen == 2 && memcmp(q, "db", 2) == 0) {
                if (*db >= 0) return fail(err, errlen, "database given twice");
                if (!eq || !parse_uint(eq + 1, len - 3, INT_MAX, db))
                    return fail(err, errlen, "bad database number");
            } else {
                int shown = (int)(klen > 32 ? 32 : klen);
                size_t i;
                for (i = 0; i < (size_t)shown; i++)
                    if (!isalnum((unsigned char)q[i]) && q[i] != '_' && q[i] != '-') break;
                if (i == (size_t)shown && shown > 0 && !quiet) {
                    snprintf(msg, sizeof msg, "unknown parameter '%.*s' (only db=N)", shown, q);
                    return fail(err, errlen, msg);
                }
                return fail(err, errlen, "unknown parameter (only db=N)");
            }
        }
        if (!amp) break;
        n -= len + 1;
        q = amp + 1;
    }
    return RLK_OK;
}

/* Splits "user[:password]" (still encoded) and decodes both. */
static int parse_userinfo(rlk__url *u, const char *s, size_t n, char *err, size_t errlen)
{
    const char *colon = memchr(s, ':', n);
    size_t ulen = colon ? (size_t)(colon - s) : n;
    int rc;
    if (ulen > 0) {
        rc = decode_part(s, ulen, &u->user, "user name", err, errlen);
        if (rc != RLK_OK) return rc;
    }
    if (colon && n - ulen - 1 > 0) {
        rc = decode_part(colon + 1, n - ulen - 1, &u->password, "password", err, errlen);
        if (rc != RLK_OK) return rc;
    }
    return RLK_OK;
}

static int bad_host_char(int c)
{
    return c <= ' ' || c == 0x7f || c == '[' || c == ']' || c == '/' || c == '?' || c == '#' ||
           c == '@';
}

/* host[:port] or [v6]:port, at s[0..n). */
static int parse_hostport(rlk__url *u, const char *s, size_t n, char *err, size_t errlen)
{
    const char *hs = s, *colon = NULL, *pe;
    size_t hlen, i;
    long port;
    int rc;
    unsigned char addr[16];

    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close) return fail(err, errlen, "missing ']' after an IPv6 address");
        hs = s + 1;
        hlen = (size_t)(close - hs);
        pe = close + 1;
        if (pe < s + n) {
            if (*pe != ':') return fail(err, errlen, "unexpected text after ']'");
            colon = pe;
        }
    } else {
        colon = memchr(s, ':', n);
        hlen = colon ? (size_t)(colon - s) : n;
    }
    if (hlen == 0) return fail(err, errlen, "missing host");
    rc = decode_part(hs, hlen, &u->host, "host", err, errlen);
    if (rc != RLK_OK) return rc;
    if (hs != s) {
        /* An address with an optional zone: fe80::1%25eth0 */
        char *pct = strchr(u->host, '%'), save = 0;
        if (pct) {
            save = *pct;
            *pct = '\0';
        }
        rc = inet_pton(AF_INET6, u->host, addr) == 1 && (!pct || pct[1]);
        if (pct) *pct = save;
        if (!rc) return fail(err, errlen, "bad IPv6 address");
    } else {
        for (i = 0; u->host[i]; i++)
            if (bad_host_char((unsigned char)u->host[i]) || u->host[i] == ':')
                return fail(err, errlen, "bad character in the host");
    }
    if (colon) {
        size_t plen = (size_t)(s + n - colon - 1);
        if (!parse_uint(colon + 1, plen, 65535, &port) || port < 1)
            return fail(err, errlen, "bad port");
        u->port = (int)port;
    }
    return RLK_OK;
}

static int parse(rlk__url *u, const char *url, char *err, size_t errlen)
{
    const char *sep = strstr(url, "://"), *rest, *end, *q, *at, *path;
    size_t slen = sep ? (size_t)(sep - url) : 0, alen, i;
    long db = -1, qdb;
    char msg[96];
    int rc;

    for (i = 0; url[i]; i++)
        if ((unsigned char)url[i] < 0x20 || url[i] == 0x7f)
            return fail(err, errlen, "control character in the URL");
    if (!sep) return fail(err, errlen, "missing scheme (redis://, rediss://, unix://)");
    if (slen == 5 && strncasecmp(url, "redis", 5) == 0)
        u->kind = RLK__URL_TCP;
    else if (slen == 6 && strncasecmp(url, "rediss", 6) == 0)
        u->kind = RLK__URL_TLS;
    else if (slen == 4 && strncasecmp(url, "unix", 4) == 0)
        u->kind = RLK__URL_UNIX;
    else {
        /* Quote the scheme only when it looks like one (RFC 3986): text
         * before "://" could otherwise be anything, a password included. */
        int plausible = slen > 0 && slen <= 16 && isalpha((unsigned char)url[0]);
        for (i = 0; plausible && i < slen; i++)
            plausible =
                isalnum((unsigned char)url[i]) || url[i] == '+' || url[i] == '-' || url[i] == '.';
        if (plausible)
            snprintf(msg, sizeof msg, "unknown scheme '%.*s' (redis://, rediss://, unix://)",
                     (int)slen, url);
        else
            snprintf(msg, sizeof msg, "unknown scheme (redis://, rediss://, unix://)");
        return fail(err, errlen, msg);
    }
    rest = sep + 3;
    end = rest + strlen(rest);
    if (memchr(rest, '#', (size_t)(end - rest)))
        return fail(err, errlen, "fragment ('#') not allowed");
    q = memchr(rest, '?', (size_t)(end - rest));
    if (q) {
        rc = parse_query(q + 1, (size_t)(end - q - 1), &qdb, err, errlen);
        if (rc != RLK_OK) return rc;
        end = q;
    } else {
        qdb = -1;
    }

    /* The authority ends at the first '/'; user information ends at its
     * last '@', so an unencoded '@' in a password still works. */
    path = memchr(rest, '/', (size_t)(end - rest));
    alen = path ? (size_t)(path - rest) : (size_t)(end - rest);
    at = NULL;
    for (i = alen; i > 0; i--)
        if (rest[i - 1] == '@') {
            at = rest + i - 1;
            break;
        }
    if (at) {
        rc = parse_userinfo(u, rest, (size_t)(at - rest), err, errlen);
        if (rc != RLK_OK) return rc;
    }

    if (u->kind == RLK__URL_UNIX) {
        if (at ? at + 1 != rest + alen : alen != 0)
            return fail(err, errlen,
                        "unix:// takes no host (unix:///path or unix://user:pass@/path)");
        if (!path || end - path <= 0) return fail(err, errlen, "missing socket path");
        rc = decode_part(path, (size_t)(end - path), &u->path, "socket path", err, errlen);
        if (rc != RLK_OK) return rc;
        if (strcmp(u->path, "/") == 0) return fail(err, errlen, "missing socket path");
    } else {
        const char *hp = at ? at + 1 : rest;
        rc = parse_hostport(u, hp, (size_t)(rest + alen - hp), err, errlen);
        if (rc != RLK_OK) return rc;
        if (path && end - path > 1) {
            if (!parse_uint(path + 1, (size_t)(end - path - 1), INT_MAX, &db))
                return fail(err, errlen, "bad database number");
        }
    }
    if (qdb >= 0) {
        if (db >= 0) return fail(err, errlen, "database given twice");
        db = qdb;
    }
    u->db = db >= 0 ? (int)db : 0;
    return RLK_OK;
}

int rlk__url_parse(rlk__url *u, const char *url, char *err, size_t errlen)
{
    int rc;
    memset(u, 0, sizeof *u);
    u->port = 6379;
    if (err && errlen) err[0] = '\0';
    if (!url || !*url) {
        url = getenv("REDIS_URL");
        if (!url || !*url) url = DEFAULT_URL;
    }
    rc = parse(u, url, err, errlen);
    if (rc != RLK_OK) rlk__url_free(u);
    return rc;
}

void rlk__url_free(rlk__url *u)
{
    if (!u) return;
    rlk__free(u->user);
    rlk__free(u->password);
    rlk__free(u->host);
    rlk__free(u->path);
    memset(u, 0, sizeof *u);
    u->port = 6379;
}

/* ------------------------------------------------------------------ */
/* A connection's configuration, kept                                   */

static size_t str_size(const char *s) { return s ? strlen(s) + 1 : 0; }

static const char *copy_str(char **dst, const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    memcpy(*dst, s, n);
    const char *r = *dst;
    *dst += n;
    return r;
}

int rlk__conn_config_copy(rlk_conn_config *cfg, char **strings)
{
    const rlk_conn_config s = *cfg;
    size_t need = str_size(s.url) + str_size(s.client_name) +
                  str_size(s.tls.ca_file) + str_size(s.tls.ca_dir) +
                  str_size(s.tls.cert_file) + str_size(s.tls.key_file) +
                  str_size(s.tls.server_name);
    *strings = NULL;
    if (!need) return RLK_OK;
    char *p = *strings = rlk__malloc(need);
    if (!p) return RLK_ERR_NOMEM;
    cfg->url = copy_str(&p, s.url);
    cfg->client_name = copy_str(&p, s.client_name);
    cfg->tls.ca_file = copy_str(&p, s.tls.ca_file);
    cfg->tls.ca_dir = copy_str(&p, s.tls.ca_dir);
    cfg->tls.cert_file = copy_str(&p, s.tls.cert_file);
    cfg->tls.key_file = copy_str(&p, s.tls.key_file);
    cfg->tls.server_name = copy_str(&p, s.tls.server_name);
    return RLK_OK;
}

/* ------------------------------------------------------------------ */
/* Sentinel URLs                                                        */

/* The scheme's length when url is a Sentinel URL's ("redis+sentinel"
 * or "rediss+sentinel"), else 0. */
static size_t sentinel_scheme(const char *url)
{
    if (!url) return 0;
    if (strncasecmp(url, "redis+sentinel://", 17) == 0) return 14;
    if (strncasecmp(url, "rediss+sentinel://", 18) == 0) return 15;
    return 0;
}

int rlk__url_is_sentinel(const char *url)
{
    if (!url || !*url) url = getenv("REDIS_URL");
    return sentinel_scheme(url) != 0;
}

/* Appends n bytes of s at *w. */
static void put(char **w, const char *s, size_t n)
{
    memcpy(*w, s, n);
    *w += n;
}

int rlk__sentinel_url_split(rlk__sentinel_url *s, const char *url, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (err && errlen) err[0] = '\0';
    if (!url || !*url) url = getenv("REDIS_URL");
    size_t slen = sentinel_scheme(url);
    if (!slen) return fail(err, errlen, "not a Sentinel URL (redis+sentinel://, rediss+sentinel://)");
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return fail(err, errlen, "control character in the URL");
    const char *scheme = slen == 15 ? "rediss://" : "redis://";
    const char *rest = url + slen + 3, *end = rest + strlen(rest);
    if (memchr(rest, '#', (size_t)(end - rest))) return fail(err, errlen, "fragment ('#') not allowed");
    const char *q = memchr(rest, '?', (size_t)(end - rest)), *qend = end;
    if (q) end = q++;
    const char *slash = memchr(rest, '/', (size_t)(end - rest));
    if (!slash || slash + 1 >= end)
        return fail(err, errlen, "Sentinel URL: no primary's name (redis+sentinel://HOST:PORT[,...]/NAME)");
    const char *at = NULL;
    for (const char *p = rest; p < slash; p++)
        if (*p == '@') at = p;
    const char *hosts = at ? at + 1 : rest;
    /* The name, then an optional /db. */
    const char *name = slash + 1, *nend = memchr(name, '/', (size_t)(end - name));
    const char *db = nend ? nend + 1 : NULL;
    if (!nend) nend = end;
    if (nend == name) return fail(err, errlen, "Sentinel URL: an empty primary's name");
    for (const char *p = name; p < nend; p++)
        if (*p == '%' || *p == ' ')
            return fail(err, errlen, "Sentinel URL: the primary's name must be plain (no '%' or space)");
    /* The query: the sentinels' own credentials, nothing else. */
    const char *su = NULL, *sp = NULL;
    size_t sul = 0, spl = 0;
    for (const char *p = q; p && p < qend;) {
        const char *amp = memchr(p, '&', (size_t)(qend - p)), *e = amp ? amp : qend;
        size_t n = (size_t)(e - p);
        if (n > 14 && memcmp(p, "sentinel_user=", 14) == 0) {
            su = p + 14;
            sul = n - 14;
        } else if (n > 18 && memcmp(p, "sentinel_password=", 18) == 0) {
            sp = p + 18;
            spl = n - 18;
        } else {
            return fail(err, errlen, "Sentinel URL: unknown query parameter (sentinel_user=, "
                                     "sentinel_password=)");
        }
        p = e + 1;
    }
    /* Each string is shorter than the URL and a default port. */
    size_t count = 1;
    for (const char *p = hosts; p < slash; p++) count += *p == ',';
    char *w = rlk__malloc(((size_t)(qend - url) + 8) * (count + 2));
    if (!w) {
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return RLK_ERR_NOMEM;
    }
    s->block = w;
    /* The primary's name. */
    s->master = w;
    put(&w, name, (size_t)(nend - name));
    *w++ = '\0';
    /* Each sentinel: host[:port], 26379 by default. */
    const char *h = hosts, *first = NULL;
    for (;;) {
        const char *comma = memchr(h, ',', (size_t)(slash - h)), *he = comma ? comma : slash;
        if (he == h) {
            rlk__sentinel_url_free(s);
            return fail(err, errlen, "Sentinel URL: an empty sentinel address");
        }
        if (s->n == RLK__SENTINELS_MAX) {
            rlk__sentinel_url_free(s);
            return fail(err, errlen, "Sentinel URL: more than 16 sentinels");
        }
        const char *close = *h == '[' ? memchr(h, ']', (size_t)(he - h)) : NULL;
        const char *colon = memchr(close ? close : h, ':', (size_t)(he - (close ? close : h)));
        s->sentinels[s->n++] = w;
        put(&w, scheme, strlen(scheme));
        if (su || sp) {
            if (su) put(&w, su, sul);
            if (sp) {
                *w++ = ':';
                put(&w, sp, spl);
            }
            *w++ = '@';
        }
        if (!first) first = w;
        put(&w, h, (size_t)(he - h));
        if (!colon) put(&w, ":26379", 6);
        *w++ = '\0';
        if (!comma) break;
        h = comma + 1;
    }
    /* The data nodes' URL: the URL's own credentials and db, at the
     * first sentinel's address until a sentinel names the primary. */
    s->data = w;
    put(&w, scheme, strlen(scheme));
    if (at) put(&w, rest, (size_t)(at - rest + 1));
    put(&w, first, strlen(first));
    if (db) {
        *w++ = '/';
        put(&w, db, (size_t)(end - db));
    }
    *w = '\0';
    return RLK_OK;
}

void rlk__sentinel_url_free(rlk__sentinel_url *s)
{
    rlk__free(s->block);
    memset(s, 0, sizeof *s);
}
