/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The semaphore with expirable permits (sem.c), a primitive over the
 * host: its tries, releases and status reads are requests the host
 * carries to the name's slot (src/lua/sem_acquire.lua, sem_release.lua,
 * sem_status.lua: every expiry on the server's clock); a wait is a place
 * in the semaphore's line, renewed by a try at least every recheck slice
 * (waiter.h) and woken by a message on the semaphore's channel, to which
 * it subscribes through the host; a permit held is a lease of kind 'p'
 * (src/lua/renew.lua) that the renewer's rounds renew.  In
 * redis-semaphore's layout (sem_rs_*.lua) the key is "semaphore:NAME",
 * a wait polls, and the lease's kind is 'z' (sem.c's head says why).  It joins the
 * host and the renewer it is given and uses nothing else of the house
 * below it.  Internal (rlk__ prefix, not installed).
 */
#ifndef RESPLOCK_SEM_H
#define RESPLOCK_SEM_H

#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "lease.h"
#include "renewer.h"
#include "resplock.h"

typedef struct rlk__sems rlk__sems;
typedef struct rlk__sem rlk__sem;

/* The key prefix: semaphore NAME's state is "resplock:sem:{NAME}". */
#define RLK__SEM_PREFIX "resplock:sem:{"

/* Semaphore name's key with suffix after it ("": its state; ":line": its
 * line; ":wake": its channel), into out (cap bytes, at least
 * rlk__sem_key_cap(name): the room of the longest, with its NUL).  All
 * share "resplock:sem:{" NAME "}" up to its first '}', so all hash to
 * one slot whatever braces NAME has. */
size_t rlk__sem_key_cap(const char *name);
/* Whether name has keys (not empty, and not beginning with '}'). */
int rlk__sem_name_ok(const char *name);
void rlk__sem_key(const char *name, const char *suffix, char *out, size_t cap);

/* Whether name and o may be acquired (RLK_OK), else RLK_ERR_INVALID with
 * the reason in err.  watchdog_ok: something renews (tick mode, the
 * thread, an event loop). */
int rlk__sem_check(const char *name, const rlk_sem_options *o, int watchdog_ok, char *err,
                   size_t errlen);

/* An end of a call: status (rlk_sem_acquire's, rlk_sem_release's or
 * rlk_sem_get_status's) and its reason ("" on RLK_OK). */
typedef void (*rlk__sem_cb)(void *ctx, int status, const char *msg);

/* What the semaphores tell of a permit they find lost (its renewal
 * refused or late), once, with the owner given to its acquire. */
typedef void (*rlk__sem_lost_fn)(void *owner);

/* Semaphores over host's cores, their permits renewed by rn's rounds,
 * waits looking again every recheck_ms at least (0: the default), lost
 * told to lost.  NULL when out of memory. */
rlk__sems *rlk__sems_new(rlk__host *h, rlk__renewer *rn, int64_t recheck_ms,
                         rlk__sem_lost_fn lost);
/* Parts the host; the permits held are forgotten (their TTL gives them
 * back), the calls under way end without their callbacks. */
void rlk__sems_free(rlk__sems *m);

/*
 * Starts an acquire of o->k permits of name (checked: rlk__sem_check),
 * owner given to lost.  Each request is bounded by reply_by (absolute
 * monotonic ms; RLK__DL_DEFAULT: the command timeout); a wait (o->wait_ms)
 * ends at wait_until (-1: none).  cb is called exactly once, never from
 * this call: RLK_OK (*out held), RLK_LOCK_BUSY, or a failure.  *out is
 * the permit, the caller's from this call on (rlk__sem_release or
 * rlk__sem_forget frees it; after a failure, rlk__sem_forget).
 * RLK_OK, RLK_ERR_INVALID, RLK_ERR_NOMEM or the host's submit failure
 * (then nothing is left).
 */
int rlk__sem_acquire(rlk__sems *m, const char *name, const rlk_sem_options *o, int64_t reply_by,
                     int64_t wait_until, rlk__sem_cb cb, void *ctx, void *owner, int64_t now,
                     rlk__sem **out);

/* Gives s's permits back (s held), cb called once, never from this call;
 * s is freed after cb (its accessors are not to be read then).  RLK_OK,
 * RLK_LOCK_LOST (found lost before: nothing sent, cb not called, s
 * freed), or the host's submit failure (s freed). */
int rlk__sem_release(rlk__sem *s, int64_t reply_by, rlk__sem_cb cb, void *ctx, int64_t now);

/* Sets s's TTL to ms from now (s held; one extend at a time), cb called
 * once, never from this call: RLK_OK (valid for ms from now; renewals
 * go on with ms), RLK_LOCK_NOT_HELD (expired: s is lost), or a failure
 * of the request (s still held).  Returns RLK_OK, RLK_LOCK_LOST (not
 * held, or lost before: nothing sent), RLK_ERR_INVALID (ms < 1, an
 * extend under way), or the host's submit failure. */
int rlk__sem_extend(rlk__sem *s, int64_t ms, int64_t reply_by, rlk__sem_cb cb, void *ctx,
                    int64_t now);

/* Drops s without telling the server (a held one's permits expire with
 * their TTL; a wait leaves its place to lapse); no callback comes. */
void rlk__sem_forget(rlk__sem *s);

/* The accessors. */
int rlk__sem_lost(const rlk__sem *s);
int64_t rlk__sem_remaining(const rlk__sem *s, int64_t now);
uint64_t rlk__sem_fence(const rlk__sem *s);
const char *rlk__sem_token(const rlk__sem *s);
const char *rlk__sem_name(const rlk__sem *s);
int64_t rlk__sem_k(const rlk__sem *s);
int64_t rlk__sem_ttl(const rlk__sem *s);
int rlk__sem_watchdog(const rlk__sem *s);
/* Marks s lost when its validity is over (nothing renewed it): 1 when
 * this call did. */
int rlk__sem_expire(rlk__sem *s, int64_t now);

/* Reads name's status in layout (an rlk_sem_layout; lock_timeout_ms,
 * at least 1, read for RLK_SEM_LAYOUT_REDIS_SEMAPHORE only) into *st
 * (written whole on RLK_OK; free with rlk_sem_status_free), cb called
 * once, never from this call.  RLK_OK, RLK_ERR_INVALID, RLK_ERR_NOMEM or
 * the host's submit failure. */
int rlk__sem_status(rlk__sems *m, const char *name, int layout, int64_t lock_timeout_ms,
                    rlk_sem_status *st, int64_t reply_by, rlk__sem_cb cb, void *ctx, int64_t now);

/* Calls under way (acquires, releases, status reads). */
size_t rlk__sems_pending(const rlk__sems *m);

#endif
