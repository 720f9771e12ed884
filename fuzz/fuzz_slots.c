/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fuzz harness for the slot table (src/route/slots.h).  One input is the bytes
 * a (possibly hostile) cluster node sent, behind a one-byte header:
 *
 *   byte 0  bit 0  no origin host (else "origin.example")
 *           bit 1  over TLS (CLUSTER SLOTS' and MOVED's port is the TLS one)
 *           bit 2  allocations through the hook fail after a count taken
 *                  from bits 3-7 (0-31)
 *   rest    RESP replies, each read whole by the library's reader; at
 *           most MAX_STREAM bytes are used
 *
 * Every reply is given to rlk__slots_from_shards and rlk__slots_from_slots
 * (two tables that live across the input's replies), every error reply
 * to rlk__reply_class and rlk__parse_redirect, and a redirect read to
 * rlk__slots_moved.  The properties checked, each an abort() when
 * violated:
 *   (a) a build that fails leaves the table as it was (owners and nodes)
 *       and gives a reason; one that succeeds gives a consistent table:
 *       each served slot's owner is a listed primary with a port and a
 *       host within bounds, each node's primary is a listed node, at most
 *       RLK__SLOTS_MAX_NODES nodes;
 *   (b) a redirect read has a slot below 16384, a port in 1..65535 and a
 *       host of at most 255 bytes without spaces; it is read only from an
 *       error whose class is MOVED or ASK; a MOVED patch of it makes the
 *       node it names the slot's owner;
 *   (c) everything allocated through the library's hook is freed.
 *
 * Built with RLK_FUZZ_MAIN it is a program that runs files, directories
 * of files, or stdin (fuzz/fuzz_main.h).
 */
#include "reply.h"
#include "resp.h"
#include "slots.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_STREAM (64u * 1024)

static const uint8_t *cur_input;
static size_t cur_size;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void violated(const char *fmt, ...)
{
    va_list ap;
    fputs("fuzz_slots: property violated: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nfuzz_slots: input (%zu bytes, hex):", cur_size);
    for (size_t i = 0; i < cur_size && i < 1024; i++)
        fprintf(stderr, "%s%02x", i % 32 ? "" : "\n  ", cur_input[i]);
    fputc('\n', stderr);
    abort();
}

#define CHECK(cond, ...) do { if (!(cond)) violated(__VA_ARGS__); } while (0)

/* ------------------------------------------------------------------ */
/* The allocation hook: counts, and fails on request                    */

static long live_allocs;
static int fail_at = -1, nallocs;

static void *h_malloc(void *ctx, size_t n)
{
    (void)ctx;
    if (fail_at >= 0 && nallocs++ >= fail_at) return NULL;
    void *p = malloc(n);
    if (p) live_allocs++;
    return p;
}

static void *h_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    if (fail_at >= 0 && nallocs++ >= fail_at) return NULL;
    void *q = realloc(p, n);
    if (q && !p) live_allocs++;
    return q;
}

static void h_free(void *ctx, void *p)
{
    (void)ctx;
    if (p) live_allocs--;
    free(p);
}

/* ------------------------------------------------------------------ */

static void check_table(const rlk__slots *t, const char *what)
{
    CHECK(t->nnodes <= RLK__SLOTS_MAX_NODES && t->nnodes <= t->cap, "%s: %zu nodes, room %zu",
          what, t->nnodes, t->cap);
    for (size_t i = 0; i < t->nnodes; i++) {
        const rlk__node *n = &t->nodes[i];
        CHECK(memchr(n->host, '\0', sizeof n->host) && memchr(n->ip, '\0', sizeof n->ip) &&
                  memchr(n->id, '\0', sizeof n->id),
              "%s: node %zu: a string not terminated", what, i);
        CHECK(n->port >= 0 && n->port <= 65535 && n->tls_port >= 0 && n->tls_port <= 65535,
              "%s: node %zu: ports %d %d", what, i, n->port, n->tls_port);
        CHECK(n->primary == RLK__SLOTS_NONE || n->primary < t->nnodes,
              "%s: node %zu: primary %u", what, i, n->primary);
    }
    for (unsigned s = 0; s < RLK__NSLOTS; s++) {
        const rlk__node *o;
        if (t->owner[s] == RLK__SLOTS_NONE) continue;
        CHECK(t->owner[s] < t->nnodes, "%s: slot %u: owner %u of %zu", what, s, t->owner[s],
              t->nnodes);
        o = &t->nodes[t->owner[s]];
        CHECK(o->role == RLK__ROLE_PRIMARY && (o->port || o->tls_port),
              "%s: slot %u served by a replica or a node without a port", what, s);
        CHECK(rlk__slots_owner(t, s) == o, "%s: slot %u: owner lookup", what, s);
    }
}

/* A snapshot of a table, to see that a refused build left it alone. */
typedef struct snap {
    uint16_t owner[RLK__NSLOTS];
    size_t nnodes;
    rlk__node *nodes;
} snap;

static void take(snap *s, const rlk__slots *t)
{
    memcpy(s->owner, t->owner, sizeof s->owner);
    s->nnodes = t->nnodes;
    s->nodes = malloc((t->nnodes ? t->nnodes : 1) * sizeof *t->nodes);
    if (!s->nodes) abort();
    if (t->nnodes) memcpy(s->nodes, t->nodes, t->nnodes * sizeof *t->nodes);
}

static void same(const snap *s, const rlk__slots *t, const char *what)
{
    CHECK(s->nnodes == t->nnodes && memcmp(s->owner, t->owner, sizeof s->owner) == 0 &&
              (!t->nnodes || memcmp(s->nodes, t->nodes, t->nnodes * sizeof *t->nodes) == 0),
          "%s: a refused build changed the table", what);
    free(s->nodes);
}

static void build(rlk__slots *t, const rlk_resp_value *v, const char *origin, int tls, int shards)
{
    const char *what = shards ? "CLUSTER SHARDS" : "CLUSTER SLOTS";
    snap s;
    int rc;
    take(&s, t);
    rc = shards ? rlk__slots_from_shards(t, v, origin) : rlk__slots_from_slots(t, v, origin, tls);
    CHECK(rc == RLK_OK || rc == RLK_ERR_PROTO || rc == RLK_ERR_LIMIT || rc == RLK_ERR_NOMEM,
          "%s: status %d", what, rc);
    if (rc == RLK_OK) {
        free(s.nodes);
        CHECK(t->err[0] == '\0', "%s: success with a reason \"%s\"", what, t->err);
    } else {
        same(&s, t, what);
        CHECK(t->err[0] != '\0', "%s: status %d without a reason", what, rc);
    }
    check_table(t, what);
}

static void redirects(rlk__slots *t, const rlk_resp_value *v, const char *origin, int tls)
{
    rlk_error_class e = rlk__reply_class(v);
    rlk__redirect r;
    int is_err = v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR;
    CHECK((e == RLK_EC_NONE) == !is_err, "class %d of a reply of type %c", e, v->type);
    if (!v->str || rlk__parse_redirect(v->str, v->len, origin, &r) != 0) return;
    CHECK(r.slot < RLK__NSLOTS && r.port > 0 && r.port <= 65535 &&
              strlen(r.host) <= RLK__SLOTS_HOST_MAX && !strchr(r.host, ' '),
          "redirect: slot %u port %d host \"%s\"", r.slot, r.port, r.host);
    CHECK(!is_err || e == (r.ask ? RLK_EC_ASK : RLK_EC_MOVED), "redirect of class %d", e);
    if (r.host[0]) {
        int i = rlk__slots_moved(t, r.slot, r.host, r.port, tls);
        CHECK(i >= 0 || i == RLK_ERR_LIMIT || i == RLK_ERR_NOMEM, "MOVED: status %d", i);
        if (i >= 0)
            CHECK(t->owner[r.slot] == i && (tls ? t->nodes[i].tls_port : t->nodes[i].port) ==
                                               r.port,
                  "MOVED: slot %u not given to node %d", r.slot, i);
        check_table(t, "MOVED");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const rlk_allocator hook = {h_malloc, h_realloc, h_free, NULL};
    uint8_t cfg = size ? data[0] : 0;
    const char *origin = cfg & 1 ? NULL : "origin.example";
    int tls = (cfg >> 1) & 1;
    const char *buf;
    size_t len, off = 0;
    rlk_resp_arena arena;
    rlk_resp_reader reader;
    rlk__slots a, b;

    cur_input = data;
    cur_size = size;
    rlk_set_allocator(&hook);
    live_allocs = 0;
    nallocs = 0;
    fail_at = cfg & 4 ? cfg >> 3 : -1;
    buf = size ? (const char *)data + 1 : "";
    len = size > 1 ? size - 1 : 0;
    if (len > MAX_STREAM) len = MAX_STREAM;

    rlk_resp_arena_init(&arena, NULL, 0, 1u << 20);
    rlk_resp_reader_init(&reader, &arena, NULL);
    rlk__slots_init(&a);
    rlk__slots_init(&b);
    while (off < len) {
        rlk_resp_value *v = NULL;
        size_t used = 0;
        if (rlk_resp_read(&reader, buf + off, len - off, &used, &v) != 1) break;
        off += used;
        build(&a, v, origin, tls, 1);
        build(&b, v, origin, tls, 0);
        redirects(&a, v, origin, tls);
        redirects(&b, v, origin, tls);
        rlk_resp_arena_reset(&arena);
    }
    rlk__slots_free(&a);
    rlk__slots_free(&b);
    rlk_resp_reader_free(&reader);
    rlk_resp_arena_free(&arena);
    CHECK(live_allocs == 0, "%ld allocations not freed", live_allocs);
    fail_at = -1;
    rlk_set_allocator(NULL);
    return 0;
}

#define FUZZ_NAME "fuzz_slots"
#include "fuzz_main.h"
