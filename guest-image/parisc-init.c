// SPDX-License-Identifier: GPL-2.0
/*
 * The parisc guest's /init: Debian has no hppa busybox, so PID 1 is this
 * static program (hppa-linux-gnu-gcc -static), and the initramfs's few
 * tools are the same binary under other names (see tool_main()): true,
 * false, exit N, echo, cat, insmod FILE [PARAMS], rmmod NAME, write FILE
 * TEXT (echo TEXT > FILE), sleep SECONDS, and steps CMD [; CMD]..., which
 * runs commands in turn (each word ";" ends one, a last word "&" puts it
 * in the background until the end), echoing each as "$ CMD", and stops at
 * the first that fails, with its status: a script without a shell.
 *
 * As PID 1 it mounts proc, sysfs, devtmpfs and a tmpfs /tmp, runs one
 * command and powers the machine off.  The command is /etc/flexmmap/cmd:
 * NUL-separated arguments that qemu/run-parisc appends to the initramfs
 * with /etc/flexmmap/env (NUL-separated NAME=VALUE) and /etc/flexmmap/tag
 * (and /etc/flexmmap/share: mount the 9p tag "share" at /share);
 * without that file, the kernel command line's words after "--", which the
 * kernel hands to init as arguments (for a boot by hand).  There is one
 * serial line, shared with the kernel, so the command's output is framed:
 *
 *	flexmmap-parisc: begin TAG
 *	... the command's stdout and stderr ...
 *	flexmmap-parisc: exit TAG STATUS
 *	flexmmap-parisc: dmesg TAG
 *	... the kernel log ...
 *	flexmmap-parisc: end TAG
 *
 * STATUS is the exit status, or 128 + the signal that killed the command,
 * or 127 if it could not be run.  The kernel's console messages are held
 * back (console loglevel 1) while the command runs, so they do not split
 * its output; the whole kernel log follows it instead, for the host to
 * check for oopses and warnings.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CTL_DIR "/etc/flexmmap"
#define MAX_WORDS 256

/* syslog(2) actions, as the man page numbers them */
#define KLOG_READ_ALL		3
#define KLOG_CONSOLE_LEVEL	8
#define KLOG_SIZE_BUFFER	10

static const char *tag = "-";

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("flexmmap-parisc: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	va_end(ap);
}

/* Never return: a PID 1 that exits panics the kernel, and says less. */
static void __attribute__((noreturn)) power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	/* If the machine cannot power off, a reboot ends QEMU (-no-reboot). */
	say("power off failed (%s), rebooting", strerror(errno));
	reboot(RB_AUTOBOOT);
	for (;;)
		pause();
}

static void mount_or_say(const char *type, const char *dir, const char *opts)
{
	mkdir(dir, 0755);
	if (mount(type, dir, type, MS_NOSUID, opts) && errno != EBUSY)
		say("cannot mount %s on %s: %s", type, dir, strerror(errno));
}

/*
 * Read a NUL-separated file into words[] (at most max - 1, NULL-ended).
 * The buffer stays allocated for the life of the process.  Returns the
 * number of words, or -1 if the file cannot be read.
 */
static int read_words(const char *path, char **words, int max)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, count = 0;
	size_t i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do {
		if (len + 4096 + 1 > cap) {
			cap = cap ? 2 * cap : 8192;
			buf = realloc(buf, cap);
			if (!buf) {
				close(fd);
				return -1;
			}
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n > 0)
			len += n;
	} while (n > 0 || (n < 0 && errno == EINTR));
	close(fd);
	buf[len] = '\0';
	for (i = 0; i < len && count < max - 1; i += strlen(buf + i) + 1)
		words[count++] = buf + i;
	words[count] = NULL;
	return count;
}

/* The kernel log, whole, framed for the host's problem check. */
static void dump_kernel_log(void)
{
	int size = klogctl(KLOG_SIZE_BUFFER, NULL, 0);
	char *buf;
	int n;

	say("dmesg %s", tag);
	if (size > 0) {
		buf = malloc(size);
		if (buf) {
			n = klogctl(KLOG_READ_ALL, buf, size);
			if (n > 0) {
				fwrite(buf, 1, n, stdout);
				if (buf[n - 1] != '\n')
					putchar('\n');
			}
			free(buf);
		}
	}
	say("end %s", tag);
}

/* Start argv in a child of its own session, stdin from /dev/null; -1 on failure. */
static pid_t spawn(char **argv)
{
	pid_t pid = fork();

	if (pid < 0) {
		say("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null >= 0) {
			dup2(null, 0);
			if (null)
				close(null);
		}
		setsid();
		if (chdir("/"))
			perror("flexmmap-parisc: chdir /");
		execvp(argv[0], argv);
		fprintf(stderr, "flexmmap-parisc: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	return pid;
}

/* An exit status as a shell gives it: 128 + the signal for a killed one. */
static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

static int run(char **argv)
{
	pid_t pid = spawn(argv), w;
	int status;

	if (pid < 0)
		return 127;
	/* As PID 1 this also reaps the command's orphans. */
	for (;;) {
		w = wait(&status);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR) {
			say("wait: %s", strerror(errno));
			return 127;
		}
	}
	return exit_status(status);
}

static int init_main(int argc, char **argv)
{
	static char *words[MAX_WORDS], *envs[MAX_WORDS], *tags[2];
	char **cmd;
	int fd, i, rc;

	/* The kernel starts init with no descriptors if /dev/console is missing. */
	mount_or_say("devtmpfs", "/dev", "mode=0755");
	if (fcntl(1, F_GETFD) < 0) {
		fd = open("/dev/console", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
			if (fd > 2)
				close(fd);
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	mount_or_say("proc", "/proc", NULL);
	mount_or_say("sysfs", "/sys", NULL);
	mount_or_say("tmpfs", "/tmp", "mode=1777");
	mount_or_say("tmpfs", "/dev/shm", "mode=1777");

	/* qemu/run-parisc --share: the host folder over 9p (virtio-pci). */
	if (!access(CTL_DIR "/share", F_OK)) {
		mkdir("/share", 0755);
		if (mount("share", "/share", "9p", 0,
			  "trans=virtio,version=9p2000.L,msize=262144")) {
			/* No exit line: the host reports a failed run. */
			say("cannot mount 9p tag share at /share: %s", strerror(errno));
			power_off();
		}
	}

	setenv("PATH", "/bin", 1);
	setenv("HOME", "/", 1);
	if (read_words(CTL_DIR "/tag", tags, 2) == 1)
		tag = tags[0];
	if (read_words(CTL_DIR "/env", envs, MAX_WORDS) > 0)
		for (i = 0; envs[i]; i++)
			putenv(envs[i]);

	/*
	 * The initramfs's command first: the kernel also hands init any
	 * unknown word of its command line, so argv is only the fallback.
	 */
	if (read_words(CTL_DIR "/cmd", words, MAX_WORDS) > 0)
		cmd = words;
	else if (argc > 1)
		cmd = argv + 1;
	else
		cmd = NULL;

	if (!cmd) {
		say("no command (kernel command line after --, or " CTL_DIR "/cmd)");
		say("exit %s %d", tag, 127);
		power_off();
	}

	klogctl(KLOG_CONSOLE_LEVEL, NULL, 1);
	say("begin %s", tag);
	rc = run(cmd);
	fflush(stderr);
	say("exit %s %d", tag, rc);
	dump_kernel_log();
	kill(-1, SIGKILL);
	power_off();
}

/* The tools, for a guest without a shell: each is this binary's other name. */
static int cat_fd(int fd, const char *name)
{
	char buf[8192];
	ssize_t n, off, w;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "cat: %s: %s\n", name, strerror(errno));
			return 1;
		}
		for (off = 0; off < n; off += w) {
			w = write(1, buf + off, n - off);
			if (w < 0) {
				if (errno == EINTR) {
					w = 0;
					continue;
				}
				perror("cat: write");
				return 1;
			}
		}
	}
	return 0;
}

/*
 * argv[from..argc-1] joined by spaces into @buf (NUL-terminated): its
 * length, or -1 when it does not fit.
 */
static int join_words(char *buf, size_t size, int argc, char **argv, int from)
{
	size_t used = 0;
	int i, n;

	buf[0] = '\0';
	for (i = from; i < argc; i++) {
		n = snprintf(buf + used, size - used, "%s%s",
			     i > from ? " " : "", argv[i]);
		if (n < 0 || (size_t)n >= size - used)
			return -1;
		used += n;
	}
	return used;
}

/* insmod FILE [PARAMS...]: finit_module(2), the words joined by spaces. */
static int insmod(int argc, char **argv)
{
	char params[1024];
	int fd;

	if (argc < 2) {
		fputs("usage: insmod FILE [PARAMS...]\n", stderr);
		return 2;
	}
	if (join_words(params, sizeof(params), argc, argv, 2) < 0) {
		fputs("insmod: parameters too long\n", stderr);
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || syscall(SYS_finit_module, fd, params, 0)) {
		fprintf(stderr, "insmod: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}

/* write FILE TEXT...: the words and a newline into FILE, one write(2). */
static int write_file(int argc, char **argv)
{
	char buf[1024];
	int fd, used;

	if (argc < 3) {
		fputs("usage: write FILE TEXT...\n", stderr);
		return 2;
	}
	/* One byte kept for the newline. */
	used = join_words(buf, sizeof(buf) - 1, argc, argv, 2);
	if (used < 0) {
		fputs("write: text too long\n", stderr);
		return 2;
	}
	buf[used++] = '\n';
	fd = open(argv[1], O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0 || write(fd, buf, used) != (ssize_t)used) {
		fprintf(stderr, "write: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	return close(fd) ? 1 : 0;
}

/* A command of steps' waited for, or 127. */
static int wait_for(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("steps: waitpid");
			return 127;
		}
	}
	return exit_status(status);
}

#define MAX_BACKGROUND 16

/*
 * In a word of a command, %1 ... %9 stand for the PIDs of the background
 * commands started so far (/proc/%1/maps): the copy is static, one per
 * word of the command, until the next command.
 */
static char *expand_pids(char *word, const pid_t *bg, int nr_bg)
{
	static char buf[MAX_WORDS][256];
	static int next;
	char *out = buf[next % MAX_WORDS], *p = word;
	size_t used = 0;
	int n;

	if (!strchr(word, '%'))
		return word;
	next++;
	while (*p && used + 16 < sizeof(buf[0])) {
		if (p[0] == '%' && p[1] >= '1' && p[1] <= '9' &&
		    p[1] - '1' < nr_bg) {
			n = snprintf(out + used, sizeof(buf[0]) - used, "%d",
				     (int)bg[p[1] - '1']);
			used += n;
			p += 2;
		} else {
			out[used++] = *p++;
		}
	}
	out[used] = '\0';
	return out;
}

/*
 * steps CMD [; CMD]...: each in turn, until one fails.  A command ending
 * in the word "&" runs in the background: once the others are done (or
 * one failed), each background command gets SIGTERM and is waited for,
 * and its status counts as a foreground one's.  %N in a word is the PID
 * of the Nth background command.
 */
static int steps(int argc, char **argv)
{
	pid_t bg[MAX_BACKGROUND], pid;
	int i, j, k, end, nr_bg = 0, rc = 0, bg_rc;

	for (i = 1; i < argc && !rc; i = j + 1) {
		for (j = i; j < argc && strcmp(argv[j], ";"); j++)
			;
		end = j;
		if (end > i && !strcmp(argv[end - 1], "&"))
			end--;
		if (end == i)
			continue;
		argv[end] = NULL;
		for (k = i; k < end; k++)
			argv[k] = expand_pids(argv[k], bg, nr_bg);
		printf("$");
		for (k = i; k < end; k++)
			printf(" %s", argv[k]);
		printf("%s\n", end < j ? " &" : "");
		fflush(stdout);
		pid = spawn(argv + i);
		if (pid < 0) {
			rc = 127;
		} else if (end == j) {
			rc = wait_for(pid);
		} else if (nr_bg == MAX_BACKGROUND) {
			fputs("steps: too many background commands\n", stderr);
			kill(pid, SIGTERM);
			wait_for(pid);
			rc = 2;
		} else {
			bg[nr_bg++] = pid;
		}
		if (rc)
			printf("steps: exit status %d\n", rc);
	}
	for (k = 0; k < nr_bg; k++) {
		kill(bg[k], SIGTERM);
		bg_rc = wait_for(bg[k]);
		printf("steps: background command %d: exit status %d\n", k + 1,
		       bg_rc);
		if (!rc)
			rc = bg_rc;
	}
	return rc;
}

/* sleep SECONDS (a decimal fraction is fine) */
static int sleep_tool(int argc, char **argv)
{
	struct timespec ts;
	double secs;
	char *end;

	if (argc != 2 || (secs = strtod(argv[1], &end)) < 0 || *end) {
		fputs("usage: sleep SECONDS\n", stderr);
		return 2;
	}
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts))
		if (errno != EINTR)
			return 1;
	return 0;
}

static int tool_main(const char *name, int argc, char **argv)
{
	int fd, i, rc = 0;

	if (!strcmp(name, "true"))
		return 0;
	if (!strcmp(name, "false"))
		return 1;
	if (!strcmp(name, "exit")) {
		/* exit [N]: ends with status N, so a run can prove it is carried */
		return argc > 1 ? atoi(argv[1]) & 0xff : 0;
	}
	if (!strcmp(name, "echo")) {
		for (i = 1; i < argc; i++)
			printf("%s%s", argv[i], i + 1 < argc ? " " : "");
		putchar('\n');
		return fflush(stdout) ? 1 : 0;
	}
	if (!strcmp(name, "cat")) {
		if (argc < 2)
			return cat_fd(0, "-");
		for (i = 1; i < argc; i++) {
			fd = open(argv[i], O_RDONLY);
			if (fd < 0) {
				fprintf(stderr, "cat: %s: %s\n", argv[i], strerror(errno));
				rc = 1;
				continue;
			}
			rc |= cat_fd(fd, argv[i]);
			close(fd);
		}
		return rc;
	}
	if (!strcmp(name, "insmod"))
		return insmod(argc, argv);
	if (!strcmp(name, "rmmod")) {
		if (argc != 2) {
			fputs("usage: rmmod NAME\n", stderr);
			return 2;
		}
		if (syscall(SYS_delete_module, argv[1], O_NONBLOCK)) {
			fprintf(stderr, "rmmod: %s: %s\n", argv[1], strerror(errno));
			return 1;
		}
		return 0;
	}
	if (!strcmp(name, "write"))
		return write_file(argc, argv);
	if (!strcmp(name, "steps"))
		return steps(argc, argv);
	if (!strcmp(name, "sleep"))
		return sleep_tool(argc, argv);
	fprintf(stderr, "%s: not a tool of this init (init, true, false, exit, echo, cat, insmod, rmmod, write, steps, sleep)\n",
		name);
	return 127;
}

int main(int argc, char **argv)
{
	const char *name = strrchr(argv[0], '/');

	name = name ? name + 1 : argv[0];
	if (getpid() == 1)
		return init_main(argc, argv);
	return tool_main(name, argc, argv);
}
