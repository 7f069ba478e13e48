/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flexmmap: the shape of the kernel's API, per version.  This header is the
 * only C file that tests LINUX_VERSION_CODE (Kbuild picks the backend's
 * files with the same test); everything else asks it.
 *
 * FMM_MMF_TOPDOWN	6.10 and later (Debian 13's 6.12): struct mm_struct has
 *			no get_unmapped_area pointer any more, the kernel
 *			picks its allocator with MMF_TOPDOWN (record-mmf.c,
 *			layout-ftrace.c).  Without it, 6.1 (Debian 12):
 *			record-ptr.c and layout-kprobe.c, or record-hook.c and
 *			layout-hook.c with patches/.
 */
#ifndef _FMM_COMPAT_H
#define _FMM_COMPAT_H

#include <linux/version.h>
#include <linux/mman.h>
#include <linux/mm.h>
#include <linux/ptrace.h>
#include <linux/sysctl.h>
#include <linux/fs.h>
#include <linux/rcupdate.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define FMM_MMF_TOPDOWN
#endif

/*
 * Since 6.11 sysctl handlers take a const table, and register_sysctl()
 * sizes the table with ARRAY_SIZE() and rejects an empty entry, such as
 * the empty last entry that 6.1 needs: count without it.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
#define FMM_CTL_CONST const
#define FMM_SYSCTL_SIZED
#else
#define FMM_CTL_CONST
#endif

struct ctl_table;
struct ctl_table_header;

/* vm.flexmmap_*: @table has @n entries, the last one empty. */
static inline struct ctl_table_header *
fmm_register_vm_sysctls(struct ctl_table *table, size_t n)
{
#ifdef FMM_SYSCTL_SIZED
	return register_sysctl_sz("vm", table, n - 1);
#else
	return register_sysctl("vm", table);
#endif
}

/*
 * userfaultfd's fills of a page into a registered range, under the mmap
 * lock, with the destination vma as an argument: 6.1's
 * mfill_atomic_install_pte(dst_mm, dst_pmd, dst_vma, ...) (anonymous COPY,
 * every CONTINUE, shmem COPY and ZEROPAGE) and hugetlb_mcopy_atomic_pte(
 * dst_mm, dst_pte, dst_vma, ...); 6.12 dropped the mm argument and renamed
 * the hugetlb one hugetlb_mfill_atomic_pte(dst_pte, dst_vma, ...).
 */
#ifdef FMM_MMF_TOPDOWN
#define FMM_UFFD_VMA_ARG 1
#define FMM_UFFD_HUGETLB_FILL "hugetlb_mfill_atomic_pte"
#else
#define FMM_UFFD_VMA_ARG 2
#define FMM_UFFD_HUGETLB_FILL "hugetlb_mcopy_atomic_pte"
#endif

/*
 * The hugetlb fill's parameters, for the stand-in that runs in its place
 * when W^X refuses it (wx.c); @held is the page (6.12: folio) a retry
 * hands in, which the stand-in must put, as the fill's own error paths do.
 */
#if IS_ENABLED(CONFIG_USERFAULTFD) && IS_ENABLED(CONFIG_HUGETLB_PAGE)
#include <linux/userfaultfd_k.h>
#ifdef FMM_MMF_TOPDOWN
#define FMM_UFFD_HUGETLB_PARAMS                                 \
	pte_t *dst_pte, struct vm_area_struct *dst_vma,         \
		unsigned long dst_addr, unsigned long src_addr, \
		uffd_flags_t flags, struct folio **held
static inline void fmm_uffd_put(void *held)
{
	folio_put(held);
}
#else
#define FMM_UFFD_HUGETLB_PARAMS                                         \
	struct mm_struct *dst_mm, pte_t *dst_pte,                       \
		struct vm_area_struct *dst_vma, unsigned long dst_addr, \
		unsigned long src_addr, enum mcopy_atomic_mode mode,    \
		struct page **held, bool wp_copy
static inline void fmm_uffd_put(void *held)
{
	put_page(held);
}
#endif
#endif

/*
 * The anonymous UFFDIO_ZEROPAGE maps the zero page without either fill
 * function: its entry, 6.1's mfill_zeropage(dst_mm, start, len, ...) or
 * 6.12's mfill_atomic_zeropage(ctx, start, len), whose ctx knows the mm.
 */
#ifdef FMM_MMF_TOPDOWN
#define FMM_UFFD_ZEROPAGE "mfill_atomic_zeropage"
#ifdef CONFIG_USERFAULTFD
#include <linux/userfaultfd_k.h>
static inline struct mm_struct *fmm_uffd_zeropage_mm(struct pt_regs *regs)
{
	struct userfaultfd_ctx *ctx = (void *)fmm_regs_get_argument(regs, 0);

	return ctx->mm;
}
#endif
#else
#define FMM_UFFD_ZEROPAGE "mfill_zeropage"
static inline struct mm_struct *fmm_uffd_zeropage_mm(struct pt_regs *regs)
{
	return (void *)fmm_regs_get_argument(regs, 0);
}
#endif

/*
 * 6.1's mmap_write_trylock() is gone from 6.12 (no caller was left): do
 * what 6.12's mmap_write_lock() does, with a trylock (the retarget's
 * bounded wait, policy.c).
 */
#ifdef FMM_MMF_TOPDOWN
static inline bool fmm_mmap_write_trylock(struct mm_struct *mm)
{
	__mmap_lock_trace_start_locking(mm, true);
	if (!down_write_trylock(&mm->mmap_lock)) {
		__mmap_lock_trace_acquire_returned(mm, true, false);
		return false;
	}
	mm_lock_seqcount_begin(mm);
	__mmap_lock_trace_acquire_returned(mm, true, true);
	return true;
}
#else
#define fmm_mmap_write_trylock mmap_write_trylock
#endif

/*
 * A trace event's string: since 6.10 __assign_str() takes only the field
 * and copies the source its __string() declaration named (trace.h).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 10, 0)
#define fmm_assign_str(dst, src) __assign_str(dst)
#else
#define fmm_assign_str(dst, src) __assign_str(dst, src)
#endif

/*
 * userfaultfd's fills run under the destination mm's mmap lock on 6.1;
 * since 6.8 under the destination vma's own lock where the kernel has
 * per-VMA locks, the mmap lock not held.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 8, 0)
#define FMM_UFFD_FILL_MMAP_LOCKED (!IS_ENABLED(CONFIG_PER_VMA_LOCK))
#else
#define FMM_UFFD_FILL_MMAP_LOCKED true
#endif

/*
 * A reference on @mm's program, without sleeping, under rcu_read_lock():
 * since 6.7 files are SLAB_TYPESAFE_BY_RCU and get_file_rcu() takes the
 * pointer's address to check it again after the increment; 6.1's is an
 * increment unless zero (files are freed after a grace period).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 7, 0)
static inline struct file *fmm_get_exe_file_rcu(struct mm_struct *mm)
{
	return get_file_rcu(&mm->exe_file);
}
#else
static inline struct file *fmm_get_exe_file_rcu(struct mm_struct *mm)
{
	struct file *exe = rcu_dereference(mm->exe_file);

	return exe && get_file_rcu(exe) ? exe : NULL;
}
#endif

/* 6.1 has neither: both are then flags no mapping carries. */
#ifndef MAP_ABOVE4G
#define MAP_ABOVE4G 0
#endif
#ifndef VM_SHADOW_STACK
#define VM_SHADOW_STACK VM_NONE
#endif

#endif /* _FMM_COMPAT_H */
