// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the layout hooks on a stock 6.1 kernel, with kprobes.
 *
 * setup_arg_pages() gives policy.c each exec (fmm_exec_pre()); mm_init(),
 * uprobe_dup_mmap() and exit_mmap() keep track.c's set of the mms that
 * point at module text; hugetlb_get_unmapped_area() is redirected so huge
 * pages follow the module's direction.  A kernel built with patches/ needs
 * none of them (layout-hook.c is built instead), nor does 6.10+
 * (layout-ftrace.c).
 *
 * Fork: dup_mm() memcpy()s the parent's mm, pointer and bases included,
 * with no lock, calls mm_init() at once, and only later, in dup_mmap() under
 * the parent's mmap write lock, calls uprobe_dup_mmap(oldmm, newmm).
 *  - mm_init() (fmm_mm_init_pre()): a child that copied a module pointer
 *    goes back on the kernel's allocator of that direction.  Nothing can
 *    reach the child yet, so no lock; nothing is counted, so a fork that
 *    fails after this point (a memcg-accounted pgd, a killed dup_mmap())
 *    frees an mm that points at kernel text and leaves nothing behind.
 *  - uprobe_dup_mmap() (fmm_fork_pre(), the parent locked): the child takes
 *    the parent's allocator, reason and bases as they are now, and joins
 *    the set first; once unload has begun it keeps the kernel's allocator.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/sched.h>
#include <linux/seq_file.h>
#include "fmm.h"

/*
 * mm_init(mm, owner, user_ns): the child of dup_mm(), just memcpy()d, or
 * a new mm of exec (its pointer is NULL).  Put a copied module pointer back
 * on the kernel's allocator of its direction; fmm_fork_pre() decides.
 */
static int fmm_mm_init_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *mm = (void *)fmm_regs_get_argument(regs, 0);
	enum fmm_alloc a = fmm_mm_alloc(mm);

	if (fmm_alloc_is_module(a))
		fmm_mm_set_alloc(mm, fmm_kernel_of(a), FMM_REASON_NONE);
	return 0;
}

NOKPROBE_SYMBOL(fmm_mm_init_pre);

/*
 * uprobe_dup_mmap(oldmm, newmm), called with oldmm's mmap lock held for
 * writing, before the child can run: the child follows its parent now.
 */
static int fmm_fork_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *oldmm = (void *)fmm_regs_get_argument(regs, 0);
	struct mm_struct *newmm = (void *)fmm_regs_get_argument(regs, 1);
	enum fmm_alloc parent = fmm_mm_alloc(oldmm);
	enum fmm_alloc want = parent;
	bool changed;

	fmm_nx_fork(oldmm, newmm);
	if (parent == FMM_ALLOC_OTHER) {
		WRITE_ONCE(newmm->get_unmapped_area,
			   READ_ONCE(oldmm->get_unmapped_area));
		return 0;
	}
	/* A retarget may have changed the parent's bases since the memcpy(). */
	changed = fmm_mm_copy_bases(newmm, oldmm);
	/* Unload must find it: in the set before it points at us. */
	if (fmm_alloc_is_module(parent) && !fmm_track_add(newmm)) {
		want = fmm_kernel_of(parent);
		if (!fmm_track_unloading())
			atomic_long_inc(&fmm_stats.fallback);
	}
	fmm_mm_set_alloc(newmm, want, fmm_mm_reason(oldmm));
	if (changed)
		atomic_long_inc(&fmm_stats.fork_fixup);
	else if (fmm_alloc_is_module(want))
		atomic_long_inc(&fmm_stats.fork_inherit);
	return 0;
}

NOKPROBE_SYMBOL(fmm_fork_pre);

/* exit_mmap(mm): the mm is going away. */
static int fmm_exit_pre(struct kprobe *p, struct pt_regs *regs)
{
	fmm_track_del((void *)fmm_regs_get_argument(regs, 0));
	return 0;
}

NOKPROBE_SYMBOL(fmm_exit_pre);

/*
 * Redirect hugetlb_get_unmapped_area() to ours for module mms only; other
 * processes run the kernel's function untouched.  A pre-handler that moves
 * the instruction pointer and returns 1 resumes there with the original
 * arguments (the way kprobe-based error injection overrides a function).
 */
static int fmm_hugetlb_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *mm = current->mm;
	enum fmm_alloc a;
	unsigned long ip;

	if (!mm)
		return 0;
	a = fmm_mm_alloc(mm);
	if (!fmm_alloc_is_module(a))
		return 0;
	if (fmm_alloc_is_bottomup(a))
		ip = (unsigned long)fmm_hugetlb_bottomup;
	else
		ip = (unsigned long)fmm_hugetlb_topdown;
	instruction_pointer_set(regs, ip);
	return 1;
}

NOKPROBE_SYMBOL(fmm_hugetlb_pre);

/*
 * Installed in this order, all or nothing.  The exec hook comes last: once
 * it hands out module pointers, fork and exit tracking must already run.
 */
static struct fmm_probe fmm_probes[] = {
	{ .symbol = "mm_init", .pre = fmm_mm_init_pre },
	{ .symbol = "uprobe_dup_mmap", .pre = fmm_fork_pre },
	{ .symbol = "exit_mmap", .pre = fmm_exit_pre },
	{ .symbol = "hugetlb_get_unmapped_area",
	  .pre = fmm_hugetlb_pre,
	  .moves_ip = true },
	{ .symbol = "setup_arg_pages", .pre = fmm_exec_pre },
};

static int fmm_kprobe_install(void)
{
	int ret = fmm_track_init();

	if (ret)
		return ret;
	ret = fmm_probes_install(fmm_probes, ARRAY_SIZE(fmm_probes));
	if (ret)
		fmm_track_exit();
	return ret;
}

static void fmm_kprobe_stop_exec(void)
{
	fmm_probes_remove_last(fmm_probes, ARRAY_SIZE(fmm_probes));
}

/*
 * No exec hook and no W^X probes any more (main.c): no new module mm from
 * fork either, then every tracked mm back on the kernel's allocator
 * (track.c).  main.c then waits until no task is in module text; only then
 * may the fork, exit and hugetlb hooks go.
 */
static void fmm_kprobe_quiesce(void)
{
	fmm_track_begin_unload();
	fmm_track_drain();
}

static void fmm_kprobe_remove(void)
{
	fmm_probes_remove(fmm_probes, ARRAY_SIZE(fmm_probes));
	fmm_track_exit();
}

static void fmm_kprobe_show(struct seq_file *m)
{
	fmm_probes_show_missed(m, fmm_probes, ARRAY_SIZE(fmm_probes));
}

const struct fmm_backend fmm_backend = {
	.install = fmm_kprobe_install,
	.stop_exec = fmm_kprobe_stop_exec,
	.quiesce = fmm_kprobe_quiesce,
	.remove = fmm_kprobe_remove,
	.show = fmm_kprobe_show,
};
