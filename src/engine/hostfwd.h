/* The pod network's forwarded host ports (domxml.h's fwds): chosen free on 127.0.0.1 by the engine, bound by
 * QEMU only later, when the worker adds the rules through QEMU's monitor while the guest is paused. Any local
 * user can bind a port in between; the worker then moves that rule to another free port (HOSTFWD_TRIES in
 * all) instead of failing the start, and reports the ports in use with the start's result. */
#ifndef KVCON_ENGINE_HOSTFWD_H
#define KVCON_ENGINE_HOSTFWD_H

#include <stdbool.h>

#include "engine/domxml.h"

#define HOSTFWD_TRIES 4

/* A socket bound to a free port of 127.0.0.1 (UDP or TCP), that port in *port: the caller holds it while it
 * chooses the others (no two the same), then closes it. -1 with errno. */
int hostfwd_free_port(bool udp, int *port);

/* QEMU's monitor: sends cmd; 0 with its answer in *answer (the caller frees it; NULL or blank: done), or -1
 * with *err when the command could not be sent. */
typedef int (*hostfwd_monitor_fn)(void *arg, const char *cmd, char **answer, char **err);

/* Adds p's forwarded ports through monitor. A rule QEMU refuses (an answer that is not blank: its host port
 * is taken) is tried again on another free port, HOSTFWD_TRIES times in all; p->fwds keep the ports in use.
 * 0, or -1 with *err (naming QEMU's last answer). */
int hostfwd_apply(struct domxml_plan *p, hostfwd_monitor_fn monitor, void *arg, char **err);

#endif
