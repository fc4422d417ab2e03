/* The guest agent's answers as KubeVirt's API shows them: which qemu-guest-agent commands each subresource needs,
 * and the answers (untrusted JSON from inside the guest) turned into virt-api's shapes. Pure: no libvirt, no I/O.
 *
 * The answers are bounded (GAGENT_ANSWER_MAX bytes each, GAGENT_ITEMS_MAX entries of a list, GAGENT_STR_MAX bytes
 * of a string: longer ones are cut), typed (a field of the wrong type is left out) and every string is made
 * printable (util_escape_display: no byte that could drive a terminal). */
#ifndef KVCON_ENGINE_GAGENT_H
#define KVCON_ENGINE_GAGENT_H

#include <json-c/json.h>
#include <stddef.h>

#define GAGENT_ANSWER_MAX (256u * 1024)
#define GAGENT_ITEMS_MAX 256
#define GAGENT_STR_MAX 256
#define GAGENT_TIMEOUT_S 5 /* each command's time in the guest (libvirt's agent timeout) */

enum gagent_what {
	GA_OSINFO,   /* the subresource guestosinfo: VirtualMachineInstanceGuestAgentInfo */
	GA_USERLIST, /* userlist: VirtualMachineInstanceGuestOSUserList */
	GA_FSLIST,   /* filesystemlist: VirtualMachineInstanceFileSystemList */
	GA_STATUS,   /* what the VMI's status shows: guestOSInfo and the agent's interfaces */
	GA_COUNT
};

/* The subresource's enum gagent_what (guest verbs of model/registry.c), or -1. */
int gagent_what_of(const char *subresource);

/* The agent commands (qemu-guest-agent's JSON requests) the answer needs, in order; n of them. */
const char *const *gagent_commands(enum gagent_what w, int *n);

/* answers[i]: the agent's reply to command i (the whole {"return": ...} text), NULL when it failed. The
 * subresource's JSON (a new reference), or NULL with *err (caller frees) when the essential one failed. For
 * GA_STATUS: {"guestOSInfo": {...}, "interfaces": [{"interfaceName", "mac", "ipAddresses"}...], "version"}. */
json_object *gagent_build(enum gagent_what w, const char *const *answers, int n, char **err);

#endif
