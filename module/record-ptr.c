// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the record of each mm on a stock 6.1 kernel.
 *
 * The mm's allocator is its get_unmapped_area pointer: the kernel's
 * arch_get_unmapped_area() or arch_get_unmapped_area_topdown() (found
 * through kallsyms), or one of the module's two entry points (alloc.c).
 * What the pointer cannot say, why the module chose it and the NX mode of
 * the exec, is in the top four bits of mm->flags (28-31 on 32-bit):
 *
 *	bit 60		the module's allocator was chosen by the 2004 policy
 *			(layout 3), not forced by layout 1 or 2
 *	bits 61-62	the vm.flexmmap_nx mode of the exec (3: the W^X mark)
 *	bit 63		a user.pax.flags marking changed that mode (mark.c)
 *
 * 6.1 uses bits 0-27.  MMF_INIT_MASK does not include these, so mm_init()
 * clears them for every new mm (a fork's child and the new mm of an exec)
 * and the fork probe copies them (layout-kprobe.c, nx.c).  The pointer is
 * what unload resets (track.c); the bits are never read once it is.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/bitops.h>
#include <linux/mm.h>
#include "fmm.h"

#define FMM_MMF_AUTO (BITS_PER_LONG - 4)
#define FMM_MMF_NX (BITS_PER_LONG - 3)
#define FMM_MMF_NX_MASK (7UL << FMM_MMF_NX)

/* The allocator behind each enum fmm_alloc; the kernel's two from kallsyms. */
static fmm_get_area_t fmm_allocs[] = {
	[FMM_ALLOC_MODULE_BOTTOMUP] = fmm_get_area_bottomup,
	[FMM_ALLOC_MODULE_TOPDOWN] = fmm_get_area_topdown,
};

int fmm_record_init(void)
{
	unsigned long a;
	int ret;

	ret = fmm_ksym("arch_get_unmapped_area", &a);
	if (ret)
		return ret;
	fmm_allocs[FMM_ALLOC_KERNEL_BOTTOMUP] = (fmm_get_area_t)a;
	ret = fmm_ksym("arch_get_unmapped_area_topdown", &a);
	if (ret)
		return ret;
	fmm_allocs[FMM_ALLOC_KERNEL_TOPDOWN] = (fmm_get_area_t)a;
	return 0;
}

/*
 * The mm's allocator, read without the mmap lock: a stale answer is fine
 * for reporting, and callers that act on it hold the lock.
 */
enum fmm_alloc fmm_mm_alloc(struct mm_struct *mm)
{
	void *get_area = READ_ONCE(mm->get_unmapped_area);
	enum fmm_alloc a;

	for (a = FMM_ALLOC_KERNEL_TOPDOWN; a < ARRAY_SIZE(fmm_allocs); a++)
		if (get_area == (void *)fmm_allocs[a])
			return a;
	return FMM_ALLOC_OTHER;
}

enum fmm_reason fmm_mm_reason(struct mm_struct *mm)
{
	if (!fmm_alloc_is_module(fmm_mm_alloc(mm)))
		return FMM_REASON_NONE;
	return test_bit(FMM_MMF_AUTO, &mm->flags) ? FMM_REASON_AUTO :
						    FMM_REASON_FORCED;
}

/*
 * Point @mm at allocator @a, chosen for @why.  Callers hold the mm's mmap
 * lock for writing or own the mm alone (exec, a fork before the child can
 * run).  Atomic bit operations: the kernel changes other bits of mm->flags.
 */
void fmm_mm_set_alloc(struct mm_struct *mm, enum fmm_alloc a,
		      enum fmm_reason why)
{
	if (a == FMM_ALLOC_OTHER || a >= ARRAY_SIZE(fmm_allocs))
		return;
	assign_bit(FMM_MMF_AUTO, &mm->flags,
		   fmm_alloc_is_module(a) && why == FMM_REASON_AUTO);
	WRITE_ONCE(mm->get_unmapped_area, fmm_allocs[a]);
}

int fmm_mm_nx(struct mm_struct *mm)
{
	unsigned long flags = READ_ONCE(mm->flags);

	return (flags & FMM_MMF_NX_MASK) >> FMM_MMF_NX;
}

/* Atomic: the kernel changes other bits of mm->flags. */
void fmm_mm_set_nx(struct mm_struct *mm, int nx)
{
	set_mask_bits(&mm->flags, FMM_MMF_NX_MASK,
		      ((unsigned long)nx << FMM_MMF_NX) & FMM_MMF_NX_MASK);
}

/* Exec starts from a new mm: mm_init() has cleared the bits. */
void fmm_mm_exec_reset(struct mm_struct *mm)
{
}
