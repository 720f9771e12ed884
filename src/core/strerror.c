/* SPDX-License-Identifier: BSD-3-Clause */
/* Every status of resp.h and resplock.h in words: the one table the
 * library's messages and rlk_strerror() share. */
#include "resplock.h"

const char *rlk_strerror(int status)
{
    switch (status) {
    case RLK_OK: return "success";
    /* The codec's (resp.h). */
    case RLK_ERR_NOMEM: return "out of memory";
    case RLK_ERR_PROTO: return "protocol error";
    case RLK_ERR_LIMIT: return "limit exceeded";
    case RLK_ERR_INVALID: return "invalid argument";
    case RLK_ERR_SPACE: return "buffer too small";
    /* The connection's. */
    case RLK_ERR_IO: return "input/output error";
    case RLK_ERR_TIMEOUT: return "timed out: the server did not answer in time";
    case RLK_ERR_CONNECT: return "cannot connect";
    case RLK_ERR_TLS: return "TLS failed, or TLS support not compiled in";
    case RLK_ERR_AUTH: return "authentication refused";
    case RLK_ERR_URL: return "the URL cannot be parsed";
    case RLK_ERR_SERVER: return "the server answered with an error";
    case RLK_ERR_CLOSED: return "the connection closed";
    case RLK_ERR_REPLICAS: return "too few replicas acknowledged the write in time";
    /* The lock's. */
    case RLK_LOCK_BUSY: return "not acquired: the lock is held by someone else";
    case RLK_LOCK_NOT_HELD: return "the lock is not held any more";
    case RLK_LOCK_NOT_OWNER: return "the lock is held by someone else, not by this handle";
    case RLK_LOCK_LOST: return "the lock was lost earlier";
    case RLK_LOCK_NOT_A_LOCK:
        return "not a lock: the name's key is another kind of key (an application's?)";
    /* The rate limiter's. */
    case RLK_RATE_LIMITED: return "refused by the rate limiter: no tokens within the wait";
    default: return "unknown status";
    }
}
