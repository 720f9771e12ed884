/* SPDX-License-Identifier: BSD-3-Clause */
/* The UTC date and time of a count of seconds, for the holder's "since". */
#include "cli.h"

/* Days are counted from 0000-03-01 in eras of 400 years (146,097 days,
 * the Gregorian calendar's cycle), so that February, and its leap day,
 * ends each year of the count.  Any int64_t gives a date: no C library
 * time functions (gmtime_r pulls in the C library's time zone code, and
 * says nothing for years it cannot hold, where this keeps counting). */
void cli_utc(int64_t t, cli_date *out)
{
    int64_t d = t / 86400, s = t % 86400;
    if (s < 0) {
        s += 86400;
        d--;
    }
    out->hour = (int)(s / 3600);
    out->min = (int)(s / 60 % 60);
    out->sec = (int)(s % 60);
    d += 719468; /* 1970-01-01 is day 719,468 of the count */
    int64_t era = (d >= 0 ? d : d - 146096) / 146097;
    int64_t day = d - era * 146097;                                             /* of the era */
    int64_t year = (day - day / 1460 + day / 36524 - day / 146096) / 365;       /* of the era */
    int64_t yday = day - (365 * year + year / 4 - year / 100);                  /* from March 1 */
    int64_t m = (5 * yday + 2) / 153;                                           /* March is 0 */
    out->mday = (int)(yday - (153 * m + 2) / 5 + 1);
    out->mon = (int)(m < 10 ? m + 3 : m - 9);
    out->year = era * 400 + year + (out->mon <= 2);
}
