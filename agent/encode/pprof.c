// SPDX-License-Identifier: Apache-2.0
/*
 * pprof.c - a symbolized profile as pprof's profile.proto, packed with
 * protobuf-c (docs/profiler.md, "The pprof we emit"):
 *
 *   sample_type by the profile's kind (struct kind_types): for cpu
 *   [samples/count, cpu/nanoseconds], period cpu/nanoseconds = 1e9 /
 *   frequency; for offcpu [switches/count, offcpu/nanoseconds], period 1;
 *   for wall [samples/count, wall/nanoseconds], on-CPU samples worth the
 *   period and off-CPU blocks their time; default_sample_type the time
 *   (cpu, offcpu, wall); one Sample per stack (leaf first) labelled pid,
 *   tid, comm, PostgreSQL's backend_type, wait_event and query_id,
 *   off-CPU blocks sched_state, and in a wall profile thread_state; one
 *   Location per (mapping, address, function); Mappings with file, offsets
 *   and build id; Functions by name.
 *
 * Everything is first gathered into flat arrays (strings and locations
 * deduplicated through intern tables, common/intern.h, the locations
 * found last memoized in front of theirs; functions by their name's
 * string index), then pointed at by the arrays of pointers protobuf-c
 * packs.
 */
#include "agent/encode/encode.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/samples/fault_maps.h"
#include "common/array.h"
#include "common/intern.h"
#include "common/memo.h"
#include "common/satmath.h"
#include "proto/profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__ValueType ValueType;

#define MAX_LABELS 12

struct loc_node {
	uint64_t mapping, addr;
	const char *function;
	uint64_t id;
};

struct enc {
	char **strings;
	size_t n_strings, cap_strings;
	struct vm_intern str_index; /* string -> its index */
	char **owned; /* the strings copied, freed at the end */
	size_t n_owned, cap_owned;
	Function *functions;
	size_t n_functions, cap_functions;
	/* Function id by string index (0: none yet), for the names. */
	uint64_t *fn_of_str;
	size_t n_fn_of_str, cap_fn_of_str;
	Location *locations;
	Line *lines;
	size_t n_locations, cap_locations, cap_lines;
	struct vm_intern loc_index; /* struct loc_node, malloc'd */
	/* The locations found last, in front of loc_index: frames recur. */
	struct vm_memo loc_memo;
	/*
	 * By the pointer, not the bytes, for strings that stay put while
	 * the profile is encoded (interned names, a sample's comm): the
	 * string index (PTR_STRING) or function id (PTR_FUNCTION) found.
	 */
	struct vm_memo ptr_memo;
};

enum { PTR_STRING = 1, PTR_FUNCTION };

/* Slots of loc_memo: 4,096 locations (128 KiB); of ptr_memo, 1,024. */
#define LOC_MEMO_BITS 12
#define PTR_MEMO_BITS 10

static unsigned long hash_loc_node(const void *k)
{
	const struct loc_node *x = k;

	return vm_memo_hash(x->mapping, x->addr, (uintptr_t)x->function);
}

static int eq_loc_node(const void *a, const void *b)
{
	const struct loc_node *x = a, *y = b;

	return x->mapping == y->mapping && x->addr == y->addr &&
	       x->function == y->function;
}

/* The memos, and the kind of the indexes (made at their first entry). */
static void enc_init(struct enc *e)
{
	/* Without memory for the memos, everything is found in the tables. */
	vm_memo_init(&e->loc_memo, LOC_MEMO_BITS);
	vm_memo_init(&e->ptr_memo, PTR_MEMO_BITS);
	vm_intern_init(&e->loc_index, VM_INTERN_START, hash_loc_node,
		       eq_loc_node);
}

/*
 * Index of s in the string table, added when new (a copy when `copy`,
 * else s itself, which must stay put while the profile is encoded, as
 * the symbolized profile's strings and literals do); -1 on ENOMEM.
 */
static int64_t str_add(struct enc *e, const char *s, bool copy)
{
	char *str = (char *)s;
	unsigned long h;
	void *idx;

	if (vm_intern_find(&e->str_index, s, &h, &idx))
		return (int64_t)(uintptr_t)idx;
	if (vm_grow(e->strings, &e->cap_strings, e->n_strings + 1) ||
	    (copy && vm_grow(e->owned, &e->cap_owned, e->n_owned + 1)))
		return -1;
	if (copy && !(str = strdup(s)))
		return -1;
	if (vm_intern_add(&e->str_index, str, (void *)(uintptr_t)e->n_strings,
			  h) < 0) {
		if (copy)
			free(str);
		return -1;
	}
	if (copy)
		e->owned[e->n_owned++] = str;
	e->strings[e->n_strings] = str;
	return (int64_t)e->n_strings++;
}

/* A string that stays put while the profile is encoded. */
static int64_t str_idx(struct enc *e, const char *s)
{
	return str_add(e, s, false);
}

/* A string that does not (a buffer on the stack). */
static int64_t str_idx_copy(struct enc *e, const char *s)
{
	return str_add(e, s, true);
}

/* str_idx() of a string that stays put while the profile is encoded. */
static int64_t str_idx_kept(struct enc *e, const char *s)
{
	uint64_t v;
	int64_t idx;

	if (vm_memo_get(&e->ptr_memo, (uintptr_t)s, PTR_STRING, 0, &v))
		return (int64_t)v - 1;
	idx = str_idx(e, s);
	if (idx >= 0)
		vm_memo_put(&e->ptr_memo, (uintptr_t)s, PTR_STRING, 0,
			    (uint64_t)idx + 1);
	return idx;
}

static uint64_t function_id(struct enc *e, const char *name)
{
	Function *f;
	int64_t idx;
	uint64_t id;

	if (vm_memo_get(&e->ptr_memo, (uintptr_t)name, PTR_FUNCTION, 0, &id))
		return id;
	/* One function per name: found by the name's string index. */
	idx = str_idx(e, name);
	if (idx < 0 || vm_grow(e->fn_of_str, &e->cap_fn_of_str, idx + 1))
		return 0;
	for (; e->n_fn_of_str <= (size_t)idx; e->n_fn_of_str++)
		e->fn_of_str[e->n_fn_of_str] = 0;
	if (e->fn_of_str[idx]) {
		vm_memo_put(&e->ptr_memo, (uintptr_t)name, PTR_FUNCTION, 0,
			    e->fn_of_str[idx]);
		return e->fn_of_str[idx];
	}
	if (vm_grow(e->functions, &e->cap_functions, e->n_functions + 1))
		return 0;
	f = &e->functions[e->n_functions];
	perftools__profiles__function__init(f);
	f->id = e->n_functions + 1;
	f->name = idx;
	f->system_name = idx;
	e->fn_of_str[idx] = f->id;
	e->n_functions++;
	vm_memo_put(&e->ptr_memo, (uintptr_t)name, PTR_FUNCTION, 0, f->id);
	return f->id;
}

static uint64_t location_id(struct enc *e, const struct vm_sym_frame *fr,
			    const char *function)
{
	struct loc_node key = { .mapping = fr->mapping,
				.addr = fr->addr,
				.function = function },
			*node;
	const struct loc_node *found;
	uint64_t fid = 0, id;
	unsigned long h;
	Location *l;

	if (vm_memo_get(&e->loc_memo, key.mapping, key.addr,
			(uintptr_t)function, &id))
		return id;
	found = vm_intern_find(&e->loc_index, &key, &h, NULL);
	if (found) {
		id = found->id;
		vm_memo_put(&e->loc_memo, key.mapping, key.addr,
			    (uintptr_t)function, id);
		return id;
	}
	if (function && !(fid = function_id(e, function)))
		return 0;
	if (vm_grow(e->locations, &e->cap_locations, e->n_locations + 1) ||
	    vm_grow(e->lines, &e->cap_lines, e->n_locations + 1))
		return 0;
	node = malloc(sizeof(*node));
	if (!node)
		return 0;
	l = &e->locations[e->n_locations];
	perftools__profiles__location__init(l);
	l->id = e->n_locations + 1;
	l->mapping_id = fr->mapping;
	l->address = fr->addr;
	perftools__profiles__line__init(&e->lines[e->n_locations]);
	e->lines[e->n_locations].function_id = fid;
	l->n_line = fid ? 1 : 0; /* pointers are set when packing */
	*node = key;
	node->id = l->id;
	if (vm_intern_add(&e->loc_index, node, NULL, h) < 0) {
		free(node);
		return 0;
	}
	e->n_locations++;
	vm_memo_put(&e->loc_memo, key.mapping, key.addr, (uintptr_t)function,
		    l->id);
	return l->id;
}

static void enc_free(struct enc *e)
{
	vm_intern_free(&e->str_index, NULL); /* the strings are e->strings' */
	vm_intern_free(&e->loc_index, free);
	vm_memo_free(&e->loc_memo);
	vm_memo_free(&e->ptr_memo);
	for (size_t i = 0; i < e->n_owned; i++)
		free(e->owned[i]);
	free(e->owned);
	free(e->strings);
	free(e->functions);
	free(e->fn_of_str);
	free(e->locations);
	free(e->lines);
}

struct packed {
	Sample *samples;
	Sample **sample_ptrs;
	uint64_t *loc_ids;
	int64_t *values;
	Label *labels;
	Label **label_ptrs;
	Mapping *mappings;
	Mapping **mapping_ptrs;
	Location **location_ptrs;
	Line **line_ptrs;
	Function **function_ptrs;
	int64_t comments[5];
};

static void packed_free(struct packed *p)
{
	free(p->samples);
	free(p->sample_ptrs);
	free(p->loc_ids);
	free(p->values);
	free(p->labels);
	free(p->label_ptrs);
	free(p->mappings);
	free(p->mapping_ptrs);
	free(p->location_ptrs);
	free(p->line_ptrs);
	free(p->function_ptrs);
}

/* The string-table indices of the label keys every sample carries. */
struct label_keys {
	int64_t pid, tid, comm, backend_type, thread_state, wait_event,
		query_id, sched_state;
	int64_t context_ident, context_type; /* a memory profile's: else -1 */
	int64_t fault_mapping; /* a faults profile's: else -1 */
	int64_t fault_mappings[VM_FAULT_MAPPINGS]; /* its values */
	/* sched_state's values, by enum vm_sched_state */
	int64_t sched_states[VM_SCHED_UNINTERRUPTIBLE + 1];
	int64_t running, blocked; /* thread_state's values */
	int64_t block_start, before_profile; /* a block begun before */
	bool wall; /* thread_state is given */
};

/*
 * What a profile of each kind counts (docs/profiler.md, docs/memory.md):
 * a count, and a value in unit.  A memory profile follows Go's heap
 * profiles, whose viewers look for inuse_space: its bytes come first, as
 * a faults profile's do.
 */
static const struct kind_types {
	const char *count, *value, *unit;
	bool per_sample_period; /* each CPU sample is worth the period */
	bool value_first; /* the value is sample type 0, the count 1 */
	enum vm_profile_kind labels; /* memory, faults: their own labels */
} kinds[] = {
	[VM_KIND_CPU] = { "samples", "cpu", "nanoseconds", true, false,
			  VM_KIND_CPU },
	[VM_KIND_OFFCPU] = { "switches", "offcpu", "nanoseconds", false, false,
			     VM_KIND_OFFCPU },
	[VM_KIND_WALL] = { "samples", "wall", "nanoseconds", true, false,
			   VM_KIND_WALL },
	[VM_KIND_MEMORY] = { "inuse_objects", "inuse_space", "bytes", false,
			     true, VM_KIND_MEMORY },
	[VM_KIND_FAULTS] = { "faults", "fault_space", "bytes", false, true,
			     VM_KIND_FAULTS },
};

/*
 * pprof requires "" at index 0 of the string table; the value types and
 * label keys come next, so that they are interned once for all samples.
 */
static int intern_fixed(struct enc *e, const struct kind_types *kt,
			ValueType vt[3], struct label_keys *k)
{
	ValueType *count = &vt[kt->value_first], *value = &vt[!kt->value_first];

	if (str_idx(e, "") != 0)
		return -ENOMEM;
	count->type = str_idx(e, kt->count);
	count->unit = str_idx(e, "count");
	value->type = str_idx(e, kt->value);
	value->unit = str_idx(e, kt->unit);
	vt[2] = *value;
	k->context_ident = k->context_type = k->fault_mapping = -1;
	if (kt->labels == VM_KIND_MEMORY) {
		k->context_ident = str_idx(e, "context_ident");
		k->context_type = str_idx(e, "context_type");
		if (k->context_ident < 0 || k->context_type < 0)
			return -ENOMEM;
	}
	if (kt->labels == VM_KIND_FAULTS) {
		k->fault_mapping = str_idx(e, "fault_mapping");
		for (int m = VM_FAULT_ANONYMOUS; m < VM_FAULT_MAPPINGS; m++)
			if ((k->fault_mappings[m] =
				     str_idx(e, vm_fault_mapping_name(m))) < 0)
				return -ENOMEM;
		if (k->fault_mapping < 0)
			return -ENOMEM;
	}
	k->pid = str_idx(e, "pid");
	k->tid = str_idx(e, "tid");
	k->comm = str_idx(e, "comm");
	k->backend_type = str_idx(e, "backend_type");
	k->thread_state = str_idx(e, "thread_state");
	k->wait_event = str_idx(e, "wait_event");
	k->query_id = str_idx(e, "query_id");
	k->sched_state = str_idx(e, "sched_state");
	k->sched_states[VM_SCHED_RUNNABLE] = str_idx(e, "runnable");
	k->sched_states[VM_SCHED_SLEEPING] = str_idx(e, "sleeping");
	k->sched_states[VM_SCHED_UNINTERRUPTIBLE] =
		str_idx(e, "uninterruptible");
	k->running = str_idx(e, "running");
	k->blocked = str_idx(e, "blocked");
	k->block_start = str_idx(e, "block_start");
	k->before_profile = str_idx(e, "before_profile");
	if (vt[0].type < 0 || vt[0].unit < 0 || vt[1].type < 0 ||
	    vt[1].unit < 0 || k->pid < 0 || k->tid < 0 || k->comm < 0 ||
	    k->backend_type < 0 || k->thread_state < 0 || k->wait_event < 0 ||
	    k->query_id < 0 || k->running < 0 || k->blocked < 0 ||
	    k->sched_state < 0 || k->block_start < 0 || k->before_profile < 0 ||
	    k->sched_states[VM_SCHED_RUNNABLE] < 0 ||
	    k->sched_states[VM_SCHED_SLEEPING] < 0 ||
	    k->sched_states[VM_SCHED_UNINTERRUPTIBLE] < 0)
		return -ENOMEM;
	return 0;
}

/*
 * The arrays samples and mappings point into, each allocated once at its
 * final size (an empty stack still takes one location).
 */
static int alloc_packed(const struct vm_symbolized *y, struct packed *p)
{
	size_t n_frames = 0, n = y->n_stacks;

	for (size_t i = 0; i < n; i++)
		n_frames += y->stacks[i].n_frames ? y->stacks[i].n_frames : 1;
	p->samples = calloc(n + 1, sizeof(*p->samples));
	p->sample_ptrs = calloc(n + 1, sizeof(*p->sample_ptrs));
	p->loc_ids = calloc(n_frames + 1, sizeof(*p->loc_ids));
	p->values = calloc(2 * n + 1, sizeof(*p->values));
	p->labels = calloc(MAX_LABELS * n + 1, sizeof(*p->labels));
	p->label_ptrs = calloc(MAX_LABELS * n + 1, sizeof(*p->label_ptrs));
	p->mappings = calloc(y->n_mappings + 1, sizeof(*p->mappings));
	p->mapping_ptrs = calloc(y->n_mappings + 1, sizeof(*p->mapping_ptrs));
	if (!p->samples || !p->sample_ptrs || !p->loc_ids || !p->values ||
	    !p->labels || !p->label_ptrs || !p->mappings || !p->mapping_ptrs)
		return -ENOMEM;
	return 0;
}

static int pack_mappings(const struct vm_symbolized *y, struct enc *e,
			 struct packed *p)
{
	for (size_t i = 0; i < y->n_mappings; i++) {
		const struct vm_sym_mapping *m = &y->mappings[i];
		Mapping *pm = &p->mappings[i];

		perftools__profiles__mapping__init(pm);
		pm->id = i + 1;
		pm->memory_start = m->start;
		pm->memory_limit = m->end;
		pm->file_offset = m->pgoff;
		pm->filename = str_idx(e, m->file);
		pm->build_id = str_idx(e, m->build_id);
		/*
		 * Functions were named in the guest, where the binaries are;
		 * telling pprof so keeps it from symbolizing again with
		 * whatever files the reader's machine has.
		 */
		pm->has_functions = true;
		if (pm->filename < 0 || pm->build_id < 0)
			return -ENOMEM;
		p->mapping_ptrs[i] = pm;
	}
	return 0;
}

/*
 * A sample's locations, leaf first, into ids.  A sample without a stack
 * still gets one location, "[no stack]", so that its CPU time is counted
 * and shows where it went.
 */
static int pack_locations(struct enc *e, const struct vm_sym_stack *st,
			  Sample *ps, uint64_t *ids)
{
	static const struct vm_sym_frame none = { 0 };

	ps->location_id = ids;
	if (st->n_frames == 0) {
		ids[0] = location_id(e, &none, "[no stack]");
		if (!ids[0])
			return -ENOMEM;
		ps->n_location_id = 1;
	}
	for (size_t j = 0; j < st->n_frames; j++) {
		const struct vm_sym_frame *fr = &st->frames[j];

		ids[j] = location_id(e, fr, fr->function);
		if (!ids[j])
			return -ENOMEM;
		ps->n_location_id++;
	}
	return 0;
}

/*
 * pid, tid, comm and, for PostgreSQL's processes, backend_type, wait_event
 * and query_id when known; thread_state in a wall-clock profile.
 */
static int pack_labels(struct enc *e, const struct label_keys *k,
		       const struct vm_sym_stack *st, Label *l, Label **ptrs,
		       Sample *ps)
{
	size_t nl = 0;

	for (size_t j = 0; j < MAX_LABELS; j++)
		perftools__profiles__label__init(&l[j]);
	l[nl].key = k->pid;
	l[nl++].num = st->sample->pid;
	l[nl].key = k->tid;
	l[nl++].num = st->sample->tid;
	l[nl].key = k->comm;
	l[nl].str = str_idx_kept(e, st->sample->comm[0] ? st->sample->comm :
							  "[unknown]");
	if (l[nl++].str < 0)
		return -ENOMEM;
	if (st->backend_type) {
		l[nl].key = k->backend_type;
		l[nl].str = str_idx_kept(e, st->backend_type);
		if (l[nl++].str < 0)
			return -ENOMEM;
	}
	if (k->wall) {
		l[nl].key = k->thread_state;
		l[nl++].str = st->sample->state == VM_STATE_BLOCKED ?
				      k->blocked :
				      k->running;
	}
	if (st->sample->sched_state &&
	    st->sample->sched_state <= VM_SCHED_UNINTERRUPTIBLE) {
		l[nl].key = k->sched_state;
		l[nl++].str = k->sched_states[st->sample->sched_state];
	}
	if (st->sample->before_start) {
		l[nl].key = k->block_start;
		l[nl++].str = k->before_profile;
	}
	if (st->wait_event) {
		l[nl].key = k->wait_event;
		l[nl].str = str_idx_kept(e, st->wait_event);
		if (l[nl++].str < 0)
			return -ENOMEM;
	}
	if (st->context_ident && k->context_ident >= 0) {
		l[nl].key = k->context_ident;
		l[nl].str = str_idx_kept(e, st->context_ident);
		if (l[nl++].str < 0)
			return -ENOMEM;
	}
	if (st->context_type && k->context_type >= 0) {
		l[nl].key = k->context_type;
		l[nl].str = str_idx_kept(e, st->context_type);
		if (l[nl++].str < 0)
			return -ENOMEM;
	}
	if (k->fault_mapping >= 0 && st->sample->fault_mapping &&
	    st->sample->fault_mapping < VM_FAULT_MAPPINGS) {
		l[nl].key = k->fault_mapping;
		l[nl++].str = k->fault_mappings[st->sample->fault_mapping];
	}
	if (st->sample->query_id) {
		char id[24];

		/* As pg_stat_activity shows it: a signed bigint. */
		snprintf(id, sizeof(id), "%" PRId64,
			 (int64_t)st->sample->query_id);
		l[nl].key = k->query_id;
		l[nl].str = str_idx_copy(e, id);
		if (l[nl++].str < 0)
			return -ENOMEM;
	}
	ps->label = ptrs;
	ps->n_label = nl;
	for (size_t j = 0; j < nl; j++)
		ps->label[j] = &l[j];
	return 0;
}

/* A count as pprof's int64, the largest there is past it. */
static int64_t clamp_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/*
 * One Sample per stack: its locations, [count, time] (or [bytes, count]),
 * its labels.  An off-CPU block is worth its time, a CPU sample the
 * period, a memory context its bytes.
 */
static int pack_samples(const struct vm_symbolized *y, struct enc *e,
			struct packed *p, const struct label_keys *k,
			const struct kind_types *kt, int64_t period)
{
	size_t fi = 0;
	int r;

	for (size_t i = 0; i < y->n_stacks; i++) {
		const struct vm_sym_stack *st = &y->stacks[i];
		Sample *ps = &p->samples[i];

		perftools__profiles__sample__init(ps);
		r = pack_locations(e, st, ps, &p->loc_ids[fi]);
		if (r < 0)
			return r;
		fi += ps->n_location_id;
		ps->value = &p->values[2 * i];
		ps->n_value = 2;
		ps->value[kt->value_first] = clamp_i64(st->sample->count);
		ps->value[!kt->value_first] =
			st->sample->state == VM_STATE_BLOCKED ||
					kt->value_first ?
				clamp_i64(st->sample->value) :
				vm_sat_mul_i64(clamp_i64(st->sample->count),
					       period);
		/* A growth view: what was given back is negative. */
		if (y->samples->signed_values) {
			ps->value[kt->value_first] = (int64_t)st->sample->count;
			ps->value[!kt->value_first] =
				(int64_t)st->sample->value;
		}
		r = pack_labels(e, k, st, &p->labels[MAX_LABELS * i],
				&p->label_ptrs[MAX_LABELS * i], ps);
		if (r < 0)
			return r;
		p->sample_ptrs[i] = ps;
	}
	return 0;
}

/*
 * protobuf-c packs repeated messages from arrays of pointers; the
 * locations, lines and functions gathered while packing the samples are
 * flat arrays, so point at them only now that they no longer move.
 */
static int point_at_tables(struct enc *e, struct packed *p)
{
	p->location_ptrs = calloc(e->n_locations + 1, sizeof(Location *));
	p->line_ptrs = calloc(e->n_locations + 1, sizeof(Line *));
	p->function_ptrs = calloc(e->n_functions + 1, sizeof(Function *));
	if (!p->location_ptrs || !p->line_ptrs || !p->function_ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < e->n_locations; i++) {
		p->line_ptrs[i] = &e->lines[i];
		e->locations[i].line = &p->line_ptrs[i];
		p->location_ptrs[i] = &e->locations[i];
	}
	for (size_t i = 0; i < e->n_functions; i++)
		p->function_ptrs[i] = &e->functions[i];
	return 0;
}

static int add_comment(struct enc *e, struct packed *p, Profile *prof,
		       const char *comment)
{
	p->comments[prof->n_comment] = str_idx_copy(e, comment);
	return p->comments[prof->n_comment++] < 0 ? -ENOMEM : 0;
}

/*
 * What the profile missed is said in its comments (`pprof -comments`), so
 * that a reader knows the counts are short; and where its frames' names
 * came from, so that one knows what a debug file would add.
 */
static int note_comments(const struct vm_symbolized *y, struct enc *e,
			 struct packed *p, Profile *prof)
{
	const struct vm_samples *s = y->samples;
	const uint64_t *by = y->frames_by;
	char comment[400];
	int r;

	prof->n_comment = 0;
	prof->comment = p->comments;
	if (s->ended_early[0]) {
		snprintf(comment, sizeof(comment), "vmtools: ended early: %s",
			 s->ended_early);
		r = add_comment(e, p, prof, comment);
		if (r)
			return r;
	}
	if (s->notes) {
		p->comments[prof->n_comment] = str_idx_copy(e, s->notes);
		if (p->comments[prof->n_comment++] < 0)
			return -ENOMEM;
	}
	if (s->kind == VM_KIND_MEMORY)
		return 0; /* its frames are names: no symbols to account for */
	if (s->lost_stacks || s->lost_samples) {
		snprintf(comment, sizeof(comment),
			 "vmtools: %" PRIu64 " stacks lost, %" PRIu64
			 " samples not recorded",
			 s->lost_stacks, s->lost_samples);
		r = add_comment(e, p, prof, comment);
		if (r)
			return r;
	}
	if (s->unwound_by_table || s->unwound_by_frame_pointer) {
		snprintf(comment, sizeof(comment),
			 "vmtools: user stacks unwound with .eh_frame: %" PRIu64
			 " callers found by unwind tables, %" PRIu64
			 " by frame pointer; %" PRIu64
			 " stacks cut short (a bad read, no progress, off the"
			 " stack or the code), %" PRIu64
			 " binaries without tables or cut short"
			 " (past a bound), %" PRIu64
			 " processes past the bound (too many executable"
			 " mappings or processes, or over the share of the"
			 " store one user may take)",
			 s->unwound_by_table, s->unwound_by_frame_pointer,
			 s->unwind_cut, s->unwind_binaries_skipped,
			 s->unwind_processes_skipped);
		r = add_comment(e, p, prof, comment);
		if (r)
			return r;
	}
	snprintf(comment, sizeof(comment),
		 "vmtools: %" PRIu64 " frames named by symbols, %" PRIu64
		 " by debug files, %" PRIu64 " by function start, %" PRIu64
		 " by address",
		 by[VM_NAME_SYMBOL], by[VM_NAME_DEBUG_FILE],
		 by[VM_NAME_FUNCTION_START], by[VM_NAME_ADDRESS]);
	return add_comment(e, p, prof, comment);
}

static int build(const struct vm_symbolized *y, struct enc *e, struct packed *p,
		 Profile *prof, ValueType vt[3])
{
	const struct vm_samples *s = y->samples;
	const struct kind_types *kt =
		&kinds[(unsigned)s->kind < sizeof(kinds) / sizeof(kinds[0]) ?
			       s->kind :
			       VM_KIND_CPU];
	uint32_t freq = s->frequency ? s->frequency : 1;
	int64_t period = 1000000000LL / freq;
	struct label_keys keys = { 0 };
	int r;

	r = intern_fixed(e, kt, vt, &keys);
	keys.wall = s->kind == VM_KIND_WALL;
	if (r == 0)
		r = alloc_packed(y, p);
	if (r == 0)
		r = pack_mappings(y, e, p);
	if (r == 0)
		r = pack_samples(y, e, p, &keys, kt, period);
	if (r == 0)
		r = point_at_tables(e, p);
	if (r == 0)
		r = note_comments(y, e, p, prof);
	if (r < 0)
		return r;

	prof->n_sample_type = 2;
	prof->sample = p->sample_ptrs;
	prof->n_sample = y->n_stacks;
	prof->mapping = p->mapping_ptrs;
	prof->n_mapping = y->n_mappings;
	prof->location = p->location_ptrs;
	prof->n_location = e->n_locations;
	prof->function = p->function_ptrs;
	prof->n_function = e->n_functions;
	prof->string_table = e->strings;
	prof->n_string_table = e->n_strings;
	prof->time_nanos = s->time_nanos;
	prof->duration_nanos = s->duration_nanos;
	prof->period_type = &vt[2];
	prof->period = kt->per_sample_period ? period : 1;
	/* A faults sample is worth the period's faults, in bytes. */
	if (s->kind == VM_KIND_FAULTS)
		prof->period = vm_sat_mul_i64((int64_t)s->fault_period,
					      (int64_t)s->page_size);
	/*
	 * The time (or the bytes), not the count, is what a viewer should
	 * show first (speedscope, pprof -http take it; without it
	 * speedscope picks the last type and pprof the first).
	 */
	prof->default_sample_type = vt[2].type;
	return 0;
}

int vm_pprof_encode(const struct vm_symbolized *y, void **out, size_t *len,
		    struct vm_error *err)
{
	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType vt[3] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
			    PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
			    PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	ValueType *types[2] = { &vt[0], &vt[1] };
	struct packed p = { 0 };
	struct enc e = { 0 };
	uint8_t *buf = NULL;
	size_t size;
	int r;

	enc_init(&e);
	r = build(y, &e, &p, &prof, vt);
	prof.sample_type = types;
	if (r == 0) {
		size = perftools__profiles__profile__get_packed_size(&prof);
		buf = malloc(size ? size : 1);
		if (!buf)
			r = -ENOMEM;
		else
			*len = perftools__profiles__profile__pack(&prof, buf);
	}
	packed_free(&p);
	enc_free(&e);
	if (r)
		return vm_error_set(err, -r,
				    "out of memory while encoding pprof");
	*out = buf;
	return 0;
}
