// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_profile.c - `vmtools-agent profile`: one CPU profile from the
 * command line with the same engine the REST service uses (engine.h),
 * written to a file (atomically: a temporary file renamed at the end) or
 * to standard output.  SIGINT/SIGTERM end the profile early and still
 * write what was collected.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/commands.h"
#include "agent/profile/engine.h"
#include "common/cleanup.h"
#include "common/subcommand.h"

static struct vm_session *volatile running;

static void on_signal(int sig)
{
	(void)sig;
	vm_session_stop(running); /* async-signal-safe: a flag and write() */
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: vmtools-agent profile [OPTION]... --output FILE\n"
		"\n"
		"Take one CPU profile of the target processes and write it to FILE\n"
		"(- for standard output).  Ctrl-C ends it early and keeps what was\n"
		"collected.\n"
		"\n"
		"  -s, --seconds N        how long to sample (default 5)\n"
		"  -F, --frequency HZ     samples per second per CPU, 1-1000 (default 99)\n"
		"  -p, --profiler NAME    bpf (default) or perf\n"
		"  -c, --comm NAME        profile processes with this command name;\n"
		"                         repeatable (default: postgres)\n"
		"      --pid PID          profile this process and the children it forks;\n"
		"                         repeatable\n"
		"  -f, --format FORMAT    pprof (default) or folded\n"
		"  -z, --gzip             gzip the output\n"
		"  -o, --output FILE      where to write the profile\n"
		"      --perf PATH        the perf binary for --profiler perf (default:\n"
		"                         the tools disk's, else perf on PATH)\n"
		"  -h, --help             show this help\n");
}

static int parse_uint(const char *opt, const char *arg, unsigned long max,
		      unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > max) {
		fprintf(stderr,
			"vmtools-agent profile: %s '%s' is not a number from 0 to %lu\n",
			opt, arg, max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

/* Write to a temporary file next to path, renamed into place at the end. */
static int write_output(const char *path, const void *data, size_t len,
			struct vm_error *err)
{
	char tmp[PATH_MAX];
	_cleanup_close_ int fd = -1;
	int r;

	if (!strcmp(path, "-"))
		return write_all(STDOUT_FILENO, data, len) ?
			       vm_error_errno(
				       err, errno,
				       "cannot write to standard output") :
			       0;
	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return vm_error_set(err, ENAMETOOLONG, "%s: name too long",
				    path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return vm_error_errno(err, errno,
				      "cannot create a file next to %s", path);
	r = write_all(fd, data, len);
	if (r == 0 && fchmod(fd, 0644))
		r = -errno;
	/*
	 * No fsync(): the rename alone already shows readers either the
	 * whole profile or none of it.  fsync() would add durability across
	 * a crash of the machine, which a profile (taken again in seconds)
	 * does not need, and it cost ~2 ms of a profile's wall time waiting
	 * for the disk.
	 */
	if (r == 0 && rename(tmp, path))
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return vm_error_errno(err, -r, "cannot write %s", path);
	}
	return 0;
}

int cmd_profile(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "profiler", required_argument, NULL, 'p' },
		{ "comm", required_argument, NULL, 'c' },
		{ "pid", required_argument, NULL, 'P' },
		{ "format", required_argument, NULL, 'f' },
		{ "gzip", no_argument, NULL, 'z' },
		{ "output", required_argument, NULL, 'o' },
		{ "perf", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct vm_profile_request req = {
		.profiler = VM_PROFILER_BPF,
		.frequency = 99,
		.seconds = 5,
		.format = VM_FORMAT_PPROF,
	};
	struct vm_engine_config cfg = { .perf_path = NULL };
	struct vm_profile_output out = { 0 };
	struct vm_session *s = NULL;
	struct vm_error err = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	const char *output = NULL;
	unsigned long v;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:F:p:c:f:zo:h", opts, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			if (parse_uint("--seconds", optarg, 3600, &v))
				return 2;
			req.seconds = v;
			break;
		case 'F':
			if (parse_uint("--frequency", optarg, 1000, &v))
				return 2;
			req.frequency = v;
			break;
		case 'p':
			if (!strcmp(optarg, "bpf")) {
				req.profiler = VM_PROFILER_BPF;
			} else if (!strcmp(optarg, "perf")) {
				req.profiler = VM_PROFILER_PERF;
			} else {
				fprintf(stderr,
					"vmtools-agent profile: --profiler '%s' is not known: use bpf or perf\n",
					optarg);
				return 2;
			}
			break;
		case 'c':
			if (req.n_comms == VM_MAX_TARGETS) {
				fprintf(stderr,
					"vmtools-agent profile: at most %d --comm\n",
					VM_MAX_TARGETS);
				return 2;
			}
			req.comms[req.n_comms++] = optarg;
			break;
		case 'P':
			if (parse_uint("--pid", optarg, INT_MAX, &v))
				return 2;
			if (req.n_pids == VM_MAX_TARGETS) {
				fprintf(stderr,
					"vmtools-agent profile: at most %d --pid\n",
					VM_MAX_TARGETS);
				return 2;
			}
			req.pids[req.n_pids++] = (pid_t)v;
			break;
		case 'f':
			if (!strcmp(optarg, "pprof")) {
				req.format = VM_FORMAT_PPROF;
			} else if (!strcmp(optarg, "folded")) {
				req.format = VM_FORMAT_FOLDED;
			} else {
				fprintf(stderr,
					"vmtools-agent profile: --format '%s' is not known: use pprof or folded\n",
					optarg);
				return 2;
			}
			break;
		case 'z':
			req.gzip = true;
			break;
		case 'o':
			output = optarg;
			break;
		case 'E':
			if (optarg[0] != '/' || access(optarg, X_OK) < 0) {
				fprintf(stderr,
					"vmtools-agent profile: --perf '%s' must be the absolute path of an executable perf\n",
					optarg);
				return 2;
			}
			cfg.perf_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr,
				"Run 'vmtools-agent profile --help' for the options.\n");
			return 2;
		}
	}
	if (vm_subcommand_no_operands("vmtools-agent profile", argc, argv,
				      optind) < 0)
		return 2;
	if (!output) {
		fprintf(stderr,
			"vmtools-agent profile: --output FILE is required (- for standard output)\n");
		return 2;
	}

	r = vm_session_start(&req, &cfg, &s, &err);
	if (r < 0) {
		fprintf(stderr, "vmtools-agent profile: %s\n",
			vm_error_str(&err));
		return 1;
	}
	running = s;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r = vm_session_wait(s, &err);
	if (r == 0)
		r = vm_session_finish(s, &out, &err);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	running = NULL;
	/* Write first: releasing the backend may wait for the kernel. */
	if (r == 0)
		r = write_output(output, out.data, out.len, &err);
	vm_session_free(s);
	free(out.data);
	if (r < 0) {
		fprintf(stderr, "vmtools-agent profile: %s\n",
			vm_error_str(&err));
		return 1;
	}
	fprintf(stderr,
		"vmtools-agent profile: %llu samples (%llu lost) written to %s\n",
		(unsigned long long)out.samples, (unsigned long long)out.lost,
		output);
	return 0;
}
