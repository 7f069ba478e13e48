// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: tables of kprobes (struct fmm_probe), installed all or nothing
 * and removed in reverse order, with their missed_ counters.  Used by the
 * layout hooks of a stock kernel (layout-kprobe.c, layout-ftrace.c) and the W^X
 * probes (wx.c); it calls nothing of the module's above it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ftrace.h>
#include <linux/kmemleak.h>
#include <linux/kprobes.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include "fmm.h"

/*
 * A kprobe lives in memory of its own, not in the table.  unregister_kprobe()
 * can fail: a kprobe on an fentry call is disarmed through
 * ftrace_set_filter_ip(), which allocates, and on -ENOMEM the kernel warns,
 * clears kp.addr and leaves the kprobe in its hash table (seen under fault
 * injection, 64-fault-inject.sh).  It never fires again (no address matches
 * NULL), but the kernel walks that table on every module load: the kprobe's
 * memory must outlive the module, so such a kprobe is left allocated.
 */
struct fmm_kprobe {
	struct kprobe kp;
	struct fmm_probe *probe;
};

/* Guards each fmm_probe's @kp and @missed against the stats reader. */
static DEFINE_MUTEX(fmm_probes_mutex);

/*
 * Every probe's pre-handler.  Our probes sit on fentry calls, so
 * kprobes runs them from ftrace.  Entered from an int3 instead (on x86,
 * a stale one under QEMU TCG, docs/qemu-int3.md: fmm_regs_stray_int3()),
 * finish as kprobe_ftrace_handler() does: resume after the fentry call.
 */
static int fmm_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct fmm_probe *h = container_of(p, struct fmm_kprobe, kp)->probe;
	int ret = h->pre(p, regs);

	if (ret || !kprobe_ftrace(p) || !fmm_regs_stray_int3(regs))
		return ret;
	atomic_long_inc(&fmm_stats.stray_int3);
	instruction_pointer_set(regs,
				(unsigned long)p->addr + MCOUNT_INSN_SIZE);
	return 1;
}

NOKPROBE_SYMBOL(fmm_kprobe_pre);

/*
 * A kprobe on a function without an fentry call (one built without -pg,
 * as vm_get_page_prot() is) is an int3, which kprobes then optimizes into
 * a jump to a detour; a detour's pre-handler cannot move the instruction
 * pointer, the call would go on unchanged.  Kprobes never optimizes a
 * kprobe with a post-handler (Documentation/trace/kprobes.rst): this one.
 */
static void fmm_kprobe_post(struct kprobe *p, struct pt_regs *regs,
			    unsigned long flags)
{
}

NOKPROBE_SYMBOL(fmm_kprobe_post);

static int fmm_probe_install(struct fmm_probe *h)
{
	struct fmm_kprobe *k;
	int ret;

	if (h->absent)
		return 0;
	k = kzalloc(sizeof(*k), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	k->probe = h;
	k->kp.symbol_name = h->symbol;
	k->kp.pre_handler = fmm_kprobe_pre;
	if (h->moves_ip)
		k->kp.post_handler = fmm_kprobe_post;
	ret = register_kprobe(&k->kp);
	if (ret) {
		pr_err("cannot hook %s (%d)\n", h->symbol, ret);
		kfree(k);
		return ret;
	}
	mutex_lock(&fmm_probes_mutex);
	h->kp = k;
	mutex_unlock(&fmm_probes_mutex);
	return 0;
}

static void fmm_probe_remove(struct fmm_probe *h)
{
	struct fmm_kprobe *k = h->kp;

	if (!k)
		return;
	unregister_kprobe(&k->kp);
	mutex_lock(&fmm_probes_mutex);
	h->kp = NULL;
	h->missed += k->kp.nmissed;
	mutex_unlock(&fmm_probes_mutex);
	if (k->kp.nmissed)
		pr_warn("%s: %lu hit(s) missed\n", h->symbol, k->kp.nmissed);
	if (!k->kp.addr) {
		pr_err("%s: the kernel could not remove our kprobe; its %zu bytes stay allocated\n",
		       h->symbol, sizeof(*k));
		kmemleak_not_leak(k);
		return;
	}
	kfree(k);
}

/* Install probes[0..n) in order, all or nothing. */
int fmm_probes_install(struct fmm_probe *probes, int n)
{
	int i, ret;

	for (i = 0; i < n; i++) {
		ret = fmm_probe_install(&probes[i]);
		if (ret)
			goto out_remove;
	}
	return 0;

out_remove:
	while (--i >= 0)
		fmm_probe_remove(&probes[i]);
	return ret;
}

/* Remove probes[0..n) in reverse order. */
void fmm_probes_remove(struct fmm_probe *probes, int n)
{
	while (--n >= 0)
		fmm_probe_remove(&probes[n]);
}

/* Remove the last of probes[0..n) alone: the exec hook, first to go. */
void fmm_probes_remove_last(struct fmm_probe *probes, int n)
{
	fmm_probe_remove(&probes[n - 1]);
}

/* For /proc/flexmmap/stats: probe hits missed (re-entrancy), per probe. */
void fmm_probes_show_missed(struct seq_file *m, struct fmm_probe *probes, int n)
{
	unsigned long missed;
	int i;

	for (i = 0; i < n; i++) {
		if (probes[i].absent)
			continue;
		mutex_lock(&fmm_probes_mutex);
		missed = probes[i].missed;
		if (probes[i].kp)
			missed += probes[i].kp->kp.nmissed;
		mutex_unlock(&fmm_probes_mutex);
		seq_printf(m, "missed_%s %lu\n", probes[i].symbol, missed);
	}
}
