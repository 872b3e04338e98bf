#!/bin/bash
# All-reduce on the emulated fabric (contrib/emu-fabric.sh): topoplace's collectives in plan
# order against Open MPI and Gloo in the order Slurm lists the hosts and in plan order, side by
# side in one run (issue 9). Root; not part of `make check` (the full matrix takes long).
#
#   bench_coll.sh [--json FILE] [--quick] [--sizes LIST] [--ratio R ...] [--impl LIST]
#                 [--ranks-per-host N] [--one-host-ranks LIST] [--algos LIST] [--iters N] [--keep]
#   bench_coll.sh --summary FILE...
#
#   --json FILE        write {"format":"topoplace-coll-bench/1","host_link_gbps":x,"results":[...]}
#   --quick            ratio 4, sizes 64 KiB..16 MiB, few iterations, one forced algorithm per
#                      peer: about 2-3 minutes
#   --sizes LIST       bytes, comma or space separated (default 4 KiB..64 MiB by 4; suffixes K, M)
#   --ratio R          up-link oversubscription, repeatable (default 4 2 0); 0 = all ranks on one
#                      host (shared memory / loopback, uplink_ratio 0 in the JSON)
#   --impl LIST        any of openmpi,gloo,topoplace (default all)
#   --ranks-per-host N ranks per host on the fabric (default 1)
#   --one-host-ranks LIST  rank counts for ratio 0 (default "8"; the issue's goal uses 2,4,8)
#   --algos LIST       topoplace's algorithms (default ring,hierarchical,tree,auto)
#   --iters N          timed iterations of the large sizes (default 3; small sizes get 3x)
#   --keep             leave the fabric up and keep the work directory
#   --summary FILE...  run nothing: print the goal ratios of earlier --json files together
#
# Environment: TOPOPLACE (CLI), TOPOPLACE_COLL_BENCH (default BUILD/coll/topoplace-coll-bench),
# TP_BUILDDIR (default SRCDIR/build), HOST_RATE (400mbit), TPE_HOSTS (8), TPE_LEAVES (2).
# Each case is one program per rank; rank 0 appends JSON lines, which this script tags with the
# up-link ratio. busbw in Gbit/s everywhere.
set -u

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${TP_SRCDIR:-$(cd "$here/../.." && pwd)}
builddir=${TP_BUILDDIR:-$srcdir/build}
emu=$srcdir/contrib/emu-fabric.sh
topoplace=${TOPOPLACE:-$builddir/cli/topoplace}
coll_bench=${TOPOPLACE_COLL_BENCH:-$builddir/coll/topoplace-coll-bench}
peer_mpi=$builddir/tests/bench/peer_mpi
peer_gloo=$builddir/tests/bench/peer_gloo
export TPE_PREFIX=${TPE_PREFIX:-tpe-}
export HOST_RATE=${HOST_RATE:-400mbit}
nhosts=${TPE_HOSTS:-8}
nleaves=${TPE_LEAVES:-2}

json="" quick=0 sizes="" ratios="" impls="openmpi,gloo,topoplace" rph=1 one_host_ranks="8"
iters=3 keep=0 summary_files="" topo_algos_opt=""
die() { echo "bench_coll: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--json) json=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--sizes) sizes=$2; shift 2 ;;
	--ratio) ratios="$ratios $2"; shift 2 ;;
	--impl) impls=$2; shift 2 ;;
	--ranks-per-host) rph=$2; shift 2 ;;
	--one-host-ranks) one_host_ranks=$(echo "$2" | tr , ' '); shift 2 ;;
	--algos) topo_algos_opt=$(echo "$2" | tr , ' '); shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--keep) keep=1; shift ;;
	--summary) shift; summary_files="$*"; break ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1 (try --help)" ;;
	esac
done

# What each peer runs. Quick: each peer's default and the forced algorithm that won in plan
# order in the measurements of the project's design notes (../shared/DESIGN.md, outside the
# repository): ring for Open MPI, halving-doubling for Gloo.
ompi_algos="default basic_linear nonoverlapping recursive_doubling ring segmented_ring rabenseifner"
gloo_algos="default ring_chunked halving_doubling"
topo_algos=${topo_algos_opt:-ring hierarchical tree auto}
for a in $topo_algos; do
	case $a in ring | hierarchical | tree | auto) ;; *) die "--algos: unknown algorithm '$a'" ;; esac
done
case_timeout=900
small_iters=$((iters * 3)) large_iters=$iters warmup=1
if [ "$quick" = 1 ]; then
	[ -n "$sizes" ] || sizes="65536 1048576 16777216"
	[ -n "$ratios" ] || ratios=4
	ompi_algos="default ring"
	gloo_algos="default halving_doubling"
	small_iters=5 large_iters=2 case_timeout=120
fi
[ -n "$sizes" ] || sizes="4K 16K 64K 256K 1M 4M 16M 64M"
[ -n "$ratios" ] || ratios="4 2 0"
sizes=$(for s in $(echo "$sizes" | tr , ' '); do
	case $s in
	*[Kk]) echo $((${s%?} * 1024)) ;;
	*[Mm]) echo $((${s%?} * 1048576)) ;;
	*[Gg]) echo $((${s%?} * 1073741824)) ;;
	*[!0-9]* | '') die "--sizes: '$s' is not a size" ;;
	*) echo "$s" ;;
	esac
done | sort -n | uniq | tr '\n' ' ')

summarise() { # JSON document on stdin
	jq -r '
  def best(f): [.results[] | select(f)] | max_by(.busbw_gbps);
  def r(a; b): if a == null or b == null or b.busbw_gbps == 0 then "n/a"
               else "\(a.busbw_gbps / b.busbw_gbps * 100 | round / 100)x" end;
  def g(x): if x == null then "-" else "\(x.busbw_gbps * 1000 | round) Mb/s (\(x.algo))" end;
  . as $d |
  "\nsummary (busbw at 4:1, >= 16 MiB; goals: topoplace/plan >= 3x each peer default/slurm,"
    + " >= 1x its best forced/plan):",
  ([.results[] | select(.uplink_ratio == 4 and .bytes >= 16777216) | .bytes] | unique[] as $b |
   ("openmpi", "gloo") as $p | select([$d.results[] | select(.impl == $p)] | length > 0) |
   ($d | best(.impl == "topoplace" and .uplink_ratio == 4 and .bytes == $b)) as $t |
   ($d | best(.impl == $p and .algo == "default" and .order == "slurm" and .uplink_ratio == 4 and .bytes == $b)) as $dflt |
   ($d | best(.impl == $p and .algo != "default" and .order == "plan" and .uplink_ratio == 4 and .bytes == $b)) as $forced |
   ($d | best(.impl == $p and .order == "plan" and .uplink_ratio == 4 and .bytes == $b)) as $pplan |
   "  \($b / 1048576) MiB \($p): default/slurm \(g($dflt)), best forced/plan \(g($forced));"
     + " topoplace \(g($t)): \(r($t; $dflt)) of default, \(r($t; $forced)) of best forced;"
     + " plan order alone gives \($p) \(r($pplan; $dflt))"),
  "summary (topoplace at >= 64 MiB vs the host link; goal >= 90%):",
  ([.results[] | select(.impl == "topoplace" and .bytes >= 67108864 and .uplink_ratio > 0)] |
   if length == 0 then "  n/a (no topoplace result >= 64 MiB)" else .[] |
   "  \(.algo) \(.bytes / 1048576) MiB \(.uplink_ratio):1: \(.busbw_gbps / $d.host_link_gbps * 100 | round)%" end),
  "summary (topoplace <= 64 KiB, hierarchical or tree vs ring; goal >= 1.3x at 16 ranks on 8 hosts):",
  ([.results[] | select(.impl == "topoplace" and .bytes <= 65536 and .uplink_ratio > 0) |
    [.uplink_ratio, .ranks, .bytes]] | unique[] as [$u, $n, $b] |
   ($d | best(.impl == "topoplace" and .uplink_ratio == $u and .ranks == $n and .bytes == $b and
              (.algo == "hierarchical" or .algo == "tree"))) as $h |
   ($d | best(.impl == "topoplace" and .uplink_ratio == $u and .ranks == $n and .bytes == $b and
              .algo == "ring")) as $ring |
   "  \($u):1 \($n) ranks \($b / 1024) KiB: \(r($h; $ring)) (\(g($h)) vs ring \(g($ring)))")'
}

# --summary FILE...: the goal ratios of earlier runs' JSON files together.
if [ -n "$summary_files" ]; then
	# shellcheck disable=SC2086
	jq -s '{format: "topoplace-coll-bench/1", host_link_gbps: .[0].host_link_gbps,
		results: [.[].results[]]}' $summary_files | summarise
	exit
fi
[ "$(id -u)" -eq 0 ] || { echo "bench_coll: needs root (network namespaces): skipped"; exit 77; }
for t in ip tc jq bc timeout; do command -v $t >/dev/null || die "$t missing (contrib/install-deps.sh)"; done
[ -x "$topoplace" ] || die "$topoplace not built"
want() { case ",$impls," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
if want openmpi && { [ ! -x "$peer_mpi" ] || ! command -v mpirun >/dev/null; }; then
	echo "bench_coll: $peer_mpi or mpirun missing: Open MPI skipped"
	impls=${impls//openmpi/}
fi
if want gloo && [ ! -x "$peer_gloo" ]; then
	echo "bench_coll: $peer_gloo missing (libgloo-dev): Gloo skipped"
	impls=${impls//gloo/}
fi
if want topoplace && [ ! -x "$coll_bench" ]; then
	echo "bench_coll: $coll_bench not built yet (set TOPOPLACE_COLL_BENCH): topoplace skipped"
	impls=${impls//topoplace/}
fi

impls=$(echo "$impls" | tr , '\n' | grep . | paste -sd, -)
[ -n "$impls" ] || die "nothing to run"

work=$(mktemp -d "${TMPDIR:-/tmp}/tpe-bench.XXXXXX")
results=$work/results.jsonl
: >"$results"
failed=0
cleanup() {
	if [ "$keep" = 0 ]; then
		"$emu" stop >/dev/null 2>&1
		[ "$failed" -eq 0 ] && rm -rf "$work"
	fi
	[ "$failed" -eq 0 ] || echo "bench_coll: logs of the failed cases in $work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Bands of sizes, one program run each: "MIN MAX FACTOR ITERS" for consecutive geometric runs,
# small sizes (<= 1 MiB) with more iterations than large ones.
bands() {
	local lim=1048576 s prev="" first="" f="" band it
	for band in small large; do
		prev="" first="" f=""
		it=$small_iters
		[ $band = large ] && it=$large_iters
		for s in $sizes; do
			if [ $band = small ] && [ "$s" -gt $lim ]; then continue; fi
			if [ $band = large ] && [ "$s" -le $lim ]; then continue; fi
			if [ -z "$first" ]; then
				first=$s
			elif [ -z "$f" ] && [ $((s % prev)) -eq 0 ]; then
				f=$((s / prev))
			elif [ -z "$f" ] || [ "$s" -ne $((prev * f)) ]; then
				echo "$first $prev ${f:-2} $it"
				first=$s f=""
			fi
			prev=$s
		done
		[ -n "$first" ] && echo "$first $prev ${f:-2} $it"
	done
}

where() { if [ "$1" = 0 ]; then echo "one host"; else echo "uplink $1:1"; fi; }

host_addr() { awk -v h="$1" '$1 == h {print $3}' "/run/topoplace-emu/${TPE_PREFIX%-}/hosts"; }

# tag RATIO FILE: add the up-link ratio to the case's JSON lines and keep them.
tag() {
	[ -s "$2" ] || return 0
	jq -c --argjson r "$1" '. + {uplink_ratio: $r}' "$2" >>"$results"
}

# show BAND LOG: rank 0's table (the header only from the first band).
show() {
	if [ "$1" = 0 ]; then cat "$2"; else grep -v -e '^#' -e '^ *bytes ' "$2"; fi
}

case_fail() { # DESC RC LOG...
	local d=$1 rc=$2
	shift 2
	failed=$((failed + 1))
	echo "   FAILED ($d: exit $rc)"
	tail -n 5 "$@" 2>/dev/null | sed 's/^/   | /'
}

# run_ompi ORDER ALGO RATIO HOSTS...: one mpirun inside the first host's namespace.
run_ompi() {
	local order=$1 algo=$2 ratio=$3 np hf=$work/hostfile.$$ b=0 rc mca
	shift 3
	local first=$1 cj=$work/case.jsonl
	: >"$cj"
	if [ "$ratio" = 0 ]; then
		np=$one_np
		mca="--host $first:$np --mca btl vader,self"
	else
		np=$(($# * rph))
		for h in "$@"; do echo "$h slots=$rph"; done >"$hf"
		# shared memory between ranks of a host (--ranks-per-host > 1), as topoplace's
		# host phases have; TCP on the fabric's interface between hosts
		mca="--hostfile $hf --map-by slot --mca btl vader,tcp,self --mca btl_tcp_if_include eth0"
		mca="$mca --mca oob_tcp_if_include eth0"
	fi
	echo "== openmpi $algo, order $order, $(where "$ratio"), $np ranks"
	while read -r min max f it; do
		# shellcheck disable=SC2086
		"$emu" exec "$first" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
			timeout -k 10 "$case_timeout" mpirun -np "$np" $mca \
			--mca plm_rsh_agent "/run/topoplace-emu/${TPE_PREFIX%-}/rsh-agent" \
			--mca pml ob1 --bind-to none --mca mpi_yield_when_idle 1 \
			"$peer_mpi" --algo "$algo" --order "$order" --min-bytes "$min" --max-bytes "$max" \
			--factor "$f" --iters "$it" --warmup "$warmup" --timeout "$case_timeout" \
			--json "$cj" </dev/null >"$work/ompi.log" 2>&1
		rc=$?
		if [ $rc -ne 0 ]; then
			case_fail "openmpi $algo $order" $rc "$work/ompi.log"
			cp "$work/ompi.log" "$work/fail.openmpi.$algo.$order.$ratio.log"
			break
		fi
		show $b "$work/ompi.log"
		b=$((b + 1))
	done < <(bands)
	tag "$ratio" "$cj"
}

# launch_ranks TAG CMD_FN HOSTS...: one process per rank (rank r on the r-th host slot), wait
# for all; CMD_FN RANK NP HOST prints the command. Rank 0's stdout is the table.
launch_ranks() {
	local tag=$1 fn=$2 np r=0 h pids="" rc=0 p
	shift 2
	np=$(($# * rph))
	[ "$ratio_now" = 0 ] && np=$one_np
	for h in "$@"; do
		for _ in $(seq 1 "$rph"); do
			[ $r -lt "$np" ] || break
			# shellcheck disable=SC2046
			"$emu" exec "$h" timeout -k 10 "$case_timeout" $($fn $r "$np" "$h") \
				</dev/null >"$work/$tag.$r.log" 2>&1 &
			pids="$pids $!"
			r=$((r + 1))
		done
	done
	# One host: every rank on it.
	while [ $r -lt "$np" ]; do
		# shellcheck disable=SC2046
		"$emu" exec "$1" timeout -k 10 "$case_timeout" $($fn $r "$np" "$1") \
			</dev/null >"$work/$tag.$r.log" 2>&1 &
		pids="$pids $!"
		r=$((r + 1))
	done
	for p in $pids; do wait "$p" || rc=$?; done
	return $rc
}

gloo_cmd() { # RANK NP HOST (band in min max f it, store in gstore, algo/order in galgo/gorder)
	echo "$peer_gloo --rank $1 --size $2 --store $gstore --addr $(host_addr "$3")" \
		"--algo $galgo --order $gorder --min-bytes $min --max-bytes $max --factor $f" \
		"--iters $it --warmup $warmup --timeout $case_timeout --json $cj"
}

run_gloo() { # ORDER ALGO RATIO HOSTS...
	gorder=$1 galgo=$2
	local ratio=$3 b=0 rc
	shift 3
	cj=$work/case.jsonl
	: >"$cj"
	echo "== gloo $galgo, order $gorder, $(where "$ratio")"
	while read -r min max f it; do
		gstore=$work/store.$b.$RANDOM
		mkdir -p "$gstore"
		launch_ranks gloo gloo_cmd "$@"
		rc=$?
		rm -rf "$gstore"
		if [ $rc -ne 0 ]; then
			case_fail "gloo $galgo $gorder" $rc "$work"/gloo.*.log
			break
		fi
		show $b "$work/gloo.0.log"
		b=$((b + 1))
	done < <(bands)
	tag "$ratio" "$cj"
}

topo_cmd() { # RANK NP HOST
	echo "$coll_bench --plan $plan --rank $1 --master $master --algo $talgo" \
		"--min-bytes $min --max-bytes $max --factor $f --iters $it --warmup $warmup" \
		"--timeout $case_timeout --json $cj"
}

run_topo() { # ALGO RATIO HOSTS(plan order)...
	talgo=$1
	local ratio=$2 b=0 rc
	shift 2
	cj=$work/case.jsonl
	: >"$cj"
	echo "== topoplace $talgo, order plan, $(where "$ratio")"
	while read -r min max f it; do
		master="$(host_addr "$1"):$((29500 + (RANDOM % 2000)))"
		launch_ranks topo topo_cmd "$@"
		rc=$?
		if [ $rc -ne 0 ]; then
			case_fail "topoplace $talgo" $rc "$work"/topo.*.log
			break
		fi
		show $b "$work/topo.0.log"
		b=$((b + 1))
	done < <(bands)
	tag "$ratio" "$cj"
}

start_fabric() { # RATIO
	local r=$1 gph=$rph
	[ "$r" = 0 ] && gph=$one_np
	"$emu" --hosts "$nhosts" --leaves "$nleaves" --uplink-ratio "$r" --gpus-per-host "$gph" \
		--fabric-out "$work/fabric.$r.json" start || die "emulated fabric did not start"
}

# Plan order: the plan's hosts by rank.
make_plan() { # RATIO HOSTLIST...
	local r=$1 gph=$rph
	shift
	[ "$r" = 0 ] && gph=$one_np
	plan=$work/plan.$r.$gph.json
	"$topoplace" plan --fabric "$work/fabric.$r.json" --nodes "$(echo "$@" | tr ' ' ,)" \
		--gpus-per-host "$gph" --json -o "$plan" || die "topoplace plan failed"
	plan_hosts=$(jq -r '.hosts | sort_by(.first_rank) | .[].name' "$plan" | tr '\n' ' ')
}

echo "bench_coll: sizes $sizes; ratios$(printf ' %s' $ratios); impls $impls; work $work"
for ratio in $ratios; do
	ratio_now=$ratio
	if [ "$ratio" = 0 ]; then
		for one_np in $one_host_ranks; do
			start_fabric 0
			slurm_hosts=$("$emu" hosts | head -n 1)
			make_plan 0 $slurm_hosts
			# shellcheck disable=SC2086
			for a in $ompi_algos; do want openmpi && run_ompi plan "$a" 0 $slurm_hosts; done
			# shellcheck disable=SC2086
			for a in $gloo_algos; do want gloo && run_gloo plan "$a" 0 $slurm_hosts; done
			# shellcheck disable=SC2086
			for a in $topo_algos; do want topoplace && run_topo "$a" 0 $plan_hosts; done
		done
		continue
	fi
	one_np=0
	start_fabric "$ratio"
	slurm_hosts=$("$emu" hosts | tr '\n' ' ')
	# shellcheck disable=SC2086
	make_plan "$ratio" $slurm_hosts
	echo "bench_coll: uplink $ratio:1; Slurm order: $slurm_hosts; plan order: $plan_hosts"
	for order in slurm plan; do
		hosts=$slurm_hosts
		[ $order = plan ] && hosts=$plan_hosts
		# shellcheck disable=SC2086
		for a in $ompi_algos; do want openmpi && run_ompi $order "$a" "$ratio" $hosts; done
		# shellcheck disable=SC2086
		for a in $gloo_algos; do want gloo && run_gloo $order "$a" "$ratio" $hosts; done
	done
	# shellcheck disable=SC2086
	for a in $topo_algos; do want topoplace && run_topo "$a" "$ratio" $plan_hosts; done
done

link_gbps=$(echo "scale=6; $(echo "$HOST_RATE" | sed -e 's/gbit/*1000000/' -e 's/mbit/*1000/' \
	-e 's/kbit//') / 1000000" | bc)
doc=$(jq -s --argjson g "$link_gbps" \
	'{format: "topoplace-coll-bench/1", host_link_gbps: $g, results: .}' "$results")
[ -n "$json" ] && printf '%s\n' "$doc" >"$json" && echo "bench_coll: results in $json"

# The issue's goal ratios this run can compute (one line each; n/a where a side is missing).
printf '%s\n' "$doc" | summarise
[ "$failed" -eq 0 ] || { echo "bench_coll: $failed case(s) failed"; exit 1; }
