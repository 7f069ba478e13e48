#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# On a kernel built with patches/ (make check KERNEL=source) the module uses
# the kernel's mmap layout hook: while every layout mode is exercised, no
# kprobe and no ftrace entry is added (/sys/kernel/debug/kprobes/list and
# /sys/kernel/tracing/enabled_functions stay as before insmod), huge pages
# follow the layout, and only nx=3 arms its W^X probes.  A process
# left on the trampoline by an unloaded module is on the kernel's allocator
# for the next load.  On the stock kernel the same lists show the layout
# kprobes (which proves the check can see them).  On 6.10+ (Debian 13's
# 6.12) loading adds a fixed set, the ftrace redirect of the kernel's two
# allocators and the exec and fork kprobes, and from there on the same
# checks hold: no layout mode adds an entry, huge pages follow the layout,
# nx=3 arms only its W^X probes, a reload ignores the old load's record.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root

P=$FMM_PROBES
S=/proc/sys/vm/flexmmap_layout
KP=/sys/kernel/debug/kprobes/list
EF=/sys/kernel/tracing/enabled_functions
rmmod flexmmap 2>/dev/null
[ -r "$KP" ] || t_fail_all "no $KP (debugfs or kprobes missing)"

hooked() { # the kprobe and ftrace lists, one "kprobe SYM" / "ftrace SYM" per line
	awk '{ sub(/\+.*/, "", $3); print "kprobe", $3 }' "$KP"
	[ ! -r "$EF" ] || awk '{ print "ftrace", $1 }' "$EF"
}

before=$(hooked)
t_dmesg_mark
t_insmod layout=3
hook=$(awk '$1 == "layout_hook" { print $2 }' /proc/flexmmap/stats)
case $hook in
ftrace_redirect | mmap_layout) t_plan 20 ;;
*) t_plan 1 ;; # stock 6.1's kprobes: only the first check applies
esac
if [ "$hook" = ftrace_redirect ]; then
	added=$(comm -13 <(sort <<<"$before") <(hooked | sort) | sort -u | paste -sd' ')
	t_eq "6.10+: insmod adds the allocators' ftrace redirect and the exec and fork kprobes" \
		"$(printf '%s\n' 'ftrace arch_get_unmapped_area' 'ftrace arch_get_unmapped_area_topdown' \
			'ftrace setup_arg_pages' 'ftrace uprobe_dup_mmap' \
			'kprobe setup_arg_pages' 'kprobe uprobe_dup_mmap' | sort | paste -sd' ')" "$added"
	before=$(hooked)
elif [ "$hook" != mmap_layout ]; then
	added=$(comm -13 <(sort <<<"$before") <(hooked | sort))
	if grep -q 'kprobe setup_arg_pages' <<<"$added"; then
		t_ok "stock kernel: the layout kprobes are listed (setup_arg_pages among $(wc -l <<<"$added") entries)"
	else
		t_fail "stock kernel: the layout kprobes are listed" "added: $added"
	fi
	rmmod flexmmap
	exit 0
fi
[ "$hook" != mmap_layout ] || t_ok "the module uses the kernel's mmap layout hook"

# The MAP_HUGETLB checks of fmm-layout need two free 2 MiB pages (with
# fewer it skips the check, or leaves out the direction): a failed result
# when they are not there, and FMM_NEED_HUGETLB=1 makes the probe fail
# rather than skip.
sysctl -qw vm.nr_hugepages=4
hp_free=$(awk '/^HugePages_Free:/ { print $2 }' /proc/meminfo)
if [ "${hp_free:-0}" -ge 2 ]; then
	t_ok "harness: vm.nr_hugepages=4: at least 2 huge pages free ($hp_free)"
else
	t_fail "harness: vm.nr_hugepages=4: at least 2 huge pages free" "$(grep -i huge /proc/meminfo)"
fi
export FMM_NEED_HUGETLB=1
for mode in 1 2 3; do
	echo "$mode" >$S
	for bits in 64 32; do
		case $mode in
		1) want="bottomup module-bottomup legacy" ;;
		2) want="topdown module-topdown flexible" ;;
		3) want="topdown module-topdown auto" ;;
		esac
		read -r layout alloc m <<<"$want"
		if out=$("$P/fmm-layout-$bits" --expect "$layout" --expect-alloc "$alloc" \
			--expect-mode "$m" 2>&1); then
			t_ok "layout=$mode ${bits}-bit: $layout, $alloc, mode $m"
			grep 'MAP_HUGETLB' <<<"$out" | t_sub
		else
			t_fail "layout=$mode ${bits}-bit: $layout, $alloc, mode $m" "$out"
		fi
	done
	want=bottomup
	[ "$mode" != 2 ] || want=topdown
	t_check "layout=$mode: a 64-bit binary without PT_GNU_STACK is $want" \
		"$P/fmm-layout-64-nognustack" --expect "$want"
	now=$(hooked)
	t_eq "layout=$mode: no kprobe or ftrace entry added" "$before" "$now"
done
t_diag "kprobe and ftrace entries with the module loaded, before nx=3:" \
	"$(grep -c . <<<"$now") (the same as after insmod)"

echo 3 >/proc/sys/vm/flexmmap_nx
added=$(comm -13 <(sort <<<"$before") <(hooked | sort) | awk '$1 == "kprobe" { print $2 }' | sort -u | paste -sd' ')
# The W^X probes of this kernel's configuration: userfaultfd's fill
# functions only where it has userfaultfd (not the source-built kernel),
# the hugetlb one renamed in 6.12.
wx_want="__ia32_sys_personality __x64_sys_personality access_remote_vm ptrace_access_vm security_file_mprotect security_mmap_file security_shm_shmat vm_brk_flags"
if [ -e /proc/sys/vm/unprivileged_userfaultfd ]; then
	case $(uname -r) in
	6.1.*) zeropage=mfill_zeropage hugetlb=hugetlb_mcopy_atomic_pte ;;
	*) zeropage=mfill_atomic_zeropage hugetlb=hugetlb_mfill_atomic_pte ;;
	esac
	wx_want+=" mfill_atomic_install_pte $zeropage"
	[ ! -e /proc/sys/vm/nr_hugepages ] || wx_want+=" $hugetlb"
fi
t_eq "nx=3 arms only its W^X kprobes" \
	"$(tr ' ' '\n' <<<"$wx_want" | sort | paste -sd' ')" "$added"
echo 0 >/proc/sys/vm/flexmmap_nx
t_eq "nx=0 disarms them" "$before" "$(hooked)"

# A process attached under one load of the module is on the kernel's
# allocator (of its direction) under the next one, and its mmaps still work.
echo 1 >$S
"$P/fmm-sleep-64" </dev/null >/tmp/hook.sleeper 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q '^ready' /tmp/hook.sleeper && break; sleep 0.1; done
t_check "a legacy process is on the module's allocator" grep -q "^$pid legacy module-bottomup" /proc/flexmmap/tasks
t_check "rmmod while it runs" rmmod flexmmap
kill -USR1 "$pid"
sleep 1
t_insmod layout=2
t_check "after a reload it counts as on the kernel's bottom-up allocator" \
	grep -q "^$pid kernel kernel-bottomup" /proc/flexmmap/tasks
kill -USR1 "$pid"
sleep 1
kill -TERM "$pid"
wait "$pid"
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c '^ok' /tmp/hook.sleeper)" = 2 ]; then
	t_ok "its mmaps worked after the unload and after the reload"
else
	t_fail "its mmaps worked after the unload and after the reload" "exit $rc" "$(cat /tmp/hook.sleeper)"
fi
rmmod flexmmap || t_fail "rmmod"
