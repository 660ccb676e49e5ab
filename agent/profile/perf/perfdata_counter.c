// SPDX-License-Identifier: Apache-2.0
/*
 * perfdata_counter.c - counts the samples of the target processes in a
 * perf.data that perf is still writing, for the "samples so far" of a
 * running profile (perfdata.h).
 *
 * perf writes the header and the attributes first, with a data size of 0
 * until it finishes, then appends whole records.  So we wait for the bytes
 * up to the data offset, learn the record layout, and then replay COMM,
 * FORK and EXIT and decide each SAMPLE with the same model as the full
 * reader (perfdata_model.c, counting mode), in file order, keeping only the
 * bytes of a record not yet complete.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>

#include "agent/profile/perf/perfdata_int.h"
#include "common/array.h"

#define HEADER_SIZE (sizeof(struct pd_file_header))
#define HEADER_MAX (16u << 20) /* header + attributes: far less in practice */

struct vm_perfdata_counter {
	struct pd_model *m;
	struct pd_layout layout;
	bool started; /* past the header: buf holds records */
	bool broken; /* stop looking */
	uint8_t *buf;
	size_t len, cap;
	uint64_t kept;
};

int vm_perfdata_counter_new(const struct vm_perfdata_filter *filter,
			    struct vm_perfdata_counter **out)
{
	struct vm_perfdata_counter *c = calloc(1, sizeof(*c));

	if (!c || pd_model_new(filter, NULL, &c->m) < 0) {
		free(c);
		return -ENOMEM;
	}
	*out = c;
	return 0;
}

void vm_perfdata_counter_free(struct vm_perfdata_counter *c)
{
	if (!c)
		return;
	pd_model_free(c->m);
	free(c->buf);
	free(c);
}

/* 1 once the header is read, 0 when more bytes are needed, -1 when bad. */
static int start(struct vm_perfdata_counter *c)
{
	struct pd_file_header h;

	if (c->len < HEADER_SIZE)
		return 0;
	memcpy(&h, c->buf, HEADER_SIZE);
	if (h.magic != PD_MAGIC || h.size < HEADER_SIZE ||
	    h.data.offset > HEADER_MAX || h.attrs.offset > h.data.offset ||
	    h.attrs.size > h.data.offset - h.attrs.offset)
		return -1;
	if (c->len < h.data.offset)
		return 0;
	if (pd_read_attrs(c->buf, &h, &c->layout, NULL) < 0)
		return -1;
	memmove(c->buf, c->buf + h.data.offset, c->len - h.data.offset);
	c->len -= h.data.offset;
	c->started = true;
	return 1;
}

/* Replay the complete records in buf; keep the incomplete tail. */
static int consume(struct vm_perfdata_counter *c)
{
	size_t off = 0;
	int r = 0;

	while (r >= 0 && c->len - off >= 8) {
		const uint8_t *rec = c->buf + off;
		uint32_t type = pd_u32(rec);
		uint16_t size = pd_u16(rec + 6);
		struct pd_sample s;
		struct pd_comm cm;
		struct pd_task t;

		if (size < 8)
			return -1;
		if (size > c->len - off)
			break;
		switch (type) {
		case PERF_RECORD_SAMPLE:
			r = pd_decode_sample(&c->layout, rec, size, &s);
			if (r == 0)
				r = pd_model_sample(c->m, &s);
			if (r > 0)
				c->kept++;
			break;
		case PERF_RECORD_COMM:
			r = pd_decode_comm(&c->layout, rec, size, &cm);
			if (r == 0)
				r = pd_model_comm(c->m, &cm);
			break;
		case PERF_RECORD_FORK:
		case PERF_RECORD_EXIT:
			r = pd_decode_task(rec, size, &t);
			if (r == 0)
				r = type == PERF_RECORD_FORK ?
					    pd_model_fork(c->m, &t) :
					    pd_model_exit(c->m, &t);
			break;
		default:
			break;
		}
		off += size;
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	return r < 0 ? -1 : 0;
}

uint64_t vm_perfdata_counter_feed(struct vm_perfdata_counter *c,
				  const uint8_t *data, size_t len)
{
	if (c->broken || !len)
		return c->kept;
	if (vm_grow(c->buf, &c->cap, c->len + len) < 0) {
		c->broken = true;
		return c->kept;
	}
	memcpy(c->buf + c->len, data, len);
	c->len += len;
	if (!c->started) {
		int r = start(c);

		if (r < 0)
			c->broken = true;
		if (r <= 0)
			return c->kept;
	}
	if (consume(c) < 0)
		c->broken = true;
	return c->kept;
}
