#!/bin/sh
# ibsim_live.sh - live discovery through libibnetdisc must build the same
# fabric model as reading Debian's `ibnetdiscover` output (and its --cache
# file) of the same simulated fabric.
#
# Fabrics: a generated fat tree, every rail of a generated rail-optimized
# fabric (each rail is its own subnet, so one ibsim per rail), Debian's
# example net file and a real ibnetdiscover dump used as the net file.
# Each runs in its own ibsim (contrib/ibsim-run.sh), stopped by PID.
#
# Needs ibsim-utils, libumad2sim0, infiniband-diags and a build with
# libibnetdisc; exits 77 (skip) without them, 99 (error) when make
# check's tp_livecheck is missing.
set -eu

skip() {
	echo "SKIP: $*"
	exit 77
}
error() {
	echo "ERROR: $*"
	exit 99
}

srcdir=${TP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
builddir=${TP_BUILDDIR:-$srcdir}
lc=$builddir/tests/integration/tp_livecheck
run=$srcdir/contrib/ibsim-run.sh
# Bounds every umad2sim client: without an answering ibsim one blocks forever.
TP_IBSIM_TIMEOUT=${TP_IBSIM_TIMEOUT:-60}
TP_IBSIM_START_TIMEOUT=${TP_IBSIM_START_TIMEOUT:-60}
export TP_IBSIM_TIMEOUT TP_IBSIM_START_TIMEOUT
unset SIM_HOST || true

# a check program make check always builds: missing is an error
[ -x "$lc" ] || error "$lc not built (make check builds it)"
command -v ibsim >/dev/null 2>&1 || skip "ibsim not installed (ibsim-utils)"
command -v ibnetdiscover >/dev/null 2>&1 ||
	skip "ibnetdiscover not installed (infiniband-diags)"
command -v timeout >/dev/null 2>&1 || skip "timeout(1) not available"
umad=${TP_UMAD2SIM:-}
if [ -z "$umad" ]; then
	for lib in /usr/lib/*/umad2sim/libumad2sim.so \
		/usr/lib64/umad2sim/libumad2sim.so /usr/lib/umad2sim/libumad2sim.so; do
		[ -r "$lib" ] && umad=$lib && break
	done
fi
[ -n "$umad" ] && [ -r "$umad" ] || skip "libumad2sim.so not found (libumad2sim0)"

# The CLI routes (topoplace discover --live / --ibnetdiscover, via JSON)
# are checked too when the CLI is built.
cli=
[ -n "${TOPOPLACE:-}" ] && [ -x "$TOPOPLACE" ] && cli=$TOPOPLACE

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-ibsim-live.XXXXXX")
pids=
cleanup() {
	for p in $pids; do
		"$run" stop "$p" >/dev/null 2>&1 || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

failures=0
checked=0
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

show() {
	[ -s "$1" ] && sed 's/^/    /' "$1" | head -n 20
	return 0
}

# check NAME NETFILE [EXPECTED-COUNT-LINE]
check() {
	name=$1
	net=$2
	before=$failures
	expect=${3:-}
	d=$tmp/$name
	mkdir -p "$d"

	if ! "$run" start "$net" "tp-live-$$-$name" >"$d/env" 2>"$d/start.err"; then
		fail "$name: ibsim did not start"
		show "$d/start.err"
		return 0
	fi
	IBSIM_PID=
	IBSIM_SOCKNAME=
	. "$d/env"
	pids="$pids $IBSIM_PID"
	sock=$IBSIM_SOCKNAME

	rc=0
	"$run" exec "$sock" -- "$lc" live >"$d/live.dump" 2>"$d/live.err" || rc=$?
	if [ "$rc" -eq 77 ]; then
		show "$d/live.err"
		skip "built without libibnetdisc"
	fi
	if [ "$rc" -ne 0 ]; then
		fail "$name: live discovery failed (rc $rc)"
		show "$d/live.err"
	fi
	rc=0
	"$run" exec "$sock" -- ibnetdiscover --cache "$d/fabric.cache" \
		>"$d/ibnetdiscover.out" 2>"$d/ibnetdiscover.err" || rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "$name: ibnetdiscover failed (rc $rc)"
		show "$d/ibnetdiscover.err"
	fi

	if [ -n "$cli" ]; then
		rc=0
		"$run" exec "$sock" -- "$cli" discover --live -o "$d/cli-live.json" \
			>/dev/null 2>"$d/cli-live.err" || rc=$?
		if [ "$rc" -ne 0 ]; then
			fail "$name: topoplace discover --live failed (rc $rc)"
			show "$d/cli-live.err"
		fi
	fi

	# All live routes done: the simulator is no longer needed.
	"$run" stop "$IBSIM_PID" >/dev/null 2>&1 || true
	pids=$(echo "$pids" | sed "s/ $IBSIM_PID\$//; s/ $IBSIM_PID / /")

	if ! timeout 60 "$lc" text "$d/ibnetdiscover.out" >"$d/text.dump" 2>"$d/text.err"; then
		fail "$name: reading ibnetdiscover output failed"
		show "$d/text.err"
	elif ! diff -u "$d/text.dump" "$d/live.dump" >"$d/text-live.diff"; then
		fail "$name: live model differs from the ibnetdiscover text model"
		show "$d/text-live.diff"
	fi
	if ! timeout 60 "$lc" cache "$d/fabric.cache" >"$d/cache.dump" 2>"$d/cache.err"; then
		fail "$name: reading the ibnetdiscover --cache file failed"
		show "$d/cache.err"
	elif ! diff -u "$d/cache.dump" "$d/live.dump" >"$d/cache-live.diff"; then
		fail "$name: live model differs from the cache-file model"
		show "$d/cache-live.diff"
	fi
	if [ -n "$cli" ]; then
		# The CLI's JSON, loaded back, must be the same model too.
		timeout 60 "$cli" discover --ibnetdiscover "$d/ibnetdiscover.out" \
			-o "$d/cli-text.json" >/dev/null 2>"$d/cli-text.err" ||
			{ fail "$name: topoplace discover --ibnetdiscover failed"
			  show "$d/cli-text.err"; }
		for j in cli-live cli-text; do
			[ -s "$d/$j.json" ] || continue
			if ! timeout 60 "$lc" json "$d/$j.json" >"$d/$j.dump" 2>"$d/$j.err"; then
				fail "$name: loading $j.json failed"
				show "$d/$j.err"
			elif ! diff -u "$d/$j.dump" "$d/live.dump" >"$d/$j.diff"; then
				fail "$name: $j.json differs from the live model"
				show "$d/$j.diff"
			fi
		done
	fi
	if [ -n "$expect" ]; then
		got=$(grep '^count ' "$d/live.dump" || true)
		[ "$got" = "$expect" ] ||
			fail "$name: simulated fabric has '$got', net file had '$expect'"
	fi
	checked=$((checked + 1))
	[ "$failures" -eq "$before" ] || return 0
	echo "ok: $name ($(grep '^count ' "$d/live.dump" || echo 'no counts'))"
}

# netfile NAME KIND [SUBNET]: generate; prints the expected counts line.
netfile() {
	rc=0
	timeout 60 "$lc" netfile "$2" "$tmp/$1.net" ${3:+"$3"} \
		>"$tmp/$1.count" 2>"$tmp/$1.gen.err" || rc=$?
	# (the generators and the net writer are always built: a 77 is a
	# failure like any other)
	if [ "$rc" -ne 0 ]; then
		fail "$1: generating the net file failed (rc $rc)"
		show "$tmp/$1.gen.err"
		return 1
	fi
	return 0
}

# Fabrics the run must check: the fat tree and the rail fabric's 4 rails
# (tp_livecheck's generate()) always; the two below when their file is
# here (ibsim-utils' docs, the shared fixtures). A case that could not be
# checked is a failure, never a smaller count.
want=5
if netfile fat-tree fat-tree; then
	check fat-tree "$tmp/fat-tree.net" "$(cat "$tmp/fat-tree.count")"
fi

rc=0
nrails=$(timeout 60 "$lc" nsubnets rail 2>"$tmp/nsubnets.err") || rc=$?
if [ "$rc" -ne 0 ]; then
	fail "tp_livecheck nsubnets rail failed (rc $rc)"
	show "$tmp/nsubnets.err"
	nrails=0
elif [ "$nrails" != 4 ]; then
	fail "the rail fabric has '$nrails' subnets, wanted 4 (one per rail)"
fi
r=0
while [ "$r" -lt "$nrails" ]; do
	if netfile "rail$r" rail "$r"; then
		check "rail$r" "$tmp/rail$r.net" "$(cat "$tmp/rail$r.count")"
	fi
	r=$((r + 1))
done

example=/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca
if [ -r "$example" ]; then
	want=$((want + 1))
	check debian-example "$example"
else
	echo "note: no $example (ibsim-utils' docs), case not run"
fi

# A real dump as the net file: ibsim keeps its shape (not its GUIDs).
real=${TP_FIXTURES:-}/ib/NVIDIA-topograph/ibnetdiscover-example.out
if [ -n "${TP_FIXTURES:-}" ] && [ -r "$real" ]; then
	want=$((want + 1))
	expect=$(timeout 60 "$lc" text "$real" 2>/dev/null | grep '^count ' || true)
	[ -n "$expect" ] || fail "real-dump: no counts from $real"
	check real-dump "$real" "$expect"
else
	echo "note: no ${real} (TP_FIXTURES), case not run"
fi

[ "$checked" -eq "$want" ] || fail "$checked fabric(s) checked, wanted $want"
if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)"
	exit 1
fi
echo "PASS: $checked fabric(s): live == ibnetdiscover text == cache${cli:+ == CLI JSON}"
exit 0
