/* From a validated manifest to a libvirt domain: resolves local paths (images, volumes, kernel), lists the
 * files an execution needs created (emptyDisk, cloud-init seed, containerDisk overlays) and writes the domain
 * XML. Pure: no libvirt, no file creation (the engine's worker does that with domxml_prepare).
 *
 * Safety by construction: the XML is written by libxml2's xmlTextWriter (every attribute and text node escaped;
 * a value that is not plain UTF-8 text fails the build), and every file the domain names resolves inside the
 * engine's own directories (image, volume, the execution's run directory, a private socket directory) or inside
 * a directory the host's owner allows (env->host_roots, "engine.allow-host-path" in the config file): hostDisk
 * and kernelBoot host paths are refused otherwise, and no symbolic link may lead out. */
#ifndef KVCON_ENGINE_DOMXML_H
#define KVCON_ENGINE_DOMXML_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/manifest.h"

struct domxml_env {
	const char *image_dir;    /* containerDisk and kernelBoot images */
	const char *image_cache;  /* the engine's cache of pulled images (NULL: none): its files count as images */
	const char *volume_dir;   /* PVCs: <volume_dir>/<ns>/<claim>.img */
	const char *run_dir;      /* this execution's files (emptyDisk, seed, overlays, serial log) */
	const char *bridge;       /* host bridge for bridge binding on the pod network (NULL: none configured) */
	const char *const *host_roots; /* NULL-terminated directories allowed for hostDisk and kernelBoot host
					* paths (the config's engine.allow-host-path lines); NULL: none */
	const char *domain_type;  /* "kvm" or "qemu" (TCG) */
	const char *dom_name;     /* <ns>_<name> */
	const char *vm_uid, *vmi_uid, *launcher_uid;
	uint64_t generation;
	/* The host ports the pod network's masquerade interface forwards from 127.0.0.1, in the order of its ports
	 * (chosen free by the engine); NULL: its ports are not forwarded. */
	const int *host_ports;
};

/* The pod network (masquerade) is QEMU's user-mode network on KubeVirt's 10.0.2.0/24. libvirt cannot set
 * QEMU's host (gateway) and DHCP start addresses, so the guest's lease is QEMU's: 10.0.2.15, gateway
 * 10.0.2.2, DNS 10.0.2.3 (KubeVirt's masquerade gives 10.0.2.2 via 10.0.2.1; passt, which would, is disabled
 * in Debian 12's libvirt and does not forward connections from the host's loopback in Debian 12's build). */
#define DOMXML_POD_NET "10.0.2.0"
#define DOMXML_POD_PREFIX "24"
#define DOMXML_POD_IP "10.0.2.15"
#define DOMXML_POD_GATEWAY "10.0.2.2"

enum domxml_file_kind { DF_EMPTY, DF_HOSTDISK, DF_SEED, DF_OVERLAY, DF_NEEDED, DF_FILES };

struct domxml_file {
	enum domxml_file_kind kind;
	char *path;
	uint64_t size;           /* DF_EMPTY, DF_HOSTDISK (created when missing) */
	char *backing;           /* DF_OVERLAY: the image */
	const char *backing_fmt; /* "qcow2" or "raw" */
	char *user_data, *meta_data, *network_data; /* DF_SEED */
	bool config_drive;       /* DF_SEED: an OpenStack config drive (config-2), else a NoCloud seed (cidata) */
	char *what;              /* DF_NEEDED: must exist at start ("persistentVolumeClaim disk-a") */
	char *root;              /* DF_HOSTDISK, DF_NEEDED: the directory the file must still resolve in */
	/* DF_FILES: a Secret's or ConfigMap's volume, an ISO labelled volid holding a file per key (keys are
	 * Kubernetes' config keys: [-._a-zA-Z0-9], never "." or "..") */
	char **names, **datas;
	size_t *lens;
	int nitems;
	char *volid;
};

struct domxml_plan {
	char *xml;
	struct domxml_file *files;
	int nfiles;
	char *serial_log;
	char *run_dir;
	char *sock_dir;  /* the VNC and agent sockets' directory (run_dir, or <sock_base>/<vmi uid>), 0700 */
	char *sock_base; /* NULL, or a short private directory (0700, ours) when run_dir is too deep for sun_path */
	/* The pod network's forwarded ports (nfwds, in the order of the interface's ports; NULL when none) and
	 * the masquerade interface's name. The worker adds them with QEMU monitor commands (domxml_hostfwd_cmd)
	 * while the guest is still paused, and may move a host port another process took meanwhile
	 * (engine/hostfwd.h). */
	struct domxml_fwd *fwds;
	int nfwds;
	char *pod_iface;
};

struct domxml_fwd {
	bool udp;
	int host_port; /* on 127.0.0.1 */
	int guest_port;
};

/* The HMP command that forwards p->fwds[i] ("hostfwd_add hostua-NAME tcp:127.0.0.1:HOSTPORT-:GUESTPORT"; the
 * caller frees it). Only validated numbers and the interface's name (a DNS label) reach it. */
char *domxml_hostfwd_cmd(const struct domxml_plan *p, int i);

/* The private directory an execution's sockets went to because its run directory is too deep (its path;
 * NULL when they are in the run directory, or vmi_uid is not a UUID): removed when the execution ends. */
char *domxml_sock_dir_of(const char *run_dir, const char *vmi_uid);

/* Unix socket paths the plan uses stay within this many bytes (sun_path holds 107 and a NUL). */
#define SOCK_PATH_MAX 100
/* The namespace of the engine's metadata element in the domain. */
#define DOMXML_META_URI "https://kvcon.dev/xmlns/engine/1"

/* Checks what can be checked at apply time (images found, kernel present, bridge configured).
 * 0, or -1 with *err ("field.path: reason"). */
int domxml_resolve(const struct manifest *m, const struct domxml_env *env, char **err);
/* The whole plan; NULL with *err. */
struct domxml_plan *domxml_build(const struct manifest *m, const struct domxml_env *env, char **err);
void domxml_plan_free(struct domxml_plan *p);
/* Creates the plan's files (runs qemu-img / genisoimage / xorriso): blocking, for the engine's worker.
 * 0, or -1 with *err. */
int domxml_prepare(const struct domxml_plan *p, char **err);

/* Reading libvirt's XML back (migration), with libxml2. The files a domain needs where it runs: kernel, initrd,
 * loader, cdrom and disk sources (disks left out with skip_disks); the count, or -1 when xml does not parse.
 * Caller frees each path and the array. */
struct domxml_need {
	char *path;
	const char *what; /* "kernel", "initrd", "firmware", "cdrom image", "disk image" */
};
int domxml_needs(const char *xml, bool skip_disks, struct domxml_need **out);
/* The text of the first node xpath selects (an attribute's value, an element's content), or NULL. */
char *domxml_attr(const char *xml, const char *xpath);
/* The first element xpath selects, serialized, or NULL. */
char *domxml_element(const char *xml, const char *xpath);
/* A transient directory storage pool's XML (written with libxml2); NULL when name or dir is not plain text. */
char *domxml_dir_pool(const char *name, const char *dir);
/* xml (one element) with its root's attribute set to value, serialized; NULL when it does not parse. */
char *domxml_with_attr(const char *xml, const char *attr, const char *value);

#endif
