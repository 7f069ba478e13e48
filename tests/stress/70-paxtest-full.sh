#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Stress only (make stress): the whole "paxtest blackhat", randomisation
# tests included, on the stock kernel and under vm.flexmmap_layout 1 and 2
# (nx 0).  Each run takes over 10 minutes under TCG.  Pass: every exec and
# mprotect result ("Executable ...", "Writable text segments") equals the
# stock kernel's, and no randomisation figure (bits) is lower than stock's
# by more than two bits: paxtest guesses the bits from a few hundred
# samples, and the stock kernel alone gave "Heap randomization test (PIE)"
# 28 bits in one boot and 30 in another (the module does not place the
# heap).  A layout that lost its randomisation shows 10 or more bits less.
# The "Return to function" results are not compared: where a smashed return
# lands depends on the randomised addresses, and stock alone gave "Killed"
# in one boot and nothing (the child exited) in another.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../guest/lib.sh
. "$(dirname "$0")/../lib.sh"
t_need_root
command -v paxtest >/dev/null || t_fail_all "paxtest not in the guest image"
rmmod flexmmap 2>/dev/null
work=$(mktemp -d /tmp/pax.XXXXXX)
t_dmesg_mark

run_pax() { # NAME
	local start=$SECONDS
	(cd "$work" && paxtest blackhat "$work/$1.log" >/dev/null 2>&1)
	grep ' : ' "$work/$1.log" | sed 's/  */ /g' >"$work/$1"
	t_diag "paxtest blackhat, $1 ($((SECONDS - start)) s):"
	t_sub <"$work/$1"
}

run_pax stock
t_insmod
for l in 1 2; do
	echo $l >/proc/sys/vm/flexmmap_layout
	run_pax "layout$l"
done
rmmod flexmmap

nxre='^(Executable|Writable)'
for l in 1 2; do
	n=$(grep -cE "$nxre" "$work/layout$l")
	d=$(diff <(grep -E "$nxre" "$work/stock") <(grep -E "$nxre" "$work/layout$l"))
	if [ "$n" -gt 0 ] && [ -z "$d" ]; then
		t_ok "layout $l: paxtest exec/mprotect results equal stock's ($n results)"
	else
		t_fail "layout $l: paxtest exec/mprotect results equal stock's" "${d:-no results}"
	fi
	lower=$(join -t: <(grep bits "$work/stock" | sort) <(grep bits "$work/layout$l" | sort) |
		awk -F: '{ s = $2 + 0; m = $3 + 0; if (m < s - 2) print $1 ": stock " s ", module " m }')
	n=$(grep -c bits "$work/layout$l")
	if [ "$n" -gt 0 ] && [ -z "$lower" ]; then
		t_ok "layout $l: no randomisation figure more than 2 bits below stock's ($n figures)"
	else
		t_fail "layout $l: no randomisation figure more than 2 bits below stock's" "${lower:-no figures}"
	fi
done
rm -rf "$work"
t_eq "no kernel problems" "" "$(t_kernel_problems)"
