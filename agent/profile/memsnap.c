// SPDX-License-Identifier: Apache-2.0
/*
 * memsnap.c - one process's memory snapshot made small, and the last one
 * of each target kept (memsnap.h).
 */
#include "agent/profile/memsnap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fdio.h"

/* Bytes of /proc/PID/cgroup kept. */
#define CGROUP_MAX 4096

/* The path of sample x, root first, cut at VM_MEMSNAP_PATH_MAX. */
static char *path_of(const struct vm_samples *s, const struct vm_sample *x)
{
	char *p = malloc(VM_MEMSNAP_PATH_MAX);
	size_t len = 0;

	if (!p)
		return NULL;
	p[0] = '\0';
	for (uint32_t i = x->n_user; i-- > 0;) {
		uint64_t idx = x->user_ips[i];
		const char *name = idx < s->n_names ? s->names[idx] : "?";
		size_t n = strlen(name);

		if (len + n + 2 > VM_MEMSNAP_PATH_MAX)
			break;
		if (len)
			p[len++] = ';';
		memcpy(p + len, name, n);
		len += n;
		p[len] = '\0';
	}
	return p;
}

static int heavier_first(const void *a, const void *b)
{
	const struct vm_sample *x = *(const struct vm_sample *const *)a;
	const struct vm_sample *y = *(const struct vm_sample *const *)b;

	return (x->value < y->value) - (x->value > y->value);
}

/* The one name of a one-frame sample, or NULL. */
static const char *pseudo(const struct vm_samples *s, const struct vm_sample *x)
{
	if (x->memctx_type || x->n_user != 1 || x->user_ips[0] >= s->n_names)
		return NULL;
	return s->names[x->user_ips[0]];
}

int vm_memsnap_from_samples(const struct vm_samples *s, uint32_t pid,
			    size_t max, struct vm_memsnap *out)
{
	const struct vm_process *p = vm_samples_find_process(s, pid);
	const struct vm_sample **ctx;
	size_t n = 0;

	memset(out, 0, sizeof(*out));
	ctx = calloc(s->n ? s->n : 1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		const struct vm_sample *x = &s->v[i];
		const char *name;

		if (x->pid != pid)
			continue;
		out->query_id = x->query_id ? x->query_id : out->query_id;
		out->wait_event = x->wait_event ? x->wait_event :
						  out->wait_event;
		if (x->memctx_type) {
			ctx[n++] = x;
			out->contexts_bytes += x->value;
		} else if ((name = pseudo(s, x))) {
			if (!strcmp(name, VM_MEM_FRAME_OUTSIDE))
				out->outside = x->value;
			else if (!strcmp(name, VM_MEM_FRAME_SHARED))
				out->shared = x->value;
			else if (!strcmp(name, VM_MEM_FRAME_FILES))
				out->files = x->value;
		}
	}
	if (!n || !p) {
		free(ctx);
		return -ENOENT;
	}
	qsort(ctx, n, sizeof(*ctx), heavier_first);
	out->pid = pid;
	out->unix_ms =
		(s->time_nanos ? s->time_nanos : vm_clock_ns(CLOCK_REALTIME)) /
		1000000;
	memcpy(out->comm, p->comm, sizeof(out->comm));
	out->pg_major = p->pg_major;
	out->pg_minor = p->pg_minor;
	out->n_contexts = n;
	out->v = calloc(n < max ? n : max, sizeof(*out->v));
	out->title = p->title ? strdup(p->title) : NULL;
	if (!out->v || (p->title && !out->title)) {
		free(ctx);
		vm_memsnap_free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n && i < max; i++) {
		out->v[i].bytes = ctx[i]->value;
		out->v[i].path = path_of(s, ctx[i]);
		if (!out->v[i].path) {
			free(ctx);
			vm_memsnap_free(out);
			return -ENOMEM;
		}
		out->n++;
	}
	free(ctx);
	return 0;
}

void vm_memsnap_free(struct vm_memsnap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	free(m->title);
	free(m->cgroup);
	memset(m, 0, sizeof(*m));
}

int vm_memsnap_copy(const struct vm_memsnap *from, struct vm_memsnap *to)
{
	*to = *from;
	to->v = NULL;
	to->n = 0;
	to->title = from->title ? strdup(from->title) : NULL;
	to->cgroup = from->cgroup ? strdup(from->cgroup) : NULL;
	if (from->n)
		to->v = calloc(from->n, sizeof(*to->v));
	if ((from->title && !to->title) || (from->cgroup && !to->cgroup) ||
	    (from->n && !to->v)) {
		vm_memsnap_free(to);
		return -ENOMEM;
	}
	for (size_t i = 0; i < from->n; i++) {
		to->v[i].bytes = from->v[i].bytes;
		to->v[i].path = strdup(from->v[i].path);
		if (!to->v[i].path) {
			vm_memsnap_free(to);
			return -ENOMEM;
		}
		to->n++;
	}
	return 0;
}

struct vm_memkept *vm_memkept_new(void)
{
	struct vm_memkept *k = calloc(1, sizeof(*k));

	if (k)
		pthread_mutex_init(&k->lock, NULL);
	return k;
}

void vm_memkept_free(struct vm_memkept *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < VM_MEMSNAP_KEPT_PIDS; i++)
		vm_memsnap_free(&k->v[i]);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

/* pid's slot, else a free one, else the oldest; under the lock. */
static struct vm_memsnap *slot_for(struct vm_memkept *k, uint32_t pid)
{
	struct vm_memsnap *free_slot = NULL, *oldest = &k->v[0];

	for (size_t i = 0; i < VM_MEMSNAP_KEPT_PIDS; i++) {
		struct vm_memsnap *m = &k->v[i];

		if (m->pid == pid)
			return m;
		if (!m->pid && !free_slot)
			free_slot = m;
		if (m->unix_ms < oldest->unix_ms)
			oldest = m;
	}
	return free_slot ? free_slot : oldest;
}

/* /proc/PID/cgroup's text, or NULL. */
static char *read_cgroup(uint32_t pid)
{
	char path[64], *buf = malloc(CGROUP_MAX);
	long long n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	fd = buf ? vm_open_regular(path) : -1;
	if (fd >= 0) {
		n = vm_read_all(fd, buf, CGROUP_MAX - 1);
		close(fd);
	}
	if (n <= 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	return buf;
}

int vm_oom_keep_snapshot(struct vm_memkept *k, const struct vm_samples *s)
{
	if (!k)
		return 0;
	for (size_t i = 0; i < s->n_procs; i++) {
		struct vm_memsnap m, *to;
		int r = vm_memsnap_from_samples(s, s->procs[i].pid,
						VM_MEMSNAP_KEPT_CONTEXTS, &m);

		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		m.cgroup = read_cgroup(m.pid);
		pthread_mutex_lock(&k->lock);
		to = slot_for(k, m.pid);
		vm_memsnap_free(to);
		*to = m;
		k->kept++;
		pthread_mutex_unlock(&k->lock);
	}
	return 0;
}

int vm_memkept_get(struct vm_memkept *k, uint32_t pid, struct vm_memsnap *out)
{
	int r = -ENOENT;

	memset(out, 0, sizeof(*out));
	if (!k || !pid)
		return -ENOENT;
	pthread_mutex_lock(&k->lock);
	for (size_t i = 0; i < VM_MEMSNAP_KEPT_PIDS; i++)
		if (k->v[i].pid == pid) {
			r = vm_memsnap_copy(&k->v[i], out);
			break;
		}
	pthread_mutex_unlock(&k->lock);
	return r;
}

size_t vm_memkept_count(struct vm_memkept *k)
{
	size_t n = 0;

	if (!k)
		return 0;
	pthread_mutex_lock(&k->lock);
	for (size_t i = 0; i < VM_MEMSNAP_KEPT_PIDS; i++)
		n += k->v[i].pid != 0;
	pthread_mutex_unlock(&k->lock);
	return n;
}
