#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The Debian packages, installed in the guest: "dpkg -i" of flexmmap-dkms
# builds the module with DKMS against the guest kernel's headers and
# installs it; modprobe loads it; the probes of flexmmap-tools run from
# /usr/lib/flexmmap, flexmmap-mark from /usr/bin, and man renders the page
# of each command; the markings list, the boot unit and the dpkg trigger
# that re-applies it; "dpkg -r" removes both and the module is gone.
# The .debs come from "make deb" (part of make check), in /flexmmap/deb.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root

D=$FMM_DIR/deb
kver=$(uname -r)
rmmod flexmmap 2>/dev/null
# DKMS builds against the running kernel's headers package; the source-built
# kernel has none (its module is built on the host against its tree).
[ -e "/lib/modules/$kver/build" ] ||
	t_skip_all "no headers package for $kver in the guest image (DKMS needs one; Debian's kernel has it)"
command -v dkms >/dev/null || t_fail_all "no dkms in the guest image"
compgen -G "$D/flexmmap-dkms_*.deb" >/dev/null || t_fail_all "no .debs in $D: make deb"
t_plan 19
t_dmesg_mark

start=$SECONDS
if out=$(dpkg -i "$D"/flexmmap-dkms_*.deb "$D"/flexmmap-tools_*.deb 2>&1); then
	t_ok "harness: dpkg -i flexmmap-dkms flexmmap-tools ($((SECONDS - start)) s, DKMS build included)"
else
	t_fail "harness: dpkg -i flexmmap-dkms flexmmap-tools" "$(tail -n 30 <<<"$out")"
	for f in /var/lib/dkms/flexmmap/*/build/make.log; do [ -f "$f" ] && tail -n 20 "$f" | t_sub; done
fi
st=$(dkms status flexmmap 2>&1)
t_diag "dkms status: $st"
path=$(modinfo -n flexmmap 2>&1)
t_diag "modinfo -n flexmmap: $path"
# The package must carry the module under test: the same sources as $FMM_KO
# (modpost's srcversion sums them), so a run of the suite against another
# module (the do-nothing control) cannot pass here on the packaged one: the
# rest of the file is about that module, so it stops here if not.
want=$(modinfo -F srcversion "$FMM_KO" 2>&1)
got=$(modinfo -F srcversion flexmmap 2>&1)
if grep -q "flexmmap/.*, $kver, .*: installed" <<<"$st" && [ -n "$want" ] && [ "$want" = "$got" ]; then
	t_ok "DKMS built and installed flexmmap for $kver from the sources of \$FMM_KO (srcversion $got)"
else
	t_fail "DKMS built and installed flexmmap for $kver from the sources of \$FMM_KO" \
		"dkms status: $st" "srcversion of $FMM_KO: '$want', of the DKMS build: '$got'"
	dpkg -r flexmmap-tools flexmmap-dkms >/dev/null 2>&1
	exit 1
fi
t_check "modprobe flexmmap" modprobe flexmmap
t_check "the sysctl appeared" test -e /proc/sys/vm/flexmmap_layout
if out=$("/usr/lib/flexmmap/fmm-layout-$FMM_NATIVE" --expect topdown --expect-alloc module-topdown 2>&1); then
	t_ok "fmm-layout-$FMM_NATIVE of flexmmap-tools: module top-down under the default layout"
else
	t_fail "fmm-layout-$FMM_NATIVE of flexmmap-tools: module top-down" "$(grep -E '^(not ok|#)' <<<"$out" | head -20)"
fi
if out=$(flexmmap-compare --modes 1 2>&1) && grep -q 'legacy / module-bottomup' <<<"$out"; then
	t_ok "flexmmap-compare from /usr/bin runs with the installed module"
else
	t_fail "flexmmap-compare from /usr/bin runs with the installed module" "$out"
fi
g=/usr/lib/flexmmap/flexmmap-mark
t_eq "flexmmap-mark from /usr/bin shows an unmarked file" \
	"layout=- pax=- $g" "$(flexmmap-mark --show "$g" 2>&1)"
# Markings that last: the shipped list, the boot unit, and the file trigger
# that re-applies the lists when dpkg replaces a listed program ("dpkg -i"
# of a package whose program /etc/flexmmap/markings lists, installed, then
# reinstalled: a new file each time, marked before dpkg returns).
unit=
for u in /lib/systemd/system /usr/lib/systemd/system; do
	[ -e "$u/flexmmap-markings.service" ] && unit=$u/flexmmap-markings.service
done
exec_start=$(sed -n 's/^ExecStart=//p' "${unit:-/dev/null}")
if [ -n "$unit" ] && [ "$exec_start" = "/usr/lib/flexmmap/flexmmap-mark --sync" ] &&
	out=$($exec_start 2>&1) && grep -q '^# flexmmap.s shipped markings list' /usr/share/flexmmap/markings; then
	t_ok "the shipped list and $unit, whose command runs (exit 0)"
else
	t_fail "the shipped list and flexmmap-markings.service, whose command runs" "unit: '${unit}'" \
		"ExecStart: '$exec_start'" "$out" "$(head -n 2 /usr/share/flexmmap/markings 2>&1)"
fi
etc_saved=
[ ! -e /etc/flexmmap/markings ] || { etc_saved=$(mktemp) && cp -a /etc/flexmmap/markings "$etc_saved"; }
mkdir -p /etc/flexmmap
echo "/usr/bin/fmm-jit-demo pax=m" >/etc/flexmmap/markings
demo=$(mktemp -d)
mkdir -p "$demo/pkg/DEBIAN" "$demo/pkg/usr/bin"
cp "$FMM_PROBES/fmm-wx-$FMM_NATIVE" "$demo/pkg/usr/bin/fmm-jit-demo"
chmod 755 "$demo/pkg/usr/bin/fmm-jit-demo"
printf '%s\n' "Package: fmm-jit-demo" "Version: 1.0" "Architecture: all" \
	"Maintainer: flexmmap tests <root@localhost>" \
	"Description: a program that maps RWX memory (fmm-wx)" >"$demo/pkg/DEBIAN/control"
dpkg-deb --root-owner-group --build "$demo/pkg" "$demo/demo.deb" >/dev/null 2>&1
for round in install reinstall; do
	ino0=$(stat -c %i /usr/bin/fmm-jit-demo 2>/dev/null)
	out=$(dpkg -i "$demo/demo.deb" 2>&1)
	rc=$?
	ino=$(stat -c %i /usr/bin/fmm-jit-demo 2>/dev/null)
	got=$(flexmmap-mark --show /usr/bin/fmm-jit-demo 2>&1)
	if [ "$rc" = 0 ] && [ "$got" = "layout=- pax=m /usr/bin/fmm-jit-demo" ] && [ -n "$ino" ] && [ "$ino" != "$ino0" ]; then
		t_ok "dpkg -i fmm-jit-demo ($round: a new file, inode $ino): listed in /etc/flexmmap/markings, marked m by the trigger"
	else
		t_fail "dpkg -i fmm-jit-demo ($round): marked m by the trigger" "exit $rc, inode $ino0 -> $ino" "$got" "$out"
	fi
done
echo 3 >/proc/sys/vm/flexmmap_nx
(cd / && /usr/bin/fmm-jit-demo --mmap-rwx >/dev/null 2>&1)
rc=$?
echo 0 >/proc/sys/vm/flexmmap_nx
t_eq "under nx=3 the reinstalled, re-marked program's RWX mapping runs" 0 "$rc"
dpkg -r fmm-jit-demo >/dev/null 2>&1
rm -rf "$demo"
if [ -n "$etc_saved" ]; then mv "$etc_saved" /etc/flexmmap/markings; else rm -f /etc/flexmmap/markings; fi

# man finds each page the package installed and renders it, and groff
# finds nothing to warn about in it (as lintian's check of pages).  The
# warnings come from the file (-l): by name, man may show the cat page it
# saved in /var/cache/man the first time, without running groff again.
for p in flexmmap-mark flexmmap-compare flexmmap-report; do
	path=$(man -w "$p" 2>&1)
	txt=$(man -P cat "$p" 2>/dev/null)
	warn=$(man --warnings -P cat -l "$path" 2>&1 >/dev/null)
	if [ "$path" = "/usr/share/man/man1/$p.1.gz" ] && grep -q '^NAME' <<<"$txt" &&
		grep -q "^ *$p  *- " <<<"$txt" && [ -z "$warn" ]; then
		t_ok "man $p: $path renders (NAME, $(wc -l <<<"$txt") lines, no warning)"
	else
		t_fail "man $p: the installed page renders" "man -w: $path" \
			"warnings: $warn" "$(head -n 8 <<<"$txt")"
	fi
done
t_check "modprobe -r flexmmap" modprobe -r flexmmap
if out=$(dpkg -r flexmmap-tools flexmmap-dkms 2>&1); then
	t_ok "dpkg -r flexmmap-tools flexmmap-dkms"
else
	t_fail "dpkg -r flexmmap-tools flexmmap-dkms" "$out"
fi
if modinfo flexmmap >/dev/null 2>&1; then
	t_fail "the module is gone after dpkg -r" "modinfo still finds $(modinfo -n flexmmap)"
else
	t_ok "the module is gone after dpkg -r"
fi
t_eq "DKMS forgot it" "" "$(dkms status flexmmap 2>/dev/null)"
t_check "/usr/src/flexmmap-* removed" bash -c '! compgen -G "/usr/src/flexmmap-*"'
