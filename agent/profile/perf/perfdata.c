// SPDX-License-Identifier: Apache-2.0
/*
 * perfdata.c - the perf.data reader's driver: checks the file header,
 * reads the event attributes (which fix the layout of every record), indexes
 * the data section, sorts that index by time and replays it through
 * perfdata_model.c, then applies the HEADER_BUILD_ID feature section.
 *
 * Why sort: perf drains one ring buffer per CPU in turn, so the file holds
 * the records of one CPU, then the next.  A backend forked on CPU 0 may
 * have its first samples on CPU 1 written before the FORK that says whose
 * child it is; replaying in file order would drop them.  Records carry their
 * time (PERF_SAMPLE_TIME, and the sample_id trailer of non-sample records
 * when sample_id_all is set), so we replay in time order, as `perf report`
 * does; ties keep file order (perf's synthesized records all have time 0).
 *
 * File layout (tools/perf/Documentation/perf.data-file-format.txt):
 *
 *   header | attrs: {perf_event_attr, ids section}... | data: records... |
 *   feature sections table (one entry per bit set in header.features) | ...
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdlib.h>

#include "agent/profile/perf/perfdata_int.h"
#include "common/array.h"
#include "common/cleanup.h"

#define HEADER_SIZE (sizeof(struct pd_file_header))
#define ATTR_MIN (PERF_ATTR_SIZE_VER0 + sizeof(struct pd_section))
#define PERF_RECORD_COMPRESSED_TYPE 81 /* perf record -z */

struct entry {
	uint64_t time;
	uint64_t off;
};

static void model_freep(struct pd_model **m)
{
	pd_model_free(*m);
}

static bool in_file(const struct pd_section *s, size_t len)
{
	return s->offset <= len && s->size <= len - s->offset;
}

static int read_header(const uint8_t *buf, size_t len, struct pd_file_header *h,
		       struct vm_error *err)
{
	if (len < 16)
		return vm_error_set(
			err, EBADMSG,
			"perf.data is %zu bytes long, too short for a perf.data header; perf did not write it completely",
			len);
	memset(h, 0, sizeof(*h));
	memcpy(h, buf, len < HEADER_SIZE ? len : HEADER_SIZE);
	if (h->magic == __builtin_bswap64(PD_MAGIC))
		return vm_error_set(
			err, EBADMSG,
			"perf.data was written on a machine of the other byte order; read it with perf there");
	if (h->magic != PD_MAGIC)
		return vm_error_set(
			err, EBADMSG,
			"perf.data does not start with the PERFILE2 magic: not a perf.data file, or one from a perf older than 2.6.36");
	if (h->size == 16)
		return vm_error_set(
			err, EBADMSG,
			"perf.data is in pipe mode (perf record -o -), which is not supported; record to a file");
	if (h->size < HEADER_SIZE || len < HEADER_SIZE)
		return vm_error_set(err, EBADMSG,
				    "perf.data header is truncated (%" PRIu64
				    " bytes announced, %zu in the file)",
				    h->size, len);
	if (!in_file(&h->attrs, len) || !in_file(&h->data, len))
		return vm_error_set(
			err, EBADMSG,
			"perf.data is truncated: its header places the %s section at %" PRIu64
			"+%" PRIu64 " but the file has %zu bytes",
			in_file(&h->attrs, len) ? "data" : "attribute",
			in_file(&h->attrs, len) ? h->data.offset :
						  h->attrs.offset,
			in_file(&h->attrs, len) ? h->data.size : h->attrs.size,
			len);
	if (!h->data.size)
		return vm_error_set(
			err, EBADMSG,
			"perf.data has an empty data section: perf was stopped before it finished writing the file");
	return 0;
}

/*
 * Every attribute must give records the same layout: records other than
 * samples do not say which event they belong to unless PERF_SAMPLE_IDENTIFIER
 * is set, and the perf command line we run (one event plus perf's tracking
 * dummy) always gives them the same sample_type.
 */
int pd_read_attrs(const uint8_t *buf, const struct pd_file_header *h,
		  struct pd_layout *layout, struct vm_error *err)
{
	size_t n;

	if (h->attr_size < ATTR_MIN || h->attr_size > 4096)
		return vm_error_set(
			err, EBADMSG,
			"perf.data attribute entries are %" PRIu64
			" bytes, not a size perf writes (%zu to 4096)",
			h->attr_size, (size_t)ATTR_MIN);
	n = h->attrs.size / h->attr_size;
	if (!n)
		return vm_error_set(err, EBADMSG,
				    "perf.data describes no event");
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = buf + h->attrs.offset + i * h->attr_size;
		struct perf_event_attr a = { 0 };
		size_t sz = h->attr_size - sizeof(struct pd_section);
		struct pd_layout l;

		memcpy(&a, p, sz < sizeof(a) ? sz : sizeof(a));
		pd_layout_init(&l, a.sample_type, a.read_format,
			       a.sample_id_all, a.sample_regs_user);
		if (i && (l.sample_type != layout->sample_type ||
			  l.read_format != layout->read_format ||
			  l.sample_id_all != layout->sample_id_all))
			return vm_error_set(
				err, EBADMSG,
				"perf.data events have different sample layouts (sample_type %#" PRIx64
				" and %#" PRIx64
				"), which this reader does not support; record one event",
				layout->sample_type, l.sample_type);
		*layout = l;
	}
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static bool wanted(uint32_t type)
{
	switch (type) {
	case PERF_RECORD_SAMPLE:
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
		return true;
	default:
		return false;
	}
}

/* The records we use, with their times; every record's size is checked. */
static int index_data(const uint8_t *buf, const struct pd_file_header *h,
		      const struct pd_layout *l, struct entry **out,
		      size_t *n_out, struct vm_perfdata_stats *stats,
		      struct vm_error *err)
{
	_cleanup_free_ struct entry *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t off = h->data.offset, end = h->data.offset + h->data.size;

	while (off < end) {
		const uint8_t *rec = buf + off;
		uint32_t type;
		uint16_t size;

		if (end - off < 8)
			return vm_error_set(
				err, EBADMSG,
				"perf.data is truncated: a record header at offset %" PRIu64
				" is cut off by the end of the data section",
				off);
		type = pd_u32(rec);
		size = pd_u16(rec + 6);
		if (size < 8 || size > end - off)
			return vm_error_set(
				err, EBADMSG,
				"perf.data is damaged: the record at offset %" PRIu64
				" (type %" PRIu32
				") says it is %u bytes long, and %" PRIu64
				" are left in the data section",
				off, type, size, end - off);
		stats->records++;
		if (type == PERF_RECORD_COMPRESSED_TYPE)
			return vm_error_set(
				err, EBADMSG,
				"perf.data holds compressed records (perf record -z), which are not supported");
		if (wanted(type)) {
			if (vm_grow(v, &cap, n + 1) < 0)
				return -ENOMEM;
			v[n].time = pd_record_time(l, rec, size);
			v[n].off = off;
			n++;
		}
		off += size;
	}
	/* Without times on every record, file order is the best there is. */
	if ((l->sample_type & PERF_SAMPLE_TIME) && l->sample_id_all)
		qsort(v, n, sizeof(*v), cmp_entry);
	*out = TAKE_PTR(v);
	*n_out = n;
	return 0;
}

static int replay(struct pd_model *m, const uint8_t *buf,
		  const struct pd_layout *l, const struct entry *v, size_t n,
		  struct vm_perfdata_stats *stats, struct vm_error *err)
{
	bool timed = (l->sample_type & PERF_SAMPLE_TIME) && l->sample_id_all;

	for (size_t i = 0; i < n; i++) {
		const uint8_t *rec = buf + v[i].off;
		uint32_t type = pd_u32(rec);
		uint16_t size = pd_u16(rec + 6);
		struct pd_sample s;
		struct pd_mmap mm;
		struct pd_comm c;
		struct pd_task t;
		uint64_t lost;
		int r = 0;

		switch (type) {
		case PERF_RECORD_SAMPLE:
			r = pd_decode_sample(l, rec, size, &s);
			if (r < 0)
				break;
			stats->samples++;
			r = pd_model_sample(m, &s);
			if (r > 0)
				stats->kept++;
			break;
		case PERF_RECORD_MMAP:
		case PERF_RECORD_MMAP2:
			r = pd_decode_mmap(l, rec, size, &mm);
			if (r == 0)
				r = pd_model_mmap(m, &mm);
			break;
		case PERF_RECORD_COMM:
			r = pd_decode_comm(l, rec, size, &c);
			if (r == 0)
				r = pd_model_comm(m, &c);
			break;
		case PERF_RECORD_FORK:
		case PERF_RECORD_EXIT:
			r = pd_decode_task(rec, size, &t);
			t.synthesized = timed && v[i].time == 0;
			if (r == 0)
				r = type == PERF_RECORD_FORK ?
					    pd_model_fork(m, &t) :
					    pd_model_exit(m, &t);
			break;
		default: /* LOST, LOST_SAMPLES */
			r = pd_decode_lost(rec, size, &lost);
			if (r == 0)
				pd_model_lost(m, lost);
			break;
		}
		if (r == -ENOMEM)
			return vm_error_set(
				err, ENOMEM,
				"out of memory while reading perf.data");
		if (r < 0)
			return vm_error_set(
				err, EBADMSG,
				"perf.data is damaged: the record at offset %" PRIu64
				" (type %" PRIu32
				") is inconsistent with its size (%u bytes) or the event's sample_type %#" PRIx64,
				v[i].off, type, size, l->sample_type);
	}
	return 0;
}

/*
 * HEADER_BUILD_ID: a list of perf_record_header_build_id {header, pid,
 * build_id[24] (20 bytes, size, 3 reserved), filename[]}, one per binary
 * perf saw samples in (when perf post-processed the recording).
 */
static int read_build_ids(struct pd_model *m, const uint8_t *buf, size_t len,
			  const struct pd_file_header *h,
			  struct vm_perfdata_stats *stats, struct vm_error *err)
{
	struct pd_section sec;
	uint64_t table = h->data.offset + h->data.size, off, end;
	size_t before = 0;

	if (!(h->features[0] & (1u << PD_FEAT_BUILD_ID)))
		return 0;
	for (unsigned bit = 0; bit < PD_FEAT_BUILD_ID; bit++)
		before += (h->features[0] >> bit) & 1;
	if (table > len || (len - table) / sizeof(sec) <= before)
		return vm_error_set(
			err, EBADMSG,
			"perf.data is truncated: the feature sections table at offset %" PRIu64
			" lies beyond its end (%zu bytes)",
			table, len);
	memcpy(&sec, buf + table + before * sizeof(sec), sizeof(sec));
	if (!in_file(&sec, len))
		return vm_error_set(
			err, EBADMSG,
			"perf.data is truncated: the build-id section at %" PRIu64
			"+%" PRIu64 " lies beyond its end (%zu bytes)",
			sec.offset, sec.size, len);
	for (off = sec.offset, end = sec.offset + sec.size; off < end;) {
		const uint8_t *rec = buf + off;
		uint16_t misc, size;
		size_t id_len = VM_BUILD_ID_MAX;
		const char *name = (const char *)rec + 36;

		if (end - off < 8)
			break;
		misc = pd_u16(rec + 4);
		size = pd_u16(rec + 6);
		if (size < 37 || size > end - off ||
		    !memchr(name, 0, size - 36))
			return vm_error_set(
				err, EBADMSG,
				"perf.data is damaged: the build-id entry at offset %" PRIu64
				" has a bad size (%u bytes)",
				off, size);
		if (misc & PD_MISC_BUILD_ID_SIZE)
			id_len = rec[32] < VM_BUILD_ID_MAX ? rec[32] :
							     VM_BUILD_ID_MAX;
		stats->build_ids++;
		if (pd_model_build_id(m, name, rec + 12, id_len) < 0)
			return -ENOMEM;
		off += size;
	}
	return 0;
}

int vm_perfdata_read(const uint8_t *buf, size_t len,
		     const struct vm_perfdata_filter *filter,
		     struct vm_samples *out, struct vm_perfdata_stats *stats,
		     struct vm_error *err)
{
	_cleanup_(model_freep) struct pd_model *m = NULL;
	_cleanup_free_ struct entry *idx = NULL;
	struct vm_perfdata_stats dummy;
	struct pd_file_header h;
	struct pd_layout layout;
	size_t n = 0;
	int r;

	if (!stats)
		stats = &dummy;
	memset(stats, 0, sizeof(*stats));
	r = read_header(buf, len, &h, err);
	if (r < 0)
		return r;
	r = pd_read_attrs(buf, &h, &layout, err);
	if (r < 0)
		return r;
	r = index_data(buf, &h, &layout, &idx, &n, stats, err);
	if (r == -ENOMEM)
		return vm_error_set(err, ENOMEM,
				    "out of memory while reading perf.data");
	if (r < 0)
		return r;
	if (pd_model_new(filter, out, &m) < 0)
		return vm_error_set(err, ENOMEM,
				    "out of memory while reading perf.data");
	r = replay(m, buf, &layout, idx, n, stats, err);
	if (r < 0)
		return r;
	r = read_build_ids(m, buf, len, &h, stats, err);
	if (r == -ENOMEM)
		return vm_error_set(err, ENOMEM,
				    "out of memory while reading perf.data");
	if (r < 0)
		return r;
	if (pd_model_finish(m) < 0)
		return vm_error_set(err, ENOMEM,
				    "out of memory while reading perf.data");
	return 0;
}
