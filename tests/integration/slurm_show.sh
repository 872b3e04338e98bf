#!/bin/sh
# `topoplace show` against a real Slurm 22.05 mini-cluster (compatible mode:
# topology/topoplace from the build tree, 8 nodes with 4 fake GPUs, the
# interleaved fabric: odd hosts on leaf01, even on leaf02), PrivateData=jobs:
#   - a running 4-node job: hosts = Slurm's NodeList, GPUs per host = Slurm's
#     GRES detail (--exclusive: all 4), 1 group,
#     minimum 1, predicted = ideal, "slurm (compatible mode)"
#   - text output, `show jobs`, a finished job still shows
#   - a decision record in StateSaveLocation/topoplace-decisions.jsonl wins
#     when its hosts are the job's, and is ignored when they are not
#   - an unknown job exits 2; an unreachable controller exits 1 quickly
#   - as another user (nobody): root's job is hidden (exit 2, not listed),
#     its own job shows
# Runs beside other clusters: TP_SHOW_NET (default 10.201.0) and
# TP_SHOW_PORT (default 6917) pick its network and slurmctld port.
# Needs root, the Slurm packages, the plugins and `show` built with
# libslurm; exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 22 scancel
"$TOPOPLACE" show --help 2>&1 | grep -q "built without libslurm" && skip_all "topoplace show built without libslurm"
need_plugins topology_topoplace
NET=${TP_SHOW_NET:-10.201.0}
PORT=${TP_SHOW_PORT:-6917}
dir=$tmp/cluster

t0=$(date +%s)
cluster_trap

cat >"$tmp/topoplace.conf" <<'EOF'
FabricFile=@DIR@/fabric.json
EOF
echo "PrivateData=jobs" >"$tmp/extra.conf"

echo "# $CLUSTER start --topology topoplace --net $NET --port $PORT --dir $dir"
if ! timeout 90 "$CLUSTER" start --topology topoplace --plugin-dir "$PLUGIN_DIR" \
	--nodes 8 --gpus-per-node 4 --dir "$dir" --timeout 40 --net "$NET" --port "$PORT" \
	--extra-file "$tmp/topoplace.conf" --slurm-conf-extra "$tmp/extra.conf" \
	>"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start"
	finish
fi
ok "cluster up in $(($(date +%s) - t0)) s"
export SLURM_CONF=$dir/slurm.conf

field() { # JOBID KEY
	timeout 10 scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
wait_state() { # JOBID STATE: wait (<= 30 s)
	i=0
	while [ $i -lt 150 ]; do
		[ "$(field "$1" JobState)" = "$2" ] && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
hostset() { # NODELIST: sorted names, one line
	timeout 10 scontrol show hostnames "$1" | sort | tr '\n' ' '
}

# ---- a running 4-node GPU job ----
j1=$(timeout 10 sbatch --parsable -J show1 -o /dev/null -N 4 --exclusive --gres=gpu:2 --wrap 'sleep 300')
[ -n "$j1" ] && wait_state "$j1" RUNNING || { bad "job $j1 running"; finish; }
nl=$(field "$j1" NodeList)
ok "job $j1 running on $nl"
expect 0 "show job $j1 --json" "$TOPOPLACE" show job "$j1" --json
cp "$tmp/out" "$tmp/j1.json"
sed 's/^/# /' "$tmp/j1.json" | head -40
got=$(jq -r '.hosts[]' "$tmp/j1.json" | sort | tr '\n' ' ')
[ "$got" = "$(hostset "$nl")" ] && ok "hosts = Slurm's NodeList ($got)" ||
	bad "hosts '$got', Slurm: '$(hostset "$nl")'"
jeq "$tmp/j1.json" '.job_id' "$j1" "job id"
jeq "$tmp/j1.json" '.state' RUNNING "state"
jeq "$tmp/j1.json" '(.plan.ring == .hosts) and (.plan.world_size > 0)' true "the job's plan: ring in fabric order"
jeq "$tmp/j1.json" '[.plan.recommend[].basis] | unique | join(",")' model "the job's plan: priced, as the plugin's (PlanPriceMaxHosts)"
# LinkState: the plan priced on it, as the SPANK plugin prices its plans (every cable at half
# its lanes: slower predictions, the same ring); one that does not read: a warning, and the
# plan priced on healthy links
jq '{format: "topoplace-state/1", links: [.links | to_entries[] | {link: .key, health: 0.5}]}' \
	"$dir/fabric.json" >"$dir/links.json"
cp "$dir/topoplace.conf" "$tmp/topoplace.conf.saved"
echo "LinkState=links.json" >>"$dir/topoplace.conf"
expect 0 "show job $j1 --json with LinkState" "$TOPOPLACE" show job "$j1" --json
jq -e -n --slurpfile a "$tmp/j1.json" --slurpfile b "$tmp/out" \
	'$b[0].plan.ring == $a[0].plan.ring and
	 $b[0].plan.predicted.ring[4] > 1.5 * $a[0].plan.predicted.ring[4]' >/dev/null &&
	ok "LinkState: the job's plan priced on its half-width cables" ||
	bad "LinkState: ring $(jq -c .plan.predicted.ring "$tmp/out"), healthy $(jq -c .plan.predicted.ring "$tmp/j1.json")"
rm -f "$dir/links.json"
expect 0 "show job $j1 --json with LinkState missing" "$TOPOPLACE" show job "$j1" --json
jq -e -n --slurpfile a "$tmp/j1.json" --slurpfile b "$tmp/out" \
	'$b[0].plan.predicted == $a[0].plan.predicted' >/dev/null &&
	grep -q "^topoplace: warning: show: LinkState .*links.json.*; plans priced on healthy links$" "$tmp/err" &&
	ok "LinkState missing: a warning, the plan priced on healthy links" ||
	bad "LinkState missing: $(cat "$tmp/err")"
cp "$tmp/topoplace.conf.saved" "$dir/topoplace.conf"
jeq "$tmp/j1.json" '.user' root "user"
# --exclusive gets every GPU of its nodes in 22.05: compare with Slurm's own
# per-node detail ("Nodes=node001 CPU_IDs=0-7 Mem=4000 GRES=gpu:4(IDX:0-3)")
want=$(timeout 10 scontrol -d show job "$j1" | sed -n 's/.* GRES=gpu[^ ]*:\([0-9]*\)(IDX.*/\1/p' | sort -u | tr '\n' ' ')
got=$(jq -r '.gpus[]' "$tmp/j1.json" | sort -u | tr '\n' ' ')
[ -n "$want" ] && [ "$got" = "$want" ] && ok "GPUs per host = Slurm's GRES detail ($got)" ||
	bad "GPUs per host '$got', Slurm's GRES detail '$want'"
jeq "$tmp/j1.json" '.span.hosts' 4 "span: hosts"
jeq "$tmp/j1.json" '.span.groups' 1 "span: one level-1 group"
jeq "$tmp/j1.json" '.span.min_groups' 1 "span: minimum one group"
jeq "$tmp/j1.json" '.policy' "slurm (compatible mode)" "policy"
jeq "$tmp/j1.json" '.source' analysis "analysed (no record)"
jeq "$tmp/j1.json" '.predicted_s > 0 and .ideal_s > 0 and (.predicted_s / .ideal_s) < 1.001' true \
	"predicted = ideal on one leaf"
jeq "$tmp/j1.json" '.reason | test("the minimum")' true "reason says minimal"

expect 0 "show job $j1 (text)" "$TOPOPLACE" show job "$j1"
sed 's/^/# /' "$tmp/out"
grep -q "^job $j1 (root, RUNNING)" "$tmp/out" && grep -q '^  span       4 hosts, .* 1 group (minimum 1)' "$tmp/out" &&
	grep -q '^  why  ' "$tmp/out" && ok "text block" || bad "text block"

# ---- a finished job still shows (MinJobAge=600) ----
j2=$(timeout 10 sbatch --parsable -J show2 -o /dev/null -N 2 --gres=gpu:1 --wrap true)
[ -n "$j2" ] && wait_state "$j2" COMPLETED && ok "job $j2 completed" || bad "job $j2 completed"
expect 0 "show job $j2 --json (finished)" "$TOPOPLACE" show job "$j2" --json
jeq "$tmp/out" '.state' COMPLETED "finished job: state"
jeq "$tmp/out" '.hosts | length' 2 "finished job: 2 hosts"
jeq "$tmp/out" '.span.min_groups' 1 "finished job: minimum one group"
expect 0 "show jobs --json" "$TOPOPLACE" show jobs --json
jeq "$tmp/out" "[.[] | select(.job_id == $j1 or .job_id == $j2)] | length" 2 "show jobs lists both"

# ---- a decision record wins when its hosts are the job's ----
hl=$(jq -c '.hosts' "$tmp/j1.json")
# one topoplace-decision/1 object per line, as the native plugin writes them
cat >"$dir/state/topoplace-decisions.jsonl" <<EOF
{"format":"topoplace-decision/1","job_id": $j1, "hosts": $hl, "span_groups": 1, "min_groups": 1, "min_groups_empty": 1, "predicted_s": 0.5, "ideal_s": 0.25, "policy": "topoplace", "reason": "test record"}
{"format":"topoplace-decision/1","job_id": $j2, "hosts": ["node099"], "span_groups": 3, "min_groups": 3, "predicted_s": 9, "ideal_s": 1, "policy": "topoplace", "reason": "stale record"}
EOF
expect 0 "show job $j1 with a record" "$TOPOPLACE" show job "$j1" --json
jeq "$tmp/out" '.source + " " + .policy + " " + .reason + " " + (.predicted_s|tostring)' \
	"record topoplace test record 0.5" "record preferred"
expect 0 "show job $j2 with a stale record" "$TOPOPLACE" show job "$j2" --json
jeq "$tmp/out" '.source + " " + .policy' "analysis slurm (compatible mode)" "stale record (other hosts) ignored"
printf '{"job_id": \n' >"$dir/state/topoplace-decisions.jsonl"
expect 0 "show job $j1 with a corrupt record file" "$TOPOPLACE" show job "$j1" --json
jeq "$tmp/out" '.source' analysis "corrupt record file: analysed"
rm -f "$dir/state/topoplace-decisions.jsonl"

# ---- errors ----
expect 2 "show job 999999: unknown, exit 2" "$TOPOPLACE" show job 999999
grep -q 'no such job' "$tmp/err" && [ "$(wc -l <"$tmp/err")" -eq 1 ] && ok "one line: $(cat "$tmp/err")" ||
	bad "unknown job message: $(cat "$tmp/err")"
expect 2 "show job: no fabric, exit 2" env SLURM_CONF=$tmp/none/slurm.conf "$TOPOPLACE" show job "$j1"
mkdir -p "$tmp/down"
sed "s/^SlurmctldPort=.*/SlurmctldPort=$((PORT + 1))/" "$dir/slurm.conf" >"$tmp/down/slurm.conf"
cp "$dir/topoplace.conf" "$tmp/down/"
t1=$(date +%s)
expect 1 "controller unreachable: exit 1" env SLURM_CONF=$tmp/down/slurm.conf "$TOPOPLACE" show jobs --timeout 3
dt=$(($(date +%s) - t1))
[ "$dt" -le 6 ] && ok "fails fast ($dt s): $(tail -1 "$tmp/err")" || bad "unreachable controller took $dt s"

# ---- PrivateData=jobs: another user sees only their own jobs ----
# nobody needs to reach the cluster's files and munge socket (not the key);
# the plugins and the CLI it runs are the copies staged in the cluster's
# directory (the build tree may be closed to it)
chmod 711 "$tmp" "$dir/munge"
as_nobody() {
	if command -v runuser >/dev/null 2>&1; then runuser -u nobody -- "$@"
	else setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; fi
}
j3=$(cd / && as_nobody env SLURM_CONF="$SLURM_CONF" timeout 10 sbatch --parsable -J show3 -o /dev/null -N 1 --wrap 'sleep 300' 2>"$tmp/err3")
if [ -z "$j3" ]; then
	bad "sbatch as nobody: $(cat "$tmp/err3")"
else
	wait_state "$j3" RUNNING || bad "job $j3 (nobody) running"
	expect 2 "as nobody: root's job $j1 hidden (exit 2)" as_nobody env SLURM_CONF="$SLURM_CONF" "$dir/bin/topoplace" show job "$j1"
	expect 0 "as nobody: show job $j3 (own)" as_nobody env SLURM_CONF="$SLURM_CONF" "$dir/bin/topoplace" show job "$j3" --json
	jeq "$tmp/out" '.user + " " + (.hosts | length | tostring)' "nobody 1" "as nobody: own job shows"
	expect 0 "as nobody: show jobs" as_nobody env SLURM_CONF="$SLURM_CONF" "$dir/bin/topoplace" show jobs --json
	jeq "$tmp/out" "[.[] | .job_id] | map(tostring) | join(\",\")" "$j3" "as nobody: show jobs lists only its own"
	expect 0 "as root: show jobs" "$TOPOPLACE" show jobs --json
	jeq "$tmp/out" "[.[] | select(.job_id == $j1 or .job_id == $j3)] | length" 2 "as root: both"
fi

timeout 10 scancel "$j1" ${j3:+"$j3"} 2>/dev/null || true
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
