// SPDX-License-Identifier: Apache-2.0
/*
 * proc_task.c - a process's threads as /proc/PID/task shows them (proc.h):
 * a thread's small files read whole, its state and context switches from
 * status, its CPU time from schedstat.  The off-CPU profiler reads them
 * for every thread of its targets, as a profile starts and as it ends.
 */
#include "agent/samples/proc.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The number after "NAME:" and blanks at the start of line, when line
 * starts so: true and *v.
 */
static bool field_u64(const char *line, const char *name, uint64_t *v)
{
	size_t len = strlen(name);
	unsigned long long x;
	char *end;

	if (strncmp(line, name, len) || line[len] != ':')
		return false;
	line += len + 1;
	while (*line == ' ' || *line == '\t')
		line++;
	if (*line < '0' || *line > '9')
		return false;
	errno = 0;
	x = strtoull(line, &end, 10);
	if (errno || (*end != '\n' && *end != '\0'))
		return false;
	*v = x;
	return true;
}

/*
 * Found by the lines' names, not scanned with sscanf: tens of thousands
 * of threads are read as a profile ends, each status ~55 lines.
 */
int vm_parse_task_status(const char *text, char *state, uint64_t *switches)
{
	const char *line = text;
	bool have_state = false;
	int have_switches = 0;

	*switches = 0;
	while (line && *line) {
		uint64_t v;

		if (!strncmp(line, "State:", 6)) {
			const char *c = line + 6;

			while (*c == ' ' || *c == '\t')
				c++;
			if (*c && *c != '\n') {
				*state = *c;
				have_state = true;
			}
		} else if (field_u64(line, "voluntary_ctxt_switches", &v) ||
			   field_u64(line, "nonvoluntary_ctxt_switches", &v)) {
			*switches += v;
			have_switches++;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return have_state && have_switches == 2 ? 0 : -EINVAL;
}

int vm_parse_task_schedstat(const char *text, uint64_t *run_ns)
{
	unsigned long long v;
	char *end;

	if (!*text || *text < '0' || *text > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || (*end != ' ' && *end != '\n'))
		return -EINVAL;
	*run_ns = v;
	return 0;
}

ssize_t vm_proc_read_task_file(const char *proc_root, uint32_t pid,
			       uint32_t tid, const char *name, char *buf,
			       size_t size)
{
	char path[128];
	size_t n;

	snprintf(path, sizeof(path), "%s/%u/task/%u/%s", proc_root, pid, tid,
		 name);
	if (vm_proc_read_small(path, buf, size, &n) < 0)
		return -1;
	return (ssize_t)n;
}

int vm_proc_read_task_status(const char *proc_root, uint32_t pid, uint32_t tid,
			     char *state, uint64_t *switches)
{
	char buf[4096];

	if (vm_proc_read_task_file(proc_root, pid, tid, "status", buf,
				   sizeof(buf)) <= 0)
		return -ENOENT;
	return vm_parse_task_status(buf, state, switches);
}

int vm_proc_read_task_run_ns(const char *proc_root, uint32_t pid, uint32_t tid,
			     uint64_t *run_ns)
{
	char buf[128];

	if (vm_proc_read_task_file(proc_root, pid, tid, "schedstat", buf,
				   sizeof(buf)) <= 0)
		return -ENOENT;
	return vm_parse_task_schedstat(buf, run_ns);
}

char vm_parse_task_stat_state(const char *text)
{
	/* "PID (COMM) S ...": COMM may hold anything, ')' included. */
	const char *p = strrchr(text, ')');

	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return 0;
	return p[2];
}

uint64_t vm_parse_task_syscall_pc(const char *text)
{
	const char *last = NULL, *p = text;
	unsigned long long pc;
	char *end;

	/* The pc is the last field; "running" has none. */
	while (*p) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (*p)
			last = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	if (!last || strncmp(last, "0x", 2))
		return 0;
	errno = 0;
	pc = strtoull(last, &end, 16);
	if (errno || end == last || (*end && *end != '\n' && *end != ' '))
		return 0;
	return pc;
}
