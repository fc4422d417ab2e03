#!/usr/bin/env bash
# cleanroom.sh [COMMIT] - the README's two commands on a fresh Debian 12, as a new user would run them.
#
# A minimal Debian 12 root (mmdebstrap --variant=minbase, plus git, make and ca-certificates; the tarball is
# cached in $KVCON_CLEANROOM_CACHE, default /var/cache/kvcon-cleanroom) is unpacked into a new directory and
# entered through a private mount namespace and a pid namespace of its own, made like a booted machine: the root
# a mount point, proc, /sys and /dev (rbind), a devpts instance of its own, tmpfs on /run (with /run/lock) and
# /tmp, resolv.conf and /etc/hosts. COMMIT (default HEAD) is cloned inside with git, then, with a clean
# environment, in the clone:
#   make run     in a tmux pane, until the dashboard lists the demo VM; `s` starts it, `c` opens its serial
#                console and a shell prompt answers; then the dashboard is quit
#   make check   must end with `N passed, 0 failed, 0 skipped` (as root, make check counts a skip as a failure)
# Prints the time of each phase. Every process started in the clean room (guests, daemons, tmux) is ended by
# pid and every mount released on exit, also on failure. Needs root. Exit 0 when both commands passed.
#
# Env: KVCON_CLEANROOM_CACHE (tarball, apt's .debs, deps.sh's downloads), KVCON_CLEANROOM_FRESH=1 (no .deb or
# download cache: every package fetched again), KVCON_CLEANROOM_STOP=run (stop after `make run`),
# KVCON_CLEANROOM_KEEP=1 (keep the root's directory), KVCON_CLEANROOM_DIR (parent directory, default /var/tmp).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${KVCON_CLEANROOM_CACHE:-/var/cache/kvcon-cleanroom}
T_RUN=${KVCON_CLEANROOM_RUN_TIMEOUT:-1500}   # make run to the dashboard, packages included
T_CHECK=${KVCON_CLEANROOM_CHECK_TIMEOUT:-2700}
PHASES=()

log() { echo "cleanroom: $*" >&2; }
die() { log "FAIL: $*"; exit 1; }
now() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
phase() { PHASES+=("$(printf '%-34s %7s s' "$1" "$2")"); log "phase: $1: $2 s"; }

[[ $(id -u) == 0 ]] || die "needs root (mmdebstrap, mount and pid namespaces, chroot)"
for c in mmdebstrap tmux unshare nsenter chroot git python3; do
    command -v $c >/dev/null || { "$REPO/scripts/deps.sh" check && break; }
done
commit=$(git -C "$REPO" rev-parse --verify "${1:-HEAD}^{commit}") || die "no commit ${1:-HEAD}"
T0=$(now)

# ------------------------------------------------------------------ the root
mkdir -p "$CACHE"
if [[ ${KVCON_CLEANROOM_FRESH:-0} != 1 ]]; then
    # one clean room at a time on the shared caches (two apt-gets would meet on one archives lock)
    exec 8>"$CACHE/.lock"
    flock -n 8 || { log "waiting for another clean room on $CACHE"; flock -w 3600 8 || die "$CACHE stays locked"; }
fi
tarball=$CACHE/bookworm-minbase.tar
mirrors=("deb http://deb.debian.org/debian bookworm main"
    "deb http://deb.debian.org/debian bookworm-updates main"
    "deb http://deb.debian.org/debian-security bookworm-security main")
t=$(now)
if [[ ! -s $tarball ]]; then
    log "mmdebstrap --variant=minbase bookworm -> $tarball"
    mmdebstrap --quiet --variant=minbase --format=tar --include=ca-certificates,git,make bookworm "$tarball.part" \
        "${mirrors[@]}" || die "mmdebstrap failed"
    mv -f "$tarball.part" "$tarball"
    phase "mmdebstrap (minbase + git, make)" "$(secs "$t" "$(now)")"
else
    phase "mmdebstrap (cached $(date -r "$tarball" +%F))" "$(secs "$t" "$(now)")"
fi

mkdir -p "${KVCON_CLEANROOM_DIR:-/var/tmp}"
W=$(mktemp -d "${KVCON_CLEANROOM_DIR:-/var/tmp}/kvcon-cleanroom.XXXXXX")
R=$W/root
TMUX_SOCK=$W/tmux.sock
TM=(tmux -S "$TMUX_SOCK" -f /dev/null)
HOLDER=      # pid 1 of the clean room's pid namespace (as seen from here)
TMUX_PID=
log "root: $R (commit $commit)"

# ------------------------------------------------------------------ clean-up
# pids of every process in the clean room's pid namespace but its pid 1
room_pids() {
    local ns p st
    ns=$(readlink "/proc/$HOLDER/ns/pid" 2>/dev/null) || return 0
    for p in /proc/[0-9]*; do
        [[ ${p#/proc/} != "$HOLDER" ]] || continue
        [[ $(readlink "$p/ns/pid" 2>/dev/null) == "$ns" ]] || continue
        # a zombie has ended already; the holder (pid 1 of the room) reaps it within 0.5 s
        st=$(cat "$p/stat" 2>/dev/null) || continue
        st=${st##*) }
        [[ ${st%% *} != Z ]] && echo "${p#/proc/}"
    done
    return 0
}
cleanup() {
    local rc=$? pids p i names
    trap - EXIT INT TERM
    set +e
    if [[ -n $TMUX_PID ]] && kill -0 "$TMUX_PID" 2>/dev/null; then
        kill -TERM "$TMUX_PID"
    fi
    if [[ -n $HOLDER ]] && kill -0 "$HOLDER" 2>/dev/null; then
        pids=$(room_pids)
        if [[ -n $pids ]]; then
            names=$(for p in $pids; do cat "/proc/$p/comm" 2>/dev/null; done | sort | uniq -c | awk '{printf "%s%s x%s", s, $2, $1; s=", "}')
            log "ending $(echo $pids | wc -w) processes left in the clean room by pid: $names"
            # shellcheck disable=SC2086
            kill -TERM $pids 2>/dev/null
            for ((i = 0; i < 100; i++)); do
                pids=$(room_pids)
                [[ -n $pids ]] || break
                sleep 0.1
            done
            # shellcheck disable=SC2086
            [[ -z $pids ]] || { log "KILL after 10 s: $pids"; kill -KILL $pids 2>/dev/null; }
        fi
        # the mounts live in the holder's private mount namespace: release them, then end it
        nsenter -t "$HOLDER" -m -- umount -R "$R" 2>/dev/null || nsenter -t "$HOLDER" -m -- umount -R -l "$R"
        kill -KILL "$HOLDER" 2>/dev/null
        for ((i = 0; i < 100; i++)); do kill -0 "$HOLDER" 2>/dev/null || break; sleep 0.1; done
        if [[ -n $(room_pids) ]]; then
            log "WARNING: processes survive: $(room_pids)"
        elif kill -0 "$HOLDER" 2>/dev/null; then
            log "WARNING: the clean room's pid 1 ($HOLDER) survives"
        else
            log "clean-up: every process of the clean room ended, its mount namespace gone with its pid 1"
        fi
    fi
    if [[ -n $TMUX_PID ]]; then
        for ((i = 0; i < 50; i++)); do kill -0 "$TMUX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$TMUX_PID" 2>/dev/null
    fi
    if grep -qF " $W/" /proc/self/mountinfo; then
        log "WARNING: mounts left under $W, not removing it"
    elif [[ ${KVCON_CLEANROOM_KEEP:-0} == 1 ]]; then
        log "kept $W"
    else
        rm -rf --one-file-system "$W"
    fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t=$(now)
mkdir -p "$R"
tar -xf "$tarball" -C "$R"
# what a booted Debian 12 has and a minbase tarball does not
cp -L /etc/resolv.conf "$R/etc/resolv.conf"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tcleanroom\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$R/etc/hosts"
echo cleanroom >"$R/etc/hostname"
# ... and the network's: CAs this machine trusts beyond Debian's (a TLS-intercepting proxy), as an admin would add
# them (/usr/local/share/ca-certificates); a fresh machine on this network would need them as it needs resolv.conf
extra=$(python3 - "$R" <<'PY'
import os, re, sys
pem = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)
def certs(path):
    try:
        return pem.findall(open(path).read())
    except OSError:
        return []
room = set(certs(sys.argv[1] + "/etc/ssl/certs/ca-certificates.crt"))
extra = [c for c in certs("/etc/ssl/certs/ca-certificates.crt") if c not in room]
d = sys.argv[1] + "/usr/local/share/ca-certificates"
os.makedirs(d, exist_ok=True)
for i, c in enumerate(extra):
    with open("%s/cleanroom-host-%d.crt" % (d, i), "w") as f:
        f.write(c + "\n")
print(len(extra))
PY
)
if [[ $extra != 0 ]]; then
    log "this machine trusts $extra CA(s) beyond Debian's (a proxy's?): added to the clean room"
    chroot "$R" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates in the clean room failed"
fi
# the commit under test, as a repository to clone from (what `git clone URL` would fetch)
git init -q --bare "$R/root/kvcon.git"
git -C "$REPO" push -q "$R/root/kvcon.git" "$commit:refs/heads/main"
git -C "$R/root/kvcon.git" symbolic-ref HEAD refs/heads/main
if [[ ${KVCON_CLEANROOM_FRESH:-0} != 1 ]]; then
    # the same bytes a new machine downloads, kept between runs: apt's .debs, deps.sh's kubectl download
    mkdir -p "$CACHE/apt-archives/partial" "$CACHE/downloads" "$R/var/cache/kvcon" "$R/var/cache/apt/archives"
fi
phase "unpack + clone source" "$(secs "$t" "$(now)")"

# The clean room's pid 1: makes the mounts in its private mount namespace, then only reaps orphans (the
# daemons' double forks) until it is killed.
cat >"$W/holder.sh" <<EOF
#!/bin/bash
set -e
R='$R'
mount --bind "\$R" "\$R"                       # libvirt gives each guest a mount namespace: needs a mount point
mount -t proc proc "\$R/proc"
mount --rbind /sys "\$R/sys"; mount --make-rslave "\$R/sys"
mount --rbind /dev "\$R/dev"; mount --make-rslave "\$R/dev"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,gid=5 devpts "\$R/dev/pts"
mount --bind "\$R/dev/pts/ptmx" "\$R/dev/ptmx"     # QEMU's serial pty comes from this instance
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "\$R/run"
mkdir -p "\$R/run/lock"                           # libvirt's console lock files
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "\$R/tmp"
if [ '${KVCON_CLEANROOM_FRESH:-0}' != 1 ]; then
    mount --bind '$CACHE/apt-archives' "\$R/var/cache/apt/archives"
    mount --bind '$CACHE/downloads' "\$R/var/cache/kvcon"
fi
echo ready >'$W/holder.ready'
exec /usr/bin/python3 -c '
import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(0.5)
'
EOF
chmod 755 "$W/holder.sh"
unshare --mount --pid --fork --propagation private -- "$W/holder.sh" >"$W/holder.out" 2>&1 &
UNSHARE=$!
for ((i = 0; i < 100; i++)); do
    [[ -e $W/holder.ready ]] && break
    kill -0 $UNSHARE 2>/dev/null || { cat "$W/holder.out" >&2; die "the clean room's mounts failed"; }
    sleep 0.1
done
[[ -e $W/holder.ready ]] || die "the clean room did not come up"
HOLDER=$(pgrep -P "$UNSHARE" | head -n1)
[[ -n $HOLDER ]] || die "no pid 1 in the clean room"

# a command inside: the clean room's namespaces, chroot, an environment as a fresh login as root would have it
CLEAN_ENV=(HOME=/root USER=root LOGNAME=root SHELL=/bin/bash
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
inside() { nsenter -t "$HOLDER" -m -p -- chroot "$R" /usr/bin/env -i "${CLEAN_ENV[@]}" "$@"; }

t=$(now)
inside /bin/bash -c 'cd /root && git clone -q /root/kvcon.git kvcon' || die "git clone inside failed"
inside /bin/bash -c 'git -C /root/kvcon log --oneline -1' >&2
phase "git clone inside" "$(secs "$t" "$(now)")"

# ------------------------------------------------------------------ make run
log "make run (tmux, 160x45)"
# the pane's shell: cd into the clone, the README's first command, then its status (the pane stays)
printf '#!/bin/bash\ncd /root/kvcon\nmake run\necho "MAKE-RUN-EXIT=$?"\nexec sleep 86400\n' >"$R/root/.make-run"
chmod 755 "$R/root/.make-run"
: >"$W/make-run.out"
"${TM[@]}" new-session -d -x 160 -y 45 -s cr \
    "nsenter -t $HOLDER -m -p -- chroot $R /usr/bin/env -i ${CLEAN_ENV[*]} TERM=xterm-256color /root/.make-run"
TMUX_PID=$("${TM[@]}" display -p '#{pid}')
"${TM[@]}" set -g history-limit 50000 >/dev/null
"${TM[@]}" pipe-pane -t cr -o "cat >>$W/make-run.out"
screen() { "${TM[@]}" capture-pane -p -t cr 2>/dev/null; }
alt() { "${TM[@]}" display -p -t cr '#{alternate_on}' 2>/dev/null; }
keys() { "${TM[@]}" send-keys -t cr "$@"; }
show() {
    log "--- screen:"; screen >&2
    log "--- make run output (tail):"; tr -d '\r' <"$W/make-run.out" | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g' | tail -n 40 >&2
}
# wait_screen REGEX SECONDS [alt]: polls the pane until it shows REGEX (on the alternate screen: the dashboard)
wait_screen() {
    local re=$1 end=$((SECONDS + $2))
    while ((SECONDS < end)); do
        if screen | grep -qE -- "$re" && { [[ ${3:-} != alt ]] || [[ $(alt) == 1 ]]; }; then return 0; fi
        grep -q 'MAKE-RUN-EXIT=' "$W/make-run.out" 2>/dev/null && { show; die "make run exited: $(grep -a -o 'MAKE-RUN-EXIT=[0-9]*' "$W/make-run.out")"; }
        sleep 0.2
    done
    show
    die "timed out after $2 s waiting for /$re/"
}
# marks in make run's output, timed as they appear
t=$(now)
declare -A seen=()
marks=("deps.sh: installing" "^cc " "run-demo: building the demo guest" "run-demo: warming")
end=$((SECONDS + T_RUN))
while :; do
    out=$(tr -d '\r' <"$W/make-run.out" 2>/dev/null | sed 's/\x1b\[[0-9;?]*[a-zA-Z]//g')
    for m in "${marks[@]}"; do
        [[ -z ${seen[$m]:-} ]] && grep -qE -- "$m" <<<"$out" && seen[$m]=$(now) && log "make run: '$m' after $(secs "$t" "${seen[$m]}") s"
    done
    if [[ $(alt) == 1 ]] && screen | grep -qE ' demo-vm +'; then break; fi
    grep -q 'MAKE-RUN-EXIT=' <<<"$out" && { show; die "make run exited before the dashboard: $(grep -o 'MAKE-RUN-EXIT=[0-9]*' <<<"$out")"; }
    ((SECONDS < end)) || { show; die "make run: no dashboard with demo-vm after $T_RUN s"; }
    sleep 0.2
done
t_dash=$(now)
# packages: from the start to the first compile (build packages), and from the end of the build to the demo
# guest (run-time packages); build: the compiles
t_cc=${seen["^cc "]:-$t}
t_demo=${seen["run-demo: building the demo guest"]:-$t_dash}
phase "make run: build packages" "$(secs "$t" "$t_cc")"
phase "make run: build + run-time packages" "$(secs "$t_cc" "$t_demo")"
phase "make run: demo guest, warm-up, apply" "$(secs "$t_demo" "$t_dash")"
phase "make run: to the dashboard (total)" "$(secs "$t" "$t_dash")"
screen >&2

t=$(now)
wait_screen ' demo-vm +([^ ]+ +)?Stopped' 30 alt
keys s
wait_screen ' demo-vm +([^ ]+ +)?Running' 120 alt
keys c
wait_screen '1:console' 20 alt
# the guest prints its marker when its shell starts; once the pane is up, Enter brings a fresh prompt
end=$((SECONDS + 120))
until screen | grep -qE 'guest:[^ ]*# *$|guest:~#'; do
    ((SECONDS < end)) || { show; die "no guest shell prompt in the console pane after 120 s"; }
    keys Enter
    for ((i = 0; i < 10; i++)); do screen | grep -qE 'guest:~#' && break; sleep 0.3; done
done
keys -l 'echo cleanroom-$((6*7))'; keys Enter
wait_screen 'cleanroom-42' 30 alt
phase "guest shell (s, c, prompt answers)" "$(secs "$t" "$(now)")"
screen >&2
keys C-]
keys ':'; keys -l 'q'; keys Enter
end=$((SECONDS + 30))
until grep -aq 'MAKE-RUN-EXIT=' "$W/make-run.out"; do
    ((SECONDS < end)) || { show; die "kvcon did not quit within 30 s of :q"; }
    sleep 0.2
done
grep -aq 'MAKE-RUN-EXIT=0' "$W/make-run.out" || { show; die "make run: $(grep -ao 'MAKE-RUN-EXIT=[0-9]*' "$W/make-run.out")"; }
log "make run: the dashboard quit, make run exit 0"
# what make run leaves running, as the README says: the engine service the dashboard started on demand and the
# demo guest. Stopped the way the README tells a user (the VM, then the service by its pid file), before make
# check, so that what is left after make check is the tests' own. The pane (its `sleep`) goes first.
"${TM[@]}" kill-session -t cr 2>/dev/null || true
# the service is the engine's own executable, built beside kvcon (kvcon links none of the engine's libraries)
inside /bin/bash -c 'for f in /root/.local/state/kvcon/engine-*.sock.pid; do [ -f "$f" ] || continue
    [ "$(readlink "/proc/$(cat "$f")/exe")" = /root/kvcon/kvcon-engine ] || exit 1; done' ||
    die "the engine service make run left is not /root/kvcon/kvcon-engine"
inside /bin/bash -c 'cd /root/kvcon && ./kvcon engine stop demo-vm --force' >&2 || die "engine stop demo-vm after make run"
# make install puts kvcon-engine beside kvcon, where the installed kvcon looks for it
inside /bin/bash -c 'cd /root/kvcon && make -s install DESTDIR=/tmp/kvcon-inst >/dev/null &&
    [ -x /tmp/kvcon-inst/usr/local/bin/kvcon-engine ] && /tmp/kvcon-inst/usr/local/bin/kvcon version --client >/dev/null &&
    rm -rf /tmp/kvcon-inst' >&2 || die "make install: no kvcon-engine beside kvcon"
inside /bin/bash -c 'for f in /root/.local/state/kvcon/engine-*.sock.pid; do [ -f "$f" ] && kill -TERM "$(cat "$f")"; done; exit 0'
for ((i = 0; i < 100; i++)); do
    [[ -z $(room_pids) ]] && break
    sleep 0.1
done
if [[ -n $(room_pids) ]]; then
    for p in $(room_pids); do log "left after make run: $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | head -c 200)"; done
    die "processes left in the clean room after make run, its VM and its service stopped"
fi

if [[ ${KVCON_CLEANROOM_STOP:-} == run ]]; then
    log "KVCON_CLEANROOM_STOP=run: not running make check"
    phase "total" "$(secs "$T0" "$(now)")"
    printf '%s\n' "${PHASES[@]}"
    exit 0
fi

# ------------------------------------------------------------------ make check
log "make check (output: $W/make-check.out)"
t=$(now)
rc=0
timeout -k 30 "$T_CHECK" nsenter -t "$HOLDER" -m -p -- chroot "$R" /usr/bin/env -i "${CLEAN_ENV[@]}" \
    /bin/bash -c 'cd /root/kvcon && make check' </dev/null >"$W/make-check.out" 2>&1 || rc=$?
phase "make check" "$(secs "$t" "$(now)")"
# no test may leave a process behind (tests/run-e2e.sh fails the test that does; this is the room's own count)
for ((i = 0; i < 50; i++)); do # what the last test ended is given up to 5 s to be gone
    left=$(room_pids)
    [[ -z $left ]] && break
    sleep 0.1
done
if [[ -n $left ]]; then
    for p in $left; do log "left after make check: $p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | head -c 200)"; done
    rc=1
fi
grep -E '^  (FAIL|SKIP) |passed, ' "$W/make-check.out" >&2 || true
last=$(tail -n1 "$W/make-check.out")
log "make check: exit $rc, last line: $last"
if [[ $rc != 0 ]] || ! [[ $last =~ [0-9]+\ passed,\ 0\ failed,\ 0\ skipped$ ]]; then
    log "--- make check output (tail):"
    tail -n 60 "$W/make-check.out" >&2
    cp "$W/make-check.out" "${KVCON_CLEANROOM_LOG:-/var/tmp/kvcon-cleanroom-check.log}" 2>/dev/null || true
    die "make check did not pass in the clean room (log: ${KVCON_CLEANROOM_LOG:-/var/tmp/kvcon-cleanroom-check.log})"
fi
phase "total" "$(secs "$T0" "$(now)")"
printf '%s\n' "${PHASES[@]}"
echo "cleanroom: PASS: make run and make check in a fresh Debian 12 root ($last)"
