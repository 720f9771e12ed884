/* SPDX-License-Identifier: BSD-3-Clause */
/* The reader of scripts/pack-text's format (see unpack.h). */
#include "unpack.h"

struct bits {
    const unsigned char *in;
    size_t at; /* in bits */
};

/* The next k bits, the first the highest. */
static unsigned take(struct bits *b, unsigned k)
{
    unsigned v = 0;
    for (; k; k--, b->at++) v = v << 1 | (b->in[b->at >> 3] >> (~b->at & 7) & 1);
    return v;
}

/* The next symbol of table t (a canonical code: the codes of one length
 * follow those one bit shorter). */
static unsigned symbol(struct bits *b, const unsigned char *t)
{
    unsigned code = 0, first = 0, index = 0;
    for (unsigned len = 1;; len++) {
        code |= take(b, 1);
        if (code - first < t[len]) return t[1 + t[0] + index + code - first];
        index += t[len];
        first = (first + t[len]) << 1;
        code <<= 1;
    }
}

/* The byte after table t. */
static const unsigned char *after(const unsigned char *t)
{
    const unsigned char *end = t + 1 + t[0];
    for (unsigned len = 1; len <= t[0]; len++) end += t[len];
    return end;
}

size_t rlk__unpack(const unsigned char *in, size_t n, char *out)
{
    const unsigned char *far = after(in);
    struct bits b = {after(far), 0};
    for (size_t o = 0; o < n;) {
        unsigned s = symbol(&b, in);
        if (s < 0x80) {
            out[o++] = (char)s;
        } else if (s == 0x80) {
            out[o++] = (char)take(&b, 8);
        } else {
            /* D has K bits, the highest 1. */
            unsigned k = symbol(&b, far) - 1;
            size_t len = s - 0x81 + 3, back = (size_t)1 << k | take(&b, k);
            for (; len; len--, o++) out[o] = out[o - back];
        }
    }
    out[n] = '\0';
    return n;
}
