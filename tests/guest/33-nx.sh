#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The NX policy, vm.flexmmap_nx: each mode judged by our probes (64- and
# 32-bit, with, without and with an executable PT_GNU_STACK) and by
# paxtest's exec and mprotect test programs; W^X (mode 3) lets ordinary
# programs run and stops deliberately bad ones with a log line naming them;
# bad input changes nothing; unload leaves running processes alone.  The
# core W^X checks run again under layouts 1 and 2, on the module's own
# allocators (asserted with fmm-layout --expect-alloc), the denials judged by
# the module's counters.  The probes on the stock kernel and after rmmod are
# controls (stock behaviour).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 78

S=/proc/sys/vm/flexmmap_nx
P=$FMM_PROBES
VARIANTS="64 32 64-nognustack 32-nognustack 64-execstack 32-execstack"
PAXDIR=$FMM_PAXDIR
# The tests "paxtest blackhat" runs first: 7 plain exec, 7 mprotect, text.
PAXTESTS="anonmap execbss execdata execheap execstack shlibbss shlibdata
mprotanon mprotbss mprotdata mprotheap mprotstack mprotshbss mprotshdata
writetext"
rmmod flexmmap 2>/dev/null

stat_of() { sed -n "s/^$1 //p" /proc/flexmmap/stats; }
N=$FMM_NATIVE
# as_stock MODE VARIANT: true if mode MODE's rules for that variant are the
# stock kernel's (fmm-nx.c's table): all of mode 0; in mode 1 all but
# 64-nognustack (32-bit "-" has READ_IMPLIES_EXEC on stock too); in mode 2
# the plain 64 and 32, and 64-nognustack (stock gives a 64-bit "-" neither
# READ_IMPLIES_EXEC nor an executable stack).  Such results pass without
# the module: controls.
as_stock() {
	case $1:$2 in
	0:* | 1:64 | 1:32 | 1:32-nognustack | 1:64-execstack | 1:32-execstack | 2:64 | 2:32 | 2:64-nognustack) return 0 ;;
	esac
	return 1
}

# Run each variant of the probe against the rules of mode $1: one result
# per variant whose rules differ from stock, and one control result for all
# the variants whose rules are the stock kernel's (all of them when LABEL
# starts with "control").
probe_all() {
	local mode=$1 label=$2 v out rc ctl_v='' ctl_bad=''
	for v in $VARIANTS; do
		if ! t_bits_run "${v%%-*}"; then
			# A 64-bit variant on a 32-bit kernel: its own result is
			# skipped; out of a control result it is left out.
			if [[ $label != control* ]] && ! as_stock "$mode" "$v"; then
				t_skip "$label: fmm-nx-$v matches the mode $mode rules" "$FMM_NATIVE_SKIP"
			fi
			continue
		fi
		rc=0
		out=$("$P/fmm-nx-$v" --expect "$mode" 2>&1) || rc=$?
		if [[ $label != control* ]] && ! as_stock "$mode" "$v"; then
			if [ $rc = 0 ]; then
				t_ok "$label: fmm-nx-$v matches the mode $mode rules"
			else
				t_fail "$label: fmm-nx-$v matches the mode $mode rules" \
					"$(grep -E '^(not ok|#)' <<<"$out")"
			fi
			continue
		fi
		ctl_v="$ctl_v $v"
		[ $rc = 0 ] || ctl_bad="$ctl_bad $v"
	done
	[ -n "$ctl_v" ] || return 0
	out="$label: fmm-nx-{${ctl_v# }} match the mode $mode rules"
	[[ $label == control* ]] || out="control (as stock): $out"
	t_eq "$out" "" "${ctl_bad# }"
}

# The result lines of paxtest's exec and mprotect tests, run the way the
# paxtest script runs them (each program prints "Description : Result").
# shellcheck disable=SC2086 # a list of program names
paxtest_lines() { t_paxtest $PAXTESTS; }

# pax_wx_killed LABEL PAX: under W^X every paxtest exec, mprotect and text
# test is Killed.  Without NX enforcement the 14 exec and mprotect tests
# jump into memory the kernel mapped non-executable (W^X refuses the
# mprotect, paxtest ignores that and jumps anyway) and the CPU runs it:
# only the text test, stopped by the write protection, is Killed; the
# denials themselves are fmm-nx's results.
pax_wx_killed() {
	if [ $NX_HW = 1 ]; then
		t_eq "$1: every paxtest exec, mprotect and text test Killed" \
			15 "$(grep -c ': Killed$' <<<"$2")"
	else
		t_eq "$1: paxtest's text test Killed (${NX_HW_SKIP}: its exec and mprotect tests jump into non-executable memory that runs)" \
			"Writable text segments : Killed" "$(tail -n 1 <<<"$2" | tr -s ' ')"
	fi
}

# --- the stock kernel, module not loaded -------------------------------
probe_all 0 "control (stock behaviour): stock kernel"
if [ -x $PAXDIR/anonmap ]; then
	stock_pax=$(paxtest_lines)
	t_diag "paxtest, stock kernel:"
	t_sub <<<"$stock_pax"
	n_killed=$(grep -c ': Killed$' <<<"$stock_pax")
	n_vuln=$(grep -c ': Vulnerable$' <<<"$stock_pax")
	t_eq "control (stock behaviour): paxtest: 15 result lines" 15 "$((n_killed + n_vuln))"
else
	t_fail "paxtest installed in the guest" "$PAXDIR/anonmap missing"
	stock_pax=
fi

# --- bad module parameters and sysctl input -----------------------------
if grep -q '^nx:.*W^X' <<<"$(modinfo -F parm "$FMM_KO")"; then
	t_ok "modinfo describes nx="
else
	t_fail "modinfo describes nx=" "$(modinfo -F parm "$FMM_KO")"
fi
for bad in 4 -1 abc 99999999999; do
	t_dmesg_mark
	if insmod "$FMM_KO" nx="$bad" 2>/dev/null; then
		rmmod flexmmap
		t_fail "insmod nx=$bad refused" "insmod succeeded"
	elif t_dmesg_since | grep -q "nx=$bad: must be"; then
		t_ok "insmod nx=$bad refused, log names the parameter"
	else
		t_fail "insmod nx=$bad refused, log names the parameter" \
			"$(t_dmesg_since)"
	fi
done

# Copies with a newline in their names (the log's escaping).
ESC=$(mktemp -d /var/tmp/fmm-nx-esc.XXXXXX)
t_atexit "rm -rf $ESC"
# forged PATTERN: lines of the raw log since the mark that start with
# PATTERN.  dmesg escapes a newline in a record (\x0a) itself, and indents
# the lines after one, but syslog readers of /proc/kmsg get it as it is: a
# line of its own, which --noescape --force-prefix shows.
forged() {
	dmesg --noescape --force-prefix | awk -v m="$T_DMESG_MARK" 'f; index($0, m) { f = 1 }' |
		grep -c "^\(\[[ 0-9.]*\] \)\{0,1\}$1"
}
t_insmod layout=0
# W^X armed per mode: the default, then modes 0..3 written in turn (checked
# in one result after the mode loop below).
armed="$(cat $S):$(stat_of wx_armed)"
echo 2 >$S
# NX as the module gives it: on a 32-bit PAE kernel whose vm_get_page_prot()
# drops NX the stock kernel enforces none and the module puts it back from
# the first mode other than 0, the write above, until unload (pae_nx,
# 13-pae-nx.sh); with pae_nx=0, or a CPU without NX, paxtest's plain exec
# tests test the missing NX, not the mode, and are skipped.
NX_HW=1
t_nx_enforced || NX_HW=0
NX_HW_SKIP="NX not enforced (code in a rw-p page runs: no NX in the CPU, or a 32-bit PAE kernel with pae_nx=0)"
[ $NX_HW = 1 ] || t_diag "$NX_HW_SKIP: paxtest's exec tests are skipped"
PAE_FIXED=0
[ "$(stat_of pae_nx)" != fixed ] || PAE_FIXED=1
taken=
for bad in 4 -1 abc '' 2x ' ' 99999999999; do
	if printf '%s\n' "$bad" >$S 2>/dev/null || [ "$(cat $S)" != 2 ]; then
		taken="$taken '$bad'"
	fi
done
t_eq "nx writes 4 -1 abc '' 2x ' ' 99999999999 all rejected, the value stays 2" "" "$taken"

# A write that parses no value (at a non-zero offset, which the kernel's
# parser ignores) must change nothing: it once re-applied the value read
# before parsing, undoing a concurrent writer's change. One process makes
# such writes in a loop while another sets 0 and 2 in turn and reads each
# back; any other value read back is a lost write.  The last value set is 2,
# and a new exec must then get mode 2's rules.
if command -v python3 >/dev/null; then
	lost=$(python3 - "$S" <<'EOF'
import os, sys
path = sys.argv[1]
pid = os.fork()
if pid == 0:
    fd = os.open(path, os.O_WRONLY)
    for _ in range(100000):
        try:
            os.pwrite(fd, b"1\n", 5)
        except OSError:
            pass
    os._exit(0)
lost = 0
for i in range(10000):
    v = b"2\n" if i % 2 else b"0\n"
    with open(path, "wb", buffering=0) as f:
        f.write(v)
    with open(path, "rb") as f:
        if f.read() != v:
            lost += 1
os.kill(pid, 9)
os.waitpid(pid, 0)
print(lost)
EOF
	)
	# ... and the value read back is the one in force: an exec after
	# the last write (2) gets mode 2's rules.
	rc=0
	out=$("$P/fmm-nx-32-nognustack" --expect 2 2>&1) || rc=$?
	t_eq "nx: writes at a non-zero offset never undo another writer's value; the last (2) is in force" \
		"0 lost, exit 0" "$lost lost, exit $rc"
	echo 2 >$S
fi

# --- each mode ----------------------------------------------------------
for mode in 0 1 2 3; do
	echo $mode >$S
	armed="$armed $mode:$(stat_of wx_armed)"
	ctl=
	[ $mode != 0 ] || ctl="control (nx=0 is stock): "
	t_dmesg_mark
	probe_all $mode "nx=$mode"
	# The per-process query: each probe learns its mode from the module,
	# and passes that mode's rules.
	rc=0
	out=$("$P/fmm-nx-32-nognustack" --expect any 2>&1) || rc=$?
	learnt=$(sed -n 's/.*checking nx mode \([0-3]\) (module query).*/\1/p' <<<"$out")
	t_eq "${ctl}nx=$mode: fmm-nx --expect any learns mode $mode from the module and passes" \
		"mode $mode, exit 0" "mode ${learnt:-none}, exit $rc"
	t_eq "${ctl}nx=$mode: /proc/flexmmap/tasks shows nx=$mode for a child of this exec" "nx=$mode" \
		"$(sh -c "awk -v p=\$\$ '\$1 == p { print \$4 }' /proc/flexmmap/tasks")"
	case $mode in
	2)
		# Logged once per binary: run it again, still one line.
		"$P/fmm-nx-$N-execstack" --print >/dev/null
		n=$(t_dmesg_since | grep -c "nx=2: fmm-nx-$N-execstack asked for an executable stack")
		t_eq "nx=2: the downgrade is logged once per binary" 1 "$n"
		# A user names the file: a newline in its name is escaped
		# (\n), it does not start a forged line of its own.
		t_dmesg_mark
		esc="$ESC/esc"$'\n'"flexmmap: forged"
		cp "$P/fmm-nx-$N-execstack" "$esc"
		"$esc" --print >/dev/null 2>&1
		t_eq "nx=2: a newline in the binary's name is escaped in the downgrade line, no forged line" \
			"1 0" "$(t_dmesg_since | grep -cF 'nx=2: esc\nflexmmap: forged asked for') $(forged 'flexmmap: forged')"
		;;
	esac
	[ -n "$stock_pax" ] || continue
	pax=$(paxtest_lines)
	t_diag "paxtest, nx=$mode:"
	t_sub <<<"$pax"
	case $mode in
	0)
		if [ $PAE_FIXED = 0 ]; then
			t_eq "control (nx=0 is stock): paxtest results equal the stock kernel's" \
				"$stock_pax" "$pax"
		else
			t_eq "nx=0 with pae_nx fixed (the stock kernel has no NX): paxtest's 7 plain exec tests Killed" 7 \
				"$(head -7 <<<"$pax" | grep -c ': Killed$')"
		fi
		;;
	3)
		pax_wx_killed "nx=3" "$pax"
		;;
	*)
		if [ $NX_HW = 1 ]; then
			t_eq "control (as stock: NX hardware): nx=$mode: paxtest's 7 plain exec tests Killed" 7 \
				"$(head -7 <<<"$pax" | grep -c ': Killed$')"
		else
			t_skip "control (as stock: NX hardware): nx=$mode: paxtest's 7 plain exec tests Killed" "$NX_HW_SKIP"
		fi
		;;
	esac
done
t_eq "nx defaults to 0; W^X hooks armed only in mode 3 (default, then 0..3)" \
	"0:0 0:0 1:0 2:0 3:1" "$armed"

# --- W^X: ordinary programs run, bad binaries fail and are named --------
# Denials are judged by the counters: the log is rate-limited (10 lines per
# 5 s per call site), and a burst before can hide a line.
denials() {
	echo $(($(stat_of wx_denied_mmap) + $(stat_of wx_denied_mprotect) + \
		$(stat_of wx_denied_personality)))
}
# under_wx NAME WANT CMD...: CMD prints WANT, and its exec was marked W^X
# (wx_exec counted it): the program ran under W^X, not beside it.
under_wx() {
	local name=$1 want=$2 x0 out
	shift 2
	x0=$(stat_of wx_exec)
	out=$("$@" 2>&1)
	t_eq "$name (its exec counted in wx_exec)" "$want, counted" \
		"$out, $([ "$(stat_of wx_exec)" -gt "$x0" ] && echo counted || echo 'not counted')"
}
echo 3 >$S
before=$(denials)
under_wx "nx=3: a dynamically linked shell runs" hello bash -c 'echo hello'
under_wx "nx=3: coreutils run (ls /)" ok sh -c 'ls / >/dev/null && echo ok'
under_wx "nx=3: perl runs" 42 perl -e 'print 6 * 7'
t_eq "nx=3: bash, ls and perl caused no W^X denial (wx_armed 1)" "0, 1" \
	"$(($(denials) - before)), $(stat_of wx_armed)"
before=$(denials)
if command -v python3 >/dev/null; then
	out=$(python3 - 2>&1 <<'EOF'
import ctypes
libc = ctypes.CDLL(None)
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                       ctypes.POINTER(ctypes.c_int))
arr = (ctypes.c_int * 6)(5, 1, 4, 6, 2, 3)
libc.qsort(arr, 6, ctypes.sizeof(ctypes.c_int), CMP(lambda a, b: a[0] - b[0]))
print(list(arr))
EOF
	)
	t_eq "nx=3: python3 sorts with a ctypes callback (libffi closure; wx_armed 1)" \
		"[1, 2, 3, 4, 5, 6], 1" "$out, $(stat_of wx_armed)"
	# libffi 3.4 first asks for an anonymous RWX page (refused), then maps
	# a memfd twice, RW and RX (refused: shared memory), then a file in
	# /tmp twice: a file of a mounted file system, out of W^X's scope.
	t_diag "python3's ctypes callback caused $(($(denials) - before)) W^X denial(s) (libffi's anonymous RWX and memfd tries, before its temporary-file fallback)"
else
	t_fail "python3 installed in the guest" "python3 missing"
fi

# fails_logged NAME LOGPATTERN CMD...: CMD fails, and the log says why.
fails_logged() {
	local name=$1 pat=$2 rc
	shift 2
	t_dmesg_mark
	"$@" >/dev/null 2>&1
	rc=$?
	if [ $rc -ne 0 ] && t_dmesg_since | grep -q "$pat"; then
		t_ok "$name (exit $rc), log names it"
	else
		t_fail "$name, log names it" "exit $rc; $(t_dmesg_since)"
	fi
}
fails_logged "nx=3: a binary with an RWX PT_LOAD fails" \
	"W^X: fmm-nx-$N-rwxtext\\[[0-9]*\\]: mmap(PROT_WRITE|PROT_EXEC) of fmm-nx-$N-rwxtext denied" \
	"$P/fmm-nx-$N-rwxtext" --print
# The denial log is rate-limited (printk's 10 lines per 5 s per call site),
# and the runs above used this site's budget: let it refill.
sleep 5
fails_logged "nx=3: threads of a binary without PT_GNU_STACK fail" \
	"W^X: fmm-sleep-$N-nognustack\\[[0-9]*\\]: mprotect" \
	sh -c "echo quit | timeout 60 $P/fmm-sleep-$N-nognustack --threads 2"
# The binary's name and the mapped file's, escaped: a newline in either
# does not start a forged line.
sleep 5
esc="$ESC/rwx"$'\n'"W^X: forged"
cp "$P/fmm-nx-$N-rwxtext" "$esc"
t_dmesg_mark
"$esc" --print >/dev/null 2>&1
t_eq "nx=3: a newline in the names is escaped in the denial line, no forged line" "1 0" \
	"$(t_dmesg_since | grep -cF 'W^X: rwx\nW^X: forged[') $(forged 'W^X: forged')"
denied=$(denials)
if [ "$denied" -gt 0 ] && [ "$(stat_of wx_denied_personality)" -gt 0 ]; then
	t_ok "denials are counted in /proc/flexmmap/stats ($denied in all)"
else
	t_fail "denials are counted in /proc/flexmmap/stats" "$(cat /proc/flexmmap/stats)"
fi

# --- W^X under the module's allocators: layouts 1 and 2 --------------
L=/proc/sys/vm/flexmmap_layout
for l in 1 2; do
	echo $l >$L
	case $l in
	1) dir=bottomup alloc=module-bottomup ;;
	*) dir=topdown alloc=module-topdown ;;
	esac
	for bits in 64 32; do
		if ! t_bits_run "$bits"; then
			t_skip "layout=$l nx=3: fmm-layout-$bits is $dir on $alloc" "$FMM_NATIVE_SKIP"
			continue
		fi
		t_check "layout=$l nx=3: fmm-layout-$bits is $dir on $alloc" \
			"$P/fmm-layout-$bits" --expect $dir --expect-alloc $alloc
	done
	probe_all 3 "layout=$l nx=3"
	before=$(stat_of wx_denied_mmap)
	"$P/fmm-nx-$N-rwxtext" --print >/dev/null 2>&1
	rc=$?
	after=$(stat_of wx_denied_mmap)
	if [ $rc -ne 0 ] && [ "${after:-0}" -gt "${before:-0}" ]; then
		t_ok "layout=$l nx=3: a binary with an RWX PT_LOAD fails (exit $rc), wx_denied_mmap counts it"
	else
		t_fail "layout=$l nx=3: a binary with an RWX PT_LOAD fails, wx_denied_mmap counts it" \
			"exit $rc; wx_denied_mmap ${before:-?} -> ${after:-?}"
	fi
	if [ -n "$stock_pax" ]; then
		pax=$(paxtest_lines)
		t_diag "paxtest, layout=$l nx=3:"
		t_sub <<<"$pax"
		pax_wx_killed "layout=$l nx=3" "$pax"
	else
		t_fail "layout=$l nx=3: every paxtest exec, mprotect and text test Killed" \
			"paxtest missing"
	fi
done
echo 0 >$L

echo 0 >$S
"$P/fmm-nx-$N-rwxtext" --print >/dev/null 2>&1
t_eq "control (nx=0 is stock): the RWX PT_LOAD binary runs" 0 $?
echo quit | timeout 60 "$P/fmm-sleep-$N-nognustack" --threads 2 >/dev/null 2>&1
t_eq "control (nx=0 is stock): threads of the binary without PT_GNU_STACK run" 0 $?

# --- mode 3 from insmod, and unload with a W^X process running ----------
rmmod flexmmap || t_fail "rmmod"
t_insmod layout=0 nx=3
t_eq "insmod nx=3: W^X hooks armed at load" 1 "$(stat_of wx_armed)"
probe_all 3 "insmod nx=3"
"$P/fmm-sleep-$N" </dev/null >/dev/null 2>&1 &
pid=$!
sleep 1
wx=$(awk -v p=$pid '$1 == p { print $4 }' /proc/flexmmap/tasks)
t_dmesg_mark
rmmod flexmmap
t_eq "rmmod with a W^X process running (its tasks line said nx=3)" "0, nx=3" "$?, $wx"
if kill -0 $pid 2>/dev/null; then
	kill -TERM $pid
	wait $pid
	t_eq "the W^X process (nx=3) outlives the module and exits cleanly" "0, nx=3" "$?, $wx"
else
	t_fail "the W^X process outlives the module" "it died"
fi
probe_all 0 "control (stock behaviour): after rmmod"
