#!/bin/sh
# e2e-lane: cluster
# man/kvcon.1 renders cleanly: groff -man -ww prints no warning, the source holds no raw control bytes (a \f font
# escape typed as a form feed, say), and every tagged paragraph has its .TP (a tag line alone after running text
# is an entry whose .TP went missing: it renders glued to the entry before). Exit 0 pass, 77 skip, else fail.
set -u
cd "$(dirname "$0")/../.."
page=${KVCON_MAN:-man/kvcon.1}
command -v groff >/dev/null || { echo "SKIP: groff missing (scripts/deps.sh installs groff-base)"; exit 77; }
bad=0
fail() { echo "FAIL: $*"; bad=1; }

warn=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
[ -z "$warn" ] || fail "groff -man -Tutf8 -ww -z $page warns:
$warn"

# every byte below 0x20 but tab and newline, and DEL
ctl=$(LC_ALL=C grep -n "$(printf '[\001-\010\013-\037\177]')" "$page" | cut -c1-80)
[ -z "$ctl" ] || fail "raw control bytes in $page (\\f escapes typed as form feeds?):
$(printf '%s\n' "$ctl" | cat -v)"

# the rendered page without SGR/overstrike: only text, no control byte got through
if groff -man -Tutf8 -P-cbou "$page" 2>/dev/null | LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')"; then
	fail "the rendered page carries control bytes"
fi

tp=$(awk '
	function req(l) { return l ~ /^[.\047]/ }
	function font(l) { return l ~ /^\.(B|I|BR|RB|BI|IB|IR|RI|SM|SB)( |$)/ }
	function para(l) { return l ~ /^\.(TP|SH|SS|PP|LP|P|IP|HP|RS|RE)( |$)/ }
	/^\.\\"/ { next }
	/^\.PD 0/ { pd0 = 1; next }
	/^\.PD$/ { pd0 = 0; next }
	state == 1 { if ($0 == "" || para($0)) printf "%d: .TP without a tag line\n", NR - 1; state = 2; tag = NR; next }
	# stacked tags (.PD 0, .TP, .TP, ..., .PD) share the description that follows the last one
	state == 2 { if ($0 == "" || (para($0) && !(pd0 && $0 ~ /^\.TP/))) printf "%d: .TP entry without a description\n", tag; state = 0 }
	/^\.TP( |$)/ { state = 1; prev = $0; next }
	font($0) && prev != "" && !req(prev) { printf "%d: tag line after running text (a missing .TP?): %s\n", NR, substr($0, 1, 50) }
	{ prev = $0 }
' "$page")
[ -z "$tp" ] || fail ".TP structure of $page:
$tp"

n=$(grep -c '^\.TP' "$page")
[ $bad = 0 ] || exit 1
echo "PASS man_page: groff -ww silent, no control bytes, $n .TP entries in place"
