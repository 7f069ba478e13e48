// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: the two allocators.
 *
 * On 6.1 mm->get_unmapped_area points at one of the two entry points below
 * for every process the module manages; there is no per-mmap hook.  On
 * 6.10+ the kernel's allocators are redirected to fmm_get_area_vmflags() for
 * those processes (layout-ftrace.c).  Both directions search the maple tree's
 * gaps (mas_empty_area / mas_empty_area_rev), so they stay O(log n) like
 * the kernel's own vm_unmapped_area(), which is not exported.  The rules
 * follow arch/x86/kernel/sys_x86_64.c (6.1, and 6.12's shadow stack gap and
 * MAP_ABOVE4G), plus two things 6.1 lacks: the search never goes below
 * mmap_min_addr, and huge pages follow the process's direction.  What
 * differs per architecture (ranges, hints, MAP_FIXED, alignment and cache
 * colour) is asked of arch-x86.c or arch-parisc.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/maple_tree.h>
#include <linux/hugetlb.h>
#include <linux/sched.h>
#include "fmm.h"

/*
 * Mappings that keep a gap below them: stacks, and 6.12's shadow stacks
 * (VM_NONE on 6.1, compat.h).
 */
#define FMM_STARTGAP_FLAGS (VM_GROWSDOWN | VM_SHADOW_STACK)

/* include/linux/mm.h's vm_start_gap()/vm_end_gap() use an unexported gap. */
static unsigned long fmm_vm_start_gap(struct vm_area_struct *vma)
{
	unsigned long start = vma->vm_start;
	unsigned long gap = 0;

	if (vma->vm_flags & VM_GROWSDOWN)
		gap = fmm_stack_guard_gap();
	else if (vma->vm_flags & VM_SHADOW_STACK)
		gap = PAGE_SIZE;
	start -= gap;
	if (start > vma->vm_start)
		start = 0;
	return start;
}

static unsigned long fmm_vm_end_gap(struct vm_area_struct *vma)
{
	unsigned long end = vma->vm_end;

	if (vma->vm_flags & VM_GROWSUP) {
		end += fmm_stack_guard_gap();
		if (end < vma->vm_end)
			end = -PAGE_SIZE;
	}
	return end;
}

/*
 * A search: [low, high) to look in, the alignment wanted, and the free
 * space to keep below the result (a page below a new shadow stack).
 */
struct fmm_search {
	unsigned long length;
	unsigned long low;
	unsigned long high;
	unsigned long align_mask;
	unsigned long align_offset;
	unsigned long start_gap;
};

/* mm/mmap.c: unmapped_area(), lowest fit first.  Caller holds mmap_lock. */
static unsigned long fmm_search_up(const struct fmm_search *s)
{
	unsigned long length, gap, low = max(s->low, fmm_mmap_min_addr());
	struct vm_area_struct *tmp;

	MA_STATE(mas, &current->mm->mm_mt, 0, 0);

	/* Worst-case alignment overhead. */
	length = s->length + s->align_mask + s->start_gap;
	if (length < s->length || s->high <= low)
		return -ENOMEM;
retry:
	if (mas_empty_area(&mas, low, s->high - 1, length))
		return -ENOMEM;

	gap = mas.index + s->start_gap;
	gap += (s->align_offset - gap) & s->align_mask;
	tmp = mas_next(&mas, ULONG_MAX);
	if (tmp && (tmp->vm_flags & FMM_STARTGAP_FLAGS)) {
		if (fmm_vm_start_gap(tmp) < gap + length - 1) {
			low = tmp->vm_end;
			mas_reset(&mas);
			goto retry;
		}
	} else {
		tmp = mas_prev(&mas, 0);
		if (tmp && fmm_vm_end_gap(tmp) > gap) {
			low = fmm_vm_end_gap(tmp);
			mas_reset(&mas);
			goto retry;
		}
	}
	return gap;
}

/*
 * mm/mmap.c: unmapped_area_topdown(), highest fit first.  The end of the
 * gap must be saved before mas_next() moves the state: reading mas.last
 * afterwards makes the retry loop spin forever.
 */
static unsigned long fmm_search_down(const struct fmm_search *s)
{
	unsigned long length, gap, gap_end, high = s->high;
	unsigned long low = max(s->low, fmm_mmap_min_addr());
	struct vm_area_struct *tmp;

	MA_STATE(mas, &current->mm->mm_mt, 0, 0);

	length = s->length + s->align_mask + s->start_gap;
	if (length < s->length)
		return -ENOMEM;
retry:
	if (high <= low || mas_empty_area_rev(&mas, low, high - 1, length))
		return -ENOMEM;

	gap = mas.last + 1 - s->length;
	gap -= (gap - s->align_offset) & s->align_mask;
	gap_end = mas.last;
	tmp = mas_next(&mas, ULONG_MAX);
	if (tmp && (tmp->vm_flags & FMM_STARTGAP_FLAGS)) {
		if (fmm_vm_start_gap(tmp) <= gap_end) {
			high = fmm_vm_start_gap(tmp);
			mas_reset(&mas);
			goto retry;
		}
	} else {
		tmp = mas_prev(&mas, 0);
		if (tmp && fmm_vm_end_gap(tmp) > gap) {
			high = tmp->vm_start;
			mas_reset(&mas);
			goto retry;
		}
	}
	return gap;
}

/*
 * Is [addr, addr + len) free, guard gaps included?  The gap of the mapping
 * below counts only where a stack grows up (parisc); find_vma_prev() is
 * not exported.
 */
static bool fmm_range_free(unsigned long addr, unsigned long len)
{
	struct vm_area_struct *vma = find_vma(current->mm, addr);

	if (addr < fmm_mmap_min_addr())
		return false;
	if (vma && addr + len > fmm_vm_start_gap(vma))
		return false;
	if (IS_ENABLED(CONFIG_STACK_GROWSUP)) {
		MA_STATE(mas, &current->mm->mm_mt, addr, addr);

		vma = mas_prev(&mas, 0);
		if (vma && addr < fmm_vm_end_gap(vma))
			return false;
	}
	return true;
}

/*
 * @try_hint: whether a free hint address is taken as is (hugetlb checks
 * its hint before choosing a direction and passes false).
 */
static unsigned long fmm_bottomup(unsigned long addr, unsigned long len,
				  unsigned long flags, unsigned long align_mask,
				  unsigned long align_offset,
				  unsigned long start_gap, bool try_hint)
{
	struct fmm_search s = {
		.length = len,
		.align_mask = align_mask,
		.align_offset = align_offset,
		.start_gap = start_gap,
	};

	fmm_bottomup_range(addr, flags, &s.low, &s.high);
	if (len > s.high)
		return -ENOMEM;
	if (addr && try_hint) {
		addr = fmm_hint_align(addr, align_mask, align_offset);
		addr = PAGE_ALIGN(addr);
		if (addr <= s.high - len && fmm_range_free(addr, len))
			return addr;
	}
	return fmm_search_up(&s);
}

static unsigned long fmm_topdown(unsigned long addr0, unsigned long len,
				 unsigned long flags, unsigned long align_mask,
				 unsigned long align_offset,
				 unsigned long start_gap, bool try_hint)
{
	struct fmm_search s = {
		.length = len,
		.align_mask = align_mask,
		.align_offset = align_offset,
		.start_gap = start_gap,
	};
	unsigned long addr = addr0;

	if (len > TASK_SIZE)
		return -ENOMEM;
	/* MAP_32BIT wants the low 2 GiB: that search is always bottom-up. */
	if (fmm_map_32bit(flags))
		goto bottomup;
	s.low = fmm_topdown_low(flags);

	if (addr && try_hint) {
		addr = fmm_hint_align(addr, align_mask, align_offset);
		addr &= PAGE_MASK;
		if (fmm_hint_valid(addr, len) && fmm_range_free(addr, len))
			return addr;
	}

	s.high = fmm_topdown_high(addr);
	addr = fmm_search_down(&s);
	if (!offset_in_page(addr))
		return addr;
bottomup:
	/*
	 * A failed mmap() very likely kills the application; fall back to
	 * the bottom-up search, as the kernel and the parisc port do (6.12's
	 * without the shadow stack gap).
	 */
	return fmm_bottomup(addr0, len, flags, align_mask, align_offset, 0,
			    try_hint);
}

/*
 * The part every entry point shares: MAP_FIXED and file alignment.
 * @vm_flags: the new mapping's, on 6.10+ (0 on 6.1)
 */
static unsigned long fmm_get_area(struct file *filp, unsigned long addr,
				  unsigned long len, unsigned long pgoff,
				  unsigned long flags, vm_flags_t vm_flags,
				  bool topdown)
{
	unsigned long start_gap = vm_flags & VM_SHADOW_STACK ? PAGE_SIZE : 0;
	unsigned long align_mask, align_offset;

	if (len > TASK_SIZE)
		return -ENOMEM;
	if (flags & MAP_FIXED)
		return fmm_fixed_addr(filp, addr, len, pgoff, flags);
	fmm_area_align(filp, pgoff, flags, &align_mask, &align_offset);
	if (topdown)
		return fmm_topdown(addr, len, flags, align_mask, align_offset,
				   start_gap, true);
	return fmm_bottomup(addr, len, flags, align_mask, align_offset,
			    start_gap, true);
}

/*
 * The two entry points, one per direction: what a module mm's
 * get_unmapped_area points at on 6.1 (record-ptr.c, record-hook.c).  Why
 * the module chose one is in the mm's record, not in which one it is.
 */
unsigned long fmm_get_area_bottomup(struct file *filp, unsigned long addr,
				    unsigned long len, unsigned long pgoff,
				    unsigned long flags)
{
	return fmm_get_area(filp, addr, len, pgoff, flags, 0, false);
}

unsigned long fmm_get_area_topdown(struct file *filp, unsigned long addr,
				   unsigned long len, unsigned long pgoff,
				   unsigned long flags)
{
	return fmm_get_area(filp, addr, len, pgoff, flags, 0, true);
}

/*
 * On 6.10+, the kernel's two allocators redirected for a module mm
 * (layout-ftrace.c), in the direction of @topdown.
 */
unsigned long fmm_get_area_vmflags(bool topdown, struct file *filp,
				   unsigned long addr, unsigned long len,
				   unsigned long pgoff, unsigned long flags,
				   vm_flags_t vm_flags)
{
	return fmm_get_area(filp, addr, len, pgoff, flags, vm_flags, topdown);
}

/*
 * arch/x86/mm/hugetlbpage.c: hugetlb_get_unmapped_area(), reached through
 * a kprobe redirect for module mms only (layout-kprobe.c), one entry point per
 * direction.  The kernel's version picks its direction by comparing
 * mm->get_unmapped_area with arch_get_unmapped_area, which sends every
 * module mm top-down; the redirect picks by the mm's allocator.
 */
static unsigned long fmm_hugetlb(struct file *file, unsigned long addr,
				 unsigned long len, unsigned long flags,
				 bool bottomup)
{
	struct hstate *h = hstate_file(file);
	unsigned long hmask = huge_page_mask(h);

	if (len & ~hmask)
		return -EINVAL;
	if (len > TASK_SIZE)
		return -ENOMEM;
	if (flags & MAP_FIXED) {
		if (addr & ~hmask)
			return -EINVAL;
		return addr;
	}
	atomic_long_inc(&fmm_stats.hugetlb);
	if (addr) {
		addr &= hmask;
		if (fmm_hint_valid(addr, len) && fmm_range_free(addr, len))
			return addr;
	}
	if (bottomup)
		return fmm_bottomup(addr, len, flags, ~hmask & PAGE_MASK, 0, 0,
				    false);
	return fmm_topdown(addr, len, flags, ~hmask & PAGE_MASK, 0, 0, false);
}

unsigned long fmm_hugetlb_bottomup(struct file *file, unsigned long addr,
				   unsigned long len, unsigned long pgoff,
				   unsigned long flags)
{
	return fmm_hugetlb(file, addr, len, flags, true);
}

unsigned long fmm_hugetlb_topdown(struct file *file, unsigned long addr,
				  unsigned long len, unsigned long pgoff,
				  unsigned long flags)
{
	return fmm_hugetlb(file, addr, len, flags, false);
}
