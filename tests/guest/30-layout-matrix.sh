#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every vm.flexmmap_layout mode x {64-bit, 32-bit} x {binary with
# PT_GNU_STACK, binary without it, setarch -L, vm.legacy_va_layout=1} gets
# the layout (checked from /proc/self/maps by fmm-layout) and the allocator
# and mode (checked in /proc/flexmmap/tasks) that the rules say.  On a
# 32-bit kernel (the i386 guest) the 32-bit rows run natively with the same
# expectations (the kernel's legacy choice is setarch -L or the sysctl
# alone, as for compat tasks; auto's "no PT_GNU_STACK" is the binary's
# header) and the 64-bit rows are skipped.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 33

rmmod flexmmap 2>/dev/null
t_insmod layout=3
# The MAP_HUGETLB checks of fmm-layout need two free 2 MiB pages (with
# fewer it skips the check, or leaves out the direction): a failed result
# when they are not there, and FMM_NEED_HUGETLB=1 makes the probe fail
# rather than skip.
sysctl -qw vm.nr_hugepages=8
hp_free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
if [ "${hp_free:-0}" -ge 2 ]; then
	t_ok "harness: vm.nr_hugepages=8: at least 2 huge pages free ($hp_free)"
else
	t_fail "harness: vm.nr_hugepages=8: at least 2 huge pages free" "$(grep -i huge /proc/meminfo)"
fi
export FMM_NEED_HUGETLB=1

# expected LAYOUT ALLOC MODE for: $1 mode, $2 variant
expect() {
	local mode=$1 v=$2 kernel_legacy=0
	case $v in setarch-L | legacy_va_layout) kernel_legacy=1 ;; esac
	case $mode in
	0) if [ $kernel_legacy = 1 ]; then echo "bottomup kernel-bottomup kernel"
	   else echo "topdown kernel-topdown kernel"; fi ;;
	1) echo "bottomup module-bottomup legacy" ;;
	2) echo "topdown module-topdown flexible" ;;
	3) if [ "$v" = has-gnu-stack ]; then echo "topdown module-topdown auto"
	   else echo "bottomup module-bottomup auto"; fi ;;
	esac
}

for mode in 0 1 2 3; do
	echo "$mode" >/proc/sys/vm/flexmmap_layout
	for bits in 64 32; do
		for v in has-gnu-stack no-gnu-stack setarch-L legacy_va_layout; do
			read -r layout alloc m < <(expect "$mode" "$v")
			ctl=
			[ "$mode" != 0 ] || ctl="control (layout=0 leaves the kernel's choice): "
			if ! t_bits_run "$bits"; then
				t_skip "${ctl}layout=$mode ${bits}-bit $v: $layout, $alloc, mode $m" \
					"$FMM_NATIVE_SKIP"
				continue
			fi
			bin=$FMM_PROBES/fmm-layout-$bits
			pre=()
			lva=0
			case $v in
			no-gnu-stack) bin=$bin-nognustack ;;
			setarch-L) pre=(setarch -L) ;;
			legacy_va_layout) lva=1 ;;
			esac
			sysctl -qw vm.legacy_va_layout=$lva
			t_check "${ctl}layout=$mode ${bits}-bit $v: $layout, $alloc, mode $m" \
				"${pre[@]}" "$bin" --expect "$layout" \
				--expect-alloc "$alloc" --expect-mode "$m"
			sysctl -qw vm.legacy_va_layout=0
		done
	done
done

echo 3 >/proc/sys/vm/flexmmap_layout
rmmod flexmmap || t_fail "rmmod after the layout matrix"
