// SPDX-License-Identifier: Apache-2.0
/*
 * bpf_offcpu.c - the off-CPU profiler's `blocked` map read once it has
 * stopped, key by key (one entry per thread still switched out), and the
 * threads blocked since before the profile found from /proc
 * (bpf_offcpu.h).
 */
#include "agent/profile/bpf/bpf_offcpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/profile/bpf/bpf_read.h"
#include "common/array.h"
#include "common/cleanup.h"

static bool thread_exists(const char *proc_root, uint32_t pid, uint32_t tid)
{
	char path[96];

	snprintf(path, sizeof(path), "%s/%u/task/%u", proc_root, pid, tid);
	return access(path, F_OK) == 0;
}

int vm_bpf_read_blocked(int blocked_fd, uint64_t end_ns, uint64_t min_ns,
			const char *proc_root, struct vm_stack_counts *c)
{
	__u64 task, next, *prev = NULL;
	struct offcpu_start s;

	while (bpf_map_get_next_key(blocked_fd, prev, &next) == 0) {
		size_t frames;

		task = next;
		prev = &task;
		if (bpf_map_lookup_elem(blocked_fd, &task, &s) ||
		    s.ns >= end_ns || end_ns - s.ns < min_ns ||
		    !thread_exists(proc_root, s.r.pid, s.r.tid))
			continue;
		frames = (size_t)(s.r.n_user & 0x7f) + (s.r.n_kernel & 0x7f);
		s.r.weight = end_ns - s.ns;
		/* A malformed or dropped record is counted in c. */
		vm_stack_counts_add(c, &s.r,
				    STACK_RECORD_HEAD + frames * sizeof(__u64));
	}
	return 0;
}

int vm_parse_task_status(const char *text, char *state, uint64_t *switches)
{
	const char *line = text;
	bool have_state = false;
	int have_switches = 0;

	*switches = 0;
	while (line && *line) {
		unsigned long long v;

		if (sscanf(line, "State: %c", state) == 1)
			have_state = true;
		else if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) ==
				 1 ||
			 sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) ==
				 1) {
			*switches += v;
			have_switches++;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return have_state && have_switches == 2 ? 0 : -EINVAL;
}

/* The state and switches of one thread now; -ENOENT when it is gone. */
static int read_task(const char *proc_root, uint32_t pid, uint32_t tid,
		     char *state, uint64_t *switches)
{
	char path[96], buf[4096];
	_cleanup_close_ int fd = -1;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%u/task/%u/status", proc_root, pid,
		 tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -ENOENT;
	buf[n] = '\0';
	return vm_parse_task_status(buf, state, switches);
}

int vm_bpf_snapshot_threads(const char *proc_root, const uint32_t *pids,
			    size_t n_pids, struct vm_thread_switches **v,
			    size_t *n, size_t *cap)
{
	for (size_t i = 0; i < n_pids; i++) {
		char path[64];
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "%s/%u/task", proc_root, pids[i]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d))) {
			uint32_t tid = (uint32_t)strtoul(de->d_name, NULL, 10);
			uint64_t switches;
			char state;

			if (!tid || read_task(proc_root, pids[i], tid, &state,
					      &switches))
				continue;
			if (vm_grow(*v, cap, *n + 1)) {
				closedir(d);
				return -ENOMEM;
			}
			(*v)[(*n)++] = (struct vm_thread_switches){ pids[i],
								    tid,
								    switches };
		}
		closedir(d);
	}
	return 0;
}

bool vm_bpf_slept_throughout(const char *proc_root,
			     const struct vm_thread_switches *t, char *state)
{
	uint64_t switches;

	return read_task(proc_root, t->pid, t->tid, state, &switches) == 0 &&
	       switches == t->switches && *state != 'R';
}

uint32_t vm_bpf_pg_read_wait_event(uint32_t pid, uint64_t wait_event_ptr)
{
	uint64_t ptr = 0;
	uint32_t info = 0;
	struct iovec local = { &ptr, sizeof(ptr) };
	struct iovec remote = { (void *)(uintptr_t)wait_event_ptr,
				sizeof(ptr) };

	if (!wait_event_ptr ||
	    process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) !=
		    sizeof(ptr) ||
	    !ptr)
		return 0;
	local = (struct iovec){ &info, sizeof(info) };
	remote = (struct iovec){ (void *)(uintptr_t)ptr, sizeof(info) };
	if (process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) !=
	    sizeof(info))
		return 0;
	return info;
}
