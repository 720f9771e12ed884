/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A lock's names: the keys derived from its name in its Cluster slot,
 * and the readings of the replies that carry its fence and window.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "keys.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint16_t crc16(const char *s, size_t n)
{
    /* CRC-16/XMODEM (polynomial 0x1021), the hash of Redis Cluster's key
     * slots, four bits at a time: nib[i] is the CRC of the nibble i
     * shifted out of the top (32 bytes of table instead of 512, and a
     * quarter of the bitwise loop's steps: this runs once per acquire). */
    static const uint16_t nib[16] = {0x0000, 0x1021, 0x2042, 0x3063, 0x4084, 0x50a5,
                                     0x60c6, 0x70e7, 0x8108, 0x9129, 0xa14a, 0xb16b,
                                     0xc18c, 0xd1ad, 0xe1ce, 0xf1ef};
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char b = (unsigned char)s[i];
        crc = (uint16_t)((crc << 4) ^ nib[(crc >> 12) ^ (b >> 4)]);
        crc = (uint16_t)((crc << 4) ^ nib[(crc >> 12) ^ (b & 15u)]);
    }
    return crc;
}

/* The hash tag of a key: what the slot is computed from. */
static void hash_part(const char *k, size_t n, const char **p, size_t *pn)
{
    const char *open = memchr(k, '{', n);
    if (open) {
        const char *close = memchr(open + 1, '}', n - (size_t)(open + 1 - k));
        if (close && close > open + 1) {
            *p = open + 1;
            *pn = (size_t)(close - open - 1);
            return;
        }
    }
    *p = k;
    *pn = n;
}

unsigned rlk__keyslot(const char *k, size_t n)
{
    const char *p;
    size_t pn;
    hash_part(k, n, &p, &pn);
    return crc16(p, pn) & 16383u;
}

/*
 * A key for `what` ("queue", "waiters", "released") in NAME's slot: NAME:what when
 * NAME has a hash tag, {NAME}:what when it has no '}', else a computed
 * tag of the same slot.  Written into out (at least 2*len(name)+64).
 */
static void derived_key(const char *name, const char *what, char *out, size_t cap)
{
    size_t n = strlen(name);
    const char *p;
    size_t pn;
    hash_part(name, n, &p, &pn);
    if (p != name || pn != n) {
        snprintf(out, cap, "%s:%s", name, what);
    } else if (!memchr(name, '}', n)) {
        snprintf(out, cap, "{%s}:%s", name, what);
    } else {
        unsigned slot = rlk__keyslot(name, n);
        char tag[16];
        for (unsigned i = 0;; i++) {
            int tl = snprintf(tag, sizeof tag, "s%u", i);
            if ((crc16(tag, (size_t)tl) & 16383u) == slot) break;
        }
        snprintf(out, cap, "resplock:%s:{%s}:%s", what, tag, name);
    }
}

size_t rlk__key_cap(const char *name) { return 2 * strlen(name) + 64; }


void rlk__make_keys(const char *name, char *buf, size_t cap)
{
    static const char *const what[3] = {"queue", "waiters", "released"};
    size_t n = strlen(name);
    memcpy(buf, name, n + 1);
    if (!memchr(name, '{', n) && !memchr(name, '}', n)) {
        /* The common case, {NAME}:what, without formatting. */
        for (int i = 0; i < 3; i++) {
            char *o = buf + (size_t)(i + 1) * cap;
            *o++ = '{';
            memcpy(o, name, n);
            o += n;
            *o++ = '}';
            *o++ = ':';
            memcpy(o, what[i], strlen(what[i]) + 1);
        }
    } else {
        for (int i = 0; i < 3; i++) derived_key(name, what[i], buf + (size_t)(i + 1) * cap, cap);
    }
    /* Redisson's name of it (its prefixName): braces around NAME, unless
     * NAME has some already. */
    char *ch = buf + RLK__K_CHANNEL * cap;
    int braced = memchr(name, '{', n) != NULL;
    size_t pl = sizeof RLK__RELEASE_CHANNEL_PREFIX - 1 - (size_t)braced;
    memcpy(ch, RLK__RELEASE_CHANNEL_PREFIX, pl);
    memcpy(ch + pl, name, n);
    memcpy(ch + pl + n, braced ? "" : "}", braced ? 1 : 2);
}

/* The fence of a TIME reply: the server's clock in microseconds.  0
 * when the reply is not one. */
uint64_t rlk__fence_of_time(const rlk_resp_value *v)
{
    const rlk_resp_value *sec = rlk_resp_value_at(v, 0), *us = rlk_resp_value_at(v, 1);
    uint64_t f[2] = {0, 0};
    const rlk_resp_value *part[2] = {sec, us};
    for (int i = 0; i < 2; i++) {
        if (!part[i] || !part[i]->str || part[i]->len == 0 || part[i]->len > 12) return 0;
        for (size_t j = 0; j < part[i]->len; j++) {
            char ch = part[i]->str[j];
            if (ch < '0' || ch > '9') return 0;
            f[i] = f[i] * 10 + (uint64_t)(ch - '0');
        }
    }
    return f[1] < 1000000 ? f[0] * 1000000 + f[1] : 0;
}

uint64_t rlk__window_end(const rlk_resp_value *v)
{
    if (v->type != RLK_RESP_BULK || !v->str || v->len < 3 || v->len > 17 ||
        memcmp(v->str, "y ", 2) != 0)
        return 0;
    uint64_t end = 0;
    for (size_t j = 2; j < v->len; j++) {
        char ch = v->str[j];
        if (ch < '0' || ch > '9') return 0;
        end = end * 10 + (uint64_t)(ch - '0');
    }
    return end;
}

/* src into out, every byte outside [A-Za-z0-9._/@:-] as %XX (so that a
 * token holds no space, ';' or '+'), at most max bytes, an escape never
 * cut; returns the length. */
static size_t put_enc(char *out, const char *src, size_t max)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || strchr("._/@:-", *p);
        if (n + (plain ? 1 : 3) > max) break;
        if (plain) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    return n;
}

void rlk__facts_host(char *out)
{
    char host_name[256];
    if (gethostname(host_name, sizeof host_name - 1) != 0) host_name[0] = '\0';
    host_name[sizeof host_name - 1] = '\0';
    out[put_enc(out, host_name, RLK_HOLDER_HOST_MAX)] = '\0';
}

size_t rlk__facts_make(const char *host, char *out, const char *cmd)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    size_t n = strlen(host);
    memcpy(out, "h=", 2);
    memcpy(out + 2, host, n);
    n += 2;
    memcpy(out + n, ";p=", 3);
    n += 3 + rlk__i64_dec(out + n + 3, rlk__pid());
    memcpy(out + n, ";t=", 3);
    n += 3 + rlk__i64_dec(out + n + 3, (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    if (cmd && *cmd) {
        memcpy(out + n, ";c=", 3);
        n += 3 + put_enc(out + n + 3, cmd, RLK_HOLDER_CMD_MAX);
    }
    out[n] = '\0';
    return n;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
         : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decodes at most max bytes of [p, end) (%XX escapes) into out (the
 * value is not NUL-terminated: nothing past end is read). */
static void get_enc(char *out, size_t max, const char *p, const char *end)
{
    size_t n = 0;
    for (; p < end && n < max; p++) {
        int hi = *p == '%' && end - p >= 3 ? hexval(p[1]) : -1, lo = hi >= 0 ? hexval(p[2]) : -1;
        if (lo >= 0 && (hi || lo)) {
            out[n++] = (char)(hi * 16 + lo);
            p += 2;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

void rlk__facts_read(rlk_lock_status *st, const char *f, size_t len)
{
    const char *end = f + len;
    if (len >= 2 && memcmp(end - 2, "+w", 2) == 0) end -= 2; /* the waiters' mark */
    for (const char *p = f; p < end;) {
        const char *semi = memchr(p, ';', (size_t)(end - p));
        const char *e = semi ? semi : end;
        char num[24];
        if (e - p > 2 && p[1] == '=') {
            if (p[0] == 'h') get_enc(st->host, RLK_HOLDER_HOST_MAX, p + 2, e);
            else if (p[0] == 'k' && p[2] == 'f' && e - p == 3) st->kind = RLK_LOCK_FAIR;
            else if (p[0] == 'c') get_enc(st->cmd, RLK_HOLDER_CMD_MAX, p + 2, e);
            if (p[0] == 'p' || p[0] == 't') {
                get_enc(num, sizeof num - 1, p + 2, e);
                *(p[0] == 'p' ? &st->pid : &st->since_ms) = strtoll(num, NULL, 10);
            }
            st->has_facts = 1;
        }
        p = e + 1;
    }
}
