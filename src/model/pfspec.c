/* port-forward, ssh and scp operands (see pfspec.h). */
#include "model/pfspec.h"

#include <stdio.h>
#include <string.h>

/* DNS-1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most max bytes; dots allowed when subdomain */
static bool dns_name(const char *s, size_t n, size_t max, bool subdomain)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		bool edge = i == 0 || i + 1 == n || (subdomain && (s[i - 1] == '.' || s[i + 1] == '.'));
		if (alnum)
			continue;
		if (c == '-' && !edge)
			continue;
		if (c == '.' && subdomain && !edge)
			continue;
		return false;
	}
	return true;
}

static bool user_ok(const char *s, size_t n)
{
	if (n == 0 || n > 64 || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* "%.*s" of untrusted text in an error: printable ASCII only */
static void quote(char *out, size_t outlen, const char *s, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 2 < outlen && i < 64; i++)
		out[k++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	out[k] = '\0';
}

int pf_target_parse(const char *arg, bool with_user, struct pf_target *t, char *err, size_t errlen)
{
	char q[80];
	memset(t, 0, sizeof *t);
	const char *at = strchr(arg, '@');
	if (at) {
		if (!with_user) {
			snprintf(err, errlen, "a user (USER@) is not taken here");
			return -1;
		}
		if (!user_ok(arg, (size_t)(at - arg))) {
			quote(q, sizeof q, arg, (size_t)(at - arg));
			snprintf(err, errlen, "invalid user \"%s\" before '@'", q);
			return -1;
		}
		memcpy(t->user, arg, (size_t)(at - arg));
		arg = at + 1;
	}
	const char *slash = strchr(arg, '/');
	if (slash == NULL) {
		snprintf(err, errlen, "target must contain type and name separated by '/'");
		return -1;
	}
	char type[48];
	size_t tl = (size_t)(slash - arg);
	if (tl == 0 || tl >= sizeof type) {
		snprintf(err, errlen, "unsupported resource type: the type is vm or vmi");
		return -1;
	}
	memcpy(type, arg, tl);
	type[tl] = '\0';
	const struct kind_def *k = registry_kind_find(type);
	if (k == NULL || (k->id != KIND_VM && k->id != KIND_VMI)) {
		quote(q, sizeof q, type, tl);
		snprintf(err, errlen, "unsupported resource type \"%s\": the type is vm or vmi", q);
		return -1;
	}
	t->kind = k->id;
	const char *rest = slash + 1;
	/* TYPE/NAME/NS (virtctl's current form), else TYPE/NAME[.NS] (its older one: the name has no dot then) */
	const char *sep = strchr(rest, '/');
	if (sep == NULL)
		sep = strchr(rest, '.');
	size_t nl = sep ? (size_t)(sep - rest) : strlen(rest);
	if (!dns_name(rest, nl, 253, sep == NULL || *sep == '/')) {
		quote(q, sizeof q, rest, nl);
		snprintf(err, errlen, "invalid name \"%s\"", q);
		return -1;
	}
	memcpy(t->name, rest, nl);
	if (sep) {
		const char *ns = sep + 1;
		if (!dns_name(ns, strlen(ns), 63, false)) {
			quote(q, sizeof q, ns, strlen(ns));
			snprintf(err, errlen, "invalid namespace \"%s\"", q);
			return -1;
		}
		memcpy(t->ns, ns, strlen(ns));
	}
	return 0;
}

/* a port number of digits only: 0..65535, -1 when not one */
static int port_num(const char *s, size_t n)
{
	if (n == 0 || n > 5)
		return -1;
	int v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v <= 65535 ? v : -1;
}

int pf_port_parse(const char *arg, struct pf_port *p, char *err, size_t errlen)
{
	char q[80];
	memset(p, 0, sizeof *p);
	const char *s = arg;
	const char *slash = strchr(s, '/');
	if (slash) {
		size_t pl = (size_t)(slash - s);
		if (pl == 3 && strncmp(s, "tcp", 3) == 0) {
			p->udp = false;
		} else if (pl == 3 && strncmp(s, "udp", 3) == 0) {
			p->udp = true;
		} else {
			quote(q, sizeof q, s, pl);
			snprintf(err, errlen, "unsupported protocol \"%s\": tcp or udp", q);
			return -1;
		}
		s = slash + 1;
	}
	const char *colon = strchr(s, ':');
	size_t ll = colon ? (size_t)(colon - s) : strlen(s);
	p->local = port_num(s, ll);
	p->remote = colon ? port_num(colon + 1, strlen(colon + 1)) : p->local;
	if (p->local < 0 || p->remote <= 0) {
		quote(q, sizeof q, arg, strlen(arg));
		snprintf(err, errlen, "invalid port \"%s\": [tcp/|udp/]LOCAL[:REMOTE], REMOTE 1-65535", q);
		return -1;
	}
	return 0;
}

int pf_scp_operand(const char *arg, struct pf_target *t, const char **path, char *err, size_t errlen)
{
	const char *colon = strchr(arg, ':');
	const char *slash = strchr(arg, '/');
	if (arg[0] == '-') {
		snprintf(err, errlen, "a local path may not start with '-' (write ./%s)", "...");
		return -1;
	}
	if (colon == NULL)
		return 0;
	if (slash == NULL || slash > colon) {
		/* scp itself takes HOST:PATH (no '/' before the ':') as another host */
		snprintf(err, errlen, "HOST:PATH names another host; a guest is [USER@]TYPE/NAME[.NS]:PATH");
		return -1;
	}
	char tgt[400];
	size_t n = (size_t)(colon - arg);
	if (n >= sizeof tgt) {
		snprintf(err, errlen, "target too long");
		return -1;
	}
	memcpy(tgt, arg, n);
	tgt[n] = '\0';
	/* a colon after a slash ("dir/a:b") is a local path unless TYPE is vm or vmi */
	const char *ts = strchr(tgt, '@');
	ts = ts ? ts + 1 : tgt;
	char type[48];
	size_t tl = strcspn(ts, "/");
	if (tl >= sizeof type)
		return 0;
	memcpy(type, ts, tl);
	type[tl] = '\0';
	const struct kind_def *k = registry_kind_find(type);
	if (k == NULL || (k->id != KIND_VM && k->id != KIND_VMI))
		return 0;
	if (pf_target_parse(tgt, true, t, err, errlen) < 0)
		return -1;
	*path = colon + 1;
	return 1;
}
