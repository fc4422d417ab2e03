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

int main(void)
{
	test_labels();
	test_fields();
	test_continue();
	test_rv();
	test_pb();
	test_merge_patch();
	return T_DONE();
}
