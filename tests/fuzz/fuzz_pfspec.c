/* libFuzzer harness for the port-forward, ssh and scp operand parsers (model/pfspec.c). The first byte picks the
 * parser. Whatever is accepted must be safe on a shell's command line (ssh's ProxyCommand): names and users of
 * [a-z0-9.-] / [A-Za-z0-9._-] only, not starting with '-'; ports in range; messages printable. Seeds in
 * tests/fuzz/corpus/pfspec/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/pfspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void safe(const char *s, const char *extra)
{
	if (s[0] == '-')
		abort();
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' ||
		      strchr(extra, *s)))
			abort();
}

static void printable(const char *err)
{
	for (; *err; err++)
		if ((unsigned char)*err < 0x20 || (unsigned char)*err >= 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 4096)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	char err[160] = "";
	struct pf_target t;
	struct pf_port p;
	const char *path = NULL;
	int rc;
	switch (data[0] % 3) {
	case 0:
		rc = pf_target_parse(s, (data[0] / 3) & 1, &t, err, sizeof err);
		if (rc == 0) {
			if (t.kind != KIND_VM && t.kind != KIND_VMI)
				abort();
			safe(t.name, "");
			safe(t.ns, "");
			safe(t.user, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
		} else {
			printable(err);
		}
		break;
	case 1:
		rc = pf_port_parse(s, &p, err, sizeof err);
		if (rc == 0 && (p.local < 0 || p.local > 65535 || p.remote < 1 || p.remote > 65535))
			abort();
		if (rc < 0)
			printable(err);
		break;
	default:
		rc = pf_scp_operand(s, &t, &path, err, sizeof err);
		if (rc == 1) {
			safe(t.name, "");
			safe(t.ns, "");
			if (path < s || path > s + strlen(s))
				abort();
		} else if (rc == 0 && s[0] == '-') {
			abort();
		} else if (rc < 0) {
			printable(err);
		}
		break;
	}
	free(s);
	return 0;
}
