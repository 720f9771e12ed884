/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The defaults of the public configuration structures (resplock.h).
 * Pure and alone in this file so that every layer may fill one in
 * without depending on the layer whose structure it is: the session
 * fills rlk_lock_options for an acquire given none, as the client does.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "resplock.h"

#include <string.h>

void rlk_conn_config_init(rlk_conn_config *cfg) { memset(cfg, 0, sizeof *cfg); }
void rlk_client_config_init(rlk_client_config *cfg) { memset(cfg, 0, sizeof *cfg); }
void rlk_lock_options_init(rlk_lock_options *o) { memset(o, 0, sizeof *o); }
