// SPDX-License-Identifier: Apache-2.0
/*
 * memory.c - the memory snapshot, a backend of the engine (backend.h) for
 * the kind `memory` (docs/memory.md): where each target's memory is now.
 *
 * A snapshot takes no time to wait for: the backend says at once that its
 * sampling ended (ended_fd), and collect takes it.  For each target, what
 * the kernel says it holds (/proc/PID/smaps_rollup, agent/samples/smaps.h)
 * and, for a PostgreSQL process whose executable exports TopMemoryContext,
 * its memory-context tree read from outside it
 * (agent/samples/pg_memctx_read.h): one sample per context, its stack the
 * context path, its value the context's bytes, beside three pseudo-frames
 * that make the process's sum its PSS.  Any other target gets the kernel's
 * breakdown alone, by kind of mapping (/proc/PID/smaps).  What was cut,
 * partial or left negative is said in the profile's comment.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "agent/profile/backend.h"
#include "agent/profile/bpf/bpf_pg.h"
#include "agent/profile/memory.h"
#include "agent/profile/memsnap.h"
#include "agent/samples/pg_memctx_read.h"
#include "agent/samples/proc.h"
#include "agent/samples/smaps.h"

/*
 * Frames of all context stacks of one snapshot (8 bytes each): past it,
 * a process's remaining contexts are summed into one pseudo-frame.
 */
#define VM_MEMORY_MAX_FRAMES ((size_t)4 << 20)
/* Lines of the comment about single processes, then a count. */
#define VM_MEMORY_MAX_NOTES 32

#define FRAME_OUTSIDE VM_MEM_FRAME_OUTSIDE
#define FRAME_SHARED VM_MEM_FRAME_SHARED
#define FRAME_FILES VM_MEM_FRAME_FILES
#define FRAME_PAST_BOUND "[contexts past the profile's bound]"

struct memory_state {
	const struct vm_profile_request *req;
	const struct vm_engine_config *cfg;
	int ended; /* an eventfd, readable from the start */
	struct vm_iopool *own_pool; /* without an agent context */
	size_t frames; /* of the context stacks so far */
	size_t notes; /* lines about single processes */
	uint64_t contexts, partial, not_read;
	/* Read nothing but the contexts (vm_memory_snapshot's contexts_only) */
	bool contexts_only;
	char *smaps; /* VM_SMAPS_MAX_BYTES, for /proc/PID/smaps */
};

static int memory_start(const struct vm_profile_request *req,
			const struct vm_engine_config *cfg, void *kept,
			vm_process_seen_fn *seen, void **state,
			struct vm_error *err)
{
	struct memory_state *m = calloc(1, sizeof(*m));
	uint64_t one = 1;

	if (!m)
		return vm_error_set(err, ENOMEM, "out of memory");
	m->req = req;
	m->cfg = cfg;
	m->ended = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (m->ended < 0 || write(m->ended, &one, sizeof(one)) != sizeof(one)) {
		if (m->ended >= 0)
			close(m->ended);
		free(m);
		return vm_error_errno(err, errno, "cannot create an eventfd");
	}
	*state = m;
	return 0;
}

static int memory_ended_fd(void *state)
{
	return ((struct memory_state *)state)->ended;
}

/* A line about one process, while there is room for it. */
#define NOTE(m, out, ...)                                          \
	do {                                                       \
		if ((m)->notes++ < VM_MEMORY_MAX_NOTES)            \
			(void)vm_samples_note((out), __VA_ARGS__); \
	} while (0)

/* One sample of pid, its frames names[] (leaf first), bytes its value. */
static int add(struct vm_samples *out, const struct vm_process *p,
	       const uint64_t *names, uint32_t n, uint64_t bytes,
	       uint32_t wait_event, uint64_t query_id)
{
	int r = vm_samples_add(out, p->pid, p->pid, p->comm, 1, names, n, NULL,
			       0);

	if (r < 0)
		return r;
	out->v[out->n - 1].value = bytes;
	out->v[out->n - 1].wait_event = wait_event;
	out->v[out->n - 1].query_id = query_id;
	return 0;
}

/* A one-frame sample named frame, when bytes is not 0. */
static int add_pseudo(struct vm_samples *out, const struct vm_process *p,
		      const char *frame, uint64_t bytes, uint32_t wait_event,
		      uint64_t query_id)
{
	uint32_t idx;
	uint64_t ip;
	int r;

	if (!bytes)
		return 0;
	r = vm_samples_add_name(out, frame, &idx);
	if (r < 0)
		return r;
	ip = idx;
	return add(out, p, &ip, 1, bytes, wait_event, query_id);
}

/* The contexts of t, one sample each, within the snapshot's bound. */
static int add_contexts(struct memory_state *m, struct vm_samples *out,
			const struct vm_process *p,
			const struct vm_memctx_tree *t, uint32_t wait_event,
			uint64_t query_id)
{
	uint64_t ips[VM_MEMCTX_MAX_DEPTH + 1], past = 0;
	uint32_t *name = calloc(t->n ? t->n : 1, sizeof(*name));
	size_t past_n = 0;
	int r = 0;

	if (!name)
		return -ENOMEM;
	for (size_t i = 0; i < t->n && r == 0; i++) {
		const struct vm_memctx_node *c = &t->v[i];
		const char *s = vm_memctx_str(t, c->name);
		uint32_t n = 0, ident = 0;

		r = vm_samples_add_name(out, s[0] ? s : "[unnamed]", &name[i]);
		if (r < 0)
			break;
		if (m->frames + c->depth + 1 > VM_MEMORY_MAX_FRAMES ||
		    c->depth + 1 > VM_MEMCTX_MAX_DEPTH + 1) {
			past += c->mem_allocated;
			past_n++;
			continue;
		}
		for (uint32_t j = (uint32_t)i; j != VM_MEMCTX_NONE;
		     j = t->v[j].parent)
			ips[n++] = name[j];
		if (vm_memctx_str(t, c->ident)[0]) {
			r = vm_samples_add_name(out, vm_memctx_str(t, c->ident),
						&ident);
			if (r < 0)
				break;
			ident++;
		}
		r = add(out, p, ips, n, c->mem_allocated, wait_event, query_id);
		if (r < 0)
			break;
		out->v[out->n - 1].memctx_type = (uint8_t)(c->type + 1);
		out->v[out->n - 1].memctx_ident = ident;
		m->frames += n;
	}
	free(name);
	if (r == 0 && past_n) {
		NOTE(m, out,
		     "pid %u: %zu contexts (%" PRIu64
		     " bytes) past the profile's bound of %zu frames, summed as " FRAME_PAST_BOUND,
		     p->pid, past_n, past, VM_MEMORY_MAX_FRAMES);
		r = add_pseudo(out, p, FRAME_PAST_BOUND, past, wait_event,
			       query_id);
	}
	return r;
}

/* What a walk cut or could not read, said in the comment. */
static void note_walk(struct memory_state *m, struct vm_samples *out,
		      const struct vm_process *p,
		      const struct vm_memctx_tree *t)
{
	if (t->time_up) {
		m->partial++;
		NOTE(m, out, "pid %u: partial: %s (the walk may take %d ms)",
		     p->pid, t->why, VM_MEMCTX_WALK_MS / 5 * 4);
	} else if (t->partial) {
		m->partial++;
		NOTE(m, out,
		     "pid %u: its memory contexts changed under the walk on each of %u tries: partial, %zu contexts kept; the last failure: %s",
		     p->pid, t->tries, t->n, t->why);
	}
	if (t->cut_nodes || t->cut_depth || t->cut_names)
		NOTE(m, out,
		     "pid %u: the walk was bounded: %" PRIu64
		     " contexts past %d not followed, %" PRIu64
		     " subtrees deeper than %d cut, %" PRIu64
		     " names or idents cut or left out",
		     p->pid, t->cut_nodes, VM_MEMCTX_MAX_NODES, t->cut_depth,
		     VM_MEMCTX_MAX_DEPTH, t->cut_names);
}

/*
 * A PostgreSQL process: its contexts, then what the kernel says it holds
 * outside them; 1 when its contexts could not be read (it then gets the
 * kernel's breakdown alone).
 */
static int snapshot_pg(struct memory_state *m, struct vm_samples *out,
		       struct vm_iopool *pool, struct vm_process *p,
		       const struct vm_smaps_rollup *ru)
{
	struct vm_pg_labels_note note;
	const struct vm_memctx_tags *tags;
	struct vm_memctx_tree t = { 0 };
	struct pg_proc pp;
	uint32_t wait_event = 0;
	uint64_t top = 0, query_id = 0, anon;
	int r;

	vm_pg_labels_note_init(&note);
	r = vm_bpf_pg_locate_memory(pool,
				    m->cfg->ctx ? m->cfg->ctx->binaries : NULL,
				    &note, "/proc", p, &pp, &top);
	vm_pg_labels_note_destroy(&note);
	if (r < 0 || !top)
		return 1; /* not PostgreSQL, or one we cannot read */
	tags = vm_memctx_tags(p->pg_major);
	if (!tags) {
		NOTE(m, out,
		     "pid %u: PostgreSQL %u has no table of context tags here: its contexts are not read",
		     p->pid, p->pg_major);
		return 1;
	}
	vm_bpf_pg_read_labels(p->pid, &pp, &wait_event, &query_id);
	r = vm_pg_memctx_read(pool, p->pid, tags, top, NULL, VM_MEMCTX_WALK_MS,
			      &t);
	if (r < 0) {
		m->not_read++;
		NOTE(m, out,
		     "pid %u: its memory contexts could not be read: %s%s%s",
		     p->pid, strerror(-r), t.why[0] ? ": " : "", t.why);
		vm_memctx_tree_free(&t);
		return r == -ENOMEM ? r : 1;
	}
	note_walk(m, out, p, &t);
	m->contexts += t.n;
	r = add_contexts(m, out, p, &t, wait_event, query_id);
	/*
	 * The contexts' bytes are malloc'd, not all resident; the
	 * process's anonymous PSS holds them and what malloc keeps beside.
	 */
	anon = ru->split ? ru->pss_anon : ru->anonymous;
	if (r == 0 && t.total > anon && !m->contexts_only)
		NOTE(m, out,
		     "pid %u: its contexts hold %" PRIu64
		     " bytes more than its anonymous memory (%" PRIu64
		     "): malloc'd but not resident, or shared with the postmaster; " FRAME_OUTSIDE
		     " is 0",
		     p->pid, t.total - anon, anon);
	if (r == 0)
		r = add_pseudo(out, p, FRAME_OUTSIDE,
			       t.total < anon ? anon - t.total : 0, wait_event,
			       query_id);
	if (r == 0)
		r = add_pseudo(out, p, FRAME_SHARED, ru->pss_shmem, wait_event,
			       query_id);
	if (r == 0)
		r = add_pseudo(out, p, FRAME_FILES, ru->pss_file, wait_event,
			       query_id);
	vm_memctx_tree_free(&t);
	return r;
}

/* Any other process: its PSS by kind of mapping. */
static int snapshot_kernel(struct memory_state *m, struct vm_samples *out,
			   struct vm_iopool *pool, const struct vm_process *p)
{
	struct vm_smaps_kinds k;
	char path[64];
	size_t len = 0;
	int r;

	if (!m->smaps && !(m->smaps = malloc(VM_SMAPS_MAX_BYTES)))
		return -ENOMEM;
	snprintf(path, sizeof(path), "/proc/%u/smaps", p->pid);
	r = vm_iopool_read_small(pool, path, 0, m->smaps, VM_SMAPS_MAX_BYTES,
				 &len, VM_IOPOOL_READ_MS);
	if (r < 0) {
		NOTE(m, out, "pid %u: %s could not be read: %s", p->pid, path,
		     strerror(-r));
		return 0;
	}
	if (len + 1 >= VM_SMAPS_MAX_BYTES)
		NOTE(m, out,
		     "pid %u: only the first %zu bytes of its smaps were read",
		     p->pid, VM_SMAPS_MAX_BYTES);
	vm_smaps_parse(m->smaps, len, &k);
	for (int i = 0; i < VM_SMAPS_KINDS && r == 0; i++)
		r = add_pseudo(out, p, vm_smaps_kind_frame(i), k.pss[i], 0, 0);
	return r;
}

static int snapshot(struct memory_state *m, struct vm_samples *out,
		    struct vm_iopool *pool, uint32_t pid)
{
	struct vm_smaps_rollup ru;
	struct vm_process *p;
	char path[64], buf[4096];
	int r;

	snprintf(path, sizeof(path), "/proc/%u/smaps_rollup", pid);
	memset(&ru, 0, sizeof(ru));
	r = m->contexts_only ?
		    0 :
		    vm_iopool_read_small(pool, path, 0, buf, sizeof(buf), NULL,
					 VM_IOPOOL_OPEN_MS);
	if (r < 0 ||
	    (!m->contexts_only && vm_smaps_rollup_parse(buf, &ru) < 0)) {
		NOTE(m, out, "pid %u: %s could not be read: %s", pid, path,
		     r < 0 ? strerror(-r) : "no Pss line");
		return 0; /* gone, or a kernel thread */
	}
	p = vm_samples_get_process(out, pid);
	if (!p)
		return -ENOMEM;
	if (vm_proc_read_comm("/proc", pid, p->comm) < 0)
		p->comm[0] = '\0';
	if (m->contexts_only || vm_proc_read_title("/proc", pid, &p->title) < 0)
		p->title = NULL;
	r = snapshot_pg(m, out, pool, p, &ru);
	if (r == 1 && !m->contexts_only)
		r = snapshot_kernel(m, out, pool, p);
	return r;
}

/* The snapshot of pids[n] into out, its comment's last lines included. */
static int snapshot_all(struct memory_state *m, const uint32_t *pids, size_t n,
			struct vm_samples *out, struct vm_error *err)
{
	struct vm_iopool *pool = m->cfg->ctx ? m->cfg->ctx->iopool : NULL;
	int r = 0;

	if (!pool)
		pool = m->own_pool = vm_iopool_new();
	if (!pool)
		return vm_error_set(err, ENOMEM, "out of memory");
	for (size_t i = 0; i < n && r >= 0; i++)
		r = snapshot(m, out, pool, pids[i]);
	if (r < 0)
		return vm_error_set(
			err, -r,
			"out of memory while taking a memory snapshot");
	if (m->notes > VM_MEMORY_MAX_NOTES)
		vm_samples_note(out, "and %zu more such lines",
				m->notes - VM_MEMORY_MAX_NOTES);
	vm_samples_note(out,
			"vmtools: memory: %zu processes; %" PRIu64
			" memory contexts read; %" PRIu64
			" PostgreSQL processes walked partially, %" PRIu64
			" whose contexts could not be read",
			out->n_procs, m->contexts, m->partial, m->not_read);
	return 0;
}

static int memory_collect(void *state, struct vm_samples *out,
			  struct vm_error *err)
{
	struct memory_state *m = state;
	const struct vm_profile_request *req = m->req;
	uint32_t *pids = NULL;
	size_t n = 0;
	int r;

	r = vm_proc_scan_targets("/proc", req->comms, req->n_comms, req->pids,
				 req->n_pids, &pids, &n, err);
	if (r < 0)
		return r;
	r = snapshot_all(m, pids, n, out, err);
	free(pids);
	/* Each snapshot is the last one seen of its processes. */
	if (r == 0 && m->cfg->ctx &&
	    vm_oom_keep_snapshot(m->cfg->ctx->memkept, out) < 0)
		return vm_error_set(err, ENOMEM,
				    "out of memory while keeping a snapshot");
	return r;
}

int vm_memory_snapshot(const struct vm_engine_config *cfg, const uint32_t *pids,
		       size_t n, bool contexts_only, struct vm_samples *out,
		       struct vm_error *err)
{
	struct memory_state m = { .cfg = cfg,
				  .ended = -1,
				  .contexts_only = contexts_only };
	int r;

	out->kind = VM_KIND_MEMORY;
	r = snapshot_all(&m, pids, n, out, err);
	vm_iopool_free(m.own_pool);
	free(m.smaps);
	return r;
}

static void memory_destroy(void *state)
{
	struct memory_state *m = state;

	if (!m)
		return;
	if (m->ended >= 0)
		close(m->ended);
	vm_iopool_free(m->own_pool);
	free(m->smaps);
	free(m);
}

const struct vm_backend_ops vm_memory_backend = {
	.name = "memory",
	.start = memory_start,
	.ended_fd = memory_ended_fd,
	.collect = memory_collect,
	.destroy = memory_destroy,
};
