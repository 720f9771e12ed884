/* SPDX-License-Identifier: BSD-3-Clause */
/* Random bytes from the kernel, pooled, and hex (see random.h). */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "random.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Random bytes from the kernel; what is made of them must not be
 * guessable or shared, so there is no weaker fallback than /dev/urandom. */
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
 * Random bytes, taken from the kernel 512 bytes at a time (a system
 * call per 32 draws of 16 bytes instead of one per draw).  Each byte is
 * handed out once; a forked child starts with an empty pool, so parent
 * and child never share one.
 */
static struct {
    pthread_mutex_t mu;
    unsigned char buf[512];
    size_t left;
} pool = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
/* 1 once pool_forked is registered for a forked child: set under
 * pool.mu, where pthread_once would bring its own waits and cancellation
 * (370 bytes of the static command) for this one flag. */
static int forked_registered;

/* The process's id, read once and again in a forked child (0: not read
 * since). */
static pid_t pid_cached;

static void pool_forked(void)
{
    __atomic_store_n(&pid_cached, 0, __ATOMIC_RELAXED);
    /* Only this thread exists in the child; the mutex was held by the
     * forking thread (see pool_prepare), so it is re-made. */
    pthread_mutex_init(&pool.mu, NULL);
    memset(pool.buf, 0, sizeof pool.buf);
    pool.left = 0;
}
static void pool_prepare(void) { pthread_mutex_lock(&pool.mu); }
static void pool_parent(void) { pthread_mutex_unlock(&pool.mu); }
/* With pool.mu held.  pthread_atfork waits for the C library's mutex of
 * its handlers, which a fork holds while it runs them; pool_prepare
 * (which takes pool.mu) is one of them only once this call returns: no
 * fork waits for pool.mu while this waits for that mutex. */
static void register_forked(void)
{
    if (!forked_registered) {
        pthread_atfork(pool_prepare, pool_parent, pool_forked);
        __atomic_store_n(&forked_registered, 1, __ATOMIC_RELEASE);
    }
}

int rlk__random_bytes(unsigned char *out, size_t n)
{
    if (n > sizeof pool.buf / 4) return kernel_random(out, n);
    pthread_mutex_lock(&pool.mu);
    register_forked();
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

long rlk__pid(void)
{
    if (!__atomic_load_n(&forked_registered, __ATOMIC_ACQUIRE)) {
        pthread_mutex_lock(&pool.mu);
        register_forked();
        pthread_mutex_unlock(&pool.mu);
    }
    pid_t p = __atomic_load_n(&pid_cached, __ATOMIC_RELAXED);
    if (p == 0) {
        p = getpid();
        __atomic_store_n(&pid_cached, p, __ATOMIC_RELAXED);
    }
    return (long)p;
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

