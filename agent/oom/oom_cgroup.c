// SPDX-License-Identifier: Apache-2.0
/*
 * oom_cgroup.c - an OOM victim's memory cgroup (oom_cgroup.h).
 */
#include "agent/oom/oom_cgroup.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fdio.h"

/* cgroup v1's "no limit": PAGE_COUNTER_MAX pages, near 2^63 bytes. */
#define V1_UNLIMITED ((uint64_t)1 << 62)
#define FILE_MAX 65536

static void copy_line(char *dst, size_t size, const char *s, const char *end)
{
	size_t n = (size_t)(end - s);

	if (n >= size)
		n = size - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

void vm_oom_cgroup_parse_proc(const char *text, char *v2, char *v1, size_t size)
{
	v2[0] = v1[0] = '\0';
	for (const char *p = text; *p;) {
		const char *end = strchrnul(p, '\n');
		const char *c1 = memchr(p, ':', (size_t)(end - p));
		const char *c2 =
			c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;

		if (c2) {
			size_t clen = (size_t)(c2 - c1 - 1);
			bool memory = false;

			for (const char *w = c1 + 1; w < c2;) {
				const char *comma =
					memchr(w, ',', (size_t)(c2 - w));
				const char *we = comma ? comma : c2;

				memory |= (size_t)(we - w) == 6 &&
					  !memcmp(w, "memory", 6);
				w = we + 1;
			}
			if (c1 - p == 1 && p[0] == '0' && !clen)
				copy_line(v2, size, c2 + 1, end);
			else if (memory)
				copy_line(v1, size, c2 + 1, end);
		}
		p = *end ? end + 1 : end;
	}
}

void vm_oom_cgroup_parse_events(const char *text, struct vm_oom_cgroup *out)
{
	for (const char *p = text; *p;) {
		const char *end = strchrnul(p, '\n');
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		struct vm_oom_cgroup_event *e;

		if (sp && sp > p && out->n_events < VM_OOM_CGROUP_EVENTS &&
		    (size_t)(sp - p) < sizeof(e->name)) {
			e = &out->events[out->n_events++];
			copy_line(e->name, sizeof(e->name), p, sp);
			e->value = strtoull(sp + 1, NULL, 10);
		}
		p = *end ? end + 1 : end;
	}
}

/* The n-th space-separated field of [p, end), NUL-terminated into buf. */
static bool field(const char *p, const char *end, int n, char *buf, size_t size)
{
	for (; n > 0 && p < end; n--) {
		p = memchr(p, ' ', (size_t)(end - p));
		if (!p)
			return false;
		p++;
	}
	if (p >= end)
		return false;
	copy_line(buf, size, p,
		  strchrnul(p, ' ') < end ? strchrnul(p, ' ') : end);
	return true;
}

void vm_oom_cgroup_parse_mounts(const char *text, char *v2, char *v1,
				size_t size)
{
	v2[0] = v1[0] = '\0';
	for (const char *p = text; *p;) {
		const char *end = strchrnul(p, '\n');
		const char *dash = strstr(p, " - ");
		char mnt[256], type[32], opts[256];

		if (dash && dash < end && field(p, dash, 4, mnt, sizeof(mnt)) &&
		    field(dash + 3, end, 0, type, sizeof(type)) &&
		    field(dash + 3, end, 2, opts, sizeof(opts))) {
			char list[258];

			snprintf(list, sizeof(list), ",%s,", opts);
			if (!strcmp(type, "cgroup2") && !v2[0])
				snprintf(v2, size, "%s", mnt);
			else if (!strcmp(type, "cgroup") &&
				 strstr(list, ",memory,") && !v1[0])
				snprintf(v1, size, "%s", mnt);
		}
		p = *end ? end + 1 : end;
	}
}

/* A small file into buf; 0 or -errno. */
static int slurp(const char *path, char *buf, size_t size)
{
	int fd = vm_open_regular(path);
	long long n;

	if (fd < 0)
		return fd;
	n = vm_read_all(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return 0;
}

/* dir/name as a number; false when absent. */
static bool number(const char *dir, const char *name, uint64_t *v)
{
	char path[VM_OOM_CGROUP_PATH_MAX + 512], buf[64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (slurp(path, buf, sizeof(buf)) < 0)
		return false;
	*v = strncmp(buf, "max", 3) ? strtoull(buf, NULL, 10) : UINT64_MAX;
	return true;
}

static void events(const char *dir, const char *name, struct vm_oom_cgroup *out)
{
	char path[VM_OOM_CGROUP_PATH_MAX + 512];
	char *buf = malloc(FILE_MAX);

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (buf && slurp(path, buf, FILE_MAX) == 0)
		vm_oom_cgroup_parse_events(buf, out);
	free(buf);
}

void vm_oom_cgroup_find(uint32_t pid, struct vm_oom_cgroup *out)
{
	char path[64];
	char *buf = malloc(FILE_MAX);

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	if (!buf || slurp(path, buf, FILE_MAX) < 0) {
		snprintf(out->why, sizeof(out->why),
			 "%s could not be read (the process is gone)", path);
		free(buf);
		return;
	}
	vm_oom_cgroup_find_text(buf, out);
	free(buf);
}

void vm_oom_cgroup_find_text(const char *text, struct vm_oom_cgroup *out)
{
	char v2[VM_OOM_CGROUP_PATH_MAX], v1[VM_OOM_CGROUP_PATH_MAX];
	char m2[256], m1[256];
	char *buf = malloc(FILE_MAX);
	uint64_t v;

	memset(out, 0, sizeof(*out));
	vm_oom_cgroup_parse_proc(text, v2, v1, sizeof(v2));
	if (!buf || slurp("/proc/self/mountinfo", buf, FILE_MAX) < 0) {
		snprintf(out->why, sizeof(out->why),
			 "/proc/self/mountinfo could not be read");
		free(buf);
		return;
	}
	vm_oom_cgroup_parse_mounts(buf, m2, m1, sizeof(m2));
	free(buf);
	snprintf(out->dir, sizeof(out->dir), "%s%s", m2, v2);
	if (m2[0] && number(out->dir, "memory.max", &v)) {
		out->version = "v2";
		snprintf(out->path, sizeof(out->path), "%s", v2);
		return;
	}
	snprintf(out->dir, sizeof(out->dir), "%s%s", m1, v1);
	if (m1[0] && number(out->dir, "memory.limit_in_bytes", &v)) {
		out->version = "v1";
		snprintf(out->path, sizeof(out->path), "%s", v1);
		return;
	}
	snprintf(
		out->why, sizeof(out->why),
		"no memory controller: neither cgroup v2's memory.max nor v1's memory.limit_in_bytes of its cgroup could be read");
}

bool vm_oom_cgroup_found(const struct vm_oom_cgroup *cg)
{
	return cg->version && strcmp(cg->path, "/") && cg->path[0];
}

void vm_oom_cgroup_read(struct vm_oom_cgroup *out)
{
	const char *dir = out->dir;
	uint64_t v = 0;

	if (!out->version)
		return;
	if (!strcmp(out->version, "v2")) {
		number(dir, "memory.max", &v);
		out->limited = v != UINT64_MAX;
		out->limit = out->limited ? v : 0;
		number(dir, "memory.current", &out->usage);
		number(dir, "memory.peak", &out->peak);
		events(dir, "memory.events", out);
		return;
	}
	number(dir, "memory.limit_in_bytes", &v);
	out->limited = v < V1_UNLIMITED;
	out->limit = out->limited ? v : 0;
	number(dir, "memory.usage_in_bytes", &out->usage);
	number(dir, "memory.max_usage_in_bytes", &out->peak);
	events(dir, "memory.oom_control", out);
	if (number(dir, "memory.failcnt", &v) &&
	    out->n_events < VM_OOM_CGROUP_EVENTS) {
		snprintf(out->events[out->n_events].name,
			 sizeof(out->events[0].name), "failcnt");
		out->events[out->n_events++].value = v;
	}
}
