// SPDX-License-Identifier: Apache-2.0
/*
 * depmod.c - runs depmod -b on a private staging directory.
 *
 * <staging>/lib/modules/REL holds symlinks to the staged root's entries
 * (kernel/, modules.order, modules.builtin...; depmod follows them), and
 * depmod writes its indexes next to them.  An empty -C directory keeps the
 * host's /etc/depmod.d out of the result, and LC_ALL=C the locale; with the
 * same modules the output is the same bytes.  It runs while the rest of the
 * root is read.
 */
#include "imagebuilder/depmod.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"

extern char **environ;

int vm_depmod_start(const char *root, const char *release, const char *prog,
		    struct vm_depmod *d, struct vm_error *err)
{
	_cleanup_free_ char *src = NULL, *dep = NULL, *conf = NULL, *log = NULL,
			    *path_env = NULL;
	_cleanup_closedir_ DIR *dir = NULL;
	posix_spawn_file_actions_t fa;
	const char *tmp = getenv("TMPDIR");
	struct dirent *e;
	struct stat st;
	int r;

	memset(d, 0, sizeof(*d));
	if (asprintf(&src, "%s/lib/modules/%s", root, release) < 0 ||
	    asprintf(&dep, "%s/modules.dep", src) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0; /* no modules: nothing to index */
	if (stat(dep, &st) == 0)
		return 0; /* the staged tree brings its own */
	if (asprintf(&d->staging, "%s/vmtools-depmod.XXXXXX",
		     tmp && tmp[0] ? tmp : "/tmp") < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (!mkdtemp(d->staging)) {
		r = vm_error_errno(err, errno, "cannot create %s", d->staging);
		free(d->staging);
		d->staging = NULL;
		return r;
	}
	if (asprintf(&d->reldir, "%s/lib/modules/%s", d->staging, release) <
		    0 ||
	    asprintf(&conf, "%s/conf", d->staging) < 0 ||
	    asprintf(&log, "%s/depmod.log", d->staging) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	{
		_cleanup_free_ char *lib = NULL, *mods = NULL;

		if (asprintf(&lib, "%s/lib", d->staging) < 0 ||
		    asprintf(&mods, "%s/lib/modules", d->staging) < 0)
			return vm_error_set(err, ENOMEM, "out of memory");
		if (mkdir(lib, 0755) < 0 || mkdir(mods, 0755) < 0 ||
		    mkdir(d->reldir, 0755) < 0 || mkdir(conf, 0755) < 0)
			return vm_error_errno(err, errno, "cannot create %s",
					      d->reldir);
	}
	dir = opendir(src);
	if (!dir)
		return vm_error_errno(err, errno, "cannot read %s", src);
	while ((e = readdir(dir))) {
		_cleanup_free_ char *from = NULL, *to = NULL;

		if (e->d_name[0] == '.' &&
		    (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
			continue;
		if (asprintf(&from, "%s/%s", src, e->d_name) < 0 ||
		    asprintf(&to, "%s/%s", d->reldir, e->d_name) < 0)
			return vm_error_set(err, ENOMEM, "out of memory");
		/* build/source point to the host: depmod must not look there */
		if (lstat(from, &st) < 0 || S_ISLNK(st.st_mode))
			continue;
		if (symlink(from, to) < 0)
			return vm_error_errno(err, errno, "cannot create %s",
					      to);
	}
	if (asprintf(&path_env, "PATH=%s:/sbin:/usr/sbin:/bin:/usr/bin",
		     getenv("PATH") ? getenv("PATH") : "/usr/bin") < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	{
		char *argv[] = { (char *)prog,	  "-b", d->staging, "-C", conf,
				 (char *)release, NULL };
		char *envp[] = { path_env, "LC_ALL=C", NULL };

		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY,
						 0);
		posix_spawn_file_actions_addopen(
			&fa, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		r = posix_spawnp(&d->pid, prog, &fa, NULL, argv, envp);
		posix_spawn_file_actions_destroy(&fa);
	}
	if (r) {
		d->pid = 0;
		return vm_error_errno(
			err, r,
			"cannot run %s to index the modules (install kmod, or give the staged tree a modules.dep)",
			prog);
	}
	return 0;
}

static const char *const outputs[] = {
	"modules.alias",       "modules.alias.bin", "modules.builtin.alias.bin",
	"modules.builtin.bin", "modules.dep",	    "modules.dep.bin",
	"modules.devname",     "modules.softdep",   "modules.symbols",
	"modules.symbols.bin",
};

static int count_modules(struct vm_node *n, void *ctx)
{
	size_t *count = ctx;

	if (n->type == VM_NODE_REG && strstr(n->name, ".ko"))
		(*count)++;
	return 0;
}

int vm_depmod_reserve(struct vm_depmod *d, struct vm_tree *t,
		      const char *release, struct vm_error *err)
{
	_cleanup_free_ char *rel = NULL;
	struct vm_node *dir;
	size_t modules = 0;
	uint64_t blocks;

	if (!d->pid)
		return 0;
	if (asprintf(&rel, "/lib/modules/%s", release) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	dir = vm_tree_lookup(t, rel, 0, NULL);
	if (!dir || dir->type != VM_NODE_DIR)
		return vm_error_set(err, ENOENT, "%s vanished from the root",
				    rel);
	vm_tree_walk(dir, count_modules, &modules);
	/*
	 * Debian 12's 1,121 modules give 1 MB of indexes (under 900 bytes a
	 * module); reserve 2 KiB a module and 256 KiB, spread over the
	 * files (only the total matters to the allocator).  Should depmod
	 * write more, vm_build() sizes again with the real figures.
	 */
	blocks = ((uint64_t)modules * 2048 + (256 << 10)) / 4096 /
			 ARRAY_SIZE(outputs) +
		 1;
	for (size_t i = 0; i < ARRAY_SIZE(outputs); i++) {
		struct vm_node *n;
		int r;

		if (vm_node_child(dir, outputs[i]))
			continue; /* the staged root has it */
		n = vm_node_new(outputs[i], VM_NODE_REG, 0644);
		if (!n)
			return vm_error_set(err, ENOMEM, "out of memory");
		n->deferred = VM_LATE;
		n->reserve_blocks = blocks;
		r = vm_tree_insert(t, dir, n);
		if (r < 0) {
			vm_node_free(n);
			return vm_error_set(err, r, "cannot add %s/%s", rel,
					    outputs[i]);
		}
	}
	return 0;
}

int vm_depmod_finish(struct vm_depmod *d, struct vm_tree *t,
		     const char *release, struct vm_error *err)
{
	_cleanup_free_ char *rel = NULL;
	struct vm_node *dir;
	int status;

	if (d->pid) {
		while (waitpid(d->pid, &status, 0) < 0)
			if (errno != EINTR)
				return vm_error_errno(err, errno,
						      "waiting for depmod");
		d->pid = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			char msg[512] = "";
			_cleanup_free_ char *log = NULL;
			_cleanup_fclose_ FILE *f = NULL;

			if (asprintf(&log, "%s/depmod.log", d->staging) >= 0 &&
			    (f = fopen(log, "re"))) {
				size_t n = fread(msg, 1, sizeof(msg) - 1, f);

				msg[n] = '\0';
				msg[strcspn(msg, "\n")] = '\0';
			}
			return vm_error_set(
				err, EIO, "depmod failed on lib/modules/%s: %s",
				release, msg[0] ? msg : "no message");
		}
	}
	if (!d->staging)
		return 0;
	if (asprintf(&rel, "/lib/modules/%s", release) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	dir = vm_tree_lookup(t, rel, 0, NULL);
	for (size_t i = 0; dir && i < ARRAY_SIZE(outputs); i++) {
		struct vm_node *n = vm_node_child(dir, outputs[i]);
		_cleanup_free_ char *from = NULL;
		struct stat st;

		if (!n || n->deferred != VM_LATE || n->source)
			continue;
		if (asprintf(&from, "%s/%s", d->reldir, outputs[i]) < 0)
			return vm_error_set(err, ENOMEM, "out of memory");
		if (stat(from, &st) < 0)
			return vm_error_errno(
				err, errno,
				"depmod did not write %s (kmod 28 or newer writes it)",
				outputs[i]);
		n->size = (uint64_t)st.st_size;
		n->source = TAKE_PTR(from);
	}
	return 0;
}

static void remove_tree(const char *path)
{
	_cleanup_closedir_ DIR *dir = opendir(path);
	struct dirent *e;

	if (dir) {
		while ((e = readdir(dir))) {
			_cleanup_free_ char *p = NULL;
			struct stat st;

			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			if (asprintf(&p, "%s/%s", path, e->d_name) < 0)
				continue;
			if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
				remove_tree(p);
			else
				unlink(p);
		}
	}
	rmdir(path);
}

void vm_depmod_cleanup(struct vm_depmod *d)
{
	if (d->pid) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
	if (d->staging)
		remove_tree(d->staging);
	free(d->staging);
	free(d->reldir);
	d->staging = d->reldir = NULL;
}
