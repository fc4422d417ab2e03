/* VirtualMachine manifest validation: a walk over the document tree where every map lists the keys it knows.
 * A known key is either read or refused with a reason; an unknown key is refused as unsupported. */
#include "engine/manifest.h"
#include "engine/esecret.h"
#include "engine/mfparse.h"

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

__attribute__((format(printf, 3, 4))) bool mfp_fail(struct vctx *v, const char *path, const char *fmt, ...)
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

yaml_node_t *mfp_get(struct vctx *v, const yaml_node_t *map, const char *key)
{
	return ydoc_get(v->doc, map, key);
}

char *mfp_sub(const char *path, const char *key)
{
	return path[0] ? xasprintf("%s.%s", path, key) : xstrdup(key);
}

static char *mfp_idx(const char *path, size_t i)
{
	return xasprintf("%s[%zu]", path, i);
}

/* Refuses keys of map that are not in rules, and keys whose rule has a reason. */
bool mfp_check_keys(struct vctx *v, yaml_node_t *map, const char *path, const struct key_rule *rules)
{
	if (map->type != YAML_MAPPING_NODE)
		return mfp_fail(v, path, "expected a map");
	for (size_t i = 0; i < ydoc_len(map); i++) {
		const struct key_rule *r;
		for (r = rules; r->key; r++)
			if (strcmp(r->key, ydoc_key(v->doc, map, i)) == 0)
				break;
		char *p = mfp_sub(path, ydoc_key(v->doc, map, i));
		if (r->key == NULL) {
			mfp_fail(v, p, "unknown or unsupported field");
			free(p);
			return false;
		}
		if (r->reason && !ydoc_is_null(ydoc_at(v->doc, map, i))) {
			mfp_fail(v, p, "%s", r->reason);
			free(p);
			return false;
		}
		free(p);
	}
	return true;
}

bool mfp_want_map(struct vctx *v, yaml_node_t *n, const char *path)
{
	if (n && n->type == YAML_MAPPING_NODE)
		return true;
	if (n && ydoc_is_null(n))
		return true; /* "{}" written as an empty value */
	return mfp_fail(v, path, "expected a map");
}

const char *mfp_scalar(struct vctx *v, yaml_node_t *n, const char *path)
{
	if (n == NULL || n->type != YAML_SCALAR_NODE) {
		mfp_fail(v, path, "expected a string");
		return NULL;
	}
	return ydoc_str(n);
}

bool mfp_get_str(struct vctx *v, yaml_node_t *map, const char *key, const char *path, char **out)
{
	yaml_node_t *n = mfp_get(v, map, key);
	if (n == NULL || ydoc_is_null(n))
		return true;
	char *p = mfp_sub(path, key);
	const char *s = mfp_scalar(v, n, p);
	free(p);
	if (s == NULL)
		return false;
	free(*out);
	*out = xstrdup(s);
	return true;
}

bool mfp_get_bool(struct vctx *v, yaml_node_t *map, const char *key, const char *path, bool *out)
{
	yaml_node_t *n = mfp_get(v, map, key);
	if (n == NULL || ydoc_is_null(n))
		return true;
	char *p = mfp_sub(path, key);
	bool ok = true;
	if (n->type == YAML_SCALAR_NODE && !ydoc_quoted(n) && strcmp(ydoc_str(n), "true") == 0)
		*out = true;
	else if (n->type == YAML_SCALAR_NODE && !ydoc_quoted(n) && strcmp(ydoc_str(n), "false") == 0)
		*out = false;
	else
		ok = mfp_fail(v, p, "expected true or false");
	free(p);
	return ok;
}

bool mfp_get_int(struct vctx *v, yaml_node_t *map, const char *key, const char *path, long lo, long hi,
		 int *out)
{
	yaml_node_t *n = mfp_get(v, map, key);
	if (n == NULL || ydoc_is_null(n))
		return true;
	char *p = mfp_sub(path, key);
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
		mfp_fail(v, p, "expected an integer between %ld and %ld", lo, hi);
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

bool mfp_get_qty(struct vctx *v, yaml_node_t *map, const char *key, const char *path, uint64_t *out,
		 char **text)
{
	yaml_node_t *n = mfp_get(v, map, key);
	if (n == NULL || ydoc_is_null(n))
		return true;
	char *p = mfp_sub(path, key);
	bool ok = n->type == YAML_SCALAR_NODE && manifest_quantity(ydoc_str(n), out) == 0;
	if (!ok)
		mfp_fail(v, p, "expected a quantity such as 128Mi or 1Gi");
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

__attribute__((format(printf, 4, 5))) bool mfp_invalid(struct vctx *v, const char *path, const char *value,
							  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = xvasprintf(fmt, ap);
	va_end(ap);
	char *q = quoted(value);
	mfp_fail(v, path, "Invalid value: %s: %s", q, msg);
	free(q);
	free(msg);
	return false;
}

/* A name KubeVirt validates as a DNS-1123 label (volumes, networks; disks and interfaces name those), refused at
 * path.key with the apimachinery message. */
bool mfp_check_label(struct vctx *v, const char *path, const char *key, const char *s)
{
	if (s == NULL || manifest_dns_label(s))
		return true;
	char *p = mfp_sub(path, key);
	bool chars = label_chars(s, strlen(s));
	if (strlen(s) > 63) /* both, as apimachinery reports both */
		mfp_invalid(v, p, s, "must be no more than 63 characters%s", chars ? "" : "; " LABEL_MSG);
	else
		mfp_invalid(v, p, s, LABEL_MSG);
	free(p);
	return false;
}

bool mfp_check_subdomain(struct vctx *v, const char *path, const char *key, const char *s)
{
	if (s == NULL || manifest_dns_subdomain(s))
		return true;
	char *p = mfp_sub(path, key);
	if (strlen(s) > 253)
		mfp_invalid(v, p, s, "must be no more than 253 characters%s",
			manifest_dns_subdomain_chars(s) ? "" : "; " SUBDOMAIN_MSG);
	else
		mfp_invalid(v, p, s, SUBDOMAIN_MSG);
	free(p);
	return false;
}

/* Every byte of s in set (a string of allowed characters, plus letters and digits), 1..max bytes. */
bool mfp_check_charset(struct vctx *v, const char *path, const char *key, const char *s, const char *set,
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
	char *p = mfp_sub(path, key);
	mfp_invalid(v, p, s, "%s (at most %zu)", what, max);
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

bool mfp_check_text(struct vctx *v, const char *path, const char *key, const char *s)
{
	if (s == NULL || manifest_plain_text(s))
		return true;
	char *p = mfp_sub(path, key);
	mfp_invalid(v, p, s, "must be UTF-8 text without control characters");
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
bool mfp_check_path(struct vctx *v, const char *path, const char *key, const char *s)
{
	if (s == NULL || manifest_clean_path(s))
		return true;
	char *p = mfp_sub(path, key);
	mfp_invalid(v, p, s, "must be an absolute path without '.' or '..' components or control characters");
	free(p);
	return false;
}

/* interfaces[].ports as KubeVirt validates them: port 1..65535 (required), protocol TCP or UDP (default TCP),
 * an optional name; no port twice per protocol; only on masquerade (bridge binding puts the guest on the
 * bridge's network itself). */
static bool parse_ports(struct vctx *v, yaml_node_t *ports, const char *path, struct mf_iface *f)
{
	static const struct key_rule r[] = { { "name", NULL }, { "port", NULL }, { "protocol", NULL }, { NULL, NULL } };
	char *pp = mfp_sub(path, "ports");
	if (ports->type != YAML_SEQUENCE_NODE) {
		mfp_fail(v, pp, "expected a list");
		goto out;
	}
	if (f->bridge) {
		mfp_fail(v, pp, "ports are forwarded only on masquerade interfaces");
		goto out;
	}
	f->ports = xcalloc(ydoc_len(ports) + 1, sizeof *f->ports);
	for (size_t i = 0; i < ydoc_len(ports) && v->err == NULL; i++) {
		yaml_node_t *n = ydoc_at(v->doc, ports, i);
		struct mf_port *pt = &f->ports[f->nports++];
		char *pi = mfp_idx(pp, i), *proto = NULL;
		if (mfp_check_keys(v, n, pi, r) && mfp_get_str(v, n, "name", pi, &pt->name) &&
		    mfp_get_int(v, n, "port", pi, 1, 65535, &pt->port) && mfp_get_str(v, n, "protocol", pi, &proto)) {
			if (pt->port == 0)
				mfp_fail(v, pi, "port is required");
			else if (pt->name && !mfp_check_label(v, pi, "name", pt->name))
				;
			else if (proto && strcmp(proto, "TCP") && strcmp(proto, "UDP")) {
				char *pr = mfp_sub(pi, "protocol");
				mfp_fail(v, pr, "protocol \"%s\" is not one of TCP, UDP", proto);
				free(pr);
			} else {
				pt->proto = proto && strcmp(proto, "UDP") == 0 ? "UDP" : "TCP";
				for (int j = 0; j + 1 < f->nports; j++)
					if (f->ports[j].port == pt->port && strcmp(f->ports[j].proto, pt->proto) == 0)
						mfp_fail(v, pi, "port %d/%s is listed twice", pt->port, pt->proto);
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
	if (!mfp_check_keys(v, n, path, rules) || !mfp_get_str(v, n, "name", path, &f->name) ||
	    !mfp_get_str(v, n, "model", path, &f->model) || !mfp_get_str(v, n, "macAddress", path, &f->mac))
		return false;
	if (f->name == NULL)
		return mfp_fail(v, path, "name is required");
	if (!mfp_check_label(v, path, "name", f->name))
		return false;
	yaml_node_t *mq = mfp_get(v, n, "masquerade"), *br = mfp_get(v, n, "bridge");
	if ((mq != NULL) == (br != NULL))
		return mfp_fail(v, path, "exactly one of masquerade or bridge is required");
	f->bridge = br != NULL;
	yaml_node_t *ports = mfp_get(v, n, "ports");
	if (ports && !ydoc_is_null(ports) && !parse_ports(v, ports, path, f))
		return false;
	if (f->model) {
		static const char *models[] = { "virtio", "e1000", "e1000e", "rtl8139", NULL };
		size_t i;
		for (i = 0; models[i]; i++)
			if (strcmp(models[i], f->model) == 0)
				break;
		if (models[i] == NULL) {
			char *p = mfp_sub(path, "model");
			mfp_fail(v, p, "model \"%s\" is not one of virtio, e1000, e1000e, rtl8139", f->model);
			free(p);
			return false;
		}
	}
	if (f->mac) {
		bool ok = strlen(f->mac) == 17;
		for (int i = 0; ok && i < 17; i++)
			ok = i % 3 == 2 ? f->mac[i] == ':' || f->mac[i] == '-' : isxdigit((unsigned char)f->mac[i]) != 0;
		if (!ok) {
			char *p = mfp_sub(path, "macAddress");
			mfp_fail(v, p, "not a MAC address");
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
	if (!mfp_want_map(v, cpu, path) || (cpu->type == YAML_MAPPING_NODE && !mfp_check_keys(v, cpu, path, rules)))
		return false;
	return mfp_get_int(v, cpu, "cores", path, 1, 256, &m->cores) &&
	       mfp_get_int(v, cpu, "sockets", path, 1, 64, &m->sockets) &&
	       mfp_get_int(v, cpu, "threads", path, 1, 8, &m->threads) && mfp_get_str(v, cpu, "model", path, &m->cpu_model) &&
	       mfp_check_charset(v, path, "model", m->cpu_model, "-_.+", 64,
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
	if (!mfp_want_map(v, fw, path) || (fw->type == YAML_MAPPING_NODE && !mfp_check_keys(v, fw, path, rules)))
		return false;
	yaml_node_t *bl = mfp_get(v, fw, "bootloader"), *kb = mfp_get(v, fw, "kernelBoot");
	char *p;
	if (bl) {
		static const struct key_rule r[] = { { "bios", NULL }, { "efi", NULL }, { NULL, NULL } };
		p = mfp_sub(path, "bootloader");
		if (!mfp_want_map(v, bl, p) || (bl->type == YAML_MAPPING_NODE && !mfp_check_keys(v, bl, p, r))) {
			free(p);
			return false;
		}
		yaml_node_t *bios = mfp_get(v, bl, "bios"), *efi = mfp_get(v, bl, "efi");
		if (bios && efi)
			mfp_fail(v, p, "bios and efi are mutually exclusive");
		if (bios) {
			static const struct key_rule rb[] = {
				{ "useSerial", "BIOS serial redirection is not supported by the engine" }, { NULL, NULL } };
			char *pb = mfp_sub(p, "bios");
			if (mfp_want_map(v, bios, pb) && bios->type == YAML_MAPPING_NODE)
				mfp_check_keys(v, bios, pb, rb);
			free(pb);
		}
		if (efi) {
			static const struct key_rule re[] = { { "secureBoot", NULL },
				{ "persistent", "persistent EFI variables are not supported by the engine" },
				{ NULL, NULL } };
			char *pe = mfp_sub(p, "efi");
			m->efi = true;
			m->secure_boot = true; /* KubeVirt's default */
			if (mfp_want_map(v, efi, pe) && efi->type == YAML_MAPPING_NODE && mfp_check_keys(v, efi, pe, re))
				mfp_get_bool(v, efi, "secureBoot", pe, &m->secure_boot);
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
		p = mfp_sub(path, "kernelBoot");
		bool ok = mfp_want_map(v, kb, p) && kb->type == YAML_MAPPING_NODE && mfp_check_keys(v, kb, p, r) &&
			  mfp_get_str(v, kb, "kernelArgs", p, &m->kernel_args);
		yaml_node_t *c = mfp_get(v, kb, "container");
		char *pc = mfp_sub(p, "container");
		if (ok && c == NULL)
			mfp_fail(v, pc, "required (image, kernelPath, initrdPath)");
		else if (ok && mfp_want_map(v, c, pc) && c->type == YAML_MAPPING_NODE && mfp_check_keys(v, c, pc, rc) &&
			 mfp_get_str(v, c, "image", pc, &m->kernel_image) && mfp_get_str(v, c, "kernelPath", pc, &m->kernel) &&
			 mfp_get_str(v, c, "initrdPath", pc, &m->initrd)) {
			if (m->kernel == NULL && m->initrd == NULL)
				mfp_fail(v, pc, "kernelPath or initrdPath is required");
			else if ((m->kernel && m->kernel[0] != '/') || (m->initrd && m->initrd[0] != '/'))
				mfp_fail(v, pc, "kernelPath and initrdPath must be absolute paths");
			else if (m->kernel == NULL)
				mfp_fail(v, pc, "kernelPath is required (an initrd alone cannot boot)");
			else if (mfp_check_path(v, pc, "kernelPath", m->kernel) &&
				 mfp_check_path(v, pc, "initrdPath", m->initrd))
				mfp_check_text(v, pc, "image", m->kernel_image);
		}
		free(pc);
		if (v->err == NULL)
			mfp_check_text(v, p, "kernelArgs", m->kernel_args);
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
		return mfp_fail(v, path, "required");
	if (!mfp_check_keys(v, d, path, rules))
		return false;
	char *p;
	yaml_node_t *n;
	if ((n = mfp_get(v, d, "cpu"))) {
		p = mfp_sub(path, "cpu");
		parse_cpu(v, n, p, m);
		free(p);
	}
	if (v->err == NULL && (n = mfp_get(v, d, "memory"))) {
		static const struct key_rule r[] = { { "guest", NULL },
			{ "hugepages", "hugepages are not supported by the engine" },
			{ "maxGuest", "memory hotplug is not supported by the engine" }, { NULL, NULL } };
		p = mfp_sub(path, "memory");
		if (mfp_want_map(v, n, p) && n->type == YAML_MAPPING_NODE && mfp_check_keys(v, n, p, r))
			mfp_get_qty(v, n, "guest", p, &m->memory, &m->memory_text);
		free(p);
	}
	if (v->err == NULL && (n = mfp_get(v, d, "resources"))) {
		static const struct key_rule r[] = { { "requests", NULL },
			{ "limits", "launcher resource limits are not enforced by the engine" },
			{ "overcommitGuestOverhead", NULL }, { NULL, NULL } };
		static const struct key_rule rq[] = { { "memory", NULL },
			{ "cpu", "CPU requests are a scheduling input; the engine has no scheduler (use cpu.cores)" },
			{ NULL, NULL } };
		p = mfp_sub(path, "resources");
		if (mfp_want_map(v, n, p) && n->type == YAML_MAPPING_NODE && mfp_check_keys(v, n, p, r)) {
			yaml_node_t *req = mfp_get(v, n, "requests");
			char *pr = mfp_sub(p, "requests");
			uint64_t reqmem = 0;
			char *reqtext = NULL;
			if (req && mfp_want_map(v, req, pr) && req->type == YAML_MAPPING_NODE && mfp_check_keys(v, req, pr, rq) &&
			    mfp_get_qty(v, req, "memory", pr, &reqmem, &reqtext) && m->memory == 0 && reqmem) {
				m->memory = reqmem; /* KubeVirt: guest memory defaults to the request */
				free(m->memory_text);
				m->memory_text = reqtext;
				reqtext = NULL;
			}
			free(reqtext);
			free(pr);
			bool ovc = false;
			mfp_get_bool(v, n, "overcommitGuestOverhead", p, &ovc);
		}
		free(p);
	}
	if (v->err == NULL && (n = mfp_get(v, d, "machine"))) {
		static const struct key_rule r[] = { { "type", NULL }, { NULL, NULL } };
		p = mfp_sub(path, "machine");
		if (mfp_want_map(v, n, p) && n->type == YAML_MAPPING_NODE && mfp_check_keys(v, n, p, r) &&
		    mfp_get_str(v, n, "type", p, &m->machine) && m->machine) {
			const char *t = m->machine;
			if (!(strcmp(t, "q35") == 0 || strcmp(t, "pc") == 0 || util_has_prefix(t, "pc-q35-") || util_has_prefix(t, "pc-i440fx-")))
				mfp_fail(v, p, "machine type \"%s\" is not q35, pc, pc-q35-* or pc-i440fx-*", t);
			else
				mfp_check_charset(v, p, "type", t, "-_.", 64,
					      "a machine type must consist of letters, digits, '-', '_' or '.'");
		}
		free(p);
	}
	if (v->err == NULL && (n = mfp_get(v, d, "firmware"))) {
		p = mfp_sub(path, "firmware");
		parse_firmware(v, n, p, m);
		free(p);
	}
	if (v->err == NULL && (n = mfp_get(v, d, "features"))) {
		static const struct key_rule r[] = { { "acpi", NULL }, { "apic", NULL },
			{ "smm", "SMM selection is not supported by the engine" },
			{ "hyperv", "Hyper-V enlightenments are not supported by the engine" },
			{ "kvm", "KVM feature flags are not supported by the engine" },
			{ "pvspinlock", "pvspinlock is not supported by the engine" }, { NULL, NULL } };
		p = mfp_sub(path, "features");
		if (mfp_want_map(v, n, p) && n->type == YAML_MAPPING_NODE)
			mfp_check_keys(v, n, p, r);
		free(p);
	}
	if (v->err == NULL && (n = mfp_get(v, d, "devices"))) {
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
		p = mfp_sub(path, "devices");
		if (mfp_want_map(v, n, p) && n->type == YAML_MAPPING_NODE && mfp_check_keys(v, n, p, r)) {
			bool mq = false, dh = false, ai = true, vt = false;
			mfp_get_bool(v, n, "autoattachSerialConsole", p, &m->serial_console);
			mfp_get_bool(v, n, "autoattachGraphicsDevice", p, &m->graphics);
			mfp_get_bool(v, n, "autoattachMemBalloon", p, &m->balloon);
			mfp_get_bool(v, n, "networkInterfaceMultiqueue", p, &mq);
			mfp_get_bool(v, n, "blockMultiQueue", p, &mq);
			mfp_get_bool(v, n, "disableHotplug", p, &dh);
			mfp_get_bool(v, n, "autoattachInputDevice", p, &ai);
			mfp_get_bool(v, n, "useVirtioTransitional", p, &vt);
			bool pod_iface = true;
			mfp_get_bool(v, n, "autoattachPodInterface", p, &pod_iface);
			m->no_pod_iface = !pod_iface;
			yaml_node_t *rng = mfp_get(v, n, "rng");
			if (rng) {
				char *pr = mfp_sub(p, "rng");
				if (mfp_want_map(v, rng, pr) && rng->type == YAML_MAPPING_NODE && ydoc_len(rng))
					mfp_fail(v, pr, "only an empty rng {} is supported");
				m->rng = true;
				free(pr);
			}
			yaml_node_t *disks = mfp_get(v, n, "disks"), *ifs = mfp_get(v, n, "interfaces");
			if (v->err == NULL && disks && !ydoc_is_null(disks)) {
				char *pd = mfp_sub(p, "disks");
				if (disks->type != YAML_SEQUENCE_NODE)
					mfp_fail(v, pd, "expected a list");
				else {
					m->disks = xcalloc(ydoc_len(disks) + 1, sizeof *m->disks);
					for (size_t i = 0; i < ydoc_len(disks) && v->err == NULL; i++) {
						char *pi = mfp_idx(pd, i);
						m->ndisks++;
						mfp_parse_disk(v, ydoc_at(v->doc, disks, i), pi, &m->disks[i]);
						free(pi);
					}
				}
				free(pd);
			}
			if (v->err == NULL && ifs && !ydoc_is_null(ifs)) {
				char *pf = mfp_sub(p, "interfaces");
				if (ifs->type != YAML_SEQUENCE_NODE)
					mfp_fail(v, pf, "expected a list");
				else {
					m->ifaces = xcalloc(ydoc_len(ifs) + 1, sizeof *m->ifaces);
					for (size_t i = 0; i < ydoc_len(ifs) && v->err == NULL; i++) {
						char *pi = mfp_idx(pf, i);
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
		return mfp_fail(v, path, "expected a list");
	static const struct key_rule r[] = { { "name", NULL }, { "pod", NULL }, { "multus", NULL }, { NULL, NULL } };
	for (size_t i = 0; i < ydoc_len(nets); i++) {
		char *p = mfp_idx(path, i);
		yaml_node_t *n = ydoc_at(v->doc, nets, i);
		char *name = NULL;
		if (!mfp_check_keys(v, n, p, r) || !mfp_get_str(v, n, "name", p, &name)) {
			free(p);
			return false;
		}
		yaml_node_t *pod = mfp_get(v, n, "pod"), *multus = mfp_get(v, n, "multus");
		struct mf_iface *f = NULL;
		for (int j = 0; name && j < m->nifaces; j++)
			if (strcmp(m->ifaces[j].name, name) == 0)
				f = &m->ifaces[j];
		if (name == NULL)
			mfp_fail(v, p, "name is required");
		else if (!mfp_check_label(v, p, "name", name))
			;
		else if ((pod != NULL) == (multus != NULL))
			mfp_fail(v, p, "exactly one of pod or multus is required");
		else if (f == NULL)
			mfp_fail(v, p, "network \"%s\" has no interface in spec.template.spec.domain.devices.interfaces", name);
		else if (pod) {
			static const struct key_rule rp[] = { { "vmNetworkCIDR", "custom CIDRs are not supported by user-mode networking" },
				{ "vmIPv6NetworkCIDR", "custom CIDRs are not supported by user-mode networking" }, { NULL, NULL } };
			char *pp = mfp_sub(p, "pod");
			if (mfp_want_map(v, pod, pp) && pod->type == YAML_MAPPING_NODE)
				mfp_check_keys(v, pod, pp, rp);
			free(pp);
		} else {
			static const struct key_rule rm[] = { { "networkName", NULL }, { "default", NULL }, { NULL, NULL } };
			char *pm = mfp_sub(p, "multus");
			if (mfp_want_map(v, multus, pm) && multus->type == YAML_MAPPING_NODE && mfp_check_keys(v, multus, pm, rm) &&
			    mfp_get_str(v, multus, "networkName", pm, &f->host_bridge)) {
				if (!f->bridge)
					mfp_fail(v, pm, "a multus network needs a bridge interface (it names the host bridge)");
				else if (f->host_bridge == NULL)
					mfp_fail(v, pm, "networkName (the host bridge) is required");
				else if (strcmp(f->host_bridge, ".") == 0 || strcmp(f->host_bridge, "..") == 0) {
					char *pn = mfp_sub(pm, "networkName");
					mfp_invalid(v, pn, f->host_bridge, "a host bridge name must not be '.' or '..'");
					free(pn);
				} else
					mfp_check_charset(v, pm, "networkName", f->host_bridge, "-_.", 15,
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

static bool parse_template_spec(struct vctx *v, yaml_node_t *s, const char *path, struct manifest *m)
{
	static const struct key_rule rules[] = {
		{ "domain", NULL }, { "volumes", NULL }, { "networks", NULL },
		{ "terminationGracePeriodSeconds", NULL }, { "hostname", NULL }, { "subdomain", NULL },
		{ "evictionStrategy", NULL }, { "architecture", NULL }, { "startStrategy", NULL },
		{ "nodeSelector", "the engine runs on its own host; node selection does not apply" },
		{ "affinity", "the engine runs on its own host; affinity does not apply" },
		{ "tolerations", "the engine runs on its own host; tolerations do not apply" },
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
		return mfp_fail(v, path, "required");
	if (!mfp_check_keys(v, s, path, rules))
		return false;
	char *p = mfp_sub(path, "domain");
	parse_domain(v, mfp_get(v, s, "domain"), p, m);
	free(p);
	if (v->err)
		return false;
	if (m->nifaces == 0 && !m->no_pod_iface) {
		/* KubeVirt attaches a pod-network interface by default */
		m->ifaces = xcalloc(1, sizeof *m->ifaces);
		m->ifaces[0].name = xstrdup("default");
		m->nifaces = 1;
	}
	mfp_get_int(v, s, "terminationGracePeriodSeconds", path, 0, 86400, &m->grace);
	mfp_get_str(v, s, "hostname", path, &m->hostname);
	if (v->err == NULL)
		mfp_check_label(v, path, "hostname", m->hostname); /* KubeVirt: a DNS-1123 label; it goes into the seed */
	mfp_get_str(v, s, "evictionStrategy", path, &m->eviction);
	char *arch = NULL, *start = NULL, *subd = NULL;
	mfp_get_str(v, s, "architecture", path, &arch);
	mfp_get_str(v, s, "startStrategy", path, &start);
	mfp_get_str(v, s, "subdomain", path, &subd);
	if (v->err == NULL)
		mfp_check_label(v, path, "subdomain", subd);
	if (v->err == NULL && arch && strcmp(arch, "amd64") != 0) {
		p = mfp_sub(path, "architecture");
		mfp_fail(v, p, "only amd64 guests are supported");
		free(p);
	}
	if (v->err == NULL && start && strcmp(start, "Paused") == 0) {
		p = mfp_sub(path, "startStrategy");
		mfp_fail(v, p, "starting paused is not supported by the engine");
		free(p);
	}
	free(arch);
	free(start);
	free(subd);
	yaml_node_t *vols = mfp_get(v, s, "volumes"), *nets = mfp_get(v, s, "networks"), *acs = mfp_get(v, s, "accessCredentials");
	if (v->err == NULL && acs && !ydoc_is_null(acs)) {
		p = mfp_sub(path, "accessCredentials");
		if (acs->type != YAML_SEQUENCE_NODE)
			mfp_fail(v, p, "expected a list");
		m->creds = xcalloc(ydoc_len(acs) + 1, sizeof *m->creds);
		for (size_t i = 0; acs->type == YAML_SEQUENCE_NODE && i < ydoc_len(acs) && v->err == NULL; i++) {
			char *pi = mfp_idx(p, i);
			m->ncreds++;
			mfp_parse_cred(v, ydoc_at(v->doc, acs, i), pi, &m->creds[i]);
			free(pi);
		}
		free(p);
	}
	if (v->err == NULL && vols && !ydoc_is_null(vols)) {
		p = mfp_sub(path, "volumes");
		if (vols->type != YAML_SEQUENCE_NODE)
			mfp_fail(v, p, "expected a list");
		else {
			m->vols = xcalloc(ydoc_len(vols) + 1, sizeof *m->vols);
			for (size_t i = 0; i < ydoc_len(vols) && v->err == NULL; i++) {
				char *pi = mfp_idx(p, i);
				m->nvols++;
				mfp_parse_volume(v, ydoc_at(v->doc, vols, i), pi, &m->vols[i]);
				free(pi);
			}
		}
		free(p);
	}
	if (v->err == NULL && nets && !ydoc_is_null(nets)) {
		p = mfp_sub(path, "networks");
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
				mfp_fail(v, pd, "duplicate disk name \"%s\"", m->disks[i].name);
				free(pd);
				return false;
			}
		if (found != 1) {
			char *pd = xasprintf("%s.domain.devices.disks[%d]", path, i);
			mfp_fail(v, pd, "no volume named \"%s\" in %s.volumes", m->disks[i].name, path);
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
			yaml_node_t *nm = mfp_get(v, ydoc_at(v->doc, nets, k), "name");
			named |= nm && nm->type == YAML_SCALAR_NODE && strcmp(ydoc_str(nm), m->ifaces[i].name) == 0;
		}
		if (!named && nets && !ydoc_is_null(nets)) {
			char *pi = xasprintf("%s.domain.devices.interfaces[%d]", path, i);
			mfp_fail(v, pi, "no network named \"%s\" in %s.networks", m->ifaces[i].name, path);
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
	yaml_node_t *labels = mfp_get(v, md, "labels");
	if (labels == NULL || ydoc_is_null(labels))
		return;
	char *p = mfp_sub(path, "labels");
	if (labels->type != YAML_MAPPING_NODE)
		mfp_fail(v, p, "expected a map");
	for (size_t i = 0; v->err == NULL && i < ydoc_len(labels); i++) {
		if (ydoc_at(v->doc, labels, i)->type != YAML_SCALAR_NODE) {
			char *pl = mfp_sub(p, ydoc_key(v->doc, labels, i));
			mfp_fail(v, pl, "expected a string");
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
			return mfp_fail(v, path, "required (metadata.name)");
		return true;
	}
	if (!mfp_check_keys(v, md, path, rules))
		return false;
	if (!top) { /* the template's labels: its VMIs' (as KubeVirt copies them) */
		parse_labels(v, md, path, &m->tlabels, &m->ntlabels);
		return v->err == NULL;
	}
	if (!mfp_get_str(v, md, "name", path, &m->name) || !mfp_get_str(v, md, "namespace", path, &m->ns))
		return false;
	char *p = mfp_sub(path, "name");
	if (m->name == NULL)
		mfp_fail(v, p, "required");
	else if (!mfp_check_subdomain(v, path, "name", m->name))
		;
	else if (strlen(m->name) > 63) /* the engine names its files and the libvirt domain <ns>_<name> */
		mfp_invalid(v, p, m->name, "must be no more than 63 characters");
	free(p);
	if (v->err)
		return false;
	if (m->ns == NULL)
		m->ns = xstrdup("default");
	else if (!mfp_check_label(v, path, "namespace", m->ns))
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
		mfp_fail(&v, "(document)", "expected a map");
		goto out;
	}
	if (!mfp_check_keys(&v, root, "", top))
		goto out;
	char *api = NULL, *kind = NULL;
	mfp_get_str(&v, root, "apiVersion", "", &api);
	mfp_get_str(&v, root, "kind", "", &kind);
	if (v.err == NULL && (api == NULL || (strcmp(api, "kubevirt.io/v1") && strcmp(api, "kubevirt.io/v1alpha3"))))
		mfp_fail(&v, "apiVersion", "\"%s\" is not kubevirt.io/v1", api ? api : "");
	else if (v.err == NULL && (kind == NULL || strcmp(kind, "VirtualMachine") != 0))
		mfp_fail(&v, "kind",
		     "\"%s\": the engine runs VirtualMachine manifests (put a VirtualMachineInstance's spec under "
		     "spec.template.spec)",
		     kind ? kind : "");
	free(api);
	free(kind);
	if (v.err || !parse_metadata(&v, mfp_get(&v, root, "metadata"), "metadata", m, true))
		goto out;
	yaml_node_t *spec = mfp_get(&v, root, "spec");
	if (spec == NULL || spec->type != YAML_MAPPING_NODE) {
		mfp_fail(&v, "spec", "required");
		goto out;
	}
	if (!mfp_check_keys(&v, spec, "spec", specr))
		goto out;
	bool running = false;
	yaml_node_t *rn = mfp_get(&v, spec, "running");
	mfp_get_str(&v, spec, "runStrategy", "spec", &m->run_strategy);
	mfp_get_bool(&v, spec, "running", "spec", &running);
	if (v.err)
		goto out;
	if (rn && !ydoc_is_null(rn) && m->run_strategy) {
		mfp_fail(&v, "spec.running", "running and runStrategy are mutually exclusive");
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
		mfp_fail(&v, "spec.runStrategy", "\"%s\" is not one of Always, RerunOnFailure, Once, Manual, Halted",
		     m->run_strategy);
		goto out;
	}
	yaml_node_t *tmpl = mfp_get(&v, spec, "template");
	static const struct key_rule tr[] = { { "metadata", NULL }, { "spec", NULL }, { NULL, NULL } };
	if (tmpl == NULL || tmpl->type != YAML_MAPPING_NODE) {
		mfp_fail(&v, "spec.template", "required");
		goto out;
	}
	if (!mfp_check_keys(&v, tmpl, "spec.template", tr) ||
	    !parse_metadata(&v, mfp_get(&v, tmpl, "metadata"), "spec.template.metadata", m, false) ||
	    !parse_template_spec(&v, mfp_get(&v, tmpl, "spec"), "spec.template.spec", m))
		goto out;
	if (m->memory == 0) {
		mfp_fail(&v, "spec.template.spec.domain.memory.guest", "required (or resources.requests.memory)");
		goto out;
	}
	if (m->memory < (uint64_t)16 << 20)
		mfp_fail(&v, "spec.template.spec.domain.memory.guest", "at least 16Mi");
	if (m->sockets == 0)
		m->sockets = 1;
	if (m->cores == 0)
		m->cores = 1;
	if (m->threads == 0)
		m->threads = 1;
	if (m->sockets * m->cores * m->threads > 256)
		mfp_fail(&v, "spec.template.spec.domain.cpu", "more than 256 vCPUs");
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
