// SPDX-License-Identifier: Apache-2.0
/*
 * test_common.c - unit tests of common/: error recording, SHA-256,
 * libraries opened at run time, growing arrays, the clock and waits to a
 * monotonic deadline, the command line every subcommand shares, escaping
 * outside bytes for a log line or a JSON document, json-c's helpers, the
 * binary search for the last key at or below an address, and the intern
 * table behind the hashed string pool, the pprof encoder and the history.
 *
 * SHA-256 of buffers and of an fd from where it stands; libraries opened on
 * demand; growing arrays (common/array.h); a wait to a monotonic deadline
 * (vm_cond_wait_until): not before it, at once when past; subcommand
 * options (common/subcommand.c); escaping (common/escape.c): control
 * characters, C1 and line separators, every kind of malformed UTF-8,
 * truncation never inside an escape; a JSON string or null where there is
 * none (common/json.h); the binary search (common/search.h): an empty
 * array, a key below the first, equal keys, past the last, every length
 * against a scan, keyed by a member, by the element itself, and through a
 * function for elements that are indexes; the intern table
 * (common/intern.c): a zeroed one holds C strings, an equal copy finding
 * the key and value added; another kind holds what its hash and equality
 * say, keys that all collide kept apart; nothing allocated before the
 * first add, the bytes each add reports summing to what the table takes;
 * freeing hands every key to the caller's free and leaves the table
 * usable again.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <getopt.h>
#include <stdint.h>

#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/dl.h"
#include "common/error.h"
#include "common/escape.h"
#include "common/intern.h"
#include "common/json.h"
#include "common/search.h"
#include "common/sha256.h"
#include "common/subcommand.h"

static void test_error_first_wins(void **state)
{
	struct vm_error err = { 0 };

	assert_int_equal(vm_error_set(&err, ENOENT, "no disk labelled %s",
				      "vm-tools"),
			 -ENOENT);
	assert_int_equal(vm_error_set(&err, -EIO, "later"), -EIO);
	assert_int_equal(err.code, ENOENT);
	assert_string_equal(vm_error_str(&err), "no disk labelled vm-tools");
	vm_error_clear(&err);
	assert_int_equal(err.code, 0);
	assert_string_equal(vm_error_str(&err), "no error");
}

static void test_error_errno_suffix(void **state)
{
	struct vm_error err = { 0 };

	vm_error_errno(&err, EACCES, "cannot open %s", "/x");
	assert_string_equal(err.msg, "cannot open /x: Permission denied");
	assert_int_equal(vm_error_set(NULL, 0, "ignored"), -EIO);
}

static void test_sha256_known_vectors(void **state)
{
	char hex[VM_SHA256_HEX_LEN];

	vm_sha256_hex("", 0, hex);
	assert_string_equal(
		hex,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	vm_sha256_hex("abc", 3, hex);
	assert_string_equal(
		hex,
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* The fd is hashed from where it stands to its end; errors name the name. */
static void test_sha256_fd(void **state)
{
	char path[] = "/tmp/vmtools-sha-XXXXXX", hex[VM_SHA256_HEX_LEN];
	struct vm_error err = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write(fd, "xyzabc", 6), 6);
	assert_int_equal(lseek(fd, 3, SEEK_SET), 3);
	assert_int_equal(vm_sha256_fd(fd, "the-name", hex, &err), 0);
	assert_string_equal(
		hex,
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	/* At its end: the hash of nothing. */
	assert_int_equal(vm_sha256_fd(fd, "the-name", hex, &err), 0);
	assert_string_equal(
		hex,
		"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	close(fd);
	/* A directory cannot be read: -EISDIR, the name in the message. */
	fd = open("/", O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(vm_sha256_fd(fd, "the-root", hex, &err), -EISDIR);
	assert_non_null(strstr(err.msg, "the-root"));
	assert_string_equal(hex, "");
	close(fd);
}

static void test_sha256_equal(void **state)
{
	char a[VM_SHA256_HEX_LEN], b[VM_SHA256_HEX_LEN];

	(void)state;
	assert_int_equal(vm_sha256_hex("token", 5, a), 0);
	assert_int_equal(vm_sha256_hex("token", 5, b), 0);
	assert_true(vm_sha256_hex_equal(a, b));
	assert_int_equal(vm_sha256_hex("tokeN", 5, b), 0);
	assert_false(vm_sha256_hex_equal(a, b));
	/* A digest that was not computed never matches, itself included. */
	b[0] = '\0';
	assert_false(vm_sha256_hex_equal(b, b));
}

static const char *(*fake_version)(void);
static void *fake_missing;

static void test_dl_load(void **state)
{
	const struct vm_dl_func zlib_funcs[] = {
		VM_DL_FUNC(zlibVersion, fake_version),
	};
	const struct vm_dl_func partial_funcs[] = {
		VM_DL_FUNC(zlibVersion, fake_version),
		VM_DL_FUNC(vm_no_such_function, fake_missing),
	};
	const struct vm_dl_func none[] = { 0 };
	struct vm_dl zlib = { .soname = "libz.so.1",
			      .funcs = zlib_funcs,
			      .n_funcs = 1 };
	struct vm_dl partial = { .soname = "libz.so.1",
				 .funcs = partial_funcs,
				 .n_funcs = 2 };
	struct vm_dl absent = { .soname = "libvmtools-absent.so.0",
				.funcs = none,
				.n_funcs = 0 };
	struct vm_error err = { 0 };

	(void)state;
	assert_int_equal(vm_dl_load(&zlib, &err), 0);
	assert_non_null(fake_version);
	assert_int_equal(fake_version()[0], '1'); /* "1.2.13" */
	assert_int_equal(vm_dl_load(&zlib, &err), 0); /* once, then quickly */

	/* All or nothing: no pointer is left half resolved. */
	fake_version = NULL;
	assert_int_equal(vm_dl_load(&partial, &err), -ENOENT);
	assert_null(fake_version);
	assert_null(fake_missing);
	assert_non_null(strstr(vm_error_str(&err), "vm_no_such_function"));

	memset(&err, 0, sizeof(err));
	assert_int_equal(vm_dl_load(&absent, &err), -ENOENT);
	assert_non_null(strstr(vm_error_str(&err), "libvmtools-absent.so.0"));
	/* The answer is kept. */
	memset(&err, 0, sizeof(err));
	assert_int_equal(vm_dl_load(&absent, &err), -ENOENT);
	assert_non_null(strstr(vm_error_str(&err), "install"));
}

static void test_array_grows_and_keeps(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0, n = 0;

	(void)state;
	for (uint64_t i = 0; i < 1000; i++) {
		assert_int_equal(vm_grow(v, &cap, n + 1), 0);
		assert_true(cap >= n + 1);
		v[n++] = i;
	}
	for (uint64_t i = 0; i < n; i++)
		assert_int_equal(v[i], i);
	/* Doubling: 1000 appends took a handful of allocations. */
	assert_true(cap < 2 * n);
	/* Room enough already: nothing moves. */
	{
		uint64_t *before = v;
		size_t cap_before = cap;

		assert_int_equal(vm_grow(v, &cap, n), 0);
		assert_ptr_equal(v, before);
		assert_int_equal(cap, cap_before);
	}
	/* Several at once, as a stack of frames is reserved. */
	assert_int_equal(vm_grow(v, &cap, cap + 500), 0);
	assert_true(cap >= n + 500);
	assert_int_equal(v[999], 999);
	free(v);
}

static void test_array_overflow_refused(void **state)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	char *c = NULL;
	size_t ccap = 0;

	(void)state;
	assert_int_equal(vm_grow(v, &cap, 4), 0);
	v[0] = 42;
	/* need * sizeof(uint64_t) would wrap round to a small size. */
	assert_int_equal(vm_grow(v, &cap, SIZE_MAX / 4), -ENOMEM);
	assert_int_equal(vm_grow(v, &cap, SIZE_MAX), -ENOMEM);
	/* Refused: the array is as it was. */
	assert_true(cap >= 4 && cap < 1024);
	assert_int_equal(v[0], 42);
	free(v);
	/* More than any object may hold, even of bytes. */
	assert_int_equal(vm_array_reserve((void **)&c, &ccap, SIZE_MAX, 1),
			 -ENOMEM);
	assert_int_equal(vm_array_reserve((void **)&c, &ccap,
					  (size_t)PTRDIFF_MAX + 1, 1),
			 -ENOMEM);
	assert_null(c);
	assert_int_equal(ccap, 0);
	assert_int_equal(vm_array_reserve((void **)&c, &ccap, 1, 0), -ENOMEM);
}

static void test_clock(void **state)
{
	uint64_t a, b, real;

	(void)state;
	a = vm_clock_ns(CLOCK_MONOTONIC);
	b = vm_clock_ns(CLOCK_MONOTONIC);
	assert_true(a > 0);
	assert_true(b >= a);
	real = vm_clock_ns(CLOCK_REALTIME);
	/* Nanoseconds since 1970, within a second of time(). */
	assert_true(real / 1000000000ULL + 1 >= (uint64_t)time(NULL));
	assert_true(real / 1000000000ULL <= (uint64_t)time(NULL));
}

/* A wait on a monotonic condition ends at its deadline, not before. */
static void test_cond_wait_until(void **state)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c;
	uint64_t deadline;
	int r;

	(void)state;
	vm_cond_init_monotonic(&c);
	pthread_mutex_lock(&m);
	deadline = vm_clock_ns(CLOCK_MONOTONIC) + 20000000ULL;
	do
		r = vm_cond_wait_until(&c, &m, deadline);
	while (r == 0); /* woken for nothing: wait again */
	assert_int_equal(r, ETIMEDOUT);
	assert_true(vm_clock_ns(CLOCK_MONOTONIC) >= deadline);
	/* A deadline already past: at once. */
	assert_int_equal(vm_cond_wait_until(&c, &m, deadline), ETIMEDOUT);
	pthread_mutex_unlock(&m);
	pthread_cond_destroy(&c);
}

static void test_subcommand_number(void **state)
{
	static const char *const bad[] = {
		"",   "x",  "-1",   "+1", " 1",
		"1 ", "1x", "0x10", "11", "99999999999999999999999",
	};
	uint32_t v = 7;

	(void)state;
	assert_int_equal(vm_subcommand_number("t", "--n", "1", 1, 10, &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(vm_subcommand_number("t", "--n", "10", 1, 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(vm_subcommand_number("t", "--n", "007", 1, 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(vm_subcommand_number("t", "--n", "4294967295", 0,
					      UINT32_MAX, &v),
			 0);
	assert_true(v == UINT32_MAX);
	/* One more does not wrap round to 0. */
	assert_int_equal(vm_subcommand_number("t", "--n", "4294967296", 0,
					      UINT32_MAX, &v),
			 -EINVAL);
	assert_true(v == UINT32_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_equal(vm_subcommand_number("t", "--n", bad[i], 1, 10,
						      &v),
				 -EINVAL);
		assert_int_equal(v, 7);
	}
	assert_int_equal(vm_subcommand_number("t", "--n", "0", 1, 10, &v),
			 -EINVAL);
}

struct parsed {
	const char *name;
	int flag;
	int calls;
};

static int usage_calls;
static FILE *usage_out;

static void fake_usage(FILE *out)
{
	usage_calls++;
	usage_out = out;
}

static int fake_option(int c, char *arg, void *ctx)
{
	struct parsed *p = ctx;

	p->calls++;
	if (c == 'n') {
		p->name = arg;
		return 0;
	}
	if (c == 'f') {
		p->flag = 1;
		return 0;
	}
	return -EDOM; /* 'x': this option's own refusal */
}

static int parse(struct parsed *p, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "flag", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};

	memset(p, 0, sizeof(*p));
	usage_calls = 0;
	usage_out = NULL;
	return vm_subcommand_parse("test", argc, argv, "n:fxh", longopts,
				   fake_usage, fake_option, p);
}

static void test_subcommand_parse(void **state)
{
	char *ok[] = { "cmd", "--name", "a", "-f", NULL };
	char *help[] = { "cmd", "-f", "--help", "--name", "b", NULL };
	char *unknown[] = { "cmd", "--nope", NULL };
	char *missing[] = { "cmd", "--name", NULL };
	char *operand[] = { "cmd", "-f", "left", NULL };
	char *refused[] = { "cmd", "-x", "-f", NULL };
	struct parsed p;

	(void)state;
	assert_int_equal(parse(&p, 4, ok), 0);
	assert_string_equal(p.name, "a");
	assert_int_equal(p.flag, 1);
	assert_int_equal(usage_calls, 0);
	/* --help: the usage on stdout, and nothing after it is read. */
	assert_int_equal(parse(&p, 5, help), 1);
	assert_int_equal(usage_calls, 1);
	assert_ptr_equal(usage_out, stdout);
	assert_null(p.name);
	/* Usage errors: no usage printed, a pointer to --help instead. */
	assert_int_equal(parse(&p, 2, unknown), -EINVAL);
	assert_int_equal(parse(&p, 2, missing), -EINVAL);
	assert_int_equal(parse(&p, 3, operand), -EINVAL);
	assert_int_equal(p.flag, 1);
	assert_int_equal(usage_calls, 0);
	/* An option's own refusal stops the parse with its errno. */
	assert_int_equal(parse(&p, 3, refused), -EDOM);
	assert_int_equal(p.calls, 1);
	assert_int_equal(p.flag, 0);
	/* Parsing again starts from the first argument. */
	assert_int_equal(parse(&p, 4, ok), 0);
	assert_string_equal(p.name, "a");
}

static void assert_escaped(const char *in, size_t len, enum vm_escape_mode mode,
			   const char *want)
{
	char out[256];

	assert_int_equal(vm_escape(out, sizeof(out), in, len, mode),
			 strlen(want));
	assert_string_equal(out, want);
}

/* A literal's bytes, without its terminating NUL. */
#define ESCAPED(in, mode, want) assert_escaped(in, sizeof(in) - 1, mode, want)

static void test_escape(void **state)
{
	char small[8];

	(void)state;
	/* A forged line and a terminal escape stay one line of text. */
	ESCAPED("/x\n2026Z vmtools-agent: x", VM_ESCAPE_TEXT,
		"/x\\x0a2026Z vmtools-agent: x");
	ESCAPED("a\x1b[31mb\r\t\x7f", VM_ESCAPE_TEXT,
		"a\\x1b[31mb\\x0d\\x09\\x7f");
	ESCAPED("nul\0x", VM_ESCAPE_TEXT, "nul\\x00x");
	/* UTF-8 kept; bytes that are not UTF-8 escaped one by one. */
	ESCAPED("caf\xc3\xa9 \xe2\x82\xac", VM_ESCAPE_TEXT,
		"caf\xc3\xa9 \xe2\x82\xac");
	ESCAPED("\xff\xfe", VM_ESCAPE_TEXT, "\\xff\\xfe");
	ESCAPED("\xc0\xaf", VM_ESCAPE_TEXT, "\\xc0\\xaf"); /* overlong */
	ESCAPED("\xed\xa0\x80", VM_ESCAPE_TEXT,
		"\\xed\\xa0\\x80"); /* a surrogate */
	ESCAPED("\xf4\x90\x80\x80", VM_ESCAPE_TEXT,
		"\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
	ESCAPED("\xe2\x82", VM_ESCAPE_TEXT, "\\xe2\\x82"); /* cut */
	/* C1 controls and the Unicode line separators, as UTF-8. */
	ESCAPED("\xc2\x9b"
		"1m",
		VM_ESCAPE_TEXT,
		"\\xc2\\x9b"
		"1m");
	ESCAPED("\xe2\x80\xa8", VM_ESCAPE_TEXT, "\\xe2\\x80\\xa8");
	/* A word: also the space and the backslash, so it reads back. */
	ESCAPED("/a b\\x0a", VM_ESCAPE_WORD, "/a\\x20b\\\\x0a");
	ESCAPED("a b\\", VM_ESCAPE_TEXT, "a b\\");
	/* Serialized JSON: only what is not UTF-8, its backslash escaped. */
	ESCAPED("{\"e\":\"/x\xff\\n\"}", VM_ESCAPE_JSON,
		"{\"e\":\"/x\\\\xff\\n\"}");
	/* Truncated, never in the middle of an escape, and says so. */
	assert_int_equal(vm_escape(small, sizeof(small), "abcd\n", 5,
				   VM_ESCAPE_TEXT),
			 8);
	assert_string_equal(small, "abcd");
	assert_int_equal(vm_escape(NULL, 0, "\xff", 1, VM_ESCAPE_JSON), 5);
}

/* A string, or null where there is none; a reference released by scope. */
static void test_json(void **state)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_json_ struct json_object *none = NULL;

	(void)state;
	assert_non_null(o);
	json_object_object_add(o, "a", vm_json_string_or_null("x"));
	json_object_object_add(o, "b", vm_json_string_or_null(""));
	json_object_object_add(o, "c", vm_json_string_or_null(NULL));
	assert_string_equal(
		json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN),
		"{\"a\":\"x\",\"b\":null,\"c\":null}");
	assert_null(none);
}

struct keyed {
	int tag;
	uint64_t key;
};

/* The tag of the last element at or below key, -1 for none. */
static int floor_tag(const struct keyed *v, size_t n, uint64_t key)
{
	const struct keyed *k = VM_BSEARCH_FLOOR(key, v, n, key);

	return k ? k->tag : -1;
}

/* An element's key found through arg: an index into a table of keys. */
static uint64_t key_by_index(const void *elem, const void *arg)
{
	return ((const uint64_t *)arg)[*(const uint32_t *)elem];
}

/*
 * The last element whose key is at or below the key asked: none in an
 * empty array or below the first; the last of equal keys; the last
 * element for any key past it, up to UINT64_MAX.
 */
static void test_bsearch_floor(void **state)
{
	const struct keyed v[] = { { 0, 10 }, { 1, 20 }, { 2, 20 },
				   { 3, 20 }, { 4, 30 }, { 5, 40 } };
	const uint64_t plain[] = { 5, 7, 7, 9 };
	const uint64_t starts[] = { 300, 100, 200 };
	const uint32_t by_start[] = { 1, 2, 0 };
	const uint32_t *i;
	size_t n = ARRAY_SIZE(v);

	(void)state;
	assert_null(VM_BSEARCH_FLOOR(10, v, 0, key));
	assert_null(vm_bsearch_floor_at(10, NULL, 0, sizeof(*v), 0));
	assert_int_equal(floor_tag(v, n, 0), -1);
	assert_int_equal(floor_tag(v, n, 9), -1);
	assert_int_equal(floor_tag(v, n, 10), 0);
	assert_int_equal(floor_tag(v, n, 19), 0);
	assert_int_equal(floor_tag(v, n, 20), 3);
	assert_int_equal(floor_tag(v, n, 29), 3);
	assert_int_equal(floor_tag(v, n, 30), 4);
	assert_int_equal(floor_tag(v, n, 40), 5);
	assert_int_equal(floor_tag(v, n, 41), 5);
	assert_int_equal(floor_tag(v, n, UINT64_MAX), 5);
	/* One element, and every length against a scan. */
	assert_int_equal(floor_tag(v, 1, 9), -1);
	assert_int_equal(floor_tag(v, 1, 10), 0);
	assert_int_equal(floor_tag(v, 1, 11), 0);
	for (size_t len = 0; len <= n; len++)
		for (uint64_t key = 0; key <= 45; key++) {
			int want = -1;

			for (size_t j = 0; j < len; j++)
				if (v[j].key <= key)
					want = v[j].tag;
			assert_int_equal(floor_tag(v, len, key), want);
		}
	/* Elements that are the keys. */
	assert_null(vm_bsearch_floor_at(4, plain, 4, sizeof(*plain), 0));
	assert_ptr_equal(vm_bsearch_floor_at(7, plain, 4, sizeof(*plain), 0),
			 &plain[2]);
	assert_ptr_equal(vm_bsearch_floor_at(99, plain, 4, sizeof(*plain), 0),
			 &plain[3]);
	/* Elements that are indexes, sorted by the keys they name. */
	i = vm_bsearch_floor(250, by_start, ARRAY_SIZE(by_start),
			     sizeof(*by_start), key_by_index, starts);
	assert_non_null(i);
	assert_int_equal(*i, 2);
	i = vm_bsearch_floor(99, by_start, ARRAY_SIZE(by_start),
			     sizeof(*by_start), key_by_index, starts);
	assert_null(i);
}

/*
 * A zeroed intern table holds C strings: an equal copy finds the key and
 * value added; nothing is made before the first add.
 */
static void test_intern_strings(void **state)
{
	struct vm_intern t = { 0 };
	char a[] = "PostgresMain", b[] = "PostgresMain";
	unsigned long h = 0;
	void *v = NULL;
	long grew;

	(void)state;
	assert_int_equal(vm_intern_bytes(&t), 0);
	assert_null(vm_intern_find(&t, a, &h, &v));
	assert_int_equal(vm_intern_bytes(&t), 0); /* a lookup makes nothing */
	grew = vm_intern_add(&t, a, (void *)(uintptr_t)7, h);
	assert_true(grew > 0);
	assert_int_equal((size_t)grew, vm_intern_bytes(&t));
	/* An equal string elsewhere finds the key added, and its value. */
	assert_ptr_equal(vm_intern_find(&t, b, &h, &v), a);
	assert_int_equal((uintptr_t)v, 7);
	assert_ptr_equal(vm_intern_find(&t, b, &h, NULL), a);
	assert_null(vm_intern_find(&t, "PostgresMai", &h, NULL));
	assert_null(vm_intern_find(&t, "", &h, NULL));
	/* The hash find leaves is the one the add takes. */
	assert_int_equal(vm_intern_add(&t, "", NULL, h), 0);
	assert_string_equal(vm_intern_find(&t, "", &h, NULL), "");
	vm_intern_free(&t, NULL);
	assert_int_equal(vm_intern_bytes(&t), 0);
	assert_null(vm_intern_find(&t, a, &h, NULL));
}

struct ikey {
	uint32_t id;
	uint64_t a, b;
};

/* Every key hashes alike: equality alone tells them apart. */
static unsigned long ikey_hash_badly(const void *k)
{
	return ((const struct ikey *)k)->a & 1;
}

static int ikey_eq(const void *x, const void *y)
{
	const struct ikey *p = x, *q = y;

	return p->a == q->a && p->b == q->b;
}

static size_t keys_freed;

static void free_ikey(void *k)
{
	keys_freed++;
	free(k);
}

static void test_intern_other_kinds(void **state)
{
	struct vm_intern t;
	unsigned long h;
	size_t sum = 0;

	(void)state;
	vm_intern_init(&t, 4, ikey_hash_badly, ikey_eq);
	for (uint32_t i = 0; i < 2000; i++) {
		struct ikey probe = { .a = i / 10, .b = i % 10 }, *k;
		long grew;

		assert_null(vm_intern_find(&t, &probe, &h, NULL));
		k = malloc(sizeof(*k));
		assert_non_null(k);
		*k = probe;
		k->id = i;
		grew = vm_intern_add(&t, k, NULL, h);
		assert_true(grew >= 0);
		sum += (size_t)grew;
	}
	/* Made at 4 entries, then doubled: counted add by add. */
	assert_int_equal(sum, vm_intern_bytes(&t));
	for (uint32_t i = 0; i < 2000; i++) {
		struct ikey probe = { .id = UINT32_MAX,
				      .a = i / 10,
				      .b = i % 10 };
		const struct ikey *k = vm_intern_find(&t, &probe, &h, NULL);

		assert_non_null(k);
		assert_int_equal(k->id, i);
	}
	keys_freed = 0;
	vm_intern_free(&t, free_ikey);
	assert_int_equal(keys_freed, 2000);
	/* Usable again, of the same kind. */
	{
		struct ikey k = { .a = 1, .b = 2 }, probe = k;

		assert_null(vm_intern_find(&t, &probe, &h, NULL));
		assert_true(vm_intern_add(&t, &k, NULL, h) > 0);
		probe.id = 9;
		assert_ptr_equal(vm_intern_find(&t, &probe, &h, NULL), &k);
		vm_intern_free(&t, NULL);
	}
}

/* Many strings: each found again, as itself, after the table has grown. */
static void test_intern_many_strings(void **state)
{
	struct vm_intern t = { 0 };
	char(*names)[16] = calloc(20000, sizeof(*names));
	char buf[16];
	unsigned long h;

	(void)state;
	assert_non_null(names);
	for (int i = 0; i < 20000; i++) {
		snprintf(names[i], sizeof(names[i]), "fn_%d", i);
		assert_null(vm_intern_find(&t, names[i], &h, NULL));
		assert_true(vm_intern_add(&t, names[i],
					  (void *)(uintptr_t)(i + 1), h) >= 0);
	}
	for (int i = 0; i < 20000; i++) {
		void *v;

		snprintf(buf, sizeof(buf), "fn_%d", i);
		assert_ptr_equal(vm_intern_find(&t, buf, &h, &v), names[i]);
		assert_int_equal((uintptr_t)v, i + 1);
	}
	/* Two thirds full at most: more entries than strings. */
	assert_true(vm_intern_bytes(&t) > (size_t)20000 * sizeof(void *));
	vm_intern_free(&t, NULL);
	free(names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_first_wins),
		cmocka_unit_test(test_error_errno_suffix),
		cmocka_unit_test(test_sha256_known_vectors),
		cmocka_unit_test(test_sha256_fd),
		cmocka_unit_test(test_sha256_equal),
		cmocka_unit_test(test_dl_load),
		cmocka_unit_test(test_array_grows_and_keeps),
		cmocka_unit_test(test_array_overflow_refused),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_cond_wait_until),
		cmocka_unit_test(test_subcommand_number),
		cmocka_unit_test(test_subcommand_parse),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_bsearch_floor),
		cmocka_unit_test(test_intern_strings),
		cmocka_unit_test(test_intern_other_kinds),
		cmocka_unit_test(test_intern_many_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
