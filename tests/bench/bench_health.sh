#!/bin/sh
# bench_health.sh - issue 14's goals on a simulated fabric:
#   * one health sweep (fresh discovery + PortCounters and
#     PortCountersExtended of both ends of every link) of a 2,048-host fat
#     tree, pinned to one core: goal < 5 s;
#   * time from an Unlink on ibsim's console to the monitor's state file
#     showing the link down, at --interval 1: goal <= interval + 1 s.
# Prints the figures and one JSON line. Not part of make check (ibsim and
# opensm take ~10 s to load the fabric).
#
#   bench_health.sh [--leaves N] [--hosts-per-leaf N] [--spines N] [--repeat N]
set -eu

. "$(dirname "$0")/../integration/lib.sh"
T=$TOPOPLACE
leaves=64 hpl=32 spines=16 repeat=3
while [ $# -gt 0 ]; do
	case $1 in
	--leaves) leaves=$2; shift 2 ;;
	--hosts-per-leaf) hpl=$2; shift 2 ;;
	--spines) spines=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
	*) echo "usage: $0 [--leaves N] [--hosts-per-leaf N] [--spines N] [--repeat N]" >&2; exit 2 ;;
	esac
done
command -v taskset >/dev/null 2>&1 || skip_all "taskset not installed"

ms() { echo $((($(date +%s%N) - $1) / 1000000)); }

"$T" fabric generate fat-tree --leaves "$leaves" --spines "$spines" \
	--hosts-per-leaf "$hpl" --nics-per-host 1 -o "$tmp/gen.json" >/dev/null
"$T" fabric ibsim-net "$tmp/gen.json" -o "$tmp/f.net"
t0=$(date +%s%N)
TP_IBSIM_START_TIMEOUT=120 ibsim_sm_up "$tmp/f.net"
echo "ibsim + opensm up: $(ms "$t0") ms"
cli() { TO=120 ibsim_exec "$@"; }
cli "$T" discover --live -o "$tmp/live.json" 2>/dev/null
nl=$(jq '.links | length' "$tmp/live.json")
nh=$(jq '.hosts | length' "$tmp/live.json")
echo "fabric: $nh hosts, $nl links"

best=
i=0
while [ "$i" -lt "$repeat" ]; do
	t0=$(date +%s%N)
	rc=0
	cli taskset -c 0 "$T" fabric health --fabric "$tmp/live.json" --json \
		>"$tmp/h.json" 2>"$tmp/h.err" || rc=$?
	t=$(ms "$t0")
	[ "$rc" -eq 0 ] || { echo "fabric health rc $rc"; tail -3 "$tmp/h.err"; exit 1; }
	echo "sweep $i (one core, whole command): $t ms, $(jq .seen "$tmp/h.json") links, $(jq .alarms "$tmp/h.json") alarms"
	[ -z "$best" ] || [ "$t" -lt "$best" ] && best=$t
	i=$((i + 1))
done

# Unlink -> state file, with the monitor at --interval 1 on one core
state=$tmp/state.json
ibsim_monitor 300 "$state" "$tmp/h.prom" taskset -c 0 "$T" monitor \
	--fabric "$tmp/live.json" --state-out "$state" --prom "$tmp/h.prom" --interval 1
sweep_s=$(sed -n 's/^topoplace_health_sweep_seconds //p' "$tmp/h.prom")
worst=0 sum=0
for leaf in 1 2 3; do
	sw=$(jq -r --arg d "$(printf 'leaf%02d' "$leaf")" \
		'.switches[] | select(.desc == $d) | .guid' "$tmp/live.json" |
		sed 's/^0x/S-/')
	link=$(jq -r --arg a "$(printf 'leaf%02d:1' "$leaf")" \
		'.links[] | select(.a == $a) | .link' "$tmp/h.json")
	sleep 0.$((leaf * 3)) # land at different points of the interval
	t0=$(date +%s%N)
	ibsim_con "Unlink \"$sw\"[1]"
	until jq -e ".links | map(select(.link == $link and .health == 0)) | length == 1" \
		"$state" >/dev/null 2>&1; do
		sleep 0.02
		[ "$(ms "$t0")" -lt 30000 ] || { echo "link $link not down after 30 s"; exit 1; }
	done
	t=$(ms "$t0")
	echo "Unlink $sw[1] -> state file shows link $link down: $t ms"
	sum=$((sum + t))
	[ "$t" -gt "$worst" ] && worst=$t
	ibsim_con "ReLink \"$sw\"[1]"
done
echo "monitor sweep (as it reports): ${sweep_s} s"
printf '{"bench":"health","hosts":%s,"links":%s,"sweep_ms_best":%s,"monitor_sweep_s":%s,"unlink_to_file_ms_mean":%s,"unlink_to_file_ms_worst":%s,"interval_s":1}\n' \
	"$nh" "$nl" "$best" "$sweep_s" $((sum / 3)) "$worst"
