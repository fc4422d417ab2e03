/* kvcon logs NS/NAME [-c CONTAINER] [-f] [--previous] [--since DUR] [--tail N] [--timestamps]: a container's
 * log, as kubectl logs prints it. A VM or VMI name means its current launcher pod (the pod the VMI runs in
 * now), a pod name the pod itself. The bytes come through the source's provider (pods/log on a cluster, the
 * execution's QEMU and serial logs on the engine), are streamed line by line as they arrive, and every line
 * is display-escaped: no byte from the guest or the cluster reaches the terminal raw. */
#include "cmd/cmd_logs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/args.h"
#include "cmd/session.h"
#include "core/log.h"
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

/* The flags are the command table's (cmd/cmd.c), parsed by its parser (cmd/args.c). 0, 1 (--help printed), -1
 * (the error printed). */
static int parse(int argc, char **argv, struct logs_args *a)
{
	memset(a, 0, sizeof *a);
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	if (p == ARGS_OK && g.npos != 1) {
		log_eprintf("error: %s\nSee 'kvcon logs --help' for usage.\n",
			    g.npos ? "one VM, VMI or pod at a time" : "which VM, VMI or pod? (NAMESPACE/NAME)");
		p = ARGS_ERR;
	}
	if (p == ARGS_OK) {
		a->ref = g.pos[0];
		a->container = args_get(&g, "--container");
		a->follow = args_bool(&g, "--follow");
		a->previous = args_bool(&g, "--previous");
		a->timestamps = args_bool(&g, "--timestamps");
		long since = args_num(&g, "--since", 0);
		a->since = (since + 999) / 1000; /* seconds, rounded up */
		const char *tail = args_get(&g, "--tail");
		char *end = NULL;
		a->tail = tail ? strtol(tail, &end, 10) : -1;
		if (a->container && *a->container == '\0') {
			log_eprintf("error: --container needs a container name\n");
			p = ARGS_ERR;
		} else if (tail && (*tail == '\0' || *end || a->tail < -1)) {
			log_eprintf("error: --tail needs a number of lines (-1: all)\n");
			p = ARGS_ERR;
		} else if (args_has(&g, "--since") && a->since <= 0) {
			log_eprintf("error: --since needs a duration such as 30s, 5m or 1h\n");
			p = ARGS_ERR;
		}
	}
	args_free(&g);
	return p == ARGS_OK ? 0 : p == ARGS_HELP ? 1 : -1;
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
	if (p != 0)
		return p > 0 ? EXIT_OK : EXIT_USAGE;
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
