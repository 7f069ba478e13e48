// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: parisc's address-space arithmetic, what arch-x86.c is for x86:
 * the bases, the search ranges and the cache colour rule, after
 * arch/parisc/kernel/sys_parisc.c (6.1), whose helpers are static; and the
 * kernel's calling convention, for a probe that changes an argument.
 * Calls nothing of the module's.
 *
 * parisc's stack grows up.  Exec reserves room for it below STACK_TOP: the
 * most it may grow (the stack rlimit's hard limit, STACK_SIZE_DEFAULT when
 * that is unlimited) plus the whole range of the stack's random offset,
 * and starts it at the bottom of that room plus the offset; it grows from
 * there towards STACK_TOP.  The kernel's mmap_base is the bottom of the
 * room, the lowest address the stack can start at (not randomised: the
 * legacy base is): the top-down allocator fills downwards from there, and
 * the bottom-up one, from TASK_UNMAPPED_BASE, stops there too, so neither
 * maps into the room the stack grows into.
 *
 * Shared and file mappings are placed so that one page of an object has
 * one cache colour (its address modulo SHM_COLOUR) in every mapping of
 * every process: the colour of a file's page 0 comes from the address of
 * its f_mapping, and a MAP_FIXED shared file mapping at another colour is
 * refused.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/fs.h>
#include <linux/shm.h>
#include <linux/sizes.h>
#include <linux/compat.h>
#include <asm/elf.h>
#include "fmm.h"

/* sys_parisc.c: GET_FILP_PGOFF(), the colour of the file's page 0. */
static unsigned long fmm_filp_pgoff(struct file *filp)
{
	if (!filp)
		return 0;
	return ((unsigned long)filp->f_mapping >> 8) &
	       ((SHM_COLOUR - 1) >> PAGE_SHIFT);
}

/* Shared and file mappings keep their colour; private anonymous ones need not. */
void fmm_area_align(struct file *filp, unsigned long pgoff, unsigned long flags,
		    unsigned long *align_mask, unsigned long *align_offset)
{
	*align_offset = (fmm_filp_pgoff(filp) + pgoff) << PAGE_SHIFT;
	*align_mask = 0;
	if (filp || (flags & MAP_SHARED))
		*align_mask = PAGE_MASK & (SHM_COLOUR - 1);
}

/* sys_parisc.c: MAP_FIXED within TASK_SIZE, and a shared file at its colour. */
unsigned long fmm_fixed_addr(struct file *filp, unsigned long addr,
			     unsigned long len, unsigned long pgoff,
			     unsigned long flags)
{
	unsigned long offset = (fmm_filp_pgoff(filp) + pgoff) << PAGE_SHIFT;

	if (TASK_SIZE - len < addr)
		return -EINVAL;
	if ((flags & MAP_SHARED) && filp &&
	    ((addr - offset) & (SHM_COLOUR - 1)))
		return -EINVAL;
	return addr;
}

/*
 * sys_parisc.c: COLOR_ALIGN(), a hint moved up to the next SHM_COLOUR
 * boundary plus the mapping's colour, when it has one.
 */
unsigned long fmm_hint_align(unsigned long addr, unsigned long align_mask,
			     unsigned long align_offset)
{
	if (!align_mask)
		return addr;
	return ALIGN(addr, SHM_COLOUR) + (align_offset & (SHM_COLOUR - 1));
}

bool fmm_hint_valid(unsigned long addr, unsigned long len)
{
	return TASK_SIZE - len >= addr;
}

/* Nothing to set up: no random offset is drawn here (x86's MAP_32BIT). */
void fmm_arch_init(void)
{
}

/* parisc has no MAP_32BIT: a 32-bit space is all it gives user space. */
bool fmm_map_32bit(unsigned long flags)
{
	return false;
}

/*
 * sys_parisc.c: calc_max_stack_size(), not exported: the most the stack
 * may grow, from the stack rlimit's hard limit.
 */
static unsigned long fmm_stack_max(unsigned long rlim_max)
{
#ifdef CONFIG_COMPAT
	if (!USER_WIDE_MODE && rlim_max == COMPAT_RLIM_INFINITY)
		rlim_max = RLIM_INFINITY;
#endif
	if (rlim_max != RLIM_INFINITY)
		return rlim_max;
	return USER_WIDE_MODE ? SZ_1G :
				CONFIG_STACK_MAX_DEFAULT_SIZE_MB * SZ_1M;
}

/*
 * sys_parisc.c: mmap_upper_limit(), the bottom of the stack's room (see
 * the top of this file).
 */
static unsigned long fmm_stack_start(unsigned long rlim_max, bool randomize)
{
	unsigned long stack_max = fmm_stack_max(rlim_max);

	if (randomize)
		stack_max += STACK_RND_MASK << PAGE_SHIFT;
	return PAGE_ALIGN(STACK_TOP - stack_max);
}

/* Bottom-up: from the legacy base up to the stack's room. */
void fmm_bottomup_range(unsigned long addr, unsigned long flags,
			unsigned long *begin, unsigned long *end)
{
	*begin = current->mm->mmap_legacy_base;
	*end = fmm_stack_start(rlimit_max(RLIMIT_STACK),
			       current->flags & PF_RANDOMIZE);
}

/* Top-down: from the mmap base, the stack's room as exec computed it. */
unsigned long fmm_topdown_high(unsigned long addr)
{
	return current->mm->mmap_base;
}

unsigned long fmm_topdown_low(unsigned long flags)
{
	return PAGE_SIZE;
}

unsigned long fmm_mmap_base(struct mm_struct *mm, bool legacy)
{
	return legacy ? mm->mmap_legacy_base : mm->mmap_base;
}

/* Under the parent's mmap lock, before the child runs (see arch-x86.c). */
bool fmm_mm_copy_bases(struct mm_struct *newmm, struct mm_struct *oldmm)
{
	if (newmm->mmap_base == oldmm->mmap_base &&
	    newmm->mmap_legacy_base == oldmm->mmap_legacy_base)
		return false;
	newmm->mmap_base = oldmm->mmap_base;
	newmm->mmap_legacy_base = oldmm->mmap_legacy_base;
	return true;
}

/*
 * parisc's arch_pick_mmap_layout() computes both bases whatever it picks,
 * then sets mmap_base to the legacy base for a legacy process: legacy
 * does the same, flexible recomputes the bottom of the stack's room when
 * the kernel had chosen legacy.  The random offset of the legacy base is
 * the kernel's.
 */
static void fmm_mm_bases(struct mm_struct *mm, bool legacy, bool recompute,
			 const struct rlimit *rlim_stack, bool randomize)
{
	if (legacy)
		mm->mmap_base = mm->mmap_legacy_base;
	else if (recompute)
		mm->mmap_base =
			fmm_stack_start(rlim_stack->rlim_max, randomize);
}

void fmm_mm_set_bases(struct mm_struct *mm, bool legacy, bool kernel_legacy,
		      const struct rlimit *rlim_stack)
{
	fmm_mm_bases(mm, legacy, kernel_legacy, rlim_stack,
		     current->flags & PF_RANDOMIZE);
}

/*
 * A retarget to flexible (mmap lock held for writing) recomputes the
 * bottom of the stack's room from the target's hard limit now.  One
 * lowered since exec would put the base above where exec started the
 * stack, and mappings above the stack, in its way: the base goes no
 * higher than the stack's start, below which nothing grows.
 */
void fmm_mm_retarget_bases(struct mm_struct *mm, bool legacy,
			   const struct rlimit *rlim_stack, bool randomize,
			   unsigned int personality)
{
	struct vm_area_struct *stack = find_vma(mm, mm->start_stack);

	fmm_mm_bases(mm, legacy, true, rlim_stack, randomize);
	if (!legacy && stack && stack->vm_start < mm->mmap_base)
		mm->mmap_base = stack->vm_start;
}

/*
 * Change argument @n (from 0) of the function a kprobe stopped at, before
 * it runs: the first four are in gr26, gr25, gr24 and gr23 (regs-parisc.h).
 */
void fmm_regs_set_argument(struct pt_regs *regs, unsigned int n,
			   unsigned long val)
{
	if (!WARN_ON_ONCE(n >= FMM_REG_ARGS))
		regs->gr[26 - n] = val;
}

NOKPROBE_SYMBOL(fmm_regs_set_argument);
