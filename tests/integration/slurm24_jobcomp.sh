#!/bin/sh
# Slurm 24.11's job completion log (JobCompType=jobcomp/filetxt, the 24.11
# build's plugin) read by `topoplace trace`, as slurm_accounting.sh reads
# 22.05's: a 4-node mini-cluster (4 fake GPUs a node) runs a 2-node job
# with 2 GPUs a node and a 1-node CPU job. 24.11, like 22.05, tracks GPUs
# as TRES only with slurmdbd, so the log names none: trace refuses it with
# the slurm.conf hint, and --assume-gpus all reads both jobs as holding
# their hosts whole, with their node counts, run times (each sleeps a
# known time) and node lists, which --price prices on the cluster's
# fabric. Runs beside other clusters: TP_JC24_NET / TP_JC24_PORT
# (10.220.0 / 6975). Needs root and the 24.11 build; exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24
NET=${TP_JC24_NET:-10.220.0}
PORT=${TP_JC24_PORT:-6975}
dir=$tmp/cluster
t0=$(date +%s)
cluster_trap slurmctld.log 'jobcomp\|fatal\|error' 20
[ -f "$PREFIX/lib/slurm/jobcomp_filetxt.so" ] ||
	skip_all "$PREFIX has no jobcomp_filetxt.so (contrib/build-slurm.sh --force)"

jobcomp_cluster
ok "24.11 cluster up in $(($(date +%s) - t0)) s"
gpu=$(sbatch_named gpu2 -o /dev/null -N 2 --gpus-per-node=2 --wrap 'sleep 2') || bad "sbatch gpu2"
cpu=$(sbatch_named cpu1 -o /dev/null -N 1 --wrap 'sleep 1') || bad "sbatch cpu1"
for j in $gpu $cpu; do wait_state -t 60 "$j" COMPLETED || bad "job $j completed"; done
poll 20 lines_at_least "$jc" JobId= 2 || bad "2 records in $jc"
sed 's/^/# jobcomp: /' "$jc" | cut -c1-160
expect 2 "trace: no GPU tracked" "$TOPOPLACE" trace "$jc"
grep -q "AccountingStorageTRES=gres/gpu in slurm.conf (or: topoplace trace --assume-gpus)" "$tmp/err" &&
	ok "trace says how to track GPUs" || bad "trace: $(cat "$tmp/err")"
expect 0 "trace --assume-gpus all" "$TOPOPLACE" trace "$jc" --assume-gpus all --json
cp "$tmp/out" "$tmp/trace.json"
jq -e '.source_format == "jobcomp" and .jobs == 2 and .assumed == 2
	and ([.trace[] | "\(.nodes)x\(.gpus_per_node)"] | sort == ["1x0", "2x0"])
	and ([.trace[] | select(.nodes == 2) | .run_s >= 2 and .run_s <= 17] | all)' "$tmp/trace.json" >/dev/null &&
	ok "--assume-gpus all: both jobs on whole hosts, the 2-node one ran its 2 s" ||
	bad "--assume-gpus all: $(cat "$tmp/trace.json")"
nl=$(field "$gpu" NodeList)
expect 0 "trace --price" "$TOPOPLACE" trace "$jc" --assume-gpus all --price --fabric "$dir/fabric.json" --json
jq -e --arg nl "$nl" '.priced == 1 and .jobs[0].nodes == $nl and .jobs[0].gpus == 8 and .jobs[0].ideal_s > 0' \
	"$tmp/out" >/dev/null && ok "--price: the 2-node job on Slurm's hosts ($nl), whole" ||
	bad "--price: $(cat "$tmp/out")"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
