/* SPDX-License-Identifier: Apache-2.0 */
/*
 * curl.h - libcurl, opened with dlopen() when --push-url is given
 * (curl.c), not linked, for the reason mhd.h gives: an agent that never
 * pushes, and every one-shot `vmtools-agent profile`, would pay for
 * loading it and the TLS libraries it brings.  push.c calls the
 * functions through the sym_curl_* pointers once vm_curl_load()
 * succeeded (common/dl.h).
 */
#ifndef VMTOOLS_AGENT_CURL_H
#define VMTOOLS_AGENT_CURL_H

#include <curl/curl.h>

#include "common/error.h"

/* X(name) for every libcurl function the agent calls. */
#define VM_CURL_FUNCTIONS(X)  \
	X(curl_global_init)   \
	X(curl_easy_init)     \
	X(curl_easy_setopt)   \
	X(curl_easy_perform)  \
	X(curl_easy_getinfo)  \
	X(curl_easy_cleanup)  \
	X(curl_easy_strerror) \
	X(curl_easy_escape)   \
	X(curl_free)          \
	X(curl_mime_init)     \
	X(curl_mime_addpart)  \
	X(curl_mime_name)     \
	X(curl_mime_filename) \
	X(curl_mime_type)     \
	X(curl_mime_data)     \
	X(curl_mime_free)     \
	X(curl_slist_append)  \
	X(curl_slist_free_all)

#define VM_CURL_DECLARE(name) extern typeof(name) *sym_##name;
VM_CURL_FUNCTIONS(VM_CURL_DECLARE)
#undef VM_CURL_DECLARE

/* Open libcurl, once; 0, or -ENOENT with a sentence in err. */
int vm_curl_load(struct vm_error *err);

#endif
