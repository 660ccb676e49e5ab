// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_map_pool.c - preallocated maps kept between profiles
 * (bpf_map_pool.h).  A kept map is known by its kernel id: the object it
 * is lent to holds a duplicate of its descriptor, so the id is what
 * tells, when the session ends, which map came from the pool.
 */
#include "agent/profile/bpf/bpf_map_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/array.h"

/*
 * The programs' preallocated hash maps (bpf/targets.bpf.h,
 * bpf/pglabels.bpf.h, bpf/offcpu.bpf.c): their entries are made when the
 * map is.  Ring buffers and arrays are cheap to make, and a ring buffer
 * is read from where its last reader left it.
 */
static const char *const pooled[] = {
	"target_comms", "target_pids", "children", "seen",
	"pg_procs",	"pg_children", "blocked",
};

void vm_bpf_map_pool_init(struct vm_bpf_map_pool *p)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
}

void vm_bpf_map_pool_destroy(struct vm_bpf_map_pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		close(p->v[i].fd);
	free(p->v);
	pthread_mutex_destroy(&p->lock);
}

void vm_bpf_map_pool_let_go(struct vm_bpf_map_pool *p)
{
	size_t kept = 0;

	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n; i++) {
		if (p->v[i].lent)
			p->v[kept++] = p->v[i];
		else
			close(p->v[i].fd);
	}
	p->n = kept;
	pthread_mutex_unlock(&p->lock);
}

static void shape_of(const struct bpf_map *m, struct vm_bpf_pooled *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", bpf_map__name(m));
	s->type = bpf_map__type(m);
	s->key = bpf_map__key_size(m);
	s->value = bpf_map__value_size(m);
	s->entries = bpf_map__max_entries(m);
	s->flags = bpf_map__map_flags(m);
	s->fd = -1;
}

static bool same_shape(const struct vm_bpf_pooled *a,
		       const struct vm_bpf_pooled *b)
{
	return !strcmp(a->name, b->name) && a->type == b->type &&
	       a->key == b->key && a->value == b->value &&
	       a->entries == b->entries && a->flags == b->flags;
}

static uint32_t map_id(int fd)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* Every entry of the map on fd deleted: 0, or -errno. */
static int empty(int fd, uint32_t key_size)
{
	char key[64];

	if (key_size > sizeof(key))
		return -E2BIG;
	while (bpf_map_get_next_key(fd, NULL, key) == 0)
		if (bpf_map_delete_elem(fd, key) && errno != ENOENT)
			return -errno;
	return errno == ENOENT ? 0 : -errno;
}

void vm_bpf_map_pool_lend(struct vm_bpf_map_pool *p, struct bpf_object *obj)
{
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < sizeof(pooled) / sizeof(*pooled); i++) {
		struct bpf_map *m =
			bpf_object__find_map_by_name(obj, pooled[i]);
		struct vm_bpf_pooled want;

		if (!m)
			continue;
		shape_of(m, &want);
		for (size_t j = 0; j < p->n; j++) {
			if (p->v[j].lent || !same_shape(&p->v[j], &want))
				continue;
			/*
			 * Emptied again: a program of the session that
			 * had it may have run once more as it ended.
			 * Refused: the load makes one, as without a pool.
			 */
			if (empty(p->v[j].fd, want.key) == 0 &&
			    bpf_map__reuse_fd(m, p->v[j].fd) == 0) {
				p->v[j].lent = true;
				p->reused++;
			}
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
}

/* The kept map of the shape s and the kernel id id, or NULL. */
static struct vm_bpf_pooled *
lent_one(struct vm_bpf_map_pool *p, const struct vm_bpf_pooled *s, uint32_t id)
{
	for (size_t j = 0; j < p->n; j++)
		if (p->v[j].lent && same_shape(&p->v[j], s) &&
		    map_id(p->v[j].fd) == id)
			return &p->v[j];
	return NULL;
}

static size_t kept_of_shape(struct vm_bpf_map_pool *p,
			    const struct vm_bpf_pooled *s)
{
	size_t n = 0;

	for (size_t j = 0; j < p->n; j++)
		n += same_shape(&p->v[j], s);
	return n;
}

/* The kept map lent least recently, closed: whether there was one. */
static bool let_go_oldest(struct vm_bpf_map_pool *p)
{
	for (size_t j = 0; j < p->n; j++) {
		if (p->v[j].lent)
			continue;
		close(p->v[j].fd);
		memmove(&p->v[j], &p->v[j + 1], (p->n - j - 1) * sizeof(*p->v));
		p->n--;
		return true;
	}
	return false;
}

/* Map m, emptied, back in the pool (or kept anew, or let go). */
static void take_back_one(struct vm_bpf_map_pool *p, struct bpf_map *m)
{
	struct vm_bpf_pooled s, *k;
	int fd = bpf_map__fd(m), own;
	uint32_t id;

	if (fd < 0)
		return; /* never loaded */
	shape_of(m, &s);
	id = map_id(fd);
	k = id ? lent_one(p, &s, id) : NULL;
	if (empty(fd, s.key) < 0) {
		/* What cannot be emptied is not lent again. */
		if (k) {
			close(k->fd);
			*k = p->v[--p->n];
		}
		return;
	}
	if (k) {
		/* Last in the list: the most recently used. */
		s = *k;
		s.lent = false;
		memmove(k, k + 1, (size_t)(&p->v[p->n] - (k + 1)) * sizeof(*k));
		p->v[p->n - 1] = s;
		return;
	}
	if (kept_of_shape(p, &s) >= VM_BPF_POOL_PER_SHAPE)
		return;
	if (p->n == VM_BPF_POOL_MAX && !let_go_oldest(p))
		return;
	if (vm_grow(p->v, &p->cap, p->n + 1) < 0)
		return;
	own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return;
	s.fd = own;
	p->v[p->n++] = s;
}

void vm_bpf_map_pool_take_back(struct vm_bpf_map_pool *p,
			       struct bpf_object *obj)
{
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < sizeof(pooled) / sizeof(*pooled); i++) {
		struct bpf_map *m =
			bpf_object__find_map_by_name(obj, pooled[i]);

		if (m)
			take_back_one(p, m);
	}
	pthread_mutex_unlock(&p->lock);
}

void vm_bpf_map_pool_stats(struct vm_bpf_map_pool *p, uint64_t *kept,
			   uint64_t *reused)
{
	pthread_mutex_lock(&p->lock);
	*kept = p->n;
	*reused = p->reused;
	pthread_mutex_unlock(&p->lock);
}
