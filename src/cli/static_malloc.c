/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A small allocator for the fully static command (--enable-static-binary):
 * linked before the C library, its malloc, calloc, realloc and free
 * replace the library's, for the command and for the C library's own
 * calls (strdup) and those of the command's own getaddrinfo and setenv
 * (src/cli/static_resolv.c, static_libc.c).  The default build keeps the C
 * library's.  The command holds a few hundred small blocks at a time,
 * from two threads at most (the watchdog's): what it needs is little
 * code, not speed under contention.
 *
 * A block is a power of two from 32 bytes to 128 KiB: a 16-byte header
 * (the block's size) and the caller's part, aligned to 16 bytes.  Blocks
 * are cut from 256 KiB regions mapped with mmap; a freed block goes to
 * the free list of its size, which the next request of that size takes
 * first, so a program whose needs do not grow does not grow.  Small
 * blocks are never given back to the system.  A request over 128 KiB
 * less the header gets a mapping of its own, unmapped when freed.  One
 * mutex guards the lists (a thread that finds it taken sleeps, where a
 * spin lock could keep its holder from running); fork takes it first, so
 * that a child never inherits it held by a thread it does not have.
 *
 * malloc(0) and realloc(p, 0) return a block of the smallest size; a
 * request too big, or calloc's product overflowing, sets ENOMEM and
 * returns NULL.  realloc keeps the block while the new size fits in it.
 *
 * The unit test compiles this file with RLK_MALLOC_NAME(f) naming the
 * functions otherwise (and RLK_MALLOC_STATS counting the bytes mapped).
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#ifndef RLK_MALLOC_NAME
#define RLK_MALLOC_NAME(f) f
#endif

void *RLK_MALLOC_NAME(malloc)(size_t n);
void *RLK_MALLOC_NAME(calloc)(size_t k, size_t n);
void *RLK_MALLOC_NAME(realloc)(void *p, size_t n);
void RLK_MALLOC_NAME(free)(void *p);

enum {
    HDR = 16,               /* the header: the block's size, 16-byte aligned */
    MIN_SHIFT = 5,          /* the smallest block: 32 bytes */
    MAX_SHIFT = 17,         /* the biggest small block: 128 KiB */
    REGION = 256 * 1024,    /* what is mapped at a time for small blocks */
    PAGE = 4096
};
#define MAX_BLOCK ((size_t)1 << MAX_SHIFT)

struct block {
    size_t size;            /* the block's bytes, header included */
    struct block *next;     /* in its free list, when free */
};

static struct block *free_list[MAX_SHIFT - MIN_SHIFT + 1];
static char *cur, *end;     /* what is left of the region blocks are cut from */
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;

#ifdef RLK_MALLOC_STATS
size_t RLK_MALLOC_NAME(mapped_bytes);
#define COUNT_MAP(n) (RLK_MALLOC_NAME(mapped_bytes) += (n))
#else
#define COUNT_MAP(n) ((void)0)
#endif

static void lock(void)
{
    pthread_mutex_lock(&busy);
}

static void unlock(void)
{
    pthread_mutex_unlock(&busy);
}

/* Registered before main, while there is one thread (pthread_atfork may
 * allocate, and the lock is free then). */
__attribute__((constructor)) static void at_start(void)
{
    pthread_atfork(lock, unlock, unlock);
}

static void *map(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    COUNT_MAP(n);
    return p;
}

/* The index of the smallest block that holds n bytes and the header. */
static unsigned class_of(size_t n)
{
    unsigned c = 0;
    while (((size_t)1 << (c + MIN_SHIFT)) - HDR < n) c++;
    return c;
}

/* Puts the rest of the region in the free lists (as the biggest blocks
 * that fit), so a new region wastes nothing of the old one. */
static void keep_rest(void)
{
    for (unsigned c = MAX_SHIFT - MIN_SHIFT + 1; c-- > 0;) {
        size_t s = (size_t)1 << (c + MIN_SHIFT);
        while ((size_t)(end - cur) >= s) {
            struct block *b = (struct block *)(void *)cur;
            b->size = s;
            b->next = free_list[c];
            free_list[c] = b;
            cur += s;
        }
    }
}

void *RLK_MALLOC_NAME(malloc)(size_t n)
{
    if (n > MAX_BLOCK - HDR) {
        if (n > SIZE_MAX / 2) {
            errno = ENOMEM;
            return NULL;
        }
        size_t len = (n + HDR + PAGE - 1) & ~(size_t)(PAGE - 1);
        struct block *b = map(len);
        if (!b) {
            errno = ENOMEM;
            return NULL;
        }
        b->size = len;
        return (char *)b + HDR;
    }
    unsigned c = class_of(n);
    size_t s = (size_t)1 << (c + MIN_SHIFT);
    lock();
    struct block *b = free_list[c];
    if (b) {
        free_list[c] = b->next;
    } else {
        if ((size_t)(end - cur) < s) {
            char *r = map(REGION);
            if (!r) {
                unlock();
                errno = ENOMEM;
                return NULL;
            }
            keep_rest();
            cur = r;
            end = r + REGION;
        }
        b = (struct block *)(void *)cur;
        b->size = s;
        cur += s;
    }
    unlock();
    return (char *)b + HDR;
}

void RLK_MALLOC_NAME(free)(void *p)
{
    if (!p) return;
    struct block *b = (struct block *)(void *)((char *)p - HDR);
    if (b->size > MAX_BLOCK) {
        COUNT_MAP(-b->size);
        munmap(b, b->size);
        return;
    }
    unsigned c = class_of(b->size - HDR);
    lock();
    b->next = free_list[c];
    free_list[c] = b;
    unlock();
}

void *RLK_MALLOC_NAME(calloc)(size_t k, size_t n)
{
    if (n && k > SIZE_MAX / n) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = RLK_MALLOC_NAME(malloc)(k * n);
    if (p) memset(p, 0, k * n);
    return p;
}

void *RLK_MALLOC_NAME(realloc)(void *p, size_t n)
{
    if (!p) return RLK_MALLOC_NAME(malloc)(n);
    size_t have = ((struct block *)(void *)((char *)p - HDR))->size - HDR;
    if (n <= have) return p;
    void *q = RLK_MALLOC_NAME(malloc)(n);
    if (q) {
        memcpy(q, p, have);
        RLK_MALLOC_NAME(free)(p);
    }
    return q;
}
