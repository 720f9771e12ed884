/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Raw connections and commands for the test programs that talk to a
 * server through the connection layer (tests/test_conn.c and, through
 * locktest.h, the lock tests).  A failed call is a test failure
 * reported at the caller's line.
 */
#ifndef RESPLOCK_TEST_CONNTEST_H
#define RESPLOCK_TEST_CONNTEST_H

#include "resplock.h"
#include "server.h"

#include <stdarg.h>
#include <stddef.h>

#define LONG_MS 10000 /* for things that should happen: generous under valgrind */

/* A configuration with generous deadlines (tests that want a deadline to
 * fire set their own). */
void cfg_init(rlk_conn_config *cfg, const char *url);

/* A raw connection (RESP3 unless protocol says otherwise). */
rlk_conn *connect_url(const char *url, int protocol,
                      void (*on_push)(void *, rlk_conn *, const rlk_resp_value *),
                      void *ctx, int line);
#define CONNECT(url) connect_url(url, 0, NULL, NULL, __LINE__)

/* A command given as NULL-terminated words; a failed call (not a server
 * error) is a test failure and gives NULL.  Valid until the next call. */
rlk_resp_value *run_cmd(rlk_conn *c, int line, ...);
#define CMD(c, ...) run_cmd(c, __LINE__, __VA_ARGS__, (const char *)NULL)

/* An integer reply, or LLONG_MIN (a test failure) for anything else. */
long long cmd_int(rlk_conn *c, int line, ...);
#define CMD_INT(c, ...) cmd_int(c, __LINE__, __VA_ARGS__, (const char *)NULL)

/* A string reply copied into out: 1; a null: 0 with out ""; else -1 (a
 * test failure). */
int cmd_str(rlk_conn *c, char *out, size_t n, int line, ...);
#define CMD_STR(c, out, ...) cmd_str(c, out, sizeof(out), __LINE__, __VA_ARGS__, (const char *)NULL)

/* The words of a command, NULL-terminated in ap, into argv (room for
 * 33, the NULL included); their count. */
int collect_args(const char **argv, va_list ap);

/* The URL of a server started by ts_start. */
void url_of(char *out, size_t n, const ts_server *s);

/* What a server says it is in INFO server: "valkey" and its
 * valkey_version where it has server_name valkey or a valkey_version
 * line, else "redis" and its redis_version (Valkey also says
 * redis_version 7.2.4, the Redis it is compatible with).  The test
 * compares with these, never with the library's own reading of them. */
struct server_id {
    char name[16];
    char version[32];
    int major, minor, patch;
};
/* 1, or 0 (a test failure at line: no INFO, or no version in it). */
int server_identity(rlk_conn *c, struct server_id *out, int line);
#define SERVER_ID(c, out) server_identity(c, out, __LINE__)

/* Whether the server takes SET key value IFEQ old (Valkey 8.1+, Redis
 * 8.4+), DELIFEQ key value (Valkey 9.0+), and DELEX key IFEQ value
 * (Redis 8.4+, Valkey 9.2+): asked of a key no test uses, a syntax or
 * unknown-command error where it does not.  Each is one call of that
 * command in INFO commandstats. */
int server_has_set_ifeq(rlk_conn *c);
int server_has_delifeq(rlk_conn *c);
int server_has_delex_ifeq(rlk_conn *c);

#endif
