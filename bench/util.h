/* SPDX-License-Identifier: BSD-3-Clause */
/* What the lock benchmarks share: clocks, quantiles of rounds, rates in
 * print, the CPU time of a process, and a server's INFO (commandstats,
 * its CPU, its fields).
 * Nothing here ends the program: failures are returned for the caller to
 * report. */
#ifndef RESPLOCK_BENCH_UTIL_H
#define RESPLOCK_BENCH_UTIL_H

#include "resplock.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define BENCH_MAX_ROUNDS 31 /* the most rounds bench_quantile takes */

static inline int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* This process's CPU time (user + system, all threads), in seconds. */
static inline double bench_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of v[0..n), interpolated; v is sorted in place. */
static inline double bench_quantile_sorted(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof v[0], bench_cmp_double);
    double at = q * (n - 1);
    int i = (int)at;
    return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * (at - i) : v[i];
}

/* The same of up to BENCH_MAX_ROUNDS values, v left as it is. */
static inline double bench_quantile(const double *v, int n, double q)
{
    double s[BENCH_MAX_ROUNDS];
    memcpy(s, v, sizeof(double) * (size_t)n);
    return bench_quantile_sorted(s, n, q);
}

static inline void bench_fmt_rate(char *out, size_t cap, double v)
{
    if (v >= 1e6) snprintf(out, cap, "%.2f M", v / 1e6);
    else if (v >= 1e3) snprintf(out, cap, "%.1f k", v / 1e3);
    else snprintf(out, cap, "%.1f", v);
}

/* CPU seconds (user + system) used so far by process pid; 0 when it
 * cannot be read. */
static inline double bench_proc_cpu(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after the command name */
    unsigned long long ut = 0, stt = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &stt) != 2)
        return 0;
    return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

/* The CPU seconds the whole machine has spent busy so far (every CPU,
 * every process: /proc/stat's time that is neither idle nor iowait);
 * 0 when it cannot be read. */
static inline double bench_machine_busy(void)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 5) return 0;
    unsigned long long busy = 0;
    for (int i = 0; i < 8; i++)
        if (i != 3 && i != 4) busy += v[i]; /* all but idle and iowait */
    return (double)busy / (double)sysconf(_SC_CLK_TCK);
}

/* INFO section of c ("commandstats", "cpu", "server") as a
 * NUL-terminated text the caller frees; NULL when the call failed or the
 * reply is not a string (the reason in *why, a static text or c's
 * message). */
static inline char *bench_info_text(rlk_conn *c, const char *section, const char **why)
{
    const char *argv[2] = {"INFO", section};
    rlk_resp_value *v;
    if (rlk_conn_command(c, &v, 2, argv, NULL) != RLK_OK) {
        *why = rlk_conn_errmsg(c);
        return NULL;
    }
    if (v->type != RLK_RESP_BULK && v->type != RLK_RESP_VERBATIM) {
        *why = "not a string";
        return NULL;
    }
    char *text = malloc(v->len + 1);
    if (!text) {
        *why = "out of memory";
        return NULL;
    }
    memcpy(text, v->str, v->len);
    text[v->len] = '\0';
    return text;
}

/* INFO commandstats of c: bench_info_text's. */
static inline char *bench_cmdstats_text(rlk_conn *c, const char **why)
{
    return bench_info_text(c, "commandstats", why);
}

/* The value of field key (a line "key:value") of an INFO text into
 * out[0..cap); "" when it has no such line. */
static inline void bench_info_field(const char *text, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key);
    out[0] = '\0';
    for (const char *p = text; *p;) {
        if (strncmp(p, key, klen) == 0 && p[klen] == ':') {
            size_t n = strcspn(p + klen + 1, "\r\n");
            if (n >= cap) n = cap - 1;
            memcpy(out, p + klen + 1, n);
            out[n] = '\0';
            return;
        }
        p += strcspn(p, "\n");
        if (*p) p++;
    }
}

/* The CPU seconds the server has used so far by its INFO cpu
 * (used_cpu_sys + used_cpu_user: all its threads, microsecond
 * resolution); -1 with the reason in *why. */
static inline double bench_server_cpu(rlk_conn *c, const char **why)
{
    char sys[32], user[32];
    char *text = bench_info_text(c, "cpu", why);
    if (!text) return -1;
    bench_info_field(text, "used_cpu_sys", sys, sizeof sys);
    bench_info_field(text, "used_cpu_user", user, sizeof user);
    free(text);
    if (!sys[0] || !user[0]) {
        *why = "INFO cpu has no used_cpu_sys or used_cpu_user";
        return -1;
    }
    return atof(sys) + atof(user);
}

/* What server c is, by INFO server: "valkey" where it has valkey_version
 * or server_name valkey, at that version; else "redis" at redis_version.
 * 0, or -1 with the reason in *why. */
static inline int bench_server_facts(rlk_conn *c, char *name, size_t ncap, char *version,
                                     size_t vcap, const char **why)
{
    char *text = bench_info_text(c, "server", why);
    if (!text) return -1;
    char sn[32], vk[32], rd[32];
    bench_info_field(text, "server_name", sn, sizeof sn);
    bench_info_field(text, "valkey_version", vk, sizeof vk);
    bench_info_field(text, "redis_version", rd, sizeof rd);
    free(text);
    int valkey = vk[0] || strcasecmp(sn, "valkey") == 0;
    snprintf(name, ncap, "%s", valkey ? "valkey" : "redis");
    snprintf(version, vcap, "%s", valkey && vk[0] ? vk : rd);
    return 0;
}

/* A connection to url (the defaults), connected; NULL when it cannot be
 * made. */
static inline rlk_conn *bench_conn_to(const char *url)
{
    rlk_conn_config cfg;
    rlk_conn_config_init(&cfg);
    cfg.url = url;
    rlk_conn *c = rlk_conn_new(&cfg);
    if (c && rlk_conn_connect(c) != RLK_OK) {
        rlk_conn_free(c);
        c = NULL;
    }
    return c;
}

/* The calls of and the server's time (us) in command name ("set",
 * "config|resetstat") by an INFO commandstats text; 0 for one never
 * called.  A script's own calls are counted under their names too, and
 * its time under EVALSHA's or FCALL's. */
static inline void bench_cmdstat(const char *text, const char *name, long long *calls,
                                 double *usec)
{
    char key[64];
    snprintf(key, sizeof key, "cmdstat_%s:", name);
    const char *p = strstr(text, key);
    const char *eol = p ? p + strcspn(p, "\r\n") : NULL;
    const char *k = p ? strstr(p, "calls=") : NULL, *u = p ? strstr(p, "usec=") : NULL;
    *calls = k && k < eol ? atoll(k + 6) : 0;
    *usec = u && u < eol ? atof(u + 5) : 0;
}

/* One command's line of INFO commandstats. */
/* Whether the command stats' name n is a script call (EVAL, EVALSHA,
 * FCALL and their _ro forms): its time includes its own calls'. */
static inline int bench_is_script_call(const char *n)
{
    return strcmp(n, "evalsha") == 0 || strcmp(n, "fcall") == 0 || strcmp(n, "eval") == 0 ||
           strcmp(n, "evalsha_ro") == 0 || strcmp(n, "fcall_ro") == 0 || strcmp(n, "eval_ro") == 0;
}

typedef struct bench_cmdstat_row {
    char name[32];
    long long calls;
    double usec;
} bench_cmdstat_row;

/* Every command INFO commandstats names but INFO and CONFIG (the
 * benchmark's own), into out[0..return); -1 with the reason in *why when
 * INFO fails or there are more than cap. */
static inline int bench_cmdstats_all(rlk_conn *c, bench_cmdstat_row *out, int cap,
                                     const char **why)
{
    char *text = bench_cmdstats_text(c, why);
    if (!text) return -1;
    int n = 0;
    for (const char *p = strstr(text, "cmdstat_"); p; p = strstr(p + 8, "cmdstat_")) {
        const char *name = p + 8;
        size_t len = strcspn(name, ":\r\n");
        if (name[len] != ':' || len >= sizeof out->name) continue;
        if ((len == 4 && memcmp(name, "info", 4) == 0) ||
            (len >= 6 && memcmp(name, "config", 6) == 0))
            continue;
        if (n == cap) {
            free(text);
            *why = "more commands than expected";
            return -1;
        }
        memcpy(out[n].name, name, len);
        out[n].name[len] = '\0';
        bench_cmdstat(text, out[n].name, &out[n].calls, &out[n].usec);
        n++;
    }
    free(text);
    return n;
}

/* A client of url (HELLO 3 and the defaults, as shipped), connected; NULL
 * with the reason in why[0..cap). */
static inline rlk_client *bench_client(const char *url, char *why, size_t cap)
{
    rlk_client_config cfg;
    rlk_client_config_init(&cfg);
    cfg.conn.url = url;
    rlk_client *cl = rlk_client_new(&cfg);
    if (!cl) {
        snprintf(why, cap, "rlk_client_new: out of memory");
        return NULL;
    }
    if (rlk_client_connect(cl) != RLK_OK) {
        snprintf(why, cap, "rlk_client_connect: %s", rlk_client_errmsg(cl));
        rlk_client_free(cl);
        return NULL;
    }
    return cl;
}

/* One uncontended cycle on a free lock: rlk_lock_acquire (wait 0, TTL
 * 30 s) + rlk_lock_release.  RLK_OK, or the status of the call that
 * failed (its reason on the client). */
static inline int bench_cycle(rlk_client *cl, const char *name)
{
    rlk_lock_options o;
    rlk_lock_options_init(&o);
    o.ttl_ms = 30000;
    o.wait_ms = 0;
    rlk_lock *l;
    int rc = rlk_lock_acquire(cl, name, &o, &l);
    if (rc != RLK_OK) return rc;
    return rlk_lock_release(l);
}

/* n bench_cycle in a row, their wall time per cycle in microseconds
 * into *us.  RLK_OK, or the status of the cycle that failed (its reason
 * on the client). */
static inline int bench_cycles_us(rlk_client *cl, const char *name, long n, double *us)
{
    int64_t t0 = bench_now_ns();
    for (long i = 0; i < n; i++) {
        int rc = bench_cycle(cl, name);
        if (rc != RLK_OK) return rc;
    }
    *us = (double)(bench_now_ns() - t0) / 1000.0 / (double)n;
    return RLK_OK;
}

/* CONFIG RESETSTAT on c: 0, or -1 with the reason in *why. */
static inline int bench_reset_stats(rlk_conn *c, const char **why)
{
    const char *argv[2] = {"CONFIG", "RESETSTAT"};
    rlk_resp_value *v;
    if (rlk_conn_command(c, &v, 2, argv, NULL) != RLK_OK) {
        *why = rlk_conn_errmsg(c);
        return -1;
    }
    if (v->type != RLK_RESP_SIMPLE) {
        *why = "refused";
        return -1;
    }
    return 0;
}

#endif
