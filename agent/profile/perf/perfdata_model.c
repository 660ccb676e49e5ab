// SPDX-License-Identifier: Apache-2.0
/*
 * perfdata_model.c - replays the records of perf.data, in time order, into
 * the state of every thread and process of the system (command name,
 * thread group, executable mappings, lineage, exit) and keeps the samples
 * of the target processes, aggregated per {pid, tid, comm, stacks}.
 *
 * perf records system-wide (see perf_backend.c for why), so the selection
 * happens here, and it must give what the eBPF backend's in-kernel filter
 * gives: a sample is kept when its thread's command name at that moment is
 * a target name, or when its process is a target pid or was forked from one
 * during the recording.  The model follows what the kernel reports:
 *
 *   COMM   names a thread; with the exec flag the process got a new
 *          address space, so its old mappings are dropped
 *   FORK   a new thread inherits its creator's name; a new process also
 *          inherits its parent's mappings (no MMAP record repeats them)
 *          and its target lineage
 *   MMAP2  adds an executable mapping (with the build id when perf ran
 *          with --buildid-mmap), trimming what it overlaps
 *   EXIT   of a thread group leader marks the process as exited
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>

#include "agent/profile/limits.h"
#include "agent/profile/perf/perfdata_int.h"
#include "common/array.h"
#include "common/cleanup.h"

#define MAX_FRAMES 512 /* per side; perf's own limit is 127 + markers */
#define NO_SLOT UINT32_MAX

/* u32 -> u32 open-addressing map (pid/tid to array index). */
struct idmap {
	uint32_t *keys;
	uint32_t *vals; /* NO_SLOT: empty */
	size_t cap; /* power of two */
	size_t n;
};

struct thread {
	uint32_t tid, pid;
	char comm[VM_COMM_LEN];
};

struct proc {
	uint32_t pid;
	char comm[VM_COMM_LEN];
	bool lineage; /* a target pid, or forked from one */
	bool excluded; /* never a target */
	bool exited;
	bool sampled;
	struct vm_mapping *maps;
	size_t n_maps, cap_maps;
};

struct pd_model {
	const char *const *comms;
	size_t n_comms;
	struct vm_samples *out;
	struct thread *thr;
	size_t n_thr, cap_thr;
	struct idmap thr_idx;
	struct proc *proc;
	size_t n_proc, cap_proc;
	struct idmap proc_idx;
	uint32_t *slots; /* stack hash: index + 1 into out->v, 0 empty */
	size_t n_slots;
	uint64_t user[MAX_FRAMES], kernel[MAX_FRAMES];
	struct pd_unwinder unwinder; /* --call-graph dwarf's user stacks */
};

static const char *const default_comms[] = { VM_DEFAULT_COMM };

static size_t idmap_pos(const struct idmap *m, uint32_t key)
{
	size_t i = (key * 2654435761u) & (m->cap - 1);

	while (m->vals[i] != NO_SLOT && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static uint32_t idmap_get(const struct idmap *m, uint32_t key)
{
	return m->cap ? m->vals[idmap_pos(m, key)] : NO_SLOT;
}

static int idmap_put(struct idmap *m, uint32_t key, uint32_t val)
{
	if (2 * (m->n + 1) > m->cap) {
		struct idmap bigger = { .cap = m->cap ? 2 * m->cap : 64 };

		bigger.keys = malloc(bigger.cap * sizeof(*bigger.keys));
		bigger.vals = malloc(bigger.cap * sizeof(*bigger.vals));
		if (!bigger.keys || !bigger.vals) {
			free(bigger.keys);
			free(bigger.vals);
			return -ENOMEM;
		}
		memset(bigger.vals, 0xff, bigger.cap * sizeof(*bigger.vals));
		for (size_t i = 0; i < m->cap; i++)
			if (m->vals[i] != NO_SLOT) {
				size_t j = idmap_pos(&bigger, m->keys[i]);

				bigger.keys[j] = m->keys[i];
				bigger.vals[j] = m->vals[i];
				bigger.n++;
			}
		free(m->keys);
		free(m->vals);
		*m = bigger;
	}
	size_t i = idmap_pos(m, key);

	if (m->vals[i] == NO_SLOT)
		m->n++;
	m->keys[i] = key;
	m->vals[i] = val;
	return 0;
}

static void idmap_free(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
}

static void maps_clear(struct proc *p)
{
	for (size_t i = 0; i < p->n_maps; i++) {
		free(p->maps[i].path);
		free(p->maps[i].open_path);
	}
	p->n_maps = 0;
}

static struct thread *thread_get(struct pd_model *m, uint32_t tid, uint32_t pid)
{
	uint32_t i = idmap_get(&m->thr_idx, tid);
	struct thread *t;

	if (i != NO_SLOT)
		return &m->thr[i];
	if (vm_grow(m->thr, &m->cap_thr, m->n_thr + 1) < 0 ||
	    idmap_put(&m->thr_idx, tid, (uint32_t)m->n_thr) < 0)
		return NULL;
	t = &m->thr[m->n_thr++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->pid = pid;
	return t;
}

static struct proc *proc_get(struct pd_model *m, uint32_t pid)
{
	uint32_t i = idmap_get(&m->proc_idx, pid);
	struct proc *p;

	if (i != NO_SLOT)
		return &m->proc[i];
	if (vm_grow(m->proc, &m->cap_proc, m->n_proc + 1) < 0 ||
	    idmap_put(&m->proc_idx, pid, (uint32_t)m->n_proc) < 0)
		return NULL;
	p = &m->proc[m->n_proc++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

int pd_model_new(const struct vm_perfdata_filter *filter,
		 struct vm_samples *out, struct pd_model **mp)
{
	struct pd_model *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->out = out;
	m->unwinder.home = filter ? filter->binaries : NULL;
	m->unwinder.iopool = filter ? filter->iopool : NULL;
	m->comms = filter ? filter->comms : NULL;
	m->n_comms = filter ? filter->n_comms : 0;
	if (!m->n_comms && !(filter && filter->n_pids)) {
		m->comms = default_comms;
		m->n_comms = ARRAY_SIZE(default_comms);
	}
	for (size_t i = 0; filter && i < filter->n_pids; i++) {
		struct proc *p = proc_get(m, (uint32_t)filter->pids[i]);

		if (!p) {
			pd_model_free(m);
			return -ENOMEM;
		}
		p->lineage = true;
	}
	for (size_t i = 0; filter && i < filter->n_exclude; i++) {
		struct proc *p = proc_get(m, (uint32_t)filter->exclude[i]);

		if (!p) {
			pd_model_free(m);
			return -ENOMEM;
		}
		p->excluded = true;
	}
	*mp = m;
	return 0;
}

void pd_model_free(struct pd_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_proc; i++) {
		maps_clear(&m->proc[i]);
		free(m->proc[i].maps);
	}
	free(m->proc);
	free(m->thr);
	idmap_free(&m->thr_idx);
	idmap_free(&m->proc_idx);
	free(m->slots);
	pd_unwinder_free(&m->unwinder);
	free(m);
}

int pd_model_comm(struct pd_model *m, const struct pd_comm *c)
{
	struct thread *t = thread_get(m, c->tid, c->pid);
	struct proc *p = proc_get(m, c->pid);

	if (!t || !p)
		return -ENOMEM;
	t->pid = c->pid;
	memcpy(t->comm, c->comm, sizeof(t->comm));
	if (c->tid == c->pid || !p->comm[0])
		memcpy(p->comm, c->comm, sizeof(p->comm));
	if (c->exec) /* a new program: the old address space is gone */
		maps_clear(p);
	return 0;
}

static int map_copy(struct vm_mapping *dst, const struct vm_mapping *src)
{
	*dst = *src;
	dst->open_path = NULL;
	if (src->path && !(dst->path = strdup(src->path)))
		return -ENOMEM;
	return 0;
}

int pd_model_fork(struct pd_model *m, const struct pd_task *f)
{
	struct thread *parent_t = thread_get(m, f->ptid, f->ppid);
	char comm[VM_COMM_LEN];
	struct thread *t;
	struct proc *parent, *child;

	if (!parent_t)
		return -ENOMEM;
	memcpy(comm, parent_t->comm, sizeof(comm));
	t = thread_get(m, f->tid, f->pid);
	if (!t)
		return -ENOMEM;
	t->pid = f->pid;
	memcpy(t->comm, comm, sizeof(comm));
	if (f->pid == f->ppid)
		return 0; /* a new thread of the same process */

	parent = proc_get(m, f->ppid);
	if (!parent)
		return -ENOMEM;
	size_t pi = (size_t)(parent - m->proc);
	child = proc_get(m, f->pid);
	if (!child)
		return -ENOMEM;
	parent = &m->proc[pi]; /* proc_get may have moved the array */
	if (child == parent)
		return 0;
	maps_clear(child); /* a reused pid starts afresh */
	child->exited = false;
	child->lineage = child->lineage || parent->lineage;
	memcpy(child->comm, comm, sizeof(comm));
	if (f->synthesized)
		return 0;
	if (vm_grow(child->maps, &child->cap_maps, parent->n_maps) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < parent->n_maps; i++) {
		if (map_copy(&child->maps[i], &parent->maps[i]) < 0)
			return -ENOMEM;
		child->n_maps = i + 1;
	}
	return 0;
}

int pd_model_exit(struct pd_model *m, const struct pd_task *e)
{
	struct proc *p;

	if (e->pid != e->tid)
		return 0;
	p = proc_get(m, e->pid);
	if (!p)
		return -ENOMEM;
	p->exited = true;
	return 0;
}

/* Make room for [start, end) in p's mappings: drop or trim what overlaps. */
static int maps_carve(struct proc *p, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < p->n_maps; i++) {
		struct vm_mapping *o = &p->maps[i];

		if (o->end <= start || o->start >= end)
			continue;
		if (o->start < start && o->end > end) { /* split in two */
			if (vm_grow(p->maps, &p->cap_maps, p->n_maps + 1) < 0)
				return -ENOMEM;
			o = &p->maps[i];
			struct vm_mapping *tail = &p->maps[p->n_maps];

			if (map_copy(tail, o) < 0)
				return -ENOMEM;
			p->n_maps++;
			tail->pgoff += end - o->start;
			tail->start = end;
			o->end = start;
		} else if (o->start < start) {
			o->end = start;
		} else if (o->end > end) {
			o->pgoff += end - o->start;
			o->start = end;
		} else {
			free(o->path);
			free(o->open_path);
			p->maps[i--] = p->maps[--p->n_maps];
		}
	}
	return 0;
}

int pd_model_mmap(struct pd_model *m, const struct pd_mmap *mm)
{
	struct vm_mapping *v;
	const char *name = mm->filename;
	struct proc *p;

	/* pid -1: the kernel and its modules, symbolized from kallsyms. */
	if (!mm->exec || mm->pid == UINT32_MAX || !mm->len ||
	    mm->start + mm->len < mm->start)
		return 0;
	p = proc_get(m, mm->pid);
	if (!p || maps_carve(p, mm->start, mm->start + mm->len) < 0 ||
	    vm_grow(p->maps, &p->cap_maps, p->n_maps + 1) < 0)
		return -ENOMEM;
	v = &p->maps[p->n_maps];
	memset(v, 0, sizeof(*v));
	v->start = mm->start;
	v->end = mm->start + mm->len;
	v->pgoff = mm->pgoff;
	/* JIT code and anonymous memory have no file to read symbols from. */
	if (name[0] && strcmp(name, "//anon") && strncmp(name, "[anon", 5) &&
	    !(v->path = strdup(name)))
		return -ENOMEM;
	memcpy(v->build_id, mm->build_id, mm->build_id_len);
	v->build_id_len = mm->build_id_len;
	p->n_maps++;
	return 0;
}

static bool comm_is_target(const struct pd_model *m, const char *comm)
{
	for (size_t i = 0; i < m->n_comms; i++)
		if (!strncmp(comm, m->comms[i], VM_COMM_LEN - 1))
			return true;
	return false;
}

static uint64_t stack_hash(uint32_t pid, uint32_t tid, const char *comm,
			   const uint64_t *u, size_t nu, const uint64_t *k,
			   size_t nk)
{
	uint64_t h = 1469598103934665603ULL;
	uint64_t words[4] = { pid, tid, nu, nk };

#define MIX(x) (h = (h ^ (x)) * 1099511628211ULL)
	for (size_t i = 0; i < 4; i++)
		MIX(words[i]);
	for (size_t i = 0; i < VM_COMM_LEN && comm[i]; i++)
		MIX((uint8_t)comm[i]);
	for (size_t i = 0; i < nu; i++)
		MIX(u[i]);
	for (size_t i = 0; i < nk; i++)
		MIX(k[i]);
#undef MIX
	return h;
}

static bool stack_equal(const struct vm_sample *s, uint32_t pid, uint32_t tid,
			const char *comm, const uint64_t *u, size_t nu,
			const uint64_t *k, size_t nk)
{
	return s->pid == pid && s->tid == tid && s->n_user == nu &&
	       s->n_kernel == nk && !strncmp(s->comm, comm, VM_COMM_LEN) &&
	       !memcmp(s->user_ips, u, nu * sizeof(*u)) &&
	       !memcmp(s->kernel_ips, k, nk * sizeof(*k));
}

static int slots_rehash(struct pd_model *m)
{
	size_t cap = m->n_slots ? 2 * m->n_slots : 1024;
	uint32_t *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->out->n; i++) {
		const struct vm_sample *s = &m->out->v[i];
		size_t j = stack_hash(s->pid, s->tid, s->comm, s->user_ips,
				      s->n_user, s->kernel_ips, s->n_kernel) &
			   (cap - 1);

		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(m->slots);
	m->slots = slots;
	m->n_slots = cap;
	return 0;
}

static uint64_t *dup_ips(const uint64_t *v, size_t n)
{
	uint64_t *p = malloc(n ? n * sizeof(*v) : 1);

	if (p)
		memcpy(p, v, n * sizeof(*v));
	return p;
}

static int add_stack(struct pd_model *m, uint32_t pid, uint32_t tid,
		     const char *comm, size_t nu, size_t nk)
{
	struct vm_samples *out = m->out;
	struct vm_sample *s;
	size_t j;

	if (2 * (out->n + 1) > m->n_slots && slots_rehash(m) < 0)
		return -ENOMEM;
	j = stack_hash(pid, tid, comm, m->user, nu, m->kernel, nk) &
	    (m->n_slots - 1);
	for (; m->slots[j]; j = (j + 1) & (m->n_slots - 1)) {
		s = &out->v[m->slots[j] - 1];
		if (stack_equal(s, pid, tid, comm, m->user, nu, m->kernel,
				nk)) {
			s->count++;
			return 0;
		}
	}
	if (vm_grow(out->v, &out->cap, out->n + 1) < 0)
		return -ENOMEM;
	s = &out->v[out->n];
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->tid = tid;
	memcpy(s->comm, comm, VM_COMM_LEN);
	s->count = 1;
	s->n_user = (uint32_t)nu;
	s->n_kernel = (uint32_t)nk;
	s->user_ips = dup_ips(m->user, nu);
	s->kernel_ips = dup_ips(m->kernel, nk);
	if (!s->user_ips || !s->kernel_ips) {
		free(s->user_ips);
		free(s->kernel_ips);
		return -ENOMEM;
	}
	m->slots[j] = (uint32_t)out->n + 1;
	out->n++;
	return 0;
}

int pd_model_sample(struct pd_model *m, const struct pd_sample *s)
{
	enum { NONE, USER, KERNEL, SKIP } ctx = NONE, mode;
	uint16_t cpumode = s->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	struct thread *t;
	struct proc *p;
	size_t nu = 0, nk = 0;
	const char *comm;

	mode = cpumode == PERF_RECORD_MISC_KERNEL ? KERNEL :
	       cpumode == PERF_RECORD_MISC_USER	  ? USER :
						    SKIP;
	t = thread_get(m, s->tid, s->pid);
	if (!t)
		return -ENOMEM;
	p = proc_get(m, s->pid);
	if (!p)
		return -ENOMEM;
	comm = t->comm[0] ? t->comm : p->comm;
	if (s->pid == 0 || p->excluded ||
	    (!p->lineage && !comm_is_target(m, comm)))
		return 0;
	p->sampled = true;
	if (!m->out)
		return 1; /* counting only (vm_perfdata_counter) */

	for (uint64_t i = 0; s->chain && i < s->nr; i++) {
		uint64_t ip = pd_u64(s->chain + 8 * i);

		if (ip >= PERF_CONTEXT_MAX) {
			ctx = ip == PERF_CONTEXT_KERNEL ? KERNEL :
			      ip == PERF_CONTEXT_USER	? USER :
							  SKIP; /* hv, guest */
			continue;
		}
		switch (ctx == NONE ? mode : ctx) {
		case KERNEL:
			if (nk < MAX_FRAMES)
				m->kernel[nk++] = ip;
			break;
		case USER:
			if (nu < MAX_FRAMES)
				m->user[nu++] = ip;
			break;
		default:
			break;
		}
	}
	if (!s->chain && mode == KERNEL)
		m->kernel[nk++] = s->ip;
	else if (!s->chain && mode == USER)
		m->user[nu++] = s->ip;
	/* --call-graph dwarf: the user side is ours to walk. */
	if (s->has_regs && s->stack && nu <= 1)
		nu = pd_unwind_user(&m->unwinder, s->pid, p->maps, p->n_maps, s,
				    m->user, MAX_FRAMES);
	if (add_stack(m, s->pid, s->tid, comm, nu, nk) < 0)
		return -ENOMEM;
	return 1;
}

void pd_model_lost(struct pd_model *m, uint64_t lost)
{
	if (m->out)
		m->out->lost_samples += lost;
}

int pd_model_build_id(struct pd_model *m, const char *filename,
		      const uint8_t *id, size_t len)
{
	if (len > VM_BUILD_ID_MAX)
		len = VM_BUILD_ID_MAX;
	for (size_t i = 0; i < m->n_proc; i++) {
		struct proc *p = &m->proc[i];

		for (size_t j = 0; p->sampled && j < p->n_maps; j++) {
			struct vm_mapping *v = &p->maps[j];

			if (v->build_id_len || !v->path ||
			    strcmp(v->path, filename))
				continue;
			memcpy(v->build_id, id, len);
			v->build_id_len = (uint8_t)len;
		}
	}
	return 0;
}

int pd_model_finish(struct pd_model *m)
{
	struct vm_samples *out = m->out;

	out->unwound_by_table += m->unwinder.counts.by_table;
	out->unwound_by_frame_pointer += m->unwinder.counts.by_frame_pointer;
	out->unwind_cut += m->unwinder.counts.cut;
	out->unwind_binaries_skipped += m->unwinder.tables_skipped;
	for (size_t i = 0; i < m->n_proc; i++) {
		struct proc *p = &m->proc[i];
		struct vm_process *v;

		if (!p->sampled)
			continue;
		if (vm_grow(out->procs, &out->cap_procs, out->n_procs + 1) < 0)
			return -ENOMEM;
		v = &out->procs[out->n_procs++];
		memset(v, 0, sizeof(*v));
		v->pid = p->pid;
		memcpy(v->comm, p->comm, VM_COMM_LEN);
		v->exited = p->exited;
		v->maps = TAKE_PTR(p->maps);
		v->n_maps = p->n_maps;
		v->cap_maps = p->cap_maps;
		p->n_maps = p->cap_maps = 0;
	}
	return 0;
}
