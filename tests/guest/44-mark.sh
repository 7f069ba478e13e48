#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# flexmmap-mark, the tool that writes the per-binary markings, against
# setfattr/getfattr on the guest's ext4 root: each layout word and PaX
# flags written exactly (no newline, no NUL), values written by setfattr
# shown by --show, --clear, bad MODE/FLAGS refused with exit 2 before any
# file is touched, a missing file, a file root owns marked by nobody, and
# tmpfs, which has user extended attributes from 6.6 on only: the kernel's
# own answer to setfattr decides which case is checked.  Needs no module.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
MARK=$FMM_PROBES/flexmmap-mark
[ -x "$MARK" ] || t_fail_all "no $MARK: make all"
for c in setfattr getfattr; do
	command -v $c >/dev/null || t_fail_all "no $c in the guest image (package attr)"
done
t_plan 20

LA=user.flexmmap.layout
PX=user.pax.flags
# /var/tmp, not /root: nobody must reach the files (/root is 0700).
D=$(mktemp -d /var/tmp/fmm-mark.XXXXXX)
T=
cleanup() {
	rm -rf "$D"
	[ -z "$T" ] || { umount "$T" && rmdir "$T"; }
}
t_atexit cleanup
chmod 755 "$D"
fs=$(findmnt -no FSTYPE -T "$D")
[ "$fs" = ext4 ] || t_fail_all "$D is on $fs, not ext4"
F=$D/prog
cp /bin/true "$F"
chmod 755 "$F"

# attr_is FILE NAME VALUE: NAME holds exactly VALUE (byte for byte).
attr_is() { getfattr -n "$2" --only-values "$3" 2>/dev/null | cmp -s - <(printf %s "$1"); }
# attrs FILE: both values as getfattr sees them, "-" for none.
attrs() {
	local n v out=
	for n in $LA $PX; do
		v=$(getfattr -n "$n" --only-values "$1" 2>/dev/null) || v=-
		out+="$n=$v "
	done
	echo "${out% }"
}

for m in kernel legacy flexible auto; do
	out=$("$MARK" --layout "$m" "$F" 2>&1)
	rc=$?
	if [ $rc = 0 ] && attr_is "$m" $LA "$F"; then
		t_ok "--layout $m: getfattr reads exactly '$m'"
	else
		t_fail "--layout $m: getfattr reads exactly '$m'" "exit $rc: $out" \
			"getfattr: $(getfattr -n $LA -e hex "$F" 2>&1 | tail -n +2)"
	fi
done

out=$("$MARK" --layout flexible --pax em "$F" 2>&1)
rc=$?
if [ $rc = 0 ] && attr_is flexible $LA "$F" && attr_is em $PX "$F"; then
	t_ok "--layout flexible --pax em: both written, exactly"
else
	t_fail "--layout flexible --pax em: both written, exactly" "exit $rc: $out" \
		"$(getfattr -d -e hex "$F" 2>&1)"
fi

setfattr -n $LA -v legacy "$F"
setfattr -n $PX -v m "$F"
G=$D/'unmarked prog'
cp /bin/true "$G"
out=$("$MARK" --show "$F" "$G" 2>&1)
rc=$?
t_eq "--show: what setfattr wrote; '-' for none; the name last" \
	"layout=legacy pax=m $F|layout=- pax=- $G|exit 0" "$(tr '\n' '|' <<<"$out")exit $rc"

# A malformed value, as setfattr can write it: shown escaped on one line,
# with a note that the module ignores it.
setfattr -n $LA -v "$(printf 'legacy\nx')" "$G"
out=$("$MARK" --show "$G" 2>"$D/err")
err=$(cat "$D/err")
if [ "$out" = "layout=legacy\\012x pax=- $G" ] &&
	[ "$err" = "flexmmap-mark: $G: $LA is malformed; flexmmap ignores it" ]; then
	t_ok "--show: a value with a newline is one line, escaped (\\012), with a note on stderr"
else
	t_fail "--show: a value with a newline is one line, escaped (\\012), with a note on stderr" \
		"stdout: $out" "stderr: $err"
fi

# An empty user.pax.flags, as "paxctl-ng -c" writes it: no flags, not
# malformed: "pax=" and no note.
setfattr -n $PX "$G"
out=$("$MARK" --show "$G" 2>"$D/err")
err=$(cat "$D/err")
t_eq "--show: an empty $PX (paxctl-ng -c) is 'pax=', with the layout's note only" \
	"layout=legacy\\012x pax= $G|flexmmap-mark: $G: $LA is malformed; flexmmap ignores it" "$out|$err"

out=$("$MARK" --clear "$F" "$G" 2>&1)
rc=$?
t_eq "--clear: both attributes gone from both files, exit 0" \
	"$LA=- $PX=- $LA=- $PX=- exit 0" "$(attrs "$F") $(attrs "$G") exit $rc${out:+: $out}"
out=$("$MARK" --clear "$F" 2>&1)
t_eq "--clear of an unmarked file: not an error" "exit 0" "exit $?${out:+: $out}"

# Bad values: exit 2 with the usage, nothing written, not even the valid
# half of the command line.
"$MARK" --layout legacy --pax m "$F"
before=$(attrs "$F")
bad=
for v in bogus LEGACY '' 'legacy ' $'legacy\n' 0 3; do
	out=$("$MARK" --layout "$v" "$F" 2>&1)
	rc=$?
	[ $rc = 2 ] && grep -q '^Usage' <<<"$out" || bad+="'$v': exit $rc; "
done
t_eq "bad MODE (7 values): exit 2 with the usage" "" "$bad"
bad=
# The last: 17 letters, longer than the 16 bytes the module reads.
for v in '' mM Mm q 'm ' e-m Pp mx- $'m\n' -m mmmmmmmmmmmmmmmmm; do
	out=$("$MARK" --pax "$v" "$F" 2>&1)
	rc=$?
	[ $rc = 2 ] && grep -q '^Usage' <<<"$out" || bad+="'$v': exit $rc; "
done
t_eq "bad FLAGS (11 values): exit 2 with the usage" "" "$bad"
out=$("$MARK" --layout flexible --pax mM "$F" 2>&1)
rc=$?
"$MARK" --pax E --layout nope "$F" >/dev/null 2>&1
rc2=$?
t_eq "a valid MODE with bad FLAGS (and the reverse): exit 2, the file unchanged" \
	"2 2 $before" "$rc $rc2 $(attrs "$F")"

out=$("$MARK" --layout auto "$D/missing" "$G" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q "$D/missing: no such file" <<<"$out" && attr_is auto $LA "$G"; then
	t_ok "a missing file: 'no such file', exit 1; the next file still marked"
else
	t_fail "a missing file: 'no such file', exit 1; the next file still marked" \
		"exit $rc: $out" "$G: $(attrs "$G")"
fi
out=$("$MARK" --show "$D/missing" 2>&1)
rc=$?
t_eq "--show of a missing file: 'no such file', exit 1" \
	"exit 1: flexmmap-mark: $D/missing: no such file" "exit $rc: $out"
out=$("$MARK" --layout auto /dev/null 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q 'not a regular file' <<<"$out"; then
	t_ok "a device (/dev/null): 'not a regular file', exit 1"
else
	t_fail "a device (/dev/null): 'not a regular file', exit 1" "exit $rc: $out"
fi

# nobody may read F (0755) but not write it; H (0700) not even read.
before=$(attrs "$F")
out=$(t_as_nobody "$MARK" --layout kernel --pax M "$F" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q "$F: permission denied marking it (EACCES)" <<<"$out" &&
	[ "$(attrs "$F")" = "$before" ]; then
	t_ok "nobody marking a file root owns: permission denied, exit 1, unchanged"
else
	t_fail "nobody marking a file root owns: permission denied, exit 1, unchanged" \
		"exit $rc: $out" "before: $before" "after:  $(attrs "$F")"
fi
t_eq "nobody showing a file it may read: its marks" \
	"layout=legacy pax=m $F" "$(t_as_nobody "$MARK" --show "$F" 2>&1)"
H=$D/private
cp /bin/true "$H"
chmod 700 "$H"
out=$(t_as_nobody "$MARK" --show "$H" 2>&1)
rc=$?
if [ $rc = 1 ] && grep -q "$H: permission denied reading its marks" <<<"$out"; then
	t_ok "nobody showing a file it may not read: permission denied, exit 1"
else
	t_fail "nobody showing a file it may not read: permission denied, exit 1" "exit $rc: $out"
fi

# tmpfs: user extended attributes since Linux 6.6.  The kernel says which.
T=$(mktemp -d /tmp/fmm-mark-tmpfs.XXXXXX)
mount -t tmpfs fmm-mark "$T"
cp /bin/true "$T/prog"
if serr=$(setfattr -n $LA -v kernel "$T/prog" 2>&1); then
	t_diag "tmpfs here has user extended attributes (setfattr works): the tool must work too"
	out=$("$MARK" --layout legacy "$T/prog" 2>&1)
	rc=$?
	show=$("$MARK" --show "$T/prog" 2>&1)
	if [ $rc = 0 ] && attr_is legacy $LA "$T/prog" && [ "$show" = "layout=legacy pax=- $T/prog" ]; then
		t_ok "tmpfs with user xattrs (setfattr works): marked and shown"
	else
		t_fail "tmpfs with user xattrs (setfattr works): marked and shown" \
			"exit $rc: $out" "--show: $show"
	fi
else
	t_diag "tmpfs here has no user extended attributes: setfattr says: $serr"
	out=$("$MARK" --layout legacy "$T/prog" 2>&1)
	rc=$?
	show=$("$MARK" --show "$T/prog" 2>&1)
	rcs=$?
	want="the file system of $T/prog does not support user extended attributes"
	if [[ $serr == *"Operation not supported"* ]] && [ $rc = 1 ] && [ $rcs = 1 ] &&
		grep -q "$want" <<<"$out" && grep -q "$want" <<<"$show" &&
		grep -q 'mark a copy on ext4' <<<"$out"; then
		t_ok "tmpfs without user xattrs (setfattr: not supported): marking and --show say so, exit 1"
	else
		t_fail "tmpfs without user xattrs (setfattr: not supported): marking and --show say so, exit 1" \
			"setfattr: $serr" "marking: exit $rc: $out" "--show: exit $rcs: $show"
	fi
fi
