/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Script calls' words and replies (see scriptcall.h), with no
 * connection: the heads of FCALL, EVALSHA and EVAL of a script, and what
 * an error answering one calls for.  The request core sends script calls
 * with them; the blocking script layer (script.c) too.
 */
#include "resplock.h"
#include "internal.h"
#include "reply.h"
#include "scriptcall.h"
#include "sha1.h"

#include <string.h>

void rlk_script_init(rlk_script *s, const char *text, size_t len)
{
    s->text = text;
    s->len = len ? len : strlen(text);
    rlk__sha1_hex(text, s->len, s->sha1);
}

const char rlk__FCALL[] = "FCALL";

/* By address, not by text: a caller's own script with the same words is
 * not the library's (its function may be another version's), and the
 * lookup costs no comparison of texts on every call. */
const rlk__script_fn *rlk__script_function(const rlk__script_library *lib, const rlk_script *s)
{
    for (size_t i = 0; lib && i < lib->nfunctions; i++)
        if (s->text == lib->functions[i].text && s->len == lib->functions[i].len)
            return &lib->functions[i];
    return NULL;
}

int rlk__script_head(const rlk__script_library *lib, const rlk_script *s, int how, int nkeys,
                     const char **w, size_t *wl, char *digits)
{
    int flags = how & RLK__CALL_FLAGS;
    how &= ~RLK__CALL_FLAGS;
    const rlk__script_fn *f =
        how == RLK__CALL_FCALL || flags ? rlk__script_function(lib, s) : NULL;
    /* What EVAL sends and EVALSHA names. */
    const char *text = s->text, *sha1 = s->sha1;
    size_t len = s->len;
    if (flags && f && f->flagged) {
        text = f->flagged;
        len = f->flagged_len;
        sha1 = f->flagged_sha1;
    }
    if (f && how == RLK__CALL_FCALL) {
        w[0] = rlk__FCALL;
        wl[0] = sizeof rlk__FCALL - 1;
        w[1] = f->name;
        wl[1] = strlen(f->name);
    } else if (how == RLK__CALL_EVAL) {
        w[0] = "EVAL";
        wl[0] = 4;
        w[1] = text;
        wl[1] = len;
    } else {
        how = RLK__CALL_EVALSHA;
        w[0] = "EVALSHA";
        wl[0] = 7;
        w[1] = sha1;
        wl[1] = 40;
    }
    w[2] = digits;
    wl[2] = rlk__utoa(digits, (unsigned)nkeys);
    return how;
}

/* Whether error reply v starts with word (its code, or more). */
static int starts(const rlk_resp_value *v, const char *word)
{
    size_t n = strlen(word);
    return rlk__is_error(v) && v->len >= n && memcmp(v->str, word, n) == 0;
}

/* Whether error reply v has text in it. */
static int mentions(const rlk_resp_value *v, const char *text)
{
    size_t n = strlen(text);
    for (size_t i = 0; rlk__is_error(v) && i + n <= v->len; i++)
        if (memcmp(v->str + i, text, n) == 0) return 1;
    return 0;
}

/* The errors with which a server refuses a write command before running
 * it for a state it is in, and which EVAL of the same script meets only
 * at its first write, if it makes one. */
int rlk__state_refused(const rlk_resp_value *v)
{
    static const char *const codes[] = {"OOM ", "MISCONF ", "NOREPLICAS ", "READONLY ",
                                        "MASTERDOWN "};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        if (starts(v, codes[i])) return 1;
    return 0;
}

/* Whether a function's call answered v did not run and goes as EVALSHA:
 * refused for the server's state, or by an ACL (FCALL itself, or a key,
 * which EVALSHA then meets too). */
static int refused_before_run(const rlk_resp_value *v)
{
    return rlk__state_refused(v) || starts(v, "NOPERM ");
}

/* Whether FCALL's reply v says this connection cannot use FCALL at all. */
static int fcall_unusable(const rlk_resp_value *v)
{
    return starts(v, "ERR unknown command") || (starts(v, "NOPERM ") && mentions(v, "'fcall'"));
}

int rlk__library_loaded(const rlk_resp_value *v)
{
    return !rlk__is_error(v) || (starts(v, "ERR ") && mentions(v, " already exists"));
}

int rlk__fcall_error(const rlk_resp_value *v)
{
    if (starts(v, "ERR Function not found")) return RLK__FCALL_MISSING;
    if (fcall_unusable(v)) return RLK__FCALL_UNUSABLE;
    if (refused_before_run(v)) return RLK__FCALL_REFUSED;
    return 0;
}

char *rlk__script_library_text(const rlk__script_library *lib, size_t *len)
{
    size_t n = 0;
    for (size_t i = 0; i < lib->nparts; i++) n += strlen(lib->parts[i]);
    char *t = rlk__malloc(n + 1);
    if (!t) return NULL;
    *len = 0;
    for (size_t i = 0; i < lib->nparts; i++) {
        size_t l = strlen(lib->parts[i]);
        memcpy(t + *len, lib->parts[i], l);
        *len += l;
    }
    t[*len] = '\0';
    return t;
}

