#!/bin/sh
# bench_health_decision.sh - issue 14's goal "placement decision time
# unchanged (within 5%) with the monitor running".
#
# ibsim + opensm hold a 2,048-host fat tree (64 leaves x 32 hosts, 16
# spines); its live walk is the model. bench_place runs its decisions
# (topoplace and slurm-tree policies, 50% of GPUs busy) on that fabric,
# following the monitor's state file as the 24.11 plugin's LinkState= does
# (re-read when it changed, off the decision path), in two modes that
# alternate for ROUNDS rounds. One host cable is pulled (Unlink) first, so
# that the state is never all-healthy in either mode (a degraded link takes
# the engine off its all-healthy fast path: that is the state's cost, not
# the monitor's, and must not be counted as the monitor's):
#   off: no monitor; the state file as `monitor --once` wrote it (the
#        pulled cable's link at 0);
#   on:  `monitor --interval 1` sweeping the whole fabric every second and
#        rewriting the state file: a symbol-error burst every 2 s on
#        another port flips that link between 0.75 and 1, so the file
#        changes about every second and the decisions follow it;
#   blind: the same monitor and bursts, but writing a file bench_place
#        does not follow: the sweeps' CPU load without the state changes,
#        to tell which of the two costs what;
#   nice: "on" with the monitor under nice 19 (a controller host that runs
#        the monitor beside slurmctld);
#   flip: no monitor; the state file alternates every second between the
#        static one and the static one plus the bursting port's link at
#        0.75 (what the monitor writes), replaced by rename as the monitor
#        does: the state's changes and their re-reads without the sweeps.
#        A link at 0.75 makes a weak host, which the engine prices apart
#        from a dead one; on/flip is then the sweeps' cost alone, flip/off
#        the state's.
# During "on" the CPU time of the monitor and of ibsim (which answers every
# MAD the sweep sends: a real fabric's switches do that in hardware) is
# read from /proc and printed as a share of one core.
# bench_place is pinned to core 1, the monitor, ibsim and opensm to core
# 0 (a controller's core is not the monitor's; on 2 shared cores, pinning
# keeps the comparison about the file and the state, not the scheduler).
# Prints p50/p99 per mode (pooled over rounds, medians of round figures)
# and one JSON line. Not part of make check (~5 min).
#
#   bench_health_decision.sh [--decisions N (2000)] [--rounds N (3)]
set -eu

. "$(dirname "$0")/../integration/lib.sh"
T=$TOPOPLACE
BP=$(dirname "$T")/../tests/bench/bench_place
decisions=2000 rounds=3
while [ $# -gt 0 ]; do
	case $1 in
	--decisions) decisions=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	*) echo "usage: $0 [--decisions N] [--rounds N]" >&2; exit 2 ;;
	esac
done
command -v taskset >/dev/null 2>&1 || skip_all "taskset not installed"
[ -x "$BP" ] || skip_all "$BP not built (make -C build/tests bench)"
[ "$(nproc)" -ge 2 ] || skip_all "needs 2 cores"

"$T" fabric generate fat-tree --leaves 64 --spines 16 --hosts-per-leaf 32 \
	--nics-per-host 1 -o "$tmp/gen.json" >/dev/null
"$T" fabric ibsim-net "$tmp/gen.json" -o "$tmp/f.net"
TP_IBSIM_START_TIMEOUT=120 ibsim_sm_up "$tmp/f.net"
TO=120 ibsim_exec "$T" discover --live --gpus-per-host 8 -o "$tmp/live.json" 2>/dev/null
echo "fabric: $(jq '.hosts | length' "$tmp/live.json") hosts, $(jq '.links | length' "$tmp/live.json") links"
state=$tmp/state.json
leaf() { jq -r --arg d "$1" '.switches[] | select(.desc == $d) | .guid' \
	"$tmp/live.json" | sed 's/^0x/S-/'; }
sw=$(leaf leaf01)
ibsim_con "Unlink \"$(leaf leaf02)\"[1]"
sleep 1
TO=120 ibsim_exec "$T" monitor --fabric "$tmp/live.json" --state-out "$state" \
	--once 2>/dev/null || true
jq -e '.links | map(select(.health == 0)) | length == 1' "$state" >/dev/null ||
	{ echo "monitor --once did not write the pulled cable's link: $(cat "$state")"; exit 1; }
cp "$state" "$tmp/static.json"
# the bursting port's link (leaf01 port 1) at 0.75, for the flip mode
swi=$(jq '.switches | map(.desc) | index("leaf01")' "$tmp/live.json")
li=$(jq --argjson s "$swi" '.links | to_entries | map(select(
	(.value[0] == "switch" and .value[1] == $s and .value[2] == 1) or
	(.value[3] == "switch" and .value[4] == $s and .value[5] == 1))) | .[0].key' \
	"$tmp/live.json")
jq -c --argjson l "$li" '.links += [{"link": $l, "health": 0.75,
	"reason": "symbol_errors +50"}]' "$tmp/static.json" >"$tmp/weak.json"
[ "$li" != null ] || { echo "no link at leaf01 port 1 in the fabric"; exit 1; }

# cpu PID: utime + stime in clock ticks
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
hz=$(getconf CLK_TCK)

# monitor_start STATE-FILE [NICE]: the monitor at --interval 1 on core 0 and the
# symbol-error bursts; monitor_stop ends both.
monitor_start() {
	mkdir -p "$tmp/mon"
	(cd "$tmp/mon" && LD_PRELOAD=$UMAD2SIM exec timeout --foreground 600 \
		taskset -c 0 nice -n "${2:-0}" "$T" monitor --fabric "$tmp/live.json" \
		--state-out "$1" --interval 1 --rediscover 0 2>"$tmp/mon.err") &
	MON_PID=$!
	(i=1; while :; do
		ibsim_con "PerformanceSet \"$sw\"[1] PortCounters.SymbolErrorCounter=$((i * 50 % 60000))"
		i=$((i + 1)); sleep 2
	done) &
	INJ=$!
	sleep 3
	MON=$(pgrep -f -n "monitor --fabric $tmp/live.json" || echo "$MON_PID")
}
monitor_stop() {
	kill "$INJ" 2>/dev/null; wait "$INJ" 2>/dev/null || true
	kill -TERM "$MON_PID" 2>/dev/null; wait "$MON_PID" 2>/dev/null || true
	MON_PID=
	echo "$1 round $2: the monitor logged $(grep -c 'health' "$tmp/mon.err" || true) link health changes"
}

flip_start() {
	(while [ -d "$tmp" ]; do
		for f in weak static; do
			cp "$tmp/$f.json" "$state.flip" && mv "$state.flip" "$state"
			sleep 1
		done
	done) &
	FLIP=$!
}
flip_stop() { kill "$FLIP" 2>/dev/null; wait "$FLIP" 2>/dev/null || true; }

# run MODE ROUND: one bench_place run; its p50/p99 into $tmp/MODE.txt
run() {
	taskset -c 1 "$BP" "$decisions" --fabric "$tmp/live.json" \
		--link-state "$state" >"$tmp/bp.out"
	grep '^fabric ' "$tmp/bp.out" | sed "s/^/$1 round $2: /"
	awk -v m="$1" '$2 == "topoplace" && $3 == "decisions" {print $6, $9}' \
		"$tmp/bp.out" >>"$tmp/$1.txt"
}

r=1
while [ "$r" -le "$rounds" ]; do
	cp "$tmp/static.json" "$state"
	run off "$r"
	flip_start
	run flip "$r"
	flip_stop
	cp "$tmp/static.json" "$state"
	monitor_start "$state"
	t0=$(date +%s%N) m0=$(cpu "$MON") i0=$(cpu "$IBSIM_PID")
	run on "$r"
	t=$((($(date +%s%N) - t0) / 1000000))
	awk -v m=$(($(cpu "$MON") - m0)) -v i=$(($(cpu "$IBSIM_PID") - i0)) \
		-v t="$t" -v hz="$hz" -v r="$r" 'BEGIN {
		printf "on round %s: CPU over %.1f s: monitor %.0f%%, ibsim %.0f%% of a core\n",
			r, t / 1000, m / hz / (t / 1000) * 100, i / hz / (t / 1000) * 100 }' |
		tee -a "$tmp/cpu.txt"
	monitor_stop on "$r"
	cp "$tmp/static.json" "$state"
	monitor_start "$tmp/blind.json"
	run blind "$r"
	monitor_stop blind "$r"
	cp "$tmp/static.json" "$state"
	monitor_start "$state" 19
	run nice "$r"
	monitor_stop nice "$r"
	r=$((r + 1))
done
# median over rounds of p50 and of p99
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for m in off on blind nice flip; do
	eval "${m}_p50=$(cut -d' ' -f1 "$tmp/$m.txt" | med)"
	eval "${m}_p99=$(cut -d' ' -f2 "$tmp/$m.txt" | med)"
done
echo "topoplace decision, median of $rounds rounds: off p50 $off_p50 ms p99 $off_p99 ms;" \
	"on p50 $on_p50 ms p99 $on_p99 ms; blind p50 $blind_p50 ms p99 $blind_p99 ms;" \
	"nice p50 $nice_p50 ms p99 $nice_p99 ms; flip p50 $flip_p50 ms p99 $flip_p99 ms"
awk -v a="$off_p50" -v b="$on_p50" -v c="$off_p99" -v d="$on_p99" \
	-v e="$blind_p50" -v f="$blind_p99" -v g="$nice_p50" -v h="$nice_p99" \
	-v i="$flip_p50" -v j="$flip_p99" 'BEGIN {
	printf "on/off: p50 %+.1f%%, p99 %+.1f%% (goal: within 5%%); on/blind: p50 %+.1f%%, p99 %+.1f%%; nice/off: p50 %+.1f%%, p99 %+.1f%%\n",
		(b/a-1)*100, (d/c-1)*100, (b/e-1)*100, (d/f-1)*100, (g/a-1)*100, (h/c-1)*100
	printf "flip/off (the state changes alone): p50 %+.1f%%, p99 %+.1f%%; on/flip (the sweeps alone): p50 %+.1f%%, p99 %+.1f%%\n",
		(i/a-1)*100, (j/c-1)*100, (b/i-1)*100, (d/j-1)*100 }'
printf '{"bench":"health_decision","decisions":%s,"rounds":%s,"off_p50_ms":%s,"off_p99_ms":%s,"on_p50_ms":%s,"on_p99_ms":%s,"blind_p50_ms":%s,"blind_p99_ms":%s,"nice_p50_ms":%s,"nice_p99_ms":%s,"flip_p50_ms":%s,"flip_p99_ms":%s}\n' \
	"$decisions" "$rounds" "$off_p50" "$off_p99" "$on_p50" "$on_p99" "$blind_p50" "$blind_p99" "$nice_p50" "$nice_p99" "$flip_p50" "$flip_p99"
