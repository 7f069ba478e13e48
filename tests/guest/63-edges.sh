#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Resource edges under the module: exec with RLIMIT_STACK unlimited and
# tiny, vm.max_map_count reached, the 32-bit address space exhausted, and
# vm.mmap_min_addr at 0 and 65536.  Every probe gets the layout its mode
# promises, running out fails cleanly with ENOMEM, and the kernel stays
# quiet.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 29

P=$FMM_PROBES
rmmod flexmmap 2>/dev/null
t_insmod layout=0
t_dmesg_mark
L=/proc/sys/vm/flexmmap_layout
saved_min=$(cat /proc/sys/vm/mmap_min_addr)
saved_max=$(cat /proc/sys/vm/max_map_count)
saved_oc=$(cat /proc/sys/vm/overcommit_memory)
restore() {
	echo "$saved_min" >/proc/sys/vm/mmap_min_addr
	echo "$saved_max" >/proc/sys/vm/max_map_count
	echo "$saved_oc" >/proc/sys/vm/overcommit_memory
}
trap restore EXIT

probe() { # NAME LIMIT LAYOUT EXPECT: fmm-layout-64 and -32 under ulimit -s LIMIT
	local bits out
	echo "$3" >$L
	for bits in 64 32; do
		if out=$(ulimit -s "$2" && "$P/fmm-layout-$bits" --expect "$4" 2>&1); then
			t_ok "$1: layout $3, $bits-bit: $4"
		else
			t_fail "$1: layout $3, $bits-bit: $4" "$(grep -E '^(not ok|#)' <<<"$out" | head -30)"
		fi
	done
}

# An unlimited stack: x86's mmap_is_legacy() in 6.1 no longer looks at the
# rlimit (the generic one in mm/util.c still does), so the kernel stays
# top-down, with the gap at its 5/6-of-the-space maximum.  A tiny stack
# leaves the gap at its 128 MiB minimum.
probe "ulimit -s unlimited" unlimited 0 topdown
probe "ulimit -s unlimited" unlimited 1 bottomup
probe "ulimit -s unlimited" unlimited 2 topdown
probe "ulimit -s unlimited" unlimited 3 topdown
probe "ulimit -s 256" 256 0 topdown
probe "ulimit -s 256" 256 1 bottomup
probe "ulimit -s 256" 256 2 topdown
probe "ulimit -s 256" 256 3 topdown

for min in 0 65536; do
	echo $min >/proc/sys/vm/mmap_min_addr
	probe "mmap_min_addr=$min" 8192 1 bottomup
	probe "mmap_min_addr=$min" 8192 2 topdown
done
echo "$saved_min" >/proc/sys/vm/mmap_min_addr

# vm.max_map_count reached: the next mapping fails with ENOMEM.
echo 3000 >/proc/sys/vm/max_map_count
for l in 1 2; do
	echo $l >$L
	out=$("$FMM_DIR/bench/fmm-bench" alloc --maps 8000 --iters 1 --samples 1 2>&1)
	rc=$?
	if [ $rc = 1 ] && grep -q 'Cannot allocate memory' <<<"$out"; then
		t_ok "layout $l: vm.max_map_count=3000 reached, mprotect fails with ENOMEM"
	else
		t_fail "layout $l: vm.max_map_count=3000 reached, mprotect fails with ENOMEM" \
			"exit $rc: $out"
	fi
done
echo "$saved_max" >/proc/sys/vm/max_map_count

# The 32-bit address space exhausted, by mmap and by one huge mapping.
echo 1 >/proc/sys/vm/overcommit_memory
for l in 1 2; do
	echo $l >$L
	out=$("$P/fmm-capacity-32" --measure mmap,largest --no-maps 2>&1)
	rc=$?
	total=$(sed -n 's/^mmap_total=//p' <<<"$out")
	if [ $rc = 0 ] && [ "${total:-0}" -gt $((2 << 30)) ]; then
		t_ok "layout $l: 32-bit space exhausted by mmap ($((total >> 20)) MiB), clean exit"
	else
		t_fail "layout $l: 32-bit space exhausted by mmap, clean exit" "exit $rc: $out"
	fi
done

rmmod flexmmap || t_fail "rmmod"
t_eq "no kernel problems" "" "$(t_kernel_problems)"
