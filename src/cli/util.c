/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What every part of the resplock command shares and that depends on no
 * other part of it: messages on stderr, durations, exit codes.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "cli.h"
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Messages                                                            */

static const cli_opts *msg_opts;
/* 1 when stderr is the journal: systemd sets JOURNAL_STREAM to the
 * "DEVICE:INODE" of the stream it connected, which a redirection
 * elsewhere no longer matches. */
static int journal;

static int stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    char *end;
    struct stat st;
    /* Digits ':' digits, nothing else (no scanf: the static command
     * would carry the whole of it). */
    if (!js || !isdigit((unsigned char)js[0])) return 0;
    errno = 0;
    unsigned long long dev = strtoull(js, &end, 10);
    if (errno || *end != ':' || !isdigit((unsigned char)end[1])) return 0;
    unsigned long long ino = strtoull(end + 1, &end, 10);
    if (errno || *end || fstat(2, &st) != 0) return 0;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void cli_messages_for(const cli_opts *o)
{
    msg_opts = o;
    journal = stderr_is_journal();
}

/* The journal keeps the time and the program's name itself; it reads
 * sd-daemon(3)'s "<N>" prefix as the line's priority. */
static void prefix(int priority)
{
    /* Its one digit written as a byte (and the time below with
     * snprintf): no fprintf, which the static command would carry for
     * these two alone. */
    char pri[] = {'<', (char)('0' + priority), '>', '\0'};
    fputs(journal ? pri : "resplock: ", stderr);
}

void cli_err(const char *fmt, ...)
{
    if (msg_opts && msg_opts->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    prefix(strncmp(fmt, "warning: ", 9) == 0 ? 4 : 3);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void cli_verbose(const char *fmt, ...)
{
    if (!msg_opts || !msg_opts->verbose || msg_opts->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    if (journal) {
        prefix(6);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        return;
    }
    /* The time of day in UTC, worked out here: localtime and strftime
     * would bring the time zone code into a static build (5 KB). */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long day = (long)(ts.tv_sec % 86400);
    char at[48];
    snprintf(at, sizeof at, "resplock: %02ld:%02ld:%02ld.%03ldZ ", day / 3600, day / 60 % 60, day % 60,
             ts.tv_nsec / 1000000);
    fputs(at, stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    prefix(3);
    vfprintf(stderr, fmt, ap);
    fputs("\nTry 'resplock --help'.\n", stderr);
    va_end(ap);
    return CLI_EX_USAGE;
}

/* ------------------------------------------------------------------ */
/* Durations                                                           */

/* One number and its unit at *s; the unit's rank (h 4, m 3, s 2, ms 1,
 * none 0) and *s moved past them, or -1. */
static int duration_part(const char **s, double *ms)
{
    const char *p = *s;
    int digits = 0, dots = 0;
    for (; (*p >= '0' && *p <= '9') || *p == '.'; p++) {
        if (*p == '.') dots++;
        else digits++;
    }
    /* A plain decimal (no hex, exponent or inf), of 63 characters at most. */
    if (!digits || dots > 1 || p - *s >= 64) return -1;
    double v = rlk__decimal_double(*s, (size_t)(p - *s));
    int rank;
    double mult;
    if (p[0] == 'm' && p[1] == 's') rank = 1, mult = 1, p += 2;
    else if (p[0] == 'h') rank = 4, mult = 3600000, p++;
    else if (p[0] == 'm') rank = 3, mult = 60000, p++;
    else if (p[0] == 's') rank = 2, mult = 1000, p++;
    else rank = 0, mult = 1000;
    *ms = v * mult;
    *s = p;
    return rank;
}

int cli_parse_duration(const char *s, int64_t *ms)
{
    if (!s || !*s) return -1;
    double total = 0, part;
    int last = 5, parts = 0;
    while (*s) {
        int rank = duration_part(&s, &part);
        /* A bare number stands alone; units go from hours down, once. */
        if (rank < 0 || rank >= last || (rank == 0 && (parts > 0 || *s))) return -1;
        last = rank;
        parts++;
        total += part;
    }
    if (total > 9.2e15) return -1;
    *ms = (int64_t)(total + 0.5);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Exit codes                                                          */

int cli_exit_for(int status)
{
    switch (status) {
    case RLK_OK: return 0;
    case RLK_ERR_CONNECT: case RLK_ERR_TIMEOUT: case RLK_ERR_TLS: case RLK_ERR_AUTH:
    case RLK_ERR_URL: case RLK_ERR_IO: case RLK_ERR_CLOSED: case RLK_ERR_PROTO:
    case RLK_ERR_SERVER: case RLK_ERR_LIMIT: case RLK_ERR_REPLICAS:
        return CLI_EX_UNAVAILABLE;
    case RLK_ERR_INVALID: /* options the library refuses: several -u not one cluster */
        return CLI_EX_CONFIG;
    default:
        return CLI_EX_SOFTWARE;
    }
}

/* ------------------------------------------------------------------ */
/* INFO                                                                */

void cli_info_field(const rlk_resp_value *v, const char *key, char *out, size_t n)
{
    size_t kl = strlen(key);
    const char *s = v->str, *end = v->str + v->len;
    while (s < end) {
        const char *eol = memchr(s, '\n', (size_t)(end - s));
        if (!eol) eol = end;
        if ((size_t)(eol - s) > kl && memcmp(s, key, kl) == 0 && s[kl] == ':') {
            size_t len = (size_t)(eol - s) - kl - 1;
            if (len && s[kl + 1 + len - 1] == '\r') len--;
            if (len >= n) len = n - 1;
            memcpy(out, s + kl + 1, len);
            out[len] = '\0';
            return;
        }
        s = eol + 1;
    }
}
