// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the 2004 flexible mmap layout as a loadable module.
 *
 * Loading it hooks the exec path (see policy.c), in one of three ways
 * that Kbuild picks per kernel:
 * - stock 6.1: kprobes (kprobes.c), which also track fork and exit
 *   (track.c) and redirect x86's hugetlb placement; a managed process's
 *   mmap()s reach the module's allocators (alloc.c) through the
 *   mm->get_unmapped_area pointer, which the module sets;
 * - 6.1 built with patches/: the kernel's mmap layout hook (hook.c), whose
 *   trampoline calls the module and survives its unload;
 * - 6.10 and later (Debian 13's 6.12), which have no such pointer: an
 *   ftrace redirect of the kernel's two allocators (redirect.c), with the
 *   process's record in mm->flags (kapi.c).
 * mmap() itself is never hooked.
 *
 *	insmod flexmmap.ko [layout=0..3]
 *	sysctl vm.flexmmap_layout=N	# applies to programs exec'd afterwards
 *	cat /proc/flexmmap/stats /proc/flexmmap/tasks
 *	rmmod flexmmap			# safe while managed processes run
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/rcupdate.h>
#include "fmm.h"

/*
 * The order is the safety argument.  Load: the W^X hooks (for nx=3), then
 * the layout hooks with fork and exit tracking before the exec hook, and
 * only then the control files, through which a retarget can put a running
 * process on our allocators.  So every hook that can see a module mm is in
 * place before any write can create one, and an init that fails has
 * published nothing: its error path undoes hooks that no user could reach
 * but exec.  Unload: the control files first (unregistering the sysctls and
 * removing the /proc files wait for handlers already running), then the
 * layout hooks' own unload sequence (kprobes.c, hook.c, redirect.c), which
 * also ends the W^X hooks and waits for every task to leave module text.
 */
static int __init fmm_init(void)
{
	int ret;

	ret = fmm_ksyms_init();
	if (ret)
		return ret;
	ret = fmm_kapi_init();
	if (ret)
		return ret;
	ret = fmm_nx_init();
	if (ret)
		return ret;
	ret = fmm_layout_hooks_install();
	if (ret)
		goto out_nx_exit;
	ret = fmm_control_init();
	if (ret)
		goto out_hooks_remove;
	pr_info("loaded, layout %d, nx %d\n", READ_ONCE(fmm_layout),
		READ_ONCE(fmm_nx));
	return 0;

out_hooks_remove:
	/* Execs may already be on our allocators: the full unload sequence. */
	fmm_layout_hooks_remove();
	return ret;
out_nx_exit:
	fmm_nx_exit();
	/* A task may be in a W^X deny stub (module text). */
	synchronize_rcu_tasks();
	return ret;
}

static void __exit fmm_exit(void)
{
	fmm_control_exit();
	fmm_layout_hooks_remove();
	pr_info("unloaded\n");
}

module_init(fmm_init);
module_exit(fmm_exit);
MODULE_LICENSE("GPL");
MODULE_AUTHOR("The flexmmap developers");
MODULE_DESCRIPTION("Flexible and legacy mmap layouts, chosen at exec");
/* The package version (debian/changelog); it also makes modpost record a
 * srcversion, which the DKMS test compares with the module under test.
 */
MODULE_VERSION("0.1");
