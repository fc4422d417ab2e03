/* The engine service's responses: JSON and text bodies, and the API server's Status objects (404, 409, 422 with
 * its causes, ...), worded as kube-apiserver words them so that kubectl prints the same lines. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "core/buf.h"
#include "core/hmap.h"
#include "core/intern.h"
#include "core/log.h"
#include "core/loop.h"
#include "core/opts.h"
#include "core/trust.h"
#include "core/util.h"
#include "core/version.h"
#include "core/xmalloc.h"
#include "core/ydoc.h"
#include "engine/apisel.h"
#include "engine/apitls.h"
#include "engine/engine.h"
#include "engine/evm.h"
#include "engine/manifest.h"
#include "engine/migrate.h"
#include "kube/wsframe.h"
#include "model/columns.h"
#include "model/objjson.h"
#include "model/registry.h"
#include "model/source.h"
#include "model/store.h"

/* ---- responses ---- */

enum MHD_Result apis_send_text(struct MHD_Connection *c, unsigned code, char *text, const char *ctype)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", ctype);
	MHD_add_response_header(r, "Cache-Control", "no-cache, private");
	enum MHD_Result rc = MHD_queue_response(c, code, r);
	MHD_destroy_response(r);
	return rc;
}

enum MHD_Result apis_send_json(struct MHD_Connection *c, unsigned code, json_object *o)
{
	char *t = apis_jtext(o);
	json_object_put(o);
	return apis_send_text(c, code, t, "application/json");
}

static const char *reason_of(unsigned code)
{
	switch (code) {
	case 400:
		return "BadRequest";
	case 401:
		return "Unauthorized";
	case 404:
		return "NotFound";
	case 405:
		return "MethodNotAllowed";
	case 406:
		return "NotAcceptable";
	case 409:
		return "Conflict";
	case 410:
		return "Expired";
	case 413:
		return "RequestEntityTooLarge";
	case 415:
		return "UnsupportedMediaType";
	case 422:
		return "Invalid";
	default:
		return "InternalError";
	}
}

static json_object *status_json(unsigned code, const char *reason, const char *msg, enum res r, const char *name)
{
	json_object *s = json_object_new_object();
	json_object_object_add(s, "kind", apis_jstr("Status"));
	json_object_object_add(s, "apiVersion", apis_jstr("v1"));
	json_object_object_add(s, "metadata", json_object_new_object());
	json_object_object_add(s, "status", apis_jstr("Failure"));
	json_object_object_add(s, "message", apis_jstr(msg));
	json_object_object_add(s, "reason", apis_jstr(reason ? reason : reason_of(code)));
	if (name && r < R_COUNT) {
		json_object *d = json_object_new_object();
		json_object_object_add(d, "name", apis_jstr(name));
		json_object_object_add(d, "group", apis_jstr(RES[r].group));
		json_object_object_add(d, "kind", apis_jstr(RES[r].plural));
		json_object_object_add(s, "details", d);
	}
	json_object_object_add(s, "code", json_object_new_int((int)code));
	return s;
}

enum MHD_Result apis_send_status(struct MHD_Connection *c, unsigned code, const char *reason, enum res r,
				   const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	va_end(ap);
	enum MHD_Result rc = apis_send_json(c, code, status_json(code, reason, msg ? msg : "error", r, name));
	free(msg);
	return rc;
}

/* 422 as the API server words it: details.kind is the Kind and each cause names its field, so that kubectl prints
 * `The VirtualMachine "x" is invalid: spec.field: reason`. why is the engine's "field.path: reason". */
enum MHD_Result apis_send_invalid(struct MHD_Connection *c, const char *name, const char *why)
{
	return apis_send_invalid_res(c, R_VM, name, why);
}

enum MHD_Result apis_send_invalid_res(struct MHD_Connection *c, enum res r, const char *name, const char *why)
{
	const char *g = RES[r].group;
	char *msg = xasprintf("%s%s%s \"%s\" is invalid: %s", RES[r].kind, *g ? "." : "", g, name, why);
	json_object *s = status_json(422, "Invalid", msg, R_COUNT, NULL);
	json_object *d = json_object_new_object(), *causes = json_object_new_array(), *cause = json_object_new_object();
	json_object_object_add(d, "name", apis_jstr(name));
	json_object_object_add(d, "group", apis_jstr(g));
	json_object_object_add(d, "kind", apis_jstr(RES[r].kind));
	const char *sep = strstr(why, ": ");
	char *field = sep ? xstrndup(why, (size_t)(sep - why)) : NULL;
	json_object_object_add(cause, "reason", apis_jstr("FieldValueInvalid"));
	json_object_object_add(cause, "message", apis_jstr(sep ? sep + 2 : why));
	if (field && strchr(field, ' ') == NULL)
		json_object_object_add(cause, "field", apis_jstr(field));
	else
		json_object_object_add(cause, "message", apis_jstr(why));
	json_object_array_add(causes, cause);
	json_object_object_add(d, "causes", causes);
	json_object_object_add(s, "details", d);
	free(field);
	free(msg);
	return apis_send_json(c, 422, s);
}

enum MHD_Result apis_not_found(struct MHD_Connection *c, enum res r, const char *name)
{
	const char *g = RES[r].group;
	return apis_send_status(c, 404, "NotFound", r, name, "%s%s%s \"%s\" not found", RES[r].plural, *g ? "." : "", g,
			   name);
}

const char *apis_arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

/* metav1.Status Success, the answer of an accepted eviction */
json_object *apis_status_success(void)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "kind", json_object_new_string("Status"));
	json_object_object_add(o, "apiVersion", json_object_new_string("v1"));
	json_object_object_add(o, "metadata", json_object_new_object());
	json_object_object_add(o, "status", json_object_new_string("Success"));
	return o;
}
