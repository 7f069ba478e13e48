// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-fuse-stall: hold a process's mmap lock for as long as we like, the way
 * any user can: a FUSE file whose reads are never answered.
 *
 * Usage: fmm-fuse-stall-64 serve DIR	mount at DIR a file system with one
 *					64 KiB file, DIR/stall, answer every
 *					request but READ, print "ready" and
 *					serve until killed (killing it aborts
 *					the connection: the stalled reads fail)
 *        fmm-fuse-stall-64 map FILE	map FILE read-only without touching
 *					it, print "mapped 0xADDR" and wait
 *					until killed
 *
 * Reading the mapped page through /proc/PID/mem (access_remote_vm(), which
 * may not drop the lock to wait) faults it in with the mapping process's
 * mmap lock held for reading, and the fault waits for a READ reply that
 * never comes: nobody can take that mmap lock for writing until the server
 * dies.  tests/guest/42-unload-bounded.sh shows rmmod does not wait for it.
 * An exec of the file (mode 0555), or of a #! script naming it, stalls the
 * same way reading its first page (tests/guest/39 and 46).  Root only
 * (mount; allow_other: other users may use the file); a raw /dev/fuse
 * server, no libfuse.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_NAME	"stall"
#define FILE_INO	2
#define FILE_SIZE	(64 << 10)
#define BUF_SIZE	(FUSE_MIN_READ_BUFFER + (1 << 20))

static int fuse_fd;
static unsigned long nr_stalled;

static void die(const char *what)
{
	fprintf(stderr, "fmm-fuse-stall: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void reply(const struct fuse_in_header *in, int error,
		  const void *arg, size_t size)
{
	struct {
		struct fuse_out_header h;
		char arg[sizeof(struct fuse_entry_out) + 256];
	} out;

	out.h.len = sizeof(out.h) + (error ? 0 : size);
	out.h.error = error;
	out.h.unique = in->unique;
	if (!error && size)
		memcpy(out.arg, arg, size);
	/* ENOENT: the request was interrupted meanwhile; nothing to do. */
	if (write(fuse_fd, &out, out.h.len) < 0 && errno != ENOENT)
		die("write /dev/fuse");
}

static void fill_attr(struct fuse_attr *a, unsigned long ino)
{
	memset(a, 0, sizeof(*a));
	a->ino = ino;
	a->blksize = 4096;
	if (ino == FUSE_ROOT_ID) {
		a->mode = S_IFDIR | 0755;
		a->nlink = 2;
	} else {
		a->mode = S_IFREG | 0555;
		a->nlink = 1;
		a->size = FILE_SIZE;
		a->blocks = FILE_SIZE / 512;
	}
}

static void handle(const struct fuse_in_header *in, const void *arg)
{
	switch (in->opcode) {
	case FUSE_INIT: {
		const struct fuse_init_in *ii = arg;
		struct fuse_init_out o = {
			.major = FUSE_KERNEL_VERSION,
			.minor = FUSE_KERNEL_MINOR_VERSION,
			.max_readahead = ii->max_readahead,
			.max_background = 16,
			.congestion_threshold = 12,
			.max_write = 4096,
			.time_gran = 1,
		};

		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_LOOKUP: {
		struct fuse_entry_out o = { 0 };

		if (in->nodeid != FUSE_ROOT_ID || strcmp(arg, FILE_NAME)) {
			reply(in, -ENOENT, NULL, 0);
			break;
		}
		o.nodeid = FILE_INO;
		o.generation = 1;
		o.entry_valid = 3600;
		o.attr_valid = 3600;
		fill_attr(&o.attr, FILE_INO);
		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_GETATTR: {
		struct fuse_attr_out o = { .attr_valid = 3600 };

		fill_attr(&o.attr, in->nodeid);
		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_OPEN:
	case FUSE_OPENDIR: {
		struct fuse_open_out o = { .fh = 1 };

		reply(in, 0, &o, sizeof(o));
		break;
	}
	case FUSE_READ:
		/* The point: never answered. */
		nr_stalled++;
		fprintf(stderr, "fmm-fuse-stall: READ %lu stalled\n",
			nr_stalled);
		break;
	case FUSE_FLUSH:
	case FUSE_RELEASE:
	case FUSE_RELEASEDIR:
		reply(in, 0, NULL, 0);
		break;
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		break;		/* no reply expected */
	default:
		reply(in, -ENOSYS, NULL, 0);
		break;
	}
}

static int serve(const char *dir)
{
	char opts[128];
	char *buf;
	ssize_t n;

	fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fuse_fd < 0)
		die("open /dev/fuse (modprobe fuse?)");
	snprintf(opts, sizeof(opts),
		 "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other",
		 fuse_fd);
	if (mount("fmm-fuse-stall", dir, "fuse.fmm-fuse-stall",
		  MS_NOSUID | MS_NODEV, opts))
		die("mount");
	buf = malloc(BUF_SIZE);
	if (!buf)
		die("malloc");
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		n = read(fuse_fd, buf, BUF_SIZE);
		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < 0 && errno == ENODEV)
			return 0;	/* unmounted */
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			die("read /dev/fuse");
		handle((void *)buf, buf + sizeof(struct fuse_in_header));
	}
}

static void __attribute__((noreturn)) map(const char *file)
{
	int fd = open(file, O_RDONLY);
	void *p;

	if (fd < 0)
		die(file);
	p = mmap(NULL, FILE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	printf("mapped %p\n", p);
	fflush(stdout);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "map"))
		map(argv[2]);
	fprintf(stderr, "usage: fmm-fuse-stall serve DIR | map FILE\n");
	return 2;
}
