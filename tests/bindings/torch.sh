#!/bin/sh
# The PyTorch binding (bindings/torch/topoplace_coll) under Debian's torch:
# tests/bindings/test_torch.py with 4 ranks on this host over loopback, from
# a plan `topoplace plan` made for 2 hosts x 2 GPUs on a generated 2-leaf
# fabric (and, for hierarchical='group', one for 4 hosts x 1 GPU, 2 hosts
# per leaf: level-1 groups of 2 hosts); then tests/bindings/ef_reference.py
# (error feedback against a reference of the two-stage scheme) with 2 ranks
# of one host; then torch's own PowerSGD hook through ddp_train.py (4 ranks,
# two buckets), which hung as torch ships it on 1.13's gloo. Skips (77) when
# /usr/bin/python3 (or $TP_PYTHON) has no torch.
. "$(dirname "$0")/../integration/lib.sh"
py=${TP_PYTHON:-/usr/bin/python3}
src=${TP_SRCDIR:?}
lib=${TP_BUILDDIR:?}/coll/.libs/libtopoplace-coll.so
# the library is always built; Python is optional
[ -f "$lib" ] || error_all "$lib not built (coll/ always builds it)"
[ -x "$py" ] || skip_all "no $py"

# The binding's SONAME (how an installed package finds the library by
# the loader's search) is the one the library was linked with, and a file
# of that name sits beside it.
want=$(sed -n 's/^SONAME = "\(.*\)"$/\1/p' "$src/bindings/torch/topoplace_coll/_lib.py")
got=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
[ -n "$want" ] && [ "$want" = "$got" ] && ok "_lib.SONAME $want is the library's soname" ||
	bad "_lib.SONAME '$want', the library's soname '$got'"
# tp_coll.h's TP_COLL_API_VERSION is the SONAME's number
api=$(sed -n 's/^#define TP_COLL_API_VERSION \([0-9]*\)$/\1/p' "$src/coll/tp_coll.h")
[ -n "$api" ] && [ "${got##*.so.}" = "$api" ] && ok "TP_COLL_API_VERSION $api is the soname's number" ||
	bad "TP_COLL_API_VERSION '$api', soname '$got'"
# The library a training process loads needs none of the fabric readers'
# optional libraries (it reads plans and fabric JSON only).
needed=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
readers=$(echo "$needed" | grep -E '^lib(hwloc|ibnetdisc|ibmad|ibumad|udev)\.' | tr '\n' ' ')
[ -n "$needed" ] && [ -z "$readers" ] && ok "$got needs none of hwloc, libibnetdisc, libibmad, libibumad, libudev" ||
	bad "$got needs: ${readers:-(readelf listed nothing)}"
# Every function the installed headers declare (tp_coll.h and the part of
# tp_common.h installed beside it) is one the library exports: a program
# built against them links.
pub=${TP_BUILDDIR}/coll/public
declared=$(${CC:-cc} -E -P -I"$pub" "$src/coll/tp_coll.h" 2>"$tmp/cpp.err" |
	grep -oE '\btp_[a-z0-9_]+ *\(' | sed 's/ *($//' | sort -u)
exported=$(nm -D --defined-only "$lib" 2>/dev/null | awk '{print $3}' | sort -u)
missing=$(printf '%s\n' "$declared" | grep -vxF -e "$exported" | tr '\n' ' ')
[ -n "$declared" ] && [ -n "$exported" ] && [ -z "$missing" ] &&
	ok "the $(printf '%s\n' "$declared" | wc -l) functions the installed headers declare are exported" ||
	bad "installed headers declare what $got does not export: ${missing:-(none listed: $(cat "$tmp/cpp.err"))}"
# ... and every function it exports is on libtopoplace-coll(3)'s NAME
# line and has its `man 3 NAME` page (doc/Makefile.am's aliases), save
# tp_parse_bytes, which the library exports for its benchmark only
names=$(sed -n '/^\.SH NAME/,/^\.SH/p' "$src/doc/libtopoplace-coll.3" | tr ', ' '\n\n' | grep '^tp_')
aliases=$(sed -n '/^COLL_MAN_ALIASES/,/^$/p' "$src/doc/Makefile.am" | tr ' \t\\' '\n\n\n' | grep '^tp_')
undoc=$(printf '%s\n' "$exported" | grep '^tp_' | grep -vx tp_parse_bytes |
	while read -r f; do
		printf '%s\n' "$names" | grep -qxF "$f" && printf '%s\n' "$aliases" | grep -qxF "$f" ||
			printf '%s ' "$f"
	done)
[ -n "$names" ] && [ -z "$undoc" ] &&
	ok "every function $got exports is on libtopoplace-coll(3)'s NAME line, with its man 3 alias" ||
	bad "exported without a NAME entry or man 3 alias: ${undoc:-(no NAME line read)}"
LD_LIBRARY_PATH=$(dirname "$lib") "$py" -c "import ctypes, sys; ctypes.CDLL(sys.argv[1])" "$want" &&
	ok "$want loads by the loader's search" || bad "$want does not load by name"
# _lib.py's option structs as tp_coll.h lays them out (a field missing in
# Python lets the library write past the ctypes buffer).
TOPOPLACE_COLL_LIB=$lib "$py" "$src/tests/bindings/struct_check.py" "$src" "$tmp" ||
	bad "_lib.py's structs differ from tp_coll.h's"
# Communicator's integer arguments, range-checked before ctypes truncates
# them (a stand-in torch module when there is none).
$TOPOPLACE fabric generate fat-tree --leaves 1 --spines 1 --hosts-per-leaf 1 \
	--gpus-per-host 1 -o "$tmp/fa.json" >/dev/null 2>&1 || bad "fabric of one GPU"
$TOPOPLACE plan --fabric "$tmp/fa.json" --nodes 'node001' --json --no-predict \
	-o "$tmp/pa.json" >/dev/null 2>&1 || bad "plan of one rank"
PYTHONPATH=$src/bindings/torch${PYTHONPATH:+:$PYTHONPATH} TOPOPLACE_COLL_LIB=$lib \
	"$py" "$src/tests/bindings/args_check.py" "$tmp/pa.json" $((23000 + $$ % 4000)) ||
	bad "Communicator's integer arguments"
# the checks above need no torch; what follows does (a failure above
# still fails the test)
if ! "$py" -c 'import torch' 2>/dev/null; then
	[ "$failures" -eq 0 ] || finish
	skip_all "$py cannot import torch (apt-get install python3-torch)"
fi

$TOPOPLACE fabric generate fat-tree --leaves 2 --spines 1 --hosts-per-leaf 1 \
	--gpus-per-host 2 --interleave -o "$tmp/f.json" >/dev/null 2>&1 || bad "fabric"
$TOPOPLACE plan --fabric "$tmp/f.json" --nodes 'node[001-002]' --json --no-predict \
	-o "$tmp/p.json" >/dev/null 2>&1 || bad "plan"
$TOPOPLACE fabric generate fat-tree --leaves 2 --spines 1 --hosts-per-leaf 2 \
	--gpus-per-host 1 -o "$tmp/f4.json" >/dev/null 2>&1 || bad "fabric of 4 hosts"
$TOPOPLACE plan --fabric "$tmp/f4.json" --nodes 'node[001-004]' --json --no-predict \
	-o "$tmp/p4.json" >/dev/null 2>&1 || bad "plan of 4 hosts"
port=$((22000 + $$ % 4000))
PYTHONPATH=$src/bindings/torch${PYTHONPATH:+:$PYTHONPATH} TOPOPLACE_COLL_LIB=$lib \
	timeout 600 "$py" "$src/tests/bindings/test_torch.py" "$tmp/p.json" $port $((port + 4000)) \
	"$tmp/p4.json"
rc=$?
[ $rc -eq 0 ] || bad "test_torch.py exit $rc"
$TOPOPLACE plan --fabric "$tmp/f.json" --nodes 'node001' --json --no-predict \
	-o "$tmp/p1.json" >/dev/null 2>&1 || bad "plan of one host"
PYTHONPATH=$src/bindings/torch${PYTHONPATH:+:$PYTHONPATH} TOPOPLACE_COLL_LIB=$lib \
	timeout 300 "$py" "$src/tests/bindings/ef_reference.py" "$tmp/p1.json" $((port + 1))
rc=$?
[ $rc -eq 0 ] || bad "ef_reference.py exit $rc"
# torch's PowerSGD hook as contrib/examples/ddp_train.py runs it for
# bench_ddp.sh (the compression peer): 4 ranks, a 1.2 MB gradient in two
# buckets. Run as torch ships it on 1.13's gloo, it hangs here (its
# callbacks wait on both gloo workers); each rank gives up after 60 s.
TP_BUILDDIR=$TP_BUILDDIR TOPOPLACE=$TOPOPLACE TP_PYTHON=$py TOPOPLACE_COLL_LIB=$lib TP_RANK_TIMEOUT=60 \
	"$src/tests/bench/bench_ddp_local.sh" --hosts 2 --ranks-per-host 2 --port $((port + 8)) \
	--args "--steps 4 --hidden 512 --batch 16 --bucket-mb 0.25 --timeout 30" \
	psgd:--backend,powersgd >"$tmp/psgd.out" 2>&1
rc=$?
sed 's/^/# /' "$tmp/psgd.out"
if [ $rc -ne 0 ]; then
	bad "PowerSGD run exit $rc"
elif grep -q '^ddp_train: psgd: final loss' "$tmp/psgd.out"; then
	ok "torch's PowerSGD hook: 4 ranks, 2 buckets, 4 steps"
else
	bad "PowerSGD run: no final loss line"
fi
# the async hook without comm.close(): every rank exits 0, three times
for k in 1 2 3; do
	p1=$((port + 100 + 2 * k)) pids=""
	for r in 0 1; do
		PYTHONPATH=$src/bindings/torch${PYTHONPATH:+:$PYTHONPATH} TOPOPLACE_COLL_LIB=$lib \
			TOPOPLACE_PLAN=$tmp/p1.json TOPOPLACE_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$p1 \
			OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo timeout 120 \
			"$py" "$src/tests/bindings/exit_check.py" $((p1 + 1)) >"$tmp/exit.$r" 2>&1 &
		pids="$pids $!"
	done
	rcs=""
	for p in $pids; do
		wait "$p"
		rcs="$rcs $?"
	done
	[ "$rcs" = " 0 0" ] && ok "DDP with the async hook, no close: both ranks exit 0 (run $k)" ||
		bad "DDP exit, run $k: exit codes$rcs: $(tail -n 2 "$tmp/exit.0" "$tmp/exit.1")"
done

finish
