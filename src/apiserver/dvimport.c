/* A DataVolume's import or clone (dvimport.h): one thread per copy; the loop thread starts it, reads its progress
 * and may cancel it. Nothing from the DataVolume reaches a shell: qemu-img runs from an argv of paths this file
 * builds, with the format chosen here (-f: probed for a download, as CDI does; by the file's name for a registry
 * disk or a claim, never from a guest's bytes), and a qcow2 that names a backing or external data file is
 * refused (it would make qemu-img read host files). The copy goes to a dot-file beside the claim's file, created
 * O_EXCL, and is renamed over it only once complete. */
#include "apiserver/dvimport.h"

#include <archive.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "core/util.h"
#include "core/xmalloc.h"
#include "engine/engine.h"
#include "engine/imgcache.h"
#include "engine/oci.h"

struct dvimport {
	enum dvimport_kind kind;
	pthread_mutex_t mu;
	int refs; /* the loop's and the thread's */
	bool cancelled;
	double progress;
	char *url, *alg, *hex, *target, *dl, *raw, *conv;
	char *root;                /* registry: the engine's image cache */
	struct oci_regconf *conf;  /* registry: the registries configuration, its disk capped at max */
	struct oci_progress prog;  /* registry: the pull's */
	uint64_t deadline_ms;      /* registry: the pull is cancelled after engine.import-timeout */
	uint64_t size, max, got;
	long timeout;
	int fd;
	EVP_MD_CTX *md;
	dvimport_done_fn done;
	void *arg;
	char *err;
};

static const char *const ALGS[][2] = { { "md5", "32" }, { "sha1", "40" }, { "sha256", "64" }, { "sha512", "128" } };

bool dvimport_checksum_ok(const char *s)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	if (colon == NULL)
		return false;
	for (size_t i = 0; i < sizeof ALGS / sizeof ALGS[0]; i++)
		if (strncmp(s, ALGS[i][0], (size_t)(colon - s)) == 0 && strlen(ALGS[i][0]) == (size_t)(colon - s)) {
			size_t n = strlen(colon + 1);
			if (n != (size_t)atoi(ALGS[i][1]))
				return false;
			for (const char *p = colon + 1; *p; p++)
				if (!strchr("0123456789abcdefABCDEF", *p))
					return false;
			return true;
		}
	return false;
}

static void unref(struct dvimport *im)
{
	pthread_mutex_lock(&im->mu);
	bool last = --im->refs == 0;
	pthread_mutex_unlock(&im->mu);
	if (!last)
		return;
	pthread_mutex_destroy(&im->mu);
	free(im->url);
	free(im->alg);
	free(im->hex);
	free(im->target);
	free(im->dl);
	free(im->raw);
	free(im->conv);
	free(im->root);
	oci_regconf_free(im->conf);
	free(im->err);
	free(im);
}

static bool cancelled(struct dvimport *im)
{
	pthread_mutex_lock(&im->mu);
	bool c = im->cancelled;
	pthread_mutex_unlock(&im->mu);
	return c;
}

static size_t on_data(char *p, size_t sz, size_t n, void *arg)
{
	struct dvimport *im = arg;
	size_t len = sz * n;
	if (im->got + len > im->max || cancelled(im))
		return 0;
	for (size_t off = 0; off < len;) {
		ssize_t w = write(im->fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return 0;
		off += (size_t)w;
	}
	if (im->md)
		EVP_DigestUpdate(im->md, p, len);
	im->got += len;
	return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	(void)ultotal;
	(void)ulnow;
	struct dvimport *im = arg;
	pthread_mutex_lock(&im->mu);
	if (dltotal > 0)
		im->progress = 100.0 * (double)dlnow / (double)dltotal;
	bool c = im->cancelled;
	pthread_mutex_unlock(&im->mu);
	return c ? 1 : 0;
}

static int open_new(const char *path)
{
	unlink(path); /* a leftover of an earlier service (our own directory) */
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* The download into im->dl, its checksum checked. 0, or -1 with im->err. */
static int download(struct dvimport *im)
{
	im->fd = open_new(im->dl);
	if (im->fd < 0) {
		im->err = xasprintf("%s: %s", im->dl, strerror(errno));
		return -1;
	}
	const EVP_MD *md = im->alg ? EVP_get_digestbyname(im->alg) : NULL;
	if (md) {
		im->md = EVP_MD_CTX_new();
		EVP_DigestInit_ex(im->md, md, NULL);
	}
	CURL *c = curl_easy_init();
	char cerr[CURL_ERROR_SIZE] = "";
	curl_easy_setopt(c, CURLOPT_URL, im->url);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, im->timeout);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a source that stalls for a minute fails */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)im->max);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, im);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, im);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "kvcon-cdi-importer");
	CURLcode rc = curl_easy_perform(c);
	long code = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (fsync(im->fd) < 0 && rc == CURLE_OK)
		rc = CURLE_WRITE_ERROR;
	close(im->fd);
	im->fd = -1;
	if (rc == CURLE_OK && code != 200)
		im->err = xasprintf("Unable to connect to http data source: expected status code 200, got %ld", code);
	else if (rc == CURLE_FILESIZE_EXCEEDED || (rc == CURLE_WRITE_ERROR && im->got + CURL_MAX_WRITE_SIZE > im->max))
		im->err = xasprintf("the image is larger than %llu bytes (the claim's size and a tenth, at most "
				    "engine.volume-max)",
				    (unsigned long long)im->max);
	else if (rc != CURLE_OK)
		im->err = xasprintf("Unable to connect to http data source: %s", cerr[0] ? cerr : curl_easy_strerror(rc));
	if (im->err == NULL && im->md) {
		unsigned char d[EVP_MAX_MD_SIZE];
		unsigned dl = 0;
		char hex[2 * EVP_MAX_MD_SIZE + 1];
		EVP_DigestFinal_ex(im->md, d, &dl);
		for (unsigned i = 0; i < dl; i++)
			snprintf(hex + 2 * i, 3, "%02x", d[i]);
		if (strcasecmp(hex, im->hex) != 0)
			im->err = xasprintf("checksum mismatch: %s:%s expected, the image's is %s:%s", im->alg, im->hex,
					    im->alg, hex);
	}
	if (im->md)
		EVP_MD_CTX_free(im->md);
	im->md = NULL;
	return im->err ? -1 : 0;
}

static int read_head(const char *path, unsigned char *b, size_t n)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, b, n);
	close(fd);
	return r < 0 ? -1 : (int)r;
}

/* gz and xz: the stream decompressed into im->raw (bounded by im->max). 0, or -1 with im->err. */
static int decompress(struct dvimport *im)
{
	struct archive *a = archive_read_new();
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_xz(a);
	archive_read_support_format_raw(a);
	struct archive_entry *e;
	int fd = -1;
	if (archive_read_open_filename(a, im->dl, 64 * 1024) != ARCHIVE_OK || archive_read_next_header(a, &e) != ARCHIVE_OK) {
		im->err = xasprintf("cannot decompress the image: %s", archive_error_string(a));
		goto out;
	}
	fd = open_new(im->raw);
	if (fd < 0) {
		im->err = xasprintf("%s: %s", im->raw, strerror(errno));
		goto out;
	}
	char buf[64 * 1024];
	uint64_t total = 0;
	for (;;) {
		la_ssize_t n = archive_read_data(a, buf, sizeof buf);
		if (n == 0)
			break;
		if (n < 0) {
			im->err = xasprintf("cannot decompress the image: %s", archive_error_string(a));
			goto out;
		}
		total += (uint64_t)n;
		if (total > im->max || cancelled(im)) {
			im->err = xasprintf("the decompressed image is larger than %llu bytes (the claim's size and a "
					    "tenth, at most engine.volume-max)",
					    (unsigned long long)im->max);
			goto out;
		}
		if (write(fd, buf, (size_t)n) != n) {
			im->err = xasprintf("%s: %s", im->raw, strerror(errno));
			goto out;
		}
	}
out:
	if (fd >= 0)
		close(fd);
	archive_read_free(a);
	return im->err ? -1 : 0;
}

static uint64_t be64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* The image (qcow2 or raw; fmt NULL: probed) into the claim's file. 0, or -1 with im->err. */
static int convert(struct dvimport *im, const char *src, const char *fmt)
{
	unsigned char h[104] = { 0 };
	int n = read_head(src, h, sizeof h);
	struct stat sb;
	if (n < 0 || stat(src, &sb) < 0) {
		im->err = xasprintf("%s: %s", src, strerror(errno));
		return -1;
	}
	bool qcow2 = fmt ? strcmp(fmt, "qcow2") == 0 : n >= 32 && memcmp(h, "QFI\xfb", 4) == 0;
	if (qcow2 && (n < 32 || memcmp(h, "QFI\xfb", 4) != 0)) {
		im->err = xasprintf("%s: not a qcow2 image", src);
		return -1;
	}
	uint64_t vsize = (uint64_t)sb.st_size;
	if (qcow2) {
		uint32_t version = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
		if (be64(h + 8) != 0) {
			im->err = xstrdup("the qcow2 image names a backing file: refused");
			return -1;
		}
		if (version >= 3 && n >= 80 && (be64(h + 72) & 4)) {
			im->err = xstrdup("the qcow2 image names an external data file: refused");
			return -1;
		}
		vsize = be64(h + 24);
	}
	if (vsize > im->size) {
		im->err = xasprintf("Virtual image size %llu is larger than the reported available storage %llu. A larger "
				    "PVC is required.",
				    (unsigned long long)vsize, (unsigned long long)im->size);
		return -1;
	}
	/* the target made here (O_EXCL, sparse, the claim's size), qemu-img writing into it (-n) */
	int fd = open_new(im->conv);
	if (fd < 0 || ftruncate(fd, (off_t)im->size) < 0) {
		im->err = xasprintf("%s: %s", im->conv, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	char *argv[] = { "qemu-img", "convert", "-q", "-n", "--target-is-zero", "-f", qcow2 ? "qcow2" : "raw", "-O", "raw",
			 (char *)src, im->conv, NULL };
	if (util_run_quiet(argv, "qemu-img convert", &im->err) < 0)
		return -1;
	fd = open(im->conv, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0) {
		im->err = xasprintf("%s: %s", im->conv, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	if (truncate(im->conv, (off_t)im->size) < 0 || rename(im->conv, im->target) < 0) {
		im->err = xasprintf("%s: %s", im->target, strerror(errno));
		return -1;
	}
	char *dir = xstrdup(im->target);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	util_fsync_dir(dir);
	free(dir);
	return 0;
}

static void finish(void *arg)
{
	struct dvimport *im = arg;
	pthread_mutex_lock(&im->mu);
	bool c = im->cancelled;
	pthread_mutex_unlock(&im->mu);
	if (!c) {
		im->done(im->arg, im->err);
		unref(im); /* the loop's: done is the end of it */
	}
	unref(im);
}

/* The format a file's name says (a registry disk in the image cache, a claim's file): qcow2 or raw. */
static const char *format_of(const char *path)
{
	size_t n = strlen(path);
	return n > 6 && strcmp(path + n - 6, ".qcow2") == 0 ? "qcow2" : "raw";
}

/* registry: the containerDisk's disk pulled into the image cache (bounded, every blob verified: oci.h), then
 * converted. The cache's shared lock is held until the conversion has read the disk (its sweep waits). */
static void registry(struct dvimport *im)
{
	char *e = NULL;
	if (im->conf == NULL)
		return; /* im->err says why (dvimport_start) */
	int lock = imgcache_lock_shared(im->root, &im->err);
	struct oci_result res;
	if (lock >= 0 && oci_pull(im->url, im->conf, im->root, &im->prog, &res, &e) < 0) {
		if (im->prog.cancel && !cancelled(im)) { /* dvimport_progress's deadline */
			free(e);
			e = xasprintf("the pull took more than %ld s (engine.import-timeout)", im->timeout);
		}
		im->err = e;
	} else if (lock >= 0) {
		pthread_mutex_lock(&im->mu);
		im->progress = 100.0;
		pthread_mutex_unlock(&im->mu);
		convert(im, res.disk, format_of(res.disk));
		oci_result_free(&res);
	}
	if (lock >= 0)
		close(lock);
}

static void *import_main(void *arg)
{
	struct dvimport *im = arg;
	if (im->kind == DVIMPORT_CLONE) {
		convert(im, im->url, format_of(im->url));
	} else if (im->kind == DVIMPORT_REGISTRY) {
		registry(im);
	} else if (download(im) == 0 && !cancelled(im)) {
		unsigned char h[6] = { 0 };
		int n = read_head(im->dl, h, sizeof h);
		bool gz = n >= 2 && h[0] == 0x1f && h[1] == 0x8b, xz = n >= 6 && memcmp(h, "\xfd" "7zXZ\0", 6) == 0;
		if (!(gz || xz) || decompress(im) == 0)
			convert(im, gz || xz ? im->raw : im->dl, NULL);
	}
	if (im->err == NULL && cancelled(im))
		im->err = xstrdup("cancelled");
	unlink(im->dl);
	unlink(im->raw);
	unlink(im->conv);
	loop_post(finish, im);
	return NULL;
}

struct dvimport *dvimport_start(enum dvimport_kind kind, const char *url, const char *checksum, const char *target,
				uint64_t size, uint64_t max_bytes, long timeout_s, dvimport_done_fn done, void *arg)
{
	struct dvimport *im = xcalloc(1, sizeof *im);
	im->kind = kind;
	if (kind == DVIMPORT_REGISTRY) {
		char *e = NULL;
		im->root = engine_image_cache();
		im->deadline_ms = util_now_ms() + (uint64_t)timeout_s * 1000;
		im->conf = oci_regconf_load(&e); /* here, on the loop thread, as the engine's pulls read it */
		if (im->conf)
			oci_regconf_cap(im->conf, max_bytes);
		else
			im->err = xasprintf("registries configuration: %s", e);
		free(e);
	}
	pthread_mutex_init(&im->mu, NULL);
	im->refs = 2;
	im->progress = -1;
	im->fd = -1;
	im->url = xstrdup(url);
	if (checksum && dvimport_checksum_ok(checksum)) {
		const char *colon = strchr(checksum, ':');
		im->alg = xstrndup(checksum, (size_t)(colon - checksum));
		im->hex = xstrdup(colon + 1);
	}
	im->target = xstrdup(target);
	char *dir = xstrdup(target), *slash = strrchr(dir, '/'), *base = slash ? slash + 1 : dir;
	if (slash)
		*slash = 0;
	im->dl = xasprintf("%s/.%s.import", slash ? dir : ".", base);
	im->raw = xasprintf("%s/.%s.raw", slash ? dir : ".", base);
	im->conv = xasprintf("%s/.%s.%s", slash ? dir : ".", base, kind == DVIMPORT_CLONE ? "clone" : "convert");
	free(dir);
	im->size = size;
	im->max = max_bytes;
	im->timeout = timeout_s;
	im->done = done;
	im->arg = arg;
	pthread_t t;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &at, import_main, im) != 0) {
		free(im->err);
		im->err = xasprintf("cannot start an import thread: %s", strerror(errno));
		loop_post(finish, im);
	}
	pthread_attr_destroy(&at);
	return im;
}

double dvimport_progress(struct dvimport *im)
{
	if (im->kind == DVIMPORT_REGISTRY) {
		uint64_t done = im->prog.done, total = im->prog.total;
		pthread_mutex_lock(&im->mu);
		if (im->progress < 100.0 && total > 0)
			im->progress = 100.0 * (double)(done < total ? done : total) / (double)total;
		pthread_mutex_unlock(&im->mu);
		if (util_now_ms() > im->deadline_ms)
			im->prog.cancel = 1; /* oci_pull stops at its next read */
	}
	pthread_mutex_lock(&im->mu);
	double p = im->progress;
	pthread_mutex_unlock(&im->mu);
	return p;
}

void *dvimport_cancel(struct dvimport *im)
{
	pthread_mutex_lock(&im->mu);
	im->cancelled = true;
	im->prog.cancel = 1;
	void *arg = im->arg;
	pthread_mutex_unlock(&im->mu);
	unref(im);
	return arg;
}
