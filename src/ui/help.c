/* Help text from the key and command tables. */
#include "ui/help.h"

#include <stdio.h>
#include <string.h>

#include "model/registry.h"
#include "ui/clusterlist.h"
#include "ui/cmdline.h"
#include "ui/forwards.h"
#include "ui/log_view.h"
#include "ui/pager.h"
#include "ui/table.h"
#include "ui/vmview.h"

static void keys_section(struct buf *out, const char *heading, const struct view_key *keys)
{
	if (keys == NULL || keys->key == 0)
		return;
	buf_printf(out, "%s\n", heading);
	for (const struct view_key *k = keys; k->key; k++)
		buf_printf(out, "  %-10s %s\n", k->label, k->help);
	buf_add_str(out, "\n");
}

/* The lifecycle actions' keys (model/registry.c), taken by every view that has a VM */
static void actions_section(struct buf *out)
{
	buf_add_str(out, "Actions (VM views and lists; on a list, rows of the kinds each applies to)\n");
	const struct action_def *a;
	for (size_t i = 0; (a = registry_action_at(i)) != NULL; i++)
		if (a->key)
			buf_printf(out, "  %-10s %s\n", a->key_label, a->key_help);
	for (int i = 0; i < GV_COUNT; i++) {
		const struct guest_verb_def *g = registry_guest_verb((enum guest_verb)i);
		if (g->key)
			buf_printf(out, "  %-10s %s\n", g->key_label, g->key_help);
	}
	buf_add_str(out, "\n");
}

static void panes_section(struct buf *out)
{
	buf_add_str(out, "Panes (VM views and lists)\n");
	for (size_t i = 0; i < view_npanes; i++)
		buf_printf(out, "  %-10c %s%s\n", view_panes[i].key, view_panes[i].help,
			   view_panes[i].open ? "" : " (not in this build)");
	buf_add_str(out, "\n");
}

void help_text(struct view *v, struct buf *out)
{
	char title[128] = "";
	if (v && v->ops->title)
		v->ops->title(v, title, sizeof title);
	if (v) {
		char h[160];
		snprintf(h, sizeof h, "Keys of this view (%s)", title[0] ? title : v->ops->name);
		keys_section(out, h, v->ops->keys);
		if (v->ops->target_vm)
			actions_section(out);
		if (table_view_spec(v) || vmview_is(v))
			panes_section(out);
	} else {
		keys_section(out, "List views (VMs, VMIs, pods, events)", table_view_keys());
		keys_section(out, "VM view", vmview_keys());
		keys_section(out, "Pager (help, YAML, walkthrough)", pager_keys_table());
		keys_section(out, "Log pane", log_view_keys());
		keys_section(out, "Node list (:node)", clusterlist_node_keys());
		keys_section(out, "Migration list (:vmim)", clusterlist_vmim_keys());
		keys_section(out, "PVC and DataVolume lists (:pvc, :dv)", clusterlist_storage_keys());
		keys_section(out, "Replica set list (:vmirs)", clusterlist_vmirs_keys());
		keys_section(out, "Port forwards (:pf)", forwards_keys);
		actions_section(out);
		panes_section(out);
	}
	keys_section(out, "Everywhere", ui_global_keys);
	buf_add_str(out, "Commands (after :)\n");
	for (size_t i = 0; i < cmdline_ncmds; i++) {
		char left[64];
		snprintf(left, sizeof left, "%s %s", cmdline_cmds[i].name, cmdline_cmds[i].args);
		buf_printf(out, "  %-18s %s\n", left, cmdline_cmds[i].help);
	}
}

struct view *help_view_new(struct view *for_view)
{
	struct buf b;
	buf_init(&b);
	help_text(for_view, &b);
	struct view *v = pager_new("Help", b.data);
	buf_free(&b);
	return v;
}
