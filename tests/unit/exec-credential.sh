#!/bin/sh
# A tiny client-go exec credential plugin for tests: counts its runs in $COUNTER and prints an ExecCredential
# whose token is "tok-<run>". MODE=expired gives an expirationTimestamp in the past, MODE=fail fails with a
# message on stderr, MODE=garbage prints no JSON, MODE=cert returns a client certificate and key instead.
# MODE=leftover starts a child that keeps the plugin's stdout and stderr open (its pid in $COUNTER.child) and
# then answers; MODE=hang starts such a child and never answers.
n=$(( $(cat "$COUNTER" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$COUNTER"
case "${MODE:-ok}" in
leftover | hang)
	sleep 300 &
	echo $! >"$COUNTER.child"
	[ "$MODE" = hang ] && exec sleep 300
	exp="2999-01-01T00:00:00Z"
	;;
fail) echo "boom: cannot reach the identity provider" >&2; exit 3 ;;
garbage) echo "not json"; exit 0 ;;
expired) exp="2001-01-01T00:00:00Z" ;;
*) exp="2999-01-01T00:00:00Z" ;;
esac
# the kubeconfig's apiVersion arrives in KUBERNETES_EXEC_INFO
api=$(printf '%s' "$KUBERNETES_EXEC_INFO" | sed -n 's/.*"apiVersion": *"\([^"]*\)".*/\1/p')
if [ "${MODE:-ok}" = cert ]; then
	printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"clientCertificateData":"CERT","clientKeyData":"KEY"}}\n' "$api"
else
	printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"tok-%s%s","expirationTimestamp":"%s"}}\n' \
		"$api" "$n" "${1:-}" "$exp"
fi
