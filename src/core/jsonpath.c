/* jsonpath: a parser into nodes (text, path, range/end) and an evaluator over json-c values, after client-go's
 * util/jsonpath semantics. */
#include "core/jsonpath.h"

#include <ctype.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/jout.h"
#include "core/xmalloc.h"

#define JP_MAX_DEPTH 64 /* nested ranges and filters */

enum step_type { ST_FIELD, ST_WILD, ST_RECURSE, ST_SLICE, ST_INDEXES, ST_FIELDS, ST_FILTER };

struct path;

struct operand {
	enum { OP_PATH, OP_STR, OP_NUM, OP_BOOL } t;
	struct path *path;
	char *s;
	double num;
	bool b;
};

struct step {
	enum step_type t;
	char *name;      /* ST_FIELD */
	char **names;    /* ST_FIELDS */
	long *idx;       /* ST_INDEXES */
	size_t n;        /* names/idx */
	long sl[3];      /* ST_SLICE start, end, step */
	bool known[3];
	/* ST_FILTER */
	char op[3];      /* "==", "!=", "<", "<=", ">", ">=", "" (exists) */
	struct operand left, right;
};

struct path {
	struct step *steps;
	size_t n;
};

enum node_type { N_TEXT, N_PATH, N_RANGE };

struct node {
	enum node_type t;
	char *text;       /* N_TEXT */
	struct path *path; /* N_PATH, N_RANGE */
	struct node *body; /* N_RANGE */
	size_t nbody;
};

struct jsonpath {
	struct node *nodes;
	size_t n;
};

/* --- values ---------------------------------------------------------------------------------------------- */

struct vals {
	struct json_object **v;
	size_t n, cap;
};

static void vpush(struct vals *l, struct json_object *j)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xreallocarray(l->v, l->cap, sizeof *l->v);
	}
	l->v[l->n++] = j;
}

/* --- freeing ----------------------------------------------------------------------------------------------- */

static void path_free(struct path *p);

static void operand_free(struct operand *o)
{
	path_free(o->path);
	free(o->s);
}

static void path_free(struct path *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n; i++) {
		struct step *s = &p->steps[i];
		free(s->name);
		for (size_t k = 0; s->names && k < s->n; k++)
			free(s->names[k]);
		free(s->names);
		free(s->idx);
		if (s->t == ST_FILTER) {
			operand_free(&s->left);
			operand_free(&s->right);
		}
	}
	free(p->steps);
	free(p);
}

static void nodes_free(struct node *n, size_t cnt)
{
	for (size_t i = 0; i < cnt; i++) {
		free(n[i].text);
		path_free(n[i].path);
		nodes_free(n[i].body, n[i].nbody);
	}
	free(n);
}

void jsonpath_free(struct jsonpath *jp)
{
	if (jp == NULL)
		return;
	nodes_free(jp->nodes, jp->n);
	free(jp);
}

/* --- parsing ----------------------------------------------------------------------------------------------- */

struct parser {
	const char *s; /* the action's text */
	size_t i, len;
	char *err;
	int depth;
};

static bool perr(struct parser *p, const char *msg)
{
	if (p->err == NULL)
		p->err = xasprintf("%s at position %zu", msg, p->i);
	return false;
}

static void skip_ws(struct parser *p)
{
	while (p->i < p->len && (p->s[p->i] == ' ' || p->s[p->i] == '\t'))
		p->i++;
}

/* A quoted string ('...' or "...") with C escapes; p->i at the quote. */
static char *parse_quoted_ex(struct parser *p, bool bracket);

static char *parse_quoted(struct parser *p)
{
	return parse_quoted_ex(p, false);
}

/* bracket: inside [...], where client-go reads 'a.b' as the path a.b and 'a\\.b' as the name "a.b"; an unescaped
 * dot comes back as \x01. */
static char *parse_quoted_ex(struct parser *p, bool bracket)
{
	char q = p->s[p->i++];
	struct buf b;
	buf_init(&b);
	while (p->i < p->len && p->s[p->i] != q) {
		char c = p->s[p->i++];
		if (c == '\\' && p->i < p->len) {
			char e = p->s[p->i++];
			switch (e) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case '0': c = '\0'; break;
			case 'u':
				if (p->i + 4 <= p->len) {
					char h[5] = { p->s[p->i], p->s[p->i + 1], p->s[p->i + 2], p->s[p->i + 3], 0 };
					char *end;
					unsigned long cp = strtoul(h, &end, 16);
					if (*end == '\0' && cp > 0) {
						buf_add_utf8(&b, (uint32_t)cp);
						p->i += 4;
						continue;
					}
				}
				c = 'u';
				break;
			case '.': c = '.'; break;
			default: c = e; break;
			}
			if (c == '\0')
				continue;
		} else if (bracket && c == '.') {
			c = '\x01';
		}
		buf_add_char(&b, c);
	}
	if (p->i >= p->len) {
		buf_free(&b);
		perr(p, "unterminated quoted string");
		return NULL;
	}
	p->i++;
	buf_add(&b, "", 0);
	return b.data ? buf_steal(&b) : xstrdup("");
}

static bool is_name_char(char c)
{
	return c && !strchr(".[](){}@$,=!<>\"' \t?*", c);
}

static char *parse_name(struct parser *p)
{
	struct buf b;
	buf_init(&b);
	while (p->i < p->len) {
		char c = p->s[p->i];
		if (c == '\\' && p->i + 1 < p->len) {
			buf_add_char(&b, p->s[p->i + 1]);
			p->i += 2;
			continue;
		}
		if (!is_name_char(c))
			break;
		buf_add_char(&b, c);
		p->i++;
	}
	buf_add(&b, "", 0);
	return buf_steal(&b);
}

static struct step *add_step(struct path *path)
{
	path->steps = xreallocarray(path->steps, path->n + 1, sizeof *path->steps);
	struct step *s = &path->steps[path->n++];
	memset(s, 0, sizeof *s);
	return s;
}

static bool parse_long(struct parser *p, long *out)
{
	skip_ws(p);
	const char *start = p->s + p->i;
	char *end;
	long v = strtol(start, &end, 10);
	if (end == start)
		return false;
	p->i += (size_t)(end - start);
	*out = v;
	skip_ws(p);
	return true;
}

static struct path *parse_path(struct parser *p, bool stop_at_op);

static bool parse_operand(struct parser *p, struct operand *o)
{
	skip_ws(p);
	if (p->i >= p->len)
		return perr(p, "missing operand in filter");
	char c = p->s[p->i];
	if (c == '"' || c == '\'') {
		o->t = OP_STR;
		o->s = parse_quoted(p);
		return o->s != NULL;
	}
	if (c == '@' || c == '$' || c == '.') {
		o->t = OP_PATH;
		o->path = parse_path(p, true);
		return o->path != NULL;
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		const char *start = p->s + p->i;
		char *end;
		o->t = OP_NUM;
		o->num = strtod(start, &end);
		if (end == start)
			return perr(p, "bad number in filter");
		p->i += (size_t)(end - start);
		return true;
	}
	if (strncmp(p->s + p->i, "true", 4) == 0 || strncmp(p->s + p->i, "false", 5) == 0) {
		o->t = OP_BOOL;
		o->b = p->s[p->i] == 't';
		p->i += o->b ? 4 : 5;
		return true;
	}
	return perr(p, "unrecognized filter operand");
}

static bool parse_filter(struct parser *p, struct step *s)
{
	/* p->i after "?(" */
	if (++p->depth > JP_MAX_DEPTH)
		return perr(p, "filters nested too deeply");
	s->t = ST_FILTER;
	if (!parse_operand(p, &s->left))
		return false;
	skip_ws(p);
	static const char *const ops[] = { "==", "!=", "<=", ">=", "<", ">", "=", NULL };
	for (const char *const *op = ops; *op; op++) {
		size_t l = strlen(*op);
		if (strncmp(p->s + p->i, *op, l) == 0) {
			strcpy(s->op, strcmp(*op, "=") == 0 ? "==" : *op);
			p->i += l;
			if (!parse_operand(p, &s->right))
				return false;
			skip_ws(p);
			break;
		}
	}
	if (p->i >= p->len || p->s[p->i] != ')')
		return perr(p, "unclosed filter");
	p->i++;
	p->depth--;
	return true;
}

/* [...] with p->i after '[' */
static bool parse_bracket(struct parser *p, struct path *path)
{
	skip_ws(p);
	if (p->i >= p->len)
		return perr(p, "unterminated [");
	char c = p->s[p->i];
	struct step *s;
	if (c == '*') {
		p->i++;
		add_step(path)->t = ST_WILD;
	} else if (c == '?') {
		p->i++;
		if (p->i >= p->len || p->s[p->i] != '(')
			return perr(p, "expected ( after ?");
		p->i++;
		if (!parse_filter(p, add_step(path)))
			return false;
	} else if (c == '\'' || c == '"') {
		s = add_step(path);
		s->t = ST_FIELDS;
		for (;;) {
			skip_ws(p);
			if (p->i >= p->len || (p->s[p->i] != '\'' && p->s[p->i] != '"'))
				return perr(p, "expected a quoted name");
			char *nm = parse_quoted_ex(p, true);
			if (nm == NULL)
				return false;
			s->names = xreallocarray(s->names, s->n + 1, sizeof *s->names);
			s->names[s->n++] = nm;
			skip_ws(p);
			if (p->i < p->len && p->s[p->i] == ',') {
				p->i++;
				continue;
			}
			break;
		}
		if (s->n == 1) {
			/* one name: its unescaped dots separate fields */
			char *nm = s->names[0];
			free(s->names);
			s->names = NULL;
			s->n = 0;
			s->t = ST_FIELD;
			char *save = NULL, *tok = strtok_r(nm, "\x01", &save);
			s->name = xstrdup(tok ? tok : "");
			while ((tok = strtok_r(NULL, "\x01", &save)) != NULL) {
				s = add_step(path);
				s->t = ST_FIELD;
				s->name = xstrdup(tok);
			}
			free(nm);
		} else {
			for (size_t k = 0; k < s->n; k++)
				for (char *q = s->names[k]; *q; q++)
					if (*q == '\x01')
						*q = '.';
		}
	} else {
		s = add_step(path);
		s->t = ST_SLICE;
		long v = 0;
		for (int k = 0; k < 3; k++) {
			if (parse_long(p, &v)) {
				s->sl[k] = v;
				s->known[k] = true;
			}
			skip_ws(p);
			if (k == 0 && p->i < p->len && p->s[p->i] == ',') {
				if (!s->known[0])
					return perr(p, "expected an index");
				/* [a,b,...] */
				s->t = ST_INDEXES;
				s->idx = xreallocarray(NULL, 1, sizeof *s->idx);
				s->idx[s->n++] = v;
				while (p->i < p->len && p->s[p->i] == ',') {
					p->i++;
					if (!parse_long(p, &v))
						return perr(p, "expected an index");
					s->idx = xreallocarray(s->idx, s->n + 1, sizeof *s->idx);
					s->idx[s->n++] = v;
				}
				break;
			}
			if (p->i < p->len && p->s[p->i] == ':' && k < 2) {
				p->i++;
				continue;
			}
			if (k == 0) {
				if (!s->known[0])
					return perr(p, "expected an index");
				/* [n]: one element */
				s->sl[1] = s->sl[0] + 1;
				s->known[1] = s->sl[0] != -1;
			}
			break;
		}
	}
	skip_ws(p);
	if (p->i >= p->len || p->s[p->i] != ']')
		return perr(p, "expected ]");
	p->i++;
	return true;
}

/* A path: [@|$] then .name .* ..name [..] steps. stop_at_op: inside a filter (stops at an operator or ')'). */
static struct path *parse_path(struct parser *p, bool stop_at_op)
{
	struct path *path = xcalloc(1, sizeof *path);
	if (p->i < p->len && (p->s[p->i] == '@' || p->s[p->i] == '$'))
		p->i++;
	while (p->i < p->len) {
		char c = p->s[p->i];
		if (c == '.') {
			p->i++;
			if (p->i < p->len && p->s[p->i] == '.') {
				p->i++;
				add_step(path)->t = ST_RECURSE;
				if (p->i < p->len && p->s[p->i] == '[')
					continue;
			}
			if (p->i < p->len && p->s[p->i] == '*') {
				p->i++;
				add_step(path)->t = ST_WILD;
				continue;
			}
			char *nm = parse_name(p);
			if (*nm == '\0') {
				free(nm);
				/* "{.}": the current object */
				if (p->i >= p->len || p->s[p->i] == ' ' || (stop_at_op && strchr("=!<>)", p->s[p->i])))
					break;
				perr(p, "expected a field name");
				path_free(path);
				return NULL;
			}
			struct step *s = add_step(path);
			s->t = ST_FIELD;
			s->name = nm;
		} else if (c == '[') {
			p->i++;
			if (!parse_bracket(p, path)) {
				path_free(path);
				return NULL;
			}
		} else if (is_name_char(c) && path->n == 0 && !stop_at_op) {
			/* kubectl-lenient: "metadata.name" without the leading dot */
			struct step *s = add_step(path);
			s->t = ST_FIELD;
			s->name = parse_name(p);
		} else {
			break;
		}
	}
	return path;
}

static bool parse_nodes(const char *t, size_t len, size_t *pos, struct node **out, size_t *nout, bool in_range,
			int depth, char **err);

/* One {action}; returns false on error. Sets *is_end for {end}. */
static bool parse_action(const char *t, size_t len, size_t *pos, struct node **out, size_t *nout, int depth,
			 bool *is_end, char **err)
{
	/* the action runs to the '}' outside quotes */
	size_t start = *pos, i = start;
	char q = 0;
	while (i < len) {
		char c = t[i];
		if (q) {
			if (c == '\\')
				i++;
			else if (c == q)
				q = 0;
		} else if (c == '"' || c == '\'') {
			q = c;
		} else if (c == '}') {
			break;
		}
		i++;
	}
	if (i >= len) {
		*err = xasprintf("unclosed action at position %zu", start);
		return false;
	}
	*pos = i + 1;
	struct parser p = { .s = t + start, .i = 0, .len = i - start };
	skip_ws(&p);
	struct node n = { 0 };
	if (p.len - p.i >= 3 && strncmp(p.s + p.i, "end", 3) == 0 &&
	    (p.len - p.i == 3 || p.s[p.i + 3] == ' ')) {
		*is_end = true;
		return true;
	}
	if (p.len - p.i > 5 && strncmp(p.s + p.i, "range", 5) == 0 && strchr(" \t.[@$", p.s[p.i + 5])) {
		if (depth >= JP_MAX_DEPTH) {
			*err = xstrdup("ranges nested too deeply");
			return false;
		}
		p.i += 5;
		skip_ws(&p);
		n.t = N_RANGE;
		n.path = parse_path(&p, false);
		if (n.path == NULL)
			goto bad;
		skip_ws(&p);
		if (p.i != p.len) {
			perr(&p, "unexpected text in range");
			goto bad;
		}
		if (!parse_nodes(t, len, pos, &n.body, &n.nbody, true, depth + 1, err)) {
			path_free(n.path);
			nodes_free(n.body, n.nbody);
			return false;
		}
	} else if (p.i < p.len && (p.s[p.i] == '"' || p.s[p.i] == '\'')) {
		n.t = N_TEXT;
		n.text = parse_quoted(&p);
		if (n.text == NULL)
			goto bad;
		skip_ws(&p);
		if (p.i != p.len) {
			perr(&p, "unexpected text after a quoted string");
			goto bad;
		}
	} else {
		n.t = N_PATH;
		n.path = parse_path(&p, false);
		if (n.path == NULL)
			goto bad;
		skip_ws(&p);
		if (p.i != p.len) {
			perr(&p, "unrecognized character in action");
			goto bad;
		}
	}
	*out = xreallocarray(*out, *nout + 1, sizeof **out);
	(*out)[(*nout)++] = n;
	return true;
bad:
	path_free(n.path);
	free(n.text);
	*err = p.err ? p.err : xstrdup("syntax error");
	return false;
}

static bool parse_nodes(const char *t, size_t len, size_t *pos, struct node **out, size_t *nout, bool in_range,
			int depth, char **err)
{
	while (*pos < len) {
		size_t i = *pos;
		while (i < len && t[i] != '{')
			i++;
		if (i > *pos) {
			struct node n = { .t = N_TEXT, .text = xstrndup(t + *pos, i - *pos) };
			*out = xreallocarray(*out, *nout + 1, sizeof **out);
			(*out)[(*nout)++] = n;
		}
		*pos = i;
		if (i >= len)
			break;
		(*pos)++;
		bool is_end = false;
		if (!parse_action(t, len, pos, out, nout, depth, &is_end, err))
			return false;
		if (is_end) {
			if (!in_range) {
				*err = xstrdup("not in range, nothing to end");
				return false;
			}
			return true;
		}
	}
	if (in_range) {
		*err = xstrdup("unclosed range (no {end})");
		return false;
	}
	return true;
}

struct jsonpath *jsonpath_parse(const char *tmpl, char **err)
{
	struct jsonpath *jp = xcalloc(1, sizeof *jp);
	size_t pos = 0;
	*err = NULL;
	if (!parse_nodes(tmpl, strlen(tmpl), &pos, &jp->nodes, &jp->n, false, 0, err)) {
		jsonpath_free(jp);
		return NULL;
	}
	return jp;
}

struct jsonpath *jsonpath_parse_relaxed(const char *expr, char **err)
{
	size_t n = strlen(expr);
	char *t;
	if (n >= 2 && expr[0] == '{' && expr[n - 1] == '}')
		t = xstrdup(expr);
	else if (expr[0] == '.')
		t = xasprintf("{%s}", expr);
	else
		t = xasprintf("{.%s}", expr);
	struct jsonpath *jp = jsonpath_parse(t, err);
	free(t);
	return jp;
}

/* --- evaluation ---------------------------------------------------------------------------------------- */

static void eval_path(const struct path *path, size_t from, struct vals *in, struct vals *out, int depth,
		      char **err);

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Children of a container in order (map values by sorted key). */
static void children(struct json_object *j, struct vals *out)
{
	if (json_object_is_type(j, json_type_array)) {
		size_t n = json_object_array_length(j);
		for (size_t i = 0; i < n; i++)
			vpush(out, json_object_array_get_idx(j, i));
	} else if (json_object_is_type(j, json_type_object)) {
		size_t n = (size_t)json_object_object_length(j), k = 0;
		const char **keys = xcalloc(n ? n : 1, sizeof *keys);
		json_object_object_foreach(j, key, val)
		{
			(void)val;
			keys[k++] = key;
		}
		qsort(keys, k, sizeof *keys, cmp_str);
		for (size_t i = 0; i < k; i++)
			vpush(out, json_object_object_get(j, keys[i]));
		free(keys);
	}
}

static bool is_container(struct json_object *j)
{
	return j && (json_object_is_type(j, json_type_array) || json_object_is_type(j, json_type_object));
}

/* Go's evalRecursive: every container at any depth below and including the inputs, pre-order. */
static void recurse(struct json_object *j, struct vals *out, int depth)
{
	if (!is_container(j) || depth > 200)
		return;
	struct vals kids = { 0 };
	children(j, &kids);
	if (kids.n) {
		vpush(out, j);
		for (size_t i = 0; i < kids.n; i++)
			recurse(kids.v[i], out, depth + 1);
	}
	free(kids.v);
}

static bool operand_value(const struct operand *o, struct json_object *cur, struct json_object **v, bool *have,
			  int depth, char **err)
{
	*have = false;
	if (o->t != OP_PATH)
		return true;
	struct vals in = { 0 }, out = { 0 };
	vpush(&in, cur);
	eval_path(o->path, 0, &in, &out, depth + 1, err);
	bool ok = out.n <= 1;
	if (out.n == 1) {
		*v = out.v[0];
		*have = true;
	}
	free(in.v);
	free(out.v);
	return ok;
}

static bool num_of(struct json_object *j, double *d)
{
	if (j && (json_object_is_type(j, json_type_int) || json_object_is_type(j, json_type_double))) {
		*d = json_object_get_double(j);
		return true;
	}
	return false;
}

static bool filter_pass(const struct step *s, struct json_object *el, int depth, char **err)
{
	struct json_object *lv = NULL, *rv = NULL;
	bool lh, rh;
	if (!operand_value(&s->left, el, &lv, &lh, depth, err))
		return false;
	if (s->op[0] == '\0')
		return s->left.t == OP_PATH ? lh : true;
	if (s->left.t == OP_PATH && !lh)
		return false;
	if (!operand_value(&s->right, el, &rv, &rh, depth, err))
		return false;
	if (s->right.t == OP_PATH && !rh)
		return false;
	/* both sides as (kind, value) */
	int c;
	bool comparable = true;
	double ld = 0, rd = 0;
	const char *ls = NULL, *rs = NULL;
	bool lnum = s->left.t == OP_NUM ? (ld = s->left.num, true) : s->left.t == OP_PATH && num_of(lv, &ld);
	bool rnum = s->right.t == OP_NUM ? (rd = s->right.num, true) : s->right.t == OP_PATH && num_of(rv, &rd);
	if (s->left.t == OP_STR)
		ls = s->left.s;
	else if (s->left.t == OP_PATH && lv && json_object_is_type(lv, json_type_string))
		ls = json_object_get_string(lv);
	if (s->right.t == OP_STR)
		rs = s->right.s;
	else if (s->right.t == OP_PATH && rv && json_object_is_type(rv, json_type_string))
		rs = json_object_get_string(rv);
	int lb = s->left.t == OP_BOOL ? s->left.b : (s->left.t == OP_PATH && lv && json_object_is_type(lv, json_type_boolean)) ? json_object_get_boolean(lv) : -1;
	int rb = s->right.t == OP_BOOL ? s->right.b : (s->right.t == OP_PATH && rv && json_object_is_type(rv, json_type_boolean)) ? json_object_get_boolean(rv) : -1;
	if (lnum && rnum)
		c = ld < rd ? -1 : ld > rd ? 1 : 0;
	else if (ls && rs)
		c = strcmp(ls, rs);
	else if (lb >= 0 && rb >= 0)
		c = lb - rb;
	else {
		comparable = false;
		c = 1;
	}
	if (strcmp(s->op, "==") == 0)
		return comparable && c == 0;
	if (strcmp(s->op, "!=") == 0)
		return !comparable || c != 0;
	if (!comparable)
		return false;
	if (strcmp(s->op, "<") == 0)
		return c < 0;
	if (strcmp(s->op, "<=") == 0)
		return c <= 0;
	if (strcmp(s->op, ">") == 0)
		return c > 0;
	return c >= 0;
}

static void eval_step(const struct step *s, struct vals *in, struct vals *out, int depth, char **err)
{
	for (size_t k = 0; k < in->n; k++) {
		struct json_object *j = in->v[k], *v;
		if (j == NULL)
			continue;
		switch (s->t) {
		case ST_FIELD:
			if (json_object_is_type(j, json_type_object) && json_object_object_get_ex(j, s->name, &v))
				vpush(out, v);
			break;
		case ST_FIELDS:
			for (size_t i = 0; i < s->n; i++)
				if (json_object_is_type(j, json_type_object) && json_object_object_get_ex(j, s->names[i], &v))
					vpush(out, v);
			break;
		case ST_WILD:
			children(j, out);
			break;
		case ST_RECURSE:
			recurse(j, out, 0);
			break;
		case ST_INDEXES:
			if (json_object_is_type(j, json_type_array)) {
				long len = (long)json_object_array_length(j);
				for (size_t i = 0; i < s->n; i++) {
					long x = s->idx[i] < 0 ? s->idx[i] + len : s->idx[i];
					if (x >= 0 && x < len)
						vpush(out, json_object_array_get_idx(j, (size_t)x));
				}
			}
			break;
		case ST_SLICE: {
			if (!json_object_is_type(j, json_type_array))
				break;
			/* client-go's evalArray: bounds are errors unless zero elements are asked for */
			long len = (long)json_object_array_length(j);
			long a = s->known[0] ? s->sl[0] : 0, b = s->known[1] ? s->sl[1] : len;
			long step = s->known[2] && s->sl[2] > 0 ? s->sl[2] : 1;
			if (a < 0)
				a += len;
			if (b < 0)
				b += len;
			if (b == a)
				break;
			if (a >= len || a < 0 || b > len || b < 0 || a > b) {
				if (*err == NULL) {
					if (a >= len || a < 0)
						*err = xasprintf("array index out of bounds: index %ld, length %ld", a, len);
					else if (b > len || b < 0)
						*err = xasprintf("array index out of bounds: index %ld, length %ld", b - 1, len);
					else
						*err = xasprintf("starting index %ld is greater than ending index %ld", a, b);
				}
				break;
			}
			for (long x = a; x < b; x += step)
				vpush(out, json_object_array_get_idx(j, (size_t)x));
			break;
		}
		case ST_FILTER: {
			if (depth > JP_MAX_DEPTH)
				break;
			struct vals els = { 0 };
			if (json_object_is_type(j, json_type_array))
				children(j, &els);
			for (size_t i = 0; i < els.n; i++)
				if (filter_pass(s, els.v[i], depth, err))
					vpush(out, els.v[i]);
			free(els.v);
			break;
		}
		}
	}
}

static void eval_path(const struct path *path, size_t from, struct vals *in, struct vals *out, int depth,
		      char **err)
{
	struct vals cur = { 0 };
	for (size_t i = 0; i < in->n; i++)
		vpush(&cur, in->v[i]);
	for (size_t i = from; i < path->n; i++) {
		struct vals next = { 0 };
		eval_step(&path->steps[i], &cur, &next, depth, err);
		free(cur.v);
		cur = next;
	}
	for (size_t i = 0; i < cur.n; i++)
		vpush(out, cur.v[i]);
	free(cur.v);
}

void jsonpath_value_text(struct buf *out, struct json_object *v, jsonpath_text_fn text_fn)
{
	if (v == NULL)
		return;
	switch (json_object_get_type(v)) {
	case json_type_string:
		if (text_fn)
			text_fn(out, json_object_get_string(v), (size_t)json_object_get_string_len(v));
		else
			buf_add(out, json_object_get_string(v), (size_t)json_object_get_string_len(v));
		break;
	case json_type_boolean:
		buf_add_str(out, json_object_get_boolean(v) ? "true" : "false");
		break;
	default:
		jout_json(out, v, 0, 0);
		break;
	}
}

static void print_nodes(const struct node *nodes, size_t n, struct json_object *cur, struct buf *out,
			jsonpath_text_fn text_fn, int depth, char **err)
{
	for (size_t i = 0; i < n; i++) {
		const struct node *nd = &nodes[i];
		if (nd->t == N_TEXT) {
			buf_add_str(out, nd->text);
			continue;
		}
		struct vals in = { 0 }, res = { 0 };
		vpush(&in, cur);
		eval_path(nd->path, 0, &in, &res, depth, err);
		if (nd->t == N_PATH) {
			for (size_t k = 0; k < res.n; k++) {
				jsonpath_value_text(out, res.v[k], text_fn);
				if (k + 1 < res.n)
					buf_add_char(out, ' ');
			}
		} else {
			/* range over the results as they are ({range .items} runs once, with the list: client-go) */
			for (size_t k = 0; k < res.n; k++)
				print_nodes(nd->body, nd->nbody, res.v[k], out, text_fn, depth + 1, err);
		}
		free(in.v);
		free(res.v);
	}
}

int jsonpath_print(const struct jsonpath *jp, struct json_object *root, struct buf *out, jsonpath_text_fn text_fn,
		   char **err)
{
	char *e = NULL;
	size_t start = out->len;
	print_nodes(jp->nodes, jp->n, root, out, text_fn, 0, &e);
	if (err)
		*err = NULL;
	if (e) {
		/* as client-go: an error prints nothing */
		out->len = start;
		if (out->data)
			out->data[start] = '\0';
		if (err)
			*err = e;
		else
			free(e);
		return -1;
	}
	return 0;
}

size_t jsonpath_values(const struct jsonpath *jp, struct json_object *root, struct json_object **vals, size_t max)
{
	size_t total = 0;
	for (size_t i = 0; i < jp->n; i++) {
		if (jp->nodes[i].t != N_PATH)
			continue;
		struct vals in = { 0 }, res = { 0 };
		vpush(&in, root);
		char *e = NULL;
		eval_path(jp->nodes[i].path, 0, &in, &res, 0, &e);
		free(e);
		for (size_t k = 0; k < res.n; k++, total++)
			if (total < max)
				vals[total] = res.v[k];
		free(in.v);
		free(res.v);
	}
	return total;
}
