// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_perfdata.c - libFuzzer target for the perf.data reader
 * (agent/profile/perf/perfdata.c): any bytes must give 0 or -EBADMSG with a message,
 * never a crash, a read out of bounds or a leak; the same bytes fed to the
 * counter of a file being written (vm_perfdata_counter) likewise.  Seeds: real files perf
 * wrote of the CPU burner (tests/fuzz/seeds/fuzz_perfdata/).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent/profile/perf/perfdata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const comms[] = { "burner", "postgres" };
	static const pid_t pids[] = { 1 };
	struct vm_perfdata_filter by_comm = { .comms = comms, .n_comms = 2 };
	struct vm_perfdata_filter by_pid = { .pids = pids, .n_pids = 1 };
	struct vm_samples s = { 0 };
	struct vm_error err = { 0 };
	int r;

	r = vm_perfdata_read(data, size, &by_comm, &s, NULL, &err);
	if (r < 0 && (r != -EBADMSG || !err.msg[0]))
		abort();
	vm_samples_free(&s);
	vm_error_clear(&err);
	r = vm_perfdata_read(data, size, &by_pid, &s, NULL, &err);
	if (r < 0 && (r != -EBADMSG || !err.msg[0]))
		abort();
	vm_samples_free(&s);

	/* The counter of a file still being written, fed in two pieces. */
	struct vm_perfdata_counter *c;

	if (vm_perfdata_counter_new(&by_comm, &c) < 0)
		abort();
	vm_perfdata_counter_feed(c, data, size / 2);
	vm_perfdata_counter_feed(c, data + size / 2, size - size / 2);
	vm_perfdata_counter_free(c);
	return 0;
}
