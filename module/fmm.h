/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flexmmap: declarations shared between the module's files.
 *
 * main.c    init and exit, in the one safe order (struct fmm_backend)
 * the backend: one record and one set of layout hooks, picked by Kbuild
 *   record-ptr.c   6.1: mm->get_unmapped_area, and three mm->flags bits
 *   record-hook.c  6.1 with patches/: mm->mmap_layout
 *   record-mmf.c   6.10+ (Debian 13's 6.12): high bits of mm->flags
 *   layout-kprobe.c 6.1: kprobes: exec, fork, exit, mm_init, hugetlb
 *   layout-hook.c  6.1 with patches/: mmap_layout_register()
 *   layout-ftrace.c 6.10+: an ftrace redirect, kprobes on exec and fork
 *   track.c        6.1 only: the set of mms on our allocators, the drain
 * compat.h  the kernel-version switches, the only place that tests the version
 * regs-x86.h, regs-parisc.h: the probes' register access, inline, per arch
 * probe.c   kprobe tables: install all or nothing, remove, missed_ counters
 * stats.c   the counters of /proc/flexmmap/stats
 * ksyms.c   kallsyms look-ups of what the kernel does not export
 * arch-x86.c, arch-parisc.c: bases, ranges, hints, alignment and colour,
 *           probe arguments: what a port replaces (Kbuild picks one)
 * policy.c  which layout an exec gets, and the bases it starts from
 * alloc.c   the bottom-up and top-down allocators, hugetlb placement
 * nx.c      the NX policy: its modes at exec and fork, vm.flexmmap_nx
 * wx.c      the W^X probes of mode 3, armed and disarmed by nx.c
 * control.c every knob: module parameters, sysctls, /proc/flexmmap
 * tasks.c   /proc/flexmmap/tasks and self: each process's record
 * trace.c   the trace events (trace.h): exec_layout, wx_denied, retarget
 */
#ifndef _FMM_H
#define _FMM_H

#include <linux/kernel.h>
#include <linux/mm_types.h>
#include <linux/kprobes.h>
#include <linux/atomic.h>
/* The probes' register access, per arch (compat.h uses it too). */
#ifdef CONFIG_PARISC
#include "regs-parisc.h"
#else
#include "regs-x86.h"
#endif
#include "compat.h"

struct seq_file;
struct va_alignment;
struct ctl_table;
struct ctl_table_header;
#include "../include/flexmmap.h"

/*
 * A kernel built with patches/ has CONFIG_MMAP_LAYOUT: the exec hook and a
 * kernel-resident trampoline replace every layout kprobe (record-hook.c and
 * layout-hook.c instead of record-ptr.c, layout-kprobe.c and track.c).
 * Everything above the hook is the same code.
 */
#ifdef CONFIG_MMAP_LAYOUT
#define FMM_HAVE_LAYOUT_HOOK
#endif

/**
 * enum fmm_alloc - which allocator an mm is on: whose, and which direction
 * @FMM_ALLOC_OTHER: something we do not know (another module, say)
 * @FMM_ALLOC_KERNEL_TOPDOWN: arch_get_unmapped_area_topdown
 * @FMM_ALLOC_KERNEL_BOTTOMUP: arch_get_unmapped_area
 * @FMM_ALLOC_MODULE_BOTTOMUP: ours, bottom-up (the legacy layout)
 * @FMM_ALLOC_MODULE_TOPDOWN: ours, top-down (the flexible layout)
 */
enum fmm_alloc {
	FMM_ALLOC_OTHER,
	FMM_ALLOC_KERNEL_TOPDOWN,
	FMM_ALLOC_KERNEL_BOTTOMUP,
	FMM_ALLOC_MODULE_BOTTOMUP,
	FMM_ALLOC_MODULE_TOPDOWN,
};

/**
 * enum fmm_reason - why the module put an mm on one of its allocators
 * @FMM_REASON_NONE: it did not (the mm is on the kernel's, or another's)
 * @FMM_REASON_FORCED: vm.flexmmap_layout 1 or 2, or a retarget
 * @FMM_REASON_AUTO: the 2004 policy of vm.flexmmap_layout 3
 *
 * Kept in the mm's record beside the allocator (/proc/flexmmap/tasks
 * shows it); it changes nothing about where mappings go.
 */
enum fmm_reason {
	FMM_REASON_NONE,
	FMM_REASON_FORCED,
	FMM_REASON_AUTO,
};

/**
 * enum fmm_why - what decided an exec's layout (the exec_layout trace event)
 * @FMM_WHY_SYSCTL: vm.flexmmap_layout: 0-2, or 3 (auto) choosing flexible
 * @FMM_WHY_PERSONALITY: auto, and the kernel had chosen bottom-up
 *	(ADDR_COMPAT_LAYOUT, as setarch -L sets, or vm.legacy_va_layout=1)
 * @FMM_WHY_NO_GNU_STACK: auto, and the binary has no PT_GNU_STACK header
 * @FMM_WHY_MARKING: the binary's user.flexmmap.layout (mark.c); when it is
 *	auto, personality and no-gnu-stack still say why it is bottom-up
 */
enum fmm_why {
	FMM_WHY_SYSCTL,
	FMM_WHY_PERSONALITY,
	FMM_WHY_NO_GNU_STACK,
	FMM_WHY_MARKING,
};

static inline const char *fmm_why_name(enum fmm_why why)
{
	switch (why) {
	case FMM_WHY_PERSONALITY:
		return "personality";
	case FMM_WHY_NO_GNU_STACK:
		return "no-gnu-stack";
	case FMM_WHY_MARKING:
		return "marking";
	default:
		return "sysctl";
	}
}

/* The ALLOCATOR column of /proc/flexmmap/tasks, and the trace events'. */
static inline const char *fmm_alloc_name(enum fmm_alloc a)
{
	switch (a) {
	case FMM_ALLOC_KERNEL_TOPDOWN:
		return FLEXMMAP_ALLOC_KERNEL_TOPDOWN;
	case FMM_ALLOC_KERNEL_BOTTOMUP:
		return FLEXMMAP_ALLOC_KERNEL_BOTTOMUP;
	case FMM_ALLOC_MODULE_BOTTOMUP:
		return FLEXMMAP_ALLOC_MODULE_BOTTOMUP;
	case FMM_ALLOC_MODULE_TOPDOWN:
		return FLEXMMAP_ALLOC_MODULE_TOPDOWN;
	default:
		return "other";
	}
}

static inline bool fmm_alloc_is_module(enum fmm_alloc a)
{
	return a >= FMM_ALLOC_MODULE_BOTTOMUP;
}

static inline bool fmm_alloc_is_bottomup(enum fmm_alloc a)
{
	return a == FMM_ALLOC_KERNEL_BOTTOMUP || a == FMM_ALLOC_MODULE_BOTTOMUP;
}

/* The kernel's allocator with the same direction as @a. */
static inline enum fmm_alloc fmm_kernel_of(enum fmm_alloc a)
{
	return fmm_alloc_is_bottomup(a) ? FMM_ALLOC_KERNEL_BOTTOMUP :
					  FMM_ALLOC_KERNEL_TOPDOWN;
}

/* The module's allocator of a direction. */
static inline enum fmm_alloc fmm_module_alloc(bool bottomup)
{
	return bottomup ? FMM_ALLOC_MODULE_BOTTOMUP : FMM_ALLOC_MODULE_TOPDOWN;
}

/**
 * struct fmm_stats - counters shown in /proc/flexmmap/stats
 * @exec_kernel: execs left as the kernel set them up
 * @exec_legacy: execs given the module's bottom-up allocator
 * @exec_flexible: execs given the module's top-down allocator
 * @exec_unknown: execs whose allocator was neither of the kernel's
 * @fallback: mms put back on the kernel's allocator for lack of memory
 * @fork_inherit: forks whose child stayed on a module allocator
 * @fork_fixup: forks whose child had to be brought in line with its parent
 *	(re-targeted between the copy of its mm and the fork probe)
 * @hugetlb: huge page placements done for module mms
 * @retarget: running processes re-targeted through vm.flexmmap_retarget
 * @nx_legacy_exec: execs given READ_IMPLIES_EXEC by nx=1
 * @nx_downgraded: execs refused READ_IMPLIES_EXEC or an executable stack
 * @wx_exec: execs marked W^X by nx=3
 * @wx_denied_mmap: W^X denials of mmap()
 * @wx_denied_mprotect: W^X denials of mprotect()
 * @wx_denied_personality: W^X denials of personality(READ_IMPLIES_EXEC)
 * @wx_denied_shmat: W^X denials of shmat(SHM_EXEC)
 * @wx_denied_uffd: W^X denials of userfaultfd fills of executable memory
 * @wx_denied_mem: W^X denials of writes through /proc/PID/mem or ptrace
 * @wx_complained: W^X refusals allowed by complain mode (complain.c)
 * @wx_complaints_dropped: of those, not recorded: the table was full, or
 *	the uid's share of it, or the mm had no program file
 * @stray_int3: probe hits entered from a stale int3 rather than from ftrace
 *	(QEMU TCG, docs/qemu-int3.md), finished as ftrace would
 * @mark_layout: execs of binaries with a valid user.flexmmap.layout
 * @mark_pax: execs of binaries whose user.pax.flags has m or M (honoured)
 * @mark_malformed: markings ignored as malformed
 * @mark_untrusted: m markings ignored: the file is not root's alone
 * @mark_dropped: marked execs refused: no slot for their markings (mark.c)
 */
struct fmm_stats {
	atomic_long_t exec_kernel;
	atomic_long_t exec_legacy;
	atomic_long_t exec_flexible;
	atomic_long_t exec_unknown;
	atomic_long_t fallback;
	atomic_long_t fork_inherit;
	atomic_long_t fork_fixup;
	atomic_long_t hugetlb;
	atomic_long_t retarget;
	atomic_long_t nx_legacy_exec;
	atomic_long_t nx_downgraded;
	atomic_long_t wx_exec;
	atomic_long_t wx_denied_mmap;
	atomic_long_t wx_denied_mprotect;
	atomic_long_t wx_denied_personality;
	atomic_long_t wx_denied_shmat;
	atomic_long_t wx_denied_uffd;
	atomic_long_t wx_denied_mem;
	atomic_long_t wx_complained;
	atomic_long_t wx_complaints_dropped;
	atomic_long_t stray_int3;
	atomic_long_t mark_layout;
	atomic_long_t mark_pax;
	atomic_long_t mark_malformed;
	atomic_long_t mark_untrusted;
	atomic_long_t mark_dropped;
};

/**
 * struct fmm_probe - one kprobe of the module's, in a table (probe.c)
 * @symbol: the kernel function
 * @pre: the kprobe pre-handler
 * @absent: the kernel was built without what the function belongs to
 *	(for example CONFIG_USERFAULTFD): nothing to hook, skipped
 * @moves_ip: @pre may send the call elsewhere (instruction_pointer_set());
 *	such a kprobe must not be optimized into a jump (probe.c)
 * @kp: the kprobe while it is in place, else NULL (probe.c owns it)
 * @missed: hits missed by the kprobes removed so far
 */
struct fmm_probe {
	const char *symbol;
	kprobe_pre_handler_t pre;
	bool absent;
	bool moves_ip;
	struct fmm_kprobe *kp;
	unsigned long missed;
};

extern struct fmm_stats fmm_stats;
extern int fmm_layout;
extern int fmm_nx;
extern bool fmm_kallsyms_data;

/* ksyms.c: what the kernel does not export */
int fmm_ksyms_init(bool use_kallsyms);
const char *fmm_ksyms_source(void);
int fmm_ksym(const char *name, unsigned long *addr);
unsigned long fmm_stack_guard_gap(void);
unsigned long fmm_mmap_min_addr(void);
const struct va_alignment *fmm_va_align(void);
bool fmm_ptrace_may_access(struct task_struct *task, unsigned int mode);

/*
 * arch-x86.c or arch-parisc.c (Kbuild picks one): bases, search ranges,
 * hints, MAP_FIXED, alignment and cache colour, probe arguments
 */
void fmm_area_align(struct file *filp, unsigned long pgoff, unsigned long flags,
		    unsigned long *align_mask, unsigned long *align_offset);
unsigned long fmm_fixed_addr(struct file *filp, unsigned long addr,
			     unsigned long len, unsigned long pgoff,
			     unsigned long flags);
unsigned long fmm_hint_align(unsigned long addr, unsigned long align_mask,
			     unsigned long align_offset);
bool fmm_hint_valid(unsigned long addr, unsigned long len);
void fmm_arch_init(void);
bool fmm_map_32bit(unsigned long flags);
void fmm_bottomup_range(unsigned long addr, unsigned long flags,
			unsigned long *begin, unsigned long *end);
unsigned long fmm_topdown_high(unsigned long addr);
unsigned long fmm_topdown_low(unsigned long flags);
unsigned long fmm_mmap_base(struct mm_struct *mm, bool legacy);
void fmm_mm_set_bases(struct mm_struct *mm, bool legacy, bool kernel_legacy,
		      const struct rlimit *rlim_stack);
void fmm_mm_retarget_bases(struct mm_struct *mm, bool legacy,
			   const struct rlimit *rlim_stack, bool randomize,
			   unsigned int personality);
bool fmm_mm_copy_bases(struct mm_struct *newmm, struct mm_struct *oldmm);
void fmm_regs_set_argument(struct pt_regs *regs, unsigned int n,
			   unsigned long val);

/*
 * The backend's record of each mm (record-ptr.c, record-hook.c or
 * record-mmf.c): its allocator, why, and the NX mode of its exec.  It calls
 * nothing above it but the allocators' addresses (alloc.c) and ksyms.c.
 */
int fmm_record_init(void);
enum fmm_alloc fmm_mm_alloc(struct mm_struct *mm);
enum fmm_reason fmm_mm_reason(struct mm_struct *mm);
void fmm_mm_set_alloc(struct mm_struct *mm, enum fmm_alloc a,
		      enum fmm_reason why);
/*
 * The NX field of the record: the mode (0-3), and FMM_NX_MARKED when a
 * user.pax.flags marking changed it (m: 3 became 2; M: 3 whatever the mode).
 */
#define FMM_NX_MODE 3
#define FMM_NX_MARKED 4
int fmm_mm_nx(struct mm_struct *mm);
void fmm_mm_set_nx(struct mm_struct *mm, int nx);
void fmm_mm_exec_reset(struct mm_struct *mm);
#ifdef FMM_HAVE_LAYOUT_HOOK
unsigned long fmm_mm_get_area(struct file *filp, unsigned long addr,
			      unsigned long len, unsigned long pgoff,
			      unsigned long flags);
#endif
#ifdef FMM_MMF_TOPDOWN
bool fmm_mm_fork(struct mm_struct *oldmm, struct mm_struct *newmm);
bool fmm_mm_redirected(struct mm_struct *mm);
unsigned long fmm_kernel_get_area_addr(bool topdown);
#endif

/* alloc.c: two get_unmapped_area()s, of type fmm_get_area_t */
typedef unsigned long (*fmm_get_area_t)(struct file *filp, unsigned long addr,
					unsigned long len, unsigned long pgoff,
					unsigned long flags);
unsigned long fmm_get_area_bottomup(struct file *filp, unsigned long addr,
				    unsigned long len, unsigned long pgoff,
				    unsigned long flags);
unsigned long fmm_get_area_topdown(struct file *filp, unsigned long addr,
				   unsigned long len, unsigned long pgoff,
				   unsigned long flags);
unsigned long fmm_get_area_vmflags(bool topdown, struct file *filp,
				   unsigned long addr, unsigned long len,
				   unsigned long pgoff, unsigned long flags,
				   vm_flags_t vm_flags);
unsigned long fmm_hugetlb_bottomup(struct file *file, unsigned long addr,
				   unsigned long len, unsigned long pgoff,
				   unsigned long flags);
unsigned long fmm_hugetlb_topdown(struct file *file, unsigned long addr,
				  unsigned long len, unsigned long pgoff,
				  unsigned long flags);

/* policy.c */
struct linux_binprm;
void fmm_exec(struct linux_binprm *bprm, int *executable_stack);
int fmm_exec_pre(struct kprobe *p, struct pt_regs *regs);
int fmm_retarget(pid_t nr, int layout);

/**
 * struct fmm_backend - how the module gets into this kernel (layout-*.c)
 * @install: put the layout hooks in, all or nothing, exec's last
 * @stop_exec: no exec reaches the module any more
 * @quiesce: no mm is sent to module text any more (the W^X probes are
 *	gone by then); tasks may still be running in it
 * @remove: the rest goes, once no task can be in module text
 * @show: the hooks' lines of /proc/flexmmap/stats
 *
 * main.c calls them in the one unload order; @quiesce and @remove may be
 * NULL (the patched kernel's hook goes at once).
 */
struct fmm_backend {
	int (*install)(void);
	void (*stop_exec)(void);
	void (*quiesce)(void);
	void (*remove)(void);
	void (*show)(struct seq_file *m);
};

extern const struct fmm_backend fmm_backend;
unsigned long fmm_track_count(void);

#if defined(FMM_HAVE_LAYOUT_HOOK) || defined(FMM_MMF_TOPDOWN)
/*
 * No mm can point at our text once we are unregistered (the kernel's
 * trampoline with the layout hook; on 6.10+ no mm holds a pointer at all):
 * there is nothing to track and nothing to drain.  fmm_track_count()
 * counts the module mms by walking them (tasks.c).
 */
#define FMM_UNTRACKED

static inline bool fmm_track_add(struct mm_struct *mm)
{
	return true;
}

static inline bool fmm_track_del(struct mm_struct *mm)
{
	return true;
}
#else
/*
 * track.c: track_max, the most mms the set holds (its entries allocated at
 * load); 0 until then: the kernel's default threads-max
 */
#define FMM_TRACK_MAX_MIN 64
#define FMM_TRACK_MAX_MAX 4194304
extern int fmm_track_max;
int fmm_track_init(void);
void fmm_track_exit(void);
bool fmm_track_add(struct mm_struct *mm);
bool fmm_track_del(struct mm_struct *mm);
bool fmm_track_unloading(void);
void fmm_track_begin_unload(void);
void fmm_track_drain(void);
#endif

/* mark.c: per-binary markings, read at exec before the ELF loader */
#define FMM_MARK_NONE (-1)
/**
 * struct fmm_mark - the markings of one binary
 * @layout: its user.flexmmap.layout (FLEXMMAP_LAYOUT_*), or FMM_MARK_NONE
 * @pax: 'm' or 'M' from its user.pax.flags, or 0
 */
struct fmm_mark {
	s8 layout;
	char pax;
};

extern bool fmm_mark_enable;
void fmm_mark_init(void);
void fmm_mark_exit(void);
void fmm_mark_take(struct mm_struct *mm, struct fmm_mark *mark);
void fmm_mark_show(struct seq_file *m);

/*
 * A log line's file name (nx.c, wx.c): fmm_file_name() puts @file's name
 * (%pD, the last component) in @buf and returns its length, for "%*pE",
 * which escapes it: users name files, and a newline or an escape sequence
 * in a name must not reach the log as it is (a forged line).  Any context.
 */
#define FMM_NAME_MAX 64
static inline int fmm_file_name(char *buf, struct file *file)
{
	return scnprintf(buf, FMM_NAME_MAX, "%pD", file);
}

/* nx.c */
void fmm_nx_exec(struct linux_binprm *bprm, int *executable_stack, char pax);
int fmm_nx_arm_marked(void);
void fmm_nx_fork(struct mm_struct *oldmm, struct mm_struct *newmm);
int fmm_nx_sysctl(FMM_CTL_CONST struct ctl_table *table, int write,
		  void *buffer, size_t *lenp, loff_t *ppos);
int fmm_nx_init(void);
void fmm_nx_exit(void);

/**
 * struct fmm_wx_refusal - what a W^X probe would refuse (wx.c, complain.c)
 * @mm: the W^X mm whose rule it is (current's, or a /proc/PID/mem,
 *	ptrace or userfaultfd target's)
 * @call: the call ("mmap", "mprotect", ...), a static string
 * @what: what it asked for ("PROT_WRITE|PROT_EXEC", ...), a static string
 * @of: the kind of memory, a static string; NULL for a file
 * @file: the file mapped, if any
 * @old: the mapping's protection before (PROT_* bits), -1 when none
 * @prot: the protection asked for (PROT_* bits)
 * @locked: current holds its own mm's mmap lock
 * @in_exec: in an exec (the user registers are the old program's)
 */
struct fmm_wx_refusal {
	struct mm_struct *mm;
	const char *call;
	const char *what;
	const char *of;
	struct file *file;
	long old;
	unsigned long prot;
	bool locked;
	bool in_exec;
};

/* complain.c: vm.flexmmap_wx_complain and /proc/flexmmap/wx_complaints */
extern int fmm_wx_complain;
extern const struct proc_ops fmm_complaints_ops;
bool fmm_wx_complaint(const struct fmm_wx_refusal *r);
/* After the RCU-tasks wait of unload, and when the table is emptied */
void fmm_complaints_clear(void);

/* wx.c: armed and disarmed by nx.c, under its mutex */
int fmm_wx_arm(void);
void fmm_wx_disarm(void);
bool fmm_wx_armed(void);
void fmm_wx_probes_show(struct seq_file *m);
/* After the RCU-tasks wait of unload: puts what refused hugetlb fills left */
void fmm_wx_flush(void);

/*
 * pae-nx.c: NX for user mappings on a 32-bit PAE kernel that drops it.
 * x86 only (Kbuild): elsewhere there is nothing to correct.
 */
enum { FMM_PAE_NX_OFF, FMM_PAE_NX_POLICY, FMM_PAE_NX_LOAD };
#ifdef CONFIG_X86
#define FMM_HAVE_PAE_NX
extern int fmm_pae_nx_enable;
int fmm_pae_nx_init(void);
int fmm_pae_nx_arm(void);
void fmm_pae_nx_exit(void);
void fmm_pae_nx_show(struct seq_file *m);
void fmm_pae_nx_probes_show(struct seq_file *m);
#else
static inline int fmm_pae_nx_init(void)
{
	return 0;
}

static inline int fmm_pae_nx_arm(void)
{
	return 0;
}

static inline void fmm_pae_nx_exit(void)
{
}

static inline void fmm_pae_nx_show(struct seq_file *m)
{
}

static inline void fmm_pae_nx_probes_show(struct seq_file *m)
{
}
#endif

/* probe.c */
int fmm_probes_install(struct fmm_probe *probes, int n);
void fmm_probes_remove(struct fmm_probe *probes, int n);
void fmm_probes_remove_last(struct fmm_probe *probes, int n);
void fmm_probes_show_missed(struct seq_file *m, struct fmm_probe *probes,
			    int n);

/* control.c */
int fmm_control_init(void);
void fmm_control_exit(void);

/* tasks.c: the show functions of /proc/flexmmap/tasks and self */
int fmm_tasks_show(struct seq_file *m, void *v);
int fmm_self_show(struct seq_file *m, void *v);

#endif /* _FMM_H */
