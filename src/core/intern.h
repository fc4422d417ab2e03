/* Interned strings for low-cardinality values (namespaces, nodes, phases, reasons): one copy each, never freed,
 * compared by pointer. Keeps the store small with tens of thousands of objects. Not thread-safe: UI thread only. */
#ifndef KVCON_CORE_INTERN_H
#define KVCON_CORE_INTERN_H

#include <stddef.h>

/* Returns the canonical copy of s (NULL stays NULL). */
const char *intern(const char *s);
const char *intern_n(const char *s, size_t n);

#endif
