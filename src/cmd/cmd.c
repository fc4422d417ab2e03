/* The command table and what is generated from it: kvcon --help, kvcon help VERB / VERB --help, and the shell
 * completion scripts (static verb and flag lists, dynamic kinds, namespaces and names through the hidden
 * `kvcon __complete WORDS...`, which answers from the same table and from the cluster). */
#include "cmd/cmd.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/args.h"
#include "cmd/cmd_apply.h"
#include "cmd/cmd_bundle.h"
#include "cmd/cmd_console.h"
#include "cmd/cmd_credentials.h"
#include "cmd/cmd_describe.h"
#include "cmd/cmd_diagnose.h"
#include "cmd/cmd_serve.h"
#include "cmd/cmd_engine.h"
#include "cmd/cmd_get.h"
#include "cmd/cmd_guestinfo.h"
#include "cmd/cmd_logs.h"
#include "cmd/cmd_node.h"
#include "cmd/cmd_portforward.h"
#include "cmd/cmd_ssh.h"
#include "cmd/cmd_vnc.h"
#include "cmd/cmd_wait.h"
#include "core/buf.h"
#include "core/connect.h"
#include "core/log.h"
#include "core/version.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/kget.h"
#include "model/registry.h"

static int cmd_version(int argc, char **argv);
static int cmd_help(int argc, char **argv);
static int cmd_completion(int argc, char **argv);
static int cmd_complete(int argc, char **argv);
static void print_kinds(FILE *f);

/* A flag row: short and long form, the value's name, help, completion values; D a duration whose bare number
 * counts unit ms (virtctl's unit for the flag), N a whole number (cmd/args.c checks both). */
#define F(s_, l_, arg_, help_, values_) { .s = s_, .l = l_, .arg = arg_, .help = help_, .values = values_ }
#define D(s_, l_, arg_, help_, unit_)                                                                             \
	{ .s = s_, .l = l_, .arg = arg_, .help = help_, .type = CMD_FLAG_DURATION, .unit_ms = unit_ }
#define N(s_, l_, arg_, help_) { .s = s_, .l = l_, .arg = arg_, .help = help_, .type = CMD_FLAG_INT }
#define WAIT_FLAG                                                                                                  \
	D(NULL, "--wait", "[SECONDS", "watch until the effect is visible (default 120 s); exit 3 when not", 1000)
#define SOURCE_HELP "the context or engine host that has the VM (when the name exists on several)"

/* The global options' setters: a string, a switch, a count at the row's offset into struct kvcon_opts; the others
 * their own. */
static int set_str(struct kvcon_opts *o, const struct cmd_flag *f, const char *val, const char **err)
{
	(void)err;
	char **p = (char **)(void *)((char *)o + f->off);
	free(*p);
	*p = xstrdup(val);
	return 0;
}
static int set_true(struct kvcon_opts *o, const struct cmd_flag *f, const char *val, const char **err)
{
	(void)val, (void)err;
	*(bool *)(void *)((char *)o + f->off) = true;
	return 0;
}
static int set_count(struct kvcon_opts *o, const struct cmd_flag *f, const char *val, const char **err)
{
	(void)val, (void)err;
	(*(int *)(void *)((char *)o + f->off))++;
	return 0;
}
static int set_context(struct kvcon_opts *o, const struct cmd_flag *f, const char *val, const char **err)
{
	(void)f;
	return connect_set_context(o, val, err);
}
static int set_connect(struct kvcon_opts *o, const struct cmd_flag *f, const char *val, const char **err)
{
	(void)f, (void)err;
	o->uris = xreallocarray(o->uris, (size_t)o->nuris + 1, sizeof *o->uris);
	o->uris[o->nuris++] = xstrdup(val);
	return 0;
}
static int set_level(struct kvcon_opts *o, const struct cmd_flag *f, const char *val, const char **err)
{
	(void)f, (void)err;
	o->verbose = atoi(val);
	return 0;
}

/* A global option's row: G(short, long, VALUE, help, completion values, setter, field of struct kvcon_opts) */
#define G(s_, l_, arg_, help_, values_, set_, field_)                                                             \
	{ .s = s_, .l = l_, .arg = arg_, .help = help_, .values = values_, .set = set_,                           \
	  .off = offsetof(struct kvcon_opts, field_) }
const struct cmd_flag cmd_globals[] = {
	G(NULL, "--kubeconfig", "FILE", "kubeconfig to use (default: $KUBECONFIG, ~/.kube/config)", NULL, set_str,
	  kubeconfig),
	G(NULL, "--context", "NAME", "kubeconfig context, or engine (the local engine; CTX,engine: both)", NULL,
	  set_context, context),
	G("-n", "--namespace", "NS", "namespace (default: the context's)", NULL, set_str, ns),
	G("-A", "--all-namespaces", NULL, "every namespace", NULL, set_true, all_ns),
	G("-c", "--connect", "URI", "libvirt host for the engine (repeatable; default: $LIBVIRT_DEFAULT_URI, else "
				    "embedded QEMU)", NULL, set_connect, uris),
	G(NULL, "--source", "NAME", SOURCE_HELP, NULL, set_str, source),
	G(NULL, "--no-engine", NULL, "do not open the local engine", NULL, set_true, no_engine),
	G(NULL, "--readonly", NULL, "refuse every mutating action; consoles and VNC view only", NULL, set_true, readonly),
	G(NULL, "--theme", "NAME", "colour theme", "default dark light mono", set_str, theme),
	G(NULL, "--log-file", "FILE", "log file (default: $XDG_STATE_HOME/kvcon/kvcon.log)", NULL, set_str, log),
	G("-v", "--v", "N", "log verbosity (-v N, --v=N; -v alone: 1)", NULL, set_level, verbose),
	G(NULL, "--verbose", NULL, "more logging (repeatable)", NULL, set_count, verbose),
	{ .l = "--version", .help = "the same as the version command", .becomes = "version" },
	{ .s = "-h", .l = "--help", .help = "this help", .becomes = "--help" },
	{ .l = NULL },
};

static const struct cmd_flag f_version[] = {
	F(NULL, "--client", NULL, "the client's version only", NULL),
	{ .l = NULL },
};
static const struct cmd_flag f_get[] = {
	F("-o", "--output", "FMT", "wide, json, yaml, name, jsonpath=TEMPLATE, custom-columns=SPEC, summary",
	  "wide json yaml name jsonpath= custom-columns= summary"),
	F("-l", "--selector", "SELECTOR", "label selector (repeatable)", NULL),
	F(NULL, "--field-selector", "SELECTOR", "field selector", NULL),
	F(NULL, "--no-headers", NULL, "no header line", NULL),
	F(NULL, "--show-labels", NULL, "a LABELS column", NULL),
	F("-L", "--label-columns", "KEY,...", "a column per label key", NULL),
	F(NULL, "--sort-by", "JSONPATH", "sort by this field", NULL),
	F("-w", "--watch", NULL, "after the list, every change", NULL),
	{ .s = "-A", .l = "--all-namespaces", .help = "every namespace (a global option)", .hidden = true },
	{ .s = "-n", .l = "--namespace", .arg = "NS", .help = "namespace (a global option)", .hidden = true },
	D(NULL, "--watch-for", "SECONDS", "watch this long, then print the result (or 30s, 2m)", 1000),
	D(NULL, "--timeout", "SECONDS", "give up on the lists after this long (default 30; or 30s, 2m)", 1000),
	{ .l = NULL },
};
static const struct cmd_flag f_diagnose[] = {
	F("-o", "--output", "FMT", "text or json", "text json"),
	{ .l = NULL },
};
static const struct cmd_flag f_bundle[] = {
	F("-o", "--output", "FILE", "the tarball (default: NAME-bundle-TIME.tar.gz)", NULL),
	{ .l = NULL },
};
static const struct cmd_flag f_logs[] = {
	F("-c", "--container", "NAME", "container (default compute; engine: compute or serial)", "compute serial"),
	F("-f", "--follow", NULL, "follow new lines until the container instance ends", NULL),
	F("-p", "--previous", NULL, "the previous container instance", NULL),
	D(NULL, "--since", "DURATION", "only newer lines (5s, 2m, 3h)", 1000),
	F(NULL, "--tail", "N", "the last N lines (-1: all)", NULL),
	F(NULL, "--timestamps", NULL, "prefix each line with its time", NULL),
	{ .l = NULL },
};
static const struct cmd_flag f_wait[] = {
	F(NULL, "--for", "WHAT", "condition=COND[=VALUE], jsonpath='{...}'=VALUE, or delete", "condition= jsonpath= delete"),
	D(NULL, "--timeout", "DURATION", "give up after this long (default 30s; a bare number: seconds)", 1000),
	{ .l = NULL },
};
static const struct cmd_flag f_wait_only[] = { WAIT_FLAG, { .l = NULL } };
static const struct cmd_flag f_stop[] = {
	F(NULL, "--force", NULL, "power off at once", NULL),
	N(NULL, "--grace-period", "N", "seconds the guest gets to shut down"),
	WAIT_FLAG,
	{ .l = NULL },
};
static const struct cmd_flag f_apply[] = {
	F("-f", "--filename", "FILE", "a manifest file, a directory of them, or - (STDIN); repeatable", NULL),
	F("-R", "--recursive", NULL, "-f DIR: its subdirectories too", NULL),
	F(NULL, "--dry-run", "[MODE", "client (send nothing) or server (validated, nothing stored)", "client server none"),
	{ .l = NULL },
};
static const struct cmd_flag f_create[] = {
	F(NULL, "--dry-run", "[MODE", "client (send nothing) or server (validated, nothing stored)", "client server none"),
	{ .l = NULL },
};
static const struct cmd_flag f_drain[] = {
	D(NULL, "--timeout", "DURATION", "give up after this long (default: never, as kubectl drain; a bare number: seconds)",
	  1000),
	{ .l = NULL },
};
static const struct cmd_flag f_delete[] = {
	F("-f", "--filename", "FILE", "the objects of a manifest file, directory or - (STDIN), as kubectl delete -f",
	  NULL),
	F("-R", "--recursive", NULL, "-f DIR: its subdirectories too", NULL),
	F(NULL, "--dry-run", "[MODE", "-f: client or server", "client server none"),
	F(NULL, "--ignore-not-found", NULL, "-f: an absent object is no error", NULL),
	N(NULL, "--grace-period", "N", "seconds the guest gets to shut down"),
	F(NULL, "--force", NULL, "power off at once (--grace-period 0)", NULL),
	F(NULL, "--delete-volumes", NULL, "engine VMs: their disks too (an engine extension of the API)", NULL),
	WAIT_FLAG,
	{ .l = NULL },
};
static const struct cmd_flag f_migrate[] = {
	F(NULL, "--to", "NODE", "the target node or engine host", NULL),
	F(NULL, "--abort", NULL, "cancel the running migration", NULL),
	WAIT_FLAG,
	{ .l = NULL },
};
static const struct cmd_flag f_console[] = {
	D(NULL, "--timeout", "MINUTES", "wait this long for the VMI and the console (minutes as virtctl; 30s, 2m, 1h "
					"with a unit; default 5, 0: forever)", 60000),
	F(NULL, "--log", "FILE", "append every byte the guest sends to FILE", NULL),
	F(NULL, "--expect", "RE", "scripted: wait for this regular expression in the guest's output", NULL),
	F(NULL, "--send", "LINE", "scripted: type this line (steps run in the order given)", NULL),
	F(NULL, "--wait-stop", NULL, "scripted: then wait until the execution ended and the run strategy reacted", NULL),
	{ .l = NULL },
};
static const struct cmd_flag f_vnc[] = {
	F(NULL, "--scale", "MODE", "fit or 1:1", "fit 1:1"),
	F(NULL, "--colors", "MODE", "truecolor, 256 or mono", "truecolor 256 mono"),
	F(NULL, "--view-only", NULL, "send no keys", NULL),
	F(NULL, "--password-file", "FILE", "the display's VNC password", NULL),
	N(NULL, "--quality", "0-9", "JPEG quality asked of the server"),
	F(NULL, "--ws-protocol", "NAME", "WebSocket subprotocol (ws:// targets)", NULL),
	F(NULL, "--screenshot", "FILE.png", "write one frame as PNG and leave", NULL),
	F("-f", "--file", "FILE.png", "vnc screenshot TARGET (virtctl's): the PNG, - for stdout", NULL),
	F("-m", "--move-cursor", NULL, "vnc screenshot: move the pointer first to wake a screensaver", NULL),
	D(NULL, "--quiet-ms", "MS", "--screenshot: the screen has been still this long (default 500)", 1),
	D(NULL, "--timeout", "S", "--screenshot: give up after this long (default 30)", 1000),
	F(NULL, "--proxy-only", NULL, "serve a local port for an external viewer", NULL),
	N(NULL, "--port", "N", "--proxy-only: the port"),
	{ .l = NULL },
};

/* `kvcon engine VERB`: child rows of the engine's row (named "engine VERB"); get, console, vnc and the actions are
 * the top-level verbs on the engine's VMs (their flags, a bare NAME in -n's namespace), the actions' rows are
 * filled from the registry (engine_table). */
static const struct cmd_flag f_engine_reconcile[] = {
	D(NULL, "--for", "SECONDS", "keep reconciling this long, then leave once converged", 1000),
	{ .l = NULL },
};
static const struct cmd_flag f_engine_serve[] = {
	F(NULL, "--socket", "PATH", "the unix socket (default: the root's, see kvcon(1) FILES)", NULL),
	N(NULL, "--https", "PORT", "serve HTTPS on this port (default: the one chosen once; 0: any free port; a CA, a token)"),
	F(NULL, "--kubeconfig-out", "FILE", "with --https: write a kubeconfig for kubectl", NULL),
	D(NULL, "--idle-exit", "SECONDS", "leave after this long without a client and with nothing to do (0: never; "
					  "or 30s, 5m)", 1000),
	{ .l = NULL },
};
static const struct cmd_flag f_engine_kubeconfig[] = {
	F(NULL, "--merge", NULL, "merge it into ~/.kube/config (or $KUBECONFIG's first file) as context kvcon-engine",
	  NULL),
	{ .l = NULL },
};
#define MIGRATE_FLAGS                                                                                              \
	F(NULL, "--to", "HOST", "the target host (default: the only other one)", NULL),                             \
	N(NULL, "--bandwidth", "MiB/s", "limit the migration's bandwidth (0: none)"),                               \
	D(NULL, "--timeout", "S", "abort when not done by then (0: none)", 1000),                                    \
	F(NULL, "--auto-converge", NULL, "throttle the guest's vCPUs until it converges", NULL),                     \
	F(NULL, "--postcopy", NULL, "switch to post-copy when pre-copy does not converge", NULL),                    \
	F(NULL, "--copy-storage", NULL, "copy the disks too (no shared storage)", NULL),                             \
	F(NULL, "--migrate-uri", "URI", "the target's URI as the source host reaches it", NULL)
static const struct cmd_flag f_engine_migrate[] = {
	MIGRATE_FLAGS,
	F(NULL, "--offline", NULL, "a stopped VM: move its definition and record only", NULL),
	F(NULL, "--abort", NULL, "abort the running migration (the VM stays on its host)", NULL),
	F(NULL, "--quiet", NULL, "no progress lines", NULL),
	{ .l = NULL },
};
static const struct cmd_flag f_engine_drain[] = { MIGRATE_FLAGS, { .l = NULL } };
#define ENGINE_WAIT                                                                                                \
	F(NULL, "--no-wait", NULL, "send the request only", NULL),                                                  \
	D(NULL, "--timeout", "S", "wait this long for the effect (default 300; the same as --wait=S)", 1000), WAIT_FLAG
static const struct cmd_flag f_engine_wait[] = { ENGINE_WAIT, { .l = NULL } };
static const struct cmd_flag f_engine_stop[] = {
	F(NULL, "--force", NULL, "power off at once", NULL),
	N(NULL, "--grace-period", "N", "seconds the guest gets to shut down"),
	ENGINE_WAIT,
	{ .l = NULL },
};
static const struct cmd_flag f_engine_delete[] = {
	N(NULL, "--grace-period", "N", "seconds the guest gets to shut down"),
	F(NULL, "--force", NULL, "power off at once (--grace-period 0)", NULL),
	F(NULL, "--delete-volumes", NULL, "its persistentVolumeClaim files too", NULL),
	ENGINE_WAIT,
	{ .l = NULL },
};

#define ENGINE_ROW(name_, args_, summary_, flags_, fn_)                                                            \
	{ .name = "engine " name_, .args = args_, .summary = summary_, .flags = flags_, .operand = CMD_OP_NONE,      \
	  .fn = fn_ }
static const struct cmd_entry engine_rows[] = {
	ENGINE_ROW("apply", "-f FILE|DIR|- [-R] [--dry-run=client|server]",
		   "= kvcon apply on the engine (multi-document YAML or JSON)", f_apply,
		   cmd_engine_apply),
	ENGINE_ROW("get", "[KIND] [NAME] [-o FMT]", "= kvcon get KIND [NAME] on the engine (vm when no KIND; get event "
		   "NAME: its events)", f_get, cmd_engine_get),
	/* the actions' rows go here (engine_table) */
	{ .name = "" },
	ENGINE_ROW("console", "NAME [--timeout MIN] [--log FILE] [--expect RE] [--send LINE]... [--wait-stop]",
		   "= kvcon console NS/NAME on the engine (--timeout in minutes, or 30s)", f_console, cmd_engine_console),
	ENGINE_ROW("vnc", "NAME [--screenshot F.png|--proxy-only]", "= kvcon vnc NS/NAME on the engine", f_vnc,
		   cmd_engine_vnc),
	ENGINE_ROW("reconcile", "[--for SECONDS]", "run the reconciler, then leave", f_engine_reconcile,
		   cmd_engine_reconcile),
	ENGINE_ROW("serve", "[--socket PATH] [--https PORT] [--kubeconfig-out FILE] [--idle-exit SECONDS]",
		   "run the reconciler for good and serve the Kubernetes API (docs/ENGINE-SERVICE.md)", f_engine_serve,
		   engine_serve_cmd),
	ENGINE_ROW("kubeconfig", "[--merge]",
		   "print a kubeconfig for kubectl to the engine service's HTTPS (context kvcon-engine)",
		   f_engine_kubeconfig, cmd_engine_kubeconfig),
	ENGINE_ROW("pull", "IMAGE", "pull a containerDisk into the image cache (prints its digest)", NULL,
		   cmd_engine_pull),
	ENGINE_ROW("migrate", "NAME [--to HOST] [--bandwidth MiB/s] [--timeout S] ... | --abort NAME",
		   "live-migrate a VM to another engine host (--offline: a stopped one)", f_engine_migrate, migrate_cmd),
	ENGINE_ROW("drain", "HOST [--to HOST] [--bandwidth MiB/s] [--timeout S]", "migrate every running VM off HOST",
		   f_engine_drain, drain_cmd),
	{ 0 },
};

/* engine_rows with the actions' verbs of the registry (migrate is the engine's own) in place of the empty row */
static struct cmd_entry engine_verbs[sizeof engine_rows / sizeof engine_rows[0] + ACT_COUNT];

static const struct cmd_flag *engine_action_flags(enum action a)
{
	return a == ACT_STOP || a == ACT_RESTART ? f_engine_stop : a == ACT_DELETE ? f_engine_delete : f_engine_wait;
}

static void engine_table(void)
{
	static char names[ACT_COUNT][48];
	size_t n = 0;
	for (const struct cmd_entry *e = engine_rows; e->name; e++) {
		if (*e->name) {
			engine_verbs[n++] = *e;
			continue;
		}
		const struct action_def *a;
		for (size_t i = 0; (a = registry_action_at(i)) != NULL; i++) {
			if (!a->verb || a->act == ACT_MIGRATE)
				continue;
			snprintf(names[a->act], sizeof names[a->act], "engine %s", a->name);
			engine_verbs[n++] = (struct cmd_entry){ .name = names[a->act], .args = "NAME [--no-wait] [--timeout S]",
								.summary = a->summary, .flags = engine_action_flags(a->act),
								.operand = CMD_OP_NONE, .fn = cmd_engine_action };
		}
	}
}

static const struct cmd_flag f_portforward[] = {
	F(NULL, "--address", "ADDR[,ADDR]", "the local addresses to listen on (default 127.0.0.1)", NULL),
	F(NULL, "--stdio", NULL, "one connection on stdin and stdout (ssh's ProxyCommand)", NULL),
	{ .l = NULL },
};
#define SSH_FLAGS \
	F("-i", "--identity-file", "FILE", "the private key", NULL), \
	F("-l", "--username", "USER", "the guest's user (also USER@ before the target)", NULL), \
	N("-p", "--port", "PORT", "the guest's ssh port (default 22)"), \
	F("-t", "--local-ssh-opts", "OPT", "one more argument for the client (repeatable)", NULL), \
	F(NULL, "--known-hosts", "FILE", "the known_hosts file (default: the client's, host TYPE.NAME.NS)", NULL), \
	F(NULL, "--local-ssh", NULL, "the system's client (always; virtctl's flag)", NULL)
static const struct cmd_flag f_ssh[] = {
	SSH_FLAGS,
	F("-c", "--command", "COMMAND", "run this instead of a login shell", NULL),
	{ .l = NULL },
};
static const struct cmd_flag f_scp[] = {
	SSH_FLAGS,
	F("-r", "--recursive", NULL, "copy directories", NULL),
	F(NULL, "--preserve", NULL, "keep times and modes", NULL),
	{ .l = NULL },
};

static const struct cmd_flag f_credentials[] = {
	F("-u", "--user", "USER", "the guest's user", NULL),
	F("-f", "--file", "FILE", "add-ssh-key, remove-ssh-key: the SSH public key file", NULL),
	F(NULL, "--value", "KEY", "add-ssh-key, remove-ssh-key: the SSH public key itself", NULL),
	F("-p", "--password", "PASSWORD", "set-password: the password", NULL),
	F(NULL, "--secret", "NAME", "the Secret to change when the user has several", NULL),
	F(NULL, "--create-secret", NULL, "add-ssh-key: a new Secret owned by the VM (not while it runs, but --force)",
	  NULL),
	F(NULL, "--update-secret", NULL, "add-ssh-key: add to the user's Secret", NULL),
	F(NULL, "--force", NULL, "change a Secret the VM does not own; add a Secret to a running VM", NULL),
	{ .l = NULL },
};

/* The verbs into the guest (model/registry.c's guest_verbs): flags, run function and own short options by row. */
static const struct {
	const struct cmd_flag *flags;
	int (*fn)(int, char **);
	enum cmd_operand op;
	const char *own;
} guest_rows[GV_COUNT] = {
	[GV_PORT_FORWARD] = { f_portforward, cmd_portforward, CMD_OP_NONE, NULL },
	[GV_SSH] = { f_ssh, cmd_ssh, CMD_OP_NONE, "-c" },
	[GV_SCP] = { f_scp, cmd_scp, CMD_OP_NONE, NULL },
	[GV_GUESTOSINFO] = { NULL, cmd_guestinfo, CMD_OP_TARGET, NULL },
	[GV_USERLIST] = { NULL, cmd_guestinfo, CMD_OP_TARGET, NULL },
	[GV_FSLIST] = { NULL, cmd_guestinfo, CMD_OP_TARGET, NULL },
	[GV_CREDENTIALS] = { f_credentials, cmd_credentials, CMD_OP_NONE, NULL },
};

static const struct cmd_entry rows[] = {
	{ "version", NULL, "[--client]", "client version, and the server's where a cluster is configured", f_version,
	  CMD_OP_NONE, NULL, NULL, false, false, cmd_version, NULL },
	{ "get", NULL, "KIND[,KIND] [NAME...] [-o FMT] [-l SEL] [-w]",
	  "list objects like kubectl get, from clusters and engine hosts", f_get, CMD_OP_KIND_NAMES, NULL, NULL, false,
	  false, cmd_get, NULL },
	{ "help", NULL, "[VERB]", "this help, or a verb's", NULL, CMD_OP_VERB, NULL, NULL, false, false, cmd_help, NULL },
	{ "console", NULL, "NS/NAME [--timeout MIN] [--log FILE] [--expect RE] [--send LINE]...",
	  "the guest's serial console full-screen (Ctrl+] exits), or scripted",
	  f_console, CMD_OP_TARGET, NULL, NULL, false, false, cmd_console, NULL },
	{ "vnc", NULL, "NS/NAME|unix:PATH|tcp:HOST:PORT|ws://URL [--screenshot F.png|--proxy-only]",
	  "the guest display in the terminal", f_vnc,
	  CMD_OP_TARGET, NULL, NULL, false, false, cmd_vnc, NULL },
	{ "diagnose", NULL, "NS/NAME [-o text|json]", "walk a VM's four boundaries; exit 3 if one stalled", f_diagnose,
	  CMD_OP_VM_REF, NULL, NULL, false, false, cmd_diagnose, NULL },
	{ "describe", NULL, "vm|vmi|pod NS/NAME", "the object and its events in kubectl describe's layout", NULL,
	  CMD_OP_KIND_REF, NULL, NULL, false, false, cmd_describe, NULL },
	{ "bundle", NULL, "NS/NAME [-o FILE.tar.gz]", "evidence tarball: objects, describe, events, logs, diagnosis",
	  f_bundle, CMD_OP_VM_REF, NULL, NULL, false, false, cmd_bundle, NULL },
	{ "logs", NULL, "NS/NAME [-c CONTAINER] [-f] [-p] [--since D] [--tail N]",
	  "a launcher's (VM, VMI) or pod's container log; engine: compute (QEMU), serial", f_logs, CMD_OP_VM_REF, NULL,
	  "-c", false, false, cmd_logs, NULL },
	{ "wait", NULL, "vm|vmi NS/NAME --for=WHAT [--timeout D]",
	  "wait (watch) for condition=C, jsonpath=...=V or delete, like kubectl wait", f_wait, CMD_OP_KIND_REF, NULL,
	  NULL, false, false, cmd_wait, NULL },
	{ "lineage", NULL, "NS/NAME [-o text|json]", "the executions (VMI, launchers, nodes) of a VM", f_diagnose,
	  CMD_OP_VM_REF, NULL, NULL, false, false, cmd_lineage, NULL },
	{ "apply", NULL, "-f FILE|DIR|- [-R] [--dry-run=client|server]",
	  "create or update the objects of manifests (multi-document YAML), as kubectl apply -f", f_apply,
	  CMD_OP_NONE, NULL, NULL, false, false, cmd_apply, NULL },
	{ "create", NULL, "namespace NAME [--dry-run=client|server]", "create a namespace, as kubectl create namespace",
	  f_create, CMD_OP_WORDS, "namespace", NULL, false, false, cmd_create, NULL },
	{ "cordon", NULL, "NODE", "mark the node unschedulable (spec.unschedulable), as kubectl cordon", NULL, CMD_OP_NONE,
	  NULL, NULL, false, false, cmd_cordon, NULL },
	{ "uncordon", NULL, "NODE", "mark the node schedulable again, as kubectl uncordon", NULL, CMD_OP_NONE, NULL,
	  NULL, false, false, cmd_cordon, NULL },
	{ "drain", NULL, "NODE [--timeout D]",
	  "cordon, then evict its VMs' launcher pods (LiveMigrate: migrated; else stopped), as kubectl drain", f_drain,
	  CMD_OP_NONE, NULL, NULL, false, false, cmd_drain, NULL },
	/* the lifecycle actions' verbs go here, one per row of model/registry.c (action_rows) */
	{ "", NULL, NULL, NULL, NULL, CMD_OP_NONE, NULL, NULL, false, true, NULL, NULL },
	/* and the verbs into the guest, one per row of its guest_verbs */
	{ "", NULL, NULL, NULL, NULL, CMD_OP_NONE, "guest", NULL, false, true, NULL, NULL },
	{ "engine", NULL, "VERB ...", "the local engine: apply, serve, pull, migrate, drain, reconcile; get, start, "
				     "stop, console, ... (the verbs above on its VMs)", NULL,
	  CMD_OP_WORDS,
	  NULL, NULL, true, false, cmd_engine, engine_verbs },
	{ "completion", NULL, "bash|zsh", "the shell completion script (source <(kvcon completion bash))", NULL,
	  CMD_OP_WORDS, "bash zsh", NULL, false, false, cmd_completion, NULL },
	{ "__complete", NULL, "WORDS...", "completion candidates for the words typed after kvcon", NULL, CMD_OP_NONE,
	  NULL, NULL, true, true, cmd_complete, NULL },
	{ 0 },
};

/* An action's own flags beyond --wait (which every action with something to wait for takes). */
static const struct cmd_flag *action_flags(enum action a)
{
	switch (a) {
	case ACT_STOP:
	case ACT_RESTART:
		return f_stop;
	case ACT_MIGRATE:
		return f_migrate;
	case ACT_DELETE:
		return f_delete;
	default:
		return registry_action(a)->waits == WAIT_NONE ? NULL : f_wait_only;
	}
}

/* "NS/NAME [--force] [--grace-period N] [--wait[=SECONDS]]", from the flags */
static const char *action_synopsis(const struct cmd_flag *fl, char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "NS/NAME");
	for (; fl && fl->l && n < len; fl++) {
		if (fl->arg == NULL)
			n += (size_t)snprintf(buf + n, len - n, " [%s]", fl->l);
		else if (fl->arg[0] == '[')
			n += (size_t)snprintf(buf + n, len - n, " [%s[=%s]]", fl->l, fl->arg + 1);
		else
			n += (size_t)snprintf(buf + n, len - n, " [%s %s]", fl->l, fl->arg);
	}
	return buf;
}

/* The command table: rows, with the actions' verbs (model/registry.c) in place of the empty-named row. */
static const struct cmd_entry *table(void)
{
	static struct cmd_entry t[sizeof rows / sizeof rows[0] + ACT_COUNT + GV_COUNT];
	static char syn[ACT_COUNT][128];
	if (t[0].name)
		return t;
	engine_table();
	size_t n = 0;
	for (const struct cmd_entry *e = rows; e->name; e++) {
		if (*e->name) {
			t[n++] = *e;
			continue;
		}
		if (e->words && strcmp(e->words, "guest") == 0) {
			for (int i = 0; i < GV_COUNT; i++) {
				const struct guest_verb_def *g = registry_guest_verb((enum guest_verb)i);
				t[n++] = (struct cmd_entry){ g->name, NULL, g->synopsis, g->summary, guest_rows[i].flags,
							     guest_rows[i].op, NULL, guest_rows[i].own, false, false,
							     guest_rows[i].fn, NULL };
			}
			continue;
		}
		const struct action_def *a;
		for (size_t i = 0; (a = registry_action_at(i)) != NULL; i++) {
			if (!a->verb)
				continue;
			const struct cmd_flag *fl = action_flags(a->act);
			t[n++] = (struct cmd_entry){ a->name, a->aliases ? a->aliases[0] : NULL,
						     action_synopsis(fl, syn[a->act], sizeof syn[a->act]), a->summary, fl,
						     CMD_OP_VM_REF, NULL, NULL, false, false,
						     a->act == ACT_DELETE ? cmd_delete : cmd_action, NULL };
		}
	}
	return t;
}
#define commands (table())

const struct cmd_entry *cmd_find(const char *name)
{
	for (const struct cmd_entry *e = commands; e->name; e++)
		if (strcmp(e->name, name) == 0 || (e->alias && strcmp(e->alias, name) == 0))
			return e;
	return NULL;
}

size_t cmd_suggest(const char *name, const char **out, size_t max)
{
	const char *names[sizeof rows / sizeof rows[0] + ACT_COUNT + GV_COUNT];
	size_t n = 0;
	for (const struct cmd_entry *e = commands; e->name; e++)
		if (!e->hidden)
			names[n++] = e->name;
	return registry_suggest(name, names, n, out, max);
}

/* "-o, --output FMT" */
static void flag_left(const struct cmd_flag *f, char *out, size_t n)
{
	const char *arg = f->arg;
	if (arg == NULL)
		snprintf(out, n, "%s%s%s", f->s ? f->s : "    ", f->s ? ", " : "", f->l);
	else if (arg[0] == '[')
		snprintf(out, n, "%s%s%s[=%s]", f->s ? f->s : "    ", f->s ? ", " : "", f->l, arg + 1);
	else
		snprintf(out, n, "%s%s%s %s", f->s ? f->s : "    ", f->s ? ", " : "", f->l, arg);
}

static void print_flags(const struct cmd_flag *fl, FILE *f)
{
	for (; fl && fl->l; fl++) {
		if (fl->hidden)
			continue;
		char left[64];
		flag_left(fl, left, sizeof left);
		if (strlen(left) > 28)
			fprintf(f, "  %s\n  %-28s %s\n", left, "", fl->help);
		else
			fprintf(f, "  %-28s %s\n", left, fl->help);
	}
}

void cmd_usage_all(FILE *f)
{
	fprintf(f, "usage: kvcon [global options]                 open the dashboard\n"
		   "       kvcon [global options] COMMAND [args]\n\ncommands:\n");
	for (const struct cmd_entry *e = commands; e->name; e++) {
		if (e->hidden)
			continue;
		char left[96];
		snprintf(left, sizeof left, "%s %s", e->name, e->args);
		if (strlen(left) > 40)
			fprintf(f, "  %s\n  %-40s %s\n", left, "", e->summary);
		else
			fprintf(f, "  %-40s %s\n", left, e->summary);
	}
	fprintf(f, "\nglobal options:\n");
	print_flags(cmd_globals, f);
	fprintf(f, "\n'kvcon help COMMAND' for a command's flags. See kvcon(1) for keys, views and commands.\n");
}

const struct cmd_entry *cmd_child(const struct cmd_entry *e, const char *word)
{
	size_t pl = strlen(e->name);
	for (const struct cmd_entry *c = e->children; c && c->name; c++)
		if (strncmp(c->name, e->name, pl) == 0 && c->name[pl] == ' ' && strcmp(c->name + pl + 1, word) == 0)
			return c;
	return NULL;
}

void cmd_usage(const struct cmd_entry *e, FILE *f)
{
	if (e->children) {
		fprintf(f, "usage: kvcon %s %s\n%s.\n\nverbs:\n", e->name, e->args, e->summary);
		for (const struct cmd_entry *c = e->children; c->name; c++) {
			char left[160];
			snprintf(left, sizeof left, "%s %s", c->name, c->args);
			if (strlen(left) > 44)
				fprintf(f, "  kvcon %s\n  %-50s %s\n", left, "", c->summary);
			else
				fprintf(f, "  kvcon %-44s %s\n", left, c->summary);
		}
		fprintf(f, "\n'kvcon help %s VERB' for a verb's flags. Global options (kvcon --help) are accepted too.\n",
			e->name);
		return;
	}
	fprintf(f, "usage: kvcon %s %s\n%s%s%s.\n", e->name, e->args, e->summary, e->alias ? "; also " : "",
		e->alias ? e->alias : "");
	if (e->operand == CMD_OP_KIND_NAMES)
		print_kinds(f);
	if (e->flags) {
		fprintf(f, "\nflags:\n");
		print_flags(e->flags, f);
	}
	fprintf(f, "\nGlobal options (kvcon --help) are accepted too.\n");
}

/* "kinds: virtualmachines (vm), ...": every kind of the registry with its first short name. */
static void print_kinds(FILE *f)
{
	int col = fprintf(f, "kinds:");
	for (int i = 0; i < KIND_COUNT; i++) {
		const struct kind_def *k = registry_kind((enum kind_id)i);
		char w[96];
		int n = k->shorts[0] ? snprintf(w, sizeof w, " %s (%s)%s", k->plural, k->shorts[0], i + 1 < KIND_COUNT ? "," : "")
				     : snprintf(w, sizeof w, " %s%s", k->plural, i + 1 < KIND_COUNT ? "," : "");
		if (col + n > 110) {
			fprintf(f, "\n      ");
			col = 6;
		}
		col += fprintf(f, "%s", w);
	}
	fprintf(f, "\n");
}

void cmd_print_suggestions(const char *const *words, size_t n)
{
	if (n == 0)
		return;
	/* the words are the registry's and the command table's own (log_eprintf would escape the tab) */
	fprintf(stderr, "\nDid you mean this?\n");
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "\t%s\n", words[i]);
}

static int cmd_version(int argc, char **argv)
{
	struct args g;
	int p = args_parse_verb(argc, argv, &g);
	if (p == ARGS_OK && g.npos > 0) {
		char *e = util_escape_display(g.pos[0]);
		log_eprintf("error: unexpected argument '%s'\nSee 'kvcon version --help' for usage.\n", e);
		free(e);
		p = ARGS_ERR;
	}
	bool client_only = args_bool(&g, "--client");
	args_free(&g);
	if (p != ARGS_OK)
		return p == ARGS_HELP ? EXIT_OK : EXIT_USAGE;
	printf("Client Version: v%s\n", KVCON_VERSION);
	fflush(stdout);
	if (client_only)
		return EXIT_OK;
	char *ver = NULL, *err = NULL;
	int rc = kget_server_version(&ver, &err);
	if (rc == 0)
		printf("Server Version: %s\n", ver);
	else if (rc < 0)
		log_eprintf("error: %s\n", err);
	/* rc 1: no cluster configured; the client version is all there is */
	free(ver);
	free(err);
	return rc < 0 ? EXIT_API : EXIT_OK;
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		cmd_usage_all(stdout);
		return EXIT_OK;
	}
	const struct cmd_entry *e = cmd_find(argv[1]);
	if (e == NULL || e->hidden) {
		log_eprintf("error: unknown command \"%s\" for \"kvcon\"\n", argv[1]);
		return EXIT_USAGE;
	}
	if (argc >= 3 && e->children) {
		const struct cmd_entry *c = cmd_child(e, argv[2]);
		if (c == NULL) {
			char *w = util_escape_display(argv[2]);
			log_eprintf("error: unknown command \"%s\" for \"kvcon %s\"\n", w, e->name);
			free(w);
			return EXIT_USAGE;
		}
		cmd_usage(c, stdout);
		return EXIT_OK;
	}
	if (e->own_help) {
		char *av[] = { (char *)e->name, (char *)"--help", NULL };
		return e->fn(2, av);
	}
	cmd_usage(e, stdout);
	return EXIT_OK;
}

/* ---- completion ---- */

/* Every flag word of a table (both forms), space-separated, into b. */
static void flag_words(struct buf *b, const struct cmd_flag *fl)
{
	for (; fl && fl->l; fl++) {
		if (fl->hidden)
			continue;
		if (fl->s)
			buf_printf(b, "%s ", fl->s);
		buf_printf(b, "%s%s ", fl->l, fl->arg && fl->arg[0] == '[' ? "=" : "");
	}
}

/* The bash script: verbs and flags are in it (generated from the table); kinds, namespaces and names come from
 * `kvcon __complete` at the time of the <TAB>, with the words typed so far (so -n, --context and --kubeconfig
 * on the line are honoured). */
static void completion_bash(FILE *f)
{
	fprintf(f, "# kvcon bash completion (generated by `kvcon completion bash`; load with: source <(kvcon completion "
		   "bash))\n_kvcon()\n{\n\tlocal IFS=$'\\n'\n\tlocal -a c\n"
		   "\tc=($(\"${COMP_WORDS[0]}\" __complete \"${COMP_WORDS[@]:1:COMP_CWORD}\" 2>/dev/null))\n"
		   "\t# a value typed as NS/ or --flag= goes on: no space after it\n"
		   "\tif [ ${#c[@]} -eq 1 ]; then case ${c[0]} in */ | *=) compopt -o nospace 2>/dev/null ;; esac; fi\n"
		   "\tCOMPREPLY=(\"${c[@]}\")\n}\ncomplete -o default -F _kvcon kvcon\n");
}

static void completion_zsh(FILE *f)
{
	fprintf(f, "#compdef kvcon\n# kvcon zsh completion (generated by `kvcon completion zsh`; load with: source <(kvcon "
		   "completion zsh))\n_kvcon()\n{\n\tlocal -a c\n"
		   "\tc=(\"${(@f)$(\"${words[1]}\" __complete \"${(@)words[2,CURRENT]}\" 2>/dev/null)}\")\n"
		   "\tlocal -a plain cont\n\tlocal w\n\tfor w in $c; do\n\t\tcase $w in\n\t\t*/|*=) cont+=($w) ;;\n"
		   "\t\t?*) plain+=($w) ;;\n\t\tesac\n\tdone\n"
		   "\t(( ${#plain} )) && compadd -- $plain\n\t(( ${#cont} )) && compadd -S '' -- $cont\n\treturn 0\n}\n"
		   "if (( $+functions[compdef] )); then compdef _kvcon kvcon; fi\n");
}

static int cmd_completion(int argc, char **argv)
{
	if (argc != 2 || (strcmp(argv[1], "bash") != 0 && strcmp(argv[1], "zsh") != 0)) {
		log_eprintf("error: usage: kvcon completion bash|zsh\n");
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "bash") == 0)
		completion_bash(stdout);
	else
		completion_zsh(stdout);
	return EXIT_OK;
}

/* Prints the words of list (space-separated) that start with cur, one a line. */
static void put_words(const char *list, const char *cur)
{
	size_t cl = strlen(cur);
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, " ");
		if (n >= cl && strncmp(p, cur, cl) == 0 && n > 0)
			printf("%.*s\n", (int)n, p);
		p += n + (p[n] == ' ');
	}
}

/* Names from the cluster through kget (jsonpath, no store): kind in ns (NULL: every namespace), each line
 * "PREFIX" then the template's text; printed only when they start with cur. */
static void put_api(const char *kind, const char *ns, const char *tmpl, const char *cur)
{
	const struct kind_def *k = registry_kind_find(kind);
	if (k == NULL)
		return;
	struct kget_opts ko = { .nkinds = 1, .fmt = KGET_JSONPATH, .fmt_arg = tmpl, .timeout = 5, .ns_set = true,
				.ns = ns };
	ko.kinds[0] = k;
	/* kget prints to stdout: catch it in a pipe-less temp file, then filter */
	fflush(stdout);
	FILE *tmp = tmpfile();
	if (tmp == NULL)
		return;
	int saved = dup(1);
	dup2(fileno(tmp), 1);
	log_set_stderr_level(LOG_ERROR + 1);
	loop_init();
	kget_run(&ko);
	loop_fini();
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(tmp);
	char line[1024];
	size_t cl = strlen(cur);
	while (fgets(line, sizeof line, tmp)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] && strncmp(line, cur, cl) == 0)
			printf("%s\n", line);
	}
	fclose(tmp);
}

/* A global option's row for word w ("-n", "--namespace"), NULL when w is none. */
static const struct cmd_flag *global_of(const char *w)
{
	for (const struct cmd_flag *g = cmd_globals; g->l; g++)
		if ((g->s && strcmp(w, g->s) == 0) || strcmp(w, g->l) == 0)
			return g;
	return NULL;
}

static const struct cmd_flag *flag_of(const struct cmd_flag *fl, const char *w)
{
	for (; fl && fl->l; fl++)
		if ((fl->s && strcmp(w, fl->s) == 0) || strcmp(w, fl->l) == 0)
			return fl;
	return NULL;
}

/* kvcon __complete WORD... CUR: the words typed after `kvcon` (the last is the one being completed, maybe
 * empty); prints the candidates, one a line. Global options on the line (-n, --context, --kubeconfig) are
 * honoured for the lookups; main does not strip them for this verb. */
static int cmd_complete(int argc, char **argv)
{
	struct kvcon_opts *o = opts_global();
	const char *cur = argc > 1 ? argv[argc - 1] : "";
	const struct cmd_entry *verb = NULL, *sub = NULL; /* sub: `kvcon engine VERB`'s row */
	const char *ns = NULL;
	const char *operands[8];
	int nops = 0;
	const struct cmd_flag *want = NULL; /* the flag whose value is being typed */
	for (int i = 1; i < argc - 1; i++) {
		const char *w = argv[i];
		const struct cmd_flag *g = global_of(w), *f = verb ? flag_of(sub ? sub->flags : verb->flags, w) : NULL;
		if (f == NULL && g == NULL && w[0] == '-')
			continue; /* --flag=value, -nNS, ... */
		if (f || g) {
			const struct cmd_flag *x = f ? f : g;
			if (x->arg && x->arg[0] != '[') {
				if (i + 1 == argc - 1) {
					want = x;
					break;
				}
				const char *v = argv[++i], *err = NULL;
				if (g && g->set && (f == NULL || f->hidden)) /* as main applies it (logs -c: its own) */
					g->set(o, g, v, &err);         /* (a bad --context: completion goes on without) */
			}
			continue;
		}
		if (verb == NULL) {
			verb = cmd_find(w);
			if (verb == NULL)
				return EXIT_OK;
		} else if (verb->children && sub == NULL && nops == 0 && (sub = cmd_child(verb, w)) != NULL) {
			nops++; /* the sub-verb: its flags from here on */
		} else if (nops < (int)(sizeof operands / sizeof operands[0])) {
			operands[nops++] = w;
		}
	}
	ns = o->ns;
	if (want) {
		if (strcmp(want->l, "--namespace") == 0)
			put_api("namespace", NULL, "{range .items[*]}{.metadata.name}{\"\\n\"}{end}", cur);
		else if (strcmp(want->l, "--context") == 0 || strcmp(want->l, "--kubeconfig") == 0 ||
			 want->values == NULL)
			; /* files and contexts: the shell's default */
		else
			put_words(want->values, cur);
		return EXIT_OK;
	}
	if (cur[0] == '-') {
		struct buf b;
		buf_init(&b);
		if (verb)
			flag_words(&b, sub ? sub->flags : verb->flags);
		flag_words(&b, cmd_globals);
		buf_add(&b, "", 0);
		put_words(b.data, cur);
		buf_free(&b);
		return EXIT_OK;
	}
	if (verb == NULL) {
		for (const struct cmd_entry *e = commands; e->name; e++)
			if (!e->hidden)
				put_words(e->name, cur);
		return EXIT_OK;
	}
	const char *ns_name = "{range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}";
	const char *name_only = "{range .items[*]}{.metadata.name}{\"\\n\"}{end}";
	switch (verb->operand) {
	case CMD_OP_NONE:
		break;
	case CMD_OP_WORDS:
		if (nops == 0 && verb->words)
			put_words(verb->words, cur);
		for (const struct cmd_entry *c = verb->children; nops == 0 && c && c->name; c++) /* engine's verbs */
			put_words(c->name + strlen(verb->name) + 1, cur);
		break;
	case CMD_OP_VERB:
		if (nops == 0)
			for (const struct cmd_entry *e = commands; e->name; e++)
				if (!e->hidden)
					put_words(e->name, cur);
		break;
	case CMD_OP_KIND_NAMES:
		if (nops == 0) {
			put_words(registry_kind_words(), cur);
		} else {
			/* the names of the first kind named, in -n's namespace (the context's without it) */
			char kind[64];
			snprintf(kind, sizeof kind, "%.*s", (int)strcspn(operands[0], ","), operands[0]);
			/* "": the context's namespace, as kget uses it when -n is not given */
			put_api(kind, ns ? ns : "", name_only, cur);
		}
		break;
	case CMD_OP_KIND_REF:
		if (nops == 0) {
			put_words("vm vmi pod", cur);
			break;
		}
		if (nops == 1)
			put_api(operands[0], ns ? ns : NULL, ns ? name_only : ns_name, cur);
		break;
	case CMD_OP_VM_REF:
	case CMD_OP_TARGET:
		if (nops == 0)
			put_api(verb->operand == CMD_OP_TARGET ? "vmi" : "vm", ns ? ns : NULL, ns ? name_only : ns_name,
				cur);
		break;
	}
	return EXIT_OK;
}
