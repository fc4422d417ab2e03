/* kvcon's config file: `key = value` lines, parsed once for every module that has settings in it. */
#include "core/config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/xmalloc.h"

struct config {
	char *name;  /* for messages, NULL when parsed from text without one */
	char *text;  /* the copy every key and value points into */
	struct config_entry *e;
	size_t n;
};

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static char *trim(char *s)
{
	while (is_blank(*s))
		s++;
	size_t n = strlen(s);
	while (n && is_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

static char *where(const char *name, int line)
{
	return name ? xasprintf("%s:%d", name, line) : xasprintf("line %d", line);
}

struct config *config_parse(const char *text, const char *name, char **err)
{
	struct config *c = xcalloc(1, sizeof *c);
	c->name = name ? xstrdup(name) : NULL;
	c->text = xstrdup(text ? text : "");
	if (err)
		*err = NULL;
	int lineno = 0;
	for (char *line = c->text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else if (*line == '\0')
			break;
		lineno++;
		line[strcspn(line, "#")] = '\0';
		char *eq = strchr(line, '=');
		const char *bad = NULL;
		if (eq == NULL) {
			if (*trim(line))
				bad = "expected 'key = value'";
		} else {
			*eq = '\0';
			char *k = trim(line), *v = trim(eq + 1);
			if (*k == '\0')
				bad = "a key is missing before '='";
			else {
				c->e = xreallocarray(c->e, c->n + 1, sizeof *c->e);
				c->e[c->n++] = (struct config_entry){ .key = k, .value = v, .line = lineno };
			}
		}
		if (bad && err && *err == NULL) {
			char *w = where(name, lineno);
			*err = xasprintf("%s: %s", w, bad);
			free(w);
		}
	}
	return c;
}

char *config_path(void)
{
	char *dir = util_config_dir(), *path = util_path_join(dir, "config");
	free(dir);
	return path;
}

struct config *config_load(char **err)
{
	static atomic_bool warned; /* the engine's threads read the file too */
	char *path = config_path(), *e = NULL, *why = NULL;
	/* engine.host decides what libvirt runs: a file another user could write is not read at all */
	char *text = trust_read_file(path, NULL, &why);
	struct config *c = config_parse(text, path, why ? NULL : &e);
	if (why) {
		e = xasprintf("%s (the config file is ignored)", why);
		free(why);
		if (!atomic_exchange(&warned, true))
			log_error("config %s", e);
	} else if (e && !atomic_exchange(&warned, true)) {
		log_warn("config %s (the line is ignored)", e);
	}
	if (err)
		*err = e;
	else
		free(e);
	free(text);
	free(path);
	return c;
}

/* One directory of kvcon's: trusted or missing (then made where trusted). */
static int trusted_dir(char *dir, char **err)
{
	char *why = NULL;
	int rc = trust_check(dir, &why) == TRUST_REFUSED ? -1 : 0;
	if (rc < 0)
		*err = why;
	free(dir);
	return rc;
}

int config_trust_check(char **err)
{
	char *path = config_path(), *why = NULL;
	*err = NULL;
	int rc = trust_check(path, &why) == TRUST_REFUSED ? -1 : 0;
	free(path);
	if (rc < 0) {
		*err = xasprintf("%s (kvcon reads its config file only when no other user can have written it)", why);
		free(why);
		return -1;
	}
	const char *rt = getenv("XDG_RUNTIME_DIR");
	if (trusted_dir(util_config_dir(), err) < 0 || trusted_dir(util_state_dir(), err) < 0 ||
	    (rt && *rt == '/' && trusted_dir(util_path_join(rt, "kvcon"), err) < 0)) {
		why = *err;
		*err = xasprintf("%s (kvcon keeps its state only where no other user can write)", why);
		free(why);
		return -1;
	}
	return 0;
}

void config_free(struct config *c)
{
	if (c == NULL)
		return;
	free(c->name);
	free(c->text);
	free(c->e);
	free(c);
}

size_t config_count(const struct config *c)
{
	return c ? c->n : 0;
}

const struct config_entry *config_at(const struct config *c, size_t i)
{
	return c && i < c->n ? &c->e[i] : NULL;
}

const char *config_get(const struct config *c, const char *key)
{
	for (size_t i = 0; i < config_count(c); i++)
		if (strcmp(c->e[i].key, key) == 0 && c->e[i].value[0])
			return c->e[i].value;
	return NULL;
}

char *config_where(const struct config *c, const struct config_entry *e)
{
	return where(c ? c->name : NULL, e->line);
}
