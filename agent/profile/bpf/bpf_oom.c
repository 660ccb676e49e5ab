// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_oom.c - the OOM killer's victims (oomwatch.h): loads
 * bpf/oom.bpf.c, attaches it to the tracepoint oom/mark_victim, and
 * reads its ring buffer on a thread of its own, which calls the
 * caller's function for each victim as it comes.
 *
 * A classic tracepoint is attached through perf_event_open with the
 * tracepoint's id, and its record's fields are where its format says:
 * both are files of tracefs.  Where tracefs is not mounted (a host that
 * mounts none), a child of the agent's mounts one in a mount namespace
 * of its own, reads the two files and ends: nothing is mounted where
 * anyone else sees it.
 */
#include "agent/profile/oomwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/oom.h"
#include "bpf/oom.skel.h"
#include "common/clock.h"

/* The bytes of the format file read, at most. */
#define FORMAT_MAX 8192
/* How often the reader looks whether it is to stop. */
#define POLL_MS 200

#define EVENT_DIR "events/oom/mark_victim"

static const char *const tracefs_dirs[] = { "/sys/kernel/tracing",
					    "/sys/kernel/debug/tracing" };

struct vm_oom_watch {
	struct oom_bpf *skel;
	struct bpf_link *link;
	struct ring_buffer *rb;
	int perf_fd;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	vm_oom_victim_fn *fn;
	void *arg;
	char source[128];
};

/* Reads dir/EVENT_DIR/name into buf (NUL-terminated); bytes, or -errno. */
static ssize_t read_event_file(const char *dir, const char *name, char *buf,
			       size_t cap)
{
	char path[256];
	ssize_t n, got = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/" EVENT_DIR "/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	while ((size_t)got + 1 < cap &&
	       (n = read(fd, buf + got, cap - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/*
 * In a child, in a mount namespace of its own: tracefs mounted on
 * tracefs_dirs[0], the id and the format written to fd, "id\n" first.
 * Only system calls: the agent has threads.
 */
static _Noreturn void private_tracefs_child(int fd)
{
	static char buf[FORMAT_MAX];
	ssize_t n;

	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tracefs", tracefs_dirs[0], "tracefs",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		_exit(1);
	n = read_event_file(tracefs_dirs[0], "id", buf, 32);
	if (n <= 0 || write(fd, buf, (size_t)n) != n)
		_exit(2);
	n = read_event_file(tracefs_dirs[0], "format", buf, sizeof(buf));
	if (n <= 0 || write(fd, buf, (size_t)n) != n)
		_exit(2);
	_exit(0);
}

/* id and format from a tracefs mounted privately, by a child. */
static int read_private(char *id, size_t id_cap, char *format, size_t cap)
{
	static char buf[FORMAT_MAX + 32];
	int fds[2], status = 0;
	ssize_t n, got = 0;
	char *nl;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (pid == 0) {
		close(fds[0]);
		private_tracefs_child(fds[1]);
	}
	close(fds[1]);
	while ((size_t)got + 1 < sizeof(buf) &&
	       (n = read(fds[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	buf[got] = '\0';
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -ENODEV;
	nl = strchr(buf, '\n');
	if (!nl || (size_t)(nl - buf) >= id_cap)
		return -ENODEV;
	memcpy(id, buf, (size_t)(nl - buf));
	id[nl - buf] = '\0';
	snprintf(format, cap, "%s", nl + 1);
	return 0;
}

/* The tracepoint's id and format, from wherever tracefs can be read. */
static int read_tracepoint(struct vm_oom_format *f, char *source,
			   size_t source_cap, struct vm_error *err)
{
	static char format[FORMAT_MAX];
	char id[32];
	int r = -ENOENT;

	for (size_t i = 0; i < sizeof(tracefs_dirs) / sizeof(*tracefs_dirs);
	     i++) {
		if (read_event_file(tracefs_dirs[i], "id", id, sizeof(id)) <=
			    0 ||
		    read_event_file(tracefs_dirs[i], "format", format,
				    sizeof(format)) <= 0)
			continue;
		snprintf(source, source_cap, "%s", tracefs_dirs[i]);
		r = 0;
		break;
	}
	if (r < 0) {
		r = read_private(id, sizeof(id), format, sizeof(format));
		if (r < 0)
			return vm_error_set(
				err, ENODEV,
				"the tracepoint oom/mark_victim cannot be read: tracefs is not mounted at %s and cannot be mounted privately (a kernel without CONFIG_TRACING, or no CAP_SYS_ADMIN); OOM reports are off",
				tracefs_dirs[0]);
		snprintf(source, source_cap,
			 "tracefs mounted privately by the agent");
	}
	f->id = (uint32_t)strtoul(id, NULL, 10);
	if (!f->id)
		return vm_error_set(err, ENODEV,
				    "the tracepoint oom/mark_victim has no id");
	return vm_oom_format_parse(format, f, err);
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct vm_oom_watch *w = ctx;
	const struct oom_event *e = data;
	struct vm_oom_victim v = { 0 };
	uint64_t now_mono = vm_clock_ns(CLOCK_MONOTONIC);
	uint64_t now_real = vm_clock_ns(CLOCK_REALTIME);

	if (len < sizeof(*e))
		return 0;
	v.time_ns = e->time_ns;
	/* The wall clock then: now less the time the record waited. */
	v.unix_ms = (now_real -
		     (now_mono > e->time_ns ? now_mono - e->time_ns : 0)) /
		    1000000;
	v.pid = e->pid;
	v.uid = e->uid;
	v.has_sizes = e->total_vm_kb || e->anon_rss_kb;
	v.total_vm = e->total_vm_kb << 10;
	v.anon_rss = e->anon_rss_kb << 10;
	v.file_rss = e->file_rss_kb << 10;
	v.shmem_rss = e->shmem_rss_kb << 10;
	_Static_assert(OOM_COMM_LEN == VM_COMM_LEN, "comm lengths differ");
	memcpy(v.comm, e->comm, sizeof(v.comm));
	v.comm[sizeof(v.comm) - 1] = '\0';
	w->fn(&v, w->arg);
	return 0;
}

static void *reader(void *arg)
{
	struct vm_oom_watch *w = arg;

	while (!atomic_load(&w->stop)) {
		int r = ring_buffer__poll(w->rb, POLL_MS);

		if (r < 0 && r != -EINTR)
			break;
	}
	return NULL;
}

static int attach(struct vm_oom_watch *w, const struct vm_oom_format *f,
		  struct vm_error *err)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(attr),
		.config = f->id,
		.sample_period = 1,
		.wakeup_events = 1,
	};
	int r;

	w->skel = oom_bpf__open();
	if (!w->skel)
		return vm_error_errno(err, errno,
				      "the OOM program cannot be opened");
	w->skel->rodata->offsets = (struct oom_offsets){
		.pid = f->pid,
		.comm_loc = f->comm_loc,
		.uid = f->uid,
		.total_vm = f->total_vm,
		.anon_rss = f->anon_rss,
		.file_rss = f->file_rss,
		.shmem_rss = f->shmem_rss,
	};
	r = oom_bpf__load(w->skel);
	if (r)
		return vm_error_errno(
			err, r == -EPERM ? EPERM : -r,
			"the kernel refused the OOM program (it needs root, or CAP_BPF and CAP_PERFMON)");
	w->perf_fd = (int)syscall(SYS_perf_event_open, &attr, -1, 0, -1,
				  PERF_FLAG_FD_CLOEXEC);
	if (w->perf_fd < 0)
		return vm_error_errno(
			err, errno,
			"perf_event_open of the tracepoint oom/mark_victim failed");
	w->link = bpf_program__attach_perf_event(w->skel->progs.on_mark_victim,
						 w->perf_fd);
	if (!w->link)
		return vm_error_errno(
			err, errno,
			"the OOM program cannot be attached to oom/mark_victim");
	w->rb = ring_buffer__new(bpf_map__fd(w->skel->maps.oom_events),
				 on_event, w, NULL);
	if (!w->rb)
		return vm_error_errno(err, errno,
				      "the OOM ring buffer cannot be read");
	return 0;
}

int vm_oom_watch_start(vm_oom_victim_fn *fn, void *arg,
		       struct vm_oom_watch **out, struct vm_error *err)
{
	struct vm_oom_watch *w = calloc(1, sizeof(*w));
	struct vm_oom_format f = { 0 };
	int r;

	*out = NULL;
	if (!w)
		return vm_error_set(err, ENOMEM, "out of memory");
	w->perf_fd = -1;
	w->fn = fn;
	w->arg = arg;
	r = read_tracepoint(&f, w->source, sizeof(w->source), err);
	if (r == 0)
		r = attach(w, &f, err);
	if (r == 0) {
		r = -pthread_create(&w->thread, NULL, reader, w);
		if (r < 0)
			vm_error_errno(err, -r,
				       "the OOM reader's thread cannot start");
	}
	if (r < 0) {
		vm_oom_watch_stop(w);
		return r;
	}
	w->started = true;
	*out = w;
	return 0;
}

void vm_oom_watch_stop(struct vm_oom_watch *w)
{
	if (!w)
		return;
	atomic_store(&w->stop, true);
	if (w->started)
		pthread_join(w->thread, NULL);
	ring_buffer__free(w->rb);
	bpf_link__destroy(w->link);
	if (w->perf_fd >= 0)
		close(w->perf_fd);
	oom_bpf__destroy(w->skel);
	free(w);
}

uint64_t vm_oom_watch_lost(struct vm_oom_watch *w)
{
	return w && w->skel && w->skel->bss ?
		       __atomic_load_n(&w->skel->bss->lost, __ATOMIC_RELAXED) :
		       0;
}

const char *vm_oom_watch_source(struct vm_oom_watch *w)
{
	return w ? w->source : "";
}
