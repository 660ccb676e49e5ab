// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_backend.c - the eBPF backend: for a CPU profile, loads
 * bpf/profile.bpf.c through its skeleton, opens a CPU-clock perf event on
 * every online CPU and attaches the sampling program to each (for a
 * faults profile, its page-fault program to a page-fault event); for an
 * off-CPU profile, loads bpf/offcpu.bpf.c and attaches it to the
 * sched_switch raw tracepoint; for a wall-clock profile, both.  Each
 * object follows forks and execs with raw tracepoints of its own.  Both
 * programs send their samples and blocks with their stacks on a ring
 * buffer (bpf/stacks.bpf.h), which a thread drains while the profile runs,
 * counting identical records (bpf_stack_counts.c); at the end they become
 * one struct vm_samples: CPU samples as running, off-CPU blocks as
 * blocked, with the blocks still going (bpf_blocks.c).
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
 *
 * The files, each calling only those below it (bpf_int.h): this one
 * loads, attaches, reads the ring buffer and ends the session;
 * bpf_cpu.c and bpf_offcpu.c drive one program each; bpf_capture.c
 * follows the processes; bpf_core.c holds the state and the maps both
 * programs have.
 */
#include "agent/profile/bpf/bpf_int.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/cleanup.h"
#include "common/clock.h"

/*
 * libbpf's last complaint, to put in our error instead of on stderr.  Per
 * thread: libbpf reports on the thread that called it, and two sessions
 * may be starting at once.
 */
static _Thread_local char libbpf_msg[256];
/* The verifier's last words: the lines before the end of its log. */
static _Thread_local char verifier_msg[256];

/* The last two lines of the verifier's log in buf, into verifier_msg. */
static void keep_verifier_words(const char *buf)
{
	const char *end = strstr(buf, "-- END PROG LOAD LOG --"), *p;
	int lines = 0;

	if (!end)
		return;
	p = end;
	while (p > buf && lines < 3)
		if (*--p == '\n')
			lines++;
	if (*p == '\n')
		p++;
	snprintf(verifier_msg, sizeof(verifier_msg), "%.*s", (int)(end - p), p);
	for (char *c = verifier_msg; *c; c++)
		if (*c == '\n')
			*c = ' ';
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt,
			va_list ap)
{
	char buf[sizeof(libbpf_msg)];
	va_list aq;

	if (level == LIBBPF_DEBUG)
		return 0;
	if (strstr(fmt, "BEGIN PROG LOAD LOG")) {
		_cleanup_free_ char *all = NULL;

		va_copy(aq, ap);
		if (vasprintf(&all, fmt, aq) >= 0)
			keep_verifier_words(all);
		else
			all = NULL;
		va_end(aq);
	}
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
	int r;

	/* The per-CPU stats map has a slot per possible CPU, not online. */
	st->possible_cpus = libbpf_num_possible_cpus();
	if (st->possible_cpus <= 0)
		return vm_error_set(err, EIO, "cannot count the possible CPUs");
	vm_bpf_map_sizes(req->frequency, n_online, req->seconds,
			 req->n_pids > 0, &sz);

	if (req->kind != VM_KIND_OFFCPU) {
		r = vm_bpf_cpu_open(st, req, &sz, err);
		if (r < 0)
			return r;
	}
	if (req->kind == VM_KIND_OFFCPU || req->kind == VM_KIND_WALL) {
		r = vm_bpf_offcpu_open(st, req, n_online, &sz, err);
		if (r < 0)
			return r;
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
 * The skeletons opened again without the unwind tables, after the kernel
 * refused the programs with them: one before Linux 5.17 has no bpf_loop,
 * and walks every stack by frame pointer as before.
 */
static int load_without_unwinding(struct bpf_state *st,
				  const struct vm_profile_request *req,
				  size_t n_online, struct vm_error *err)
{
	profile_bpf__destroy(st->skel);
	offcpu_bpf__destroy(st->off);
	st->skel = NULL;
	st->off = NULL;
	for (size_t i = 0; i < st->n_objs; i++)
		vm_stack_counts_free(&st->sinks[i].counts);
	st->n_objs = 0;
	vm_offcpu_join_free(&st->join);
	if (st->seal_fd >= 0)
		close(st->seal_fd);
	st->seal_fd = -1;
	vm_bpf_unwind_close(&st->unwind);
	st->unwinding = false;
	vm_bpf_unwind_refused(st->kept->store,
			      verifier_msg[0] ? verifier_msg : libbpf_msg);
	libbpf_msg[0] = '\0';
	if (open_skeleton(st, req, n_online, err) < 0)
		return -1;
	return load_skeleton(st, err);
}

/* A sample or block with its stacks: counted, whatever else happens. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct record_sink *sink = ctx;

	vm_stack_counts_add(&sink->counts, data, size);
	return 0;
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
	st->rb = ring_buffer__new(vm_bpf_map_fd(st->objs[0], "events"),
				  vm_bpf_on_event, st, NULL);
	for (size_t i = 0; st->rb && i < st->n_objs; i++) {
		/*
		 * The off-CPU program's records are blocks' starts and ends;
		 * a fault's has an address to tell the mapping of.
		 */
		bool off = st->off && st->objs[i] == st->off->obj;
		ring_buffer_sample_fn fn = off ? vm_bpf_offcpu_on_record :
					   st->req.kind == VM_KIND_FAULTS ?
						 vm_bpf_faults_on_record :
						 on_record;

		if ((i > 0 &&
		     ring_buffer__add(st->rb,
				      vm_bpf_map_fd(st->objs[i], "events"),
				      vm_bpf_on_event, st)) ||
		    ring_buffer__add(
			    st->rb, vm_bpf_map_fd(st->objs[i], "stack_records"),
			    fn, off ? (void *)st : &st->sinks[i]))
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
 * How often the thread of an on-demand profile drains the stack records
 * when no wakeup comes: the programs wake it only once a quarter of a ring
 * buffer is used.  A continuous session's thread has no timer: at its low
 * frequency a quarter of the ring is seconds of samples, and every cut
 * drains the ring first, so it wakes only for those, for announcements
 * and to stop (a timer was most of its CPU time: 10 wakeups a second).
 */
#define DRAIN_MS 100

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
			vm_bpf_cut_window(st);
		ring_buffer__consume(st->rb);
	}
	return NULL;
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
	vm_bpf_unwind_close(&st->unwind);
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
	vm_fault_maps_free(&st->fault_maps);
	free(st->forks);
	free(st->execed);
	free(st->threads);
	free(st->running);
	pthread_mutex_destroy(&st->lock);
	free(st);
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
	r = pthread_create(&st->capturer, NULL, vm_bpf_capture_running, st);
	if (r)
		return vm_error_errno(err, r,
				      "cannot start the capturing thread");
	st->capturer_started = true;
	return 0;
}

static int bpf_start(const struct vm_profile_request *req,
		     const struct vm_engine_config *cfg, void *kept,
		     vm_process_seen_fn *seen, void **state,
		     struct vm_error *err)
{
	_cleanup_free_ int *cpus = NULL;
	struct bpf_state *st;
	size_t n_online = 0;
	int r;

	libbpf_set_print(libbpf_print);
	libbpf_msg[0] = '\0';
	verifier_msg[0] = '\0';
	r = vm_bpf_new_state(req, cfg, kept, seen, state, err);
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
	if (r < 0 && st->unwinding)
		r = load_without_unwinding(st, req, n_online, err);
	for (size_t i = 0; r >= 0 && i < st->n_objs; i++)
		r = vm_bpf_fill_targets(st->objs[i], req, err);
	if (r < 0)
		return r;
	vm_bpf_find_running(st);
	r = attach_tracepoints(st, err);
	if (r < 0)
		return r;
	r = vm_bpf_cpu_attach(st, cpus, n_online, err);
	if (r < 0)
		return r;
	st->start_ns = vm_clock_ns(CLOCK_MONOTONIC);
	return start_event_thread(st, err);
}

/* Samples, or switches out for an off-CPU profile. */
static uint64_t bpf_samples_so_far(void *state)
{
	if (!state)
		return 0;
	return vm_bpf_stat_sum(state, PROFILE_STAT_SAMPLES) +
	       vm_bpf_stat_sum(state, PROFILE_STAT_SWITCHES);
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

	if (st->skel &&
	    vm_stack_counts_to_samples(
		    &st->sinks[vm_bpf_obj_index(st, st->skel->obj)].counts,
		    &st->samples))
		return vm_error_set(err, ENOMEM, "out of memory");
	if (st->off) {
		r = vm_bpf_offcpu_collect(st, end_ns, err);
		if (r < 0)
			return r;
	}
	if (st->req.kind == VM_KIND_FAULTS) {
		r = vm_bpf_faults_finish(st, &st->samples, err);
		if (r < 0)
			return r;
	}

	/* Never more than the ring buffers or the counts' bounds lost. */
	st->samples.lost_samples =
		vm_bpf_stat_sum(st, PROFILE_STAT_RECORDS_LOST) +
		vm_bpf_stat_sum(st, PROFILE_STAT_BLOCKED_FULL);
	for (size_t i = 0; i < st->n_objs; i++)
		st->samples.lost_samples += st->sinks[i].counts.dropped;
	st->samples.unwound_by_table =
		vm_bpf_stat_sum(st, PROFILE_STAT_FRAMES_TABLE);
	st->samples.unwound_by_frame_pointer =
		vm_bpf_stat_sum(st, PROFILE_STAT_FRAMES_FP);
	st->samples.unwind_cut = vm_bpf_tell_cut(st);
	if (st->unwinding) {
		struct vm_bpf_unwind_stats us;

		vm_bpf_unwind_stats(&st->unwind, &us);
		st->samples.unwind_binaries_skipped = us.bins_skipped;
		st->samples.unwind_processes_skipped = us.procs_skipped;
	}
	vm_bpf_complete_processes(st);
	for (size_t i = 0; i < st->samples.n_procs; i++)
		if (!st->samples.procs[i].exited)
			vm_bpf_refresh_title(&st->samples.procs[i]);

	*out = st->samples;
	memset(&st->samples, 0, sizeof(st->samples));
	return 0;
}

const struct vm_backend_ops vm_bpf_backend = {
	.name = "bpf",
	.kept_new = vm_bpf_kept_new,
	.kept_free = vm_bpf_kept_free,
	.start = bpf_start,
	.samples_so_far = bpf_samples_so_far,
	.collect = bpf_collect,
	.seal = vm_bpf_cpu_seal,
	.destroy = bpf_destroy,
	.release = vm_bpf_kept_release,
	.status = vm_bpf_kept_status,
};
