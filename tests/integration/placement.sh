#!/bin/sh
# place / cost / draw / simulate through the CLI: JSON fields the issue
# promises, one-line errors, and the decisions themselves on a fabric whose
# groups do not follow host-name order.
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE

# 4 leaves x 4 hosts x 8 GPUs, 2:1 oversubscribed; host i on leaf i mod 4
$T fabric generate fat-tree --nics-per-host 1 --leaves 4 --spines 2 --hosts-per-leaf 4 --uplinks 1 --interleave -o "$tmp/ft.json" ||
	{ bad "generate"; finish; }

expect 0 "place nodes=4" $T place --fabric "$tmp/ft.json" --request nodes=4,gpus-per-node=8 --json
cp "$tmp/out" "$tmp/p4.json"
jeq "$tmp/p4.json" .policy topoplace "default policy"
jeq "$tmp/p4.json" '.hosts|length' 4 "4 hosts"
jeq "$tmp/p4.json" .span.groups 1 "one leaf group"
jeq "$tmp/p4.json" .span.min_groups 1 "minimum 1"
jq -e '.predicted_s > 0 and .ideal_s > 0 and (.explain|length) > 0' "$tmp/p4.json" >/dev/null &&
	ok "predicted, ideal, explain" || bad "predicted, ideal, explain: $(cat "$tmp/p4.json")"
# the 4 hosts are one leaf: node001, node005, node009, node013
jeq "$tmp/p4.json" '.hosts|join(",")' "node001,node005,node009,node013" "interleaved leaf, ring order"

expect 0 "place slurm-linear" $T place --fabric "$tmp/ft.json" --request nodes=4 --policy slurm-linear --json
jeq "$tmp/out" .span.groups 4 "slurm-linear takes consecutive names across 4 leaves"

expect 0 "place text" $T place --fabric "$tmp/ft.json" --request gpus=4
grep -q '^why' "$tmp/out" && ok "text has why" || bad "text has why"
expect 2 "bad request" $T place --fabric "$tmp/ft.json" --request nodes=x
grep -q "nodes=x" "$tmp/err" && ok "bad request names the token" || bad "bad request: $(cat "$tmp/err")"
expect 2 "unknown policy" $T place --fabric "$tmp/ft.json" --request nodes=1 --policy best
expect 2 "never fits" $T place --fabric "$tmp/ft.json" --request nodes=17
expect 2 "missing fabric" $T place --fabric "$tmp/none.json" --request nodes=1

# a state: one leaf half busy, node002 down
cat >"$tmp/state.json" <<'J'
{"format":"topoplace-state/1","down":["node002"],
 "jobs":[{"id":7,"hosts":{"node001":8,"node005":8}}],"links":[]}
J
expect 0 "place on a state" $T place --fabric "$tmp/ft.json" --state "$tmp/state.json" --request nodes=4,gpus-per-node=8 --json
jq -e '[.hosts[] | select(. == "node001" or . == "node005" or . == "node002")] | length == 0' "$tmp/out" >/dev/null &&
	ok "busy and down hosts avoided" || bad "busy/down hosts used: $(cat "$tmp/out")"
jeq "$tmp/out" .span.groups 1 "still one group"
echo '{"format":"topoplace-state/1","down":["nosuch"],"jobs":[],"links":[]}' >"$tmp/bad-state.json"
expect 2 "state with unknown host" $T place --fabric "$tmp/ft.json" --state "$tmp/bad-state.json" --request nodes=1
grep -q "nosuch" "$tmp/err" && ok "state error names the host" || bad "state error: $(cat "$tmp/err")"

# cost: the closed form on one leaf, and a crossing ring is slower
expect 0 "cost one leaf" $T cost --fabric "$tmp/ft.json" --hosts node001,node005,node009,node013 --bytes 1G --algo ring --json
cp "$tmp/out" "$tmp/c1.json"
expect 0 "cost across leaves" $T cost --fabric "$tmp/ft.json" --hosts "node[001-004]" --bytes 1G --algo ring --json
cp "$tmp/out" "$tmp/c2.json"
jq -e --slurpfile a "$tmp/c1.json" '.seconds > $a[0].seconds' "$tmp/c2.json" >/dev/null &&
	ok "crossing the 2:1 up-links costs more" || bad "cost across leaves not slower"
jq -e '.bottleneck_gbps > 0 and (.bottleneck_link|type=="string")' "$tmp/c2.json" >/dev/null &&
	ok "bottleneck reported" || bad "bottleneck: $(cat "$tmp/c2.json")"
expect 0 "cost hierarchical" $T cost --fabric "$tmp/ft.json" --hosts "node[001-008]" --bytes 256M --algo hierarchical
expect 0 "cost tree" $T cost --fabric "$tmp/ft.json" --hosts "node[001-008]" --bytes 256M --algo tree
expect 2 "cost unknown host" $T cost --fabric "$tmp/ft.json" --hosts node999 --bytes 1G
# a host with one of its 8 cables at half width: evenly over the NICs it
# halves a ring's pace, by rate (NCCL's channels) it costs a sixteenth
expect 0 "generate 8-NIC degraded tree" $T fabric generate fat-tree --leaves 8 --hosts-per-leaf 8 \
	--gpus-per-host 8 --nics-per-host 8 --spines 4 --uplinks 8 --degrade 0.05 --degrade-seed 1 -o "$tmp/nic8.json"
expect 0 "fabric hosts" $T fabric hosts "$tmp/nic8.json"
half=$(awk '/8 cables, a ring 1600 of 3200/ {print $1; exit}' "$tmp/out")
clean=$(awk 'NR > 1 && !/weakly/ && $1 ~ /^node/ && $1 != "node001" {print $1; exit}' "$tmp/out")
grep -q '^node001 .*weakly' "$tmp/out" && clean= # the pairs below start at node001
pair_s() { # $1: hosts, then cost's extra options: the ring's bandwidth term
	h=$1; shift
	$T cost --fabric "$tmp/nic8.json" --hosts "$h" --bytes 1G --json "$@" | jq .bandwidth_s
}
if [ -n "$half" ] && [ -n "$clean" ]; then
	clean_s=$(pair_s node001,"$clean"); even_s=$(pair_s node001,"$half"); rate_s=$(pair_s node001,"$half" --nics-by-rate)
	awk -v c="$clean_s" -v e="$even_s" -v r="$rate_s" 'BEGIN { exit !(e / c > 1.9 && e / c < 2.1 && r / c > 1.05 && r / c < 1.08) }' &&
		ok "half-width cable: ring x$(awk -v c="$clean_s" -v e="$even_s" 'BEGIN{printf "%.3f", e/c}') evenly, x$(awk -v c="$clean_s" -v r="$rate_s" 'BEGIN{printf "%.3f", r/c}') by rate" ||
		bad "half-width cable: clean $clean_s, even $even_s, by rate $rate_s"
else
	bad "no half-width and clean host in: $(head -c 300 "$tmp/out")"
fi

# show: the plan the SPANK plugin gives a step of a job, as slurmctld would
# describe the job (tp_slurm_shim.so answers show's libslurm calls): a task
# per GPU the job holds, each host's data split by NIC rate as
# topoplace.conf's NicsByRate says, priced the same way
shim=${TP_BUILDDIR:-.}/tests/integration/.libs/tp_slurm_shim.so
if [ -f "$shim" ] && [ -n "$half" ]; then
	mkdir "$tmp/etc"
	echo "ClusterName=shim" >"$tmp/etc/slurm.conf"
	cp "$tmp/nic8.json" "$tmp/etc/fabric.json"
	show() { # TRES NicsByRate, then show's options: the job as JSON in $tmp/out
		printf 'FabricFile=fabric.json\nNicsByRate=%s\n' "$2" >"$tmp/etc/topoplace.conf"
		tres=$1
		shift 2
		SLURM_CONF=$tmp/etc/slurm.conf TP_SHIM_JOB_NODES="node001,$half" TP_SHIM_JOB_TRES="$tres" \
			LD_PRELOAD=$shim $T show job 42 --json "$@" >"$tmp/out" 2>"$tmp/err"
	}
	show gres/gpu=8,node=2 no
	jq -e '(.gpus == [4, 4]) and (.plan.world_size == 8) and ([.plan.hosts[].local_ranks | length] == [4, 4])
		and (.plan.rank_weights == null)' "$tmp/out" >/dev/null &&
		ok "show: the plan runs a task per GPU the job holds (4 of 8 a host)" ||
		bad "show plan, 4 GPUs a host: $(jq -c '{gpus, plan: .plan.world_size}' "$tmp/out") $(cat "$tmp/err")"
	show gres/gpu=16,node=2 yes
	jq -e '(.plan.world_size == 16) and (.plan.rank_weights | min == 512 and max == 1024)' "$tmp/out" >/dev/null &&
		ok "show: NicsByRate=yes weighs the plan's ranks by NIC rate" ||
		bad "show plan with NicsByRate: $(jq -c '.plan.rank_weights' "$tmp/out") $(cat "$tmp/err")"
	cp "$tmp/out" "$tmp/show.json"
	h=$(jq -r '.hosts | join(",")' "$tmp/show.json")
	for a in ring hierarchical; do
		$T cost --fabric "$tmp/nic8.json" --hosts "$h" --bytes 1G --algo $a --nics-by-rate --json >"$tmp/c$a.json"
	done
	jq -e -n --slurpfile s "$tmp/show.json" --slurpfile r "$tmp/cring.json" --slurpfile h "$tmp/chierarchical.json" \
		'[$r[0].seconds, $h[0].seconds] | min | . == $s[0].predicted_s' >/dev/null &&
		ok "show: predicted as cost --nics-by-rate prices those hosts" ||
		bad "show predicted $(jq .predicted_s "$tmp/show.json"), cost $(jq .seconds "$tmp/cring.json") / $(jq .seconds "$tmp/chierarchical.json")"
	# --fabric replaces the fabric alone: NicsByRate still from the conf
	show gres/gpu=16,node=2 yes --fabric "$tmp/nic8.json"
	jq -e '.plan.rank_weights | min == 512' "$tmp/out" >/dev/null &&
		ok "show --fabric: NicsByRate still from topoplace.conf" || bad "show --fabric: $(jq -c .plan "$tmp/out" | head -c 300)"
else
	echo "# topoplace show built without libslurm (or no half-width host): its plan not checked"
fi

# draw
expect 0 "draw" $T draw --fabric "$tmp/ft.json" --state "$tmp/state.json" -o "$tmp/f.svg"
grep -q '<svg' "$tmp/f.svg" && grep -q 'node005' "$tmp/f.svg" && ok "svg drawn" || bad "svg drawn"

# simulate: small run, all policies, JSON and SVG
expect 0 "simulate small" $T simulate --fabric "$tmp/ft.json" --synthetic llm --jobs 150 --seed 3 --json --svg "$tmp/sim.svg"
cp "$tmp/out" "$tmp/sim.json"
for p in topoplace slurm-tree slurm-linear first-fit random; do
	jq -e --arg p "$p" '.policies[$p] | (.gpu_util > 0) and (.mean_wait_s >= 0) and (.mean_jct_s > 0)
		and (.comm_slowdown_mean >= 1) and (.min_span_fraction >= 0) and (.cross_spine_bytes >= 0)' \
		"$tmp/sim.json" >/dev/null && ok "simulate metrics for $p" || bad "simulate metrics for $p"
done
grep -q '<polyline' "$tmp/sim.svg" && ok "simulate svg" || bad "simulate svg"
jq -e '(.baseline == "slurm-tree") and (.seeds | length == 24) and (.seeds[0] == 3) and (.price_budget == 96)
	and (.policies["slurm-tree"].verdict == "baseline")
	and (.policies.topoplace.jct_ratio_mean > 0) and (.policies.topoplace.jct_ratio_se >= 0)
	and (.policies.topoplace.verdict | IN("better", "worse", "tie"))
	and (.policies.topoplace.by_size | length == 4)
	and (.policies.topoplace.per_seed | length == 24)
	and (.policies.topoplace.mean.mean_jct_s > 0)' "$tmp/sim.json" >/dev/null &&
	ok "simulate: 24 seeds, baseline, ratio +- se, by size" || bad "simulate seeds JSON"
# the mean fragmentation over seeds against an independent figure (per_seed
# has none): the mean of the same seeds simulated one at a time; the old
# name, fragmentation_time_mean, gives the same figure
for s in 3 4 5; do
	$T simulate --fabric "$tmp/ft.json" --synthetic llm --jobs 150 --seed $s --seeds 1 \
		--policies topoplace,slurm-tree --json | jq '.policies.topoplace.fragmentation_mean'
done >"$tmp/frag1"
fmean=$(awk '$1 > 0 { s += $1; n++ } END { if (n == 3) printf "%.17g", s / n }' "$tmp/frag1")
expect 0 "simulate 3 seeds" $T simulate --fabric "$tmp/ft.json" --synthetic llm --jobs 150 --seed 3 \
	--seeds 3 --policies topoplace,slurm-tree --json
jq -e --argjson w "${fmean:-null}" '.policies.topoplace.mean | ($w != null)
	and ((.fragmentation_mean - $w) | fabs < 1e-9 * $w)
	and (.fragmentation_time_mean == .fragmentation_mean)' "$tmp/out" >/dev/null &&
	ok "fragmentation_mean over 3 seeds = the mean of the 3 runs alone ($fmean)" ||
	bad "fragmentation_mean over 3 seeds: $(jq -c .policies.topoplace.mean "$tmp/out"), runs alone: $(tr '\n' ' ' <"$tmp/frag1")"
# one trace: the ratio is the trace's own, its error bar the jackknife's over
# 10 batches of jobs (200 jobs or more), else no error bar and no verdict
expect 0 "simulate one trace of 300 jobs" $T simulate --fabric "$tmp/ft.json" --jobs 300 --seeds 1 \
	--policies topoplace,slurm-tree,random --json
jq -e '(.jct_ratio_over == "batches")
	and (.policies.random.jct_ratio_se > 0)
	and ((.policies.random.jct_ratio_mean - .policies.random.mean_jct_s / .policies["slurm-tree"].mean_jct_s)
		| fabs < 1e-9)
	and (.policies.random.verdict | IN("better", "worse", "tie"))' "$tmp/out" >/dev/null &&
	ok "one trace: its own ratio +- the jackknife's error over 10 batches" ||
	bad "one trace: $(jq -c '{jct_ratio_over, r: .policies.random}' "$tmp/out" | cut -c1-300)"
expect 0 "simulate one trace of 150 jobs" $T simulate --fabric "$tmp/ft.json" --jobs 150 --seeds 1 \
	--policies topoplace,slurm-tree --json
jq -e '(.jct_ratio_over == "seeds") and (.policies.topoplace.jct_ratio_se == null)
	and (.policies.topoplace.verdict == "none")' "$tmp/out" >/dev/null &&
	ok "one trace under 200 jobs: no error bar, no verdict" || bad "150 jobs: $(jq -c .policies.topoplace "$tmp/out" | cut -c1-300)"
$T simulate --fabric "$tmp/ft.json" --jobs 150 --seeds 1 --policies topoplace,slurm-tree 2>&1 |
	grep -q '^topoplace .* [0-9.]* (no error bar)$' && ok "the table says so" ||
	bad "table: $($T simulate --fabric "$tmp/ft.json" --jobs 150 --seeds 1 --policies topoplace,slurm-tree 2>&1)"
expect 0 "simulate --seeds 2 --baseline first-fit" $T simulate --fabric "$tmp/ft.json" --synthetic llm --jobs 100 --seeds 2 --baseline first-fit --policies topoplace --json
jq -e '(.baseline == "first-fit") and (.seeds == [1, 2]) and (.policies | has("first-fit"))' "$tmp/out" >/dev/null &&
	ok "simulate: the baseline joins the policies" || bad "simulate --baseline: $(head -c 300 "$tmp/out")"
expect 0 "simulate --price-budget 8" $T simulate --fabric "$tmp/ft.json" --synthetic llm --jobs 100 --seeds 1 --policies topoplace --price-budget 8 --json
jq -e '(.price_budget == 8) and (.policies.topoplace.mean_jct_s > 0) and (.nics_by_rate == false)' "$tmp/out" >/dev/null &&
	ok "simulate: the price budget as asked" || bad "simulate --price-budget: $(head -c 300 "$tmp/out")"
expect 0 "simulate --nics-by-rate" $T simulate --fabric "$tmp/ft.json" --synthetic llm --jobs 100 --seeds 1 --policies topoplace --nics-by-rate --json
jq -e '(.nics_by_rate == true) and (.policies.topoplace.mean_jct_s > 0)' "$tmp/out" >/dev/null &&
	ok "simulate: NICs by rate as asked" || bad "simulate --nics-by-rate: $(head -c 300 "$tmp/out")"
# the environment's collective library, as cost and place price it
for shm in 1 0; do
	TOPOPLACE_COLL_SHM=$shm $T simulate --fabric "$tmp/ft.json" --synthetic llm --jobs 50 --seeds 1 \
		--policies topoplace --json >"$tmp/shm$shm.json"
done
jq -e '.host_segment == true' "$tmp/shm1.json" >/dev/null && jq -e '.host_segment == false' "$tmp/shm0.json" >/dev/null &&
	ok "simulate: TOPOPLACE_COLL_SHM=0 prices the host phases as rings" ||
	bad "simulate host_segment: $(jq .host_segment "$tmp/shm1.json") / $(jq .host_segment "$tmp/shm0.json")"
expect 2 "simulate --price-budget out of range" $T simulate --fabric "$tmp/ft.json" --price-budget 97
grep -q -- "--price-budget: expected an integer 0..96, got '97'" "$tmp/err" && ok "bad price budget named" ||
	bad "bad price budget: $(cat "$tmp/err")"
expect 2 "simulate unknown baseline" $T simulate --fabric "$tmp/ft.json" --baseline nope
grep -q "unknown baseline 'nope'" "$tmp/err" && ok "unknown baseline named" || bad "unknown baseline: $(cat "$tmp/err")"
jeq "$tmp/sim.json" '.baseline' slurm-tree "fat tree: baseline slurm-tree"
# NVLink-domain fabrics: Slurm's topology/block is the baseline and in the list
$T fabric generate nvl72 --racks 2 --hosts-per-rack 4 -o "$tmp/nvl.json" >/dev/null
expect 0 "simulate nvl72" $T simulate --fabric "$tmp/nvl.json" --jobs 60 --seeds 1 --json
jeq "$tmp/out" '.baseline' slurm-block "nvl72: baseline slurm-block"
jeq "$tmp/out" '.policies | has("slurm-block") and has("slurm-tree")' true "nvl72: both Slurm models run"
expect 0 "simulate nvl72, baseline given" $T simulate --fabric "$tmp/nvl.json" --jobs 60 --seeds 1 \
	--policies topoplace --baseline slurm-tree --json
jeq "$tmp/out" '.baseline' slurm-tree "nvl72: --baseline wins over the default"
printf 'submit_s,gpus,run_s\n0,8,100\n10,16,50\n20,1,10\n' >"$tmp/trace.csv"
expect 0 "simulate CSV trace" $T simulate --fabric "$tmp/ft.json" --trace "$tmp/trace.csv" --policies topoplace,slurm-tree --json
jeq "$tmp/out" '.policies.topoplace.jobs' 3 "CSV jobs run"
# a trace file replayed over several seeds (they change seeded policies
# only): error bars over batches of its jobs, as with one seed, not a
# spread of zero over identical seeds ("tie" for any gap)
awk 'BEGIN { print "submit_s,gpus,run_s,comm_frac"
	for (i = 0; i < 240; i++) printf "%d,%d,%d,0.3\n", i * 40, 2 ^ (i % 6), 300 + (i * 37) % 900 }' >"$tmp/t240.csv"
# job 8 asks for 64 GPUs: the whole fabric's half, more than a block of
# slurm-block's (a leaf) and its aggregation allow
sed '9s/^\([0-9]*\),[0-9]*,/\1,64,/' "$tmp/t240.csv" >"$tmp/t240b.csv"
expect 0 "simulate a trace, 3 seeds" $T simulate --fabric "$tmp/ft.json" --trace "$tmp/t240.csv" --seeds 3 \
	--policies topoplace,slurm-tree --json
mv "$tmp/out" "$tmp/t3.json"
expect 0 "simulate a trace, 1 seed" $T simulate --fabric "$tmp/ft.json" --trace "$tmp/t240.csv" --seeds 1 \
	--policies topoplace,slurm-tree --json
jq -e --slurpfile one "$tmp/out" '.jct_ratio_over == "batches" and .policies.topoplace.jct_ratio_se > 0 and
	.policies.topoplace.verdict == "better" and $one[0].jct_ratio_over == "batches"' "$tmp/t3.json" >/dev/null &&
	ok "a trace over 3 seeds: the jackknife's error bar over its jobs" ||
	bad "a trace over 3 seeds: $(jq -c '[.jct_ratio_over, .policies.topoplace.jct_ratio_mean, .policies.topoplace.jct_ratio_se, .policies.topoplace.verdict]' "$tmp/t3.json")"
# a policy that can never place jobs the baseline places: no verdict
expect 0 "simulate, a policy dropping jobs" $T simulate --fabric "$tmp/ft.json" --trace "$tmp/t240b.csv" \
	--policies slurm-block,slurm-tree --json
jeq "$tmp/out" '.policies["slurm-block"].verdict' "jobs differ" "a policy dropping jobs gets no verdict"
# slowdowns over the seeds that have multi-node jobs only (none: null)
expect 0 "simulate, seeds without multi-node jobs" $T simulate --fabric "$tmp/ft.json" --synthetic philly \
	--jobs 30 --seeds 6 --policies random,slurm-tree --json
jq -e '.policies.random | ([.per_seed[].comm_slowdown_mean | select(. != null)]) as $s |
	($s | length) < 6 and (($s | add / length) - .mean.comm_slowdown_mean | fabs) < 1e-9' "$tmp/out" >/dev/null &&
	ok "slowdown: the mean over the seeds with multi-node jobs" ||
	bad "slowdown over seeds: $(jq -c '[.policies.random.per_seed[].comm_slowdown_mean, .policies.random.mean.comm_slowdown_mean]' "$tmp/out")"
# one single-host job: the first seed's multi-node figures are null as
# in mean and per_seed (they read the simulator's placeholder, 1)
printf 'submit_s,gpus,run_s\n0,1,100\n' >"$tmp/one.csv"
expect 0 "simulate one single-host job" $T simulate --fabric "$tmp/ft.json" --trace "$tmp/one.csv" \
	--policies first-fit --baseline first-fit --json
jq -e '.policies["first-fit"] | [.comm_slowdown_mean, .comm_slowdown_p95, .min_span_fraction,
	.min_span_empty_fraction, .mean.comm_slowdown_mean] | all(. == null)' "$tmp/out" >/dev/null &&
	ok "no multi-node job: its figures null everywhere" ||
	bad "no multi-node job: $(jq -c '.policies["first-fit"] | [.comm_slowdown_mean, .mean.comm_slowdown_mean]' "$tmp/out")"
printf 'submit_s,gpus,run_s\n0,eight,100\n' >"$tmp/bad.csv"
expect 2 "bad CSV" $T simulate --fabric "$tmp/ft.json" --trace "$tmp/bad.csv"
grep -q "bad.csv:2: gpus" "$tmp/err" && ok "CSV error names file:line" || bad "CSV error: $(cat "$tmp/err")"
finish
