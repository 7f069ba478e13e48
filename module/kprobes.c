// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the layout hooks on a stock 6.1 kernel, with kprobes.
 *
 * setup_arg_pages() gives policy.c each exec (fmm_exec_pre()); mm_init(),
 * uprobe_dup_mmap() and exit_mmap() let track.c follow every mm that points
 * at module text; hugetlb_get_unmapped_area() is redirected so huge pages
 * follow the module's direction.  A kernel built with patches/ needs none
 * of them (hook.c is built instead), nor does 6.10+ (redirect.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/sched.h>
#include "fmm.h"

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

	if (!mm)
		return 0;
	a = fmm_mm_alloc(mm);
	if (!fmm_alloc_is_module(a))
		return 0;
	if (fmm_alloc_is_bottomup(a))
		instruction_pointer_set(regs,
					(unsigned long)fmm_hugetlb_bottomup);
	else
		instruction_pointer_set(regs,
					(unsigned long)fmm_hugetlb_topdown);
	return 1;
}

NOKPROBE_SYMBOL(fmm_hugetlb_pre);

/*
 * Installed in this order, all or nothing.  The exec hook comes last: once
 * it hands out module pointers, fork and exit tracking must already run.
 */
static struct fmm_hook fmm_hooks[] = {
	{ .symbol = "mm_init", .pre = fmm_mm_init_pre },
	{ .symbol = "uprobe_dup_mmap", .pre = fmm_dup_pre },
	{ .symbol = "exit_mmap", .pre = fmm_exit_pre },
	{ .symbol = "hugetlb_get_unmapped_area", .pre = fmm_hugetlb_pre },
	{ .symbol = "setup_arg_pages", .pre = fmm_exec_pre },
};

#define FMM_EXEC_HOOK (&fmm_hooks[ARRAY_SIZE(fmm_hooks) - 1])

int fmm_layout_hooks_install(void)
{
	return fmm_hooks_install(fmm_hooks, ARRAY_SIZE(fmm_hooks));
}

/*
 * The safe unload order, once the control files are gone (main.c): no new
 * module mms from exec, then none from fork, then every tracked mm reset
 * and every task out of module text (track.c), and only then the fork,
 * exit and hugetlb hooks go.  Bounded: nothing here waits for a lock a
 * user can hold.
 */
void fmm_layout_hooks_remove(void)
{
	fmm_hooks_uninstall(FMM_EXEC_HOOK, 1);
	/* Their deny stub is module text too: the drain's RCU-tasks wait covers it. */
	fmm_nx_exit();
	fmm_track_begin_unload();
	fmm_track_drain();
	fmm_hooks_uninstall(fmm_hooks, ARRAY_SIZE(fmm_hooks));
}

void fmm_layout_hooks_show(struct seq_file *m)
{
	fmm_hooks_show_missed(m, fmm_hooks, ARRAY_SIZE(fmm_hooks));
}
