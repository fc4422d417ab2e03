/* The guest agent's answers as KubeVirt's API shows them (see gagent.h). */
#include "engine/gagent.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "core/xmalloc.h"
#include "model/registry.h"

static const char *const osinfo_cmds[] = {
	"{\"execute\":\"guest-info\"}",         "{\"execute\":\"guest-get-osinfo\"}",
	"{\"execute\":\"guest-get-host-name\"}", "{\"execute\":\"guest-get-timezone\"}",
	"{\"execute\":\"guest-get-users\"}",     "{\"execute\":\"guest-get-fsinfo\"}",
	"{\"execute\":\"guest-fsfreeze-status\"}",
};
static const char *const users_cmds[] = { "{\"execute\":\"guest-get-users\"}" };
static const char *const fs_cmds[] = { "{\"execute\":\"guest-get-fsinfo\"}" };
static const char *const status_cmds[] = {
	"{\"execute\":\"guest-info\"}",
	"{\"execute\":\"guest-get-osinfo\"}",
	"{\"execute\":\"guest-network-get-interfaces\"}",
};
enum { OS_INFO, OS_OSINFO, OS_HOST, OS_TZ, OS_USERS, OS_FS, OS_FREEZE };
enum { ST_INFO, ST_OSINFO, ST_IFACES };

int gagent_what_of(const char *sub)
{
	static const enum guest_verb gv[] = { [GA_OSINFO] = GV_GUESTOSINFO, [GA_USERLIST] = GV_USERLIST,
					      [GA_FSLIST] = GV_FSLIST };
	for (int w = 0; sub && w < (int)(sizeof gv / sizeof gv[0]); w++) {
		const struct guest_verb_def *d = registry_guest_verb(gv[w]);
		if (d && d->subresource && strcmp(d->subresource, sub) == 0)
			return w;
	}
	return -1;
}

const char *const *gagent_commands(enum gagent_what w, int *n)
{
#define CMDS(a) (*n = (int)(sizeof a / sizeof a[0]), a)
	switch (w) {
	case GA_OSINFO:
		return CMDS(osinfo_cmds);
	case GA_USERLIST:
		return CMDS(users_cmds);
	case GA_FSLIST:
		return CMDS(fs_cmds);
	case GA_STATUS:
		return CMDS(status_cmds);
	default:
		*n = 0;
		return NULL;
	}
#undef CMDS
}

/* the "return" of one answer (a reference into *root, which the caller puts), or NULL */
static json_object *ret_of(const char *answer, json_object **root)
{
	*root = NULL;
	if (answer == NULL || strlen(answer) > GAGENT_ANSWER_MAX)
		return NULL;
	struct json_tokener *tok = json_tokener_new_ex(32);
	if (tok == NULL)
		return NULL;
	json_object *j = json_tokener_parse_ex(tok, answer, (int)strlen(answer));
	bool ok = j && json_tokener_get_error(tok) == json_tokener_success;
	json_tokener_free(tok);
	json_object *r = NULL;
	if (!ok || !json_object_is_type(j, json_type_object) || !json_object_object_get_ex(j, "return", &r)) {
		json_object_put(j);
		return NULL;
	}
	*root = j;
	return r;
}

/* a printable copy of a string field, at most GAGENT_STR_MAX bytes of it, or NULL when absent or not a string */
static char *field_str(json_object *o, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	size_t n = (size_t)json_object_get_string_len(v);
	char *cut = xstrndup(json_object_get_string(v), n < GAGENT_STR_MAX ? n : GAGENT_STR_MAX);
	char *s = util_escape_display(cut);
	free(cut);
	return s;
}

static void put_str(json_object *o, const char *k, json_object *from, const char *fk)
{
	char *s = field_str(from, fk);
	if (s)
		json_object_object_add(o, k, json_object_new_string(s));
	free(s);
}

/* a whole number field >= 0, or -1 */
static long long field_count(json_object *o, const char *k)
{
	json_object *v;
	if (!json_object_object_get_ex(o, k, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	long long n = (long long)json_object_get_int64(v);
	return n < 0 ? -1 : n;
}

static json_object *array_of(json_object *r)
{
	return r && json_object_is_type(r, json_type_array) ? r : NULL;
}

static size_t items(json_object *a)
{
	size_t n = a ? json_object_array_length(a) : 0;
	return n < GAGENT_ITEMS_MAX ? n : GAGENT_ITEMS_MAX;
}

/* guest-get-users -> [VirtualMachineInstanceGuestOSUser] */
static json_object *users_json(json_object *r)
{
	json_object *out = json_object_new_array(), *a = array_of(r);
	for (size_t i = 0; i < items(a); i++) {
		json_object *u = json_object_array_get_idx(a, i), *t;
		char *name = json_object_is_type(u, json_type_object) ? field_str(u, "user") : NULL;
		if (name == NULL)
			continue;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "userName", json_object_new_string(name));
		free(name);
		char *dom = field_str(u, "domain");
		json_object_object_add(o, "domain", json_object_new_string(dom ? dom : ""));
		free(dom);
		if (json_object_object_get_ex(u, "login-time", &t) &&
		    (json_object_is_type(t, json_type_double) || json_object_is_type(t, json_type_int))) {
			double lt = json_object_get_double(t);
			if (isfinite(lt) && lt >= 0)
				json_object_object_add(o, "loginTime", json_object_new_double(lt));
		}
		json_object_array_add(out, o);
	}
	return out;
}

/* guest-get-fsinfo -> [VirtualMachineInstanceFileSystem] */
static json_object *fs_json(json_object *r)
{
	json_object *out = json_object_new_array(), *a = array_of(r);
	for (size_t i = 0; i < items(a); i++) {
		json_object *f = json_object_array_get_idx(a, i), *d;
		if (!json_object_is_type(f, json_type_object))
			continue;
		json_object *o = json_object_new_object();
		put_str(o, "diskName", f, "name");
		put_str(o, "mountPoint", f, "mountpoint");
		put_str(o, "fileSystemType", f, "type");
		long long used = field_count(f, "used-bytes"), total = field_count(f, "total-bytes");
		if (used >= 0)
			json_object_object_add(o, "usedBytes", json_object_new_int64(used));
		if (total >= 0)
			json_object_object_add(o, "totalBytes", json_object_new_int64(total));
		json_object *disks = json_object_new_array(), *da = json_object_object_get_ex(f, "disk", &d) ? array_of(d) : NULL;
		for (size_t k = 0; k < items(da); k++) {
			json_object *e = json_object_array_get_idx(da, k);
			if (!json_object_is_type(e, json_type_object))
				continue;
			json_object *x = json_object_new_object();
			put_str(x, "serial", e, "serial");
			put_str(x, "busType", e, "bus-type");
			json_object_array_add(disks, x);
		}
		json_object_object_add(o, "disk", disks);
		json_object_array_add(out, o);
	}
	return out;
}

/* guest-get-osinfo -> VirtualMachineInstanceGuestOSInfo */
static json_object *os_json(json_object *r)
{
	json_object *o = json_object_new_object();
	if (r == NULL || !json_object_is_type(r, json_type_object))
		return o;
	static const char *const map[][2] = { { "name", "name" },
					      { "kernelRelease", "kernel-release" },
					      { "version", "version" },
					      { "prettyName", "pretty-name" },
					      { "versionId", "version-id" },
					      { "kernelVersion", "kernel-version" },
					      { "machine", "machine" },
					      { "id", "id" } };
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		put_str(o, map[i][0], r, map[i][1]);
	return o;
}

/* guest-info -> version and [GuestAgentCommandInfo] */
static json_object *commands_json(json_object *r)
{
	json_object *out = json_object_new_array(), *sc;
	json_object *a = r && json_object_is_type(r, json_type_object) &&
				 json_object_object_get_ex(r, "supported_commands", &sc) ? array_of(sc) : NULL;
	for (size_t i = 0; i < items(a); i++) {
		json_object *c = json_object_array_get_idx(a, i), *en;
		char *name = json_object_is_type(c, json_type_object) ? field_str(c, "name") : NULL;
		if (name == NULL)
			continue;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "name", json_object_new_string(name));
		free(name);
		if (json_object_object_get_ex(c, "enabled", &en) && json_object_is_type(en, json_type_boolean))
			json_object_object_add(o, "enabled", json_object_new_boolean(json_object_get_boolean(en)));
		json_object_array_add(out, o);
	}
	return out;
}

/* guest-network-get-interfaces -> [{interfaceName, mac, ipAddresses}] (addresses without their prefix) */
static json_object *ifaces_json(json_object *r)
{
	json_object *out = json_object_new_array(), *a = array_of(r);
	for (size_t i = 0; i < items(a); i++) {
		json_object *f = json_object_array_get_idx(a, i), *ips;
		char *name = json_object_is_type(f, json_type_object) ? field_str(f, "name") : NULL;
		if (name == NULL)
			continue;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "interfaceName", json_object_new_string(name));
		free(name);
		put_str(o, "mac", f, "hardware-address");
		json_object *addrs = json_object_new_array();
		json_object *ia = json_object_object_get_ex(f, "ip-addresses", &ips) ? array_of(ips) : NULL;
		for (size_t k = 0; k < items(ia); k++) {
			json_object *e = json_object_array_get_idx(ia, k);
			char *ip = json_object_is_type(e, json_type_object) ? field_str(e, "ip-address") : NULL;
			if (ip && ip[0] && strspn(ip, "0123456789abcdefABCDEF.:") == strlen(ip))
				json_object_array_add(addrs, json_object_new_string(ip));
			free(ip);
		}
		json_object_object_add(o, "ipAddresses", addrs);
		json_object_array_add(out, o);
	}
	return out;
}

static json_object *list_of(json_object *items_arr)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "items", items_arr);
	return o;
}

json_object *gagent_build(enum gagent_what w, const char *const *answers, int n, char **err)
{
	int need;
	gagent_commands(w, &need);
	if (n < need || need == 0) {
		*err = xstrdup("the guest agent gave no answer");
		return NULL;
	}
	json_object *roots[8] = { 0 }, *r[8] = { 0 };
	for (int i = 0; i < need && i < 8; i++)
		r[i] = ret_of(answers[i], &roots[i]);
	json_object *out = NULL;
	switch (w) {
	case GA_USERLIST:
		if (r[0])
			out = list_of(users_json(r[0]));
		break;
	case GA_FSLIST:
		if (r[0])
			out = list_of(fs_json(r[0]));
		break;
	case GA_OSINFO:
	case GA_STATUS: {
		int info = w == GA_OSINFO ? OS_INFO : ST_INFO, osi = w == GA_OSINFO ? OS_OSINFO : ST_OSINFO;
		if (r[info] == NULL && r[osi] == NULL)
			break;
		out = json_object_new_object();
		if (r[info] && json_object_is_type(r[info], json_type_object))
			put_str(out, w == GA_OSINFO ? "guestAgentVersion" : "version", r[info], "version");
		if (w == GA_STATUS) {
			json_object_object_add(out, "guestOSInfo", os_json(r[osi]));
			json_object_object_add(out, "interfaces", ifaces_json(r[ST_IFACES]));
			break;
		}
		json_object_object_add(out, "supportedCommands", commands_json(r[info]));
		if (r[OS_HOST] && json_object_is_type(r[OS_HOST], json_type_object))
			put_str(out, "hostname", r[OS_HOST], "host-name");
		json_object_object_add(out, "os", os_json(r[osi]));
		if (r[OS_TZ] && json_object_is_type(r[OS_TZ], json_type_object)) {
			char *zone = field_str(r[OS_TZ], "zone");
			json_object *off;
			long long o = json_object_object_get_ex(r[OS_TZ], "offset", &off) &&
					      json_object_is_type(off, json_type_int) ? (long long)json_object_get_int64(off) : 0;
			if (o < -86400 || o > 86400)
				o = 0;
			char *tz = xasprintf("%s, %lld", zone ? zone : "", o); /* virt-handler's "NAME, OFFSET" */
			json_object_object_add(out, "timezone", json_object_new_string(tz));
			free(tz);
			free(zone);
		}
		if (r[OS_USERS])
			json_object_object_add(out, "userList", users_json(r[OS_USERS]));
		if (r[OS_FS]) {
			json_object *fi = json_object_new_object();
			json_object_object_add(fi, "disks", fs_json(r[OS_FS]));
			json_object_object_add(out, "fsInfo", fi);
		}
		if (r[OS_FREEZE] && json_object_is_type(r[OS_FREEZE], json_type_string)) {
			const char *s = json_object_get_string(r[OS_FREEZE]);
			if (strcmp(s, "thawed") == 0 || strcmp(s, "frozen") == 0)
				json_object_object_add(out, "fsFreezeStatus", json_object_new_string(s));
		}
		break;
	}
	default:
		break;
	}
	for (int i = 0; i < 8; i++)
		json_object_put(roots[i]);
	if (out == NULL)
		*err = xstrdup("the guest agent's answer could not be read");
	return out;
}
