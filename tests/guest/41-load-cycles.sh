#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# insmod/rmmod cycles (FMM_CYCLES: 100 in make check, 1000 in make
# stress) while a loop execs 64- and
# 32-bit probes (32-bit only on a 32-bit kernel) and a process forks
# continuously.  Each loaded window pins
# one (layout, nx): layout 1 or 2 with nx 0 or 3, every pair once in any
# four cycles (windows.sh).  A probe exec'd wholly inside a window checks
# fixed expectations: setarch -L fmm-layout on module-bottomup (layout 1,
# ADDR_COMPAT_LAYOUT or not) or module-topdown (layout 2, forced flexible
# overrides it), fmm-nx under the window's nx (3: W^X denials must be
# EACCES).  One exec'd while unloaded must get the kernel's layout
# (bottom-up, for setarch -L) and nx=0 rules: a control, the stock kernel
# passes it too.  The forker is re-targeted onto the window's allocator in
# every window; rmmod puts it back on the kernel's.  Also: no missed probe
# hit, no stray int3, no oops or WARN.
#
# Runs with both vCPUs online (t_smp).  Under QEMU's default multi-threaded
# TCG, 3 of 5 runs once ended with a vCPU spinning for ever on the int3 of
# a kprobe at "mm_init+0" long after the patch was done (stale translated
# code); qemu/run now uses single-threaded TCG, which keeps patching coherent.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
W=/tmp/cycles
# shellcheck source=SCRIPTDIR/windows.sh
. "$(dirname "$0")/windows.sh"
t_need_root
t_plan 8

t_smp

P=$FMM_PROBES
cycles=${FMM_CYCLES:-100}
rmmod flexmmap 2>/dev/null
win_init
t_dmesg_mark

specs=()
for b in $FMM_BITS; do
	specs+=("layout bottomup setarch -L $P/fmm-layout-$b" "nx $P/fmm-nx-$b")
done
win_exec_loop "${specs[@]}" &
loop=$!
"$P/fmm-sleep-$FMM_NATIVE" --fork-loop </dev/null >"$W/forker" 2>&1 &
forker=$!

failed=0 unanchored=0 start=$SECONDS
for c in $(seq "$cycles"); do
	win_pin "$c"
	l=$WIN_L x=$WIN_X
	win_set "I $c"
	if ! insmod "$FMM_KO" layout="$l" nx="$x"; then
		failed=$((failed + 1))
		win_set "N $c"
		continue
	fi
	win_set "P $c"
	win_retarget "$c" "$l" $forker
	win_close "$c" "$l" "$x"
	[ $((c % 50)) != 0 ] || t_diag "cycle $c after $((SECONDS - start)) s"
done
touch "$W/stop"
wait $loop
kill -TERM $forker
wait $forker
frc=$?

read -r n straddled printed pfail <"$W/execs"
t_diag "$cycles cycles in $((SECONDS - start)) s; $n probe execs: $(wc -l <"$W/checked") inside a window, $straddled across a window's edge (not counted), $printed started in a transition (--print)"
[ "$unanchored" = 0 ] || t_diag "$unanchored anchored window(s) saw no probe of each kind within 90 s"
win_retry_diags
if [ "$failed" = 0 ] && [ "$pfail" = 0 ]; then
	t_ok "harness: $cycles insmod/rmmod cycles, none failed; the $printed probes exec'd in the transitions ran"
else
	t_fail "harness: $cycles insmod/rmmod cycles, none failed; the probes exec'd in the transitions ran" \
		"failed cycles: $failed; failed --print probes: $pfail" \
		"$(tail -n 5 "$W/rmmod.err" 2>/dev/null)" "$(head -n 20 "$W/printfail" 2>/dev/null)"
fi
win_report_windows
win_report_worker "the process forking throughout" $forker $frc "$W/forker"
win_report_counters
