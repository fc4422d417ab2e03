/* The engine's durable records of its VMs (record.c): one JSON file per VM under the host's records directory,
 * written atomically and fsync'd before the engine acts on a change, read back when a host connects; unreadable
 * ones are kept untouched and reported. Loop thread only. */
#ifndef KVCON_ENGINE_RECORD_H
#define KVCON_ENGINE_RECORD_H

#include <stdbool.h>

struct evm;
struct ehost;
struct host_msg;

/* The record as JSON text (caller frees). */
char *record_dump(const struct evm *v);
/* Fills v from a record (v->eh set by the caller). 0, or -1 with *err. */
int record_load(struct evm *v, const char *json, char **err);

/* The path of v's record (caller frees). */
char *record_path(const struct evm *v);
/* Removes a record durably (the directory fsync'd). */
void record_unlink(const char *path);
/* Loads every record of the host's records directory. */
void record_load_all(struct ehost *eh);
/* The directory name of a host's records, from its URI and the name its daemon reports (caller frees). */
char *record_host_key(const char *uri, const char *name);
/* Moves the records earlier versions kept under hosts/NAME/vms (keyed by host name only) that are this host's
 * into its own directory hosts/KEY (dd: the data directory). */
void record_adopt_old(struct ehost *eh, const char *dd, const char *name, const char *key);
/* Unreadable records: logged with the domains a sync reports for them, and the host's notice; unreadable
 * record i forgotten when its file is gone (true). */
void record_check_bad(struct ehost *eh, const struct host_msg *m);
bool record_forget_bad(struct ehost *eh, int i);

#endif
