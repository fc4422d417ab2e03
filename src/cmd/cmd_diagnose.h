/* CLI commands about one VM: `kvcon diagnose`, `kvcon lineage` and the lifecycle actions (start, stop,
 * restart, ...: the actions of model/registry.c). Each lists and watches the VM's namespace briefly (until the reflectors
 * are live) so the store, the chain and the lineage are filled, then answers or acts through the source's
 * provider_ops. */
#ifndef KVCON_CMD_CMD_DIAGNOSE_H
#define KVCON_CMD_CMD_DIAGNOSE_H

/* kvcon diagnose NS/NAME [-o text|json]: exit 0 healthy or intentionally stopped, 3 stalled, 1 API error. */
int cmd_diagnose(int argc, char **argv);
/* kvcon lineage NS/NAME [-o text|json]: the VM's recorded executions. */
int cmd_lineage(int argc, char **argv);
/* kvcon ACTION NS/NAME (an action verb of model/registry.c) [--force] [--grace-period N] [--to NODE] [--abort]
 * [--wait[=SECONDS]]: argv[0] names the action. */
int cmd_action(int argc, char **argv);

#endif
