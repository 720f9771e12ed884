/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Redlock (redlock.c): one lock over N independent servers (3 or more,
 * odd), each a client of its own (a single server or a Cluster), the
 * lock held while a majority holds it with one token.  The blocking
 * client (client.c) makes it for a config with redlock set, and turns
 * its public calls on such a client into these; the members are
 * one-server clients, reached through the calls of rlk__rl_api, which
 * client.c gives (the members' client is the one-server client itself).
 * Internal (rlk__ prefix, not installed).
 */
#ifndef RESPLOCK_REDLOCK_H
#define RESPLOCK_REDLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "resplock.h"

/* The most servers of one Redlock client. */
#define RLK__RL_MAX 15

/* What a member is asked to do: the one-server client's calls. */
typedef struct rlk__rl_api {
    rlk_client *(*client_new)(const rlk_client_config *cfg);
    void (*client_free)(rlk_client *cl);
    const char *(*errmsg)(const rlk_client *cl);
    const rlk_conn_info *(*info)(rlk_client *cl);
    uint64_t (*generation)(rlk_client *cl);
    int (*connect)(rlk_client *cl);
    /* rlk_lock_acquire_async with a simple lock's token given (NULL:
     * drawn), and the token of a handle whose acquire is under way. */
    int (*acquire_async)(rlk_client *cl, const char *name, const rlk_lock_options *o,
                         const char *token, rlk_lock_done done, void *ctx, rlk_lock **out);
    const char *(*pending_token)(const rlk_lock *l);
    int (*release_async)(rlk_lock *l, rlk_lock_done done, void *ctx);
    int (*extend_async)(rlk_lock *l, int64_t ms, int how, rlk_lock_done done, void *ctx);
    void (*forget)(rlk_lock *l);
    int (*watch)(rlk_client *cl, rlk_watch *w, size_t max, int64_t *deadline_ms);
    int (*handle)(rlk_client *cl, const rlk_watch *w, size_t n);
    int64_t (*remaining)(const rlk_lock *l);
    int (*is_lost)(const rlk_lock *l);
    uint64_t (*fence)(const rlk_lock *l);
    int (*get_status)(rlk_client *cl, const char *name, rlk_lock_status *st);
    int (*release_token)(rlk_client *cl, const char *name, const char *token);
    int (*extend_token)(rlk_client *cl, const char *name, const char *token, int64_t ms, int how,
                        int64_t *ttl_ms_after);
} rlk__rl_api;

typedef struct rlk__rl rlk__rl;
typedef struct rlk__rl_lock rlk__rl_lock;

/* The members for cfg: conn.url and each of cfg->seeds, with cfg's
 * other settings.  NULL when out of memory, or for fewer than 3 servers,
 * an even number of them, or more than RLK__RL_MAX. */
rlk__rl *rlk__rl_new(const rlk__rl_api *api, const rlk_client_config *cfg);
/* Frees the members (their locks expire on the servers) and what is
 * left of the locks. */
void rlk__rl_free(rlk__rl *rl);
const char *rlk__rl_errmsg(const rlk__rl *rl);
size_t rlk__rl_servers(const rlk__rl *rl);
/* Member i's client (i < rlk__rl_servers) and its URL without a
 * password. */
rlk_client *rlk__rl_member(rlk__rl *rl, size_t i);
const char *rlk__rl_member_name(const rlk__rl *rl, size_t i);

/* The client's calls under Redlock (resplock.h says what they do). */
int rlk__rl_connect(rlk__rl *rl);
const rlk_conn_info *rlk__rl_info(rlk__rl *rl);
uint64_t rlk__rl_generation(rlk__rl *rl);
int rlk__rl_tick(rlk__rl *rl, int64_t *next_ms);
int rlk__rl_fd(const rlk__rl *rl);
int rlk__rl_watch(rlk__rl *rl, rlk_watch *w, size_t max, int64_t *deadline_ms);
int rlk__rl_handle(rlk__rl *rl, const rlk_watch *w, size_t n);
/* user: what on_lost is called with (the caller's handle). */
int rlk__rl_acquire(rlk__rl *rl, const char *name, const rlk_lock_options *o, void *user,
                    rlk__rl_lock **out);
/* The lock ends with the call (freed, or left to end by itself). */
int rlk__rl_release(rlk__rl_lock *l);
void rlk__rl_forget(rlk__rl_lock *l);
int rlk__rl_extend(rlk__rl_lock *l, int64_t ms, int how);
int64_t rlk__rl_remaining(const rlk__rl_lock *l);
int rlk__rl_is_lost(const rlk__rl_lock *l);
uint64_t rlk__rl_fence(const rlk__rl_lock *l);
const char *rlk__rl_token(const rlk__rl_lock *l);
int64_t rlk__rl_ttl(const rlk__rl_lock *l);
int rlk__rl_get_status(rlk__rl *rl, const char *name, rlk_lock_status *st);
int rlk__rl_release_token(rlk__rl *rl, const char *name, const char *token);
int rlk__rl_extend_token(rlk__rl *rl, const char *name, const char *token, int64_t ms, int how,
                         int64_t *ttl_ms_after);
/* A refusal of a call Redlock does not offer: RLK_ERR_INVALID, with the
 * message naming it. */
int rlk__rl_refuse(rlk__rl *rl, const char *what);

#endif
