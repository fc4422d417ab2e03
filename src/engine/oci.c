/* The OCI distribution client for containerDisks (contract in oci.h): registries configuration (references: ociref.c),
 * challenges, manifests, auth files, the layer's disk entry, and the pull itself over blocking libcurl. */
#include "engine/oci.h"

#include <archive.h>
#include <archive_entry.h>
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/config.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/imgcache.h"
#include "engine/manifest.h"

#define MANIFEST_MAX (4u << 20)
#define ERRBODY_MAX (64u << 10)
#define TOKEN_MAX (1u << 20)
/* A containerDisk is a VM's root disk shipped in a container image: Fedora, CentOS and Ubuntu containerdisks are
 * qcow2s of 0.5-2 GiB (virtual 5-10 GiB), a raw Windows disk some tens of GiB. The cap is on the size a layer's
 * tar header states (a raw disk counts its holes), so it leaves room for those, not for a 256 GiB zero bomb. */
#define IMAGE_MAX_DEFAULT ((uint64_t)64 << 30)
#define REG_TOTAL_MS 60000u /* a registry's token and manifest requests together */
#define BLOB_FLOOR_BPS 1024u /* a blob under this rate ... */
#define BLOB_FLOOR_S 30u     /* ... for this long is aborted */
#define ZERO_BLOCK 4096u     /* zero blocks of this size are holes in the unpacked disk */

/* ---- registries configuration ---- */

struct oci_loc {
	char *location;
	bool insecure;
	char *ca;
};

struct oci_regent {
	char *prefix;
	struct oci_loc main;
	bool blocked;
	struct oci_loc *mirrors;
	int nmirrors;
};

struct oci_regconf {
	struct oci_regent *ents;
	int n;
	struct oci_limits lim;
};

void oci_regconf_free(struct oci_regconf *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < c->n; i++) {
		free(c->ents[i].prefix);
		free(c->ents[i].main.location);
		free(c->ents[i].main.ca);
		for (int k = 0; k < c->ents[i].nmirrors; k++) {
			free(c->ents[i].mirrors[k].location);
			free(c->ents[i].mirrors[k].ca);
		}
		free(c->ents[i].mirrors);
	}
	free(c->ents);
	free(c);
}

static struct oci_regent *regent(struct oci_regconf *c, const char *prefix)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->ents[i].prefix, prefix) == 0)
			return &c->ents[i];
	c->ents = xreallocarray(c->ents, (size_t)c->n + 1, sizeof *c->ents);
	struct oci_regent *e = &c->ents[c->n++];
	memset(e, 0, sizeof *e);
	e->prefix = xstrdup(prefix);
	return e;
}

/* A location: host[:port][/path], the host as oci_ref_parse accepts it. */
static bool location_valid(const char *l)
{
	char *s = xstrdup(l);
	char *slash = strchr(s, '/');
	bool ok;
	if (slash) {
		*slash = '\0';
		ok = oci_host_valid(s) && oci_repo_valid(slash + 1);
	} else
		ok = oci_host_valid(s);
	free(s);
	return ok;
}

static int parse_reg_line(struct oci_regconf *c, bool mirror, char *val, char **err)
{
	char *save = NULL;
	char *prefix = strtok_r(val, " \t", &save);
	if (prefix == NULL || !location_valid(prefix)) {
		*err = xasprintf("registry prefix \"%s\" is not HOST[/PATH]", prefix ? prefix : "");
		return -1;
	}
	struct oci_loc loc = { 0 };
	bool blocked = false, have_loc = false;
	for (char *tok; (tok = strtok_r(NULL, " \t", &save));) {
		char *eq = strchr(tok, '=');
		if (eq == NULL)
			goto badopt;
		*eq = '\0';
		const char *v = eq + 1;
		if (strcmp(tok, "location") == 0 && location_valid(v)) {
			free(loc.location);
			loc.location = xstrdup(v);
			have_loc = true;
		} else if (strcmp(tok, "insecure") == 0 && (strcmp(v, "true") == 0 || strcmp(v, "false") == 0))
			loc.insecure = strcmp(v, "true") == 0;
		else if (strcmp(tok, "blocked") == 0 && !mirror && (strcmp(v, "true") == 0 || strcmp(v, "false") == 0))
			blocked = strcmp(v, "true") == 0;
		else if (strcmp(tok, "ca") == 0 && v[0] == '/') {
			free(loc.ca);
			loc.ca = xstrdup(v);
		} else {
			*eq = '=';
			goto badopt;
		}
		continue;
	badopt:
		*err = xasprintf("registry %s: \"%s\" is not one of location=HOST[/PATH], insecure=true|false, "
				 "ca=/FILE%s",
				 prefix, tok, mirror ? "" : ", blocked=true|false");
		free(loc.location);
		free(loc.ca);
		return -1;
	}
	if (mirror && !have_loc) {
		*err = xasprintf("registry.mirror %s: location= is required", prefix);
		free(loc.ca);
		return -1;
	}
	struct oci_regent *e = regent(c, prefix);
	if (mirror) {
		e->mirrors = xreallocarray(e->mirrors, (size_t)e->nmirrors + 1, sizeof *e->mirrors);
		e->mirrors[e->nmirrors++] = loc;
	} else {
		free(e->main.location);
		free(e->main.ca);
		e->main = loc;
		e->blocked = blocked;
	}
	return 0;
}

/* The registry lines and engine.image-max-size of a parsed config file (others ignored); NULL with *err naming
 * the first bad one. */
static struct oci_regconf *regconf_from(const struct config *cfg, char **err)
{
	struct oci_regconf *c = xcalloc(1, sizeof *c);
	c->lim = (struct oci_limits){ .image_max = IMAGE_MAX_DEFAULT,
				      .total_ms = REG_TOTAL_MS,
				      .floor_bps = BLOB_FLOOR_BPS,
				      .floor_s = BLOB_FLOOR_S };
	for (size_t i = 0; i < config_count(cfg); i++) {
		const struct config_entry *ent = config_at(cfg, i);
		if (strcmp(ent->key, "engine.image-max-size") == 0) {
			uint64_t v = 0;
			if (manifest_quantity(ent->value, &v) < 0 || v == 0) {
				char *w = config_where(cfg, ent);
				*err = xasprintf("%s: engine.image-max-size \"%s\" is not a size such as 20Gi or 10G", w,
						 ent->value);
				free(w);
				oci_regconf_free(c);
				return NULL;
			}
			c->lim.image_max = v;
			continue;
		}
		bool mirror = strcmp(ent->key, "registry.mirror") == 0;
		if (!mirror && strcmp(ent->key, "registry") != 0)
			continue;
		char *val = xstrdup(ent->value), *e = NULL;
		int rc = parse_reg_line(c, mirror, val, &e);
		free(val);
		if (rc < 0) {
			char *w = config_where(cfg, ent);
			*err = xasprintf("%s: %s", w, e);
			free(w);
			free(e);
			oci_regconf_free(c);
			return NULL;
		}
	}
	return c;
}

struct oci_regconf *oci_regconf_parse(const char *text, char **err)
{
	*err = NULL;
	struct config *cfg = config_parse(text, NULL, NULL);
	struct oci_regconf *c = regconf_from(cfg, err);
	config_free(cfg);
	return c;
}

/* $KVCON_TEST_REGISTRY_DEADLINES=TOTAL_S,FLOOR_BPS,FLOOR_S (tests only): each value may only make its limit
 * stricter, so the variable can shorten a test, never loosen a pull. */
static void test_deadlines(struct oci_limits *l)
{
	const char *e = getenv("KVCON_TEST_REGISTRY_DEADLINES");
	unsigned total, bps, secs;
	if (e == NULL || sscanf(e, "%u,%u,%u", &total, &bps, &secs) != 3)
		return;
	if (total > 0 && total < l->total_ms / 1000u)
		l->total_ms = total * 1000u;
	if (bps > l->floor_bps)
		l->floor_bps = bps;
	if (secs > 0 && secs < l->floor_s)
		l->floor_s = secs;
}

struct oci_regconf *oci_regconf_load(char **err)
{
	*err = NULL;
	struct config *cfg = config_load(NULL);
	struct oci_regconf *c = regconf_from(cfg, err);
	config_free(cfg);
	if (c)
		test_deadlines(&c->lim);
	return c;
}

const struct oci_limits *oci_regconf_limits(const struct oci_regconf *c)
{
	return &c->lim;
}

void oci_regconf_cap(struct oci_regconf *c, uint64_t max)
{
	if (max < c->lim.image_max)
		c->lim.image_max = max;
}

void oci_endpoints_free(struct oci_endpoint *e, int n)
{
	for (int i = 0; i < n; i++) {
		free(e[i].host);
		free(e[i].repo);
		free(e[i].ca);
	}
	free(e);
}

/* The CA from containers' certs.d for host, if any. */
static char *certs_d(const char *host)
{
	char *home = util_home_dir();
	char *cfg = getenv("XDG_CONFIG_HOME") && *getenv("XDG_CONFIG_HOME") ? xstrdup(getenv("XDG_CONFIG_HOME"))
		   : home						      ? xasprintf("%s/.config", home)
									      : NULL;
	free(home);
	char *cands[2] = { cfg ? xasprintf("%s/containers/certs.d/%s/ca.crt", cfg, host) : NULL,
			   xasprintf("/etc/containers/certs.d/%s/ca.crt", host) };
	free(cfg);
	char *found = NULL;
	for (int i = 0; i < 2; i++) {
		if (found == NULL && cands[i] && access(cands[i], R_OK) == 0)
			found = cands[i];
		else
			free(cands[i]);
	}
	return found;
}

static void add_endpoint(struct oci_endpoint **out, int *n, const char *name, const struct oci_loc *l, bool mirror)
{
	*out = xreallocarray(*out, (size_t)*n + 1, sizeof **out);
	struct oci_endpoint *e = &(*out)[(*n)++];
	memset(e, 0, sizeof *e);
	const char *slash = strchr(name, '/');
	e->host = slash ? xstrndup(name, (size_t)(slash - name)) : xstrdup(name);
	e->repo = xstrdup(slash ? slash + 1 : "");
	if (strcmp(e->host, "docker.io") == 0) { /* Docker Hub's API host */
		free(e->host);
		e->host = xstrdup("registry-1.docker.io");
	}
	e->insecure = l ? l->insecure : false;
	e->ca = l && l->ca ? xstrdup(l->ca) : certs_d(e->host);
	e->mirror = mirror;
}

int oci_endpoints(const struct oci_regconf *c, const struct oci_ref *ref, struct oci_endpoint **out)
{
	*out = NULL;
	int n = 0;
	char *name = xasprintf("%s/%s", ref->registry, ref->repo);
	char *full = oci_ref_string(ref);
	const struct oci_regent *best = NULL;
	size_t blen = 0;
	for (int i = 0; c && i < c->n; i++) {
		size_t pl = strlen(c->ents[i].prefix);
		if (strncmp(full, c->ents[i].prefix, pl) != 0) /* equal: full has at least pl bytes */
			continue;
		char b = full[pl];
		if ((b == '\0' || b == '/' || b == ':' || b == '@') && pl > blen && pl <= strlen(name)) {
			best = &c->ents[i];
			blen = pl;
		}
	}
	if (best && best->blocked) {
		free(name);
		free(full);
		return 0;
	}
	const char *rest = name + blen;
	for (int k = 0; best && k < best->nmirrors; k++) {
		char *m = xasprintf("%s%s", best->mirrors[k].location, rest);
		add_endpoint(out, &n, m, &best->mirrors[k], true);
		free(m);
	}
	char *main = best && best->main.location ? xasprintf("%s%s", best->main.location, rest) : xstrdup(name);
	add_endpoint(out, &n, main, best ? &best->main : NULL, false);
	free(main);
	free(name);
	free(full);
	return n;
}

/* ---- WWW-Authenticate ---- */

void oci_challenge_free(struct oci_challenge *c)
{
	free(c->scheme);
	free(c->realm);
	free(c->service);
	free(c->scope);
	memset(c, 0, sizeof *c);
}

static bool is_token_char(char c)
{
	return c != '\0' && (isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

int oci_challenge_parse(const char *hdr, struct oci_challenge *out)
{
	memset(out, 0, sizeof *out);
	const char *p = hdr;
	while (*p == ' ' || *p == '\t')
		p++;
	const char *s = p;
	while (is_token_char(*p))
		p++;
	if (p == s || p - s > 32)
		return -1;
	out->scheme = xstrndup(s, (size_t)(p - s));
	for (char *q = out->scheme; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	/* auth-params: name=token|quoted-string, comma separated; a following challenge starts with a bare token */
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0')
			break;
		const char *ks = p;
		while (is_token_char(*p))
			p++;
		size_t kl = (size_t)(p - ks);
		while (*p == ' ' || *p == '\t')
			p++;
		if (kl == 0 || *p != '=') {
			if (kl > 0 && out->realm == NULL && out->scope == NULL && out->service == NULL &&
			    strcmp(out->scheme, "basic") != 0)
				goto bad; /* token68 or garbage where params belong */
			break;    /* the next challenge: only the first is used */
		}
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		struct buf v;
		buf_init(&v);
		if (*p == '"') {
			p++;
			while (*p && *p != '"') {
				if (*p == '\\' && p[1])
					p++;
				buf_add_char(&v, *p++);
				if (v.len > 4096) {
					buf_free(&v);
					goto bad;
				}
			}
			if (*p != '"') {
				buf_free(&v);
				goto bad;
			}
			p++;
		} else {
			const char *vs = p;
			while (is_token_char(*p) || *p == '/' || *p == ':' || *p == '=')
				p++;
			buf_add(&v, vs, (size_t)(p - vs));
		}
		char *val = buf_steal(&v);
		char **slot = kl == 5 && strncasecmp(ks, "realm", 5) == 0     ? &out->realm
			      : kl == 7 && strncasecmp(ks, "service", 7) == 0 ? &out->service
			      : kl == 5 && strncasecmp(ks, "scope", 5) == 0   ? &out->scope
									      : NULL;
		if (slot && *slot == NULL)
			*slot = val;
		else
			free(val);
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p && *p != ',')
			goto bad;
	}
	return 0;
bad:
	oci_challenge_free(out);
	return -1;
}

/* ---- manifests ---- */

static const char *const MT_OCI_INDEX = "application/vnd.oci.image.index.v1+json";
static const char *const MT_DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json";
static const char *const MT_OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
static const char *const MT_DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json";

static void desc_free(struct oci_desc *d)
{
	free(d->media_type);
	free(d->digest);
	free(d->os);
	free(d->arch);
	free(d->variant);
}

void oci_manifest_free(struct oci_manifest *m)
{
	if (m == NULL)
		return;
	free(m->media_type);
	desc_free(&m->config);
	for (int i = 0; i < m->nitems; i++)
		desc_free(&m->items[i]);
	free(m->items);
	memset(m, 0, sizeof *m);
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;
	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static int parse_desc(json_object *o, struct oci_desc *d, const char *what, char **err)
{
	json_object *v;
	if (!json_object_is_type(o, json_type_object)) {
		*err = xasprintf("%s: expected an object", what);
		return -1;
	}
	const char *mt = jstr(o, "mediaType"), *dg = jstr(o, "digest");
	if (!oci_digest_valid(dg)) {
		*err = xasprintf("%s: digest %s is not a sha256 digest kvcon can verify", what, dg ? dg : "(none)");
		return -1;
	}
	if (!json_object_object_get_ex(o, "size", &v) || !json_object_is_type(v, json_type_int) ||
	    json_object_get_int64(v) < 0) {
		*err = xasprintf("%s: size missing or negative", what);
		return -1;
	}
	d->size = json_object_get_int64(v);
	d->media_type = xstrdup0(mt);
	d->digest = xstrdup(dg);
	json_object *plat;
	if (json_object_object_get_ex(o, "platform", &plat) && json_object_is_type(plat, json_type_object)) {
		d->os = xstrdup0(jstr(plat, "os"));
		d->arch = xstrdup0(jstr(plat, "architecture"));
		d->variant = xstrdup0(jstr(plat, "variant"));
	}
	return 0;
}

int oci_manifest_parse(const char *json, size_t len, const char *content_type, struct oci_manifest *out,
		       char **err)
{
	memset(out, 0, sizeof *out);
	if (len > MANIFEST_MAX) {
		*err = xstrdup("manifest larger than 4 MiB");
		return -1;
	}
	json_tokener *tok = json_tokener_new();
	json_object *root = json_tokener_parse_ex(tok, json, (int)len);
	bool complete = json_tokener_get_error(tok) == json_tokener_success && tok->char_offset == (int)len;
	json_tokener_free(tok);
	if (root == NULL || !complete || !json_object_is_type(root, json_type_object)) {
		json_object_put(root);
		*err = xstrdup("manifest is not a JSON object");
		return -1;
	}
	int rc = -1;
	json_object *v;
	if (json_object_object_get_ex(root, "schemaVersion", &v) &&
	    (!json_object_is_type(v, json_type_int) || json_object_get_int(v) != 2)) {
		*err = xstrdup("only schemaVersion 2 manifests (OCI, Docker v2 schema 2) are supported");
		goto out;
	}
	const char *mt = jstr(root, "mediaType");
	char ctbuf[128] = "";
	if (mt == NULL && content_type) {
		snprintf(ctbuf, sizeof ctbuf, "%s", content_type);
		ctbuf[strcspn(ctbuf, "; \t")] = '\0';
		mt = ctbuf;
	}
	json_object *list = NULL;
	bool has_manifests = json_object_object_get_ex(root, "manifests", &list);
	if (mt == NULL || mt[0] == '\0')
		mt = has_manifests ? MT_OCI_INDEX : MT_OCI_MANIFEST; /* OCI allows omitting it */
	if (strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0) {
		out->kind = OCI_M_INDEX;
	} else if (strcmp(mt, MT_OCI_MANIFEST) == 0 || strcmp(mt, MT_DOCKER_MANIFEST) == 0) {
		out->kind = OCI_M_IMAGE;
		if (!json_object_object_get_ex(root, "config", &v) || parse_desc(v, &out->config, "config", err) < 0) {
			if (*err == NULL)
				*err = xstrdup("image manifest without a config");
			goto out;
		}
		list = NULL;
		json_object_object_get_ex(root, "layers", &list);
	} else {
		*err = xasprintf("unsupported manifest media type \"%.80s\"", mt);
		goto out;
	}
	out->media_type = xstrdup(mt);
	if (list == NULL || !json_object_is_type(list, json_type_array)) {
		*err = xstrdup(out->kind == OCI_M_INDEX ? "index without a manifests list" : "manifest without layers");
		goto out;
	}
	size_t n = json_object_array_length(list);
	if (n > 4096) {
		*err = xstrdup("more than 4096 entries");
		goto out;
	}
	out->items = xcalloc(n + 1, sizeof *out->items);
	for (size_t i = 0; i < n; i++) {
		char what[48];
		snprintf(what, sizeof what, "%s[%zu]", out->kind == OCI_M_INDEX ? "manifests" : "layers", i);
		if (parse_desc(json_object_array_get_idx(list, i), &out->items[i], what, err) < 0)
			goto out;
		out->nitems++;
	}
	rc = 0;
out:
	json_object_put(root);
	if (rc < 0)
		oci_manifest_free(out);
	return rc;
}

const struct oci_desc *oci_index_pick(const struct oci_manifest *m)
{
	if (m->kind != OCI_M_INDEX)
		return NULL;
	for (int i = 0; i < m->nitems; i++) {
		const struct oci_desc *d = &m->items[i];
		if (d->os && d->arch && strcmp(d->os, "linux") == 0 && strcmp(d->arch, "amd64") == 0)
			return d;
	}
	return NULL;
}

bool oci_layer_type_ok(const char *mt)
{
	static const char *ok[] = {
		"application/vnd.oci.image.layer.v1.tar",
		"application/vnd.oci.image.layer.v1.tar+gzip",
		"application/vnd.oci.image.layer.v1.tar+zstd",
		"application/vnd.docker.image.rootfs.diff.tar",
		"application/vnd.docker.image.rootfs.diff.tar.gzip",
	};
	if (mt == NULL)
		return false;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(mt, ok[i]) == 0)
			return true;
	return false;
}

/* ---- credentials ---- */

/* An auth file key as host[/path]: scheme and a trailing "/v1/" or "/" dropped; Docker Hub's names as docker.io. */
static char *auth_key(const char *k)
{
	if (strncmp(k, "https://", 8) == 0)
		k += 8;
	else if (strncmp(k, "http://", 7) == 0)
		k += 7;
	char *s = xstrdup(k);
	size_t n = strlen(s);
	while (n > 0 && s[n - 1] == '/')
		s[--n] = '\0';
	if (n > 3 && strcmp(s + n - 3, "/v1") == 0)
		s[n - 3] = '\0';
	if (strcmp(s, "index.docker.io") == 0 || strcmp(s, "registry-1.docker.io") == 0) {
		free(s);
		s = xstrdup("docker.io");
	}
	return s;
}

char *oci_auth_from_json(const char *json, size_t len, const char *host, const char *repo)
{
	if (len > (8u << 20))
		return NULL;
	json_tokener *tok = json_tokener_new();
	json_object *root = json_tokener_parse_ex(tok, json, (int)len);
	json_tokener_free(tok);
	json_object *auths;
	char *found = NULL;
	size_t best = 0;
	const char *h = strcmp(host, "registry-1.docker.io") == 0 ? "docker.io" : host;
	char *full = xasprintf("%s/%s", h, repo ? repo : "");
	if (root && json_object_object_get_ex(root, "auths", &auths) && json_object_is_type(auths, json_type_object)) {
		json_object_object_foreach(auths, key, val)
		{
			char *k = auth_key(key);
			size_t kl = strlen(k);
			/* host matches exactly; host/path matches the repository at a path boundary */
			bool match = strcmp(k, h) == 0 ||
				     (strncmp(full, k, kl) == 0 && (full[kl] == '/' || full[kl] == '\0') &&
				      strchr(k, '/'));
			const char *a = jstr(val, "auth");
			if (match && kl + 1 > best && a) {
				char *dec = util_b64_decode(a, strlen(a), NULL, 0);
				if (dec && strchr(dec, ':')) {
					free(found);
					found = dec;
					best = kl + 1;
				} else
					free(dec);
			}
			free(k);
		}
	}
	free(full);
	json_object_put(root);
	return found;
}

static char *oci_auth_lookup(const char *host, const char *repo, char **from)
{
	char *files[6] = { 0 };
	int n = 0;
	const char *e;
	if ((e = getenv("REGISTRY_AUTH_FILE")) && *e)
		files[n++] = xstrdup(e);
	if ((e = getenv("XDG_RUNTIME_DIR")) && *e)
		files[n++] = xasprintf("%s/containers/auth.json", e);
	if ((e = getenv("XDG_CONFIG_HOME")) && *e)
		files[n++] = xasprintf("%s/containers/auth.json", e);
	if ((e = getenv("DOCKER_CONFIG")) && *e)
		files[n++] = xasprintf("%s/config.json", e);
	char *home = util_home_dir();
	if (home)
		files[n++] = xasprintf("%s/.docker/config.json", home);
	free(home);
	char *found = NULL;
	for (int i = 0; i < n; i++) {
		size_t len = 0;
		char *text = found ? NULL : util_read_file(files[i], &len);
		if (text) {
			found = oci_auth_from_json(text, len, host, repo);
			if (found && from)
				*from = xstrdup(files[i]);
		}
		free(text);
		free(files[i]);
	}
	return found;
}

/* ---- the tar layer ---- */

bool oci_disk_entry(const char *path)
{
	if (strncmp(path, "./", 2) == 0)
		path += 2;
	else if (path[0] == '/')
		path++;
	if (strncmp(path, "disk/", 5) != 0)
		return false;
	const char *name = path + 5;
	size_t n = strlen(name);
	if (n == 0 || n > 255 || name[0] == '.' || strchr(name, '/'))
		return false;
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	static const char *exts[] = { ".qcow2", ".img", ".raw" };
	for (int i = 0; i < 3; i++) {
		size_t el = strlen(exts[i]);
		if (n > el && strcmp(name + n - el, exts[i]) == 0)
			return true;
	}
	return false;
}

/* "1.5 GiB", "12.0 MiB", "3.0 KiB", "12 B" for messages. */
static void human_size(char *out, size_t len, uint64_t n)
{
	if (n >= (uint64_t)1 << 30)
		snprintf(out, len, "%.1f GiB", (double)n / (1 << 30));
	else if (n >= (uint64_t)1 << 20)
		snprintf(out, len, "%.1f MiB", (double)n / (1 << 20));
	else if (n >= 1024)
		snprintf(out, len, "%.1f KiB", (double)n / 1024);
	else
		snprintf(out, len, "%u B", (unsigned)n);
}

/* What the disk may take on fd's filesystem: the space available to us less a margin (5% of the filesystem, at
 * most 1 GiB) left for the overlays, logs and records beside the cache. -1 with errno when unknown. */
static int64_t free_for_disk(int fd)
{
	struct statvfs sv;
	if (fstatvfs(fd, &sv) < 0)
		return -1;
	uint64_t fs = (uint64_t)sv.f_blocks * sv.f_frsize, avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	uint64_t margin = fs / 20 < ((uint64_t)1 << 30) ? fs / 20 : (uint64_t)1 << 30;
	return avail > margin ? (int64_t)(avail - margin) : 0;
}

static bool all_zero(const char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

/* Writes len bytes at off, blocks of zeros left as holes (the file is new, and data only ever goes past what was
 * written before, so a hole reads as the zeros it stands for; ftruncate sets the size at the end). */
static int write_sparse(int fd, const char *p, size_t len, uint64_t off, char **err)
{
	while (len > 0) {
		size_t n = ZERO_BLOCK - (size_t)(off % ZERO_BLOCK); /* up to the next block boundary */
		if (n > len)
			n = len;
		if (all_zero(p, n)) {
			p += n;
			off += n;
			len -= n;
			continue;
		}
		while (n < len) { /* the data run goes on to the next zero block */
			size_t m = len - n < ZERO_BLOCK ? len - n : ZERO_BLOCK;
			if (all_zero(p + n, m))
				break;
			n += m;
		}
		for (size_t left = n; left > 0;) {
			ssize_t w = pwrite(fd, p, left, (off_t)off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				*err = xasprintf("writing the disk: %s", w < 0 ? strerror(errno) : "short write");
				return -1;
			}
			p += w;
			off += (uint64_t)w;
			left -= (size_t)w;
			len -= (size_t)w;
		}
	}
	return 0;
}

/* 1 found, 0 none, -1 an unreadable layer, -2 refused (over a bound: stop downloading it). */
static int extract_from(struct archive *a, int fd, const struct oci_unpack *u, char **name, char **err)
{
	struct archive_entry *ent;
	for (;;) {
		int r = archive_read_next_header(a, &ent);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN) {
			*err = xasprintf("layer: %s", archive_error_string(a) ? archive_error_string(a) : "unreadable tar");
			return -1;
		}
		const char *path = archive_entry_pathname(ent);
		if (path == NULL || !oci_disk_entry(path) || archive_entry_filetype(ent) != AE_IFREG)
			continue;
		int64_t size = archive_entry_size(ent);
		if (size < 0) {
			*err = xstrdup("layer: the disk entry has no size");
			return -1;
		}
		/* refused on the header's word, before a byte is written */
		int64_t avail = u->avail >= 0 ? u->avail : free_for_disk(fd);
		if (avail < 0) {
			*err = xasprintf("the image cache's free space: %s", strerror(errno));
			return -1;
		}
		if ((uint64_t)size > u->cap || size > avail) {
			char need[32], have[32], cap[32];
			human_size(need, sizeof need, (uint64_t)size);
			human_size(have, sizeof have, (uint64_t)avail);
			human_size(cap, sizeof cap, u->cap);
			*err = xasprintf("layer: the disk %.80s needs %s, %s free / cap %s (engine.image-max-size)",
					 path, need, have, cap);
			return -2;
		}
		const void *buf;
		size_t len;
		la_int64_t off;
		uint64_t end = 0; /* what was written so far ends here: data never goes back (holes stay zeros) */
		while ((r = archive_read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
			if (off < 0 || (uint64_t)off < end || (uint64_t)off + len > (uint64_t)size) {
				*err = xstrdup("layer: disk data beyond the entry's size or out of order");
				return -2;
			}
			if (write_sparse(fd, buf, len, (uint64_t)off, err) < 0)
				return -1;
			end = (uint64_t)off + len;
			if (u->unpacked)
				*u->unpacked = end;
		}
		if (r != ARCHIVE_EOF) {
			*err = xasprintf("layer: %s", archive_error_string(a) ? archive_error_string(a) : "truncated");
			return -1;
		}
		if (ftruncate(fd, size) < 0) { /* the holes at the end */
			*err = xasprintf("writing the disk: %s", strerror(errno));
			return -1;
		}
		if (u->unpacked)
			*u->unpacked = (uint64_t)size;
		const char *slash = strrchr(path, '/');
		*name = xstrdup(slash ? slash + 1 : path);
		return 1;
	}
}

static struct archive *layer_reader(void)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
	archive_read_support_format_tar(a);
	return a;
}

int oci_layer_extract_mem(const void *data, size_t len, int fd, const struct oci_unpack *u, char **name, char **err)
{
	struct archive *a = layer_reader();
	int rc;
	if (archive_read_open_memory(a, data, len) != ARCHIVE_OK) {
		*err = xasprintf("layer: %s", archive_error_string(a) ? archive_error_string(a) : "cannot open");
		rc = -1;
	} else
		rc = extract_from(a, fd, u, name, err);
	archive_read_free(a);
	return rc < 0 ? -1 : rc;
}

/* ---- the pull ---- */

struct resp {
	long status;
	struct buf body;   /* manifests, tokens, error bodies */
	size_t max;
	char *www, *ctype, *dcd;
	int fd;            /* blobs: the socket to the layer's unpacker (-1: collect) */
	EVP_MD_CTX *md;
	uint64_t written;
	uint64_t expect;   /* blobs: the size the manifest gave (never more is taken) */
	bool too_big, write_err;
	bool sink_done;    /* the unpacker stopped reading (it has the disk, or failed): only hash the rest */
	const int *sink_refused; /* set by the unpacker when it refused the layer: stop the download */
	bool refused;
	CURL *easy;
	struct oci_progress *prog;
};

struct puller {
	const struct oci_endpoint *ep;
	const char *scheme;
	char *bearer;  /* a token from the token endpoint */
	char *creds;   /* user:password from an auth file */
	char *creds_from;
	bool basic;    /* send creds as Basic */
	bool authed;   /* the challenge was answered once */
	struct oci_progress *prog;
	const struct oci_limits *lim;
	uint64_t deadline; /* util_now_ms() by which this registry's token and manifest requests are done */
	char errbuf[CURL_ERROR_SIZE];
};

static void resp_reset(struct resp *r)
{
	r->status = 0;
	buf_reset(&r->body);
	free(r->www);
	free(r->ctype);
	free(r->dcd);
	r->www = r->ctype = r->dcd = NULL;
	r->too_big = r->write_err = false;
}

static void resp_free(struct resp *r)
{
	resp_reset(r);
	buf_free(&r->body);
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	size_t len = size * n;
	if (len >= 5 && strncmp(data, "HTTP/", 5) == 0) { /* a new response (after a redirect) */
		free(r->www);
		free(r->ctype);
		free(r->dcd);
		r->www = r->ctype = r->dcd = NULL;
		return len;
	}
	const char *colon = memchr(data, ':', len);
	if (colon == NULL)
		return len;
	size_t kl = (size_t)(colon - data);
	const char *v = colon + 1;
	size_t vl = len - kl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
		vl--;
	if (vl > 8192)
		return len;
	char **slot = kl == 16 && strncasecmp(data, "WWW-Authenticate", 16) == 0      ? &r->www
		      : kl == 12 && strncasecmp(data, "Content-Type", 12) == 0	      ? &r->ctype
		      : kl == 21 && strncasecmp(data, "Docker-Content-Digest", 21) == 0 ? &r->dcd
											: NULL;
	if (slot && *slot == NULL)
		*slot = xstrndup(v, vl);
	return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	size_t len = size * n;
	long st = 0;
	curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &st);
	if (r->prog && r->prog->cancel)
		return 0;
	if (r->fd >= 0 && st >= 200 && st < 300) {
		if (r->written + len > r->expect) {
			r->too_big = true;
			return 0;
		}
		EVP_DigestUpdate(r->md, data, len); /* every byte, so the digest is checked whatever the unpacker does */
		const char *p = data;
		size_t left = r->sink_done ? 0 : len;
		while (left > 0) {
			ssize_t w = send(r->fd, p, left, MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EPIPE || errno == ECONNRESET)) {
				if (r->sink_refused && __atomic_load_n(r->sink_refused, __ATOMIC_ACQUIRE)) {
					r->refused = true;
					return 0;
				}
				r->sink_done = true;
				break;
			}
			if (w <= 0) {
				r->write_err = true;
				return 0;
			}
			p += w;
			left -= (size_t)w;
		}
		r->written += len;
		if (r->prog)
			r->prog->done += len;
		return len;
	}
	size_t max = st >= 200 && st < 300 ? r->max : ERRBODY_MAX;
	if (r->body.len + len > max) {
		r->too_big = true;
		return 0;
	}
	buf_add(&r->body, data, len);
	return len;
}

/* Not "unreachable": a slow registry is not retried over plain HTTP. */
static char *deadline_error(const struct puller *p)
{
	return xasprintf("registry %s did not finish its token and manifest requests within %u s: too slow",
			 p->ep->host, p->lim->total_ms / 1000u);
}

/* One GET. 0 with r filled (any HTTP status), or -1 with *err on a transport failure. */
static int do_get(struct puller *p, const char *url, const char *accept, const char *bearer, bool basic,
		  bool tls_of_ep, struct resp *r, char **err)
{
	CURL *e = curl_easy_init();
	struct curl_slist *h = NULL;
	if (accept) {
		char *a = xasprintf("Accept: %s", accept);
		h = curl_slist_append(h, a);
		free(a);
	}
	if (bearer) {
		char *a = xasprintf("Authorization: Bearer %s", bearer);
		h = curl_slist_append(h, a);
		free(a);
	}
	resp_reset(r);
	r->easy = e;
	p->errbuf[0] = '\0';
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "kvcon");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, p->ep->insecure ? "http,https" : "https");
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 15000L);
	/* a blob (its unpacker's socket) streams as long as it keeps above the floor; everything else (token,
	 * manifests) shares the registry's one deadline */
	bool blob = r->fd >= 0;
	uint64_t now = util_now_ms();
	if (blob) {
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, (long)p->lim->floor_bps);
		curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)p->lim->floor_s);
	} else {
		if (now >= p->deadline) {
			curl_slist_free_all(h);
			curl_easy_cleanup(e);
			r->easy = NULL;
			*err = deadline_error(p);
			return -1;
		}
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(p->deadline - now));
	}
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, p->errbuf);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, 256L << 10);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	if (basic && p->creds) {
		curl_easy_setopt(e, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(e, CURLOPT_USERPWD, p->creds);
	}
	if (tls_of_ep) {
		if (p->ep->ca)
			curl_easy_setopt(e, CURLOPT_CAINFO, p->ep->ca);
		if (p->ep->insecure) {
			curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
			curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
		}
	}
	CURLcode rc = curl_easy_perform(e);
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &r->status);
	curl_off_t connected = 0;
	curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &connected);
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	r->easy = NULL;
	if (rc == CURLE_OK)
		return 0;
	if (r->refused)
		*err = xstrdup("the layer was refused"); /* the unpacker's reason replaces it */
	else if (r->write_err)
		*err = xasprintf("writing to the image cache: %s", strerror(errno));
	else if (r->prog && r->prog->cancel)
		*err = xstrdup("the pull was cancelled");
	else if (r->too_big)
		*err = xasprintf("registry %s sent a response larger than expected", p->ep->host);
	else if (rc == CURLE_OPERATION_TIMEDOUT && !blob && util_now_ms() >= p->deadline)
		*err = deadline_error(p);
	else if (rc == CURLE_OPERATION_TIMEDOUT && blob && connected > 0) {
		char floor[32];
		human_size(floor, sizeof floor, p->lim->floor_bps);
		*err = xasprintf("registry %s sent a blob slower than %s/s for %u s: aborted (%llu bytes received)",
				 p->ep->host, floor, p->lim->floor_s, (unsigned long long)r->written);
	} else
		*err = xasprintf("registry %s unreachable: %s", p->ep->host, p->errbuf[0] ? p->errbuf : curl_easy_strerror(rc));
	return -1;
}

/* The registry's error text ({"errors":[{"code","message"}]}), sanitized, or the status. Caller frees. */
static char *reg_error(const struct resp *r)
{
	json_tokener *tok = json_tokener_new();
	json_object *root = r->body.len ? json_tokener_parse_ex(tok, r->body.data, (int)r->body.len) : NULL;
	json_tokener_free(tok);
	json_object *errs, *first;
	char *out = NULL;
	if (root && json_object_object_get_ex(root, "errors", &errs) && json_object_is_type(errs, json_type_array) &&
	    (first = json_object_array_get_idx(errs, 0))) {
		const char *code = jstr(first, "code"), *msg = jstr(first, "message");
		char *c = util_escape_display(code ? code : ""), *m = util_escape_display(msg ? msg : "");
		out = xasprintf("%s%s%.200s", c, *c && *m ? ": " : "", m);
		free(c);
		free(m);
	}
	json_object_put(root);
	return out ? out : xasprintf("HTTP %ld", r->status);
}

static char *url_of(struct puller *p, const char *what)
{
	return xasprintf("%s://%s/v2/%s/%s", p->scheme, p->ep->host, p->ep->repo, what);
}

/* Answers a 401's challenge: a Bearer token from the realm (with the auth file's credentials, if any), or Basic. */
static int answer_challenge(struct puller *p, const struct resp *r, char **err)
{
	struct oci_challenge c;
	if (r->www == NULL || oci_challenge_parse(r->www, &c) < 0) {
		*err = xasprintf("registry %s refused access (HTTP 401) without a usable WWW-Authenticate challenge",
				 p->ep->host);
		return -1;
	}
	int rc = -1;
	if (strcmp(c.scheme, "basic") == 0) {
		if (p->creds == NULL)
			*err = xasprintf("registry %s requires authentication and no credentials for it were found "
					 "(auth files: $REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json, "
					 "~/.docker/config.json)",
					 p->ep->host);
		else {
			p->basic = true;
			rc = 0;
		}
	} else if (strcmp(c.scheme, "bearer") == 0 && c.realm) {
		CURLU *u = curl_url();
		char *rhost = NULL, *rscheme = NULL;
		bool ok = curl_url_set(u, CURLUPART_URL, c.realm, 0) == CURLUE_OK &&
			  curl_url_get(u, CURLUPART_SCHEME, &rscheme, 0) == CURLUE_OK &&
			  curl_url_get(u, CURLUPART_HOST, &rhost, 0) == CURLUE_OK &&
			  (strcmp(rscheme, "https") == 0 || (strcmp(rscheme, "http") == 0 && p->ep->insecure));
		if (ok) {
			char *scope = c.scope ? xstrdup(c.scope) : xasprintf("repository:%s:pull", p->ep->repo);
			char *q = xasprintf("scope=%s", scope);
			curl_url_set(u, CURLUPART_QUERY, q, CURLU_APPENDQUERY | CURLU_URLENCODE);
			free(q);
			if (c.service) {
				q = xasprintf("service=%s", c.service);
				curl_url_set(u, CURLUPART_QUERY, q, CURLU_APPENDQUERY | CURLU_URLENCODE);
				free(q);
			}
			free(scope);
			char *url = NULL;
			curl_url_get(u, CURLUPART_URL, &url, 0);
			char *ephost = xstrdup(p->ep->host);
			ephost[strcspn(ephost, ":")] = '\0';
			struct resp t = { .fd = -1, .max = TOKEN_MAX };
			buf_init(&t.body);
			if (do_get(p, url, "application/json", NULL, p->creds != NULL, strcmp(rhost, ephost) == 0, &t,
				   err) == 0) {
				json_tokener *tok = json_tokener_new();
				json_object *root = json_tokener_parse_ex(tok, t.body.data ? t.body.data : "",
									  (int)t.body.len);
				json_tokener_free(tok);
				const char *tk = jstr(root, "token");
				if (tk == NULL)
					tk = jstr(root, "access_token");
				bool printable = tk && *tk && strlen(tk) < 16384;
				for (const char *s = tk; printable && *s; s++)
					printable = *s > ' ' && *s < 0x7f;
				if (t.status == 200 && printable) {
					free(p->bearer);
					p->bearer = xstrdup(tk);
					rc = 0;
				} else if (t.status == 401 || t.status == 403)
					*err = xasprintf("unauthorized: the token service of registry %s refused %s",
							 p->ep->host,
							 p->creds ? "the credentials" : "anonymous access");
				else
					*err = xasprintf("the token service of registry %s answered HTTP %ld without a "
							 "token",
							 p->ep->host, t.status);
				json_object_put(root);
			}
			resp_free(&t);
			free(ephost);
			curl_free(url);
		} else
			*err = xasprintf("registry %s: unusable token realm in its challenge", p->ep->host);
		curl_free(rhost);
		curl_free(rscheme);
		curl_url_cleanup(u);
	} else
		*err = xasprintf("registry %s asks for the unsupported auth scheme \"%.20s\"", p->ep->host, c.scheme);
	oci_challenge_free(&c);
	return rc;
}

/* A GET on the registry's API with the auth dance. 0 with r (any status), -1 with *err. */
static int reg_get(struct puller *p, const char *what, const char *accept, struct resp *r, char **err)
{
	char *url = url_of(p, what);
	int rc = do_get(p, url, accept, p->bearer, p->basic, true, r, err);
	if (rc == 0 && r->status == 401 && !p->authed) {
		p->authed = true;
		if (answer_challenge(p, r, err) < 0)
			rc = -1;
		else {
			if (r->written > 0) { /* a 401 never streams: nothing went to the unpacker yet */
				rc = -1;
				*err = xasprintf("registry %s sent data before asking for credentials", p->ep->host);
			}
			if (rc == 0)
				rc = do_get(p, url, accept, p->bearer, p->basic, true, r, err);
		}
	}
	if (rc == 0 && r->status == 401)
		*err = p->creds ? xasprintf("unauthorized: registry %s refused the credentials from %s", p->ep->host,
					    p->creds_from)
				: xasprintf("unauthorized: registry %s requires authentication and no credentials for "
					    "it were found (auth files: $REGISTRY_AUTH_FILE, "
					    "$XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json)",
					    p->ep->host);
	free(url);
	return rc == 0 && r->status == 401 ? -1 : rc;
}

static char *sha256_hex(EVP_MD_CTX *md)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_DigestFinal_ex(md, d, &n);
	char *out = xmalloc(7 + 2 * n + 1);
	memcpy(out, "sha256:", 7);
	for (unsigned i = 0; i < n; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", d[i]);
	return out;
}

static char *sha256_of(const void *data, size_t len)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(md, EVP_sha256(), NULL);
	EVP_DigestUpdate(md, data, len);
	char *s = sha256_hex(md);
	EVP_MD_CTX_free(md);
	return s;
}

static const char *ACCEPT = "application/vnd.oci.image.index.v1+json, "
			    "application/vnd.docker.distribution.manifest.list.v2+json, "
			    "application/vnd.oci.image.manifest.v1+json, "
			    "application/vnd.docker.distribution.manifest.v2+json";

/* GETs a manifest (by tag or digest), verifies its digest (against want, or the registry's
 * Docker-Content-Digest), parses it. *digest: its sha256. */
static int get_manifest(struct puller *p, const char *ref, const char *want, struct oci_manifest *m, char **digest,
			char **err)
{
	struct resp r = { .fd = -1, .max = MANIFEST_MAX };
	buf_init(&r.body);
	char *what = xasprintf("manifests/%s", ref);
	int rc = -1;
	*digest = NULL;
	if (reg_get(p, what, ACCEPT, &r, err) < 0)
		goto out;
	if (r.status == 404) {
		char *e = reg_error(&r);
		*err = xasprintf("manifest %s not found in %s on registry %s (%s)", ref, p->ep->repo, p->ep->host, e);
		free(e);
		goto out;
	}
	if (r.status != 200) {
		char *e = reg_error(&r);
		*err = xasprintf("registry %s answered the manifest request with %s", p->ep->host, e);
		free(e);
		goto out;
	}
	char *got = sha256_of(r.body.data ? r.body.data : "", r.body.len);
	const char *expect = want ? want : (oci_digest_valid(r.dcd) ? r.dcd : NULL);
	if (expect && strcmp(got, expect) != 0) {
		*err = xasprintf("digest mismatch: registry %s served a manifest with digest %s for %s", p->ep->host,
				 got, expect);
		free(got);
		goto out;
	}
	*digest = got;
	char *perr = NULL;
	if (oci_manifest_parse(r.body.data ? r.body.data : "", r.body.len, r.ctype, m, &perr) < 0) {
		*err = xasprintf("registry %s: manifest %s: %s", p->ep->host, ref, perr);
		free(perr);
		goto out;
	}
	rc = 0;
out:
	if (rc < 0) {
		free(*digest);
		*digest = NULL;
	}
	free(what);
	resp_free(&r);
	return rc;
}

/* Reads the disk's first bytes: qcow2 (without a backing or external data file) or raw. */
static const char *disk_format(int fd, char **err)
{
	unsigned char h[104] = { 0 };
	ssize_t n = pread(fd, h, sizeof h, 0);
	if (n < 4 || memcmp(h, "QFI\xfb", 4) != 0)
		return "raw";
	uint64_t backing = 0, incompat = 0;
	for (int i = 0; i < 8; i++)
		backing = backing << 8 | h[8 + i];
	uint32_t version = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
	if (version >= 3 && n >= 80)
		for (int i = 0; i < 8; i++)
			incompat = incompat << 8 | h[72 + i];
	if (backing) {
		*err = xstrdup("the containerDisk's qcow2 names a backing file: refused (it could reach host files)");
		return NULL;
	}
	if (incompat & 0x4) {
		*err = xstrdup("the containerDisk's qcow2 uses an external data file: refused");
		return NULL;
	}
	return "qcow2";
}

/* The layer's unpacker: libarchive reading the blob from a socket while it downloads (nothing of the blob is
 * stored; only the disk entry is written, to a temporary file). */
struct unpacker {
	int in, out;
	struct oci_unpack spec;
	char *name, *err;
	int rc;
	int refused; /* atomic: rc is -2, the download stops */
};

static void *unpack_thread(void *arg)
{
	struct unpacker *u = arg;
	struct archive *a = layer_reader();
	if (archive_read_open_fd(a, u->in, 1 << 20) != ARCHIVE_OK) {
		u->err = xasprintf("layer: %s", archive_error_string(a) ? archive_error_string(a) : "cannot open");
		u->rc = -1;
	} else
		u->rc = extract_from(a, u->out, &u->spec, &u->name, &u->err);
	if (u->rc == -2)
		__atomic_store_n(&u->refused, 1, __ATOMIC_RELEASE);
	archive_read_free(a);
	close(u->in); /* the downloader sees EPIPE and only hashes what is left */
	return NULL;
}

/* Downloads one layer and unpacks its disk at the same time; the disk enters the cache only once the blob's
 * digest and size are verified. 1 stored (*ext set), 0 no disk in it, -1 error. */
static int fetch_layer(struct puller *p, const char *root, const struct oci_desc *l, const char **ext,
		       uint64_t *fetched, char **err)
{
	char *dpath = NULL;
	int sv[2], rc = -1;
	int dfd = imgcache_tmp(root, &dpath, err);
	if (dfd < 0)
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		*err = xasprintf("socketpair: %s", strerror(errno));
		unlink(dpath);
		free(dpath);
		close(dfd);
		return -1;
	}
	if (p->prog)
		p->prog->unpacked = 0;
	struct unpacker u = { .in = sv[1], .out = dfd };
	u.spec = (struct oci_unpack){ .cap = p->lim->image_max,
				      .avail = -1,
				      .unpacked = p->prog ? &p->prog->unpacked : NULL };
	pthread_t t;
	if (pthread_create(&t, NULL, unpack_thread, &u) != 0) {
		*err = xstrdup("cannot start the layer's unpacker");
		close(sv[0]);
		close(sv[1]);
		unlink(dpath);
		free(dpath);
		close(dfd);
		return -1;
	}
	struct resp r = {
		.fd = sv[0], .max = 0, .expect = (uint64_t)l->size, .prog = p->prog, .sink_refused = &u.refused
	};
	buf_init(&r.body);
	r.md = EVP_MD_CTX_new();
	EVP_DigestInit_ex(r.md, EVP_sha256(), NULL);
	char *what = xasprintf("blobs/%s", l->digest);
	char *derr = NULL;
	int got_rc = reg_get(p, what, NULL, &r, &derr);
	close(sv[0]); /* end of the stream for the unpacker */
	pthread_join(t, NULL);
	if (u.rc == -2) { /* refused on its header's word or its data: whatever the download did meanwhile */
		*err = xasprintf("registry %s: blob %s: %s", p->ep->host, l->digest, u.err);
		goto out;
	}
	if (got_rc < 0) {
		*err = derr;
		derr = NULL;
		goto out;
	}
	if (r.status != 200) {
		char *e = reg_error(&r);
		*err = xasprintf("registry %s: blob %s: %s", p->ep->host, l->digest, e);
		free(e);
		goto out;
	}
	char *got = sha256_hex(r.md);
	if (strcmp(got, l->digest) != 0 || r.written != (uint64_t)l->size) {
		*err = xasprintf("digest mismatch: registry %s served %llu bytes with digest %s for blob %s (%lld bytes)",
				 p->ep->host, (unsigned long long)r.written, got, l->digest, (long long)l->size);
		free(got);
		goto out;
	}
	free(got);
	*fetched += r.written;
	if (u.rc <= 0) {
		rc = u.rc;
		if (rc < 0)
			*err = xasprintf("registry %s: blob %s: %s", p->ep->host, l->digest, u.err);
		goto out;
	}
	*ext = disk_format(dfd, err);
	if (*ext == NULL || imgcache_commit_disk(root, dpath, dfd, l->digest, *ext, err) < 0)
		goto out;
	free(dpath);
	dpath = NULL; /* renamed */
	rc = 1;
out:
	free(derr);
	free(what);
	free(u.name);
	free(u.err);
	EVP_MD_CTX_free(r.md);
	resp_free(&r);
	if (dpath)
		unlink(dpath);
	free(dpath);
	close(dfd);
	return rc;
}

char *oci_progress_text(const char *ref, const struct oci_progress *p)
{
	if (p->total == 0)
		return xasprintf("pulling image \"%s\"", ref);
	char done[32], total[32], unpacked[32];
	human_size(done, sizeof done, p->done);
	human_size(total, sizeof total, p->total);
	human_size(unpacked, sizeof unpacked, p->unpacked);
	return xasprintf("pulling image \"%s\": %s of %s fetched, %s unpacked", ref, done, total, unpacked);
}

void oci_result_free(struct oci_result *r)
{
	free(r->manifest_digest);
	free(r->disk);
	free(r->endpoint);
	memset(r, 0, sizeof *r);
}

/* The whole pull from one endpoint. */
static int pull_from(struct puller *p, const struct oci_ref *ref, const char *root, const char *refstr,
		     struct oci_result *res, char **err)
{
	struct oci_manifest m = { 0 }, im = { 0 };
	char *mdig = NULL, *idig = NULL;
	int rc = -1;
	if (get_manifest(p, ref->digest ? ref->digest : ref->tag, ref->digest, &m, &mdig, err) < 0)
		goto out;
	if (m.kind == OCI_M_INDEX) {
		const struct oci_desc *d = oci_index_pick(&m);
		if (d == NULL) {
			*err = xasprintf("registry %s: the image index of %s has no linux/amd64 image", p->ep->host,
					 refstr);
			goto out;
		}
		if (get_manifest(p, d->digest, d->digest, &im, &idig, err) < 0)
			goto out;
		if (im.kind != OCI_M_IMAGE) {
			*err = xasprintf("registry %s: %s is an index inside an index", p->ep->host, d->digest);
			goto out;
		}
	} else {
		im = m;
		memset(&m, 0, sizeof m);
		idig = mdig;
		mdig = NULL;
	}
	uint64_t total = 0;
	for (int i = 0; i < im.nitems; i++) {
		if (!oci_layer_type_ok(im.items[i].media_type)) {
			*err = xasprintf("registry %s: layer %s has the unsupported media type \"%.80s\"", p->ep->host,
					 im.items[i].digest, im.items[i].media_type ? im.items[i].media_type : "");
			goto out;
		}
		/* a blob is never taken past its stated size: that size is bounded as the disk it may hold (a tar
		 * of incompressible data is a little larger than its files) */
		uint64_t bound = p->lim->image_max + p->lim->image_max / 16 + ((uint64_t)1 << 20);
		if ((uint64_t)im.items[i].size > bound) {
			char need[32], cap[32];
			human_size(need, sizeof need, (uint64_t)im.items[i].size);
			human_size(cap, sizeof cap, p->lim->image_max);
			*err = xasprintf("registry %s: layer %s needs %s / cap %s (engine.image-max-size)", p->ep->host,
					 im.items[i].digest, need, cap);
			goto out;
		}
		total += (uint64_t)im.items[i].size;
	}
	if (p->prog)
		p->prog->total = total;
	/* KubeVirt's layout: the disk is in the last layer that has /disk/ */
	for (int i = im.nitems - 1; i >= 0; i--) {
		const struct oci_desc *l = &im.items[i];
		char *have = imgcache_disk(root, l->digest);
		const char *ext = NULL;
		if (have) {
			ext = strstr(have, ".qcow2") ? "qcow2" : "raw";
			free(have);
		} else {
			int f = fetch_layer(p, root, l, &ext, &res->fetched, err);
			if (f < 0)
				goto out;
			if (f == 0)
				continue;
		}
		/* the image ID is the digest the reference names: the index's when there is one (a repo digest) */
		const char *top = mdig ? mdig : idig;
		if (imgcache_set_ref(root, refstr, top, l->digest, ext, err) < 0)
			goto out;
		res->manifest_digest = xstrdup(top);
		res->disk = imgcache_disk(root, l->digest);
		res->endpoint = xstrdup(p->ep->host);
		rc = 0;
		goto out;
	}
	*err = xasprintf("registry %s: %s has no disk in KubeVirt's containerDisk layout (/disk/NAME.qcow2, .img "
			 "or .raw)",
			 p->ep->host, refstr);
out:
	oci_manifest_free(&m);
	oci_manifest_free(&im);
	free(mdig);
	free(idig);
	return rc;
}

int oci_pull(const char *text, const struct oci_regconf *conf, const char *root, struct oci_progress *prog,
	     struct oci_result *res, char **err)
{
	memset(res, 0, sizeof *res);
	*err = NULL;
	struct oci_ref ref;
	if (oci_ref_parse(text, &ref, err) < 0)
		return -1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	char *refstr = oci_ref_string(&ref);
	struct oci_endpoint *eps = NULL;
	int neps = oci_endpoints(conf, &ref, &eps), rc = -1;
	int lock = -1;
	struct buf errs;
	buf_init(&errs);
	if (neps == 0) {
		*err = xasprintf("registry %s is blocked in kvcon's registries configuration", ref.registry);
		goto out;
	}
	lock = imgcache_lock_shared(root, err);
	if (lock < 0)
		goto out;
	static const struct oci_limits dflt = { IMAGE_MAX_DEFAULT, REG_TOTAL_MS, BLOB_FLOOR_BPS, BLOB_FLOOR_S };
	const struct oci_limits *lim = conf ? &conf->lim : &dflt;
	for (int i = 0; i < neps && rc < 0; i++) {
		struct puller p = { .ep = &eps[i],
				    .prog = prog,
				    .scheme = "https",
				    .lim = lim,
				    .deadline = util_now_ms() + lim->total_ms };
		p.creds = oci_auth_lookup(eps[i].host, eps[i].repo, &p.creds_from);
		char *e = NULL;
		rc = pull_from(&p, &ref, root, refstr, res, &e);
		if (rc < 0 && eps[i].insecure && e && strstr(e, "unreachable") && !(prog && prog->cancel)) {
			/* an insecure registry may speak plain HTTP */
			free(e);
			e = NULL;
			p.scheme = "http";
			p.authed = false;
			rc = pull_from(&p, &ref, root, refstr, res, &e);
		}
		if (rc < 0) {
			if (errs.len)
				buf_add_str(&errs, "; ");
			buf_printf(&errs, "%s%s", eps[i].mirror && neps > 1 ? "mirror: " : "", e ? e : "failed");
		}
		free(e);
		free(p.bearer);
		free(p.creds);
		free(p.creds_from);
	}
	if (rc < 0)
		*err = xasprintf("pulling image \"%s\": %s", refstr, errs.data ? errs.data : "failed");
out:
	if (lock >= 0)
		close(lock);
	buf_free(&errs);
	oci_endpoints_free(eps, neps);
	free(refstr);
	oci_ref_free(&ref);
	return rc;
}
