#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The freshly built module loads into the stock kernel, acts (a new exec
# is on its allocator), and unloads again, leaving the kernel's allocator.
# The suite fails the file on any kernel problem logged meanwhile.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 3

[ -f "$FMM_KO" ] || t_fail_all "the module is built ($FMM_KO)" "run 'make module' on the host"
t_eq "harness: modinfo: vermagic is this kernel's release, license GPL" \
	"$(uname -r) GPL" \
	"$(modinfo -F vermagic "$FMM_KO" | cut -d' ' -f1) $(modinfo -F license "$FMM_KO")"

lsmod | grep -q '^flexmmap ' && rmmod flexmmap
t_dmesg_mark
t_insmod
out=$("$FMM_PROBES/fmm-layout-$FMM_NATIVE" --expect topdown --expect-alloc module-topdown 2>&1)
rc=$?
listed=$(grep -c '^flexmmap ' /proc/modules)
t_eq "insmod: flexmmap is in /proc/modules and a new exec is on module-topdown" \
	"1, exit 0" "$listed, exit $rc"
[ "$rc" = 0 ] || t_sub <<<"$out"
rmmod flexmmap
rc=$?
"$FMM_PROBES/fmm-layout-$FMM_NATIVE" --expect topdown >/dev/null 2>&1
prc=$?
t_eq "control (stock after rmmod): rmmod flexmmap; gone from /proc/modules and /proc, a new exec top-down" \
	"0, 0, no /proc/flexmmap, exit 0" \
	"$rc, $(grep -c '^flexmmap ' /proc/modules), $([ -e /proc/flexmmap ] && echo /proc/flexmmap || echo no /proc/flexmmap), exit $prc"
t_diag "kernel log:"
t_dmesg_since | t_sub
