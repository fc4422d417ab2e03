/* The registry of sources, and names of watch states (actions are model/registry.c's rows). */
#include "model/source.h"

#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"

static struct source **sources;
static size_t nsources;

struct source *source_new(enum source_type type, const char *name)
{
	struct source *s = xcalloc(1, sizeof *s);
	s->type = type;
	s->name = xstrdup(name);
	s->id = (int)nsources;
	sources = xreallocarray(sources, nsources + 1, sizeof *sources);
	sources[nsources++] = s;
	return s;
}

size_t source_count(void)
{
	return nsources;
}

struct source *source_get(size_t i)
{
	return i < nsources ? sources[i] : NULL;
}

struct source *source_find(const char *name)
{
	for (size_t i = 0; i < nsources; i++)
		if (strcmp(sources[i]->name, name) == 0)
			return sources[i];
	return NULL;
}

void source_set_notice(struct source *src, const char *notice)
{
	free(src->notice);
	src->notice = xstrdup0(notice);
}

static void (*health_hook)(struct source *src, enum obj_kind kind);

void source_set_health_hook(void (*hook)(struct source *src, enum obj_kind kind))
{
	health_hook = hook;
}

void source_set_health(struct source *src, enum obj_kind kind, enum watch_state state, const char *message)
{
	struct watch_health *h = &src->health[kind];
	h->state = state;
	if (state == WATCH_LIVE)
		h->failed = WATCH_IDLE;
	else if (state == WATCH_RECONNECTING || state == WATCH_FORBIDDEN || state == WATCH_ERROR)
		h->failed = state;
	else if (state == WATCH_LOADING && message == NULL && h->failed != WATCH_IDLE)
		message = h->message; /* listing again after a failure: what failed still holds until it answers */
	if (message != h->message) {
		free(h->message);
		h->message = xstrdup0(message);
	}
	if (health_hook)
		health_hook(src, kind);
}

void source_close(struct source *src)
{
	if (src == NULL || src->closed)
		return;
	if (src->ops && src->ops->destroy)
		src->ops->destroy(src);
	src->ops = NULL;
	src->closed = true;
}

void source_free_all(void)
{
	for (size_t i = 0; i < nsources; i++) {
		struct source *s = sources[i];
		if (s->ops && s->ops->destroy && !s->closed)
			s->ops->destroy(s);
		for (int k = 0; k < OBJ_KIND_COUNT; k++)
			free(s->health[k].message);
		free(s->name);
		free(s->server);
		free(s->engine_uris);
		free(s->user);
		free(s->version);
		free(s->ns_scope);
		free(s->notice);
		free(s);
	}
	free(sources);
	sources = NULL;
	nsources = 0;
}

const char *watch_state_name(enum watch_state s)
{
	static const char *const names[] = { "idle", "loading", "live", "reconnecting", "forbidden", "error" };
	return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}
