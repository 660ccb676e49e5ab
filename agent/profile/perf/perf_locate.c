// SPDX-License-Identifier: Apache-2.0
/*
 * perf_locate.c - finds the perf binary for the perf backend: --perf PATH,
 * then the tools image's manifest, then PATH (vm_perf_locate(), engine.h).
 *
 * The image's perf is preferred over one on PATH because it was built for
 * this kernel and brings its own libraries; `setup` normally links it onto
 * PATH too, but the manifest still finds it when setup ran without linking
 * or another perf comes first on PATH.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/profile/engine.h"
#include "common/cleanup.h"
#include "common/manifest.h"

static bool executable(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

static int from_manifest(const char *mountpoint, char **out)
{
	_cleanup_manifest_ struct vm_manifest *m = NULL;
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s%s", mountpoint,
		     VM_MANIFEST_PATH) >= (int)sizeof(path) ||
	    access(path, F_OK) < 0 || vm_manifest_load(path, &m, NULL) < 0)
		return -ENOENT;
	for (size_t i = 0; i < m->n_tools; i++) {
		if (strcmp(m->tools[i].name, "perf"))
			continue;
		if (snprintf(path, sizeof(path), "%s%s", mountpoint,
			     m->tools[i].path) >= (int)sizeof(path) ||
		    !executable(path))
			return -ENOENT;
		*out = strdup(path);
		return *out ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

static int from_path(char **out)
{
	const char *env = getenv("PATH");
	_cleanup_free_ char *dirs =
		strdup(env && *env ? env : "/usr/local/bin:/usr/bin:/bin");
	char path[PATH_MAX], *save = NULL;

	if (!dirs)
		return -ENOMEM;
	for (char *d = strtok_r(dirs, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		if (d[0] != '/') /* relative PATH entries: never */
			continue;
		if (snprintf(path, sizeof(path), "%s/perf", d) >=
			    (int)sizeof(path) ||
		    !executable(path))
			continue;
		*out = strdup(path);
		return *out ? 0 : -ENOMEM;
	}
	return -ENOENT;
}

int vm_perf_locate(const char *override, const char *mountpoint, char **out,
		   struct vm_error *err)
{
	int r;

	*out = NULL;
	/* A bare name ("perf") is no choice of binary: search as usual. */
	if (override && strchr(override, '/') && executable(override)) {
		*out = strdup(override);
		return *out ? 0 : -ENOMEM;
	}
	if (!mountpoint)
		mountpoint = VM_PERF_DEFAULT_MOUNTPOINT;
	r = from_manifest(mountpoint, out);
	if (r != -ENOENT)
		return r;
	r = from_path(out);
	if (r != -ENOENT)
		return r;
	if (override && strchr(override, '/'))
		return vm_error_set(
			err, ENOENT,
			"perf is not available: %s is not an executable file, there is no \"perf\" tool in a tools image mounted at %s (run `vmtools-agent setup`) and no perf on PATH; attach the tools disk or point --perf at a perf binary",
			override, mountpoint);
	return vm_error_set(
		err, ENOENT,
		"perf is not available: no \"perf\" tool in a tools image mounted at %s (run `vmtools-agent setup`) and no perf on PATH; attach the tools disk or start the agent with --perf PATH",
		mountpoint);
}
