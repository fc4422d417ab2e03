/* List views over the store (VMs, VMIs, launcher pods, events): const column tables, a filtered and sorted index
 * of rows kept up to date from store changes (pointers fixed in place; re-filtered and re-sorted only when the
 * store moved, at most TABLE_RESORT_HZ times a second), a visible window computed from the index, selection,
 * `/` filters and shift+letter sorting. */
#ifndef KVCON_UI_TABLE_H
#define KVCON_UI_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "model/columns.h"
#include "model/obj.h"
#include "ui/view.h"

struct store;

#define TABLE_RESORT_HZ 4
#define TABLE_FLASH_MS 1500

struct table_spec {
	const char *name;     /* "vm": the `:` command */
	const char *title;    /* "VirtualMachines" */
	enum obj_kind kind;
	const struct column_table *tab; /* the kind's columns (model/columns.h); tab->default_sort first */
	bool default_desc;
	uint32_t also;        /* 1 << kind of other kinds whose changes alter cells (the VM list shows VMI fields) */
	/* The state fields whose change makes a row flash (returns true when they differ). */
	bool (*state_changed)(const struct obj *old, const struct obj *new_);
	/* The VM a row stands for (actions, enter); NULL when none. */
	struct obj *(*row_vm)(const struct store *st, const struct obj *o);
};

extern const struct table_spec table_vm_spec, table_vmi_spec, table_pod_spec, table_event_spec;

struct view *table_view_new(const struct table_spec *spec);
/* The spec of a table view, or NULL when v is not one. */
const struct table_spec *table_view_spec(const struct view *v);
/* The selected row's object, or NULL. */
struct obj *table_view_selected(struct view *v);
/* Applies a `/` filter text to a table view; returns 0 or -1 with *err (caller frees). */
int table_view_set_filter(struct view *v, const char *text, char **err);
/* Selects the row of this object when present. */
void table_view_select(struct view *v, const struct obj *o);
/* The key table every list shares (help, man page check). */
const struct view_key *table_view_keys(void);

/* Filters (`/text`, `/!text`, `/-l k=v,k2!=v2,k3`): parsed once, matched per row. */
struct table_label_req {
	char *key, *value; /* value NULL: key must exist */
	bool neg;
};
struct table_filter {
	bool active;
	bool negate;
	char *text;                  /* substring, case-insensitive; NULL with labels */
	struct table_label_req *labels;
	int nlabels;
};

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
void table_filter_free(struct table_filter *f);
/* Does the row (o, with its formatted cells joined in rowtext) pass? */
bool table_filter_match(const struct table_filter *f, const struct obj *o, const char *rowtext);
int table_filter_parse(const char *s, struct table_filter *f, char **err);
/* Column widths for a frame: fills w[ncols] (0 = hidden) so that they fit into width, from the header and the
 * given cell texts (cells[row * ncols + col]); the sorted column gets room for its arrow. Returns the total. */
int table_layout(const struct column *cols, size_t ncols, const bool *shown, char *const *cells, size_t nrows,
		 int width, int sort_col, int *w);
size_t table_view_builds(const struct view *v);
/* Row i of the index (NULL past the end), and how many times the index was built (tests). */
struct obj *table_view_row(struct view *v, size_t i);
/* Rows currently in the index. */
size_t table_view_rows(struct view *v);
/* Row i as the index holds it now, without building a stale index again (NULL past the end). */
struct obj *table_view_row_now(struct view *v, size_t i);

#endif
