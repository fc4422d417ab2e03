/* kvcon logs NS/NAME [-c CONTAINER] [-f] [--previous] [--since DUR] [--tail N] [--timestamps]: a container's
 * log, as kubectl logs prints it. A VM or VMI name means its current launcher pod (the pod the VMI runs in
 * now), a pod name the pod itself. The bytes come through the source's provider (pods/log on a cluster, the
 * execution's QEMU and serial logs on the engine), are streamed line by line as they arrive, and every line
 * is display-escaped: no byte from the guest or the cluster reaches the terminal raw. */
#include "cmd/cmd_logs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/session.h"
#include "core/linebuf.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/chain.h"
#include "model/obj.h"

struct logs_args {
	const char *ref;
	const char *container;
	bool follow, previous, timestamps;
	long tail, since;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: kvcon logs NAMESPACE/NAME [-c CONTAINER] [-f] [-p|--previous] [--since DURATION] [--tail N]\n"
		   "                  [--timestamps]\n"
		   "A container's log. NAME is a VM or VMI (its current launcher pod) or a pod. Default container:\n"
		   "compute. On the local engine, compute is QEMU's log of the execution and serial the guest's serial\n"
		   "log. -f follows new lines until the container instance ends; --previous reads the instance before.\n");
}

/* Go's time.ParseDuration for what --since takes (e.g. 30s, 5m, 1h30m); seconds, rounded up; -1 when bad. */
static long parse_duration_s(const char *s)
{
	double total = 0;
	if (*s == '\0')
		return -1;
	while (*s) {
		char *end;
		double v = strtod(s, &end);
		if (end == s || v < 0)
			return -1;
		s = end;
		double mul;
		if (strncmp(s, "ms", 2) == 0)
			mul = 0.001, s += 2;
		else if (*s == 'h')
			mul = 3600, s++;
		else if (*s == 'm')
			mul = 60, s++;
		else if (*s == 's')
			mul = 1, s++;
		else
			return -1;
		total += v * mul;
	}
	long r = (long)total;
	if ((double)r < total)
		r++;
	return r;
}

static const char *optval(int argc, char **argv, int *i, const char *name)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) == 0 && a[n] == '=')
		return a + n + 1;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static int parse(int argc, char **argv, struct logs_args *a)
{
	memset(a, 0, sizeof *a);
	a->tail = -1;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0)
			return 1;
		if (strcmp(s, "-f") == 0 || strcmp(s, "--follow") == 0 || strcmp(s, "--follow=true") == 0) {
			a->follow = true;
		} else if (strcmp(s, "-p") == 0 || strcmp(s, "--previous") == 0 || strcmp(s, "--previous=true") == 0) {
			a->previous = true;
		} else if (strcmp(s, "--timestamps") == 0 || strcmp(s, "--timestamps=true") == 0) {
			a->timestamps = true;
		} else if (strcmp(s, "-c") == 0 || strcmp(s, "--container") == 0 || util_has_prefix(s, "--container=")) {
			a->container = optval(argc, argv, &i, "--container");
			if (a->container == NULL || *a->container == '\0') {
				fprintf(stderr, "error: %s needs a container name\n", s);
				return -1;
			}
		} else if (util_has_prefix(s, "-c") && s[2] != '-') {
			a->container = s + 2;
		} else if (strcmp(s, "--tail") == 0 || util_has_prefix(s, "--tail=")) {
			const char *v = optval(argc, argv, &i, "--tail");
			char *end;
			long t = v ? strtol(v, &end, 10) : 0;
			if (v == NULL || *v == '\0' || *end || t < -1) {
				fprintf(stderr, "error: --tail needs a number of lines (-1: all)\n");
				return -1;
			}
			a->tail = t;
		} else if (strcmp(s, "--since") == 0 || util_has_prefix(s, "--since=")) {
			const char *v = optval(argc, argv, &i, "--since");
			long d = v ? parse_duration_s(v) : -1;
			if (d <= 0) {
				fprintf(stderr, "error: --since needs a duration such as 30s, 5m or 1h\n");
				return -1;
			}
			a->since = d;
		} else if (s[0] == '-' && s[1] != '\0') {
			fprintf(stderr, "error: unknown option '%s' for kvcon logs\n", s);
			return -1;
		} else if (a->ref == NULL) {
			a->ref = s;
		} else {
			fprintf(stderr, "error: unexpected argument '%s' for kvcon logs\n", s);
			return -1;
		}
	}
	if (a->ref == NULL) {
		fprintf(stderr, "error: which VM, VMI or pod? (NAMESPACE/NAME)\n");
		return -1;
	}
	return 0;
}

struct run {
	struct linebuf lb;
	bool ended;
	int status;
	char *message;
};

static void put_line(void *arg, const char *line, size_t len)
{
	(void)arg;
	fwrite(line, 1, len, stdout);
	fputc('\n', stdout);
}

static bool on_data(void *arg, const char *data, size_t len)
{
	struct run *r = arg;
	linebuf_feed(&r->lb, data, len, put_line, r);
	fflush(stdout);
	if (ferror(stdout))
		r->ended = true; /* the reader went away (a closed pipe): stop, no end callback follows */
	return !r->ended;
}

static void on_end(void *arg, int status, const char *message)
{
	struct run *r = arg;
	r->ended = true;
	r->status = status;
	r->message = xstrdup0(message);
}

int cmd_logs(int argc, char **argv)
{
	struct logs_args a;
	int p = parse(argc, argv, &a);
	if (p != 0) {
		usage(p > 0 ? stdout : stderr);
		return p > 0 ? EXIT_OK : EXIT_USAGE;
	}
	struct session s;
	struct run r = { .status = 0 };
	linebuf_init(&r.lb);
	int rc = session_open(&s, "logs", a.ref);
	if (rc != EXIT_OK)
		goto out;
	const char *vm_name;
	char *why = NULL;
	const struct pod *pod = chain_log_pod(s.st, s.src, s.ns, s.name, &vm_name, &why);
	if (pod == NULL) {
		char *e = util_escape_display(why);
		fprintf(stderr, "error: %s\n", e);
		free(e);
		free(why);
		rc = EXIT_API;
		goto out;
	}
	if (s.src->ops == NULL || s.src->ops->open_log == NULL) {
		fprintf(stderr, "error: this source serves no logs\n");
		rc = EXIT_API;
		goto out;
	}
	char *note = NULL;
	const char *container = a.container ? a.container : pod_default_container(pod, &note);
	if (note) { /* kubectl says which container it chose, on stderr */
		char *e = util_escape_display(note);
		fprintf(stderr, "%s\n", e);
		free(e);
		free(note);
	}
	struct log_req req = {
		.ns = s.ns,
		.pod = pod->o.name,
		.vm = vm_name,
		.container = container,
		.follow = a.follow,
		.previous = a.previous,
		.timestamps = a.timestamps,
		.tail_lines = a.tail,
		.since_s = a.since,
	};
	char *err = NULL;
	struct log_stream *ls = s.src->ops->open_log(s.src, &req, on_data, on_end, &r, &err);
	if (ls == NULL) {
		char *e = util_escape_display(err ? err : "refused");
		fprintf(stderr, "error: %s\n", e);
		free(e);
		free(err);
		rc = EXIT_API;
		goto out;
	}
	while (!r.ended && !loop_quitting())
		loop_once(1000);
	linebuf_flush(&r.lb, put_line, &r);
	fflush(stdout);
	if (r.status != 0) {
		char *e = util_escape_display(r.message ? r.message : "the log could not be read");
		fprintf(stderr, "error: %s\n", e);
		free(e);
		rc = EXIT_API;
	}
out:
	free(r.message);
	linebuf_free(&r.lb);
	session_close(&s);
	return rc;
}
