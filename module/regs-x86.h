/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flexmmap: x86's registers as the probes read them (fmm.h includes the
 * arch's; regs-parisc.h is parisc's).  Inline, so that every file may use
 * them without depending on an arch file (arch-x86.c uses ksyms.c, which
 * probes).
 */
#ifndef _FMM_REGS_X86_H
#define _FMM_REGS_X86_H

#include <linux/ptrace.h>

/* Argument @n (from 0) of the function a kprobe stopped at. */
static inline unsigned long fmm_regs_get_argument(struct pt_regs *regs,
						  unsigned int n)
{
	return regs_get_kernel_argument(regs, n);
}

/*
 * The first argument of a system call, from the user's registers that the
 * syscall wrappers take (rdi; ebx for i386's and 32-bit syscalls).
 */
static inline unsigned long fmm_syscall_arg0(struct pt_regs *uregs, bool ia32)
{
	return ia32 ? uregs->bx : uregs->di;
}

/*
 * Whether a kprobe on an fentry call was entered from an int3 instead of
 * from ftrace (ORIG_RAX -1 rather than 0): a stale one under QEMU TCG,
 * docs/qemu-int3.md.
 */
static inline bool fmm_regs_stray_int3(struct pt_regs *regs)
{
	return regs->orig_ax == -1;
}

#endif /* _FMM_REGS_X86_H */
