// SPDX-License-Identifier: Apache-2.0
/*
 * http_auth.c - the token of --auth-token-file, sent as a Bearer token
 * (API clients) or as the password of Basic authentication (a browser,
 * once its login dialog was given it: the web UI).
 *
 * The token is read once at start-up (surrounding blanks and the final
 * newline trimmed), from a regular file only: a FIFO or a device is
 * refused at once rather than read or waited on.  A request's Authorization header is compared with it
 * in constant time: both sides are hashed first, so neither the contents
 * nor the length of the token leak through timing, and the digests are
 * compared with CRYPTO_memcmp.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/serve/http.h"
#include "common/cleanup.h"
#include "common/sha256.h"

#define TOKEN_FILE_MAX 4096

int vm_http_load_token(const char *path, char **token, bool *loose_mode,
		       struct vm_error *err)
{
	_cleanup_close_ int fd = -1;
	char buf[TOKEN_FILE_MAX + 1];
	size_t n = 0, start = 0;
	struct stat st;
	ssize_t r;

	/*
	 * Opened without blocking, so that a FIFO (or a device) named here
	 * is refused below instead of waiting forever for a writer.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return vm_error_errno(
			err, errno, "cannot read the auth token file %s", path);
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return vm_error_set(
			err, EINVAL,
			"the auth token file %s is not a regular file; put the token in a file readable only by root",
			path);
	*loose_mode = (st.st_mode & 0077) != 0;
	while (n < sizeof(buf)) {
		r = read(fd, buf + n, sizeof(buf) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return vm_error_errno(
				err, errno,
				"cannot read the auth token file %s", path);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > TOKEN_FILE_MAX)
		return vm_error_set(
			err, EINVAL,
			"the auth token file %s is larger than %d bytes; it should hold one token",
			path, TOKEN_FILE_MAX);
	while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
		n--;
	while (start < n && strchr(" \t\r\n", buf[start]))
		start++;
	if (start == n)
		return vm_error_set(
			err, EINVAL,
			"the auth token file %s is empty; put a token in it, e.g. from `openssl rand -hex 32`",
			path);
	for (size_t i = start; i < n; i++)
		if ((unsigned char)buf[i] <= ' ' || buf[i] == 0x7f)
			return vm_error_set(
				err, EINVAL,
				"the auth token in %s contains a blank or control character; use one word, e.g. from `openssl rand -hex 32`",
				path);
	*token = strndup(buf + start, n - start);
	explicit_bzero(buf, sizeof(buf));
	if (!*token)
		return vm_error_set(err, ENOMEM, "out of memory");
	return 0;
}

static bool token_equal(const char *given, const char *token)
{
	char want[VM_SHA256_HEX_LEN], have[VM_SHA256_HEX_LEN];

	/* Refused when the digests cannot be computed (no libcrypto). */
	if (vm_sha256_hex(token, strlen(token), want) < 0 ||
	    vm_sha256_hex(given, strlen(given), have) < 0)
		return false;
	return vm_sha256_hex_equal(want, have) && *given != '\0';
}

bool vm_http_check_bearer(const char *header, const char *token)
{
	const char *given = "";

	if (header && !strncasecmp(header, "Bearer ", 7)) {
		given = header + 7;
		while (*given == ' ')
			given++;
	}
	return token_equal(given, token);
}

bool vm_http_check_password(const char *password, const char *token)
{
	return token_equal(password ? password : "", token);
}
