// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_preblocked.c - the threads already blocked when an off-CPU or
 * wall-clock profile starts, read from /proc with the best stack it gives
 * (bpf_preblocked.h).
 */
#include "agent/profile/bpf/bpf_preblocked.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/profile/bpf/bpf_pg.h"
#include "agent/samples/proc.h"
#include "common/array.h"
#include "common/cleanup.h"

int vm_parse_task_stack(const char *text, struct vm_pre_blocked *p)
{
	const char *line = text;

	while (line && *line && p->n_kernel < VM_PRE_KERNEL_MAX) {
		const char *nl = strchr(line, '\n'), *f = strstr(line, "] ");
		size_t len;

		if (!nl)
			nl = line + strlen(line);
		if (f && f < nl) {
			f += 2;
			len = (size_t)(nl - f);
			if (len > 0 && len < 256) {
				p->kernel[p->n_kernel] = strndup(f, len);
				if (!p->kernel[p->n_kernel])
					return -ENOMEM;
				p->n_kernel++;
			}
		}
		line = *nl ? nl + 1 : NULL;
	}
	return 0;
}

static void pre_clear(struct vm_pre_blocked *p)
{
	for (uint32_t i = 0; i < p->n_kernel; i++)
		free(p->kernel[i]);
	p->n_kernel = 0;
}

int vm_pre_blocked_scan(struct vm_pre_blocked_set *set, const char *proc_root,
			uint32_t pid, const struct pg_proc *pg)
{
	char path[64], buf[4096];
	struct dirent *de;
	DIR *d;
	int r = 0;

	snprintf(path, sizeof(path), "%s/%u/task", proc_root, pid);
	d = opendir(path);
	if (!d)
		return 0; /* gone */
	while (!r && (de = readdir(d))) {
		uint32_t tid = (uint32_t)strtoul(de->d_name, NULL, 10);
		struct vm_pre_blocked *p;
		char state;

		if (!tid || vm_proc_read_task_file(proc_root, pid, tid, "stat",
						   buf, sizeof(buf)) < 0)
			continue;
		state = vm_parse_task_stat_state(buf);
		if (state != 'S' && state != 'D')
			continue;
		if (vm_grow(set->v, &set->cap, set->n + 1)) {
			r = -ENOMEM;
			break;
		}
		p = &set->v[set->n];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->tid = tid;
		p->state = state;
		if (vm_proc_read_task_file(proc_root, pid, tid, "syscall", buf,
					   sizeof(buf)) > 0)
			p->user_pc = vm_parse_task_syscall_pc(buf);
		/* Root only; without it, the user pc alone. */
		if (vm_proc_read_task_file(proc_root, pid, tid, "stack", buf,
					   sizeof(buf)) > 0 &&
		    vm_parse_task_stack(buf, p)) {
			pre_clear(p);
			r = -ENOMEM;
			break;
		}
		vm_bpf_pg_read_labels(pid, pg, &p->wait_event, &p->query_id);
		set->n++;
	}
	closedir(d);
	return r;
}

/* A kernel frame's function name: "function+0xoff/0xsize". */
struct kname {
	char name[128];
};

static int kname_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kname *)a)->name,
		      ((const struct kname *)b)->name);
}

/* frame's function name into k->name, its offset into *off. */
static void frame_name(const char *frame, struct kname *k, uint64_t *off)
{
	size_t len = strcspn(frame, "+ ");

	if (len >= sizeof(k->name))
		len = sizeof(k->name) - 1;
	memcpy(k->name, frame, len);
	k->name[len] = '\0';
	*off = frame[len] == '+' ? strtoull(frame + len + 1, NULL, 16) : 0;
}

/* set's frames from names[n] (sorted) and their addrs[n]. */
static void set_kernel_ips(struct vm_pre_blocked_set *set,
			   const struct kname *names, const uint64_t *addrs,
			   size_t n)
{
	uint64_t off;

	for (size_t i = 0; i < set->n; i++) {
		struct vm_pre_blocked *p = &set->v[i];
		uint32_t kept = 0;

		/* A frame not found ends the stack: what follows is a gap. */
		for (uint32_t j = 0; j < p->n_kernel; j++) {
			const struct kname *k;
			struct kname key;

			frame_name(p->kernel[j], &key, &off);
			k = n ? bsearch(&key, names, n, sizeof(*names),
					kname_cmp) :
				NULL;
			if (kept == j && k && addrs[k - names])
				p->kernel_ips[kept++] = addrs[k - names] + off;
			free(p->kernel[j]);
			p->kernel[j] = NULL;
		}
		p->n_kernel = kept;
	}
}

void vm_pre_blocked_resolve(struct vm_pre_blocked_set *set,
			    vm_kernel_addrs_fn addrs_of, void *arg)
{
	_cleanup_free_ struct kname *names = NULL;
	_cleanup_free_ const char **ptrs = NULL;
	_cleanup_free_ uint64_t *addrs = NULL;
	size_t n = 0, cap = 0, kept = 0;
	uint64_t off;

	for (size_t i = 0; i < set->n; i++)
		for (uint32_t j = 0; j < set->v[i].n_kernel; j++) {
			if (vm_grow(names, &cap, n + 1))
				goto none;
			frame_name(set->v[i].kernel[j], &names[n++], &off);
		}
	if (!n)
		return;
	qsort(names, n, sizeof(*names), kname_cmp);
	/* One of each name. */
	for (size_t i = 0; i < n; i++)
		if (!kept || strcmp(names[kept - 1].name, names[i].name))
			names[kept++] = names[i];
	ptrs = calloc(kept, sizeof(*ptrs));
	addrs = calloc(kept, sizeof(*addrs));
	if (!ptrs || !addrs)
		goto none;
	for (size_t i = 0; i < kept; i++)
		ptrs[i] = names[i].name;
	if (addrs_of(arg, ptrs, kept, addrs) < 0)
		memset(addrs, 0, kept * sizeof(*addrs));
	set_kernel_ips(set, names, addrs, kept);
	return;
none:
	/* Out of memory: no kernel stacks rather than unresolved ones. */
	set_kernel_ips(set, NULL, NULL, 0);
}

static int cmp_tid(const void *a, const void *b)
{
	const struct vm_pre_blocked *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void vm_pre_blocked_sort(struct vm_pre_blocked_set *set)
{
	if (set->n)
		qsort(set->v, set->n, sizeof(*set->v), cmp_tid);
}

const struct vm_pre_blocked *
vm_pre_blocked_find(const struct vm_pre_blocked_set *set, uint32_t tid)
{
	const struct vm_pre_blocked key = { .tid = tid };

	if (!set->n)
		return NULL;
	return bsearch(&key, set->v, set->n, sizeof(*set->v), cmp_tid);
}

void vm_pre_blocked_free(struct vm_pre_blocked_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		pre_clear(&set->v[i]);
	free(set->v);
	memset(set, 0, sizeof(*set));
}
