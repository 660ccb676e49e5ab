// SPDX-License-Identifier: Apache-2.0
/*
 * proc.c - capturing a live process from /proc for later symbolization:
 * its executable mappings (files opened through map_files so that they
 * stay readable after the process exits), command name and title.
 */
#include "agent/samples/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent/iopool/iopool.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/fdio.h"

void vm_proc_files_free(struct vm_proc_files *f)
{
	struct vm_iopool *iopool = f->iopool; /* not theirs: kept */

	for (size_t i = 0; i < f->n; i++)
		free(f->v[i].open_path);
	free(f->v);
	memset(f, 0, sizeof(*f));
	f->iopool = iopool;
}

#define FD_PREFIX "/proc/self/fd/"

/* The descriptor of an open_path this file made, or -1. */
static int fd_of(const char *open_path)
{
	char *end;
	long fd;

	if (!open_path || strncmp(open_path, FD_PREFIX, strlen(FD_PREFIX)))
		return -1;
	fd = strtol(open_path + strlen(FD_PREFIX), &end, 10);
	return *end || fd < 0 || fd > INT32_MAX ? -1 : (int)fd;
}

void vm_proc_files_drop_unused(struct vm_proc_files *f, struct vm_samples *s)
{
	int max = -1;
	size_t keep = 0;
	bool *used;

	for (size_t i = 0; i < f->n; i++)
		if (fd_of(f->v[i].open_path) > max)
			max = fd_of(f->v[i].open_path);
	used = calloc((size_t)max + 1, sizeof(*used));
	if (!used)
		return; /* kept: tried again at the next window */
	for (size_t p = 0; p < s->n_procs; p++)
		for (size_t m = 0; m < s->procs[p].n_maps; m++) {
			int fd = fd_of(s->procs[p].maps[m].open_path);

			if (fd >= 0 && fd <= max)
				used[fd] = true;
		}
	for (size_t i = 0; i < f->n; i++) {
		int fd = fd_of(f->v[i].open_path);

		if (fd >= 0 && used[fd]) {
			f->v[keep++] = f->v[i];
			continue;
		}
		if (fd >= 0)
			vm_samples_release_fd(s, fd);
		free(f->v[i].open_path);
	}
	f->n = keep;
	free(used);
}

int vm_proc_parse_maps_line(char *line, struct vm_mapping *m, uint64_t *dev,
			    uint64_t *ino)
{
	unsigned long long start, end, off, inode;
	unsigned int major, minor;
	char perms[8];
	int pos = 0;
	char *path;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end,
		   perms, &off, &major, &minor, &inode, &pos) < 7 ||
	    pos == 0 || start >= end || strlen(perms) < 3)
		return -EINVAL;
	if (perms[2] != 'x')
		return 0;
	path = line + pos;
	path[strcspn(path, "\n")] = '\0';
	memset(m, 0, sizeof(*m));
	m->start = start;
	m->end = end;
	m->pgoff = off;
	m->path = path[0] ? path : NULL;
	m->ino = inode;
	*dev = (uint64_t)major << 32 | minor;
	*ino = inode;
	return 1;
}

/* How much of cmdline a title keeps: not the NULs and blanks at its end. */
static size_t title_len(const char *buf, size_t len)
{
	while (len > 0 && (buf[len - 1] == '\0' || buf[len - 1] == ' '))
		len--;
	return len;
}

char *vm_proc_title_from_cmdline(const char *buf, size_t len)
{
	char *t;

	len = title_len(buf, len);
	if (len == 0)
		return NULL;
	t = malloc(len + 1); /* not strndup: it stops at the first NUL */
	if (!t)
		return NULL;
	memcpy(t, buf, len);
	t[len] = '\0';
	for (size_t i = 0; i < len; i++)
		if (t[i] == '\0')
			t[i] = ' ';
	return t;
}

int vm_proc_read_small(const char *path, char *buf, size_t size, size_t *len)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;
	size_t n = 0;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	while (n + 1 < size && (r = read(fd, buf + n, size - 1 - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno == ENOENT ? -ESRCH : -errno;
		}
		n += r;
	}
	buf[n] = '\0';
	if (len)
		*len = n;
	return 0;
}

int vm_proc_read_comm(const char *proc_root, uint32_t pid,
		      char comm[VM_COMM_LEN])
{
	char path[256], buf[VM_COMM_LEN + 1];
	size_t len;
	int r;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/comm", proc_root, pid);
	r = vm_proc_read_small(path, buf, sizeof(buf), NULL);
	if (r < 0)
		return r;
	len = strcspn(buf, "\n");
	if (len > VM_COMM_LEN - 1)
		len = VM_COMM_LEN - 1;
	memcpy(comm, buf, len);
	comm[len] = '\0';
	return 0;
}

int vm_proc_read_title(const char *proc_root, uint32_t pid, char **title)
{
	char path[256], buf[4096];
	size_t len;
	int r;

	*title = NULL;
	snprintf(path, sizeof(path), "%s/%" PRIu32 "/cmdline", proc_root, pid);
	r = vm_proc_read_small(path, buf, sizeof(buf), &len);
	if (r < 0)
		return r;
	if (title_len(buf, len) == 0)
		return 0;
	*title = vm_proc_title_from_cmdline(buf, len);
	return *title ? 0 : -ENOMEM;
}

/* The identity of the file fd holds, numbered as /proc/PID/maps does. */
static int opened_as(int fd, uint64_t *dev, uint64_t *ino)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	*dev = (uint64_t)major(st.st_dev) << 32 | minor(st.st_dev);
	*ino = st.st_ino;
	return 0;
}

/* The file behind one mapping, opened once per profile. */
static const char *open_mapped(struct vm_samples *s,
			       struct vm_proc_files *files,
			       const char *proc_root, uint32_t pid,
			       const struct vm_mapping *m, uint64_t dev,
			       uint64_t ino)
{
	struct vm_proc_file *f;
	char p[4096];
	int fd;

	if (ino == 0 || !m->path || m->path[0] != '/')
		return NULL; /* anonymous, [vdso], [heap], ... */
	for (size_t i = 0; i < files->n; i++)
		if (files->v[i].dev == dev && files->v[i].ino == ino)
			return files->v[i].open_path;

	snprintf(p, sizeof(p), "%s/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64,
		 proc_root, pid, m->start, m->end);
	/*
	 * Never a FIFO or a device put where the mapped file was, and never
	 * a wait on a frozen mount (iopool.h).
	 */
	fd = vm_iopool_open_regular(files->iopool, p, m->dev,
				    VM_IOPOOL_OPEN_MS);
	if (fd < 0 && fd != -ETIMEDOUT && fd != -EAGAIN && fd != -ECANCELED) {
		/* map_files needs CAP_SYS_ADMIN; the root link does not. */
		snprintf(p, sizeof(p), "%s/%" PRIu32 "/root%s", proc_root, pid,
			 m->path);
		fd = vm_iopool_open_regular(files->iopool, p, m->dev,
					    VM_IOPOOL_OPEN_MS);
		/*
		 * What the path shows now may be another file than the one
		 * mapped (its owner put another there, in a mount namespace
		 * of its own): it is shared with the processes that map
		 * that file, never with those that map the one /proc/PID/maps
		 * named.
		 */
		if (fd >= 0 && opened_as(fd, &dev, &ino) < 0) {
			close(fd);
			fd = -EIO;
		}
	}
	if (vm_grow(files->v, &files->cap, files->n + 1) < 0) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	f = &files->v[files->n++];
	f->dev = dev;
	f->ino = ino;
	f->open_path = NULL;
	if (fd < 0)
		return NULL;
	snprintf(p, sizeof(p), FD_PREFIX "%d", fd);
	if (vm_samples_hold_fd(s, fd))
		return NULL;
	f->open_path = strdup(p);
	return f->open_path;
}

int vm_proc_capture(struct vm_samples *s, struct vm_proc_files *files,
		    uint32_t pid, const char *proc_root, struct vm_error *err)
{
	_cleanup_fclose_ FILE *maps = NULL;
	_cleanup_free_ char *line = NULL;
	struct vm_process *proc;
	char path[256], buf[4096], *tgid;
	size_t cap = 0;
	int r;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/status", proc_root, pid);
	r = vm_proc_read_small(path, buf, sizeof(buf), NULL);
	if (r < 0)
		return vm_error_errno(err, -r, "cannot read %s", path);
	tgid = strstr(buf, "\nTgid:");
	if (!tgid || strtoul(tgid + 6, NULL, 10) != pid)
		return -ENOENT; /* a thread: its process is captured */

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", proc_root, pid);
	maps = fopen(path, "re");
	if (!maps)
		return vm_error_errno(err, errno == ENOENT ? ESRCH : errno,
				      "cannot read %s", path);
	proc = vm_samples_get_process(s, pid);
	if (!proc)
		return vm_error_set(err, ENOMEM, "out of memory");
	vm_process_clear(proc);

	while (getline(&line, &cap, maps) > 0) {
		struct vm_mapping m;
		uint64_t dev, ino;

		r = vm_proc_parse_maps_line(line, &m, &dev, &ino);
		if (r <= 0)
			continue;
		m.dev = ino ? makedev(dev >> 32, dev & 0xffffffffu) : 0;
		m.open_path = (char *)open_mapped(s, files, proc_root, pid, &m,
						  dev, ino);
		if (vm_process_add_mapping(proc, &m))
			return vm_error_set(err, ENOMEM, "out of memory");
	}

	/* Best effort: the mappings are what symbolizing needs. */
	vm_proc_read_comm(proc_root, pid, proc->comm);
	vm_proc_read_title(proc_root, pid, &proc->title);
	return 0;
}
