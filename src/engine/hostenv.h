/* What an engine host needs from this machine, checked before libvirt is asked, so that a missing package,
 * account, lock, mount or network path is one line naming what is missing and the fix, at once, instead of
 * libvirt's error after a long wait (or its retry loop: a QEMU driver that failed to start says only "qemu
 * state driver is not active" for the rest of the process).
 *
 * Both functions block for at most HOSTENV_CONNECT_MS (a remote host's TCP connect); call them off the UI
 * thread or where a short wait is fine (the command line). Messages are plain text without a trailing newline,
 * and name what they read from outside (paths, host names) escaped. */
#ifndef KVCON_ENGINE_HOSTENV_H
#define KVCON_ENGINE_HOSTENV_H

#define HOSTENV_CONNECT_MS 3000

/* The first problem that keeps the engine from opening uri, or NULL. Caller frees.
 * Embedded driver: libvirt's QEMU driver module and a QEMU binary installed; the accounts the driver looks up
 * (its compiled-in one and the user/group of ROOT/etc/qemu.conf) present when root; ROOT not held by another
 * process (the driver's pid file lock; the message names the pid).
 * A daemon on this machine (qemu:///system, ?socket=PATH): its unix socket accepts a connection.
 * Remote host (tcp, tls, ssh): its port answers a TCP connect within HOSTENV_CONNECT_MS. */
char *hostenv_problem(const char *uri);

/* The first problem that keeps a guest of the embedded driver from starting on this machine, or NULL. Caller
 * frees: a usable pseudo-terminal (QEMU's serial pty), a root that is a mount point (libvirt's per-guest mount
 * namespace), a writable /var/lock (libvirt's console lock files). */
char *hostenv_guest_problem(const char *uri);

#endif
