/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * resplock's adapter for poll(2), header-only: one turn of a client's
 * event loop (see "Event loops" in resplock.h).
 *
 *     #include <resplock/adapters/poll.h>
 *
 *     while (!done)
 *         if (rlk_client_poll_once(cl, -1) != RLK_OK)
 *             fprintf(stderr, "%s\n", rlk_client_errmsg(cl));
 *
 * A loop that watches fds of its own too does what this does with them
 * in the same pollfd array.
 */
#ifndef RESPLOCK_ADAPTERS_POLL_H
#define RESPLOCK_ADAPTERS_POLL_H

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <time.h>

#include "../resplock.h"

/* Entries one turn can watch; more than any client has today (one per
 * server, and a route has at most 62 connections). */
#define RLK_POLL_MAX 64

/*
 * One turn: rlk_client_watch, poll until an event, the client's deadline
 * or timeout_ms (-1: no bound of the caller's; 0: do not wait),
 * whichever comes first, then rlk_client_handle (which calls the
 * callbacks owed).  A signal ends the wait early, as an event would.
 * Returns rlk_client_handle's status, rlk_client_watch's failure, or
 * RLK_ERR_IO when poll fails (errno tells why).  The client's owner
 * thread.
 */
static inline int rlk_client_poll_once(rlk_client *cl, int timeout_ms)
{
    rlk_watch w[RLK_POLL_MAX];
    struct pollfd p[RLK_POLL_MAX];
    int64_t deadline;
    int n = rlk_client_watch(cl, w, RLK_POLL_MAX, &deadline);
    if (n < 0) return n;
    if (n > RLK_POLL_MAX) n = RLK_POLL_MAX; /* cannot happen: see above */
    for (int i = 0; i < n; i++) {
        p[i].fd = w[i].fd;
        p[i].events = (short)((w[i].events & RLK_EV_READ ? POLLIN : 0) |
                              (w[i].events & RLK_EV_WRITE ? POLLOUT : 0));
        p[i].revents = 0;
    }
    int wait = timeout_ms;
    if (deadline >= 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t left = deadline - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        if (left < 0) left = 0;
        if (wait < 0 || left < wait) wait = left > 0x7fffffff ? 0x7fffffff : (int)left;
    }
    if (poll(p, (nfds_t)n, wait) < 0) {
        if (errno != EINTR) return RLK_ERR_IO;
        for (int i = 0; i < n; i++) p[i].revents = 0;
    }
    for (int i = 0; i < n; i++)
        w[i].revents = (p[i].revents & POLLIN ? RLK_EV_READ : 0) |
                       (p[i].revents & POLLOUT ? RLK_EV_WRITE : 0) |
                       (p[i].revents & (POLLERR | POLLHUP | POLLNVAL) ? RLK_EV_READ : 0);
    return rlk_client_handle(cl, w, (size_t)n);
}

#endif
