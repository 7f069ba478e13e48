// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: which mms point at module code, and how unload finds them all.
 *
 * Every mm put on a module allocator, at exec or by fork, is in a hash set;
 * exit_mmap() takes it out.  The set, not the task list, is what unload
 * walks: it covers zombie leaders, threads and children not yet on the task
 * list alike.
 *
 * The race unload must close is fork: dup_mm() memcpy()s the parent's mm,
 * pointer included, without any lock, and only later, in dup_mmap() under
 * the parent's mmap lock, does uprobe_dup_mmap() give us the child.  So:
 *  - mm_init(), called right after the memcpy(), counts a child that copied
 *    a module pointer as "in flight" (or, once unload began, puts it back on
 *    the kernel's allocator at once);
 *  - uprobe_dup_mmap() (parent locked) makes the child follow its parent and
 *    ends the flight; exit_mmap() ends it for a fork that failed in between;
 *  - unload stops new arrivals, waits for the in-flight count to drain,
 *    resets every tracked mm under its mmap lock, and waits an RCU-tasks
 *    grace period before removing the probes: the memcpy() -> mm_init()
 *    window has no voluntary sleep, so a fork caught in it is through our
 *    mm_init() probe once the grace period ends.
 * Every caller of mm->get_unmapped_area holds the mmap lock, so once an mm
 * has been reset under its write lock no task is inside our allocators.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/hashtable.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/delay.h>
#include "fmm.h"

#define FMM_HASH_BITS 10

struct fmm_mm {
	struct hlist_node node;
	struct mm_struct *mm;
};

static DEFINE_HASHTABLE(fmm_mms, FMM_HASH_BITS);
static DEFINE_SPINLOCK(fmm_mms_lock);
static unsigned long fmm_mms_count;
static bool fmm_unloading;

static struct fmm_mm *fmm_find_locked(struct mm_struct *mm)
{
	struct fmm_mm *e;

	hash_for_each_possible(fmm_mms, e, node, (unsigned long)mm)
		if (e->mm == mm)
			return e;
	return NULL;
}

/*
 * Called from probe handlers (atomic context, no sleeping) and from
 * re-targeting.  Refused once unload has begun: checked under the lock the
 * unload's walk takes, so an mm added here is always seen by that walk.
 */
bool fmm_track_add(struct mm_struct *mm)
{
	struct fmm_mm *e = kmalloc(sizeof(*e), GFP_ATOMIC | __GFP_NOWARN);
	unsigned long flags;

	if (!e)
		return false;
	e->mm = mm;
	spin_lock_irqsave(&fmm_mms_lock, flags);
	if (READ_ONCE(fmm_unloading)) {
		spin_unlock_irqrestore(&fmm_mms_lock, flags);
		kfree(e);
		return false;
	}
	if (fmm_find_locked(mm)) {
		spin_unlock_irqrestore(&fmm_mms_lock, flags);
		kfree(e);
		return true;
	}
	hash_add(fmm_mms, &e->node, (unsigned long)mm);
	fmm_mms_count++;
	spin_unlock_irqrestore(&fmm_mms_lock, flags);
	return true;
}

bool fmm_track_del(struct mm_struct *mm)
{
	unsigned long flags;
	struct fmm_mm *e;

	spin_lock_irqsave(&fmm_mms_lock, flags);
	e = fmm_find_locked(mm);
	if (e) {
		hash_del(&e->node);
		fmm_mms_count--;
	}
	spin_unlock_irqrestore(&fmm_mms_lock, flags);
	kfree(e);
	return e;
}

bool fmm_track_unloading(void)
{
	return READ_ONCE(fmm_unloading);
}

unsigned long fmm_track_count(void)
{
	return READ_ONCE(fmm_mms_count);
}

/* mm_init(mm, owner, user_ns): the child of dup_mm(), just memcpy()d. */
int fmm_mm_init_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *mm = (void *)regs_get_kernel_argument(regs, 0);
	enum fmm_alloc a = fmm_mm_alloc(mm);

	if (!fmm_alloc_is_module(a))
		return 0;
	if (READ_ONCE(fmm_unloading)) {
		/* Nobody can use the child yet: no lock needed. */
		fmm_mm_set_alloc(mm, fmm_kernel_of(a));
		atomic_long_inc(&fmm_stats.fork_fixup);
		return 0;
	}
	atomic_inc(&fmm_stats.forks_inflight);
	return 0;
}

NOKPROBE_SYMBOL(fmm_mm_init_pre);

/* uprobe_dup_mmap(oldmm, newmm), called with oldmm's mmap lock held. */
int fmm_dup_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *oldmm = (void *)regs_get_kernel_argument(regs, 0);
	struct mm_struct *newmm = (void *)regs_get_kernel_argument(regs, 1);
	enum fmm_alloc parent = fmm_mm_alloc(oldmm);
	enum fmm_alloc child = fmm_mm_alloc(newmm);
	enum fmm_alloc want = parent;

	fmm_nx_fork(oldmm, newmm);
	if (fmm_alloc_is_module(child))
		atomic_dec(&fmm_stats.forks_inflight);
	if (fmm_alloc_is_module(parent)) {
		if (READ_ONCE(fmm_unloading)) {
			want = fmm_kernel_of(parent);
		} else if (!fmm_track_add(newmm)) {
			want = fmm_kernel_of(parent);
			atomic_long_inc(&fmm_stats.fallback);
		}
	}
	if (want == child && fmm_alloc_is_module(want)) {
		atomic_long_inc(&fmm_stats.fork_inherit);
		return 0;
	}
	if (want != child) {
		/* The parent changed (reset, retargeted) since the memcpy(). */
		atomic_long_inc(&fmm_stats.fork_fixup);
		if (want == FMM_ALLOC_OTHER)
			WRITE_ONCE(newmm->get_unmapped_area,
				   READ_ONCE(oldmm->get_unmapped_area));
		else
			fmm_mm_set_alloc(newmm, want);
	}
	return 0;
}

NOKPROBE_SYMBOL(fmm_dup_pre);

/* exit_mmap(mm): the mm is going away. */
int fmm_exit_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct mm_struct *mm = (void *)regs_get_kernel_argument(regs, 0);

	if (fmm_track_del(mm))
		return 0;
	/* A fork that failed between mm_init() and uprobe_dup_mmap(). */
	if (fmm_alloc_is_module(fmm_mm_alloc(mm)))
		atomic_dec(&fmm_stats.forks_inflight);
	return 0;
}

NOKPROBE_SYMBOL(fmm_exit_pre);

/*
 * From now on no mm joins the set and every child that copied a module
 * pointer goes back to the kernel's allocator.  The exec hook must already
 * be gone.  Probe handlers run with preemption disabled, so after
 * synchronize_rcu() all of them see the flag.
 */
void fmm_track_begin_unload(void)
{
	WRITE_ONCE(fmm_unloading, true);
	synchronize_rcu();
}

/* Take one tracked mm, pinned, or NULL when the set is empty. */
static struct mm_struct *fmm_track_first(void)
{
	struct mm_struct *mm = NULL;
	unsigned long flags;
	struct fmm_mm *e;
	int bkt;

	spin_lock_irqsave(&fmm_mms_lock, flags);
	hash_for_each(fmm_mms, bkt, e, node) {
		mm = e->mm;
		/* exit_mmap() has not removed it, so mm_count is not zero. */
		mmgrab(mm);
		break;
	}
	spin_unlock_irqrestore(&fmm_mms_lock, flags);
	return mm;
}

/* Put every tracked mm back on the kernel's allocator; may sleep. */
void fmm_track_drain(void)
{
	unsigned long waited = 0, reset = 0;
	struct mm_struct *mm;
	enum fmm_alloc a;

	/* Forks counted before the flag was seen finish in dup_mmap(). */
	while (atomic_read(&fmm_stats.forks_inflight) > 0) {
		msleep(20);
		if (++waited % 500 == 0)
			pr_warn("unload waits for %d fork(s) in flight\n",
				atomic_read(&fmm_stats.forks_inflight));
	}

	while ((mm = fmm_track_first())) {
		mmap_write_lock(mm);
		a = fmm_mm_alloc(mm);
		if (fmm_alloc_is_module(a))
			fmm_mm_set_alloc(mm, fmm_kernel_of(a));
		mmap_write_unlock(mm);
		/* Only now may exit_mmap() of this mm stop seeing it tracked. */
		fmm_track_del(mm);
		mmdrop(mm);
		reset++;
		cond_resched();
	}
	synchronize_rcu_tasks();
	if (reset)
		pr_info("%lu process(es) put back on the kernel's allocators\n",
			reset);
}
