// SPDX-License-Identifier: Apache-2.0
/*
 * launcher.c - /bin/NAME in a vmtools image: starts a bundled executable
 * with the loader and libraries bundled next to it.
 *
 * Linked statically, so it runs where the image is the whole world (a
 * chroot holding no libc and no shell).  It finds the image root from its
 * own resolved path (<root>/bin/NAME, or <root>/usr/bin/NAME in a merged-
 * /usr image; the guest reaches it through a symlink such as
 * /usr/local/bin/NAME): the nearest ancestor holding lib/vmtools/NAME.
 * Then it execs
 *   <root>/lib/vmtools/NAME/ld.so --library-path <root>/lib/vmtools/NAME/lib
 *       --argv0 ARGV0 <root>/lib/vmtools/NAME/NAME ARGS...
 * Nothing is configured: the layout is fixed by vmtools-image.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static int fail(const char *what, const char *path)
{
	fprintf(stderr, "vmtools launcher: %s %s: %s\n", what, path,
		strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	char self[PATH_MAX], loader[PATH_MAX], libdir[PATH_MAX],
		binary[PATH_MAX];
	char **args;
	char *name, *slash;
	int n = 0;

	if (!execfn || !realpath(execfn, self)) {
		if (!realpath("/proc/self/exe", self))
			return fail("cannot find myself via", "/proc/self/exe");
	}
	/* self = <root>/bin/NAME: NAME, then the ancestors of bin/ */
	slash = strrchr(self, '/');
	if (!slash)
		return fail("unexpected path", self);
	name = slash + 1;
	*slash = '\0';
	for (;;) {
		slash = strrchr(self, '/');
		if (!slash) {
			errno = ENOENT;
			return fail(
				"no lib/vmtools/<name>/ld.so above the launcher of",
				name);
		}
		*slash = '\0'; /* "" for / */
		if (snprintf(loader, sizeof(loader), "%s/lib/vmtools/%s/ld.so",
			     self, name) >= (int)sizeof(loader) ||
		    snprintf(libdir, sizeof(libdir), "%s/lib/vmtools/%s/lib",
			     self, name) >= (int)sizeof(libdir) ||
		    snprintf(binary, sizeof(binary), "%s/lib/vmtools/%s/%s",
			     self, name, name) >= (int)sizeof(binary)) {
			errno = ENAMETOOLONG;
			return fail("path too long under", self);
		}
		if (access(loader, X_OK) == 0)
			break;
	}
	args = calloc((size_t)argc + 8, sizeof(*args));
	if (!args)
		return fail("out of memory for", name);
	args[n++] = loader;
	args[n++] = "--library-path";
	args[n++] = libdir;
	args[n++] = "--argv0";
	args[n++] = argc > 0 && argv[0] ? argv[0] : name;
	args[n++] = binary;
	for (int i = 1; i < argc; i++)
		args[n++] = argv[i];
	args[n] = NULL;
	execv(loader, args);
	return fail("cannot execute", loader);
}
