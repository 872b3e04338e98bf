#!/bin/bash
# Convergence of contrib/examples/ddp_train.py on this host (issue 10): no Slurm, no namespaces;
# HOSTS x RANKS ranks over loopback from a plan `topoplace plan` makes for HOSTS hosts x RANKS
# GPUs on a generated 2-leaf fabric (hosts interleaved over the leaves, so hierarchical runs
# compress between the two level-1 groups). Same model, data and seed for every run; one JSON
# line per run (ddp_train.py's) in FILE. Step times here are loopback times on a shared CPU: the
# emulated fabric's figures come from tests/bench/bench_ddp.sh.
#
#   bench_ddp_local.sh [--json FILE] [--hosts N] [--ranks-per-host R] [--port P] [--]
#                      RUN [RUN ...]  (a RUN is NAME[:ddp_train option,option,...]; commas for
#                      spaces; the options given after RUNs with --args go to every run)
#   --args "OPTS" ddp_train.py options for every run (default "--steps 200 --hidden 512
#                 --batch 16 --bucket-mb 0.25")
#
#   bench_ddp_local.sh dense 1bit-hier:--compressor,1bit 1bit-b64:--compressor,1bit,--block,64
#   bench_ddp_local.sh --args "--steps 1000 --hidden 256 --batch 16 --bucket-mb 0.25 --seed 1" dense \
#       ef:--compressor,1bit,--hook-momentum noef:--compressor,1bit,--hook-momentum,--no-error-feedback
#   bench_ddp_local.sh --args "--steps 200 --hidden 512 --batch 16 --bucket-mb 0.25 --seed 1" dense \
#       hier:--compressor,topk,--hook-momentum,--start-iter,10 \
#       flat:--compressor,topk,--hook-momentum,--start-iter,10,--flat \
#       lrw:--compressor,topk,--hook-momentum,--start-iter,10,--lr-warmup,20
# Environment: TOPOPLACE, TP_BUILDDIR (SRCDIR/build), TP_PYTHON (/usr/bin/python3),
# TOPOPLACE_COLL_LIB (default the build tree's library), TP_RANK_TIMEOUT (seconds each rank
# may run, default 1200).
set -u
here=$(cd "$(dirname "$0")" && pwd)
srcdir=${TP_SRCDIR:-$(cd "$here/../.." && pwd)}
builddir=${TP_BUILDDIR:-$srcdir/build}
topoplace=${TOPOPLACE:-$builddir/cli/topoplace}
py=${TP_PYTHON:-/usr/bin/python3}
lib=${TOPOPLACE_COLL_LIB:-$builddir/coll/.libs/libtopoplace-coll.so}
json="" hosts=4 rph=2 port=$((24000 + $$ % 2000))
common="--steps 200 --hidden 512 --batch 16 --bucket-mb 0.25"
die() { echo "bench_ddp_local: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--json) json=$2; shift 2 ;;
	--hosts) hosts=$2; shift 2 ;;
	--ranks-per-host) rph=$2; shift 2 ;;
	--port) port=$2; shift 2 ;;
	--args) common=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/^set -u/d' -e 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (try --help)" ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || die "no run given (try --help)"
"$py" -c 'import torch' 2>/dev/null || { echo "bench_ddp_local: $py cannot import torch: skipped"; exit 77; }
[ -x "$topoplace" ] || die "$topoplace not built"
[ -f "$lib" ] || die "$lib not built"
[ $((hosts % 2)) -eq 0 ] || die "--hosts $hosts: a multiple of the 2 leaves"

tmp=$(mktemp -d /tmp/bench_ddp_local.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$topoplace" fabric generate fat-tree --leaves 2 --spines 1 --hosts-per-leaf $((hosts / 2)) \
	--gpus-per-host "$rph" --interleave -o "$tmp/f.json" >/dev/null || die "fabric generate failed"
"$topoplace" plan --fabric "$tmp/f.json" --nodes "node[001-$(printf %03d "$hosts")]" --json \
	--no-predict -o "$tmp/p.json" >/dev/null || die "plan failed"
world=$((hosts * rph)) rc=0
export OMP_NUM_THREADS=1 PYTHONPATH=$srcdir/bindings/torch${PYTHONPATH:+:$PYTHONPATH}
export TOPOPLACE_COLL_LIB=$lib MASTER_ADDR=127.0.0.1 WORLD_SIZE=$world
# ddp_train.py takes a rank from TOPOPLACE_RANK or SLURM_PROCID first: run
# from inside a Slurm step (srun --pty bash), every rank was that task's
unset TOPOPLACE_RANK TOPOPLACE_LOCAL_RANK TOPOPLACE_WORLD_SIZE TOPOPLACE_PLAN \
	TOPOPLACE_STEP TOPOPLACE_SET SLURM_PROCID SLURM_NTASKS SLURM_LOCALID
for run in "$@"; do
	name=${run%%:*} args=
	[ "$name" = "$run" ] || args=$(echo "${run#*:}" | tr , ' ')
	backend=topoplace
	case " $args " in *" --backend "*) backend= ;; esac
	port=$((port + 4))
	pids=""
	for r in $(seq 0 $((world - 1))); do
		# shellcheck disable=SC2086
		RANK=$r MASTER_PORT=$port timeout "${TP_RANK_TIMEOUT:-1200}" "$py" "$srcdir/contrib/examples/ddp_train.py" \
			${backend:+--backend $backend} --plan "$tmp/p.json" $common $args --name "$name" \
			--json "$tmp/r.jsonl" >"$tmp/$r.out" 2>&1 &
		pids="$pids $!"
	done
	fail=0
	for p in $pids; do wait "$p" || fail=1; done
	if [ $fail -ne 0 ]; then
		echo "bench_ddp_local: $name failed:"; grep -v 'warn' "$tmp"/*.out | tail -5
		rc=1
		continue
	fi
	grep '^ddp_train' "$tmp/0.out"
done
[ -z "$json" ] || [ ! -s "$tmp/r.jsonl" ] || cat "$tmp/r.jsonl" >>"$json"
exit $rc
