#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# /proc/flexmmap/tasks shows a reader what that /proc shows it, no more:
# only the processes of the procfs instance's PID namespace, numbered as
# there; none that hidepid=2 hides; under hidepid=1 those whose /proc/PID
# the reader may not open as "PID - - - -", without name; MODE, ALLOCATOR
# and nx only for processes the reader may ptrace-read ("-" otherwise); a
# comm can add no line and no field.  /proc/flexmmap/self is the reader's
# own line.  Readers: root, nobody, root of a new user namespace (and
# nobody's), in the init and in a new PID namespace.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 42

NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
HP=/tmp/fmm-39-proc
rmmod flexmmap 2>/dev/null
t_insmod layout=3

# tv_view P: three lines, the PIDs that P/flexmmap/tasks lists, the user
# processes (neither kernel threads nor zombies) P shows this reader, and
# the reader's own line of P/flexmmap/tasks.  Only
# shell builtins: the reader forks nothing between the two looks.  The file
# is read to its end at once: a line-by-line "read" seeks back after each
# line, and each seek makes the kernel write the list anew.
tv_view() {
	local p=$1 all pid rest d line a=() b=()
	read -r -d '' all <"$p/flexmmap/tasks"
	while read -r pid rest; do a+=("$pid"); done <<<"$all"
	for d in "$p"/[0-9]*; do
		read -r line <"$d/stat" 2>/dev/null || continue
		# shellcheck disable=SC2086 # fields after "comm)": state ... flags
		set -- ${line##*) }
		# 0x200000: PF_KTHREAD
		[ "$1" != Z ] && [ $(($7 & 0x200000)) = 0 ] && b+=("${d##*/}")
	done
	echo "${a[*]}"
	echo "${b[*]}"
	tv_line "$p" $$
}
# tv_line P PID: PID's line in P/flexmmap/tasks.
tv_line() { awk -v p="$2" '$1 == p' "$1/flexmmap/tasks"; }
# exec_wait PID NAME: wait until PID has exec'd NAME (its comm), with
# builtins only: a reader that forks adds a process to what it reads.
exec_wait() {
	local i c
	for ((i = 0; i < 200000; i++)); do
		read -r c <"/proc/$1/comm" && [ "$c" = "$2" ] && return
	done
}
export -f tv_view tv_line exec_wait

sorted() { tr ' ' '\n' | grep . | sort -n | tr '\n' ' '; }

# same_set NAME OUTPUT-OF-tv_view: the listed PIDs are the ones /proc
# shows, and the reader's own line (a bash exec'd since insmod layout=3)
# shows what the module gave it: "auto module-topdown nx=0".
same_set() {
	local t p o
	t=$(sed -n 1p <<<"$2" | sorted)
	p=$(sed -n 2p <<<"$2" | sorted)
	o=$(sed -n 3p <<<"$2")
	if [ -n "$p" ] && [ "$t" = "$p" ] && [[ $o =~ $MOD_RE ]]; then
		t_ok "$1 (own line: auto, module-topdown)"
	else
		t_fail "$1 (own line: auto, module-topdown)" "tasks: $t" "/proc: $p" "own line: '$o'"
	fi
}

# has_values NAME LINE / no_values NAME LINE: MODE ALLOCATOR nx shown or "-".
# mod_values NAME LINE: the values of a process exec'd since insmod
# layout=3 (a program with PT_GNU_STACK: "auto module-topdown nx=0"), so
# the line shows what the module did, not only that it has a shape.
has_values() {
	if [[ $2 =~ ^[0-9]+\ [a-z]+\ [a-z-]+\ nx=[0-3]\ [^\ ]+$ ]]; then
		t_ok "$1"
	else
		t_fail "$1" "line: '$2'"
	fi
}
MOD_RE='^[0-9]+ auto module-topdown nx=0 [^ ]+$'
mod_values() {
	if [[ $2 =~ $MOD_RE ]]; then
		t_ok "$1 (auto, module-topdown)"
	else
		t_fail "$1 (auto, module-topdown)" "line: '$2'"
	fi
}
no_values() {
	if [[ $2 =~ ^[0-9]+\ -\ -\ -\ [^\ ]+$ ]] && [[ $2 != *' -' ]]; then
		t_ok "$1"
	else
		t_fail "$1" "line: '$2'"
	fi
}
# hidden NAME LINE: a process listed without name and values (hidepid=1).
hidden() {
	if [[ $2 =~ ^[0-9]+\ -\ -\ -\ -$ ]]; then
		t_ok "$1"
	else
		t_fail "$1" "line: '$2'"
	fi
}


# --- (a) a new PID namespace -------------------------------------------------
ns_run() {
	# shellcheck disable=SC2016 # expanded by the inner bash
	"$@" bash -c 'sleep 60 & sleep 60 &
		tv_view /proc
		echo "pid1: $(tv_line /proc 1)"
		read -r s rest </proc/flexmmap/self; echo "self: $s $rest"
		echo "me: $$"
		kill %1 %2'
}
for who in root userns-root; do
	case $who in
	root) out=$(ns_run unshare -p -f --mount-proc) ;;
	userns-root) out=$(ns_run unshare -U -r -p -f --mount-proc) ;;
	esac
	same_set "$who, new PID namespace: tasks lists exactly the processes of its /proc" "$out"
	line=$(sed -n 's/^pid1: //p' <<<"$out")
	if [[ $line =~ ^1\ .*\ bash$ ]] && [[ $line =~ $MOD_RE ]]; then
		t_ok "$who, new PID namespace: PID 1 is its bash, not the host's init, with its values (auto, module-topdown)"
	else
		t_fail "$who, new PID namespace: PID 1 is its bash, not the host's init, with its values (auto, module-topdown)" "line: '$line'"
	fi
	self=$(sed -n 's/^self: //p' <<<"$out")
	mod_values "$who, new PID namespace: /proc/flexmmap/self gives its namespace PID ($(sed -n 's/^me: //p' <<<"$out")) and values" \
		"$([ "${self%% *}" = "$(sed -n 's/^me: //p' <<<"$out")" ] && echo "$self")"
done

# nobody in a new PID namespace whose /proc is remounted hidepid=1: its
# processes are 1 (root's bash), root's sleep, nobody's bash (exec'd by
# setpriv) and its sleep; root's listed as "ls /proc" lists them, but with
# neither name nor values.  The reader forks nothing before it reads.
hp1_ns() {
	mount -o remount,hidepid=1 /proc || exit 9
	sleep 60 &
	echo "rs: $!"
	# shellcheck disable=SC2016 # expanded by the inner bash
	setpriv --reuid=65534 --regid=65534 --clear-groups bash -c '
		sleep 60 &
		exec_wait $! sleep
		read -r -d "" all </proc/flexmmap/tasks
		echo "$all"
		echo "me: $$ $!"
		echo "comm1: $(cat /proc/1/comm 2>&1)"
		kill %1'
	kill %1
}
export -f hp1_ns
out=$(unshare -p -f --mount-proc bash -c hp1_ns)
rs=$(sed -n 's/^rs: //p' <<<"$out")
read -r me sl <<<"$(sed -n 's/^me: //p' <<<"$out")"
t_eq "nobody, new PID namespace, its /proc hidepid=1: root's processes listed without name or values, its own with both" \
	"1 - - - -|$rs - - - -|$me auto module-topdown nx=0 bash|$sl auto module-topdown nx=0 sleep" \
	"$(grep '^[0-9]' <<<"$out" | paste -sd'|')"
if [[ $(sed -n 's/^comm1: //p' <<<"$out") == *'not permitted'* ]]; then
	t_ok "control: nobody, new PID namespace, hidepid=1: /proc/1/comm cannot be read"
else
	t_fail "control: nobody, new PID namespace, hidepid=1: /proc/1/comm cannot be read" "$out"
fi

# --- (b) hidepid, and which columns a reader gets ----------------------------
# root's sleep must outlive (d), which can come minutes later under TCG on a
# loaded host (with "sleep 60" it had exited: its line was empty); killed
# at the end of (d).
sleep 1200 &
rootsleep=$!
out=$(bash -c 'tv_view /proc')
same_set "root: tasks lists every user process" "$out"
bad=$(awk '!/^[0-9]+ [a-z]+ [a-z-]+ nx=[0-3] [^ ]+$/' /proc/flexmmap/tasks)
own=$(sed -n 3p <<<"$out")
[[ $own =~ $MOD_RE ]] || bad="$bad${bad:+ }a new bash's own line: '$own'"
t_eq "root: every line has values (a new bash's: auto, module-topdown)" "" "$bad"
out=$(bash -c 'read -r l </proc/flexmmap/self; echo "$l"; tv_line /proc $$')
mod_values "root: /proc/flexmmap/self is its own line, with values" \
	"$([ "$(sed -n 1p <<<"$out")" = "$(sed -n 2p <<<"$out")" ] && sed -n 1p <<<"$out")"

out=$("${NOBODY[@]}" bash -c 'sleep 60 & tv_view /proc; kill %1')
same_set "nobody: tasks lists every user process" "$out"
no_values "nobody: PID 1 listed, with - for MODE ALLOCATOR nx" \
	"$("${NOBODY[@]}" bash -c 'tv_line /proc 1')"
no_values "nobody: root's sleep listed, with -" \
	"$("${NOBODY[@]}" bash -c "tv_line /proc $rootsleep")"
mod_values "nobody: its own process has values" \
	"$("${NOBODY[@]}" bash -c 'tv_line /proc $$')"
mod_values "nobody: /proc/flexmmap/self has values" \
	"$("${NOBODY[@]}" cat /proc/flexmmap/self)"

mkdir -p $HP
# hidepid=1: /proc lists every process, and lets nobody open only its own
# (the others' /proc/PID: "Operation not permitted").
if ! mount -t proc -o hidepid=1 proc $HP; then
	t_fail "mount proc hidepid=1"
else
	# shellcheck disable=SC2016 # expanded by the inner bash
	out=$("${NOBODY[@]}" bash -c 'sleep 60 &
		exec_wait $! sleep
		read -r -d "" all <'$HP'/flexmmap/tasks
		echo "$all"
		echo "me: $$ $!"
		echo "comm1: $(cat '$HP'/1/comm 2>&1)"
		kill %1')
	read -r me sl <<<"$(sed -n 's/^me: //p' <<<"$out")"
	tasks=$(grep '^[0-9]' <<<"$out")
	if [[ $(sed -n 's/^comm1: //p' <<<"$out") == *'not permitted'* ]]; then
		t_ok "control: nobody, hidepid=1: /proc/1/comm cannot be read"
	else
		t_fail "control: nobody, hidepid=1: /proc/1/comm cannot be read" "$out"
	fi
	hidden "nobody, hidepid=1: PID 1 listed without name or values" \
		"$(awk '$1 == 1' <<<"$tasks")"
	hidden "nobody, hidepid=1: root's sleep listed without name or values" \
		"$(awk -v p=$rootsleep '$1 == p' <<<"$tasks")"
	t_eq "nobody, hidepid=1: its own bash and sleep with name and values" \
		"$me auto module-topdown nx=0 bash|$sl auto module-topdown nx=0 sleep" \
		"$(awk -v a="$me" -v b="$sl" '$1 == a || $1 == b' <<<"$tasks" | paste -sd'|')"
	t_eq "nobody, hidepid=1: no other line has a name" "" \
		"$(awk -v a="$me" -v b="$sl" '$1 != a && $1 != b && $5 != "-"' <<<"$tasks")"
	has_values "root, hidepid=1: PID 1 with values" "$(tv_line $HP 1)"
	umount $HP
fi
if mount -t proc -o hidepid=1,gid=4242 proc $HP; then
	no_values "nobody in gid=, hidepid=1: PID 1 with its name, without values" \
		"$(setpriv --reuid=65534 --regid=65534 --groups=4242 bash -c 'tv_line '$HP' 1')"
	umount $HP
else
	t_fail "mount proc hidepid=1,gid=4242"
fi
if ! mount -t proc -o hidepid=2 proc $HP; then
	t_fail "mount proc hidepid=2"
else
	out=$("${NOBODY[@]}" bash -c 'sleep 60 & tv_view '$HP'; kill %1')
	same_set "nobody, hidepid=2: tasks lists only what that /proc shows" "$out"
	n=$(sed -n 1p <<<"$out" | wc -w)
	if [ "$n" -ge 2 ] && [ "$n" -le 4 ]; then
		t_ok "nobody, hidepid=2: sees only its own processes"
	else
		t_fail "nobody, hidepid=2: sees only its own processes" "listed: $(sed -n 1p <<<"$out")"
	fi
	t_eq "nobody, hidepid=2: no PID 1" "" "$("${NOBODY[@]}" bash -c 'tv_line '$HP' 1')"
	out=$(bash -c 'tv_view '$HP)
	same_set "root, hidepid=2: tasks lists every user process" "$out"
	umount $HP
fi
# gid=: a member of the group sees every process, columns still by ptrace.
if mount -t proc -o hidepid=2,gid=4242 proc $HP; then
	grp=(setpriv --reuid=65534 --regid=65534 --groups=4242)
	out=$("${grp[@]}" bash -c 'tv_view '$HP)
	same_set "nobody in gid=, hidepid=2: tasks lists every user process" "$out"
	no_values "nobody in gid=, hidepid=2: PID 1 with -" \
		"$("${grp[@]}" bash -c 'tv_line '$HP' 1')"
	umount $HP
fi

# --- (d) root of a user namespace (the same /proc, no PID namespace) ---------
out=$(unshare -U -r bash -c 'sleep 60 & tv_view /proc; kill %1')
same_set "userns-root: tasks lists every user process" "$out"
no_values "userns-root: PID 1 (host root's) with -" \
	"$(unshare -U -r bash -c 'tv_line /proc 1')"
no_values "userns-root: host root's sleep with -" \
	"$(unshare -U -r bash -c "tv_line /proc $rootsleep")"
mod_values "userns-root: its own process has values" \
	"$(unshare -U -r bash -c 'tv_line /proc $$')"
out=$("${NOBODY[@]}" unshare -U -r bash -c 'sleep 60 & tv_view /proc; kill %1')
same_set "nobody's userns-root: tasks lists every user process" "$out"
no_values "nobody's userns-root: PID 1 with -" \
	"$("${NOBODY[@]}" unshare -U -r bash -c 'tv_line /proc 1')"
mod_values "nobody's userns-root: its own process has values" \
	"$("${NOBODY[@]}" unshare -U -r bash -c 'tv_line /proc $$')"
if mount -t proc -o hidepid=2 proc $HP; then
	out=$("${NOBODY[@]}" unshare -U -r bash -c 'sleep 60 & tv_view '$HP'; kill %1')
	same_set "nobody's userns-root, hidepid=2: tasks lists only what that /proc shows" "$out"
	t_eq "nobody's userns-root, hidepid=2: no PID 1" "" \
		"$("${NOBODY[@]}" unshare -U -r bash -c 'tv_line '$HP' 1')"
	umount $HP
fi
rmdir $HP
kill $rootsleep

# --- (c) a comm cannot add a line or a field ---------------------------------
# prctl(PR_SET_NAME) (15), then wait.
set_name_and_wait() {
	python3 -c 'import ctypes, sys, time
ctypes.CDLL(None).prctl(15, sys.argv[1].encode())
time.sleep(60)' "$1" &
}
set_name_and_wait $'x\n1 kernel kernel-topdown nx=0 y'
nl=$!
set_name_and_wait $'a b\tc d e f'
sp=$!
for _ in $(seq 100); do
	[ "$(head -c1 /proc/$nl/comm)$(head -c1 /proc/$sp/comm)" = xa ] && break
	sleep 0.1
done
tasks=$(cat /proc/flexmmap/tasks)
bad=$(awk 'NF != 5 || $1 !~ /^[0-9]+$/ || $4 !~ /^(nx=[0-3]|-)$/' <<<"$tasks")
t_eq "comms with a newline, spaces, a tab: every line has 5 fields" "" "$bad"
t_eq "every PID has one line" "$(wc -l <<<"$tasks")" \
	"$(awk '{ print $1 }' <<<"$tasks" | sort -u | wc -l)"
t_eq "the newline comm is escaped" 'x\n1\040kernel\040kern' \
	"$(awk -v p=$nl '$1 == p { print $5 }' <<<"$tasks")"
t_eq "the space and tab comm is escaped" 'a\040b\tc\040d\040e\040f' \
	"$(awk -v p=$sp '$1 == p { print $5 }' <<<"$tasks")"
kill $nl $sp
wait 2>/dev/null

rmmod flexmmap || t_fail "rmmod"
