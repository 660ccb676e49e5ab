// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_cpu.c - the user side of the CPU profiler, bpf/profile.bpf.c
 * (bpf_int.h): its skeleton opened, a CPU-clock perf event opened on
 * every online CPU with the sampling program attached to each, and for a
 * continuous session the windows cut while it samples, each window's
 * processes copied out of those the session keeps.  The faults profiler
 * (bpf_faults.c) is the same object with its other program, attached here
 * to each CPU's page-fault event.
 */
#include "agent/profile/bpf/bpf_int.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/samples/proc.h"

/*
 * The CPU profiler's skeleton opened, not loaded: what it filters on in
 * its rodata, its maps sized (sz, bpf_sizing.c).
 */
int vm_bpf_cpu_open(struct bpf_state *st, const struct vm_profile_request *req,
		    const struct vm_bpf_sizes *sz, struct vm_error *err)
{
	bool faults = req->kind == VM_KIND_FAULTS;

	st->skel = profile_bpf__open();
	if (!st->skel)
		return vm_error_errno(err, errno,
				      "cannot open the BPF profiler object");
	/* One program of the two is loaded: the verifier checks no other. */
	bpf_program__set_autoload(st->skel->progs.do_sample, !faults);
	bpf_program__set_autoload(st->skel->progs.do_fault, faults);
	SET_FILTER(st->skel, req);
	SET_UNWIND(st->skel, st);
	vm_bpf_add_object(st, st->skel->obj, sz);
	return 0;
}

/*
 * The event each CPU samples: its clock at freq Hz, or for a faults
 * profile one page fault in period, with the address that faulted.
 */
static int open_cpu_event(int cpu, const struct vm_profile_request *req)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.size = sizeof(attr),
		.freq = 1,
		.sample_freq = req->frequency,
		/*
		 * The program would drop an idle CPU's sample (pid 0) at
		 * once: the kernel does not even run it.
		 */
		.exclude_idle = 1,
	};

	if (req->kind == VM_KIND_FAULTS) {
		attr.config = PERF_COUNT_SW_PAGE_FAULTS;
		attr.freq = 0;
		attr.sample_period = req->period;
		attr.sample_type = PERF_SAMPLE_ADDR;
	}
	return syscall(__NR_perf_event_open, &attr, -1, cpu, -1,
		       PERF_FLAG_FD_CLOEXEC);
}

/*
 * A CPU-clock (or page-fault) perf event on each online CPU, the sampling
 * program attached to it.  Every slot is -1 or NULL before n_cpus says
 * how many there are, so detach() closes only what was opened.
 */
int vm_bpf_cpu_attach(struct bpf_state *st, const int *cpus, size_t n_online,
		      struct vm_error *err)
{
	bool faults = st->req.kind == VM_KIND_FAULTS;

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
		st->perf_fds[i] = open_cpu_event(cpus[i], &st->req);
		if (st->perf_fds[i] < 0) {
			if (errno == ENODEV)
				continue; /* went offline meanwhile */
			return vm_error_errno(
				err, errno == EACCES ? EPERM : errno,
				"cannot open a %s perf event on CPU %d (is kernel.perf_event_paranoid too strict, or CONFIG_PERF_EVENTS off?)",
				faults ? "page-fault" : "CPU-clock", cpus[i]);
		}
		st->links[i] = bpf_program__attach_perf_event(
			faults ? st->skel->progs.do_fault :
				 st->skel->progs.do_sample,
			st->perf_fds[i]);
		if (!st->links[i])
			return vm_error_errno(
				err, errno,
				"cannot attach the BPF profiler to CPU %d",
				cpus[i]);
	}
	return 0;
}

/*
 * Cut a window (continuous sessions): what the ring buffer holds now is
 * counted first, so the window holds every sample taken before the cut
 * and none after; the next one starts empty.
 */
void vm_bpf_cut_window(struct bpf_state *st)
{
	/* A continuous session is a CPU (or faults) profile: its sink's. */
	struct vm_stack_counts *cpu =
		&st->sinks[vm_bpf_obj_index(st, st->skel->obj)].counts;
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

/* This window's share of a per-CPU counter. */
static uint64_t stat_window(struct bpf_state *st, uint32_t idx)
{
	uint64_t now = vm_bpf_stat_sum(st, idx),
		 d = now - st->stats_sealed[idx];

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
			vm_bpf_refresh_title(p);
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
			vm_bpf_unwind_forget(&st->unwind, p->pid);
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
 * A continuous session's window: the reader thread cuts it (vm_bpf_cut_window)
 * while sampling goes on, so each sample is in exactly one window and the
 * program is never reloaded.
 */
int vm_bpf_cpu_seal(void *state, struct vm_samples *out, struct vm_error *err)
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
		vm_bpf_complete_processes(st);
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
	out->unwound_by_table = stat_window(st, PROFILE_STAT_FRAMES_TABLE);
	out->unwound_by_frame_pointer = stat_window(st, PROFILE_STAT_FRAMES_FP);
	out->unwind_cut = stat_window(st, PROFILE_STAT_WALKS_CUT);
	vm_bpf_tell_cut(st);
	if (r == 0 && st->req.kind == VM_KIND_FAULTS)
		r = vm_bpf_faults_finish(st, out, err);
	vm_stack_counts_free(&cut);
	return r;
}
