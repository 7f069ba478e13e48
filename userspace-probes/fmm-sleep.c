// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-sleep: a process that stays alive on whatever allocator its exec gave
 * it and proves, on demand, that mmap still works.  Used to show that
 * "rmmod flexmmap" leaves processes on the module's allocators running, and
 * by flexmmap-compare as the default program whose maps are shown.
 *
 * Usage: fmm-sleep-NN [--threads N] [--fork-loop] [--exit-leader]
 *		       [--pause USEC]
 *
 * At start it maps a few regions, fills them with a pattern, prints
 * "ready PID" and waits.  Then:
 *   SIGUSR1, or a line on stdin	one check: mmap, write a pattern, read
 *					it back, mremap it bigger (it may
 *					move), read it again, munmap, and
 *					re-read the first regions; prints
 *					"ok N" or
 *					"fail N: reason"
 *   SIGUSR2, or "stats" on stdin	prints "stats checks=... failures=..."
 *   "map" on stdin			maps 64 KiB more, keeps it, prints
 *					"mapped 0xADDR"
 *   SIGTERM/SIGINT/SIGHUP, "quit"	stops the workers, prints a "done ..."
 *					line and exits: 0 if no check, thread,
 *					child or fork ever failed, 1 otherwise
 * End of stdin is not a request to stop: without stdin it waits for signals.
 *
 *   --threads N	start N threads that mmap, verify and munmap in a loop
 *   --fork-loop	a thread forks continuously; each child checks (the
 *			inherited regions too) and exits 0, or 1 on failure;
 *			failed children and failed fork() calls are counted,
 *			and either makes the exit status 1
 *   --exit-leader	the main thread exits after starting the others, which
 *			leaves a zombie thread-group leader while a control
 *			thread keeps answering (needs --threads or --fork-loop
 *			to be interesting; /proc/PID/maps is then empty, use
 *			/proc/PID/task/TID/maps)
 *   --pause USEC	sleep this long between loop iterations (default 0)
 *
 * Every output line is flushed at once, so a pipe reader sees it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR_REGIONS	4
#define REGION_PAGES	4
#define CHECK_PAGES	4
#define MAX_THREADS	256
#define MAX_REPORTS	8	/* worker failures printed, the rest counted */

static unsigned long page_size;
static unsigned long regions[NR_REGIONS];
static unsigned long pause_usec;
static int sfd;
static int stop;

/* Counters shared with the workers, updated with __atomic builtins. */
static unsigned long nr_checks, nr_check_fail;
static unsigned long nr_thread_iters, nr_thread_fail;
static unsigned long nr_forks, nr_child_fail, nr_fork_errors;
static unsigned long nr_reports;

static void count(unsigned long *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

static unsigned long get(unsigned long *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

static void fill(unsigned long *p, unsigned long len, unsigned long seed)
{
	unsigned long i;

	for (i = 0; i < len / sizeof(*p); i++)
		p[i] = seed ^ (i * 0x9e3779b1UL);
}

static bool verify(const unsigned long *p, unsigned long len,
		   unsigned long seed)
{
	unsigned long i;

	for (i = 0; i < len / sizeof(*p); i++)
		if (p[i] != (seed ^ (i * 0x9e3779b1UL)))
			return false;
	return true;
}

/*
 * One check, safe in a child of a multithreaded fork: no malloc, no stdio
 * locks; the reason goes to @why (may be NULL).
 */
static bool check(unsigned long seed, char *why, size_t size)
{
	unsigned long len = CHECK_PAGES * page_size;
	void *p, *q;
	int i;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		if (why)
			snprintf(why, size, "mmap: %s", strerror(errno));
		return false;
	}
	fill(p, len, seed);
	if (!verify(p, len, seed)) {
		if (why)
			snprintf(why, size, "pattern mismatch at %p", p);
		munmap(p, len);
		return false;
	}
	/* Grow it, letting it move: the allocator places the new range. */
	q = mremap(p, len, 2 * len, MREMAP_MAYMOVE);
	if (q == MAP_FAILED) {
		if (why)
			snprintf(why, size, "mremap %p: %s", p, strerror(errno));
		munmap(p, len);
		return false;
	}
	p = q;
	len *= 2;
	if (!verify(p, len / 2, seed)) {
		if (why)
			snprintf(why, size, "pattern lost by mremap to %p", p);
		munmap(p, len);
		return false;
	}
	if (munmap(p, len)) {
		if (why)
			snprintf(why, size, "munmap %p: %s", p, strerror(errno));
		return false;
	}
	for (i = 0; i < NR_REGIONS; i++) {
		if (!verify((unsigned long *)regions[i],
			    REGION_PAGES * page_size, i)) {
			if (why)
				snprintf(why, size, "region %d at 0x%lx changed",
					 i, regions[i]);
			return false;
		}
	}
	return true;
}

static void report_worker_failure(const char *who, const char *why)
{
	if (__atomic_fetch_add(&nr_reports, 1, __ATOMIC_RELAXED) < MAX_REPORTS)
		printf("fail %s: %s\n", who, why);
}

static void *thread_loop(void *arg)
{
	unsigned long seed = (unsigned long)arg << 16;
	char why[128];

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		count(&nr_thread_iters);
		if (!check(seed++, why, sizeof(why))) {
			count(&nr_thread_fail);
			report_worker_failure("thread", why);
		}
		if (pause_usec)
			usleep(pause_usec);
	}
	return NULL;
}

static void *fork_loop(void *arg)
{
	int status;
	pid_t pid;

	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		pid = fork();
		if (pid == 0)
			_exit(check(getpid(), NULL, 0) ? 0 : 1);
		if (pid < 0) {
			count(&nr_fork_errors);
			report_worker_failure("fork", strerror(errno));
			usleep(1000);
			continue;
		}
		count(&nr_forks);
		if (waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status)) {
			count(&nr_child_fail);
			report_worker_failure("child", WIFSIGNALED(status) ?
					      strsignal(WTERMSIG(status)) :
					      "exit status not 0");
		}
		if (pause_usec)
			usleep(pause_usec);
	}
	return NULL;
}

static void print_stats(const char *what)
{
	printf("%s checks=%lu failures=%lu thread_iters=%lu thread_failures=%lu forks=%lu child_failures=%lu fork_errors=%lu\n",
	       what, get(&nr_checks), get(&nr_check_fail),
	       get(&nr_thread_iters), get(&nr_thread_fail), get(&nr_forks),
	       get(&nr_child_fail), get(&nr_fork_errors));
}

static void do_check(void)
{
	unsigned long n = get(&nr_checks) + 1;
	char why[128];

	count(&nr_checks);
	if (check(n << 8, why, sizeof(why))) {
		printf("ok %lu\n", n);
	} else {
		count(&nr_check_fail);
		printf("fail %lu: %s\n", n, why);
	}
}

/*
 * Map a new region and keep it: where it lands shows where this process's
 * future mmaps go now (flexmmap_retarget changes that while we run).
 */
static void do_map(void)
{
	size_t len = 64 << 10;
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		count(&nr_check_fail);
		printf("fail map: %s\n", strerror(errno));
		return;
	}
	memset(p, 0x5a, len);
	printf("mapped 0x%lx\n", (unsigned long)p);
}

/* Answer signals and stdin until told to stop; never returns. */
static void *control_loop(void *arg)
{
	struct pollfd pfd[2] = {
		{ .fd = sfd, .events = POLLIN },
		{ .fd = STDIN_FILENO, .events = POLLIN },
	};
	int nfds = 2, code;
	char *line = NULL;
	size_t len = 0;
	pthread_t *workers = arg;

	for (;;) {
		struct signalfd_siginfo si;

		if (poll(pfd, nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("fmm-sleep: poll");
			break;
		}
		if (nfds == 2 && pfd[1].revents) {
			/* At EOF, listen to signals only from now on. */
			if (getline(&line, &len, stdin) < 0)
				nfds = 1;
			else if (!strcmp(line, "quit\n"))
				break;
			else if (!strcmp(line, "stats\n"))
				print_stats("stats");
			else if (!strcmp(line, "map\n"))
				do_map();
			else
				do_check();
		}
		if (!(pfd[0].revents & POLLIN))
			continue;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGUSR1)
			do_check();
		else if (si.ssi_signo == SIGUSR2)
			print_stats("stats");
		else
			break;
	}

	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (; workers && *workers; workers++)
		pthread_join(*workers, NULL);
	print_stats("done");
	code = get(&nr_check_fail) || get(&nr_thread_fail) ||
	       get(&nr_child_fail) || get(&nr_fork_errors);
	exit(code);
}

static void __attribute__((noreturn)) usage(const char *msg)
{
	fprintf(stderr, "fmm-sleep: %s\n"
		"usage: fmm-sleep [--threads N] [--fork-loop] [--exit-leader] [--pause USEC]\n",
		msg);
	exit(2);
}

int main(int argc, char **argv)
{
	/* Zero-terminated list of the workers to join, plus the fork loop. */
	static pthread_t workers[MAX_THREADS + 2];
	int nr_threads = 0, nr_workers = 0, i, err;
	bool forks = false, exit_leader = false;
	pthread_t control;
	sigset_t mask;
	char *end;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			nr_threads = strtol(argv[++i], &end, 10);
			if (*end || nr_threads < 0 || nr_threads > MAX_THREADS)
				usage("--threads takes 0..256");
		} else if (!strcmp(argv[i], "--pause") && i + 1 < argc) {
			pause_usec = strtoul(argv[++i], &end, 10);
			if (*end)
				usage("--pause takes microseconds");
		} else if (!strcmp(argv[i], "--fork-loop")) {
			forks = true;
		} else if (!strcmp(argv[i], "--exit-leader")) {
			exit_leader = true;
		} else {
			usage("unknown option or missing value");
		}
	}

	setvbuf(stdout, NULL, _IOLBF, 0);
	page_size = sysconf(_SC_PAGESIZE);
	for (i = 0; i < NR_REGIONS; i++) {
		unsigned long len = (REGION_PAGES + 1) * page_size;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			perror("fmm-sleep: mmap");
			return 1;
		}
		/* A PROT_NONE guard page keeps the regions apart in maps. */
		mprotect(p + REGION_PAGES * page_size, page_size, PROT_NONE);
		fill((unsigned long *)p, REGION_PAGES * page_size, i);
		regions[i] = (unsigned long)p;
	}

	/* Every thread inherits the mask: signals are read from sfd only. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		perror("fmm-sleep: signalfd");
		return 1;
	}

	for (i = 0; i < nr_threads + forks; i++) {
		err = pthread_create(&workers[nr_workers], NULL,
				     i < nr_threads ? thread_loop : fork_loop,
				     (void *)(unsigned long)(i + 1));
		if (err) {
			fprintf(stderr, "fmm-sleep: pthread_create: %s\n",
				strerror(err));
			return 1;
		}
		nr_workers++;
	}
	printf("ready %d\n", getpid());

	if (exit_leader) {
		err = pthread_create(&control, NULL, control_loop, workers);
		if (err) {
			fprintf(stderr, "fmm-sleep: pthread_create: %s\n",
				strerror(err));
			return 1;
		}
		pthread_exit(NULL);
	}
	control_loop(workers);
	return 0;
}
