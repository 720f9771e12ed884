/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Server-side scripts called by SHA1.  EVALSHA goes first; a NOSCRIPT
 * answer (after SCRIPT FLUSH, a restart, a failover) is met with SCRIPT
 * LOAD and one retry, so callers never see it.  What the scripts do is
 * not this file's business.
 */
#include "resplock.h"
#include "clock.h"
#include "sha1.h"
#include "conn_internal.h"

#include <stdio.h>
#include <string.h>

void rlk_script_init(rlk_script *s, const char *text, size_t len)
{
    s->text = text;
    s->len = len ? len : strlen(text);
    rlk__sha1_hex(text, s->len, s->sha1);
}

/* argv for EVALSHA: the three leading words, then the caller's. */
#define EVAL_STACK_ARGS 16

int rlk_conn_eval(rlk_conn *c, rlk_resp_value **reply, const rlk_script *s,
                  int nkeys, int argc, const char *const *argv,
                  const size_t *argvlen)
{
    *reply = NULL;
    if (nkeys < 0 || nkeys > argc || argc < 0)
        return rlk__conn_fail(c, RLK_ERR_INVALID, "script call with %d keys among %d arguments",
                              nkeys, argc);
    rlk_request q = {s, nkeys, argc, argv, argvlen};
    rlk_resp_value *one = NULL;
    /* A one-request pipeline does EVALSHA, NOSCRIPT, SCRIPT LOAD and the
     * retry; but copies strings.  The common case goes through
     * rlk_conn_command instead, which hands out views. */
    const char *sv[3 + EVAL_STACK_ARGS];
    size_t sl[3 + EVAL_STACK_ARGS];
    char nk[24];
    if (argc <= EVAL_STACK_ARGS) {
        size_t nkl = rlk__utoa(nk, (unsigned)nkeys);
        sv[0] = "EVALSHA"; sl[0] = 7;
        sv[1] = s->sha1;   sl[1] = 40;
        sv[2] = nk;        sl[2] = nkl;
        for (int i = 0; i < argc; i++) {
            sv[3 + i] = argv[i];
            sl[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
        }
        int64_t start = rlk__now_ms();
        int r = rlk_conn_command(c, &one, 3 + argc, sv, sl);
        if (r != RLK_OK) return r;
        if (rlk_reply_error_class(one) != RLK_EC_NOSCRIPT) {
            *reply = one;
            return RLK_OK;
        }
        /* The load and the retry finish within the first command's
         * timeout, as a pipeline's retries do: one call, one deadline. */
        int64_t cap = rlk__conn_narrow(c, start);
        const char *load[3] = {"SCRIPT", "LOAD", s->text};
        size_t loadl[3] = {6, 4, s->len};
        r = rlk_conn_command(c, &one, 3, load, loadl);
        if (r == RLK_OK && (one->type == RLK_RESP_ERROR || one->type == RLK_RESP_BLOB_ERROR))
            r = rlk__conn_fail(c, RLK_ERR_SERVER, "SCRIPT LOAD refused: %.*s",
                               (int)(one->len > 300 ? 300 : one->len), one->str);
        if (r == RLK_OK) r = rlk_conn_command(c, &one, 3 + argc, sv, sl);
        if (r == RLK_OK) *reply = one;
        rlk__conn_cap(c, cap);
        return r;
    }
    int r = rlk_conn_pipeline(c, 1, &q, &one);
    if (r == RLK_OK) *reply = one;
    return r;
}
