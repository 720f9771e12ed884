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
            size_t len = b - 0x80 + 3, back = ((size_t)in[i] << 8 | in[i + 1]) + 1;
            i += 2;
            for (; len; len--, o++) out[o] = out[o - back];
        }
    }
    out[o] = '\0';
    return o;
}
