#!/bin/bash
# The batch script of tests/bench/bench_ddp.sh and tests/integration/slurm_ddp.sh: submitted with
# `sbatch -N H --ntasks-per-node=T` into the mini-cluster on the emulated fabric. On that one
# allocation it runs contrib/examples/ddp_train.py once per entry of DDP_RUNS, each an srun step
# over every task, in this order, and appends one JSON line per run to DDP_OUT/results.jsonl:
#   NAME:gloo                 torch DDP, torch's gloo all-reduce, ranks in Slurm's order
#   NAME:powersgd             torch's PowerSGD hook on gloo (its own default rank 1)
#   NAME:none                 DDP with no all-reduce (a hook that keeps each rank's gradient):
#                             the compute floor
#   NAME:topoplace[:ARGS]     the libtopoplace-coll hook, ranks from the SPANK plugin
#                             (TOPOPLACE_RANK); ARGS are ddp_train.py options, commas for spaces
#                             (e.g. topk-hier:topoplace:--compressor,topk)
# Per run: ddp_train.py's result line (final_loss, accuracy, step_s, uplink_bytes_lib) plus
# "uplink_bytes", the bytes both ends of the leaf up-link veth sent during the step (interface
# counters of up0 in the leaf namespaces DDP_LEAF_NS names), and "status": ok, failed (the
# step's exit and the last error line in "error") or unavailable (the library has no
# compression: after the first compressed run fails that way, the other compressed runs are
# not launched and are reported with the same reason).
# Environment: DDP_RUNS (required), DDP_ARGS (options for every run), DDP_OUT (shared directory,
# default the submit directory), DDP_PY (/usr/bin/python3), DDP_TRAIN (the script), DDP_LEAF_NS
# ("NS0 NS1": the leaf namespaces; empty: no interface counters), DDP_TIMEOUT (s per run, 600),
# DDP_DATA_IF (eth0), PYTHONPATH / TOPOPLACE_COLL_LIB (to find topoplace_coll).
set -u
out=${DDP_OUT:-$PWD}
py=${DDP_PY:-/usr/bin/python3}
train=${DDP_TRAIN:?}
tmo=${DDP_TIMEOUT:-600}
json=$out/results.jsonl
export OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=${DDP_DATA_IF:-eth0}
failed=0 unavailable=""

slurm_first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -1)
# rank 0 of the plan (TOPOPLACE_RANK 0) runs on the plan's first ring host
srun -N "$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 sh -c \
	'[ "${TOPOPLACE_RANK:-}" != 0 ] || cp "$TOPOPLACE_PLAN" "$0/plan.json"' "$out"
plan_first=$(jq -r '.ring[0]' "$out/plan.json" 2>/dev/null)
echo "job $SLURM_JOB_ID: $SLURM_NTASKS tasks on $SLURM_JOB_NODELIST; Slurm's first host $slurm_first," \
	"the plan's ${plan_first:-none}"

uplink() { # the bytes both ends of the up-link have sent so far
	local s=0 ns v
	for ns in ${DDP_LEAF_NS:-}; do
		v=$(ip netns exec "$ns" cat /sys/class/net/up0/statistics/tx_bytes 2>/dev/null) || return 1
		s=$((s + v))
	done
	echo "$s"
}

i=0
for run in $DDP_RUNS; do
	name=${run%%:*} rest=${run#*:}
	backend=${rest%%:*} args=
	[ "$rest" = "$backend" ] || args=$(echo "${rest#*:}" | tr , ' ')
	i=$((i + 1))
	compressed=0
	case " $args " in *" --compressor none "*) ;; *" --compressor "*) compressed=1 ;; esac
	base=$(jq -nc --arg n "$name" --arg b "$backend" --arg a "$args" '{name: $n, backend: $b, args: $a}')
	if [ "$compressed" = 1 ] && [ -n "$unavailable" ]; then
		echo "== $name: not run: $unavailable"
		jq -c --arg e "$unavailable" '. + {status: "unavailable", error: $e}' <<<"$base" >>"$json"
		continue
	fi
	master=$slurm_first
	[ "$backend" = topoplace ] && master=$plan_first
	echo "== $name: ddp_train.py --backend $backend $args ${DDP_ARGS:-} (MASTER_ADDR $master)"
	u0=$(uplink)
	rm -f "$out/run.json"
	# shellcheck disable=SC2086
	MASTER_ADDR=$master MASTER_PORT=$((29500 + 4 * i)) timeout "$tmo" \
		srun --kill-on-bad-exit=1 "$py" "$train" --backend "$backend" $args ${DDP_ARGS:-} \
		--name "$name" --json "$out/run.json" >"$out/run.out" 2>&1
	rc=$?
	u1=$(uplink)
	grep -v '^ *warnings.warn\|UserWarning' "$out/run.out" | tail -5 | sed 's/^/   /'
	ub=null
	[ -n "$u0" ] && [ -n "$u1" ] && ub=$((u1 - u0))
	if [ $rc -eq 0 ] && [ -s "$out/run.json" ]; then
		jq -c --argjson u "$ub" '. + {uplink_bytes: $u, status: "ok"}' "$out/run.json" >>"$json"
		continue
	fi
	# the most telling line: a C++ abort, else Python's exception, else srun's word
	err=$(grep -hE 'what\(\)|EnforceNotMet' "$out/run.out" | tail -1)
	[ -n "$err" ] || err=$(grep -hE '^[A-Za-z_.]*(Error|Exception|Unavailable):' "$out/run.out" | tail -1)
	[ $rc -ne 124 ] || err="no result after $tmo s (hung; killed)${err:+; $err}"
	[ -n "$err" ] || err=$(grep -h 'error' "$out/run.out" | tail -1)
	if grep -q CompressionUnavailable "$out/run.out"; then
		err=$(grep -o 'CompressionUnavailable: .*' "$out/run.out" | head -1)
		unavailable="the library has no compression, as run $name found ($err)"
		echo "   $err"
		jq -c --arg e "$err" '. + {status: "unavailable", error: $e}' <<<"$base" >>"$json"
		continue
	fi
	echo "FAILED: $name (exit $rc)"
	# PowerSGD is the peer under test: its failure is a result, not ours
	[ "$backend" = powersgd ] || failed=$((failed + 1))
	jq -c --arg e "exit $rc: $err" '. + {status: "failed", error: $e}' <<<"$base" >>"$json"
done
echo "ddp job: $failed failure(s)"
[ "$failed" -eq 0 ]
