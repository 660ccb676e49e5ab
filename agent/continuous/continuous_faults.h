/* SPDX-License-Identifier: Apache-2.0 */
/*
 * continuous_faults.h - the faults windows of `serve --continuous
 * --continuous-faults` (continuous_faults.c): a continuous faults session
 * of the engine (one page-fault perf event per CPU, one sample every
 * period faults) sealed on the CPU windows' beat, each window kept in a
 * history of its own (agent/history/, kind VM_KIND_FAULTS) and queued for
 * the push.  continuous.c owns it and drives it from its thread; the
 * HTTP layer reads its history.
 */
#ifndef VMTOOLS_AGENT_CONTINUOUS_FAULTS_H
#define VMTOOLS_AGENT_CONTINUOUS_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/continuous/push.h"
#include "agent/history/history.h"
#include "agent/profile/engine.h"
#include "common/error.h"

/*
 * The faults windows' history takes this share of --history-max-bytes,
 * beside the CPU windows' own bound.
 */
#define VM_CONTINUOUS_FAULTS_BYTES_SHARE 4 /* a quarter */

struct vm_continuous_faults_config {
	uint32_t period; /* faults per sample, > 0 */
	const char *const *comms; /* targets, as the CPU windows' */
	size_t n_comms;
	struct vm_history_config history; /* the CPU history's bounds */
	struct vm_push *push; /* NULL: no push; not owned */
	const struct vm_engine_config *engine;
};

struct vm_continuous_faults_stats {
	bool sampling; /* the session runs now */
	uint64_t windows; /* sealed and kept so far */
	char last_error[256]; /* why it does not sample, "" when it does */
	uint64_t history_bytes;
	uint64_t history_dropped;
};

struct vm_continuous_faults;

/* Open the history; nothing samples before the first beat. */
int vm_continuous_faults_new(const struct vm_continuous_faults_config *cfg,
			     struct vm_continuous_faults **out,
			     struct vm_error *err);
/*
 * A beat of the CPU windows, from continuous.c's thread only: the
 * session started (tried again at every beat while it cannot), else its
 * window sealed and kept.
 */
void vm_continuous_faults_beat(struct vm_continuous_faults *f);
/* The last window sealed, the session stopped; and everything freed. */
void vm_continuous_faults_end(struct vm_continuous_faults *f);
void vm_continuous_faults_free(struct vm_continuous_faults *f);

struct vm_history *
vm_continuous_faults_history_of(struct vm_continuous_faults *f);
void vm_continuous_faults_stats(struct vm_continuous_faults *f,
				struct vm_continuous_faults_stats *st);

#endif
