/* The engine service's pure request parsing (engine/apisel.c): label and field selectors as the API server reads
 * them, continue tokens, resourceVersions. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "engine/apisel.h"
#include "t.h"

struct labels {
	const char *const *kv; /* key, value, ..., NULL */
};

static const char *get(void *arg, const char *key)
{
	const struct labels *l = arg;
	for (int i = 0; l->kv[i]; i += 2)
		if (strcmp(l->kv[i], key) == 0)
			return l->kv[i + 1];
	return NULL;
}

static int sel_matches(const char *s, bool fields, const char *const *kv)
{
	char *err = NULL;
	struct apisel *sel = apisel_parse(s, fields, &err);
	if (sel == NULL) {
		free(err);
		return -1;
	}
	struct labels l = { kv };
	int m = apisel_match(sel, get, &l);
	apisel_free(sel);
	return m;
}

static void test_labels(void)
{
	const char *const pod[] = { "kubevirt.io", "virt-launcher", "kubevirt.io/created-by", "1234-abcd", "app", "web",
				    NULL };
	T_EQ_INT(sel_matches("", false, pod), 1);
	T_EQ_INT(sel_matches(NULL, false, pod), 1);
	T_EQ_INT(sel_matches("kubevirt.io=virt-launcher", false, pod), 1);
	T_EQ_INT(sel_matches("kubevirt.io==virt-launcher", false, pod), 1);
	T_EQ_INT(sel_matches("kubevirt.io!=virt-launcher", false, pod), 0);
	T_EQ_INT(sel_matches("missing!=x", false, pod), 1); /* absent: not equal */
	T_EQ_INT(sel_matches("kubevirt.io/created-by=1234-abcd,app=web", false, pod), 1);
	T_EQ_INT(sel_matches("kubevirt.io/created-by=1234-abcd,app=db", false, pod), 0);
	T_EQ_INT(sel_matches("app in (db, web)", false, pod), 1);
	T_EQ_INT(sel_matches("app in (db,cache)", false, pod), 0);
	T_EQ_INT(sel_matches("app notin (db)", false, pod), 1);
	T_EQ_INT(sel_matches("tier notin (db)", false, pod), 1);
	T_EQ_INT(sel_matches("app", false, pod), 1);
	T_EQ_INT(sel_matches("!app", false, pod), 0);
	T_EQ_INT(sel_matches("!tier", false, pod), 1);
	T_EQ_INT(sel_matches("  app = web ", false, pod), 1);
	/* malformed */
	T_EQ_INT(sel_matches("app in db", false, pod), -1);
	T_EQ_INT(sel_matches("app in (db", false, pod), -1);
	T_EQ_INT(sel_matches("app=web;", false, pod), -1);
	T_EQ_INT(sel_matches(",", false, pod), -1);
	T_EQ_INT(sel_matches("=x", false, pod), -1);
	char big[600];
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	T_EQ_INT(sel_matches(big, false, pod), -1);
}

/* a LabelSelector object (a replica set's spec.selector): matchLabels and matchExpressions' four operators match as
 * the string form does, print as Kubernetes prints them (sorted by key, values sorted), and parse back the same */
static int json_matches(const char *json, const char *const *kv, char **text, char **err)
{
	json_object *j = json_tokener_parse(json);
	struct apisel *sel = apisel_from_json(j, err);
	json_object_put(j);
	if (sel == NULL)
		return -1;
	struct labels l = { kv };
	int m = apisel_match(sel, get, &l);
	if (text)
		*text = apisel_format(sel);
	apisel_free(sel);
	return m;
}

static void test_label_selector_json(void)
{
	const char *const web[] = { "kubevirt.io/vmReplicaSet", "web", "tier", "front", NULL };
	const char *const db[] = { "kubevirt.io/vmReplicaSet", "web", "tier", "db", "canary", "1", NULL };
	const char *sel = "{\"matchLabels\":{\"kubevirt.io/vmReplicaSet\":\"web\"},\"matchExpressions\":["
			  "{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"front\",\"edge\"]},"
			  "{\"key\":\"canary\",\"operator\":\"DoesNotExist\"},"
			  "{\"key\":\"kubevirt.io/vmReplicaSet\",\"operator\":\"Exists\"},"
			  "{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"b\",\"a\"]}]}";
	char *text = NULL, *err = NULL;
	T_EQ_INT(json_matches(sel, web, &text, &err), 1);
	T_EQ_STR(text, "!canary,kubevirt.io/vmReplicaSet=web,kubevirt.io/vmReplicaSet,tier in (edge,front),"
		       "zone notin (a,b)");
	struct labels l = { web };
	struct apisel *back = apisel_parse(text, false, &err); /* what -l takes */
	T_CHECK(back != NULL && back->n == 5 && apisel_match(back, get, &l));
	apisel_free(back);
	free(text);
	T_EQ_INT(json_matches(sel, db, NULL, &err), 0); /* tier db, and canary exists */
	const char *const zone_a[] = { "kubevirt.io/vmReplicaSet", "web", "tier", "edge", "zone", "a", NULL };
	T_EQ_INT(json_matches(sel, zone_a, NULL, &err), 0);
	/* NotIn and DoesNotExist hold for an absent label; In and Exists do not */
	const char *const none[] = { NULL };
	T_EQ_INT(json_matches("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"NotIn\",\"values\":[\"x\"]},"
			      "{\"key\":\"b\",\"operator\":\"DoesNotExist\"}]}", none, NULL, &err), 1);
	T_EQ_INT(json_matches("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"x\"]}]}", none,
			      NULL, &err), 0);
	T_EQ_INT(json_matches("{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\"}]}", none, NULL, &err), 0);
	T_EQ_INT(json_matches("{}", none, &text, &err), 1); /* empty: everything */
	T_EQ_STR(text, "");
	free(text);
	/* malformed, with the field and the API server's words */
	static const struct {
		const char *json, *want;
	} bad[] = {
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\"}]}",
		  "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"Exists\",\"values\":[\"x\"]}]}",
		  "matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"x\"]},{\"key\":\"a\",\"operator\":\"Gt\",\"values\":[\"1\"]}]}",
		  "matchExpressions[1].operator: Unsupported value: \"Gt\": supported values: \"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"" },
		{ "{\"matchExpressions\":[{\"operator\":\"Exists\"}]}", "matchExpressions[0].key: Required value" },
		{ "{\"matchExpressions\":[{\"key\":\"a b\",\"operator\":\"Exists\"}]}",
		  "matchExpressions[0].key: Invalid value: \"a b\": not a valid label key" },
		{ "{\"matchExpressions\":{}}", "matchExpressions: Invalid value: a list is expected" },
		{ "{\"matchLabels\":{\"app\":\"a,b\"}}", "matchLabels: Invalid value: the value of \"app\" is not a valid label value" },
		{ "{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"In\",\"values\":[\"x)\"]}]}",
		  "matchExpressions[0].values[0]: Invalid value: not a valid label value" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err = NULL;
		T_EQ_INT(json_matches(bad[i].json, none, NULL, &err), -1);
		T_EQ_STR(err, bad[i].want);
		free(err);
	}
}

static void test_fields(void)
{
	const char *const vm[] = { "metadata.name", "demo", "metadata.namespace", "default", NULL };
	T_EQ_INT(sel_matches("metadata.name=demo", true, vm), 1);
	T_EQ_INT(sel_matches("metadata.name==demo,metadata.namespace=default", true, vm), 1);
	T_EQ_INT(sel_matches("metadata.name!=demo", true, vm), 0);
	T_EQ_INT(sel_matches("metadata.namespace=other", true, vm), 0);
	T_EQ_INT(sel_matches("metadata.name in (demo)", true, vm), -1); /* fields take =, ==, != only */
	T_EQ_INT(sel_matches("metadata.name", true, vm), -1);
	T_EQ_INT(sel_matches("!metadata.name", true, vm), -1);
}

static void test_continue(void)
{
	char *t = apisel_continue_encode(42, "default/demo");
	uint64_t rv = 0;
	char *last = NULL;
	T_EQ_INT(apisel_continue_decode(t, &rv, &last), 0);
	T_EQ_INT(rv, 42);
	T_EQ_STR(last, "default/demo");
	free(last);
	T_CHECK(strspn(t, "0123456789abcdef") == strlen(t)); /* safe in a query string */
	free(t);
	T_EQ_INT(apisel_continue_decode("", &rv, &last), -1);
	T_EQ_INT(apisel_continue_decode("abc", &rv, &last), -1);      /* odd length */
	T_EQ_INT(apisel_continue_decode("zz", &rv, &last), -1);       /* not hex */
	T_EQ_INT(apisel_continue_decode("3432", &rv, &last), -1);     /* "42": no slash */
	T_EQ_INT(apisel_continue_decode("2f6161", &rv, &last), -1);   /* "/aa": no resourceVersion */
	T_EQ_INT(apisel_continue_decode("782f6161", &rv, &last), -1); /* "x/aa": not a number */
	T_EQ_INT(apisel_continue_decode("3400", &rv, &last), -1);     /* NUL inside */
	T_EQ_INT(apisel_continue_decode("30372f61", &rv, &last), -1); /* "07/a": not canonical */
}

static void test_rv(void)
{
	uint64_t rv = 7;
	T_EQ_INT(apisel_rv_parse(NULL, &rv), 0);
	T_EQ_INT(rv, 0);
	T_EQ_INT(apisel_rv_parse("", &rv), 0);
	T_EQ_INT(apisel_rv_parse("12345", &rv), 0);
	T_EQ_INT(rv, 12345);
	T_EQ_INT(apisel_rv_parse("-1", &rv), -1);
	T_EQ_INT(apisel_rv_parse("12a", &rv), -1);
	T_EQ_INT(apisel_rv_parse("99999999999999999999999", &rv), -1);
}

static void test_pb(void)
{
	/* what `kubectl create namespace kvlab` sends: k8s\0, runtime.Unknown{typeMeta, raw: Namespace{metadata{name}}} */
	static const unsigned char ns[] = { 'k', '8', 's', 0,	 0x0a, 0x0f, 0x0a, 0x02, 'v', '1', 0x12, 0x09, 'N',  'a',
					    'm', 'e', 's', 'p',	 'a',  'c',  'e',  0x12, 0x0d, 0x0a, 0x07, 0x0a, 0x05, 'k',
					    'v', 'l', 'a', 'b',	 0x12, 0x00, 0x1a, 0x00, 0x1a, 0x00, 0x22, 0x00 };
	char *kind = NULL, *name = NULL;
	T_EQ_INT(apisel_pb_kind_name(ns, sizeof ns, &kind, &name), 0);
	T_EQ_STR(kind, "Namespace");
	T_EQ_STR(name, "kvlab");
	free(kind);
	free(name);
	T_EQ_INT(apisel_pb_kind_name(ns, 3, &kind, &name), -1);	      /* no envelope */
	T_EQ_INT(apisel_pb_kind_name(ns, sizeof ns - 12, &kind, &name), -1); /* cut inside the object */
	T_CHECK(kind == NULL && name == NULL);
	unsigned char bad[sizeof ns];
	memcpy(bad, ns, sizeof ns);
	bad[5] = 0x7f; /* a length past the end */
	T_EQ_INT(apisel_pb_kind_name(bad, sizeof bad, &kind, &name), -1);
	T_EQ_INT(apisel_pb_kind_name("k8s\0", 4, &kind, &name), -1); /* empty */
}

/* RFC 7386's appendix A, every example: original, patch, result. */
static void test_merge_patch(void)
{
	static const char *const v[][3] = {
		{ "{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}" },
		{ "{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}" },
		{ "{\"a\":\"b\"}", "{\"a\":null}", "{}" },
		{ "{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}" },
		{ "{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}" },
		{ "{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}" },
		{ "{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}" },
		{ "{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}" },
		{ "[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]" },
		{ "{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]" },
		{ "{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}" },
		{ "[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}" },
		{ "{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}" },
	};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		json_object *t = json_tokener_parse(v[i][0]), *p = json_tokener_parse(v[i][1]), *want = json_tokener_parse(v[i][2]);
		json_object *got = apisel_merge_patch(t, p);
		if (!json_object_equal(got, want))
			fprintf(stderr, "merge patch %zu: got %s\n", i, json_object_to_json_string(got));
		T_CHECK(json_object_equal(got, want));
		json_object_put(got);
		json_object_put(p);
		json_object_put(want);
	}
	/* "null" patches to nothing */
	json_object *got = apisel_merge_patch(json_tokener_parse("{\"a\":1}"), NULL);
	T_CHECK(got == NULL);
}

/* RFC 6902: what virtctl's credentials send (append to an array, the test-then-add of a missing member), the
 * RFC's own examples of each operation, and the failures that must leave nothing half-done. */
static void test_json_patch(void)
{
	static const char *const ok[][3] = {
		{ "{\"a\":{\"l\":[1]}}", "[{\"op\":\"add\",\"path\":\"/a/l/-\",\"value\":2}]", "{\"a\":{\"l\":[1,2]}}" },
		{ "{\"a\":{}}",
		  "[{\"op\":\"test\",\"path\":\"/a/l\",\"value\":null},{\"op\":\"add\",\"path\":\"/a/l\",\"value\":[]},"
		  "{\"op\":\"add\",\"path\":\"/a/l/-\",\"value\":{\"k\":1}}]",
		  "{\"a\":{\"l\":[{\"k\":1}]}}" },
		{ "{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]",
		  "{\"foo\":[\"bar\",\"qux\",\"baz\"]}" },
		{ "{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]", "{\"foo\":\"bar\"}" },
		{ "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]",
		  "{\"foo\":[\"bar\",\"baz\"]}" },
		{ "{\"baz\":\"qux\"}", "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]", "{\"baz\":\"boo\"}" },
		{ "{\"a/b\":1,\"m~n\":2}", "[{\"op\":\"replace\",\"path\":\"/a~1b\",\"value\":3},{\"op\":\"remove\",\"path\":\"/m~0n\"}]",
		  "{\"a/b\":3}" },
		{ "{\"data\":{\"k\":\"dg==\"}}", "[{\"op\":\"add\",\"path\":\"/data/ssh-key-x\",\"value\":\"YQ==\"}]",
		  "{\"data\":{\"k\":\"dg==\",\"ssh-key-x\":\"YQ==\"}}" },
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		json_object *ops = json_tokener_parse(ok[i][1]), *want = json_tokener_parse(ok[i][2]);
		char *err = NULL;
		json_object *got = apisel_json_patch(json_tokener_parse(ok[i][0]), ops, &err);
		if (!json_object_equal(got, want))
			fprintf(stderr, "json patch %zu: got %s (%s)\n", i, json_object_to_json_string(got), err ? err : "");
		T_CHECK(got && json_object_equal(got, want));
		json_object_put(got);
		json_object_put(ops);
		json_object_put(want);
		free(err);
	}
	static const char *const bad[][2] = {
		{ "{\"a\":[]}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":null}]" }, /* the test fails */
		{ "{}", "[{\"op\":\"remove\",\"path\":\"/nope\"}]" },
		{ "{}", "[{\"op\":\"add\",\"path\":\"/x/y\",\"value\":1}]" },		    /* no parent */
		{ "{\"l\":[1]}", "[{\"op\":\"add\",\"path\":\"/l/5\",\"value\":1}]" },	    /* past the end */
		{ "{\"l\":[1]}", "[{\"op\":\"replace\",\"path\":\"/l/01\",\"value\":1}]" },   /* leading zero */
		{ "{}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/b\"}]" },	     /* not supported */
		{ "{}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]" },		     /* not a pointer */
		{ "{}", "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]" },		     /* a bad escape */
		{ "{}", "{\"op\":\"add\"}" },						     /* not an array */
		{ "{}", "[{\"op\":\"add\",\"path\":\"/a\"}]" },				     /* no value */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_object *ops = json_tokener_parse(bad[i][1]);
		char *err = NULL;
		json_object *got = apisel_json_patch(json_tokener_parse(bad[i][0]), ops, &err);
		if (got)
			fprintf(stderr, "json patch bad %zu: got %s\n", i, json_object_to_json_string(got));
		T_CHECK(got == NULL && err != NULL);
		json_object_put(got);
		json_object_put(ops);
		free(err);
	}
}

/* A protobuf Secret as kubectl's typed client sends `kubectl create secret generic s1 --from-literal=user=x
 * -n ns1` (field by field), and a ConfigMap; other kinds and cut messages are refused. */
static void test_pb_object(void)
{
	static const unsigned char sec[] = {
		'k', '8', 's', 0,
		0x0a, 0x0c, 0x0a, 0x02, 'v', '1', 0x12, 0x06, 'S', 'e', 'c', 'r', 'e', 't',   /* typeMeta */
		0x12, 0x24,                                                                 /* raw: 36 bytes */
		0x0a, 0x09, 0x0a, 0x02, 's', '1', 0x1a, 0x03, 'n', 's', '1',                 /* metadata */
		0x12, 0x0b, 0x0a, 0x04, 'u', 's', 'e', 'r', 0x12, 0x03, 'x', 0x00, 'y',      /* data: user = "x\0y" */
		0x1a, 0x06, 'O', 'p', 'a', 'q', 'u', 'e',                                    /* type */
		0x28, 0x01,                                                                  /* immutable */
		0x22, 0x00,                                                                  /* stringData: an empty entry */
	};
	json_object *o = apisel_pb_object(sec, sizeof sec);
	T_CHECK(o != NULL);
	json_object *want = json_tokener_parse("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s1\","
					       "\"namespace\":\"ns1\"},\"data\":{\"user\":\"eAB5\"},\"type\":\"Opaque\","
					       "\"immutable\":true,\"stringData\":{\"\":\"\"}}");
	(void)want;
	json_object *d = NULL, *t = NULL, *im = NULL;
	T_CHECK(o && json_object_object_get_ex(o, "data", &d));
	T_EQ_STR(d ? json_object_get_string(json_object_object_get(d, "user")) : NULL, "eAB5"); /* base64 of x\0y */
	T_CHECK(o && json_object_object_get_ex(o, "type", &t) && strcmp(json_object_get_string(t), "Opaque") == 0);
	T_CHECK(o && json_object_object_get_ex(o, "immutable", &im) && json_object_get_boolean(im));
	T_EQ_STR(o ? json_object_get_string(json_object_object_get(json_object_object_get(o, "metadata"), "name")) : NULL, "s1");
	T_EQ_STR(o ? json_object_get_string(json_object_object_get(json_object_object_get(o, "metadata"), "namespace")) : NULL,
		 "ns1");
	json_object_put(want);
	json_object_put(o);
	static const unsigned char cm[] = {
		'k', '8', 's', 0,
		0x0a, 0x0f, 0x0a, 0x02, 'v', '1', 0x12, 0x09, 'C', 'o', 'n', 'f', 'i', 'g', 'M', 'a', 'p',
		0x12, 0x10,
		0x0a, 0x04, 0x0a, 0x02, 'c', '1',
		0x12, 0x08, 0x0a, 0x01, 'k', 0x12, 0x03, 'v', 'a', 'l',
	};
	o = apisel_pb_object(cm, sizeof cm);
	T_EQ_STR(o ? json_object_get_string(json_object_object_get(json_object_object_get(o, "data"), "k")) : NULL, "val");
	json_object_put(o);
	T_CHECK(apisel_pb_object(cm, sizeof cm - 3) == NULL); /* cut inside the data */
	static const unsigned char ns[] = { 'k', '8', 's', 0, 0x0a, 0x0f, 0x0a, 0x02, 'v', '1', 0x12, 0x09, 'N', 'a', 'm', 'e',
					    's', 'p', 'a', 'c', 'e', 0x12, 0x00 };
	T_CHECK(apisel_pb_object(ns, sizeof ns) == NULL); /* another kind */
	T_CHECK(apisel_pb_object("k8s", 3) == NULL);
}

int main(void)
{
	test_labels();
	test_label_selector_json();
	test_fields();
	test_continue();
	test_rv();
	test_pb();
	test_merge_patch();
	test_json_patch();
	test_pb_object();
	return T_DONE();
}
