#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The hugetlb userfaultfd fill refused with a page in hand (fmm-uffd-race,
# 64- and 32-bit): a UFFDIO_COPY whose source is not present drops the mmap
# lock, copies the source into a huge page and calls the fill again with it,
# while another thread has mapped the destination PROT_READ|PROT_EXEC.  On
# the stock kernel the code is filled and runs (the control: the race
# reaches the fill with an executable vma); under W^X (nx=3) the copy fails
# with EACCES, nothing is filled and no huge page is lost, as root and as
# nobody, and the kernel stays well (the suite fails the file on any
# "kernel BUG": the module that refused without putting the page hit
# BUG_ON(page) in mm/userfaultfd.c and hung the guest).
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
t_need_root
t_plan 10

P=$FMM_PROBES
HP=/proc/sys/vm/nr_hugepages
UU=/proc/sys/vm/unprivileged_userfaultfd
D=/tmp/fmm-hugetlbfs
rmmod flexmmap 2>/dev/null

hp_orig=$(cat $HP)
uu_orig=$(cat $UU)
cleanup() {
	rmmod flexmmap 2>/dev/null
	umount "$D" 2>/dev/null
	rmdir "$D" 2>/dev/null
	echo "$uu_orig" >$UU
	echo "$hp_orig" >$HP
}
t_atexit cleanup

# The copy needs two free huge pages (the kernel's temporary one and the
# destination's); the second userfaultfd serves a kernel-mode fault, which
# nobody may do only with vm.unprivileged_userfaultfd=1.
[ "$hp_orig" -ge 4 ] || echo 4 >$HP
mkdir -p "$D"
if [ "$(cat $HP)" -ge 4 ] && mount -t hugetlbfs -o mode=1777 none "$D" &&
	echo 1 >$UU; then
	t_ok "harness: 4 huge pages, hugetlbfs on $D for everyone, vm.unprivileged_userfaultfd=1"
else
	t_fail_all "harness: huge pages ($(cat $HP)) and a hugetlbfs on $D"
fi
free_pages() { awk '/^HugePages_Free/ { print $2 }' /proc/meminfo; }

# race LABEL WANT_RC WHO BITS: a copy whose source fault is never served
# would wait for ever, so the run is bounded (137: killed).  refusals counts
# the runs that want a refusal.
refusals=0
race() {
	local label=$1 want=$2 who=$3 b=$4 out rc
	if ! t_bits_run "$b"; then
		t_skip "$label: fmm-uffd-race-$b" "$FMM_NATIVE_SKIP"
		return
	fi
	[ "$want" != 0 ] || refusals=$((refusals + 1))
	if [ "$who" = nobody ]; then
		out=$(cd / && timeout -s KILL 120 setpriv --reuid=65534 --regid=65534 \
			--clear-groups "$P/fmm-uffd-race-$b" "$D" 2>&1)
	else
		out=$(timeout -s KILL 120 "$P/fmm-uffd-race-$b" "$D" 2>&1)
	fi
	rc=$?
	t_eq "$label: fmm-uffd-race-$b ($(head -n 1 <<<"$out"))" "$want" "$rc"
}

race "stock kernel: the code is filled and runs" 10 root 64
race "stock kernel: the code is filled and runs" 10 root 32

t_insmod layout=2 nx=3 || exit 1
before=$(awk '/^wx_denied_uffd/ { print $2 }' /proc/flexmmap/stats)
free0=$(free_pages)
race "nx=3: EACCES, nothing filled" 0 root 64
race "nx=3: EACCES, nothing filled" 0 root 32
race "nx=3, as nobody: EACCES, nothing filled" 0 nobody 64
race "nx=3, as nobody: EACCES, nothing filled" 0 nobody 32
after=$(awk '/^wx_denied_uffd/ { print $2 }' /proc/flexmmap/stats)
t_check "nx=3: each of the $refusals refusals counted (wx_denied_uffd $before -> $after)" \
	test "$after" -ge "$((before + refusals))"
t_eq "nx=3: no huge page lost (HugePages_Free)" "$free0" "$(free_pages)"
rmmod flexmmap
t_eq "rmmod" 0 $?
