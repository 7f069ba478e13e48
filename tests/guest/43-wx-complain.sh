#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# W^X complain mode (vm.flexmmap_wx_complain, wx_complain=): under nx=3
# with complain 1 every route of fmm-wx behaves exactly as under nx=2 (the
# same rules without the W^X probes), nothing is counted as denied, and
# each refusal that nx=3 would have made is a record of
# /proc/flexmmap/wx_complaints: one per program and kind, whose counts
# double when the program runs twice.  A binary marked M is refused all
# the same and leaves no record.  The records name the program's path and
# the uid (nobody's own copy); only CAP_SYS_ADMIN of the initial user
# namespace reads them or writes the switch (not nobody, not root of a
# user namespace; a PID namespace changes nothing).  A record holds its
# program's file: a tmpfs holding one cannot be unmounted until the table
# is emptied (a write) or the module unloaded.  Bad values are refused.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 26

S=/proc/sys/vm
C=$S/flexmmap_wx_complain
F=/proc/flexmmap/wx_complaints
P=$FMM_PROBES
MARK=$P/flexmmap-mark
# On the root file system: 6.1's tmpfs has no user.* extended attributes.
W=/var/tmp/complain
HP=$S/nr_hugepages
b=64
t_bits_run 64 || b=32
rmmod flexmmap 2>/dev/null
rm -rf $W && mkdir -p $W && chmod 755 $W
t_dmesg_mark

stat_of() { awk -v k="$1" '$1 == k { print $2 }' /proc/flexmmap/stats; }
wx_denials() { awk '/^wx_denied_/ { s += $2 } END { print s + 0 }' /proc/flexmmap/stats; }
# The records of the program PATH: "call~refused~memory~count" per line, sorted.
records() { awk -F '\t' -v p="$1" '$2 == p { print $5 "~" $6 "~" $7 "~" $1 }' $F | sort; }
# fmm-wx --print: "ROUTE open" or "ROUTE closed: WHY" per route.
routes() { "$@" --print 2>/dev/null | grep -E '^[^ ]+ (open|closed|absent|untestable)'; }

# uffd-copy-hugetlb wants free huge pages, as in 38.
hp_orig=$(cat $HP)
[ "$hp_orig" -ge 2 ] || echo 2 >$HP
t_atexit "echo $hp_orig >$HP"

# --- bad values ---------------------------------------------------------------
out=$(insmod "$FMM_KO" wx_complain=2 2>&1)
rc=$?
[ "$rc" = 0 ] && rmmod flexmmap
t_eq "insmod wx_complain=2 is refused, with the range in the log" "1 yes" \
	"$([ "$rc" != 0 ] && echo 1 || echo 0) $(t_dmesg_since | grep -q 'wx_complain=2: must be 0 (enforce) or 1 (complain)' && echo yes || echo no)"
t_insmod layout=2 nx=3
t_eq "defaults: the switch 0, stats wx_complain 0, no record" "0 0 0" \
	"$(cat $C) $(stat_of wx_complain) $(grep -vc '^#' $F)"
for v in 2 -1 x; do
	echo "$v" >$C 2>/dev/null && break
done
t_eq "vm.flexmmap_wx_complain refuses 2, -1 and x; still 0" 0 "$(cat $C)"

# --- who may read the records and write the switch -------------------------------
t_eq "nobody: the records are not readable, the switch not writable" "denied denied" \
	"$(t_as_nobody cat $F >/dev/null 2>&1 && echo read || echo denied) $(t_as_nobody sh -c "echo 1 >$C" 2>/dev/null && echo wrote || echo denied)"
t_eq "root of a user namespace: neither (no CAP_SYS_ADMIN in the initial one)" "denied denied 0" \
	"$(unshare -U -r cat $F >/dev/null 2>&1 && echo read || echo denied) $(unshare -U -r sh -c "echo 1 >$C" 2>/dev/null && echo wrote || echo denied) $(cat $C)"
t_eq "root in a new PID namespace: both (its capabilities are the initial namespace's)" "read 1" \
	"$(unshare -p -f --mount-proc cat $F >/dev/null 2>&1 && echo read || echo denied) $(unshare -p -f --mount-proc sh -c "echo 1 >$C" && cat $C)"
echo 0 >$C

# --- the routes: nx=2 and nx=3 under complain mode ----------------------------------
# What nx=2 gives, as the reference (the same rules without the W^X probes).
echo 2 >$S/flexmmap_nx
ref=$(routes "$P/fmm-wx-$b")
echo 3 >$S/flexmmap_nx
enf=$(routes "$P/fmm-wx-$b")
d0=$(wx_denials) c0=$(stat_of wx_complained)
echo 1 >$C
cpl=$(routes "$P/fmm-wx-$b")
d1=$(wx_denials) c1=$(stat_of wx_complained)
if [ "$cpl" = "$ref" ] && [ -n "$ref" ]; then
	t_ok "nx=3 complain: fmm-wx-$b --print is what nx=2 prints ($(wc -l <<<"$ref") routes)"
else
	t_fail "nx=3 complain: fmm-wx-$b --print is what nx=2 prints" \
		"$(diff <(echo "$ref") <(echo "$cpl") | head -n 20)"
fi
if [ "$enf" != "$ref" ]; then
	t_ok "nx=3 enforce differs from nx=2 ($(diff <(echo "$ref") <(echo "$enf") | grep -c '^>') routes): the comparison can fail"
else
	t_fail "nx=3 enforce differs from nx=2" "identical: the probes refused nothing"
fi
t_eq "nx=3 complain: no denial counted, refusals allowed counted (wx_complained)" "0 yes" \
	"$((d1 - d0)) $([ "$c1" -gt "$c0" ] && echo yes || echo "no: $c0 -> $c1")"

r1=$(records "$P/fmm-wx-$b")
missing=
for c in mmap mprotect shmat userfaultfd /proc/PID/mem ptrace personality; do
	cut -d'~' -f1 <<<"$r1" | grep -qxF "$c" || missing="$missing $c"
done
t_eq "records of fmm-wx-$b: mmap, mprotect, shmat, userfaultfd, /proc/PID/mem, ptrace, personality" \
	"none missing" "${missing:-none} missing"
t_diag "its records (call~refused~memory~count):"
t_diag "${r1//$'\n'/; }"
line=$(awk -F '\t' -v p="$P/fmm-wx-$b" '$2 == p && $5 == "mprotect" && $6 == "PROT_WRITE|PROT_EXEC" { print; exit }' $F)
d=$(stat -c %d "$P/fmm-wx-$b") i=$(stat -c %i "$P/fmm-wx-$b")
IFS=$'\t' read -r _ _ devino uid _ _ mem old new caller <<<"$line"
[[ $old =~ ^[r-][w-]-$ ]] && old=ok
t_eq "mprotect(RWX)'s record: dev:ino, uid, memory, old (not executable) -> new, caller" \
	"$(((d >> 8) & 0xfff)):$(((d & 0xff) | ((d >> 12) & 0xfff00))):$i 0|anonymous memory|ok|rwx|fmm-wx-$b" \
	"$devino $uid|$mem|$old|$new|$caller"
"$P/fmm-wx-$b" --print >/dev/null 2>&1
r2=$(records "$P/fmm-wx-$b")
t_eq "a second run: the same records, each count doubled" \
	"$(awk -F'~' -v OFS='~' '{ $4 *= 2; print }' <<<"$r1")" "$r2"
others=$(awk -F '\t' '!/^#/ { print $2 }' $F | sort -u | grep -vxF "$P/fmm-wx-$b")
t_diag "other programs recorded: $(tr '\n' ';' <<<"$others")"
t_eq "the other programs recorded are fmm-wx's helpers and the copies it execs" "" \
	"$(grep -v -e '^$' -e "^$P/fmm-" -e '^/memfd:' -e '^/tmp/' -e '^/var/tmp/' -e '^/dev/shm/' <<<"$others")"

# --- M: refused whatever complain mode says ---------------------------------------
# With the helpers it execs beside it (its own name + -rxbss, fmm-nx-NN-rwxtext), marked too.
cp "$P/fmm-wx-$b" "$W/fmm-wx-M"
cp "$P/fmm-wx-$b-rxbss" "$W/fmm-wx-M-rxbss"
cp "$P/fmm-nx-$b-rwxtext" "$W/"
out=$("$MARK" --pax M "$W/fmm-wx-M" "$W/fmm-wx-M-rxbss" "$W/fmm-nx-$b-rwxtext" 2>&1) ||
	t_diag "flexmmap-mark --pax M failed: $out"
# Its route pax-m-user-copy execs a copy the route marks m as a user: not
# trusted, so not M either: complain mode lets that one through.
d0=$(wx_denials)
out=$("$W/fmm-wx-M" --expect 3 2>&1)
bad=$(grep -E '^not ok' <<<"$out" | grep -v ' pax-m-user-copy: open')
t_eq "an M binary under complain mode: every route as nx=3 enforces (but its unmarked copy), denials counted, no record" \
	"none yes 0" "${bad:-none} $([ "$(wx_denials)" -gt "$d0" ] && echo yes || echo no) $(records "$W/fmm-wx-M" | wc -l)"
t_diag "$(grep -cE '^ok ' <<<"$out") routes closed as under nx=3$(grep -q ' pax-m-user-copy: open' <<<"$out" && echo "; pax-m-user-copy open")"

# --- nobody's copy: its uid -----------------------------------------------------------
cp "$P/fmm-wx-$b" "$W/fmm-wx-nobody"
# After the log's rate limit (10 lines in 5 s) has let the lines of the
# runs above pass: the first of these are logged.
sleep 6
start_mark=$T_DMESG_MARK
t_dmesg_mark
(cd / && t_as_nobody "$W/fmm-wx-nobody" --print >/dev/null 2>&1)
t_eq "the kernel log says 'allowed (complain mode)' for what complain mode let through" yes \
	"$(t_dmesg_since | grep -q 'allowed (complain mode)$' && echo yes || echo no)"
t_eq "nobody's program: records with uid 65534" "65534" \
	"$(awk -F '\t' -v p="$W/fmm-wx-nobody" '$2 == p { print $4 }' $F | sort -u | tr '\n' ' ' | sed 's/ $//')"

# --- flexmmap-mark --suggest -------------------------------------------------------
out=$(t_as_nobody "$MARK" --suggest 2>&1)
t_eq "--suggest as nobody: exit 1, the records need root" "1 yes" \
	"$? $(grep -q 'CAP_SYS_ADMIN' <<<"$out" && echo yes || echo "no: $out")"
sug=$("$MARK" --suggest)
rc=$?
# Each program recorded: one comment; a command where its file is root's
# and still there (the deleted copies and memfds get a comment saying why not).
# and still there, and that did something itself (not only written by
# another process through /proc/PID/mem, ptrace or a userfaultfd monitor).
want=$(awk -F '\t' '!/^#/ { print $2 }' $F | sort -u | while IFS= read -r p; do
	echo "# $p"
	own=$(awk -F '\t' -v p="$p" '$2 == p && $5 != "/proc/PID/mem" && $5 != "ptrace" &&
		!($5 == "userfaultfd" && $10 == "-") { n++ } END { print n + 0 }' $F)
	if [[ $p != *" (deleted)" ]] && [ "$(stat -c %u "$p" 2>/dev/null)" = 0 ] && [ "$own" -gt 0 ]; then
		echo "flexmmap-mark --pax m $p"
	fi
done | sort)
got=$(grep -E '^(# /|flexmmap-mark )' <<<"$sug" | sed 's/: [0-9]* refused under W^X (uid[0-9 ]*): .*//' | sort)
t_eq "--suggest: exit 0, each recorded program once, a command for each root's file still there" \
	"0 $want" "$rc $got"
t_diag "--suggest printed $(grep -c '^flexmmap-mark ' <<<"$sug") commands; the first lines:"
t_diag "$(head -n 4 <<<"$sug")"
cmd=$(grep -xF "flexmmap-mark --pax m $W/fmm-wx-nobody" <<<"$sug")

# --- complain 0: refused again ------------------------------------------------------
echo 0 >$C
d0=$(wx_denials)
t_check "complain 0: fmm-wx-$b matches the nx=3 table again" "$P/fmm-wx-$b" --expect 3
t_eq "complain 0: denials counted again" yes "$([ "$(wx_denials)" -gt "$d0" ] && echo yes || echo no)"
# The suggestion for nobody's copy, applied (flexmmap-mark from the probes'
# folder): its anonymous RWX mapping (fmm-wx --mmap-rwx: exit 0 when it ran
# the bytes) is refused before, and after it runs with no denial (m).
(cd / && t_as_nobody "$W/fmm-wx-nobody" --mmap-rwx >/dev/null 2>&1)
before=$?
read -r -a words <<<"$cmd"
[ -n "$cmd" ] && "$P/${words[0]}" "${words[@]:1}" >/dev/null 2>&1
d0=$(wx_denials)
(cd / && t_as_nobody "$W/fmm-wx-nobody" --mmap-rwx >/dev/null 2>&1)
after=$?
t_eq "--suggest's command for nobody's copy, run: its RWX mapping, refused before (exit 1), runs (exit 0), no denial" \
	"found 1 0 0 pax=m" "$([ -n "$cmd" ] && echo found || echo missing) $before $after $(($(wx_denials) - d0)) $("$MARK" --show "$W/fmm-wx-nobody" | cut -d' ' -f2)"

# --- a record holds its program's file; emptied by a write, dropped by rmmod --------
mkdir -p $W/mnt && mount -t tmpfs tmpfs $W/mnt && cp "$P/fmm-wx-$b" $W/mnt/p
echo 1 >$C
$W/mnt/p --print >/dev/null 2>&1
n=$(records $W/mnt/p | wc -l)
umount $W/mnt 2>/dev/null && held=no || held=yes
t_as_nobody sh -c "echo >$F" 2>/dev/null
# Root of a user namespace passes the file's mode (its uid is root's) but
# not the open's CAP_SYS_ADMIN check.
unshare -U -r sh -c "echo >$F" 2>/dev/null
n2=$(records $W/mnt/p | wc -l)
echo >$F
umount $W/mnt 2>/dev/null && freed=yes || freed=no
t_eq "a record holds its file (umount busy); nobody and user-namespace root cannot empty the table; root's write does (umount then works)" \
	"yes yes 0 yes" "$held $([ "$n" -gt 0 ] && [ "$n2" = "$n" ] && echo yes || echo "no ($n, $n2)") $(grep -vc '^#' $F) $freed"
# --- no user fills the table for everyone -------------------------------------------
# nobody's 40 programs (copies: each its own inode, one refusal each) make
# at most 32 records; the rest is counted as dropped, and root's program,
# run after them, is still recorded.
echo >$F
dropped0=$(stat_of wx_complaints_dropped)
for i in $(seq 1 40) root; do cp "$P/fmm-wx-$b" "$W/q$i"; done
for i in $(seq 1 40); do (cd / && t_as_nobody "$W/q$i" --mmap-rwx >/dev/null 2>&1); done
"$W/qroot" --mmap-rwx >/dev/null 2>&1
t_eq "nobody's 40 programs: 32 records (its share), 8 dropped; root's program after them still recorded" \
	"32 8 1" "$(awk -F '\t' '$4 == 65534' $F | wc -l) $(($(stat_of wx_complaints_dropped) - dropped0)) $(awk -F '\t' '$4 == 0' $F | wc -l)"
rm -f "$W"/q*
echo >$F
mount -t tmpfs tmpfs $W/mnt && cp "$P/fmm-wx-$b" $W/mnt/p
$W/mnt/p --print >/dev/null 2>&1
n=$(records $W/mnt/p | wc -l)
rmmod flexmmap
rc=$?
umount $W/mnt 2>/dev/null && freed=yes || freed=no
t_eq "rmmod with records (some for the tmpfs program): the files are released (umount works)" \
	"yes 0 yes" "$([ "$n" -gt 0 ] && echo yes || echo "no records") $rc $freed"
t_insmod nx=3
t_eq "a new load starts with no record and complain 0" "0 0" "$(grep -vc '^#' $F) $(cat $C)"
rmmod flexmmap
T_DMESG_MARK=$start_mark
t_eq "the kernel log: no WARN, BUG or Oops" "" "$(t_kernel_problems)"
rm -rf $W
