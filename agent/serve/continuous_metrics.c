// SPDX-License-Identifier: Apache-2.0
/*
 * continuous_metrics.c - what GET /metrics adds with --continuous, in the
 * Prometheus text format: windows sealed, the history's size and the
 * windows it dropped (in memory, on disk), and the push outcomes.  Pure:
 * it renders a struct vm_continuous_stats.
 */
#include <stdio.h>
#include <stdlib.h>

#include "agent/serve/continuous.h"

char *vm_continuous_render_metrics(const struct vm_continuous_stats *st,
				   size_t *len)
{
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	if (!f)
		return NULL;
	fprintf(f,
		"# HELP vmtools_continuous_sampling Whether the continuous profiler samples now.\n"
		"# TYPE vmtools_continuous_sampling gauge\n"
		"vmtools_continuous_sampling %d\n",
		st->sampling ? 1 : 0);
	fprintf(f,
		"# HELP vmtools_continuous_windows_total Windows of the continuous profile sealed.\n"
		"# TYPE vmtools_continuous_windows_total counter\n"
		"vmtools_continuous_windows_total %llu\n",
		(unsigned long long)st->windows);
	fprintf(f,
		"# HELP vmtools_history_bytes What the history of windows takes, in memory and on disk.\n"
		"# TYPE vmtools_history_bytes gauge\n"
		"vmtools_history_bytes{where=\"memory\"} %llu\n",
		(unsigned long long)st->history_bytes);
	if (st->has_dir)
		fprintf(f, "vmtools_history_bytes{where=\"disk\"} %llu\n",
			(unsigned long long)st->dir.bytes);
	fprintf(f,
		"# HELP vmtools_history_dropped_windows_total Windows dropped for age or room (disk: also those that could not be written).\n"
		"# TYPE vmtools_history_dropped_windows_total counter\n"
		"vmtools_history_dropped_windows_total{where=\"memory\"} %llu\n",
		(unsigned long long)st->history_dropped);
	if (st->has_dir)
		fprintf(f,
			"vmtools_history_dropped_windows_total{where=\"disk\"} %llu\n"
			"# HELP vmtools_history_write_errors_total Windows that could not be written to the history directory.\n"
			"# TYPE vmtools_history_write_errors_total counter\n"
			"vmtools_history_write_errors_total %llu\n",
			(unsigned long long)st->dir.dropped,
			(unsigned long long)st->dir.write_errors);
	if (st->has_push) {
		fprintf(f,
			"# HELP vmtools_push_total Attempts to push a window, by outcome (dropped: the queue was full).\n"
			"# TYPE vmtools_push_total counter\n");
		for (int o = 0; o < VM_PUSH_OUTCOMES; o++)
			fprintf(f, "vmtools_push_total{outcome=\"%s\"} %llu\n",
				vm_push_outcome_name(o),
				(unsigned long long)st->push.outcomes[o]);
		fprintf(f,
			"# HELP vmtools_push_queued Windows waiting to be pushed.\n"
			"# TYPE vmtools_push_queued gauge\n"
			"vmtools_push_queued %llu\n",
			(unsigned long long)st->push.queued);
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}
