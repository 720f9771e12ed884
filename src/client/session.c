/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sans-I/O session (see resplock.h): one request core (core.c), the
 * connection's protocol, and the lock over it (lock.c), which takes the
 * core's hooks.  The caller's bytes, time and connection events go to
 * the core.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "resplock.h"
#include "core.h"
#include "host.h"
#include "internal.h"
#include "lock.h"
#include "lua.h"
#include "session_internal.h"

#include <string.h>

/* One core, a host over it (MOVED is an error there like any: one
 * server), and the primitives joined to it. */
struct rlk_session {
    rlk__core *core;
    rlk__host *host;
    rlk__renewer *renewer;
    rlk__locks *locks;
};

void rlk_session_config_init(rlk_session_config *cfg) { memset(cfg, 0, sizeof *cfg); }

/* A topology of one server that answers for every node a redirect
 * names (rlk__session_new_routed). */
static rlk__core *one_core_for(void *ctx, unsigned slot)
{
    (void)slot;
    return ctx;
}

static rlk__core *one_redirect(void *ctx, rlk__core *from, const rlk_resp_value *v, int *ask)
{
    (void)from;
    *ask = rlk__reply_class(v) == RLK_EC_ASK;
    return ctx;
}

static rlk_session *session_new(const rlk_session_config *cfg, int routed)
{
    rlk_session_config d;
    if (!cfg) {
        rlk_session_config_init(&d);
        cfg = &d;
    }
    rlk_session *s = rlk__malloc(sizeof *s);
    if (!s) return NULL;
    rlk__core_config cc;
    memset(&cc, 0, sizeof cc);
    cc.username = cfg->username;
    cc.password = cfg->password;
    cc.client_name = cfg->client_name;
    cc.db = cfg->db;
    cc.protocol = cfg->protocol;
    cc.command_timeout_ms = cfg->command_timeout_ms;
    cc.max_input = cfg->max_input;
    cc.library = &rlk__lua_library;
    s->core = rlk__core_new(&cc);
    rlk__host_topo one = {one_core_for, one_redirect, 0, s->core};
    s->host = s->core ? rlk__host_new(routed ? &one : NULL) : NULL;
    s->renewer = s->host && rlk__host_attach(s->host, s->core) == RLK_OK
                     ? rlk__renewer_new(s->host, cfg->timing)
                     : NULL;
    s->locks = s->renewer ? rlk__locks_new(s->host, s->renewer, cfg, s) : NULL;
    if (!s->locks) {
        rlk__renewer_free(s->renewer);
        rlk__host_free(s->host);
        rlk__core_free(s->core);
        rlk__free(s);
        return NULL;
    }
    return s;
}

rlk_session *rlk_session_new(const rlk_session_config *cfg) { return session_new(cfg, 0); }

rlk_session *rlk__session_new_routed(const rlk_session_config *cfg) { return session_new(cfg, 1); }

void rlk_session_free(rlk_session *s)
{
    if (!s) return;
    rlk__locks_free(s->locks);
    rlk__renewer_free(s->renewer);
    rlk__host_free(s->host);
    rlk__core_free(s->core);
    rlk__free(s);
}

int rlk_session_connected(rlk_session *s, int64_t now)
{
    int r = rlk__core_connected(s->core, now);
    if (r == RLK_ERR_INVALID) rlk__locks_note(s->locks, rlk__core_errmsg(s->core));
    return r;
}

void rlk_session_closed(rlk_session *s, int64_t now) { rlk__core_closed(s->core, now); }

int rlk_session_feed(rlk_session *s, const char *buf, size_t len, int64_t now)
{
    int r = rlk__core_feed(s->core, buf, len, now);
    if (r != RLK_OK) rlk__locks_note(s->locks, rlk__core_errmsg(s->core));
    return r;
}

size_t rlk_session_output(const rlk_session *s, const char **buf)
{
    return rlk__core_output(s->core, buf);
}

void rlk_session_consume(rlk_session *s, size_t n) { rlk__core_consume(s->core, n); }
int64_t rlk_session_deadline(const rlk_session *s) { return rlk__core_deadline(s->core); }
int rlk_session_tick(rlk_session *s, int64_t now) { return rlk__core_tick(s->core, now); }

int rlk_session_ready(const rlk_session *s) { return rlk__core_ready(s->core); }
const char *rlk_session_errmsg(const rlk_session *s) { return rlk__locks_errmsg(s->locks); }
const char *rlk_session_wait_note(const rlk_session *s) { return rlk__locks_wait_note(s->locks); }

rlk_session_lock *rlk_session_acquire(rlk_session *s, const char *name, const rlk_lock_options *o,
                                      void *user, int64_t now)
{
    return rlk__locks_acquire(s->locks, name, o, user, now);
}

int rlk__session_status(rlk_session *s, const char *name, rlk__session_call_cb cb, void *ctx,
                        int64_t now)
{
    return rlk__locks_status(s->locks, name, cb, ctx, now);
}

int rlk__session_release_token(rlk_session *s, const char *name, const char *token,
                               rlk__session_call_cb cb, void *ctx, int64_t now)
{
    return rlk__locks_release_token(s->locks, name, token, cb, ctx, now);
}

int rlk__session_extend_token(rlk_session *s, const char *name, const char *token, int64_t ms,
                              int how, rlk__session_call_cb cb, void *ctx, int64_t now)
{
    return rlk__locks_extend_token(s->locks, name, token, ms, how, cb, ctx, now);
}

const rlk_conn_info *rlk__session_info(const rlk_session *s) { return rlk__core_info(s->core); }

const char *rlk__session_handoff_channel(const rlk_session *s)
{
    return rlk__locks_handoff_channel(s->locks);
}

size_t rlk__session_buffered(const rlk_session *s) { return rlk__core_buffered(s->core); }
