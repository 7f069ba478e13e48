// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the kernel-version layer.
 *
 * Everything that depends on how the kernel stores the layout lives here:
 * which allocator an mm is on, the four bases, the NX mode of a process's
 * exec (with the W^X mark), and the symbols the kernel does not export
 * (found through kallsyms at load time).  Three variants (kapi.h):
 * - 6.1 stock (FMM_KAPI_PTR): the per-mm get_unmapped_area pointer points
 *   at the kernel's allocators or at ours; the NX mode is in mm->flags.
 * - 6.1 built with patches/ (CONFIG_MMAP_LAYOUT): the kernel exports what
 *   we need but ptrace_may_access(), and its mms point at the kernel's
 *   trampoline rather than at us, with our allocator in mm->mmap_layout.
 * - 6.10+ (FMM_KAPI_MMF, Debian 13's 6.12): no pointer; MMF_TOPDOWN gives
 *   the kernel's direction and our record is in the high bits of
 *   mm->flags.
 * The policy and the allocators above are the same for all three.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/personality.h>
#include <linux/ptrace.h>
#include <linux/compat.h>
#include <linux/random.h>
#include <linux/security.h>
#include <linux/sysctl.h>
#include <asm/elf.h>
#include "fmm.h"

#ifdef FMM_HAVE_LAYOUT_HOOK
#include <linux/mmap_layout.h>
#endif

#ifdef FMM_KAPI_PTR
typedef unsigned long (*fmm_gua_t)(struct file *filp, unsigned long addr,
				   unsigned long len, unsigned long pgoff,
				   unsigned long flags);

/*
 * The allocator behind each enum fmm_alloc; on a stock kernel the kernel's
 * two are filled in by fmm_kapi_init().  One table serves both directions
 * of the mapping.
 */
static fmm_gua_t fmm_allocs[] = {
#ifdef FMM_HAVE_LAYOUT_HOOK
	[FMM_ALLOC_KERNEL_TOPDOWN] = arch_get_unmapped_area_topdown,
	[FMM_ALLOC_KERNEL_BOTTOMUP] = arch_get_unmapped_area,
#endif
	[FMM_ALLOC_LEGACY_FORCED] = fmm_gua_legacy_forced,
	[FMM_ALLOC_LEGACY_AUTO] = fmm_gua_legacy_auto,
	[FMM_ALLOC_TOPDOWN_FORCED] = fmm_gua_topdown_forced,
	[FMM_ALLOC_TOPDOWN_AUTO] = fmm_gua_topdown_auto,
};
#endif

#ifdef FMM_HAVE_LAYOUT_HOOK
/*
 * With the layout hook, a module mm points at mmap_layout_get_unmapped_area()
 * and its word mm->mmap_layout says which of ours it is on:
 *
 *	bit 0		MMAP_LAYOUT_BOTTOMUP, read by the kernel (hugetlb, and
 *			the fallback once we are unregistered)
 *	bits 1-3	the enum fmm_alloc
 *	bits 4-5	the vm.flexmmap_nx mode of the exec (3: the W^X
 *			mark), also for mms on the kernel's allocators
 *	bits 32-63	this load of the module
 *
 * Fork copies the word, exec starts from zero: the NX record needs no fork
 * hook.  An mm attached by an earlier load of the module, still on the
 * trampoline, counts as the kernel's allocator of its direction, which is
 * what the trampoline gave it while no flexmmap was loaded.
 */
#define FMM_WORD_ALLOC_SHIFT 1
#define FMM_WORD_ALLOC_MASK (7UL << FMM_WORD_ALLOC_SHIFT)
#define FMM_WORD_NX_SHIFT 4
#define FMM_WORD_NX_MASK (3UL << FMM_WORD_NX_SHIFT)
#define FMM_WORD_LOAD_SHIFT 32

static unsigned long fmm_load;

int fmm_kapi_init(void)
{
	fmm_load = (unsigned long)(get_random_u32() | 1) << FMM_WORD_LOAD_SHIFT;
	return 0;
}

enum fmm_alloc fmm_mm_alloc(struct mm_struct *mm)
{
	void *gua = READ_ONCE(mm->get_unmapped_area);
	unsigned long word;
	enum fmm_alloc a;

	if (gua == arch_get_unmapped_area_topdown)
		return FMM_ALLOC_KERNEL_TOPDOWN;
	if (gua == arch_get_unmapped_area)
		return FMM_ALLOC_KERNEL_BOTTOMUP;
	if (gua != mmap_layout_get_unmapped_area)
		return FMM_ALLOC_OTHER;
	word = READ_ONCE(mm->mmap_layout);
	a = (word & FMM_WORD_ALLOC_MASK) >> FMM_WORD_ALLOC_SHIFT;
	if ((word >> FMM_WORD_LOAD_SHIFT) << FMM_WORD_LOAD_SHIFT == fmm_load &&
	    fmm_alloc_is_module(a) && a < ARRAY_SIZE(fmm_allocs))
		return a;
	return word & MMAP_LAYOUT_BOTTOMUP ? FMM_ALLOC_KERNEL_BOTTOMUP :
					     FMM_ALLOC_KERNEL_TOPDOWN;
}

void fmm_mm_set_alloc(struct mm_struct *mm, enum fmm_alloc a)
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
	mmap_layout_attach(mm, word);
}

int fmm_mm_nx(struct mm_struct *mm)
{
	return (READ_ONCE(mm->mmap_layout) & FMM_WORD_NX_MASK) >>
	       FMM_WORD_NX_SHIFT;
}

/* At exec: the mm is not shared yet. */
void fmm_mm_set_nx(struct mm_struct *mm, int mode)
{
	unsigned long word = READ_ONCE(mm->mmap_layout) & ~FMM_WORD_NX_MASK;

	word |= ((unsigned long)mode << FMM_WORD_NX_SHIFT) & FMM_WORD_NX_MASK;
	WRITE_ONCE(mm->mmap_layout, word);
}

/* Exec starts from a new mm, whose mm->mmap_layout is 0. */
void fmm_mm_exec_reset(struct mm_struct *mm)
{
}
#else /* !FMM_HAVE_LAYOUT_HOOK */
#ifdef FMM_KAPI_MMF
/* arch_get_unmapped_area() and arch_get_unmapped_area_topdown() */
static unsigned long fmm_k_gua[2];
static void fmm_mmf_init(void);
#endif

int fmm_kapi_init(void)
{
	int ret;
#ifdef FMM_KAPI_PTR
	unsigned long a;

	ret = fmm_ksym("arch_get_unmapped_area", &a);
	if (ret)
		return ret;
	fmm_allocs[FMM_ALLOC_KERNEL_BOTTOMUP] = (fmm_gua_t)a;
	ret = fmm_ksym("arch_get_unmapped_area_topdown", &a);
	if (ret)
		return ret;
	fmm_allocs[FMM_ALLOC_KERNEL_TOPDOWN] = (fmm_gua_t)a;
#else
	fmm_mmf_init();
	ret = fmm_ksym("arch_get_unmapped_area", &fmm_k_gua[0]);
	if (ret)
		return ret;
	ret = fmm_ksym("arch_get_unmapped_area_topdown", &fmm_k_gua[1]);
	if (ret)
		return ret;
#endif
	return 0;
}

#ifdef FMM_KAPI_PTR
/*
 * The mm's allocator, read without the mmap lock: a stale answer is fine
 * for reporting, and callers that act on it hold the lock.
 */
enum fmm_alloc fmm_mm_alloc(struct mm_struct *mm)
{
	void *gua = READ_ONCE(mm->get_unmapped_area);
	enum fmm_alloc a;

	for (a = FMM_ALLOC_KERNEL_TOPDOWN; a < ARRAY_SIZE(fmm_allocs); a++)
		if (gua == (void *)fmm_allocs[a])
			return a;
	return FMM_ALLOC_OTHER;
}

/*
 * Point @mm at allocator @a.  Callers hold the mm's mmap lock for writing
 * or own the mm alone (exec, a fork before the child can run).
 */
void fmm_mm_set_alloc(struct mm_struct *mm, enum fmm_alloc a)
{
	if (a == FMM_ALLOC_OTHER || a >= ARRAY_SIZE(fmm_allocs))
		return;
	WRITE_ONCE(mm->get_unmapped_area, fmm_allocs[a]);
}

/*
 * The vm.flexmmap_nx mode of a process's exec (3: the W^X mark), in the top
 * two bits of mm->flags.  6.1 uses bits 0-27; MMF_INIT_MASK does not include
 * these, so mm_init() clears them for every new mm and the fork probe copies
 * them (nx.c).
 */
#define FMM_MMF_NX_LO (BITS_PER_LONG - 2)
#define FMM_MMF_NX_HI (BITS_PER_LONG - 1)

int fmm_mm_nx(struct mm_struct *mm)
{
	unsigned long flags = READ_ONCE(mm->flags);

	return (flags >> FMM_MMF_NX_LO) & 3;
}

/* Atomic bit operations: the kernel changes other bits of mm->flags. */
void fmm_mm_set_nx(struct mm_struct *mm, int mode)
{
	assign_bit(FMM_MMF_NX_LO, &mm->flags, mode & 1);
	assign_bit(FMM_MMF_NX_HI, &mm->flags, mode & 2);
}

/* Exec starts from a new mm: mm_init() has cleared the NX bits. */
void fmm_mm_exec_reset(struct mm_struct *mm)
{
}
#else /* FMM_KAPI_MMF */
/*
 * The record of a module mm, in the bits of mm->flags that 6.12 does not
 * use (it has bits 0-31, MMF_TOPDOWN is 31):
 *
 *	bits 32-34	the enum fmm_alloc (0: none)
 *	bits 35-36	the vm.flexmmap_nx mode of the exec (3: the W^X mark)
 *	bits 37-63	this load of the module (random, non-zero)
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
#define FMM_REC_SHIFT 32
#define FMM_REC_MASK (~0UL << FMM_REC_SHIFT)
#define FMM_REC_ALLOC_SHIFT 32
#define FMM_REC_ALLOC_MASK (7UL << FMM_REC_ALLOC_SHIFT)
#define FMM_REC_NX_SHIFT 35
#define FMM_REC_NX_MASK (3UL << FMM_REC_NX_SHIFT)
#define FMM_REC_LOAD_SHIFT 37
#define FMM_REC_LOAD_MASK (~0UL << FMM_REC_LOAD_SHIFT)

static unsigned long fmm_load;

static void fmm_mmf_init(void)
{
	BUILD_BUG_ON(MMF_TOPDOWN >= FMM_REC_SHIFT);
	BUILD_BUG_ON(FMM_REC_ALLOC_MASK >> FMM_REC_ALLOC_SHIFT <
		     FMM_ALLOC_TOPDOWN_AUTO);
	fmm_load = ((unsigned long)get_random_u32() | 1) << FMM_REC_LOAD_SHIFT;
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

	if (fmm_alloc_is_module(a) && a <= FMM_ALLOC_TOPDOWN_AUTO)
		return a;
	return test_bit(MMF_TOPDOWN, &mm->flags) ? FMM_ALLOC_KERNEL_TOPDOWN :
						   FMM_ALLOC_KERNEL_BOTTOMUP;
}

/*
 * Put @mm on allocator @a.  Callers hold the mm's mmap lock for writing or
 * own the mm alone (exec, a fork before the child can run).
 */
void fmm_mm_set_alloc(struct mm_struct *mm, enum fmm_alloc a)
{
	unsigned long bits = 0;

	if (a == FMM_ALLOC_OTHER || a > FMM_ALLOC_TOPDOWN_AUTO)
		return;
	if (fmm_alloc_is_module(a))
		bits = (unsigned long)a << FMM_REC_ALLOC_SHIFT;
	fmm_rec_update(mm, FMM_REC_ALLOC_MASK, bits, !fmm_alloc_is_bottomup(a));
}

int fmm_mm_nx(struct mm_struct *mm)
{
	return (fmm_rec(mm) & FMM_REC_NX_MASK) >> FMM_REC_NX_SHIFT;
}

void fmm_mm_set_nx(struct mm_struct *mm, int mode)
{
	fmm_rec_update(mm, FMM_REC_NX_MASK,
		       (unsigned long)mode << FMM_REC_NX_SHIFT, -1);
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
unsigned long fmm_kernel_gua_addr(bool topdown)
{
	return fmm_k_gua[topdown];
}

#endif /* FMM_KAPI_PTR */
#endif /* FMM_HAVE_LAYOUT_HOOK */

#ifdef FMM_KAPI_PTR
/*
 * The allocator of current->mm, for the kernel's trampoline (hook.c).  An mm
 * the trampoline brings us is attached, so it is on one of ours or, left
 * from an earlier load, on the kernel's.
 */
unsigned long fmm_mm_gua(struct file *filp, unsigned long addr,
			 unsigned long len, unsigned long pgoff,
			 unsigned long flags)
{
	enum fmm_alloc a = fmm_mm_alloc(current->mm);

	if (a == FMM_ALLOC_OTHER)
		a = FMM_ALLOC_KERNEL_TOPDOWN;
	return fmm_allocs[a](filp, addr, len, pgoff, flags);
}
#endif
