// SPDX-License-Identifier: Apache-2.0
/*
 * http_ui.c - GET /ui/...: the agent's web UI (docs/ui.md), a page of its
 * own that lists what can be looked at and opens each profile in
 * speedscope, both served from the UI's directory (ui_files.h: --ui-dir,
 * else DATADIR/ui, else the tools disk's).
 *
 * Every file goes out with a Content-Security-Policy that lets the page
 * load nothing but the agent's own files: scripts and styles from 'self'
 * (speedscope sets style attributes, hence 'unsafe-inline' for styles
 * only, and compiles its importer of Java Flight Recordings from its own
 * WebAssembly file at start, hence 'wasm-unsafe-eval', which allows no
 * eval of JavaScript), profiles fetched from 'self' and handed to
 * speedscope as blob: URLs, frames of 'self' only.  Files whose names carry a hash of their
 * content are cached for good, the rest revalidated every time.  Behind
 * --auth-token-file, the token was checked before this runs, like any
 * path's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/serve/http_int.h"
#include "agent/serve/ui_files.h"
#include "common/log.h"

#define CSP                                                                       \
	"default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; "              \
	"style-src 'self' 'unsafe-inline'; "                                      \
	"img-src 'self' data: blob:; font-src 'self'; connect-src 'self' blob:; " \
	"frame-src 'self'; frame-ancestors 'self'; base-uri 'none'; form-action 'none'"

static const char *const security_headers[] = {
	"Content-Security-Policy",
	CSP,
	"X-Content-Type-Options",
	"nosniff",
	"Referrer-Policy",
	"no-referrer",
	"X-Frame-Options",
	"SAMEORIGIN",
	"Cross-Origin-Resource-Policy",
	"same-origin",
	NULL,
};

enum MHD_Result vm_http_ui(struct vm_http_exchange *x)
{
	const struct vm_http_config *cfg = &x->srv->cfg;
	struct vm_error err = { 0 };
	const char *rel = x->path + strlen("/ui");
	size_t len;
	void *data;
	int fd = -1, r;

	if (*rel == '/')
		rel++;
	/* x->path holds sizeof(path) - 1 bytes: a longer one was cut. */
	if (strlen(x->path) >= sizeof(x->path) - 1 ||
	    !vm_ui_path_allowed(rel) || !vm_ui_content_type(rel))
		return vm_http_reply_error(
			x, 404, "the web UI has no file %s; it starts at /ui/",
			x->path);
	r = vm_ui_open_dir(cfg->ui_dir, cfg->ui_installed, cfg->mountpoint, &fd,
			   &err);
	if (r == 0) {
		r = vm_ui_read(fd, rel, &data, &len, &err);
		close(fd);
	}
	if (r < 0) {
		vm_log("web UI: %s", vm_error_str(&err));
		return vm_http_reply_error(x, r == -ENOMEM ? 500 : 404, "%s",
					   vm_error_str(&err));
	}
	return vm_http_reply_file(
		x, data, len, vm_ui_content_type(rel),
		vm_ui_immutable(rel) ? "private, max-age=31536000, immutable" :
				       "no-cache",
		security_headers);
}
