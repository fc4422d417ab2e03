#!/bin/bash
# The pod network and cloud-init seeds, proven inside the lab guest (scripts/demo-guest.sh) on the embedded
# driver:
#  - masquerade on the pod network is QEMU's user-mode network on KubeVirt's 10.0.2.0/24: the guest's DHCP
#    lease is 10.0.2.15/24 with a default route via 10.0.2.2 (QEMU's layout, printed by the guest on its serial
#    console), the VMI reports 10.0.2.15 in status.interfaces (get -o json, -o wide), and the interface's ports
#    are forwarded from 127.0.0.1 only: a TCP server started in the guest answers the host on the recorded port;
#  - two VMs asking for the same guest port get different host ports; the port closes with the execution;
#  - cloudInitNoCloud networkData, and cloudInitConfigDrive (userData, userDataBase64, networkData) reach the
#    guest: it prints the seed's files (config-2: openstack/latest/...) on its console;
#  - the dashboard's VM view shows the address and the forwarded port (kvcon in tmux);
#  - ports are validated (range, protocol, duplicates, names).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "QEMU and the embedded libvirt driver" qemu-system-x86_64 jq ss tmux blkid
engine_embed_up kvn

# net_manifest NAME: the lab guest with a masquerade interface on the pod network, port 8080 forwarded, and a
# NoCloud seed carrying networkData
net_manifest() {
    engine_manifest "$ENGINE_T/$1.yaml" "$1" Halted 192Mi | grep -v autoattachPodInterface >/dev/null
    cat >>"$ENGINE_T/$1.yaml" <<YAML
          disks:
          - name: cloudinit
            disk:
              bus: virtio
          interfaces:
          - name: default
            masquerade: {}
            ports:
            - name: http
              port: 8080
      networks:
      - name: default
        pod: {}
      volumes:
      - name: cloudinit
        cloudInitNoCloud:
          userData: |
            #cloud-config
            hostname: $1
          networkData: |
            version: 2
            ethernets:
              eth0:
                dhcp4: true
YAML
    sed -i '/autoattachPodInterface/d' "$ENGINE_T/$1.yaml"
}
serial() { tr -d '\r' <"$(rec_exec "$1" serialLog)" 2>/dev/null || true; }
net_block() { serial "$1" | sed -n '/KVCON-NET-BEGIN/,/^KVCON-NET-END/p'; }
has_net_end() { net_block "$1" | grep -c '^KVCON-NET-END' || true; }
# the host port the engine forwards to the VMI's port 8080 (status.interfaces[].forwardedPorts, the engine's extension)
host_port() { kv engine get vmi "$1" -o json | jq -r '.status.interfaces[]?.forwardedPorts[]? | select(.port == 8080) | .hostPort'; }

step "a VM with masquerade + ports [8080]: a DHCP lease on 10.0.2.0/24 and a default route"
net_manifest web
kv engine apply -f "$ENGINE_T/web.yaml" >/dev/null || fail "apply web"
kv engine start web >/dev/null || fail "start web"
marker web
wait_eq 60 1 has_net_end web || { serial web | tail -20; fail "no KVCON-NET-END from the guest"; }
blk=$(net_block web)
echo "$blk" | sed 's/^/   guest| /'
grep -q '^KVCON-DHCP-LEASE 10.0.2.15/24 router 10.0.2.2 on eth0$' <<<"$blk" || fail "no DHCP lease of 10.0.2.15/24 via 10.0.2.2"
grep -q 'inet 10.0.2.15/24 ' <<<"$blk" || fail "eth0 has no 10.0.2.15/24"
grep -q '^default via 10.0.2.2 dev eth0' <<<"$blk" || fail "no default route via 10.0.2.2"

step "the VMI reports the guest's address and the forwarded port"
j=$(kv engine get vmi web -o json)
echo "$j" | jq -c '.status.interfaces'
[[ $(jq -r '.status.interfaces[0].ipAddress' <<<"$j") == 10.0.2.15 ]] || fail "VMI ip is not the guest's lease 10.0.2.15"
[[ $(jq -r '.status.interfaces[0] | .name + " " + .ipAddress + " " + .ipAddresses[0]' <<<"$j") == "default 10.0.2.15 10.0.2.15" ]] ||
    fail "status.interfaces wrong"
hp=$(host_port web)
[[ $hp =~ ^[0-9]+$ ]] && ((hp > 0 && hp < 65536)) || fail "no host port for 8080: '$hp'"
[[ $(jq -r '.status.interfaces[0].forwardedPorts[0] | .name + " " + .protocol + " " + .hostIP' <<<"$j") == "http TCP 127.0.0.1" ]] || fail "port entry"
[[ $(jq -r '.status.interfaces[0].infoSource' <<<"$j") == domain ]] || fail "infoSource is not domain"
kv engine get vmi web -o wide | grep -q " 10.0.2.15 " || fail "get vmi -o wide shows no IP"
[[ $(jq -r '.execution.network' <<<"$(record web)") == *"port default http TCP 8080 $hp"* ]] || fail "the host port is not in the record"
kv describe vmi default/web >"$ENGINE_T/describe.txt" || fail "describe vmi web"
grep -q '^    Ip Address: *10.0.2.15$' "$ENGINE_T/describe.txt" && grep -q "^      Host Port: *$hp\$" "$ENGINE_T/describe.txt" ||
    { sed -n '/Interfaces:/,/Node Name/p' "$ENGINE_T/describe.txt"; fail "describe vmi shows no address or forwarded port"; }
# from 127.0.0.1 only, never from the host's other addresses
listen=$(ss -Hltn "sport = :$hp" | awk '{print $4}')
[[ $listen == "127.0.0.1:$hp" ]] || fail "port $hp listens on '$listen', not 127.0.0.1 only"

step "a TCP server in the guest answers on 127.0.0.1:$hp"
kv engine console web --expect KVCON-GUEST-READY --send 'while :; do echo "KVCON-NC-$((6*7))" | nc -l -p 8080; done &' \
    --send 'echo "KVCON-SERVING-$((7*6))"' --expect KVCON-SERVING-42 --timeout 60 >"$ENGINE_T/nc.log" || { cat "$ENGINE_T/nc.log"; fail "console send"; }
got="" until=$(($(date +%s) + 60))
while (($(date +%s) < until)); do
    got=$(timeout 5 bash -c "exec 3<>/dev/tcp/127.0.0.1/$hp && head -n1 <&3" 2>/dev/null || true)
    [[ $got == KVCON-NC-42 ]] && break
    sleep 0.3
done
[[ $got == KVCON-NC-42 ]] || fail "no marker from the guest through 127.0.0.1:$hp (got '$got')"
echo "   read '$got' from 127.0.0.1:$hp"

step "kvcon port-forward through the engine service reaches an undeclared guest port (KubeVirt's portforward)"
kv engine console web --send 'while :; do echo "KVCON-PF-$((6*7))" | nc -l -p 8081; done &' \
    --send 'echo "KVCON-PF-SERVING-$((7*6))"' --expect KVCON-PF-SERVING-42 --timeout 60 >"$ENGINE_T/pf.log" ||
    { cat "$ENGINE_T/pf.log"; fail "console send (8081)"; }
got="" until=$(($(date +%s) + 30))
while (($(date +%s) < until)); do
    got=$( (sleep 2) | timeout 10 "$KV" -c "$URI" port-forward --stdio vmi/web.default 8081 2>"$ENGINE_T/pf.err" | head -n1 || true)
    [[ $got == KVCON-PF-42 ]] && break
    sleep 0.3
done
[[ $got == KVCON-PF-42 ]] || { cat "$ENGINE_T/pf.err"; fail "no marker through port-forward --stdio to 8081 (got '$got')"; }
"$KV" -c "$URI" port-forward vmi/web.default 0:8081 >"$ENGINE_T/pf.out" 2>"$ENGINE_T/pf.err" & pfpid=$!
wait_eq 10 1 bash -c "grep -c '^Forwarding from 127.0.0.1:[0-9]* -> 8081\$' '$ENGINE_T/pf.out'" || fail "no Forwarding line"
lp=$(sed -nE 's/^Forwarding from 127\.0\.0\.1:([0-9]+) -> 8081$/\1/p' "$ENGINE_T/pf.out")
got=$(timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$lp && head -n1 <&3" 2>/dev/null || true)
[[ $got == KVCON-PF-42 ]] || { cat "$ENGINE_T/pf.err"; fail "no marker through the forward's 127.0.0.1:$lp (got '$got')"; }
# a guest port where nothing listens ends that connection (QEMU closes it), not the forward
got=$( (sleep 1) | timeout 10 "$KV" -c "$URI" port-forward --stdio vmi/web.default 8099 2>/dev/null | head -c 10 || true)
[[ -z $got ]] || fail "a closed guest port answered '$got'"
got=$(timeout 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$lp && head -n1 <&3" 2>/dev/null || true)
[[ $got == KVCON-PF-42 ]] || fail "the forward did not survive (got '$got')"
kill -INT $pfpid; wait $pfpid 2>/dev/null || true
# the rules QEMU added for the streams are gone with them: its only listener is the declared port's
qpid=$(pgrep -f 'guest=default_web,' | head -1)
[[ -z $qpid ]] || wait_eq 10 1 bash -c "ss -Hltnp | grep -c 'pid=$qpid,'" || { ss -Hltnp | grep "pid=$qpid,"; fail "hostfwd rules left behind"; }
echo "   read 'KVCON-PF-42' from the undeclared guest port 8081 through the engine service"

step "the dashboard's VM view shows the address and the forwarded port"
TM="tmux -L kvn-$$ -f /dev/null"
trap '$TM kill-server 2>/dev/null || true; engine_embed_cleanup' EXIT
$TM new-session -d -x 120 -y 40 -s k -e TERM=xterm-256color \
    "env KUBECONFIG=/nonexistent KVCON_LOG=$ENGINE_T/ui.log XDG_STATE_HOME=$XDG_STATE_HOME KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES KVCON_ENGINE_ACCEL=$KVCON_ENGINE_ACCEL $KV -c '$URI'; sleep 600"
ui_wait() { # ui_wait REGEX: polls the screen (30 s)
    local until=$(($(date +%s) + 30))
    while (($(date +%s) < until)); do
        $TM capture-pane -p -t k | grep -qE -- "$1" && return 0
        sleep 0.1
    done
    $TM capture-pane -p -t k
    fail "the dashboard never showed /$1/"
}
ui_wait ' web +Running +True .* 10\.0\.2\.15 '
$TM send-keys -t k / && $TM send-keys -t k -l web2 && $TM send-keys -t k BSpace Enter
ui_wait '</web>'
$TM send-keys -t k Enter
ui_wait ' VM default/web '
ui_wait "ip: 10\\.0\\.2\\.15 \\(default\\)"
ui_wait "port: http 8080/TCP <- 127\\.0\\.0\\.1:$hp"
$TM capture-pane -p -t k | grep -E 'ip: |port: ' | sed 's/^/   screen| /'
$TM kill-server 2>/dev/null || true

step "cloudInitNoCloud networkData reached the guest"
seed=$(serial web | sed -n '/^KVCON-CLOUDINIT-BEGIN/,/^KVCON-CLOUDINIT-END/p')
grep -qx -- '--- /mnt/network-config' <<<"$seed" && grep -qx '    dhcp4: true' <<<"$seed" ||
    { echo "$seed"; fail "the guest did not see the NoCloud networkData"; }

step "a second VM with the same guest port gets another host port"
net_manifest web2
kv engine apply -f "$ENGINE_T/web2.yaml" >/dev/null || fail "apply web2"
kv engine start web2 >/dev/null || fail "start web2"
hp2=$(host_port web2)
[[ $hp2 =~ ^[0-9]+$ && $hp2 != "$hp" ]] || fail "web2's host port '$hp2' (web has $hp)"
[[ -n $(ss -Hltn "sport = :$hp2") ]] || fail "web2's host port $hp2 is not listening"
kv engine stop web2 --grace-period 0 >/dev/null || fail "stop web2"
port_open() { [[ -n $(ss -Hltn "sport = :$1") ]] && echo open || echo closed; }
wait_eq 20 closed port_open "$hp2" || fail "web2's host port outlived its execution"

step "cloudInitConfigDrive: userData, userDataBase64 and networkData on a config-2 drive"
engine_manifest "$ENGINE_T/cd.yaml" cfgdrive Halted 192Mi >/dev/null
ud64=$(printf '#!/bin/sh\necho from-base64\n' | base64 -w0)
cat >>"$ENGINE_T/cd.yaml" <<YAML
          disks:
          - name: cd
            disk:
              bus: virtio
      volumes:
      - name: cd
        cloudInitConfigDrive:
          userData: |
            #cloud-config
            kvcon_marker: config-drive-user-data
          networkData: |
            {"links": [{"id": "eth0", "type": "phy"}], "networks": [], "services": []}
YAML
kv engine apply -f "$ENGINE_T/cd.yaml" >/dev/null || fail "apply cfgdrive"
kv engine start cfgdrive >/dev/null || fail "start cfgdrive"
marker cfgdrive
seed=$(serial cfgdrive | sed -n '/^KVCON-CLOUDINIT-BEGIN/,/^KVCON-CLOUDINIT-END/p')
echo "$seed" | sed 's/^/   guest| /'
grep -qx -- '--- /mnt/openstack/latest/user_data' <<<"$seed" && grep -qx 'kvcon_marker: config-drive-user-data' <<<"$seed" ||
    fail "the guest did not see the config drive's user_data"
grep -qx -- '--- /mnt/openstack/latest/network_data.json' <<<"$seed" && grep -q '"id": "eth0"' <<<"$seed" ||
    fail "the guest did not see network_data.json"
grep -qx -- '--- /mnt/openstack/latest/meta_data.json' <<<"$seed" && grep -q '"instance_id": *"cfgdrive.default"' <<<"$seed" ||
    fail "the guest did not see meta_data.json"
label=$(blkid -o value -s LABEL "$(rec_exec cfgdrive runDir)/cloudinit-cd.iso" 2>/dev/null || true)
[[ $label == config-2 ]] || fail "the config drive's label is '$label', not config-2"
kv engine stop cfgdrive --grace-period 0 >/dev/null
sed -i "s#^          userData: |#          userDataBase64: $ud64#; /^            \#cloud-config/d; /^            kvcon_marker/d" "$ENGINE_T/cd.yaml"
kv engine apply -f "$ENGINE_T/cd.yaml" >/dev/null || fail "apply cfgdrive (userDataBase64)"
kv engine start cfgdrive >/dev/null || fail "start cfgdrive (userDataBase64)"
marker cfgdrive
serial cfgdrive | sed -n '/^KVCON-CLOUDINIT-BEGIN/,/^KVCON-CLOUDINIT-END/p' | grep -qx 'echo from-base64' ||
    fail "the guest did not see the decoded userDataBase64"
kv engine stop cfgdrive --grace-period 0 >/dev/null

step "ports are validated"
bad_port() { # bad_port YAML-PORTS-LINES REGEX
    net_manifest badp
    python3 - "$ENGINE_T/badp.yaml" "$1" <<'PY'
import sys
p, repl = sys.argv[1], sys.argv[2]
s = open(p).read()
s = s.replace("            - name: http\n              port: 8080\n", repl)
open(p, "w").write(s)
PY
    out=$(kv engine apply -f "$ENGINE_T/badp.yaml" 2>&1) && fail "accepted: $1"
    [[ $out =~ $2 ]] || fail "message for $1: $out"
    echo "   refused: $out"
}
bad_port $'            - port: 0\n' 'ports\[0\].port'
bad_port $'            - port: 65536\n' 'ports\[0\].port'
bad_port $'            - port: 22\n              protocol: ICMP\n' 'protocol "ICMP" is not one of TCP, UDP'
bad_port $'            - port: 22\n            - port: 22\n' 'listed twice'
bad_port $'            - name: "bad name"\n              port: 22\n' 'ports\[0\]'
kv engine stop web --grace-period 0 >/dev/null
echo PASS
