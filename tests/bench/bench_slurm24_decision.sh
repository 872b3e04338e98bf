#!/bin/sh
# Per-job decision time inside slurmctld 24.11: topology/topoplace's engine
# against Slurm's own topology/tree selection, on the same switch table and
# the same job sequence, in the same controller build (issue 4's goal: the
# engine at most 2x tree).
#
# The mini-cluster (contrib/slurm-cluster.sh, private 24.11, 8 nodes with 4
# fake GPUs, topology/topoplace from the build tree) is started twice with
# SlurmctldDebug=debug: once with Selection=engine, once with
# Selection=tree (topoplace.conf(5)). Each run submits the same sequence of
# JOBS jobs (1-8 nodes, --exclusive whole-node GPU jobs and shared GPU jobs,
# a few seconds each, submitted 0.25 s apart), waits for them to finish and
# reads the plugin's debug lines from slurmctld.log:
#   topology/topoplace: JobId=N K nodes in X ms (engine Y ms; thread
#     cpu C ms, switches V+I; confirm A, cores B, state S, placement P,
#     commit M ms): ...
#   topology/topoplace: JobId=N K nodes in X ms (tree; thread cpu C ms,
#     switches V+I; confirm A, tree T ms): ...
# X is the same span in both: the whole selection hook, from its entry to
# the end of Slurm's commit of cores and GPUs; C is the selecting thread's
# CPU time over that span (CLOCK_THREAD_CPUTIME_ID) and V+I its voluntary
# and involuntary context switches (getrusage RUSAGE_THREAD): on a shared
# machine X counts the time the thread waited for a CPU, C does not, so
# the CPU rows tell the work from the preemption (both clocks are read
# outside the wall span: a thread CPU clock read is a system call of
# several us on a VM). Y is the engine's placement alone on the wall
# clock; ", memo" after it marks an answer the selection's memo gave (the
# same job, free state and links as a decision before). Every such line is one decision (slurmctld evaluates
# a job several times: submit, scheduling passes, backfill); the figures
# are over all of them, and over the first decision of each job.
# Prints p50/p99/mean per mode on the wall clock and on the thread's CPU
# clock, the ratios engine/tree of both, the engine's mean time split,
# the context switches, and one JSON line (engine/tree: wall n, p50_ms,
# p99_ms, mean_ms; cpu_p50_ms, cpu_p99_ms, cpu_mean_ms, switches_*;
# engine: memo_answers, split_mean_ms; ratio (wall) and cpu_ratio;
# placement_cpu_p99_ms and placement_cpu_mean_ms are null: the engine no
# longer reads the CPU clock of its own part).
# The modes alternate for TP_BENCH_ROUNDS rounds (engine, tree, engine,
# tree, ...) and the figures pool the rounds, so a slow spell of the
# machine does not land on one mode only.
#   TP_BENCH_JOBS (40), TP_BENCH_ROUNDS (2), TP_BENCH_NET (10.204.0),
#   TP_BENCH_PORT (7217), TP_BENCH_CONF (topoplace.conf lines added in
#   both modes, e.g. "PriceBudget=0" or "LinkState=/path"),
#   SLURM24_PREFIX (/opt/topoplace/slurm-24.11), TP_BENCH_DIR (a temp dir),
#   TP_BENCH_DEBUG (debug; debug2 also checks every memo answer against
#   the engine and logs "memo check" lines, counted here; the figures
#   then include the check), TP_BENCH_LOGS (a directory: slurmctld.log of
#   each run kept there as MODE.ROUND.log). TOPOPLACE_SELECTION_MEMO=0
#   reaches slurmctld and turns the selection's memo off.
# Exit 77 when root, the 24.11 build or the native plugin is missing; 1 when
# a cluster does not start or a mode logs no decision; 0 otherwise (the
# figure is reported, not judged: the machine is shared).
srcdir=${TP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TP_BUILDDIR:-$srcdir/build}
TOPOPLACE=${TOPOPLACE:-$builddir/cli/topoplace}
export TOPOPLACE
. "$srcdir/tests/integration/lib.sh"

need_slurm 24 awk
need_plugins topology_topoplace
NET=${TP_BENCH_NET:-10.204.0}
PORT=${TP_BENCH_PORT:-7217}
JOBS=${TP_BENCH_JOBS:-40}
ROUNDS=${TP_BENCH_ROUNDS:-2}
dir=${TP_BENCH_DIR:-$tmp/cluster}

trap 'stop_cluster; rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

echo "SlurmctldDebug=${TP_BENCH_DEBUG:-debug}" >"$tmp/extra.conf"

# The job sequence: "NODES KIND GPUS SECONDS" per line; KIND is excl (whole
# nodes, all 4 GPUs) or shared (GPUS per node, 1 task of 1 CPU per node).
sizes="1 2 4 8 3 1 2 6 5 1 4 2 7 1 3 2 8 1 2 4"
i=0
: >"$tmp/jobs"
while [ $i -lt "$JOBS" ]; do
	set -- $sizes
	k=$((i % 20 + 1))
	eval "n=\${$k}"
	if [ $((i % 3)) -eq 0 ]; then kind=excl g=4; else kind=shared g=$((1 + i % 2)); fi
	echo "$n $kind $g $((1 + i % 3))" >>"$tmp/jobs"
	i=$((i + 1))
done

# run MODE: start the cluster with Selection=MODE, submit the sequence,
# wait for it, keep the log as $tmp/MODE.log
run() {
	mode=$1
	printf 'FabricFile=@DIR@/fabric.json\nSelection=%s\n%s\n' "$mode" \
		"${TP_BENCH_CONF:-}" >"$tmp/topoplace.conf"
	t0=$(date +%s)
	if ! timeout 120 "$CLUSTER" start --slurm-prefix "$PREFIX" --topology topoplace \
		--plugin-dir "$PLUGIN_DIR" --nodes 8 --gpus-per-node 4 --dir "$dir" --timeout 60 \
		--net "$NET" --port "$PORT" --extra-file "$tmp/topoplace.conf" \
		--slurm-conf-extra "$tmp/extra.conf" >"$tmp/start.out" 2>&1; then
		cat "$tmp/start.out" >&2
		echo "bench_slurm24_decision: cluster start ($mode) failed" >&2
		exit 1
	fi
	export SLURM_CONF=$dir/slurm.conf
	log=$dir/log/slurmctld.log
	# the debug level from slurm.conf; setdebug as well, in case
	timeout 10 scontrol setdebug "${TP_BENCH_DEBUG:-debug}" >/dev/null 2>&1 || true
	echo "# $mode: cluster up in $(($(date +%s) - t0)) s"
	submitted=0
	while read -r n kind g secs; do
		if [ "$kind" = excl ]; then
			set -- -N "$n" --exclusive --gres=gpu:4
		else
			set -- -N "$n" --ntasks-per-node=1 -c 1 --gres=gpu:"$g"
		fi
		timeout 10 sbatch --parsable -J "b$submitted" -o /dev/null "$@" \
			--wrap "sleep $secs" >/dev/null 2>>"$tmp/sbatch.err" &&
			submitted=$((submitted + 1))
		sleep 0.25
	done <"$tmp/jobs"
	i=0
	while [ -n "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && [ $i -lt 600 ]; do
		sleep 0.5
		i=$((i + 1))
	done
	left=$(timeout 10 squeue -h -o %i 2>/dev/null | wc -l)
	echo "# $mode: $submitted jobs submitted, $left left after the wait, $(($(date +%s) - t0)) s"
	grep "topology/topoplace: .*switches (" "$log" | tail -n 1 | sed 's/^/#   /'
	cp "$log" "$tmp/$mode.$round.log"
	[ -z "${TP_BENCH_LOGS:-}" ] || cp "$log" "$TP_BENCH_LOGS/$mode.$round.log"
	cat "$log" >>"$tmp/$mode.log"
	stop_cluster
}

round=1
while [ $round -le "$ROUNDS" ]; do
	run engine
	run tree
	round=$((round + 1))
done

# decisions MODE [FIELD]: "ROUND.JOBID MS" per decision line (job ids
# restart with each cluster); MS is the wall time or, with FIELD cpu, the
# thread's CPU time over the same span
decisions() {
	r=1
	while [ $r -le "$ROUNDS" ]; do
		if [ "${2:-}" = cpu ]; then
			sed -n "s/.*topology\/topoplace: JobId=\([0-9]*\) [0-9]* nodes in [0-9.]* ms ($1[ ;,].*thread cpu \([0-9.]*\) ms.*/$r.\1 \2/p" \
				"$tmp/$1.$r.log"
		else
			sed -n "s/.*topology\/topoplace: JobId=\([0-9]*\) [0-9]* nodes in \([0-9.]*\) ms ($1[ ;,)].*/$r.\1 \2/p" \
				"$tmp/$1.$r.log"
		fi
		r=$((r + 1))
	done
}
# stats: "n p50 p99 mean" of the numbers on stdin
stats() {
	sort -g | awk '{ v[NR] = $1; s += $1 }
	END {
		if (NR == 0) { print "0 0 0 0"; exit }
		p50 = v[int((NR - 1) * 0.50) + 1]
		p99 = v[int((NR - 1) * 0.99 + 0.999999) + 1]
		printf "%d %.3f %.3f %.3f\n", NR, p50, p99, s / NR
	}'
}
# switches MODE: "VOLUNTARY INVOLUNTARY" summed over the decision lines
switches() {
	sed -n "s/.*nodes in [0-9.]* ms ($1[ ;,].*, switches \([0-9]*\)+\([0-9]*\);.*/\1 \2/p" \
		"$tmp/$1.log" | awk '{ v += $1; i += $2 } END { printf "%d %d\n", v, i }'
}
for m in engine tree; do
	decisions $m >"$tmp/$m.all"
	awk '!seen[$1]++' "$tmp/$m.all" >"$tmp/$m.first"
	cut -d' ' -f2 "$tmp/$m.all" | stats >"$tmp/$m.stat"
	cut -d' ' -f2 "$tmp/$m.first" | stats >"$tmp/$m.fstat"
	decisions $m cpu | cut -d' ' -f2 | stats >"$tmp/$m.cstat"
	switches $m >"$tmp/$m.csw"
done
# the engine's own share (placement alone, wall clock); its answers taken
# from the memo; the mean split of its selection (confirm, Slurm's cores,
# state, placement, commit)
sed -n 's/.*nodes in [0-9.]* ms (engine \([0-9.]*\) ms[,;)].*/\1/p' \
	"$tmp/engine.log" | stats >"$tmp/engine.inner"
memo=$(grep -c 'nodes in [0-9.]* ms (engine [0-9.]* ms, memo' "$tmp/engine.log")
sed -n 's/.*nodes in [0-9.]* ms (engine .*; confirm \([0-9.]*\), cores \([0-9.]*\), state \([0-9.]*\), placement \([0-9.]*\), commit \([0-9.]*\) ms).*/\1 \2 \3 \4 \5/p' \
	"$tmp/engine.log" | awk '{ for (k = 1; k <= 5; k++) s[k] += $k }
	END { if (NR) printf "%.3f %.3f %.3f %.3f %.3f\n", s[1] / NR, s[2] / NR,
		s[3] / NR, s[4] / NR, s[5] / NR; else print "0 0 0 0 0" }' >"$tmp/engine.split"
read -r en ep50 ep99 emean <"$tmp/engine.stat"
read -r tn tp50 tp99 tmean <"$tmp/tree.stat"
read -r efn efp50 efp99 efmean <"$tmp/engine.fstat"
read -r tfn tfp50 tfp99 tfmean <"$tmp/tree.fstat"
read -r ecn ecp50 ecp99 ecmean <"$tmp/engine.cstat"
read -r tcn tcp50 tcp99 tcmean <"$tmp/tree.cstat"
read -r evol einv <"$tmp/engine.csw"
read -r tvol tinv <"$tmp/tree.csw"
read -r _ ip50 ip99 imean <"$tmp/engine.inner"
read -r sconf score sstate splace scommit <"$tmp/engine.split"
if [ "$en" -eq 0 ] || [ "$tn" -eq 0 ]; then
	echo "bench_slurm24_decision: no decision lines (engine $en, tree $tn); slurmctld at debug level?" >&2
	grep -i 'topoplace' "$tmp/engine.log" "$tmp/tree.log" 2>/dev/null | tail -n 10 >&2
	exit 1
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "null" }'; }
r50=$(ratio "$ep50" "$tp50")
r99=$(ratio "$ep99" "$tp99")
rmean=$(ratio "$emean" "$tmean")
rf50=$(ratio "$efp50" "$tfp50")
c50=$(ratio "$ecp50" "$tcp50")
c99=$(ratio "$ecp99" "$tcp99")
cmeanr=$(ratio "$ecmean" "$tcmean")
printf '%-26s %6s %9s %9s %9s\n' "decision time (ms)" n p50 p99 mean
printf '%-26s %6s %9s %9s %9s\n' "engine, all decisions" "$en" "$ep50" "$ep99" "$emean"
printf '%-26s %6s %9s %9s %9s\n' "tree, all decisions" "$tn" "$tp50" "$tp99" "$tmean"
printf '%-26s %6s %9s %9s %9s\n' "engine, first per job" "$efn" "$efp50" "$efp99" "$efmean"
printf '%-26s %6s %9s %9s %9s\n' "tree, first per job" "$tfn" "$tfp50" "$tfp99" "$tfmean"
printf '%-26s %6s %9s %9s %9s\n' "engine, thread CPU" "$ecn" "$ecp50" "$ecp99" "$ecmean"
printf '%-26s %6s %9s %9s %9s\n' "tree, thread CPU" "$tcn" "$tcp50" "$tcp99" "$tcmean"
printf '%-26s %6s %9s %9s %9s\n' "(engine's placement alone)" "$en" "$ip50" "$ip99" "$imean"
echo "engine split (mean ms): confirm $sconf, cores $score, state $sstate, placement $splace, commit $scommit; memo answers: $memo of $en"
if grep -q 'memo check' "$tmp/engine.log"; then
	echo "memo checks (debug2): $(grep -c 'memo check: the engine.s answer is the memo.s' "$tmp/engine.log") same, $(grep -c 'memo check: the memo.s answer' "$tmp/engine.log") differing"
fi
echo "context switches (voluntary+involuntary): engine $evol+$einv, tree $tvol+$tinv"
echo "ratio engine/tree: p50 $r50, p99 $r99, mean $rmean (first per job: p50 $rf50); goal <= 2"
echo "CPU ratio engine/tree: p50 $c50, p99 $c99, mean $cmeanr"
printf '{"bench":"slurm24_decision","slurm":"%s","jobs":%s,"rounds":%s,"nodes":8,' \
	"$(slurmctld -V 2>/dev/null | awk '{print $2}')" "$JOBS" "$ROUNDS"
printf '"engine":{"n":%s,"p50_ms":%s,"p99_ms":%s,"mean_ms":%s,"placement_p50_ms":%s,"placement_cpu_p99_ms":null,"placement_cpu_mean_ms":null,' \
	"$en" "$ep50" "$ep99" "$emean" "$ip50"
printf '"cpu_p50_ms":%s,"cpu_p99_ms":%s,"cpu_mean_ms":%s,"switches_voluntary":%s,"switches_involuntary":%s,"memo_answers":%s,' \
	"$ecp50" "$ecp99" "$ecmean" "$evol" "$einv" "$memo"
printf '"split_mean_ms":{"confirm":%s,"cores":%s,"state":%s,"placement":%s,"commit":%s}},' \
	"$sconf" "$score" "$sstate" "$splace" "$scommit"
printf '"tree":{"n":%s,"p50_ms":%s,"p99_ms":%s,"mean_ms":%s,"cpu_p50_ms":%s,"cpu_p99_ms":%s,"cpu_mean_ms":%s,"switches_voluntary":%s,"switches_involuntary":%s},' \
	"$tn" "$tp50" "$tp99" "$tmean" "$tcp50" "$tcp99" "$tcmean" "$tvol" "$tinv"
printf '"ratio":{"p50":%s,"p99":%s,"mean":%s,"first_p50":%s},' "$r50" "$r99" "$rmean" "$rf50"
printf '"cpu_ratio":{"p50":%s,"p99":%s,"mean":%s}}\n' "$c50" "$c99" "$cmeanr"
exit 0
