// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the layout hooks on 6.10 and later (Debian 13's 6.12).
 *
 * These kernels have no mm->get_unmapped_area: every placement (mmap,
 * mremap, shmem, THP, the vDSO, drivers) ends in
 * arch_get_unmapped_area_topdown() or arch_get_unmapped_area(), chosen by
 * MMF_TOPDOWN.  One ftrace ops with IPMODIFY on both, as livepatch does it,
 * sends the calls made for a module mm to fmm_get_area_redirect(); every other
 * process runs the kernel's functions.  The mm's record is in mm->flags
 * (record-mmf.c), and MMF_TOPDOWN follows the module's direction, so the kernel
 * places huge pages (and any call the redirect misses) in that direction
 * from the module's bases.  setup_arg_pages() gives policy.c each exec
 * (fmm_exec_pre()); uprobe_dup_mmap() lets a child take its parent's record
 * under the parent's mmap lock.
 *
 * No mm ever points at module text, so unloading walks no mm: once the
 * ops are unregistered and no task is left inside the redirected
 * allocator, each process goes on in its direction on the kernel's.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ftrace.h>
#include <linux/kprobes.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include "fmm.h"

/*
 * Where the kernel's allocator resumes for a module mm: same arguments,
 * same return address, so it returns straight to the kernel's caller.
 */
static unsigned long
fmm_get_area_redirect(struct file *filp, unsigned long addr, unsigned long len,
		      unsigned long pgoff, unsigned long flags,
		      vm_flags_t vm_flags)
{
	bool bottomup = fmm_alloc_is_bottomup(fmm_mm_alloc(current->mm));

	return fmm_get_area_vmflags(!bottomup, filp, addr, len, pgoff, flags,
				    vm_flags);
}

static const unsigned long fmm_redirect_ip =
	(unsigned long)fmm_get_area_redirect;

/*
 * Called from ftrace at the entry of the kernel's two allocators, for
 * every placement of every process, so it does as little as it can.  It
 * calls nothing that ftrace or kprobes can hook (the record test is
 * notrace and NOKPROBE, record-mmf.c) and never reaches an allocator, so it
 * cannot recurse and needs no recursion guard.
 */
static void notrace fmm_ftrace_handler(unsigned long ip,
				       unsigned long parent_ip,
				       struct ftrace_ops *ops,
				       struct ftrace_regs *fregs)
{
	if (fmm_mm_redirected(current->mm))
		ftrace_regs_set_instruction_pointer(fregs, fmm_redirect_ip);
}

NOKPROBE_SYMBOL(fmm_ftrace_handler);

static struct ftrace_ops fmm_ftrace_ops = {
	.func = fmm_ftrace_handler,
#ifdef CONFIG_HAVE_DYNAMIC_FTRACE_WITH_ARGS
	.flags = FTRACE_OPS_FL_IPMODIFY,
#else
	.flags = FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS,
#endif
};

static int fmm_redirect_install(void)
{
	int ret, i;

	for (i = 0; i < 2; i++) {
		ret = ftrace_set_filter_ip(&fmm_ftrace_ops,
					   fmm_kernel_get_area_addr(i), 0, 0);
		if (ret) {
			pr_err("cannot filter ftrace on the kernel's %s allocator (%d)\n",
			       i ? "top-down" : "bottom-up", ret);
			goto out_free;
		}
	}
	ret = register_ftrace_function(&fmm_ftrace_ops);
	if (ret) {
		/* -EBUSY: a livepatch or another IPMODIFY user has them. */
		pr_err("cannot redirect arch_get_unmapped_area[_topdown] (%d)\n",
		       ret);
		goto out_free;
	}
	return 0;

out_free:
	ftrace_free_filter(&fmm_ftrace_ops);
	return ret;
}

/* Only after fmm_redirect_install() succeeded. */
static void fmm_redirect_remove(void)
{
	int ret = unregister_ftrace_function(&fmm_ftrace_ops);

	/*
	 * It fails only where ftrace has shut itself down after an anomaly
	 * (ftrace_disabled), which calls no callback any more.
	 */
	if (ret)
		pr_err("cannot remove the ftrace redirect (%d)\n", ret);
	ftrace_free_filter(&fmm_ftrace_ops);
}

/* uprobe_dup_mmap(oldmm, newmm), under oldmm's mmap lock */
static int fmm_fork_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *oldmm = (void *)fmm_regs_get_argument(regs, 0);
	struct mm_struct *newmm = (void *)fmm_regs_get_argument(regs, 1);

	/* The NX mode is part of the record: this copies it too. */
	if (fmm_mm_fork(oldmm, newmm))
		atomic_long_inc(&fmm_stats.fork_fixup);
	else if (fmm_alloc_is_module(fmm_mm_alloc(newmm)))
		atomic_long_inc(&fmm_stats.fork_inherit);
	return 0;
}

NOKPROBE_SYMBOL(fmm_fork_pre);

/* Installed in this order, all or nothing; the exec hook comes last. */
static struct fmm_probe fmm_probes[] = {
	{ .symbol = "uprobe_dup_mmap", .pre = fmm_fork_pre },
	{ .symbol = "setup_arg_pages", .pre = fmm_exec_pre },
};

static int fmm_ftrace_install(void)
{
	int ret = fmm_redirect_install();

	if (ret)
		return ret;
	ret = fmm_probes_install(fmm_probes, ARRAY_SIZE(fmm_probes));
	if (ret)
		fmm_redirect_remove();
	return ret;
}

static void fmm_ftrace_stop_exec(void)
{
	fmm_probes_remove_last(fmm_probes, ARRAY_SIZE(fmm_probes));
}

static void fmm_ftrace_remove(void)
{
	fmm_probes_remove(fmm_probes, ARRAY_SIZE(fmm_probes));
}

static void fmm_ftrace_show(struct seq_file *m)
{
	seq_puts(m, "layout_hook ftrace_redirect\n");
	fmm_probes_show_missed(m, fmm_probes, ARRAY_SIZE(fmm_probes));
}

/*
 * Unload (main.c): no new module mm from exec; the redirect goes, so no
 * task enters the redirected allocator any more; main.c then waits until
 * none is left in it (it neither sleeps voluntarily nor takes a lock
 * beyond the caller's mmap lock) or in a W^X deny stub; then the fork
 * probe goes.  No mm holds a pointer at us: nothing to walk.
 */
const struct fmm_backend fmm_backend = {
	.install = fmm_ftrace_install,
	.stop_exec = fmm_ftrace_stop_exec,
	.quiesce = fmm_redirect_remove,
	.remove = fmm_ftrace_remove,
	.show = fmm_ftrace_show,
};
