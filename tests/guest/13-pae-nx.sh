#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# NX for user memory on a 32-bit PAE kernel (module/pae-nx.c).  Debian 12's
# 686-pae kernel (6.1) loses the NX bit in vm_get_page_prot() (an unsigned
# long holds a 64-bit protection): every user page runs code although
# /proc/PID/maps says rw-p.  The module puts NX back for mappings made once
# the correction is armed: with pae_nx=1 (the default) by the first
# vm.flexmmap_nx mode other than 0 (a write, nx= at load, a binary marked
# M), and from then until unload; with pae_nx=2 at load; never with
# pae_nx=0.  Until armed ("standby") mode 0 is the kernel's behaviour.  A
# kernel that keeps NX (every 64-bit one) gets no probe.  Each expectation
# follows from what the stock kernel does (the control, before the load),
# the CPU's nx flag and the kernel's word size.  Shown failing: with a
# correction that did nothing (a kprobe whose redirect kprobes had optimized
# away) the stack and paxtest results; with the correction armed at load
# whatever pae_nx= (the module before standby) results 1-3 and 11; with
# fmm_nx_set() not arming it results 3-7 and 9; with an M marking not
# arming it result 11.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 14

P=$FMM_PROBES
N=$FMM_NATIVE
PAXDIR=$FMM_PAXDIR
# paxtest's plain exec tests: code in anonymous, .bss, .data, heap and stack
# memory, each mapped without PROT_EXEC.
PAXEXEC="anonmap execbss execdata execheap execstack"
KP=/sys/kernel/debug/kprobes/list
rmmod flexmmap 2>/dev/null
stat_of() { awk -v k="$1" '$1 == k { print $2 }' /proc/flexmmap/stats; }
stack_runs() { "$P/fmm-nx-$N" --print 2>/dev/null | sed -n 's/^stack_run=//p'; }
# shellcheck disable=SC2086 # a list of program names
pax_exec() { t_paxtest $PAXEXEC; }
[ -r "$KP" ] || t_fail_all "no $KP (debugfs or kprobes missing)"
[ -x "$PAXDIR/anonmap" ] || t_fail_all "paxtest not installed in the guest ($PAXDIR/anonmap)"

# --- the control: the stock kernel ---------------------------------------
stock_run=$(stack_runs)
cpu_nx=no
grep -qw nx /proc/cpuinfo && cpu_nx=yes
kbits=$(getconf LONG_BIT)
[ "$(uname -m)" = x86_64 ] && kbits=64
t_diag "stock kernel: code on a rw-p stack runs: $stock_run; CPU nx flag: $cpu_nx; $kbits-bit kernel"
want=kernel
[ "$stock_run:$cpu_nx:$kbits" != 1:yes:32 ] || want=fixed

want=kernel
standby=kernel
if [ "$stock_run:$cpu_nx:$kbits" = 1:yes:32 ]; then
	want=fixed
	standby=standby
fi
S=/proc/sys/vm/flexmmap_nx
# The kprobes list's entry for vm_get_page_prot: "r vm_get_page_prot+0x0"
# for our kretprobe, nothing without it.
vgpp() { awk '$3 ~ /^vm_get_page_prot\+/ { print $2, $3 }' "$KP"; }
armed_probe=
[ $want != fixed ] || armed_probe="r vm_get_page_prot+0x0"
logged() { # the log since the mark has line $1: yes or no
	if t_dmesg_since | grep -q "$1"; then echo yes; else echo no; fi
}
yes_if() { if [ "$1" = "$2" ]; then echo yes; else echo no; fi; }

# --- pae_nx=1 (the default): standby under nx=0 ----------------------------
t_dmesg_mark
t_insmod
t_eq "pae_nx=1, nx=0: pae_nx is '$standby', the kernel's behaviour: stack_run $stock_run as stock, probe '' (stock NX enforced: $((1 - stock_run)), CPU nx: $cpu_nx, $kbits-bit kernel)" \
	"$standby $stock_run " "$(stat_of pae_nx) $(stack_runs) $(vgpp)"
t_eq "the load logs the standby exactly when the kernel drops NX" \
	"$(yes_if $standby standby)" "$(logged "drops NX: corrected from the first vm.flexmmap_nx mode other than 0")"

# --- the first mode other than 0 arms it, before its first exec --------------
t_dmesg_mark
echo 2 >$S
t_eq "nx=2: pae_nx is '$want', kprobe '$armed_probe', logged exactly when armed" \
	"$want $armed_probe:$(yes_if $want fixed)" \
	"$(stat_of pae_nx) $(vgpp):$(logged "drops NX: set again")"
t_eq "nx=2: code on a rw-p stack does not run (fmm-nx-$N stack_run)" 0 "$(stack_runs)"
pax=$(pax_exec)
t_sub <<<"$pax"
t_eq "nx=2: paxtest's exec tests ($PAXEXEC) are Killed" 5 "$(grep -c ': Killed$' <<<"$pax")"
# Sticky: back under nx=0 the correction stays (processes exec'd under 2
# may still run) and applies to every new mapping.
echo 0 >$S
t_eq "back to nx=0: pae_nx stays '$want', stack_run 0, kprobe '$armed_probe'" \
	"$want 0 $armed_probe" "$(stat_of pae_nx) $(stack_runs) $(vgpp)"
t_eq "no call missed the correction (missed_vm_get_page_prot, where it is armed)" \
	"$([ $want = fixed ] && echo 0)" "$(stat_of missed_vm_get_page_prot)"
rmmod flexmmap
t_eq "control (stock behaviour): after rmmod, stack_run is the stock kernel's, no kprobe" \
	"$stock_run " "$(stack_runs) $(vgpp)"

# --- other ways in ---------------------------------------------------------
t_insmod nx=1
t_eq "insmod nx=1: pae_nx '$want' from the load, stack_run 0" "$want 0" \
	"$(stat_of pae_nx) $(stack_runs)"
rmmod flexmmap
t_insmod pae_nx=2
t_eq "insmod pae_nx=2 (nx=0): pae_nx '$want' from the load, stack_run 0" "$want 0" \
	"$(stat_of pae_nx) $(stack_runs)"
rmmod flexmmap
# A binary marked M (user.pax.flags, mark.c) runs under W^X whatever the
# mode: its exec arms the correction too.  Marked on ext4 (/var/tmp):
# 6.1's tmpfs holds no user xattrs.
m=$(mktemp /var/tmp/pae-nx-M.XXXXXX)
t_atexit "rm -f $m"
cp /bin/true "$m"
chmod 755 "$m"
t_insmod
if setfattr -n user.pax.flags -v M "$m" 2>/dev/null; then
	before=$(stat_of pae_nx)
	"$m"
	t_eq "nx=0: the exec of a binary marked M turns pae_nx from '$standby' to '$want'" \
		"$standby $want" "$before $(stat_of pae_nx)"
else
	t_fail "nx=0: the exec of a binary marked M turns pae_nx from '$standby' to '$want'" \
		"setfattr -n user.pax.flags on $m failed"
fi
rmmod flexmmap
t_insmod pae_nx=0
echo 2 >$S
t_eq "control (stock behaviour): pae_nx=0, even under nx=2: 'off', stack_run is the stock kernel's, no kprobe" \
	"off $stock_run " "$(stat_of pae_nx) $(stack_runs) $(vgpp)"
rmmod flexmmap
t_dmesg_mark
if ! insmod "$FMM_KO" pae_nx=3 2>/dev/null && [ ! -d /proc/flexmmap ] &&
	t_dmesg_since | grep -q "pae_nx=3: must be 0 (off), 1 (with the NX policy) or 2 (from load)"; then
	t_ok "insmod pae_nx=3 refused, the log names pae_nx="
else
	t_fail "insmod pae_nx=3 refused, the log names pae_nx=" "$(t_dmesg_since)"
	rmmod flexmmap 2>/dev/null
fi
if modinfo -F parm "$FMM_KO" | grep -q '^pae_nx:.*vm_get_page_prot'; then
	t_ok "modinfo describes pae_nx="
else
	t_fail "modinfo describes pae_nx=" "$(modinfo -F parm "$FMM_KO")"
fi
