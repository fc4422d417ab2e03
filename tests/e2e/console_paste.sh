#!/bin/bash
# e2e-lane: cluster
# Bracketed paste, in tmux (`paste-buffer -p` brackets a paste only while the application in the pane has turned
# bracketed paste on, as a real terminal does):
#  1. `kvcon console` on a serial server whose "guest" turns DECSET 2004 on: a paste reaches the guest wrapped in
#     ESC[200~ ... ESC[201~, line ends as CR; on a guest that did not ask, the same paste arrives raw;
#  2. after kvcon exits, and after it crashes, the outer terminal's bracketed paste mode is off again (a paste
#     into the program that follows carries no brackets);
#  3. the dashboard (fakekube): a paste while the list has focus is not taken as key commands, a paste into the
#     `/` prompt is typed into it (not submitted), a paste into a console pane reaches the (echoing) guest.
. "$(dirname "$0")/ui_lib.inc"
port_file="$W/port"
cat >"$W/guest.py" <<'PY'
import socket, sys
d = sys.argv[1]
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 0)); s.listen(2)
open(d + "/port", "w").write(str(s.getsockname()[1]))
for n, hello in ((1, b"\033[?2004hGUEST-READY-1 (bracketed paste on)\r\n"), (2, b"GUEST-READY-2 (plain)\r\n")):
    c, _ = s.accept()
    c.sendall(hello)
    with open("%s/recv%d" % (d, n), "wb", buffering=0) as f:
        while True:
            b = c.recv(4096)
            if not b:
                break
            f.write(b)
            c.sendall(b.replace(b"\033", b"<ESC>"))
    c.close()
PY
$PY "$W/guest.py" "$W" >"$W/guest.log" 2>&1 &
GPID=$!
trap 'kill $GPID 2>/dev/null; ui_cleanup' EXIT
for _ in $(seq 100); do [ -s "$port_file" ] && break; sleep 0.05; done
port=$(cat "$port_file")
# recv_is N EXPECTED: the guest's connection N received exactly EXPECTED (printf format), polled
recv_is() {
	local want got deadline=$((SECONDS + 10))
	want=$(printf "$2" | od -An -c | tr -s ' \n' ' ')
	while [ $SECONDS -lt $deadline ]; do
		got=$(od -An -c "$W/recv$1" 2>/dev/null | tr -s ' \n' ' ')
		[ "$got" = "$want" ] && return 0
		sleep 0.1
	done
	fail "guest $1 received '$got', expected '$want'"
}

# 1a. the guest asked for bracketed paste
$T has-session -t keep 2>/dev/null || $T new-session -d -s keep "sleep 600"
$T new-session -d -x 100 -y 30 -s k -e "TERM=xterm-256color" \
	"KVCON_LOG=$W/kvcon.log $KVCON console tcp:127.0.0.1:$port; echo KVCON_EXIT=\$? > $W/exit; exec cat > $W/after"
wait_for 'GUEST-READY-1' 10
$T set-buffer -b p1 "$(printf 'echo one\necho two')"
$T paste-buffer -p -b p1 -t k
recv_is 1 '\033[200~echo one\recho two\033[201~'
wait_for '<ESC>\[201~' 5

# 2. Ctrl+] ends kvcon; the shell's cat then gets a paste without brackets
keys C-]
for _ in $(seq 50); do [ -s "$W/exit" ] && break; sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "kvcon exit: $(cat "$W/exit" 2>/dev/null)"
$T set-buffer -b p2 "$(printf 'AFTER-EXIT\n')"
$T paste-buffer -p -b p2 -t k
keys Enter
for _ in $(seq 50); do grep -q AFTER-EXIT "$W/after" 2>/dev/null && break; sleep 0.1; done
grep -q AFTER-EXIT "$W/after" || fail "the paste after exit did not arrive"
grep -q '200~' "$W/after" && fail "bracketed paste still on after kvcon exited: $(od -c "$W/after" | head -3)"
$T kill-session -t k

# 1b. a guest that did not ask gets the paste raw; then kvcon crashes (SIGSEGV): the crash path turns bracketed
# paste off too
: >"$W/exit"
$T new-session -d -x 100 -y 30 -s k -e "TERM=xterm-256color" \
	"KVCON_LOG=$W/kvcon.log $KVCON console tcp:127.0.0.1:$port; echo KVCON_EXIT=\$? > $W/exit; exec cat > $W/after2"
wait_for 'GUEST-READY-2' 10
$T paste-buffer -p -b p1 -t k
recv_is 2 'echo one\recho two'
kpid=$(pgrep -P "$($T display -p -t k '#{pane_pid}')" -f 'console tcp:')
[ -n "$kpid" ] || fail "no kvcon process"
kill -SEGV "$kpid"
for _ in $(seq 50); do [ -s "$W/exit" ] && break; sleep 0.1; done
grep -q 'KVCON_EXIT=139' "$W/exit" || fail "kvcon did not die of SIGSEGV: $(cat "$W/exit" 2>/dev/null)"
$T paste-buffer -p -b p2 -t k
keys Enter
for _ in $(seq 50); do grep -q AFTER-EXIT "$W/after2" 2>/dev/null && break; sleep 0.1; done
grep -q AFTER-EXIT "$W/after2" || fail "the paste after the crash did not arrive"
grep -q '200~' "$W/after2" && fail "bracketed paste still on after kvcon crashed: $(od -c "$W/after2" | head -3)"
$T kill-session -t k

# 3. the dashboard
fk_start --vms 2 --namespaces 1 --step 0.1
: >"$W/exit"
kv_start -n ns-00
wait_for 'Watch: vm live +vmi live' 15
vm1=$(fk names virtualmachines | sed -n 1p); vm1=${vm1#*/}
# a paste on the list: "c" would open a console, "x" close one, "/" open the filter
$T set-buffer -b p3 "c/x"
$T paste-buffer -p -b p3 -t k
keys ":"
wait_for '^:' 5
keys Escape
screen | grep -q 'console ns-00/' && fail "a paste on the list was taken as the c key"
# a paste into the filter prompt is typed into it; its line end does not submit it
keys "/"
wait_for '^/' 5
$T set-buffer -b p4 "$(printf '%s\n' "$vm1")"
$T paste-buffer -p -b p4 -t k
wait_for "^/$vm1" 5
keys Enter
wait_for "^ $vm1 " 5
# a paste into a console pane reaches the guest (fakekube's console echoes it)
keys c
wait_for "ns-00/$vm1 \| connected" 15
$T set-buffer -b p5 "pasted-into-the-console"
$T paste-buffer -p -b p5 -t k
wait_for 'pasted-into-the-console' 10
keys C-]
wait_for 'tab: focus' 5
keys C-c
for _ in $(seq 50); do [ -s "$W/exit" ] && break; sleep 0.1; done
grep -q 'KVCON_EXIT=0' "$W/exit" || fail "kvcon exit: $(cat "$W/exit" 2>/dev/null)"
echo ok
