/* The registry of kinds and actions (see registry.h): the two tables and their lookups. */
#include "model/registry.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/xmalloc.h"

#define KV "kubevirt.io"
#define KV_BASE "/apis/kubevirt.io/v1"
#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const struct kind_def kinds[KIND_COUNT] = {
	[KIND_VM] = { KIND_VM, "virtualmachines", "virtualmachine", "VirtualMachine", KV, "v1", KV_BASE,
		      NAMES("vm", "vms"), NULL, true, OBJ_VM, NULL, true, "vm", "VM" },
	[KIND_VMI] = { KIND_VMI, "virtualmachineinstances", "virtualmachineinstance", "VirtualMachineInstance", KV, "v1",
		       KV_BASE, NAMES("vmi", "vmis"), NULL, true, OBJ_VMI, NULL, true, "vmi", "VMI" },
	[KIND_VMIM] = { KIND_VMIM, "virtualmachineinstancemigrations", "virtualmachineinstancemigration",
			"VirtualMachineInstanceMigration", KV, "v1", KV_BASE, NAMES("vmim", "vmims"), NAMES("migrations"),
			true, -1, NULL, true, "vmim", "migration" },
	[KIND_POD] = { KIND_POD, "pods", "pod", "Pod", "", "v1", "/api/v1", NAMES("po"), NAMES("launcher"), true, OBJ_POD,
		       "kubevirt.io=virt-launcher", true, "pod", "pod" },
	[KIND_EVENT] = { KIND_EVENT, "events", "event", "Event", "", "v1", "/api/v1", NAMES("ev"), NULL, true, OBJ_EVENT,
			 NULL, true, "events", "event" },
	[KIND_NODE] = { KIND_NODE, "nodes", "node", "Node", "", "v1", "/api/v1", NAMES("no"), NULL, false, -1, NULL, true,
			"node", "node" },
	[KIND_NS] = { KIND_NS, "namespaces", "namespace", "Namespace", "", "v1", "/api/v1", NAMES("ns"), NULL, false, -1,
		      NULL, true, "ns", "namespace" },
	[KIND_PVC] = { KIND_PVC, "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", "", "v1",
		       "/api/v1", NAMES("pvc"), NULL, true, -1, NULL, true, "pvc", "PVC" },
	[KIND_PV] = { KIND_PV, "persistentvolumes", "persistentvolume", "PersistentVolume", "", "v1", "/api/v1",
		      NAMES("pv"), NULL, false, -1, NULL, true, NULL, "PV" },
	[KIND_DV] = { KIND_DV, "datavolumes", "datavolume", "DataVolume", "cdi.kubevirt.io", "v1beta1",
		      "/apis/cdi.kubevirt.io/v1beta1", NAMES("dv", "dvs"), NULL, true, -1, NULL, true, "dv", "DataVolume" },
	/* the engine's own KubeVirt CR */
	[KIND_KV] = { KIND_KV, "kubevirts", "kubevirt", "KubeVirt", KV, "v1", KV_BASE, NAMES("kv", "kvs"), NULL, true,
		      -1, NULL, true, NULL, "KubeVirt" },
	[KIND_VMIRS] = { KIND_VMIRS, "virtualmachineinstancereplicasets", "virtualmachineinstancereplicaset",
			 "VirtualMachineInstanceReplicaSet", KV, "v1", KV_BASE, NAMES("vmirs", "vmirss"), NULL, true, -1, NULL,
			 true, "vmirs", "replica set" },
	/* the engine's default class (its local volumes) */
	[KIND_SC] = { KIND_SC, "storageclasses", "storageclass", "StorageClass", "storage.k8s.io", "v1",
		      "/apis/storage.k8s.io/v1", NAMES("sc"), NULL, false, -1, NULL, true, NULL, "storage class" },
	/* what VMs take cloud-init data, volumes and accessCredentials from (the engine: apiserver/secrets.c) */
	[KIND_SECRET] = { KIND_SECRET, "secrets", "secret", "Secret", "", "v1", "/api/v1", NAMES(NULL), NULL, true, -1,
			  NULL, true, NULL, "Secret" },
	[KIND_CM] = { KIND_CM, "configmaps", "configmap", "ConfigMap", "", "v1", "/api/v1", NAMES("cm"), NULL, true, -1,
		      NULL, true, NULL, "ConfigMap" },
};

const struct kind_def *registry_kind(enum kind_id id)
{
	return (unsigned)id < KIND_COUNT ? &kinds[id] : NULL;
}

const struct kind_def *registry_kind_of_obj(enum obj_kind k)
{
	for (int i = 0; i < KIND_COUNT; i++)
		if (kinds[i].obj == (int)k)
			return &kinds[i];
	return NULL;
}

static bool in_list(const char *const *l, const char *s)
{
	for (; l && *l; l++)
		if (strcmp(*l, s) == 0)
			return true;
	return false;
}

/* s is word (any case) followed by end, or by "." then end */
static bool word_then(const char *s, const char *word, const char **rest)
{
	size_t n = strlen(word);
	if (strncasecmp(s, word, n) != 0 || (s[n] != '\0' && s[n] != '.'))
		return false;
	*rest = s[n] ? s + n + 1 : NULL;
	return true;
}

const struct kind_def *registry_kind_find(const char *s)
{
	if (s == NULL || *s == '\0')
		return NULL;
	for (int i = 0; i < KIND_COUNT; i++) {
		const struct kind_def *k = &kinds[i];
		if (in_list(k->shorts, s) || in_list(k->aliases, s))
			return k;
		const char *rest = NULL;
		if (!word_then(s, k->plural, &rest) && !word_then(s, k->singular, &rest))
			continue;
		if (rest == NULL)
			return k;
		if (*k->group == '\0')
			continue;
		/* PLURAL.GROUP, PLURAL.VERSION.GROUP */
		if (strcmp(rest, k->group) == 0)
			return k;
		size_t vl = strlen(k->version);
		if (strncmp(rest, k->version, vl) == 0 && rest[vl] == '.' && strcmp(rest + vl + 1, k->group) == 0)
			return k;
	}
	return NULL;
}

const char *registry_kind_gr(const struct kind_def *k, bool plural, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", plural ? k->plural : k->singular, *k->group ? "." : "", k->group);
	return buf;
}

char *registry_kind_path(const struct kind_def *k, const char *ns, const char *name)
{
	bool in_ns = k->namespaced && ns && *ns;
	return xasprintf("%s%s%s/%s%s%s", k->base, in_ns ? "/namespaces/" : "", in_ns ? ns : "", k->plural,
			 name ? "/" : "", name ? name : "");
}

char *registry_subresource_path(const struct kind_def *k, const char *ns, const char *name, const char *sub)
{
	return xasprintf("/apis/subresources.%s/%s/namespaces/%s/%s/%s/%s", k->group, k->version, ns, k->plural, name, sub);
}

const char *registry_kind_words(void)
{
	static char words[1024];
	if (words[0])
		return words;
	size_t n = 0;
	for (int i = 0; i < KIND_COUNT; i++) {
		const struct kind_def *k = &kinds[i];
		for (const char *const *a = k->shorts; *a; a++)
			n += (size_t)snprintf(words + n, sizeof words - n, "%s ", *a);
		n += (size_t)snprintf(words + n, sizeof words - n, "%s %s ", k->singular, k->plural);
		for (const char *const *a = k->aliases; a && *a; a++)
			n += (size_t)snprintf(words + n, sizeof words - n, "%s ", *a);
	}
	if (n > 0 && n < sizeof words)
		words[n - 1] = '\0';
	return words;
}

/* ---- actions ---- */

static const struct action_def actions[ACT_COUNT] = {
	[ACT_START] = { ACT_START, "start", NULL, true, KIND_VM, "start", KIND_BIT(KIND_VM), 's', "s", "start the VM",
			NULL, true, WAIT_NEW_RUN, "start requested", "start a VM" },
	[ACT_STOP] = { ACT_STOP, "stop", NULL, true, KIND_VM, "stop", KIND_BIT(KIND_VM), 'S', "S", "stop the VM (asks)",
		       "Stop", true, WAIT_NO_VMI, "stop requested", "stop a VM" },
	[ACT_FORCE_STOP] = { ACT_FORCE_STOP, "force-stop", NULL, false, KIND_VM, "stop", KIND_BIT(KIND_VM), 'k' & 0x1f,
			     "ctrl-k", "force stop the VM, grace period 0 (asks)", "Force stop (grace 0)", true, WAIT_NO_VMI,
			     "force stop requested", "stop a VM at once (kvcon stop --force)" },
	[ACT_RESTART] = { ACT_RESTART, "restart", NULL, true, KIND_VM, "restart", KIND_BIT(KIND_VM), 'r', "r",
			  "restart the VM (asks)", "Restart", true, WAIT_NEW_RUN, "restart requested", "restart a VM" },
	[ACT_PAUSE] = { ACT_PAUSE, "pause", NULL, true, KIND_VMI, "pause", KIND_BIT(KIND_VM) | KIND_BIT(KIND_VMI), 'p',
			"p", "pause or unpause the VM", "Pause", true, WAIT_PAUSED, "paused", "pause a VM's guest" },
	[ACT_UNPAUSE] = { ACT_UNPAUSE, "unpause", NULL, true, KIND_VMI, "unpause", KIND_BIT(KIND_VM) | KIND_BIT(KIND_VMI),
			  0, NULL, NULL, NULL, true, WAIT_UNPAUSED, "unpaused", "unpause a VM's guest" },
	[ACT_SOFT_REBOOT] = { ACT_SOFT_REBOOT, "soft-reboot", NAMES("softreboot"), true, KIND_VMI, "softreboot",
			      KIND_BIT(KIND_VM) | KIND_BIT(KIND_VMI), 'r' & 0x1f, "ctrl-r",
			      "soft-reboot the guest: guest agent, else ACPI (asks)", "Soft-reboot the guest of", true,
			      WAIT_NONE, "soft reboot requested",
			      "reboot the guest (guest agent, else ACPI), like virtctl soft-reboot" },
	[ACT_MIGRATE] = { ACT_MIGRATE, "migrate", NULL, true, KIND_VM, "migrate", KIND_BIT(KIND_VM) | KIND_BIT(KIND_VMI),
			  'm', "m", "live-migrate the VM (asks); during a migration: abort it (asks)", "Live-migrate", true,
			  WAIT_MIGRATED, "migration requested", "live-migrate a VM" },
	[ACT_MIGRATE_ABORT] = { ACT_MIGRATE_ABORT, "migrate-abort", NULL, false, KIND_VMIM, NULL,
				KIND_BIT(KIND_VM) | KIND_BIT(KIND_VMI), 0, NULL, NULL, "Abort the migration of", true,
				WAIT_MIGRATED, "migration abort requested", "cancel a VM's migration (kvcon migrate --abort)" },
	[ACT_DELETE] = { ACT_DELETE, "delete", NULL, true, KIND_VM, NULL, KIND_BIT(KIND_VM), 0, NULL, NULL, "Delete",
			 true, WAIT_VM_GONE, "delete requested", "delete a VM (its execution first)" },
};

/* the order of help, the command table and the key tables */
static const enum action order[] = { ACT_START,	      ACT_STOP,	   ACT_FORCE_STOP,    ACT_RESTART, ACT_PAUSE,
				     ACT_UNPAUSE,     ACT_SOFT_REBOOT, ACT_MIGRATE,   ACT_MIGRATE_ABORT, ACT_DELETE };

const struct action_def *registry_action(enum action a)
{
	return (unsigned)a < ACT_COUNT ? &actions[a] : NULL;
}

const struct action_def *registry_action_at(size_t i)
{
	return i < sizeof order / sizeof order[0] ? &actions[order[i]] : NULL;
}

const struct action_def *registry_action_find(const char *name)
{
	for (int i = 0; name && i < ACT_COUNT; i++)
		if (actions[i].verb && (strcmp(actions[i].name, name) == 0 || in_list(actions[i].aliases, name)))
			return &actions[i];
	return NULL;
}

const struct action_def *registry_action_key(int key)
{
	for (int i = 0; key && i < ACT_COUNT; i++)
		if (actions[i].key == key)
			return &actions[i];
	return NULL;
}

bool registry_action_applies(const struct action_def *a, enum kind_id k)
{
	return a && (unsigned)k < KIND_COUNT && (a->kinds & KIND_BIT(k)) != 0;
}

const char *action_name(enum action a)
{
	return (unsigned)a < ACT_COUNT ? actions[a].name : "?";
}

bool action_is_mutating(enum action a)
{
	return (unsigned)a < ACT_COUNT && actions[a].mutating;
}

/* ---- verbs into the guest ---- */

#define VM_VMI (KIND_BIT(KIND_VM) | KIND_BIT(KIND_VMI))
static const struct guest_verb_def guest_verbs[GV_COUNT] = {
	[GV_PORT_FORWARD] = { GV_PORT_FORWARD, "port-forward", "portforward", VM_VMI, 'F', "shift-F",
			      "forward local ports to the guest's (asks for them; :pf lists and stops the forwards)",
			      "TYPE/NAME[.NS] [PROTO/]LOCAL[:REMOTE]... [--address ADDR] [--stdio]",
			      "forward local ports to a guest's through the portforward subresource, like virtctl" },
	[GV_SSH] = { GV_SSH, "ssh", "portforward", VM_VMI, 'a', "a",
		     "ssh into the guest (asks for the user and ssh's options; the terminal is ssh's until it ends)",
		     "[USER@]TYPE/NAME[.NS] [-i KEY] [-l USER] [-p PORT] [-c COMMAND] [-t OPT]...",
		     "the system's ssh to a guest through kvcon port-forward --stdio, like virtctl ssh --local-ssh" },
	[GV_SCP] = { GV_SCP, "scp", "portforward", VM_VMI, 0, NULL, NULL,
		     "[-r] SRC DST (one of them [USER@]TYPE/NAME[.NS]:PATH) [-i KEY] [-p PORT] [-t OPT]...",
		     "the system's scp to or from a guest through kvcon port-forward --stdio, like virtctl scp" },
	[GV_GUESTOSINFO] = { GV_GUESTOSINFO, "guestosinfo", "guestosinfo", KIND_BIT(KIND_VMI), 0, NULL, NULL,
			     "NS/NAME", "the guest agent's OS information as JSON, like virtctl guestosinfo" },
	[GV_USERLIST] = { GV_USERLIST, "userlist", "userlist", KIND_BIT(KIND_VMI), 0, NULL, NULL, "NS/NAME",
			  "the guest agent's logged-in users as JSON, like virtctl userlist" },
	[GV_FSLIST] = { GV_FSLIST, "fslist", "filesystemlist", KIND_BIT(KIND_VMI), 0, NULL, NULL, "NS/NAME",
			"the guest agent's filesystems as JSON, like virtctl fslist" },
	/* no subresource: a Secret and the VM's accessCredentials, which virt-handler hands to the guest agent */
	[GV_CREDENTIALS] = { GV_CREDENTIALS, "credentials", NULL, KIND_BIT(KIND_VM), 0, NULL, NULL,
			     "add-ssh-key|remove-ssh-key|set-password NS/NAME --user USER [-f FILE|--value KEY]",
			     "SSH keys and passwords the guest agent puts in the guest, like virtctl credentials" },
};

const struct guest_verb_def *registry_guest_verb(enum guest_verb v)
{
	return (unsigned)v < GV_COUNT ? &guest_verbs[v] : NULL;
}

const struct guest_verb_def *registry_guest_verb_key(int key)
{
	for (int i = 0; key && i < GV_COUNT; i++)
		if (guest_verbs[i].key == key)
			return &guest_verbs[i];
	return NULL;
}

const struct guest_verb_def *registry_guest_verb_find(const char *name)
{
	for (int i = 0; name && i < GV_COUNT; i++)
		if (strcmp(guest_verbs[i].name, name) == 0)
			return &guest_verbs[i];
	return NULL;
}

/* ---- suggestions ---- */

/* Levenshtein distance, case-insensitive as cobra's (strings longer than 63 bytes are never close) */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 63 || lb > 63)
		return 99;
	int d[64][64];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			int m = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < m)
				m = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + cost < m)
				m = d[i - 1][j - 1] + cost;
			d[i][j] = m;
		}
	return d[la][lb];
}

size_t registry_suggest(const char *s, const char *const *cands, size_t n, const char **out, size_t max)
{
	size_t k = 0, sl = strlen(s);
	for (size_t i = 0; i < n && k < max; i++) {
		bool dup = false;
		for (size_t j = 0; j < k; j++)
			dup |= strcmp(out[j], cands[i]) == 0;
		/* cobra's rule: within distance 2, or the typed word is a prefix of the name */
		if (!dup && (distance(s, cands[i]) <= 2 || (sl > 0 && strncasecmp(cands[i], s, sl) == 0)))
			out[k++] = cands[i];
	}
	return k;
}

size_t registry_kind_suggest(const char *s, const char **out, size_t max)
{
	const char *cands[KIND_COUNT * 2];
	size_t n = 0;
	for (int i = 0; i < KIND_COUNT; i++) {
		cands[n++] = kinds[i].plural;
		cands[n++] = kinds[i].singular;
	}
	/* short names are all close to each other: only words of some length are matched, against the long names */
	return strlen(s) > 3 ? registry_suggest(s, cands, n, out, max) : 0;
}
