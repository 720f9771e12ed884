/* SPDX-License-Identifier: BSD-3-Clause */
/* The reader of scripts/pack-text's format (see unpack.h). */
#include "unpack.h"

size_t rlk__unpack(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        unsigned b = in[i++];
        if (b < 0x80) {
            out[o++] = (char)b;
        } else if (b == 0x80) {
            out[o++] = (char)in[i++];
        } else {
            /* Near: one byte of distance; far: two. */
            size_t len = b < 0xc0 ? b - 0x81 + 3 : b - 0xc0 + 4, back = in[i++];
            if (b >= 0xc0) back = back << 8 | in[i++];
            for (back++; len; len--, o++) out[o] = out[o - back];
        }
    }
    out[o] = '\0';
    return o;
}
