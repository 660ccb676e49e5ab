// SPDX-License-Identifier: Apache-2.0
/*
 * bundle.c - puts a tool and everything it needs to run into the tree.
 *
 * The executable is started through its bundled loader with
 * --library-path, so the guest's own libc and libraries (if any) are never
 * mixed in: what ran on the build host runs in the guest.
 */
#include "imagebuilder/bundle.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "imagebuilder/elfdeps.h"
#include "imagebuilder/launcher_blob.h"

/* A file from the host (source), or of the bytes data (len of them). */
static int add_file(struct vm_tree *t, const char *path, const char *source,
		    const unsigned char *data, size_t len, uint32_t mode,
		    struct vm_error *err)
{
	const char *name = strrchr(path, '/') + 1;
	struct vm_node *n = vm_node_new(name, VM_NODE_REG, mode);
	struct stat st;
	int r;

	if (!n)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (source) {
		if (stat(source, &st) < 0) {
			vm_node_free(n);
			return vm_error_errno(err, errno, "cannot stat %s",
					      source);
		}
		n->size = (uint64_t)st.st_size;
		n->source = strdup(source);
		if (!n->source) {
			vm_node_free(n);
			return vm_error_set(err, ENOMEM, "out of memory");
		}
	} else {
		n->data = data;
		n->size = (uint64_t)len;
	}
	r = vm_tree_add(t, path, n, err);
	if (r < 0)
		vm_node_free(n);
	return r;
}

/* The ELF machine of the running vmtools-image: the host's. */
static int host_machine(void)
{
	struct vm_elf_info self;
	int machine;

	if (vm_elf_read("/proc/self/exe", &self, NULL) < 0)
		return 0;
	machine = self.machine;
	vm_elf_info_clear(&self);
	return machine;
}

/*
 * Where binary's loader and libraries are found (closure's sysroot): the
 * host for a binary of the host's machine, else beneath --sysroot or the
 * staged root.  Its launcher, of its machine, into *launcher.  A binary
 * of a machine other than the image's kernel's is refused.
 */
static int plan(const char *binary, const struct vm_bundle_from *from,
		const char **sysroot, const unsigned char **launcher,
		size_t *launcher_len, struct vm_error *err)
{
	struct vm_elf_info info;
	int r = vm_elf_read(binary, &info, err);

	if (r < 0)
		return r;
	if (from->machine && info.machine != from->machine)
		r = vm_error_set(
			err, EINVAL,
			"--binary %s is built for another architecture (ELF machine %d) than the kernel's modules (%d); bundle the build of the kernel's architecture (from Debian: its package for that architecture, unpacked with dpkg -x into --root)",
			binary, info.machine, from->machine);
	*launcher = vm_launcher_for(info.machine, launcher_len);
	if (r == 0 && !*launcher)
		r = vm_error_set(
			err, EINVAL,
			"--binary %s is built for an architecture (ELF machine %d) vmtools-image has no launcher for (it has x86-64's and arm64's)",
			binary, info.machine);
	*sysroot = from->sysroot;
	if (!*sysroot && info.machine != host_machine())
		*sysroot = from->root;
	vm_elf_info_clear(&info);
	return r;
}

int vm_bundle_add(struct vm_tree *t, const char *binary,
		  const struct vm_bundle_from *from, struct vm_manifest *m,
		  struct vm_error *err)
{
	const unsigned char *launcher_data;
	size_t launcher_len;
	const char *sysroot;
	struct vm_elf_closure c;
	const char *name = strrchr(binary, '/') ? strrchr(binary, '/') + 1 :
						  binary;
	char dir[320], p[PATH_MAX + 400], bin_path[640], launcher[320];
	const char **libs = NULL;
	size_t n_libs = 0;
	struct vm_node *link;
	struct stat st;
	int r;

	if (!name[0] || strlen(name) > VM_NAME_MAX)
		return vm_error_set(err, EINVAL,
				    "--binary %s does not name a file", binary);
	if (stat(binary, &st) < 0)
		return vm_error_errno(err, errno, "cannot use --binary %s",
				      binary);
	if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
		return vm_error_set(err, EINVAL,
				    "--binary %s is not an executable file",
				    binary);
	r = plan(binary, from, &sysroot, &launcher_data, &launcher_len, err);
	if (r < 0)
		return r;
	r = vm_elf_closure(binary, NULL, sysroot, &c, err);
	if (r < 0)
		return r;
	if (!c.interp) {
		vm_elf_closure_clear(&c);
		return vm_error_set(
			err, EINVAL,
			"--binary %s is statically linked; put it into the root instead",
			binary);
	}
	snprintf(dir, sizeof(dir), "/lib/vmtools/%s", name);
	snprintf(bin_path, sizeof(bin_path), "%s/%s", dir, name);
	snprintf(launcher, sizeof(launcher), "/bin/%s", name);
	libs = calloc(c.n_libs + 1, sizeof(*libs));
	if (!libs) {
		r = vm_error_set(err, ENOMEM, "out of memory");
		goto out;
	}
	r = add_file(t, launcher, NULL, launcher_data, launcher_len, 0755, err);
	if (r == 0)
		r = add_file(t, bin_path, binary, NULL, 0, st.st_mode & 0755,
			     err);
	for (size_t i = 0; i < c.n_libs && r == 0; i++) {
		snprintf(p, sizeof(p), "%s/lib/%s", dir, c.libs[i].name);
		r = add_file(t, p, c.libs[i].path, NULL, 0, 0644, err);
	}
	if (r == 0) {
		snprintf(p, sizeof(p), "%s/lib/%s", dir, c.interp_name);
		r = add_file(t, p, c.interp, NULL, 0, 0755, err);
	}
	if (r == 0) {
		link = vm_node_new("ld.so", VM_NODE_SYMLINK, 0777);
		snprintf(p, sizeof(p), "lib/%s", c.interp_name);
		if (!link || !(link->target = strdup(p))) {
			vm_node_free(link);
			r = vm_error_set(err, ENOMEM, "out of memory");
		} else {
			snprintf(p, sizeof(p), "%s/ld.so", dir);
			r = vm_tree_add(t, p, link, err);
			if (r < 0)
				vm_node_free(link);
		}
	}
	/* The manifest lists image paths: libraries sorted, loader included. */
	for (size_t i = 0; i < c.n_libs + 1 && r == 0; i++) {
		char *s = NULL;

		if (asprintf(&s, "%s/lib/%s", dir,
			     i < c.n_libs ? c.libs[i].name : c.interp_name) <
		    0) {
			r = vm_error_set(err, ENOMEM, "out of memory");
			break;
		}
		libs[n_libs++] = s;
	}
	if (r == 0 &&
	    vm_manifest_add_tool(m, name, launcher, bin_path, libs, n_libs) < 0)
		r = vm_error_set(err, ENOMEM, "out of memory");
out:
	for (size_t i = 0; i < n_libs; i++)
		free((char *)libs[i]);
	free(libs);
	vm_elf_closure_clear(&c);
	return r;
}

char *vm_bundle_default_perf(const char *root)
{
	_cleanup_free_ char *p = NULL, *path = NULL;
	char *save = NULL;

	if (asprintf(&p, "%s/usr/bin/perf", root) >= 0 && access(p, X_OK) == 0)
		return TAKE_PTR(p);
	path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	if (!path)
		return NULL;
	for (char *d = strtok_r(path, ":", &save); d;
	     d = strtok_r(NULL, ":", &save)) {
		char *c = NULL;

		if (asprintf(&c, "%s/perf", d) < 0)
			return NULL;
		if (access(c, X_OK) == 0)
			return c;
		free(c);
	}
	return NULL;
}
