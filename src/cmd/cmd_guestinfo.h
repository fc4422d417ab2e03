/* cmd_guestinfo: `kvcon guestosinfo|userlist|fslist NS/NAME` (or NAME with -n), as virtctl's: the VMI's guest
 * agent subresource of the registry's row (model/registry.h, enum guest_verb) fetched and printed as indented
 * JSON, every string made safe for a terminal (core/jout.h). The guest agent must be connected: the API's 409
 * comes through as the error. */
#ifndef KVCON_CMD_CMD_GUESTINFO_H
#define KVCON_CMD_CMD_GUESTINFO_H

int cmd_guestinfo(int argc, char **argv);

#endif
