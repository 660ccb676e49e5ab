// SPDX-License-Identifier: Apache-2.0
/*
 * oom_store.c - the OOM reports kept, in memory and in their directory
 * (oom_store.h).
 *
 * Files are named oom-ID.json, and an id begins with the report's Unix
 * time in milliseconds, zero-padded: the oldest is the first by name.
 * Each report in memory carries its JSON and the summary GET /oom lists,
 * both strings: json-c objects are not shared between threads.
 */
#include "agent/oom/oom_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fdio.h"
#include "common/json.h"

#define PREFIX "oom-"
#define SUFFIX ".json"
#define TMP_PREFIX ".tmp-"
/* Files looked at when reading the directory back, at most. */
#define MAX_LISTED 4096

/* The report's fields its summary in GET /oom holds. */
static const char *const summary_keys[] = {
	"id",
	"time",
	"unix_ms",
	"pid",
	"comm",
	"backend_type",
	"query_id",
	"snapshot_source",
	"heaviest_context",
	"heaviest_bytes",
};

struct report {
	char id[VM_OOM_ID_MAX];
	char type[VM_OOM_TYPE_MAX];
	uint64_t unix_ms;
	char *json, *summary;
	size_t len;
};

struct vm_oom_store {
	int dir_fd; /* -1: memory only */
	size_t max_reports, max_bytes;
	pthread_mutex_t lock;
	struct report *v; /* oldest first */
	size_t n, cap;
	uint64_t bytes, dropped, write_errors;
	char last_error[160];
};

bool vm_oom_id_valid(const char *id)
{
	size_t i = 0, digits = 0;

	while (id[i] >= '0' && id[i] <= '9')
		i++;
	if (!i || id[i] != '-')
		return false;
	for (i++; id[i] >= '0' && id[i] <= '9'; i++)
		digits++;
	return digits && !id[i] && i < VM_OOM_ID_MAX;
}

static void report_free(struct report *r)
{
	free(r->json);
	free(r->summary);
}

/* The report's id, time, type and summary from its JSON; -EINVAL. */
static int describe(const char *json, size_t len, struct report *out)
{
	_cleanup_json_ struct json_object *o = NULL, *sum = NULL;
	struct json_tokener *tok = json_tokener_new();
	struct json_object *v;
	const char *s;

	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, json, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    tok->char_offset != (int)len)
		o = (json_object_put(o), NULL);
	json_tokener_free(tok);
	if (!o || !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "id", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !vm_oom_id_valid(json_object_get_string(v)))
		return -EINVAL;
	snprintf(out->id, sizeof(out->id), "%s", json_object_get_string(v));
	if (json_object_object_get_ex(o, "unix_ms", &v))
		out->unix_ms = (uint64_t)json_object_get_int64(v);
	s = json_object_object_get_ex(o, "backend_type", &v) &&
			    json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) :
		    "";
	snprintf(out->type, sizeof(out->type), "%s", s);
	sum = json_object_new_object();
	if (!sum)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(summary_keys) / sizeof(*summary_keys);
	     i++)
		if (json_object_object_get_ex(o, summary_keys[i], &v)) {
			struct json_object *copy = NULL;

			/*
			 * A copy, not json_object_get(): jansson, linked
			 * beside json-c, has a function of that name.
			 */
			if (v && json_object_deep_copy(v, &copy, NULL) < 0)
				return -ENOMEM;
			json_object_object_add(sum, summary_keys[i], copy);
		}
	out->summary = strdup(
		json_object_to_json_string_ext(sum, JSON_C_TO_STRING_PLAIN));
	return out->summary ? 0 : -ENOMEM;
}

static void file_name(char *buf, size_t size, const char *prefix,
		      const char *id)
{
	snprintf(buf, size, "%s" PREFIX "%s" SUFFIX, prefix, id);
}

/* The oldest report let go, from memory and the disk; under the lock. */
static void drop_oldest(struct vm_oom_store *s)
{
	char name[VM_OOM_ID_MAX + 16];

	if (!s->n)
		return;
	if (s->dir_fd >= 0) {
		file_name(name, sizeof(name), "", s->v[0].id);
		unlinkat(s->dir_fd, name, 0);
	}
	s->bytes -= s->v[0].len;
	report_free(&s->v[0]);
	memmove(s->v, s->v + 1, (s->n - 1) * sizeof(*s->v));
	s->n--;
	s->dropped++;
}

/* r appended (taken over), then the oldest dropped past the bounds. */
static int keep(struct vm_oom_store *s, struct report *r)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct report *v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = *r;
	s->bytes += r->len;
	while (s->n > 1 && (s->n > s->max_reports || s->bytes > s->max_bytes))
		drop_oldest(s);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The report files of the directory, oldest first; a crash's leftovers removed. */
static void load(struct vm_oom_store *s, const struct vm_oom_store_config *cfg)
{
	int fd = dup(s->dir_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char *names[MAX_LISTED];
	size_t n = 0;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)) && n < MAX_LISTED) {
		size_t len = strlen(e->d_name);

		if (!strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX))) {
			unlinkat(s->dir_fd, e->d_name, 0);
			continue;
		}
		if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) ||
		    len < strlen(PREFIX) + strlen(SUFFIX) ||
		    strcmp(e->d_name + len - strlen(SUFFIX), SUFFIX))
			continue;
		names[n] = strdup(e->d_name);
		if (names[n])
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		struct report r = { 0 };
		char want[VM_OOM_ID_MAX + 16];
		void *data = NULL;
		size_t len = 0;
		int e2 = vm_read_file_at(s->dir_fd, names[i], VM_OOM_REPORT_MAX,
					 &data, &len);

		if (e2 == 0)
			e2 = describe(data, len, &r);
		if (e2 == 0) {
			file_name(want, sizeof(want), "", r.id);
			if (strcmp(want, names[i]))
				e2 = -EINVAL;
		}
		if (e2 == 0) {
			r.json = data;
			r.len = len;
			data = NULL;
			if (keep(s, &r) < 0)
				report_free(&r);
		} else {
			report_free(&r);
			if (cfg->log)
				cfg->log(
					"oom: passing over %s: %s", names[i],
					e2 == -EINVAL ?
						"not a report, or not named as its id" :
					e2 == -EFBIG ?
						"larger than a report can be" :
						strerror(-e2));
		}
		free(data);
		free(names[i]);
	}
}

int vm_oom_store_open(const struct vm_oom_store_config *cfg,
		      struct vm_oom_store **out, struct vm_error *err)
{
	struct vm_oom_store *s = calloc(1, sizeof(*s));
	struct stat st;

	*out = NULL;
	if (!s)
		return vm_error_set(err, ENOMEM, "out of memory");
	s->dir_fd = -1;
	s->max_reports = cfg->max_reports ? cfg->max_reports :
					    VM_OOM_DEFAULT_REPORTS;
	s->max_bytes = cfg->max_bytes ? cfg->max_bytes : VM_OOM_DEFAULT_BYTES;
	pthread_mutex_init(&s->lock, NULL);
	if (cfg->dir) {
		if (mkdir(cfg->dir, 0700) < 0 && errno != EEXIST) {
			vm_oom_store_close(s);
			return vm_error_errno(
				err, errno,
				"cannot create the OOM reports' directory %s",
				cfg->dir);
		}
		s->dir_fd = open(cfg->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						   O_CLOEXEC);
		if (s->dir_fd < 0) {
			int e = errno;

			vm_oom_store_close(s);
			return vm_error_errno(
				err, e,
				"cannot open the OOM reports' directory %s (it must be a directory, not a symbolic link)",
				cfg->dir);
		}
		if (fstat(s->dir_fd, &st) < 0 || st.st_uid != geteuid() ||
		    (st.st_mode & 022)) {
			vm_oom_store_close(s);
			return vm_error_set(
				err, EPERM,
				"the OOM reports' directory %s is not the agent's own or others may write in it; give it to the agent's user and chmod 700 it",
				cfg->dir);
		}
		load(s, cfg);
	}
	*out = s;
	return 0;
}

void vm_oom_store_close(struct vm_oom_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		report_free(&s->v[i]);
	free(s->v);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int vm_oom_store_add(struct vm_oom_store *s, const char *json, size_t len,
		     struct vm_error *err)
{
	char name[VM_OOM_ID_MAX + 16], tmp[VM_OOM_ID_MAX + 24];
	struct report r = { 0 };
	int e;

	if (len > VM_OOM_REPORT_MAX)
		return vm_error_set(
			err, EINVAL,
			"an OOM report of %zu bytes is past the bound of %u",
			len, VM_OOM_REPORT_MAX);
	e = describe(json, len, &r);
	if (e == 0 && !(r.json = malloc(len + 1)))
		e = -ENOMEM;
	if (e < 0) {
		report_free(&r);
		return vm_error_set(err, -e,
				    e == -ENOMEM ? "out of memory" :
						   "not an OOM report");
	}
	memcpy(r.json, json, len);
	r.json[len] = '\0';
	r.len = len;
	pthread_mutex_lock(&s->lock);
	if (s->dir_fd >= 0) {
		file_name(name, sizeof(name), "", r.id);
		file_name(tmp, sizeof(tmp), TMP_PREFIX, r.id);
		e = vm_write_file_at(s->dir_fd, name, tmp, json, len, NULL);
		if (e < 0) {
			s->write_errors++;
			snprintf(s->last_error, sizeof(s->last_error),
				 "%s could not be written: %s", name,
				 strerror(-e));
		}
	}
	e = keep(s, &r);
	pthread_mutex_unlock(&s->lock);
	if (e < 0) {
		report_free(&r);
		return vm_error_set(err, ENOMEM, "out of memory");
	}
	return 0;
}

int vm_oom_store_get(struct vm_oom_store *s, const char *id, char **json,
		     size_t *len)
{
	int r = -ENOENT;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++) {
		if (strcmp(s->v[i].id, id))
			continue;
		*json = malloc(s->v[i].len + 1);
		r = *json ? 0 : -ENOMEM;
		if (r == 0) {
			memcpy(*json, s->v[i].json, s->v[i].len + 1);
			*len = s->v[i].len;
		}
		break;
	}
	pthread_mutex_unlock(&s->lock);
	return r;
}

char *vm_oom_store_list(struct vm_oom_store *s, size_t *len)
{
	size_t size = 32, at;
	char *out;

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->n; i++)
		size += strlen(s->v[i].summary) + 1;
	out = malloc(size);
	if (out) {
		at = (size_t)sprintf(out, "{\"reports\":[");
		for (size_t i = 0; i < s->n; i++)
			at += (size_t)sprintf(out + at, "%s%s", i ? "," : "",
					      s->v[i].summary);
		at += (size_t)sprintf(out + at, "]}");
		*len = at;
	}
	pthread_mutex_unlock(&s->lock);
	return out;
}

void vm_oom_store_stats(struct vm_oom_store *s, struct vm_oom_store_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&s->lock);
	st->reports = s->n;
	st->bytes = s->bytes;
	st->dropped = s->dropped;
	st->write_errors = s->write_errors;
	snprintf(st->last_error, sizeof(st->last_error), "%s", s->last_error);
	if (s->n) {
		snprintf(st->last_id, sizeof(st->last_id), "%s",
			 s->v[s->n - 1].id);
		st->last_unix_ms = s->v[s->n - 1].unix_ms;
	}
	for (size_t i = 0; i < s->n; i++) {
		size_t k = 0;

		while (k < st->n_types &&
		       strcmp(st->by_type[k].type, s->v[i].type))
			k++;
		if (k == st->n_types) {
			if (k == sizeof(st->by_type) / sizeof(*st->by_type))
				continue;
			memcpy(st->by_type[k].type, s->v[i].type,
			       sizeof(st->by_type[k].type));
			st->n_types++;
		}
		st->by_type[k].n++;
	}
	pthread_mutex_unlock(&s->lock);
}
