#!/bin/bash
# PyTorch DDP through libtopoplace-coll on a real Slurm job (issue 10): the mini-cluster on an
# emulated fabric (contrib/slurm-cluster.sh --emu-fabric: 4 hosts on 2 leaves, names alternating
# leaves, 400 Mbit/s tbf-shaped host links, up-link 4:1 oversubscribed), topology/topoplace
# placing the job and the SPANK plugin handing every task its plan and rank. One allocation
# (`sbatch -N 4 --ntasks-per-node=2`, 8 ranks) runs contrib/examples/ddp_train.py once per
# configuration (tests/bench/ddp_job.sh), same model, data and seed:
#   compute             no all-reduce at all (ddp_train.py --backend none): the compute floor
#   gloo                torch's own gloo all-reduce (no hook), ranks in Slurm's order
#   dense               the topoplace hook, dense (the plan's algorithm)
#   int8|1bit|topk-flat each compressor on every hop
#   int8|1bit|topk-hier hierarchical compression: dense inside hosts and leaves, compressed
#                       only across the up-link
#   int8|1bit-hier-seg0 the same with each bucket in one piece (ddp_train.py --segment 0): the
#                       hierarchical path before its pipeline, the baseline of int8|1bit-hier
#   1bit-hier-seq       the pipeline's segments with their stages one after another
#                       (--no-overlap; the same bits as 1bit-hier)
#   1bit-hier-seg64k    the pipeline with 64 Ki-element segments (the default is 1 Mi)
#   int8|1bit-group     the group level compressed too (--compress-group): dense only inside
#                       hosts, so the host links carry the compressed size
#   1bit|topk-hier-mom  hierarchical, the momentum applied in the hook to what is sent (ddp_train.py
#                       --hook-momentum; top-k with DGC's momentum masking), the optimizer's off
#   topk|1bit-hier-noef without error feedback
#   dense-sync, int8-hier-sync
#                       the hook reducing on the autograd thread (--sync-hook: no overlap with
#                       backward); every other topoplace run's hook returns a Future the
#                       library's progress thread completes, overlapping backward
#   powersgd            torch's PowerSGD hook on gloo (the compression peer; each bucket's
#                       hook starts when the previous one's is done, on a gloo group of its
#                       own: on torch 1.13's gloo it hangs or aborts otherwise, ddp_train.py)
# Compressed runs need a libtopoplace-coll with compression; without it they are reported as
# unavailable (the first one is attempted and fails with CompressionUnavailable).
# Root; not part of `make check` (about 5 minutes with compression unavailable, 8 with it;
# tests/integration/slurm_ddp.sh runs a 2-host cut of it in CI).
#
#   bench_ddp.sh [--json FILE] [--comm-bound] [--steps N] [--hidden H] [--start-iter W] [--ratio R]
#                [--runs "NAME..."] [--nodes N] [--tasks-per-node T] [--slurm 24|22] [--keep]
#
#   --comm-bound  the communication-bound mode: a gradient large against the step's compute, as
#                 data-parallel training of large models on oversubscribed fabrics has (a layer's
#                 step costs 6 x params x samples FLOP against 4 x params bytes of gradient, so
#                 the ratio is set by the samples per rank and the FLOP rate per link byte; a
#                 GPU's ~2e4 FLOP per NIC byte is what 8 ranks on 2 cores against 400 Mbit/s links
#                 scale down to ~1e2). Sets --hidden 2048 (4.3M parameters, 17 MB of gradients
#                 per step) --batch 8 --bucket-mb 1 --steps 12 --step-budget 15, 512 training and
#                 held-out samples per rank (the full-set loss at hidden 2048 would take longer
#                 than the training), and the runs "compute gloo dense int8-hier 1bit-hier
#                 topk-hier 1bit-hier-seg0 1bit-group"; options after it override these. Without it: the
#                 convergence-oriented defaults below (compute is a large share of gloo's step)
#   --json FILE   {"format":"topoplace-ddp-bench/1","runs":[{"name","compressor","hierarchical",
#                 "final_loss","final_loss_on","accuracy","uplink_bytes","step_s", ...}, ...]}:
#                 final_loss_on as ddp_train.py gives it ("train"; "unseen" with --fresh; the
#                 table's loss/dense only between runs that agree on it), uplink_bytes from
#                 the up-link veth's interface counters (both directions, all traffic of the
#                 step), uplink_bytes_lib the library's count of what it sent across groups
#                 (null for torch's own runs), status ok|failed|unavailable, error
#   --steps N     training steps per run (default 40)
#   --hidden H    MLP width (default 512: 300k parameters, 1.2 MB of gradients per step)
#   --start-iter W  dense warm-up: steps the compressed runs reduce dense before compressing
#                 (TopoplaceState start_iter; default 0: compress from the first step - measured
#                 here, a warm-up did not bring 1-bit or top-k closer to dense).
#                 The up-link bytes of compressed runs include these dense steps
#   --batch B     samples per rank per step (default 64); a small batch with a wide MLP
#                 makes the step network-bound, as large models' steps are
#   --bucket-mb M DDP bucket_cap_mb (default 0.25: several buckets, as large models have)
#   --step-budget S  seconds a step may take before a run counts as hung (default 3)
#   --ratio R     up-link oversubscription (default 4)
#   --runs LIST   run names to keep, space-separated (default all)
#   --nodes N, --tasks-per-node T
#                 hosts (a multiple of the 2 leaves; default 4) and ranks per host (default 2)
#   --slurm       the private 24.11 (default when built) or Debian's 22.05
#   --keep        leave the cluster up and the work directory
# Environment: TOPOPLACE, TP_BUILDDIR (SRCDIR/build), SLURM24_PREFIX, TP_PYTHON (/usr/bin/python3),
# TOPOPLACE_COLL_LIB (the library the runs load; default the build tree's), TP_DDP_NET (10.210.0:
# Slurm's control net), TP_DDP_DATA_NET (10.211.0: the fabric's hosts), TP_DDP_PORT (6950),
# TP_DDP_PREFIX (tdd-: namespaces; tests/integration/emu_fabric.sh owns tpt-).
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${TP_SRCDIR:-$(cd "$here/../.." && pwd)}
builddir=${TP_BUILDDIR:-$srcdir/build}
topoplace=${TOPOPLACE:-$builddir/cli/topoplace}
py=${TP_PYTHON:-/usr/bin/python3}
net=${TP_DDP_NET:-10.210.0}
data_net=${TP_DDP_DATA_NET:-10.211.0}
port=${TP_DDP_PORT:-6950}
eprefix=${TP_DDP_PREFIX:-tdd-}
lib=${TOPOPLACE_COLL_LIB:-$builddir/coll/.libs/libtopoplace-coll.so}

json="" steps=40 hidden=512 warm=0 ratio=4 only="" gen="" keep=0 nodes=4 tpn=2 batch=64 bucket=0.25 budget=3
data="" mode=default
die() { echo "bench_ddp: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--json) json=$2; shift 2 ;;
	--comm-bound)
		hidden=2048 batch=8 bucket=1 steps=12 budget=15 data="--samples 512 --holdout 512" mode=comm-bound
		only="compute gloo dense int8-hier 1bit-hier topk-hier 1bit-hier-seg0 1bit-group"
		shift ;;
	--steps) steps=$2; shift 2 ;;
	--hidden) hidden=$2; shift 2 ;;
	--start-iter) warm=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--bucket-mb) bucket=$2; shift 2 ;;
	--step-budget) budget=$2; shift 2 ;;
	--ratio) ratio=$2; shift 2 ;;
	--runs) only=$2; shift 2 ;;
	--nodes) nodes=$2; shift 2 ;;
	--tasks-per-node) tpn=$2; shift 2 ;;
	--slurm) gen=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (try --help)" ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench_ddp: needs root (network namespaces, Slurm daemons): skipped"; exit 77; }
for t in ip tc jq timeout munged; do command -v $t >/dev/null || die "$t missing (contrib/install-deps.sh)"; done
"$py" -c 'import torch' 2>/dev/null || { echo "bench_ddp: $py cannot import torch (apt-get install python3-torch): skipped"; exit 77; }
[ -x "$topoplace" ] || die "$topoplace not built"
[ -f "$lib" ] || die "$lib not built"

all="compute:none gloo:gloo dense:topoplace
int8-flat:topoplace:--compressor,int8,--flat 1bit-flat:topoplace:--compressor,1bit,--flat
topk-flat:topoplace:--compressor,topk,--flat
int8-hier:topoplace:--compressor,int8 1bit-hier:topoplace:--compressor,1bit
topk-hier:topoplace:--compressor,topk
int8-hier-seg0:topoplace:--compressor,int8,--segment,0 1bit-hier-seg0:topoplace:--compressor,1bit,--segment,0
1bit-hier-seq:topoplace:--compressor,1bit,--no-overlap
1bit-hier-seg64k:topoplace:--compressor,1bit,--segment,65536
int8-group:topoplace:--compressor,int8,--compress-group 1bit-group:topoplace:--compressor,1bit,--compress-group
1bit-hier-mom:topoplace:--compressor,1bit,--hook-momentum
topk-hier-mom:topoplace:--compressor,topk,--hook-momentum
1bit-hier-noef:topoplace:--compressor,1bit,--no-error-feedback
topk-hier-noef:topoplace:--compressor,topk,--no-error-feedback
dense-sync:topoplace:--sync-hook int8-hier-sync:topoplace:--compressor,int8,--sync-hook
powersgd:powersgd"
runs=""
for r in $all; do
	if [ -z "$only" ] || echo " $only " | grep -q " ${r%%:*} "; then runs="$runs $r"; fi
done
[ -n "$runs" ] || die "--runs: no known run in '$only'"

me=bench_ddp
# shellcheck source=bench_cluster.sh
. "$here/bench_cluster.sh"
rc=0
bench_slurm "$gen"
bench_cluster_start tpt-ddp --nodes "$nodes" --gpus-per-node "$tpn" --net "$net" --port "$port" \
	--data-net "$data_net" --uplink-ratio "$ratio" --emu-prefix "$eprefix"

# ---- the job ----
nruns=$(echo $runs | wc -w)
job_limit=$((120 + nruns * (60 + steps * budget)))
j=$(DDP_RUNS="$runs" DDP_ARGS="--steps $steps --hidden $hidden --batch $batch --bucket-mb $bucket --start-iter $warm --timeout 60${data:+ $data}" \
	DDP_OUT=$out DDP_PY=$py \
	DDP_TRAIN=$srcdir/contrib/examples/ddp_train.py DDP_LEAF_NS="${eprefix}leaf0 ${eprefix}leaf1" \
	DDP_TIMEOUT=$((60 + steps * budget)) PYTHONPATH=$srcdir/bindings/torch TOPOPLACE_COLL_LIB=$lib \
	timeout 10 sbatch --parsable -J ddp -N "$nodes" --ntasks-per-node="$tpn" -t $((job_limit / 60 + 1)) \
	-o "$out/job.out" "$here/ddp_job.sh")
[ -n "$j" ] || { rc=1; die "sbatch -N $nodes --ntasks-per-node=$tpn failed"; }
echo "bench_ddp: sbatch -N $nodes --ntasks-per-node=$tpn $here/ddp_job.sh: job $j (Slurm $slurm_ver), $nruns runs of $steps steps"
bench_job_wait "$j" "$job_limit"
[ -s "$out/results.jsonl" ] || { rc=1; die "no results"; }

doc=$(jq -s --arg v "$slurm_ver" --arg m "$mode" --argjson r "$ratio" --argjson s "$steps" --argjson h "$hidden" \
	--argjson n "$nodes" --argjson t "$tpn" --argjson b "$batch" --argjson k "$bucket" --argjson w "$warm" \
	'{format: "topoplace-ddp-bench/1", mode: $m, slurm: $v, hosts: $n, leaves: 2, ranks: ($n * $t), uplink_ratio: $r,
	  host_link_mbit: 400, steps: $s, hidden: $h, batch: $b, bucket_mb: $k, start_iter: $w,
	  runs: map({name, compressor: (.compressor // null), hierarchical: (.hierarchical // false),
	             error_feedback: (.error_feedback // null), sync_hook: (.sync_hook // null), final_loss: (.final_loss // null),
	             final_loss_on: (.final_loss_on // null), accuracy: (.accuracy // null), uplink_bytes: (.uplink_bytes // null),
	             uplink_bytes_lib: (.uplink_bytes_lib // null), step_s: (.step_s // null),
	             phases_ms: (.phases_ms // null), status, error: (.error // null)})}' "$out/results.jsonl")
[ -z "$json" ] || { printf '%s\n' "$doc" >"$json" && echo "bench_ddp: results in $json"; }

printf '%s\n' "$doc" | jq -r '
  (.runs | map(select(.name == "dense"))[0]) as $d | (.runs | map(select(.name == "gloo"))[0]) as $g |
  def rel(x; y): if x == null or y == null or y == 0 then "-" else "\(x / y * 100 | round / 100)" end;
  "\nbench_ddp: \(.mode) mode, Slurm \(.slurm), \(.ranks) ranks on \(.hosts) hosts / 2 leaves, up-link \(.uplink_ratio):1, \(.steps) steps",
  "  run              status      loss  loss/dense  acc    up-link MB (lib)    up/dense  ms/step  step/gloo",
  (.runs[] | "  \(.name | . + " " * (16 - length)) \(.status | . + " " * (11 - length))" +
    (if .status == "ok" then
      " \(.final_loss * 10000 | round / 10000)  \(if .final_loss_on == $d.final_loss_on then rel(.final_loss; $d.final_loss) else "-" end)  \(.accuracy * 1000 | round / 1000)" +
      "  \(if .uplink_bytes == null then "-" else (.uplink_bytes / 1e6 * 10 | round / 10) end)" +
      " (\(if .uplink_bytes_lib == null then "-" else (.uplink_bytes_lib / 1e6 * 10 | round / 10) end))" +
      "  \(rel(.uplink_bytes; $d.uplink_bytes))  \(.step_s * 1000 | round)  \(rel(.step_s; $g.step_s))"
     else " \(.error // "")" end)),
  "\n  where a step went, ms (ddp_train.py phases_ms, mean over steps and ranks; library phases on its",
  "  progress thread, overlapping backward): forward backward optimizer | hook hook_cpu tail queued | call inner cross compress decompress",
  (.runs[] | select(.phases_ms != null) | .phases_ms as $p |
    "  \(.name | . + " " * (16 - length))" + ([["forward", "backward", "optimizer"], ["hook", "hook_cpu", "tail", "queued"],
      ["call", "inner", "cross", "compress", "decompress"]] | map(map(if $p[.] == null then "-" else
      "\($p[.] * 10 | round / 10)" end) | join(" ")) | join(" | ")))'
exit $rc
