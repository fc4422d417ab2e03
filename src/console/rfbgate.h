/* rfbgate: the RFB (VNC) security handshake of kvcon's display proxy (`kvcon vnc --proxy-only`), with no I/O.
 *
 * A TCP listener on 127.0.0.1 is reachable by every local user, so the proxy never hands a display to a viewer
 * that has not proved it knows a password (issue 14): toward the viewer the gate is an RFB server offering only
 * VNC authentication (type 2, a DES challenge); only once the viewer passed does the proxy open the display, and
 * the gate then speaks the client half of the handshake to it (None where offered, VNC authentication with the
 * upstream password otherwise). After both halves the bytes are relayed untouched (ClientInit, ServerInit and the
 * rest of the session are the same in every protocol version).
 *
 * The caller feeds the bytes of each side and sends what the gate queued in to_viewer / to_display.
 * RFB 3.3, 3.7 and 3.8 are understood on both sides. */
#ifndef KVCON_CONSOLE_RFBGATE_H
#define KVCON_CONSOLE_RFBGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define RFBGATE_PASSWORD_LEN 8 /* VNC authentication uses at most 8 bytes of a password */

enum rfbgate_step {
	RFBGATE_MORE,         /* nothing to do but send the queued bytes and wait for more */
	RFBGATE_OPEN_DISPLAY, /* the viewer authenticated: open the display and feed its bytes */
	RFBGATE_RELAY,        /* both halves done: relay everything from now on (to_display holds the viewer's
				 early bytes, to_viewer the display's) */
	RFBGATE_FAIL,         /* see rfbgate_error(); close both sides after sending the queued bytes */
};

struct rfbgate;

/* listen_pw: what the viewer must know (NUL-terminated, at most 8 bytes used); display_pw: the display's own
 * password or NULL. Both are copied. Queues the server's version line in *to_viewer. Free with rfbgate_free. */
struct rfbgate *rfbgate_new(const char *listen_pw, const char *display_pw, struct buf *to_viewer);
void rfbgate_free(struct rfbgate *g);

enum rfbgate_step rfbgate_from_viewer(struct rfbgate *g, const void *data, size_t len, struct buf *to_viewer,
				      struct buf *to_display);
enum rfbgate_step rfbgate_from_display(struct rfbgate *g, const void *data, size_t len, struct buf *to_viewer,
				       struct buf *to_display);
const char *rfbgate_error(const struct rfbgate *g);
/* Both halves of the handshake are done and bytes are relayed. */
bool rfbgate_relaying(const struct rfbgate *g);

/* A random password of RFBGATE_PASSWORD_LEN letters and digits into out[RFBGATE_PASSWORD_LEN + 1]. */
void rfbgate_random_password(char out[RFBGATE_PASSWORD_LEN + 1]);

/* ---- test seams: exported for tests/ only, not to be called by kvcon itself (tests/check-exports.sh) ---- */
/* The 16-byte answer to a VNC authentication challenge for password pw (the DES of RFB 6.2.2). */
void rfbgate_answer(const uint8_t challenge[16], const char *pw, uint8_t out[16]);

#endif
