#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rmmod ends in bounded time whatever user space does, with two vCPUs:
#  - a root loop re-targets a forking process between legacy and flexible
#    while the module is loaded (layout=2) and unloaded FMM_RETARGET_CYCLES
#    times (default 30): every rmmod returns within 30 s, no counter of
#    /proc/flexmmap/stats is ever negative, retargets and inheriting forks
#    did happen, the forker's children all pass their checks, no oops (a
#    module with a forks-in-flight counter hung here for ever, "unload
#    waits for 1 fork(s) in flight");
#  - a process on a module allocator whose mmap lock a stalled fault holds
#    (a FUSE file whose reads are never answered, read through
#    /proc/PID/mem: fmm-fuse-stall): a retarget of it is refused within 5 s
#    instead of waiting, and rmmod returns within 20 s while the lock is
#    still held (a module that reset each mm under its mmap write lock sat
#    in D state until the server died).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 10
t_smp

P=$FMM_PROBES
R=/proc/sys/vm/flexmmap_retarget
S=/tmp/unload-bounded
cycles=${FMM_RETARGET_CYCLES:-30}
rmmod flexmmap 2>/dev/null
rm -rf $S && mkdir -p $S
t_dmesg_mark

# rmmod_within SECONDS: rmmod in the background; true if it returned 0 in
# time.  One still running is left alone (in D state it cannot be killed).
rmmod_within() {
	local i pid
	rmmod flexmmap >$S/rmmod.out 2>&1 &
	pid=$!
	for ((i = 0; i < $1 * 10; i++)); do
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	! kill -0 $pid 2>/dev/null && wait $pid
}

# stat NAME: a counter of /proc/flexmmap/stats.
stat() { awk -v n="$1" '$1 == n { print $2 }' /proc/flexmmap/stats; }

# --- retargets of a forking process across insmod/rmmod cycles ----------
"$P/fmm-sleep-$FMM_NATIVE" --fork-loop </dev/null >$S/forker 2>&1 &
forker=$!
(
	# While the module is out these writes fail: that is part of the test.
	while [ ! -e $S/stop ]; do
		{ echo "$forker legacy" >$R; } 2>/dev/null
		{ echo "$forker flexible" >$R; } 2>/dev/null
	done
) &
spinner=$!

failed=0 hung='' negative='' retargets=0 inherits=0 worst=0 start=$SECONDS hook=''
for c in $(seq "$cycles"); do
	if ! insmod "$FMM_KO" layout=2; then
		failed=$((failed + 1))
		continue
	fi
	sleep 0.3
	neg=$(awk '$2 ~ /^-/' /proc/flexmmap/stats)
	[ -z "$neg" ] || negative+="cycle $c: $neg"$'\n'
	retargets=$((retargets + $(stat retarget)))
	inherits=$((inherits + $(stat fork_inherit)))
	hook=$(stat layout_hook)
	t0=$SECONDS
	if ! rmmod_within 30; then
		hung="cycle $c: $(cat $S/rmmod.out)"
		break
	fi
	((SECONDS - t0 <= worst)) || worst=$((SECONDS - t0))
done
touch $S/stop
wait $spinner
kill -TERM $forker
wait $forker
frc=$?

# The bound means something only with retargets carried out in the loaded
# windows (the module's own counter): the first result requires them.
acted=no
((retargets > 0)) && acted=yes
t_eq "$cycles insmod/rmmod cycles with retargets of a forking process ($retargets carried out): every rmmod returned within 30 s" \
	"retargets: yes" "retargets: $acted$hung"
t_diag "cycles took $((SECONDS - start)) s; slowest rmmod $worst s"
t_diag "retargets $retargets, forks that inherited a module allocator $inherits (layout_hook $hook)"
# fork_inherit counts the children the module's fork probe kept on a module
# allocator.  On a kernel built with patches/ (layout_hook mmap_layout) the
# kernel's dup_mm() copies mm->mmap_layout itself and there is no such
# probe, so no counter to require there.
inherited=$inherits
[ "$hook" != mmap_layout ] || inherited="by the kernel (mmap_layout)"
if ((retargets > 0 && failed == 0)) && [ "$inherited" != 0 ] && [ -z "$negative" ]; then
	t_ok "the cycles retargeted the forker, its children inherited module allocators ($inherited); no insmod failed, no counter went negative"
else
	t_fail "the cycles retargeted the forker, its children inherited module allocators; no insmod failed, no counter went negative" \
		"retargets $retargets, fork_inherit $inherits, failed insmods $failed" "$negative"
fi
t_eq "the forking process and its children (retargeted: $acted) saw no failure" "0 yes" "$frc $acted"
t_sub <$S/forker

# --- a process whose mmap lock a stalled FUSE fault holds ----------------
if [ -n "$hung" ]; then
	t_fail "rmmod with an mmap lock held" "the module is stuck from the cycles above"
	exit 1
fi
modprobe fuse
mkdir -p $S/mnt
insmod "$FMM_KO" layout=2 || t_fail "insmod layout=2"
"$P/fmm-fuse-stall-$FMM_NATIVE" serve $S/mnt >$S/server 2>$S/server.err &
server=$!
for _ in $(seq 100); do grep -q ready $S/server && break; sleep 0.1; done
coproc M { exec "$P/fmm-fuse-stall-$FMM_NATIVE" map $S/mnt/stall; }
read -r -t 30 line <&"${M[0]}" || line="no answer: $(cat $S/server.err)"
mapper=$M_PID
addr=${line#mapped }
mline=$(awk -v p="$mapper" '$1 == p { print $2, $3 }' /proc/flexmmap/tasks)
t_eq "a process on a module allocator maps a FUSE file" "flexible module-topdown" "$mline"
# The reader faults the page in with the mapper's mmap lock held, and waits.
dd if="/proc/$mapper/mem" of=/dev/null bs=4096 count=1 iflag=skip_bytes \
	skip=$((addr)) 2>$S/dd.err &
reader=$!
for _ in $(seq 100); do grep -q stalled $S/server.err && break; sleep 0.1; done
t_check "harness: a read of its page through /proc/PID/mem stalls in the FUSE server" \
	grep -q "READ 1 stalled" $S/server.err
t0=$SECONDS
# In the kernel log: when the write starts (the module logs its refusal).
echo "flexmmap-test: 42: retarget of $mapper with its mmap lock held starts" >/dev/kmsg
# shellcheck disable=SC2016 # expanded by the inner bash
err=$(timeout -s KILL 10 bash -c 'printf "%s\n" "$1" >"$2"' bash "$mapper legacy" $R 2>&1)
rc=$?
echo "flexmmap-test: 42: the retarget writer exited $rc" >/dev/kmsg
if [ $rc != 0 ] && [[ $err == *'temporarily unavailable'* ]] && ((SECONDS - t0 <= 5)); then
	t_ok "a retarget of it is refused within 5 s while its mmap lock is held ($((SECONDS - t0)) s)"
else
	t_fail "a retarget of it is refused within 5 s while its mmap lock is held" \
		"exit $rc after $((SECONDS - t0)) s: $err"
fi
t0=$SECONDS
if rmmod_within 20 && [ "$mline" = "flexible module-topdown" ]; then
	t_ok "rmmod returns within 20 s while the mmap lock of a process on module-topdown is held ($((SECONDS - t0)) s)"
elif [ "$mline" != "flexible module-topdown" ]; then
	t_fail "rmmod returns within 20 s while the mmap lock of a process on module-topdown is held" \
		"the process was not on the module's allocator ('$mline'): nothing to wait for"
else
	t_fail "rmmod returns within 20 s while its mmap lock is held" \
		"still running after $((SECONDS - t0)) s: $(cat $S/rmmod.out)"
fi
t_check "harness: the read is still stalled: the lock was held throughout" kill -0 $reader
# Killing the server aborts the connection: the read fails, the lock goes.
kill -KILL $server
wait $server 2>/dev/null
wait $reader
t_check "harness: the stalled read ends once the server is gone" test $? != 0
kill -TERM "$mapper"
wait "$mapper" 2>/dev/null
umount -l $S/mnt
for _ in $(seq 300); do [ ! -e /sys/module/flexmmap ] && break; sleep 0.1; done
t_check "harness: the module is gone at the end" test ! -e /sys/module/flexmmap
