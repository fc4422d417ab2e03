/* The engine's record of a VM as JSON (json-c): manifest, identity, live run strategy, the current execution,
 * past executions, events and the intent of accepted requests not yet carried out. Written atomically and
 * fsync'd (file, then directory) by the loop thread before the engine acts on a change (evm_persist), and read back
 * when a host connects (record_load_all); unreadable ones are kept untouched and reported. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <libvirt/libvirt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/ejson.h"
#include "engine/embed.h"
#include "engine/engine_int.h"
#include "engine/evm.h"
#include "engine/host.h"
#include "engine/migrate.h"
#include "engine/record.h"

struct exec *exec_new(void)
{
	struct exec *x = xcalloc(1, sizeof *x);
	x->phase = intern("Pending");
	return x;
}

void exec_free(struct exec *x)
{
	if (x == NULL)
		return;
	free(x->node);
	free(x->cmdline);
	free(x->log_path);
	free(x->serial_log);
	free(x->run_dir);
	free(x->how);
	free(x->message);
	free(x->images);
	free(x->net);
	free(x->pull_msg);
	free(x->guest_os);
	free(x->agent_version);
	free(x->agent_ifs);
	free(x->creds_done);
	free(x->creds_msg);
	free(x->manifest);
	emig_free(x->mig);
	free(x);
}

void evm_free(struct evm *v)
{
	if (v == NULL)
		return;
	free(v->key);
	free(v->text);
	manifest_free(v->m);
	free(v->run_strategy);
	free(v->start_error);
	free(v->sched_msg);
	free(v->moving_to);
	free(v->moving_dir);
	exec_free(v->cur);
	for (int i = 0; i < v->npast; i++) {
		free(v->past[i].node);
		free(v->past[i].how);
	}
	free(v->past);
	for (int i = 0; i < v->nevents; i++)
		free(v->events[i].message);
	free(v->events);
	free(v->ring);
	free(v);
}

/* The record's fields, in the order they are written. */
static const struct ejson_field vm_rows[] = {
	{ "uid", EJ_UID, offsetof(struct evm, uid), NULL },
	{ "generation", EJ_U64, offsetof(struct evm, generation), NULL },
	{ "created", EJ_I64, offsetof(struct evm, created), NULL },
	{ "runStrategy", EJ_STR, offsetof(struct evm, run_strategy), NULL },
	{ "startRequested", EJ_BOOL, offsetof(struct evm, req_start), NULL },
	{ "stopRequested", EJ_BOOL, offsetof(struct evm, req_stop), NULL },
	{ "failures", EJ_INT, offsetof(struct evm, failures), NULL },
	{ "retryAfter", EJ_I64, offsetof(struct evm, retry_after), NULL },
	{ "startError", EJ_STR, offsetof(struct evm, start_error), NULL },
	{ "deleting", EJ_BOOL, offsetof(struct evm, deleting), NULL },
	{ "deleteVolumes", EJ_BOOL, offsetof(struct evm, delete_volumes), NULL },
	{ "restartRequested", EJ_BOOL, offsetof(struct evm, restart), NULL },
	{ "stopping", EJ_BOOL, offsetof(struct evm, stopping), NULL },
	{ "stopDeadlineMs", EJ_I64, offsetof(struct evm, stop_deadline), NULL },
	{ "pauseRequest", EJ_INT, offsetof(struct evm, pause_req), NULL },
	{ "movingTo", EJ_STR, offsetof(struct evm, moving_to), NULL },
	{ "movingDir", EJ_STR, offsetof(struct evm, moving_dir), NULL },
	{ "pinnedToHost", EJ_BOOL, offsetof(struct evm, pinned), NULL },
	{ "manifest", EJ_STR, offsetof(struct evm, text), NULL },
};

/* the execution: identity, then its phase history, then the rest */
static const struct ejson_field exec_head[] = {
	{ "uid", EJ_UID, offsetof(struct exec, uid), NULL },
	{ "launcherUid", EJ_UID, offsetof(struct exec, launcher), NULL },
	{ "phase", EJ_ISTR, offsetof(struct exec, phase), "Failed" },
};

static const struct ejson_field phase_rows[] = {
	{ "phase", EJ_ISTR, offsetof(struct phase_time, phase), NULL },
	{ "at", EJ_I64, offsetof(struct phase_time, at), NULL },
};

static const struct ejson_field exec_rows[] = {
	{ "node", EJ_STR, offsetof(struct exec, node), NULL },
	{ "pid", EJ_INT, offsetof(struct exec, pid), NULL },
	{ "created", EJ_I64, offsetof(struct exec, created), NULL },
	{ "started", EJ_I64, offsetof(struct exec, started), NULL },
	{ "ended", EJ_I64, offsetof(struct exec, ended), NULL },
	{ "cmdline", EJ_STR, offsetof(struct exec, cmdline), NULL },
	{ "logPath", EJ_STR, offsetof(struct exec, log_path), NULL },
	{ "serialLog", EJ_STR, offsetof(struct exec, serial_log), NULL },
	{ "runDir", EJ_STR, offsetof(struct exec, run_dir), NULL },
	{ "how", EJ_STR, offsetof(struct exec, how), NULL },
	{ "message", EJ_STR, offsetof(struct exec, message), NULL },
	{ "imageIDs", EJ_STR, offsetof(struct exec, images), NULL },
	{ "network", EJ_STR, offsetof(struct exec, net), NULL },
	{ "generation", EJ_U64, offsetof(struct exec, generation), NULL },
	{ "manifest", EJ_STR, offsetof(struct exec, manifest), NULL },
	{ "paused", EJ_BOOL, offsetof(struct exec, paused), NULL },
	{ "stopByUs", EJ_BOOL, offsetof(struct exec, stop_by_us), NULL },
	{ "tcg", EJ_BOOL, offsetof(struct exec, tcg), NULL },
};

static const struct ejson_field past_rows[] = {
	{ "uid", EJ_UID, offsetof(struct evm_past, uid), NULL },
	{ "launcherUid", EJ_UID, offsetof(struct evm_past, launcher), NULL },
	{ "node", EJ_STR, offsetof(struct evm_past, node), NULL },
	{ "how", EJ_STR, offsetof(struct evm_past, how), NULL },
	{ "started", EJ_I64, offsetof(struct evm_past, started), NULL },
	{ "ended", EJ_I64, offsetof(struct evm_past, ended), NULL },
};

/* a start that waits for the node or for a Secret (sched_wait): its VMI and launcher pod, kept so that a restarted
 * engine shows the same ones (their UIDs and creation) and the execution takes them when the obstacle goes */
static const struct ejson_field waiting_rows[] = {
	{ "uid", EJ_UID, offsetof(struct evm, sched_uid), NULL },
	{ "launcherUid", EJ_UID, offsetof(struct evm, sched_launcher), NULL },
	{ "since", EJ_I64, offsetof(struct evm, sched_since), NULL },
	{ "message", EJ_STR, offsetof(struct evm, sched_msg), NULL },
	{ "mount", EJ_BOOL, offsetof(struct evm, sched_mount), NULL },
};

static const struct ejson_field event_rows[] = {
	{ "uid", EJ_UID, offsetof(struct evm_event, uid), NULL },
	{ "type", EJ_ISTR, offsetof(struct evm_event, type), "Normal" },
	{ "reason", EJ_ISTR, offsetof(struct evm_event, reason), "" },
	{ "message", EJ_STR, offsetof(struct evm_event, message), "" },
	{ "onVMI", EJ_BOOL, offsetof(struct evm_event, on_vmi), NULL },
	{ "onPod", EJ_BOOL, offsetof(struct evm_event, on_pod), NULL },
	{ "involvedUid", EJ_UID, offsetof(struct evm_event, inv_uid), NULL },
	{ "first", EJ_I64, offsetof(struct evm_event, first), NULL },
	{ "last", EJ_I64, offsetof(struct evm_event, last), NULL },
	{ "count", EJ_INT, offsetof(struct evm_event, count), NULL },
};

static json_object *exec_json(const struct exec *x)
{
	json_object *o = json_object_new_object();
	ejson_put(o, x, EJSON_ROWS(exec_head));
	json_object_object_add(o, "phaseTransitionTimestamps",
			       ejson_array(x->phases, sizeof x->phases[0], x->nphases, EJSON_ROWS(phase_rows)));
	ejson_put(o, x, EJSON_ROWS(exec_rows));
	if (x->mig)
		json_object_object_add(o, "migrationState", emig_json(x->mig));
	return o;
}

char *record_dump(const struct evm *v)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "apiVersion", json_object_new_string("engine.kvcon.dev/v1"));
	json_object_object_add(o, "kind", json_object_new_string("EngineVirtualMachine"));
	ejson_put(o, v, EJSON_ROWS(vm_rows));
	if (v->cur)
		json_object_object_add(o, "execution", exec_json(v->cur));
	if (v->sched_msg) {
		json_object *w = json_object_new_object();
		ejson_put(w, v, EJSON_ROWS(waiting_rows));
		json_object_object_add(o, "waiting", w);
	}
	json_object_object_add(o, "history", ejson_array(v->past, sizeof v->past[0], v->npast, EJSON_ROWS(past_rows)));
	json_object_object_add(o, "events",
			       ejson_array(v->events, sizeof v->events[0], v->nevents, EJSON_ROWS(event_rows)));
	char *s = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

static struct exec *exec_from(json_object *o)
{
	struct exec *x = exec_new();
	ejson_get(x, o, EJSON_ROWS(exec_head));
	json_object *ph = ejson_child(o, "phaseTransitionTimestamps", json_type_array);
	for (size_t i = 0; ph && i < json_object_array_length(ph) && x->nphases < EVM_MAX_PHASES; i++) {
		json_object *p = json_object_array_get_idx(ph, i);
		if (ejson_str(p, "phase"))
			ejson_get(&x->phases[x->nphases++], p, EJSON_ROWS(phase_rows));
	}
	ejson_get(x, o, EJSON_ROWS(exec_rows));
	json_object *mg = ejson_child(o, "migrationState", json_type_object);
	if (mg)
		x->mig = emig_from(mg);
	return x;
}

int record_load(struct evm *v, const char *json, char **err)
{
	json_object *o = json_tokener_parse(json);
	int rc = -1;
	if (o == NULL || !json_object_is_type(o, json_type_object)) {
		*err = xstrdup("not a JSON object");
		goto out;
	}
	const char *text = ejson_str(o, "manifest");
	if (text == NULL || ejson_str(o, "uid") == NULL) {
		*err = xstrdup("manifest or uid missing");
		goto out;
	}
	v->m = manifest_parse(text, strlen(text), err);
	if (v->m == NULL)
		goto out;
	ejson_get(v, o, EJSON_ROWS(vm_rows));
	if (v->run_strategy == NULL)
		v->run_strategy = xstrdup(v->m->run_strategy);
	json_object *x = ejson_child(o, "execution", json_type_object);
	if (x)
		v->cur = exec_from(x);
	json_object *w = ejson_child(o, "waiting", json_type_object);
	if (w && x == NULL) {
		ejson_get(v, w, EJSON_ROWS(waiting_rows));
		if (v->sched_msg && (v->sched_uid[0] == 0 || v->sched_launcher[0] == 0)) { /* not one kvcon wrote */
			free(v->sched_msg);
			v->sched_msg = NULL;
		}
	}
	json_object *a = ejson_child(o, "history", json_type_array);
	if (a) {
		size_t n = json_object_array_length(a);
		v->past = xcalloc(n + 1, sizeof *v->past);
		for (size_t i = 0; i < n && i < EVM_MAX_HISTORY; i++)
			ejson_get(&v->past[v->npast++], json_object_array_get_idx(a, i), EJSON_ROWS(past_rows));
	}
	a = ejson_child(o, "events", json_type_array);
	if (a) {
		size_t n = json_object_array_length(a);
		v->events = xcalloc(n + 1, sizeof *v->events);
		for (size_t i = 0; i < n && i < EVM_MAX_EVENTS; i++)
			ejson_get(&v->events[v->nevents++], json_object_array_get_idx(a, i), EJSON_ROWS(event_rows));
	}
	rc = 0;
out:
	json_object_put(o);
	return rc;
}

/* ---- on disk (engine_has_record, which reads them without the engine, is in service/settings.c) ---- */

char *record_path(const struct evm *v)
{
	return xasprintf("%s/%s_%s.json", v->eh->records_dir, v->m->ns, v->m->name);
}


/* Stores the record now, on this thread: written to a temporary file, fsync'd, renamed over the record and the
 * directory fsync'd, so an accepted request is on disk before the engine acts on it (a kill -9 at any later
 * moment finds it). 0, or -1 with *err (caller frees) and the previous record intact. */
int evm_persist_err(struct evm *v, char **err)
{
	char *path = record_path(v);
	char *json = record_dump(v), why[UTIL_WHY_LEN];
	int rc = util_write_file_why(path, json, strlen(json), 0600, why);
	if (rc < 0 && errno == ENOENT) {
		util_mkdir_p(v->eh->records_dir, 0700);
		rc = util_write_file_why(path, json, strlen(json), 0600, why);
	}
	if (rc < 0)
		*err = xasprintf("cannot store the record %s: %s", path, why);
	free(json);
	free(path);
	return rc;
}

/* The same for the engine's own progress (what it saw): a failure is logged; the next change writes again. */
void evm_persist(struct evm *v)
{
	char *err = NULL;
	if (evm_persist_err(v, &err) < 0) {
		log_error("engine: %s", err);
		free(err);
	}
}

/* Removes a record durably (the directory fsync'd). */
void record_unlink(const char *path)
{
	if (unlink(path) < 0 && errno != ENOENT) {
		log_error("engine: cannot remove %s: %s", path, strerror(errno));
		return;
	}
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	free(dir);
}

/* ---- messages from the host workers ---- */


/* Forgets unreadable record i when its file is gone (moved away, removed: the service runs on, so it learns
 * this at the next sync of the host or apply of that name): its row goes, the host's notice with the last one.
 * True when forgotten. */
bool record_forget_bad(struct ehost *eh, int i)
{
	size_t pl = strcspn(eh->bad[i], ":");
	char *path = xstrndup(eh->bad[i], pl);
	struct stat sb;
	bool gone = lstat(path, &sb) != 0 && errno == ENOENT;
	free(path);
	if (!gone)
		return false;
	store_remove(engine_g.st, eh->src, OBJ_VM, eh->bad_uid[i]);
	free(eh->bad[i]);
	free(eh->bad_uid[i]);
	memmove(&eh->bad[i], &eh->bad[i + 1], (size_t)(eh->nbad - i - 1) * sizeof *eh->bad);
	memmove(&eh->bad_uid[i], &eh->bad_uid[i + 1], (size_t)(eh->nbad - i - 1) * sizeof *eh->bad_uid);
	eh->nbad--;
	if (eh->nbad == 0)
		source_set_notice(eh->src, NULL);
	return true;
}

/* The host's unreadable records against the domains it runs: each is logged with its QEMU (left running,
 * unmanaged) and becomes the host's notice. */
void record_check_bad(struct ehost *eh, const struct host_msg *m)
{
	for (int i = 0; i < eh->nbad; i++)
		if (record_forget_bad(eh, i))
			i--;
	if (eh->nbad == 0)
		return;
	struct buf b;
	buf_init(&b);
	buf_printf(&b, "%d unreadable VM record%s (not managed until fixed or removed): ", eh->nbad,
		   eh->nbad == 1 ? "" : "s");
	for (int i = 0; i < eh->nbad; i++) {
		const char *file = strrchr(eh->bad[i], '/') ? strrchr(eh->bad[i], '/') + 1 : eh->bad[i];
		size_t fl = strcspn(file, ":");
		const struct host_dom *d = NULL;
		for (int k = 0; k < m->ndoms; k++)
			if (fl > 5 && strlen(m->doms[k].name) == fl - 5 && strncmp(m->doms[k].name, file, fl - 5) == 0)
				d = &m->doms[k];
		char *fn = xstrndup(file, fl);
		epublish_bad(eh, fn, eh->bad[i], eh->bad_uid[i], d);
		free(fn);
		bool up = d && d->state != VIR_DOMAIN_SHUTOFF && d->state != VIR_DOMAIN_CRASHED;
		buf_printf(&b, "%s%s", i ? "; " : "", eh->bad[i]);
		if (up)
			buf_printf(&b, " (its domain %s runs, QEMU pid %d, left running)", d->name, d->pid);
	}
	char *text = buf_steal(&b);
	if (!util_str_eq(eh->src->notice, text)) {
		log_warn("engine: %s: %s", eh->src->name, text);
		source_set_notice(eh->src, text);
	}
	free(text);
}

static void load_record_file(struct ehost *eh, int dirfd, const char *dir, const char *fname);

/* A loaded record with an offline move's intent (evm_move_offline): the process that stored it was killed before
 * the move was done. Finished here: the target's record is written unless it already is, then the source's removed
 * and its domain undefined. true: v no longer belongs to eh (freed by the caller); false: keep it here (the intent
 * is not kvcon's, or the target's record could not be written: tried again at the next load). */
static bool finish_offline_move(struct ehost *eh, struct evm *v, const char *path, const char *fname)
{
	char *dd = esettings_data_dir(), *hosts = xasprintf("%s/hosts/", dd);
	const char *md = v->moving_dir;
	size_t ml = md ? strlen(md) : 0;
	bool ours = md && strncmp(md, hosts, strlen(hosts)) == 0 && !strstr(md, "/..") && ml > 4 &&
		    strcmp(md + ml - 4, "/vms") == 0 && strcmp(md, eh->records_dir) != 0;
	free(hosts);
	free(dd);
	if (!ours) {
		log_warn("engine: %s: an offline move's intent names no host directory of this engine; ignored", path);
		free(v->moving_to);
		free(v->moving_dir);
		v->moving_to = v->moving_dir = NULL;
		return false;
	}
	char *tpath = util_path_join(md, fname), *to = xstrdup(v->moving_to ? v->moving_to : "?");
	char *dir = xstrdup(md);
	bool done = access(tpath, F_OK) == 0;
	if (!done) {
		free(v->moving_to);
		free(v->moving_dir);
		v->moving_to = v->moving_dir = NULL;
		char *json = record_dump(v);
		util_mkdir_p(dir, 0700);
		done = util_write_file_atomic(tpath, json, strlen(json), 0600) == 0;
		if (!done) {
			log_error("engine: %s: cannot finish the offline move to %s: %s: %s", v->key, to, tpath, strerror(errno));
			v->moving_to = xstrdup(to);
			v->moving_dir = xstrdup(dir);
		}
		free(json);
	}
	if (done) {
		record_unlink(path);
		char *dn = evm_dom_name(v);
		if (eh->h)
			host_simple(eh->h, RQ_UNDEFINE, dn); /* the definition is rebuilt at the next start on the target */
		free(dn);
		log_warn("engine: %s: an interrupted offline migration to %s was finished (its record moved)", v->key, to);
		/* the target, when it has read its records already, reads this one too */
		int n;
		struct ehost **all = ehost_all(&n);
		for (int i = 0; i < n; i++)
			if (all[i] != eh && all[i]->loaded && all[i]->records_dir && strcmp(all[i]->records_dir, dir) == 0)
				load_record_file(all[i], -1, dir, fname);
	}
	free(dir);
	free(to);
	free(tpath);
	return done;
}

/* dirfd: dir as trust_dir_open opened it (its files read relative to it), or -1 (the file's path checked whole). */
static void load_record_file(struct ehost *eh, int dirfd, const char *dir, const char *fname)
{
	char *path = util_path_join(dir, fname), *err = NULL;
	/* a record decides what root runs: kvcon's own only */
	char *text = dirfd >= 0 ? trust_read_at(dirfd, dir, fname, NULL, &err) : trust_read_file(path, NULL, &err);
	struct evm *v = xcalloc(1, sizeof *v);
	v->eh = eh;
	if (text == NULL || record_load(v, text, &err) < 0) {
		/* kept as it is (never overwritten), shown by get and the host's notice; its domain, if any, is
		 * left alone (on_sync says so) */
		log_error("engine: %s: unreadable record: %s", path, err ? err : strerror(errno));
		eh->bad = xreallocarray(eh->bad, (size_t)eh->nbad + 1, sizeof *eh->bad);
		eh->bad_uid = xreallocarray(eh->bad_uid, (size_t)eh->nbad + 1, sizeof *eh->bad_uid);
		eh->bad[eh->nbad] = xasprintf("%s: %s", path, err ? err : strerror(errno));
		eh->bad_uid[eh->nbad] = xcalloc(1, UID_LEN);
		util_uuid_v4(eh->bad_uid[eh->nbad]);
		epublish_bad(eh, fname, eh->bad[eh->nbad], eh->bad_uid[eh->nbad], NULL);
		eh->nbad++;
		evm_free(v);
	} else {
		v->key = xasprintf("%s/%s", v->m->ns, v->m->name);
		if (hmap_get(&eh->vms, v->key)) {
			/* held already (an offline move finished by another host's load, its target's record read
			 * before): the VM in memory is the newer, and consoles or requests may hold it */
			evm_free(v);
		} else if ((v->moving_to || v->moving_dir) && finish_offline_move(eh, v, path, fname)) {
			evm_free(v);
		} else {
			if (!exec_active(v->cur)) { /* the stop was done, its record not written after it */
				v->stopping = false;
				v->stop_deadline = 0;
			}
			v->stop_unsent = v->stopping; /* an accepted stop: sent again with what is left of its grace */
			hmap_put(&eh->vms, v->key, v);
			evm_publish(v);
			for (int i = 0; i < v->nevents; i++)
				epublish_event_obj(v, &v->events[i]);
		}
	}
	free(err);
	free(text);
	free(path);
}

/* The directory is checked once and its records read relative to it (100,000 records: the walk up to / for each
 * was a quarter of the service's start-up); a directory refused is read file by file, each one then reported. */
void record_load_all(struct ehost *eh)
{
	char *why = NULL;
	int dfd = trust_dir_open(eh->records_dir, &why);
	free(why);
	DIR *d = dfd >= 0 ? fdopendir(dup(dfd)) : opendir(eh->records_dir);
	if (d == NULL) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		load_record_file(eh, dfd, eh->records_dir, de->d_name);
	}
	closedir(d);
	if (dfd >= 0)
		close(dfd);
}

/* The directory name of a host's records, from its identity: the host name a daemon reports (qemu:///system,
 * remote hosts), with "~session" for a session daemon, and for an embedded root this machine's name with
 * "~embed-" and a hash of the root's real path: two roots on one machine never share records. */
char *record_host_key(const char *uri, const char *name)
{
	char *root = embed_uri_root(uri);
	char *key;
	if (root) {
		char *real = realpath(root, NULL);
		uint64_t h = 1469598103934665603ull; /* FNV-1a */
		for (const unsigned char *p = (const unsigned char *)(real ? real : root); *p; p++)
			h = (h ^ *p) * 1099511628211ull;
		key = xasprintf("%s~embed-%016llx", name, (unsigned long long)h);
		free(real);
		free(root);
	} else if (strstr(uri, "/session"))
		key = xasprintf("%s~session", name);
	else
		key = xstrdup(name);
	/* a host name is a DNS name, but it comes from the host: nothing that leaves the directory */
	for (char *c = key; *c; c++)
		if (*c == '/' || (c == key && *c == '.'))
			*c = '_';
	return key;
}

/* Records kept by earlier versions under hosts/NAME/vms (keyed by host name only, shared by every embedded root
 * and session of this machine) move to this host's own directory: an embedded root or session takes those
 * whose domain it defines; the default host (esettings_default_uri) takes the rest. Moved with rename (same file
 * system), both directories fsync'd. */
void record_adopt_old(struct ehost *eh, const char *dd, const char *name, const char *key)
{
	if (strcmp(name, key) == 0 || strchr(name, '/') || name[0] == '.')
		return;
	char *old = xasprintf("%s/hosts/%s/vms", dd, name);
	DIR *d = opendir(old);
	if (d == NULL) {
		free(old);
		return;
	}
	char *def = esettings_default_uri();
	bool is_default = strcmp(def, eh->uri) == 0;
	free(def);
	char *root = embed_uri_root(eh->uri);
	int moved = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 6 || strcmp(de->d_name + n - 5, ".json") != 0 || de->d_name[0] == '.')
			continue;
		bool mine = is_default;
		if (!mine && root) {
			/* the embedded driver keeps a defined domain's XML in ROOT/etc/qemu/DOMAIN.xml */
			char *x = xasprintf("%s/etc/qemu/%.*s.xml", root, (int)(n - 5), de->d_name);
			mine = access(x, F_OK) == 0;
			free(x);
		}
		if (!mine)
			continue;
		char *from = util_path_join(old, de->d_name), *to = util_path_join(eh->records_dir, de->d_name);
		if (access(to, F_OK) != 0 && rename(from, to) == 0)
			moved++;
		free(from);
		free(to);
	}
	closedir(d);
	if (moved) {
		const char *dirs[] = { eh->records_dir, old };
		for (int i = 0; i < 2; i++) {
			int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0) {
				fsync(fd);
				close(fd);
			}
		}
		log_info("engine: %d VM record%s moved from %s to %s (records are kept per host identity)", moved,
			 moved == 1 ? "" : "s", old, eh->records_dir);
		rmdir(old); /* when empty */
	}
	free(root);
	free(old);
}
