/* KubeVirt VirtualMachine manifests (kubevirt.io/v1) for the local engine: parse (YAML or JSON), validate
 * strictly, and keep what the domain XML needs. Every field is either understood or rejected with its path
 * and a reason; nothing is dropped silently.
 *
 * Local meanings (documented in kvcon(1)):
 *  - containerDisk.image, kernelBoot.container.image: resolved in the engine's image directory (see
 *    manifest_image_candidates), then in the cache of images pulled from registries (imgcache.h); kernelBoot kernelPath/initrdPath are taken inside that image directory entry
 *    when it is a directory, or as host paths when the image is the literal "host" or absent.
 *  - persistentVolumeClaim.claimName: a file in the engine's volume directory, <voldir>/<ns>/<claim>.img.
 *  - emptyDisk: a sparse file created for each execution; cloudInitNoCloud: a NoCloud seed ISO per execution;
 *    cloudInitConfigDrive: an OpenStack config drive (label config-2) per execution.
 *  - masquerade on the pod network: passt (KubeVirt's 10.0.2.0/24: guest 10.0.2.2, gateway 10.0.2.1) with the
 *    interface's ports forwarded from 127.0.0.1 on the host; bridge: a host bridge (the pod network's bridge
 *    comes from the setting engine.bridge / $KVCON_ENGINE_BRIDGE; a multus network names the bridge). */
#ifndef KVCON_ENGINE_MANIFEST_H
#define KVCON_ENGINE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum mf_bus { MF_BUS_VIRTIO, MF_BUS_SATA, MF_BUS_SCSI, MF_BUS_USB };
enum mf_vol { MF_VOL_HOSTDISK, MF_VOL_PVC, MF_VOL_EMPTY, MF_VOL_CONTAINER, MF_VOL_CLOUDINIT, MF_VOL_SECRET, MF_VOL_CONFIGMAP };

struct esecret;

struct mf_disk {
	char *name;
	bool cdrom;
	enum mf_bus bus;
	bool readonly;
	int boot_order; /* 0: none */
	char *serial;
	const char *cache; /* NULL, "none", "writethrough", "writeback" */
};

struct mf_volume {
	char *name;
	enum mf_vol type;
	char *path;        /* hostDisk path */
	bool create;       /* hostDisk DiskOrCreate */
	uint64_t capacity; /* bytes: hostDisk DiskOrCreate, emptyDisk */
	char *claim;       /* PVC claimName, or a dataVolume's name (its claim has the same name, as CDI makes it) */
	bool dv;           /* a dataVolume volume */
	bool readonly;     /* PVC readOnly */
	char *image;       /* containerDisk image */
	char *pull_policy; /* containerDisk imagePullPolicy as written (NULL: Kubernetes' default) */
	char *user_data, *network_data; /* cloudInitNoCloud or cloudInitConfigDrive, decoded */
	bool config_drive;               /* cloudInitConfigDrive (an OpenStack config-2 drive), else NoCloud */
	/* cloud-init's secretRef and networkDataSecretRef: Secrets of the VM's namespace read at each start
	 * (engine/esecret.h: keys userdata/userData, networkdata/networkData); NULL when inline */
	char *user_secret, *network_secret;
	char *object;      /* MF_VOL_SECRET: secret.secretName; MF_VOL_CONFIGMAP: configMap.name */
	bool optional;     /* secret/configMap optional: a missing object is an empty disk */
	struct esecret *files; /* secret/configMap: the object's data, set for one build (ecreds_resolve) */
	char *run_user_data, *run_network_data; /* cloud-init for one build, from Secrets and accessCredentials */
	char *label;       /* secret/configMap volumeLabel (NULL: cfgdata) */
};

/* spec.template.spec.accessCredentials[]: an sshPublicKey (qemuGuestAgent: into users' authorized_keys;
 * noCloud/configDrive: into cloud-init's user data at start) or a userPassword (qemuGuestAgent) from a Secret. */
struct mf_cred {
	bool password;  /* userPassword, else sshPublicKey */
	char *secret;   /* source.secret.secretName */
	bool agent;     /* propagationMethod qemuGuestAgent; else noCloud or configDrive (sshPublicKey only) */
	bool drive;     /* propagationMethod configDrive */
	char **users;   /* qemuGuestAgent.users (sshPublicKey) */
	int nusers;
};

/* interfaces[].ports: a guest port the host forwards (masquerade on the pod network only) */
struct mf_port {
	char *name;         /* NULL when unnamed */
	const char *proto;  /* "TCP" or "UDP" */
	int port;           /* 1..65535 */
};

struct mf_iface {
	char *name;
	bool bridge;   /* binding bridge; else masquerade */
	struct mf_port *ports; int nports;
	char *model;   /* virtio (default), e1000, e1000e, rtl8139 */
	char *mac;
	char *host_bridge; /* bridge binding: the host bridge (NULL: engine.bridge setting) */
};

struct manifest {
	char *name, *ns;
	char **labels; int nlabels;   /* "k=v" */
	char **tlabels; int ntlabels; /* spec.template.metadata.labels, "k=v": its VMIs' */
	char *run_strategy;           /* Always, RerunOnFailure, Once, Manual, Halted (spec.running mapped) */
	bool running_field;
	int sockets, cores, threads;
	char *cpu_model;              /* NULL, host-model, host-passthrough or a named model */
	uint64_t memory;              /* guest memory, bytes */
	char *memory_text;            /* as written ("256Mi") */
	char *machine;                /* q35 when unset */
	bool efi, secure_boot;
	char *kernel_image;           /* kernelBoot.container.image (NULL: host paths) */
	char *kernel, *initrd, *kernel_args;
	struct mf_disk *disks; int ndisks;
	struct mf_volume *vols; int nvols;
	struct mf_iface *ifaces; int nifaces;
	bool serial_console, graphics, balloon, rng;
	bool no_pod_iface;            /* autoattachPodInterface: false */
	int grace;                    /* terminationGracePeriodSeconds */
	char *hostname;
	char *eviction;               /* spec.evictionStrategy: None, LiveMigrate, LiveMigrateIfPossible, External */
	char *placement;              /* {nodeSelector, affinity, tolerations} as JSON text, or NULL (engine/placement.h) */
	struct mf_cred *creds; int ncreds; /* accessCredentials */
};

/* Parses and validates. NULL with *err ("field.path: reason", caller frees) on any problem. */
struct manifest *manifest_parse(const char *text, size_t len, char **err);
/* Whether old (NULL: none) uses a containerDisk image that new_ (NULL: none) does not: what an apply or a delete can
 * leave unused in the image cache. */
bool manifest_drops_image(const struct manifest *old, const struct manifest *new_);
void manifest_free(struct manifest *m);

/* Kubernetes quantity ("128Mi", "1G", "1024M", "2e3") to bytes; -1 when malformed. */
int manifest_quantity(const char *s, uint64_t *out);

/* The files an image reference may resolve to inside dir, in lookup order (NULL-terminated; caller frees each
 * and the array): <dir>/<ref with '/' and ':' as '_'> and <dir>/<repository basename>, each as-is and with
 * .qcow2, .img, .raw, .iso. */
char **manifest_image_candidates(const char *dir, const char *ref);

/* A resolver consulted after the image directory (the engine's image cache of pulled containerDisks): returns
 * the file for ref or NULL (caller frees). */
void manifest_image_hook(char *(*hook)(const char *ref));

const char *mf_bus_name(enum mf_bus b);

/* The name rules manifest_parse applies (Kubernetes' IsDNS1123Label / IsDNS1123Subdomain). */
bool manifest_dns_label(const char *s);
bool manifest_dns_subdomain(const char *s);
/* Valid UTF-8 without control characters (C0, DEL, C1). */
bool manifest_plain_text(const char *s);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Absolute, no "." or ".." component, plain text: what hostDisk.path and kernelPath/initrdPath must be. */
bool manifest_clean_path(const char *s);

#endif
