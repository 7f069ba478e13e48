#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# track_max (stock 6.1's backend, track.c): the set of mms on the module's
# allocators has its entries allocated at load, because the exec and fork
# probes that fill it may not allocate (PREEMPT_RT).  Out-of-range values
# fail insmod with a message; with track_max=64, of 100 programs exec'd
# under layout=2 at most 64 get the module's allocator, the rest stay on
# the kernel's and are counted as fallbacks, one log line says why; the
# entries come back when those programs exit; rmmod puts everything back.
# By default it has as many entries as the kernel's default threads-max.
# Skipped where the module tracks no mms (the layout hook, 6.10+).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root

stat_of() { awk -v k="$1" '$1 == k { print $2 }' /proc/flexmmap/stats; }

rmmod flexmmap 2>/dev/null
t_insmod
hook=$(stat_of layout_hook)
if [ -n "$hook" ]; then
	rmmod flexmmap
	t_skip_all "no tracked mms: this kernel's backend is $hook"
fi
t_plan 13
# The kprobe backend: the parameter must be there, by default the kernel's
# default threads-max, computed from the RAM as fork.c does at boot (the
# guest's sysctl is left as the kernel set it; RAM freed since boot, the
# initramfs's, makes the module's figure a little larger).
tmax=$(cat /proc/sys/kernel/threads-max)
got=$(cat /sys/module/flexmmap/parameters/track_max 2>&1)
t_check "track_max defaults to the kernel's threads-max, within 2% ($got, $tmax)" \
	test "$got" -ge "$tmax" -a "$((got * 50))" -le "$((tmax * 51))"
rmmod flexmmap

mode_of() { awk -v p="$1" '$1 == p { print $2 }' /proc/flexmmap/tasks; }
# Until every one of the pids runs sleep (exec done), at most 60 s.
wait_execd() {
	local p n i
	for i in $(seq 120); do
		n=0
		for p in "${pids[@]}"; do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" != sleep ] || n=$((n + 1))
		done
		[ "$n" != "${#pids[@]}" ] || return 0
		sleep 0.5
	done
	t_diag "only $n of ${#pids[@]} programs exec'd after 60 s"
}

for bad in 0 63 4194305 abc; do
	t_dmesg_mark
	if insmod "$FMM_KO" track_max="$bad" 2>/dev/null; then
		rmmod flexmmap
		t_fail "insmod track_max=$bad refused" "insmod succeeded"
	elif t_dmesg_since | grep -q "track_max=$bad: must be 64 to 4194304"; then
		t_ok "insmod track_max=$bad refused, the log gives the range"
	else
		t_fail "insmod track_max=$bad refused, the log gives the range" \
			"$(t_dmesg_since | tail -n 3)"
	fi
done

t_dmesg_mark
t_insmod track_max=64 layout=2
t_eq "track_max reads back" 64 "$(cat /sys/module/flexmmap/parameters/track_max)"
fb0=$(stat_of fallback)
pids=()
for _ in $(seq 100); do
	sleep 600 &
	pids+=($!)
done
# shellcheck disable=SC2016 # expanded at exit
t_atexit 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null'
wait_execd
module=0 kernel=0 other=0
for p in "${pids[@]}"; do
	case $(mode_of "$p") in
	flexible) module=$((module + 1)) ;;
	kernel) kernel=$((kernel + 1)) ;;
	*) other=$((other + 1)) ;;
	esac
done
fb=$(($(stat_of fallback) - fb0))
t_diag "100 sleepers: $module on the module's allocator, $kernel on the kernel's, $other neither; fallback +$fb; mms_module $(stat_of mms_module)"
t_check "at most 64 on the module's allocator, and some (got $module)" \
	test "$module" -le 64 -a "$module" -ge 32
t_check "the rest on the kernel's, none lost (kernel $kernel, neither $other)" \
	test "$((module + kernel))" = 100 -a "$other" = 0
t_check "each of them counted as a fallback (fallback +$fb >= $kernel)" \
	test "$fb" -ge "$kernel" -a "$kernel" -gt 0
t_eq "one log line names track_max" 1 \
	"$(t_dmesg_since | grep -c 'more than track_max=64 processes')"

kill "${pids[@]}" 2>/dev/null
wait 2>/dev/null
pids=()
for _ in $(seq 40); do
	sleep 600 &
	pids+=($!)
done
wait_execd
module=0
for p in "${pids[@]}"; do
	[ "$(mode_of "$p")" != flexible ] || module=$((module + 1))
done
t_eq "once they exit their entries serve 40 new programs" 40 "$module"

if rmmod flexmmap; then
	t_ok "rmmod with 40 tracked programs running"
else
	t_fail "rmmod with 40 tracked programs running"
fi
problems=$(t_kernel_problems)
t_eq "no kernel problem in the log" "" "$problems"
