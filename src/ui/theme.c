/* Theme files: parsing, the search path, and mapping to curses colour pairs for the terminal at hand. */
#include "ui/theme.h"

#include <curses.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"

static const char *const elem_names[THEME_COUNT] = {
	[THEME_NORMAL] = "normal",
	[THEME_HEADER] = "header",
	[THEME_HEADER_KEY] = "header_key",
	[THEME_LOGO] = "logo",
	[THEME_TITLE] = "title",
	[THEME_TITLE_ACTIVE] = "title_active",
	[THEME_HINT] = "hint",
	[THEME_TABLE_HEADER] = "table_header",
	[THEME_SELECTED] = "selected",
	[THEME_FLASH] = "flash",
	[THEME_OK] = "ok",
	[THEME_WAIT] = "wait",
	[THEME_BAD] = "bad",
	[THEME_OFF] = "off",
	[THEME_CMDLINE] = "cmdline",
	[THEME_ERROR] = "error",
	[THEME_READONLY] = "readonly",
	[THEME_BORDER] = "border",
	[THEME_BORDER_FOCUS] = "border_focus",
	[THEME_MATCH] = "match",
	[THEME_DIM] = "dim",
};

/* Used when no theme file is found (an installed binary without its share directory still has colours). */
static const char builtin_default[] = "normal = default default\n"
				      "header = white default\n"
				      "header_key = yellow default bold\n"
				      "logo = cyan default bold\n"
				      "title = black cyan\n"
				      "title_active = black yellow bold\n"
				      "hint = blue default\n"
				      "table_header = white default bold,underline\n"
				      "selected = black cyan\n"
				      "flash = black yellow\n"
				      "ok = green default\n"
				      "wait = yellow default\n"
				      "bad = red default bold\n"
				      "off = blue default\n"
				      "cmdline = white default bold\n"
				      "error = white red bold\n"
				      "readonly = white red bold\n"
				      "border = blue default\n"
				      "border_focus = cyan default bold\n"
				      "match = black yellow\n"
				      "dim = default default dim\n";

/* Without colour every distinction is an attribute. */
static const char builtin_mono[] = "normal = default default\n"
				   "header = default default\n"
				   "header_key = default default bold\n"
				   "logo = default default bold\n"
				   "title = default default reverse\n"
				   "title_active = default default reverse,bold\n"
				   "hint = default default dim\n"
				   "table_header = default default bold,underline\n"
				   "selected = default default reverse\n"
				   "flash = default default bold,underline\n"
				   "ok = default default\n"
				   "wait = default default bold\n"
				   "bad = default default bold,underline\n"
				   "off = default default dim\n"
				   "cmdline = default default bold\n"
				   "error = default default reverse,bold\n"
				   "readonly = default default reverse,bold\n"
				   "border = default default\n"
				   "border_focus = default default bold\n"
				   "match = default default reverse\n"
				   "dim = default default dim\n";

struct spec {
	int fg, bg; /* -1 default, 0..255 */
	int attrs;  /* A_* */
};

static struct spec specs[THEME_COUNT];
static struct spec mono_specs[THEME_COUNT];
static int attrs[THEME_COUNT];

static const struct {
	const char *name;
	int value;
} colour_names[] = {
	{ "default", -1 }, { "black", 0 }, { "red", 1 }, { "green", 2 }, { "yellow", 3 }, { "blue", 4 },
	{ "magenta", 5 }, { "cyan", 6 }, { "white", 7 }, { "brightblack", 8 }, { "grey", 8 }, { "gray", 8 },
	{ "brightred", 9 }, { "brightgreen", 10 }, { "brightyellow", 11 }, { "brightblue", 12 },
	{ "brightmagenta", 13 }, { "brightcyan", 14 }, { "brightwhite", 15 },
};

static const struct {
	const char *name;
	int value;
} attr_names[] = {
	{ "none", 0 }, { "bold", A_BOLD }, { "dim", A_DIM }, { "reverse", A_REVERSE },
	{ "underline", A_UNDERLINE }, { "standout", A_STANDOUT }, { "italic", A_ITALIC }, { "blink", A_BLINK },
};

static int parse_colour(const char *w, int *out)
{
	for (size_t i = 0; i < sizeof colour_names / sizeof colour_names[0]; i++) {
		if (strcasecmp(w, colour_names[i].name) == 0) {
			*out = colour_names[i].value;
			return 0;
		}
	}
	char *end;
	long v = strtol(w, &end, 10);
	if (*w && *end == '\0' && v >= 0 && v <= 255) {
		*out = (int)v;
		return 0;
	}
	return -1;
}

static int parse_attrs(char *w, int *out)
{
	*out = 0;
	for (char *save = NULL, *t = strtok_r(w, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t i;
		for (i = 0; i < sizeof attr_names / sizeof attr_names[0]; i++)
			if (strcasecmp(t, attr_names[i].name) == 0)
				break;
		if (i == sizeof attr_names / sizeof attr_names[0])
			return -1;
		*out |= attr_names[i].value;
	}
	return 0;
}

static int parse_into(const char *text, const char *name, struct spec *dst, char **err)
{
	struct spec tmp[THEME_COUNT];
	for (int i = 0; i < THEME_COUNT; i++)
		tmp[i] = (struct spec){ -1, -1, 0 };
	char *copy = xstrdup(text);
	int rc = 0, lineno = 0;
	for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *eq = strchr(line, '=');
		char key[64], w[3][64];
		int nw = 0;
		if (eq == NULL) {
			if (strspn(line, " \t\r") == strlen(line))
				continue;
			*err = xasprintf("%s:%d: expected 'element = fg bg [attrs]'", name, lineno);
			rc = -1;
			break;
		}
		*eq = '\0';
		if (sscanf(line, " %63s", key) != 1) {
			*err = xasprintf("%s:%d: missing element name", name, lineno);
			rc = -1;
			break;
		}
		nw = sscanf(eq + 1, " %63s %63s %63s", w[0], w[1], w[2]);
		int e;
		for (e = 0; e < THEME_COUNT; e++)
			if (strcmp(key, elem_names[e]) == 0)
				break;
		if (e == THEME_COUNT) {
			*err = xasprintf("%s:%d: unknown element '%s'", name, lineno, key);
			rc = -1;
			break;
		}
		if (nw < 2 || parse_colour(w[0], &tmp[e].fg) < 0 || parse_colour(w[1], &tmp[e].bg) < 0 ||
		    (nw == 3 && parse_attrs(w[2], &tmp[e].attrs) < 0)) {
			*err = xasprintf("%s:%d: bad value for '%s' (colours: default, black..white, bright*, 0-255; "
					 "attrs: bold,dim,reverse,underline,standout,italic)",
					 name, lineno, key);
			rc = -1;
			break;
		}
	}
	free(copy);
	if (rc == 0)
		memcpy(dst, tmp, sizeof tmp);
	return rc;
}

int theme_load_text(const char *text, const char *name, char **err)
{
	if (mono_specs[THEME_SELECTED].attrs == 0) {
		char *e = NULL;
		parse_into(builtin_mono, "mono", mono_specs, &e);
		free(e);
	}
	return parse_into(text, name, specs, err);
}

/* Directories searched for a theme name, in order. Caller frees each. */
static char *theme_path(const char *name, int i)
{
	char exe[PATH_MAX];
	ssize_t n;
	switch (i) {
	case 0: {
		char *d = util_config_dir(), *t = util_path_join(d, "themes"), *p = util_path_join(t, name);
		free(d);
		free(t);
		return p;
	}
	case 1:
	case 2:
	case 3:
		n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n <= 0)
			return NULL;
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		/* beside the binary (the source tree), one up (build directories), the install's share directory */
		return xasprintf("%s/%s/%s", exe, i == 1 ? "themes" : i == 2 ? "../themes" : "../share/kvcon/themes", name);
	default:
		return NULL;
	}
}

int theme_load(const char *name, char **err)
{
	if (name == NULL || *name == '\0')
		name = "default";
	char *text = NULL, *path = NULL;
	if (strchr(name, '/')) {
		text = util_read_file(name, NULL);
		path = xstrdup(name);
	} else {
		for (int i = 0; i < 4 && text == NULL; i++) {
			free(path);
			path = theme_path(name, i);
			text = path ? util_read_file(path, NULL) : NULL;
		}
	}
	int rc;
	if (text) {
		rc = theme_load_text(text, path, err);
	} else if (strcmp(name, "default") == 0) {
		rc = theme_load_text(builtin_default, "default", err);
	} else if (strcmp(name, "mono") == 0) {
		rc = theme_load_text(builtin_mono, "mono", err);
	} else {
		*err = xasprintf("theme '%s' not found (looked in $XDG_CONFIG_HOME/kvcon/themes and the install)", name);
		theme_load_text(builtin_default, "default", NULL);
		rc = -1;
	}
	free(text);
	free(path);
	return rc;
}

/* On 8-colour terminals, bright colours fold onto their base colour (with bold for emphasis); the 256-colour cube
 * folds onto the nearest of the eight. */
static int fold_colour(int c, int ncolors, int *extra)
{
	if (c < 0 || c < ncolors)
		return c;
	if (c < 16) {
		*extra |= A_BOLD;
		return c - 8;
	}
	if (c >= 232) /* greys */
		return c < 244 ? 0 : 7;
	int v = c - 16, r = v / 36, g = (v / 6) % 6, b = v % 6;
	return (r >= 3 ? 1 : 0) | (g >= 3 ? 2 : 0) | (b >= 3 ? 4 : 0);
}

void theme_apply(bool color, int ncolors)
{
	if (specs[THEME_NORMAL].fg == 0 && specs[THEME_NORMAL].bg == 0 && specs[THEME_SELECTED].attrs == 0)
		theme_load_text(builtin_default, "default", NULL);
	for (int e = 0; e < THEME_COUNT; e++) {
		if (!color) {
			attrs[e] = mono_specs[e].attrs;
			continue;
		}
		int extra = 0;
		int fg = fold_colour(specs[e].fg, ncolors, &extra);
		int bg = fold_colour(specs[e].bg, ncolors, &extra);
		if (fg < 0 && bg < 0) {
			attrs[e] = specs[e].attrs | extra;
			continue;
		}
		init_pair((short)(e + 1), (short)fg, (short)bg);
		attrs[e] = (int)COLOR_PAIR(e + 1) | specs[e].attrs | extra;
	}
}

int theme_attr(enum theme_elem e)
{
	return e < THEME_COUNT ? attrs[e] : 0;
}

/* Status words of VMs, VMIs, pods and events, grouped by what they mean to an operator. */
static const struct {
	const char *word;
	enum theme_elem elem;
} status_map[] = {
	{ "Running", THEME_OK }, { "Ready", THEME_OK }, { "Succeeded", THEME_OK }, { "Normal", THEME_NORMAL },
	{ "live", THEME_OK }, { "True", THEME_OK }, { "progressed", THEME_OK }, { "not reached", THEME_DIM },
	{ "Stopped", THEME_OFF }, { "Halted", THEME_OFF }, { "Paused", THEME_WAIT }, { "not expected", THEME_OFF },
	{ "Starting", THEME_WAIT }, { "Stopping", THEME_WAIT }, { "Provisioning", THEME_WAIT },
	{ "Terminating", THEME_WAIT }, { "Migrating", THEME_WAIT }, { "Pending", THEME_WAIT },
	{ "Scheduling", THEME_WAIT }, { "Scheduled", THEME_WAIT }, { "WaitingForVolumeBinding", THEME_WAIT },
	{ "WaitingForReceiver", THEME_WAIT }, { "WaitingForSync", THEME_WAIT }, { "waiting", THEME_WAIT },
	{ "loading", THEME_WAIT }, { "reconnecting", THEME_WAIT },
	{ "Failed", THEME_BAD }, { "CrashLoopBackOff", THEME_BAD }, { "ErrorUnschedulable", THEME_BAD },
	{ "ErrImagePull", THEME_BAD }, { "ImagePullBackOff", THEME_BAD }, { "ErrorPvcNotFound", THEME_BAD },
	{ "DataVolumeError", THEME_BAD }, { "Unknown", THEME_BAD }, { "Warning", THEME_BAD },
	{ "failed", THEME_BAD }, { "forbidden", THEME_BAD }, { "error", THEME_BAD }, { "False", THEME_BAD },
};

int theme_status_attr(const char *status)
{
	if (status == NULL)
		return attrs[THEME_NORMAL];
	for (size_t i = 0; i < sizeof status_map / sizeof status_map[0]; i++)
		if (strcmp(status, status_map[i].word) == 0)
			return attrs[status_map[i].elem];
	return attrs[THEME_NORMAL];
}
