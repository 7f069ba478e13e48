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

# The release (6.1.0-NN-amd64) of the newest installed Debian 6.1 headers
# of the generic amd64 flavour: never -rt-amd64 or -cloud-amd64 (or any
# other flavour), whatever else is installed; "sort -V" alone would put
# 6.1.0-NN-rt-amd64 after 6.1.0-NN-amd64.  FLEXMMAP_KVER overrides it.  The
# guest boots the image of the same release (tests/kver-check tests this
# choice).
flexmmap_kver() {
	local d r best=
	if [ -n "${FLEXMMAP_KVER:-}" ]; then
		echo "$FLEXMMAP_KVER"
		return
	fi
	best=$(for d in /usr/src/linux-headers-6.1.0-*-amd64; do
		r=${d##*/linux-headers-}
		[[ $r =~ ^6\.1\.0-[0-9]+-amd64$ ]] && [ -e "$d/Makefile" ] && echo "$r"
	done | sort -V | tail -n 1)
	[ -n "$best" ] || die "no linux-headers-6.1.0-NN-amd64 (the generic amd64 flavour) installed (run: apt-get install linux-headers-amd64)"
	echo "$best"
}

# The packages of scripts/packages in the SETs given, "PACKAGE PROBE" per
# line, each package once.
flexmmap_packages() {
	awk -v sets=" $* " '!/^[[:space:]]*(#|$)/ && index(sets, " " $1 " ") && !seen[$3]++ { print $3, $4 }' \
		"$FLEXMMAP_ROOT/scripts/packages"
}

# Which kernel the guest boots: "stock" (Debian 12's 6.1, the default),
# "source" (built from linux-source-6.1 with patches/ by
# scripts/build-kernel) or "trixie" (Debian 13's stock 6.12 with a trixie
# root filesystem; the module is built for it in a trixie build root, and
# "make check GUEST=trixie" runs the whole suite there) or "i386" (Debian
# 12's 32-bit 686-pae kernel of the same version as the amd64 headers, with
# an i386 root filesystem; the module is cross-built for it here,
# scripts/i386-headers) or "source-rt" (the PREEMPT_RT debug kernel built
# from Debian 13's linux-source-6.12 by scripts/build-kernel, with the
# trixie root filesystem; the module is built against its tree here).
# FLEXMMAP_KERNEL sets it for every script; qemu/run --kernel for one boot.
flexmmap_kernel() {
	case ${FLEXMMAP_KERNEL:-stock} in
	stock | source | source-rt | trixie | i386) echo "${FLEXMMAP_KERNEL:-stock}" ;;
	*) die "FLEXMMAP_KERNEL must be stock, source, source-rt, trixie or i386, not '$FLEXMMAP_KERNEL'" ;;
	esac
}

# True for the kernels built here by scripts/build-kernel (with KASAN,
# lockdep and kmemleak: every test is several times slower under TCG).
flexmmap_source_built() {
	case $(flexmmap_kernel) in
	source | source-rt) return 0 ;;
	*) return 1 ;;
	esac
}

# "KVER VERSION" of trixie's current stock kernel (linux-image-amd64's).
flexmmap_trixie_kernel() {
	local dep
	dep=$("$FLEXMMAP_ROOT/scripts/trixie-apt" apt-cache show linux-image-amd64 |
		sed -n 's/^Depends: linux-image-\([^ ]*\) (= \([^)]*\)).*/\1 \2/p' | sort -V | tail -n 1)
	[ -n "$dep" ] || die "cannot tell trixie's kernel from linux-image-amd64's dependencies"
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
# the guest's kernel, so each kernel has its own.
flexmmap_out() {
	case $(flexmmap_kernel) in
	stock) echo "$FLEXMMAP_CACHE/build/out" ;;
	source) echo "$FLEXMMAP_CACHE/build/source/out" ;;
	source-rt) echo "$FLEXMMAP_CACHE/build/source-rt/out" ;;
	trixie) echo "$FLEXMMAP_CACHE/build/trixie/out" ;;
	i386) echo "$FLEXMMAP_CACHE/build/i386/out" ;;
	esac
}

# The release the guest runs (uname -r).
flexmmap_guest_kver() {
	local d
	case $(flexmmap_kernel) in
	stock) flexmmap_kver ;;
	source | source-rt)
		d=$("$FLEXMMAP_ROOT/scripts/build-kernel" --print)
		[ -f "$d/kver" ] || die "the source kernel is not built (run: make kernel)"
		cat "$d/kver"
		;;
	trixie) flexmmap_trixie_kernel | cut -d' ' -f1 ;;
	i386)
		d=$(flexmmap_kver) || exit 1
		echo "${d%-amd64}-686-pae"
		;;
	esac
}
