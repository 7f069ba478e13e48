// SPDX-License-Identifier: GPL-2.0
/*
 * fmm-drop-gnustack: copy an ELF executable, turning its PT_GNU_STACK
 * program header into PT_NULL, so the copy looks like a binary built before
 * PT_GNU_STACK existed (the kernel then sees EXSTACK_DEFAULT, and the 2004
 * policy gives it the legacy layout).  Build-time tool, run on the host.
 *
 * Usage: fmm-drop-gnustack IN OUT
 *
 * Handles ELF32 and ELF64 of the host's byte order.  Fails if IN is not
 * such an ELF file or has no PT_GNU_STACK; OUT keeps IN's mode.  Check the
 * result with "readelf -lW OUT": no GNU_STACK line remains.
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *prog = "fmm-drop-gnustack";

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
 * Rewrite every PT_GNU_STACK entry of the program header table; the table
 * layout is the same for both classes once the entry size is known, but
 * p_type is the first field of both Elf32_Phdr and Elf64_Phdr.
 */
static int drop_gnustack(unsigned char *buf, size_t size, const char *path)
{
	unsigned long long phoff;
	unsigned int phnum, phentsize, i;
	int dropped = 0;

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
		/* p_type is a 32-bit word at offset 0 in both classes. */
		Elf32_Word *type = (Elf32_Word *)(buf + phoff + i * phentsize);

		if (*type == PT_GNU_STACK) {
			*type = PT_NULL;
			dropped++;
		}
	}
	return dropped;
}

int main(int argc, char **argv)
{
	unsigned char *buf;
	size_t size;
	mode_t mode;
	FILE *fp;

	if (argc != 3) {
		fprintf(stderr, "usage: %s IN OUT\n", prog);
		return 2;
	}
	buf = read_file(argv[1], &size, &mode);
	if (!drop_gnustack(buf, size, argv[1]))
		die("%s has no PT_GNU_STACK program header", argv[1]);

	fp = fopen(argv[2], "wb");
	if (!fp || fwrite(buf, 1, size, fp) != size || fclose(fp))
		die("cannot write %s", argv[2]);
	if (chmod(argv[2], mode))
		die("cannot chmod %s", argv[2]);
	free(buf);
	return 0;
}
