/* A DataVolume's source and CDI's phases (dvsource.h): what the engine accepts in spec.source, and the step a
 * DataVolume takes next. Pure. */
#include "apiserver/dvsource.h"

#include <stdlib.h>
#include <string.h>

#include "apiserver/dvimport.h"
#include "apiserver/internal.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/manifest.h"
#include "engine/ociref.h"

static const char *str(json_object *o, const char *k)
{
	json_object *x = apis_jget(o, k);
	return x && json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
}

/* The fields of src.KIND the engine does not act on: refused rather than ignored. */
static char *refuse(json_object *s, const char *kind, const char *const *unsupported)
{
	for (size_t i = 0; unsupported[i]; i++)
		if (apis_jget(s, unsupported[i]))
			return xasprintf("spec.source.%s.%s: Unsupported value: the engine does not support %s", kind,
					 unsupported[i], unsupported[i]);
	return NULL;
}

static char *parse_http(json_object *s, struct dvs *out)
{
	static const char *const no[] = { "secretRef", "certConfigMap", "extraHeaders", "secretExtraHeaders", NULL };
	const char *url = str(s, "url");
	if (url == NULL || !(util_has_prefix(url, "http://") || util_has_prefix(url, "https://")) || strlen(url) > 2048 ||
	    !manifest_plain_text(url))
		return xstrdup("spec.source.http.url: Invalid value: an http:// or https:// URL");
	if (apis_jget(s, "checksum") && !dvimport_checksum_ok(str(s, "checksum")))
		return xstrdup("spec.source.http.checksum: Invalid value: ALG:HEX (md5, sha1, sha256, sha512)");
	out->url = url;
	out->checksum = str(s, "checksum");
	return refuse(s, "http", no);
}

static char *parse_registry(json_object *s, struct dvs *out)
{
	static const char *const no[] = { "secretRef", "certConfigMap", "imageStream", "platform", NULL };
	char *why = refuse(s, "registry", no);
	if (why)
		return why;
	const char *url = str(s, "url"), *pm = str(s, "pullMethod");
	if (apis_jget(s, "pullMethod") && !util_str_eq(pm, "pod") && !util_str_eq(pm, "node"))
		return xstrdup("spec.source.registry.pullMethod: Unsupported value: \"pod\" or \"node\"");
	if (url == NULL || !util_has_prefix(url, "docker://"))
		return xstrdup("spec.source.registry.url: Invalid value: docker://REGISTRY/REPOSITORY[:TAG|@DIGEST] (the "
			       "engine pulls docker:// references only)");
	struct oci_ref r;
	char *e = NULL;
	if (strlen(url) > 1024 || !manifest_plain_text(url) || oci_ref_parse(url + 9, &r, &e) < 0) {
		why = xasprintf("spec.source.registry.url: Invalid value: not an image reference%s%s", e ? ": " : "",
				e ? e : "");
		free(e);
		return why;
	}
	oci_ref_free(&r);
	out->url = url + 9;
	return NULL;
}

static char *parse_pvc(json_object *s, const char *ns, struct dvs *out)
{
	const char *sns = str(s, "namespace"), *name = str(s, "name");
	if (name == NULL || !apis_valid_name(name))
		return xstrdup("spec.source.pvc.name: Required value: the source claim's name");
	if (apis_jget(s, "namespace") && (sns == NULL || !manifest_dns_label(sns)))
		return xstrdup("spec.source.pvc.namespace: Invalid value: a namespace's name");
	out->ns = sns ? sns : ns;
	out->name = name;
	return NULL;
}

int dvs_parse(json_object *spec, const char *ns, struct dvs *out, char **why)
{
	static const struct {
		const char *key;
		enum dvs_kind kind;
	} kinds[] = { { "blank", DVS_BLANK }, { "http", DVS_HTTP }, { "registry", DVS_REGISTRY }, { "pvc", DVS_PVC } };
	memset(out, 0, sizeof *out);
	*why = NULL;
	json_object *src = apis_jget(spec, "source");
	if (src == NULL || !json_object_is_type(src, json_type_object) || json_object_object_length(src) != 1) {
		*why = xstrdup("spec.source: Required value: exactly one source (http, registry, pvc or blank)");
		return -1;
	}
	json_object_object_foreach(src, k, v) {
		size_t i = 0;
		while (i < sizeof kinds / sizeof kinds[0] && strcmp(kinds[i].key, k) != 0)
			i++;
		if (i == sizeof kinds / sizeof kinds[0]) {
			*why = xasprintf("spec.source.%s: Unsupported value: the engine imports http, registry, pvc and "
					 "blank sources",
					 manifest_plain_text(k) && strlen(k) < 64 ? k : "?");
			return -1;
		}
		out->kind = kinds[i].kind;
		if (!json_object_is_type(v, json_type_object)) {
			*why = xasprintf("spec.source.%s: Invalid value: an object", k);
			return -1;
		}
		if (out->kind == DVS_HTTP)
			*why = parse_http(v, out);
		else if (out->kind == DVS_REGISTRY)
			*why = parse_registry(v, out);
		else if (out->kind == DVS_PVC)
			*why = parse_pvc(v, ns, out);
	}
	return *why ? -1 : 0;
}

const char *dvs_phase(enum dvs_kind k, bool scheduled)
{
	if (k == DVS_PVC)
		return scheduled ? "CloneScheduled" : "CloneInProgress";
	return scheduled ? "ImportScheduled" : "ImportInProgress";
}

const char *dvs_component(enum dvs_kind k)
{
	return k == DVS_PVC ? "datavolume-pvc-clone-controller" : "datavolume-import-controller";
}

struct dvs_step dvs_next(enum dvs_kind k, const char *phase, enum dvs_claim claim, enum dvs_src src)
{
	if (k == DVS_PVC && src == DVS_SRC_MISSING) /* CDI waits for the source to appear */
		return (struct dvs_step){ DVS_WAIT, "Pending", "CloneWithoutSource" };
	if (claim == DVS_CLAIM_PENDING)
		return (struct dvs_step){ DVS_WAIT, "Pending", NULL };
	if (claim == DVS_CLAIM_WFFC)
		return (struct dvs_step){ DVS_WAIT, "WaitForFirstConsumer", NULL };
	if (k == DVS_BLANK)
		return (struct dvs_step){ DVS_SUCCEED, "Succeeded", NULL };
	if (k == DVS_PVC && src == DVS_SRC_IN_USE) /* a running VM writes it: the copy waits */
		return (struct dvs_step){ DVS_WAIT, dvs_phase(k, true), "CloneSourceInUse" };
	if (util_str_eq(phase, dvs_phase(k, false)))
		return (struct dvs_step){ DVS_RESTART, dvs_phase(k, false), NULL };
	return (struct dvs_step){ DVS_START, dvs_phase(k, true), NULL };
}
