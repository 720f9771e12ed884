/* SPDX-License-Identifier: BSD-3-Clause */
/* Random bytes and hex (random.c): names that must not be guessed, ids, jitter seeds. */
#ifndef RESPLOCK_RANDOM_H
#define RESPLOCK_RANDOM_H

#include <stddef.h>

/* n random bytes (the kernel's, pooled; a forked child never
 * shares the parent's).  0, or -1 when the kernel gives none. */
int rlk__random_bytes(unsigned char *out, size_t n);

/* getpid(), without a system call after the first: read once, and again
 * in a forked child (the pool's fork handler forgets it). */
long rlk__pid(void);

/* in[0..n) as 2n lowercase hex digits and a NUL into out. */
void rlk__hex(const unsigned char *in, size_t n, char *out);

#endif
