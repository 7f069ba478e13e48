# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for the debug-kernel checks (05-debug-baseline.sh,
# 95-debug-reports.sh), sourced after lib.sh.
#
#   t_debug_kernel          true on a kernel with KASAN, lockdep or kmemleak
#   t_debug_reports WHEN    one result each: no KASAN, lockdep or DEBUG_VM
#                           report in the whole kernel log; lockdep still on
#   t_kmemleak_scan         scan (twice: a new object needs two scans to be
#                           reported) and print the suspects

T_KMEMLEAK=/sys/kernel/debug/kmemleak
T_KASAN='BUG: KASAN|KASAN: |kasan_report'
T_LOCKDEP='WARNING: possible|WARNING: inconsistent lock|WARNING: suspicious RCU|BUG: sleeping function|BUG: lock held|BUG: held lock|INFO: trying to register non-static key|DEBUG_LOCKS_WARN_ON|hardirqs last'
T_DEBUG_VM='VM_BUG_ON|VM_WARN|page dumped because|BUG: Bad page|BUG: Bad rss'

t_debug_kernel() {
	[ -e "$T_KMEMLEAK" ] || [ -e /proc/lockdep_stats ] ||
		grep -qw kasan_report /proc/kallsyms 2>/dev/null
}

t_debug_reports() {
	local when=$1 log
	# Through the one filter (kernel-problems): a report it sets aside, e.g.
	# the WARN dump of an injected allocation failure with lockdep's
	# "hardirqs last" lines, is not one here either.
	log=$(dmesg | "$FMM_TESTS/kernel-problems" --also "$T_KASAN|$T_LOCKDEP|$T_DEBUG_VM")
	if grep -qw kasan_report /proc/kallsyms; then
		t_eq "$when: no KASAN report in the kernel log" "" \
			"$(grep -E "$T_KASAN" <<<"$log" | head -n 5)"
	fi
	if [ -e /proc/lockdep_stats ]; then
		t_eq "$when: no lockdep report in the kernel log" "" \
			"$(grep -E "$T_LOCKDEP" <<<"$log" | head -n 5)"
		# A report turns debug_locks off for good.
		t_eq "$when: lockdep still on (debug_locks 1)" 1 \
			"$(awk '/debug_locks:/ { print $2 }' /proc/lockdep_stats)"
	fi
	t_eq "$when: no DEBUG_VM report in the kernel log" "" \
		"$(grep -E "$T_DEBUG_VM" <<<"$log" | head -n 5)"
}

t_kmemleak_scan() {
	echo scan >"$T_KMEMLEAK"
	sleep 6
	echo scan >"$T_KMEMLEAK"
	cat "$T_KMEMLEAK"
}
