/* engine_records TEMPLATE DIR N [NAMESPACES]: writes N engine VM records into DIR (a host's records directory,
 * engine-data/hosts/KEY/vms) for tests/bench/engine_100k.sh, with the engine's own record code: TEMPLATE is a
 * record the service wrote for one VM created through its API (kubectl apply); each copy gets its own name
 * (vm-NNNNNN), namespace (ns-K of NAMESPACES, default 10), UID and creation time, in the manifest and in kubectl's
 * last-applied annotation alike, is checked by manifest_parse and written by record_dump. The service reads them as
 * any records, when its host connects. Written without fsync (one sync(2) at the end): a bench's records, not a
 * user's. */
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/evm.h"
#include "engine/manifest.h"
#include "engine/record.h"

static json_object *child(json_object *o, const char *key)
{
	json_object *c = NULL;
	return o && json_object_object_get_ex(o, key, &c) ? c : NULL;
}

static json_object *child_new(json_object *o, const char *key)
{
	json_object *c = child(o, key);
	if (c == NULL) {
		c = json_object_new_object();
		json_object_object_add(o, key, c);
	}
	return c;
}

/* A manifest (or kubectl's last-applied configuration) renamed: metadata.name and .namespace, and the template's
 * kubevirt.io/vm label when it has one. */
static void rename_obj(json_object *o, const char *ns, const char *name)
{
	json_object *md = child_new(o, "metadata");
	json_object_object_add(md, "name", json_object_new_string(name));
	json_object_object_add(md, "namespace", json_object_new_string(ns));
	json_object *tl = child(child(child(child(o, "spec"), "template"), "metadata"), "labels");
	if (child(tl, "kubevirt.io/vm"))
		json_object_object_add(tl, "kubevirt.io/vm", json_object_new_string(name));
}

static const char LAST_APPLIED[] = "kubectl.kubernetes.io/last-applied-configuration";

/* The template's manifest as NS/NAME's (caller frees). */
static char *manifest_for(const char *text, const char *ns, const char *name)
{
	json_object *o = json_tokener_parse(text);
	if (o == NULL) {
		fprintf(stderr, "engine_records: the template's manifest is not JSON\n");
		exit(1);
	}
	rename_obj(o, ns, name);
	json_object *ann = child(child(o, "metadata"), "annotations");
	json_object *la = child(ann, LAST_APPLIED);
	if (la) {
		json_object *l = json_tokener_parse(json_object_get_string(la));
		if (l) {
			rename_obj(l, ns, name);
			char *s = xasprintf("%s\n", json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN |
										      JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_object_add(ann, LAST_APPLIED, json_object_new_string(s));
			free(s);
			json_object_put(l);
		}
	}
	char *out = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return out;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: engine_records TEMPLATE DIR N [NAMESPACES]\n");
		return 2;
	}
	long n = strtol(argv[3], NULL, 10), nns = argc > 4 ? strtol(argv[4], NULL, 10) : 10;
	if (n <= 0 || nns <= 0) {
		fprintf(stderr, "engine_records: N and NAMESPACES must be positive\n");
		return 2;
	}
	char *tmpl = util_read_file(argv[1], NULL), *err = NULL;
	struct evm *v = xcalloc(1, sizeof *v);
	if (tmpl == NULL || record_load(v, tmpl, &err) < 0) {
		fprintf(stderr, "engine_records: %s: %s\n", argv[1], err ? err : "cannot read");
		return 1;
	}
	char *base = v->text;
	v->text = NULL;
	int64_t now = (int64_t)time(NULL);
	for (long i = 0; i < n; i++) {
		char ns[32], name[32];
		snprintf(ns, sizeof ns, "ns-%ld", i % nns);
		snprintf(name, sizeof name, "vm-%06ld", i);
		free(v->text);
		manifest_free(v->m);
		v->text = manifest_for(base, ns, name);
		v->m = manifest_parse(v->text, strlen(v->text), &err);
		if (v->m == NULL) {
			fprintf(stderr, "engine_records: %s/%s: %s\n", ns, name, err);
			return 1;
		}
		util_uuid_v4(v->uid);
		v->created = now - (n - i); /* a second apart, the newest last */
		char *json = record_dump(v), *path = xasprintf("%s/%s_%s.json", argv[2], ns, name);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		size_t len = strlen(json);
		if (fd < 0 || write(fd, json, len) != (ssize_t)len || close(fd) != 0) {
			perror(path);
			return 1;
		}
		free(path);
		free(json);
	}
	sync();
	free(base);
	free(tmpl);
	evm_free(v);
	return 0;
}
