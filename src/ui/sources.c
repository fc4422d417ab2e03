/* Opening the dashboard's sources and reading kvcon's config file. */
#include "ui/sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/opts.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/source.h"
#include "model/store.h"
#include "ui/ui.h"

static struct {
	char *theme;
	bool readonly;
	char *context;
} C;

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

int sources_parse_config(const char *text, char **err)
{
	char *copy = xstrdup(text);
	int rc = 0, lineno = 0;
	char *save = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *eq = strchr(line, '=');
		if (eq == NULL) {
			if (*trim(line)) {
				*err = xasprintf("line %d: expected 'key = value'", lineno);
				rc = -1;
				break;
			}
			continue;
		}
		*eq = '\0';
		char *k = trim(line), *v = trim(eq + 1);
		if (strcmp(k, "theme") == 0) {
			free(C.theme);
			C.theme = xstrdup(v);
		} else if (strcmp(k, "readonly") == 0) {
			C.readonly = strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcasecmp(v, "yes") == 0;
		} else {
			log_info("config: line %d: unknown key '%s' ignored", lineno, k); /* other modules' keys */
		}
	}
	free(copy);
	return rc;
}

void sources_load_config(void)
{
	char *dir = util_config_dir(), *path = util_path_join(dir, "config");
	char *text = util_read_file(path, NULL);
	if (text) {
		char *err = NULL;
		if (sources_parse_config(text, &err) < 0)
			log_warn("config %s: %s", path, err);
		free(err);
	}
	free(text);
	free(path);
	free(dir);
}

const char *sources_config_theme(void)
{
	return C.theme;
}

bool sources_config_readonly(void)
{
	return C.readonly;
}

int sources_open(struct store *st, char **err)
{
	(void)st;
	(void)err;
	/* the kube and engine providers plug in here as they land */
	log_info("ui: %zu sources", source_count());
	return 0;
}

void sources_namespace_changed(struct store *st, const char *ns)
{
	(void)st;
	(void)ns;
}

const char *const *sources_context_names(size_t *n)
{
	*n = 0;
	return NULL;
}

const char *sources_current_context(void)
{
	return C.context;
}

int ui_set_context(const char *name, char **err)
{
	(void)name;
	*err = xstrdup("no kubeconfig contexts in this build");
	return -1;
}
