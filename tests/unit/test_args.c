/* cmd/args and core/kargs: the one flag parser of the command table and the one duration type (virtctl's unit where
 * virtctl has the flag: console --timeout, and so engine console --timeout, counts minutes). */
#include <stdlib.h>
#include <string.h>

#include "cmd/args.h"
#include "cmd/cmd.h"
#include "core/kargs.h"
#include "core/opts.h"
#include "t.h"

static void test_duration(void)
{
	long ms = -1;
	T_EQ_INT(karg_duration("5", 60000, &ms), 0);
	T_EQ_INT(ms, 300000);
	T_EQ_INT(karg_duration("30s", 60000, &ms), 0);
	T_EQ_INT(ms, 30000);
	T_EQ_INT(karg_duration("1h30m", 1000, &ms), 0);
	T_EQ_INT(ms, 5400000);
	T_EQ_INT(karg_duration("1.5m", 1000, &ms), 0);
	T_EQ_INT(ms, 90000);
	T_EQ_INT(karg_duration("500ms", 1000, &ms), 0);
	T_EQ_INT(ms, 500);
	T_EQ_INT(karg_duration("0", 60000, &ms), 0);
	T_EQ_INT(ms, 0);
	const char *bad[] = { "", "5x", "-1", "abc", "2d", "1m-1s", "+5", "99999999h" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		T_EQ_INT(karg_duration(bad[i], 1000, &ms), -1);
}

static int parse(const char *verb, const char *const *words, struct args *a)
{
	char *argv[16];
	int argc = 0;
	argv[argc++] = (char *)verb;
	for (; *words; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	return args_parse(cmd_find(verb), argc, argv, a);
}

static void test_parse(void)
{
	struct args a;
	/* console --timeout counts minutes, as virtctl's (engine console parses with console's row) */
	T_EQ_INT(parse("console", (const char *[]){ "ns/vm", "--timeout", "1", NULL }, &a), ARGS_OK);
	T_EQ_INT(args_num(&a, "--timeout", -1), 60000);
	T_EQ_INT(a.npos, 1);
	T_EQ_STR(a.pos[0], "ns/vm");
	args_free(&a);
	T_EQ_INT(parse("console", (const char *[]){ "--timeout=30s", "ns/vm", NULL }, &a), ARGS_OK);
	T_EQ_INT(args_num(&a, "--timeout", -1), 30000);
	args_free(&a);
	T_EQ_INT(parse("console", (const char *[]){ "ns/vm", "--timeout", "5x", NULL }, &a), ARGS_ERR);
	args_free(&a);
	/* --expect/--send keep their order */
	T_EQ_INT(parse("console", (const char *[]){ "ns/vm", "--expect", "a", "--send", "b", "--expect", "c", NULL }, &a),
		 ARGS_OK);
	T_EQ_INT(a.nitems, 3);
	T_EQ_STR(a.items[1].f->l, "--send");
	T_EQ_STR(args_get(&a, "--expect"), "c");
	args_free(&a);
	/* kubectl's forms: -fp, -cNAME, --flag=false; a bad number; an unknown flag */
	T_EQ_INT(parse("logs", (const char *[]){ "-fp", "-cserial", "--timestamps=false", "ns/vm", NULL }, &a), ARGS_OK);
	T_CHECK(args_bool(&a, "--follow") && args_bool(&a, "--previous") && !args_bool(&a, "--timestamps"));
	T_EQ_STR(args_get(&a, "--container"), "serial");
	args_free(&a);
	T_EQ_INT(parse("stop", (const char *[]){ "ns/vm", "--grace-period", "x", NULL }, &a), ARGS_ERR);
	args_free(&a);
	T_EQ_INT(parse("start", (const char *[]){ "ns/vm", "--force", NULL }, &a), ARGS_ERR);
	args_free(&a);
	/* --wait alone: the verb's default; --wait=S: seconds */
	T_EQ_INT(parse("stop", (const char *[]){ "ns/vm", "--wait", NULL }, &a), ARGS_OK);
	T_CHECK(args_has(&a, "--wait") && args_num(&a, "--wait", 7) == 7);
	args_free(&a);
	T_EQ_INT(parse("stop", (const char *[]){ "ns/vm", "--wait=90", NULL }, &a), ARGS_OK);
	T_EQ_INT(args_num(&a, "--wait", 7), 90000);
	args_free(&a);
	/* --flag=false after --flag: as if not given (the last wins); said, for delete -f's --wait=false */
	T_EQ_INT(parse("stop", (const char *[]){ "ns/vm", "--force", "--force=false", "--wait", "--wait=false", NULL }, &a),
		 ARGS_OK);
	T_CHECK(!args_bool(&a, "--force") && !args_has(&a, "--wait") && args_off(&a, "--wait") && !args_off(&a, "--to"));
	args_free(&a);
	T_EQ_INT(parse("delete", (const char *[]){ "-f", "a.yaml", "--wait=true", "--dry-run", NULL }, &a), ARGS_OK);
	T_CHECK(args_has(&a, "--wait") && !args_off(&a, "--wait") && args_num(&a, "--wait", 7) == 7);
	T_EQ_STR(args_get(&a, "--dry-run"), "");
	args_free(&a);
	/* the verbs that parsed by hand: ssh -p is a number, engine serve's --idle-exit a duration in seconds */
	T_EQ_INT(parse("ssh", (const char *[]){ "-p", "x", "vm/a", NULL }, &a), ARGS_ERR);
	args_free(&a);
	T_EQ_INT(parse("ssh", (const char *[]){ "-p2222", "-t", "-4", "-t-v", "vm/a", NULL }, &a), ARGS_OK);
	T_CHECK(args_num(&a, "--port", 22) == 2222 && a.nitems == 3 && strcmp(a.items[2].val, "-v") == 0);
	args_free(&a);
	T_EQ_INT(parse("scp", (const char *[]){ "-c", "ls", "a", "b", NULL }, &a), ARGS_ERR);
	args_free(&a);
	char *serve[] = { (char *)"serve", (char *)"--idle-exit", (char *)"2m", (char *)"--https=0", NULL };
	T_EQ_INT(args_parse_sub("engine", 4, serve, &a), ARGS_OK);
	T_CHECK(args_num(&a, "--idle-exit", -1) == 120000 && args_num(&a, "--https", -1) == 0);
	args_free(&a);
}

/* main applies a global option through its row: every row but --help/--version has a setter, and each sets its
 * field */
static void test_globals(void)
{
	struct kvcon_opts o = { 0 };
	const char *err = NULL;
	for (const struct cmd_flag *g = cmd_globals; g->l; g++) {
		T_CHECK(g->set != NULL || g->becomes != NULL);
		if (g->set && strcmp(g->l, "--context") != 0)
			T_EQ_INT(g->set(&o, g, g->arg ? (strcmp(g->l, "--v") == 0 ? "4" : "x") : NULL, &err), 0);
	}
	T_CHECK(o.kubeconfig && o.ns && o.source && o.theme && o.log && strcmp(o.ns, "x") == 0);
	T_CHECK(o.all_ns && o.no_engine && o.readonly && o.nuris == 1 && strcmp(o.uris[0], "x") == 0);
	T_EQ_INT(o.verbose, 5); /* --v=4, then --verbose once */
	free(o.kubeconfig), free(o.ns), free(o.source), free(o.theme), free(o.log), free(o.uris[0]), free(o.uris);
}

int main(void)
{
	test_duration();
	test_parse();
	test_globals();
	return T_DONE();
}
