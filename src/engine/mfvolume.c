/* A VirtualMachine manifest's disks, volumes and accessCredentials (see mfparse.h; manifest.c walks the rest). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/xmalloc.h"
#include "engine/manifest.h"
#include "engine/mfparse.h"

static bool b64_decode(const char *in, char **out)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct buf b;
	buf_init(&b);
	unsigned acc = 0;
	int bits = 0;
	for (const char *p = in; *p; p++) {
		if (*p == '=' || *p == '\n' || *p == '\r' || *p == ' ')
			continue;
		const char *c = strchr(tab, *p);
		if (c == NULL) {
			buf_free(&b);
			return false;
		}
		acc = (acc << 6) | (unsigned)(c - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf_add_char(&b, (char)((acc >> bits) & 0xff));
		}
	}
	*out = buf_steal(&b);
	return true;
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
	if (!mfp_want_map(v, t, path) || (t->type == YAML_MAPPING_NODE && !mfp_check_keys(v, t, path, rules)))
		return false;
	char *bus = NULL;
	if (!mfp_get_str(v, t, "bus", path, &bus) || !mfp_get_bool(v, t, "readonly", path, &d->readonly)) {
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
			char *p = mfp_sub(path, "bus");
			mfp_fail(v, p, "bus \"%s\" is not one of virtio, sata, scsi, usb", bus);
			free(p);
			free(bus);
			return false;
		}
		d->bus = buses[i].bus;
		free(bus);
	}
	return true;
}

bool mfp_parse_disk(struct vctx *v, yaml_node_t *n, const char *path, struct mf_disk *d)
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
	if (!mfp_check_keys(v, n, path, rules))
		return false;
	if (!mfp_get_str(v, n, "name", path, &d->name) || !mfp_get_str(v, n, "serial", path, &d->serial) ||
	    !mfp_get_int(v, n, "bootOrder", path, 1, 1000, &d->boot_order))
		return false;
	if (d->name == NULL)
		return mfp_fail(v, path, "name is required");
	if (!mfp_check_label(v, path, "name", d->name) ||
	    !mfp_check_charset(v, path, "serial", d->serial, "-_.+", 64,
			   "a disk serial must consist of letters, digits, '-', '_', '.' or '+'"))
		return false;
	yaml_node_t *disk = mfp_get(v, n, "disk"), *cd = mfp_get(v, n, "cdrom");
	char *p;
	bool ok = true;
	if (disk && cd)
		return mfp_fail(v, path, "disk and cdrom are mutually exclusive");
	if (cd) {
		d->cdrom = true;
		d->readonly = true;
		p = mfp_sub(path, "cdrom");
		ok = parse_target(v, cd, p, d);
	} else {
		p = mfp_sub(path, "disk");
		ok = disk ? parse_target(v, disk, p, d) : (d->bus = MF_BUS_VIRTIO, true);
	}
	free(p);
	char *cache = NULL;
	if (ok && mfp_get_str(v, n, "cache", path, &cache) && cache) {
		static const char *caches[] = { "none", "writethrough", "writeback" };
		for (size_t i = 0; i < 3; i++)
			if (strcmp(cache, caches[i]) == 0)
				d->cache = caches[i];
		if (d->cache == NULL) {
			p = mfp_sub(path, "cache");
			ok = mfp_fail(v, p, "cache \"%s\" is not one of none, writethrough, writeback", cache);
			free(p);
		}
	}
	free(cache);
	return ok && v->err == NULL;
}

bool mfp_parse_volume(struct vctx *v, yaml_node_t *n, const char *path, struct mf_volume *vol)
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
	if (!mfp_check_keys(v, n, path, rules) || !mfp_get_str(v, n, "name", path, &vol->name))
		return false;
	if (vol->name == NULL)
		return mfp_fail(v, path, "name is required");
	if (!mfp_check_label(v, path, "name", vol->name))
		return false;
	int kinds = 0;
	yaml_node_t *k;
	char *p = NULL;
	if ((k = mfp_get(v, n, "hostDisk"))) {
		static const struct key_rule r[] = { { "path", NULL }, { "type", NULL }, { "capacity", NULL },
			{ "shared", "shared host disks are not supported by the engine" }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_HOSTDISK;
		p = mfp_sub(path, "hostDisk");
		char *type = NULL;
		if (!mfp_want_map(v, k, p) || !mfp_check_keys(v, k, p, r) || !mfp_get_str(v, k, "path", p, &vol->path) ||
		    !mfp_get_str(v, k, "type", p, &type) || !mfp_get_qty(v, k, "capacity", p, &vol->capacity, NULL)) {
			free(type);
			goto out;
		}
		if (vol->path == NULL || vol->path[0] != '/')
			mfp_fail(v, p, "path must be an absolute host path");
		else if (!mfp_check_path(v, p, "path", vol->path))
			;
		else if (type == NULL || (strcmp(type, "Disk") && strcmp(type, "DiskOrCreate")))
			mfp_fail(v, p, "type must be Disk or DiskOrCreate");
		else if (strcmp(type, "DiskOrCreate") == 0) {
			vol->create = true;
			if (vol->capacity == 0)
				mfp_fail(v, p, "capacity is required with type DiskOrCreate");
		}
		free(type);
		free(p);
		p = NULL;
	}
	if ((k = mfp_get(v, n, "persistentVolumeClaim"))) {
		static const struct key_rule r[] = { { "claimName", NULL }, { "readOnly", NULL },
			{ "hotpluggable", "hotplug is not supported by the engine" }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_PVC;
		p = mfp_sub(path, "persistentVolumeClaim");
		if (!mfp_want_map(v, k, p) || !mfp_check_keys(v, k, p, r) || !mfp_get_str(v, k, "claimName", p, &vol->claim) ||
		    !mfp_get_bool(v, k, "readOnly", p, &vol->readonly))
			goto out;
		if (vol->claim == NULL)
			mfp_fail(v, p, "claimName is required");
		else
			mfp_check_subdomain(v, p, "claimName", vol->claim);
		free(p);
		p = NULL;
	}
	if ((k = mfp_get(v, n, "dataVolume"))) {
		/* the DataVolume's claim, of the same name (the engine service's storage: src/apiserver/storage.c) */
		static const struct key_rule r[] = { { "name", NULL },
			{ "hotpluggable", "hotplug is not supported by the engine" }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_PVC;
		vol->dv = true;
		p = mfp_sub(path, "dataVolume");
		if (!mfp_want_map(v, k, p) || !mfp_check_keys(v, k, p, r) || !mfp_get_str(v, k, "name", p, &vol->claim))
			goto out;
		if (vol->claim == NULL)
			mfp_fail(v, p, "name is required");
		else
			mfp_check_subdomain(v, p, "name", vol->claim);
		free(p);
		p = NULL;
	}
	if ((k = mfp_get(v, n, "emptyDisk"))) {
		static const struct key_rule r[] = { { "capacity", NULL }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_EMPTY;
		p = mfp_sub(path, "emptyDisk");
		if (!mfp_want_map(v, k, p) || !mfp_check_keys(v, k, p, r) ||
		    !mfp_get_qty(v, k, "capacity", p, &vol->capacity, NULL))
			goto out;
		if (vol->capacity == 0)
			mfp_fail(v, p, "capacity is required");
		free(p);
		p = NULL;
	}
	if ((k = mfp_get(v, n, "containerDisk"))) {
		static const struct key_rule r[] = { { "image", NULL }, { "imagePullPolicy", NULL },
			{ "imagePullSecret", "secrets need a cluster: the engine takes registry credentials from the "
					     "Docker/Podman auth file" },
			{ "path", "a path inside the image is not supported; the image file is the disk" },
			{ NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_CONTAINER;
		p = mfp_sub(path, "containerDisk");
		if (!mfp_want_map(v, k, p) || !mfp_check_keys(v, k, p, r) || !mfp_get_str(v, k, "image", p, &vol->image) ||
		    !mfp_get_str(v, k, "imagePullPolicy", p, &vol->pull_policy))
			goto out;
		if (vol->image == NULL || vol->image[0] == '\0')
			mfp_fail(v, p, "image is required");
		else {
			mfp_check_text(v, p, "image", vol->image);
			if (vol->pull_policy && strcmp(vol->pull_policy, "Always") && strcmp(vol->pull_policy, "Never") &&
			    strcmp(vol->pull_policy, "IfNotPresent"))
				mfp_fail(v, p, "imagePullPolicy \"%s\" is not one of Always, IfNotPresent, Never", vol->pull_policy);
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
		if ((k = mfp_get(v, n, key)) == NULL)
			continue;
		kinds++;
		vol->type = cm ? MF_VOL_CONFIGMAP : MF_VOL_SECRET;
		p = mfp_sub(path, key);
		if (!mfp_want_map(v, k, p) || !mfp_check_keys(v, k, p, r) || !mfp_get_str(v, k, nk, p, &vol->object) ||
		    !mfp_get_bool(v, k, "optional", p, &vol->optional) || !mfp_get_str(v, k, "volumeLabel", p, &vol->label))
			goto out;
		if (mfp_get(v, k, cm ? "secretName" : "name")) {
			char *pk = mfp_sub(p, cm ? "secretName" : "name");
			mfp_fail(v, pk, "unknown field");
			free(pk);
		} else if (vol->object == NULL)
			mfp_fail(v, p, "%s is required", nk);
		else if (mfp_check_subdomain(v, p, nk, vol->object) && vol->label)
			mfp_check_charset(v, p, "volumeLabel", vol->label, "-_", 32,
				      "a volume label must consist of letters, digits, '-' or '_'");
		free(p);
		p = NULL;
	}
	const char *ci = mfp_get(v, n, "cloudInitNoCloud") ? "cloudInitNoCloud" : "cloudInitConfigDrive";
	if ((k = mfp_get(v, n, ci))) {
		static const struct key_rule r[] = { { "userData", NULL }, { "userDataBase64", NULL },
			{ "networkData", NULL }, { "networkDataBase64", NULL },
			{ "secretRef", NULL }, { "networkDataSecretRef", NULL }, { NULL, NULL } };
		kinds++;
		vol->type = MF_VOL_CLOUDINIT;
		vol->config_drive = strcmp(ci, "cloudInitConfigDrive") == 0;
		p = mfp_sub(path, ci);
		if (mfp_get(v, n, "cloudInitNoCloud") && mfp_get(v, n, "cloudInitConfigDrive"))
			kinds++; /* both: refused below */
		char *ub = NULL, *nb = NULL;
		if (!mfp_want_map(v, k, p) || !mfp_check_keys(v, k, p, r) ||
		    !mfp_get_str(v, k, "userData", p, &vol->user_data) || !mfp_get_str(v, k, "userDataBase64", p, &ub) ||
		    !mfp_get_str(v, k, "networkData", p, &vol->network_data) ||
		    !mfp_get_str(v, k, "networkDataBase64", p, &nb)) {
			free(ub);
			free(nb);
			goto out;
		}
		const char *refs[] = { "secretRef", "networkDataSecretRef" };
		for (int ri = 0; ri < 2 && v->err == NULL; ri++) {
			yaml_node_t *ref = mfp_get(v, k, refs[ri]);
			static const struct key_rule rr[] = { { "name", NULL }, { NULL, NULL } };
			char *rp = mfp_sub(p, refs[ri]), **out = ri ? &vol->network_secret : &vol->user_secret;
			if (ref && mfp_want_map(v, ref, rp) && mfp_check_keys(v, ref, rp, rr) && mfp_get_str(v, ref, "name", rp, out)) {
				if (*out == NULL)
					mfp_fail(v, rp, "name is required");
				else
					mfp_check_subdomain(v, rp, "name", *out);
			}
			free(rp);
		}
		if (v->err == NULL && ((vol->user_secret && (vol->user_data || ub)) || (vol->network_secret && (vol->network_data || nb))))
			mfp_fail(v, p, "a secretRef and inline data of the same kind are exclusive");
		if (ub) {
			free(vol->user_data);
			vol->user_data = NULL;
			if (!b64_decode(ub, &vol->user_data))
				mfp_fail(v, p, "userDataBase64 is not valid base64");
		}
		if (nb) {
			free(vol->network_data);
			vol->network_data = NULL;
			if (!b64_decode(nb, &vol->network_data))
				mfp_fail(v, p, "networkDataBase64 is not valid base64");
		}
		if (v->err == NULL && vol->user_data == NULL && vol->user_secret == NULL)
			mfp_fail(v, p, "userData, userDataBase64 or secretRef is required");
		free(ub);
		free(nb);
		free(p);
		p = NULL;
	}
	if (v->err == NULL && kinds != 1)
		mfp_fail(v, path, kinds ? "exactly one volume source is allowed" : "a volume source is required");
out:
	free(p);
	return v->err == NULL;
}

/* One accessCredentials entry, as KubeVirt validates it: exactly one of sshPublicKey and userPassword, a Secret,
 * exactly one propagation method (userPassword: qemuGuestAgent only), qemuGuestAgent's users for a key. */
bool mfp_parse_cred(struct vctx *v, yaml_node_t *n, const char *path, struct mf_cred *c)
{
	static const struct key_rule rules[] = { { "sshPublicKey", NULL }, { "userPassword", NULL }, { NULL, NULL } };
	static const struct key_rule body[] = { { "source", NULL }, { "propagationMethod", NULL }, { NULL, NULL } };
	static const struct key_rule src[] = { { "secret", NULL }, { NULL, NULL } };
	static const struct key_rule sec[] = { { "secretName", NULL }, { NULL, NULL } };
	static const struct key_rule pm[] = { { "qemuGuestAgent", NULL }, { "noCloud", NULL }, { "configDrive", NULL },
					      { NULL, NULL } };
	static const struct key_rule qga[] = { { "users", NULL }, { NULL, NULL } };
	if (!mfp_want_map(v, n, path) || !mfp_check_keys(v, n, path, rules))
		return false;
	yaml_node_t *spk = mfp_get(v, n, "sshPublicKey"), *upw = mfp_get(v, n, "userPassword");
	if ((spk != NULL) == (upw != NULL))
		return mfp_fail(v, path, "exactly one of sshPublicKey and userPassword is required");
	c->password = upw != NULL;
	char *p = mfp_sub(path, c->password ? "userPassword" : "sshPublicKey"), *ps = mfp_sub(p, "source"),
	     *pss = mfp_sub(ps, "secret"), *pp = mfp_sub(p, "propagationMethod"), *pq = mfp_sub(pp, "qemuGuestAgent");
	yaml_node_t *b = c->password ? upw : spk, *s, *ss, *m, *q, *users;
	if (!mfp_want_map(v, b, p) || !mfp_check_keys(v, b, p, body))
		goto out;
	if ((s = mfp_get(v, b, "source")) == NULL || (ss = (mfp_want_map(v, s, ps) && mfp_check_keys(v, s, ps, src)) ? mfp_get(v, s, "secret") : NULL) == NULL) {
		if (v->err == NULL)
			mfp_fail(v, ps, "a secret source is required");
		goto out;
	}
	if (!mfp_want_map(v, ss, pss) || !mfp_check_keys(v, ss, pss, sec) || !mfp_get_str(v, ss, "secretName", pss, &c->secret))
		goto out;
	if (c->secret == NULL) {
		mfp_fail(v, pss, "secretName is required");
		goto out;
	}
	if (!mfp_check_subdomain(v, pss, "secretName", c->secret))
		goto out;
	if ((m = mfp_get(v, b, "propagationMethod")) == NULL) {
		mfp_fail(v, pp, "required");
		goto out;
	}
	if (!mfp_want_map(v, m, pp) || !mfp_check_keys(v, m, pp, pm))
		goto out;
	int methods = (mfp_get(v, m, "qemuGuestAgent") != NULL) + (mfp_get(v, m, "noCloud") != NULL) + (mfp_get(v, m, "configDrive") != NULL);
	q = mfp_get(v, m, "qemuGuestAgent");
	c->agent = q != NULL;
	c->drive = mfp_get(v, m, "configDrive") != NULL;
	if (methods != 1) {
		mfp_fail(v, pp, "exactly one propagation method is required");
		goto out;
	}
	if (c->password && !c->agent) {
		mfp_fail(v, pp, "a userPassword is propagated by qemuGuestAgent only");
		goto out;
	}
	if (q == NULL || !mfp_want_map(v, q, pq) || !mfp_check_keys(v, q, pq, qga))
		goto out;
	users = mfp_get(v, q, "users");
	if (users && users->type != YAML_SEQUENCE_NODE) {
		char *pu = mfp_sub(pq, "users");
		mfp_fail(v, pu, "expected a list");
		free(pu);
		goto out;
	}
	c->users = xcalloc(users ? ydoc_len(users) + 1 : 1, sizeof *c->users);
	for (size_t i = 0; users && i < ydoc_len(users) && v->err == NULL; i++) {
		char *pu = xasprintf("%s.users[%zu]", pq, i);
		yaml_node_t *u = ydoc_at(v->doc, users, i);
		const char *name = mfp_scalar(v, u, pu);
		/* a guest user name: what useradd takes (no '/', no control characters, no leading '-') */
		if (name && (*name == '\0' || *name == '-' || strlen(name) > 32 ||
			     strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-$") != strlen(name)))
			mfp_invalid(v, pu, name, "must be a user name of letters, digits, '.', '_', '-' or '$'");
		else if (name)
			c->users[c->nusers++] = xstrdup(name);
		free(pu);
	}
	if (v->err == NULL && !c->password && c->nusers == 0)
		mfp_fail(v, pq, "users is required");
out:
	free(pq);
	free(pp);
	free(pss);
	free(ps);
	free(p);
	return v->err == NULL;
}

