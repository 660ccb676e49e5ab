// SPDX-License-Identifier: Apache-2.0
/*
 * oom_format.c - where the fields of the tracepoint oom/mark_victim's
 * record are, from the format tracefs prints (oomwatch.h).  Pure: the
 * text comes from bpf/bpf_oom.c.  Lines read
 *
 *	field:int pid;	offset:8;	size:4;	signed:1;
 *
 * and only the fields the program copies, of the size it copies, are
 * kept; any other line is passed over.
 */
#include "agent/profile/oomwatch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One field line: its declaration, offset and size; false if not one. */
static bool field_line(const char *line, size_t len, char *decl, size_t cap,
		       unsigned *off, unsigned *size)
{
	const char *f = memmem(line, len, "field:", 6);
	const char *semi, *o, *s;
	size_t n;

	if (!f)
		return false;
	f += 6;
	semi = memchr(f, ';', len - (size_t)(f - line));
	if (!semi)
		return false;
	n = (size_t)(semi - f);
	if (n >= cap)
		return false;
	memcpy(decl, f, n);
	decl[n] = '\0';
	o = memmem(semi, len - (size_t)(semi - line), "offset:", 7);
	s = memmem(semi, len - (size_t)(semi - line), "size:", 5);
	if (!o || !s)
		return false;
	*off = (unsigned)strtoul(o + 7, NULL, 10);
	*size = (unsigned)strtoul(s + 5, NULL, 10);
	return *off < 4096;
}

/* The declared name: its last word, without "[]". */
static const char *field_name(char *decl)
{
	char *sp = strrchr(decl, ' '), *br;
	char *name = sp ? sp + 1 : decl;

	br = strchr(name, '[');
	if (br)
		*br = '\0';
	return name;
}

int vm_oom_format_parse(const char *text, struct vm_oom_format *out,
			struct vm_error *err)
{
	uint32_t id = out->id;
	const char *p = text;

	memset(out, 0, sizeof(*out));
	out->id = id;
	while (*p) {
		const char *end = strchrnul(p, '\n');
		char decl[128];
		unsigned off, size;

		if (field_line(p, (size_t)(end - p), decl, sizeof(decl), &off,
			       &size) &&
		    off) {
			bool loc = strncmp(decl, "__data_loc ", 11) == 0;
			const char *name = field_name(decl);

			if (!strcmp(name, "pid") && size == 4 && !loc)
				out->pid = off;
			else if (!strcmp(name, "comm") && loc && size == 4)
				out->comm_loc = off;
			else if (!strcmp(name, "uid") && size == 4)
				out->uid = off;
			else if (!strcmp(name, "total_vm") && size == 8)
				out->total_vm = off;
			else if (!strcmp(name, "anon_rss") && size == 8)
				out->anon_rss = off;
			else if (!strcmp(name, "file_rss") && size == 8)
				out->file_rss = off;
			else if (!strcmp(name, "shmem_rss") && size == 8)
				out->shmem_rss = off;
		}
		p = *end ? end + 1 : end;
	}
	if (!out->pid)
		return vm_error_set(
			err, EINVAL,
			"the format of the tracepoint oom/mark_victim has no 4-byte pid field; this kernel's OOM victims cannot be followed");
	return 0;
}
