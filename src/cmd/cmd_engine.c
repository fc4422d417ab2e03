/* `kvcon engine VERB ...`: opens the engine hosts (-c URI, default the embedded driver), waits for their first
 * resync, runs the verb, lets the reconciler converge, then leaves (guests keep running). */
#include "cmd/cmd_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cmd/pullshow.h"
#include "cmd/session.h"
#include "core/buf.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "core/ydoc.h"
#include "cmd/cmd_console.h"
#include "cmd/cmd_vnc.h"
#include "cmd/apisrv.h"
#include "engine/ejson.h"
#include "engine/engine.h"
#include "engine/estream.h"
#include "engine/migrate.h"
#include "engine/oci.h"
#include "kube/http.h"
#include "kube/kconsole.h"
#include "kube/kube.h"
#include "model/columns.h"
#include "model/source.h"
#include "model/store.h"

static struct {
	struct store *st;
	struct source **srcs;
	int nsrcs;
	const char *ns;
} C;

static bool run_until(bool (*cond)(void *), void *arg, uint64_t timeout_ms)
{
	uint64_t until = util_now_ms() + timeout_ms;
	while (!cond(arg)) {
		if (util_now_ms() >= until || loop_quitting())
			return false;
		loop_once(50);
	}
	return true;
}

/* The accelerator notice (KVM unusable, TCG forced), once per machine boot on the command line: a stamp in the
 * state directory holds the boot and the notices shown in it. The dashboard's header always shows it. */
static void notice_once(const struct source *src)
{
	char *boot = util_read_file("/proc/sys/kernel/random/boot_id", NULL);
	char *state = util_state_dir();
	char *stamp = util_path_join(state, "engine-notice-shown");
	/* the notice's kind (its words before the first colon), not its details: "(probed earlier this boot)" */
	char *line = xasprintf("%.*s %s %.*s\n", boot ? (int)strcspn(boot, "\n") : 0, boot ? boot : "", src->name,
			       (int)strcspn(src->notice, ":"), src->notice);
	char *old = util_read_file(stamp, NULL);
	if (old == NULL || strstr(old, line) == NULL) {
		char *e = util_escape_display(src->notice);
		fprintf(stderr, "kvcon: %s: %s\n", src->name, e);
		free(e);
		/* one line per host and kind this boot; an older boot's lines go */
		bool same_boot = old && strncmp(old, line, strcspn(line, " ") + 1) == 0;
		char *text = xasprintf("%s%s", same_boot ? old : "", line);
		util_mkdir_p(state, 0700);
		util_write_file_atomic(stamp, text, strlen(text), 0644);
		free(text);
	}
	free(old);
	free(line);
	free(stamp);
	free(state);
	free(boot);
}

/* Unreadable records, each by its file name on stderr: the service's RecordUnreadable rows carry the file and
 * the reason in their Failure condition. */
static void warn_bad_records(void)
{
	for (int i = 0; i < C.nsrcs; i++) {
		size_t n;
		struct obj *const *vms = store_objs(C.st, C.srcs[i], OBJ_VM, &n);
		for (size_t k = 0; k < n; k++) {
			const struct vm *vm = (const struct vm *)vms[k];
			const struct cond *c = cond_find(vm->conds, vm->nconds, "Failure");
			if (!util_str_eq(vm->printable_status, "RecordUnreadable") || c == NULL || c->message == NULL)
				continue;
			char *e = util_escape_display(c->message);
			log_eprintf("warning: %s/%s: %s (the VM is not managed until the file is fixed or removed)\n",
				    vm->o.ns, vm->o.name, e);
			free(e);
		}
	}
}

static bool idle(void *arg)
{
	(void)arg;
	return engine_idle();
}

static void on_signal(int sig, void *arg)
{
	(void)sig;
	(void)arg;
	loop_quit(130);
}

/* ---- a verb's options, and asynchronous replies ---- */

static void engine_cli_seq_free(struct cli_seq *s)
{
	free(s->opt);
	free(s->val);
	memset(s, 0, sizeof *s);
}

static void seq_add(struct cli_seq *s, const char *opt, const char *val)
{
	s->opt = xreallocarray(s->opt, (size_t)s->n + 1, sizeof *s->opt);
	s->val = xreallocarray(s->val, (size_t)s->n + 1, sizeof *s->val);
	s->opt[s->n] = opt;
	s->val[s->n++] = val;
}

int engine_cli_args(int argc, char **argv, const struct cli_opt *rows, size_t n, const char *what, const char **operand)
{
	for (int i = 1; i < argc; i++) {
		const struct cli_opt *o = NULL;
		for (size_t k = 0; k < n && o == NULL; k++)
			if (strcmp(argv[i], rows[k].name) == 0 && (rows[k].type == CLI_FLAG || i + 1 < argc))
				o = &rows[k];
		if (o == NULL && argv[i][0] != '-' && what && *operand == NULL) {
			*operand = argv[i];
			continue;
		}
		if (o == NULL) {
			log_eprintf("kvcon engine %s: unexpected '%s'\n", argv[0], argv[i]);
			return EXIT_USAGE;
		}
		const char *v = o->type == CLI_FLAG ? NULL : argv[++i];
		switch (o->type) {
		case CLI_FLAG:
			*(bool *)o->dst = true;
			break;
		case CLI_INT:
			*(int *)o->dst = atoi(v);
			break;
		case CLI_ULONG:
			*(unsigned long *)o->dst = strtoul(v, NULL, 10);
			break;
		case CLI_STR:
			*(const char **)o->dst = v;
			break;
		case CLI_SEQ:
			seq_add(o->dst, o->name, v);
			break;
		}
	}
	if (what && *operand == NULL) {
		log_eprintf("kvcon engine %s: %s is required\n", argv[0], what);
		return EXIT_USAGE;
	}
	return 0;
}

void engine_cli_reply(void *reply, int status, const char *msg)
{
	struct cli_reply *r = reply;
	r->done = true;
	r->status = status;
	free(r->msg);
	r->msg = xstrdup0(msg);
}

static int open_engine(void)
{
	struct kvcon_opts *o = opts_global();
	loop_init();
	log_open(o->log);
	log_set_level(o->verbose ? LOG_DEBUG : LOG_INFO);
	log_set_stderr_level(o->verbose ? LOG_INFO : LOG_ERROR + 1);
	loop_signal(SIGINT, on_signal, NULL);
	loop_signal(SIGTERM, on_signal, NULL);
	C.st = store_new();
	C.ns = o->ns ? o->ns : "default";
	/* the hosts open as every verb opens them (cmd/session.c): each ready or failed before the verb runs */
	char *err = NULL;
	C.nsrcs = session_open_engines(C.st, &C.srcs, &err);
	if (C.nsrcs < 0) {
		C.nsrcs = 0;
		char *e = util_escape_display(err);
		log_eprintf("error: %s\n", e);
		free(e);
		free(err);
		return EXIT_API;
	}
	for (int i = 0; i < C.nsrcs; i++)
		if (C.srcs[i]->notice && util_has_prefix(C.srcs[i]->notice, SESSION_DEGRADED)) {
			/* the service's own state (session_service_status): said every time, as get does */
			char *e = util_escape_display(C.srcs[i]->notice);
			log_eprintf("warning: %s\n", e);
			free(e);
		} else if (C.srcs[i]->notice) {
			notice_once(C.srcs[i]);
		}
	return EXIT_OK;
}

static int close_engine(int rc, uint64_t converge_ms)
{
	if (!loop_quitting())
		run_until(idle, NULL, converge_ms);
	engine_close_all();
	loop_once(0); /* deliver what the workers posted last */
	return rc;
}

/* ---- the console and VNC verbs, on engine VMs ---- */

/* Runs the full-screen console or vnc verb on NS/NAME of the engine (engine_only: cmd/session.c resolves the
 * name on the engine hosts only), with the given extra arguments. */
static int delegate(int (*fn)(int, char **), const char *verb, const char *name, int argc, char **argv)
{
	const char *ns = opts_global()->ns ? opts_global()->ns : "default";
	char **av = xcalloc((size_t)argc + 3, sizeof *av);
	int n = 0;
	av[n++] = (char *)verb;
	char *target = xasprintf("%s/%s", ns, name);
	av[n++] = target;
	for (int i = 0; i < argc; i++)
		av[n++] = argv[i];
	opts_global()->engine_only = true;
	int rc = fn(n, av);
	free(target);
	free(av);
	return rc;
}

/* ---- apply ---- */

/* One request to the engine service (a routed source, cmd/session.h), waited for on the loop. */
struct api_wait {
	bool done;
	long status;
	char *body, *msg;
};

static void api_done(void *arg, const struct kube_resp *r)
{
	struct api_wait *w = arg;
	w->done = true;
	w->status = r->status;
	w->body = r->body ? xstrndup(r->body, r->len) : NULL;
	if (r->status < 200 || r->status > 299)
		w->msg = kube_http_error_message(r);
}

static bool api_answered(void *arg)
{
	return ((struct api_wait *)arg)->done;
}

static void api_call(struct source *src, const char *method, const char *path, const char *body,
		     const char *ctype, struct api_wait *w)
{
	memset(w, 0, sizeof *w);
	struct kube_http_req q = { .method = method, .path = path, .body = body, .body_len = body ? strlen(body) : 0,
				   .content_type = ctype, .timeout_ms = 60000, .on_done = api_done, .arg = w };
	struct kube_req *r = kube_http_start(kube_source_http(src), &q);
	if (!run_until(api_answered, w, 70000) && !w->done) {
		kube_http_cancel(r); /* interrupted: no callback into this frame later */
		w->msg = xstrdup("the engine service did not answer");
	}
}

static void api_wait_free(struct api_wait *w)
{
	free(w->body);
	free(w->msg);
}

/* A DNS-1123-like name, safe in an API path. */
static bool path_name(const char *s)
{
	if (s == NULL || *s == '\0' || strlen(s) > 253)
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
			return false;
	return true;
}

static const char *rv_of(json_object *o)
{
	json_object *md, *rv;
	return o && json_object_object_get_ex(o, "metadata", &md) && json_object_object_get_ex(md, "resourceVersion", &rv)
		       ? json_object_get_string(rv) : NULL;
}

/* engine apply through the service: create (POST), else replace the manifest (PUT at the current
 * resourceVersion, as the in-process apply replaces it); "unchanged" when the served object did not change. */
static int apply_via_service(struct source *src, const char *text, size_t len, char **result, char **err,
			     char **out_key)
{
	yaml_document_t doc;
	if (ydoc_load(&doc, text, len, err) < 0)
		return -1;
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	json_object *o = root && root->type == YAML_MAPPING_NODE ? ydoc_json(&doc, root) : NULL;
	yaml_document_delete(&doc);
	json_object *md = NULL, *jn = NULL, *jns = NULL;
	if (o == NULL || !json_object_object_get_ex(o, "metadata", &md) || !json_object_is_type(md, json_type_object) ||
	    !json_object_object_get_ex(md, "name", &jn) || !json_object_is_type(jn, json_type_string)) {
		json_object_put(o);
		*err = xstrdup("metadata.name: Required value");
		return -1;
	}
	if (!json_object_object_get_ex(md, "namespace", &jns) || !json_object_is_type(jns, json_type_string))
		json_object_object_add(md, "namespace", json_object_new_string(C.ns));
	json_object_object_get_ex(md, "namespace", &jns);
	char *name = xstrdup(json_object_get_string(jn)), *ns = xstrdup(json_object_get_string(jns));
	int rc = -1;
	if (!path_name(name) || !path_name(ns)) {
		*err = xasprintf("metadata.name or namespace: Invalid value: must be a DNS-1123 name");
		goto out;
	}
	char *path = kube_object_path(OBJ_VM, ns, name);
	struct api_wait g, w;
	api_call(src, "GET", path, NULL, NULL, &g);
	if (g.status == 404) {
		char *coll = xasprintf("/apis/kubevirt.io/v1/namespaces/%s/virtualmachines", ns);
		const char *body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
		api_call(src, "POST", coll, body, NULL, &w);
		free(coll);
		if (w.status == 201 || w.status == 200) {
			*result = xasprintf("%s created", name);
			*out_key = xasprintf("%s/%s", ns, name);
			rc = 0;
		}
	} else if (g.status == 200) {
		json_object *cur = json_tokener_parse(g.body ? g.body : "");
		const char *rv0 = rv_of(cur);
		if (rv0)
			json_object_object_add(md, "resourceVersion", json_object_new_string(rv0));
		const char *body = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
		api_call(src, "PUT", path, body, NULL, &w);
		if (w.status == 200 || w.status == 201) {
			json_object *now = json_tokener_parse(w.body ? w.body : "");
			const char *rv1 = rv_of(now);
			*result = xasprintf("%s %s", name, rv0 && rv1 && strcmp(rv0, rv1) == 0 ? "unchanged" : "configured");
			*out_key = xasprintf("%s/%s", ns, name);
			json_object_put(now);
			rc = 0;
		}
		json_object_put(cur);
	} else {
		w = g;
		g.body = g.msg = NULL;
	}
	if (rc < 0)
		*err = xstrdup(w.msg ? w.msg : "the engine service refused the manifest");
	api_wait_free(&w);
	api_wait_free(&g);
	free(path);
out:
	free(name);
	free(ns);
	json_object_put(o);
	return rc;
}

/* The VMs an apply through the service stored ("NS/NAME", and whether it was created): the command leaves once
 * their run strategies have acted, as the in-process apply converges before it returns (close_engine). */
struct applied {
	char **keys;
	bool *created;
	int n;
	struct source *src;
};

static bool applied_settled(void *arg)
{
	struct applied *a = arg;
	static const char *const moving[] = { "Starting", "Stopping", "Terminating", "Provisioning", "Migrating",
					      "WaitingForVolumeBinding" };
	for (int i = 0; i < a->n; i++) {
		char *slash = strchr(a->keys[i], '/');
		*slash = '\0';
		const struct vm *v = (const struct vm *)store_find(C.st, a->src, OBJ_VM, a->keys[i], slash + 1);
		*slash = '/';
		if (v == NULL)
			return false;
		const char *ps = v->printable_status ? v->printable_status : "";
		for (size_t k = 0; k < sizeof moving / sizeof moving[0]; k++)
			if (strcmp(ps, moving[k]) == 0)
				return false;
		/* a start the run strategy asks for has not begun yet */
		bool to_run = util_str_eq(v->run_strategy, "Always") ||
			      (a->created[i] &&
			       (util_str_eq(v->run_strategy, "RerunOnFailure") || util_str_eq(v->run_strategy, "Once")));
		if (to_run && strcmp(ps, "Stopped") == 0)
			return false;
	}
	return true;
}

static int cmd_engine_apply(int argc, char **argv)
{
	struct cli_seq f = { 0 };
	const struct cli_opt rows[] = { { "-f", CLI_SEQ, &f }, { "--filename", CLI_SEQ, &f } };
	int rc = engine_cli_args(argc, argv, CLI_ROWS(rows), NULL, NULL);
	if (rc == 0 && f.n == 0) {
		log_eprintf("kvcon engine apply: -f FILE is required\n");
		rc = EXIT_USAGE;
	}
	if (rc == 0)
		rc = open_engine();
	if (rc) {
		engine_cli_seq_free(&f);
		return rc;
	}
	const char **files = f.val;
	struct applied ap = { .src = C.srcs[0] };
	for (int i = 0; i < f.n; i++) {
		size_t len = 0;
		char *text = NULL;
		if (strcmp(files[i], "-") == 0) {
			struct buf b;
			buf_init(&b);
			char tmp[4096];
			ssize_t n;
			while ((n = read(0, tmp, sizeof tmp)) > 0)
				buf_add(&b, tmp, (size_t)n);
			len = b.len;
			text = buf_steal(&b);
		} else
			text = util_read_file(files[i], &len);
		if (text == NULL) {
			log_eprintf("kvcon: %s: %s\n", files[i], strerror(errno));
			rc = EXIT_USAGE;
			continue;
		}
		char *result = NULL, *err = NULL, *key = NULL;
		if (C.srcs[0]->type == SOURCE_KUBE ? apply_via_service(C.srcs[0], text, len, &result, &err, &key) < 0
						   : engine_apply(C.srcs[0], text, len, &result, &err) < 0) {
			/* refused (an invalid manifest, as kubectl's 422): exit 1, nothing stored */
			char *e = util_escape_display(err);
			log_eprintf("error: %s: %s\n", files[i], e);
			free(e);
			rc = EXIT_API;
		} else {
			/* the name as the manifest says: read it back from the store's newest VM */
			printf("virtualmachine %s\n", result);
			if (key) {
				ap.keys = xreallocarray(ap.keys, (size_t)ap.n + 1, sizeof *ap.keys);
				ap.created = xreallocarray(ap.created, (size_t)ap.n + 1, sizeof *ap.created);
				ap.created[ap.n] = result && strstr(result, " created") != NULL;
				ap.keys[ap.n++] = key;
				key = NULL;
			}
		}
		free(key);
		free(result);
		free(err);
		free(text);
	}
	engine_cli_seq_free(&f);
	if (ap.n) {
		fflush(stdout);
		run_until(applied_settled, &ap, 60000);
	}
	for (int i = 0; i < ap.n; i++)
		free(ap.keys[i]);
	free(ap.keys);
	free(ap.created);
	return close_engine(rc, 60000);
}

/* ---- get ---- */

static void esc(char *out, size_t len, const char *s)
{
	util_escape_display_n(s ? s : "", s ? strlen(s) : 0, out, len);
}

/* -o json: the rows of each kind, after kind and source (null for unset strings) */
static const struct ejson_field obj_rows[] = {
	{ "namespace", EJ_STRN, offsetof(struct obj, ns), NULL },
	{ "name", EJ_STRN, offsetof(struct obj, name), NULL },
	{ "uid", EJ_UID, offsetof(struct obj, uid), NULL },
	{ "created", EJ_I64, offsetof(struct obj, created), NULL },
};

static const struct ejson_field cond_rows[] = { /* VMIs show the first three */
	{ "type", EJ_STRN, offsetof(struct cond, type), NULL },
	{ "status", EJ_STRN, offsetof(struct cond, status), NULL },
	{ "reason", EJ_STRN, offsetof(struct cond, reason), NULL },
	{ "message", EJ_STRN, offsetof(struct cond, message), NULL },
};

static const struct ejson_field vm_rows[] = {
	{ "status", EJ_STRN, offsetof(struct vm, printable_status), NULL },
	{ "runStrategy", EJ_STRN, offsetof(struct vm, run_strategy), NULL },
	{ "ready", EJ_BOOL, offsetof(struct vm, ready), NULL },
	{ "generation", EJ_U64, offsetof(struct vm, o.generation), NULL },
};

static void vmi_net_json(json_object *j, const struct vmi *v);

static const struct ejson_field vmi_rows[] = {
	{ "phase", EJ_STRN, offsetof(struct vmi, phase), NULL },
	{ "node", EJ_STRN, offsetof(struct vmi, node), NULL },
	{ "vmUid", EJ_UID, offsetof(struct vmi, vm_uid), NULL },
	{ "softwareEmulation", EJ_BOOL, offsetof(struct vmi, software_emulation), NULL },
};

static const struct ejson_field phase_rows[] = {
	{ "phase", EJ_STRN, offsetof(struct phase_time, phase), NULL },
	{ "at", EJ_I64, offsetof(struct phase_time, at), NULL },
};

static const struct ejson_field pod_rows[] = {
	{ "phase", EJ_STRN, offsetof(struct pod, phase), NULL },
	{ "node", EJ_STRN, offsetof(struct pod, node), NULL },
	{ "vmiUid", EJ_UID, offsetof(struct pod, vmi_uid), NULL },
	{ "pid", EJ_INT, offsetof(struct pod, pid), NULL },
	{ "cmdline", EJ_STRN, offsetof(struct pod, cmdline), NULL },
	{ "logPath", EJ_STRN, offsetof(struct pod, log_path), NULL },
};

static const struct ejson_field container_rows[] = {
	{ "name", EJ_STRN, offsetof(struct container_status, name), NULL },
	{ "state", EJ_STRN, offsetof(struct container_status, state), NULL },
	{ "reason", EJ_STRN, offsetof(struct container_status, reason), NULL },
	{ "message", EJ_STRN, offsetof(struct container_status, message), NULL },
	{ "image", EJ_STRN, offsetof(struct container_status, image), NULL },
	{ "imageID", EJ_STRN, offsetof(struct container_status, image_id), NULL },
};

static const struct ejson_field event_rows[] = {
	{ "type", EJ_STRN, offsetof(struct event, type), NULL },
	{ "reason", EJ_STRN, offsetof(struct event, reason), NULL },
	{ "message", EJ_STRN, offsetof(struct event, message), NULL },
	{ "involvedKind", EJ_STRN, offsetof(struct event, inv_kind), NULL },
	{ "involvedUid", EJ_UID, offsetof(struct event, inv_uid), NULL },
	{ "count", EJ_INT, offsetof(struct event, count), NULL },
	{ "lastTimestamp", EJ_I64, offsetof(struct event, last), NULL },
};

static json_object *obj_json(const struct obj *o)
{
	json_object *j = json_object_new_object();
	json_object_object_add(j, "kind", json_object_new_string(obj_kind_title(o->kind)));
	json_object_object_add(j, "source", o->src->name ? json_object_new_string(o->src->name) : NULL);
	ejson_put(j, o, EJSON_ROWS(obj_rows));
	switch (o->kind) {
	case OBJ_VM: {
		const struct vm *v = (const struct vm *)o;
		ejson_put(j, v, EJSON_ROWS(vm_rows));
		json_object_object_add(j, "conditions",
				       ejson_array(v->conds, sizeof *v->conds, v->nconds, EJSON_ROWS(cond_rows)));
		break;
	}
	case OBJ_VMI: {
		const struct vmi *v = (const struct vmi *)o;
		ejson_put(j, v, EJSON_ROWS(vmi_rows));
		json_object *ph = ejson_array(v->phases, sizeof *v->phases, v->nphases, EJSON_ROWS(phase_rows));
		json_object_object_add(j, "phaseTransitionTimestamps", ph);
		json_object_object_add(j, "conditions", ejson_array(v->conds, sizeof *v->conds, v->nconds, cond_rows, 3));
		vmi_net_json(j, v);
		if (vmi_mig(v)->present)
			json_object_object_add(j, "migrationState", migrate_state_json(vmi_mig(v)));
		break;
	}
	case OBJ_POD: {
		const struct pod *p = (const struct pod *)o;
		ejson_put(j, o, EJSON_ROWS(pod_rows));
		json_object_object_add(j, "containerStatuses", ejson_array(p->containers, sizeof *p->containers,
									   p->ncontainers, EJSON_ROWS(container_rows)));
		break;
	}
	case OBJ_EVENT:
		ejson_put(j, o, EJSON_ROWS(event_rows));
		break;
	case OBJ_KIND_COUNT:
		break;
	}
	return j;
}

static int cmp_obj(const void *a, const void *b)
{
	const struct obj *x = *(const struct obj *const *)a, *y = *(const struct obj *const *)b;
	if (x->kind == OBJ_EVENT) {
		const struct event *ex = (const struct event *)x, *ey = (const struct event *)y;
		if (ex->last != ey->last)
			return ex->last < ey->last ? -1 : 1;
		return 0;
	}
	int c = strcmp(x->ns, y->ns);
	return c ? c : strcmp(x->name, y->name);
}

/* The VMI's addresses (KubeVirt's status.interfaces: name, ipAddress, ipAddresses) and the ports the engine
 * forwards from the host ("ports": interface, name, protocol, port, hostIP, hostPort). */
static void vmi_net_json(json_object *j, const struct vmi *v)
{
	json_object_object_add(j, "ip", v->ip ? json_object_new_string(v->ip) : NULL);
	json_object *ifs = json_object_new_array();
	for (int i = 0; i < v->nips; i++) {
		json_object *f = json_object_new_object(), *all = json_object_new_array();
		if (v->ip_ifaces && v->ip_ifaces[i])
			json_object_object_add(f, "name", json_object_new_string(v->ip_ifaces[i]));
		json_object_object_add(f, "ipAddress", json_object_new_string(v->ips[i]));
		json_object_array_add(all, json_object_new_string(v->ips[i]));
		json_object_object_add(f, "ipAddresses", all);
		/* KubeVirt's field: the address is the one the domain's network hands out, not read from a guest agent */
		json_object_object_add(f, "infoSource", json_object_new_string("domain"));
		json_object_array_add(ifs, f);
	}
	json_object_object_add(j, "interfaces", ifs);
	json_object *ps = json_object_new_array();
	for (int i = 0; i < v->nfwds; i++) {
		const struct port_fwd *f = &v->fwds[i];
		json_object *o = json_object_new_object();
		json_object_object_add(o, "interface", json_object_new_string(f->iface));
		if (f->name)
			json_object_object_add(o, "name", json_object_new_string(f->name));
		json_object_object_add(o, "protocol", json_object_new_string(f->proto));
		json_object_object_add(o, "port", json_object_new_int(f->port));
		json_object_object_add(o, "hostIP", json_object_new_string("127.0.0.1"));
		json_object_object_add(o, "hostPort", json_object_new_int(f->host_port));
		json_object_array_add(ps, o);
	}
	json_object_object_add(j, "ports", ps);
}

static int cmd_engine_get(int argc, char **argv)
{
	enum obj_kind kind = OBJ_VM;
	const char *out = "table", *name = NULL;
	static const struct {
		const char *word;
		enum obj_kind kind;
	} kinds[] = { { "vm", OBJ_VM }, { "vms", OBJ_VM }, { "virtualmachine", OBJ_VM }, { "vmi", OBJ_VMI },
		      { "vmis", OBJ_VMI }, { "pod", OBJ_POD }, { "pods", OBJ_POD }, { "event", OBJ_EVENT },
		      { "events", OBJ_EVENT } };
	bool kind_set = false;
	for (int i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) && i + 1 < argc) {
			out = argv[++i];
			continue;
		}
		if (util_has_prefix(argv[i], "-o")) {
			out = argv[i] + 2;
			continue;
		}
		size_t k;
		for (k = 0; !kind_set && k < sizeof kinds / sizeof kinds[0]; k++)
			if (strcmp(argv[i], kinds[k].word) == 0)
				break;
		if (!kind_set && k < sizeof kinds / sizeof kinds[0]) {
			kind = kinds[k].kind;
			kind_set = true;
		} else if (argv[i][0] != '-' && name == NULL)
			name = argv[i];
		else {
			log_eprintf("kvcon engine get: unexpected '%s'\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	if (strcmp(out, "table") && strcmp(out, "wide") && strcmp(out, "json") && strcmp(out, "name")) {
		log_eprintf("kvcon engine get: -o must be table, wide, json or name\n");
		return EXIT_USAGE;
	}
	int rc = open_engine();
	if (rc)
		return rc;
	/* every kvcon process reconciles: show the state it converged to, not a transition */
	run_until(idle, NULL, 60000);
	warn_bad_records();
	struct obj **all = NULL;
	size_t nall = 0;
	bool all_ns = opts_global()->all_ns;
	for (int s = 0; s < C.nsrcs; s++) {
		size_t n;
		struct obj *const *objs = store_objs(C.st, C.srcs[s], kind, &n);
		for (size_t i = 0; i < n; i++) {
			const struct obj *o = objs[i];
			if (!all_ns && strcmp(o->ns, C.ns) != 0)
				continue;
			if (name && strcmp(o->name, name) != 0 &&
			    !(kind == OBJ_EVENT && strcmp(((const struct event *)o)->inv_name, name) == 0))
				continue;
			all = xreallocarray(all, nall + 1, sizeof *all);
			all[nall++] = (struct obj *)o;
		}
	}
	if (nall > 1)
		qsort(all, nall, sizeof *all, cmp_obj);
	if (strcmp(out, "json") == 0) {
		json_object *arr = json_object_new_array();
		for (size_t i = 0; i < nall; i++)
			json_object_array_add(arr, obj_json(all[i]));
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(arr);
	} else if (strcmp(out, "name") == 0) {
		for (size_t i = 0; i < nall; i++) {
			char n[256];
			esc(n, sizeof n, all[i]->name);
			printf("%s/%s\n", obj_kind_name(kind), n);
		}
	} else {
		if (nall == 0)
			log_eprintf("No resources found in %s namespace.\n", all_ns ? "any" : C.ns);
		/* the kind's columns (model/columns.c), as `kvcon get` and kubectl print them */
		struct columns_print_opts po = { .wide = strcmp(out, "wide") == 0, .all_ns = all_ns, .header = nall > 0 };
		struct col_ctx cc = { .st = C.st, .now = util_wall_s() };
		struct buf b;
		buf_init(&b);
		columns_print(columns_table(kind), (const struct obj *const *)all, nall, &po, &cc, &b);
		if (b.len)
			fwrite(b.data, 1, b.len, stdout);
		buf_free(&b);
	}
	free(all);
	return close_engine(rc, 0);
}

/* ---- actions ---- */

static struct source *source_of_vm(const char *name)
{
	for (int s = 0; s < C.nsrcs; s++)
		if (store_find(C.st, C.srcs[s], OBJ_VM, C.ns, name))
			return C.srcs[s];
	return NULL;
}

static const struct {
	const char *verb;
	enum action act;
	const char *past;
} verbs[] = {
	{ "start", ACT_START, "started" },   { "stop", ACT_STOP, "stopped" },
	{ "restart", ACT_RESTART, "restarted" }, { "pause", ACT_PAUSE, "paused" },
	{ "unpause", ACT_UNPAUSE, "unpaused" },  { "delete", ACT_DELETE, "deleted" },
};

/* Waiting for an action's reply, with an image pull's progress on stderr as it changes (cmd/pullshow.h). */
struct pull_watch {
	struct cli_reply *reply;
	struct source *src;
	const char *name;
	struct pull_show show;
};

static bool replied_showing_pulls(void *arg)
{
	struct pull_watch *w = arg;
	pull_show_tick(&w->show, C.st, w->src, C.ns, w->name);
	bool done = ((struct cli_reply *)(w->reply))->done;
	if (done)
		pull_show_end(&w->show);
	return done;
}

/* An action through the engine service is done when the VM's status says so. */
struct routed_wait {
	struct source *src;
	const char *name;
	enum action act;
	struct pull_show show; /* a start's image pulls, as the launcher pod shows them */
	int64_t since;         /* when the request was sent (epoch seconds) */
	char *failed;          /* a start that cannot go on: "REASON: message" (owned) */
};

/* A launcher of the VM created since the request whose image cannot be pulled (kubelet's reasons on its
 * containers): the start has failed, "REASON: message" (caller frees); else NULL. */
static char *start_failure(const struct routed_wait *w)
{
	size_t n;
	struct obj *const *pods = store_objs(C.st, w->src, OBJ_POD, &n);
	for (size_t i = 0; i < n; i++) {
		const struct pod *p = (const struct pod *)pods[i];
		if (!util_str_eq(p->o.ns, C.ns) || !util_str_eq(p->vm_name, w->name) || p->o.created + 1 < w->since)
			continue;
		for (int k = 0; k < p->ncontainers; k++) {
			const struct container_status *c = &p->containers[k];
			if (util_str_eq(c->state, "waiting") &&
			    (util_str_eq(c->reason, "ErrImagePull") || util_str_eq(c->reason, "ImagePullBackOff") ||
			     util_str_eq(c->reason, "ErrImageNeverPull")))
				/* the pull failed (ErrImagePull); a back-off already under way is said after it */
				return util_str_eq(c->reason, "ImagePullBackOff")
					       ? xasprintf("ErrImagePull: %s (the VM is in ImagePullBackOff: retried later)",
							   c->message ? c->message : "the image cannot be pulled")
					       : xasprintf("%s: %s", c->reason,
							   c->message ? c->message : "the image cannot be pulled");
		}
	}
	return NULL;
}

static bool routed_done(void *arg)
{
	struct routed_wait *w = arg;
	pull_show_tick(&w->show, C.st, w->src, C.ns, w->name);
	if ((w->act == ACT_START || w->act == ACT_RESTART) && (w->failed = start_failure(w)))
		return true;
	const struct vm *v = (const struct vm *)store_find(C.st, w->src, OBJ_VM, C.ns, w->name);
	const char *want = NULL;
	switch (w->act) {
	case ACT_DELETE:
		return v == NULL;
	case ACT_STOP:
	case ACT_FORCE_STOP:
		want = "Stopped";
		break;
	case ACT_START:
	case ACT_UNPAUSE:
		want = "Running";
		break;
	case ACT_PAUSE:
		want = "Paused";
		break;
	default:
		return true;
	}
	return v && v->printable_status && strcmp(v->printable_status, want) == 0;
}

static int cmd_engine_action(int argc, char **argv)
{
	size_t vi;
	for (vi = 0; vi < sizeof verbs / sizeof verbs[0]; vi++)
		if (strcmp(argv[0], verbs[vi].verb) == 0)
			break;
	struct action_req req = { .act = verbs[vi].act, .grace_period = -1 };
	const char *name = NULL;
	bool force = false, no_wait = false, delete_volumes = false;
	int timeout = 300;
	const struct cli_opt rows[] = {
		{ "--force", CLI_FLAG, &force },	{ "--grace-period", CLI_INT, &req.grace_period },
		{ "--no-wait", CLI_FLAG, &no_wait },	{ "--timeout", CLI_INT, &timeout },
		{ "--delete-volumes", CLI_FLAG, &delete_volumes }, /* delete only: the last row */
	};
	size_t nrows = sizeof rows / sizeof rows[0] - (req.act != ACT_DELETE);
	int rc = engine_cli_args(argc, argv, rows, nrows, "NAME", &name);
	if (rc)
		return rc;
	bool wait = !no_wait;
	if (force && req.act != ACT_STOP)
		req.grace_period = 0; /* stop --force is its own action (below) */
	if (delete_volumes)
		req.flags |= ENGINE_DELETE_VOLUMES;
	if (req.act == ACT_STOP && (force || req.grace_period == 0))
		req.act = ACT_FORCE_STOP;
	rc = open_engine();
	if (rc)
		return rc;
	req.ns = C.ns;
	req.name = name;
	struct source *src = source_of_vm(name);
	if (src == NULL) {
		log_eprintf("kvcon: virtualmachine \"%s\" not found in namespace %s\n", name, C.ns);
		return close_engine(EXIT_API, 0);
	}
	if (src->type == SOURCE_KUBE && delete_volumes) {
		/* the API has no such option: refused rather than deleting the VM and keeping its volumes */
		log_eprintf("error: delete %s: --delete-volumes needs the engine in-process (an engine service holds "
			    "this root)\n", name);
		return close_engine(EXIT_API, 0);
	}
	struct cli_reply a = { .fd = -1 };
	int64_t t_req = util_wall_s();
	struct pull_watch pw = { .reply = &a, .src = src, .name = name };
	char *err = NULL;
	if (src->ops->action(src, &req, engine_cli_reply, &a, &err) < 0) {
		char *e = util_escape_display(err);
		log_eprintf("error: %s %s: %s\n", argv[0], name, e);
		free(e);
		free(err);
		return close_engine(EXIT_API, 0);
	}
	if (wait && !run_until(replied_showing_pulls, &pw, (uint64_t)timeout * 1000)) {
		log_eprintf("error: %s %s: not done after %d s\n", argv[0], name, timeout);
		return close_engine(EXIT_API, 0);
	}
	if (wait && a.status != 0) {
		char *e = util_escape_display(a.msg ? a.msg : "failed");
		log_eprintf("error: %s %s: %s\n", argv[0], name, e);
		free(e);
		free(a.msg);
		return close_engine(EXIT_API, 10000);
	}
	if (wait && src->type == SOURCE_KUBE) {
		/* the service accepted it (202): wait until its objects say it is done, as the in-process engine does */
		struct routed_wait rw = { .src = src, .name = name, .act = req.act, .since = t_req };
		bool ok = run_until(routed_done, &rw, (uint64_t)timeout * 1000);
		pull_show_end(&rw.show);
		if (rw.failed) {
			char *e = util_escape_display(rw.failed);
			log_eprintf("error: %s %s: %s\n", argv[0], name, e);
			free(e);
			free(rw.failed);
			free(a.msg);
			return close_engine(EXIT_API, 0);
		}
		if (!ok) {
			log_eprintf("error: %s %s: not done after %d s\n", argv[0], name, timeout);
			free(a.msg);
			return close_engine(EXIT_API, 0);
		}
	}
	printf("virtualmachine %s %s%s\n", name, wait ? "" : "request sent: ", verbs[vi].past);
	free(a.msg);
	return close_engine(EXIT_OK, 30000);
}

/* ---- console ---- */

enum step_kind { STEP_EXPECT, STEP_SEND };
struct step {
	enum step_kind kind;
	const char *arg;
	regex_t re;
};

static struct {
	struct step *steps;
	int nsteps, cur;
	struct buf seen;     /* guest text since the last match (for --expect) */
	bool closed, wait_stop;
	struct engine_console *con;
	struct stream *ws;   /* through the engine service: its console WebSocket instead of con */
	bool ws_failed;      /* refused or broken (said on stderr) */
	struct source *src;
	const char *name;
	char first_uid[UID_LEN]; /* the execution the console was opened on */
	FILE *log;
} K;

/* Guest bytes for the terminal: printable text, CR, LF, TAB and BS pass; every other control byte shows
 * escaped, so nothing from the guest drives the user's terminal. */
static void show(const char *data, size_t len)
{
	struct buf b;
	buf_init(&b);
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		bool cut = i == len || data[i] == '\r' || data[i] == '\n' || data[i] == '\t' || data[i] == '\b';
		if (!cut)
			continue;
		if (i > start) {
			size_t cap = (i - start) * 4 + 1;
			char *e = xmalloc(cap);
			size_t n = util_escape_display_n(data + start, i - start, e, cap);
			buf_add(&b, e, n);
			free(e);
		}
		if (i < len)
			buf_add_char(&b, data[i]);
		start = i + 1;
	}
	if (b.len)
		fwrite(b.data, 1, b.len, stdout);
	fflush(stdout);
	buf_free(&b);
}

static void run_steps(void)
{
	while (K.cur < K.nsteps) {
		struct step *s = &K.steps[K.cur];
		if (s->kind == STEP_SEND) {
			char *line = xasprintf("%s\r", s->arg);
			if (K.ws)
				stream_write(K.ws, line, strlen(line));
			else
				engine_console_write(K.con, line, strlen(line));
			free(line);
			K.cur++;
			continue;
		}
		regmatch_t m;
		if (K.seen.len && regexec(&s->re, K.seen.data, 1, &m, 0) == 0) {
			buf_consume(&K.seen, (size_t)m.rm_eo);
			K.cur++;
			continue;
		}
		return;
	}
}

static void on_console(void *arg, const char *data, size_t len)
{
	(void)arg;
	if (len == 0) {
		K.closed = true;
		return;
	}
	if (K.log)
		fwrite(data, 1, len, K.log);
	show(data, len);
	for (size_t i = 0; i < len; i++)
		if (data[i] != '\0')
			buf_add_char(&K.seen, data[i]);
	if (K.seen.len > (1u << 20))
		buf_consume(&K.seen, K.seen.len - (1u << 19));
	run_steps();
}

static void on_ws_data(struct stream *st, const uint8_t *data, size_t len, void *arg)
{
	(void)st;
	on_console(arg, (const char *)data, len);
}

static void on_ws_state(struct stream *st, enum stream_state state, void *arg)
{
	(void)arg;
	if (state == STREAM_OPEN)
		run_steps(); /* a --send waits for the connection */
	if (state == STREAM_CLOSED) {
		K.closed = true;
		if (stream_end(st) == STREAM_END_REFUSED || stream_end(st) == STREAM_END_ERROR) {
			char *e = util_escape_display(stream_reason(st) ? stream_reason(st) : stream_end_name(stream_end(st)));
			log_eprintf("\nkvcon: console %s: %s\n", K.name, e);
			free(e);
			K.ws_failed = true;
			loop_quit(EXIT_API);
		}
	}
}

/* The execution the console was opened on has ended (libvirt reported the stop; not just the stream's EOF). */
static bool execution_ended(void)
{
	const struct vmi *v = (const struct vmi *)store_find(C.st, K.src, OBJ_VMI, C.ns, K.name);
	if (v == NULL || strcmp(v->o.uid, K.first_uid) != 0)
		return true;
	return strcmp(v->phase, "Succeeded") == 0 || strcmp(v->phase, "Failed") == 0;
}

static bool console_finished(void *arg)
{
	(void)arg;
	if (K.cur < K.nsteps)
		return false;
	return !K.wait_stop || (K.closed && execution_ended());
}

static int cmd_engine_console(int argc, char **argv)
{
	const char *name = NULL, *logfile = NULL;
	int timeout = 300;
	struct cli_seq seq = { 0 }; /* --expect and --send, in order */
	const struct cli_opt rows[] = {
		{ "--expect", CLI_SEQ, &seq }, { "--send", CLI_SEQ, &seq },	   { "--timeout", CLI_INT, &timeout },
		{ "--log", CLI_STR, &logfile }, { "--wait-stop", CLI_FLAG, &K.wait_stop },
	};
	int rc = engine_cli_args(argc, argv, CLI_ROWS(rows), "NAME", &name);
	K.steps = xcalloc((size_t)seq.n + 1, sizeof *K.steps);
	for (int i = 0; rc == 0 && i < seq.n; i++) {
		struct step *s = &K.steps[K.nsteps];
		s->kind = strcmp(seq.opt[i], "--expect") == 0 ? STEP_EXPECT : STEP_SEND;
		s->arg = seq.val[i];
		if (s->kind == STEP_EXPECT && regcomp(&s->re, s->arg, REG_EXTENDED | REG_NEWLINE) != 0) {
			log_eprintf("kvcon engine console: bad regular expression '%s'\n", s->arg);
			rc = EXIT_USAGE;
		} else
			K.nsteps++;
	}
	engine_cli_seq_free(&seq);
	if (rc)
		return rc;
	if (K.nsteps == 0 && !K.wait_stop && isatty(0) && isatty(1)) {
		/* the console helper's full-screen console (libvterm), fed by the engine's stream */
		char *extra[4];
		int ne = 0;
		char tbuf[16];
		if (logfile) {
			extra[ne++] = "--log";
			extra[ne++] = (char *)logfile;
		}
		if (timeout != 300) {
			snprintf(tbuf, sizeof tbuf, "%ds", timeout); /* engine console counts seconds */
			extra[ne++] = "--timeout";
			extra[ne++] = tbuf;
		}
		return delegate(cmd_console, "console", name, ne, extra);
	}
	if (logfile) {
		/* the transcript holds the guest's output: 0600 */
		int lfd = util_open_private(logfile, O_APPEND, false);
		if (lfd < 0 || (K.log = fdopen(lfd, "ab")) == NULL) {
			log_eprintf("kvcon: %s: %s\n", logfile, strerror(errno));
			if (lfd >= 0)
				close(lfd);
			return EXIT_USAGE;
		}
	}
	rc = open_engine();
	if (rc)
		return rc;
	struct source *src = source_of_vm(name);
	char *err = NULL;
	K.src = src;
	K.name = name;
	const struct obj *vmi = src ? store_find(C.st, src, OBJ_VMI, C.ns, name) : NULL;
	snprintf(K.first_uid, UID_LEN, "%s", vmi ? vmi->uid : "");
	if (src && src->type == SOURCE_KUBE) {
		/* through the engine service: its console WebSocket (the same shared console, backlog first) */
		K.ws = kube_console_open(src, C.ns, name, &err);
		if (K.ws) {
			static const struct stream_cbs cbs = { .data = on_ws_data, .state = on_ws_state };
			stream_set_callbacks(K.ws, &cbs, NULL);
		}
	}
	if (src == NULL || (K.ws == NULL && src->type == SOURCE_KUBE) ||
	    (src->type != SOURCE_KUBE && (K.con = engine_console_open(src, C.ns, name, on_console, NULL, &err)) == NULL)) {
		log_eprintf("kvcon: console %s: %s\n", name, err ? err : "virtualmachine not found");
		free(err);
		return close_engine(EXIT_API, 0);
	}
	buf_init(&K.seen);
	/* a terminal without --expect/--send went to the full-screen console above: this is the scripted one */
	if (K.ws == NULL)
		run_steps(); /* through the service: once the WebSocket is open (on_ws_state) */
	bool ok = run_until(console_finished, NULL, (uint64_t)timeout * 1000);
	if (K.ws) {
		stream_free(K.ws); /* no callback after it */
		K.ws = NULL;
	} else {
		engine_console_close(K.con);
	}
	if (K.log)
		fclose(K.log);
	if (!ok && K.ws_failed)
		return close_engine(EXIT_API, 0);
	if (!ok) {
		log_eprintf("\nkvcon: console %s: ", name);
		if (K.cur < K.nsteps)
			log_eprintf("timed out after %d s waiting for /%s/\n", timeout, K.steps[K.cur].arg);
		else
			log_eprintf("timed out after %d s waiting for the execution to stop\n", timeout);
		return close_engine(EXIT_API, 0);
	}
	/* after --wait-stop the run strategy may restart the VM: let the reconciler do it before leaving */
	return close_engine(EXIT_OK, K.wait_stop ? 60000 : 5000);
}

/* ---- vnc ---- */

/* The in-terminal viewer, --screenshot and --proxy-only are all the VNC command's (cmd/cmd_vnc.c), on the
 * engine's display stream: one proxy, with its VNC authentication, for clusters and engines alike. */
static int cmd_engine_vnc(int argc, char **argv)
{
	const char *name = NULL;
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--port") == 0 || strcmp(argv[i], "--password-file") == 0 ||
		    strcmp(argv[i], "--screenshot") == 0 || strcmp(argv[i], "--colors") == 0 ||
		    strcmp(argv[i], "--scale") == 0 || strcmp(argv[i], "--quality") == 0 ||
		    strcmp(argv[i], "--timeout") == 0 || strcmp(argv[i], "--quiet-ms") == 0 ||
		    strcmp(argv[i], "--ws-protocol") == 0)
			i++;
		else if (argv[i][0] != '-' && name == NULL)
			name = argv[i];
	if (name == NULL) {
		log_eprintf("error: usage: kvcon engine vnc NAME [kvcon vnc options] | vnc NAME --proxy-only [--port N]\n");
		return EXIT_USAGE;
	}
	char **rest = xcalloc((size_t)argc + 1, sizeof *rest);
	int nr = 0;
	for (int i = 1; i < argc; i++)
		if (argv[i] != name)
			rest[nr++] = argv[i];
	int rc = delegate(cmd_vnc, "vnc", name, nr, rest);
	free(rest);
	return rc;
}

/* ---- pull: an image into the engine's cache, as a start would ---- */

struct pull_call {
	const char *ref, *root;
	const struct oci_regconf *conf;
	struct oci_progress prog;
	struct oci_result res;
	char *err;
	int rc;
	volatile int done;
};

static void *pull_call_thread(void *arg)
{
	struct pull_call *p = arg;
	p->rc = oci_pull(p->ref, p->conf, p->root, &p->prog, &p->res, &p->err);
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Runs the pull on a thread and prints its progress (bytes of total) on stderr once a second. */
static int pull_with_progress(struct pull_call *p)
{
	pthread_t t;
	if (pthread_create(&t, NULL, pull_call_thread, p) != 0)
		return pull_call_thread(p), p->rc;
	uint64_t last = util_now_ms();
	while (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
		usleep(50000);
		if (util_now_ms() - last >= 1000 && p->prog.total) {
			last = util_now_ms();
			fprintf(stderr, "pulling: %.1f MiB of %.1f MiB\n", (double)p->prog.done / (1 << 20),
				(double)p->prog.total / (1 << 20));
		}
	}
	pthread_join(t, NULL);
	return p->rc;
}

static int cmd_engine_pull(int argc, char **argv)
{
	const char *ref = NULL;
	int rc = engine_cli_args(argc, argv, NULL, 0, "IMAGE", &ref);
	if (rc)
		return rc;
	char *err = NULL, *root = engine_image_cache();
	struct oci_regconf *conf = oci_regconf_load(&err);
	struct pull_call pc = { .ref = ref, .root = root, .conf = conf, .rc = -1 };
	struct oci_result res;
	uint64_t t0 = util_now_ms();
	if (conf && pull_with_progress(&pc) == 0)
		res = pc.res;
	else if (conf)
		err = pc.err;
	if (conf == NULL || pc.rc < 0) {
		char *e = util_escape_display(err);
		fprintf(stderr, "kvcon: ErrImagePull: %s\n", e);
		free(e);
		rc = EXIT_API;
	} else {
		double s = (double)(util_now_ms() - t0) / 1000.0;
		char *r = util_escape_display(ref);
		printf("pulled %s %s from %s: %llu bytes fetched in %.3f s (%.1f MiB/s)\n%s\n", r, res.manifest_digest,
		       res.endpoint, (unsigned long long)res.fetched, s,
		       s > 0 ? (double)res.fetched / (1 << 20) / s : 0.0, res.disk);
		free(r);
		oci_result_free(&res);
	}
	free(err);
	free(root);
	oci_regconf_free(conf);
	return rc;
}

/* ---- reconcile: run the engine headless for a while ---- */

/* Every VM the service serves is in a settled state (not starting, stopping, terminating or migrating). */
static bool routed_settled(void *arg)
{
	(void)arg;
	static const char *const moving[] = { "Starting", "Stopping", "Terminating", "Migrating", "Provisioning" };
	for (int s = 0; s < C.nsrcs; s++) {
		size_t n = 0;
		struct obj *const *vms = store_objs(C.st, C.srcs[s], OBJ_VM, &n);
		for (size_t i = 0; i < n; i++) {
			const char *st = ((const struct vm *)vms[i])->printable_status;
			for (size_t k = 0; st && k < sizeof moving / sizeof moving[0]; k++)
				if (strcmp(st, moving[k]) == 0)
					return false;
		}
	}
	return true;
}

static int cmd_engine_reconcile(int argc, char **argv)
{
	int secs = 0;
	const struct cli_opt rows[] = { { "--for", CLI_INT, &secs } };
	int rc = engine_cli_args(argc, argv, CLI_ROWS(rows), NULL, NULL);
	if (rc == 0)
		rc = open_engine();
	if (rc)
		return rc;
	if (C.nsrcs > 0 && C.srcs[0]->type == SOURCE_KUBE) {
		/* an engine service holds these hosts and reconciles them all the time: nothing to run here but
		 * to wait (--for), then for its VMs to settle */
		printf("engine ready (the engine service reconciles these hosts)\n");
		fflush(stdout);
		uint64_t until = util_now_ms() + (uint64_t)(secs > 0 ? secs : 0) * 1000;
		while (util_now_ms() < until && !loop_quitting())
			loop_once(200);
		if (!run_until(routed_settled, NULL, 60000)) {
			log_eprintf("error: reconcile: the engine service's VMs did not settle within 60 s\n");
			return close_engine(EXIT_API, 0);
		}
		return close_engine(EXIT_OK, 0);
	}
	warn_bad_records();
	printf("engine ready\n"); /* tests wait for this line: events are registered, the first resync done */
	fflush(stdout);
	if (secs > 0) {
		uint64_t until = util_now_ms() + (uint64_t)secs * 1000;
		while (util_now_ms() < until && !loop_quitting())
			loop_once(200);
	}
	return close_engine(EXIT_OK, 60000);
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *usage;
} subs[] = {
	{ "apply", cmd_engine_apply, "apply -f FILE              store a VirtualMachine manifest (YAML or JSON)" },
	{ "get", cmd_engine_get, "get [vm|vmi|pod|event] [NAME] [-o table|wide|json|name]" },
	{ "start", cmd_engine_action, "start NAME                 start (virtctl semantics per run strategy)" },
	{ "stop", cmd_engine_action, "stop NAME [--force] [--grace-period N]" },
	{ "restart", cmd_engine_action, "restart NAME [--force]     new execution (new VMI UID)" },
	{ "pause", cmd_engine_action, "pause NAME" },
	{ "unpause", cmd_engine_action, "unpause NAME" },
	{ "delete", cmd_engine_action, "delete NAME [--delete-volumes]" },
	{ "console", cmd_engine_console, "console NAME [--expect RE] [--send LINE]... [--wait-stop] [--timeout S] [--log FILE]" },
	{ "vnc", cmd_engine_vnc, "vnc NAME [--screenshot F.png ...] | vnc NAME --proxy-only [--port N]" },
	{ "reconcile", cmd_engine_reconcile, "reconcile [--for SECONDS]  run the reconciler, then leave" },
	{ "serve", engine_serve_cmd, "serve [--socket PATH] [--https PORT] [--kubeconfig-out FILE] [--idle-exit SECONDS]\n"
				     "                      run the reconciler for good and serve the Kubernetes API "
				     "(docs/ENGINE-SERVICE.md)" },
	{ "pull", cmd_engine_pull, "pull IMAGE                 pull a containerDisk into the image cache (prints its digest)" },
	{ "migrate", migrate_cmd, "migrate NAME --to HOST [--bandwidth MiB/s] [--auto-converge] [--postcopy] [--timeout S]\n"
				  "                      [--copy-storage] [--offline] [--migrate-uri URI] [--quiet]" },
	{ "migrate", migrate_cmd, "migrate --abort NAME       abort a running migration (the VM stays on its host)" },
	{ "drain", drain_cmd, "drain HOST [--to HOST] [--bandwidth MiB/s] [--timeout S]   migrate every running VM off HOST" },
};

int cmd_engine(int argc, char **argv)
{
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		FILE *f = argc < 2 ? stderr : stdout;
		fprintf(f, "usage: kvcon [-c URI]... [-n NS] engine VERB ...\n\n");
		for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
			fprintf(f, "  kvcon engine %s\n", subs[i].usage);
		fprintf(f, "\nDefault host: $KVCON_ENGINE_URI, else $LIBVIRT_DEFAULT_URI, else the embedded QEMU driver\n"
			   "(qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine). Domains are named NS_NAME.\n"
			   "See kvcon(1), section ENGINE.\n");
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	/* every verb reaches the engine through its service (cmd/session.h); `serve` is the service */
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
		if (strcmp(argv[1], subs[i].name) == 0)
			return subs[i].fn(argc - 1, argv + 1);
	log_eprintf("kvcon engine: unknown verb '%s' (see kvcon engine --help)\n", argv[1]);
	return EXIT_USAGE;
}

/* ---- for migcli.c ---- */

int engine_cli_open(void)
{
	return open_engine();
}

int engine_cli_close(int rc, uint64_t converge_ms)
{
	return close_engine(rc, converge_ms);
}

bool engine_cli_run_until(bool (*cond)(void *), void *arg, uint64_t timeout_ms)
{
	return run_until(cond, arg, timeout_ms);
}

struct source **engine_cli_sources(int *n)
{
	*n = C.nsrcs;
	return C.srcs;
}

struct store *engine_cli_store(void)
{
	return C.st;
}

const char *engine_cli_ns(void)
{
	return C.ns;
}

void engine_cli_config_hosts(struct kvcon_opts *o)
{
	char *const *cfg = o->nuris || o->no_engine ? NULL : migrate_config_hosts();
	for (int i = 0; cfg && cfg[i]; i++) {
		o->uris = xreallocarray(o->uris, (size_t)o->nuris + 1, sizeof *o->uris);
		o->uris[o->nuris++] = xstrdup(cfg[i]);
	}
}
