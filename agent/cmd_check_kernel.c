// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_check_kernel.c - `vmtools-agent check-kernel [--config FILE]
 * [--fragment FILE]`: compares a kernel's configuration with
 * kernel-config/vmtools.config and says, option by option, what is missing
 * and what that costs (common/kconfig.c does the work).
 *
 * Without --config it reads the running kernel's /proc/config.gz, else
 * /boot/config-$(uname -r), else /lib/modules/$(uname -r)/build/.config
 * (the headers on the tools disk, once setup has linked them).  Exit
 * status: 0 when every required option is present, 1 when one is missing,
 * 2 when the config cannot be read or the command line is wrong.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/commands.h"
#include "common/cleanup.h"
#include "common/kconfig.h"
#include "common/subcommand.h"

#define WHO "vmtools-agent check-kernel"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: vmtools-agent check-kernel [OPTION]...\n"
		"\n"
		"Check a kernel's configuration against what vmtools needs\n"
		"(kernel-config/vmtools.config) and say what each missing option costs.\n"
		"\n"
		"  -c, --config FILE    the kernel config to check, plain or gzip\n"
		"                       (default: /proc/config.gz, else\n"
		"                       /boot/config-$(uname -r), else\n"
		"                       /lib/modules/$(uname -r)/build/.config)\n"
		"  -f, --fragment FILE  check against this fragment instead of the\n"
		"                       built-in copy of vmtools.config\n"
		"  -q, --quiet          print only missing options and the verdict\n"
		"  -h, --help           show this help\n"
		"\n"
		"Exit status: 0 all required options present, 1 a required option\n"
		"missing, 2 the config could not be read.\n");
}

/*
 * /proc/config.gz, else /boot/config-RELEASE, else the .config of the
 * headers setup linked from the tools disk (/lib/modules/RELEASE/build),
 * which guests without IKCONFIG and without /boot still have.
 */
static int find_running_config(char **path, struct vm_error *err)
{
	static const char *const fmts[] = {
		"/boot/config-%s",
		"/lib/modules/%s/build/.config",
	};
	struct utsname u;

	if (access("/proc/config.gz", R_OK) == 0) {
		*path = strdup("/proc/config.gz");
		return *path ? 0 : -ENOMEM;
	}
	if (uname(&u) < 0)
		return vm_error_errno(err, errno, "uname failed");
	for (size_t i = 0; i < ARRAY_SIZE(fmts); i++) {
		if (asprintf(path, fmts[i], u.release) < 0)
			return -ENOMEM;
		if (access(*path, R_OK) == 0)
			return 0;
		free(*path);
		*path = NULL;
	}
	return vm_error_set(
		err, ENOENT,
		"cannot find this kernel's config: no /proc/config.gz (CONFIG_IKCONFIG_PROC), no /boot/config-%s, no /lib/modules/%s/build/.config (run setup first); pass --config FILE",
		u.release, u.release);
}

static int read_file(const char *path, char **text, struct vm_error *err)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	size_t len = 0;

	if (!f)
		return vm_error_errno(err, errno, "cannot open fragment %s",
				      path);
	if (getdelim(text, &len, '\0', f) < 0 && !feof(f))
		return vm_error_errno(err, errno, "cannot read fragment %s",
				      path);
	if (!*text)
		*text = strdup("");
	return *text ? 0 : -ENOMEM;
}

/* Only missing options and the verdict lines: what --quiet shows. */
static void print_quiet(const char *report)
{
	const char *p = report;
	int keep_next = 0;

	while (*p) {
		const char *nl = strchrnul(p, '\n');
		int keep = keep_next || !strncmp(p, "MISSING", 7) ||
			   !strncmp(p, "Summary:", 8) ||
			   !strncmp(p, "Verdict:", 8);

		keep_next = !strncmp(p, "MISSING", 7);
		if (keep)
			printf("%.*s\n", (int)(nl - p), p);
		p = *nl ? nl + 1 : nl;
	}
}

struct check_options {
	char *config; /* NULL: the running kernel's */
	char *fragment_text; /* NULL: the built-in copy */
	const char *fragment_name;
	bool quiet;
};

static void check_options_clear(struct check_options *o)
{
	free(o->config);
	free(o->fragment_text);
}

static int on_option(int c, char *arg, void *ctx)
{
	struct check_options *o = ctx;
	struct vm_error err = { 0 };

	switch (c) {
	case 'c':
		free(o->config);
		o->config = strdup(arg);
		if (!o->config) {
			fprintf(stderr, WHO ": out of memory\n");
			return -ENOMEM;
		}
		break;
	case 'f':
		free(o->fragment_text);
		o->fragment_text = NULL;
		if (read_file(arg, &o->fragment_text, &err) < 0) {
			fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
			return -EINVAL;
		}
		o->fragment_name = arg;
		break;
	case 'q':
		o->quiet = true;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

int cmd_check_kernel(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "fragment", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	_cleanup_(check_options_clear) struct check_options o = {
		.fragment_name = "kernel-config/vmtools.config",
	};
	struct vm_kconfig_fragment *fragment = NULL;
	struct vm_kconfig_values *values = NULL;
	struct vm_kconfig_summary summary;
	_cleanup_free_ char *report = NULL;
	struct vm_error err = { 0 };
	size_t report_len = 0;
	FILE *out;
	int r;

	r = vm_subcommand_parse(WHO, argc, argv, "c:f:qh", longopts, usage,
				on_option, &o);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (!o.config && find_running_config(&o.config, &err) < 0) {
		fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
		return 2;
	}
	r = vm_kconfig_fragment_parse(o.fragment_text ?
					      o.fragment_text :
					      vm_kconfig_builtin_fragment(),
				      o.fragment_name, &fragment, &err);
	if (r == 0)
		r = vm_kconfig_values_load(o.config, &values, &err);
	if (r < 0) {
		fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
		vm_kconfig_fragment_free(fragment);
		return 2;
	}
	out = open_memstream(&report, &report_len);
	if (!out) {
		vm_kconfig_fragment_free(fragment);
		vm_kconfig_values_free(values);
		perror(WHO);
		return 2;
	}
	vm_kconfig_check_values(fragment, values, o.config, out, &summary);
	fclose(out);
	if (o.quiet)
		print_quiet(report);
	else
		fputs(report, stdout);
	vm_kconfig_fragment_free(fragment);
	vm_kconfig_values_free(values);
	return summary.missing[VM_KCONFIG_REQUIRED] ? 1 : 0;
}
