/* model/pfspec.c: virtctl's port-forward, ssh and scp operands, and what is refused (anything a shell would read). */
#include "model/pfspec.h"

#include "t.h"

static void targets(void)
{
	struct pf_target t;
	char err[160];
	T_EQ_INT(pf_target_parse("vmi/web-00000.ns-00", false, &t, err, sizeof err), 0);
	T_EQ_INT(t.kind, KIND_VMI);
	T_EQ_STR(t.name, "web-00000");
	T_EQ_STR(t.ns, "ns-00");
	T_EQ_STR(t.user, "");
	T_EQ_INT(pf_target_parse("vm/web/ns-1", false, &t, err, sizeof err), 0);
	T_EQ_INT(t.kind, KIND_VM);
	T_EQ_STR(t.name, "web");
	T_EQ_STR(t.ns, "ns-1");
	/* the current form keeps a dotted name */
	T_EQ_INT(pf_target_parse("virtualmachineinstance/a.b/c", false, &t, err, sizeof err), 0);
	T_EQ_STR(t.name, "a.b");
	T_EQ_INT(pf_target_parse("vms/demo", false, &t, err, sizeof err), 0);
	T_EQ_STR(t.ns, "");
	T_EQ_INT(pf_target_parse("fedora@vmi/demo.default", true, &t, err, sizeof err), 0);
	T_EQ_STR(t.user, "fedora");
	T_EQ_STR(t.ns, "default");
	static const char *const bad[] = {
		"demo", "pod/demo", "/demo", "vmi/", "vmi/Demo", "vmi/-x", "vmi/x.", "vmi/x/", "vmi/x.NS",
		"vmi/x;rm", "vmi/x y", "vmi/$(id)", "vmi/x/ns/more", "@vmi/x", "-oProxyCommand=x@vmi/x", "a b@vmi/x",
		"vmi/x\n", "vmi/'x'",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = pf_target_parse(bad[i], true, &t, err, sizeof err);
		if (rc != -1)
			fprintf(stderr, "accepted: %s\n", bad[i]);
		T_EQ_INT(rc, -1);
		T_CHECK(err[0] != '\0');
	}
	T_EQ_INT(pf_target_parse("u@vmi/x", false, &t, err, sizeof err), -1); /* port-forward takes no user */
	/* untrusted text in the message is printable */
	pf_target_parse("vmi/\x1b[2J", false, &t, err, sizeof err);
	T_CHECK(strchr(err, 0x1b) == NULL);
}

static void ports(void)
{
	struct pf_port p;
	char err[160];
	T_EQ_INT(pf_port_parse("22", &p, err, sizeof err), 0);
	T_EQ_INT(p.local, 22);
	T_EQ_INT(p.remote, 22);
	T_CHECK(!p.udp);
	T_EQ_INT(pf_port_parse("0:8080", &p, err, sizeof err), 0);
	T_EQ_INT(p.local, 0);
	T_EQ_INT(p.remote, 8080);
	T_EQ_INT(pf_port_parse("udp/5353:53", &p, err, sizeof err), 0);
	T_CHECK(p.udp);
	T_EQ_INT(p.local, 5353);
	T_EQ_INT(pf_port_parse("tcp/65535", &p, err, sizeof err), 0);
	static const char *const bad[] = { "", "0", "65536", "1:0", "x", "22:", ":22", "-1", "sctp/22", "tcp/",
					   "22:33:44", "1e3", "+22", "999999" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		T_EQ_INT(pf_port_parse(bad[i], &p, err, sizeof err), -1);
}

static void scp_operands(void)
{
	struct pf_target t;
	const char *path = NULL;
	char err[160];
	T_EQ_INT(pf_scp_operand("fedora@vmi/demo.default:/etc/hosts", &t, &path, err, sizeof err), 1);
	T_EQ_STR(path, "/etc/hosts");
	T_EQ_STR(t.user, "fedora");
	T_EQ_INT(pf_scp_operand("vm/demo:", &t, &path, err, sizeof err), 1);
	T_EQ_STR(path, "");
	T_EQ_INT(pf_scp_operand("/tmp/file", &t, &path, err, sizeof err), 0);
	T_EQ_INT(pf_scp_operand("./dir/a:b", &t, &path, err, sizeof err), 0);
	T_EQ_INT(pf_scp_operand("host:/x", &t, &path, err, sizeof err), -1);
	T_EQ_INT(pf_scp_operand("user@host:x", &t, &path, err, sizeof err), -1);
	T_EQ_INT(pf_scp_operand("-oProxyCommand=x", &t, &path, err, sizeof err), -1);
	T_EQ_INT(pf_scp_operand("vmi/bad;x:/p", &t, &path, err, sizeof err), -1);
}

int main(void)
{
	targets();
	ports();
	scp_operands();
	return T_DONE();
}
