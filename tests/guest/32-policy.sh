#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Policy details: setarch -R gives the same addresses twice, randomisation
# stays on otherwise, a mode change applies to the next exec only, and the
# legacy choice for a binary without PT_GNU_STACK is not inherited by the
# programs it execs (unlike the 2004 patch's ADDR_COMPAT_LAYOUT bit), and a
# fork keeps its parent's MODE (the reason, forced or auto, is in the
# mm's record beside the allocator) whatever the sysctl says by then.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 20

S=/proc/sys/vm/flexmmap_layout
P=$FMM_PROBES
rmmod flexmmap 2>/dev/null
t_insmod layout=3

alloc_of() { awk -v p="$1" '$1 == p { print $3 }' /proc/flexmmap/tasks; }

# Randomisation is the kernel's on its own allocators: each result also
# requires the probe to be on the module's allocator of that mode.
for mode in 1 2 3; do
	echo $mode >$S
	want=module-topdown
	[ "$mode" != 1 ] || want=module-bottomup
	for bits in 64 32; do
		if ! t_bits_run "$bits"; then
			t_skip "layout=$mode ${bits}-bit on $want: setarch -R gives the same addresses twice" "$FMM_NATIVE_SKIP"
			t_skip "layout=$mode ${bits}-bit on $want: mmap base randomised" "$FMM_NATIVE_SKIP"
			continue
		fi
		if aout=$(setarch -R "$P/fmm-layout-$bits" --expect-alloc $want 2>&1); then
			on=$want
		else
			on="not $want: $(grep '^not ok' <<<"$aout" | head -n 1)"
		fi
		a=$(setarch -R "$P/fmm-layout-$bits" --print)
		b=$(setarch -R "$P/fmm-layout-$bits" --print)
		if [ -n "$a" ] && [ "$a" = "$b" ] && [ "$on" = "$want" ]; then
			t_ok "layout=$mode ${bits}-bit on $want: setarch -R gives the same addresses twice"
		else
			t_fail "layout=$mode ${bits}-bit on $want: setarch -R gives the same addresses twice" \
				"allocator: $on" "first:" "$a" "second:" "$b"
		fi
		seen=$(for _ in 1 2 3 4 5; do
			"$P/fmm-layout-$bits" --print | grep '^mmap0='
		done | sort -u | wc -l)
		if [ "$seen" -ge 4 ] && [ "$on" = "$want" ]; then
			t_ok "layout=$mode ${bits}-bit on $want: mmap base randomised ($seen distinct in 5 runs)"
		else
			t_fail "layout=$mode ${bits}-bit on $want: mmap base randomised" \
				"expected >= 4 distinct first mmaps in 5 runs, saw $seen; allocator: $on"
		fi
	done
done

# A mode change applies to the next exec; a running process keeps its own.
echo 1 >$S
"$P/fmm-sleep-$FMM_NATIVE" >/tmp/sleeper.out 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q ready /tmp/sleeper.out && break; sleep 0.1; done
echo 2 >$S
palloc=$(alloc_of $pid)
t_check "after layout 1 -> 2, a new exec is top-down" \
	"$P/fmm-layout-$FMM_NATIVE" --expect topdown --expect-alloc module-topdown --expect-mode flexible
t_eq "the process exec'd under layout 1 stays bottom-up" module-bottomup "$(alloc_of $pid)"
kill -USR1 $pid
sleep 0.5
kill $pid
wait $pid
t_eq "it (on module-bottomup) still maps memory after the change" "0 module-bottomup" "$? $palloc"

# MODE follows fork, not the sysctl: a bash exec'd under layout M sets
# another layout, then forks a subshell (no exec), which must show M's MODE
# (legacy, flexible, auto) on its own PID.  Builtins only: no exec between.
names=(kernel legacy flexible auto)
for mode in 1 2 3; do
	echo $mode >$S
	next=$((mode % 3 + 1))
	# shellcheck disable=SC2016 # expanded by the inner bash
	out=$(bash -c 'read -r p m rest </proc/flexmmap/self; echo "$p $m"
		echo '$next' >'$S'
		(read -r p m rest </proc/flexmmap/self; echo "$p $m $BASHPID")')
	read -r ppid pmode <<<"$(sed -n 1p <<<"$out")"
	read -r cpid cmode cbash <<<"$(sed -n 2p <<<"$out")"
	if [ "$pmode" = "${names[mode]}" ] && [ "$cmode" = "${names[mode]}" ] &&
		[ "$cpid" = "$cbash" ] && [ "$cpid" != "$ppid" ]; then
		t_ok "layout=$mode: a fork made under layout=$next keeps its parent's MODE ${names[mode]}"
	else
		t_fail "layout=$mode: a fork made under layout=$next keeps its parent's MODE ${names[mode]}" \
			"parent: '$ppid $pmode'" "child: '$cpid $cmode' (its BASHPID '$cbash')"
	fi
done

# The legacy choice is per exec: a no-PT_GNU_STACK shell is bottom-up, the
# PT_GNU_STACK program it execs is top-down again.
echo 3 >$S
bb=$(command -v busybox)
if [ -z "$bb" ] || ! "$P/fmm-elfedit" --drop-gnustack "$bb" /tmp/busybox-nognustack >/dev/null 2>&1; then
	t_fail "layout=3: a shell without PT_GNU_STACK is bottom-up" \
		"cannot make a busybox without PT_GNU_STACK"
	t_fail "layout=3: the PT_GNU_STACK program it execs is top-down (no inheritance)" \
		"no parent to run it from"
else
	chmod +x /tmp/busybox-nognustack
	out=$(/tmp/busybox-nognustack sh -c \
		"awk -v p=\$\$ '\$1 == p { print \$3 }' /proc/flexmmap/tasks;
		 exec $P/fmm-layout-$FMM_NATIVE --expect topdown --expect-alloc module-topdown" 2>&1)
	rc=$?
	parent=$(head -n 1 <<<"$out")
	t_eq "layout=3: a shell without PT_GNU_STACK is bottom-up" module-bottomup "$parent"
	if [ $rc = 0 ]; then
		t_ok "layout=3: the PT_GNU_STACK program it execs is top-down (no inheritance)"
	else
		t_fail "layout=3: the PT_GNU_STACK program it execs is top-down (no inheritance)" "$out"
	fi
fi
rmmod flexmmap || t_fail "rmmod"
