// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: x86's address-space arithmetic, what a port replaces: the
 * bases (the 2004 gap rule below the stack), task sizes, hint rules and
 * file alignment, after arch/x86/mm/mmap.c and arch/x86/kernel/sys_x86_64.c,
 * whose helpers are not exported; and the kernel's calling convention, for
 * a probe that changes an argument.  Calls nothing of the module's but
 * ksyms.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/ptrace.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/personality.h>
#include <linux/compat.h>
#include <linux/random.h>
#include <linux/siphash.h>
#include <linux/atomic.h>
#include <asm/elf.h>
#include "fmm.h"

/*
 * MAP_32BIT's random start.  The kernel draws it with get_random_*(),
 * whose per-CPU lock is a sleeping lock on PREEMPT_RT; in an allocator of
 * ours a task asleep there would look quiescent to rmmod's RCU-tasks wait
 * while its return address is in module text.  There it is SipHash of a
 * counter under a key drawn at load: no lock, and as unpredictable.
 */
static siphash_key_t fmm_rnd_key;
static atomic64_t fmm_rnd_ctr;

void fmm_arch_init(void)
{
	if (IS_ENABLED(CONFIG_PREEMPT_RT))
		get_random_bytes(&fmm_rnd_key, sizeof(fmm_rnd_key));
}

static u32 fmm_random_u32(void)
{
	if (!IS_ENABLED(CONFIG_PREEMPT_RT))
		return get_random_u32();
	return siphash_1u64(atomic64_inc_return(&fmm_rnd_ctr), &fmm_rnd_key);
}

/* arch/x86/kernel/sys_x86_64.c: get_align_mask() and get_align_bits(). */
static unsigned long fmm_align_mask(void)
{
	const struct va_alignment *va = fmm_va_align();

	if (!va || va->flags < 0 || !(va->flags & (2 - mmap_is_ia32())))
		return 0;
	if (!(current->flags & PF_RANDOMIZE))
		return 0;
	return va->mask;
}

static unsigned long fmm_align_bits(void)
{
	return fmm_va_align() ? fmm_va_align()->bits & fmm_align_mask() : 0;
}

/*
 * The alignment a new mapping wants: file mappings follow va_align (AMD
 * family 15h), @pgoff the page of the file it starts at.
 */
void fmm_area_align(struct file *filp, unsigned long pgoff, unsigned long flags,
		    unsigned long *align_mask, unsigned long *align_offset)
{
	*align_mask = 0;
	*align_offset = pgoff << PAGE_SHIFT;
	if (filp) {
		*align_mask = fmm_align_mask();
		*align_offset += fmm_align_bits();
	}
}

/* x86 checks no MAP_FIXED address: see mmap_address_hint_valid(). */
unsigned long fmm_fixed_addr(struct file *filp, unsigned long addr,
			     unsigned long len, unsigned long pgoff,
			     unsigned long flags)
{
	return addr;
}

/* x86 takes a hint as it is, at any alignment. */
unsigned long fmm_hint_align(unsigned long addr, unsigned long align_mask,
			     unsigned long align_offset)
{
	return addr;
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
static unsigned long fmm_task_size_32_of(unsigned int personality)
{
#ifdef CONFIG_X86_32
	/* A native 32-bit kernel has one: its user/kernel split. */
	return TASK_SIZE;
#else
	return personality & ADDR_LIMIT_3GB ? 0xc0000000UL : 0xFFFFe000UL;
#endif
}

/*
 * The lowest address of a top-down search: 6.12's MAP_ABOVE4G (0 on 6.1,
 * compat.h) keeps a 64-bit task's low 4 GiB free.
 */
unsigned long fmm_topdown_low(unsigned long flags)
{
#ifdef CONFIG_X86_64
	if (!in_32bit_syscall() && (flags & MAP_ABOVE4G))
		return SZ_4G;
#endif
	return PAGE_SIZE;
}

static unsigned long fmm_task_size_32(void)
{
	return fmm_task_size_32_of(current->personality);
}

static unsigned long fmm_task_size_64(bool full_addr_space)
{
	return full_addr_space ? TASK_SIZE_MAX : DEFAULT_MAP_WINDOW;
}

/* A 64-bit task's MAP_32BIT wants the low 2 GiB, always bottom-up. */
bool fmm_map_32bit(unsigned long flags)
{
	return !in_32bit_syscall() && (flags & MAP_32BIT);
}

/* arch/x86/kernel/sys_x86_64.c: find_start_end() for the bottom-up search. */
void fmm_bottomup_range(unsigned long addr, unsigned long flags,
			unsigned long *begin, unsigned long *end)
{
	if (fmm_map_32bit(flags)) {
		/* Small code model: the first 2 GiB, from 1 GiB up. */
		*begin = 0x40000000;
		*end = 0x80000000;
		if (current->flags & PF_RANDOMIZE)
			*begin +=
				(fmm_random_u32() % (0x02000000 >> PAGE_SHIFT))
				<< PAGE_SHIFT;
		return;
	}
	*begin = fmm_mmap_base(current->mm, true);
	if (in_32bit_syscall())
		*end = fmm_task_size_32();
	else
		*end = fmm_task_size_64(addr > DEFAULT_MAP_WINDOW);
}

/*
 * The top of a top-down search: the mmap base, and a hint above the
 * 47-bit window opens the whole address space.
 */
unsigned long fmm_topdown_high(unsigned long addr)
{
	unsigned long high = fmm_mmap_base(current->mm, false);

	if (addr > DEFAULT_MAP_WINDOW && !in_32bit_syscall())
		high += TASK_SIZE_MAX - DEFAULT_MAP_WINDOW;
	return high;
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
 * legacy itself (setarch -L, vm.legacy_va_layout=1): @kernel_legacy.
 */
void fmm_mm_set_bases(struct mm_struct *mm, bool legacy, bool kernel_legacy,
		      const struct rlimit *rlim_stack)
{
	fmm_mm_bases(mm, legacy, kernel_legacy, rlim_stack,
		     current->flags & PF_RANDOMIZE, current->personality);
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

/*
 * Change argument @n (from 0) of the function a kprobe stopped at, before
 * it runs: the kernel has regs_get_kernel_argument() but no setter.  The
 * kernel's calling convention: rdi, rsi, rdx, ... on x86-64; eax, edx, ecx
 * on i386 (-mregparm=3).  Only the register arguments are supported.
 */
void fmm_regs_set_argument(struct pt_regs *regs, unsigned int n,
			   unsigned long val)
{
#ifdef CONFIG_X86_64
	unsigned long *args[] = { &regs->di, &regs->si, &regs->dx,
				  &regs->cx, &regs->r8, &regs->r9 };
#else
	unsigned long *args[] = { &regs->ax, &regs->dx, &regs->cx };
#endif

	if (!WARN_ON_ONCE(n >= ARRAY_SIZE(args)))
		*args[n] = val;
}

NOKPROBE_SYMBOL(fmm_regs_set_argument);
