/* VirtualMachine manifest validation: a walk over the document tree where every map lists the keys it knows.
 * A known key is either read or refused with a reason; an unknown key is refused as unsupported. */
#include "engine/manifest.h"
#include "engine/esecret.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/ydoc.h"
#include "core/xmalloc.h"
#include "engine/placement.h"

struct vctx {
	char *err;            /* first error wins */
	yaml_document_t *doc; /* the manifest (core/ydoc.h) */
};

__attribute__((format(printf, 3, 4))) static bool fail(struct vctx *v, const char *path, const char *fmt, ...)
{
	if (v->err)
		return false;
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	v->err = xasprintf("%s: %s", path, msg);
	free(msg);
	return false;
}

static yaml_node_t *get(struct vctx *v, const yaml_node_t *map, const char *key)
{
	return ydoc_get(v->doc, map, key);
}

static char *sub(const char *path, const char *key)
{
	return path[0] ? xasprintf("%s.%s", path, key) : xstrdup(key);
}

static char *idx(const char *path, size_t i)
{
	return xasprintf("%s[%zu]", path, i);
}

/* A key a map may carry: handled (reason NULL) or refused with reason. */
struct key_rule {
	const char *key;
	const char *reason;
};

/* Refuses keys of map that are not in rules, and keys whose rule has a reason. */
static bool check_keys(struct vctx *v, yaml_node_t *map, const char *path, const struct key_rule *rules)
{
	if (map->type != YAML_MAPPING_NODE)
		return fail(v, path, "expected a map");
	for (size_t i = 0; i < ydoc_len(map); i++) {
		const struct key_rule *r;
		for (r = rules; r->key; r++)
			if (strcmp(r->key, ydoc_key(v->doc, map, i)) == 0)
				break;
		char *p = sub(path, ydoc_key(v->doc, map, i));
		if (r->key == NULL) {
			fail(v, p, "unknown or unsupported field");
			free(p);
			return false;
		}
		if (r->reason && !ydoc_is_null(ydoc_at(v->doc, map, i))) {
			fail(v, p, "%s", r->reason);
			free(p);
			return false;
		}
		free(p);
	}
	return true;
}

static bool want_map(struct vctx *v, yaml_node_t *n, const char *path)
{
	if (n && n->type == YAML_MAPPING_NODE)
		return true;
	if (n && ydoc_is_null(n))
		return true; /* "{}" written as an empty value */
	return fail(v, path, "expected a map");
}

static const char *scalar(struct vctx *v, yaml_node_t *n, const char *path)
{
	if (n == NULL || n->type != YAML_SCALAR_NODE) {
		fail(v, path, "expected a string");
		return NULL;
	}
	return ydoc_str(n);
}

static bool get_str(struct vctx *v, yaml_node_t *map, const char *key, const char *path, char **out)
{
	yaml_node_t *n = get(v, map, key);
	if (n == NULL || ydoc_is_null(n))
		return true;
	char *p = sub(path, key);
	const char *s = scalar(v, n, p);
	free(p);
	if (s == NULL)
		return false;
	free(*out);
	*out = xstrdup(s);
	return true;
}

static bool get_bool(struct vctx *v, yaml_node_t *map, const char *key, const char *path, bool *out)
{
	yaml_node_t *n = get(v, map, key);
	if (n == NULL || ydoc_is_null(n))
		return true;
	char *p = sub(path, key);
	bool ok = true;
	if (n->type == YAML_SCALAR_NODE && !ydoc_quoted(n) && strcmp(ydoc_str(n), "true") == 0)
		*out = true;
	else if (n->type == YAML_SCALAR_NODE && !ydoc_quoted(n) && strcmp(ydoc_str(n), "false") == 0)
		*out = false;
	else
		ok = fail(v, p, "expected true or false");
	free(p);
	return ok;
}

static bool get_int(struct vctx *v, yaml_node_t *map, const char *key, const char *path, long lo, long hi,
		    int *out)
{
	yaml_node_t *n = get(v, map, key);
	if (n == NULL || ydoc_is_null(n))
		return true;
	char *p = sub(path, key);
	bool ok = false;
	if (n->type == YAML_SCALAR_NODE && !ydoc_quoted(n) && ydoc_str(n)[0]) {
		char *end;
		errno = 0;
		long x = strtol(ydoc_str(n), &end, 10);
		if (errno == 0 && *end == '\0' && x >= lo && x <= hi) {
			*out = (int)x;
			ok = true;
		}
	}
	if (!ok)
		fail(v, p, "expected an integer between %ld and %ld", lo, hi);
	free(p);
	return ok;
}

int manifest_quantity(const char *s, uint64_t *out)
{
	static const struct {
		const char *suf;
		double mul;
	} sufs[] = {
		{ "Ki", 1024.0 }, { "Mi", 1048576.0 }, { "Gi", 1073741824.0 }, { "Ti", 1099511627776.0 },
		{ "k", 1e3 }, { "K", 1e3 }, { "M", 1e6 }, { "G", 1e9 }, { "T", 1e12 }, { "", 1.0 },
	};
	if (s == NULL || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return -1;
	char *end;
	errno = 0;
	double x = strtod(s, &end);
	if (errno || end == s || !isfinite(x) || x < 0)
		return -1;
	for (size_t i = 0; i < sizeof sufs / sizeof sufs[0]; i++)
		if (strcmp(end, sufs[i].suf) == 0) {
			double b = x * sufs[i].mul;
			if (b > 1e18)
				return -1;
			*out = (uint64_t)b;
			return 0;
		}
	return -1;
}

static bool get_qty(struct vctx *v, yaml_node_t *map, const char *key, const char *path, uint64_t *out,
		    char **text)
{
	yaml_node_t *n = get(v, map, key);
	if (n == NULL || ydoc_is_null(n))
		return true;
	char *p = sub(path, key);
	bool ok = n->type == YAML_SCALAR_NODE && manifest_quantity(ydoc_str(n), out) == 0;
	if (!ok)
		fail(v, p, "expected a quantity such as 128Mi or 1Gi");
	else if (text) {
		free(*text);
		*text = xstrdup(ydoc_str(n));
	}
	free(p);
	return ok;
}

/* ---- names and strings that reach domain XML, file names or the seed image ---- */

/* Kubernetes' own wording (k8s.io/apimachinery validation), so a refusal reads as kubectl's would. */
#define LABEL_MSG                                                                                                  \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and "  \
	"end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "            \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define SUBDOMAIN_MSG                                                                                              \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "   \
	"start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "            \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n) */
static bool label_chars(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

bool manifest_dns_label(const char *s)
{
	return s && strlen(s) <= 63 && label_chars(s, strlen(s));
}

static bool manifest_dns_subdomain_chars(const char *s)
{
	for (const char *p = s;;) {
		size_t n = strcspn(p, ".");
		if (!label_chars(p, n))
			return false;
		if (p[n] == '\0')
			return true;
		p += n + 1;
	}
}

bool manifest_dns_subdomain(const char *s)
{
	return s && strlen(s) <= 253 && manifest_dns_subdomain_chars(s);
}

/* s as Go's %q would show it (quotes, escapes), cut at 80 bytes: a refusal quotes what it refused. */
static char *quoted(const char *s)
{
	struct buf b;
	buf_init(&b);
	buf_add_char(&b, '"');
	size_t i;
	for (i = 0; s[i] && i < 80; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			buf_printf(&b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			buf_printf(&b, "\\x%02x", c);
		else
			buf_add_char(&b, (char)c);
	}
	buf_add_str(&b, s[i] ? "\"..." : "\"");
	return buf_steal(&b);
}

__attribute__((format(printf, 4, 5))) static bool invalid(struct vctx *v, const char *path, const char *value,
							  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	char *q = quoted(value);
	fail(v, path, "Invalid value: %s: %s", q, msg);
	free(q);
	free(msg);
	return false;
}

/* A name KubeVirt validates as a DNS-1123 label (volumes, networks; disks and interfaces name those), refused at
 * path.key with the apimachinery message. */
static bool check_label(struct vctx *v, const char *path, const char *key, const char *s)
{
	if (s == NULL || manifest_dns_label(s))
		return true;
	char *p = sub(path, key);
	bool chars = label_chars(s, strlen(s));
	if (strlen(s) > 63) /* both, as apimachinery reports both */
		invalid(v, p, s, "must be no more than 63 characters%s", chars ? "" : "; " LABEL_MSG);
	else
		invalid(v, p, s, LABEL_MSG);
	free(p);
	return false;
}

static bool check_subdomain(struct vctx *v, const char *path, const char *key, const char *s)
{
	if (s == NULL || manifest_dns_subdomain(s))
		return true;
	char *p = sub(path, key);
	if (strlen(s) > 253)
		invalid(v, p, s, "must be no more than 253 characters%s",
			manifest_dns_subdomain_chars(s) ? "" : "; " SUBDOMAIN_MSG);
	else
		invalid(v, p, s, SUBDOMAIN_MSG);
	free(p);
	return false;
}

/* Every byte of s in set (a string of allowed characters, plus letters and digits), 1..max bytes. */
static bool check_charset(struct vctx *v, const char *path, const char *key, const char *s, const char *set,
			  size_t max, const char *what)
{
	if (s == NULL)
		return true;
	size_t n = strlen(s);
	bool ok = n > 0 && n <= max;
	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)s[i]) || (s[i] && strchr(set, s[i]));
	if (ok)
		return true;
	char *p = sub(path, key);
	invalid(v, p, s, "%s (at most %zu)", what, max);
	free(p);
	return false;
}

/* Valid UTF-8 with no control characters: free text that reaches the domain XML (XML 1.0 cannot carry most
 * control characters, and a kernel command line has no use for them). */
bool manifest_plain_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p;
		int extra = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
		if (extra < 0 || (extra == 1 && c < 0xc2) || (extra == 3 && c > 0xf4))
			return false;
		if (c < 0x20 || c == 0x7f)
			return false;
		unsigned cp = extra ? c & (0x3f >> extra) : c;
		for (int i = 1; i <= extra; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0) || cp == 0xfffe || cp == 0xffff)
			return false;
		p += 1 + extra;
	}
	return true;
}

static bool check_text(struct vctx *v, const char *path, const char *key, const char *s)
{
	if (s == NULL || manifest_plain_text(s))
		return true;
	char *p = sub(path, key);
	invalid(v, p, s, "must be UTF-8 text without control characters");
	free(p);
	return false;
}

bool manifest_clean_path(const char *s)
{
	if (s == NULL || s[0] != '/' || strlen(s) > 4000 || !manifest_plain_text(s))
		return false;
	for (const char *p = s; *p;) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
	}
	return true;
}

/* An absolute host path with no "." or ".." component and no control characters. */
static bool check_path(struct vctx *v, const char *path, const char *key, const char *s)
{
	if (s == NULL || manifest_clean_path(s))
		return true;
	char *p = sub(path, key);
	invalid(v, p, s, "must be an absolute path without '.' or '..' components or control characters");
	free(p);
	return false;
}

/* ---- devices ---- */

static const struct {
	const char *name;
	enum mf_bus bus;
} buses[] = { { "virtio", MF_BUS_VIRTIO }, { "sata", MF_BUS_SATA }, { "scsi", MF_BUS_SCSI }, { "usb", MF_BUS_USB } };

const char *mf_bus_name(enum mf_bus b)
{
	for (size_t i = 0; i < sizeof buses / sizeof buses[0]; i++)
		if (buses[i].bus == b)
			return buses[i].name;
	return "virtio";
}

static bool parse_target(struct vctx *v, yaml_node_t *t, const char *path, struct mf_disk *d)
{
	static const struct key_rule rules[] = {
		{ "bus", NULL }, { "readonly", NULL },
		{ "pciAddress", "fixed PCI addresses are not supported by the engine" },
		{ "tray", "cdrom tray state is not supported by the engine" },
		{ NULL, NULL },
	};
	if (!want_map(v, t, path) || (t->type == YAML_MAPPING_NODE && !check_keys(v, t, path, rules)))
		return false;
	char *bus = NULL;
	if (!get_str(v, t, "bus", path, &bus) || !get_bool(v, t, "readonly", path, &d->readonly)) {
		free(bus);
		return false;
	}
	d->bus = d->cdrom ? MF_BUS_SATA : MF_BUS_VIRTIO;
	if (bus) {
		size_t i;
		for (i = 0; i < sizeof buses / sizeof buses[0]; i++)
			if (strcmp(bus, buses[i].name) == 0)
				break;
		if (i == sizeof buses / sizeof buses[0]) {
			char *p = sub(path, "bus");
			fail(v, p, "bus \"%s\" is not one of virtio, sata, scsi, usb", bus);
			free(p);
			free(bus);
			return false;
		}
		d->bus = buses[i].bus;
		free(bus);
	}
	return true;
}

static bool parse_disk(struct vctx *v, yaml_node_t *n, const char *path, struct mf_disk *d)
{
	static const struct key_rule rules[] = {
		{ "name", NULL }, { "disk", NULL }, { "cdrom", NULL }, { "bootOrder", NULL }, { "serial", NULL },
		{ "cache", NULL },
		{ "lun", "lun disks (SCSI passthrough) are not supported by the engine" },
		{ "io", "io mode selection is not supported by the engine" },
		{ "dedicatedIOThread", "dedicated IO threads are not supported by the engine" },
		{ "blockSize", "custom block sizes are not supported by the engine" },
		{ "shareable", "shareable disks are not supported by the engine" },
		{ "errorPolicy", "disk error policies are not supported by the engine" },
		{ "tag", NULL },
		{ NULL, NULL },
	};
	if (!check_keys(v, n, path, rules))
		return false;
	if (!get_str(v, n, "name", path, &d->name) || !get_str(v, n, "serial", path, &d->serial) ||
	    !get_int(v, n, "bootOrder", path, 1, 1000, &d->boot_order))
		return false;
	if (d->name == NULL)
		return fail(v, path, "name is required");
	if (!check_label(v, path, "name", d->name) ||
	    !check_charset(v, path, "serial", d->serial, "-_.+", 64,
			   "a disk serial must consist of letters, digits, '-', '_', '.' or '+'"))
		return false;
	yaml_node_t *disk = get(v, n, "disk"), *cd = get(v, n, "cdrom");
	char *p;
	bool ok = true;
	if (disk && cd)
		return fail(v, path, "disk and cdrom are mutually exclusive");
	if (cd) {
		d->cdrom = true;
		d->readonly = true;
		p = sub(path, "cdrom");
		ok = parse_target(v, cd, p, d);
	} else {
		p = sub(path, "disk");
		ok = disk ? parse_target(v, disk, p, d) : (d->bus = MF_BUS_VIRTIO, true);
	}
	free(p);
	char *cache = NULL;
	if (ok && get_str(v, n, "cache", path, &cache) && cache) {
		static const char *caches[] = { "none", "writethrough", "writeback" };
		for (size_t i = 0; i < 3; i++)
			if (strcmp(cache, caches[i]) == 0)
				d->cache = caches[i];
		if (d->cache == NULL) {
			p = sub(path, "cache");
			ok = fail(v, p, "cache \"%s\" is not one of none, writethrough, writeback", cache);
			free(p);
		}
	}
	free(cache);
	return ok && v->err == NULL;
}

static bool parse_volume(struct vctx *v, yaml_node_t *n, const char *path, struct mf_volume *vol)
{
	static const struct key_rule rules[] = {
		{ "name", NULL }, { "hostDisk", NULL }, { "persistentVolumeClaim", NULL }, { "emptyDisk", NULL },
		{ "containerDisk", NULL }, { "cloudInitNoCloud", NULL }, { "cloudInitConfigDrive", NULL },
		{ "dataVolume", NULL },
		{ "ephemeral", "ephemeral PVC overlays are not supported by the engine" },
		{ "configMap", NULL }, { "secret", NULL },
		{ "serviceAccount", "service accounts need a cluster" },
		{ "downwardAPI", "the downward API needs a cluster" },
		{ "downwardMetrics", "downward metrics are not supported by the engine" },
		{ "sysprep", "sysprep volumes are not supported by the engine" },
		{ "memoryDump", "memory dump volumes are not supported by the engine" },
		{ NULL, NULL },
	};
	if (!check_keys(v, n, path, rules) || !get_str(v, n, "name", path, &vol->name))
		return false;
	if (vol->name == NULL)
		return fail(v, path, "name is required");
	if (!check_label(v, path, "name", vol->name))
		return false;
	int kinds = 0;
	yaml_node_t *k;
	char *p = NULL;
	if ((k = get(v, n, "hostDisk"))) {
		static const struct key_rule r[] = { { "path", NULL }, { "type", NULL }, { "capacity", NULL },
			{ "shared", "shared host disks are not supported by the engine" }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_HOSTDISK;
		p = sub(path, "hostDisk");
		char *type = NULL;
		if (!want_map(v, k, p) || !check_keys(v, k, p, r) || !get_str(v, k, "path", p, &vol->path) ||
		    !get_str(v, k, "type", p, &type) || !get_qty(v, k, "capacity", p, &vol->capacity, NULL)) {
			free(type);
			goto out;
		}
		if (vol->path == NULL || vol->path[0] != '/')
			fail(v, p, "path must be an absolute host path");
		else if (!check_path(v, p, "path", vol->path))
			;
		else if (type == NULL || (strcmp(type, "Disk") && strcmp(type, "DiskOrCreate")))
			fail(v, p, "type must be Disk or DiskOrCreate");
		else if (strcmp(type, "DiskOrCreate") == 0) {
			vol->create = true;
			if (vol->capacity == 0)
				fail(v, p, "capacity is required with type DiskOrCreate");
		}
		free(type);
		free(p);
		p = NULL;
	}
	if ((k = get(v, n, "persistentVolumeClaim"))) {
		static const struct key_rule r[] = { { "claimName", NULL }, { "readOnly", NULL },
			{ "hotpluggable", "hotplug is not supported by the engine" }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_PVC;
		p = sub(path, "persistentVolumeClaim");
		if (!want_map(v, k, p) || !check_keys(v, k, p, r) || !get_str(v, k, "claimName", p, &vol->claim) ||
		    !get_bool(v, k, "readOnly", p, &vol->readonly))
			goto out;
		if (vol->claim == NULL)
			fail(v, p, "claimName is required");
		else
			check_subdomain(v, p, "claimName", vol->claim);
		free(p);
		p = NULL;
	}
	if ((k = get(v, n, "dataVolume"))) {
		/* the DataVolume's claim, of the same name (the engine service's storage: src/apiserver/storage.c) */
		static const struct key_rule r[] = { { "name", NULL },
			{ "hotpluggable", "hotplug is not supported by the engine" }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_PVC;
		vol->dv = true;
		p = sub(path, "dataVolume");
		if (!want_map(v, k, p) || !check_keys(v, k, p, r) || !get_str(v, k, "name", p, &vol->claim))
			goto out;
		if (vol->claim == NULL)
			fail(v, p, "name is required");
		else
			check_subdomain(v, p, "name", vol->claim);
		free(p);
		p = NULL;
	}
	if ((k = get(v, n, "emptyDisk"))) {
		static const struct key_rule r[] = { { "capacity", NULL }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_EMPTY;
		p = sub(path, "emptyDisk");
		if (!want_map(v, k, p) || !check_keys(v, k, p, r) ||
		    !get_qty(v, k, "capacity", p, &vol->capacity, NULL))
			goto out;
		if (vol->capacity == 0)
			fail(v, p, "capacity is required");
		free(p);
		p = NULL;
	}
	if ((k = get(v, n, "containerDisk"))) {
		static const struct key_rule r[] = { { "image", NULL }, { "imagePullPolicy", NULL },
			{ "imagePullSecret", "secrets need a cluster: the engine takes registry credentials from the "
					     "Docker/Podman auth file" },
			{ "path", "a path inside the image is not supported; the image file is the disk" },
			{ NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_CONTAINER;
		p = sub(path, "containerDisk");
		if (!want_map(v, k, p) || !check_keys(v, k, p, r) || !get_str(v, k, "image", p, &vol->image) ||
		    !get_str(v, k, "imagePullPolicy", p, &vol->pull_policy))
			goto out;
		if (vol->image == NULL || vol->image[0] == '\0')
			fail(v, p, "image is required");
		else {
			check_text(v, p, "image", vol->image);
			if (vol->pull_policy && strcmp(vol->pull_policy, "Always") && strcmp(vol->pull_policy, "Never") &&
			    strcmp(vol->pull_policy, "IfNotPresent"))
				fail(v, p, "imagePullPolicy \"%s\" is not one of Always, IfNotPresent, Never", vol->pull_policy);
		}
		free(p);
		p = NULL;
	}
	for (int cm = 0; cm < 2; cm++) {
		/* a disk holding one file per key, as KubeVirt attaches them (an ISO labelled cfgdata) */
		static const struct key_rule r[] = { { "secretName", NULL }, { "name", NULL }, { "optional", NULL },
			{ "volumeLabel", NULL }, { "items", "items are not supported by the engine: every key is a file" },
			{ "defaultMode", NULL }, { NULL, NULL } };
		const char *key = cm ? "configMap" : "secret", *nk = cm ? "name" : "secretName";
		if ((k = get(v, n, key)) == NULL)
			continue;
		kinds++;
		vol->type = cm ? MF_VOL_CONFIGMAP : MF_VOL_SECRET;
		p = sub(path, key);
		if (!want_map(v, k, p) || !check_keys(v, k, p, r) || !get_str(v, k, nk, p, &vol->object) ||
		    !get_bool(v, k, "optional", p, &vol->optional) || !get_str(v, k, "volumeLabel", p, &vol->label))
			goto out;
		if (get(v, k, cm ? "secretName" : "name")) {
			char *pk = sub(p, cm ? "secretName" : "name");
			fail(v, pk, "unknown field");
			free(pk);
		} else if (vol->object == NULL)
			fail(v, p, "%s is required", nk);
		else if (check_subdomain(v, p, nk, vol->object) && vol->label)
			check_charset(v, p, "volumeLabel", vol->label, "-_", 32,
				      "a volume label must consist of letters, digits, '-' or '_'");
		free(p);
		p = NULL;
	}
	const char *ci = get(v, n, "cloudInitNoCloud") ? "cloudInitNoCloud" : "cloudInitConfigDrive";
	if ((k = get(v, n, ci))) {
		static const struct key_rule r[] = { { "userData", NULL }, { "userDataBase64", NULL },
			{ "networkData", NULL }, { "networkDataBase64", NULL },
			{ "secretRef", NULL }, { "networkDataSecretRef", NULL }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_CLOUDINIT;
		vol->config_drive = strcmp(ci, "cloudInitConfigDrive") == 0;
		p = sub(path, ci);
		if (get(v, n, "cloudInitNoCloud") && get(v, n, "cloudInitConfigDrive"))
			kinds++; /* both: refused below */
		char *ub = NULL, *nb = NULL;
		if (!want_map(v, k, p) || !check_keys(v, k, p, r) ||
		    !get_str(v, k, "userData", p, &vol->user_data) || !get_str(v, k, "userDataBase64", p, &ub) ||
		    !get_str(v, k, "networkData", p, &vol->network_data) ||
		    !get_str(v, k, "networkDataBase64", p, &nb)) {
			free(ub);
			free(nb);
			goto out;
		}
		const char *refs[] = { "secretRef", "networkDataSecretRef" };
		for (int ri = 0; ri < 2 && v->err == NULL; ri++) {
			yaml_node_t *ref = get(v, k, refs[ri]);
			static const struct key_rule rr[] = { { "name", NULL }, { NULL, NULL } };
			char *rp = sub(p, refs[ri]), **out = ri ? &vol->network_secret : &vol->user_secret;
			if (ref && want_map(v, ref, rp) && check_keys(v, ref, rp, rr) && get_str(v, ref, "name", rp, out)) {
				if (*out == NULL)
					fail(v, rp, "name is required");
				else
					check_subdomain(v, rp, "name", *out);
			}
			free(rp);
		}
		if (v->err == NULL && ((vol->user_secret && (vol->user_data || ub)) || (vol->network_secret && (vol->network_data || nb))))
			fail(v, p, "a secretRef and inline data of the same kind are exclusive");
		if (ub) {
			free(vol->user_data);
			vol->user_data = NULL;
			if ((vol->user_data = util_b64_decode(ub, strlen(ub), NULL, 0)) == NULL)
				fail(v, p, "userDataBase64 is not valid base64");
		}
		if (nb) {
			free(vol->network_data);
			vol->network_data = NULL;
			if ((vol->network_data = util_b64_decode(nb, strlen(nb), NULL, 0)) == NULL)
				fail(v, p, "networkDataBase64 is not valid base64");
		}
		if (v->err == NULL && vol->user_data == NULL && vol->user_secret == NULL)
			fail(v, p, "userData, userDataBase64 or secretRef is required");
		free(ub);
		free(nb);
		free(p);
		p = NULL;
	}
	if (v->err == NULL && kinds != 1)
		fail(v, path, kinds ? "exactly one volume source is allowed" : "a volume source is required");
out:
	free(p);
	return v->err == NULL;
}

/* interfaces[].ports as KubeVirt validates them: port 1..65535 (required), protocol TCP or UDP (default TCP),
 * an optional name; no port twice per protocol; only on masquerade (bridge binding puts the guest on the
 * bridge's network itself). */
static bool parse_ports(struct vctx *v, yaml_node_t *ports, const char *path, struct mf_iface *f)
{
	static const struct key_rule r[] = { { "name", NULL }, { "port", NULL }, { "protocol", NULL }, { NULL, NULL } };
	char *pp = sub(path, "ports");
	if (ports->type != YAML_SEQUENCE_NODE) {
		fail(v, pp, "expected a list");
		goto out;
	}
	if (f->bridge) {
		fail(v, pp, "ports are forwarded only on masquerade interfaces");
		goto out;
	}
	f->ports = xcalloc(ydoc_len(ports) + 1, sizeof *f->ports);
	for (size_t i = 0; i < ydoc_len(ports) && v->err == NULL; i++) {
		yaml_node_t *n = ydoc_at(v->doc, ports, i);
		struct mf_port *pt = &f->ports[f->nports++];
		char *pi = idx(pp, i), *proto = NULL;
		if (check_keys(v, n, pi, r) && get_str(v, n, "name", pi, &pt->name) &&
		    get_int(v, n, "port", pi, 1, 65535, &pt->port) && get_str(v, n, "protocol", pi, &proto)) {
			if (pt->port == 0)
				fail(v, pi, "port is required");
			else if (pt->name && !check_label(v, pi, "name", pt->name))
				;
			else if (proto && strcmp(proto, "TCP") && strcmp(proto, "UDP")) {
				char *pr = sub(pi, "protocol");
				fail(v, pr, "protocol \"%s\" is not one of TCP, UDP", proto);
				free(pr);
			} else {
				pt->proto = proto && strcmp(proto, "UDP") == 0 ? "UDP" : "TCP";
				for (int j = 0; j + 1 < f->nports; j++)
					if (f->ports[j].port == pt->port && strcmp(f->ports[j].proto, pt->proto) == 0)
						fail(v, pi, "port %d/%s is listed twice", pt->port, pt->proto);
			}
		}
		free(proto);
		free(pi);
	}
out:
	free(pp);
	return v->err == NULL;
}

static bool parse_iface(struct vctx *v, yaml_node_t *n, const char *path, struct mf_iface *f)
{
	static const struct key_rule rules[] = {
		{ "name", NULL }, { "masquerade", NULL }, { "bridge", NULL }, { "model", NULL },
		{ "macAddress", NULL }, { "ports", NULL },
		{ "sriov", "SR-IOV needs a cluster" },
		{ "slirp", "slirp binding is deprecated in KubeVirt; use masquerade" },
		{ "macvtap", "macvtap binding is not supported by the engine" },
		{ "passt", "passt binding is not supported by the engine" },
		{ "binding", "network binding plugins need a cluster" },
		{ "bootOrder", "network boot is not supported by the engine" },
		{ "pciAddress", "fixed PCI addresses are not supported by the engine" },
		{ "dhcpOptions", "DHCP options are not supported by the engine" },
		{ "tag", NULL },
		{ "state", "interface link state is not supported by the engine" },
		{ NULL, NULL },
	};
	if (!check_keys(v, n, path, rules) || !get_str(v, n, "name", path, &f->name) ||
	    !get_str(v, n, "model", path, &f->model) || !get_str(v, n, "macAddress", path, &f->mac))
		return false;
	if (f->name == NULL)
		return fail(v, path, "name is required");
	if (!check_label(v, path, "name", f->name))
		return false;
	yaml_node_t *mq = get(v, n, "masquerade"), *br = get(v, n, "bridge");
	if ((mq != NULL) == (br != NULL))
		return fail(v, path, "exactly one of masquerade or bridge is required");
	f->bridge = br != NULL;
	yaml_node_t *ports = get(v, n, "ports");
	if (ports && !ydoc_is_null(ports) && !parse_ports(v, ports, path, f))
		return false;
	if (f->model) {
		static const char *models[] = { "virtio", "e1000", "e1000e", "rtl8139", NULL };
		size_t i;
		for (i = 0; models[i]; i++)
			if (strcmp(models[i], f->model) == 0)
				break;
		if (models[i] == NULL) {
			char *p = sub(path, "model");
			fail(v, p, "model \"%s\" is not one of virtio, e1000, e1000e, rtl8139", f->model);
			free(p);
			return false;
		}
	}
	if (f->mac) {
		bool ok = strlen(f->mac) == 17;
		for (int i = 0; ok && i < 17; i++)
			ok = i % 3 == 2 ? f->mac[i] == ':' || f->mac[i] == '-' : isxdigit((unsigned char)f->mac[i]) != 0;
		if (!ok) {
			char *p = sub(path, "macAddress");
			fail(v, p, "not a MAC address");
			free(p);
			return false;
		}
	}
	return true;
}

/* ---- the VMI template ---- */

static bool parse_cpu(struct vctx *v, yaml_node_t *cpu, const char *path, struct manifest *m)
{
	static const struct key_rule rules[] = {
		{ "cores", NULL }, { "sockets", NULL }, { "threads", NULL }, { "model", NULL },
		{ "maxSockets", "CPU hotplug is not supported by the engine" },
		{ "dedicatedCpuPlacement", "dedicated CPU placement needs the CPU manager of a cluster node" },
		{ "isolateEmulatorThread", "emulator thread isolation is not supported by the engine" },
		{ "numa", "NUMA passthrough is not supported by the engine" },
		{ "realtime", "realtime vCPUs are not supported by the engine" },
		{ "features", "CPU feature lists are not supported by the engine" },
		{ NULL, NULL },
	};
	if (!want_map(v, cpu, path) || (cpu->type == YAML_MAPPING_NODE && !check_keys(v, cpu, path, rules)))
		return false;
	return get_int(v, cpu, "cores", path, 1, 256, &m->cores) &&
	       get_int(v, cpu, "sockets", path, 1, 64, &m->sockets) &&
	       get_int(v, cpu, "threads", path, 1, 8, &m->threads) && get_str(v, cpu, "model", path, &m->cpu_model) &&
	       check_charset(v, path, "model", m->cpu_model, "-_.+", 64,
			     "a CPU model must consist of letters, digits, '-', '_', '.' or '+'");
}

static bool parse_firmware(struct vctx *v, yaml_node_t *fw, const char *path, struct manifest *m)
{
	static const struct key_rule rules[] = {
		{ "bootloader", NULL }, { "kernelBoot", NULL },
		{ "uuid", "a firmware UUID is not supported: the domain UUID is the VM's UID" },
		{ "serial", "a firmware serial number is not supported by the engine" },
		{ "acpi", "custom ACPI tables are not supported by the engine" },
		{ NULL, NULL },
	};
	if (!want_map(v, fw, path) || (fw->type == YAML_MAPPING_NODE && !check_keys(v, fw, path, rules)))
		return false;
	yaml_node_t *bl = get(v, fw, "bootloader"), *kb = get(v, fw, "kernelBoot");
	char *p;
	if (bl) {
		static const struct key_rule r[] = { { "bios", NULL }, { "efi", NULL }, { NULL, NULL } };
		p = sub(path, "bootloader");
		if (!want_map(v, bl, p) || (bl->type == YAML_MAPPING_NODE && !check_keys(v, bl, p, r))) {
			free(p);
			return false;
		}
		yaml_node_t *bios = get(v, bl, "bios"), *efi = get(v, bl, "efi");
		if (bios && efi)
			fail(v, p, "bios and efi are mutually exclusive");
		if (bios) {
			static const struct key_rule rb[] = {
				{ "useSerial", "BIOS serial redirection is not supported by the engine" }, { NULL, NULL } };
			char *pb = sub(p, "bios");
			if (want_map(v, bios, pb) && bios->type == YAML_MAPPING_NODE)
				check_keys(v, bios, pb, rb);
			free(pb);
		}
		if (efi) {
			static const struct key_rule re[] = { { "secureBoot", NULL },
				{ "persistent", "persistent EFI variables are not supported by the engine" },
				{ NULL, NULL } };
			char *pe = sub(p, "efi");
			m->efi = true;
			m->secure_boot = true; /* KubeVirt's default */
			if (want_map(v, efi, pe) && efi->type == YAML_MAPPING_NODE && check_keys(v, efi, pe, re))
				get_bool(v, efi, "secureBoot", pe, &m->secure_boot);
			free(pe);
		}
		free(p);
		if (v->err)
			return false;
	}
	if (kb) {
		static const struct key_rule r[] = { { "kernelArgs", NULL }, { "container", NULL }, { NULL, NULL } };
		static const struct key_rule rc[] = { { "image", NULL }, { "kernelPath", NULL }, { "initrdPath", NULL },
			{ "imagePullPolicy", NULL },
			{ "imagePullSecret", "registry credentials are not used: images come from the engine's image "
					     "directory" },
			{ NULL, NULL } };
		p = sub(path, "kernelBoot");
		bool ok = want_map(v, kb, p) && kb->type == YAML_MAPPING_NODE && check_keys(v, kb, p, r) &&
			  get_str(v, kb, "kernelArgs", p, &m->kernel_args);
		yaml_node_t *c = get(v, kb, "container");
		char *pc = sub(p, "container");
		if (ok && c == NULL)
			fail(v, pc, "required (image, kernelPath, initrdPath)");
		else if (ok && want_map(v, c, pc) && c->type == YAML_MAPPING_NODE && check_keys(v, c, pc, rc) &&
			 get_str(v, c, "image", pc, &m->kernel_image) && get_str(v, c, "kernelPath", pc, &m->kernel) &&
			 get_str(v, c, "initrdPath", pc, &m->initrd)) {
			if (m->kernel == NULL && m->initrd == NULL)
				fail(v, pc, "kernelPath or initrdPath is required");
			else if ((m->kernel && m->kernel[0] != '/') || (m->initrd && m->initrd[0] != '/'))
				fail(v, pc, "kernelPath and initrdPath must be absolute paths");
			else if (m->kernel == NULL)
				fail(v, pc, "kernelPath is required (an initrd alone cannot boot)");
			else if (check_path(v, pc, "kernelPath", m->kernel) &&
				 check_path(v, pc, "initrdPath", m->initrd))
				check_text(v, pc, "image", m->kernel_image);
		}
		free(pc);
		if (v->err == NULL)
			check_text(v, p, "kernelArgs", m->kernel_args);
		free(p);
		if (m->kernel_image && (m->kernel_image[0] == '\0' || strcmp(m->kernel_image, "host") == 0)) {
			free(m->kernel_image);
			m->kernel_image = NULL;
		}
	}
	return v->err == NULL;
}

static bool parse_domain(struct vctx *v, yaml_node_t *d, const char *path, struct manifest *m)
{
	static const struct key_rule rules[] = {
		{ "cpu", NULL }, { "memory", NULL }, { "resources", NULL }, { "machine", NULL }, { "firmware", NULL },
		{ "devices", NULL }, { "features", NULL },
		{ "clock", "clock settings are not supported by the engine (the guest clock is UTC)" },
		{ "chassis", "chassis information is not supported by the engine" },
		{ "ioThreadsPolicy", "IO thread policies are not supported by the engine" },
		{ "ioThreads", "IO threads are not supported by the engine" },
		{ "launchSecurity", "confidential computing is not supported by the engine" },
		{ NULL, NULL },
	};
	if (d == NULL || d->type != YAML_MAPPING_NODE)
		return fail(v, path, "required");
	if (!check_keys(v, d, path, rules))
		return false;
	char *p;
	yaml_node_t *n;
	if ((n = get(v, d, "cpu"))) {
		p = sub(path, "cpu");
		parse_cpu(v, n, p, m);
		free(p);
	}
	if (v->err == NULL && (n = get(v, d, "memory"))) {
		static const struct key_rule r[] = { { "guest", NULL },
			{ "hugepages", "hugepages are not supported by the engine" },
			{ "maxGuest", "memory hotplug is not supported by the engine" }, { NULL, NULL } };
		p = sub(path, "memory");
		if (want_map(v, n, p) && n->type == YAML_MAPPING_NODE && check_keys(v, n, p, r))
			get_qty(v, n, "guest", p, &m->memory, &m->memory_text);
		free(p);
	}
	if (v->err == NULL && (n = get(v, d, "resources"))) {
		static const struct key_rule r[] = { { "requests", NULL },
			{ "limits", "launcher resource limits are not enforced by the engine" },
			{ "overcommitGuestOverhead", NULL }, { NULL, NULL } };
		static const struct key_rule rq[] = { { "memory", NULL },
			{ "cpu", "CPU requests are a scheduling input; the engine has no scheduler (use cpu.cores)" },
			{ NULL, NULL } };
		p = sub(path, "resources");
		if (want_map(v, n, p) && n->type == YAML_MAPPING_NODE && check_keys(v, n, p, r)) {
			yaml_node_t *req = get(v, n, "requests");
			char *pr = sub(p, "requests");
			uint64_t reqmem = 0;
			char *reqtext = NULL;
			if (req && want_map(v, req, pr) && req->type == YAML_MAPPING_NODE && check_keys(v, req, pr, rq) &&
			    get_qty(v, req, "memory", pr, &reqmem, &reqtext) && m->memory == 0 && reqmem) {
				m->memory = reqmem; /* KubeVirt: guest memory defaults to the request */
				free(m->memory_text);
				m->memory_text = reqtext;
				reqtext = NULL;
			}
			free(reqtext);
			free(pr);
			bool ovc = false;
			get_bool(v, n, "overcommitGuestOverhead", p, &ovc);
		}
		free(p);
	}
	if (v->err == NULL && (n = get(v, d, "machine"))) {
		static const struct key_rule r[] = { { "type", NULL }, { NULL, NULL } };
		p = sub(path, "machine");
		if (want_map(v, n, p) && n->type == YAML_MAPPING_NODE && check_keys(v, n, p, r) &&
		    get_str(v, n, "type", p, &m->machine) && m->machine) {
			const char *t = m->machine;
			if (!(strcmp(t, "q35") == 0 || strcmp(t, "pc") == 0 || util_has_prefix(t, "pc-q35-") || util_has_prefix(t, "pc-i440fx-")))
				fail(v, p, "machine type \"%s\" is not q35, pc, pc-q35-* or pc-i440fx-*", t);
			else
				check_charset(v, p, "type", t, "-_.", 64,
					      "a machine type must consist of letters, digits, '-', '_' or '.'");
		}
		free(p);
	}
	if (v->err == NULL && (n = get(v, d, "firmware"))) {
		p = sub(path, "firmware");
		parse_firmware(v, n, p, m);
		free(p);
	}
	if (v->err == NULL && (n = get(v, d, "features"))) {
		static const struct key_rule r[] = { { "acpi", NULL }, { "apic", NULL },
			{ "smm", "SMM selection is not supported by the engine" },
			{ "hyperv", "Hyper-V enlightenments are not supported by the engine" },
			{ "kvm", "KVM feature flags are not supported by the engine" },
			{ "pvspinlock", "pvspinlock is not supported by the engine" }, { NULL, NULL } };
		p = sub(path, "features");
		if (want_map(v, n, p) && n->type == YAML_MAPPING_NODE)
			check_keys(v, n, p, r);
		free(p);
	}
	if (v->err == NULL && (n = get(v, d, "devices"))) {
		static const struct key_rule r[] = {
			{ "disks", NULL }, { "interfaces", NULL }, { "autoattachSerialConsole", NULL },
			{ "autoattachGraphicsDevice", NULL }, { "autoattachPodInterface", NULL },
			{ "autoattachMemBalloon", NULL }, { "rng", NULL }, { "networkInterfaceMultiqueue", NULL },
			{ "blockMultiQueue", NULL },
			{ "gpus", "GPU passthrough is not supported by the engine" },
			{ "hostDevices", "host device passthrough is not supported by the engine" },
			{ "filesystems", "virtiofs filesystems are not supported by the engine" },
			{ "inputs", "extra input devices are not supported by the engine" },
			{ "watchdog", "watchdogs are not supported by the engine" },
			{ "tpm", "TPM devices are not supported by the engine" },
			{ "sound", "sound devices are not supported by the engine" },
			{ "clientPassthrough", "USB client passthrough is not supported by the engine" },
			{ "disableHotplug", NULL },
			{ "autoattachInputDevice", NULL },
			{ "autoattachVSOCK", "vsock is not supported by the engine" },
			{ "downwardMetrics", "downward metrics are not supported by the engine" },
			{ "useVirtioTransitional", NULL },
			{ NULL, NULL },
		};
		p = sub(path, "devices");
		if (want_map(v, n, p) && n->type == YAML_MAPPING_NODE && check_keys(v, n, p, r)) {
			bool mq = false, dh = false, ai = true, vt = false;
			get_bool(v, n, "autoattachSerialConsole", p, &m->serial_console);
			get_bool(v, n, "autoattachGraphicsDevice", p, &m->graphics);
			get_bool(v, n, "autoattachMemBalloon", p, &m->balloon);
			get_bool(v, n, "networkInterfaceMultiqueue", p, &mq);
			get_bool(v, n, "blockMultiQueue", p, &mq);
			get_bool(v, n, "disableHotplug", p, &dh);
			get_bool(v, n, "autoattachInputDevice", p, &ai);
			get_bool(v, n, "useVirtioTransitional", p, &vt);
			bool pod_iface = true;
			get_bool(v, n, "autoattachPodInterface", p, &pod_iface);
			m->no_pod_iface = !pod_iface;
			yaml_node_t *rng = get(v, n, "rng");
			if (rng) {
				char *pr = sub(p, "rng");
				if (want_map(v, rng, pr) && rng->type == YAML_MAPPING_NODE && ydoc_len(rng))
					fail(v, pr, "only an empty rng {} is supported");
				m->rng = true;
				free(pr);
			}
			yaml_node_t *disks = get(v, n, "disks"), *ifs = get(v, n, "interfaces");
			if (v->err == NULL && disks && !ydoc_is_null(disks)) {
				char *pd = sub(p, "disks");
				if (disks->type != YAML_SEQUENCE_NODE)
					fail(v, pd, "expected a list");
				else {
					m->disks = xcalloc(ydoc_len(disks) + 1, sizeof *m->disks);
					for (size_t i = 0; i < ydoc_len(disks) && v->err == NULL; i++) {
						char *pi = idx(pd, i);
						m->ndisks++;
						parse_disk(v, ydoc_at(v->doc, disks, i), pi, &m->disks[i]);
						free(pi);
					}
				}
				free(pd);
			}
			if (v->err == NULL && ifs && !ydoc_is_null(ifs)) {
				char *pf = sub(p, "interfaces");
				if (ifs->type != YAML_SEQUENCE_NODE)
					fail(v, pf, "expected a list");
				else {
					m->ifaces = xcalloc(ydoc_len(ifs) + 1, sizeof *m->ifaces);
					for (size_t i = 0; i < ydoc_len(ifs) && v->err == NULL; i++) {
						char *pi = idx(pf, i);
						m->nifaces++;
						parse_iface(v, ydoc_at(v->doc, ifs, i), pi, &m->ifaces[i]);
						free(pi);
					}
				}
				free(pf);
			}
		}
		free(p);
	}
	return v->err == NULL;
}

static bool parse_networks(struct vctx *v, yaml_node_t *nets, const char *path, struct manifest *m)
{
	if (nets->type != YAML_SEQUENCE_NODE)
		return fail(v, path, "expected a list");
	static const struct key_rule r[] = { { "name", NULL }, { "pod", NULL }, { "multus", NULL }, { NULL, NULL } };
	for (size_t i = 0; i < ydoc_len(nets); i++) {
		char *p = idx(path, i);
		yaml_node_t *n = ydoc_at(v->doc, nets, i);
		char *name = NULL;
		if (!check_keys(v, n, p, r) || !get_str(v, n, "name", p, &name)) {
			free(p);
			return false;
		}
		yaml_node_t *pod = get(v, n, "pod"), *multus = get(v, n, "multus");
		struct mf_iface *f = NULL;
		for (int j = 0; name && j < m->nifaces; j++)
			if (strcmp(m->ifaces[j].name, name) == 0)
				f = &m->ifaces[j];
		if (name == NULL)
			fail(v, p, "name is required");
		else if (!check_label(v, p, "name", name))
			;
		else if ((pod != NULL) == (multus != NULL))
			fail(v, p, "exactly one of pod or multus is required");
		else if (f == NULL)
			fail(v, p, "network \"%s\" has no interface in spec.template.spec.domain.devices.interfaces", name);
		else if (pod) {
			static const struct key_rule rp[] = { { "vmNetworkCIDR", "custom CIDRs are not supported by user-mode networking" },
				{ "vmIPv6NetworkCIDR", "custom CIDRs are not supported by user-mode networking" }, { NULL, NULL } };
			char *pp = sub(p, "pod");
			if (want_map(v, pod, pp) && pod->type == YAML_MAPPING_NODE)
				check_keys(v, pod, pp, rp);
			free(pp);
		} else {
			static const struct key_rule rm[] = { { "networkName", NULL }, { "default", NULL }, { NULL, NULL } };
			char *pm = sub(p, "multus");
			if (want_map(v, multus, pm) && multus->type == YAML_MAPPING_NODE && check_keys(v, multus, pm, rm) &&
			    get_str(v, multus, "networkName", pm, &f->host_bridge)) {
				if (!f->bridge)
					fail(v, pm, "a multus network needs a bridge interface (it names the host bridge)");
				else if (f->host_bridge == NULL)
					fail(v, pm, "networkName (the host bridge) is required");
				else if (strcmp(f->host_bridge, ".") == 0 || strcmp(f->host_bridge, "..") == 0) {
					char *pn = sub(pm, "networkName");
					invalid(v, pn, f->host_bridge, "a host bridge name must not be '.' or '..'");
					free(pn);
				} else
					check_charset(v, pm, "networkName", f->host_bridge, "-_.", 15,
						      "a host bridge name must consist of letters, digits, '-', '_' or '.'");
			}
			free(pm);
		}
		free(name);
		free(p);
		if (v->err)
			return false;
	}
	return true;
}

/* nodeSelector, affinity, tolerations: checked as the API server checks them (engine/placement.c) and kept as
 * JSON, which the reconciler matches against the host's Node before each start. */
static void parse_placement(struct vctx *v, yaml_node_t *s, const char *path, struct manifest *m)
{
	static const char *const keys[] = { "nodeSelector", "affinity", "tolerations" };
	json_object *pod = NULL;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
		yaml_node_t *n = ydoc_get(v->doc, s, keys[i]);
		if (n == NULL || ydoc_is_null(n))
			continue;
		if (pod == NULL)
			pod = json_object_new_object();
		json_object_object_add(pod, keys[i], ydoc_json(v->doc, n));
	}
	if (pod == NULL)
		return;
	char *fp = NULL, *why = NULL;
	if (placement_validate(pod, &fp, &why) < 0) {
		char *p = sub(path, fp);
		fail(v, p, "%s", why);
		free(p);
	} else
		m->placement = xstrdup(json_object_to_json_string_ext(pod, JSON_C_TO_STRING_PLAIN));
	free(fp);
	free(why);
	json_object_put(pod);
}

/* One accessCredentials entry, as KubeVirt validates it: exactly one of sshPublicKey and userPassword, a Secret,
 * exactly one propagation method (userPassword: qemuGuestAgent only), qemuGuestAgent's users for a key. */
static bool parse_cred(struct vctx *v, yaml_node_t *n, const char *path, struct mf_cred *c)
{
	static const struct key_rule rules[] = { { "sshPublicKey", NULL }, { "userPassword", NULL }, { NULL, NULL } };
	static const struct key_rule body[] = { { "source", NULL }, { "propagationMethod", NULL }, { NULL, NULL } };
	static const struct key_rule src[] = { { "secret", NULL }, { NULL, NULL } };
	static const struct key_rule sec[] = { { "secretName", NULL }, { NULL, NULL } };
	static const struct key_rule pm[] = { { "qemuGuestAgent", NULL }, { "noCloud", NULL }, { "configDrive", NULL },
					      { NULL, NULL } };
	static const struct key_rule qga[] = { { "users", NULL }, { NULL, NULL } };
	if (!want_map(v, n, path) || !check_keys(v, n, path, rules))
		return false;
	yaml_node_t *spk = get(v, n, "sshPublicKey"), *upw = get(v, n, "userPassword");
	if ((spk != NULL) == (upw != NULL))
		return fail(v, path, "exactly one of sshPublicKey and userPassword is required");
	c->password = upw != NULL;
	char *p = sub(path, c->password ? "userPassword" : "sshPublicKey"), *ps = sub(p, "source"),
	     *pss = sub(ps, "secret"), *pp = sub(p, "propagationMethod"), *pq = sub(pp, "qemuGuestAgent");
	yaml_node_t *b = c->password ? upw : spk, *s, *ss, *m, *q, *users;
	if (!want_map(v, b, p) || !check_keys(v, b, p, body))
		goto out;
	if ((s = get(v, b, "source")) == NULL || (ss = (want_map(v, s, ps) && check_keys(v, s, ps, src)) ? get(v, s, "secret") : NULL) == NULL) {
		if (v->err == NULL)
			fail(v, ps, "a secret source is required");
		goto out;
	}
	if (!want_map(v, ss, pss) || !check_keys(v, ss, pss, sec) || !get_str(v, ss, "secretName", pss, &c->secret))
		goto out;
	if (c->secret == NULL) {
		fail(v, pss, "secretName is required");
		goto out;
	}
	if (!check_subdomain(v, pss, "secretName", c->secret))
		goto out;
	if ((m = get(v, b, "propagationMethod")) == NULL) {
		fail(v, pp, "required");
		goto out;
	}
	if (!want_map(v, m, pp) || !check_keys(v, m, pp, pm))
		goto out;
	int methods = (get(v, m, "qemuGuestAgent") != NULL) + (get(v, m, "noCloud") != NULL) + (get(v, m, "configDrive") != NULL);
	q = get(v, m, "qemuGuestAgent");
	c->agent = q != NULL;
	c->drive = get(v, m, "configDrive") != NULL;
	if (methods != 1) {
		fail(v, pp, "exactly one propagation method is required");
		goto out;
	}
	if (c->password && !c->agent) {
		fail(v, pp, "a userPassword is propagated by qemuGuestAgent only");
		goto out;
	}
	if (q == NULL || !want_map(v, q, pq) || !check_keys(v, q, pq, qga))
		goto out;
	users = get(v, q, "users");
	if (users && users->type != YAML_SEQUENCE_NODE) {
		char *pu = sub(pq, "users");
		fail(v, pu, "expected a list");
		free(pu);
		goto out;
	}
	c->users = xcalloc(users ? ydoc_len(users) + 1 : 1, sizeof *c->users);
	for (size_t i = 0; users && i < ydoc_len(users) && v->err == NULL; i++) {
		char *pu = xasprintf("%s.users[%zu]", pq, i);
		yaml_node_t *u = ydoc_at(v->doc, users, i);
		const char *name = scalar(v, u, pu);
		/* a guest user name: what useradd takes (no '/', no control characters, no leading '-') */
		if (name && (*name == '\0' || *name == '-' || strlen(name) > 32 ||
			     strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-$") != strlen(name)))
			invalid(v, pu, name, "must be a user name of letters, digits, '.', '_', '-' or '$'");
		else if (name)
			c->users[c->nusers++] = xstrdup(name);
		free(pu);
	}
	if (v->err == NULL && !c->password && c->nusers == 0)
		fail(v, pq, "users is required");
out:
	free(pq);
	free(pp);
	free(pss);
	free(ps);
	free(p);
	return v->err == NULL;
}

static bool parse_template_spec(struct vctx *v, yaml_node_t *s, const char *path, struct manifest *m)
{
	static const struct key_rule rules[] = {
		{ "domain", NULL }, { "volumes", NULL }, { "networks", NULL },
		{ "terminationGracePeriodSeconds", NULL }, { "hostname", NULL }, { "subdomain", NULL },
		{ "evictionStrategy", NULL }, { "architecture", NULL }, { "startStrategy", NULL },
		{ "nodeSelector", NULL }, { "affinity", NULL }, { "tolerations", NULL },
		{ "topologySpreadConstraints", "the engine runs on its own host; spread constraints do not apply" },
		{ "schedulerName", "the engine has no scheduler" },
		{ "priorityClassName", "the engine has no scheduler" },
		{ "livenessProbe", "probes are not supported by the engine" },
		{ "readinessProbe", "probes are not supported by the engine" },
		{ "accessCredentials", NULL },
		{ "dnsPolicy", "DNS policy is a pod setting; user-mode networking provides DNS" },
		{ "dnsConfig", "DNS config is a pod setting; user-mode networking provides DNS" },
		{ NULL, NULL },
	};
	if (s == NULL || s->type != YAML_MAPPING_NODE)
		return fail(v, path, "required");
	if (!check_keys(v, s, path, rules))
		return false;
	char *p = sub(path, "domain");
	parse_domain(v, get(v, s, "domain"), p, m);
	free(p);
	if (v->err)
		return false;
	if (m->nifaces == 0 && !m->no_pod_iface) {
		/* KubeVirt attaches a pod-network interface by default */
		m->ifaces = xcalloc(1, sizeof *m->ifaces);
		m->ifaces[0].name = xstrdup("default");
		m->nifaces = 1;
	}
	get_int(v, s, "terminationGracePeriodSeconds", path, 0, 86400, &m->grace);
	get_str(v, s, "hostname", path, &m->hostname);
	if (v->err == NULL)
		check_label(v, path, "hostname", m->hostname); /* KubeVirt: a DNS-1123 label; it goes into the seed */
	get_str(v, s, "evictionStrategy", path, &m->eviction);
	if (v->err == NULL && m->eviction && strcmp(m->eviction, "None") != 0 && strcmp(m->eviction, "LiveMigrate") != 0 &&
	    strcmp(m->eviction, "LiveMigrateIfPossible") != 0 && strcmp(m->eviction, "External") != 0) {
		p = sub(path, "evictionStrategy");
		invalid(v, p, m->eviction, "supported values: \"None\", \"LiveMigrate\", \"LiveMigrateIfPossible\", \"External\"");
		free(p);
	}
	if (v->err == NULL)
		parse_placement(v, s, path, m);
	char *arch = NULL, *start = NULL, *subd = NULL;
	get_str(v, s, "architecture", path, &arch);
	get_str(v, s, "startStrategy", path, &start);
	get_str(v, s, "subdomain", path, &subd);
	if (v->err == NULL)
		check_label(v, path, "subdomain", subd);
	if (v->err == NULL && arch && strcmp(arch, "amd64") != 0) {
		p = sub(path, "architecture");
		fail(v, p, "only amd64 guests are supported");
		free(p);
	}
	if (v->err == NULL && start && strcmp(start, "Paused") == 0) {
		p = sub(path, "startStrategy");
		fail(v, p, "starting paused is not supported by the engine");
		free(p);
	}
	free(arch);
	free(start);
	free(subd);
	yaml_node_t *vols = get(v, s, "volumes"), *nets = get(v, s, "networks"), *acs = get(v, s, "accessCredentials");
	if (v->err == NULL && acs && !ydoc_is_null(acs)) {
		p = sub(path, "accessCredentials");
		if (acs->type != YAML_SEQUENCE_NODE)
			fail(v, p, "expected a list");
		m->creds = xcalloc(ydoc_len(acs) + 1, sizeof *m->creds);
		for (size_t i = 0; acs->type == YAML_SEQUENCE_NODE && i < ydoc_len(acs) && v->err == NULL; i++) {
			char *pi = idx(p, i);
			m->ncreds++;
			parse_cred(v, ydoc_at(v->doc, acs, i), pi, &m->creds[i]);
			free(pi);
		}
		free(p);
	}
	if (v->err == NULL && vols && !ydoc_is_null(vols)) {
		p = sub(path, "volumes");
		if (vols->type != YAML_SEQUENCE_NODE)
			fail(v, p, "expected a list");
		else {
			m->vols = xcalloc(ydoc_len(vols) + 1, sizeof *m->vols);
			for (size_t i = 0; i < ydoc_len(vols) && v->err == NULL; i++) {
				char *pi = idx(p, i);
				m->nvols++;
				parse_volume(v, ydoc_at(v->doc, vols, i), pi, &m->vols[i]);
				free(pi);
			}
		}
		free(p);
	}
	if (v->err == NULL && nets && !ydoc_is_null(nets)) {
		p = sub(path, "networks");
		parse_networks(v, nets, p, m);
		free(p);
	}
	if (v->err)
		return false;
	/* every disk needs its volume, every volume a disk, names unique */
	for (int i = 0; i < m->ndisks; i++) {
		int found = 0;
		for (int j = 0; j < m->nvols; j++)
			found += strcmp(m->disks[i].name, m->vols[j].name) == 0;
		for (int j = 0; j < i; j++)
			if (strcmp(m->disks[i].name, m->disks[j].name) == 0) {
				char *pd = xasprintf("%s.domain.devices.disks[%d].name", path, i);
				fail(v, pd, "duplicate disk name \"%s\"", m->disks[i].name);
				free(pd);
				return false;
			}
		if (found != 1) {
			char *pd = xasprintf("%s.domain.devices.disks[%d]", path, i);
			fail(v, pd, "no volume named \"%s\" in %s.volumes", m->disks[i].name, path);
			free(pd);
			return false;
		}
	}
	for (int j = 0; j < m->nvols; j++) {
		int found = 0;
		for (int i = 0; i < m->ndisks; i++)
			found += strcmp(m->disks[i].name, m->vols[j].name) == 0;
		if (found == 0) {
			/* KubeVirt adds a virtio disk for a volume without one */
			m->disks = xreallocarray(m->disks, (size_t)m->ndisks + 1, sizeof *m->disks);
			memset(&m->disks[m->ndisks], 0, sizeof m->disks[0]);
			m->disks[m->ndisks].name = xstrdup(m->vols[j].name);
			m->disks[m->ndisks].bus = MF_BUS_VIRTIO;
			m->ndisks++;
		}
	}
	/* interfaces on the pod network (no multus entry) */
	for (int i = 0; i < m->nifaces; i++) {
		bool named = false;
		for (size_t k = 0; nets && nets->type == YAML_SEQUENCE_NODE && k < ydoc_len(nets); k++) {
			yaml_node_t *nm = get(v, ydoc_at(v->doc, nets, k), "name");
			named |= nm && nm->type == YAML_SCALAR_NODE && strcmp(ydoc_str(nm), m->ifaces[i].name) == 0;
		}
		if (!named && nets && !ydoc_is_null(nets)) {
			char *pi = xasprintf("%s.domain.devices.interfaces[%d]", path, i);
			fail(v, pi, "no network named \"%s\" in %s.networks", m->ifaces[i].name, path);
			free(pi);
			return false;
		}
	}
	return true;
}

static const char *const strategies[] = { "Always", "RerunOnFailure", "Once", "Manual", "Halted", NULL };

/* metadata.labels as "k=v" strings */
static void parse_labels(struct vctx *v, yaml_node_t *md, const char *path, char ***out, int *n)
{
	yaml_node_t *labels = get(v, md, "labels");
	if (labels == NULL || ydoc_is_null(labels))
		return;
	char *p = sub(path, "labels");
	if (labels->type != YAML_MAPPING_NODE)
		fail(v, p, "expected a map");
	for (size_t i = 0; v->err == NULL && i < ydoc_len(labels); i++) {
		if (ydoc_at(v->doc, labels, i)->type != YAML_SCALAR_NODE) {
			char *pl = sub(p, ydoc_key(v->doc, labels, i));
			fail(v, pl, "expected a string");
			free(pl);
			break;
		}
		*out = xreallocarray(*out, (size_t)*n + 1, sizeof **out);
		(*out)[(*n)++] = xasprintf("%s=%s", ydoc_key(v->doc, labels, i), ydoc_str(ydoc_at(v->doc, labels, i)));
	}
	free(p);
}

static bool parse_metadata(struct vctx *v, yaml_node_t *md, const char *path, struct manifest *m, bool top)
{
	static const struct key_rule rules[] = {
		{ "name", NULL }, { "namespace", NULL }, { "labels", NULL }, { "annotations", NULL },
		{ "uid", NULL }, { "resourceVersion", NULL }, { "generation", NULL }, { "creationTimestamp", NULL },
		{ "managedFields", NULL }, { "selfLink", NULL }, { "finalizers", NULL }, { "ownerReferences", NULL },
		{ "generateName", "generateName is not supported: name the VM" },
		{ NULL, NULL },
	};
	if (md == NULL || ydoc_is_null(md)) {
		if (top)
			return fail(v, path, "required (metadata.name)");
		return true;
	}
	if (!check_keys(v, md, path, rules))
		return false;
	if (!top) { /* the template's labels: its VMIs' (as KubeVirt copies them) */
		parse_labels(v, md, path, &m->tlabels, &m->ntlabels);
		return v->err == NULL;
	}
	if (!get_str(v, md, "name", path, &m->name) || !get_str(v, md, "namespace", path, &m->ns))
		return false;
	char *p = sub(path, "name");
	if (m->name == NULL)
		fail(v, p, "required");
	else if (!check_subdomain(v, path, "name", m->name))
		;
	else if (strlen(m->name) > 63) /* the engine names its files and the libvirt domain <ns>_<name> */
		invalid(v, p, m->name, "must be no more than 63 characters");
	free(p);
	if (v->err)
		return false;
	if (m->ns == NULL)
		m->ns = xstrdup("default");
	else if (!check_label(v, path, "namespace", m->ns))
		return false;
	parse_labels(v, md, path, &m->labels, &m->nlabels);
	return v->err == NULL;
}

struct manifest *manifest_parse(const char *text, size_t len, char **err)
{
	yaml_document_t doc;
	if (ydoc_load(&doc, text, len, err) < 0)
		return NULL;
	struct vctx v = { .err = NULL, .doc = &doc };
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	struct manifest *m = xcalloc(1, sizeof *m);
	m->serial_console = m->graphics = m->balloon = true;
	m->grace = 180; /* KubeVirt's default terminationGracePeriodSeconds */
	static const struct key_rule top[] = {
		{ "apiVersion", NULL }, { "kind", NULL }, { "metadata", NULL }, { "spec", NULL }, { "status", NULL },
		{ NULL, NULL },
	};
	static const struct key_rule specr[] = {
		{ "runStrategy", NULL }, { "running", NULL }, { "template", NULL },
		{ "dataVolumeTemplates", NULL }, /* the engine service makes their DataVolumes (apiserver/storage.c) */
		{ "instancetype", "instance types need a cluster; set domain.cpu and domain.memory" },
		{ "preference", "preferences need a cluster" },
		{ "liveUpdateFeatures", "live updates are not supported by the engine" },
		{ "updateVolumesStrategy", "volume updates are not supported by the engine" },
		{ NULL, NULL },
	};
	if (root->type != YAML_MAPPING_NODE) {
		fail(&v, "(document)", "expected a map");
		goto out;
	}
	if (!check_keys(&v, root, "", top))
		goto out;
	char *api = NULL, *kind = NULL;
	get_str(&v, root, "apiVersion", "", &api);
	get_str(&v, root, "kind", "", &kind);
	if (v.err == NULL && (api == NULL || (strcmp(api, "kubevirt.io/v1") && strcmp(api, "kubevirt.io/v1alpha3"))))
		fail(&v, "apiVersion", "\"%s\" is not kubevirt.io/v1", api ? api : "");
	else if (v.err == NULL && (kind == NULL || strcmp(kind, "VirtualMachine") != 0))
		fail(&v, "kind",
		     "\"%s\": the engine runs VirtualMachine manifests (put a VirtualMachineInstance's spec under "
		     "spec.template.spec)",
		     kind ? kind : "");
	free(api);
	free(kind);
	if (v.err || !parse_metadata(&v, get(&v, root, "metadata"), "metadata", m, true))
		goto out;
	yaml_node_t *spec = get(&v, root, "spec");
	if (spec == NULL || spec->type != YAML_MAPPING_NODE) {
		fail(&v, "spec", "required");
		goto out;
	}
	if (!check_keys(&v, spec, "spec", specr))
		goto out;
	bool running = false;
	yaml_node_t *rn = get(&v, spec, "running");
	get_str(&v, spec, "runStrategy", "spec", &m->run_strategy);
	get_bool(&v, spec, "running", "spec", &running);
	if (v.err)
		goto out;
	if (rn && !ydoc_is_null(rn) && m->run_strategy) {
		fail(&v, "spec.running", "running and runStrategy are mutually exclusive");
		goto out;
	}
	if (rn && !ydoc_is_null(rn)) {
		m->running_field = true;
		m->run_strategy = xstrdup(running ? "Always" : "Halted");
	}
	if (m->run_strategy == NULL)
		m->run_strategy = xstrdup("Halted"); /* KubeVirt: neither set means not running */
	size_t i;
	for (i = 0; strategies[i]; i++)
		if (strcmp(strategies[i], m->run_strategy) == 0)
			break;
	if (strategies[i] == NULL) {
		fail(&v, "spec.runStrategy", "\"%s\" is not one of Always, RerunOnFailure, Once, Manual, Halted",
		     m->run_strategy);
		goto out;
	}
	yaml_node_t *tmpl = get(&v, spec, "template");
	static const struct key_rule tr[] = { { "metadata", NULL }, { "spec", NULL }, { NULL, NULL } };
	if (tmpl == NULL || tmpl->type != YAML_MAPPING_NODE) {
		fail(&v, "spec.template", "required");
		goto out;
	}
	if (!check_keys(&v, tmpl, "spec.template", tr) ||
	    !parse_metadata(&v, get(&v, tmpl, "metadata"), "spec.template.metadata", m, false) ||
	    !parse_template_spec(&v, get(&v, tmpl, "spec"), "spec.template.spec", m))
		goto out;
	if (m->memory == 0) {
		fail(&v, "spec.template.spec.domain.memory.guest", "required (or resources.requests.memory)");
		goto out;
	}
	if (m->memory < (uint64_t)16 << 20)
		fail(&v, "spec.template.spec.domain.memory.guest", "at least 16Mi");
	if (m->sockets == 0)
		m->sockets = 1;
	if (m->cores == 0)
		m->cores = 1;
	if (m->threads == 0)
		m->threads = 1;
	if (m->sockets * m->cores * m->threads > 256)
		fail(&v, "spec.template.spec.domain.cpu", "more than 256 vCPUs");
	if (m->machine == NULL)
		m->machine = xstrdup("q35");
out:
	yaml_document_delete(&doc);
	if (v.err) {
		manifest_free(m);
		*err = v.err;
		return NULL;
	}
	return m;
}

static bool uses_image(const struct manifest *m, const char *image)
{
	for (int i = 0; m && i < m->nvols; i++)
		if (m->vols[i].type == MF_VOL_CONTAINER && util_str_eq(m->vols[i].image, image))
			return true;
	return false;
}

bool manifest_drops_image(const struct manifest *old, const struct manifest *new_)
{
	for (int i = 0; old && i < old->nvols; i++)
		if (old->vols[i].type == MF_VOL_CONTAINER && !uses_image(new_, old->vols[i].image))
			return true;
	return false;
}

void manifest_free(struct manifest *m)
{
	if (m == NULL)
		return;
	free(m->name);
	free(m->ns);
	for (int i = 0; i < m->nlabels; i++)
		free(m->labels[i]);
	free(m->labels);
	for (int i = 0; i < m->ntlabels; i++)
		free(m->tlabels[i]);
	free(m->tlabels);
	free(m->run_strategy);
	free(m->cpu_model);
	free(m->memory_text);
	free(m->machine);
	free(m->kernel_image);
	free(m->kernel);
	free(m->initrd);
	free(m->kernel_args);
	for (int i = 0; i < m->ndisks; i++) {
		free(m->disks[i].name);
		free(m->disks[i].serial);
	}
	free(m->disks);
	for (int i = 0; i < m->nvols; i++) {
		struct mf_volume *v = &m->vols[i];
		free(v->name);
		free(v->path);
		free(v->claim);
		free(v->image);
		free(v->pull_policy);
		free(v->user_data);
		free(v->network_data);
		free(v->user_secret);
		free(v->network_secret);
		free(v->object);
		free(v->label);
		free(v->run_user_data);
		free(v->run_network_data);
		esecret_free(v->files);
	}
	free(m->vols);
	for (int i = 0; i < m->ncreds; i++) {
		free(m->creds[i].secret);
		for (int j = 0; j < m->creds[i].nusers; j++)
			free(m->creds[i].users[j]);
		free(m->creds[i].users);
	}
	free(m->creds);
	for (int i = 0; i < m->nifaces; i++) {
		free(m->ifaces[i].name);
		free(m->ifaces[i].model);
		free(m->ifaces[i].mac);
		free(m->ifaces[i].host_bridge);
		for (int j = 0; j < m->ifaces[i].nports; j++)
			free(m->ifaces[i].ports[j].name);
		free(m->ifaces[i].ports);
	}
	free(m->ifaces);
	free(m->hostname);
	free(m->eviction);
	free(m->placement);
	free(m);
}

static char *(*image_hook)(const char *ref);

void manifest_image_hook(char *(*hook)(const char *ref))
{
	image_hook = hook;
}

char **manifest_image_candidates(const char *dir, const char *ref)
{
	static const char *exts[] = { "", ".qcow2", ".img", ".raw", ".iso" };
	char *flat = xstrdup(ref);
	for (char *p = flat; *p; p++)
		if (*p == '/' || *p == ':' || *p == '@')
			*p = '_';
	/* repository basename: after the last '/', before ':' or '@' */
	const char *slash = strrchr(ref, '/');
	char *base = xstrdup(slash ? slash + 1 : ref);
	base[strcspn(base, ":@")] = '\0';
	size_t n = 0;
	char **out = xcalloc(2 * 5 + 2, sizeof *out);
	for (int k = 0; k < 2; k++) {
		const char *name = k ? base : flat;
		if (k && strcmp(base, flat) == 0)
			break;
		if (name[0] == '\0' || name[0] == '.')
			continue;
		for (size_t e = 0; e < 5; e++)
			out[n++] = xasprintf("%s/%s%s", dir, name, exts[e]);
	}
	char *pulled = image_hook ? image_hook(ref) : NULL; /* after the image directory: a local file wins */
	if (pulled)
		out[n++] = pulled;
	free(flat);
	free(base);
	return out;
}
