#!/bin/sh
# Slurm's own records of the jobs that ran, replayed: a real Slurm 22.05
# mini-cluster with accounting (contrib/slurm-cluster.sh --slurmdbd:
# MariaDB and slurmdbd, GPUs tracked as TRES) and a job completion log
# (JobCompType=jobcomp/filetxt) runs a 2-node job with 2 GPUs a node, a
# 1-GPU job, a 3-node job asking for 6 GPUs in all, a job without GPUs and
# a job cancelled before it began, and a 1-GPU job submitted held and
# released seconds later. Then, for `sacct -a -P` (its steps included)
# and for the completion log alike, `topoplace trace` must find the four
# GPU jobs with their shapes and run times (each sleeps a known time),
# the held one arriving when Slurm made it eligible, and count the other
# two (and the steps) as left out, its CSV must
# read back as the same jobs, and `topoplace simulate --trace` must replay
# the file on the cluster's fabric. A second cluster without slurmdbd,
# where Slurm tracks no GPU, checks the hint and --assume-gpus. Runs beside
# other clusters:
# TP_ACCT_NET / TP_ACCT_PORT (10.209.0 / 6971; slurmdbd on port + 1000).
# Needs root, the Slurm packages with slurmdbd and MariaDB
# (contrib/install-slurm.sh); exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 22 scancel sacct sacctmgr slurmdbd mariadbd mariadb-install-db
NET=${TP_ACCT_NET:-10.209.0}
PORT=${TP_ACCT_PORT:-6971}
dir=$tmp/cluster
t0=$(date +%s)
cluster_trap 'slurm*.log' 'jobcomp\|fatal\|error' 20

jobcomp_cluster --slurmdbd
ok "cluster with slurmdbd up in $(($(date +%s) - t0)) s"

# NAME SLEEP SBATCH-ARGS...: the job's id into $tmp/jobs
submit() {
	n=$1 s=$2
	shift 2
	id=$(sbatch_named "$n" -o /dev/null "$@" --wrap "sleep $s") || { bad "sbatch $n"; return; }
	echo "$n $id $s" >>"$tmp/jobs"
}
submit later 1 -N 2 --gpus-per-node=4 --begin=now+3600
submit two 3 -N 2 --gpus-per-node=2
submit one 2 -N 1 --gres=gpu:1
submit three 2 -N 3 --gpus=6
submit cpu 1 -N 1
submit held 2 -N 1 --gres=gpu:1 -H
slurm_cli scancel "$(job_of later)" || bad "scancel"
sleep 4
slurm_cli scontrol release "$(job_of held)" || bad "scontrol release"
for n in two one three cpu held; do
	[ -n "$(job_of "$n")" ] && wait_state -t 60 "$(job_of "$n")" COMPLETED || bad "job $n completed"
done
poll 20 lines_at_least "$jc" JobId= 6 || bad "6 records in $jc: $(wc -l <"$jc" 2>/dev/null)"
sed 's/^/# jobcomp: /' "$jc" | cut -c1-160
# slurmctld sends a job's end to slurmdbd on its own time: wait for it
sacct_done() {
	# (-E past the cancelled job's begin time, or sacct leaves it out)
	timeout 20 sacct -a -P -S now-1hour -E now+2hours \
		--format=JobID,Submit,Eligible,Start,End,NNodes,NodeList,AllocTRES,State >"$tmp/sacct.txt" 2>"$tmp/sacct.err" &&
		[ "$(grep -c '|COMPLETED$' "$tmp/sacct.txt")" -ge 10 ] && # 5 jobs, 5 batch steps
		grep -q '|CANCELLED' "$tmp/sacct.txt"
}
poll 30 sacct_done || bad "sacct: $(cat "$tmp/sacct.err" "$tmp/sacct.txt")"
sed 's/^/# sacct: /' "$tmp/sacct.txt"

# FILE FORMAT STEPS: what topoplace trace reads in FILE
check_trace() {
	f=$1 fmt=$2 steps=$3
	expect 0 "topoplace trace ($fmt) --json" "$TOPOPLACE" trace "$f" --json
	cp "$tmp/out" "$tmp/trace.json"
	jeq "$tmp/trace.json" '.source_format' "$fmt" "$fmt: read as such"
	jeq "$tmp/trace.json" '.jobs' 4 "$fmt: four jobs ran on GPUs"
	jeq "$tmp/trace.json" '.left_out.no_gpu' 1 "$fmt: the job without GPUs left out"
	jeq "$tmp/trace.json" '.left_out.not_run' 1 "$fmt: the cancelled job left out"
	jeq "$tmp/trace.json" '.left_out.steps' "$steps" "$fmt: steps left out"
	shapes=$(jq -r '.trace[] | "\(.nodes)x\(.gpus_per_node)"' "$tmp/trace.json" | sorted_line)
	[ "$shapes" = "1x1 1x1 2x2 3x2" ] && ok "$fmt: shapes $shapes (nodes x GPUs a node)" ||
		bad "$fmt: shapes '$shapes', want '1x1 1x1 2x2 3x2'"
	# the held job arrives when released: after the others' submits, by
	# about the 4 s it was held
	jeq "$tmp/trace.json" '.eligible_later' 1 "$fmt: the held job arrives when eligible"
	jq -e '[.trace[].submit_s] | max >= 3' "$tmp/trace.json" >/dev/null &&
		ok "$fmt: the held job's arrival $(jq -c '[.trace[].submit_s] | max' "$tmp/trace.json") s" ||
		bad "$fmt: arrivals $(jq -c '[.trace[].submit_s]' "$tmp/trace.json") (held 4 s)"
	# a job's run time: its sleep, plus what starting it takes here
	jq -r '.trace[] | "\(.nodes) \(.run_s)"' "$tmp/trace.json" | while read -r nodes run; do
		case $nodes in 2) s=3 ;; *) s=2 ;; esac
		[ "$run" -ge "$s" ] && [ "$run" -le $((s + 15)) ] &&
			echo "ok - $fmt: the $nodes-node job ran $run s (slept $s)" ||
			echo "FAIL - $fmt: the $nodes-node job ran $run s, slept $s"
	done >"$tmp/runs"
	cat "$tmp/runs"
	failures=$((failures + $(grep -c '^FAIL' "$tmp/runs")))
	jq -e '[.trace[].submit_s] | (.[0] == 0) and (. == sort) and (.[-1] < 60)' "$tmp/trace.json" >/dev/null &&
		ok "$fmt: submit times from the first job's, in order" ||
		bad "$fmt: submit times $(jq -c '[.trace[].submit_s]' "$tmp/trace.json")"
	"$TOPOPLACE" trace "$f" -o "$tmp/trace.csv" && "$TOPOPLACE" trace "$tmp/trace.csv" --json >"$tmp/back.json" &&
		[ "$(jq -c '[.trace[] | del(.line)]' "$tmp/back.json")" = "$(jq -c '[.trace[] | del(.line)]' "$tmp/trace.json")" ] &&
		ok "$fmt: its CSV reads back as the same jobs" || bad "$fmt: CSV round trip: $(head -3 "$tmp/trace.csv")"
	expect 0 "$fmt: simulate --trace" "$TOPOPLACE" simulate --trace "$f" --fabric "$dir/fabric.json" \
		--policies topoplace,slurm-tree
	# the job steps as trace counts them, said when there are any
	case $steps in
	0) said_steps="" ;;
	1) said_steps=", 1 job step" ;;
	*) said_steps=", $steps job steps" ;;
	esac
	grep -qF "trace $f: 4 jobs from $fmt (left out 1 without GPUs, 1 that never ran$said_steps); 1 arriving when eligible, after submit" "$tmp/out" &&
		ok "$fmt: simulate says what it read" || bad "$fmt: simulate: $(head -3 "$tmp/out")"
	expect 0 "$fmt: simulate --deflate-runs" "$TOPOPLACE" simulate --trace "$f" --fabric "$dir/fabric.json" \
		--policies topoplace,slurm-tree --deflate-runs
	cp "$tmp/out" "$tmp/deflate.out"
	# what Slurm's placements cost: the two multi-node jobs on the hosts
	# Slurm recorded, the 2-node one alone as topoplace cost prices those
	# hosts, and no faster with the other job's traffic
	expect 0 "$fmt: trace --price" "$TOPOPLACE" trace "$f" --price --fabric "$dir/fabric.json" --json
	cp "$tmp/out" "$tmp/price.json"
	jeq "$tmp/price.json" '[.priced, .not_priced] | @csv' '2,0' "$fmt: both multi-node jobs priced"
	# --deflate-runs changed the run times of the jobs whose hosts cost
	# them more than the ideal (at their start), and only those
	nd=$(jq '[.jobs[] | select(.predicted_s != .ideal_s)] | length' "$tmp/price.json")
	want="; $nd run times deflated by what their hosts cost them"
	[ "$nd" = 1 ] && want="; 1 run time deflated by what its hosts cost it"
	grep -q "$want" "$tmp/deflate.out" &&
		ok "$fmt: the $nd multi-node jobs slower than ideal deflated" ||
		bad "$fmt: deflate ($nd slower than ideal): $(head -3 "$tmp/deflate.out")"
	nl=$(field "$(job_of two)" NodeList)
	jeq "$tmp/price.json" '[.jobs[] | select(.hosts == 2) | .nodes][0]' "$nl" "$fmt: the 2-node job's hosts are Slurm's"
	algo=$(jq -r '.jobs[] | select(.hosts == 2) | .algo' "$tmp/price.json")
	"$TOPOPLACE" cost --fabric "$dir/fabric.json" --hosts "$nl" --algo "$algo" --gpus-per-host 2 --bytes 1G \
		--json >"$tmp/cost.json" 2>"$tmp/cost.err" || bad "cost --hosts $nl: $(cat "$tmp/cost.err")"
	jq -e --slurpfile c "$tmp/cost.json" '[.jobs[] | select(.hosts == 2)][0] |
		((.alone_s - $c[0].seconds) | fabs) < 1e-9 * $c[0].seconds and .ideal_s > 0 and .gpus == 4
		and .predicted_s >= .alone_s * (1 - 1e-9)' \
		"$tmp/price.json" >/dev/null && ok "$fmt: priced as topoplace cost prices $nl ($algo)" ||
		bad "$fmt: price $(jq -c '.jobs' "$tmp/price.json") vs cost $(jq -c .seconds "$tmp/cost.json")"
	# topoplace's pick from the hosts free at each start: the two jobs
	# started together, so each found the other's hosts free or taken
	# as the start order says; both got a pick, no slower than Slurm's
	# here (an idle 2-leaf fabric)
	jq -e '.policy == "topoplace" and .pick.jobs == 2 and ([.jobs[] | .pick.predicted_s > 0] | all)
		and ([.jobs[] | .pick.groups >= 1] | all)' "$tmp/price.json" >/dev/null &&
		ok "$fmt: topoplace's picks beside Slurm's: $(jq -c '[.jobs[] | {nodes, s: .predicted_s, tp: .pick.predicted_s}]' "$tmp/price.json")" ||
		bad "$fmt: topoplace picks: $(jq -c '[.pick, [.jobs[].pick]]' "$tmp/price.json")"
}
check_trace "$tmp/sacct.txt" sacct 5
check_trace "$jc" jobcomp 0

# Without slurmdbd Slurm cannot track GPUs as TRES: the completion log
# names none, trace says how to get them, and --assume-gpus all takes
# every job to hold its hosts whole.
stop_cluster
dir=$tmp/cluster2
jobcomp_cluster
: >"$tmp/jobs"
submit gpu2 2 -N 2 --gpus-per-node=2
submit cpu1 1 -N 1
for n in gpu2 cpu1; do
	[ -n "$(job_of "$n")" ] && wait_state -t 60 "$(job_of "$n")" COMPLETED || bad "job $n completed"
done
poll 20 lines_at_least "$jc" JobId= 2 || bad "2 records in $jc"
grep -q 'gres/gpu' "$jc" && bad "GPUs tracked without slurmdbd: $(cat "$jc")" ||
	ok "without slurmdbd the log names no GPU"
expect 2 "trace: no GPU tracked" "$TOPOPLACE" trace "$jc"
grep -q "AccountingStorageTRES=gres/gpu in slurm.conf (or: topoplace trace --assume-gpus)" "$tmp/err" &&
	ok "trace says how to track GPUs" || bad "trace: $(cat "$tmp/err")"
expect 0 "trace --assume-gpus all" "$TOPOPLACE" trace "$jc" --assume-gpus all --json
jq -e '(.jobs == 2) and (.assumed == 2) and ([.trace[] | "\(.nodes)x\(.gpus_per_node)"] | sort == ["1x0", "2x0"])' \
	"$tmp/out" >/dev/null && ok "--assume-gpus all: both jobs on whole hosts" || bad "--assume-gpus all: $(cat "$tmp/out")"

echo "# total $(($(date +%s) - t0)) s before teardown"
finish
