#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest is the one we meant to boot: Debian's stock 6.1 kernel of the
# release the module is built against, with the environment qemu/run promises.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_plan 6

if [ -n "${FLEXMMAP_KVER:-}" ]; then
	t_eq "harness: guest runs the expected kernel release ($FLEXMMAP_KVER)" "$FLEXMMAP_KVER" "$(uname -r)"
else
	t_fail "harness: guest runs the expected kernel release" "FLEXMMAP_KVER is not set (qemu/run sets it)"
fi
t_check "harness: the release's modules are installed (/lib/modules/$(uname -r))" \
	test -f "/lib/modules/$(uname -r)/modules.dep"
t_eq "harness: commands run as root" 0 "$(id -u)"
# shellcheck disable=SC2016 # expanded by sh -c
t_check "harness: /tmp is a writable tmpfs" sh -c \
	'[ "$(stat -f -c %T /tmp)" = tmpfs ] && echo x >/tmp/.w && rm /tmp/.w'
t_check "harness: the build output is mounted read-only at $FMM_DIR" sh -c \
	"findmnt -n -o OPTIONS $FMM_DIR | grep -qE '(^|,)ro(,|$)'"
missing=
for c in insmod rmmod modinfo modprobe lsmod dmesg setarch sysctl find stress-ng paxtest strace file; do
	command -v "$c" >/dev/null || missing="$missing $c"
done
t_eq "harness: the admin and test tools are on PATH" "" "${missing# }"
