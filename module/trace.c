// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap: defines the trace events of trace.h.  Only this file defines
 * CREATE_TRACE_POINTS; policy.c and wx.c include trace.h to emit them.
 * Kbuild puts module/ on this file's include path, where define_trace.h
 * looks for trace.h.
 */
#define CREATE_TRACE_POINTS
#include "trace.h"
