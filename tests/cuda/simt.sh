#!/bin/sh
# Run the GPU checks (tests/gpu/gpu_check.cu: every kernel of
# cuda/kernels.cu against the CPU path, random and adversarial inputs,
# aligned and misaligned) on the CPU, with the kernels compiled by the host
# C++ compiler against simt/cuda_runtime.h - a thread per CUDA thread, so
# the kernels' lane, warp and block logic is checked on every CI run, with
# or without nvcc or a GPU. Sizes up to TP_SIMT_MAX_N (default 4099).
# TP_SIMT_FLAGS adds compiler flags: "-g -fsanitize=address,undefined"
# checks the kernels' memory accesses as compute-sanitizer would (clean on
# 2026-12-03, about 20 seconds). Needs a C++20 compiler (std::barrier);
# skips (77) without one.
src=${TP_SRCDIR:?}
b=${TP_BUILDDIR:?}
cxx=${CXX:-g++}
cc=${CC:-cc}
command -v "$cxx" >/dev/null 2>&1 || { echo "SKIP: no $cxx"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-simt.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
# k<<<grid, block, shm, stream>>>(args) -> simt_launch(k, simt_cfg(...), args)
for f in cuda/kernels.cu tests/gpu/gpu_check.cu; do
	perl -0pe 's/(\w+(?:<[^<>;]*>)?)<<<(.*?)>>>\(/simt_launch($1, simt_cfg($2), /gs' \
		"$src/$f" >"$tmp/$(basename "$f" .cu).cpp" || exit 99
done
inc="-I$b -I$src/tests/cuda/simt -I$src/common -I$src/cuda"
for f in cuda/kref.c common/alloc.c common/cnum.c common/error.c; do
	$cc -std=gnu11 -O1 -ffp-contract=off ${TP_SIMT_FLAGS:-} $inc -c "$src/$f" \
		-o "$tmp/$(basename "$f" .c).o" || exit 99
done
if ! echo '#include <barrier>' | $cxx -std=c++20 -x c++ -fsyntax-only - 2>/dev/null; then
	echo "SKIP: $cxx has no C++20 <barrier>"
	exit 77
fi
$cxx -std=c++20 -O1 -ffp-contract=off -pthread -Wno-unknown-pragmas \
	${TP_SIMT_FLAGS:-} $inc \
	"$tmp/kernels.cpp" "$tmp/gpu_check.cpp" "$tmp/kref.o" "$tmp/alloc.o" \
	"$tmp/cnum.o" "$tmp/error.o" -o "$tmp/simt_check" || exit 99
"$tmp/simt_check" --quick --no-bench --max-n "${TP_SIMT_MAX_N:-4099}"
