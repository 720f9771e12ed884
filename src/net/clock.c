/* SPDX-License-Identifier: BSD-3-Clause */
/* The monotonic clock: wall-clock steps (NTP, an operator) must not move
 * a deadline or a validity. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "clock.h"

#include <limits.h>
#include <errno.h>
#include <poll.h>
#include <time.h>

int64_t rlk__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rlk__ms_left(int64_t deadline)
{
    int64_t left;
    if (deadline < 0) return -1;
    left = deadline - rlk__now_ms();
    if (left <= 0) return 0;
    return left > INT_MAX ? INT_MAX : (int)left;
}

/* poll() on n entries until wake; a signal ends the wait early, as any
 * event would (the turn then finds nothing and the caller turns again). */
int rlk__poll_until(struct pollfd *p, size_t n, int64_t wake)
{
    int r = poll(p, (nfds_t)n, rlk__ms_left(wake));
    if (r < 0 && errno == EINTR) {
        for (size_t i = 0; i < n; i++) p[i].revents = 0;
        return 0;
    }
    return r;
}

