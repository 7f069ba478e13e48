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
 *             root, as nobody, in a user namespace), double load, unload
 *             when not loaded, load/unload cycles; nothing is left behind
 *   matrix    every vm.flexmmap_layout mode x {binary with PT_GNU_STACK,
 *             without, personality ADDR_COMPAT_LAYOUT, vm.legacy_va_layout=1}:
 *             the direction and place of a new process's mmaps and what
 *             /proc/flexmmap/self says
 *   colour    the cache-colour rule (SHM_COLOUR) under layouts 0 (the
 *             kernel's allocator: the control), 1 and 2: shared and
 *             private file mappings, SysV shm and shared anonymous memory,
 *             within one process and across a fork, with and without hints,
 *             MAP_FIXED at the right and a wrong colour
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
#include <grp.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
	ssize_t n, len = 0;

	buf[0] = '\0';
	if (fd < 0)
		return -errno;
	while ((size_t)len < size - 1 &&
	       (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
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
};

/*
 * Run S->path S->arg in a child, its stdout (and stderr) into OUT (at most
 * SIZE - 1 bytes).  Returns its wait status, or -1 if it could not run.
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
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *argv[] = { "fmm-ptest", (char *)s->arg, NULL };

		dup2(p[1], 1);
		dup2(p[1], 2);
		if (s->persona && personality(PER_LINUX | s->persona) < 0)
			_exit(126);
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
		return -1;
	return status;
}

/* The value of "KEY=" at the start of a line of BUF, 0 if absent. */
static unsigned long field_ul(const char *buf, const char *key)
{
	size_t k = strlen(key);
	const char *l;

	for (l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, k) && l[k] == '=')
			return strtoul(l + k + 1, NULL, 0);
	return 0;
}

/* The text of "KEY=" to the end of its line, into V. */
static void field_str(const char *buf, const char *key, char *v, size_t size)
{
	size_t k = strlen(key);
	const char *l, *e;

	v[0] = '\0';
	for (l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, key, k) || l[k] != '=')
			continue;
		l += k + 1;
		e = strchrnul(l, '\n');
		snprintf(v, size, "%.*s", (int)(e - l), l);
		return;
	}
}

/* The mode and allocator of a /proc/flexmmap line "PID MODE ALLOC nx=N COMM". */
static void self_fields(const char *line, char *mode, char *alloc)
{
	mode[0] = alloc[0] = '\0';
	if (sscanf(line, "%*d %31s %31s", mode, alloc) != 2)
		mode[0] = alloc[0] = '\0';
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

/* "probe": four anonymous mmaps, the stack, and what the module says. */
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

/* Two processes' addresses of one file's pages: the child's half. */
static void child_maps(int fd, int shmid, int out)
{
	unsigned long r[3];
	void *m;

	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 3 * page);
	r[0] = m == MAP_FAILED ? 0 : (unsigned long)m;
	m = mmap(off_colour_hint(m, 0), 2 * page, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 2 * page);
	r[1] = m == MAP_FAILED ? 0 : (unsigned long)m;
	m = shmat(shmid, NULL, 0);
	r[2] = m == (void *)-1 ? 0 : (unsigned long)m;
	_exit(write(out, r, sizeof(r)) == sizeof(r) ? 0 : 1);
}

/*
 * "colour-probe": the colour rule, from inside a process whose allocator
 * the parent chose (vm.flexmmap_layout before the exec).  Prints
 * "R 1|0 DESCRIPTION" lines and "# " notes.  WANT_TOPDOWN: 1 top-down,
 * 0 bottom-up (from $FMM_WANT), for the first mapping's place.
 */
static int colour_probe_main(void)
{
	const char *w = getenv("FMM_WANT");
	bool topdown = w && !strcmp(w, "topdown");
	char path[] = "/tmp/fmm-ptest.XXXXXX", self[256];
	unsigned long want, c, base, r[3] = { 0 };
	void *a, *b, *m, *s1, *s2;
	int fd, shmid, p[2], status;
	pid_t pid;

	if (!ctl_read(SELF, self, sizeof(self)))
		printf("# self: %s\n", self);
	fd = mkstemp(path);
	if (fd < 0 || unlink(path) || ftruncate(fd, 16 * page)) {
		printf("# cannot make a 16-page file: %s\n", strerror(errno));
		return 1;
	}

	/* One file, MAP_SHARED, within one process. */
	a = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a == MAP_FAILED) {
		printf("# mmap: %s\n", strerror(errno));
		return 1;
	}
	want = colour0(a, 0);
	cresult(topdown ? (unsigned long)a >= TOPDOWN_LO :
		(unsigned long)a >= BOTTOMUP_LO && (unsigned long)a < BOTTOMUP_HI,
		"first shared file mapping is %s: %p", topdown ? "top-down" : "bottom-up", a);
	b = mmap(off_colour_hint(a, want), 2 * page, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 7 * page);
	c = b == MAP_FAILED ? ~0UL : colour0(b, 7);
	cresult(c == want, "shared file, pgoff 7, hint at another colour: page 0's colour 0x%06lx (want 0x%06lx), at %p",
		c, want, b);
	b = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 5 * page);
	c = b == MAP_FAILED ? ~0UL : colour0(b, 5);
	cresult(c == want, "shared file, pgoff 5, no hint: page 0's colour 0x%06lx (want 0x%06lx), at %p",
		c, want, b);
	b = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE, fd, 3 * page);
	c = b == MAP_FAILED ? ~0UL : colour0(b, 3);
	cresult(c == want, "private file, pgoff 3, no hint: page 0's colour 0x%06lx (want 0x%06lx), at %p",
		c, want, b);

	/* MAP_FIXED: the right colour maps, one page off is refused. */
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
	shmid = shmget(IPC_PRIVATE, 16 * page, IPC_CREAT | 0600);
	if (shmid < 0) {
		printf("# shmget: %s\n", strerror(errno));
		return 1;
	}
	s1 = shmat(shmid, NULL, 0);
	s2 = shmat(shmid, NULL, 0);
	cresult(s1 != (void *)-1 && s2 != (void *)-1 && colour0(s1, 0) == colour0(s2, 0),
		"SysV shm attached twice: %p and %p, colours 0x%06lx 0x%06lx",
		s1, s2, colour0(s1, 0), colour0(s2, 0));
	base = free_colour_base();
	m = shmat(shmid, (void *)(base + colour0(s1, 0)), 0);
	cresult(m == (void *)(base + colour0(s1, 0)), "SysV shm at an address of its colour (0x%lx): %s",
		base + colour0(s1, 0), m == (void *)-1 ? strerror(errno) : "attached");
	if (m != (void *)-1)
		shmdt(m);
	m = shmat(shmid, (void *)(base + colour0(s1, 0) + page), 0);
	cresult(m == (void *)-1 && errno == EINVAL,
		"SysV shm one page off its colour (0x%lx) fails with EINVAL: %s",
		base + colour0(s1, 0) + page, m == (void *)-1 ? strerror(errno) : "attached");
	if (m != (void *)-1)
		shmdt(m);

	/* Shared anonymous memory: colour 0, with or without a hint. */
	m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cresult(m != MAP_FAILED && !colour0(m, 0),
		"shared anonymous, no hint: at %p, colour 0x%06lx (want 0)", m, colour0(m, 0));
	b = mmap(off_colour_hint(a, 0), 2 * page, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cresult(b != MAP_FAILED && !colour0(b, 0),
		"shared anonymous, hint at another colour: at %p, colour 0x%06lx (want 0)",
		b, colour0(b, 0));

	/* Another process: the rule is per object, not per mm. */
	if (pipe(p))
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child_maps(fd, shmid, p[1]);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], r, sizeof(r)) != sizeof(r))
		printf("# the child did not report\n");
	waitpid(pid, &status, 0);
	c = r[0] ? colour0((void *)r[0], 3) : ~0UL;
	cresult(c == want, "child: shared file, pgoff 3, no hint: page 0's colour 0x%06lx (want 0x%06lx), at 0x%lx",
		c, want, r[0]);
	c = r[1] ? colour0((void *)r[1], 2) : ~0UL;
	cresult(c == want, "child: shared file, pgoff 2, hint at another colour: page 0's colour 0x%06lx (want 0x%06lx), at 0x%lx",
		c, want, r[1]);
	c = r[2] ? colour0((void *)r[2], 0) : ~0UL;
	cresult(c == colour0(s1, 0), "child: SysV shm: colour 0x%06lx (want 0x%06lx), at 0x%lx",
		c, colour0(s1, 0), r[2]);
	shmctl(shmid, IPC_RMID, NULL);
	return 0;
}

/* --- group: load --------------------------------------------------------- */

/* Run FN(ARG) in a child as nobody (IN_USERNS: as root of a new user namespace). */
static int as_other(bool in_userns, int (*fn)(const char *), const char *arg)
{
	int status, ret;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		ret = become_nobody();
		if (!ret && in_userns) {
			char map[32];

			if (unshare(CLONE_NEWUSER))
				_exit(100 + errno);
			snprintf(map, sizeof(map), "0 %d 1", NOBODY);
			if (ctl_write("/proc/self/setgroups", "deny") ||
			    ctl_write("/proc/self/uid_map", map) ||
			    ctl_write("/proc/self/gid_map", map))
				_exit(99);
		}
		if (ret)
			_exit(98);
		ret = fn(arg);
		_exit(ret < 0 ? -ret : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -EIO;
	ret = WEXITSTATUS(status);
	if (ret >= 98)
		ksft_print_msg("the child could not become %s (exit %d)\n",
			       in_userns ? "root of a user namespace" : "nobody", ret);
	return ret >= 98 ? -EIO : -ret;
}

static int write_layout_2(const char *path) { return ctl_write(path, "2"); }
static int write_retarget(const char *path) { return ctl_write(path, "1 legacy"); }

static int read_file(const char *path)
{
	char buf[4096];

	return ctl_read(path, buf, sizeof(buf));
}

static void task_fields(pid_t pid, char *mode, char *alloc);

/* The line of PID in /proc/flexmmap/tasks read now: its mode into MODE. */
static int tasks_mode_of(pid_t pid, char *mode)
{
	char alloc[32];

	mode[0] = '\0';
	task_fields(pid, mode, alloc);
	return mode[0] ? 0 : -ENOENT;
}

/* As nobody: init's line is there, without its mode (not ours to read). */
static int nobody_sees_init(const char *unused __attribute__((unused)))
{
	char mode[32];
	int ret = tasks_mode_of(1, mode);

	if (!ret && strcmp(mode, "-"))
		ret = -EBADMSG;
	return ret;
}

/*
 * In a new PID namespace, with a /proc of its own: the first process reads
 * its own line as PID 1, and the tasks file lists it alone.  0 if so.
 */
static int pidns_view(void)
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

static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(-fn());
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -EIO;
	return -WEXITSTATUS(status);
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
	struct timespec t0, t1;
	double secs;

	ksft_set_plan(19);
	if (mod_loaded())
		mod_unload();

	for (i = 0, accepted[0] = '\0'; i < (int)ARRAY_SIZE(bad_params); i++) {
		ret = mod_load(bad_params[i]);
		if (!ret) {
			snprintf(accepted + strlen(accepted), sizeof(accepted) - strlen(accepted),
				 "'%s' ", bad_params[i]);
			mod_unload();
		}
		loaded_after += mod_loaded() || !access(LAYOUT, F_OK) ||
				!access("/proc/flexmmap", F_OK);
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

	ret = as_other(false, write_layout_2, LAYOUT);
	ksft_test_result(ret == -EACCES, "nobody cannot write vm.flexmmap_layout: %s\n", err_name(ret));
	ret = as_other(false, write_layout_2, NX);
	ksft_test_result(ret == -EACCES, "nobody cannot write vm.flexmmap_nx: %s\n", err_name(ret));
	ret = as_other(false, write_retarget, RETARGET);
	ksft_test_result(ret == -EACCES, "nobody cannot write vm.flexmmap_retarget: %s\n", err_name(ret));
	ret = as_other(true, write_layout_2, LAYOUT);
	ksft_test_result(ret == -EACCES || ret == -EPERM,
			 "root of a user namespace (nobody outside) cannot write vm.flexmmap_layout: %s\n",
			 err_name(ret));
	ret = as_other(true, write_retarget, RETARGET);
	ksft_test_result(ret == -EACCES || ret == -EPERM,
			 "root of a user namespace (nobody outside) cannot write vm.flexmmap_retarget: %s\n",
			 err_name(ret));
	ret = as_other(false, read_file, LAYOUT);
	ret = ret ? ret : as_other(false, read_file, "/proc/flexmmap/stats");
	ret = ret ? ret : as_other(false, read_file, TASKS);
	ret = ret ? ret : as_other(false, read_file, SELF);
	ksft_test_result(!ret, "nobody reads vm.flexmmap_layout, /proc/flexmmap/stats, tasks and self: %s\n",
			 err_name(ret));
	ret = as_other(false, nobody_sees_init, NULL);
	ksft_test_result(!ret, "nobody sees init's line in /proc/flexmmap/tasks without its mode ('-'): %s\n",
			 err_name(ret));
	ret = in_child(pidns_view);
	ksft_test_result(!ret, "in a new PID namespace with its own /proc: self is PID 1, tasks lists it alone: %s\n",
			 err_name(ret));
	ctl_read(LAYOUT, v, sizeof(v));
	ksft_test_result(!strcmp(v, "2"), "after all that, vm.flexmmap_layout still reads 2: '%s'\n", v);

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = mod_unload();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	ksft_test_result(!ret && !mod_loaded() && access(LAYOUT, F_OK) && access("/proc/flexmmap", F_OK),
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
	while ((n = read(in, buf + len, sizeof(buf) - len)) > 0)
		len += n;
	close(in);
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

struct variant {
	const char *name;
	bool kernel_legacy;		/* the kernel's own rule says legacy */
	bool old_binary;		/* auto's rule says legacy */
};

static const struct variant variants[] = {
	{ "has-gnu-stack", false, false },
	{ "no-gnu-stack", false, true },
	{ "personality ADDR_COMPAT_LAYOUT", true, true },
	{ "vm.legacy_va_layout=1", true, true },
};

static void group_matrix(void)
{
	static const char *const mode_names[] = { "kernel", "legacy", "flexible", "auto" };
	char out[4096], self[128], mode[32], alloc[32], want_alloc[32];
	int m, i, k, status, ret;

	ksft_set_plan(1 + 4 * ARRAY_SIZE(variants));
	ret = make_nognustack();
	ksft_test_result(!ret, "a copy of this program without PT_GNU_STACK: %s\n", err_name(ret));
	need_loaded("layout=0");
	for (m = 0; m < 4; m++) {
		set_layout(m);
		for (i = 0; i < (int)ARRAY_SIZE(variants); i++) {
			const struct variant *v = &variants[i];
			struct spawn s = { .arg = "probe" };
			unsigned long a[4];
			bool legacy, down = true, up = true, ok;
			char key[8];

			legacy = m == 1 || (m == 3 && v->old_binary) ||
				 (m == 0 && v->kernel_legacy);
			snprintf(want_alloc, sizeof(want_alloc), "%s-%s",
				 m ? "module" : "kernel", legacy ? "bottomup" : "topdown");
			if (i == 1)
				s.path = NOGNUSTACK;
			if (i == 2)
				s.persona = ADDR_COMPAT_LAYOUT;
			if (i == 3)
				ctl_write(LEGACY_VA, "1");
			status = run_child(&s, out, sizeof(out));
			if (i == 3)
				ctl_write(LEGACY_VA, "0");
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
	set_layout(0);
	if (mod_unload())
		ksft_exit_fail_msg("rmmod after the matrix failed\n");
}

/* --- group: colour ------------------------------------------------------- */

static void group_colour(void)
{
	static const int layouts[] = { 0, 1, 2 };
	static const char *const allocs[] = { "kernel-topdown", "module-bottomup",
					      "module-topdown" };
	char out[16384], mode[32], alloc[32];
	int i, status, results;

	/* 15 results from each colour-probe, 1 for its allocator and exit. */
	ksft_set_plan(ARRAY_SIZE(layouts) * 16);
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
			if (!strncmp(l, "R ", 2) && e - l > 4) {
				results++;
				ksft_test_result(l[2] == '1', "layout=%d: %.*s\n", layouts[i],
						 (int)(e - l - 4), l + 4);
			} else if (e > l) {
				ksft_print_msg("layout=%d: %.*s\n", layouts[i], (int)(e - l), l);
			}
		}
		for (; results < 15; results++)
			ksft_test_result_fail("layout=%d: a colour-probe result is missing\n", layouts[i]);
		l = strstr(out, "# self: ");
		self_fields(l ? l + 8 : "", mode, alloc);
		ksft_test_result(status == 0 && !strcmp(alloc, allocs[i]),
				 "layout=%d: colour-probe ran on %s and exited 0 (allocator '%s', status 0x%x)\n",
				 layouts[i], allocs[i], alloc, status);
	}
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
	if (!fgets(line, sizeof(line), sl->out) || strncmp(line, "ready", 5))
		return -EIO;
	return 0;
}

/* Send REQ, return the first reply line that starts with WANT (else ""). */
static const char *sleeper_ask(struct sleeper *sl, const char *req, const char *want,
			       char *line, size_t size)
{
	fprintf(sl->in, "%s\n", req);
	fflush(sl->in);
	while (fgets(line, size, sl->out)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, want, strlen(want)))
			return line;
		ksft_print_msg("fmm-sleep: %s\n", line);
	}
	line[0] = '\0';
	return line;
}

/* "quit": its "done" line into LINE, its exit status returned. */
static int sleeper_stop(struct sleeper *sl, char *line, size_t size)
{
	int status = -1;

	sleeper_ask(sl, "quit", "done", line, size);
	fclose(sl->in);
	fclose(sl->out);
	waitpid(sl->pid, &status, 0);
	return status;
}

static unsigned long sleeper_map(struct sleeper *sl)
{
	char line[128];

	sleeper_ask(sl, "map", "mapped ", line, sizeof(line));
	return line[0] ? strtoul(line + 7, NULL, 16) : 0;
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

static bool clean_done(const char *done, int status)
{
	return status == 0 && strstr(done, " failures=0 ") &&
	       strstr(done, "thread_failures=0") && strstr(done, "child_failures=0") &&
	       strstr(done, "fork_errors=0");
}

/* --- group: retarget ----------------------------------------------------- */

static void group_retarget(void)
{
	char *const argv[] = { "fmm-sleep", NULL };
	char req[64], mode[32], alloc[32], line[256];
	unsigned long a0, a1, a2;
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

	snprintf(req, sizeof(req), "%d legacy", sl.pid);
	ret = ctl_write(RETARGET, req);
	task_fields(sl.pid, mode, alloc);
	a1 = sleeper_map(&sl);
	ksft_test_result(!ret && !strcmp(mode, "legacy") && !strcmp(alloc, "module-bottomup") &&
			 a1 >= BOTTOMUP_LO && a1 < BOTTOMUP_HI,
			 "retarget '%s': %s; now %s %s, a new mapping bottom-up at 0x%lx\n",
			 req, err_name(ret), mode, alloc, a1);

	snprintf(req, sizeof(req), "%d flexible", sl.pid);
	ret = ctl_write(RETARGET, req);
	task_fields(sl.pid, mode, alloc);
	a2 = sleeper_map(&sl);
	ksft_test_result(!ret && !strcmp(alloc, "module-topdown") && a2 >= TOPDOWN_LO && a2 < a0,
			 "retarget '%s': %s; now %s %s, a new mapping top-down at 0x%lx, below the first\n",
			 req, err_name(ret), mode, alloc, a2);

	snprintf(req, sizeof(req), "%d kernel", sl.pid);
	ret = ctl_write(RETARGET, req);
	task_fields(sl.pid, mode, alloc);
	a1 = sleeper_map(&sl);
	ksft_test_result(!ret && !strncmp(alloc, "kernel-", 7) && a1 >= TOPDOWN_LO,
			 "retarget '%s': %s; now %s %s, a new mapping at 0x%lx\n",
			 req, err_name(ret), mode, alloc, a1);

	ret = ctl_write(RETARGET, "999999 legacy");
	ksft_test_result(ret == -ESRCH, "retarget of no such process fails with ESRCH: %s\n",
			 err_name(ret));
	snprintf(req, sizeof(req), "%d sideways", sl.pid);
	ret = ctl_write(RETARGET, req);
	ksft_test_result(ret == -EINVAL, "retarget '%s' fails with EINVAL: %s\n", req, err_name(ret));
	ret = ctl_write(RETARGET, "");
	ksft_test_result(ret == -EINVAL, "an empty retarget write fails with EINVAL: %s\n",
			 err_name(ret));
	ret = as_other(false, write_retarget, RETARGET);
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
	struct timespec t0, t1;
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

	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = mod_unload();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	ksft_test_result(!ret && secs < 60, "rmmod under it: %s in %.1f s (bound 60 s)\n",
			 err_name(ret), secs);
	ksft_test_result(!mod_loaded() && access(LAYOUT, F_OK) && access("/proc/flexmmap", F_OK),
			 "module, sysctls and /proc/flexmmap gone\n");
	sleeper_ask(&sl, "check", "", line, sizeof(line));
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
		groups[i].fn();
		ksft_finished();
	}
	usage();
}
