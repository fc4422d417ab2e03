/* kvcon's config file, $XDG_CONFIG_HOME/kvcon/config, read in one place.
 * Format: one `key = value` per line; `#` starts a comment (to the end of the line); blank lines are ignored;
 * spaces, tabs and a CR around the key and the value are dropped. A key may repeat (engine.host, registry, ...):
 * every line is kept, in file order. A line with text but no `=`, or with an empty key, is an error named
 * `FILE:LINE: ...`; it is skipped and the rest of the file still applies, so a typo on one line never loses the
 * others. What a value means is its consumer's business (ui/sources.c, engine/, engine/oci.c). */
#ifndef KVCON_CORE_CONFIG_H
#define KVCON_CORE_CONFIG_H

#include <stddef.h>

struct config_entry {
	const char *key, *value; /* value may be "" */
	int line;                /* 1-based */
};

struct config;

/* Parses text (NULL: an empty file). name prefixes error messages ("NAME:LINE: ..."; NULL gives "line LINE: ...").
 * Never NULL. *err (optional; caller frees) receives the first error, else stays NULL. */
struct config *config_parse(const char *text, const char *name, char **err);
/* Reads $XDG_CONFIG_HOME/kvcon/config afresh (a missing file is an empty config). As config_parse; the first
 * error is also logged (log_warn), once a process, whoever reads the file. */
struct config *config_load(char **err);
/* Whether the config file, the config and state directories and $XDG_RUNTIME_DIR/kvcon may be believed
 * (core/trust.h: owned by root or the euid, nobody else can write them or a directory above them; missing ones
 * count as trusted when the directory that would hold them is). 0, or -1 with *err (caller frees) naming the path
 * and what is wrong. config_load itself ignores a refused file (an empty config, the reason in *err). */
int config_trust_check(char **err);
void config_free(struct config *c);

size_t config_count(const struct config *c);
const struct config_entry *config_at(const struct config *c, size_t i);
/* The first non-empty value of key, or NULL. Owned by c. */
const char *config_get(const struct config *c, const char *key);
/* "FILE:LINE" of an entry for messages about its value. Caller frees. */
char *config_where(const struct config *c, const struct config_entry *e);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The path config_load reads. Caller frees. */
char *config_path(void);

#endif
