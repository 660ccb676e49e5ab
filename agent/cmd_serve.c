// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_serve.c - `vmtools-agent serve`: set up the tools disk (unless
 * --no-setup), then answer the profiling REST API until SIGTERM/SIGINT.
 *
 * The signals are blocked in every thread and taken synchronously here, so
 * a shutdown runs in one place: refuse new profiles, stop the running one
 * (its client still gets what was collected), let that response go out,
 * close the daemon, exit 0.  A missing disk is not fatal: the bpf backend
 * needs none, and /healthz says what is missing.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "agent/commands.h"
#include "agent/profile/context.h"
#include "agent/profile/limits.h"
#include "agent/profile/engine.h"
#include "agent/iopool/iopool.h"
#include "agent/continuous/continuous.h"
#include "agent/serve/health.h"
#include "agent/serve/http.h"
#include "agent/serve/request.h"
#include "agent/serve/service.h"
#include "agent/setup/setup.h"
#include "agent/symbolize/debuginfod.h"
#include "common/log.h"
#include "common/subcommand.h"
#include "common/ui.h"

/*
 * Bounds of a shutdown: the running session's client is answered within
 * STOP_MS, and STOP_MS + DRAIN_MS stays under the second docs/api.md promises.
 */
#define STOP_MS 700
#define DRAIN_MS 250
/* The web UI as `make install` puts it. */
#define UI_INSTALLED VMTOOLS_DATADIR "/ui"

struct serve_options {
	const char *listen;
	const char *label;
	const char *mountpoint;
	const char *token_file;
	const char *perf;
	const char *ui_dir;
	bool no_setup;
	bool verify;
	bool allow_kernel_mismatch;
	const char *comms[VM_MAX_TARGETS];
	size_t n_comms;
	uint32_t max_seconds;
	uint32_t max_connections;
	uint32_t idle_timeout;
	uint32_t request_timeout;
	/* Users of the machine let in beside root (--allow-user). */
	struct vm_http_access access;
	/* --continuous and what goes with it */
	bool continuous;
	uint32_t cont_frequency;
	uint32_t cont_interval;
	uint32_t memory_every;
	bool memory_every_set;
	uint32_t history_seconds;
	uint32_t history_max_bytes;
	const char *history_dir;
	const char *push_url;
	const char *push_name;
	const char *push_token_file;
	const char *push_basic_auth_file;
	const char *push_tenant;
	struct vm_debuginfod_options debuginfod;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: vmtools-agent serve [OPTION]...\n"
		"\n"
		"Serve the profiling REST API: POST/GET/DELETE /profile/cpu,\n"
		"GET /debug/pprof/profile, GET /healthz, GET /metrics, and the web UI\n"
		"at GET /ui/.\n"
		"\n"
		"  --listen ADDR:PORT      where to listen (default %s); listening\n"
		"                          beyond loopback wants --auth-token-file\n"
		"  --auth-token-file F     require 'Authorization: Bearer TOKEN', the\n"
		"                          token being the content of F\n"
		"  --allow-user USER       let this user of the machine use the API\n"
		"                          (a name or a uid; repeatable): from inside\n"
		"                          the machine, only root and the agent's own\n"
		"                          user may otherwise\n"
		"  --comm NAME             profile processes with this command name\n"
		"                          when a request names none (repeatable;\n"
		"                          default " VM_DEFAULT_COMM ")\n"
		"  --max-seconds N         longest profile a request may ask for\n"
		"                          (default %d, at most %d)\n"
		"  --label L               label of the tools disk (default %s)\n"
		"  --mountpoint DIR        where to mount it (default %s)\n"
		"  --no-setup              do not mount the disk or link the tools\n"
		"  --perf PATH             the perf the Perf backend runs (default:\n"
		"                          the tools disk's, else perf on PATH)\n"
		"  --ui-dir DIR            serve the web UI at /ui/ from DIR (default:\n"
		"                          %s if there, else the tools\n"
		"                          disk's MOUNTPOINT/" VM_UI_IMAGE_DIR
		")\n"
		"  --verify                re-hash every file of the disk at setup\n"
		"  --allow-kernel-mismatch use a disk built for another kernel\n"
		"  --max-connections N     open connections at most (default %d;\n"
		"                          %d per client: an address outside, a user\n"
		"                          inside)\n"
		"  --idle-timeout S        close a connection silent for S seconds\n"
		"                          (default %d)\n"
		"  --request-timeout S     close a connection whose request has not\n"
		"                          arrived whole within S seconds (default %d)\n" VM_DEBUGINFOD_USAGE
		"\n"
		"Continuous profiling (GET /profile/cpu/history):\n"
		"  --continuous            profile the targets all the time with the\n"
		"                          eBPF profiler, one window per interval\n"
		"  --continuous-frequency HZ  (default %d)\n"
		"  --continuous-interval S    seconds per window (default %d)\n"
		"  --memory-every S        a memory snapshot every S seconds, kept\n"
		"                          and pushed beside the windows (default %d;\n"
		"                          0: none; GET /profile/memory/history)\n"
		"  --history-seconds N     keep windows this long (default %d)\n"
		"  --history-max-bytes N   at most this much memory, and disk (default\n"
		"                          %u)\n"
		"  --history-dir DIR       also keep each window in DIR, read back at\n"
		"                          start-up\n"
		"  --push-url URL          send each window to a Pyroscope server\n"
		"  --push-name NAME        its application name (default %s)\n"
		"  --push-token-file F     send 'Authorization: Bearer' the content of F\n"
		"  --push-basic-auth-file F  authenticate with HTTP basic auth as the\n"
		"                          USER:PASSWORD F holds\n"
		"  --push-tenant ID        send 'X-Scope-OrgID: ID'\n"
		"  -h, --help              show this help\n",
		VM_HTTP_DEFAULT_LISTEN, VM_SECONDS_MAX, VM_SECONDS_CEILING,
		VM_SETUP_DEFAULT_LABEL, VM_SETUP_DEFAULT_MOUNTPOINT,
		UI_INSTALLED, VM_HTTP_MAX_CONNECTIONS, VM_HTTP_MAX_PER_CLIENT,
		VM_HTTP_IDLE_TIMEOUT, VM_HTTP_REQUEST_TIMEOUT,
		VM_CONTINUOUS_DEFAULT_FREQUENCY, VM_CONTINUOUS_DEFAULT_INTERVAL,
		VM_CONTINUOUS_DEFAULT_MEMORY_EVERY, VM_HISTORY_DEFAULT_SECONDS,
		VM_HISTORY_DEFAULT_BYTES, VM_PUSH_DEFAULT_NAME);
}

#define WHO "vmtools-agent serve"

enum {
	OPT_LISTEN = 256,
	OPT_LABEL,
	OPT_MOUNTPOINT,
	OPT_NO_SETUP,
	OPT_TOKEN,
	OPT_COMM,
	OPT_MAX_SECONDS,
	OPT_MAX_CONN,
	OPT_IDLE,
	OPT_REQUEST_TIMEOUT,
	OPT_ALLOW_USER,
	OPT_VERIFY,
	OPT_MISMATCH,
	OPT_PERF,
	OPT_DEBUGINFOD_URL,
	OPT_DEBUGINFOD_CACHE,
	OPT_UI_DIR,
	OPT_CONTINUOUS,
	OPT_CONT_FREQUENCY,
	OPT_CONT_INTERVAL,
	OPT_MEMORY_EVERY,
	OPT_HISTORY_SECONDS,
	OPT_HISTORY_BYTES,
	OPT_HISTORY_DIR,
	OPT_PUSH_URL,
	OPT_PUSH_NAME,
	OPT_PUSH_TOKEN,
	OPT_PUSH_BASIC,
	OPT_PUSH_TENANT,
};

/* A value that goes into a URL or a header as it is: no room for tricks. */
static bool plain_word(const char *s, const char *also)
{
	if (!s[0] || strlen(s) > 128)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr(also, *s)))
			return false;
	return true;
}

/* The options of continuous profiling, apart for readability. */
static int on_continuous_option(int c, char *arg, struct serve_options *o)
{
	struct vm_range freq = vm_rule_range(VM_RULE_FREQUENCY, 0);

	switch (c) {
	case OPT_CONTINUOUS:
		o->continuous = true;
		return 0;
	case OPT_CONT_FREQUENCY:
		return vm_subcommand_number(WHO, "--continuous-frequency", arg,
					    freq.min, freq.max,
					    &o->cont_frequency);
	case OPT_CONT_INTERVAL:
		return vm_subcommand_number(WHO, "--continuous-interval", arg,
					    1, 300, &o->cont_interval);
	case OPT_MEMORY_EVERY:
		o->memory_every_set = true;
		return vm_subcommand_number(WHO, "--memory-every", arg, 0,
					    86400, &o->memory_every);
	case OPT_HISTORY_SECONDS:
		return vm_subcommand_number(WHO, "--history-seconds", arg, 1,
					    7 * 86400, &o->history_seconds);
	case OPT_HISTORY_BYTES:
		return vm_subcommand_number(WHO, "--history-max-bytes", arg,
					    1 << 16, UINT32_MAX,
					    &o->history_max_bytes);
	case OPT_HISTORY_DIR:
		o->history_dir = arg;
		return 0;
	case OPT_PUSH_URL: {
		char why[512];

		if (vm_push_check_url(arg, why, sizeof(why)) < 0) {
			fprintf(stderr, WHO ": %s\n", why);
			return -EINVAL;
		}
		o->push_url = arg;
		return 0;
	}
	case OPT_PUSH_NAME:
		if (!plain_word(arg, "_.-")) {
			fprintf(stderr,
				WHO
				": --push-name '%s' must be letters, digits, '_', '.' or '-'\n",
				arg);
			return -EINVAL;
		}
		o->push_name = arg;
		return 0;
	case OPT_PUSH_TOKEN:
		o->push_token_file = arg;
		return 0;
	case OPT_PUSH_BASIC:
		o->push_basic_auth_file = arg;
		return 0;
	case OPT_PUSH_TENANT:
		if (!plain_word(arg, "_.-:")) {
			fprintf(stderr,
				WHO
				": --push-tenant '%s' must be letters, digits, '_', '.', ':' or '-'\n",
				arg);
			return -EINVAL;
		}
		o->push_tenant = arg;
		return 0;
	}
	return -EINVAL;
}

static int on_option(int c, char *arg, void *ctx)
{
	struct serve_options *o = ctx;
	struct vm_error err = { 0 };
	struct vm_range seconds;

	switch (c) {
	case OPT_LISTEN:
		o->listen = arg;
		break;
	case OPT_LABEL:
		o->label = arg;
		break;
	case OPT_MOUNTPOINT:
		o->mountpoint = arg;
		break;
	case OPT_NO_SETUP:
		o->no_setup = true;
		break;
	case OPT_TOKEN:
		o->token_file = arg;
		break;
	case OPT_COMM:
		if (!vm_comm_allowed(arg)) {
			fprintf(stderr,
				WHO ": --comm '%s' must be " VM_COMM_RULE "\n",
				arg);
			return -EINVAL;
		}
		if (o->n_comms == VM_MAX_TARGETS) {
			fprintf(stderr, WHO ": at most %d --comm\n",
				VM_MAX_TARGETS);
			return -EINVAL;
		}
		o->comms[o->n_comms++] = arg;
		break;
	case OPT_MAX_SECONDS:
		/* A request's limit, up to the longest profile at all. */
		seconds = vm_rule_range(VM_RULE_SECONDS, VM_SECONDS_CEILING);
		return vm_subcommand_number(WHO, "--max-seconds", arg,
					    seconds.min, seconds.max,
					    &o->max_seconds);
	case OPT_MAX_CONN:
		return vm_subcommand_number(WHO, "--max-connections", arg, 2,
					    4096, &o->max_connections);
	case OPT_IDLE:
		return vm_subcommand_number(WHO, "--idle-timeout", arg, 1, 3600,
					    &o->idle_timeout);
	case OPT_REQUEST_TIMEOUT:
		return vm_subcommand_number(WHO, "--request-timeout", arg, 1,
					    3600, &o->request_timeout);
	case OPT_ALLOW_USER:
		if (vm_http_access_add_user(&o->access, arg, &err) < 0) {
			fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
			return -EINVAL;
		}
		break;
	case OPT_VERIFY:
		o->verify = true;
		break;
	case OPT_MISMATCH:
		o->allow_kernel_mismatch = true;
		break;
	case OPT_UI_DIR:
		o->ui_dir = arg;
		break;
	case OPT_PERF:
		if (arg[0] != '/') {
			fprintf(stderr,
				WHO ": --perf '%s' must be an absolute path\n",
				arg);
			return -EINVAL;
		}
		o->perf = arg;
		break;
	case OPT_DEBUGINFOD_URL:
		if (vm_debuginfod_add_url(&o->debuginfod, arg, &err) < 0) {
			fprintf(stderr, WHO ": %s\n", vm_error_str(&err));
			return -EINVAL;
		}
		break;
	case OPT_DEBUGINFOD_CACHE:
		o->debuginfod.cache = arg;
		break;
	default:
		return on_continuous_option(c, arg, o);
	}
	return 0;
}

static int parse_options(int argc, char **argv, struct serve_options *o)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "label", required_argument, NULL, OPT_LABEL },
		{ "mountpoint", required_argument, NULL, OPT_MOUNTPOINT },
		{ "no-setup", no_argument, NULL, OPT_NO_SETUP },
		{ "auth-token-file", required_argument, NULL, OPT_TOKEN },
		{ "comm", required_argument, NULL, OPT_COMM },
		{ "max-seconds", required_argument, NULL, OPT_MAX_SECONDS },
		{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE },
		{ "request-timeout", required_argument, NULL,
		  OPT_REQUEST_TIMEOUT },
		{ "allow-user", required_argument, NULL, OPT_ALLOW_USER },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "allow-kernel-mismatch", no_argument, NULL, OPT_MISMATCH },
		{ "perf", required_argument, NULL, OPT_PERF },
		{ "debuginfod-url", required_argument, NULL,
		  OPT_DEBUGINFOD_URL },
		{ "debuginfod-cache", required_argument, NULL,
		  OPT_DEBUGINFOD_CACHE },
		{ "ui-dir", required_argument, NULL, OPT_UI_DIR },
		{ "continuous", no_argument, NULL, OPT_CONTINUOUS },
		{ "continuous-frequency", required_argument, NULL,
		  OPT_CONT_FREQUENCY },
		{ "continuous-interval", required_argument, NULL,
		  OPT_CONT_INTERVAL },
		{ "memory-every", required_argument, NULL, OPT_MEMORY_EVERY },
		{ "history-seconds", required_argument, NULL,
		  OPT_HISTORY_SECONDS },
		{ "history-max-bytes", required_argument, NULL,
		  OPT_HISTORY_BYTES },
		{ "history-dir", required_argument, NULL, OPT_HISTORY_DIR },
		{ "push-url", required_argument, NULL, OPT_PUSH_URL },
		{ "push-name", required_argument, NULL, OPT_PUSH_NAME },
		{ "push-token-file", required_argument, NULL, OPT_PUSH_TOKEN },
		{ "push-basic-auth-file", required_argument, NULL,
		  OPT_PUSH_BASIC },
		{ "push-tenant", required_argument, NULL, OPT_PUSH_TENANT },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};

	int r = vm_subcommand_parse(WHO, argc, argv, "h", longopts, usage,
				    on_option, o);

	if (r == 0 && !o->continuous &&
	    (o->history_dir || o->push_url || o->cont_frequency ||
	     o->cont_interval || o->memory_every_set || o->history_seconds ||
	     o->history_max_bytes)) {
		fprintf(stderr, WHO
			": the history and push options go with --continuous; add it\n");
		return -EINVAL;
	}
	if (r == 0 && !o->push_url &&
	    (o->push_name || o->push_token_file || o->push_basic_auth_file ||
	     o->push_tenant)) {
		fprintf(stderr, WHO
			": --push-name, --push-token-file, --push-basic-auth-file and --push-tenant go with --push-url; add it\n");
		return -EINVAL;
	}
	if (r == 0 && o->push_token_file && o->push_basic_auth_file) {
		fprintf(stderr, WHO
			": --push-token-file and --push-basic-auth-file both set the Authorization header; give one\n");
		return -EINVAL;
	}
	return r;
}

/*
 * Which perf the Perf backend runs, fixed now for the agent's life (a request
 * never names one): --perf, else the tools disk's, else PATH's.  None found
 * is not fatal: /healthz and the 503 of a Perf request say so.
 */
static char *find_perf(const struct serve_options *o)
{
	struct vm_error err = { 0 };
	char *path = NULL;

	if (o->perf && access(o->perf, X_OK) < 0)
		vm_log("warning: --perf %s is not an executable file; looking on the tools disk and PATH",
		       o->perf);
	if (vm_perf_locate(o->perf, o->mountpoint, &path, &err) < 0) {
		vm_log("perf backend unavailable: %s", vm_error_str(&err));
		return NULL;
	}
	vm_log("perf backend runs %s", path);
	return path;
}

/*
 * Mount the tools disk and link the tools, as `vmtools-agent setup` does
 * (vm_setup()), and keep what /healthz reports.
 */
static void run_setup(const struct serve_options *o, struct vm_health_config *h,
		      struct vm_setup_result *res, char *errbuf, size_t errlen)
{
	struct vm_setup_options so = {
		.label = o->label,
		.mountpoint = o->mountpoint,
		.verify = o->verify,
		.allow_kernel_mismatch = o->allow_kernel_mismatch,
	};
	struct vm_error err = { 0 };

	h->setup_ran = true;
	if (vm_setup(&so, res, &err) < 0) {
		snprintf(errbuf, errlen, "%s", vm_error_str(&err));
		h->setup_error = errbuf;
		vm_log("setup: %s; serving anyway (the bpf profiler needs no disk)",
		       errbuf);
	} else {
		for (size_t i = 0; i < res->n_actions; i++)
			vm_log("setup: %s", res->actions[i]);
	}
	h->disk_found = res->device != NULL;
	h->mounted = res->mounted;
	h->verified = res->verified;
	h->release_match = res->release_match;
	h->device = res->device;
	h->image_release = res->image_release;
}

/*
 * With --no-setup, what another process's setup left (the systemd unit
 * vmtools-setup.service, an inittab line), read without changing anything,
 * so that /healthz reports the disk all the same.
 */
static void observe_setup(const struct serve_options *o,
			  struct vm_health_config *h,
			  struct vm_setup_result *res, char *errbuf,
			  size_t errlen)
{
	struct vm_setup_options so = {
		.label = o->label,
		.mountpoint = o->mountpoint,
	};
	struct vm_error err = { 0 };

	if (vm_setup_observe(&so, res, &err) < 0) {
		snprintf(errbuf, errlen, "setup was skipped (--no-setup): %s",
			 vm_error_str(&err));
		h->setup_error = errbuf;
	}
	h->disk_found = res->mounted;
	h->mounted = res->mounted;
	h->release_match = res->release_match;
	h->device = res->device;
	h->image_release = res->image_release;
}

/* What serve() makes, released by close_server() on every path. */
struct server {
	char *token; /* NULL without --auth-token-file */
	char *perf_path; /* NULL: no perf found */
	char setup_err[VM_ERROR_MAX]; /* health.setup_error points here */
	struct vm_setup_result setup_res;
	struct vm_health_config health;
	struct vm_service_config scfg;
	struct vm_http_config hcfg;
	struct vm_service *svc;
	struct vm_http_server *srv;
	char *push_token; /* NULL without --push-token-file */
	char *push_userpwd; /* NULL without --push-basic-auth-file */
	struct vm_push_config push;
	struct utsname uts;
	char host[256];
	struct vm_continuous *cont; /* NULL without --continuous */
	struct vm_agent_ctx *ctx; /* what sessions share (context.h) */
};

/*
 * The daemon's configuration, with the address and the token read first:
 * a mistake in either ends serve before it mounts or starts anything.
 */
static int configure_http(const struct serve_options *o, struct server *sv,
			  struct vm_error *err)
{
	bool loose = false;
	int r;

	sv->hcfg = (struct vm_http_config){
		.listen = o->listen,
		.max_connections = o->max_connections,
		.max_per_client = o->max_connections / 2,
		.idle_timeout = o->idle_timeout,
		.request_timeout = o->request_timeout,
		.access = o->access,
		.body_limit = VM_REQUEST_MAX_BODY,
		.health = &sv->health,
		.ui_dir = o->ui_dir,
		.ui_installed = UI_INSTALLED,
		.mountpoint = o->mountpoint,
	};
	r = vm_http_parse_listen(o->listen, &sv->hcfg.addr, &sv->hcfg.addr_len,
				 err);
	if (r < 0)
		return r;
	if (!o->token_file)
		return 0;
	r = vm_http_load_token(o->token_file, &sv->token, &loose, err);
	if (r < 0)
		return r;
	if (loose)
		vm_log("warning: the auth token file %s may be read by other users; chmod 600 it",
		       o->token_file);
	sv->hcfg.token = sv->token;
	return 0;
}

/*
 * Block the signals before any thread exists, so every thread inherits
 * the mask and only wait_for_signal() sees them.
 */
static void block_signals(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The tools disk, the perf to run, and the service that takes profiles. */
static int start_service(const struct serve_options *o, struct server *sv,
			 struct vm_error *err)
{
	struct vm_agent_ctx_config ccfg = { 0 };
	struct vm_backend_status learned;
	int r;

	if (!o->no_setup)
		run_setup(o, &sv->health, &sv->setup_res, sv->setup_err,
			  sizeof(sv->setup_err));
	else
		observe_setup(o, &sv->health, &sv->setup_res, sv->setup_err,
			      sizeof(sv->setup_err));
	sv->perf_path = find_perf(o);
	sv->health.perf_path = sv->perf_path;

	/*
	 * Where debug files come from besides the machine's own: the tools
	 * disk, and debuginfod servers; a server that cannot be used costs
	 * names only (/healthz says why).
	 */
	ccfg.symbols.debug_dir = getenv("VMTOOLS_DEBUG_DIR");
	ccfg.symbols.tools_dir = o->mountpoint;
	ccfg.debuginfod = &o->debuginfod;
	r = vm_agent_ctx_new(&ccfg, &sv->ctx, err);
	if (r < 0)
		return r;
	if (vm_agent_ctx_warning(sv->ctx))
		vm_log("warning: %s", vm_agent_ctx_warning(sv->ctx));
	sv->health.ctx = sv->ctx;
	/*
	 * What the BPF backend learns of the kernel once (where it keeps a
	 * task's user registers) is learned now, alone: /healthz says it from
	 * the start, and the calibration's program is loaded, attached and
	 * gone before the continuous profile or a request loads theirs.
	 */
	vm_engine_backend_status(sv->ctx, VM_PROFILER_BPF, &learned);
	sv->scfg.engine.perf_path = sv->perf_path;
	sv->scfg.engine.ctx = sv->ctx;
	/* Tests lower perf.data's bound (bytes); no user needs to. */
	if (getenv("VMTOOLS_PERF_DATA_MAX"))
		sv->scfg.engine.perf_data_max =
			strtoull(getenv("VMTOOLS_PERF_DATA_MAX"), NULL, 10);
	sv->scfg.limits.max_seconds = o->max_seconds;
	sv->scfg.limits.default_comms = o->comms;
	sv->scfg.limits.n_default_comms = o->n_comms;
	r = vm_service_new(&sv->scfg, &sv->svc, err);
	if (r < 0)
		return r;
	sv->hcfg.service = sv->svc;
	return 0;
}

/* The push of each window, when --push-url is given. */
static int configure_push(const struct serve_options *o, struct server *sv,
			  struct vm_error *err)
{
	bool loose = false;
	int r;

	if (o->push_token_file) {
		r = vm_http_load_token(o->push_token_file, &sv->push_token,
				       &loose, err);
		if (r < 0)
			return r;
		if (loose)
			vm_log("warning: the push token file %s may be read by other users; chmod 600 it",
			       o->push_token_file);
	}
	if (o->push_basic_auth_file) {
		r = vm_http_load_token(o->push_basic_auth_file,
				       &sv->push_userpwd, &loose, err);
		if (r < 0)
			return r;
		if (!strchr(sv->push_userpwd, ':'))
			return vm_error_set(
				err, EINVAL,
				"%s holds no USER:PASSWORD (no colon); write the user name, a colon and the password in it",
				o->push_basic_auth_file);
		if (loose)
			vm_log("warning: the push basic auth file %s may be read by other users; chmod 600 it",
			       o->push_basic_auth_file);
	}
	uname(&sv->uts);
	if (gethostname(sv->host, sizeof(sv->host) - 1) < 0)
		snprintf(sv->host, sizeof(sv->host), "unknown");
	sv->push = (struct vm_push_config){
		.url = o->push_url,
		.name = o->push_name ? o->push_name : VM_PUSH_DEFAULT_NAME,
		.token = sv->push_token,
		.userpwd = sv->push_userpwd,
		.tenant = o->push_tenant,
		.host = sv->host,
		.kernel = sv->uts.release,
		.frequency = o->cont_frequency,
		.queue_max = VM_PUSH_QUEUE_MAX,
	};
	/* Tests shorten the backoff and the queue; no user needs to. */
	if (getenv("VMTOOLS_PUSH_BACKOFF_MS"))
		sv->push.backoff_min_ms = sv->push.backoff_max_ms =
			(unsigned)atoi(getenv("VMTOOLS_PUSH_BACKOFF_MS"));
	if (getenv("VMTOOLS_PUSH_QUEUE_MAX") &&
	    atoi(getenv("VMTOOLS_PUSH_QUEUE_MAX")) > 0)
		sv->push.queue_max =
			(size_t)atoi(getenv("VMTOOLS_PUSH_QUEUE_MAX"));
	return 0;
}

/* The always-on profile beside the on-demand ones (--continuous). */
static int start_continuous(const struct serve_options *o, struct server *sv,
			    struct vm_error *err)
{
	struct vm_continuous_config cc = {
		.frequency = o->cont_frequency,
		.interval = o->cont_interval,
		.memory_every = o->memory_every,
		.comms = o->comms,
		.n_comms = o->n_comms,
		.history = { .max_seconds = o->history_seconds,
			     .max_bytes = o->history_max_bytes },
		.history_dir = o->history_dir,
		.engine = sv->scfg.engine,
	};
	int r;

	if (!o->continuous)
		return 0;
	if (o->push_url) {
		r = configure_push(o, sv, err);
		if (r < 0)
			return r;
		cc.push = &sv->push;
	}
	r = vm_continuous_start(&cc, &sv->cont, err);
	if (r < 0)
		return r;
	sv->hcfg.continuous = sv->cont;
	return 0;
}

static int start_http(const struct serve_options *o, struct server *sv,
		      struct vm_error *err)
{
	int r = vm_http_start(&sv->hcfg, &sv->srv, err);

	if (r < 0)
		return r;
	vm_log("listening on %s (port %u), max %u s per profile, %s, from inside the machine only root%s%s",
	       o->listen, vm_http_port(sv->srv),
	       vm_request_max_seconds(&sv->scfg.limits),
	       sv->token ? "token required" : "no token",
	       sv->hcfg.access.self ? " and the agent's own user" : "",
	       sv->hcfg.access.n_allowed ? " and the users of --allow-user" :
					   "");
	if (!vm_http_is_loopback(&sv->hcfg.addr) && !sv->token)
		vm_log("warning: listening beyond loopback without --auth-token-file: anyone outside the machine who reaches %s can profile it",
		       o->listen);
	return 0;
}

static int wait_for_signal(const sigset_t *sigs)
{
	int sig;

	for (;;) {
		sig = sigwaitinfo(sigs, NULL);
		if (sig == SIGTERM || sig == SIGINT)
			return sig;
	}
}

/*
 * Close the daemon, giving responses being sent drain_ms to go out, then
 * free the service and what setup kept.
 */
static void close_server(struct server *sv, unsigned drain_ms)
{
	vm_http_stop(sv->srv, drain_ms);
	vm_continuous_stop(sv->cont);
	vm_service_free(sv->svc);
	vm_engine_release(sv->ctx);
	free(sv->push_token);
	if (sv->push_userpwd)
		explicit_bzero(sv->push_userpwd, strlen(sv->push_userpwd));
	free(sv->push_userpwd);
	vm_agent_ctx_free(sv->ctx);
	/* What setup, or with --no-setup its observation, left. */
	vm_setup_result_clear(&sv->setup_res);
	free(sv->token);
	free(sv->perf_path);
}

/* Refuse new profiles and stop the running one before closing the daemon. */
static void shut_down(struct server *sv, int sig)
{
	vm_log("%s: stopping", sig == SIGTERM ? "SIGTERM" : "SIGINT");
	/* No session waits on a read of a target's stuck file any more. */
	vm_iopool_shutdown(sv->ctx->iopool);
	if (!vm_service_shutdown(sv->svc, STOP_MS))
		vm_log("the running profile did not end within %d ms; closing its connection",
		       STOP_MS);
	close_server(sv, DRAIN_MS);
	vm_log("stopped");
}

static int serve(const struct serve_options *o)
{
	struct server sv = {
		.health = { .label = o->label, .mountpoint = o->mountpoint },
	};
	struct vm_error err = { 0 };
	sigset_t sigs;

	if (configure_http(o, &sv, &err) < 0)
		goto fail;
	block_signals(&sigs);
	if (start_service(o, &sv, &err) < 0)
		goto fail;
	if (start_continuous(o, &sv, &err) < 0)
		goto fail;
	if (start_http(o, &sv, &err) < 0)
		goto fail;
	shut_down(&sv, wait_for_signal(&sigs));
	return 0;

fail:
	close_server(&sv, 0);
	fprintf(stderr, "vmtools-agent serve: %s\n", vm_error_str(&err));
	return 1;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_options o = {
		.listen = VM_HTTP_DEFAULT_LISTEN,
		.label = VM_SETUP_DEFAULT_LABEL,
		.mountpoint = VM_SETUP_DEFAULT_MOUNTPOINT,
		.max_connections = VM_HTTP_MAX_CONNECTIONS,
		.idle_timeout = VM_HTTP_IDLE_TIMEOUT,
		.request_timeout = VM_HTTP_REQUEST_TIMEOUT,
		.access = { .self = geteuid() },
	};
	int r;

	r = parse_options(argc, argv, &o);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (!o.cont_frequency)
		o.cont_frequency = VM_CONTINUOUS_DEFAULT_FREQUENCY;
	if (!o.cont_interval)
		o.cont_interval = VM_CONTINUOUS_DEFAULT_INTERVAL;
	if (!o.memory_every_set)
		o.memory_every = VM_CONTINUOUS_DEFAULT_MEMORY_EVERY;
	if (!o.history_seconds)
		o.history_seconds = VM_HISTORY_DEFAULT_SECONDS;
	if (!o.history_max_bytes)
		o.history_max_bytes = VM_HISTORY_DEFAULT_BYTES;
	return serve(&o);
}
