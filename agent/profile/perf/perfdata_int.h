/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perfdata_int.h - the pieces of the perf.data reader (perfdata.h) that its
 * files share: the on-disk header of perf.data, which the kernel's UAPI
 * does not define (tools/perf/util/header.h does), the decoded form of the
 * records we use, and the replay model.
 *
 * All multi-byte fields are in the byte order of the machine that wrote the
 * file; we read files written on this machine, and refuse the other order.
 */
#ifndef VMTOOLS_AGENT_PERFDATA_INT_H
#define VMTOOLS_AGENT_PERFDATA_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "agent/profile/perf/perfdata.h"
#include "agent/unwind/unwind.h"

#define PD_MAGIC 0x32454c4946524550ULL /* "PERFILE2" */
#define PD_FEAT_BUILD_ID 2 /* HEADER_BUILD_ID */
#define PD_FEAT_BITS 256
#define PD_USER_RECORD_START 64 /* perf's own records, not the kernel's */
/* perf_record_header_build_id.misc: the size byte is valid. */
#define PD_MISC_BUILD_ID_SIZE (1 << 15)

struct pd_section {
	uint64_t offset;
	uint64_t size;
};

struct pd_file_header {
	uint64_t magic;
	uint64_t size; /* of this header */
	uint64_t attr_size; /* of one entry of the attrs section */
	struct pd_section attrs;
	struct pd_section data;
	struct pd_section event_types; /* unused since 2010 */
	uint64_t features[PD_FEAT_BITS / 64];
};

/* What decoding a record needs to know from the event attributes. */
struct pd_layout {
	uint64_t sample_type;
	uint64_t read_format;
	bool sample_id_all;
	size_t trailer_size; /* bytes of sample_id at the end of non-samples */
	int trailer_time; /* offset of the time in it, -1 when none */
	uint64_t sample_regs_user; /* which registers PERF_SAMPLE_REGS_USER has */
};

static inline uint64_t pd_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t pd_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint16_t pd_u16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * The record layout shared by every event in the attrs section (perfdata.c);
 * buf must hold h->attrs.
 */
int pd_read_attrs(const uint8_t *buf, const struct pd_file_header *h,
		  struct pd_layout *layout, struct vm_error *err);

/* --- decoded records (perfdata_record.c) --- */

struct pd_sample {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t ip;
	uint16_t misc;
	const uint8_t *chain; /* nr u64 entries, unaligned; NULL: no CALLCHAIN */
	uint64_t nr;
	/*
	 * perf record --call-graph dwarf: the user registers (abi 0: none,
	 * a kernel thread) and a copy of the user stack from sp up.
	 */
	bool has_regs;
	/* user_lr: arm64's link register; 0 elsewhere. */
	uint64_t user_ip, user_sp, user_bp, user_lr;
	const uint8_t *stack; /* stack_size bytes, unaligned; NULL: none */
	uint64_t stack_size;
};

struct pd_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	bool exec;
	const char *filename; /* NUL-terminated inside the record */
	uint8_t build_id[VM_BUILD_ID_MAX];
	uint8_t build_id_len;
};

struct pd_comm {
	uint32_t pid, tid;
	char comm[VM_COMM_LEN];
	bool exec;
};

struct pd_task { /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	/*
	 * Written by perf from /proc for a process that existed before the
	 * recording (time 0): its MMAP records follow, and the parent's
	 * mappings are not its own (it may have exec'd since the fork).
	 */
	bool synthesized;
};

void pd_layout_init(struct pd_layout *l, uint64_t sample_type,
		    uint64_t read_format, bool sample_id_all,
		    uint64_t sample_regs_user);
/* Time of a record, 0 when it carries none.  rec points at the header. */
uint64_t pd_record_time(const struct pd_layout *l, const uint8_t *rec,
			size_t size);
int pd_decode_sample(const struct pd_layout *l, const uint8_t *rec, size_t size,
		     struct pd_sample *s);
int pd_decode_mmap(const struct pd_layout *l, const uint8_t *rec, size_t size,
		   struct pd_mmap *m);
int pd_decode_comm(const struct pd_layout *l, const uint8_t *rec, size_t size,
		   struct pd_comm *c);
int pd_decode_task(const uint8_t *rec, size_t size, struct pd_task *t);
int pd_decode_lost(const uint8_t *rec, size_t size, uint64_t *lost);

/* --- user stacks walked with unwind tables (perfdata_unwind.c) --- */

struct pd_unwinder {
	struct vm_binaries *home; /* where tables are kept; NULL: none */
	struct vm_iopool *iopool; /* what reads the files */
	struct pd_unwind_file *files; /* a table per file, for the profile */
	size_t n, cap;
	size_t tables_built;
	/* Files left without a table, or with functions cut, past a bound. */
	size_t tables_skipped;
	struct vm_unwind_counts counts;
};

/*
 * The user stack of sample s of process pid (its mappings maps), walked
 * from its registers through its copied stack: the pcs, innermost first,
 * into ips (at most max); 0 when s carries no registers or stack.
 */
size_t pd_unwind_user(struct pd_unwinder *u, uint32_t pid,
		      const struct vm_mapping *maps, size_t n_maps,
		      const struct pd_sample *s, uint64_t *ips, size_t max);
void pd_unwinder_free(struct pd_unwinder *u);

/* --- replay (perfdata_model.c) --- */

struct pd_model;

/* out NULL: decide which samples are kept, aggregate nothing. */
int pd_model_new(const struct vm_perfdata_filter *filter,
		 struct vm_samples *out, struct pd_model **m);
void pd_model_free(struct pd_model *m);
int pd_model_comm(struct pd_model *m, const struct pd_comm *c);
int pd_model_fork(struct pd_model *m, const struct pd_task *t);
int pd_model_exit(struct pd_model *m, const struct pd_task *t);
int pd_model_mmap(struct pd_model *m, const struct pd_mmap *mm);
/* Returns 1 when the sample was kept, 0 when filtered out, or -errno. */
int pd_model_sample(struct pd_model *m, const struct pd_sample *s);
void pd_model_lost(struct pd_model *m, uint64_t lost);
/* A HEADER_BUILD_ID entry: give the build id to mappings of that file. */
int pd_model_build_id(struct pd_model *m, const char *filename,
		      const uint8_t *id, size_t len);
/* Hand the processes that have samples over to out. */
int pd_model_finish(struct pd_model *m);

#endif
