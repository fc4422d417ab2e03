/* Unit tests of core/trust: which files and directories kvcon believes (owner, mode, links, the directories above),
 * and util_home_dir, which never falls back to a shared directory. The owner rows need root (chown). */
#include <errno.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/trust.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "t.h"

enum { F, D, L }; /* a file, a directory, a symbolic link (to target) */

/* one entry made under the test's private directory, in table order */
struct mk {
	const char *path;
	int type;
	unsigned mode; /* 0: the default (0600 files, 0700 directories) */
	unsigned uid;  /* 0: the euid's; else chown'ed (root only) */
	const char *target;
};

static const struct mk made[] = {
	{ "own", F, 0600, 0, NULL },
	{ "readable", F, 0644, 0, NULL },
	{ "w-other", F, 0666, 0, NULL },
	{ "w-group", F, 0620, 0, NULL },
	{ "w-other-only", F, 0602, 0, NULL },
	{ "theirs", F, 0600, 4242, NULL },
	{ "pub", D, 0777, 0, NULL },
	{ "pub/f", F, 0600, 0, NULL },
	{ "sticky", D, 01777, 0, NULL },
	{ "sticky/f", F, 0600, 0, NULL },
	{ "sticky/priv", D, 0700, 0, NULL },
	{ "sticky/priv/f", F, 0600, 0, NULL },
	{ "grp", D, 0770, 0, NULL },
	{ "grp/f", F, 0600, 0, NULL },
	{ "theirdir", D, 0755, 4242, NULL },
	{ "theirdir/f", F, 0600, 0, NULL },
	{ "ln-own", L, 0, 0, "own" },
	{ "ln-theirs", L, 0, 0, "theirs" },
	{ "ln-pub", L, 0, 0, "pub/f" },
	{ "pub/ln-own", L, 0, 0, "../own" },
	{ "cfg", D, 0755, 0, NULL },
	{ "cfg/kvcon", D, 0700, 0, NULL },
	{ "cfg/kvcon/config", F, 0644, 0, NULL },
};

static const struct {
	const char *path;
	bool needs_root; /* a row whose entries only root could make */
	enum trust_result want;
	const char *why; /* a part of the message (refused) */
} rows[] = {
	{ "own", false, TRUST_OK, NULL },
	{ "readable", false, TRUST_OK, NULL },
	{ "cfg/kvcon/config", false, TRUST_OK, NULL },
	{ "cfg/kvcon", false, TRUST_OK, NULL },
	{ "sticky/priv/f", false, TRUST_OK, NULL }, /* /tmp above a private directory */
	{ "ln-own", false, TRUST_OK, NULL },
	{ "w-other", false, TRUST_REFUSED, "w-other: mode 0666 lets others write it" },
	{ "w-group", false, TRUST_REFUSED, "w-group: mode 0620 lets the group write it" },
	{ "w-other-only", false, TRUST_REFUSED, "w-other-only: mode 0602 lets others write it" },
	{ "theirs", true, TRUST_REFUSED, "theirs: owned by uid 4242, not root or uid " },
	{ "pub/f", false, TRUST_REFUSED, "/pub: mode 0777 lets others write it" },
	{ "sticky/f", false, TRUST_REFUSED, "/sticky: mode 1777 lets others write it (a shared sticky" },
	{ "grp/f", false, TRUST_REFUSED, "/grp: mode 0770 lets the group write it" },
	{ "theirdir/f", true, TRUST_REFUSED, "/theirdir: owned by uid 4242" },
	{ "ln-theirs", true, TRUST_REFUSED, "theirs: owned by uid 4242" },  /* the target's owner */
	{ "ln-pub", false, TRUST_REFUSED, "/pub: mode 0777" },              /* the target's directory */
	{ "pub/ln-own", false, TRUST_REFUSED, "/pub: mode 0777" },          /* the link's directory */
	{ "missing", false, TRUST_MISSING, NULL },
	{ "cfg/nodir/missing", false, TRUST_MISSING, NULL },
	{ "pub/missing", false, TRUST_REFUSED, "/pub: mode 0777" }, /* kvcon would create it where others write */
};

static void test_table(const char *top)
{
	bool root = geteuid() == 0;
	for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
		const struct mk *m = &made[i];
		if (m->uid && !root)
			continue;
		char *p = util_path_join(top, m->path);
		int rc = 0;
		if (m->type == F) {
			FILE *f = fopen(p, "w");
			rc = f && fputs("x = 1\n", f) >= 0 && fclose(f) == 0 ? 0 : -1;
		} else if (m->type == D) {
			rc = mkdir(p, 0700);
		} else {
			rc = symlink(m->target, p);
		}
		if (rc == 0 && m->type != L)
			rc = chmod(p, m->mode);
		if (rc == 0 && m->uid)
			rc = lchown(p, m->uid, m->uid);
		if (rc < 0)
			fprintf(stderr, "set-up: %s: %s\n", p, strerror(errno));
		T_CHECK(rc == 0);
		free(p);
	}
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		if (rows[i].needs_root && !root)
			continue;
		char *p = util_path_join(top, rows[i].path), *why = NULL;
		enum trust_result got = trust_check(p, &why);
		if (got != rows[i].want || (rows[i].why && (why == NULL || strstr(why, rows[i].why) == NULL)))
			fprintf(stderr, "row %s: got %d (%s)\n", rows[i].path, (int)got, why ? why : "-");
		T_EQ_INT(got, rows[i].want);
		T_CHECK(rows[i].why == NULL || (why && strstr(why, rows[i].why)));
		T_CHECK((got == TRUST_REFUSED) == (why != NULL));
		free(why);
		/* the reader agrees with the check */
		size_t len = 0;
		why = NULL;
		errno = 0;
		char *text = trust_read_file(p, &len, &why);
		if (rows[i].want == TRUST_OK && strcmp(rows[i].path, "cfg/kvcon") != 0) {
			T_CHECK(text && len == 6 && strcmp(text, "x = 1\n") == 0);
		} else {
			T_CHECK(text == NULL);
			if (rows[i].want == TRUST_MISSING)
				T_CHECK(errno == ENOENT && why == NULL);
			if (rows[i].want == TRUST_REFUSED)
				T_CHECK(why != NULL);
		}
		free(text);
		free(why);
		free(p);
	}
}

/* a directory checked once, its files read relative to it: each file judged as trust_read_file judges it (owner,
 * mode, a regular file), a link or a name that leaves the directory refused, a directory others write refused */
static void test_dir_reads(const char *top)
{
	bool root = geteuid() == 0;
	char *dir = util_path_join(top, "rd"), *why = NULL;
	T_CHECK(mkdir(dir, 0700) == 0);
	static const struct {
		const char *name;
		unsigned mode, uid; /* mode 0: a link to "own"; uid 0: the euid's */
		bool ok;
		const char *why; /* a part of the message (refused; NULL: missing, ENOENT) */
	} files[] = {
		{ "own", 0600, 0, true, NULL },
		{ "readable", 0644, 0, true, NULL },
		{ "w-other", 0666, 0, false, "rd/w-other: mode 0666 lets others write it" },
		{ "w-group", 0620, 0, false, "rd/w-group: mode 0620 lets the group write it" },
		{ "theirs", 0600, 4242, false, "rd/theirs: owned by uid 4242" },
		{ "ln-own", 0, 0, false, "rd/ln-own: is a symbolic link" },
		{ "pub", 0700, 0, false, "rd/pub: is not a regular file" }, /* a directory */
		{ "pub/f", 0600, 0, false, "rd/pub/f: is not a name in its directory" },
		{ "..", 0700, 0, false, "rd/..: is not a name in its directory" },
		{ "missing", 0600, 0, false, NULL },
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char *p = util_path_join(dir, files[i].name);
		int rc = 0;
		if (strcmp(files[i].name, "pub") == 0)
			rc = mkdir(p, 0700);
		else if (files[i].mode == 0)
			rc = symlink("own", p);
		else if (strchr("m.", files[i].name[0]) == NULL) {
			FILE *f = fopen(p, "w");
			rc = f && fputs("x = 1\n", f) >= 0 && fclose(f) == 0 ? chmod(p, files[i].mode) : -1;
			if (rc == 0 && files[i].uid && root)
				rc = chown(p, files[i].uid, files[i].uid);
		}
		T_CHECK(rc == 0);
		free(p);
	}
	int fd = trust_dir_open(dir, &why);
	T_CHECK(fd >= 0 && why == NULL);
	for (size_t i = 0; fd >= 0 && i < sizeof files / sizeof files[0]; i++) {
		if (files[i].uid && !root)
			continue;
		size_t len = 0;
		why = NULL;
		errno = 0;
		char *text = trust_read_at(fd, dir, files[i].name, &len, &why);
		if (files[i].ok)
			T_CHECK(text && len == 6 && strcmp(text, "x = 1\n") == 0 && why == NULL);
		else if (files[i].why)
			T_CHECK(text == NULL && why && strstr(why, files[i].why) && errno == EPERM);
		else
			T_CHECK(text == NULL && why == NULL && errno == ENOENT);
		if ((files[i].ok && text == NULL) || (files[i].why && (why == NULL || !strstr(why, files[i].why))))
			fprintf(stderr, "file %s: %s\n", files[i].name, why ? why : "-");
		free(text);
		free(why);
	}
	if (fd >= 0)
		close(fd);
	static const struct {
		const char *dir;
		bool needs_root;
		const char *why;
	} dirs[] = {
		{ "cfg/kvcon", false, NULL },
		{ "pub", false, "pub: mode 0777 lets others write it" },
		{ "sticky/priv", false, "sticky: mode 1777" }, /* a shared sticky directory holds it */
		{ "grp", false, "grp: mode 0770" },
		{ "theirdir", true, "theirdir: owned by uid 4242" },
	};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		if (dirs[i].needs_root && !root)
			continue;
		char *p = util_path_join(top, dirs[i].dir);
		why = NULL;
		fd = trust_dir_open(p, &why);
		if (dirs[i].why == NULL)
			T_CHECK(fd >= 0 && why == NULL);
		else
			T_CHECK(fd < 0 && why && strstr(why, dirs[i].why));
		if (fd >= 0)
			close(fd);
		free(why);
		free(p);
	}
	char *p = util_path_join(top, "missing");
	why = NULL;
	errno = 0;
	T_CHECK(trust_dir_open(p, &why) < 0 && why == NULL && errno == ENOENT);
	free(p);
	p = util_path_join(top, "own"); /* a file */
	T_CHECK(trust_dir_open(p, &why) < 0 && why == NULL && errno == ENOTDIR);
	free(p);
	free(dir);
}

/* a path that would drive the terminal is shown escaped in the message */
static void test_escaped(const char *top)
{
	char *p = xasprintf("%s/esc\033]0;x\007", top), *why = NULL;
	FILE *f = fopen(p, "w");
	T_CHECK(f != NULL);
	if (f)
		fclose(f);
	chmod(p, 0666);
	T_EQ_INT(trust_check(p, &why), TRUST_REFUSED);
	T_CHECK(why && strchr(why, '\033') == NULL && strstr(why, "esc\\e]0;x\\x07: mode 0666"));
	free(why);
	unlink(p);
	free(p);
}

static void test_home(void)
{
	struct passwd *pw = getpwuid(geteuid());
	char *saved = getenv("HOME") ? xstrdup(getenv("HOME")) : NULL;
	setenv("HOME", "/srv/somewhere", 1);
	char *h = util_home_dir();
	T_EQ_STR(h, "/srv/somewhere");
	free(h);
	const char *unset_ways[] = { NULL, "", "relative" };
	for (size_t i = 0; i < 3; i++) {
		if (unset_ways[i])
			setenv("HOME", unset_ways[i], 1);
		else
			unsetenv("HOME");
		h = util_home_dir();
		if (pw && pw->pw_dir && pw->pw_dir[0] == '/')
			T_EQ_STR(h, pw->pw_dir); /* the passwd entry's, never /tmp */
		else
			T_CHECK(h == NULL);
		free(h);
	}
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("HOME");
	if (pw && pw->pw_dir && strcmp(pw->pw_dir, "/tmp") != 0) {
		char *c = util_config_dir();
		T_CHECK(!util_has_prefix(c, "/tmp/"));
		char *want = xasprintf("%s/.config/kvcon", strcmp(pw->pw_dir, "/") ? pw->pw_dir : "");
		T_EQ_STR(c, want);
		free(want);
		free(c);
	}
	if (saved)
		setenv("HOME", saved, 1);
	free(saved);
}

int main(void)
{
	char tmpl[] = "/tmp/kvcon-trust.XXXXXX";
	char *top = mkdtemp(tmpl);
	T_CHECK(top != NULL);
	if (top) {
		test_table(top);
		test_dir_reads(top);
		test_escaped(top);
		char *cmd = xasprintf("rm -rf '%s'", top);
		T_CHECK(system(cmd) == 0);
		free(cmd);
	}
	test_home();
	return T_DONE();
}
