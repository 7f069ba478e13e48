#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Fault injection on the debug kernel (make check KERNEL=source, built with
# CONFIG_FAULT_INJECTION, FAILSLAB, FAIL_PAGE_ALLOC): with the module
# loaded (layout=2), a process forking on its allocator and 64- and 32-bit
# probes exec'd in a loop, fmm-failnth-64 fails one allocation at each
# point (or at points spread over the range) of: a fork of a process on the
# module's allocator (pgd, dup_mmap, ...), the exec of a probe, a
# re-targeting write to vm.flexmmap_retarget, rmmod and insmod.  Then the
# failslab/fail_page_alloc task filter (/proc/PID/task/TID/make-it-fail)
# fails 5% of the allocations of a forking process while it is re-targeted.
# At least FMM_FI_MIN (500) failures are injected.  Each operation fails
# cleanly or succeeds: no half-loaded or half-unloaded module, every unload
# within 30 s, /proc/flexmmap/stats never negative, every probe and child
# self-check holds, the processes under injection still work afterwards,
# and no WARN, BUG, KASAN, lockdep or DEBUG_VM report and no new kmemleak
# suspect (a report an injected failure itself causes, the allocation
# failure warning with its stack, is set aside).  The stock kernel has no
# fail-nth: skipped there, as 05 and 95 are.  The source kernel's mmap
# layout hook has no set of tracked mms (layout-hook.c): the module allocates
# nothing of its own after insmod, so its allocations are the ones of
# loading and of the sysctl write.  About 12 minutes under TCG on the debug
# kernel since the insmod sweep runs each of its last 150 points (696 s
# with two other guests on the machine; 281-466 s before).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root

# shellcheck source=SCRIPTDIR/debug.sh
. "$(dirname "$0")/debug.sh"
if [ ! -e /proc/self/fail-nth ]; then
	t_debug_kernel || t_skip_all "not a debug kernel (no fault injection, /proc/self/fail-nth)"
	t_fail "the debug kernel has fault injection (/proc/self/fail-nth)" \
		"CONFIG_FAULT_INJECTION missing? see scripts/kernel.config"
	exit 1
fi
# 37 results: setup 1, fork 2, exec 2x2, retarget 4x2, their checks 2,
# rmmod 2+1+1, insmod 2+1+1, exit 1, task filter 3+1, the end 7.
t_plan 37

P=$FMM_PROBES
# The sweeps read their programs and the module with a failure armed: from
# tmpfs, not the 9p share (after an injected failure in the 9p client, files
# of /flexmmap were seen to fail with EINVAL on open and exec).
S=$(mktemp -d /dev/shm/fi.XXXXXX)
cp "$P/fmm-failnth-64" "$P/fmm-layout-64" "$P/fmm-layout-32" "$FMM_KO" "$S/"
H=$S/fmm-failnth-64
KO=$S/${FMM_KO##*/}
R=/proc/sys/vm/flexmmap_retarget
DBG=/sys/kernel/debug
FS=$DBG/failslab
FP=$DBG/fail_page_alloc
min=${FMM_FI_MIN:-500}
total=0
start=$SECONDS
rmmod flexmmap 2>/dev/null
rm -f /tmp/fi.stop /tmp/fi.fail
t_dmesg_mark

# Fail-nth counts only allocations that the two capabilities do not ignore:
# sleeping ones too, pages of every order.  Probability 0: nothing fails
# but what fail-nth or a task filter asks for.
fi_set() { # KNOB VALUE: in both failslab/ and fail_page_alloc/
	echo "$2" >"$FS/$1" && echo "$2" >"$FP/$1"
}
fi_reset() {
	fi_set probability 0
	fi_set task-filter N
	fi_set ignore-gfp-wait Y
	fi_set verbose 2
	fi_set times 1
	echo 1 >"$FP/min-order"
	echo Y >"$FP/ignore-gfp-highmem"
}
cleanup() {
	fi_reset
	touch /tmp/fi.stop
	[ -z "${forker:-}" ] || kill "$forker" 2>/dev/null
	rm -rf "$S"
}
t_atexit cleanup
if fi_set probability 0 && fi_set interval 1 && fi_set space 0 &&
	fi_set times -1 && fi_set verbose 0 && fi_set ignore-gfp-wait N &&
	echo 0 >"$FP/min-order" && echo N >"$FP/ignore-gfp-highmem"; then
	t_ok "failslab and fail_page_alloc set up (debugfs)"
else
	t_fail "failslab and fail_page_alloc set up (debugfs)"
	exit 1
fi

# kmemleak's suspects before this file: only new ones count (95 checks all).
kml_before=
if [ -w "$T_KMEMLEAK" ]; then
	kml_before=$(t_kmemleak_scan | grep '^unreferenced object')
fi

# rmmod refuses ("in use") while a task is inside the module's allocator:
# the kernel's trampoline holds a module reference around each call.  Retry
# for 30 s at most; the refusals are counted.
unload() { # NAME
	local t0=$SECONDS busy=0
	until rmmod flexmmap 2>/dev/null; do
		busy=$((busy + 1))
		[ $((SECONDS - t0)) -lt 30 ] || break
		sleep 0.2
	done
	if [ ! -e /sys/module/flexmmap ]; then
		t_ok "$1 within 30 s ($((SECONDS - t0)) s)"
	else
		t_fail "$1 within 30 s" "still loaded after $((SECONDS - t0)) s"
	fi
	[ "$busy" = 0 ] || t_diag "rmmod refused $busy time(s): module in use"
}

neg_stats() { [ ! -r /proc/flexmmap/stats ] || awk '$2 ~ /^-/' /proc/flexmmap/stats; }

# One result per fmm-failnth run; its "injected=" added to $total.
inject() { # NAME ARGS...
	local name=$1 out rc n
	shift
	out=$("$H" "$@" 2>&1)
	rc=$?
	n=$(sed -n 's/.* injected=\([0-9]*\) .*/\1/p' <<<"$out" | tail -n 1)
	total=$((total + ${n:-0}))
	if [ "$rc" = 0 ] && [ "${n:-0}" -gt 0 ]; then
		t_ok "$name: failed cleanly or succeeded at every point"
		t_diag "$(grep 'points=' <<<"$out")"
	else
		t_fail "$name: failed cleanly or succeeded at every point" \
			"exit status $rc, injected ${n:-none}" "$out"
	fi
	t_eq "$name: no negative counter in /proc/flexmmap/stats" "" "$(neg_stats)"
}

t_insmod layout=2

# Beside it all: a process forking on the module's allocator, and execs.
"$P/fmm-sleep-64" --fork-loop --threads 1 </dev/null >/tmp/fi.forker 2>&1 &
forker=$!
(
	n=0
	while [ ! -e /tmp/fi.stop ]; do
		for bits in 64 32; do
			if ! out=$("$P/fmm-layout-$bits" --expect topdown 2>&1); then
				printf '%s\n' "$out" >>/tmp/fi.fail
			fi
			n=$((n + 1))
		done
	done
	echo "$n" >/tmp/fi.execs
) &
loop=$!

# --- fork, exec ----------------------------------------------------------
inject "fork" --max 300 fork
for bits in 64 32; do
	inject "exec of fmm-layout-$bits" --max 80 exec "$S/fmm-layout-$bits" \
		--expect-alloc module-topdown --expect-mode flexible
done

# --- re-targeting a running process ---------------------------------------
coproc W { exec "$P/fmm-sleep-64" --threads 1; }
read -r -t 30 line <&"${W[0]}" || line=
wpid=${line#ready }
[[ $line == ready* ]] || { t_fail "fmm-sleep-64 started" "saw '$line'"; exit 1; }
for mode in legacy flexible kernel flexible; do
	inject "retarget to $mode" write $R "$wpid $mode"$'\n'
done
worker_check() { # NAME: one "check" answered "ok N"
	local a
	echo check >&"${W[1]}"
	while read -r -t 30 a <&"${W[0]}"; do
		[[ $a =~ ^(ok|fail)\ [0-9]+ ]] && break
	done
	t_eq "$1" ok "${a%% *}"
}
worker_check "the re-targeted process's self-check holds"
echo "$wpid flexible" >$R
t_eq "it is on the module's top-down allocator" "flexible module-topdown" \
	"$(awk -v p="$wpid" '$1 == p { print $2, $3 }' /proc/flexmmap/tasks)"

# --- rmmod and insmod -----------------------------------------------------
inject "rmmod" --max 40 rmmod flexmmap "$KO" layout=2
worker_check "after rmmod under injection the process's self-check holds"
unload "rmmod after the injected unloads"
# Every one of the last 150 points: the module's init (the kallsyms look-up's
# kprobe once failed to disarm there, at one point of 426, and crashed).
inject "insmod" --last 150 insmod "$KO" layout=2
insmod "$FMM_KO" layout=2
t_eq "insmod after the injected loads" 0 $?
worker_check "after insmod under injection the process's self-check holds"
echo quit >&"${W[1]}"
wait "$wpid"
t_eq "the re-targeted process exits 0" 0 $?

# --- the task filter: a forking process fails 5% of its allocations --------
coproc T { exec "$P/fmm-sleep-64" --fork-loop; }
read -r -t 30 line <&"${T[0]}" || line=
tpid=${line#ready }
[[ $line == ready* ]] || { t_fail "fmm-sleep-64 --fork-loop started" "saw '$line'"; exit 1; }
fi_set times 100000
fi_set task-filter Y
fi_set probability 5
for f in /proc/"$tpid"/task/*/make-it-fail; do echo 1 >"$f"; done
for mode in legacy flexible kernel flexible legacy flexible; do
	echo "$tpid $mode" >$R || t_fail "retarget $tpid $mode under the task filter"
	sleep 1
done
for f in /proc/"$tpid"/task/*/make-it-fail; do echo 0 >"$f"; done
fi_set probability 0
fi_set task-filter N
n=$((200000 - $(cat "$FS/times") - $(cat "$FP/times")))
total=$((total + n))
if [ "$n" -gt 0 ]; then
	t_ok "task filter: $n allocations of a forking process failed"
else
	t_fail "task filter: allocations of a forking process failed" "$n"
fi
echo check >&"${T[1]}"
a=
while read -r -t 30 a <&"${T[0]}"; do
	[[ $a =~ ^(ok|fail)\ [0-9]+ ]] && break
done
t_eq "after the task filter the process's self-check holds" ok "${a%% *}"
t_eq "it is still on the module's top-down allocator" "flexible module-topdown" \
	"$(awk -v p="$tpid" '$1 == p { print $2, $3 }' /proc/flexmmap/tasks)"
echo stats >&"${T[1]}"
read -r -t 30 a <&"${T[0]}"
t_diag "its own count: $a"
echo quit >&"${T[1]}"
wait "$tpid"
t_eq "no negative counter in /proc/flexmmap/stats" "" "$(neg_stats)"

# --- the end --------------------------------------------------------------
touch /tmp/fi.stop
wait $loop
kill -TERM $forker
wait $forker
t_eq "the process forking throughout saw no failure" 0 $?
t_diag "$(tail -n 1 /tmp/fi.forker)"
t_diag "execs checked throughout: $(cat /tmp/fi.execs)"
if [ -s /tmp/fi.fail ]; then
	t_fail "every exec throughout got a valid layout" "$(head -n 40 /tmp/fi.fail)"
else
	t_ok "every exec throughout got a valid layout"
fi
unload "the last rmmod"

if [ "$total" -ge "$min" ]; then
	t_ok "at least $min failures injected ($total)"
else
	t_fail "at least $min failures injected" "only $total"
fi

# An injected failure of vmalloc() logs "vmalloc error" with a stack trace:
# the shared filter sets those reports aside and counts everything else.
problems() { t_kernel_problems --also "$T_KASAN|$T_LOCKDEP|$T_DEBUG_VM"; }
t_eq "no WARN, BUG, KASAN, lockdep or DEBUG_VM report in the kernel log" "" \
	"$(problems | head -n 20)"
t_diag "allocation failure reports set aside: $(t_dmesg_since | grep -cE 'page allocation failure|vmalloc error')"
t_eq "kmemleak still on" "" "$(t_dmesg_since | grep -i 'kmemleak.*disabl')"
if [ -w "$T_KMEMLEAK" ]; then
	t_kmemleak_scan >/tmp/fi.kmemleak
	new=$(grep '^unreferenced object' /tmp/fi.kmemleak | grep -vxF -e "${kml_before:-none}")
	if [ -z "$new" ]; then
		t_ok "kmemleak: no new suspect"
	else
		t_fail "kmemleak: no new suspect" "$new" "$(head -n 40 /tmp/fi.kmemleak)"
	fi
fi
t_diag "took $((SECONDS - start)) s"
