#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Per-binary markings (module/mark.c): user.flexmmap.layout beats
# vm.flexmmap_layout for that binary; user.pax.flags m exempts a root-owned
# binary from W^X (mode 3), M puts a binary under it whatever
# vm.flexmmap_nx says; a malformed value falls back to the sysctls with a log
# line naming the file; a #! script gets its interpreter's markings; the
# module parameter markings=0 reads none.  The markings are set with
# setfattr, on copies in the guest's ext4 root.
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
command -v setfattr >/dev/null || t_fail_all "setfattr missing (the attr package, guest-image/packages)"

P=$FMM_PROBES
N=$FMM_NATIVE
L=/proc/sys/vm/flexmmap_layout
X=/proc/sys/vm/flexmmap_nx
W=/var/tmp/fmm-mark.$$
mkdir -p $W/userns-mnt || t_fail_all "mkdir $W"
t_atexit "rm -rf $W" # runs after the umount below: last in, first run
touch $W/probe
setfattr -n user.flexmmap.layout -v legacy $W/probe 2>/dev/null ||
	t_fail_all "no user extended attributes on $W ($(stat -f -c %T $W))"
t_plan 31

stat_of() { sed -n "s/^$1 //p" /proc/flexmmap/stats; }
denials() {
	echo $(($(stat_of wx_denied_mmap) + $(stat_of wx_denied_mprotect)))
}
# copy NAME SRC [ATTR VALUE]: a root-owned copy of SRC, marked if asked.
copy() {
	{ cp "$2" "$W/$1" && chmod 755 "$W/$1"; } || t_fail_all "cp $2 $W/$1"
	[ $# -lt 4 ] || setfattr -n "$3" -v "$4" "$W/$1" || t_fail_all "setfattr $3 $W/$1"
}
rmmod flexmmap 2>/dev/null
t_dmesg_mark
start_mark=$T_DMESG_MARK
t_insmod
t_eq "markings are read by default" "read" "$(stat_of markings)"

# --- layouts ------------------------------------------------------------
lay=$P/fmm-layout-$N
copy lay-legacy "$lay" user.flexmmap.layout legacy
copy lay-flexible "$lay" user.flexmmap.layout flexible
copy lay-kernel "$lay" user.flexmmap.layout kernel
copy lay-auto "$lay" user.flexmmap.layout auto
copy lay-none "$lay"
# Layouts: 1 legacy, 2 flexible.  The unmarked copy is the control.
echo 2 >$L
t_check "control: unmarked, layout=2: module top-down" \
	$W/lay-none --expect topdown --expect-alloc module-topdown --expect-mode flexible
t_check "marked legacy, layout=2: module bottom-up" \
	$W/lay-legacy --expect bottomup --expect-alloc module-bottomup --expect-mode legacy
t_check "marked kernel, layout=2: the kernel's allocator" \
	$W/lay-kernel --expect topdown --expect-alloc kernel-topdown --expect-mode kernel
echo 1 >$L
t_check "control: unmarked, layout=1: module bottom-up" \
	$W/lay-none --expect bottomup --expect-alloc module-bottomup --expect-mode legacy
t_check "marked flexible, layout=1: module top-down" \
	$W/lay-flexible --expect topdown --expect-alloc module-topdown --expect-mode flexible
t_check "marked auto, layout=1: the 2004 policy (top-down: the probe has PT_GNU_STACK)" \
	$W/lay-auto --expect topdown --expect-alloc module-topdown --expect-mode auto
t_check "marked auto, layout=1, setarch -L: the personality counts under auto" \
	setarch -L $W/lay-auto --expect bottomup --expect-alloc module-bottomup --expect-mode auto
t_check "marked flexible, layout=1, setarch -L: the marking beats the personality" \
	setarch -L $W/lay-flexible --expect topdown --expect-alloc module-topdown --expect-mode flexible

# --- malformed values -----------------------------------------------------
# fallback NAME ATTR VALUE LOGPATTERN: a copy marked ATTR=VALUE is run under
# layout=1 (module bottom-up), and must get it, with a log line.
fallback() {
	local name=$1 attr=$2 val=$3 pat=$4 out m0 shown
	shown=$(printf %q "$val")
	copy "bad-$name" "$lay" "$attr" "$val"
	m0=$(stat_of mark_malformed)
	t_dmesg_mark
	if out=$("$W/bad-$name" --expect bottomup --expect-alloc module-bottomup --expect-mode legacy 2>&1) &&
		[ "$(stat_of mark_malformed)" -gt "$m0" ] && t_dmesg_since | grep -q "bad-$name: $pat"; then
		t_ok "malformed $attr $shown: ignored (layout=1 applies), logged with the file's name"
	else
		t_fail "malformed $attr $shown: ignored (layout=1 applies), logged with the file's name" \
			"$(grep -E '^(not ok|#)' <<<"$out" | head -5)" "mark_malformed $m0 -> $(stat_of mark_malformed)" \
			"log: $(t_dmesg_since | tail -n 3)"
	fi
}
fallback layout user.flexmmap.layout flexibel 'user.flexmmap.layout "flexibel" is not kernel, legacy, flexible or auto'
fallback newline user.flexmmap.layout $'flexible\n' 'user.flexmmap.layout "flexible\\n" is not'
fallback long user.flexmmap.layout flexibleflexibleflexible 'user.flexmmap.layout longer than 16 bytes'
fallback pax user.pax.flags mM 'user.pax.flags "mM" is not PaX flags'
fallback paxchar user.pax.flags 'em;' 'user.pax.flags "em;" is not PaX flags'

# --- a file system mounted in a user namespace: not read -----------------
# Its owner answers for everything in it.  6.1's tmpfs cannot hold user
# attributes at all; 6.12's can, and the marking must be ignored there.
echo 2 >$L
out=$(unshare -U -r -m sh -c "mount -t tmpfs none $W/userns-mnt 2>/dev/null || mount -t tmpfs none /mnt || exit 9
	d=\$(mountpoint -q $W/userns-mnt && echo $W/userns-mnt || echo /mnt)
	cp $lay \$d/lay && setfattr -n user.flexmmap.layout -v legacy \$d/lay 2>/dev/null || { echo no-xattr; exit 0; }
	\$d/lay --expect topdown --expect-alloc module-topdown >/dev/null 2>&1 && echo ignored || echo honoured" 2>&1)
case $out in
no-xattr) t_ok "a tmpfs mounted in a user namespace holds no user attributes on this kernel: nothing to read" ;;
*) t_eq "marked legacy on a tmpfs mounted in a user namespace, layout=2: not read (module top-down)" ignored "$out" ;;
esac

# --- #! scripts: the interpreter's markings ------------------------------
# A copy of bash marked flexible runs a script marked legacy; the script
# reads /proc/flexmmap/self with a builtin, so from the interpreter itself.
copy bash-flexible /bin/bash user.flexmmap.layout flexible
# shellcheck disable=SC2016 # $line is the script's
printf '#!%s\nread -r line </proc/flexmmap/self; echo "$line"\n' $W/bash-flexible >$W/script
chmod 755 $W/script
setfattr -n user.flexmmap.layout -v legacy $W/script
echo 1 >$L
line=$($W/script)
t_eq "#! script marked legacy, interpreter marked flexible, layout=1: the interpreter's marking counts" \
	"flexible module-topdown" "$(cut -d' ' -f2,3 <<<"$line")"

# --- W^X: m and M ----------------------------------------------------------
py=$(readlink -f "$(command -v python3)")
copy py-m "$py" user.pax.flags m
copy py-none "$py"
copy py-user "$py" user.pax.flags m
chown 65534:65534 $W/py-user
copy py-groupw "$py" user.pax.flags em
chmod 775 $W/py-groupw
copy py-M "$py" user.pax.flags M
# ctypes NAME: sorts through a ctypes callback (a libffi closure, which
# first asks for an anonymous RWX page), and prints its own tasks line.
ctypes() {
	# The copies' own prefix has no standard library: point them at /usr.
	PYTHONHOME=/usr "$W/$1" - <<'EOF' 2>&1
import ctypes
libc = ctypes.CDLL(None)
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                       ctypes.POINTER(ctypes.c_int))
arr = (ctypes.c_int * 6)(5, 1, 4, 6, 2, 3)
libc.qsort(arr, 6, ctypes.sizeof(ctypes.c_int), CMP(lambda a, b: a[0] - b[0]))
print(list(arr), open("/proc/flexmmap/self").read().split()[3])
EOF
}
# wx NAME WANT_OUT WANT_DENIALS: ctypes NAME prints WANT_OUT, and the W^X
# denials it caused are WANT_DENIALS ("0" or "some").
wx() {
	local d0 out n
	d0=$(denials)
	out=$(ctypes "$1")
	n=$(($(denials) - d0))
	[ "$n" = 0 ] || n=some
	t_eq "nx=$(cat $X): $1: $2, W^X denials: $3" "$2, $3" "$out, $n"
}
echo 2 >$L
echo 3 >$X
wx py-none "[1, 2, 3, 4, 5, 6] nx=3" some
wx py-m "[1, 2, 3, 4, 5, 6] nx=2m" 0
u0=$(stat_of mark_untrusted)
t_dmesg_mark
wx py-user "[1, 2, 3, 4, 5, 6] nx=3" some
wx py-groupw "[1, 2, 3, 4, 5, 6] nx=3" some
# The same root-owned file through a nosuid bind mount (as fusermount's).
{ mkdir $W/nosuid && mount --bind $W $W/nosuid && mount -o remount,bind,nosuid $W/nosuid; } ||
	t_fail_all "nosuid bind mount of $W"
t_atexit "umount $W/nosuid"
wx nosuid/py-m "[1, 2, 3, 4, 5, 6] nx=3" some
# And through an idmapped mount (a container's root file system may be one:
# its root could mark files that are root's on disk).
mkdir $W/idmapped
if out=$("$P/fmm-idmap" $W $W/idmapped 2>&1); then
	t_atexit "umount $W/idmapped"
	wx idmapped/py-m "[1, 2, 3, 4, 5, 6] nx=3" some
else
	t_fail "an idmapped bind mount of $W (fmm-idmap)" "$out"
fi
t_eq "m on a file not owned by root, group-writable, on a nosuid or an idmapped mount: not honoured, counted, logged" \
	"4, 4" "$(($(stat_of mark_untrusted) - u0)), $(t_dmesg_since | grep -c 'user.pax.flags m: untrusted file')"
echo 0 >$X
wx py-none "[1, 2, 3, 4, 5, 6] nx=0" 0
wx py-M "[1, 2, 3, 4, 5, 6] nx=3M" some
t_eq "after an M binary ran, the W^X probes stay armed under nx=0 (wx_armed)" 1 "$(stat_of wx_armed)"
wx py-none "[1, 2, 3, 4, 5, 6] nx=0" 0

# --- markings=0 -------------------------------------------------------------
rmmod flexmmap || t_fail_all "rmmod after the markings ran"
t_check "after rmmod, a binary marked legacy runs top-down (the kernel's layout)" \
	$W/lay-legacy --expect topdown
t_insmod markings=0 layout=2
t_eq "markings=0: stats say off" "off" "$(stat_of markings)"
t_check "markings=0: marked legacy, layout=2: module top-down (the sysctl)" \
	$W/lay-legacy --expect topdown --expect-alloc module-topdown --expect-mode flexible
rmmod flexmmap
T_DMESG_MARK=$start_mark
t_eq "no kernel WARN, BUG or Oops" "" "$(t_kernel_problems)"
