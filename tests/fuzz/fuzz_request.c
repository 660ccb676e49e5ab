// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_request.c - libFuzzer target for agent/serve/request.c, the parser of
 * untrusted request bodies (POST /profile/cpu) and of the `seconds` and
 * `format` query arguments of /debug/pprof/profile.  Beyond not crashing,
 * a request that parses must be within the contract's ranges.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/serve/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const comms[] = { "postgres" };
	struct vm_request_limits limits = { .max_seconds = 0,
					    .default_comms = comms,
					    .n_default_comms = 1 };
	struct vm_api_request r;
	struct vm_error err = { 0 };
	char *query;
	int rc;

	rc = vm_request_parse_json((const char *)data, size, &limits, &r, &err);
	if (rc == 0) {
		if (r.req.frequency < 1 || r.req.frequency > 1000 ||
		    r.req.seconds < 1 || r.req.seconds > 60 ||
		    r.req.n_comms > VM_MAX_TARGETS ||
		    r.req.n_pids > VM_MAX_TARGETS ||
		    r.req.n_comms + r.req.n_pids == 0)
			abort();
		for (size_t i = 0; i < r.req.n_comms; i++)
			if (strlen(r.req.comms[i]) < 1 ||
			    strlen(r.req.comms[i]) >= VM_COMM_LEN)
				abort();
	} else if ((rc != -EINVAL && rc != -EBADMSG && rc != -EFBIG) ||
		   err.msg[0] == '\0') {
		abort();
	}

	query = strndup((const char *)data, size);
	if (!query)
		return 0;
	vm_error_clear(&err);
	rc = vm_request_from_pprof_query(query, &limits, &r, &err);
	if (rc == 0 && (r.req.seconds < 1 || r.req.seconds > 60))
		abort();
	/* The same bytes as its format argument. */
	vm_error_clear(&err);
	rc = vm_request_pprof_format(query, &r, &err);
	if ((rc == 0 && r.req.format != VM_FORMAT_PPROF &&
	     r.req.format != VM_FORMAT_FOLDED &&
	     r.req.format != VM_FORMAT_SVG) ||
	    (rc < 0 && (rc != -EINVAL || err.msg[0] == '\0')))
		abort();
	free(query);
	return 0;
}
