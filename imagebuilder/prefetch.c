// SPDX-License-Identifier: Apache-2.0
/*
 * prefetch.c - a reader thread ahead of the writer.
 *
 * The writer is a single pass over the tree; per file it opens, reads and
 * hashes the source (user and kernel CPU) and writes the image.  Done by
 * one thread each, the two halves overlap.  The reader handles the files
 * up to VM_PREFETCH_MAX_FILE in the writer's order and queues them; the
 * writer takes them in the same order.  Each item carries its own error,
 * reported when the writer reaches it, so the messages are the same as
 * without the thread.
 */
#include "imagebuilder/prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

struct item {
	struct vm_node *node;
	char *data;
	char sha256[VM_SHA256_HEX_LEN];
	struct vm_error err;
	int r;
};

struct vm_prefetch {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct item *items;
	size_t n, done, taken;
	size_t ahead; /* bytes read and not yet taken */
	int stop;
};

int vm_prefetch_wanted(const struct vm_node *n)
{
	return n->type == VM_NODE_REG && !n->link_to && n->source && !n->segs &&
	       n->deferred == VM_NOW && n->size <= VM_PREFETCH_MAX_FILE;
}

int vm_read_whole(const struct vm_node *n, char **data,
		  char hex[VM_SHA256_HEX_LEN], struct vm_error *err)
{
	size_t alloc = (size_t)((n->size + 4095) & ~4095ull) + 4096;
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t got = 0;

	*data = NULL;
	fd = open(n->source, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0 && errno == ENOENT)
		return vm_error_set(
			err, ENOENT,
			"%s vanished while the image was being built; rebuild from a stable tree",
			n->source);
	if (fd < 0)
		return vm_error_errno(err, errno, "cannot open %s", n->source);
	if (fstat(fd, &st) < 0)
		return vm_error_errno(err, errno, "cannot stat %s", n->source);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != n->size)
		return vm_error_set(
			err, EAGAIN,
			"%s changed (size %llu, now %llu) while the image was being built; rebuild from a stable tree",
			n->source, (unsigned long long)n->size,
			(unsigned long long)st.st_size);
	buf = aligned_alloc(4096, alloc);
	if (!buf)
		return vm_error_set(err, ENOMEM, "out of memory reading %s",
				    n->source);
	/* One byte more than expected is asked for: it must not come. */
	while (got < n->size + 1) {
		ssize_t r = read(fd, buf + got, (size_t)n->size + 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return vm_error_errno(err, errno, "cannot read %s",
					      n->source);
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got != n->size)
		return vm_error_set(
			err, EAGAIN,
			"%s %s while the image was being built; rebuild from a stable tree",
			n->source, got > n->size ? "grew" : "shrank");
	memset(buf + got, 0, alloc - got);
	vm_sha256_hex(buf, got, hex);
	*data = TAKE_PTR(buf);
	return 0;
}

static void *reader(void *arg)
{
	struct vm_prefetch *p = arg;

	for (size_t i = 0; i < p->n; i++) {
		struct item *it = &p->items[i];

		pthread_mutex_lock(&p->lock);
		while (!p->stop && p->ahead >= VM_PREFETCH_MAX_AHEAD)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		pthread_mutex_unlock(&p->lock);
		it->r = vm_read_whole(it->node, &it->data, it->sha256,
				      &it->err);
		pthread_mutex_lock(&p->lock);
		p->ahead += (size_t)it->node->size;
		p->done = i + 1;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

int vm_prefetch_start(struct vm_node **nodes, size_t n,
		      struct vm_prefetch **out)
{
	struct vm_prefetch *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->items = calloc(n + 1, sizeof(*p->items));
	if (!p->items) {
		free(p);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		p->items[i].node = nodes[i];
	p->n = n;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	if (pthread_create(&p->thread, NULL, reader, p)) {
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->cond);
		free(p->items);
		free(p);
		return -EAGAIN;
	}
	*out = p;
	return 0;
}

int vm_prefetch_take(struct vm_prefetch *p, struct vm_node *n, char **data,
		     struct vm_error *err)
{
	struct item *it;

	*data = NULL;
	if (p->taken >= p->n || p->items[p->taken].node != n)
		return vm_error_set(err, EINVAL,
				    "internal: files read out of order");
	it = &p->items[p->taken];
	pthread_mutex_lock(&p->lock);
	while (p->done <= p->taken)
		pthread_cond_wait(&p->cond, &p->lock);
	p->ahead -= (size_t)n->size;
	p->taken++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (it->r < 0)
		return vm_error_set(err, it->r, "%s", it->err.msg);
	memcpy(n->sha256, it->sha256, VM_SHA256_HEX_LEN);
	*data = TAKE_PTR(it->data);
	return 0;
}

void vm_prefetch_stop(struct vm_prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	for (size_t i = 0; i < p->n; i++)
		free(p->items[i].data);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->items);
	free(p);
}
