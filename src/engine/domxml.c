/* Domain XML for an engine VM, and the files an execution needs. See domxml.h and kvcon(1) for the local
 * meaning of each KubeVirt volume and interface kind. */
#include "engine/domxml.h"
#include "engine/esecret.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlwriter.h>
#include <libxml/xpath.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/embed.h"

#define TMPL "spec.template.spec"

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Finds an image: a regular file (containerDisk) or a directory (kernelBoot). NULL when absent, with the
 * candidates tried in *tried. */
static char *find_image(const char *dir, const char *ref, bool want_dir, char **tried)
{
	char **c = manifest_image_candidates(dir, ref);
	char *found = NULL;
	struct buf b;
	buf_init(&b);
	for (size_t i = 0; c[i]; i++) {
		if (found == NULL && (want_dir ? is_dir(c[i]) : is_file(c[i])))
			found = xstrdup(c[i]);
		if (i < 2 || (i % 5) == 0) {
			/* list the plain names and the first extension only: enough to tell where to put it */
			if (b.len)
				buf_add_str(&b, ", ");
			buf_add_str(&b, c[i]);
		}
		free(c[i]);
	}
	free(c);
	if (tried)
		*tried = buf_steal(&b);
	else
		buf_free(&b);
	return found;
}

static const struct mf_volume *volume_of(const struct manifest *m, const char *name)
{
	for (int i = 0; i < m->nvols; i++)
		if (strcmp(m->vols[i].name, name) == 0)
			return &m->vols[i];
	return NULL;
}

static int vol_index(const struct manifest *m, const struct mf_volume *v)
{
	return (int)(v - m->vols);
}

/* ---- where files may be ---- */

/* The resolved path (symbolic links followed, caller frees); when it does not exist and missing_ok, its
 * directory resolved plus its last component. NULL when neither resolves. */
static char *resolve(const char *path, bool missing_ok)
{
	char *r = realpath(path, NULL);
	if (r || !missing_ok || errno != ENOENT)
		return r;
	const char *slash = strrchr(path, '/');
	if (slash == NULL || slash[1] == '\0' || strcmp(slash + 1, "..") == 0 || strcmp(slash + 1, ".") == 0)
		return NULL;
	char *dir = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
	char *rd = realpath(dir, NULL);
	free(dir);
	if (rd == NULL)
		return NULL;
	char *out = xasprintf("%s/%s", strcmp(rd, "/") == 0 ? "" : rd, slash + 1);
	free(rd);
	return out;
}

/* path (as written) is root or below it, comparing whole components. */
static bool below(const char *path, const char *root)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 1 && root[0] == '/')
		return path[0] == '/';
	return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static bool domxml_inside(const char *resolved, const char *root)
{
	char *r = realpath(root, NULL);
	bool ok = r && below(resolved, r);
	free(r);
	return ok;
}

/* The root of roots (NULL-terminated, may be NULL) that path lies in, both as written and resolved; NULL when
 * none. *resolved gets the resolved path (caller frees) when one does. */
static const char *allowed_root(const char *path, const char *const *roots, bool missing_ok, char **resolved)
{
	*resolved = NULL;
	for (size_t i = 0; roots && roots[i]; i++) {
		if (roots[i][0] != '/' || !below(path, roots[i]))
			continue; /* decided on the path as written first: nothing outside is even looked at */
		char *r = resolve(path, missing_ok);
		if (r && domxml_inside(r, roots[i])) {
			*resolved = r;
			return roots[i];
		}
		free(r);
	}
	return NULL;
}

#define OPT_IN                                                                                                     \
	"allow a directory with \"engine.allow-host-path = DIR\" in $XDG_CONFIG_HOME/kvcon/config (host paths are "   \
	"off by default, as KubeVirt keeps hostDisk behind its HostDisk feature gate)"

/* A resolved path lies in one of roots. */
static bool in_roots(const char *resolved, const char *const *roots)
{
	for (size_t i = 0; roots && roots[i]; i++)
		if (roots[i][0] == '/' && domxml_inside(resolved, roots[i]))
			return true;
	return false;
}

/* path as written lies in one of roots (it may still resolve elsewhere). */
static bool written_in_roots(const char *path, const char *const *roots)
{
	for (size_t i = 0; roots && roots[i]; i++)
		if (roots[i][0] == '/' && below(path, roots[i]))
			return true;
	return false;
}

/* kernel or initrd, resolved (owned): inside a kernel-boot image (dir) of the image directory, or a host path
 * (dir NULL) in the image directory or a directory the host's owner allows. */
static int kernel_file(const struct domxml_env *env, const char *dir, const char *inner, const char *field,
		       char **out, char **err)
{
	const char *p = TMPL ".domain.firmware.kernelBoot.container";
	char *want = dir ? xasprintf("%s%s", dir, inner) : xstrdup(inner);
	char *img = realpath(env->image_dir, NULL);
	bool written_ok = dir || below(inner, env->image_dir) || (img && below(inner, img)) ||
			  written_in_roots(inner, env->host_roots);
	free(img);
	*out = NULL;
	if (!written_ok) {
		*err = xasprintf("%s.%s: Forbidden: host path \"%s\" is outside the engine's image directory %s and "
				 "the directories the host's owner allows; put kernel-boot images in the image "
				 "directory, or " OPT_IN,
				 p, field, inner, env->image_dir);
		free(want);
		return -1;
	}
	char *r = realpath(want, NULL);
	if (r == NULL) {
		*err = xasprintf("%s.%s: %s: %s", p, field, want, errno == ENOENT ? "no such file" : strerror(errno));
		free(want);
		return -1;
	}
	if (!domxml_inside(r, env->image_dir) && !in_roots(r, env->host_roots)) {
		*err = xasprintf("%s.%s: Forbidden: %s resolves to %s, outside the engine's image directory %s and "
				 "the directories the host's owner allows (a symbolic link may not lead out)",
				 p, field, want, r, env->image_dir);
		free(r);
		free(want);
		return -1;
	}
	free(want);
	struct stat st;
	if (stat(r, &st) < 0 || !S_ISREG(st.st_mode)) {
		*err = xasprintf("%s.%s: %s: not a regular file", p, field, r);
		free(r);
		return -1;
	}
	*out = r;
	return 0;
}

static int kernel_paths(const struct manifest *m, const struct domxml_env *env, char **kernel, char **initrd,
			char **err)
{
	*kernel = *initrd = NULL;
	if (m->kernel == NULL)
		return 0;
	const char *p = TMPL ".domain.firmware.kernelBoot.container";
	char *dir = NULL;
	if (m->kernel_image) {
		char *tried = NULL;
		dir = find_image(env->image_dir, m->kernel_image, true, &tried);
		if (dir == NULL) {
			*err = xasprintf("%s.image: image \"%s\" not found as a directory in the engine's image "
					 "directory (tried %s); use image: host to take kernelPath/initrdPath as host "
					 "paths",
					 p, m->kernel_image, tried);
			free(tried);
			return -1;
		}
		free(tried);
	}
	int rc = kernel_file(env, dir, m->kernel, "kernelPath", kernel, err);
	if (rc == 0 && m->initrd && (rc = kernel_file(env, dir, m->initrd, "initrdPath", initrd, err)) < 0) {
		free(*kernel);
		*kernel = NULL;
	}
	free(dir);
	return rc;
}

/* A file of the engine's own directory dir (image or volume): its resolved path, which must stay inside dir or
 * an allowed root (a symbolic link may not lead out). */
static char *own_file(const char *path, const char *dir, const struct domxml_env *env)
{
	char *r = realpath(path, NULL);
	if (r && (domxml_inside(r, dir) || in_roots(r, env->host_roots) ||
		  (dir == env->image_dir && env->image_cache && domxml_inside(r, env->image_cache))))
		return r;
	free(r);
	return NULL;
}

/* hostDisk: the resolved path and the allowed root it lies in, or -1 with *err. */
static int host_disk(const struct manifest *m, const struct domxml_env *env, int vi, char **path, const char **root,
		     char **err)
{
	const struct mf_volume *v = &m->vols[vi];
	*path = NULL;
	*root = allowed_root(v->path, env->host_roots, v->create, path);
	if (*root)
		return 0;
	if (written_in_roots(v->path, env->host_roots)) {
		char *r = resolve(v->path, v->create);
		*err = r ? xasprintf("%s.volumes[%d].hostDisk.path: Forbidden: \"%s\" resolves to %s, outside the "
				     "directories the host's owner allows (a symbolic link may not lead out)",
				     TMPL, vi, v->path, r)
			 : xasprintf("%s.volumes[%d].hostDisk.path: %s: %s", TMPL, vi, v->path,
				     v->create ? "its directory does not exist" : "no such file");
		free(r);
		return -1;
	}
	*err = xasprintf("%s.volumes[%d].hostDisk.path: Forbidden: host path \"%s\" is not inside a directory the "
			 "host's owner allows for host disks; " OPT_IN,
			 TMPL, vi, v->path);
	return -1;
}

/* A persistentVolumeClaim's file, <volume_dir>/<ns>/<claim>.qcow2 or .img (owned); *outside when it exists but
 * resolves outside the volume directory. */
static char *pvc_file(const struct manifest *m, const struct domxml_env *env, const struct mf_volume *v,
		      bool *outside)
{
	*outside = false;
	char *q = xasprintf("%s/%s/%s.qcow2", env->volume_dir, m->ns, v->claim);
	if (!is_file(q)) {
		free(q);
		q = xasprintf("%s/%s/%s.img", env->volume_dir, m->ns, v->claim);
	}
	if (!is_file(q))
		return q; /* missing: the start fails with ErrorPvcNotFound */
	char *r = own_file(q, env->volume_dir, env);
	free(q);
	*outside = r == NULL;
	return r;
}

int domxml_resolve(const struct manifest *m, const struct domxml_env *env, char **err)
{
	char *k, *i;
	if (kernel_paths(m, env, &k, &i, err) < 0)
		return -1;
	free(k);
	free(i);
	for (int n = 0; n < m->nvols; n++) {
		const struct mf_volume *v = &m->vols[n];
		if (v->type == MF_VOL_HOSTDISK) {
			char *path;
			const char *root;
			if (host_disk(m, env, n, &path, &root, err) < 0)
				return -1;
			free(path);
		} else if (v->type == MF_VOL_PVC) {
			bool outside;
			char *f = pvc_file(m, env, v, &outside);
			free(f);
			if (outside) {
				*err = xasprintf("%s.volumes[%d].persistentVolumeClaim.claimName: Forbidden: the file of "
						 "claim \"%s\" resolves outside the engine's volume directory %s",
						 TMPL, n, v->claim, env->volume_dir);
				return -1;
			}
		}
		if (v->type != MF_VOL_CONTAINER)
			continue;
		char *tried = NULL;
		char *f = find_image(env->image_dir, v->image, false, &tried);
		if (f == NULL) {
			*err = xasprintf("%s.volumes[%d].containerDisk.image: image \"%s\" not found in the engine's "
					 "image directory (tried %s)",
					 TMPL, n, v->image, tried);
			free(tried);
			return -1;
		}
		free(tried);
		char *r = own_file(f, env->image_dir, env);
		if (r == NULL) {
			*err = xasprintf("%s.volumes[%d].containerDisk.image: Forbidden: %s resolves outside the engine's "
					 "image directory",
					 TMPL, n, f);
			free(f);
			return -1;
		}
		free(r);
		free(f);
	}
	for (int n = 0; n < m->nifaces; n++)
		if (m->ifaces[n].bridge && m->ifaces[n].host_bridge == NULL && env->bridge == NULL) {
			*err = xasprintf("%s.domain.devices.interfaces[%d].bridge: a bridge on the pod network needs a "
					 "host bridge: set engine.bridge in the config file or $KVCON_ENGINE_BRIDGE",
					 TMPL, n);
			return -1;
		}
	return 0;
}

static struct domxml_file *add_file(struct domxml_plan *p, enum domxml_file_kind kind, char *path)
{
	p->files = xreallocarray(p->files, (size_t)p->nfiles + 1, sizeof *p->files);
	struct domxml_file *f = &p->files[p->nfiles++];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->path = path;
	return f;
}

static const char *fmt_of(const char *path)
{
	size_t n = strlen(path);
	return n > 6 && strcmp(path + n - 6, ".qcow2") == 0 ? "qcow2" : "raw";
}

/* ---- the XML writer: libxml2 escapes every attribute and text node; a value that is not plain text (control
 * characters, broken UTF-8, which XML 1.0 cannot carry) fails the whole build instead of reaching libvirt ---- */

struct xw {
	xmlBufferPtr buf;
	xmlTextWriterPtr w;
	bool bad;
};

static void xw_start(struct xw *x, const char *el)
{
	if (xmlTextWriterStartElement(x->w, BAD_CAST el) < 0)
		x->bad = true;
}

static void xw_end(struct xw *x)
{
	if (xmlTextWriterEndElement(x->w) < 0)
		x->bad = true;
}

static void xw_attr(struct xw *x, const char *name, const char *val)
{
	if (val == NULL || !manifest_plain_text(val) || xmlTextWriterWriteAttribute(x->w, BAD_CAST name, BAD_CAST val) < 0)
		x->bad = true;
}

__attribute__((format(printf, 3, 4))) static void xw_attrf(struct xw *x, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	xw_attr(x, name, s);
	free(s);
}

/* <el>text</el> */
static void xw_text(struct xw *x, const char *el, const char *text)
{
	if (text == NULL || !manifest_plain_text(text) ||
	    xmlTextWriterWriteElement(x->w, BAD_CAST el, BAD_CAST text) < 0)
		x->bad = true;
}

/* <el a='v' .../>: NULL-terminated name, value pairs */
static void xw_empty(struct xw *x, const char *el, ...)
{
	xw_start(x, el);
	va_list ap;
	va_start(ap, el);
	for (const char *n; (n = va_arg(ap, const char *));)
		xw_attr(x, n, va_arg(ap, const char *));
	va_end(ap);
	xw_end(x);
}

/* Target device names: vda.. for virtio, sda.. for sata/scsi/usb. */
static void target_name(char *out, size_t len, bool virtio, int n)
{
	if (n < 26)
		snprintf(out, len, "%s%c", virtio ? "vd" : "sd", 'a' + n);
	else
		snprintf(out, len, "%s%c%c", virtio ? "vd" : "sd", 'a' + n / 26 - 1, 'a' + n % 26);
}

static int disk_xml(struct xw *x, struct domxml_plan *p, const struct manifest *m, const struct domxml_env *env,
		    const struct mf_disk *d, int *nvd, int *nsd, char **err)
{
	const struct mf_volume *v = volume_of(m, d->name);
	int vi = vol_index(m, v);
	char *src = NULL;
	const char *fmt = "raw";
	bool ro = d->readonly;
	switch (v->type) {
	case MF_VOL_HOSTDISK: {
		const char *root;
		if (host_disk(m, env, vi, &src, &root, err) < 0)
			return -1;
		struct domxml_file *f = add_file(p, v->create ? DF_HOSTDISK : DF_NEEDED, xstrdup(src));
		f->size = v->capacity;
		f->root = xstrdup(root);
		f->what = xasprintf("%s.volumes[%d].hostDisk.path", TMPL, vi);
		fmt = fmt_of(src);
		break;
	}
	case MF_VOL_PVC: {
		bool outside;
		src = pvc_file(m, env, v, &outside);
		if (outside) {
			*err = xasprintf("%s.volumes[%d].persistentVolumeClaim.claimName: Forbidden: the file of claim "
					 "\"%s\" resolves outside the engine's volume directory %s",
					 TMPL, vi, v->claim, env->volume_dir);
			return -1;
		}
		struct domxml_file *f = add_file(p, DF_NEEDED, xstrdup(src));
		f->root = xstrdup(env->volume_dir);
		for (size_t r = 0; env->host_roots && env->host_roots[r]; r++)
			if (!domxml_inside(src, env->volume_dir) && domxml_inside(src, env->host_roots[r])) {
				free(f->root); /* a claim's file linked into an allowed directory stays allowed at start */
				f->root = xstrdup(env->host_roots[r]);
				break;
			}
		f->what = xasprintf("%s.volumes[%d].persistentVolumeClaim.claimName: persistent volume claim \"%s\"",
				    TMPL, vi, v->claim);
		fmt = fmt_of(src);
		ro |= v->readonly;
		break;
	}
	case MF_VOL_EMPTY: {
		src = xasprintf("%s/empty-%s.img", env->run_dir, v->name);
		add_file(p, DF_EMPTY, xstrdup(src))->size = v->capacity;
		break;
	}
	case MF_VOL_CONTAINER: {
		char *found = find_image(env->image_dir, v->image, false, NULL);
		char *img = found ? own_file(found, env->image_dir, env) : NULL;
		if (img == NULL) {
			*err = xasprintf("%s.volumes[%d].containerDisk.image: image \"%s\" not found in the engine's "
					 "image directory %s",
					 TMPL, vi, v->image, env->image_dir);
			free(found);
			return -1;
		}
		free(found);
		/* containerDisks are ephemeral: writes go to a per-execution overlay */
		src = xasprintf("%s/overlay-%s.qcow2", env->run_dir, v->name);
		struct domxml_file *f = add_file(p, DF_OVERLAY, xstrdup(src));
		f->backing_fmt = fmt_of(img);
		f->backing = img;
		fmt = "qcow2";
		break;
	}
	case MF_VOL_CLOUDINIT: {
		src = xasprintf("%s/cloudinit-%s.iso", env->run_dir, v->name);
		struct domxml_file *f = add_file(p, DF_SEED, xstrdup(src));
		f->user_data = xstrdup(v->run_user_data ? v->run_user_data : v->user_data);
		f->network_data = xstrdup0(v->run_network_data ? v->run_network_data : v->network_data);
		f->config_drive = v->config_drive;
		if (v->config_drive) {
			/* openstack/latest/meta_data.json, as KubeVirt writes it */
			json_object *md = json_object_new_object();
			char *id = xasprintf("%s.%s", m->name, m->ns);
			json_object_object_add(md, "instance_id", json_object_new_string(id));
			json_object_object_add(md, "local_hostname",
					       json_object_new_string(m->hostname ? m->hostname : m->name));
			json_object_object_add(md, "uuid", json_object_new_string(env->vmi_uid ? env->vmi_uid : id));
			f->meta_data = xstrdup(json_object_to_json_string_ext(md, JSON_C_TO_STRING_PRETTY));
			json_object_put(md);
			free(id);
		} else
			f->meta_data = xasprintf("instance-id: %s.%s\nlocal-hostname: %s\n", m->name, m->ns,
						 m->hostname ? m->hostname : m->name);
		break;
	}
	case MF_VOL_SECRET:
	case MF_VOL_CONFIGMAP: {
		/* KubeVirt's config disks: an ISO of one file per key, read-only */
		src = xasprintf("%s/%s-%s.iso", env->run_dir, v->type == MF_VOL_SECRET ? "secret" : "configmap", v->name);
		struct domxml_file *f = add_file(p, DF_FILES, xstrdup(src));
		f->volid = xstrdup(v->label ? v->label : "cfgdata");
		size_t n = v->files ? v->files->n : 0;
		f->names = xcalloc(n + 1, sizeof *f->names);
		f->datas = xcalloc(n + 1, sizeof *f->datas);
		f->lens = xcalloc(n + 1, sizeof *f->lens);
		for (size_t k = 0; k < n; k++) {
			f->names[k] = xstrdup(v->files->kv[k].key);
			f->datas[k] = xmalloc(v->files->kv[k].len + 1);
			memcpy(f->datas[k], v->files->kv[k].val, v->files->kv[k].len + 1);
			f->lens[k] = v->files->kv[k].len;
		}
		f->nitems = (int)n;
		fmt = "raw";
		ro = true;
		break;
	}
	}
	bool virtio = d->bus == MF_BUS_VIRTIO;
	char dev[8];
	target_name(dev, sizeof dev, virtio, virtio ? (*nvd)++ : (*nsd)++);
	xw_start(x, "disk");
	xw_attr(x, "type", "file");
	xw_attr(x, "device", d->cdrom ? "cdrom" : "disk");
	xw_start(x, "driver");
	xw_attr(x, "name", "qemu");
	xw_attr(x, "type", fmt);
	if (d->cache)
		xw_attr(x, "cache", d->cache);
	xw_end(x);
	xw_empty(x, "source", "file", src, NULL);
	xw_empty(x, "target", "dev", dev, "bus", mf_bus_name(d->bus), NULL);
	if (d->boot_order) {
		xw_start(x, "boot");
		xw_attrf(x, "order", "%d", d->boot_order);
		xw_end(x);
	}
	if (ro)
		xw_empty(x, "readonly", NULL);
	if (d->serial)
		xw_text(x, "serial", d->serial);
	xw_start(x, "alias");
	xw_attrf(x, "name", "ua-%s", d->name);
	xw_end(x);
	xw_end(x);
	free(src);
	return 0;
}

/* The directory of the VNC and agent sockets: the execution's own directory when a socket path there fits in
 * sun_path, else a short private one (<base>/<vmi uid>, base 0700 and owned by us; never TCP). */
static char *sock_dir(const char *run_dir, const char *id, char **base)
{
	*base = NULL;
	if (strlen(run_dir) + sizeof "/vnc.sock" <= SOCK_PATH_MAX)
		return xstrdup(run_dir);
	const char *rt = getenv("XDG_RUNTIME_DIR");
	if (geteuid() == 0)
		*base = xstrdup("/run/kvcon-0");
	else if (rt && rt[0] == '/' && strlen(rt) + sizeof "/kvcon/" + strlen(id) + sizeof "/vnc.sock" <= SOCK_PATH_MAX)
		*base = xasprintf("%s/kvcon", rt);
	else
		*base = xasprintf("/tmp/kvcon-%u", (unsigned)geteuid());
	return xasprintf("%s/%s", *base, id);
}

char *domxml_sock_dir_of(const char *run_dir, const char *vmi_uid)
{
	size_t n = vmi_uid ? strlen(vmi_uid) : 0;
	if (run_dir == NULL || n != 36 || strspn(vmi_uid, "0123456789abcdef-") != n)
		return NULL;
	char *base = NULL, *d = sock_dir(run_dir, vmi_uid, &base);
	if (base == NULL) {
		free(d);
		return NULL;
	}
	free(base);
	return d;
}

/* The interface's forwarded ports, from 127.0.0.1 only: the host ports the engine chose, in its ports' order. */
static struct domxml_fwd *fwds_of(const struct mf_iface *f, const struct domxml_env *env)
{
	struct domxml_fwd *a = xcalloc((size_t)f->nports, sizeof *a);
	for (int i = 0; i < f->nports; i++)
		a[i] = (struct domxml_fwd){ .udp = strcmp(f->ports[i].proto, "UDP") == 0,
					    .host_port = env->host_ports[i],
					    .guest_port = f->ports[i].port };
	return a;
}

/* libvirt names the user-mode netdev of the interface whose alias is ua-NAME "hostua-NAME". */
char *domxml_hostfwd_cmd(const struct domxml_plan *p, int i)
{
	const struct domxml_fwd *f = &p->fwds[i];
	return xasprintf("hostfwd_add hostua-%s %s:127.0.0.1:%d-:%d", p->pod_iface, f->udp ? "udp" : "tcp",
			 f->host_port, f->guest_port);
}

struct domxml_plan *domxml_build(const struct manifest *m, const struct domxml_env *env, char **err)
{
	struct domxml_plan *p = xcalloc(1, sizeof *p);
	struct xw xb = { .buf = xmlBufferCreate() }, *x = &xb;
	char *kernel = NULL, *initrd = NULL;
	*err = NULL;
	if (xb.buf == NULL || (xb.w = xmlNewTextWriterMemory(xb.buf, 0)) == NULL) {
		*err = xstrdup("domain XML: cannot create the XML writer");
		goto fail;
	}
	xmlTextWriterSetIndent(x->w, 1);
	xmlTextWriterSetIndentString(x->w, BAD_CAST "  ");
	if (domxml_resolve(m, env, err) < 0 || kernel_paths(m, env, &kernel, &initrd, err) < 0)
		goto fail;

	int vcpus = m->sockets * m->cores * m->threads;
	xw_start(x, "domain");
	xw_attr(x, "type", env->domain_type);
	xw_text(x, "name", env->dom_name);
	xw_text(x, "uuid", env->vm_uid);
	char *title = xasprintf("%s/%s", m->ns, m->name);
	xw_text(x, "title", title);
	free(title);
	xw_start(x, "metadata");
	if (xmlTextWriterStartElementNS(x->w, BAD_CAST "kvcon", BAD_CAST "execution", BAD_CAST DOMXML_META_URI) < 0)
		x->bad = true;
	xw_attr(x, "vm", env->vm_uid);
	xw_attr(x, "vmi", env->vmi_uid);
	xw_attr(x, "launcher", env->launcher_uid);
	xw_attrf(x, "generation", "%llu", (unsigned long long)env->generation);
	xw_end(x);
	xw_end(x);
	xw_start(x, "memory");
	xw_attr(x, "unit", "KiB");
	char num[32];
	snprintf(num, sizeof num, "%llu", (unsigned long long)(m->memory / 1024));
	if (xmlTextWriterWriteString(x->w, BAD_CAST num) < 0)
		x->bad = true;
	xw_end(x);
	xw_start(x, "vcpu");
	xw_attr(x, "placement", "static");
	snprintf(num, sizeof num, "%d", vcpus);
	if (xmlTextWriterWriteString(x->w, BAD_CAST num) < 0)
		x->bad = true;
	xw_end(x);
	xw_start(x, "cpu");
	if (m->cpu_model && strcmp(env->domain_type, "kvm") == 0 &&
	    (strcmp(m->cpu_model, "host-passthrough") == 0 || strcmp(m->cpu_model, "host-model") == 0))
		xw_attr(x, "mode", m->cpu_model);
	else if (m->cpu_model && strcmp(m->cpu_model, "host-passthrough") && strcmp(m->cpu_model, "host-model")) {
		xw_attr(x, "mode", "custom");
		xw_attr(x, "match", "exact");
		xw_start(x, "model");
		xw_attr(x, "fallback", "allow");
		if (!manifest_plain_text(m->cpu_model) || xmlTextWriterWriteString(x->w, BAD_CAST m->cpu_model) < 0)
			x->bad = true;
		xw_end(x);
	} /* else TCG: host-model/passthrough mean nothing; QEMU's default model */
	xw_start(x, "topology");
	xw_attrf(x, "sockets", "%d", m->sockets);
	xw_attr(x, "dies", "1");
	xw_attrf(x, "cores", "%d", m->cores);
	xw_attrf(x, "threads", "%d", m->threads);
	xw_end(x);
	xw_end(x); /* cpu */
	xw_start(x, "os");
	if (m->efi)
		xw_attr(x, "firmware", "efi");
	xw_start(x, "type");
	xw_attr(x, "arch", "x86_64");
	xw_attr(x, "machine", m->machine);
	if (xmlTextWriterWriteString(x->w, BAD_CAST "hvm") < 0)
		x->bad = true;
	xw_end(x);
	if (m->efi) {
		xw_start(x, "firmware");
		xw_empty(x, "feature", "enabled", m->secure_boot ? "yes" : "no", "name", "secure-boot", NULL);
		xw_end(x);
	}
	if (kernel) {
		xw_text(x, "kernel", kernel);
		if (initrd)
			xw_text(x, "initrd", initrd);
		if (m->kernel_args)
			xw_text(x, "cmdline", m->kernel_args);
	}
	bool any_boot_order = false;
	for (int i = 0; i < m->ndisks; i++)
		any_boot_order |= m->disks[i].boot_order != 0;
	if (!kernel && !any_boot_order)
		xw_empty(x, "boot", "dev", "hd", NULL);
	xw_end(x); /* os */
	xw_start(x, "features");
	xw_empty(x, "acpi", NULL);
	xw_empty(x, "apic", NULL);
	if (m->efi && m->secure_boot)
		xw_empty(x, "smm", "state", "on", NULL);
	xw_end(x);
	xw_empty(x, "clock", "offset", "utc", NULL);
	xw_text(x, "on_poweroff", "destroy");
	xw_text(x, "on_reboot", "restart");
	xw_text(x, "on_crash", "destroy");
	xw_start(x, "devices");

	bool scsi = false;
	int nvd = 0, nsd = 0;
	for (int i = 0; i < m->ndisks; i++) {
		scsi |= m->disks[i].bus == MF_BUS_SCSI;
		if (disk_xml(x, p, m, env, &m->disks[i], &nvd, &nsd, err) < 0)
			goto fail;
	}
	if (scsi)
		xw_empty(x, "controller", "type", "scsi", "model", "virtio-scsi", NULL);
	bool pod_seen = false;
	for (int i = 0; i < m->nifaces; i++) {
		const struct mf_iface *f = &m->ifaces[i];
		xw_start(x, "interface");
		if (f->bridge) {
			xw_attr(x, "type", "bridge");
			xw_empty(x, "source", "bridge", f->host_bridge ? f->host_bridge : env->bridge, NULL);
		} else {
			xw_attr(x, "type", "user");
			xw_empty(x, "ip", "family", "ipv4", "address", DOMXML_POD_NET, "prefix", DOMXML_POD_PREFIX, NULL);
			/* the engine chose host ports for the first masquerade interface only (ereconcile.c pod_net) */
			bool first = !pod_seen;
			pod_seen = true;
			if (first && env->host_ports && f->nports) {
				/* the name reaches a monitor command: a DNS label only (manifest.c checks it too) */
				const char *ok = "abcdefghijklmnopqrstuvwxyz0123456789-";
				if (f->name[0] == '\0' || strspn(f->name, ok) != strlen(f->name)) {
					*err = xasprintf("%s.domain.devices.interfaces[%d].name: not a DNS label", TMPL, i);
					goto fail;
				}
				p->pod_iface = xstrdup(f->name);
				p->fwds = fwds_of(f, env);
				p->nfwds = f->nports;
			}
		}
		if (f->mac)
			xw_empty(x, "mac", "address", f->mac, NULL);
		xw_empty(x, "model", "type", f->model ? f->model : "virtio", NULL);
		xw_start(x, "alias");
		xw_attrf(x, "name", "ua-%s", f->name);
		xw_end(x);
		xw_end(x);
	}
	p->serial_log = xasprintf("%s/serial.log", env->run_dir);
	p->run_dir = xstrdup(env->run_dir);
	if (m->serial_console) {
		xw_start(x, "serial");
		xw_attr(x, "type", "pty");
		xw_empty(x, "log", "file", p->serial_log, "append", "on", NULL);
		xw_empty(x, "target", "port", "0", NULL);
		xw_end(x);
		xw_start(x, "console");
		xw_attr(x, "type", "pty");
		xw_empty(x, "target", "type", "serial", "port", "0", NULL);
		xw_end(x);
	}
	/* The agent's and the display's sockets get explicit paths in a private directory: libvirt's own choice sits
	 * deep under the embedded root and exceeds the 107 bytes of a unix socket path as soon as $HOME is longer
	 * than /root; and a display is never put on TCP, where any local user could reach it. */
	p->sock_dir = sock_dir(env->run_dir, env->vmi_uid ? env->vmi_uid : env->dom_name, &p->sock_base);
	char *ga = xasprintf("%s/ga.sock", p->sock_dir);
	xw_start(x, "channel");
	xw_attr(x, "type", "unix");
	xw_empty(x, "source", "mode", "bind", "path", ga, NULL);
	xw_empty(x, "target", "type", "virtio", "name", "org.qemu.guest_agent.0", NULL);
	xw_end(x);
	free(ga);
	if (m->graphics) {
		char *vnc = xasprintf("%s/vnc.sock", p->sock_dir);
		xw_empty(x, "graphics", "type", "vnc", "socket", vnc, NULL);
		free(vnc);
		xw_start(x, "video");
		xw_empty(x, "model", "type", "vga", NULL);
		xw_end(x);
	}
	if (m->rng) {
		xw_start(x, "rng");
		xw_attr(x, "model", "virtio");
		xw_start(x, "backend");
		xw_attr(x, "model", "random");
		if (xmlTextWriterWriteString(x->w, BAD_CAST "/dev/urandom") < 0)
			x->bad = true;
		xw_end(x);
		xw_end(x);
	}
	xw_empty(x, "memballoon", "model", m->balloon ? "virtio" : "none", NULL);
	xw_end(x); /* devices */
	xw_end(x); /* domain */
	if (xmlTextWriterFlush(x->w) < 0)
		x->bad = true;
	if (x->bad) {
		*err = xstrdup("domain XML: a value is not UTF-8 text without control characters");
		goto fail;
	}
	p->xml = xstrdup((const char *)xmlBufferContent(xb.buf));
	xmlFreeTextWriter(xb.w);
	xmlBufferFree(xb.buf);
	free(kernel);
	free(initrd);
	return p;
fail:
	if (xb.w)
		xmlFreeTextWriter(xb.w);
	if (xb.buf)
		xmlBufferFree(xb.buf);
	free(kernel);
	free(initrd);
	domxml_plan_free(p);
	return NULL;
}

void domxml_plan_free(struct domxml_plan *p)
{
	if (p == NULL)
		return;
	for (int i = 0; i < p->nfiles; i++) {
		struct domxml_file *f = &p->files[i];
		free(f->path);
		free(f->backing);
		free(f->user_data);
		free(f->meta_data);
		free(f->network_data);
		free(f->what);
		free(f->root);
		for (int k = 0; k < f->nitems; k++) {
			free(f->names[k]);
			memset(f->datas[k], 0, f->lens[k]);
			free(f->datas[k]);
		}
		free(f->names);
		free(f->datas);
		free(f->lens);
		free(f->volid);
	}
	free(p->files);
	free(p->xml);
	free(p->serial_log);
	free(p->run_dir);
	free(p->sock_dir);
	free(p->sock_base);
	free(p->fwds);
	free(p->pod_iface);
	free(p);
}

/* A directory of ours for an execution's files or sockets: created 0700 when missing; refused when it is a
 * symbolic link, someone else's, or open to group or others (nothing we create in it could then be trusted). */
static int private_dir(const char *path, char **err)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	const char *why = NULL;
	if (lstat(path, &st) < 0)
		why = strerror(errno);
	else if (!S_ISDIR(st.st_mode))
		why = "not a directory (a symbolic link?)";
	else if (st.st_uid != geteuid())
		why = "owned by another user";
	else if (!embed_dir_private(path, st.st_mode)) /* a search-only ACL entry for QEMU's account is not */
		why = "open to group or others";
	if (why) {
		*err = xasprintf("%s: refused as the engine's private directory: %s", path, why);
		return -1;
	}
	return 0;
}

/* The file's name inside the plan's run directory (NULL when path is not directly inside it). */
static const char *run_name(const struct domxml_plan *p, const char *path)
{
	size_t n = strlen(p->run_dir);
	const char *base = path + n + 1;
	if (strncmp(path, p->run_dir, n) != 0 || path[n] != '/' || *base == '\0' || strchr(base, '/') ||
	    strcmp(base, "..") == 0 || strcmp(base, ".") == 0)
		return NULL;
	return base;
}

/* Prepares name in the run directory for a tool that writes it by path (qemu-img, genisoimage): nothing may
 * stand there but a regular file of ours, which is removed. */
static int run_slot(int dfd, const char *path, const char *name, char **err)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			*err = xasprintf("%s: refused: not a regular file of the engine's", path);
			return -1;
		}
		unlinkat(dfd, name, 0);
	}
	return 0;
}

/* emptyDisk: a sparse file of size in the run directory, never through a symbolic link. */
static int empty_file(int dfd, const char *path, const char *name, uint64_t size, char **err)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* The domain XML kvcon defines, kept in the run directory beside the serial log (`kvcon bundle` collects it). */
static int xml_copy(int dfd, const struct domxml_plan *p, char **err)
{
	int fd = openat(dfd, "domain.xml", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	size_t len = strlen(p->xml), off = 0;
	while (fd >= 0 && off < len) {
		ssize_t w = write(fd, p->xml + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	if (fd < 0 || off < len) {
		*err = xasprintf("%s/domain.xml: %s", p->run_dir, strerror(errno ? errno : EIO));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* hostDisk DiskOrCreate: a sparse file created only when missing, only below its allowed root (checked again:
 * the directory may have changed since apply), never through a symbolic link. */
static int host_file(const struct domxml_file *f, char **err)
{
	char *r = realpath(f->path, NULL);
	if (r) {
		bool ok = f->root && domxml_inside(r, f->root) && is_file(r);
		if (!ok)
			*err = xasprintf("%s: %s: refused: resolves to %s, not a file below %s", f->what, f->path, r,
					 f->root ? f->root : "an allowed directory");
		free(r);
		return ok ? 0 : -1;
	}
	const char *slash = strrchr(f->path, '/');
	char *dir = slash == f->path ? xstrdup("/") : xstrndup(f->path, (size_t)(slash - f->path));
	char *rd = realpath(dir, NULL);
	int rc = -1, dfd = -1;
	if (rd == NULL || f->root == NULL || !domxml_inside(rd, f->root) || strcmp(slash + 1, "..") == 0) {
		*err = xasprintf("%s: %s: refused: its directory does not resolve below %s", f->what, f->path,
				 f->root ? f->root : "an allowed directory");
		goto out;
	}
	dfd = open(rd, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = dfd < 0 ? -1 : openat(dfd, slash + 1, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)f->size) < 0) {
		*err = xasprintf("%s: %s: %s", f->what, f->path, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	free(rd);
	free(dir);
	return rc;
}

/* An ISO 9660 image (Joliet, Rock Ridge) of dir at path with volume id volid: genisoimage, else xorriso in its
 * genisoimage mode. 0, or -1 with *err naming what (caller frees). */
static int iso_of_dir(const char *path, const char *volid, const char *dir, const char *what, char **err)
{
	char *gen[] = { "genisoimage", "-quiet", "-output", (char *)path, "-volid", (char *)volid, "-joliet", "-rock",
			(char *)dir, NULL };
	char *xo[] = { "xorriso", "-as", "genisoimage", "-quiet", "-output", (char *)path, "-volid", (char *)volid,
		       "-joliet", "-rock", (char *)dir, NULL };
	char *e1 = NULL, *e2 = NULL;
	int rc = 0;
	if (util_run_quiet(gen, NULL, &e1) != 0 && util_run_quiet(xo, NULL, &e2) != 0) {
		*err = xasprintf("%s: %s; %s (install genisoimage or xorriso)", what, e1, e2);
		rc = -1;
	}
	free(e1);
	free(e2);
	return rc;
}

/* An OpenStack config drive as KubeVirt's cloudInitConfigDrive: an ISO 9660 volume labelled config-2 holding
 * openstack/latest/{user_data,meta_data.json,network_data.json}. */
static int config_drive_iso(const struct domxml_file *f, char **err)
{
	char *dir = xasprintf("%s.d", f->path), *latest = xasprintf("%s/openstack/latest", dir);
	char *ud = util_path_join(latest, "user_data"), *md = util_path_join(latest, "meta_data.json"),
	     *nd = util_path_join(latest, "network_data.json");
	int rc = -1;
	char *rm[] = { "rm", "-rf", "--", dir, NULL }, *e0 = NULL;
	util_run_quiet(rm, NULL, &e0); /* a leftover of an interrupted start */
	free(e0);
	if (util_mkdir_p(latest, 0700) < 0 ||
	    util_write_file_atomic(ud, f->user_data, strlen(f->user_data), 0600) < 0 ||
	    util_write_file_atomic(md, f->meta_data, strlen(f->meta_data), 0600) < 0 ||
	    (f->network_data && util_write_file_atomic(nd, f->network_data, strlen(f->network_data), 0600) < 0)) {
		*err = xasprintf("%s: %s", dir, strerror(errno));
		goto out;
	}
	rc = iso_of_dir(f->path, "config-2", dir, "cloud-init config drive", err);
out:
	e0 = NULL;
	util_run_quiet(rm, NULL, &e0);
	free(e0);
	free(ud);
	free(md);
	free(nd);
	free(latest);
	free(dir);
	return rc;
}

static int seed_iso(const struct domxml_file *f, char **err)
{
	if (f->config_drive)
		return config_drive_iso(f, err);
	char *dir = xasprintf("%s.d", f->path);
	int rc = -1;
	util_mkdir_p(dir, 0700);
	char *ud = util_path_join(dir, "user-data"), *md = util_path_join(dir, "meta-data"),
	     *nd = util_path_join(dir, "network-config");
	if (util_write_file_atomic(ud, f->user_data, strlen(f->user_data), 0600) < 0 ||
	    util_write_file_atomic(md, f->meta_data, strlen(f->meta_data), 0600) < 0 ||
	    (f->network_data && util_write_file_atomic(nd, f->network_data, strlen(f->network_data), 0600) < 0)) {
		*err = xasprintf("%s: %s", dir, strerror(errno));
		goto out;
	}
	char *gen[] = { "genisoimage", "-quiet", "-output", f->path, "-volid", "cidata", "-joliet", "-rock",
			ud, md, f->network_data ? nd : NULL, NULL };
	char *xo[] = { "xorriso", "-as", "genisoimage", "-quiet", "-output", f->path, "-volid", "cidata",
		       "-joliet", "-rock", ud, md, f->network_data ? nd : NULL, NULL };
	char *e1 = NULL, *e2 = NULL;
	if (util_run_quiet(gen, NULL, &e1) == 0 || util_run_quiet(xo, NULL, &e2) == 0)
		rc = 0;
	else
		*err = xasprintf("cloud-init seed image: %s; %s (install genisoimage or xorriso)", e1, e2);
	free(e1);
	free(e2);
out:
	unlink(ud);
	unlink(md);
	unlink(nd);
	rmdir(dir);
	free(ud);
	free(md);
	free(nd);
	free(dir);
	return rc;
}

/* A Secret's or ConfigMap's disk: DIR.d/KEY for each key, then an ISO of the directory; the files go. */
static int files_iso(const struct domxml_file *f, char **err)
{
	char *dir = xasprintf("%s.d", f->path);
	char *rm[] = { "rm", "-rf", "--", dir, NULL }, *e0 = NULL;
	util_run_quiet(rm, NULL, &e0); /* a leftover of an interrupted start */
	free(e0);
	int rc = -1;
	if (util_mkdir_p(dir, 0700) < 0) {
		*err = xasprintf("%s: %s", dir, strerror(errno));
		goto out;
	}
	for (int i = 0; i < f->nitems; i++) {
		if (strchr(f->names[i], '/') || strcmp(f->names[i], ".") == 0 || strncmp(f->names[i], "..", 2) == 0) {
			*err = xasprintf("%s: refused: not a file name", f->names[i]);
			goto out;
		}
		char *fp = util_path_join(dir, f->names[i]);
		int w = util_write_file_atomic(fp, f->datas[i], f->lens[i], 0600);
		free(fp);
		if (w < 0) {
			*err = xasprintf("%s/%s: %s", dir, f->names[i], strerror(errno));
			goto out;
		}
	}
	rc = iso_of_dir(f->path, f->volid, dir, "config disk", err);
out:
	e0 = NULL;
	util_run_quiet(rm, NULL, &e0);
	free(e0);
	free(dir);
	return rc;
}

int domxml_prepare(const struct domxml_plan *p, char **err)
{
	if (p->run_dir && util_mkdir_p(p->run_dir, 0700) < 0) {
		*err = xasprintf("%s: %s", p->run_dir, strerror(errno));
		return -1;
	}
	if (p->run_dir && private_dir(p->run_dir, err) < 0)
		return -1;
	if (p->sock_base && (private_dir(p->sock_base, err) < 0 || private_dir(p->sock_dir, err) < 0))
		return -1;
	int dfd = p->run_dir ? open(p->run_dir, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	int rc = -1;
	for (int i = 0; i < p->nfiles; i++) {
		const struct domxml_file *f = &p->files[i];
		const char *name = NULL;
		if (f->kind == DF_EMPTY || f->kind == DF_OVERLAY || f->kind == DF_SEED || f->kind == DF_FILES) {
			name = dfd >= 0 ? run_name(p, f->path) : NULL;
			if (name == NULL) {
				*err = xasprintf("%s: refused: not a file of the execution's directory", f->path);
				goto out;
			}
		}
		switch (f->kind) {
		case DF_NEEDED: {
			char *r = realpath(f->path, NULL);
			bool ok = r && is_file(r) && (f->root == NULL || domxml_inside(r, f->root));
			if (!ok)
				*err = r ? xasprintf("%s: %s resolves to %s, not a file below %s", f->what, f->path, r,
						     f->root)
					 : xasprintf("%s: %s does not exist", f->what, f->path);
			free(r);
			if (!ok)
				goto out;
			break;
		}
		case DF_HOSTDISK:
			if (host_file(f, err) < 0)
				goto out;
			break;
		case DF_EMPTY:
			if (empty_file(dfd, f->path, name, f->size, err) < 0)
				goto out;
			break;
		case DF_OVERLAY: {
			if (run_slot(dfd, f->path, name, err) < 0)
				goto out;
			char *fmt = xstrdup(f->backing_fmt);
			char *argv[] = { "qemu-img", "create", "-q", "-f", "qcow2", "-F", fmt, "-b", f->backing, f->path,
					 NULL };
			int r = util_run_quiet(argv, NULL, err);
			free(fmt);
			if (r < 0)
				goto out;
			break;
		}
		case DF_SEED:
			if (run_slot(dfd, f->path, name, err) < 0 || seed_iso(f, err) < 0)
				goto out;
			break;
		case DF_FILES:
			if (run_slot(dfd, f->path, name, err) < 0 || files_iso(f, err) < 0)
				goto out;
			break;
		}
	}
	if (dfd >= 0 && p->xml && xml_copy(dfd, p, err) < 0)
		goto out;
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* ---- reading libvirt's domain XML back (migration's pre-flight), with libxml2 ---- */

static xmlDocPtr read_xml(const char *xml)
{
	return xml ? xmlReadMemory(xml, (int)strlen(xml), NULL, NULL,
				   XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)
		   : NULL;
}

static xmlXPathObjectPtr select_nodes(xmlDocPtr doc, const char *xpath)
{
	xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
	xmlXPathObjectPtr r = ctx ? xmlXPathEvalExpression(BAD_CAST xpath, ctx) : NULL;
	xmlXPathFreeContext(ctx);
	if (r && (r->type != XPATH_NODESET || r->nodesetval == NULL)) {
		xmlXPathFreeObject(r);
		r = NULL;
	}
	return r;
}

int domxml_needs(const char *xml, bool skip_disks, struct domxml_need **out)
{
	static const struct {
		const char *xpath, *what;
	} q[] = {
		{ "/domain/os/kernel", "kernel" },
		{ "/domain/os/initrd", "initrd" },
		{ "/domain/os/loader", "firmware" },
		{ "/domain/devices/disk[@device='cdrom']/source/@file", "cdrom image" },
		{ "/domain/devices/disk[not(@device='cdrom')]/source/@file", "disk image" },
	};
	*out = NULL;
	xmlDocPtr doc = read_xml(xml);
	if (doc == NULL)
		return -1;
	int n = 0;
	for (size_t k = 0; k < sizeof q / sizeof q[0]; k++) {
		if (skip_disks && k == 4)
			continue; /* libvirt copies them */
		xmlXPathObjectPtr r = select_nodes(doc, q[k].xpath);
		for (int i = 0; r && i < r->nodesetval->nodeNr; i++) {
			xmlChar *c = xmlNodeGetContent(r->nodesetval->nodeTab[i]);
			if (c && c[0]) {
				*out = xreallocarray(*out, (size_t)n + 1, sizeof **out);
				(*out)[n].path = xstrdup((const char *)c);
				(*out)[n++].what = q[k].what;
			}
			xmlFree(c);
		}
		xmlXPathFreeObject(r);
	}
	xmlFreeDoc(doc);
	return n;
}

char *domxml_attr(const char *xml, const char *xpath)
{
	xmlDocPtr doc = read_xml(xml);
	xmlXPathObjectPtr r = doc ? select_nodes(doc, xpath) : NULL;
	char *v = NULL;
	if (r && r->nodesetval->nodeNr > 0) {
		xmlChar *c = xmlNodeGetContent(r->nodesetval->nodeTab[0]);
		v = c ? xstrdup((const char *)c) : NULL;
		xmlFree(c);
	}
	xmlXPathFreeObject(r);
	xmlFreeDoc(doc);
	return v;
}

char *domxml_element(const char *xml, const char *xpath)
{
	xmlDocPtr doc = read_xml(xml);
	xmlXPathObjectPtr r = doc ? select_nodes(doc, xpath) : NULL;
	char *v = NULL;
	if (r && r->nodesetval->nodeNr > 0) {
		xmlBufferPtr b = xmlBufferCreate();
		if (b && xmlNodeDump(b, doc, r->nodesetval->nodeTab[0], 0, 0) >= 0)
			v = xstrdup((const char *)xmlBufferContent(b));
		xmlBufferFree(b);
	}
	xmlXPathFreeObject(r);
	xmlFreeDoc(doc);
	return v;
}

char *domxml_with_attr(const char *xml, const char *attr, const char *value)
{
	xmlDocPtr doc = read_xml(xml);
	xmlNodePtr root = doc ? xmlDocGetRootElement(doc) : NULL;
	char *v = NULL;
	if (root && manifest_plain_text(value) && xmlSetProp(root, BAD_CAST attr, BAD_CAST value)) {
		xmlBufferPtr b = xmlBufferCreate();
		if (b && xmlNodeDump(b, doc, root, 0, 0) >= 0)
			v = xstrdup((const char *)xmlBufferContent(b));
		xmlBufferFree(b);
	}
	xmlFreeDoc(doc);
	return v;
}

char *domxml_dir_pool(const char *name, const char *dir)
{
	struct xw xb = { .buf = xmlBufferCreate() }, *x = &xb;
	char *out = NULL;
	if (xb.buf == NULL || (xb.w = xmlNewTextWriterMemory(xb.buf, 0)) == NULL)
		goto out;
	xw_start(x, "pool");
	xw_attr(x, "type", "dir");
	xw_text(x, "name", name);
	xw_start(x, "target");
	xw_text(x, "path", dir);
	xw_end(x);
	xw_end(x);
	if (xmlTextWriterFlush(x->w) < 0)
		x->bad = true;
	xmlFreeTextWriter(xb.w);
	xb.w = NULL;
	if (!x->bad)
		out = xstrdup((const char *)xmlBufferContent(xb.buf));
out:
	if (xb.w)
		xmlFreeTextWriter(xb.w);
	xmlBufferFree(xb.buf);
	return out;
}
