/* Fixtures shared by the unit tests: tests/fixtures/NAME as JSON or decoded into a store object, JSON text
 * decoded, RFC 3339 times. Paths are relative to the repository's top directory (make unit runs there). Linked
 * into every unit test binary by the Makefile. */
#ifndef KVCON_TESTS_FIXTURE_H
#define KVCON_TESTS_FIXTURE_H

#include <json-c/json.h>
#include <stdint.h>

#include "model/obj.h"
#include "model/source.h"

/* tests/fixtures/NAME parsed (caller puts), or NULL with the path on stderr. */
struct json_object *fixture_json(const char *name);
/* tests/fixtures/NAME decoded as kind for src (caller frees with obj_free), or NULL. */
struct obj *fixture_obj(struct source *src, enum obj_kind kind, const char *name);
/* JSON text decoded as kind for src (NULL with *err, when err is given, on refusal). */
struct obj *fixture_decode(struct source *src, enum obj_kind kind, const char *json, char **err);
/* A curses screen on /dev/null (xterm-256color, colours, C.UTF-8) for tests that draw into windows and pads; exits
 * 1 without terminfo. fixture_curses_end() takes it down. */
void fixture_curses(void);
void fixture_curses_end(void);
/* An RFC 3339 time in seconds since the epoch (0 when it does not parse). */
int64_t fixture_ts(const char *s);

#endif
