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
#include <unistd.h>

#include "agent/samples/proc.h"
#include "agent/symbolize/elf_objects.h"
#include "agent/symbolize/pgrelease.h"
#include "agent/symbolize/pgwait.h"
#include "common/cleanup.h"

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

static unsigned read_major(const char *proc_root, uint32_t pid)
{
	char path[64], buf[16];
	struct stat st;
	ssize_t n;
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof(path), "%s/%u/cwd/PG_VERSION", proc_root, pid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return 0;
	n = read(fd, buf, sizeof(buf));
	return n > 0 ? vm_pg_parse_version(buf, (size_t)n) : 0;
}

/* The executable's globals, from the cache when it is the same file. */
static int read_globals(struct vm_pg_cache *c, int fd)
{
	static const char *const names[] = { "my_wait_event_info",
					     "MyBEEntry" };
	uint64_t values[2];
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -ENOENT;
	if (c->valid && c->dev == st.st_dev && c->ino == st.st_ino &&
	    c->mtime_ns == (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
				   (uint64_t)st.st_mtim.tv_nsec)
		return 0;
	c->valid = false;
	if (!c->objects &&
	    !(c->objects = malloc(sizeof(struct vm_elf_objects))))
		return -ENOMEM;
	if (vm_elf_objects_fd(fd, names, 2, values, c->objects) < 0 ||
	    !values[0])
		return -ENOENT;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL +
		      (uint64_t)st.st_mtim.tv_nsec;
	c->wait_event_vaddr = values[0];
	c->be_entry_vaddr = values[1];
	c->release_major = 0;
	c->valid = true;
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

/* The same from /proc/PID/maps, for a process not captured yet. */
static bool exe_mapping_of_pid(const char *proc_root, uint32_t pid,
			       struct vm_mapping *m)
{
	char exe[4096], path[64], *line = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	bool found = false;
	size_t cap = 0;
	uint64_t dev, ino;

	if (!exe_path(proc_root, pid, exe, sizeof(exe)))
		return false;
	snprintf(path, sizeof(path), "%s/%u/maps", proc_root, pid);
	f = fopen(path, "re");
	while (f && !found && getline(&line, &cap, f) > 0)
		found = vm_proc_parse_maps_line(line, m, &dev, &ino) == 1 &&
			m->path && !strcmp(m->path, exe);
	free(line); /* m->path points into it: not used past here */
	return found;
}

/*
 * pid's labels, its executable mapped at start from file offset pgoff;
 * *major its version, *minor its minor release.
 */
static int locate(struct vm_pg_cache *c, const char *proc_root, uint32_t pid,
		  uint64_t start, uint64_t pgoff, struct pg_proc *out,
		  unsigned *major, unsigned *minor)
{
	const struct vm_pg_layout *l;
	_cleanup_close_ int fd = -1;
	char path[64];
	uint64_t addr;
	int r;

	memset(out, 0, sizeof(*out));
	*major = read_major(proc_root, pid);
	if (!*major)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%u/exe", proc_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	r = read_globals(c, fd);
	if (r < 0)
		return r;
	if (c->release_major != *major) {
		c->release_minor = vm_pg_release_of_fd(fd, *major);
		c->release_major = *major;
	}
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
	r = locate(c, proc_root, p->pid, m->start, m->pgoff, out, &major,
		   &minor);
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

	if (!exe_mapping_of_pid(proc_root, pid, &m))
		return -ENOENT;
	return locate(c, proc_root, pid, m.start, m.pgoff, out, &major, &minor);
}

void vm_pg_cache_free(struct vm_pg_cache *c)
{
	free(c->objects);
	memset(c, 0, sizeof(*c));
}
