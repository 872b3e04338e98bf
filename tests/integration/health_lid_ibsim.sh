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
# for ever, so any bound fails it), and still healthy 3 s later. Then
# the same for leaf02's LID (210): every link healthy within the bound and
# the new LID logged once for the switch, not once per port.
# Needs ibsim-utils, libumad2sim0, opensm, jq and a build with libibmad;
# exits 77 (skip) without them.
set -eu
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE
NEWLID=200 SWLID=210

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

# new_sm NAME[PORT] LID [NAME[PORT] LID]: stop opensm, give port PORT of
# ibsim node NAME LID (ibsim's Baselid; a second pair too) and start an
# opensm with a cache of its own (a failover to an SM that does not know
# the old LIDs; it keeps LID).
new_sm() {
	sm=$(cat "$IBSIM_DIR/sm.pid")
	kill "$sm" 2>/dev/null || true
	n=0
	while kill -0 "$sm" 2>/dev/null; do
		[ "$n" -lt 100 ] || { bad "opensm still runs 10 s after SIGTERM"; finish; }
		sleep 0.1
		n=$((n + 1))
	done
	ibsim_con "Baselid $1 $2"
	[ $# -lt 4 ] || ibsim_con "Baselid $3 $4"
	mkdir -p "$tmp/sm-cache-$2"
	OSM_CACHE_DIR=$tmp/sm-cache-$2 "$IBSIM_RUN" sm "$IBSIM_DIR" >"$tmp/sm.err" 2>&1 ||
		{ bad "opensm did not come up again: $(cat "$tmp/sm.err")"; finish; }
}

# wait_back LID FILTER WHAT: after new_sm (opensm's sweep done, `sm` waited
# 1 s more), wait until the monitor logged "LID OLD -> LID" and jq FILTER
# holds on the state file, bounded in wall time by 3 sweep periods: the
# sweep under way, a silent one and the 2nd silent one, which asks by
# directed route, takes LID, asks the node again and writes the state
# file. A period is the longest of --interval (1 s) and every
# topoplace_health_sweep_seconds the monitor reported meanwhile (under
# load a sweep takes several seconds). Plus 0.6 s, the node's query
# timeout (3 x 200 ms, health/sweep.c) should the sweep under way not have
# paid it yet, and 0.5 s for this loop's polling. true when it did.
sweep_ms() {
	sed -n 's/^topoplace_health_sweep_seconds //p' "$tmp/h.prom" |
		awk '{ printf "%d", $1 * 1000 }'
}
wait_back() {
	t0=$(date +%s%N)
	period=1000 learnt=false
	while :; do
		sw=$(sweep_ms)
		[ "${sw:-0}" -le "$period" ] || period=$sw
		limit=$((3 * period + 600 + 500))
		if grep -q "LID [0-9]* -> $1\b" "$tmp/mon.err" &&
			jq -e "$2" "$state" >/dev/null 2>&1; then
			learnt=true
		fi
		back=$((($(date +%s%N) - t0) / 1000000))
		if $learnt || [ "$back" -gt "$limit" ]; then break; fi
		sleep 0.1
	done
	bound="bound $limit ms: 3 sweeps of $period ms + 1,100 ms"
	if $learnt && [ "$back" -le "$limit" ]; then
		ok "new LID $1 learnt, $3 healthy $back ms after opensm's sweep ($bound)"
		return 0
	elif $learnt; then
		bad "$3 healthy only $back ms after opensm's sweep ($bound)"
	else
		bad "$3 after $back ms ($bound): $(jq -c .links "$state"), new LID not learnt"
	fi
	return 1
}

new_sm "\"$host\"[1]" $NEWLID
pguid=$(grep -A1 "^Ca.*\"$host\"" "$tmp/f.net" | sed -n 's/^\[1\](\([0-9a-f]*\)).*/0x\1/p')
lid=$(TO=20 ibsim_exec smpquery -G portinfo "$pguid" 2>/dev/null | sed -n 's/^Lid:\.*//p')
[ "$lid" = "$NEWLID" ] ||
	{ bad "node001's port has LID '$lid' after opensm's restart, not $NEWLID"; finish; }
if wait_back $NEWLID "$healthy" "link $l"; then
	sleep 3
	jq -e "$healthy" "$state" >/dev/null &&
		ok "link $l still healthy 3 s later" ||
		bad "link $l degraded again: $(jq -c .links "$state")"
fi

# leaf02 (not the monitor's leaf) at a new LID: its 6 links fall silent
# at its end; the first end asked takes the LID for all of them (one log
# line, not one per port) and every link is healthy within the bound.
sw=$(jq -r '.switches[] | select(.desc == "leaf02") | .guid' "$tmp/live.json" | sed 's/^0x/S-/')
new_sm "\"$sw\"[0]" $SWLID
all_ok='.links | length == 0'
if wait_back $SWLID "$all_ok" "every link"; then
	n=$(grep -c "LID [0-9]* -> $SWLID " "$tmp/mon.err" || true)
	[ "$n" -eq 1 ] && ok "leaf02's new LID logged once" ||
		bad "leaf02's new LID logged $n times: $(grep "> $SWLID" "$tmp/mon.err")"
fi

# leaf02 and a host behind it at new LIDs at once: both ends of the
# host's cable fall silent; the sweeps ask both by directed route, so the
# link never reads "down (neither end answering)" (rule 1c: a dead leaf)
h2=$(jq -r --arg s "$(jq -r '.switches | map(.desc) | index("leaf02")' "$tmp/live.json")" '
	[.links[] | select(.[0] == "switch" and (.[1] | tostring) == $s and .[3] == "ca") | .[4]] | first' "$tmp/live.json")
hg=$(jq -r ".cas[$h2].guid" "$tmp/live.json" | sed 's/^0x/H-/')
if [ -n "$h2" ] && [ "$h2" != null ]; then
	new_sm "\"$sw\"[0]" 220 "\"$hg\"[1]" 230
	if wait_back 230 "$all_ok" "every link (leaf02 and its host at new LIDs)"; then
		sleep 2
		grep -q "neither end answering" "$tmp/mon.err" &&
			bad "a link read down while its ends took new LIDs: $(grep 'neither end' "$tmp/mon.err" | head -2)" ||
			ok "no link read down while leaf02 and its host took new LIDs"
	fi
else
	bad "no host cabled to leaf02 in the model"
fi
[ "$failures" -eq 0 ] || { echo "--- monitor stderr"; tail -20 "$tmp/mon.err"; }
finish
