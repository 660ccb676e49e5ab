// SPDX-License-Identifier: Apache-2.0
/*
 * oom_metrics.c - what GET /metrics says of the OOM reports, in the
 * Prometheus text format (prom.h): the victims the kernel named, the
 * reports by where their snapshot came from, and those kept by backend
 * type.  Pure: it renders a struct vm_oom_stats.
 */
#include "agent/encode/prom.h"
#include "agent/oom/oom.h"

char *vm_oom_render_metrics(const struct vm_oom_stats *st, size_t *len)
{
	const struct {
		const char *name;
		uint64_t n;
	} sources[] = { { "at_kill", st->at_kill },
			{ "kept", st->kept },
			{ "none", st->none } };
	struct vm_prom p;

	if (vm_prom_open(&p))
		return NULL;
	vm_prom_one(&p, "vmtools_oom_watching", "gauge",
		    "Whether the OOM killer's victims are followed.",
		    st->watching ? 1 : 0);
	vm_prom_one(
		&p, "vmtools_oom_victims_total", "counter",
		"Victims of the OOM killer seen since the agent started, targets or not.",
		st->victims + st->lost);
	vm_prom_family(
		&p, "vmtools_oom_reports_total", "counter",
		"OOM reports made since the agent started, by where their memory snapshot came from.");
	for (size_t i = 0; i < sizeof(sources) / sizeof(*sources); i++)
		vm_prom_u64(&p, "vmtools_oom_reports_total", "snapshot",
			    sources[i].name, sources[i].n);
	vm_prom_family(&p, "vmtools_oom_reports", "gauge",
		       "OOM reports kept, by the victim's backend type.");
	for (size_t i = 0; i < st->store.n_types; i++)
		vm_prom_u64(&p, "vmtools_oom_reports", "backend_type",
			    st->store.by_type[i].type[0] ?
				    st->store.by_type[i].type :
				    "none",
			    st->store.by_type[i].n);
	return vm_prom_close(&p, len);
}
