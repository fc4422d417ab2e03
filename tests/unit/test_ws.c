/* Unit tests of kube/ws.c's pure parts: Sec-WebSocket-Accept (RFC 6455's example) and the Upgrade answer parser
 * (incomplete heads, refusals with their body length, every check on a 101). */
#include "kube/ws.h"
#include "t.h"

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

static int parse(const char *head, const char *proto, struct ws_response *r, const char **err)
{
	return ws_parse_response(head, strlen(head), KEY, proto, r, err);
}

int main(void)
{
	char acc[40];
	ws_accept_for_key(KEY, acc, sizeof acc);
	T_EQ_STR(acc, ACCEPT);

	struct ws_response r;
	const char *err;
	const char *ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n"
			 "Sec-WebSocket-Accept: " ACCEPT "\r\nSec-WebSocket-Protocol: plain.kubevirt.io\r\n\r\n\x82\x01x";
	T_EQ_INT(parse(ok, "plain.kubevirt.io", &r, &err), 1);
	T_EQ_INT(r.status, 101);
	T_EQ_INT(r.head_len, strlen(ok) - 3); /* the frame after the head is not part of it */
	/* every prefix of the head is "need more" */
	size_t hl = strlen(ok) - 3;
	int early = 0;
	for (size_t n = 0; n + 1 < hl; n++)
		early += ws_parse_response(ok, n, KEY, "plain.kubevirt.io", &r, &err) != 0;
	T_EQ_INT(early, 0);

	static const struct {
		const char *head, *proto, *err;
	} bad[] = {
		{ "HTTP/1.1 101 X\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT "\r\n\r\n", NULL, "Upgrade" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: " ACCEPT "\r\n\r\n", NULL, "Connection" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n", NULL,
		  "Accept" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", NULL, "Accept" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
		  "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
		  NULL, "extension" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
		  "\r\nSec-WebSocket-Protocol: binary\r\n\r\n",
		  "plain.kubevirt.io", "subprotocol" },
		{ "HTTP/1.1 101 X\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT
		  "\r\nSec-WebSocket-Protocol: binary\r\n\r\n",
		  NULL, "subprotocol" },
		{ "SSH-2.0-OpenSSH\r\n\r\n", NULL, "HTTP" },
		{ "HTTP/2 101\r\n\r\n", NULL, "HTTP" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = parse(bad[i].head, bad[i].proto, &r, &err);
		T_EQ_INT(rc, -1);
		T_CHECK(err && strstr(err, bad[i].err));
	}
	/* no subprotocol in the answer is accepted (RFC 6455 4.1 only forbids one that was not offered) */
	T_EQ_INT(parse("HTTP/1.1 101 X\r\nupgrade: websocket\r\nconnection: upgrade\r\nsec-websocket-accept: " ACCEPT
		       "\r\n\r\n",
		       "plain.kubevirt.io", &r, &err),
		 1);
	/* refusals: the status and the body length */
	T_EQ_INT(parse("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 42\r\n\r\n{", NULL,
		       &r, &err),
		 1);
	T_EQ_INT(r.status, 400);
	T_EQ_INT(r.content_length, 42);
	T_EQ_INT(parse("HTTP/1.0 403 Forbidden\r\n\r\n", NULL, &r, &err), 1);
	T_EQ_INT(r.status, 403);
	T_CHECK(r.content_length == UINT64_MAX);
	/* a head that never ends */
	static char big[70000];
	memset(big, 'a', sizeof big);
	T_EQ_INT(ws_parse_response(big, sizeof big, KEY, NULL, &r, &err), -1);
	/* a NUL inside the head */
	T_EQ_INT(ws_parse_response("HTTP/1.1 101 X\r\nA: \0b\r\n\r\n", 25, KEY, NULL, &r, &err), -1);
	return T_DONE();
}
