#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The load/unload storm: FMM_STORM_CYCLES insmod/rmmod cycles (12 here, 1000
# in "make stress") while, all at once,
#  - a loop execs the 64- and 32-bit layout probes (32-bit only on a 32-bit
#    kernel, where the 64-bit worker's result skips), with and without
#    PT_GNU_STACK, and the NX probes, with, without and with an executable
#    PT_GNU_STACK;
#  - multithreaded 64- and 32-bit processes mmap, write, mremap, verify and
#    munmap in every thread and fork continuously (fmm-sleep);
#  - a writer flips vm.flexmmap_layout and vm.flexmmap_nx through every
#    valid value, at the start of each loaded window and during every
#    rmmod and insmod.
# Then each loaded window pins one (layout, nx): layout 1 or 2 with nx 0 or
# 3, every pair once in any four cycles (windows.sh).  The writer stops, the
# sysctls are set to the pair and both workers are re-targeted onto that
# allocator.  A probe exec'd wholly inside the pinned window checks fixed
# expectations (bottom-up on module-bottomup, or top-down on module-topdown;
# fmm-nx under the pinned nx, EACCES required under 3); one exec'd while
# unloaded, the kernel's top-down layout and nx=0 rules (a control).
# Pass: no oops/WARN/BUG/lockup/RCU stall, every counted probe passes,
# every worker's self-check of its own mappings holds, the workers forked
# without a failed fork, no missed probe hit, no stray int3.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
W=/tmp/storm
# shellcheck source=SCRIPTDIR/windows.sh
. "$(dirname "$0")/windows.sh"
t_need_root
t_plan 9
t_smp

P=$FMM_PROBES
cycles=${FMM_STORM_CYCLES:-12}
rmmod flexmmap 2>/dev/null
win_init
t_dmesg_mark

# A 32-bit kernel runs no 64-bit worker: its result skips (FMM_NATIVE_SKIP).
w64=
if [ "$FMM_NATIVE" = 64 ]; then
	"$P/fmm-sleep-64" --threads 3 --fork-loop --pause 2000 </dev/null >"$W/w64" 2>&1 &
	w64=$!
fi
"$P/fmm-sleep-32" --threads 2 --fork-loop --pause 2000 </dev/null >"$W/w32" 2>&1 &
w32=$!
# Layout and NX probes interleaved: a window sees both kinds soon.
specs=()
for v in $FMM_BITS; do
	specs+=("layout topdown $P/fmm-layout-$v" "nx $P/fmm-nx-$v")
done
for v in $FMM_BITS; do
	specs+=("layout topdown $P/fmm-layout-$v-nognustack" "nx $P/fmm-nx-$v-nognustack")
done
for v in $FMM_BITS; do
	specs+=("nx $P/fmm-nx-$v-execstack")
done
win_exec_loop "${specs[@]}" &
execs=$!
# The writer: flips in every state but P and L; seeing one of those, it
# acknowledges it in "$W/ack", after which it writes nothing until the state
# changes, so the pinned values stand.  An empty read (win_set rewriting the
# state, P to L included) is no state to flip in either.
(
	n=0
	while [ ! -e "$W/stop" ]; do
		for l in 0 1 2 3; do
			for x in 0 1 2 3; do
				win_state
				s=$WIN_S
				if [[ $s == [PL]* ]]; then
					echo "$s" >"$W/ack"
					sleep 0.02
					continue
				fi
				# Nothing read: the state is being rewritten, maybe
				# from P to L; a write now could land in the pinned
				# window after its ack.
				if [ -z "$s" ]; then
					sleep 0.02
					continue
				fi
				echo $l 2>/dev/null >/proc/sys/vm/flexmmap_layout && n=$((n + 1))
				echo $x 2>/dev/null >/proc/sys/vm/flexmmap_nx && n=$((n + 1))
				sleep 0.02
			done
		done
	done
	echo "$n" >"$W/writes"
) &
writer=$!

failed=0 unanchored=0 unacked=0 start=$SECONDS
for c in $(seq "$cycles"); do
	win_pin "$c"
	l=$WIN_L x=$WIN_X
	win_set "I $c"
	if ! insmod "$FMM_KO" layout=$((c % 4)) nx=$(((c / 4) % 4)); then
		failed=$((failed + 1))
		win_set "N $c"
		continue
	fi
	win_set "F $c"
	sleep 0.3
	win_set "P $c"
	t0=$SECONDS
	until [ "$(cat "$W/ack" 2>/dev/null)" = "P $c" ]; do
		[ $((SECONDS - t0)) -lt 30 ] || {
			unacked=$((unacked + 1))
			break
		}
		sleep 0.02
	done
	echo "$l" >/proc/sys/vm/flexmmap_layout && echo "$x" >/proc/sys/vm/flexmmap_nx ||
		failed=$((failed + 1))
	# shellcheck disable=SC2086 # $w64 is empty on a 32-bit kernel
	win_retarget "$c" "$l" $w64 $w32
	win_close "$c" "$l" "$x"
	[ $((c % 100)) != 0 ] || t_diag "cycle $c after $((SECONDS - start)) s"
done
touch "$W/stop"
wait $execs $writer
# shellcheck disable=SC2086 # $w64 is empty on a 32-bit kernel
kill -TERM $w64 $w32
rc64=
if [ -n "$w64" ]; then
	wait "$w64"
	rc64=$?
fi
wait $w32
rc32=$?

read -r n straddled printed pfail <"$W/execs"
t_diag "$cycles cycles in $((SECONDS - start)) s; $(cat "$W/writes") sysctl writes accepted; $n probe execs: $(wc -l <"$W/checked") inside a window, $straddled across a window's edge (not counted), $printed started in a transition (--print)"
[ "$unanchored" = 0 ] || t_diag "$unanchored anchored window(s) saw no probe of each kind within 90 s"
win_retry_diags
if [ "$failed" = 0 ] && [ "$pfail" = 0 ] && [ "$unacked" = 0 ]; then
	t_ok "harness: $cycles insmod/rmmod cycles, none failed; the $printed probes exec'd in the transitions ran"
else
	t_fail "harness: $cycles insmod/rmmod cycles, none failed; the probes exec'd in the transitions ran" \
		"failed cycles: $failed; failed --print probes: $pfail; writer never paused: $unacked" \
		"$(tail -n 5 "$W/rmmod.err" 2>/dev/null)" "$(head -n 20 "$W/printfail" 2>/dev/null)"
fi
win_report_windows
[ -z "$w64" ] || t_diag "64-bit worker: $(tail -n 1 "$W/w64")"
t_diag "32-bit worker: $(tail -n 1 "$W/w32")"
if [ -n "$w64" ]; then
	win_report_worker "64-bit worker (3 threads + forks)" "$w64" "$rc64" "$W/w64"
else
	t_skip "64-bit worker (3 threads + forks)" "$FMM_NATIVE_SKIP"
fi
win_report_worker "32-bit worker (2 threads + forks)" $w32 $rc32 "$W/w32"
win_report_counters
