// SPDX-License-Identifier: Apache-2.0
/*
 * unwind_cache.c - unwind tables built once per binary and kept as its
 * unwind facet in the home of binaries (unwind_cache.h).
 *
 * An ask stats the file and builds its table on an I/O pool worker (the
 * caller waits at most VM_IOPOOL_READ_MS each), never under the home's
 * lock; two asks that raced keep the first table and free the second.  A
 * binary without call frame information is kept too, as a facet of none,
 * so it is not read again.
 */
#include "agent/unwind/unwind_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/iopool/iopool.h"

/* Reading a binary: its identity, then its table unless the home has it. */
struct build_job {
	struct vm_iopool_job job;
	int fd; /* the job's own */
	char *what;
	struct vm_binary_key key;
	struct vm_unwind_table *t;
	int built; /* the build's result */
};

static int key_run(struct vm_iopool_job *job)
{
	struct build_job *j = vm_iopool_owner(job, struct build_job);
	struct stat st;

	if (fstat(j->fd, &st) < 0)
		return -errno;
	vm_binary_key_of(&st, &j->key);
	return 0;
}

static void table_free(void *data)
{
	vm_unwind_table_free(data);
	free(data);
}

static int build_run(struct vm_iopool_job *job)
{
	struct build_job *j = vm_iopool_owner(job, struct build_job);

	j->t = calloc(1, sizeof(*j->t));
	if (!j->t)
		return -ENOMEM;
	j->built = vm_unwind_table_build_fd(j->fd, j->t, j->what, NULL);
	if (j->built < 0 || !j->t->n) {
		table_free(j->t);
		j->t = NULL;
	} else if (j->t->cap > j->t->n) {
		/* Kept for long: no room left for rows that never come. */
		struct vm_unwind_row *rows =
			realloc(j->t->rows, j->t->n * sizeof(*rows));

		if (rows) {
			j->t->rows = rows;
			j->t->cap = j->t->n;
		}
	}
	return 0;
}

static void job_free(struct vm_iopool_job *job)
{
	struct build_job *j = vm_iopool_owner(job, struct build_job);

	if (j->t)
		table_free(j->t);
	if (j->fd >= 0)
		close(j->fd);
	free(j->what);
	free(j);
}

/*
 * Why the build of j left its binary without a table, or with functions
 * cut short, past a bound (unwind_table.h), into skip's message; false
 * when it did not.
 */
static bool past_bound(const struct build_job *j, size_t truncated,
		       struct vm_error *skip)
{
	if (j->built == -E2BIG)
		vm_error_set(skip, E2BIG,
			     "it has more than %u unwind rows, the most one "
			     "binary may have",
			     VM_UNWIND_MAX_ROWS);
	else if (j->built == -ETIME)
		vm_error_set(
			skip, ETIME,
			"its unwind rules take more than %u ms of CPU time "
			"to read; it is walked by frame pointer",
			VM_UNWIND_BUILD_CPU_MS);
	else if (truncated)
		vm_error_set(skip, E2BIG,
			     "%zu of its functions have more than %u rows of "
			     "unwind rules; past those rows they are walked by "
			     "frame pointer",
			     truncated, VM_UNWIND_MAX_FUNCTION_ROWS);
	else
		return false;
	return true;
}

/* The table of the held entry b, which is then kept held only with one. */
static const struct vm_unwind_table *answer(struct vm_binaries *h,
					    struct vm_binary *b, void *t,
					    struct vm_binary **held)
{
	if (!t) {
		vm_binaries_put(h, b);
		b = NULL;
	}
	*held = b;
	return t;
}

const struct vm_unwind_table *vm_unwind_cache_get(struct vm_iopool *pool,
						  struct vm_binaries *h, int fd,
						  const char *what,
						  struct vm_binary **held,
						  struct vm_error *skip)
{
	struct vm_error bound = { 0 };
	struct build_job *j;
	struct vm_binary *b;
	void *t = NULL, *built;
	size_t truncated;
	char why[160];

	*held = NULL;
	if (!h)
		return NULL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->job.free = job_free;
	j->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	j->what = strdup(what ? what : "a binary");
	if (j->fd < 0 || !j->what) {
		job_free(&j->job);
		return NULL;
	}
	if (vm_iopool_step(pool, &j->job, key_run, VM_IOPOOL_READ_MS) < 0)
		return NULL;
	b = vm_binaries_hold(h, &j->key);
	if (!b) {
		snprintf(why, sizeof(why),
			 "every binary the agent remembers is in use");
		vm_binaries_skip(h, VM_BINARY_UNWIND, j->what, why);
		job_free(&j->job);
		return NULL;
	}
	if (vm_binary_facet(h, b, VM_BINARY_UNWIND, &t)) {
		job_free(&j->job);
		return answer(h, b, t, held);
	}
	if (vm_iopool_step(pool, &j->job, build_run, VM_IOPOOL_READ_MS) < 0) {
		vm_binaries_put(h, b);
		return NULL;
	}
	built = j->t;
	truncated = j->t ? j->t->truncated : 0;
	vm_binary_fill(h, b, VM_BINARY_UNWIND, j->t,
		       j->t ? vm_unwind_table_bytes(j->t) : 0, table_free,
		       "unwind table", j->what, &t);
	j->t = NULL; /* the home's now, or freed by it */
	/* Said once, by the ask whose build it was. */
	if (t == built && past_bound(j, truncated, &bound)) {
		vm_binaries_skip(h, VM_BINARY_UNWIND, j->what, bound.msg);
		vm_error_set(skip, bound.code, "%s", bound.msg);
	}
	job_free(&j->job);
	return answer(h, b, t, held);
}

void vm_unwind_cache_stats(struct vm_binaries *h,
			   struct vm_unwind_cache_stats *out)
{
	struct vm_binaries_stats st;
	struct vm_binaries_skip last;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!h)
		return;
	vm_binaries_stats(h, &st);
	out->tables = st.facet[VM_BINARY_UNWIND].filled;
	out->bytes = st.facet[VM_BINARY_UNWIND].bytes;
	out->max_bytes = st.max_bytes;
	out->builds = st.facet[VM_BINARY_UNWIND].fills;
	out->hits = st.facet[VM_BINARY_UNWIND].hits;
	out->skipped = st.facet[VM_BINARY_UNWIND].skipped;
	vm_binaries_skipped(h, VM_BINARY_UNWIND, &last, 1, &n);
	if (n)
		snprintf(out->last_skipped, sizeof(out->last_skipped), "%s: %s",
			 last.file, last.reason);
}
