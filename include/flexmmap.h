/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * flexmmap: the names and values shared by the module and user space.
 *
 * The module and the user-space probes include this file; nothing else of
 * the module is visible to user space.
 */
#ifndef _FLEXMMAP_H
#define _FLEXMMAP_H

/* vm.flexmmap_layout: which layout new processes get at exec. */
#define FLEXMMAP_SYSCTL_LAYOUT "/proc/sys/vm/flexmmap_layout"
#define FLEXMMAP_LAYOUT_KERNEL 0 /* leave the kernel's choice */
#define FLEXMMAP_LAYOUT_LEGACY 1 /* module bottom-up, always */
#define FLEXMMAP_LAYOUT_FLEXIBLE 2 /* module top-down, always */
#define FLEXMMAP_LAYOUT_AUTO 3 /* the 2004 policy (default) */
#define FLEXMMAP_LAYOUT_MAX 3

/*
 * vm.flexmmap_retarget, write-only: "PID MODE", MODE one of "kernel",
 * "legacy", "flexible" (or 0, 1, 2): where the running process's future
 * mmaps go.  Existing mappings stay where they are.  Needs CAP_SYS_ADMIN.
 */
#define FLEXMMAP_SYSCTL_RETARGET "/proc/sys/vm/flexmmap_retarget"

/* vm.flexmmap_nx: the NX policy applied at exec. */
#define FLEXMMAP_SYSCTL_NX "/proc/sys/vm/flexmmap_nx"
#define FLEXMMAP_NX_KERNEL 0
#define FLEXMMAP_NX_LEGACY_EXEC 1
#define FLEXMMAP_NX_STRICT 2
#define FLEXMMAP_NX_WXORX 3
#define FLEXMMAP_NX_MAX 3

/*
 * Per-binary markings, extended attributes read at exec (module/mark.c,
 * written by flexmmap-mark or setfattr).  A value longer than
 * FLEXMMAP_MARK_MAX bytes is malformed.
 *	user.flexmmap.layout	"kernel", "legacy", "flexible" or "auto"
 *	user.pax.flags		PaX letters (PpEeMmRrSsXx): m or M count
 */
#define FLEXMMAP_MARK_LAYOUT "user.flexmmap.layout"
#define FLEXMMAP_MARK_PAX "user.pax.flags"
#define FLEXMMAP_MARK_MAX 16

/*
 * /proc/flexmmap/stats: "name value" lines, one counter per line.
 * /proc/flexmmap/tasks: one line per process with an mm that this /proc
 * shows the reader (its PID namespace, hidepid):
 *	"PID MODE ALLOCATOR nx=N COMM"
 * PID as numbered in that /proc's PID namespace.  MODE is the mode applied
 * at the process's last exec ("kernel" when the module left the kernel's
 * choice, or the module was not loaded then), ALLOCATOR one of the
 * FLEXMMAP_ALLOC_* strings below, N the vm.flexmmap_nx mode that exec ran
 * under (0 also when the module was not loaded then; fork passes both on
 * while the module is loaded).  MODE, ALLOCATOR and nx=N are each "-" for
 * a process the reader may not ptrace-read.  COMM is escaped as in
 * /proc/PID/status, blanks as octal (\040): it is always one field.
 * /proc/flexmmap/self: the reader's own line, in the same format.
 */
#define FLEXMMAP_PROC_STATS "/proc/flexmmap/stats"
#define FLEXMMAP_PROC_TASKS "/proc/flexmmap/tasks"
#define FLEXMMAP_PROC_SELF "/proc/flexmmap/self"

#define FLEXMMAP_ALLOC_KERNEL_TOPDOWN "kernel-topdown"
#define FLEXMMAP_ALLOC_KERNEL_BOTTOMUP "kernel-bottomup"
#define FLEXMMAP_ALLOC_MODULE_TOPDOWN "module-topdown"
#define FLEXMMAP_ALLOC_MODULE_BOTTOMUP "module-bottomup"

#endif /* _FLEXMMAP_H */
