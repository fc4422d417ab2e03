/* `:node` and `:vmim`: nodes (Ready, schedulable for VMs, KVM capacity, VMIs on each) and live migrations (phase,
 * VMI, source, target, start, duration) listed from the clusters' APIs; enter drills down to the VMs. */
#ifndef KVCON_UI_CLUSTERLIST_H
#define KVCON_UI_CLUSTERLIST_H

#include "ui/view.h"

struct view *clusterlist_nodes_new(void);
struct view *clusterlist_vmims_new(void);
const struct view_key *clusterlist_node_keys(void);
const struct view_key *clusterlist_vmim_keys(void);
/* `:pvc` and `:dv`: PersistentVolumeClaims and CDI DataVolumes; enter shows the object's YAML. */
struct view *clusterlist_pvcs_new(void);
struct view *clusterlist_dvs_new(void);
const struct view_key *clusterlist_storage_keys(void);
/* `:vmirs`: VirtualMachineInstanceReplicaSets with their members */
struct view *clusterlist_vmirs_new(void);
const struct view_key *clusterlist_vmirs_keys(void);

#endif
