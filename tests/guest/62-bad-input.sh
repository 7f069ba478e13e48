#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Bad input to every control file of the module: out-of-range, negative,
# huge and non-numeric values, empty and partial (offset) writes, writes to
# the read-only files, and concurrent writers.  Rejected input changes
# nothing; after concurrent writers the W^X probes are armed exactly when
# the value left is 3.  (Bad module parameters: 31-controls, 33-nx;
# vm.flexmmap_retarget requests: 35-retarget.)
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 10
t_smp

rmmod flexmmap 2>/dev/null
t_insmod layout=2 nx=1
t_dmesg_mark
L=/proc/sys/vm/flexmmap_layout
X=/proc/sys/vm/flexmmap_nx
stat_of() { sed -n "s/^$1 //p" /proc/flexmmap/stats; }

# in_force FILE: a new exec gets what the value loaded (layout=2, nx=1)
# gives, which the stock kernel does not: module-topdown; nx=1's
# READ_IMPLIES_EXEC for a 64-bit program without PT_GNU_STACK.
in_force() {
	case $1 in
	"$L") "$FMM_PROBES/fmm-layout-$FMM_NATIVE" --expect topdown --expect-alloc module-topdown ;;
	*) "$FMM_PROBES/fmm-nx-$FMM_NATIVE-nognustack" --expect 1 ;;
	esac >/dev/null 2>&1
}

BAD=(4 5 99 -1 -2147483648 2147483648 99999999999999999999 abc 1x x1
	'' ' ' '+' '-' 3.0 $'\x01')
for f in $L $X; do
	name=${f##*/}
	keep=$(cat "$f")
	changed=
	accepted=
	for v in "${BAD[@]}"; do
		if printf '%s\n' "$v" >"$f" 2>/dev/null; then
			accepted+="'$v' "
		fi
		[ "$(cat "$f")" = "$keep" ] || changed+="'$v' -> $(cat "$f"); "
		echo "$keep" >"$f"
	done
	t_eq "$name: ${#BAD[@]} bad values all refused" "" "$accepted"
	t_eq "$name: nothing changed by a refused value" "" "$changed"
	printf '' >"$f"
	v1=$(cat "$f")
	# A write at an offset: sysctl ignores it (kernel.sysctl_writes_strict).
	printf '0' | dd of="$f" bs=1 seek=1 conv=notrunc 2>/dev/null
	v2=$(cat "$f")
	in_force "$f"
	prc=$?
	t_eq "$name: an empty write and a write at offset 1 change nothing; $keep is in force (a new exec)" \
		"$keep $keep, exit 0" "$v1 $v2, exit $prc"
done

# "1 2": the kernel's integer parser takes the first value of a list, for
# every int sysctl; ours behave as vm.legacy_va_layout does.
V=/proc/sys/vm/legacy_va_layout
echo 0 >$V
printf '1 2\n' >$V 2>/dev/null
ref=$(cat $V)
echo 0 >$V
echo 0 >$L
printf '1 2\n' >$L 2>/dev/null
"$FMM_PROBES/fmm-layout-$FMM_NATIVE" --expect bottomup --expect-alloc module-bottomup >/dev/null 2>&1
prc=$?
t_eq "flexmmap_layout takes '1 2' as vm.legacy_va_layout does ($ref): a new exec on module-bottomup" \
	"$ref, exit 0" "$(cat $L), exit $prc"

took=
for f in /proc/flexmmap/stats /proc/flexmmap/tasks /proc/flexmmap/self; do
	! echo 1 >"$f" 2>/dev/null || took="$took $f"
done
t_eq "control (read-only files): /proc/flexmmap/stats, tasks and self refuse writes" "" "${took# }"

# Concurrent writers of every valid value, and readers, on every vCPU: each
# nx flip to or from 3 arms or disarms the W^X probes, and under TCG with two
# vCPUs that once oopsed the guest within seconds (a stale int3 of the call
# site's rewrite, taken by kprobes for the probe: probe.c, fmm_kprobe_pre()).
for w in 0 1 2 3; do
	(for _ in $(seq 150); do echo $w >$X; echo $w >$L; done) &
done
bad=0
for _ in $(seq 150); do
	case "$(cat $X) $(cat $L)" in [0-3]\ [0-3]) ;; *) bad=$((bad + 1)) ;; esac
done
wait
t_diag "probe hits through a stale int3, resumed after the call site: $(stat_of stray_int3)"
v=$(cat $X)
a=$(stat_of wx_armed)
echo 3 >$X
t_eq "concurrent writers: every read a valid value; after them (nx left at $v) W^X armed iff 3, and 3 arms it" \
	"0 invalid, $([ "$v" = 3 ] && echo 1 || echo 0) 1" "$bad invalid, $a $(stat_of wx_armed)"
armed=
for v in 3 0 3 2; do
	echo $v >$X
	armed+="$(stat_of wx_armed)"
done
t_eq "nx 3,0,3,2: W^X armed at 3, disarmed at 0 and 2" 1010 "$armed"

rmmod flexmmap || t_fail "rmmod"
