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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/commands.h"
#include "common/cleanup.h"
#include "common/kconfig.h"
#include "common/subcommand.h"

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

int cmd_check_kernel(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "fragment", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct vm_kconfig_fragment *fragment = NULL;
	struct vm_kconfig_values *values = NULL;
	struct vm_kconfig_summary summary;
	_cleanup_free_ char *config = NULL, *fragment_text = NULL;
	_cleanup_free_ char *report = NULL;
	const char *fragment_name = "kernel-config/vmtools.config";
	struct vm_error err = { 0 };
	size_t report_len = 0;
	FILE *out;
	int c, quiet = 0, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:f:qh", options, NULL)) != -1) {
		switch (c) {
		case 'c':
			free(config);
			config = strdup(optarg);
			break;
		case 'f':
			free(fragment_text);
			fragment_text = NULL;
			if (read_file(optarg, &fragment_text, &err) < 0) {
				fprintf(stderr,
					"vmtools-agent check-kernel: %s\n",
					vm_error_str(&err));
				return 2;
			}
			fragment_name = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (vm_subcommand_no_operands("vmtools-agent check-kernel", argc, argv,
				      optind) < 0)
		return 2;
	if (!config && find_running_config(&config, &err) < 0) {
		fprintf(stderr, "vmtools-agent check-kernel: %s\n",
			vm_error_str(&err));
		return 2;
	}
	r = vm_kconfig_fragment_parse(
		fragment_text ? fragment_text : vm_kconfig_builtin_fragment(),
		fragment_name, &fragment, &err);
	if (r == 0)
		r = vm_kconfig_values_load(config, &values, &err);
	if (r < 0) {
		fprintf(stderr, "vmtools-agent check-kernel: %s\n",
			vm_error_str(&err));
		vm_kconfig_fragment_free(fragment);
		return 2;
	}
	out = open_memstream(&report, &report_len);
	if (!out) {
		vm_kconfig_fragment_free(fragment);
		vm_kconfig_values_free(values);
		perror("vmtools-agent check-kernel");
		return 2;
	}
	vm_kconfig_check_values(fragment, values, config, out, &summary);
	fclose(out);
	if (quiet)
		print_quiet(report);
	else
		fputs(report, stdout);
	vm_kconfig_fragment_free(fragment);
	vm_kconfig_values_free(values);
	return summary.missing[VM_KCONFIG_REQUIRED] ? 1 : 0;
}
