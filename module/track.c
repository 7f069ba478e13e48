// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: which mms point at module code, and how unload finds them all.
 *
 * Every mm put on a module allocator, at exec, by fork or by a retarget, is
 * in a hash set; exit_mmap() takes it out.  The set, not the task list, is
 * what unload walks: it covers zombie leaders, threads and children not yet
 * on the task list alike.
 *
 * Fork, exit and mm_init() reach the set through the probes of
 * layout-kprobe.c, which also explains how a child is brought in line.
 *
 * Unload (main.c, through layout-kprobe.c, calls these in order, once the
 * control files and the exec hook are gone, so no exec and no retarget can
 * add an mm):
 *  1. fmm_track_begin_unload(): the flag, then synchronize_rcu(): probe
 *     handlers run with preemption off, so every later one sees the flag
 *     and every earlier one has finished (its mm is in the set).
 *  2. fmm_track_drain(): each mm of the set is pointed back at the kernel's
 *     allocator of its direction with a single WRITE_ONCE(), without its
 *     mmap lock, so no user can make unload wait: a process that holds
 *     its own mmap lock for ever (a fault on a FUSE file that never
 *     answers, inside access_remote_vm()) does not hold rmmod.  A task may
 *     still be running our code: it read the old pointer just before.
 *  3. synchronize_rcu_tasks(), in main.c: every caller of
 *     mm->get_unmapped_area reads the pointer and calls it with no
 *     voluntary sleep in between (6.1's get_unmapped_area(),
 *     shmem_get_unmapped_area(), thp_get_unmapped_area()), our allocators
 *     never sleep, nor does the hugetlb redirect (layout-kprobe.c) or the
 *     W^X deny stubs, and dup_mm() has none between its memcpy() and
 *     mm_init().  So once every task has
 *     passed a voluntary context switch, none is in module text or about
 *     to jump there, and no unfixed child is left.  Tasks asleep (in D
 *     state included) count as having switched: the wait is bounded by
 *     the longest run of module code, not by what users do.
 *  4. The probes go (layout-kprobe.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/hash.h>
#include <linux/list.h>
#include <linux/log2.h>
#include <linux/rcupdate.h>
#include <linux/mm.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/thread_info.h>
#include "fmm.h"

struct fmm_mm {
	struct hlist_node node;
	struct mm_struct *mm;
};

/*
 * The set's entries and its hash buckets are allocated once, at load
 * (fmm_track_init()): the probe handlers that add to it run with
 * preemption off and may not allocate, on PREEMPT_RT not even with
 * GFP_ATOMIC (the slab allocator's locks sleep there).  For the same
 * reason the lock is a raw spinlock, taken with interrupts off around
 * list operations only.  By default there are as many entries as the
 * kernel's default threads-max (fork.c's set_max_threads(): RAM / (8 *
 * THREAD_SIZE)), and every tracked mm has a live task, so the set fills
 * only after the kernel's own limit would have; an mm that finds no free
 * entry stays on the kernel's allocator (counted as a fallback).
 */
int fmm_track_max;
static struct fmm_mm *fmm_pool;
static HLIST_HEAD(fmm_free);
static struct hlist_head *fmm_mms;
static unsigned int fmm_hash_bits;
static DEFINE_RAW_SPINLOCK(fmm_mms_lock);
static unsigned long fmm_mms_count;
static bool fmm_unloading;

/* From the backend's install, before any probe can add to the set. */
int fmm_track_init(void)
{
	u64 ram = (u64)totalram_pages() << PAGE_SHIFT;
	int i;

	if (!fmm_track_max)
		fmm_track_max = clamp_t(u64, div64_u64(ram, 8 * THREAD_SIZE),
					FMM_TRACK_MAX_MIN, FMM_TRACK_MAX_MAX);
	/* About two entries per bucket. */
	fmm_hash_bits = max(ilog2(fmm_track_max) - 1, 4);
	fmm_mms = kvcalloc(1U << fmm_hash_bits, sizeof(*fmm_mms), GFP_KERNEL);
	fmm_pool = kvcalloc(fmm_track_max, sizeof(*fmm_pool), GFP_KERNEL);
	if (!fmm_mms || !fmm_pool) {
		fmm_track_exit();
		return -ENOMEM;
	}
	for (i = 0; i < fmm_track_max; i++)
		hlist_add_head(&fmm_pool[i].node, &fmm_free);
	return 0;
}

/* Once no probe can run any more (after fmm_track_drain()). */
void fmm_track_exit(void)
{
	INIT_HLIST_HEAD(&fmm_free);
	kvfree(fmm_pool);
	fmm_pool = NULL;
	kvfree(fmm_mms);
	fmm_mms = NULL;
}

static struct hlist_head *fmm_bucket(struct mm_struct *mm)
{
	return &fmm_mms[hash_ptr(mm, fmm_hash_bits)];
}

static struct fmm_mm *fmm_find_locked(struct mm_struct *mm)
{
	struct fmm_mm *e;

	hlist_for_each_entry(e, fmm_bucket(mm), node)
		if (e->mm == mm)
			return e;
	return NULL;
}

static void fmm_put_locked(struct fmm_mm *e)
{
	hlist_del(&e->node);
	e->mm = NULL;
	hlist_add_head(&e->node, &fmm_free);
	WRITE_ONCE(fmm_mms_count, fmm_mms_count - 1);
}

static void fmm_track_full(void)
{
	/* clang-format off */
	pr_warn_once("more than track_max=%d processes on the module's allocators: the rest stay on the kernel's\n",
		     fmm_track_max);
	/* clang-format on */
}

/*
 * Called from probe handlers (preemption off, no sleeping, no allocation)
 * and from re-targeting.  Refused once unload has begun: checked under
 * the lock the unload's walk takes, so an mm added here is always seen by
 * that walk.
 */
bool fmm_track_add(struct mm_struct *mm)
{
	unsigned long flags;
	struct fmm_mm *e;
	bool ret = true;

	raw_spin_lock_irqsave(&fmm_mms_lock, flags);
	if (READ_ONCE(fmm_unloading)) {
		ret = false;
	} else if (!fmm_find_locked(mm)) {
		e = hlist_entry_safe(fmm_free.first, struct fmm_mm, node);
		if (e) {
			hlist_del(&e->node);
			e->mm = mm;
			hlist_add_head(&e->node, fmm_bucket(mm));
			WRITE_ONCE(fmm_mms_count, fmm_mms_count + 1);
		} else {
			ret = false;
		}
	}
	raw_spin_unlock_irqrestore(&fmm_mms_lock, flags);
	if (!ret && !READ_ONCE(fmm_unloading))
		fmm_track_full();
	return ret;
}

bool fmm_track_del(struct mm_struct *mm)
{
	unsigned long flags;
	struct fmm_mm *e;

	raw_spin_lock_irqsave(&fmm_mms_lock, flags);
	e = fmm_find_locked(mm);
	if (e)
		fmm_put_locked(e);
	raw_spin_unlock_irqrestore(&fmm_mms_lock, flags);
	return e;
}

unsigned long fmm_track_count(void)
{
	return READ_ONCE(fmm_mms_count);
}

/* Has unload begun?  A fork that could not join the set is no fallback. */
bool fmm_track_unloading(void)
{
	return READ_ONCE(fmm_unloading);
}

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

/*
 * Put every tracked mm back on the kernel's allocator, without its mmap
 * lock (see the top of this file); main.c then waits until no task can be
 * in module text.  Bounded: it waits for no user's lock.  An mm in the set
 * is alive (exit_mmap() takes it out, under the set's lock, before the mm
 * can be freed), so the walk needs no reference.
 */
void fmm_track_drain(void)
{
	unsigned long flags, reset = 0;
	struct hlist_node *tmp;
	struct fmm_mm *e;
	enum fmm_alloc a;
	unsigned int b, n;

	/*
	 * A bucket at a time, so interrupts are never off for long (a
	 * latency on PREEMPT_RT): no mm joins the set any more, and exit's
	 * removals take the same lock.
	 */
	for (b = 0; b < 1U << fmm_hash_bits; b++) {
		n = 0;
		raw_spin_lock_irqsave(&fmm_mms_lock, flags);
		hlist_for_each_entry_safe(e, tmp, &fmm_mms[b], node) {
			a = fmm_mm_alloc(e->mm);
			if (fmm_alloc_is_module(a))
				fmm_mm_set_alloc(e->mm, fmm_kernel_of(a),
						 FMM_REASON_NONE);
			fmm_put_locked(e);
			n++;
		}
		raw_spin_unlock_irqrestore(&fmm_mms_lock, flags);
		reset += n;
		cond_resched();
	}
	if (reset)
		pr_info("%lu process(es) put back on the kernel's allocators\n",
			reset);
}
