/* libFuzzer harness for the dashboard's text parsers and its display escaping: the input is parsed as a theme
 * file, as kvcon's config file and as a `/` filter, converted from JSON to YAML for the object view, and fitted
 * for display at several widths (the fitted text must never contain a byte that could drive a terminal).
 * Seeds: tests/fuzz/corpus/uitext/. */
#include <locale.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ui/draw.h"
#include "ui/sources.h"
#include "ui/table.h"
#include "ui/theme.h"
#include "ui/yamlview.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		setlocale(LC_ALL, "C.UTF-8");
		init = 1;
	}
	if (size > 1 << 16)
		return 0;
	char *s = malloc(size + 1);
	memcpy(s, data, size);
	s[size] = '\0';
	char *err = NULL;
	theme_load_text(s, "fuzz", &err);
	free(err);
	err = NULL;
	sources_parse_config(s, &err);
	free(err);
	err = NULL;
	struct table_filter f;
	if (table_filter_parse(s, &f, &err) == 0)
		table_filter_free(&f);
	free(err);
	err = NULL;
	char *y = yamlview_from_json((const char *)data, size, &err);
	free(y);
	free(err);
	static const int widths[] = { 0, 1, 2, 7, 40, 300 };
	char out[1024];
	for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
		int w = draw_fit(s, widths[i], out, sizeof out);
		if (w < 0 || w > widths[i])
			abort();
		for (const unsigned char *p = (const unsigned char *)out; *p; p++)
			if (*p < 0x20 || *p == 0x7f)
				abort(); /* a control byte would reach the terminal */
	}
	free(s);
	return 0;
}
