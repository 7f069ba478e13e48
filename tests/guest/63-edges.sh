#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Resource edges under the module: exec with RLIMIT_STACK unlimited and
# tiny, vm.max_map_count reached, the 32-bit address space exhausted, and
# vm.mmap_min_addr at 0 and 65536.  Every probe gets the layout its mode
# promises and says (/proc/flexmmap/self) it is on the module's allocator,
# running out fails cleanly with ENOMEM on the module's allocator, the 32-bit
# space holds what each allocator can reach, and the kernel stays quiet.
# Layout 0 leaves the kernel's choice: its results are named as controls
# (stock behaviour, which a module doing nothing passes too).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 28

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
t_atexit restore

# probe NAME LIMIT LAYOUT EXPECT ALLOC: fmm-layout-64 and -32 under ulimit -s
# LIMIT get the EXPECT layout on the ALLOC allocator.
probe() {
	local bits out name
	echo "$3" >$L
	for bits in 64 32; do
		name="$1: layout $3, $bits-bit: $4, $5"
		[ "$3" != 0 ] || name="control (stock behaviour): $name"
		if ! t_bits_run "$bits"; then
			t_skip "$name" "$FMM_NATIVE_SKIP"
		elif out=$(ulimit -s "$2" && "$P/fmm-layout-$bits" --expect "$4" --expect-alloc "$5" 2>&1); then
			t_ok "$name"
		else
			t_fail "$name" "$(grep -E '^(not ok|#)' <<<"$out" | head -30)"
		fi
	done
}

# An unlimited stack: x86's mmap_is_legacy() in 6.1 no longer looks at the
# rlimit (the generic one in mm/util.c still does), so the kernel stays
# top-down, with the gap at its 5/6-of-the-space maximum.  A tiny stack
# leaves the gap at its 128 MiB minimum.
for lim in unlimited 256; do
	probe "ulimit -s $lim" $lim 0 topdown kernel-topdown
	probe "ulimit -s $lim" $lim 1 bottomup module-bottomup
	probe "ulimit -s $lim" $lim 2 topdown module-topdown
	probe "ulimit -s $lim" $lim 3 topdown module-topdown
done

for min in 0 65536; do
	echo $min >/proc/sys/vm/mmap_min_addr
	probe "mmap_min_addr=$min" 8192 1 bottomup module-bottomup
	probe "mmap_min_addr=$min" 8192 2 topdown module-topdown
done
echo "$saved_min" >/proc/sys/vm/mmap_min_addr

# vm.max_map_count reached: the next mapping fails with ENOMEM.  fmm-bench
# refuses (exit 3) to run on any allocator but the one named.
echo 3000 >/proc/sys/vm/max_map_count
for l in 1 2; do
	echo $l >$L
	alloc=module-topdown
	[ $l != 1 ] || alloc=module-bottomup
	out=$("$FMM_DIR/bench/fmm-bench" alloc --maps 8000 --iters 1 --samples 1 \
		--expect-alloc $alloc 2>&1)
	rc=$?
	if [ $rc = 1 ] && grep -q 'Cannot allocate memory' <<<"$out"; then
		t_ok "layout $l: vm.max_map_count=3000 reached on $alloc, mprotect fails with ENOMEM"
	else
		t_fail "layout $l: vm.max_map_count=3000 reached on $alloc, mprotect fails with ENOMEM" \
			"exit $rc: $out"
	fi
done
echo "$saved_max" >/proc/sys/vm/max_map_count

# The 32-bit address space exhausted, by mmap and by one huge mapping, on
# the module's allocator, each within what that allocator can reach: the
# legacy one never maps below its base and must fill 3/4 of the space above
# it (a compat task: base 0x55555000, at most ~2730 MiB, so over 2 GiB; a
# 32-bit kernel: base 1 GiB of 3, over 1.5 GiB), the flexible one fills the
# hole below it too, over 3/4 of the whole space (3 GiB of 4, 2.25 GiB of
# 3: more than the legacy one can reach; stock top-down reaches as much:
# the allocator check tells them apart).
echo 1 >/proc/sys/vm/overcommit_memory
for l in 1 2; do
	echo $l >$L
	out=$("$P/fmm-capacity-32" --measure mmap,largest --no-maps 2>&1)
	rc=$?
	kv() { sed -n "s/^$1=//p" <<<"$out"; }
	total=$(kv mmap_total)
	lowest=$(kv mmap_lowest)
	base=$(kv legacy_base)
	space=$(kv task_size)
	alloc=$(kv fmm_alloc)
	why=
	[ $rc = 0 ] || why+="exit $rc; "
	[ -n "$space" ] && [ -n "$base" ] || why+="no task_size or legacy_base; "
	space=$((space)) base=$((base))
	if [ $l = 1 ]; then
		name="layout 1: 32-bit space exhausted by mmap on module-bottomup, none of it below the legacy base"
		[ "$alloc" = module-bottomup ] || why+="allocator $alloc; "
		[ -n "$lowest" ] && [ $((lowest)) -ge "$base" ] ||
			why+="lowest mmap ${lowest:-?} below the legacy base $base; "
		[ "${total:-0}" -gt $(((space - base) * 3 / 4)) ] ||
			why+="only ${total:-0} bytes, not 3/4 of the $((space - base)) above the legacy base; "
	else
		name="layout 2: 32-bit space exhausted by mmap on module-topdown, over 3/4 of it, below the legacy base too"
		[ "$alloc" = module-topdown ] || why+="allocator $alloc; "
		[ -n "$lowest" ] && [ $((lowest)) -lt "$base" ] ||
			why+="lowest mmap ${lowest:-?} not below the legacy base $base; "
		[ "${total:-0}" -gt $((space * 3 / 4)) ] ||
			why+="only ${total:-0} bytes, not 3/4 of the $space of the space; "
	fi
	if [ -z "$why" ]; then
		t_ok "$name ($((total >> 20)) MiB, lowest $lowest), clean exit"
	else
		t_fail "$name" "$why" "$out"
	fi
done

rmmod flexmmap || t_fail "rmmod"
