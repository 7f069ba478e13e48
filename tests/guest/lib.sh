# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Helpers for flexmmap's guest tests (tests/guest/NN-*.sh), sourced by each
# test file:   . "$(dirname "$0")/lib.sh"
#
# A test file prints KTAP (Documentation/dev-tools/ktap.rst), whether the
# suite runs it or it runs alone (qemu/run -- /flexmmap/tests/NN-name.sh):
# sourcing this prints "KTAP version 1", t_plan N the plan "1..N", and each
# result is one numbered top-level line:
#   ok 3 NAME                  t_ok NAME
#   not ok 4 NAME              t_fail NAME [WHY...]   (WHY lines as "#   ...")
#   ok 5 NAME # SKIP WHY       t_skip NAME WHY
# Anything else it prints must be indented or start with "#" (t_diag, t_sub).
# At exit it prints the plan if t_plan never did (KTAP allows it last; the
# suite still fails such a file), a "# Totals:" line, and exits KSFT_FAIL
# (1) if a result failed or the count differs from the plan, unless the
# file already exits non-zero (t_skip_all exits KSFT_SKIP, 4).  A test file
# does not set its own EXIT trap: t_atexit CMD.  The suite
# (tests/guest/suite) nests each file's output under one result per file;
# a file that exits non-zero with no "not ok" line, reports nothing or
# another count than its plan is a failure there.
#
# The names of the kernel's tools/testing/selftests/kselftest/ktap_helpers.sh
# (our own code): ktap_print_header, ktap_set_plan, ktap_test_pass,
# ktap_test_fail, ktap_test_skip, ktap_print_msg, ktap_exit_fail_msg,
# ktap_finished and the KSFT_* exit statuses.  The t_* helpers below use them.
#
#   t_check NAME CMD [ARGS...]     ok if CMD exits 0; else not ok with CMD's
#                                  output; CMD's output is shown either way
#                                  only when T_VERBOSE=1
#   t_eq NAME EXPECTED ACTUAL      ok if the two strings are equal
#   t_diag MSG...                  "# MSG"
#   t_sub                          filter: prefix every line with "#   "
#   t_plan N                       the number of results this file reports
#   t_atexit CMD                   run CMD (eval) when the file exits
#   t_insmod [PARAMS...]           insmod $FMM_KO or fail the whole file
#   t_need_root, t_fail_all WHY    helpers for whole-file preconditions
#   t_skip_all WHY                 only for reasons on the suite's allowlist
#   t_dmesg_mark / t_dmesg_since   the kernel log lines after a mark
#   t_kernel_problems              kernel log lines (since the mark) showing
#                                  a WARN, BUG, Oops, lockup or RCU stall
#                                  (tests/guest/kernel-problems, the check
#                                  qemu/run and the suite use)
#   t_smp                          one result: at least 2 CPUs online
#   t_as_nobody CMD...             CMD as uid and gid 65534, no groups
#
#   t_bits_run BITS                true if BITS-bit probes run on this kernel
#                                  (BITS is in FMM_BITS)
#
# Environment from qemu/run: FLEXMMAP_KVER (the release the image was built
# for).  Paths: FMM_DIR=/flexmmap (build output), FMM_KO (the module),
# FMM_PROBES (the probes), FMM_TESTS (these tests).

FMM_DIR=${FMM_DIR:-/flexmmap}
FMM_KO=${FMM_KO:-$FMM_DIR/flexmmap.ko}
FMM_PROBES=${FMM_PROBES:-$FMM_DIR/probes}
FMM_TESTS=${FMM_TESTS:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# The guest kernel's native word size, from the kernel itself (the width of
# a /proc/kallsyms address: 16 hex digits on x86-64, 8 on i386; `uname -m`
# if that file cannot be read), so a file run under setarch i386 still sees
# a 64-bit kernel.  FMM_NATIVE: 64 on an x86-64 kernel, 32 on i386.
# FMM_BITS: the probe flavours that run there ("64 32" on x86-64, whose
# 32-bit programs are compat tasks; "32" on i386, where -64 probes fail
# with "Exec format error").  FMM_NATIVE_SKIP: the reason a 64-bit-only
# case gives on a 32-bit kernel (t_skip; t_skip_all: the suite allows it).
# The C probes make the same test: fmm_kernel_is_32bit() in
# userspace-probes/fmm-maps.h.
fmm_native_bits() {
	local a
	a=$(awk 'NR == 1 { print length($1); exit }' /proc/kallsyms 2>/dev/null)
	case $a in
	16) echo 64 ;;
	8) echo 32 ;;
	*) case $(uname -m) in x86_64) echo 64 ;; *) echo 32 ;; esac ;;
	esac
}
FMM_NATIVE=${FMM_NATIVE:-$(fmm_native_bits)}
if [ "$FMM_NATIVE" = 64 ]; then FMM_BITS="64 32"; else FMM_BITS="32"; fi
FMM_NATIVE_SKIP="64-bit only: a 32-bit kernel runs no 64-bit programs"
export FMM_NATIVE FMM_BITS FMM_NATIVE_SKIP

# --- KTAP ------------------------------------------------------------------
# kselftest's exit statuses: the suite counts a file that exits KSFT_SKIP as
# skipped (if its reason is allowed), any other non-zero status as failed.
KSFT_PASS=0
KSFT_FAIL=1
KSFT_XFAIL=2
KSFT_XPASS=3
KSFT_SKIP=4
export KSFT_PASS KSFT_FAIL KSFT_XFAIL KSFT_XPASS KSFT_SKIP
KTAP_TESTNO=0 KTAP_CNT_PASS=0 KTAP_CNT_FAIL=0 KTAP_CNT_SKIP=0
T_PLANNED='' T_ATEXIT=()

ktap_print_header() { echo "KTAP version 1"; }

# ktap_set_plan N: "1..N".  Print it before any result when N is known.
ktap_set_plan() {
	T_PLANNED=$1
	echo "1..$1"
}

ktap_print_msg() { echo "# $*"; }

# One numbered result: RESULT ("ok" or "not ok") DESCRIPTION [DIRECTIVE].
# A description cannot hold "#" in KTAP: any is written as "%23".
ktap_result_line() {
	KTAP_TESTNO=$((KTAP_TESTNO + 1))
	echo "$1 $KTAP_TESTNO ${2//#/%23}${3:+ # $3}"
}
ktap_test_pass() {
	KTAP_CNT_PASS=$((KTAP_CNT_PASS + 1))
	ktap_result_line ok "$1"
}
ktap_test_fail() {
	KTAP_CNT_FAIL=$((KTAP_CNT_FAIL + 1))
	ktap_result_line "not ok" "$1"
}
# ktap_test_skip DESCRIPTION [REASON]
ktap_test_skip() {
	KTAP_CNT_SKIP=$((KTAP_CNT_SKIP + 1))
	ktap_result_line ok "$1" "SKIP${2:+ $2}"
}

# The file's verdict: KSFT_PASS if every planned result passed or skipped.
ktap_status() {
	if [ "$KTAP_CNT_FAIL" = 0 ] && [ "$KTAP_TESTNO" = "${T_PLANNED:-$KTAP_TESTNO}" ]; then
		echo "$KSFT_PASS"
	else
		echo "$KSFT_FAIL"
	fi
}

# A precondition failed: a "#" line, then exit KSFT_FAIL (see t_fail_all
# for one that is also a result).
ktap_exit_fail_msg() {
	ktap_print_msg "$*"
	exit "$KSFT_FAIL"
}

# The end of a file (the EXIT trap does the same when a file just ends).
ktap_finished() { exit "$(ktap_status)"; }

t_atexit() { T_ATEXIT+=("$1"); }

# The EXIT trap: the file's own clean-ups (last registered first), the plan
# if it was never printed, the totals, and the status.
ktap_at_exit() {
	local rc=$? i
	trap - EXIT
	for ((i = ${#T_ATEXIT[@]} - 1; i >= 0; i--)); do
		eval "${T_ATEXIT[i]}" || true
	done
	[ -n "$T_PLANNED" ] || ktap_set_plan "$KTAP_TESTNO"
	echo "# Totals: pass:$KTAP_CNT_PASS fail:$KTAP_CNT_FAIL xfail:0 xpass:0 skip:$KTAP_CNT_SKIP error:0"
	[ "$rc" != 0 ] || rc=$(ktap_status)
	exit "$rc"
}
trap ktap_at_exit EXIT
ktap_print_header

# --- results -----------------------------------------------------------------
t_ok() { ktap_test_pass "$1"; }

t_fail() {
	local name=$1
	shift
	ktap_test_fail "$name"
	[ $# -eq 0 ] || printf '%s\n' "$@" | t_sub
}

t_skip() { ktap_test_skip "$1" "${2:-}"; }

t_diag() { ktap_print_msg "$@"; }

t_bits_run() { [[ " $FMM_BITS " == *" $1 "* ]]; }

# t_paxtest PROGRAM...: paxtest's programs (Debian's paxtest package) run
# the way its paxtest script runs them, each printing "Description :
# Result"; one that exits non-zero adds "PROGRAM: exit N".
FMM_PAXDIR=/usr/lib/paxtest
t_paxtest() {
	local t
	for t; do
		(cd /tmp && LD_LIBRARY_PATH=$FMM_PAXDIR PAXTEST_MODE=1 "$FMM_PAXDIR/$t" 2>&1) ||
			echo "$t: exit $?"
	done
}

# t_nx_enforced: true if code run from a non-executable page faults now (a
# "ret" on the stack of a PT_GNU_STACK "rw" probe does not run).  Debian
# 12's 686-pae kernel says "NX (Execute Disable) protection: active" and
# maps the stack rw-p, yet its vm_get_page_prot() drops the NX bit and such
# code runs, unless the module has armed its correction (pae_nx=1, the
# default: from the first vm.flexmmap_nx mode other than 0, until unload)
# (module/pae-nx.c, 13-pae-nx.sh).  Without NX fmm-nx's stack_run item cannot
# hold, the other items (READ_IMPLIES_EXEC, the x in /proc/self/maps) do.
t_nx_enforced() {
	"$FMM_PROBES/fmm-nx-$FMM_NATIVE" --print 2>/dev/null | grep -qx 'stack_run=0'
}
# t_nx_rules MODE PROBE: PROBE's exec-time items follow vm.flexmmap_nx MODE
# (fmm-nx --expect MODE), or, where NX is not enforced (t_nx_enforced),
# those of its items the kernel sets at exec: rie, stack_x, heap_x.
t_nx_rules() {
	local mode=$1 probe=$2 gs rie stack_x heap_x
	if t_nx_enforced; then
		"$probe" --expect "$mode" >/dev/null 2>&1
		return
	fi
	gs=$("$probe" --print 2>/dev/null | tr '\n' ' ')
	case $gs in *"gnustack=rwx "*) stack_x=1 ;; *) stack_x=0 ;; esac
	# READ_IMPLIES_EXEC for no PT_GNU_STACK: mode 0 (the kernel's
	# elf_read_implies_exec) for a 32-bit program only, mode 1 for any.
	rie=0
	if [[ $gs == *"gnustack=- "* ]]; then
		case $mode in
		0) [[ $gs == *"bits=64 "* ]] || rie=1 ;;
		1) rie=1 ;;
		esac
	fi
	[ "$mode" -lt 2 ] || stack_x=0
	[ "$rie" = 0 ] || stack_x=1
	heap_x=$rie
	[[ $gs == *"rie=$rie stack_x=$stack_x "*"heap_x=$heap_x "* ]]
}

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

# Skip the whole file: one skipped result, then exit KSFT_SKIP (4), as
# kselftest does.  The suite counts the file as skipped if the reason is on
# its allowlist ("not a debug kernel" for 05, 64 and 95, "no headers package
# for" for 36) and as failed otherwise: a missing tool, package or build
# product the suite should guarantee is a failure (t_fail_all).
t_skip_all() {
	[ -n "$T_PLANNED" ] || ktap_set_plan 1
	ktap_test_skip "${0##*/}" "$*"
	exit "$KSFT_SKIP"
}

# A precondition failed: one failed result, then exit KSFT_FAIL.
t_fail_all() {
	t_fail "${0##*/}: $1" "${@:2}"
	exit "$KSFT_FAIL"
}

# t_plan N: this file reports N results; the suite fails a file whose count
# differs (one that stopped early, say).  Print it before any result.
t_plan() { ktap_set_plan "$1"; }

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
# t_as_nobody CMD...: CMD as nobody (uid and gid 65534, no supplementary
# groups), the unprivileged user every control file is tried as.
t_as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }

# t_kernel_problems [--also ERE]: kernel-problems on the log since the mark.
# shellcheck disable=SC2120 # --also is optional
t_kernel_problems() { t_dmesg_since | "$FMM_TESTS/kernel-problems" "$@"; }

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
