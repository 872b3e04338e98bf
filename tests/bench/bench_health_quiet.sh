#!/bin/sh
# bench_health_quiet.sh - issue 14's goal "no false alarms on a healthy
# fabric over 100 sweeps with counters moving at normal rates", end to end
# on ibsim + opensm: `topoplace monitor --interval 1` sweeps a fat tree
# while about five times a second the switch end of every link gets, through ibsim's
# console (PerformanceSet), data counters at 0-90% of the cabled rate and
# error counters at a healthy fabric's rates, below the per-minute
# thresholds of topoplace(1) HEALTH RULES even at the default 60 s
# interval: symbol errors ~2 and receive errors ~1 a minute, transmit
# discards ~1 a second (a congested port). Counts the sweeps (the
# Prometheus file's timestamp) and every sweep whose state file lists a
# degraded link or whose Prometheus file has a health below 1; the monitor
# logs every health change on stderr, counted too. The unit test
# (tests/health/test_health.c test_no_false_alarm) checks the rules alone.
#
#   bench_health_quiet.sh [--sweeps N] [--leaves N] [--hosts-per-leaf N] [--spines N]
#
# Prints the figures and one JSON line; exit 1 on any alarm, 77 without
# ibsim / opensm / libibmad. Not part of make check (~2 min).
set -eu

. "$(dirname "$0")/../integration/lib.sh"
T=$TOPOPLACE
sweeps=100 leaves=4 hpl=8 spines=2
while [ $# -gt 0 ]; do
	case $1 in
	--sweeps) sweeps=$2; shift 2 ;;
	--leaves) leaves=$2; shift 2 ;;
	--hosts-per-leaf) hpl=$2; shift 2 ;;
	--spines) spines=$2; shift 2 ;;
	*) echo "usage: $0 [--sweeps N] [--leaves N] [--hosts-per-leaf N] [--spines N]" >&2; exit 2 ;;
	esac
done

"$T" fabric generate fat-tree --leaves "$leaves" --spines "$spines" \
	--hosts-per-leaf "$hpl" --nics-per-host 1 -o "$tmp/gen.json" >/dev/null
"$T" fabric ibsim-net "$tmp/gen.json" -o "$tmp/f.net"
ibsim_sm_up "$tmp/f.net"
ibsim_discover "$tmp/live.json"
rc=0
ibsim_exec "$T" fabric health --fabric "$tmp/live.json" --json >"$tmp/h0.json" \
	2>"$tmp/h0.err" || rc=$?
grep -q 'built without libibmad' "$tmp/h0.err" && skip_all "built without libibmad"
[ "$rc" -eq 0 ] || { echo "fabric health rc $rc: $(head -3 "$tmp/h0.err")"; exit 1; }

# "S-<guid> PORT GBPS" for the switch end of every link (A ends are
# switches: a CA is never listed first)
jq -r '.switches as $s | .links[] | select(.[0] == "switch") |
	"S-\($s[.[1]].guid | ltrimstr("0x")) \(.[2]) \(.[6] * .[7])"' \
	"$tmp/live.json" >"$tmp/ports"
nports=$(wc -l <"$tmp/ports")

state=$tmp/state.json
prom=$tmp/h.prom
ibsim_monitor $((sweeps * 3 + 60)) "$state" "$prom" "$T" monitor \
	--fabric "$tmp/live.json" --state-out "$state" --prom "$prom" \
	--interval 1 --rediscover 0

# DT seconds of traffic and errors as console lines (absolute values:
# PerformanceSet sets a field), data scaled by the time since the last
# batch so that the rates hold under a late loop. awk keeps the per-port
# totals in $tmp/ctr, whole (%.0f: mawk would print 6 digits and a data
# counter could step back, which the rules read as a reset). traffic SEED DT
: >"$tmp/ctr"
traffic() {
	awk -v seed="$1" -v dt="$2" -v ctr="$tmp/ctr" '
	BEGIN { srand(seed); while ((getline l < ctr) > 0) { split(l, f, " "); v[f[1]] = f[2] } }
	{
		k = $1 "[" $2 "]"; words = $3 * 1e9 / 32 * dt
		x[k] = v[k ".x"] + int(rand() * 0.9 * words); v[k ".x"] = x[k]
		r[k] = v[k ".r"] + int(rand() * 0.9 * words); v[k ".r"] = r[k]
		printf "PerformanceSet \"%s\"[%s] PortCountersExtended.PortXmitData=%.0f\n", $1, $2, x[k]
		printf "PerformanceSet \"%s\"[%s] PortCountersExtended.PortRcvData=%.0f\n", $1, $2, r[k]
		if (rand() < 2 / 60 * dt) { v[k ".s"]++
			printf "PerformanceSet \"%s\"[%s] PortCounters.SymbolErrorCounter=%d\n", $1, $2, v[k ".s"] }
		if (rand() < 1 / 60 * dt) { v[k ".e"]++
			printf "PerformanceSet \"%s\"[%s] PortCounters.PortRcvErrors=%d\n", $1, $2, v[k ".e"] }
		d = rand() < dt ? int(rand() * 3) : 0
		if (d) { v[k ".d"] += d
			printf "PerformanceSet \"%s\"[%s] PortCounters.PortXmitDiscards=%d\n", $1, $2, v[k ".d"] }
	}
	END { for (k in v) printf "%s %.0f\n", k, v[k] > ctr }' "$tmp/ports"
}

stamp() { sed -n 's/^topoplace_health_last_sweep_timestamp_seconds //p' "$prom" 2>/dev/null; }
seen=0 bad_sweeps=0 last= lines=0 sent=$(date +%s%N)
t0=$(date +%s)
while [ "$seen" -lt "$sweeps" ]; do
	t=$(date +%s%N)
	if [ $((t - sent)) -ge 200000000 ]; then
		traffic "$((t % 1000000007))" "$(((t - sent) / 1000000)).0e-3" >"$tmp/con"
		sent=$t
		lines=$((lines + $(wc -l <"$tmp/con")))
		cat "$tmp/con" >"$IBSIM_DIR/console"
	fi
	s=$(stamp)
	if [ -n "$s" ] && [ "$s" != "$last" ]; then
		last=$s
		seen=$((seen + 1))
		sed -n 's/^topoplace_link_utilization{.*direction="ab"} //p' "$prom" >>"$tmp/util"
		if ! jq -e '.links == []' "$state" >/dev/null 2>&1 ||
			grep '^topoplace_link_health{' "$prom" | grep -qv ' 1$'; then
			bad_sweeps=$((bad_sweeps + 1))
			echo "sweep $seen: $(jq -c .links "$state" | cut -c1-200)"
		fi
	fi
	[ $(($(date +%s) - t0)) -lt $((sweeps * 3 + 30)) ] ||
		{ echo "only $seen sweeps in $((sweeps * 3 + 30)) s"; break; }
	sleep 0.2
done
# "topoplace monitor: link L health OLD -> NEW: reason" with NEW below 1
changes=$(awk '$3 == "link" && $5 == "health" && $8 + 0 < 1 { n++ } END { print n + 0 }' \
	"$tmp/mon.err")
util=$(awk '{ s += $1; if ($1 > m) m = $1 } END { printf "%.2f %.2f", s / NR, m }' "$tmp/util")
elapsed=$(($(date +%s) - t0))
echo "fabric: $(jq '.hosts | length' "$tmp/live.json") hosts, $nports links moved each second"
echo "sweeps watched: $seen in $elapsed s; console lines sent: $lines"
echo "utilisation of the switch ends over all sweeps: mean ${util% *}, max ${util#* }"
echo "sweeps with a degraded link: $bad_sweeps; monitor health-change lines: $changes"
[ "$changes" -eq 0 ] || head -5 "$tmp/mon.err"
printf '{"bench":"health_quiet","hosts":%s,"links_moved":%s,"sweeps":%s,"alarm_sweeps":%s,"change_lines":%s,"util_mean":%s,"util_max":%s}\n' \
	"$(jq '.hosts | length' "$tmp/live.json")" "$nports" "$seen" "$bad_sweeps" "$changes" \
	"${util% *}" "${util#* }"
[ "$seen" -ge "$sweeps" ] && [ "$bad_sweeps" -eq 0 ] && [ "$changes" -eq 0 ]
