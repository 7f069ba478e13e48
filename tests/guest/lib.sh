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
#   t_plan N                       the number of results this file reports
#   t_insmod [PARAMS...]           insmod $FMM_KO or fail the whole file
#   t_need_root, t_fail_all WHY    helpers for whole-file preconditions
#   t_skip_all WHY                 only for reasons on the suite's allowlist
#   t_dmesg_mark / t_dmesg_since   the kernel log lines after a mark
#   t_kernel_problems              kernel log lines (since the mark) showing
#                                  a WARN, BUG, Oops, lockup or RCU stall
#   t_smp                          one result: at least 2 CPUs online
#
# Environment from qemu/run: FLEXMMAP_KVER (the release the image was built
# for).  Paths: FMM_DIR=/flexmmap (build output), FMM_KO (the module),
# FMM_PROBES (the probes), FMM_TESTS (these tests).

FMM_DIR=${FMM_DIR:-/flexmmap}
FMM_KO=${FMM_KO:-$FMM_DIR/flexmmap.ko}
FMM_PROBES=${FMM_PROBES:-$FMM_DIR/probes}
FMM_TESTS=${FMM_TESTS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The kernel-problem pattern, shared with qemu/run (which reads the same
# file on the host): one extended regular expression per line.
T_BAD_KERNEL=$(grep -v '^#' "$FMM_TESTS/kernel-problems" | paste -sd '|')

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

t_need_root() { [ "$(id -u)" = 0 ] || t_fail_all "needs root"; }

# Skip the whole file: one skipped result, then exit 0.  The suite counts a
# skip as a failure unless its reason is on the suite's allowlist (today
# only "not a debug kernel", for 05 and 95): a missing tool, package or
# build product the suite should guarantee is a failure (t_fail_all).
t_skip_all() {
	[ -n "${T_PLANNED:-}" ] || t_plan 1
	t_skip "${0##*/}" "$*"
	exit 0
}

# A precondition failed: one failed result, then exit 1.
t_fail_all() {
	t_fail "${0##*/}: $1" "${@:2}"
	exit 1
}

# t_plan N: this file reports N results; the suite fails a file whose count
# differs (one that stopped early, say).  Print it before any result.
t_plan() {
	T_PLANNED=$1
	echo "1..$1"
}

# t_insmod [PARAMS...]: load the module under test ($FMM_KO, the one place
# every file takes it from), or fail the file.
# shellcheck disable=SC2120 # the parameters are optional
t_insmod() {
	local out
	out=$(insmod "$FMM_KO" "$@" 2>&1) ||
		t_fail_all "insmod $FMM_KO $* failed" "$out" "$(dmesg | tail -n 5)"
}

# The kernel log since a mark written into it (a line count breaks when the
# ring buffer wraps).
t_dmesg_mark() {
	T_DMESG_MARK="flexmmap-test-mark ${0##*/} $$ $RANDOM$RANDOM"
	echo "$T_DMESG_MARK" >/dev/kmsg
}
t_dmesg_since() {
	if [ -z "${T_DMESG_MARK:-}" ]; then
		dmesg
	else
		dmesg | awk -v m="$T_DMESG_MARK" 'f; index($0, m) { f = 1 }'
	fi
}
t_kernel_problems() {
	t_dmesg_since | awk -v bad="$T_BAD_KERNEL" -f "$FMM_TESTS/kernel-problems.awk"
}

# The load/unload files run with every guest CPU online: at least
# FMM_MIN_CPUS (default 2), or the file fails (a precondition the suite
# guarantees, so no result of its own), and a one-CPU run cannot pass as an
# SMP test.  qemu/run gives 2 vCPUs under single-threaded TCG, which keeps
# the guest's code patching coherent across vCPUs (see qemu/run).
t_smp() {
	local n min=${FMM_MIN_CPUS:-2}
	n=$(getconf _NPROCESSORS_ONLN)
	[ "$n" -ge "$min" ] || t_fail_all "$n CPUs online, at least $min needed" \
		"this file tests load/unload against other CPUs; boot with --smp $min or more"
	t_diag "$n CPUs online (at least $min)"
}
