/* Unit tests for core/jsonpath.c (kubectl's JSONPath templates), core/jout.c (kubectl-style JSON and YAML) and
 * core/kargs.c (kubectl's option forms). Expected outputs are what kubectl v1.32 prints for the same template and
 * document (checked side by side in tests/e2e/get_kubectl.sh on API objects). */
#include <json.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/jout.h"
#include "core/jsonpath.h"
#include "core/kargs.h"
#include "t.h"

static const char doc_text[] =
	"{\"kind\":\"List\",\"items\":["
	"{\"metadata\":{\"name\":\"a\",\"labels\":{\"tier\":\"web\",\"app\":\"x\",\"kubevirt.io/vm\":\"a\"}},"
	" \"status\":{\"phase\":\"Running\",\"n\":3,\"f\":1.5,\"ok\":true,"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"Paused\",\"status\":\"False\"}]}},"
	"{\"metadata\":{\"name\":\"b\"},\"status\":{\"phase\":\"Stopped\",\"n\":1,\"ok\":false,\"z\":null,"
	"  \"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}},"
	"{\"metadata\":{\"name\":\"c\\u001b]0;x\\u0007\"},\"status\":{\"phase\":\"Running\",\"n\":10}}]}";

static struct json_object *doc;

/* The template's output over doc, or "ERR" when it does not parse. */
static char *run(const char *tmpl, jsonpath_text_fn fn)
{
	char *err = NULL;
	struct jsonpath *jp = jsonpath_parse(tmpl, &err);
	if (jp == NULL) {
		free(err);
		return strdup("ERR");
	}
	struct buf b;
	buf_init(&b);
	int rc = jsonpath_print(jp, doc, &b, fn, &err);
	buf_add(&b, "", 0);
	jsonpath_free(jp);
	if (rc < 0) {
		T_CHECK(err != NULL && b.len == 0);
		free(err);
		buf_free(&b);
		return strdup("ERR-EXEC");
	}
	return buf_steal(&b);
}

#define JP(tmpl, want)                                                                                   \
	do {                                                                                             \
		char *got_ = run(tmpl, NULL);                                                            \
		T_EQ_STR(got_, want);                                                                    \
		free(got_);                                                                              \
	} while (0)

static void test_paths(void)
{
	JP("{.items[*].metadata.name}", "a b c\x1b]0;x\x07");
	JP("{.items[0].metadata.name}", "a");
	JP("{.items[-1].status.n}", "10");
	JP("{.items[1:3].status.phase}", "Stopped Running");
	JP("{.items[0:3:2].metadata.name}", "a c\x1b]0;x\x07");
	JP("{.items[0,2].status.n}", "3 10"); /* a and c */
	JP("{.items[0].status.f} {.items[0].status.ok} {.items[1].status.ok}", "1.5 true false");
	JP("{.items[0].metadata.labels}", "{\"app\":\"x\",\"kubevirt.io/vm\":\"a\",\"tier\":\"web\"}");
	JP("{.items[0].status.conditions[0]}", "{\"status\":\"True\",\"type\":\"Ready\"}");
	JP("{.items[0].metadata.labels['kubevirt\\.io/vm']}", "a");
	JP("{.items[0]['metadata.name']}", "a");
	JP("{.items[0].metadata['name','nope']}", "a");
	JP("{.items[0].metadata.labels.*}", "x a web");
	JP("{.kind}", "List");
	JP("{$.kind}{@.kind}", "ListList");
	JP("{.nope}{.items[0].nope.deeper}{.items[0:0]}", "");
	JP("{.items[7].metadata.name}", "ERR-EXEC"); /* client-go: out of bounds is an error */
	JP("{.items[1:9].metadata.name}", "ERR-EXEC");
	JP("{.items[-2:].metadata.name}", "b c\x1b]0;x\x07");
	JP("x{.kind}y", "xListy");
	JP("{\"a\\tb\\n\"}", "a\tb\n");
	JP("{.items[*].status.conditions[?(@.type==\"Ready\")].status}", "True False");
	JP("{.items[?(@.status.phase=='Running')].metadata.name}", "a c\x1b]0;x\x07");
	JP("{.items[?(@.status.n>2)].metadata.name}", "a c\x1b]0;x\x07");
	JP("{.items[?(@.status.n<=1)].metadata.name}", "b");
	JP("{.items[?(@.status.phase!=\"Running\")].metadata.name}", "b");
	JP("{.items[?(@.status.ok==false)].metadata.name}", "b");
	JP("{.items[?(@.status.conditions)].metadata.name}", "a b");
	JP("{range .items[*]}{.metadata.name}={.status.phase};{end}", "a=Running;b=Stopped;c\x1b]0;x\x07=Running;");
	JP("{range .items[*]}{range .status.conditions[*]}{.type}{end}|{end}", "ReadyPaused|Ready||");
	JP("{range .items}{.kind}{end}", ""); /* client-go: the list as one value */
	JP("{range.items[0:2]}[{.metadata.name}]{end}", "[a][b]");
	JP("{ range .items[0:2] }[{ .metadata.name }]{ end }", "[a][b]");
	JP("{..phase}", "Running Stopped Running");
	JP("{.items[0]..type}", "Ready Paused");
	/* syntax errors come back as errors */
	JP("{.items[", "ERR");
	JP("{range .items[*]}{.a}", "ERR");
	JP("{end}", "ERR");
	JP("{.a[?(@.b==\"c\"}", "ERR");
	JP("{\"unterminated}", "ERR");
	/* text values through an escaper: API text never reaches a terminal raw */
	char *s = run("{.items[2].metadata.name}{\"\\n\"}", jout_text);
	T_EQ_STR(s, "c\\e]0;x\\x07\n");
	free(s);
}

static void test_relaxed(void)
{
	const char *forms[] = { ".metadata.name", "metadata.name", "{.metadata.name}" };
	struct json_object *it = json_object_array_get_idx(json_object_object_get(doc, "items"), 1);
	for (size_t i = 0; i < 3; i++) {
		char *err = NULL;
		struct jsonpath *jp = jsonpath_parse_relaxed(forms[i], &err);
		T_CHECK(jp != NULL);
		struct json_object *v[2];
		T_EQ_INT(jsonpath_values(jp, it, v, 2), 1);
		T_EQ_STR(json_object_get_string(v[0]), "b");
		jsonpath_free(jp);
		free(err);
	}
	char *err = NULL;
	struct jsonpath *jp = jsonpath_parse_relaxed(".status.z", &err);
	struct json_object *v[2] = { doc, doc };
	T_EQ_INT(jsonpath_values(jp, it, v, 2), 1);
	T_CHECK(v[0] == NULL); /* JSON null */
	jsonpath_free(jp);
}

static char *as_json(const char *in, int indent)
{
	struct json_object *j = json_tokener_parse(in);
	struct buf b;
	buf_init(&b);
	jout_json(&b, j, indent, 0);
	buf_add(&b, "", 0);
	json_object_put(j);
	return buf_steal(&b);
}

static char *as_yaml(const char *in)
{
	struct json_object *j = json_tokener_parse(in);
	struct buf b;
	buf_init(&b);
	T_EQ_INT(jout_yaml(&b, j), 0);
	buf_add(&b, "", 0);
	json_object_put(j);
	return buf_steal(&b);
}

static void test_jout(void)
{
	char *s = as_json("{\"b\":1,\"a\":[true,null,\"<&>\\u007f\\u009b\\u001b\"],\"c\":{},\"d\":[],\"e\":2.5}", 0);
	T_EQ_STR(s, "{\"a\":[true,null,\"\\u003c\\u0026\\u003e\\u007f\\u009b\\u001b\"],\"b\":1,\"c\":{},\"d\":[],\"e\":2.5}");
	free(s);
	s = as_json("{\"b\":{\"x\":1},\"a\":[1]}", 4);
	T_EQ_STR(s, "{\n    \"a\": [\n        1\n    ],\n    \"b\": {\n        \"x\": 1\n    }\n}");
	free(s);
	/* kubectl's YAML: sorted keys, block style, strings that would read back as another type quoted */
	s = as_yaml("{\"b\":\"true\",\"a\":[\"1\",\"2026-01-02T03:04:05Z\",\"x\",\"02:70:86:20:78:82\",\"1:30\"],"
		    "\"c\":{},\"d\":[],\"e\":\"\",\"f\":5,\"g\":null,\"h\":\"05092dfd-6a5d\"}");
	T_EQ_STR(s, "a:\n- \"1\"\n- \"2026-01-02T03:04:05Z\"\n- x\n- 02:70:86:20:78:82\n- \"1:30\"\nb: \"true\"\nc: {}\n"
		    "d: []\ne: \"\"\nf: 5\ng: null\nh: 05092dfd-6a5d\n");
	free(s);
	s = as_yaml("{\"esc\":\"a\\u001b[31mb\\u009bc\\u007f\"}");
	T_CHECK(strchr(s, 0x1b) == NULL && strstr(s, "\xc2\x9b") == NULL && strchr(s, 0x7f) == NULL);
	T_CHECK(strstr(s, "\\e[31m") != NULL);
	free(s);
	char *v = jout_valid_utf8("a\xff\xc3\xa9", 4);
	T_EQ_STR(v, "a\xef\xbf\xbd\xc3\xa9");
	free(v);
}

enum { O_OUT, O_NS, O_ALL, O_WATCH, O_LABELS, O_HEAD };
static const struct karg_opt opts[] = {
	{ 'o', "output", KARG_VALUE, O_OUT },	  { 'n', "namespace", KARG_VALUE, O_NS }, { 'A', "all-namespaces", KARG_FLAG, O_ALL },
	{ 'w', "watch", KARG_FLAG, O_WATCH },	  { 'L', "label-columns", KARG_VALUE, O_LABELS },
	{ 0, "no-headers", KARG_FLAG, O_HEAD }, { 0, NULL, 0, 0 },
};

/* The options of argv as "id=value;" and positionals as "+value;", or "ERR". */
static char *parse(int argc, char **argv)
{
	struct karg k;
	struct buf b;
	buf_init(&b);
	karg_init(&k, argc, argv, opts);
	int id;
	while ((id = karg_next(&k)) != KARG_END) {
		if (id == KARG_ERR) {
			buf_free(&b);
			return strdup("ERR");
		}
		if (id == KARG_POS)
			buf_printf(&b, "+%s;", k.val);
		else
			buf_printf(&b, "%d=%s;", id, k.val);
	}
	buf_add(&b, "", 0);
	return buf_steal(&b);
}

#define ARGS(want, ...)                                                                                  \
	do {                                                                                             \
		char *av_[] = { "get", __VA_ARGS__ };                                                    \
		char *got_ = parse((int)(sizeof av_ / sizeof av_[0]), av_);                              \
		T_EQ_STR(got_, want);                                                                    \
		free(got_);                                                                              \
	} while (0)

static void test_kargs(void)
{
	ARGS("+vm;0=json;", "vm", "-o", "json");
	ARGS("0=json;", "-o=json");
	ARGS("0=json;", "-ojson");
	ARGS("0=json;", "--output", "json");
	ARGS("0=json;", "--output=json");
	ARGS("0=jsonpath={.a=b};", "-o", "jsonpath={.a=b}");
	ARGS("1=ns1;1=ns2;", "-nns1", "--namespace=ns2");
	ARGS("2=true;3=true;", "-Aw");
	ARGS("2=true;0=name;", "-Ao", "name");
	ARGS("2=true;0=name;", "-Aoname");
	ARGS("5=true;5=false;", "--no-headers", "--no-headers=false");
	ARGS("4=a,b;4=c;", "-L", "a,b", "-Lc");
	ARGS("+vm;+-x;", "vm", "--", "-x");
	ARGS("+-;", "-");
	ARGS("ERR", "-o");
	ARGS("ERR", "--output");
	ARGS("ERR", "--bogus");
	ARGS("ERR", "-Z");
	ARGS("ERR", "-Az");
	ARGS("ERR", "--no-headers=maybe");
	/* main's global options: one argument matched alone, the rest left for the command */
	char *av[] = { "-nfoo", "-n", "bar", "--namespace=baz", "-Aw", "vm", "-n" };
	int i = 0;
	const char *val = NULL;
	char err[80];
	T_EQ_INT(karg_match_one(opts, 7, av, &i, &val, err, sizeof err), O_NS);
	T_EQ_STR(val, "foo");
	T_EQ_INT(karg_match_one(opts, 7, av, &i, &val, err, sizeof err), O_NS);
	T_EQ_STR(val, "bar");
	T_EQ_INT(karg_match_one(opts, 7, av, &i, &val, err, sizeof err), O_NS);
	T_EQ_STR(val, "baz");
	T_EQ_INT(karg_match_one(opts, 7, av, &i, &val, err, sizeof err), KARG_POS); /* a flag group: the command's */
	i = 6;
	T_EQ_INT(karg_match_one(opts, 7, av, &i, &val, err, sizeof err), KARG_ERR);
}

int main(void)
{
	doc = json_tokener_parse(doc_text);
	T_CHECK(doc != NULL);
	test_paths();
	test_relaxed();
	test_jout();
	test_kargs();
	json_object_put(doc);
	return T_DONE();
}
