#!/bin/sh
# Build topoplace with clang, ASan and UBSan into build-san/ and run the
# unit tests there, then a brief libFuzzer run (TP_FUZZ_SECONDS, default
# 3 s) of every reader and the compressed message decoder. One tree
# serves both (libFuzzer needs clang); it needs no CUDA (the main build
# and distcheck compile the kernels). A tree configured otherwise before
# is configured again. -Werror as the main build: clang warns where gcc
# does not (-Wstring-concatenation). Writes the fuzz run's exit status to
# build-san/fuzz.rc (the unit tests' results are their .trs files);
# exits non-zero when the build, a unit test or the fuzz run failed.
#   --build-only  configure and build the tree, the unit tests and the
#                 fuzz targets, run nothing (contrib/run-tests.sh runs
#                 that at nice 19 beside make check-slurm, whose daemons
#                 leave most of the CPU idle, and the tests after it: they
#                 have sub-second timeouts a starved process would miss)
set -eu
case ${1:-} in
-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
esac
build_only=false
[ "${1:-}" != --build-only ] || { build_only=true; shift; }
[ $# -eq 0 ] || { echo "run-sanitizers.sh: unknown argument '$1' (try --help)" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
san="$top/build-san"
t0=$(date +%s)
mkdir -p "$san"
# nothing of an earlier run may count for this one
$build_only || rm -f "$san/fuzz.rc" $(find "$san/tests" -name '*.trs' 2>/dev/null) 2>/dev/null || true
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh >/dev/null)
grep -q -e '--enable-fuzz --enable-werror' "$san/config.status" 2>/dev/null || rm -f "$san/Makefile"
(cd "$san" && [ -f Makefile ] || "$top/configure" -q CC=clang --enable-fuzz --enable-werror --with-cuda=no \
	CFLAGS="-O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	LDFLAGS="-fsanitize=address,undefined")
make -C "$san" -j2 >/dev/null
# the unit tests' programs (TESTS empty: built, none run) and the fuzz targets
make -C "$san/tests" -j2 check TESTS= >/dev/null
make -C "$san/tests" fuzz-build >/dev/null
if $build_only; then
	printf '(ASan + UBSan build: %d s)\n' $(($(date +%s) - t0))
	exit 0
fi
status=0
make -C "$san/tests" check -j2 TESTS='$(UNIT_TESTS)' \
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 || status=1
rc=0
TP_FUZZ_SECONDS=${TP_FUZZ_SECONDS:-3} TP_FUZZ_WORK="$san/fuzz-corpus" \
	sh "$top/tests/fuzz/run.sh" "$san/tests/fuzz" "$top/tests" || rc=$?
echo "$rc" >"$san/fuzz.rc"
[ "$rc" -eq 0 ] || status=1
printf '(ASan + UBSan: %d s)\n' $(($(date +%s) - t0))
exit $status
