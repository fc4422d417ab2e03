/* libFuzzer harness for kubectl's JSONPath templates (core/jsonpath.c): the input's first line is a template, the
 * rest a JSON document (a fixed List of two objects when it does not parse). Parses the template (and its relaxed
 * form), prints it over the document twice (same bytes both times), and reads its values. Templates that parse
 * must never crash or loop on any document; those that do not must come with a message. */
#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/jout.h"
#include "core/jsonpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fallback[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"a\",\"labels\":{\"x.y/z\":\"1\"}},"
	"\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],\"n\":3}},"
	"{\"metadata\":{\"name\":\"b\"},\"status\":{\"phase\":\"Stopped\",\"n\":1.5,\"ok\":false,\"z\":null}}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	const char *nl = memchr(data, '\n', size);
	size_t tlen = nl ? (size_t)(nl - (const char *)data) : size;
	char *tmpl = strndup((const char *)data, tlen);
	struct json_object *doc = NULL;
	if (nl) {
		struct json_tokener *tok = json_tokener_new_ex(64);
		doc = json_tokener_parse_ex(tok, nl + 1, (int)(size - tlen - 1));
		json_tokener_free(tok);
	}
	if (doc == NULL)
		doc = json_tokener_parse(fallback);
	char *err = NULL;
	struct jsonpath *jp = jsonpath_parse(tmpl, &err);
	if (jp == NULL) {
		if (err == NULL)
			abort(); /* a refusal always says why */
	} else {
		struct buf a, b;
		buf_init(&a);
		buf_init(&b);
		jsonpath_print(jp, doc, &a, NULL, NULL);
		jsonpath_print(jp, doc, &b, jout_text, NULL);
		struct buf c;
		buf_init(&c);
		jsonpath_print(jp, doc, &c, NULL, NULL);
		if (a.len != c.len || (a.len && memcmp(a.data, c.data, a.len) != 0))
			abort(); /* printing is deterministic */
		struct json_object *vals[8];
		jsonpath_values(jp, doc, vals, 8);
		buf_free(&a);
		buf_free(&b);
		buf_free(&c);
		jsonpath_free(jp);
	}
	free(err);
	err = NULL;
	jp = jsonpath_parse_relaxed(tmpl, &err);
	if (jp) {
		struct json_object *vals[8];
		size_t n = jsonpath_values(jp, doc, vals, 8);
		struct buf y;
		buf_init(&y);
		for (size_t i = 0; i < n && i < 8; i++)
			if (vals[i] && jout_yaml(&y, vals[i]) < 0)
				abort(); /* any JSON value prints as YAML */
		buf_free(&y);
		jsonpath_free(jp);
	}
	free(err);
	json_object_put(doc);
	free(tmpl);
	return 0;
}
