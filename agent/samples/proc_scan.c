// SPDX-License-Identifier: Apache-2.0
/*
 * proc_scan.c - the processes that are targets when a profile starts: by
 * command name (/proc/PID/comm) or by pid.  Later ones are found by the
 * BPF program itself (fork following, first-sample announcements).
 */
#include "agent/samples/proc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/cleanup.h"

int vm_proc_scan_targets(const char *proc_root, const char *const *comms,
			 size_t n_comms, const pid_t *pids, size_t n_pids,
			 uint32_t **out, size_t *n_out, struct vm_error *err)
{
	_cleanup_closedir_ DIR *d = opendir(proc_root);
	_cleanup_free_ uint32_t *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	if (!d)
		return vm_error_errno(err, errno, "cannot list %s", proc_root);
	while ((de = readdir(d))) {
		char comm[VM_COMM_LEN];
		bool match = false;
		long pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = strtol(de->d_name, NULL, 10);
		for (size_t i = 0; i < n_pids && !match; i++)
			match = pids[i] == pid;
		if (!match && n_comms &&
		    vm_proc_read_comm(proc_root, (uint32_t)pid, comm) == 0)
			for (size_t i = 0; i < n_comms && !match; i++)
				match = !strncmp(comm, comms[i],
						 VM_COMM_LEN - 1);
		if (!match)
			continue;
		if (vm_grow(v, &cap, n + 1) < 0)
			return vm_error_set(err, ENOMEM, "out of memory");
		v[n++] = (uint32_t)pid;
	}
	*out = TAKE_PTR(v);
	*n_out = n;
	return 0;
}
