/* Runs a libFuzzer harness without libFuzzer: every file of the corpus directories given on the command line,
 * then, with -m N, N deterministic mutations of each (bit flips, truncations, duplicated and inserted bytes).
 * `make check` uses it (under ASan+UBSan in `make asan`) so every parser's corpus is replayed on every run;
 * `make fuzz` builds the real coverage-guided fuzzers. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static unsigned next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng >> 11);
}

static size_t nruns;

/* With KVCON_REPLAY_SAVE=FILE, each mutated input is written there before it runs: after a crash, FILE holds it. */
static void save_input(const uint8_t *d, size_t n)
{
	const char *path = getenv("KVCON_REPLAY_SAVE");
	if (path == NULL)
		return;
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(d, 1, n, f);
		fclose(f);
	}
}

static void run_mutations(const uint8_t *data, size_t size, int mutations)
{
	size_t cap = size * 2 + 64;
	uint8_t *m = malloc(cap);
	for (int i = 0; i < mutations; i++) {
		size_t n = size;
		memcpy(m, data, size);
		int edits = 1 + (int)(next_rand() % 4);
		for (int e = 0; e < edits; e++) {
			unsigned op = next_rand() % 4;
			if (op == 0 && n > 0) {
				m[next_rand() % n] ^= (uint8_t)(1u << (next_rand() % 8));
			} else if (op == 1 && n > 0) {
				n = next_rand() % n; /* truncate */
			} else if (op == 2 && n + 1 < cap) {
				size_t at = n ? next_rand() % n : 0;
				memmove(m + at + 1, m + at, n - at);
				m[at] = (uint8_t)next_rand();
				n++;
			} else if (op == 3 && n > 0) {
				size_t a = next_rand() % n, len = next_rand() % (n - a) + 1;
				if (n + len <= cap) {
					memmove(m + a + len, m + a, n - a);
					n += len; /* duplicate a slice */
				}
			}
		}
		uint8_t *copy = malloc(n ? n : 1); /* exact size, so ASan sees overreads */
		memcpy(copy, m, n);
		save_input(copy, n);
		LLVMFuzzerTestOneInput(copy, n);
		free(copy);
		nruns++;
	}
	free(m);
}

static void run_file(const char *path, int mutations)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *data = malloc(len > 0 ? (size_t)len : 1);
	size_t n = fread(data, 1, len > 0 ? (size_t)len : 0, f);
	fclose(f);
	LLVMFuzzerTestOneInput(data, n);
	nruns++;
	if (mutations > 0)
		run_mutations(data, n, mutations);
	free(data);
}

static void run_path(const char *path, int mutations)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		run_file(path, mutations);
		return;
	}
	struct dirent **ents;
	int n = scandir(path, &ents, NULL, alphasort);
	for (int i = 0; i < n; i++) {
		if (ents[i]->d_name[0] != '.') {
			char sub[4096];
			snprintf(sub, sizeof sub, "%s/%s", path, ents[i]->d_name);
			run_path(sub, mutations);
		}
		free(ents[i]);
	}
	free(ents);
}

int main(int argc, char **argv)
{
	int mutations = 0, first = 1;
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 2 && strcmp(argv[1], "-m") == 0) {
		mutations = atoi(argv[2]);
		first = 3;
	}
	for (int i = first; i < argc; i++)
		run_path(argv[i], mutations);
	fprintf(stderr, "%s: %zu inputs\n", argv[0], nruns);
	return 0;
}
