// SPDX-License-Identifier: Apache-2.0
/*
 * warm.c - the warmer of warm.h: a thread that builds the target
 * binaries' unwind tables (on workers at nice 19) and reads their symbols
 * before a profile asks.
 *
 * A pass lists the targets (agent/samples/proc_scan.c) and reads the
 * mappings of those the last pass did not list; a process whose
 * executable mappings are all of files warmed before costs that one
 * read of /proc/PID/maps.  One that maps a file not warmed yet is
 * captured the way a profile captures it (agent/samples/proc.c: each
 * file opened once, through map_files or the process's root, by the I/O
 * pool), and each new file's table is asked of the unwind cache and its
 * symbols of the symbolizer, on the warmer's own pool.  A file is
 * remembered as warmed whatever came of it (no table, a timeout): it is
 * not read again by the warmer, and a profile still builds what was
 * missed, as it did without one.
 */
#include "agent/serve/warm.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "agent/iopool/iopool.h"
#include "agent/profile/limits.h"
#include "agent/samples/proc.h"
#include "agent/symbolize/symbolize.h"
#include "agent/unwind/unwind_cache.h"
#include "agent/unwind/vdso.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"

/* The lowest priority a thread may give itself: the tables' builders'. */
#define WARM_NICE 19
/* How often a warmer waiting for a request looks again. */
#define WARM_BUSY_MS 100

/* A file, as /proc/PID/maps numbers it. */
struct warm_file {
	uint64_t dev, ino;
};

struct vm_warm {
	struct vm_warm_config cfg;
	const char *default_comm;
	struct vm_iopool *pool; /* the warmer's own: its workers at nice 19 */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock; /* stop, stats */
	pthread_cond_t wake;
	bool stop;
	struct vm_warm_stats stats;
	/* The warmer thread's alone. */
	uint32_t *known; /* the targets of the last pass, sorted */
	size_t n_known;
	struct warm_file *files; /* warmed */
	size_t n_files, cap_files;
	bool vdso_done;
};

static bool stopping(struct vm_warm *w)
{
	bool stop;

	pthread_mutex_lock(&w->lock);
	stop = w->stop;
	pthread_mutex_unlock(&w->lock);
	return stop;
}

/* Sleep until deadline (CLOCK_MONOTONIC ns) or a stop: whether stopped. */
static bool sleep_until(struct vm_warm *w, uint64_t deadline)
{
	return vm_cond_sleep_until(&w->wake, &w->lock, &w->stop, deadline);
}

/* Wait while a request runs: whether the warmer was stopped meanwhile. */
static bool wait_idle(struct vm_warm *w)
{
	while (w->cfg.busy && w->cfg.busy(w->cfg.busy_arg))
		if (sleep_until(w, vm_clock_ns(CLOCK_MONOTONIC) +
					   (uint64_t)WARM_BUSY_MS * 1000000))
			return true;
	return stopping(w);
}

static bool warmed(const struct vm_warm *w, uint64_t dev, uint64_t ino)
{
	for (size_t i = 0; i < w->n_files; i++)
		if (w->files[i].dev == dev && w->files[i].ino == ino)
			return true;
	return false;
}

static void remember(struct vm_warm *w, uint64_t dev, uint64_t ino)
{
	if (w->n_files == VM_WARM_FILES_MAX)
		w->n_files = 0; /* the home bounds what is kept, not this */
	if (vm_grow(w->files, &w->cap_files, w->n_files + 1) < 0)
		return;
	w->files[w->n_files++] = (struct warm_file){ dev, ino };
}

/*
 * Whether pid maps an executable file not warmed yet (or the vDSO, the
 * first time): one read of its maps, nothing opened.
 */
static bool maps_new_file(struct vm_warm *w, uint32_t pid)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	char path[256];

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", w->cfg.proc_root,
		 pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		struct vm_mapping m;
		uint64_t dev, ino;

		if (vm_proc_parse_maps_line(line, &m, &dev, &ino) <= 0)
			continue;
		if (ino && m.path && m.path[0] == '/' && !warmed(w, dev, ino))
			return true;
		if (!w->vdso_done && m.path && vm_vdso_path(m.path))
			return true;
	}
	return false;
}

/* The unwind table of the file m maps, opened as open_path: whether kept. */
static bool warm_table(struct vm_warm *w, const struct vm_mapping *m)
{
	struct vm_binary *held = NULL;
	const struct vm_unwind_table *t;
	int fd = vm_iopool_open_regular(w->pool, m->open_path, m->dev,
					VM_IOPOOL_OPEN_MS);

	if (fd < 0)
		return false;
	t = vm_unwind_cache_get(w->pool, w->cfg.ctx->binaries, fd, m->path,
				&held, NULL);
	if (held)
		vm_binaries_put(w->cfg.ctx->binaries, held);
	close(fd);
	return t != NULL;
}

/* The tables of the files p maps that are not warmed yet, one by one. */
static void warm_tables(struct vm_warm *w, const struct vm_process *p)
{
	for (size_t i = 0; i < p->n_maps; i++) {
		const struct vm_mapping *m = &p->maps[i];
		uint64_t dev = (uint64_t)major(m->dev) << 32 | minor(m->dev);
		bool kept;

		if (!w->vdso_done && m->path && vm_vdso_path(m->path)) {
			/* Built once from the agent's own image, never freed. */
			vm_vdso_unwind_table(m->start, m->end);
			w->vdso_done = true;
			continue;
		}
		if (!m->ino || !m->open_path || warmed(w, dev, m->ino))
			continue;
		if (wait_idle(w))
			return;
		kept = warm_table(w, m);
		remember(w, dev, m->ino);
		pthread_mutex_lock(&w->lock);
		w->stats.binaries++;
		w->stats.tables += kept;
		pthread_mutex_unlock(&w->lock);
	}
}

/* Capture pid as a profile would and warm what it maps. */
static void warm_process(struct vm_warm *w, uint32_t pid)
{
	struct vm_samples s = { 0 };
	struct vm_proc_files files = { .iopool = w->pool };
	const struct vm_process *p;

	if (!maps_new_file(w, pid))
		return;
	if (vm_proc_capture(&s, &files, pid, w->cfg.proc_root, NULL) == 0 &&
	    (p = vm_samples_find_process(&s, pid))) {
		pthread_mutex_lock(&w->lock);
		w->stats.processes++;
		pthread_mutex_unlock(&w->lock);
		warm_tables(w, p);
		/*
		 * Symbols after, as a profile reads them: on the context's
		 * pool, at the agent's priority, the symbol cache's lock
		 * taken file by file.  A profile waits for that lock, so the
		 * read it waits for must not be one at nice 19 on a busy
		 * machine.
		 */
		if (!wait_idle(w))
			vm_symbolize_prefetch_process(w->cfg.ctx->symbols, p);
	}
	vm_proc_files_free(&files);
	vm_samples_free(&s);
}

static int by_pid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static bool known(const struct vm_warm *w, uint32_t pid)
{
	return w->n_known && bsearch(&pid, w->known, w->n_known,
				     sizeof(*w->known), by_pid) != NULL;
}

/* One look at the targets, the new ones warmed. */
static void pass(struct vm_warm *w)
{
	const char *const *comms = w->cfg.comms;
	size_t n_comms = w->cfg.n_comms, n = 0;
	uint64_t t0 = vm_clock_ns(CLOCK_MONOTONIC);
	struct vm_error err = { 0 };
	uint32_t *pids = NULL;

	if (!n_comms) {
		comms = &w->default_comm;
		n_comms = 1;
	}
	if (vm_proc_scan_targets(w->cfg.proc_root, comms, n_comms, NULL, 0,
				 &pids, &n, &err) == 0) {
		qsort(pids, n, sizeof(*pids), by_pid);
		for (size_t i = 0; i < n && !stopping(w); i++)
			if (!known(w, pids[i]))
				warm_process(w, pids[i]);
		free(w->known);
		w->known = pids;
		w->n_known = n;
	}
	pthread_mutex_lock(&w->lock);
	w->stats.passes++;
	w->stats.last_pass_ms = vm_clock_ns(CLOCK_REALTIME) / 1000000;
	w->stats.last_pass_took_ms =
		(vm_clock_ns(CLOCK_MONOTONIC) - t0) / 1000000;
	snprintf(w->stats.error, sizeof(w->stats.error), "%s",
		 err.code ? vm_error_str(&err) : "");
	pthread_mutex_unlock(&w->lock);
}

static void *warm_main(void *arg)
{
	struct vm_warm *w = arg;
	uint64_t interval = (uint64_t)w->cfg.interval_ms * 1000000;

	do
		pass(w);
	while (!sleep_until(w, vm_clock_ns(CLOCK_MONOTONIC) + interval));
	return NULL;
}

int vm_warm_start(const struct vm_warm_config *cfg, struct vm_warm **out,
		  struct vm_error *err)
{
	struct vm_warm *w = calloc(1, sizeof(*w));
	int r;

	*out = NULL;
	/* Its workers, at nice 19, made by the jobs the thread queues. */
	if (w)
		w->pool = vm_iopool_new_nice(WARM_NICE);
	if (!w || !w->pool) {
		free(w);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	w->cfg = *cfg;
	w->cfg.interval_ms = cfg->interval_ms ?: VM_WARM_INTERVAL_MS;
	w->cfg.proc_root = cfg->proc_root ?: "/proc";
	w->default_comm = VM_DEFAULT_COMM;
	pthread_mutex_init(&w->lock, NULL);
	vm_cond_init_monotonic(&w->wake);
	r = pthread_create(&w->thread, NULL, warm_main, w);
	if (r) {
		vm_warm_stop(w);
		return vm_error_errno(err, r,
				      "cannot start the thread that warms "
				      "the targets' binaries");
	}
	w->started = true;
	*out = w;
	return 0;
}

void vm_warm_stop(struct vm_warm *w)
{
	if (!w)
		return;
	vm_cond_raise(&w->wake, &w->lock, &w->stop);
	/* A read waited for ends at once; a stuck one stays the pool's. */
	vm_iopool_shutdown(w->pool);
	if (w->started)
		pthread_join(w->thread, NULL);
	vm_iopool_free(w->pool);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w->known);
	free(w->files);
	free(w);
}

void vm_warm_stats(struct vm_warm *w, struct vm_warm_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	*out = w->stats;
	pthread_mutex_unlock(&w->lock);
}
