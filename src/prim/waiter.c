/* SPDX-License-Identifier: BSD-3-Clause */
/* The waiter's rules: see waiter.h. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "waiter.h"
#include "keys.h"

#include <string.h>

void rlk__wait_plan_for(rlk__wait_plan *p, int64_t recheck, int64_t ttl)
{
    int64_t slice = recheck > 0 ? recheck : RLK__DEFAULT_RECHECK_MS;
    if (ttl / 3 < slice) slice = ttl / 3 > 10 ? ttl / 3 : 10;
    p->slice = slice;
    p->lease = 2 * slice + 200;
    p->claim = slice + 1000 < ttl ? slice + 1000 : ttl;
}

int rlk__handoff_parse(const rlk_resp_value *msg, const char *channel, const char *token,
                       uint64_t *fence)
{
    const rlk_resp_value *ch = rlk_resp_value_at(msg, 1), *pl = rlk_resp_value_at(msg, 2);
    const rlk_resp_value *kind = rlk_resp_value_at(msg, 0);
    if (!(rlk__str_is(kind, "message", 7) || rlk__str_is(kind, "smessage", 8)) ||
        !rlk__str_is(ch, channel, strlen(channel)) || !pl ||
        (pl->type != RLK_RESP_BULK && pl->type != RLK_RESP_SIMPLE))
        return 0;
    uint64_t f = 0;
    size_t i, tl = strlen(token);
    for (i = 0; i < pl->len && i < 19 && pl->str[i] >= '0' && pl->str[i] <= '9'; i++)
        f = f * 10 + (uint64_t)(pl->str[i] - '0');
    if (i == 0 || pl->len != i + 1 + tl || pl->str[i] != ' ' ||
        memcmp(pl->str + i + 1, token, tl) != 0)
        return 0;
    *fence = f;
    return 1;
}
