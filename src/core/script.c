/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Server-side scripts, alone or in pipelines.  A script call goes out as
 * EVALSHA; NOSCRIPT answers (after SCRIPT FLUSH, a restart, a failover)
 * are met with one SCRIPT LOAD per distinct script and the calls sent
 * again, so callers never see NOSCRIPT.
 *
 * The scripts of the library the connection was given
 * (rlk__conn_set_library) go out as FCALL of their function in it
 * instead, where the server has FUNCTIONs (rlk__server_detect):
 * functions survive a restart with persistence and SCRIPT FLUSH, and a
 * call by name costs the server less than EVALSHA.  "Function not found"
 * (FUNCTION FLUSH, a fresh server) is met with one FUNCTION LOAD and the
 * calls sent again, as NOSCRIPT is.  Where FCALL or FUNCTION LOAD is
 * refused (an ACL, a managed service, a server without them) the calls
 * go as EVALSHA for the rest of the connection.  An FCALL refused before
 * it ran for a state of the server that EVAL only meets at its first
 * write (at maxmemory, writes stopped, a read-only replica) is sent again
 * as EVALSHA, which meets it there, if at all.  Other scripts
 * (rlk_conn_eval of a caller's own), and all on a connection given no
 * library, always go as EVALSHA.
 *
 * A script's flags (allow-oom: a script that only keeps or frees what
 * is there runs at maxmemory) are its function's, and, where the caller says the server
 * reads them (RLK__CALL_FLAGS: Redis 7+), its EVAL text's too: the line
 * "#!lua flags=..." before its code, so that EVAL and EVALSHA are
 * admitted where FCALL is.  An older server would fail on that line: it
 * gets the code alone, and EVAL there meets maxmemory at its first write
 * that may grow the data.
 *
 * The connection below only carries commands; what the scripts do is not
 * this file's business either.
 */
#include "resplock.h"
#include "clock.h"
#include "sha1.h"
#include "conn_internal.h"
#include "script.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* Requests up to this many go without allocating. */
#define STACK_REQS 16

/* The longest decimal key count, with its NUL. */
#define DIGITS 12

static void set_head(rlk__cmd *q, int i, const char *word, size_t len)
{
    q->head[i] = word;
    q->headlen[i] = len;
}

static void as_evalsha(rlk__cmd *q, const rlk_request *r)
{
    set_head(q, 0, "EVALSHA", 7);
    set_head(q, 1, r->script->sha1, 40);
}

/* Request r as a command, its script as FCALL when fcall is set and it
 * has a function in lib; a script call's key count is written to digits, which
 * must live as long as the command. */
static void as_command(rlk__cmd *q, const rlk__script_library *lib, const rlk_request *r,
                       char *digits, int fcall)
{
    q->nhead = 0;
    if (r->script) {
        q->nhead = 3;
        rlk__script_head(lib, r->script, fcall ? RLK__CALL_FCALL : RLK__CALL_EVALSHA,
                         r->nkeys, q->head, q->headlen, digits);
    }
    q->argc = r->argc;
    q->argv = r->argv;
    q->argvlen = r->argvlen;
}

/* What happens to a request between rounds. */
enum {
    R_PENDING = 1,      /* sent in this round: its reply is to be looked at */
    R_AGAIN = 2,        /* to be sent again in the next round */
    R_LOAD = 4,         /* its script to be loaded (SCRIPT LOAD) first */
    R_LOADED = 8,       /* its script was loaded in this call: no more */
};

/* One call's scripts: what was tried, and what the next round sends. */
struct call {
    rlk_conn *c;
    rlk__script_state *st;
    size_t n;
    const rlk_request *reqs;
    rlk__cmd *cmds;            /* as sent last */
    unsigned char *flags;      /* R_* per request */
    int load_library;          /* FUNCTION LOAD in the next round */
    int library_tried;         /* FUNCTION LOAD sent in this call */
};

static void refuse_functions(struct call *k)
{
    k->st->refused = 1;
    k->st->refused_generation = rlk_conn_generation(k->c);
}

static int functions_refused(rlk_conn *c, const rlk__script_state *st)
{
    return st->refused && st->refused_generation == rlk_conn_generation(c);
}

/* Looks at the replies of the requests sent last and decides which go
 * again, and how; returns how many. */
static size_t decide(struct call *k, rlk_resp_value *const *replies)
{
    size_t again = 0;
    for (size_t i = 0; i < k->n; i++) {
        const rlk_request *r = &k->reqs[i];
        const rlk_resp_value *v = replies[i];
        unsigned char *f = &k->flags[i];
        if (!(*f & R_PENDING)) continue;
        *f &= (unsigned char)~R_PENDING;
        if (!r->script || !rlk__is_error(v)) continue;
        if (k->cmds[i].head[0] == rlk__FCALL) {
            int e = rlk__fcall_error(v);
            if (e == RLK__FCALL_MISSING) {
                /* Loaded once per call; not found after that (refused,
                 * or flushed again at once): as EVALSHA. */
                if (k->library_tried || functions_refused(k->c, k->st)) as_evalsha(&k->cmds[i], r);
                else k->load_library = 1;
            } else if (e) {
                if (e == RLK__FCALL_UNUSABLE) refuse_functions(k);
                as_evalsha(&k->cmds[i], r);
            } else {
                continue;
            }
        } else if (rlk_reply_error_class(v) == RLK_EC_NOSCRIPT && !(*f & R_LOADED)) {
            *f |= R_LOAD | R_LOADED;
        } else {
            continue;
        }
        *f |= R_AGAIN;
        again++;
    }
    return again;
}

/* Whether reqs[i], whose script is to be loaded, is the first of its
 * script so marked: the one whose script is loaded. */
static int first_of_script(const struct call *k, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if ((k->flags[j] & R_LOAD) &&
            memcmp(k->reqs[j].script->sha1, k->reqs[i].script->sha1, 40) == 0)
            return 0;
    return 1;
}

static void load_command(rlk__cmd *q, const char *w0, size_t l0, const char *w1, size_t l1,
                         const char *text, size_t len)
{
    q->nhead = 3;
    set_head(q, 0, w0, l0);
    set_head(q, 1, w1, l1);
    set_head(q, 2, text, len);
    q->argc = 0;
    q->argv = NULL;
    q->argvlen = NULL;
}

/*
 * One more round: the library's FUNCTION LOAD when due, one SCRIPT LOAD
 * for each distinct script to load, then the requests decided to go
 * again, in one pipeline.  Their replies take their place (NULL when the
 * pipeline failed); the others' stay valid when more is set.
 */
static int round_again(struct call *k, size_t nagain, rlk_resp_value **replies, int more)
{
    size_t loads = (size_t)k->load_library;
    for (size_t i = 0; i < k->n; i++)
        if ((k->flags[i] & R_LOAD) && first_of_script(k, i)) loads++;
    size_t m = loads + nagain;
    rlk__cmd small_cmds[STACK_REQS];
    rlk_resp_value *small_out[STACK_REQS];
    rlk__cmd *again = small_cmds;
    rlk_resp_value **out = small_out;
    void *block = NULL;
    if (m > STACK_REQS) {
        block = rlk__malloc(m * (sizeof *again + sizeof *out));
        if (!block) return rlk__conn_fail(k->c, RLK_ERR_NOMEM, "pipeline: out of memory");
        again = block;
        out = (rlk_resp_value **)(void *)(again + m);
    }
    size_t j = 0, liblen = 0;
    int library = k->load_library;
    char *libtext = NULL;
    if (library) {
        libtext = rlk__script_library_text(k->st->library, &liblen);
        if (!libtext) {
            rlk__free(block);
            return rlk__conn_fail(k->c, RLK_ERR_NOMEM, "FUNCTION LOAD: out of memory");
        }
        load_command(&again[j++], "FUNCTION", 8, "LOAD", 4, libtext, liblen);
    }
    for (size_t i = 0; i < k->n; i++)
        if ((k->flags[i] & R_LOAD) && first_of_script(k, i))
            load_command(&again[j++], "SCRIPT", 6, "LOAD", 4, k->reqs[i].script->text,
                         k->reqs[i].script->len);
    /* The calls sent again are marked by a NULL reply: the replies they
     * had may not outlive the next pipeline. */
    for (size_t i = 0; i < k->n; i++)
        if (k->flags[i] & R_AGAIN) {
            again[j++] = k->cmds[i];
            replies[i] = NULL;
        }
    for (size_t i = 0; i < k->n; i++)
        k->flags[i] &= (unsigned char)~R_LOAD;
    k->load_library = 0;
    k->library_tried |= library;

    int r = rlk__conn_pipeline(k->c, m, again, out, more);
    j = loads;
    for (size_t i = 0; i < k->n; i++)
        if (k->flags[i] & R_AGAIN) {
            k->flags[i] = (unsigned char)((k->flags[i] & ~R_AGAIN) | R_PENDING);
            if (r == RLK_OK) replies[i] = out[j++];
        }
    /* A refused FUNCTION LOAD turns FCALL off for the connection, unless
     * the server merely could not write just now. */
    if (r == RLK_OK && library && !rlk__library_loaded(out[0]) && !rlk__state_refused(out[0]))
        refuse_functions(k);
    for (j = (size_t)library; r == RLK_OK && j < loads; j++)
        if (rlk__is_error(out[j]))
            r = rlk__conn_fail(k->c, RLK_ERR_SERVER, "SCRIPT LOAD refused: %.*s",
                               (int)(out[j]->len > 300 ? 300 : out[j]->len), out[j]->str);
    rlk__free(libtext);
    rlk__free(block);
    return r;
}

/* ------------------------------------------------------------------ */
/* Which server: the facts over a connection (serverinfo.h reads them)  */

/* Gathers them with one INFO server. */
static int from_info(rlk_conn *c, rlk__server *s)
{
    static const char *const argv[2] = {"INFO", "server"};
    rlk_resp_value *v;
    int r = rlk_conn_command(c, &v, 2, argv, NULL);
    if (r != RLK_OK) return r;
    if (v->type != RLK_RESP_BULK && v->type != RLK_RESP_VERBATIM &&
        v->type != RLK_RESP_SIMPLE)
        return RLK_OK; /* refused (an ACL), or not Redis: nothing known */
    rlk__server_from_info(s, v->str, v->len);
    return RLK_OK;
}

int rlk__server_detect(rlk_conn *c, rlk__server *s)
{
    int r = rlk__conn_ensure(c);
    if (r == RLK_OK && s->conn == c && s->generation == rlk_conn_generation(c)) return RLK_OK;
    rlk__server_facts(s, NULL, NULL);
    s->conn = NULL;
    s->generation = 0;
    if (r != RLK_OK) return r;
    const rlk_conn_info *info = rlk_conn_get_info(c);
    /* "redis" 7.2.4 is what a Valkey that claims compatibility says. */
    if (info->server[0] && strcmp(info->version, "7.2.4") != 0)
        rlk__server_facts(s, info->server, info->version);
    if (!s->major && (r = from_info(c, s)) != RLK_OK) {
        rlk__server_facts(s, NULL, NULL);
        return r;
    }
    s->conn = c;
    s->generation = rlk_conn_generation(c);
    return RLK_OK;
}

void rlk__conn_set_library(rlk_conn *c, const rlk__script_library *lib)
{
    rlk__conn_script_state(c)->library = lib;
}

/* Whether any of reqs[0..n) is one of lib's scripts. */
static int any_function(const rlk__script_library *lib, size_t n, const rlk_request *reqs)
{
    for (size_t i = 0; lib && i < n; i++)
        if (reqs[i].script && rlk__script_function(lib, reqs[i].script)) return 1;
    return 0;
}

/*
 * Runs reqs[0..n): one call, one deadline.  single: the one request of
 * rlk_conn_eval, sent as a plain command, whose reply is handed out
 * without a copy; otherwise a pipeline.  The rounds after the first
 * (loads and the calls sent again) share one command timeout from the
 * first's start.
 */
static int run(rlk_conn *c, size_t n, const rlk_request *reqs, rlk_resp_value **replies,
               int single)
{
    for (size_t i = 0; i < n; i++) replies[i] = NULL;
    for (size_t i = 0; i < n; i++)
        if (reqs[i].script && (reqs[i].argc < 0 || reqs[i].nkeys < 0 ||
                               reqs[i].nkeys > reqs[i].argc))
            return rlk__conn_fail(c, RLK_ERR_INVALID, "pipeline request %zu is malformed", i);
    if (n == 0) return RLK_OK;
    rlk__script_state *st = rlk__conn_script_state(c);
    int fcall = 0;
    if (any_function(st->library, n, reqs)) {
        int r = rlk__server_detect(c, &st->server);
        if (r != RLK_OK) return r;
        fcall = (st->server.caps & RLK_CAP_FUNCTIONS) && !functions_refused(c, st);
    }
    rlk__cmd small_cmds[STACK_REQS];
    char small_digits[STACK_REQS][DIGITS];
    unsigned char small_flags[STACK_REQS];
    rlk__cmd *cmds = small_cmds;
    char (*digits)[DIGITS] = small_digits;
    unsigned char *flags = small_flags;
    void *block = NULL;
    if (n > STACK_REQS) {
        block = rlk__malloc(n * (sizeof *cmds + sizeof *digits + 1));
        if (!block) return rlk__conn_fail(c, RLK_ERR_NOMEM, "pipeline: out of memory");
        cmds = block;
        digits = (char (*)[DIGITS])(void *)(cmds + n);
        flags = (unsigned char *)(digits + n);
    }
    for (size_t i = 0; i < n; i++) {
        as_command(&cmds[i], st->library, &reqs[i], digits[i], fcall);
        flags[i] = R_PENDING;
    }
    struct call k = {c, st, n, reqs, cmds, flags, 0, 0};

    int64_t start = rlk__now_ms(), cap = 0;
    int r = single ? rlk__conn_command(c, &replies[0], &cmds[0])
                   : rlk__conn_pipeline(c, n, cmds, replies, 0);
    size_t nagain;
    int rounds = 0;
    while (r == RLK_OK && (nagain = decide(&k, replies)) > 0) {
        if (rounds++ == 0) cap = rlk__conn_narrow(c, start);
        r = round_again(&k, nagain, replies, !single || rounds > 1);
    }
    if (rounds) rlk__conn_cap(c, cap);
    if (r != RLK_OK && single) replies[0] = NULL;
    rlk__free(block);
    return r;
}

int rlk_conn_eval(rlk_conn *c, rlk_resp_value **reply, const rlk_script *s,
                  int nkeys, int argc, const char *const *argv,
                  const size_t *argvlen)
{
    *reply = NULL;
    if (nkeys < 0 || nkeys > argc || argc < 0)
        return rlk__conn_fail(c, RLK_ERR_INVALID, "script call with %d keys among %d arguments",
                              nkeys, argc);
    rlk_request q = {s, nkeys, argc, argv, argvlen};
    return run(c, 1, &q, reply, 1);
}

int rlk_conn_pipeline(rlk_conn *c, size_t n, const rlk_request *reqs,
                      rlk_resp_value **replies)
{
    return run(c, n, reqs, replies, 0);
}
