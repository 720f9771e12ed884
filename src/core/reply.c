/* SPDX-License-Identifier: BSD-3-Clause */
/* Readings of one reply (see reply.h). */
#include "reply.h"

#include <string.h>

int rlk__is_error(const rlk_resp_value *v)
{
    return v && (v->type == RLK_RESP_ERROR || v->type == RLK_RESP_BLOB_ERROR);
}

int rlk__int_at(const rlk_resp_value *v, size_t i, int64_t *out)
{
    const rlk_resp_value *e = rlk_resp_value_at(v, i);
    if (!e || e->type != RLK_RESP_INTEGER) return -1;
    *out = e->integer;
    return 0;
}

int rlk__str_is(const rlk_resp_value *v, const char *s, size_t n)
{
    return v && (v->type == RLK_RESP_SIMPLE || v->type == RLK_RESP_BULK) && v->len == n &&
           memcmp(v->str, s, n) == 0;
}
