/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flexmmap: parisc's registers as the probes read them (fmm.h includes the
 * arch's; regs-x86.h is x86's).  parisc 6.1 has no
 * regs_get_kernel_argument(): the kernel's calling convention puts the
 * first four arguments in gr26, gr25, gr24 and gr23, the rest on the
 * stack, which the probes never need.
 */
#ifndef _FMM_REGS_PARISC_H
#define _FMM_REGS_PARISC_H

#include <linux/bug.h>
#include <linux/ptrace.h>

#define FMM_REG_ARGS 4

/* Argument @n (from 0) of the function a kprobe stopped at. */
static inline unsigned long fmm_regs_get_argument(struct pt_regs *regs,
						  unsigned int n)
{
	if (WARN_ON_ONCE(n >= FMM_REG_ARGS))
		return 0;
	return regs->gr[26 - n];
}

/* System calls take their arguments as they come: gr26 first. */
static inline unsigned long fmm_syscall_arg0(struct pt_regs *uregs, bool ia32)
{
	return uregs->gr[26];
}

/* The stale int3 of QEMU's x86 TCG has no parisc counterpart. */
static inline bool fmm_regs_stray_int3(struct pt_regs *regs)
{
	return false;
}

#endif /* _FMM_REGS_PARISC_H */
