// SPDX-License-Identifier: Apache-2.0
/*
 * continuous_metrics.c - what GET /metrics adds with --continuous, in the
 * Prometheus text format (prom.h): windows sealed, the history's size and the
 * windows it dropped (in memory, on disk), and the push outcomes.  Pure:
 * it renders a struct vm_continuous_stats.
 */
#include "agent/continuous/continuous.h"
#include "agent/encode/prom.h"

char *vm_continuous_render_metrics(const struct vm_continuous_stats *st,
				   size_t *len)
{
	struct vm_prom p;

	if (vm_prom_open(&p))
		return NULL;
	vm_prom_one(&p, "vmtools_continuous_sampling", "gauge",
		    "Whether the continuous profiler samples now.",
		    st->sampling ? 1 : 0);
	vm_prom_one(&p, "vmtools_continuous_windows_total", "counter",
		    "Windows of the continuous profile sealed.", st->windows);
	vm_prom_family(
		&p, "vmtools_history_bytes", "gauge",
		"What the history of windows takes, in memory and on disk.");
	vm_prom_u64(&p, "vmtools_history_bytes", "where", "memory",
		    st->history_bytes);
	if (st->has_dir)
		vm_prom_u64(&p, "vmtools_history_bytes", "where", "disk",
			    st->dir.bytes);
	vm_prom_family(
		&p, "vmtools_history_dropped_windows_total", "counter",
		"Windows dropped for age or room (disk: also those that could not be written).");
	vm_prom_u64(&p, "vmtools_history_dropped_windows_total", "where",
		    "memory", st->history_dropped);
	if (st->has_dir) {
		vm_prom_u64(&p, "vmtools_history_dropped_windows_total",
			    "where", "disk", st->dir.dropped);
		vm_prom_one(
			&p, "vmtools_history_write_errors_total", "counter",
			"Windows that could not be written to the history directory.",
			st->dir.write_errors);
	}
	if (st->has_push) {
		vm_prom_family(
			&p, "vmtools_push_total", "counter",
			"Attempts to push a window, by outcome (dropped: the queue was full).");
		for (int o = 0; o < VM_PUSH_OUTCOMES; o++)
			vm_prom_u64(&p, "vmtools_push_total", "outcome",
				    vm_push_outcome_name(o),
				    st->push.outcomes[o]);
		vm_prom_one(&p, "vmtools_push_queued", "gauge",
			    "Windows waiting to be pushed.", st->push.queued);
	}
	if (st->has_memory)
		vm_prom_one(&p, "vmtools_continuous_memory_snapshots_total",
			    "counter",
			    "Memory snapshots of the continuous profile kept.",
			    st->memory.snapshots);
	return vm_prom_close(&p, len);
}
