/* SPDX-License-Identifier: Apache-2.0 */
/*
 * proc.h - a live process as /proc shows it: what the symbolizer needs,
 * captured while it lives (executable mappings, command name and title:
 * proc.c), which processes are targets now (proc_scan.c), and its
 * threads' state, context switches and CPU time, which tell the off-CPU
 * profiler a thread blocked all along (proc_task.c).
 *
 * Each mapped file is opened once per profile through
 * /proc/PID/map_files/START-END (or /proc/PID/root/PATH), which works
 * across mount namespaces and keeps the file readable after the process
 * exits; the descriptor is held by the struct vm_samples.
 */
#ifndef VMTOOLS_AGENT_PROC_H
#define VMTOOLS_AGENT_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/iopool/iopool.h"
#include "agent/samples/sample.h"
#include "common/error.h"

struct vm_proc_file {
	uint64_t dev; /* as /proc/PID/maps prints it, major << 32 | minor */
	uint64_t ino;
	char *open_path; /* /proc/self/fd/N, or NULL when it could not open */
};

/* Files already opened during one profile, shared by its processes. */
struct vm_proc_files {
	struct vm_proc_file *v;
	size_t n;
	size_t cap;
	/* Where the files are opened; NULL: they are not (named by path). */
	struct vm_iopool *iopool;
};

void vm_proc_files_free(struct vm_proc_files *f);

/*
 * Close the files no process of s maps any more (the processes that mapped
 * them exited and were forgotten), so a long session holds descriptors
 * for the living only; those that could not be opened are forgotten too.
 */
void vm_proc_files_drop_unused(struct vm_proc_files *f, struct vm_samples *s);

/*
 * Capture pid into s: comm, title and executable mappings, replacing what
 * was captured before.  -ESRCH when the process is gone, -ENOENT when pid
 * is a thread rather than a process (nothing is recorded then).
 */
int vm_proc_capture(struct vm_samples *s, struct vm_proc_files *files,
		    uint32_t pid, const char *proc_root, struct vm_error *err);

/*
 * One line of /proc/PID/maps.  Returns 1 and fills m (path points into
 * line, which is modified) when the line is an executable mapping, 0 when
 * not executable, -EINVAL when malformed.  dev/ino get the file identity.
 */
int vm_proc_parse_maps_line(char *line, struct vm_mapping *m, uint64_t *dev,
			    uint64_t *ino);

/* /proc/PID/cmdline bytes as ps shows them: NULs to spaces, trimmed. */
char *vm_proc_title_from_cmdline(const char *buf, size_t len);

/*
 * Read a small /proc file whole (to EOF: /proc may answer a read with less
 * than there is) into buf, NUL-terminated, at most size - 1 bytes; *len
 * (when not NULL) without the NUL.  0; -ESRCH for a file of a process
 * that is gone, another -errno otherwise.
 */
int vm_proc_read_small(const char *path, char *buf, size_t size, size_t *len);

/*
 * The command name of pid, /proc/PID/comm without its newline.  Returns 0,
 * -ESRCH when the process is gone, or another negative errno.
 */
int vm_proc_read_comm(const char *proc_root, uint32_t pid,
		      char comm[VM_COMM_LEN]);

/*
 * The title of pid: its /proc/PID/cmdline as ps shows it (see
 * vm_proc_title_from_cmdline()), malloc'd; NULL when there is none (a
 * kernel thread, a zombie).  Returns 0, -ESRCH when the process is gone,
 * or another negative errno.
 */
int vm_proc_read_title(const char *proc_root, uint32_t pid, char **title);

/*
 * The small file /proc/PID/task/TID/NAME (under proc_root) whole into buf,
 * NUL-terminated (vm_proc_read_small): its length, -1 when unreadable.
 */
ssize_t vm_proc_read_task_file(const char *proc_root, uint32_t pid,
			       uint32_t tid, const char *name, char *buf,
			       size_t size);

/*
 * From the text of /proc/PID/task/TID/status: the state letter ('R',
 * 'S', ...) and the context switches (voluntary + nonvoluntary).  -EINVAL
 * when either is missing.
 */
int vm_parse_task_status(const char *text, char *state, uint64_t *switches);

/* The CPU time (ns) at the start of /proc/.../schedstat's text; -EINVAL. */
int vm_parse_task_schedstat(const char *text, uint64_t *run_ns);

/*
 * The same, read now for thread tid of pid under proc_root: 0; -ENOENT
 * when the file is unreadable (the thread is gone), -EINVAL when its text
 * is not what the parser expects.
 */
int vm_proc_read_task_status(const char *proc_root, uint32_t pid, uint32_t tid,
			     char *state, uint64_t *switches);
int vm_proc_read_task_run_ns(const char *proc_root, uint32_t pid, uint32_t tid,
			     uint64_t *run_ns);

/*
 * Pids of the processes whose command name is one of comms or whose pid is
 * one of pids (those that exist).  *out is malloc'd.
 */
int vm_proc_scan_targets(const char *proc_root, const char *const *comms,
			 size_t n_comms, const pid_t *pids, size_t n_pids,
			 uint32_t **out, size_t *n_out, struct vm_error *err);

/*
 * The state letter of /proc/PID/task/TID/stat's text ('R', 'S', ...);
 * 0 when the text is not one.
 */
char vm_parse_task_stat_state(const char *text);

/*
 * The user pc of /proc/PID/task/TID/syscall's text ("NR ARGS... SP PC",
 * "-1 SP PC" outside a system call); 0 when the text says none
 * ("running") or is not one.
 */
uint64_t vm_parse_task_syscall_pc(const char *text);

#endif
