/* The engine's settings as every kvcon executable reads them, without the engine: the config file's engine.* keys
 * (with their environment variables), the engine's data directories and default URI, the config's engine.host
 * lines, and whether this machine keeps a record of a VM. kvcon reads them to reach the engine service
 * (service.h); kvcon-engine's engine reads them to run. Caller frees what is returned unless said otherwise. */
#ifndef KVCON_SERVICE_SETTINGS_H
#define KVCON_SERVICE_SETTINGS_H

#include <stdbool.h>

/* A setting: $env when set and not empty, else the first "key = value" of the config file, else NULL. */
char *engine_setting(const char *env, const char *key);
/* kvcon keeps the record of VM ns/name (NULL, NULL: of any VM) of some engine host on this machine (a command
 * then looks on the engine too); reads the state directory only. */
bool engine_has_record(const char *ns, const char *name);

/* $XDG_STATE_HOME/kvcon/engine-data */
char *esettings_data_dir(void);
/* $KVCON_ENGINE_URI, else $LIBVIRT_DEFAULT_URI, else qemu:///embed?root=$XDG_STATE_HOME/kvcon/engine */
char *esettings_default_uri(void);
/* $env, else the config's engine.images or engine.volumes (sub "images" or "volumes"), else engine-data/SUB */
char *esettings_dir(const char *env, const char *sub);
/* The config's engine.allow-host-path directories. NULL-terminated, never NULL: free with esettings_values_free */
char **esettings_host_roots(void);
void esettings_values_free(char **vals);
/* engine-data/imgcache: the containerDisks pulled from registries */
char *esettings_image_cache(void);

/* ---- the config's engine.host = URI [migrate-uri=URI] lines (repeatable) ---- */
/* The migration URI configured for a host, or NULL. */
const char *migrate_uri_for(const char *uri, const char *name);
/* Whether uri is an engine.host URI or a migrate-uri= of the config file (which config_load read only because no
 * other user can have written it): what an API client may name as a migration URI. A libvirt URI can make libvirt
 * run a program (qemu+ext://...?command=, netcat=): only the host's owner chooses one. */
bool migrate_uri_configured(const char *uri);
/* The engine host URIs of the config file; NULL-terminated, NULL when none. Static storage. */
char *const *migrate_config_hosts(void);

#endif
