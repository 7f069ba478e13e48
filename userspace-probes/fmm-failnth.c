// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-failnth: fail one kernel allocation at each of a range of points of an
 * operation, through /proc/thread-self/fail-nth (a kernel with
 * CONFIG_FAULT_INJECTION and CONFIG_FAILSLAB/CONFIG_FAIL_PAGE_ALLOC; the
 * debugfs knobs failslab/ and fail_page_alloc/ must not ignore sleeping
 * allocations: ignore-gfp-wait N, and min-order 0 for pages), and check that
 * the operation either fails cleanly or succeeds.  A C program rather than
 * the shell: a shell allocates between arming fail-nth and the operation.
 *
 * Usage: fmm-failnth-64 [--max N | --last N] OP [ARGS...]
 *   fork			fork(); the child maps 64 KiB, writes and
 *				reads it back, unmaps it and exits 0
 *   exec PROG [ARG...]	a child arms its own fail-nth and execs PROG
 *				(through this program's --stage, which reads
 *				whether the failure fired and disarms before
 *				PROG starts); PROG must exit 0 when it runs
 *   write FILE TEXT		open FILE, write TEXT, close
 *   insmod KO [PARAMS]	finit_module(); a module loaded by a run is
 *				unloaded again, without injection
 *   rmmod NAME KO [PARAMS]	delete_module(NAME, O_NONBLOCK); a module
 *				unloaded by a run is loaded again
 *
 * A first run with fail-nth at 2^30 counts the points (calls into the
 * fault-injection framework) the operation passes, C; then the operation
 * runs with the failure at point N for N = 1..C+1, or at --max points
 * spread evenly over that range, or at each of the last --last points
 * (a module's init runs at the end of finit_module()).  A run "injected" if fail-nth reads 0
 * afterwards.  Prints one line:
 *   OP points=C runs=R injected=I failed=F max_ms=M errors=ENOMEM:n,...
 * ("killed": an exec killed past its point of no return; max_ms: the
 * longest unload)
 * and "anomaly: ..." lines (the first 20): an operation that failed with
 * nothing injected, a child or PROG that did not exit 0, a module whose
 * /proc/flexmmap and /sys/module/flexmmap disagree with what finit_module
 * or delete_module returned, an unload not done within 30 s.  Exit status
 * 0 if there was no anomaly, 1 otherwise, 2 on bad usage or setup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FAIL_NTH	"/proc/thread-self/fail-nth"
#define CALIBRATE	(1u << 30)
#define UNLOAD_MS	30000
#define MAX_ANOMALIES	20
#define OUT_FILE	"/tmp/fmm-failnth.out"

static unsigned long runs, injected, failed, nr_anomalies;
static unsigned long errors[4096];
static long max_ms;
static const char *op;

static void anomaly(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void anomaly(const char *fmt, ...)
{
	va_list ap;

	if (nr_anomalies++ >= MAX_ANOMALIES)
		return;
	printf("anomaly: %s: ", op);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int open_nth(void)
{
	int fd = open(FAIL_NTH, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "fmm-failnth: %s: %s\n", FAIL_NTH, strerror(errno));
		exit(2);
	}
	return fd;
}

static void arm(int fd, unsigned int n)
{
	char buf[16];
	int len = snprintf(buf, sizeof(buf), "%u", n);

	if (pwrite(fd, buf, len, 0) != len) {
		fprintf(stderr, "fmm-failnth: arming fail-nth: %s\n", strerror(errno));
		exit(2);
	}
}

/* What fail-nth counts down from now (0: the failure fired). */
static unsigned int left(int fd)
{
	char buf[16] = "";

	if (pread(fd, buf, sizeof(buf) - 1, 0) <= 0)
		return 0;
	return strtoul(buf, NULL, 10);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void count_error(int err)
{
	failed++;
	if (err >= 0 && err < (int)(sizeof(errors) / sizeof(errors[0])))
		errors[err]++;
}

/* --- fork ---------------------------------------------------------------- */

static int child_check(void)
{
	size_t len = 64 << 10, i;
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 1;
	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(i * 7 + 1);
	for (i = 0; i < len; i++)
		if (p[i] != (unsigned char)(i * 7 + 1))
			return 1;
	return munmap(p, len) ? 1 : 0;
}

static unsigned int op_fork(int fd, unsigned int n)
{
	unsigned int l;
	int status, err;
	pid_t pid;

	arm(fd, n);
	pid = fork();
	err = errno;
	if (pid == 0)
		_exit(child_check());
	l = left(fd);
	arm(fd, 0);
	if (pid < 0) {
		count_error(err);
		if (l)
			anomaly("fork failed (%s) with nothing injected", strerror(err));
		return l;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		anomaly("fail-nth %u: the child failed its check (status 0x%x)",
			n, status);
	return l;
}

/* --- exec ---------------------------------------------------------------- */

static void show_output(void)
{
	char buf[2048];
	int fd = open(OUT_FILE, O_RDONLY);
	ssize_t len;

	if (fd < 0)
		return;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return;
	buf[len] = 0;
	if (nr_anomalies <= MAX_ANOMALIES)
		printf("  output: %s\n", buf);
}

static bool output_has(const char *what)
{
	char buf[2048];
	int fd = open(OUT_FILE, O_RDONLY);
	ssize_t len;

	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = 0;
	return strstr(buf, what);
}

/* In the exec'd child: report whether the failure fired, disarm, go on. */
static int stage(int argc, char **argv)
{
	char tag[32] = "S";	/* the open below failed: it fired there */
	int pfd, fd, len;

	if (argc < 4)
		return 2;
	pfd = atoi(argv[2]);
	fd = open(FAIL_NTH, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		snprintf(tag, sizeof(tag), "N%u", left(fd));
		if (!strcmp(tag, "N0"))
			tag[0] = 'F';
		arm(fd, 0);
		close(fd);
	}
	len = strlen(tag);
	if (write(pfd, tag, len) != len)
		return 3;
	close(pfd);
	execv(argv[3], argv + 3);
	perror("fmm-failnth: --stage: exec");
	return 122;
}

static unsigned int op_exec(unsigned int n, char **prog, int nprog)
{
	char *argv[64], pfdstr[16], tag[32] = "";
	int pfd[2], status, out, i;
	unsigned int l = 1;
	ssize_t got;
	pid_t pid;

	if (nprog > 60)
		exit(2);
	if (pipe(pfd))
		exit(2);
	snprintf(pfdstr, sizeof(pfdstr), "%d", pfd[1]);
	argv[0] = "fmm-failnth";
	argv[1] = "--stage";
	argv[2] = pfdstr;
	for (i = 0; i < nprog; i++)
		argv[3 + i] = prog[i];
	argv[3 + nprog] = NULL;
	out = open(OUT_FILE, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	pid = fork();
	if (pid < 0) {
		anomaly("fork for exec: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		int fd = open_nth(), len;
		char t[32];

		close(pfd[0]);
		if (out >= 0) {
			dup2(out, 1);
			dup2(out, 2);
		}
		arm(fd, n);
		execv("/proc/self/exe", argv);
		len = snprintf(t, sizeof(t), "%c%d", left(fd) ? 'n' : 'f', errno);
		if (write(pfd[1], t, len) != len)
			_exit(121);
		_exit(120);
	}
	close(pfd[1]);
	if (out >= 0)
		close(out);
	got = read(pfd[0], tag, sizeof(tag) - 1);
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (got <= 0) {
		/* Killed past the point of no return: the failure fired. */
		if (WIFSIGNALED(status) &&
		    (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGKILL ||
		     WTERMSIG(status) == SIGBUS)) {
			count_error(0);
			return 0;
		}
		/*
		 * Or in the start-up of the stage itself, before main(): the
		 * C library's RELRO mprotect() got ENOMEM ("cannot apply
		 * additional memory protection after relocation", exit 127).
		 */
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127 &&
		    output_has("Cannot allocate memory")) {
			count_error(ENOMEM);
			return 0;
		}
		anomaly("fail-nth %u: the child reported nothing (status 0x%x)",
			n, status);
		show_output();
		return 1;
	}
	switch (tag[0]) {
	case 'f':
	case 'n':
		count_error(atoi(tag + 1));
		l = tag[0] == 'n';
		if (l)
			anomaly("fail-nth %u: exec failed (%s) with nothing injected",
				n, strerror(atoi(tag + 1)));
		return l;
	case 'N':
		l = strtoul(tag + 1, NULL, 10);
		break;
	default:
		l = 0;
		break;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		anomaly("fail-nth %u: %s did not exit 0 (status 0x%x)", n,
			prog[0], status);
		show_output();
	}
	return l;
}

/* --- write --------------------------------------------------------------- */

static unsigned int op_write(int fd, unsigned int n, const char *file,
			     const char *text)
{
	size_t len = strlen(text);
	unsigned int l;
	int f, err = 0;

	arm(fd, n);
	f = open(file, O_WRONLY);
	if (f < 0) {
		err = errno;
	} else {
		if (write(f, text, len) != (ssize_t)len)
			err = errno ? errno : EIO;
		close(f);
	}
	l = left(fd);
	arm(fd, 0);
	if (err) {
		count_error(err);
		if (l)
			anomaly("writing '%s' to %s failed (%s) with nothing injected",
				text, file, strerror(err));
	}
	return l;
}

/* --- insmod, rmmod --------------------------------------------------------- */

static const char *mod_name = "flexmmap";

/* 1 if the module is loaded and its files are there, 0 if none of it is. */
static int mod_state(void)
{
	char path[256];
	bool sys, proc, sysctl;
	struct stat st;

	snprintf(path, sizeof(path), "/sys/module/%s", mod_name);
	sys = !stat(path, &st);
	proc = !stat("/proc/flexmmap/stats", &st);
	sysctl = !stat("/proc/sys/vm/flexmmap_layout", &st);
	if (sys && proc && sysctl)
		return 1;
	if (!sys && !proc && !sysctl)
		return 0;
	anomaly("half a module: /sys/module/%s %d, /proc/flexmmap/stats %d, vm.flexmmap_layout %d",
		mod_name, sys, proc, sysctl);
	return -1;
}

static int load(int fd_nth, unsigned int n, const char *ko, const char *params,
		int *err)
{
	int ko_fd = open(ko, O_RDONLY | O_CLOEXEC), ret;

	if (ko_fd < 0) {
		fprintf(stderr, "fmm-failnth: %s: %s\n", ko, strerror(errno));
		exit(2);
	}
	arm(fd_nth, n);
	ret = syscall(SYS_finit_module, ko_fd, params, 0);
	*err = errno;
	close(ko_fd);
	return ret;
}

/* Unload, retrying while busy, within UNLOAD_MS; the first try injected. */
static int unload(int fd_nth, unsigned int n, int *err, unsigned int *l)
{
	long start = now_ms(), ms;
	int ret;

	arm(fd_nth, n);
	ret = syscall(SYS_delete_module, mod_name, O_NONBLOCK);
	*err = errno;
	*l = left(fd_nth);
	arm(fd_nth, 0);
	while (ret && (*err == EAGAIN || *err == EBUSY) && n == 0 &&
	       now_ms() - start < UNLOAD_MS) {
		usleep(10000);
		ret = syscall(SYS_delete_module, mod_name, O_NONBLOCK);
		*err = errno;
	}
	ms = now_ms() - start;
	if (ms > max_ms)
		max_ms = ms;
	if (ms > UNLOAD_MS)
		anomaly("delete_module took %ld ms", ms);
	return ret;
}

static unsigned int op_insmod(int fd, unsigned int n, const char *ko,
			      const char *params)
{
	unsigned int l, dummy;
	int ret, err;

	ret = load(fd, n, ko, params, &err);
	l = left(fd);
	arm(fd, 0);
	if (ret) {
		count_error(err);
		if (l)
			anomaly("finit_module failed (%s) with nothing injected",
				strerror(err));
		if (mod_state() != 0)
			anomaly("fail-nth %u: finit_module failed (%s) but the module is there",
				n, strerror(err));
		return l;
	}
	if (mod_state() != 1)
		anomaly("fail-nth %u: finit_module succeeded but the module is not all there", n);
	if (unload(fd, 0, &err, &dummy))
		anomaly("cannot unload after fail-nth %u: %s", n, strerror(err));
	return l;
}

static unsigned int op_rmmod(int fd, unsigned int n, const char *ko,
			     const char *params)
{
	unsigned int l;
	int ret, err;

	ret = unload(fd, n, &err, &l);
	if (ret) {
		count_error(err);
		if (l && err != EAGAIN && err != EBUSY)
			anomaly("delete_module failed (%s) with nothing injected",
				strerror(err));
		if (mod_state() != 1)
			anomaly("fail-nth %u: delete_module failed (%s) but the module is not all there",
				n, strerror(err));
		return l;
	}
	if (mod_state() != 0)
		anomaly("fail-nth %u: delete_module succeeded but the module is still there", n);
	if (load(fd, 0, ko, params, &err))
		anomaly("cannot load again after fail-nth %u: %s", n, strerror(err));
	return l;
}

/* --------------------------------------------------------------------------- */

static unsigned int run(int fd, unsigned int n, int argc, char **argv)
{
	const char *params = "";

	runs++;
	if (!strcmp(op, "fork"))
		return op_fork(fd, n);
	if (!strcmp(op, "exec"))
		return op_exec(n, argv, argc);
	if (!strcmp(op, "write"))
		return op_write(fd, n, argv[0], argv[1]);
	if (!strcmp(op, "insmod"))
		return op_insmod(fd, n, argv[0], argc > 1 ? argv[1] : params);
	mod_name = argv[0];
	return op_rmmod(fd, n, argv[1], argc > 2 ? argv[2] : params);
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: fmm-failnth [--max N | --last N] fork | exec PROG [ARG...] | write FILE TEXT |\n"
		"                   insmod KO [PARAMS] | rmmod NAME KO [PARAMS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long max = 0, tail = 0, i, nr, last = 0;
	unsigned int points, l, n;
	bool first = true;
	int fd, need;

	if (argc > 1 && !strcmp(argv[1], "--stage"))
		return stage(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	argv++, argc--;
	if (argc >= 2 && !strcmp(argv[0], "--max")) {
		max = strtoul(argv[1], NULL, 10);
		argv += 2, argc -= 2;
	} else if (argc >= 2 && !strcmp(argv[0], "--last")) {
		tail = strtoul(argv[1], NULL, 10);
		if (!tail)
			usage();
		argv += 2, argc -= 2;
	}
	if (argc < 1)
		usage();
	op = argv[0];
	argv++, argc--;
	need = !strcmp(op, "fork") ? 0 : !strcmp(op, "exec") ? 1 :
	       !strcmp(op, "write") ? 2 : !strcmp(op, "insmod") ? 1 :
	       !strcmp(op, "rmmod") ? 2 : -1;
	if (need < 0 || argc < need)
		usage();
	fd = open_nth();

	/* Calibrate: how many points does one run pass? */
	l = run(fd, CALIBRATE, argc, argv);
	runs--;
	if (!l)
		anomaly("the calibration run (fail-nth 2^30) injected");
	points = l ? CALIBRATE - l : 0;
	nr = points + 1;
	if (max && nr > max)
		nr = max;
	if (tail && nr > tail)
		nr = tail;
	for (i = 0; i < nr; i++) {
		if (tail)
			n = points + 2 - nr + i;
		else
			n = nr > 1 ? 1 + i * points / (nr - 1) : 1;
		if (!first && n == last)
			continue;
		first = false;
		last = n;
		if (!run(fd, n, argc, argv))
			injected++;
	}
	printf("%s points=%u runs=%lu injected=%lu failed=%lu max_ms=%ld errors=",
	       op, points, runs, injected, failed, max_ms);
	need = 0;
	for (i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
		if (!errors[i])
			continue;
		printf("%s%s:%lu", need++ ? "," : "",
		       i ? strerrorname_np(i) ?: "?" : "killed", errors[i]);
	}
	printf("%s anomalies=%lu\n", need ? "" : "none", nr_anomalies);
	return nr_anomalies ? 1 : 0;
}
