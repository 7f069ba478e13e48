// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-ptest: the parisc guest's test suite (tests/parisc/check runs each
 * group in its own boot).  The guest has no shell, so what the x86 suite
 * does with bash and the probes, this does in C: it loads and unloads the
 * module itself (finit_module, delete_module), writes the control files,
 * and runs itself again (/proc/self/exe) as the process whose layout is
 * looked at, since the layout is chosen at exec.
 *
 * Usage: fmm-ptest GROUP MODULE.ko
 *   load      bad module parameters, bad writes to every control file (as
 *             root; refused to nobody, to root of a user namespace, to a
 *             uid 0 without CAP_SYS_ADMIN), what nobody and a new PID
 *             namespace read, double load, unload when not loaded,
 *             load/unload cycles; nothing is left behind
 *   matrix    every vm.flexmmap_layout mode x {binary with PT_GNU_STACK,
 *             without, personality ADDR_COMPAT_LAYOUT, vm.legacy_va_layout=1}:
 *             the direction and place of a new process's mmaps and what
 *             /proc/flexmmap/self says; a hard stack limit moves the base
 *   colour    the cache-colour rule (SHM_COLOUR) under layouts 0 (the
 *             kernel's allocator: the control), 1 and 2: shared and
 *             private file mappings, SysV shm and shared anonymous memory
 *             at the colours the kernel's allocator gave them, within one
 *             process and across a fork, with and without hints, MAP_FIXED
 *             at the right and a wrong colour; private anonymous memory
 *             left unaligned
 *   retarget  vm.flexmmap_retarget on a running process, and bad requests
 *   unload    rmmod under a process mapping, unmapping and forking on the
 *             module's allocator: bounded, and the process goes on
 *   compare   not a test: the maps of fmm-sleep with no module and under each
 *             mode, for flexmmap-compare --from (qemu/compare-parisc)
 * Internal (run by the groups): fmm-ptest probe | colour-probe
 *
 * Output is KTAP (kselftest.h); exit 0 when every result passed.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <regex.h>
#include <grp.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest.h"

#define SHM_COLOUR	0x00400000UL	/* arch/parisc/include/asm/shmparam.h */
#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define LAYOUT	"/proc/sys/vm/flexmmap_layout"
#define NX	"/proc/sys/vm/flexmmap_nx"
#define RETARGET "/proc/sys/vm/flexmmap_retarget"
#define LEGACY_VA "/proc/sys/vm/legacy_va_layout"
#define SELF	"/proc/flexmmap/self"
#define TASKS	"/proc/flexmmap/tasks"
#define NOGNUSTACK "/tmp/fmm-ptest-nognustack"
#define NOBODY	65534
/* The "R" lines of one colour-probe. */
#define COLOUR_RESULTS	17

/*
 * Where each layout puts a new 32-bit process's mmaps: top-down fills down
 * from the bottom of the stack's room (0xf7b01000 with the default limits),
 * bottom-up goes up from TASK_UNMAPPED_BASE (0x40000000) plus at most
 * 0x1fff pages of randomisation.
 */
#define BOTTOMUP_LO	0x40000000UL
#define BOTTOMUP_HI	0x44000000UL
#define TOPDOWN_LO	0xe0000000UL

static const char *module_path;
static unsigned long page;

/* --- small helpers ------------------------------------------------------ */

static int mod_load(const char *params)
{
	int fd = open(module_path, O_RDONLY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0) ? -errno : 0;
	close(fd);
	return ret;
}

static int mod_unload(void)
{
	return syscall(SYS_delete_module, "flexmmap", O_NONBLOCK) ? -errno : 0;
}

static bool mod_loaded(void)
{
	return !access("/sys/module/flexmmap", F_OK);
}

/* Nothing of the module left: not loaded, no sysctl, no /proc/flexmmap. */
static bool mod_gone(void)
{
	return !mod_loaded() && access(LAYOUT, F_OK) && access("/proc/flexmmap", F_OK);
}

/* mod_unload(), how long it took into *SECS. */
static int mod_unload_timed(double *secs)
{
	struct timespec t0, t1;
	int ret;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = mod_unload();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	*secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	return ret;
}

/* Write TEXT to PATH in one write(); 0 or -errno. */
static int ctl_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Read PATH (at most SIZE - 1 bytes, a trailing newline dropped); 0 or -errno. */
static int ctl_read(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = 0, len = 0;

	buf[0] = '\0';
	if (fd < 0)
		return -errno;
	while ((size_t)len < size - 1 &&
	       (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	buf[len] = '\0';
	if (len && buf[len - 1] == '\n')
		buf[len - 1] = '\0';
	return 0;
}

static const char *err_name(int ret)
{
	return ret ? strerror(-ret) : "success";
}

static void set_layout(int mode)
{
	char v[4];
	int ret;

	snprintf(v, sizeof(v), "%d", mode);
	ret = ctl_write(LAYOUT, v);
	if (ret)
		ksft_exit_fail_msg("cannot set vm.flexmmap_layout=%d: %s\n", mode,
				   err_name(ret));
}

static void need_loaded(const char *params)
{
	int ret;

	if (mod_loaded())
		mod_unload();
	ret = mod_load(params);
	if (ret)
		ksft_exit_fail_msg("cannot load %s %s: %s\n", module_path, params,
				   err_name(ret));
}

/* Drop to nobody, for good (in a child). */
static int become_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		return -errno;
	/* Else /proc/self stays root's: no uid_map of our own. */
	return prctl(PR_SET_DUMPABLE, 1) ? -errno : 0;
}

/* What a child should be before it execs. */
struct spawn {
	const char *path;		/* default: /proc/self/exe */
	const char *arg;		/* argv[1] */
	unsigned long persona;		/* personality() bits to add */
	unsigned long stack_max;	/* RLIMIT_STACK's hard limit, if not 0 */
	bool legacy_va;			/* vm.legacy_va_layout=1 for its exec */
};

/*
 * Run S->path S->arg in a child, its stdout (and stderr) into OUT (at most
 * SIZE - 1 bytes).  Returns its wait status, or -1 if it could not run.
 * vm.legacy_va_layout is set for the exec when S->legacy_va asks, and back
 * to 0 after.
 */
static int run_child(const struct spawn *s, char *out, size_t size)
{
	const char *path = s->path ? s->path : "/proc/self/exe";
	int p[2], status;
	size_t len = 0;
	ssize_t n;
	pid_t pid;

	out[0] = '\0';
	if (pipe2(p, O_CLOEXEC))
		return -1;
	if (s->legacy_va)
		ctl_write(LEGACY_VA, "1");
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *argv[] = { "fmm-ptest", (char *)s->arg, NULL };

		dup2(p[1], 1);
		dup2(p[1], 2);
		if (s->persona && personality(PER_LINUX | s->persona) < 0)
			_exit(126);
		if (s->stack_max) {
			struct rlimit r;

			getrlimit(RLIMIT_STACK, &r);
			r.rlim_max = s->stack_max;
			if (r.rlim_cur > r.rlim_max)
				r.rlim_cur = r.rlim_max;
			if (setrlimit(RLIMIT_STACK, &r))
				_exit(125);
		}
		execv(path, argv);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], out + len, size - 1 - len)) > 0) {
		len += n;
		if (len == size - 1)
			break;
	}
	out[len] = '\0';
	close(p[0]);
	if (waitpid(pid, &status, 0) != pid)
		status = -1;
	if (s->legacy_va)
		ctl_write(LEGACY_VA, "0");
	return status;
}

/* The value after "KEY=" at the start of a line of BUF, or NULL. */
static const char *field(const char *buf, const char *key)
{
	size_t k = strlen(key);
	const char *l;

	for (l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, k) && l[k] == '=')
			return l + k + 1;
	return NULL;
}

/* "KEY=" as a number, 0 if absent. */
static unsigned long field_ul(const char *buf, const char *key)
{
	const char *v = field(buf, key);

	return v ? strtoul(v, NULL, 0) : 0;
}

/* The text of "KEY=" to the end of its line, into V ("" if absent). */
static void field_str(const char *buf, const char *key, char *v, size_t size)
{
	const char *l = field(buf, key);

	v[0] = '\0';
	if (l)
		snprintf(v, size, "%.*s", (int)(strchrnul(l, '\n') - l), l);
}

/* The mode and allocator of a /proc/flexmmap line "PID MODE ALLOC nx=N COMM". */
static void self_fields(const char *line, char *mode, char *alloc)
{
	mode[0] = alloc[0] = '\0';
	if (sscanf(line, "%*d %31s %31s", mode, alloc) != 2)
		mode[0] = alloc[0] = '\0';
}

/* Our line of /proc/flexmmap/tasks for PID: its mode and allocator. */
static void task_fields(pid_t pid, char *mode, char *alloc)
{
	char buf[8192], *l;

	mode[0] = alloc[0] = '\0';
	if (ctl_read(TASKS, buf, sizeof(buf)))
		return;
	for (l = buf; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (atoi(l) == pid) {
			self_fields(l, mode, alloc);
			return;
		}
}

/* Print each line of BUF as a "#" diagnostic. */
static void show_output(const char *what, const char *buf)
{
	const char *l, *e;

	for (l = buf; *l; l = *e ? e + 1 : e) {
		e = strchrnul(l, '\n');
		ksft_print_msg("%s: %.*s\n", what, (int)(e - l), l);
	}
}

/* --- the processes the groups look at ----------------------------------- */

/* "probe": four anonymous mmaps, what the module says, the personality. */
static int probe_main(void)
{
	char line[256];
	int i;

	for (i = 0; i < 4; i++) {
		void *p = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 1;
		printf("mmap%d=%p\n", i, p);
	}
	if (!ctl_read(SELF, line, sizeof(line)))
		printf("self=%s\n", line);
	printf("persona=0x%x\n", personality(0xffffffff));
	return 0;
}

static unsigned long colour0(const void *addr, unsigned long pgoff)
{
	return ((unsigned long)addr - pgoff * page) & (SHM_COLOUR - 1);
}

/* A result line of colour-probe, for the parent to count. */
static void cresult(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("R %d ", ok);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/*
 * A free, SHM_COLOUR-aligned address with two colours of room above it:
 * reserved, then given back, so MAP_FIXED there replaces nothing.
 */
static unsigned long free_colour_base(void)
{
	void *r = mmap(NULL, 4 * SHM_COLOUR, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long base;

	if (r == MAP_FAILED)
		return 0;
	munmap(r, 4 * SHM_COLOUR);
	base = ((unsigned long)r + SHM_COLOUR - 1) & ~(SHM_COLOUR - 1);
	return base;
}

/* A hint one page past colour WANT, below ADDR, where nothing is mapped. */
static void *off_colour_hint(const void *addr, unsigned long want)
{
	return (void *)((((unsigned long)addr / 2) & ~(SHM_COLOUR - 1)) + want + page);
}

/*
 * Where the kernel's rule puts a mapping of page PGOFF hinted at HINT, if
 * that place is free: COLOR_ALIGN(), the hint moved up to the next colour
 * boundary plus the page's colour (page 0's colour WANT).
 */
static unsigned long colour_aligned(const void *hint, unsigned long want,
				    unsigned long pgoff)
{
	return (((unsigned long)hint + SHM_COLOUR - 1) & ~(SHM_COLOUR - 1)) +
	       ((want + pgoff * page) & (SHM_COLOUR - 1));
}

/* The object the colour tests map: made by the group, inherited by the probe. */
struct colour_obj {
	int fd;				/* a 16-page file */
	int shmid;			/* a 16-page SysV segment */
	unsigned long file_colour;	/* page 0's colour where the group mapped them */
	unsigned long shm_colour;
};

/* The child's half: its mappings of the file (one hinted) and of the segment. */
static void child_maps(const struct colour_obj *o, int out)
{
	unsigned long r[4];
	void *m, *hint;

	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 3 * page);
	r[0] = m == MAP_FAILED ? 0 : (unsigned long)m;
	hint = off_colour_hint(m, 0);
	r[1] = (unsigned long)hint;
	m = mmap(hint, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 2 * page);
	r[2] = m == MAP_FAILED ? 0 : (unsigned long)m;
	m = shmat(o->shmid, NULL, 0);
	r[3] = m == (void *)-1 ? 0 : (unsigned long)m;
	_exit(write(out, r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

/*
 * "colour-probe": the colour rule, from inside a process whose allocator
 * the group chose (vm.flexmmap_layout before the exec).  The file and the
 * segment are the group's (FMM_COLOUR: "FD SHMID FILE_COLOUR SHM_COLOUR"),
 * mapped there on the kernel's allocator: every mapping here must agree
 * with those colours.  Prints "R 1|0 DESCRIPTION" lines and "# " notes.
 * FMM_WANT: topdown or bottomup, the direction of the first mapping.
 */
static int colour_probe_main(void)
{
	const char *w = getenv("FMM_WANT"), *c0 = getenv("FMM_COLOUR");
	bool topdown = w && !strcmp(w, "topdown");
	unsigned long want, c, base, exp, r[4] = { 0 };
	struct colour_obj o;
	void *a, *b, *m, *s1, *s2, *hint;
	int p[2], status, fd, i;
	char self[256];
	pid_t pid;

	if (!ctl_read(SELF, self, sizeof(self)))
		printf("# self: %s\n", self);
	if (!c0 || sscanf(c0, "%d %d %lx %lx", &o.fd, &o.shmid, &o.file_colour,
			  &o.shm_colour) != 4) {
		printf("# no FMM_COLOUR from the group\n");
		return 1;
	}
	fd = o.fd;
	want = o.file_colour;

	/* One file, MAP_SHARED, within one process. */
	a = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a == MAP_FAILED) {
		printf("# mmap: %s\n", strerror(errno));
		return 1;
	}
	cresult(topdown ? (unsigned long)a >= TOPDOWN_LO :
		(unsigned long)a >= BOTTOMUP_LO && (unsigned long)a < BOTTOMUP_HI,
		"first shared file mapping is %s: %p", topdown ? "top-down" : "bottom-up", a);
	c = colour0(a, 0);
	cresult(c == want, "shared file, pgoff 0, no hint: page 0 at the colour the kernel's allocator gave it in another process: 0x%06lx (want 0x%06lx)",
		c, want);
	hint = off_colour_hint(a, want);
	exp = colour_aligned(hint, want, 7);
	b = mmap(hint, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 7 * page);
	cresult((unsigned long)b == exp, "shared file, pgoff 7, hinted at %p (another colour): at %p, want 0x%lx (the hint moved up to the colour)",
		hint, b, exp);
	b = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 5 * page);
	c = b == MAP_FAILED ? ~0UL : colour0(b, 5);
	cresult(c == want, "shared file, pgoff 5, no hint: page 0's colour 0x%06lx (want 0x%06lx), at %p",
		c, want, b);
	b = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE, fd, 3 * page);
	c = b == MAP_FAILED ? ~0UL : colour0(b, 3);
	cresult(c == want, "private file, pgoff 3, no hint: page 0's colour 0x%06lx (want 0x%06lx), at %p",
		c, want, b);

	/* MAP_FIXED: the right colour maps, off it is refused. */
	base = free_colour_base();
	m = mmap((void *)(base + want), 2 * page, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	cresult(m == (void *)(base + want), "MAP_FIXED_NOREPLACE at page 0's colour (0x%lx): %s",
		base + want, m == MAP_FAILED ? strerror(errno) : "mapped");
	if (m != MAP_FAILED)
		munmap(m, 2 * page);
	m = mmap((void *)(base + want + page), 2 * page, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED_NOREPLACE, fd, 0);
	cresult(m == MAP_FAILED && errno == EINVAL,
		"MAP_FIXED_NOREPLACE one page off the colour (0x%lx) fails with EINVAL: %s",
		base + want + page, m == MAP_FAILED ? strerror(errno) : "it was mapped");
	if (m != MAP_FAILED)
		munmap(m, 2 * page);
	m = mmap((void *)(base + want + 2 * page), 2 * page, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, 0);
	cresult(m == MAP_FAILED && errno == EINVAL,
		"MAP_FIXED two pages off the colour (0x%lx) fails with EINVAL: %s",
		base + want + 2 * page, m == MAP_FAILED ? strerror(errno) : "it was mapped");
	if (m != MAP_FAILED)
		munmap(m, 2 * page);

	/* SysV shm: two attachments here, one in the child. */
	s1 = shmat(o.shmid, NULL, 0);
	s2 = shmat(o.shmid, NULL, 0);
	cresult(s1 != (void *)-1 && s2 != (void *)-1 && colour0(s1, 0) == o.shm_colour &&
		colour0(s2, 0) == o.shm_colour,
		"SysV shm attached twice: %p and %p, colours 0x%06lx 0x%06lx (want 0x%06lx, the group's)",
		s1, s2, colour0(s1, 0), colour0(s2, 0), o.shm_colour);
	base = free_colour_base();
	m = shmat(o.shmid, (void *)(base + o.shm_colour), 0);
	cresult(m == (void *)(base + o.shm_colour), "SysV shm at an address of its colour (0x%lx): %s",
		base + o.shm_colour, m == (void *)-1 ? strerror(errno) : "attached");
	if (m != (void *)-1)
		shmdt(m);
	m = shmat(o.shmid, (void *)(base + o.shm_colour + page), 0);
	cresult(m == (void *)-1 && errno == EINVAL,
		"SysV shm one page off its colour (0x%lx) fails with EINVAL: %s",
		base + o.shm_colour + page, m == (void *)-1 ? strerror(errno) : "attached");
	if (m != (void *)-1)
		shmdt(m);

	/* Shared anonymous memory: colour 0, with or without a hint. */
	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cresult(m != MAP_FAILED && !colour0(m, 0),
		"shared anonymous, no hint: at %p, colour 0x%06lx (want 0)", m, colour0(m, 0));
	hint = off_colour_hint(a, 0);
	exp = colour_aligned(hint, 0, 0);
	b = mmap(hint, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cresult((unsigned long)b == exp,
		"shared anonymous, hinted at %p (another colour): at %p, want 0x%lx", hint, b, exp);

	/* Private anonymous memory has no colour to keep: not aligned. */
	for (i = 0, c = 0; i < 4; i++) {
		m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		c += m != MAP_FAILED && colour0(m, 0) != 0;
	}
	cresult(c > 0, "private anonymous, four one-page mappings: %lu of them off colour 0 (want at least 1: no alignment)",
		c);

	/* Another process: the rule is per object, not per mm. */
	if (pipe(p))
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child_maps(&o, p[1]);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], r, sizeof(r)) != sizeof(r))
		printf("# the child did not report\n");
	waitpid(pid, &status, 0);
	c = r[0] ? colour0((void *)r[0], 3) : ~0UL;
	cresult(c == want, "child: shared file, pgoff 3, no hint: page 0's colour 0x%06lx (want 0x%06lx), at 0x%lx",
		c, want, r[0]);
	exp = colour_aligned((void *)r[1], want, 2);
	cresult(r[2] && r[2] == exp, "child: shared file, pgoff 2, hinted at 0x%lx: at 0x%lx, want 0x%lx",
		r[1], r[2], exp);
	c = r[3] ? colour0((void *)r[3], 0) : ~0UL;
	cresult(c == o.shm_colour, "child: SysV shm: colour 0x%06lx (want 0x%06lx), at 0x%lx",
		c, o.shm_colour, r[3]);
	return 0;
}

/* --- group: load --------------------------------------------------------- */

/* Who a child becomes to try a control file. */
enum who {
	NOBODY_PLAIN,		/* nobody */
	NOBODY_USERNS,		/* root of a user namespace, nobody outside */
	ROOT_USERNS,		/* root of a user namespace, root outside (unshare -U -r) */
	ROOT_NOCAP,		/* uid 0 without CAP_SYS_ADMIN */
	AS_IS,			/* root, unchanged */
};

static const char *const who_names[] = {
	"nobody", "root of a user namespace (nobody outside)",
	"root of a user namespace (root outside)", "uid 0 without CAP_SYS_ADMIN",
	"root",
};

static int map_self_as_root(uid_t outside)
{
	char map[32];

	if (unshare(CLONE_NEWUSER))
		return -errno;
	snprintf(map, sizeof(map), "0 %u 1", outside);
	if (ctl_write("/proc/self/setgroups", "deny") ||
	    ctl_write("/proc/self/uid_map", map) ||
	    ctl_write("/proc/self/gid_map", map))
		return -EPERM;
	return 0;
}

static int drop_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	d[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
	d[CAP_SYS_ADMIN / 32].permitted &= ~(1U << (CAP_SYS_ADMIN % 32));
	return syscall(SYS_capset, &h, d) ? -errno : 0;
}

static int become(enum who who)
{
	switch (who) {
	case NOBODY_PLAIN:
		return become_nobody();
	case NOBODY_USERNS: {
		int ret = become_nobody();

		return ret ? ret : map_self_as_root(NOBODY);
	}
	case ROOT_USERNS:
		return map_self_as_root(0);
	case ROOT_NOCAP:
		return drop_sys_admin();
	case AS_IS:
		return 0;
	}
	return -EINVAL;
}

/*
 * Run FN(ARG) in a child that became WHO: FN's result (0 or -errno), or
 * -EIO if the child could not become WHO (said in a "#" line).
 */
static int as_other(enum who who, int (*fn)(const char *), const char *arg)
{
	int status, ret;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (become(who))
			_exit(99);
		ret = fn(arg);
		_exit(ret < 0 ? -ret : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -EIO;
	ret = WEXITSTATUS(status);
	if (ret == 99)
		ksft_print_msg("the child could not become %s\n", who_names[who]);
	return ret == 99 ? -EIO : -ret;
}

static int write_layout_2(const char *path) { return ctl_write(path, "2"); }
static int write_nx_1(const char *path) { return ctl_write(path, "1"); }
/* REQ: "PID MODE" for vm.flexmmap_retarget. */
static int write_retarget(const char *req) { return ctl_write(RETARGET, req); }

/* A file that reads as something, or -errno (-ENODATA when empty). */
static int read_file(const char *path)
{
	char buf[4096];
	int ret = ctl_read(path, buf, sizeof(buf));

	return ret ? ret : buf[0] ? 0 : -ENODATA;
}

/* As nobody: init's line is there, without its mode (not ours to read). */
static int nobody_sees_init(const char *unused __attribute__((unused)))
{
	char mode[32], alloc[32];

	task_fields(1, mode, alloc);
	if (!mode[0])
		return -ENOENT;
	return strcmp(mode, "-") ? -EBADMSG : 0;
}

/*
 * In a new PID namespace, with a /proc of its own: the first process reads
 * its own line as PID 1, and the tasks file lists it alone.  0 if so.
 */
static int pidns_view(const char *unused __attribute__((unused)))
{
	char self[128], tasks[4096];
	int status, lines = 0;
	const char *l;
	pid_t pid;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (mount("proc", "/proc", "proc", MS_NOSUID, NULL))
			_exit(2);
		ctl_read(SELF, self, sizeof(self));
		ctl_read(TASKS, tasks, sizeof(tasks));
		for (l = tasks; *l; l = strchrnul(l, '\n'), l += !!*l)
			lines++;
		ksft_print_msg("in a new PID namespace: self '%s', tasks %d line(s): '%.60s'\n",
			       self, lines, tasks);
		_exit(!strncmp(self, "1 ", 2) && lines == 1 && !strncmp(tasks, "1 ", 2) ? 0 : 1);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EBADMSG;
}

static void group_load(void)
{
	static const char *const bad_params[] = {
		"layout=4", "layout=-1", "layout=abc", "layout=2x", "nx=9", "nx=",
	};
	static const char *const bad_values[] = {
		"4", "5", "-1", "2147483648", "99999999999999999999", "abc", "1x",
		" ", "+", "3.0",
	};
	const char *files[] = { LAYOUT, NX };
	char v[64], keep[64], accepted[512];
	int i, j, ret, loaded_after = 0;
	enum who w;
	double secs;

	ksft_set_plan(18);
	if (mod_loaded())
		mod_unload();

	for (i = 0, accepted[0] = '\0'; i < (int)ARRAY_SIZE(bad_params); i++) {
		ret = mod_load(bad_params[i]);
		if (!ret) {
			snprintf(accepted + strlen(accepted), sizeof(accepted) - strlen(accepted),
				 "'%s' ", bad_params[i]);
			mod_unload();
		}
		loaded_after += !mod_gone();
	}
	ksft_test_result(!accepted[0], "%zu bad module parameters refused at load%s%s\n",
			 ARRAY_SIZE(bad_params), accepted[0] ? "; accepted: " : "", accepted);
	ksft_test_result(!loaded_after, "a refused load leaves no module, no sysctl, no /proc/flexmmap (%d left)\n",
			 loaded_after);

	ret = mod_load("layout=2");
	ctl_read(LAYOUT, v, sizeof(v));
	ksft_test_result(!ret && !strcmp(v, "2"), "insmod layout=2: %s, vm.flexmmap_layout reads '%s'\n",
			 err_name(ret), v);
	ret = mod_load("layout=1");
	ksft_test_result(ret == -EEXIST, "a second load fails with EEXIST: %s\n", err_name(ret));

	for (j = 0; j < 2; j++) {
		int changed = 0;

		ctl_read(files[j], keep, sizeof(keep));
		for (i = 0, accepted[0] = '\0'; i < (int)ARRAY_SIZE(bad_values); i++) {
			if (!ctl_write(files[j], bad_values[i]))
				snprintf(accepted + strlen(accepted),
					 sizeof(accepted) - strlen(accepted), "'%s' ",
					 bad_values[i]);
			ctl_read(files[j], v, sizeof(v));
			changed += strcmp(v, keep) != 0;
			ctl_write(files[j], keep);
		}
		/* An empty write is no request: it succeeds and changes nothing. */
		ctl_write(files[j], "");
		ctl_read(files[j], v, sizeof(v));
		changed += strcmp(v, keep) != 0;
		ksft_test_result(!accepted[0] && !changed,
				 "%s: %zu bad values refused, and an empty write, value kept (%s); accepted: %s; changed %d times\n",
				 files[j], ARRAY_SIZE(bad_values), keep,
				 accepted[0] ? accepted : "none", changed);
	}

	/*
	 * The files' modes refuse nobody at open (EACCES); a uid 0 that is
	 * not CAP_SYS_ADMIN in the initial user namespace gets through the
	 * mode and is refused by the module's own check (EPERM).
	 */
	for (w = NOBODY_PLAIN; w <= ROOT_NOCAP; w++) {
		int want = w <= NOBODY_USERNS ? -EACCES : -EPERM;
		int r1 = as_other(w, write_layout_2, LAYOUT);
		int r2 = as_other(w, write_nx_1, NX);
		int r3 = as_other(w, write_retarget, "1 legacy");

		ctl_read(LAYOUT, v, sizeof(v));
		ctl_read(NX, keep, sizeof(keep));
		ksft_test_result(r1 == want && r2 == want && r3 == want && !strcmp(v, "2") &&
				 !strcmp(keep, "0"),
				 "%s cannot write vm.flexmmap_layout, _nx, _retarget (%s expected: %s, %s, %s); layout %s, nx %s\n",
				 who_names[w], err_name(want), err_name(r1), err_name(r2),
				 err_name(r3), v, keep);
	}
	ret = as_other(NOBODY_PLAIN, read_file, LAYOUT);
	ret = ret ? ret : as_other(NOBODY_PLAIN, read_file, "/proc/flexmmap/stats");
	ret = ret ? ret : as_other(NOBODY_PLAIN, read_file, TASKS);
	ret = ret ? ret : as_other(NOBODY_PLAIN, read_file, SELF);
	ksft_test_result(!ret, "nobody reads vm.flexmmap_layout, /proc/flexmmap/stats, tasks and self (none empty): %s\n",
			 err_name(ret));
	ret = as_other(NOBODY_PLAIN, nobody_sees_init, NULL);
	ksft_test_result(!ret, "nobody sees init's line in /proc/flexmmap/tasks without its mode ('-'): %s\n",
			 err_name(ret));
	ret = as_other(AS_IS, pidns_view, NULL);
	ksft_test_result(!ret, "in a new PID namespace with its own /proc: self is PID 1, tasks lists it alone: %s\n",
			 err_name(ret));
	ctl_read(LAYOUT, v, sizeof(v));
	ksft_test_result(!strcmp(v, "2"), "after all that, vm.flexmmap_layout still reads 2: '%s'\n", v);

	ret = mod_unload_timed(&secs);
	ksft_test_result(!ret && mod_gone(),
			 "rmmod: %s in %.1f s; module, sysctls and /proc/flexmmap gone\n",
			 err_name(ret), secs);
	ret = mod_unload();
	ksft_test_result(ret == -ENOENT, "rmmod when not loaded fails with ENOENT: %s\n", err_name(ret));

	for (i = 0, ret = 0; i < 5 && !ret; i++) {
		snprintf(v, sizeof(v), "layout=%d", i % 4);
		ret = mod_load(v);
		if (!ret)
			ret = mod_unload();
	}
	ksft_test_result(!ret && !mod_loaded(), "5 load/unload cycles: %s after %d\n", err_name(ret), i);

	ret = mod_load("layout=4");
	ksft_test_result(ret == -EINVAL, "layout=4 at load fails with EINVAL (as the sysctl does): %s\n",
			 err_name(ret));
	if (!ret)
		mod_unload();
}

/* --- group: matrix ------------------------------------------------------- */

/* A copy of this program without PT_GNU_STACK (its p_type made PT_NULL). */
static int make_nognustack(void)
{
	static char buf[4 << 20];
	Elf32_Ehdr *eh = (Elf32_Ehdr *)buf;
	int in, out, i, found = 0;
	ssize_t n, len = 0;

	in = open("/proc/self/exe", O_RDONLY);
	if (in < 0)
		return -errno;
	while (len < (ssize_t)sizeof(buf) && (n = read(in, buf + len, sizeof(buf) - len)) > 0)
		len += n;
	close(in);
	if (len == (ssize_t)sizeof(buf))
		return -EFBIG;
	if (len < (ssize_t)sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS32 || eh->e_ident[EI_DATA] != ELFDATA2MSB)
		return -ENOEXEC;
	for (i = 0; i < be16toh(eh->e_phnum); i++) {
		Elf32_Phdr *ph = (Elf32_Phdr *)(buf + be32toh(eh->e_phoff) +
						i * be16toh(eh->e_phentsize));

		if ((char *)(ph + 1) > buf + len)
			return -ENOEXEC;
		if (be32toh(ph->p_type) == PT_GNU_STACK) {
			ph->p_type = htobe32(PT_NULL);
			found = 1;
		}
	}
	if (!found)
		return -ENOENT;
	out = open(NOGNUSTACK, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (out < 0)
		return -errno;
	n = write(out, buf, len);
	close(out);
	return n == len ? 0 : -EIO;
}

/*
 * The kernel's own rule says legacy for ADDR_COMPAT_LAYOUT and
 * vm.legacy_va_layout=1; auto's rule says legacy for those and for a
 * binary without PT_GNU_STACK (the one variant with a path of its own).
 */
static const struct variant {
	const char *name;
	struct spawn s;
} variants[] = {
	{ "has-gnu-stack", { .arg = "probe" } },
	{ "no-gnu-stack", { .arg = "probe", .path = NOGNUSTACK } },
	{ "personality ADDR_COMPAT_LAYOUT", { .arg = "probe", .persona = ADDR_COMPAT_LAYOUT } },
	{ "vm.legacy_va_layout=1", { .arg = "probe", .legacy_va = true } },
};

/*
 * A hard stack limit moves the top-down base: the bottom of the room exec
 * leaves the stack, STACK_TOP (0xfff00000 for a 32-bit task) less the
 * limit and, with randomisation, the stack's whole random range (0x1fff
 * pages).  Under MODE (and vm.legacy_va_layout=1 if LEGACY_VA: the kernel
 * chose bottom-up and the module recomputes the base), a process with a
 * 64 MiB hard limit: its first mmap ends at that base, or at most 36
 * pages below it (its vDSO goes 0-31 pages below the base).
 */
static void stack_limit_base(int mode, bool legacy_va)
{
	struct spawn s = { .arg = "probe", .stack_max = 64UL << 20, .legacy_va = legacy_va };
	unsigned long base, end;
	char v[16], out[4096];
	int status;

	ctl_read("/proc/sys/kernel/randomize_va_space", v, sizeof(v));
	base = 0xfff00000UL - s.stack_max - (atoi(v) ? 0x1fffUL * page : 0);
	set_layout(mode);
	status = run_child(&s, out, sizeof(out));
	end = field_ul(out, "mmap0") + 4 * page;
	ksft_test_result(status == 0 && end <= base && end >= base - 36 * page,
			 "%slayout=%d%s, hard stack limit 64 MiB: the first mmap ends at the base 0x%lx or just below: 0x%lx\n",
			 mode ? "" : "control: ", mode, legacy_va ? ", vm.legacy_va_layout=1" : "",
			 base, end);
	if (status)
		show_output("probe", out);
}

static void group_matrix(void)
{
	static const char *const mode_names[] = { "kernel", "legacy", "flexible", "auto" };
	char out[4096], self[128], mode[32], alloc[32], want_alloc[32];
	int m, i, k, status, ret;

	ksft_set_plan(1 + 4 * ARRAY_SIZE(variants) + 3);
	ret = make_nognustack();
	ksft_test_result(!ret, "a copy of this program without PT_GNU_STACK: %s\n", err_name(ret));
	need_loaded("layout=0");
	for (m = 0; m < 4; m++) {
		set_layout(m);
		for (i = 0; i < (int)ARRAY_SIZE(variants); i++) {
			const struct variant *v = &variants[i];
			bool kernel_legacy = v->s.persona || v->s.legacy_va;
			bool old_binary = kernel_legacy || v->s.path;
			unsigned long a[4];
			bool legacy, down = true, up = true, ok;
			char key[8];

			legacy = m == 1 || (m == 3 && old_binary) ||
				 (m == 0 && kernel_legacy);
			snprintf(want_alloc, sizeof(want_alloc), "%s-%s",
				 m ? "module" : "kernel", legacy ? "bottomup" : "topdown");
			status = run_child(&v->s, out, sizeof(out));
			for (k = 0; k < 4; k++) {
				snprintf(key, sizeof(key), "mmap%d", k);
				a[k] = field_ul(out, key);
				if (k) {
					down &= a[k] < a[k - 1];
					up &= a[k] > a[k - 1];
				}
			}
			field_str(out, "self", self, sizeof(self));
			self_fields(self, mode, alloc);
			if (legacy)
				ok = up && a[0] >= BOTTOMUP_LO && a[0] < BOTTOMUP_HI;
			else
				ok = down && a[0] >= TOPDOWN_LO;
			ok = ok && status == 0 && !strcmp(alloc, want_alloc) &&
			     !strcmp(mode, mode_names[m]);
			ksft_test_result(ok, "%slayout=%d %s: %s, %s, mode %s (mmaps 0x%lx 0x%lx 0x%lx 0x%lx; self '%s')\n",
					 m ? "" : "control (layout=0 leaves the kernel's choice): ",
					 m, v->name, legacy ? "bottomup" : "topdown", want_alloc,
					 mode_names[m], a[0], a[1], a[2], a[3], self);
			if (!ok)
				show_output("probe", out);
		}
	}
	stack_limit_base(0, false);
	stack_limit_base(2, false);
	stack_limit_base(2, true);
	set_layout(0);
	if (mod_unload())
		ksft_exit_fail_msg("rmmod after the matrix failed\n");
}

/* --- group: colour ------------------------------------------------------- */

/*
 * The file and the segment the colour-probes map, made and mapped here
 * first: this process was exec'd before the module was loaded, so the
 * kernel's own allocator gives their colours.
 */
static void colour_obj_make(struct colour_obj *o)
{
	char path[] = "/tmp/fmm-ptest.XXXXXX";
	void *m;

	o->fd = mkstemp(path);
	if (o->fd < 0 || unlink(path) || ftruncate(o->fd, 16 * page))
		ksft_exit_fail_msg("cannot make a 16-page file: %s\n", strerror(errno));
	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, o->fd, 0);
	if (m == MAP_FAILED)
		ksft_exit_fail_msg("mmap of the file: %s\n", strerror(errno));
	o->file_colour = colour0(m, 0);
	o->shmid = shmget(IPC_PRIVATE, 16 * page, IPC_CREAT | 0600);
	m = o->shmid < 0 ? (void *)-1 : shmat(o->shmid, NULL, 0);
	if (m == (void *)-1)
		ksft_exit_fail_msg("SysV shm: %s\n", strerror(errno));
	o->shm_colour = colour0(m, 0);
	ksft_print_msg("the file's page 0 at colour 0x%06lx, the segment's at 0x%06lx (kernel's allocator)\n",
		       o->file_colour, o->shm_colour);
}

static void group_colour(void)
{
	static const int layouts[] = { 0, 1, 2 };
	static const char *const allocs[] = { "kernel-topdown", "module-bottomup",
					      "module-topdown" };
	char out[16384], mode[32], alloc[32], env[96];
	struct colour_obj o;
	int i, status, results;

	/* COLOUR_RESULTS from each colour-probe, 1 for its allocator and exit. */
	ksft_set_plan(ARRAY_SIZE(layouts) * (COLOUR_RESULTS + 1));
	colour_obj_make(&o);
	snprintf(env, sizeof(env), "%d %d %lx %lx", o.fd, o.shmid, o.file_colour, o.shm_colour);
	setenv("FMM_COLOUR", env, 1);
	need_loaded("layout=0");
	for (i = 0; i < (int)ARRAY_SIZE(layouts); i++) {
		struct spawn s = { .arg = "colour-probe" };
		const char *l, *e;

		set_layout(layouts[i]);
		setenv("FMM_WANT", layouts[i] == 1 ? "bottomup" : "topdown", 1);
		status = run_child(&s, out, sizeof(out));
		results = 0;
		for (l = out; *l; l = *e ? e + 1 : e) {
			e = strchrnul(l, '\n');
			if (!strncmp(l, "R ", 2) && e - l > 4 && results < COLOUR_RESULTS) {
				results++;
				ksft_test_result(l[2] == '1', "layout=%d: %.*s\n", layouts[i],
						 (int)(e - l - 4), l + 4);
			} else if (e > l) {
				ksft_print_msg("layout=%d: %.*s\n", layouts[i], (int)(e - l), l);
			}
		}
		for (; results < COLOUR_RESULTS; results++)
			ksft_test_result_fail("layout=%d: a colour-probe result is missing\n", layouts[i]);
		l = strstr(out, "# self: ");
		self_fields(l ? l + 8 : "", mode, alloc);
		ksft_test_result(status == 0 && !strcmp(alloc, allocs[i]),
				 "layout=%d: colour-probe ran on %s and exited 0 (allocator '%s', status 0x%x)\n",
				 layouts[i], allocs[i], alloc, status);
	}
	shmctl(o.shmid, IPC_RMID, NULL);
	set_layout(0);
	if (mod_unload())
		ksft_exit_fail_msg("rmmod after the colour tests failed\n");
}

/* --- fmm-sleep, driven through pipes -------------------------------------- */

struct sleeper {
	pid_t pid;
	FILE *in, *out;			/* its stdin, its stdout */
};

static int sleeper_start(struct sleeper *sl, char *const argv[])
{
	int i[2], o[2];
	char line[128];

	if (pipe2(i, O_CLOEXEC) || pipe2(o, O_CLOEXEC))
		return -errno;
	sl->pid = fork();
	if (sl->pid < 0)
		return -errno;
	if (sl->pid == 0) {
		dup2(i[0], 0);
		dup2(o[1], 1);
		execv("/bin/fmm-sleep", argv);
		_exit(127);
	}
	close(i[0]);
	close(o[1]);
	sl->in = fdopen(i[1], "w");
	sl->out = fdopen(o[0], "r");
	if (!sl->in || !sl->out)
		return -ENOMEM;
	setvbuf(sl->in, NULL, _IOLBF, 0);
	if (!fgets(line, sizeof(line), sl->out) || strncmp(line, "ready", 5)) {
		kill(sl->pid, SIGKILL);
		waitpid(sl->pid, NULL, 0);
		fclose(sl->in);
		fclose(sl->out);
		return -EIO;
	}
	return 0;
}

/*
 * Send REQ, return the first reply line that matches WANT, an extended
 * regular expression (else ""); other lines are
 * shown as diagnostics.
 */
static const char *sleeper_ask(struct sleeper *sl, const char *req, const char *want,
			       char *line, size_t size)
{
	regex_t re;
	bool hit;

	if (regcomp(&re, want, REG_EXTENDED | REG_NOSUB))
		ksft_exit_fail_msg("bad pattern '%s'\n", want);
	fprintf(sl->in, "%s\n", req);
	fflush(sl->in);
	while (fgets(line, size, sl->out)) {
		line[strcspn(line, "\n")] = '\0';
		hit = !regexec(&re, line, 0, NULL, 0);
		if (hit) {
			regfree(&re);
			return line;
		}
		ksft_print_msg("fmm-sleep: %s\n", line);
	}
	regfree(&re);
	line[0] = '\0';
	return line;
}

/* "quit": its "done" line into LINE, its exit status returned. */
static int sleeper_stop(struct sleeper *sl, char *line, size_t size)
{
	int status = -1;

	sleeper_ask(sl, "quit", "^done ", line, size);
	fclose(sl->in);
	fclose(sl->out);
	waitpid(sl->pid, &status, 0);
	return status;
}

static unsigned long sleeper_map(struct sleeper *sl)
{
	char line[128];

	sleeper_ask(sl, "map", "^(mapped |fail map)", line, sizeof(line));
	return !strncmp(line, "mapped ", 7) ? strtoul(line + 7, NULL, 16) : 0;
}

static bool clean_done(const char *done, int status)
{
	return status == 0 && strstr(done, " failures=0 ") &&
	       strstr(done, "thread_failures=0") && strstr(done, "child_failures=0") &&
	       strstr(done, "fork_errors=0");
}

/* --- group: retarget ----------------------------------------------------- */

/*
 * Retarget SL's process to LAYOUT: the write succeeds, /proc/flexmmap/tasks
 * says ALLOC, and its next 64 KiB mapping lands in [LO, HI).
 */
static void retarget_to(struct sleeper *sl, const char *layout, const char *alloc_want,
			unsigned long lo, unsigned long hi)
{
	char req[64], mode[32], alloc[32];
	unsigned long a;
	int ret;

	snprintf(req, sizeof(req), "%d %s", sl->pid, layout);
	ret = ctl_write(RETARGET, req);
	task_fields(sl->pid, mode, alloc);
	a = sleeper_map(sl);
	ksft_test_result(!ret && !strcmp(alloc, alloc_want) && a >= lo && a < hi,
			 "retarget '%s': %s; now %s %s (want %s), a new mapping at 0x%lx, in [0x%lx, 0x%lx)\n",
			 req, err_name(ret), mode, alloc, alloc_want, a, lo, hi);
}

static void group_retarget(void)
{
	char *const argv[] = { "fmm-sleep", NULL };
	char req[64], mode[32], alloc[32], line[256];
	unsigned long a0;
	struct sleeper sl;
	int ret, status;

	ksft_set_plan(9);
	need_loaded("layout=2");
	ret = sleeper_start(&sl, argv);
	if (ret)
		ksft_exit_fail_msg("cannot start fmm-sleep: %s\n", err_name(ret));
	a0 = sleeper_map(&sl);
	task_fields(sl.pid, mode, alloc);
	ksft_test_result(a0 >= TOPDOWN_LO && !strcmp(alloc, "module-topdown"),
			 "under layout=2: %s %s, a new mapping top-down at 0x%lx\n", mode, alloc, a0);

	retarget_to(&sl, "legacy", "module-bottomup", BOTTOMUP_LO, BOTTOMUP_HI);
	/* Top-down again, below the first mapping (the base is recomputed). */
	retarget_to(&sl, "flexible", "module-topdown", TOPDOWN_LO, a0);
	retarget_to(&sl, "kernel", "kernel-topdown", TOPDOWN_LO, 0xffffffffUL);

	ret = ctl_write(RETARGET, "999999 legacy");
	ksft_test_result(ret == -ESRCH, "retarget of no such process fails with ESRCH: %s\n",
			 err_name(ret));
	snprintf(req, sizeof(req), "%d sideways", sl.pid);
	ret = ctl_write(RETARGET, req);
	ksft_test_result(ret == -EINVAL, "retarget '%s' fails with EINVAL: %s\n", req, err_name(ret));
	ret = ctl_write(RETARGET, "");
	ksft_test_result(ret == -EINVAL, "an empty retarget write fails with EINVAL: %s\n",
			 err_name(ret));
	snprintf(req, sizeof(req), "%d legacy", sl.pid);
	ret = as_other(NOBODY_PLAIN, write_retarget, req);
	task_fields(sl.pid, mode, alloc);
	ksft_test_result(ret == -EACCES && !strncmp(alloc, "kernel-", 7),
			 "nobody cannot retarget (%s); the process stays %s\n", err_name(ret), alloc);

	status = sleeper_stop(&sl, line, sizeof(line));
	ksft_test_result(clean_done(line, status), "fmm-sleep ends cleanly: '%s', status 0x%x\n",
			 line, status);
	if (mod_unload())
		ksft_exit_fail_msg("rmmod after the retarget tests failed\n");
}

/* --- group: unload ------------------------------------------------------- */

static void group_unload(void)
{
	char *const argv[] = { "fmm-sleep", "--threads", "2", "--fork-loop", NULL };
	char mode[32], alloc[32], line[256], out[4096], self[128];
	struct spawn s = { .arg = "probe" };
	struct sleeper sl;
	int ret, status, i, bad = 0;
	double secs;

	ksft_set_plan(7);
	need_loaded("layout=2");
	ret = sleeper_start(&sl, argv);
	if (ret)
		ksft_exit_fail_msg("cannot start fmm-sleep: %s\n", err_name(ret));
	sleep(2);
	task_fields(sl.pid, mode, alloc);
	ksft_test_result(!strcmp(alloc, "module-topdown"),
			 "fmm-sleep (2 threads mapping, a thread forking) runs on %s\n", alloc);

	ret = mod_unload_timed(&secs);
	ksft_test_result(!ret && secs < 60, "rmmod under it: %s in %.1f s (bound 60 s)\n",
			 err_name(ret), secs);
	ksft_test_result(mod_gone(), "module, sysctls and /proc/flexmmap gone\n");
	sleeper_ask(&sl, "check", "^(ok |fail [0-9])", line, sizeof(line));
	ksft_test_result(!strncmp(line, "ok ", 3), "fmm-sleep still maps after rmmod: '%s'\n", line);
	status = sleeper_stop(&sl, line, sizeof(line));
	ksft_test_result(clean_done(line, status), "fmm-sleep ends cleanly: '%s', status 0x%x\n",
			 line, status);

	status = run_child(&s, out, sizeof(out));
	field_str(out, "self", self, sizeof(self));
	ksft_test_result(status == 0 && field_ul(out, "mmap0") >= TOPDOWN_LO &&
			 field_ul(out, "mmap1") < field_ul(out, "mmap0") && !self[0],
			 "a new process after rmmod: the kernel's top-down, no /proc/flexmmap (mmap0 0x%lx)\n",
			 field_ul(out, "mmap0"));

	for (i = 0; i < 3; i++) {
		need_loaded("layout=1");
		ret = sleeper_start(&sl, argv);
		if (ret) {
			ksft_print_msg("cycle %d: cannot start fmm-sleep: %s\n", i, err_name(ret));
			bad++;
			continue;
		}
		sleep(1);
		bad += mod_unload() != 0;
		status = sleeper_stop(&sl, line, sizeof(line));
		bad += !clean_done(line, status);
	}
	ksft_test_result(!bad && !mod_loaded(),
			 "3 more cycles of load layout=1, fmm-sleep --fork-loop, rmmod under it: %d went wrong\n",
			 bad);
}

/* --- compare: the maps flexmmap-compare --from shows (qemu/compare-parisc) --- */

static int compare_run(const char *name, const char *title)
{
	char *const argv[] = { "fmm-sleep", NULL };
	char path[64], mode[32], alloc[32], line[256];
	struct sleeper sl;
	FILE *maps;
	int ret;

	ret = sleeper_start(&sl, argv);
	if (ret) {
		fprintf(stderr, "fmm-ptest: cannot start fmm-sleep: %s\n", err_name(ret));
		return 1;
	}
	task_fields(sl.pid, mode, alloc);
	printf("@@ run %s %s\n@@ alloc %s%s%s\n", name, title, mode,
	       mode[0] ? " / " : "-", alloc);
	snprintf(path, sizeof(path), "/proc/%d/maps", sl.pid);
	maps = fopen(path, "r");
	while (maps && fgets(line, sizeof(line), maps))
		fputs(line, stdout);
	if (maps)
		fclose(maps);
	return sleeper_stop(&sl, line, sizeof(line)) || !maps;
}

static int compare_main(void)
{
	static const char *const titles[] = { "mode 0 (kernel)", "mode 1 (legacy)",
					      "mode 2 (flexible)", "mode 3 (auto)" };
	char name[8], v[128];
	int m, ret = 0;

	if (mod_loaded())
		mod_unload();
	ctl_read("/proc/sys/kernel/osrelease", v, sizeof(v));
	printf("@@ kernel %s\n", v);
	ret |= compare_run("before", "no module");
	ret |= mod_load("") != 0;
	for (m = 0; m < 4 && !ret; m++) {
		set_layout(m);
		snprintf(name, sizeof(name), "mode%d", m);
		ret |= compare_run(name, titles[m]);
	}
	ret |= mod_unload() != 0;
	return ret;
}

static void on_alarm(int sig)
{
	static const char msg[] = "Bail out! fmm-ptest: the group took more than 600 s\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: fmm-ptest load|matrix|colour|retarget|unload|compare MODULE.ko\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} groups[] = {
		{ "load", group_load },
		{ "matrix", group_matrix },
		{ "colour", group_colour },
		{ "retarget", group_retarget },
		{ "unload", group_unload },
	};
	int i;

	page = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "probe"))
		return probe_main();
	if (argc == 2 && !strcmp(argv[1], "colour-probe"))
		return colour_probe_main();
	if (argc != 3)
		usage();
	module_path = argv[2];
	if (!strcmp(argv[1], "compare"))
		return compare_main();
	for (i = 0; i < (int)ARRAY_SIZE(groups); i++) {
		if (strcmp(argv[1], groups[i].name))
			continue;
		if (geteuid())
			ksft_exit_fail_msg("needs root\n");
		if (access(module_path, R_OK))
			ksft_exit_fail_msg("%s: %s\n", module_path, strerror(errno));
		ksft_print_header();
		/* Bounded here, before the host's time-out ends the whole boot. */
		signal(SIGALRM, on_alarm);
		alarm(600);
		groups[i].fn();
		ksft_finished();
	}
	usage();
}
