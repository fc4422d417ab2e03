/* Unit tests of the engine's manifest parser and validator: YAML and JSON, quantities, defaults, every refusal
 * naming its field path, and KubeVirt's own example manifests (tests/data/kubevirt) with the verdict for each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/domxml.h"
#include "engine/manifest.h"
#include "core/ydoc.h"
#include "t.h"

#define BASE \
	"apiVersion: kubevirt.io/v1\n" \
	"kind: VirtualMachine\n" \
	"metadata:\n" \
	"  name: t1\n" \
	"spec:\n" \
	"  runStrategy: Always\n" \
	"  template:\n" \
	"    spec:\n" \
	"      domain:\n" \
	"        memory:\n" \
	"          guest: 128Mi\n"

/* Parses base + extra; returns the error (caller frees) or NULL when accepted. */
static char *verdict(const char *extra)
{
	char *text = xasprintf(BASE "%s", extra);
	char *err = NULL;
	struct manifest *m = manifest_parse(text, strlen(text), &err);
	manifest_free(m);
	free(text);
	return err;
}

static void expect_reject(const char *extra, const char *path)
{
	char *err = verdict(extra);
	T_CHECK(err != NULL);
	if (err && strncmp(err, path, strlen(path)) != 0) {
		fprintf(stderr, "expected an error at %s, got: %s\n", path, err);
		T_CHECK(0);
	}
	free(err);
}

static void test_basics(void)
{
	char *err = NULL;
	char *text = xstrdup(BASE);
	struct manifest *m = manifest_parse(text, strlen(text), &err);
	T_CHECK(m != NULL);
	if (m) {
		T_EQ_STR(m->name, "t1");
		T_EQ_STR(m->ns, "default");
		T_EQ_STR(m->run_strategy, "Always");
		T_EQ_INT(m->memory, 128u << 20);
		T_EQ_INT(m->cores, 1);
		T_EQ_STR(m->machine, "q35");
		T_EQ_INT(m->grace, 180);
		T_EQ_INT(m->nifaces, 1); /* the default pod interface */
		T_CHECK(m->serial_console && m->graphics);
	}
	manifest_free(m);
	free(text);

	/* the same in JSON */
	const char *json = "{\"apiVersion\":\"kubevirt.io/v1\",\"kind\":\"VirtualMachine\",\"metadata\":{\"name\":\"j\","
			   "\"namespace\":\"ns1\",\"labels\":{\"a\":\"b\"}},\"spec\":{\"running\":true,\"template\":{"
			   "\"spec\":{\"domain\":{\"cpu\":{\"cores\":2,\"sockets\":2},\"resources\":{\"requests\":{"
			   "\"memory\":\"1Gi\"}},\"devices\":{\"autoattachPodInterface\":false}}}}}}";
	m = manifest_parse(json, strlen(json), &err);
	T_CHECK(m != NULL);
	if (m) {
		T_EQ_STR(m->ns, "ns1");
		T_EQ_STR(m->run_strategy, "Always"); /* spec.running: true */
		T_CHECK(m->running_field);
		T_EQ_INT(m->memory, 1u << 30); /* from resources.requests */
		T_EQ_INT(m->cores * m->sockets, 4);
		T_EQ_INT(m->nlabels, 1);
		T_EQ_INT(m->nifaces, 0);
	}
	manifest_free(m);

	/* the template's labels: its VMIs' (not the VM's own) */
	const char *tl = BASE;
	char *tt = xstrdup(tl);
	char *at = strstr(tt, "  template:\n");
	char *with = xasprintf("%.*s  template:\n    metadata:\n      labels:\n        kubevirt.io/vmReplicaSet: web\n%s",
			       (int)(at - tt), tt, at + strlen("  template:\n"));
	m = manifest_parse(with, strlen(with), &err);
	T_CHECK(m != NULL);
	if (m) {
		T_EQ_INT(m->nlabels, 0);
		T_EQ_INT(m->ntlabels, 1);
		T_EQ_STR(m->tlabels[0], "kubevirt.io/vmReplicaSet=web");
	}
	manifest_free(m);
	free(with);
	with = xasprintf("%.*s  template:\n    metadata:\n      labels:\n        a: [1]\n%s", (int)(at - tt), tt,
			 at + strlen("  template:\n"));
	m = manifest_parse(with, strlen(with), &err);
	T_CHECK(m == NULL && err && strstr(err, "spec.template.metadata.labels.a") != NULL);
	manifest_free(m);
	free(err);
	err = NULL;
	free(with);
	free(tt);

	uint64_t q;
	T_EQ_INT(manifest_quantity("1024M", &q), 0);
	T_EQ_INT(q, 1024000000);
	T_EQ_INT(manifest_quantity("2Gi", &q), 0);
	T_EQ_INT(q, 2ull << 30);
	T_EQ_INT(manifest_quantity("12", &q), 0);
	T_EQ_INT(q, 12);
	T_EQ_INT(manifest_quantity("1.5Ki", &q), 0);
	T_EQ_INT(q, 1536);
	T_EQ_INT(manifest_quantity("Gi", &q), -1);
	T_EQ_INT(manifest_quantity("1Qi", &q), -1);
	T_EQ_INT(manifest_quantity("-1", &q), -1);
}

static void test_refusals(void)
{
	char *acc = verdict("      nodeSelector:\n        a: b\n"); /* matched against the host's Node (engine/placement.c) */
	T_CHECK(acc == NULL);
	free(acc);
	expect_reject("      nodeSelector:\n        a: [b]\n", "spec.template.spec.nodeSelector.a");
	expect_reject("      tolerations:\n      - key: a\n        operator: Exists\n        value: b\n", "spec.template.spec.tolerations[0]");
	expect_reject("      evictionStrategy: Sometimes\n", "spec.template.spec.evictionStrategy");
	expect_reject("      domain:\n        memory: {guest: 1Gi}\n", "line"); /* duplicate key */
	/* a dataVolume volume is its DataVolume's claim (the engine service makes both: apiserver/storage.c) */
	char *dv = xasprintf(BASE "      volumes:\n      - name: a\n        dataVolume:\n          name: x\n");
	char *dverr = NULL;
	struct manifest *dm = manifest_parse(dv, strlen(dv), &dverr);
	T_CHECK(dm != NULL && dm->nvols == 1 && dm->vols[0].type == MF_VOL_PVC && dm->vols[0].dv &&
		strcmp(dm->vols[0].claim, "x") == 0);
	manifest_free(dm);
	free(dverr);
	free(dv);
	expect_reject("      volumes:\n      - name: a\n        dataVolume: {}\n", "spec.template.spec.volumes[0].dataVolume");
	expect_reject("      volumes:\n      - name: a\n        dataVolume: {name: x, hotpluggable: true}\n",
		      "spec.template.spec.volumes[0].dataVolume");
	expect_reject("      volumes:\n      - name: a\n        dataVolume: {name: X_Y}\n",
		      "spec.template.spec.volumes[0].dataVolume");
	expect_reject("      volumes:\n      - name: a\n        emptyDisk: {capacity: 1Gi}\n        "
		      "containerDisk: {image: x}\n",
		      "spec.template.spec.volumes[0]");
	expect_reject("      volumes:\n      - name: a\n        hostDisk: {path: rel.img, type: Disk}\n",
		      "spec.template.spec.volumes[0].hostDisk");
	expect_reject("      volumes:\n      - name: a\n        hostDisk: {path: /x.img, type: DiskOrCreate}\n",
		      "spec.template.spec.volumes[0].hostDisk");
	expect_reject("      hostname: h\n      wat: 1\n", "spec.template.spec.wat");
	expect_reject("      livenessProbe: {httpGet: {port: 80}}\n", "spec.template.spec.livenessProbe");
	expect_reject("      architecture: arm64\n", "spec.template.spec.architecture");

	/* wrong values */
	char *t = verdict("");
	T_CHECK(t == NULL);
	free(t);
	const char *bad_strategy = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: a}\n"
				   "spec:\n  runStrategy: Sometimes\n  template: {spec: {domain: {memory: {guest: 1Gi}}}}\n";
	char *err = NULL;
	T_CHECK(manifest_parse(bad_strategy, strlen(bad_strategy), &err) == NULL);
	T_CHECK(err && strncmp(err, "spec.runStrategy", 16) == 0);
	free(err);
	const char *both = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: a}\n"
			   "spec:\n  running: true\n  runStrategy: Always\n  template: {spec: {domain: {memory: {guest: 1Gi}}}}\n";
	err = NULL;
	T_CHECK(manifest_parse(both, strlen(both), &err) == NULL);
	T_CHECK(err && strncmp(err, "spec.running", 12) == 0);
	free(err);
	const char *badname = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: Bad_Name}\n"
			      "spec:\n  template: {spec: {domain: {memory: {guest: 1Gi}}}}\n";
	err = NULL;
	T_CHECK(manifest_parse(badname, strlen(badname), &err) == NULL);
	T_CHECK(err && strncmp(err, "metadata.name", 13) == 0);
	free(err);
	const char *alias = "a: &x [1]\nb: *x\n";
	err = NULL;
	T_CHECK(manifest_parse(alias, strlen(alias), &err) == NULL);
	T_CHECK(err && strstr(err, "anchors"));
	free(err);
	const char *two = "apiVersion: kubevirt.io/v1\n---\nkind: VirtualMachine\n";
	err = NULL;
	T_CHECK(manifest_parse(two, strlen(two), &err) == NULL);
	T_CHECK(err && strstr(err, "more than one document"));
	free(err);
	/* disks and volumes must pair up */
	expect_reject("        devices:\n          disks:\n          - name: nodisk\n            disk: {bus: virtio}\n",
		      "spec.template.spec.domain.devices.disks[0]");
	expect_reject("        devices:\n          disks:\n          - name: d\n            disk: {bus: ide}\n"
		      "      volumes:\n      - name: d\n        emptyDisk: {capacity: 1Gi}\n",
		      "spec.template.spec.domain.devices.disks[0].disk.bus");
	/* interfaces[].ports: range, protocol, duplicates, names; never on a bridge */
	expect_reject("        devices:\n          interfaces:\n          - name: n\n            masquerade: {}\n"
		      "            ports:\n            - port: 65536\n",
		      "spec.template.spec.domain.devices.interfaces[0].ports[0].port");
	expect_reject("        devices:\n          interfaces:\n          - name: n\n            masquerade: {}\n"
		      "            ports:\n            - {}\n",
		      "spec.template.spec.domain.devices.interfaces[0].ports[0]: port is required");
	expect_reject("        devices:\n          interfaces:\n          - name: n\n            masquerade: {}\n"
		      "            ports:\n            - port: 80\n              protocol: SCTP\n",
		      "spec.template.spec.domain.devices.interfaces[0].ports[0].protocol");
	expect_reject("        devices:\n          interfaces:\n          - name: n\n            masquerade: {}\n"
		      "            ports:\n            - port: 80\n            - port: 80\n              protocol: TCP\n",
		      "spec.template.spec.domain.devices.interfaces[0].ports[1]: port 80/TCP is listed twice");
	expect_reject("        devices:\n          interfaces:\n          - name: n\n            bridge: {}\n"
		      "            ports:\n            - port: 80\n",
		      "spec.template.spec.domain.devices.interfaces[0].ports: ports are forwarded only on masquerade");
}

/* KubeVirt's examples: a VirtualMachineInstance's spec is also tried as a VM template, to check the spec. */
static char *wrap_vmi(const char *text)
{
	const char *spec = strstr(text, "\nspec:\n");
	if (spec == NULL)
		return NULL;
	struct buf b;
	buf_init(&b);
	buf_add_str(&b, "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: wrapped\nspec:\n"
			"  runStrategy: Halted\n  template:\n    spec:\n");
	for (const char *p = spec + 7; *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		if (n && p[0] != ' ')
			break;
		buf_add_str(&b, "    ");
		buf_add(&b, p, n);
		buf_add_char(&b, '\n');
		p += n + (nl != NULL);
	}
	return buf_steal(&b);
}

struct example {
	const char *file;
	const char *as_is;   /* error prefix without any local images, NULL: accepted */
	const char *spec;    /* for VMIs: the spec wrapped in a VM, without images (NULL: accepted) */
	bool ok_with_images; /* accepted once its images are in the image directory */
};

static const struct example examples[] = {
	{ "examples-migration-job.yaml", "kind", NULL, false },
	/* its DataVolume is the engine service's (the claim's file is checked at start) */
	{ "examples-vm-alpine-datavolume.yaml", NULL, NULL, true },
	{ "examples-vm-alpine-multipvc.yaml", NULL, NULL, true },
	{ "examples-vm-cirros.yaml", "spec.template.spec.volumes[0].containerDisk.image", NULL, true },
	{ "examples-vmi-ephemeral.yaml", "kind", "spec.template.spec.volumes[0].containerDisk.image", true },
	/* hostDisk is off until the host's owner allows a directory (KubeVirt's HostDisk feature gate) */
	{ "examples-vmi-host-disk.yaml", "kind", "spec.template.spec.volumes[0].hostDisk.path: Forbidden", false },
	{ "examples-vmi-kernel-boot.yaml", "kind", "spec.template.spec.domain.firmware.kernelBoot.container.image",
	  true },
	{ "examples-vmi-masquerade.yaml", "kind", "spec.template.spec.volumes[0].containerDisk.image", true },
	{ "examples-vmi-migratable.yaml", "kind", "spec.template.spec.volumes[0].containerDisk.image", true },
	{ "examples-vmi-nocloud.yaml", "kind", "spec.template.spec.volumes[0].containerDisk.image", true },
};

/* parse + resolve against image_dir; error (caller frees) or NULL */
static char *apply_like(const char *text, const char *image_dir)
{
	char *err = NULL;
	struct manifest *m = manifest_parse(text, strlen(text), &err);
	if (m) {
		struct domxml_env env = { .image_dir = image_dir, .volume_dir = "/nonexistent" };
		domxml_resolve(m, &env, &err);
	}
	manifest_free(m);
	return err;
}

static void check_prefix(const char *file, const char *what, const char *err, const char *want)
{
	bool ok = want == NULL ? err == NULL : err != NULL && strncmp(err, want, strlen(want)) == 0;
	printf("  %-38s %-9s %s\n", file, what, err ? err : "accepted");
	if (!ok)
		fprintf(stderr, "%s (%s): expected %s\n", file, what, want ? want : "accepted");
	T_CHECK(ok);
}

static void test_examples(void)
{
	char dir[] = "/tmp/kvcon-imgXXXXXX";
	T_CHECK(mkdtemp(dir) != NULL);
	/* the images the examples name, as the engine looks them up: files for containerDisks, a directory for
	 * the kernel-boot image */
	const char *files[] = { "cirros-container-disk-demo", "alpine-container-disk-demo",
				"fedora-with-test-tooling-container-disk" };
	for (size_t i = 0; i < 3; i++) {
		char *p = xasprintf("%s/%s.qcow2", dir, files[i]);
		util_write_file_atomic(p, "x", 1, 0644);
		free(p);
	}
	char *kb = xasprintf("%s/alpine-ext-kernel-boot-demo/boot", dir);
	util_mkdir_p(kb, 0755);
	char *k = xasprintf("%s/vmlinuz-virt", kb), *i = xasprintf("%s/initramfs-virt", kb);
	util_write_file_atomic(k, "k", 1, 0644);
	util_write_file_atomic(i, "i", 1, 0644);
	printf("KubeVirt examples (tests/data/kubevirt):\n");
	for (size_t n = 0; n < sizeof examples / sizeof examples[0]; n++) {
		const struct example *e = &examples[n];
		char *path = xasprintf("tests/data/kubevirt/%s", e->file);
		char *text = util_read_file(path, NULL);
		T_CHECK(text != NULL);
		if (text == NULL) {
			free(path);
			continue;
		}
		char *err = apply_like(text, "/nonexistent");
		check_prefix(e->file, "as-is", err, e->as_is);
		free(err);
		char *vm = strstr(text, "kind: VirtualMachineInstance\n") ? wrap_vmi(text) : xstrdup(text);
		if (strstr(text, "kind: VirtualMachineInstance\n")) {
			err = apply_like(vm, "/nonexistent");
			check_prefix(e->file, "spec", err, e->spec);
			free(err);
		}
		err = apply_like(vm, dir);
		check_prefix(e->file, "+images", err,
			     e->ok_with_images ? NULL : (e->spec ? e->spec : e->as_is));
		free(err);
		free(vm);
		free(text);
		free(path);
	}
	unlink(k);
	unlink(i);
	rmdir(kb);
	char *kbd = xasprintf("%s/alpine-ext-kernel-boot-demo", dir);
	rmdir(kbd);
	for (size_t f = 0; f < 3; f++) {
		char *p = xasprintf("%s/%s.qcow2", dir, files[f]);
		unlink(p);
		free(p);
	}
	rmdir(dir);
	free(kbd);
	free(k);
	free(i);
	free(kb);
}

static void test_images(void)
{
	char **c = manifest_image_candidates("/img", "registry:5000/kubevirt/cirros-container-disk-demo:devel");
	T_EQ_STR(c[0], "/img/registry_5000_kubevirt_cirros-container-disk-demo_devel");
	T_EQ_STR(c[1], "/img/registry_5000_kubevirt_cirros-container-disk-demo_devel.qcow2");
	T_EQ_STR(c[5], "/img/cirros-container-disk-demo");
	T_CHECK(c[10] == NULL);
	for (size_t i = 0; c[i]; i++)
		free(c[i]);
	free(c);
	c = manifest_image_candidates("/img", "plain");
	T_EQ_STR(c[0], "/img/plain");
	T_CHECK(c[5] == NULL);
	for (size_t i = 0; c[i]; i++)
		free(c[i]);
	free(c);
}

/* base with these volumes (NULL: none), parsed */
static struct manifest *with_volumes(const char *vols)
{
	char *text = xasprintf(BASE "%s", vols ? vols : ""), *err = NULL;
	struct manifest *m = manifest_parse(text, strlen(text), &err);
	if (m == NULL)
		fprintf(stderr, "%s: %s\n", vols, err);
	free(err);
	free(text);
	return m;
}

/* what an apply can leave unused in the image cache: an image the old manifest used and the new one does not (a
 * create, or an update keeping its images, leaves nothing: the engine then walks no VM to sweep) */
static void test_drops_image(void)
{
	struct manifest *a = with_volumes("      volumes:\n      - name: a\n        containerDisk: {image: img/a:1}\n"),
			*ab = with_volumes("      volumes:\n      - name: a\n        containerDisk: {image: img/a:1}\n"
					   "      - name: b\n        containerDisk: {image: img/b:1}\n"),
			*a2 = with_volumes("      volumes:\n      - name: a\n        containerDisk: {image: img/a:2}\n"),
			*none = with_volumes(NULL);
	T_CHECK(a && ab && a2 && none);
	if (a && ab && a2 && none) {
		T_CHECK(!manifest_drops_image(NULL, a));  /* a create */
		T_CHECK(!manifest_drops_image(a, a));     /* unchanged images */
		T_CHECK(!manifest_drops_image(a, ab));    /* one more */
		T_CHECK(manifest_drops_image(ab, a));     /* b gone */
		T_CHECK(manifest_drops_image(a, a2));     /* another tag */
		T_CHECK(manifest_drops_image(a, none));
		T_CHECK(manifest_drops_image(a, NULL));   /* deleted */
		T_CHECK(!manifest_drops_image(none, a));
		T_CHECK(!manifest_drops_image(none, NULL)); /* deleted, no image */
	}
	manifest_free(a);
	manifest_free(ab);
	manifest_free(a2);
	manifest_free(none);
}

/* Names that reach the domain XML, file names or the seed image: validated as KubeVirt does, refused with the
 * field path and apimachinery's wording (issue 14). */
static void expect_exact(const char *extra, const char *want)
{
	char *err = verdict(extra);
	T_CHECK(err != NULL);
	if (err && strcmp(err, want) != 0) {
		fprintf(stderr, "expected: %s\n     got: %s\n", want, err);
		T_CHECK(0);
	}
	free(err);
}

static void test_names(void)
{
	T_CHECK(manifest_dns_label("a") && manifest_dns_label("web-1") && manifest_dns_label("0a"));
	T_CHECK(!manifest_dns_label("") && !manifest_dns_label("-a") && !manifest_dns_label("a-") &&
		!manifest_dns_label("A") && !manifest_dns_label("a.b") && !manifest_dns_label("a_b") &&
		!manifest_dns_label("../x") && !manifest_dns_label("a/b"));
	char l63[64], l64[65];
	memset(l63, 'a', 63);
	l63[63] = '\0';
	memset(l64, 'a', 64);
	l64[64] = '\0';
	T_CHECK(manifest_dns_label(l63) && !manifest_dns_label(l64));
	T_CHECK(manifest_dns_subdomain("a.b-c.d") && manifest_dns_subdomain(l63));
	T_CHECK(!manifest_dns_subdomain("a..b") && !manifest_dns_subdomain(".a") && !manifest_dns_subdomain("a.") &&
		!manifest_dns_subdomain("..") && !manifest_dns_subdomain("a.-b") && !manifest_dns_subdomain("a/b"));
	T_CHECK(manifest_plain_text("console=ttyS0 é <&>'\"") && !manifest_plain_text("a\nb") &&
		!manifest_plain_text("a\x1b[2J") && !manifest_plain_text("\xff") && !manifest_plain_text("\xc2\x9b") &&
		!manifest_plain_text("\xed\xa0\x80") && !manifest_plain_text("\xc0\xaf"));
	T_CHECK(manifest_clean_path("/a/b.img") && !manifest_clean_path("a") && !manifest_clean_path("/a/../b") &&
		!manifest_clean_path("/a/./b") && !manifest_clean_path("/..") && !manifest_clean_path("/a/\tb"));

	/* the brief's example, word for word */
	expect_exact("      volumes:\n      - {name: ok, emptyDisk: {capacity: 1Mi}}\n"
		     "      - {name: ok2, emptyDisk: {capacity: 1Mi}}\n"
		     "      - {name: ../x, emptyDisk: {capacity: 1Mi}}\n",
		     "spec.template.spec.volumes[2].name: Invalid value: \"../x\": a lowercase RFC 1123 label must "
		     "consist of lower case alphanumeric characters or '-', and must start and end with an "
		     "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
		     "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
	expect_reject("      volumes:\n      - {name: ../../../some/dir/victim, emptyDisk: {capacity: 1Mi}}\n",
		      "spec.template.spec.volumes[0].name: Invalid value: \"../../../some/dir/victim\"");
	expect_reject("        devices:\n          interfaces:\n          - name: \"n'/><qemu:commandline/>\"\n"
		      "            masquerade: {}\n",
		      "spec.template.spec.domain.devices.interfaces[0].name: Invalid value: \"n'/><qemu:commandline/>\"");
	expect_reject("        devices:\n          disks:\n          - {name: \"d'/><source file='/etc/shadow'/>\"}\n",
		      "spec.template.spec.domain.devices.disks[0].name: Invalid value:");
	expect_reject("        devices:\n          interfaces:\n          - {name: lan, bridge: {}}\n"
		      "      networks:\n      - {name: Lan, multus: {networkName: br0}}\n",
		      "spec.template.spec.networks[0].name: Invalid value: \"Lan\"");
	expect_reject("        devices:\n          interfaces:\n          - {name: lan, bridge: {}}\n"
		      "      networks:\n      - {name: lan, multus: {networkName: \"br0'/>\"}}\n",
		      "spec.template.spec.networks[0].multus.networkName: Invalid value:");
	expect_reject("        devices:\n          interfaces:\n          - {name: lan, bridge: {}}\n"
		      "      networks:\n      - {name: lan, multus: {networkName: ..}}\n",
		      "spec.template.spec.networks[0].multus.networkName: Invalid value: \"..\"");
	expect_reject("      volumes:\n      - {name: v, persistentVolumeClaim: {claimName: ../etc}}\n",
		      "spec.template.spec.volumes[0].persistentVolumeClaim.claimName: Invalid value: \"../etc\"");
	T_CHECK(verdict("      volumes:\n      - {name: v, persistentVolumeClaim: {claimName: data.v1}}\n") == NULL);
	expect_reject("      volumes:\n      - {name: v, hostDisk: {path: /srv/../etc/shadow, type: Disk}}\n",
		      "spec.template.spec.volumes[0].hostDisk.path: Invalid value: \"/srv/../etc/shadow\"");
	expect_reject("        firmware:\n          kernelBoot:\n            container: {image: g, kernelPath: "
		      "/../../etc/passwd}\n",
		      "spec.template.spec.domain.firmware.kernelBoot.container.kernelPath: Invalid value:");
	expect_reject("        firmware:\n          kernelBoot:\n            kernelArgs: \"a\\nb\"\n"
		      "            container: {image: g, kernelPath: /k}\n",
		      "spec.template.spec.domain.firmware.kernelBoot.kernelArgs: Invalid value: \"a\\x0ab\": must be "
		      "UTF-8 text");
	expect_reject("        devices:\n          disks:\n          - {name: d, serial: \"a b\"}\n"
		      "      volumes:\n      - {name: d, emptyDisk: {capacity: 1Mi}}\n",
		      "spec.template.spec.domain.devices.disks[0].serial: Invalid value: \"a b\"");
	expect_reject("        cpu: {model: \"x'/>\"}\n", "spec.template.spec.domain.cpu.model: Invalid value:");
	expect_reject("        machine: {type: \"pc-q35-7.2'/>\"}\n", "spec.template.spec.domain.machine.type: Invalid value:");
	expect_reject("        devices:\n          interfaces:\n          - {name: a, masquerade: {}, macAddress: "
		      "' 52:54:00:12:34:56'}\n",
		      "spec.template.spec.domain.devices.interfaces[0].macAddress");
	expect_reject("      hostname: \"h\\nx: y\"\n", "spec.template.spec.hostname: Invalid value:");
	expect_reject("      subdomain: A_b\n", "spec.template.spec.subdomain: Invalid value: \"A_b\"");

	/* metadata: the VM name a subdomain (63 at most), the namespace a label */
#define MD_TMPL                                                                                                    \
	"apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: %s, namespace: %s}\nspec:\n  template:\n" \
	"    spec:\n      domain: {memory: {guest: 64Mi}}\n"
	struct {
		const char *name, *ns, *err;
	} md[] = {
		{ "web.example", "prod", NULL },
		{ "\"../x\"", "default", "metadata.name: Invalid value: \"../x\": a lowercase RFC 1123 subdomain" },
		{ "Web", "default", "metadata.name: Invalid value: \"Web\"" },
		{ "a", "\"../ns\"", "metadata.namespace: Invalid value: \"../ns\": a lowercase RFC 1123 label" },
		{ "a", "a.b", "metadata.namespace: Invalid value: \"a.b\"" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "default",
		  "metadata.name: Invalid value: \"aaaa" },
	};
	for (size_t i = 0; i < sizeof md / sizeof md[0]; i++) {
		char *text = xasprintf(MD_TMPL, md[i].name, md[i].ns), *err = NULL;
		struct manifest *m = manifest_parse(text, strlen(text), &err);
		bool ok = md[i].err ? err && strncmp(err, md[i].err, strlen(md[i].err)) == 0 : m != NULL;
		if (!ok)
			fprintf(stderr, "metadata %s/%s: got %s\n", md[i].ns, md[i].name, err ? err : "accepted");
		T_CHECK(ok);
		manifest_free(m);
		free(err);
		free(text);
	}
}

/* Duplicate keys are found in maps of any size (a hash set past a few keys, issue 14 finding 8), at any place. */
static void test_duplicate_keys(void)
{
	for (int where = 0; where < 3; where++) {
		struct buf b;
		buf_init(&b);
		buf_add_str(&b, "labels:\n");
		for (int i = 0; i < 2000; i++)
			buf_printf(&b, "  key-%d: v\n", i);
		/* a repeat of the first key, of a key in the middle, or none */
		if (where < 2)
			buf_printf(&b, "  key-%d: again\n", where == 0 ? 0 : 1234);
		char *err = NULL;
		yaml_document_t doc;
		int rc = ydoc_load(&doc, b.data, b.len, &err);
		if (where < 2) {
			T_CHECK(rc < 0 && err && strstr(err, "duplicate key") &&
				strstr(err, where == 0 ? "\"key-0\"" : "\"key-1234\""));
		} else {
			T_CHECK(rc == 0);
			yaml_node_t *l = rc == 0 ? ydoc_get(&doc, yaml_document_get_root_node(&doc), "labels") : NULL;
			T_CHECK(l && ydoc_len(l) == 2000 && ydoc_get(&doc, l, "key-1999") && ydoc_get(&doc, l, "key-0"));
			if (rc == 0)
				yaml_document_delete(&doc);
		}
		free(err);
		buf_free(&b);
	}
	/* and in a small map */
	char *err = NULL;
	yaml_document_t doc;
	T_CHECK(ydoc_load(&doc, "a: 1\nb: 2\na: 3\n", 15, &err) < 0 && err && strstr(err, "duplicate key \"a\""));
	free(err);
}

/* Secrets in a VM: cloud-init's secretRef and networkDataSecretRef, Secret and ConfigMap volumes,
 * accessCredentials with KubeVirt's rules, each refusal at its path. */
static void test_secrets(void)
{
	const char *ok = "      accessCredentials:\n"
			 "      - sshPublicKey:\n"
			 "          source: {secret: {secretName: keys}}\n"
			 "          propagationMethod: {qemuGuestAgent: {users: [root, fedora]}}\n"
			 "      - userPassword:\n"
			 "          source: {secret: {secretName: pw}}\n"
			 "          propagationMethod: {qemuGuestAgent: {}}\n"
			 "      - sshPublicKey:\n"
			 "          source: {secret: {secretName: ci-keys}}\n"
			 "          propagationMethod: {noCloud: {}}\n"
			 "      volumes:\n"
			 "      - name: ci\n"
			 "        cloudInitNoCloud: {secretRef: {name: ud}, networkDataSecretRef: {name: nd}}\n"
			 "      - name: s\n"
			 "        secret: {secretName: app-secret, volumeLabel: APP}\n"
			 "      - name: c\n"
			 "        configMap: {name: app-cm, optional: true}\n";
	char *text = xasprintf(BASE "%s", ok), *err = NULL;
	struct manifest *m = manifest_parse(text, strlen(text), &err);
	T_CHECK(m != NULL);
	if (err)
		fprintf(stderr, "secrets: %s\n", err);
	if (m) {
		T_EQ_INT(m->ncreds, 3);
		T_CHECK(!m->creds[0].password && m->creds[0].agent && m->creds[0].nusers == 2);
		T_EQ_STR(m->creds[0].users[1], "fedora");
		T_CHECK(m->creds[1].password && m->creds[1].agent && m->creds[1].nusers == 0);
		T_CHECK(!m->creds[2].agent && !m->creds[2].drive);
		T_EQ_STR(m->vols[0].user_secret, "ud");
		T_EQ_STR(m->vols[0].network_secret, "nd");
		T_CHECK(m->vols[0].user_data == NULL);
		T_CHECK(m->vols[1].type == MF_VOL_SECRET && !m->vols[1].optional);
		T_EQ_STR(m->vols[1].object, "app-secret");
		T_EQ_STR(m->vols[1].label, "APP");
		T_CHECK(m->vols[2].type == MF_VOL_CONFIGMAP && m->vols[2].optional);
		T_EQ_STR(m->vols[2].object, "app-cm");
	}
	manifest_free(m);
	free(text);
	free(err);
	const char *p = "spec.template.spec.accessCredentials[0]";
	expect_reject("      accessCredentials:\n      - {}\n", p);
	expect_reject("      accessCredentials:\n      - sshPublicKey: {source: {secret: {secretName: k}}, "
		      "propagationMethod: {qemuGuestAgent: {}}}\n",
		      "spec.template.spec.accessCredentials[0].sshPublicKey.propagationMethod.qemuGuestAgent: users is required");
	expect_reject("      accessCredentials:\n      - userPassword: {source: {secret: {secretName: k}}, "
		      "propagationMethod: {noCloud: {}}}\n",
		      "spec.template.spec.accessCredentials[0].userPassword.propagationMethod");
	expect_reject("      accessCredentials:\n      - sshPublicKey: {source: {secret: {secretName: k}}, "
		      "propagationMethod: {noCloud: {}, configDrive: {}}}\n",
		      "spec.template.spec.accessCredentials[0].sshPublicKey.propagationMethod");
	expect_reject("      accessCredentials:\n      - sshPublicKey: {source: {secret: {secretName: Bad_Name}}, "
		      "propagationMethod: {noCloud: {}}}\n",
		      "spec.template.spec.accessCredentials[0].sshPublicKey.source.secret.secretName");
	expect_reject("      accessCredentials:\n      - sshPublicKey: {source: {secret: {secretName: k}}, "
		      "propagationMethod: {qemuGuestAgent: {users: [\"../x\"]}}}\n",
		      "spec.template.spec.accessCredentials[0].sshPublicKey.propagationMethod.qemuGuestAgent.users[0]");
	expect_reject("      accessCredentials:\n      - sshPublicKey: {source: {secret: {}}, propagationMethod: {noCloud: {}}}\n",
		      "spec.template.spec.accessCredentials[0].sshPublicKey.source.secret: secretName is required");
	expect_reject("      volumes:\n      - name: c\n        cloudInitNoCloud: {userData: x, secretRef: {name: s}}\n",
		      "spec.template.spec.volumes[0].cloudInitNoCloud: a secretRef and inline data");
	expect_reject("      volumes:\n      - name: c\n        cloudInitNoCloud: {networkDataSecretRef: {name: s}}\n",
		      "spec.template.spec.volumes[0].cloudInitNoCloud: userData, userDataBase64 or secretRef is required");
	expect_reject("      volumes:\n      - name: c\n        cloudInitNoCloud: {secretRef: {}}\n",
		      "spec.template.spec.volumes[0].cloudInitNoCloud.secretRef: name is required");
	expect_reject("      volumes:\n      - name: s\n        secret: {name: x}\n", "spec.template.spec.volumes[0].secret.name");
	expect_reject("      volumes:\n      - name: s\n        secret: {}\n",
		      "spec.template.spec.volumes[0].secret: secretName is required");
	expect_reject("      volumes:\n      - name: s\n        configMap: {name: x, items: [{key: a, path: b}]}\n",
		      "spec.template.spec.volumes[0].configMap.items");
	expect_reject("      volumes:\n      - name: s\n        configMap: {name: x, volumeLabel: \"a b\"}\n",
		      "spec.template.spec.volumes[0].configMap.volumeLabel");
}

int main(void)
{
	test_secrets();
	test_basics();
	test_duplicate_keys();
	test_refusals();
	test_names();
	test_images();
	test_drops_image();
	test_examples();
	fflush(stdout); /* the runner shows the last line: the summary */
	return T_DONE();
}
