/* Tiny assertion helpers for kvcon's C unit tests: each test binary runs its checks and exits non-zero
 * when any failed, printing file:line and the failed expression. */
#ifndef KVCON_TESTS_T_H
#define KVCON_TESTS_T_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_failures;
static int t_checks;

#define T_CHECK(cond)                                                                                    \
	do {                                                                                             \
		t_checks++;                                                                              \
		if (!(cond)) {                                                                           \
			t_failures++;                                                                    \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
		}                                                                                        \
	} while (0)

#define T_EQ_INT(a, b)                                                                                   \
	do {                                                                                             \
		long long t_a = (long long)(a), t_b = (long long)(b);                                    \
		t_checks++;                                                                              \
		if (t_a != t_b) {                                                                        \
			t_failures++;                                                                    \
			fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n", __FILE__, __LINE__, #a, \
				#b, t_a, t_b);                                                           \
		}                                                                                        \
	} while (0)

#define T_EQ_STR(a, b)                                                                                   \
	do {                                                                                             \
		const char *t_a = (a), *t_b = (b);                                                       \
		t_checks++;                                                                              \
		if (t_a == NULL || t_b == NULL || strcmp(t_a, t_b) != 0) {                               \
			t_failures++;                                                                    \
			fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, \
				#b, t_a ? t_a : "(null)", t_b ? t_b : "(null)");                         \
		}                                                                                        \
	} while (0)

/* Ends main(): prints a summary and returns the exit status. */
#define T_DONE()                                                                                         \
	(fprintf(stderr, "%s: %d checks, %d failed\n", __FILE__, t_checks, t_failures), t_failures ? 1 : 0)

#endif
