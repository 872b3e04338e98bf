#!/bin/sh
# topoplace-coll-bench, whose command line and --json lines are a contract
# with the benchmark harness: every rank from one plan over 127.0.0.1,
# --check, the table, the JSON fields, K/M suffixes, the environment path
# and a clear failure for a rank the plan lacks.
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE
B=${TP_BUILDDIR:?}/coll/topoplace-coll-bench
[ -x "$B" ] || error_all "$B not built (coll/ always builds it)"
command -v jq >/dev/null || skip_all "no jq"

$T fabric generate fat-tree --leaves 2 --spines 2 --hosts-per-leaf 2 \
	--gpus-per-host 2 --interleave -o "$tmp/f.json" >/dev/null 2>&1 || bad "fabric"
$T plan --fabric "$tmp/f.json" --nodes 'node[001-002]' --json --no-predict \
	-o "$tmp/p.json" >/dev/null 2>&1 || bad "plan"
port=$((21000 + $$ % 9000))

# jseq FILE FILTER VALUE DESC: jq -s (all lines as one array) equals VALUE
jseq() {
	v=$(jq -s -r "$2" "$1" 2>/dev/null)
	if [ "$v" = "$3" ]; then ok "$4"; else bad "$4 ('$v', wanted '$3')"; fi
}

# run_all ARGS...: every rank of the 4-rank plan; rank 0's output in out.
run_all() {
	for r in 1 2 3; do
		"$B" --plan "$tmp/p.json" --rank $r "$@" >/dev/null 2>"$tmp/err$r" &
	done
	"$B" --plan "$tmp/p.json" --rank 0 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	wait
	return $rc
}

for algo in ring tree hierarchical auto; do
	rm -f "$tmp/j.json"
	if run_all --master 127.0.0.1:$port --algo $algo --min-bytes 4K \
		--max-bytes 1M --factor 16 --iters 3 --warmup 1 --check \
		--json "$tmp/j.json" --timeout 20; then
		ok "$algo: 4 ranks, --check passes"
	else
		bad "$algo: exit $rc: $(cat "$tmp/err")"
	fi
	port=$((port + 1))
	[ "$(grep -c '^ *[0-9]' "$tmp/out")" -eq 3 ] && ok "$algo: 3 sizes in the table" ||
		bad "$algo: table: $(cat "$tmp/out")"
	grep -q 'bytes *time_us *algbw_GBps *busbw_GBps' "$tmp/out" &&
		ok "$algo: table header" || bad "$algo: header"
	[ "$(wc -l <"$tmp/j.json")" -eq 3 ] && ok "$algo: one JSON line per size" ||
		bad "$algo: json lines"
	jseq "$tmp/j.json" 'map(.bytes)|join(",")' "4096,65536,1048576" "$algo: sizes"
	jseq "$tmp/j.json" "map(.impl == \"topoplace\" and .algo == \"$algo\" and
		.order == \"plan\" and .ranks == 4 and .hosts == 2 and
		.seconds > 0 and .busbw_gbps > 0)|all" true "$algo: fields"
done

# --compress: the compressed all-reduce and rank 0's cross-group bytes
# per call (2 hosts on 2 leaves: every byte between them crosses).
for kind in none int8 1bit topk; do
	rm -f "$tmp/j.json"
	args="--compress $kind --levels cross"
	[ $kind = none ] && args="--algo hierarchical"
	if run_all --master 127.0.0.1:$port $args --min-bytes 1M \
		--max-bytes 1M --iters 3 --warmup 1 --json "$tmp/j.json" --timeout 20; then
		ok "--compress $kind: 4 ranks"
	else
		bad "--compress $kind: exit $rc: $(cat "$tmp/err")"
	fi
	port=$((port + 1))
	eval "cross_$kind=\$(jq -r '.cross_bytes_per_call // 0' \"\$tmp/j.json\" 2>/dev/null)"
done
[ "$cross_int8" -gt 0 ] && [ "$cross_1bit" -gt 0 ] && [ "$cross_topk" -gt 0 ] &&
	[ "$cross_1bit" -lt "$cross_int8" ] && [ "$cross_topk" -lt "$cross_int8" ] &&
	ok "cross bytes per call: int8 $cross_int8, 1bit $cross_1bit, topk $cross_topk" ||
	bad "cross bytes: int8 '$cross_int8' 1bit '$cross_1bit' topk '$cross_topk'"
# the counters hold every timed call, without warm-up too (the first
# timed call's bytes were dropped: 0 per call with --iters 1)
rm -f "$tmp/j.json"
run_all --master 127.0.0.1:$port --compress int8 --levels cross --min-bytes 1M --max-bytes 1M \
	--iters 1 --warmup 0 --json "$tmp/j.json" --timeout 20 || bad "--warmup 0: exit $rc: $(cat "$tmp/err")"
port=$((port + 1))
cross_w0=$(jq -r '.cross_bytes_per_call // 0' "$tmp/j.json" 2>/dev/null)
[ "$cross_w0" = "$cross_int8" ] && ok "--warmup 0 --iters 1: int8 cross bytes per call $cross_w0, as with warm-up" ||
	bad "--warmup 0: int8 cross bytes per call '$cross_w0', with warm-up '$cross_int8'"
grep -q 'cross_bytes' "$tmp/out" && ok "--compress: cross_bytes column" ||
	bad "--compress table: $(cat "$tmp/out")"
expect 2 "bad --compress" "$B" --plan "$tmp/p.json" --rank 0 --compress int4
expect 2 "--check with --compress" "$B" --plan "$tmp/p.json" --rank 0 --compress int8 --check
expect 2 "bad --levels" "$B" --plan "$tmp/p.json" --rank 0 --compress int8 --levels up
# --segment / --no-overlap reach the compressed call: 1 MiB is 64
# segments of 4096 elements, each a message with its own header, so more
# bytes cross than in the one piece above; refused without --compress and
# for anything but a whole number.
rm -f "$tmp/j.json"
if run_all --master 127.0.0.1:$port --compress int8 --levels cross --segment 4096 \
	--no-overlap --min-bytes 1M --max-bytes 1M --iters 3 --warmup 1 \
	--json "$tmp/j.json" --timeout 20; then
	ok "--segment 4096 --no-overlap: 4 ranks"
else
	bad "--segment --no-overlap: exit $rc: $(cat "$tmp/err")"
fi
port=$((port + 1))
grep -q '^# compressed: int8, .*segment 4096, no overlap$' "$tmp/out" &&
	ok "--segment, --no-overlap in the header" || bad "header: $(head -3 "$tmp/out")"
jseq "$tmp/j.json" 'map(.segment == 4096 and .overlap == false)|all' true \
	"--segment, --no-overlap in the JSON"
cross_seg=$(jq -r '.cross_bytes_per_call // 0' "$tmp/j.json" 2>/dev/null)
[ "${cross_seg:-0}" -gt "$cross_int8" ] &&
	ok "--segment 4096 cut the call: $cross_seg cross bytes per call (one piece $cross_int8)" ||
	bad "--segment 4096: $cross_seg cross bytes per call, one piece $cross_int8"
for v in -1 12x '' 0x10 99999999999999999999999; do
	expect 2 "bad --segment '$v'" "$B" --plan "$tmp/p.json" --rank 0 --compress int8 --segment "$v"
	grep -q "bad --segment" "$tmp/err" && ok "--segment '$v' named" || bad "--segment '$v': $(cat "$tmp/err")"
done
for opt in "--segment 4096" --no-overlap; do
	# shellcheck disable=SC2086 # the option and its value
	expect 2 "$opt without --compress" "$B" --plan "$tmp/p.json" --rank 0 $opt
	grep -q "with --compress" "$tmp/err" && ok "$opt: --compress asked for" ||
		bad "$opt without --compress: $(cat "$tmp/err")"
done

# The environment path (TOPOPLACE_* as the SPANK plugin exports them).
for r in 1 2 3; do
	TOPOPLACE_PLAN="$tmp/p.json" TOPOPLACE_RANK=$r MASTER_ADDR=127.0.0.1 \
		MASTER_PORT=$port "$B" --min-bytes 8 --max-bytes 8 --iters 2 \
		--check >/dev/null 2>&1 &
done
TOPOPLACE_PLAN="$tmp/p.json" TOPOPLACE_RANK=0 MASTER_ADDR=127.0.0.1 \
	MASTER_PORT=$port "$B" --min-bytes 8 --max-bytes 8 --iters 2 --check \
	>"$tmp/out" 2>"$tmp/err"
rc=$?
wait
[ $rc -eq 0 ] && grep -q '^ *8 ' "$tmp/out" && ok "from the environment" ||
	bad "environment: $(cat "$tmp/err")"

expect 1 "rank outside the plan" "$B" --plan "$tmp/p.json" --rank 9 --master 127.0.0.1:$port
grep -q "rank 9 is not in the plan" "$tmp/err" && ok "rank named" || bad "rank: $(cat "$tmp/err")"
expect 2 "bad --algo" "$B" --plan "$tmp/p.json" --rank 0 --algo fastest
expect 2 "bad size" "$B" --plan "$tmp/p.json" --rank 0 --max-bytes 3X
# Numbers the bench cannot use are refused up front, naming the option,
# instead of wrapping (--rank 4294967296 ran as rank 0), becoming the
# default port (--master HOST:http) or an undefined conversion (1e30).
for v in 4294967296 -1 '' 1x; do
	expect 2 "bad --rank '$v'" "$B" --plan "$tmp/p.json" --rank "$v" \
		--master 127.0.0.1:$port --timeout 1
	grep -q "bad --rank" "$tmp/err" && ok "--rank '$v' named" || bad "--rank '$v': $(cat "$tmp/err")"
done
for v in 4294967297 0 ''; do
	expect 2 "bad --iters '$v'" "$B" --plan "$tmp/p.json" --rank 0 --iters "$v" \
		--master 127.0.0.1:$port --timeout 1
	grep -q "bad --iters" "$tmp/err" && ok "--iters '$v' named" || bad "--iters '$v': $(cat "$tmp/err")"
done
for v in http '' 0 65536 '80x'; do
	expect 2 "--master port '$v'" "$B" --plan "$tmp/p.json" --rank 0 \
		--master "127.0.0.1:$v" --timeout 1
	grep -q "bad port" "$tmp/err" && ok "--master port '$v' named" || bad "--master '$v': $(cat "$tmp/err")"
done
for v in 1e30 nan inf 16E; do
	expect 2 "--max-bytes '$v'" "$B" --plan "$tmp/p.json" --rank 0 --max-bytes "$v"
	grep -q "bad size" "$tmp/err" && ok "--max-bytes '$v' named" || bad "--max-bytes '$v': $(cat "$tmp/err")"
done
# --rank alone would lose to $TOPOPLACE_RANK without a word
expect 2 "--rank without --plan" env TOPOPLACE_PLAN="$tmp/p.json" TOPOPLACE_RANK=0 \
	"$B" --rank 1 --master 127.0.0.1:$port --timeout 1
grep -q "with --plan" "$tmp/err" && ok "--rank without --plan named" || bad "--rank alone: $(cat "$tmp/err")"
# options of the compressed all-reduce without --compress: refused, not
# a dense run that looks like the asked one
for o in "--levels host" "--segment 4096" "--no-overlap"; do
	expect 2 "$o without --compress" "$B" --plan "$tmp/p.json" --rank 0 --master 127.0.0.1:$port $o --timeout 1
	grep -q "with --compress" "$tmp/err" && ok "$o without --compress named" || bad "$o alone: $(cat "$tmp/err")"
done
finish
