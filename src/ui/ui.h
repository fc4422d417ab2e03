/* The dashboard: `kvcon` with no subcommand. ui_main() opens the sources (kube contexts, the local engine),
 * takes the terminal and runs the loop until `:q`, Ctrl+C or SIGTERM. The other functions are what views use:
 * the store, the status line, confirmations and the namespace scope (a row's actions: ui/actions.h). */
#ifndef KVCON_UI_UI_H
#define KVCON_UI_UI_H

#include <stdbool.h>
#include <stdint.h>

#include "model/obj.h"
#include "model/source.h"

struct store;
struct lineage;

int ui_main(void);
/* util_now_ms() when the dashboard started (first-paint figures). */
uint64_t ui_start_ms(void);

struct store *ui_store(void);
/* The execution history recorder (NULL before ui_run). */
struct lineage *ui_lineage(void);
/* Removes every object of src from the store (a context switch, a re-watch of another namespace) without
 * recording those removals as ends of executions in the lineage. */
void ui_forget_source(struct source *src);
/* A frame is due. */
void ui_dirty(void);
/* Status line message (errors shown in the error colour until the next key). */
void ui_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void ui_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool ui_readonly(void);
/* Asks `question [y/N]` on the status line; yes(arg) runs on 'y'. free_arg(arg) runs either way (may be NULL). */
void ui_confirm(const char *question, void (*yes)(void *arg), void *arg, void (*free_arg)(void *arg));
/* Asks for a line of text on the status line (`label` shown before it); done(arg, text) on enter, nothing on
 * esc. complete(arg, prefix, i) returns the i-th completion of prefix (NULL when no more); may be NULL. */
void ui_prompt(const char *label, void (*done)(void *arg, const char *text),
	       const char *(*complete)(void *arg, const char *prefix, int i), void *arg);
/* The namespace the lists show; NULL for all namespaces. */
const char *ui_namespace(void);
/* The namespace the lists show: the one chosen, else the one every source is narrowed to (`:ns all` for a user
 * who may only list the context's namespace shows that one, as the header's Scope says). NULL: all. */
const char *ui_shown_namespace(void);
void ui_set_namespace(const char *ns);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Runs the dashboard on an existing store and sources (ui_main after opening the sources; tests feed their own). */
int ui_run(struct store *st);
/* Uses st as the dashboard's store without running it (unit tests drive views directly). */
void ui_use_store(struct store *st);

#endif
