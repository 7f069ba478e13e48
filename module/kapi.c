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

/* Not exported by any kernel: found through kallsyms in every variant. */
static bool (*fmm_k_ptrace_may_access)(struct task_struct *task,
				       unsigned int mode);

static unsigned long (*fmm_kallsyms_lookup_name)(const char *name);

/*
 * kallsyms_lookup_name() is not exported since 5.7; a kprobe registered
 * on it by name tells us where it is.
 */
static int fmm_find_kallsyms(void)
{
	struct kprobe kp = { .symbol_name = "kallsyms_lookup_name" };
	int ret;

	ret = register_kprobe(&kp);
	if (ret < 0) {
		pr_err("cannot find kallsyms_lookup_name (%d)\n", ret);
		return ret;
	}
	fmm_kallsyms_lookup_name = (void *)kp.addr;
	unregister_kprobe(&kp);
	return 0;
}

static int fmm_lookup(const char *name, unsigned long *addr)
{
	*addr = fmm_kallsyms_lookup_name(name);
	if (!*addr) {
		pr_err("kernel symbol %s not found\n", name);
		return -ENOENT;
	}
	return 0;
}

/* What every variant looks up. */
static int fmm_kapi_lookup_common(void)
{
	unsigned long a;
	int ret;

	ret = fmm_find_kallsyms();
	if (ret)
		return ret;
	ret = fmm_lookup("ptrace_may_access", &a);
	if (ret)
		return ret;
	fmm_k_ptrace_may_access = (void *)a;
	return 0;
}

/* ptrace_may_access(): @task's lock must not be held. */
bool fmm_ptrace_may_access(struct task_struct *task, unsigned int mode)
{
	return fmm_k_ptrace_may_access(task, mode);
}

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
	return fmm_kapi_lookup_common();
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

unsigned long fmm_stack_guard_gap(void)
{
	return READ_ONCE(stack_guard_gap);
}

unsigned long fmm_mmap_min_addr(void)
{
	return max(PAGE_ALIGN(READ_ONCE(mmap_min_addr)), PAGE_SIZE);
}

/* get_align_mask() is not exported: no AMD family 15h alignment. */
static const struct va_alignment *const fmm_k_va_align;

/* Exec starts from a new mm, whose mm->mmap_layout is 0. */
void fmm_mm_exec_reset(struct mm_struct *mm)
{
}
#else /* !FMM_HAVE_LAYOUT_HOOK */
/* Kernel objects we need but the kernel does not export. */
static unsigned long *fmm_k_stack_guard_gap;
static unsigned long *fmm_k_mmap_min_addr;
static struct va_alignment *fmm_k_va_align; /* optional */
#ifdef FMM_KAPI_MMF
/* arch_get_unmapped_area() and arch_get_unmapped_area_topdown() */
static unsigned long fmm_k_gua[2];
static void fmm_mmf_init(void);
#endif

int fmm_kapi_init(void)
{
	unsigned long a;
	int ret;

	ret = fmm_kapi_lookup_common();
	if (ret)
		return ret;

#ifdef FMM_KAPI_PTR
	ret = fmm_lookup("arch_get_unmapped_area", &a);
	if (ret)
		return ret;
	fmm_allocs[FMM_ALLOC_KERNEL_BOTTOMUP] = (fmm_gua_t)a;
	ret = fmm_lookup("arch_get_unmapped_area_topdown", &a);
	if (ret)
		return ret;
	fmm_allocs[FMM_ALLOC_KERNEL_TOPDOWN] = (fmm_gua_t)a;
#else
	fmm_mmf_init();
	ret = fmm_lookup("arch_get_unmapped_area", &fmm_k_gua[0]);
	if (ret)
		return ret;
	ret = fmm_lookup("arch_get_unmapped_area_topdown", &fmm_k_gua[1]);
	if (ret)
		return ret;
#endif
	ret = fmm_lookup("stack_guard_gap", &a);
	if (ret)
		return ret;
	fmm_k_stack_guard_gap = (unsigned long *)a;
	ret = fmm_lookup("mmap_min_addr", &a);
	if (ret)
		return ret;
	fmm_k_mmap_min_addr = (unsigned long *)a;
	/* Only AMD family 15h uses it; without it we simply do not align. */
	fmm_k_va_align =
		(struct va_alignment *)fmm_kallsyms_lookup_name("va_align");
	return 0;
}

unsigned long fmm_stack_guard_gap(void)
{
	return READ_ONCE(*fmm_k_stack_guard_gap);
}

/* The lowest address an allocator may hand out. */
unsigned long fmm_mmap_min_addr(void)
{
	return max(PAGE_ALIGN(READ_ONCE(*fmm_k_mmap_min_addr)), PAGE_SIZE);
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

/* arch/x86/kernel/sys_x86_64.c: get_align_mask() and get_align_bits(). */
unsigned long fmm_align_mask(void)
{
	const struct va_alignment *va = fmm_k_va_align;

	if (!va || va->flags < 0 || !(va->flags & (2 - mmap_is_ia32())))
		return 0;
	if (!(current->flags & PF_RANDOMIZE))
		return 0;
	return va->mask;
}

unsigned long fmm_align_bits(void)
{
	return fmm_k_va_align ? fmm_k_va_align->bits & fmm_align_mask() : 0;
}

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

/* vm.flexmmap_*: @table has @n entries, the last one empty. */
struct ctl_table_header *fmm_register_vm_sysctls(struct ctl_table *table,
						 size_t n)
{
#ifdef FMM_SYSCTL_SIZED
	return register_sysctl_sz("vm", table, n - 1);
#else
	return register_sysctl("vm", table);
#endif
}

/* arch/x86/mm/mmap.c: mmap_address_hint_valid(), not exported. */
bool fmm_hint_valid(unsigned long addr, unsigned long len)
{
	if (TASK_SIZE - len < addr)
		return false;
	return (addr > DEFAULT_MAP_WINDOW) == (addr + len > DEFAULT_MAP_WINDOW);
}

/* arch/x86/mm/mmap.c: get_mmap_base(); 32-bit syscalls use the compat pair. */
unsigned long fmm_mmap_base(struct mm_struct *mm, bool legacy)
{
#ifdef CONFIG_HAVE_ARCH_COMPAT_MMAP_BASES
	if (in_32bit_syscall())
		return legacy ? mm->mmap_compat_legacy_base :
				mm->mmap_compat_base;
#endif
	return legacy ? mm->mmap_legacy_base : mm->mmap_base;
}

/*
 * Give a child of fork its parent's bases as they are now (dup_mm() copied
 * them before the parent's lock was taken: a retarget may have changed them
 * since).  Called under the parent's mmap lock, before the child can run.
 * Return whether any base differed.
 */
bool fmm_mm_copy_bases(struct mm_struct *newmm, struct mm_struct *oldmm)
{
	bool changed = false;

	if (newmm->mmap_base != oldmm->mmap_base ||
	    newmm->mmap_legacy_base != oldmm->mmap_legacy_base) {
		newmm->mmap_base = oldmm->mmap_base;
		newmm->mmap_legacy_base = oldmm->mmap_legacy_base;
		changed = true;
	}
#ifdef CONFIG_HAVE_ARCH_COMPAT_MMAP_BASES
	if (newmm->mmap_compat_base != oldmm->mmap_compat_base ||
	    newmm->mmap_compat_legacy_base != oldmm->mmap_compat_legacy_base) {
		newmm->mmap_compat_base = oldmm->mmap_compat_base;
		newmm->mmap_compat_legacy_base = oldmm->mmap_compat_legacy_base;
		changed = true;
	}
#endif
	return changed;
}

/*
 * arch/x86/mm/mmap.c: task_size_32bit() and task_size_64bit(), not
 * exported.  The 32-bit task size depends on the personality of the task
 * whose space it is (ADDR_LIMIT_3GB: setarch --3gb), which a retarget
 * must take from its target, not from the writer (IA32_PAGE_OFFSET reads
 * current).  Both values are IA32_PAGE_OFFSET's.
 */
unsigned long fmm_task_size_32_of(unsigned int personality)
{
	return personality & ADDR_LIMIT_3GB ? 0xc0000000UL : 0xFFFFe000UL;
}

unsigned long fmm_task_size_32(void)
{
	return fmm_task_size_32_of(current->personality);
}

unsigned long fmm_task_size_64(bool full_addr_space)
{
	return full_addr_space ? TASK_SIZE_MAX : DEFAULT_MAP_WINDOW;
}

/* arch/x86/mm/mmap.c: stack_maxrandom_size(), for a task with @randomize */
static unsigned long fmm_stack_maxrandom(bool is32, bool randomize)
{
	if (!randomize)
		return 0;
	return (-1UL & __STACK_RND_MASK(is32)) << PAGE_SHIFT;
}

/*
 * The 2004 rule, as arch/x86/mm/mmap.c's mmap_base() still has it: the top
 * of the mmap area sits a gap below the stack, gap = stack rlimit + stack
 * randomisation + guard gap, clamped to [128 MiB, 5/6 of the task size].
 * The random offset is the one the kernel already drew for the legacy base,
 * so the result equals the kernel's own flexible base and keeps its entropy.
 */
static unsigned long fmm_flexible_base(unsigned long legacy_base,
				       unsigned long task_size, bool is32,
				       const struct rlimit *rlim_stack,
				       bool randomize)
{
	unsigned long rnd = legacy_base - __TASK_UNMAPPED_BASE(task_size);
	unsigned long gap = rlim_stack->rlim_cur;
	unsigned long pad =
		fmm_stack_maxrandom(is32, randomize) + fmm_stack_guard_gap();

	/* Values close to RLIM_INFINITY can overflow. */
	if (gap + pad > gap)
		gap += pad;
	gap = clamp(gap, SZ_128M, (task_size / 6) * 5);
	return PAGE_ALIGN(task_size - gap - rnd);
}

static void fmm_mm_bases(struct mm_struct *mm, bool legacy, bool recompute,
			 const struct rlimit *rlim_stack, bool randomize,
			 unsigned int personality)
{
	unsigned long __maybe_unused task_size;

	if (legacy) {
		mm->mmap_base = mm->mmap_legacy_base;
#ifdef CONFIG_HAVE_ARCH_COMPAT_MMAP_BASES
		mm->mmap_compat_base = mm->mmap_compat_legacy_base;
#endif
		return;
	}
	if (!recompute)
		return;
	mm->mmap_base = fmm_flexible_base(mm->mmap_legacy_base,
					  fmm_task_size_64(false), false,
					  rlim_stack, randomize);
#ifdef CONFIG_HAVE_ARCH_COMPAT_MMAP_BASES
	task_size = fmm_task_size_32_of(personality);
	mm->mmap_compat_base = fmm_flexible_base(mm->mmap_compat_legacy_base,
						 task_size, true, rlim_stack,
						 randomize);
#endif
}

/*
 * Set the bases of a freshly exec'd mm for the chosen direction.  The
 * kernel already drew the random offsets and computed the legacy bases;
 * only the top-down bases may need computing, when the kernel had chosen
 * legacy itself (setarch -L, vm.legacy_va_layout=1).
 */
void fmm_mm_set_bases(struct mm_struct *mm, bool legacy,
		      const struct rlimit *rlim_stack)
{
	fmm_mm_bases(mm, legacy, fmm_mm_alloc(mm) == FMM_ALLOC_KERNEL_BOTTOMUP,
		     rlim_stack, current->flags & PF_RANDOMIZE,
		     current->personality);
}

/*
 * The same for a running process being re-targeted (mmap lock held for
 * writing): the top-down bases are always recomputed from the legacy ones,
 * with the target's stack rlimit now, its randomisation flag and its
 * personality (the 32-bit task size), not the writer's.
 */
void fmm_mm_retarget_bases(struct mm_struct *mm, bool legacy,
			   const struct rlimit *rlim_stack, bool randomize,
			   unsigned int personality)
{
	fmm_mm_bases(mm, legacy, true, rlim_stack, randomize, personality);
}
