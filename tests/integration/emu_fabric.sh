#!/bin/sh
# contrib/emu-fabric.sh on a small fabric (4 hosts of 2 GPUs, 2 leaves, names interleaved, up-link 4:1):
# the fabric JSON matches what was built, names resolve inside the namespaces, tbf really limits
# a flow to the host-link rate and a cross-leaf flow to the up-link rate, start is idempotent and
# stop leaves nothing behind. Root only (77 otherwise); about 15 s.
. "$(dirname "$0")/lib.sh"
srcdir=${TP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TP_BUILDDIR:-$srcdir/build}
EMU=$srcdir/contrib/emu-fabric.sh
FLOW=$builddir/tests/integration/tp_flow
P=tpt-
export TPE_PREFIX=$P HOST_RATE=400mbit TOPOPLACE

# a check program make check always builds: missing is an error, root or not
[ -x "$FLOW" ] || error_all "$FLOW not built (make check builds it)"
[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces)"
for t in ip tc ping unshare jq bc; do
	command -v $t >/dev/null 2>&1 || skip_all "$t missing (contrib/install-deps.sh)"
done
ip netns add ${P}probe 2>/dev/null || skip_all "cannot create network namespaces here"
ip netns del ${P}probe

trap '"$EMU" stop >/dev/null 2>&1; rm -rf "$tmp"' EXIT
emu() { "$EMU" --hosts 4 --leaves 2 --uplink-ratio 4 --gpus-per-host 2 "$@"; }

expect 0 "start 4 hosts, 2 leaves, 4:1, 2 GPUs a host" emu --fabric-out "$tmp/fabric.json" start
[ "$got" -eq 0 ] || { cat "$tmp/out"; finish; }
$TOPOPLACE fabric hosts "$tmp/fabric.json" --json >"$tmp/hosts.json"
jeq "$tmp/hosts.json" '[.[] | "\(.name)=\(.leaves[0])"] | join(",")' \
	"node001=leaf01,node002=leaf02,node003=leaf01,node004=leaf02" "fabric JSON: names alternate leaves"
# a namespace has one data interface: one cable a host at the host-link rate, whatever its GPUs
jeq "$tmp/hosts.json" '[.[] | "\(.gpus)x\(.cables)@\(.ring_gbps)"] | unique | join(",")' "2x1@0.4" \
	"fabric JSON: 2 GPUs and one 0.4 Gb/s cable a host"
$TOPOPLACE fabric show "$tmp/fabric.json" | grep -q "oversubscription up to 4.00:1" &&
	ok "fabric JSON: up-link 4:1" || bad "fabric JSON: $($TOPOPLACE fabric show "$tmp/fabric.json" | grep oversub)"

v=$("$EMU" exec node001 sh -c 'echo "$(hostname) $(getent hosts node004)"' 2>&1)
[ "$v" = "node001 10.201.0.4      node004" ] && ok "exec: hostname and names resolve" ||
	bad "exec: got '$v'"

expect 0 "start again" emu start
grep -q "already up" "$tmp/out" && ok "start is idempotent" || bad "second start: $(cat "$tmp/out")"
[ "$(ip netns list | grep -c "^$P")" -eq 6 ] && ok "6 namespaces" ||
	bad "namespaces: $(ip netns list | grep "^$P" | tr '\n' ' ')"

# flow SRC DST_ADDR PORT: print the receiver's Mbit/s for a 2-second flow.
flow() {
	"$EMU" exec "$2" "$FLOW" recv "$4" 20 >"$tmp/flow" 2>&1 &
	rpid=$!
	"$EMU" exec "$1" "$FLOW" send "$3" "$4" 2 || echo "send failed" >&2
	wait $rpid
	awk '{print $3}' "$tmp/flow"
}
# within LO HI VALUE
within() { echo "$3 >= $1 && $3 <= $2" | bc 2>/dev/null | grep -qx 1; }

r=$(flow node001 node003 10.201.0.3 5001)
within 280 400 "${r:-0}" && ok "same leaf: $r Mbit/s on a 400 Mbit/s link (70-100%)" ||
	bad "same leaf: '$r' Mbit/s, wanted 280..400 ($(cat "$tmp/flow"))"
r=$(flow node001 node002 10.201.0.2 5002)
within 140 200 "${r:-0}" && ok "across leaves: $r Mbit/s through a 200 Mbit/s up-link (70-100%)" ||
	bad "across leaves: '$r' Mbit/s, wanted 140..200 ($(cat "$tmp/flow"))"
"$EMU" status | grep -q "up0 rate 200Mbit" && ok "status shows the up-link rate" ||
	bad "status: $("$EMU" status 2>&1 | tail -2)"

expect 0 "stop" "$EMU" stop
[ "$(ip netns list | grep -c "^$P")" -eq 0 ] && ok "no namespaces left" || bad "namespaces left"
ls -d /etc/netns/${P}* >/dev/null 2>&1 && bad "/etc/netns entries left" || ok "no /etc/netns left"
[ -e /run/topoplace-emu/${P%-} ] && bad "state left" || ok "no state left"
expect 1 "status after stop" "$EMU" status
finish
