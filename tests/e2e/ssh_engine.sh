#!/bin/bash
# Into a real guest on the engine, as virtctl gets there: the lab guest's ssh variant (scripts/demo-guest.sh --ssh:
# dropbear, qemu-guest-agent, busybox httpd) on the embedded driver, one VM with a masquerade interface and no
# declared port, and this test's own key appended to its initrd as a second cpio archive.
#  - the guest agent: AgentConnected, the VMI's guestOSInfo and interfaceName (infoSource "domain, guest-agent"), `kvcon guestosinfo|userlist|fslist` and the real
#    kubectl's raw GET of the subresource, all answered from qemu-guest-agent through libvirt;
#  - `kvcon ssh -c` runs a command (ProxyCommand through `kvcon port-forward --stdio`), `kvcon scp` both ways;
#  - `kvcon port-forward` to the undeclared guest port 8000 (busybox httpd), and udp/7000 (a UDP echo);
#  - the dashboard's ssh key (a): ssh has the terminal (ctrl-c is the guest shell's), the dashboard comes back;
#  - Secrets: the VM's accessCredentials (sshPublicKey, qemuGuestAgent) name a Secret the real kubectl creates
#    over the engine's HTTPS; the start waits for it as on a cluster (the VMI Scheduling, its launcher pod
#    ContainerCreating with kubelet's FailedMount, `kvcon diagnose` naming both, the same across a kill -9 of the
#    service; the same UIDs then run);
#    `kvcon credentials add-ssh-key` puts a second
#    key into the guest (guest-ssh-add-authorized-keys) and `remove-ssh-key` takes it out, `kvcon ssh` with that
#    key failing before, working between, failing after; AccessCredentialsSynchronized; kubectl and kvcon get secret.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/engine-lib.bash"

engine_needs "QEMU and the embedded libvirt driver" qemu-system-x86_64 jq ssh scp ssh-keygen kubectl cpio curl tmux
engine_embed_up kvssh
export HOME=$ENGINE_T/home # ssh's and kubectl's own files, private to the test
mkdir -p "$HOME"
# the service kvcon starts on demand also serves HTTPS and writes a kubeconfig, for the real kubectl
export KVCON_ENGINE_API_PORT=0

step "the ssh guest variant, with this test's key in a second cpio archive"
g=$(cd "$ROOT" && scripts/demo-guest.sh --ssh >/dev/null && echo "$ROOT/build/guest-ssh") || fail "scripts/demo-guest.sh --ssh"
ssh-keygen -q -t ed25519 -N '' -f "$ENGINE_T/id" || fail "ssh-keygen"
mkdir -p "$ENGINE_T/keys/root/.ssh" "$KVCON_ENGINE_IMAGES/kvcon-ssh-guest"
cp "$ENGINE_T/id.pub" "$ENGINE_T/keys/root/.ssh/authorized_keys"
chmod 700 "$ENGINE_T/keys/root/.ssh"
chmod 600 "$ENGINE_T/keys/root/.ssh/authorized_keys"
(cd "$ENGINE_T/keys" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1) >"$ENGINE_T/keys.cpio.gz"
cat "$g/initrd.gz" "$ENGINE_T/keys.cpio.gz" >"$KVCON_ENGINE_IMAGES/kvcon-ssh-guest/initrd.gz"
ln -f "$g/vmlinuz" "$KVCON_ENGINE_IMAGES/kvcon-ssh-guest/" 2>/dev/null || cp "$g/vmlinuz" "$KVCON_ENGINE_IMAGES/kvcon-ssh-guest/"

engine_manifest "$ENGINE_T/sshvm.yaml" sshvm Halted 256Mi kvcon-ssh-guest >/dev/null
sed -i '/autoattachPodInterface/d' "$ENGINE_T/sshvm.yaml"
cat >>"$ENGINE_T/sshvm.yaml" <<YAML
          interfaces:
          - name: default
            masquerade: {}
      networks:
      - name: default
        pod: {}
      accessCredentials:
      - sshPublicKey:
          source:
            secret:
              secretName: sshvm-keys
          propagationMethod:
            qemuGuestAgent:
              users: [root]
      - sshPublicKey:
          source:
            secret:
              secretName: sshvm-keys
          propagationMethod:
            noCloud: {}
      volumes:
      - name: cidata
        cloudInitNoCloud:
          secretRef:
            name: sshvm-ud
      - name: cfg
        configMap:
          name: sshvm-cm
YAML
t0=$(date +%s)
kv engine apply -f "$ENGINE_T/sshvm.yaml" >/dev/null || fail "apply"
kv engine start sshvm --no-wait >/dev/null || fail "start"
KCFG=$XDG_STATE_HOME/kvcon/engine-kubeconfig
[[ -f $KCFG ]] || fail "no kubeconfig from the engine service ($KCFG)"
k() { kubectl --kubeconfig "$KCFG" --request-timeout=30s "$@"; }
step "the start waits for its Secrets as on a cluster: VMI Scheduling, launcher ContainerCreating, FailedMount on the pod"
# kubelet's event on the launcher pod (not the VM), the pod named by its UID
launcher() { k get pod -l vm.kubevirt.io/name=sshvm -o jsonpath='{.items[0].metadata.name} {.items[0].metadata.uid}' 2>/dev/null; }
mounts() {
    local pod ev
    pod=$(launcher)
    ev=$(k get events -o json 2>/dev/null | jq -r '[.items[] | select(.reason == "FailedMount" and .type == "Warning" and
        .involvedObject.kind == "Pod" and .source.component == "kubelet")][0] // {} |
        "\(.involvedObject.name) \(.involvedObject.uid) \(.message)"')
    [[ -n $pod && $ev == "$pod "* ]] && echo "${ev#"$pod "}" || echo "event: $ev, pod: $pod"
}
wait_eq 20 'MountVolume.SetUp failed for volume "cidata" : secret "sshvm-ud" not found' mounts ||
    fail "no FailedMount event on the launcher pod for the missing Secret: $(mounts)"
wait_uid=$(k get vmi sshvm -o jsonpath='{.metadata.uid}') wait_pod=$(launcher)
[[ -n $wait_uid && $wait_pod == virt-launcher-sshvm-?????\ ?* ]] || fail "the waiting VMI and pod: '$wait_uid' '$wait_pod'"
out=$(k get vmi,pod --no-headers 2>&1) || fail "kubectl get vmi,pod: $out"
sed 's/^/   /' <<<"$out"
grep -Eq '^virtualmachineinstance\.kubevirt\.io/sshvm +[0-9]+s +Scheduling( |$)' <<<"$out" &&
    grep -Eq "^pod/${wait_pod%% *} +0/1 +ContainerCreating +0 +[0-9]+s$" <<<"$out" || fail "kubectl get vmi,pod: $out"
[[ $(k get vm sshvm -o jsonpath='{.status.printableStatus}') == Starting ]] || fail "printableStatus while waiting"
rc=0; out=$(kv diagnose default/sshvm 2>&1) || rc=$?
[[ $rc == 3 && $out == *"[launcher-mount-missing]"* && $out == *"${wait_pod%% *} cannot start on "* &&
    $out == *"Secret default/sshvm-ud (volume cidata) does not exist"* ]] || fail "diagnose ($rc): $out"
# the waiting VMI and pod are in the VM's record: a service killed -9 comes back with the same ones
pid=$(cat "$XDG_STATE_HOME"/kvcon/engine-*.sock.pid)
kill -9 "$pid"
wait_eq 10 gone pid_gone "$pid" || fail "the service outlived kill -9"
kv get vmi >/dev/null || fail "kvcon get vmi after the kill"
[[ $(k get vmi sshvm -o jsonpath='{.metadata.uid} {.status.phase}') == "$wait_uid Scheduling" &&
    $(launcher) == "$wait_pod" ]] || fail "after kill -9: $(k get vmi,pod -o wide 2>&1), before: $wait_uid $wait_pod"
step "the real kubectl creates them: the same VMI and launcher pod go on to run"
k create secret generic sshvm-keys --from-file=key1="$ENGINE_T/id.pub" >"$ENGINE_T/k.out" 2>&1 || { cat "$ENGINE_T/k.out"; fail "kubectl create secret"; }
grep -qx 'secret/sshvm-keys created' "$ENGINE_T/k.out" || fail "kubectl create secret: $(cat "$ENGINE_T/k.out")"
k create secret generic sshvm-ud --from-literal=userdata=$'#cloud-config\n# KVCON-UD-FROM-SECRET' >/dev/null ||
    fail "kubectl create secret sshvm-ud"
k create configmap sshvm-cm --from-literal=a=KVCON-CM-VALUE >/dev/null || fail "kubectl create configmap"
kv engine console sshvm --expect 'KVCON-SSH-READY agent=yes' --expect KVCON-GUEST-READY --timeout 120s \
    >"$ENGINE_T/console.log" || { cat "$ENGINE_T/console.log"; fail "no KVCON-SSH-READY agent=yes on the console"; }
echo "   booted in $(($(date +%s) - t0)) s"
out=$(k get vmi sshvm -o jsonpath='{.metadata.uid} {.status.phase}'; echo; k get pod -l vm.kubevirt.io/name=sshvm --no-headers)
[[ $out == "$wait_uid Running"$'\n'"${wait_pod%% *} "*" 1/1 "*" Running "* &&
    $(k get pod "${wait_pod%% *}" -o jsonpath='{.metadata.uid}') == "${wait_pod#* }" ]] ||
    fail "not the VMI and pod that waited ($wait_uid, $wait_pod): $out"
# the guest prints its cloud-init seed: the user data from the Secret, the noCloud key appended
tr -d '\r' <"$ENGINE_T/console.log" | sed -n '/KVCON-CLOUDINIT-BEGIN/,/KVCON-CLOUDINIT-END/p' >"$ENGINE_T/seed.txt"
grep -qx '# KVCON-UD-FROM-SECRET' "$ENGINE_T/seed.txt" && grep -qx 'ssh_authorized_keys:' "$ENGINE_T/seed.txt" &&
    grep -qxF "  - \"$(cat "$ENGINE_T/id.pub")\"" "$ENGINE_T/seed.txt" || { cat -A "$ENGINE_T/seed.txt"; cat "$ENGINE_T/id.pub"; fail "the seed's user data"; }

step "the guest agent connects: AgentConnected, the VMI's guestOSInfo from guest-get-osinfo"
agent() { vmi_json sshvm | jq -r '[.status.conditions[]? | select(.type == "AgentConnected")][0].status // ""'; }
wait_eq 60 True agent || fail "AgentConnected never True"
osname() { vmi_json sshvm | jq -r '.status.guestOSInfo.prettyName // ""'; }
wait_eq 20 "kvcon lab guest 1 (ssh)" osname || fail "the VMI's guestOSInfo"
# the guest's own name of the pod network's address (guest-network-get-interfaces; refreshed every 30 s)
ifsrc() { vmi_json sshvm | jq -r '.status.interfaces[0] | "\(.ipAddress) \(.interfaceName) \(.infoSource)"'; }
wait_eq 45 "10.0.2.15 eth0 domain, guest-agent" ifsrc || fail "status.interfaces[0] from the guest agent"

step "kvcon guestosinfo, userlist, fslist; kubectl get --raw of the subresource"
out=$(kv guestosinfo default/sshvm) || fail "guestosinfo"
jq -e '.os.id == "kvcon-lab" and .os.prettyName == "kvcon lab guest 1 (ssh)" and .hostname == "guest" and
    (.guestAgentVersion | length > 0) and (.supportedCommands | map(.name) | index("guest-get-osinfo") != null) and
    .timezone == "UTC, 0"' <<<"$out" >/dev/null || { echo "$out" | head -30; fail "guestosinfo's JSON"; }
out=$(kv userlist default/sshvm) || fail "userlist"
jq -e '.items | type == "array"' <<<"$out" >/dev/null || fail "userlist: $out"
out=$(kv fslist default/sshvm) || fail "fslist"
jq -e '.items | type == "array"' <<<"$out" >/dev/null || fail "fslist: $out"
out=$(kubectl --kubeconfig "$KCFG" --request-timeout=30s get --raw \
    /apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/sshvm/guestosinfo) || fail "kubectl get --raw"
[[ $(jq -r .os.name <<<"$out") == "kvcon lab guest" ]] || fail "kubectl's guestosinfo: $out"
code=$(kubectl --kubeconfig "$KCFG" get --raw \
    /apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/nosuch/userlist 2>&1 || true)
[[ $code == *NotFound* ]] || fail "a VMI that does not exist: $code"

step "kvcon ssh -c and scp both ways (ProxyCommand through port-forward --stdio to the undeclared port 22)"
sshopts=(-i "$ENGINE_T/id" --known-hosts "$ENGINE_T/known_hosts" -t "-oStrictHostKeyChecking=accept-new" -t "-oBatchMode=yes")
got=""
for _ in 1 2 3 4 5 6 7 8 9 10; do # dropbear starts with the shells; the first try may come before it listens
    got=$(kv ssh "${sshopts[@]}" -c 'echo "KVCON-SSH-$((6*7))"; id -u' root@vm/sshvm.default 2>"$ENGINE_T/ssh.err") && break
    sleep 0.5
done
[[ $got == $'KVCON-SSH-42\n0' ]] || { cat "$ENGINE_T/ssh.err"; fail "ssh -c printed '$got'"; }
# (hashed or not, as the system's ssh_config says)
ssh-keygen -F vm.sshvm.default -f "$ENGINE_T/known_hosts" | grep -q ' ssh-ed25519 ' || fail "known host entry: $(cat "$ENGINE_T/known_hosts")"
head -c 300000 /dev/urandom >"$ENGINE_T/up.bin"
kv scp "${sshopts[@]}" "$ENGINE_T/up.bin" root@vmi/sshvm.default:/tmp/up.bin 2>"$ENGINE_T/scp.err" || { cat "$ENGINE_T/scp.err"; fail "scp up"; }
sum=$(kv ssh "${sshopts[@]}" -c 'md5sum /tmp/up.bin' root@vmi/sshvm.default 2>/dev/null | awk '{print $1}')
[[ $sum == $(md5sum <"$ENGINE_T/up.bin" | awk '{print $1}') ]] || fail "scp up: the guest's copy differs ($sum)"
kv scp "${sshopts[@]}" root@vmi/sshvm.default:/etc/os-release "$ENGINE_T/os-release" 2>"$ENGINE_T/scp.err" || { cat "$ENGINE_T/scp.err"; fail "scp down"; }
grep -qx 'ID=kvcon-lab' "$ENGINE_T/os-release" || fail "scp down: $(cat "$ENGINE_T/os-release")"
# the ConfigMap's volume: an ISO with a file per key
got=$(kv ssh "${sshopts[@]}" -c 'for d in /dev/vd?; do mount -t iso9660 -o ro $d /mnt 2>/dev/null || continue; cat /mnt/a 2>/dev/null; umount /mnt; done' root@vm/sshvm.default 2>/dev/null)
[[ $got == KVCON-CM-VALUE ]] || fail "the ConfigMap's disk: '$got'"

step "accessCredentials: kvcon credentials add-ssh-key / remove-ssh-key through the guest agent; get secret"
creds() { vmi_json sshvm | jq -r '[.status.conditions[]? | select(.type == "AccessCredentialsSynchronized")][0] | "\(.status) \(.reason)"'; }
wait_eq 20 "True AccessCredentialsSyncSuccess" creds || fail "AccessCredentialsSynchronized: $(creds)"
ssh-keygen -q -t ed25519 -N '' -C kvcon-second -f "$ENGINE_T/id2" || fail "ssh-keygen"
ssh2=(-i "$ENGINE_T/id2" --known-hosts "$ENGINE_T/known_hosts" -t "-oBatchMode=yes")
with2() { kv ssh "${ssh2[@]}" -c 'echo KVCON-KEY2' root@vm/sshvm.default 2>/dev/null || true; }
[[ $(with2) == "" ]] || fail "the second key let ssh in before it was added"
kv credentials add-ssh-key --user root --file "$ENGINE_T/id2.pub" --force default/sshvm >"$ENGINE_T/cred.out" 2>&1 ||
    { cat "$ENGINE_T/cred.out"; fail "credentials add-ssh-key"; }
grep -q 'Successfully added the key to secret "sshvm-keys"' "$ENGINE_T/cred.out" || fail "add-ssh-key said: $(cat "$ENGINE_T/cred.out")"
wait_eq 20 KVCON-KEY2 with2 || fail "ssh with the added key"
kv credentials remove-ssh-key --user root --file "$ENGINE_T/id2.pub" --force default/sshvm >"$ENGINE_T/cred.out" 2>&1 ||
    { cat "$ENGINE_T/cred.out"; fail "credentials remove-ssh-key"; }
wait_eq 20 "" with2 || fail "ssh with the removed key still works"
[[ $(kv ssh "${sshopts[@]}" -c 'echo KVCON-KEY1' root@vm/sshvm.default 2>/dev/null) == KVCON-KEY1 ]] || fail "the Secret's first key stopped working"
out=$(k get secret,cm --no-headers 2>&1) || fail "kubectl get secret,cm: $out"
grep -Eq '^secret/sshvm-keys +Opaque +1 +[0-9]+[sm]$' <<<"$out" || fail "kubectl get secret,cm: $out"
grep -Eq '^configmap/sshvm-cm +1 +[0-9]+[sm]$' <<<"$out" || fail "kubectl get secret,cm: $out"
k describe secret sshvm-keys >"$ENGINE_T/desc.out" 2>&1 || fail "kubectl describe secret: $(cat "$ENGINE_T/desc.out")"
grep -Eq '^key1: +[0-9]+ bytes$' "$ENGINE_T/desc.out" || fail "kubectl describe secret: $(cat "$ENGINE_T/desc.out")"
grep -q "$(cut -d' ' -f2 "$ENGINE_T/id.pub")" "$ENGINE_T/desc.out" && fail "describe printed a key"
out=$(kv get secret -n default 2>&1) || fail "kvcon get secret: $out"
grep -Eq '^NAME +TYPE +DATA +AGE$' <<<"$out" && grep -Eq '^sshvm-keys +Opaque +1 ' <<<"$out" || fail "kvcon get secret: $out"
grep -q "$(cut -d' ' -f2 "$ENGINE_T/id2.pub")" "$XDG_STATE_HOME"/kvcon/*.log 2>/dev/null && fail "a key reached the log"
[[ $(stat -c %a "$XDG_STATE_HOME/kvcon/engine-data/secrets/default_sshvm-keys.json") == 600 ]] || fail "the Secret's file is not 0600"
# userPassword (a JSON patch of the VM, as kubectl patch --type=json sends it): qemu-ga's guest-set-user-password
# runs passwd (qemu-ga 7.2), which the lab guest's busybox does not have: the condition turns False with the agent's error
k patch vm sshvm --type=json -p '[{"op":"add","path":"/spec/template/spec/accessCredentials/-","value":{"userPassword":{"source":{"secret":{"secretName":"sshvm-pw"}},"propagationMethod":{"qemuGuestAgent":{}}}}}]' >/dev/null ||
    fail "kubectl patch --type=json"
kv credentials set-password --user root --password not-this-one default/sshvm >"$ENGINE_T/cred.out" 2>&1 && fail "set-password without its Secret"
k create secret generic sshvm-pw --from-literal=root=kvcon-pw >/dev/null || fail "kubectl create secret sshvm-pw"
credmsg() { vmi_json sshvm | jq -r '[.status.conditions[]? | select(.type == "AccessCredentialsSynchronized")][0] | "\(.status) \(.reason) \(.message)"'; }
credfail() { credmsg | grep -c "^False AccessCredentialsSyncFailed .*guest-set-user-password.*cannot find 'passwd' program" || true; }
wait_eq 20 1 credfail ||
    fail "userPassword: $(credmsg)"
# a user without a Secret: a new one owned by the VM (generateName), its entry appended by a JSON patch
kv credentials add-ssh-key --user guest --file "$ENGINE_T/id2.pub" --force default/sshvm >"$ENGINE_T/cred.out" 2>&1 ||
    { cat "$ENGINE_T/cred.out"; fail "credentials add-ssh-key to a new Secret"; }
owned=$(sed -nE 's/^Successfully added the key to new secret "(sshvm-ssh-key-[a-z0-9]{5})"$/\1/p' "$ENGINE_T/cred.out")
[[ -n $owned ]] || fail "add-ssh-key said: $(cat "$ENGINE_T/cred.out")"
[[ $(k get secret "$owned" -o jsonpath='{.metadata.ownerReferences[0].uid}') == $(vm_json sshvm | jq -r .metadata.uid) ]] ||
    fail "the new Secret's owner"
[[ $(k get vm sshvm -o jsonpath='{.spec.template.spec.accessCredentials[3].sshPublicKey.propagationMethod.qemuGuestAgent.users[0]}') == guest ]] ||
    fail "accessCredentials after add-ssh-key: $(k get vm sshvm -o jsonpath='{.spec.template.spec.accessCredentials}')"

step "port-forward to the undeclared guest port 8000 (busybox httpd)"
"$KV" -c "$URI" port-forward vmi/sshvm.default 0:8000 >"$ENGINE_T/pf.out" 2>"$ENGINE_T/pf.err" & pfpid=$!
trap 'kill $pfpid 2>/dev/null || true; engine_embed_cleanup' EXIT
wait_eq 10 1 bash -c "grep -c '^Forwarding from 127.0.0.1:[0-9]* -> 8000\$' '$ENGINE_T/pf.out'" || { cat "$ENGINE_T/pf.err"; fail "no Forwarding line"; }
lp=$(sed -nE 's/^Forwarding from 127\.0\.0\.1:([0-9]+) -> 8000$/\1/p' "$ENGINE_T/pf.out")
got=$(curl -s --max-time 10 "http://127.0.0.1:$lp/") || true
[[ $got == KVCON-HTTPD-OK ]] || { cat "$ENGINE_T/pf.err"; fail "httpd through the forward: '$got'"; }
kill -INT $pfpid
wait $pfpid 2>/dev/null || true

# one local peer: QEMU's user network sends a guest port's UDP answers out of its first rule for that port
step "port-forward udp/0:7000: datagrams to the guest's UDP echo and back, each one datagram"
"$KV" -c "$URI" port-forward vmi/sshvm.default udp/0:7000 >"$ENGINE_T/pfu.out" 2>"$ENGINE_T/pfu.err" & pfpid=$!
wait_eq 10 1 bash -c "grep -c '^Forwarding from 127.0.0.1:[0-9]* -> 7000\$' '$ENGINE_T/pfu.out'" || { cat "$ENGINE_T/pfu.err"; fail "no UDP Forwarding line"; }
lp=$(sed -nE 's/^Forwarding from 127\.0\.0\.1:([0-9]+) -> 7000$/\1/p' "$ENGINE_T/pfu.out")
python3 - "$lp" <<'PY' || { cat "$ENGINE_T/pfu.err"; fail "UDP through the forward"; }
import socket, sys, time
port = int(sys.argv[1])
def echo(s, msg):
    # UDP may lose a datagram: asked again until the answer comes (10 s)
    until = time.time() + 10
    while time.time() < until:
        s.sendto(msg, ("127.0.0.1", port))
        try:
            got = s.recv(65536)
        except socket.timeout:
            continue
        assert got == msg, "echo %r for %r" % (got, msg)
        return
    raise SystemExit("no echo of %r" % msg)
a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
a.settimeout(0.5)
echo(a, b"KVCON-UDP-a")
echo(a, b"KVCON-UDP-a" * 100)  # one 1100-byte datagram stays one
echo(a, b"KVCON-UDP-a again")
PY
kill -INT $pfpid
wait $pfpid 2>/dev/null || true
step "the dashboard's ssh key (a): the terminal is ssh's, ctrl-c is the guest shell's, the dashboard comes back"
TM="tmux -L kvssh-$$ -f /dev/null"
trap '$TM kill-server 2>/dev/null || true; engine_embed_cleanup' EXIT
$TM new-session -d -x 150 -y 40 -s k -e TERM=xterm-256color \
    "env HOME=$HOME KUBECONFIG=/nonexistent KVCON_LOG=$ENGINE_T/ui.log XDG_STATE_HOME=$XDG_STATE_HOME KVCON_ENGINE_IMAGES=$KVCON_ENGINE_IMAGES KVCON_ENGINE_ACCEL=$KVCON_ENGINE_ACCEL $KV -c '$URI'; echo KVCON-DASHBOARD-EXITED; sleep 600"
ui_wait() { # ui_wait REGEX: polls the screen (30 s)
    local until=$(($(date +%s) + 30))
    while (($(date +%s) < until)); do
        $TM capture-pane -p -t k | grep -qE -- "$1" && return 0
        sleep 0.1
    done
    $TM capture-pane -p -t k
    fail "the screen never showed /$1/"
}
ui_wait ' sshvm +Running '
$TM send-keys -t k a
ui_wait 'ssh into sshvm as \[USER\]'
$TM send-keys -t k -l "root -i $ENGINE_T/id --known-hosts $ENGINE_T/known_hosts -t -oBatchMode=yes"
$TM send-keys -t k Enter
ui_wait '^~ #'
$TM send-keys -t k -l 'sleep 90'
$TM send-keys -t k Enter
sleeping() { kv ssh "${sshopts[@]}" -c 'ps | grep -c "[s]leep 90"' root@vm/sshvm.default 2>/dev/null || true; }
wait_eq 20 1 sleeping || fail "the guest shell's sleep never ran"
$TM send-keys -t k C-c
$TM send-keys -t k -l 'echo "KVCON-UI-$((6*7))"'
$TM send-keys -t k Enter
ui_wait '^KVCON-UI-42'
$TM send-keys -t k -l 'exit'
$TM send-keys -t k Enter
ui_wait 'ssh into default/sshvm ended'
ui_wait ' sshvm +Running '
$TM capture-pane -p -t k | grep -q KVCON-DASHBOARD-EXITED && fail "the dashboard ended with ssh"
$TM send-keys -t k :q Enter
ui_wait KVCON-DASHBOARD-EXITED
$TM kill-server 2>/dev/null || true
echo "   all in $(($(date +%s) - t0)) s from the start"
kv engine stop sshvm --grace-period 0 >/dev/null || fail "stop"
# the garbage collector: the Secret the VM owns goes with it, the others stay
kv engine delete sshvm >/dev/null || fail "delete"
secrets() { k get secret -o name 2>/dev/null | sort | tr '\n' ' '; }
wait_eq 20 "secret/sshvm-keys secret/sshvm-pw secret/sshvm-ud " secrets || fail "secrets after the VM's deletion: $(secrets)"
echo PASS
