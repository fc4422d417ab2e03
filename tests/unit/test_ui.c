/* Unit tests of the dashboard's pieces (text fitting and escaping, filters, column layout, themes, config, YAML,
 * sorting), and a test-only feeder: `test_ui --dashboard N [--churn PER_S [--churn-every MS]]` runs the real
 * dashboard on N synthetic VMs (+ VMIs, pods, events) from a fake source, for developing the UI without a cluster. */
#include <curses.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"
#include "t.h"
#include "ui/draw.h"
#include "ui/forwards.h"
#include "ui/header.h"
#include "ui/help.h"
#include "ui/clusterlist.h"
#include "ui/log_view.h"
#include "ui/nsctx.h"
#include "ui/sources.h"
#include "ui/table.h"
#include "ui/theme.h"
#include "ui/ui.h"
#include "ui/cmdline.h"
#include "ui/pager.h"
#include "ui/screen.h"
#include "ui/view.h"
#include "ui/vmview.h"
#include "ui/yamlview.h"

/* ---- the fake source ---- */

static struct store *fst;
static struct source *fsrc;
static int fake_n;
static int churn_per_s;
static int churn_every_ms = SOURCES_WATCH_BATCH_MS;
static unsigned long churn_seq;
static const char *const statuses[] = { "Running", "Stopped", "Starting", "Paused", "ErrorUnschedulable" };

static int fake_action(struct source *src, const struct action_req *req, action_done_cb done, void *arg, char **err)
{
	(void)src;
	(void)done;
	(void)arg;
	*err = xasprintf("fake source: %s %s/%s not implemented", action_name(req->act), req->ns, req->name);
	return -1;
}

static int fake_fetch(struct source *src, enum obj_kind kind, const char *ns, const char *name, fetch_done_cb done,
		      void *arg, char **err)
{
	(void)src;
	(void)err;
	char *body = xasprintf("{\"kind\":\"%s\",\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"labels\":{\"a\":"
			       "\"true\"}},\"spec\":{\"runStrategy\":\"Always\",\"n\":3}}",
			       obj_kind_title(kind), ns, name);
	done(arg, 0, body, strlen(body));
	free(body);
	return 0;
}

static const struct provider_ops fake_ops = { .type = "fake", .action = fake_action, .fetch_raw = fake_fetch };

static void fake_vm(int i, const char *status)
{
	struct vm *vm = (struct vm *)obj_new(OBJ_VM);
	vm->o.src = fsrc;
	vm->o.ns = intern(i % 3 == 0 ? "prod" : "default");
	vm->o.name = i == 7 ? xstrdup("evil\033]0;pwned\007name") : i == 8 ? xstrdup("vm-ünïcødé-日本") : xasprintf("vm-%05d", i);
	snprintf(vm->o.uid, UID_LEN, "00000000-0000-0000-0000-%012d", i);
	vm->o.created = util_wall_s() - 3600 - i;
	vm->printable_status = intern(status);
	vm->run_strategy = intern(strcmp(status, "Stopped") == 0 ? "Halted" : "Always");
	vm->ready = strcmp(status, "Running") == 0;
	obj_label_add(&vm->o, "app", i % 2 ? "web" : "db");
	store_upsert(fst, &vm->o);
	if (strcmp(status, "Stopped") == 0) {
		struct obj *old = store_find(fst, fsrc, OBJ_VMI, vm->o.ns, vm->o.name);
		if (old)
			store_remove(fst, fsrc, OBJ_VMI, old->uid);
		return;
	}
	struct vmi *vmi = (struct vmi *)obj_new(OBJ_VMI);
	vmi->o.src = fsrc;
	vmi->o.ns = vm->o.ns;
	vmi->o.name = xstrdup(vm->o.name);
	snprintf(vmi->o.uid, UID_LEN, "11111111-0000-0000-0000-%012d", i);
	vmi->o.created = vm->o.created + 5;
	memcpy(vmi->vm_uid, vm->o.uid, UID_LEN);
	vmi->phase = intern(strcmp(status, "Starting") == 0 ? "Scheduling" : "Running");
	vmi->node = intern(i % 2 ? "node-a" : "node-b");
	vmi->ip = xasprintf("10.0.%d.%d", i / 250 % 250, i % 250);
	store_upsert(fst, &vmi->o);
	struct pod *pod = (struct pod *)obj_new(OBJ_POD);
	pod->o.src = fsrc;
	pod->o.ns = vm->o.ns;
	pod->o.name = xasprintf("virt-launcher-%s-abcde", vm->o.name);
	snprintf(pod->o.uid, UID_LEN, "22222222-0000-0000-0000-%012d", i);
	pod->o.created = vmi->o.created;
	memcpy(pod->vmi_uid, vmi->o.uid, UID_LEN);
	pod->phase = intern("Running");
	pod->node = vmi->node;
	pod->containers = xcalloc(1, sizeof *pod->containers);
	pod->containers[0].name = intern("compute");
	pod->containers[0].state = intern("running");
	pod->containers[0].ready = true;
	pod->ncontainers = 1;
	pod->ready_containers = 1;
	store_upsert(fst, &pod->o);
}

/* A batch of status changes every churn_every_ms, as the dashboard's watches deliver them (one read of each
 * socket per SOURCES_WATCH_BATCH_MS; --churn-every 5 is the stream as it came before that, event by event). */
static void churn(void *arg)
{
	(void)arg;
	int per_tick = churn_per_s * churn_every_ms / 1000;
	for (int k = 0; k < (per_tick ? per_tick : 1); k++) {
		int i = (int)(churn_seq * 7919 % (unsigned long)fake_n);
		fake_vm(i, statuses[churn_seq % 5]);
		churn_seq++;
	}
	loop_timer_add((uint64_t)churn_every_ms, churn, NULL);
}

static int dashboard(int n)
{
	fake_n = n;
	log_open(NULL);
	if (getenv("KVCON_DEBUG"))
		log_set_level(LOG_DEBUG);
	fst = store_new();
	fsrc = source_new(SOURCE_KUBE, "fake");
	fsrc->ops = &fake_ops;
	fsrc->server = xstrdup("https://fake.example:6443");
	fsrc->user = xstrdup("tester");
	fsrc->version = xstrdup("v1.3.0");
	for (int k = 0; k < OBJ_KIND_COUNT; k++)
		source_set_health(fsrc, (enum obj_kind)k, WATCH_LIVE, NULL);
	for (int i = 0; i < n; i++)
		fake_vm(i, statuses[i % 5]);
	struct event *e = (struct event *)obj_new(OBJ_EVENT);
	e->o.src = fsrc;
	e->o.ns = intern("default");
	e->o.name = xstrdup("vm-00001.1");
	snprintf(e->o.uid, UID_LEN, "33333333-0000-0000-0000-000000000001");
	e->type = intern("Warning");
	e->reason = intern("FailedScheduling");
	e->message = xstrdup("0/3 nodes are available: insufficient memory");
	e->inv_kind = intern("VirtualMachineInstance");
	e->inv_name = xstrdup("vm-00001");
	snprintf(e->inv_uid, UID_LEN, "11111111-0000-0000-0000-%012d", 1);
	e->count = 3;
	e->last = util_wall_s() - 30;
	store_upsert(fst, &e->o);
	loop_init();
	if (churn_per_s > 0)
		loop_timer_add(100, churn, NULL);
	int rc = ui_run(fst);
	source_free_all();
	store_free(fst);
	return rc;
}

/* ---- unit tests ---- */

static void test_wrap(void)
{
	size_t st[8];
	/* fits: one row */
	T_EQ_INT(draw_wrap_rows("short", 20, 2, st, 8), 1);
	/* words break after a space; continuation rows are narrower by the indent */
	const char *msg = "0/3 nodes are available: 3 Insufficient memory.";
	size_t n = draw_wrap_rows(msg, 20, 2, st, 8);
	T_EQ_INT(n, 4);
	T_EQ_INT(st[0], 0);
	T_EQ_STR(msg + st[1], "available: 3 Insufficient memory.");
	T_EQ_STR(msg + st[2], "Insufficient memory.");
	T_EQ_STR(msg + st[3], "memory.");
	/* no space: hard break at the width, escapes counted as displayed (\e is two columns) */
	T_EQ_INT(draw_wrap_rows("abcdefghij", 4, 0, st, 8), 3);
	T_EQ_INT(draw_wrap_rows("\033\033\033", 4, 0, st, 8), 2);
	T_EQ_INT(st[1], 2);
	/* wide characters are never split */
	T_EQ_INT(draw_wrap_rows("日本語", 3, 0, st, 8), 3);
	/* counting only */
	T_EQ_INT(draw_wrap_rows(msg, 20, 2, NULL, 0), 4);
	/* a UID or a name is never split: the row ends at the space before it, even when that leaves it short
	 * (issue 25, item 11: `...launcher-l8` / `sqn`) */
	const char *uid = "owned by VMI 6a1f0c3e-8d2b-4c7a-9e51-0f2d3b4c5a6e";
	T_EQ_INT(draw_wrap_rows(uid, 38, 2, st, 8), 2);
	T_EQ_STR(uid + st[1], "6a1f0c3e-8d2b-4c7a-9e51-0f2d3b4c5a6e");
	const char *pod = "OWNER MISMATCH: virt-launcher-stuck-launcher-l8sqn has created-by=x";
	T_EQ_INT(draw_wrap_rows(pod, 38, 2, st, 8), 3);
	T_EQ_STR(pod + st[1], "virt-launcher-stuck-launcher-l8sqn has created-by=x");
	T_EQ_STR(pod + st[2], "has created-by=x");
	/* words wrap at spaces, the next row starts at the word (the space that did not fit is dropped) */
	T_EQ_INT(draw_wrap_rows("aaaa bbbb", 4, 0, st, 8), 2);
	T_EQ_INT(st[1], 5);
	T_EQ_INT(draw_wrap_rows("aaa  bbb", 4, 0, st, 8), 2);
	T_EQ_INT(st[1], 5);
	/* only a word longer than a whole row is cut, at the width; the words around it stay whole */
	const char *lng = "ab 0123456789 cd";
	T_EQ_INT(draw_wrap_rows(lng, 6, 0, st, 8), 4);
	T_EQ_STR(lng + st[1], "0123456789 cd");
	T_EQ_STR(lng + st[2], "6789 cd");
	T_EQ_STR(lng + st[3], "cd");
	/* a line's leading blanks are its indentation, not a place to break */
	T_EQ_INT(draw_wrap_rows("  imageID:sha256", 10, 0, st, 8), 2);
	T_EQ_INT(st[1], 10);
}

static void test_fit(void)
{
	char out[256];
	T_EQ_INT(draw_fit("hello", 10, out, sizeof out), 5);
	T_EQ_STR(out, "hello");
	T_EQ_INT(draw_fit("hello world", 5, out, sizeof out), 5);
	T_EQ_STR(out, "hell~");
	/* escapes never reach the terminal raw */
	draw_fit("a\033]0;x\007b", 40, out, sizeof out);
	T_EQ_STR(out, "a\\e]0;x\\x07b");
	T_CHECK(strchr(out, '\033') == NULL);
	/* C1 control encoded in UTF-8, and invalid UTF-8 */
	draw_fit("x\xc2\x9by", 40, out, sizeof out);
	T_EQ_STR(out, "x\\u{9b}y");
	draw_fit("x\xff", 40, out, sizeof out);
	T_EQ_STR(out, "x\\xff");
	/* bidi override shown, not obeyed */
	draw_fit("a\xe2\x80\xae" "b", 40, out, sizeof out);
	T_EQ_STR(out, "a\\u{202e}b");
	/* wide characters take two columns and are never cut in half */
	T_EQ_INT(draw_width("日本"), 4);
	T_EQ_INT(draw_fit("日本語", 4, out, sizeof out), 3);
	T_EQ_STR(out, "日~");
	T_EQ_INT(draw_width("ünï"), 3);
	T_EQ_INT(draw_fit("", 3, out, sizeof out), 0);
	T_EQ_INT(draw_fit("abc", 0, out, sizeof out), 0);
}

static void test_filter(void)
{
	struct table_filter f;
	char *err = NULL;
	T_EQ_INT(table_filter_parse("web", &f, &err), 0);
	T_CHECK(f.active && !f.negate);
	struct obj *o = obj_new(OBJ_VM);
	o->ns = intern("default");
	o->name = xstrdup("x");
	obj_label_add(o, "app", "web");
	obj_label_add(o, "tier", "front");
	T_CHECK(table_filter_match(&f, o, "default vm-WEB-1 Running"));
	T_CHECK(!table_filter_match(&f, o, "default vm-db-1 Running"));
	table_filter_free(&f);
	T_EQ_INT(table_filter_parse("!Running", &f, &err), 0);
	T_CHECK(f.negate);
	T_CHECK(!table_filter_match(&f, o, "vm-1 Running"));
	T_CHECK(table_filter_match(&f, o, "vm-1 Stopped"));
	table_filter_free(&f);
	T_EQ_INT(table_filter_parse("-l app=web,tier", &f, &err), 0);
	T_EQ_INT(f.nlabels, 2);
	T_CHECK(table_filter_match(&f, o, ""));
	table_filter_free(&f);
	T_EQ_INT(table_filter_parse("-l app!=web", &f, &err), 0);
	T_CHECK(!table_filter_match(&f, o, ""));
	table_filter_free(&f);
	T_EQ_INT(table_filter_parse("-l app=db", &f, &err), 0);
	T_CHECK(!table_filter_match(&f, o, ""));
	table_filter_free(&f);
	T_EQ_INT(table_filter_parse("-l app=web,=x", &f, &err), -1); /* found by fuzz_uitext: use after free */
	T_CHECK(err && strstr(err, "'=x'"));
	free(err);
	err = NULL;
	T_EQ_INT(table_filter_parse("-l", &f, &err), -1);
	T_CHECK(err != NULL);
	free(err);
	err = NULL;
	T_EQ_INT(table_filter_parse("", &f, &err), 0);
	T_CHECK(!f.active);
	T_CHECK(table_filter_match(&f, o, "anything"));
	obj_free(o);
}

static void test_layout(void)
{
	struct column cols[3] = {
		{ "NAME", 4, 20, false, 'N', 0, NULL, NULL, NULL },
		{ "STATUS", 6, 10, false, 0, 0, NULL, NULL, NULL },
		{ "AGE", 3, 6, true, 0, 0, NULL, NULL, NULL },
	};
	bool shown[3] = { true, true, true };
	char *cells[6] = { "a-very-long-vm-name-indeed-yes", "Running", "5d", "short", "ErrorUnschedulable", "10s" };
	int w[3];
	int total = table_layout(cols, 3, shown, cells, 2, 200, -1, w);
	T_EQ_INT(w[0], 20); /* capped at maxw */
	T_EQ_INT(w[1], 10);
	T_EQ_INT(w[2], 3);
	T_EQ_INT(total, 20 + 10 + 3 + 4);
	total = table_layout(cols, 3, shown, cells, 2, 25, -1, w);
	T_CHECK(total <= 25);
	T_CHECK(w[2] >= 3);
	table_layout(cols, 3, shown, cells, 2, 200, 2, w);
	T_EQ_INT(w[2], 4); /* AGE plus the sort arrow */
	shown[1] = false;
	table_layout(cols, 3, shown, cells, 2, 200, -1, w);
	T_EQ_INT(w[1], 0);
}

static void test_theme(void)
{
	char *err = NULL;
	T_EQ_INT(theme_load_text("normal = default default\nselected = black cyan bold,reverse\n# c\n\n", "t", &err), 0);
	T_EQ_INT(theme_load_text("bogus = red blue\n", "t", &err), -1);
	T_CHECK(err && strstr(err, "t:1") && strstr(err, "bogus"));
	free(err);
	err = NULL;
	T_EQ_INT(theme_load_text("ok = red\n", "t", &err), -1);
	free(err);
	err = NULL;
	T_EQ_INT(theme_load_text("ok = 300 blue\n", "t", &err), -1);
	free(err);
	err = NULL;
	T_EQ_INT(theme_load_text("ok = 196 default underline\n", "t", &err), 0);
	/* every shipped theme parses */
	static const char *const names[] = { "themes/default", "themes/dark", "themes/light", "themes/mono" };
	for (size_t i = 0; i < 4; i++) {
		char *text = util_read_file(names[i], NULL);
		T_CHECK(text != NULL);
		if (text) {
			T_EQ_INT(theme_load_text(text, names[i], &err), 0);
			if (err)
				fprintf(stderr, "%s\n", err);
			free(err);
			err = NULL;
		}
		free(text);
	}
}

static void test_config(void)
{
	char *err = NULL;
	T_EQ_INT(sources_parse_config("# kvcon\ntheme = dark\nreadonly = true\nother = x\n", &err), 0);
	T_EQ_STR(sources_config_theme(), "dark");
	T_CHECK(sources_config_readonly());
	T_EQ_INT(sources_parse_config("readonly = false\n", &err), 0);
	T_CHECK(!sources_config_readonly());
	T_EQ_INT(sources_parse_config("garbage line\n", &err), -1);
	T_CHECK(err && strstr(err, "line 1"));
	free(err);
}

static void test_yaml(void)
{
	char *err = NULL;
	const char *json = "{\"a\":{\"b\":[1,\"two\",true,null]},\"s\":\"true\",\"n\":\"0123\",\"e\":\"x\\u001b[31m\"}";
	char *y = yamlview_from_json(json, strlen(json), &err);
	T_CHECK(y != NULL);
	if (y) {
		T_CHECK(strstr(y, "a:\n  b:\n  - 1\n  - two\n  - true\n  - null\n") != NULL);
		T_CHECK(strstr(y, "s: \"true\"") != NULL); /* a string that looks like a bool stays a string */
		T_CHECK(strstr(y, "\"n\": \"0123\"") != NULL); /* y/n are YAML 1.1 booleans */
		T_CHECK(strchr(y, '\033') == NULL);        /* libyaml escapes control characters */
	}
	free(y);
	y = yamlview_from_json("{bad", 4, &err);
	T_CHECK(y == NULL && err != NULL);
	free(err);
	err = NULL;
	y = yamlview_from_json("a: b\n", 5, &err); /* YAML passes through */
	T_EQ_STR(y, "a: b\n");
	free(y);
}

/* The list index: built from the store, filtered, sorted by a column, and kept right through replacements and
 * removals without redrawing (pointers fixed in place; a freed object is never reached: run under ASan). */
/* A new store and fake source for n fake VMs (the churn picks among them), all namespaces shown. */
static void fake_store(const char *name, int n)
{
	fst = store_new();
	fsrc = source_new(SOURCE_KUBE, name);
	fsrc->ops = &fake_ops;
	fake_n = n;
	ui_use_store(fst);
	ui_set_namespace(NULL);
}

static struct view *index_view;

static void index_listener(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)arg;
	index_view->ops->store_changed(index_view, kind, old, new_);
}

/* The VM list over n fake VMs (statuses in turn), following the store; returns the listener for index_close. */
static int index_open(const char *name, int n)
{
	fake_store(name, n);
	for (int i = 0; i < n; i++)
		fake_vm(i, statuses[i % 5]);
	index_view = table_view_new(&table_vm_spec);
	return store_listen(fst, index_listener, NULL);
}

static void index_close(int lid)
{
	store_unlisten(fst, lid);
	view_free(index_view);
	store_free(fst);
	ui_use_store(NULL);
}

static void test_index(void)
{
	int lid = index_open("idx", 100);
	T_EQ_INT(table_view_rows(index_view), 100);
	struct obj *sel = table_view_selected(index_view);
	T_CHECK(sel && strcmp(sel->name, "evil\033]0;pwned\007name") == 0); /* 'e' sorts before 'v' */
	/* shift-U sorts by STATUS: the first row has the smallest status */
	T_EQ_INT(index_view->ops->key(index_view, 'U'), VIEW_DONE);
	T_EQ_INT(index_view->ops->key(index_view, 'g'), VIEW_PASS); /* g is in the key table, not key() */
	table_view_select(index_view, store_find(fst, fsrc, OBJ_VM, "default", "vm-00001"));
	sel = table_view_selected(index_view);
	T_EQ_STR(sel->name, "vm-00001");
	/* replacing the selected object keeps it selected (the old pointer is freed by the store) */
	fake_vm(1, "Running");
	sel = table_view_selected(index_view);
	T_EQ_STR(sel->name, "vm-00001");
	T_EQ_STR(((struct vm *)sel)->printable_status, "Running");
	T_CHECK(sel->changed_ms != 0); /* its state moved: the row flashes */
	/* a filter: substring over the row's cells, case-insensitive */
	char *err = NULL;
	T_EQ_INT(table_view_set_filter(index_view, "VM-0001", &err), 0);
	T_EQ_INT(table_view_rows(index_view), 10);
	T_EQ_INT(table_view_set_filter(index_view, "!stopped", &err), 0);
	size_t not_stopped = table_view_rows(index_view);
	T_CHECK(not_stopped < 100 && not_stopped >= 75);
	T_EQ_INT(table_view_set_filter(index_view, " -l app=web", &err), 0);
	T_EQ_INT(table_view_rows(index_view), 50);
	/* a text filter kept while objects change: only changed rows are formatted again, and the rows are those a
	 * fresh filter would give */
	T_EQ_INT(table_view_set_filter(index_view, "running", &err), 0);
	size_t running = table_view_rows(index_view);
	fake_vm(0, "Running"), fake_vm(2, "Stopped"), fake_vm(3, "Stopped");
	size_t kept = table_view_rows(index_view);
	T_EQ_INT(table_view_set_filter(index_view, "running", &err), 0);
	T_EQ_INT(kept, table_view_rows(index_view));
	T_CHECK(kept != running);
	/* a VM row shows its VMI's phase: a VMI change alone brings the VM into the filtered rows */
	T_EQ_INT(table_view_set_filter(index_view, "WaitingForSync", &err), 0);
	T_EQ_INT(table_view_rows(index_view), 0);
	struct vmi *vmi = (struct vmi *)obj_new(OBJ_VMI), *cur = (struct vmi *)store_find(fst, fsrc, OBJ_VMI, "default", "vm-00004");
	T_CHECK(cur != NULL);
	vmi->o.src = fsrc;
	vmi->o.ns = cur->o.ns;
	vmi->o.name = xstrdup(cur->o.name);
	memcpy(vmi->o.uid, cur->o.uid, UID_LEN);
	vmi->phase = intern("WaitingForSync");
	store_upsert(fst, &vmi->o);
	T_EQ_INT(table_view_rows(index_view), 1);
	T_EQ_INT(table_view_set_filter(index_view, "", &err), 0);
	/* removal: the row goes, nothing dangles */
	struct obj *gone = store_find(fst, fsrc, OBJ_VM, "default", "vm-00001");
	store_remove(fst, fsrc, OBJ_VM, gone->uid);
	T_EQ_INT(table_view_rows(index_view), 99);
	sel = table_view_selected(index_view);
	T_CHECK(sel != NULL && strcmp(sel->name, "vm-00001") != 0);
	/* namespace scope */
	ui_set_namespace("prod");
	T_EQ_INT(table_view_rows(index_view), 34);
	ui_set_namespace(NULL);
	T_EQ_INT(table_view_rows(index_view), 99);
	index_close(lid);
}

/* v's rows are those of a fresh VM list sorted by the column of sort_key (0: the default). */
static void check_order(struct view *v, int sort_key)
{
	struct view *fresh = table_view_new(&table_vm_spec);
	if (sort_key)
		fresh->ops->key(fresh, sort_key);
	size_t n = table_view_rows(fresh);
	T_EQ_INT(table_view_rows(v), n);
	size_t same = 0;
	for (size_t i = 0; i < n; i++)
		same += table_view_row(v, i) == table_view_row(fresh, i);
	T_EQ_INT(same, n);
	view_free(fresh);
}

/* Churn that leaves the order alone (a status change in a list sorted by name, the common case) does not rebuild
 * the index: the new object takes the old one's row. A change of the sorted column's value re-sorts, and so does a
 * VMI change when the VM list is sorted by a VMI column (NODE). */
static void test_resort(void)
{
	int lid = index_open("resort", 30);
	T_EQ_INT(table_view_rows(index_view), 30);
	size_t at = 0;
	while (table_view_row(index_view, at) && strcmp(table_view_row(index_view, at)->name, "vm-00010") != 0)
		at++;
	size_t b0 = table_view_builds(index_view);
	fake_vm(10, "Paused"); /* was Running */
	struct vm *r = (struct vm *)table_view_row(index_view, at);
	T_CHECK(r && strcmp(r->o.name, "vm-00010") == 0 && strcmp(r->printable_status, "Paused") == 0);
	T_EQ_INT(table_view_builds(index_view), b0);
	check_order(index_view, 0);
	/* sorted by STATUS: the same change moves the row */
	T_EQ_INT(index_view->ops->key(index_view, 'U'), VIEW_DONE);
	table_view_rows(index_view);
	size_t b1 = table_view_builds(index_view);
	fake_vm(10, "Stopped");
	check_order(index_view, 'U');
	T_CHECK(table_view_builds(index_view) > b1);
	/* sorted by NODE, the VMI's: a VMI moving to another node moves its VM's row */
	T_EQ_INT(index_view->ops->key(index_view, 'O'), VIEW_DONE);
	table_view_rows(index_view);
	size_t b2 = table_view_builds(index_view);
	struct vmi *cur = (struct vmi *)store_find(fst, fsrc, OBJ_VMI, "default", "vm-00013");
	T_CHECK(cur != NULL);
	if (cur) {
		struct vmi *moved = (struct vmi *)obj_new(OBJ_VMI);
		moved->o.src = fsrc;
		moved->o.ns = cur->o.ns;
		moved->o.name = xstrdup(cur->o.name);
		memcpy(moved->o.uid, cur->o.uid, UID_LEN);
		memcpy(moved->vm_uid, cur->vm_uid, UID_LEN);
		moved->phase = intern("Running");
		moved->node = intern("node-0"); /* before node-a and node-b */
		store_upsert(fst, &moved->o);
		check_order(index_view, 'O');
		T_CHECK(table_view_builds(index_view) > b2);
	}
	index_close(lid);
}

/* Every row of v's index (as it is now, built or not) is an object the store holds, in name order (none freed:
 * the pointers are compared before anything is read through them); returns how many rows there are. */
static size_t rows_live(struct view *v)
{
	size_t n;
	struct obj *const *objs = store_objs(fst, fsrc, OBJ_VM, &n);
	size_t rows = 0;
	for (struct obj *o; (o = table_view_row_now(v, rows)) != NULL; rows++) {
		bool live = false;
		for (size_t k = 0; k < n && !live; k++)
			live = objs[k] == o;
		T_CHECK(live);
		if (!live)
			return rows;
		struct obj *prev = rows ? table_view_row_now(v, rows - 1) : NULL;
		T_CHECK(prev == NULL || strcmp(prev->name, o->name) < 0);
	}
	return rows;
}

/* A replaced or removed object's row is found through the row index (issue 28: no pass over the rows), also
 * after removals moved the rows below them; and a change to a row that is not on screen asks for no frame of
 * the list, one to a row on screen does. */
static void test_row_index(void)
{
	int lid = index_open("rowidx", 300);
	T_EQ_INT(table_view_rows(index_view), 300);
	/* drawn once into 30 lines (28 rows: "evil...", vm-00000 ... vm-00028 without 7 and 8) */
	setenv("LINES", "40", 1);
	setenv("COLUMNS", "120", 1);
	FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
	SCREEN *scr = out && in ? newterm("dumb", out, in) : NULL;
	T_CHECK(scr != NULL);
	if (scr)
		index_view->ops->draw(index_view, &(struct region){ .y = 0, .x = 0, .h = 30, .w = 120 });
	size_t b0 = table_view_builds(index_view);
	index_view->dirty = false;
	fake_vm(250, "Paused"); /* off screen: the VM, its VMI and its pod */
	T_CHECK(!index_view->dirty);
	fake_vm(251, "Stopped"); /* its VMI goes: still off screen */
	T_CHECK(!index_view->dirty);
	fake_vm(5, "Paused"); /* on screen */
	T_CHECK(index_view->dirty);
	index_view->dirty = false;
	struct vmi *vmi = (struct vmi *)obj_new(OBJ_VMI), *cur = (struct vmi *)store_find(fst, fsrc, OBJ_VMI, "default", "vm-00004");
	T_CHECK(cur != NULL);
	if (cur) { /* a VMI change alone, its VM on screen */
		vmi->o.src = fsrc;
		vmi->o.ns = cur->o.ns;
		vmi->o.name = xstrdup(cur->o.name);
		memcpy(vmi->o.uid, cur->o.uid, UID_LEN);
		vmi->phase = intern("Migrating");
		store_upsert(fst, &vmi->o);
		T_CHECK(index_view->dirty);
	} else {
		obj_free(&vmi->o);
	}
	T_EQ_INT(table_view_builds(index_view), b0);
	T_EQ_INT(rows_live(index_view), 300);
	/* removals move the rows below them up; the rows replaced after that are found all the same, before the
	 * index is built again */
	const int gone[] = { 100, 50, 60, 299 };
	for (size_t k = 0; k < sizeof gone / sizeof gone[0]; k++) {
		char uid[UID_LEN];
		snprintf(uid, UID_LEN, "00000000-0000-0000-0000-%012d", gone[k]);
		T_EQ_INT(store_remove(fst, fsrc, OBJ_VM, uid), 0);
	}
	T_CHECK(index_view->dirty); /* removed: the count in the title moved */
	for (int i = 20; i < 298; i += 3)
		if (i != 50 && i != 60 && i != 100)
			fake_vm(i, statuses[(i + 1) % 5]);
	T_EQ_INT(table_view_builds(index_view), b0);
	T_EQ_INT(rows_live(index_view), 296);
	for (int i = 297; i > 20; i -= 7) /* and the other way */
		if (i != 50 && i != 60 && i != 100)
			fake_vm(i, statuses[(i + 2) % 5]);
	T_EQ_INT(table_view_builds(index_view), b0);
	T_EQ_INT(rows_live(index_view), 296);
	/* built again: the same rows */
	T_EQ_INT(table_view_rows(index_view), 296);
	T_CHECK(table_view_builds(index_view) > b0);
	T_EQ_INT(rows_live(index_view), 296);
	check_order(index_view, 0);
	/* a frame for one changed row on screen draws that row alone (a mark on another line of the list stays);
	 * anything else that marks the list draws it whole (the mark goes). Tried again when the wall clock's second
	 * moved in between (ages: a frame of another second is drawn whole). */
	for (int attempt = 0; scr && attempt < 5; attempt++) {
		const struct region reg = { .y = 0, .x = 0, .h = 30, .w = 120 };
		index_view->dirty = false; /* as view_draw_all */
		index_view->ops->draw(index_view, &reg);
		int64_t s0 = util_wall_s();
		mvaddstr(12, 0, "ZZZZ");
		fake_vm(2, attempt % 2 ? "Running" : "Paused"); /* row 3 (line 5): vm-00002 */
		index_view->dirty = false; /* as view_draw_all */
		index_view->ops->draw(index_view, &reg);
		char line5[121] = "", line12[121] = "";
		mvinnstr(5, 0, line5, 120);
		mvinnstr(12, 0, line12, 120);
		if (util_wall_s() != s0)
			continue;
		T_CHECK(strstr(line5, "vm-00002") && strstr(line5, attempt % 2 ? "Running" : "Paused"));
		T_CHECK(strncmp(line12, "ZZZZ", 4) == 0);
		/* marked by something else first (a key, the tick), then the row: whole */
		view_dirty(index_view);
		fake_vm(2, "Starting");
		index_view->dirty = false; /* as view_draw_all */
		index_view->ops->draw(index_view, &reg);
		mvinnstr(12, 0, line12, 120);
		T_CHECK(strncmp(line12, "ZZZZ", 4) != 0);
		mvaddstr(12, 0, "ZZZZ");
		/* a row off screen: no frame; the tick's frame is whole */
		fake_vm(200, "Paused");
		T_CHECK(!index_view->dirty);
		view_dirty(index_view);
		index_view->dirty = false; /* as view_draw_all */
		index_view->ops->draw(index_view, &reg);
		mvinnstr(12, 0, line12, 120);
		T_CHECK(strncmp(line12, "ZZZZ", 4) != 0);
		/* frames of changed rows alone leave the screen as a whole frame would draw it (text and attributes:
		 * the flash of a changed row, statuses, widths that move with the text) */
		for (int k = 0; k < 60; k++) {
			int i = (int)((unsigned)k * 37u % 40u);
			fake_vm(i, statuses[(k + i) % 5]);
			if (k % 3 == 2 && index_view->dirty) { /* as view_draw_all */
				index_view->dirty = false;
				index_view->ops->draw(index_view, &reg);
			}
		}
		static chtype part[30][121], whole[30][121];
		for (int y = 0; y < 30; y++)
			mvwinchnstr(stdscr, y, 0, part[y], 120);
		view_dirty(index_view);
		index_view->dirty = false;
		index_view->ops->draw(index_view, &reg);
		for (int y = 0; y < 30; y++)
			mvwinchnstr(stdscr, y, 0, whole[y], 120);
		if (util_wall_s() != s0)
			continue;
		for (int y = 0; y < 30; y++)
			T_CHECK(memcmp(part[y], whole[y], sizeof part[y]) == 0);
		break;
	}
	if (scr) {
		endwin();
		delscreen(scr);
	}
	if (out)
		fclose(out);
	if (in)
		fclose(in);
	index_close(lid);
}

/* The header's VM counts follow the store change by change: after upserts that change a VM's printableStatus
 * or namespace, deletes and a relist (mark, upsert, sweep) they equal a count over the store, without counting
 * over the store again; a change the hook did not see is caught by the store's version. */
static bool hdr_moved; /* what header_store_changed said of the last change */

static void hdr_listener(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)arg;
	hdr_moved = header_store_changed(fst, kind, old, new_);
}

static void put_vm(int i, const char *ns, const char *status)
{
	struct vm *vm = (struct vm *)obj_new(OBJ_VM);
	vm->o.src = fsrc;
	vm->o.ns = intern(ns);
	vm->o.name = xasprintf("hvm-%05d", i);
	snprintf(vm->o.uid, UID_LEN, "44444444-0000-0000-0000-%012d", i);
	vm->printable_status = intern(status); /* NULL stays NULL */
	store_upsert(fst, &vm->o);
}

static void del_vm(int i)
{
	char uid[UID_LEN];
	snprintf(uid, UID_LEN, "44444444-0000-0000-0000-%012d", i);
	store_remove(fst, fsrc, OBJ_VM, uid);
}

/* The header's counts for ns against a count over the store; returns how many statuses there are. */
static int check_counts(const char *ns)
{
	struct header_status got[HEADER_MAX_STATUS], want[HEADER_MAX_STATUS];
	int ngot, nwant = 0;
	size_t total = header_vm_counts(fst, ns, got, &ngot), want_total = 0;
	for (size_t s = 0; s < source_count(); s++) {
		size_t n;
		struct obj *const *vms = store_objs(fst, source_get(s), OBJ_VM, &n);
		for (size_t i = 0; i < n; i++) {
			if (ns && strcmp(vms[i]->ns, ns) != 0)
				continue;
			const char *st = ((struct vm *)vms[i])->printable_status;
			st = st && *st ? st : "Unknown";
			want_total++;
			int k = 0;
			while (k < nwant && strcmp(want[k].status, st) != 0)
				k++;
			if (k == nwant)
				want[nwant++] = (struct header_status){ st, 0 };
			want[k].n++;
		}
	}
	T_EQ_INT(total, want_total);
	T_EQ_INT(ngot, nwant);
	for (int k = 0; k < nwant; k++) {
		int j = 0;
		while (j < ngot && strcmp(got[j].status, want[k].status) != 0)
			j++;
		T_CHECK(j < ngot);
		if (j < ngot)
			T_EQ_INT(got[j].n, want[k].n);
	}
	for (int j = 1; j < ngot; j++)
		T_CHECK(got[j - 1].n >= got[j].n); /* most frequent first */
	return ngot;
}

static void test_header_counts(void)
{
	static const char *const st5[] = { "Running", "Stopped", "Starting", "Paused", "ErrorUnschedulable" };
	fst = store_new();
	fsrc = source_new(SOURCE_KUBE, "hdr");
	fsrc->ops = &fake_ops;
	ui_use_store(fst);
	int lid = store_listen(fst, hdr_listener, NULL);
	for (int i = 0; i < 500; i++)
		put_vm(i, i % 3 ? "default" : "prod", st5[i % 5]);
	put_vm(500, "default", NULL);
	put_vm(501, "default", "");
	size_t r0 = header_recounts();
	T_EQ_INT(check_counts(NULL), 6); /* the five and Unknown */
	T_EQ_INT(header_recounts(), r0 + 1);
	T_EQ_INT(check_counts(NULL), 6);
	T_EQ_INT(header_recounts(), r0 + 1); /* nothing changed: not counted again */
	/* status changes, one of them to an empty status */
	for (int i = 0; i < 100; i++)
		put_vm(i * 7 % 500, i * 7 % 500 % 3 ? "default" : "prod", st5[(i + 1) % 5]);
	put_vm(3, "prod", "");
	check_counts(NULL);
	/* a status gone entirely is not shown, a new one is */
	size_t nvm;
	struct obj *const *vms = store_objs(fst, fsrc, OBJ_VM, &nvm);
	int paused[600], npaused = 0;
	const char *paused_ns[600];
	for (size_t i = 0; i < nvm && npaused < 600; i++)
		if (((struct vm *)vms[i])->printable_status == intern("Paused")) {
			paused_ns[npaused] = vms[i]->ns;
			paused[npaused++] = atoi(vms[i]->name + 4);
		}
	T_CHECK(npaused > 50);
	for (int i = 0; i < npaused; i++)
		put_vm(paused[i], paused_ns[i], "Migrating");
	T_EQ_INT(check_counts(NULL), 6);
	struct header_status c[HEADER_MAX_STATUS];
	int nc;
	header_vm_counts(fst, NULL, c, &nc);
	for (int k = 0; k < nc; k++)
		T_CHECK(strcmp(c[k].status, "Paused") != 0);
	/* deletes, and a VM moving to another namespace under the same UID */
	for (int i = 0; i < 40; i++)
		del_vm(i * 11 % 500);
	put_vm(1, "prod", "Running");
	check_counts(NULL);
	/* a relist: everything marked, two thirds upserted again (some with another status, a few new), the rest
	 * swept */
	store_mark(fst, fsrc, OBJ_VM, NULL);
	for (int i = 0; i < 520; i++)
		if (i % 3)
			put_vm(i, i % 3 ? "default" : "prod", st5[(i + 2) % 5]);
	T_CHECK(store_sweep(fst, fsrc, OBJ_VM, NULL) > 100);
	check_counts(NULL);
	T_EQ_INT(header_recounts(), r0 + 1); /* all of it followed change by change */
	/* one namespace: counted once when it is chosen, then followed */
	check_counts(intern("default"));
	T_EQ_INT(header_recounts(), r0 + 2);
	put_vm(2, "default", "Stopped");
	put_vm(2, "prod", "Stopped"); /* leaves the namespace */
	put_vm(1, "default", "Paused");
	del_vm(4);
	put_vm(600, "prod", "Running"); /* changes in other namespaces do not count */
	put_vm(600, "prod", "Stopped");
	check_counts(intern("default"));
	put_vm(600, "default", "Stopped"); /* comes into the namespace */
	check_counts(intern("default"));
	T_EQ_INT(header_recounts(), r0 + 2);
	/* only a change that moves the counts asks for the header to be drawn again (issue 28) */
	put_vm(600, "default", "Stopped");
	T_CHECK(!hdr_moved);
	put_vm(600, "default", "Running");
	T_CHECK(hdr_moved);
	put_vm(600, "prod", "Running");
	T_CHECK(hdr_moved);
	put_vm(600, "prod", "Paused");
	T_CHECK(!hdr_moved);
	check_counts(intern("default"));
	T_EQ_INT(header_recounts(), r0 + 2);
	/* against the counts last drawn: changes that move them and move them back before the frame need none */
	setenv("LINES", "40", 1);
	setenv("COLUMNS", "120", 1);
	FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
	SCREEN *scr = out && in ? newterm("dumb", out, in) : NULL;
	T_CHECK(scr != NULL);
	if (scr) {
		header_draw(&(struct region){ .y = 0, .x = 0, .h = 4, .w = 120 }, fst, false, intern("default"));
		T_CHECK(!header_counts_moved(fst, intern("default")));
		put_vm(600, "default", "Running"); /* into the namespace */
		T_CHECK(hdr_moved && header_counts_moved(fst, intern("default")));
		put_vm(600, "prod", "Paused"); /* and out again */
		T_CHECK(hdr_moved && !header_counts_moved(fst, intern("default")));
		put_vm(2, "default", "Running");
		put_vm(2, "default", "Paused");
		T_CHECK(header_counts_moved(fst, intern("default")));
		T_CHECK(header_counts_moved(fst, NULL)); /* not what was drawn */
		header_draw(&(struct region){ .y = 0, .x = 0, .h = 4, .w = 120 }, fst, false, intern("default"));
		T_CHECK(!header_counts_moved(fst, intern("default")));
		endwin();
		delscreen(scr);
	}
	if (out)
		fclose(out);
	if (in)
		fclose(in);
	check_counts(intern("default"));
	T_EQ_INT(header_recounts(), r0 + 2);
	/* a change the hook did not see: the version says so, and the counts are right again */
	store_unlisten(fst, lid);
	put_vm(5, "default", "Terminating");
	check_counts(intern("default"));
	T_EQ_INT(header_recounts(), r0 + 3);
	store_free(fst);
	ui_use_store(NULL);
}

/* The namespace list is built from per-namespace counts that follow the store: asking again without a store
 * change, or after changes that add or remove no namespace, scans nothing; a namespace appearing or going shows
 * at once; the list equals one built from a scan of the store. */
static void ns_listener(void *arg, enum obj_kind kind, const struct obj *old, const struct obj *new_)
{
	(void)arg;
	nsctx_store_changed(fst, kind, old, new_);
}

static int list_names(struct source *src, names_done_cb done, void *arg, char **err)
{
	(void)src;
	(void)err;
	static const char *const names[] = { "listed-a", "default" };
	done(arg, 0, names, 2, NULL);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "all", then the namespaces of the store's VMs, VMIs and pods plus extra (NULL-terminated), sorted. */
static void check_ns(const char *const *extra)
{
	const char *want[64];
	size_t nw = 0;
	want[nw++] = "all";
	for (size_t s = 0; s < source_count(); s++)
		for (int k = OBJ_VM; k < OBJ_EVENT; k++) {
			size_t n;
			struct obj *const *objs = store_objs(fst, source_get(s), (enum obj_kind)k, &n);
			for (size_t i = 0; i < n; i++) {
				size_t j = 0;
				while (j < nw && strcmp(want[j], objs[i]->ns) != 0)
					j++;
				if (j == nw && nw < 64)
					want[nw++] = objs[i]->ns;
			}
		}
	for (; extra && *extra; extra++) {
		size_t j = 0;
		while (j < nw && strcmp(want[j], *extra) != 0)
			j++;
		if (j == nw && nw < 64)
			want[nw++] = *extra;
	}
	qsort(want + 1, nw - 1, sizeof *want, cmp_names);
	size_t n;
	const char *const *got = nsctx_namespaces(&n);
	T_EQ_INT(n, nw);
	for (size_t i = 0; i < n && i < nw; i++)
		T_EQ_STR(got[i], want[i]);
}

/* An object of the fake source with just its identity, stored. */
static void put_obj(enum obj_kind kind, const char *ns, const char *name, const char *uid)
{
	struct obj *o = obj_new(kind);
	o->src = fsrc;
	o->ns = intern(ns);
	o->name = xstrdup(name);
	snprintf(o->uid, UID_LEN, "%s", uid);
	store_upsert(fst, o);
}

static void test_ns_list(void)
{
	fake_store("nslist", 60);
	int lid = store_listen(fst, ns_listener, NULL);
	for (int i = 0; i < 60; i++)
		fake_vm(i, statuses[i % 5]);
	size_t s0 = nsctx_scans(), n, n2;
	const char *const *names = nsctx_namespaces(&n);
	T_EQ_INT(nsctx_scans(), s0 + 1);
	T_EQ_INT(n, 3);
	T_EQ_STR(names[0], "all");
	T_EQ_STR(names[1], "default");
	T_EQ_STR(names[2], "prod");
	/* again, nothing changed: the same list, no scan */
	T_CHECK(nsctx_namespaces(&n2) == names);
	T_EQ_INT(n2, n);
	T_EQ_INT(nsctx_scans(), s0 + 1);
	/* status churn (VMIs and pods come and go within the namespaces): no scan, the same list */
	for (int i = 0; i < 60; i++)
		fake_vm(i * 7 % 60, statuses[(i + 2) % 5]);
	check_ns(NULL);
	T_EQ_INT(nsctx_scans(), s0 + 1);
	/* a VM in a new namespace shows at once, in order; gone when its last object goes */
	put_obj(OBJ_VM, "blue", "vm-blue", "55555555-0000-0000-0000-000000000001");
	names = nsctx_namespaces(&n);
	T_EQ_INT(n, 4);
	T_EQ_STR(names[1], "blue");
	check_ns(NULL);
	put_obj(OBJ_POD, "blue", "pod-blue", "55555555-0000-0000-0000-000000000002");
	store_remove(fst, fsrc, OBJ_VM, "55555555-0000-0000-0000-000000000001");
	check_ns(NULL); /* the pod keeps it */
	T_EQ_INT(nsctx_namespaces(&n)[1] == intern("blue"), 1);
	store_remove(fst, fsrc, OBJ_POD, "55555555-0000-0000-0000-000000000002");
	check_ns(NULL);
	T_EQ_INT(nsctx_namespaces(&n)[1] == intern("default"), 1);
	/* events do not make a namespace */
	put_obj(OBJ_EVENT, "events-only", "e1", "55555555-0000-0000-0000-000000000003");
	check_ns(NULL);
	/* a relist that sweeps a namespace's objects */
	store_mark(fst, fsrc, OBJ_VM, "prod");
	store_mark(fst, fsrc, OBJ_VMI, "prod");
	store_mark(fst, fsrc, OBJ_POD, "prod");
	store_sweep(fst, fsrc, OBJ_VM, "prod");
	store_sweep(fst, fsrc, OBJ_VMI, "prod");
	check_ns(NULL); /* its pods are still there */
	store_sweep(fst, fsrc, OBJ_POD, "prod");
	check_ns(NULL);
	T_EQ_INT(nsctx_namespaces(&n) != NULL && n == 2, 1);
	T_EQ_INT(nsctx_scans(), s0 + 1); /* all of it followed change by change */
	/* the current namespace is offered even without objects */
	ui_set_namespace("green");
	check_ns((const char *const[]){ "green", NULL });
	ui_set_namespace(NULL);
	check_ns(NULL);
	/* a cluster's namespace list: shown while its source is open */
	static const struct provider_ops list_ops = { .type = "fake", .list_namespaces = list_names };
	struct source *lsrc = source_new(SOURCE_KUBE, "nslist-api");
	lsrc->ops = &list_ops;
	check_ns(NULL);
	nsctx_refresh();
	check_ns((const char *const[]){ "listed-a", NULL });
	source_close(lsrc);
	check_ns(NULL);
	T_EQ_INT(nsctx_scans(), s0 + 1);
	/* a change the hook did not see: the version says so, the store is scanned again */
	store_unlisten(fst, lid);
	fake_vm(3, "Running"); /* a prod VM again */
	check_ns(NULL);
	T_EQ_INT(nsctx_scans(), s0 + 2);
	store_free(fst);
	ui_use_store(NULL);
}

/* Panes: a raw pane gets every key (Esc, ':' and Ctrl+] included) while focused and gives focus back itself;
 * the main view gets keys again afterwards; closing the pane frees it. No terminal needed. */
static int pane_keys[16], npane_keys, main_keys;
static bool pane_freed;

static enum view_result pane_key(struct view *v, int key)
{
	(void)v;
	if (npane_keys < 16)
		pane_keys[npane_keys++] = key;
	return key == VKEY_CTRL(']') ? VIEW_UNFOCUS : VIEW_DONE;
}

static void pane_destroy(struct view *v)
{
	(void)v;
	pane_freed = true;
}

static enum view_result main_key(struct view *v, int key)
{
	(void)v;
	(void)key;
	main_keys++;
	return VIEW_DONE;
}

static void nodraw(struct view *v, const struct region *r)
{
	(void)v;
	(void)r;
}

static void test_panes(void)
{
	static const struct view_ops pane_ops = { .name = "pane", .draw = nodraw, .key = pane_key, .destroy = pane_destroy };
	static const struct view_ops main_ops = { .name = "main", .draw = nodraw, .key = main_key };
	view_replace_all(view_new(&main_ops, NULL));
	view_layout(&(struct region){ 4, 0, 35, 120 });
	struct view *p = view_new(&pane_ops, NULL);
	p->raw = true;
	view_pane_open(p);
	T_CHECK(view_focused() == p);
	T_CHECK(p->r.h > 0 && p->r.y > 4 && view_top()->r.h > 0); /* split under the main view */
	static const int seq[] = { VKEY_ESC, ':', 'q', '\t', VKEY_CTRL(']') };
	for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
		view_key_dispatch(seq[i]);
	T_EQ_INT(npane_keys, 5);
	T_EQ_INT(pane_keys[0], VKEY_ESC);
	T_EQ_INT(pane_keys[4], VKEY_CTRL(']'));
	T_CHECK(view_focused() == view_top()); /* Ctrl+] gave focus back */
	view_key_dispatch('j');
	T_EQ_INT(main_keys, 1);
	T_EQ_INT(npane_keys, 5);
	view_pane_zoom(true);
	T_CHECK(view_top()->r.h == 0 || p->r.h >= 33); /* zoomed: the pane takes the body */
	view_pane_zoom(false);
	view_focus_pane(true);
	T_CHECK(view_focused() == p);
	view_pane_close(p);
	T_CHECK(pane_freed);
	T_EQ_INT(view_pane_count(), 0);
	T_CHECK(view_focused() == view_top());
	view_free_all();
}

static const struct view_key *pf_keys(void)
{
	return forwards_keys;
}

/* The key tables the man page and `?` are checked against, with the man page's subsection titles. */
static const struct {
	const char *title;
	const struct view_key *(*keys)(void);
} key_tables[] = {
	{ "List views (VMs, VMIs, launcher pods, events)", table_view_keys },
	{ "VM view", vmview_keys },
	{ "Pager (help, YAML, walkthrough)", pager_keys_table },
	{ "Log pane", log_view_keys },
	{ "Node list (:node)", clusterlist_node_keys },
	{ "Migration list (:vmim)", clusterlist_vmim_keys },
	{ "PVC and DataVolume lists (:pvc, :dv)", clusterlist_storage_keys },
	{ "Replica set list (:vmirs)", clusterlist_vmirs_keys },
	{ "Port forwards (:pf)", pf_keys },
};

static const struct view_key *global_keys(void)
{
	return ui_global_keys;
}

static void roff_label(struct buf *b, const char *label)
{
	buf_add_str(b, ".TP\n.B ");
	for (const char *p = label; *p; p++) {
		if (*p == '-' || *p == '\\')
			buf_add_char(b, '\\');
		buf_add_char(b, *p);
	}
	buf_add_char(b, '\n');
}

/* The KEYS and VIEW COMMANDS sections of man/kvcon.1, generated from the tables (`test_ui --man`). */
static void man_keys(struct buf *b)
{
	buf_add_str(b, ".SH KEYS\n");
	for (size_t t = 0; t < sizeof key_tables / sizeof key_tables[0] + 1; t++) {
		const char *title = t < sizeof key_tables / sizeof key_tables[0] ? key_tables[t].title : "Everywhere";
		const struct view_key *keys = t < sizeof key_tables / sizeof key_tables[0] ? key_tables[t].keys() : global_keys();
		buf_printf(b, ".SS %s\n", title);
		for (const struct view_key *k = keys; k->key; k++) {
			roff_label(b, k->label);
			buf_printf(b, "%s\n", k->help);
		}
		const struct action_def *a;
		for (size_t i = 0; t < 2 && (a = registry_action_at(i)) != NULL; i++)
			if (a->key) { /* the lifecycle keys (model/registry.c) of the views with a VM */
				roff_label(b, a->key_label);
				buf_printf(b, "%s\n", a->key_help);
			}
		for (int i = 0; t < 2 && i < GV_COUNT; i++)
			if (registry_guest_verb((enum guest_verb)i)->key) { /* shift-F (model/registry.c) */
				roff_label(b, registry_guest_verb((enum guest_verb)i)->key_label);
				buf_printf(b, "%s\n", registry_guest_verb((enum guest_verb)i)->key_help);
			}
		if (t < 2)
			for (size_t i = 0; i < view_npanes; i++) {
				char l[2] = { (char)view_panes[i].key, 0 };
				roff_label(b, l);
				buf_printf(b, "%s\n", view_panes[i].help);
			}
	}
	buf_add_str(b, ".SH VIEW COMMANDS\nTyped after \\fB:\\fR in the dashboard; tab completes names.\n");
	for (size_t i = 0; i < cmdline_ncmds; i++) {
		buf_printf(b, ".TP\n.B :%s", cmdline_cmds[i].name);
		if (cmdline_cmds[i].args[0])
			buf_printf(b, " \\fI%s\\fR", cmdline_cmds[i].args);
		buf_printf(b, "\n%s", cmdline_cmds[i].help);
		if (cmdline_aliases(&cmdline_cmds[i]) && *cmdline_aliases(&cmdline_cmds[i]))
			buf_printf(b, " (also: %s)", cmdline_aliases(&cmdline_cmds[i]));
		buf_add_str(b, "\n");
	}
}

/* Every key of every table is in the man page (as generated) and in `?` help. */
static void test_man_and_help(void)
{
	char *man = util_read_file("man/kvcon.1", NULL);
	T_CHECK(man != NULL);
	if (man == NULL)
		return;
	struct buf want;
	buf_init(&want);
	man_keys(&want);
	const char *start = strstr(man, ".SH KEYS\n");
	T_CHECK(start != NULL);
	if (start) {
		const char *end = strstr(start, ".SH VIEW COMMANDS\n");
		end = end ? strstr(end + 1, "\n.SH ") : NULL;
		size_t len = end ? (size_t)(end + 1 - start) : strlen(start);
		T_CHECK(len == want.len && memcmp(start, want.data, len) == 0);
		if (!(len == want.len && memcmp(start, want.data, len) == 0))
			fprintf(stderr, "man/kvcon.1 KEYS differ from the key tables: regenerate with build/tests/test_ui --man\n");
	}
	struct buf help;
	buf_init(&help);
	help_text(NULL, &help);
	for (size_t t = 0; t < sizeof key_tables / sizeof key_tables[0] + 1; t++) {
		const struct view_key *keys = t < sizeof key_tables / sizeof key_tables[0] ? key_tables[t].keys() : global_keys();
		for (const struct view_key *k = keys; k->key; k++) {
			char line[160];
			snprintf(line, sizeof line, "  %-10s %s\n", k->label, k->help);
			T_CHECK(strstr(help.data, line) != NULL);
		}
	}
	const struct action_def *a;
	for (size_t i = 0; (a = registry_action_at(i)) != NULL; i++)
		if (a->key) {
			char line[160];
			snprintf(line, sizeof line, "  %-10s %s\n", a->key_label, a->key_help);
			T_CHECK(strstr(help.data, line) != NULL);
		}
	for (int i = 0; i < GV_COUNT; i++)
		if (registry_guest_verb((enum guest_verb)i)->key) {
			char line[160];
			snprintf(line, sizeof line, "  %-10s %s\n", registry_guest_verb((enum guest_verb)i)->key_label,
				 registry_guest_verb((enum guest_verb)i)->key_help);
			T_CHECK(strstr(help.data, line) != NULL);
		}
	for (size_t i = 0; i < cmdline_ncmds; i++)
		T_CHECK(strstr(help.data, cmdline_cmds[i].help) != NULL);
	buf_free(&help);
	buf_free(&want);
	free(man);
}

/* xterm SGR mouse reports as screen.c decodes them (what the VNC pane turns into pointer events) */
static void test_sgr_mouse(void)
{
	struct view_mouse m;
	T_CHECK(screen_sgr_mouse("0;41;12", false, &m) && m.kind == VMOUSE_PRESS && m.button == 1 && m.x == 40 &&
		m.y == 11 && !m.shift && !m.alt && !m.ctrl);
	T_CHECK(screen_sgr_mouse("2;1;1", true, &m) && m.kind == VMOUSE_RELEASE && m.button == 3 && m.x == 0 && m.y == 0);
	T_CHECK(screen_sgr_mouse("32;70;23", false, &m) && m.kind == VMOUSE_MOTION && m.x == 69 && m.y == 22);
	T_CHECK(screen_sgr_mouse("64;5;5", false, &m) && m.kind == VMOUSE_WHEEL_UP);
	T_CHECK(screen_sgr_mouse("65;5;5", false, &m) && m.kind == VMOUSE_WHEEL_DOWN);
	T_CHECK(screen_sgr_mouse("20;300;200", false, &m) && m.kind == VMOUSE_PRESS && m.shift && m.ctrl && !m.alt &&
		m.x == 299 && m.y == 199);
	T_CHECK(!screen_sgr_mouse("66;5;5", false, &m));   /* wheel left */
	T_CHECK(!screen_sgr_mouse("3;5;5", false, &m));    /* no button */
	T_CHECK(!screen_sgr_mouse("0;0;5", false, &m));    /* columns count from 1 */
	T_CHECK(!screen_sgr_mouse("0;5", false, &m));
	T_CHECK(!screen_sgr_mouse("0;5;5;7", false, &m));
	T_CHECK(!screen_sgr_mouse("", false, &m));
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "--man") == 0) {
		struct buf b;
		buf_init(&b);
		man_keys(&b);
		fputs(b.data, stdout);
		buf_free(&b);
		return 0;
	}
	setlocale(LC_ALL, "C.UTF-8");
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--churn") == 0 && i + 1 < argc)
			churn_per_s = atoi(argv[++i]);
		else if (strcmp(argv[i], "--churn-every") == 0 && i + 1 < argc && atoi(argv[i + 1]) > 0)
			churn_every_ms = atoi(argv[++i]);
	if (argc >= 3 && strcmp(argv[1], "--dashboard") == 0)
		return dashboard(atoi(argv[2]));
	test_fit();
	test_wrap();
	test_filter();
	test_layout();
	test_theme();
	test_config();
	test_yaml();
	test_man_and_help();
	test_index();
	test_resort();
	test_row_index();
	test_header_counts();
	test_ns_list();
	test_panes();
	test_sgr_mouse();
	return T_DONE();
}
