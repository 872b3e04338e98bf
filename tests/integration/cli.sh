#!/bin/sh
# The topoplace command on real fixtures and generated fabrics: exit codes,
# JSON fields the issue promises, one-line errors for bad input.
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE

expect 0 "--help" $T --help
expect 0 "--version" $T --version
grep -q "topoplace 0" "$tmp/out" && ok "version printed" || bad "version printed"
expect 2 "unknown command" $T frobnicate
expect 0 "discover --help" $T discover --help
expect 0 "fabric --help" $T fabric --help
expect 2 "discover without a source" $T discover -o "$tmp/x.json"
expect 2 "discover without -o" $T discover --ibnetdiscover /dev/null
expect 2 "generate bad kind" $T fabric generate torus -o "$tmp/x.json"
expect 2 "generate bad number" $T fabric generate fat-tree --nics-per-host 1 --leaves zero -o "$tmp/x.json"
# a fabric's warnings: once when discovered, listed by fabric show, not
# repeated by every command that loads it
sp="${TP_FIXTURES:-../shared/fixtures}/ib/NVIDIA-topograph/ibnetdiscover-example.out"
if [ -f "$sp" ]; then
	expect 0 "discover the SuperPOD dump" $T discover --ibnetdiscover "$sp" -o "$tmp/sp.json"
	[ "$(grep -c 'marked degraded' "$tmp/err")" -eq 1 ] && ok "discover warns once" ||
		bad "discover warnings: $(cat "$tmp/err")"
	expect 0 "plan on it" $T plan --fabric "$tmp/sp.json" --nodes B11-P1-CUFM-02
	grep -q warning "$tmp/err" && bad "plan repeats the warnings: $(cat "$tmp/err")" ||
		ok "plan does not repeat the fabric's warnings"
	expect 0 "fabric show lists them" $T fabric show "$tmp/sp.json"
	grep -q 'marked degraded' "$tmp/out" && ok "fabric show lists the warnings" ||
		bad "fabric show: $(cat "$tmp/out")"
fi
# a real fabric for the usage checks below, so that the error each one
# wants cannot come from a missing --fabric file
expect 0 "generate a small fat tree" $T fabric generate fat-tree --nics-per-host 1 \
	--leaves 2 --spines 1 --hosts-per-leaf 2 -o "$tmp/small.json"
[ -s "$tmp/small.json" ] || bad "small fat tree written"
# raw input in an error line is quoted and cut: one printable line
expect 2 "cost with a newline in --hosts" $T cost --fabric "$tmp/small.json" --hosts "$(printf 'a\nb[')" --bytes 1
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q 'not a host list: "a\\x0ab\["' "$tmp/err" &&
	ok "bad --hosts quoted on one line" || bad "bad --hosts: $(cat "$tmp/err")"
# an empty host list is freed (issue 13: it leaked); valgrind, as the CLI
# tests do not run under ASan
if command -v valgrind >/dev/null 2>&1; then
	expect 2 "cost with an empty --hosts, under valgrind" valgrind -q --leak-check=full \
		--errors-for-leak-kinds=definite --error-exitcode=9 \
		$T cost --fabric "$tmp/small.json" --hosts , --bytes 1
	grep -q 'cost: --hosts: not a host list: ","' "$tmp/err" && ok "empty --hosts refused as such" ||
		bad "empty --hosts: $(cat "$tmp/err")"
else
	echo "# valgrind not installed: the empty --hosts leak check skipped"
fi
# a device where a file is expected: refused at once, not read for ever
expect 2 "fabric show /dev/zero" timeout 10 $T fabric show /dev/zero
grep -q "/dev/zero: cannot read: not a regular file or pipe" "$tmp/err" && ok "device refused, named" ||
	bad "fabric show /dev/zero: $(cat "$tmp/err")"
expect 2 "simulate --trace /dev/zero" timeout 10 $T simulate --trace /dev/zero

# ---- trace: Slurm's records as simulate's CSV (real daemons:
# slurm_accounting.sh) ----
expect 0 "trace --help" $T trace --help
expect 2 "trace without FILE" $T trace
grep -q "trace: give one FILE" "$tmp/err" && ok "trace without FILE says so" || bad "trace: $(cat "$tmp/err")"
expect 2 "trace /dev/zero" timeout 10 $T trace /dev/zero
printf 'JobID|Submit|Start|End|NNodes|AllocTRES|State\n%s\n%s\n' \
	'7|2026-12-01T10:00:00|2026-12-01T10:00:05|2026-12-01T11:00:05|2|cpu=8,gres/gpu=16,node=2|COMPLETED' \
	'8|2026-12-01T10:01:00|2026-12-01T10:02:00|2026-12-01T10:12:00|1|cpu=1,node=1|COMPLETED' >"$tmp/sacct.txt"
expect 0 "trace of sacct output" $T trace "$tmp/sacct.txt"
[ "$(sed -n 3p "$tmp/out")" = "0,16,2,8,3600,0.3,1073741824" ] &&
	grep -q "^# topoplace trace: $tmp/sacct.txt (sacct): 1 job; left out 1 without GPUs" "$tmp/out" &&
	ok "trace: the GPU job as CSV, the CPU job counted" || bad "trace: $(cat "$tmp/out")"
sed -i 's/cpu=8,gres\/gpu=16,node=2/cpu=8,node=2/' "$tmp/sacct.txt"
expect 2 "trace: no record counts GPUs" $T trace "$tmp/sacct.txt"
grep -q "AccountingStorageTRES=gres/gpu" "$tmp/err" && ok "trace: the hint to track GPUs" || bad "trace: $(cat "$tmp/err")"
expect 0 "trace --assume-gpus 4" $T trace "$tmp/sacct.txt" --assume-gpus 4
[ "$(sed -n 3p "$tmp/out")" = "0,8,2,4,3600,0.3,1073741824" ] && ok "trace --assume-gpus: 4 GPUs a host" ||
	bad "trace --assume-gpus: $(cat "$tmp/out")"
expect 2 "trace --assume-gpus 0" $T trace "$tmp/sacct.txt" --assume-gpus 0
grep -q "trace: --assume-gpus: expected all or an integer 1..1024, got '0'" "$tmp/err" &&
	ok "--assume-gpus names both forms" || bad "--assume-gpus 0: $(cat "$tmp/err")"
expect 2 "trace --price without --fabric" $T trace "$tmp/sacct.txt" --price
grep -q "trace: --price needs --fabric" "$tmp/err" && ok "trace --price names what it needs" || bad "trace --price: $(cat "$tmp/err")"
expect 2 "trace --fabric without --price" $T trace "$tmp/sacct.txt" --fabric "$tmp/small.json"
grep -q "trace: --price needs --fabric, and --fabric, .* go with --price" "$tmp/err" &&
	ok "trace --fabric names --price" || bad "trace --fabric: $(cat "$tmp/err")"
expect 2 "trace --price --policy nope" $T trace "$tmp/sacct.txt" --price --fabric "$tmp/small.json" --policy nope
grep -q "trace: unknown policy 'nope' (topoplace, slurm-tree" "$tmp/err" && ok "trace names the policies" ||
	bad "trace --policy: $(cat "$tmp/err")"
expect 2 "simulate --deflate-runs without --trace" $T simulate --deflate-runs
printf 'submit_s,nodes,gpus_per_node,run_s\n0,2,1,100\n' >"$tmp/d.csv"
expect 2 "simulate --deflate-runs on a CSV" $T simulate --trace "$tmp/d.csv" --deflate-runs
grep -q "deflate-runs: $tmp/d.csv is csv, not Slurm's records" "$tmp/err" &&
	ok "--deflate-runs names what it needs" || bad "--deflate-runs: $(cat "$tmp/err")"
sed -i 's/2026-12-01T10:01:00/2026-12-01 10:01/' "$tmp/sacct.txt"
expect 2 "trace: a bad time" $T trace "$tmp/sacct.txt"
grep -q "sacct.txt:3: submit time: not valid ('2026-12-01 10:01')" "$tmp/err" &&
	ok "trace: a bad time named by line and field" || bad "trace: $(cat "$tmp/err")"

# ---- topoplace.conf: the key table, its man page, a check ----
expect 0 "config --dump" $T config --dump
cp "$tmp/out" "$tmp/dump"
man5="${TP_SRCDIR:-.}/doc/topoplace.conf.5"
# the table's keys (one "#Key=default" line each) and the man page's (a
# ".BI Key=" item each under KEYS), both ways; 16 keys today: a dump
# whose format changed must not make the comparison empty
sed -n 's/^#\([A-Za-z]*\)=.*/\1/p' "$tmp/dump" | sort >"$tmp/keys.dump"
sed -n '/^\.SH KEYS/,/^\.SH /s/^\.BI \([A-Za-z]*\)=.*/\1/p' "$man5" | sort >"$tmp/keys.man"
n=$(wc -l <"$tmp/keys.dump")
[ "$n" -eq 16 ] && ok "config --dump lists 16 keys" ||
	bad "config --dump lists $n keys, wanted 16 (a key added: update this count)"
# runtime/test_step_mem prices as the plugin's default does
grep -qx '#PlanPriceMaxHosts=2048' "$tmp/dump" && ok "config --dump: PlanPriceMaxHosts=2048, test_step_mem's" ||
	bad "config --dump: $(grep PlanPriceMaxHosts "$tmp/dump" | tail -n 1) (tests/runtime/test_step_mem.c assumes 2048)"
for k in $(comm -23 "$tmp/keys.dump" "$tmp/keys.man"); do
	bad "key $k missing from topoplace.conf(5)"
done
for k in $(comm -13 "$tmp/keys.dump" "$tmp/keys.man"); do
	bad "topoplace.conf(5) documents $k, which config --dump lacks"
done
cmp -s "$tmp/keys.dump" "$tmp/keys.man" &&
	ok "config --dump and topoplace.conf(5) name the same $n keys"
$T fabric generate fat-tree --leaves 2 --hosts-per-leaf 2 -o "$tmp/conf-ft.json" >/dev/null
printf 'FabricFile=%s\nSwitchWait=60 Partitions=gpu,gpu2\n' "$tmp/conf-ft.json" >"$tmp/tp.conf"
expect 0 "config --check good" $T config --check "$tmp/tp.conf"
grep -q '^SwitchWait=60$' "$tmp/out" && ok "effective setting printed" || bad "effective setting: $(cat "$tmp/out")"
printf 'LinkState=/dev/null\n' >"$tmp/ls.conf"
expect 0 "config --check LinkState without FabricFile" $T config --check "$tmp/ls.conf"
[ "$(cat "$tmp/err")" = "topoplace: warning: $tmp/ls.conf: LinkState does nothing without FabricFile" ] &&
	ok "LinkState without FabricFile: one warning line" || bad "LinkState alone: '$(cat "$tmp/err")'"
printf 'MaxNodes=2\n\nMinNodes=4\n' >"$tmp/mm.conf"
expect 2 "config --check MinNodes above MaxNodes" $T config --check "$tmp/mm.conf"
grep -q "^topoplace: $tmp/mm.conf:3: MinNodes=4 is above MaxNodes=2" "$tmp/err" &&
	ok "MinNodes above MaxNodes: the later key's line" || bad "MinNodes/MaxNodes: $(cat "$tmp/err")"
printf 'Partitions="gpu, cpu"\n' >"$tmp/pb.conf"
expect 2 "config --check a blank in Partitions" $T config --check "$tmp/pb.conf"
grep -q "pb.conf:1: Partitions=gpu, cpu: blank in list" "$tmp/err" &&
	ok "a blank in a list refused" || bad "Partitions blank: $(cat "$tmp/err")"
printf 'FabricFile=/x\nFabric=/y\n' >"$tmp/bad.conf"
expect 2 "config --check bad" $T config --check "$tmp/bad.conf"
grep -q "bad.conf:2: unknown key" "$tmp/err" && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
	ok "bad key named with its line" || bad "bad conf: $(cat "$tmp/err")"
# read as slurmctld reads it: a FIFO nobody writes is refused at once
mkdir "$tmp/etc"
mkfifo "$tmp/etc/topoplace.conf"
expect 2 "config --check a FIFO" timeout 10 $T config --check "$tmp/etc/topoplace.conf"
grep -q "etc/topoplace.conf: not a regular file" "$tmp/err" &&
	ok "config --check names the FIFO" || bad "config --check FIFO: $(cat "$tmp/err")"
expect 2 "show with a FIFO topoplace.conf" env SLURM_CONF="$tmp/etc/slurm.conf" \
	timeout 10 $T show jobs
grep -q "etc/topoplace.conf: not a regular file" "$tmp/err" &&
	ok "show names the FIFO" || bad "show FIFO: $(cat "$tmp/err")"
rm "$tmp/etc/topoplace.conf"
printf 'PriceBudget=5000\n' >"$tmp/pb.conf"
expect 2 "config --check PriceBudget=5000" $T config --check "$tmp/pb.conf"
grep -q "pb.conf:1: PriceBudget=5000: out of range 0..1000" "$tmp/err" &&
	ok "range error names key, value and range" || bad "PriceBudget: $(cat "$tmp/err")"

# ---- topoplace(1): every option of a command's usage lines in SYNOPSIS;
# the exit codes --help gives, in EXIT STATUS ----
man1="${TP_SRCDIR:-.}/doc/topoplace.1"
sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p' "$man1" >"$tmp/synopsis"
# usage CMD...: CMD's --help in $tmp/help, its usage lines (up to the
# first blank line) in $tmp/usage; a failed check unless --help exits 0
# with a usage line and at least one option in it (an empty --help would
# leave the loops below nothing to check)
usage() {
	$T "$@" --help >"$tmp/help" 2>"$tmp/help.err"
	rc=$?
	sed '/^$/q' "$tmp/help" >"$tmp/usage"
	[ "$rc" -eq 0 ] || bad "$* --help: exit $rc"
	grep -q "^Usage: topoplace $* " "$tmp/usage" || bad "$* --help: no usage line"
	grep -q -- ' \[*--[a-z]' "$tmp/usage" || bad "$* --help: no option in its usage"
}
# help has its --help too (it was "help: unknown command '--help'")
expect 0 "help --help" $T help --help
grep -q "^Usage: topoplace COMMAND" "$tmp/out" && ok "help --help: the usage" || bad "help --help: $(head -2 "$tmp/out")"
f0=$failures
for c in discover monitor place cost simulate trace draw plan config nccl-topo; do
	usage $c
	man_c=$(printf '%s' "$c" | sed 's/-/\\-/g')
	# the command's lines: from ".B topoplace CMD" to the next .br
	awk -v h=".B topoplace $man_c" 'index($0, h) == 1 { on = 1 } /^\.(br|SH)/ { on = 0 } on' \
		"$tmp/synopsis" >"$tmp/syn.c"
	[ -s "$tmp/syn.c" ] || bad "$c missing from topoplace(1) SYNOPSIS"
	for o in $(grep -o -- '--[a-z-]*' "$tmp/usage" | sort -u); do
		grep -qF -- "$(printf '%s' "$o" | sed 's/-/\\-/g')" "$tmp/syn.c" ||
			bad "topoplace(1) SYNOPSIS lacks $c $o"
	done
done
[ "$failures" -eq "$f0" ] && ok "topoplace(1) SYNOPSIS checked against the usage lines"
# every option of these commands' usage lines has a line of its own in --help
f0=$failures
for c in discover monitor cost simulate trace config nccl-topo "fabric health" "fabric diff"; do
	# shellcheck disable=SC2086 # "fabric health": two words
	usage $c
	for o in $(grep -o -- '--[a-z-]*' "$tmp/usage" | sort -u); do
		grep -qE -- "^ +(-[a-zA-Z], )?$o\b|^ +--[a-z-]+ [A-Z]+, $o\b" "$tmp/help" ||
			bad "$c --help does not describe $o"
	done
done
[ "$failures" -eq "$f0" ] && ok "every option in the usage lines described in --help"
# -h/--help and the long name of -o are options like the others: --help lists them
f0=$failures
for c in discover monitor place cost simulate trace draw plan config nccl-topo show; do
	$T $c --help | grep -qE -- "^ +-h, --help +this text" || bad "$c --help does not list -h, --help"
done
for c in trace draw plan nccl-topo discover; do
	$T $c --help | grep -qE -- "^ +-o, --output " || bad "$c --help does not list -o, --output"
done
[ "$failures" -eq "$f0" ] && ok "-h, --help and -o, --output listed by the commands' --help"
$T cost --help | grep -q -- "--algo A .*ring (default)" && ok "cost --help names the default --algo" ||
	bad "cost --help: no default --algo"
expect 0 "show --help" $T show --help
grep -q "^Usage: topoplace show job JOBID" "$tmp/out" && ok "show --help prints its usage" ||
	bad "show --help: $(cat "$tmp/out" "$tmp/err")"
# the health sweep asks by LID: without a subnet manager it fails
# (health_ibsim.sh checks that), which the docs must not soften
for c in "fabric health" monitor; do
	# shellcheck disable=SC2086 # "fabric health": two words
	$T $c --help | tr '\n' ' ' | grep -q "Needs a subnet manager" &&
		ok "$c --help: needs a subnet manager" ||
		bad "$c --help does not say it needs a subnet manager"
done
sed -n '/^\.SS fabric health/,/^\.SS fabric diff/p' "$man1" | tr '\n' ' ' |
	grep -q 'and a subnet manager: .*(no subnet manager?)", exit status 1' &&
	ok "topoplace(1), fabric health: needs a subnet manager" ||
	bad "topoplace(1), fabric health: a subnet manager not said to be needed"
sed -n '/^\.SS monitor/,/^\.SS HEALTH RULES/p' "$man1" | tr '\n' ' ' |
	grep -q 'a subnet manager included: without one it exits with status 1' &&
	ok "topoplace(1), monitor: needs a subnet manager" ||
	bad "topoplace(1), monitor: a subnet manager not said to be needed"
sed -n '/^\.SH EXIT STATUS/,/^\.SH FILES/p' "$man1" >"$tmp/exit"
for code in 0 1 2 3; do
	grep -q "^\.B $code\$" "$tmp/exit" && $T --help | grep -q "[:;] $code " &&
		ok "exit status $code in --help and topoplace(1)" || bad "exit status $code not in both"
done

# ---- generated fabrics ----
expect 0 "generate fat-tree" $T fabric generate fat-tree --nics-per-host 1 --leaves 4 --spines 2 --hosts-per-leaf 8 --uplinks 2 --interleave -o "$tmp/ft.json"
$T fabric show "$tmp/ft.json" --json >"$tmp/ft.show"
# hierarchical priced as the collective library runs it: host phases through the host
# segment (one wait each, TP_SCHED_SEG_WAIT = 0.9 steps), as rings of g-1 = 3 steps under
# TOPOPLACE_COLL_SHM=0: 2 x 2.1 alpha (5 us) more
for shm in 1 0; do
	TOPOPLACE_COLL_SHM=$shm $T cost --fabric "$tmp/ft.json" --hosts 'node[001-004]' --bytes 1K \
		--algo hierarchical --gpus-per-host 4 --json >"$tmp/hier$shm.json"
done
d=$(jq -n --slurpfile a "$tmp/hier1.json" --slurpfile b "$tmp/hier0.json" \
	'($b[0].latency_s - $a[0].latency_s) * 1e6 | round')
[ "$d" = 21 ] && ok "TOPOPLACE_COLL_SHM=0 prices the host phases as rings (+4.2 alpha)" ||
	bad "hierarchical latency with/without the host segment differs by ${d:-?} us, want 21"
# place prices in the same environment as cost: its prediction is the faster
# of cost's ring and hierarchical on its hosts, with the host segment or not
for shm in 1 0; do
	TOPOPLACE_COLL_SHM=$shm $T place --fabric "$tmp/ft.json" --request nodes=2,bytes=64K --json >"$tmp/pl$shm.json"
	h=$(jq -r '.hosts | join(",")' "$tmp/pl$shm.json")
	for a in ring hierarchical; do
		TOPOPLACE_COLL_SHM=$shm $T cost --fabric "$tmp/ft.json" --hosts "$h" --bytes 64K --algo $a \
			--json >"$tmp/c$a.json"
	done
	jq -e -n --slurpfile p "$tmp/pl$shm.json" --slurpfile r "$tmp/cring.json" \
		--slurpfile h "$tmp/chierarchical.json" \
		'[$r[0].seconds, $h[0].seconds] | min | . == $p[0].predicted_s' >/dev/null &&
		ok "TOPOPLACE_COLL_SHM=$shm: place predicts as cost does" ||
		bad "TOPOPLACE_COLL_SHM=$shm: place $(jq .predicted_s "$tmp/pl$shm.json"), cost ring $(jq .seconds "$tmp/cring.json"), hierarchical $(jq .seconds "$tmp/chierarchical.json")"
done
# cost prices a pick of uneven GPU counts as place did: NAME:G for every host, or place's
# ring order line as it prints it
$T place --fabric "$tmp/ft.json" --request gpus=12 --json >"$tmp/pg.json"
h=$(jq -r '[.hosts, .gpus] | transpose | map("\(.[0]):\(.[1])") | join(",")' "$tmp/pg.json")
ro=$($T place --fabric "$tmp/ft.json" --request gpus=12 | sed -n 's/^ring order //p')
for a in ring hierarchical; do
	$T cost --fabric "$tmp/ft.json" --hosts "$h" --bytes 1G --algo $a --json >"$tmp/u$a.json"
done
$T cost --fabric "$tmp/ft.json" --hosts "$ro" --bytes 1G --algo "$(jq -r .algo "$tmp/pg.json")" \
	--json >"$tmp/uro.json"
jq -e -n --slurpfile p "$tmp/pg.json" --slurpfile r "$tmp/uring.json" \
	--slurpfile c "$tmp/uhierarchical.json" --slurpfile o "$tmp/uro.json" \
	'($p[0].gpus | unique | length) > 1 and
	 ([$r[0].seconds, $c[0].seconds] | min) == $p[0].predicted_s and
	 $o[0].seconds == $p[0].predicted_s' >/dev/null &&
	ok "cost NAME:G prices place's uneven GPU split ($h; its ring order line too)" ||
	bad "cost NAME:G: place $(jq -c '[.gpus, .predicted_s]' "$tmp/pg.json"), cost $(jq .seconds "$tmp/uring.json" "$tmp/uhierarchical.json" "$tmp/uro.json" | tr '\n' ' ')"
# a plan prices the hierarchical all-reduce as the library pipelines it (segments of at least
# TOPOPLACE_COLL_SEGMENT bytes, default 1 MiB, 16 at most) and keeps per size the faster of that
# and one piece: on these 2:1 up-links pipelined at 256 MiB and 1 GiB, one piece up to 16 MiB
# (1 MiB segments' latency costs more than they hide at 400 Gb/s), the same as with =0 there;
# a value the library refuses is refused here too
for seg in 1048576 0; do
	TOPOPLACE_COLL_SEGMENT=$seg $T plan --fabric "$tmp/ft.json" --nodes 'node[001-032]' \
		--json >"$tmp/plan-seg$seg.json"
done
jq -e -n --slurpfile a "$tmp/plan-seg1048576.json" --slurpfile b "$tmp/plan-seg0.json" \
	'$a[0].sizes == [65536, 1048576, 16777216, 268435456, 1073741824] and
	 $a[0].hier_pipelined == [false, false, false, true, true] and
	 $b[0].hier_pipelined == [false, false, false, false, false] and
	 ([range(0; 3) | ($a[0].predicted.hierarchical[.] / $b[0].predicted.hierarchical[.] - 1) |
	   fabs < 1e-9] | all) and
	 $a[0].predicted.hierarchical[3] < 0.95 * $b[0].predicted.hierarchical[3] and
	 $a[0].predicted.hierarchical[4] < 0.9 * $b[0].predicted.hierarchical[4] and
	 $a[0].predicted.ring == $b[0].predicted.ring' >/dev/null &&
	ok "plan: hierarchical pipelined where faster (256 MiB, 1 GiB), TOPOPLACE_COLL_SEGMENT=0 in one piece" ||
	bad "plan: hierarchical $(jq -c .predicted.hierarchical "$tmp/plan-seg1048576.json") pipelined, $(jq -c .predicted.hierarchical "$tmp/plan-seg0.json") not"
# cost --segment: the plan's choice for one size (the faster of pipelined and one piece)
for b in 16M 256M; do
	$T cost --fabric "$tmp/ft.json" --hosts 'node[001-032]' --bytes $b --algo hierarchical \
		--segment 1M --json >"$tmp/cseg$b.json"
done
jq -e -n --slurpfile a "$tmp/cseg16M.json" --slurpfile b "$tmp/cseg256M.json" \
	--slurpfile p "$tmp/plan-seg1048576.json" \
	'$a[0].pipelined == $p[0].hier_pipelined[2] and $b[0].pipelined == $p[0].hier_pipelined[3] and
	 $a[0].seconds == $p[0].predicted.hierarchical[2] and $b[0].pipelined' >/dev/null &&
	ok "cost --segment: the plan's pipelined choice and prediction" ||
	bad "cost --segment: $(jq -c '[.seconds, .pipelined]' "$tmp/cseg16M.json" "$tmp/cseg256M.json"), plan $(jq -c '[.hier_pipelined, .predicted.hierarchical]' "$tmp/plan-seg1048576.json")"
expect 2 "cost --segment over 1 GiB" $T cost --fabric "$tmp/ft.json" --hosts 'node[001-032]' \
	--bytes 1M --segment 2G
expect 2 "cost --segment with a ring" $T cost --fabric "$tmp/ft.json" --hosts 'node[001-032]' \
	--bytes 16M --segment 1M
grep -q "add --algo hierarchical" "$tmp/err" && ok "cost --segment names the algorithm it needs" ||
	bad "cost --segment with a ring: $(cat "$tmp/err")"
# plan --state: priced on the state's links (every up-link at a quarter of its lanes): slower
# predictions, the same schedule (everything but the model's part), the header names the file
jq '{format: "topoplace-state/1", links: [.links | to_entries[] |
	select(.value[0] == "switch" and .value[3] == "switch") | {link: .key, health: 0.25}]}' \
	"$tmp/ft.json" >"$tmp/ft-quarter.json"
$T plan --fabric "$tmp/ft.json" --nodes 'node[001-032]' --json >"$tmp/plan-idle.json" &&
	$T plan --fabric "$tmp/ft.json" --nodes 'node[001-032]' --json --state "$tmp/ft-quarter.json" \
		>"$tmp/plan-quarter.json" &&
	jq -e -n --slurpfile a "$tmp/plan-idle.json" --slurpfile b "$tmp/plan-quarter.json" \
		'($a[0] | del(.predicted, .recommend, .hier_pipelined)) ==
		 ($b[0] | del(.predicted, .recommend, .hier_pipelined)) and
		 $b[0].predicted.ring[4] > 2 * $a[0].predicted.ring[4] and
		 $b[0].predicted.tree[4] > 2 * $a[0].predicted.tree[4]' >/dev/null &&
	$T plan --fabric "$tmp/ft.json" --nodes 'node[001-032]' --state "$tmp/ft-quarter.json" |
	grep -qx "all-reduce as libtopoplace-coll runs it (cost model, the links of $tmp/ft-quarter.json)" &&
	ok "plan --state: priced on the state's links, the same schedule" ||
	bad "plan --state: ring $(jq -c .predicted.ring "$tmp/plan-idle.json") idle, $(jq -c .predicted.ring "$tmp/plan-quarter.json") on quarter up-links"
usage_err "plan --state with --no-predict" "^topoplace plan: --state prices the plan: not with --no-predict$" \
	$T plan --fabric "$tmp/ft.json" --nodes node001 --no-predict --state "$tmp/ft-quarter.json"
expect 2 "plan --state: a missing file" $T plan --fabric "$tmp/ft.json" --nodes node001 \
	--state "$tmp/no-such-state.json"
grep -q "no-such-state.json" "$tmp/err" && ok "plan --state: the missing file named" ||
	bad "plan --state missing: $(cat "$tmp/err")"
TOPOPLACE_COLL_SEGMENT=1k $T plan --fabric "$tmp/ft.json" --nodes 'node[001-032]' >/dev/null 2>"$tmp/seg.err"
[ $? = 2 ] && grep -qx "topoplace: plan: TOPOPLACE_COLL_SEGMENT='1k' is not a byte count 0..1073741824" "$tmp/seg.err" &&
	ok "plan: a bad TOPOPLACE_COLL_SEGMENT refused, exit 2" || bad "plan: TOPOPLACE_COLL_SEGMENT=1k: $(cat "$tmp/seg.err")"
jeq "$tmp/ft.show" .format topoplace-fabric-summary/1 "a summary, not a fabric model"
jeq "$tmp/ft.show" .nics_per_host_max 1 "NICs a host"
jeq "$tmp/ft.show" .hosts 32 "fat-tree hosts"
jeq "$tmp/ft.show" .switches 6 "fat-tree switches"
jeq "$tmp/ft.show" '.switch_levels|join(",")' "4,2" "fat-tree levels"
jeq "$tmp/ft.show" '.groups|join(",")' "4,1" "fat-tree groups"
jeq "$tmp/ft.show" .rails 1 "fat-tree rails"
jeq "$tmp/ft.show" '.oversubscription[0]' 2 "fat-tree 8 down : 4 up"
# a switch cabled to nothing (a spare in a dump) has no level: counted,
# so the levels add up to the switches
jq -c '.switches += [{"guid":"0x0002c903000000ff","desc":"spare","ports":24,"subnet":0}] | del(.derived)' \
	"$tmp/ft.json" >"$tmp/spare.json"
$T fabric show "$tmp/spare.json" >"$tmp/spare.show" 2>&1
grep -qx '  switches       7 (level 1: 4, level 2: 2, no level: 1)' "$tmp/spare.show" &&
	ok "fabric show: a switch with no level counted" || bad "fabric show, spare switch: $(head -4 "$tmp/spare.show")"
jeq "$tmp/ft.show" '.links' $((32 + 4 * 2 * 2)) "fat-tree links (parallel counted)"
$T fabric hosts "$tmp/ft.json" --json >"$tmp/ft.hosts"
jeq "$tmp/ft.hosts" 'length' 32 "hosts rows"
jeq "$tmp/ft.hosts" '.[0].gpus' 8 "hosts gpus"
# interleaved: node001 and node002 are on different leaves
jeq "$tmp/ft.hosts" '(.[0].groups[0] != .[1].groups[0])' true "interleaved groups"
expect 0 "topology-conf" $T fabric topology-conf "$tmp/ft.json" -o "$tmp/topology.conf"
grep -q '^SwitchName=.*Nodes=' "$tmp/topology.conf" && ok "tree has leaf lines" || bad "tree has leaf lines"
grep -q '^SwitchName=.*Switches=' "$tmp/topology.conf" && ok "tree has a top line" || bad "tree has a top line"
expect 0 "topology-conf --block" $T fabric topology-conf "$tmp/ft.json" --block
grep -q '^BlockName=' "$tmp/out" && ok "block lines" || bad "block lines"
# no multi-node NVLink domain: the blocks are the leaf groups, said on stderr
[ "$(wc -l <"$tmp/err")" -eq 1 ] &&
	grep -q "^topoplace: warning: $tmp/ft.json: no multi-node NVLink domains, so the blocks are the level-1 switch groups$" "$tmp/err" &&
	ok "topology-conf --block warns of the fallback" || bad "topology-conf --block fallback: $(cat "$tmp/err")"
$T fabric generate nvl72 --racks 2 -o "$tmp/nvlb.json" >/dev/null
expect 0 "topology-conf --block with NVLink domains" $T fabric topology-conf "$tmp/nvlb.json" --block
[ ! -s "$tmp/err" ] && grep -q '^BlockName=rack01 ' "$tmp/out" && ok "NVLink blocks, no warning" ||
	bad "topology-conf --block nvl72: $(cat "$tmp/err")"
expect 2 "show takes no -o" $T fabric show "$tmp/ft.json" -o x
grep -q "^topoplace: fabric show: -o/--output does not apply to show (see --help)$" "$tmp/err" &&
	ok "show -o: the option named" || bad "show -o: $(cat "$tmp/err")"
expect 2 "hosts takes no --block" $T fabric hosts "$tmp/ft.json" --block
grep -q "^topoplace: fabric hosts: --block does not apply to hosts (see --help)$" "$tmp/err" &&
	ok "hosts --block: the option named" || bad "hosts --block: $(cat "$tmp/err")"

# ---- usage errors: one line naming the command and the option, exit 2 ----
# usage_err DESC PATTERN CMD...: exit 2 and one stderr line matching PATTERN
usage_err() {
	ue_desc=$1 ue_pat=$2
	shift 2
	expect 2 "$ue_desc" "$@"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "$ue_pat" "$tmp/err" &&
		ok "$ue_desc: one line" || bad "$ue_desc: $(cat "$tmp/err")"
}
usage_err "generate --bogus" "^topoplace fabric generate: unrecognized option '--bogus' (see --help)$" \
	$T fabric generate fat-tree --bogus
usage_err "place --bogus" "^topoplace place: unrecognized option '--bogus'" $T place --bogus
usage_err "fabric show --bogus" "^topoplace fabric show: unrecognized option" $T fabric show "$tmp/ft.json" --bogus
usage_err "config --bogus" "^topoplace config: unrecognized option '--bogus' (see --help)$" $T config --bogus
usage_err "monitor --fabric without its argument" "option '--fabric' requires an argument" $T monitor --fabric
usage_err "generate --interleave=1" "option '--interleave' takes no argument" $T fabric generate fat-tree --interleave=1
usage_err "fabric health --state-out" "--state-out is an option of monitor" \
	$T fabric health --fabric "$tmp/ft.json" --state-out "$tmp/x.json"
usage_err "fabric health --rediscover" "--rediscover is an option of monitor" \
	$T fabric health --fabric "$tmp/ft.json" --rediscover 5
usage_err "generate --leaves beyond the generator" "^topoplace: --leaves: expected an integer 1..65536" \
	$T fabric generate fat-tree --leaves 1048576 -o "$tmp/x.json"
usage_err "generate too many hosts" "4294967296 hosts, at most 1048576: fewer --leaves or --hosts-per-leaf" \
	$T fabric generate fat-tree --leaves 65536 --hosts-per-leaf 65536 -o "$tmp/x.json"
# a switch wider than a port number holds: refused naming the options (it
# said "already exists"), never written as a file the loader refuses
usage_err "generate a leaf of 65537 ports" \
	"fat tree: a leaf needs 65537 ports, at most 65535: fewer --hosts-per-leaf x --nics-per-host (8192 x 8)" \
	$T fabric generate fat-tree --leaves 2 --hosts-per-leaf 8192 --nics-per-host 8 --spines 1 --uplinks 1 -o "$tmp/x.json"
usage_err "generate --spines 65409" "a leaf needs 65537 ports.* or --spines x --uplinks (65409 x 1)" \
	$T fabric generate fat-tree --spines 65409 -o "$tmp/x.json"
usage_err "generate a spine of 65536 ports" "a spine needs 65536 ports, at most 65535: fewer --leaves x --uplinks" \
	$T fabric generate fat-tree --leaves 65536 --hosts-per-leaf 1 -o "$tmp/x.json"
usage_err "generate rail --hosts-per-su 65536" "rail fabric: a leaf needs 131072 ports.*: fewer --hosts-per-su" \
	$T fabric generate rail --sus 1 --hosts-per-su 65536 --rails 1 -o "$tmp/x.json"
usage_err "generate nvl72 --spines 65536" "NVL72 fabric: a leaf needs 65545 ports.*: fewer --spines" \
	$T fabric generate nvl72 --racks 1 --spines 65536 -o "$tmp/x.json"
usage_err "generate nvl72 --leaves-per-rack above --hosts-per-rack" \
	"NVL72 fabric: --leaves-per-rack 37, at most --hosts-per-rack (36)" \
	$T fabric generate nvl72 --hosts-per-rack 36 --leaves-per-rack 37 -o "$tmp/x.json"
[ ! -e "$tmp/x.json" ] && ok "nothing written for a refused fabric" || bad "a refused fabric written"
for o in "rail --leaves 3" "rail --degrade 0.5" "rail --nics-per-host 2" "nvl72 --interleave"; do
	k=${o%% *} opt=${o#* }
	usage_err "generate $o" "${opt%% *} does not apply to $k" $T fabric generate $o -o "$tmp/x.json"
done
usage_err "draw --bytes without --heat" "--bytes applies to --heat only" \
	$T draw --fabric "$tmp/ft.json" --bytes 1G -o "$tmp/x.svg"
# an empty value or file name is refused naming the option, not as "'': no such file"
usage_err "plan --fabric ''" "^topoplace plan: option '--fabric' has an empty value (see --help)$" \
	$T plan --fabric '' --nodes node001
usage_err "plan --fabric=" "^topoplace plan: option '--fabric' has an empty value" $T plan --fabric= --nodes node001
usage_err "draw -o ''" "^topoplace draw: option '-o' has an empty value" $T draw --fabric "$tmp/ft.json" -o ''
usage_err "fabric generate --prefix ''" "option '--prefix' has an empty value" \
	$T fabric generate fat-tree --prefix '' -o "$tmp/x.json"
usage_err "trace ''" "^topoplace: trace: empty file name$" $T trace ''
usage_err "fabric show ''" "^topoplace: fabric: empty file name$" $T fabric show ''
usage_err "discover --ibnetdiscover a ''" "^topoplace: discover: empty file name$" \
	$T discover --ibnetdiscover "$tmp/ft.json" '' -o "$tmp/x.json"
# cost: a size of 0 is refused as place's bytes=0 is; one rank moves nothing
usage_err "cost NAME:G for some hosts only" "cost: --hosts: give every host its ranks (NAME:G) or none$" \
	$T cost --fabric "$tmp/ft.json" --hosts node001:2,node002 --bytes 1G
usage_err "cost NAME:G with --gpus-per-host" "or none, and not with --gpus-per-host$" \
	$T cost --fabric "$tmp/ft.json" --hosts node001:2,node002:2 --gpus-per-host 2 --bytes 1G
usage_err "cost NAME:G not a count" "cost: --hosts: 'node001:0': a host's ranks are NAME:G, G from 1 to 1024$" \
	$T cost --fabric "$tmp/ft.json" --hosts node001:0,node002:2 --bytes 1G
usage_err "cost NAME:G with a sign" "cost: --hosts: 'node001:+2': a host's ranks are NAME:G" \
	$T cost --fabric "$tmp/ft.json" --hosts node001:+2,node002:2 --bytes 1G
usage_err "cost NAME:G over the host's GPUs" "cost: host 'node001' has 8 GPUs, 9 asked for$" \
	$T cost --fabric "$tmp/ft.json" --hosts node001:9,node002:2 --bytes 1G
usage_err "cost --bytes 0" "cost: --bytes: expected a size 1 .. 1P .*got '0'" \
	$T cost --fabric "$tmp/ft.json" --hosts node001 --bytes 0
usage_err "fabric diff --ibnetdiscover --port" "--ca/--port apply to --live only" \
	$T fabric diff --fabric "$tmp/ft.json" --ibnetdiscover "$tmp/ft.json" --port 1
# ---- fabric diff against a dump: a cable trained down is a change ----
printf '%s\n' \
	"CA 3 1 0x0002c90300000011 4x EDR - SW 1 1 0x0002c90300000001 ( 'node001 HCA-1' - 'leaf01' )" \
	"CA 4 1 0x0002c90300000012 4x EDR - SW 1 2 0x0002c90300000001 ( 'node002 HCA-1' - 'leaf01' )" \
	>"$tmp/d.txt"
expect 0 "discover a two-host dump" $T discover -q --ibnetdiscover "$tmp/d.txt" -o "$tmp/d.json"
expect 0 "fabric diff: the dump against its own model" \
	$T fabric diff --fabric "$tmp/d.json" --ibnetdiscover "$tmp/d.txt"
grep -q '^0 gone, 0 moved, 0 new, 0 at another rate, 0 unseen of 2 links$' "$tmp/out" &&
	ok "fabric diff: no change counted" || bad "fabric diff unchanged: $(cat "$tmp/out")"
sed '/node002/s/4x EDR/1x SDR/' "$tmp/d.txt" >"$tmp/d1x.txt"
expect 3 "fabric diff: a link at 1x SDR where the model says 4x EDR exits 3" \
	$T fabric diff --fabric "$tmp/d.json" --ibnetdiscover "$tmp/d1x.txt"
grep -qF 'rate: link 1 node002 HCA-1:1 - leaf01:2 runs 1x SDR (2.5 Gb/s), the model says 4x EDR (100 Gb/s)' \
	"$tmp/out" && grep -q '^0 gone, 0 moved, 0 new, 1 at another rate, 0 unseen of 2 links$' "$tmp/out" &&
	ok "fabric diff names both rates" || bad "fabric diff rate: $(cat "$tmp/out")"
expect 3 "fabric diff --json: a link at another rate" \
	$T fabric diff --fabric "$tmp/d.json" --ibnetdiscover "$tmp/d1x.txt" --json
jeq "$tmp/out" '[.changed, (.rate | map("\(.link) \(.from) \(.from_gbps) \(.to) \(.to_gbps)"))] | tostring' \
	'[true,["1 4x EDR 100 1x SDR 2.5"]]' "fabric diff --json: the rate change"
# a dump sharing no node with the model is another fabric's: bad input,
# not "no change" with every link unseen
sed 's/0x0002c9030000/0x0002c9040000/g' "$tmp/d.txt" >"$tmp/dother.txt"
usage_err "fabric diff: a dump of another fabric" \
	"^topoplace: fabric diff: $tmp/d.json: none of the fabric file's switches and CAs is in $tmp/dother.txt: a file of another fabric?\$" \
	$T fabric diff --fabric "$tmp/d.json" --ibnetdiscover "$tmp/dother.txt"
[ ! -s "$tmp/out" ] && ok "fabric diff: nothing on stdout for another fabric" ||
	bad "fabric diff, another fabric: $(cat "$tmp/out")"
sed '/node002/s/4x EDR/4x ???/' "$tmp/d.txt" >"$tmp/dq.txt"
expect 0 "fabric diff: a speed the dump does not know is no change" \
	$T fabric diff --fabric "$tmp/d.json" --ibnetdiscover "$tmp/dq.txt"
# descriptions that are no UTF-8 (Latin-1 0xE9, a stray 0xFF) reach the
# JSON as U+FFFD, as in the fabric file, never raw
sw=$(printf 'leaf\351"\\sw01') h3=$(printf 'node003 HCA-\377')
printf '%s\n' \
	"CA 3 1 0x0002c90300000011 4x EDR - SW 1 1 0x0002c90300000001 ( 'node001 HCA-1' - '$sw' )" \
	"CA 4 1 0x0002c90300000012 4x EDR - SW 1 2 0x0002c90300000001 ( 'node002 HCA-1' - '$sw' )" \
	"CA 5 1 0x0002c90300000013 4x EDR - SW 1 3 0x0002c90300000001 ( '$h3' - '$sw' )" \
	>"$tmp/d8.txt"
expect 3 "fabric diff --json: a new link whose names are no UTF-8" \
	$T fabric diff --fabric "$tmp/d.json" --ibnetdiscover "$tmp/d8.txt" --json
fffd=$(printf '\357\277\275')
if LC_ALL=C grep -q "$(printf '[\351\377]')" "$tmp/out"; then
	bad "fabric diff --json writes bytes that are no UTF-8: $(od -c "$tmp/out" | head -5)"
else
	jeq "$tmp/out" '.new[0] | "\(.a) \(.b)"' "node003 HCA-$fffd:1 leaf$fffd\"\\sw01:3" \
		"fabric diff --json: U+FFFD for the stray bytes, quote and backslash escaped"
fi
# place and cost check their input as plan does
usage_err "place with an operand" "place: unexpected argument 'extra'" \
	$T place --fabric "$tmp/ft.json" --request nodes=4 extra
usage_err "cost with a host twice" "cost: host 'node001' listed twice" \
	$T cost --fabric "$tmp/ft.json" --hosts node001,node001 --bytes 1G
usage_err "cost with more GPUs than a host has" "cost: host 'node001' has 8 GPUs, 64 asked for" \
	$T cost --fabric "$tmp/ft.json" --hosts node001,node002 --bytes 1G --gpus-per-host 64
expect 0 "generate a fabric without GPUs" $T fabric generate fat-tree --gpus-per-host 0 --leaves 2 \
	--hosts-per-leaf 2 -o "$tmp/nogpu.json"
usage_err "place on a fabric without GPUs" "the fabric has no GPUs" \
	$T place --fabric "$tmp/nogpu.json" --request nodes=2
rc=0; $T place --fabric "$tmp/nogpu.json" --request nodes=2 --json >"$tmp/pl0.json" 2>/dev/null || rc=$?
[ "$rc" = 2 ] && jq -e '.placed == false and (.reason | startswith("the fabric has no GPUs"))' "$tmp/pl0.json" >/dev/null &&
	ok "place --json without GPUs: an object, placed false, exit 2" ||
	bad "place --json without GPUs: exit $rc, $(cat "$tmp/pl0.json")"
usage_err "place nodes=4,gpus=9" "does not split evenly" \
	$T place --fabric "$tmp/ft.json" --request nodes=4,gpus=9
# a fabric in pieces (no switch-to-switch cable): a job larger than any
# piece can never fit (exit 2), though the fabric has hosts enough; one
# that fits a piece is placed
jq -c '.links |= map(select(.[0] != "switch" or .[3] != "switch")) | del(.derived)' \
	"$tmp/ft.json" >"$tmp/split.json"
usage_err "place on a fabric in pieces" "place: nodes=9: can never fit this fabric" \
	$T place --fabric "$tmp/split.json" --request nodes=9
expect 0 "place in one piece" $T place --fabric "$tmp/split.json" --request nodes=2
# --json: an object on stdout whether it fits or not (a script reading
# stdout got nothing), the exit status as without
rc=0; $T place --fabric "$tmp/split.json" --request nodes=9 --json >"$tmp/pl9.json" 2>/dev/null || rc=$?
[ "$rc" = 2 ] && jq -e '.placed == false and .request == "nodes=9" and .reason == "can never fit this fabric" and .policy == "topoplace"' \
	"$tmp/pl9.json" >/dev/null && ok "place --json, never fits: placed false, the reason, exit 2" ||
	bad "place --json, never fits: exit $rc, $(cat "$tmp/pl9.json")"
$T place --fabric "$tmp/split.json" --request nodes=2 --json >"$tmp/pl2.json"
jeq "$tmp/pl2.json" .placed true "place --json, placed"
# sizes: units K..P and the cap (1 PiB) as topoplace(1) says, everywhere
expect 0 "cost --bytes 1P" $T cost --fabric "$tmp/ft.json" --hosts node001,node002 --bytes 1P
expect 0 "cost on one rank" $T cost --fabric "$tmp/ft.json" --hosts node001 --gpus-per-host 1 --bytes 1G
grep -q "^no bottleneck: nothing crosses a link$" "$tmp/out" && ok "one rank: no bottleneck named" ||
	bad "one rank: $(cat "$tmp/out")"
$T cost --fabric "$tmp/ft.json" --hosts node001 --gpus-per-host 1 --bytes 1G --json >"$tmp/c1.json"
jeq "$tmp/c1.json" .bottleneck_link none "one rank, --json"
expect 0 "draw --heat --bytes 1PiB" $T draw --fabric "$tmp/ft.json" --heat --bytes 1PiB -o "$tmp/x.svg"
expect 0 "place bytes=1P" $T place --fabric "$tmp/ft.json" --request nodes=2,bytes=1P
usage_err "cost --bytes 2P" "expected a size 1 .. 1P" \
	$T cost --fabric "$tmp/ft.json" --hosts node001,node002 --bytes 2P
# nccl-topo writes a directory: '-' and a file are refused by the name given
mkdir -p "$tmp/nodexml"
usage_err "nccl-topo -o -" "nccl-topo: -o -: OUTDIR is a directory" \
	env -C "$tmp" $T nccl-topo --node-xml "$tmp/nodexml" -o -
[ ! -e "$tmp/-" ] && ok "nccl-topo -o - made no directory '-'" || bad "nccl-topo -o - made a directory '-'"
usage_err "nccl-topo -o FILE" "nccl-topo: -o $tmp/ft.json: not a directory" \
	$T nccl-topo --node-xml "$tmp/nodexml" -o "$tmp/ft.json"
# both trees hold <host>.xml: -o the input directory (by another path)
# would replace the hwloc exports with NCCL files
printf '<?xml version="1.0"?>\n<topology></topology>\n' >"$tmp/nodexml/node001.xml"
cp "$tmp/nodexml/node001.xml" "$tmp/node001.keep"
usage_err "nccl-topo -o the input directory" "nccl-topo: -o $tmp/nodexml/. is the --node-xml directory" \
	$T nccl-topo --node-xml "$tmp/nodexml" -o "$tmp/nodexml/."
cmp -s "$tmp/nodexml/node001.xml" "$tmp/node001.keep" && ok "nccl-topo left the hwloc file as it was" ||
	bad "nccl-topo overwrote its input $tmp/nodexml/node001.xml"
rm -f "$tmp/nodexml/node001.xml"

expect 0 "generate rail" $T fabric generate rail --sus 2 --hosts-per-su 4 --rails 4 --spines-per-rail 2 -o "$tmp/rail.json"
$T fabric show "$tmp/rail.json" --json >"$tmp/rail.show"
jeq "$tmp/rail.show" .rails 4 "rail rails"
jeq "$tmp/rail.show" .subnets 4 "rail subnets"
jeq "$tmp/rail.show" '.groups[0]' 2 "rail level-1 groups = SUs"
jeq "$tmp/rail.show" .degraded_hosts 0 "rail degraded"
jeq "$tmp/rail.show" .weak_hosts 0 "rail: no weakly cabled host"
# simulate's built-in fabric: 26 of its 64 hosts have a cable down or at
# half width; show counts them, hosts lists the same ones with their
# cables and the ring rate through them
expect 0 "generate degraded fat tree" $T fabric generate fat-tree --leaves 8 --hosts-per-leaf 8 \
	--gpus-per-host 8 --nics-per-host 8 --spines 4 --uplinks 8 --degrade 0.05 --degrade-seed 1 \
	-o "$tmp/deg.json"
$T fabric show "$tmp/deg.json" --json >"$tmp/deg.show"
jeq "$tmp/deg.show" .weak_hosts 26 "degraded fat tree: weakly cabled hosts"
$T fabric hosts "$tmp/deg.json" --json >"$tmp/deg.hosts"
jeq "$tmp/deg.hosts" '[.[] | select(.weak)] | length' 26 "hosts --json: the same weak hosts"
jq -e 'all(.[]; (.ring_gbps < 3200) == .weak and (.cables <= 8))' "$tmp/deg.hosts" >/dev/null &&
	ok "hosts --json: weak exactly where the ring rate is below the best (3200 Gb/s)" ||
	bad "hosts --json: weak and ring_gbps disagree"
$T fabric hosts "$tmp/deg.json" >"$tmp/deg.txt"
[ "$(grep -c 'weakly cabled: [0-9]* cables*, a ring [0-9.]* of 3200 Gb/s' "$tmp/deg.txt")" -eq 26 ] &&
	ok "hosts: 26 lines say weakly cabled" || bad "hosts text: $(grep -c weakly "$tmp/deg.txt") weak lines"
# by rate a host's ring is its cables' sum: more than evenly only where a
# cable runs slower than the others (half width), never less
jq -e 'all(.[]; .ring_gbps_by_rate >= .ring_gbps) and any(.[]; .ring_gbps_by_rate > .ring_gbps)' \
	"$tmp/deg.hosts" >/dev/null && ok "hosts --json: ring_gbps_by_rate the cables' sum" ||
	bad "hosts --json: ring_gbps_by_rate"
half=$(jq '[.[] | select(.ring_gbps_by_rate > .ring_gbps)] | length' "$tmp/deg.hosts")
[ "$(grep -c '; [0-9.]* by rate)' "$tmp/deg.txt")" -eq "$half" ] && [ "$half" -gt 0 ] &&
	ok "hosts: $half half-width hosts say their rate by rate" || bad "hosts text: by rate on $(grep -c 'by rate' "$tmp/deg.txt") lines, $half in the JSON"
# the built-in fabric is this one (the same table after the header), and
# its header's cable counts are this file's: 768 cables designed (512 to
# hosts, 256 up), 25 missing, 24 at 2 lanes
$T simulate --fabric "$tmp/deg.json" --jobs 60 --seeds 1 | tail -n +2 >"$tmp/deg.tab"
$T simulate --jobs 60 --seeds 1 >"$tmp/builtin.tab"
tail -n +2 "$tmp/builtin.tab" | cmp -s - "$tmp/deg.tab" && [ -s "$tmp/deg.tab" ] &&
	ok "simulate's built-in fabric is the documented degraded fat tree" ||
	bad "simulate: the built-in fabric's table differs from the generated one's"
down=$((768 - $(jq '.links | length' "$tmp/deg.json")))
halved=$(jq '[.links[] | select(.[6] == 2)] | length' "$tmp/deg.json")
head -n 1 "$tmp/builtin.tab" | grep -q "1 NIC/GPU, $down of 768 cables down and $halved at half width:" &&
	ok "simulate's header: $down cables down and $halved halved, as in the fabric" ||
	bad "simulate's header: $(head -n 1 "$tmp/builtin.tab"), the fabric: $down down, $halved halved"
$T simulate --fabric "$tmp/deg.json" --jobs 50 --seeds 1 --policies topoplace,slurm-tree --json >"$tmp/deg.sim"
jeq "$tmp/deg.sim" .weak_hosts 26 "simulate --json: the fabric's weakly cabled hosts"
$T simulate --fabric "$tmp/deg.json" --jobs 50 --seeds 1 --policies topoplace,slurm-tree | head -n 1 |
	grep -q ': 64 hosts, 512 GPUs, 26 weakly cabled' && ok "simulate's header says 26 weakly cabled" ||
	bad "simulate's header: $($T simulate --fabric "$tmp/deg.json" --jobs 50 --seeds 1 | head -n 1)"
# Slurm's node weights: health keeps the 26 weak hosts last, for the Slurm
# models and for topoplace as its native plugin honours them; a
# slurm.conf's lines give the same weights
$T simulate --fabric "$tmp/deg.json" --jobs 50 --seeds 1 --policies topoplace,slurm-tree \
	--slurm-weights health --json >"$tmp/degw.sim"
jeq "$tmp/degw.sim" .slurm_weights health "simulate --json: the node weights"
jeq "$tmp/deg.sim" .slurm_weights null "simulate --json: no node weights by default"
[ "$(jq .policies.topoplace.mean_jct_s "$tmp/degw.sim")" != "$(jq .policies.topoplace.mean_jct_s "$tmp/deg.sim")" ] &&
	[ "$(jq .policies[\"slurm-tree\"].mean_jct_s "$tmp/degw.sim")" != "$(jq .policies[\"slurm-tree\"].mean_jct_s "$tmp/deg.sim")" ] &&
	ok "simulate --slurm-weights health: slurm-tree's and topoplace's runs change" ||
	bad "simulate --slurm-weights health: JCTs $(jq -c '[.policies[].mean_jct_s]' "$tmp/deg.sim") vs $(jq -c '[.policies[].mean_jct_s]' "$tmp/degw.sim")"
weak=$($T fabric hosts "$tmp/deg.json" --json | jq -r '[.[] | select(.weak) | .name] | join(",")')
printf 'ClusterName=x\nNodeName=DEFAULT CPUs=8\nNodeName=%s Gres=gpu:8 Weight=100\n' "$weak" >"$tmp/w.conf"
$T simulate --fabric "$tmp/deg.json" --jobs 50 --seeds 1 --policies topoplace,slurm-tree \
	--slurm-weights "$tmp/w.conf" --json >"$tmp/degf.sim"
[ "$(jq -c '.policies | map_values(.mean_jct_s)' "$tmp/degf.sim")" = "$(jq -c '.policies | map_values(.mean_jct_s)' "$tmp/degw.sim")" ] &&
	ok "simulate --slurm-weights: a slurm.conf naming the weak hosts = health" ||
	bad "simulate --slurm-weights FILE vs health: $(jq -c '.policies | map_values(.mean_jct_s)' "$tmp/degf.sim") vs $(jq -c '.policies | map_values(.mean_jct_s)' "$tmp/degw.sim")"
printf 'NodeName=node001 Weight=many\n' >"$tmp/wbad.conf"
expect 2 "simulate --slurm-weights: a bad Weight=" $T simulate --fabric "$tmp/deg.json" --jobs 50 \
	--seeds 1 --slurm-weights "$tmp/wbad.conf"
grep -q "^topoplace: simulate: --slurm-weights: $tmp/wbad.conf: line 1: Weight=many is not a number" "$tmp/err" &&
	ok "simulate --slurm-weights: the error names file and line" || bad "simulate --slurm-weights: $(cat "$tmp/err")"
expect 2 "place --node-weights: a missing file" $T place --fabric "$tmp/deg.json" --request nodes=2 \
	--policy slurm-tree --node-weights "$tmp/none.conf"
grep -q "place: --node-weights: $tmp/none.conf: no such file" "$tmp/err" &&
	ok "place --node-weights: a missing file named" || bad "place --node-weights: $(cat "$tmp/err")"
$T place --fabric "$tmp/deg.json" --request nodes=4,exclusive --policy slurm-tree --node-weights health \
	--json | jq -r '.hosts[]' >"$tmp/wp.hosts"
echo "$weak" | tr , '\n' >"$tmp/weak.list"
[ "$(grep -c . "$tmp/wp.hosts")" -eq 4 ] && ! grep -qxF -f "$tmp/weak.list" "$tmp/wp.hosts" &&
	ok "place --node-weights health: slurm-tree keeps off the weak hosts" ||
	bad "place --node-weights health: $(tr '\n' ' ' <"$tmp/wp.hosts")"
# a plan prices the library's ring and trees (one NIC pair a host boundary,
# the anchors'), as cost --coll does; cost alone spreads them over the 8
# NIC pairs of these hosts (NCCL's channels), and the plan recommends the
# hierarchical all-reduce at 1 GiB
healthy2=$(jq -r '[.[] | select(.weak | not) | .name][0:2] | join(",")' "$tmp/deg.hosts")
$T plan --fabric "$tmp/deg.json" --nodes "$healthy2" --json >"$tmp/p2.json"
for a in ring tree; do
	pc=$(jq ".predicted.$a[4]" "$tmp/p2.json")
	cc=$($T cost --fabric "$tmp/deg.json" --hosts "$healthy2" --bytes 1G --algo $a --coll --json | jq .seconds)
	cn=$($T cost --fabric "$tmp/deg.json" --hosts "$healthy2" --bytes 1G --algo $a --json | jq .seconds)
	[ "$pc" = "$cc" ] && awk -v c="$cc" -v n="$cn" 'BEGIN {exit !(c > 2 * n)}' &&
		ok "plan's 1 GiB $a ($healthy2) = cost --coll's ($cc s), over twice NCCL's channels' ($cn s)" ||
		bad "plan's 1 GiB $a: $pc, cost --coll $cc, cost $cn"
done
jeq "$tmp/p2.json" '.recommend[4].algo' hierarchical "plan on two 8-NIC hosts: hierarchical at 1 GiB"
# with --state, health is the state's: a cable of the first host picked at
# half health makes it weak there
h1=$(head -n 1 "$tmp/wp.hosts")
lk=$(jq --arg h "$h1 " '[.cas[] | .desc | startswith($h)] as $mine |
	[.links | to_entries[] | select(.value[3] == "ca" and $mine[.value[4]]) | .key][0]' "$tmp/deg.json")
printf '{"format":"topoplace-state/1","links":[{"link":%s,"health":0.5}]}\n' "$lk" >"$tmp/wstate.json"
$T place --fabric "$tmp/deg.json" --state "$tmp/wstate.json" --request nodes=4,exclusive \
	--policy slurm-tree --node-weights health --json | jq -r '.hosts[]' >"$tmp/wps.hosts"
[ "$(grep -c . "$tmp/wps.hosts")" -eq 4 ] && ! grep -qx "$h1" "$tmp/wps.hosts" &&
	ok "place --node-weights health --state: $h1, weak on the state, left out" ||
	bad "place --node-weights health --state (link $lk of $h1): $(tr '\n' ' ' <"$tmp/wps.hosts")"
# a leaf with no up-link left cuts its hosts off the rest: generate keeps
# one (halved) where degradation draws them all down, so leaf03 is cut
# off by hand, as a partial dump or failed cables would
expect 0 "generate a degraded small fat tree" $T fabric generate fat-tree --leaves 8 \
	--hosts-per-leaf 4 --gpus-per-host 1 --spines 2 --degrade 0.2 --degrade-seed 5 -o "$tmp/cut.json"
expect 0 "show the degraded fat tree" $T fabric show "$tmp/cut.json"
grep -q 'no up-link' "$tmp/out" && bad "fabric show: a leaf cut off: $(cat "$tmp/out")" ||
	ok "degrade leaves every leaf an up-link"
jq -c 'del(.links[] | select(.[0] == "switch" and .[1] == 2 and .[3] == "switch"))' \
	"$tmp/cut.json" >"$tmp/cut2.json"
expect 0 "show a fabric with a leaf cut off" $T fabric show "$tmp/cut2.json"
grep -q '^  leaf leaf03: no up-link, its 4 hosts reach no other leaf' "$tmp/out" &&
	ok "fabric show warns of the cut-off leaf" || bad "fabric show: $(cat "$tmp/out")"
$T fabric show "$tmp/cut2.json" --json >"$tmp/cut2.show"
jeq "$tmp/cut2.show" '[.warnings[] | select(test("^leaf leaf03: no up-link"))] | length' 1 \
	"show --json warns of the cut-off leaf"
# an up-link whose speed the dump did not give is still an up-link: the
# leaf is not cut off, its up-link priced at the fabric's common rate
jq -c '(.links[] | select(.[0] == "switch" and .[1] == 2 and .[3] == "switch")) |= (.[7] = 0)' \
	"$tmp/cut.json" >"$tmp/cut3.json"
expect 0 "show a fabric with a leaf's up-link at an unknown speed" $T fabric show "$tmp/cut3.json"
grep -q '^  1 link of unknown width or speed priced as 4x NDR, the fabric.s most common$' "$tmp/out" &&
	! grep -q 'no up-link\|leaf03' "$tmp/out" && ok "fabric show: the up-link's speed unknown, priced, not cut off" ||
	bad "fabric show, unknown up-link speed: $(cat "$tmp/out")"
expect 0 "generate nvl72" $T fabric generate nvl72 --racks 2 -o "$tmp/nvl.json"
$T fabric show "$tmp/nvl.json" --json >"$tmp/nvl.show"
jeq "$tmp/nvl.show" .multi_node_nvlink_domains 2 "nvl72 racks are domains"
jeq "$tmp/nvl.show" .gpus 144 "nvl72 GPUs"

# ---- generated fabric through the ibnetdiscover reader + node data ----
expect 0 "ibsim-net" $T fabric ibsim-net "$tmp/ft.json" -o "$tmp/ft.net"
mkdir -p "$tmp/xml" "$tmp/smi"
# hwloc is optional: a build without it says so and the XML checks skip
have_xml=no
if [ -n "$TP_FIXTURES" ] && [ -d "$TP_FIXTURES/hwloc" ]; then
	cp "$TP_FIXTURES/hwloc/ParaStation-psmgmt/topo.jrc0386.xml" "$tmp/xml/node001.xml"
	cp "$TP_FIXTURES/nvidia-smi/dgx-a100_topo-m.gengwg-cheatsheets.txt" "$tmp/smi/node002.txt"
	cp "$TP_FIXTURES/hwloc/ParaStation-psmgmt/topo.jrc0386.xml" "$tmp/xml/stranger.xml"
	$T discover -q --ibnetdiscover "$tmp/ft.net" --node-xml "$tmp/xml" -o "$tmp/probe.json" \
		2>"$tmp/probe.err" || true
	if grep -q "built without hwloc" "$tmp/probe.err"; then
		echo "# built without hwloc: hwloc XML checks skipped"
		rm -f "$tmp/xml/"*.xml
	else
		have_xml=yes
	fi
fi
expect 0 "discover generated text + node data" $T discover --ibnetdiscover "$tmp/ft.net" \
	--node-xml "$tmp/xml" --nvidia-smi "$tmp/smi" --gpus-per-host 2 -o "$tmp/ftd.json"
$T fabric hosts "$tmp/ftd.json" --json >"$tmp/ftd.hosts"
jeq "$tmp/ftd.hosts" 'length' 32 "same hosts through text"
jeq "$tmp/ftd.hosts" '.[2].gpus' 2 "--gpus-per-host default"
if [ "$have_xml" = yes ]; then
	jeq "$tmp/ftd.hosts" '.[0].gpus' 4 "JURECA-DC hwloc XML: 4 A100"
	grep -q stranger "$tmp/err" && ok "unknown host's XML warned" || bad "unknown host's XML warned"
fi
if [ -n "$TP_FIXTURES" ] && [ -d "$TP_FIXTURES/nvidia-smi" ]; then
	jeq "$tmp/ftd.hosts" '.[1].gpus' 8 "DGX A100 nvidia-smi: 8 GPUs"
fi
# a node file that is a directory, a dangling link or a FIFO is named,
# not passed over (its host silently without node data), and a FIFO not
# opened (it would wait for a writer for ever); nccl-topo likewise
mkdir -p "$tmp/smi2/node003.txt" "$tmp/xml2/node003.xml"
ln -s "$tmp/nosuch" "$tmp/smi2/node004.txt"
mkfifo "$tmp/smi2/node005.txt" "$tmp/xml2/node005.xml"
expect 2 "discover --nvidia-smi with a directory, a dangling link and a FIFO" timeout 30 $T discover \
	--ibnetdiscover "$tmp/ft.net" --nvidia-smi "$tmp/smi2" -o "$tmp/ftd2.json"
grep -q "smi2/node003.txt: cannot read: not a regular file" "$tmp/err" &&
	grep -q "smi2/node004.txt: cannot read: no such file" "$tmp/err" &&
	grep -q "smi2/node005.txt: cannot read: not a regular file" "$tmp/err" && ok "all three named" ||
	bad "node files not named: $(cat "$tmp/err")"
expect 2 "nccl-topo with a directory and a FIFO" timeout 30 $T nccl-topo --node-xml "$tmp/xml2" -o "$tmp/nccl2"
grep -q "xml2/node003.xml: cannot read: not a regular file" "$tmp/err" &&
	grep -q "xml2/node005.xml: cannot read: not a regular file" "$tmp/err" && ok "both named by nccl-topo" ||
	bad "nccl-topo: $(cat "$tmp/err")"

# ---- every real fabric dump ----
if [ -z "$TP_FIXTURES" ] || [ ! -d "$TP_FIXTURES/ib" ]; then
	echo "# fixtures absent: real-dump checks skipped"
	finish
fi
n=0
for f in $(find "$TP_FIXTURES/ib" \( -name '*.out' -o -name '*.topo' -o -name 'ib-subnet-*.txt' \) | sort); do
	if $T discover -q --ibnetdiscover "$f" -o "$tmp/fx.json" 2>"$tmp/err"; then
		$T fabric show "$tmp/fx.json" --json >"$tmp/fx.show" &&
			jq -e '(.hosts|type=="number") and (.switches|type=="number") and (.links|type=="number")
			 and (.switch_levels|type=="array") and (.rails|type=="number") and (.groups|type=="array")
			 and (.unnamed_cas|type=="number") and (.degraded_hosts|type=="number")
			 and (.weak_hosts|type=="number")
			 and (.warnings|type=="array")' "$tmp/fx.show" >/dev/null &&
			n=$((n + 1)) || bad "show --json fields for $f"
	else
		bad "discover $f: $(cat "$tmp/err")"
	fi
done
[ "$n" -ge 10 ] && ok "$n real dumps discovered and shown" || bad "only $n real dumps discovered"

nv="$TP_FIXTURES/ib/NVIDIA-topograph/ibnetdiscover-example.out"
$T discover --ibnetdiscover "$nv" -o "$tmp/nv.json" 2>"$tmp/nv.err"
grep -q "warning: 2 CAs of 1 host cabled to another rail's leaf (e.g. 'b08-p1-dgx-08-c01 HCA-5' on 'MF0;B09-P1-IBLEAF-04-08:MQM9701/U1', where 15 of 16 CAs are on rail 3, it on 2)" "$tmp/nv.err" &&
	ok "SuperPOD: the host with its HCA-5 and HCA-6 cables swapped is named" ||
	bad "SuperPOD swapped cables: $(cat "$tmp/nv.err")"
$T fabric show "$tmp/nv.json" --json >"$tmp/nv.show"
jeq "$tmp/nv.show" .switches 40 "SuperPOD switches"
jeq "$tmp/nv.show" .sharp_cas 40 "SuperPOD SHArP nodes are not hosts"
jeq "$tmp/nv.show" .weak_hosts 12 "SuperPOD: the 12 hosts with missing cables are weakly cabled"
expect 0 "SuperPOD topology.conf" $T fabric topology-conf "$tmp/nv.json"
# the a05 hosts' HCA-5 cables are missing: their HCA-6 stays on HCA-6's
# rail (a gap in the plan's hcas), not on HCA-5's
$T discover -q --ibnetdiscover "$nv" --gpus-per-host 8 -o "$tmp/nvg.json"
$T plan --fabric "$tmp/nvg.json" --nodes a05-p1-dgx-01-c01,a06-p1-dgx-02-c01 --json --no-predict >"$tmp/nv.plan" &&
	jq -e '.hosts[0].hcas == ["HCA-1", "HCA-2", null, "HCA-6"] and
		.hosts[1].hcas == ["HCA-1", "HCA-2", "HCA-5", "HCA-6"]' "$tmp/nv.plan" >/dev/null &&
	ok "SuperPOD: a host missing HCA-5 keeps HCA-6 on its rail" ||
	bad "SuperPOD rails: $(jq -c '[.hosts[]?.hcas]' "$tmp/nv.plan" 2>&1)"
# the 'ubuntu' host has mlx5_0 and mlx5_1 cabled to the HCA-5 and HCA-6
# leaves (where complete hosts name their first two CAs mlx5_0, mlx5_1):
# the leaves say its rails
$T plan --fabric "$tmp/nvg.json" --nodes ubuntu,a06-p1-dgx-02-c01 --json --no-predict >"$tmp/nvu.plan" &&
	jq -e '.hosts[] | select(.name == "ubuntu") | .hcas == [null, null, "mlx5_0", "mlx5_1"]' "$tmp/nvu.plan" >/dev/null &&
	ok "SuperPOD: a host's CAs take the rails of the leaves they are cabled to" ||
	bad "SuperPOD ubuntu rails: $(jq -c '[.hosts[]?.hcas]' "$tmp/nvu.plan" 2>&1)"

# two subnets, one discover
p2="$TP_FIXTURES/ib/hwloc-netloc/plafrim2"
expect 0 "two subnets" $T discover -q --ibnetdiscover "$p2"/ib-subnet-*.txt -o "$tmp/p2.json"
$T fabric show "$tmp/p2.json" --json >"$tmp/p2.show"
jeq "$tmp/p2.show" .subnets 2 "plafrim2 subnets"

# plafrim: three leaves reach the spines only through other leaves (one
# hangs off a leaf, one off two, one off that one). Their cables run up
# towards the spines, as the subnet manager routes them: one tree in
# topology.conf, every host placeable and priced, and every hop of the
# SM's own forwarding tables is one the model takes.
pl="$TP_FIXTURES/ib/hwloc-netloc/plafrim"
expect 0 "discover plafrim" $T discover --ibnetdiscover "$pl/ib-subnet-fe80_0000_0000_0000.txt" \
	--gpus-per-host 1 -o "$tmp/pl.json"
grep -q "same level" "$tmp/err" && bad "plafrim: a same-level warning: $(cat "$tmp/err")" ||
	ok "plafrim: no cable left out"
expect 0 "plafrim topology.conf" $T fabric topology-conf "$tmp/pl.json" -o "$tmp/pl.conf"
[ "$(grep -c '^SwitchName=.* Switches=' "$tmp/pl.conf")" -eq 1 ] &&
	grep -q '^SwitchName=g2-1 Switches=g1-\[1-7\]$' "$tmp/pl.conf" &&
	ok "plafrim: one tree over the 7 leaves" || bad "plafrim tree: $(cat "$tmp/pl.conf")"
expect 0 "plafrim: a 125-host job fits the idle fabric" \
	$T place --fabric "$tmp/pl.json" --request nodes=125 --json
# bonobo001 on a leaf two leaves below the spines, fourmi020 under them
expect 0 "plafrim: a ring from a hanging leaf priced" \
	$T cost --fabric "$tmp/pl.json" --hosts bonobo001,devel01,fourmi020,mirage001 --bytes 1G --json
# NAME:SUBNET:MIN, MIN the switch hops the tables must show; plafrim2's
# subnet 1 is one switch: its table has last hops only (to each CA's port)
if command -v python3 >/dev/null; then
	for sub in plafrim:0:20 avakas:0:20 plafrim2:0:20 plafrim2:1:0; do
		name=${sub%%:*} min=${sub##*:} sub=${sub%:*}
		d="$TP_FIXTURES/ib/hwloc-netloc/$name" s="fe80_0000_0000_000${sub#*:}"
		$T discover -q --ibnetdiscover "$d/ib-subnet-$s.txt" -o "$tmp/lft.json"
		out=$(python3 "$(dirname "$0")/ibroutes_check.py" "$tmp/lft.json" \
			"$d/ibroutes-$s" "$min" 20 2>&1) && ok "$sub: ${out#ibroutes_check: }" ||
			bad "$sub forwarding tables: $out"
	done
fi

# unnamed CAs named through a GUID map
pf="$TP_FIXTURES/ib/hwloc-netloc/plafrim2/ib-subnet-fe80_0000_0000_0001.txt"
$T discover -q --ibnetdiscover "$pf" -o "$tmp/pf.json"
$T fabric show "$tmp/pf.json" --json >"$tmp/pf.show"
un=$(jq .unnamed_cas "$tmp/pf.show")
if [ "$un" -gt 0 ]; then
	ok "plafrim2 subnet 1 has $un unnamed CAs"
	guid=$(jq -r '[.cas[] | select(.desc | test("^MT[0-9]+ "))][0].guid' "$tmp/pf.json")
	printf '# test map\n%s  mapped-host\n' "$guid" >"$tmp/gmap"
	$T discover -q --ibnetdiscover "$pf" --guid-map "$tmp/gmap" -o "$tmp/pfm.json"
	$T fabric show "$tmp/pfm.json" --json >"$tmp/pfm.show"
	jeq "$tmp/pfm.show" .unnamed_cas $((un - 1)) "--guid-map names one CA"
	$T fabric hosts "$tmp/pfm.json" --json | jq -e 'any(.[]; .name == "mapped-host")' >/dev/null &&
		ok "mapped host listed" || bad "mapped host listed"
else
	bad "plafrim2 subnet 1 should have unnamed CAs"
fi

# ---- bad input: one line naming the file, exit 2 ----
head -c 3000 "$nv" >"$tmp/trunc.txt"
printf 'Switch 36 "S-00' >>"$tmp/trunc.txt"
expect 2 "truncated dump" $T discover --ibnetdiscover "$tmp/trunc.txt" -o "$tmp/t.json"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^topoplace: $tmp/trunc.txt:[0-9]*: " "$tmp/err" &&
	ok "truncated: one line with file:line" || bad "truncated: $(cat "$tmp/err")"
head -c 4096 /dev/urandom >"$tmp/bin.txt"
expect 2 "binary dump" $T discover --ibnetdiscover "$tmp/bin.txt" -o "$tmp/t.json"
grep -q "^topoplace: $tmp/bin.txt" "$tmp/err" && ok "binary: names the file" || bad "binary: $(cat "$tmp/err")"
: >"$tmp/empty.txt"
expect 2 "empty dump" $T discover --ibnetdiscover "$tmp/empty.txt" -o "$tmp/t.json"
expect 2 "missing file" $T discover --ibnetdiscover "$tmp/nope.txt" -o "$tmp/t.json"
echo '{"format":"topoplace-fabric/1"' >"$tmp/bad.json"
expect 2 "corrupt fabric JSON" $T fabric show "$tmp/bad.json"
grep -q "^topoplace: $tmp/bad.json: " "$tmp/err" && ok "corrupt JSON names the file" || bad "corrupt JSON: $(cat "$tmp/err")"
# hwloc 3's export (format 3.0) is read, as its 2.x twin; a later format is refused
mkdir -p "$tmp/x3" "$tmp/x30"
v31="$tmp/v31.xml"
sed 's/<topology version="3.0">/<topology version="3.1">/' \
	"$TP_FIXTURES/hwloc/hwloc-tests/v3.0-format/nvidiaDGX2.xml" >"$v31"
cp "$v31" "$tmp/x3/node001.xml"
cp "$TP_FIXTURES/hwloc/hwloc-tests/v3.0-format/nvidiaDGX2.xml" "$tmp/x30/node001.xml"
if [ "$have_xml" = yes ]; then
	expect 2 "hwloc XML format 3.1" $T discover --ibnetdiscover "$tmp/ft.net" --node-xml "$tmp/x3" -o "$tmp/t.json"
	grep -q "node001.xml: .*format 3.1" "$tmp/err" && ok "3.1 error names the file and format" ||
		bad "3.1 error: $(cat "$tmp/err")"
	expect 0 "hwloc XML format 3.0" $T discover -q --ibnetdiscover "$tmp/ft.net" --node-xml "$tmp/x30" \
		-o "$tmp/t30.json"
	$T fabric hosts "$tmp/t30.json" --json >"$tmp/t30.hosts"
	jeq "$tmp/t30.hosts" '.[0].gpus' 16 "format 3.0: DGX-2's 16 GPUs"
	[ -s "$tmp/err" ] && bad "format 3.0: hwloc printed: $(cat "$tmp/err")" || ok "format 3.0: nothing on stderr"
fi
# ---- nccl-topo: node hwloc XML -> NCCL_TOPO_FILE per host ----
expect 0 "nccl-topo --help" $T nccl-topo --help
expect 2 "nccl-topo without -o" $T nccl-topo --node-xml "$tmp/x3"
mkdir -p "$tmp/hx"
cp "$TP_FIXTURES/hwloc/ParaStation-psmgmt/topo.jrc0386.xml" "$tmp/hx/node001.xml"
$T nccl-topo --node-xml "$tmp/hx" -o "$tmp/nt" >"$tmp/out" 2>"$tmp/err"
rc=$?
if grep -q "built without hwloc" "$tmp/err"; then
	[ "$rc" -eq 2 ] && [ ! -e "$tmp/nt/node001.xml" ] &&
		ok "nccl-topo without hwloc: exit 2, nothing written" ||
		bad "nccl-topo without hwloc: exit $rc"
else
	[ "$rc" -eq 0 ] && ok "nccl-topo JURECA-DC node" || bad "nccl-topo: exit $rc: $(cat "$tmp/err")"
	# No --fabric: every <host>.xml is converted, known or not.
	[ "$(head -n 1 "$tmp/nt/node001.xml")" = '<system version="1">' ] &&
		ok "node001.xml has the <system> root" || bad "node001.xml: $(head -n 2 "$tmp/nt/node001.xml")"
	[ "$(grep -c '<gpu' "$tmp/nt/node001.xml")" -eq 4 ] && [ "$(grep -c '<net ' "$tmp/nt/node001.xml")" -eq 4 ] &&
		ok "4 GPUs, 4 HCAs" || bad "GPUs/HCAs: $(grep -c '<gpu\|<net ' "$tmp/nt/node001.xml")"
	ls -A "$tmp/nt" | grep -q '\.tmp$' && bad "temporary file left behind" || ok "no temporary file left"
	# --fabric: hosts the fabric lacks are skipped; files without I/O too.
	cp "$TP_FIXTURES/hwloc/hwloc-tests/nvidiaDGX2.xml" "$tmp/hx/elsewhere.xml"
	cp "$TP_FIXTURES/hwloc/uliegecsm-hwloc-xml-parser/nvidia-gh-200.xml" "$tmp/hx/node002.xml"
	expect 0 "nccl-topo --fabric" $T nccl-topo --node-xml "$tmp/hx" --fabric "$tmp/ft.json" -o "$tmp/nt2"
	[ -s "$tmp/nt2/node001.xml" ] && [ ! -e "$tmp/nt2/elsewhere.xml" ] && [ ! -e "$tmp/nt2/node002.xml" ] &&
		ok "--fabric: only known hosts with devices written" || bad "--fabric wrote: $(ls "$tmp/nt2")"
	grep -q "host elsewhere is not in" "$tmp/err" && grep -q "node002.xml: no GPU" "$tmp/err" &&
		ok "skips are warned about" || bad "skip warnings: $(cat "$tmp/err")"
	# no host of the fabric among the files: nothing written is an error
	$T fabric generate fat-tree --leaves 1 --hosts-per-leaf 2 --prefix gpu -o "$tmp/other.json" >/dev/null
	expect 2 "nccl-topo: no file names a host of the fabric" \
		$T nccl-topo --node-xml "$tmp/hx" --fabric "$tmp/other.json" -o "$tmp/nt7"
	grep -q "nccl-topo: $tmp/hx: no node file gave a topology" "$tmp/err" &&
		ok "says nothing was written" || bad "nccl-topo, no host: $(cat "$tmp/err")"
	expect 0 "nccl-topo all three" $T nccl-topo -q --node-xml "$tmp/hx" -o "$tmp/nt3"
	[ "$(grep -c '<nvlink ' "$tmp/nt3/elsewhere.xml")" -eq 96 ] && ok "DGX-2 NVLinks" || bad "DGX-2 NVLinks"
	[ ! -s "$tmp/err" ] && ok "-q is quiet" || bad "-q printed: $(cat "$tmp/err")"
	# what hwloc prints itself joins the one error line: nothing else on stderr
	mkdir -p "$tmp/nn"
	printf '%s\n' '<topology version="2.0">' \
		'<object type="Machine" os_index="0" cpuset="0x1" complete_cpuset="0x1" allowed_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1" allowed_nodeset="0x1"><object type="PU" os_index="0" cpuset="0x1" complete_cpuset="0x1" nodeset="0x1" complete_nodeset="0x1"/></object>' \
		'</topology>' >"$tmp/nn/node001.xml"
	expect 2 "nccl-topo: an XML hwloc complains about" $T nccl-topo -q --node-xml "$tmp/nn" -o "$tmp/nnt"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "node001.xml: hwloc cannot parse this XML (hwloc: Topology does not contain any NUMA node" "$tmp/err" &&
		ok "hwloc's complaint in the one error line" || bad "hwloc's complaint: $(cat "$tmp/err")"
	# A format 3.1 file fails with its name, the others are still written.
	cp "$v31" "$tmp/hx/node003.xml"
	expect 2 "nccl-topo with a 3.0 file" $T nccl-topo --node-xml "$tmp/hx" -o "$tmp/nt4"
	grep -q "node003.xml: .*format 3.1" "$tmp/err" && [ -s "$tmp/nt4/node001.xml" ] && [ ! -e "$tmp/nt4/node003.xml" ] &&
		ok "3.0 named, others written" || bad "3.0: $(cat "$tmp/err")"
	# An XML that crashes hwloc 2.9 in-process: named, the others written.
	cp "$TP_TESTDATA/node-hwloc-no-nodeset.xml" "$tmp/hx/node004.xml"
	expect 2 "nccl-topo with a file crashing hwloc" $T nccl-topo --node-xml "$tmp/hx" -o "$tmp/nt6"
	grep -q "node004.xml: hwloc crashed" "$tmp/err" && [ -s "$tmp/nt6/node001.xml" ] &&
		[ -s "$tmp/nt6/elsewhere.xml" ] && [ ! -e "$tmp/nt6/node004.xml" ] &&
		ok "crashing file named, others written" || bad "crash: $(cat "$tmp/err")"
	mkdir -p "$tmp/xc" && cp "$TP_TESTDATA/node-hwloc-no-nodeset.xml" "$tmp/xc/node001.xml"
	expect 2 "discover with a file crashing hwloc" $T discover --ibnetdiscover "$tmp/ft.net" --node-xml "$tmp/xc" -o "$tmp/t.json"
	grep -q "^topoplace: .*node001.xml: hwloc crashed" "$tmp/err" && ok "discover names the crashing file" ||
		bad "discover crash: $(cat "$tmp/err")"
	# every bad file is named in one run; -k writes the fabric without them
	cp "$TP_FIXTURES/hwloc/ParaStation-psmgmt/topo.jrc0386.xml" "$tmp/xc/node002.xml"
	cp "$v31" "$tmp/xc/node003.xml"
	rm -f "$tmp/t.json"
	expect 2 "discover -k with two bad node files" $T discover -k --ibnetdiscover "$tmp/ft.net" \
		--node-xml "$tmp/xc" --gpus-per-host 2 -o "$tmp/t.json"
	grep -q "node001.xml: hwloc crashed" "$tmp/err" && grep -q "node003.xml: .*format 3.1" "$tmp/err" &&
		grep -q "1 more of 3 node files unreadable" "$tmp/err" && ok "discover -k names both bad files" ||
		bad "discover -k: $(cat "$tmp/err")"
	if [ -s "$tmp/t.json" ]; then
		$T fabric hosts "$tmp/t.json" --json >"$tmp/t.hosts"
		jeq "$tmp/t.hosts" '.[1].gpus' 4 "discover -k: the good file after a bad one is read"
		jeq "$tmp/t.hosts" '.[0].gpus' 2 "discover -k: a bad file's host has the default"
	else
		bad "discover -k wrote no fabric"
	fi
fi
expect 2 "nccl-topo missing dir" $T nccl-topo --node-xml "$tmp/nope" -o "$tmp/nt5"
# an OUTDIR it cannot create is a failed write (1), not bad input
mkdir -p "$tmp/hx1" && : >"$tmp/hx1/node001.xml"
expect 1 "nccl-topo -o in a missing directory" $T nccl-topo --node-xml "$tmp/hx1" -o "$tmp/nope/deeper"
grep -q "nope/deeper: cannot create directory" "$tmp/err" && ok "nccl-topo names the directory" ||
	bad "nccl-topo mkdir: $(cat "$tmp/err")"
finish
