/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * respdump: decodes RESP2/RESP3 from a file or standard input and prints
 * every reply, in a redis-cli-like form or as one JSON value per line.
 *
 * It is built on the event API so that the display's memory stays bounded
 * by the largest single string, not by the size of a reply (with --json, by
 * the largest reply, see below): events are printed as they arrive, input
 * is consumed as it is parsed, and the printer keeps only a small explicit
 * stack of the open aggregates (no recursion, so a reply nested to the
 * parser's depth limit cannot exhaust the C stack).
 *
 * The display is streamed: a reply that is cut short by the end of the
 * input or by a protocol error has already been partly printed.  That
 * part is kept (it is what was received) and the line is ended before the
 * error message, so stdout always ends with a newline.  --json output is
 * for programs, which cannot read half a JSON value: each reply's line is
 * held in memory until the reply is complete, so a cut-short reply prints
 * nothing and every line of stdout is one whole JSON value.  The exit
 * status says whether the input was complete.
 *
 * JSON strings stand for bytes, not text: each byte 0x20-0x7E other than
 * '"' and '\' is written as itself, every other byte as \u00XX with
 * uppercase hex digits, so a reader can recover the exact bytes by taking
 * each code point (all are below 0x100) as one byte.
 */
#include "config.h"
#include "resp.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Exit statuses (sysexits.h values where one fits). */
#define EXIT_USAGE 2
#define EXIT_INCOMPLETE 3
#define EXIT_DATAERR 65
#define EXIT_NOINPUT 66
#define EXIT_OSERR 71
#define EXIT_IOERR 74

#define READ_CHUNK 65536

static const char usage_text[] =
    "usage: respdump [--json] [--max-depth N] [--max-bulk N] [--max-elements N] [FILE]\n"
    "\n"
    "Decodes RESP2/RESP3 replies from FILE (or standard input when FILE is\n"
    "missing or '-') and prints each one.\n"
    "\n"
    "  --json            one JSON value per reply and line, instead of the\n"
    "                    redis-cli-like display\n"
    "  --max-depth N     nested aggregates allowed (0: the default, 1024)\n"
    "  --max-bulk N      bytes in one string (0: the default, 512 MiB)\n"
    "  --max-elements N  elements in one aggregate (0: the default, 2^32-1)\n"
    "  --help            this text\n"
    "  --version         the version\n"
    "\n"
    "Display: \"bulk\" quoted with escapes, simple strings as they are,\n"
    "(error) ..., (integer) N, (double) X, (big number) N, (nil), (true),\n"
    "(false), verbatim strings as their text; array elements 1) 2) ...,\n"
    "map pairs 1# key => value, set elements 1~, push elements 1>, and an\n"
    "attribute as |1) key => value lines before the value it applies to.\n"
    "\n"
    "JSON: {\"simple\":s}, {\"error\":s}, strings as JSON strings, integers,\n"
    "null, true/false, {\"double\":x} (x \"inf\", \"-inf\" or \"nan\" when not\n"
    "finite), {\"bignum\":s}, {\"verbatim\":s,\"format\":s}, arrays, {\"set\":[...]},\n"
    "{\"push\":[...]}, {\"map\":[[k,v],...]}, and {\"attr\":[[k,v],...],\"value\":v}\n"
    "for a value with an attribute.  Strings stand for bytes: bytes outside\n"
    "0x20-0x7E, and '\"' and '\\', are written as \\u00XX (uppercase hex).\n"
    "\n"
    "The display is printed as the input arrives: a reply cut short by an\n"
    "error has been printed up to that point, and its line is ended.  With\n"
    "--json only complete replies are printed, each line one JSON value.\n"
    "\n"
    "Exit status: 0 all input was complete replies (also none at all);\n"
    "2 usage error; 3 the input ended inside a reply; 65 protocol error or\n"
    "limit exceeded (\"respdump: protocol error at byte N: REASON\");\n"
    "66 FILE cannot be opened; 71 out of memory; 74 read or write error.\n";

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2), noreturn))
#endif
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("respdump: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nusage: respdump [--json] [--max-depth N] [--max-bulk N] "
          "[--max-elements N] [FILE]\n"
          "Try 'respdump --help' for more information.\n",
          stderr);
    exit(EXIT_USAGE);
}

/* ------------------------------------------------------------------ */
/* Output */

typedef struct level {
    uint8_t type;      /* aggregate type byte; 0 for the top level        */
    uint8_t slot;      /* the current element has begun (an attribute of
                          it was printed first)                          */
    uint32_t wrappers; /* JSON: {"attr":...,"value": wrappers to close   */
    uint64_t count;    /* elements completed (a map counts keys and values) */
    /* Display only: columns, for the redis-cli-like indentation. */
    size_t indent;     /* where this level's markers start               */
    size_t content;    /* where the current element's text starts        */
    unsigned idxw;     /* index width, from the declared count; 0 when
                          streamed (not known, so not padded)            */
} level;

typedef struct dump {
    int json;
    FILE *out;
    level *lv;         /* lv[0] is the top level                         */
    size_t sp;         /* index of the innermost level                   */
    size_t cap;
    int line_open;     /* bytes written since the last newline           */
    int dirty;         /* bytes written since the last flush             */
    int nomem;         /* the JSON line could not grow                   */
    rlk_buf scratch;   /* for formatting doubles                         */
    rlk_buf line;      /* JSON: the reply being printed, not yet written */
} dump;

static void out_bytes(dump *d, const char *s, size_t n)
{
    if (!n) return;
    if (d->json) {
        if (rlk_buf_append(&d->line, s, n) != RLK_OK) d->nomem = 1;
        return;
    }
    fwrite(s, 1, n, d->out);
    d->line_open = s[n - 1] != '\n';
    d->dirty = 1;
}

/* A JSON reply is complete: its line goes out. */
static void out_line(dump *d)
{
    fwrite(d->line.data, 1, d->line.len, d->out);
    d->line.len = 0;
    d->dirty = 1;
}

static void out_str(dump *d, const char *s)
{
    out_bytes(d, s, strlen(s));
}

static void out_spaces(dump *d, size_t n)
{
    static const char sp[] = "                                ";
    while (n) {
        size_t k = n < sizeof sp - 1 ? n : sizeof sp - 1;
        out_bytes(d, sp, k);
        n -= k;
    }
}

static void out_i64(dump *d, int64_t v)
{
    char t[24];
    int n = snprintf(t, sizeof t, "%" PRId64, v);
    out_bytes(d, t, (size_t)n);
}

static unsigned dec_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 10) { v /= 10; n++; }
    return n;
}

/* Writes s with every byte outside printable ASCII, and '"' and '\\',
 * replaced by what esc writes for it. */
static void out_escaped(dump *d, const char *s, size_t n, void (*esc)(dump *, unsigned char))
{
    size_t i = 0, run;
    while (i < n) {
        for (run = i; run < n; run++) {
            unsigned char c = (unsigned char)s[run];
            if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') break;
        }
        out_bytes(d, s + i, run - i);
        if (run < n) esc(d, (unsigned char)s[run++]);
        i = run;
    }
}

/* JSON string body: bytes, see the header comment. */
static void json_escape(dump *d, unsigned char c)
{
    static const char hex[] = "0123456789ABCDEF";
    char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
    out_bytes(d, e, 6);
}

static void out_json_bytes(dump *d, const char *s, size_t n) { out_escaped(d, s, n, json_escape); }

static void out_json_string(dump *d, const char *s, size_t n)
{
    out_bytes(d, "\"", 1);
    out_json_bytes(d, s, n);
    out_bytes(d, "\"", 1);
}

/* Display string body, escaped the way redis-cli quotes bulk strings. */
static void repr_escape(dump *d, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char e[4] = {'\\', 0, 0, 0};
    size_t k = 2;
    switch (c) {
    case '"': e[1] = '"'; break;
    case '\\': e[1] = '\\'; break;
    case '\n': e[1] = 'n'; break;
    case '\r': e[1] = 'r'; break;
    case '\t': e[1] = 't'; break;
    case '\a': e[1] = 'a'; break;
    case '\b': e[1] = 'b'; break;
    default:
        e[1] = 'x';
        e[2] = hex[c >> 4];
        e[3] = hex[c & 15];
        k = 4;
    }
    out_bytes(d, e, k);
}

static void out_repr_bytes(dump *d, const char *s, size_t n) { out_escaped(d, s, n, repr_escape); }

/* A double's shortest round-trip text, from the library's encoder so
 * that the tool and the wire agree.  Returns 0 when memory ran out. */
static int double_text(dump *d, double v, const char **s, size_t *n)
{
    d->scratch.len = 0;
    if (rlk_resp_put_double(&d->scratch, v) != RLK_OK) return 0;
    *s = d->scratch.data + 1;            /* after ','    */
    *n = d->scratch.len - 3;             /* before CRLF  */
    return 1;
}

/* ------------------------------------------------------------------ */
/* The stack of open levels */

static int push_level(dump *d, uint8_t type, int64_t declared)
{
    level *L;
    size_t indent;

    if (d->sp + 1 == d->cap) {
        size_t cap = d->cap * 2;
        level *nl = realloc(d->lv, cap * sizeof *nl);
        if (!nl) return 0;
        d->lv = nl;
        d->cap = cap;
    }
    /* Elements of a nested aggregate line up under the text of the
     * element that holds it, as redis-cli does (the top level's is 0). */
    indent = d->lv[d->sp].content;
    L = &d->lv[++d->sp];
    memset(L, 0, sizeof *L);
    L->type = type;
    L->indent = indent;
    L->content = indent;
    if (declared >= 0) {
        /* redis-cli pads indexes to the width of the largest one. */
        L->idxw = dec_len((uint64_t)declared ? (uint64_t)declared : 1);
    }
    return 1;
}

static int is_pairs(uint8_t t)
{
    return t == RLK_RESP_MAP || t == RLK_RESP_ATTR;
}

/* An element (or the attribute in front of it) begins in the innermost
 * level: separators, map pair brackets, display markers. */
static void elem_start(dump *d)
{
    level *L = &d->lv[d->sp];

    if (L->slot) return;
    if (d->json) {
        if (is_pairs(L->type)) {
            if (L->count % 2 == 0) out_str(d, L->count ? ",[" : "[");
            else out_bytes(d, ",", 1);
        } else if (L->type != 0 && L->count) {
            out_bytes(d, ",", 1);
        }
        return;
    }
    if (L->type == 0) return;
    if (is_pairs(L->type) && L->count % 2 == 1) {
        out_str(d, " => ");
    } else {
        uint64_t idx = is_pairs(L->type) ? L->count / 2 + 1 : L->count + 1;
        unsigned w = dec_len(idx);
        char sep;
        size_t start;

        if (L->count) {
            out_bytes(d, "\n", 1);
            out_spaces(d, L->indent);
        }
        start = L->indent;
        if (L->type == RLK_RESP_ATTR) {
            out_bytes(d, "|", 1);
            start++;
        }
        if (L->idxw > w) {
            out_spaces(d, L->idxw - w);
            start += L->idxw - w;
        }
        out_i64(d, (int64_t)idx);
        switch (L->type) {
        case RLK_RESP_MAP: sep = '#'; break;
        case RLK_RESP_SET: sep = '~'; break;
        case RLK_RESP_PUSH: sep = '>'; break;
        default: sep = ')'; break;
        }
        {
            char m[2] = {sep, ' '};
            out_bytes(d, m, 2);
        }
        L->content = start + w + 2;
    }
}

/* The current element of the innermost level is complete. */
static void elem_end(dump *d)
{
    level *L = &d->lv[d->sp];

    if (d->json) {
        for (; L->wrappers; L->wrappers--) out_bytes(d, "}", 1);
        if (is_pairs(L->type) && L->count % 2 == 1) out_bytes(d, "]", 1);
    }
    L->slot = 0;
    L->count++;
    if (d->sp == 0) {
        out_bytes(d, "\n", 1);
        if (d->json && !d->nomem) out_line(d);
    }
}

/* Returns 0 when memory ran out. */
static int print_scalar(dump *d, const rlk_resp_event *ev)
{
    const char *s;
    size_t n;

    if (d->json) {
        switch (ev->type) {
        case RLK_RESP_SIMPLE:
            out_str(d, "{\"simple\":");
            out_json_string(d, ev->str, ev->len);
            out_bytes(d, "}", 1);
            break;
        case RLK_RESP_ERROR:
        case RLK_RESP_BLOB_ERROR:
            out_str(d, "{\"error\":");
            out_json_string(d, ev->str, ev->len);
            out_bytes(d, "}", 1);
            break;
        case RLK_RESP_BULK:
            out_json_string(d, ev->str, ev->len);
            break;
        case RLK_RESP_INTEGER:
            out_i64(d, ev->integer);
            break;
        case RLK_RESP_NULL:
            out_str(d, "null");
            break;
        case RLK_RESP_BOOL:
            out_str(d, ev->integer ? "true" : "false");
            break;
        case RLK_RESP_DOUBLE:
            out_str(d, "{\"double\":");
            if (isnan(ev->dbl)) {
                out_str(d, "\"nan\"");
            } else if (isinf(ev->dbl)) {
                out_str(d, ev->dbl > 0 ? "\"inf\"" : "\"-inf\"");
            } else if (double_text(d, ev->dbl, &s, &n)) {
                out_bytes(d, s, n);
                /* A JSON reader must see a double, not an integer. */
                if (!memchr(s, '.', n) && !memchr(s, 'e', n) &&
                    !memchr(s, 'E', n))
                    out_str(d, ".0");
            } else {
                return 0;
            }
            out_bytes(d, "}", 1);
            break;
        case RLK_RESP_BIGNUM:
            out_str(d, "{\"bignum\":");
            out_json_string(d, ev->str, ev->len);
            out_bytes(d, "}", 1);
            break;
        case RLK_RESP_VERBATIM:
            out_str(d, "{\"verbatim\":");
            out_json_string(d, ev->str, ev->len);
            out_str(d, ",\"format\":");
            out_json_string(d, ev->format, 3);
            out_bytes(d, "}", 1);
            break;
        default:
            out_str(d, "null");
            break;
        }
        return 1;
    }
    switch (ev->type) {
    case RLK_RESP_SIMPLE:
    case RLK_RESP_VERBATIM:
        out_bytes(d, ev->str, ev->len);
        break;
    case RLK_RESP_ERROR:
    case RLK_RESP_BLOB_ERROR:
        out_str(d, "(error) ");
        out_bytes(d, ev->str, ev->len);
        break;
    case RLK_RESP_BULK:
        out_bytes(d, "\"", 1);
        out_repr_bytes(d, ev->str, ev->len);
        out_bytes(d, "\"", 1);
        break;
    case RLK_RESP_INTEGER:
        out_str(d, "(integer) ");
        out_i64(d, ev->integer);
        break;
    case RLK_RESP_NULL:
        out_str(d, "(nil)");
        break;
    case RLK_RESP_BOOL:
        out_str(d, ev->integer ? "(true)" : "(false)");
        break;
    case RLK_RESP_DOUBLE:
        out_str(d, "(double) ");
        /* The text as received, like redis-cli. */
        if (ev->str && ev->len) {
            out_bytes(d, ev->str, ev->len);
        } else {
            if (!double_text(d, ev->dbl, &s, &n)) return 0;
            out_bytes(d, s, n);
        }
        break;
    case RLK_RESP_BIGNUM:
        out_str(d, "(big number) ");
        out_bytes(d, ev->str, ev->len);
        break;
    default:
        out_str(d, "(unknown)");
        break;
    }
    return 1;
}

static const char *json_open(uint8_t t)
{
    switch (t) {
    case RLK_RESP_SET: return "{\"set\":[";
    case RLK_RESP_PUSH: return "{\"push\":[";
    case RLK_RESP_MAP: return "{\"map\":[";
    case RLK_RESP_ATTR: return "{\"attr\":[";
    default: return "[";
    }
}

static const char *display_empty(uint8_t t)
{
    switch (t) {
    case RLK_RESP_SET: return "(empty set)";
    case RLK_RESP_PUSH: return "(empty push)";
    case RLK_RESP_MAP: return "(empty hash)";
    case RLK_RESP_ATTR: return "|(empty attribute)";
    default: return "(empty array)";
    }
}

/* Prints one event.  Returns 0 when memory ran out. */
static int on_event(dump *d, const rlk_resp_event *ev)
{
    level *L;

    switch (ev->kind) {
    case RLK_EV_VALUE:
        elem_start(d);
        if (!print_scalar(d, ev)) return 0;
        elem_end(d);
        return 1;
    case RLK_EV_BEGIN:
        elem_start(d);
        /* The element's slot stays open while an attribute is printed, so
         * that its value does not start a new element. */
        if (ev->type == RLK_RESP_ATTR) d->lv[d->sp].slot = 1;
        if (ev->type == RLK_RESP_BULK) {
            /* A streamed string prints as one string, chunk by chunk. */
            out_bytes(d, "\"", 1);
        } else if (d->json) {
            out_str(d, json_open((uint8_t)ev->type));
        }
        return push_level(d, (uint8_t)ev->type,
                          ev->type == RLK_RESP_BULK ||
                                  (ev->flags & RLK_EV_F_STREAMED)
                              ? -1
                              : ev->integer);
    case RLK_EV_CHUNK:
        if (d->json) out_json_bytes(d, ev->str, ev->len);
        else out_repr_bytes(d, ev->str, ev->len);
        return 1;
    case RLK_EV_END:
        if (d->sp == 0) return 1; /* the parser never does this */
        L = &d->lv[d->sp];
        if (L->type == RLK_RESP_BULK) {
            out_bytes(d, "\"", 1);
        } else if (d->json) {
            if (L->type == RLK_RESP_ATTR) out_str(d, "],\"value\":");
            else if (L->type == RLK_RESP_ARRAY) out_bytes(d, "]", 1);
            else out_str(d, "]}");
        } else if (L->count == 0) {
            out_str(d, display_empty(L->type));
        }
        if (L->type == RLK_RESP_ATTR) {
            size_t indent = L->indent;
            d->sp--;
            if (d->json) {
                d->lv[d->sp].wrappers++;
            } else {
                /* The value goes on the next line, where the attribute
                 * began. */
                out_bytes(d, "\n", 1);
                out_spaces(d, indent);
            }
            return 1;
        }
        d->sp--;
        elem_end(d);
        return 1;
    }
    return 1;
}

/* ------------------------------------------------------------------ */

static int parse_count(const char *s, uint64_t maxv, uint64_t *out)
{
    uint64_t v = 0;

    if (!*s) return 0;
    for (; *s; s++) {
        unsigned dgt;
        if (*s < '0' || *s > '9') return 0;
        dgt = (unsigned)(*s - '0');
        if (v > (maxv - dgt) / 10) return 0;
        v = v * 10 + dgt;
    }
    *out = v;
    return 1;
}

/* Before an error message: a JSON reply cut short is dropped, and a
 * display line is ended so that the message is not glued to it. */
static void finish_output(dump *d)
{
    d->line.len = 0;
    if (d->line_open) out_bytes(d, "\n", 1);
    fflush(d->out);
}

/* Flushes; on failure says why and returns 0. */
static int check_output(dump *d)
{
    if (fflush(d->out) != 0 || ferror(d->out)) {
        fprintf(stderr, "respdump: write error: %s\n", strerror(errno));
        return 0;
    }
    return 1;
}

/* Feeds the parser from fd until the input ends or an error; returns the
 * exit status. */
static int run(dump *d, rlk_resp_parser *p, rlk_buf *in, int fd)
{
    rlk_resp_event ev;
    size_t off = 0;
    int eof = 0;

    for (;;) {
        size_t used = 0;
        const char *base = in->data ? in->data + off : "";
        int r = rlk_resp_next(p, base, in->len - off, &used, &ev);

        if (r == 1) {
            off += used;
            /* The event's views point into `in`, which is not touched
             * until the next read. */
            if (!on_event(d, &ev) || d->nomem) break;
            continue;
        }
        if (r == 0) {
            ssize_t n;
            off += used;
            /* Keep only what the parser has not used yet. */
            rlk_buf_consume(in, off);
            off = 0;
            if (eof) {
                if (!rlk_resp_parser_idle(p) || in->len != 0) {
                    finish_output(d);
                    if (!check_output(d)) return EXIT_IOERR;
                    fputs("respdump: incomplete reply at end of input\n",
                          stderr);
                    return EXIT_INCOMPLETE;
                }
                return check_output(d) ? 0 : EXIT_IOERR;
            }
            /* Whatever was printed is shown before waiting for input. */
            if (d->dirty) {
                if (!check_output(d)) return EXIT_IOERR;
                d->dirty = 0;
            }
            if (rlk_buf_reserve(in, READ_CHUNK) != RLK_OK) break;
            do {
                n = read(fd, in->data + in->len, in->cap - in->len);
            } while (n < 0 && errno == EINTR);
            if (n < 0) {
                int e = errno;
                finish_output(d);
                fprintf(stderr, "respdump: read error: %s\n", strerror(e));
                return EXIT_IOERR;
            }
            if (n == 0) eof = 1;
            in->len += (size_t)n;
            continue;
        }
        if (r != RLK_ERR_NOMEM) {
            uint64_t at = 0;
            const char *why = NULL;
            rlk_resp_parser_error(p, &at, &why);
            finish_output(d);
            fprintf(stderr,
                    "respdump: protocol error at byte %" PRIu64 ": %s\n", at,
                    why ? why : rlk_strerror(r));
            return EXIT_DATAERR;
        }
        break;
    }
    finish_output(d);
    fputs("respdump: out of memory\n", stderr);
    return EXIT_OSERR;
}

int main(int argc, char **argv)
{
    rlk_resp_limits limits = {0};
    const char *file = NULL;
    int json = 0, opts_done = 0, fd = 0, i;
    rlk_resp_parser p;
    rlk_buf in;
    int status;
    struct stat st;
    dump d;
    static char outbuf[1 << 16];

    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!opts_done && a[0] == '-' && a[1] != '\0') {
            static const char *const names[] = {"--max-depth", "--max-bulk",
                                                "--max-elements"};
            const char *val = NULL;
            size_t k, nl = 0;
            int which = -1;

            if (strcmp(a, "--") == 0) { opts_done = 1; continue; }
            if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
                fputs(usage_text, stdout);
                return fflush(stdout) == 0 ? 0 : EXIT_IOERR;
            }
            if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
                fputs("respdump " PACKAGE_VERSION "\n", stdout);
                return fflush(stdout) == 0 ? 0 : EXIT_IOERR;
            }
            if (strcmp(a, "--json") == 0) { json = 1; continue; }
            for (k = 0; k < 3; k++) {
                nl = strlen(names[k]);
                if (strncmp(a, names[k], nl) == 0 &&
                    (a[nl] == '\0' || a[nl] == '=')) {
                    which = (int)k;
                    break;
                }
            }
            if (which < 0) usage_error("unknown option '%s'", a);
            if (a[nl] == '=') {
                val = a + nl + 1;
            } else {
                if (i + 1 >= argc) usage_error("option '%s' needs a number", a);
                val = argv[++i];
            }
            {
                uint64_t v;
                uint64_t maxv = which == 0 ? UINT32_MAX : UINT64_MAX;
                if (!parse_count(val, maxv, &v))
                    usage_error("bad number '%s'", val);
                if (which == 0) limits.max_depth = (uint32_t)v;
                else if (which == 1) limits.max_bulk = v;
                else limits.max_elements = v;
            }
            continue;
        }
        if (file) usage_error("too many files ('%s')", a);
        file = a;
    }

    if (file && strcmp(file, "-") != 0) {
        fd = open(file, O_RDONLY);
        if (fd < 0) {
            fprintf(stderr, "respdump: %s: %s\n", file, strerror(errno));
            return EXIT_NOINPUT;
        }
        /* A directory opens but cannot be read: it is no input either. */
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            fprintf(stderr, "respdump: %s: %s\n", file, strerror(EISDIR));
            close(fd);
            return EXIT_NOINPUT;
        }
    }

    memset(&d, 0, sizeof d);
    d.json = json;
    d.out = stdout;
    setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
    d.cap = 16;
    d.lv = calloc(d.cap, sizeof *d.lv);
    if (!d.lv) {
        fputs("respdump: out of memory\n", stderr);
        return EXIT_OSERR;
    }
    rlk_buf_init(&d.scratch);
    rlk_buf_init(&d.line);
    rlk_buf_init(&in);
    rlk_resp_parser_init(&p, &limits);

    status = run(&d, &p, &in, fd);
    rlk_resp_parser_free(&p);
    rlk_buf_free(&in);
    rlk_buf_free(&d.scratch);
    rlk_buf_free(&d.line);
    free(d.lv);
    if (fd > 0) close(fd);
    return status;
}
