/* Fixtures shared by the unit tests (see fixture.h). */
#include "fixture.h"

#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "kube/decode.h"

struct json_object *fixture_json(const char *name)
{
	char *path = xasprintf("tests/fixtures/%s", name);
	struct json_object *j = json_object_from_file(path);
	if (j == NULL)
		fprintf(stderr, "cannot load %s\n", path);
	free(path);
	return j;
}

struct obj *fixture_obj(struct source *src, enum obj_kind kind, const char *name)
{
	struct json_object *j = fixture_json(name);
	struct obj *o = j ? kube_decode(kind, j, src, NULL) : NULL;
	json_object_put(j);
	return o;
}

struct obj *fixture_decode(struct source *src, enum obj_kind kind, const char *json, char **err)
{
	struct json_object *j = json_tokener_parse(json);
	struct obj *o = kube_decode(kind, j, src, err);
	json_object_put(j);
	return o;
}

int64_t fixture_ts(const char *s)
{
	int64_t t = 0;
	util_parse_time(s, &t);
	return t;
}

static SCREEN *fx_scr;
static FILE *fx_null;

void fixture_curses(void)
{
	setlocale(LC_ALL, "C.UTF-8");
	fx_null = fopen("/dev/null", "w+");
	fx_scr = fx_null ? newterm("xterm-256color", fx_null, fx_null) : NULL;
	if (fx_scr == NULL) {
		fprintf(stderr, "no terminfo for xterm-256color\n");
		exit(1);
	}
	start_color();
	use_default_colors();
}

void fixture_curses_end(void)
{
	endwin();
	delscreen(fx_scr);
	fclose(fx_null);
	fx_scr = NULL;
	fx_null = NULL;
}
