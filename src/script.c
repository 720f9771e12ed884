/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Server-side scripts called by SHA1, alone or in pipelines.  A script
 * call goes out as EVALSHA; NOSCRIPT answers (after SCRIPT FLUSH, a
 * restart, a failover) are met with one SCRIPT LOAD per distinct script
 * and the calls sent again, so callers never see NOSCRIPT.  The
 * connection below only carries commands; what the scripts do is not
 * this file's business either.
 */
#include "resplock.h"
#include "clock.h"
#include "sha1.h"
#include "conn_internal.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

void rlk_script_init(rlk_script *s, const char *text, size_t len)
{
    s->text = text;
    s->len = len ? len : strlen(text);
    rlk__sha1_hex(text, s->len, s->sha1);
}

/* Requests up to this many go without allocating. */
#define STACK_REQS 16

/* The longest decimal key count, with its NUL. */
#define DIGITS 12

static void set_head(rlk__cmd *q, int i, const char *word, size_t len)
{
    q->head[i] = word;
    q->headlen[i] = len;
}

/* Request r as a command; a script call's key count is written to
 * digits, which must live as long as the command. */
static void as_command(rlk__cmd *q, const rlk_request *r, char *digits)
{
    q->nhead = 0;
    if (r->script) {
        q->nhead = 3;
        set_head(q, 0, "EVALSHA", 7);
        set_head(q, 1, r->script->sha1, 40);
        set_head(q, 2, digits, rlk__utoa(digits, (unsigned)r->nkeys));
    }
    q->argc = r->argc;
    q->argv = r->argv;
    q->argvlen = r->argvlen;
}

static int noscript(const rlk_request *r, const rlk_resp_value *v)
{
    return r->script && rlk_reply_error_class(v) == RLK_EC_NOSCRIPT;
}

static int is_error(const rlk_resp_value *v)
{
    return v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR;
}

/* Whether reqs[i], answered NOSCRIPT, is the first call of its script
 * so answered: the one whose script is loaded. */
static int first_of_script(const rlk_request *reqs, rlk_resp_value *const *replies, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (noscript(&reqs[j], replies[j]) &&
            memcmp(reqs[j].script->sha1, reqs[i].script->sha1, 40) == 0)
            return 0;
    return 1;
}

/*
 * The script calls among reqs[0..n) that were answered NOSCRIPT (cmds[]
 * as sent): one SCRIPT LOAD for each distinct script, then those calls
 * again, in one more pipeline within the call's deadline (one command
 * timeout from start).  Their final replies take their place (NULL when
 * the pipeline failed).  more: the first part was a pipeline whose
 * replies must stay valid.
 */
static int reload(rlk_conn *c, size_t n, const rlk_request *reqs, const rlk__cmd *cmds,
                  rlk_resp_value **replies, int64_t start, int more)
{
    size_t loads = 0, retry = 0;
    for (size_t i = 0; i < n; i++) {
        if (!noscript(&reqs[i], replies[i])) continue;
        retry++;
        loads += first_of_script(reqs, replies, i);
    }
    if (!retry) return RLK_OK;

    size_t m = loads + retry;
    rlk__cmd small_cmds[STACK_REQS];
    rlk_resp_value *small_out[STACK_REQS];
    rlk__cmd *again = small_cmds;
    rlk_resp_value **out = small_out;
    void *block = NULL;
    if (m > STACK_REQS) {
        block = rlk__malloc(m * (sizeof *again + sizeof *out));
        if (!block) return rlk__conn_fail(c, RLK_ERR_NOMEM, "pipeline: out of memory");
        again = block;
        out = (rlk_resp_value **)(void *)(again + m);
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!noscript(&reqs[i], replies[i]) || !first_of_script(reqs, replies, i)) continue;
        rlk__cmd *q = &again[k++];
        q->nhead = 3;
        set_head(q, 0, "SCRIPT", 6);
        set_head(q, 1, "LOAD", 4);
        set_head(q, 2, reqs[i].script->text, reqs[i].script->len);
        q->argc = 0;
        q->argv = NULL;
        q->argvlen = NULL;
    }
    /* The calls sent again are marked by a NULL reply: the NOSCRIPT
     * replies may not outlive the next pipeline. */
    for (size_t i = 0; i < n; i++)
        if (noscript(&reqs[i], replies[i])) {
            again[k++] = cmds[i];
            replies[i] = NULL;
        }

    int64_t cap = rlk__conn_narrow(c, start);
    int r = rlk__conn_pipeline(c, m, again, out, more);
    rlk__conn_cap(c, cap);
    k = loads;
    for (size_t i = 0; r == RLK_OK && i < n; i++)
        if (!replies[i]) replies[i] = out[k++];
    for (k = 0; r == RLK_OK && k < loads; k++)
        if (is_error(out[k]))
            r = rlk__conn_fail(c, RLK_ERR_SERVER, "SCRIPT LOAD refused: %.*s",
                               (int)(out[k]->len > 300 ? 300 : out[k]->len), out[k]->str);
    rlk__free(block);
    return r;
}

/*
 * Runs reqs[0..n): one call, one deadline.  single: the one request of
 * rlk_conn_eval, sent as a plain command, whose reply is handed out
 * without a copy; otherwise a pipeline.
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
    rlk__cmd small_cmds[STACK_REQS];
    char small_digits[STACK_REQS][DIGITS];
    rlk__cmd *cmds = small_cmds;
    char (*digits)[DIGITS] = small_digits;
    void *block = NULL;
    if (n > STACK_REQS) {
        block = rlk__malloc(n * (sizeof *cmds + sizeof *digits));
        if (!block) return rlk__conn_fail(c, RLK_ERR_NOMEM, "pipeline: out of memory");
        cmds = block;
        digits = (char (*)[DIGITS])(void *)(cmds + n);
    }
    for (size_t i = 0; i < n; i++) as_command(&cmds[i], &reqs[i], digits[i]);

    int64_t start = rlk__now_ms();
    int r = single ? rlk__conn_command(c, &replies[0], &cmds[0])
                   : rlk__conn_pipeline(c, n, cmds, replies, 0);
    if (r == RLK_OK) {
        r = reload(c, n, reqs, cmds, replies, start, !single);
        if (r != RLK_OK && single) replies[0] = NULL;
    }
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
