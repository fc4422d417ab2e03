#!/bin/bash
# nohome.sh KVCON USER: issue 23, finding 1, as it was found, run by get_security.sh inside
# `unshare -m --propagation private` (as root): /tmp is a tmpfs of its own (strictatime: a read shows in the atime)
# and root's passwd home an empty private tmpfs, so nothing of the machine's is read or changed. USER (an
# unprivileged account) writes /tmp/.config/kvcon/config naming a libvirt URI that runs /tmp/evil.sh; root runs
# kvcon with HOME empty: the marker must not appear, /tmp/.config/kvcon/config must not even be read, and kvcon's
# state must be in root's home. Then root's own config (and config and state directories) owned by USER or
# writable by the group are refused with one error: line naming the path and what is wrong, and a uid with neither
# HOME nor a passwd entry gets an error, not /tmp. Prints "FAIL: ..." lines; exit 0 when none.
set -u
KVCON=$1 who=$2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
rh=$(getent passwd root | cut -d: -f6)
mount -t tmpfs -o mode=1777,strictatime tmpfs /tmp || exit 2
# the binary under test may live in root's home (the clean room's checkout is /root/kvcon), which the next mount
# hides: a copy in a root-owned directory of this namespace's /tmp runs instead
mkdir -m 0755 /tmp/.kvcon-bin && cp "$KVCON" /tmp/.kvcon-bin/kvcon || exit 2
cp "$(dirname "$KVCON")/kvcon-engine" /tmp/.kvcon-bin/kvcon-engine || exit 2 # the engine, beside it
KVCON=/tmp/.kvcon-bin/kvcon
mount -t tmpfs -o mode=0700 tmpfs "$rh" || exit 2
run() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME= timeout 30 "$KVCON" "$@"; }
# the engine services kvcon started on demand in this namespace (it ends with the test)
stop_services() {
	local p
	for p in $(ls /proc | grep -E '^[0-9]+$'); do
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$(readlink -f "$KVCON")-engine" ] || continue
		[ "$(readlink "/proc/$p/ns/mnt" 2>/dev/null)" = "$(readlink /proc/self/ns/mnt)" ] || continue
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q ' engine serve' && kill -9 "$p" 2>/dev/null
	done
}
trap stop_services EXIT

# the attacker's files
setpriv --reuid="$who" --regid="$(id -g "$who")" --clear-groups sh -c '
	mkdir -p /tmp/.config/kvcon /tmp/.local/state/kvcon
	printf "engine.host = qemu+ext:///system?command=/tmp/evil.sh\n" >/tmp/.config/kvcon/config
	printf "#!/bin/sh\ntouch /tmp/pwned\n" >/tmp/evil.sh
	chmod 755 /tmp/evil.sh' || exit 2
touch -a -d 2001-01-01 /tmp/.config/kvcon/config
old_atime=$(stat -c %X /tmp/.config/kvcon/config)
# root's own config: a host that fails at once (nothing is started for real)
mkdir -p "$rh/.config/kvcon"
printf 'engine.host = test:///default\n' >"$rh/.config/kvcon/config"
for cmd in "engine get vm" "get vm"; do
	# shellcheck disable=SC2086 # two words
	run $cmd >/tmp/out 2>&1
	echo "root, HOME empty: kvcon $cmd: exit $? ($(head -c 200 /tmp/out | tr '\n' ' '))"
done
stop_services
sleep 0.2
[ ! -e /tmp/pwned ] || fail "root ran the other user's /tmp/evil.sh"
[ "$(stat -c %X /tmp/.config/kvcon/config)" = "$old_atime" ] || fail "root read /tmp/.config/kvcon/config"
[ -z "$(ls -A /tmp/.local/state/kvcon)" ] || fail "root wrote into /tmp/.local/state/kvcon: $(ls -A /tmp/.local/state/kvcon)"
[ -f "$rh/.local/state/kvcon/kvcon.log" ] || fail "kvcon did not keep its state in root's home ($rh)"

# refused_with WHAT WANT: `kvcon get vm` exits 1 with exactly one line, error: WANT
refused_with() {
	local rc=0
	run get vm >/tmp/out 2>/tmp/err || rc=$?
	if [ "$rc" != 1 ] || [ "$(wc -l </tmp/err)" != 1 ] || ! grep -qF "error: $2" /tmp/err; then
		fail "$1: exit $rc, stderr: $(cat /tmp/err)"
	else
		echo "$1: $(cat /tmp/err)"
	fi
	[ ! -e /tmp/pwned ] || fail "$1: root ran /tmp/evil.sh"
}
cfg=$rh/.config/kvcon/config
printf 'engine.host = qemu+ext:///system?command=/tmp/evil.sh\n' >"$cfg"
chown "$who" "$cfg"
refused_with "config owned by $who" "$cfg: owned by uid $(id -u "$who"), not root or uid 0"
chown root "$cfg"
chmod 0620 "$cfg"
refused_with "config mode 0620" "$cfg: mode 0620 lets the group write it"
chmod 0600 "$cfg"
chmod 0777 "$rh/.config/kvcon"
refused_with "config directory 0777" "$rh/.config/kvcon: mode 0777 lets others write it"
chmod 0700 "$rh/.config/kvcon"
: >"$cfg"
chown "$who" "$rh/.local/state/kvcon"
refused_with "state directory owned by $who" "$rh/.local/state/kvcon: owned by uid $(id -u "$who")"
chown root "$rh/.local/state/kvcon"
# a uid with neither HOME nor a passwd entry: an error, never /tmp
rc=0
setpriv --reuid=54321 --regid=54321 --clear-groups env -i PATH=/usr/bin:/bin HOME= "$KVCON" get vm >/tmp/out 2>/tmp/err ||
	rc=$?
grep -q '^error: no home directory' /tmp/err && [ "$rc" = 1 ] || fail "no home: exit $rc, stderr: $(cat /tmp/err)"
[ ! -e /tmp/.config/kvcon ] || [ "$(stat -c %u /tmp/.config/kvcon)" != 54321 ] || fail "no home: kvcon used /tmp"
[ ! -e /tmp/.local/state/kvcon/kvcon.log ] || fail "no home: kvcon logged into /tmp"
exit $((fails > 0))
