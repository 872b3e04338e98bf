#!/bin/bash
# The batch script of the end-to-end proof (issue 9): submitted by tests/bench/bench_e2e.sh and
# tests/integration/slurm_e2e.sh with `sbatch -N N --ntasks-per-node=T` (T = E2E_TPN, default 1)
# into the mini-cluster on the emulated fabric (contrib/slurm-cluster.sh --emu-fabric). On the
# allocation Slurm gave it, T ranks a node (a node's ranks consecutive, as Slurm's block
# distribution numbers them):
#   1. topoplace-coll-bench through libtopoplace-coll, T tasks a node, from what the SPANK
#      plugin hands each task (TOPOPLACE_PLAN, TOPOPLACE_RANK, ...; no --plan, no --rank, no
#      --master): the plan's ring order, each of E2E_TOPO_ALGOS;
#   2. Open MPI's and Gloo's peer benchmarks on the same hosts, launched through Slurm too
#      (mpirun's plm/slurm starts its daemons with srun; Gloo T srun tasks a node), in each
#      order of E2E_ORDERS (Open MPI with shared memory between a node's ranks, vader, and TCP
#      between nodes; Gloo TCP everywhere, its only transport):
#        slurm  the order this job's Slurm lists (SLURM_JOB_NODELIST): with topology/topoplace
#               loaded Slurm ranks its node table in fabric order, so this is already leaf order
#        names  the host names sorted, which is what Slurm lists without topoplace's topology
#               plugin (the names alternate leaves: interleaved)
# Environment (all optional but the programs): COLL_BENCH, PEER_MPI, PEER_GLOO (empty: skipped),
# E2E_OUT (directory shared by the nodes; default the submit directory), E2E_MIN, E2E_MAX,
# E2E_FACTOR, E2E_ITERS, E2E_WARMUP, E2E_CHECK (1: --check), E2E_TIMEOUT (s per program),
# E2E_TPN (tasks a node, 1), E2E_TOPO_ALGOS (ring hierarchical tree auto), E2E_OMPI_ALGOS (default ring),
# E2E_GLOO_ALGOS (default halving_doubling), E2E_ORDERS (slurm names), E2E_DATA_IF (eth0),
# E2E_REPEAT (1: rounds of every program in turn, each line tagged "rep": 1..N, so that a
# machine's slow minute falls on every implementation alike).
# Output: the tables on stdout; E2E_OUT/results.jsonl (topoplace-coll-bench/1 result lines,
# "order" as above, "plan" for topoplace; the peers only know plan|slurm: they are told "slurm",
# their table headings and JSON lines relabelled); E2E_OUT/orders (the host lists); exit 1 when a
# program failed or a --check found a wrong element.
set -u
out=${E2E_OUT:-$PWD}
min=${E2E_MIN:-16M} max=${E2E_MAX:-64M} factor=${E2E_FACTOR:-4}
iters=${E2E_ITERS:-3} warmup=${E2E_WARMUP:-1} tmo=${E2E_TIMEOUT:-300}
check=
[ "${E2E_CHECK:-0}" = 1 ] && check=--check
topo_algos=${E2E_TOPO_ALGOS:-ring hierarchical tree auto}
ompi_algos=${E2E_OMPI_ALGOS:-default ring}
gloo_algos=${E2E_GLOO_ALGOS:-default halving_doubling}
orders=${E2E_ORDERS:-slurm names}
dif=${E2E_DATA_IF:-eth0}
repeat=${E2E_REPEAT:-1}
case $repeat in '' | *[!0-9]* | 0) echo "E2E_REPEAT: a whole number >= 1"; exit 1 ;; esac
tpn=${E2E_TPN:-1}
case $tpn in '' | *[!0-9]* | 0) echo "E2E_TPN: a whole number >= 1"; exit 1 ;; esac
json=$out/results.jsonl
failed=0
n=$SLURM_JOB_NUM_NODES
np=$((n * tpn))
sizes="--min-bytes $min --max-bytes $max --factor $factor --iters $iters --warmup $warmup"

slurm_order=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | tr '\n' ' ')
name_order=$(echo "$slurm_order" | tr ' ' '\n' | grep . | sort | tr '\n' ' ')
echo "job $SLURM_JOB_ID: $n nodes, $tpn task(s) a node, SLURM_JOB_NODELIST=$SLURM_JOB_NODELIST"
echo "order slurm: $slurm_order"
echo "order names: $name_order"
{
	echo "slurm $slurm_order"
	echo "names $name_order"
} >"$out/orders"

# label ORDER FILE: the JSON lines with the order they ran in ("" keeps theirs) and the
# round, into results.jsonl
label() {
	[ -s "$2" ] && jq -c --arg o "$1" --argjson r "$rep" 'if $o == "" then . else .order = $o end | .rep = $r' \
		"$2" >>"$json"
	rm -f "$2"
}
fail() {
	echo "FAILED: $*"
	failed=$((failed + 1))
}

# 1. topoplace from the plan alone. Every task records what the SPANK plugin handed it, so
#    the harness can check the plan; the first step's tasks also show their ring position.
srun --ntasks-per-node="$tpn" sh -c 'echo "spank $(hostname) procid=$SLURM_PROCID rank=${TOPOPLACE_RANK:-unset} world=${TOPOPLACE_WORLD_SIZE:-unset} plan=${TOPOPLACE_PLAN:-unset}"; [ -z "${TOPOPLACE_PLAN:-}" ] || [ "${TOPOPLACE_RANK:-}" != 0 ] || cp "$TOPOPLACE_PLAN" "$0/plan.json"' "$out" |
	sort -t= -k3,3n
order_of() { if [ "$1" = slurm ]; then echo "$slurm_order"; else echo "$name_order"; fi; }

run_topoplace() {
	for a in $topo_algos; do
		echo "== topoplace $a, order plan (TOPOPLACE_PLAN from the SPANK plugin)"
		srun --ntasks-per-node="$tpn" "$COLL_BENCH" --algo "$a" $sizes --timeout "$tmo" $check \
			--json "$out/topo.jsonl" || fail "topoplace $a"
		label "" "$out/topo.jsonl"
	done
}

run_openmpi() {
	# 2a. Open MPI: plm/slurm launches through srun; the sequential mapper puts rank i on the
	#     i-th line of the hostfile, which is how the order is chosen inside an allocation (a
	#     host's T ranks on T consecutive lines).
	if [ -n "${PEER_MPI:-}" ]; then
		export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
		for o in $orders; do
			order_of "$o" | tr ' ' '\n' | grep . | awk -v t="$tpn" '{ for (i = 0; i < t; i++) print }' \
				>"$out/hostfile.$o"
			for a in $ompi_algos; do
				echo "== openmpi $a, order $o"
				mpirun -np "$np" --mca rmaps seq --hostfile "$out/hostfile.$o" \
					--mca btl vader,tcp,self --mca btl_tcp_if_include "$dif" \
					--mca oob_tcp_if_include "$dif" --mca pml ob1 --bind-to none \
					--mca mpi_yield_when_idle 1 \
					"$PEER_MPI" --algo "$a" --order slurm $sizes --timeout "$tmo" $check \
					--json "$out/ompi.jsonl" </dev/null | sed "s/, order slurm,/, order $o,/"
				[ "${PIPESTATUS[0]}" -eq 0 ] || fail "openmpi $a $o"
				label "$o" "$out/ompi.jsonl"
			done
		done
	fi
}

run_gloo() {
	# 2b. Gloo: T srun tasks a node; each finds its rank from its host's position in the order
	#     (times T, plus its local id), binds its data address, and meets the others in a
	#     FileStore on the shared disk.
	if [ -n "${PEER_GLOO:-}" ]; then
		for o in $orders; do
			for a in $gloo_algos; do
				echo "== gloo $a, order $o"
				st=$out/gloo-store.$o.$a
				rm -rf "$st"
				mkdir -p "$st"
				# shellcheck disable=SC2016
				srun --ntasks-per-node="$tpn" bash -c '
					h=$(hostname) r=0
					for x in $1; do [ "$x" = "$h" ] && break; r=$((r + 1)); done
					r=$((r * $2 + SLURM_LOCALID))
					addr=$(getent ahostsv4 "$h" | awk "{print \$1; exit}")
					shift 2
					exec "$@" --rank "$r" --addr "$addr"' sh "$(order_of "$o")" "$tpn" \
					"$PEER_GLOO" --size "$np" --store "$st" --algo "$a" --order slurm $sizes \
					--timeout "$tmo" $check --json "$out/gloo.jsonl" | sed "s/, order slurm,/, order $o,/"
				[ "${PIPESTATUS[0]}" -eq 0 ] || fail "gloo $a $o"
				rm -rf "$st"
				label "$o" "$out/gloo.jsonl"
			done
		done
	fi
}

# Each round in another order (topoplace, Open MPI, Gloo; then from the
# next one on), so that neither the machine's drift nor going first
# falls on one implementation only.
progs="topoplace openmpi gloo"
for rep in $(seq 1 "$repeat"); do
	[ "$repeat" -eq 1 ] || echo "==== round $rep of $repeat: $progs"
	for prog in $progs; do
		"run_$prog"
	done
	progs="${progs#* } ${progs%% *}"
done
echo "e2e job: $failed failure(s)"
[ "$failed" -eq 0 ]
