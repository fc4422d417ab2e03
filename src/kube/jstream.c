/* Stream splitter: a lexical scanner (kube/jprune.h) finds where each top-level value ends across chunks; the
 * value is pruned to the keys the decoder reads when asked, building its tree (kube/jv.h) in the same pass, or
 * else json-c's tokener parses it whole and the tree is copied. */
#include "kube/jstream.h"

#include <json.h>
#include <stdlib.h>

#include "core/buf.h"
#include "core/fatal.h"
#include "core/log.h"
#include "core/xmalloc.h"
#include "kube/jprune.h"
#include "kube/jv.h"

#define JSTREAM_DEPTH 64 /* managedFields nest deeper than json-c's default of 32 */

struct kube_jstream {
	struct json_tokener *tok;
	struct kube_jscan scan;
	struct buf cur;    /* the incomplete value so far */
	size_t max_value;
	bool too_big; /* the last feed failed on max_value */
	bool prune;
	const struct kube_jprune_node *schema; /* NULL: prune by key name */
	struct jv_arena *arena; /* the value handed to the callback */
};

struct kube_jstream *kube_jstream_new(size_t max_value)
{
	struct kube_jstream *s = xcalloc(1, sizeof *s);
	s->tok = json_tokener_new_ex(JSTREAM_DEPTH);
	if (s->tok == NULL)
		fatal("json_tokener_new_ex failed");
	s->max_value = max_value;
	s->arena = jv_arena_new();
	buf_init(&s->cur);
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
	jv_arena_free(s->arena);
	buf_free(&s->cur);
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

bool kube_jstream_too_big(const struct kube_jstream *s)
{
	return s->too_big;
}

bool kube_jstream_partial(const struct kube_jstream *s)
{
	return s->cur.len > 0;
}

static struct json_object *parse_whole(struct kube_jstream *s, const char *data, size_t len, char **err);

/* One complete value as a tree in the stream's arena (valid until the next value), pruned when asked (else, or
 * when the pruner refuses the bytes, parsed by json-c and copied), or NULL with *err. */
static struct jv *parse_tree(struct kube_jstream *s, const char *data, size_t len, bool prune, kube_jprune_jv_cb each,
			     void *arg, char **err)
{
	jv_arena_reset(s->arena);
	if (prune) {
		struct jv *v;
		ssize_t n = kube_jprune_jv(s->schema, data, len, s->arena, &v, each, arg);
		size_t used = n > 0 ? (size_t)n : 0;
		while (n > 0 && used < len && is_space(data[used]))
			used++;
		if (n > 0 && used == len && v != NULL)
			return v;
		jv_arena_reset(s->arena);
	}
	struct json_object *o = parse_whole(s, data, len, err);
	if (o == NULL)
		return NULL;
	struct jv *v = jv_from_json(s->arena, o);
	json_object_put(o);
	return v;
}

struct jv *kube_jstream_parse(struct kube_jstream *s, const char *data, size_t len, bool prune, char **err)
{
	return parse_tree(s, data, len, prune, NULL, NULL, err);
}

struct jv *kube_jstream_parse_each(struct kube_jstream *s, const char *data, size_t len, kube_jprune_jv_cb each,
				   void *arg, char **err)
{
	return parse_tree(s, data, len, true, each, arg, err);
}

/* json-c on the original bytes (pruning refused them: json-c reports the error, or reads what only it reads). */
static struct json_object *parse_whole(struct kube_jstream *s, const char *data, size_t len, char **err)
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
	s->too_big = false;
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
			struct jv *v;
			jv_arena_reset(s->arena);
			ssize_t used = kube_jprune_jv(s->schema, data + off, len - off, s->arena, &v, NULL, NULL);
			if (used > 0 && (size_t)used <= s->max_value && v != NULL) {
				off += (size_t)used;
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
				s->too_big = true;
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
			s->too_big = true;
			return -1;
		}
		struct jv *v = parse_tree(s, val, vlen, s->prune, NULL, NULL, err);
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
