/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one reconnect rule of the library (retry.c): the blocking
 * connection (conn.c) and the driver (driver.c) both space their connect
 * tries by it, and both ask it which failures are worth another try.
 *
 * The rule: the first try after a connection that served (its
 * handshake done) comes at once; each try after a failed one waits the
 * backoff's next pause, which doubles from the first up to the most,
 * jittered, across tries and calls alike, until a connection serves
 * again.  A failure that another try would meet again ends the tries
 * (rlk__retry_mends); the others are tried again, until the caller's
 * bound (conn.c: reconnect_attempts tries in a call, within the call's
 * deadline; the driver: the turn's until).  Internal (rlk__ prefix, not
 * installed).
 */
#ifndef RESPLOCK_RETRY_H
#define RESPLOCK_RETRY_H

#include <stdint.h>

typedef struct rlk__backoff {
    int64_t initial, max; /* ms: the first pause, and the most it grows to */
    int64_t pause;        /* the next pause before jitter */
    int64_t at;           /* no try before (monotonic ms; 0: at once) */
    uint64_t rng;         /* jitter only, not security */
} rlk__backoff;

/* initial <= 0: 50 ms; max <= 0: 2000 ms (defaults.h).  seed: any value
 * (0 allowed). */
void rlk__backoff_init(rlk__backoff *b, int initial, int max, uint64_t seed);

/* The pause before the next try: half the current pause fixed, half
 * random, which spreads out clients that lost the same server at the
 * same moment; then the pause doubles, up to max. */
int64_t rlk__backoff_next(rlk__backoff *b);

/* Back to the first pause (after a try that worked). */
void rlk__backoff_reset(rlk__backoff *b);

/* A connection served (its handshake done), or a caller asked for a
 * try now: the next try at once, its pauses from the first again. */
void rlk__backoff_served(rlk__backoff *b);

/* A try failed at now (monotonic ms): the next not before now and the
 * next pause (b->at). */
void rlk__backoff_failed(rlk__backoff *b, int64_t now);

/* Whether a connect or handshake that failed with status may pass on
 * another try.  Not: an address no try can use (RLK_ERR_URL, and
 * RLK_ERR_INVALID: a socket path too long), a refused password
 * (RLK_ERR_AUTH), and a TLS failure the transport says lasts
 * (tls_lasting: its files, a certificate refused by either side).  Any
 * other may: a connection refused, reset or timed out, a handshake the
 * server refused for now ("max number of clients reached", LOADING: an
 * RLK_ERR_SERVER), a TLS handshake cut short, a reply out of step or
 * out of memory (a new connection starts afresh). */
int rlk__retry_mends(int status, int tls_lasting);

#endif
