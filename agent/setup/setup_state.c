// SPDX-License-Identifier: Apache-2.0
/*
 * setup_state.c - reading and writing setup's state file with json-c:
 *   {"device": "/dev/vdb", "mountpoint": "/run/vm-tools", "mounted": true,
 *    "created_mountpoint": true, "directories": ["/lib/modules"],
 *    "links": [{"path": "...", "target": "..."}]}
 * The file lives on the guest's /run, written by root; it is still parsed
 * defensively, since undo acts on what it says (and only ever removes
 * links that point into the mountpoint, and empty directories).
 */
#include "agent/setup/setup_state.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <json-c/linkhash.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/cleanup.h"
#include "common/fdio.h"
#include "common/json.h"

void vm_setup_state_clear(struct vm_setup_state *s)
{
	if (s->link_index)
		lh_table_free(s->link_index);
	if (s->dir_index)
		lh_table_free(s->dir_index);
	free(s->device);
	free(s->mountpoint);
	for (size_t i = 0; i < s->n_dirs; i++)
		free(s->dirs[i]);
	free(s->dirs);
	for (size_t i = 0; i < s->n_links; i++) {
		free(s->links[i].path);
		free(s->links[i].target);
	}
	free(s->links);
	memset(s, 0, sizeof(*s));
}

/* The position of key in an index, or SIZE_MAX. */
static size_t find(struct lh_table **index, const char *key)
{
	void *v;

	if (!*index || !lh_table_lookup_ex(*index, key, &v))
		return SIZE_MAX;
	return (size_t)(uintptr_t)v - 1;
}

static int index_put(struct lh_table **index, const char *key, size_t i)
{
	if (!*index && !(*index = lh_kchar_table_new(64, NULL)))
		return -ENOMEM;
	return lh_table_insert(*index, key, (void *)(uintptr_t)(i + 1)) < 0 ?
		       -ENOMEM :
		       0;
}

static int add_dir(struct vm_setup_state *s, const char *dir)
{
	if (find(&s->dir_index, dir) != SIZE_MAX)
		return 0;
	if (vm_grow(s->dirs, &s->cap_dirs, s->n_dirs + 1) < 0)
		return -ENOMEM;
	s->dirs[s->n_dirs] = strdup(dir);
	if (!s->dirs[s->n_dirs] ||
	    index_put(&s->dir_index, s->dirs[s->n_dirs], s->n_dirs) < 0) {
		free(s->dirs[s->n_dirs]);
		return -ENOMEM;
	}
	s->n_dirs++;
	return 0;
}

static int set_link(struct vm_setup_state *s, const char *path,
		    const char *target)
{
	char *t = strdup(target), *p;
	size_t i = find(&s->link_index, path);

	if (!t)
		return -ENOMEM;
	if (i != SIZE_MAX) {
		free(s->links[i].target);
		s->links[i].target = t;
		return 0;
	}
	if (vm_grow(s->links, &s->cap_links, s->n_links + 1) < 0) {
		free(t);
		return -ENOMEM;
	}
	p = strdup(path);
	if (!p || index_put(&s->link_index, p, s->n_links) < 0) {
		free(t);
		free(p);
		return -ENOMEM;
	}
	s->links[s->n_links++] = (struct vm_state_link){ p, t };
	return 0;
}

/* Leaves a hole (path NULL) that compact() closes. */
static void drop_link(struct vm_setup_state *s, const char *path)
{
	size_t i = find(&s->link_index, path);

	if (i == SIZE_MAX)
		return;
	lh_table_delete(s->link_index, path);
	free(s->links[i].path);
	free(s->links[i].target);
	s->links[i].path = s->links[i].target = NULL;
}

/* Close the holes, keeping the order (undo removes links last first). */
static int compact(struct vm_setup_state *s)
{
	size_t w = 0;

	for (size_t i = 0; i < s->n_links; i++)
		if (s->links[i].path)
			s->links[w++] = s->links[i];
	if (w == s->n_links)
		return 0;
	s->n_links = w;
	lh_table_free(s->link_index);
	s->link_index = NULL;
	for (size_t i = 0; i < s->n_links; i++)
		if (index_put(&s->link_index, s->links[i].path, i) < 0)
			return -ENOMEM;
	return 0;
}

int vm_setup_state_merge(struct vm_setup_state *s, const struct vm_journal *j)
{
	for (size_t i = 0; i < j->n; i++) {
		const struct vm_change *c = &j->changes[i];
		int r = 0;

		switch (c->kind) {
		case VM_CHANGE_MKDIR:
			if (s->mountpoint && !strcmp(c->path, s->mountpoint))
				s->created_mountpoint = true;
			else
				r = add_dir(s, c->path);
			break;
		case VM_CHANGE_SYMLINK:
		case VM_CHANGE_RETARGET:
			r = set_link(s, c->path, c->target);
			break;
		case VM_CHANGE_UNLINK:
			drop_link(s, c->path);
			break;
		case VM_CHANGE_MOUNT:
			s->mounted = true;
			break;
		}
		if (r < 0)
			return r;
	}
	return compact(s);
}

static const char *get_string(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static bool get_bool(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) &&
	       json_object_is_type(v, json_type_boolean) &&
	       json_object_get_boolean(v);
}

static int parse(json_object *root, struct vm_setup_state *s)
{
	json_object *arr;
	const char *v;

	if (!json_object_is_type(root, json_type_object))
		return -EINVAL;
	if ((v = get_string(root, "device")) && !(s->device = strdup(v)))
		return -ENOMEM;
	v = get_string(root, "mountpoint");
	if (!v || v[0] != '/')
		return -EINVAL;
	if (!(s->mountpoint = strdup(v)))
		return -ENOMEM;
	s->mounted = get_bool(root, "mounted");
	s->created_mountpoint = get_bool(root, "created_mountpoint");
	if (json_object_object_get_ex(root, "directories", &arr)) {
		if (!json_object_is_type(arr, json_type_array))
			return -EINVAL;
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *d = json_object_array_get_idx(arr, i);
			int r;

			if (!json_object_is_type(d, json_type_string) ||
			    json_object_get_string(d)[0] != '/')
				return -EINVAL;
			r = add_dir(s, json_object_get_string(d));
			if (r < 0)
				return r;
		}
	}
	if (json_object_object_get_ex(root, "links", &arr)) {
		if (!json_object_is_type(arr, json_type_array))
			return -EINVAL;
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			json_object *l = json_object_array_get_idx(arr, i);
			const char *p = get_string(l, "path");
			const char *t = get_string(l, "target");
			int r;

			if (!p || !t || p[0] != '/' || t[0] != '/')
				return -EINVAL;
			r = set_link(s, p, t);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int vm_setup_state_load(const char *path, struct vm_setup_state *s,
			struct vm_error *err)
{
	_cleanup_json_ json_object *root = NULL;
	_cleanup_free_ char *buf = NULL;
	_cleanup_close_ int fd = -1;
	struct stat st;
	long long got;
	int r;

	memset(s, 0, sizeof(*s));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		return vm_error_errno(
			err, errno, "cannot open setup's state file %s", path);
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return vm_error_set(
			err, EINVAL,
			"setup's state file %s is not a regular file; remove it",
			path);
	if ((uint64_t)st.st_size > VM_STATE_MAX_BYTES)
		return vm_error_set(
			err, EFBIG,
			"setup's state file %s is %lld bytes, more than setup ever writes (%u); remove it",
			path, (long long)st.st_size, VM_STATE_MAX_BYTES);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return vm_error_errno(err, ENOMEM, "cannot read %s", path);
	got = vm_read_all(fd, buf, (size_t)st.st_size);
	if (got < 0)
		return vm_error_errno(err, (int)-got, "cannot read %s", path);
	buf[got] = '\0';
	root = json_tokener_parse(buf);
	r = root ? parse(root, s) : -EINVAL;
	if (r < 0) {
		vm_setup_state_clear(s);
		return vm_error_set(
			err, -r == ENOMEM ? ENOMEM : EINVAL,
			"setup's state file %s is damaged; look at what it lists, remove it and run setup again",
			path);
	}
	return 0;
}

static int build(const struct vm_setup_state *s, json_object **out)
{
	json_object *root = json_object_new_object(), *dirs, *links;

	if (!root)
		return -ENOMEM;
	dirs = json_object_new_array();
	links = json_object_new_array();
	json_object_object_add(root, "device",
			       s->device ? json_object_new_string(s->device) :
					   NULL);
	json_object_object_add(root, "mountpoint",
			       json_object_new_string(s->mountpoint));
	json_object_object_add(root, "mounted",
			       json_object_new_boolean(s->mounted));
	json_object_object_add(root, "created_mountpoint",
			       json_object_new_boolean(s->created_mountpoint));
	json_object_object_add(root, "directories", dirs);
	json_object_object_add(root, "links", links);
	if (!dirs || !links) {
		json_object_put(root);
		return -ENOMEM;
	}
	for (size_t i = 0; i < s->n_dirs; i++)
		json_object_array_add(dirs, json_object_new_string(s->dirs[i]));
	for (size_t i = 0; i < s->n_links; i++) {
		json_object *l = json_object_new_object();

		if (!l) {
			json_object_put(root);
			return -ENOMEM;
		}
		json_object_object_add(
			l, "path", json_object_new_string(s->links[i].path));
		json_object_object_add(
			l, "target",
			json_object_new_string(s->links[i].target));
		json_object_array_add(links, l);
	}
	*out = root;
	return 0;
}

int vm_setup_state_save(const char *path, const struct vm_setup_state *s,
			struct vm_error *err)
{
	_cleanup_json_ json_object *root = NULL;
	_cleanup_free_ char *tmp = NULL;
	_cleanup_close_ int fd = -1;
	const char *text;
	size_t len;

	if (build(s, &root) < 0)
		return vm_error_errno(err, ENOMEM, "cannot write %s", path);
	text = json_object_to_json_string_ext(
		root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text || asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0)
		return vm_error_errno(err, ENOMEM, "cannot write %s", path);
	len = strlen(text);
	if (len >= VM_STATE_MAX_BYTES)
		return vm_error_set(
			err, EFBIG,
			"setup's state file %s would be %zu bytes, more than --undo reads (%u); the manifest asks for too many links",
			path, len, VM_STATE_MAX_BYTES);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0644);
	if (fd < 0)
		return vm_error_errno(
			err, errno, "cannot write setup's state file %s", tmp);
	if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 ||
	    fsync(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno ? errno : EIO;

		unlink(tmp);
		return vm_error_errno(
			err, e, "cannot write setup's state file %s", path);
	}
	return 0;
}
