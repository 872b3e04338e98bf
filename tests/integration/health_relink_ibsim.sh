#!/bin/sh
# health_relink_ibsim.sh - a re-discovery walk while a host cable is down
# must not keep the link degraded after the cable is back.
#
# ibsim + opensm on a generated 16-host fat tree, whose live walk is the
# model; `monitor --interval 1 --rediscover 8`. leaf01[1] (a host's only
# cable) is pulled (Unlink) and the monitor's topology check walks the
# fabric while it is down ("gone" logged, the link at health 0 in the
# state file): the walk cannot reach the host. ReLink right after that
# walk: the link must be healthy in the
# state file within 3 s (the next sweep, once opensm has routed the host
# again), not at the next topology check 8 s later. Before the fix the
# walk left the host without a LID, so no sweep could ask it and the
# link stayed at "b end up but not answering" until the next walk (300 s
# at the monitor's default; bench_health_select.sh once waited > 30 s).
# The host's SymbolErrorCounter is at its maximum before the monitor
# starts (rule 4: old news) and stays there: the link must stay healthy
# after the ReLink too. Before that fix the sweeps that could not read
# the host's counters (link down) lost the "at its maximum since the
# first sweep" mark, and a sweep after the ReLink put the link at 0.75,
# "symbol_errors saturated, not counting", for good.
# Needs ibsim-utils, libumad2sim0, opensm, jq and a build with libibmad;
# exits 77 (skip) without them.
set -eu
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE

ibsim_fat16 "$tmp/live.json"

leaf1=$(jq -r '.switches[] | select(.desc == "leaf01") | .guid' "$tmp/live.json" |
	sed 's/^0x/S-/')
l11=$(ibsim_link '.a == "leaf01:1"')
[ -n "$l11" ] || { bad "no link leaf01:1 in the model"; finish; }
# the CA at leaf01:1, as ibsim's console names it
host1=$(jq -r '(.switches | map(.desc) | index("leaf01")) as $s |
	.cas[.links[] | select(.[0] == "switch" and .[1] == $s and .[2] == 1 and
	.[3] == "ca") | .[4]].guid' "$tmp/live.json" | sed 's/^0x/H-/')
case $host1 in
H-*) ibsim_con "PerformanceSet \"$host1\"[1] PortCounters.SymbolErrorCounter=65535" ;;
*) bad "no CA at leaf01:1 in the model: '$host1'"; finish ;;
esac

# monitor --once judges no counter: the saturated symbol counter (and
# any lifetime total) stays out of the state file the placement reads,
# where fabric health, a report, gives the totals
ibsim_exec "$T" monitor --once --fabric "$tmp/live.json" --state-out "$tmp/once.json" \
	2>"$tmp/once.err" && jq -e '.links | length == 0' "$tmp/once.json" >/dev/null &&
	ok "monitor --once: a symbol counter at its maximum does not reach the state file" ||
	bad "monitor --once state: $(cat "$tmp/once.json" "$tmp/once.err" 2>&1 | head -c 400)"
state=$tmp/state.json
ibsim_monitor 120 "$state" "$tmp/h.prom" "$T" monitor --fabric "$tmp/live.json" \
	--state-out "$state" --prom "$tmp/h.prom" --interval 1 --rediscover 8
healthy=".links | map(select(.link == $l11)) | length == 0"
jq -e "$healthy" "$state" >/dev/null ||
	bad "link $l11 not healthy at start: $(cat "$state")"

ibsim_con "Unlink \"$leaf1\"[1]"
n=0
until grep -q "gone: link $l11 " "$tmp/mon.err"; do
	sleep 0.1
	n=$((n + 1))
	[ "$n" -lt 200 ] || { bad "no walk reported link $l11 gone within 20 s"; finish; }
done
# the link down (health 0) in the state file before the ReLink: one never
# marked down there would read "healthy" at once below, in about 0 ms
down=".links | map(select(.link == $l11 and .health == 0)) | length == 1"
n=0
until jq -e "$down" "$state" >/dev/null 2>&1; do
	sleep 0.1
	n=$((n + 1))
	[ "$n" -lt 50 ] || {
		bad "link $l11 gone but not at health 0 in the state file within 5 s: $(jq -c ".links | map(select(.link == $l11))" "$state")"
		finish
	}
done
ok "link $l11 at health 0 in the state file before the ReLink"
ibsim_con "ReLink \"$leaf1\"[1]"
t0=$(date +%s%N)
n=0 why=
while ! jq -e "$healthy" "$state" >/dev/null 2>&1 && [ "$n" -lt 150 ]; do
	# what the state file says of the link once the bound has passed
	[ "$n" -ne 30 ] || why=$(jq -c ".links | map(select(.link == $l11))" "$state")
	sleep 0.1
	n=$((n + 1))
done
back=$((($(date +%s%N) - t0) / 1000000))
[ "$back" -le 3000 ] &&
	ok "ReLink after a walk with the cable down: link $l11 healthy in $back ms (<= 3000 ms)" ||
	bad "ReLink after a walk with the cable down: link $l11 healthy after $back ms (> 3000 ms; at 3 s: $why)"
sleep 3 # three more sweeps with the host's counters read again
jq -e "$healthy" "$state" >/dev/null &&
	ok "link $l11 still healthy 3 s after the ReLink (old saturated counter)" ||
	bad "link $l11 degraded after the ReLink: $(jq -c ".links | map(select(.link == $l11))" "$state")"
[ "$failures" -eq 0 ] || { echo "--- monitor stderr"; tail -20 "$tmp/mon.err"; }
finish
