/* libFuzzer harness for the engine's translation (engine/manifest.c + engine/domxml.c), held to issue 14's
 * promises: any manifest the validator accepts becomes domain XML that libxml2 parses; its elements are only
 * those the translator emits (no qemu:commandline, no other namespace but kvcon's metadata element); every
 * alias reads back as "ua-" + the manifest's name (nothing broke out of an attribute); and every file the
 * domain or the plan names lies, as written and resolved, under the engine's directories (image, volume,
 * run, socket) or the allowed root, also as migration reads them back (domxml_needs). Any violation aborts.
 *
 * A fixed tree under /tmp/kvcon-fuzz-domxml-UID (made once) gives the corpus real things to hit: kernel-boot
 * images, containerDisks, a PVC, an allowed host directory with a disk, and symbolic links that lead out of
 * each of them (to /etc), which must never show up in the XML. Seeds: tests/fuzz/corpus/domxml/. */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/domxml.h"
#include "engine/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char top[64], images[96], volumes[96], allowed[96], run_dir[128];

static void touch(const char *dir, const char *name)
{
	char p[1024];
	if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
		return;
	FILE *f = fopen(p, "a");
	if (f)
		fclose(f);
}

static void link_to(const char *dir, const char *name, const char *target)
{
	char p[1024];
	if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
		return;
	if (symlink(target, p) < 0 && access(p, F_OK) < 0)
		perror(p);
}

static void sub(char *out, size_t len, const char *dir, const char *name)
{
	char tmp[1024];
	if (snprintf(tmp, sizeof tmp, "%s/%s", dir, name) >= (int)sizeof tmp || strlen(tmp) >= len)
		return;
	strcpy(out, tmp);
	mkdir(out, 0700);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	char d[512];
	snprintf(top, sizeof top, "/tmp/kvcon-fuzz-domxml-%u", (unsigned)geteuid());
	mkdir(top, 0700);
	sub(images, sizeof images, top, "images");
	sub(volumes, sizeof volumes, top, "volumes");
	sub(allowed, sizeof allowed, top, "allowed");
	snprintf(run_dir, sizeof run_dir, "%s/run/22222222-2222-4222-8222-222222222222", top);
	sub(d, sizeof d, images, "guest");
	touch(d, "vmlinuz");
	touch(d, "initrd.gz");
	link_to(d, "evil", "/etc/passwd");
	sub(d, sizeof d, images, "kvcon-lab-guest");
	touch(d, "vmlinuz");
	touch(d, "initrd.gz");
	sub(d, sizeof d, images, "alpine-ext-kernel-boot-demo");
	sub(d, sizeof d, d, "boot");
	touch(d, "vmlinuz-virt");
	touch(d, "initramfs-virt");
	link_to(images, "outside", "/etc"); /* a kernel-boot "image" that is a way out */
	touch(images, "cirros-container-disk-demo.qcow2");
	touch(images, "alpine-container-disk-demo.qcow2");
	touch(images, "fedora-with-test-tooling-container-disk.qcow2");
	touch(images, "root.qcow2");
	link_to(images, "leak.qcow2", "/etc/passwd");
	sub(d, sizeof d, volumes, "default");
	touch(d, "data-pvc.img");
	touch(d, "disk-alpine.img");
	link_to(d, "leak.img", "/etc/passwd");
	touch(allowed, "disk.img");
	link_to(allowed, "shadow.img", "/etc/shadow");
	link_to(allowed, "etc", "/etc");
	return 0;
}

static const char *const elements[] = {
	"domain", "name", "uuid", "title", "metadata", "execution", "memory", "vcpu", "cpu", "model", "topology",
	"os", "type", "firmware", "feature", "kernel", "initrd", "cmdline", "boot", "features", "acpi", "apic",
	"smm", "clock", "on_poweroff", "on_reboot", "on_crash", "devices", "disk", "driver", "source", "target",
	"readonly", "serial", "alias", "controller", "interface", "mac", "console", "log", "channel", "graphics",
	"video", "rng", "backend", "memballoon", "ip", NULL,
};

static void violation(const char *what, const char *detail, const char *xml)
{
	fprintf(stderr, "fuzz_domxml: %s: %s\n%s\n", what, detail ? detail : "", xml ? xml : "");
	abort();
}

static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);
	return root[0] && strncmp(path, root, n) == 0 && path[n] == '/';
}

/* path, as written and resolved, lies under one of the engine's directories or the allowed root */
static void check_path(const char *path, const struct domxml_plan *p, const char *xml)
{
	const char *roots[] = { images, volumes, allowed, run_dir, p->sock_dir ? p->sock_dir : "", NULL };
	if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./") || strstr(path, "//"))
		violation("path not clean", path, xml);
	bool ok = false;
	for (int i = 0; roots[i]; i++)
		ok |= under(path, roots[i]);
	if (!ok)
		violation("path outside the engine's directories", path, xml);
	char *r = realpath(path, NULL);
	if (r) {
		ok = false;
		for (int i = 0; roots[i]; i++)
			ok |= under(r, roots[i]);
		if (!ok)
			violation("path resolves outside the engine's directories", r, xml);
		free(r);
	}
}

static const char *attr_of(xmlNodePtr n, const char *name, char *buf, size_t len)
{
	xmlChar *v = xmlGetProp(n, (const xmlChar *)name);
	if (v == NULL)
		return NULL;
	snprintf(buf, len, "%s", (const char *)v);
	xmlFree(v);
	return buf;
}

static int nalias;

static void walk(xmlNodePtr n, const struct manifest *m, const struct domxml_plan *p, const char *xml)
{
	for (; n; n = n->next) {
		if (n->type != XML_ELEMENT_NODE)
			continue;
		const char *name = (const char *)n->name;
		bool known = false;
		for (int i = 0; elements[i]; i++)
			known |= strcmp(elements[i], name) == 0;
		if (!known)
			violation("element the translator does not emit", name, xml);
		bool meta = strcmp(name, "execution") == 0;
		if ((n->ns != NULL) != meta || (meta && (strcmp((const char *)n->ns->href, DOMXML_META_URI) != 0 ||
							 strcmp((const char *)n->parent->name, "metadata") != 0)))
			violation("element in a foreign namespace", name, xml);
		char v[8192];
		const char *a;
		if ((strcmp(name, "source") == 0 || strcmp(name, "log") == 0) && (a = attr_of(n, "file", v, sizeof v)))
			check_path(a, p, xml);
		if (strcmp(name, "source") == 0 && (a = attr_of(n, "path", v, sizeof v)))
			check_path(a, p, xml);
		if (strcmp(name, "graphics") == 0) {
			if (!(a = attr_of(n, "socket", v, sizeof v)) || attr_of(n, "listen", v, sizeof v) ||
			    attr_of(n, "port", v, sizeof v) || attr_of(n, "autoport", v, sizeof v) || n->children)
				violation("display not on a unix socket", NULL, xml);
			attr_of(n, "socket", v, sizeof v);
			check_path(v, p, xml);
			if (strlen(v) >= 108)
				violation("socket path too long for sun_path", v, xml);
		}
		if (strcmp(name, "kernel") == 0 || strcmp(name, "initrd") == 0) {
			xmlChar *t = xmlNodeGetContent(n);
			check_path((const char *)t, p, xml);
			xmlFree(t);
		}
		if (strcmp(name, "alias") == 0 && (a = attr_of(n, "name", v, sizeof v))) {
			/* ua-<disk or interface name>, exactly: the name came back whole, nothing escaped from it */
			bool found = false;
			for (int i = 0; i < m->ndisks; i++)
				found |= strncmp(a, "ua-", 3) == 0 && strcmp(a + 3, m->disks[i].name) == 0;
			for (int i = 0; i < m->nifaces; i++)
				found |= strncmp(a, "ua-", 3) == 0 && strcmp(a + 3, m->ifaces[i].name) == 0;
			if (!found)
				violation("alias that is no name of the manifest", a, xml);
			nalias++;
		}
		walk(n->children, m, p, xml);
	}
}

static void check_build(const struct manifest *m, const struct domxml_env *env)
{
	char *err = NULL;
	struct domxml_plan *p = domxml_build(m, env, &err);
	free(err);
	if (p == NULL)
		return;
	xmlDocPtr doc = xmlReadMemory(p->xml, (int)strlen(p->xml), NULL, NULL,
				      XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (doc == NULL)
		violation("libxml2 does not parse the domain", NULL, p->xml);
	xmlNodePtr root = xmlDocGetRootElement(doc);
	if (root == NULL || strcmp((const char *)root->name, "domain") != 0 || root->next)
		violation("not one <domain>", NULL, p->xml);
	nalias = 0;
	walk(root, m, p, p->xml);
	if (nalias != m->ndisks + m->nifaces)
		violation("a disk or interface without its alias", NULL, p->xml);
	xmlFreeDoc(doc);
	for (int i = 0; i < p->nfiles; i++) {
		check_path(p->files[i].path, p, p->xml);
		if (p->files[i].backing)
			check_path(p->files[i].backing, p, p->xml);
	}
	/* what migration reads back from the same XML names the same kind of files */
	struct domxml_need *needs = NULL;
	int nn = domxml_needs(p->xml, false, &needs);
	if (nn < 0)
		violation("domxml_needs does not read the domain", NULL, p->xml);
	for (int i = 0; i < nn; i++) {
		check_path(needs[i].path, p, p->xml);
		free(needs[i].path);
	}
	free(needs);
	/* the forwarded ports' monitor commands: one fixed shape, whatever the manifest held */
	for (int i = 0; i < p->nfwds; i++) {
		char *c = domxml_hostfwd_cmd(p, i);
		if (strncmp(c, "hostfwd_add hostua-", 19) != 0 || strspn(c + 19, "abcdefghijklmnopqrstuvwxyz0123456789-") == 0 ||
		    strspn(c, "abcdefghijklmnopqrstuvwxyz0123456789-_:. ") != strlen(c))
			violation("a monitor command out of shape", c, p->xml);
		free(c);
	}
	domxml_plan_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	if (top[0] == '\0')
		LLVMFuzzerInitialize(NULL, NULL);
	char *err = NULL;
	struct manifest *m = manifest_parse((const char *)data, size, &err);
	free(err);
	if (m == NULL)
		return 0;
	const char *roots[] = { allowed, NULL };
	struct domxml_env env = { .image_dir = images, .volume_dir = volumes, .run_dir = run_dir, .bridge = "br0",
				  .host_roots = roots, .domain_type = "qemu", .dom_name = "ns_name",
				  .vm_uid = "11111111-1111-4111-8111-111111111111",
				  .vmi_uid = "22222222-2222-4222-8222-222222222222",
				  .launcher_uid = "33333333-3333-4333-8333-333333333333" };
	int hports[64];
	for (int i = 0; i < 64; i++)
		hports[i] = 40000 + i;
	bool few = true;
	for (int i = 0; i < m->nifaces; i++)
		few &= m->ifaces[i].nports <= 64;
	if (few)
		env.host_ports = hports;
	check_build(m, &env);
	/* The writer on its own: the validator bypassed, interface names, the disk serial and the kernel command
	 * line set to the input's last line (they reach only attributes and text, never a path). Whatever they
	 * hold, the XML parses to the same elements and the aliases read back whole, or the build refuses. */
	size_t from = size;
	while (from > 0 && data[from - 1] != '\n' && size - from < 200)
		from--;
	char *raw = calloc(1, size - from + 1); /* the input's last line */
	memcpy(raw, data + from, size - from);
	for (int i = 0; i < m->nifaces; i++) {
		free(m->ifaces[i].name);
		m->ifaces[i].name = strdup(raw);
	}
	if (m->ndisks) {
		free(m->disks[0].serial);
		m->disks[0].serial = strdup(raw);
	}
	free(m->kernel_args);
	m->kernel_args = strdup(raw);
	check_build(m, &env);
	free(raw);
	manifest_free(m);
	return 0;
}
