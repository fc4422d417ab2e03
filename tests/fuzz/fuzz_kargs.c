/* libFuzzer harness for the option parser (core/kargs.c): the input's lines are argv (after argv[0]), parsed
 * against get's kind of table (values, flags, short groups) to the end, and each argument alone as main's global
 * options are matched. Every option must come back with a value, an error with a message, or a positional. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/kargs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct karg_opt opts[] = {
	{ 'o', "output", KARG_VALUE, 0 },    { 'n', "namespace", KARG_VALUE, 1 }, { 'A', "all-namespaces", KARG_FLAG, 2 },
	{ 'w', "watch", KARG_FLAG, 3 },      { 'L', "label-columns", KARG_VALUE, 4 }, { 0, "no-headers", KARG_FLAG, 5 },
	{ 0, "sort-by", KARG_VALUE, 6 },     { 0, NULL, 0, 0 },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *text = strndup((const char *)data, size);
	char *argv[130];
	int argc = 0;
	argv[argc++] = "kvcon";
	for (char *save = NULL, *t = strtok_r(text, "\n", &save); t && argc < 129; t = strtok_r(NULL, "\n", &save))
		argv[argc++] = t;
	argv[argc] = NULL;
	struct karg k;
	karg_init(&k, argc, argv, opts);
	int id, guard = 0;
	while ((id = karg_next(&k)) != KARG_END && guard++ < 1000) {
		if (id == KARG_ERR && k.err[0] == '\0')
			abort();
		if (id >= 0 && k.val == NULL)
			abort();
		if (id == KARG_ERR)
			break;
	}
	if (guard >= 1000)
		abort(); /* the parser always advances */
	for (int i = 1; i < argc;) {
		const char *val = NULL;
		char err[80];
		int before = i;
		int r = karg_match_one(opts, argc, argv, &i, &val, err, sizeof err);
		if (r == KARG_POS || r == KARG_ERR)
			i = before + 1;
		else if (i <= before || val == NULL)
			abort();
	}
	free(text);
	return 0;
}
