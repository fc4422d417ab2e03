/* kvcon's version: `kvcon version` prints it, the engine service's KubeVirt CR and /version report it. */
#ifndef KVCON_CORE_VERSION_H
#define KVCON_CORE_VERSION_H

#ifndef KVCON_VERSION
#define KVCON_VERSION "0.1.0"
#endif

#endif
