/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * doc/resplock-protocol.7 against what resplock does on real servers.
 *
 * The page's tables marked "layout-table" (the names derived from
 * a lock's name, the keys and their values, the messages published) are
 * read, their placeholders turned into regular expressions.  Then locks
 * are driven through every state the page describes: a simple lock held,
 * extended and renewed, waiters in line (the mark), handoffs, the yield
 * after a run of handoffs, reentrant locks held twice, released hold by
 * hold (tombstones) and handed over, names with and without hash tags;
 * first on a server without cluster mode, then on a one-node cluster
 * (sharded publishes, the lock's own channel for handoffs).
 *
 * What the server holds is read at each step (SCAN, then each key's type,
 * TTL and contents), and everything the clients and their scripts run is
 * read from MONITOR: the keys they name, the values and fields they
 * write, what they publish and subscribe to.  Every key, field, value
 * and message seen must fit a row of the page, and every row must have
 * been seen (a row nothing produced is a failure too): the page can
 * neither miss a layout nor keep one that is gone.  Every key must have
 * a TTL, and once the locks are released the server must empty itself.
 *
 * The page's fourth table, the forms per server and version, is checked
 * against the server the test runs on ($RLK_REDIS_SERVER): its row says
 * whether the clients release by DELIFEQ or DELEX IFEQ, extend by SET
 * IFEQ, and call the scripts by FCALL or EVALSHA, and MONITOR must show
 * exactly that (the other rows are checked on the other servers).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#define TESTLIB_MAIN
#include "testlib.h"

#include "locktest.h"
#include "resplock.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { PH_SINGLE = 1, PH_CLUSTER = 2, PH_ANY = 3 };
static const char *phase_name(int p) { return p == PH_SINGLE ? "single" : "cluster"; }

/* ------------------------------------------------------------------ */
/* The page's tables                                                    */

#define CELL 160
#define MAXROWS 48

#define NCOL 5

struct row {
    char cell[NCOL][CELL];
    int line;      /* in the page */
    int phases;    /* names, messages: PH_* of the server column */
    int seen;      /* produced by some observation */
};

struct table {
    const char *id;
    int ncol;
    const char *head[NCOL];
    struct row rows[MAXROWS];
    int n;
    int found;
};

static struct table t_names = {.id = "names", .ncol = 4, .head = {"name", "server", "form", "when"}};
static struct table t_keys = {.id = "keys", .ncol = 4, .head = {"key", "type", "field", "value"}};
static struct table t_msgs = {.id = "messages", .ncol = 4,
                              .head = {"server", "command", "channel", "message"}};
/* The native commands and script calls per server and version. */
static struct table t_forms = {.id = "forms", .ncol = 5,
                               .head = {"server", "from", "release", "extend, renew",
                                        "scripts"}};

static char page_path[1024];

/* A table cell as the page writes it, the troff escapes it may use
 * undone: \- (a minus) and \& (nothing).  Any other escape is an error:
 * the test would misread it. */
static int unescape(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '\\') {
            if (i + 1 < n && s[i + 1] == '-') ch = '-';
            else if (i + 1 < n && s[i + 1] == '&') ch = 0;
            else return -1;
            i++;
        }
        if (!ch) continue;
        if (o + 1 >= cap) return -1;
        out[o++] = ch;
    }
    out[o] = 0;
    return 0;
}

static int server_column(const char *s)
{
    if (!strcmp(s, "any")) return PH_ANY;
    if (!strcmp(s, "single")) return PH_SINGLE;
    if (!strcmp(s, "cluster")) return PH_CLUSTER;
    return 0;
}

/* Reads the tables marked ".\" layout-table: ID" (the tbl table that
 * follows: format lines up to one ending in '.', the heading row, then a
 * row per line, cells separated by tabs).  0, or -1 (failures said). */
static int read_page(void)
{
    const char *top = getenv("top_srcdir");
    if (top && *top) {
        snprintf(page_path, sizeof page_path, "%s/doc/resplock-protocol.7", top);
    } else {
        /* Beside this file's source: tests/../doc. */
        const char *f = __FILE__, *slash = strrchr(f, '/');
        int dl = slash ? (int)(slash - f) : 1;
        snprintf(page_path, sizeof page_path, "%.*s/../doc/resplock-protocol.7", dl, slash ? f : ".");
    }
    FILE *fp = fopen(page_path, "r");
    if (!CHECK_MSG(fp != NULL, "cannot open %s: %s", page_path, strerror(errno))) return -1;
    char line[1024];
    struct table *t = NULL;
    int lineno = 0, state = 0, bad = 0; /* state 1: .TS next, 2: format, 3: heading, 4: rows */
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        size_t len = strcspn(line, "\n");
        line[len] = 0;
        if (!strncmp(line, ".\\\" layout-table: ", 18)) {
            const char *id = line + 18;
            t = !strcmp(id, "names") ? &t_names : !strcmp(id, "keys") ? &t_keys
                : !strcmp(id, "messages") ? &t_msgs : !strcmp(id, "forms") ? &t_forms : NULL;
            if (!CHECK_MSG(t && !t->found, "%s:%d: unknown or repeated layout table '%s'",
                           page_path, lineno, id)) {
                bad = 1;
                t = NULL;
                continue;
            }
            t->found = 1;
            state = 1;
            continue;
        }
        if (!t) continue;
        if (state == 1) {
            if (!CHECK_MSG(!strcmp(line, ".TS"), "%s:%d: .TS expected after the marker",
                           page_path, lineno))
                bad = 1, t = NULL;
            state = 2;
            continue;
        }
        if (state == 2) {
            if (len && line[len - 1] == '.') state = 3;
            continue;
        }
        if (!strcmp(line, ".TE")) {
            t = NULL;
            continue;
        }
        char cells[NCOL][CELL] = {{0}};
        int nc = 0;
        const char *p = line;
        for (;;) {
            const char *tab = strchr(p, '\t');
            size_t n = tab ? (size_t)(tab - p) : strlen(p);
            if (nc == t->ncol || unescape(p, n, cells[nc], CELL) != 0) {
                nc = -1;
                break;
            }
            nc++;
            if (!tab) break;
            p = tab + 1;
        }
        if (!CHECK_MSG(nc == t->ncol, "%s:%d: a row of table '%s' is not %d plain cells: %s",
                       page_path, lineno, t->id, t->ncol, line)) {
            bad = 1;
            continue;
        }
        if (state == 3) {
            for (int i = 0; i < t->ncol; i++)
                if (!CHECK_MSG(!strcmp(cells[i], t->head[i]),
                               "%s:%d: table '%s' column %d is '%s', want '%s'", page_path,
                               lineno, t->id, i + 1, cells[i], t->head[i]))
                    bad = 1;
            state = 4;
            continue;
        }
        if (!CHECK_MSG(t->n < MAXROWS, "%s: table '%s' has too many rows", page_path, t->id)) {
            bad = 1;
            continue;
        }
        struct row *r = &t->rows[t->n++];
        memcpy(r->cell, cells, sizeof cells);
        r->line = lineno;
        r->phases = PH_ANY;
        if (t == &t_names || t == &t_msgs) {
            r->phases = server_column(cells[t == &t_names ? 1 : 0]);
            if (!CHECK_MSG(r->phases, "%s:%d: server '%s' is none of any, single, cluster",
                           page_path, lineno, cells[t == &t_names ? 1 : 0]))
                bad = 1;
        }
    }
    fclose(fp);
    struct table *all[4] = {&t_names, &t_keys, &t_msgs, &t_forms};
    for (int i = 0; i < 4; i++)
        if (!CHECK_MSG(all[i]->found && all[i]->n > 0, "%s: no layout table '%s' with rows",
                       page_path, all[i]->id))
            bad = 1;
    return bad ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* Patterns                                                             */

/* The placeholders with fixed forms.  NAME is the lock's name itself;
 * the derived names (the names table's first column) expand to their
 * forms. */
static const struct {
    const char *word, *re;
} fixed[] = {
    {"HEX32", "[0-9a-f]{32}"},
    /* The holder's facts: host, pid, wall-clock ms, and a command
     * (percent-encoded: no space, ';' or '+'). */
    {"FACTS", "h=[A-Za-z0-9._/@:%-]*;p=[0-9]+;t=[0-9]+(;c=[A-Za-z0-9._/@:%-]+)?"},
    {"HEX24", "[0-9a-f]{24}"},
    /* resplock's clients' holders: [CLIENT-ID:]UUID:THREAD. */
    {"HOLDER", "([^ ]+:)?[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}:[0-9]+"},
    {"COUNT", "[1-9][0-9]*"},
    {"EXPIRY", "[0-9]+"},
    {"TTL", "[0-9]+"},
    {"CLAIM", "[0-9]+"},
    {"END", "[0-9]+"},
    {"START", "[0-9]+"},
    {"LAST", "[0-9]+"},
    {"FENCE", "[1-9][0-9]*"},
    {"N", "[0-9]+"},
};

#define MAXDER 8
static char der_word[MAXDER][16];      /* QUEUE, WAITERS, ... */
static int der_forms[MAXDER][MAXROWS]; /* names-table rows of each */
static int der_nforms[MAXDER];
static int nder;

static int der_of(const char *w, size_t n)
{
    for (int i = 0; i < nder; i++)
        if (strlen(der_word[i]) == n && !memcmp(der_word[i], w, n)) return i;
    return -1;
}

static void index_names(void)
{
    for (int r = 0; r < t_names.n; r++) {
        const char *w = t_names.rows[r].cell[0];
        int d = der_of(w, strlen(w));
        if (d < 0 && nder < MAXDER && strlen(w) < sizeof der_word[0]) {
            d = nder++;
            snprintf(der_word[d], sizeof der_word[d], "%s", w);
        }
        if (d >= 0) der_forms[d][der_nforms[d]++] = r;
    }
}

struct build {
    char re[2048];
    size_t len;
    const char *name;   /* the lock's name */
    const int *choice;  /* a form per derived name */
    uint64_t used;      /* names-table rows expanded */
    int phases;         /* where all of them apply */
    char unknown[32];   /* a placeholder the test does not know */
};

static void put(struct build *b, const char *s, size_t n)
{
    if (b->len + n >= sizeof b->re) n = 0, b->len = sizeof b->re - 1;
    memcpy(b->re + b->len, s, n);
    b->len += n;
    b->re[b->len] = 0;
}

static void put_literal(struct build *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strchr(".[]{}()\\*+?^$|", s[i])) put(b, "\\", 1);
        put(b, s + i, 1);
    }
}

static void expand(struct build *b, const char *pat, int depth)
{
    for (const char *p = pat; *p;) {
        if (!(*p >= 'A' && *p <= 'Z')) {
            put_literal(b, p++, 1);
            continue;
        }
        const char *w = p;
        while ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) p++;
        size_t n = (size_t)(p - w);
        if (n == 4 && !memcmp(w, "NAME", 4)) {
            put_literal(b, b->name, strlen(b->name));
            continue;
        }
        int d = der_of(w, n);
        if (d >= 0 && depth < 4) {
            int r = der_forms[d][b->choice[d]];
            b->used |= (uint64_t)1 << r;
            b->phases &= t_names.rows[r].phases;
            expand(b, t_names.rows[r].cell[2], depth + 1);
            continue;
        }
        size_t i;
        for (i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
            if (strlen(fixed[i].word) == n && !memcmp(fixed[i].word, w, n)) break;
        if (i == sizeof fixed / sizeof fixed[0]) {
            snprintf(b->unknown, sizeof b->unknown, "%.*s", (int)n, w);
            put(b, "\x01", 1); /* matches nothing the server holds */
            continue;
        }
        put(b, "(", 1);
        put(b, fixed[i].re, strlen(fixed[i].re));
        put(b, ")", 1);
    }
}

/* One way a row reads for one lock name and one choice of the derived
 * names' forms. */
struct variant {
    struct table *t;
    int row;
    uint64_t used;
    int phases;
    int has[4];
    regex_t re[4];
};

static struct variant *vars;
static size_t nvars, capvars;

static const char *const lock_names[] = {
    "pl-simple", "pl-re", "{tg}re", "re}x", "pl-yield", "pl-renew", "pl-token", "{tg}simple",
};
#define NNAMES (sizeof lock_names / sizeof lock_names[0])

/* The derived names a pattern reaches, through the forms of those it
 * names, as bits. */
static unsigned reach(const char *pat, int depth)
{
    unsigned m = 0;
    for (const char *p = pat; *p;) {
        if (!(*p >= 'A' && *p <= 'Z')) {
            p++;
            continue;
        }
        const char *w = p;
        while ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) p++;
        int d = der_of(w, (size_t)(p - w));
        if (d < 0 || depth >= 4) continue;
        m |= 1u << d;
        for (int k = 0; k < der_nforms[d]; k++)
            m |= reach(t_names.rows[der_forms[d][k]].cell[2], depth + 1);
    }
    return m;
}

static int add_variants(struct table *t, int r, const char *name)
{
    const int cols[2][4] = {{1, 0, 1, 1}, {0, 0, 1, 1}}; /* which cells are patterns */
    const int *pc = cols[t == &t_msgs];
    unsigned m = 0;
    for (int c = 0; c < 4; c++)
        if (pc[c]) m |= reach(t->rows[r].cell[c], 0);
    int choice[MAXDER] = {0};
    uint64_t seen_used[256];
    int nseen = 0;
    for (;;) {
        struct build b;
        uint64_t used = 0;
        int phases = t->rows[r].phases;
        struct variant v;
        memset(&v, 0, sizeof v);
        v.t = t;
        v.row = r;
        for (int c = 0; c < 4; c++) {
            if (!pc[c]) continue;
            memset(&b, 0, sizeof b);
            b.name = name;
            b.choice = choice;
            b.phases = PH_ANY;
            put(&b, "^", 1);
            expand(&b, t->rows[r].cell[c], 0);
            put(&b, "$", 1);
            if (b.unknown[0]) {
                CHECK_MSG(0, "%s:%d: placeholder %s is not one the test knows (NOTATION)",
                          page_path, t->rows[r].line, b.unknown);
                return -1;
            }
            used |= b.used;
            phases &= b.phases;
            v.has[c] = 1;
            if (regcomp(&v.re[c], b.re, REG_EXTENDED | REG_NOSUB) != 0) {
                CHECK_MSG(0, "%s:%d: no regular expression from '%s'", page_path,
                          t->rows[r].line, b.re);
                for (int k = 0; k < c; k++)
                    if (v.has[k]) regfree(&v.re[k]);
                return -1;
            }
        }
        /* The same forms reached by another choice: the same variant. */
        int dup = !phases;
        for (int i = 0; i < nseen && !dup; i++) dup = seen_used[i] == used;
        if (dup) {
            for (int c = 0; c < 4; c++)
                if (v.has[c]) regfree(&v.re[c]);
        } else {
            if (nseen < 256) seen_used[nseen++] = used;
            v.used = used;
            v.phases = phases;
            if (nvars == capvars) {
                capvars = capvars ? 2 * capvars : 256;
                vars = realloc(vars, capvars * sizeof *vars);
                if (!CHECK(vars != NULL)) return -1;
            }
            vars[nvars++] = v;
        }
        /* The next choice: an odometer over the derived names reached. */
        int d;
        for (d = 0; d < nder; d++) {
            if (!(m & (1u << d))) continue;
            if (++choice[d] < der_nforms[d]) break;
            choice[d] = 0;
        }
        if (d == nder) break;
    }
    return 0;
}

static int build_variants(void)
{
    index_names();
    struct table *ts[2] = {&t_keys, &t_msgs};
    for (int i = 0; i < 2; i++)
        for (int r = 0; r < ts[i]->n; r++)
            for (size_t k = 0; k < NNAMES; k++)
                if (add_variants(ts[i], r, lock_names[k]) != 0) return -1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Observations                                                         */

static int phase; /* the server under test now */
static int unlisted; /* observations that fit no row, in this phase */
static long observed; /* complete observations: they produce rows */

/* An observation: for the keys table (key, type, field, value) or the
 * messages table (-, command, channel, message); NULL cells fit
 * anything.  Only a complete one (no NULL) counts as having produced
 * the rows it fits.  what: where it was seen, for the failure. */
static void observe(struct table *t, const char *c0, const char *c1, const char *c2,
                    const char *c3, const char *what)
{
    const char *c[4] = {c0, c1, c2, c3};
    int complete = (t == &t_msgs || c0) && c1 && c2 && c3, matched = 0;
    for (size_t i = 0; i < nvars; i++) {
        struct variant *v = &vars[i];
        if (v->t != t || !(v->phases & phase)) continue;
        int ok = 1;
        for (int k = 0; k < 4 && ok; k++) {
            if (!c[k]) continue;
            if (v->has[k]) ok = regexec(&v->re[k], c[k], 0, NULL, 0) == 0;
            else ok = !strcmp(c[k], t->rows[v->row].cell[k]); /* type, command */
        }
        if (!ok) continue;
        matched = 1;
        if (!complete) break;
        t->rows[v->row].seen |= phase;
        for (int r = 0; r < t_names.n; r++)
            if (v->used & ((uint64_t)1 << r)) t_names.rows[r].seen |= phase;
    }
    if (matched) {
        observed += complete;
        return;
    }
    /* The first few said; the rest counted (an unlisted form comes back
     * with every lock, token and time). */
    if (++unlisted > 12) return;
    if (t == &t_keys)
        CHECK_MSG(0, "%s (%s server): key '%s' type %s field '%s' value '%s' fits no row of the "
                     "page's keys table",
                  what, phase_name(phase), c0, c1 ? c1 : "(any)", c2 ? c2 : "(any)",
                  c3 ? c3 : "(any)");
    else
        CHECK_MSG(0, "%s (%s server): %s on '%s' of '%s' fits no row of the page's messages "
                     "table",
                  what, phase_name(phase), c1, c2, c3 ? c3 : "(any message)");
}

/* ------------------------------------------------------------------ */
/* What the server holds                                                */

static char *dup_str(const rlk_resp_value *v)
{
    char *s = malloc(v && v->str ? v->len + 1 : 1);
    if (!s) abort();
    if (v && v->str) memcpy(s, v->str, v->len);
    s[v && v->str ? v->len : 0] = 0;
    return s;
}

/* Every key: its type, a TTL, its contents. */
static void snapshot(rlk_conn *adm, const char *when)
{
    char cursor[32] = "0", what[160];
    snprintf(what, sizeof what, "SCAN %s", when);
    do {
        rlk_resp_value *v = CMD(adm, "SCAN", cursor, "COUNT", "1000");
        const rlk_resp_value *next = v ? rlk_resp_value_at(v, 0) : NULL;
        const rlk_resp_value *keys = v ? rlk_resp_value_at(v, 1) : NULL;
        if (!CHECK(next && next->str && keys && keys->type == RLK_RESP_ARRAY)) return;
        snprintf(cursor, sizeof cursor, "%.*s", (int)next->len, next->str);
        size_t nk = 0, i = 0;
        for (const rlk_resp_value *k = keys->child; k; k = k->next) nk++;
        char **names = calloc(nk ? nk : 1, sizeof *names);
        if (!CHECK(names != NULL)) return;
        for (const rlk_resp_value *k = keys->child; k; k = k->next) names[i++] = dup_str(k);
        for (i = 0; i < nk; i++) {
            char type[16];
            const char *key = names[i];
            if (CMD_STR(adm, type, "TYPE", key) < 0) continue;
            if (!strcmp(type, "none")) continue; /* gone meanwhile */
            long long pttl = CMD_INT(adm, "PTTL", key);
            if (pttl == -2) continue;
            CHECK_MSG(pttl > 0, "%s (%s server): key '%s' (%s) has no TTL (PTTL %lld)", what,
                      phase_name(phase), key, type, pttl);
            if (!strcmp(type, "string")) {
                v = CMD(adm, "GET", key);
                if (v && v->type == RLK_RESP_BULK) {
                    char *val = dup_str(v);
                    observe(&t_keys, key, "string", "-", val, what);
                    free(val);
                }
            } else if (!strcmp(type, "list") || !strcmp(type, "hash")) {
                int hash = type[0] == 'h';
                v = hash ? CMD(adm, "HGETALL", key) : CMD(adm, "LRANGE", key, "0", "-1");
                if (!v || (v->type != RLK_RESP_ARRAY && v->type != RLK_RESP_MAP)) continue;
                size_t ne = 0, j = 0;
                for (const rlk_resp_value *e = v->child; e; e = e->next) ne++;
                char **el = calloc(ne ? ne : 1, sizeof *el);
                if (!CHECK(el != NULL)) continue;
                for (const rlk_resp_value *e = v->child; e; e = e->next) el[j++] = dup_str(e);
                for (j = 0; j < ne; j += hash ? 2 : 1)
                    observe(&t_keys, key, type, hash ? el[j] : "-",
                            hash ? (j + 1 < ne ? el[j + 1] : "") : el[j], what);
                for (j = 0; j < ne; j++) free(el[j]);
                free(el);
            } else {
                observe(&t_keys, key, type, NULL, NULL, what);
            }
        }
        for (i = 0; i < nk; i++) free(names[i]);
        free(names);
    } while (strcmp(cursor, "0") != 0);
}

/* ------------------------------------------------------------------ */
/* What the clients and scripts run: MONITOR                            */

struct mon {
    int fd;
    char *buf;
    size_t len, cap;
    char admin[64];    /* the test's own connection, left out */
    unsigned marks;
    int lines;         /* commands looked at */
};

static int mon_open(struct mon *m, int port, rlk_conn *adm)
{
    memset(m, 0, sizeof *m);
    m->fd = -1;
    /* The admin connection's address, as MONITOR names it. */
    rlk_resp_value *v = CMD(adm, "CLIENT", "INFO");
    const char *a = v && v->str ? strstr(v->str, "addr=") : NULL;
    if (!CHECK_MSG(a != NULL, "CLIENT INFO has no addr=")) return -1;
    a += 5;
    size_t n = strcspn(a, " \r\n");
    snprintf(m->admin, sizeof m->admin, "%.*s", (int)(n < 63 ? n : 63), a);
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof sin);
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    m->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (!CHECK(m->fd >= 0) ||
        !CHECK_MSG(connect(m->fd, (struct sockaddr *)&sin, sizeof sin) == 0, "connect: %s",
                   strerror(errno)) ||
        !CHECK(write(m->fd, "MONITOR\r\n", 9) == 9))
        return -1;
    m->cap = 1 << 16;
    m->buf = malloc(m->cap);
    return CHECK(m->buf != NULL) ? 0 : -1;
}

static void mon_close(struct mon *m)
{
    if (m->fd >= 0) close(m->fd);
    free(m->buf);
    m->fd = -1;
    m->buf = NULL;
}

/* The arguments of a MONITOR line after "] ": quoted, with the escapes
 * of sdscatrepr.  Written into out (NUL-separated), their starts into
 * argv; their count, or -1. */
static int mon_args(const char *s, char *out, size_t cap, char **argv, int max)
{
    int argc = 0;
    size_t o = 0;
    while (*s == ' ') s++;
    while (*s) {
        if (*s != '"' || argc == max) return -1;
        s++;
        argv[argc++] = out + o;
        while (*s && *s != '"') {
            char ch = *s++;
            if (ch == '\\') {
                ch = *s++;
                switch (ch) {
                case 'n': ch = '\n'; break;
                case 'r': ch = '\r'; break;
                case 't': ch = '\t'; break;
                case 'a': ch = '\a'; break;
                case 'b': ch = '\b'; break;
                case 'x': {
                    char hx[3] = {s[0], s[1], 0};
                    if (!isxdigit((unsigned char)hx[0]) || !isxdigit((unsigned char)hx[1])) return -1;
                    ch = (char)strtol(hx, NULL, 16);
                    s += 2;
                    break;
                }
                case '\\': case '"': break;
                default: return -1;
                }
            }
            if (o + 2 >= cap) return -1;
            out[o++] = ch;
        }
        if (*s != '"') return -1;
        s++;
        out[o++] = 0;
        while (*s == ' ') s++;
    }
    return argc;
}

static int is(const char *cmd, const char *const *list)
{
    for (; *list; list++)
        if (!strcasecmp(cmd, *list)) return 1;
    return 0;
}

/* What the clients sent themselves (not their scripts), in this phase:
 * the forms of the page's forms table. */
static struct {
    int delifeq, delex, set_ifeq, fcall, evalsha;
} sent;

static int has_word(int argc, char **argv, const char *w)
{
    for (int i = 1; i < argc; i++)
        if (!strcasecmp(argv[i], w)) return 1;
    return 0;
}

/* One command run by a client or a script. */
static void mon_command(int argc, char **argv, const char *src)
{
    static const char *const keyless[] = {
        "time", "ping", "hello", "client", "info", "function", "script", "cluster", "echo",
        "select", "auth", "readonly", "asking", "command", "quit", "reset", NULL};
    static const char *const str_writes[] = {"set", "append", "delifeq", "delex", NULL};
    static const char *const hash_writes[] = {"hset", "hsetnx", "hdel", "hincrby", NULL};
    static const char *const list_writes[] = {"rpush", "lpop", "lrem", NULL};
    static const char *const reads[] = {"get", "getrange", "hget", "hexists", "hvals", "hkeys", "hgetall",
                                        "hlen", "lindex", "llen", "lrange", "type", "pttl",
                                        "pexpire", NULL};
    static const char *const all_keys[] = {"exists", "del", "unlink", "mget", NULL};
    static const char *const scripts[] = {"fcall", "fcall_ro", "evalsha", "evalsha_ro", "eval",
                                          "eval_ro", NULL};
    char what[96];
    const char *cmd = argv[0];
    snprintf(what, sizeof what, "MONITOR: %s from %s", cmd, src);
    if (strcmp(src, "lua") != 0) {
        sent.delifeq += !strcasecmp(cmd, "delifeq");
        sent.delex += !strcasecmp(cmd, "delex") && has_word(argc, argv, "ifeq");
        sent.set_ifeq += !strcasecmp(cmd, "set") && has_word(argc, argv, "ifeq");
        sent.fcall += !strcasecmp(cmd, "fcall");
        sent.evalsha += !strcasecmp(cmd, "evalsha");
    }
    if (is(cmd, keyless)) return;
    if (!strcasecmp(cmd, "publish") || !strcasecmp(cmd, "spublish")) {
        if (CHECK_MSG(argc == 3, "%s: %d arguments", what, argc))
            observe(&t_msgs, NULL, cmd[0] == 's' || cmd[0] == 'S' ? "SPUBLISH" : "PUBLISH",
                    argv[1], argv[2], what);
        return;
    }
    if (!strcasecmp(cmd, "subscribe") || !strcasecmp(cmd, "ssubscribe") ||
        !strcasecmp(cmd, "unsubscribe") || !strcasecmp(cmd, "sunsubscribe")) {
        /* A channel listened to is one a message of the page comes on. */
        int sharded = !strncasecmp(cmd, "ss", 2) || !strncasecmp(cmd, "sun", 3);
        const char *pub = sharded ? "SPUBLISH" : "PUBLISH";
        for (int i = 1; i < argc; i++) observe(&t_msgs, NULL, pub, argv[i], NULL, what);
        return;
    }
    if (argc < 2) {
        CHECK_MSG(0, "%s: no key", what);
        return;
    }
    if (is(cmd, str_writes)) {
        /* SET's value is written; DELIFEQ's and DELEX's compared. */
        int set = !strcasecmp(cmd, "set") && argc >= 3;
        observe(&t_keys, argv[1], "string", set ? "-" : NULL, set ? argv[2] : NULL, what);
    } else if (is(cmd, hash_writes)) {
        if (!strcasecmp(cmd, "hset") || !strcasecmp(cmd, "hsetnx"))
            for (int i = 2; i + 1 < argc; i += 2)
                observe(&t_keys, argv[1], "hash", argv[i], argv[i + 1], what);
        else
            for (int i = 2; i < argc && (i == 2 || !strcasecmp(cmd, "hdel")); i++)
                observe(&t_keys, argv[1], "hash", argv[i], NULL, what);
    } else if (is(cmd, list_writes)) {
        if (!strcasecmp(cmd, "rpush"))
            for (int i = 2; i < argc; i++) observe(&t_keys, argv[1], "list", "-", argv[i], what);
        else if (!strcasecmp(cmd, "lrem") && argc == 4)
            observe(&t_keys, argv[1], "list", "-", argv[3], what);
        else
            observe(&t_keys, argv[1], "list", NULL, NULL, what);
    } else if (is(cmd, reads)) {
        observe(&t_keys, argv[1], NULL, NULL, NULL, what);
    } else if (is(cmd, all_keys)) {
        for (int i = 1; i < argc; i++) observe(&t_keys, argv[i], NULL, NULL, NULL, what);
    } else if (is(cmd, scripts)) {
        long nk = argc >= 3 ? strtol(argv[2], NULL, 10) : -1;
        if (!CHECK_MSG(nk >= 0 && nk <= argc - 3, "%s: bad key count", what)) return;
        for (long i = 0; i < nk; i++) observe(&t_keys, argv[3 + i], NULL, NULL, NULL, what);
    } else {
        CHECK_MSG(0, "%s: a command this test does not know (what keys does it name?)", what);
    }
}

static void mon_line(struct mon *m, char *line, const char *mark, int *found)
{
    if (line[0] != '+') return; /* +OK first; nothing else comes */
    if (!strcmp(line, "+OK")) return;
    char *open = strstr(line, " ["), *close = open ? strstr(open, "] ") : NULL;
    if (!close) {
        CHECK_MSG(0, "MONITOR: unreadable line %.200s", line);
        return;
    }
    *close = 0;
    const char *src = strchr(open + 2, ' ');
    src = src ? src + 1 : open + 2;
    char args[8192], *argv[256];
    int argc = mon_args(close + 2, args, sizeof args, argv, 256);
    if (!strcmp(src, m->admin)) {
        if (argc == 2 && !strcasecmp(argv[0], "echo") && !strcmp(argv[1], mark)) *found = 1;
        return;
    }
    if (argc < 1) {
        /* FUNCTION LOAD's and SCRIPT LOAD's long texts may not fit:
         * they name no key. */
        if (strncasecmp(close + 2, "\"FUNCTION\"", 10) && strncasecmp(close + 2, "\"SCRIPT\"", 8))
            CHECK_MSG(0, "MONITOR: unreadable arguments %.200s", close + 2);
        return;
    }
    m->lines++;
    mon_command(argc, argv, src);
}

/* Reads MONITOR until the test's own ECHO of a new mark: everything run
 * before it has been looked at. */
static void mon_sync(struct mon *m, rlk_conn *adm)
{
    char mark[64];
    int found = 0;
    if (m->fd < 0) return;
    snprintf(mark, sizeof mark, "protocol-layout-mark-%u", ++m->marks);
    if (!CMD(adm, "ECHO", mark)) return;
    int64_t deadline = ts_now_ms() + 4 * LONG_MS;
    while (!found) {
        char *nl;
        while (!found && (nl = memmem(m->buf, m->len, "\r\n", 2)) != NULL) {
            *nl = 0;
            mon_line(m, m->buf, mark, &found);
            size_t used = (size_t)(nl + 2 - m->buf);
            memmove(m->buf, nl + 2, m->len - used);
            m->len -= used;
        }
        if (found) break;
        int64_t left = deadline - ts_now_ms();
        if (!CHECK_MSG(left > 0, "MONITOR: the mark did not come")) return;
        struct pollfd p = {m->fd, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0) continue;
        if (m->cap - m->len < 4096) {
            char *nb = realloc(m->buf, m->cap * 2);
            if (!CHECK(nb != NULL)) return;
            m->buf = nb;
            m->cap *= 2;
        }
        ssize_t r = read(m->fd, m->buf + m->len, m->cap - m->len - 1);
        if (!CHECK_MSG(r > 0, "MONITOR: the connection closed")) return;
        m->len += (size_t)r;
    }
}

/* ------------------------------------------------------------------ */
/* Driving locks                                                        */

static char url[64];
static rlk_conn *adm;
static struct mon mon;

/* A step done: what the server holds, and what ran. */
static void look(const char *when)
{
    snapshot(adm, when);
    mon_sync(&mon, adm);
}

static rlk_client *client(const char *client_id, int watchdog)
{
    rlk_client_config cfg;
    client_cfg(&cfg, url);
    /* A short command timeout: a reentrant release's tombstone lives
     * twice that. */
    cfg.conn.command_timeout_ms = slow ? 4000 : 1500;
    cfg.client_id = client_id;
    rlk_client *cl = CLIENT_WITH(&cfg);
    if (cl && watchdog && !CHECK(rlk_client_watchdog_start(cl) == RLK_OK)) {
        rlk_client_free(cl);
        return NULL;
    }
    return cl;
}

/* The key `what` ("queue", "waiters") beside name, by the rule the page
 * gives (written here again, not taken from the library). */
static void key_of(char *out, size_t n, const char *name, const char *what)
{
    const char *open = strchr(name, '{'), *close = open ? strchr(open + 1, '}') : NULL;
    if (close && close > open + 1) {
        snprintf(out, n, "%s:%s", name, what);
    } else if (!strchr(name, '}')) {
        snprintf(out, n, "{%s}:%s", name, what);
    } else {
        unsigned slot = t_slot(name);
        for (unsigned i = 0;; i++) {
            char tag[16];
            snprintf(tag, sizeof tag, "s%u", i);
            if (t_slot(tag) == slot) {
                snprintf(out, n, "resplock:%s:{%s}:%s", what, tag, name);
                return;
            }
        }
    }
}

static int wait_llen(const char *name, long long want)
{
    char q[256];
    key_of(q, sizeof q, name, "queue");
    int64_t deadline = ts_now_ms() + LONG_MS;
    for (;;) {
        long long n = CMD_INT(adm, "LLEN", q);
        if (n == want) return 1;
        if (n == LLONG_MIN || ts_now_ms() >= deadline)
            return CHECK_MSG(0, "%s: %lld in line, want %lld", q, n, want);
        ts_pause_ms(2);
    }
}

static int joined(struct waiter *w)
{
    pthread_join(w->th, NULL);
    return CHECK_MSG(w->rc == RLK_OK && w->l, "waiter on %s: %d %s", w->name, w->rc, w->err);
}

/* A simple lock: held, extended (with a handle and by token), two
 * waiters in line (the mark), handed from waiter to waiter, then freed
 * with nobody in line. */
static void simple_lock(const char *name)
{
    rlk_client *a = client(NULL, 0), *b = client(NULL, 0), *c = client(NULL, 0);
    struct waiter wb, wc;
    int sb = 0, sc = 0;
    rlk_lock *l = NULL;
    if (!a || !b || !c) goto out;
    l = ACQ(a, name, 10000);
    if (!l) goto out;
    look("a simple lock held");
    CHECK_EQ_INT(rlk_lock_extend(l, 9000, RLK_EXTEND_SET), RLK_OK);
    CHECK_EQ_INT(rlk_lock_extend(l, 1000, RLK_EXTEND_ADD), RLK_OK);
    CHECK_EQ_INT(rlk_extend_token(a, name, rlk_lock_token(l), 9500, RLK_EXTEND_SET, NULL), RLK_OK);
    sb = waiter_start(&wb, b, name, 5000, LONG_MS, RLK_LOCK_SIMPLE);
    if (!sb || !wait_llen(name, 1)) goto out;
    look("one waiter in line");
    /* Marked now: a native extend misses, the script decides. */
    CHECK_EQ_INT(rlk_lock_extend(l, 9000, RLK_EXTEND_SET), RLK_OK);
    rlk_lock_status st;
    CHECK_EQ_INT(rlk_lock_get_status(a, name, &st), RLK_OK);
    CHECK_EQ_INT(st.waiters, 1);
    sc = waiter_start(&wc, c, name, 5000, LONG_MS, RLK_LOCK_SIMPLE);
    if (!sc || !wait_llen(name, 2)) goto out;
    look("two waiters in line");
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    l = NULL;
    sb = 0;
    if (!joined(&wb)) goto out;
    look("handed to the first waiter, the second still in line");
    CHECK_EQ_INT(rlk_lock_release(wb.l), RLK_OK);
    sc = 0;
    if (!joined(&wc)) goto out;
    look("handed to the last waiter");
    CHECK_EQ_INT(rlk_lock_release(wc.l), RLK_OK);
    look("freed, nobody in line");
out:
    if (sb) pthread_join(wb.th, NULL);
    if (sc) pthread_join(wc.th, NULL);
    if (l) rlk_lock_release(l);
    rlk_client_free(a);
    rlk_client_free(b);
    rlk_client_free(c);
}

/* A reentrant lock held twice (one holder with a client id), released
 * one hold (tombstone 2), a waiter in line, handed over (tombstone 1),
 * freed by the new holder ("0" on the release channel). */
static void reentrant_lock(const char *name)
{
    rlk_client *a = client("app7", 0), *b = client(NULL, 0);
    struct waiter wb;
    int sb = 0;
    rlk_lock *l1 = NULL, *l2 = NULL;
    if (!a || !b) goto out;
    l1 = ACQ_R(a, name, 10000);
    l2 = l1 ? ACQ_R(a, name, 10000) : NULL;
    if (!l2) goto out;
    look("a reentrant lock held twice");
    CHECK_EQ_INT(rlk_lock_release(l2), RLK_OK);
    l2 = NULL;
    look("a reentrant lock, one hold released");
    sb = waiter_start(&wb, b, name, 5000, LONG_MS, RLK_LOCK_REENTRANT);
    if (!sb || !wait_llen(name, 1)) goto out;
    look("a reentrant waiter in line");
    CHECK_EQ_INT(rlk_lock_extend(l1, 9000, RLK_EXTEND_SET), RLK_OK);
    CHECK_EQ_INT(rlk_lock_release(l1), RLK_OK);
    l1 = NULL;
    sb = 0;
    if (!joined(&wb)) goto out;
    look("a reentrant lock handed over");
    CHECK_EQ_INT(rlk_lock_release(wb.l), RLK_OK);
    look("a reentrant lock freed");
out:
    if (sb) pthread_join(wb.th, NULL);
    if (l2) rlk_lock_release(l2);
    if (l1) rlk_lock_release(l1);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* A watchdog lock renewed twice (the renewal round), then released. */
static void renewed_lock(const char *name)
{
    rlk_client *a = client(NULL, 1);
    rlk_lock *l = NULL;
    if (!a) goto out;
    rlk_lock_options o;
    opts(&o, 600, 0, RLK_LOCK_SIMPLE, 1, NULL);
    int rc = rlk_lock_acquire(a, name, &o, &l);
    if (!CHECK_MSG(rc == RLK_OK && l, "acquire %s: %d %s", name, rc, rlk_client_errmsg(a))) goto out;
    long long last = CMD_INT(adm, "PTTL", name);
    int renewals = 0;
    int64_t deadline = ts_now_ms() + LONG_MS;
    while (renewals < 2 && ts_now_ms() < deadline) {
        long long p = CMD_INT(adm, "PTTL", name);
        if (p > last) renewals++;
        last = p;
        ts_pause_ms(5);
    }
    CHECK_MSG(renewals == 2, "%s: renewed %d times, want 2", name, renewals);
    look("a watchdog lock renewed");
    CHECK_EQ_INT(rlk_lock_release(l), RLK_OK);
    l = NULL;
out:
    if (l) rlk_lock_release(l);
    rlk_client_free(a);
}

/* A lock with a waiter in line released by token, without a handle
 * (resplock release NAME TOKEN): the release hands it over. */
static void token_release_hands_over(const char *name)
{
    rlk_client *a = client(NULL, 0), *b = client(NULL, 0);
    struct waiter wb;
    int sb = 0;
    rlk_lock *l = NULL;
    if (!a || !b) goto out;
    l = ACQ(a, name, 10000);
    if (!l) goto out;
    sb = waiter_start(&wb, b, name, 5000, LONG_MS, RLK_LOCK_SIMPLE);
    if (!sb || !wait_llen(name, 1)) goto out;
    CHECK_EQ_INT(rlk_release_token(a, name, rlk_lock_token(l)), RLK_OK);
    /* The handle learns that its lock is gone: handed over, or (once
     * the new holder released it) free. */
    int rc = rlk_lock_release(l);
    CHECK_MSG(rc == RLK_LOCK_NOT_OWNER || rc == RLK_LOCK_NOT_HELD, "release after: %d", rc);
    l = NULL;
    sb = 0;
    if (joined(&wb)) CHECK_EQ_INT(rlk_lock_release(wb.l), RLK_OK);
    look("released by token with a waiter in line");
out:
    if (sb) pthread_join(wb.th, NULL);
    if (l) rlk_lock_release(l);
    rlk_client_free(a);
    rlk_client_free(b);
}

/* Two holders that hand a lock to each other until a release yields:
 * "~yield" in the waiters' hash, "0" on the release channel. */
struct looper {
    const char *name;
    int *stop;
    int rounds;
    int rc;
    char err[256];
    rlk_client *cl;
    rlk_conn *c;
    pthread_t th;
};

static void *loop_main(void *arg)
{
    struct looper *lp = arg;
    char q[256];
    key_of(q, sizeof q, lp->name, "queue");
    while (!__atomic_load_n(lp->stop, __ATOMIC_ACQUIRE)) {
        rlk_lock_options o;
        rlk_lock *l = NULL;
        rlk_lock_options_init(&o);
        o.ttl_ms = 5000;
        o.wait_ms = LONG_MS;
        /* Held at its full TTL once handed over: the hold below (up to
         * 2 s, no call into the client) must not outlast a handoff's
         * claim (2 s) whose confirmation nobody reads meanwhile. */
        o.full_ttl = 1;
        lp->rc = rlk_lock_acquire(lp->cl, lp->name, &o, &l);
        if (lp->rc != RLK_OK) {
            snprintf(lp->err, sizeof lp->err, "%s", rlk_client_errmsg(lp->cl));
            break;
        }
        lp->rounds++;
        /* Held until the other is in line (a release then hands over),
         * or for 2 s. */
        int64_t until = ts_now_ms() + 2000;
        while (!__atomic_load_n(lp->stop, __ATOMIC_ACQUIRE) && ts_now_ms() < until) {
            const char *argv[2] = {"LLEN", q};
            rlk_resp_value *v = NULL;
            if (rlk_conn_command(lp->c, &v, 2, argv, NULL) != RLK_OK) break;
            if (v->type == RLK_RESP_INTEGER && v->integer > 0) break;
            ts_pause_ms(1);
        }
        /* A little work under the lock: a few hundred handoffs make the
         * run that yields, not thousands (MONITOR reads each). */
        ts_pause_ms(5);
        lp->rc = rlk_lock_release(l);
        if (lp->rc != RLK_OK) {
            snprintf(lp->err, sizeof lp->err, "release: %s", rlk_client_errmsg(lp->cl));
            break;
        }
    }
    return NULL;
}

static void yielding_lock(const char *name)
{
    int stop = 0, started[2] = {0, 0};
    struct looper lp[2];
    char w[256];
    key_of(w, sizeof w, name, "waiters");
    memset(lp, 0, sizeof lp);
    for (int i = 0; i < 2; i++) {
        lp[i].name = name;
        lp[i].stop = &stop;
        lp[i].cl = client(NULL, 0);
        lp[i].c = CONNECT(url);
        if (!lp[i].cl || !lp[i].c) goto out;
    }
    for (int i = 0; i < 2; i++)
        started[i] = CHECK(pthread_create(&lp[i].th, NULL, loop_main, &lp[i]) == 0);
    if (!started[0] || !started[1]) goto out;
    int64_t deadline = ts_now_ms() + 4 * LONG_MS;
    long long y = 0;
    while ((y = CMD_INT(adm, "HEXISTS", w, "~yield")) == 0 && ts_now_ms() < deadline)
        ts_pause_ms(5);
    CHECK_MSG(y == 1, "%s: no ~yield after %d + %d holds", w, lp[0].rounds, lp[1].rounds);
    look("a run of handoffs yielded");
out:
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) {
        if (started[i]) {
            pthread_join(lp[i].th, NULL);
            CHECK_MSG(lp[i].rc == RLK_OK, "looper %d: %d %s", i, lp[i].rc, lp[i].err);
        }
        rlk_client_free(lp[i].cl);
        rlk_conn_free(lp[i].c);
    }
    look("the yield's holders gone");
}

/* Waits until the server holds no key: every key resplock wrote went
 * with its lock or its TTL. */
static void nothing_left(void)
{
    int64_t deadline = ts_now_ms() + 4 * LONG_MS;
    long long n;
    while ((n = CMD_INT(adm, "DBSIZE")) > 0 && ts_now_ms() < deadline) ts_pause_ms(20);
    if (!CHECK_MSG(n == 0, "%lld keys left behind once every lock was released", n))
        snapshot(adm, "left behind");
    mon_sync(&mon, adm);
}

static int start_phase(ts_server *s)
{
    url_of(url, sizeof url, s);
    adm = connect_url(url, 3, NULL, NULL, __LINE__);
    return adm && mon_open(&mon, s->port, adm) == 0 ? 0 : -1;
}

/* "major.minor" as one number, or -1. */
static long version_of(const char *v)
{
    char *end;
    long major = strtol(v, &end, 10), minor;
    if (end == v || *end != '.') return -1;
    minor = strtol(end + 1, &end, 10);
    return major * 1000 + minor;
}

/* The page's forms table against what the clients sent to this server:
 * the row of its name and version says which release, extend and
 * script forms they use. */
static void check_forms(void)
{
    char text[8192], name[16] = "redis", version[32] = "";
    rlk_resp_value *v = CMD(adm, "INFO", "server");
    if (!CHECK(v && v->str)) return;
    snprintf(text, sizeof text, "%.*s", (int)v->len, v->str);
    const char *vk = strstr(text, "valkey_version:"), *rd = strstr(text, "redis_version:");
    if (vk) snprintf(name, sizeof name, "valkey");
    const char *ver = vk ? vk + 15 : rd ? rd + 14 : NULL;
    if (!CHECK_MSG(ver, "INFO server has no version")) return;
    snprintf(version, sizeof version, "%.*s", (int)strcspn(ver, "\r\n"), ver);
    long have = version_of(version), best = -1;
    int row = -1;
    for (int r = 0; r < t_forms.n; r++) {
        long from = version_of(t_forms.rows[r].cell[1]);
        CHECK_MSG(from >= 0, "%s:%d: version '%s'", page_path, t_forms.rows[r].line,
                  t_forms.rows[r].cell[1]);
        if (!strcmp(t_forms.rows[r].cell[0], name) && from <= have && from > best) best = from, row = r;
    }
    if (!CHECK_MSG(row >= 0, "the page's forms table has no row for %s %s", name, version)) return;
    struct row *w = &t_forms.rows[row];
    w->seen |= phase;
    const char *rel = w->cell[2], *ext = w->cell[3], *scr = w->cell[4];
    printf("# %s %s (%s server): release %s, extend %s, scripts %s (the page's line %d); sent "
           "DELIFEQ %d, DELEX IFEQ %d, SET IFEQ %d, FCALL %d, EVALSHA %d\n",
           name, version, phase_name(phase), rel, ext, scr, w->line, sent.delifeq, sent.delex,
           sent.set_ifeq, sent.fcall, sent.evalsha);
    CHECK_MSG(!strcmp(rel, "script") || !strcmp(rel, "DELIFEQ") || !strcmp(rel, "DELEX IFEQ"),
              "%s:%d: release form '%s'", page_path, w->line, rel);
    CHECK_MSG((sent.delifeq > 0) == !strcmp(rel, "DELIFEQ") &&
                  (sent.delex > 0) == !strcmp(rel, "DELEX IFEQ"),
              "%s %s: the page says release by %s; DELIFEQ sent %d times, DELEX IFEQ %d", name,
              version, rel, sent.delifeq, sent.delex);
    CHECK_MSG(!strcmp(ext, "script") || !strcmp(ext, "SET IFEQ PX"), "%s:%d: extend form '%s'",
              page_path, w->line, ext);
    CHECK_MSG((sent.set_ifeq > 0) == !strcmp(ext, "SET IFEQ PX"),
              "%s %s: the page says extend by %s; SET IFEQ sent %d times", name, version, ext,
              sent.set_ifeq);
    CHECK_MSG(!strcmp(scr, "FCALL") || !strcmp(scr, "EVALSHA"), "%s:%d: script form '%s'",
              page_path, w->line, scr);
    CHECK_MSG((sent.fcall > 0) == !strcmp(scr, "FCALL") &&
                  (sent.evalsha > 0) == !strcmp(scr, "EVALSHA"),
              "%s %s: the page says scripts by %s; FCALL sent %d times, EVALSHA %d", name,
              version, scr, sent.fcall, sent.evalsha);
}

static void end_phase(void)
{
    CHECK_MSG(unlisted <= 12, "... and %d more observations that fit no row", unlisted - 12);
    unlisted = 0;
    if (adm && mon.fd >= 0) check_forms();
    memset(&sent, 0, sizeof sent);
    printf("# %s server: %d commands of the clients and scripts read from MONITOR, %ld keys, "
           "fields, values and messages seen\n",
           phase_name(phase), mon.lines, observed);
    observed = 0;
    mon_close(&mon);
    rlk_conn_free(adm);
    adm = NULL;
}

static void test_single_server(void)
{
    phase = PH_SINGLE;
    if (start_phase(srv) != 0) goto out;
    simple_lock("pl-simple");
    simple_lock("{tg}simple");
    reentrant_lock("pl-re");
    reentrant_lock("{tg}re");
    reentrant_lock("re}x");
    renewed_lock("pl-renew");
    token_release_hands_over("pl-token");
    yielding_lock("pl-yield");
    nothing_left();
out:
    end_phase();
}

/* A one-node cluster: every slot on one primary. */
static ts_server *cluster_node(void)
{
    char bus[16];
    /* The bus port is chosen too (the default, port + 10000, may be
     * taken); taken meanwhile, it fails every try of ts_start. */
    const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                           "--cluster-port", bus, NULL};
    ts_options o;
    memset(&o, 0, sizeof o);
    o.extra = extra;
    ts_server *s = NULL;
    for (int attempt = 0; attempt < 4 && !s; attempt++) {
        int p = ts_free_port(0);
        if (p < 0) break;
        snprintf(bus, sizeof bus, "%d", p);
        s = ts_start(&o);
    }
    if (!CHECK_MSG(s != NULL, "cannot start a cluster node")) return NULL;
    char u[64];
    url_of(u, sizeof u, s);
    rlk_conn *c = CONNECT(u);
    rlk_resp_value *a = c ? CMD(c, "CLUSTER", "ADDSLOTSRANGE", "0", "16383") : NULL;
    int ok = CHECK_MSG(a && a->type == RLK_RESP_SIMPLE, "CLUSTER ADDSLOTSRANGE: %.*s",
                       a && a->str ? (int)a->len : 0, a && a->str ? a->str : "");
    int64_t deadline = ts_now_ms() + LONG_MS;
    while (ok) {
        rlk_resp_value *v = CMD(c, "CLUSTER", "INFO");
        if (v && v->str && strstr(v->str, "cluster_state:ok")) break;
        if (!v || ts_now_ms() >= deadline) ok = CHECK_MSG(0, "the cluster node is not ok");
        else ts_pause_ms(20);
    }
    rlk_conn_free(c);
    if (!ok) {
        ts_stop(s);
        return NULL;
    }
    return s;
}

static void test_cluster_node(void)
{
    phase = PH_CLUSTER;
    ts_server *s = cluster_node();
    if (!s || start_phase(s) != 0) goto out;
    simple_lock("pl-simple");
    token_release_hands_over("pl-token");
    reentrant_lock("pl-re");
    reentrant_lock("{tg}re");
    nothing_left();
out:
    end_phase();
    ts_stop(s);
}

/* Every row of the page was produced by something resplock did, on the
 * servers where the row says it applies. */
static void test_every_row_seen(void)
{
    struct table *ts[3] = {&t_names, &t_keys, &t_msgs};
    for (int i = 0; i < 3; i++)
        for (int r = 0; r < ts[i]->n; r++) {
            struct row *w = &ts[i]->rows[r];
            int ok = w->phases == PH_ANY ? w->seen != 0 : (w->seen & w->phases) == w->phases;
            CHECK_MSG(ok, "%s:%d: the %s row '%s | %s | %s | %s' was never produced%s", page_path,
                      w->line, ts[i]->id, w->cell[0], w->cell[1], w->cell[2], w->cell[3],
                      w->phases == PH_SINGLE ? " (single server)"
                      : w->phases == PH_CLUSTER ? " (cluster)" : "");
        }
}

int main(int argc, char **argv)
{
    int64_t t0 = ts_now_ms();
    tl_init(argc, argv);
    if (read_page() != 0 || build_variants() != 0) return tl_finish();
    printf("# %s: %d names, %d keys, %d messages rows; %zu patterns\n", page_path, t_names.n,
           t_keys.n, t_msgs.n, nvars);
    if (locktest_setup() != 0) return tl_finish();
    RUN(test_single_server);
    RUN(test_cluster_node);
    if (tl_state.argc <= 1) RUN(test_every_row_seen);
    for (size_t i = 0; i < nvars; i++)
        for (int c = 0; c < 4; c++)
            if (vars[i].has[c]) regfree(&vars[i].re[c]);
    free(vars);
    return locktest_finish(t0);
}
