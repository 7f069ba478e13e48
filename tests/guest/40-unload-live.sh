#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rmmod while processes run on the module's allocators: 64- and 32-bit
# (32-bit only on a 32-bit kernel),
# multithreaded, forking in a loop (children mmap), and one with a zombie
# thread-group leader.  rmmod succeeds, every process then maps memory again
# without error, and the kernel log stays clean.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 9
t_smp

P=$FMM_PROBES
rmmod flexmmap 2>/dev/null

run_case() { # LAYOUT
	local layout=$1 i pid n=0 bad=0 out rc
	# The native flavour ($FMM_NATIVE: 64, or 32 on the i386 guest, whose
	# kernel runs no 64-bit program) and 32-bit ones.
	local n64=$FMM_NATIVE
	local -a pids=() args=(
		"$n64"
		"32 --threads 3"
		"$n64 --fork-loop"
		"32 --fork-loop --threads 2"
		"$n64 --threads 2 --exit-leader"
	)

	t_dmesg_mark
	insmod "$FMM_KO" layout="$layout" || { t_fail "insmod layout=$layout"; return; }
	for i in "${!args[@]}"; do
		local -a a
		read -r -a a <<<"${args[$i]}"
		"$P/fmm-sleep-${a[0]}" "${a[@]:1}" </dev/null >"/tmp/sleeper.$i" 2>&1 &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		for _ in $(seq 100); do grep -q '^ready' "/tmp/sleeper.$i" && break; sleep 0.1; done
	done
	sleep 1
	for pid in "${pids[@]}"; do
		grep -q "^$pid .* module-" /proc/flexmmap/tasks && n=$((n + 1))
	done
	t_eq "layout=$layout: ${#pids[@]} processes on module allocators before rmmod" \
		"${#pids[@]}" "$n"
	# The unload is the point only with processes on the module's
	# allocators: the two results below require all of them there.
	rmmod flexmmap
	t_eq "layout=$layout: rmmod with ${#pids[@]} processes on module allocators running" \
		"0 ${#pids[@]}" "$? $n"
	for pid in "${pids[@]}"; do kill -USR1 "$pid"; done
	sleep 2
	for i in "${!pids[@]}"; do
		kill -TERM "${pids[$i]}"
		wait "${pids[$i]}"
		rc=$?
		out=$(cat "/tmp/sleeper.$i")
		if [ $rc != 0 ] || ! grep -q '^ok' <<<"$out" || grep -q '^fail' <<<"$out"; then
			bad=$((bad + 1))
			t_diag "fmm-sleep-${args[$i]} exited $rc:"
			t_sub <<<"$out"
		fi
	done
	t_eq "layout=$layout: every process maps memory after rmmod (all were on module allocators), forks and threads included" \
		"0 ${#pids[@]}" "$bad $n"
}

for layout in 1 2 3; do
	run_case $layout
done
