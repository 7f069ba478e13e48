#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The control surface: bad sysctl input is rejected and changes nothing,
# bad module parameters make insmod fail with a message naming them, and
# modinfo describes every parameter.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 30

S=/proc/sys/vm/flexmmap_layout
rmmod flexmmap 2>/dev/null

params=$(modinfo -F parm "$FMM_KO")
if grep -q '^layout:.*legacy.*flexible' <<<"$params"; then
	t_ok "modinfo describes layout="
else
	t_fail "modinfo describes layout=" "saw: $params"
fi

for bad in 4 -1 7 99999999999 abc; do
	t_dmesg_mark
	if insmod "$FMM_KO" layout="$bad" 2>/dev/null; then
		rmmod flexmmap
		t_fail "insmod layout=$bad refused" "insmod succeeded"
	elif t_dmesg_since | grep -q "layout=$bad"; then
		t_ok "insmod layout=$bad refused, log names the parameter"
	else
		t_fail "insmod layout=$bad refused, log names the parameter" \
			"$(t_dmesg_since)"
	fi
done

# alloc_now: the allocator a program exec'd now gets (fmm-layout-64, a
# PT_GNU_STACK program): what the value read back does, not only says.
alloc_now() {
	"$FMM_PROBES/fmm-layout-$FMM_NATIVE" --expect-alloc kernel-topdown 2>&1 |
		sed -n 's/.*allocator of PID [0-9]*: expected [a-z-]*, saw \([a-z-]*\).*/\1/p'
}
want_alloc=(kernel-topdown module-bottomup module-topdown module-topdown)

t_insmod layout=2
t_eq "layout= sets the initial value, and a new exec follows it" \
	"2 module-topdown" "$(cat $S) $(alloc_now)"

# Each rejected write must fail (EINVAL) and leave the old value, which the
# next exec still follows.
for bad in 4 -1 abc '' 2x 3.5 ' '; do
	echo 1 >$S
	if printf '%s\n' "$bad" >$S 2>/dev/null; then
		t_fail "write '$bad' rejected" "the write succeeded"
	else
		t_eq "write '$bad' rejected, value stays 1 (a new exec: module-bottomup)" \
			"1 module-bottomup" "$(cat $S) $(alloc_now)"
	fi
done
printf '' >$S
t_eq "zero-length write changes nothing (a new exec: module-bottomup)" \
	"1 module-bottomup" "$(cat $S) $(alloc_now)"
for good in 0 1 2 3; do
	echo "$good" >$S
	ctl=
	[ "$good" != 0 ] || ctl="control (layout 0 leaves the kernel's choice): "
	t_eq "${ctl}write $good accepted, a new exec gets ${want_alloc[good]}" \
		"$good ${want_alloc[good]}" "$(cat $S) $(alloc_now)"
done

# Writers without CAP_SYS_ADMIN in the initial user namespace are refused
# and change nothing: nobody, root in a user namespace (as root and as
# nobody), root without the capability. Readers may read.  The value left
# must still act: for the layout a new exec's allocator, for nx=2 the
# strict rules for a 32-bit program without PT_GNU_STACK (stock gives it
# READ_IMPLIES_EXEC).
echo 2 >$S
echo 2 >/proc/sys/vm/flexmmap_nx
t_nx_enforced || t_diag "NX is not enforced (code on a rw stack runs): nx=2's rules checked on READ_IMPLIES_EXEC and /proc/self/maps only"
nx_now() { t_nx_rules 2 "$FMM_PROBES/fmm-nx-32-nognustack" && echo "mode 2 rules"; }
for f in flexmmap_layout flexmmap_nx; do
	v=$(cat /proc/sys/vm/$f)
	for who in nobody userns nobody-userns nocap; do
		case $who in
		nobody) run=(setpriv --reuid=65534 --regid=65534 --clear-groups) ;;
		userns) run=(unshare -U -r) ;;
		nobody-userns) run=(setpriv --reuid=65534 --regid=65534 --clear-groups unshare -U -r) ;;
		nocap) run=(setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin) ;;
		esac
		# The refusal must come from the open or the write (dash says
		# "cannot create ...: Permission denied" or, for any failed
		# write, "echo: I/O error"), not from a wrapper that could not
		# start (unshare on a kernel without user namespaces).
		# shellcheck disable=SC2016 # expanded by the inner sh
		if out=$("${run[@]}" sh -c 'echo 1 >"$1"' sh "/proc/sys/vm/$f" 2>&1); then
			t_fail "vm.$f: a write by $who is refused" "the write succeeded"
		elif ! grep -qxE 'sh: 1: (cannot create .*: Permission denied|echo: echo: I/O error)' <<<"$out"; then
			t_fail "vm.$f: a write by $who is refused" "not refused by the write: $out"
		elif [ "$f" = flexmmap_layout ]; then
			t_eq "vm.$f: a write by $who is refused, value stays $v (a new exec: ${want_alloc[v]}), $who can read it" \
				"$v ${want_alloc[v]}, read $v" \
				"$(cat /proc/sys/vm/$f) $(alloc_now), read $("${run[@]}" cat /proc/sys/vm/$f 2>&1)"
		else
			t_eq "vm.$f: a write by $who is refused, value stays $v (a new exec: mode 2 rules), $who can read it" \
				"$v mode 2 rules, read $v" \
				"$(cat /proc/sys/vm/$f) $(nx_now), read $("${run[@]}" cat /proc/sys/vm/$f 2>&1)"
		fi
	done
done

# Concurrent writers of valid values (1-3: the value left must show in a
# module allocator): the value is always a valid one.
for w in 1 2 3; do
	(for _ in $(seq 200); do echo $w >$S; done) &
done
bad=0
for _ in $(seq 200); do
	case $(cat $S) in 0 | 1 | 2 | 3) ;; *) bad=$((bad + 1)) ;; esac
done
wait
v=$(cat $S)
t_eq "concurrent writers: every read is a valid mode; a new exec follows the value left ($v)" \
	"0 ${want_alloc[v]}" "$bad $(alloc_now)"

stats=$(cat /proc/flexmmap/stats)
if grep -q '^missed_setup_arg_pages [0-9]' <<<"$stats" &&
	grep -q '^mms_module [0-9]' <<<"$stats"; then
	t_ok "/proc/flexmmap/stats reports counters and missed probe hits"
else
	t_fail "/proc/flexmmap/stats reports counters and missed probe hits" "$stats"
fi
rmmod flexmmap || t_fail "rmmod"
t_check "control (stock after rmmod): the sysctl is gone" test ! -e $S
