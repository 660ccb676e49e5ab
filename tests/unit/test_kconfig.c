// SPDX-License-Identifier: Apache-2.0
/*
 * test_kconfig.c - unit tests of common/kconfig.c: the fragment as shipped
 * parses and gives every option a level and a reason; .config parsing
 * (plain and gzip, "is not set", duplicates); verdicts (module,
 * alternatives, "not set" wanted); the printed report.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "common/kconfig.h"

static const struct vm_kconfig_want *
find_want(const struct vm_kconfig_fragment *f, const char *name)
{
	for (size_t i = 0; i < f->n_wants; i++)
		if (!strcmp(f->wants[i].want.name, name))
			return &f->wants[i];
	return NULL;
}

static void test_builtin_fragment_parses(void **state)
{
	struct vm_kconfig_fragment *f = NULL;
	struct vm_error err = { 0 };
	const struct vm_kconfig_want *w;

	assert_int_equal(
		vm_kconfig_fragment_parse(vm_kconfig_builtin_fragment(),
					  "builtin", &f, &err),
		0);
	assert_true(f->n_wants >= 20);
	for (size_t i = 0; i < f->n_wants; i++) {
		/* Every option says what is lost, in a sentence. */
		assert_non_null(f->wants[i].cost);
		assert_true(strlen(f->wants[i].cost) > 20);
		assert_true(!strncmp(f->wants[i].cost, "without", 7));
	}
	w = find_want(f, "CONFIG_BPF_SYSCALL");
	assert_non_null(w);
	assert_int_equal(w->level, VM_KCONFIG_REQUIRED);
	assert_string_equal(w->want.value, "y");
	w = find_want(f, "CONFIG_UNWINDER_ORC");
	assert_non_null(w);
	assert_int_equal(w->level, VM_KCONFIG_RECOMMENDED);
	assert_true(w->n_alternatives >= 1);
	assert_string_equal(w->alternatives[0].name,
			    "CONFIG_UNWINDER_FRAME_POINTER");
	assert_non_null(find_want(f, "CONFIG_DEBUG_INFO_BTF"));
	assert_non_null(find_want(f, "CONFIG_PERF_EVENTS"));
	assert_non_null(find_want(f, "CONFIG_KALLSYMS"));
	vm_kconfig_fragment_free(f);
}

static void test_fragment_errors_name_the_line(void **state)
{
	struct vm_kconfig_fragment *f = NULL;
	struct vm_error err = { 0 };

	assert_int_equal(vm_kconfig_fragment_parse("# header\n\nCONFIG_A=y\n",
						   "frag", &f, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "frag:3: CONFIG_A has no"));
	vm_error_clear(&err);
	assert_int_equal(vm_kconfig_fragment_parse(
				 "# required (or junk): x\nCONFIG_A=y\n",
				 "frag", &f, &err),
			 -EINVAL);
	assert_non_null(strstr(err.msg, "frag:1:"));
	vm_error_clear(&err);
	assert_int_equal(vm_kconfig_fragment_parse("CONFIG_A=y garbage\nfoo\n",
						   "frag", &f, &err),
			 -EINVAL);
	vm_error_clear(&err);
	/* A blank line ends a reason: the option below has none. */
	assert_int_equal(vm_kconfig_fragment_parse(
				 "# required: without A\n\nCONFIG_A=y\n",
				 "frag", &f, &err),
			 -EINVAL);
	assert_null(f);
}

static void test_fragment_levels_and_continuations(void **state)
{
	static const char text[] =
		"# optional (or CONFIG_B=y, # CONFIG_C is not set): without A\n"
		"#   things break\n"
		"CONFIG_A=m\n"
		"# recommended: without D nothing\n"
		"# CONFIG_D is not set\n";
	struct vm_kconfig_fragment *f = NULL;
	struct vm_error err = { 0 };

	/* "# CONFIG_C is not set" inside the list is not valid: spaces split. */
	assert_int_equal(vm_kconfig_fragment_parse(text, "t", &f, &err),
			 -EINVAL);
	vm_error_clear(&err);
	assert_int_equal(
		vm_kconfig_fragment_parse(
			"# optional (or CONFIG_B=y, CONFIG_C=m): without A\n"
			"#   things break\n"
			"CONFIG_A=m\n"
			"# recommended: without D nothing\n"
			"# CONFIG_D is not set\n",
			"t", &f, &err),
		0);
	assert_int_equal(f->n_wants, 2);
	assert_int_equal(f->wants[0].level, VM_KCONFIG_OPTIONAL);
	assert_int_equal(f->wants[0].n_alternatives, 2);
	assert_string_equal(f->wants[0].alternatives[1].name, "CONFIG_C");
	assert_string_equal(f->wants[0].alternatives[1].value, "m");
	assert_string_equal(f->wants[0].cost, "without A things break");
	assert_string_equal(f->wants[1].want.value, "n");
	assert_int_equal(f->wants[1].level, VM_KCONFIG_RECOMMENDED);
	vm_kconfig_fragment_free(f);
}

static void test_values_parse(void **state)
{
	static const char cfg[] = "#\n# Automatically generated\n#\n"
				  "CONFIG_A=y\n"
				  "# CONFIG_B is not set\n"
				  "CONFIG_S=\"hello world\"\n"
				  "CONFIG_A=m\n"
				  "CONFIG_N=100";
	struct vm_kconfig_values *v = NULL;
	struct vm_error err = { 0 };

	assert_int_equal(vm_kconfig_values_parse(cfg, strlen(cfg), &v, &err),
			 0);
	assert_string_equal(vm_kconfig_get(v, "CONFIG_A"), "m");
	assert_string_equal(vm_kconfig_get(v, "CONFIG_B"), "n");
	assert_string_equal(vm_kconfig_get(v, "CONFIG_S"), "\"hello world\"");
	assert_string_equal(vm_kconfig_get(v, "CONFIG_N"), "100");
	assert_null(vm_kconfig_get(v, "CONFIG_ABSENT"));
	assert_int_equal(v->n_settings, 4);
	vm_kconfig_values_free(v);
	v = NULL;
	assert_int_equal(vm_kconfig_values_parse("root:x:0:0\n", 11, &v, &err),
			 -EINVAL);
	assert_null(v);
}

static void test_judge(void **state)
{
	static const char cfg[] =
		"CONFIG_Y=y\nCONFIG_M=m\n# CONFIG_N is not set\n"
		"CONFIG_FP=y\nCONFIG_V=5\n";
	struct vm_kconfig_values *v = NULL;
	struct vm_kconfig_setting alt = { "CONFIG_FP", "y" };
	struct vm_kconfig_want w = { 0 };
	const struct vm_kconfig_setting *which;

	assert_int_equal(vm_kconfig_values_parse(cfg, strlen(cfg), &v, NULL),
			 0);
	w.want = (struct vm_kconfig_setting){ "CONFIG_Y", "y" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_OK);
	w.want = (struct vm_kconfig_setting){ "CONFIG_M", "y" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_OK_MODULE);
	w.want = (struct vm_kconfig_setting){ "CONFIG_Y", "m" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_OK);
	w.want = (struct vm_kconfig_setting){ "CONFIG_N", "y" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_MISSING);
	w.want = (struct vm_kconfig_setting){ "CONFIG_ABSENT", "y" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_MISSING);
	w.want = (struct vm_kconfig_setting){ "CONFIG_N", "n" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_OK);
	w.want = (struct vm_kconfig_setting){ "CONFIG_ABSENT", "n" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_OK);
	w.want = (struct vm_kconfig_setting){ "CONFIG_Y", "n" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_MISSING);
	w.want = (struct vm_kconfig_setting){ "CONFIG_V", "5" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_OK);
	w.want = (struct vm_kconfig_setting){ "CONFIG_V", "6" };
	assert_int_equal(vm_kconfig_judge(&w, v, NULL), VM_KCONFIG_MISSING);
	/* ORC missing, frame pointers instead: fine. */
	w.want = (struct vm_kconfig_setting){ "CONFIG_ORC", "y" };
	w.alternatives = &alt;
	w.n_alternatives = 1;
	assert_int_equal(vm_kconfig_judge(&w, v, &which),
			 VM_KCONFIG_OK_ALTERNATIVE);
	assert_ptr_equal(which, &alt);
	vm_kconfig_values_free(v);
}

static void test_report(void **state)
{
	static const char frag[] = "# required: without A nothing works\n"
				   "CONFIG_A=y\n"
				   "# recommended: without B stacks are cut\n"
				   "CONFIG_B=y\n"
				   "# optional: without C meh\n"
				   "CONFIG_C=y\n"
				   "# required: without E no disk\n"
				   "CONFIG_E=y\n";
	static const char cfg[] = "# CONFIG_A is not set\nCONFIG_C=y\n"
				  "CONFIG_E=m\n";
	struct vm_kconfig_fragment *f = NULL;
	struct vm_kconfig_values *v = NULL;
	struct vm_kconfig_summary sum;
	char *out = NULL;
	size_t len = 0;
	FILE *mem;

	assert_int_equal(vm_kconfig_fragment_parse(frag, "f", &f, NULL), 0);
	assert_int_equal(vm_kconfig_values_parse(cfg, strlen(cfg), &v, NULL),
			 0);
	mem = open_memstream(&out, &len);
	vm_kconfig_check_values(f, v, "test.config", mem, &sum);
	fclose(mem);
	assert_int_equal(sum.ok, 2);
	assert_int_equal(sum.missing[VM_KCONFIG_REQUIRED], 1);
	assert_int_equal(sum.missing[VM_KCONFIG_RECOMMENDED], 1);
	assert_int_equal(sum.missing[VM_KCONFIG_OPTIONAL], 0);
	assert_non_null(strstr(out, "Checking test.config"));
	assert_non_null(strstr(out,
			       "MISSING  CONFIG_A=y [required], here not set\n"
			       "         without A nothing works\n"));
	assert_non_null(strstr(
		out,
		"MISSING  CONFIG_B=y [recommended], here absent from this config\n"));
	assert_non_null(strstr(out, "ok       CONFIG_C=y\n"));
	assert_non_null(strstr(out, "ok       CONFIG_E=y, built as a module"));
	assert_non_null(strstr(out, "Verdict: vmtools cannot work"));
	free(out);
	vm_kconfig_values_free(v);
	vm_kconfig_fragment_free(f);
}

static void test_load_plain_and_gzip(void **state)
{
	char plain[] = "/tmp/vmtools-kconfig-XXXXXX";
	char gzpath[64];
	struct vm_kconfig_values *v = NULL;
	struct vm_error err = { 0 };
	unsigned missing = 99;
	gzFile gz;
	int fd = mkstemp(plain);
	const char cfg[] = "CONFIG_BPF=y\nCONFIG_BPF_SYSCALL=y\n";

	assert_true(fd >= 0);
	assert_int_equal(write(fd, cfg, sizeof(cfg) - 1), sizeof(cfg) - 1);
	close(fd);
	snprintf(gzpath, sizeof(gzpath), "%s.gz", plain);
	gz = gzopen(gzpath, "wb");
	assert_non_null(gz);
	assert_int_equal(gzwrite(gz, cfg, sizeof(cfg) - 1), sizeof(cfg) - 1);
	gzclose(gz);

	assert_int_equal(vm_kconfig_values_load(plain, &v, &err), 0);
	assert_string_equal(vm_kconfig_get(v, "CONFIG_BPF"), "y");
	vm_kconfig_values_free(v);
	assert_int_equal(vm_kconfig_values_load(gzpath, &v, &err), 0);
	assert_string_equal(vm_kconfig_get(v, "CONFIG_BPF_SYSCALL"), "y");
	vm_kconfig_values_free(v);

	/* The whole check against the built-in fragment: PERF_EVENTS and
	 * the rest of the required options are missing here. */
	assert_int_equal(vm_kconfig_check(gzpath, NULL, &missing, &err), 0);
	assert_true(missing >= 2);
	assert_int_equal(vm_kconfig_check("/nonexistent/config", NULL, &missing,
					  &err),
			 -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/config"));
	unlink(plain);
	unlink(gzpath);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtin_fragment_parses),
		cmocka_unit_test(test_fragment_errors_name_the_line),
		cmocka_unit_test(test_fragment_levels_and_continuations),
		cmocka_unit_test(test_values_parse),
		cmocka_unit_test(test_judge),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_load_plain_and_gzip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
