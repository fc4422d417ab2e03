/* Allocation wrappers: running out of memory is fatal (the terminal is restored first, see log.h). */
#ifndef KVCON_CORE_XMALLOC_H
#define KVCON_CORE_XMALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
/* xstrdup that accepts NULL and returns NULL. */
char *xstrdup0(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

#endif
