/* The containerDisk pull's parts without a registry: references, registries configuration (mirrors, prefixes,
 * blocked), WWW-Authenticate challenges, manifests and indexes, auth files, the layer's disk entry (a tar built
 * here with libarchive: the disk is found, sparse holes kept, traversal and symlinks ignored; zero blocks left
 * as holes; a header over the cap or the free space refused before a byte is written; a stream longer than its
 * header cut), the pull's limits (engine.image-max-size, the progress line), and the image cache (references,
 * sweep, the temporary files of a live pull kept, a dead pull's removed, the lookup hook consulted after the
 * image directory). */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/imgcache.h"
#include "engine/manifest.h"
#include "engine/oci.h"
#include "t.h"

#define D64 "b3173a795eddc0c8f6923bb197928b7c0876aade4daf85d0558dfae65f403fe2"

static void test_refs(void)
{
	static const struct {
		const char *in, *out, *policy;
	} ok[] = {
		{ "quay.io/containerdisks/fedora:latest", "quay.io/containerdisks/fedora:latest", "Always" },
		{ "quay.io/containerdisks/fedora", "quay.io/containerdisks/fedora:latest", "Always" },
		{ "busybox", "docker.io/library/busybox:latest", "Always" },
		{ "index.docker.io/x/y:1", "docker.io/x/y:1", "IfNotPresent" },
		{ "localhost/a:b", "localhost/a:b", "IfNotPresent" },
		{ "127.0.0.1:5000/a__b/c-d.e:v1.0", "127.0.0.1:5000/a__b/c-d.e:v1.0", "IfNotPresent" },
		{ "quay.io/kubevirt/cirros@sha256:" D64, "quay.io/kubevirt/cirros@sha256:" D64, "IfNotPresent" },
		{ "quay.io/k/c:latest@sha256:" D64, "quay.io/k/c:latest@sha256:" D64, "IfNotPresent" },
	};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		struct oci_ref r;
		char *err = NULL;
		T_EQ_INT(oci_ref_parse(ok[i].in, &r, &err), 0);
		char *s = oci_ref_string(&r);
		T_EQ_STR(s, ok[i].out);
		T_EQ_STR(oci_default_policy(&r), ok[i].policy);
		free(s);
		oci_ref_free(&r);
		free(err);
	}
	static const char *bad[] = { "", "Quay.io/UPPER/x", "quay.io/x:bad tag", "quay.io/x@sha256:abc",
				     "quay.io/x@md5:" D64, "quay.io//x", "quay.io/-x", "quay.io/x/", "a/b\n",
				     "quay.io/x:" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct oci_ref r;
		char *err = NULL;
		T_CHECK(oci_ref_parse(bad[i], &r, &err) < 0 && err != NULL);
		free(err);
	}
	T_CHECK(oci_digest_valid("sha256:" D64));
	T_CHECK(!oci_digest_valid("sha256:" D64 "0"));
	T_CHECK(!oci_digest_valid("sha256:B3173a795eddc0c8f6923bb197928b7c0876aade4daf85d0558dfae65f403fe2"));
}

static void test_regconf(void)
{
	char *err = NULL;
	struct oci_regconf *c = oci_regconf_parse("engine.accel = tcg\n"
						  "registry = quay.io location=mirror.example/quay  # a comment\n"
						  "registry.mirror = quay.io location=127.0.0.1:5000 ca=/x/ca.crt\n"
						  "registry.mirror = quay.io/kubevirt location=m2.example:443/kv insecure=true\n"
						  "registry = docker.io blocked=true\n",
						  &err);
	T_CHECK(c != NULL && err == NULL);
	struct oci_ref r;
	struct oci_endpoint *e = NULL;
	T_EQ_INT(oci_ref_parse("quay.io/containerdisks/fedora:latest", &r, &err), 0);
	int n = oci_endpoints(c, &r, &e);
	T_EQ_INT(n, 2);
	if (n == 2) {
		T_EQ_STR(e[0].host, "127.0.0.1:5000");
		T_EQ_STR(e[0].repo, "containerdisks/fedora");
		T_EQ_STR(e[0].ca, "/x/ca.crt");
		T_CHECK(e[0].mirror && !e[0].insecure);
		T_EQ_STR(e[1].host, "mirror.example");
		T_EQ_STR(e[1].repo, "quay/containerdisks/fedora");
		T_CHECK(!e[1].mirror);
	}
	oci_endpoints_free(e, n);
	oci_ref_free(&r);
	/* the longest prefix wins */
	T_EQ_INT(oci_ref_parse("quay.io/kubevirt/cirros@sha256:" D64, &r, &err), 0);
	n = oci_endpoints(c, &r, &e);
	T_EQ_INT(n, 2);
	if (n == 2) {
		T_EQ_STR(e[0].host, "m2.example:443");
		T_EQ_STR(e[0].repo, "kv/cirros");
		T_CHECK(e[0].insecure);
		T_EQ_STR(e[1].host, "quay.io"); /* that prefix has no location: the reference's own */
		T_EQ_STR(e[1].repo, "kubevirt/cirros");
	}
	oci_endpoints_free(e, n);
	oci_ref_free(&r);
	/* a prefix matches at a boundary only */
	T_EQ_INT(oci_ref_parse("quay.iox/a/b:1", &r, &err), 0);
	n = oci_endpoints(c, &r, &e);
	T_EQ_INT(n, 1);
	T_EQ_STR(n ? e[0].host : NULL, "quay.iox");
	oci_endpoints_free(e, n);
	oci_ref_free(&r);
	T_EQ_INT(oci_ref_parse("busybox", &r, &err), 0);
	T_EQ_INT(oci_endpoints(c, &r, &e), 0); /* blocked */
	oci_ref_free(&r);
	oci_regconf_free(c);
	T_CHECK(oci_regconf_parse("registry.mirror = quay.io\n", &err) == NULL && strstr(err, "line 1"));
	free(err);
	err = NULL;
	T_CHECK(oci_regconf_parse("registry = quay.io colour=red\n", &err) == NULL && err);
	free(err);
	err = NULL;
	T_CHECK(oci_regconf_parse("registry = quay.io ca=relative.crt\n", &err) == NULL && err);
	free(err);
	/* docker.io is reached at Docker Hub's API host */
	c = oci_regconf_parse(NULL, &err);
	T_EQ_INT(oci_ref_parse("busybox", &r, &err), 0);
	n = oci_endpoints(c, &r, &e);
	T_EQ_STR(n == 1 ? e[0].host : NULL, "registry-1.docker.io");
	T_EQ_STR(n == 1 ? e[0].repo : NULL, "library/busybox");
	oci_endpoints_free(e, n);
	oci_ref_free(&r);
	/* the pull's limits: 64 GiB, 60 s for a registry's token and manifests, 1 KiB/s over 30 s for a blob */
	const struct oci_limits *l = oci_regconf_limits(c);
	T_CHECK(l->image_max == (uint64_t)64 << 30 && l->total_ms == 60000 && l->floor_bps == 1024 &&
		l->floor_s == 30);
	oci_regconf_free(c);
	c = oci_regconf_parse("engine.image-max-size = 20Gi\n", &err);
	T_CHECK(c && oci_regconf_limits(c)->image_max == (uint64_t)20 << 30);
	oci_regconf_free(c);
	c = oci_regconf_parse("engine.image-max-size = 10G\n", &err);
	T_CHECK(c && oci_regconf_limits(c)->image_max == 10000000000u);
	oci_regconf_free(c);
	T_CHECK(oci_regconf_parse("\nengine.image-max-size = lots\n", &err) == NULL && err &&
		strstr(err, "line 2") && strstr(err, "engine.image-max-size"));
	free(err);
	err = NULL;
	T_CHECK(oci_regconf_parse("engine.image-max-size = 0\n", &err) == NULL && err);
	free(err);
	err = NULL;
}

static void test_challenge(void)
{
	struct oci_challenge c;
	T_EQ_INT(oci_challenge_parse("Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker.io\","
				     "scope=\"repository:library/busybox:pull\"",
				     &c),
		 0);
	T_EQ_STR(c.scheme, "bearer");
	T_EQ_STR(c.realm, "https://auth.docker.io/token");
	T_EQ_STR(c.service, "registry.docker.io");
	T_EQ_STR(c.scope, "repository:library/busybox:pull");
	oci_challenge_free(&c);
	T_EQ_INT(oci_challenge_parse("Basic realm=\"kvcon-test\"", &c), 0);
	T_EQ_STR(c.scheme, "basic");
	T_EQ_STR(c.realm, "kvcon-test");
	oci_challenge_free(&c);
	T_EQ_INT(oci_challenge_parse("BEARER Realm = \"a\\\"b\" , scope=x:y:pull, Basic realm=z", &c), 0);
	T_EQ_STR(c.realm, "a\"b");
	T_EQ_STR(c.scope, "x:y:pull");
	oci_challenge_free(&c);
	T_CHECK(oci_challenge_parse("Bearer realm=\"unterminated", &c) < 0);
	T_CHECK(oci_challenge_parse("", &c) < 0);
	T_CHECK(oci_challenge_parse("Bearer realm=\"a\" junk", &c) < 0);
}

static void test_manifest(void)
{
	const char *idx = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":["
			  "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:" D64 "\","
			  "\"size\":10,\"platform\":{\"architecture\":\"arm64\",\"os\":\"linux\"}},"
			  "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:"
			  "0000000000000000000000000000000000000000000000000000000000000001\","
			  "\"size\":11,\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}}]}";
	struct oci_manifest m;
	char *err = NULL;
	T_EQ_INT(oci_manifest_parse(idx, strlen(idx), NULL, &m, &err), 0);
	T_CHECK(m.kind == OCI_M_INDEX && m.nitems == 2);
	const struct oci_desc *d = oci_index_pick(&m);
	T_EQ_STR(d ? d->digest : NULL, "sha256:0000000000000000000000000000000000000000000000000000000000000001");
	oci_manifest_free(&m);
	/* a Docker v2 manifest without mediaType in the body: the Content-Type says */
	const char *dm = "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"x\",\"size\":5,\"digest\":\"sha256:" D64 "\"},"
			 "\"layers\":[{\"mediaType\":\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"size\":7,"
			 "\"digest\":\"sha256:" D64 "\"}]}";
	T_EQ_INT(oci_manifest_parse(dm, strlen(dm), "application/vnd.docker.distribution.manifest.v2+json; x=y", &m,
				    &err),
		 0);
	T_CHECK(m.kind == OCI_M_IMAGE && m.nitems == 1 && m.items[0].size == 7);
	T_CHECK(oci_layer_type_ok(m.items[0].media_type));
	oci_manifest_free(&m);
	static const char *bad[] = {
		"{\"schemaVersion\":1}", "[]", "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"sha256:x\",\"size\":1}]}",
		"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"layers\":[]}",
		"{\"schemaVersion\":2} trailing",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		T_CHECK(oci_manifest_parse(bad[i], strlen(bad[i]), NULL, &m, &err) < 0 && err);
		free(err);
		err = NULL;
	}
	T_CHECK(!oci_layer_type_ok("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"));
}

static void test_auth(void)
{
	const char *j = "{\"auths\":{\"quay.io\":{\"auth\":\"dXNlcjpwYXNz\"},"       /* user:pass */
			"\"quay.io/containerdisks\":{\"auth\":\"YzpkOmU=\"},"           /* c:d:e */
			"\"https://index.docker.io/v1/\":{\"auth\":\"aHViOmh1Yg==\"}," /* hub:hub */
			"\"bad.example\":{\"auth\":\"bm9jb2xvbg==\"}}}";               /* nocolon */
	char *a = oci_auth_from_json(j, strlen(j), "quay.io", "kubevirt/cirros");
	T_EQ_STR(a, "user:pass");
	free(a);
	a = oci_auth_from_json(j, strlen(j), "quay.io", "containerdisks/fedora");
	T_EQ_STR(a, "c:d:e");
	free(a);
	a = oci_auth_from_json(j, strlen(j), "registry-1.docker.io", "library/busybox");
	T_EQ_STR(a, "hub:hub");
	free(a);
	T_CHECK(oci_auth_from_json(j, strlen(j), "bad.example", "x") == NULL);
	T_CHECK(oci_auth_from_json(j, strlen(j), "quay.iox", "x") == NULL);
	T_CHECK(oci_auth_from_json("{", 1, "quay.io", "x") == NULL);
}

/* A tar in memory with the given entries (path, type, data, size, sparse hole before the data). */
struct ent {
	const char *path;
	unsigned type;
	const char *data;
	size_t size;
	const char *link;
};

static void *make_tar(const struct ent *e, int n, size_t *len, bool gz)
{
	size_t cap = 1 << 20;
	void *buf = xmalloc(cap);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	if (gz)
		archive_write_add_filter_gzip(a);
	archive_write_open_memory(a, buf, cap, len);
	for (int i = 0; i < n; i++) {
		struct archive_entry *ae = archive_entry_new();
		archive_entry_set_pathname(ae, e[i].path);
		archive_entry_set_filetype(ae, e[i].type);
		archive_entry_set_perm(ae, 0644);
		archive_entry_set_size(ae, e[i].type == AE_IFREG ? (la_int64_t)e[i].size : 0);
		if (e[i].link)
			archive_entry_set_symlink(ae, e[i].link);
		archive_write_header(a, ae);
		if (e[i].type == AE_IFREG)
			archive_write_data(a, e[i].data, e[i].size);
		archive_entry_free(ae);
	}
	archive_write_close(a);
	archive_write_free(a);
	return buf;
}

static char *read_fd(int fd, size_t *n)
{
	struct stat st;
	fstat(fd, &st);
	char *b = xmalloc((size_t)st.st_size + 1);
	*n = (size_t)pread(fd, b, (size_t)st.st_size, 0);
	return b;
}

static const struct oci_unpack MIB = { .cap = 1 << 20, .avail = 1 << 20 };

static void test_layer(void)
{
	T_CHECK(oci_disk_entry("disk/disk.qcow2"));
	T_CHECK(oci_disk_entry("./disk/fedora.img"));
	T_CHECK(oci_disk_entry("/disk/x.raw"));
	T_CHECK(!oci_disk_entry("disk/.hidden.img"));
	T_CHECK(!oci_disk_entry("disk/sub/x.img"));
	T_CHECK(!oci_disk_entry("../disk/x.img"));
	T_CHECK(!oci_disk_entry("disk/x.iso"));
	T_CHECK(!oci_disk_entry("disk/.img"));
	T_CHECK(!oci_disk_entry("etc/disk/x.img"));

	const struct ent ents[] = {
		{ "etc/passwd", AE_IFREG, "root\n", 5, NULL },
		{ "../disk/evil.img", AE_IFREG, "EVIL", 4, NULL },
		{ "disk/link.raw", AE_IFLNK, NULL, 0, "/etc/shadow" },
		{ "disk/dir.img", AE_IFDIR, NULL, 0, NULL },
		{ "disk/disk.qcow2", AE_IFREG, "QFI\xfb-the-disk", 13, NULL },
		{ "disk/second.img", AE_IFREG, "SECOND", 6, NULL },
	};
	for (int gz = 0; gz < 2; gz++) {
		size_t len = 0;
		void *tar = make_tar(ents, 6, &len, gz);
		char tmpl[] = "/tmp/kvcon-test-oci-XXXXXX";
		int fd = mkstemp(tmpl);
		unlink(tmpl);
		char *name = NULL, *err = NULL;
		T_EQ_INT(oci_layer_extract_mem(tar, len, fd, &MIB, &name, &err), 1);
		T_EQ_STR(name, "disk.qcow2");
		size_t n = 0;
		char *got = read_fd(fd, &n);
		T_CHECK(n == 13 && memcmp(got, "QFI\xfb-the-disk", 13) == 0);
		free(got);
		free(name);
		free(err);
		/* over the size limit: refused */
		name = err = NULL;
		T_EQ_INT(ftruncate(fd, 0), 0);
		const struct oci_unpack tiny = { .cap = 8, .avail = 1 << 20 };
		T_EQ_INT(oci_layer_extract_mem(tar, len, fd, &tiny, &name, &err), -1);
		T_CHECK(err && strstr(err, "needs 13 B, 1.0 MiB free / cap 8 B"));
		free(err);
		free(name);
		close(fd);
		free(tar);
	}
	/* no disk: 0; garbage: -1 */
	size_t len = 0;
	void *tar = make_tar(ents, 4, &len, false);
	int fd = open("/tmp", O_TMPFILE | O_RDWR, 0600);
	char *name = NULL, *err = NULL;
	T_EQ_INT(oci_layer_extract_mem(tar, len, fd, &MIB, &name, &err), 0);
	T_EQ_INT(oci_layer_extract_mem("not a tar at all, not at all", 28, fd, &MIB, &name, &err), -1);
	free(err);
	close(fd);
	free(tar);
}

/* A tar by hand: one entry whose header states size (octal, or base-256 past 8 GiB) followed by datalen bytes of
 * data, whatever the header says (a layer that lies), then the end blocks. Caller frees. */
static char *raw_tar(const char *path, uint64_t size, const char *data, size_t datalen, size_t *len)
{
	size_t pad = (datalen + 511) / 512 * 512;
	*len = 512 + pad + 1024;
	char *t = xcalloc(1, *len);
	memcpy(t, path, strlen(path));
	memcpy(t + 100, "0000644", 7);
	memcpy(t + 108, "0000000", 7);
	memcpy(t + 116, "0000000", 7);
	if (size < (uint64_t)1 << 33)
		snprintf(t + 124, 12, "%011llo", (unsigned long long)size);
	else {
		t[124] = (char)0x80;
		for (int i = 0; i < 8; i++)
			t[135 - i] = (char)(size >> (8 * i));
	}
	memcpy(t + 136, "00000000000", 11);
	t[156] = '0';
	memcpy(t + 257, "ustar", 6);
	memcpy(t + 263, "00", 2);
	memset(t + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += (unsigned char)t[i];
	snprintf(t + 148, 8, "%06o", sum);
	memcpy(t + 512, data, datalen);
	return t;
}

/* gzip of data through libarchive's raw writer (caller frees). */
static void *gzip_of(const void *data, size_t n, size_t *len)
{
	size_t cap = n + (4 << 20);
	void *buf = xmalloc(cap);
	struct archive *a = archive_write_new();
	archive_write_set_format_raw(a);
	archive_write_add_filter_gzip(a);
	archive_write_open_memory(a, buf, cap, len);
	struct archive_entry *ae = archive_entry_new();
	archive_entry_set_filetype(ae, AE_IFREG);
	archive_write_header(a, ae);
	archive_write_data(a, data, n);
	archive_entry_free(ae);
	archive_write_close(a);
	archive_write_free(a);
	return buf;
}

static int tmpfile_fd(void)
{
	char tmpl[] = "/tmp/kvcon-test-oci-XXXXXX";
	int fd = mkstemp(tmpl);
	unlink(tmpl);
	return fd;
}

/* Issue 23, finding 2: a layer that is gzip of a large, mostly zero disk is unpacked sparse (holes for the zero
 * blocks, the data where it belongs), and refused before a byte is written when its header says more than the cap
 * or the free space. */
static void test_layer_bounds(void)
{
	const size_t big = 64u << 20;
	char *disk = xcalloc(1, big);
	const struct {
		size_t off;
		const char *s;
	} bits[] = { { 0, "first block" }, { (1u << 20) + 17, "unaligned, across a block" }, { 32u << 20, "middle" },
		     { (48u << 20) - 3, "spans 48 MiB" }, { big - 6, "end!!!" } };
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		memcpy(disk + bits[i].off, bits[i].s, strlen(bits[i].s));
	memset(disk + (8u << 20), 0x5a, 3 * 4096 + 100); /* a run of data blocks */
	const struct ent e[] = { { "disk/disk.img", AE_IFREG, disk, big, NULL } };
	size_t len = 0;
	void *tgz = make_tar(e, 1, &len, true);
	T_CHECK(len < (1u << 20)); /* gzip of 64 MiB, mostly zeros */

	int fd = tmpfile_fd();
	char *name = NULL, *err = NULL;
	volatile uint64_t unpacked = 0;
	const struct oci_unpack roomy = { .cap = (uint64_t)1 << 30, .avail = -1, .unpacked = &unpacked };
	T_EQ_INT(oci_layer_extract_mem(tgz, len, fd, &roomy, &name, &err), 1);
	T_EQ_STR(name, "disk.img");
	T_CHECK(unpacked == big);
	struct stat st;
	T_EQ_INT(fstat(fd, &st), 0);
	T_EQ_INT(st.st_size, big);
	/* allocated: about the data's (7 blocks of text, 4 of 0x5a), far from 64 MiB */
	T_CHECK((uint64_t)st.st_blocks * 512 <= (256u << 10));
	size_t n = 0;
	char *got = read_fd(fd, &n);
	T_CHECK(n == big && memcmp(got, disk, big) == 0);
	free(got);
	free(name);
	close(fd);

	/* over the cap: refused with the sizes, nothing written */
	fd = tmpfile_fd();
	name = err = NULL;
	const struct oci_unpack capped = { .cap = 16u << 20, .avail = (int64_t)1 << 30 };
	T_EQ_INT(oci_layer_extract_mem(tgz, len, fd, &capped, &name, &err), -1);
	T_CHECK(err && strstr(err, "needs 64.0 MiB, 1.0 GiB free / cap 16.0 MiB"));
	T_CHECK(name == NULL);
	T_EQ_INT(fstat(fd, &st), 0);
	T_CHECK(st.st_size == 0 && st.st_blocks == 0);
	free(err);
	/* over the free space */
	err = NULL;
	const struct oci_unpack full = { .cap = (uint64_t)1 << 30, .avail = 10u << 20 };
	T_EQ_INT(oci_layer_extract_mem(tgz, len, fd, &full, &name, &err), -1);
	T_CHECK(err && strstr(err, "needs 64.0 MiB, 10.0 MiB free / cap 1.0 GiB"));
	T_EQ_INT(fstat(fd, &st), 0);
	T_CHECK(st.st_size == 0 && st.st_blocks == 0);
	free(err);
	/* the real free space (statvfs of the file's filesystem): a header of 1 PiB */
	err = NULL;
	size_t rlen = 0;
	char *huge = raw_tar("disk/huge.raw", (uint64_t)1 << 50, "x", 1, &rlen);
	const struct oci_unpack nocap = { .cap = UINT64_MAX, .avail = -1 };
	T_EQ_INT(oci_layer_extract_mem(huge, rlen, fd, &nocap, &name, &err), -1);
	T_CHECK(err && strstr(err, "needs 1048576.0 GiB, ") && strstr(err, " free / cap "));
	T_EQ_INT(fstat(fd, &st), 0);
	T_CHECK(st.st_size == 0 && st.st_blocks == 0);
	free(err);
	free(huge);
	close(fd);
	free(tgz);

	/* a stream longer than its header says: the disk is cut at the header's size */
	fd = tmpfile_fd();
	err = NULL;
	memset(disk, 'A', 1 << 20);
	char *liar = raw_tar("disk/liar.raw", 1024, disk, 1 << 20, &rlen);
	size_t glen = 0;
	void *gz = gzip_of(liar, rlen, &glen);
	T_EQ_INT(oci_layer_extract_mem(gz, glen, fd, &roomy, &name, &err), 1);
	T_EQ_INT(fstat(fd, &st), 0);
	T_EQ_INT(st.st_size, 1024);
	T_CHECK((uint64_t)st.st_blocks * 512 <= 8192);
	free(name);
	free(err);
	free(gz);
	free(liar);
	close(fd);
	free(disk);
}

static void test_progress(void)
{
	struct oci_progress p = { 0 };
	char *s = oci_progress_text("quay.io/x/y:v1", &p);
	T_EQ_STR(s, "pulling image \"quay.io/x/y:v1\"");
	free(s);
	p.done = p.total = 1043713;
	p.unpacked = (uint64_t)1 << 30;
	s = oci_progress_text("quay.io/x/y:v1", &p);
	T_EQ_STR(s, "pulling image \"quay.io/x/y:v1\": 1019.3 KiB of 1019.3 KiB fetched, 1.0 GiB unpacked");
	free(s);
}

static int count(const char *dir)
{
	char *cmd = xasprintf("find %s -type f | wc -l", dir);
	FILE *p = popen(cmd, "r");
	int n = -1;
	if (p) {
		if (fscanf(p, "%d", &n) != 1)
			n = -1;
		pclose(p);
	}
	free(cmd);
	return n;
}

static void test_cache(void)
{
	char root[] = "/tmp/kvcon-test-imgcache-XXXXXX";
	T_CHECK(mkdtemp(root) != NULL);
	imgcache_set_root(root);
	char *err = NULL, *tmp = NULL;
	const char *layer = "sha256:" D64;
	int fd = imgcache_tmp(root, &tmp, &err);
	T_CHECK(fd >= 0);
	T_EQ_INT(write(fd, "disk", 4), 4);
	T_EQ_INT(imgcache_commit_disk(root, tmp, fd, layer, "raw", &err), 0);
	close(fd);
	free(tmp);
	T_EQ_INT(imgcache_set_ref(root, "quay.io/containerdisks/fedora", "sha256:" D64, layer, "raw", &err), 0);
	T_EQ_INT(imgcache_set_ref(root, "127.0.0.1:5000/x/y:v1", "sha256:" D64, layer, "raw", &err), 0);
	char *dig = NULL, *p = imgcache_lookup("quay.io/containerdisks/fedora:latest", &dig); /* normalized */
	char *want = xasprintf("%s/disks/sha256-" D64 ".raw", root);
	T_EQ_STR(p, want);
	T_EQ_STR(dig, "sha256:" D64);
	free(p);
	free(dig);
	T_CHECK(imgcache_lookup("quay.io/containerdisks/other", NULL) == NULL);
	/* the hook: after the image directory's own files */
	manifest_image_hook(imgcache_hook);
	char **c = manifest_image_candidates("/nonexistent", "quay.io/containerdisks/fedora:latest");
	int n = 0;
	while (c[n])
		n++;
	T_CHECK(n == 11 && strcmp(c[n - 1], want) == 0);
	T_CHECK(strcmp(c[0], "/nonexistent/quay.io_containerdisks_fedora_latest") == 0);
	for (int i = 0; i < n; i++)
		free(c[i]);
	free(c);
	manifest_image_hook(NULL);
	/* a live pull's temporary file survives a sweep; a sweep while a pull holds the lock is skipped */
	int lock = imgcache_lock_shared(root, &err);
	int removed = 0;
	const char *refs[] = { "quay.io/containerdisks/fedora:latest" };
	T_EQ_INT(imgcache_sweep(refs, 1, &removed), 1);
	close(lock);
	char *live = NULL;
	int lfd = imgcache_tmp(root, &live, &err);
	char *dead = xasprintf("%s/tmp/pull-dead", root);
	T_CHECK(util_write_file_atomic(dead, "x", 1, 0600) == 0);
	T_EQ_INT(imgcache_sweep(refs, 1, &removed), 0);
	T_EQ_INT(removed, 2); /* the unused reference and the dead pull's file */
	T_CHECK(access(live, F_OK) == 0 && access(dead, F_OK) != 0);
	T_CHECK(access(want, F_OK) == 0); /* still used through the first reference */
	close(lfd);
	T_EQ_INT(imgcache_sweep(NULL, 0, &removed), 0);
	T_EQ_INT(removed, 3); /* reference, disk, the now dead temporary file */
	char *disks = xasprintf("%s/disks", root);
	T_EQ_INT(count(disks), 0);
	free(disks);
	free(live);
	free(dead);
	free(want);
	free(err);
	char *rm = xasprintf("rm -rf %s", root);
	T_EQ_INT(system(rm), 0);
	free(rm);
	imgcache_set_root(NULL);
}

int main(void)
{
	test_refs();
	test_regconf();
	test_challenge();
	test_manifest();
	test_auth();
	test_layer();
	test_layer_bounds();
	test_progress();
	test_cache();
	return T_DONE();
}
