/* Unit tests of core/config: kvcon's config file format, its errors (FILE:LINE) and config_load's path. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/log.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "t.h"

static void test_format(void)
{
	char *err = NULL;
	struct config *c = config_parse("# kvcon\n"
					"theme = dark   # a comment after the value\n"
					"\n"
					"   \t\n"
					"engine.host=qemu:///a migrate-uri=qemu+tcp://x/system\r\n"
					"engine.host = qemu:///b\n"
					"engine.accel =\n"
					"engine.accel = tcg\n"
					"url = a=b\n"
					"  registry = quay.io location=127.0.0.1:5000",
					"cfg", &err);
	T_CHECK(err == NULL);
	T_EQ_INT(config_count(c), 7);
	const struct config_entry *e = config_at(c, 0);
	T_EQ_STR(e->key, "theme");
	T_EQ_STR(e->value, "dark");
	T_EQ_INT(e->line, 2);
	e = config_at(c, 1);
	T_EQ_STR(e->value, "qemu:///a migrate-uri=qemu+tcp://x/system"); /* the CR is gone */
	T_EQ_INT(e->line, 5);
	T_EQ_STR(config_at(c, 3)->value, "");
	T_EQ_STR(config_get(c, "engine.accel"), "tcg");        /* the first non-empty value */
	T_EQ_STR(config_get(c, "engine.host"), "qemu:///a migrate-uri=qemu+tcp://x/system");
	T_EQ_STR(config_get(c, "url"), "a=b");                  /* only the first '=' separates */
	T_EQ_STR(config_get(c, "registry"), "quay.io location=127.0.0.1:5000"); /* last line without '\n' */
	T_CHECK(config_get(c, "nope") == NULL);
	T_CHECK(config_at(c, 7) == NULL);
	char *w = config_where(c, config_at(c, 6));
	T_EQ_STR(w, "cfg:10");
	free(w);
	config_free(c);

	c = config_parse(NULL, NULL, &err);
	T_CHECK(err == NULL && config_count(c) == 0);
	config_free(c);
	config_free(NULL);
}

static void test_errors(void)
{
	char *err = NULL;
	struct config *c = config_parse("theme = dark\ngarbage line\n= x\nreadonly = true\n", "/etc/k/config", &err);
	T_EQ_STR(err, "/etc/k/config:2: expected 'key = value'"); /* the first error, named FILE:LINE */
	T_EQ_INT(config_count(c), 2);                             /* bad lines skipped, the rest kept */
	T_EQ_STR(config_get(c, "readonly"), "true");
	free(err);
	config_free(c);

	c = config_parse("a = 1\n  = x # no key\n", NULL, &err);
	T_EQ_STR(err, "line 2: a key is missing before '='");
	free(err);
	config_free(c);

	/* a comment hides an '=' and the error that its absence would be */
	c = config_parse("# theme = x\nfoo # = bar\n", NULL, &err);
	T_EQ_STR(err, "line 2: expected 'key = value'");
	T_EQ_INT(config_count(c), 0);
	free(err);
	config_free(c);

	c = config_parse("a = 1\n", NULL, NULL); /* err is optional */
	T_EQ_INT(config_count(c), 1);
	config_free(c);
}

static void test_load(void)
{
	char dir[] = "/tmp/kvcon-cfg.XXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	setenv("XDG_CONFIG_HOME", dir, 1);
	char *err = NULL;
	struct config *c = config_load(&err); /* no file: empty, no error */
	T_CHECK(err == NULL && config_count(c) == 0);
	config_free(c);

	char *kd = xasprintf("%s/kvcon", dir), *f = xasprintf("%s/kvcon/config", dir), *p = config_path();
	T_EQ_STR(p, f);
	util_mkdir_p(kd, 0700);
	const char *text = "engine.bridge = br0\noops\n";
	util_write_file_atomic(f, text, strlen(text), 0600);
	char *logf = xasprintf("%s/kvcon.log", dir);
	T_EQ_INT(log_open(logf), 0);
	c = config_load(&err);
	char *want = xasprintf("%s:2: expected 'key = value'", f);
	T_EQ_STR(err, want);
	T_EQ_STR(config_get(c, "engine.bridge"), "br0");
	config_free(c);
	free(err);
	c = config_load(NULL); /* the engine's settings read it again: logged once */
	config_free(c);
	log_close();
	char *logged = util_read_file(logf, NULL);
	T_CHECK(logged && strstr(logged, want) && strstr(strstr(logged, want) + 1, want) == NULL);
	free(logged);
	free(want);
	unlink(logf);
	free(logf);
	/* a file the group or others can write is not read at all: an empty config, the reason as the error */
	chmod(f, 0620);
	c = config_load(&err);
	T_EQ_INT(config_count(c), 0);
	want = xasprintf("%s: mode 0620 lets the group write it", f);
	T_CHECK(err && strstr(err, want) && strstr(err, "(the config file is ignored)"));
	config_free(c);
	free(err);
	free(want);
	char *terr = NULL;
	T_EQ_INT(config_trust_check(&terr), -1);
	T_CHECK(terr && strstr(terr, "mode 0620"));
	free(terr);
	chmod(f, 0600);
	T_EQ_INT(config_trust_check(&terr), 0);
	T_CHECK(terr == NULL);
	unlink(f);
	rmdir(kd);
	rmdir(dir);
	free(p);
	free(f);
	free(kd);
}

int main(void)
{
	test_format();
	test_errors();
	test_load();
	return T_DONE();
}
