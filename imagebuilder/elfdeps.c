// SPDX-License-Identifier: Apache-2.0
/*
 * elfdeps.c - DT_NEEDED closure with libelf.
 *
 * The search follows ld.so(8) minus the parts that would make the result
 * depend on the build host's state rather than on its installed packages:
 * LD_LIBRARY_PATH is ignored, and instead of /etc/ld.so.cache (a binary
 * cache of ld.so.conf) the standard multiarch directories are searched,
 * which is where Debian's packages put their libraries.
 *
 * A binary of another architecture (perf for an arm64 kernel, packed on
 * an amd64 host) runs with that architecture's loader and libraries, which
 * are not the host's: with a sysroot, every path the binary's own system
 * would look at (the loader, RPATH/RUNPATH entries, the default
 * directories) is looked at beneath it instead, its symlinks resolved as
 * if the sysroot were / (openat2's RESOLVE_IN_ROOT), and never on the host.
 */
#include "imagebuilder/elfdeps.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <linux/openat2.h>
#include <libelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/array.h"
#include "common/cleanup.h"

void vm_elf_info_clear(struct vm_elf_info *info)
{
	free(info->interp);
	for (size_t i = 0; i < info->n_needed; i++)
		free(info->needed[i]);
	free(info->needed);
	free(info->rpath);
	free(info->runpath);
	memset(info, 0, sizeof(*info));
}

static int read_dynamic(Elf *elf, struct vm_elf_info *info)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !sh.sh_entsize)
			return -EINVAL;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(data, (int)i, &dyn))
				return -EINVAL;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RPATH &&
			    dyn.d_tag != DT_RUNPATH)
				continue;
			s = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				return -EINVAL;
			if (dyn.d_tag == DT_NEEDED) {
				if (vm_grow(info->needed, &info->cap_needed,
					    info->n_needed + 1) < 0)
					return -ENOMEM;
				info->needed[info->n_needed] = strdup(s);
				if (!info->needed[info->n_needed])
					return -ENOMEM;
				info->n_needed++;
			} else {
				char **dst = dyn.d_tag == DT_RPATH ?
						     &info->rpath :
						     &info->runpath;

				free(*dst);
				*dst = strdup(s);
				if (!*dst)
					return -ENOMEM;
			}
		}
		return 0;
	}
	return 0; /* static: no dynamic section */
}

int vm_elf_read(const char *path, struct vm_elf_info *info,
		struct vm_error *err)
{
	_cleanup_close_ int fd = -1;
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;
	int r = 0;

	memset(info, 0, sizeof(*info));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return vm_error_set(err, EIO, "libelf is unusable");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return vm_error_errno(err, errno, "cannot open %s", path);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		if (elf)
			elf_end(elf);
		return vm_error_set(
			err, ENOEXEC,
			"%s is not an ELF file; --binary takes an executable",
			path);
	}
	info->elfclass = gelf_getclass(elf);
	info->machine = eh.e_machine;
	if (elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			size_t len;
			const char *raw;

			if (!gelf_getphdr(elf, (int)i, &ph) ||
			    ph.p_type != PT_INTERP)
				continue;
			raw = elf_rawfile(elf, &len);
			if (!raw || ph.p_offset >= len ||
			    ph.p_filesz > len - ph.p_offset || !ph.p_filesz) {
				r = -EINVAL;
				break;
			}
			info->interp =
				strndup(raw + ph.p_offset, (size_t)ph.p_filesz);
			if (!info->interp)
				r = -ENOMEM;
		}
	}
	if (r == 0)
		r = read_dynamic(elf, info);
	elf_end(elf);
	if (r < 0) {
		vm_elf_info_clear(info);
		return vm_error_errno(
			err, r, "cannot read the ELF headers of %s", path);
	}
	return 0;
}

int vm_elf_expand_origin(const char *entry, const char *origin, char *out,
			 size_t size)
{
	size_t o = 0;

	for (const char *p = entry; *p;) {
		const char *rep = NULL;
		size_t skip = 1;

		if (!strncmp(p, "$ORIGIN", 7) &&
		    !(p[7] == '_' || (p[7] >= 'A' && p[7] <= 'Z'))) {
			rep = origin;
			skip = 7;
		} else if (!strncmp(p, "${ORIGIN}", 9)) {
			rep = origin;
			skip = 9;
		}
		if (rep) {
			size_t l = strlen(rep);

			if (o + l >= size)
				return -ENAMETOOLONG;
			memcpy(out + o, rep, l);
			o += l;
		} else {
			if (o + 1 >= size)
				return -ENAMETOOLONG;
			out[o++] = *p;
		}
		p += skip;
	}
	out[o] = '\0';
	return 0;
}

static const char *multiarch(int machine)
{
	switch (machine) {
	case EM_X86_64:
		return "x86_64-linux-gnu";
	case EM_AARCH64:
		return "aarch64-linux-gnu";
	case EM_386:
		return "i386-linux-gnu";
	case EM_RISCV:
		return "riscv64-linux-gnu";
	default:
		return NULL;
	}
}

/* Same class and machine as the binary? (ld.so skips the others.) */
static int compatible(const char *path, const struct vm_elf_info *want)
{
	struct vm_elf_info info;
	int ok;

	if (access(path, R_OK) < 0 || vm_elf_read(path, &info, NULL) < 0)
		return 0;
	ok = info.elfclass == want->elfclass && info.machine == want->machine;
	vm_elf_info_clear(&info);
	return ok;
}

/* Where the objects are looked for: the host, or beneath a sysroot. */
struct search {
	int root_fd; /* the sysroot, O_PATH; -1: the host */
	const char *root;
	char root_real[PATH_MAX]; /* its real path */
};

/* For a kernel (or qemu-user) without openat2 (elfdeps.h). */
int vm_elf_resolve_in_root(const char *root, const char *path, char *out)
{
	char cur[PATH_MAX] = "", rest[PATH_MAX], next[PATH_MAX];
	char host[PATH_MAX * 2], target[PATH_MAX];
	int links = 0;

	if (snprintf(rest, sizeof(rest), "%s", path) >= (int)sizeof(rest))
		return -ENAMETOOLONG;
	while (rest[0]) {
		char *comp = rest, *end;
		size_t len;
		struct stat st;
		ssize_t n;

		while (*comp == '/')
			comp++;
		end = strchr(comp, '/');
		len = end ? (size_t)(end - comp) : strlen(comp);
		if (!len)
			break;
		if (len == 1 && comp[0] == '.') {
			memmove(rest, comp + len, strlen(comp + len) + 1);
			continue;
		}
		if (len == 2 && comp[0] == '.' && comp[1] == '.') {
			char *slash = strrchr(cur, '/');

			if (slash)
				*slash = '\0';
			memmove(rest, comp + len, strlen(comp + len) + 1);
			continue;
		}
		if (snprintf(next, sizeof(next), "%s/%.*s", cur, (int)len,
			     comp) >= (int)sizeof(next))
			return -ENAMETOOLONG;
		snprintf(host, sizeof(host), "%s%s", root, next);
		if (lstat(host, &st) < 0)
			return -errno;
		memmove(rest, comp + len, strlen(comp + len) + 1);
		if (!S_ISLNK(st.st_mode)) {
			memcpy(cur, next, sizeof(cur));
			continue;
		}
		if (++links > 40)
			return -ELOOP;
		n = readlink(host, target, sizeof(target) - 1);
		if (n <= 0)
			return n < 0 ? -errno : -ENOENT;
		target[n] = '\0';
		if (target[0] == '/')
			cur[0] = '\0';
		if (snprintf(next, sizeof(next), "%s/%s", target, rest) >=
		    (int)sizeof(next))
			return -ENAMETOOLONG;
		memcpy(rest, next, sizeof(rest));
	}
	if (snprintf(out, PATH_MAX, "%s%s", root, cur[0] ? cur : "/") >=
	    PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The path a system sees (absolute) as a host path into out, when it is an
 * object of want's class and machine: the host's own file, or with a
 * sysroot the file beneath it that the path names there.  1 when it is.
 */
static int locate(const struct search *s, const char *path,
		  const struct vm_elf_info *want, char *out)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC,
				.resolve = RESOLVE_IN_ROOT |
					   RESOLVE_NO_MAGICLINKS };
	char fd_path[64];
	ssize_t n;
	int fd;

	if (s->root_fd < 0)
		return compatible(path, want) && realpath(path, out);
	fd = (int)syscall(SYS_openat2, s->root_fd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		return vm_elf_resolve_in_root(s->root_real, path, out) == 0 &&
		       compatible(out, want);
	if (fd < 0)
		return 0;
	snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
	n = readlink(fd_path, out, PATH_MAX - 1);
	close(fd);
	if (n <= 0 || n >= PATH_MAX - 1)
		return 0;
	out[n] = '\0';
	return compatible(out, want);
}

/*
 * Look for `name` in a colon-separated list; 1 when found into out.  An
 * entry made of $ORIGIN is a host directory already (the one of an object
 * found before); the others are paths of the binary's system.
 */
static int search_list(const struct search *s, const char *list,
		       const char *origin, const char *name,
		       const struct vm_elf_info *want, char *out)
{
	_cleanup_free_ char *copy = strdup(list);
	char *save = NULL;

	if (!copy)
		return 0;
	for (char *e = strtok_r(copy, ":", &save); e;
	     e = strtok_r(NULL, ":", &save)) {
		char dir[PATH_MAX], cand[PATH_MAX];

		if (vm_elf_expand_origin(e, origin, dir, sizeof(dir)) < 0)
			continue;
		if ((size_t)snprintf(cand, sizeof(cand), "%s/%s", dir, name) >=
		    sizeof(cand))
			continue;
		if (strstr(e, "ORIGIN") ?
			    compatible(cand, want) && realpath(cand, out) :
			    locate(s, cand, want, out))
			return 1;
	}
	return 0;
}

void vm_elf_closure_clear(struct vm_elf_closure *c)
{
	free(c->interp);
	free(c->interp_name);
	for (size_t i = 0; i < c->n_libs; i++) {
		free(c->libs[i].name);
		free(c->libs[i].path);
	}
	free(c->libs);
	memset(c, 0, sizeof(*c));
}

/*
 * The objects whose DT_NEEDED are still to be read, breadth first: the
 * binary, then each library in the order it was found.
 */
struct object_queue {
	char **paths; /* resolved */
	size_t head, tail, cap;
};

static void object_queue_free(struct object_queue *q)
{
	for (size_t i = 0; i < q->tail; i++)
		free(q->paths[i]);
	free(q->paths);
}

static int object_queue_push(struct object_queue *q, const char *path,
			     struct vm_error *err)
{
	if (vm_grow(q->paths, &q->cap, q->tail + 1) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	q->paths[q->tail] = strdup(path);
	if (!q->paths[q->tail])
		return vm_error_set(err, ENOMEM, "out of memory");
	q->tail++;
	return 0;
}

/*
 * Where a library is looked for last, as one colon-separated list: the
 * caller's dirs, or the standard directories of the binary's machine
 * (what ld.so.cache would list on Debian, without depending on it).
 */
static void default_search_list(const char *const *dirs, int machine, char *out,
				size_t size)
{
	const char *ma = multiarch(machine);

	if (dirs) {
		size_t o = 0;

		out[0] = '\0';
		for (size_t i = 0; dirs[i]; i++)
			o += (size_t)snprintf(out + o, o < size ? size - o : 0,
					      "%s%s", i ? ":" : "", dirs[i]);
	} else if (ma) {
		snprintf(out, size,
			 "/lib/%s:/usr/lib/%s:/lib64:/usr/lib64:/lib:/usr/lib",
			 ma, ma);
	} else {
		snprintf(out, size, "/lib64:/usr/lib64:/lib:/usr/lib");
	}
}

/* The loader goes into the bundle by its file name, apart from the libs. */
static int find_loader(const struct search *s, const char *binary,
		       const struct vm_elf_info *bin,
		       struct vm_elf_closure *out, struct vm_error *err)
{
	const char *interp = bin->interp;
	const char *slash = strrchr(interp, '/');
	char ip[PATH_MAX];

	if (s->root_fd >= 0 && !locate(s, interp, bin, ip))
		return vm_error_set(
			err, ENOENT,
			"%s needs the loader %s, which the sysroot %s does not have; unpack the C library's package of the binary's architecture into it, or name the directory that has it with --sysroot",
			binary, interp, s->root);
	if (s->root_fd < 0 && !realpath(interp, ip))
		return vm_error_errno(
			err, errno,
			"%s needs the loader %s, which this host does not have",
			binary, interp);
	out->interp = strdup(ip);
	out->interp_name = strdup(slash ? slash + 1 : interp);
	if (!out->interp || !out->interp_name)
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/* Already in the closure: a library found before, or the loader itself. */
static int have_lib(const struct vm_elf_closure *c, const char *name)
{
	if (c->interp_name && !strcmp(name, c->interp_name))
		return 1;
	for (size_t i = 0; i < c->n_libs; i++)
		if (!strcmp(c->libs[i].name, name))
			return 1;
	return 0;
}

/*
 * ld.so's order for one name that obj needs: a name with a slash as a
 * path; obj's DT_RPATH unless it has a DT_RUNPATH; the binary's DT_RPATH
 * unless either has a DT_RUNPATH; obj's DT_RUNPATH; the default list.
 * 1 when found, into found.
 */
static int find_lib(const struct search *s, const char *name,
		    const struct vm_elf_info *obj, const char *origin,
		    const struct vm_elf_info *bin, const char *defaults,
		    char *found)
{
	if (strchr(name, '/') && locate(s, name, bin, found))
		return 1;
	if (obj->rpath && !obj->runpath &&
	    search_list(s, obj->rpath, origin, name, bin, found))
		return 1;
	if (bin->rpath && !bin->runpath && !obj->runpath &&
	    search_list(s, bin->rpath, origin, name, bin, found))
		return 1;
	if (obj->runpath &&
	    search_list(s, obj->runpath, origin, name, bin, found))
		return 1;
	return search_list(s, defaults, origin, name, bin, found);
}

static int add_lib(struct vm_elf_closure *out, const char *name,
		   const char *found, struct vm_error *err)
{
	struct vm_elf_lib *libs;

	if (vm_grow(out->libs, &out->cap_libs, out->n_libs + 1) < 0)
		return vm_error_set(err, ENOMEM, "out of memory");
	libs = out->libs;
	libs[out->n_libs].name = strdup(name);
	libs[out->n_libs].path = strdup(found);
	out->n_libs++;
	if (!libs[out->n_libs - 1].name || !libs[out->n_libs - 1].path)
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}

/*
 * Add to the closure each library the object at path needs that it does
 * not have yet, and queue those libraries for their own needs.
 */
static int add_needed(const struct search *s, const char *path,
		      const struct vm_elf_info *bin, const char *defaults,
		      struct vm_elf_closure *out, struct object_queue *q,
		      struct vm_error *err)
{
	struct vm_elf_info info;
	char origin[PATH_MAX];
	char *slash;
	int r;

	r = vm_elf_read(path, &info, err);
	if (r < 0)
		return r;
	/* $ORIGIN: the directory of the object whose search paths say it. */
	snprintf(origin, sizeof(origin), "%s", path);
	slash = strrchr(origin, '/');
	if (slash && slash != origin)
		*slash = '\0';
	for (size_t i = 0; i < info.n_needed && r == 0; i++) {
		const char *name = info.needed[i];
		char found[PATH_MAX];

		if (have_lib(out, name))
			continue;
		if (!find_lib(s, name, &info, origin, bin, defaults, found)) {
			if (s->root_fd >= 0)
				r = vm_error_set(
					err, ENOENT,
					"%s needs %s, which is not in the sysroot %s (searched its RUNPATH/RPATH and %s beneath it); unpack the package of the binary's architecture that provides it into the sysroot",
					path, name, s->root, defaults);
			else
				r = vm_error_set(
					err, ENOENT,
					"%s needs %s, which is not installed on this host (searched its RUNPATH/RPATH and %s); install the package that provides it",
					path, name, defaults);
			break;
		}
		r = add_lib(out, name, found, err);
		if (r == 0)
			r = object_queue_push(q, found, err);
	}
	vm_elf_info_clear(&info);
	return r;
}

int vm_elf_closure(const char *binary, const char *const *dirs,
		   const char *sysroot, struct vm_elf_closure *out,
		   struct vm_error *err)
{
	_cleanup_(object_queue_free) struct object_queue q = { 0 };
	struct search s = { .root_fd = -1, .root = sysroot };
	struct vm_elf_info bin;
	char real[PATH_MAX], defaults[1024];
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (!realpath(binary, real))
		return vm_error_errno(err, errno, "cannot find %s", binary);
	if (sysroot) {
		s.root_fd = open(sysroot, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (s.root_fd >= 0 && !realpath(sysroot, s.root_real)) {
			close(s.root_fd);
			s.root_fd = -1;
		}
		if (s.root_fd < 0)
			return vm_error_errno(err, errno,
					      "cannot use the sysroot %s",
					      sysroot);
	}
	r = vm_elf_read(real, &bin, err);
	if (r < 0)
		goto out;
	default_search_list(dirs, bin.machine, defaults, sizeof(defaults));
	if (bin.interp)
		r = find_loader(&s, binary, &bin, out, err);
	if (r == 0)
		r = object_queue_push(&q, real, err);
	/* q.paths may move as libraries are queued; the strings do not. */
	for (; r == 0 && q.head < q.tail; q.head++)
		r = add_needed(&s, q.paths[q.head], &bin, defaults, out, &q,
			       err);
	vm_elf_info_clear(&bin);
	if (r < 0)
		vm_elf_closure_clear(out);
out:
	if (s.root_fd >= 0)
		close(s.root_fd);
	return r;
}
