// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_backend.c - the eBPF backend: loads bpf/profile.bpf.c through its
 * skeleton, opens a CPU-clock perf event on every online CPU and attaches
 * the sampling program to each, follows forks and execs with raw
 * tracepoints, and at the end hands the counted stacks over as a struct
 * vm_samples.
 *
 * While the profile runs, a thread reads two ring buffers: the samples
 * with their stacks, counted as they come (bpf_read.c), and the program's
 * announcements (first sample of a process, exec of a target), capturing
 * each new process from /proc (proc.c) before it can exit.  The
 * links and file descriptors are released in collect() and destroy(), and
 * the kernel drops everything when the agent exits, so nothing stays
 * attached whatever happens.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/profile/backend.h"
#include "agent/profile/bpf/bpf_read.h"
#include "agent/profile/bpf/bpf_sizing.h"
#include "agent/samples/proc.h"
#include "bpf/profile.h"
#include "bpf/profile.skel.h"
#include "common/array.h"
#include "common/cleanup.h"

/* The BPF side's filter holds every command name a request may give. */
_Static_assert(PROFILE_MAX_COMMS >= VM_MAX_TARGETS,
	       "target_comms is smaller than VM_MAX_TARGETS");
_Static_assert(PROFILE_COMM_LEN == VM_COMM_LEN,
	       "the BPF side's command names are not VM_COMM_LEN long");

struct fork_rec {
	uint32_t pid, ppid;
};

struct bpf_state {
	struct profile_bpf *skel;
	int *perf_fds;
	struct bpf_link **links;
	size_t n_cpus;
	int possible_cpus;
	struct ring_buffer *rb; /* events and stack_records */
	struct vm_stack_counts counts; /* the reader thread's, then collect's */
	pthread_t thread;
	bool thread_started;
	int stop_fd;
	pthread_mutex_t lock; /* samples.procs, files, forks */
	struct vm_samples samples;
	struct vm_proc_files files;
	struct fork_rec *forks;
	size_t n_forks, cap_forks;
	uint32_t *execed; /* pids to capture again: they ran execve() */
	size_t n_execed, cap_execed;
	bool detached;
	pthread_t releaser; /* detaches the tracepoints, see detach() */
	bool releaser_started;
	/*
	 * Continuous sessions (bpf_seal): the reader thread cuts a window
	 * when seal_fd is written, right after draining the ring buffer, and
	 * leaves it in `sealed` with seal_done raised (under lock).
	 */
	int seal_fd;
	pthread_cond_t sealed_cond;
	uint64_t seal_asked, seal_done;
	struct vm_stack_counts sealed;
	size_t counts_bytes; /* the bound of each window's counts */
	uint64_t stats_sealed[PROFILE_STAT_NR]; /* stats at the last seal */
	/* The session's request: it outlives this state (engine.c). */
	struct vm_profile_request req;
	vm_process_seen_fn *seen; /* the engine's, see backend.h */
};

/*
 * libbpf's last complaint, to put in our error instead of on stderr.  Per
 * thread: libbpf reports on the thread that called it, and two sessions
 * may be starting at once.
 */
static _Thread_local char libbpf_msg[256];

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	char buf[sizeof(libbpf_msg)];

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	if (buf[0])
		memcpy(libbpf_msg, buf, sizeof(buf));
	return 0;
}

static int online_cpus(int **out, size_t *n, struct vm_error *err)
{
	_cleanup_fclose_ FILE *f =
		fopen("/sys/devices/system/cpu/online", "re");
	char buf[4096];
	int *cpus;
	size_t cap;
	int r;

	if (!f || !fgets(buf, sizeof(buf), f))
		return vm_error_errno(
			err, errno ? errno : EIO,
			"cannot read /sys/devices/system/cpu/online");
	r = vm_parse_cpu_list(buf, NULL, 0, &cap);
	if (r < 0)
		return vm_error_set(
			err, EINVAL,
			"cannot parse /sys/devices/system/cpu/online: %s", buf);
	cpus = calloc(cap ? cap : 1, sizeof(int));
	if (!cpus)
		return vm_error_set(err, ENOMEM, "out of memory");
	vm_parse_cpu_list(buf, cpus, cap, n);
	*out = cpus;
	return 0;
}

static void record_fork(struct bpf_state *st, uint32_t pid, uint32_t ppid)
{
	if (vm_grow(st->forks, &st->cap_forks, st->n_forks + 1) < 0)
		return;
	st->forks[st->n_forks++] = (struct fork_rec){ pid, ppid };
}

static bool take_execed(struct bpf_state *st, uint32_t pid)
{
	for (size_t i = 0; i < st->n_execed; i++)
		if (st->execed[i] == pid) {
			st->execed[i] = st->execed[--st->n_execed];
			return true;
		}
	return false;
}

static void record_exec(struct bpf_state *st, uint32_t pid)
{
	for (size_t i = 0; i < st->n_execed; i++)
		if (st->execed[i] == pid)
			return;
	if (vm_grow(st->execed, &st->cap_execed, st->n_execed + 1) < 0)
		return;
	st->execed[st->n_execed++] = pid;
}

/* Only the title: cheap, and PostgreSQL sets it after the fork. */
static void refresh_title(struct vm_process *p)
{
	char *t;
	int r = vm_proc_read_title("/proc", p->pid, &t);

	if (r == -ESRCH)
		p->exited = true;
	if (t) {
		free(p->title);
		p->title = t;
	}
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct bpf_state *st = ctx;
	struct profile_event e;
	struct vm_process *p;

	if (size < sizeof(e))
		return 0;
	memcpy(&e, data, sizeof(e));
	pthread_mutex_lock(&st->lock);
	if (e.ppid)
		record_fork(st, e.pid, e.ppid);
	p = vm_samples_find_process(&st->samples, e.pid);
	if (e.kind == PROFILE_EVENT_EXEC) {
		/*
		 * The loader has not mapped the libraries yet: capture what
		 * there is (the process may exit soon) and again at its next
		 * first sample, or at the end.
		 */
		record_exec(st, e.pid);
		vm_proc_capture(&st->samples, &st->files, e.pid, "/proc", NULL);
	} else if (p && p->n_maps && !take_execed(st, e.pid)) {
		refresh_title(p);
	} else if (vm_proc_capture(&st->samples, &st->files, e.pid, "/proc",
				   NULL) == 0) {
		p = vm_samples_find_process(&st->samples, e.pid);
		if (p)
			st->seen(p);
	}
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/* A sample with its stacks: counted, whatever else happens. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct bpf_state *st = ctx;

	vm_stack_counts_add(&st->counts, data, size);
	return 0;
}

/*
 * How often the thread drains the stack records when no wakeup comes: the
 * program wakes it only once a quarter of the ring buffer is used.
 */
#define DRAIN_MS 100

/*
 * Cut a window (continuous sessions): what the ring buffer holds now is
 * counted first, so the window holds every sample taken before the cut
 * and none after; the next one starts empty.
 */
static void cut_window(struct bpf_state *st)
{
	uint64_t n;

	if (read(st->seal_fd, &n, sizeof(n)) < 0)
		return;
	ring_buffer__consume(st->rb);
	pthread_mutex_lock(&st->lock);
	vm_stack_counts_free(&st->sealed);
	st->sealed = st->counts;
	vm_stack_counts_init(&st->counts, st->counts_bytes);
	st->seal_done = st->seal_asked;
	pthread_cond_broadcast(&st->sealed_cond);
	pthread_mutex_unlock(&st->lock);
}

static void *event_thread(void *arg)
{
	struct bpf_state *st = arg;
	struct pollfd pfd[3] = {
		{ .fd = ring_buffer__epoll_fd(st->rb), .events = POLLIN },
		{ .fd = st->stop_fd, .events = POLLIN },
		{ .fd = st->seal_fd, .events = POLLIN },
	};

	_cleanup_free_ uint32_t *pids = NULL;
	size_t n_pids = 0;

	/*
	 * Off the start path: capture the targets that already run, and read
	 * their symbols, while they are being sampled.  Announcements queue
	 * in the ring buffer meanwhile.
	 */
	if (vm_proc_scan_targets("/proc", (const char *const *)st->req.comms,
				 st->req.n_comms, st->req.pids, st->req.n_pids,
				 &pids, &n_pids, NULL) == 0)
		for (size_t i = 0; i < n_pids; i++) {
			struct vm_process *p;

			pthread_mutex_lock(&st->lock);
			p = vm_samples_find_process(&st->samples, pids[i]);
			if (!p || !p->n_maps)
				vm_proc_capture(&st->samples, &st->files,
						pids[i], "/proc", NULL);
			p = vm_samples_find_process(&st->samples, pids[i]);
			if (p)
				st->seen(p);
			pthread_mutex_unlock(&st->lock);
		}

	for (;;) {
		if (poll(pfd, st->seal_fd >= 0 ? 3 : 2, DRAIN_MS) < 0 &&
		    errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (st->seal_fd >= 0 && pfd[2].revents)
			cut_window(st);
		ring_buffer__consume(st->rb);
	}
	return NULL;
}

static int open_cpu_event(int cpu, uint32_t freq)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = freq,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

static void *release_tracepoints(void *arg)
{
	struct profile_bpf *skel = arg;

	bpf_link__destroy(skel->links.on_fork);
	skel->links.on_fork = NULL;
	bpf_link__destroy(skel->links.on_exec);
	skel->links.on_exec = NULL;
	bpf_link__destroy(skel->links.on_exit);
	skel->links.on_exit = NULL;
	return NULL;
}

/*
 * Stop sampling at once; the tracepoints are released by a thread of their
 * own, joined in destroy(): unregistering a tracepoint may wait for an RCU
 * grace period, which then overlaps with reading and symbolizing.
 */
static void detach(struct bpf_state *st)
{
	if (st->detached)
		return;
	st->detached = true;
	for (size_t i = 0; i < st->n_cpus; i++) {
		if (st->links && st->links[i])
			bpf_link__destroy(st->links[i]); /* closes the event */
		else if (st->perf_fds && st->perf_fds[i] >= 0)
			close(st->perf_fds[i]);
	}
	if (st->skel && pthread_create(&st->releaser, NULL, release_tracepoints,
				       st->skel) == 0)
		st->releaser_started = true;
	else if (st->skel)
		release_tracepoints(st->skel);
	if (st->thread_started) {
		uint64_t one = 1;

		if (write(st->stop_fd, &one, sizeof(one)) < 0)
			pthread_cancel(st->thread);
		pthread_join(st->thread, NULL);
		st->thread_started = false;
	}
}

static void bpf_destroy(void *state)
{
	struct bpf_state *st = state;

	if (!st)
		return;
	detach(st);
	if (st->releaser_started)
		pthread_join(st->releaser, NULL);
	ring_buffer__free(st->rb);
	profile_bpf__destroy(st->skel);
	free(st->perf_fds);
	free(st->links);
	if (st->stop_fd >= 0)
		close(st->stop_fd);
	vm_samples_free(&st->samples);
	vm_stack_counts_free(&st->counts);
	vm_stack_counts_free(&st->sealed);
	if (st->seal_fd >= 0)
		close(st->seal_fd);
	pthread_cond_destroy(&st->sealed_cond);
	vm_proc_files_free(&st->files);
	free(st->forks);
	free(st->execed);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

static int fill_targets(struct bpf_state *st,
			const struct vm_profile_request *req,
			struct vm_error *err)
{
	int fd_comms = bpf_map__fd(st->skel->maps.target_comms);
	int fd_pids = bpf_map__fd(st->skel->maps.target_pids);
	uint8_t yes = 1;

	for (size_t i = 0; i < req->n_comms; i++) {
		char key[PROFILE_COMM_LEN] = { 0 };

		strncpy(key, req->comms[i], sizeof(key) - 1);
		if (bpf_map_update_elem(fd_comms, key, &yes, BPF_ANY))
			return vm_error_errno(
				err, errno,
				"cannot add command name %s to the BPF filter",
				req->comms[i]);
	}
	for (size_t i = 0; i < req->n_pids; i++) {
		uint32_t pid = req->pids[i];

		if (bpf_map_update_elem(fd_pids, &pid, &yes, BPF_ANY))
			return vm_error_errno(
				err, errno,
				"cannot add pid %u to the BPF filter", pid);
	}

	return 0;
}

/*
 * The state, handed to the caller at once: from here on every failure
 * leaves what was made for destroy() to release.
 */
static int new_state(const struct vm_profile_request *req,
		     vm_process_seen_fn *seen, void **state,
		     struct vm_error *err)
{
	struct bpf_state *st = calloc(1, sizeof(*st));

	if (!st)
		return vm_error_set(err, ENOMEM, "out of memory");
	st->stop_fd = -1;
	st->seal_fd = -1;
	st->req = *req;
	st->seen = seen;
	pthread_mutex_init(&st->lock, NULL);
	pthread_cond_init(&st->sealed_cond, NULL);
	*state = st;
	return 0;
}

/*
 * The skeleton opened, not loaded: what the program filters on goes into
 * its rodata, and its maps are sized for this profile (bpf_sizing.c).
 */
static int open_skeleton(struct bpf_state *st,
			 const struct vm_profile_request *req, size_t n_online,
			 struct vm_error *err)
{
	struct vm_bpf_sizes sz;

	/* The per-CPU stats map has a slot per possible CPU, not online. */
	st->possible_cpus = libbpf_num_possible_cpus();
	if (st->possible_cpus <= 0)
		return vm_error_set(err, EIO, "cannot count the possible CPUs");
	vm_bpf_map_sizes(req->frequency, n_online, req->seconds,
			 req->n_pids > 0, &sz);

	st->skel = profile_bpf__open();
	if (!st->skel)
		return vm_error_errno(err, errno,
				      "cannot open the BPF profiler object");
	st->skel->rodata->filter_comm = req->n_comms > 0;
	st->skel->rodata->filter_pid = req->n_pids > 0;
	st->skel->rodata->self_tgid = getpid();
	bpf_map__set_max_entries(st->skel->maps.stack_records, sz.records_ring);
	vm_stack_counts_init(&st->counts, sz.counts_bytes);
	st->counts_bytes = sz.counts_bytes;
	if (req->continuous) {
		st->seal_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (st->seal_fd < 0)
			return vm_error_errno(err, errno,
					      "cannot create an eventfd");
	}
	bpf_map__set_max_entries(st->skel->maps.seen, sz.seen);
	bpf_map__set_max_entries(st->skel->maps.target_pids, sz.pids);
	bpf_map__set_max_entries(st->skel->maps.children, sz.children);
	return 0;
}

/*
 * Create the maps and have the kernel verify the programs.  A refusal
 * says what the profiler needs, with libbpf's last complaint: libbpf's
 * own output is kept off stderr (libbpf_print).
 */
static int load_skeleton(struct bpf_state *st, struct vm_error *err)
{
	int r;

	r = profile_bpf__load(st->skel);
	if (!r)
		return 0;
	r = errno ? errno : -r;
	return vm_error_set(
		err, r == EPERM || r == EACCES ? EPERM : ENODEV,
		"the kernel refused the BPF profiler (%s%s%s); it needs root (CAP_BPF and CAP_PERFMON) and a kernel with BPF, perf events and BPF ring buffers (5.8 or later)",
		strerror(r), libbpf_msg[0] ? ": " : "", libbpf_msg);
}

/*
 * The ring buffer the announcements arrive in and the eventfd that stops
 * the thread reading it, then the raw tracepoints that follow execs,
 * forks and exits.
 */
static int attach_tracepoints(struct bpf_state *st, struct vm_error *err)
{
	struct profile_bpf *skel = st->skel;

	st->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	st->rb = ring_buffer__new(bpf_map__fd(skel->maps.events), on_event, st,
				  NULL);
	if (st->stop_fd < 0 || !st->rb ||
	    ring_buffer__add(st->rb, bpf_map__fd(skel->maps.stack_records),
			     on_record, st) < 0)
		return vm_error_errno(
			err, errno, "cannot set up the BPF event ring buffer");
	skel->links.on_exec = bpf_program__attach(skel->progs.on_exec);
	if (!skel->links.on_exec)
		return vm_error_errno(
			err, errno,
			"cannot attach to the sched_process_exec tracepoint");
	skel->links.on_fork = bpf_program__attach(skel->progs.on_fork);
	skel->links.on_exit = bpf_program__attach(skel->progs.on_exit);
	if (!skel->links.on_fork || !skel->links.on_exit)
		return vm_error_errno(
			err, errno,
			"cannot attach to the sched_process_fork/exit tracepoints");
	return 0;
}

/*
 * A CPU-clock perf event on each online CPU, the sampling program attached
 * to it.  Every slot is -1 or NULL before n_cpus says how many there are,
 * so detach() closes only what was opened.
 */
static int attach_cpus(struct bpf_state *st, const int *cpus, size_t n_online,
		       uint32_t freq, struct vm_error *err)
{
	st->perf_fds = calloc(n_online, sizeof(int));
	st->links = calloc(n_online, sizeof(*st->links));
	if (!st->perf_fds || !st->links)
		return vm_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n_online; i++)
		st->perf_fds[i] = -1;
	st->n_cpus = n_online;
	for (size_t i = 0; i < n_online; i++) {
		st->perf_fds[i] = open_cpu_event(cpus[i], freq);
		if (st->perf_fds[i] < 0) {
			if (errno == ENODEV)
				continue; /* went offline meanwhile */
			return vm_error_errno(
				err, errno == EACCES ? EPERM : errno,
				"cannot open a CPU-clock perf event on CPU %d (is kernel.perf_event_paranoid too strict, or CONFIG_PERF_EVENTS off?)",
				cpus[i]);
		}
		st->links[i] = bpf_program__attach_perf_event(
			st->skel->progs.do_sample, st->perf_fds[i]);
		if (!st->links[i])
			return vm_error_errno(
				err, errno,
				"cannot attach the BPF profiler to CPU %d",
				cpus[i]);
	}
	return 0;
}

/* Last: capturing must not slow attaching down (see the thread). */
static int start_event_thread(struct bpf_state *st, struct vm_error *err)
{
	int r = pthread_create(&st->thread, NULL, event_thread, st);

	if (r)
		return vm_error_errno(err, r, "cannot start the event thread");
	st->thread_started = true;
	return 0;
}

static int bpf_start(const struct vm_profile_request *req,
		     const struct vm_engine_config *cfg,
		     vm_process_seen_fn *seen, void **state,
		     struct vm_error *err)
{
	_cleanup_free_ int *cpus = NULL;
	struct bpf_state *st;
	size_t n_online = 0;
	int r;

	libbpf_set_print(libbpf_print);
	libbpf_msg[0] = '\0';
	r = new_state(req, seen, state, err);
	if (r < 0)
		return r;
	st = *state;

	r = online_cpus(&cpus, &n_online, err);
	if (r < 0)
		return r;
	r = open_skeleton(st, req, n_online, err);
	if (r < 0)
		return r;
	r = load_skeleton(st, err);
	if (r < 0)
		return r;
	r = fill_targets(st, req, err);
	if (r < 0)
		return r;
	r = attach_tracepoints(st, err);
	if (r < 0)
		return r;
	r = attach_cpus(st, cpus, n_online, req->frequency, err);
	if (r < 0)
		return r;
	return start_event_thread(st, err);
}

/* Per-CPU counter idx summed over CPUs. */
static uint64_t stat_sum(struct bpf_state *st, uint32_t idx)
{
	uint64_t *v, sum = 0;

	if (!st->skel)
		return 0;
	v = calloc(st->possible_cpus, sizeof(uint64_t));
	if (!v)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(st->skel->maps.stats), &idx, v) ==
	    0)
		for (int i = 0; i < st->possible_cpus; i++)
			sum += v[i];
	free(v);
	return sum;
}

static uint64_t bpf_samples_so_far(void *state)
{
	return state ? stat_sum(state, PROFILE_STAT_SAMPLES) : 0;
}

/* Processes sampled but never captured: now, or from their parent. */
static void complete_processes(struct bpf_state *st)
{
	struct vm_samples *s = &st->samples;

	for (size_t i = 0; i < s->n; i++) {
		uint32_t pid = s->v[i].pid;
		struct vm_process *p = vm_samples_find_process(s, pid), *parent;

		if (p && p->n_maps && !take_execed(st, pid))
			continue;
		if (vm_proc_capture(s, &st->files, pid, "/proc", NULL) == 0)
			continue;
		p = vm_samples_get_process(s, pid);
		if (!p)
			return;
		p->exited = true;
		if (!p->comm[0])
			memcpy(p->comm, s->v[i].comm, sizeof(p->comm));
		if (p->n_maps)
			continue; /* what was captured while it lived */
		for (size_t f = 0; f < st->n_forks; f++) {
			if (st->forks[f].pid != pid)
				continue;
			parent = vm_samples_find_process(s, st->forks[f].ppid);
			/* A child runs its parent's mappings until it execs. */
			for (size_t m = 0; parent && m < parent->n_maps; m++)
				vm_process_add_mapping(p, &parent->maps[m]);
			break;
		}
	}
}

static int bpf_collect(void *state, struct vm_samples *out,
		       struct vm_error *err)
{
	struct bpf_state *st = state;

	detach(st);
	/* Records and announcements still queued: the thread has stopped. */
	ring_buffer__consume(st->rb);

	if (vm_stack_counts_to_samples(&st->counts, &st->samples))
		return vm_error_set(err, ENOMEM, "out of memory");
	/* Never more than the ring buffer or the counts' bound lost. */
	st->samples.lost_samples =
		stat_sum(st, PROFILE_STAT_RECORDS_LOST) + st->counts.dropped;
	complete_processes(st);
	for (size_t i = 0; i < st->samples.n_procs; i++)
		if (!st->samples.procs[i].exited)
			refresh_title(&st->samples.procs[i]);

	*out = st->samples;
	memset(&st->samples, 0, sizeof(st->samples));
	return 0;
}

/* This window's share of a per-CPU counter. */
static uint64_t stat_window(struct bpf_state *st, uint32_t idx)
{
	uint64_t now = stat_sum(st, idx), d = now - st->stats_sealed[idx];

	st->stats_sealed[idx] = now;
	return d;
}

/*
 * The window's processes, copied: the state keeps them (and the files
 * they map) for the windows after.  A process gone is forgotten one window
 * after it was found gone, and unsampled in that window too: samples it
 * left in the window that follows still find its mappings.  Its pid leaves
 * `seen` with it, so that a new process with the same pid is announced.
 * Without this, an hour of short-lived backends would pile up here.
 */
static int window_processes(struct bpf_state *st, struct vm_samples *out)
{
	int seen_fd = bpf_map__fd(st->skel->maps.seen);
	size_t keep = 0;

	for (size_t i = 0; i < st->samples.n_procs; i++) {
		struct vm_process *p = &st->samples.procs[i], *q;
		bool sampled = false, was_gone = p->exited;

		for (size_t j = 0; j < out->n && !sampled; j++)
			sampled = out->v[j].pid == p->pid;
		if (sampled && !p->exited)
			refresh_title(p);
		else if (!p->exited && kill((pid_t)p->pid, 0) < 0 &&
			 errno == ESRCH)
			p->exited = true;
		if (sampled) {
			q = vm_samples_get_process(out, p->pid);
			if (!q)
				return -ENOMEM;
			memcpy(q->comm, p->comm, sizeof(q->comm));
			q->exited = p->exited;
			q->title = p->title ? strdup(p->title) : NULL;
			for (size_t m = 0; m < p->n_maps; m++)
				if (vm_process_add_mapping(q, &p->maps[m]) < 0)
					return -ENOMEM;
		}
		if (was_gone && !sampled) {
			bpf_map_delete_elem(seen_fd, &p->pid);
			vm_process_clear(p);
			continue;
		}
		if (keep != i)
			st->samples.procs[keep] = *p;
		keep++;
	}
	st->samples.n_procs = keep;
	return 0;
}

/*
 * A continuous session's window: the reader thread cuts it (cut_window)
 * while sampling goes on, so each sample is in exactly one window and the
 * program is never reloaded.
 */
static int bpf_seal(void *state, struct vm_samples *out, struct vm_error *err)
{
	struct bpf_state *st = state;
	struct vm_stack_counts cut;
	uint64_t one = 1, asked;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (st->seal_fd < 0 || !st->thread_started)
		return vm_error_set(err, EINVAL,
				    "this profile does not cut windows");
	pthread_mutex_lock(&st->lock);
	asked = ++st->seal_asked;
	pthread_mutex_unlock(&st->lock);
	if (write(st->seal_fd, &one, sizeof(one)) < 0)
		return vm_error_errno(err, errno, "cannot ask for a window");
	pthread_mutex_lock(&st->lock);
	while (st->seal_done < asked)
		pthread_cond_wait(&st->sealed_cond, &st->lock);
	cut = st->sealed;
	memset(&st->sealed, 0, sizeof(st->sealed));
	if (vm_stack_counts_to_samples(&cut, &st->samples)) {
		r = vm_error_set(err, ENOMEM, "out of memory");
	} else {
		complete_processes(st);
		/* The samples move to out; the processes are copied. */
		out->v = st->samples.v;
		out->n = st->samples.n;
		out->cap = st->samples.cap;
		st->samples.v = NULL;
		st->samples.n = st->samples.cap = 0;
		if (window_processes(st, out) < 0)
			r = vm_error_set(err, ENOMEM, "out of memory");
	}
	pthread_mutex_unlock(&st->lock);
	out->lost_samples =
		stat_window(st, PROFILE_STAT_RECORDS_LOST) + cut.dropped;
	vm_stack_counts_free(&cut);
	return r;
}

const struct vm_backend_ops vm_bpf_backend = {
	.name = "bpf",
	.start = bpf_start,
	.samples_so_far = bpf_samples_so_far,
	.collect = bpf_collect,
	.seal = bpf_seal,
	.destroy = bpf_destroy,
};
