#!/usr/bin/env bash
# Baselines from the test lab, without kvcon, that kvcon's own figures are compared against:
#  - boot: QEMU started paused, resumed, until KVCON-GUEST-READY on the serial socket (qemu-guest.sh);
#  - libvirt: `virsh start --paused` + console attached + resume, until the marker (a private libvirtd);
#  - migration: `virsh migrate --live --p2p` of a running guest between the two lab hosts, alternating
#    a->b and b->a, wall time and QEMU's downtime (domjobinfo --completed).
# LAB_BENCH_RUNS (default 5) runs each; prints min / median / max in ms. Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
LAB=$PWD/tests/lab
RUNS=${LAB_BENCH_RUNS:-5}
[[ $(id -u) == 0 ]] || { echo "lab_baseline: needs root, skipped"; exit 0; }

WORK=$(mktemp -d /tmp/kvlabb.XXXXXX)
export KVCON_TWOHOST_NS="kvb$$-" KVCON_TWOHOST_DIR=$WORK/2h
cleanup() {
    "$LAB/qemu-guest.sh" stop "$WORK/q" >/dev/null 2>&1 || true
    "$LAB/libvirtd.sh" down "$WORK/lv" >/dev/null 2>&1 || true
    "$LAB/twohost.sh" down >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
ms() { date +%s%3N; }
stats() { # label values...: min / median / max
    local label=$1
    shift
    printf '%s\n' "$@" | sort -n | awk -v l="$label" '{v[NR]=$1} END {
        printf "  %-44s min %6d  median %6d  max %6d ms  (n=%d)\n", l, v[1], v[int((NR+1)/2)], v[NR], NR }'
}
xml() { # name
    cat <<EOF
<domain type='qemu'><name>$1</name><memory unit='MiB'>256</memory><vcpu>1</vcpu>
<os><type arch='x86_64' machine='pc'>hvm</type><kernel>$KVCON_GUEST_KERNEL</kernel>
<initrd>$KVCON_GUEST_INITRD</initrd><cmdline>$KVCON_GUEST_CMDLINE</cmdline></os>
<features><acpi/></features><devices><serial type='pty'><target port='0'/></serial>
<console type='pty'><target type='serial' port='0'/></console></devices></domain>
EOF
}

eval "$("$PWD/scripts/demo-guest.sh" 2>/dev/null)"
echo "lab baselines, $RUNS runs each ($(nproc) cores, TCG, load average $(cut -d" " -f1-3 /proc/loadavg))"

t=()
for ((i = 0; i < RUNS; i++)); do
    "$LAB/qemu-guest.sh" start "$WORK/q" -S >/dev/null
    t0=$(ms)
    "$LAB/serial-probe" "$WORK/q/serial.sock" --quiet --timeout 60 --cont "$WORK/q/qmp.sock" --wait KVCON-GUEST-READY
    t+=($(($(ms) - t0)))
    "$LAB/qemu-guest.sh" stop "$WORK/q"
done
stats "QEMU: resume -> marker on serial.sock" "${t[@]}"

uri=$("$LAB/libvirtd.sh" up "$WORK/lv" 2>/dev/null)
xml kvb-boot >"$WORK/boot.xml"
virsh -q -c "$uri" define "$WORK/boot.xml" >/dev/null
t=()
for ((i = 0; i < RUNS; i++)); do
    t0=$(ms)
    virsh -q -c "$uri" start --paused kvb-boot >/dev/null
    "$LAB/serial-probe" --libvirt "$uri" kvb-boot --quiet --timeout 60 --resume --wait KVCON-GUEST-READY
    t+=($(($(ms) - t0)))
    virsh -q -c "$uri" destroy kvb-boot >/dev/null
done
stats "libvirt: virsh start -> marker on console" "${t[@]}"
"$LAB/libvirtd.sh" down "$WORK/lv"

eval "$("$LAB/twohost.sh" up 2>/dev/null)"
xml kvb-mig >"$WORK/mig.xml"
virsh -q -c "$SRC_URI" define "$WORK/mig.xml" >/dev/null
virsh -q -c "$SRC_URI" start kvb-mig >/dev/null
"$LAB/serial-probe" --libvirt "$SRC_URI" kvb-mig --quiet --timeout 60 --ready
t=()
down=()
from=$SRC_URI to=$DST_URI to_tcp=$DST_TCP_URI
for ((i = 0; i < RUNS; i++)); do
    t0=$(ms)
    virsh -q -c "$from" migrate --live --p2p --persistent --undefinesource kvb-mig "$to_tcp"
    t+=($(($(ms) - t0)))
    d=$(virsh -q -c "$to" domjobinfo kvb-mig --completed 2>/dev/null | awk -F': *' '/^Total downtime/ {print $2+0}')
    down+=("${d:-0}")
    if [[ $from == "$SRC_URI" ]]; then
        from=$DST_URI to=$SRC_URI to_tcp=$SRC_TCP_URI
    else
        from=$SRC_URI to=$DST_URI to_tcp=$DST_TCP_URI
    fi
done
stats "virsh migrate --live --p2p (wall)" "${t[@]}"
stats "  downtime (domjobinfo --completed)" "${down[@]}"
