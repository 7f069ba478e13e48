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
#include <linux/kprobes.h>
#include <linux/seq_file.h>
#include "fmm.h"

/*
 * Every probe's pre-handler.  Our probes sit on fentry calls, so
 * kprobes runs them from ftrace (ORIG_RAX 0).  Entered from an int3
 * instead (ORIG_RAX -1: a stale one under QEMU TCG, docs/qemu-int3.md),
 * finish as kprobe_ftrace_handler() does: resume after the fentry call.
 */
static int fmm_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct fmm_probe *h = container_of(p, struct fmm_probe, kp);
	int ret = h->pre(p, regs);

	if (ret || !kprobe_ftrace(p) || regs->orig_ax != -1)
		return ret;
	atomic_long_inc(&fmm_stats.stray_int3);
	instruction_pointer_set(regs,
				(unsigned long)p->addr + MCOUNT_INSN_SIZE);
	return 1;
}

NOKPROBE_SYMBOL(fmm_kprobe_pre);

static int fmm_probe_install(struct fmm_probe *h)
{
	int ret;

	if (h->absent)
		return 0;
	/* A kprobe must be cleared before it can be registered again. */
	memset(&h->kp, 0, sizeof(h->kp));
	h->kp.symbol_name = h->symbol;
	h->kp.pre_handler = fmm_kprobe_pre;
	ret = register_kprobe(&h->kp);
	if (ret) {
		pr_err("cannot hook %s (%d)\n", h->symbol, ret);
		return ret;
	}
	h->installed = true;
	return 0;
}

static void fmm_probe_remove(struct fmm_probe *h)
{
	if (!h->installed)
		return;
	unregister_kprobe(&h->kp);
	if (h->kp.nmissed)
		pr_warn("%s: %lu hit(s) missed\n", h->symbol, h->kp.nmissed);
	h->installed = false;
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
	int i;

	for (i = 0; i < n; i++) {
		if (probes[i].absent)
			continue;
		seq_printf(m, "missed_%s %lu\n", probes[i].symbol,
			   probes[i].kp.nmissed);
	}
}
