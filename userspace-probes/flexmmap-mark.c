// SPDX-License-Identifier: GPL-2.0
/*
 * flexmmap-mark: write, clear and show the per-binary markings flexmmap
 * reads at exec, as extended attributes setfattr(1) and getfattr(1) also
 * read and write:
 *
 *   user.flexmmap.layout  kernel | legacy | flexible | auto
 *   user.pax.flags        PaX letters as paxctl-ng writes them ("m", "em")
 *
 *   flexmmap-mark [--layout MODE] [--pax FLAGS] FILE...
 *   flexmmap-mark --clear FILE...
 *   flexmmap-mark --show FILE...
 *   flexmmap-mark --suggest [--apply] [COMPLAINTS]
 *   flexmmap-mark --sync [LIST...]
 *
 * --show prints one line per file, the file name last so that a name with
 * spaces cannot shift the fields:
 *
 *   layout=VALUE pax=VALUE FILE
 *
 * VALUE is "-" when the attribute is absent; bytes outside printable ASCII
 * (and "\") are shown as \ooo, so a line is always one line; an empty value
 * is shown as nothing ("pax=").
 *
 * --suggest reads W^X complain mode's records (/proc/flexmmap/wx_complaints
 * by default, or the file COMPLAINTS) and prints, for each program in
 * them, why it needs an m marking (a comment line: each kind of refusal,
 * how many times, from which mapping) and the command that marks it, or a
 * comment saying why no marking would do (the file is gone, or it is not
 * root's alone, so the module would not trust an m there).  --apply also
 * marks each program it suggests and adds it to /etc/flexmmap/markings.
 *
 * --sync applies the markings lists (default: the shipped
 * /usr/share/flexmmap/markings, then the administrator's
 * /etc/flexmmap/markings; a later line for the same path wins): one
 * "PATH [layout=MODE|-] [pax=FLAGS|-]" per line ("-": remove; absent:
 * leave), "#" comments, a space, tab or backslash in PATH as \ooo.  A
 * path is opened one component at a time without following a symbolic
 * link that root does not own; a listed file that is missing is noted and
 * skipped, one that is not a regular file root alone can write is
 * reported and not marked.  Exit status:
 * 0 done, 1 a file could not be marked or read (the others still are),
 * 2 bad usage (nothing touched).  Static, like the probes: it needs neither
 * the attr package nor a C library in the guest.  Man page: man/flexmmap-mark.1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "flexmmap.h"

#define XA_LAYOUT FLEXMMAP_MARK_LAYOUT
#define XA_PAX FLEXMMAP_MARK_PAX
/* The kernel's limit for one value (XATTR_SIZE_MAX): any value fits. */
#define XA_MAX 65536
/* The module reads FLEXMMAP_MARK_MAX bytes of each: a longer value is malformed. */
#define MARK_MAX FLEXMMAP_MARK_MAX

/* W^X complain mode's records (complain.c). */
#define COMPLAINTS "/proc/flexmmap/wx_complaints"
/* The markings lists: the package's defaults, then the administrator's. */
#define LIST_SHIPPED "/usr/share/flexmmap/markings"
#define LIST_ADMIN "/etc/flexmmap/markings"

static const char *const layouts[] = { "kernel", "legacy", "flexible", "auto" };

static const char *prog = "flexmmap-mark";
/* --suggest --apply: mark what is suggested and add it to LIST_ADMIN. */
static bool applying;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [--layout MODE] [--pax FLAGS] FILE...\n"
		"       %s --clear FILE...\n"
		"       %s --show FILE...\n"
		"       %s --suggest [--apply] [COMPLAINTS]   (default " COMPLAINTS ")\n"
		"       %s --sync [LIST...]   (default " LIST_SHIPPED " " LIST_ADMIN ")\n"
		"  MODE: kernel, legacy, flexible or auto (" XA_LAYOUT ")\n"
		"  FLAGS: 1 to 16 PaX letters from PpEeMmRrSsXx, upper case on, lower case\n"
		"         off, no letter in both cases (" XA_PAX "; flexmmap reads M and m)\n",
		prog, prog, prog, prog, prog);
}

static void bad_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	usage(stderr);
	exit(2);
}

static bool valid_layout(const char *v)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (!strcmp(v, layouts[i]))
			return true;
	return false;
}

/*
 * What the module accepts: up to 16 letters PaX defines, not both M and m.
 * An empty value is accepted too (no flags): "paxctl-ng -c" writes one.
 */
static bool module_pax_ok(const char *v)
{
	return strlen(v) <= MARK_MAX && strspn(v, "PpEeMmRrSsXx") == strlen(v) &&
	       !(strchr(v, 'M') && strchr(v, 'm'));
}

/*
 * What this tool writes: at least one letter (--clear removes), and no
 * letter in both cases, which contradicts itself (paxctl-ng never writes
 * one; PaX rejects it).
 */
static bool valid_pax(const char *v)
{
	const char *c;

	if (!*v || !module_pax_ok(v))
		return false;
	for (c = v; *c; c++)
		if (strchr(v, *c ^ 0x20))
			return false;
	return true;
}

/* The reason a file could not be marked (or read), in the user's terms. */
static void file_error(const char *file, bool marking, int err)
{
	const char *what = marking ? "marking it" : "reading its marks";

	switch (err) {
	case ENOTSUP:
		fprintf(stderr,
			"%s: %s: the file system of %s does not support user extended attributes"
			" (tmpfs before Linux 6.6 has none); mark a copy on ext4, xfs or btrfs\n",
			prog, file, file);
		break;
	case EACCES:
	case EPERM:
		fprintf(stderr, "%s: %s: permission denied %s (%s): %s\n", prog,
			file, what, err == EPERM ? "EPERM" : "EACCES",
			marking ? "marking a file needs write permission on it" :
				  "showing its marks needs read permission on it");
		break;
	case ENOENT:
		fprintf(stderr, "%s: %s: no such file\n", prog, file);
		break;
	default:
		fprintf(stderr, "%s: %s: %s: %s\n", prog, file, what, strerror(err));
	}
}

/*
 * One attribute's value into buf (XA_MAX + 1 bytes, NUL-terminated): its
 * length, 0 with *absent set when there is none, or -errno.
 */
static ssize_t get_attr(const char *file, const char *name, char *buf,
			bool *absent)
{
	ssize_t n = getxattr(file, name, buf, XA_MAX);

	*absent = false;
	if (n < 0 && errno == ENODATA) {
		*absent = true;
		n = 0;
	} else if (n < 0) {
		return -errno;
	}
	buf[n] = '\0';
	return n;
}

/*
 * @n bytes of @v to @out with every byte outside printable ASCII, and
 * "\\", as \ooo: one line, no escape sequence; the space too unless @space
 * (unescape() reads it back).
 */
static void put_escaped(FILE *out, const char *v, size_t n, bool space)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = v[i];

		if ((c > ' ' || (space && c == ' ')) && c < 0x7f && c != '\\')
			fputc(c, out);
		else
			fprintf(out, "\\%03o", c);
	}
}

static void print_value(const char *key, const char *v, ssize_t n, bool absent)
{
	printf("%s=", key);
	if (absent)
		putchar('-');
	put_escaped(stdout, v, n, false);
}

static int show(const char *file)
{
	static char lay[XA_MAX + 1], pax[XA_MAX + 1];
	bool lay_absent, pax_absent;
	ssize_t nl, np;
	struct stat st;

	if (stat(file, &st)) {
		file_error(file, false, errno);
		return 1;
	}
	nl = get_attr(file, XA_LAYOUT, lay, &lay_absent);
	if (nl < 0) {
		file_error(file, false, -nl);
		return 1;
	}
	np = get_attr(file, XA_PAX, pax, &pax_absent);
	if (np < 0) {
		file_error(file, false, -np);
		return 1;
	}
	print_value("layout", lay, nl, lay_absent);
	putchar(' ');
	print_value("pax", pax, np, pax_absent);
	printf(" %s\n", file);
	/*
	 * Shown as stored; a note says flexmmap ignores it.  An empty layout
	 * is none to the module, like an absent one.
	 */
	if (!lay_absent && nl && (strlen(lay) != (size_t)nl || !valid_layout(lay)))
		fprintf(stderr, "%s: %s: %s is malformed; flexmmap ignores it\n",
			prog, file, XA_LAYOUT);
	if (!pax_absent && (strlen(pax) != (size_t)np || !module_pax_ok(pax)))
		fprintf(stderr, "%s: %s: %s is malformed; flexmmap ignores it\n",
			prog, file, XA_PAX);
	return 0;
}

struct change {
	const char *name;
	const char *value; /* NULL: remove */
	char old[XA_MAX + 1];
	ssize_t old_len;
	bool old_absent;
	bool done;
};

/* Put an attribute back as it was before this run changed it. */
static void undo(const char *file, const char *shown, struct change *c)
{
	int r;

	if (c->old_absent)
		r = removexattr(file, c->name);
	else
		r = setxattr(file, c->name, c->old, c->old_len, 0);
	if (r && !(c->old_absent && errno == ENODATA))
		fprintf(stderr, "%s: %s: could not restore %s: %s\n", prog,
			shown, c->name, strerror(errno));
}

/*
 * Apply every change to one file, or none: the old values are read first
 * and any change already made is undone when a later one fails.  @file is
 * the path the calls use, @shown the name messages give (the listed path
 * of a /proc/self/fd/N that --sync opened).
 */
static int mark(const char *file, const char *shown, struct change *ch,
		int nch)
{
	struct stat st;
	int i, err = 0;

	if (stat(file, &st)) {
		file_error(shown, true, errno);
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "%s: %s: not a regular file (only programs and scripts are marked)\n",
			prog, shown);
		return 1;
	}
	for (i = 0; i < nch; i++) {
		ch[i].done = false;
		ch[i].old_len = get_attr(file, ch[i].name, ch[i].old,
					 &ch[i].old_absent);
		if (ch[i].old_len < 0) {
			file_error(shown, true, -ch[i].old_len);
			return 1;
		}
	}
	for (i = 0; i < nch && !err; i++) {
		int r;

		if (ch[i].value)
			r = setxattr(file, ch[i].name, ch[i].value,
				     strlen(ch[i].value), 0);
		else if (ch[i].old_absent)
			r = 0; /* nothing to remove: not an error */
		else
			r = removexattr(file, ch[i].name);
		if (r && !ch[i].value && errno == ENODATA)
			r = 0;
		if (r)
			err = errno;
		else
			ch[i].done = true;
	}
	if (!err)
		return 0;
	file_error(shown, true, err);
	for (i = 0; i < nch; i++)
		if (ch[i].done)
			undo(file, shown, &ch[i]);
	return 1;
}

static int apply_one(const char *path);

/* Undo the module's \ooo escapes (seq_path(), seq_escape()) in place. */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Safe as a shell word without quotes. */
static bool plain_word(const char *s)
{
	return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			 "0123456789/._+-@:,") == strlen(s);
}

struct program {
	char *path;
	char *devino;
	char *why;
	size_t why_len;
	char uids[128];
	unsigned long total;
	unsigned long local;
};

/*
 * Why the file at @path cannot take the record's m marking, or NULL: it
 * must be the file the record names (its "MAJ:MIN:INO"), reached without
 * a symbolic link at the end (O_PATH|O_NOFOLLOW opens the link itself),
 * since the path a record shows is the kernel's name of the program's
 * file and a program of another mount namespace (a user's, a
 * container's) may show a path that names another file here; and the
 * module must trust an m there (mark.c's rule, seen from here).
 */
static const char *file_problem(const char *path, const char *devino)
{
	unsigned int maj, min;
	unsigned long ino;
	struct stat st;
	bool same;
	int fd;

	if (sscanf(devino, "%u:%u:%lu", &maj, &min, &ino) != 3)
		return "the record's dev:ino is malformed";
	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return "it cannot be found now";
	same = !fstat(fd, &st) && S_ISREG(st.st_mode) && major(st.st_dev) == maj &&
	       minor(st.st_dev) == min && st.st_ino == ino;
	close(fd);
	if (!same)
		return "the file at that path is not the one recorded (dev:ino differ: replaced, a symlink, or another mount namespace's file)";
	if (st.st_uid != 0 || (st.st_mode & 022))
		return "it is not root's alone (the module would ignore an m marking there)";
	return NULL;
}

/* Add @uid to the program's list of uids (" 0 1000 "), once. */
static void add_uid(struct program *p, const char *uid)
{
	char word[32];
	size_t n;

	if (!p->uids[0])
		strcpy(p->uids, " ");
	n = strlen(p->uids);
	snprintf(word, sizeof(word), " %s ", uid);
	if (!strstr(p->uids, word) && n + strlen(uid) + 1 < sizeof(p->uids))
		snprintf(p->uids + n, sizeof(p->uids) - n, "%s ", uid);
}

static int by_path(const void *a, const void *b)
{
	return strcmp(((const struct program *)a)->path,
		      ((const struct program *)b)->path);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p) {
		fprintf(stderr, "%s: out of memory\n", prog);
		exit(1);
	}
	return p;
}

/* Append ", WHAT" (or WHAT) to a program's reasons. */
static void add_why(struct program *p, const char *what)
{
	size_t n = strlen(what) + 3;

	p->why = xrealloc(p->why, p->why_len + n);
	p->why_len += snprintf(p->why + p->why_len, n, "%s%s",
			       p->why_len ? "; " : "", what);
}

/*
 * The records' fields, tab-separated: count, path, dev:ino, uid, call,
 * refused, memory, old, new, caller.
 */
static int suggest(const char *file)
{
	int rc = 0;
	struct program *progs = NULL;
	size_t n = 0, cap = 0, len = 0, i;
	char *line = NULL, *f[10];
	unsigned long lines = 0;
	FILE *in;
	int k;

	in = fopen(file, "r");
	if (!in) {
		fprintf(stderr, "%s: %s: %s%s\n", prog, file, strerror(errno),
			errno == ENOENT && !strcmp(file, COMPLAINTS) ?
				" (is the flexmmap module loaded?)" :
			errno == EPERM || errno == EACCES ?
				" (the records need root: CAP_SYS_ADMIN)" :
				"");
		return 1;
	}
	while (getline(&line, &len, in) > 0) {
		char what[1024], *s = line, *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (line[0] == '#' || !line[0])
			continue;
		for (k = 0; k < 10; k++) {
			f[k] = strsep(&s, "\t");
			if (!f[k])
				break;
		}
		if (k < 10) {
			fprintf(stderr, "%s: %s: not a line of W^X complaints: %s\n",
				prog, file, line);
			fclose(in);
			free(line);
			return 1;
		}
		unescape(f[1]);
		lines++;
		for (i = 0; i < n && strcmp(progs[i].path, f[1]); i++)
			;
		if (i == n) {
			if (n == cap) {
				cap = cap ? 2 * cap : 16;
				progs = xrealloc(progs, cap * sizeof(*progs));
			}
			progs[n++] = (struct program){ .path = strdup(f[1]),
						       .devino = strdup(f[2]) };
			if (!progs[i].path || !progs[i].devino)
				xrealloc(NULL, (size_t)-1);
		}
		add_uid(&progs[i], f[3]);
		/*
		 * Written by another process (a debugger, a userfaultfd
		 * monitor): an m marking would let every writer in.
		 */
		if (strcmp(f[4], "/proc/PID/mem") && strcmp(f[4], "ptrace") &&
		    !(!strcmp(f[4], "userfaultfd") && !strcmp(f[9], "-")))
			progs[i].local += strtoul(f[0], NULL, 10);
		snprintf(what, sizeof(what), "%s(%s) of %s, %s time%s, from %s",
			 f[4], f[5], f[6], f[0], strcmp(f[0], "1") ? "s" : "",
			 f[9]);
		add_why(&progs[i], what);
		progs[i].total += strtoul(f[0], NULL, 10);
	}
	free(line);
	fclose(in);
	qsort(progs, n, sizeof(*progs), by_path);
	for (i = 0; i < n; i++) {
		const char *p = progs[i].path;
		size_t pl = strlen(p);
		const char *bad = NULL;

		/*
		 * Names come from users: every byte of them is printed
		 * escaped in the comments, and a command is printed only
		 * for a name that is safe as one shell word, quoted or not.
		 */
		fputs("# ", stdout);
		put_escaped(stdout, p, strlen(p), true);
		printf(": %lu refused under W^X (uid%.*s): ", progs[i].total,
		       (int)strlen(progs[i].uids) - 1, progs[i].uids);
		put_escaped(stdout, progs[i].why, strlen(progs[i].why), true);
		putchar('\n');
		if (pl > 10 && !strcmp(p + pl - 10, " (deleted)"))
			bad = "the file was replaced or removed since; run the new one under complain mode";
		else if (p[0] != '/')
			bad = "not a path";
		else if (strpbrk(p, "'") || p[strspn(p, " !#%&()*;<=>?[]^{|}~$`\"\\"
						      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
						      "abcdefghijklmnopqrstuvwxyz"
						      "0123456789/._+-@:,")])
			bad = "its name has a quote or a control character: mark it by hand";
		else if (!progs[i].local)
			bad = "only other processes wrote into it (/proc/PID/mem, ptrace, userfaultfd): an m marking would let any writer in";
		else
			bad = file_problem(p, progs[i].devino);
		if (bad)
			printf("#   no marking suggested: %s\n", bad);
		else if (!plain_word(p))
			printf("flexmmap-mark --pax m '%s'\n", p);
		else
			printf("flexmmap-mark --pax m %s\n", p);
		if (!bad && applying)
			rc |= apply_one(p);
		free(progs[i].path);
		free(progs[i].devino);
		free(progs[i].why);
	}
	free(progs);
	if (!lines)
		printf("# no W^X complaints recorded\n");
	return rc;
}

/*
 * Open @path (absolute) one component at a time, following a symbolic link
 * only if root owns it (a link a user owns could point the marking at any
 * file).  Returns an O_PATH descriptor of a regular file root alone can
 * write (mark_listed() marks it), or -1 with *why set.
 */
static int open_listed(const char *path, const char **why)
{
	char buf[PATH_MAX], link[PATH_MAX], *comp, *rest;
	int dir, fd = -1, hops = 0;
	struct stat st;

	*why = "not an absolute path";
	if (path[0] != '/' || strlen(path) >= sizeof(buf))
		return -1;
	strcpy(buf, path);
	dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	rest = buf;
	while (dir >= 0) {
		while (*rest == '/')
			rest++;
		comp = strsep(&rest, "/");
		if (!*comp) {
			*why = "names a folder";
			break;
		}
		fd = openat(dir, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			*why = errno == ENOENT ? "missing" : strerror(errno);
			break;
		}
		if (S_ISLNK(st.st_mode)) {
			ssize_t n;

			if (st.st_uid != 0) {
				*why = "a symbolic link on its way is not root's: not followed";
				break;
			}
			n = readlinkat(fd, "", link, sizeof(link) - 1);
			if (n < 0 || ++hops > 40) {
				*why = "a symbolic link on its way cannot be followed";
				break;
			}
			link[n] = '\0';
			/* The link's target, then what was left of the path. */
			if (snprintf(link + n, sizeof(link) - n, "%s%s",
				     rest ? "/" : "", rest ? rest : "") >=
			    (int)(sizeof(link) - n)) {
				*why = "its path is too long";
				break;
			}
			strcpy(buf, link);
			rest = buf;
			close(fd);
			fd = -1;
			if (buf[0] == '/') {
				close(dir);
				dir = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			}
			continue;
		}
		if (!rest) {
			if (!S_ISREG(st.st_mode)) {
				*why = "not a regular file";
				break;
			}
			if (st.st_uid != 0 || (st.st_mode & 022)) {
				*why = "not root's alone (an m marking would not be trusted)";
				break;
			}
			close(dir);
			return fd;
		}
		close(dir);
		dir = fd;
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	return -1;
}

/*
 * mark() the file open_listed() opened, through its descriptor (its
 * /proc/self/fd link, not the path again), and close it.
 */
static int mark_listed(int fd, const char *shown, struct change *ch,
		       int nch)
{
	char self[32];
	int rc;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	rc = mark(self, shown, ch, nch);
	close(fd);
	return rc;
}

/*
 * One line of a markings list: "PATH [layout=V] [pax=V]".  0 applied (or
 * missing), 1 reported.
 */
static int sync_line(const char *list, unsigned long nr, char *line)
{
	const char *layout = NULL, *pax = NULL, *why;
	bool has_layout = false, has_pax = false;
	char *path, *word, *shown, *s = line;
	struct change ch[2];
	int fd, nch = 0, rc;

	path = strsep(&s, " \t");
	unescape(path);
	while (s && (word = strsep(&s, " \t"))) {
		if (!*word)
			continue;
		if (!strncmp(word, "layout=", 7) && !has_layout) {
			has_layout = true;
			layout = strcmp(word + 7, "-") ? word + 7 : NULL;
			if (layout && !valid_layout(layout))
				goto bad;
		} else if (!strncmp(word, "pax=", 4) && !has_pax) {
			has_pax = true;
			pax = strcmp(word + 4, "-") ? word + 4 : NULL;
			if (pax && !valid_pax(pax))
				goto bad;
		} else {
			goto bad;
		}
	}
	if (!has_layout && !has_pax)
		goto bad;
	fd = open_listed(path, &why);
	if (fd < 0) {
		if (!strcmp(why, "missing")) {
			fprintf(stderr, "%s: %s:%lu: %s: not installed, skipped\n",
				prog, list, nr, path);
			return 0;
		}
		fprintf(stderr, "%s: %s:%lu: %s: %s: not marked\n", prog, list,
			nr, path, why);
		return 1;
	}
	if (has_layout)
		ch[nch++] = (struct change){ .name = XA_LAYOUT, .value = layout };
	if (has_pax)
		ch[nch++] = (struct change){ .name = XA_PAX, .value = pax };
	if (asprintf(&shown, "%s:%lu: %s", list, nr, path) < 0) {
		close(fd);
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	rc = mark_listed(fd, shown, ch, nch);
	free(shown);
	return rc;
bad:
	fprintf(stderr, "%s: %s:%lu: not \"PATH [layout=MODE|-] [pax=FLAGS|-]\": skipped\n",
		prog, list, nr);
	return 1;
}

/*
 * --apply: mark @path m (through open_listed(): no symbolic link a user
 * owns, a file root alone can write) and add "PATH pax=m" to LIST_ADMIN
 * unless a line for it is there.
 */
static int apply_one(const char *path)
{
	struct change m = { .name = XA_PAX, .value = "m" };
	char *line = NULL, *first;
	const char *why;
	bool listed = false;
	size_t len = 0;
	FILE *f;
	int fd;

	fd = open_listed(path, &why);
	if (fd < 0) {
		fprintf(stderr, "%s: %s: %s: not marked\n", prog, path, why);
		return 1;
	}
	if (mark_listed(fd, path, &m, 1))
		return 1;
	if (mkdir("/etc/flexmmap", 0755) && errno != EEXIST) {
		fprintf(stderr, "%s: /etc/flexmmap: %s\n", prog, strerror(errno));
		return 1;
	}
	f = fopen(LIST_ADMIN, "a+");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, LIST_ADMIN, strerror(errno));
		return 1;
	}
	rewind(f);
	while (!listed && getline(&line, &len, f) > 0) {
		char *s = line + strspn(line, " \t");

		first = strsep(&s, " \t\n");
		unescape(first);
		listed = !strcmp(first, path);
	}
	free(line);
	if (!listed) {
		/* The list's first word: a space escaped too. */
		put_escaped(f, path, strlen(path), false);
		fputs(" pax=m\n", f);
	}
	if (fclose(f)) {
		fprintf(stderr, "%s: %s: %s\n", prog, LIST_ADMIN, strerror(errno));
		return 1;
	}
	printf("#   marked m%s\n", listed ? " (already in " LIST_ADMIN ")" : ", added to " LIST_ADMIN);
	return 0;
}

/* Apply each list in turn; a missing list is none. */
static int sync_lists(char **lists, int n)
{
	char *line = NULL;
	size_t len = 0;
	int i, rc = 0;

	for (i = 0; i < n; i++) {
		unsigned long nr = 0;
		FILE *in = fopen(lists[i], "r");

		if (!in) {
			if (errno == ENOENT)
				continue;
			fprintf(stderr, "%s: %s: %s\n", prog, lists[i],
				strerror(errno));
			rc = 1;
			continue;
		}
		while (getline(&line, &len, in) > 0) {
			char *s = line, *nl = strchr(line, '\n');

			nr++;
			if (nl)
				*nl = '\0';
			s += strspn(s, " \t");
			if (!*s || *s == '#')
				continue;
			rc |= sync_line(lists[i], nr, s);
		}
		fclose(in);
	}
	free(line);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "layout", required_argument, NULL, 'l' },
		{ "pax", required_argument, NULL, 'p' },
		{ "clear", no_argument, NULL, 'c' },
		{ "show", no_argument, NULL, 's' },
		{ "suggest", no_argument, NULL, 'S' },
		{ "apply", no_argument, NULL, 'A' },
		{ "sync", no_argument, NULL, 'Y' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *layout = NULL, *pax = NULL;
	bool clear = false, showing = false, suggesting = false, syncing = false;
	static struct change ch[2];
	int o, i, nch = 0, rc = 0;

	opterr = 0;
	while ((o = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (o) {
		case 'l':
			if (!valid_layout(optarg))
				bad_usage("bad MODE '%s': kernel, legacy, flexible or auto",
					  optarg);
			layout = optarg;
			break;
		case 'p':
			if (!valid_pax(optarg))
				bad_usage("bad FLAGS '%s': 1 to 16 letters from PpEeMmRrSsXx, none in both cases",
					  optarg);
			pax = optarg;
			break;
		case 'c':
			clear = true;
			break;
		case 's':
			showing = true;
			break;
		case 'S':
			suggesting = true;
			break;
		case 'A':
			applying = true;
			break;
		case 'Y':
			syncing = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			bad_usage("%s needs a value", argv[optind - 1]);
			break;
		default:
			bad_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (showing + clear + suggesting + syncing + !!(layout || pax) != 1)
		bad_usage("%s", "give one of --show, --clear, --suggest, --sync, or --layout and/or --pax");
	if (applying && !suggesting)
		bad_usage("%s", "--apply goes with --suggest");
	if (suggesting) {
		if (argc - optind > 1)
			bad_usage("%s", "--suggest reads one file of complaints");
		return suggest(optind < argc ? argv[optind] : COMPLAINTS);
	}
	if (syncing) {
		static char *defaults[] = { LIST_SHIPPED, LIST_ADMIN };

		if (optind < argc)
			return sync_lists(argv + optind, argc - optind);
		return sync_lists(defaults, 2);
	}
	if (optind >= argc)
		bad_usage("%s", "no FILE given");

	if (showing) {
		for (i = optind; i < argc; i++)
			rc |= show(argv[i]);
		return rc;
	}
	if (clear || layout)
		ch[nch++] = (struct change){ .name = XA_LAYOUT, .value = layout };
	if (clear || pax)
		ch[nch++] = (struct change){ .name = XA_PAX, .value = pax };
	for (i = optind; i < argc; i++)
		rc |= mark(argv[i], argv[i], ch, nch);
	return rc;
}
