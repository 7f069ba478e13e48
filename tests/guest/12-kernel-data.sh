#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The kernel's data the module needs but no stock kernel exports
# (stack_guard_gap, mmap_min_addr), found two ways (module/ksyms.c):
# through kallsyms, and, where kallsyms lists no data (CONFIG_KALLSYMS_ALL=n:
# Debian's 686-pae) or with kallsyms_data=0, from /proc (the boot command
# line; a kprobe on vm.mmap_min_addr's handler catches its table).  Both ways
# must give what the kernel uses, and the second must follow later writes to
# vm.mmap_min_addr.  A load that cannot read /proc fails with a message and
# leaves nothing behind.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root

rmmod flexmmap 2>/dev/null
stat_of() { awk -v k="$1" '$1 == k { print $2 }' /proc/flexmmap/stats; }

t_insmod
if [ "$(stat_of kernel_data)" = exported ]; then
	rmmod flexmmap
	t_skip_all "the kernel exports stack_guard_gap and mmap_min_addr (patches/): nothing is looked up"
fi
t_plan 10

# What kallsyms lists: data symbols only with CONFIG_KALLSYMS_ALL.
if grep -q ' [dDbB] stack_guard_gap$' /proc/kallsyms; then
	want=kallsyms
else
	want=proc
fi
t_eq "by default the kernel's data comes from $want" "$want" "$(stat_of kernel_data)"

# stack_guard_gap: the last stack_guard_gap=N (a number alone) among the
# kernel's parameters, else 256 pages.
gap=$((256 * 4096))
read -r -a args < <(sed 's/ -- .*//' /proc/cmdline)
for a in "${args[@]}"; do
	case $a in
	stack_guard_gap=*) v=${a#stack_guard_gap=}; [[ $v =~ ^[0-9]+$ ]] && gap=$((v * 4096)) ;;
	esac
done
default_gap=$(stat_of stack_guard_gap)
default_min=$(stat_of mmap_min_addr)
rmmod flexmmap

t_dmesg_mark
t_insmod kallsyms_data=0
t_eq "kallsyms_data=0: from /proc" proc "$(stat_of kernel_data)"
if t_dmesg_since | grep -q "the kernel's data from /proc: kallsyms_data=0"; then
	t_ok "kallsyms_data=0: the log says where the data comes from and why"
else
	t_fail "kallsyms_data=0: the log says where the data comes from and why" "$(t_dmesg_since)"
fi
t_eq "stack_guard_gap: kallsyms, /proc and the command line agree ($gap)" \
	"$gap $gap" "$default_gap $(stat_of stack_guard_gap)"
t_eq "mmap_min_addr: kallsyms and /proc agree ($default_min)" \
	"$default_min" "$(stat_of mmap_min_addr)"
rmmod flexmmap

# vm.mmap_min_addr written after the load: the /proc way keeps a pointer
# to the value, so it follows.  What the kernel makes of the value: at
# least CONFIG_LSM_MMAP_MIN_ADDR (security/min_addr.c), a page at least
# and page-aligned (the allocators' floor); both ways must say so.
M=/proc/sys/vm/mmap_min_addr
orig=$(cat $M)
t_atexit "echo $orig >$M"
cfg=/boot/config-$(uname -r)
lsm=$(sed -n 's/^CONFIG_LSM_MMAP_MIN_ADDR=//p' "$cfg" 2>/dev/null)
[ -r "$cfg" ] || t_fail_all "no $cfg in the guest: the image should carry the kernel's config"
for v in 131072 4096 "$orig"; do
	want=$(((v > ${lsm:-0} ? v : ${lsm:-0}) + 4095))
	want=$((want / 4096 * 4096))
	[ "$want" -ge 4096 ] || want=4096
	insmod "$FMM_KO" kallsyms_data=0 || t_fail_all "insmod kallsyms_data=0 failed"
	echo "$v" >$M
	from_proc=$(stat_of mmap_min_addr)
	rmmod flexmmap
	t_insmod
	t_eq "vm.mmap_min_addr=$v after the load (LSM floor ${lsm:-none}): /proc's value follows, kallsyms' agrees" \
		"$want $want" "$from_proc $(stat_of mmap_min_addr)"
	rmmod flexmmap
done

# Without /proc (a mount namespace without it): the load fails, says why,
# and leaves no module, control file or kprobe.
t_dmesg_mark
out=$(unshare -m sh -c "umount -l /proc && insmod '$FMM_KO' kallsyms_data=0" 2>&1)
rc=$?
left=$( { [ ! -e /sys/module/flexmmap ] || echo /sys/module/flexmmap
	[ ! -e /proc/sys/vm/flexmmap_layout ] || echo vm.flexmmap_layout
	grep -s mmap_min_addr_handler /sys/kernel/debug/kprobes/list; } | tr '\n' ' ')
if [ "$rc" != 0 ] && t_dmesg_since | grep -q 'cannot read /proc/cmdline'; then
	t_ok "without /proc: insmod kallsyms_data=0 fails and the log says why"
else
	t_fail "without /proc: insmod kallsyms_data=0 fails and the log says why" \
		"exit $rc: $out" "$(t_dmesg_since)"
fi
t_eq "without /proc: nothing left behind" "" "$left"
