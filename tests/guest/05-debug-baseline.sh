#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# On the debug kernel (make check KERNEL=source): before any test loads the
# module, the kernel log has no KASAN, lockdep or DEBUG_VM report, lockdep
# is still on, and kmemleak's suspects from boot are set aside (scanned,
# kept in /tmp/kmemleak.boot, cleared) so that 95-debug-reports.sh sees only
# what the suite leaked.  Skipped on a kernel without these debugging options.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root

# shellcheck source=SCRIPTDIR/debug.sh
. "$(dirname "$0")/debug.sh"
t_debug_kernel || t_skip_all "not a debug kernel (no KASAN, lockdep or kmemleak)"
t_plan 5
t_debug_reports "at boot"
if [ -w "$T_KMEMLEAK" ]; then
	t_kmemleak_scan >/tmp/kmemleak.boot
	n=$(grep -c '^unreferenced object' /tmp/kmemleak.boot)
	t_diag "kmemleak: $n suspect(s) from boot set aside (/tmp/kmemleak.boot)"
	[ "$n" = 0 ] || head -n 20 /tmp/kmemleak.boot | t_sub
	echo clear >"$T_KMEMLEAK"
	t_ok "kmemleak baseline taken"
fi
