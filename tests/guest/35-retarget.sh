#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Live re-targeting through vm.flexmmap_retarget ("PID MODE"): a running
# process's next mmaps follow the new mode, its existing mappings stay put,
# bad requests are refused with a clear error and change nothing, and rmmod
# with re-targeted processes running is safe.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 51

R=/proc/sys/vm/flexmmap_retarget
P=$FMM_PROBES
rmmod flexmmap 2>/dev/null
t_insmod layout=0

# The worker: fmm-sleep, driven line by line through a coprocess; the
# wrapper (setarch ...) execs it, so its PID is the coprocess's.
start_worker() { # BITS [WRAPPER...]
	local bits=$1
	shift
	coproc W { exec "$@" "$P/fmm-sleep-$bits"; }
	local line
	read -r -t 30 line <&"${W[0]}" || line=
	wpid=${line#ready }
	[[ $line == ready* && $wpid == "$W_PID" ]] ||
		t_fail_all "fmm-sleep-$bits did not start: '$line'"
}

# Map N regions; print their addresses (hex), one per line.
map_n() {
	local line
	for _ in $(seq "$1"); do
		echo map >&"${W[1]}"
		read -r -t 30 line <&"${W[0]}" || line="timeout"
		[[ $line == mapped\ 0x* ]] || { echo "bad:$line"; continue; }
		echo "${line#mapped }"
	done
}

# "asc" if strictly increasing, "desc" if strictly decreasing, else "mixed".
direction() {
	local prev='' dir='' a d
	for a in "$@"; do
		if [ -n "$prev" ]; then
			if ((a > prev)); then d=asc; else d=desc; fi
			if [ -z "$dir" ]; then dir=$d; elif [ "$dir" != "$d" ]; then dir=mixed; fi
		fi
		prev=$a
	done
	echo "${dir:-mixed}"
}

task_line() { awk -v p="$1" '$1 == p { print $2, $3 }' /proc/flexmmap/tasks; }
stat_of() { awk -v k="$1" '$1 == k { print $2 }' /proc/flexmmap/stats; }

# The address ranges of a maps file, "START END" in hex.
ranges() { awk '{ split($1, r, "-"); print "0x" r[1], "0x" r[2] }' "/proc/$1/maps"; }

# The ranges of $1 (a ranges list) not inside any range of $2: a mapping
# that moved or vanished.  Growing by a merge with a new neighbour is fine.
not_covered() {
	local s e s2 e2 inside
	while read -r s e; do
		inside=false
		while read -r s2 e2; do
			if ((s2 <= s && e <= e2)); then inside=true; break; fi
		done <<<"$2"
		$inside || printf '%x-%x\n' "$s" "$e"
	done <<<"$1"
}

# Checks that hold on the kernel's top-down allocator too (the mappings did
# not move, the process still works, maps descend) show the module acting
# only when the process was on its allocators: "moved" records that it was
# seen on module-bottomup and then module-topdown, and those results fail
# without it.
retarget_case() { # BITS
	local bits=$1 before after addrs dir lo hi a ok list st r0
	moved=''
	start_worker "$bits"
	r0=$(stat_of retarget)
	addrs=$(map_n 3)
	# shellcheck disable=SC2086 # one address per word
	t_eq "control (stock, before any retarget): $bits-bit worker on kernel-topdown, 3 maps descending" \
		"kernel kernel-topdown desc" "$(task_line "$wpid") $(direction $addrs)"
	before=$(ranges "$wpid")

	for mode in legacy flexible kernel; do
		if ! echo "$wpid $mode" >$R; then
			t_fail "$bits-bit: retarget $wpid $mode accepted"
			continue
		fi
		addrs=$(map_n 4)
		# shellcheck disable=SC2086 # one address per word
		dir=$(direction $addrs)
		list=$(tr '\n' ' ' <<<"$addrs")
		st=$(task_line "$wpid")
		case $mode in
		legacy)
			t_eq "$bits-bit: now legacy" "legacy module-bottomup" "$st"
			[ "$st" != "legacy module-bottomup" ] || moved=bottomup
			t_eq "$bits-bit: legacy: 4 new maps ascending ($list)" asc "$dir"
			# Bottom-up from the legacy base: a third of the task size.
			# A 32-bit kernel (the i386 guest): TASK_SIZE 0xc0000000,
			# so the base is 0x40000000; a compat task: 4 GiB / 3.
			if [ "$bits" = 32 ] && [ "$FMM_NATIVE" = 32 ]; then lo=0x40000000 hi=0x80000000
			elif [ "$bits" = 32 ]; then lo=0x55555000 hi=0x80000000; else
				lo=0x2aaaaaaab000 hi=0x400000000000; fi
			ok=true
			for a in $addrs; do ((a >= lo && a < hi)) || ok=false; done
			if $ok; then
				t_ok "$bits-bit: legacy: new maps just above the legacy base $lo"
			else
				t_fail "$bits-bit: legacy: new maps in [$lo, $hi)" "saw $list"
			fi
			;;
		flexible)
			t_eq "$bits-bit: now flexible" "flexible module-topdown" "$st"
			[ "$st" != "flexible module-topdown" ] || [ -z "$moved" ] || moved+=,topdown
			t_eq "$bits-bit: flexible: 4 new maps descending on module-topdown ($list)" \
				"desc flexible module-topdown" "$dir $st"
			if [ "$bits" = 32 ]; then lo=0x80000000; else lo=0x400000000000; fi
			ok=true
			[ "$st" = "flexible module-topdown" ] || ok=false
			for a in $addrs; do ((a >= lo)) || ok=false; done
			if $ok; then
				t_ok "$bits-bit: flexible: new maps below the stack gap, above $lo"
			else
				t_fail "$bits-bit: flexible: new maps above $lo, on module-topdown" "saw $list ($st)"
			fi
			;;
		kernel)
			# The module's retarget counter says the three requests
			# were carried out (only the module moves it).
			t_eq "$bits-bit: back on the kernel's allocator after 3 retargets" \
				"kernel kernel-topdown +3" "$st +$(($(stat_of retarget) - r0))"
			t_eq "$bits-bit: kernel again: 4 new maps descending, after module-bottomup and -topdown" \
				"desc bottomup,topdown" "$dir $moved"
			;;
		esac
	done
	after=$(ranges "$wpid")
	t_eq "$bits-bit: no existing mapping moved across module-bottomup and -topdown" \
		"bottomup,topdown" "$moved$(not_covered "$before" "$after")"
	echo check >&"${W[1]}"
	read -r -t 30 a <&"${W[0]}"
	t_eq "$bits-bit: the process's self-check still holds after module-bottomup and -topdown" \
		"ok 1 bottomup,topdown" "$a $moved"
}

retarget_case 32
echo quit >&"${W[1]}"
wait "$wpid"
t_eq "32-bit worker exits 0 after module-bottomup and -topdown" "0 bottomup,topdown" "$? $moved"

# A 32-bit process with a 3 GiB space (setarch --3gb): its bases come from
# its own personality.  (On a 32-bit kernel every process has a 3 GiB space
# and ADDR_LIMIT_3GB changes nothing: the same expectations hold.)  Computed from the writer's (a 64-bit shell: 4 GiB),
# the top-down base landed above 3 GiB and every later mmap failed.
start_worker 32 setarch i386 --3gb
moved=''
for mode in flexible legacy; do
	echo "$wpid $mode" >$R || t_fail "--3gb: retarget $wpid $mode accepted"
	addrs=$(map_n 3)
	list=$(tr '\n' ' ' <<<"$addrs")
	st=$(task_line "$wpid")
	if [ "$mode" = flexible ]; then
		want=desc lo=0x80000000 alloc="flexible module-topdown"
	else
		want=asc lo=0x40000000 alloc="legacy module-bottomup"
	fi
	ok=true
	[ "$st" = "$alloc" ] || ok=false
	for a in $addrs; do [[ $a == 0x* ]] && ((a >= lo && a < 0xc0000000)) || ok=false; done
	# shellcheck disable=SC2086 # one address per word
	if $ok && [ "$(direction $addrs)" = "$want" ]; then
		t_ok "--3gb: after a retarget to $mode, $alloc, 3 maps $want in [$lo, 3 GiB) ($list)"
		moved+=" $mode"
	else
		t_fail "--3gb: after a retarget to $mode, $alloc, 3 maps $want in [$lo, 3 GiB)" "saw $list ($st)"
	fi
done
echo quit >&"${W[1]}"
wait "$wpid"
t_eq "--3gb worker exits 0 (its own checks held) after both retargets" "0 flexible legacy" "$?$moved"
if t_bits_run 64; then
	retarget_case 64
else
	# The 11 results of retarget_case, and a 32-bit worker for the
	# requests below.
	for r in "control (stock, before any retarget): 64-bit worker on kernel-topdown, 3 maps descending" \
		"64-bit: now legacy" "64-bit: legacy: 4 new maps ascending" \
		"64-bit: legacy: new maps just above the legacy base" "64-bit: now flexible" \
		"64-bit: flexible: 4 new maps descending on module-topdown" \
		"64-bit: flexible: new maps below the stack gap" \
		"64-bit: back on the kernel's allocator after 3 retargets" \
		"64-bit: kernel again: 4 new maps descending, after module-bottomup and -topdown" \
		"64-bit: no existing mapping moved across module-bottomup and -topdown" \
		"64-bit: the process's self-check still holds after module-bottomup and -topdown"; do
		t_skip "$r" "$FMM_NATIVE_SKIP"
	done
	start_worker 32
fi

# --- bad requests: refused, errno says why, nothing changes ---------------
echo "$wpid legacy" >$R
refuse() { # NAME ERRNO-TEXT INPUT [RUNNER...]
	local name=$1 want=$2 input=$3 err label="refused: $1"
	[[ $name != control* ]] || label=$name
	shift 3
	# shellcheck disable=SC2016 # expanded by the inner bash
	if ! err=$("$@" bash -c 'printf "%s\n" "$1" > "$2"' bash "$input" "$R" 2>&1) &&
		grep -q "$want" <<<"$err"; then
		t_ok "$label ($want)"
	else
		t_fail "$label ($want)" "saw: $err"
	fi
}
refuse "unknown PID" "No such process" "4194303 legacy"
refuse "kernel thread (kthreadd, PID 2)" "Invalid argument" "2 legacy"
refuse "mode auto (decided at exec only)" "Invalid argument" "$wpid auto"
refuse "mode 3" "Invalid argument" "$wpid 3"
refuse "unknown mode" "Invalid argument" "$wpid sideways"
refuse "no mode" "Invalid argument" "$wpid"
refuse "PID not a number" "Invalid argument" "abc legacy"
refuse "negative PID" "Invalid argument" "-5 legacy"
refuse "trailing junk" "Invalid argument" "$wpid legacy extra"
refuse "empty line" "Invalid argument" ""
# PID 1's allocator must not move: 4294967297 truncated to an int is 1.
pid1_before=$(task_line 1)
refuse "PID past an int (2^32 + 1)" "Invalid argument" "4294967297 legacy"
refuse "PID and mode glued (1legacy)" "Invalid argument" "1legacy"
refuse "PID with trailing junk" "Invalid argument" "${wpid}x legacy"
refuse "PID 0" "Invalid argument" "0 legacy"
refuse "mode glued to junk" "Invalid argument" "$wpid legacyx"
t_eq "control (as without the module): after the malformed PIDs PID 1's allocator is unchanged" \
	"$pid1_before" "$(task_line 1)"
refuse "root in a user namespace (unshare -U -r)" "Operation not permitted" \
	"$wpid flexible" unshare -U -r
refuse "root without CAP_SYS_ADMIN" "Operation not permitted" "$wpid flexible" \
	setpriv --inh-caps=-sys_admin --bounding-set=-sys_admin
refuse "control (the file's mode, 0200): an unprivileged user is refused" "Permission denied" "$wpid flexible" \
	setpriv --reuid=65534 --regid=65534 --clear-groups
t_eq "after the refusals the worker is still legacy" "legacy module-bottomup" \
	"$(task_line "$wpid")"
if cat $R >/dev/null 2>&1; then
	t_fail "control (the file's mode, 0200): the control file is write-only" "a read succeeded"
else
	t_ok "control (the file's mode, 0200): the control file is write-only"
fi

# --- the compare tool shows one process before and after ----------------
out=$("$P/flexmmap-compare" --module "$FMM_KO" --retarget legacy,flexible -- "$P/fmm-sleep-32" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "then 'legacy', 4 more" <<<"$out" &&
	grep -q 'legacy / module-bottomup' <<<"$out" &&
	grep -q 'flexible / module-topdown' <<<"$out"; then
	t_ok "flexmmap-compare --retarget shows the process before and after"
else
	t_fail "flexmmap-compare --retarget shows the process before and after" \
		"exit $rc" "$out"
fi
t_diag "flexmmap-compare --retarget legacy,flexible -- fmm-sleep-32:"
t_sub <<<"$out"

# --- unload with a re-targeted process running -------------------------
t_dmesg_mark
st=$(task_line "$wpid")
rmmod flexmmap
t_eq "rmmod with a re-targeted process running (on module-bottomup)" \
	"0 legacy module-bottomup" "$? $st"
t_check "control (stock after rmmod): the control file is gone" test ! -e $R
addrs=$(map_n 2)
echo quit >&"${W[1]}"
wait "$wpid"
wrc=$?
t_eq "after rmmod the process that was on module-bottomup still maps memory and exits 0" \
	"legacy module-bottomup, exit 0" "$st$(grep bad: <<<"$addrs"), exit $wrc"
