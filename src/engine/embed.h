/* The embedded QEMU driver's root (qemu:///embed?root=ROOT), made ready by kvcon itself before libvirt opens it,
 * and the account QEMU runs as there.
 *
 * kvcon writes ROOT/etc/qemu.conf (when it is absent, or kvcon's own and out of date): QEMU runs under an
 * unprivileged account through libvirt's DAC driver with dynamic ownership (libvirt gives the account each file a
 * guest uses while it runs and gives it back after), logs go to files (no virtlogd), no cgroups. Running as root,
 * the default account is libvirt-qemu with group kvm; the setting engine.qemu-user ($KVCON_ENGINE_QEMU_USER) names
 * another as USER or USER:GROUP, and "root" restores QEMU as root. Not root, QEMU runs as the caller (libvirt
 * cannot change users).
 *
 * The account must reach the directories of what it opens (the root, the images and volumes, each execution's
 * run directory) without the user's home becoming open to everyone: where a directory on the way does not let the
 * account search it, kvcon adds one POSIX ACL entry, user:ACCOUNT:--x (search only: no listing, no reading of
 * what is not already readable), the way virt-manager does. Each execution's run directory (sockets, serial log,
 * overlays) is 0700 and belongs to the account.
 *
 * Called from the engine's worker thread (embed_prepare) and the loop thread (embed_reach, embed_own_dir); no
 * shared state. */
#ifndef KVCON_ENGINE_EMBED_H
#define KVCON_ENGINE_EMBED_H

#include <stdbool.h>
#include <sys/types.h>

#define EMBED_DEFAULT_USER "libvirt-qemu"
#define EMBED_DEFAULT_GROUP "kvm"

struct embed_account {
	bool same;      /* QEMU runs as kvcon itself (root by choice, or kvcon not root): nothing to arrange */
	uid_t uid;
	gid_t gid;
	char *user, *group;
	gid_t *groups;  /* supplementary groups of the account */
	int ngroups;
};

/* Resolves SPEC (USER or USER:GROUP; NULL or "" = the default) for this process. 0, or -1 with *err (caller frees)
 * when the account or group does not exist. */
int embed_account_resolve(const char *spec, struct embed_account *a, char **err);
void embed_account_clear(struct embed_account *a);

/* Makes ROOT ready for virConnectOpen: the directory, etc/qemu.conf for account SPEC, the account's way to ROOT.
 * Idempotent and quick when nothing changed. 0, or -1 with *err (caller frees). */
int embed_prepare(const char *root, const char *spec, char **err);

/* Ends what a process killed during libvirt's QEMU capability probe left in ROOT: the probe's QEMU (daemonized,
 * waiting on its monitor for good) and its ROOT/lib/qemu/qmp-* directory. Only while no process holds the root
 * (libvirt's ROOT/run/qemu/driver.pid lock, tested by taking it for the scan); call it only before this process
 * first opens ROOT, as closing the lock file drops every lock this process holds on it, libvirt's too. The number
 * of QEMUs ended. */
int embed_reap_probes(const char *root);

/* Lets the account search DIR and every directory above it (ACL entries where needed); DIR must exist.
 * 0, or -1 with *err. No-op when a->same. */
int embed_reach(const struct embed_account *a, const char *dir, char **err);

/* Whether a directory of mode MODE at PATH is closed to group and others: no group or other permission, and
 * named ACL users (an unprivileged QEMU's account) with search permission at most. */
bool embed_dir_private(const char *path, mode_t mode);

/* Creates DIR (0700) if needed and gives it to the account, after embed_reach on its parent. 0, or -1 with *err. */
int embed_own_dir(const struct embed_account *a, const char *dir, char **err);

/* Root directory of an embedded URI ("qemu:///embed?root=DIR"), or NULL (caller frees). */
char *embed_uri_root(const char *uri);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The text of ROOT/etc/qemu.conf kvcon writes for account a (caller frees). */
char *embed_conf_text(const struct embed_account *a);
/* The KVM device embed_prepare lets the account open ("/dev/kvm"; tests point it at a file of their own). */
extern const char *embed_kvm_path;

#endif
