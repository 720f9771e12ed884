/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared pieces of the resplock command's subcommands. */
#ifndef RESPLOCK_CLI_H
#define RESPLOCK_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "resplock.h"

/* The semaphore in the command (sem run, sem status, and status, list
 * and break of a semaphore): 0 in the static command (configure
 * --enable-static-binary), whose size bound it does not fit in; sem is
 * then a configuration error (78), as TLS is where it was not compiled
 * in, and status, list and break see locks only. */
#ifndef RLK_CLI_SEM
#define RLK_CLI_SEM 1
#endif
/* The read-write lock in the command (rw run), left out of the static
 * command as the semaphore is (rw then exits 78). */
#ifndef RLK_CLI_RW
#define RLK_CLI_RW 1
#endif

/* Exit codes (sysexits.h values), documented in resplock(1). */
#define CLI_EX_USAGE 64
#define CLI_EX_DATAERR 65 /* the lock's name is an application's key */
#define CLI_EX_UNAVAILABLE 69
#define CLI_EX_SOFTWARE 70
#define CLI_EX_TEMPFAIL 75
#define CLI_EX_CONFIG 78
/* run: COMMAND ran past --max-time (timeout(1)'s code). */
#define CLI_EX_MAX_TIME 124
/* Not an exit code: --help or --version was answered; main exits 0. */
#define CLI_DONE 256

/* Where the password comes from, when an option gives it. */
enum { CLI_PW_NONE, CLI_PW_ARG, CLI_PW_ASK, CLI_PW_FILE };

typedef struct cli_opts {
    /* As given by the options. */
    const char *url;
    /* -u given again: more nodes of the same Redis Cluster (seeds). */
    const char *seeds[15];
    int nseeds;
    int redlock;            /* --redlock: url and seeds are independent servers */
    const char *host;
    int port;               /* 0: not given */
    const char *user;
    const char *password;   /* -a */
    const char *pass_file;  /* --pass-file */
    int password_from;      /* CLI_PW_*: the last of -a, --askpass, --pass-file */
    int tls_on;             /* --tls */
    rlk_tls_config tls;
    int64_t timeout_ms;
    int timeout_set;
    const char *prefix;
    int verbose;
    int quiet;
    int no_auth_warning;    /* --no-auth-warning */
    /* Set by cli_config: run's defaults from the configuration files
     * (CLI_D_*), when set there, and where ("FILE, line N"). */
    int loaded, load_code;
    int64_t conf_ms[5];
    int conf_set[5];
    char conf_where[5][1040];
    /* Set by cli_resolve, with the configuration files and environment. */
    int resolved, resolve_code;
    const char *final_url;  /* what the library gets */
    const char *server;     /* "host:port with TLS", for messages */
    const char *url_from;   /* "--url", "$RESPLOCK_URL", "$REDIS_URL", a file's name */
    int url_conf_line;      /* the file's line, or 0 */
} cli_opts;

/* ---- util.c: messages, durations, exit codes (uses no other part) ---- */

/* Messages follow o's --quiet and --verbose from now on. */
void cli_messages_for(const cli_opts *o);
/* "resplock: MESSAGE" on stderr, unless --quiet. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A timestamped progress line on stderr with --verbose. */
void cli_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A usage message (always shown); returns CLI_EX_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "500ms", "10s", "5m", "1h", "2.5s", a bare number = seconds, and
 * compounds with units in decreasing order: "1m30s", "2h30m", "1m30.5s".
 * 0 and *ms set, or -1. */
int cli_parse_duration(const char *s, int64_t *ms);

/* A date and time in UTC (proleptic Gregorian): month 1-12, day 1-31. */
typedef struct cli_date {
    int64_t year;
    int mon, mday, hour, min, sec;
} cli_date;

/* The UTC date and time t seconds after 1970-01-01T00:00:00Z (before it
 * when negative), for any t (src/cli/utc.c). */
void cli_utc(int64_t t, cli_date *out);

/* The exit code for a library status: 69 for the server's side
 * (unreachable, TLS, auth, protocol), 70 for ours. */
int cli_exit_for(int status);

/* The value of "key:" in the text of an INFO reply v, into out[n] ("" left
 * as it was when absent). */
void cli_info_field(const rlk_resp_value *v, const char *key, char *out, size_t n);

/* ---- options.c: the global options and the usage text ---- */

/* The usage text (--help's). */
void cli_print_usage(FILE *to);

/* An option: its long name, whether it takes a value, and the code its
 * handler gets (a code below 128 is also its short form, -c). */
typedef struct cli_option {
    const char *name;
    int takes_value;
    int val;
} cli_option;

/* Parses the options at argv[1..argc): the global ones and `own_options`
 * (NULL: none), handled by `own`, which returns 1 when it took the
 * option, -1 after a usage error, 0 when it does not know it.  POSIX
 * order: stops at the first operand ("-" is one) or after "--"; long
 * options may be shortened to a prefix of one name; -xy bundles flags;
 * values as -t10s, -t 10s, --ttl=10s, --ttl 10s.  Sets *next to the index
 * of the first word not parsed and returns 0, or returns an exit code
 * (CLI_DONE after --help, --version). */
int cli_getopt(cli_opts *o, int argc, char **argv, const cli_option *own_options,
               int (*own)(void *ctx, int c, const char *arg), void *ctx, int *next);

/* ---- config.c: the settings from files, environment and options ---- */

/* The run defaults a configuration file may set, as cli_opts.conf_ms. */
enum { CLI_D_TTL, CLI_D_WAIT, CLI_D_HOLD_MIN, CLI_D_MAX_TIME, CLI_D_KILL_AFTER, CLI_D_COUNT };
/* Reads and checks the configuration files (once; later calls return the
 * first result): 0, or an exit code after a message. */
int cli_config(cli_opts *o);
/* Reads the configuration files, then merges them, the environment and
 * the options into o->final_url (once; later calls return the first
 * result).  0, or an exit code after a message. */
int cli_resolve(cli_opts *o);
/* The lock's key on the server: --prefix, then NAME, as they are; NULL
 * when too long.  Valid until the next call. */
const char *cli_key(const cli_opts *o, const char *name);
/* Reports a failed connect (a bad URL named by where it came from) and
 * returns its exit code. */
int cli_connect_error(cli_opts *o, int status, const char *msg);
/* The URL of another server of the same deployment (a cluster's node at
 * host and port): the resolved URL with its host and port replaced, its
 * user, password, TLS and the rest kept.  NULL before cli_resolve
 * succeeded, or when too long.  Valid until the next call. */
const char *cli_node_url(const cli_opts *o, const char *host, int port);

/* ---- connect.c ---- */

/* Connects as the options say; on failure prints the reason, sets
 * *code to the exit code and returns NULL. */
rlk_conn *cli_connect(cli_opts *o, int *code);
/* A connection to url with the options' TLS settings, timeouts and name,
 * not connected yet (no reconnects: a failure is a failure); NULL when
 * memory runs out. */
rlk_conn *cli_conn_new(const cli_opts *o, const char *url);
/* With --tls-insecure, says once that certificates are not verified. */
void cli_insecure_warning(const cli_opts *o);
/* -v: what the connection is (peer, server, protocol, TLS version). */
void cli_connected(const rlk_conn_info *in);

/* ---- cluster.c: a Redis Cluster's nodes, as the library's table ---- */

struct rlk__slots;
struct rlk__node;

/* 1 when c's server is a node of a Redis Cluster (INFO cluster says
 * cluster_enabled:1, which RESP2 servers say too), 0 when it is not or
 * does not say. */
int cli_is_cluster(rlk_conn *c);
/* Reads the cluster's nodes and slots over c (a node of it) into t:
 * CLUSTER SHARDS, or CLUSTER SLOTS where the server refuses SHARDS (older
 * than Redis 7, or an ACL without it).  *source names the command read.
 * RLK_OK, or a status with why in err: RLK_ERR_PROTO when the server
 * refused both or its reply could not be read, RLK_ERR_NOMEM, another
 * when c failed. */
int cli_cluster_read(const cli_opts *o, rlk_conn *c, struct rlk__slots *t, const char **source,
                     char *err, size_t n);
/* The port resplock connects to on node n: its TLS port when tls, else
 * its plain one (0 when it has none). */
int cli_node_port(const struct rlk__node *n, int tls);
/* "host:port" of node n ("[addr]:port" for IPv6) into out[cap]. */
void cli_node_addr(const struct rlk__node *n, int tls, char *out, size_t cap);

/* ---- supervise.c ---- */

/* Milliseconds of CLOCK_MONOTONIC: system-wide, so resplock and its
 * supervisor agree on deadlines. */
int64_t cli_mono_ms(void);

/* The dead man's switch of `run` (supervise.c): a process that stops the
 * job's process group when resplock stops telling it of new deadlines. */
typedef struct cli_supervisor {
    pid_t pid;
    int fd;        /* resplock's end of the pipe, -1 once closed */
    int reaped;
    int wstatus;
} cli_supervisor;
/* Its exit code when it stopped the job itself. */
#define CLI_SUPERVISOR_ACTED 3

/* Forks the supervisor: 0, or -1 with errno. */
int cli_supervisor_start(cli_supervisor *s, int64_t kill_after_ms);
/* The job's process group; then the CLOCK_MONOTONIC time (ms) by which
 * the group must have been sent SIGTERM (SIGKILL follows kill_after_ms
 * later).  0, or -1 when the supervisor cannot be told (it is gone). */
int cli_supervisor_job(cli_supervisor *s, pid_t pgid);
int cli_supervisor_deadline(cli_supervisor *s, int64_t stop_at_ms);
/* For a pid waitpid returned: 1 (and the status kept) if it was the
 * supervisor. */
int cli_supervisor_reaped(cli_supervisor *s, pid_t pid, int wstatus);
/* Tells it the job is over, and reaps it: its exit code (0 when it did
 * nothing, CLI_SUPERVISOR_ACTED), or -1 when it did not exit normally. */
int cli_supervisor_finish(cli_supervisor *s);

/* ---- the subcommands: ping.c, lock_cmds.c, rate_cmds.c ---- */

int cmd_ping(cli_opts *o, int argc, char **argv);
int cmd_run(cli_opts *o, int argc, char **argv);
int cmd_acquire(cli_opts *o, int argc, char **argv);
int cmd_release(cli_opts *o, int argc, char **argv);
int cmd_extend(cli_opts *o, int argc, char **argv);
int cmd_status(cli_opts *o, int argc, char **argv);
int cmd_list(cli_opts *o, int argc, char **argv);
int cmd_break(cli_opts *o, int argc, char **argv);
/* rate_cmds.c */
int cmd_rate(cli_opts *o, int argc, char **argv);
/* sem run, sem status (lock_cmds.c: sem run is run's loop over a
 * semaphore's permits). */
int cmd_sem(cli_opts *o, int argc, char **argv);
int cli_sem_run(cli_opts *o, int argc, char **argv);
/* rw run (lock_cmds.c: run's loop over a read-write lock's hold). */
int cmd_rw(cli_opts *o, int argc, char **argv);

/* A client of the options' server (url NULL) or of url, connected
 * unless wait_ms > 0 (the call connects within its wait then); on
 * failure prints the reason, sets *code and returns NULL (lock_cmds.c). */
rlk_client *cli_client(cli_opts *o, const char *url, int64_t wait_ms, int *code);

#endif
