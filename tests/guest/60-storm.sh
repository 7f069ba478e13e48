#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The load/unload storm: FMM_STORM_CYCLES insmod/rmmod cycles (12 here, 1000
# in "make stress") while, all at once,
#  - a loop execs the 64- and 32-bit layout probes, with and without
#    PT_GNU_STACK; each asks the module which layout it got (or, with the
#    module gone, reads it off its first mmap) and checks its layout
#    against it (fmm-layout --expect any); and the NX probes, with, without
#    and with an executable PT_GNU_STACK, each of which asks the module
#    which vm.flexmmap_nx mode its exec ran under and checks the NX rules of
#    that mode (fmm-nx --expect any);
#  - multithreaded 64- and 32-bit processes mmap, write, mremap, verify and
#    munmap in every thread and fork continuously (fmm-sleep);
#  - a writer flips vm.flexmmap_layout and vm.flexmmap_nx through every
#    valid value.
# Pass: no oops/WARN/BUG/lockup/RCU stall, every probe exits 0, every
# worker's self-check of its own mappings holds.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 8
t_smp

P=$FMM_PROBES
cycles=${FMM_STORM_CYCLES:-12}
S=/tmp/storm
rmmod flexmmap 2>/dev/null
rm -rf $S && mkdir -p $S
t_dmesg_mark

"$P/fmm-sleep-64" --threads 3 --fork-loop --pause 2000 </dev/null >$S/w64 2>&1 &
w64=$!
"$P/fmm-sleep-32" --threads 2 --fork-loop --pause 2000 </dev/null >$S/w32 2>&1 &
w32=$!
# probe PROG: exec it with --expect any, its failure to $S/fail; true if the
# module answered its query (both probes print "module query" then).
probe() {
	local out
	out=$("$P/$1" --expect any 2>&1) || printf '=== %s\n%s\n' "$1" "$out" >>$S/fail
	[[ $out == *"module query"* ]]
}
(
	n=0 lq=0 nxq=0
	while [ ! -e $S/stop ]; do
		for v in 64 32 64-nognustack 32-nognustack; do
			! probe "fmm-layout-$v" || lq=$((lq + 1))
			n=$((n + 1))
		done
		for v in 64 32 64-nognustack 32-nognustack 64-execstack 32-execstack; do
			! probe "fmm-nx-$v" || nxq=$((nxq + 1))
			n=$((n + 1))
		done
	done
	echo "$n" >$S/execs
	echo "$lq $nxq" >$S/queries
) &
execs=$!
(
	n=0
	while [ ! -e $S/stop ]; do
		for l in 0 1 2 3; do
			for x in 0 1 2 3; do
				echo $l 2>/dev/null >/proc/sys/vm/flexmmap_layout && n=$((n + 1))
				echo $x 2>/dev/null >/proc/sys/vm/flexmmap_nx && n=$((n + 1))
				sleep 0.02
			done
		done
	done
	echo "$n" >$S/writes
) &
writer=$!

failed=0 start=$SECONDS
for c in $(seq "$cycles"); do
	if ! insmod "$FMM_KO" layout=$((c % 4)) nx=$(((c / 4) % 4)); then
		failed=$((failed + 1))
		continue
	fi
	sleep 0.3
	if [ "$c" = 1 ]; then
		# Two probes certain to run while the module is loaded: the
		# per-process query is exercised however the loop's execs fall.
		for v in fmm-layout-32 fmm-nx-32-nognustack; do
			probe "$v" && echo "$v" >>$S/answered
		done
	fi
	rmmod flexmmap || failed=$((failed + 1))
	[ $((c % 100)) != 0 ] || t_diag "cycle $c after $((SECONDS - start)) s"
done
touch $S/stop
wait $execs $writer
kill -TERM $w64 $w32
wait $w64
rc64=$?
wait $w32
rc32=$?

t_diag "$cycles cycles in $((SECONDS - start)) s; $(cat $S/execs) probe execs; $(cat $S/writes) sysctl writes accepted"
t_eq "$cycles insmod/rmmod cycles, none failed" 0 "$failed"
read -r lq nxq <$S/queries
t_diag "module answers: $lq of the layout probes, $nxq of the NX probes (the rest ran while it was unloaded)"
if [ -s $S/fail ]; then
	t_fail "every probe exec'd during the storm got the layout and NX rules the module says" \
		"$(grep -E '^(===|not ok|# --expect any|# PID)' $S/fail | head -n 40)"
else
	t_ok "every probe exec'd during the storm got the layout and NX rules the module says"
fi
# Without answers the probes would only check "some mode": make sure the
# per-process query itself was exercised.  (How many of the loop's execs
# fall in a loaded window varies: 3 of 12 on the debug kernel.)
t_eq "probes run in cycle 1's loaded window got module answers" \
	"fmm-layout-32 fmm-nx-32-nognustack" "$(cat $S/answered 2>/dev/null | xargs)"
t_diag "64-bit worker: $(tail -n 1 $S/w64)"
t_diag "32-bit worker: $(tail -n 1 $S/w32)"
t_eq "64-bit worker (3 threads + forks): every self-check held" 0 "$rc64"
t_eq "32-bit worker (2 threads + forks): every self-check held" 0 "$rc32"
if grep -q 'thread_iters=[1-9]' $S/w64 && grep -q 'forks=[1-9]' $S/w64; then
	t_ok "the 64-bit worker's threads and forks ran"
else
	t_fail "the 64-bit worker's threads and forks ran" "$(cat $S/w64)"
fi
t_eq "no oops/WARN/BUG/lockup/RCU stall in the kernel log" "" "$(t_kernel_problems)"
