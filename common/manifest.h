/* SPDX-License-Identifier: Apache-2.0 */
/*
 * manifest.h - the image manifest, /.vmtools/manifest.json (format 1).
 *
 * vmtools-image writes it, `vmtools-image verify` and the guest's `setup`
 * read it.  The image is untrusted input for the reader, so parsing checks
 * every field: required keys present with the right type, paths absolute
 * and free of "." / ".." components, hashes 64 lowercase hex digits, files
 * sorted and unique.  One reader, one writer, both here (json-c).
 *
 * Schema (docs/image-builder.md describes it for users):
 *   format_version  1
 *   kernel_release  "6.1.0-56-cloud-amd64"
 *   arch            "x86_64"
 *   build_time      seconds since the epoch (= --source-date-epoch)
 *   label, generator
 *   tools           [{name, path (launcher), binary, libraries[]}]
 *   links           [{path (guest path), target (path inside the image)}]
 *   files           {"/abs/path": "sha256 hex", ...} every regular file
 *                   except the manifest itself, sorted by strcmp
 */
#ifndef VMTOOLS_COMMON_MANIFEST_H
#define VMTOOLS_COMMON_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/sha256.h"

#define VM_MANIFEST_FORMAT_VERSION 1
/* Where the manifest lives inside the image. */
#define VM_MANIFEST_PATH "/.vmtools/manifest.json"
/* A manifest larger than this is refused before parsing. */
#define VM_MANIFEST_MAX_BYTES (64u << 20)

struct vm_manifest_tool {
	char *name; /* "perf": what goes on PATH */
	char *path; /* "/bin/perf": the launcher inside the image */
	char *binary; /* "/lib/vmtools/perf/perf": the real executable */
	char **libraries; /* image paths of the bundled libraries + loader */
	size_t n_libraries;
};

struct vm_manifest_link {
	char *path; /* guest path to create, e.g. /lib/modules/REL */
	char *target; /* image path it points to (prefix the mountpoint) */
};

struct vm_manifest_file {
	char *path; /* absolute image path */
	char sha256[VM_SHA256_HEX_LEN];
};

struct vm_manifest {
	int format_version;
	char *kernel_release;
	char *arch;
	int64_t build_time;
	char *label;
	char *generator;
	struct vm_manifest_tool *tools;
	size_t n_tools, cap_tools;
	struct vm_manifest_link *links;
	size_t n_links, cap_links;
	struct vm_manifest_file *files; /* sorted by strcmp of path */
	size_t n_files, cap_files;
};

/* An empty manifest (format 1) to fill with the setters below. */
struct vm_manifest *vm_manifest_new(void);
void vm_manifest_free(struct vm_manifest *m);
static inline void vm_manifest_freep(struct vm_manifest **m)
{
	vm_manifest_free(*m);
}
#define _cleanup_manifest_ __attribute__((cleanup(vm_manifest_freep)))

/* Setters copy their arguments; they return 0 or -ENOMEM / -EINVAL. */
int vm_manifest_set_info(struct vm_manifest *m, const char *kernel_release,
			 const char *arch, int64_t build_time,
			 const char *label, const char *generator);
int vm_manifest_add_tool(struct vm_manifest *m, const char *name,
			 const char *path, const char *binary,
			 const char *const *libraries, size_t n_libraries);
int vm_manifest_add_link(struct vm_manifest *m, const char *path,
			 const char *target);
/* Files may be added in any order; serializing sorts them. */
int vm_manifest_add_file(struct vm_manifest *m, const char *path,
			 const char sha256_hex[VM_SHA256_HEX_LEN]);

/*
 * Parse a manifest from memory (need not be NUL-terminated).  On success
 * *out owns a validated manifest, files sorted.  Errors name the field.
 */
int vm_manifest_parse(const char *data, size_t len, struct vm_manifest **out,
		      struct vm_error *err);
/*
 * Read and parse a manifest file, e.g. <mountpoint>/.vmtools/manifest.json.
 * Opened without blocking (a FIFO or a device is refused, not waited on).
 */
int vm_manifest_load(const char *path, struct vm_manifest **out,
		     struct vm_error *err);

/* The same from fd, open for reading; name is what errors call it. */
int vm_manifest_load_fd(int fd, const char *name, struct vm_manifest **out,
			struct vm_error *err);

/*
 * Bytes a JSON string holds for `s` once escaped by the serializer, at
 * most: quotes, backslashes and \b\f\n\r\t take two, other control
 * characters six.
 */
size_t vm_manifest_escaped_len(const char *s);

/*
 * An upper bound, within 8 bytes a file, of the length of the serialized
 * manifest once `n_files` more files are listed whose paths take
 * `path_bytes` escaped (vm_manifest_escaped_len): the image reserves it
 * before the hashes exist.
 */
int vm_manifest_serialized_bound(struct vm_manifest *m, size_t n_files,
				 size_t path_bytes, size_t *bound,
				 struct vm_error *err);

/*
 * Serialize to pretty-printed JSON with a trailing newline, keys in a fixed
 * order and files sorted, so equal manifests give equal bytes.  *out is
 * malloc'ed and NUL-terminated; *len excludes the NUL.
 */
int vm_manifest_serialize(struct vm_manifest *m, char **out, size_t *len,
			  struct vm_error *err);

/* The entry for an absolute image path, or NULL (binary search). */
const struct vm_manifest_file *
vm_manifest_find_file(const struct vm_manifest *m, const char *path);

/* Checks used by the parser, exposed for the builder and tests. */
int vm_manifest_path_valid(const char *path);
int vm_manifest_sha256_valid(const char *hex);

#endif
