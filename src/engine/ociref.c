/* OCI image references and digests (see ociref.h). */
#include "engine/ociref.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/xmalloc.h"

bool oci_digest_valid(const char *d)
{
	if (d == NULL || strncmp(d, "sha256:", 7) != 0 || strlen(d) != 71)
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

static bool tag_valid(const char *t)
{
	size_t n = strlen(t);
	if (n == 0 || n > 128 || !(isalnum((unsigned char)t[0]) || t[0] == '_'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(isalnum((unsigned char)t[i]) || t[i] == '_' || t[i] == '.' || t[i] == '-'))
			return false;
	return true;
}

/* A repository: components of [a-z0-9] joined by '.', '_', '__' or runs of '-', separated by '/'. */
bool oci_repo_valid(const char *r)
{
	size_t n = strlen(r);
	if (n == 0 || n > 255)
		return false;
	bool start = true;
	for (size_t i = 0; i < n; i++) {
		char c = r[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (alnum) {
			start = false;
			continue;
		}
		if (start)
			return false;
		if (c == '/') {
			start = true;
			continue;
		}
		if (c != '.' && c != '_' && c != '-')
			return false;
		/* a separator must be followed by an alphanumeric (after '_' '_' or '-' runs) */
		size_t j = i + 1;
		while (j < n && (r[j] == '-' || (c == '_' && r[j] == '_' && j == i + 1)))
			j++;
		if (j >= n || !((r[j] >= 'a' && r[j] <= 'z') || (r[j] >= '0' && r[j] <= '9')))
			return false;
		i = j - 1;
	}
	return !start;
}

bool oci_host_valid(const char *h)
{
	size_t n = strlen(h);
	if (n == 0 || n > 253)
		return false;
	const char *colon = strrchr(h, ':');
	if (h[0] == '[') {
		const char *close = strchr(h, ']');
		if (close == NULL)
			return false;
		for (const char *p = h + 1; p < close; p++)
			if (!(isxdigit((unsigned char)*p) || *p == ':'))
				return false;
		colon = close[1] == ':' ? close + 1 : NULL;
		if (close[1] && !colon)
			return false;
	} else {
		for (const char *p = h; *p && p != colon; p++)
			if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '-'))
				return false;
		if (h[0] == '.' || h[0] == '-')
			return false;
	}
	if (colon) {
		if (colon[1] == '\0' || strlen(colon + 1) > 5)
			return false;
		for (const char *p = colon + 1; *p; p++)
			if (!isdigit((unsigned char)*p))
				return false;
	}
	return true;
}

void oci_ref_free(struct oci_ref *r)
{
	if (r == NULL)
		return;
	free(r->registry);
	free(r->repo);
	free(r->tag);
	free(r->digest);
	memset(r, 0, sizeof *r);
}

int oci_ref_parse(const char *text, struct oci_ref *out, char **err)
{
	memset(out, 0, sizeof *out);
	if (text == NULL || text[0] == '\0' || strlen(text) > 1024) {
		*err = xstrdup("empty or over-long image reference");
		return -1;
	}
	for (const char *p = text; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f) {
			*err = xstrdup("an image reference has no spaces or control characters");
			return -1;
		}
	char *s = xstrdup(text);
	char *at = strchr(s, '@');
	if (at) {
		*at = '\0';
		if (!oci_digest_valid(at + 1)) {
			*err = xasprintf("\"%s\": the digest is not sha256:<64 lower-case hex digits>", at + 1);
			goto bad;
		}
		out->digest = xstrdup(at + 1);
	}
	char *slash = strchr(s, '/');
	char *name = s;
	if (slash && (memchr(s, '.', (size_t)(slash - s)) || memchr(s, ':', (size_t)(slash - s)) ||
		      ((size_t)(slash - s) == 9 && strncmp(s, "localhost", 9) == 0))) {
		*slash = '\0';
		if (!oci_host_valid(s)) {
			*err = xasprintf("\"%s\" is not a registry host", s);
			goto bad;
		}
		out->registry = xstrdup(strcmp(s, "index.docker.io") == 0 ? "docker.io" : s);
		name = slash + 1;
	} else {
		out->registry = xstrdup("docker.io");
	}
	char *colon = strrchr(name, ':');
	if (colon) {
		*colon = '\0';
		if (!tag_valid(colon + 1)) {
			*err = xasprintf("\"%s\" is not a valid tag", colon + 1);
			goto bad;
		}
		out->tag = xstrdup(colon + 1);
	}
	if (!oci_repo_valid(name)) {
		*err = xasprintf("\"%s\" is not a valid repository name (lower case letters, digits, separators)", name);
		goto bad;
	}
	if (strcmp(out->registry, "docker.io") == 0 && strchr(name, '/') == NULL)
		out->repo = xasprintf("library/%s", name);
	else
		out->repo = xstrdup(name);
	if (out->tag == NULL && out->digest == NULL)
		out->tag = xstrdup("latest");
	/* the normal form must parse again: library/ and the defaults count against the limits */
	char *n = oci_ref_string(out);
	bool fits = strlen(n) <= 1024 && oci_repo_valid(out->repo);
	free(n);
	if (!fits) {
		*err = xstrdup("the image reference is too long");
		goto bad;
	}
	free(s);
	return 0;
bad:
	free(s);
	oci_ref_free(out);
	return -1;
}

char *oci_ref_string(const struct oci_ref *r)
{
	return xasprintf("%s/%s%s%s%s%s", r->registry, r->repo, r->tag ? ":" : "", r->tag ? r->tag : "",
			 r->digest ? "@" : "", r->digest ? r->digest : "");
}

const char *oci_default_policy(const struct oci_ref *r)
{
	return r->tag && strcmp(r->tag, "latest") == 0 && r->digest == NULL ? "Always" : "IfNotPresent";
}
