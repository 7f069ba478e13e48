#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Routes to executable bytes of a process's own choosing (fmm-wx, 64- and
# 32-bit): mmap, mprotect, SysV shm, userfaultfd fills, shared aliases,
# READ_IMPLIES_EXEC, an RWX PT_LOAD, /proc/self/mem, process_vm_writev,
# ptrace, double maps and written files.  On the stock kernel each is open
# (but process_vm_writev, which the kernel refuses); under W^X (nx=3) each is
# closed but the three out of W^X's scope, for root and for nobody, and the
# denials are counted; back at nx=0 the stock table holds again.  A route
# the kernel lacks (i386: no protection key calls, no userfaultfd minor
# faults) is "absent" and matches either table; a 32-bit kernel skips the
# 64-bit probe.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 14

S=/proc/sys/vm/flexmmap_nx
P=$FMM_PROBES
HP=/proc/sys/vm/nr_hugepages
rmmod flexmmap 2>/dev/null
t_dmesg_mark


# wx_run MODE LABEL [nobody]: both probes against the table of MODE.
wx_run() {
	local mode=$1 label=$2 who=${3:-root} b out rc
	for b in 64 32; do
		if ! t_bits_run "$b"; then
			t_skip "$label: fmm-wx-$b matches the nx=$mode table" "$FMM_NATIVE_SKIP"
			continue
		fi
		if [ "$who" = nobody ]; then
			out=$(cd / && t_as_nobody "$P/fmm-wx-$b" --expect "$mode" 2>&1)
			rc=$?
		else
			out=$("$P/fmm-wx-$b" --expect "$mode" 2>&1)
			rc=$?
		fi
		if [ "$rc" = 0 ]; then
			t_ok "$label: fmm-wx-$b matches the nx=$mode table"
		else
			t_fail "$label: fmm-wx-$b matches the nx=$mode table" \
				"$(grep -E '^(not ok|# [^T])' <<<"$out")"
		fi
	done
}

wx_denials() {
	awk '/^wx_denied_/ { s += $2 } END { print s + 0 }' /proc/flexmmap/stats
}

# uffd-copy-hugetlb needs a free huge page (one at a time: each route runs
# alone); at least 2 as asked, put back as found at the end.
hp_orig=$(cat $HP)
[ "$hp_orig" -ge 2 ] || echo 2 >$HP
hp=$(cat $HP)
if [ "$hp" -ge 2 ]; then
	t_ok "harness: vm.nr_hugepages is at least 2 ($hp)"
else
	t_fail "harness: vm.nr_hugepages is at least 2" "wrote 2, read back $hp" \
		"$(grep -i huge /proc/meminfo)"
fi

# The probes write their files in /tmp and /dev/shm and run from /.
# shellcheck disable=SC2016 # expanded by that sh
if t_as_nobody sh -c 'cd / && for d in /tmp /dev/shm; do
	f=$(mktemp "$d/fmm-wx-check.XXXXXX") && rm -f "$f" || exit 1; done' &&
	t_as_nobody test -x "$P/fmm-wx-64" -a -x "$P/fmm-wx-32" \
		-a -x "$P/fmm-nx-64-rwxtext" -a -x "$P/fmm-nx-32-rwxtext"; then
	t_ok "harness: nobody can create files in /tmp and /dev/shm and run the probes"
else
	t_fail "harness: nobody can create files in /tmp and /dev/shm and run the probes" \
		"$(ls -ld /tmp /dev/shm "$P" "$P"/fmm-wx-* "$P"/fmm-nx-*-rwxtext 2>&1)"
fi

# --- the stock kernel, module not loaded -------------------------------
wx_run 0 "control (stock kernel)"
wx_run 0 "control (stock kernel), as nobody" nobody

# --- W^X ----------------------------------------------------------------
if ! insmod "$FMM_KO" layout=2 nx=3; then
	t_fail "insmod layout=2 nx=3"
	echo "$hp_orig" >$HP
	exit 1
fi
before=$(wx_denials)
wx_run 3 "nx=3"
wx_run 3 "nx=3, as nobody" nobody
after=$(wx_denials)
if [ "$after" -gt "$before" ]; then
	t_ok "nx=3: the routes' denials are counted (wx_denied_*: $before -> $after)"
else
	t_fail "nx=3: the routes' denials are counted (wx_denied_*: $before -> $after)" \
		"$(grep '^wx' /proc/flexmmap/stats)"
fi

echo 0 >$S
if [ "$after" -gt "$before" ]; then
	wx_run 0 "nx=0 after nx=3 closed routes"
else
	for b in 64 32; do
		t_fail "nx=0 after nx=3 closed routes: fmm-wx-$b matches the nx=0 table" \
			"nx=3 refused nothing (wx_denied_*: $before -> $after): nothing to reopen"
	done
fi
rmmod flexmmap
t_eq "harness: rmmod" 0 $?

echo "$hp_orig" >$HP
