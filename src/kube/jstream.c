/* Stream splitter: a lexical scanner (kube/jprune.h) finds where each top-level value ends across chunks, the
 * value is pruned to the keys the decoder reads when asked, and json-c parses what is left. */
#include "kube/jstream.h"

#include <json.h>
#include <stdlib.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/xmalloc.h"
#include "kube/jprune.h"

#define JSTREAM_DEPTH 64 /* managedFields nest deeper than json-c's default of 32 */

struct kube_jstream {
	struct json_tokener *tok;
	struct kube_jscan scan;
	struct buf cur;    /* the incomplete value so far */
	struct buf pruned;
	size_t max_value;
	bool prune;
	const struct kube_jprune_node *schema; /* NULL: prune by key name */
};

struct kube_jstream *kube_jstream_new(size_t max_value)
{
	struct kube_jstream *s = xcalloc(1, sizeof *s);
	s->tok = json_tokener_new_ex(JSTREAM_DEPTH);
	if (s->tok == NULL)
		fatal("json_tokener_new_ex failed");
	s->max_value = max_value;
	buf_init(&s->cur);
	buf_init(&s->pruned);
	return s;
}

void kube_jstream_set_schema(struct kube_jstream *s, const struct kube_jprune_node *schema)
{
	s->prune = true;
	s->schema = schema;
}

void kube_jstream_free(struct kube_jstream *s)
{
	if (s == NULL)
		return;
	json_tokener_free(s->tok);
	buf_free(&s->cur);
	buf_free(&s->pruned);
	free(s);
}

static bool is_space(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

void kube_jstream_reset(struct kube_jstream *s)
{
	json_tokener_reset(s->tok);
	buf_reset(&s->cur);
	s->scan = (struct kube_jscan){ 0 };
}

bool kube_jstream_partial(const struct kube_jstream *s)
{
	return s->cur.len > 0;
}

static struct json_object *parse_pruned(struct kube_jstream *s, const char *data, size_t len, char **err);

struct json_object *kube_jstream_parse(struct kube_jstream *s, const char *data, size_t len, bool prune, char **err)
{
	if (prune) {
		buf_reset(&s->pruned);
		buf_reserve(&s->pruned, len + 1);
		size_t used = 0;
		ssize_t n = kube_jprune_prefix(s->schema, data, len, s->pruned.data, &used);
		while (n >= 0 && used < len && is_space(data[used]))
			used++;
		if (n >= 0 && used == len) {
			data = s->pruned.data;
			len = (size_t)n;
		}
	}
	return parse_pruned(s, data, len, err);
}

/* json-c on bytes already pruned (or the original when pruning refused them). */
static struct json_object *parse_pruned(struct kube_jstream *s, const char *data, size_t len, char **err)
{
	json_tokener_reset(s->tok);
	struct json_object *v = json_tokener_parse_ex(s->tok, data, (int)(len > 0x7fffffff ? 0x7fffffff : len));
	enum json_tokener_error e = json_tokener_get_error(s->tok);
	if (v == NULL || e != json_tokener_success) {
		json_object_put(v);
		*err = xasprintf("malformed JSON in the stream: %s",
				 json_tokener_error_desc(e == json_tokener_success || e == json_tokener_continue
								 ? json_tokener_error_parse_eof
								 : e));
		json_tokener_reset(s->tok);
		return NULL;
	}
	json_tokener_reset(s->tok);
	return v;
}

int kube_jstream_feed(struct kube_jstream *s, const char *data, size_t len, kube_jstream_cb cb, void *arg,
		      char **err)
{
	size_t off = 0;
	while (off < len) {
		if (s->cur.len == 0) {
			while (off < len && is_space(data[off]))
				off++;
			if (off == len)
				break;
			if (data[off] != '{' && data[off] != '[') {
				*err = xstrdup("malformed JSON in the stream: a value must be an object or an array");
				kube_jstream_reset(s);
				return -1;
			}
		}
		if (s->cur.len == 0 && s->prune) {
			/* the usual case, a value that ends within this chunk: prune it straight from the chunk, which
			 * also finds its end (no separate scan); a value cut by the chunk's end or a malformed one takes
			 * the scanning path below */
			size_t used = 0;
			buf_reset(&s->pruned);
			buf_reserve(&s->pruned, len - off + 1);
			ssize_t pn = kube_jprune_prefix(s->schema, data + off, len - off, s->pruned.data, &used);
			if (pn >= 0 && used <= s->max_value) {
				off += used;
				struct json_object *v = parse_pruned(s, s->pruned.data, (size_t)pn, err);
				if (v == NULL) {
					kube_jstream_reset(s);
					return -1;
				}
				if (!cb(arg, v))
					return 1;
				continue;
			}
		}
		ssize_t n = kube_jscan(&s->scan, data + off, len - off);
		if (n < 0) {
			*err = xstrdup("malformed JSON in the stream: unbalanced brackets");
			kube_jstream_reset(s);
			return -1;
		}
		if (n == 0) {
			if (s->cur.len + (len - off) > s->max_value) {
				*err = xasprintf("a watch event is larger than %zu bytes", s->max_value);
				kube_jstream_reset(s);
				return -1;
			}
			buf_add(&s->cur, data + off, len - off);
			break;
		}
		const char *val = data + off;
		size_t vlen = (size_t)n;
		if (s->cur.len > 0) { /* the value started in an earlier chunk */
			buf_add(&s->cur, data + off, (size_t)n);
			val = s->cur.data;
			vlen = s->cur.len;
		}
		off += (size_t)n;
		s->scan = (struct kube_jscan){ 0 };
		if (vlen > s->max_value) {
			*err = xasprintf("a watch event is larger than %zu bytes", s->max_value);
			kube_jstream_reset(s);
			return -1;
		}
		struct json_object *v = kube_jstream_parse(s, val, vlen, s->prune, err);
		buf_reset(&s->cur);
		if (v == NULL) {
			kube_jstream_reset(s);
			return -1;
		}
		if (!cb(arg, v))
			return 1;
	}
	return 0;
}
