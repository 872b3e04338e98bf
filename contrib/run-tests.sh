#!/bin/sh
# Quick start, part 2: install what topoplace needs (Debian 12, as root),
# build with warnings as errors, and run the whole test suite:
#   1. make check        unit tests (CMocka/TAP) + integration tests
#                        (CLI on real fixtures, live discovery via ibsim)
#      make check-slurm  real Slurm clusters, 22.05 (Debian's) and 24.11
#                        (contrib/build-slurm.sh): slurmctld + 8 slurmd in
#                        network namespaces (contrib/slurm-cluster.sh)
#   2. one clang build with ASan+UBSan (contrib/run-sanitizers.sh): the
#      unit tests, then a brief libFuzzer run of every reader and the
#      compressed message decoder; its build runs at nice 19 beside make
#      check-slurm, whose daemons leave most of the CPU idle
#   3. make distcheck (its build runs tests/Makefile.am's DIST_TESTS), at
#      nice 19 after that build, beside check-slurm and the sanitizer
#      tests; its result is counted at the end
# Ends with one line "N passed, N failed, N skipped", after the reasons for
# the skips.
set -eu
case ${1:-} in
-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
esac
[ $# -eq 0 ] || { echo "run-tests.sh: takes no arguments (try --help)" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
"$top/contrib/install-deps.sh"
# Slurm 22.05 (Debian 12's) for the mini-cluster, and its source tree for
# the controller plugins (configure finds it in the fetch script's cache);
# Slurm 24.11 built into a private prefix for native mode (~2.5 min once).
"$top/contrib/install-slurm.sh"
"$top/contrib/fetch-slurm-src.sh" >/dev/null
"$top/contrib/build-slurm.sh"
./autogen.sh >/dev/null

pass=0 fail=0 skip=0
count() { # $1 = build dir: add up automake's per-test results
	for f in $(find "$1/tests" -name '*.trs'); do
		while read -r key val; do
			case "$key $val" in
			":test-result: PASS"|":test-result: XFAIL") pass=$((pass + 1)) ;;
			":test-result: SKIP") skip=$((skip + 1)) ;;
			":test-result: "*) fail=$((fail + 1)) ;;
			esac
		done < "$f"
	done
}
# Why tests skipped: fixture files found neither in ../shared/fixtures nor
# in tests/fixtures (tests/tp_test.h says so in the logs), and each skipped
# script's own reason (lib.sh's skip_all).
why_skipped() { # $1 = build dir
	nfix=$(find "$1/tests" -name '*.log' -exec grep -ho '^# fixture [^:]*: not in' {} + 2>/dev/null |
		sort -u | wc -l)
	[ "$nfix" -eq 0 ] || echo "skipped for $nfix fixture file(s) not in ../shared/fixtures nor tests/fixtures"
	for f in $(grep -l '^:test-result: SKIP' $(find "$1/tests" -name '*.sh.trs' -o -name '*.trs' | grep integration) 2>/dev/null); do
		echo "skipped $(basename "${f%.trs}"): $(grep -m1 -i 'skip' "${f%.trs}.log" | cut -c1-120)"
	done
}
# Why tests failed, so a CI log says it without the build tree: each
# failed test's failing lines (TAP's "not ok", the scripts' "FAIL - ")
# and the end of its log.
why_failed() { # $1 = build dir
	for f in $(grep -lE '^:test-result: (FAIL|ERROR|XPASS)' $(find "$1/tests" -name '*.trs') /dev/null 2>/dev/null); do
		log=${f%.trs}.log
		echo "--- failed: ${log#"$1"/tests/}"
		grep -a -e '^not ok' -e '^FAIL - ' "$log" | cut -c1-300 | head -n 20
		echo "--- its last lines:"
		tail -n 30 "$log" | cut -c1-300
	done
}
# each step's wall time, printed when the next one starts and at the end
t_start=$(date +%s) t_step=
step() {
	now=$(date +%s)
	[ -z "$t_step" ] || printf '(step: %d s)\n' $((now - t_step))
	t_step=$now
	[ $# -eq 0 ] || printf '\n=== %s\n' "$*"
}
status=0

step "build (-Werror) and make check"
BUILD_DIR="$top/build" "$top/contrib/build.sh" >/dev/null
rm -f $(find "$top/build/tests" -name '*.trs' 2>/dev/null) 2>/dev/null || true
make -C "$top/build" check -j2 || status=1

# Step 2's build (contrib/run-sanitizers.sh --build-only, its own tree
# build-san/) at nice 19 beside check-slurm: the mini-clusters' daemons
# mostly wait, and what they need of the CPU goes first. Its tests run
# after check-slurm at nice 0 (some have sub-second timeouts): what
# else runs then is at nice 19. That is step 3, make distcheck, after
# the sanitizer build in the same background job: the tarball's build
# runs the unit tests and the integration tests that read what it ships
# (tests/Makefile.am's DIST_TESTS; plain `make distcheck` runs them all),
# none that bounds a wall time, so a starved run only runs longer. Its
# make dist reads the built tree while check-slurm runs tests in it.
san="$top/build-san"
: "${TP_FUZZ_SECONDS:=3}"
mkdir -p "$san"
rm -f "$san/build.done" "$top/build/distcheck.rc"
nice -n 19 sh -c '
	"$1/contrib/run-sanitizers.sh" --build-only >"$2/build.log" 2>&1
	echo $? >"$2/build.done"
	t0=$(date +%s)
	make -C "$1/build" -j2 distcheck TESTS="\$(DIST_TESTS)" >"$1/build/distcheck.log" 2>&1
	rc=$?
	printf "(make distcheck: %d s, at nice 19)\n" $(($(date +%s) - t0)) >>"$1/build/distcheck.log"
	echo $rc >"$1/build/distcheck.rc"' sh "$top" "$san" &
bg_pid=$!

step "make check-slurm (beside it: the ASan + UBSan build)"
make -C "$top/build" -j2 check-slurm || status=1
count "$top/build"
why_skipped "$top/build"
why_failed "$top/build"

step "ASan + UBSan unit tests and libFuzzer, $TP_FUZZ_SECONDS s a reader (make fuzz runs longer)"
# (a failed background build is built again here, its error shown)
while [ ! -e "$san/build.done" ] && kill -0 "$bg_pid" 2>/dev/null; do sleep 1; done
cat "$san/build.log"
f0=$fail
san_rc=0
TP_FUZZ_SECONDS=$TP_FUZZ_SECONDS "$top/contrib/run-sanitizers.sh" || san_rc=$?
count "$san"
why_failed "$san"
if [ "$(cat "$san/fuzz.rc" 2>/dev/null)" = 0 ]; then
	pass=$((pass + 1))
else
	echo "the sanitizer build or the fuzz run failed (above)"
	fail=$((fail + 1))
fi
# a unit test that failed to build leaves no .trs to count: the script's
# status says so
if [ "$san_rc" -ne 0 ] && [ "$fail" -eq "$f0" ]; then
	echo "contrib/run-sanitizers.sh failed (exit $san_rc; above) with no failed test to show for it"
	fail=$((fail + 1))
fi
[ "$san_rc" -eq 0 ] && [ "$fail" -eq "$f0" ] || status=1

step "make distcheck (the rest of it: alone now, nice 19 no longer slows it)"
wait "$bg_pid" || true
if [ "$(cat "$top/build/distcheck.rc" 2>/dev/null)" = 0 ]; then
	grep -A3 -e 'archives ready' "$top/build/distcheck.log" || true
	tail -n 1 "$top/build/distcheck.log"
	pass=$((pass + 1))
else
	tail -40 "$top/build/distcheck.log"
	fail=$((fail + 1))
	status=1
fi

step
printf 'all steps: %d s\n' $(($(date +%s) - t_start))
printf '\n%d passed, %d failed, %d skipped\n' "$pass" "$fail" "$skip"
exit $status
