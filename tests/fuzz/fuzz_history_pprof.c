// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_history_pprof.c - libFuzzer target for agent/history/history_pprof.c,
 * which reads the files of --history-dir back at start-up: bytes anyone
 * with access to the directory may have written.  Beyond not crashing, a
 * file refused leaves the history empty and says why, and a file taken
 * merges and encodes again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "agent/encode/encode.h"
#include "agent/history/history.h"

static int encode(const struct vm_symbolized *y,
		  const struct vm_history_window *span, void *ctx,
		  struct vm_error *err)
{
	void *data = NULL;
	size_t len = 0;
	int r = vm_pprof_encode(y, &data, &len, err);

	(void)span, (void)ctx;
	free(data);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vm_history_config cfg = { .max_seconds = 3600,
					 .max_bytes = 1 << 20,
					 .kind = VM_KIND_CPU };
	struct vm_history_window w = { .start_ns = 1, .end_ns = 2 };
	struct vm_history_index idx;
	struct vm_history *h;
	struct vm_error err = { 0 };
	int r;

	if (vm_history_new(&cfg, &h, &err) < 0)
		abort();
	r = vm_history_add_pprof(h, &w, data, size, &err);
	if (vm_history_get_index(h, &idx) < 0)
		abort();
	if (r < 0 && (idx.n != 0 || err.msg[0] == '\0'))
		abort();
	if (r == 0) {
		struct vm_error e2 = { 0 };

		if (idx.n != 1)
			abort();
		r = vm_history_merge(h, 0, UINT64_MAX, encode, NULL, &e2);
		if (r < 0 && r != -ENOMEM)
			abort();
	}
	free(idx.v);
	vm_history_free(h);
	return 0;
}
