/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mhd.h - libmicrohttpd, opened with dlopen() by the REST service when it
 * starts (mhd.c), not linked: with GnuTLS and the libraries it brings,
 * loading it dominated the agent's start-up, which every one-shot
 * `vmtools-agent profile` paid for nothing.  The http_*.c files call the
 * functions through the sym_MHD_* pointers once vm_mhd_load() succeeded
 * (common/dl.h).
 */
#ifndef VMTOOLS_AGENT_MHD_H
#define VMTOOLS_AGENT_MHD_H

#include <microhttpd.h>

#include "common/error.h"

/* X(name) for every libmicrohttpd function the agent calls. */
#define VM_MHD_FUNCTIONS(X)                     \
	X(MHD_add_response_header)              \
	X(MHD_basic_auth_get_username_password) \
	X(MHD_free)                             \
	X(MHD_create_response_from_buffer)      \
	X(MHD_destroy_response)                 \
	X(MHD_get_connection_info)              \
	X(MHD_get_connection_values_n)          \
	X(MHD_get_daemon_info)                  \
	X(MHD_lookup_connection_value)          \
	X(MHD_queue_response)                   \
	X(MHD_quiesce_daemon)                   \
	X(MHD_start_daemon)                     \
	X(MHD_stop_daemon)

#define VM_MHD_DECLARE(name) extern typeof(name) *sym_##name;
VM_MHD_FUNCTIONS(VM_MHD_DECLARE)
#undef VM_MHD_DECLARE

/* Open libmicrohttpd, once; 0, or -ENOENT with a sentence in err. */
int vm_mhd_load(struct vm_error *err);

#endif
