// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the counters of /proc/flexmmap/stats (struct fmm_stats in
 * fmm.h).  Defined below every file that counts, printed by control.c.
 */
#include "fmm.h"

struct fmm_stats fmm_stats;
