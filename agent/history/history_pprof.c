// SPDX-License-Identifier: Apache-2.0
/*
 * history_pprof.c - a window written to --history-dir (the pprof of
 * vm_pprof_encode, gzipped) read back into the history at start-up.
 *
 * The files are not trusted: another process may have put anything
 * there.  zlib inflates at most VM_HISTORY_MAX_UNPACKED bytes, protobuf-c
 * unpacks with at most VM_HISTORY_MAX_DECODED bytes allocated (32 MiB of
 * zeros, which a 31 KB gzip holds, made it allocate 1.9 GB), and every
 * index the profile holds (strings, mappings,
 * locations, functions) is checked before it is followed; what does not
 * look like a profile this agent wrote is refused whole.  Fuzzed by
 * tests/fuzz/fuzz_history_pprof.c.
 */
#include "agent/history/history_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/array.h"
#include "proto/profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

/* protobuf-c's allocations for one file, counted against a bound. */
struct budget {
	size_t left;
	bool over;
};

static void *budget_alloc(void *data, size_t size)
{
	struct budget *b = data;

	if (size > b->left) {
		b->over = true;
		return NULL;
	}
	b->left -= size;
	return malloc(size);
}

static void budget_free(void *data, void *p)
{
	(void)data;
	free(p);
}

/* gzip (windowBits 15 + 16) inflated into a malloc'd buffer, bounded. */
static int gunzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = 64 * 1024, n = 0;
	uint8_t *buf = malloc(cap);
	int r = Z_OK;

	if (!buf || inflateInit2(&z, 15 + 16) != Z_OK) {
		free(buf);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = len;
	while (r != Z_STREAM_END) {
		if (n == cap) {
			if (cap >= VM_HISTORY_MAX_UNPACKED ||
			    vm_array_reserve((void **)&buf, &cap, cap * 2, 1)) {
				r = Z_MEM_ERROR;
				break;
			}
		}
		z.next_out = buf + n;
		z.avail_out = cap - n;
		r = inflate(&z, Z_NO_FLUSH);
		n = cap - z.avail_out;
		if (r != Z_OK && r != Z_STREAM_END)
			break;
		if (r == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
			r = Z_DATA_ERROR; /* truncated */
			break;
		}
	}
	inflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(buf);
		return r == Z_MEM_ERROR ? -EFBIG : -EINVAL;
	}
	*out = buf;
	*out_len = n;
	return 0;
}

static const char *string_at(const Profile *p, int64_t i)
{
	if (i < 0 || (uint64_t)i >= p->n_string_table)
		return NULL;
	return p->string_table[i];
}

/* The entry with id (our encoder numbers them from 1, in order). */
#define BY_ID(array, n, want)                                              \
	((want) >= 1 && (want) <= (n) && (array)[(want)-1]->id == (want) ? \
		 (array)[(want)-1] :                                       \
		 NULL)

struct reader {
	const Profile *p;
	struct vm_sym_mapping *maps; /* one per pprof mapping */
	struct vm_history_frame_in *frames;
	size_t cap_frames;
	int64_t key_pid, key_tid, key_comm, key_backend, key_wait_event,
		key_query_id;
};

static int64_t string_index(const Profile *p, const char *s)
{
	for (size_t i = 0; i < p->n_string_table; i++)
		if (p->string_table[i] && !strcmp(p->string_table[i], s))
			return (int64_t)i;
	return -1;
}

static int read_mappings(struct reader *rd)
{
	const Profile *p = rd->p;

	rd->maps = calloc(p->n_mapping ? p->n_mapping : 1, sizeof(*rd->maps));
	if (!rd->maps)
		return -ENOMEM;
	for (size_t i = 0; i < p->n_mapping; i++) {
		const Perftools__Profiles__Mapping *m = p->mapping[i];
		const char *file = string_at(p, m->filename);
		const char *build_id = string_at(p, m->build_id);

		if (m->id != i + 1 || !file || !build_id ||
		    strlen(build_id) >= sizeof(rd->maps[i].build_id))
			return -EINVAL;
		rd->maps[i] = (struct vm_sym_mapping){
			.start = m->memory_start,
			.end = m->memory_limit,
			.pgoff = m->file_offset,
			.file = file,
			.kernel = !strcmp(file, VM_KERNEL_MAPPING),
			.has_functions = m->has_functions,
		};
		memcpy(rd->maps[i].build_id, build_id, strlen(build_id) + 1);
	}
	return 0;
}

/* One location as a frame of the history. */
static int read_location(struct reader *rd, uint64_t id,
			 struct vm_history_frame_in *f)
{
	const Profile *p = rd->p;
	const Perftools__Profiles__Location *loc =
		BY_ID(p->location, p->n_location, id);
	const Perftools__Profiles__Function *fn;

	if (!loc)
		return -EINVAL;
	f->addr = loc->address;
	f->mapping = NULL;
	f->function = NULL;
	if (loc->mapping_id) {
		if (loc->mapping_id > p->n_mapping)
			return -EINVAL;
		f->mapping = &rd->maps[loc->mapping_id - 1];
	}
	if (loc->n_line) {
		fn = BY_ID(p->function, p->n_function,
			   loc->line[0]->function_id);
		if (!fn || !(f->function = string_at(p, fn->name)))
			return -EINVAL;
	}
	return 0;
}

/*
 * A query_id label as pprof.c writes it (pg_stat_activity's signed
 * bigint, never 0) back into the number.  0 or -EINVAL.
 */
static int parse_query_id(const char *s, uint64_t *out)
{
	char *end;
	long long v;

	if (!s || !s[0] || isspace((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v == 0)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

static int read_sample(struct vm_history *h, struct reader *rd,
		       const Perftools__Profiles__Sample *s, uint64_t *total)
{
	const Profile *p = rd->p;
	struct vm_history_labels lb = { 0 };
	int r;

	if (s->n_value < 1 || s->value[0] < 0 ||
	    (uint64_t)s->value[0] > VM_HISTORY_MAX_COUNT ||
	    s->n_location_id > 4096)
		return -EINVAL;
	for (size_t i = 0; i < s->n_label; i++) {
		const Perftools__Profiles__Label *l = s->label[i];

		if (l->key == rd->key_pid)
			lb.pid = (uint32_t)l->num;
		else if (l->key == rd->key_tid)
			lb.tid = (uint32_t)l->num;
		else if (l->key == rd->key_comm)
			lb.comm = string_at(p, l->str);
		else if (l->key == rd->key_backend)
			lb.backend_type = string_at(p, l->str);
		else if (l->key == rd->key_wait_event)
			lb.wait_event = string_at(p, l->str);
		else if (l->key == rd->key_query_id &&
			 parse_query_id(string_at(p, l->str), &lb.query_id))
			return -EINVAL;
	}
	if (vm_grow(rd->frames, &rd->cap_frames,
		    s->n_location_id ? s->n_location_id : 1))
		return -ENOMEM;
	for (size_t i = 0; i < s->n_location_id; i++) {
		r = read_location(rd, s->location_id[i], &rd->frames[i]);
		if (r < 0)
			return r;
	}
	*total += (uint64_t)s->value[0];
	if (*total > VM_HISTORY_MAX_COUNT)
		return -EINVAL; /* no window has so many samples */
	return vm_history_stack(h, &lb, rd->frames, s->n_location_id,
				(uint64_t)s->value[0], 0);
}

static int read_profile(struct vm_history *h, const Profile *p,
			struct vm_history_window *w)
{
	struct reader rd = { .p = p };
	uint64_t total = 0;
	int r;

	if (p->n_string_table == 0 || !p->string_table[0] ||
	    p->string_table[0][0] || p->n_sample_type < 1)
		return -EINVAL;
	rd.key_pid = string_index(p, "pid");
	rd.key_tid = string_index(p, "tid");
	rd.key_comm = string_index(p, "comm");
	rd.key_backend = string_index(p, "backend_type");
	rd.key_wait_event = string_index(p, "wait_event");
	rd.key_query_id = string_index(p, "query_id");
	r = read_mappings(&rd);
	for (size_t i = 0; r == 0 && i < p->n_sample; i++)
		r = read_sample(h, &rd, p->sample[i], &total);
	free(rd.maps);
	free(rd.frames);
	if (r < 0)
		return r;
	w->samples = total;
	if (p->period > 0 && p->period <= 1000000000)
		w->frequency = (uint32_t)(1000000000 / p->period);
	/*
	 * The profile's own times are finer than the file name's seconds;
	 * they are taken when they agree with the name, which is what the
	 * directory is pruned by.
	 */
	if (p->time_nanos > 0 && p->duration_nanos > 0 &&
	    (uint64_t)p->time_nanos / 1000000000u ==
		    w->start_ns / 1000000000u) {
		w->start_ns = (uint64_t)p->time_nanos;
		w->end_ns = w->start_ns + (uint64_t)p->duration_nanos;
	}
	return w->end_ns > w->start_ns ? 0 : -EINVAL;
}

int vm_history_add_pprof(struct vm_history *h,
			 const struct vm_history_window *w, const void *data,
			 size_t len, struct vm_error *err)
{
	struct vm_history_window win = *w;
	uint8_t *raw = NULL;
	size_t raw_len = len;
	Profile *p;
	struct budget bud = { VM_HISTORY_MAX_DECODED, false };
	ProtobufCAllocator alloc = { budget_alloc, budget_free, &bud };
	int r;

	if (len > VM_HISTORY_MAX_FILE)
		return vm_error_set(err, EFBIG,
				    "the file is larger than %u bytes",
				    VM_HISTORY_MAX_FILE);
	if (len >= 2 && ((const uint8_t *)data)[0] == 0x1f &&
	    ((const uint8_t *)data)[1] == 0x8b) {
		r = gunzip(data, len, &raw, &raw_len);
		if (r < 0)
			return vm_error_set(
				err, -r,
				r == -EFBIG ?
					"it unpacks to more than the %u bytes a window may take" :
					"it is not a valid gzip file (%u)",
				VM_HISTORY_MAX_UNPACKED);
		data = raw;
	}
	p = perftools__profiles__profile__unpack(&alloc, raw_len, data);
	if (!p) {
		free(raw);
		if (bud.over)
			return vm_error_set(
				err, EFBIG,
				"reading it would take more than %u bytes",
				VM_HISTORY_MAX_DECODED);
		return vm_error_set(err, EINVAL, "it is not a pprof profile");
	}
	vm_history_lock(h);
	vm_history_begin(h);
	r = read_profile(h, p, &win);
	if (r == 0)
		r = vm_history_commit(h, &win);
	else
		vm_history_abort(h);
	vm_history_unlock(h);
	perftools__profiles__profile__free_unpacked(p, &alloc);
	free(raw);
	if (r == -ENOMEM)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (r < 0)
		return vm_error_set(
			err, EINVAL,
			"it is not a profile window this agent wrote (an index in it points nowhere)");
	return 0;
}
