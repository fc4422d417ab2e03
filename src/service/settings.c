/* The engine's settings (settings.h): its data directories, the config file's engine.* keys (engine.images,
 * engine.volumes, engine.allow-host-path, engine.host), the default URI and the records on disk. */
#include "service/settings.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"

/* ---- paths ---- */

char *esettings_data_dir(void)
{
	char *s = util_state_dir();
	char *d = util_path_join(s, "engine-data");
	free(s);
	return d;
}

void esettings_values_free(char **vals)
{
	for (size_t i = 0; vals && vals[i]; i++)
		free(vals[i]);
	free(vals);
}

/* An engine setting: $ENV, else the first non-empty "key = value" of the config file (core/config.h), else NULL.
 * Caller frees. */
char *engine_setting(const char *env, const char *key)
{
	const char *e = getenv(env);
	if (e && *e)
		return xstrdup(e);
	struct config *cfg = config_load(NULL);
	const char *v = config_get(cfg, key);
	char *val = v ? xstrdup(v) : NULL;
	config_free(cfg);
	return val;
}


/* The directories the host's owner allows for hostDisk and kernelBoot host paths: "engine.allow-host-path =
 * DIR" lines of the config file only (an opt-in, like KubeVirt's HostDisk feature gate; absolute paths).
 * A NULL-terminated array (caller frees with esettings_values_free; never NULL). */
char **esettings_host_roots(void)
{
	struct config *cfg = config_load(NULL);
	char **vals = xcalloc(config_count(cfg) + 1, sizeof *vals);
	size_t j = 0;
	for (size_t i = 0; i < config_count(cfg); i++) {
		const struct config_entry *e = config_at(cfg, i);
		if (strcmp(e->key, "engine.allow-host-path") != 0 || e->value[0] == '\0')
			continue;
		if (e->value[0] == '/')
			vals[j++] = xstrdup(e->value);
		else {
			char *w = config_where(cfg, e);
			log_warn("config %s: engine.allow-host-path = %s ignored: not an absolute path", w, e->value);
			free(w);
		}
	}
	config_free(cfg);
	return vals;
}

/* The engine's cache of containerDisks pulled from registries (engine-data/imgcache): images the engine wrote
 * itself, as trusted as the image directory. */
char *esettings_image_cache(void)
{
	char *d = esettings_data_dir();
	char *p = util_path_join(d, "imgcache");
	free(d);
	return p;
}

char *esettings_dir(const char *env, const char *sub)
{
	char *e = engine_setting(env, strcmp(sub, "images") == 0 ? "engine.images" : "engine.volumes");
	if (e)
		return e;
	char *d = esettings_data_dir();
	char *p = util_path_join(d, sub);
	free(d);
	return p;
}

/* $KVCON_ENGINE_URI, else $LIBVIRT_DEFAULT_URI, else qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine. Caller
 * frees. */
char *esettings_default_uri(void)
{
	/* -c and the config's hosts come first (the callers); then kvcon's own variable, then libvirt's as virsh
	 * honours it, then the embedded driver under kvcon's state directory */
	const char *e = getenv("KVCON_ENGINE_URI");
	if (e && *e)
		return xstrdup(e);
	e = getenv("LIBVIRT_DEFAULT_URI");
	if (e && *e)
		return xstrdup(e);
	char *s = util_state_dir();
	char *u = xasprintf("qemu:///embed?root=%s/engine", s);
	free(s);
	return u;
}

/* ---- engine.host = URI [migrate-uri=URI] (repeatable): the hosts a migration may go to (migrate.h) ---- */

struct cfg_host {
	char *uri, *mig_uri;
};

static struct {
	bool loaded;
	struct cfg_host *hosts;
	int n;
	char **uris;
} CFG;

static void cfg_load(void)
{
	if (CFG.loaded)
		return;
	CFG.loaded = true;
	struct config *cfg = config_load(NULL);
	for (size_t i = 0; i < config_count(cfg); i++) {
		const struct config_entry *e = config_at(cfg, i);
		if (strcmp(e->key, "engine.host") != 0)
			continue;
		char *words = xstrdup(e->value), *sp = NULL;
		char *uri = strtok_r(words, " \t", &sp);
		if (uri) {
			CFG.hosts = xreallocarray(CFG.hosts, (size_t)CFG.n + 1, sizeof *CFG.hosts);
			struct cfg_host *h = &CFG.hosts[CFG.n++];
			h->uri = xstrdup(uri);
			h->mig_uri = NULL;
			for (char *a = strtok_r(NULL, " \t", &sp); a; a = strtok_r(NULL, " \t", &sp)) {
				if (util_has_prefix(a, "migrate-uri=")) {
					free(h->mig_uri);
					h->mig_uri = xstrdup(a + 12);
				} else {
					char *w = config_where(cfg, e);
					log_warn("config %s: engine.host: '%s' ignored (expected migrate-uri=URI)", w, a);
					free(w);
				}
			}
		}
		free(words);
	}
	config_free(cfg);
	if (CFG.n) {
		CFG.uris = xcalloc((size_t)CFG.n + 1, sizeof *CFG.uris);
		for (int i = 0; i < CFG.n; i++)
			CFG.uris[i] = CFG.hosts[i].uri;
	}
}

char *const *migrate_config_hosts(void)
{
	cfg_load();
	return CFG.uris;
}

const char *migrate_uri_for(const char *uri, const char *name)
{
	(void)name;
	cfg_load();
	for (int i = 0; i < CFG.n; i++)
		if (strcmp(CFG.hosts[i].uri, uri) == 0)
			return CFG.hosts[i].mig_uri;
	return NULL;
}

bool migrate_uri_configured(const char *uri)
{
	cfg_load();
	for (int i = 0; i < CFG.n; i++)
		if (util_str_eq(CFG.hosts[i].uri, uri) || util_str_eq(CFG.hosts[i].mig_uri, uri))
			return true;
	return false;
}

/* ---- the records on disk (engine/record.c writes them) ---- */

bool engine_has_record(const char *ns, const char *name)
{
	char *dd = esettings_data_dir();
	char *hosts = util_path_join(dd, "hosts");
	free(dd);
	char *want = ns && name ? xasprintf("%s_%s.json", ns, name) : NULL;
	bool any = false;
	DIR *d = opendir(hosts);
	for (struct dirent *e; d && !any && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		char *vms = xasprintf("%s/%s/vms", hosts, e->d_name);
		DIR *v = opendir(vms);
		for (struct dirent *r; v && !any && (r = readdir(v)) != NULL;) {
			size_t l = strlen(r->d_name);
			any = want ? strcmp(r->d_name, want) == 0 : l > 5 && strcmp(r->d_name + l - 5, ".json") == 0;
		}
		if (v)
			closedir(v);
		free(vms);
	}
	if (d)
		closedir(d);
	free(want);
	free(hosts);
	return any;
}
