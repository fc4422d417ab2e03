/* One column table per kind (VM, VMI, launcher pod, event), without curses: header, width hints, alignment,
 * where the column shows, a cell function that turns a model object into text, a sort order, and the same cell
 * over the API object with the kind's server-side Table (meta.k8s.io/v1: KubeVirt's printer columns for VMs and
 * VMIs, kubectl's built-in ones for pods and events). The dashboard's lists (ui/lists.c, ui/table.c) draw them;
 * `kvcon get` on the store and `kvcon engine get` print them as kubectl does (columns_print); the engine service
 * (apiserver/apisrv.c) serves their Table (columns_api_defs, columns_api_cells), and `kvcon get` prints the engine's
 * rows with it. The server-side Table of `kvcon get` against a cluster (the server's printer columns,
 * kube/kget.c) is not these: the server decides those. */
#ifndef KVCON_MODEL_COLUMNS_H
#define KVCON_MODEL_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "model/obj.h"

struct json_object;
struct store;

/* What a cell's text means to a reader's eye; the dashboard picks the colour. */
enum col_tone {
	COL_TONE_NONE,
	COL_TONE_STATUS, /* the text's first word is a status word (Running, True, Failed, Warning...) */
	COL_TONE_WAIT,   /* something to watch (restarts) */
	COL_TONE_BAD,    /* a failure (a Warning event's reason) */
};

struct col_ctx {
	const struct store *st; /* joins (a VM's VMI, a pod's VMI); may be NULL */
	int64_t now;            /* wall clock seconds, for ages */
};

enum {
	COL_ALL_NS = 1u << 0,       /* dashboard: only when every namespace is shown */
	COL_MULTI_SOURCE = 1u << 1, /* dashboard: only with more than one live source */
	COL_GET_ONLY = 1u << 2,     /* never on the dashboard (only a `get` column) */
	COL_JOINED = 1u << 3,       /* reads an object of another kind (a change of it re-sorts) */
	COL_NONE = 1u << 4,         /* `get` prints <none> for an empty cell (kubectl's built-in printers) */
};

struct column {
	const char *title;
	int minw, maxw; /* dashboard width hints (maxw 0: none) */
	bool right;     /* right-aligned (numbers, ages) */
	int sort_key;   /* dashboard: shift+letter that sorts by this column ('N'), 0: none */
	unsigned flags; /* COL_* */
	/* Writes the cell's text (empty when there is no value) into buf; returns its tone. Text is raw: the
	 * printer escapes it. */
	enum col_tone (*cell)(const struct col_ctx *c, const struct obj *o, char *buf, size_t len);
	/* Orders two rows by this column; NULL compares the cell text. */
	int (*cmp)(const struct obj *a, const struct obj *b);
	/* The same cell from the kind's API object (the server-side Table): a new reference, NULL where the
	 * printer column's JSONPath finds nothing; now is the wall clock in seconds. NULL: not a Table column. */
	struct json_object *(*api_cell)(struct json_object *o, int64_t now);
};

/* One column of the kind's server-side Table: a column of the table (its api_cell), or one that only the
 * server's Table has (col -1, cell). */
struct api_pick {
	int col;
	const char *name, *type, *format; /* the column definition: "Live-Migratable", "date", "name" */
	int priority;                     /* 1: kubectl shows it with -o wide only */
	struct json_object *(*cell)(struct json_object *o, int64_t now);
};

/* `kvcon get`'s use of a column: which, and whether only with -o wide. */
struct col_pick {
	unsigned char col;
	bool wide;
};

struct column_table {
	enum obj_kind kind;
	const struct column *cols; /* in the dashboard's order */
	size_t ncols;
	int default_sort;          /* the dashboard's default sort column */
	const struct col_pick *get; /* kubectl's columns for `get` (NAMESPACE first with -A, not listed) */
	size_t nget;
	size_t ns_col;             /* the NAMESPACE column */
	const struct api_pick *api; /* the server-side Table's columns, in its order */
	size_t napi;
};

extern const struct column_table columns_vm, columns_vmi, columns_pod, columns_event;

/* The table of a kind (OBJ_VM..OBJ_EVENT). */
const struct column_table *columns_table(enum obj_kind kind);

/* The server-side Table's columnDefinitions of t (name, type, format, description, priority); a new array. */
struct json_object *columns_api_defs(const struct column_table *t);
/* One row's cells of that Table from the API object o (a new array, one cell per definition). */
struct json_object *columns_api_cells(const struct column_table *t, struct json_object *o, int64_t now);

struct columns_print_opts {
	bool wide;    /* -o wide: the wide columns too */
	bool all_ns;  /* -A: NAMESPACE first */
	bool header;  /* the header line */
	bool source;  /* a last SOURCE column (rows of several sources: a cluster and the engine) */
	/* in and out, COLUMNS_MAX entries or NULL: each column's width so far, kept across calls. kubectl get -w
	 * prints later rows with the widest cell seen since its first page (its tabwriter's RememberWidths): a
	 * longer value widens the column from its row on, a shorter one leaves it as wide. */
	size_t *widths;
};
#define COLUMNS_MAX 32

/* Prints objs as `kubectl get` does: header, then one row each, cells padded to the widest of the column (and
 * of po->widths) plus three spaces, trailing blanks trimmed, text escaped for the terminal. Appends to out. */
void columns_print(const struct column_table *t, const struct obj *const *objs, size_t n,
		   const struct columns_print_opts *po, const struct col_ctx *c, struct buf *out);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The column titled title (its first), or NULL. */
const struct column *columns_find(const struct column_table *t, const char *title);

#endif
