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
#include "engine/ytree.h"
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
	expect_reject("      nodeSelector:\n        a: b\n", "spec.template.spec.nodeSelector");
	expect_reject("      domain:\n        memory: {guest: 1Gi}\n", "line"); /* duplicate key */
	expect_reject("  dataVolumeTemplates: [{}]\n", "spec.dataVolumeTemplates");
	expect_reject("      volumes:\n      - name: a\n        dataVolume:\n          name: x\n",
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
	expect_reject("        devices:\n          interfaces:\n          - name: n\n            masquerade: {}\n"
		      "            ports:\n            - port: 80\n",
		      "spec.template.spec.domain.devices.interfaces[0].ports");
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
	{ "examples-vm-alpine-datavolume.yaml", "spec.dataVolumeTemplates", NULL, false },
	{ "examples-vm-alpine-multipvc.yaml", NULL, NULL, true },
	{ "examples-vm-cirros.yaml", "spec.template.spec.volumes[0].containerDisk.image", NULL, true },
	{ "examples-vmi-ephemeral.yaml", "kind", "spec.template.spec.volumes[0].containerDisk.image", true },
	{ "examples-vmi-host-disk.yaml", "kind", NULL, true },
	{ "examples-vmi-kernel-boot.yaml", "kind", "spec.template.spec.domain.firmware.kernelBoot.container.image",
	  true },
	{ "examples-vmi-masquerade.yaml", "kind", "spec.template.spec.domain.devices.interfaces[0].ports", false },
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
		struct ynode *root = ytree_parse(b.data, b.len, &err);
		if (where < 2) {
			T_CHECK(root == NULL && err && strstr(err, "duplicate key") &&
				strstr(err, where == 0 ? "\"key-0\"" : "\"key-1234\""));
		} else {
			T_CHECK(root != NULL);
			struct ynode *l = ytree_get(root, "labels");
			T_CHECK(l && l->n == 2000 && ytree_get(l, "key-1999") && ytree_get(l, "key-0"));
		}
		ytree_free(root);
		free(err);
		buf_free(&b);
	}
	/* and in a small map */
	char *err = NULL;
	T_CHECK(ytree_parse("a: 1\nb: 2\na: 3\n", 15, &err) == NULL && err && strstr(err, "duplicate key \"a\""));
	free(err);
}

int main(void)
{
	test_basics();
	test_duplicate_keys();
	test_refusals();
	test_images();
	test_examples();
	fflush(stdout); /* the runner shows the last line: the summary */
	return T_DONE();
}
