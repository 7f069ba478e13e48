// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: user-space NX on a 32-bit PAE kernel (Debian 12's 686-pae).
 *
 * Since 6.0 (protection_map[] moved into arch/x86/mm/pgprot.c), x86's
 * vm_get_page_prot() computes the protection in an unsigned long.  On a
 * 32-bit PAE kernel that is 32 bits and the NX bit is bit 63: it is lost,
 * every user mapping is executable whatever its VMA says, and the kernel
 * still reports "NX (Execute Disable) protection: active".  Our NX policy
 * (nx.c, wx.c) means nothing on such a kernel, and neither does the
 * kernel's own: a non-executable stack runs code.
 *
 * When the kernel has this bug, a kretprobe on vm_get_page_prot() adds
 * _PAGE_NX to its result where the kernel meant it: the kernel's answers
 * for the 16 combinations of VM_READ, VM_WRITE, VM_EXEC and VM_SHARED are
 * read at load, and those that are present and not executable get NX (the
 * PAGE_* values of protection_map[] without _EXEC carry it).  On 32-bit
 * nothing else enters the result (protection keys and memory encryption
 * are 64-bit only).  The function has no fentry call, so the kprobe under
 * the kretprobe is an int3 that kprobes turns into a jump; a kprobe that
 * sent the call elsewhere would have to stay an int3 (probe.c, moves_ip).
 * Either costs about the same under TCG: the kretprobe keeps the kernel's
 * own computation.  Calls whose result needs no NX take no return hook.
 * The kretprobe has instances for four times the CPUs (a call does not
 * sleep); a call that finds none keeps the kernel's value and is counted in
 * missed_vm_get_page_prot.
 *
 * When (pae_nx=):
 *	0	never: the kernel's behaviour ("off")
 *	1	with the NX policy (the default): armed the first time a mode
 *		other than 0 is set (nx= at load, a vm.flexmmap_nx write,
 *		or the exec of a binary marked M), by nx.c under its mutex
 *		before that mode can apply to anyone, and kept until unload;
 *		until then "standby", and mode 0 is the kernel's own
 *		behaviour, NX bug included
 *	2	from load, whatever the mode
 * Each hooked call costs a kprobe and a return trampoline, about 5 us of
 * an exec's 220 under TCG's instruction clock, twice the rest of the
 * module (docs/i386-guest.md): the default makes no exec pay for a policy
 * nobody asked for.
 *
 * Not corrected: the same truncation is in x86's pte_flags_need_flush()
 * (unsigned long flags), so mprotect() taking PROT_EXEC away, which
 * changes only NX, makes no TLB flush: a page that has run code can run it
 * until the mm's next flush (a switch to another mm, on 32-bit).  The TLB
 * flush functions are hidden from modules (asm/tlbflush.h, !MODULE).
 * Only an NX-only change escapes the flush (rwx to rw, rx to r): under
 * nx=3 no page is writable and executable at once, and making one
 * writable changes RW too, which is flushed.
 *
 * It applies to mappings made or mprotect()ed while it is armed, which
 * keep NX after unload; mappings made before stay executable until
 * mprotect()ed, or the process execs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kmemleak.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include "fmm.h"

/* pae_nx= (control.c): FMM_PAE_NX_OFF, _POLICY (default) or _LOAD. */
int fmm_pae_nx_enable = FMM_PAE_NX_POLICY;

#define FMM_PROT_BITS (VM_READ | VM_WRITE | VM_EXEC | VM_SHARED)

/* Which of vm_get_page_prot()'s answers get NX, by those four bits. */
static bool fmm_pae_nx_add[FMM_PROT_BITS + 1] __ro_after_init;
/* The kernel drops NX and pae_nx= is not 0: fmm_pae_nx_arm() arms. */
static bool fmm_pae_nx_needed __ro_after_init;
static const char *fmm_pae_nx_state = "kernel";
/*
 * Set once armed, until unload (fmm_pae_nx_exit(), after the control files
 * that read it are gone).
 */
static struct kretprobe *fmm_pae_nx_rp;
static unsigned long fmm_pae_nx_missed;

/*
 * Non-zero (no return hook: the kernel's value stands) for the calls whose
 * result needs no NX: executable, or not present.  Saves those calls the
 * return trampoline: text and vdso mappings, PROT_NONE.
 */
static int fmm_pae_nx_entry(struct kretprobe_instance *ri, struct pt_regs *regs)
{
	return !fmm_pae_nx_add[fmm_regs_get_argument(regs, 0) & FMM_PROT_BITS];
}

NOKPROBE_SYMBOL(fmm_pae_nx_entry);

/* i386 returns the 64-bit pgprot_t in edx:eax; NX is bit 31 of edx. */
static int fmm_pae_nx_return(struct kretprobe_instance *ri,
			     struct pt_regs *regs)
{
	regs->dx |= upper_32_bits(_PAGE_NX);
	return 0;
}

NOKPROBE_SYMBOL(fmm_pae_nx_return);

/*
 * Read the kernel's answers: if it drops NX somewhere, "standby", and armed
 * now with pae_nx=2.  Nothing to do (state "kernel") on a kernel that keeps
 * NX, or whose CPU has none.
 */
int fmm_pae_nx_init(void)
{
	bool differs = false;
	unsigned long i;
	pteval_t val;

	if (fmm_pae_nx_enable == FMM_PAE_NX_OFF) {
		fmm_pae_nx_state = "off";
		return 0;
	}
	for (i = 0; i <= FMM_PROT_BITS; i++) {
		val = pgprot_val(vm_get_page_prot(i));
		fmm_pae_nx_add[i] = !(i & VM_EXEC) && (val & _PAGE_PRESENT) &&
				    (__supported_pte_mask & _PAGE_NX) &&
				    !(val & _PAGE_NX);
		differs |= fmm_pae_nx_add[i];
	}
	if (!differs)
		return 0;
	if (!IS_ENABLED(CONFIG_X86_PAE)) {
		/* The return registers above are i386's. */
		pr_warn("vm_get_page_prot() drops NX on this kernel; not corrected here\n");
		return 0;
	}
	fmm_pae_nx_needed = true;
	fmm_pae_nx_state = "standby";
	if (fmm_pae_nx_enable == FMM_PAE_NX_LOAD)
		return fmm_pae_nx_arm();
	pr_info("this kernel's vm_get_page_prot() drops NX: corrected from the first vm.flexmmap_nx mode other than 0\n");
	return 0;
}

/*
 * Arm the correction if this kernel needs it and it is not armed yet.
 * Under nx.c's mutex, or from init before anything else can call it; in
 * process context (registering a kretprobe sleeps).  Fails only where the
 * correction is needed and cannot be made: the caller then refuses the
 * mode that wanted it.
 */
int fmm_pae_nx_arm(void)
{
	struct kretprobe *rp;
	int ret;

	if (!fmm_pae_nx_needed || fmm_pae_nx_rp)
		return 0;
	rp = kzalloc(sizeof(*rp), GFP_KERNEL);
	if (!rp)
		return -ENOMEM;
	rp->kp.symbol_name = "vm_get_page_prot";
	rp->entry_handler = fmm_pae_nx_entry;
	rp->handler = fmm_pae_nx_return;
	rp->maxactive = max(64U, 4 * num_possible_cpus());
	ret = register_kretprobe(rp);
	if (ret) {
		pr_err("cannot hook vm_get_page_prot (%d)\n", ret);
		kfree(rp);
		return ret;
	}
	/* The stats file reads both without the mutex. */
	WRITE_ONCE(fmm_pae_nx_rp, rp);
	WRITE_ONCE(fmm_pae_nx_state, "fixed");
	pr_info("this kernel's vm_get_page_prot() drops NX: set again for mappings made from now on\n");
	return 0;
}

/*
 * After the control files are gone.  unregister_kretprobe() waits for the
 * handlers running; a call still inside vm_get_page_prot() then returns
 * through the kernel's trampoline without calling us.  If the kernel could
 * not remove the kprobe (kp.addr cleared, see probe.c) it stays in its
 * table: its memory must outlive the module.
 */
void fmm_pae_nx_exit(void)
{
	struct kretprobe *rp = fmm_pae_nx_rp;

	if (!rp)
		return;
	unregister_kretprobe(rp);
	fmm_pae_nx_rp = NULL;
	fmm_pae_nx_missed += rp->nmissed + rp->kp.nmissed;
	if (fmm_pae_nx_missed)
		pr_warn("vm_get_page_prot: %lu call(s) kept the kernel's value\n",
			fmm_pae_nx_missed);
	if (!rp->kp.addr) {
		pr_err("vm_get_page_prot: the kernel could not remove our kretprobe; its %zu bytes stay allocated\n",
		       sizeof(*rp));
		kmemleak_not_leak(rp);
		return;
	}
	kfree(rp);
}

void fmm_pae_nx_show(struct seq_file *m)
{
	seq_printf(m, "pae_nx %s\n", READ_ONCE(fmm_pae_nx_state));
}

/* Calls that kept the kernel's value: no free instance, or re-entrancy. */
void fmm_pae_nx_probes_show(struct seq_file *m)
{
	struct kretprobe *rp = READ_ONCE(fmm_pae_nx_rp);

	if (rp)
		seq_printf(m, "missed_vm_get_page_prot %lu\n",
			   fmm_pae_nx_missed + rp->nmissed + rp->kp.nmissed);
}
