#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# On the debug kernel (make check KERNEL=source), after every other test:
# no KASAN, lockdep or DEBUG_VM report in the whole kernel log, lockdep
# still on, and no memory leak found by kmemleak since 05-debug-baseline.sh.
# Skipped on a kernel without these debugging options.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root

# shellcheck source=SCRIPTDIR/debug.sh
. "$(dirname "$0")/debug.sh"
t_debug_kernel || t_skip_all "not a debug kernel (no KASAN, lockdep or kmemleak)"
t_plan 5
rmmod flexmmap 2>/dev/null
t_debug_reports "after the suite"
if [ -w "$T_KMEMLEAK" ]; then
	leaks=$(t_kmemleak_scan)
	n=$(grep -c '^unreferenced object' <<<"$leaks")
	if [ "$n" = 0 ]; then
		t_ok "kmemleak: no leak since the baseline"
	else
		t_fail "kmemleak: no leak since the baseline" "$n suspect(s); the first:" \
			"$(head -n 40 <<<"$leaks")"
	fi
fi
