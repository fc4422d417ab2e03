/* Objects the controllers keep on disk (vmim.c, vmirs.c, storage.c): one JSON file an object in a directory of
 * the state directory, DIR/NAMESPACE_NAME.json (DIR/NAME.json for a cluster-scoped one), written whole (temporary
 * file, fsync, rename, directory fsync) before the object is acted on, removed with a directory fsync, and read
 * back at start. What a file holds is its controller's: this file reads and writes text. */
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "core/log.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/xmalloc.h"

char *apis_kept_dir(const char *sub)
{
	char *d = util_state_dir(), *s = xasprintf("engine-data/%s", sub), *p = util_path_join(d, s);
	free(s);
	free(d);
	return p;
}

static char *kept_path(const char *dir, const char *ns, const char *name)
{
	return ns && *ns ? xasprintf("%s/%s_%s.json", dir, ns, name) : xasprintf("%s/%s.json", dir, name);
}

int apis_kept_write(const char *dir, const char *ns, const char *name, const char *text, char **err)
{
	char *path = kept_path(dir, ns, name), why[UTIL_WHY_LEN];
	int rc = util_write_file_why(path, text, strlen(text), 0600, why);
	if (rc < 0 && errno == ENOENT) {
		util_mkdir_p(dir, 0700);
		rc = util_write_file_why(path, text, strlen(text), 0600, why);
	}
	if (rc < 0)
		*err = xasprintf("cannot store %s: %s", path, why);
	free(path);
	return rc;
}

void apis_kept_remove(const char *dir, const char *ns, const char *name)
{
	char *path = kept_path(dir, ns, name);
	if (unlink(path) < 0 && errno != ENOENT)
		log_warn("engine serve: cannot remove %s: %s", path, strerror(errno));
	util_fsync_dir(dir);
	free(path);
}

void apis_kept_load(const char *dir, apis_kept_fn *fn, void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (de->d_name[0] == '.' || n < 6 || strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		char *path = util_path_join(dir, de->d_name), *why = NULL, *text = trust_read_file(path, NULL, &why);
		json_object *f = text ? json_tokener_parse(text) : NULL;
		fn(ctx, path, f, why);
		if (f)
			json_object_put(f);
		free(why);
		free(text);
		free(path);
	}
	if (d)
		closedir(d);
}
