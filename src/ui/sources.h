/* Where the dashboard's objects come from: the config file ($XDG_CONFIG_HOME/kvcon/config: `theme = NAME`,
 * `readonly = true`), which sources to open (kube context(s), the local engine) and switching context and
 * namespace scope. */
#ifndef KVCON_UI_SOURCES_H
#define KVCON_UI_SOURCES_H

/* The dashboard's watches are read at most every SOURCES_WATCH_BATCH_MS (kube_http_req.batch_ms), one frame of
 * those the cluster's changes alone ask for (SCREEN_STORE_FPS): under churn a batch of events costs one wakeup and
 * one pass instead of each event its own, while nothing else is asked of the server (an action, a list, a log is
 * read at once). The first event after a quiet moment is read as it comes. */
#define SOURCES_WATCH_BATCH_MS 100

#include <stdbool.h>
#include <stddef.h>

struct store;

void sources_load_config(void);
const char *sources_config_theme(void);   /* NULL when unset */
bool sources_config_readonly(void);

/* Opens the sources the options ask for (see kvcon(1)): kube with a kubeconfig or --context, the engine by
 * default without one or with -c. Returns 0 (even when a source failed: its health says why), -1 when nothing
 * at all could be opened. */
int sources_open(struct store *st, char **err);
/* The namespace scope of the lists changed: reopen namespace-scoped watches when they do not cover it. */
void sources_namespace_changed(struct store *st, const char *ns);
/* Kubeconfig context names (valid until the next call) and the one in use. */
const char *const *sources_context_names(size_t *n);
const char *sources_current_context(void);
/* Switches the kube context (closes the current kube source, opens the named one). */
int sources_set_context(const char *name, char **err);

/* Sources not retired by a context switch. */
size_t sources_live_count(void);
/* The namespace the kube source watches (NULL: all). */
const char *sources_kube_scope(void);
/* The namespace every live source is narrowed to (a user who may not list all namespaces watches the
 * context's), NULL when any source watches them all. */
const char *sources_narrowed_scope(void);
void sources_free(void);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* Parses config text (unit-tested); returns 0 or -1 with *err naming the line. */
int sources_parse_config(const char *text, char **err);

#endif
