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

#if defined(__GNUC__)
#define RLK_LIKELY(x) __builtin_expect(!!(x), 1)
#define RLK_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define RLK_LIKELY(x) (x)
#define RLK_UNLIKELY(x) (x)
#endif

#endif
