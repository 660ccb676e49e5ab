// SPDX-License-Identifier: Apache-2.0
/*
 * test_memctx.c - unit tests of agent/samples/pg_memctx.c, the walk of a
 * PostgreSQL memory-context tree, over synthetic memory images
 * (memctx_image.h): a tree read whole with its names, idents and types;
 * a cycle, a fan-out past the node bound, a chain past the depth bound,
 * names without an end, pointers into the kernel and to unmapped pages,
 * unknown tags, a tree rewritten while it is walked, the reader's time
 * running out; and the tag tables.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent/samples/pg_memctx.h"
#include "memctx_image.h"

#define IMG_SIZE (1u << 20)
#define TOP IMG_BASE /* the variable TopMemoryContext */
#define NODE(i) (IMG_BASE + 0x1000 + (uint64_t)(i)*0x60)
#define STR(i) (IMG_BASE + 0x80000 + (uint64_t)(i)*0x100)

static const struct vm_memctx_tags *tags17;

static struct img *img_new(void)
{
	struct img *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->size = IMG_SIZE;
	m->mem = calloc(1, m->size);
	assert_non_null(m->mem);
	tags17 = vm_memctx_tags(17);
	assert_non_null(tags17);
	return m;
}

static void img_free(struct img *m)
{
	free(m->mem);
	free(m);
}

#define ASET (tags17->tag[VM_MEMCTX_ASET])

/*
 * TopMemoryContext (8192) -> A (Generation, 100, ident "ix"),
 *                            B (Slab, 200) -> C (Bump, 300)
 */
static void small_tree(struct img *m)
{
	img_put64(m, TOP, NODE(0));
	img_str(m, STR(0), "TopMemoryContext");
	img_str(m, STR(1), "A");
	img_str(m, STR(2), "B");
	img_str(m, STR(3), "C");
	img_str(m, STR(4), "ix");
	img_node(m, NODE(0), ASET, 8192, 0, NODE(1), 0, 0, STR(0), 0);
	img_node(m, NODE(1), tags17->tag[VM_MEMCTX_GENERATION], 100, NODE(0), 0,
		 0, NODE(2), STR(1), STR(4));
	img_node(m, NODE(2), tags17->tag[VM_MEMCTX_SLAB], 200, NODE(0), NODE(3),
		 NODE(1), 0, STR(2), 0);
	img_node(m, NODE(3), tags17->tag[VM_MEMCTX_BUMP], 300, NODE(2), 0, 0, 0,
		 STR(3), 0);
}

static void test_tree(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_tree t;

	(void)state;
	small_tree(m);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_false(t.partial);
	assert_int_equal(t.tries, 1);
	assert_int_equal(t.n, 4);
	assert_int_equal(t.total, 8192 + 100 + 200 + 300);
	assert_string_equal(vm_memctx_str(&t, t.v[0].name), "TopMemoryContext");
	assert_int_equal(t.v[0].parent, VM_MEMCTX_NONE);
	assert_int_equal(t.v[0].type, VM_MEMCTX_ASET);
	assert_string_equal(vm_memctx_str(&t, t.v[1].name), "A");
	assert_string_equal(vm_memctx_str(&t, t.v[1].ident), "ix");
	assert_int_equal(t.v[1].type, VM_MEMCTX_GENERATION);
	assert_string_equal(vm_memctx_str(&t, t.v[2].name), "B");
	assert_string_equal(vm_memctx_str(&t, t.v[2].ident), "");
	assert_int_equal(t.v[2].type, VM_MEMCTX_SLAB);
	assert_string_equal(vm_memctx_str(&t, t.v[3].name), "C");
	assert_int_equal(t.v[3].parent, 2);
	assert_int_equal(t.v[3].depth, 2);
	assert_int_equal(t.v[3].type, VM_MEMCTX_BUMP);
	assert_int_equal(t.cut_nodes + t.cut_depth + t.cut_names + t.bad, 0);
	vm_memctx_tree_free(&t);
	img_free(m);
}

/* Reads are batched: a round per level here, not a call per node. */
static void test_batched(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_tree t;

	(void)state;
	img_put64(m, TOP, NODE(0));
	img_node(m, NODE(0), ASET, 1, 0, NODE(1), 0, 0, 0, 0);
	/* 500 children of the root, each with one child of its own. */
	for (int i = 1; i <= 500; i++) {
		img_node(m, NODE(i), ASET, 1, NODE(0), NODE(i + 500),
			 i > 1 ? NODE(i - 1) : 0, i < 500 ? NODE(i + 1) : 0, 0,
			 0);
		img_node(m, NODE(i + 500), ASET, 1, NODE(i), 0, 0, 0, 0, 0);
	}
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_int_equal(t.n, 1001);
	assert_int_equal(t.total, 1001);
	assert_false(t.partial);
	/* Siblings are a list: 500 rounds, each of at most 2 nodes. */
	assert_in_range(m->reads, 500, 503);
	print_message("# %u reads for 1001 contexts\n", m->reads);
	vm_memctx_tree_free(&t);
	img_free(m);
}

static void test_cycle(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_tree t;

	(void)state;
	small_tree(m);
	/* C's first child is B, whose parent is not C: refused, not looped. */
	img_put64(m, NODE(3) + VM_MEMCTX_OFF_FIRSTCHILD, NODE(2));
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_true(t.partial);
	assert_int_equal(t.tries, VM_MEMCTX_TRIES);
	assert_int_equal(t.n, 4);
	assert_non_null(strstr(t.why, "point back"));
	vm_memctx_tree_free(&t);

	/* A node that is its own child and says so: the second visit is cut. */
	img_put64(m, NODE(3) + VM_MEMCTX_OFF_FIRSTCHILD, NODE(3));
	img_put64(m, NODE(3) + VM_MEMCTX_OFF_PARENT, NODE(3));
	img_put64(m, NODE(2) + VM_MEMCTX_OFF_FIRSTCHILD, 0);
	img_put64(m, NODE(1) + VM_MEMCTX_OFF_FIRSTCHILD, NODE(3));
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_true(t.partial);
	assert_int_equal(t.n, 3);
	vm_memctx_tree_free(&t);
	img_free(m);
}

static void test_fanout_bound(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_limits lim = { .max_nodes = 100 };
	struct vm_memctx_tree t;

	(void)state;
	img_put64(m, TOP, NODE(0));
	img_node(m, NODE(0), ASET, 1, 0, NODE(1), 0, 0, 0, 0);
	for (int i = 1; i <= 5000; i++)
		img_node(m, NODE(i), ASET, 1, NODE(0), 0,
			 i > 1 ? NODE(i - 1) : 0, i < 5000 ? NODE(i + 1) : 0, 0,
			 0);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, &lim, &t), 0);
	assert_int_equal(t.n, 100);
	assert_true(t.cut_nodes > 0);
	assert_false(t.partial);
	/* The bound cut the list: nothing past it was read. */
	assert_in_range(m->reads, 100, 103);
	vm_memctx_tree_free(&t);
	img_free(m);
}

static void test_depth_bound(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_tree t;

	(void)state;
	img_put64(m, TOP, NODE(0));
	for (int i = 0; i < 300; i++)
		img_node(m, NODE(i), ASET, 1, i ? NODE(i - 1) : 0,
			 i < 299 ? NODE(i + 1) : 0, 0, 0, 0, 0);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_int_equal(t.n, VM_MEMCTX_MAX_DEPTH);
	assert_int_equal(t.cut_depth, 1);
	vm_memctx_tree_free(&t);
	img_free(m);
}

static void test_names(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_tree t;
	uint64_t endless = STR(10), tail = IMG_BASE + IMG_SIZE - 5;

	(void)state;
	small_tree(m);
	/* A name without an end, an ident ending the image, a newline. */
	memset(m->mem + (endless - IMG_BASE), 'a', 600);
	img_put64(m, NODE(1) + VM_MEMCTX_OFF_NAME, endless);
	memset(m->mem + (tail - IMG_BASE), 'b', 5);
	img_put64(m, NODE(1) + VM_MEMCTX_OFF_IDENT, tail);
	img_str(m, STR(2), "two\nlines");
	/* A name in the kernel: not read. */
	img_put64(m, NODE(3) + VM_MEMCTX_OFF_NAME, 0xffff888000000000ull);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_false(t.partial);
	assert_int_equal(strlen(vm_memctx_str(&t, t.v[1].name)),
			 VM_MEMCTX_NAME_MAX + 3);
	assert_string_equal(vm_memctx_str(&t, t.v[1].ident), "");
	assert_string_equal(vm_memctx_str(&t, t.v[2].name), "two\\x0alines");
	assert_string_equal(vm_memctx_str(&t, t.v[3].name), "[unreadable]");
	assert_int_equal(t.cut_names, 3);
	vm_memctx_tree_free(&t);

	/* A bound on names' bytes leaves the rest without one. */
	struct vm_memctx_limits lim = { .name_bytes = 100 };

	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, &lim, &t), 0);
	assert_int_equal(t.n, 4);
	assert_true(t.names_len <= 100);
	assert_true(t.cut_names >= 1);
	vm_memctx_tree_free(&t);
	img_free(m);
}

static void test_bad_pointers(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_tree t;

	(void)state;
	small_tree(m);
	img_put64(m, NODE(2) + VM_MEMCTX_OFF_FIRSTCHILD, 0xffff888000000000ull);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_true(t.partial);
	assert_int_equal(t.n, 3);
	assert_non_null(strstr(t.why, "user-space"));
	vm_memctx_tree_free(&t);

	/* Unmapped, then misaligned. */
	img_put64(m, NODE(2) + VM_MEMCTX_OFF_FIRSTCHILD, 0x7f0000000000ull);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_true(t.partial);
	assert_non_null(strstr(t.why, "could not be read"));
	vm_memctx_tree_free(&t);
	img_put64(m, NODE(2) + VM_MEMCTX_OFF_FIRSTCHILD, NODE(3) + 1);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_true(t.partial);
	vm_memctx_tree_free(&t);

	/* An unknown tag; a root that is no context at all. */
	img_put64(m, NODE(2) + VM_MEMCTX_OFF_FIRSTCHILD, NODE(3));
	img_put32(m, NODE(3), 7);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_true(t.partial);
	assert_int_equal(t.n, 3);
	assert_non_null(strstr(t.why, "tag 7"));
	vm_memctx_tree_free(&t);
	img_put32(m, NODE(0), 7);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t),
			 -EFAULT);
	vm_memctx_tree_free(&t);

	/* No root yet; a root pointer that cannot be read. */
	img_put64(m, TOP, 0);
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t),
			 -ENOENT);
	vm_memctx_tree_free(&t);
	assert_int_equal(vm_memctx_walk(tags17, 0x7f0000000000ull, img_read, m,
					NULL, &t),
			 -EFAULT);
	vm_memctx_tree_free(&t);
	img_free(m);
}

/*
 * B's parent is wrong while the first walk reads (the pointer, the root,
 * A with the root's names, B with A's), right after.
 */
static void rewrite_once(struct img *m)
{
	img_put64(m, NODE(2) + VM_MEMCTX_OFF_PARENT,
		  m->reads <= 4 ? NODE(1) : NODE(0));
}

static void rewrite_always(struct img *m)
{
	img_put64(m, NODE(2) + VM_MEMCTX_OFF_PARENT,
		  m->reads % 2 ? NODE(1) : NODE(0));
	img_put64(m, NODE(2) + VM_MEMCTX_OFF_PREVCHILD,
		  m->reads % 2 ? NODE(1) : NODE(3));
}

static void test_rewritten(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_tree t;

	(void)state;
	small_tree(m);
	m->before_read = rewrite_once;
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_false(t.partial);
	assert_int_equal(t.tries, 2);
	assert_int_equal(t.n, 4);
	vm_memctx_tree_free(&t);

	m->reads = 0;
	m->before_read = rewrite_always;
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_int_equal(t.tries, VM_MEMCTX_TRIES);
	if (t.partial)
		assert_true(t.n < 4 && t.why[0]);
	vm_memctx_tree_free(&t);
	img_free(m);
}

/* The reader's time runs out: what passed is kept, said partial. */
static void test_time_up(void **state)
{
	struct img *m = img_new();
	struct vm_memctx_tree t;

	(void)state;
	small_tree(m);
	m->time_up_after =
		3; /* the pointer, the root, A with the root's names */
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t), 0);
	assert_true(t.partial);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.tries, 1);
	assert_non_null(strstr(t.why, "time ran out"));
	assert_true(t.time_up);
	vm_memctx_tree_free(&t);
	/* Up before the root was read: nothing to keep. */
	m->reads = 0;
	m->time_up_after = 1;
	assert_int_equal(vm_memctx_walk(tags17, TOP, img_read, m, NULL, &t),
			 -EFAULT);
	vm_memctx_tree_free(&t);
	img_free(m);
}

static void test_tags(void **state)
{
	(void)state;
	assert_null(vm_memctx_tags(14));
	assert_null(vm_memctx_tags(19));
	assert_int_equal(vm_memctx_tags(15)->tag[VM_MEMCTX_BUMP], 0);
	assert_int_equal(vm_memctx_tags(16)->tag[VM_MEMCTX_BUMP], 0);
	assert_true(vm_memctx_tags(17)->tag[VM_MEMCTX_BUMP] != 0);
	assert_true(vm_memctx_tags(18)->tag[VM_MEMCTX_BUMP] != 0);
	assert_string_equal(vm_memctx_type_name(VM_MEMCTX_ASET), "AllocSet");
	assert_string_equal(vm_memctx_type_name(VM_MEMCTX_BUMP), "Bump");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree),
		cmocka_unit_test(test_batched),
		cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_fanout_bound),
		cmocka_unit_test(test_depth_bound),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_bad_pointers),
		cmocka_unit_test(test_rewritten),
		cmocka_unit_test(test_time_up),
		cmocka_unit_test(test_tags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
