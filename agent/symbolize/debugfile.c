// SPDX-License-Identifier: Apache-2.0
/*
 * debugfile.c - the places of a binary's separate debug file and the
 * check that a file found there is its (see debugfile.h).  Pure but for
 * the CRC, which reads the file it is given.
 */
#include "agent/symbolize/debugfile.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>

/* snprintf that says whether the whole path fitted. */
__attribute__((format(printf, 3, 4))) static bool
path_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n >= 0 && (size_t)n < size;
}

size_t vm_debugfile_places(const struct vm_elf_info *bin, const char *path,
			   const char *root, const char *debug_dir,
			   struct vm_debugfile_place out[VM_DEBUGFILE_PLACES])
{
	char hex[2 * VM_BUILD_ID_MAX + 1], dir[PATH_MAX], *slash;
	const char *link = bin->debuglink;
	size_t n = 0;

	if (bin->build_id_len >= 2) {
		for (size_t i = 0; i < bin->build_id_len; i++)
			sprintf(hex + 2 * i, "%02x", bin->build_id[i]);
		if (path_fmt(out[n].path, sizeof(out[n].path),
			     "%s%s/.build-id/%.2s/%s.debug", root, debug_dir,
			     hex, hex + 2))
			out[n++].by_debuglink = false;
	}
	if (!link || !path || !path_fmt(dir, sizeof(dir), "%s", path))
		return n;
	slash = strrchr(dir, '/');
	if (!slash)
		return n;
	*slash = '\0';
	/* A debug link naming the binary itself is not its debug file. */
	if (path_fmt(out[n].path, sizeof(out[n].path), "%s%s/%s", root, dir,
		     link) &&
	    strcmp(out[n].path + strlen(root), path))
		out[n++].by_debuglink = true;
	if (path_fmt(out[n].path, sizeof(out[n].path), "%s%s/.debug/%s", root,
		     dir, link))
		out[n++].by_debuglink = true;
	if (path_fmt(out[n].path, sizeof(out[n].path), "%s%s%s/%s", root,
		     debug_dir, dir, link))
		out[n++].by_debuglink = true;
	return n;
}

int vm_debugfile_check(const struct vm_elf_info *bin,
		       const struct vm_elf_info *dbg, char *why, size_t len)
{
	if (!bin->build_id_len)
		return 0;
	if (!dbg->build_id_len) {
		snprintf(why, len,
			 "it has no build id, and the binary has one: not "
			 "taken as its debug file");
		return -EINVAL;
	}
	if (dbg->build_id_len != bin->build_id_len ||
	    memcmp(dbg->build_id, bin->build_id, bin->build_id_len)) {
		snprintf(why, len,
			 "its build id is not the binary's: not taken as its "
			 "debug file");
		return -EINVAL;
	}
	return 0;
}

bool vm_debugfile_crc_matches(int fd, uint32_t want)
{
	struct stat st;
	void *p;
	uLong crc;

	if (fstat(fd, &st) || st.st_size <= 0)
		return false;
	p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return false;
	crc = crc32(0L, Z_NULL, 0);
	/* zlib's crc32 takes uInt lengths: feed large files in pieces. */
	for (off_t off = 0; off < st.st_size;) {
		size_t len = st.st_size - off > (1 << 30) ? 1 << 30 :
							    st.st_size - off;

		crc = crc32(crc, (const Bytef *)p + off, (uInt)len);
		off += len;
	}
	munmap(p, st.st_size);
	return (uint32_t)crc == want;
}
