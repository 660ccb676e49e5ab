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

static pthread_mutex_t note_lock = PTHREAD_MUTEX_INITIALIZER;
static char note[256];

void vm_pg_labels_note(char *buf, size_t size)
{
	pthread_mutex_lock(&note_lock);
	snprintf(buf, size, "%s", note);
	pthread_mutex_unlock(&note_lock);
}

static void set_note(unsigned major, uint32_t pid)
{
	pthread_mutex_lock(&note_lock);
	snprintf(
		note, sizeof(note),
		"PostgreSQL %u (pid %u) has no table of wait events and status entry layout here (known: %s), so its samples carry no wait_event or query_id label",
		major, pid, vm_pg_known_versions());
	pthread_mutex_unlock(&note_lock);
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
static unsigned read_major(const char *proc_root, uint32_t pid)
{
	char path[64], buf[16];
	size_t n;

	uint64_t dev;

	snprintf(path, sizeof(path), "%s/%u/cwd", proc_root, pid);
	dev = vm_iopool_link_dev(path);
	snprintf(path, sizeof(path), "%s/%u/cwd/PG_VERSION", proc_root, pid);
	/* Through the I/O pool: the directory may be on a frozen mount. */
	if (vm_iopool_read_small(path, dev, buf, sizeof(buf), &n,
				 VM_IOPOOL_OPEN_MS))
		return 0;
	return n > 0 ? vm_pg_parse_version(buf, n) : 0;
}

/*
 * Reading the executable, as a job (agent/iopool/iopool.h): it is on
 * whatever mount the target runs from.  Given the cache's key, it reads
 * the globals only when the file is another.
 */
struct exe_job {
	struct vm_iopool_job job;
	unsigned major;
	bool cached; /* in: the cache is valid; out: it is this file */
	uint64_t dev, ino, mtime_ns;
	uint64_t values[2];
	unsigned minor;
	struct vm_elf_objects objects;
	char path[64];
};

static int exe_run(struct vm_iopool_job *job)
{
	static const char *const names[] = { "my_wait_event_info",
					     "MyBEEntry" };
	struct exe_job *x = vm_iopool_owner(job, struct exe_job);
	_cleanup_close_ int fd = vm_open_regular(x->path);
	struct stat st;
	uint64_t mtime_ns;

	if (fd < 0 || fstat(fd, &st) < 0)
		return -ENOENT;
	__atomic_store_n(&job->dev, (uint64_t)st.st_dev, __ATOMIC_RELAXED);
	mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
		   (uint64_t)st.st_mtim.tv_nsec;
	if (x->cached && x->dev == st.st_dev && x->ino == st.st_ino &&
	    x->mtime_ns == mtime_ns)
		return 0;
	x->cached = false;
	if (vm_elf_objects_fd(fd, names, 2, x->values, &x->objects) < 0 ||
	    !x->values[0])
		return -ENOENT;
	x->dev = st.st_dev;
	x->ino = st.st_ino;
	x->mtime_ns = mtime_ns;
	x->minor = vm_pg_release_of_fd(fd, x->major);
	return 0;
}

static void exe_free(struct vm_iopool_job *job)
{
	free(vm_iopool_owner(job, struct exe_job));
}

/*
 * The executable's globals and release into c, from the cache when it is
 * the same file; dev the executable's device (from its mapping).
 */
static int read_exe(struct vm_pg_cache *c, const char *proc_root, uint32_t pid,
		    unsigned major, uint64_t dev)
{
	struct exe_job *x = calloc(1, sizeof(*x));
	int r;

	if (!x || (!c->objects &&
		   !(c->objects = malloc(sizeof(struct vm_elf_objects))))) {
		free(x);
		return -ENOMEM;
	}
	snprintf(x->path, sizeof(x->path), "%s/%u/exe", proc_root, pid);
	x->job = (struct vm_iopool_job){ .run = exe_run,
					 .free = exe_free,
					 .dev = dev };
	x->major = major;
	x->cached = c->valid && c->release_major == major;
	x->dev = c->dev;
	x->ino = c->ino;
	x->mtime_ns = c->mtime_ns;
	r = vm_iopool_run(&x->job, VM_IOPOOL_READ_MS);
	if (r < 0)
		return r; /* the I/O pool frees it */
	r = x->job.result;
	if (r == 0 && !x->cached) {
		memcpy(c->objects, &x->objects, sizeof(x->objects));
		c->dev = x->dev;
		c->ino = x->ino;
		c->mtime_ns = x->mtime_ns;
		c->wait_event_vaddr = x->values[0];
		c->be_entry_vaddr = x->values[1];
		c->release_major = major;
		c->release_minor = x->minor;
		c->valid = true;
	} else if (r < 0) {
		c->valid = false;
	}
	free(x);
	return r;
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
 * *major its version, *minor its minor release.
 */
static int locate(struct vm_pg_cache *c, const char *proc_root, uint32_t pid,
		  uint64_t start, uint64_t pgoff, uint64_t dev,
		  struct pg_proc *out, unsigned *major, unsigned *minor)
{
	const struct vm_pg_layout *l;
	uint64_t addr;
	int r;

	memset(out, 0, sizeof(*out));
	*major = read_major(proc_root, pid);
	if (!*major)
		return -ENOENT;
	r = read_exe(c, proc_root, pid, *major, dev);
	if (r < 0)
		return r == -ENOMEM ? r : -ENOENT;
	*minor = c->release_minor;
	l = vm_pg_layout(*major);
	if (!l) {
		set_note(*major, pid);
		return -EOPNOTSUPP;
	}
	if (!vm_elf_objects_runtime(c->objects, start, pgoff,
				    c->wait_event_vaddr, &addr))
		return -ENOENT;
	out->wait_event_ptr = addr;
	if (l->query_id_offset && c->be_entry_vaddr &&
	    vm_elf_objects_runtime(c->objects, start, pgoff, c->be_entry_vaddr,
				   &addr)) {
		out->be_entry_ptr = addr;
		out->query_id_off = l->query_id_offset;
	}
	return 0;
}

int vm_bpf_pg_locate(struct vm_pg_cache *c, const char *proc_root,
		     struct vm_process *p, struct pg_proc *out)
{
	const struct vm_mapping *m = exe_mapping(proc_root, p);
	unsigned major, minor;
	int r;

	if (!m)
		return -ENOENT;
	r = locate(c, proc_root, p->pid, m->start, m->pgoff, m->dev, out,
		   &major, &minor);
	if (r == 0) {
		p->pg_major = major;
		p->pg_minor = minor;
	}
	return r;
}

int vm_bpf_pg_locate_pid(struct vm_pg_cache *c, const char *proc_root,
			 uint32_t pid, struct pg_proc *out)
{
	struct vm_mapping m;
	unsigned major, minor;
	uint64_t dev;

	if (!exe_mapping_of_pid(proc_root, pid, &m, &dev))
		return -ENOENT;
	return locate(c, proc_root, pid, m.start, m.pgoff,
		      makedev(dev >> 32, dev & 0xffffffffu), out, &major,
		      &minor);
}

void vm_pg_cache_free(struct vm_pg_cache *c)
{
	free(c->objects);
	memset(c, 0, sizeof(*c));
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
