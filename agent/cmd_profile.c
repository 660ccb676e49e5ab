// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_profile.c - `vmtools-agent profile`: one CPU, off-CPU or wall-clock
 * profile (--kind) from the
 * command line with the same engine the REST service uses (engine.h),
 * written to a file (atomically: a temporary file renamed at the end) or
 * to standard output.  SIGINT/SIGTERM end the profile early and still
 * write what was collected.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/commands.h"
#include "agent/profile/engine.h"
#include "agent/profile/context.h"
#include "agent/profile/limits.h"
#include "agent/samples/sample.h"
#include "agent/setup/setup.h"
#include "agent/symbolize/debuginfod.h"
#include "common/cleanup.h"
#include "common/fdio.h"
#include "common/subcommand.h"

#define WHO "vmtools-agent profile"

/* What the command line asks for. */
struct profile_options {
	struct vm_profile_request req;
	struct vm_engine_config cfg;
	const char *output;
	struct vm_debuginfod_options debuginfod;
};

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
		"Take one profile of the target processes and write it to FILE\n"
		"(- for standard output).  Ctrl-C ends it early and keeps what was\n"
		"collected.\n"
		"\n"
		"  -k, --kind KIND        cpu (default), offcpu (time switched out, by the\n"
		"                         stack it blocked in), wall (both), memory\n"
		"                         (where the memory is now: a snapshot, taken at\n"
		"                         once; --seconds and --frequency are ignored) or\n"
		"                         faults (the code that faulted memory in, in bytes;\n"
		"                         --frequency is ignored)\n"
		"      --min-block-us N   offcpu: leave out blocks shorter than N µs,\n"
		"                         %d-%d (default %d)\n"
		"      --period N         faults: one sample every N page faults, %d-%d\n"
		"                         (default %d)\n"
		"  -s, --seconds N        how long to sample, %d-%d (default %d)\n"
		"  -F, --frequency HZ     samples per second per CPU, %d-%d (default %d)\n"
		"  -p, --profiler NAME    bpf (default) or perf\n"
		"  -c, --comm NAME        profile processes with this command name;\n"
		"                         repeatable (default: " VM_DEFAULT_COMM
		")\n"
		"      --pid PID          profile this process and the children it forks;\n"
		"                         repeatable\n"
		"  -f, --format FORMAT    pprof (default), folded or svg (a flame graph)\n"
		"  -z, --gzip             gzip the output\n"
		"  -o, --output FILE      where to write the profile\n"
		"      --perf PATH        the perf binary for --profiler perf (default:\n"
		"                         the tools disk's, else perf on PATH)\n" VM_DEBUGINFOD_USAGE
		"  -h, --help             show this help\n",
		VM_MIN_BLOCK_US_MIN, VM_MIN_BLOCK_US_MAX,
		VM_MIN_BLOCK_US_DEFAULT, VM_PERIOD_MIN, VM_PERIOD_MAX,
		VM_PERIOD_DEFAULT, VM_SECONDS_MIN, VM_SECONDS_CEILING,
		VM_SECONDS_DEFAULT, VM_FREQUENCY_MIN, VM_FREQUENCY_MAX,
		VM_FREQUENCY_DEFAULT);
}

/*
 * A number option within its rule (limits.h); the command line takes
 * profiles as long as VM_SECONDS_CEILING.
 */
static int ruled(const char *opt, const char *arg, enum vm_rule rule,
		 uint32_t *out)
{
	struct vm_range r = vm_rule_range(rule, VM_SECONDS_CEILING);

	return vm_subcommand_number(WHO, opt, arg, r.min, r.max, out);
}

/* Which of two names arg is: 0 or 1, else says so and -EINVAL. */
static int one_of(const char *opt, const char *arg, const char *first,
		  const char *second)
{
	if (!strcmp(arg, first))
		return 0;
	if (!strcmp(arg, second))
		return 1;
	fprintf(stderr, WHO ": %s '%s' is not known: use %s or %s\n", opt, arg,
		first, second);
	return -EINVAL;
}

/* Room for one more --comm or --pid. */
static int room(const char *opt, size_t n)
{
	if (n < VM_MAX_TARGETS)
		return 0;
	fprintf(stderr, WHO ": at most %d %s\n", VM_MAX_TARGETS, opt);
	return -EINVAL;
}

static int on_option(int c, char *arg, void *ctx)
{
	struct profile_options *o = ctx;
	struct vm_profile_request *req = &o->req;
	struct vm_error err = { 0 };
	uint32_t pid;
	int r = 0;

	switch (c) {
	case 's':
		return ruled("--seconds", arg, VM_RULE_SECONDS, &req->seconds);
	case 'F':
		return ruled("--frequency", arg, VM_RULE_FREQUENCY,
			     &req->frequency);
	case 'k':
		if (vm_kind_parse(arg, &req->kind) == 0)
			return 0;
		fprintf(stderr,
			WHO
			": --kind '%s' is not known: use cpu, offcpu, wall, memory or faults\n",
			arg);
		return -EINVAL;
	case 'B':
		return ruled("--min-block-us", arg, VM_RULE_MIN_BLOCK_US,
			     &req->min_block_us);
	case 'R':
		return ruled("--period", arg, VM_RULE_PERIOD, &req->period);
	case 'p':
		r = one_of("--profiler", arg, "bpf", "perf");
		req->profiler = r == 1 ? VM_PROFILER_PERF : VM_PROFILER_BPF;
		break;
	case 'f':
		r = vm_format_from_name(arg, &req->format);
		if (r < 0)
			fprintf(stderr,
				WHO
				": --format '%s' is not known: use " VM_FORMAT_NAMES
				"\n",
				arg);
		break;
	case 'c':
		r = room("--comm", req->n_comms);
		if (r == 0)
			req->comms[req->n_comms++] = arg;
		break;
	case 'P':
		r = room("--pid", req->n_pids);
		if (r == 0)
			r = vm_subcommand_number(WHO, "--pid", arg, 1, INT_MAX,
						 &pid);
		if (r == 0)
			req->pids[req->n_pids++] = (pid_t)pid;
		break;
	case 'z':
		req->gzip = true;
		break;
	case 'o':
		o->output = arg;
		break;
	case 'E':
		if (arg[0] != '/' || access(arg, X_OK) < 0) {
			fprintf(stderr,
				WHO
				": --perf '%s' must be the absolute path of an executable perf\n",
				arg);
			return -EINVAL;
		}
		o->cfg.perf_path = arg;
		break;
	case 'U':
		r = vm_debuginfod_add_url(&o->debuginfod, arg, &err);
		if (r < 0)
			fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
		break;
	case 'C':
		o->debuginfod.cache = arg;
		break;
	default:
		return -EINVAL;
	}
	return r < 0 ? r : 0;
}

/* 0 to go on, 1 after --help, a negative errno after a usage error. */
static int parse_options(int argc, char **argv, struct profile_options *o)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "frequency", required_argument, NULL, 'F' },
		{ "kind", required_argument, NULL, 'k' },
		{ "min-block-us", required_argument, NULL, 'B' },
		{ "period", required_argument, NULL, 'R' },
		{ "profiler", required_argument, NULL, 'p' },
		{ "comm", required_argument, NULL, 'c' },
		{ "pid", required_argument, NULL, 'P' },
		{ "format", required_argument, NULL, 'f' },
		{ "gzip", no_argument, NULL, 'z' },
		{ "output", required_argument, NULL, 'o' },
		{ "perf", required_argument, NULL, 'E' },
		{ "debuginfod-url", required_argument, NULL, 'U' },
		{ "debuginfod-cache", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};

	memset(o, 0, sizeof(*o));
	vm_request_defaults(&o->req);
	return vm_subcommand_parse(WHO, argc, argv, "s:F:k:p:c:f:zo:h",
				   longopts, usage, on_option, o);
}

/*
 * That there is somewhere to write, and the whole request against the
 * rules the engine checks (limits.h), said with the options' names.  The
 * seconds and the frequency met their rules as they were read; the
 * command names and the pids meet theirs here.
 */
static int validate(const struct profile_options *o)
{
	static const char *const flag[] = {
		[VM_RULE_FREQUENCY] = "--frequency",
		[VM_RULE_SECONDS] = "--seconds",
		[VM_RULE_N_COMMS] = "--comm",
		[VM_RULE_N_PIDS] = "--pid",
		[VM_RULE_FORMAT] = "--format",
		[VM_RULE_KIND] = "--kind",
		[VM_RULE_MIN_BLOCK_US] = "--min-block-us",
		[VM_RULE_PERIOD] = "--period",
	};
	struct vm_rule_break b;
	struct vm_range r;

	if (!o->output) {
		fprintf(stderr, WHO
			": --output FILE is required (- for standard output)\n");
		return -EINVAL;
	}
	if (vm_request_check(&o->req, VM_SECONDS_CEILING, &b) == 0)
		return 0;
	r = vm_rule_range(b.rule, VM_SECONDS_CEILING);
	switch (b.rule) {
	case VM_RULE_COMM:
		fprintf(stderr, WHO ": --comm '%s' must be " VM_COMM_RULE "\n",
			o->req.comms[b.index]);
		break;
	case VM_RULE_KIND_PROFILER:
		fprintf(stderr,
			WHO ": --kind %s %s; leave out --profiler perf\n",
			vm_kind_name(o->req.kind),
			vm_kind_profiler_rule(o->req.kind));
		break;
	case VM_RULE_PID:
		/* A pid is a pid; above the kernel's pid_max no process has it. */
		fprintf(stderr,
			WHO ": no process with pid %" PRId64 " is running\n",
			b.value);
		break;
	default:
		fprintf(stderr,
			WHO ": %s must be from %" PRId64 " to %" PRId64
			    "; got %" PRId64 "\n",
			flag[b.rule], r.min, r.max, b.value);
	}
	return -EINVAL;
}

/* Write to a temporary file next to path, renamed into place at the end. */
static int write_output(const char *path, const void *data, size_t len,
			struct vm_error *err)
{
	char tmp[PATH_MAX];
	_cleanup_close_ int fd = -1;
	int r;

	if (!strcmp(path, "-"))
		return vm_write_all(STDOUT_FILENO, data, len) ?
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
	r = vm_write_all(fd, data, len);
	if (r == 0 && fchmod(fd, 0644))
		r = -errno;
	/*
	 * No fsync(): the rename alone already shows readers either the
	 * whole profile or none of it.  fsync() would add durability across
	 * a crash of the machine, which a profile (taken again in seconds)
	 * does not need, at the price of every profile waiting for the disk.
	 */
	if (r == 0 && rename(tmp, path))
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return vm_error_errno(err, -r, "cannot write %s", path);
	}
	return 0;
}

/*
 * Take the profile: start, wait until the time is up or a signal ends it
 * early, collect and encode.  *s is for the caller to free.
 */
static int take_profile(const struct profile_options *o, struct vm_session **s,
			struct vm_profile_output *out, struct vm_error *err)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int r;

	r = vm_session_start(&o->req, &o->cfg, s, err);
	if (r < 0)
		return r;
	running = *s;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	r = vm_session_wait(*s, err);
	if (r == 0)
		r = vm_session_finish(*s, out, err);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	running = NULL;
	return r;
}

int cmd_profile(int argc, char **argv)
{
	struct profile_options o;
	struct vm_profile_output out = { 0 };
	struct vm_agent_ctx_config ccfg = { 0 };
	struct vm_session *s = NULL;
	struct vm_error err = { 0 };
	int r;

	r = parse_options(argc, argv, &o);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (validate(&o) < 0)
		return 2;
	/*
	 * Where debug files come from besides the machine's own: the tools
	 * disk at its default mountpoint, and debuginfod servers; a server
	 * that cannot be used costs names only, so it is a warning.
	 */
	ccfg.symbols.debug_dir = getenv("VMTOOLS_DEBUG_DIR");
	ccfg.symbols.tools_dir = VM_SETUP_DEFAULT_MOUNTPOINT;
	ccfg.debuginfod = &o.debuginfod;
	r = vm_agent_ctx_new(&ccfg, &o.cfg.ctx, &err);
	if (r == 0 && vm_agent_ctx_warning(o.cfg.ctx))
		fprintf(stderr, WHO ": warning: %s\n",
			vm_agent_ctx_warning(o.cfg.ctx));
	if (r == 0)
		r = take_profile(&o, &s, &out, &err);
	/* Write first: releasing the backend may wait for the kernel. */
	if (r == 0)
		r = write_output(o.output, out.data, out.len, &err);
	vm_session_free(s);
	vm_engine_release(o.cfg.ctx);
	vm_agent_ctx_free(o.cfg.ctx);
	free(out.data);
	if (r < 0) {
		fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
		return 1;
	}
	fprintf(stderr, WHO ": %llu samples (%llu lost) written to %s\n",
		(unsigned long long)out.samples, (unsigned long long)out.lost,
		o.output);
	return 0;
}
