// SPDX-License-Identifier: Apache-2.0
/*
 * test_bpf_map_pool.c - the programs' preallocated maps kept between
 * profiles (bpf_map_pool.c), on the CPU profiler's own object: its maps
 * taken back after a load and kept, emptied (an entry written in the
 * first profile is gone from the second), lent to the next object of
 * the same shape (the very map, by its kernel id), not to one that holds
 * them meanwhile nor to one of another shape, two of one shape at most,
 * and all let go.  Making BPF maps needs root: skipped without.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <cmocka.h>

#include "agent/profile/bpf/bpf_map_pool.h"
#include "bpf/profile.skel.h"

static uint32_t id_of(const struct bpf_map *m)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	assert_int_equal(bpf_obj_get_info_by_fd(bpf_map__fd(m), &info, &len),
			 0);
	return info.id;
}

/* The profiler loaded with `seen` of that many entries, lent what fits. */
static struct profile_bpf *loaded(struct vm_bpf_map_pool *p, uint32_t seen)
{
	struct profile_bpf *s = profile_bpf__open();

	assert_non_null(s);
	bpf_map__set_max_entries(s->maps.seen, seen);
	vm_bpf_map_pool_lend(p, s->obj);
	assert_int_equal(profile_bpf__load(s), 0);
	return s;
}

static void given_back(struct vm_bpf_map_pool *p, struct profile_bpf *s)
{
	vm_bpf_map_pool_take_back(p, s->obj);
	profile_bpf__destroy(s);
}

static void test_pool(void **state)
{
	struct vm_bpf_map_pool p;
	struct profile_bpf *a, *b, *c, *d;
	uint32_t pid = 4242, first, other;
	uint64_t kept, reused, kept_two;
	void *value;

	(void)state;
	if (geteuid() != 0)
		skip();
	vm_bpf_map_pool_init(&p);

	/* A first profile: its maps made by its load, one entry written. */
	a = loaded(&p, 128);
	value = calloc(1, bpf_map__value_size(a->maps.seen));
	assert_non_null(value);
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(a->maps.seen), &pid,
					     value, BPF_ANY),
			 0);
	first = id_of(a->maps.seen);
	given_back(&p, a);
	vm_bpf_map_pool_stats(&p, &kept, &reused);
	assert_true(kept >= 4); /* targets, children, seen, PostgreSQL's */
	assert_int_equal(reused, 0);

	/* The next is lent the very maps, empty. */
	b = loaded(&p, 128);
	assert_int_equal(id_of(b->maps.seen), first);
	assert_int_not_equal(
		bpf_map_get_next_key(bpf_map__fd(b->maps.seen), NULL, &pid), 0);
	assert_int_equal(errno, ENOENT);
	vm_bpf_map_pool_stats(&p, &kept, &reused);
	assert_int_equal(reused, kept);

	/* One beside it gets others; one of another shape too. */
	c = loaded(&p, 128);
	other = id_of(c->maps.seen);
	assert_int_not_equal(other, first);
	d = loaded(&p, 256);
	assert_int_not_equal(id_of(d->maps.seen), first);
	assert_int_not_equal(id_of(d->maps.seen), other);
	given_back(&p, b);
	given_back(&p, c);
	vm_bpf_map_pool_stats(&p, &kept_two, &reused);
	assert_int_equal(kept_two, 2 * kept);
	given_back(&p, d); /* only its `seen` is of a shape not kept twice */
	vm_bpf_map_pool_stats(&p, &kept, &reused);
	assert_int_equal(kept, kept_two + 1);

	/* Two of one shape at most: a third given back is let go. */
	a = loaded(&p, 128);
	b = loaded(&p, 128);
	c = loaded(&p, 128);
	given_back(&p, a);
	given_back(&p, b);
	given_back(&p, c);
	vm_bpf_map_pool_stats(&p, &kept, &reused);
	assert_int_equal(kept, kept_two + 1);

	vm_bpf_map_pool_let_go(&p);
	vm_bpf_map_pool_stats(&p, &kept, &reused);
	assert_int_equal(kept, 0);
	vm_bpf_map_pool_destroy(&p);
	free(value);
}

/* libbpf's retries (a map without BTF) said nowhere, as the agent does. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool),
	};

	libbpf_set_print(quiet);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
