// SPDX-License-Identifier: Apache-2.0
/*
 * prefetch.c - a reader thread ahead of the writer.
 *
 * The writer is a single pass over the tree; per file it opens, reads and
 * hashes the source (user and kernel CPU) and writes the image.  Done in
 * other threads, the two halves overlap; with one reader per CPU (up to
 * four) the hashing, the larger half, is spread.  The readers handle the
 * files up to VM_PREFETCH_MAX_FILE in the writer's order and queue them;
 * the writer takes them in the same order.  Each item carries its own error,
 * reported when the writer reaches it, so the messages are the same as
 * without the thread.
 *
 * Contents go into one ring buffer, faulted in once: the items are taken
 * in the order they are read, so the space of the oldest is the next to be
 * free.  (A buffer per file cost a page fault per 4 KiB read and an munmap
 * per large file.)  Files are opened relative to their directory, which is
 * opened once for all of its files, not by full path each.
 *
 * Waking a thread costs a futex call and a context switch, which in a VM
 * may be a trap to the hypervisor: the writer, when it has caught up with
 * the readers, is woken once a run of files is read (or a reader is about
 * to wait for room, or has read all of its files), not at every file; the
 * readers wait on a condition of their own, signalled only when room is
 * given back and one of them waits for it.  A file already read, and room
 * already given back, are seen without the lock (`ready`, `freed`, `taken`
 * and `stop` are read and written atomically), so that a thread takes it
 * once a file, not once for each question.
 */
#include "imagebuilder/prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/cleanup.h"

/*
 * With VM_PREFETCH_MAX_AHEAD >= VM_PREFETCH_MAX_FILE, a file always fits
 * once every file before it is released, even after a ring tail too short
 * for it was skipped (see vm_prefetch_fits).
 */
#define RING_SIZE ((size_t)VM_PREFETCH_MAX_AHEAD + VM_PREFETCH_MAX_FILE)
/* Files the writer lets the readers get ahead by before it is woken. */
#define WAKE_RUN 32

#define MAX_READERS 4

struct item {
	struct vm_node *node;
	size_t off; /* in the ring */
	uint64_t end; /* cumulative ring use up to and including this one */
	struct vm_error *err; /* only when reading failed: items are many */
	int r;
	int ready; /* atomic: set, with release, once r, err and the data are */
};

struct vm_prefetch {
	pthread_t threads[MAX_READERS];
	int n_threads, stride; /* started, and planned */
	pthread_mutex_t lock;
	pthread_cond_t ready; /* the writer waits on it */
	pthread_cond_t room; /* the readers wait on it */
	struct item *items;
	size_t n;
	size_t taken; /* atomic: written by the writer only */
	uint64_t freed; /* atomic: cumulative ring use of the items released */
	char *ring;
	size_t wake_at; /* the item whose reading wakes the waiting writer */
	int writer_waiting, room_waiters;
	int stop;
};

struct reader_arg {
	struct vm_prefetch *p;
	int index;
};

static size_t padded(uint64_t size)
{
	return (size_t)((size + 4095) & ~4095ull);
}

int vm_prefetch_wanted(const struct vm_node *n)
{
	return n->type == VM_NODE_REG && !n->link_to && n->source && !n->segs &&
	       n->deferred == VM_NOW && n->size <= VM_PREFETCH_MAX_FILE;
}

/* The directory of the files being read, opened once for all of them. */
struct dir_cache {
	int fd;
	char *path;
	size_t len;
};

/* The fd to open `source` relative to, and its last component. */
static int dir_for(struct dir_cache *d, const char *source, const char **name)
{
	const char *slash = strrchr(source, '/');
	size_t len;

	if (!slash || slash == source) {
		*name = source;
		return AT_FDCWD;
	}
	len = (size_t)(slash - source);
	*name = slash + 1;
	if (d->fd >= 0 && d->len == len && !memcmp(d->path, source, len))
		return d->fd;
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	d->path = strndup(source, len);
	d->len = len;
	d->fd = d->path ? open(d->path, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	if (d->fd < 0) {
		*name = source; /* the full path gives the error, if any */
		return AT_FDCWD;
	}
	return d->fd;
}

static void dir_cache_clear(struct dir_cache *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
}

int vm_source_open(const struct vm_node *n, int dfd, const char *name,
		   int check, struct vm_error *err)
{
	/* O_NONBLOCK: a fifo put in the file's place reads as empty. */
	_cleanup_close_ int fd = openat(dfd, name,
					O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
						O_NOCTTY | O_NONBLOCK);
	struct stat st;

	if (fd < 0 && errno == ENOENT)
		return vm_error_set(
			err, ENOENT,
			"%s vanished while the image was being built; rebuild from a stable tree",
			n->source);
	if (fd < 0)
		return vm_error_errno(err, errno, "cannot open %s", n->source);
	if (!check)
		return TAKE_FD(fd);
	if (fstat(fd, &st) < 0)
		return vm_error_errno(err, errno, "cannot stat %s", n->source);
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != n->size)
		return vm_error_set(
			err, EAGAIN,
			"%s changed (size %llu, now %llu) while the image was being built; rebuild from a stable tree",
			n->source, (unsigned long long)n->size,
			(unsigned long long)st.st_size);
	return TAKE_FD(fd);
}

/*
 * Read exactly n->size bytes of n->source into buf (with room for them
 * rounded up to 4 KiB, the rest zeroed) and hash them.
 */
static int read_into(struct dir_cache *d, struct vm_node *n, char *buf,
		     struct vm_error *err)
{
	const char *name;
	int dfd = dir_for(d, n->source, &name);
	/* The read below finds a change of size, or of type. */
	_cleanup_close_ int fd = vm_source_open(n, dfd, name, 0, err);
	size_t got = 0;
	char extra;

	if (fd < 0)
		return fd;
	/*
	 * One read asks for the content and a byte more, which must not
	 * come.  (A regular file gives less than asked only at its end.)
	 */
	for (;;) {
		struct iovec v[2] = { { buf + got, (size_t)n->size - got },
				      { &extra, 1 } };
		ssize_t r = readv(fd, v, 2);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return vm_error_errno(err, errno, "cannot read %s",
					      n->source);
		got += (size_t)r;
		if (r == 0 || got >= n->size)
			break;
	}
	if (got != n->size)
		return vm_error_set(
			err, EAGAIN,
			"%s changed (it %s) while the image was being built; rebuild from a stable tree",
			n->source, got > n->size ? "grew" : "shrank");
	memset(buf + got, 0, padded(got) - got);
	/* The writer reads it only once it sees the file ready (acquire). */
	vm_sha256_hex(buf, got, n->sha256);
	return 0;
}

static void read_item(struct vm_prefetch *p, struct dir_cache *d,
		      struct item *it)
{
	struct vm_error err = { 0 };

	it->r = read_into(d, it->node, p->ring + it->off, &err);
	if (it->r < 0) {
		it->err = malloc(sizeof(*it->err));
		if (it->err)
			*it->err = err;
	}
}

/* Whether the ring room of `it` is free: what it overwrites is released. */
static int has_room(struct vm_prefetch *p, const struct item *it)
{
	return it->end <=
	       __atomic_load_n(&p->freed, __ATOMIC_ACQUIRE) + RING_SIZE;
}

/*
 * Every reader takes every n_threads-th item.  An item's place in the ring
 * is fixed in advance; it is read once the items it overwrites are
 * released, which happens in order whatever order they were read in.
 */
static void *reader(void *arg)
{
	struct reader_arg *a = arg;
	struct vm_prefetch *p = a->p;
	struct dir_cache d = { .fd = -1 };

	for (size_t i = (size_t)a->index; i < p->n; i += (size_t)p->stride) {
		struct item *it = &p->items[i];

		if (!has_room(p, it)) {
			pthread_mutex_lock(&p->lock);
			while (!p->stop && !has_room(p, it)) {
				/* What the writer has not taken may be ready. */
				if (p->writer_waiting)
					pthread_cond_signal(&p->ready);
				p->room_waiters++;
				pthread_cond_wait(&p->room, &p->lock);
				p->room_waiters--;
			}
			pthread_mutex_unlock(&p->lock);
		}
		if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE))
			break;
		read_item(p, &d, it);
		pthread_mutex_lock(&p->lock);
		__atomic_store_n(&it->ready, 1, __ATOMIC_RELEASE);
		if (p->writer_waiting &&
		    (i >= p->wake_at || i + (size_t)p->stride >= p->n))
			pthread_cond_signal(&p->ready);
		pthread_mutex_unlock(&p->lock);
	}
	dir_cache_clear(&d);
	free(a);
	return NULL;
}

/* Each item's place: contiguous, skipping a ring tail too short for it. */
static void place(struct vm_prefetch *p)
{
	uint64_t end = 0;
	size_t head = 0;

	for (size_t i = 0; i < p->n; i++) {
		size_t need = padded(p->items[i].node->size);

		if (head + need > RING_SIZE) {
			end += RING_SIZE - head;
			head = 0;
		}
		p->items[i].off = head;
		head += need;
		end += need;
		p->items[i].end = end;
	}
}

static int readers(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	return cpus < 1 ? 1 : cpus > MAX_READERS ? MAX_READERS : (int)cpus;
}

/*
 * The ring: faulted in by the readers, once, as it is reused round and
 * round.  Not in huge pages: a VM's host backs a fresh 2 MiB page by
 * faulting in all of it, and a guest that gives free memory back to its
 * host takes its huge pages from what was given back, so that zeroing them
 * cost more than all the 4 KiB faults of the same ring.
 */
static char *map_ring(void)
{
	void *map = mmap(NULL, RING_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return map == MAP_FAILED ? NULL : map;
}

int vm_prefetch_start(struct vm_node **nodes, size_t n,
		      struct vm_prefetch **out)
{
	struct vm_prefetch *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->items = calloc(n + 1, sizeof(*p->items));
	p->ring = map_ring();
	if (!p->items || !p->ring) {
		if (p->ring)
			munmap(p->ring, RING_SIZE);
		free(p->items);
		free(p);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		p->items[i].node = nodes[i];
	p->n = n;
	place(p);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->ready, NULL);
	pthread_cond_init(&p->room, NULL);
	p->stride = readers();
	while (p->n_threads < p->stride) {
		struct reader_arg *a = malloc(sizeof(*a));

		if (a)
			*a = (struct reader_arg){ p, p->n_threads };
		if (!a || pthread_create(&p->threads[p->n_threads], NULL,
					 reader, a)) {
			/* Items of the missing thread would never come. */
			free(a);
			vm_prefetch_stop(p);
			return -EAGAIN;
		}
		p->n_threads++;
	}
	*out = p;
	return 0;
}

void vm_prefetch_release(struct vm_prefetch *p, size_t n)
{
	if (!p || !n)
		return;
	pthread_mutex_lock(&p->lock);
	if (n <= __atomic_load_n(&p->taken, __ATOMIC_ACQUIRE) &&
	    p->items[n - 1].end > p->freed) {
		__atomic_store_n(&p->freed, p->items[n - 1].end,
				 __ATOMIC_RELEASE);
		if (p->room_waiters)
			pthread_cond_broadcast(&p->room);
	}
	pthread_mutex_unlock(&p->lock);
}

size_t vm_prefetch_taken(const struct vm_prefetch *p)
{
	return p->taken;
}

int vm_prefetch_ready(struct vm_prefetch *p)
{
	return p->taken >= p->n ||
	       __atomic_load_n(&p->items[p->taken].ready, __ATOMIC_ACQUIRE);
}

int vm_prefetch_fits(const struct vm_prefetch *p, size_t released)
{
	uint64_t freed = released ? p->items[released - 1].end : 0;

	return p->taken >= p->n || p->items[p->taken].end <= freed + RING_SIZE;
}

/*
 * The file whose reading wakes the writer waiting for the next one: a run
 * of files later, within half the ring.
 */
static size_t wake_point(const struct vm_prefetch *p)
{
	size_t i = p->taken;
	uint64_t limit = p->items[i].end + RING_SIZE / 2;

	while (i + 1 < p->n && i + 1 < p->taken + WAKE_RUN &&
	       p->items[i + 1].end <= limit)
		i++;
	return i;
}

int vm_prefetch_take(struct vm_prefetch *p, struct vm_node *n,
		     const char **data, struct vm_error *err)
{
	struct item *it;

	*data = NULL;
	if (p->taken >= p->n || p->items[p->taken].node != n)
		return vm_error_set(err, EINVAL,
				    "internal: files read out of order");
	it = &p->items[p->taken];
	if (!__atomic_load_n(&it->ready, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&p->lock);
		while (!__atomic_load_n(&it->ready, __ATOMIC_ACQUIRE)) {
			p->wake_at = wake_point(p);
			p->writer_waiting = 1;
			pthread_cond_wait(&p->ready, &p->lock);
			p->writer_waiting = 0;
		}
		pthread_mutex_unlock(&p->lock);
	}
	__atomic_store_n(&p->taken, p->taken + 1, __ATOMIC_RELEASE);
	if (it->r < 0)
		return it->err ? vm_error_set(err, it->r, "%s", it->err->msg) :
				 vm_error_set(err, ENOMEM, "out of memory");
	*data = p->ring + it->off;
	return 0;
}

void vm_prefetch_stop(struct vm_prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->room);
	pthread_mutex_unlock(&p->lock);
	for (int t = 0; t < p->n_threads; t++)
		pthread_join(p->threads[t], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->ready);
	pthread_cond_destroy(&p->room);
	munmap(p->ring, RING_SIZE);
	for (size_t i = 0; i < p->n; i++)
		free(p->items[i].err);
	free(p->items);
	free(p);
}
