#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The static user-space probes run in the guest, 64- and 32-bit, and read
# their own /proc/self/maps.  Negative controls: with no module loaded (a
# top-down stock process, W^X not enforced) each probe FAILS when told to
# expect what is not there, so a pass elsewhere means the thing was seen.
# Probes with tests of their own are listed only; add a test file
# NN-name.sh that mentions a probe's name to take it over.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_plan 16

[ -d "$FMM_PROBES" ] || {
	t_fail "harness: the probes are built ($FMM_PROBES)" "run 'make probes' on the host"
	exit 0
}
t_ok "harness: the probes are built ($FMM_PROBES)"

for bits in 64 32; do
	p=$FMM_PROBES/fmm-layout-$bits
	if [ ! -x "$p" ]; then
		t_fail "harness: fmm-layout-$bits exists" "no executable $p"
		continue
	fi
	desc=$(file -b "$p")
	case $desc in
	"ELF $bits-bit"*"statically linked"*) t_ok "harness: fmm-layout-$bits is a static $bits-bit ELF" ;;
	*) t_fail "harness: fmm-layout-$bits is a static $bits-bit ELF" "file: $desc" ;;
	esac
	rc=0
	out=$(timeout 60 "$p" --print 2>&1) || rc=$?
	if [ "$rc" = 0 ] && grep -q '=0x' <<<"$out"; then
		t_ok "harness: fmm-layout-$bits --print reads its maps"
		printf '%s\n' "$out" | t_sub
	else
		t_fail "harness: fmm-layout-$bits --print reads its maps" "exit status $rc" "$out"
		continue
	fi
	if [ "$bits" = 32 ]; then
		high=$(grep -oE '0x[0-9a-fA-F]{9,}' <<<"$out" | grep -vE '^0x0*[0-9a-fA-F]{1,8}$' || true)
		t_eq "harness: fmm-layout-32 sees only 32-bit addresses" "" "$high"
	fi
done

# must_fail NAME CMD...: a negative control, ok when CMD exits non-zero
# with a failed test of its own ("not ok"), not with a crash or bad usage.
must_fail() {
	local name=$1 out rc=0
	shift
	out=$(timeout 120 "$@" 2>&1) || rc=$?
	if [ "$rc" = 1 ] && grep -q '^not ok' <<<"$out"; then
		t_ok "negative control: $name fails"
	else
		t_fail "negative control: $name fails" "exit status $rc (want 1 and a 'not ok')" \
			"$(tail -n 15 <<<"$out")"
	fi
}
rmmod flexmmap 2>/dev/null
if [ -e /proc/flexmmap ]; then
	t_fail_all "a flexmmap module stays loaded (rmmod failed)"
fi
for bits in 64 32; do
	must_fail "fmm-layout-$bits --expect bottomup on a top-down stock process" \
		"$FMM_PROBES/fmm-layout-$bits" --expect bottomup
	must_fail "setarch -L fmm-layout-$bits --expect topdown on a legacy stock process" \
		setarch -L "$FMM_PROBES/fmm-layout-$bits" --expect topdown
	must_fail "fmm-layout-$bits --expect-alloc module-topdown with no module" \
		"$FMM_PROBES/fmm-layout-$bits" --expect topdown --expect-alloc module-topdown
	must_fail "fmm-nx-$bits --expect 3 on the stock kernel" "$FMM_PROBES/fmm-nx-$bits" --expect 3
	must_fail "fmm-wx-$bits --expect 3 on the stock kernel" "$FMM_PROBES/fmm-wx-$bits" --expect 3
done

# Every other fmm-* program: named here until a test of its own mentions it.
for p in "$FMM_PROBES"/fmm-*; do
	if [ ! -f "$p" ] || [ ! -x "$p" ]; then continue; fi
	name=${p##*/}
	case $name in fmm-layout-64 | fmm-layout-32) continue ;; esac
	owner=$(grep -lF -- "$name" "$FMM_TESTS"/[0-9][0-9]-*.sh 2>/dev/null | grep -v '/20-probes\.sh$' | head -n 1)
	if [ -n "$owner" ]; then
		t_diag "$name: tested by ${owner##*/}"
	else
		t_diag "$name: no test of its own yet"
	fi
done
