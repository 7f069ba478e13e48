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
 * When the kernel has this bug, and pae_nx= is not 0, one kprobe on
 * vm_get_page_prot() sends each call to fmm_pae_nx_page_prot() below,
 * which returns the kernel's own value with NX where the kernel meant it:
 * the table is the kernel's answers for the 16 combinations of VM_READ,
 * VM_WRITE, VM_EXEC and VM_SHARED, read at load, plus _PAGE_NX for the
 * present, non-executable ones (the PAGE_* values of protection_map[]
 * without _EXEC carry it).  On 32-bit nothing else enters the result
 * (protection keys and memory encryption are 64-bit only).
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
 * It applies to mappings made or mprotect()ed while the module is loaded,
 * which keep NX after unload; mappings made before the load stay
 * executable until mprotect()ed, or the process execs.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/seq_file.h>
#include "fmm.h"

/* pae_nx= (control.c): 0 leaves the kernel's vm_get_page_prot() alone. */
bool fmm_pae_nx_enable = true;

#define FMM_PROT_BITS (VM_READ | VM_WRITE | VM_EXEC | VM_SHARED)

static pteval_t fmm_pae_prot[FMM_PROT_BITS + 1] __ro_after_init;
static const char *fmm_pae_nx_state = "kernel";

/* Runs instead of vm_get_page_prot(), with its argument and caller. */
static noinline pgprot_t fmm_pae_nx_page_prot(unsigned long vm_flags)
{
	return __pgprot(fmm_pae_prot[vm_flags & FMM_PROT_BITS]);
}

static int fmm_pae_nx_pre(struct kprobe *p, struct pt_regs *regs)
{
	instruction_pointer_set(regs, (unsigned long)fmm_pae_nx_page_prot);
	return 1;
}

NOKPROBE_SYMBOL(fmm_pae_nx_pre);

static struct fmm_probe fmm_pae_nx_probes[] = {
	{ .symbol = "vm_get_page_prot",
	  .pre = fmm_pae_nx_pre,
	  .moves_ip = true,
	  .absent = !IS_ENABLED(CONFIG_X86_PAE) },
};

/*
 * Read the kernel's table; arm the probe if it drops NX somewhere.  Not
 * armed (state "kernel") on a kernel that keeps NX, or whose CPU has none.
 */
int fmm_pae_nx_init(void)
{
	bool differs = false;
	unsigned long i;
	pteval_t val;
	int ret;

	if (!fmm_pae_nx_enable) {
		fmm_pae_nx_state = "off";
		return 0;
	}
	for (i = 0; i <= FMM_PROT_BITS; i++) {
		val = pgprot_val(vm_get_page_prot(i));
		if (!(i & VM_EXEC) && (val & _PAGE_PRESENT) &&
		    (__supported_pte_mask & _PAGE_NX) && !(val & _PAGE_NX)) {
			val |= _PAGE_NX;
			differs = true;
		}
		fmm_pae_prot[i] = val;
	}
	if (!differs)
		return 0;
	if (!IS_ENABLED(CONFIG_X86_PAE)) {
		/* The table holds all of the result on 32-bit PAE only. */
		pr_warn("vm_get_page_prot() drops NX on this kernel; not corrected here\n");
		return 0;
	}
	ret = fmm_probes_install(fmm_pae_nx_probes,
				 ARRAY_SIZE(fmm_pae_nx_probes));
	if (ret)
		return ret;
	fmm_pae_nx_state = "fixed";
	pr_info("this kernel's vm_get_page_prot() drops NX: set again for mappings made from now on\n");
	return 0;
}

/* Before the unload's RCU-tasks grace period: a task may be in the stub. */
void fmm_pae_nx_exit(void)
{
	fmm_probes_remove(fmm_pae_nx_probes, ARRAY_SIZE(fmm_pae_nx_probes));
}

void fmm_pae_nx_show(struct seq_file *m)
{
	seq_printf(m, "pae_nx %s\n", fmm_pae_nx_state);
}

void fmm_pae_nx_probes_show(struct seq_file *m)
{
	fmm_probes_show_missed(m, fmm_pae_nx_probes,
			       ARRAY_SIZE(fmm_pae_nx_probes));
}
