#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Markings that last: flexmmap-mark --sync applies the markings lists
# ("PATH [layout=MODE|-] [pax=FLAGS|-]" lines, \ooo escapes; the lists given,
# or /usr/share/flexmmap/markings then /etc/flexmmap/markings), a later line
# for a path winning; a path is followed through a symbolic link only if
# root owns the link, a file root alone cannot write is reported and never
# marked, a missing one skipped, a bad line reported while the others are
# still applied.  Then W^X complain mode's records turned into markings by
# --suggest --apply (marked and added to /etc/flexmmap/markings), a
# program replaced by a new file (a package upgrade: a new inode, no
# attributes) refused again under nx=3, and --sync marking it again.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
MARK=$FMM_PROBES/flexmmap-mark
[ -x "$MARK" ] || t_fail_all "no $MARK: make all"
command -v getfattr >/dev/null || t_fail_all "no getfattr in the guest image (package attr)"
t_plan 12

# The administrator's list is the guest's own: kept and put back.
ETC=/etc/flexmmap/markings
saved=
[ ! -e $ETC ] || { saved=$(mktemp) && cp -a $ETC "$saved"; }
D=$(mktemp -d /var/tmp/fmm-sync.XXXXXX)
cleanup() {
	rm -rf "$D"
	if [ -n "$saved" ]; then mv "$saved" $ETC; else rm -f $ETC; fi
	rmmod flexmmap 2>/dev/null
}
t_atexit cleanup
chmod 755 "$D"
[ "$(findmnt -no FSTYPE -T "$D")" = ext4 ] || t_fail_all "$D is not on ext4"

# marks FILE...: "layout pax" of each (the values --show prints), one line.
marks() {
	local f
	for f; do
		"$MARK" --show "$f" 2>/dev/null |
			awk '{ sub(/^layout=/, "", $1); sub(/^pax=/, "", $2); printf "%s %s; ", $1, $2 }'
	done
}
mk() { cp /bin/true "$1" && chmod 755 "$1"; }
mkdir "$D/sub"
for f in a "sp ace" t1 t2 t4 t5 gw nob sub/t3; do mk "$D/$f"; done
chmod 775 "$D/gw"
chown 65534 "$D/nob"
ln -s t1 "$D/rlink"                 # root's, relative: followed
ln -s "$D/t2" "$D/ulink"            # nobody's: not followed
chown -h 65534 "$D/ulink"
ln -s sub "$D/udir"                 # nobody's link to a folder on the way
chown -h 65534 "$D/udir"
"$MARK" --pax m "$D/t4" >/dev/null
cat >"$D/list1" <<EOF
# a comment, then an empty line

$D/a layout=legacy pax=m
$D/sp\\040ace pax=m
$D/rlink pax=m
$D/ulink pax=m
$D/udir/t3 pax=m
$D/t4 pax=-
$D/t5 pax=m
$D/gw pax=m
$D/nob pax=m
$D/missing pax=m
$D/a bogus=1
EOF
printf '%s pax=M\n' "$D/t5" >"$D/list2"

# --- --sync of two lists ------------------------------------------------------
out=$("$MARK" --sync "$D/list1" "$D/list2" 2>"$D/err")
rc=$?
t_eq "--sync: exit 1 (problems reported), the good lines applied, a later list's line wins" \
	"1|legacy m; - m; - m; - -; - M; " \
	"$rc|$(marks "$D/a" "$D/sp ace" "$D/t1" "$D/t4" "$D/t5")"
t_eq "--sync: nothing marked through a link nobody owns, nor a file root alone cannot write" \
	"- -; - -; - -; - -; " "$(marks "$D/t2" "$D/sub/t3" "$D/gw" "$D/nob")"
t_diag "$(cat "$D/err")"
want="list1:6: $D/ulink: a symbolic link on its way is not root's: not followed: not marked
list1:7: $D/udir/t3: a symbolic link on its way is not root's: not followed: not marked
list1:10: $D/gw: not root's alone (an m marking would not be trusted): not marked
list1:11: $D/nob: not root's alone (an m marking would not be trusted): not marked
list1:12: $D/missing: not installed, skipped
list1:13: not \"PATH [layout=MODE|-] [pax=FLAGS|-]\": skipped"
t_eq "--sync: one message per problem line, naming list and line" "$want" \
	"$(sed "s|^flexmmap-mark: $D/||" "$D/err")"
t_eq "--sync: nothing on standard output" "" "$out"
grep -v -e ulink -e udir -e gw -e nob -e bogus "$D/list1" >"$D/good"
t_check "--sync of a list whose files are all there or missing: exit 0" "$MARK" --sync "$D/good"
mk "$D/t6"
printf '%s pax=m\n' "$D/t6" >"$D/list3"
out=$(t_as_nobody "$MARK" --sync "$D/list3" 2>&1)
t_eq "--sync as nobody: exit 1, root's file unchanged" "1 - -; " "$? $(marks "$D/t6")"

# --- the default lists: /etc/flexmmap/markings ------------------------------------
mkdir -p /etc/flexmmap
printf '%s layout=flexible\n' "$D/t6" >$ETC
t_check "--sync with no list reads $ETC (and the shipped list if any)" "$MARK" --sync
t_eq "... and marks what it lists" "flexible -; " "$(marks "$D/t6")"

# --- complain mode -> --suggest --apply -> enforce -> upgrade -> --sync -------------
b=$FMM_NATIVE
rmmod flexmmap 2>/dev/null
t_insmod nx=3 wx_complain=1
J=$D/jit
cp "$FMM_PROBES/fmm-wx-$b" "$J" && chmod 755 "$J"
: >$ETC
(cd / && "$J" --mmap-rwx >/dev/null 2>&1)
ran=$?
out=$("$MARK" --suggest --apply 2>&1)
rc=$?
t_eq "complain mode: the RWX mapping runs; --suggest --apply marks the program and lists it" \
	"0 0 - m; $J pax=m" "$ran $rc $(marks "$J")$(grep -F "$J" $ETC)"
t_diag "$(grep -F -A1 "# $J" <<<"$out" | head -n 3)"
"$MARK" --suggest --apply >/dev/null 2>&1
t_eq "a second --apply adds no second line" 1 "$(grep -cF "$J" $ETC)"
echo 0 >/proc/sys/vm/flexmmap_wx_complain
(cd / && "$J" --mmap-rwx >/dev/null 2>&1)
t_eq "enforce (complain 0): the marked program's RWX mapping runs" 0 "$?"
# The upgrade: a new file at the path, without the attributes.
cp "$FMM_PROBES/fmm-wx-$b" "$J.new" && chmod 755 "$J.new" && mv "$J.new" "$J"
(cd / && "$J" --mmap-rwx >/dev/null 2>&1)
before=$?
sync_out=$("$MARK" --sync 2>&1)
src=$?
(cd / && "$J" --mmap-rwx >/dev/null 2>&1)
t_eq "replaced by a new file: refused (exit 1); --sync (exit 0) marks it again and it runs (exit 0)" \
	"1 0 0 - m; " "$before $src $? $(marks "$J")"
[ -z "$sync_out" ] || t_diag "--sync said: $sync_out"
