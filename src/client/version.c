/* SPDX-License-Identifier: BSD-3-Clause */
/* The library's version, as its header said when it was built. */
#include "resplock.h"

const char *rlk_version(void) { return RLK_VERSION_STRING; }

int rlk_version_number(void) { return RLK_VERSION_NUMBER; }
