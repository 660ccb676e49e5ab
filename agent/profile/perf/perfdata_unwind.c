// SPDX-License-Identifier: Apache-2.0
/*
 * perfdata_unwind.c - the user stacks of `perf record --call-graph dwarf`
 * walked in user space (perfdata_int.h): each sample carries the user
 * registers and a copy of the stack from sp up; the unwind tables of the
 * files the process maps (agent/unwind/unwind_table.c, one per file
 * for the whole profile, asked for the first time a pc falls in it) give each
 * caller (agent/unwind/unwind.c); the tables come from the agent's
 * home of binaries (agent/unwind/unwind_cache.c), built once per binary
 * and held for the profile.  Files are opened through the
 * process's root while it lives and through the I/O pool
 * (agent/iopool/iopool.h): a file on a frozen mount costs its frames, not
 * the profile.  The vDSO, which no file holds, has the table of the
 * agent's own (agent/unwind/vdso.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/profile/perf/perfdata_int.h"
#include "agent/iopool/iopool.h"
#include "agent/unwind/unwind.h"
#include "agent/unwind/unwind_cache.h"
#include "agent/unwind/vdso.h"
#include "common/array.h"

struct pd_unwind_file {
	char *path;
	const struct vm_unwind_table *table; /* NULL: it has none */
	struct vm_binary *held; /* its binary's entry, while table is used */
};

/* What one walk reads and finds with. */
struct walk {
	struct pd_unwinder *u;
	uint32_t pid;
	const struct vm_mapping *maps;
	size_t n_maps;
	const struct pd_sample *s;
};

/* The table of the file at path as pid sees it, built on first use. */
static const struct vm_unwind_table *table_of(struct pd_unwinder *u,
					      uint32_t pid, const char *path)
{
	struct pd_unwind_file *f;
	struct vm_error skip = { 0 };
	char open_path[4200];
	int fd;

	for (size_t i = 0; i < u->n; i++)
		if (!strcmp(u->files[i].path, path))
			return u->files[i].table;
	if (vm_grow(u->files, &u->cap, u->n + 1))
		return NULL;
	f = &u->files[u->n];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	u->n++;
	snprintf(open_path, sizeof(open_path), "/proc/%" PRIu32 "/root%s", pid,
		 path);
	fd = vm_iopool_open_regular(u->iopool, open_path, 0, VM_IOPOOL_OPEN_MS);
	if (fd < 0)
		fd = vm_iopool_open_regular(u->iopool, path, 0,
					    VM_IOPOOL_OPEN_MS);
	if (fd < 0)
		return NULL;
	f->table = vm_unwind_cache_get(u->iopool, u->home, fd, path, &f->held,
				       &skip);
	close(fd);
	u->tables_built++;
	if (skip.code || (f->table && f->table->truncated))
		u->tables_skipped++;
	return f->table;
}

static const struct vm_unwind_table *find(void *arg, uint64_t pc,
					  uint64_t *link, bool *outside)
{
	struct walk *w = arg;

	*outside = true;
	for (size_t i = 0; i < w->n_maps; i++) {
		const struct vm_mapping *m = &w->maps[i];
		const struct vm_unwind_table *t;

		if (pc < m->start || pc >= m->end)
			continue;
		*outside = false;
		if (!m->path)
			continue;
		if (m->path[0] == '/')
			t = table_of(w->u, w->pid, m->path);
		else if (vm_vdso_path(m->path))
			t = vm_vdso_unwind_table(m->start, m->end);
		else
			continue;
		if (!t ||
		    !vm_unwind_link_addr(t, pc - m->start + m->pgoff, link))
			return NULL;
		return t;
	}
	return NULL;
}

/* The copied stack: [sp, sp + stack_size). */
static bool read_copy(void *arg, uint64_t addr, uint64_t *value)
{
	const struct pd_sample *s = ((struct walk *)arg)->s;

	if (addr < s->user_sp || addr - s->user_sp > s->stack_size ||
	    s->stack_size - (addr - s->user_sp) < 8)
		return false;
	memcpy(value, s->stack + (addr - s->user_sp), 8);
	return true;
}

size_t pd_unwind_user(struct pd_unwinder *u, uint32_t pid,
		      const struct vm_mapping *maps, size_t n_maps,
		      const struct pd_sample *s, uint64_t *ips, size_t max)
{
	struct walk w = { u, pid, maps, n_maps, s };
	struct vm_unwind_regs r = { s->user_ip, s->user_sp, s->user_bp,
				    s->user_lr };

	if (!s->has_regs || !s->stack)
		return 0;
	return vm_unwind_stack(&r, find, read_copy, &w, ips, NULL, max,
			       &u->counts);
}

void pd_unwinder_free(struct pd_unwinder *u)
{
	struct vm_binaries *home = u->home;
	struct vm_iopool *iopool = u->iopool;

	for (size_t i = 0; i < u->n; i++) {
		free(u->files[i].path);
		vm_binaries_put(u->home, u->files[i].held);
	}
	free(u->files);
	memset(u, 0, sizeof(*u));
	u->home = home;
	u->iopool = iopool;
}
