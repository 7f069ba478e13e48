# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for flexmmap's guest tests (tests/guest/NN-*.sh), sourced by each
# test file:   . "$(dirname "$0")/lib.sh"
#
# A test file prints one top-level line per result through these functions:
#   ok - NAME                  t_ok NAME
#   not ok - NAME              t_fail NAME [WHY...]   (WHY lines as "# ...")
#   ok - NAME # SKIP WHY       t_skip NAME WHY
# Anything else it prints must be indented or start with "#" (t_diag, t_sub).
# Lines carry no numbers: the suite (and tests/check on the host) number
# them, so files compose.  A file that exits non-zero without a "not ok" line,
# or that reports nothing, is counted as a failure by the suite.
#
#   t_check NAME CMD [ARGS...]     ok if CMD exits 0; else not ok with CMD's
#                                  output; CMD's output is shown either way
#                                  only when T_VERBOSE=1
#   t_eq NAME EXPECTED ACTUAL      ok if the two strings are equal
#   t_diag MSG...                  "# MSG"
#   t_sub                          filter: prefix every line with "#   "
#   t_need_root, t_skip_all WHY    helpers for whole-file preconditions
#   t_dmesg_mark / t_dmesg_since   the kernel log lines after a mark
#   t_kernel_problems              kernel log lines (since the mark) showing
#                                  a WARN, BUG, Oops, lockup or RCU stall
#   t_tcg_one_cpu                  under TCG, only cpu0 online until exit
#
# Environment from qemu/run: FLEXMMAP_KVER (the release the image was built
# for).  Paths: FMM_DIR=/flexmmap (build output), FMM_KO (the module),
# FMM_PROBES (the probes), FMM_TESTS (these tests).

FMM_DIR=${FMM_DIR:-/flexmmap}
FMM_KO=${FMM_KO:-$FMM_DIR/flexmmap.ko}
FMM_PROBES=${FMM_PROBES:-$FMM_DIR/probes}
FMM_TESTS=${FMM_TESTS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
T_BAD_KERNEL='Oops|BUG:|WARNING:|Kernel panic|soft lockup|rcu_sched self-detected|rcu: INFO|general protection fault|blocked for more than|Call Trace'

t_ok() { echo "ok - $1"; }

t_fail() {
	local name=$1
	shift
	echo "not ok - $name"
	[ $# -eq 0 ] || printf '%s\n' "$@" | t_sub
}

t_skip() { echo "ok - $1 # SKIP ${2:-}"; }

t_diag() { echo "# $*"; }

t_sub() { sed 's/^/#   /'; }

t_check() {
	local name=$1 out rc=0
	shift
	out=$("$@" 2>&1) || rc=$?
	if [ "$rc" = 0 ]; then
		t_ok "$name"
		[ "${T_VERBOSE:-0}" != 1 ] || [ -z "$out" ] || printf '%s\n' "$out" | t_sub
	else
		t_fail "$name" "command: $*" "exit status $rc"
		[ -z "$out" ] || printf '%s\n' "$out" | t_sub
	fi
	return 0
}

t_eq() {
	if [ "$2" = "$3" ]; then
		t_ok "$1"
	else
		t_fail "$1" "expected: $2" "saw:      $3"
	fi
}

t_need_root() { [ "$(id -u)" = 0 ] || t_skip_all "needs root"; }

# Skip the whole file: one skipped result, then exit 0.
t_skip_all() {
	t_skip "${0##*/}" "$*"
	exit 0
}

# dmesg has no cheap "since"; remember the line count instead.
t_dmesg_mark() { T_DMESG_MARK=$(dmesg | wc -l); }
t_dmesg_since() { dmesg | tail -n +"$((${T_DMESG_MARK:-0} + 1))"; }
t_kernel_problems() { t_dmesg_since | grep -E "$T_BAD_KERNEL" || true; }

# Under QEMU TCG, take every CPU but cpu0 offline until the test exits
# (FMM_CYCLES_SMP=1 keeps them).  Module load/unload storms need it: with
# two TCG vCPUs a vCPU was seen spinning for ever on the int3 of a kprobe
# long after the probe was removed (stale translated code across vCPUs, as
# far as we can tell; see 41-load-cycles.sh).  Prints what it did.
t_tcg_one_cpu() {
	local c
	T_OFFLINED=()
	[ "${FMM_CYCLES_SMP:-0}" != 1 ] || return 0
	grep -q '^flags.*hypervisor' /proc/cpuinfo || return 0
	! grep -qw kvm /sys/devices/system/clocksource/clocksource0/available_clocksource 2>/dev/null ||
		return 0
	for c in /sys/devices/system/cpu/cpu[1-9]*; do
		if [ ! -e "$c/online" ] || [ "$(cat "$c/online")" != 1 ]; then
			continue
		fi
		echo 0 >"$c/online" && T_OFFLINED+=("$c")
	done
	trap t_tcg_cpus_back EXIT
	[ ${#T_OFFLINED[@]} = 0 ] ||
		t_diag "TCG guest: running with ${T_OFFLINED[*]##*/} offline (FMM_CYCLES_SMP=1 keeps them)"
}
t_tcg_cpus_back() {
	local c
	for c in "${T_OFFLINED[@]}"; do echo 1 >"$c/online"; done
}
