/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile (or merely scripted) servers for tests: a listening socket on a
 * free loopback port whose every accepted connection is handed to a
 * behaviour function, each in a thread of its own.  When the function
 * returns, the connection is closed.
 *
 * Behaviours wait only through the helpers below, which all return early
 * (with -1) once fake_stop() was called, so stopping is prompt and clean:
 * fake_stop closes the listener, ends every behaviour, joins every
 * thread and frees everything.
 */
#ifndef RESPLOCK_TEST_FAKESERVER_H
#define RESPLOCK_TEST_FAKESERVER_H

#include <stddef.h>
#include <sys/types.h>

typedef struct fake_server fake_server;
typedef struct fake_conn fake_conn;
typedef void (*fake_behaviour)(fake_conn *c, void *arg);

/* Listens on 127.0.0.1 (ipv6: ::1) on a free port.  NULL on failure. */
fake_server *fake_start(fake_behaviour fn, void *arg);
fake_server *fake_start6(fake_behaviour fn, void *arg);
int fake_port(const fake_server *fs);
/* Connections accepted so far, and bytes the built-in behaviours read. */
int fake_accepted(fake_server *fs);
size_t fake_received(fake_server *fs);
/* NULL is allowed. */
void fake_stop(fake_server *fs);

/* ---- for behaviour functions ---- */

int fake_fd(fake_conn *c);
/* Sends all n bytes.  0, or -1 (peer gone, or stopping). */
int fake_send(fake_conn *c, const void *buf, size_t n);
int fake_send_str(fake_conn *c, const char *s);
/* Waits ms milliseconds (-1: until the server stops).  0, or -1 when the
 * server is stopping. */
int fake_pause(fake_conn *c, int ms);
/* Reads what is there, waiting up to ms (-1: no limit).  > 0 bytes, 0 the
 * peer closed, -1 stopping, error or nothing within ms. */
ssize_t fake_recv(fake_conn *c, void *buf, size_t n, int ms);
/* Reads one command (a RESP array of bulk strings), waiting up to ms.
 * Returns argc with argv[i] NUL-terminated (valid until the next call),
 * 0 when the peer closed, -1 stopping, error, timeout, or bytes that are
 * not a command (then *bad is set, when bad is not NULL). */
int fake_read_command(fake_conn *c, char ***argv, int ms, int *bad);
/* Reads and discards until the peer closes or the server stops. */
void fake_hold(fake_conn *c);

/* ---- ready-made behaviours (arg as noted) ---- */

void fake_silent(fake_conn *c, void *arg);          /* reads, never answers */
void fake_stall(fake_conn *c, void *arg);           /* neither reads nor
                                                       answers            */
void fake_close_at_once(fake_conn *c, void *arg);   /* closes on accept    */
void fake_send_then_hold(fake_conn *c, void *arg);  /* arg: a string       */
void fake_send_then_close(fake_conn *c, void *arg); /* arg: a string       */
void fake_drip(fake_conn *c, void *arg);            /* arg: a string, one
                                                       byte per 100 ms    */
void fake_sink(fake_conn *c, void *arg);            /* reads and counts    */
/* A RESP2-only server: HELLO gets "-ERR unknown command", then PING,
 * ECHO, AUTH, SELECT, CLIENT, QUIT work as on Redis 5; bytes that are not
 * a command get "-ERR Protocol error" and a close, as a plaintext server
 * answers a TLS handshake. */
void fake_resp2(fake_conn *c, void *arg);


/* Floods (arg: struct fake_flood): sends msg over and over, as fast as
 * the peer takes it, at once or after answering HELLO as a RESP3 server
 * does, for max_ms (0: until the peer closes), then holds; counts the
 * bytes sent. */
struct fake_flood {
    const char *msg;
    int after_hello;
    int max_ms;
    size_t sent;      /* atomic */
};
void fake_flood(fake_conn *c, void *arg);

/* Answers HELLO as a RESP3 server, then the first other command with
 * head followed by unit repeated until limit bytes were sent in all (arg:
 * struct fake_stream), then holds.  An endless aggregate or bulk, cut at
 * limit so that a client that does not stop it still ends. */
struct fake_stream {
    const char *head, *unit;
    size_t limit;
    size_t sent;      /* atomic */
};
void fake_stream(fake_conn *c, void *arg);

/* Answers HELLO as a RESP3 server, and ECHO x with x twice: the second
 * copy after delay_ms, then counts it in dups (arg: struct fake_twice). */
struct fake_twice {
    int delay_ms;
    int dups;         /* atomic */
};
void fake_twice(fake_conn *c, void *arg);

#endif
