// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-elfedit: copy an ELF executable, changing its program headers:
 *
 *   --drop-gnustack  turn PT_GNU_STACK into PT_NULL, so the copy looks like
 *		      a binary built before PT_GNU_STACK existed (the kernel
 *		      then sees EXSTACK_DEFAULT, and the 2004 policy gives it
 *		      the legacy layout); check with "readelf -lW OUT": no
 *		      GNU_STACK line remains
 *   --rwx-text	      make every executable PT_LOAD writable too (RWX), the
 *		      kind of binary W^X (vm.flexmmap_nx=3) refuses to map
 *
 * Usage: fmm-elfedit --drop-gnustack|--rwx-text IN OUT
 *
 * Build-time tool, run on the host (the guest tests use it too).  Handles
 * ELF32 and ELF64 of the host's byte order.  Fails if IN is not such an ELF
 * file or has nothing to change; OUT keeps IN's mode.
 */
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *prog = "fmm-elfedit";

static void __attribute__((noreturn)) die(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

static unsigned char *read_file(const char *path, size_t *size, mode_t *mode)
{
	struct stat st;
	unsigned char *buf;
	FILE *fp;

	fp = fopen(path, "rb");
	if (!fp || fstat(fileno(fp), &st))
		die("cannot open %s", path);
	buf = malloc(st.st_size ? st.st_size : 1);
	if (!buf || fread(buf, 1, st.st_size, fp) != (size_t)st.st_size)
		die("cannot read %s", path);
	fclose(fp);
	*size = st.st_size;
	*mode = st.st_mode & 07777;
	return buf;
}

/*
 * Rewrite the program header table: p_type is the first field of both
 * Elf32_Phdr and Elf64_Phdr; p_flags is the second field of Elf64_Phdr and
 * the seventh of Elf32_Phdr.  Returns how many entries changed.
 */
static int edit_phdrs(unsigned char *buf, size_t size, const char *path,
		      bool rwx_text)
{
	unsigned long long phoff;
	unsigned int phnum, phentsize, i;
	int changed = 0;

	if (size < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG))
		die("%s is not an ELF file", path);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (buf[EI_DATA] != ELFDATA2LSB)
#else
	if (buf[EI_DATA] != ELFDATA2MSB)
#endif
		die("%s: byte order differs from the host's", path);

	if (buf[EI_CLASS] == ELFCLASS64 && size >= sizeof(Elf64_Ehdr)) {
		Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;

		phoff = eh->e_phoff;
		phnum = eh->e_phnum;
		phentsize = eh->e_phentsize;
		if (phentsize < sizeof(Elf64_Phdr))
			die("%s: bad e_phentsize", path);
	} else if (buf[EI_CLASS] == ELFCLASS32 && size >= sizeof(Elf32_Ehdr)) {
		Elf32_Ehdr *eh = (Elf32_Ehdr *)buf;

		phoff = eh->e_phoff;
		phnum = eh->e_phnum;
		phentsize = eh->e_phentsize;
		if (phentsize < sizeof(Elf32_Phdr))
			die("%s: bad e_phentsize", path);
	} else {
		die("%s: neither ELF32 nor ELF64", path);
	}
	if (phnum == PN_XNUM)
		die("%s: extended program header numbering not supported", path);
	if (phoff > size || (unsigned long long)phnum * phentsize > size - phoff)
		die("%s: program header table outside the file", path);

	for (i = 0; i < phnum; i++) {
		unsigned char *ph = buf + phoff + i * phentsize;
		Elf32_Word *type = (Elf32_Word *)ph;
		Elf32_Word *flags = (Elf32_Word *)(ph + (buf[EI_CLASS] == ELFCLASS64 ?
					offsetof(Elf64_Phdr, p_flags) :
					offsetof(Elf32_Phdr, p_flags)));

		if (!rwx_text && *type == PT_GNU_STACK) {
			*type = PT_NULL;
			changed++;
		} else if (rwx_text && *type == PT_LOAD && (*flags & PF_X) &&
			   !(*flags & PF_W)) {
			*flags |= PF_W;
			changed++;
		}
	}
	return changed;
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	size_t size;
	mode_t mode;
	FILE *fp;

	bool rwx_text;

	if (argc != 4 || (strcmp(argv[1], "--drop-gnustack") &&
			  strcmp(argv[1], "--rwx-text"))) {
		fprintf(stderr, "usage: %s --drop-gnustack|--rwx-text IN OUT\n",
			prog);
		return 2;
	}
	rwx_text = !strcmp(argv[1], "--rwx-text");
	buf = read_file(argv[2], &size, &mode);
	if (!edit_phdrs(buf, size, argv[2], rwx_text))
		die(rwx_text ? "%s has no read-only executable PT_LOAD" :
			       "%s has no PT_GNU_STACK program header", argv[2]);

	fp = fopen(argv[3], "wb");
	if (!fp || fwrite(buf, 1, size, fp) != size || fclose(fp))
		die("cannot write %s", argv[3]);
	if (chmod(argv[3], mode))
		die("cannot chmod %s", argv[3]);
	free(buf);
	return 0;
}
