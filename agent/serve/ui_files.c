// SPDX-License-Identifier: Apache-2.0
/*
 * ui_files.c - reading the web UI's files for GET /ui/... (ui_files.h).
 *
 * The directory may be on the tools disk, whose content anybody who can
 * build an image controls, so nothing in it is trusted: a path must pass
 * a whitelist before it touches the file system (no "..", no dot files, no
 * percent tricks: libmicrohttpd has decoded the URL already), it is opened
 * below the directory by common/beneath.h's opener (a symlink anywhere is
 * refused, not followed), and only a regular file of bounded size is
 * read, opened non-blocking so that a FIFO cannot hang the connection's
 * thread.
 */
#include "agent/serve/ui_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/beneath.h"
#include "common/cleanup.h"
#include "common/ui.h"

#define MAX_SEGMENTS 4
#define MAX_PATH 200

static bool segment_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

bool vm_ui_path_allowed(const char *rel)
{
	size_t segments = 1, len = strlen(rel);

	if (len == 0)
		return true;
	if (len > MAX_PATH)
		return false;
	for (size_t i = 0; i < len; i++) {
		bool starts = i == 0 || rel[i - 1] == '/';

		if (rel[i] == '/') {
			if (starts || ++segments > MAX_SEGMENTS)
				return false;
			continue;
		}
		if (!segment_char(rel[i]) || (starts && rel[i] == '.'))
			return false;
	}
	return rel[len - 1] != '/';
}

static const struct {
	const char *ext;
	const char *type;
} types[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".json", "application/json" },
	{ ".svg", "image/svg+xml" },
	{ ".png", "image/png" },
	{ ".ico", "image/x-icon" },
	{ ".woff2", "font/woff2" },
	{ ".wasm", "application/wasm" },
	{ ".txt", "text/plain; charset=utf-8" },
	{ ".md", "text/plain; charset=utf-8" },
};

const char *vm_ui_content_type(const char *rel)
{
	const char *dot = strrchr(rel, '.'), *slash = strrchr(rel, '/');

	if (!rel[0])
		return types[0].type; /* the page */
	if (!dot || (slash && dot < slash))
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		if (!strcmp(dot, types[i].ext))
			return types[i].type;
	return NULL;
}

bool vm_ui_immutable(const char *rel)
{
	const char *dot = strrchr(rel, '.');
	const char *p;

	/* NAME-XXXXXXXX.EXT, X an upper-case letter or a digit. */
	if (!dot || dot - rel < 10 || dot[-9] != '-')
		return false;
	for (p = dot - 8; p < dot; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

int vm_ui_open_dir(const char *dir, const char *installed,
		   const char *mountpoint, int *fd, struct vm_error *err)
{
	_cleanup_close_ int mfd = -1;
	int r;

	if (dir) {
		*fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (*fd < 0)
			return vm_error_errno(
				err, errno,
				"cannot open the web UI's directory %s (--ui-dir)",
				dir);
		return 0;
	}
	if (installed) {
		*fd = open(installed, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (*fd >= 0)
			return 0;
	}
	if (mountpoint) {
		mfd = open(mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
		r = mfd < 0 ? -errno :
			      vm_open_beneath(mfd, VM_UI_IMAGE_DIR,
					      O_PATH | O_DIRECTORY, 0);
		if (r >= 0) {
			*fd = r;
			return 0;
		}
	}
	return vm_error_set(
		err, ENOENT,
		"the web UI is not installed: neither %s nor %s/%s holds it; install it with the agent (make install), build the tools disk with it (vmtools-image build --ui-dir), or give --ui-dir DIR",
		installed ? installed : "DATADIR/ui",
		mountpoint ? mountpoint : "MOUNTPOINT", VM_UI_IMAGE_DIR);
}

static int read_all(int fd, size_t size, void **data, size_t *len)
{
	char *buf = malloc(size + 1);
	size_t n = 0;
	ssize_t r = 0;

	if (!buf)
		return -ENOMEM;
	while (n < size + 1) {
		r = read(fd, buf + n, size + 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (r < 0 || n != size) { /* changed under us: refuse */
		free(buf);
		return -EIO;
	}
	*data = buf;
	*len = n;
	return 0;
}

int vm_ui_read(int dirfd, const char *rel, void **data, size_t *len,
	       struct vm_error *err)
{
	_cleanup_close_ int fd = -1;
	const char *name = rel[0] ? rel : "index.html";
	struct stat st;
	int r;

	if (!vm_ui_path_allowed(rel) || !vm_ui_content_type(rel))
		return vm_error_set(err, ENOENT, "the web UI has no file %s",
				    rel);
	fd = vm_open_beneath_regular(dirfd, name, 0);
	if (fd == -ELOOP || fd == -ENOTDIR)
		return vm_error_set(
			err, ENOENT,
			"the web UI's %s is reached through a symlink or a file that is not a directory, which it refuses",
			name);
	if (fd < 0 && fd != -EINVAL)
		return vm_error_errno(err, -fd, "the web UI has no file %s",
				      name);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return vm_error_set(err, ENOENT,
				    "the web UI's %s is not a regular file",
				    name);
	if (st.st_size > VM_UI_FILE_MAX)
		return vm_error_set(
			err, ENOENT,
			"the web UI's %s is larger than %d bytes, which it refuses",
			name, VM_UI_FILE_MAX);
	r = read_all(fd, (size_t)st.st_size, data, len);
	if (r == -ENOMEM)
		return vm_error_set(err, ENOMEM, "out of memory");
	if (r < 0)
		return vm_error_set(err, ENOENT,
				    "the web UI's %s changed while it was read",
				    name);
	return 0;
}
