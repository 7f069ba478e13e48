// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: which layout a new program gets.
 *
 * A kprobe pre-handler on setup_arg_pages(bprm, stack_top, executable_stack)
 * decides.  It runs after arch_pick_mmap_layout() has set the kernel's own
 * choice and bases, knows from executable_stack whether the binary has a
 * PT_GNU_STACK header (EXSTACK_DEFAULT: it has none), and runs before the
 * image and the interpreter are mapped, so they are placed by the chosen
 * allocator.  A kprobe has no instance limit, unlike a kretprobe on
 * arch_pick_mmap_layout(), so no exec can slip through unseen.
 *
 * The 2004 patch marked binaries without PT_GNU_STACK with the
 * ADDR_COMPAT_LAYOUT personality, which children inherit across their own
 * exec.  flexmmap does not touch the personality: every exec is judged on
 * its own binary, and nothing of the module's choice outlives the module.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/binfmts.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include "fmm.h"

int fmm_exec_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct linux_binprm *bprm = (void *)regs_get_kernel_argument(regs, 0);
	int executable_stack = (int)regs_get_kernel_argument(regs, 2);
	struct mm_struct *mm = current->mm;
	int layout = READ_ONCE(fmm_layout);
	enum fmm_alloc kernel, want;

	/* May change executable_stack's register: ours is read already. */
	fmm_nx_exec(bprm, regs);
	if (layout == FLEXMMAP_LAYOUT_KERNEL || !mm) {
		atomic_long_inc(&fmm_stats.exec_kernel);
		return 0;
	}
	kernel = fmm_mm_alloc(mm);
	if (kernel != FMM_ALLOC_KERNEL_TOPDOWN &&
	    kernel != FMM_ALLOC_KERNEL_BOTTOMUP) {
		/* Someone else manages this mm; leave it to them. */
		atomic_long_inc(&fmm_stats.exec_unknown);
		return 0;
	}

	switch (layout) {
	case FLEXMMAP_LAYOUT_LEGACY:
		want = FMM_ALLOC_LEGACY_FORCED;
		break;
	case FLEXMMAP_LAYOUT_FLEXIBLE:
		want = FMM_ALLOC_TOPDOWN_FORCED;
		break;
	default:
		/*
		 * The 2004 policy.  The kernel chose bottom-up exactly when the
		 * process has ADDR_COMPAT_LAYOUT or vm.legacy_va_layout is 1;
		 * a binary without PT_GNU_STACK predates the flexible layout.
		 */
		if (kernel == FMM_ALLOC_KERNEL_BOTTOMUP ||
		    executable_stack == EXSTACK_DEFAULT)
			want = FMM_ALLOC_LEGACY_AUTO;
		else
			want = FMM_ALLOC_TOPDOWN_AUTO;
		break;
	}

	/* Unload must find every mm it has to reset: track it first. */
	if (!fmm_track_add(mm)) {
		atomic_long_inc(&fmm_stats.fallback);
		return 0;
	}
	fmm_mm_set_bases(mm, fmm_alloc_is_bottomup(want), &bprm->rlim_stack);
	fmm_mm_set_alloc(mm, want);
	if (fmm_alloc_is_bottomup(want))
		atomic_long_inc(&fmm_stats.exec_legacy);
	else
		atomic_long_inc(&fmm_stats.exec_flexible);
	return 0;
}

NOKPROBE_SYMBOL(fmm_exec_pre);
