#!/bin/bash
# e2e-lane: cluster
# Issue 14, findings 5-8, each as it was found: credentials never reach a plain-HTTP server and a CA with
# insecure-skip-tls-verify is refused; an exec plugin that leaves a child holding its pipes does not block, a
# hanging one is killed (with its child) at the deadline and not run again; kvcon's log files are 0600; an
# escape sequence in a kubeconfig prints escaped; an oversized list response ends with a clear error, in bounded
# memory, without being fetched again; persistent 500s are reported as they happen and `get` gives up in time.
# Issue 23, finding 1 (root, lib/nohome.sh): with HOME empty root never reads a config another user wrote in /tmp
# (it runs nothing of theirs), and a config or state directory another user owns or can write is refused.
# Issue 23 finding 3: paths another user prepared in a sticky directory are refused, not written through.
# Exit 0 pass, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
umask 022 # what would leave files 0644 if kvcon trusted the umask
# CHECK_ALL=1: report every failed check and go on (to show each finding fails on a build without the fixes)
if [ -n "${CHECK_ALL:-}" ]; then
	failures=0
	fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
fi

# tinykube MODE [MIB]: the hostile plain-HTTP server in $tmp/tk-MODE; sets tk (its dir) and tkurl
tinykube() {
	tk=$tmp/tk-$1-${2:-0}
	mkdir -p "$tk"
	"$PY" "$top/tests/e2e/lib/tinykube.py" "$tk" "$@" >"$tk.log" 2>&1 &
	pids="$pids $!"
	poll 20 test -s "$tk/port" || fail "tinykube $1 did not start"
	tkurl=http://127.0.0.1:$(cat "$tk/port")
}
# kubeconfig FILE SERVER USER-YAML: a one-context kubeconfig
kubeconfig() {
	printf 'apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: %s\ncontexts:\n- name: c\n  context: {cluster: k, user: u, namespace: default}\nusers:\n- name: u\n  user: %s\n' \
		"$2" "$3" >"$1"
}
# AddressSanitizer's shadow memory and quarantine dwarf these bounds: the plain build (make check) holds them
sanitized=
case ${KVCON_CFLAGS:-} in *-fsanitize=*) sanitized=1 ;; esac
requests() { [ -f "$tk/requests" ] && wc -l <"$tk/requests" || echo 0; }
# peak RSS in KiB and wall seconds of a command: out in $tmp/run.out, stderr in $tmp/run.err, rc in $rc
measure() {
	local t0=$(date +%s%N)
	/usr/bin/time -f %M -o "$tmp/rss" timeout 400 "$@" >"$tmp/run.out" 2>"$tmp/run.err"
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	rss=$(tail -1 "$tmp/rss")
}

# --- finding 5: no credential over cleartext; CA plus insecure refused ---------------------------------------
echo "[${SECONDS}s] finding 5"
tinykube record
for user in '{token: secret-token-123}' '{username: admin, password: secret-token-123}' \
	"{exec: {apiVersion: client.authentication.k8s.io/v1, command: $tmp/never.sh, interactiveMode: Never}}"; do
	printf '#!/bin/sh\ntouch %s/plugin-ran\necho "{}"\n' "$tmp" >"$tmp/never.sh"
	chmod +x "$tmp/never.sh"
	kubeconfig "$tmp/http.kc" "$tkurl" "$user"
	KUBECONFIG=$tmp/http.kc "$KVCON" get vm >"$tmp/http.out" 2>&1; rc=$?
	[ $rc -eq 1 ] || fail "plain HTTP with $user: exit $rc: $(cat "$tmp/http.out")"
	grep -q "refusing to send .* over plain HTTP to $tkurl" "$tmp/http.out" || fail "plain HTTP message: $(cat "$tmp/http.out")"
	grep -q 'secret-token-123' "$tmp/http.out" && fail "the secret was printed"
	[ "$(requests)" -eq 0 ] || fail "kvcon talked to the plain-HTTP server: $(cat "$tk/requests")"
	[ -e "$tmp/plugin-ran" ] && fail "the exec plugin ran for a plain-HTTP server"
done
# without credentials plain HTTP is allowed (and reaches the server)
kubeconfig "$tmp/anon.kc" "$tkurl" '{}'
KUBECONFIG=$tmp/anon.kc "$KVCON" get vm >"$tmp/anon.out" 2>&1 || fail "anonymous plain HTTP: $(cat "$tmp/anon.out")"
grep -q 'Authorization' "$tk/requests" && fail "an Authorization header reached the plain-HTTP server"

echo "[${SECONDS}s] fakekube"
fk_start --vms 4 --namespaces 1 --seed 3 --step 0.05
sed 's/^\(\s*\)certificate-authority-data:/\1insecure-skip-tls-verify: true\n&/' "$KUBECONFIG" >"$tmp/insecure.kc"
grep -q 'insecure-skip-tls-verify: true' "$tmp/insecure.kc" || fail "could not build the CA+insecure kubeconfig"
KUBECONFIG=$tmp/insecure.kc "$KVCON" get vm -A >"$tmp/insecure.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "CA+insecure exit $rc"
grep -q 'specifying a root certificates file with the insecure flag is not allowed' "$tmp/insecure.out" ||
	fail "CA+insecure message: $(cat "$tmp/insecure.out")"

# --- finding 6: exec plugins ---------------------------------------------------------------------------------
echo "[${SECONDS}s] finding 6"
# mode leftover: answers, exits, and leaves a child holding its stdout; mode hang: never answers
cat >"$tmp/plugin.sh" <<'PLUGIN'
#!/bin/sh
echo x >>"$PLUGIN_DIR/runs"
sleep 300 &
echo $! >"$PLUGIN_DIR/child"
[ "$MODE" = hang ] && exec sleep 300
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$(cat "$PLUGIN_DIR/fk/token")"
PLUGIN
chmod +x "$tmp/plugin.sh"
"$PY" - "$KUBECONFIG" "$tmp/exec.kc" <<'PYEOF'
import sys
out = []
for line in open(sys.argv[1]).read().splitlines():
    if line.strip().startswith("token:"):
        ind = line[: len(line) - len(line.lstrip())]
        out += [ind + "exec:", ind + "  apiVersion: client.authentication.k8s.io/v1", ind + "  command: ./plugin.sh",
                ind + "  interactiveMode: Never"]
    else:
        out.append(line)
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PYEOF
alive() { [ -n "$1" ] && [ -d "/proc/$1" ] && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }
rm -f "$tmp/runs" "$tmp/child"
MODE=leftover PLUGIN_DIR=$tmp KUBECONFIG=$tmp/exec.kc measure "$KVCON" get vm -A -o name
[ $rc -eq 0 ] || fail "leftover plugin: exit $rc: $(cat "$tmp/run.err")"
[ "$(grep -c '^virtualmachine.kubevirt.io/' "$tmp/run.out")" -eq 4 ] || fail "leftover plugin listing: $(cat "$tmp/run.out")"
[ $ms -lt 10000 ] || fail "a plugin's leftover child held get for $ms ms"
child=$(cat "$tmp/child")
poll 5 eval '! alive "$child"' || { kill "$child"; fail "the plugin's leftover child $child was not killed"; }
echo "leftover child: get took $ms ms"

rm -f "$tmp/runs" "$tmp/child"
KVCON_EXEC_TIMEOUT=3 MODE=hang PLUGIN_DIR=$tmp KUBECONFIG=$tmp/exec.kc measure "$KVCON" get vm -A
[ $rc -eq 1 ] || fail "hanging plugin: exit $rc"
grep -q 'did not finish within 3 s' "$tmp/run.err" || fail "hanging plugin message: $(cat "$tmp/run.err")"
[ $ms -lt 15000 ] || fail "a hanging plugin held get for $ms ms"
[ "$(wc -l <"$tmp/runs")" -eq 1 ] || fail "the hanging plugin ran $(wc -l <"$tmp/runs") times"
child=$(cat "$tmp/child")
poll 5 eval '! alive "$child"' || { kill "$child"; fail "the hanging plugin's child $child was not killed"; }
echo "hanging plugin: get failed after $ms ms, 1 run"
# stdin: the terminal only when interactiveMode allows it (a plugin that asks for a password on the terminal)
cat >"$tmp/ask.sh" <<'PLUGIN'
#!/bin/sh
printf 'password: ' >&2
read -r pw || exit 5
[ "$pw" = opensesame ] || exit 6
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$(cat "$PLUGIN_DIR/fk/token")"
PLUGIN
chmod +x "$tmp/ask.sh"
for im in IfAvailable Never; do
	sed "s#command: ./plugin.sh#command: ./ask.sh#; s#interactiveMode: Never#interactiveMode: $im#" "$tmp/exec.kc" >"$tmp/ask-$im.kc"
	PLUGIN_DIR=$tmp KUBECONFIG=$tmp/ask-$im.kc "$PY" - "$KVCON" >"$tmp/ask.out" 2>&1 <<'PYEOF'
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "get", "vm", "-A", "-o", "name"])
out, sent, end = b"", False, time.time() + 20
while time.time() < end:
    if not sent and b"password: " in out:
        os.write(fd, b"opensesame\n")
        sent = True
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    out += data
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(st))
PYEOF
	rc=$?
	if [ $im = IfAvailable ]; then
		[ $rc -eq 0 ] && grep -q 'virtualmachine.kubevirt.io/' "$tmp/ask.out" || fail "interactive plugin on a terminal: rc $rc: $(cat "$tmp/ask.out")"
	else
		[ $rc -eq 1 ] && grep -q 'failed (exit 5)' "$tmp/ask.out" || fail "interactiveMode Never: the plugin had a stdin: rc $rc: $(cat "$tmp/ask.out")"
	fi
done

# --- finding 7: files and text -------------------------------------------------------------------------------
echo "[${SECONDS}s] finding 7"
mode() { stat -c %a "$1"; }
"$KVCON" --log-file "$tmp/cli.log" -v get vm -A >/dev/null 2>&1 || fail "get with --log-file"
[ "$(mode "$tmp/cli.log")" = 600 ] || fail "--log-file is $(mode "$tmp/cli.log")"
XDG_STATE_HOME=$tmp/xdg3 "$KVCON" -c 'bogus:///x' engine console nosuch \
	--expect x --log "$tmp/console.log" >/dev/null 2>&1
[ -f "$tmp/console.log" ] || fail "engine console --log created no file"
[ "$(mode "$tmp/console.log")" = 600 ] || fail "engine console --log is $(mode "$tmp/console.log")"
# issue 23 finding 3: in a sticky shared directory another user prepared the names kvcon is given (a 0666 file of
# theirs, a symlink to root's secret, a FIFO): each is refused with one error line naming it, nothing is written
# and nothing blocks (run as root: nobody is the other user)
if [ "$(id -u)" = 0 ]; then
	echo "[${SECONDS}s] prepared paths"
	sd=$tmp/sticky
	chmod 711 "$tmp" # nobody may pass through to the shared directory, as to /tmp
	mkdir -m 1777 "$sd"
	printf 'secret\n' >"$tmp/secret"
	setpriv --reuid=nobody --regid=nogroup --clear-groups sh -c "umask 0 && : >$sd/kvcon.log && : >$sd/console.log &&
		: >$sd/shot.png && ln -s $tmp/secret $sd/link.log && mkfifo $sd/fifo.log" || fail "nobody's files"
	prepared() { # PATH WHY CMD...: refused before it runs, one line, nothing written
		local p=$1 why=$2
		shift 2
		timeout 10 "$@" >/dev/null 2>"$tmp/prep.err"
		local rc=$?
		[ $rc -eq 1 ] || fail "$p: exit $rc: $(cat "$tmp/prep.err")"
		[ "$(cat "$tmp/prep.err")" = "error: $p: $why" ] || fail "$p: message: $(cat "$tmp/prep.err")"
	}
	owned="owned by uid 65534, not by uid 0 (this kvcon)"
	prepared "$sd/kvcon.log" "$owned" "$KVCON" --log-file "$sd/kvcon.log" -v get vm -A
	prepared "$sd/link.log" "a symlink (not followed)" "$KVCON" --log-file "$sd/link.log" get vm -A
	prepared "$sd/fifo.log" "not a regular file (a FIFO or socket)" "$KVCON" --log-file "$sd/fifo.log" version
	prepared "$sd/shot.png" "$owned" "$KVCON" vnc nosuch --screenshot "$sd/shot.png"
	XDG_STATE_HOME=$tmp/xdg3 "$KVCON" -c 'bogus:///x' engine console nosuch --expect x --log "$sd/console.log" \
		>/dev/null 2>"$tmp/prep.err"
	grep -qx "error: $sd/console.log: $owned" "$tmp/prep.err" || fail "console --log: $(cat "$tmp/prep.err")"
	for f in kvcon.log console.log shot.png; do
		[ ! -s "$sd/$f" ] || fail "$f got root's text: $(head -c 200 "$sd/$f")"
	done
	[ "$(cat "$tmp/secret")" = secret ] || fail "the secret was written through link.log"
	# a file of kvcon's user that others can write may be held open by them: refused too
	: >"$sd/mine.log"
	chmod 666 "$sd/mine.log"
	prepared "$sd/mine.log" "mode 0666 lets others write it (and hold it open): chmod go-w it or choose a new file" \
		"$KVCON" --log-file "$sd/mine.log" version
	echo "[${SECONDS}s] prepared paths refused"
fi
echo "[${SECONDS}s] default log"
# kvcon's default log (the dashboard's, on a terminal), in a directory kvcon creates 0700
"$PY" - "$KVCON" "$tmp/xdg" <<'PYEOF' || fail "the default kvcon.log"
import os, pty, sys, time
kvcon, xdg = sys.argv[1], sys.argv[2]
env = dict(os.environ, XDG_STATE_HOME=xdg, TERM="xterm")
env.pop("KVCON_LOG", None)
pid, fd = pty.fork()
if pid == 0:
    os.execve(kvcon, ["kvcon", "--no-engine"], env)
log = os.path.join(xdg, "kvcon", "kvcon.log")
for _ in range(100):
    if os.path.exists(log) or os.waitpid(pid, os.WNOHANG)[0]:
        break
    time.sleep(0.1)
try:
    os.kill(pid, 15)
    os.waitpid(pid, 0)
except (ProcessLookupError, ChildProcessError):
    pass
st, dst = os.stat(log), os.stat(os.path.dirname(log))
print("kvcon.log %o, dir %o" % (st.st_mode & 0o777, dst.st_mode & 0o777))
sys.exit(0 if st.st_mode & 0o777 == 0o600 and dst.st_mode & 0o777 == 0o700 else 1)
PYEOF
# an escape sequence in a kubeconfig's server prints escaped
kubeconfig "$tmp/esc.kc" "\"http://\\e]0;pwned\\a\\e[31mx y\"" '{}'
KUBECONFIG=$tmp/esc.kc "$KVCON" get vm >"$tmp/esc.out" 2>&1; rc=$?
[ $rc -eq 1 ] || fail "escaped kubeconfig exit $rc"
LC_ALL=C grep -q "$(printf '\033')" "$tmp/esc.out" && fail "a raw ESC reached the terminal: $(cat -v "$tmp/esc.out")"
grep -qF 'server '"'"'http://\e]0;pwned\x07\e[31mx y'"'"' is not a URL' "$tmp/esc.out" || fail "escaped message: $(cat "$tmp/esc.out")"

# --- finding 8: bounded work ---------------------------------------------------------------------------------
echo "[${SECONDS}s] finding 8"
# a 300 MiB list with a 32 MiB limit: refused with its URL, memory bounded, fetched once
tinykube huge 300
kubeconfig "$tmp/huge.kc" "$tkurl" '{}'
KVCON_LIST_MAX_MIB=32 KUBECONFIG=$tmp/huge.kc measure "$KVCON" get vm
[ $rc -eq 1 ] || fail "oversized list exit $rc: $(cat "$tmp/run.err")"
grep -q "list response from $tkurl/apis/kubevirt.io/v1/namespaces/default/virtualmachines exceeds 32 MiB" "$tmp/run.err" ||
	fail "oversized list message: $(cat "$tmp/run.err")"
lists=$(grep -c 'virtualmachines?' "$tk/requests")
[ "$lists" -eq 1 ] || fail "the oversized list was fetched $lists times"
[ -n "$sanitized" ] || [ "$rss" -lt 40000 ] || fail "peak RSS $rss KiB for a 32 MiB limit"
echo "oversized list: refused after $ms ms, peak RSS $rss KiB, fetched once"
echo "[${SECONDS}s] 100 MiB"
# under the limit, a list is decoded as it arrives: a 100 MiB response costs kvcon its objects, not the body
tinykube huge 100
kubeconfig "$tmp/huge100.kc" "$tkurl" '{}'
KUBECONFIG=$tmp/huge100.kc measure "$KVCON" get vm -o name
[ $rc -eq 0 ] || fail "a 100 MiB list: exit $rc: $(cat "$tmp/run.err")"
n=$(wc -l <"$tmp/run.out")
[ "$n" -gt 100000 ] || fail "only $n items of the 100 MiB list"
[ -n "$sanitized" ] || [ "$rss" -lt 90000 ] || fail "peak RSS $rss KiB for a 100 MiB list ($n objects)"
echo "100 MiB list: $n objects in $ms ms, peak RSS $rss KiB"
# one object past the per-object limit
tinykube bigobj 20
kubeconfig "$tmp/big.kc" "$tkurl" '{}'
KVCON_OBJECT_MAX_MIB=4 KUBECONFIG=$tmp/big.kc measure "$KVCON" get vm
[ $rc -eq 1 ] || fail "oversized object exit $rc"
grep -q "an object in the list response from $tkurl/.* exceeds 4 MiB" "$tmp/run.err" || fail "oversized object message: $(cat "$tmp/run.err")"
[ "$(grep -c 'virtualmachines?' "$tk/requests")" -eq 1 ] || fail "the list with an oversized object was fetched again"
echo "[${SECONDS}s] 500s"
# persistent 500s: every retry on stderr as it happens, exit 1 within the bound
tinykube fail500
kubeconfig "$tmp/500.kc" "$tkurl" '{}'
KUBECONFIG=$tmp/500.kc measure "$KVCON" get vm
[ $rc -eq 1 ] || fail "persistent 500: exit $rc"
[ $ms -le 35000 ] || fail "persistent 500: get took $ms ms"
grep -q "^kvcon: retrying: 500 from $tkurl/apis/kubevirt.io/v1/namespaces/default/virtualmachines (1): etcd is down$" "$tmp/run.err" ||
	fail "no retrying line: $(cat "$tmp/run.err")"
grep -q "retrying: 500 .* (3): " "$tmp/run.err" || fail "no third retry line: $(cat "$tmp/run.err")"
grep -q '^error: etcd is down' "$tmp/run.err" || fail "final message: $(cat "$tmp/run.err")"
echo "persistent 500: exit 1 after $ms ms, $(grep -c retrying "$tmp/run.err") retrying lines"
echo "[${SECONDS}s] no HOME (issue 23, finding 1)"
# root with HOME empty on a machine where another user wrote /tmp/.config/kvcon/config: in a mount namespace of
# its own (its own /tmp, root's home an empty tmpfs), lib/nohome.sh; root only
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v setpriv >/dev/null; then
	who=nobody
	getent passwd "$who" >/dev/null || useradd -r -M -s /usr/sbin/nologin "$who" || fail "no account $who"
	t0=$SECONDS
	unshare -m --propagation private bash "$top/tests/e2e/lib/nohome.sh" "$(readlink -f "$KVCON")" "$who" ||
		fail "no HOME: see the lines above"
	echo "no HOME: $((SECONDS - t0)) s"
else
	echo "no HOME: not checked (needs root, unshare and setpriv)"
fi
[ "${failures:-0}" -eq 0 ] || { echo "$failures checks failed"; exit 1; }
echo "[${SECONDS}s] PASS: get_security"
