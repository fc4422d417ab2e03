/* The console pane alone: a payload file (the console bench's 20 MB of log lines) fed straight into a 200x59
 * vtpane with 10,000 lines of scrollback, in 64 kB chunks as the stream delivers them, with the plain-text fast
 * path and without it (pure libvterm), runs interleaved; prints the median and best MB per CPU second of each.
 * Usage: vtpane_bench PAYLOAD [RUNS] */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "console/vtpane.h"

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double one_run(const char *data, size_t n, bool fast, uint64_t *fast_cells)
{
	struct vtpane *p = vtpane_new(59, 200, 10000);
	vtpane_set_fast_path(p, fast);
	double c0 = cpu_now();
	for (size_t off = 0; off < n; off += 65536)
		vtpane_input(p, data + off, n - off < 65536 ? n - off : 65536);
	double c1 = cpu_now();
	uint64_t desyncs;
	vtpane_fast_stats(p, fast_cells, &desyncs);
	if (desyncs)
		fprintf(stderr, "fast path out of step %llu times\n", (unsigned long long)desyncs);
	vtpane_free(p);
	return c1 - c0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: vtpane_bench PAYLOAD [RUNS]\n");
		return 2;
	}
	setlocale(LC_ALL, "C.UTF-8");
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *data = malloc((size_t)size);
	if (!data || fread(data, 1, (size_t)size, f) != (size_t)size)
		return 1;
	fclose(f);
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	if (runs < 1 || runs > 100)
		runs = 5;
	double *t[2] = {calloc((size_t)runs, sizeof(double)), calloc((size_t)runs, sizeof(double))};
	uint64_t cells = 0, plain_cells = 0;
	for (int r = 0; r < runs; r++) {
		t[0][r] = one_run(data, (size_t)size, true, &cells);
		t[1][r] = one_run(data, (size_t)size, false, &plain_cells);
	}
	double mb = (double)size / 1e6;
	for (int k = 0; k < 2; k++) {
		qsort(t[k], (size_t)runs, sizeof(double), cmp_double);
		printf("  pane alone, %s: median %.3f s CPU = %.1f MB per CPU second (best %.1f), %d runs\n",
		       k ? "pure libvterm (fast path off)" : "fast path on", t[k][runs / 2], mb / t[k][runs / 2],
		       mb / t[k][0], runs);
	}
	printf("  fast path wrote %.1f%% of the %.1f MB directly\n", 100.0 * (double)cells / (double)size, mb);
	free(t[0]);
	free(t[1]);
	free(data);
	return 0;
}
