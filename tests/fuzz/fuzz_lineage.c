/* libFuzzer harness for the lineage history loader (model/lineage.c): the input is a source's history file
 * (JSON lines); it is loaded, a VM's executions are read and formatted, and a new execution is recorded on top. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/intern.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/lineage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[64];
	static struct source *src;
	if (src == NULL) {
		snprintf(dir, sizeof dir, "/tmp/kvcon-fuzz-lineage-%ld", (long)getpid());
		src = source_new(SOURCE_KUBE, "fz");
		src->health[OBJ_VMI].state = WATCH_LIVE;
	}
	if (size > 1 << 20)
		return 0;
	struct store *st = store_new();
	struct lineage *l = lineage_new(st, dir);
	char *path = lineage_path(l, src, "ns", "vm");
	if (util_mkdir_p(dir, 0700) < 0)
		abort();
	FILE *f = fopen(path, "w");
	if (f == NULL)
		abort();
	fwrite(data, 1, size, f);
	fclose(f);
	size_t n;
	const struct lineage_exec *const *ex = lineage_get(l, src, "ns", "vm", &n);
	struct buf b;
	buf_init(&b);
	lineage_format_text(ex, n, 1700000000, &b);
	buf_free(&b);
	struct vmi *v = (struct vmi *)obj_new(OBJ_VMI);
	v->o.src = src;
	v->o.ns = intern("ns");
	v->o.name = xstrdup("vm");
	snprintf(v->o.uid, sizeof v->o.uid, "fuzz-vmi");
	v->phase = intern("Running");
	store_upsert(st, &v->o);
	lineage_get(l, src, "ns", "vm", &n);
	lineage_free(l);
	store_free(st);
	unlink(path);
	free(path);
	return 0;
}
