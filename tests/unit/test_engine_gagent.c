/* engine/gagent.c: qemu-guest-agent's answers (as the lab guest's agent gave them) turned into virt-api's shapes,
 * and a hostile agent's answers bounded, typed and made printable. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xmalloc.h"
#include "engine/gagent.h"
#include "t.h"

static const char *path_str(json_object *j, const char *a, const char *b)
{
	json_object *x = NULL, *y = NULL;
	if (!json_object_object_get_ex(j, a, &x))
		return NULL;
	if (b == NULL)
		return json_object_get_string(x);
	return json_object_object_get_ex(x, b, &y) ? json_object_get_string(y) : NULL;
}

static void test_subresources(void)
{
	T_EQ_INT(gagent_what_of("guestosinfo"), GA_OSINFO);
	T_EQ_INT(gagent_what_of("userlist"), GA_USERLIST);
	T_EQ_INT(gagent_what_of("filesystemlist"), GA_FSLIST);
	T_EQ_INT(gagent_what_of("console"), -1);
	T_EQ_INT(gagent_what_of(NULL), -1);
	int n = 0;
	const char *const *c = gagent_commands(GA_OSINFO, &n);
	T_CHECK(n >= 4 && strstr(c[0], "guest-info") && strstr(c[1], "guest-get-osinfo"));
}

static void test_osinfo(void)
{
	const char *a[] = {
		"{\"return\": {\"version\": \"7.2.22\", \"supported_commands\": [{\"enabled\": true, \"name\": \"guest-get-osinfo\", "
		"\"success-response\": true}, {\"enabled\": false, \"name\": \"guest-exec\"}]}}",
		"{\"return\": {\"name\": \"kvcon lab guest\", \"kernel-release\": \"6.1.0-57-cloud-amd64\", \"version\": \"1 (ssh)\", "
		"\"pretty-name\": \"kvcon lab guest 1 (ssh)\", \"version-id\": \"1\", \"machine\": \"x86_64\", \"id\": \"kvcon-lab\"}}",
		"{\"return\": {\"host-name\": \"guest\"}}",
		"{\"return\": {\"zone\": \"UTC\", \"offset\": 0}}",
		"{\"return\": [{\"user\": \"root\", \"login-time\": 1764753600.5}]}",
		"{\"return\": [{\"name\": \"vda1\", \"mountpoint\": \"/\", \"type\": \"ext4\", \"used-bytes\": 10, \"total-bytes\": 100, "
		"\"disk\": [{\"serial\": \"abc\", \"bus-type\": \"virtio\", \"dev\": \"/dev/vda1\"}]}]}",
		NULL, /* guest-fsfreeze-status failed */
	};
	char *err = NULL;
	json_object *j = gagent_build(GA_OSINFO, a, 7, &err);
	T_CHECK(j != NULL);
	if (j == NULL)
		return;
	T_EQ_STR(path_str(j, "guestAgentVersion", NULL), "7.2.22");
	T_EQ_STR(path_str(j, "hostname", NULL), "guest");
	T_EQ_STR(path_str(j, "timezone", NULL), "UTC, 0");
	T_EQ_STR(path_str(j, "os", "prettyName"), "kvcon lab guest 1 (ssh)");
	T_EQ_STR(path_str(j, "os", "kernelRelease"), "6.1.0-57-cloud-amd64");
	T_EQ_STR(path_str(j, "os", "id"), "kvcon-lab");
	json_object *sc, *ul, *fi, *x;
	T_CHECK(json_object_object_get_ex(j, "supportedCommands", &sc) && json_object_array_length(sc) == 2);
	T_CHECK(json_object_object_get_ex(j, "userList", &ul) && json_object_array_length(ul) == 1);
	T_EQ_STR(path_str(json_object_array_get_idx(ul, 0), "userName", NULL), "root");
	T_CHECK(json_object_object_get_ex(j, "fsInfo", &fi) && json_object_object_get_ex(fi, "disks", &x) &&
		json_object_array_length(x) == 1);
	T_EQ_STR(path_str(json_object_array_get_idx(x, 0), "mountPoint", NULL), "/");
	T_CHECK(!json_object_object_get_ex(j, "fsFreezeStatus", &x)); /* failed: left out */
	json_object_put(j);

	/* guest-info and guest-get-osinfo both failed: no answer */
	const char *none[7] = { 0 };
	T_CHECK(gagent_build(GA_OSINFO, none, 7, &err) == NULL && err != NULL);
	free(err);
}

static void test_lists(void)
{
	const char *u[] = { "{\"return\": [{\"user\": \"cirros\", \"domain\": \"\", \"login-time\": 5}, {\"login-time\": 1}]}" };
	char *err = NULL;
	json_object *j = gagent_build(GA_USERLIST, u, 1, &err), *items;
	T_CHECK(j && json_object_object_get_ex(j, "items", &items) && json_object_array_length(items) == 1);
	json_object_put(j);
	const char *f[] = { "{\"return\": []}" };
	j = gagent_build(GA_FSLIST, f, 1, &err);
	T_CHECK(j && json_object_object_get_ex(j, "items", &items) && json_object_array_length(items) == 0);
	json_object_put(j);
	const char *bad[] = { "{\"error\": {\"class\": \"GenericError\", \"desc\": \"no\"}}" };
	T_CHECK(gagent_build(GA_USERLIST, bad, 1, &err) == NULL);
	free(err);
	err = NULL;
	T_CHECK(gagent_build(GA_USERLIST, bad, 0, &err) == NULL); /* fewer answers than commands */
	free(err);
}

/* what a hostile guest can send: escape sequences, wrong types, huge strings and lists */
static void test_hostile(void)
{
	char *big = xmalloc(GAGENT_ANSWER_MAX + 64);
	int off = snprintf(big, 64, "{\"return\": {\"name\": \"");
	memset(big + off, 'a', GAGENT_ANSWER_MAX);
	strcpy(big + off + GAGENT_ANSWER_MAX, "\"}}");
	const char *a[] = {
		"{\"return\": {\"version\": 7, \"supported_commands\": \"no\"}}",
		"{\"return\": {\"name\": \"evil\\u001b]0;owned\\u0007\\u001b[2J\", \"pretty-name\": [1, 2], "
		"\"kernel-release\": \"\\u009b31m\"}}",
		"{\"return\": {\"host-name\": 42}}",
		"{\"return\": {\"zone\": \"\\u001b[31mX\", \"offset\": 99999999999}}",
		"{\"return\": 1}",
		big,
		"{\"return\": \"melted\"}",
	};
	char *err = NULL;
	json_object *j = gagent_build(GA_OSINFO, a, 7, &err), *x;
	T_CHECK(j != NULL);
	if (j) {
		const char *name = path_str(j, "os", "name");
		T_CHECK(name && strchr(name, 0x1b) == NULL && strchr(name, 0x07) == NULL && strstr(name, "evil"));
		const char *kr = path_str(j, "os", "kernelRelease");
		T_CHECK(kr && strstr(kr, "\xc2\x9b") == NULL);
		T_CHECK(path_str(j, "os", "prettyName") == NULL); /* not a string: left out */
		T_CHECK(!json_object_object_get_ex(j, "guestAgentVersion", &x));
		T_CHECK(!json_object_object_get_ex(j, "hostname", &x));
		const char *tz = path_str(j, "timezone", NULL);
		T_CHECK(tz && strchr(tz, 0x1b) == NULL && strstr(tz, ", 0"));
		T_CHECK(json_object_object_get_ex(j, "userList", &x) && json_object_array_length(x) == 0);
		T_CHECK(!json_object_object_get_ex(j, "fsInfo", &x)); /* the answer was over the bound */
		T_CHECK(!json_object_object_get_ex(j, "fsFreezeStatus", &x));
		json_object_put(j);
	}
	/* a long string is cut, a long list too */
	size_t cap = 64 + (GAGENT_ITEMS_MAX + 10) * 32;
	char *many = xmalloc(cap), *p = many;
	p += sprintf(p, "{\"return\": [");
	for (int i = 0; i < GAGENT_ITEMS_MAX + 10; i++)
		p += sprintf(p, "%s{\"user\": \"u%d\"}", i ? "," : "", i);
	strcpy(p, "]}");
	const char *u[] = { many };
	j = gagent_build(GA_USERLIST, u, 1, &err);
	T_CHECK(j && json_object_object_get_ex(j, "items", &x) && json_object_array_length(x) == GAGENT_ITEMS_MAX);
	json_object_put(j);
	memset(big + off, 'a', GAGENT_STR_MAX * 3);
	strcpy(big + off + GAGENT_STR_MAX * 3, "\"}}");
	const char *o[] = { NULL, big, NULL, NULL, NULL, NULL, NULL };
	j = gagent_build(GA_OSINFO, o, 7, &err);
	T_CHECK(j && strlen(path_str(j, "os", "name")) == GAGENT_STR_MAX);
	json_object_put(j);
	free(many);
	free(big);
}

static void test_status(void)
{
	const char *a[] = {
		"{\"return\": {\"version\": \"7.2.22\", \"supported_commands\": []}}",
		"{\"return\": {\"name\": \"kvcon lab guest\", \"pretty-name\": \"kvcon lab guest 1 (ssh)\"}}",
		"{\"return\": [{\"name\": \"eth0\", \"hardware-address\": \"52:54:00:12:34:56\", \"ip-addresses\": ["
		"{\"ip-address-type\": \"ipv4\", \"ip-address\": \"10.0.2.15\", \"prefix\": 24},"
		"{\"ip-address-type\": \"ipv4\", \"ip-address\": \"1.2.3.4; rm -rf /\", \"prefix\": 24}]}]}",
	};
	char *err = NULL;
	json_object *j = gagent_build(GA_STATUS, a, 3, &err), *ifs, *ips;
	T_CHECK(j != NULL);
	if (j == NULL)
		return;
	T_EQ_STR(path_str(j, "version", NULL), "7.2.22");
	T_EQ_STR(path_str(j, "guestOSInfo", "prettyName"), "kvcon lab guest 1 (ssh)");
	T_CHECK(json_object_object_get_ex(j, "interfaces", &ifs) && json_object_array_length(ifs) == 1);
	json_object *e = json_object_array_get_idx(ifs, 0);
	T_EQ_STR(path_str(e, "interfaceName", NULL), "eth0");
	T_CHECK(json_object_object_get_ex(e, "ipAddresses", &ips) && json_object_array_length(ips) == 1);
	json_object_put(j);
}

int main(void)
{
	test_subresources();
	test_osinfo();
	test_lists();
	test_hostile();
	test_status();
	return T_DONE();
}
