/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock that every deadline in the library is measured on.
 * Internal to the library (rlk__ prefix, not installed). */
#ifndef RESPLOCK_CLOCK_H
#define RESPLOCK_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic clock in milliseconds. */
int64_t rlk__now_ms(void);

/* Milliseconds from now until deadline, clamped to [0, INT_MAX]; -1 for
 * no deadline (as poll() takes it). */
int rlk__ms_left(int64_t deadline);

struct pollfd;
/* poll() until wake (monotonic ms; -1: none); a signal counts as an
 * early end with nothing ready.  poll's result. */
int rlk__poll_until(struct pollfd *p, size_t n, int64_t wake);

#endif
