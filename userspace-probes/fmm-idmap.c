// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-idmap: an idmapped bind mount, for tests/guest/46-markings.sh (util-linux
 * 2.38 in Debian 12 has no X-mount.idmap).
 *
 *   fmm-idmap SRC DST	bind SRC at DST through a user namespace whose
 *			uid and gid maps are "0 0 65536": the same ids,
 *			but an idmapped mount all the same, as a
 *			container's root file system may be
 *
 * open_tree(OPEN_TREE_CLONE), mount_setattr(MOUNT_ATTR_IDMAP) with the user
 * namespace of a child that unshare()d one, move_mount().  Needs root (in
 * the initial user namespace) and a file system that allows idmapped
 * mounts (ext4 does).  Exit 0 when mounted, 1 with a message otherwise.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "fmm-idmap: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die(path);
	close(fd);
}

int main(int argc, char **argv)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP };
	int ready[2], done[2], tree, ns;
	char path[64], c;
	pid_t pid;

	if (argc != 3) {
		fprintf(stderr, "usage: fmm-idmap SRC DST\n");
		return 1;
	}
	if (pipe(ready) || pipe(done))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* Hold a user namespace until the parent has used it. */
		if (unshare(CLONE_NEWUSER))
			_exit(1);
		c = 'r';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		_exit(read(done[0], &c, 1) == 1 ? 0 : 1);
	}
	if (read(ready[0], &c, 1) != 1) {
		errno = ECHILD;
		die("the child's user namespace");
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	write_file(path, "0 0 65536\n");
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	write_file(path, "0 0 65536\n");
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		die(path);
	c = 'd';
	if (write(done[1], &c, 1) != 1)
		die("pipe");
	waitpid(pid, NULL, 0);

	tree = syscall(SYS_open_tree, AT_FDCWD, argv[1],
		       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		die("open_tree");
	attr.userns_fd = ns;
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr,
		    sizeof(attr)))
		die("mount_setattr(MOUNT_ATTR_IDMAP)");
	if (syscall(SYS_move_mount, tree, "", AT_FDCWD, argv[2],
		    MOVE_MOUNT_F_EMPTY_PATH))
		die("move_mount");
	return 0;
}
