// SPDX-License-Identifier: Apache-2.0
/*
 * http_access.c - which users of the machine may use the API: root, the
 * user the agent runs as (who may do all the agent does anyway), and the
 * users of --allow-user; and the sentence that refuses the others.
 *
 * The owner of a connection is found by http_peer.c; a connection from
 * outside the machine has none and is not asked here.  Pure but for the
 * user name looked up once when the option is read; unit-tested.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/serve/http.h"

int vm_http_access_add_user(struct vm_http_access *a, const char *user,
			    struct vm_error *err)
{
	struct passwd pw, *found = NULL;
	char buf[4096], *end;
	unsigned long n;
	int r;

	if (a->n_allowed == VM_HTTP_MAX_ALLOWED_USERS)
		return vm_error_set(err, E2BIG, "at most %d --allow-user",
				    VM_HTTP_MAX_ALLOWED_USERS);
	errno = 0;
	n = strtoul(user, &end, 10);
	if (*user >= '0' && *user <= '9' && !*end && !errno && n < (uid_t)-1) {
		a->allowed[a->n_allowed++] = (uid_t)n;
		return 0;
	}
	r = getpwnam_r(user, &pw, buf, sizeof(buf), &found);
	if (!found)
		return vm_error_set(
			err, r ? r : ENOENT,
			"--allow-user '%s' is not a user of this machine; give a user name or a uid",
			user);
	a->allowed[a->n_allowed++] = pw.pw_uid;
	return 0;
}

bool vm_http_access_allows(const struct vm_http_access *a, uid_t uid)
{
	if (uid == 0 || uid == a->self)
		return true;
	for (size_t i = 0; i < a->n_allowed; i++)
		if (a->allowed[i] == uid)
			return true;
	return false;
}

void vm_http_access_refusal(const struct vm_http_access *a, uid_t uid,
			    struct vm_error *err)
{
	char self[48] = "";
	const char *allowed = a->n_allowed ? "the users of --allow-user" : NULL;

	if (a->self != 0)
		snprintf(self, sizeof(self), "uid %u (the agent's own user)",
			 (unsigned)a->self);
	vm_error_set(
		err, EACCES,
		"from inside this machine, only root%s%s%s%s may use this agent, and this connection is from uid %u: send the request as root (e.g. with sudo), or let this user in with `vmtools-agent serve --allow-user %u`",
		*self ? (allowed ? ", " : " and ") : "", self,
		allowed ? " and " : "", allowed ? allowed : "", (unsigned)uid,
		(unsigned)uid);
}
