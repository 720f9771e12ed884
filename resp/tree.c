/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The tree reader: whole replies built from parser events into an arena.
 *
 * A reply is consumed only when complete, so the caller may move or grow
 * its buffer between calls.  Nodes therefore remember string positions as
 * offsets from the reply's first byte while it is being built, chained
 * through their (unused) child pointer; when the reply completes the
 * chain is walked once and the offsets become pointers into the buffer
 * of that call.
 */
#include "resp.h"
#include "internal.h"

#include <stdalign.h>
#include <stdint.h>
#include <string.h>

int rlk__parser_fail(rlk_resp_parser *p, int status, uint64_t at, const char *msg);

/* ------------------------------------------------------------------ */
/* Arena                                                               */

struct rlk_resp_arena_block {
    rlk_resp_arena_block *next;
    size_t cap;
    alignas(max_align_t) unsigned char data[];
};

#define ARENA_ALIGN (alignof(max_align_t))
#define ARENA_FIRST_BLOCK 4096u

void rlk_resp_arena_init(rlk_resp_arena *a, void *buf, size_t cap, size_t max_bytes)
{
    memset(a, 0, sizeof *a);
    /* The caller's buffer may be unaligned: start at the first aligned byte. */
    if (buf && cap) {
        uintptr_t u = (uintptr_t)buf;
        size_t skip = (ARENA_ALIGN - (u % ARENA_ALIGN)) % ARENA_ALIGN;
        if (skip < cap) {
            a->first = (unsigned char *)buf + skip;
            a->first_cap = cap - skip;
        }
    }
    a->cur = a->first;
    a->cur_cap = a->first_cap;
    a->max_bytes = max_bytes;
}

void rlk_resp_arena_free(rlk_resp_arena *a)
{
    rlk_resp_arena_block *b = a->blocks;
    while (b) {
        rlk_resp_arena_block *n = b->next;
        rlk__free(b);
        b = n;
    }
    a->blocks = NULL;
    a->heap_bytes = 0;
    a->cur = a->first;
    a->cur_cap = a->first_cap;
    a->cur_used = 0;
}

void rlk_resp_arena_reset(rlk_resp_arena *a)
{
    /* Keep the largest heap block: a reader whose replies once outgrew the
     * caller's buffer would otherwise allocate again for every reply. */
    rlk_resp_arena_block *keep = NULL, *b = a->blocks;
    while (b) {
        rlk_resp_arena_block *n = b->next;
        if (!keep || b->cap > keep->cap) {
            if (keep) rlk__free(keep);
            keep = b;
        } else {
            rlk__free(b);
        }
        b = n;
    }
    a->blocks = keep;
    a->cur_used = 0;
    if (keep) {
        keep->next = NULL;
        a->heap_bytes = keep->cap;
        a->cur = keep->data;
        a->cur_cap = keep->cap;
    } else {
        a->heap_bytes = 0;
        a->cur = a->first;
        a->cur_cap = a->first_cap;
    }
}

void *rlk_resp_arena_alloc(rlk_resp_arena *a, size_t size)
{
    size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (need < size) return NULL;
    if (a->cur && a->cur_cap - a->cur_used >= need) {
        void *p = a->cur + a->cur_used;
        a->cur_used += need;
        return p;
    }
    size_t cap = a->cur_cap * 2;
    if (cap < ARENA_FIRST_BLOCK) cap = ARENA_FIRST_BLOCK;
    if (cap < need) cap = need;
    if (a->max_bytes) {
        size_t held = a->first_cap + a->heap_bytes;
        if (held >= a->max_bytes || need > a->max_bytes - held) return NULL;
        if (cap > a->max_bytes - held) cap = a->max_bytes - held;
    }
    if (cap > SIZE_MAX - sizeof(rlk_resp_arena_block)) return NULL;
    rlk_resp_arena_block *b = rlk__malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->cap = cap;
    b->next = a->blocks;
    a->blocks = b;
    a->heap_bytes += cap;
    a->cur = b->data;
    a->cur_cap = cap;
    a->cur_used = need;
    return b->data;
}

void rlk_resp_arena_mark_at(const rlk_resp_arena *a, rlk_resp_arena_mark *m)
{
    m->blocks = a->blocks;
    m->cur = a->cur;
    m->cur_cap = a->cur_cap;
    m->cur_used = a->cur_used;
    m->heap_bytes = a->heap_bytes;
}

void rlk_resp_arena_rewind(rlk_resp_arena *a, const rlk_resp_arena_mark *m)
{
    /* Blocks are only ever added at the head: those before the mark's
     * head are the newer ones. */
    while (a->blocks && a->blocks != m->blocks) {
        rlk_resp_arena_block *n = a->blocks->next;
        rlk__free(a->blocks);
        a->blocks = n;
    }
    a->cur = m->cur;
    a->cur_cap = m->cur_cap;
    a->cur_used = m->cur_used;
    a->heap_bytes = m->heap_bytes;
}

/* ------------------------------------------------------------------ */
/* Reader                                                              */

struct rlk_resp_build {
    rlk_resp_value *agg;     /* the aggregate being filled             */
    rlk_resp_value *tail;    /* its last element                       */
    rlk_resp_value *attr;    /* attribute waiting for the next element */
    uint64_t count;          /* elements appended                      */
};

void rlk_resp_reader_init(rlk_resp_reader *r, rlk_resp_arena *arena,
                          const rlk_resp_limits *limits)
{
    memset(r, 0, sizeof *r);
    rlk_resp_parser_init(&r->parser, limits);
    r->arena = arena;
}

void rlk_resp_reader_free(rlk_resp_reader *r)
{
    rlk_resp_parser_free(&r->parser);
    rlk__free(r->build);
    r->build = NULL;
    r->build_cap = 0;
}

void rlk_resp_reader_reset(rlk_resp_reader *r)
{
    rlk_resp_parser_reset(&r->parser);
    r->resume = 0;
    r->root = NULL;
    r->pending_attr = NULL;
    r->fixups = NULL;
    r->stream_cap = 0;
}

static int nomem(rlk_resp_reader *r, size_t at, const char *what)
{
    return rlk__parser_fail(&r->parser, RLK_ERR_NOMEM, at, what);
}

static rlk_resp_value *new_node(rlk_resp_reader *r, const rlk_resp_event *ev)
{
    rlk_resp_value *v = rlk_resp_arena_alloc(r->arena, sizeof *v);
    if (!v) return NULL;
    memset(v, 0, sizeof *v);
    v->type = ev->type;
    return v;
}

/* Puts a finished or opening node in its place: as the root, as the next
 * element of the open aggregate, or aside as a pending attribute. */
static void place(rlk_resp_reader *r, rlk_resp_value *v, uint32_t depth)
{
    rlk_resp_value **pending = depth ? &r->build[depth - 1].attr : &r->pending_attr;
    if (v->type == RLK_RESP_ATTR) return; /* placed at its END */
    v->attr = *pending;
    *pending = NULL;
    if (depth == 0) {
        r->root = v;
        return;
    }
    struct rlk_resp_build *b = &r->build[depth - 1];
    if (b->tail) b->tail->next = v;
    else b->agg->child = v;
    b->tail = v;
    b->count++;
}

static int push_build(rlk_resp_reader *r, rlk_resp_value *v, uint32_t depth)
{
    if (depth >= r->build_cap) {
        uint32_t ncap = r->build_cap ? r->build_cap * 2 : 16;
        while (ncap <= depth) ncap *= 2;
        struct rlk_resp_build *nb = rlk__realloc(r->build, sizeof *nb * ncap);
        if (!nb) return -1;
        r->build = nb;
        r->build_cap = ncap;
    }
    struct rlk_resp_build *b = &r->build[depth];
    b->agg = v;
    b->tail = NULL;
    b->attr = NULL;
    b->count = 0;
    return 0;
}

/* Remembers a string view as an offset from the reply's start, or
 * copies it when the caller asked for replies that outlive buf. */
static int defer_view(rlk_resp_reader *r, rlk_resp_value *v, const char *reply,
                      const char *s, size_t n)
{
    v->len = n;
    if (r->copy_strings) {
        char *d = rlk_resp_arena_alloc(r->arena, n + 1);
        if (!d) return -1;
        memcpy(d, s, n);
        d[n] = '\0';
        v->str = d;
        return 0;
    }
    v->str = (const char *)(uintptr_t)(s - reply);
    v->child = r->fixups;
    r->fixups = v;
    return 0;
}

static int append_chunk(rlk_resp_reader *r, rlk_resp_value *v, const char *s, size_t n)
{
    if (v->len + n > r->stream_cap) {
        size_t cap = r->stream_cap ? r->stream_cap * 2 : 64;
        while (cap < v->len + n) cap *= 2;
        char *nb = rlk_resp_arena_alloc(r->arena, cap);
        if (!nb) return -1;
        if (v->len) memcpy(nb, v->str, v->len);
        v->str = nb;
        r->stream_cap = cap;
    }
    memcpy((char *)v->str + v->len, s, n);
    v->len += n;
    return 0;
}

static void finish_reply(rlk_resp_reader *r, const char *reply)
{
    rlk_resp_value *v = r->fixups;
    while (v) {
        rlk_resp_value *n = v->child;
        v->child = NULL;
        v->str = reply + (uintptr_t)v->str;
        v = n;
    }
    r->fixups = NULL;
}

int rlk_resp_read(rlk_resp_reader *r, const char *buf, size_t len,
                  size_t *consumed, rlk_resp_value **out)
{
    rlk_resp_event ev;
    size_t pos = r->resume, c;
    *consumed = 0;
    *out = NULL;
    for (;;) {
        int rc = rlk_resp_next(&r->parser, buf + pos, len - pos, &c, &ev);
        if (rc < 0) return rc;
        pos += c;
        if (rc == 0) {
            r->resume = pos;
            return 0;
        }
        rlk_resp_value *v;
        uint32_t d = ev.depth;
        switch (ev.kind) {
        case RLK_EV_VALUE:
            if (!(v = new_node(r, &ev))) return nomem(r, pos, "reply too large for the arena");
            switch (ev.type) {
            case RLK_RESP_INTEGER: case RLK_RESP_BOOL:
                v->integer = ev.integer;
                break;
            case RLK_RESP_NULL:
                v->null_wire = ev.null_wire;
                break;
            case RLK_RESP_DOUBLE:
                v->dbl = ev.dbl;
                if (defer_view(r, v, buf, ev.str, ev.len) != 0)
                    return nomem(r, pos, "reply too large for the arena");
                break;
            case RLK_RESP_VERBATIM:
                memcpy(v->format, ev.format, sizeof v->format);
                /* fall through */
            default:
                if (defer_view(r, v, buf, ev.str, ev.len) != 0)
                    return nomem(r, pos, "reply too large for the arena");
                break;
            }
            place(r, v, d);
            break;
        case RLK_EV_BEGIN:
            if (!(v = new_node(r, &ev))) return nomem(r, pos, "reply too large for the arena");
            if (ev.flags & RLK_EV_F_STREAMED) v->flags = RLK_RESP_V_STREAMED;
            if (ev.type == RLK_RESP_BULK) {
                v->str = "";
                r->stream_cap = 0;
            } else if (push_build(r, v, d) != 0) {
                return nomem(r, pos, "out of memory for the reply tree");
            }
            place(r, v, d);
            break;
        case RLK_EV_CHUNK: {
            rlk_resp_value *s = d ? r->build[d - 1].tail : r->root;
            if (append_chunk(r, s, ev.str, ev.len) != 0)
                return nomem(r, pos, "reply too large for the arena");
            break;
        }
        case RLK_EV_END:
            if (ev.type != RLK_RESP_BULK) {
                struct rlk_resp_build *b = &r->build[d];
                int pairs = ev.type == RLK_RESP_MAP || ev.type == RLK_RESP_ATTR;
                b->agg->len = (size_t)(b->count >> pairs);
                if (ev.type == RLK_RESP_ATTR) {
                    /* Attributes in a row: each hangs off the next one, so
                     * none is lost and the value holds the last. */
                    rlk_resp_value **pending = d ? &r->build[d - 1].attr : &r->pending_attr;
                    b->agg->attr = *pending;
                    *pending = b->agg;
                }
            }
            break;
        }
        if (ev.flags & RLK_EV_F_REPLY_END) {
            finish_reply(r, buf);
            *out = r->root;
            *consumed = pos;
            r->root = NULL;
            r->resume = 0;
            return 1;
        }
    }
}

const rlk_resp_value *rlk_resp_value_at(const rlk_resp_value *v, size_t i)
{
    if (!v) return NULL;
    const rlk_resp_value *c = v->child;
    while (c && i--) c = c->next;
    return c;
}
