/* SPDX-License-Identifier: BSD-3-Clause */
/* Text packed at build time by scripts/pack-text (its header gives the
 * format), unpacked here.  Internal to the library (rlk__ prefix, not
 * installed).  The command keeps its usage text (and the static one
 * its strerror's words and the Lua scripts) so: less than half the
 * bytes. */
#ifndef RESPLOCK_UNPACK_H
#define RESPLOCK_UNPACK_H

#include <stddef.h>

/* Unpacks the text at in, n bytes unpacked (pack-text prints its
 * length), into out, which has room for them and a NUL; returns n.
 * The input is the build's own, and trusted: a back reference is not
 * checked against the start of out. */
size_t rlk__unpack(const unsigned char *in, size_t n, char *out);

#endif
