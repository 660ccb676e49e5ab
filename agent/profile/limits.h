/* SPDX-License-Identifier: Apache-2.0 */
/*
 * limits.h - the rules of a profile request, written once for every way in:
 * the REST body and the pprof query (agent/serve/request.c), the command
 * line (agent/cmd_profile.c, agent/cmd_serve.c) and the engine, which
 * checks every request it is given (docs/api.md and
 * docs/profiler.md).
 *
 * vm_request_check() says which rule a request breaks, not how to say so:
 * each front end words the break once, naming the field as its user wrote
 * it (sampling_frequency in a JSON body, --frequency on the command line).
 * A parser that must quote what was sent checks one value at a time with
 * vm_rule_allows() and words it with vm_rule_range().
 */
#ifndef VMTOOLS_AGENT_PROFILE_LIMITS_H
#define VMTOOLS_AGENT_PROFILE_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/samples/sample.h"

#define VM_FREQUENCY_MIN 1 /* Hz */
#define VM_FREQUENCY_MAX 1000
#define VM_FREQUENCY_DEFAULT 99 /* off the beat of 100 Hz timers */
#define VM_SECONDS_MIN 1
#define VM_SECONDS_DEFAULT 5
/* The longest profile a request may ask for, unless serve's --max-seconds. */
#define VM_SECONDS_MAX 60
/*
 * The longest profile at all: what --max-seconds may raise a request's
 * limit to, and what the command line (the machine's own operator) may ask.
 */
#define VM_SECONDS_CEILING 3600
/*
 * Off-CPU blocks shorter than this are not counted (µs).  1 µs by default,
 * as bcc's offcputime: a thread switched out and in again within a
 * microsecond did not wait for anything (a trip through the scheduler
 * takes longer), so no time is lost, and results compare with the tool
 * users know.  Wall-clock profiles count every block (0), so that running
 * and blocked time add up to the profile's duration.
 */
#define VM_MIN_BLOCK_US_MIN 0
#define VM_MIN_BLOCK_US_MAX 1000000
#define VM_MIN_BLOCK_US_DEFAULT 1
/*
 * A faults profile takes one sample every `period` page faults of its
 * targets.  64 by default: 256 KiB of 4 KiB pages a sample, so a backend
 * that grows by a few MiB still shows in tens of samples, while a process
 * faulting in gigabytes costs the unwinder one walk per 64 faults.
 */
#define VM_PERIOD_MIN 1
#define VM_PERIOD_MAX 1000000
#define VM_PERIOD_DEFAULT 64
/* Who is profiled when a request names no process. */
#define VM_DEFAULT_COMM "postgres"
/* Command names, and pids, one request may name (each). */
#define VM_MAX_TARGETS 64
#define VM_PID_MAX 4194304 /* the kernel's upper bound for pid_max */

enum vm_rule {
	VM_RULE_NONE,
	VM_RULE_FREQUENCY, /* Hz, VM_FREQUENCY_MIN..MAX */
	VM_RULE_SECONDS, /* VM_SECONDS_MIN..the front end's maximum */
	VM_RULE_N_COMMS, /* how many command names: up to VM_MAX_TARGETS */
	VM_RULE_COMM, /* one command name: see vm_comm_allowed() */
	VM_RULE_N_PIDS, /* how many pids: up to VM_MAX_TARGETS */
	VM_RULE_PID, /* one pid, 1..VM_PID_MAX */
	VM_RULE_FORMAT, /* one of enum vm_format */
	VM_RULE_KIND, /* one of enum vm_profile_kind */
	/* off-CPU and wall-clock profiles: only the eBPF profiler */
	VM_RULE_KIND_PROFILER,
	VM_RULE_MIN_BLOCK_US, /* VM_MIN_BLOCK_US_MIN..MAX */
	VM_RULE_PERIOD, /* faults: VM_PERIOD_MIN..MAX; not read otherwise */
};

struct vm_range {
	int64_t min, max;
};

/*
 * What rule allows: a number, a count, or for VM_RULE_COMM the length of a
 * name.  max_seconds is the front end's longest profile: 0 for
 * VM_SECONDS_MAX, never more than VM_SECONDS_CEILING.
 */
struct vm_range vm_rule_range(enum vm_rule rule, uint32_t max_seconds);

/* Whether value keeps rule (a rule with a range). */
bool vm_rule_allows(enum vm_rule rule, int64_t value, uint32_t max_seconds);

/*
 * A command name as /proc/PID/comm and ps -o comm show it: 1 to
 * VM_COMM_LEN - 1 characters (the kernel keeps no more), no '/'.  Every
 * front end says so in these words, after the name of its field.
 */
bool vm_comm_allowed(const char *name);
#define VM_COMM_RULE \
	"a command name of 1 to 15 characters without '/', as in /proc/PID/comm"

/*
 * Why VM_RULE_KIND_PROFILER holds for kind, said after the profile's kind
 * ("offcpu profiles are taken by ...").
 */
const char *vm_kind_profiler_rule(enum vm_profile_kind kind);

/*
 * "cpu", "offcpu", "wall", "memory", "faults": the API's path and --kind;
 * NULL if unknown.
 */
const char *vm_kind_name(enum vm_profile_kind kind);
/* What the web UI offers it as; its name when it has no title. */
const char *vm_kind_title(enum vm_profile_kind kind);
/* Whether it is a snapshot, taken at once (memory), not a window. */
bool vm_kind_is_snapshot(enum vm_profile_kind kind);

/* The kind named name (as vm_kind_name says it); -EINVAL when none. */
int vm_kind_parse(const char *name, enum vm_profile_kind *kind);

/* The first rule a request breaks. */
struct vm_rule_break {
	enum vm_rule rule;
	size_t index; /* of the command name or pid */
	int64_t value; /* the number or count that broke it */
};

struct vm_profile_request;

/*
 * Check req against every rule above, in the order of enum vm_rule.
 * Returns 0, or -EINVAL with *brk saying what broke.  Pure: whether a pid
 * is running is for the engine to see.
 */
int vm_request_check(const struct vm_profile_request *req, uint32_t max_seconds,
		     struct vm_rule_break *brk);

/*
 * A request with every default: a CPU profile by the eBPF profiler,
 * VM_FREQUENCY_DEFAULT, VM_SECONDS_DEFAULT, VM_MIN_BLOCK_US_DEFAULT,
 * VM_PERIOD_DEFAULT, pprof, no target named (the engine then profiles VM_DEFAULT_COMM).
 */
void vm_request_defaults(struct vm_profile_request *req);

#endif
