/* Unit tests of the domain XML the engine generates: kernel boot from an image directory, CPU topology and
 * memory, disks per volume kind and bus, interfaces, serial console with its log, VNC, agent channel, TCG/KVM,
 * escaping, and the per-execution files the plan lists. */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/domxml.h"
#include "engine/esecret.h"
#include "engine/manifest.h"
#include "t.h"

static const char *vm_yaml =
	"apiVersion: kubevirt.io/v1\n"
	"kind: VirtualMachine\n"
	"metadata: {name: web, namespace: prod}\n"
	"spec:\n"
	"  runStrategy: Always\n"
	"  template:\n"
	"    spec:\n"
	"      domain:\n"
	"        cpu: {cores: 2, sockets: 1, threads: 2}\n"
	"        memory: {guest: 512Mi}\n"
	"        machine: {type: q35}\n"
	"        firmware:\n"
	"          kernelBoot:\n"
	"            kernelArgs: console=ttyS0 a<b&c\n"
	"            container: {image: guest, kernelPath: /vmlinuz, initrdPath: /initrd.gz}\n"
	"        devices:\n"
	"          rng: {}\n"
	"          disks:\n"
	"          - {name: root, disk: {bus: virtio}, bootOrder: 1}\n"
	"          - {name: data, disk: {bus: sata}}\n"
	"          - {name: scratch, disk: {bus: scsi}}\n"
	"          - {name: seed, cdrom: {bus: sata}}\n"
	"          interfaces:\n"
	"          - {name: default, masquerade: {}}\n"
	"          - {name: lan, bridge: {}, macAddress: '52:54:00:12:34:56', model: e1000}\n"
	"      networks:\n"
	"      - {name: default, pod: {}}\n"
	"      - {name: lan, multus: {networkName: br-lan}}\n"
	"      volumes:\n"
	"      - {name: root, containerDisk: {image: 'quay.io/x/root:1'}}\n"
	"      - {name: data, persistentVolumeClaim: {claimName: data-pvc}}\n"
	"      - {name: scratch, emptyDisk: {capacity: 1Gi}}\n"
	"      - {name: seed, cloudInitNoCloud: {userData: \"#cloud-config\\n\"}}\n";

static bool has(const char *xml, const char *needle)
{
	bool ok = strstr(xml, needle) != NULL;
	if (!ok)
		fprintf(stderr, "missing in XML: %s\n", needle);
	return ok;
}

#define SMALL_VM(extra)                                                                                            \
	"apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: s}\nspec:\n  template:\n    spec:\n"    \
	"      domain: {memory: {guest: 64Mi}}\n" extra

static struct manifest *parse_ok(const char *text)
{
	char *err = NULL;
	struct manifest *m = manifest_parse(text, strlen(text), &err);
	if (m == NULL)
		fprintf(stderr, "refused: %s\n", err);
	T_CHECK(m != NULL);
	free(err);
	return m;
}

/* build m in env: the error (caller frees) or NULL, the plan in *out when wanted */
static char *build_err(const struct manifest *m, const struct domxml_env *env, struct domxml_plan **out)
{
	char *err = NULL;
	struct domxml_plan *p = m ? domxml_build(m, env, &err) : NULL;
	if (out)
		*out = p;
	else
		domxml_plan_free(p);
	return m ? err : xstrdup("no manifest");
}

static bool err_has(char *err, const char *want)
{
	bool ok = err && strstr(err, want);
	if (!ok)
		fprintf(stderr, "expected an error with \"%s\", got: %s\n", want, err ? err : "success");
	free(err);
	return ok;
}

/* The writer on its own (the validator bypassed): a name that tries to close its attribute stays inside it. */
static void test_writer(const struct domxml_env *env0)
{
	struct domxml_env env = *env0;
	struct manifest *m = parse_ok(SMALL_VM(""));
	if (m == NULL)
		return;
	const char *evil = "n'/></interface></devices><qemu:commandline xmlns:qemu=\"http://libvirt.org/schemas/domain/"
			   "qemu/1.0\"><qemu:arg value=\"-chardev\"/></qemu:commandline><devices><interface a=\"&amp;";
	free(m->ifaces[0].name);
	m->ifaces[0].name = xstrdup(evil);
	struct domxml_plan *p = NULL;
	char *err = build_err(m, &env, &p);
	T_CHECK(err == NULL && p != NULL);
	free(err);
	if (p) {
		xmlDocPtr doc = xmlReadMemory(p->xml, (int)strlen(p->xml), NULL, NULL, XML_PARSE_NONET);
		T_CHECK(doc != NULL);
		T_CHECK(strstr(p->xml, "<qemu:") == NULL && strstr(p->xml, "commandline xmlns") != NULL);
		int ifaces = 0, aliases = 0;
		xmlNodePtr devs = NULL;
		for (xmlNodePtr n = doc ? xmlDocGetRootElement(doc)->children : NULL; n; n = n->next)
			if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, "devices") == 0)
				devs = n;
		for (xmlNodePtr n = devs ? devs->children : NULL; n; n = n->next) {
			if (n->type != XML_ELEMENT_NODE)
				continue;
			T_CHECK(n->ns == NULL);
			if (strcmp((const char *)n->name, "interface") != 0)
				continue;
			ifaces++;
			for (xmlNodePtr c = n->children; c; c = c->next)
				if (c->type == XML_ELEMENT_NODE && strcmp((const char *)c->name, "alias") == 0) {
					xmlChar *a = xmlGetProp(c, BAD_CAST "name");
					char *want = xasprintf("ua-%s", evil);
					T_EQ_STR((const char *)a, want);
					aliases++;
					free(want);
					xmlFree(a);
				}
		}
		T_EQ_INT(ifaces, 1);
		T_EQ_INT(aliases, 1);
		xmlFreeDoc(doc);
	}
	domxml_plan_free(p);
	/* a control character cannot be written as XML 1.0: the build refuses rather than pass it on */
	free(m->ifaces[0].name);
	m->ifaces[0].name = xstrdup("a\x01b");
	T_CHECK(err_has(build_err(m, &env, NULL), "domain XML:"));
	manifest_free(m);
}

/* hostDisk and kernel host paths: refused unless below an allowed root, symbolic links may not lead out,
 * DiskOrCreate creates only there, emptyDisk never writes through a link. */
static void test_confinement(const char *dir)
{
	char *allowed = xasprintf("%s/allowed", dir), *outside = xasprintf("%s/outside", dir);
	char *images = xasprintf("%s/images", dir), *run = xasprintf("%s/run-c", dir);
	char *victim = xasprintf("%s/victim", outside);
	util_mkdir_p(allowed, 0700);
	util_mkdir_p(outside, 0700);
	util_mkdir_p(images, 0700);
	char *g = xasprintf("%s/g", images);
	util_mkdir_p(g, 0700);
	char *f;
	util_write_file_atomic(victim, "precious", 8, 0600);
	f = xasprintf("%s/disk.img", allowed);
	util_write_file_atomic(f, "d", 1, 0600);
	free(f);
	f = xasprintf("%s/shadow.img", allowed);
	T_CHECK(symlink("/etc/shadow", f) == 0);
	free(f);
	f = xasprintf("%s/out", allowed);
	T_CHECK(symlink(outside, f) == 0);
	free(f);
	f = xasprintf("%s/vmlinuz", g);
	util_write_file_atomic(f, "k", 1, 0600);
	free(f);
	f = xasprintf("%s/evil", g);
	T_CHECK(symlink("/etc/passwd", f) == 0);
	free(f);
	const char *none[] = { NULL }, *roots[] = { allowed, NULL };
	struct domxml_env env = { .image_dir = images, .volume_dir = "/nonexistent", .run_dir = run,
				  .domain_type = "qemu", .dom_name = "default_s", .vm_uid = "u", .vmi_uid = "v",
				  .launcher_uid = "l", .host_roots = none };
	struct manifest *m;
	char *text;

	/* hostDisk: off by default, also on a path the host has */
	m = parse_ok(SMALL_VM("      volumes:\n      - {name: h, hostDisk: {path: /etc/shadow, type: Disk}}\n"));
	T_CHECK(err_has(build_err(m, &env, NULL), "hostDisk.path: Forbidden: host path \"/etc/shadow\""));
	env.host_roots = NULL;
	T_CHECK(err_has(build_err(m, &env, NULL), "engine.allow-host-path = DIR"));
	env.host_roots = roots;
	T_CHECK(err_has(build_err(m, &env, NULL), "Forbidden"));
	manifest_free(m);
	/* below the allowed root: accepted; a link from there to /etc/shadow or out of it: refused */
	text = xasprintf(SMALL_VM("      volumes:\n      - {name: h, hostDisk: {path: %s/disk.img, type: Disk}}\n"),
			 allowed);
	m = parse_ok(text);
	free(text);
	T_CHECK(build_err(m, &env, NULL) == NULL);
	manifest_free(m);
	text = xasprintf(SMALL_VM("      volumes:\n      - {name: h, hostDisk: {path: %s/shadow.img, type: Disk}}\n"),
			 allowed);
	m = parse_ok(text);
	free(text);
	T_CHECK(err_has(build_err(m, &env, NULL), "resolves to /etc/shadow"));
	manifest_free(m);
	/* DiskOrCreate: created below the root (sparse, its capacity), never through a link out of it */
	text = xasprintf(SMALL_VM("      volumes:\n      - {name: h, hostDisk: {path: %s/new.img, type: DiskOrCreate, "
				  "capacity: 2Mi}}\n"),
			 allowed);
	m = parse_ok(text);
	free(text);
	struct domxml_plan *p = NULL;
	char *err = build_err(m, &env, &p);
	T_CHECK(err == NULL && p);
	free(err);
	err = NULL;
	if (p) {
		T_EQ_INT(domxml_prepare(p, &err), 0);
		free(err);
		struct stat st;
		f = xasprintf("%s/new.img", allowed);
		T_CHECK(stat(f, &st) == 0 && st.st_size == 2 << 20 && (st.st_mode & 077) == 0);
		free(f);
	}
	domxml_plan_free(p);
	manifest_free(m);
	text = xasprintf(SMALL_VM("      volumes:\n      - {name: h, hostDisk: {path: %s/out/made.img, type: "
				  "DiskOrCreate, capacity: 1Mi}}\n"),
			 allowed);
	m = parse_ok(text);
	free(text);
	T_CHECK(err_has(build_err(m, &env, NULL), "outside the directories the host's owner allows"));
	f = xasprintf("%s/made.img", outside);
	T_CHECK(access(f, F_OK) != 0);
	free(f);
	manifest_free(m);

	/* kernelBoot: host paths in the image directory need no opt-in; elsewhere they do; a link out of an image
	 * is refused */
	env.host_roots = none;
	text = xasprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: s}\nspec:\n  template:\n"
			 "    spec:\n      domain:\n        memory: {guest: 64Mi}\n        firmware:\n          kernelBoot:\n"
			 "            container: {image: host, kernelPath: %s/vmlinuz}\n",
			 g);
	m = parse_ok(text);
	free(text);
	T_CHECK(build_err(m, &env, NULL) == NULL);
	free(m->kernel);
	m->kernel = xstrdup("/etc/passwd");
	T_CHECK(err_has(build_err(m, &env, NULL), "kernelPath: Forbidden: host path \"/etc/passwd\" is outside"));
	free(m->kernel);
	m->kernel = xasprintf("%s/evil", g);
	T_CHECK(err_has(build_err(m, &env, NULL), "resolves to /etc/passwd"));
	free(m->kernel);
	m->kernel = xstrdup("/evil");
	m->kernel_image = xstrdup("g");
	T_CHECK(err_has(build_err(m, &env, NULL), "resolves to /etc/passwd"));
	manifest_free(m);

	/* containerDisk: a file of the image directory, or of the engine's image cache (pulled images), never a link
	 * out of them */
	char *cache = xasprintf("%s/cache", dir);
	util_mkdir_p(cache, 0700);
	f = xasprintf("%s/sha256-1.qcow2", cache);
	util_write_file_atomic(f, "q", 1, 0600);
	char *l = xasprintf("%s/pulled.qcow2", images);
	T_CHECK(symlink(f, l) == 0);
	free(f);
	free(l);
	m = parse_ok(SMALL_VM("      volumes:\n      - {name: c, containerDisk: {image: pulled}}\n"));
	T_CHECK(err_has(build_err(m, &env, NULL), "resolves outside the engine's image directory"));
	env.image_cache = cache;
	T_CHECK(build_err(m, &env, NULL) == NULL);
	env.image_cache = NULL;
	manifest_free(m);
	free(cache);

	/* emptyDisk: a link planted where the file goes is not followed; the victim keeps its bytes */
	m = parse_ok(SMALL_VM("      volumes:\n      - {name: e, emptyDisk: {capacity: 1Mi}}\n"));
	err = build_err(m, &env, &p);
	T_CHECK(err == NULL && p);
	free(err);
	if (p) {
		util_mkdir_p(run, 0700);
		f = xasprintf("%s/empty-e.img", run);
		T_CHECK(symlink(victim, f) == 0);
		err = NULL;
		T_CHECK(domxml_prepare(p, &err) < 0);
		free(err);
		size_t n = 0;
		char *bytes = util_read_file(victim, &n);
		T_CHECK(bytes && n == 8 && memcmp(bytes, "precious", 8) == 0);
		free(bytes);
		unlink(f);
		free(f);
		/* a run directory open to others is not the engine's private directory */
		chmod(run, 0777);
		err = NULL;
		T_CHECK(domxml_prepare(p, &err) < 0 && err_has(err, "open to group or others"));
		chmod(run, 0700);
		err = NULL;
		T_EQ_INT(domxml_prepare(p, &err), 0);
		free(err);
	}
	domxml_plan_free(p);
	manifest_free(m);
	free(g);
	free(allowed);
	free(outside);
	free(images);
	free(run);
	free(victim);
}

/* libvirt's XML read back for migration: files, attributes, elements, the metadata's launcher rewritten. */
static void test_reading(void)
{
	const char *xml = "<domain type='kvm' id='3'>\n  <name>a</name>\n  <cpu mode='custom'><model>Sky&lt;lake</model></cpu>\n"
			  "  <os><type>hvm</type><kernel>/k&amp;1</kernel><initrd>/i'2</initrd></os>\n"
			  "  <devices><disk type='file' device='disk'><source file='/d&quot;1.img'/></disk>\n"
			  "  <disk type='file' device='cdrom'><source file='/c.iso'/></disk>\n"
			  "  <disk type='network' device='disk'><source protocol='nbd'/></disk>\n"
			  "  <!-- <kernel>/not-a-kernel</kernel> --></devices>\n</domain>\n";
	struct domxml_need *n = NULL;
	int c = domxml_needs(xml, false, &n);
	T_EQ_INT(c, 4);
	if (c == 4) {
		T_EQ_STR(n[0].path, "/k&1");
		T_EQ_STR(n[0].what, "kernel");
		T_EQ_STR(n[1].path, "/i'2");
		T_EQ_STR(n[2].path, "/c.iso");
		T_EQ_STR(n[2].what, "cdrom image");
		T_EQ_STR(n[3].path, "/d\"1.img");
		T_EQ_STR(n[3].what, "disk image");
	}
	for (int i = 0; i < c; i++)
		free(n[i].path);
	free(n);
	c = domxml_needs(xml, true, &n);
	T_EQ_INT(c, 3); /* disks copied by libvirt */
	for (int i = 0; i < c; i++)
		free(n[i].path);
	free(n);
	T_EQ_INT(domxml_needs("<domain", false, &n), -1);
	char *v = domxml_attr(xml, "/domain/@type");
	T_EQ_STR(v, "kvm");
	free(v);
	v = domxml_element(xml, "/domain/cpu[model]");
	T_CHECK(v && strstr(v, "<model>Sky&lt;lake</model>") && util_has_prefix(v, "<cpu"));
	free(v);
	T_CHECK(domxml_element("<domain><cpu mode='host-model'/></domain>", "/domain/cpu[model]") == NULL);
	const char *meta = "<kvcon:execution xmlns:kvcon=\"https://kvcon.dev/xmlns/engine/1\" vm=\"a\" launcher=\"old\"/>";
	v = domxml_with_attr(meta, "launcher", "new'\"<");
	T_CHECK(v && strstr(v, "launcher=\"new'&quot;&lt;\"") && strstr(v, "vm=\"a\"") && strstr(v, "xmlns:kvcon="));
	free(v);
	/* migration's pre-flight: a transient pool's XML written with libxml2 and its target read back (an '&' or
	 * '<' in the directory neither breaks the XML nor fools the comparison) */
	v = domxml_dir_pool("kvcon-preflight-1", "/srv/a&b</path><x>");
	T_CHECK(v && strstr(v, "<pool type=\"dir\">") && strstr(v, "<path>/srv/a&amp;b&lt;/path&gt;&lt;x&gt;</path>"));
	char *t = v ? domxml_attr(v, "/pool/target/path") : NULL;
	T_EQ_STR(t, "/srv/a&b</path><x>");
	free(t);
	free(v);
	T_CHECK(domxml_dir_pool("p", "/bad\x1b[31m") == NULL);
	/* hostdev found by the parser, not by a substring (a comment or a name mentioning it does not count) */
	v = domxml_element("<domain><name>hostdev</name><devices><!-- <hostdev/> --></devices></domain>",
			   "/domain/devices/hostdev");
	T_CHECK(v == NULL);
	v = domxml_element("<domain><devices><hostdev mode='subsystem' type='pci'/></devices></domain>",
			   "/domain/devices/hostdev");
	T_CHECK(v != NULL);
	free(v);
}

/* masquerade: QEMU's user network on 10.0.2.0/24; ports forwarded from 127.0.0.1 through monitor commands only
 * when the engine chose host ports; a config drive is an ISO labelled config-2 with OpenStack's layout. */
static void test_pod_net(const struct domxml_env *env0, const char *run)
{
	const char *y = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: n}\nspec:\n"
			"  template:\n    spec:\n      domain:\n        memory: {guest: 64Mi}\n        devices:\n"
			"          interfaces:\n          - name: default\n            masquerade: {}\n            ports:\n"
			"            - {name: ssh, port: 22}\n            - {port: 53, protocol: UDP}\n"
			"      networks: [{name: default, pod: {}}]\n      volumes:\n"
			"      - {name: cd, cloudInitConfigDrive: {userData: \"#cloud-config\\n\", networkData: \"{}\"}}\n";
	char *err = NULL;
	struct manifest *m = manifest_parse(y, strlen(y), &err);
	T_CHECK(m != NULL);
	if (m == NULL) {
		fprintf(stderr, "%s\n", err);
		free(err);
		return;
	}
	T_EQ_INT(m->ifaces[0].nports, 2);
	T_EQ_STR(m->ifaces[0].ports[1].proto, "UDP");
	T_CHECK(m->vols[0].config_drive);
	struct domxml_env env = *env0;
	env.run_dir = run;
	struct domxml_plan *p = domxml_build(m, &env, &err);
	T_CHECK(p && has(p->xml, "<interface type=\"user\">") &&
		has(p->xml, "<ip family=\"ipv4\" address=\"10.0.2.0\" prefix=\"24\"/>"));
	T_CHECK(p && p->fwds == NULL && p->nfwds == 0); /* no host ports chosen: nothing forwarded */
	domxml_plan_free(p);
	int hp[] = { 40022, 40053 };
	env.host_ports = hp;
	p = domxml_build(m, &env, &err);
	T_CHECK(p && p->fwds && p->nfwds == 2);
	if (p && p->fwds && p->nfwds == 2) {
		char *c0 = domxml_hostfwd_cmd(p, 0), *c1 = domxml_hostfwd_cmd(p, 1);
		T_EQ_STR(c0, "hostfwd_add hostua-default tcp:127.0.0.1:40022-:22");
		T_EQ_STR(c1, "hostfwd_add hostua-default udp:127.0.0.1:40053-:53");
		T_EQ_STR(p->pod_iface, "default");
		free(c0);
		free(c1);
	}
	/* the config drive, really made: ISO 9660 label config-2 at offset 32808, OpenStack's file names */
	err = NULL;
	T_EQ_INT(p ? domxml_prepare(p, &err) : -1, 0);
	if (err)
		fprintf(stderr, "prepare: %s\n", err);
	char *iso = xasprintf("%s/cloudinit-cd.iso", run);
	size_t n = 0;
	char *data = util_read_file(iso, &n);
	T_CHECK(data && n > 32808 + 8 && memcmp(data + 32808, "config-2", 8) == 0);
	bool ud = false, md = false, nd = false;
	for (size_t i = 0; data && i + 17 < n; i++) {
		ud |= memcmp(data + i, "user_data", 9) == 0;
		md |= memcmp(data + i, "meta_data.json", 14) == 0;
		nd |= memcmp(data + i, "network_data.json", 17) == 0;
	}
	T_CHECK(ud && md && nd);
	free(data);
	free(iso);
	domxml_plan_free(p);
	manifest_free(m);
}

int main(void)
{
	test_reading();
	char dir[] = "/tmp/kvcon-dxXXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	char *gdir = xasprintf("%s/guest", dir);
	util_mkdir_p(gdir, 0755);
	char *k = xasprintf("%s/vmlinuz", gdir), *i = xasprintf("%s/initrd.gz", gdir), *img = xasprintf("%s/root.qcow2", dir);
	util_write_file_atomic(k, "k", 1, 0644);
	util_write_file_atomic(i, "i", 1, 0644);
	util_write_file_atomic(img, "q", 1, 0644);

	char *err = NULL;
	struct manifest *m = manifest_parse(vm_yaml, strlen(vm_yaml), &err);
	T_CHECK(m != NULL);
	if (m == NULL) {
		fprintf(stderr, "%s\n", err);
		return T_DONE();
	}
	struct domxml_env env = { .image_dir = dir, .volume_dir = "/vols", .run_dir = "/run/x", .domain_type = "qemu",
				  .dom_name = "prod_web", .vm_uid = "11111111-1111-4111-8111-111111111111",
				  .vmi_uid = "22222222-2222-4222-8222-222222222222",
				  .launcher_uid = "33333333-3333-4333-8333-333333333333", .generation = 3 };
	struct domxml_plan *p = domxml_build(m, &env, &err);
	T_CHECK(p != NULL);
	if (p) {
		const char *x = p->xml;
		T_CHECK(has(x, "<domain type=\"qemu\">"));
		T_CHECK(has(x, "<name>prod_web</name>"));
		T_CHECK(has(x, "<uuid>11111111-1111-4111-8111-111111111111</uuid>"));
		T_CHECK(has(x, "vmi=\"22222222-2222-4222-8222-222222222222\""));
		T_CHECK(has(x, "<memory unit=\"KiB\">524288</memory>"));
		T_CHECK(has(x, "<vcpu placement=\"static\">4</vcpu>"));
		T_CHECK(has(x, "<topology sockets=\"1\" dies=\"1\" cores=\"2\" threads=\"2\"/>"));
		T_CHECK(has(x, "machine=\"q35\""));
		char *kx = xasprintf("<kernel>%s/guest/vmlinuz</kernel>", dir);
		T_CHECK(has(x, kx));
		free(kx);
		T_CHECK(has(x, "<cmdline>console=ttyS0 a&lt;b&amp;c</cmdline>"));
		/* the agent socket has a short explicit path (libvirt's default under a long root overflows sun_path) */
		T_CHECK(has(x, "<source mode=\"bind\" path=\"/run/x/ga.sock\"/>"));
		T_CHECK(!strstr(x, "<boot dev=\"hd\"/>")); /* kernel boot: no firmware boot device */
		T_CHECK(has(x, "<source file=\"/run/x/overlay-root.qcow2\"/>"));
		T_CHECK(has(x, "<target dev=\"vda\" bus=\"virtio\"/>"));
		T_CHECK(has(x, "<boot order=\"1\"/>"));
		T_CHECK(has(x, "<source file=\"/vols/prod/data-pvc.img\"/>"));
		T_CHECK(has(x, "<target dev=\"sda\" bus=\"sata\"/>"));
		T_CHECK(has(x, "<target dev=\"sdb\" bus=\"scsi\"/>"));
		T_CHECK(has(x, "<controller type=\"scsi\" model=\"virtio-scsi\"/>"));
		T_CHECK(has(x, "device=\"cdrom\""));
		T_CHECK(has(x, "<source file=\"/run/x/cloudinit-seed.iso\"/>"));
		T_CHECK(has(x, "<interface type=\"user\">"));
		T_CHECK(has(x, "<interface type=\"bridge\">\n      <source bridge=\"br-lan\"/>"));
		T_CHECK(has(x, "<mac address=\"52:54:00:12:34:56\"/>"));
		T_CHECK(has(x, "<model type=\"e1000\"/>"));
		T_CHECK(has(x, "<log file=\"/run/x/serial.log\" append=\"on\"/>"));
		T_CHECK(has(x, "<console type=\"pty\">"));
		T_CHECK(has(x, "name=\"org.qemu.guest_agent.0\""));
		T_CHECK(has(x, "<graphics type=\"vnc\" socket=\"/run/x/vnc.sock\"/>"));
		T_CHECK(has(x, "<rng model=\"virtio\">"));
		T_CHECK(has(x, "<on_poweroff>destroy</on_poweroff>"));
		T_EQ_STR(p->serial_log, "/run/x/serial.log");
		/* files: the overlay, the PVC that must exist, the empty disk, the seed */
		T_EQ_INT(p->nfiles, 4);
		int kinds[5] = { 0 };
		for (int f = 0; f < p->nfiles; f++)
			kinds[p->files[f].kind]++;
		T_EQ_INT(kinds[DF_OVERLAY], 1);
		T_EQ_INT(kinds[DF_NEEDED], 1);
		T_EQ_INT(kinds[DF_EMPTY], 1);
		T_EQ_INT(kinds[DF_SEED], 1);
		for (int f = 0; f < p->nfiles; f++)
			if (p->files[f].kind == DF_EMPTY)
				T_EQ_INT(p->files[f].size, 1ull << 30);
	}
	domxml_plan_free(p);

	/* KVM when the host has it; host-passthrough only then */
	free(m->cpu_model);
	m->cpu_model = xstrdup("host-passthrough");
	env.domain_type = "kvm";
	p = domxml_build(m, &env, &err);
	T_CHECK(p && has(p->xml, "<domain type=\"kvm\">") && has(p->xml, "<cpu mode=\"host-passthrough\">"));
	domxml_plan_free(p);
	env.domain_type = "qemu";
	p = domxml_build(m, &env, &err);
	T_CHECK(p && !strstr(p->xml, "host-passthrough"));
	domxml_plan_free(p);

	/* a missing image: refused with the field path */
	env.image_dir = "/nonexistent";
	err = NULL;
	p = domxml_build(m, &env, &err);
	T_CHECK(p == NULL);
	T_CHECK(err && util_has_prefix(err, "spec.template.spec.domain.firmware.kernelBoot.container.image"));
	free(err);
	manifest_free(m);

	/* prepare: empty disk and a NoCloud seed image are really made */
	const char *small = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: s}\nspec:\n"
			    "  template:\n    spec:\n      domain: {memory: {guest: 64Mi}}\n      volumes:\n"
			    "      - {name: e, emptyDisk: {capacity: 4Mi}}\n"
			    "      - {name: c, cloudInitNoCloud: {userDataBase64: I2Nsb3VkLWNvbmZpZwo=}}\n";
	m = manifest_parse(small, strlen(small), &err);
	T_CHECK(m != NULL);
	T_EQ_STR(m->vols[1].user_data, "#cloud-config\n");
	{
		/* a run directory too deep for a socket path: the agent and VNC sockets go to a short private
		 * directory (never TCP) */
		struct domxml_env deep = env;
		deep.run_dir = "/home/a-rather-long-user-name/.local/state/kvcon/engine-data/run/"
			       "22222222-2222-4222-8222-222222222222";
		struct domxml_plan *dp = domxml_build(m, &deep, &err);
		T_CHECK(dp != NULL);
		if (dp) {
			T_CHECK(dp->sock_base != NULL);
			T_CHECK(strlen(dp->sock_dir) + sizeof "/vnc.sock" <= SOCK_PATH_MAX);
			char *ga = xasprintf("path=\"%s/ga.sock\"", dp->sock_dir);
			char *vnc = xasprintf("<graphics type=\"vnc\" socket=\"%s/vnc.sock\"/>", dp->sock_dir);
			T_CHECK(has(dp->xml, ga) && has(dp->xml, vnc));
			T_CHECK(strstr(dp->xml, "listen") == NULL && strstr(dp->xml, "autoport") == NULL);
			T_CHECK(strstr(dp->sock_dir, "22222222-2222-4222-8222-222222222222") != NULL);
			/* the engine finds it again when the execution ends, to remove it */
			char *again = domxml_sock_dir_of(deep.run_dir, deep.vmi_uid);
			T_EQ_STR(again, dp->sock_dir);
			free(again);
			T_CHECK(domxml_sock_dir_of(deep.run_dir, "../../etc/x-2222-4222-8222-2222222222") == NULL);
			T_CHECK(domxml_sock_dir_of("/run/x", deep.vmi_uid) == NULL);
			free(ga);
			free(vnc);
		}
		domxml_plan_free(dp);
	}
	char *run = xasprintf("%s/run", dir);
	env.image_dir = dir;
	env.run_dir = run;
	p = domxml_build(m, &env, &err);
	T_CHECK(p != NULL);
	err = NULL;
	T_EQ_INT(domxml_prepare(p, &err), 0);
	if (err)
		fprintf(stderr, "prepare: %s\n", err);
	char *e = xasprintf("%s/empty-e.img", run), *c = xasprintf("%s/cloudinit-c.iso", run);
	size_t n = 0;
	free(util_read_file(c, &n));
	T_CHECK(n > 0);
	T_CHECK(access(e, R_OK) == 0);
	{
		/* a Secret's volume: a read-only ISO of one file per key, its data as ecreds_resolve sets them */
		const char *sv = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: s}\nspec:\n"
				 "  template:\n    spec:\n      domain: {memory: {guest: 64Mi}}\n      volumes:\n"
				 "      - {name: sec, secret: {secretName: app}}\n";
		struct manifest *sm = manifest_parse(sv, strlen(sv), &err);
		T_CHECK(sm != NULL);
		json_object *so = json_tokener_parse("{\"data\":{\"token\":\"S1ZDT04tU0VDUkVULVZBTFVF\"}}");
		if (sm)
			sm->vols[0].files = esecret_data(so, false);
		json_object_put(so);
		struct domxml_plan *sp = sm ? domxml_build(sm, &env, &err) : NULL;
		T_CHECK(sp != NULL);
		char *iso = xasprintf("%s/secret-sec.iso", run);
		if (sp) {
			char *src = xasprintf("<source file=\"%s\"/>", iso);
			T_CHECK(has(sp->xml, src));
			T_CHECK(has(sp->xml, "<readonly/>"));
			free(src);
			T_EQ_INT(domxml_prepare(sp, &err), 0);
			size_t in = 0;
			char *bytes = util_read_file(iso, &in);
			T_CHECK(in > 0 && memmem(bytes, in, "KVCON-SECRET-VALUE", 18) != NULL && memmem(bytes, in, "token", 5) != NULL);
			free(bytes);
			char *dd = xasprintf("%s.d", iso);
			T_CHECK(access(dd, F_OK) != 0); /* the files are gone once the image is made */
			free(dd);
		}
		free(iso);
		domxml_plan_free(sp);
		manifest_free(sm);
	}
	test_pod_net(&env, run);
	test_writer(&env);
	test_confinement(dir);
	char *cmd = xasprintf("rm -rf '%s'", dir);
	T_EQ_INT(system(cmd), 0);
	free(cmd);
	free(e);
	free(c);
	free(run);
	domxml_plan_free(p);
	manifest_free(m);
	free(k);
	free(i);
	free(img);
	free(gdir);
	return T_DONE();
}
