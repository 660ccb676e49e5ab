// SPDX-License-Identifier: Apache-2.0
/*
 * test_svg.c - unit tests of the flame graph: its layout (flame.c) and its
 * SVG (svg.c), on symbolized profiles made by hand.
 *
 * The layout: the root weighs every sample, each frame lies within its
 * parent, siblings do not overlap and come in name order, and a frame's
 * children weigh no more than it does.  The SVG: the same profile gives
 * the same bytes whatever the order of its stacks; titles read "NAME
 * (COUNT samples, SHARE%)"; names are cut to fit; hostile names (XML's
 * specials, bytes that are not UTF-8, controls, "]]>") are escaped, and
 * xmllint --noout accepts every SVG made here.  With VMTOOLS_SVG_DIR set,
 * the SVGs are also left there (tests/integration/80-svg-browser.sh opens
 * them in Chromium).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent/encode/encode.h"
#include "agent/encode/flame.h"

#define MAX_STACKS 16
#define MAX_FRAMES 8

/* A symbolized profile made by hand: mapping 1 is user, 2 the kernel. */
struct fixture {
	struct vm_samples samples;
	struct vm_sample v[MAX_STACKS];
	struct vm_sym_mapping maps[2];
	struct vm_sym_stack stacks[MAX_STACKS];
	struct vm_sym_frame frames[MAX_STACKS][MAX_FRAMES];
	struct vm_symbolized y;
};

static void fixture_init(struct fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	fx->maps[0] = (struct vm_sym_mapping){ .start = 0x1000,
					       .end = 0x9000,
					       .file = "/usr/bin/prog" };
	fx->maps[1] = (struct vm_sym_mapping){ .file = VM_KERNEL_MAPPING,
					       .kernel = true };
	fx->samples.v = fx->v;
	fx->samples.frequency = 99;
	fx->samples.duration_nanos = 5000000000ull;
	fx->y.samples = &fx->samples;
	fx->y.mappings = fx->maps;
	fx->y.n_mappings = 2;
	fx->y.stacks = fx->stacks;
}

/*
 * A stack of count samples: user frames outermost first (as one reads a
 * folded line), then n_kernel kernel frames outermost first.  NULL names
 * an unnamed frame (its address stays).
 */
static void add_stack(struct fixture *fx, const char *comm, uint64_t count,
		      const char *const *user, size_t n_user,
		      const char *const *kernel, size_t n_kernel)
{
	size_t i = fx->y.n_stacks++, n = n_user + n_kernel;
	struct vm_sym_stack *st = &fx->stacks[i];

	assert_true(i < MAX_STACKS && n <= MAX_FRAMES);
	snprintf(fx->v[i].comm, sizeof(fx->v[i].comm), "%s", comm);
	fx->v[i].count = count;
	fx->samples.n = fx->y.n_stacks;
	st->sample = &fx->v[i];
	st->frames = fx->frames[i];
	st->n_frames = n;
	/* Leaf first: the innermost kernel frame, ..., the outermost user. */
	for (size_t k = 0; k < n_kernel; k++)
		st->frames[k] = (struct vm_sym_frame){
			.addr = 0xffffffff81000000ull + k,
			.mapping = 2,
			.function = kernel[n_kernel - 1 - k],
		};
	for (size_t u = 0; u < n_user; u++)
		st->frames[n_kernel + u] = (struct vm_sym_frame){
			.addr = 0x1100 + 0x10 * u,
			.mapping = 1,
			.function = user[n_user - 1 - u],
		};
}

/*
 * main;a;b x3 (two threads), main;a;c x1, main;d x2 with a kernel frame,
 * and a stack the sampler lost.
 */
static void typical(struct fixture *fx)
{
	static const char *const ab[] = { "main", "a", "b" };
	static const char *const ac[] = { "main", "a", "c" };
	static const char *const d[] = { "main", "d" };
	static const char *const sys[] = { "entry_SYSCALL_64", "do_sys_read" };
	static const char *const lost[] = { "[lost user stack]" };

	fixture_init(fx);
	add_stack(fx, "prog", 2, ab, 3, NULL, 0);
	add_stack(fx, "prog", 1, ac, 3, NULL, 0);
	add_stack(fx, "prog", 1, ab, 3, NULL, 0);
	add_stack(fx, "prog", 2, d, 2, sys, 2);
	add_stack(fx, "prog", 1, lost, 1, NULL, 0);
}

static const struct vm_flame_frame *find(const struct vm_flame *g,
					 const char *name)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->frames[i].name, name))
			return &g->frames[i];
	return NULL;
}

static void test_layout(void **state)
{
	struct fixture fx;
	struct vm_flame g;
	uint64_t *children;

	(void)state;
	typical(&fx);
	assert_int_equal(vm_flame_build(&fx.y, &g), 0);
	assert_int_equal(g.total, 7);
	assert_string_equal(g.frames[0].name, "all");
	assert_int_equal(g.frames[0].weight, 7);
	assert_int_equal(g.max_depth,
			 5); /* all;prog;main;d;entry;do_sys_read */
	children = calloc(g.n, sizeof(*children));
	assert_non_null(children);
	for (size_t i = 1; i < g.n; i++) {
		const struct vm_flame_frame *f = &g.frames[i];
		const struct vm_flame_frame *p = &g.frames[f->parent];

		assert_true(f->parent < i); /* pre-order */
		assert_int_equal(f->depth, p->depth + 1);
		assert_true(f->weight > 0);
		assert_true(f->offset >= p->offset);
		assert_true(f->offset + f->weight <= p->offset + p->weight);
		children[f->parent] += f->weight;
		/* The sibling before it ends where it starts, in name order. */
		for (size_t j = i; j-- > 1;) {
			if (g.frames[j].parent != f->parent)
				continue;
			assert_true(g.frames[j].offset + g.frames[j].weight <=
				    f->offset);
			assert_true(strcmp(g.frames[j].name, f->name) < 0);
			break;
		}
	}
	for (size_t i = 0; i < g.n; i++)
		assert_true(children[i] <= g.frames[i].weight);
	/* Merged across threads and stacks: main 6 (+1 lost), a 4, b 3. */
	assert_int_equal(find(&g, "main")->weight, 6);
	assert_int_equal(find(&g, "a")->weight, 4);
	assert_int_equal(find(&g, "b")->weight, 3);
	assert_int_equal(find(&g, "c")->weight, 1);
	assert_int_equal(find(&g, "do_sys_read")->kind, VM_FLAME_KERNEL);
	assert_int_equal(find(&g, "main")->kind, VM_FLAME_USER);
	assert_int_equal(find(&g, "prog")->kind, VM_FLAME_PROCESS);
	assert_int_equal(find(&g, "[lost user stack]")->kind, VM_FLAME_LOST);
	free(children);
	vm_flame_free(&g);
}

/* An unnamed frame reads as FILE+0xOFFSET; a stack of none, [no stack]. */
static void test_unnamed_frames(void **state)
{
	static const char *const unnamed[] = { NULL };
	struct fixture fx;
	struct vm_flame g;

	(void)state;
	fixture_init(&fx);
	add_stack(&fx, "prog", 1, unnamed, 1, NULL, 0);
	add_stack(&fx, "", 1, NULL, 0, NULL, 0);
	assert_int_equal(vm_flame_build(&fx.y, &g), 0);
	assert_non_null(find(&g, "prog+0x100"));
	assert_non_null(find(&g, "[unknown]"));
	assert_int_equal(find(&g, "[no stack]")->kind, VM_FLAME_LOST);
	vm_flame_free(&g);
}

static __attribute__((noinline)) char *encode(struct fixture *fx, size_t *len)
{
	void *svg = NULL;

	assert_int_equal(vm_svg_encode(&fx->y, &svg, len, NULL), 0);
	return svg;
}

/* Write svg to VMTOOLS_SVG_DIR (or a temp dir); xmllint must accept it. */
static __attribute__((noinline)) void xmllint_ok(const char *svg, size_t len,
						 const char *name)
{
	const char *dir = getenv("VMTOOLS_SVG_DIR");
	char tmp[] = "/tmp/test_svg.XXXXXX", path[512], cmd[1100];
	FILE *f;

	if (!dir) {
		assert_non_null(mkdtemp(tmp));
		dir = tmp;
	}
	snprintf(path, sizeof(path), "%s/%s.svg", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(svg, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	if (system("command -v xmllint >/dev/null 2>&1") == 0) {
		snprintf(cmd, sizeof(cmd), "xmllint --noout '%s'", path);
		assert_int_equal(system(cmd), 0);
	} else {
		fprintf(stderr, "# xmllint missing: %s not checked\n", path);
	}
	if (dir == tmp) {
		unlink(path);
		rmdir(tmp);
	}
}

static void test_svg_titles_and_determinism(void **state)
{
	struct fixture fx, shuffled;
	size_t len, len2;
	char *svg, *svg2;

	(void)state;
	typical(&fx);
	svg = encode(&fx, &len);
	assert_non_null(strstr(svg, "<title>b (3 samples, 42.9%)</title>"));
	assert_non_null(strstr(svg, "<title>c (1 sample, 14.3%)</title>"));
	assert_non_null(strstr(svg, "<title>all (7 samples, 100.0%)</title>"));
	assert_non_null(strstr(svg, "class=\"f k\""));
	assert_non_null(strstr(svg, "class=\"f l\""));
	assert_non_null(strstr(svg, "<script"));
	assert_null(strstr(svg, "http://www.w3.org/1999/xlink"));
	/* Nothing from elsewhere: no href, no src. */
	assert_null(strstr(svg, "href="));
	assert_null(strstr(svg, "src="));
	xmllint_ok(svg, len, "typical");

	/* The same stacks in another order: the same bytes. */
	typical(&shuffled);
	{
		struct vm_sym_stack t = shuffled.stacks[0];

		shuffled.stacks[0] = shuffled.stacks[4];
		shuffled.stacks[4] = t;
	}
	svg2 = encode(&shuffled, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(svg, svg2, len);
	free(svg);
	free(svg2);
}

/* The width the SVG gives the frame titled title, from its <rect>. */
static double rect_width(const char *svg, const char *title)
{
	const char *p = strstr(svg, title), *w;

	assert_non_null(p);
	w = strstr(p, "width=\"");
	assert_non_null(w);
	return strtod(w + 7, NULL);
}

static void test_svg_widths(void **state)
{
	struct fixture fx;
	size_t len;
	char *svg;
	double all, a, b, c;

	(void)state;
	typical(&fx);
	svg = encode(&fx, &len);
	all = rect_width(svg, "<title>all ");
	a = rect_width(svg, "<title>a ");
	b = rect_width(svg, "<title>b ");
	c = rect_width(svg, "<title>c ");
	assert_true(all > 1000);
	assert_true(b + c <= a + 0.01 && b + c >= a - 0.02);
	assert_true(a / all > 4.0 / 7 - 0.001 && a / all < 4.0 / 7 + 0.001);
	free(svg);
}

static void test_svg_hostile_names(void **state)
{
	static const char *const names[] = {
		"<script>alert(\"&amp;\")</script>",
		"bad\xff\xfe utf8",
		"overlong\xc0\xaf and surrogate \xed\xa0\x80 and \xef\xbf\xbf",
		"ctl\x01\x1b[31m",
		"]]></script><script>alert(1)</script>",
		"'single' & \"double\" </title></g></svg>",
		"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", /* valid: kept */
	};
	struct fixture fx;
	size_t len;
	char *svg;
	const char *frames;

	(void)state;
	fixture_init(&fx);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		add_stack(&fx, "prog", i + 1, &names[i], 1, NULL, 0);
	svg = encode(&fx, &len);
	xmllint_ok(svg, len, "hostile");
	frames = strstr(svg, "<g id=\"frames\">");
	assert_non_null(frames);
	assert_non_null(strstr(
		frames,
		"<title>&lt;script&gt;alert(&quot;&amp;amp;&quot;)&lt;/script&gt; ("));
	assert_non_null(strstr(frames, "<title>bad\\xff\\xfe utf8 ("));
	assert_non_null(strstr(
		frames,
		"overlong\\xc0\\xaf and surrogate \\xed\\xa0\\x80 and \\xef\\xbf\\xbf ("));
	assert_non_null(strstr(frames, "ctl\\x01\\x1b[31m ("));
	assert_non_null(strstr(frames, "]]&gt;&lt;/script&gt;"));
	assert_non_null(
		strstr(frames, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 ("));
	/* Only the script's own CDATA section ends the document's. */
	assert_ptr_equal(strstr(svg, "]]>"), strrchr(svg, ']') - 1);
	free(svg);
}

/* A long name in a narrow frame is cut, ".." saying so; the title keeps it. */
static void test_svg_names_cut_to_fit(void **state)
{
	static const char *const wide[] = { "w" };
	char longname[300];
	const char *named[] = { longname };
	struct fixture fx;
	size_t len;
	char *svg, *title, *text, *end;

	(void)state;
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memcpy(longname, "Long", 4);
	fixture_init(&fx);
	add_stack(&fx, "prog", 90, wide, 1, NULL, 0);
	add_stack(&fx, "prog", 10, named, 1, NULL, 0);
	svg = encode(&fx, &len);
	xmllint_ok(svg, len, "long-name");
	title = strstr(svg, "<title>Longxxx");
	assert_non_null(title);
	assert_non_null(strstr(title, "xxx (10 samples, 10.0%)</title>"));
	text = strstr(title, "<text ");
	assert_non_null(text);
	text = strchr(text, '>') + 1;
	end = strstr(text, "</text>");
	/* 10% of 1180 px is 118 px: (118 - 6) / 7 = 16 characters. */
	assert_int_equal(end - text, 16);
	assert_memory_equal(end - 2, "..", 2);
	assert_memory_equal(text, "Long", 4);
	free(svg);
}

static void test_svg_empty_profile(void **state)
{
	struct fixture fx;
	size_t len;
	char *svg;

	(void)state;
	fixture_init(&fx);
	svg = encode(&fx, &len);
	assert_non_null(strstr(svg, "<title>all (0 samples, 0.0%)</title>"));
	xmllint_ok(svg, len, "empty");
	free(svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_unnamed_frames),
		cmocka_unit_test(test_svg_titles_and_determinism),
		cmocka_unit_test(test_svg_widths),
		cmocka_unit_test(test_svg_hostile_names),
		cmocka_unit_test(test_svg_names_cut_to_fit),
		cmocka_unit_test(test_svg_empty_profile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
