// SPDX-License-Identifier: Apache-2.0
/*
 * manifest.c - reading, validating and writing /.vmtools/manifest.json with
 * json-c.  The reader treats the manifest as untrusted (it comes from a disk
 * image): every field is type-checked and every path validated before the
 * caller sees it.  The writer emits keys in a fixed order and files sorted,
 * so the bytes depend only on the content.
 */
#include "common/manifest.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/base64.h"
#include "common/cleanup.h"
#include "common/fdio.h"
#include "common/json.h"
#include "common/utf8.h"

/* How a path that is not UTF-8 is written: this, then its base64. */
#define BASE64_PREFIX "base64:"
#define BASE64_PREFIX_LEN 7

struct vm_manifest *vm_manifest_new(void)
{
	struct vm_manifest *m = calloc(1, sizeof(*m));

	if (m)
		m->format_version = VM_MANIFEST_FORMAT_VERSION;
	return m;
}

static void tool_clear(struct vm_manifest_tool *t)
{
	free(t->name);
	free(t->path);
	free(t->binary);
	for (size_t i = 0; i < t->n_libraries; i++)
		free(t->libraries[i]);
	free(t->libraries);
}

void vm_manifest_free(struct vm_manifest *m)
{
	if (!m)
		return;
	free(m->kernel_release);
	free(m->arch);
	free(m->label);
	free(m->generator);
	for (size_t i = 0; i < m->n_tools; i++)
		tool_clear(&m->tools[i]);
	free(m->tools);
	for (size_t i = 0; i < m->n_links; i++) {
		free(m->links[i].path);
		free(m->links[i].target);
	}
	free(m->links);
	for (size_t i = 0; i < m->n_files; i++)
		free(m->files[i].path);
	free(m->files);
	free(m);
}

/* Absolute, no empty, "." or ".." component, no trailing slash but "/". */
int vm_manifest_path_valid(const char *path)
{
	const char *p = path;

	if (!path || path[0] != '/')
		return 0;
	if (!strcmp(path, "/"))
		return 1;
	while (*p == '/') {
		const char *c = p + 1, *e = strchrnul(c, '/');
		size_t n = (size_t)(e - c);

		if (n == 0 || n > 255 || (n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		p = e;
	}
	return *p == '\0';
}

int vm_manifest_sha256_valid(const char *hex)
{
	return strspn(hex, "0123456789abcdef") == 2 * VM_SHA256_LEN &&
	       !hex[2 * VM_SHA256_LEN];
}

static int set_str(char **dst, const char *src)
{
	char *c = strdup(src ? src : "");

	if (!c)
		return -ENOMEM;
	free(*dst);
	*dst = c;
	return 0;
}

int vm_manifest_set_info(struct vm_manifest *m, const char *kernel_release,
			 const char *arch, int64_t build_time,
			 const char *label, const char *generator)
{
	m->build_time = build_time;
	if (set_str(&m->kernel_release, kernel_release) < 0 ||
	    set_str(&m->arch, arch) < 0 || set_str(&m->label, label) < 0 ||
	    set_str(&m->generator, generator) < 0)
		return -ENOMEM;
	return 0;
}

int vm_manifest_add_tool(struct vm_manifest *m, const char *name,
			 const char *path, const char *binary,
			 const char *const *libraries, size_t n_libraries)
{
	struct vm_manifest_tool *t;

	if (!vm_manifest_path_valid(path) || !vm_manifest_path_valid(binary))
		return -EINVAL;
	if (vm_grow(m->tools, &m->cap_tools, m->n_tools + 1) < 0)
		return -ENOMEM;
	t = memset(&m->tools[m->n_tools++], 0, sizeof(*t));
	if (set_str(&t->name, name) < 0 || set_str(&t->path, path) < 0 ||
	    set_str(&t->binary, binary) < 0)
		return -ENOMEM;
	t->libraries = calloc(n_libraries + 1, sizeof(char *));
	if (!t->libraries)
		return -ENOMEM;
	for (size_t i = 0; i < n_libraries; i++) {
		if (!vm_manifest_path_valid(libraries[i]))
			return -EINVAL;
		t->libraries[i] = strdup(libraries[i]);
		if (!t->libraries[i])
			return -ENOMEM;
		t->n_libraries++;
	}
	return 0;
}

int vm_manifest_add_link(struct vm_manifest *m, const char *path,
			 const char *target)
{
	struct vm_manifest_link *l;

	if (!vm_manifest_path_valid(path) || !vm_manifest_path_valid(target))
		return -EINVAL;
	if (vm_grow(m->links, &m->cap_links, m->n_links + 1) < 0)
		return -ENOMEM;
	l = memset(&m->links[m->n_links++], 0, sizeof(*l));
	if (set_str(&l->path, path) < 0 || set_str(&l->target, target) < 0)
		return -ENOMEM;
	return 0;
}

int vm_manifest_add_file(struct vm_manifest *m, const char *path,
			 const char sha256_hex[VM_SHA256_HEX_LEN])
{
	struct vm_manifest_file *f;

	if (!vm_manifest_path_valid(path) ||
	    !vm_manifest_sha256_valid(sha256_hex))
		return -EINVAL;
	if (vm_grow(m->files, &m->cap_files, m->n_files + 1) < 0)
		return -ENOMEM;
	f = memset(&m->files[m->n_files++], 0, sizeof(*f));
	memcpy(f->sha256, sha256_hex, VM_SHA256_HEX_LEN);
	return set_str(&f->path, path);
}

static int cmp_file(const void *a, const void *b)
{
	const struct vm_manifest_file *x = a, *y = b;

	return strcmp(x->path, y->path);
}

static int sorted(const struct vm_manifest *m)
{
	for (size_t i = 1; i < m->n_files; i++)
		if (strcmp(m->files[i - 1].path, m->files[i].path) > 0)
			return 0;
	return 1;
}

static int sort_files(struct vm_manifest *m, struct vm_error *err)
{
	if (!sorted(m))
		qsort(m->files, m->n_files, sizeof(*m->files), cmp_file);
	for (size_t i = 1; i < m->n_files; i++)
		if (!strcmp(m->files[i - 1].path, m->files[i].path))
			return vm_error_set(
				err, EINVAL,
				"manifest lists the file %s twice; rebuild the image",
				m->files[i].path);
	return 0;
}

const struct vm_manifest_file *
vm_manifest_find_file(const struct vm_manifest *m, const char *path)
{
	struct vm_manifest_file key = { .path = (char *)path };

	if (!m->n_files)
		return NULL;
	return bsearch(&key, m->files, m->n_files, sizeof(*m->files), cmp_file);
}

/* --- reading --------------------------------------------------------- */

/* A string member that must exist, be a string and hold no NUL byte. */
static int get_string(json_object *obj, const char *key, const char *where,
		      const char **out, struct vm_error *err)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return vm_error_set(
			err, EINVAL,
			"manifest: %s%s must be a string; the image is damaged or not made by vmtools-image",
			where, key);
	*out = json_object_get_string(v);
	if (strlen(*out) != (size_t)json_object_get_string_len(v))
		return vm_error_set(err, EINVAL,
				    "manifest: %s%s contains a NUL byte", where,
				    key);
	/* json-c's own check lets overlong forms (0xc0, 0xc1) through. */
	if (!vm_utf8_valid(*out, strlen(*out)))
		return vm_error_set(
			err, EILSEQ,
			"manifest: %s%s is not UTF-8; the image is damaged or not made by vmtools-image",
			where, key);
	return 0;
}

/*
 * A path as the manifest spells it: itself, or BASE64_PREFIX and the
 * base64 of its bytes when they are not UTF-8 (only then: one spelling
 * per path).  *out is malloc'ed.
 */
static int decode_path(const char *s, size_t len, const char *where,
		       const char *key, char **out, struct vm_error *err)
{
	size_t n;
	int r;

	*out = NULL;
	if (strncmp(s, BASE64_PREFIX, BASE64_PREFIX_LEN)) {
		*out = strndup(s, len);
		return *out ? 0 : vm_error_set(err, ENOMEM, "out of memory");
	}
	r = vm_base64_decode(s + BASE64_PREFIX_LEN, len - BASE64_PREFIX_LEN,
			     out, &n);
	if (r == -ENOMEM)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (r == -ENOENT)
		return vm_error_set(
			err, ENOENT,
			"manifest: %s%s is in base64 and libcrypto cannot be loaded to read it; install libssl3",
			where, key);
	if (r == 0 && (memchr(*out, '\0', n) || vm_utf8_valid(*out, n))) {
		free(*out);
		*out = NULL;
		r = -EINVAL;
	}
	if (r < 0)
		return vm_error_set(
			err, EINVAL,
			"manifest: %s%s \"%.200s\" is not the base64 of a name that is not UTF-8; the image is damaged",
			where, key, s);
	return 0;
}

/* A path member: decoded (decode_path), absolute, no . or .. in it. */
static int get_path(json_object *obj, const char *key, const char *where,
		    char **out, struct vm_error *err)
{
	const char *s;
	int r = get_string(obj, key, where, &s, err);

	if (r == 0)
		r = decode_path(s, strlen(s), where, key, out, err);
	if (r < 0)
		return r;
	if (!vm_manifest_path_valid(*out)) {
		r = vm_error_set(
			err, EINVAL,
			"manifest: %s%s \"%.200s\" is not an absolute path without . or .. components",
			where, key, s);
		free(*out);
		*out = NULL;
	}
	return r;
}

static int get_array(json_object *obj, const char *key, json_object **out,
		     struct vm_error *err)
{
	if (!json_object_object_get_ex(obj, key, out) ||
	    !json_object_is_type(*out, json_type_array))
		return vm_error_set(err, EINVAL,
				    "manifest: \"%s\" must be an array", key);
	return 0;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int parse_tool(struct vm_manifest *m, json_object *t, size_t i,
		      struct vm_error *err)
{
	_cleanup_free_ char *path = NULL, *binary = NULL;
	char **lv = NULL;
	json_object *libs;
	const char *name;
	char where[64];
	size_t n = 0;
	int r;

	snprintf(where, sizeof(where), "tools[%zu].", i);
	if (!json_object_is_type(t, json_type_object))
		return vm_error_set(err, EINVAL,
				    "manifest: tools[%zu] must be an object",
				    i);
	if ((r = get_string(t, "name", where, &name, err)) < 0 ||
	    (r = get_path(t, "path", where, &path, err)) < 0 ||
	    (r = get_path(t, "binary", where, &binary, err)) < 0)
		return r;
	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") ||
	    !strcmp(name, ".."))
		return vm_error_set(
			err, EINVAL,
			"manifest: %sname \"%.100s\" must be a plain file name",
			where, name);
	if (!json_object_object_get_ex(t, "libraries", &libs) ||
	    !json_object_is_type(libs, json_type_array))
		return vm_error_set(err, EINVAL,
				    "manifest: %slibraries must be an array",
				    where);
	lv = calloc(json_object_array_length(libs) + 1, sizeof(*lv));
	if (!lv)
		return vm_error_set(err, ENOMEM, "out of memory");
	for (; n < json_object_array_length(libs); n++) {
		json_object *l = json_object_array_get_idx(libs, n);
		char lw[96];

		snprintf(lw, sizeof(lw), "%slibraries[%zu]", where, n);
		if (!json_object_is_type(l, json_type_string) ||
		    strlen(json_object_get_string(l)) !=
			    (size_t)json_object_get_string_len(l)) {
			r = vm_error_set(
				err, EINVAL,
				"manifest: %s must be an absolute path", lw);
			break;
		}
		r = decode_path(json_object_get_string(l),
				(size_t)json_object_get_string_len(l), lw, "",
				&lv[n], err);
		if (r == 0 && !vm_manifest_path_valid(lv[n]))
			r = vm_error_set(
				err, EINVAL,
				"manifest: %s must be an absolute path", lw);
		if (r < 0)
			break;
	}
	if (r == 0) {
		r = vm_manifest_add_tool(m, name, path, binary,
					 (const char *const *)lv, n);
		if (r < 0)
			r = vm_error_set(err, r, "manifest: %s: out of memory",
					 where);
	}
	free_strv(lv, n + 1);
	return r;
}

static int parse_tools(struct vm_manifest *m, json_object *root,
		       struct vm_error *err)
{
	json_object *arr;
	int r = get_array(root, "tools", &arr, err);

	for (size_t i = 0; r == 0 && i < json_object_array_length(arr); i++)
		r = parse_tool(m, json_object_array_get_idx(arr, i), i, err);
	return r;
}

static int parse_links(struct vm_manifest *m, json_object *root,
		       struct vm_error *err)
{
	json_object *arr;
	int r = get_array(root, "links", &arr, err);

	if (r < 0)
		return r;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *l = json_object_array_get_idx(arr, i);
		_cleanup_free_ char *path = NULL, *target = NULL;
		char where[64];

		snprintf(where, sizeof(where), "links[%zu].", i);
		if (!json_object_is_type(l, json_type_object))
			return vm_error_set(
				err, EINVAL,
				"manifest: links[%zu] must be an object", i);
		if ((r = get_path(l, "path", where, &path, err)) < 0 ||
		    (r = get_path(l, "target", where, &target, err)) < 0)
			return r;
		if (!strcmp(path, "/"))
			return vm_error_set(err, EINVAL,
					    "manifest: %spath must not be /",
					    where);
		r = vm_manifest_add_link(m, path, target);
		if (r < 0)
			return vm_error_set(err, r, "manifest: out of memory");
	}
	return 0;
}

static int parse_files(struct vm_manifest *m, json_object *root,
		       struct vm_error *err)
{
	json_object *files;
	size_t n;

	if (!json_object_object_get_ex(root, "files", &files) ||
	    !json_object_is_type(files, json_type_object))
		return vm_error_set(err, EINVAL,
				    "manifest: \"files\" must be an object");
	n = (size_t)json_object_object_length(files);
	m->files = calloc(n ? n : 1, sizeof(*m->files));
	if (!m->files)
		return -ENOMEM;
	m->cap_files = n ? n : 1;
	json_object_object_foreach(files, key, val)
	{
		const char *hex;
		char *path;
		int r = decode_path(key, strlen(key), "files key ", "", &path,
				    err);

		if (r < 0)
			return r;
		if (!vm_manifest_path_valid(path)) {
			free(path);
			return vm_error_set(
				err, EINVAL,
				"manifest: files key \"%.200s\" is not an absolute path without . or .. components",
				key);
		}
		m->files[m->n_files].path = path;
		if (!json_object_is_type(val, json_type_string) ||
		    !vm_manifest_sha256_valid(
			    hex = json_object_get_string(val))) {
			free(path);
			m->files[m->n_files].path = NULL;
			return vm_error_set(
				err, EINVAL,
				"manifest: files[\"%.200s\"] must be a sha256 of 64 lowercase hex digits",
				key);
		}
		memcpy(m->files[m->n_files].sha256, hex, VM_SHA256_HEX_LEN);
		m->n_files++;
	}
	return sort_files(m, err);
}

int vm_manifest_parse(const char *data, size_t len, struct vm_manifest **out,
		      struct vm_error *err)
{
	_cleanup_manifest_ struct vm_manifest *m = NULL;
	_cleanup_json_ json_object *root = NULL;
	json_tokener *tok;
	enum json_tokener_error jerr;
	const char *kr, *arch, *label, *gen;
	json_object *v;
	size_t end;
	int r;

	*out = NULL;
	if (len > VM_MANIFEST_MAX_BYTES)
		return vm_error_set(
			err, EFBIG,
			"manifest is %zu bytes, more than the %u allowed", len,
			VM_MANIFEST_MAX_BYTES);
	tok = json_tokener_new_ex(32);
	if (!tok)
		return vm_error_set(err, ENOMEM,
				    "out of memory parsing manifest");
	/* The writer never writes other bytes (names: base64). */
	json_tokener_set_flags(tok, JSON_TOKENER_VALIDATE_UTF8);
	root = json_tokener_parse_ex(tok, data, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!root || jerr != json_tokener_success) {
		if (jerr == json_tokener_continue)
			return vm_error_set(
				err, EINVAL,
				"manifest: JSON ends early (truncated image?)");
		return vm_error_set(err, EINVAL,
				    "manifest: invalid JSON at byte %zu: %s",
				    end, json_tokener_error_desc(jerr));
	}
	for (; end < len; end++)
		if (!strchr(" \t\r\n", data[end]))
			return vm_error_set(
				err, EINVAL,
				"manifest: unexpected data after the JSON object at byte %zu",
				end);
	if (!json_object_is_type(root, json_type_object))
		return vm_error_set(
			err, EINVAL,
			"manifest: top level must be a JSON object");
	if (!json_object_object_get_ex(root, "format_version", &v) ||
	    !json_object_is_type(v, json_type_int))
		return vm_error_set(
			err, EINVAL,
			"manifest: format_version must be an integer");
	if (json_object_get_int64(v) != VM_MANIFEST_FORMAT_VERSION)
		return vm_error_set(
			err, EPROTO,
			"manifest: format_version %lld is not supported (this build reads %d); use matching vmtools versions",
			(long long)json_object_get_int64(v),
			VM_MANIFEST_FORMAT_VERSION);
	m = vm_manifest_new();
	if (!m)
		return -ENOMEM;
	if ((r = get_string(root, "kernel_release", "", &kr, err)) < 0 ||
	    (r = get_string(root, "arch", "", &arch, err)) < 0 ||
	    (r = get_string(root, "label", "", &label, err)) < 0 ||
	    (r = get_string(root, "generator", "", &gen, err)) < 0)
		return r;
	if (!kr[0] || strchr(kr, '/') || !strcmp(kr, ".") || !strcmp(kr, ".."))
		return vm_error_set(
			err, EINVAL,
			"manifest: kernel_release \"%.100s\" is not a release name",
			kr);
	if (!json_object_object_get_ex(root, "build_time", &v) ||
	    !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0)
		return vm_error_set(
			err, EINVAL,
			"manifest: build_time must be a non-negative integer");
	r = vm_manifest_set_info(m, kr, arch, json_object_get_int64(v), label,
				 gen);
	if (r < 0)
		return vm_error_set(err, r, "manifest: out of memory");
	if ((r = parse_tools(m, root, err)) < 0 ||
	    (r = parse_links(m, root, err)) < 0 ||
	    (r = parse_files(m, root, err)) < 0)
		return r;
	*out = TAKE_PTR(m);
	return 0;
}

int vm_manifest_load_fd(int fd, const char *name, struct vm_manifest **out,
			struct vm_error *err)
{
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	long long got;

	*out = NULL;
	if (fstat(fd, &st) < 0)
		return vm_error_errno(err, errno, "cannot stat %s", name);
	if (!S_ISREG(st.st_mode))
		return vm_error_set(err, EINVAL,
				    "manifest %s is not a regular file", name);
	if ((uint64_t)st.st_size > VM_MANIFEST_MAX_BYTES)
		return vm_error_set(err, EFBIG,
				    "manifest %s is too large (%lld bytes)",
				    name, (long long)st.st_size);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return vm_error_set(err, ENOMEM, "out of memory reading %s",
				    name);
	got = vm_read_all(fd, buf, (size_t)st.st_size);
	if (got < 0)
		return vm_error_errno(err, (int)-got, "cannot read %s", name);
	return vm_manifest_parse(buf, (size_t)got, out, err);
}

int vm_manifest_load(const char *path, struct vm_manifest **out,
		     struct vm_error *err)
{
	_cleanup_close_ int fd = -1;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return vm_error_errno(err, errno, "cannot open manifest %s",
				      path);
	return vm_manifest_load_fd(fd, path, out, err);
}

/* --- writing --------------------------------------------------------- */

static int add(json_object *obj, const char *key, json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_object_add(obj, key, val) < 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

static int append(json_object *arr, json_object *val)
{
	if (!val)
		return -ENOMEM;
	if (json_object_array_add(arr, val) < 0) {
		json_object_put(val);
		return -ENOMEM;
	}
	return 0;
}

/* A path as the manifest writes it (decode_path reads it back). */
static char *encode_path(const char *path)
{
	_cleanup_free_ char *b = NULL;
	char *s;

	if (vm_utf8_valid(path, strlen(path)))
		return strdup(path);
	if (vm_base64_encode(path, strlen(path), &b) < 0 ||
	    asprintf(&s, BASE64_PREFIX "%s", b) < 0)
		return NULL;
	return s;
}

static json_object *path_json(const char *path)
{
	_cleanup_free_ char *s = encode_path(path);

	return s ? json_object_new_string(s) : NULL;
}

static json_object *tool_json(const struct vm_manifest_tool *t)
{
	_cleanup_json_ json_object *o = json_object_new_object();
	json_object *libs;

	if (!o || add(o, "name", json_object_new_string(t->name)) < 0 ||
	    add(o, "path", path_json(t->path)) < 0 ||
	    add(o, "binary", path_json(t->binary)) < 0)
		return NULL;
	libs = json_object_new_array();
	if (add(o, "libraries", libs) < 0)
		return NULL;
	for (size_t i = 0; i < t->n_libraries; i++)
		if (append(libs, path_json(t->libraries[i])) < 0)
			return NULL;
	return TAKE_PTR(o);
}

static json_object *link_json(const struct vm_manifest_link *l)
{
	_cleanup_json_ json_object *o = json_object_new_object();

	if (!o || add(o, "path", path_json(l->path)) < 0 ||
	    add(o, "target", path_json(l->target)) < 0)
		return NULL;
	return TAKE_PTR(o);
}

size_t vm_manifest_escaped_len(const char *s)
{
	size_t n = 0;

	if (!vm_utf8_valid(s, strlen(s)))
		return BASE64_PREFIX_LEN + (strlen(s) + 2) / 3 * 4;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += strchr("\"\\\b\f\n\r\t", *p) ? 2 : *p < 0x20 ? 6 : 1;
	return n;
}

/*
 * The strings that are not paths are written as they are: refuse one that
 * is not UTF-8 rather than write JSON no parser takes.
 */
static int check_text(const struct vm_manifest *m, struct vm_error *err)
{
	const char *fields[] = { m->kernel_release, m->arch, m->label,
				 m->generator };
	const char *names[] = { "kernel_release", "arch", "label",
				"generator" };

	for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
		if (fields[i] && !vm_utf8_valid(fields[i], strlen(fields[i])))
			return vm_error_set(
				err, EILSEQ,
				"the manifest's %s is not UTF-8; use a name in UTF-8",
				names[i]);
	for (size_t i = 0; i < m->n_tools; i++)
		if (!vm_utf8_valid(m->tools[i].name, strlen(m->tools[i].name)))
			return vm_error_set(
				err, EILSEQ,
				"the tool %s of the manifest has a name that is not UTF-8; rename the binary",
				m->tools[i].path);
	return 0;
}

/* A file's line: `    "PATH": "SHA256",` and a newline. */
#define FILE_LINE_OVERHEAD (4 + 1 + 4 + (VM_SHA256_HEX_LEN - 1) + 1 + 2)

int vm_manifest_serialized_bound(struct vm_manifest *m, size_t n_files,
				 size_t path_bytes, size_t *bound,
				 struct vm_error *err)
{
	_cleanup_free_ char *json = NULL;
	size_t len;
	int r = vm_manifest_serialize(m, &json, &len, err);

	if (r < 0)
		return r;
	*bound = len + path_bytes + n_files * (FILE_LINE_OVERHEAD + 8) + 64;
	return 0;
}

int vm_manifest_serialize(struct vm_manifest *m, char **out, size_t *len,
			  struct vm_error *err)
{
	_cleanup_json_ json_object *root = json_object_new_object();
	json_object *tools, *links, *files;
	const char *s;
	size_t n;
	int r;

	*out = NULL;
	r = sort_files(m, err);
	if (r == 0)
		r = check_text(m, err);
	if (r < 0)
		return r;
	if (!root ||
	    add(root, "format_version",
		json_object_new_int(m->format_version)) < 0 ||
	    add(root, "kernel_release",
		json_object_new_string(m->kernel_release ? m->kernel_release :
							   "")) < 0 ||
	    add(root, "arch", json_object_new_string(m->arch ? m->arch : "")) <
		    0 ||
	    add(root, "build_time", json_object_new_int64(m->build_time)) < 0 ||
	    add(root, "label",
		json_object_new_string(m->label ? m->label : "")) < 0 ||
	    add(root, "generator",
		json_object_new_string(m->generator ? m->generator : "")) < 0)
		goto oom;
	tools = json_object_new_array();
	if (add(root, "tools", tools) < 0)
		goto oom;
	for (size_t i = 0; i < m->n_tools; i++)
		if (append(tools, tool_json(&m->tools[i])) < 0)
			goto oom;
	links = json_object_new_array();
	if (add(root, "links", links) < 0)
		goto oom;
	for (size_t i = 0; i < m->n_links; i++)
		if (append(links, link_json(&m->links[i])) < 0)
			goto oom;
	files = json_object_new_object();
	if (add(root, "files", files) < 0)
		goto oom;
	/*
	 * Sorted and checked unique above, and kept until the object is
	 * freed: no lookup and no copy of a key per file.
	 */
	for (size_t i = 0; i < m->n_files; i++) {
		const char *path = m->files[i].path;
		json_object *v = json_object_new_string_len(
			m->files[i].sha256, VM_SHA256_HEX_LEN - 1);
		_cleanup_free_ char *key = NULL;
		unsigned flags = JSON_C_OBJECT_ADD_KEY_IS_NEW |
				 JSON_C_OBJECT_ADD_CONSTANT_KEY;

		if (!vm_utf8_valid(path, strlen(path))) {
			/* json-c copies a key that is not constant. */
			key = encode_path(path);
			path = key;
			flags = JSON_C_OBJECT_ADD_KEY_IS_NEW;
		}
		if (!v || !path ||
		    json_object_object_add_ex(files, path, v, flags) < 0) {
			json_object_put(v);
			goto oom;
		}
	}
	s = json_object_to_json_string_ext(
		root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
			      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!s)
		goto oom;
	n = strlen(s);
	*out = malloc(n + 2);
	if (!*out)
		goto oom;
	memcpy(*out, s, n);
	(*out)[n] = '\n';
	(*out)[n + 1] = '\0';
	*len = n + 1;
	return 0;
oom:
	return vm_error_set(err, ENOMEM, "out of memory writing the manifest");
}
