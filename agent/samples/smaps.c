// SPDX-License-Identifier: Apache-2.0
/*
 * smaps.c - the parsers of /proc/PID/smaps_rollup and /proc/PID/smaps
 * (smaps.h).  Both are "Key:   N kB" lines; smaps starts each mapping
 * with a line like /proc/PID/maps's, whose path says the mapping's kind.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agent/samples/smaps.h"
#include "common/satmath.h"

/* "Key: N kB" at the start of line: N in bytes into *v; false if not. */
static bool field(const char *line, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	uint64_t kb;

	if (strncmp(line, key, n) || line[n] != ':')
		return false;
	if (sscanf(line + n + 1, "%" SCNu64, &kb) != 1)
		return false;
	*v = kb > UINT64_MAX / 1024 ? UINT64_MAX : kb * 1024;
	return true;
}

int vm_smaps_rollup_parse(const char *text, struct vm_smaps_rollup *out)
{
	bool pss = false;
	int split = 0;

	memset(out, 0, sizeof(*out));
	for (const char *l = text; l && *l;
	     l = strchr(l, '\n'), l = l ? l + 1 : l) {
		pss |= field(l, "Pss", &out->pss);
		split += field(l, "Pss_Anon", &out->pss_anon);
		split += field(l, "Pss_File", &out->pss_file);
		split += field(l, "Pss_Shmem", &out->pss_shmem);
		field(l, "Rss", &out->rss);
		field(l, "Anonymous", &out->anonymous);
		field(l, "Swap", &out->swap);
	}
	out->split = split == 3;
	return pss ? 0 : -EINVAL;
}

const char *vm_smaps_kind_frame(enum vm_smaps_kind k)
{
	static const char *const frames[VM_SMAPS_KINDS] = {
		[VM_SMAPS_HEAP] = "[heap]",
		[VM_SMAPS_ANON] = "[anonymous mappings]",
		[VM_SMAPS_STACK] = "[stacks]",
		[VM_SMAPS_SHMEM] = "[shared memory]",
		[VM_SMAPS_FILE] = "[mapped files]",
		[VM_SMAPS_OTHER] = "[other mappings]",
	};
	return (unsigned)k < VM_SMAPS_KINDS ? frames[k] : "[other mappings]";
}

enum vm_smaps_kind vm_smaps_line_kind(const char *line, size_t len)
{
	const char *p = line, *end = line + len;
	int fields = 0;

	/* Past the five fields before the path. */
	while (p < end && fields < 5) {
		while (p < end && *p != ' ')
			p++;
		while (p < end && *p == ' ')
			p++;
		fields++;
	}
	size_t n = (size_t)(end - p);

#define IS(s) (n >= sizeof(s) - 1 && !memcmp(p, s, sizeof(s) - 1))
	if (!n || IS("[anon:"))
		return VM_SMAPS_ANON;
	if (IS("[heap]"))
		return VM_SMAPS_HEAP;
	if (IS("[stack"))
		return VM_SMAPS_STACK;
	if (IS("/SYSV") || IS("/dev/shm/") || IS("/memfd:") || IS("/dev/zero"))
		return VM_SMAPS_SHMEM;
	if (*p == '/')
		return VM_SMAPS_FILE;
#undef IS
	return VM_SMAPS_OTHER;
}

/* A mapping's header: "start-end perms ...", lowercase hex then '-'. */
static bool header(const char *l, size_t len)
{
	size_t i = 0;

	while (i < len &&
	       ((l[i] >= '0' && l[i] <= '9') || (l[i] >= 'a' && l[i] <= 'f')))
		i++;
	return i > 0 && i < len && l[i] == '-';
}

void vm_smaps_parse(const char *text, size_t len, struct vm_smaps_kinds *out)
{
	enum vm_smaps_kind kind = VM_SMAPS_OTHER;
	const char *p = text, *end = text + len;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char line[64];
		uint64_t v;

		if (header(p, n)) {
			kind = vm_smaps_line_kind(p, n);
			out->mappings++;
		} else if (n >= 4 && !memcmp(p, "Pss:", 4)) {
			if (n >= sizeof(line))
				n = sizeof(line) - 1;
			memcpy(line, p, n);
			line[n] = '\0';
			if (field(line, "Pss", &v))
				out->pss[kind] =
					vm_sat_add_u64(out->pss[kind], v);
		}
		p = nl ? nl + 1 : end;
	}
}
