/* Incremental JSON value splitter over json_tokener: whitespace between values is skipped, the tokener keeps
 * its state across chunks, and the parse end tells where the next value starts. */
#include "kube/jstream.h"

#include <json.h>
#include <stdlib.h>

#include "core/log.h"
#include "core/xmalloc.h"

#define JSTREAM_DEPTH 64 /* managedFields nest deeper than json-c's default of 32 */

struct kube_jstream {
	struct json_tokener *tok;
	size_t max_value;
	size_t in_value; /* bytes of the current incomplete value */
};

struct kube_jstream *kube_jstream_new(size_t max_value)
{
	struct kube_jstream *s = xcalloc(1, sizeof *s);
	s->tok = json_tokener_new_ex(JSTREAM_DEPTH);
	if (s->tok == NULL)
		fatal("json_tokener_new_ex failed");
	s->max_value = max_value;
	return s;
}

void kube_jstream_free(struct kube_jstream *s)
{
	if (s == NULL)
		return;
	json_tokener_free(s->tok);
	free(s);
}

void kube_jstream_reset(struct kube_jstream *s)
{
	json_tokener_reset(s->tok);
	s->in_value = 0;
}

bool kube_jstream_partial(const struct kube_jstream *s)
{
	return s->in_value > 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

int kube_jstream_feed(struct kube_jstream *s, const char *data, size_t len, kube_jstream_cb cb, void *arg,
		      char **err)
{
	size_t off = 0;
	while (off < len) {
		if (s->in_value == 0) {
			while (off < len && is_space(data[off]))
				off++;
			if (off == len)
				break;
		}
		size_t n = len - off;
		if (n > 0x40000000)
			n = 0x40000000;
		struct json_object *v = json_tokener_parse_ex(s->tok, data + off, (int)n);
		enum json_tokener_error e = json_tokener_get_error(s->tok);
		if (v == NULL && e == json_tokener_continue) {
			s->in_value += n;
			off += n;
			if (s->in_value > s->max_value) {
				*err = xasprintf("a watch event is larger than %zu bytes", s->max_value);
				kube_jstream_reset(s);
				return -1;
			}
			continue;
		}
		if (e != json_tokener_success) {
			*err = xasprintf("malformed JSON in the stream: %s", json_tokener_error_desc(e));
			kube_jstream_reset(s);
			return -1;
		}
		size_t used = json_tokener_get_parse_end(s->tok);
		json_tokener_reset(s->tok);
		s->in_value = 0;
		off += used ? used : n;
		bool go = cb(arg, v);
		json_object_put(v);
		if (!go)
			return 1;
	}
	return 0;
}
