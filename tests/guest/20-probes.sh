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
t_plan 4

[ -d "$FMM_PROBES" ] || t_fail_all "the probes are built ($FMM_PROBES)" "run 'make probes' on the host"

for bits in 64 32; do
	p=$FMM_PROBES/fmm-layout-$bits
	name="harness: fmm-layout-$bits is a static $bits-bit ELF whose --print reads its maps"
	[ "$bits" = 64 ] || name="$name, 32-bit addresses only"
	if ! t_bits_run "$bits"; then
		t_skip "$name" "$FMM_NATIVE_SKIP"
		continue
	fi
	if [ ! -x "$p" ]; then
		t_fail "$name" "no executable $p"
		continue
	fi
	desc=$(file -b "$p")
	rc=0
	out=$(timeout 60 "$p" --print 2>&1) || rc=$?
	high=
	[ "$bits" = 64 ] ||
		high=$(grep -oE '0x[0-9a-fA-F]{9,}' <<<"$out" | grep -vE '^0x0*[0-9a-fA-F]{1,8}$' || true)
	if [[ $desc == "ELF $bits-bit"*"statically linked"* ]] && [ "$rc" = 0 ] &&
		grep -q '=0x' <<<"$out" && [ -z "$high" ]; then
		t_ok "$name"
		printf '%s\n' "$out" | t_sub
	else
		t_fail "$name" "file: $desc" "--print: exit status $rc" "$out"
	fi
done

# must_fail CMD...: the CMD of a negative control exits 1 with a failed
# test of its own ("not ok"), not with a crash or bad usage; else it is
# added to $not_failed.
must_fail() {
	local out rc=0
	out=$(timeout 120 "$@" 2>&1) || rc=$?
	if [ "$rc" != 1 ] || ! grep -q '^not ok' <<<"$out"; then
		not_failed+="'$*': exit status $rc"$'\n'"$(tail -n 15 <<<"$out")"$'\n'
	fi
}
rmmod flexmmap 2>/dev/null
if [ -e /proc/flexmmap ]; then
	t_fail_all "a flexmmap module stays loaded (rmmod failed)"
fi
for bits in 64 32; do
	name="negative control: on the stock kernel the $bits-bit probes fail when told the wrong direction (--expect bottomup; setarch -L --expect topdown), allocator (module-topdown), NX mode (fmm-nx --expect 3) or W^X (fmm-wx --expect 3)"
	if ! t_bits_run "$bits"; then
		t_skip "$name" "$FMM_NATIVE_SKIP"
		continue
	fi
	not_failed=
	must_fail "$FMM_PROBES/fmm-layout-$bits" --expect bottomup
	must_fail setarch -L "$FMM_PROBES/fmm-layout-$bits" --expect topdown
	must_fail "$FMM_PROBES/fmm-layout-$bits" --expect topdown --expect-alloc module-topdown
	must_fail "$FMM_PROBES/fmm-nx-$bits" --expect 3
	must_fail "$FMM_PROBES/fmm-wx-$bits" --expect 3
	t_eq "$name" "" "$not_failed"
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
