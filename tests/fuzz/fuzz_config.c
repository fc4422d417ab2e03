/* libFuzzer harness for kvcon's config file parser (core/config.c): the input is parsed as a config file; every
 * entry must have a non-empty key without '=', '#', a newline or blanks at its ends, a value without '#' or a
 * newline, and increasing line numbers; an error must be `NAME:LINE: ...`. Writing the entries back as
 * `key = value` lines and parsing that must give the same entries and no error (the format round-trips).
 * Seeds: tests/fuzz/corpus/config/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static void check_entry(const struct config_entry *e, int prev_line)
{
	size_t kl = strlen(e->key), vl = strlen(e->value);
	if (kl == 0 || blank(e->key[0]) || blank(e->key[kl - 1]) || strpbrk(e->key, "=#\n"))
		abort();
	if (strpbrk(e->value, "#\n") || (vl && (blank(e->value[0]) || blank(e->value[vl - 1]))))
		abort();
	if (e->line <= prev_line)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	char *s = strndup((const char *)data, size); /* the file's text up to a NUL, as util_read_file gives it */
	char *err = NULL;
	struct config *c = config_parse(s, "fuzz", &err);
	if (err && (strncmp(err, "fuzz:", 5) != 0 || strchr(err + 5, ':') == NULL))
		abort();
	free(err);
	struct buf b;
	buf_init(&b);
	int prev = 0;
	for (size_t i = 0; i < config_count(c); i++) {
		const struct config_entry *e = config_at(c, i);
		check_entry(e, prev);
		prev = e->line;
		buf_printf(&b, "%s = %s\n", e->key, e->value);
	}
	buf_add_char(&b, '\0');
	err = NULL;
	struct config *again = config_parse(b.data, NULL, &err);
	if (err || config_count(again) != config_count(c))
		abort();
	for (size_t i = 0; i < config_count(c); i++) {
		const struct config_entry *x = config_at(c, i), *y = config_at(again, i);
		if (strcmp(x->key, y->key) != 0 || strcmp(x->value, y->value) != 0 || y->line != (int)i + 1)
			abort();
		if (config_get(c, x->key) != NULL && x->value[0] == '\0' && config_get(c, x->key)[0] == '\0')
			abort();
	}
	config_free(again);
	config_free(c);
	buf_free(&b);
	free(s);
	return 0;
}
