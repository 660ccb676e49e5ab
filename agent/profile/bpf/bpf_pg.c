// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_pg.c - where a PostgreSQL process keeps its wait event and query id
 * (bpf_pg.h), found from outside it, without touching it:
 *
 *   version   the PG_VERSION file of its data directory, which every
 *             postgres process has as its working directory (postgres
 *             refuses to start on a data directory of another major
 *             version, so it is also the executable's)
 *   globals   my_wait_event_info and MyBEEntry in the executable's
 *             .dynsym (postgres is linked with --export-dynamic), moved
 *             by the executable's load bias, from its mapping
 *   release   the minor release, from the executable's version string
 *             (agent/symbolize/pgrelease.h): a few names changed between
 *             minor releases
 *   offsets   the version's table (agent/symbolize/pgwait.h); a version
 *             without one gets no labels, and the reason is kept
 *
 * and, for a thread the programs never saw (blocked since before the
 * profile), the labels it shows now, read from its memory through those
 * addresses as the programs would (vm_bpf_pg_read_labels()).
 *
 * The files are opened through /proc/PID, never followed through a link
 * the process controls beyond what the kernel resolves for /proc, read
 * with bounds, and only ever read.
 */
#include "agent/profile/bpf/bpf_pg.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "agent/iopool/iopool.h"
#include "agent/samples/proc.h"
#include "agent/symbolize/elf_objects.h"
#include "agent/symbolize/pgrelease.h"
#include "agent/symbolize/pgwait.h"
#include "common/cleanup.h"
#include "common/fdio.h"

void vm_pg_labels_note_init(struct vm_pg_labels_note *n)
{
	memset(n, 0, sizeof(*n));
	pthread_mutex_init(&n->lock, NULL);
}

void vm_pg_labels_note_destroy(struct vm_pg_labels_note *n)
{
	pthread_mutex_destroy(&n->lock);
}

void vm_pg_labels_note(struct vm_pg_labels_note *n, char *buf, size_t size)
{
	pthread_mutex_lock(&n->lock);
	snprintf(buf, size, "%s", n->text);
	pthread_mutex_unlock(&n->lock);
}

static void set_note(struct vm_pg_labels_note *n, unsigned major, uint32_t pid)
{
	pthread_mutex_lock(&n->lock);
	snprintf(
		n->text, sizeof(n->text),
		"PostgreSQL %u (pid %u) has no table of wait events and status entry layout here (known: %s), so its samples carry no wait_event or query_id label",
		major, pid, vm_pg_known_versions());
	pthread_mutex_unlock(&n->lock);
}

static void set_query_id_note(struct vm_pg_labels_note *n, unsigned major,
			      uint32_t pid)
{
	pthread_mutex_lock(&n->lock);
	snprintf(
		n->text, sizeof(n->text),
		"PostgreSQL %u (pid %u): where its status entry keeps the query id was not checked against an arm64 build, so its samples carry no query_id label (wait events are labelled)",
		major, pid);
	pthread_mutex_unlock(&n->lock);
}

unsigned vm_pg_parse_version(const char *text, size_t len)
{
	unsigned v = 0;
	size_t i;

	for (i = 0; i < len && i < 4 && text[i] >= '0' && text[i] <= '9'; i++)
		v = v * 10 + (unsigned)(text[i] - '0');
	if (i == 0 || (i < len && text[i] != '\n' && text[i] != '.'))
		return 0;
	return v;
}

/* The version in pid's working directory's PG_VERSION; 0 when none. */
static unsigned read_major(struct vm_iopool *pool, const char *proc_root,
			   uint32_t pid)
{
	char path[64], buf[16];
	size_t n;

	uint64_t dev;

	snprintf(path, sizeof(path), "%s/%u/cwd", proc_root, pid);
	dev = vm_iopool_link_dev(path);
	snprintf(path, sizeof(path), "%s/%u/cwd/PG_VERSION", proc_root, pid);
	/* Through the I/O pool: the directory may be on a frozen mount. */
	if (vm_iopool_read_small(pool, path, dev, buf, sizeof(buf), &n,
				 VM_IOPOOL_OPEN_MS))
		return 0;
	return n > 0 ? vm_pg_parse_version(buf, n) : 0;
}

/*
 * Reading the executable, as two jobs (agent/iopool/iopool.h): it is on
 * whatever mount the target runs from.  The first opens and stats it (its
 * entry in the home is then found), the second reads its facts, only
 * when the home has none yet.
 */
struct exe_job {
	struct vm_iopool_job job;
	int fd;
	unsigned major;
	struct vm_binary_key key;
	struct vm_pg_facts *facts; /* what the second read, NULL: none */
	char path[64];
};

static int exe_open(struct vm_iopool_job *job)
{
	struct exe_job *x = vm_iopool_owner(job, struct exe_job);
	struct stat st;

	x->fd = vm_open_regular(x->path);
	if (x->fd < 0 || fstat(x->fd, &st) < 0)
		return -ENOENT;
	__atomic_store_n(&job->dev, (uint64_t)st.st_dev, __ATOMIC_RELAXED);
	vm_binary_key_of(&st, &x->key);
	return 0;
}

static int exe_read(struct vm_iopool_job *job)
{
	static const char *const names[] = { "my_wait_event_info", "MyBEEntry",
					     "TopMemoryContext" };
	struct exe_job *x = vm_iopool_owner(job, struct exe_job);
	struct vm_pg_facts *f = calloc(1, sizeof(*f));
	uint64_t values[3];

	if (!f)
		return -ENOMEM;
	if (vm_elf_objects_fd(x->fd, names, 3, values, &f->objects) < 0 ||
	    !values[0]) {
		free(f); /* not PostgreSQL: it has none */
		return 0;
	}
	f->wait_event_vaddr = values[0];
	f->be_entry_vaddr = values[1];
	f->top_memory_context_vaddr = values[2];
	f->release_major = x->major;
	f->release_minor = vm_pg_release_of_fd(x->fd, x->major);
	x->facts = f;
	return 0;
}

static void exe_free(struct vm_iopool_job *job)
{
	struct exe_job *x = vm_iopool_owner(job, struct exe_job);

	if (x->fd >= 0)
		close(x->fd);
	free(x->facts);
	free(x);
}

/*
 * The facts of pid's executable (major its version, dev its device from
 * its mapping), from its entry in home, read when that has none: *facts
 * (NULL: not PostgreSQL) stays valid until *held is put back (with no
 * home, *held is NULL and *facts the caller's to free).
 */
static int read_exe(struct vm_iopool *pool, struct vm_binaries *home,
		    const char *proc_root, uint32_t pid, unsigned major,
		    uint64_t dev, struct vm_binary **held,
		    struct vm_pg_facts **facts)
{
	struct exe_job *x = calloc(1, sizeof(*x));
	void *got = NULL;
	int r;

	*held = NULL;
	*facts = NULL;
	if (!x)
		return -ENOMEM;
	x->fd = -1;
	snprintf(x->path, sizeof(x->path), "%s/%u/exe", proc_root, pid);
	x->job = (struct vm_iopool_job){ .free = exe_free, .dev = dev };
	x->major = major;
	r = vm_iopool_step(pool, &x->job, exe_open, VM_IOPOOL_READ_MS);
	if (r < 0)
		return r;
	*held = home ? vm_binaries_hold(home, &x->key) : NULL;
	if (*held && vm_binary_facet(home, *held, VM_BINARY_PG, &got) &&
	    (!got || ((struct vm_pg_facts *)got)->release_major == major)) {
		exe_free(&x->job);
		*facts = got;
		return 0;
	}
	r = vm_iopool_step(pool, &x->job, exe_read, VM_IOPOOL_READ_MS);
	if (r < 0) {
		vm_binaries_put(home, *held);
		*held = NULL;
		return r;
	}
	if (*held && !got) {
		vm_binary_fill(home, *held, VM_BINARY_PG, x->facts,
			       x->facts ? sizeof(*x->facts) : 0, free,
			       "PostgreSQL facts", x->path, &got);
		x->facts = NULL; /* the home's now, or freed by it */
		*facts = got;
	} else {
		/*
		 * No home, or one whose facts are of another version's data
		 * directory (postgres refuses that): for this call only.
		 */
		vm_binaries_put(home, *held);
		*held = NULL;
		*facts = x->facts;
		x->facts = NULL;
	}
	exe_free(&x->job);
	return 0;
}

/* The path of pid's executable into exe; false when unknown. */
static bool exe_path(const char *proc_root, uint32_t pid, char *exe,
		     size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/exe", proc_root, pid);
	n = readlink(path, exe, size - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	return true;
}

/* The mapping of the executable among p's: the first one with its path. */
static const struct vm_mapping *exe_mapping(const char *proc_root,
					    const struct vm_process *p)
{
	char exe[4096];

	if (!exe_path(proc_root, p->pid, exe, sizeof(exe)))
		return NULL;
	for (size_t i = 0; i < p->n_maps; i++)
		if (p->maps[i].path && !strcmp(p->maps[i].path, exe))
			return &p->maps[i];
	return NULL;
}

/*
 * The same from /proc/PID/maps, for a process not captured yet, and the
 * file's device as maps gives it (major << 32 | minor).
 */
static bool exe_mapping_of_pid(const char *proc_root, uint32_t pid,
			       struct vm_mapping *m, uint64_t *dev)
{
	char exe[4096], path[64], *line = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	bool found = false;
	size_t cap = 0;
	uint64_t ino;

	if (!exe_path(proc_root, pid, exe, sizeof(exe)))
		return false;
	snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	f = fopen(path, "re");
	while (f && !found && getline(&line, &cap, f) > 0)
		found = vm_proc_parse_maps_line(line, m, dev, &ino) == 1 &&
			m->path && !strcmp(m->path, exe);
	free(line); /* m->path points into it: not used past here */
	return found;
}

/*
 * pid's labels, its executable mapped at start from file offset pgoff;
 * *major its version, *minor its minor release; *top (when not NULL)
 * where its TopMemoryContext is, 0 when its executable has none.
 */
static int locate(struct vm_iopool *pool, struct vm_binaries *home,
		  struct vm_pg_labels_note *note, const char *proc_root,
		  uint32_t pid, uint64_t start, uint64_t pgoff, uint64_t dev,
		  struct pg_proc *out, unsigned *major, unsigned *minor,
		  uint64_t *top)
{
	const struct vm_pg_layout *l;
	struct vm_pg_facts *c;
	struct vm_binary *held;
	uint64_t addr;
	int r;

	memset(out, 0, sizeof(*out));
	*major = read_major(pool, proc_root, pid);
	if (!*major)
		return -ENOENT;
	r = read_exe(pool, home, proc_root, pid, *major, dev, &held, &c);
	if (r < 0)
		return r == -ENOMEM ? r : -ENOENT;
	if (!c)
		r = -ENOENT;
	else if (!(l = vm_pg_layout(*major))) {
		*minor = c->release_minor;
		set_note(note, *major, pid);
		r = -EOPNOTSUPP;
	} else if (!vm_elf_objects_runtime(&c->objects, start, pgoff,
					   c->wait_event_vaddr, &addr)) {
		r = -ENOENT;
	} else {
		*minor = c->release_minor;
		out->wait_event_ptr = addr;
		if (top && c->top_memory_context_vaddr &&
		    !vm_elf_objects_runtime(&c->objects, start, pgoff,
					    c->top_memory_context_vaddr, top))
			*top = 0;
		if (l->query_id_offset && !vm_pg_query_id_offset(l))
			set_query_id_note(note, *major, pid);
		if (vm_pg_query_id_offset(l) && c->be_entry_vaddr &&
		    vm_elf_objects_runtime(&c->objects, start, pgoff,
					   c->be_entry_vaddr, &addr)) {
			out->be_entry_ptr = addr;
			out->query_id_off = vm_pg_query_id_offset(l);
		}
	}
	if (held)
		vm_binaries_put(home, held);
	else
		free(c);
	return r;
}

int vm_bpf_pg_locate(struct vm_iopool *pool, struct vm_binaries *home,
		     struct vm_pg_labels_note *note, const char *proc_root,
		     struct vm_process *p, struct pg_proc *out)
{
	const struct vm_mapping *m = exe_mapping(proc_root, p);
	unsigned major, minor;
	int r;

	if (!m)
		return -ENOENT;
	r = locate(pool, home, note, proc_root, p->pid, m->start, m->pgoff,
		   m->dev, out, &major, &minor, NULL);
	if (r == 0) {
		p->pg_major = major;
		p->pg_minor = minor;
	}
	return r;
}

int vm_bpf_pg_locate_pid(struct vm_iopool *pool, struct vm_binaries *home,
			 struct vm_pg_labels_note *note, const char *proc_root,
			 uint32_t pid, struct pg_proc *out)
{
	struct vm_mapping m;
	unsigned major, minor;
	uint64_t dev;

	if (!exe_mapping_of_pid(proc_root, pid, &m, &dev))
		return -ENOENT;
	return locate(pool, home, note, proc_root, pid, m.start, m.pgoff,
		      makedev(dev >> 32, dev & 0xffffffffu), out, &major,
		      &minor, NULL);
}

int vm_bpf_pg_locate_memory(struct vm_iopool *pool, struct vm_binaries *home,
			    struct vm_pg_labels_note *note,
			    const char *proc_root, struct vm_process *p,
			    struct pg_proc *out, uint64_t *top)
{
	struct vm_mapping m;
	unsigned major = 0, minor = 0;
	uint64_t dev;
	int r;

	*top = 0;
	if (!exe_mapping_of_pid(proc_root, p->pid, &m, &dev))
		return -ENOENT;
	r = locate(pool, home, note, proc_root, p->pid, m.start, m.pgoff,
		   makedev(dev >> 32, dev & 0xffffffffu), out, &major, &minor,
		   top);
	if (r == 0) {
		p->pg_major = major;
		p->pg_minor = minor;
	}
	return r;
}

/*
 * size bytes at off past the pointer stored at ptr_addr in process pid
 * into out; false (out untouched) when the pointer is 0 or unreadable.
 */
static bool read_through(uint32_t pid, uint64_t ptr_addr, uint64_t off,
			 void *out, size_t size)
{
	uint64_t ptr = 0;
	struct iovec local = { &ptr, sizeof(ptr) };
	struct iovec remote = { (void *)(uintptr_t)ptr_addr, sizeof(ptr) };

	if (!ptr_addr ||
	    process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) !=
		    sizeof(ptr) ||
	    !ptr)
		return false;
	local = (struct iovec){ out, size };
	remote = (struct iovec){ (void *)(uintptr_t)(ptr + off), size };
	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) ==
	       (ssize_t)size;
}

void vm_bpf_pg_read_labels(uint32_t pid, const struct pg_proc *pp,
			   uint32_t *wait_event, uint64_t *query_id)
{
	uint32_t info = 0;
	uint64_t id = 0;

	*wait_event = 0;
	*query_id = 0;
	if (!pp)
		return;
	if (read_through(pid, pp->wait_event_ptr, 0, &info, sizeof(info)))
		*wait_event = info;
	if (read_through(pid, pp->be_entry_ptr, pp->query_id_off, &id,
			 sizeof(id)))
		*query_id = id;
}
