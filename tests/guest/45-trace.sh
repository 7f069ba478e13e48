#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The module's trace events (module/trace.h, docs/trace-events.md), recorded
# with trace-cmd:
#  - they exist while the module is loaded, under events/flexmmap;
#  - exec_layout, with its pid, comm, mode, allocator, why and nx fields, for
#    programs exec'd under vm.flexmmap_layout=0, 1 and 2, a copy marked
#    user.flexmmap.layout=legacy under 2, and under auto (3): plain, under
#    setarch -L, and a copy without PT_GNU_STACK;
#  - wx_denied under vm.flexmmap_nx=3 (fmm-wx's routes): call, prot and file
#    of an anonymous mprotect(RWX) and of a file's mprotect(RX), one event
#    per denial counted in /proc/flexmmap/stats;
#  - retarget through vm.flexmmap_retarget: pid, from, to, result and by, of
#    a retarget that succeeds and of one refused (a kernel thread, -EINVAL);
#  - rmmod while "trace-cmd record -e flexmmap" runs returns in bounded time,
#    the events are gone after it, that trace-cmd ends on SIGINT and its file
#    reads; insmod brings them back.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 20

P=$FMM_PROBES
T=/sys/kernel/tracing
E=$T/events/flexmmap
R=/proc/sys/vm/flexmmap_retarget
W=/tmp/fmm-trace
# Markings need user extended attributes: the ext4 root, not /tmp's tmpfs.
V=/var/tmp/fmm-trace.$$
rmmod flexmmap 2>/dev/null
rm -rf $W && mkdir -p $W $V
command -v trace-cmd >/dev/null || t_fail_all "trace-cmd is not installed in the guest image"
mountpoint -q $T || mount -t tracefs nodev $T || t_fail_all "cannot mount tracefs on $T"
t_atexit 'sysctl -q vm.flexmmap_nx=0 vm.flexmmap_layout=3 2>/dev/null; rmmod flexmmap 2>/dev/null'
t_atexit "rm -rf $V"

t_insmod
t_check "the events exist while the module is loaded" \
	test -d $E/exec_layout -a -d $E/wx_denied -a -d $E/retarget

# report FILE: the events' own text ("pid=... comm=..."), one per line,
# prefixed with the event's name.
report() {
	trace-cmd report -i "$1" 2>/dev/null |
		sed -nE 's/.* (exec_layout|wx_denied|retarget): +/\1 /p'
}

# --- exec_layout ----------------------------------------------------------
# Each case execs its own copy of true (so its comm names the case) from a
# shell that first writes its PID: the exec keeps it.
for c in l0 l1 l2 auto pers nogs; do cp /bin/true $W/fmmt-$c; done
"$P/fmm-elfedit" --drop-gnustack /bin/true $W/fmmt-nogs ||
	t_diag "fmm-elfedit --drop-gnustack /bin/true failed"
chmod +x $W/fmmt-*
if ! { cp /bin/true $V/fmmt-mark && setfattr -n user.flexmmap.layout -v legacy $V/fmmt-mark; }; then
	t_diag "cannot make a copy of true marked user.flexmmap.layout=legacy in $V"
fi
cat >$W/exec-cases <<EOF
run() { sh -c 'echo \$\$ >$W/pid-\$0; exec "\$@"' "\$@"; }
sysctl -q vm.flexmmap_layout=0; run l0 $W/fmmt-l0
sysctl -q vm.flexmmap_layout=1; run l1 $W/fmmt-l1
sysctl -q vm.flexmmap_layout=2 vm.flexmmap_nx=2; run l2 $W/fmmt-l2
run mark $V/fmmt-mark
sysctl -q vm.flexmmap_layout=3 vm.flexmmap_nx=0; run auto $W/fmmt-auto
run pers setarch -L $W/fmmt-pers
run nogs $W/fmmt-nogs
EOF
trace-cmd record -e flexmmap:exec_layout -o $W/exec.dat sh $W/exec-cases \
	>$W/exec.out 2>&1 || t_diag "trace-cmd record (exec_layout) failed: $(tail -n 3 $W/exec.out)"
report $W/exec.dat >$W/exec.txt
grep -F comm=fmmt- $W/exec.txt | t_sub

# exec_case CASE EXPECTED: the exec_layout event of fmmt-CASE, all fields.
exec_case() {
	local pid line
	pid=$(cat $W/pid-"$1" 2>/dev/null)
	line=$(awk -v c="comm=fmmt-$1" '$1 == "exec_layout" && $3 == c' $W/exec.txt |
		sed 's/^exec_layout //')
	t_eq "exec_layout: $3" "pid=$pid comm=fmmt-$1 $2" "$line"
}
exec_case l0 "mode=0 allocator=kernel-topdown why=sysctl nx=0" \
	"layout=0 leaves the kernel's top-down allocator (why sysctl)"
exec_case l1 "mode=1 allocator=module-bottomup why=sysctl nx=0" \
	"layout=1 gives module-bottomup (why sysctl)"
exec_case l2 "mode=2 allocator=module-topdown why=sysctl nx=2" \
	"layout=2 gives module-topdown (why sysctl), nx=2 recorded"
exec_case mark "mode=1 allocator=module-bottomup why=marking nx=2" \
	"a copy marked legacy under layout=2 gives module-bottomup (why marking)"
exec_case auto "mode=3 allocator=module-topdown why=sysctl nx=0" \
	"auto gives a PT_GNU_STACK binary module-topdown (why sysctl)"
exec_case pers "mode=3 allocator=module-bottomup why=personality nx=0" \
	"auto under setarch -L gives module-bottomup (why personality)"
exec_case nogs "mode=3 allocator=module-bottomup why=no-gnu-stack nx=0" \
	"auto without PT_GNU_STACK gives module-bottomup (why no-gnu-stack)"

# --- wx_denied ------------------------------------------------------------
b=$FMM_NATIVE
sysctl -q vm.flexmmap_nx=3
wx_denials() {
	awk '/^wx_denied_/ { s += $2 } END { print s + 0 }' /proc/flexmmap/stats
}
before=$(wx_denials)
trace-cmd record -e flexmmap:wx_denied -o $W/wx.dat "$P/fmm-wx-$b" --print \
	>$W/wx.out 2>&1 || t_diag "trace-cmd record (wx_denied) failed: $(tail -n 3 $W/wx.out)"
after=$(wx_denials)
sysctl -q vm.flexmmap_nx=0
report $W/wx.dat >$W/wx.txt
t_diag "$(grep -c '^wx_denied ' $W/wx.txt) wx_denied events, the first three:"
head -n 3 $W/wx.txt | t_sub
# The fields but the pid, which is one of fmm-wx's route children.
wx_line() { awk -v m="$1" '$1 == "wx_denied" && index($0, m) { sub(/^wx_denied pid=[0-9]+ /, ""); print; exit }' $W/wx.txt; }
t_eq "wx_denied: mprotect(RWX) of anonymous memory: comm, call, prot, file, allowed=0" \
	"comm=fmm-wx-$b call=mprotect prot=PROT_READ|PROT_WRITE|PROT_EXEC file=(anonymous) allowed=0" \
	"$(wx_line 'call=mprotect prot=PROT_READ|PROT_WRITE|PROT_EXEC file=(anonymous)')"
# mprotect-file-cow: an unlinked /tmp/fmm-wx.XXXXXX, written privately.  On
# PREEMPT_RT the event gives the name alone (no d_path() in a probe there).
cow_file='/tmp/fmm-wx\.[A-Za-z0-9]{6} \(deleted\)'
if uname -v | grep -qw PREEMPT_RT; then
	cow_file='fmm-wx\.[A-Za-z0-9]{6}'
	t_diag "PREEMPT_RT: wx_denied names a file by its last component"
fi
t_check "wx_denied: mprotect(RX) of a written private file mapping names its path" \
	grep -qE "^wx_denied pid=[0-9]+ comm=fmm-wx-$b call=mprotect prot=PROT_READ\|PROT_EXEC file=$cow_file allowed=0\$" $W/wx.txt
# Every event has a pid (> 1) and is a probe's: fmm-wx, or the RWX helper
# it execs, the only programs run under W^X.
wx_all_ours() {
	awk '$1 == "wx_denied" { n++; split($2, p, "=")
		if (p[1] != "pid" || p[2] + 0 <= 1 || index($3, "comm=fmm-") != 1) bad++ }
		END { exit bad || !n }' $W/wx.txt
}
t_check "wx_denied: every event has a probe's comm and a pid" wx_all_ours
denied=$((after - before))
events=$(grep -c '^wx_denied ' $W/wx.txt)
if [ "$denied" -gt 0 ] && [ "$denied" = "$events" ]; then
	t_ok "wx_denied: one event per denial counted in /proc/flexmmap/stats"
else
	t_fail "wx_denied: one event per denial counted in /proc/flexmmap/stats" \
		"denials counted: $denied (at least 1 expected)" "events: $events"
fi

# --- retarget -------------------------------------------------------------
sleep 600 &
target=$!
sleep 0.5
cat >$W/retarget-cases <<EOF
echo \$\$ >$W/by
echo "$target legacy" >$R
echo "2 flexible" >$R 2>/dev/null
exit 0
EOF
trace-cmd record -e flexmmap:retarget -o $W/rt.dat sh $W/retarget-cases \
	>$W/rt.out 2>&1 || t_diag "trace-cmd record (retarget) failed: $(tail -n 3 $W/rt.out)"
kill "$target" 2>/dev/null
wait "$target" 2>/dev/null
report $W/rt.dat >$W/rt.txt
t_sub <$W/rt.txt
by=$(cat $W/by 2>/dev/null)
t_eq "retarget: a running process to legacy: pid, from, to, result 0, by" \
	"retarget pid=$target from=module-topdown to=module-bottomup result=0 by=$by" \
	"$(grep "^retarget pid=$target " $W/rt.txt)"
t_eq "retarget: a kernel thread (kthreadd) refused: result -22 (EINVAL)" \
	"retarget pid=2 from=- to=module-topdown result=-22 by=$by" \
	"$(grep '^retarget pid=2 ' $W/rt.txt)"

# --- unload while recording -----------------------------------------------
trace-cmd record -e flexmmap -o $W/live.dat >$W/live.out 2>&1 &
rec=$!
for _ in $(seq 300); do
	[ "$(cat $E/exec_layout/enable 2>/dev/null)" = 1 ] && break
	sleep 0.1
done
t_eq "trace-cmd record -e flexmmap is recording (exec_layout enabled)" 1 \
	"$(cat $E/exec_layout/enable 2>/dev/null)"
/bin/true
echo "$$ flexible" >$R
t0=$(date +%s)
rm_rc=0
timeout 60 rmmod flexmmap >$W/rmmod.out 2>&1 || rm_rc=$?
t1=$(date +%s)
t_eq "rmmod while trace-cmd records flexmmap events returns 0 within 60 s" 0 "$rm_rc"
t_diag "rmmod took $((t1 - t0)) s: $(cat $W/rmmod.out)"
t_check "no events/flexmmap after the unload" test ! -e $E
kill -INT $rec 2>/dev/null
rec_rc=0
for _ in $(seq 300); do
	kill -0 $rec 2>/dev/null || break
	sleep 0.1
done
if kill -0 $rec 2>/dev/null; then
	rec_rc=timeout
	kill -KILL $rec 2>/dev/null
fi
wait $rec 2>/dev/null
t_eq "that trace-cmd record ends within 30 s of SIGINT" 0 "$rec_rc"
# The unload resets the ring buffer (the events' formats go with the
# module), so what was not read by then is lost: only the file must read.
t_check "trace-cmd report reads that recording" trace-cmd report -i $W/live.dat
t_diag "it holds $(report $W/live.dat | wc -l) flexmmap events"


# The module again, and gone again: the events follow it.
t_insmod
t_check "the events are back after insmod" test -d $E/exec_layout
rmmod flexmmap || t_fail "rmmod"
