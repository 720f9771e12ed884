/* SPDX-License-Identifier: BSD-3-Clause */
/* The one allocation hook of the library, and the status strings. */
#include "resp.h"
#include "internal.h"

#include <stdlib.h>

static void *default_malloc(void *ctx, size_t n) { (void)ctx; return malloc(n); }
static void *default_realloc(void *ctx, void *p, size_t n) { (void)ctx; return realloc(p, n); }
static void default_free(void *ctx, void *p) { (void)ctx; free(p); }

static rlk_allocator hook = {default_malloc, default_realloc, default_free, NULL};

void rlk_set_allocator(const rlk_allocator *a)
{
    if (a && a->malloc_fn && a->realloc_fn && a->free_fn) {
        hook = *a;
    } else {
        hook.malloc_fn = default_malloc;
        hook.realloc_fn = default_realloc;
        hook.free_fn = default_free;
        hook.ctx = NULL;
    }
}

/* A zero-byte request is made a one-byte one so that NULL always means
 * failure, whatever the hook does with zero. */
void *rlk__malloc(size_t n) { return hook.malloc_fn(hook.ctx, n ? n : 1); }
void *rlk__realloc(void *p, size_t n) { return hook.realloc_fn(hook.ctx, p, n ? n : 1); }
void rlk__free(void *p) { if (p) hook.free_fn(hook.ctx, p); }

const char *rlk_strerror(int status)
{
    switch (status) {
    case RLK_OK: return "success";
    case RLK_ERR_NOMEM: return "out of memory";
    case RLK_ERR_PROTO: return "protocol error";
    case RLK_ERR_LIMIT: return "limit exceeded";
    case RLK_ERR_INVALID: return "invalid argument";
    case RLK_ERR_SPACE: return "buffer too small";
    case -24: /* RLK_LOCK_NOT_A_LOCK (resplock.h) */
        return "not a lock: the name's key is another kind of key (an application's?)";
    default: return "unknown status";
    }
}
