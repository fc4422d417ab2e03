/* `:` commands and their completion. */
#include "ui/clusterlist.h"
#include "ui/cmdline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/actions.h"
#include "ui/forwards.h"
#include "ui/help.h"
#include "ui/nsctx.h"
#include "ui/sources.h"
#include "ui/table.h"
#include "ui/ui.h"
#include "ui/view.h"

static int open_list(const struct table_spec *spec)
{
	view_replace_all(table_view_new(spec));
	return 0;
}

static int c_vm(const char *arg)
{
	if (arg == NULL || *arg == '\0')
		return open_list(&table_vm_spec);
	/* :vm ns/name (or name in the current namespace) opens that VM */
	char ns[256], name[512];
	const char *slash = strchr(arg, '/');
	if (slash) {
		snprintf(ns, sizeof ns, "%.*s", (int)(slash - arg), arg);
		snprintf(name, sizeof name, "%s", slash + 1);
	} else {
		snprintf(ns, sizeof ns, "%s", ui_namespace() ? ui_namespace() : "default");
		snprintf(name, sizeof name, "%s", arg);
	}
	for (size_t s = 0; s < source_count(); s++) {
		struct obj *vm = store_find(ui_store(), source_get(s), OBJ_VM, ns, name);
		if (vm) {
			if (!table_view_spec(view_top()) || table_view_spec(view_top()) != &table_vm_spec)
				open_list(&table_vm_spec);
			table_view_select(view_top(), vm);
			ui_open_vm(vm);
			return 0;
		}
	}
	ui_error("vm %s/%s not found", ns, name);
	return -1;
}

static int c_vmi(const char *arg)
{
	(void)arg;
	return open_list(&table_vmi_spec);
}

static int c_pod(const char *arg)
{
	(void)arg;
	return open_list(&table_pod_spec);
}

static int c_events(const char *arg)
{
	(void)arg;
	return open_list(&table_event_spec);
}

static int c_node(const char *arg)
{
	(void)arg;
	view_replace_all(clusterlist_nodes_new());
	return 0;
}

static int c_vmim(const char *arg)
{
	(void)arg;
	view_replace_all(clusterlist_vmims_new());
	return 0;
}

static int c_pvc(const char *arg)
{
	(void)arg;
	view_replace_all(clusterlist_pvcs_new());
	return 0;
}

static int c_vmirs(const char *arg)
{
	(void)arg;
	view_replace_all(clusterlist_vmirs_new());
	return 0;
}

static int c_dv(const char *arg)
{
	(void)arg;
	view_replace_all(clusterlist_dvs_new());
	return 0;
}

static int c_pf(const char *arg)
{
	(void)arg;
	view_replace_all(forwards_view_new());
	return 0;
}

static int c_ns(const char *arg)
{
	if (arg == NULL || *arg == '\0') {
		view_push(nsctx_ns_view_new());
		return 0;
	}
	ui_set_namespace(arg);
	ui_message("namespace: %s", ui_namespace() ? ui_namespace() : "all");
	return 0;
}

static int c_ctx(const char *arg)
{
	if (arg == NULL || *arg == '\0') {
		view_push(nsctx_ctx_view_new());
		return 0;
	}
	char *err = NULL;
	if (sources_set_context(arg, &err) < 0) {
		ui_error("context %s: %s", arg, err ? err : "cannot switch");
		free(err);
		return -1;
	}
	ui_message("context: %s", arg);
	return 0;
}

static int c_quit(const char *arg)
{
	(void)arg;
	loop_quit(0);
	return 0;
}

static int c_help(const char *arg)
{
	(void)arg;
	view_push(help_view_new(view_focused()));
	return 0;
}

/* ---- completion sources ---- */

static const char *nth_match(const char *const *cands, size_t n, const char *prefix, int i)
{
	size_t pl = strlen(prefix);
	for (size_t k = 0; k < n; k++)
		if (strncmp(cands[k], prefix, pl) == 0 && i-- == 0)
			return cands[k];
	return NULL;
}

static const char *comp_ns(const char *prefix, int i)
{
	/* the first tab asks the clusters for their namespace lists too (a later tab offers them) */
	static bool asked;
	if (!asked) {
		asked = true;
		nsctx_refresh();
	}
	size_t n;
	const char *const *names = nsctx_namespaces(&n);
	return nth_match(names, n, prefix, i);
}

static const char *comp_ctx(const char *prefix, int i)
{
	size_t n;
	const char *const *names = sources_context_names(&n);
	return nth_match(names, n, prefix, i);
}

static const char *comp_vm(const char *prefix, int i)
{
	static char buf[768];
	size_t pl = strlen(prefix);
	for (size_t s = 0; s < source_count(); s++) {
		size_t n;
		struct obj *const *vms = store_objs(ui_store(), source_get(s), OBJ_VM, &n);
		for (size_t k = 0; k < n; k++) {
			snprintf(buf, sizeof buf, "%s/%s", vms[k]->ns, vms[k]->name);
			if (strncmp(buf, prefix, pl) == 0 && i-- == 0)
				return buf;
		}
	}
	return NULL;
}

/* The rows that list a kind are named by its view (model/registry.c); every name of the kind is an alias. */
const struct cmdline_entry cmdline_cmds[] = {
	{ "vm", NULL, "[NS/NAME]", "VM list; with NS/NAME open that VM's view", c_vm, comp_vm },
	{ "vmi", NULL, "", "VMI list", c_vmi, NULL },
	{ "pod", NULL, "", "virt-launcher pod list", c_pod, NULL },
	{ "events", NULL, "", "event list", c_events, NULL },
	{ "node", NULL, "", "node list: Ready, schedulable for VMs, KVM capacity, CPU and memory requested and allocatable (as kubectl describe node), VMIs on each (enter: those VMIs)",
	  c_node, NULL },
	{ "vmim", NULL, "", "live migrations: phase, VMI, source, target, start, duration (enter: the VM)", c_vmim,
	  NULL },
	{ "pvc", NULL, "", "PVCs: status, volume, capacity, access modes, storage class (enter: YAML)", c_pvc, NULL },
	{ "dv", NULL, "", "DataVolumes: phase, progress, restarts (enter: YAML)", c_dv, NULL },
	{ "vmirs", NULL, "", "VMI replica sets: desired, current, ready, members and their phases (enter: the members' VMIs)",
	  c_vmirs, NULL },
	{ "pf", "portforward port-forward", "", "port forwards: VM, local and guest port, connections, bytes (ctrl-d stops)",
	  c_pf, NULL },
	{ "ns", NULL, "[NAME|all]", "namespace list; with NAME show only that namespace", c_ns, comp_ns },
	{ "ctx", "context contexts", "[NAME]", "context list; with NAME switch to that kube context", c_ctx,
	  comp_ctx },
	{ "help", "h", "", "help for the current view", c_help, NULL },
	{ "q", "quit q! exit", "", "quit kvcon", c_quit, NULL },
};
const size_t cmdline_ncmds = sizeof cmdline_cmds / sizeof cmdline_cmds[0];

/* The kind whose view the row is, NULL when it lists none. */
static const struct kind_def *row_kind(const struct cmdline_entry *c)
{
	for (int k = 0; k < KIND_COUNT; k++)
		if (util_str_eq(registry_kind((enum kind_id)k)->view, c->name))
			return registry_kind((enum kind_id)k);
	return NULL;
}

const char *cmdline_aliases(const struct cmdline_entry *c)
{
	static char buf[512];
	const struct kind_def *k = row_kind(c);
	if (k == NULL)
		return c->aliases;
	const char *words[16];
	size_t n = 0;
	for (const char *const *a = k->shorts; *a; a++)
		words[n++] = *a;
	words[n++] = k->singular;
	words[n++] = k->plural;
	for (const char *const *a = k->aliases; a && *a; a++)
		words[n++] = *a;
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (strcmp(words[i], c->name) != 0)
			len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? " " : "", words[i]);
	return buf;
}

static bool name_is(const struct cmdline_entry *c, const char *w, size_t wl)
{
	if (strlen(c->name) == wl && strncmp(c->name, w, wl) == 0)
		return true;
	const char *a = cmdline_aliases(c);
	a = a ? a : "";
	while (*a) {
		size_t al = strcspn(a, " ");
		if (al == wl && strncmp(a, w, wl) == 0)
			return true;
		a += al;
		a += strspn(a, " ");
	}
	return false;
}

int cmdline_run(const char *line)
{
	while (*line == ' ' || *line == ':')
		line++;
	size_t wl = strcspn(line, " ");
	if (wl == 0)
		return 0;
	const char *arg = line + wl;
	while (*arg == ' ')
		arg++;
	char argbuf[512];
	snprintf(argbuf, sizeof argbuf, "%s", arg);
	size_t al = strlen(argbuf);
	while (al && argbuf[al - 1] == ' ')
		argbuf[--al] = '\0';
	for (size_t i = 0; i < cmdline_ncmds; i++)
		if (name_is(&cmdline_cmds[i], line, wl))
			return cmdline_cmds[i].fn(argbuf);
	ui_error("unknown command '%.*s' (try :help)", (int)wl, line);
	return -1;
}

void cmdline_done(void *arg, const char *text)
{
	(void)arg;
	cmdline_run(text);
}

const char *cmdline_complete(void *arg, const char *prefix, int i)
{
	(void)arg;
	static char buf[1024];
	const char *sp = strchr(prefix, ' ');
	if (sp == NULL) { /* the command word */
		size_t pl = strlen(prefix);
		for (size_t k = 0; k < cmdline_ncmds; k++)
			if (strncmp(cmdline_cmds[k].name, prefix, pl) == 0 && i-- == 0)
				return cmdline_cmds[k].name;
		return NULL;
	}
	for (size_t k = 0; k < cmdline_ncmds; k++) {
		if (!name_is(&cmdline_cmds[k], prefix, (size_t)(sp - prefix)) || !cmdline_cmds[k].complete)
			continue;
		const char *a = sp;
		while (*a == ' ')
			a++;
		const char *c = cmdline_cmds[k].complete(a, i);
		if (c == NULL)
			return NULL;
		snprintf(buf, sizeof buf, "%s %s", cmdline_cmds[k].name, c);
		return buf;
	}
	return NULL;
}
