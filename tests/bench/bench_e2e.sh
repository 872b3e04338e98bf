#!/bin/bash
# The end-to-end proof of issue 9: a real `sbatch -N 8` job in the Slurm mini-cluster whose nodes
# are the hosts of an emulated 2-leaf fabric (contrib/slurm-cluster.sh --emu-fabric: names
# alternate leaves, 400 Mbit/s tbf-shaped host links, up-link 4:1). topology/topoplace places the
# job (native mode on Slurm 24.11; 22.05's plugin with --slurm 22), the SPANK plugin hands every
# task the plan, and the job (tests/bench/e2e_job.sh) runs topoplace-coll-bench through
# libtopoplace-coll from that environment alone, then Open MPI's and Gloo's peer benchmarks on
# the same allocation in the order Slurm lists the hosts and in name order. Root; not part of
# `make check` (about 6-8 minutes).
#
#   bench_e2e.sh [--json FILE] [--nodes N] [--ratio R] [--sizes MIN,MAX[,FACTOR]] [--iters N]
#                [--slurm 24|22] [--quick] [--keep]
#
#   --json FILE    write {"format":"topoplace-coll-bench/1","host_link_gbps":x,"checked":true,
#                  "results":[...]}; each result also carries "predicted_s" (the cost model on
#                  the calibrated fabric, where it prices what ran) and "measured_over_predicted"
#   --nodes N      slurmd nodes = fabric hosts, all in the job (default 8, 2 leaves)
#   --ratio R      up-link oversubscription (default 4)
#   --sizes        default 16M,64M,4 (the issue's ">= 16 MiB")
#   --iters N      timed iterations per size (default 3, one warm-up)
#   --slurm 24|22  the private 24.11 (default when built) or Debian's 22.05
#   --quick        16M only, Open MPI and Gloo defaults only (about 3 minutes)
#   --keep         leave the cluster up and keep the work directory
#
# Orders in the results: "plan" for topoplace (TOPOPLACE_RANK from the SPANK plugin), "slurm" for
# a peer in the order this job's Slurm lists (SLURM_JOB_NODELIST; with topology/topoplace loaded,
# Slurm ranks its node table in fabric order, so this is leaf order already), "names" for a peer
# in sorted host-name order (what Slurm lists without topoplace's topology plugin: interleaved).
# Every program checks its sums (--check, outside the timed iterations: topoplace every
# iteration, the peers their warm-up): a wrong element fails the job and this script (exit 1).
# The comparison sets like against like: topoplace's own choice (auto, the plan's
# recommendation) against each peer's default, and the best of topoplace's forced algorithms
# against each peer's forced one. The peers' ratios include what this machine does to them:
# eight busy-polling MPI ranks share its cores (DESIGN.md), which a real cluster does not.
#
# Cost-model check: the fabric JSON the plugins read has the shaped rates (0.4 Gb/s host links,
# up-links 0.4 x hosts-per-leaf / R); the check prices each case on a copy calibrated to TCP's
# goodput through tbf (383/400 of every link's rate: tbf counts frame bytes, MTU 1500) with
# `topoplace cost --hosts <the order it ran in> --algo A`, A the algorithm that ran (topoplace
# auto: the plan's recommendation for the size; Open MPI ring, Gloo default (a ring) and
# ring_chunked: ring; the peers' other algorithms are not modelled: n/a).
# Environment: TOPOPLACE, TP_BUILDDIR (SRCDIR/build), SLURM24_PREFIX (/opt/topoplace/slurm-24.11),
# TP_E2E_NET (10.206.0, data net the next /24), TP_E2E_PORT (6957), TP_E2E_PREFIX (tpx-).
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${TP_SRCDIR:-$(cd "$here/../.." && pwd)}
builddir=${TP_BUILDDIR:-$srcdir/build}
topoplace=${TOPOPLACE:-$builddir/cli/topoplace}
coll_bench=$builddir/coll/topoplace-coll-bench
peer_mpi=$builddir/tests/bench/peer_mpi
peer_gloo=$builddir/tests/bench/peer_gloo
net=${TP_E2E_NET:-10.206.0}
port=${TP_E2E_PORT:-6957}
eprefix=${TP_E2E_PREFIX:-tpx-}

json="" nodes=8 ratio=4 sizes="16M,64M,4" iters=3 gen="" quick=0 keep=0
die() { echo "bench_e2e: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--json) json=$2; shift 2 ;;
	--nodes) nodes=$2; shift 2 ;;
	--ratio) ratio=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--slurm) gen=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--keep) keep=1; shift ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (try --help)" ;;
	esac
done
[ "$(id -u)" -eq 0 ] || { echo "bench_e2e: needs root (network namespaces, Slurm daemons): skipped"; exit 77; }
for t in ip tc jq bc timeout munged; do command -v $t >/dev/null || die "$t missing (contrib/install-deps.sh)"; done
[ -x "$topoplace" ] || die "$topoplace not built"
[ -x "$coll_bench" ] || die "$coll_bench not built"
IFS=, read -r smin smax sfac <<<"$sizes"
sfac=${sfac:-4}
[ -n "$smin" ] && [ -n "$smax" ] || die "--sizes MIN,MAX[,FACTOR]"
ompi_algos="default ring" gloo_algos="default halving_doubling" topo_algos="ring hierarchical tree auto"
if [ "$quick" = 1 ]; then
	smax=$smin ompi_algos=default gloo_algos=default topo_algos="ring hierarchical"
fi
if [ ! -x "$peer_mpi" ] || ! command -v mpirun >/dev/null; then
	echo "bench_e2e: $peer_mpi or mpirun missing: Open MPI skipped"
	peer_mpi=
fi
[ -x "$peer_gloo" ] || { echo "bench_e2e: $peer_gloo missing (libgloo-dev): Gloo skipped"; peer_gloo=; }

me=bench_e2e
# shellcheck source=bench_cluster.sh
. "$here/bench_cluster.sh"
rc=0
bench_slurm "$gen"
bench_cluster_start tpx-e2e --nodes "$nodes" --gpus-per-node 1 --net "$net" --port "$port" \
	--uplink-ratio "$ratio" --emu-prefix "$eprefix"
rate_gbps=0.4

# ---- the job ----
job_limit=$((quick ? 600 : 1500))
j=$(COLL_BENCH=$coll_bench PEER_MPI=$peer_mpi PEER_GLOO=$peer_gloo E2E_OUT=$out \
	E2E_MIN=$smin E2E_MAX=$smax E2E_FACTOR=$sfac E2E_ITERS=$iters E2E_WARMUP=1 E2E_CHECK=1 \
	E2E_TIMEOUT=$((job_limit / 2)) E2E_TOPO_ALGOS="$topo_algos" E2E_OMPI_ALGOS="$ompi_algos" \
	E2E_GLOO_ALGOS="$gloo_algos" E2E_ORDERS="slurm names" \
	timeout 10 sbatch --parsable -J e2e -N "$nodes" --ntasks-per-node=1 -t $((job_limit / 60)) \
	-o "$out/job.out" "$here/e2e_job.sh")
[ -n "$j" ] || { rc=1; die "sbatch -N $nodes failed"; }
echo "bench_e2e: sbatch -N $nodes --ntasks-per-node=1 $here/e2e_job.sh: job $j (Slurm $slurm_ver)"
bench_job_wait "$j" "$job_limit"
[ -s "$out/results.jsonl" ] || { rc=1; die "no results"; }
if grep -q "wrong elements\|WRONG\|^FAILED" "$out/job.out"; then
	rc=1
	echo "bench_e2e: FAILED: a program's check or run failed (the job's output above)"
fi
[ -s "$out/plan.json" ] || { rc=1; die "rank 0 did not copy its TOPOPLACE_PLAN"; }

# ---- the cost model on the calibrated fabric ----
jq -c '.links |= map(.[7] = (.[7] * 383 / 400))' "$dir/fabric.json" >"$work/fabric.calibrated.json"
plan_order=$(jq -r '.ring | join(",")' "$out/plan.json")
slurm_order=$(awk '$1 == "slurm" { $1 = ""; print }' "$out/orders" | xargs | tr ' ' ,)
name_order=$(awk '$1 == "names" { $1 = ""; print }' "$out/orders" | xargs | tr ' ' ,)
echo "bench_e2e: plan ring $plan_order; Slurm lists $slurm_order; names $name_order"
predict() { # HOSTS BYTES ALGO -> seconds or null
	"$topoplace" cost --fabric "$work/fabric.calibrated.json" --hosts "$1" --bytes "$2" \
		--algo "$3" --json 2>/dev/null | jq '.seconds' 2>/dev/null || echo null
}
: >"$work/results.jsonl"
while read -r line; do
	impl=$(jq -r .impl <<<"$line") algo=$(jq -r .algo <<<"$line") order=$(jq -r .order <<<"$line")
	bytes=$(jq -r .bytes <<<"$line")
	case $order in plan) hosts=$plan_order ;; slurm) hosts=$slurm_order ;; *) hosts=$name_order ;; esac
	model=""
	case $impl:$algo in
	topoplace:auto) model=$(jq -r --argjson b "$bytes" \
		'[.recommend[] | select(.bytes >= $b)][0].algo // .recommend[-1].algo' "$out/plan.json") ;;
	topoplace:*) model=$algo ;;
	openmpi:ring | gloo:default | gloo:ring_chunked) model=ring ;;
	esac
	p=null
	[ -z "$model" ] || p=$(predict "$hosts" "$bytes" "$model")
	jq -c --argjson r "$ratio" --argjson p "${p:-null}" --arg m "$model" \
		'. + {uplink_ratio: $r, predicted_s: $p, predicted_algo: (if $m == "" then null else $m end),
		      measured_over_predicted: (if $p == null or $p == 0 then null else (.seconds / $p) end)}' \
		<<<"$line" >>"$work/results.jsonl"
done <"$out/results.jsonl"
doc=$(jq -s --argjson g "$rate_gbps" --arg v "$slurm_ver" --arg pl "$plan_order" --arg sl "$slurm_order" \
	--arg nm "$name_order" '{format: "topoplace-coll-bench/1", host_link_gbps: $g, slurm: $v, checked: true,
	  orders: {plan: $pl, slurm: $sl, names: $nm}, results: .}' "$work/results.jsonl")
[ -z "$json" ] || { printf '%s\n' "$doc" >"$json" && echo "bench_e2e: results in $json"; }

# ---- the comparison ----
printf '%s\n' "$doc" | jq -r '
  def best(f): [.results[] | select(f)] | max_by(.busbw_gbps);
  def mb(x): if x == null then "-" else "\(x.busbw_gbps * 1000 | round) Mb/s" end;
  def r(a; b): if a == null or b == null or b.busbw_gbps == 0 then "n/a"
               else "\(a.busbw_gbps / b.busbw_gbps * 100 | round / 100)x" end;
  . as $d |
  "\nbench_e2e: Slurm \(.slurm), job of \(.results[0].hosts) nodes, up-link \(.results[0].uplink_ratio):1,"
    + " busbw (Mbit/s) at >= 16 MiB, topoplace from the plan vs each peer on the same hosts:",
  ([.results[] | select(.bytes >= 16777216) | .bytes] | unique[] as $b |
   ($d | best(.impl == "topoplace" and .algo != "auto" and .bytes == $b)) as $t |
   (($d | best(.impl == "topoplace" and .algo == "auto" and .bytes == $b)) // $t) as $ta |
   "  \($b / 1048576) MiB: topoplace auto \(mb($ta))\(if $ta.algo == "auto" then "" else " (no auto run: best forced)" end),"
     + " best forced \(mb($t)) (\($t.algo))",
   (("openmpi", "gloo") as $p | ("names", "slurm") as $o |
    ($d | best(.impl == $p and .algo == "default" and .order == $o and .bytes == $b)) as $x |
    select($x != null) |
    "    \($p) default, \($o) order: \(mb($x)) -> topoplace auto \(r($ta; $x))"),
   (("openmpi", "gloo") as $p | ("names", "slurm") as $o |
    ($d | best(.impl == $p and .algo != "default" and .order == $o and .bytes == $b)) as $x |
    select($x != null) |
    "    \($p) best forced (\($x.algo)), \($o) order: \(mb($x)) -> topoplace best forced \(r($t; $x))")),
  "\nbench_e2e: cost model (calibrated fabric, 383/400 of the shaped rates): measured / predicted",
  (.results[] | select(.predicted_s != null) |
   "  \(.impl) \(.algo)\(if .predicted_algo != .algo then " (as \(.predicted_algo))" else "" end)"
     + " order \(.order) \(.bytes / 1048576) MiB: measured \(.seconds * 1000 | round) ms,"
     + " predicted \(.predicted_s * 1000 | round) ms, ratio \(.measured_over_predicted * 100 | round / 100)")'
exit $rc
