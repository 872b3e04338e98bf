#!/bin/bash
# What splitting a host's data by NIC rate buys (topoplace plan
# --nics-by-rate) on hosts whose NICs do not all carry the same, measured
# with libtopoplace-coll on emulated hosts.
#
# Two hosts (network namespaces), each rail one veth cable between them,
# shaped with tbf on both ends at RATE. --case half (default): 2 ranks a
# host, each on its own NIC, rail 1 at half RATE (node002's second NIC at
# half width, as the fabric JSON written here says): evenly every rank
# carries a quarter of the data across and the slow rail sets the pace;
# weighted (rank weights 1024 512) the slow rail carries a third of a
# host's share. --case shared: 4 ranks a host on 3 NICs (as the SuperPOD
# dump's hosts that lost one of their 4 cables), ranks 0 and 1 sharing
# mlx5_0: evenly that NIC carries half the data, weighted (512 512 1024
# 1024) each NIC a third. --case ring: 2 ranks a host, each on its own
# NIC, every rail at RATE: the even plan's ring against its hierarchical
# all-reduce (the library's ring crosses between the hosts on one NIC
# pair, the last rank's to the next host's first; the hierarchical
# schedule carries each rank's shard on its own NIC), "even" below
# standing for ring and "weighted" for hierarchical, the model's ratio
# the plan's ring / hierarchical predictions at 1 GiB.
# topoplace-coll-bench runs the hierarchical
# all-reduce from the even and the weighted plan of the same hosts,
# TOPOPLACE_COLL_HCA_ADDRS putting each rank's connections on its NIC's
# interface. The two plans alternate for ROUNDS rounds; per round the
# time of the size (median of the slowest rank over ITERS iterations)
# and the ratio even / weighted; the mean ratio +- standard error over the
# rounds, the cost model's ratio of the two plans' hierarchical
# predictions at 1 GiB (topoplace plan, on the same fabric) and one JSON
# line ({"format":"topoplace-rail-split-bench/1", "case", "rounds",
# "bytes", "rate", "ratio_mean", "ratio_se", "model_ratio", "even_s":[..],
# "weighted_s":[..]}, also to --json FILE).
#
#   bench_rail_split.sh [--case half|shared|ring] [--rounds N (3)]
#                       [--rate R (400mbit)] [--bytes B (32M)] [--iters N (5)]
#                       [--json FILE]
#
# Root (namespaces, tc). Exit 77 without root, ip or tc; 1 when a run
# fails; 0 otherwise (the figure is reported, not judged).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${TP_SRCDIR:-$(cd "$here/../.." && pwd)}
build=${TP_BUILDDIR:-$top/build}
topoplace=${TOPOPLACE:-$build/cli/topoplace}
bench=$build/coll/topoplace-coll-bench
rounds=3 rate=400mbit bytes=32M iters=5 json="" case_=half
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--bytes) bytes=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--json) json=$2; shift 2 ;;
	--case) case_=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench_rail_split: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
case $case_ in
half | shared | ring) ;;
*) echo "bench_rail_split: --case takes half, shared or ring, not '$case_'" >&2; exit 2 ;;
esac
case $rate in
*[0-9]mbit) half=$(( ${rate%mbit} / 2 ))mbit ;;
*) echo "bench_rail_split: --rate takes N mbit (e.g. 400mbit), not '$rate'" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "bench_rail_split: needs root (namespaces); skipped"; exit 77; }
command -v ip >/dev/null && command -v tc >/dev/null ||
	{ echo "bench_rail_split: needs ip and tc; skipped"; exit 77; }
[ -x "$bench" ] && [ -x "$topoplace" ] ||
	{ echo "bench_rail_split: build first ($bench, $topoplace)"; exit 77; }

work=$(mktemp -d /tmp/tp_railsplit.XXXXXX)
ns_a=tprs-a-$$ ns_b=tprs-b-$$
cleanup() {
	ip netns del "$ns_a" 2>/dev/null
	ip netns del "$ns_b" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
die() { echo "bench_rail_split: $*" >&2; exit 1; }

# The fabric: node001 and node002 on one leaf (the emulation has no
# up-link). half: 2 GPUs and 2 NICs each (rail 0 and 1), node002's mlx5_1
# cabled at half width. shared: 4 GPUs and 3 NICs each, every cable at
# RATE (as the SuperPOD dump's hosts that lost one of 4 cables: two ranks
# share a NIC).
case $case_ in
half | ring) g=2 nics=2 ;;
shared) g=4 nics=3 ;;
esac
"$topoplace" fabric generate fat-tree --leaves 1 --spines 1 --hosts-per-leaf 2 \
	--gpus-per-host $g --nics-per-host $nics -o "$work/clean.json" || die "fabric generate failed"
if [ "$case_" = half ]; then
	python3 - "$work/clean.json" "$work/fabric.json" <<'EOF' || die "fabric edit failed"
import json, sys
d = json.load(open(sys.argv[1]))
ca = [i for i, c in enumerate(d["cas"]) if c["desc"] == "node002 mlx5_1"]
assert len(ca) == 1, "no node002 mlx5_1"
n = 0
for l in d["links"]:
    for e in (0, 3):
        if l[e] == "ca" and l[e + 1] == ca[0]:
            l[6] //= 2
            n += 1
assert n == 1
json.dump(d, open(sys.argv[2], "w"))
EOF
else
	cp "$work/clean.json" "$work/fabric.json"
fi
"$topoplace" plan --fabric "$work/fabric.json" --nodes node00[1-2] --json \
	-o "$work/even.json" || die "plan failed"
"$topoplace" plan --fabric "$work/fabric.json" --nodes node00[1-2] --nics-by-rate \
	--json -o "$work/weighted.json" || die "plan --nics-by-rate failed"
[ "$case_" = ring ] && cp "$work/even.json" "$work/weighted.json"
[ "$case_" = ring ] || grep -q rank_weights "$work/weighted.json" ||
	die "the weighted plan has no rank weights"

# Two hosts, a cable per rail: rail r is veth ra<->rb, 10.203.r.1 / .2;
# in the half case rail 1 at half the rate.
ip netns add "$ns_a" && ip netns add "$ns_b" || die "ip netns add failed"
for ns in "$ns_a" "$ns_b"; do ip -n "$ns" link set lo up; done
hca_a="" hca_b=""
for r in $(seq 0 $((nics - 1))); do
	ip link add "r${r}a$$" netns "$ns_a" type veth peer name "r${r}b$$" netns "$ns_b" ||
		die "veth failed"
	ip -n "$ns_a" link set "r${r}a$$" name "rail$r"
	ip -n "$ns_b" link set "r${r}b$$" name "rail$r"
	ip -n "$ns_a" addr add "10.203.$r.1/24" dev "rail$r"
	ip -n "$ns_b" addr add "10.203.$r.2/24" dev "rail$r"
	hca_a="$hca_a${hca_a:+,}mlx5_$r=10.203.$r.1" hca_b="$hca_b${hca_b:+,}mlx5_$r=10.203.$r.2"
	rr=$rate
	[ "$case_" = half ] && [ "$r" = 1 ] && rr=$half
	for ns in "$ns_a" "$ns_b"; do
		ip -n "$ns" link set "rail$r" up
		tc -n "$ns" qdisc add dev "rail$r" root tbf rate "$rr" burst 64kb latency 50ms ||
			die "tc failed"
	done
	ip netns exec "$ns_a" ping -c 1 -W 2 "10.203.$r.2" >/dev/null || die "rail $r does not ping"
done

# One run of a plan (ALGO, default hierarchical): rank 0 prints; the time
# of the largest size.
port=$((23000 + $$ % 2000))
run_plan() {
	local plan=$1 out=$2 algo=${3:-hierarchical} pids="" rc=0
	port=$((port + 1))
	for rank in $(seq 0 $((2 * g - 1))); do
		local ns=$ns_a hca=$hca_a
		[ $rank -ge $g ] && ns=$ns_b hca=$hca_b
		TOPOPLACE_COLL_HCA_ADDRS=$hca \
			ip netns exec "$ns" "$bench" --plan "$plan" --rank $rank \
			--master 10.203.0.1:$port --algo "$algo" --min-bytes "$bytes" \
			--max-bytes "$bytes" --iters "$iters" --warmup 1 --timeout 120 \
			>"$out.$rank" 2>&1 &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p" || rc=1; done
	[ $rc = 0 ] || { cat "$out".* >&2; die "a rank of $plan failed"; }
	awk '!/^#/ && $1 ~ /^[0-9]+$/ {t = $2} END {if (t == "") exit 1; print t / 1e6}' "$out.0"
}

even_s="" weighted_s="" ratios=""
if [ "$case_" = half ]; then
	echo "# half: 2 hosts x 2 ranks, a NIC each; rail 0 $rate, rail 1 $half; hierarchical, $bytes"
elif [ "$case_" = ring ]; then
	echo "# ring: 2 hosts x 2 ranks, a NIC each, every rail $rate; the even plan's ring (even_s) and hierarchical (weighted_s), $bytes"
else
	echo "# shared: 2 hosts x 4 ranks on 3 NICs (ranks 0 and 1 share mlx5_0), every rail $rate; hierarchical, $bytes"
fi
printf "%6s %12s %12s %8s\n" round even_s weighted_s ratio
for i in $(seq 1 "$rounds"); do
	ea=hierarchical
	[ "$case_" = ring ] && ea=ring
	e=$(run_plan "$work/even.json" "$work/e$i" $ea) || die "no time from the even plan"
	w=$(run_plan "$work/weighted.json" "$work/w$i") || die "no time from the weighted plan"
	r=$(awk -v e="$e" -v w="$w" 'BEGIN {printf "%.3f", e / w}')
	printf "%6d %12.4f %12.4f %8s\n" "$i" "$e" "$w" "$r"
	even_s="$even_s${even_s:+,}$e" weighted_s="$weighted_s${weighted_s:+,}$w"
	ratios="$ratios $r"
done
# the model's ratio: the two plans' hierarchical predictions at 1 GiB
model=$(python3 - "$work/even.json" "$work/weighted.json" "$case_" <<'EOF'
import json, sys
e, w = (json.load(open(f))["predicted"] for f in sys.argv[1:3])
e = e["ring" if sys.argv[3] == "ring" else "hierarchical"][-1]
print("%.3f" % (e / w["hierarchical"][-1]))
EOF
) || die "no predictions in the plans"
echo "$ratios" | awk -v c="$case_" -v m="$model" -v rounds="$rounds" -v bytes="$bytes" -v rate="$rate" \
	-v es="$even_s" -v ws="$weighted_s" -v json="$json" '{
	for (i = 1; i <= NF; i++) { s += $i; ss += $i * $i }
	n = NF; mean = s / n
	se = n > 1 ? sqrt((ss - n * mean * mean) / (n - 1) / n) : 0
	printf "even / weighted time: %.3f +- %.3f (%d rounds); cost model (1 GiB): %s\n", mean, se, n, m
	line = sprintf("{\"format\":\"topoplace-rail-split-bench/1\",\"case\":\"%s\",\"rounds\":%d,\"bytes\":\"%s\",\"rate\":\"%s\",\"ratio_mean\":%.4f,\"ratio_se\":%.4f,\"model_ratio\":%s,\"even_s\":[%s],\"weighted_s\":[%s]}", c, n, bytes, rate, mean, se, m, es, ws)
	print line
	if (json != "") print line > json
}'
