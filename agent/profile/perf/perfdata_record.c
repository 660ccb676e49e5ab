// SPDX-License-Identifier: Apache-2.0
/*
 * perfdata_record.c - decodes one record of perf.data's data section into
 * the small structs of perfdata_int.h.
 *
 * The layout of a PERF_RECORD_SAMPLE depends on the event's sample_type:
 * the fields present follow each other in the fixed order documented in
 * <linux/perf_event.h>.  We walk them up to the call chain and ignore the
 * rest, whose sizes the record's own size covers.  Other kernel records end
 * with a sample_id trailer (when sample_id_all is set) that holds the time
 * we sort by.  Every read is bounded by the record's size: a bad file gives
 * -EBADMSG, never a read beyond it.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <sys/mman.h>

#include "agent/profile/perf/perfdata_int.h"
#include "bpf/unwind.h"

#define HDR 8 /* struct perf_event_header */

void pd_layout_init(struct pd_layout *l, uint64_t sample_type,
		    uint64_t read_format, bool sample_id_all,
		    uint64_t sample_regs_user)
{
	size_t n = 0;

	l->sample_regs_user = sample_regs_user;
	l->sample_type = sample_type;
	l->read_format = read_format;
	l->sample_id_all = sample_id_all;
	l->trailer_time = -1;
	if (!sample_id_all) {
		l->trailer_size = 0;
		return;
	}
	/* struct sample_id, in this order: pid+tid, time, id, stream id,
	 * cpu+res, identifier. */
	if (sample_type & PERF_SAMPLE_TID)
		n++;
	if (sample_type & PERF_SAMPLE_TIME)
		l->trailer_time = (int)(8 * n++);
	if (sample_type & PERF_SAMPLE_ID)
		n++;
	if (sample_type & PERF_SAMPLE_STREAM_ID)
		n++;
	if (sample_type & PERF_SAMPLE_CPU)
		n++;
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		n++;
	l->trailer_size = 8 * n;
}

/* Size of the PERF_SAMPLE_READ field, which comes before the call chain. */
static int read_size(const struct pd_layout *l, const uint8_t *p, size_t left,
		     size_t *size)
{
	uint64_t rf = l->read_format, per = 1, nr;
	size_t fixed = 0;

	if (rf & PERF_FORMAT_TOTAL_TIME_ENABLED)
		fixed++;
	if (rf & PERF_FORMAT_TOTAL_TIME_RUNNING)
		fixed++;
	if (rf & PERF_FORMAT_ID)
		per++;
	if (rf & PERF_FORMAT_LOST)
		per++;
	if (!(rf & PERF_FORMAT_GROUP)) {
		*size = 8 * (fixed + per);
		return 0;
	}
	if (left < 8)
		return -EBADMSG;
	nr = pd_u64(p);
	if (nr > left / 8 / per)
		return -EBADMSG;
	*size = 8 * (1 + fixed + nr * per);
	return 0;
}

static bool reg_present(uint64_t mask, unsigned bit)
{
	return mask >> bit & 1;
}

/* Register bit of the mask, from regs (one u64 per bit set, in order). */
static uint64_t user_reg(const uint8_t *regs, uint64_t mask, unsigned bit)
{
	if (!reg_present(mask, bit))
		return 0;
	return pd_u64(regs +
		      8 * __builtin_popcountll(mask & ((1ULL << bit) - 1)));
}

int pd_decode_sample(const struct pd_layout *l, const uint8_t *rec, size_t size,
		     struct pd_sample *s)
{
	uint64_t st = l->sample_type;
	size_t off = HDR, n;

	memset(s, 0, sizeof(*s));
	s->misc = pd_u16(rec + 4);
#define NEED(bytes)                                     \
	do {                                            \
		if (off > size || (bytes) > size - off) \
			return -EBADMSG;                \
	} while (0)
	if (st & PERF_SAMPLE_IDENTIFIER) {
		NEED(8);
		off += 8;
	}
	if (st & PERF_SAMPLE_IP) {
		NEED(8);
		s->ip = pd_u64(rec + off);
		off += 8;
	}
	if (st & PERF_SAMPLE_TID) {
		NEED(8);
		s->pid = pd_u32(rec + off);
		s->tid = pd_u32(rec + off + 4);
		off += 8;
	}
	if (st & PERF_SAMPLE_TIME) {
		NEED(8);
		s->time = pd_u64(rec + off);
		off += 8;
	}
	if (st & PERF_SAMPLE_ADDR)
		off += 8;
	if (st & PERF_SAMPLE_ID)
		off += 8;
	if (st & PERF_SAMPLE_STREAM_ID)
		off += 8;
	if (st & PERF_SAMPLE_CPU)
		off += 8;
	if (st & PERF_SAMPLE_PERIOD)
		off += 8;
	if (off > size)
		return -EBADMSG;
	if (st & PERF_SAMPLE_READ) {
		if (read_size(l, rec + off, size - off, &n) < 0)
			return -EBADMSG;
		NEED(n);
		off += n;
	}
	if (st & PERF_SAMPLE_CALLCHAIN) {
		NEED(8);
		s->nr = pd_u64(rec + off);
		off += 8;
		if (s->nr > (size - off) / 8)
			return -EBADMSG;
		s->chain = rec + off;
		off += 8 * s->nr;
	}
	if (st & PERF_SAMPLE_RAW) {
		NEED(4);
		n = pd_u32(rec + off);
		off += 4;
		NEED(n);
		off += n;
	}
	/* Branch stacks' size depends on the branch sample type: not read. */
	if (st & PERF_SAMPLE_BRANCH_STACK)
		return 0;
	if (st & PERF_SAMPLE_REGS_USER) {
		uint64_t mask = l->sample_regs_user;
		size_t nregs = (size_t)__builtin_popcountll(mask);

		NEED(8);
		s->has_regs = pd_u64(rec + off) != 0; /* the ABI, 0: none */
		off += 8;
		if (s->has_regs) {
			NEED(8 * nregs);
			s->user_bp =
				user_reg(rec + off, mask, UNWIND_PERF_REG_FP);
			s->user_sp =
				user_reg(rec + off, mask, UNWIND_PERF_REG_SP);
			s->user_ip =
				user_reg(rec + off, mask, UNWIND_PERF_REG_PC);
#ifdef UNWIND_PERF_REG_LR
			s->user_lr =
				user_reg(rec + off, mask, UNWIND_PERF_REG_LR);
#endif
			s->has_regs = reg_present(mask, UNWIND_PERF_REG_SP) &&
				      reg_present(mask, UNWIND_PERF_REG_PC);
			off += 8 * nregs;
		}
	}
	if (st & PERF_SAMPLE_STACK_USER) {
		uint64_t copied, dyn;

		NEED(8);
		copied = pd_u64(rec + off);
		off += 8;
		if (copied) {
			NEED(copied);
			NEED(copied + 8);
			dyn = pd_u64(rec + off + copied);
			s->stack = rec + off;
			s->stack_size = dyn < copied ? dyn : copied;
		}
	}
#undef NEED
	return 0;
}

uint64_t pd_record_time(const struct pd_layout *l, const uint8_t *rec,
			size_t size)
{
	uint32_t type = pd_u32(rec);
	struct pd_sample s;

	if (type == PERF_RECORD_SAMPLE)
		return pd_decode_sample(l, rec, size, &s) < 0 ? 0 : s.time;
	if (type >= PD_USER_RECORD_START || l->trailer_time < 0 ||
	    size < HDR + l->trailer_size)
		return 0;
	return pd_u64(rec + size - l->trailer_size + l->trailer_time);
}

/* Bytes of the record before the sample_id trailer. */
static size_t body_end(const struct pd_layout *l, size_t size)
{
	return size >= HDR + l->trailer_size ? size - l->trailer_size : size;
}

int pd_decode_mmap(const struct pd_layout *l, const uint8_t *rec, size_t size,
		   struct pd_mmap *m)
{
	uint32_t type = pd_u32(rec);
	uint16_t misc = pd_u16(rec + 4);
	size_t name = type == PERF_RECORD_MMAP2 ? 72 : 40;
	size_t end = body_end(l, size);

	memset(m, 0, sizeof(*m));
	if (end < name + 1 || !memchr(rec + name, 0, end - name))
		return -EBADMSG;
	m->pid = pd_u32(rec + 8);
	m->tid = pd_u32(rec + 12);
	m->start = pd_u64(rec + 16);
	m->len = pd_u64(rec + 24);
	m->pgoff = pd_u64(rec + 32);
	m->filename = (const char *)rec + name;
	m->exec = !(misc & PERF_RECORD_MISC_MMAP_DATA);
	if (type == PERF_RECORD_MMAP2) {
		m->exec = m->exec && (pd_u32(rec + 64) & PROT_EXEC);
		if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m->build_id_len = rec[40];
			if (m->build_id_len > VM_BUILD_ID_MAX)
				return -EBADMSG;
			memcpy(m->build_id, rec + 44, m->build_id_len);
		}
	}
	return 0;
}

int pd_decode_comm(const struct pd_layout *l, const uint8_t *rec, size_t size,
		   struct pd_comm *c)
{
	size_t end = body_end(l, size), n;

	memset(c, 0, sizeof(*c));
	if (end < 17)
		return -EBADMSG;
	c->pid = pd_u32(rec + 8);
	c->tid = pd_u32(rec + 12);
	c->exec = pd_u16(rec + 4) & PERF_RECORD_MISC_COMM_EXEC;
	n = strnlen((const char *)rec + 16, end - 16);
	if (n == end - 16)
		return -EBADMSG; /* not terminated */
	if (n >= VM_COMM_LEN)
		n = VM_COMM_LEN - 1;
	memcpy(c->comm, rec + 16, n);
	return 0;
}

int pd_decode_task(const uint8_t *rec, size_t size, struct pd_task *t)
{
	if (size < HDR + 16)
		return -EBADMSG;
	t->pid = pd_u32(rec + 8);
	t->ppid = pd_u32(rec + 12);
	t->tid = pd_u32(rec + 16);
	t->ptid = pd_u32(rec + 20);
	t->synthesized = false;
	return 0;
}

int pd_decode_lost(const uint8_t *rec, size_t size, uint64_t *lost)
{
	/* PERF_RECORD_LOST: id, lost; PERF_RECORD_LOST_SAMPLES: lost. */
	size_t at = pd_u32(rec) == PERF_RECORD_LOST ? 16 : 8;

	if (size < at + 8)
		return -EBADMSG;
	*lost = pd_u64(rec + at);
	return 0;
}
