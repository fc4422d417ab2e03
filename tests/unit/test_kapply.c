/* kubectl apply's pure parts (kube/kapply.c) and the multi-document reader (core/ydoc.c): documents split and
 * checked as one is, the last-applied annotation's text as Go's json.Marshal writes it, and the three-way JSON
 * merge patch as k8s.io/apimachinery's jsonmergepatch computes it. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "core/ydoc.h"
#include "kube/kapply.h"
#include "t.h"

static size_t docs_of(const char *text, char **err)
{
	yaml_document_t *d = NULL;
	size_t n = 0;
	*err = NULL;
	if (ydoc_load_all(&d, &n, text, strlen(text), err) < 0)
		return (size_t)-1;
	ydoc_free_all(d, n);
	return n;
}

static void test_load_all(void)
{
	char *err;
	T_EQ_INT(docs_of("a: 1\n---\nb: 2\n", &err), 2);
	T_EQ_INT(docs_of("---\na: 1\n---\n# only a comment\n---\n~\n---\nb: 2\n...\n", &err), 2); /* empty ones skipped */
	T_EQ_INT(docs_of("", &err), 0);
	T_EQ_INT(docs_of("{\"a\": 1}", &err), 1);
	T_EQ_INT((long long)docs_of("a: 1\n---\nb: &x 1\nc: *x\n", &err), -1); /* aliases refused, as in one document */
	T_CHECK(err && strstr(err, "line"));
	free(err);
	T_EQ_INT((long long)docs_of("a: 1\n---\nb: [1\n", &err), -1);
	T_CHECK(err && strstr(err, "YAML error at line"));
	free(err);
	T_EQ_INT((long long)docs_of("a: 1\n---\na: 1\na: 2\n", &err), -1);
	T_CHECK(err && strstr(err, "duplicate key"));
	free(err);
	/* ydoc_load still takes exactly one */
	yaml_document_t doc;
	T_CHECK(ydoc_load(&doc, "a: 1\n---\nb: 2\n", 14, &err) < 0 && err && strstr(err, "more than one document"));
	free(err);
	T_CHECK(ydoc_load(&doc, "a: 1\n", 5, &err) == 0);
	yaml_document_delete(&doc);
	/* the second document's values */
	yaml_document_t *d = NULL;
	size_t n = 0;
	const char *t = "kind: Namespace\n---\nkind: VirtualMachine\nmetadata:\n  name: x\n";
	T_CHECK(ydoc_load_all(&d, &n, t, strlen(t), &err) == 0 && n == 2);
	if (n == 2) {
		yaml_node_t *md = ydoc_get(&d[1], yaml_document_get_root_node(&d[1]), "metadata");
		T_EQ_STR(ydoc_str(ydoc_get(&d[1], md, "name")), "x");
	}
	ydoc_free_all(d, n);
}

static void test_marshal(void)
{
	json_object *o = json_tokener_parse("{\"z\":1,\"a\":{\"y\":\"<&>\",\"b\":[true,null,\"x/y\"]},\"m\":\"l\\nn\\u2028\"}");
	char *s = kapply_marshal(o);
	T_EQ_STR(s, "{\"a\":{\"b\":[true,null,\"x/y\"],\"y\":\"\\u003c\\u0026\\u003e\"},\"m\":\"l\\nn\\u2028\",\"z\":1}\n");
	free(s);
	json_object_put(o);
}

static char *patch(const char *orig, const char *mod, const char *cur)
{
	json_object *o = orig ? json_tokener_parse(orig) : NULL, *m = json_tokener_parse(mod), *c = json_tokener_parse(cur);
	json_object *p = kapply_patch3(o, m, c);
	char *s = kapply_marshal(p);
	s[strlen(s) - 1] = '\0';
	json_object_put(o);
	json_object_put(m);
	json_object_put(c);
	json_object_put(p);
	return s;
}

static void test_patch3(void)
{
	char *s;
	/* unchanged: the server's own fields (status, uid) are not the patch's business */
	s = patch("{\"spec\":{\"a\":1}}", "{\"spec\":{\"a\":1}}", "{\"spec\":{\"a\":1},\"status\":{\"x\":2},\"metadata\":{}}");
	T_EQ_STR(s, "{}");
	free(s);
	/* a change, an addition, a deletion of what was applied before; a field only the server set stays */
	s = patch("{\"spec\":{\"a\":1,\"gone\":true}}", "{\"spec\":{\"a\":2,\"new\":\"n\"}}",
		  "{\"spec\":{\"a\":1,\"gone\":true,\"defaulted\":3}}");
	T_EQ_STR(s, "{\"spec\":{\"a\":2,\"gone\":null,\"new\":\"n\"}}");
	free(s);
	/* no last-applied: nothing is deleted */
	s = patch(NULL, "{\"spec\":{\"a\":1}}", "{\"spec\":{\"a\":1,\"b\":2}}");
	T_EQ_STR(s, "{}");
	free(s);
	/* lists are replaced whole; an explicitly empty map is a value */
	s = patch("{\"l\":[1,2]}", "{\"l\":[1,3],\"e\":{}}", "{\"l\":[1,2]}");
	T_EQ_STR(s, "{\"e\":{},\"l\":[1,3]}");
	free(s);
	/* a map emptied by the user: its applied keys deleted */
	s = patch("{\"metadata\":{\"labels\":{\"a\":\"1\"}}}", "{\"metadata\":{}}", "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}");
	T_EQ_STR(s, "{\"metadata\":{\"labels\":null}}");
	free(s);
}

int main(void)
{
	test_load_all();
	test_marshal();
	test_patch3();
	return T_DONE();
}
