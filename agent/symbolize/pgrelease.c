// SPDX-License-Identifier: Apache-2.0
/*
 * pgrelease.c - a PostgreSQL server executable's minor release, from the
 * version string in its .rodata (pgrelease.h).
 */
#include "agent/symbolize/pgrelease.h"

#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>

#include "agent/symbolize/pgwait.h"

unsigned vm_pg_release_in(const char *text, size_t len, unsigned major)
{
	char prefix[32];
	unsigned found = VM_PG_MINOR_UNKNOWN;
	size_t plen;
	const char *p = text, *end = text + len;

	plen = (size_t)snprintf(prefix, sizeof(prefix), "PostgreSQL %u.",
				major);
	while (p < end &&
	       (p = memmem(p, (size_t)(end - p), prefix, plen)) != NULL) {
		const char *q = p + plen;
		unsigned minor = 0, digits = 0;

		p += plen;
		while (q < end && *q >= '0' && *q <= '9' && digits < 4) {
			minor = minor * 10 + (unsigned)(*q++ - '0');
			digits++;
		}
		if (!digits ||
		    (q < end && ((*q >= '0' && *q <= '9') || *q == '.')))
			continue; /* not a release: "15.1.2", a long number */
		if (found != VM_PG_MINOR_UNKNOWN && found != minor)
			return VM_PG_MINOR_UNKNOWN;
		found = minor;
	}
	return found;
}

static unsigned release_of_elf(Elf *e, unsigned major)
{
	unsigned minor = VM_PG_MINOR_UNKNOWN;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx))
		goto out;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;
		Elf_Data *d;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".rodata"))
			continue;
		d = elf_getdata(scn, NULL);
		if (d && d->d_buf)
			minor = vm_pg_release_in(d->d_buf, d->d_size, major);
		break;
	}
out:
	elf_end(e);
	return minor;
}

unsigned vm_pg_release_of_fd(int fd, unsigned major)
{
	elf_version(EV_CURRENT);
	return release_of_elf(elf_begin(fd, ELF_C_READ_MMAP, NULL), major);
}

unsigned vm_pg_release_of_mem(const void *buf, size_t len, unsigned major)
{
	elf_version(EV_CURRENT);
	return release_of_elf(elf_memory((char *)buf, len), major);
}
