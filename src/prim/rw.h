/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The read-write lock (rw.c), a primitive over the host, built as the
 * semaphore is (sem.h): its tries, releases and status reads are
 * requests the host carries to the name's slot (src/lua/rw_acquire.lua,
 * rw_release.lua, rw_status.lua: every expiry on the server's clock); a
 * wait is a place in the lock's line, renewed by a try at least every
 * recheck slice (waiter.h) and woken by a message on the lock's channel;
 * a hold is a lease of kind 'w' (src/lua/renew.lua) that the renewer's
 * rounds renew.  Internal (rlk__ prefix, not installed).
 */
#ifndef RESPLOCK_RW_H
#define RESPLOCK_RW_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "lease.h"
#include "renewer.h"
#include "resplock.h"

typedef struct rlk__rws rlk__rws;
typedef struct rlk__rw rlk__rw;

/* The key prefix: read-write lock NAME's state is "resplock:rw:{NAME}". */
#define RLK__RW_PREFIX "resplock:rw:{"

/* Read-write lock name's key with suffix after it ("": its state;
 * ":line": its line; ":wake": its channel), as rlk__sem_key. */
size_t rlk__rw_key_cap(const char *name);
int rlk__rw_name_ok(const char *name);
void rlk__rw_key(const char *name, const char *suffix, char *out, size_t cap);

/* Whether name and o may be acquired (RLK_OK), else RLK_ERR_INVALID with
 * the reason in err.  watchdog_ok: something renews. */
int rlk__rw_check(const char *name, const rlk_rw_options *o, int watchdog_ok, char *err,
                  size_t errlen);

/* An end of a call: its status and reason ("" on RLK_OK). */
typedef void (*rlk__rw_cb)(void *ctx, int status, const char *msg);
/* What the locks tell of a hold they find lost, once. */
typedef void (*rlk__rw_lost_fn)(void *owner);

/* Read-write locks over host's cores, their holds renewed by rn's rounds,
 * waits looking again every recheck_ms at least (0: the default).  NULL
 * when out of memory. */
rlk__rws *rlk__rws_new(rlk__host *h, rlk__renewer *rn, int64_t recheck_ms, rlk__rw_lost_fn lost);
/* Parts the host; holds are forgotten, calls under way end silently. */
void rlk__rws_free(rlk__rws *m);

/*
 * Starts an acquire of a hold of name (checked: rlk__rw_check) as the
 * holder token (NULL: a new one), as rlk__sem_acquire: cb called exactly
 * once, never from this call; *out is the caller's from this call on.
 */
int rlk__rw_acquire(rlk__rws *m, const char *name, const rlk_rw_options *o, const char *token,
                    int64_t reply_by, int64_t wait_until, rlk__rw_cb cb, void *ctx, void *owner,
                    int64_t now, rlk__rw **out);
/* As rlk__sem_release, rlk__sem_extend, rlk__sem_forget. */
int rlk__rw_release(rlk__rw *s, int64_t reply_by, rlk__rw_cb cb, void *ctx, int64_t now);
int rlk__rw_extend(rlk__rw *s, int64_t ms, int64_t reply_by, rlk__rw_cb cb, void *ctx, int64_t now);
void rlk__rw_forget(rlk__rw *s);

int rlk__rw_lost(const rlk__rw *s);
int64_t rlk__rw_remaining(const rlk__rw *s, int64_t now);
uint64_t rlk__rw_fence(const rlk__rw *s);
const char *rlk__rw_token(const rlk__rw *s);
const char *rlk__rw_name(const rlk__rw *s);
int rlk__rw_mode(const rlk__rw *s);
int64_t rlk__rw_ttl(const rlk__rw *s);
int rlk__rw_expire(rlk__rw *s, int64_t now);

/* Reads name's status into *st (free with rlk_rw_status_free), as
 * rlk__sem_status. */
int rlk__rw_status(rlk__rws *m, const char *name, rlk_rw_status *st, int64_t reply_by,
                   rlk__rw_cb cb, void *ctx, int64_t now);

#endif
