/* containerDisk pulls, the image cache and its sweep. A start whose containerDisks are neither in the image
 * directory nor (per imagePullPolicy) in the image cache pulls them first, on a thread of its own (oci_pull
 * blocks), tracked as the execution's start request so that stop, delete and the reconciler wait for it. The
 * execution stays Pending meanwhile; its launcher shows the progress. A failed pull ends the execution with
 * kubelet's reason (ErrImagePull; ImagePullBackOff while the crash-loop back-off delays the next try;
 * ErrImageNeverPull) and a message naming the registry. */
#include <dirent.h>
#include <errno.h>
#include <json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine_int.h"
#include "engine/imgcache.h"
#include "engine/oci.h"
#include "engine/record.h"

#define PULL_TICK_MS 500

struct pulljob {
	struct ehost *eh;
	char *key;
	char exec_uid[UID_LEN];
	int preq_id;
	int n;
	char **vols, **refs, **ids; /* per image: the volume, the reference as written, the imageID pulled */
	struct oci_regconf *conf;
	char *root;
	struct oci_progress prog;
	volatile int cur;           /* the image being pulled (written by the thread) */
	char *err;
	uint64_t fetched;
	uint64_t t0;
	struct loop_timer *tick;
	struct pulljob *next;
};

static struct pulljob *pulls;
static int pull_ids = -1; /* start-request ids of pulls: negative, never a worker's */

static void pull_done(void *arg);

bool epull_reason(const char *how)
{
	return how && (strcmp(how, "ErrImagePull") == 0 || strcmp(how, "ErrImageNeverPull") == 0);
}

/* The image as a file of the image directory (not of the cache): a local file wins over any registry. */
bool epull_local_image(const char *imgs, const char *ref)
{
	char **c = manifest_image_candidates(imgs, ref);
	const char *root = imgcache_root();
	bool found = false;
	for (size_t i = 0; c[i]; i++) {
		struct stat st;
		if (!found && !(root && util_has_prefix(c[i], root)) && stat(c[i], &st) == 0 && S_ISREG(st.st_mode))
			found = true;
		free(c[i]);
	}
	free(c);
	return found;
}

static void pulljob_free(struct pulljob *j)
{
	for (int i = 0; i < j->n; i++) {
		free(j->vols[i]);
		free(j->refs[i]);
		free(j->ids[i]);
	}
	free(j->vols);
	free(j->refs);
	free(j->ids);
	oci_regconf_free(j->conf);
	free(j->root);
	free(j->err);
	free(j->key);
	free(j);
}

/* "repo@sha256:..." for a reference and the digest it resolved to. */
static char *image_id(const char *ref, const char *digest)
{
	struct oci_ref r;
	char *e = NULL;
	if (oci_ref_parse(ref, &r, &e) < 0) {
		free(e);
		return xstrdup(digest);
	}
	char *s = xasprintf("%s/%s@%s", r.registry, r.repo, digest);
	oci_ref_free(&r);
	return s;
}

static void add_image(struct exec *x, const char *vol, const char *ref, const char *id)
{
	char *line = xasprintf("%s%s %s %s\n", x->images ? x->images : "", vol, ref, id);
	free(x->images);
	x->images = line;
}

/* The launcher's containerDisk containers ("volume<NAME>", as virt-launcher pods have), with the image and,
 * once pulled, its imageID. */
void epull_containers(const struct evm *v, struct pod *p)
{
	const struct exec *x = v->cur;
	for (int i = 0; i < v->m->nvols; i++) {
		const struct mf_volume *vol = &v->m->vols[i];
		if (vol->type != MF_VOL_CONTAINER)
			continue;
		p->containers = xreallocarray(p->containers, (size_t)p->ncontainers + 1, sizeof *p->containers);
		struct container_status *c = &p->containers[p->ncontainers++];
		*c = p->containers[0];
		c->message = xstrdup0(p->containers[0].message);
		char *name = xasprintf("volume%s", vol->name);
		c->name = intern(name);
		free(name);
		c->image = intern(vol->image);
		for (const char *l = x->images; l && *l;) { /* VOLUME IMAGE IMAGEID lines */
			const char *nl = strchr(l, '\n'), *end = nl ? nl : l + strlen(l);
			size_t vl = strlen(vol->name);
			if ((size_t)(end - l) > vl && strncmp(l, vol->name, vl) == 0 && l[vl] == ' ') {
				const char *sp = memrchr(l, ' ', (size_t)(end - l));
				char *id = xstrndup(sp + 1, (size_t)(end - sp - 1));
				c->image_id = intern(id);
				free(id);
			}
			l = nl ? nl + 1 : end;
		}
	}
	if (p->ncontainers > 1 && util_str_eq(p->containers[0].state, "waiting")) {
		free(p->containers[0].message); /* the image containers carry the pull's progress or failure */
		p->containers[0].message = NULL;
		p->containers[0].reason = intern("PodInitializing");
	}
}

static struct evm *pull_vm(const struct pulljob *j)
{
	struct evm *v = hmap_get(&j->eh->vms, j->key);
	return v && v->cur && strcmp(v->cur->uid, j->exec_uid) == 0 ? v : NULL;
}

static void pull_tick(void *arg)
{
	struct pulljob *j = arg;
	j->tick = loop_timer_add(PULL_TICK_MS, pull_tick, j);
	struct evm *v = pull_vm(j);
	if (v == NULL)
		return;
	char *msg = oci_progress_text(j->refs[j->cur], &j->prog);
	if (!util_str_eq(msg, v->cur->pull_msg)) {
		free(v->cur->pull_msg);
		v->cur->pull_msg = msg;
		evm_publish(v);
	} else
		free(msg);
}

static void *pull_thread(void *arg)
{
	struct pulljob *j = arg;
	for (int i = 0; i < j->n && j->err == NULL; i++) {
		struct oci_result res;
		char *e = NULL;
		j->prog.done = j->prog.total = j->prog.unpacked = 0;
		j->cur = i;
		if (oci_pull(j->refs[i], j->conf, j->root, &j->prog, &res, &e) < 0) {
			j->err = e;
			break;
		}
		j->ids[i] = image_id(j->refs[i], res.manifest_digest);
		j->fetched += res.fetched;
		oci_result_free(&res);
	}
	loop_post(pull_done, j);
	return NULL;
}

static void pull_done(void *arg)
{
	struct pulljob *j = arg;
	loop_timer_cancel(j->tick);
	for (struct pulljob **pp = &pulls; *pp; pp = &(*pp)->next)
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	struct preq *p = NULL;
	for (struct preq **pp = &j->eh->reqs; *pp; pp = &(*pp)->next)
		if ((*pp)->id == j->preq_id) {
			p = *pp;
			*pp = p->next;
			break;
		}
	struct evm *v = p ? p->v : NULL;
	if (v)
		v->inflight--;
	free(p);
	if (v && v->cur && strcmp(v->cur->uid, j->exec_uid) == 0 && exec_active(v->cur)) {
		struct exec *x = v->cur;
		free(x->pull_msg);
		x->pull_msg = NULL;
		if (v->stopping || v->deleting) {
			evm_end_exec(v, false, "Stopped", "stopped before its images were pulled");
		} else if (j->err) {
			free(v->start_error);
			v->start_error = xstrdup(j->err);
			evm_end_exec(v, true, "ErrImagePull", j->err);
		} else {
			double s = (double)(util_now_ms() - j->t0) / 1000.0;
			for (int i = 0; i < j->n; i++) {
				add_image(x, j->vols[i], j->refs[i], j->ids[i]);
				evm_add_event(v, "Normal", "Pulled", true, "Successfully pulled image \"%s\" in %.3fs (%s)",
					  j->refs[i], s, j->ids[i]);
			}
			log_info("engine: %s: pulled %llu bytes in %.3f s", v->key, (unsigned long long)j->fetched, s);
			evm_start_build(v);
		}
		eactions_check_waiters(v);
		ereconcile(v);
	} else if (v) {
		eactions_check_waiters(v);
		ereconcile(v);
	}
	pulljob_free(j);
}

void epull_cancel(const struct evm *v)
{
	for (struct pulljob *j = pulls; j; j = j->next)
		if (strcmp(j->key, v->key) == 0)
			j->prog.cancel = 1;
}

/* Decides, per containerDisk, local file / cached / pull; starts the pulls. True when the start now waits for
 * them (or failed: ErrImageNeverPull, a bad registries configuration). */
bool epull_begin(struct evm *v)
{
	struct exec *x = v->cur;
	char *imgs = esettings_dir("KVCON_ENGINE_IMAGES", "images");
	struct pulljob *j = NULL;
	char *fail_reason = NULL, *fail_msg = NULL;
	for (int i = 0; i < v->m->nvols && fail_msg == NULL; i++) {
		const struct mf_volume *vol = &v->m->vols[i];
		if (vol->type != MF_VOL_CONTAINER || epull_local_image(imgs, vol->image))
			continue;
		struct oci_ref r;
		char *e = NULL;
		if (oci_ref_parse(vol->image, &r, &e) < 0) {
			free(e); /* not a registry reference: the plan reports the missing file */
			continue;
		}
		const char *policy = vol->pull_policy ? vol->pull_policy : oci_default_policy(&r);
		oci_ref_free(&r);
		char *digest = NULL, *have = imgcache_lookup(vol->image, &digest);
		if (have && strcmp(policy, "Always") != 0) {
			char *id = image_id(vol->image, digest);
			add_image(x, vol->name, vol->image, id);
			evm_add_event(v, "Normal", "Pulled", true, "Container image \"%s\" already present on machine (%s)",
				  vol->image, id);
			free(id);
		} else if (strcmp(policy, "Never") == 0) {
			fail_reason = "ErrImageNeverPull";
			fail_msg = xasprintf("Container image \"%s\" is not present with pull policy of Never", vol->image);
		} else {
			if (j == NULL) {
				j = xcalloc(1, sizeof *j);
				char *cerr = NULL;
				j->conf = oci_regconf_load(&cerr);
				if (j->conf == NULL) {
					fail_reason = "ErrImagePull";
					fail_msg = xasprintf("registries configuration: %s", cerr);
					free(cerr);
				}
			}
			j->vols = xreallocarray(j->vols, (size_t)j->n + 1, sizeof *j->vols);
			j->refs = xreallocarray(j->refs, (size_t)j->n + 1, sizeof *j->refs);
			j->ids = xreallocarray(j->ids, (size_t)j->n + 1, sizeof *j->ids);
			j->vols[j->n] = xstrdup(vol->name);
			j->refs[j->n] = xstrdup(vol->image);
			j->ids[j->n++] = NULL;
			evm_add_event(v, "Normal", "Pulling", true, "Pulling image \"%s\"", vol->image);
		}
		free(have);
		free(digest);
	}
	free(imgs);
	if (fail_msg) {
		if (j)
			pulljob_free(j);
		free(v->start_error);
		v->start_error = xstrdup(fail_msg);
		evm_end_exec(v, true, fail_reason, fail_msg);
		free(fail_msg);
		return true;
	}
	if (j == NULL)
		return false;
	j->eh = v->eh;
	j->key = xstrdup(v->key);
	snprintf(j->exec_uid, UID_LEN, "%s", x->uid);
	j->root = esettings_image_cache();
	j->preq_id = pull_ids--;
	j->t0 = util_now_ms();
	ehost_track(v->eh, j->preq_id, PK_START, v);
	x->pull_msg = xasprintf("pulling image \"%s\"", j->refs[0]);
	j->next = pulls;
	pulls = j;
	j->tick = loop_timer_add(PULL_TICK_MS, pull_tick, j);
	evm_publish(v);
	evm_persist(v);
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, pull_thread, j) != 0) {
		j->err = xasprintf("cannot start a pull thread: %s", strerror(errno));
		loop_post(pull_done, j);
	}
	pthread_attr_destroy(&at);
	return true;
}

/* The references every VM of this process's hosts uses, and those of other hosts' records on disk. */
/* image joins the images in use (refs, n) unless it is there already: a host's VMs mostly share a few images, and
 * the cache is told each once (at 100,000 VMs of one image: one reference to resolve, not 100,000) */
static void ref_add(struct hmap *seen, char ***refs, int *n, const char *image)
{
	if (hmap_get(seen, image))
		return;
	char *s = xstrdup(image);
	*refs = xreallocarray(*refs, (size_t)*n + 1, sizeof **refs);
	(*refs)[(*n)++] = s;
	hmap_put(seen, s, s);
}

/* Whether the next change sweeps whatever it is: the first after the start (a pull killed with the process before
 * left its temporary files) and the one after a sweep that found a pull running. */
static bool sweep_due = true;

void epull_sweep_after(const struct manifest *old, const struct manifest *new_)
{
	if (sweep_due || manifest_drops_image(old, new_))
		epull_sweep();
}

void epull_sweep(void)
{
	char **refs = NULL;
	int n = 0;
	struct hmap seen;
	hmap_init(&seen);
	for (int h = 0; h < engine_g.nhosts; h++) {
		const char *key;
		void *val;
		for (size_t it = 0; hmap_next(&engine_g.hosts[h]->vms, &it, &key, &val);) {
			const struct evm *v = val;
			for (int i = 0; v->m && i < v->m->nvols; i++)
				if (v->m->vols[i].type == MF_VOL_CONTAINER && !v->deleting)
					ref_add(&seen, &refs, &n, v->m->vols[i].image);
		}
	}
	/* records of hosts this process has not opened keep their images too */
	char *dd = esettings_data_dir(), *hd = util_path_join(dd, "hosts");
	DIR *d = opendir(hd);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char *vd = xasprintf("%s/%s/vms", hd, de->d_name);
		bool mine = false;
		for (int h = 0; h < engine_g.nhosts; h++)
			mine |= util_str_eq(engine_g.hosts[h]->records_dir, vd);
		DIR *rd = mine ? NULL : opendir(vd);
		struct dirent *re;
		while (rd && (re = readdir(rd))) {
			size_t l = strlen(re->d_name);
			if (re->d_name[0] == '.' || l < 6 || strcmp(re->d_name + l - 5, ".json") != 0)
				continue;
			char *path = util_path_join(vd, re->d_name), *text = util_read_file(path, NULL), *err = NULL;
			struct evm *tmp = xcalloc(1, sizeof *tmp);
			if (text && record_load(tmp, text, &err) == 0)
				for (int i = 0; tmp->m && i < tmp->m->nvols; i++)
					if (tmp->m->vols[i].type == MF_VOL_CONTAINER)
						ref_add(&seen, &refs, &n, tmp->m->vols[i].image);
			evm_free(tmp);
			free(err);
			free(text);
			free(path);
		}
		if (rd)
			closedir(rd);
		free(vd);
	}
	if (d)
		closedir(d);
	free(hd);
	free(dd);
	int removed = 0, rc = imgcache_sweep((const char *const *)refs, n, &removed);
	sweep_due = rc != 0;
	if (rc == 0 && removed)
		log_info("engine: image cache: %d unused files removed", removed);
	hmap_free(&seen);
	for (int i = 0; i < n; i++)
		free(refs[i]);
	free(refs);
}

char *engine_image_cache(void)
{
	char *root = esettings_image_cache();
	if (imgcache_root() == NULL)
		imgcache_set_root(root);
	return root;
}
