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

# The load/unload files run with every guest CPU online: one result says
# how many (at least FMM_MIN_CPUS, default 2), so a one-CPU run cannot pass
# as an SMP test.  qemu/run gives 2 vCPUs under single-threaded TCG, which
# keeps the guest's code patching coherent across vCPUs (see qemu/run).
t_smp() {
	local n min=${FMM_MIN_CPUS:-2}
	n=$(getconf _NPROCESSORS_ONLN)
	if [ "$n" -ge "$min" ]; then
		t_ok "$n CPUs online (at least $min)"
	else
		t_fail "$n CPUs online (at least $min)" \
			"this file tests load/unload against other CPUs; boot with --smp $min or more"
	fi
}
