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
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

static bool comm_of(const char *proc_root, const char *pid, char *comm,
		    size_t size)
{
	char path[512];
	_cleanup_close_ int fd = -1;
	ssize_t n;
	int len = snprintf(path, sizeof(path), "%s/%s/comm", proc_root, pid);

	if (len < 0 || (size_t)len >= sizeof(path))
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, comm, size - 1);
	if (n <= 0)
		return false;
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	return true;
}

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
		char comm[64];
		bool match = false;
		long pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = strtol(de->d_name, NULL, 10);
		for (size_t i = 0; i < n_pids && !match; i++)
			match = pids[i] == pid;
		if (!match && n_comms &&
		    comm_of(proc_root, de->d_name, comm, sizeof(comm)))
			for (size_t i = 0; i < n_comms && !match; i++)
				match = !strncmp(comm, comms[i], 15);
		if (!match)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			void *nv = reallocarray(v, ncap, sizeof(*v));

			if (!nv)
				return vm_error_set(err, ENOMEM,
						    "out of memory");
			v = nv;
			cap = ncap;
		}
		v[n++] = (uint32_t)pid;
	}
	*out = TAKE_PTR(v);
	*n_out = n;
	return 0;
}
