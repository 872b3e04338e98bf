#!/bin/sh
# health_lid_ibsim.sh - a host port that the subnet manager gives a new
# LID while the monitor runs must not stay "up but not answering".
#
# ibsim + opensm on a generated 16-host fat tree, whose live walk is the
# model; `monitor --interval 1` (topology checks at the default 300 s).
# opensm is stopped, node001's port gets LID 200 (ibsim's Baselid) and a
# new opensm starts without the first one's cache (a failover to an SM
# that does not know the old LIDs): it keeps 200 and routes it. No switch
# port changes, so no topology check walks the fabric: only the sweeps'
# own directed-route query can find the new LID. Checked: the monitor
# logs "LID OLD -> 200" for node001's link and the link is healthy within
# 3 sweep periods of opensm's sweep (bound below; a monitor that keeps
# asking the old LID holds the link at 0.5 "b end up but not answering"
# for ever, so any bound fails it), and still healthy 3 s later.
# Needs ibsim-utils, libumad2sim0, opensm, jq and a build with libibmad;
# exits 77 (skip) without them.
set -eu
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE
NEWLID=200

ibsim_fat16 "$tmp/live.json"

host=$(jq -r '.cas[] | select(.desc | startswith("node001 ")) | .guid' "$tmp/live.json" |
	sed 's/^0x/H-/')
l=$(ibsim_link '.b | startswith("node001 ")')
[ -n "$host" ] && [ -n "$l" ] || { bad "no node001 link in the model"; finish; }

state=$tmp/state.json
ibsim_monitor 120 "$state" "$tmp/h.prom" "$T" monitor --fabric "$tmp/live.json" \
	--state-out "$state" --prom "$tmp/h.prom" --interval 1
healthy=".links | map(select(.link == $l)) | length == 0"
jq -e "$healthy" "$state" >/dev/null ||
	bad "link $l not healthy at start: $(cat "$state")"

sm=$(cat "$IBSIM_DIR/sm.pid")
kill "$sm" 2>/dev/null || true
n=0
while kill -0 "$sm" 2>/dev/null; do
	[ "$n" -lt 100 ] || { bad "the first opensm still runs 10 s after SIGTERM"; finish; }
	sleep 0.1
	n=$((n + 1))
done
ibsim_con "Baselid \"$host\"[1] $NEWLID"
mkdir -p "$tmp/sm-cache"
OSM_CACHE_DIR=$tmp/sm-cache "$IBSIM_RUN" sm "$IBSIM_DIR" >"$tmp/sm2.err" 2>&1 ||
	{ bad "opensm did not come up again: $(cat "$tmp/sm2.err")"; finish; }
pguid=$(grep -A1 "^Ca.*\"$host\"" "$tmp/f.net" | sed -n 's/^\[1\](\([0-9a-f]*\)).*/0x\1/p')
lid=$(TO=20 ibsim_exec smpquery -G portinfo "$pguid" 2>/dev/null | sed -n 's/^Lid:\.*//p')
[ "$lid" = "$NEWLID" ] ||
	{ bad "node001's port has LID '$lid' after opensm's restart, not $NEWLID"; finish; }

# from here (opensm's sweep done, `sm` waited 1 s more): the new LID
# learnt and the link healthy within 4 s
t0=$(date +%s%N)
n=0
until grep -q "link $l: .* LID [0-9]* -> $NEWLID" "$tmp/mon.err" &&
	jq -e "$healthy" "$state" >/dev/null 2>&1; do
	sleep 0.1
	n=$((n + 1))
	[ "$n" -lt 40 ] || break
done
back=$((($(date +%s%N) - t0) / 1000000))
if [ "$n" -lt 40 ]; then
	ok "new LID $NEWLID learnt, link $l healthy $back ms after opensm's sweep (<= 4000 ms)"
	sleep 3
	jq -e "$healthy" "$state" >/dev/null &&
		ok "link $l still healthy 3 s later" ||
		bad "link $l degraded again: $(jq -c .links "$state")"
else
	bad "link $l after 4 s: $(jq -c ".links | map(select(.link == $l))" "$state"), new LID not learnt"
fi
[ "$failures" -eq 0 ] || { echo "--- monitor stderr"; tail -20 "$tmp/mon.err"; }
finish
