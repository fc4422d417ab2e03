#!/bin/bash
# e2e-lane: cluster
# Shell completion in a real bash: `source <(kvcon completion bash)` in a bash inside tmux at 100x30, then <TAB>
# completes verbs, kinds, flags' values and, from the fake cluster, VM names (`kvcon get vm <TAB>`) and NS/NAME
# operands. The script and `kvcon help VERB` come from the command table: every verb of --help completes.
# Exit 0 pass, 77 skip, anything else fail.
set -u
# shellcheck source=tests/e2e/lib/fakekube.bash
. "$(dirname "$0")/lib/fakekube.bash"
command -v tmux >/dev/null || fail "tmux missing (scripts/deps.sh installs it)"
command -v zsh >/dev/null || fail "zsh missing (scripts/deps.sh installs it)"

fk_start --vms 6 --namespaces 2 --seed 5 --scenario stuck-launcher
mkdir -p "$tmp/bin"
ln -s "$KVCON" "$tmp/bin/kvcon"
"$KVCON" completion bash >"$tmp/kvcon.bash" || fail "kvcon completion bash"
bash -n "$tmp/kvcon.bash" || fail "the bash script does not parse"
"$KVCON" completion zsh >"$tmp/kvcon.zsh" || fail "kvcon completion zsh"
grep -q '^#compdef kvcon$' "$tmp/kvcon.zsh" && zsh -n "$tmp/kvcon.zsh" || fail "the zsh script does not parse"
"$KVCON" completion fish >/dev/null 2>"$tmp/fish.err"; [ $? = 1 ] || fail "completion fish must exit 1"
grep -q '^error: ' "$tmp/fish.err" || fail "completion fish: $(cat "$tmp/fish.err")"

# __complete answers from the table and the cluster
[ "$("$KVCON" __complete get vm stuck | tr '\n' ' ')" = "stuck-launcher " ] || fail "__complete get vm stuck: $("$KVCON" __complete get vm stuck)"
"$KVCON" __complete diagnose "default/stu" | grep -qx 'default/stuck-launcher' || fail "__complete diagnose NS/NAME"
"$KVCON" __complete -n "" | grep -qx 'ns-01' || fail "__complete -n: namespaces"
"$KVCON" __complete get -o "ya" | grep -qx 'yaml' || fail "__complete -o values"
"$KVCON" __complete stop default/x --g | grep -qx -- '--grace-period' || fail "__complete stop flags"
for v in $("$KVCON" --help | sed -n '/^commands:/,/^$/p' | awk 'NR > 1 && /^  [a-z]/ { print $1 }'); do
	"$KVCON" __complete "$v" | grep -qx "$v" || fail "verb $v of --help does not complete"
	"$KVCON" help "$v" >/dev/null || fail "kvcon help $v"
done

# a real bash in tmux
SOCK="kvcon-compl-$$"
T="tmux -L $SOCK -f /dev/null"
cleanup_tmux() { $T kill-server 2>/dev/null; cleanup; }
trap cleanup_tmux EXIT INT TERM
$T new-session -d -x 100 -y 30 -s c "env -i HOME=$tmp PATH=$tmp/bin:/usr/bin:/bin TERM=xterm KUBECONFIG=$KUBECONFIG XDG_STATE_HOME=$tmp/state PS1='$ ' bash --norc --noprofile -i"
screen() { $T capture-pane -p -t c; }
# the last line shown (capture-pane drops trailing blanks)
line() { $T capture-pane -p -t c | grep -v '^$' | tail -n 1; }
poll 10 sh -c "$T capture-pane -p -t c | grep -q '^\\$'" || fail "bash did not start: $(screen)"
$T send-keys -t c "source $tmp/kvcon.bash" Enter "clear" Enter
poll 10 sh -c "[ \"\$($T capture-pane -p -t c | grep -c .)\" = 1 ]" || fail "clear: $(screen)"

# verbs
$T send-keys -t c "kvcon diag" Tab
poll 10 sh -c "$T capture-pane -p -t c | grep -q '^\\$ kvcon diagnose$'" || fail "kvcon diag<TAB>: $(line)"
$T send-keys -t c C-u
# kvcon get vm <TAB><TAB>: the VM names of the context's namespace are offered
$T send-keys -t c "kvcon get vm " Tab Tab
poll 15 sh -c "$T capture-pane -p -t c | grep -q 'stuck-launcher'" || fail "kvcon get vm <TAB><TAB> offered no VM name: $(screen)"
$T send-keys -t c C-u "clear" Enter
poll 10 sh -c "[ \"\$($T capture-pane -p -t c | grep -c .)\" = 1 ]" || fail "clear: $(screen)"
# a unique prefix completes the name in place
$T send-keys -t c "kvcon get vm stu" Tab
poll 15 sh -c "$T capture-pane -p -t c | grep -q '^\\$ kvcon get vm stuck-launcher$'" || fail "kvcon get vm stu<TAB>: $(line)"
# and the completed line runs
$T send-keys -t c Enter
poll 20 sh -c "$T capture-pane -p -t c | grep -q '^stuck-launcher  *[0-9]'" || fail "the completed get did not run: $(screen)"
# NS/NAME operands, and -n's value
$T send-keys -t c "clear" Enter
poll 10 sh -c "[ \"\$($T capture-pane -p -t c | grep -c .)\" = 1 ]" || fail "clear: $(screen)"
$T send-keys -t c "kvcon diagnose default/stuck" Tab
poll 15 sh -c "$T capture-pane -p -t c | grep -q '^\\$ kvcon diagnose default/stuck-launcher$'" || fail "diagnose NS/NAME<TAB>: $(line)"
$T send-keys -t c C-u "kvcon get vm -n ns-0" Tab Tab
poll 15 sh -c "$T capture-pane -p -t c | grep -q 'ns-01'" || fail "-n <TAB>: $(screen)"

# the same in a real zsh (compinit, then the script)
$T new-session -d -x 100 -y 30 -s z "env -i HOME=$tmp PATH=$tmp/bin:/usr/bin:/bin TERM=xterm KUBECONFIG=$KUBECONFIG XDG_STATE_HOME=$tmp/state zsh -f -i"
$T send-keys -t z "PS1='%% '; autoload -Uz compinit; compinit -u -D; source $tmp/kvcon.zsh; clear" Enter
poll 10 sh -c "[ \"\$($T capture-pane -p -t z | grep -c .)\" = 1 ] && $T capture-pane -p -t z | grep -q '^%'" ||
	fail "zsh did not start: $($T capture-pane -p -t z)"
$T send-keys -t z "kvcon get vm stu" Tab
poll 15 sh -c "$T capture-pane -p -t z | grep -q '^% kvcon get vm stuck-launcher'" || fail "zsh: kvcon get vm stu<TAB>: $($T capture-pane -p -t z)"
$T send-keys -t z C-u "kvcon diagnose default/stuck" Tab
poll 15 sh -c "$T capture-pane -p -t z | grep -q '^% kvcon diagnose default/stuck-launcher'" || fail "zsh: NS/NAME<TAB>: $($T capture-pane -p -t z)"
echo "PASS completion: verbs, kinds, flag values, VM names and NS/NAME complete in bash and zsh"
