// SPDX-License-Identifier: Apache-2.0
/*
 * limits.c - checking a profile request against its rules (limits.h).
 * Pure logic, shared by the engine and every front end.
 */
#include "agent/profile/limits.h"

#include <errno.h>
#include <string.h>

#include "agent/profile/engine.h"
#include "agent/samples/sample.h"

_Static_assert(VM_COMM_LEN - 1 == 15, "VM_COMM_RULE says 15 characters");

struct vm_range vm_rule_range(enum vm_rule rule, uint32_t max_seconds)
{
	switch (rule) {
	case VM_RULE_FREQUENCY:
		return (struct vm_range){ VM_FREQUENCY_MIN, VM_FREQUENCY_MAX };
	case VM_RULE_SECONDS:
		if (max_seconds == 0)
			max_seconds = VM_SECONDS_MAX;
		if (max_seconds > VM_SECONDS_CEILING)
			max_seconds = VM_SECONDS_CEILING;
		return (struct vm_range){ VM_SECONDS_MIN, max_seconds };
	case VM_RULE_N_COMMS:
	case VM_RULE_N_PIDS:
		return (struct vm_range){ 0, VM_MAX_TARGETS };
	case VM_RULE_COMM:
		return (struct vm_range){ 1, VM_COMM_LEN - 1 };
	case VM_RULE_PID:
		return (struct vm_range){ 1, VM_PID_MAX };
	case VM_RULE_MIN_BLOCK_US:
		return (struct vm_range){ VM_MIN_BLOCK_US_MIN,
					  VM_MIN_BLOCK_US_MAX };
	case VM_RULE_PERIOD:
		return (struct vm_range){ VM_PERIOD_MIN, VM_PERIOD_MAX };
	default:
		return (struct vm_range){ 0, 0 };
	}
}

bool vm_rule_allows(enum vm_rule rule, int64_t value, uint32_t max_seconds)
{
	struct vm_range r = vm_rule_range(rule, max_seconds);

	return value >= r.min && value <= r.max;
}

bool vm_comm_allowed(const char *name)
{
	return name && vm_rule_allows(VM_RULE_COMM, strlen(name), 0) &&
	       !strchr(name, '/');
}

static int broke(struct vm_rule_break *brk, enum vm_rule rule, size_t index,
		 int64_t value)
{
	*brk = (struct vm_rule_break){ rule, index, value };
	return -EINVAL;
}

int vm_request_check(const struct vm_profile_request *req, uint32_t max_seconds,
		     struct vm_rule_break *brk)
{
	*brk = (struct vm_rule_break){ VM_RULE_NONE, 0, 0 };
	if (!vm_rule_allows(VM_RULE_FREQUENCY, req->frequency, max_seconds))
		return broke(brk, VM_RULE_FREQUENCY, 0, req->frequency);
	if (!vm_rule_allows(VM_RULE_SECONDS, req->seconds, max_seconds))
		return broke(brk, VM_RULE_SECONDS, 0, req->seconds);
	if (!vm_rule_allows(VM_RULE_N_COMMS, req->n_comms, max_seconds))
		return broke(brk, VM_RULE_N_COMMS, 0, req->n_comms);
	for (size_t i = 0; i < req->n_comms; i++)
		if (!vm_comm_allowed(req->comms[i]))
			return broke(brk, VM_RULE_COMM, i,
				     req->comms[i] ? strlen(req->comms[i]) : 0);
	if (!vm_rule_allows(VM_RULE_N_PIDS, req->n_pids, max_seconds))
		return broke(brk, VM_RULE_N_PIDS, 0, req->n_pids);
	for (size_t i = 0; i < req->n_pids; i++)
		if (!vm_rule_allows(VM_RULE_PID, req->pids[i], max_seconds))
			return broke(brk, VM_RULE_PID, i, req->pids[i]);
	if (req->format != VM_FORMAT_PPROF && req->format != VM_FORMAT_FOLDED &&
	    req->format != VM_FORMAT_SVG)
		return broke(brk, VM_RULE_FORMAT, 0, req->format);
	if (!vm_kind_name(req->kind))
		return broke(brk, VM_RULE_KIND, 0, req->kind);
	if (req->kind != VM_KIND_CPU && req->profiler != VM_PROFILER_BPF)
		return broke(brk, VM_RULE_KIND_PROFILER, 0, req->profiler);
	if (!vm_rule_allows(VM_RULE_MIN_BLOCK_US, req->min_block_us,
			    max_seconds))
		return broke(brk, VM_RULE_MIN_BLOCK_US, 0, req->min_block_us);
	if (req->kind == VM_KIND_FAULTS &&
	    !vm_rule_allows(VM_RULE_PERIOD, req->period, max_seconds))
		return broke(brk, VM_RULE_PERIOD, 0, req->period);
	return 0;
}

const char *vm_kind_profiler_rule(enum vm_profile_kind kind)
{
	if (kind == VM_KIND_FAULTS)
		return "profiles are taken by the eBPF profiler only (it tells each fault's mapping from the address while the process lives; perf's records would need their own reader)";
	return "profiles are taken by the eBPF profiler only (it follows every context switch; perf would need its own off-CPU mode)";
}

/*
 * Every kind, the one list: its name in the API and on the command line,
 * what the web UI offers it as (GET /healthz's "kinds"), and whether it
 * is a snapshot, taken at once (seconds and frequency mean nothing).
 */
static const struct kind_info {
	const char *name, *title;
	bool snapshot;
} kinds[] = {
	[VM_KIND_CPU] = { "cpu", "CPU (on-CPU samples)", false },
	[VM_KIND_OFFCPU] = { "offcpu", "Off-CPU (time blocked)", false },
	[VM_KIND_WALL] = { "wall", "Wall clock (running + blocked)", false },
	[VM_KIND_MEMORY] = { "memory", "Memory (where it is now: a snapshot)",
			     true },
	[VM_KIND_FAULTS] = { "faults",
			     "Page faults (which code made memory grow)",
			     false },
};

static const struct kind_info *kind_info(enum vm_profile_kind kind)
{
	if ((unsigned)kind >= sizeof(kinds) / sizeof(kinds[0]))
		return NULL;
	return &kinds[kind];
}

const char *vm_kind_name(enum vm_profile_kind kind)
{
	const struct kind_info *k = kind_info(kind);

	return k ? k->name : NULL;
}

const char *vm_kind_title(enum vm_profile_kind kind)
{
	const struct kind_info *k = kind_info(kind);

	return k && k->title ? k->title : vm_kind_name(kind);
}

bool vm_kind_is_snapshot(enum vm_profile_kind kind)
{
	const struct kind_info *k = kind_info(kind);

	return k && k->snapshot;
}

int vm_kind_parse(const char *name, enum vm_profile_kind *kind)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (name && kinds[i].name && !strcmp(name, kinds[i].name)) {
			*kind = (enum vm_profile_kind)i;
			return 0;
		}
	return -EINVAL;
}

void vm_request_defaults(struct vm_profile_request *req)
{
	memset(req, 0, sizeof(*req));
	req->profiler = VM_PROFILER_BPF;
	req->frequency = VM_FREQUENCY_DEFAULT;
	req->seconds = VM_SECONDS_DEFAULT;
	req->format = VM_FORMAT_PPROF;
	req->kind = VM_KIND_CPU;
	req->min_block_us = VM_MIN_BLOCK_US_DEFAULT;
	req->period = VM_PERIOD_DEFAULT;
}
