// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_backend.c - the eBPF backend: for a CPU profile, loads
 * bpf/profile.bpf.c through its skeleton, opens a CPU-clock perf event on
 * every online CPU and attaches the sampling program to each; for an
 * off-CPU profile, loads bpf/offcpu.bpf.c and attaches it to the
 * sched_switch raw tracepoint; for a wall-clock profile, both.  Each
 * object follows forks and execs with raw tracepoints of its own.  Both
 * programs send their samples and blocks with their stacks on a ring
 * buffer (bpf/stacks.bpf.h), which a thread drains while the profile runs,
 * counting identical records (bpf_read.c); at the end they become one
 * struct vm_samples: CPU samples as running, off-CPU blocks as blocked,
 * with the blocks still going (bpf_offcpu.c).
 *
 * Every process captured that is PostgreSQL of a known version is told
 * to the programs (bpf_pg.c), which then read its wait event and query
 * id at every sample and switch.
 *
 * While the profile runs, a thread reads the program's announcements
 * (first sample of a process, exec of a target) from the ring buffer and
 * captures each new process from /proc (proc.c) before it can exit.  The
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
#include "agent/profile/bpf/bpf_offcpu.h"
#include "agent/profile/bpf/bpf_preblocked.h"
#include "agent/profile/bpf/bpf_pg.h"
#include "agent/profile/bpf/bpf_read.h"
#include "agent/profile/bpf/bpf_sizing.h"
#include "agent/samples/proc.h"
#include "agent/symbolize/symbolize.h"
#include "bpf/profile.h"
#include "bpf/offcpu.skel.h"
#include "bpf/profile.skel.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"

/* The BPF side's filter holds every command name a request may give. */
_Static_assert(PROFILE_MAX_COMMS >= VM_MAX_TARGETS,
	       "target_comms is smaller than VM_MAX_TARGETS");
_Static_assert(PROFILE_COMM_LEN == VM_COMM_LEN,
	       "the BPF side's command names are not VM_COMM_LEN long");
_Static_assert((int)PROFILE_SCHED_RUNNABLE == (int)VM_SCHED_RUNNABLE &&
		       (int)PROFILE_SCHED_SLEEPING == (int)VM_SCHED_SLEEPING &&
		       (int)PROFILE_SCHED_UNINTERRUPTIBLE ==
			       (int)VM_SCHED_UNINTERRUPTIBLE,
	       "the BPF side's scheduler states are not the sample model's");

struct fork_rec {
	uint32_t pid, ppid;
};

/* The objects a profile of any kind loads: at most both programs. */
#define MAX_OBJS 2

struct bpf_state {
	struct profile_bpf *skel; /* the CPU profiler; NULL for offcpu */
	struct offcpu_bpf *off; /* the off-CPU profiler; NULL for cpu */
	struct bpf_object *objs[MAX_OBJS]; /* those loaded, either way */
	size_t n_objs;
	struct bpf_link **tp_links; /* their raw tracepoints */
	size_t n_tp_links;
	/* Each object's records, counted by the reader thread, then collect. */
	struct record_sink {
		struct bpf_state *st;
		struct vm_stack_counts counts;
	} sinks[MAX_OBJS];
	/* The off-CPU program's blocks, started and not yet ended. */
	struct vm_offcpu_join join;
	struct vm_pg_cache pg; /* the postgres executable last read */
	uint64_t start_ns; /* CLOCK_MONOTONIC when everything was attached */
	uint32_t *running; /* the targets running as the profile starts */
	size_t n_running;
	/* off-CPU: the targets' threads as the profile started */
	struct vm_thread_switches *threads;
	size_t n_threads, cap_threads;
	/* off-CPU: the targets' threads blocked before the programs attached */
	struct vm_pre_blocked_set pre;
	int *perf_fds;
	struct bpf_link **links;
	size_t n_cpus;
	int possible_cpus;
	struct ring_buffer *rb; /* events and stack_records of each object */
	pthread_t thread;
	bool thread_started;
	pthread_t capturer; /* captures the targets already running */
	bool capturer_started;
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

static int map_fd(struct bpf_object *obj, const char *name)
{
	return bpf_map__fd(bpf_object__find_map_by_name(obj, name));
}

/*
 * Tell every program where PostgreSQL process pid keeps its labels (its
 * children inherit it in the kernel); called with the lock held.
 */
static void register_pg(struct bpf_state *st, uint32_t pid)
{
	struct vm_process *p = vm_samples_find_process(&st->samples, pid);
	struct pg_proc pp;

	if (!p || p->pg_major || vm_bpf_pg_locate(&st->pg, "/proc", p, &pp))
		return;
	for (size_t i = 0; i < st->n_objs; i++)
		bpf_map_update_elem(map_fd(st->objs[i], "pg_procs"), &pid, &pp,
				    BPF_ANY);
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
		register_pg(st, e.pid);
	} else if (p && p->n_maps && !take_execed(st, e.pid)) {
		refresh_title(p);
	} else if (vm_proc_capture(&st->samples, &st->files, e.pid, "/proc",
				   NULL) == 0) {
		register_pg(st, e.pid);
		p = vm_samples_find_process(&st->samples, e.pid);
		if (p)
			st->seen(p);
	}
	pthread_mutex_unlock(&st->lock);
	return 0;
}

/*
 * The targets already running (found before the programs attached, see
 * find_running): each captured and its PostgreSQL labels told to the
 * programs (again, now with its version kept for naming); for an off-CPU
 * profile, how often their threads have been switched so far; then their
 * symbols read (slow).
 */
static void *capture_running(void *arg)
{
	struct bpf_state *st = arg;
	const uint32_t *pids = st->running;
	size_t n_pids = st->n_running;

	for (size_t i = 0; i < n_pids; i++) {
		struct vm_process *p;

		pthread_mutex_lock(&st->lock);
		p = vm_samples_find_process(&st->samples, pids[i]);
		if (!p || !p->n_maps)
			vm_proc_capture(&st->samples, &st->files, pids[i],
					"/proc", NULL);
		register_pg(st, pids[i]);
		pthread_mutex_unlock(&st->lock);
	}
	if (st->off) {
		pthread_mutex_lock(&st->lock);
		vm_bpf_snapshot_threads("/proc", pids, n_pids, &st->threads,
					&st->n_threads, &st->cap_threads);
		pthread_mutex_unlock(&st->lock);
	}
	for (size_t i = 0; i < n_pids; i++) {
		struct vm_process *p;

		pthread_mutex_lock(&st->lock);
		p = vm_samples_find_process(&st->samples, pids[i]);
		if (p)
			st->seen(p);
		pthread_mutex_unlock(&st->lock);
	}
	return NULL;
}

/* A sample or block with its stacks: counted, whatever else happens. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct record_sink *sink = ctx;

	vm_stack_counts_add(&sink->counts, data, size);
	return 0;
}

/* An off-CPU block's start or end: joined, then counted. */
static int on_offcpu_record(void *ctx, void *data, size_t size)
{
	struct bpf_state *st = ctx;

	vm_offcpu_join_add(&st->join, data, size);
	return 0;
}

/*
 * How often the thread of an on-demand profile drains the stack records
 * when no wakeup comes: the programs wake it only once a quarter of a ring
 * buffer is used.  A continuous session's thread has no timer: at its low
 * frequency a quarter of the ring is seconds of samples, and every cut
 * drains the ring first, so it wakes only for those, for announcements
 * and to stop (a timer was most of its CPU time: 10 wakeups a second).
 */
#define DRAIN_MS 100

/* The index of an object among those loaded (its sink's). */
static size_t obj_index(const struct bpf_state *st, struct bpf_object *obj)
{
	size_t i = 0;

	while (i < st->n_objs - 1 && st->objs[i] != obj)
		i++;
	return i;
}

/*
 * Cut a window (continuous sessions): what the ring buffer holds now is
 * counted first, so the window holds every sample taken before the cut
 * and none after; the next one starts empty.
 */
static void cut_window(struct bpf_state *st)
{
	/* A continuous session is a CPU profile: the window is its sink's. */
	struct vm_stack_counts *cpu =
		&st->sinks[obj_index(st, st->skel->obj)].counts;
	uint64_t n;

	if (read(st->seal_fd, &n, sizeof(n)) < 0)
		return;
	ring_buffer__consume(st->rb);
	pthread_mutex_lock(&st->lock);
	vm_stack_counts_free(&st->sealed);
	st->sealed = *cpu;
	vm_stack_counts_init(cpu, st->counts_bytes);
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

	bool continuous = st->seal_fd >= 0;

	for (;;) {
		if (poll(pfd, continuous ? 3 : 2, continuous ? -1 : DRAIN_MS) <
			    0 &&
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
		/*
		 * The program would drop an idle CPU's sample (pid 0) at
		 * once: the kernel does not even run it.
		 */
		.exclude_idle = 1,
	};

	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

static void *release_tracepoints(void *arg)
{
	struct bpf_state *st = arg;

	for (size_t i = 0; i < st->n_tp_links; i++) {
		bpf_link__destroy(st->tp_links[i]);
		st->tp_links[i] = NULL;
	}
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
	if (pthread_create(&st->releaser, NULL, release_tracepoints, st) == 0)
		st->releaser_started = true;
	else
		release_tracepoints(st);
	if (st->capturer_started) {
		pthread_join(st->capturer, NULL);
		st->capturer_started = false;
	}
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
	free(st->tp_links);
	for (size_t i = 0; i < MAX_OBJS; i++)
		vm_stack_counts_free(&st->sinks[i].counts);
	vm_offcpu_join_free(&st->join);
	profile_bpf__destroy(st->skel);
	offcpu_bpf__destroy(st->off);
	vm_pg_cache_free(&st->pg);
	vm_pre_blocked_free(&st->pre);
	free(st->perf_fds);
	free(st->links);
	if (st->stop_fd >= 0)
		close(st->stop_fd);
	vm_samples_free(&st->samples);
	vm_stack_counts_free(&st->sealed);
	if (st->seal_fd >= 0)
		close(st->seal_fd);
	pthread_cond_destroy(&st->sealed_cond);
	vm_proc_files_free(&st->files);
	free(st->forks);
	free(st->execed);
	free(st->threads);
	free(st->running);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

/* What the target filter of one object matches (targets.bpf.h). */
static int fill_targets(struct bpf_object *obj,
			const struct vm_profile_request *req,
			struct vm_error *err)
{
	int fd_comms = map_fd(obj, "target_comms");
	int fd_pids = map_fd(obj, "target_pids");
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

/* What the target filter of every program sees (targets.bpf.h). */
#define SET_FILTER(skel, req)                                     \
	do {                                                      \
		(skel)->rodata->filter_comm = (req)->n_comms > 0; \
		(skel)->rodata->filter_pid = (req)->n_pids > 0;   \
		(skel)->rodata->self_tgid = getpid();             \
	} while (0)

static void set_size(struct bpf_object *obj, const char *name, uint32_t n)
{
	bpf_map__set_max_entries(bpf_object__find_map_by_name(obj, name), n);
}

/*
 * The maps targets.bpf.h and stacks.bpf.h give every program, and the
 * bound of the records user space keeps of it.
 */
static void add_object(struct bpf_state *st, struct bpf_object *obj,
		       const struct vm_bpf_sizes *sz)
{
	st->sinks[st->n_objs].st = st;
	vm_stack_counts_init(&st->sinks[st->n_objs].counts, sz->counts_bytes);
	st->objs[st->n_objs++] = obj;
	set_size(obj, "stack_records", sz->records_ring);
	set_size(obj, "seen", sz->seen);
	set_size(obj, "target_pids", sz->pids);
	set_size(obj, "children", sz->children);
}

/*
 * The skeletons the kind needs opened, not loaded: what the programs
 * filter on goes into their rodata, and their maps are sized for this
 * profile (bpf_sizing.c).
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

	if (req->kind != VM_KIND_OFFCPU) {
		st->skel = profile_bpf__open();
		if (!st->skel)
			return vm_error_errno(
				err, errno,
				"cannot open the BPF profiler object");
		SET_FILTER(st->skel, req);
		add_object(st, st->skel->obj, &sz);
	}
	if (req->kind != VM_KIND_CPU) {
		/*
		 * Blocks come at the rate threads switch, not at the sampling
		 * frequency, which an off-CPU profile does not use: its maps
		 * are never sized for less than the default frequency.
		 */
		if (req->frequency < VM_FREQUENCY_DEFAULT)
			vm_bpf_map_sizes(VM_FREQUENCY_DEFAULT, n_online,
					 req->seconds, req->n_pids > 0, &sz);
		st->off = offcpu_bpf__open();
		if (!st->off)
			return vm_error_errno(
				err, errno,
				"cannot open the BPF off-CPU profiler object");
		SET_FILTER(st->off, req);
		add_object(st, st->off->obj, &sz);
		/* A wall-clock profile counts every block: the time adds up. */
		vm_offcpu_join_init(&st->join,
				    &st->sinks[st->n_objs - 1].counts,
				    req->kind == VM_KIND_OFFCPU ?
					    (uint64_t)req->min_block_us * 1000 :
					    0,
				    sz.blocked);
		set_size(st->off->obj, "stack_records", sz.blocks_ring);
		set_size(st->off->obj, "blocked", sz.blocked);
	}
	st->counts_bytes = sz.counts_bytes;
	if (req->continuous) {
		st->seal_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (st->seal_fd < 0)
			return vm_error_errno(err, errno,
					      "cannot create an eventfd");
	}
	return 0;
}

/*
 * Create the maps and have the kernel verify the programs.  A refusal
 * says what the profiler needs, with libbpf's last complaint: libbpf's
 * own output is kept off stderr (libbpf_print).
 */
static int load_skeleton(struct bpf_state *st, struct vm_error *err)
{
	int r = 0;

	if (st->skel)
		r = profile_bpf__load(st->skel);
	if (!r && st->off)
		r = offcpu_bpf__load(st->off);
	if (!r)
		return 0;
	r = errno ? errno : -r;
	return vm_error_set(
		err, r == EPERM || r == EACCES ? EPERM : ENODEV,
		"the kernel refused the BPF profiler (%s%s%s); it needs root (CAP_BPF and CAP_PERFMON) and a kernel with BPF, perf events and BPF ring buffers (5.8 or later)",
		strerror(r), libbpf_msg[0] ? ": " : "", libbpf_msg);
}

/*
 * The ring buffer the announcements of every program arrive in and the
 * eventfd that stops the thread reading it, then the raw tracepoints:
 * execs, forks and exits, and for the off-CPU profiler context switches
 * and freed tasks.  Every program but the perf_event one is a raw
 * tracepoint libbpf attaches by its section name.
 */
static int attach_tracepoints(struct bpf_state *st, struct vm_error *err)
{
	struct bpf_program *prog;
	size_t n = 0;

	st->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	st->rb = ring_buffer__new(map_fd(st->objs[0], "events"), on_event, st,
				  NULL);
	for (size_t i = 0; st->rb && i < st->n_objs; i++) {
		/* The off-CPU program's records are blocks' starts and ends. */
		bool off = st->off && st->objs[i] == st->off->obj;

		if ((i > 0 &&
		     ring_buffer__add(st->rb, map_fd(st->objs[i], "events"),
				      on_event, st)) ||
		    ring_buffer__add(st->rb,
				     map_fd(st->objs[i], "stack_records"),
				     off ? on_offcpu_record : on_record,
				     off ? (void *)st : &st->sinks[i]))
			return vm_error_errno(
				err, errno,
				"cannot set up the BPF event ring buffer");
	}
	if (st->stop_fd < 0 || !st->rb)
		return vm_error_errno(
			err, errno, "cannot set up the BPF event ring buffer");
	for (size_t i = 0; i < st->n_objs; i++)
		bpf_object__for_each_program(prog, st->objs[i])
			n++;
	st->tp_links = calloc(n ? n : 1, sizeof(*st->tp_links));
	if (!st->tp_links)
		return vm_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < st->n_objs; i++)
		bpf_object__for_each_program(prog, st->objs[i]) {
			const char *sec = bpf_program__section_name(prog);
			struct bpf_link *l;

			if (bpf_program__type(prog) ==
				    BPF_PROG_TYPE_PERF_EVENT ||
			    !strcmp(bpf_program__name(prog),
				    "on_switch_compat"))
				continue;
			l = bpf_program__attach(prog);
			/* A kernel before 5.18: no prev_state. */
			if (!l && errno == EINVAL && st->off &&
			    prog == st->off->progs.on_switch)
				l = bpf_program__attach(
					st->off->progs.on_switch_compat);
			if (!l)
				return vm_error_errno(
					err, errno,
					"cannot attach to the %s tracepoint",
					strchr(sec, '/') ?
						strchr(sec, '/') + 1 :
						sec);
			st->tp_links[st->n_tp_links++] = l;
		}
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
	if (!st->skel)
		return 0; /* an off-CPU profile samples nothing */
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

/*
 * The targets running now, and where each PostgreSQL one keeps its labels
 * told to the programs before they attach, so that the first sample or
 * switch of every backend is labelled: the backend waiting on a lock when
 * the profile starts is switched out once.  Capturing them (slow) is left
 * to the event thread.
 */
static void find_running(struct bpf_state *st)
{
	/* Without a list of /proc, only the announcements find targets. */
	if (vm_proc_scan_targets("/proc", (const char *const *)st->req.comms,
				 st->req.n_comms, st->req.pids, st->req.n_pids,
				 &st->running, &st->n_running, NULL) < 0)
		return;
	for (size_t i = 0; i < st->n_running; i++) {
		struct pg_proc pp = { 0 };
		bool pg = vm_bpf_pg_locate_pid(&st->pg, "/proc", st->running[i],
					       &pp) == 0;

		for (size_t o = 0; pg && o < st->n_objs; o++)
			bpf_map_update_elem(map_fd(st->objs[o], "pg_procs"),
					    &st->running[i], &pp, BPF_ANY);
		if (st->off)
			vm_pre_blocked_scan(&st->pre, "/proc", st->running[i],
					    pg ? &pp : NULL);
	}
	vm_pre_blocked_sort(&st->pre);
	/* The program tells when each is first switched in. */
	for (size_t i = 0; st->off && i < st->pre.n; i++) {
		__u64 zero = 0;

		bpf_map_update_elem(bpf_map__fd(st->off->maps.pre_blocked),
				    &st->pre.v[i].tid, &zero, BPF_NOEXIST);
	}
}

/* Last: capturing must not slow attaching down (see the thread). */
static int start_event_thread(struct bpf_state *st, struct vm_error *err)
{
	int r = pthread_create(&st->thread, NULL, event_thread, st);

	if (r)
		return vm_error_errno(err, r, "cannot start the event thread");
	st->thread_started = true;
	/*
	 * Off the start path and beside the reader, which drains the records
	 * meanwhile: capture the targets that already ran and read their
	 * symbols while they are being profiled.
	 */
	r = pthread_create(&st->capturer, NULL, capture_running, st);
	if (r)
		return vm_error_errno(err, r,
				      "cannot start the capturing thread");
	st->capturer_started = true;
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
	for (size_t i = 0; r >= 0 && i < st->n_objs; i++)
		r = fill_targets(st->objs[i], req, err);
	if (r < 0)
		return r;
	find_running(st);
	r = attach_tracepoints(st, err);
	if (r < 0)
		return r;
	r = attach_cpus(st, cpus, n_online, req->frequency, err);
	if (r < 0)
		return r;
	st->start_ns = vm_clock_ns(CLOCK_MONOTONIC);
	return start_event_thread(st, err);
}

/* Per-CPU counter idx summed over CPUs and programs. */
static uint64_t stat_sum(struct bpf_state *st, uint32_t idx)
{
	uint64_t *v, sum = 0;

	v = calloc(st->possible_cpus > 0 ? st->possible_cpus : 1,
		   sizeof(uint64_t));
	if (!v)
		return 0;
	for (size_t o = 0; o < st->n_objs; o++)
		if (bpf_map_lookup_elem(map_fd(st->objs[o], "stats"), &idx,
					v) == 0)
			for (int i = 0; i < st->possible_cpus; i++)
				sum += v[i];
	free(v);
	return sum;
}

/* Samples, or switches out for an off-CPU profile. */
static uint64_t bpf_samples_so_far(void *state)
{
	if (!state)
		return 0;
	return stat_sum(state, PROFILE_STAT_SAMPLES) +
	       stat_sum(state, PROFILE_STAT_SWITCHES);
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
			/* And the labels' layout it inherited in the kernel. */
			if (parent) {
				p->pg_major = parent->pg_major;
				p->pg_minor = parent->pg_minor;
			}
			break;
		}
	}
}

/* The thread tid of those blocked before the programs attached, or NULL. */
static const struct vm_pre_blocked *pre_blocked(const struct bpf_state *st,
						uint32_t tid)
{
	return vm_pre_blocked_find(&st->pre, tid);
}

/*
 * A block that began before the profile, worth value ns: on the stack
 * /proc gave as the profile started when there is one (a user pc and the
 * kernel stack), else none; its state, wait event and query id from
 * then when known, else state (the letter), wait_event and query_id.
 */
static int add_early_block(struct bpf_state *st, uint32_t pid, uint32_t tid,
			   uint64_t value, char state, uint32_t wait_event,
			   uint64_t query_id)
{
	const struct vm_pre_blocked *pre = pre_blocked(st, tid);
	const struct vm_process *p = vm_samples_find_process(&st->samples, pid);
	struct vm_sample *x;

	if (vm_samples_add(&st->samples, pid, tid, p ? p->comm : NULL, 1,
			   pre && pre->user_pc ? &pre->user_pc : NULL,
			   pre && pre->user_pc ? 1 : 0,
			   pre ? pre->kernel_ips : NULL,
			   pre ? pre->n_kernel : 0))
		return -ENOMEM;
	x = &st->samples.v[st->samples.n - 1];
	if (pre) {
		state = pre->state;
		/* Read as the profile started; else now (the same, asleep). */
		if (pre->wait_event)
			wait_event = pre->wait_event;
		if (pre->query_id)
			query_id = pre->query_id;
	}
	x->state = VM_STATE_BLOCKED;
	x->sched_state = state == 'D' ? VM_SCHED_UNINTERRUPTIBLE :
					VM_SCHED_SLEEPING;
	x->value = value;
	x->wait_event = wait_event;
	x->query_id = query_id;
	x->before_start = 1;
	return 0;
}

/*
 * A thread blocked as the profile started (st->pre) that has not been
 * switched out since, and runs now: woken during the profile, it has run
 * without a break, so the program saw only its switch in, a task pointer
 * it cannot tie to the thread.  Its block ended when it began to run:
 * now less the CPU time it has used since the start (schedstat, to the
 * last tick; all of the profile when it has not run yet).
 */
static int add_woken_runner(struct bpf_state *st,
			    const struct vm_thread_switches *t, uint64_t end_ns)
{
	const struct vm_pre_blocked *pre = pre_blocked(st, t->tid);
	uint64_t ran, now, woke;

	if (!pre || !vm_bpf_running_since("/proc", t, &ran))
		return 0;
	now = vm_clock_ns(CLOCK_MONOTONIC);
	woke = now > ran ? now - ran : 0;
	if (woke > end_ns)
		woke = end_ns;
	if (woke <= st->start_ns || woke - st->start_ns < st->join.min_ns)
		return 0;
	return add_early_block(st, t->pid, t->tid, woke - st->start_ns,
			       pre->state, pre->wait_event, pre->query_id);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The threads of samples first.. (the off-CPU program's), sorted: whether
 * each of tens of thousands of threads was seen is then a binary search.
 */
static uint32_t *seen_tids(const struct bpf_state *st, size_t first, size_t *n)
{
	uint32_t *v;

	*n = st->samples.n - first;
	v = malloc((*n ? *n : 1) * sizeof(*v));
	if (!v)
		return NULL;
	for (size_t j = 0; j < *n; j++)
		v[j] = st->samples.v[first + j].tid;
	qsort(v, *n, sizeof(*v), cmp_u32);
	return v;
}

/*
 * Threads blocked since before the start that never ran: the program saw
 * no switch of theirs, so no stack but the one /proc gave at the start;
 * their wait event and query id are read now when none was read at the
 * start: the ones they had all along.  Samples from index first on are the
 * off-CPU program's.
 */
static int add_sleepers(struct bpf_state *st, size_t first, uint64_t end_ns)
{
	int fd = map_fd(st->off->obj, "pg_procs");
	size_t n_seen;
	_cleanup_free_ uint32_t *seen = seen_tids(st, first, &n_seen);

	if (!seen)
		return -ENOMEM;
	for (size_t i = 0; i < st->n_threads; i++) {
		const struct vm_thread_switches *t = &st->threads[i];
		uint32_t wait_event = 0;
		uint64_t query_id = 0;
		struct pg_proc pp;
		char task_state;

		if (n_seen &&
		    bsearch(&t->tid, seen, n_seen, sizeof(*seen), cmp_u32))
			continue;
		if (!vm_bpf_slept_throughout("/proc", t, &task_state)) {
			if (add_woken_runner(st, t, end_ns))
				return -ENOMEM;
			continue;
		}
		if (bpf_map_lookup_elem(fd, &t->pid, &pp) == 0)
			vm_bpf_pg_read_labels(t->pid, &pp, &wait_event,
					      &query_id);
		if (add_early_block(st, t->pid, t->tid, end_ns - st->start_ns,
				    task_state, wait_event, query_id))
			return -ENOMEM;
	}
	return 0;
}

/*
 * Threads blocked before the programs attached that then ran: blocked
 * from the start until their first switch in, which the program kept in
 * `pre_blocked` (offcpu.bpf.c).
 */
static int add_pre_blocks(struct bpf_state *st, uint64_t end_ns)
{
	int fd = bpf_map__fd(st->off->maps.pre_blocked);

	vm_pre_blocked_resolve(&st->pre, vm_symbolize_kernel_addrs);
	for (size_t i = 0; i < st->pre.n; i++) {
		const struct vm_pre_blocked *pre = &st->pre.v[i];
		__u64 in = 0;

		if (bpf_map_lookup_elem(fd, &pre->tid, &in) ||
		    in <= PRE_BLOCKED_RAN || in <= st->start_ns)
			continue;
		/* Switched in as the programs were being detached. */
		if (in > end_ns)
			in = end_ns;
		if (in - st->start_ns < st->join.min_ns)
			continue;
		if (add_early_block(st, pre->pid, pre->tid, in - st->start_ns,
				    pre->state, pre->wait_event, pre->query_id))
			return -ENOMEM;
	}
	return 0;
}

/*
 * The off-CPU profiler's blocks, those still going ending at end_ns, and
 * the threads that slept throughout.
 */
static int collect_offcpu(struct bpf_state *st, uint64_t end_ns,
			  struct vm_error *err)
{
	struct vm_stack_counts *c =
		&st->sinks[obj_index(st, st->off->obj)].counts;
	size_t first = st->samples.n;

	vm_offcpu_join_finish(&st->join, bpf_map__fd(st->off->maps.blocked),
			      end_ns, "/proc");
	if (vm_stack_counts_to_blocks(c, &st->samples) ||
	    add_sleepers(st, first, end_ns) || add_pre_blocks(st, end_ns))
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}

static int bpf_collect(void *state, struct vm_samples *out,
		       struct vm_error *err)
{
	struct bpf_state *st = state;
	uint64_t end_ns;
	int r = 0;

	/*
	 * The profile ends now, as sampling stops: blocks still going end
	 * here too, and the profile's duration is this window's, not the
	 * time collecting then takes (reading /proc, kallsyms: under load
	 * hundreds of ms, which every thread's running + blocked would lack).
	 */
	end_ns = vm_clock_ns(CLOCK_MONOTONIC);
	detach(st);
	st->samples.duration_nanos = end_ns - st->start_ns;
	/* Records and announcements still queued: the thread has stopped. */
	ring_buffer__consume(st->rb);

	if (st->skel && vm_stack_counts_to_samples(
				&st->sinks[obj_index(st, st->skel->obj)].counts,
				&st->samples))
		return vm_error_set(err, ENOMEM, "out of memory");
	if (st->off) {
		r = collect_offcpu(st, end_ns, err);
		if (r < 0)
			return r;
	}

	/* Never more than the ring buffers or the counts' bounds lost. */
	st->samples.lost_samples = stat_sum(st, PROFILE_STAT_RECORDS_LOST) +
				   stat_sum(st, PROFILE_STAT_BLOCKED_FULL);
	for (size_t i = 0; i < st->n_objs; i++)
		st->samples.lost_samples += st->sinks[i].counts.dropped;
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
	/* The files only forgotten processes mapped are closed now. */
	vm_proc_files_drop_unused(&st->files, &st->samples);
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
