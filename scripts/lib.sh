# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Common settings for flexmmap's shell scripts: where the cache lives and
# which Debian 6.1 kernel we build against.  Sourced, never executed.

FLEXMMAP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FLEXMMAP_CACHE=${FLEXMMAP_CACHE:-${HOME:-/root}/.cache/flexmmap}
export FLEXMMAP_ROOT FLEXMMAP_CACHE

# Scripts may set FLEXMMAP_PROG (e.g. qemu/run) to name themselves in messages.
die() {
	echo "${FLEXMMAP_PROG:-${0##*/}}: error: $*" >&2
	exit 1
}

note() {
	echo "${FLEXMMAP_PROG:-${0##*/}}: $*" >&2
}

# The table of kernels (scripts/kernels.list): NAME SUITE ARCH FLAVOUR BUILD.
FLEXMMAP_KERNELS=$FLEXMMAP_ROOT/scripts/kernels.list

# The names in the table, one per line.
flexmmap_kernel_names() {
	awk '!/^[[:space:]]*(#|$)/ { print $1 }' "$FLEXMMAP_KERNELS"
}

# flexmmap_kfield FIELD [NAME]: suite, arch, flavour or build of the
# kernel NAME (default: the one this run is for, flexmmap_kernel).
flexmmap_kfield() {
	local name col
	case $1 in
	suite) col=2 ;;
	arch) col=3 ;;
	flavour) col=4 ;;
	build) col=5 ;;
	*) die "flexmmap_kfield: no field '$1' in scripts/kernels.list" ;;
	esac
	name=${2:-$(flexmmap_kernel)} || exit 1
	awk -v n="$name" -v c="$col" '!/^[[:space:]]*(#|$)/ && $1 == n { print $c; exit }' "$FLEXMMAP_KERNELS"
}

# The release (6.1.0-NN-FLAVOUR) of the newest installed Debian 6.1
# headers of the flavour of the kernel this run is for when this machine's
# headers build its module (BUILD "host" in scripts/kernels.list), else of
# the generic amd64 flavour: never -rt-amd64 or -cloud-amd64 for amd64,
# whatever else is installed; "sort -V" alone would put 6.1.0-NN-rt-amd64
# after 6.1.0-NN-amd64.  FLEXMMAP_KVER overrides it.  The guest boots the
# image of the same release (tests/kver-check tests this choice).
flexmmap_kver() {
	local d r best='' fl=amd64
	if [ -n "${FLEXMMAP_KVER:-}" ]; then
		echo "$FLEXMMAP_KVER"
		return
	fi
	[ "$(flexmmap_kfield build)" != host ] || fl=$(flexmmap_kfield flavour)
	best=$(for d in /usr/src/linux-headers-6.1.0-*-"$fl"; do
		r=${d##*/linux-headers-}
		[[ $r =~ ^6\.1\.0-[0-9]+-$fl$ ]] && [ -e "$d/Makefile" ] && echo "$r"
	done | sort -V | tail -n 1)
	[ -n "$best" ] || die "no linux-headers-6.1.0-NN-$fl (the $fl flavour) installed (run: apt-get install linux-headers-$fl)"
	echo "$best"
}

# The packages of scripts/packages in the SETs given, "PACKAGE PROBE" per
# line, each package once.
flexmmap_packages() {
	awk -v sets=" $* " '!/^[[:space:]]*(#|$)/ && index(sets, " " $1 " ") && !seen[$3]++ { print $3, $4 }' \
		"$FLEXMMAP_ROOT/scripts/packages"
}

# Which kernel the guest boots: a NAME of scripts/kernels.list: "stock"
# (Debian 12's 6.1, the default), "rt" and "cloud" (its other flavours),
# "trixie", "trixie-rt" and "trixie-cloud" (Debian 13's 6.12 with a trixie
# root filesystem; the module is built for it in a trixie build root),
# "i386" (Debian 12's 32-bit 686-pae kernel of the same version as the amd64
# headers, with an i386 root filesystem; the module is cross-built for it
# here, scripts/i386-headers), "source" (built from linux-source-6.1 with
# patches/ by scripts/build-kernel), "source-rt" (the PREEMPT_RT debug
# kernel built from Debian 13's linux-source-6.12, with the trixie root
# filesystem) or "parisc".  FLEXMMAP_KERNEL sets it for every script;
# qemu/run --kernel for one boot.
flexmmap_kernel() {
	local k=${FLEXMMAP_KERNEL:-stock}
	if [ -n "$k" ] && flexmmap_kernel_names | grep -qxF -- "$k"; then
		echo "$k"
		return
	fi
	die "FLEXMMAP_KERNEL (KERNEL=) must name a kernel of scripts/kernels.list ($(flexmmap_kernel_names | paste -sd' ')), not '$k'"
}

# True for the kernels built here by scripts/build-kernel (with KASAN,
# lockdep and kmemleak: every test is several times slower under TCG).
flexmmap_source_built() {
	[ "$(flexmmap_kfield build)" = source ]
}

# "KVER VERSION" of trixie's current kernel of FLAVOUR (default: the
# flavour of the kernel this run is for if the trixie build root builds its
# module, else amd64): what its linux-image-FLAVOUR depends on.
flexmmap_trixie_kernel() {
	local dep fl=${1:-}
	if [ -z "$fl" ]; then
		fl=amd64
		[ "$(flexmmap_kfield build)" != chroot ] || fl=$(flexmmap_kfield flavour)
	fi
	dep=$("$FLEXMMAP_ROOT/scripts/trixie-apt" apt-cache show "linux-image-$fl" |
		sed -n 's/^Depends: linux-image-\([^ ]*\) (= \([^)]*\)).*/\1 \2/p' | sort -V | tail -n 1)
	[ -n "$dep" ] || die "cannot tell trixie's $fl kernel from linux-image-$fl's dependencies"
	echo "$dep"
}

# Unmount (lazily) everything mounted below DIR, deepest first: debootstrap
# leaves proc and sys mounted in its target, and "rm -rf" must never
# recurse into them.
flexmmap_umount_below() {
	local m
	{ findmnt -rn -o TARGET | grep -F "$1/" || true; } | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
}

# The build output the guest sees at /flexmmap: the module is built against
# the guest's kernel, so each kernel has its own (the stock one's is
# build/out, the others' build/NAME/out).  FLEXMMAP_OUT names another
# (scripts/matrix --boot: a copy with the module of one ABI).
flexmmap_out() {
	local k
	if [ -n "${FLEXMMAP_OUT:-}" ]; then
		echo "$FLEXMMAP_OUT"
		return
	fi
	k=$(flexmmap_kernel) || exit 1
	if [ "$k" = stock ]; then
		echo "$FLEXMMAP_CACHE/build/out"
	else
		echo "$FLEXMMAP_CACHE/build/$k/out"
	fi
}

# The release the guest runs (uname -r).
flexmmap_guest_kver() {
	local d
	case $(flexmmap_kfield build) in
	host) flexmmap_kver ;;
	source)
		d=$("$FLEXMMAP_ROOT/scripts/build-kernel" --print)
		[ -f "$d/kver" ] || die "the source kernel is not built (run: make kernel)"
		cat "$d/kver"
		;;
	chroot)
		if [ -n "${FLEXMMAP_KVER:-}" ]; then
			echo "$FLEXMMAP_KVER"
		else
			flexmmap_trixie_kernel "" | cut -d' ' -f1
		fi
		;;
	i386)
		d=$(FLEXMMAP_KERNEL=stock flexmmap_kver) || exit 1
		echo "${d%-amd64}-686-pae"
		;;
	*) die "no guest release for kernel $(flexmmap_kernel)" ;;
	esac
}
