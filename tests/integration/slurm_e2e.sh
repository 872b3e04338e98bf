#!/bin/sh
# The end-to-end chain of issue 9, CI-sized: a real Slurm 24.11 mini-cluster
# (contrib/slurm-cluster.sh --emu-fabric) whose 4 slurmd namespaces are the
# hosts of an emulated 2-leaf fabric (names alternate leaves, 400 Mbit/s
# tbf-shaped host links, up-link 2:1; Slurm's traffic on a separate unshaped
# interface), with topology/topoplace in native mode and the SPANK plugin,
# both from the build tree, reading the fabric JSON emu-fabric.sh wrote:
#   - placement by topoplace: a 2-node job lands inside one leaf, on the
#     hosts `topoplace place` picks (stock Slurm would take node[001-002],
#     one per leaf)
#   - a 4-node job (tests/bench/e2e_job.sh): every task gets TOPOPLACE_PLAN
#     and a TOPOPLACE_RANK equal to its host's ring position; the plan's
#     ring is `topoplace plan`'s for the job's nodes and visits the leaves
#     in order (one crossing per leaf)
#   - topoplace-coll-bench runs through libtopoplace-coll from that
#     environment alone (ring, hierarchical, tree), --check on: every
#     element of every all-reduce checked; Open MPI (and Gloo, when built)
#     run their peer benchmarks on the same allocation in the order Slurm
#     lists, --check on too
#   - each result lands as topoplace-coll-bench/1 JSON
# Needs root, the 24.11 build, the native and SPANK plugins for 24.11
# (configure --with-slurm24; for 22.05: Debian's Slurm and both plugins
# built against it), Open MPI and the peer_mpi benchmark; exit 77 if not,
# 99 when what the build makes is missing: topoplace-coll-bench, or a peer
# benchmark configure found the library for (make check says which in
# TP_HAVE_MPI and TP_HAVE_GLOO, yes or no). Network and port: TP_E2E_NET
# (10.206.0; the data net is the next /24), TP_E2E_PORT (6957),
# namespaces TP_E2E_PREFIX (tpx-). TP_E2E_SLURM=22 runs the same chain on
# Debian's Slurm 22.05 with the 22.05-compatible plugins (slurm22_e2e.sh).
. "$(dirname "$0")/lib.sh"

GEN=${TP_E2E_SLURM:-24}
need_slurm "$GEN" mpirun tc
need_plugins topology_topoplace spank_topoplace
COLL_BENCH=$builddir/coll/topoplace-coll-bench
PEER_MPI=$builddir/tests/bench/peer_mpi
PEER_GLOO=$builddir/tests/bench/peer_gloo
[ -x "$COLL_BENCH" ] || error_all "$COLL_BENCH not built (coll/ always builds it)"
if [ ! -x "$PEER_MPI" ]; then
	[ "${TP_HAVE_MPI:-no}" != yes ] ||
		error_all "$PEER_MPI not built, though configure found Open MPI (make all builds it)"
	skip_all "$PEER_MPI not built (TP_HAVE_MPI=${TP_HAVE_MPI:-unset}: configure found no Open MPI)"
fi
if [ ! -x "$PEER_GLOO" ]; then
	[ "${TP_HAVE_GLOO:-no}" != yes ] ||
		error_all "$PEER_GLOO not built, though configure found Gloo (make all builds it)"
	PEER_GLOO=
fi
NET=${TP_E2E_NET:-10.206.0}
PORT=${TP_E2E_PORT:-6957}
EPREFIX=${TP_E2E_PREFIX:-tpx-}
dir=$tmp/cluster
out=$tmp/out
mkdir -p "$out"

t0=$(date +%s)
cluster_trap 'slurm*.log' 'topoplace\|error\|fatal' 20

cat >"$tmp/topoplace.conf" <<'EOF'
FabricFile=@DIR@/fabric.json
EOF
cat >"$tmp/plugstack.conf" <<EOF
optional @DIR@/plugins/spank_topoplace.so fabric=@DIR@/fabric.json basedir=@DIR@/tprun/%h mode=auto
EOF
echo "PlugStackConfig=$dir/plugstack.conf" >"$tmp/extra.conf"

prefix_opt=
[ "$GEN" = 24 ] && prefix_opt="--slurm-prefix $PREFIX"
echo "# $CLUSTER start $prefix_opt --topology topoplace --nodes 4 --emu-fabric --leaves 2 --uplink-ratio 2 --net $NET --port $PORT"
# shellcheck disable=SC2086 # prefix_opt: empty or two words
if ! timeout 90 "$CLUSTER" start $prefix_opt --topology topoplace \
	--plugin-dir "$PLUGIN_DIR" --nodes 4 --gpus-per-node 1 --dir "$dir" --timeout 40 \
	--net "$NET" --port "$PORT" --emu-fabric --leaves 2 --uplink-ratio 2 --emu-prefix "$EPREFIX" \
	--extra-file "$tmp/topoplace.conf" --extra-file "$tmp/plugstack.conf" \
	--slurm-conf-extra "$tmp/extra.conf" >"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start"
	finish
fi
ok "cluster on the emulated fabric up in $(($(date +%s) - t0)) s"
export SLURM_CONF=$dir/slurm.conf
mkdir -p "$dir/tprun"
fabric=$dir/fabric.json

# the fabric JSON matches the cabling: each host's leaf in the fabric is the
# leaf namespace its data link plugs into
"$TOPOPLACE" fabric hosts "$fabric" --json | jq -r '.[] | "\(.name) \(.leaves[0])"' >"$tmp/leafof"
wired=$(awk '{ printf "%s %s\n", $1, $4 }' "/run/topoplace-emu/${EPREFIX%-}/hosts" |
	sed 's/ leaf\([0-9]*\)$/ \1/' | while read -r h l; do printf '%s leaf%02d\n' "$h" $((l + 1)); done)
[ "$wired" = "$(cat "$tmp/leafof")" ] && ok "fabric JSON = emulated cabling ($(tr '\n' ' ' <"$tmp/leafof"))" ||
	bad "fabric JSON $(tr '\n' ' ' <"$tmp/leafof") vs wired $(echo "$wired" | tr '\n' ' ')"
leaf() { awk -v h="$1" '$1 == h { print $2 }' "$tmp/leafof"; }

wait_done() { # JOBID: wait (<= LIMIT s, default 60) until it left the queue
	i=0
	while [ $i -lt $((${2:-60} * 5)) ]; do
		# a client that timed out (loaded machine) says nothing: ask again
		if q=$(timeout 10 squeue -h -j "$1" -o %i 2>"$tmp/squeue.err"); then
			[ -z "$q" ] && return 0
		elif grep -q 'Invalid job id' "$tmp/squeue.err"; then
			return 0
		fi
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
field() { # JOBID KEY (asked again when the client fails: a loaded machine)
	for _ in 1 2 3 4; do
		timeout 10 scontrol show job "$1" >"$tmp/job.txt" 2>/dev/null && break
		sleep 0.5
	done
	tr ' ' '\n' <"$tmp/job.txt" | sed -n "s/^$2=//p" | head -1
}

# ---- placement: 2 nodes inside one leaf, as topoplace place says ----
want=$("$TOPOPLACE" place --fabric "$fabric" --request nodes=2 --json 2>/dev/null | jq -r '.hosts[]' | sort | tr '\n' ' ')
j=$(timeout 10 sbatch --parsable -J two -N 2 -o "$out/two.out" --wrap 'srun hostname')
[ -n "$j" ] || { bad "sbatch -N 2"; finish; }
wait_done "$j" || bad "job $j finished in 60 s"
nl=$(field "$j" NodeList)
got=$(timeout 10 scontrol show hostnames "$nl" | sort | tr '\n' ' ')
leaves=$(for h in $got; do leaf "$h"; done | sort -u | tr '\n' ' ')
echo "# 2-node job $j: NodeList=$nl (leaves: $leaves); topoplace place: $want"
[ "$(echo $leaves | wc -w)" -eq 1 ] && ok "2-node job inside one leaf ($nl on $leaves)" ||
	bad "2-node job spans leaves: $nl ($leaves)"
[ "$got" = "$want" ] && ok "2-node job on the hosts topoplace place picks" || bad "placed $got, topoplace place: $want"

# ---- the chain: plan handed, library runs from it, peers beside it ----
t1=$(date +%s)
j=$(COLL_BENCH=$COLL_BENCH PEER_MPI=$PEER_MPI PEER_GLOO=$PEER_GLOO E2E_OUT=$out \
	E2E_MIN=64K E2E_MAX=1M E2E_FACTOR=16 E2E_ITERS=2 E2E_WARMUP=1 E2E_CHECK=1 E2E_REPEAT=1 E2E_TIMEOUT=30 \
	E2E_TOPO_ALGOS="ring hierarchical tree" E2E_OMPI_ALGOS=default E2E_GLOO_ALGOS=default \
	E2E_ORDERS=slurm timeout 10 sbatch --parsable -J e2e -N 4 --ntasks-per-node=1 \
	-o "$out/e2e.out" "$srcdir/tests/bench/e2e_job.sh")
[ -n "$j" ] || { bad "sbatch -N 4 e2e_job.sh"; finish; }
wait_done "$j" 90 || bad "job $j finished in 90 s"
sed 's/^/#   /' "$out/e2e.out"
st=$(field "$j" JobState)
[ "$st" = COMPLETED ] && ok "4-node job $j COMPLETED in $(($(date +%s) - t1)) s (every program exited 0, --check on)" ||
	bad "4-node job $j: $st"
grep -q '^e2e job: 0 failure(s)' "$out/e2e.out" && ok "no program failed" || bad "$(grep -c '^FAILED' "$out/e2e.out") program(s) failed"
grep -q WRONG "$out/e2e.out" && bad "a --check found wrong elements" || ok "no wrong element reported"

# the plan each task got
nodes=$(field "$j" NodeList)
"$TOPOPLACE" plan --fabric "$fabric" --nodes "$nodes" --json >"$tmp/plan.json" 2>"$tmp/err" || bad "topoplace plan"
ring=$(jq -r '.ring[]' "$tmp/plan.json" | tr '\n' ' ')
[ -f "$out/plan.json" ] && [ "$(jq -c .ring "$out/plan.json")" = "$(jq -c .ring "$tmp/plan.json")" ] &&
	ok "the job's plan (rank 0's TOPOPLACE_PLAN): ring $ring = topoplace plan's" ||
	bad "the job's plan ring $(jq -c .ring "$out/plan.json" 2>/dev/null) vs topoplace plan $ring"
cross=$(for h in $ring; do leaf "$h"; done | awk 'NR == 1 { f = $1 } NR > 1 && $1 != p { c++ } { p = $1 }
	END { if (p != f) c++; print c + 0 }')
[ "$cross" -eq 2 ] && ok "the ring visits the leaves in order (2 leaf crossings in the cycle): $ring" ||
	bad "the ring crosses leaves $cross times: $ring"
grep '^spank ' "$out/e2e.out" >"$tmp/spank"
n=$(grep -c 'plan=/' "$tmp/spank")
[ "$n" -eq 4 ] && ok "all 4 tasks got TOPOPLACE_PLAN from the SPANK plugin" || bad "$n of 4 tasks got TOPOPLACE_PLAN"
badrank=0
for h in $ring; do
	pos=$(echo "$ring" | tr ' ' '\n' | grep -n "^$h\$" | cut -d: -f1)
	grep -q "^spank $h .* rank=$((pos - 1)) world=4 " "$tmp/spank" || badrank=$((badrank + 1))
done
[ "$badrank" -eq 0 ] && ok "TOPOPLACE_RANK = ring position, TOPOPLACE_WORLD_SIZE = 4 on every host" ||
	bad "TOPOPLACE_RANK/WORLD_SIZE wrong on $badrank host(s)"

# results, topoplace-coll-bench/1 lines
r=$out/results.jsonl
for a in ring hierarchical tree; do
	c=$(jq -c "select(.impl == \"topoplace\" and .algo == \"$a\" and .order == \"plan\" and .ranks == 4 and .hosts == 4)" "$r" 2>/dev/null | wc -l)
	[ "$c" -eq 2 ] && ok "topoplace $a from the plan: 2 sizes checked and timed" || bad "topoplace $a: $c result lines"
done
c=$(jq -c 'select(.impl == "openmpi" and .algo == "default" and .order == "slurm")' "$r" 2>/dev/null | wc -l)
[ "$c" -eq 2 ] && ok "Open MPI default on the same hosts in Slurm's order: 2 sizes" || bad "Open MPI: $c result lines"
if [ -n "$PEER_GLOO" ]; then
	c=$(jq -c 'select(.impl == "gloo" and .algo == "default" and .order == "slurm")' "$r" 2>/dev/null | wc -l)
	[ "$c" -eq 2 ] && ok "Gloo default on the same hosts in Slurm's order: 2 sizes" || bad "Gloo: $c result lines"
else
	echo "# peer_gloo not built: Gloo not run"
fi
jq -r 'select(.bytes == 1048576) | "# 1 MiB \(.impl) \(.algo) order \(.order): busbw \(.busbw_gbps * 1000 | round) Mbit/s"' "$r" 2>/dev/null
timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
