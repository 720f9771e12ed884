/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every lock front end shares (the sans-I/O session in session.c,
 * the blocking client in client.c): tokens from the kernel's random bytes,
 * the keys derived from a lock's name in its Cluster slot, and the
 * readings of replies they both make.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "keys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Random bytes from the kernel; a lock token must not be guessable or
 * shared, so there is no weaker fallback than /dev/urandom. */
static int kernel_random(unsigned char *out, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(out + got, n - got, 0);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        break;
    }
    if (got == n) return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    while (got < n) {
        ssize_t r = read(fd, out + got, n - got);
        if (r <= 0 && !(r < 0 && errno == EINTR)) break;
        if (r > 0) got += (size_t)r;
    }
    close(fd);
    return got == n ? 0 : -1;
}

/*
 * Random bytes for tokens, taken from the kernel 512 bytes at a time (a
 * system call per 32 tokens instead of one per token).  Each byte is
 * handed out once; a forked child starts with an empty pool, so parent
 * and child never share a token.
 */
static struct {
    pthread_mutex_t mu;
    unsigned char buf[512];
    size_t left;
} pool = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_forked(void)
{
    /* Only this thread exists in the child; the mutex was held by the
     * forking thread (see pool_prepare), so it is re-made. */
    pthread_mutex_init(&pool.mu, NULL);
    memset(pool.buf, 0, sizeof pool.buf);
    pool.left = 0;
}
static void pool_prepare(void) { pthread_mutex_lock(&pool.mu); }
static void pool_parent(void) { pthread_mutex_unlock(&pool.mu); }
static void pool_init(void) { pthread_atfork(pool_prepare, pool_parent, pool_forked); }

int rlk__random_bytes(unsigned char *out, size_t n)
{
    if (n > sizeof pool.buf / 4) return kernel_random(out, n);
    pthread_once(&pool_once, pool_init);
    pthread_mutex_lock(&pool.mu);
    if (pool.left < n) {
        if (kernel_random(pool.buf, sizeof pool.buf) != 0) {
            pthread_mutex_unlock(&pool.mu);
            return -1;
        }
        pool.left = sizeof pool.buf;
    }
    unsigned char *p = pool.buf + pool.left - n;
    memcpy(out, p, n);
    memset(p, 0, n);
    pool.left -= n;
    pthread_mutex_unlock(&pool.mu);
    return 0;
}

void rlk__hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static uint16_t crc16(const char *s, size_t n)
{
    /* CRC-16/XMODEM, the hash of Redis Cluster's key slots. */
    uint16_t crc = 0;
    for (size_t i = 0; i < n; i++) {
        crc ^= (uint16_t)((unsigned char)s[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
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
    char *ch = buf + RLK__K_CHANNEL * cap;
    memcpy(ch, RLK__RELEASE_CHANNEL_PREFIX, sizeof RLK__RELEASE_CHANNEL_PREFIX - 1);
    memcpy(ch + sizeof RLK__RELEASE_CHANNEL_PREFIX - 1, name, n);
    memcpy(ch + sizeof RLK__RELEASE_CHANNEL_PREFIX - 1 + n, "}", 2);
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
