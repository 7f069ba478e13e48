#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The freshly built module loads into the stock kernel and unloads again,
# without a warning in the kernel log.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 7

[ -f "$FMM_KO" ] || {
	t_fail "the module is built ($FMM_KO)" "run 'make module' on the host"
	exit 0
}
t_eq "modinfo: vermagic is this kernel's release" "$(uname -r)" \
	"$(modinfo -F vermagic "$FMM_KO" | cut -d' ' -f1)"
t_eq "modinfo: license is GPL" GPL "$(modinfo -F license "$FMM_KO")"

lsmod | grep -q '^flexmmap ' && rmmod flexmmap
t_dmesg_mark
t_check "insmod $FMM_KO" insmod "$FMM_KO"
t_check "flexmmap is in /proc/modules" grep -q '^flexmmap ' /proc/modules
t_check "rmmod flexmmap" rmmod flexmmap
t_check "flexmmap is gone from /proc/modules" sh -c '! grep -q "^flexmmap " /proc/modules'
t_eq "no kernel warning while loading and unloading" "" "$(t_kernel_problems)"
t_diag "kernel log:"
t_dmesg_since | t_sub
