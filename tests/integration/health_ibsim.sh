#!/bin/sh
# health_ibsim.sh - link health from a simulated fabric's own reports.
#
# ibsim (with its console on a FIFO) + opensm (for LIDs, so PMA queries
# route) on a generated 16-host fat tree. While `topoplace monitor
# --interval 1` runs, faults are injected through ibsim's console and the
# state file, the Prometheus file and `fabric health --json` must change as
# the rules in tp_health.h say within one sweep (1 s + 1.5 s slack):
#   PerformanceSet symbol errors   -> 0.75, "symbol_errors +42"
#   PerformanceSet xmit discards   -> 0.5,  "xmit_discards +5000"
#   Error (drop every packet)      -> 0.5,  "not answering" (2nd sweep)
#   Unlink / ReLink                -> 0 "down", then healthy again
# and `topoplace place --state` on the health file keeps a job off the host
# whose link is down. The healthy fabric raises no alarm. Before opensm
# runs (no LIDs) `fabric health` and `monitor` fail on one line, exit 1,
# as topoplace(1) and their --help say (cli.sh checks those): PortInfo and
# the PMA are asked by LID.
#
# Needs ibsim-utils, libumad2sim0, opensm, jq and a build with libibmad;
# exits 77 (skip) without them.
set -eu
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE
fail() { bad "$@"; }

"$T" fabric generate fat-tree --leaves 4 --spines 2 --hosts-per-leaf 4 \
	--nics-per-host 1 -o "$tmp/gen.json" >/dev/null
"$T" fabric ibsim-net "$tmp/gen.json" -o "$tmp/f.net"
TP_IBSIM_NO_SM=1 ibsim_sm_up "$tmp/f.net"
con() { ibsim_con "$1"; }
cli() { ibsim_exec "$T" "$@"; }

# no subnet manager yet: the walk (directed routes) works, the sweep not
ibsim_discover "$tmp/nosm.json"
nosm='no port of the fabric has a LID (no subnet manager?)'
for c in "fabric health" "monitor --once --state-out $tmp/nosm-state.json"; do
	rc=0
	# shellcheck disable=SC2086 # c is the command and its options
	cli $c --fabric "$tmp/nosm.json" >/dev/null 2>"$tmp/nosm.all" || rc=$?
	# umad2sim's own "ibwarn: ... sim_connect: attached" line aside
	grep -v '^ibwarn: ' "$tmp/nosm.all" >"$tmp/nosm.err" || true
	grep -q 'built without libibmad' "$tmp/nosm.err" && skip_all "built without libibmad"
	[ "$rc" -eq 1 ] && [ "$(wc -l <"$tmp/nosm.err")" -eq 1 ] &&
		grep -qF "$nosm" "$tmp/nosm.err" &&
		ok "${c%% --*} without a subnet manager: exit 1, one line" ||
		fail "${c%% --*} without a subnet manager: rc $rc: $(cat "$tmp/nosm.err")"
done
ibsim_sm

# a file of another fabric (no GUID of it on this one) is the input's
# fault, not the subnet manager's: exit 2, saying so
sed 's/"0x0002c90/"0x0002c9f/g' "$tmp/gen.json" >"$tmp/other.json"
rc=0
cli fabric health --fabric "$tmp/other.json" >/dev/null 2>"$tmp/other.all" || rc=$?
grep -v '^ibwarn: ' "$tmp/other.all" >"$tmp/other.err" || true
[ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/other.err")" -eq 1 ] &&
	grep -q "none of the fabric file's switches and CAs is on the fabric walked" "$tmp/other.err" &&
	ok "fabric health on another fabric's file: exit 2, one line naming it" ||
	fail "fabric health on another fabric's file: rc $rc: $(cat "$tmp/other.err")"

ibsim_discover "$tmp/live.json"
rc=0
cli fabric health --fabric "$tmp/live.json" --json >"$tmp/h0.json" \
	2>"$tmp/h0.err" || rc=$?
grep -q 'built without libibmad' "$tmp/h0.err" && skip_all "built without libibmad"
if [ "$rc" -ne 0 ] || [ "$(jq .alarms "$tmp/h0.json")" != 0 ] ||
	[ "$(jq .seen "$tmp/h0.json")" != 24 ]; then
	fail "healthy fabric: fabric health rc $rc, $(jq -c '{seen,alarms}' "$tmp/h0.json")"
	head -5 "$tmp/h0.err"
else
	ok "healthy fabric: 24 links seen, no alarm, exit 0"
fi

# link index and console name of "desc:port" (the A end is a switch)
link_of() {
	jq -r --arg a "$1" '.links[] | select(.a == $a) | .link' "$tmp/h0.json"
}
sim_name() {
	jq -r --arg d "$1" '.switches[] | select(.desc == $d) | .guid' \
		"$tmp/live.json" | sed 's/^0x/S-/'
}

# a state file that is a symbolic link is not read through (as root, its
# target's keys would land in a 0644 file) nor replaced: exit 1, one line
echo '{"format":"topoplace-state/1","secret":"x"}' >"$tmp/target.json"
ln -s "$tmp/target.json" "$tmp/linked-state.json"
rc=0
cli monitor --once --fabric "$tmp/live.json" --state-out "$tmp/linked-state.json" \
	>/dev/null 2>"$tmp/link.all" || rc=$?
grep -v '^ibwarn: ' "$tmp/link.all" >"$tmp/link.err" || true
[ "$rc" -eq 1 ] && grep -q "linked-state.json: a symbolic link: not followed" "$tmp/link.err" &&
	[ -L "$tmp/linked-state.json" ] &&
	ok "monitor --state-out through a symbolic link: refused, exit 1" ||
	fail "monitor --state-out through a symbolic link: rc $rc: $(cat "$tmp/link.err")"

state=$tmp/health-state.json
prom=$tmp/topoplace.prom
# Another writer's fields must survive the monitor.
echo '{"format":"topoplace-state/1","down":["node016"]}' >"$state"
# Started without ibsim-run.sh exec, so that SIGTERM reaches it through
# timeout(1) alone; --foreground, or timeout signals the process group too
# and the monitor, seeing a second signal, ends at once (exit 143).
mkdir "$tmp/mon"
(cd "$tmp/mon" && LD_PRELOAD=$UMAD2SIM exec timeout --foreground 120 "$T" monitor \
	--fabric "$tmp/live.json" --state-out "$state" --prom "$prom" \
	--interval 1 2>"$tmp/monitor.err") &
MON_PID=$!

# wait_for JQ-FILTER-ON-STATE [TENTHS]: poll 10/s for up to 2.5 s (one
# sweep + slack; TENTHS overrides); prints the milliseconds it took.
wait_for() {
	t0=$(date +%s%N)
	n=0
	while [ "$n" -lt "${2:-25}" ]; do
		if [ -s "$state" ] && jq -e "$1" "$state" >/dev/null 2>&1; then
			echo $((($(date +%s%N) - t0) / 1000000))
			return 0
		fi
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}
link_is() { # LINK HEALTH REASON-SUBSTRING
	printf '.links | map(select(.link == %s and .health == %s and (.reason | contains("%s")))) | length == 1' "$1" "$2" "$3"
}

if wait_for '.links == [] and .down == ["node016"]' >/dev/null; then
	sleep 3 # three more sweeps of a healthy fabric
	if jq -e '.links == [] and .down == ["node016"]' "$state" >/dev/null &&
		grep -q '^# TYPE topoplace_link_health gauge' "$prom" &&
		[ "$(grep -c '^topoplace_link_health{' "$prom")" = 24 ] &&
		! grep '^topoplace_link_health{' "$prom" | grep -qv ' 1$'; then
		ok "monitor: healthy sweeps write no degraded link, keep 'down'"
	else
		fail "monitor on a healthy fabric: $(cat "$state")"
	fi
else
	fail "monitor wrote no state file within 2.5 s"
	cat "$tmp/monitor.err"
fi

# inject CONSOLE-LINE LINK HEALTH REASON PROM-GREP [TENTHS]
inject() {
	con "$1"
	if ms=$(wait_for "$(link_is "$2" "$3" "$4")" "${6:-25}"); then
		# the same sweep writes the Prometheus file right after the
		# state (each fsync'ed): poll, a loaded machine takes its time
		n=0
		while [ -n "$5" ] && [ "$n" -lt 10 ] && ! grep -q "$5" "$prom"; do
			sleep 0.1
			n=$((n + 1))
		done
		if [ -n "$5" ] && ! grep -q "$5" "$prom"; then
			fail "'$1': Prometheus file lacks $5"
		else
			ok "'$1': link $2 health $3 ($4) after $ms ms"
		fi
	else
		fail "'$1': link $2 not at $3 ($4) within one sweep: $(cat "$state")"
	fi
}

leaf1=$(sim_name leaf01)
leaf2=$(sim_name leaf02)
leaf3=$(sim_name leaf03)
leaf4=$(sim_name leaf04)
l21=$(link_of leaf02:1)
inject "PerformanceSet \"$leaf2\"[1] PortCounters.SymbolErrorCounter=42" \
	"$l21" 0.75 "symbol_errors +42" \
	"topoplace_link_errors_delta{link=\"$l21\",.*counter=\"symbol_errors\"} 42"
l32=$(link_of leaf03:2)
inject "PerformanceSet \"$leaf3\"[2] PortCounters.PortXmitDiscards=5000" \
	"$l32" 0.5 "xmit_discards +5000" \
	"topoplace_link_health{link=\"$l32\",.*} 0.5"
# a burst is one interval's news: the next sweep is healthy again
wait_for ".links | map(select(.link == $l32)) | length == 0" >/dev/null ||
	fail "xmit discards still alarmed a sweep after they stopped"

l41=$(link_of leaf04:1)
# rule 1b waits for a second silent sweep
inject "Error \"$leaf4\"[1] 100" "$l41" 0.5 "not answering" "" 40
con "Error \"$leaf4\"[1] 0"
wait_for ".links | map(select(.link == $l41)) | length == 0" >/dev/null ||
	fail "link $l41 still degraded after Error 0"

l11=$(link_of leaf01:1)
host1=$(jq -r '.links[] | select(.a == "leaf01:1") | .b' "$tmp/h0.json" |
	sed 's/ .*//')
before=$("$T" place --fabric "$tmp/live.json" --request nodes=4 --json |
	jq -r '.hosts | join(",")')
inject "Unlink \"$leaf1\"[1]" "$l11" 0 "down" \
	"topoplace_link_health{link=\"$l11\",.*} 0"
after=$("$T" place --fabric "$tmp/live.json" --state "$state" \
	--request nodes=4 --json | jq -r '.hosts | join(",")')
case ",$before," in
*",$host1,"*) ;;
*) fail "healthy placement ($before) does not use $host1: the check proves nothing" ;;
esac
case ",$after," in
*",$host1,"* | ",,") fail "place --state put the job on $host1 behind the down link: $after" ;;
*) ok "place --state: $before -> $after (avoids $host1)" ;;
esac
rc=0
TO=30 cli fabric health --fabric "$tmp/live.json" --json >"$tmp/h1.json" \
	2>/dev/null || rc=$?
if [ "$rc" -eq 3 ] && jq -e ".links[] | select(.link == $l11) |
	.health == 0" "$tmp/h1.json" >/dev/null; then
	ok "fabric health --json: link $l11 down, exit 3"
else
	fail "fabric health --json after Unlink: rc $rc"
fi
con "ReLink \"$leaf1\"[1]"
wait_for ".links | map(select(.link == $l11)) | length == 0" >/dev/null &&
	ok "ReLink: link $l11 healthy again" ||
	fail "link $l11 still degraded after ReLink: $(cat "$state")"

# SIGHUP (timeout relays it): a walk at once, and the monitor goes on
# (the default action ended it, exit 129, which systemd took for a stop)
kill -HUP "$MON_PID" 2>/dev/null || fail "the monitor had died before SIGHUP"
n=0
until grep -q "SIGHUP: walking the fabric again" "$tmp/monitor.err" || [ "$n" -ge 50 ]; do
	sleep 0.1
	n=$((n + 1))
done
sleep 0.3
kill -0 "$MON_PID" 2>/dev/null && grep -q "SIGHUP: walking the fabric again" "$tmp/monitor.err" &&
	ok "SIGHUP: the monitor walks the fabric again and goes on" ||
	fail "SIGHUP: $(tail -3 "$tmp/monitor.err")"
kill -TERM "$MON_PID" 2>/dev/null || fail "the monitor had died before SIGTERM"
n=0
while kill -0 "$MON_PID" 2>/dev/null && [ "$n" -lt 30 ]; do
	sleep 0.1
	n=$((n + 1))
done
rc=0
wait "$MON_PID" || rc=$?
MON_PID=
[ "$rc" -eq 0 ] && ok "SIGTERM: monitor exited 0" ||
	fail "monitor after SIGTERM: rc $rc"
grep -q "link $l11 health 1.00 -> 0.00: down" "$tmp/monitor.err" ||
	fail "monitor did not log link $l11 going down"
ls "$tmp"/*.tmp.* >/dev/null 2>&1 && fail "temporary files left behind"

[ "$failures" -eq 0 ] || { echo "--- monitor stderr"; tail -20 "$tmp/monitor.err"; }
finish
