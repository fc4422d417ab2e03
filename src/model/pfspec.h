/* The operands of port-forward, ssh and scp as virtctl takes them, parsed without touching anything (unit tests
 * and tests/fuzz/fuzz_pfspec.c): a target [USER@]TYPE/NAME[.NS] or TYPE/NAME/NS (TYPE vm or vmi, any of the
 * registry's names for them), a port [PROTO/]LOCAL[:REMOTE], and scp's [USER@]TARGET:PATH. Everything accepted
 * is safe on a command line a shell reads (ssh runs its ProxyCommand through one): names are DNS-1123, a user
 * is [A-Za-z0-9._-] not starting with '-'. */
#ifndef KVCON_MODEL_PFSPEC_H
#define KVCON_MODEL_PFSPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "model/registry.h"

struct pf_target {
	enum kind_id kind; /* KIND_VM or KIND_VMI */
	char user[65];     /* "" when none */
	char name[254];
	char ns[64];       /* "" when not given: -n's, else the context's */
};

struct pf_port {
	int local;  /* 0: any free port */
	int remote; /* 1..65535 */
	bool udp;
};

/* 0, or -1 with err filled. with_user: a USER@ prefix is taken (ssh, scp), else refused. */
int pf_target_parse(const char *arg, bool with_user, struct pf_target *t, char *err, size_t errlen);
/* 0, or -1 with err filled. */
int pf_port_parse(const char *arg, struct pf_port *p, char *err, size_t errlen);
/* scp's operand: 1 when it names a guest (t filled, *path points into arg after the ':'), 0 when it is a local
 * path, -1 when it looks like a guest's but is malformed (err filled). */
int pf_scp_operand(const char *arg, struct pf_target *t, const char **path, char *err, size_t errlen);

#endif
