// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-nx: check, from inside a freshly exec'd process, what the NX policy
 * (vm.flexmmap_nx, or the kernel's own rules) gave it.  Output is kselftest
 * TAP.
 *
 * Built static as fmm-nx-64 and fmm-nx-32, plus copies without a
 * PT_GNU_STACK header (-nognustack) and copies linked with an executable
 * PT_GNU_STACK (-execstack).  The probe reads its own program headers, so it
 * knows which of the three it is.
 *
 * Usage:
 *   fmm-nx-NN --expect 0|1|2|3	check every item against the rules of
 *				that vm.flexmmap_nx mode (0 = the stock
 *				kernel's rules)
 *   fmm-nx-NN --expect any	the mode this process's exec ran under, as
 *				the module reports it ("nx=N" on our line,
 *				/proc/flexmmap/self, read first thing); the
 *				W^X items may then also succeed, since W^X is
 *				only enforced while nx=3 is set and the module
 *				loaded.  With no module answer, the exec-time
 *				items must match the rules of some mode and
 *				the W^X items may fail only with EACCES.
 *   fmm-nx-NN --print		print "item=value" lines, no checks
 *
 * Items:
 *   rie		READ_IMPLIES_EXEC in personality(0xffffffff)
 *   stack_x		the [stack] line of /proc/self/maps has 'x'
 *   stack_run		a "ret" copied to the stack runs (SIGSEGV: it does not)
 *   heap_x		the [heap] line (brk) has 'x'
 *   mmap_rwx		mmap(PROT_READ|PROT_WRITE|PROT_EXEC, anonymous)
 *   mprotect_wx	mprotect(PROT_READ|PROT_EXEC) of written anonymous memory,
 *			which then runs
 *   mprotect_w_r_x	the same after an mprotect(PROT_READ) in between
 *   mprotect_stack	mprotect(PROT_READ|PROT_WRITE|PROT_EXEC) of a stack page
 *   personality_rie	personality(READ_IMPLIES_EXEC) (then set back)
 *   file_rx		mmap(PROT_READ|PROT_EXEC) of our own executable
 *   thread		pthread_create() (glibc maps thread stacks executable
 *			when PT_GNU_STACK is missing or asks for it)
 *
 * The rules, for a binary with PT_GNU_STACK "rw", "rwx" or none ("-"):
 *   0 kernel: rie for 32-bit "-" only; stack_x = "rwx" or rie; heap_x = rie;
 *     everything else succeeds
 *   1 legacy-exec: as 0, but rie for "-" in 64-bit too
 *   2 strict: no rie, no executable stack or heap; everything else succeeds
 *   3 W^X: as 2, and mmap_rwx, mprotect_wx, mprotect_w_r_x, mprotect_stack
 *     and personality_rie fail with EACCES; thread fails unless "rw";
 *     file_rx succeeds
 *
 * Exit status as kselftest: 0 every test passed, 1 a test failed (or bad
 * usage).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flexmmap.h"
#include "kselftest.h"

#define RET_INSN 0xc3	/* "ret", the same on i386 and x86-64 */

enum gnustack { GS_NONE, GS_RW, GS_RWX };
static const char *const gs_names[] = { "-", "rw", "rwx" };

static long page;
static sigjmp_buf segv_env;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(segv_env, 1);
}

/* Call code at p; false if that faults. */
static bool runs(void *p)
{
	void (*volatile fn)(void) = (void (*)(void))p;
	struct sigaction sa = { .sa_handler = on_segv }, old;
	bool ok;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(segv_env, 1) == 0) {
		fn();
		ok = true;
	} else {
		ok = false;
	}
	sigaction(SIGSEGV, &old, NULL);
	return ok;
}

static enum gnustack own_gnustack(void)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	unsigned long n = getauxval(AT_PHNUM), i;

	for (i = 0; ph && i < n; i++)
		if (ph[i].p_type == PT_GNU_STACK)
			return ph[i].p_flags & PF_X ? GS_RWX : GS_RW;
	return GS_NONE;
}

/* Does the maps line named name (e.g. "[stack]") have 'x'?  -1: no line. */
static int maps_x(const char *name)
{
	char line[512], perms[8];
	int x = -1;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		ksft_exit_fail_msg("open /proc/self/maps: %s\n", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, name))
			continue;
		if (sscanf(line, "%*s %7s", perms) == 1)
			x = perms[2] == 'x';
		break;
	}
	fclose(f);
	return x;
}

/* 0 or an errno, as the result of the items that call the kernel. */
static int try_mmap_rwx(void)
{
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return errno;
	munmap(p, page);
	return 0;
}

static int try_mprotect_x(bool via_readonly)
{
	unsigned char *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err = 0;

	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	p[0] = RET_INSN;
	if (via_readonly && mprotect(p, page, PROT_READ))
		ksft_exit_fail_msg("mprotect(PROT_READ): %s\n", strerror(errno));
	if (mprotect(p, page, PROT_READ | PROT_EXEC))
		err = errno;
	else if (!runs(p))
		err = EFAULT;	/* allowed, yet not executable: report it */
	munmap(p, page);
	return err;
}

/*
 * Does the CPU refuse to run code from a page mapped without PROT_EXEC?  On
 * the i386 guest (686-pae kernel, "NX (Execute Disable) protection: active")
 * under QEMU's TCG it does not: a "ret" on a rw-p page runs.  The kernel's
 * rules (READ_IMPLIES_EXEC, the x in /proc/self/maps) still hold there;
 * whether code on the stack runs is then the CPU's answer, not the mode's.
 */
static bool nx_enforced(void)
{
	unsigned char *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ran;

	if (p == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	p[0] = RET_INSN;
	ran = runs(p);
	munmap(p, page);
	return !ran;
}

static int try_mprotect_stack(void)
{
	volatile char here = 0;
	unsigned long pg = ((unsigned long)&here) & ~(page - 1);

	(void)here;
	if (mprotect((void *)pg, page, PROT_READ | PROT_WRITE | PROT_EXEC))
		return errno;
	/* Leave it as it was found (a non-executable stack in our cases). */
	mprotect((void *)pg, page, PROT_READ | PROT_WRITE);
	return 0;
}

/*
 * The raw system call: glibc's personality() turns an error into a negative
 * "persona" and leaves errno alone (the call could not fail before 2.6.29).
 */
static int try_personality_rie(void)
{
	long cur = syscall(SYS_personality, 0xffffffffUL);

	if (syscall(SYS_personality, (unsigned long)cur | READ_IMPLIES_EXEC) == -1)
		return errno;
	syscall(SYS_personality, (unsigned long)cur);
	return 0;
}

static int try_file_rx(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	void *p;

	if (fd < 0)
		ksft_exit_fail_msg("open /proc/self/exe: %s\n", strerror(errno));
	p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return errno;
	munmap(p, page);
	return 0;
}

static void *thread_fn(void *arg)
{
	return arg;
}

static int try_thread(void)
{
	pthread_t t;
	int err = pthread_create(&t, NULL, thread_fn, NULL);

	if (!err)
		pthread_join(t, NULL);
	return err;
}

struct result {
	int rie, stack_x, stack_run, heap_x;
	int mmap_rwx, mprotect_wx, mprotect_w_r_x, mprotect_stack;
	int personality_rie, file_rx, thread;
};

static void measure(struct result *r)
{
	unsigned char code[64] __attribute__((aligned(16)));
	void *volatile heap;

	r->rie = !!(personality(0xffffffff) & READ_IMPLIES_EXEC);
	r->stack_x = maps_x("[stack]");
	code[0] = RET_INSN;
	r->stack_run = runs(code);
	heap = malloc(64);	/* static glibc: from brk, so [heap] exists */
	r->heap_x = maps_x("[heap]");
	free(heap);
	r->mmap_rwx = try_mmap_rwx();
	r->mprotect_wx = try_mprotect_x(false);
	r->mprotect_w_r_x = try_mprotect_x(true);
	r->mprotect_stack = try_mprotect_stack();
	r->personality_rie = try_personality_rie();
	r->file_rx = try_file_rx();
	r->thread = try_thread();
}

static const char *err_name(int err)
{
	return err ? strerrorname_np(err) ?: "?" : "ok";
}

static void check_bool(const char *item, int got, int want)
{
	ksft_test_result(got == want, "%s: %s (want %s)\n", item,
			 got < 0 ? "missing" : got ? "yes" : "no",
			 want ? "yes" : "no");
}

static void check_err(const char *item, int got, int want)
{
	ksft_test_result(got == want, "%s: %s (want %s)\n", item,
			 err_name(got), err_name(want));
}

/*
 * A W^X item: success unless W^X may deny it; then EACCES if @strict (a
 * fixed mode), else either (--expect any: W^X is enforced only while nx=3
 * is set and the module is loaded).
 */
static void check_wx(const char *item, int got, bool may_deny, bool strict)
{
	if (!may_deny || strict) {
		check_err(item, got, may_deny ? EACCES : 0);
		return;
	}
	ksft_test_result(!got || got == EACCES, "%s: %s (want ok or EACCES)\n",
			 item, err_name(got));
}

/* Our "nx=N" from /proc/flexmmap/self; -1 if the module does not list us. */
static int queried_mode(void)
{
	FILE *fp = fopen(FLEXMMAP_PROC_SELF, "r");
	int nx, mode = -1;

	if (fp && fscanf(fp, "%*d %*s %*s nx=%d", &nx) == 1 && nx >= 0 &&
	    nx <= FLEXMMAP_NX_MAX)
		mode = nx;
	if (fp)
		fclose(fp);
	return mode;
}

/* What the exec-time items should be under a mode. */
static void exec_rules(int mode, bool is32, enum gnustack gs, int *rie,
		       int *stack_x)
{
	switch (mode) {
	case FLEXMMAP_NX_KERNEL:
		*rie = is32 && gs == GS_NONE;
		break;
	case FLEXMMAP_NX_LEGACY_EXEC:
		*rie = gs == GS_NONE;
		break;
	default:
		*rie = 0;
		break;
	}
	*stack_x = mode < FLEXMMAP_NX_STRICT && (gs == GS_RWX || *rie);
}

/* With no module answer: the first mode whose exec-time rules match r. */
static int matching_mode(const struct result *r, bool is32, enum gnustack gs)
{
	int mode, rie, stack_x;

	for (mode = 0; mode <= FLEXMMAP_NX_MAX; mode++) {
		exec_rules(mode, is32, gs, &rie, &stack_x);
		if (r->rie == rie && r->stack_x == stack_x &&
		    (r->stack_run == stack_x || !nx_enforced()) &&
		    r->heap_x == rie)
			return mode;
	}
	return FLEXMMAP_NX_KERNEL;	/* none: report against the stock rules */
}

int main(int argc, char **argv)
{
	enum gnustack gs = own_gnustack();
	bool is32 = sizeof(long) == 4;
	struct result r;
	int mode, rie, stack_x;
	bool any, may_deny;

	page = sysconf(_SC_PAGESIZE);
	if (argc == 2 && !strcmp(argv[1], "--print")) {
		measure(&r);
		printf("bits=%d\ngnustack=%s\nrie=%d\nstack_x=%d\nstack_run=%d\nheap_x=%d\n",
		       is32 ? 32 : 64, gs_names[gs], r.rie, r.stack_x,
		       r.stack_run, r.heap_x);
		printf("mmap_rwx=%s\nmprotect_wx=%s\nmprotect_w_r_x=%s\n",
		       err_name(r.mmap_rwx), err_name(r.mprotect_wx),
		       err_name(r.mprotect_w_r_x));
		printf("mprotect_stack=%s\npersonality_rie=%s\nfile_rx=%s\nthread=%s\n",
		       err_name(r.mprotect_stack), err_name(r.personality_rie),
		       err_name(r.file_rx), err_name(r.thread));
		return 0;
	}
	any = argc == 3 && !strcmp(argv[1], "--expect") &&
	      !strcmp(argv[2], "any");
	if (!any && (argc != 3 || strcmp(argv[1], "--expect") ||
		     strlen(argv[2]) != 1 || argv[2][0] < '0' ||
		     argv[2][0] > '0' + FLEXMMAP_NX_MAX)) {
		fprintf(stderr, "usage: %s --expect 0|1|2|3|any | --print\n",
			argv[0]);
		return KSFT_FAIL;
	}
	/* First thing: the module may be gone by the time we are done. */
	mode = any ? queried_mode() : argv[2][0] - '0';

	ksft_print_header();
	ksft_set_plan(11);
	measure(&r);
	if (any && mode < 0) {
		mode = matching_mode(&r, is32, gs);
		ksft_print_msg("PID %d, %d-bit, PT_GNU_STACK %s: no module answer; exec-time items checked as nx mode %d, the first whose rules they match\n",
			       getpid(), is32 ? 32 : 64, gs_names[gs], mode);
		may_deny = true;
	} else {
		ksft_print_msg("PID %d, %d-bit, PT_GNU_STACK %s, checking nx mode %d%s\n",
			       getpid(), is32 ? 32 : 64, gs_names[gs], mode,
			       any ? " (module query)" : "");
		may_deny = mode == FLEXMMAP_NX_WXORX;
	}

	exec_rules(mode, is32, gs, &rie, &stack_x);
	check_bool("READ_IMPLIES_EXEC", r.rie, rie);
	check_bool("stack executable in maps", r.stack_x, stack_x);
	if (nx_enforced()) {
		check_bool("code on the stack runs", r.stack_run, stack_x);
	} else {
		/* Without NX enforcement all code runs: the rule is 1. */
		ksft_print_msg("code in non-executable pages runs (no NX: the CPU has none, or a 32-bit PAE kernel without pae_nx): code on the stack runs whatever the mode\n");
		check_bool("code on the stack runs (no NX enforcement)",
			   r.stack_run, 1);
	}
	check_bool("heap executable in maps", r.heap_x, rie);
	check_wx("mmap(RWX) anonymous", r.mmap_rwx, may_deny, !any);
	check_wx("mprotect(RX) of written memory", r.mprotect_wx, may_deny,
		 !any);
	check_wx("mprotect(R) then mprotect(RX) of written memory",
		 r.mprotect_w_r_x, may_deny, !any);
	check_wx("mprotect(RWX) of a stack page", r.mprotect_stack, may_deny,
		 !any);
	check_wx("personality(READ_IMPLIES_EXEC)", r.personality_rie, may_deny,
		 !any);
	check_err("mmap(RX) of our own executable", r.file_rx, 0);
	check_wx("pthread_create", r.thread, may_deny && gs != GS_RW, !any);
	ksft_finished();
}
