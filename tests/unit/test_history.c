// SPDX-License-Identifier: Apache-2.0
/*
 * test_history.c - unit tests of agent/history/: windows kept and merged
 * (history.c), the age and byte bounds with the compaction that follows,
 * pprof read back (history_pprof.c) equal to what went in, hostile bytes
 * refused, PostgreSQL's wait_event and query_id labels kept through all
 * of these, memory snapshots answered one (the nearest a time) or two
 * compared (growth per context path, signed, whatever the labels), the query times and file names (history_time.c), and the
 * directory (history_dir.c): atomic files, reload, pruning, a symbolic
 * link never followed.
 *
 * In detail: windows merged over a span (same stacks added, [from, until)
 * overlap, -ENOENT for the API's 404); a window encoded to pprof and read
 * back equal; query times as RFC 3339 with offsets and fractions, Unix
 * seconds and relative, each bad one refused; in the directory, a planted
 * symbolic link and junk skipped, leftover temporary files removed, the
 * directory as a symbolic link refused; 300 windows through a directory
 * bounded to 1,000 s keep the newest 100 on the disk and in the status,
 * files and bytes as find counts them, also after someone else removes the
 * newest file and plants an old one (which the index's next listing sees); a
 * symbolic link planted where the next temporary file goes is replaced, not
 * written through.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/encode/encode.h"
#include "agent/history/history.h"
#include "agent/history/history_dir.h"
#include "agent/history/history_time.h"
#include "common/clock.h"

#define NS 1000000000ULL
#define T0 (1795000000ULL * NS)

/* A symbolized window by hand: n stacks, stack i of i+1 frames. */
struct fake {
	struct vm_samples s;
	struct vm_sample v[8];
	struct vm_symbolized y;
	struct vm_sym_stack st[8];
	struct vm_sym_frame fr[8][8];
	struct vm_sym_mapping maps[2];
};

static const char *const names[] = { "main",  "ExecScan", "heap_getnext",
				     "hot_a", "hot_b",	  "f5",
				     "f6",    "f7" };

static void fake_window(struct fake *f, size_t n, uint64_t count, uint32_t pid)
{
	memset(f, 0, sizeof(*f));
	f->maps[0] = (struct vm_sym_mapping){ .start = 0x400000,
					      .end = 0x500000,
					      .file = "/usr/bin/postgres",
					      .build_id = "abcd",
					      .has_functions = true };
	f->maps[1] = (struct vm_sym_mapping){ .start = 0xffffffff81000000,
					      .end = 0xffffffff82000000,
					      .file = VM_KERNEL_MAPPING,
					      .kernel = true };
	f->s.v = f->v;
	f->s.n = n;
	f->s.frequency = 19;
	f->y.samples = &f->s;
	f->y.stacks = f->st;
	f->y.n_stacks = n;
	f->y.mappings = f->maps;
	f->y.n_mappings = 2;
	for (size_t i = 0; i < n; i++) {
		f->v[i].pid = pid;
		f->v[i].tid = pid + (uint32_t)i;
		f->v[i].count = count;
		snprintf(f->v[i].comm, sizeof(f->v[i].comm), "postgres");
		f->st[i].sample = &f->v[i];
		f->st[i].backend_type = i % 2 ? "client backend" : NULL;
		f->st[i].frames = f->fr[i];
		f->st[i].n_frames = i + 1;
		for (size_t j = 0; j <= i; j++)
			f->fr[i][j] = (struct vm_sym_frame){
				.addr = 0x401000 + 16 * (i - j),
				.mapping = 1,
				.function = names[i - j],
			};
	}
}

static int add(struct vm_history *h, uint64_t start_s, uint64_t end_s, size_t n,
	       uint64_t count)
{
	struct fake f;
	struct vm_history_window w = { .start_ns = T0 + start_s * NS,
				       .end_ns = T0 + end_s * NS,
				       .samples = n * count,
				       .frequency = 19 };
	struct vm_error err = { 0 };

	fake_window(&f, n, count, 100);
	return vm_history_add(h, &w, &f.y, &err);
}

struct seen {
	uint64_t total;
	size_t stacks;
	uint64_t span_start, span_end;
	char folded[4096];
};

static int look(const struct vm_symbolized *y,
		const struct vm_history_window *span, void *ctx,
		struct vm_error *err)
{
	struct seen *s = ctx;
	void *text;
	size_t len;

	s->stacks = y->n_stacks;
	s->total = 0;
	for (size_t i = 0; i < y->n_stacks; i++)
		s->total += y->stacks[i].sample->count;
	s->span_start = span->start_ns;
	s->span_end = span->end_ns;
	if (vm_folded_encode(y, &text, &len, err) < 0)
		return -1;
	snprintf(s->folded, sizeof(s->folded), "%.*s", (int)len, (char *)text);
	free(text);
	return 0;
}

static void test_merge(void **state)
{
	struct vm_history_config cfg = { 3600, 32 << 20, VM_KIND_CPU };
	struct vm_history *h;
	struct vm_error err = { 0 };
	struct seen s;

	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	assert_int_equal(add(h, 0, 10, 3, 5), 0);
	assert_int_equal(add(h, 10, 20, 3, 7), 0);
	assert_int_equal(add(h, 20, 30, 2, 1), 0);

	/* Same stacks in two windows: one stack, counts added. */
	assert_int_equal(vm_history_merge(h, T0, T0 + 20 * NS, look, &s, &err),
			 0);
	assert_int_equal(s.stacks, 3);
	assert_int_equal(s.total, 36);
	assert_int_equal(s.span_start, T0);
	assert_int_equal(s.span_end, T0 + 20 * NS);
	assert_non_null(strstr(s.folded, "postgres;main 12\n"));
	assert_non_null(
		strstr(s.folded, "postgres;main;ExecScan;heap_getnext 12\n"));

	/* Overlapping [from, until) picks windows that overlap it. */
	assert_int_equal(vm_history_merge(h, T0 + 15 * NS, T0 + 25 * NS, look,
					  &s, &err),
			 0);
	assert_int_equal(s.total, 21 + 2);
	/* Windows as the index shows them, to the second: just that one. */
	{
		struct vm_history *h2;
		struct vm_history_window
			w1 = { .start_ns = T0 + NS / 3,
			       .end_ns = T0 + 2 * NS + NS / 3 },
			w2 = { .start_ns = T0 + 2 * NS + NS / 3,
			       .end_ns = T0 + 4 * NS + NS / 3 },
			w3 = { .start_ns = T0 + 4 * NS + NS / 3,
			       .end_ns = T0 + 6 * NS + NS / 3 };
		struct fake f;

		assert_int_equal(vm_history_new(&cfg, &h2, &err), 0);
		fake_window(&f, 1, 1, 1);
		assert_int_equal(vm_history_add(h2, &w1, &f.y, &err), 0);
		fake_window(&f, 1, 10, 1);
		assert_int_equal(vm_history_add(h2, &w2, &f.y, &err), 0);
		fake_window(&f, 1, 100, 1);
		assert_int_equal(vm_history_add(h2, &w3, &f.y, &err), 0);
		assert_int_equal(vm_history_merge(h2, T0 + 2 * NS, T0 + 4 * NS,
						  look, &s, &err),
				 0);
		assert_int_equal(s.total, 10);
		/* A window within one second still has that second. */
		w1.start_ns = T0 + 10 * NS + NS / 4;
		w1.end_ns = T0 + 10 * NS + NS / 2;
		fake_window(&f, 1, 1000, 1);
		assert_int_equal(vm_history_add(h2, &w1, &f.y, &err), 0);
		assert_int_equal(vm_history_merge(h2, T0 + 10 * NS,
						  T0 + 11 * NS, look, &s, &err),
				 0);
		assert_int_equal(s.total, 1000);
		vm_history_free(h2);
	}
	/* A window ending at from is not in [from, until). */
	assert_int_equal(vm_history_merge(h, T0 + 30 * NS, T0 + 40 * NS, look,
					  &s, &err),
			 -ENOENT);
	assert_true(strlen(vm_error_str(&err)) > 0);
	vm_history_free(h);
}

static void test_bounds(void **state)
{
	struct vm_history_config cfg = { 60, 32 << 20, VM_KIND_CPU };
	struct vm_history_index idx;
	struct vm_history *h;
	struct vm_error err = { 0 };
	uint64_t bytes_small, bytes, dropped;

	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	/* Age: windows older than 60 s before the newest end go. */
	for (int i = 0; i < 20; i++)
		assert_int_equal(add(h, i * 10, i * 10 + 10, 4, 1), 0);
	assert_int_equal(vm_history_get_index(h, &idx), 0);
	assert_int_equal(idx.n, 6);
	assert_int_equal(idx.dropped, 14);
	assert_int_equal(idx.v[0].start_ns, T0 + 140 * NS);
	free(idx.v);
	vm_history_usage(h, &bytes_small, &dropped);
	vm_history_free(h);

	/* Bytes: a bound the tables alone nearly fill keeps few windows. */
	cfg.max_seconds = 3600;
	cfg.max_bytes = 4 * bytes_small;
	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	for (int i = 0; i < 200; i++) {
		struct fake f;
		struct vm_history_window w = { .start_ns = T0 + i * 10 * NS,
					       .end_ns =
						       T0 + (i + 1) * 10 * NS };

		/* Each window its own pid: stacks never repeat. */
		fake_window(&f, 8, 1, 1000 + i);
		assert_int_equal(vm_history_add(h, &w, &f.y, &err), 0);
		vm_history_usage(h, &bytes, &dropped);
		if (bytes > cfg.max_bytes && i > 0)
			fail_msg("window %d: %llu bytes, over the %llu bound",
				 i, (unsigned long long)bytes,
				 (unsigned long long)cfg.max_bytes);
	}
	assert_true(dropped > 150);
	assert_int_equal(vm_history_get_index(h, &idx), 0);
	assert_true(idx.n >= 1);
	/* The newest is kept, and what is kept still merges right. */
	assert_int_equal(idx.v[idx.n - 1].end_ns, T0 + 2000 * NS);
	{
		struct seen s;

		assert_int_equal(vm_history_merge(h, idx.v[0].start_ns,
						  T0 + 2000 * NS, look, &s,
						  &err),
				 0);
		assert_int_equal(s.total, 8 * idx.n);
		assert_int_equal(s.stacks, 8 * idx.n);
	}
	free(idx.v);
	vm_history_free(h);
}

struct encoded {
	void *data;
	size_t len;
};

static int encode_gz(const struct vm_symbolized *y,
		     const struct vm_history_window *span, void *ctx,
		     struct vm_error *err)
{
	struct encoded *e = ctx;
	void *raw;
	size_t len;
	int r = vm_pprof_encode(y, &raw, &len, err);

	if (r < 0)
		return r;
	r = vm_gzip(raw, len, &e->data, &e->len, err);
	free(raw);
	return r;
}

static void test_pprof_roundtrip(void **state)
{
	struct vm_history_config cfg = { 3600, 32 << 20, VM_KIND_CPU };
	struct vm_history *a, *b;
	struct vm_error err = { 0 };
	/* As a file name says: to the second. */
	struct vm_history_window w = { .start_ns = T0, .end_ns = T0 + 10 * NS };
	struct encoded e = { 0 };
	struct seen sa, sb;
	uint8_t junk[64];

	assert_int_equal(vm_history_new(&cfg, &a, &err), 0);
	assert_int_equal(vm_history_new(&cfg, &b, &err), 0);
	assert_int_equal(add(a, 0, 10, 5, 3), 0);
	assert_int_equal(
		vm_history_merge(a, T0, T0 + 10 * NS, encode_gz, &e, &err), 0);
	assert_int_equal(vm_history_add_pprof(b, &w, e.data, e.len, &err), 0);
	assert_int_equal(vm_history_merge(a, 0, UINT64_MAX, look, &sa, &err),
			 0);
	assert_int_equal(vm_history_merge(b, 0, UINT64_MAX, look, &sb, &err),
			 0);
	assert_int_equal(sa.total, sb.total);
	assert_int_equal(sb.span_start, T0);
	assert_int_equal(sb.span_end, T0 + 10 * NS);
	assert_string_equal(sa.folded, sb.folded);

	/* Hostile bytes: refused whole, nothing kept. */
	memset(junk, 0xff, sizeof(junk));
	assert_int_equal(vm_history_add_pprof(b, &w, junk, sizeof(junk), &err),
			 -EINVAL);
	((uint8_t *)e.data)[e.len / 2] ^= 0x55;
	assert_true(vm_history_add_pprof(b, &w, e.data, e.len, &err) < 0);
	assert_true(vm_history_add_pprof(b, &w, e.data, 10, &err) < 0);
	{
		struct vm_history_index idx;

		assert_int_equal(vm_history_get_index(b, &idx), 0);
		assert_int_equal(idx.n, 1);
		free(idx.v);
	}
	free(e.data);
	vm_history_free(a);
	vm_history_free(b);
}

/*
 * Counts near 2^63: merged windows stop at the largest count instead of
 * wrapping, the pprof of them says INT64_MAX (no signed overflow, which
 * UBSan aborts on), and a file with such a count is refused whole.
 */
static void test_huge_counts(void **state)
{
	struct vm_history_config cfg = { 3600, 32 << 20, VM_KIND_CPU };
	struct vm_history_window w = { .start_ns = T0, .end_ns = T0 + 20 * NS };
	struct vm_history *a, *b;
	struct vm_error err = { 0 };
	struct encoded e = { 0 };
	struct seen sa;

	(void)state;
	assert_int_equal(vm_history_new(&cfg, &a, &err), 0);
	assert_int_equal(vm_history_new(&cfg, &b, &err), 0);
	assert_int_equal(add(a, 0, 10, 1, 1ULL << 63), 0);
	assert_int_equal(add(a, 10, 20, 1, 1ULL << 63), 0);
	assert_int_equal(vm_history_merge(a, 0, UINT64_MAX, look, &sa, &err),
			 0);
	assert_non_null(strstr(sa.folded, " 18446744073709551615"));
	assert_int_equal(
		vm_history_merge(a, T0, T0 + 20 * NS, encode_gz, &e, &err), 0);
	assert_int_equal(vm_history_add_pprof(b, &w, e.data, e.len, &err),
			 -EINVAL);
	free(e.data);
	/* Just over the bound, in one window: refused too. */
	vm_history_free(a);
	assert_int_equal(vm_history_new(&cfg, &a, &err), 0);
	assert_int_equal(add(a, 0, 10, 1, (1ULL << 40) + 1), 0);
	e = (struct encoded){ 0 };
	assert_int_equal(
		vm_history_merge(a, T0, T0 + 10 * NS, encode_gz, &e, &err), 0);
	w.end_ns = T0 + 10 * NS;
	assert_int_equal(vm_history_add_pprof(b, &w, e.data, e.len, &err),
			 -EINVAL);
	free(e.data);
	vm_history_free(a);
	vm_history_free(b);
}

/*
 * Samples of stack 0 of the fake window, labelled: per label pair, what
 * the merged profile's stacks carry (summed), as "WAIT/QUERYID=COUNT;".
 */
static int look_labels(const struct vm_symbolized *y,
		       const struct vm_history_window *span, void *ctx,
		       struct vm_error *err)
{
	char *out = ctx;
	size_t len = 0;

	(void)span, (void)err;
	out[0] = '\0';
	/* The stacks come out in the order they were first interned. */
	for (size_t i = 0; i < y->n_stacks; i++)
		len += snprintf(
			out + len, 512 - len, "%s/%lld=%llu;",
			y->stacks[i].wait_event ? y->stacks[i].wait_event : "-",
			(long long)y->stacks[i].sample->query_id,
			(unsigned long long)y->stacks[i].sample->count);
	return 0;
}

/* One window of one stack, three times over with other labels. */
static void add_labelled(struct vm_history *h, uint64_t start_s)
{
	struct vm_history_window w = { .start_ns = T0 + start_s * NS,
				       .end_ns = T0 + (start_s + 10) * NS,
				       .frequency = 19 };
	struct vm_error err = { 0 };
	struct fake f;

	fake_window(&f, 3, 2, 100);
	for (size_t i = 0; i < 3; i++) {
		f.v[i].tid = 100;
		f.st[i].backend_type = "client backend";
		f.st[i].n_frames = 1;
		f.fr[i][0] = f.fr[0][0];
	}
	f.st[0].wait_event = "LWLock:WALWrite";
	f.v[0].query_id = (uint64_t)-4242424242424242LL;
	f.st[1].wait_event = NULL;
	f.v[1].query_id = 77;
	f.st[2].wait_event = "LWLock:WALWrite";
	f.v[2].query_id = 0;
	assert_int_equal(vm_history_add(h, &w, &f.y, &err), 0);
}

static void test_labels(void **state)
{
	const char *want = "LWLock:WALWrite/-4242424242424242=%d;-/77=%d;"
			   "LWLock:WALWrite/0=%d;";
	struct vm_history_config cfg = { 3600, 32 << 20, VM_KIND_CPU };
	struct vm_history_window w = { .start_ns = T0, .end_ns = T0 + 10 * NS };
	struct vm_history *a, *b;
	struct vm_error err = { 0 };
	struct encoded e = { 0 };
	char got[512], expect[512];

	/* Same frames, other labels: three stacks, merged per label. */
	assert_int_equal(vm_history_new(&cfg, &a, &err), 0);
	add_labelled(a, 0);
	add_labelled(a, 10);
	assert_int_equal(
		vm_history_merge(a, 0, UINT64_MAX, look_labels, got, &err), 0);
	snprintf(expect, sizeof(expect), want, 4, 4, 4);
	assert_string_equal(got, expect);

	/* Through the pprof of --history-dir and back. */
	assert_int_equal(
		vm_history_merge(a, T0, T0 + 10 * NS, encode_gz, &e, &err), 0);
	assert_int_equal(vm_history_new(&cfg, &b, &err), 0);
	assert_int_equal(vm_history_add_pprof(b, &w, e.data, e.len, &err), 0);
	assert_int_equal(
		vm_history_merge(b, 0, UINT64_MAX, look_labels, got, &err), 0);
	snprintf(expect, sizeof(expect), want, 2, 2, 2);
	assert_string_equal(got, expect);
	free(e.data);
	vm_history_free(b);
	vm_history_free(a);

	/* Through compactions, as old windows go. */
	cfg.max_seconds = 30;
	assert_int_equal(vm_history_new(&cfg, &a, &err), 0);
	for (int i = 0; i < 80; i++)
		add_labelled(a, 10 * i);
	assert_int_equal(
		vm_history_merge(a, 0, UINT64_MAX, look_labels, got, &err), 0);
	snprintf(expect, sizeof(expect), want, 6, 6, 6);
	assert_string_equal(got, expect);
	vm_history_free(a);
}

static void test_times(void **state)
{
	struct vm_error err = { 0 };
	uint64_t now = T0 + 123 * NS, t;
	char buf[64];

	assert_int_equal(vm_history_parse_time("now", now, &t, &err), 0);
	assert_int_equal(t, now);
	assert_int_equal(vm_history_parse_time("-30s", now, &t, &err), 0);
	assert_int_equal(t, now - 30 * NS);
	assert_int_equal(vm_history_parse_time("-5m", now, &t, &err), 0);
	assert_int_equal(t, now - 300 * NS);
	assert_int_equal(vm_history_parse_time("-1h", now, &t, &err), 0);
	assert_int_equal(t, now - 3600 * NS);
	assert_int_equal(vm_history_parse_time("1795000000", now, &t, &err), 0);
	assert_int_equal(t, T0);
	assert_int_equal(vm_history_parse_time("2026-11-18T11:06:40Z", now, &t,
					       &err),
			 0);
	assert_int_equal(t, T0);
	assert_int_equal(vm_history_parse_time("2026-11-18T12:06:40.5+01:00",
					       now, &t, &err),
			 0);
	assert_int_equal(t, T0 + NS / 2);
	/* a leap day, lower-case t and z, -00:00 */
	assert_int_equal(vm_history_parse_time("2028-02-29t00:00:00z", now, &t,
					       &err),
			 0);
	assert_int_equal(t, 1835395200ULL * NS);
	assert_int_equal(vm_history_parse_time("2026-11-18T11:06:40-00:00", now,
					       &t, &err),
			 0);
	assert_int_equal(t, T0);
	static const char *const bad[] = {
		"", "-", "-5", "-5x", "5m", "yesterday", "-99999999999999h",
		"2026-11-18", "2026-11-18T21:46:40", "2026-11-18T21:46:40Zjunk",
		"2026-13-18T21:46:40Z", "99999999999999",
		/* what strptime took and moved */
		"2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z",
		"2026-04-31T00:00:00Z", "2026-11-18T21:46:61Z",
		"2026-11-18T21:46:60Z", "2026-11-18T24:00:00Z",
		"2026-11-18T21:60:00Z", "2026-11-18T21:46:40+99:99",
		"2026-11-18T21:46:40+24:00", "2026-11-18T21:46:40+01:60",
		"2026-11-18T21:46:40+0100", "2026-11-18T21:46:40+01:0",
		"2026-11-18T21:46:40+", " 2026-11-18T21:46:40Z",
		"2026-11-18T21:46:40Z ", "2026-1-18T21:46:40Z",
		"2026-11-18 21:46:40Z", "+2026-11-18T21:46:40Z",
		"2026-11-18T21:46:40.Z"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = (struct vm_error){ 0 };
		if (vm_history_parse_time(bad[i], now, &t, &err) != -EINVAL)
			fail_msg("'%s' was taken as a time", bad[i]);
		if (!strstr(vm_error_str(&err), "RFC 3339"))
			fail_msg("'%s': %s", bad[i], vm_error_str(&err));
	}

	vm_history_format_rfc3339(T0, buf);
	assert_string_equal(buf, "2026-11-18T11:06:40Z");
	vm_history_file_name(T0, T0 + 10 * NS + 1, buf);
	assert_string_equal(buf, "cpu-20261118T110640Z-20261118T110650Z.pb.gz");
	{
		uint64_t s, e;

		assert_int_equal(vm_history_parse_file_name(buf, &s, &e), 0);
		assert_int_equal(s, T0);
		assert_int_equal(e, T0 + 10 * NS);
		assert_int_equal(
			vm_history_parse_file_name(
				"cpu-20261118T110650Z-20261118T110640Z.pb.gz",
				&s, &e),
			-EINVAL);
		assert_int_equal(
			vm_history_parse_file_name(
				"cpu-2026111xT214640Z-20261118T214650Z.pb.gz",
				&s, &e),
			-EINVAL);
		assert_int_equal(vm_history_parse_file_name("cpu-.pb.gz", &s,
							    &e),
				 -EINVAL);
		/* a day February does not have, an hour past 23 */
		assert_int_equal(
			vm_history_parse_file_name(
				"cpu-20260230T000000Z-20260230T000010Z.pb.gz",
				&s, &e),
			-EINVAL);
		assert_int_equal(
			vm_history_parse_file_name(
				"cpu-20261118T240000Z-20261118T240010Z.pb.gz",
				&s, &e),
			-EINVAL);
		/* a leap day that is one */
		assert_int_equal(
			vm_history_parse_file_name(
				"cpu-20280229T000000Z-20280229T000010Z.pb.gz",
				&s, &e),
			0);
	}
}

static void log_nothing(const char *fmt, ...)
{
	(void)fmt;
}

static void test_dir(void **state)
{
	char tmpl[] = "/tmp/test_history.XXXXXX", path[256], name[64];
	struct vm_history_config cfg = { 3600, 32 << 20, VM_KIND_CPU };
	struct vm_history_dir *d;
	struct vm_history_dir_status st;
	struct vm_history *h;
	struct vm_error err = { 0 };
	const char *dir = mkdtemp(tmpl);
	struct encoded e = { 0 };
	struct vm_history_index idx;
	int fd;

	assert_non_null(dir);
	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	assert_int_equal(add(h, 0, 10, 3, 2), 0);
	assert_int_equal(
		vm_history_merge(h, T0, T0 + 10 * NS, encode_gz, &e, &err), 0);
	vm_history_free(h);

	/* Bounded to 30 s: of five 10 s windows, the newest few stay. */
	snprintf(path, sizeof(path), "%s/h", dir);
	assert_int_equal(vm_history_dir_open(path, 30, 1 << 20, &d, &err), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(vm_history_dir_write(d, T0 + i * 10 * NS,
						      T0 + (i + 1) * 10 * NS,
						      e.data, e.len, &err),
				 0);
	vm_history_dir_status(d, &st);
	assert_int_equal(st.files, 3);
	assert_int_equal(st.dropped, 2);
	assert_string_equal(st.last_error, "");

	/* Planted: a symbolic link, junk, a leftover temporary file. */
	vm_history_file_name(T0 + 100 * NS, T0 + 110 * NS, name);
	snprintf(path, sizeof(path), "%s/h/%s", dir, name);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	vm_history_file_name(T0 + 110 * NS, T0 + 120 * NS, name);
	snprintf(path, sizeof(path), "%s/h/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "junk", 4), 4);
	close(fd);
	snprintf(path, sizeof(path), "%s/h/.tmp-x", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	close(fd);
	vm_history_dir_close(d);

	snprintf(path, sizeof(path), "%s/h", dir);
	assert_int_equal(vm_history_dir_open(path, 3600, 1 << 20, &d, &err), 0);
	snprintf(path, sizeof(path), "%s/h/.tmp-x", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	assert_int_equal(vm_history_dir_load(d, h, NULL, log_nothing), 3);
	assert_int_equal(vm_history_get_index(h, &idx), 0);
	assert_int_equal(idx.n, 3);
	free(idx.v);
	vm_history_free(h);
	vm_history_dir_close(d);

	/* The directory itself as a symbolic link is refused. */
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink("h", path), 0);
	assert_true(vm_history_dir_open(path, 3600, 1 << 20, &d, &err) < 0);
	free(e.data);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* The window files in dir/h and the space they take, as ls would count. */
static size_t files_on_disk(const char *dir, uint64_t *bytes)
{
	char cmd[512];
	size_t n = 0;
	unsigned long long b = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "find '%s/h' -maxdepth 1 -name 'cpu-*' -printf '%%b\\n'", dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	for (unsigned long long blocks; fscanf(f, "%llu", &blocks) == 1; n++)
		b += blocks * 512;
	pclose(f);
	*bytes = b;
	return n;
}

/* Windows first..last-1, 10 s each from T0, each written whole. */
static void write_windows(struct vm_history_dir *d, int first, int last)
{
	static const char data[5000] = "window";
	struct vm_error err = { 0 };

	for (int i = first; i < last; i++)
		assert_int_equal(vm_history_dir_write(d, T0 + i * 10 * NS,
						      T0 + (i + 1) * 10 * NS,
						      data, sizeof(data), &err),
				 0);
}

/*
 * Many windows through a directory bounded by age: what is kept, on the
 * disk and in the status, stays the newest 100 across the index's
 * listings, also when someone else removes files or plants one.
 */
static void test_dir_many(void **state)
{
	char tmpl[] = "/tmp/test_history.XXXXXX", path[256], name[64];
	struct vm_history_dir *d;
	struct vm_history_dir_status st;
	struct vm_error err = { 0 };
	const char *dir = mkdtemp(tmpl);
	static const char data[5000] = "window";
	struct stat sb;
	uint64_t bytes;
	int fd;

	(void)state;
	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/h", dir);
	/* The windows end in the past: 1,000 s keeps the last 100 or 101. */
	assert_int_equal(vm_history_dir_open(path, 1000, 1 << 30, &d, &err), 0);
	write_windows(d, 0, 150);
	vm_history_dir_status(d, &st);
	assert_int_equal(st.files, files_on_disk(dir, &bytes));
	assert_true(st.files == 100 || st.files == 101);
	assert_int_equal(st.bytes, bytes);

	/* Someone removes the newest and plants an old one. */
	vm_history_file_name(T0 + 149 * 10 * NS, T0 + 150 * 10 * NS, name);
	snprintf(path, sizeof(path), "%s/h/%s", dir, name);
	assert_int_equal(unlink(path), 0);
	vm_history_file_name(T0 + 140 * 10 * NS + NS, T0 + 141 * 10 * NS, name);
	snprintf(path, sizeof(path), "%s/h/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, sizeof(data)), (ssize_t)sizeof(data));
	close(fd);
	/* And a symbolic link where the next window's temporary file goes. */
	vm_history_file_name(T0 + 150 * 10 * NS, T0 + 151 * 10 * NS, name);
	snprintf(path, sizeof(path), "%s/h/.tmp-%s", dir, name);
	assert_int_equal(symlink("../target", path), 0);
	snprintf(path, sizeof(path), "%s/target", dir);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	write_windows(d, 150, 300);
	vm_history_dir_status(d, &st);
	assert_int_equal(st.files, files_on_disk(dir, &bytes));
	assert_true(st.files == 100 || st.files == 101);
	assert_int_equal(st.bytes, bytes);
	assert_int_equal(st.write_errors, 0);
	vm_history_file_name(T0 + 299 * 10 * NS, T0 + 300 * 10 * NS, name);
	snprintf(path, sizeof(path), "%s/h/%s", dir, name);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/target",
		 dir); /* not written through */
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_size, 0);
	vm_history_dir_close(d);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* Merges inside a merge's callback: the lock is not held there. */
struct nest {
	struct vm_history *h;
	int depth, busy_at;
	char why[256];
};

static int nested(const struct vm_symbolized *y,
		  const struct vm_history_window *span, void *ctx,
		  struct vm_error *err)
{
	struct nest *n = ctx;
	struct vm_error inner = { 0 };
	uint64_t bytes, dropped;
	int r;

	(void)y, (void)span, (void)err;
	vm_history_usage(n->h, &bytes, &dropped); /* takes the lock */
	n->depth++;
	r = vm_history_merge(n->h, 0, UINT64_MAX, nested, n, &inner);
	if (r == -EBUSY && !n->busy_at) {
		n->busy_at = n->depth;
		snprintf(n->why, sizeof(n->why), "%s", vm_error_str(&inner));
		return 0;
	}
	return r;
}

/*
 * A merged answer is encoded without the history's lock (sealing and
 * /healthz wait for nothing), and at most VM_HISTORY_MERGES_MAX are built
 * at once: the next is -EBUSY, said.
 */
static void test_merge_unlocked(void **state)
{
	struct vm_history_config cfg = { 3600, 32 << 20, VM_KIND_CPU };
	struct vm_error err = { 0 };
	struct nest n = { 0 };

	(void)state;
	assert_int_equal(vm_history_new(&cfg, &n.h, &err), 0);
	assert_int_equal(add(n.h, 0, 10, 3, 2), 0);
	assert_int_equal(vm_history_merge(n.h, 0, UINT64_MAX, nested, &n, &err),
			 0);
	assert_int_equal(n.busy_at, VM_HISTORY_MERGES_MAX);
	assert_non_null(strstr(n.why, "ask again"));
	/* all done: merging works again */
	n = (struct nest){ .h = n.h };
	assert_int_equal(vm_history_merge(n.h, 0, UINT64_MAX, nested, &n, &err),
			 0);
	assert_int_equal(n.busy_at, VM_HISTORY_MERGES_MAX);
	vm_history_free(n.h);
}

/*
 * A gzip bomb for protobuf-c: 16 million empty Sample messages (two bytes
 * each, 32 MiB unpacked, a few KB gzipped) would have it allocate over a
 * gigabyte of structs; refused once VM_HISTORY_MAX_DECODED is reached.
 */
static void test_decode_bound(void **state)
{
	struct vm_history_config cfg = { 3600, 32 << 20, VM_KIND_CPU };
	struct vm_history_window w = { .start_ns = T0, .end_ns = T0 + 10 * NS };
	size_t n = VM_HISTORY_MAX_UNPACKED - 16, gz_len;
	uint8_t *raw = malloc(n);
	void *gz;
	struct vm_history *h;
	struct vm_error err = { 0 };

	(void)state;
	assert_non_null(raw);
	for (size_t i = 0; i + 1 < n; i += 2) {
		raw[i] = 0x12; /* field 2 (sample), length-delimited */
		raw[i + 1] = 0x00; /* empty */
	}
	assert_int_equal(vm_gzip(raw, n, &gz, &gz_len, &err), 0);
	free(raw);
	assert_true(gz_len < VM_HISTORY_MAX_FILE);
	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	assert_int_equal(vm_history_add_pprof(h, &w, gz, gz_len, &err), -EFBIG);
	assert_non_null(strstr(vm_error_str(&err), "would take more than"));
	free(gz);
	vm_history_free(h);
}

/*
 * A window dated after now (a guest that ran with its clock ahead wrote
 * it) neither deletes the others, on disk or in memory, nor makes new
 * windows look old: the age bound counts from now then.
 */
static void test_future_window(void **state)
{
	char tmpl[] = "/tmp/test_history.XXXXXX", path[256];
	struct vm_history_config cfg = { 30, 32 << 20, VM_KIND_CPU };
	uint64_t now = vm_clock_ns(CLOCK_REALTIME) / NS * NS;
	uint64_t year = 365ULL * 86400 * NS;
	struct vm_history_dir *d;
	struct vm_history_dir_status st;
	struct vm_history *h;
	struct vm_error err = { 0 };
	const char *dir = mkdtemp(tmpl);
	struct encoded e = { 0 };
	struct vm_history_index idx;

	(void)state;
	assert_true(vm_history_too_old(10, 100, 1000, 90));
	assert_false(vm_history_too_old(10, 100, 1000, 91));
	assert_false(vm_history_too_old(10, 5000, 50, 90)); /* from now */
	assert_true(vm_history_too_old(10, 5000, 100, 90));
	assert_false(vm_history_too_old(500, 100, 50, 1)); /* after both */

	assert_non_null(dir);
	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	assert_int_equal(add(h, 0, 10, 3, 2), 0);
	assert_int_equal(
		vm_history_merge(h, T0, T0 + 10 * NS, encode_gz, &e, &err), 0);
	vm_history_free(h);

	snprintf(path, sizeof(path), "%s/h", dir);
	assert_int_equal(vm_history_dir_open(path, 30, 1 << 20, &d, &err), 0);
	assert_int_equal(vm_history_dir_write(d, now + year,
					      now + year + 10 * NS, e.data,
					      e.len, &err),
			 0);
	assert_int_equal(vm_history_dir_write(d, now - 20 * NS, now - 10 * NS,
					      e.data, e.len, &err),
			 0);
	assert_int_equal(vm_history_dir_write(d, now - 10 * NS, now, e.data,
					      e.len, &err),
			 0);
	vm_history_dir_status(d, &st);
	assert_int_equal(st.files, 3);
	assert_int_equal(st.dropped, 0);

	/* In memory too, loaded in any order: all three kept. */
	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	assert_int_equal(vm_history_dir_load(d, h, NULL, log_nothing), 3);
	assert_int_equal(vm_history_get_index(h, &idx), 0);
	assert_int_equal(idx.n, 3);
	free(idx.v);
	vm_history_free(h);
	vm_history_dir_close(d);
	free(e.data);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/*
 * A memory snapshot by hand: contexts under TopMemoryContext, each with
 * its bytes and wait event (which changes while a context stays).
 */
struct snap {
	struct vm_samples s;
	struct vm_sample v[4];
	struct vm_symbolized y;
	struct vm_sym_stack st[4];
	struct vm_sym_frame fr[4][2];
};

static void add_snapshot(struct vm_history *h, uint64_t at_s,
			 const char *const *ctx, const uint64_t *bytes,
			 size_t n, const char *wait_event)
{
	struct vm_history_window w = { .start_ns = T0 + at_s * NS,
				       .end_ns = T0 + at_s * NS + NS / 100 };
	struct vm_error err = { 0 };
	struct snap f;

	memset(&f, 0, sizeof(f));
	f.s.kind = VM_KIND_MEMORY;
	f.s.v = f.v;
	f.s.n = n;
	f.y.samples = &f.s;
	f.y.stacks = f.st;
	f.y.n_stacks = n;
	for (size_t i = 0; i < n; i++) {
		f.v[i] = (struct vm_sample){
			.pid = 42, .tid = 42, .count = 1, .value = bytes[i]
		};
		snprintf(f.v[i].comm, sizeof(f.v[i].comm), "postgres");
		f.fr[i][0].function = ctx[i];
		f.fr[i][1].function = "TopMemoryContext";
		f.st[i] = (struct vm_sym_stack){ .sample = &f.v[i],
						 .wait_event = wait_event,
						 .context_type = "AllocSet",
						 .frames = f.fr[i],
						 .n_frames = 2 };
	}
	assert_int_equal(vm_history_add(h, &w, &f.y, &err), 0);
}

/* What an answer of the memory history says: its folded text, signed. */
struct mem_seen {
	bool signed_values;
	bool labels; /* a wait event was kept */
	int64_t bytes[4]; /* ExecutorState, CacheMemoryContext, PortalContext */
	size_t stacks[4]; /* samples of each */
	uint64_t start;
};

static int look_memory(const struct vm_symbolized *y,
		       const struct vm_history_window *span, void *ctx,
		       struct vm_error *err)
{
	static const char *const which[] = { "ExecutorState",
					     "CacheMemoryContext",
					     "PortalContext" };
	struct mem_seen *m = ctx;

	(void)err;
	memset(m, 0, sizeof(*m));
	m->signed_values = y->samples->signed_values;
	m->start = span->start_ns;
	assert_int_equal(y->samples->kind, VM_KIND_MEMORY);
	for (size_t i = 0; i < y->n_stacks; i++) {
		const struct vm_sym_stack *st = &y->stacks[i];

		assert_int_equal(st->n_frames, 2);
		assert_string_equal(st->frames[1].function, "TopMemoryContext");
		assert_string_equal(st->context_type, "AllocSet");
		m->labels |= st->wait_event != NULL;
		for (size_t k = 0; k < 3; k++)
			if (!strcmp(st->frames[0].function, which[k])) {
				m->bytes[k] += (int64_t)st->sample->value;
				m->stacks[k]++;
			}
	}
	return 0;
}

static void test_memory_snapshots(void **state)
{
	struct vm_history_config cfg = { .max_seconds = 3600,
					 .max_bytes = 1 << 20,
					 .kind = VM_KIND_MEMORY };
	static const char *const a[] = { "ExecutorState",
					 "CacheMemoryContext" };
	static const char *const b[] = { "ExecutorState", "CacheMemoryContext",
					 "PortalContext" };
	static const uint64_t ab[] = { 1000, 500 }, bb[] = { 5000, 300, 700 };
	struct vm_history *h;
	struct vm_error err = { 0 };
	struct mem_seen m;

	(void)state;
	assert_int_equal(vm_history_new(&cfg, &h, &err), 0);
	assert_int_equal(vm_history_nearest(h, T0, look_memory, &m, &err),
			 -ENOENT);
	memset(&err, 0, sizeof(err));
	add_snapshot(h, 0, a, ab, 2, "Client:ClientRead");
	add_snapshot(h, 10, b, bb, 3, "IO:DataFileRead");

	/* The one nearest a time, whole, labels kept. */
	assert_int_equal(
		vm_history_nearest(h, T0 + 4 * NS, look_memory, &m, &err), 0);
	assert_int_equal(m.start, T0);
	assert_int_equal(m.bytes[0], 1000);
	assert_int_equal(m.bytes[1], 500);
	assert_true(m.labels);
	assert_false(m.signed_values);
	assert_int_equal(
		vm_history_nearest(h, T0 + 60 * NS, look_memory, &m, &err), 0);
	assert_int_equal(m.bytes[2], 700);

	/*
	 * Growth: per context path, whatever the wait event; what was
	 * given back negative; a path only in the later one whole.
	 */
	assert_int_equal(vm_history_growth(h, T0, T0 + 10 * NS, look_memory, &m,
					   &err),
			 0);
	assert_true(m.signed_values);
	assert_false(m.labels);
	assert_int_equal(m.bytes[0], 4000);
	assert_int_equal(m.stacks[0], 1);
	assert_int_equal(m.bytes[1], -200);
	assert_int_equal(m.bytes[2], 700);
	/* Both times nearest one snapshot: nothing to compare. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(vm_history_growth(h, T0 + 9 * NS, T0 + 20 * NS,
					   look_memory, &m, &err),
			 -ENOENT);
	assert_non_null(strstr(vm_error_str(&err), "one snapshot only"));
	vm_history_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_memory_snapshots),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_pprof_roundtrip),
		cmocka_unit_test(test_huge_counts),
		cmocka_unit_test(test_future_window),
		cmocka_unit_test(test_decode_bound),
		cmocka_unit_test(test_merge_unlocked),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_dir),
		cmocka_unit_test(test_dir_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
