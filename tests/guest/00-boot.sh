#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest is the one we meant to boot: Debian's stock 6.1 kernel of the
# release the module is built against, with the environment qemu/run promises.
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_plan 2

# harness: the guest is the one qemu/run meant to boot, and runs as root.
bad=
[ -n "${FLEXMMAP_KVER:-}" ] || bad+="FLEXMMAP_KVER is not set (qemu/run sets it); "
[ "$(uname -r)" = "${FLEXMMAP_KVER:-}" ] || bad+="uname -r: $(uname -r); "
[ -f "/lib/modules/$(uname -r)/modules.dep" ] || bad+="no /lib/modules/$(uname -r)/modules.dep; "
[ "$(id -u)" = 0 ] || bad+="uid $(id -u); "
t_eq "harness: guest runs the expected kernel release (${FLEXMMAP_KVER:-?}) with its modules, as root" "" "$bad"

# harness: where the tests write and read.
bad=
# shellcheck disable=SC2016 # expanded by sh -c
sh -c '[ "$(stat -f -c %T /tmp)" = tmpfs ] && echo x >/tmp/.w && rm /tmp/.w' ||
	bad+="/tmp is not a writable tmpfs; "
findmnt -n -o OPTIONS "$FMM_DIR" | grep -qE '(^|,)ro(,|$)' ||
	bad+="$FMM_DIR is not mounted read-only; "
for c in insmod rmmod modinfo modprobe lsmod dmesg setarch sysctl find stress-ng paxtest strace file; do
	command -v "$c" >/dev/null || bad+="$c not on PATH; "
done
t_eq "harness: /tmp a writable tmpfs, the build output read-only at $FMM_DIR, the admin and test tools on PATH" "" "$bad"
