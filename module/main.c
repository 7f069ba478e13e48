// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the 2004 flexible mmap layout as a loadable module.
 *
 * Loading it hooks the exec path (see policy.c), through one of three
 * backends that Kbuild picks per kernel, each a record of the layout of
 * every mm and a set of layout hooks (struct fmm_backend):
 * - stock 6.1: the mm's get_unmapped_area pointer (record-ptr.c), set to
 *   the module's allocators (alloc.c) for the processes it manages, and
 *   kprobes (layout-kprobe.c) on exec, fork, exit and hugetlb placement,
 *   with the set of those mms (track.c) for unload to reset;
 * - 6.1 built with patches/: the kernel's mmap layout hook
 *   (layout-hook.c), whose trampoline calls the module and survives its
 *   unload, with the record in mm->mmap_layout (record-hook.c);
 * - 6.10 and later (Debian 13's 6.12), which have no such pointer: an
 *   ftrace redirect of the kernel's two allocators (layout-ftrace.c), with
 *   the record in mm->flags (record-mmf.c).
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
 * The order is the safety argument, and it is written here once for every
 * backend.  Load: the W^X probes (for nx=3), then the backend's layout hooks
 * (fork and exit tracking before the exec hook), and only then the control
 * files, through which a retarget can put a running process on our
 * allocators.  So every hook that can see a module mm is in place before
 * any write can create one, and an init that fails has published nothing:
 * its error path undoes hooks that no user could reach but exec.
 *
 * The markings' binfmt handler (mark.c) comes last: a handler may be
 * running, with a module reference, when it is removed, and an init that
 * failed after registering it could not wait for that.
 *
 * Unload: the markings' handler first (no handler runs: rmmod got here with
 * no module reference), then the control files (unregistering the sysctls and removing
 * the /proc files wait for handlers already running); no exec reaches us;
 * no process is marked for W^X or enters the W^X probes, nor the PAE NX
 * stub; no mm is sent to
 * module text (the backend's quiesce); one RCU-tasks grace period, after
 * which no task is in module text (no allocator, hugetlb redirect or deny
 * stub sleeps voluntarily: track.c); and only then the rest of the hooks.
 */
static void fmm_unhook(void)
{
	fmm_backend.stop_exec();
	fmm_nx_exit();
	fmm_pae_nx_exit();
	if (fmm_backend.quiesce)
		fmm_backend.quiesce();
	synchronize_rcu_tasks();
	fmm_wx_flush();
	fmm_complaints_clear();
	if (fmm_backend.remove)
		fmm_backend.remove();
}

static int __init fmm_init(void)
{
	int ret;

	fmm_arch_init();
	ret = fmm_ksyms_init(fmm_kallsyms_data);
	if (ret)
		return ret;
	ret = fmm_record_init();
	if (ret)
		return ret;
	ret = fmm_pae_nx_init();
	if (ret)
		return ret;
	ret = fmm_nx_init();
	if (ret)
		goto out_pae_nx_exit;
	ret = fmm_backend.install();
	if (ret)
		goto out_nx_exit;
	ret = fmm_control_init();
	if (ret)
		goto out_unhook;
	/* Cannot fail, and nothing may after it: its handler pins the module. */
	fmm_mark_init();
	pr_info("loaded, layout %d, nx %d\n", READ_ONCE(fmm_layout),
		READ_ONCE(fmm_nx));
	return 0;

out_unhook:
	/* Execs may already be on our allocators: the full unload sequence. */
	fmm_unhook();
	return ret;
out_nx_exit:
	fmm_nx_exit();
out_pae_nx_exit:
	fmm_pae_nx_exit();
	/* A task may be in a W^X deny stub or the PAE NX stub (module text). */
	synchronize_rcu_tasks();
	fmm_wx_flush();
	fmm_complaints_clear();
	return ret;
}

static void __exit fmm_exit(void)
{
	fmm_mark_exit();
	fmm_control_exit();
	fmm_unhook();
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
