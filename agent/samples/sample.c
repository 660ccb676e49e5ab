// SPDX-License-Identifier: Apache-2.0
/*
 * sample.c - filling and freeing the sample model of sample.h, shared by
 * both backends (growing arrays, process lookup, held files).
 */
#include "agent/samples/sample.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"

int vm_samples_add(struct vm_samples *s, uint32_t pid, uint32_t tid,
		   const char *comm, uint64_t count, const uint64_t *user_ips,
		   uint32_t n_user, const uint64_t *kernel_ips,
		   uint32_t n_kernel)
{
	struct vm_sample *x;

	if (vm_grow(s->v, &s->cap, s->n + 1))
		return -ENOMEM;
	x = &s->v[s->n];
	memset(x, 0, sizeof(*x));
	x->pid = pid;
	x->tid = tid;
	x->count = count;
	if (comm)
		strncpy(x->comm, comm, sizeof(x->comm) - 1);
	if (n_user) {
		x->user_ips = malloc(n_user * sizeof(uint64_t));
		if (!x->user_ips)
			return -ENOMEM;
		memcpy(x->user_ips, user_ips, n_user * sizeof(uint64_t));
		x->n_user = n_user;
	}
	if (n_kernel) {
		x->kernel_ips = malloc(n_kernel * sizeof(uint64_t));
		if (!x->kernel_ips) {
			free(x->user_ips);
			return -ENOMEM;
		}
		memcpy(x->kernel_ips, kernel_ips, n_kernel * sizeof(uint64_t));
		x->n_kernel = n_kernel;
	}
	s->n++;
	return 0;
}

struct vm_process *vm_samples_find_process(const struct vm_samples *s,
					   uint32_t pid)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

struct vm_process *vm_samples_get_process(struct vm_samples *s, uint32_t pid)
{
	struct vm_process *p = vm_samples_find_process(s, pid);

	if (p)
		return p;
	if (vm_grow(s->procs, &s->cap_procs, s->n_procs + 1))
		return NULL;
	p = &s->procs[s->n_procs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

int vm_process_add_mapping(struct vm_process *p, const struct vm_mapping *m)
{
	struct vm_mapping *n;

	if (vm_grow(p->maps, &p->cap_maps, p->n_maps + 1))
		return -ENOMEM;
	n = &p->maps[p->n_maps];
	*n = *m;
	n->path = NULL;
	n->open_path = NULL;
	if (m->path && !(n->path = strdup(m->path)))
		return -ENOMEM;
	if (m->open_path && !(n->open_path = strdup(m->open_path))) {
		free(n->path);
		return -ENOMEM;
	}
	p->n_maps++;
	return 0;
}

void vm_process_clear(struct vm_process *p)
{
	for (size_t i = 0; i < p->n_maps; i++) {
		free(p->maps[i].path);
		free(p->maps[i].open_path);
	}
	free(p->maps);
	free(p->title);
	p->maps = NULL;
	p->n_maps = p->cap_maps = 0;
	p->title = NULL;
}

int vm_samples_hold_fd(struct vm_samples *s, int fd)
{
	if (vm_grow(s->held_fds, &s->cap_held_fds, s->n_held_fds + 1)) {
		close(fd);
		return -ENOMEM;
	}
	s->held_fds[s->n_held_fds++] = fd;
	return 0;
}

void vm_samples_release_fd(struct vm_samples *s, int fd)
{
	for (size_t i = 0; i < s->n_held_fds; i++)
		if (s->held_fds[i] == fd) {
			close(fd);
			s->held_fds[i] = s->held_fds[--s->n_held_fds];
			return;
		}
}

int vm_samples_add_name(struct vm_samples *s, const char *name, uint32_t *idx)
{
	char *copy;

	if (s->n_names >= UINT32_MAX ||
	    vm_grow(s->names, &s->cap_names, s->n_names + 1))
		return -ENOMEM;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	*idx = (uint32_t)s->n_names;
	s->names[s->n_names++] = copy;
	return 0;
}

int vm_samples_note(struct vm_samples *s, const char *fmt, ...)
{
	char line[512];
	char *grown;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = '\0';
	grown = realloc(s->notes, s->notes_len + (size_t)n + 1);
	if (!grown)
		return -ENOMEM;
	memcpy(grown + s->notes_len, line, (size_t)n + 1);
	s->notes = grown;
	s->notes_len += (size_t)n;
	return 0;
}

void vm_samples_free(struct vm_samples *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_names; i++)
		free(s->names[i]);
	free(s->names);
	free(s->notes);
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].user_ips);
		free(s->v[i].kernel_ips);
	}
	free(s->v);
	for (size_t i = 0; i < s->n_procs; i++)
		vm_process_clear(&s->procs[i]);
	free(s->procs);
	for (size_t i = 0; i < s->n_held_fds; i++)
		close(s->held_fds[i]);
	free(s->held_fds);
	memset(s, 0, sizeof(*s));
}
