#!/bin/sh
# The CUDA objects carry what cuda/cuda.am asks for: a .nv_fatbin section
# (objdump -h) whose images (read by fatbin_list: nvcc compresses them, so
# `strings` cannot see the PTX) are sm_80, sm_90 and sm_100 cubins and
# compute_100 PTX - in the kernels' object and in libtopoplace-coll.so.
# Skips (77) in a build without nvcc.
[ -n "$TP_NVCC" ] || { echo "SKIP: built without nvcc"; exit 77; }
b=${TP_BUILDDIR:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-fatbin.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
for obj in "$b/cuda/.libs/kernels.o" "$b/coll/.libs/libtopoplace-coll.so"; do
	if [ ! -f "$obj" ]; then
		echo "FAIL: $obj missing"
		fail=1
		continue
	fi
	if ! objdump -h "$obj" | grep -q ' \.nv_fatbin '; then
		echo "FAIL: $obj has no .nv_fatbin section"
		fail=1
		continue
	fi
	objcopy -O binary --only-section=.nv_fatbin "$obj" "$tmp/s.bin" ||
		exit 99
	imgs=$("$b/tests/cuda/fatbin_list" "$tmp/s.bin" | sort -u | tr '\n' ' ')
	for a in sm_80 sm_90 sm_100 compute_100; do
		case " $imgs" in
		*" $a "*) ;;
		*) echo "FAIL: $obj lacks $a (has: $imgs)"; fail=1 ;;
		esac
	done
	echo "ok: $obj: .nv_fatbin with $imgs"
done
exit $fail
