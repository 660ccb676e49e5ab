// SPDX-License-Identifier: Apache-2.0
/*
 * perf_backend.c - the perf backend: runs `perf record` (the tools image's
 * perf, see perf_locate.c) as a child for the length of a profile, then
 * reads the perf.data it wrote with our own reader (perfdata.c) into the
 * same struct vm_samples the eBPF backend fills.
 *
 * How targets are selected.  perf cannot follow "every process named
 * postgres, including the backends forked from now on" by itself: -p takes
 * a fixed list of pids (a postmaster started later, or a pid list that
 * changes between our /proc scan and perf's attach, is missed) and --comm
 * filters do not exist for sampling.  A cgroup would need PostgreSQL to live
 * in its own cgroup, which we do not control.  So perf records system-wide
 * (-a) and the reader keeps the samples whose thread name at that instant
 * is a target name, or whose process descends from a target pid, by
 * replaying COMM/FORK/EXIT in time order: the same decision the eBPF
 * program makes in the kernel, with no race.  The cost is that perf also
 * writes the samples of other processes: at most frequency x CPUs records
 * a second (99 Hz x 2 CPUs: ~200/s, a few hundred KB for a 5 s profile),
 * which the benchmark (bench/perf-backend.sh) measures as TPS lost.
 *
 * perf's command line, and why:
 *   -e cpu-clock     the software CPU clock, as the eBPF backend samples:
 *                    works without a PMU (most VMs), and samples measure
 *                    CPU time, the unit of the pprof we emit
 *   -a -g -F HZ      all CPUs, frame-pointer call chains, the frequency
 *   --buildid-mmap   build ids in the MMAP2 records, so perf skips its
 *                    build-id pass at the end (a second reading of all
 *                    it recorded, long on a busy system);
 *                    if the kernel refuses it (before 5.12) we run once
 *                    more without it and read the HEADER_BUILD_ID section
 *   -N --no-bpf-event  no ~/.debug cache, no BPF program records
 *   -D -1 --control  start with events disabled; we send "enable" and
 *                    perf's "ack" tells us recording really started (after
 *                    its start-up), so the requested seconds are recorded
 *   --max-size       perf.data's bound (perf_bound.h): past it perf stops
 *                    by itself, and the profile says it ended early
 *   -o FILE          a file created with mkstemp in a private mkdtemp
 *                    directory; once perf has it open we unlink it and keep
 *                    our own descriptor, so nothing is left on disk even if
 *                    the agent is killed
 * perf's stderr goes to a likewise unlinked file, returned in errors.  It
 * runs in its own process group with default signal dispositions and an
 * empty signal mask (the agent may block SIGINT in its threads), is stopped
 * with SIGINT, and is killed and reaped on every error path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/profile/backend.h"
#include "agent/profile/perf/perf_bound.h"
#include "agent/profile/perf/perfdata.h"
#include "agent/iopool/iopool.h"
#include "agent/samples/proc.h"
#include "agent/unwind/unwind_table.h"
#include "common/array.h"
#include "common/cleanup.h"
#include "common/clock.h"

#define START_TIMEOUT_MS 30000 /* perf's start-up: reading /proc, kallsyms */
#define STOP_TIMEOUT_MS 60000 /* flushing its buffers and the header */
#define STDERR_MAX 768 /* of perf's messages kept in an error */
#define TITLE_SCAN_MS 250
/*
 * A target whose executable, or the libc it maps, sets up a frame
 * pointer in fewer of its functions than this (percent) is recorded with
 * --call-graph dwarf: Debian's PostgreSQL 15 (built with frame pointers)
 * has 42%, leaf functions skipping it; PostgreSQL built with -O2 and
 * libc 0 to 1%.  Debian's libc has none, so in practice every target is:
 * -g would lose the caller of every libc function (malloc's
 * AllocSetAlloc), which dwarf keeps.
 */
#define FP_SHARE_MIN 20
#define STRING(x) #x
#define STRING_OF(x) STRING(x) /* a macro's value as a string */

extern char **environ;

struct title {
	uint32_t pid;
	char *title;
};

struct perf_state {
	bool dwarf; /* a target lacks frame pointers: --call-graph dwarf */
	char *perf; /* the binary */
	struct vm_binaries *binaries; /* the engine's, for unwind tables */
	struct vm_iopool *iopool; /* the engine's, for the targets' files */
	pid_t child; /* 0: none, or reaped */
	int status; /* of the reaped child */
	int data_fd, err_fd, ctl_fd, ack_fd;
	char dir[PATH_MAX - 32]; /* "" once removed */
	char data_path[PATH_MAX];
	char err_path[PATH_MAX];
	uint32_t frequency;
	uint32_t seconds; /* asked */
	uint64_t max_size; /* of perf.data (perf_bound.h) */
	char comms[VM_MAX_TARGETS][VM_COMM_LEN];
	const char *comm_ptrs[VM_MAX_TARGETS];
	size_t n_comms;
	pid_t pids[VM_MAX_TARGETS];
	size_t n_pids;
	struct title *titles; /* of the targets seen alive; watcher's own */
	size_t n_titles, cap_titles;
	pthread_t watcher;
	bool watching;
	atomic_bool stop_watch;
	struct vm_perfdata_counter *counter; /* the watcher's */
	pid_t exclude[2]; /* the agent and its perf */
	uint64_t read_off; /* of perf.data, fed to the counter so far */
	_Atomic uint64_t so_far; /* samples of the targets, for GET */
	uint64_t start_ns, stop_ns; /* CLOCK_REALTIME */
	int ended_fd; /* an eventfd, written when perf ended by itself */
};

/* What perf says when perf.data reaches --max-size and it stops. */
#define PERF_AT_MAX_SIZE "size limit reached"

/* Remove the private directory and whatever is still in it. */
static void remove_files(struct perf_state *st)
{
	if (!st->dir[0])
		return;
	if (st->data_path[0])
		unlink(st->data_path);
	if (st->err_path[0])
		unlink(st->err_path);
	rmdir(st->dir);
	st->dir[0] = st->data_path[0] = st->err_path[0] = 0;
}

/* Wait up to ms for the child; 1 when reaped, 0 when still running. */
static int reap(struct perf_state *st, int ms)
{
	for (int waited = 0;; waited += 10) {
		pid_t r = waitpid(st->child, &st->status, WNOHANG);

		if (r == st->child || (r < 0 && errno == ECHILD)) {
			st->child = 0;
			return 1;
		}
		if (waited >= ms)
			return 0;
		usleep(10000);
	}
}

static void kill_child(struct perf_state *st)
{
	if (st->child <= 0)
		return;
	kill(st->child, SIGKILL);
	reap(st, INT_MAX);
}

/*
 * perf's messages, on one line: the end of what it printed (a failure is
 * said last), minus its progress chatter and repeated lines.
 */
static void perf_said(struct perf_state *st, char *buf, size_t size)
{
	char raw[4096], *line, *save = NULL, *text = raw, *prev = "";
	off_t end = st->err_fd >= 0 ? lseek(st->err_fd, 0, SEEK_END) : -1;
	off_t from =
		end > (off_t)sizeof(raw) - 1 ? end - (off_t)sizeof(raw) + 1 : 0;
	ssize_t n = end > 0 ? pread(st->err_fd, raw, sizeof(raw) - 1, from) : 0;
	char all[sizeof(raw) * 2];
	size_t used = 0, len;

	raw[n > 0 ? n : 0] = 0;
	if (from > 0 && strchr(raw, '\n')) /* a cut first line */
		text = strchr(raw, '\n') + 1;
	all[0] = 0;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "Events disabled", 15) ||
		    !strncmp(line, "Events enabled", 14) ||
		    !strncmp(line, "[ perf record:", 14) || !line[0] ||
		    !strcmp(line, prev))
			continue;
		prev = line;
		used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s",
					 used ? " | " : "", line);
		if (used >= sizeof(all) - 1)
			break;
	}
	len = strlen(all);
	if (!len)
		snprintf(buf, size, "(nothing on stderr)");
	else if (len < size && len <= STDERR_MAX)
		snprintf(buf, size, "%s", all);
	else
		snprintf(buf, size, "...%s",
			 all + len -
				 (STDERR_MAX < size - 4 ? STDERR_MAX :
							  size - 4));
}

/* What perf's refusal to start means for the caller: 503 or 500. */
static int classify(const char *said)
{
	static const char *const denied[] = {
		"perf_event_paranoid", "Permission denied",
		"Access to performance monitoring", "not permitted"
	};
	static const char *const missing[] = { "No such device",
					       "not supported",
					       "No such file or directory" };

	for (size_t i = 0; i < ARRAY_SIZE(denied); i++)
		if (strstr(said, denied[i]))
			return -EPERM;
	for (size_t i = 0; i < ARRAY_SIZE(missing); i++)
		if (strstr(said, missing[i]))
			return -ENODEV;
	return -EIO;
}

static void describe_status(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d",
			 WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "was killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, size, "stopped");
}

/* fd at 3 or above, close-on-exec: safe to hand to the child by number. */
static int high_fd(int fd)
{
	int n;

	if (fd >= 3)
		return fd;
	n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return n;
}

static char **child_env(void)
{
	size_t n = 0, j = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "PERF_CONFIG=", 12))
			env[j++] = environ[i];
	/* A ~/.perfconfig must not change what perf records. */
	env[j++] = "PERF_CONFIG=/dev/null";
	return env;
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void __attribute__((noreturn))
exec_child(const char *perf, char **argv, char **env, int devnull, int err_fd,
	   int ctl, int ack, int report, pid_t agent)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int e;

	setpgid(0, 0); /* a terminal's ^C reaches the agent, not perf */
	/*
	 * If the agent dies (even by SIGKILL), perf must not go on recording
	 * the whole machine into an unlinked file: SIGINT makes it stop and
	 * remove its own temporary files.  The thread that forks is the one
	 * that waits for the session, so it outlives perf on every normal
	 * path.
	 */
	if (prctl(PR_SET_PDEATHSIG, SIGINT) < 0 || getppid() != agent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	if (dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
	    dup2(err_fd, 2) < 0 || fcntl(ctl, F_SETFD, 0) < 0 ||
	    fcntl(ack, F_SETFD, 0) < 0)
		goto fail;
	execve(perf, argv, env);
fail:
	e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		_exit(126);
	_exit(127);
}

static int wait_for_ack(struct perf_state *st, struct vm_error *err)
{
	char buf[64], said[STDERR_MAX + 1], how[96];
	size_t got = 0;

	for (int waited = 0; waited < START_TIMEOUT_MS; waited += 50) {
		struct pollfd p = { .fd = st->ack_fd, .events = POLLIN };
		int r = poll(&p, 1, 50);

		if (r > 0) {
			ssize_t n = read(st->ack_fd, buf + got,
					 sizeof(buf) - 1 - got);

			if (n > 0) {
				got += (size_t)n;
				buf[got] = 0;
				if (strstr(buf, "ack"))
					return 0;
				if (got == sizeof(buf) - 1)
					got = 0;
				continue;
			}
		}
		if (reap(st, 0)) {
			perf_said(st, said, sizeof(said));
			describe_status(st->status, how, sizeof(how));
			r = classify(said);
			return vm_error_set(
				err, -r,
				"perf (%s) %s before it started recording%s: %s",
				st->perf, how,
				r == -EPERM ?
					" (not allowed to profile: run the agent as root or lower kernel.perf_event_paranoid)" :
					"",
				said);
		}
	}
	perf_said(st, said, sizeof(said));
	kill_child(st);
	return vm_error_set(err, ETIMEDOUT,
			    "perf (%s) did not start recording within %d s: %s",
			    st->perf, START_TIMEOUT_MS / 1000, said);
}

static int spawn(struct perf_state *st, bool buildid_mmap, struct vm_error *err)
{
	_cleanup_close_ int devnull = -1, report_r = -1, report_w = -1,
			    ctl_child = -1, ack_child = -1;
	_cleanup_free_ char **env = child_env();
	char freq[16], control[64], max_size[32];
	const char *argv[24];
	int ctl[2], ack[2], rep[2], e = 0;
	size_t a = 0;
	ssize_t n;
	pid_t agent;

	if (!env)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0)
		return vm_error_errno(err, errno,
				      "cannot create perf's control socket");
	st->ctl_fd = ctl[0];
	ctl_child = high_fd(ctl[1]);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ack) < 0)
		return vm_error_errno(err, errno,
				      "cannot create perf's control socket");
	st->ack_fd = ack[0];
	ack_child = high_fd(ack[1]);
	if (pipe2(rep, O_CLOEXEC) < 0)
		return vm_error_errno(err, errno, "cannot create a pipe");
	report_r = rep[0];
	report_w = rep[1];
	devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0 || ctl_child < 0 || ack_child < 0)
		return vm_error_errno(err, errno,
				      "cannot prepare perf's descriptors");

	snprintf(freq, sizeof(freq), "%" PRIu32, st->frequency);
	snprintf(control, sizeof(control), "fd:%d,%d", ctl_child, ack_child);
	/* perf wants a unit: B, K, M or G. */
	snprintf(max_size, sizeof(max_size), "%" PRIu64 "B", st->max_size);
	argv[a++] = "perf";
	argv[a++] = "record";
	argv[a++] = "-e";
	argv[a++] = "cpu-clock";
	argv[a++] = "-a";
	if (st->dwarf) {
		/* Each sample copies that many bytes of the user stack. */
		argv[a++] = "--call-graph";
		argv[a++] = "dwarf," STRING_OF(VM_PERF_DWARF_STACK);
	} else {
		argv[a++] = "-g";
	}
	argv[a++] = "-F";
	argv[a++] = freq;
	argv[a++] = "-N";
	argv[a++] = "--no-bpf-event";
	if (buildid_mmap)
		argv[a++] = "--buildid-mmap";
	argv[a++] = "-D";
	argv[a++] = "-1";
	argv[a++] = "--control";
	argv[a++] = control;
	argv[a++] = "--max-size";
	argv[a++] = max_size;
	argv[a++] = "-o";
	argv[a++] = st->data_path;
	argv[a] = NULL;

	agent = getpid();
	st->child = fork();
	if (st->child < 0) {
		st->child = 0;
		return vm_error_errno(err, errno, "cannot fork to run perf");
	}
	if (st->child == 0)
		exec_child(st->perf, (char **)argv, env, devnull, st->err_fd,
			   ctl_child, ack_child, report_w, agent);
	close(TAKE_FD(report_w));
	do /* EOF: the exec worked; an errno: it did not */
		n = read(report_r, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == sizeof(e)) { /* execve failed */
		reap(st, INT_MAX);
		return vm_error_errno(
			err, e == ENOENT ? ENOENT : EPERM,
			"cannot run perf (%s); check the tools image or --perf",
			st->perf);
	}
	/* "enable" waits in the socket until perf has finished starting. */
	if (send(st->ctl_fd, "enable\n", 7, MSG_NOSIGNAL) != 7) {
		kill_child(st);
		return vm_error_errno(err, errno,
				      "cannot talk to perf's control socket");
	}
	return wait_for_ack(st, err);
}

static void close_control(struct perf_state *st)
{
	if (st->ctl_fd >= 0)
		close(st->ctl_fd);
	if (st->ack_fd >= 0)
		close(st->ack_fd);
	st->ctl_fd = st->ack_fd = -1;
}

static int make_files(struct perf_state *st, struct vm_error *err)
{
	const char *tmp = getenv("TMPDIR");

	if (!tmp || tmp[0] != '/')
		tmp = "/tmp";
	if (snprintf(st->dir, sizeof(st->dir), "%s/vmtools-perf.XXXXXX", tmp) >=
	    (int)sizeof(st->dir))
		tmp = "/tmp";
	snprintf(st->dir, sizeof(st->dir), "%s/vmtools-perf.XXXXXX", tmp);
	if (!mkdtemp(st->dir)) {
		int e = errno;

		st->dir[0] = 0;
		return vm_error_errno(
			err, e,
			"cannot create a private directory for perf.data in %s",
			tmp);
	}
	snprintf(st->data_path, sizeof(st->data_path), "%s/perf.data.XXXXXX",
		 st->dir);
	snprintf(st->err_path, sizeof(st->err_path), "%s/stderr.XXXXXX",
		 st->dir);
	st->data_fd = mkostemp(st->data_path, O_CLOEXEC);
	if (st->data_fd < 0)
		return vm_error_errno(err, errno, "cannot create %s",
				      st->data_path);
	st->err_fd = mkostemp(st->err_path, O_CLOEXEC | O_APPEND);
	if (st->err_fd < 0)
		return vm_error_errno(err, errno, "cannot create %s",
				      st->err_path);
	return 0;
}

static void remember_title(struct perf_state *st, uint32_t pid)
{
	char *title;
	struct title *t;

	if (vm_proc_read_title("/proc", pid, &title) < 0 || !title)
		return;
	for (size_t i = 0; i < st->n_titles; i++)
		if (st->titles[i].pid == pid) {
			free(st->titles[i].title);
			st->titles[i].title = title; /* the latest one */
			return;
		}
	if (vm_grow(st->titles, &st->cap_titles, st->n_titles + 1) < 0) {
		free(title);
		return;
	}
	t = &st->titles[st->n_titles++];
	t->pid = pid;
	t->title = title;
}

/*
 * Titles of the target processes alive now.  The process title (the
 * PostgreSQL backend type label) is not in perf.data, and a backend that
 * exits before the profile ends cannot be asked afterwards.
 */
/*
 * Whether process pid's executable or libc lacks frame pointers (fewer than
 * FP_SHARE_MIN percent of its functions set one up): -g cannot walk
 * its frames, --call-graph dwarf must copy its stacks.
 */
static bool file_lacks_frame_pointers(struct vm_iopool *pool, const char *path)
{
	unsigned share;
	int fd, r;

	fd = vm_iopool_open_regular(pool, path, 0, VM_IOPOOL_OPEN_MS);
	if (fd < 0)
		return false;
	r = vm_unwind_frame_pointer_share(fd, &share);
	close(fd);
	return r == 0 && share < FP_SHARE_MIN;
}

/* The executable mapping of libc in pid, as /proc/PID/map_files names it. */
static bool libc_of(uint32_t pid, char *out, size_t size)
{
	_cleanup_free_ char *line = NULL;
	_cleanup_fclose_ FILE *f = NULL;
	char path[64];
	size_t cap = 0;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	f = fopen(path, "re");
	while (f && getline(&line, &cap, f) > 0) {
		struct vm_mapping m = { 0 };
		uint64_t dev, ino;
		const char *base;

		if (vm_proc_parse_maps_line(line, &m, &dev, &ino) != 1 ||
		    !m.path)
			continue;
		base = strrchr(m.path, '/');
		base = base ? base + 1 : m.path;
		if (strncmp(base, "libc.so", 7) && strncmp(base, "libc-", 5))
			continue;
		snprintf(out, size,
			 "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64,
			 pid, m.start, m.end);
		return true;
	}
	return false;
}

static bool lacks_frame_pointers(struct vm_iopool *pool, uint32_t pid)
{
	char path[96];

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/exe", pid);
	if (file_lacks_frame_pointers(pool, path))
		return true;
	return libc_of(pid, path, sizeof(path)) &&
	       file_lacks_frame_pointers(pool, path);
}

/*
 * The targets running now: their titles, and whether one of their
 * executables (the first few distinct ones) lacks frame pointers.
 */
static void snapshot_titles(struct perf_state *st)
{
	_cleanup_free_ uint32_t *pids = NULL;
	size_t n = 0;

	if (vm_proc_scan_targets("/proc", st->comm_ptrs, st->n_comms, st->pids,
				 st->n_pids, &pids, &n, NULL) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		remember_title(st, pids[i]);
		/* Backends share their postmaster's executable: look once. */
		if (i < 4 && !st->dwarf &&
		    lacks_frame_pointers(st->iopool, pids[i]))
			st->dwarf = true;
	}
}

/*
 * Samples so far: ask perf to flush its buffers ("ping" on the control
 * socket wakes it up, and each wake-up drains every ring buffer into the
 * file), then count what it appended since last time.
 */
static void count_progress(struct perf_state *st)
{
	uint8_t buf[65536];
	ssize_t n;

	if (send(st->ctl_fd, "ping\n", 5, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
	    errno != EAGAIN)
		return;
	while (recv(st->ack_fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		; /* perf's "ack" of each ping */
	if (!st->counter)
		return;
	while ((n = pread(st->data_fd, buf, sizeof(buf), (off_t)st->read_off)) >
	       0) {
		st->read_off += (uint64_t)n;
		atomic_store(&st->so_far, vm_perfdata_counter_feed(
						  st->counter, buf, (size_t)n));
	}
}

/*
 * While perf records, a few times a second: the progress count, and the
 * titles of the targets in /proc, so that backends born and gone within the
 * profile keep their titles (a scan reads one small file per process, cheap
 * enough to repeat).
 */
static void *watch(void *arg)
{
	struct perf_state *st = arg;

	while (!atomic_load(&st->stop_watch)) {
		count_progress(st);
		if (reap(st, 0)) {
			/*
			 * perf ended by itself (perf.data at its bound, or
			 * failing): recording ended now.
			 */
			st->stop_ns = vm_clock_ns(CLOCK_REALTIME);
			eventfd_write(st->ended_fd, 1); /* the wait ends */
			break;
		}
		snapshot_titles(st);
		for (int i = 0;
		     i < TITLE_SCAN_MS / 50 && !atomic_load(&st->stop_watch);
		     i++)
			usleep(50000);
	}
	return NULL;
}

static void stop_watching(struct perf_state *st)
{
	if (!st->watching)
		return;
	atomic_store(&st->stop_watch, true);
	pthread_join(st->watcher, NULL);
	st->watching = false;
}

static void perf_destroy(void *state)
{
	struct perf_state *st = state;

	if (!st)
		return;
	stop_watching(st);
	kill_child(st);
	close_control(st);
	if (st->data_fd >= 0)
		close(st->data_fd);
	if (st->err_fd >= 0)
		close(st->err_fd);
	if (st->ended_fd >= 0)
		close(st->ended_fd);
	remove_files(st);
	for (size_t i = 0; i < st->n_titles; i++)
		free(st->titles[i].title);
	free(st->titles);
	vm_perfdata_counter_free(st->counter);
	free(st->perf);
	free(st);
}

static struct vm_perfdata_filter target_filter(const struct perf_state *st)
{
	return (struct vm_perfdata_filter){
		.comms = st->comm_ptrs,
		.n_comms = st->n_comms,
		.pids = st->pids,
		.n_pids = st->n_pids,
		.exclude = st->exclude,
		.n_exclude = ARRAY_SIZE(st->exclude),
		.binaries = st->binaries,
		.iopool = st->iopool,
	};
}

static int perf_start(const struct vm_profile_request *req,
		      const struct vm_engine_config *cfg, void *kept,
		      vm_process_seen_fn *seen, void **state,
		      struct vm_error *err)
{
	struct perf_state *st = calloc(1, sizeof(*st));
	long cpus;
	int r;

	*state = st;
	if (!st)
		return -ENOMEM;
	st->data_fd = st->err_fd = st->ctl_fd = st->ack_fd = -1;
	st->ended_fd = eventfd(0, EFD_CLOEXEC);
	if (st->ended_fd < 0)
		return vm_error_errno(err, errno, "cannot create an eventfd");
	/*
	 * The engine has checked req against limits.h and named
	 * VM_DEFAULT_COMM when req named no process.
	 */
	st->frequency = req->frequency;
	st->seconds = req->seconds;
	st->binaries = cfg && cfg->ctx ? cfg->ctx->binaries : NULL;
	st->iopool = cfg && cfg->ctx ? cfg->ctx->iopool : NULL;
	for (size_t i = 0; i < req->n_comms && i < VM_MAX_TARGETS; i++) {
		strncpy(st->comms[i], req->comms[i], VM_COMM_LEN - 1);
		st->comm_ptrs[i] = st->comms[i];
		st->n_comms++;
	}
	for (size_t i = 0; i < req->n_pids && i < VM_MAX_TARGETS; i++)
		st->pids[st->n_pids++] = req->pids[i];

	r = vm_perf_locate(cfg ? cfg->perf_path : NULL, NULL, &st->perf, err);
	if (r < 0)
		return r;
	r = make_files(st, err);
	if (r < 0) {
		remove_files(st);
		return r;
	}
	snapshot_titles(st);
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	st->max_size = vm_perf_data_bound(st->seconds, st->frequency,
					  cpus > 0 ? (unsigned)cpus : 1,
					  st->dwarf,
					  cfg ? cfg->perf_data_max : 0);

	r = spawn(st, true, err);
	if (r == -EIO || r == -ENODEV) {
		/* Perhaps a kernel without build ids in MMAP2 (< 5.12). */
		close_control(st);
		if (ftruncate(st->data_fd, 0) == 0 &&
		    ftruncate(st->err_fd, 0) == 0) {
			vm_error_clear(err);
			r = spawn(st, false, err);
		}
	}
	if (r < 0) {
		kill_child(st);
		remove_files(st);
		return r;
	}
	st->start_ns = vm_clock_ns(CLOCK_REALTIME);
	/* perf has the file open now: nothing on disk outlives us. */
	remove_files(st);
	st->exclude[0] = getpid();
	st->exclude[1] = st->child;
	struct vm_perfdata_filter filter = target_filter(st);

	if (vm_perfdata_counter_new(&filter, &st->counter) < 0)
		st->counter = NULL; /* no progress count; the profile works */
	st->watching = pthread_create(&st->watcher, NULL, watch, st) == 0;
	return 0;
}

static int perf_ended_fd(void *state)
{
	struct perf_state *st = state;

	return st ? st->ended_fd : -1;
}

static uint64_t perf_samples_so_far(void *state)
{
	struct perf_state *st = state;

	return st ? atomic_load(&st->so_far) : 0;
}

/* Whether perf said it stopped at --max-size (on its stderr). */
static bool stopped_at_max_size(struct perf_state *st)
{
	const size_t len = sizeof(PERF_AT_MAX_SIZE) - 1;
	char buf[4096];
	off_t at = 0;
	ssize_t n;

	/* Chunks overlapping by the words' length, so none is cut. */
	while (st->err_fd >= 0 &&
	       (n = pread(st->err_fd, buf, sizeof(buf), at)) > (ssize_t)len) {
		if (memmem(buf, (size_t)n, PERF_AT_MAX_SIZE, len))
			return true;
		at += n - (ssize_t)len;
	}
	return false;
}

/* What needs the live system: titles, and files through /proc/PID/root. */
static void enrich(struct perf_state *st, struct vm_samples *out)
{
	for (size_t i = 0; i < out->n_procs; i++) {
		struct vm_process *p = &out->procs[i];
		char comm[VM_COMM_LEN], path[PATH_MAX];
		bool alive = !p->exited &&
			     vm_proc_read_comm("/proc", p->pid, comm) == 0 &&
			     !strcmp(comm, p->comm);

		if (alive && !p->title)
			vm_proc_read_title("/proc", p->pid, &p->title);
		for (size_t j = 0; !p->title && j < st->n_titles; j++)
			if (st->titles[j].pid == p->pid)
				p->title = strdup(st->titles[j].title);
		for (size_t j = 0; alive && j < p->n_maps; j++) {
			struct vm_mapping *m = &p->maps[j];

			if (!m->path || m->path[0] != '/' || m->open_path ||
			    snprintf(path, sizeof(path),
				     "/proc/%" PRIu32 "/root%s", p->pid,
				     m->path) >= (int)sizeof(path) ||
			    access(path, R_OK) < 0)
				continue;
			m->open_path = strdup(path);
		}
	}
}

static int perf_collect(void *state, struct vm_samples *out,
			struct vm_error *err)
{
	struct perf_state *st = state;
	struct vm_perfdata_filter filter = target_filter(st);
	char said[STDERR_MAX + 1], how[96];
	struct vm_error why = { 0 };
	struct stat sb;
	void *map;
	int r;

	stop_watching(st);
	if (st->child > 0) {
		kill(st->child, SIGINT);
		st->stop_ns = vm_clock_ns(CLOCK_REALTIME);
		if (!reap(st, STOP_TIMEOUT_MS)) {
			perf_said(st, said, sizeof(said));
			kill_child(st);
			return vm_error_set(
				err, ETIMEDOUT,
				"perf (%s) did not finish writing perf.data within %d s of being stopped: %s",
				st->perf, STOP_TIMEOUT_MS / 1000, said);
		}
	}
	if (!st->stop_ns)
		st->stop_ns = vm_clock_ns(CLOCK_REALTIME);
	close_control(st);
	/* perf re-raises the SIGINT it handled once it has written the file. */
	if (!(WIFEXITED(st->status) && WEXITSTATUS(st->status) == 0) &&
	    !(WIFSIGNALED(st->status) && WTERMSIG(st->status) == SIGINT)) {
		perf_said(st, said, sizeof(said));
		describe_status(st->status, how, sizeof(how));
		return vm_error_set(err, EIO,
				    "perf (%s) %s while recording: %s",
				    st->perf, how, said);
	}
	if (fstat(st->data_fd, &sb) < 0)
		return vm_error_errno(err, errno, "cannot read perf.data");
	map = sb.st_size > 0 ? mmap(NULL, (size_t)sb.st_size, PROT_READ,
				    MAP_PRIVATE, st->data_fd, 0) :
			       MAP_FAILED;
	if (map == MAP_FAILED) {
		perf_said(st, said, sizeof(said));
		return vm_error_set(err, EIO,
				    "perf (%s) wrote an empty perf.data: %s",
				    st->perf, said);
	}
	r = vm_perfdata_read(map, (size_t)sb.st_size, &filter, out, NULL, &why);
	munmap(map, (size_t)sb.st_size);
	if (r == -EBADMSG) {
		perf_said(st, said, sizeof(said));
		return vm_error_set(
			err, EIO,
			"perf (%s) wrote a perf.data the agent cannot read: %s (perf said: %s)",
			st->perf, why.msg, said);
	}
	if (r < 0)
		return vm_error_set(err, -r, "%s", vm_error_str(&why));
	enrich(st, out);
	out->frequency = st->frequency;
	out->time_nanos = st->start_ns;
	out->duration_nanos = st->stop_ns - st->start_ns;
	if (stopped_at_max_size(st))
		snprintf(out->ended_early, sizeof(out->ended_early),
			 "perf.data reached its bound of %" PRIu64
			 " bytes (perf record --max-size) after %.1f s of the "
			 "%" PRIu32 " s asked: the profile ends there",
			 st->max_size, (double)out->duration_nanos / 1e9,
			 st->seconds);
	return 0;
}

const struct vm_backend_ops vm_perf_backend = {
	.name = "perf",
	.start = perf_start,
	.samples_so_far = perf_samples_so_far,
	.ended_fd = perf_ended_fd,
	.collect = perf_collect,
	.destroy = perf_destroy,
};
