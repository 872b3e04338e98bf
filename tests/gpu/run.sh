#!/bin/sh
# tests/gpu/run.sh - build and run the GPU checks and benchmark, in one
# command, from a source tree alone (no configure needed):
#
#   tests/gpu/run.sh [--json FILE] [--quick] [--no-bench] [--no-check]
#   tests/gpu/run.sh --build-only    (compile everything, run nothing: works
#                                     without a GPU)
#
# Checks every tp_cuda.h kernel against the CPU path on random and
# adversarial inputs up to 2^28 elements (--quick: up to 2^20), then
# prints the benchmark JSON ({"format":"topoplace-gpu-bench/1", ...}) on
# stdout and into FILE. Everything else goes to stderr.
# Exit: 0 passed, 1 a check failed, 77 no nvcc or no GPU (cudaGetDeviceCount
# failing or 0), 99 build or setup error, 124 timed out (TP_GPU_TIMEOUT
# seconds for the run, default 480).
# Environment: NVCC or TP_NVCC (default: nvcc in PATH, /usr/local/cuda),
# CC (default cc), TMPDIR.
set -u
src=$(cd "$(dirname "$0")/../.." && pwd)
json=""
args=""
build_only=no
while [ $# -gt 0 ]; do
	case $1 in
	--json) json=$2; shift 2 ;;
	--build-only) build_only=yes; shift ;;
	--quick | --no-bench | --no-check) args="$args $1"; shift ;;
	*) echo "usage: $0 [--json FILE] [--quick] [--no-bench] [--no-check]" >&2; exit 99 ;;
	esac
done
nvcc=${NVCC:-${TP_NVCC:-}}
[ -n "$nvcc" ] || nvcc=$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
if [ ! -x "$nvcc" ]; then
	echo "SKIP: no nvcc" >&2
	exit 77
fi
cuda_home=$(dirname "$(dirname "$nvcc")")
if [ ! -f "$cuda_home/lib64/libcudart_static.a" ]; then
	# A wrapper (e.g. /usr/local/bin/nvcc): nvcc says where its toolkit is.
	top=$("$nvcc" --dryrun -x cu /dev/null -o /dev/null 2>&1 |
		sed -n 's/^#\$ TOP=//p' | head -n 1)
	[ -n "$top" ] && cuda_home=$(cd "$top" && pwd)
fi
if [ ! -f "$cuda_home/lib64/libcudart_static.a" ]; then
	echo "SKIP: no libcudart_static.a beside $nvcc" >&2
	exit 77
fi
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-gpu.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
cudart="-L$cuda_home/lib64 -lcudart_static -ldl -lpthread -lrt"

# A second to know whether there is a GPU at all, before building kernels.
$cc -I"$cuda_home/include" "$src/tests/gpu/gpu_probe.c" $cudart \
	-o "$tmp/probe" || exit 99
if [ $build_only = no ]; then
	"$tmp/probe"
	rc=$?
	[ $rc -eq 0 ] || exit $rc
fi

echo "building (nvcc: $nvcc)" >&2
t0=$(date +%s)
echo '/* gpu check build */' >"$tmp/config.h"
for f in cuda/kref.c common/alloc.c common/cnum.c common/error.c; do
	$cc -std=gnu11 -O2 -ffp-contract=off -I"$tmp" -I"$src/common" \
		-I"$src/cuda" -c "$src/$f" -o "$tmp/$(basename "$f" .c).o" || exit 99
done
gencode="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"
gencode="$gencode -gencode arch=compute_100,code=[sm_100,compute_100]"
"$nvcc" -std=c++17 -O3 --fmad=false $gencode -I"$tmp" -I"$src/common" \
	-I"$src/cuda" "$src/cuda/kernels.cu" "$src/tests/gpu/gpu_check.cu" \
	"$tmp/kref.o" "$tmp/alloc.o" "$tmp/cnum.o" "$tmp/error.o" \
	-o "$tmp/gpu_check" || exit 99
echo "built in $(($(date +%s) - t0)) s" >&2
[ $build_only = no ] || exit 0

timeout "${TP_GPU_TIMEOUT:-480}" "$tmp/gpu_check" $args >"$tmp/out.json"
rc=$?
cat "$tmp/out.json"
if [ -n "$json" ] && [ -s "$tmp/out.json" ]; then
	tail -n 1 "$tmp/out.json" >"$json" || exit 99
fi
exit $rc
