/* Domain XML for an engine VM, and the files an execution needs. See domxml.h and kvcon(1) for the local
 * meaning of each KubeVirt volume and interface kind. */
#include "engine/domxml.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"

#define TMPL "spec.template.spec"

char *domxml_escape(const char *s)
{
	struct buf b;
	buf_init(&b);
	for (; s && *s; s++) {
		switch (*s) {
		case '<': buf_add_str(&b, "&lt;"); break;
		case '>': buf_add_str(&b, "&gt;"); break;
		case '&': buf_add_str(&b, "&amp;"); break;
		case '\'': buf_add_str(&b, "&apos;"); break;
		case '"': buf_add_str(&b, "&quot;"); break;
		default:
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				buf_add_char(&b, ' '); /* not representable in XML 1.0 */
			else
				buf_add_char(&b, *s);
		}
	}
	if (b.data == NULL)
		buf_add_str(&b, "");
	return buf_steal(&b);
}

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

/* kernel and initrd host paths (owned) */
static int kernel_paths(const struct manifest *m, const struct domxml_env *env, char **kernel, char **initrd,
			char **err)
{
	*kernel = *initrd = NULL;
	if (m->kernel == NULL)
		return 0;
	const char *p = TMPL ".domain.firmware.kernelBoot.container";
	if (m->kernel_image) {
		char *tried = NULL;
		char *dir = find_image(env->image_dir, m->kernel_image, true, &tried);
		if (dir == NULL) {
			*err = xasprintf("%s.image: image \"%s\" not found as a directory in the engine's image "
					 "directory (tried %s); use image: host to take kernelPath/initrdPath as host "
					 "paths",
					 p, m->kernel_image, tried);
			free(tried);
			return -1;
		}
		free(tried);
		*kernel = xasprintf("%s%s", dir, m->kernel);
		if (m->initrd)
			*initrd = xasprintf("%s%s", dir, m->initrd);
		free(dir);
	} else {
		*kernel = xstrdup(m->kernel);
		*initrd = xstrdup0(m->initrd);
	}
	if (!is_file(*kernel)) {
		*err = xasprintf("%s.kernelPath: %s: no such file", p, *kernel);
		goto fail;
	}
	if (*initrd && !is_file(*initrd)) {
		*err = xasprintf("%s.initrdPath: %s: no such file", p, *initrd);
		goto fail;
	}
	return 0;
fail:
	free(*kernel);
	free(*initrd);
	*kernel = *initrd = NULL;
	return -1;
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

static void add_esc(struct buf *b, const char *s)
{
	char *e = domxml_escape(s);
	buf_add_str(b, e);
	free(e);
}

/* Target device names: vda.. for virtio, sda.. for sata/scsi/usb. */
static void target_name(char *out, size_t len, bool virtio, int n)
{
	if (n < 26)
		snprintf(out, len, "%s%c", virtio ? "vd" : "sd", 'a' + n);
	else
		snprintf(out, len, "%s%c%c", virtio ? "vd" : "sd", 'a' + n / 26 - 1, 'a' + n % 26);
}

static int disk_xml(struct buf *b, struct domxml_plan *p, const struct manifest *m, const struct domxml_env *env,
		    const struct mf_disk *d, int *nvd, int *nsd, char **err)
{
	const struct mf_volume *v = volume_of(m, d->name);
	int vi = vol_index(m, v);
	char *src = NULL;
	const char *fmt = "raw";
	bool ro = d->readonly;
	switch (v->type) {
	case MF_VOL_HOSTDISK: {
		src = xstrdup(v->path);
		struct domxml_file *f = add_file(p, v->create ? DF_HOSTDISK : DF_NEEDED, xstrdup(v->path));
		f->size = v->capacity;
		f->what = xasprintf("%s.volumes[%d].hostDisk.path", TMPL, vi);
		fmt = fmt_of(src);
		break;
	}
	case MF_VOL_PVC: {
		char *q = xasprintf("%s/%s/%s.qcow2", env->volume_dir, m->ns, v->claim);
		if (is_file(q))
			src = q;
		else {
			free(q);
			src = xasprintf("%s/%s/%s.img", env->volume_dir, m->ns, v->claim);
		}
		struct domxml_file *f = add_file(p, DF_NEEDED, xstrdup(src));
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
		char *img = find_image(env->image_dir, v->image, false, NULL);
		if (img == NULL) {
			*err = xasprintf("%s.volumes[%d].containerDisk.image: image \"%s\" not found in the engine's "
					 "image directory %s",
					 TMPL, vi, v->image, env->image_dir);
			return -1;
		}
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
		f->user_data = xstrdup(v->user_data);
		f->network_data = xstrdup0(v->network_data);
		f->meta_data = xasprintf("instance-id: %s.%s\nlocal-hostname: %s\n", m->name, m->ns,
					 m->hostname ? m->hostname : m->name);
		break;
	}
	}
	bool virtio = d->bus == MF_BUS_VIRTIO;
	char dev[8];
	target_name(dev, sizeof dev, virtio, virtio ? (*nvd)++ : (*nsd)++);
	buf_printf(b, "    <disk type='file' device='%s'>\n      <driver name='qemu' type='%s'%s%s%s/>\n",
		   d->cdrom ? "cdrom" : "disk", fmt, d->cache ? " cache='" : "", d->cache ? d->cache : "",
		   d->cache ? "'" : "");
	buf_add_str(b, "      <source file='");
	add_esc(b, src);
	buf_printf(b, "'/>\n      <target dev='%s' bus='%s'/>\n", dev, mf_bus_name(d->bus));
	if (d->boot_order)
		buf_printf(b, "      <boot order='%d'/>\n", d->boot_order);
	if (ro)
		buf_add_str(b, "      <readonly/>\n");
	if (d->serial) {
		buf_add_str(b, "      <serial>");
		add_esc(b, d->serial);
		buf_add_str(b, "</serial>\n");
	}
	buf_printf(b, "      <alias name='ua-%s'/>\n", d->name);
	buf_add_str(b, "    </disk>\n");
	free(src);
	return 0;
}

struct domxml_plan *domxml_build(const struct manifest *m, const struct domxml_env *env, char **err)
{
	struct domxml_plan *p = xcalloc(1, sizeof *p);
	struct buf b;
	buf_init(&b);
	char *kernel = NULL, *initrd = NULL;
	*err = NULL;
	if (domxml_resolve(m, env, err) < 0 || kernel_paths(m, env, &kernel, &initrd, err) < 0)
		goto fail;

	int vcpus = m->sockets * m->cores * m->threads;
	buf_printf(&b, "<domain type='%s'>\n  <name>", env->domain_type);
	add_esc(&b, env->dom_name);
	buf_printf(&b, "</name>\n  <uuid>%s</uuid>\n  <title>", env->vm_uid);
	add_esc(&b, m->ns);
	buf_add_char(&b, '/');
	add_esc(&b, m->name);
	buf_printf(&b, "</title>\n  <metadata>\n    <kvcon:execution xmlns:kvcon='https://kvcon.dev/xmlns/engine/1' "
		       "vm='%s' vmi='%s' launcher='%s' generation='%llu'/>\n  </metadata>\n",
		   env->vm_uid, env->vmi_uid, env->launcher_uid, (unsigned long long)env->generation);
	buf_printf(&b, "  <memory unit='KiB'>%llu</memory>\n  <vcpu placement='static'>%d</vcpu>\n",
		   (unsigned long long)(m->memory / 1024), vcpus);
	if (m->cpu_model && strcmp(env->domain_type, "kvm") == 0 &&
	    (strcmp(m->cpu_model, "host-passthrough") == 0 || strcmp(m->cpu_model, "host-model") == 0))
		buf_printf(&b, "  <cpu mode='%s'>\n", m->cpu_model);
	else if (m->cpu_model && strcmp(m->cpu_model, "host-passthrough") && strcmp(m->cpu_model, "host-model")) {
		buf_add_str(&b, "  <cpu mode='custom' match='exact'>\n    <model fallback='allow'>");
		add_esc(&b, m->cpu_model);
		buf_add_str(&b, "</model>\n");
	} else
		buf_add_str(&b, "  <cpu>\n"); /* TCG: host-model/passthrough mean nothing; QEMU's default model */
	buf_printf(&b, "    <topology sockets='%d' dies='1' cores='%d' threads='%d'/>\n  </cpu>\n", m->sockets,
		   m->cores, m->threads);
	buf_printf(&b, "  <os%s>\n    <type arch='x86_64' machine='", m->efi ? " firmware='efi'" : "");
	add_esc(&b, m->machine);
	buf_add_str(&b, "'>hvm</type>\n");
	if (m->efi)
		buf_printf(&b, "    <firmware>\n      <feature enabled='%s' name='secure-boot'/>\n    </firmware>\n",
			   m->secure_boot ? "yes" : "no");
	if (kernel) {
		buf_add_str(&b, "    <kernel>");
		add_esc(&b, kernel);
		buf_add_str(&b, "</kernel>\n");
		if (initrd) {
			buf_add_str(&b, "    <initrd>");
			add_esc(&b, initrd);
			buf_add_str(&b, "</initrd>\n");
		}
		if (m->kernel_args) {
			buf_add_str(&b, "    <cmdline>");
			add_esc(&b, m->kernel_args);
			buf_add_str(&b, "</cmdline>\n");
		}
	}
	bool any_boot_order = false;
	for (int i = 0; i < m->ndisks; i++)
		any_boot_order |= m->disks[i].boot_order != 0;
	if (!kernel && !any_boot_order)
		buf_add_str(&b, "    <boot dev='hd'/>\n");
	buf_add_str(&b, "  </os>\n  <features>\n    <acpi/>\n    <apic/>\n");
	if (m->efi && m->secure_boot)
		buf_add_str(&b, "    <smm state='on'/>\n");
	buf_add_str(&b, "  </features>\n  <clock offset='utc'/>\n"
			"  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>restart</on_reboot>\n"
			"  <on_crash>destroy</on_crash>\n  <devices>\n");

	bool scsi = false;
	int nvd = 0, nsd = 0;
	for (int i = 0; i < m->ndisks; i++) {
		scsi |= m->disks[i].bus == MF_BUS_SCSI;
		if (disk_xml(&b, p, m, env, &m->disks[i], &nvd, &nsd, err) < 0)
			goto fail;
	}
	if (scsi)
		buf_add_str(&b, "    <controller type='scsi' model='virtio-scsi'/>\n");
	for (int i = 0; i < m->nifaces; i++) {
		const struct mf_iface *f = &m->ifaces[i];
		if (f->bridge) {
			buf_add_str(&b, "    <interface type='bridge'>\n      <source bridge='");
			add_esc(&b, f->host_bridge ? f->host_bridge : env->bridge);
			buf_add_str(&b, "'/>\n");
		} else
			buf_add_str(&b, "    <interface type='user'>\n");
		if (f->mac) {
			buf_add_str(&b, "      <mac address='");
			add_esc(&b, f->mac);
			buf_add_str(&b, "'/>\n");
		}
		buf_printf(&b, "      <model type='%s'/>\n      <alias name='ua-%s'/>\n    </interface>\n",
			   f->model ? f->model : "virtio", f->name);
	}
	p->serial_log = xasprintf("%s/serial.log", env->run_dir);
	p->run_dir = xstrdup(env->run_dir);
	if (m->serial_console) {
		buf_add_str(&b, "    <serial type='pty'>\n      <log file='");
		add_esc(&b, p->serial_log);
		buf_add_str(&b, "' append='on'/>\n      <target port='0'/>\n    </serial>\n"
				"    <console type='pty'>\n      <target type='serial' port='0'/>\n    </console>\n");
	}
	/* The agent's socket gets an explicit path: libvirt's own choice sits deep under the embedded root
	 * (ROOT/lib/qemu/channel/target/domain-N-NAME/org.qemu.guest_agent.0) and exceeds the 107 bytes of a
	 * unix socket path as soon as $HOME is longer than /root, which made every start fail. */
	char *ga = strlen(env->run_dir) + sizeof "/ga.sock" <= 100
			   ? xasprintf("%s/ga.sock", env->run_dir)
			   : xasprintf("/tmp/kvcon-ga-%s.sock", env->vmi_uid ? env->vmi_uid : env->dom_name);
	buf_add_str(&b, "    <channel type='unix'>\n      <source mode='bind' path='");
	add_esc(&b, ga);
	buf_add_str(&b, "'/>\n      <target type='virtio' name='org.qemu.guest_agent.0'/>\n    </channel>\n");
	free(ga);
	if (m->graphics) {
		/* a unix socket in the execution's directory: no TCP port to collide with other QEMUs (each embedded
		 * driver allocates VNC ports on its own); 127.0.0.1 with a free port when the path is too long */
		if (strlen(env->run_dir) + sizeof "/vnc.sock" <= 100) {
			buf_add_str(&b, "    <graphics type='vnc' socket='");
			add_esc(&b, env->run_dir);
			buf_add_str(&b, "/vnc.sock'/>\n");
		} else
			buf_add_str(&b, "    <graphics type='vnc' autoport='yes' listen='127.0.0.1'>\n"
					"      <listen type='address' address='127.0.0.1'/>\n    </graphics>\n");
		buf_add_str(&b, "    <video>\n      <model type='vga'/>\n    </video>\n");
	}
	if (m->rng)
		buf_add_str(&b, "    <rng model='virtio'>\n      <backend model='random'>/dev/urandom</backend>\n"
				"    </rng>\n");
	buf_printf(&b, "    <memballoon model='%s'/>\n  </devices>\n</domain>\n", m->balloon ? "virtio" : "none");
	p->xml = buf_steal(&b);
	free(kernel);
	free(initrd);
	return p;
fail:
	buf_free(&b);
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
	}
	free(p->files);
	free(p->xml);
	free(p->serial_log);
	free(p->run_dir);
	free(p);
}

/* Runs argv quietly; 0 when it exited 0. */
static int run(char *const argv[], char **err)
{
	pid_t pid = fork();
	if (pid < 0) {
		*err = xasprintf("fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	*err = xasprintf("%s failed (%s %d)", argv[0], WIFEXITED(st) ? "exit" : "signal",
			 WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return -1;
}

static int sparse_file(const char *path, uint64_t size, bool keep, char **err)
{
	int fd = open(path, O_WRONLY | O_CREAT | (keep ? 0 : O_TRUNC) | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int seed_iso(const struct domxml_file *f, char **err)
{
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
	if (run(gen, &e1) == 0 || run(xo, &e2) == 0)
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

int domxml_prepare(const struct domxml_plan *p, char **err)
{
	if (p->run_dir && util_mkdir_p(p->run_dir, 0700) < 0) {
		*err = xasprintf("%s: %s", p->run_dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < p->nfiles; i++) {
		const struct domxml_file *f = &p->files[i];
		char *dir = xstrdup(f->path);
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir)
			*slash = '\0';
		if (f->kind != DF_NEEDED && f->kind != DF_HOSTDISK)
			util_mkdir_p(dir, 0700);
		free(dir);
		switch (f->kind) {
		case DF_NEEDED:
			if (!is_file(f->path)) {
				*err = xasprintf("%s: %s does not exist", f->what, f->path);
				return -1;
			}
			break;
		case DF_HOSTDISK:
			if (!is_file(f->path) && sparse_file(f->path, f->size, true, err) < 0)
				return -1;
			break;
		case DF_EMPTY:
			if (sparse_file(f->path, f->size, false, err) < 0)
				return -1;
			break;
		case DF_OVERLAY: {
			char *fmt = xstrdup(f->backing_fmt);
			char *argv[] = { "qemu-img", "create", "-q", "-f", "qcow2", "-F", fmt, "-b", f->backing, f->path,
					 NULL };
			int rc = run(argv, err);
			free(fmt);
			if (rc < 0)
				return -1;
			break;
		}
		case DF_SEED:
			if (seed_iso(f, err) < 0)
				return -1;
			break;
		}
	}
	return 0;
}
