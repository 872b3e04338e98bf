#!/bin/bash
# The end-to-end proof of issue 9: a real `sbatch -N 8` job in the Slurm mini-cluster whose nodes
# are the hosts of an emulated 2-leaf fabric (contrib/slurm-cluster.sh --emu-fabric: names
# alternate leaves, 400 Mbit/s tbf-shaped host links, up-link 4:1). topology/topoplace places the
# job (native mode on Slurm 24.11; 22.05's plugin with --slurm 22), the SPANK plugin hands every
# task the plan, and the job (tests/bench/e2e_job.sh) runs topoplace-coll-bench through
# libtopoplace-coll from that environment alone, then Open MPI's and Gloo's peer benchmarks on
# the same allocation in the order Slurm lists the hosts and in name order. Root; not part of
# `make check` (about 2 minutes and 5-6 a round: 18-20 minutes with the default 3 rounds).
#
#   bench_e2e.sh [--json FILE] [--nodes N] [--tasks-per-node T] [--ratio R]
#                [--sizes MIN,MAX[,FACTOR]] [--iters N] [--repeat N] [--slurm 24|22] [--quick] [--keep]
#
#   --json FILE    write {"format":"topoplace-coll-bench/1","host_link_gbps":x,"checked":true,
#                  "results":[...]}; each result also carries "predicted_s" (the cost model on
#                  the calibrated fabric, where it prices what ran) and "measured_over_predicted"
#   --nodes N      slurmd nodes = fabric hosts, all in the job (default 8, 2 leaves)
#   --tasks-per-node T  ranks a node (default 1): each node a host of T GPUs (one NIC), the job
#                  `sbatch --ntasks-per-node=T`, every program T ranks a node (topoplace's host
#                  phases and Open MPI through shared memory, Gloo through TCP inside a host)
#   --ratio R      up-link oversubscription (default 4)
#   --sizes        default 16M,64M,4 (the issue's ">= 16 MiB")
#   --iters N      timed iterations per size (default 3, one warm-up)
#   --repeat N     rounds of every program in turn, each round in another program order
#                  (default 3): each ratio is the mean over the rounds of the round's ratio +-
#                  its standard error, "faster"/"slower" only beyond t(0.975, N-1) standard
#                  errors (4.30 for 3 rounds, 2.78 for 5; never under 2), else "tie"
#   --slurm 24|22  the private 24.11 (default when built) or Debian's 22.05
#   --quick        16M only, Open MPI and Gloo defaults only, one round (about 3 minutes)
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

json="" nodes=8 tpn=1 ratio=4 sizes="16M,64M,4" iters=3 gen="" quick=0 keep=0 repeat=""
die() { echo "bench_e2e: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--json) json=$2; shift 2 ;;
	--nodes) nodes=$2; shift 2 ;;
	--tasks-per-node) tpn=$2; shift 2 ;;
	--ratio) ratio=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--repeat) repeat=$2; shift 2 ;;
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
[ -n "$repeat" ] || repeat=$((quick ? 1 : 3))
case $repeat in '' | *[!0-9]* | 0) die "--repeat: a whole number >= 1" ;; esac
case $tpn in '' | *[!0-9]* | 0) die "--tasks-per-node: a whole number >= 1" ;; esac
[ "$tpn" -le 8 ] || die "--tasks-per-node: at most 8 (the mini-cluster's nodes have 8 CPUs)"
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
bench_cluster_start tpx-e2e --nodes "$nodes" --gpus-per-node "$tpn" --net "$net" --port "$port" \
	--uplink-ratio "$ratio" --emu-prefix "$eprefix"
rate_gbps=0.4

# ---- the job ----
job_limit=$(((quick ? 600 : 1500) * repeat))
j=$(COLL_BENCH=$coll_bench PEER_MPI=$peer_mpi PEER_GLOO=$peer_gloo E2E_OUT=$out \
	E2E_MIN=$smin E2E_MAX=$smax E2E_FACTOR=$sfac E2E_ITERS=$iters E2E_WARMUP=1 E2E_CHECK=1 E2E_REPEAT=$repeat \
	E2E_TIMEOUT=$((job_limit / repeat / 2)) E2E_TOPO_ALGOS="$topo_algos" E2E_OMPI_ALGOS="$ompi_algos" \
	E2E_GLOO_ALGOS="$gloo_algos" E2E_ORDERS="slurm names" E2E_TPN=$tpn \
	timeout 10 sbatch --parsable -J e2e -N "$nodes" --ntasks-per-node="$tpn" -t $((job_limit / 60)) \
	-o "$out/job.out" "$here/e2e_job.sh")
[ -n "$j" ] || { rc=1; die "sbatch -N $nodes failed"; }
echo "bench_e2e: sbatch -N $nodes --ntasks-per-node=$tpn $here/e2e_job.sh: job $j (Slurm $slurm_ver)"
bench_job_wait "$j" "$job_limit"
[ -s "$out/results.jsonl" ] || { rc=1; die "no results"; }
wrong=false
grep -q "wrong elements\|WRONG" "$out/job.out" && wrong=true
if [ "$wrong" = true ] || grep -q "^FAILED" "$out/job.out"; then
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
# topoplace's hierarchical as the library runs it (pipelined or in one piece, as the plan
# chose by the same model; the job's TOPOPLACE_COLL_SEGMENT); the peers' rings in one piece
predict() { # HOSTS BYTES ALGO [SEGMENT] -> seconds or null
	"$topoplace" cost --fabric "$work/fabric.calibrated.json" --hosts "$1" --bytes "$2" \
		--algo "$3" --gpus-per-host "$tpn" --segment "${4:-0}" --json 2>/dev/null |
		jq '.seconds' 2>/dev/null || echo null
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
	seg=0
	[ "$impl" = topoplace ] && seg=${TOPOPLACE_COLL_SEGMENT:-1048576}
	[ -z "$model" ] || p=$(predict "$hosts" "$bytes" "$model" "$seg")
	jq -c --argjson r "$ratio" --argjson p "${p:-null}" --arg m "$model" \
		'. + {uplink_ratio: $r, predicted_s: $p, predicted_algo: (if $m == "" then null else $m end),
		      measured_over_predicted: (if $p == null or $p == 0 then null else (.seconds / $p) end)}' \
		<<<"$line" >>"$work/results.jsonl"
done <"$out/results.jsonl"
doc=$(jq -s --argjson g "$rate_gbps" --arg v "$slurm_ver" --argjson tpn "$tpn" --arg pl "$plan_order" --arg sl "$slurm_order" \
	--arg nm "$name_order" --argjson n "$repeat" --argjson w "$wrong" '{format: "topoplace-coll-bench/1",
	  host_link_gbps: $g, slurm: $v, tasks_per_node: $tpn, checked: true, checks_passed: ($w | not), repeats: $n, orders: {plan: $pl, slurm: $sl, names: $nm}, results: .}' \
	"$work/results.jsonl")
# The comparisons, round by round: topoplace's own choice (auto; its best forced algorithm when
# auto did not run, as with --quick, and then named so) against each peer's default, its best
# forced algorithm (the one with the highest mean over the rounds) against each peer's best
# forced one; each ratio's mean over the rounds +- its standard error.
doc=$(jq '
  def best(f): [.results[] | select(f)] | max_by(.busbw_gbps);
  def mean: add / length;
  def se: if length < 2 then null
          else (mean as $m | (map((. - $m) * (. - $m)) | add) / (length - 1) | sqrt) / (length | sqrt) end;
  # t(0.975, n - 1): the verdict'"'"'s multiplier of the standard error (2 from 30 rounds on)
  def tq(n): [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
              2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074,
              2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045][n - 2] // 2;
  # topoplace'"'"'s best forced algorithm at bytes b: the highest mean over the rounds
  def best_algo(b): [.results[] | select(.impl == "topoplace" and .algo != "auto" and .bytes == b)]
                    | group_by(.algo) | max_by(map(.busbw_gbps) | add / length) | .[0].algo;
  . as $d | ([.results[] | .rep // 1] | unique) as $reps |
  . + {comparisons: [
    [.results[] | select(.bytes >= 16777216) | .bytes] | unique[] as $b |
    ("default", "forced") as $kind | ("openmpi", "gloo") as $p | ("names", "slurm") as $o |
    ($d | best_algo($b)) as $ba |
    [$reps[] as $k |
     ($d | best(.impl == "topoplace" and .algo == $ba and .bytes == $b and (.rep // 1) == $k)) as $t |
     (if $kind == "forced" then $t
      else (($d | best(.impl == "topoplace" and .algo == "auto" and .bytes == $b and (.rep // 1) == $k)) // $t)
      end) as $mine |
     ($d | best(.impl == $p and .order == $o and .bytes == $b and (.rep // 1) == $k and
                (if $kind == "default" then .algo == "default" else .algo != "default" end))) as $x |
     select($mine != null and $x != null and $x.busbw_gbps > 0) |
     {ratio: ($mine.busbw_gbps / $x.busbw_gbps), mine: $mine.busbw_gbps, peer: $x.busbw_gbps,
      mine_algo: $mine.algo, peer_algo: $x.algo}] as $rs |
    select($rs | length > 0) |
    ([$rs[].ratio] | mean) as $m | ([$rs[].ratio] | se) as $s |
    {bytes: $b, kind: $kind, peer: $p, order: $o, rounds: ($rs | length),
     topoplace: ([$rs[].mine_algo] | unique | join(",")),
     peer_algo: ([$rs[].peer_algo] | unique | join(",")),
     topoplace_busbw_gbps: ([$rs[].mine] | mean), peer_busbw_gbps: ([$rs[].peer] | mean),
     ratio_mean: $m, ratio_se: $s,
     t: (if $s == null then null else tq($rs | length) end),
     verdict: (if $s == null then null elif $m - tq($rs | length) * $s > 1 then "faster"
               elif $m + tq($rs | length) * $s < 1 then "slower" else "tie" end)}]}' <<<"$doc")
[ -z "$json" ] || { printf '%s\n' "$doc" >"$json" && echo "bench_e2e: results in $json"; }

# ---- the comparison ----
printf '%s\n' "$doc" | jq -r '
  def mb(x): "\(x * 1000 | round) Mb/s";
  def r2(x): (x * 100 | round) as $c | "\($c / 100 | floor).\($c % 100 | tostring | if length < 2 then "0" + . else . end)";
  "\nbench_e2e: Slurm \(.slurm), job of \(.results[0].hosts) nodes x \(.tasks_per_node) task(s), up-link \(.results[0].uplink_ratio):1,"
    + " \(.repeats) round\(if .repeats == 1 then "" else "s" end), every sum checked"
    + "\(if .checks_passed then "" else " (A CHECK FAILED: see the job output)" end); busbw at >= 16 MiB,"
    + " topoplace from the plan against each peer on the same hosts (topoplace / peer, mean"
    + " +- standard error over the rounds; faster or slower beyond t(0.975, rounds - 1) of them):",
  (.comparisons[] |
   "  \(.bytes / 1048576) MiB \(.peer) \(if .kind == "default" then "default" else "best forced (\(.peer_algo))" end),"
     + " \(.order) order: \(mb(.peer_busbw_gbps)) vs topoplace \(if .kind == "default" and .topoplace != "auto"
                                                             then "\(.topoplace) (its best forced: no auto run)"
                                                             else .topoplace end) \(mb(.topoplace_busbw_gbps)):"
     + " \(r2(.ratio_mean))x"
     + (if .ratio_se == null then " (one round: no error bar)"
        else " +- \(r2(.ratio_se)) \(.verdict)" end)),
  "\nbench_e2e: cost model (calibrated fabric, 383/400 of the shaped rates): measured / predicted,"
    + " mean over the rounds (range)",
  ([.results[] | select(.predicted_s != null)] | group_by([.impl, .algo, .order, .bytes])[] |
   (map(.measured_over_predicted)) as $q |
   "  \(.[0].impl) \(.[0].algo)\(if .[0].predicted_algo != .[0].algo then " (as \(.[0].predicted_algo))" else "" end)"
     + " order \(.[0].order) \(.[0].bytes / 1048576) MiB: measured \(map(.seconds) | add / length * 1000 | round) ms,"
     + " predicted \(.[0].predicted_s * 1000 | round) ms, ratio \(r2($q | add / length))"
     + (if ($q | length) > 1 then " (\(r2($q | min))-\(r2($q | max)))" else "" end))'
exit $rc
