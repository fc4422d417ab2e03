/* Admission on the engine service's HTTPS listener (libmicrohttpd), which any local user can reach.
 *
 * A connection has APIGATE_DEADLINE_S seconds from its accept to finish the TLS handshake and send a request
 * head with the bearer token; one that has not is closed, however slowly it drips bytes. At most
 * APIGATE_UNAUTH_MAX connections wait for that at once: the next one closes the oldest waiting, so connections
 * that never authenticate can neither fill the listener's connection limit (set well above the cap) nor keep a
 * client with the token out. A connection whose request head carried the token (apigate_authed) leaves the gate
 * for good: the long idle timeout, and it counts as a client for the idle exit; waiting ones do not.
 *
 * The unix socket's daemon has no gate (only its owner can connect). Loop thread only; one HTTPS daemon. */
#ifndef KVCON_CMD_APIGATE_H
#define KVCON_CMD_APIGATE_H

#include <microhttpd.h>
#include <stdint.h>

#define APIGATE_DEADLINE_S 10
#define APIGATE_UNAUTH_MAX 128
#define APIGATE_IDLE_TIMEOUT_S 600 /* an authenticated connection's idle timeout (a waiting watch is suspended) */

/* The listener's overall connection limit: raises the soft RLIMIT_NOFILE towards the hard one first, so that
 * authenticated connections have room far above APIGATE_UNAUTH_MAX. */
unsigned apigate_connection_limit(void);

/* MHD_OPTION_NOTIFY_CONNECTION's callback for the HTTPS daemon. */
void apigate_notify(void *cls, struct MHD_Connection *c, void **socket_context,
		    enum MHD_ConnectionNotificationCode toe);

/* c's request head carried the token: it leaves the gate (no deadline, APIGATE_IDLE_TIMEOUT_S idle). */
void apigate_authed(struct MHD_Connection *c);

/* Closes the connections past the deadline; called once a second. */
void apigate_expire(uint64_t now_ms);

/* Connections open that have not authenticated (the idle exit does not count them). */
unsigned apigate_unauthed(void);

#endif
