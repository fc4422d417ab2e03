/* The registry of kinds and actions: one row per kind kvcon knows (its names, group/version, API path, whether it
 * is namespaced, its column table, whether the engine service serves it, its dashboard view) and one row per
 * lifecycle action (virtctl's name and aliases, the subresource it calls, the kinds it applies to, its dashboard
 * key, its confirmation, whether readonly blocks it, what --wait watches for). Like model/columns.c's tables,
 * everything else derives from these rows: `kvcon get`, describe and wait's kinds (cmd/), the reflectors' and
 * kget's paths (kube/), the dashboard's `:` commands and action keys (ui/), the command table's action verbs
 * and the API server's resources, discovery and subresources (apiserver/apisrv.c). Adding a kind or an action is adding
 * a row here (docs/ARCHITECTURE.md says what else). */
#ifndef KVCON_MODEL_REGISTRY_H
#define KVCON_MODEL_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include "model/obj.h"
#include "model/source.h"

struct column_table;

enum kind_id {
	KIND_VM,
	KIND_VMI,
	KIND_VMIM,
	KIND_POD,
	KIND_EVENT,
	KIND_NODE,
	KIND_NS,
	KIND_PVC,
	KIND_PV,
	KIND_DV,
	KIND_KV,
	KIND_VMIRS,
	KIND_SC,
	KIND_SECRET,
	KIND_CM,
	KIND_COUNT
};

#define KIND_BIT(k) (1u << (k))

struct kind_def {
	enum kind_id id;
	const char *plural, *singular, *kind;
	const char *group;   /* "" : the core group */
	const char *version; /* "v1", "v1beta1" */
	const char *base;    /* the group/version's API path: "/api/v1", "/apis/kubevirt.io/v1" */
	const char *const *shorts;  /* the API's shortNames (discovery), in its order; NULL-ended */
	const char *const *aliases; /* kvcon's own further names ("launcher"); NULL: none */
	bool namespaced;
	int obj;                  /* the store's enum obj_kind, -1: not kept in the store */
	const char *selector;     /* the store's fixed label selector for it (launcher pods), NULL: none */
	bool engine;              /* the engine service serves it */
	const char *view;         /* the dashboard's `:` command that lists it, NULL: none */
	const char *title;        /* a human's name for messages: "VM", "pod", "PVC" */
};

/* The row of a kind. */
const struct kind_def *registry_kind(enum kind_id id);
/* The kind a name means, as kubectl resolves a resource argument: plural, singular (both any case), a short
 * name or alias (exact), PLURAL.GROUP, SINGULAR.GROUP or PLURAL.VERSION.GROUP. NULL when none. */
const struct kind_def *registry_kind_find(const char *name);
/* The kind of a store object kind (OBJ_VM..OBJ_EVENT). */
const struct kind_def *registry_kind_of_obj(enum obj_kind k);
/* kind.group ("virtualmachines.kubevirt.io", "pods"), as the API server names a resource in its messages; into
 * buf (plural) or singular. */
const char *registry_kind_gr(const struct kind_def *k, bool plural, char *buf, size_t len);
/* The collection's path, in namespace ns (NULL or "": every namespace, or a cluster-scoped kind), and name
 * appended when not NULL. Caller frees. */
char *registry_kind_path(const struct kind_def *k, const char *ns, const char *name);
/* A subresource's path: /apis/subresources.GROUP/VERSION/namespaces/NS/PLURAL/NAME/SUB. Caller frees. */
char *registry_subresource_path(const struct kind_def *k, const char *ns, const char *name, const char *sub);
/* The names of every kind, space-separated (plural, singular, short names and aliases), for completion. */
const char *registry_kind_words(void);
/* The kind names close to a mistyped s (registry_suggest over the plural and singular names) into out (at most
 * max); returns how many. */
size_t registry_kind_suggest(const char *s, const char **out, size_t max);

/* What an action's --wait watches for until it is reached. */
enum action_wait {
	WAIT_NONE,       /* nothing to see (the guest reboots inside) */
	WAIT_NEW_RUN,    /* a new execution Running (start, restart) */
	WAIT_NO_VMI,     /* the execution gone (stop) */
	WAIT_PAUSED,     /* the VMI's Paused condition true */
	WAIT_UNPAUSED,   /* ... false */
	WAIT_MIGRATED,   /* a new migration completed (or its abort reported) */
	WAIT_VM_GONE,    /* the VM gone (delete) */
};

struct action_def {
	enum action act;
	const char *name;           /* virtctl's spelling: "soft-reboot" */
	const char *const *aliases; /* other spellings taken as the same verb ("softreboot"); NULL: none */
	bool verb;                  /* a `kvcon VERB` of its own (force-stop is stop --force, migrate-abort
				     * migrate --abort) */
	enum kind_id on;            /* the kind whose subresource it calls */
	const char *subresource;    /* "softreboot"; NULL: not a subresource (a DELETE) */
	unsigned kinds;             /* KIND_BIT of the rows it applies to (the dashboard offers it there) */
	int key;                    /* the dashboard's key, 0: none of its own */
	const char *key_label;      /* "ctrl-k" */
	const char *key_help;       /* one line for `?` and the man page */
	const char *confirm;        /* the question's verb ("Stop"), NULL: asks nothing */
	bool mutating;              /* readonly (flag, config file, dashboard) refuses it */
	enum action_wait waits;
	const char *done;           /* the CLI's line once accepted: "stop requested" */
	const char *summary;        /* the verb's one line of help */
};

/* The row of an action. */
const struct action_def *registry_action(enum action a);
/* The action a verb means (its name or an alias); NULL when none. Only rows with verb set. */
const struct action_def *registry_action_find(const char *name);
/* Rows in order, for help, the command table and key tables: NULL past the end. */
const struct action_def *registry_action_at(size_t i);
/* The action of the dashboard key k, NULL when none. */
const struct action_def *registry_action_key(int key);
/* Whether a applies to objects of kind k. */
bool registry_action_applies(const struct action_def *a, enum kind_id k);

/* What reaches into a running guest rather than acting on its lifecycle: virtctl's port-forward, ssh and scp
 * (through the VMI's portforward subresource) and the guest agent's queries. A verb of its own each; the command
 * table (cmd/cmd.c) takes its run function and flags by id. */
enum guest_verb {
	GV_PORT_FORWARD,
	GV_SSH,
	GV_SCP,
	GV_GUESTOSINFO,
	GV_USERLIST,
	GV_FSLIST,
	GV_CREDENTIALS,
	GV_COUNT
};

struct guest_verb_def {
	enum guest_verb id;
	const char *name;        /* virtctl's spelling: "port-forward", "fslist" */
	const char *subresource; /* of the VMI (and the VM for portforward): "portforward", "filesystemlist" */
	unsigned kinds;          /* KIND_BIT of the kinds its TYPE/NAME may name (vm/, vmi/) */
	int key;                 /* the dashboard's key, 0: none */
	const char *key_label;
	const char *key_help;
	const char *synopsis;    /* after the verb */
	const char *summary;
};

/* The row of a guest verb; NULL past the end. */
const struct guest_verb_def *registry_guest_verb(enum guest_verb v);
/* The guest verb of the dashboard key k; NULL when none. */
const struct guest_verb_def *registry_guest_verb_key(int key);
/* The guest verb named name; NULL when none. */
const struct guest_verb_def *registry_guest_verb_find(const char *name);

/* "start", "stop", "force-stop", ..., "soft-reboot". */
const char *action_name(enum action a);
/* Whether readonly refuses it. */
bool action_is_mutating(enum action a);

/* kubectl's "Did you mean this?" (cobra's rule): the candidates within Levenshtein distance 2 of s (any case),
 * or that s is a prefix of, in their order, without repeats, into out (at most max); returns how many. */
size_t registry_suggest(const char *s, const char *const *cands, size_t n, const char **out, size_t max);

#endif
