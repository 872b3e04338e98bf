#!/bin/sh
# PyTorch DDP through the topoplace hook in a real Slurm job, CI-sized (issue 10):
# tests/bench/bench_ddp.sh on 2 hosts x 2 tasks (4 ranks) of the mini-cluster on the emulated
# 2-leaf fabric (one host per leaf), 8 steps (2 of them dense warm-up), runs gloo, dense and
# int8-hier. Checks:
#   - the job completes; gloo and dense report results in topoplace-ddp-bench/1
#   - dense and torch's gloo give the same final loss, both on the training sets
#     (final_loss_on "train"), within 1e-4 relative (the library sums
#     the 4 ranks in another order than gloo, see tests/bindings/test_torch.py) and held-out
#     accuracy (within one sample of 4096)
#   - the library's up-link count is positive and no more than the up-link veth carried
#   - int8-hier: "unavailable" with CompressionUnavailable when the library lacks compression,
#     else "ok" with fewer up-link bytes than dense
# Needs root, Slurm and the topology/SPANK plugins, torch for /usr/bin/python3 (or
# $TP_PYTHON); exit 77 if not. Network: TP_DDP_NET (10.210.0), TP_DDP_DATA_NET (10.211.0),
# TP_DDP_PORT (6950), namespaces TP_DDP_PREFIX (tdd-).
. "$(dirname "$0")/lib.sh"

need_slurm 22 tc
py=${TP_PYTHON:-/usr/bin/python3}
[ -x "$py" ] && "$py" -c 'import torch' 2>/dev/null || skip_all "$py cannot import torch (apt-get install python3-torch)"
[ -f "$builddir/coll/.libs/libtopoplace-coll.so" ] ||
	error_all "$builddir/coll/.libs/libtopoplace-coll.so not built (coll/ always builds it)"
comp=$(PYTHONPATH=$srcdir/bindings/torch TOPOPLACE_COLL_LIB=$builddir/coll/.libs/libtopoplace-coll.so \
	"$py" -c 'import topoplace_coll as t; print(int(t.have_compression()))') || bad "import topoplace_coll"

t0=$(date +%s)
TP_BUILDDIR=$builddir TP_PYTHON=$py timeout 300 "$srcdir/tests/bench/bench_ddp.sh" --nodes 2 \
	--tasks-per-node 2 --ratio 2 --steps 8 --start-iter 2 --hidden 256 --runs "gloo dense int8-hier" \
	--json "$tmp/d.json" >"$tmp/out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/out"
[ $rc -eq 77 ] && skip_all "bench_ddp.sh skipped: $(tail -1 "$tmp/out")"
[ $rc -eq 0 ] && ok "bench_ddp.sh: 4 ranks, job completed in $(($(date +%s) - t0)) s" || bad "bench_ddp.sh exit $rc"
[ -s "$tmp/d.json" ] || { bad "no JSON"; finish; }
jeq "$tmp/d.json" .format topoplace-ddp-bench/1 "format"
jeq "$tmp/d.json" '[.runs[] | select(.name == "gloo" or .name == "dense") | .status] | join(",")' ok,ok "gloo and dense ran"
run() { jq -r --arg n "$1" ".runs[] | select(.name == \$n) | $2" "$tmp/d.json"; }
jeq "$tmp/d.json" '[.runs[] | select(.name == "gloo" or .name == "dense") | .final_loss_on] | join(",")' \
	train,train "gloo's and dense's final loss on the training sets"
gl=$(run gloo .final_loss) dl=$(run dense .final_loss)
agree=$(jq -n --argjson a "$gl" --argjson b "$dl" '(($a - $b) | fabs) <= 1e-4 * $a' 2>/dev/null)
[ "$agree" = true ] && ok "final loss dense $dl = gloo $gl (1e-4 relative)" || bad "final loss dense $dl vs gloo $gl"
# accuracy counts 4096 held-out samples: last-bit differences may flip one near the boundary
agree=$(jq -n --argjson a "$(run gloo .accuracy)" --argjson b "$(run dense .accuracy)" '(($a - $b) | fabs) <= 1 / 4096' 2>/dev/null)
[ "$agree" = true ] && ok "held-out accuracy dense $(run dense .accuracy) = gloo $(run gloo .accuracy) (one sample)" ||
	bad "accuracy dense $(run dense .accuracy) vs gloo $(run gloo .accuracy)"
lib=$(run dense .uplink_bytes_lib) veth=$(run dense .uplink_bytes)
[ "$lib" -gt 0 ] 2>/dev/null && [ "$veth" -ge "$lib" ] && ok "dense: library sent $lib bytes across the up-link, the veth carried $veth" ||
	bad "dense up-link bytes: library $lib, veth $veth"
st=$(run int8-hier .status)
if [ "$comp" = 0 ]; then
	[ "$st" = unavailable ] && run int8-hier .error | grep -q CompressionUnavailable &&
		ok "int8-hier unavailable: the library has no compression" || bad "int8-hier: $st, wanted unavailable"
else
	c=$(run int8-hier .uplink_bytes)
	[ "$st" = ok ] && [ "$c" -lt "$veth" ] && ok "int8-hier: $c up-link bytes < dense $veth" ||
		bad "int8-hier: $st, $c up-link bytes vs dense $veth"
fi
finish
