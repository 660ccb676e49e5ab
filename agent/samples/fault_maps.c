// SPDX-License-Identifier: Apache-2.0
/*
 * fault_maps.c - the kind of mapping a faulting address was in, from
 * /proc/PID/maps (fault_maps.h).  A line's kind: shared when its
 * permissions say 's' or its path is shared memory (smaps.c's rule for
 * paths), a file's when its path is a file, anonymous otherwise ([heap],
 * [stack], no path, [anon:NAME], [vdso]).
 */
#include "agent/samples/fault_maps.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/samples/proc.h"
#include "agent/samples/smaps.h"
#include "common/array.h"

/* How long a process's mappings are trusted to miss an address (ns). */
#define REREAD_NS 1000000

struct vm_fault_proc {
	uint32_t pid;
	bool gone; /* its maps could not be read: the process ended */
	uint64_t read_ns; /* when its mappings were read */
	struct vm_fault_range *ranges;
	size_t n_ranges;
};

const char *vm_fault_mapping_name(enum vm_fault_mapping m)
{
	switch (m) {
	case VM_FAULT_ANONYMOUS:
		return "anonymous";
	case VM_FAULT_SHARED:
		return "shared";
	case VM_FAULT_FILE:
		return "file";
	case VM_FAULT_UNMAPPED:
		return "unmapped";
	default:
		return NULL;
	}
}

/* One line (len bytes, no '\n') into *r: true, or false when malformed. */
static bool parse_line(const char *line, size_t len, struct vm_fault_range *r)
{
	unsigned long long start, end;
	char perms[8], head[128];
	size_t n = len < sizeof(head) - 1 ? len : sizeof(head) - 1;

	memcpy(head, line, n);
	head[n] = '\0';
	if (sscanf(head, "%llx-%llx %7s", &start, &end, perms) != 3 ||
	    start >= end || strlen(perms) < 4)
		return false;
	r->start = start;
	r->end = end;
	switch (vm_smaps_line_kind(line, len)) {
	case VM_SMAPS_SHMEM:
		r->kind = VM_FAULT_SHARED;
		break;
	case VM_SMAPS_FILE:
		r->kind = VM_FAULT_FILE;
		break;
	default:
		r->kind = VM_FAULT_ANONYMOUS;
	}
	if (perms[3] == 's')
		r->kind = VM_FAULT_SHARED;
	return true;
}

int vm_fault_ranges_parse(const char *text, size_t len,
			  struct vm_fault_range **out, size_t *n)
{
	struct vm_fault_range *v = NULL, r;
	size_t cap = 0, count = 0;

	for (size_t at = 0; at < len;) {
		const char *nl = memchr(text + at, '\n', len - at);
		size_t l = nl ? (size_t)(nl - (text + at)) : len - at;

		if (parse_line(text + at, l, &r)) {
			if (vm_grow(v, &cap, count + 1) < 0) {
				free(v);
				return -ENOMEM;
			}
			v[count++] = r;
		}
		at += l + 1;
	}
	*out = v;
	*n = count;
	return 0;
}

enum vm_fault_mapping vm_fault_ranges_find(const struct vm_fault_range *r,
					   size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < r[mid].start)
			hi = mid;
		else if (addr >= r[mid].end)
			lo = mid + 1;
		else
			return (enum vm_fault_mapping)r[mid].kind;
	}
	return VM_FAULT_UNMAPPED;
}

static struct vm_fault_proc *proc_of(struct vm_fault_maps *m, uint32_t pid)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].pid == pid)
			return &m->v[i];
	if (vm_grow(m->v, &m->cap, m->n + 1) < 0)
		return NULL;
	m->v[m->n] = (struct vm_fault_proc){ .pid = pid };
	return &m->v[m->n++];
}

/* p's mappings read again; a process gone keeps those it had. */
static void reread(struct vm_fault_maps *m, struct vm_fault_proc *p,
		   uint64_t now_ns)
{
	struct vm_fault_range *ranges;
	char path[48];
	size_t len = 0, n;
	int r;

	p->read_ns = now_ns;
	if (!m->buf && !(m->buf = malloc(VM_FAULT_MAPS_MAX_BYTES)))
		return;
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", p->pid);
	m->reads++;
	r = m->iopool ? vm_iopool_read_small(m->iopool, path, 0, m->buf,
					     VM_FAULT_MAPS_MAX_BYTES, &len,
					     VM_IOPOOL_READ_MS) :
			vm_proc_read_small(path, m->buf,
					   VM_FAULT_MAPS_MAX_BYTES, &len);
	if (r == -ESRCH || r == -ENOENT)
		p->gone = true;
	if (r < 0 || vm_fault_ranges_parse(m->buf, len, &ranges, &n) < 0)
		return;
	free(p->ranges);
	p->ranges = ranges;
	p->n_ranges = n;
}

enum vm_fault_mapping vm_fault_maps_classify(struct vm_fault_maps *m,
					     uint32_t pid, uint64_t addr,
					     uint64_t now_ns)
{
	struct vm_fault_proc *p = proc_of(m, pid);
	enum vm_fault_mapping k;

	if (!p)
		return VM_FAULT_UNMAPPED;
	k = vm_fault_ranges_find(p->ranges, p->n_ranges, addr);
	if (k != VM_FAULT_UNMAPPED || p->gone ||
	    (p->read_ns && now_ns - p->read_ns < REREAD_NS))
		return k;
	reread(m, p, now_ns);
	return vm_fault_ranges_find(p->ranges, p->n_ranges, addr);
}

void vm_fault_maps_free(struct vm_fault_maps *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].ranges);
	free(m->v);
	free(m->buf);
	memset(m, 0, sizeof(*m));
}
