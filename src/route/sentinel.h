/* SPDX-License-Identifier: BSD-3-Clause */
/* The route's kind "sentinel" (sentinel.c; see there): a primary found
 * by asking Redis Sentinels, for rlk__route_init_kind with a Sentinel
 * URL (url.h).  Internal (rlk__ prefix, not installed). */
#ifndef RESPLOCK_SENTINEL_H
#define RESPLOCK_SENTINEL_H

#include "route.h"

extern const rlk__route_kind rlk__route_kind_sentinel;

#endif
