/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resplock RESP codec: a RESP2/RESP3 encoder and incremental parser over
 * caller-owned buffers.  It does no I/O, reads no clock and starts no
 * thread; everything it knows arrives as bytes through its arguments.
 *
 * Installed as <resplock/resp.h>.
 *
 * Parser contract (both APIs)
 * ---------------------------
 * The caller keeps a receive buffer.  Each call is given the bytes that
 * have not been consumed yet (buf, len) and reports through *consumed how
 * many of them it used.  Bytes not consumed must be presented again, at
 * the start of buf, on the next call, followed by whatever arrived since.
 * The parser remembers how far it has scanned, so a reply that arrives in
 * many pieces costs time linear in its size however it is split.
 *
 * Errors are sticky: once a protocol error is returned, every later call
 * returns it again until rlk_resp_parser_reset().  The error carries the
 * absolute byte offset (counted from the first byte ever fed since init or
 * reset) and a reason.
 *
 * Limits bound what a hostile peer can make us hold.  A declared length or
 * count is never used to size an allocation: memory grows only with bytes
 * actually received.
 *
 * Thread use: a parser, reader or buffer is used by one thread at a time.
 * Distinct objects may be used concurrently.
 */
#ifndef RESPLOCK_RESP_H
#define RESPLOCK_RESP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Status codes shared by the whole library.                           */

enum {
    RLK_OK = 0,
    RLK_ERR_NOMEM = -1,     /* the allocator hook returned NULL            */
    RLK_ERR_PROTO = -2,     /* the peer sent bytes that are not valid RESP */
    RLK_ERR_LIMIT = -3,     /* valid RESP, but over a configured limit     */
    RLK_ERR_INVALID = -4,   /* the caller passed an invalid argument       */
    RLK_ERR_SPACE = -5      /* a caller-provided buffer is too small       */
};

/* Returns a short constant English description of a status code: of
 * every status of this header and of resplock.h ("unknown status" for a
 * number that is none).  Cannot fail; any thread. */
const char *rlk_strerror(int status);

/* ------------------------------------------------------------------ */
/* Allocator hook.                                                      */

typedef struct rlk_allocator {
    void *(*malloc_fn)(void *ctx, size_t size);
    void *(*realloc_fn)(void *ctx, void *ptr, size_t size);
    void (*free_fn)(void *ctx, void *ptr);
    void *ctx;
} rlk_allocator;

/*
 * Makes every allocation of the library go through `a` (copied); NULL
 * restores malloc/realloc/free.  Call it before creating any object: an
 * object must be freed by the allocator that made it.  Not thread-safe
 * against concurrent library use; it is meant for start-up.
 */
void rlk_set_allocator(const rlk_allocator *a);

/* ------------------------------------------------------------------ */
/* Types.  The enum values are the RESP type bytes.                     */

typedef enum rlk_resp_type {
    RLK_RESP_SIMPLE = '+',     /* simple string                          */
    RLK_RESP_ERROR = '-',      /* simple error                           */
    RLK_RESP_INTEGER = ':',
    RLK_RESP_BULK = '$',       /* bulk string, also streamed $?          */
    RLK_RESP_ARRAY = '*',
    RLK_RESP_NULL = '_',       /* also $-1 and *-1                       */
    RLK_RESP_BOOL = '#',
    RLK_RESP_DOUBLE = ',',
    RLK_RESP_BIGNUM = '(',
    RLK_RESP_BLOB_ERROR = '!',
    RLK_RESP_VERBATIM = '=',
    RLK_RESP_MAP = '%',
    RLK_RESP_SET = '~',
    RLK_RESP_ATTR = '|',
    RLK_RESP_PUSH = '>'
} rlk_resp_type;

/* Returns a lowercase name for a type ("bulk string", "map", ...), or "?". */
const char *rlk_resp_type_name(int type);

/* ------------------------------------------------------------------ */
/* Limits.                                                              */

#define RLK_RESP_DEFAULT_MAX_DEPTH 1024u
#define RLK_RESP_DEFAULT_MAX_BULK (512ull * 1024 * 1024)
#define RLK_RESP_DEFAULT_MAX_ELEMENTS 4294967295ull

typedef struct rlk_resp_limits {
    /* Aggregates open at once (attributes count).  max_depth aggregates
     * nested in each other are accepted; one more is an error. */
    uint32_t max_depth;
    /* Bytes in one bulk string, blob error, verbatim string, or in all
     * chunks of one streamed string together; also the longest simple
     * string, error, double or big number line accepted. */
    uint64_t max_bulk;
    /* Declared count of one array, set or push; of pairs in a map or
     * attribute; and the running count of a streamed aggregate. */
    uint64_t max_elements;
    void *reserved_[4];   /* zero: room for later limits (see resplock.h) */
} rlk_resp_limits;

/* Fills *l with the defaults above (the reserved fields zeroed).  Cannot
 * fail. */
void rlk_resp_limits_default(rlk_resp_limits *l);

/* ------------------------------------------------------------------ */
/* Event (pull) API: one event per value, no allocation per reply.      */

typedef enum rlk_resp_event_kind {
    RLK_EV_VALUE = 1, /* a scalar (string, integer, null, bool, double...) */
    RLK_EV_BEGIN,     /* an aggregate opens; or a streamed string ($?)     */
    RLK_EV_END,       /* the innermost open aggregate/streamed string ends */
    RLK_EV_CHUNK      /* one chunk of a streamed string                    */
} rlk_resp_event_kind;

/* ev->flags */
#define RLK_EV_F_REPLY_END 0x1u /* this event completes a top-level reply */
#define RLK_EV_F_STREAMED 0x2u  /* BEGIN/END of a streamed form (?)      */

typedef struct rlk_resp_event {
    rlk_resp_event_kind kind;
    rlk_resp_type type;  /* for END: the type of the aggregate that ends   */
    uint32_t depth;      /* 0 for a top-level value; an aggregate's BEGIN
                            and END have the depth of the aggregate itself
                            and its elements depth+1                       */
    uint32_t flags;
    /* Strings (simple, error, bulk, blob error, big number, chunk) and the
     * raw text of a double: a view into the caller's buffer, valid until
     * the caller changes those bytes.  For a verbatim string, str/len is
     * the text after "xxx:" and format[] holds the three format bytes. */
    const char *str;
    size_t len;
    char format[4];      /* verbatim format, NUL-terminated ("txt")        */
    /* INTEGER: the value.  BOOL: 1 or 0.  BEGIN: the declared count
     * (pairs for a map or attribute), or -1 when streamed. */
    int64_t integer;
    double dbl;          /* DOUBLE: the value (inf, -inf, nan included)    */
    /* For a NULL: the type byte it came as: '_', '$' or '*'.  A CHUNK and
     * the BEGIN/END of its streamed string share the string's depth. */
    char null_wire;
} rlk_resp_event;

/* The parser state.  Its fields are private; it is public only so that it
 * can live on the stack or inside another object without an allocation. */
typedef struct rlk_resp_frame {
    uint64_t remaining; /* elements still expected (maps: 2 per pair)   */
    uint64_t seen;      /* elements seen, for streamed aggregates       */
    uint8_t type;
    uint8_t streamed;
    uint8_t attr_pending; /* an attribute was read; its value is next   */
    uint8_t pad_;
} rlk_resp_frame;

#define RLK_RESP_INLINE_FRAMES 16

typedef struct rlk_resp_parser {
    rlk_resp_limits limits;
    uint64_t offset;       /* absolute offset of buf[0] of the next call */
    rlk_resp_frame *stack; /* inline_stack or heap, grown as depth grows */
    uint32_t sp;           /* open frames                                */
    uint32_t cap;
    int state;
    int error;             /* sticky status, 0 when none                 */
    uint64_t error_offset;
    uint64_t want;         /* bytes of a bulk payload still to arrive    */
    uint64_t scanned;      /* bytes of the current line already scanned  */
    uint64_t streamed_total; /* bytes so far in a streamed string       */
    uint8_t bulk_type;     /* type of the bulk whose payload is awaited  */
    uint8_t top_attr;      /* an attribute was read at depth 0           */
    char error_msg[96];
    rlk_resp_frame inline_stack[RLK_RESP_INLINE_FRAMES];
} rlk_resp_parser;

/* Initializes a parser with the given limits (NULL: defaults).  Cannot
 * fail; holds no heap memory until nesting exceeds RLK_RESP_INLINE_FRAMES.
 * A zero field in *limits means "the default" for that field. */
void rlk_resp_parser_init(rlk_resp_parser *p, const rlk_resp_limits *limits);

/* Frees what the parser holds.  The parser may be initialized again. */
void rlk_resp_parser_free(rlk_resp_parser *p);

/* Forgets any partial reply and any sticky error; keeps the limits and
 * the memory.  The offset count starts again at 0. */
void rlk_resp_parser_reset(rlk_resp_parser *p);

/*
 * Reads the next event from buf[0..len).
 *
 * Returns 1 when *ev was filled; *consumed bytes were used (0 is possible,
 * for the END of a counted aggregate).  The views in *ev point into buf.
 * Returns 0 when more input is needed; *consumed bytes were used (a
 * header may be consumed while its payload is awaited), the rest must be
 * presented again.  Returns RLK_ERR_PROTO or RLK_ERR_LIMIT on bad input
 * (see rlk_resp_parser_error), RLK_ERR_NOMEM when the nesting stack could
 * not grow; *consumed is then 0.
 */
int rlk_resp_next(rlk_resp_parser *p, const char *buf, size_t len,
                  size_t *consumed, rlk_resp_event *ev);

/* True (non-zero) when the parser is between top-level replies: no
 * partial reply is pending. */
int rlk_resp_parser_idle(const rlk_resp_parser *p);

/* A lower bound on how many more bytes must arrive, beyond those not yet
 * consumed, before the next event can be produced; 1 when unknown.  Lets a
 * connection size its next read; never a basis for an allocation. */
uint64_t rlk_resp_parser_want(const rlk_resp_parser *p);

/* After an error: the status, the absolute byte offset of the offending
 * byte, and a reason such as "unknown type byte '@' (0x40)".  Returns the
 * status (0 when there is no error); offset and reason may be NULL. */
int rlk_resp_parser_error(const rlk_resp_parser *p, uint64_t *offset,
                          const char **reason);

/* ------------------------------------------------------------------ */
/* Tree API: whole replies built in an arena.                           */

/* One value of a reply tree.  Aggregates keep their elements as a linked
 * list (child, then next): nodes are made as elements arrive, never from
 * a declared count.  A map's or attribute's children alternate key,
 * value.  attr is the attribute map read just before this value; when
 * several came in a row, the earlier ones hang off the later one's attr. */
typedef struct rlk_resp_value rlk_resp_value;
struct rlk_resp_value {
    rlk_resp_type type;
    unsigned char flags; /* RLK_RESP_V_STREAMED: came in the streamed form */
    char null_wire;      /* NULL: '_', '$' or '*'                         */
    char format[4];      /* VERBATIM: the format, NUL-terminated          */
    const char *str;     /* string payload (and double text)             */
    size_t len;          /* string length; aggregates: element count
                            (pairs for a map or attribute)               */
    int64_t integer;     /* INTEGER value, BOOL 0/1                       */
    double dbl;          /* DOUBLE value                                  */
    rlk_resp_value *child; /* first element                               */
    rlk_resp_value *next;  /* next sibling                                */
    rlk_resp_value *attr;  /* attribute attached to this value, or NULL   */
};

#define RLK_RESP_V_STREAMED 0x1u

/* An arena: starts in an optional caller buffer, then grows in blocks
 * through the allocator hook up to max_bytes in all.  Private fields. */
typedef struct rlk_resp_arena_block rlk_resp_arena_block;
typedef struct rlk_resp_arena {
    unsigned char *first;   /* caller's buffer, may be NULL               */
    size_t first_cap;
    unsigned char *cur;
    size_t cur_cap, cur_used;
    rlk_resp_arena_block *blocks; /* heap blocks, newest first            */
    size_t heap_bytes;
    size_t max_bytes;       /* 0: no limit beyond the allocator           */
} rlk_resp_arena;

/* Sets up an arena in buf[0..cap) (buf may be NULL, cap 0) that may grow
 * on the heap until it holds max_bytes in all (0 = unlimited). */
void rlk_resp_arena_init(rlk_resp_arena *a, void *buf, size_t cap,
                         size_t max_bytes);

/* Forgets everything allocated; keeps the caller's buffer and the largest
 * heap block for reuse. */
void rlk_resp_arena_reset(rlk_resp_arena *a);

/* Frees all heap blocks. */
void rlk_resp_arena_free(rlk_resp_arena *a);

/* Returns size bytes aligned for any value, or NULL when the arena is at
 * max_bytes or the allocator fails. */
void *rlk_resp_arena_alloc(rlk_resp_arena *a, size_t size);

/* A point in an arena's allocations, to give back what came after it
 * (a value that was used and is no longer needed) while keeping what
 * came before. */
typedef struct rlk_resp_arena_mark {
    rlk_resp_arena_block *blocks;
    unsigned char *cur;
    size_t cur_cap, cur_used, heap_bytes;
} rlk_resp_arena_mark;

void rlk_resp_arena_mark_at(const rlk_resp_arena *a, rlk_resp_arena_mark *m);

/* Frees what was allocated since m was taken; no reset may have come in
 * between. */
void rlk_resp_arena_rewind(rlk_resp_arena *a, const rlk_resp_arena_mark *m);

/* A reader pairs a parser with the state of the tree being built. */
typedef struct rlk_resp_build rlk_resp_build;
typedef struct rlk_resp_reader {
    rlk_resp_parser parser;
    rlk_resp_arena *arena;
    size_t resume;          /* bytes of the pending reply already parsed */
    rlk_resp_build *build;  /* build stack, grown with depth             */
    uint32_t build_cap;
    rlk_resp_value *root;
    rlk_resp_value *pending_attr; /* attribute awaiting its value        */
    int copy_strings;       /* set by the caller: copy every string into
                               the arena, so replies outlive buf          */
    size_t stream_cap;      /* room of the streamed string being copied  */
    rlk_resp_value *fixups; /* string nodes whose views await their base */
} rlk_resp_reader;

/* Initializes a reader that builds into `arena` (not owned). */
void rlk_resp_reader_init(rlk_resp_reader *r, rlk_resp_arena *arena,
                          const rlk_resp_limits *limits);

/* Forgets a partial reply and a sticky error (the parser is reset too);
 * the arena is the caller's to reset. */
void rlk_resp_reader_reset(rlk_resp_reader *r);

/* Frees the reader's own memory (not the arena). */
void rlk_resp_reader_free(rlk_resp_reader *r);

/*
 * Reads one whole reply from buf[0..len).  A reply is consumed only when it
 * is complete: until then 0 is returned with *consumed = 0, and the same
 * bytes plus more must be given again; the work already done is kept, so
 * the total stays linear.  On 1, *out is the reply's root; its strings
 * point into buf (valid while those bytes are) except streamed strings,
 * which are copied into the arena, and all strings when r->copy_strings
 * is set (it may be changed between replies).  The tree lives in the arena until the
 * caller resets it; resetting the arena between replies is the caller's
 * job.  An attribute before the root is in (*out)->attr.
 * Errors: as rlk_resp_next, plus RLK_ERR_NOMEM when the arena is full.
 */
int rlk_resp_read(rlk_resp_reader *r, const char *buf, size_t len,
                  size_t *consumed, rlk_resp_value **out);

/* Returns the i-th element of an aggregate (O(i)), or NULL. */
const rlk_resp_value *rlk_resp_value_at(const rlk_resp_value *v, size_t i);

/* ------------------------------------------------------------------ */
/* Encoder.                                                             */

/* A growable byte buffer whose memory comes from the allocator hook.
 * max (0 = unlimited) bounds its size: growing past it is RLK_ERR_LIMIT. */
typedef struct rlk_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max;
} rlk_buf;

/* An empty buffer, no memory held (max 0); and its memory freed (the
 * buffer is then empty and usable again).  Cannot fail. */
void rlk_buf_init(rlk_buf *b);
void rlk_buf_free(rlk_buf *b);
/* Makes room for n more bytes; RLK_OK, RLK_ERR_NOMEM or RLK_ERR_LIMIT
 * (past max).  Appending n bytes: the same statuses, nothing appended on
 * error. */
int rlk_buf_reserve(rlk_buf *b, size_t n);
int rlk_buf_append(rlk_buf *b, const void *p, size_t n);
/* Drops the first n bytes (for consumed input; all when n >= len).
 * Cannot fail. */
void rlk_buf_consume(rlk_buf *b, size_t n);

/* Exact size of a command (an array of bulk strings) on the wire; 0 for
 * arguments rlk_resp_append_command would refuse. */
size_t rlk_resp_command_size(int argc, const char *const *argv,
                             const size_t *argvlen);

/* Appends a command, binary-safe, lengths given (argvlen NULL: strlen).
 * Returns RLK_OK, RLK_ERR_NOMEM, RLK_ERR_LIMIT, or RLK_ERR_INVALID when
 * argc < 1 or an argv pointer is NULL with a non-zero length. */
int rlk_resp_append_command(rlk_buf *b, int argc, const char *const *argv,
                            const size_t *argvlen);

/* Writes a command into dst[0..cap).  Returns the bytes written, or
 * RLK_ERR_SPACE when cap is below rlk_resp_command_size(), or
 * RLK_ERR_INVALID as above; nothing is written on error. */
long long rlk_resp_write_command(char *dst, size_t cap, int argc,
                                 const char *const *argv,
                                 const size_t *argvlen);

/* Appenders for any RESP3 value (fake servers, round trips).  Each returns
 * RLK_OK, RLK_ERR_NOMEM or RLK_ERR_LIMIT (the buffer's max), or
 * RLK_ERR_INVALID for a type that does not fit the function, a NULL
 * pointer with a length, a count below -1, a streamed attribute or push,
 * a missing verbatim format; on error nothing is appended.  put_null with
 * wire 0 writes '_'; put_chunk of 0 bytes writes nothing (";0" would end
 * the string).  type picks the wire form:
 *   rlk_resp_put_line:   SIMPLE, ERROR, BIGNUM (no CR/LF inside: else
 *                        RLK_ERR_INVALID)
 *   rlk_resp_put_blob:   BULK, BLOB_ERROR, VERBATIM (format: 3 bytes)
 *   rlk_resp_put_header: ARRAY, MAP, SET, ATTR, PUSH with count (pairs
 *                        for MAP/ATTR); count -1 writes the streamed "?"
 *                        form (ARRAY, MAP, SET only)
 *   rlk_resp_put_null:   wire '_', '$' ($-1) or '*' (*-1)
 */
int rlk_resp_put_line(rlk_buf *b, rlk_resp_type type, const char *s,
                      size_t len);
int rlk_resp_put_blob(rlk_buf *b, rlk_resp_type type, const char *format,
                      const char *s, size_t len);
int rlk_resp_put_integer(rlk_buf *b, int64_t v);
int rlk_resp_put_double(rlk_buf *b, double v);
int rlk_resp_put_bool(rlk_buf *b, int v);
int rlk_resp_put_null(rlk_buf *b, char wire);
int rlk_resp_put_header(rlk_buf *b, rlk_resp_type type, int64_t count);
/* Streamed string: "$?\r\n", then chunks ";len\r\n...\r\n", then ";0\r\n";
 * rlk_resp_put_end writes "." that closes a streamed aggregate. */
int rlk_resp_put_stream_begin(rlk_buf *b);
int rlk_resp_put_chunk(rlk_buf *b, const char *s, size_t len);
int rlk_resp_put_stream_end(rlk_buf *b);
int rlk_resp_put_end(rlk_buf *b);

/* Appends one event as the bytes that would produce it (round trips):
 * a VALUE, BEGIN, END or CHUNK as rlk_resp_next would have returned it.
 * Statuses as the appenders above (RLK_ERR_INVALID for an event no parse
 * could have produced). */
int rlk_resp_put_event(rlk_buf *b, const rlk_resp_event *ev);

/* Appends a whole tree (attributes included), iteratively.  Aggregate
 * headers count the children present, not v->len; a map or attribute with
 * an odd number of children is RLK_ERR_INVALID.  All or nothing. */
int rlk_resp_put_value(rlk_buf *b, const rlk_resp_value *v);

#ifdef __cplusplus
}
#endif

#endif /* RESPLOCK_RESP_H */
