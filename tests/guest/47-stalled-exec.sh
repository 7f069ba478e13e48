#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What a user's stalled exec cannot do.  An exec stalls as long as the user
# likes on a FUSE file whose reads are never answered (fmm-fuse-stall):
#  (a) it cannot hold up a reader of /proc/flexmmap/tasks, nor an rmmod
#      behind that reader.  nobody's python3 maps the FUSE file; a read of
#      that page through /proc/PID/mem holds its mmap lock (for reading);
#      a write to its clear_refs queues for the lock (for writing); then it
#      execs, and its exec waits for the lock with its exec_update_lock held
#      for writing.  Root's and nobody's readers (under hidepid=1) get its
#      line at once, "PID - - - python3", and rmmod returns while the exec
#      still waits.  A module that waited for exec_update_lock kept its
#      readers, and the rmmod behind them, until the exec was killed.
#  (b) it cannot grow the markings table (module/mark.c): nobody's #!
#      script, marked legacy, whose interpreter is the FUSE file, stays
#      between the markings handler and setup_arg_pages() while the
#      interpreter's first page is read; 16 such execs hold nobody's share,
#      the 17th fails at once with EAGAIN (counted, logged), root's marked
#      binary still gets its marking meanwhile, and nobody's get theirs
#      again once the server is gone.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
command -v setfattr >/dev/null || t_fail_all "setfattr missing (the attr package, guest-image/packages)"
t_plan 16

P=$FMM_PROBES
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
S=/tmp/fmm-47
W=/var/tmp/fmm-47.$$
rmmod flexmmap 2>/dev/null
rm -rf $S && mkdir -p $S/mnt $S/hp
{ mkdir -p $W && chown 65534:65534 $W; } || t_fail_all "mkdir $W"
t_atexit "rm -rf $W $S"
modprobe fuse || t_fail_all "modprobe fuse"

stat_of() { sed -n "s/^$1 //p" /proc/flexmmap/stats; }
# state PID: its state letter (R, S, D ...), empty once it is gone.  From
# /proc/PID/status: Debian's 6.1 takes exec_update_lock to read .../stat.
state() { sed -n 's/^State:\t\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null; }
# wait_for N TEST PID...: wait up to N seconds for TEST PID to hold for
# every PID.
wait_for() {
	local i p n=$1 test=$2
	shift 2
	for ((i = 0; i < n * 10; i++)); do
		for p; do "$test" "$p" || { sleep 0.1 && continue 2; }; done
		return 0
	done
	return 1
}
in_d() { [ "$(state "$1")" = D ]; }
# in_execve PID: asleep (S or D) inside execve (/proc/PID/syscall).
EXECVE_NR=59
[ "$FMM_NATIVE" = 64 ] || EXECVE_NR=11
in_execve() {
	local nr rest
	read -r nr rest <"/proc/$1/syscall" 2>/dev/null || return 1
	[ "$nr" = $EXECVE_NR ] && [[ $(state "$1") == [SD] ]]
}
# wait_gone N PID: wait up to N seconds for PID to exit; true if it did.
wait_gone() {
	local i
	for ((i = 0; i < $1 * 10; i++)); do
		kill -0 "$2" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}
# serve: start the FUSE server at $S/mnt; its PID in $server.
server=
# shellcheck disable=SC2016 # expanded at exit
t_atexit '[ -z "$server" ] || unserve'
serve() {
	"$P/fmm-fuse-stall-$FMM_NATIVE" serve $S/mnt >$S/server 2>$S/server.err &
	server=$!
	for _ in $(seq 100); do grep -q ready $S/server && return; sleep 0.1; done
	t_fail_all "fmm-fuse-stall serve" "$(cat $S/server.err)"
}
# unserve: kill the server (the stalled reads fail), unmount.
unserve() {
	kill -KILL $server
	wait $server 2>/dev/null
	server=
	umount -l $S/mnt
}

# --- (a) an exec waiting with its exec_update_lock held -------------------
t_insmod layout=3
serve
# python3 as nobody: map the FUSE file, let any process of its user read
# its memory (Yama's ptrace_scope=1 allows only ancestors), print the
# address, exec true on a byte from stdin.  Its pages are locked in first
# (mlockall: root lifts the limit) and it allocates nothing on its way to
# execve: on 6.1 a page fault or a brk() of its own would queue for the
# mmap lock too, before the exec took its exec_update_lock.
coproc T {
	# shellcheck disable=SC2016 # python's
	exec prlimit --memlock=unlimited "${NOBODY[@]}" python3 -c 'import ctypes, gc, os, sys
gc.disable()
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.prctl(0x59616d61, ctypes.c_ulong(2**64 - 1), 0, 0, 0)
fd = os.open(sys.argv[1], os.O_RDONLY)
execv, read = os.execv, os.read
try:
    execv("/nonexistent", ["true"])
except OSError:
    pass
print("warm", flush=True)
if libc.mlockall(1):
    sys.exit("mlockall failed")
print(libc.mmap(None, 65536, 1, 1, fd, 0), flush=True)
read(0, 1)
execv("/bin/true", ["true"])' $S/mnt/stall
}
tpid=$T_PID
read -r -t 30 addr <&"${T[0]}" && read -r -t 30 addr <&"${T[0]}" || addr=
"${NOBODY[@]}" dd if="/proc/$tpid/mem" of=/dev/null bs=4096 count=1 \
	iflag=skip_bytes skip=$((addr)) 2>$S/dd.err &
dd=$!
for _ in $(seq 100); do grep -q stalled $S/server.err && break; sleep 0.1; done
# Writing 5 resets the peak RSS under the mmap lock taken for writing.
"${NOBODY[@]}" bash -c "echo 5 >/proc/$tpid/clear_refs" &
writer=$!
wait_for 10 in_d $writer
echo >&"${T[1]}"
wait_for 10 in_d "$tpid"
t_eq "harness: nobody's python3 ($tpid) execs, and waits in D state with its comm unchanged: its mmap lock is held (a stalled read of its mapped FUSE page) and a writer waits for it" \
	"D python3 stalled, writer D" \
	"$(state "$tpid") $(cat /proc/"$tpid"/comm) $(grep -o stalled $S/server.err | head -1), writer $(state $writer)"

# read_tasks NAME CMD...: CMD reads the tasks file; one result: it ends
# within 5 s and shows the exec'ing process as "PID - - - python3".
read_tasks() {
	local name=$1 t0=$SECONDS out rc line
	shift
	out=$(timeout 10 "$@" 2>&1)
	rc=$?
	line=$(awk -v p="$tpid" '$1 == p' <<<"$out")
	if [ $rc = 0 ] && ((SECONDS - t0 <= 5)) && [ "$line" = "$tpid - - - python3" ]; then
		t_ok "$name: read at once ($((SECONDS - t0)) s), the exec'ing process as '$line'"
	else
		t_fail "$name: read at once, the exec'ing process as '$tpid - - - python3'" \
			"exit $rc after $((SECONDS - t0)) s (124: killed by timeout), its line: '$line'"
	fi
}
read_tasks "root" cat /proc/flexmmap/tasks
mount -t proc -o hidepid=1 proc $S/hp || t_fail_all "mount proc hidepid=1"
read_tasks "nobody, hidepid=1" "${NOBODY[@]}" cat $S/hp/flexmmap/tasks
umount $S/hp
t_eq "control: the stalled exec's own /proc/PID/comm still reads (no lock)" python3 \
	"$(timeout 10 "${NOBODY[@]}" cat /proc/"$tpid"/comm 2>&1)"

# A reader started just before rmmod: the unload waits for the readers of
# its files, so a reader that waited for the exec kept rmmod in D state.
cat /proc/flexmmap/tasks >/dev/null &
reader=$!
rmmod flexmmap >$S/rmmod.out 2>&1 &
rm_pid=$!
t0=$SECONDS
if wait_gone 20 $rm_pid && wait $rm_pid; then
	t_ok "rmmod returns within 20 s with a tasks reader started while the exec waits ($((SECONDS - t0)) s)"
else
	t_fail "rmmod returns within 20 s with a tasks reader started while the exec waits" \
		"after $((SECONDS - t0)) s: $(cat $S/rmmod.out) reader state $(state $reader), rmmod state $(state $rm_pid)"
fi
t_eq "harness: the exec still waits (D), the reader is done" "D gone" \
	"$(state "$tpid") $(kill -0 $reader 2>/dev/null && echo running || echo gone)"
# Clean up, in the order that frees each: the reader (a module that made
# it wait let it go on SIGKILL, and the rmmod behind it), the exec (its wait
# is killable), the writer, then the server (the stalled read fails).
kill -KILL $reader 2>/dev/null
wait_gone 30 $rm_pid
kill -KILL "$tpid" $writer 2>/dev/null
wait $writer 2>/dev/null
unserve
wait $dd
t_check "harness: the stalled read ends once the server is gone" test $? != 0
wait_gone 10 "$tpid"
t_check "harness: the exec, the writer and rmmod are gone at the end" \
	bash -c "! kill -0 $tpid $writer $rm_pid 2>/dev/null && test ! -e /sys/module/flexmmap"
wait 2>/dev/null

# --- (b) marked execs that stall: nobody's share of the markings table ------
rmmod flexmmap 2>/dev/null
t_insmod layout=2
serve
lay=$P/fmm-layout-$FMM_NATIVE
# nobody's own script and copy, marked by nobody; root's copy, root's.
# shellcheck disable=SC2016 # the inner bash's
"${NOBODY[@]}" bash -c 'printf "#!%s\n" "$1" >"$2/script" && cp "$3" "$2/lay" &&
	chmod 755 "$2/script" "$2/lay" &&
	setfattr -n user.flexmmap.layout -v legacy "$2/script" &&
	setfattr -n user.flexmmap.layout -v legacy "$2/lay"' bash $S/mnt/stall $W "$lay" ||
	t_fail_all "nobody's marked script and copy in $W"
{ cp "$lay" $W/lay-root && setfattr -n user.flexmmap.layout -v legacy $W/lay-root; } ||
	t_fail_all "root's marked copy (no user attributes on $W: $(stat -f -c %T $W))"
t_check "control: nobody's marked copy runs bottom-up under layout=2" \
	"${NOBODY[@]}" $W/lay --expect bottomup --expect-alloc module-bottomup --expect-mode legacy
stalled=()
for _ in $(seq 16); do
	"${NOBODY[@]}" $W/script 2>/dev/null &
	stalled+=("$!")
done
if wait_for 30 in_execve "${stalled[@]}" && grep -q "READ 1 stalled" $S/server.err; then
	t_ok "harness: 16 execs of nobody's marked script wait in execve on their interpreter's first page"
else
	t_fail "harness: 16 execs of nobody's marked script wait in execve on their interpreter's first page" \
		"states: $(for p in "${stalled[@]}"; do printf '%s ' "$(state "$p")"; done)" \
		"server: $(cat $S/server.err)"
fi
d0=$(stat_of mark_dropped)
t_dmesg_mark
t0=$SECONDS
# In the background: one that got a slot waits in D state like the others
# (the kernel's hung-task check panics the guest after 120 s of that).
"${NOBODY[@]}" $W/script >$S/17.out 2>&1 &
p17=$!
if wait_gone 5 $p17 && [[ $(cat $S/17.out) == *": Resource temporarily unavailable" ]]; then
	t_ok "the 17th fails at once with EAGAIN ($((SECONDS - t0)) s)"
elif ! kill -0 $p17 2>/dev/null; then
	t_fail "the 17th fails at once with EAGAIN" "$(cat $S/17.out)"
else
	t_fail "the 17th fails at once with EAGAIN" "still running after $((SECONDS - t0)) s"
	stalled+=("$p17")
fi
t_eq "it is counted (mark_dropped) and logged with the file's name and uid" "1, 1" \
	"$(($(stat_of mark_dropped) - d0)), $(t_dmesg_since | grep -c 'script: no markings slot for uid 65534: exec refused')"
t_check "meanwhile root's marked copy gets its marking (bottom-up under layout=2)" \
	$W/lay-root --expect bottomup --expect-alloc module-bottomup --expect-mode legacy
t_check "meanwhile nobody's unmarked exec runs (layout=2: top-down)" \
	"${NOBODY[@]}" "$lay" --expect topdown --expect-alloc module-topdown --expect-mode flexible
unserve
gone=0
for p in "${stalled[@]}"; do wait_gone 30 "$p" && gone=$((gone + 1)); done
t_eq "harness: the stalled execs end once the server is gone" ${#stalled[@]} $gone
t_check "then nobody's marked copy gets its marking again (bottom-up)" \
	"${NOBODY[@]}" $W/lay --expect bottomup --expect-alloc module-bottomup --expect-mode legacy
rmmod flexmmap || t_fail "rmmod at the end"
