/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Codec benchmark: resplock's parser and command encoder against hiredis,
 * in one run, on the same inputs.  `make bench` builds and runs it.
 *
 * Parsing: each workload is a stream of replies in memory.  Every reader
 * gets it in 16 KiB pieces, the way a socket delivers it: resplock reads
 * into its receive buffer, hiredis into a 16 KiB buffer that it feeds to
 * its reader, as hiredis's redisBufferRead does; each copy stands for the
 * read.  Each run parses a fixed number of replies; the
 * best of RUNS runs is reported.  Every reader touches every scalar (its
 * length, integer and first byte go into a checksum), and the checksums
 * of all readers must agree, so none can skip work.
 *
 * Encoding: the same argv formatted again and again; resplock appends to
 * one reused rlk_buf, hiredis allocates each command and it is freed.
 */
#include "resp.h"

#include <hiredis.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIECE (16u * 1024)
#define RUNS 5

/* ------------------------------------------------------------------ */
/* Allocation counting                                                  */

/* resplock: through its allocator hook. */
static unsigned long long rlk_allocs;

static void *hook_malloc(void *ctx, size_t n)
{
    (void)ctx;
    rlk_allocs++;
    return malloc(n);
}

static void *hook_realloc(void *ctx, void *p, size_t n)
{
    (void)ctx;
    rlk_allocs++;
    return realloc(p, n);
}

static void hook_free(void *ctx, void *p)
{
    (void)ctx;
    free(p);
}

/* hiredis 0.14 has no allocator hook: with glibc, this program's malloc
 * family wraps the C library's and counts, which also sees hiredis's
 * calls.  Not under a sanitizer, which brings its own malloc. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define BENCH_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define BENCH_SANITIZED 1
#endif

#if defined(__GLIBC__) && !defined(BENCH_SANITIZED)
#define HAVE_MALLOC_COUNT 1
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t k);
extern void *__libc_realloc(void *p, size_t n);
extern void __libc_free(void *p);

static unsigned long long sys_allocs;

/* The C names are the bench's own; the linker names (asm labels) are
 * the C library's, which these replace for the whole program.  A tool
 * that reads names, not symbols, then takes no call to malloc in the
 * library for a call into this file. */
void *bench_malloc(size_t n) __asm__("malloc");
void *bench_calloc(size_t n, size_t k) __asm__("calloc");
void *bench_realloc(void *p, size_t n) __asm__("realloc");
void bench_free(void *p) __asm__("free");

void *bench_malloc(size_t n)
{
    sys_allocs++;
    return __libc_malloc(n);
}

void *bench_calloc(size_t n, size_t k)
{
    sys_allocs++;
    return __libc_calloc(n, k);
}

void *bench_realloc(void *p, size_t n)
{
    sys_allocs++;
    return __libc_realloc(p, n);
}

void bench_free(void *p)
{
    __libc_free(p);
}
#else
#define HAVE_MALLOC_COUNT 0
static unsigned long long sys_allocs;
#endif

/* ------------------------------------------------------------------ */
/* Helpers                                                              */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench_resp: %s\n", what);
    exit(1);
}

/* Results escape here so no loop can be optimized away. */
static volatile uint64_t sink;

typedef struct stream {
    char *data;
    size_t len, cap;
    uint64_t replies;     /* replies in one pass over data */
} stream;

static void put(stream *s, const void *p, size_t n)
{
    if (s->len + n > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n) cap *= 2;
        s->data = realloc(s->data, cap);
        if (!s->data) die("out of memory");
        s->cap = cap;
    }
    memcpy(s->data + s->len, p, n);
    s->len += n;
}

static void puts_(stream *s, const char *str)
{
    put(s, str, strlen(str));
}

static void put_bulk(stream *s, const char *p, size_t n)
{
    char hdr[32];
    int k = snprintf(hdr, sizeof hdr, "$%zu\r\n", n);
    put(s, hdr, (size_t)k);
    put(s, p, n);
    put(s, "\r\n", 2);
}

/* ------------------------------------------------------------------ */
/* Workloads                                                            */

static const char token[] = "4f3c2a1e-9b7d-4c5e-8a6f-0123456789ab"; /* 36 bytes */

/* What a lock client mostly reads: SET NX -> +OK, a release script -> :1,
 * a lost race -> $-1, a GET of the token, and pub/sub notifications. */
static void make_mix(stream *s, int groups)
{
    static const char payload[] = "released:4f3c2a1e-9b7d-4c5e-8a6f-0123456789ab";
    for (int i = 0; i < groups; i++) {
        puts_(s, "+OK\r\n:1\r\n$-1\r\n");
        put_bulk(s, token, sizeof token - 1);
        puts_(s, "*3\r\n");
        put_bulk(s, "message", 7);
        put_bulk(s, "resplock:events", 15);
        put_bulk(s, payload, sizeof payload - 1);
        s->replies += 5;
    }
}

static void make_big_bulks(stream *s, int count)
{
    size_t n = 1u << 20;
    char *blob = malloc(n);
    if (!blob) die("out of memory");
    for (size_t i = 0; i < n; i++) blob[i] = (char)('a' + (i * 7) % 26);
    for (int i = 0; i < count; i++) {
        blob[0] = (char)('A' + i % 26);
        put_bulk(s, blob, n);
        s->replies++;
    }
    free(blob);
}

static void make_arrays(stream *s, int count)
{
    char item[32];
    for (int i = 0; i < count; i++) {
        puts_(s, "*500\r\n");
        for (int j = 0; j < 500; j++) {
            int k = snprintf(item, sizeof item, "m:%d", (i * 500 + j) % 100000);
            put_bulk(s, item, (size_t)k);
        }
        s->replies++;
    }
}

/* HGETALL of a 20-field hash: RESP3 sends a map, RESP2 a flat array. */
static void make_maps(stream *s, int count, int resp3)
{
    char k[32], v[48];
    for (int i = 0; i < count; i++) {
        puts_(s, resp3 ? "%20\r\n" : "*40\r\n");
        for (int j = 0; j < 20; j++) {
            int kn = snprintf(k, sizeof k, "field%02d", j);
            int vn = snprintf(v, sizeof v, "value-%d-%d", i, j * 37);
            put_bulk(s, k, (size_t)kn);
            put_bulk(s, v, (size_t)vn);
        }
        s->replies++;
    }
}

/* ------------------------------------------------------------------ */
/* Readers.  Each parses `passes` passes over the stream and returns the */
/* replies it saw; the checksum covers every scalar.                     */

typedef struct result {
    double secs;
    uint64_t replies;
    uint64_t checksum;
    unsigned long long allocs;
} result;

/* The checksum of one scalar: an integer's value; a string's length and
 * first byte; nothing for a null. */
static uint64_t touch(size_t len, int64_t integer, const char *str)
{
    return (uint64_t)len + (uint64_t)integer + (len ? (unsigned char)str[0] : 0);
}

static uint64_t touch_scalar(int type, size_t len, int64_t integer, const char *str)
{
    switch (type) {
    case RLK_RESP_INTEGER: return touch(0, integer, NULL);
    case RLK_RESP_NULL: case RLK_RESP_BOOL: case RLK_RESP_DOUBLE: return 0;
    default: return touch(len, 0, str);
    }
}

static result run_events(const stream *s, int passes)
{
    rlk_resp_parser p;
    rlk_buf rb;
    result res = {0, 0, 0, 0};
    unsigned long long a0 = rlk_allocs;
    double t0 = now();

    rlk_resp_parser_init(&p, NULL);
    rlk_buf_init(&rb);
    for (int pass = 0; pass < passes; pass++) {
        for (size_t off = 0; off < s->len; off += PIECE) {
            size_t n = s->len - off < PIECE ? s->len - off : PIECE;
            if (rlk_buf_append(&rb, s->data + off, n) != RLK_OK) die("rlk_buf_append");
            size_t pos = 0, c;
            rlk_resp_event ev;
            int r;
            while ((r = rlk_resp_next(&p, rb.data + pos, rb.len - pos, &c, &ev)) == 1) {
                pos += c;
                if (ev.kind == RLK_EV_VALUE)
                    res.checksum += touch_scalar(ev.type, ev.len, ev.integer, ev.str);
                if (ev.flags & RLK_EV_F_REPLY_END) res.replies++;
            }
            if (r < 0) die("resplock event parser: protocol error");
            pos += c;
            rlk_buf_consume(&rb, pos);
        }
    }
    rlk_buf_free(&rb);
    rlk_resp_parser_free(&p);
    res.secs = now() - t0;
    res.allocs = rlk_allocs - a0;
    return res;
}

static uint64_t walk_tree(const rlk_resp_value *v)
{
    uint64_t sum = 0;
    for (; v; v = v->next) {
        if (v->child) {
            sum += walk_tree(v->child);
        } else if (v->type != RLK_RESP_ARRAY && v->type != RLK_RESP_MAP &&
                   v->type != RLK_RESP_SET && v->type != RLK_RESP_PUSH) {
            sum += touch_scalar(v->type, v->len, v->integer, v->str);
        }
    }
    return sum;
}

static result run_tree(const stream *s, int passes)
{
    rlk_resp_arena arena;
    rlk_resp_reader rd;
    rlk_buf rb;
    result res = {0, 0, 0, 0};
    unsigned long long a0 = rlk_allocs;
    double t0 = now();

    rlk_resp_arena_init(&arena, NULL, 0, 0);
    rlk_resp_reader_init(&rd, &arena, NULL);
    rlk_buf_init(&rb);
    for (int pass = 0; pass < passes; pass++) {
        for (size_t off = 0; off < s->len; off += PIECE) {
            size_t n = s->len - off < PIECE ? s->len - off : PIECE;
            if (rlk_buf_append(&rb, s->data + off, n) != RLK_OK) die("rlk_buf_append");
            size_t pos = 0, c;
            rlk_resp_value *root;
            int r;
            while ((r = rlk_resp_read(&rd, rb.data + pos, rb.len - pos, &c, &root)) == 1) {
                pos += c;
                res.checksum += walk_tree(root);
                res.replies++;
                rlk_resp_arena_reset(&arena);
            }
            if (r < 0) die("resplock tree reader: error");
            rlk_buf_consume(&rb, pos);
        }
    }
    rlk_buf_free(&rb);
    rlk_resp_reader_free(&rd);
    rlk_resp_arena_free(&arena);
    res.secs = now() - t0;
    res.allocs = rlk_allocs - a0;
    return res;
}

static uint64_t walk_hiredis(const redisReply *r)
{
    if (r->type == REDIS_REPLY_ARRAY) {
        uint64_t sum = 0;
        for (size_t i = 0; i < r->elements; i++) sum += walk_hiredis(r->element[i]);
        return sum;
    }
    switch (r->type) {
    case REDIS_REPLY_INTEGER: return touch(0, r->integer, NULL);
    case REDIS_REPLY_NIL: return 0;
    default: return touch((size_t)r->len, 0, r->str);
    }
}

static result run_hiredis(const stream *s, int passes)
{
    result res = {0, 0, 0, 0};
    unsigned long long a0 = sys_allocs;
    double t0 = now();

    redisReader *rd = redisReaderCreate();
    if (!rd) die("redisReaderCreate");
    /* hiredis's own socket path (redisBufferRead) reads into a 16 KiB
     * stack buffer and feeds that: the copy into `sock` stands for the
     * read, as the append into rb does for resplock, which reads straight
     * into its receive buffer. */
    static char sock[PIECE];
    for (int pass = 0; pass < passes; pass++) {
        for (size_t off = 0; off < s->len; off += PIECE) {
            size_t n = s->len - off < PIECE ? s->len - off : PIECE;
            memcpy(sock, s->data + off, n);
            if (redisReaderFeed(rd, sock, n) != REDIS_OK) die("redisReaderFeed");
            void *reply;
            for (;;) {
                if (redisReaderGetReply(rd, &reply) != REDIS_OK) die("hiredis reader: error");
                if (!reply) break;
                res.checksum += walk_hiredis(reply);
                res.replies++;
                freeReplyObject(reply);
            }
        }
    }
    redisReaderFree(rd);
    res.secs = now() - t0;
    res.allocs = sys_allocs - a0;
    return res;
}

typedef result (*reader_fn)(const stream *s, int passes);

static result best_of(reader_fn fn, const stream *s, int passes)
{
    result best = fn(s, passes);
    for (int i = 1; i < RUNS; i++) {
        result r = fn(s, passes);
        if (r.replies != best.replies || r.checksum != best.checksum)
            die("a run saw different replies than the run before");
        if (r.secs < best.secs) best.secs = r.secs;
    }
    return best;
}

/* ------------------------------------------------------------------ */
/* Report                                                               */

static void fmt_rate(char *out, size_t cap, double v)
{
    if (v >= 1e9) snprintf(out, cap, "%.2f G", v / 1e9);
    else if (v >= 1e6) snprintf(out, cap, "%.2f M", v / 1e6);
    else if (v >= 1e3) snprintf(out, cap, "%.1f k", v / 1e3);
    else snprintf(out, cap, "%.1f", v);
}

/* Allocations per reply; for a handful in the whole run, the count. */
static void fmt_allocs(char *out, size_t cap, unsigned long long allocs, uint64_t replies)
{
    double v = (double)allocs / (double)replies;
    if (v >= 100) snprintf(out, cap, "%.0f", v);
    else if (allocs < 1000 && v < 0.01) snprintf(out, cap, "%.3f (%llu in all)", v, allocs);
    else snprintf(out, cap, "%.3f", v);
}

static void row(const char *reader, const result *r, uint64_t bytes, int count_allocs,
                double hiredis_rate)
{
    char rate[32], allocs[48], ratio[32] = "";
    double rps = (double)r->replies / r->secs;
    fmt_rate(rate, sizeof rate, rps);
    if (count_allocs) fmt_allocs(allocs, sizeof allocs, r->allocs, r->replies);
    else snprintf(allocs, sizeof allocs, "n/a");
    if (hiredis_rate > 0) snprintf(ratio, sizeof ratio, "%.2fx", rps / hiredis_rate);
    printf("    %-18s %12s %9.0f   %-18s %9s\n", reader, rate, (double)bytes / r->secs / 1e6,
           allocs, ratio);
}

typedef struct workload {
    const char *label;
    const char *note;
    stream ours;          /* what resplock reads                       */
    stream theirs;        /* what hiredis reads (the same, or RESP2)   */
    int passes;
} workload;

static void bench_parse(workload *w)
{
    result ev = best_of(run_events, &w->ours, w->passes);
    result tr = best_of(run_tree, &w->ours, w->passes);
    result hi = best_of(run_hiredis, &w->theirs, w->passes);
    uint64_t want = w->ours.replies * (uint64_t)w->passes;

    if (ev.replies != want || tr.replies != want || hi.replies != want)
        die("a reader saw the wrong number of replies");
    if (ev.checksum != tr.checksum || ev.checksum != hi.checksum)
        die("readers disagree on the values (checksums differ)");

    double hrate = (double)hi.replies / hi.secs;
    uint64_t ob = (uint64_t)w->ours.len * (uint64_t)w->passes;
    uint64_t tb = (uint64_t)w->theirs.len * (uint64_t)w->passes;
    double avg = (double)w->ours.len / (double)w->ours.replies;
    printf("  %s: %" PRIu64 " replies, %.*f bytes each on average%s\n", w->label, want,
           avg < 1000 ? 1 : 0, avg, w->note ? w->note : "");
    row("resplock events", &ev, ob, 1, hrate);
    row("resplock tree", &tr, ob, 1, hrate);
    row("hiredis", &hi, tb, HAVE_MALLOC_COUNT, 0);
}

/* ------------------------------------------------------------------ */
/* Encoder                                                              */

typedef struct command {
    const char *label;
    int argc;
    const char *argv[8];
    size_t argvlen[8];
} command;

static void bench_encode(const command *cmd, long iters)
{
    double best_ours = 1e30, best_theirs = 1e30;
    size_t ours_len = 0, theirs_len = 0;
    unsigned long long ours_allocs = 0, theirs_allocs = 0;
    const char *argv[8]; /* hiredis 0.14 takes a non-const argv array */
    memcpy(argv, cmd->argv, sizeof argv);

    for (int run = 0; run < RUNS; run++) {
        rlk_buf b;
        uint64_t sum = 0;
        unsigned long long a0 = rlk_allocs;
        double t0 = now();
        rlk_buf_init(&b);
        for (long i = 0; i < iters; i++) {
            b.len = 0; /* the buffer is reused: the previous command was sent */
            if (rlk_resp_append_command(&b, cmd->argc, argv, cmd->argvlen) != RLK_OK)
                die("rlk_resp_append_command");
            sum += b.len + (unsigned char)b.data[i % b.len];
        }
        ours_len = b.len;
        rlk_buf_free(&b);
        double t = now() - t0;
        if (t < best_ours) best_ours = t;
        ours_allocs = rlk_allocs - a0;
        sink += sum;

        sum = 0;
        a0 = sys_allocs;
        t0 = now();
        for (long i = 0; i < iters; i++) {
            char *out = NULL;
            int n = redisFormatCommandArgv(&out, cmd->argc, argv, cmd->argvlen);
            if (n <= 0) die("redisFormatCommandArgv");
            sum += (uint64_t)n + (unsigned char)out[i % n];
            theirs_len = (size_t)n;
            redisFreeCommand(out);
        }
        t = now() - t0;
        if (t < best_theirs) best_theirs = t;
        theirs_allocs = sys_allocs - a0;
        sink += sum;
    }
    if (ours_len != theirs_len) die("the encoders disagree on a command's size");

    char r1[32], r2[32], a1[32], a2[32];
    fmt_rate(r1, sizeof r1, (double)iters / best_ours);
    fmt_rate(r2, sizeof r2, (double)iters / best_theirs);
    fmt_allocs(a1, sizeof a1, ours_allocs, (uint64_t)iters);
    if (HAVE_MALLOC_COUNT) fmt_allocs(a2, sizeof a2, theirs_allocs, (uint64_t)iters);
    else snprintf(a2, sizeof a2, "n/a");
    printf("  %-30s %5zu B %11s %-16s %11s %-8s %6.2fx\n", cmd->label, ours_len, r1, a1, r2, a2,
           best_theirs / best_ours);
}

/* ------------------------------------------------------------------ */

int main(void)
{
    rlk_allocator hook = {hook_malloc, hook_realloc, hook_free, NULL};
    rlk_set_allocator(&hook);
    double start = now();

    printf("resplock codec benchmark: resplock against hiredis %d.%d.%d\n\n",
           HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    printf("Parsing.  Every reader gets the same in-memory stream in %u KiB pieces (as a\n"
           "socket delivers it), parses a fixed number of replies, and touches every\n"
           "value; the best of %d runs is shown.  Each piece is copied once as a read\n"
           "would: resplock into its receive buffer, hiredis into a 16 KiB buffer that\n"
           "it then feeds (as its redisBufferRead does).\n"
           "  resplock events  rlk_resp_next: one event per value, no tree\n"
           "  resplock tree    rlk_resp_read: a tree per reply in one reused arena\n"
           "  hiredis          redisReaderFeed/GetReply: a redisReply per value, freed\n"
           "MB/s: 10^6 wire bytes per second.  x hiredis: replies/s over hiredis's.\n"
           "allocs/reply: heap allocations in a whole run (receive buffer included) per\n"
           "reply; resplock's counted through rlk_set_allocator, hiredis's through\n"
           "%s.\n\n",
           PIECE / 1024, RUNS,
           HAVE_MALLOC_COUNT ? "a counting malloc wrapper" : "nothing (n/a: hiredis 0.14 has no hook)");

    workload w[4];
    memset(w, 0, sizeof w);
    w[0].label = "lock-client mix";
    make_mix(&w[0].ours, 20000);
    w[0].passes = 20;
    w[1].label = "1 MiB bulk strings";
    make_big_bulks(&w[1].ours, 4);
    w[1].passes = 24;
    w[2].label = "500-element arrays";
    make_arrays(&w[2].ours, 200);
    w[2].passes = 20;
    w[3].label = "RESP3 map, 20 pairs";
    w[3].note = " (hiredis: *40, see the note)";
    make_maps(&w[3].ours, 20000, 1);
    make_maps(&w[3].theirs, 20000, 0);
    w[3].passes = 10;
    for (int i = 0; i < 3; i++) w[i].theirs = w[i].ours;

    printf("  %-20s %12s %9s   %-18s %9s\n", "workload / reader", "replies/s", "MB/s",
           "allocs/reply", "x hiredis");
    for (int i = 0; i < 4; i++) bench_parse(&w[i]);
    printf("\n  Note: hiredis 0.14 cannot read RESP3 (%%), so for the map workload it reads\n"
           "  the same data as a RESP2 server sends it: a 40-element array.  resplock\n"
           "  reads the %%20 map; the values, and the checksums over them, are the same.\n\n");

    static const char sha[] = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    command cmds[2] = {
        {"SET key token NX PX 30000", 6,
         {"SET", "resplock:lock:nightly-report", token, "NX", "PX", "30000"},
         {3, 28, 36, 2, 2, 5}},
        {"EVALSHA sha 1 key token 30000", 6,
         {"EVALSHA", sha, "1", "resplock:lock:nightly-report", token, "30000"},
         {7, 40, 1, 28, 36, 5}},
    };
    printf("Encoding.  The same command formatted %ld times per run, best of %d runs:\n"
           "resplock appends into one reused rlk_buf (rlk_resp_append_command); hiredis\n"
           "allocates each command (redisFormatCommandArgv), which is then freed.\n\n",
           2000000L, RUNS);
    printf("  %-30s %7s %11s %-16s %11s %-8s %7s\n", "command", "size", "resplock/s",
           "allocs/command", "hiredis/s", "allocs", "x");
    for (int i = 0; i < 2; i++) bench_encode(&cmds[i], 2000000L);

    printf("\nTotal time %.1f s.\n", now() - start);
    for (int i = 0; i < 4; i++) {
        free(w[i].ours.data);
        if (w[i].theirs.data != w[i].ours.data) free(w[i].theirs.data);
    }
    return 0;
}
