/* SPDX-License-Identifier: BSD-3-Clause */
/* The raw floor of the benchmarks: a blocking TCP_NODELAY socket to
 * 127.0.0.1, written with send(2) and nothing else. */
#ifndef RESPLOCK_BENCH_RAW_H
#define RESPLOCK_BENCH_RAW_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* A connected socket, or -1 with errno set. */
static inline int bench_raw_connect(int port)
{
    struct sockaddr_in a;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* All n bytes, or -1 (errno set; 0 when the peer closed). */
static inline int bench_raw_write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            if (w == 0) errno = 0;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

#endif
