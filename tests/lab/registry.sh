#!/usr/bin/env bash
# registry.sh - a private OCI registry for the containerDisk tests: Debian's docker-registry (the CNCF
# distribution registry) on 127.0.0.1 with TLS (a CA made here with openssl) and htpasswd (bcrypt) auth.
#
#   tests/lab/registry.sh up DIR [token|plain]
#                                     starts it (DIR: its state); with "token", auth is a Bearer token service
#                                     (tests/lab/tokenserver.py, HTTPS, the same user) instead of htpasswd; with
#                                     "plain", plain HTTP without auth (an "insecure" registry);
#                                     prints shell assignments:
#                                       REG=127.0.0.1:PORT REG_CA=DIR/ca.crt REG_USER=... REG_PASS=...
#                                       REG_PID=... REG_AUTH=DIR/auth.json (a valid Docker/Podman auth file)
#   tests/lab/registry.sh push DIR OCIDIR:TAG REPO:TAG    copies an image with skopeo; prints its digest
#   tests/lab/registry.sh down DIR    stops it
set -euo pipefail

cmd=${1:-}
D=${2:-}
[[ -n $cmd && -n $D ]] || { echo "usage: $0 up|down|push DIR ..." >&2; exit 2; }
die() { echo "registry.sh: $*" >&2; exit 1; }

free_port() {
    local p
    for _ in $(seq 50); do
        p=$((20000 + RANDOM % 20000))
        ss -ltn "( sport = :$p )" | grep -q LISTEN || { echo $p; return; }
    done
    die "no free port"
}

case $cmd in
up)
    for c in docker-registry openssl htpasswd skopeo ss; do
        command -v $c >/dev/null || die "$c missing (run scripts/deps.sh)"
    done
    mkdir -p "$D/data"
    D=$(cd "$D" && pwd)
    # a CA, and a server certificate for 127.0.0.1 it signs
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kvcon test CA" \
        -keyout "$D/ca.key" -out "$D/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$D/server.key" -out "$D/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' >"$D/ext.cnf"
    openssl x509 -req -in "$D/server.csr" -CA "$D/ca.crt" -CAkey "$D/ca.key" -CAcreateserial -days 2 \
        -extfile "$D/ext.cnf" -out "$D/server.crt" 2>/dev/null
    user=kvtest
    pass=$(openssl rand -hex 12)
    htpasswd -Bbn "$user" "$pass" >"$D/htpasswd" 2>/dev/null
    port=$(free_port)
    if [[ ${3:-} == token ]]; then
        tport=$(free_port)
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=kvcon test token signer" \
            -keyout "$D/token.key" -out "$D/token.crt" 2>/dev/null
        python3 "$(dirname "$0")/tokenserver.py" "$tport" "$D/server.crt" "$D/server.key" "$D/token.crt" \
            "$D/token.key" "$user" "$pass" kvcon-test-issuer >"$D/token.log" 2>&1 &
        echo $! >"$D/token.pid"
        for _ in $(seq 100); do grep -qs ready "$D/token.log" && break; sleep 0.1; done
        grep -q ready "$D/token.log" || { cat "$D/token.log" >&2; die "token server did not start"; }
        authconf="  token:
    realm: https://127.0.0.1:$tport/token
    service: kvcon-test-registry
    issuer: kvcon-test-issuer
    rootcertbundle: $D/token.crt"
    else
        authconf="  htpasswd:
    realm: kvcon-test
    path: $D/htpasswd"
    fi
    tlsconf="  tls:
    certificate: $D/server.crt
    key: $D/server.key"
    if [[ ${3:-} == plain ]]; then
        tlsconf=""
    fi
    cat >"$D/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $D/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: kvcon-test
$tlsconf
auth:
$authconf
EOF
    if [[ ${3:-} == plain ]]; then sed -i '/^auth:$/,$d' "$D/config.yml"; fi
    # REGISTRY_* variables override the registry's configuration (REGISTRY_AUTH_FILE would become auth.file)
    unset_reg=()
    for v in $(env | sed -n 's/^\(REGISTRY_[A-Za-z0-9_]*\)=.*/\1/p'); do unset_reg+=(-u "$v"); done
    env "${unset_reg[@]}" docker-registry serve "$D/config.yml" >"$D/registry.log" 2>&1 &
    pid=$!
    echo $pid >"$D/pid"
    # ready when it answers /v2/ (401: auth required)
    for _ in $(seq 100); do
        if [[ ${3:-} == plain ]]; then
            code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2/" || true)
            [[ $code == 200 ]] && code=401 # ready
        else
            code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$D/ca.crt" "https://127.0.0.1:$port/v2/" || true)
        fi
        [[ $code == 401 ]] && break
        kill -0 $pid 2>/dev/null || { cat "$D/registry.log" >&2; die "docker-registry exited"; }
        sleep 0.1
    done
    [[ $code == 401 ]] || die "registry on $port did not answer (last: $code)"
    printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}\n' "$port" "$(printf '%s:%s' "$user" "$pass" | base64 -w0)" >"$D/auth.json"
    cat >"$D/env" <<EOF
REG=127.0.0.1:$port
REG_CA=$D/ca.crt
REG_USER=$user
REG_PASS=$pass
REG_PID=$pid
REG_AUTH=$D/auth.json
EOF
    cat "$D/env"
    ;;
push)
    . "$D/env"
    mkdir -p "$D/certs"
    cp "$REG_CA" "$D/certs/ca.crt"
    tls=(--dest-cert-dir "$D/certs" --dest-creds "$REG_USER:$REG_PASS")
    itls=(--cert-dir "$D/certs" --creds "$REG_USER:$REG_PASS")
    if ! grep -q '^auth:' "$D/config.yml"; then # plain HTTP, no auth
        tls=(--dest-tls-verify=false)
        itls=(--tls-verify=false)
    fi
    skopeo copy --all --quiet "${tls[@]}" "oci:$3" "docker://$REG/$4" >&2
    # the digest of the manifest as the registry serves it
    echo "sha256:$(skopeo inspect --raw "${itls[@]}" "docker://$REG/$4" |
        sha256sum | cut -d' ' -f1)"
    ;;
down)
    [[ -f $D/pid ]] && kill "$(cat "$D/pid")" 2>/dev/null || true
    [[ -f $D/token.pid ]] && kill "$(cat "$D/token.pid")" 2>/dev/null || true
    ;;
*)
    die "unknown command $cmd"
    ;;
esac
