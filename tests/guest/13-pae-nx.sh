#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# NX for user memory on a 32-bit PAE kernel (module/pae-nx.c).  Debian 12's
# 686-pae kernel (6.1) loses the NX bit in vm_get_page_prot() (an unsigned
# long holds a 64-bit protection): every user page runs code although
# /proc/PID/maps says rw-p.  The module, with pae_nx=1 (the default), puts
# NX back for mappings made while it is loaded; pae_nx=0 leaves the kernel
# alone; a kernel that keeps NX (every 64-bit one) gets no probe.  Shown
# failing (results 3-5) with a correction that did nothing: a kprobe whose
# redirect kprobes had optimized away.  Each
# expectation follows from what the stock kernel does (the control, before
# the load), the CPU's nx flag and the kernel's word size.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 9

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

# --- loaded with pae_nx=1 (the default) ------------------------------------
t_dmesg_mark
t_insmod
t_eq "pae_nx is '$want' (stock NX enforced: $((1 - stock_run)), CPU nx: $cpu_nx, $kbits-bit kernel)" \
	"$want" "$(stat_of pae_nx)"
logged=no
t_dmesg_since | grep -q "vm_get_page_prot() drops NX: set again" && logged=yes
t_eq "the load logs the correction exactly when it makes it" \
	"$([ $want = fixed ] && echo yes || echo no)" "$logged"
t_eq "loaded: code on a rw-p stack does not run (fmm-nx-$N stack_run)" 0 "$(stack_runs)"
pax=$(pax_exec)
t_sub <<<"$pax"
t_eq "loaded: paxtest's exec tests ($PAXEXEC) are Killed" 5 "$(grep -c ': Killed$' <<<"$pax")"
# A kretprobe ("r" in the kprobes list) where the kernel drops NX, none
# where it keeps it.
probe=$(awk '$3 ~ /^vm_get_page_prot\+/' "$KP")
case $want in
fixed) t_eq "a kretprobe on vm_get_page_prot is armed" "r vm_get_page_prot+0x0" \
	"$(awk '{ print $2, $3 }' <<<"$probe")" ;;
*) t_eq "no kprobe on vm_get_page_prot where the kernel keeps NX" "" "$probe" ;;
esac
t_eq "no call missed the correction (missed_vm_get_page_prot, where it is armed)" \
	"$([ $want = fixed ] && echo 0)" "$(stat_of missed_vm_get_page_prot)"
rmmod flexmmap

# --- after rmmod, and with pae_nx=0: the kernel's own behaviour -------------
t_eq "control (stock behaviour): after rmmod, stack_run is the stock kernel's" \
	"$stock_run" "$(stack_runs)"
t_insmod pae_nx=0
t_eq "control (stock behaviour): pae_nx=0: 'off', stack_run is the stock kernel's" \
	"off $stock_run" "$(stat_of pae_nx) $(stack_runs)"
rmmod flexmmap
if modinfo -F parm "$FMM_KO" | grep -q '^pae_nx:.*vm_get_page_prot'; then
	t_ok "modinfo describes pae_nx="
else
	t_fail "modinfo describes pae_nx=" "$(modinfo -F parm "$FMM_KO")"
fi
