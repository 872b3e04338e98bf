#!/bin/sh
# Run every libFuzzer target for TP_FUZZ_SECONDS each (make fuzz; CI runs
# them briefly), or for TP_FUZZ_RUNS executions each when that is set
# (`make fuzz TP_FUZZ_RUNS=1000000`: the hardening goal; no time limit).
# TP_FUZZ_TARGETS (space-separated names) runs only those, TP_FUZZ_JOBS
# (default: the CPUs) at once. Corpora are seeded from small files under tests/ and from
# the targets' own regression inputs (tests/fuzz/regress/<target>/*, each
# a crash once found: fixed, and replayed here first).
# Usage: run.sh FUZZ_BUILD_DIR TESTS_SRC_DIR
fz=$1
src=$2
secs=${TP_FUZZ_SECONDS:-60}
data=$src/topology/data
work=${TP_FUZZ_WORK:-$fz/work}
status=0

seed() { # TARGET FILES...: copy the seeds that exist
	t=$1
	shift
	mkdir -p "$work/$t"
	for f in "$@"; do
		[ -f "$f" ] && cp "$f" "$work/$t/"
	done
	return 0
}

all="ibnetdiscover fabric_json state_json plan_json trace_csv pconf request
hostlist guid_map domain_map nvsmi compress decision hwloc3"
if [ -n "$TP_FUZZ_RUNS" ]; then
	case $TP_FUZZ_RUNS in
	*[!0-9]* | '') echo "run.sh: TP_FUZZ_RUNS must be a count, not '$TP_FUZZ_RUNS'" >&2 && exit 2 ;;
	esac
	limit="-runs=$TP_FUZZ_RUNS"
	what="$TP_FUZZ_RUNS runs"
else
	limit="-max_total_time=$secs"
	what="$secs s"
fi
# One target: its seeds, its regression inputs, its run; what it says in
# $work/$t.result, and a failure in $work/$t.failed.
run_one() {
	t=$1
	case $t in
	ibnetdiscover) seed $t "$data"/ibn-* "$data"/gen-*.net ;;
	fabric_json | state_json | plan_json) seed $t "$src"/fuzz/seeds/$t.* ;;
	trace_csv) seed $t "$src"/fuzz/seeds/trace.* ;;
	pconf) seed $t "$src"/fuzz/seeds/topoplace.conf ;;
	request) seed $t "$src"/fuzz/seeds/request.* ;;
	hostlist) seed $t "$src"/fuzz/seeds/hostlist.* ;;
	guid_map) seed $t "$data"/ibn-guidmap* ;;
	domain_map) seed $t "$data"/node-domains* ;;
	nvsmi) seed $t "$data"/node-nvsmi-* ;;
	compress) seed $t ;; # starts empty: the decoder's header is short
	decision) seed $t "$src"/fuzz/seeds/decision.* ;;
	hwloc3) seed $t "$src"/fuzz/seeds/hwloc3.* ;;
	esac
	rm -f "$work/$t.failed"
	reg=$src/fuzz/regress/$t
	if [ -d "$reg" ] && ! "$fz/fuzz_$t" $(ls "$reg"/* 2>/dev/null) >"$work/$t.regress.log" 2>&1; then
		{
			echo "fuzz_$t: a regression input fails again"
			tail -20 "$work/$t.regress.log"
		} >"$work/$t.result"
		touch "$work/$t.failed"
		return
	fi
	case $t in *json) len=16384 ;; *) len=4096 ;; esac
	start=$(date +%s)
	if "$fz/fuzz_$t" $limit -max_len=$len -timeout=10 \
		-rss_limit_mb=2048 -artifact_prefix="$work/$t-" "$work/$t" \
		>"$work/$t.log" 2>&1; then
		runs=$(grep -o 'Done [0-9]* runs' "$work/$t.log" | tail -1)
		echo "fuzz_$t: ${runs:-?} ($what asked) in $(($(date +%s) - start)) s, no findings" >"$work/$t.result"
	else
		{
			echo "fuzz_$t: FINDING"
			tail -30 "$work/$t.log"
		} >"$work/$t.result"
		touch "$work/$t.failed"
	fi
}

targets=${TP_FUZZ_TARGETS:-$all}
for t in $targets; do
	case " $(echo $all) " in *" $t "*) ;; *) echo "run.sh: no fuzz target '$t'" >&2 && exit 2 ;; esac
done
# as many targets at once as CPUs (TP_FUZZ_JOBS), reported in order
par=${TP_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
mkdir -p "$work"
n=0
for t in $targets; do
	run_one "$t" &
	n=$((n + 1))
	[ "$n" -lt "$par" ] || { wait; n=0; }
done
wait
for t in $targets; do
	cat "$work/$t.result" 2>/dev/null || { echo "fuzz_$t: no result"; status=1; }
	[ ! -e "$work/$t.failed" ] || status=1
done
exit $status
