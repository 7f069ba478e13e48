/* SPDX-License-Identifier: GPL-2.0 */
/*
 * flexmmap: the module's trace events, system "flexmmap"
 * (docs/trace-events.md has their fields and how to record them).
 *
 *	exec_layout	an exec's layout, as fmm_exec() decided it (policy.c)
 *	wx_denied	a W^X denial of vm.flexmmap_nx=3, or its allowing by
 *			complain mode (allowed=1; wx.c)
 *	retarget	a write to vm.flexmmap_retarget, and its result (policy.c)
 *
 * trace.c defines them (CREATE_TRACE_POINTS); define_trace.h then reads
 * this file again from the include path Kbuild gives trace.o.  The first
 * two fire in kprobe handlers: the fields are plain copies, no sleeping.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM flexmmap

#if !defined(_FMM_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _FMM_TRACE_H

#include <linux/mman.h>
#include <linux/sched.h>
#include <linux/tracepoint.h>
#include "fmm.h"

/* clang-format off */
TRACE_EVENT(exec_layout,
	    TP_PROTO(int mode, enum fmm_alloc alloc, enum fmm_why why, int nx),
	    TP_ARGS(mode, alloc, why, nx),
	    TP_STRUCT__entry(__field(pid_t, pid)
			     __array(char, comm, TASK_COMM_LEN)
			     __field(int, mode)
			     __string(allocator, fmm_alloc_name(alloc))
			     __string(why, fmm_why_name(why))
			     __field(int, nx)),
	    TP_fast_assign(__entry->pid = task_pid_nr(current);
			   memcpy(__entry->comm, current->comm, TASK_COMM_LEN);
			   __entry->mode = mode;
			   fmm_assign_str(allocator, fmm_alloc_name(alloc));
			   fmm_assign_str(why, fmm_why_name(why));
			   __entry->nx = nx;),
	    TP_printk("pid=%d comm=%s mode=%d allocator=%s why=%s nx=%d",
		      __entry->pid, __entry->comm, __entry->mode,
		      __get_str(allocator), __get_str(why), __entry->nx)
);

/*
 * @name: the call as wx.c's log names it; @file: the file's path, or
 * "(anonymous)", formatted by the caller; @allowed: complain mode let it
 * through (vm.flexmmap_wx_complain).
 */
TRACE_EVENT(wx_denied,
	    TP_PROTO(const char *name, unsigned long prot, const char *file,
		     bool allowed),
	    TP_ARGS(name, prot, file, allowed),
	    TP_STRUCT__entry(__field(pid_t, pid)
			     __array(char, comm, TASK_COMM_LEN)
			     __string(call, name)
			     __field(unsigned long, prot)
			     __string(file, file)
			     __field(bool, allowed)),
	    TP_fast_assign(__entry->pid = task_pid_nr(current);
			   memcpy(__entry->comm, current->comm, TASK_COMM_LEN);
			   fmm_assign_str(call, name);
			   __entry->prot = prot;
			   fmm_assign_str(file, file);
			   __entry->allowed = allowed;),
	    TP_printk("pid=%d comm=%s call=%s prot=%s file=%s allowed=%d",
		      __entry->pid, __entry->comm, __get_str(call),
		      __print_flags(__entry->prot, "|",
				    { PROT_READ, "PROT_READ" },
				    { PROT_WRITE, "PROT_WRITE" },
				    { PROT_EXEC, "PROT_EXEC" }),
		      __get_str(file), __entry->allowed)
);

/* @from and @to: allocator names, "-" where the request never got that far. */
TRACE_EVENT(retarget,
	    TP_PROTO(pid_t pid, const char *from, const char *to, int result),
	    TP_ARGS(pid, from, to, result),
	    TP_STRUCT__entry(__field(pid_t, pid)
			     __string(from, from)
			     __string(to, to)
			     __field(int, result)
			     __field(pid_t, by)),
	    TP_fast_assign(__entry->pid = pid;
			   fmm_assign_str(from, from);
			   fmm_assign_str(to, to);
			   __entry->result = result;
			   __entry->by = task_pid_nr(current);),
	    TP_printk("pid=%d from=%s to=%s result=%d by=%d",
		      __entry->pid, __get_str(from), __get_str(to),
		      __entry->result, __entry->by)
);
/* clang-format on */

#endif /* _FMM_TRACE_H */

/* define_trace.h reads this file again as "./trace.h" (Kbuild: -I module/). */
#undef TRACE_INCLUDE_PATH
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_PATH .
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
