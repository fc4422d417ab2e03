/* Benchmark of the watch path without a network: a captured or generated watch stream (JSON lines of
 * {"type":...,"object":...}) is fed in 64 KiB chunks through the reflector's line parser, the decoder and the
 * store, as a watch response would be.
 *
 *     watch_replay [--list] KIND LOAD_FILE [MODIFIED_FILE [REPEAT]]
 *
 * Pass 1 loads LOAD_FILE into an empty store: an ADDED watch stream, or with --list list pages (one response body
 * per line) through the reflector's list path, as the dashboard's first load does. It reports the store's memory
 * per object: RSS delta after malloc_trim with that reflector freed (its parse buffers are per reflector, not per
 * object; their size is reported apart), and the store's own heap estimate. Pass 2 replays MODIFIED_FILE REPEAT
 * times over that store and reports events applied per second (decode included) and the memory per object again
 * (after every object was replaced REPEAT times: what a long-running dashboard holds, heap fragmentation
 * included). */
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "kube/reflector.h"
#include "model/store.h"

static long rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU time of this process: on a machine shared with other work, wall time says more about the neighbours. */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int feed_file(struct kube_reflector *r, const char *data, size_t len)
{
	const size_t chunk = 64 * 1024;
	for (size_t off = 0; off < len; off += chunk)
		if (kube_reflector_feed(r, data + off, len - off < chunk ? len - off : chunk) < 0)
			return -1;
	return 0;
}

/* List pages, one response body per line. */
static int feed_pages(struct kube_reflector *r, char *data, size_t len)
{
	for (char *p = data, *nl; p < data + len; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(data + len - p));
		if (nl == NULL)
			nl = data + len;
		if (nl > p && kube_reflector_apply_list(r, p, (size_t)(nl - p)) < 0)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = { "vm", "vmi", "pod", "event" };
	bool list = argc > 1 && strcmp(argv[1], "--list") == 0;
	if (list) {
		argc--;
		argv++;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: watch_replay [--list] vm|vmi|pod|event LOAD_FILE [MODIFIED_FILE [REPEAT]]\n");
		return 2;
	}
	int kind = -1;
	for (int k = 0; k < 4; k++)
		if (strcmp(argv[1], kinds[k]) == 0)
			kind = k;
	if (kind < 0)
		return 2;
	/* glibc's default malloc settings, as the long-running dashboard has them (kvcon get, which only lists,
	 * turns fastbins off; BENCH_MXFAST0=1 measures that) */
	if (getenv("BENCH_MXFAST0"))
		mallopt(M_MXFAST, 0);
	size_t alen, mlen = 0;
	char *added = util_read_file(argv[2], &alen);
	char *mod = argc > 3 ? util_read_file(argv[3], &mlen) : NULL;
	int repeat = argc > 4 ? atoi(argv[4]) : 1;
	if (added == NULL || (argc > 3 && mod == NULL)) {
		perror("read");
		return 1;
	}
	struct source *src = source_new(SOURCE_KUBE, "bench");
	struct store *st = store_new();
	struct kube_reflector_cfg cfg = { .st = st, .src = src, .kind = (enum obj_kind)kind };
	malloc_trim(0);
	long before = rss_kb();
	struct kube_reflector *r = kube_reflector_new(&cfg);
	double t0 = now_s();
	if ((list ? feed_pages(r, added, alen) : feed_file(r, added, alen)) < 0)
		fprintf(stderr, "malformed input\n");
	double t1 = now_s();
	malloc_trim(0);
	long with_parser = rss_kb();
	kube_reflector_free(r);
	malloc_trim(0);
	long after = rss_kb();
	size_t n = store_count(st, (enum obj_kind)kind);
	printf("%s: %zu objects loaded by %s; RSS delta %ld KiB = %.0f bytes/object; store heap estimate %.0f "
	       "bytes/object; parse buffers %ld KiB; initial load %.0f objects/s\n",
	       kinds[kind], n, list ? "list pages" : "ADDED events", after - before,
	       n ? (double)(after - before) * 1024.0 / (double)n : 0.0,
	       n ? (double)store_heap_size(st) / (double)n : 0.0, with_parser - after, (double)n / (t1 - t0));
	r = kube_reflector_new(&cfg);
	uint64_t ev0 = kube_reflector_stats(r)->events;
	if (mod) {
		/* each replay timed on its own too: the median replay says more than the total when neighbours come
		 * and go on a shared machine */
		double rates[64];
		int nrates = 0;
		double t2 = now_s(), c2 = cpu_s();
		for (int i = 0; i < repeat; i++) {
			uint64_t e0 = kube_reflector_stats(r)->events;
			double ci = cpu_s();
			feed_file(r, mod, mlen);
			double cd = cpu_s() - ci;
			if (nrates < 64 && cd > 0)
				rates[nrates++] = (double)(kube_reflector_stats(r)->events - e0) / cd;
		}
		double t3 = now_s(), c3 = cpu_s();
		qsort(rates, (size_t)nrates, sizeof rates[0], cmp_double);
		uint64_t ev = kube_reflector_stats(r)->events - ev0;
		printf("%s: %llu watch events applied: %.0f events/s of CPU time (%.3f s CPU, %.1f MB/s of JSON), "
		       "%.0f events/s of wall time; per replay of CPU time: median %.0f, min %.0f, max %.0f\n",
		       kinds[kind], (unsigned long long)ev, (double)ev / (c3 - c2), c3 - c2,
		       (double)mlen * repeat / (c3 - c2) / 1e6, (double)ev / (t3 - t2),
		       nrates ? rates[nrates / 2] : 0.0, nrates ? rates[0] : 0.0, nrates ? rates[nrates - 1] : 0.0);
		kube_reflector_free(r);
		r = NULL;
		malloc_trim(0);
		long steady = rss_kb();
		printf("%s: after the replays: RSS delta %ld KiB = %.0f bytes/object\n", kinds[kind], steady - before,
		       n ? (double)(steady - before) * 1024.0 / (double)n : 0.0);
	}
	kube_reflector_free(r);
	store_free(st);
	free(added);
	free(mod);
	return 0;
}
