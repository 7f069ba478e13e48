// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: which layout a new program gets.
 *
 * fmm_exec() decides, at the start of setup_arg_pages(bprm, stack_top,
 * executable_stack): called by a kprobe pre-handler there on a stock kernel
 * (layout-kprobe.c, layout-ftrace.c), by the kernel itself with the layout
 * hook (layout-hook.c).  It runs
 * after arch_pick_mmap_layout() has set the kernel's own choice and bases,
 * knows from executable_stack whether the binary has a PT_GNU_STACK header
 * (EXSTACK_DEFAULT: it has none), and runs before the image and the
 * interpreter are mapped, so they are placed by the chosen allocator.  A
 * kprobe has no instance limit, unlike a kretprobe on
 * arch_pick_mmap_layout(), so no exec can slip through unseen.
 *
 * A binary's user.flexmmap.layout marking (mark.c) stands for
 * vm.flexmmap_layout for its exec, and its user.pax.flags m or M for
 * vm.flexmmap_nx (nx.c).  The personality (setarch -L) counts where the
 * layout, the marking's or the sysctl's, is auto or kernel.
 *
 * The 2004 patch marked binaries without PT_GNU_STACK with the
 * ADDR_COMPAT_LAYOUT personality, which children inherit across their own
 * exec.  flexmmap does not touch the personality: every exec is judged on
 * its own binary, and nothing of the module's choice outlives the module.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/binfmts.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/spinlock.h>
#include "fmm.h"
#include "trace.h"

/*
 * Orders exec's writes of a new mm's bases and allocator against a
 * retarget of the same mm: get_task_mm() reaches the new mm as soon as
 * exec installed it, before setup_arg_pages(), and exec cannot take the
 * mmap lock from a probe handler.  Each side writes the pair under this
 * lock (the retarget inside its mmap write lock), so the process ends on
 * one of the two choices with that choice's bases, never a mix.  Nobody
 * else allocates in an mm being exec'd.
 */
static DEFINE_RAW_SPINLOCK(fmm_layout_lock);

/*
 * vm.flexmmap_layout and layout= (control.c): read at each exec.  Defined
 * here, below the control files that set it, so policy calls nothing above.
 */
int fmm_layout = FLEXMMAP_LAYOUT_AUTO;

/**
 * fmm_exec - choose the new program's layout and NX policy
 * @bprm: the exec
 * @executable_stack: the binary's PT_GNU_STACK request; the NX policy may
 *	change it
 *
 * May not sleep: on a stock kernel it runs in a kprobe handler.
 */
void fmm_exec(struct linux_binprm *bprm, int *executable_stack)
{
	struct mm_struct *mm = current->mm;
	int layout = READ_ONCE(fmm_layout);
	int asked = *executable_stack;
	enum fmm_alloc kernel, want;
	enum fmm_reason why = FMM_REASON_FORCED;
	struct fmm_mark mark = { .layout = FMM_MARK_NONE };
	enum fmm_why cause = FMM_WHY_SYSCTL;

	if (mm) {
		/* On 6.10+ the record of the previous image survives exec. */
		fmm_mm_exec_reset(mm);
		/* The binary's markings (mark.c) beat the sysctls. */
		fmm_mark_take(mm, &mark);
		if (mark.layout != FMM_MARK_NONE) {
			layout = mark.layout;
			cause = FMM_WHY_MARKING;
		}
	}
	/* May change *executable_stack: what the binary asked is read already. */
	fmm_nx_exec(bprm, executable_stack, mark.pax);
	if (!mm) {
		atomic_long_inc(&fmm_stats.exec_kernel);
		return;
	}
	kernel = fmm_mm_alloc(mm);
	want = kernel;
	if (layout == FLEXMMAP_LAYOUT_KERNEL) {
		atomic_long_inc(&fmm_stats.exec_kernel);
		goto out_trace;
	}
	if (kernel != FMM_ALLOC_KERNEL_TOPDOWN &&
	    kernel != FMM_ALLOC_KERNEL_BOTTOMUP) {
		/* Someone else manages this mm; leave it to them. */
		atomic_long_inc(&fmm_stats.exec_unknown);
		goto out_trace;
	}

	switch (layout) {
	case FLEXMMAP_LAYOUT_LEGACY:
		want = FMM_ALLOC_MODULE_BOTTOMUP;
		break;
	case FLEXMMAP_LAYOUT_FLEXIBLE:
		want = FMM_ALLOC_MODULE_TOPDOWN;
		break;
	default:
		/*
		 * The 2004 policy.  The kernel chose bottom-up exactly when the
		 * process has ADDR_COMPAT_LAYOUT or vm.legacy_va_layout is 1;
		 * a binary without PT_GNU_STACK predates the flexible layout.
		 */
		want = fmm_module_alloc(kernel == FMM_ALLOC_KERNEL_BOTTOMUP ||
					asked == EXSTACK_DEFAULT);
		why = FMM_REASON_AUTO;
		if (kernel == FMM_ALLOC_KERNEL_BOTTOMUP)
			cause = FMM_WHY_PERSONALITY;
		else if (asked == EXSTACK_DEFAULT)
			cause = FMM_WHY_NO_GNU_STACK;
		break;
	}

	raw_spin_lock(&fmm_layout_lock);
	/*
	 * Unload must find every mm it has to reset: track it first, under
	 * the lock a retarget holds while it adds or removes this mm.
	 */
	if (!fmm_track_add(mm)) {
		raw_spin_unlock(&fmm_layout_lock);
		atomic_long_inc(&fmm_stats.fallback);
		want = kernel;
		goto out_trace;
	}
	/* A retarget that came first has chosen: it stands. */
	if (fmm_mm_alloc(mm) == kernel) {
		fmm_mm_set_bases(mm, fmm_alloc_is_bottomup(want),
				 kernel == FMM_ALLOC_KERNEL_BOTTOMUP,
				 &bprm->rlim_stack);
		fmm_mm_set_alloc(mm, want, why);
	}
	raw_spin_unlock(&fmm_layout_lock);
	if (fmm_alloc_is_bottomup(want))
		atomic_long_inc(&fmm_stats.exec_legacy);
	else
		atomic_long_inc(&fmm_stats.exec_flexible);
out_trace:
	/* Guarded: the record is read (a call) only while the event is on. */
	if (trace_exec_layout_enabled())
		trace_exec_layout(layout, want, cause,
				  fmm_mm_nx(mm) & FMM_NX_MODE);
}

NOKPROBE_SYMBOL(fmm_exec);

/*
 * The kprobe pre-handler on setup_arg_pages(bprm, stack_top,
 * executable_stack) of a stock kernel (layout-kprobe.c, layout-ftrace.c).
 */
int fmm_exec_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct linux_binprm *bprm = (void *)fmm_regs_get_argument(regs, 0);
	int executable_stack = (int)fmm_regs_get_argument(regs, 2);
	int asked = executable_stack;

	fmm_exec(bprm, &executable_stack);
	/* The NX policy may refuse what the binary asked: the third argument. */
	if (executable_stack != asked)
		fmm_regs_set_argument(regs, 2, executable_stack);
	return 0;
}

NOKPROBE_SYMBOL(fmm_exec_pre);

/*
 * How long a retarget waits for its target's mmap lock.  Any user can hold
 * their own mmap lock for ever (a fault on a FUSE file that never answers,
 * inside access_remote_vm()), and rmmod waits for a retarget in progress
 * when it removes the sysctl: an unbounded wait here would be one in rmmod.
 * So it polls and never queues; a busy mm leaves the lock free only in short
 * gaps, so the polls are frequent (every 0.5-1 ms: about 2000-4000 tries).
 */
#define FMM_RETARGET_LOCK_MS 2000

static int fmm_mmap_write_lock_bounded(struct mm_struct *mm)
{
	unsigned long end = jiffies + msecs_to_jiffies(FMM_RETARGET_LOCK_MS);

	while (!fmm_mmap_write_trylock(mm)) {
		if (fatal_signal_pending(current))
			return -EINTR;
		if (time_after(jiffies, end))
			return -EAGAIN;
		usleep_range(500, 1000);
	}
	return 0;
}

/*
 * fmm_retarget() without its trace event; *@from and *@to are set to the
 * names of the allocators it was on and is to go to, each once known.
 */
static int fmm_retarget_mm(pid_t nr, int layout, const char **from,
			   const char **to)
{
	struct task_struct *task;
	struct rlimit rlim = {};
	enum fmm_reason why = FMM_REASON_NONE;
	enum fmm_alloc cur, want;
	struct mm_struct *mm;
	struct pid *pid;
	unsigned int personality;
	bool randomize;
	int ret = 0;

	if (layout != FLEXMMAP_LAYOUT_KERNEL &&
	    layout != FLEXMMAP_LAYOUT_LEGACY &&
	    layout != FLEXMMAP_LAYOUT_FLEXIBLE)
		return -EINVAL;
	/* The module's allocators are known now, the kernel's once cur is. */
	want = fmm_module_alloc(layout == FLEXMMAP_LAYOUT_LEGACY);
	if (layout != FLEXMMAP_LAYOUT_KERNEL)
		*to = fmm_alloc_name(want);
	pid = find_get_pid(nr);
	task = get_pid_task(pid, PIDTYPE_PID);
	put_pid(pid);
	if (!task)
		return -ESRCH;
	if (task->flags & PF_KTHREAD) {
		put_task_struct(task);
		return -EINVAL;
	}
	mm = get_task_mm(task);
	randomize = task->flags & PF_RANDOMIZE;
	/* The target's 32-bit task size (setarch --3gb), not the writer's. */
	personality = READ_ONCE(task->personality);
	/* The whole limit: x86's gap rule reads the soft one, parisc's the hard. */
	rlim.rlim_cur = task_rlimit(task, RLIMIT_STACK);
	rlim.rlim_max = task_rlimit_max(task, RLIMIT_STACK);
	put_task_struct(task);
	if (!mm)
		return -ESRCH;

	ret = fmm_mmap_write_lock_bounded(mm);
	if (ret) {
		mmput(mm);
		return ret;
	}
	raw_spin_lock(&fmm_layout_lock);
	cur = fmm_mm_alloc(mm);
	*from = fmm_alloc_name(cur);
	if (cur == FMM_ALLOC_OTHER) {
		ret = -EBUSY;
		goto out_unlock;
	}
	if (layout == FLEXMMAP_LAYOUT_KERNEL) {
		want = fmm_kernel_of(cur);
		*to = fmm_alloc_name(want);
	} else {
		why = FMM_REASON_FORCED;
		/* Unload must find it: track it before pointing it at us. */
		if (!fmm_alloc_is_module(cur) && !fmm_track_add(mm)) {
			ret = -ENOMEM;
			goto out_unlock;
		}
		fmm_mm_retarget_bases(mm, fmm_alloc_is_bottomup(want), &rlim,
				      randomize, personality);
	}
	fmm_mm_set_alloc(mm, want, why);
	/* Only once it no longer points at us may it leave the set. */
	if (fmm_alloc_is_module(cur) && !fmm_alloc_is_module(want))
		fmm_track_del(mm);
	atomic_long_inc(&fmm_stats.retarget);
out_unlock:
	raw_spin_unlock(&fmm_layout_lock);
	mmap_write_unlock(mm);
	mmput(mm);
	return ret;
}

/**
 * fmm_retarget - switch a running process's allocator for its future mmaps
 * @nr: the process, as a PID in the caller's namespace
 * @layout: FLEXMMAP_LAYOUT_KERNEL, _LEGACY or _FLEXIBLE
 *
 * Existing mappings never move; only where the next ones go changes.  The
 * bases are set for the new direction: the legacy base, or the 2004 gap
 * rule below the stack with the task's stack rlimit as it is now.  "kernel"
 * puts the process back on the kernel's allocator of the direction it has.
 *
 * Return: 0, -ESRCH (no such process, or it has no mm: exiting or a zombie
 * leader), -EINVAL (a kernel thread, or a bad layout), -EBUSY (another
 * module manages the mm), -EAGAIN (its mmap lock stayed held for
 * FMM_RETARGET_LOCK_MS), -ENOMEM, -EINTR.  Unload cannot run meanwhile: it
 * removes the sysctl first, which waits for this write to return; so this
 * write waits for no user for long (see fmm_mmap_write_lock_bounded()).
 * Each request, refused or not, is a retarget trace event.
 */
int fmm_retarget(pid_t nr, int layout)
{
	/* "-": a refusal before the allocator was known. */
	const char *from = "-", *to = "-";
	int ret = fmm_retarget_mm(nr, layout, &from, &to);

	trace_retarget(nr, from, to, ret);
	return ret;
}
