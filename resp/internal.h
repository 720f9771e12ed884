/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal helpers shared by the codec's files; not installed. */
#ifndef RESPLOCK_RESP_INTERNAL_H
#define RESPLOCK_RESP_INTERNAL_H

#include <stddef.h>

void *rlk__malloc(size_t n);
void *rlk__realloc(void *p, size_t n);
void rlk__free(void *p);

/* The double nearest to decimal text [+-]digits[.digits][(e|E)[+-]digits]
 * (at least one digit; checked by the caller), ties to even, as strtod
 * gives it in the C locale; out of range, an infinity or a zero. */
double rlk__decimal_double(const char *s, size_t n);

/* v in decimal into out (at least 21 bytes), NUL-terminated; returns its
 * length.  As snprintf's "%lld", without the formatting machinery: the
 * commands of a request carry their numbers as text. */
size_t rlk__i64_dec(char *out, long long v);

#if defined(__GNUC__)
#define RLK_LIKELY(x) __builtin_expect(!!(x), 1)
#define RLK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define RLK_LIKELY(x) (x)
#define RLK_UNLIKELY(x) (x)
#endif

#endif
