// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the record of each mm on 6.10 and later (Debian 13's 6.12).
 *
 * These kernels have no mm->get_unmapped_area: MMF_TOPDOWN picks the
 * kernel's allocator, and the module's record is in the bits of mm->flags
 * that 6.12 does not use (it has bits 0-31, MMF_TOPDOWN is 31):
 *
 *	bits 32-34	the enum fmm_alloc (0: none)
 *	bits 35-36	the vm.flexmmap_nx mode of the exec (3: the W^X mark)
 *	bit 37		a user.pax.flags marking changed that mode (mark.c)
 *	bit 38		chosen by the 2004 policy (layout 3), not forced
 *	bits 39-63	this load of the module (random, non-zero)
 *
 * MMF_INIT_MASK keeps these bits (its MMF_TOPDOWN_MASK, 1 << 31, is a
 * negative int that sign-extends), so mm_init() copies them into every
 * child and into the new mm of an exec: fmm_mm_exec_reset() clears them
 * there, and the fork probe copies the parent's under its mmap lock in
 * case a later kernel stops keeping them.  A record of another load counts
 * as none, so what an unloaded module leaves behind is never read.
 * MMF_TOPDOWN is kept equal to the module allocator's direction: when a
 * redirect is missed, or after unload, the kernel's allocator of the same
 * direction serves the mm from the bases the module set.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/sched/mm.h>
#include "fmm.h"

#define FMM_REC_SHIFT 32
#define FMM_REC_MASK (~0UL << FMM_REC_SHIFT)
#define FMM_REC_ALLOC_SHIFT 32
#define FMM_REC_ALLOC_MASK (7UL << FMM_REC_ALLOC_SHIFT)
#define FMM_REC_NX_SHIFT 35
#define FMM_REC_NX_MASK (7UL << FMM_REC_NX_SHIFT)
#define FMM_REC_AUTO BIT(38)
#define FMM_REC_LOAD_SHIFT 39
#define FMM_REC_LOAD_MASK (~0UL << FMM_REC_LOAD_SHIFT)

static unsigned long fmm_load;
/* arch_get_unmapped_area() and arch_get_unmapped_area_topdown() */
static unsigned long fmm_kernel_get_area[2];

int fmm_record_init(void)
{
	int ret;

	BUILD_BUG_ON(MMF_TOPDOWN >= FMM_REC_SHIFT);
	BUILD_BUG_ON(FMM_REC_ALLOC_MASK >> FMM_REC_ALLOC_SHIFT <
		     FMM_ALLOC_MODULE_TOPDOWN);
	fmm_load = ((unsigned long)get_random_u32() | 1) << FMM_REC_LOAD_SHIFT;
	ret = fmm_ksym("arch_get_unmapped_area", &fmm_kernel_get_area[0]);
	if (ret)
		return ret;
	return fmm_ksym("arch_get_unmapped_area_topdown",
			&fmm_kernel_get_area[1]);
}

/* The mm's record, 0 unless this load wrote it. */
static unsigned long notrace fmm_rec(struct mm_struct *mm)
{
	unsigned long rec = READ_ONCE(mm->flags) & FMM_REC_MASK;

	return (rec & FMM_REC_LOAD_MASK) == fmm_load ? rec : 0;
}

/*
 * Set the record's @mask bits to @bits, and MMF_TOPDOWN to @topdown
 * unless it is negative, in one atomic update: the kernel changes other
 * bits of mm->flags concurrently.  A record of another load starts empty.
 */
static void fmm_rec_update(struct mm_struct *mm, unsigned long mask,
			   unsigned long bits, int topdown)
{
	unsigned long old = READ_ONCE(mm->flags), new, rec;

	do {
		rec = old & FMM_REC_MASK;
		if ((rec & FMM_REC_LOAD_MASK) != fmm_load)
			rec = 0;
		rec = (rec & ~mask) | (bits & mask) | fmm_load;
		new = (old & ~FMM_REC_MASK) | rec;
		if (topdown > 0)
			new |= BIT(MMF_TOPDOWN);
		else if (!topdown)
			new &= ~BIT(MMF_TOPDOWN);
	} while (!try_cmpxchg(&mm->flags, &old, new));
}

/*
 * The mm's allocator, read without the mmap lock: a stale answer is fine
 * for reporting, and callers that act on it hold the lock.  Never
 * FMM_ALLOC_OTHER here: without a pointer nobody else can own the mm.
 */
enum fmm_alloc fmm_mm_alloc(struct mm_struct *mm)
{
	enum fmm_alloc a = (fmm_rec(mm) & FMM_REC_ALLOC_MASK) >>
			   FMM_REC_ALLOC_SHIFT;

	if (fmm_alloc_is_module(a) && a <= FMM_ALLOC_MODULE_TOPDOWN)
		return a;
	return test_bit(MMF_TOPDOWN, &mm->flags) ? FMM_ALLOC_KERNEL_TOPDOWN :
						   FMM_ALLOC_KERNEL_BOTTOMUP;
}

enum fmm_reason fmm_mm_reason(struct mm_struct *mm)
{
	if (!fmm_alloc_is_module(fmm_mm_alloc(mm)))
		return FMM_REASON_NONE;
	return fmm_rec(mm) & FMM_REC_AUTO ? FMM_REASON_AUTO : FMM_REASON_FORCED;
}

/*
 * Put @mm on allocator @a, chosen for @why.  Callers hold the mm's mmap
 * lock for writing or own the mm alone (exec, a fork before the child can
 * run).
 */
void fmm_mm_set_alloc(struct mm_struct *mm, enum fmm_alloc a,
		      enum fmm_reason why)
{
	unsigned long bits = 0;

	if (a == FMM_ALLOC_OTHER || a > FMM_ALLOC_MODULE_TOPDOWN)
		return;
	if (fmm_alloc_is_module(a)) {
		bits = (unsigned long)a << FMM_REC_ALLOC_SHIFT;
		if (why == FMM_REASON_AUTO)
			bits |= FMM_REC_AUTO;
	}
	fmm_rec_update(mm, FMM_REC_ALLOC_MASK | FMM_REC_AUTO, bits,
		       !fmm_alloc_is_bottomup(a));
}

int fmm_mm_nx(struct mm_struct *mm)
{
	return (fmm_rec(mm) & FMM_REC_NX_MASK) >> FMM_REC_NX_SHIFT;
}

void fmm_mm_set_nx(struct mm_struct *mm, int nx)
{
	unsigned long bits = (unsigned long)nx << FMM_REC_NX_SHIFT;

	fmm_rec_update(mm, FMM_REC_NX_MASK, bits & FMM_REC_NX_MASK, -1);
}

/* The new mm of an exec carries the old image's record: drop it. */
void fmm_mm_exec_reset(struct mm_struct *mm)
{
	set_mask_bits(&mm->flags, FMM_REC_MASK, 0);
}

/*
 * From the fork probe, under @oldmm's mmap lock, before the child can run:
 * give @newmm the parent's record, direction and bases as they are now
 * (dup_mm() copied them before that lock was taken, so a retarget may have
 * changed them since).  Return whether the child had to change.
 */
bool fmm_mm_fork(struct mm_struct *oldmm, struct mm_struct *newmm)
{
	const unsigned long mask = FMM_REC_MASK | BIT(MMF_TOPDOWN);
	unsigned long want = READ_ONCE(oldmm->flags) & mask;
	unsigned long was = set_mask_bits(&newmm->flags, mask, want);
	bool changed = fmm_mm_copy_bases(newmm, oldmm);

	return changed || (was & mask) != want;
}

/*
 * Does the ftrace redirect send @mm's placements to us?  Called for every
 * placement of every process, from the ftrace handler: notrace, and
 * NOKPROBE, as nothing it calls may be hooked.
 */
bool notrace fmm_mm_redirected(struct mm_struct *mm)
{
	return mm && (fmm_rec(mm) & FMM_REC_ALLOC_MASK);
}

NOKPROBE_SYMBOL(fmm_mm_redirected);

/* The kernel's allocator of a direction, for the ftrace redirect. */
unsigned long fmm_kernel_get_area_addr(bool topdown)
{
	return fmm_kernel_get_area[topdown];
}
