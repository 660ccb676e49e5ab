// SPDX-License-Identifier: Apache-2.0
/*
 * build.c - the build pipeline: read the staged root, index the modules,
 * bundle the tools, check symlinks and compute the guest links, reserve
 * the manifest, write the image to a temporary file next to --output and
 * rename it into place.  Any failure removes the temporary file, so
 * nothing appears at --output.
 */
#include "imagebuilder/build.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <signal.h>
#include <unistd.h>

#include "common/array.h"
#include "common/cleanup.h"
#include "common/manifest.h"
#include "common/ui.h"
#include "imagebuilder/bundle.h"
#include "imagebuilder/depmod.h"
#include "imagebuilder/elfdeps.h"
#include "imagebuilder/links.h"
#include "imagebuilder/walk.h"

/* Looks at the host directory: the release must be known before the walk
 * so that depmod can run while the rest is read. */
static int release_from_root(const char *root, char **out, struct vm_error *err)
{
	_cleanup_free_ char *mods = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	_cleanup_free_ char *found = NULL;
	char list[512] = "";
	size_t count = 0;
	struct dirent *e;

	if (asprintf(&mods, "%s/lib/modules", root) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	d = opendir(mods);
	if (!d)
		return vm_error_set(
			err, ENOENT,
			"%s does not exist, so the kernel release is unknown; stage the kernel's modules there or pass --kernel-release",
			mods);
	while ((e = readdir(d))) {
		_cleanup_free_ char *p = NULL;
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		if (asprintf(&p, "%s/%s", mods, e->d_name) < 0)
			return vm_error_set(err, ENOMEM, "out of memory");
		if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
			continue;
		count++;
		if (strlen(list) + strlen(e->d_name) + 3 < sizeof(list))
			snprintf(list + strlen(list),
				 sizeof(list) - strlen(list), "%s%s",
				 list[0] ? ", " : "", e->d_name);
		free(found);
		found = strdup(e->d_name);
		if (!found)
			return vm_error_set(err, ENOMEM, "out of memory");
	}
	if (count == 0)
		return vm_error_set(
			err, ENOENT,
			"%s holds no kernel release; stage the kernel's modules there or pass --kernel-release",
			mods);
	if (count > 1)
		return vm_error_set(
			err, EINVAL,
			"%s holds several kernel releases (%s); choose one with --kernel-release",
			mods, list);
	*out = TAKE_PTR(found);
	return 0;
}

/* The first kernel module found, to tell the image's architecture. */
static int find_module(struct vm_node *n, void *ctx)
{
	const struct vm_node **found = ctx;
	size_t len = strlen(n->name);

	if (n->type == VM_NODE_REG && n->source && len > 3 &&
	    !strcmp(n->name + len - 3, ".ko")) {
		*found = n;
		return 1;
	}
	return 0;
}

/*
 * The architecture, as `uname -m` says it in the guest: from the machine
 * of the staged kernel's modules (cross builds), else of the build host.
 */
static void image_arch(struct vm_tree *t, const char *release, char *out,
		       size_t size, int *machine)
{
	static const struct {
		int machine;
		const char *name;
	} names[] = {
		{ EM_X86_64, "x86_64" }, { EM_AARCH64, "aarch64" },
		{ EM_386, "i686" },	 { EM_RISCV, "riscv64" },
		{ EM_S390, "s390x" },	 { EM_PPC64, "ppc64le" },
	};
	const struct vm_node *ko = NULL;
	struct vm_elf_info info;
	struct utsname un;
	char mods[300];

	snprintf(mods, sizeof(mods), "/lib/modules/%s", release);
	uname(&un);
	snprintf(out, size, "%s", un.machine);
	*machine = 0;
	if (!vm_tree_lookup(t, mods, 0, NULL))
		return;
	vm_tree_walk(vm_tree_lookup(t, mods, 0, NULL), find_module, &ko);
	if (!ko || vm_elf_read(ko->source, &info, NULL) < 0)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		if (names[i].machine == info.machine)
			snprintf(out, size, "%s", names[i].name);
	*machine = info.machine;
	vm_elf_info_clear(&info);
}

/* A file the manifest lists: its image path and the inode it names. */
struct listed {
	char *path;
	const struct vm_node *ino;
};

struct finish_ctx {
	struct vm_tree *t;
	struct vm_depmod *dm;
	const char *release;
	struct vm_manifest *m;
	struct vm_node *manifest;
	struct listed *files; /* sorted by path */
	size_t n_files, cap_files;
	size_t bound; /* what the manifest may take, reserved */
	char *json;
};

static void clear_listed(struct finish_ctx *c)
{
	for (size_t i = 0; i < c->n_files; i++)
		free(c->files[i].path);
	free(c->files);
	c->files = NULL;
	c->n_files = c->cap_files = 0;
}

static int list_file(struct vm_node *n, void *ctx)
{
	struct finish_ctx *c = ctx;
	const struct vm_node *ino = n->link_to ? n->link_to : n;

	if (ino->type != VM_NODE_REG || n == c->manifest)
		return 0;
	if (vm_grow(c->files, &c->cap_files, c->n_files + 1) < 0)
		return -ENOMEM;
	c->files[c->n_files].path = vm_node_path(n);
	c->files[c->n_files].ino = ino;
	return c->files[c->n_files++].path ? 0 : -ENOMEM;
}

static int cmp_listed(const void *a, const void *b)
{
	return strcmp(((const struct listed *)a)->path,
		      ((const struct listed *)b)->path);
}

/*
 * List the files and reserve room for the manifest before any hash
 * exists: an upper bound of its length, from its other parts serialized
 * now and the paths' lengths.  (Serializing it twice, with placeholder
 * hashes first, would write every file's entry twice.)
 */
static int reserve_manifest(struct finish_ctx *c, struct vm_error *err)
{
	size_t bytes = 0;
	int r;

	clear_listed(c);
	if (vm_tree_walk(c->t->root, list_file, c) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	qsort(c->files, c->n_files, sizeof(*c->files), cmp_listed);
	for (size_t i = 0; i < c->n_files; i++)
		bytes += vm_manifest_escaped_len(c->files[i].path);
	r = vm_manifest_serialized_bound(c->m, c->n_files, bytes, &c->bound,
					 err);
	if (r < 0)
		return r;
	c->manifest->size = 0;
	c->manifest->reserve_blocks =
		(c->bound + VM_BLOCK_SIZE - 1) / VM_BLOCK_SIZE;
	return 0;
}

/* With every other file hashed: list them with their hashes, serialize. */
static int finish(void *ctx, struct vm_error *err)
{
	struct finish_ctx *c = ctx;
	size_t len;
	int r;

	for (size_t i = 0; i < c->m->n_files; i++)
		free(c->m->files[i].path);
	c->m->n_files = 0;
	for (size_t i = 0; i < c->n_files; i++) {
		r = vm_manifest_add_file(c->m, c->files[i].path,
					 c->files[i].ino->sha256);
		if (r == -EINVAL) /* the paths are valid: the hash is not */
			return vm_error_set(err, EIO,
					    "internal: %s was not hashed",
					    c->files[i].path);
		if (r < 0)
			return vm_error_set(err, ENOMEM, "out of memory");
	}
	free(c->json);
	c->json = NULL;
	r = vm_manifest_serialize(c->m, &c->json, &len, err);
	if (r < 0)
		return r;
	if (len > c->bound)
		return vm_error_set(
			err, EIO,
			"internal: manifest is %zu bytes, %zu were reserved",
			len, c->bound);
	c->manifest->size = len;
	c->manifest->data = c->json;
	c->manifest->reserve_blocks = 0;
	return 0;
}

static int newest_mtime(struct vm_node *n, void *ctx)
{
	int64_t *max = ctx;

	/* Files only: unpacking sets directories' mtimes to "now". */
	if (n->type != VM_NODE_DIR && n->mtime != INT64_MAX && n->mtime > *max)
		*max = n->mtime;
	return 0;
}

static int64_t choose_epoch(const struct vm_build_opts *o, struct vm_tree *t,
			    struct vm_error *err)
{
	const char *env = getenv("SOURCE_DATE_EPOCH");
	int64_t max = 0;

	if (o->epoch >= 0)
		return o->epoch;
	if (env && env[0]) {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(env, &end, 10);
		if (errno || *end || v < 0 || v > UINT32_MAX)
			return vm_error_set(
				err, EINVAL,
				"SOURCE_DATE_EPOCH=%s is not a number of seconds between 0 and 4294967295",
				env);
		return v;
	}
	/* Derived from the content: the newest staged mtime. */
	vm_tree_walk(t->root, newest_mtime, &max);
	return max > UINT32_MAX ? UINT32_MAX : max;
}

static int check_output(const char *output, char **tmp, struct vm_error *err)
{
	_cleanup_free_ char *dir = strdup(output);
	char *slash;
	struct stat st;
	int fd;

	if (!dir)
		return vm_error_set(err, ENOMEM, "out of memory");
	slash = strrchr(dir, '/');
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		strcpy(dir, ".");
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return vm_error_set(
			err, ENOENT,
			"the directory of --output %s (%s) does not exist; create it first",
			output, dir);
	if (stat(output, &st) == 0 && S_ISDIR(st.st_mode))
		return vm_error_set(err, EISDIR,
				    "--output %s is a directory; name a file",
				    output);
	if (asprintf(tmp, "%s/.vmtools-image.XXXXXX", dir) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	fd = mkstemp(*tmp);
	if (fd < 0) {
		int e = errno;

		free(*tmp);
		*tmp = NULL;
		return vm_error_errno(err, e, "cannot create a file in %s",
				      dir);
	}
	/* mkstemp makes 0600; an image is an ordinary file for its user. */
	{
		mode_t um = umask(0);

		umask(um);
		fchmod(fd, 0666 & ~um);
	}
	close(fd);
	return 0;
}

/*
 * Each --debug-dir's .build-id/ tree of debug files under
 * VM_DEBUG_BUILD_ID, listed and hashed in the manifest like every file.
 */
static int add_debug_dirs(const struct vm_build_opts *o, struct vm_tree *t,
			  const struct vm_walk_opts *wo, struct vm_error *err)
{
	struct vm_walk_opts merge = *wo;

	merge.merge_dirs = 1; /* several trees share .build-id/xx/ */
	for (size_t i = 0; i < o->n_debug_dirs; i++) {
		_cleanup_free_ char *ids = NULL;
		struct stat st;
		int r;

		if (asprintf(&ids, "%s/.build-id", o->debug_dirs[i]) < 0)
			return vm_error_set(err, ENOMEM, "out of memory");
		if (stat(ids, &st) < 0 || !S_ISDIR(st.st_mode))
			return vm_error_set(
				err, ENOENT,
				"--debug-dir %s has no .build-id directory; name the directory that holds .build-id/ (as /usr/lib/debug does)",
				o->debug_dirs[i]);
		r = vm_walk_into(ids, VM_DEBUG_BUILD_ID, &merge, t, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int build_tree(const struct vm_build_opts *o, const char *root,
		      struct vm_tree *t, struct vm_manifest *m,
		      const char *release, struct vm_depmod *dm,
		      struct vm_error *err)
{
	struct vm_walk_opts wo = { .keep_owner = o->keep_owner };
	struct vm_bundle_from from = { .root = root, .sysroot = o->sysroot };
	char *perf = NULL, arch[65];
	int r;

	/* depmod runs while the root is read and the image written. */
	r = vm_depmod_start(root, release, o->depmod ? o->depmod : "depmod", dm,
			    err);
	if (r == 0)
		r = vm_walk(root, &wo, t, err);
	if (r == 0)
		r = add_debug_dirs(o, t, &wo, err);
	if (r == 0)
		r = vm_depmod_reserve(dm, t, release, err);
	/* Tools are of the kernel's architecture, whatever the host's. */
	if (r == 0)
		image_arch(t, release, arch, sizeof(arch), &from.machine);
	for (size_t i = 0; i < o->n_binaries && r == 0; i++)
		r = vm_bundle_add(t, o->binaries[i], &from, m, err);
	if (r == 0 && !o->n_binaries && !o->no_default_perf &&
	    (perf = vm_bundle_default_perf(root)))
		r = vm_bundle_add(t, perf, &from, m, err);
	free(perf);
	if (r == 0 && o->ui_dir)
		r = vm_walk_into(o->ui_dir, "/" VM_UI_IMAGE_DIR, &wo, t, err);
	if (r == 0 && !vm_node_child(t->root, "lost+found")) {
		/* e2fsck expects it; mke2fs makes it the same way. */
		struct vm_node *lf =
			vm_node_new("lost+found", VM_NODE_DIR, 0700);

		if (!lf || vm_tree_insert(t, t->root, lf) < 0) {
			vm_node_free(lf);
			r = vm_error_set(err, ENOMEM, "out of memory");
		}
	}
	if (r == 0)
		r = vm_links_compute(t, release, m, err);
	return r;
}

static int late(void *ctx, struct vm_error *err)
{
	struct finish_ctx *c = ctx;

	return vm_depmod_finish(c->dm, c->t, c->release, err);
}

static int drop_reserve(struct vm_node *n, void *ctx)
{
	(void)ctx;
	n->reserve_blocks = 0;
	return 0;
}

/*
 * Interrupted (Ctrl-C, SIGTERM, SIGHUP): note it; the walk and the writer
 * stop at the next entry and the ordinary error path removes the temporary
 * image and depmod's staging directory.  cmd_build then dies of the signal.
 */
static void on_signal(int sig)
{
	vm_interrupted = sig;
}

static void catch_signals(int on)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		signal(sigs[i], on ? on_signal : SIG_DFL);
}

/* The label the image gets: --label, else "vm-tools". */
static const char *label_of(const struct vm_build_opts *o)
{
	return o->label ? o->label : VM_DEFAULT_LABEL;
}

/* --root as an absolute path, checked to be a directory we can read. */
static int resolve_root(const char *arg, char **root, struct vm_error *err)
{
	struct stat st;

	*root = realpath(arg, NULL);
	if (!*root || stat(*root, &st) < 0)
		return vm_error_errno(
			err, errno,
			"cannot use --root %s (it must be a readable directory)",
			arg);
	if (!S_ISDIR(st.st_mode))
		return vm_error_set(err, ENOTDIR,
				    "--root %s is not a directory", arg);
	if (access(*root, R_OK | X_OK) < 0)
		return vm_error_errno(err, errno, "cannot read --root %s", arg);
	return 0;
}

/* --kernel-release, checked to be a name, else the only one in the root. */
static int choose_release(const struct vm_build_opts *o, const char *root,
			  char **release, struct vm_error *err)
{
	const char *rel = o->kernel_release;
	int r;

	if (!rel) {
		r = release_from_root(root, release, err);
		if (r < 0)
			return r;
	} else if (!rel[0] || strchr(rel, '/') || rel[0] == '.') {
		return vm_error_set(
			err, EINVAL,
			"--kernel-release \"%s\" is not a release name", rel);
	} else {
		*release = strdup(rel);
	}
	if (!*release)
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/*
 * What the manifest says of the image besides its files: release, arch,
 * the build epoch (*epoch, which every time stamp gets) and the label.
 */
static int describe_image(const struct vm_build_opts *o, struct finish_ctx *c,
			  int64_t *epoch, struct vm_error *err)
{
	char arch[65];
	int machine;

	*epoch = choose_epoch(o, c->t, err);
	if (*epoch < 0)
		return (int)*epoch;
	image_arch(c->t, c->release, arch, sizeof(arch), &machine);
	if (vm_manifest_set_info(c->m, c->release, arch, *epoch, label_of(o),
				 "vmtools-image " VMTOOLS_VERSION) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* The manifest's node, written last: its content needs every hash. */
static int add_manifest_node(struct finish_ctx *c, struct vm_error *err)
{
	struct vm_node *mf = vm_node_new("manifest.json", VM_NODE_REG, 0644);
	int r;

	if (!mf)
		return vm_error_set(err, ENOMEM, "out of memory");
	mf->deferred = VM_LAST;
	r = vm_tree_add(c->t, VM_MANIFEST_PATH, mf, err);
	if (r < 0) {
		vm_node_free(mf);
		return r;
	}
	c->manifest = mf;
	return 0;
}

/*
 * Write the image into tmp.  *wo stays the caller's: the read-ahead it
 * starts is stopped by the caller on every path.
 */
static int write_image(const struct vm_build_opts *o, const char *tmp,
		       int64_t epoch, struct finish_ctx *c,
		       struct vm_write_opts *wo, struct vm_write_stats *stats,
		       struct vm_error *err)
{
	int r;

	/* The files are known: read them while the image is laid out. */
	vm_writer_prefetch(c->t, &wo->prefetch);
	r = reserve_manifest(c, err);
	if (r < 0)
		return r;
	wo->label = label_of(o);
	wo->name = o->output;
	wo->epoch = epoch;
	wo->size_bytes = o->size_bytes;
	wo->late = late;
	wo->finish = finish;
	wo->ctx = c;
	r = vm_writer_write(c->t, tmp, wo, stats, err);
	if (r == -ENOSPC && !o->size_bytes && c->dm->staging && !c->dm->pid) {
		/* depmod wrote more than reserved: size again, knowing. */
		vm_error_clear(err);
		vm_tree_walk(c->t->root, drop_reserve, NULL);
		vm_prefetch_stop(wo->prefetch); /* partly taken: read inline */
		wo->prefetch = NULL;
		r = reserve_manifest(c, err);
		if (r == 0)
			r = vm_writer_write(c->t, tmp, wo, stats, err);
	}
	return r;
}

/* Rename the image into place (*tmp is then gone) and say what it holds. */
static int publish(const struct vm_build_opts *o, char **tmp,
		   const struct finish_ctx *c, struct vm_build_result *res,
		   struct vm_error *err)
{
	if (rename(*tmp, o->output) < 0)
		return vm_error_errno(err, errno, "cannot rename %s to %s",
				      *tmp, o->output);
	free(*tmp);
	*tmp = NULL;
	snprintf(res->kernel_release, sizeof(res->kernel_release), "%s",
		 c->release);
	res->n_tools = c->m->n_tools;
	res->n_links = c->m->n_links;
	res->n_files = c->m->n_files;
	return 0;
}

int vm_build(const struct vm_build_opts *o, struct vm_build_result *res,
	     struct vm_error *err)
{
	_cleanup_manifest_ struct vm_manifest *m = vm_manifest_new();
	_cleanup_free_ char *release = NULL, *tmp = NULL, *root = NULL;
	struct finish_ctx fc = { 0 };
	struct vm_write_opts wo = { 0 };
	struct vm_tree t = { 0 };
	struct vm_depmod dm = { 0 };
	int64_t epoch;
	int r;

	memset(res, 0, sizeof(*res));
	if (!m)
		return vm_error_set(err, ENOMEM, "out of memory");
	r = vm_label_check(label_of(o), "--label", err);
	if (r == 0 && (!o->root || !o->output))
		r = vm_error_set(err, EINVAL,
				 "--root and --output are required");
	if (r == 0)
		r = resolve_root(o->root, &root, err);
	if (r == 0)
		r = choose_release(o, root, &release, err);
	/* Caught before the temporary image exists, so none is left. */
	catch_signals(1);
	if (r == 0)
		r = check_output(o->output, &tmp, err);
	if (r < 0) {
		catch_signals(0);
		return r;
	}
	/*
	 * From here a failure falls through to the release at the end,
	 * which removes the temporary image and depmod's staging directory.
	 */
	fc = (struct finish_ctx){
		.t = &t, .dm = &dm, .release = release, .m = m
	};
	r = vm_tree_init(&t);
	if (r == 0)
		r = build_tree(o, root, &t, m, release, &dm, err);
	if (r == 0)
		r = describe_image(o, &fc, &epoch, err);
	if (r == 0)
		r = add_manifest_node(&fc, err);
	if (r == 0)
		r = write_image(o, tmp, epoch, &fc, &wo, &res->stats, err);
	if (r == 0)
		r = publish(o, &tmp, &fc, res, err);
	vm_prefetch_stop(wo.prefetch);
	catch_signals(0);
	if (tmp)
		unlink(tmp);
	vm_depmod_cleanup(&dm);
	free(fc.json);
	clear_listed(&fc);
	vm_tree_free(&t);
	return r;
}
