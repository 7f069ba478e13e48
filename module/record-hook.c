// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the record of each mm on a 6.1 kernel built with patches/
 * (CONFIG_MMAP_LAYOUT).
 *
 * A module mm points at the kernel's trampoline,
 * mmap_layout_get_unmapped_area(), and its word mm->mmap_layout says which
 * of ours it is on:
 *
 *	bit 0		MMAP_LAYOUT_BOTTOMUP, read by the kernel (hugetlb, and
 *			the fallback once we are unregistered)
 *	bits 1-3	the enum fmm_alloc
 *	bits 4-5	the vm.flexmmap_nx mode of the exec (3: the W^X mark),
 *			also for mms on the kernel's allocators
 *	bit 6		a user.pax.flags marking changed that mode (mark.c)
 *	bit 7		chosen by the 2004 policy (layout 3), not forced
 *	bits 32-63	this load of the module (64-bit kernels); bits 8-31
 *			on 32-bit ones, whose word has no bits above 31
 *
 * Fork copies the word, exec starts from zero: nothing needs a fork hook.
 * An mm attached by an earlier load of the module, still on the trampoline,
 * counts as the kernel's allocator of its direction, which is what the
 * trampoline gave it while no flexmmap was loaded.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/mmap_layout.h>
#include <linux/random.h>
#include <linux/sched.h>
#include "fmm.h"

#define FMM_WORD_ALLOC_SHIFT 1
#define FMM_WORD_ALLOC_MASK (7UL << FMM_WORD_ALLOC_SHIFT)
#define FMM_WORD_NX_SHIFT 4
#define FMM_WORD_NX_MASK (7UL << FMM_WORD_NX_SHIFT)
#define FMM_WORD_AUTO BIT(7)
/*
 * The load tag takes the rest of the word: a random number, odd so that
 * it is never 0, in 32 bits or, on a 32-bit kernel, 24.
 */
#define FMM_WORD_LOAD_SHIFT (BITS_PER_LONG == 64 ? 32 : 8)

/* The allocator behind each enum fmm_alloc; the kernel exports its two. */
static const fmm_get_area_t fmm_allocs[] = {
	[FMM_ALLOC_KERNEL_TOPDOWN] = arch_get_unmapped_area_topdown,
	[FMM_ALLOC_KERNEL_BOTTOMUP] = arch_get_unmapped_area,
	[FMM_ALLOC_MODULE_BOTTOMUP] = fmm_get_area_bottomup,
	[FMM_ALLOC_MODULE_TOPDOWN] = fmm_get_area_topdown,
};

static unsigned long fmm_load;

int fmm_record_init(void)
{
	unsigned long tag = get_random_u32() | 1;

	fmm_load = tag << FMM_WORD_LOAD_SHIFT;
	return 0;
}

/* The word of a module mm of this load, or 0. */
static unsigned long fmm_word(struct mm_struct *mm)
{
	unsigned long word = READ_ONCE(mm->mmap_layout);
	enum fmm_alloc a = (word & FMM_WORD_ALLOC_MASK) >> FMM_WORD_ALLOC_SHIFT;

	if (READ_ONCE(mm->get_unmapped_area) != mmap_layout_get_unmapped_area)
		return 0;
	if ((word >> FMM_WORD_LOAD_SHIFT) << FMM_WORD_LOAD_SHIFT != fmm_load ||
	    !fmm_alloc_is_module(a) || a >= ARRAY_SIZE(fmm_allocs))
		return 0;
	return word;
}

enum fmm_alloc fmm_mm_alloc(struct mm_struct *mm)
{
	void *get_area = READ_ONCE(mm->get_unmapped_area);
	unsigned long word;

	if (get_area == arch_get_unmapped_area_topdown)
		return FMM_ALLOC_KERNEL_TOPDOWN;
	if (get_area == arch_get_unmapped_area)
		return FMM_ALLOC_KERNEL_BOTTOMUP;
	if (get_area != mmap_layout_get_unmapped_area)
		return FMM_ALLOC_OTHER;
	word = fmm_word(mm);
	if (word)
		return (word & FMM_WORD_ALLOC_MASK) >> FMM_WORD_ALLOC_SHIFT;
	return READ_ONCE(mm->mmap_layout) & MMAP_LAYOUT_BOTTOMUP ?
		       FMM_ALLOC_KERNEL_BOTTOMUP :
		       FMM_ALLOC_KERNEL_TOPDOWN;
}

enum fmm_reason fmm_mm_reason(struct mm_struct *mm)
{
	unsigned long word = fmm_word(mm);

	if (!word)
		return FMM_REASON_NONE;
	return word & FMM_WORD_AUTO ? FMM_REASON_AUTO : FMM_REASON_FORCED;
}

void fmm_mm_set_alloc(struct mm_struct *mm, enum fmm_alloc a,
		      enum fmm_reason why)
{
	unsigned long word;

	if (a == FMM_ALLOC_OTHER || a >= ARRAY_SIZE(fmm_allocs))
		return;
	if (!fmm_alloc_is_module(a)) {
		WRITE_ONCE(mm->get_unmapped_area, fmm_allocs[a]);
		return;
	}
	word = (READ_ONCE(mm->mmap_layout) & FMM_WORD_NX_MASK) | fmm_load |
	       ((unsigned long)a << FMM_WORD_ALLOC_SHIFT);
	if (fmm_alloc_is_bottomup(a))
		word |= MMAP_LAYOUT_BOTTOMUP;
	if (why == FMM_REASON_AUTO)
		word |= FMM_WORD_AUTO;
	mmap_layout_attach(mm, word);
}

int fmm_mm_nx(struct mm_struct *mm)
{
	return (READ_ONCE(mm->mmap_layout) & FMM_WORD_NX_MASK) >>
	       FMM_WORD_NX_SHIFT;
}

/* At exec: the mm is not shared yet. */
void fmm_mm_set_nx(struct mm_struct *mm, int nx)
{
	unsigned long word = READ_ONCE(mm->mmap_layout) & ~FMM_WORD_NX_MASK;

	word |= ((unsigned long)nx << FMM_WORD_NX_SHIFT) & FMM_WORD_NX_MASK;
	WRITE_ONCE(mm->mmap_layout, word);
}

/* Exec starts from a new mm, whose mm->mmap_layout is 0. */
void fmm_mm_exec_reset(struct mm_struct *mm)
{
}

/*
 * The allocator of current->mm, for the kernel's trampoline (layout-hook.c).
 * An mm the trampoline brings us is attached, so it is on one of ours or,
 * left from an earlier load, on the kernel's.
 */
unsigned long fmm_mm_get_area(struct file *filp, unsigned long addr,
			      unsigned long len, unsigned long pgoff,
			      unsigned long flags)
{
	enum fmm_alloc a = fmm_mm_alloc(current->mm);

	if (a == FMM_ALLOC_OTHER)
		a = FMM_ALLOC_KERNEL_TOPDOWN;
	return fmm_allocs[a](filp, addr, len, pgoff, flags);
}
