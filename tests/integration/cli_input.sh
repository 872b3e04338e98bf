#!/bin/sh
# Bad or odd input to the topoplace command: what a new user meets first.
# Each case gets a clear one-line message and the right exit status, never
# a silent zero.
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE

# ---- simulate: jobs that can never fit the fabric ----
printf 'submit_s,gpus,run_s\n0,100000,100\n' >"$tmp/none.csv"
expect 2 "simulate: no job of the trace fits" $T simulate --trace "$tmp/none.csv"
grep -q "none.csv: no job of the trace can ever be placed.*none.csv:2, 100000 GPUs" "$tmp/err" &&
	ok "simulate names the trace and its first job" || bad "simulate, no job fits: $(cat "$tmp/err")"
printf 'submit_s,nodes,gpus_per_node,run_s\n0,2,9,100\n5,1,8,100\n' >"$tmp/some.csv"
expect 0 "simulate: one job of two fits" $T simulate --trace "$tmp/some.csv" --policies topoplace,first-fit
grep -q "warning: simulate: 1 of 2 jobs can never be placed.*some.csv:2, 2 nodes x 9 GPUs" "$tmp/err" &&
	ok "simulate warns with the count and the line" || bad "simulate warning: $(cat "$tmp/err")"
# a trace file is replayed by every seed, not sampled anew: its jobs count once
printf 'submit_s,gpus,run_s\n0,1000,100\n5,8,100\n9,4,100\n' >"$tmp/three.csv"
expect 0 "simulate --trace --seeds 3: one job never fits" $T simulate --trace "$tmp/three.csv" \
	--seeds 3 --policies topoplace,first-fit
grep -q "warning: simulate: 1 of 3 jobs can never be placed.*three.csv:2, 1000 GPUs" "$tmp/err" &&
	ok "simulate counts a replayed trace's jobs once" || bad "simulate --seeds 3 warning: $(cat "$tmp/err")"
# the report takes stdout: an SVG there too would spoil both
for j in --json ""; do
	expect 2 "simulate $j --svg -" $T simulate --trace "$tmp/three.csv" $j --svg -
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "simulate: --svg -: the report.* goes to stdout" "$tmp/err" &&
		[ ! -s "$tmp/out" ] && ok "simulate $j --svg - refused on one line" || bad "--svg -: $(cat "$tmp/err")"
done

# ---- config --check: keys that contradict each other ----
printf 'MinNodes=5 MaxNodes=3\n' >"$tmp/mm.conf"
expect 2 "config --check MinNodes above MaxNodes" $T config --check "$tmp/mm.conf"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "mm.conf:1: MinNodes=5 is above MaxNodes=3" "$tmp/err" &&
	ok "both keys named on one line" || bad "MinNodes/MaxNodes: $(cat "$tmp/err")"

# ---- config --check: the fabric and link state it names, read as the
# plugins read them (a FIFO refused at once, never opened for reading) ----
$T fabric generate fat-tree --leaves 2 --hosts-per-leaf 2 -o "$tmp/ft.json" >/dev/null
printf '{garbage\n' >"$tmp/garbage.json"
mkfifo "$tmp/fifo"
for f in "$tmp/nosuch/f.json" "$tmp/garbage.json" "$tmp" "$tmp/fifo"; do
	printf 'FabricFile=%s\n' "$f" >"$tmp/ff.conf"
	expect 2 "config --check FabricFile=$(basename "$f")" timeout 10 $T config --check "$tmp/ff.conf"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "ff.conf:1: FabricFile: $f" "$tmp/err" &&
		ok "one line naming $(basename "$f")" || bad "FabricFile=$f: $(cat "$tmp/err")"
	printf 'FabricFile=%s\nLinkState=%s\n' "$tmp/ft.json" "$f" >"$tmp/ls.conf"
	want=2
	[ "$f" = "$tmp/nosuch/f.json" ] && want=0 # not written yet: healthy links
	expect $want "config --check LinkState=$(basename "$f")" timeout 10 $T config --check "$tmp/ls.conf"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "ls.conf:2: .*LinkState.*$f" "$tmp/err" &&
		ok "one line naming LinkState $(basename "$f")" || bad "LinkState=$f: $(cat "$tmp/err")"
done
# a state naming a host the fabric lacks is bad input, not a file not
# written yet (both were "not found" to the loader)
for e in '"down":["ghost"]' '"jobs":[{"id":1,"hosts":{"ghost":1}}]'; do
	printf '{"format":"topoplace-state/1",%s}\n' "$e" >"$tmp/ghost.json"
	printf 'FabricFile=%s\nLinkState=%s\n' "$tmp/ft.json" "$tmp/ghost.json" >"$tmp/ls.conf"
	expect 2 "config --check LinkState naming an unknown host" $T config --check "$tmp/ls.conf"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "ls.conf:2: LinkState: .*ghost.json: .*ghost: unknown host" "$tmp/err" &&
		ok "the unknown host named" || bad "LinkState unknown host: $(cat "$tmp/err")"
done
printf 'FabricFile=ft.json\n' >"$tmp/rel.conf"
expect 0 "config --check with a FabricFile beside it" $T config --check "$tmp/rel.conf"
# ... and its hosts against slurm.conf's nodes (the one beside it, or
# SLURM_CONF's), as the plugins match them: another set is a flat topology
mkdir "$tmp/sc"
cp "$tmp/ft.json" "$tmp/sc/"
printf 'FabricFile=ft.json\n' >"$tmp/sc/topoplace.conf"
printf 'NodeName=DEFAULT CPUs=4\nNodeName=node[001-002] Gres=gpu:8\nNodeName=node003 \\\n  Gres=gpu:8\n' >"$tmp/sc/slurm.conf"
expect 2 "config --check: a fabric host slurm.conf lacks" $T config --check "$tmp/sc/topoplace.conf"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "does not match $tmp/sc/slurm.conf: .*1 fabric host(s) not in slurm.conf (node004)" "$tmp/err" &&
	ok "the host named, one line" || bad "slurm.conf mismatch: $(cat "$tmp/err")"
printf 'NodeName=node004 Gres=gpu:8\n' >>"$tmp/sc/slurm.conf"
expect 0 "config --check: the fabric's hosts are slurm.conf's nodes" $T config --check "$tmp/sc/topoplace.conf"
expect 0 "config --check: no slurm.conf, nothing compared" \
	env SLURM_CONF="$tmp/sc/nosuch.conf" $T config --check "$tmp/sc/topoplace.conf"
grep -q "note: SLURM_CONF=$tmp/sc/nosuch.conf: No such file or directory: the fabric's hosts not compared" "$tmp/err" &&
	ok "a SLURM_CONF it cannot read noted" || bad "SLURM_CONF unreadable: $(cat "$tmp/err")"
printf 'NodeName=node[005-006]\n' >"$tmp/sc/other.conf"
expect 2 "config --check: SLURM_CONF's slurm.conf" env SLURM_CONF="$tmp/sc/other.conf" \
	$T config --check "$tmp/sc/topoplace.conf"
printf 'include /etc/slurm/nodes.conf\n' >>"$tmp/sc/other.conf"
expect 0 "config --check: an Include, not compared" env SLURM_CONF="$tmp/sc/other.conf" \
	$T config --check "$tmp/sc/topoplace.conf"
grep -q "includes other files" "$tmp/err" && ok "the Include noted" || bad "Include: $(cat "$tmp/err")"

# ---- a state file with text after its object or a key given twice: an
# error naming the byte or the key, as place --state and LinkState= read it
printf '{"format":"topoplace-state/1","links":[{"link":0,"health":0}]} garbage {\n' >"$tmp/trail.json"
printf '{"format":"topoplace-state/1","links":[{"link":0,"health":0}],"links":[{"link":1,"health":0.5}]}\n' >"$tmp/dup.json"
printf '{"format":"topoplace-state/1","links":[{"link":0,"health":0,"health":1}]}\n' >"$tmp/dup2.json"
for c in "trail.json:not valid JSON near byte 63" "dup.json:links: key given twice" \
	"dup2.json:links[0].health: key given twice"; do
	f=${c%%:*} why=${c#*:}
	expect 2 "place --state $f" $T place --fabric "$tmp/ft.json" --state "$tmp/$f" --request nodes=2
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF "$f: $why" "$tmp/err" &&
		ok "place --state $f: one line, $why" || bad "place --state $f: $(cat "$tmp/err")"
	printf 'FabricFile=%s\nLinkState=%s\n' "$tmp/ft.json" "$tmp/$f" >"$tmp/ls.conf"
	expect 2 "config --check LinkState=$f" $T config --check "$tmp/ls.conf"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "ls.conf:2: LinkState: " "$tmp/err" &&
		grep -qF "$f: $why" "$tmp/err" &&
		ok "LinkState=$f: one line, $why" || bad "LinkState=$f: $(cat "$tmp/err")"
done

# ---- fabric JSON: cables the fabric cannot hold ----
jq -c '.links[0] = ["switch",0,1,"switch",0,1,4,100,true]' "$tmp/ft.json" >"$tmp/self.json"
expect 2 "a cable from a port to itself" $T fabric show "$tmp/self.json"
grep -q "self.json: links\[0\]: both ends are switch 0 port 1" "$tmp/err" &&
	ok "self cable named" || bad "self cable: $(cat "$tmp/err")"
jq -c '.links[0][2] = 500' "$tmp/ft.json" >"$tmp/p500.json"
expect 2 "a cable on a port the switch lacks" $T fabric show "$tmp/p500.json"
grep -q "p500.json: links\[0\]: switch 0 has ports 1\.\..*, not 500" "$tmp/err" &&
	ok "port out of range named" || bad "port 500: $(cat "$tmp/err")"
jq -c '.switches[0].ports = 0' "$tmp/ft.json" >"$tmp/p0.json"
expect 2 "a switch without ports" $T fabric show "$tmp/p0.json"
grep -q "p0.json: switches\[0\].ports" "$tmp/err" && ok "switch ports 0 named" || bad "ports 0: $(cat "$tmp/err")"

# ---- discover -q: the summary of unreadable node files names them all ----
$T fabric generate fat-tree --leaves 2 --hosts-per-leaf 2 --nics-per-host 1 -o "$tmp/s.json" >/dev/null
$T fabric ibsim-net "$tmp/s.json" -o "$tmp/s.net"
mkdir "$tmp/smi"
for h in node001 node002 node003 node004; do
	cp "$TP_TESTDATA/node-nvsmi-ragged.txt" "$tmp/smi/$h.txt"
done
expect 2 "discover -q -k with four bad node files" $T discover -q -k --ibnetdiscover "$tmp/s.net" \
	--nvidia-smi "$tmp/smi" -o "$tmp/s2.json"
[ "$(wc -l <"$tmp/err")" -eq 1 ] &&
	grep -q "node001.txt:3: .*; 3 more of 4 node files unreadable (node002.txt, node003.txt, node004.txt;" "$tmp/err" &&
	ok "every unreadable file named on one line" || bad "discover -q summary: $(cat "$tmp/err")"
# one bad file: its error once, not a warning saying the same before it
mkdir "$tmp/smi1"
cp "$TP_TESTDATA/node-nvsmi-ragged.txt" "$tmp/smi1/node001.txt"
for k in "" -k; do
	expect 2 "discover${k:+ $k} with one bad node file" $T discover $k --ibnetdiscover "$tmp/s.net" \
		--nvidia-smi "$tmp/smi1" -o "$tmp/s1.json"
	[ "$(grep -c 'node001.txt:3:' "$tmp/err")" -eq 1 ] && ! grep -q warning "$tmp/err" &&
		ok "discover${k:+ $k}: one bad node file, one line" || bad "discover${k:+ $k}, one bad file: $(cat "$tmp/err")"
done
jq -e '[.warnings[] | select(test("node001.txt:3: .*(host node001: no node data)"))] | length == 1' \
	"$tmp/s1.json" >/dev/null && ok "discover -k: the fabric still says node001 has no node data" ||
	bad "discover -k, one bad file: warnings $(jq -c .warnings "$tmp/s1.json")"

# ---- discover --live with no IB device: the port as --help names it; a
# walk that failed exits 1 (EXIT STATUS), as fabric diff --live does ----
if [ ! -e /sys/class/infiniband ] && [ -z "${UMAD2SIM:-}" ]; then
	timeout 30 $T discover --live -o "$tmp/live.json" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if grep -q 'built without' "$tmp/err"; then
		[ $rc -eq 2 ] && ok "discover --live built without libibnetdisc exits 2" ||
			bad "discover --live without libibnetdisc: exit $rc"
		echo "# built without libibnetdisc: the --live wording check skipped"
	else
		[ $rc -eq 1 ] && ok "discover --live: a failed walk exits 1" ||
			bad "discover --live without an IB device: exit $rc, wanted 1"
		grep -q "through the first CA, its first active port, failed" "$tmp/err" &&
			ok "default port named as in --help" || bad "discover --live: $(tail -1 "$tmp/err")"
		expect 1 "fabric diff --live: the same failed walk exits 1" \
			timeout 30 $T fabric diff --fabric "$tmp/ft.json" --live
	fi
fi
# ---- --port: one rule (0..254, 0 = the first active port) and only with
# --live ----
for c in "discover --live -o $tmp/x.json" "fabric diff --fabric $tmp/ft.json --live" \
	"fabric health --fabric $tmp/ft.json"; do
	expect 2 "$c --port 255" $T $c --port 255
	grep -q -- "--port: expected an integer 0..254, got '255'" "$tmp/err" &&
		ok "${c%% -*}: --port 0..254" || bad "$c --port 255: $(cat "$tmp/err")"
done
expect 2 "discover --port 0 without --live" $T discover --ibnetdiscover "$tmp/ft.json" --port 0 -o "$tmp/x.json"
grep -q "discover: --ca/--port apply to --live only" "$tmp/err" &&
	ok "discover: an explicit --port 0 without --live refused" || bad "discover --port 0: $(cat "$tmp/err")"
expect 2 "fabric diff --port 0 without --live" $T fabric diff --fabric "$tmp/ft.json" \
	--ibnetdiscover "$tmp/ft.json" --port 0
grep -q "fabric diff: --ca/--port apply to --live only" "$tmp/err" &&
	ok "fabric diff: an explicit --port 0 without --live refused" || bad "fabric diff --port 0: $(cat "$tmp/err")"

sp="${TP_FIXTURES:-../shared/fixtures}/ib/NVIDIA-topograph/ibnetdiscover-example.out"
if [ -f "$sp" ]; then
	# ---- discover: a domain map naming no host of the fabric ----
	printf 'rackA nosuchhost[1-3]\n' >"$tmp/dm.txt"
	expect 0 "discover with a domain map of absent hosts" $T discover --ibnetdiscover "$sp" \
		--domain-map "$tmp/dm.txt" --gpus-per-host 8 -o "$tmp/dm.json"
	grep -q "no host of NVLink domain rackA (domain map) is in the fabric" "$tmp/err" &&
		ok "the empty domain is named" || bad "empty domain warning: $(cat "$tmp/err")"
	expect 0 "fabric show" $T fabric show "$tmp/dm.json"
	grep -q "NVLink domains.*(0 multi-node)" "$tmp/out" && ok "no empty domain counted" ||
		bad "fabric show: $(grep NVLink "$tmp/out")"
	# ---- discover: one dump given twice ----
	expect 2 "discover the same dump twice" $T discover --ibnetdiscover "$sp" "$sp" -o "$tmp/twice.json"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "ibnetdiscover-example.out:[0-9]*: switch GUID 0x[0-9a-f]* is already in subnet 0" "$tmp/err" &&
		ok "the second file and a GUID in both named" || bad "same dump twice: $(cat "$tmp/err")"
	# ---- discover: GUID map entries for GUIDs the fabric lacks ----
	printf '0x1234 ghost1\n0x99 ghost2\n' >"$tmp/gm.txt"
	expect 0 "discover with a GUID map of absent GUIDs" $T discover --ibnetdiscover "$sp" \
		--guid-map "$tmp/gm.txt" -o "$tmp/gm.json"
	grep -q 'warning: 2 GUIDs of the GUID map name no CA of the fabric (e.g. entry "0x0000000000001234 ghost1")' "$tmp/err" &&
		ok "absent GUIDs warned with count and first entry" || bad "GUID map warning: $(cat "$tmp/err")"
else
	echo "# $sp absent: the ibnetdiscover checks skipped"
fi

# ---- output that cannot be written is a failure (exit 1), never a
# silent zero; checked before a long simulation, not after it ----
full() { # CMD...: run with stdout on a full disk; its stderr in $tmp/err
	"$@" >/dev/full 2>"$tmp/err"
}
expect 1 "fabric show --json to a full disk" full $T fabric show "$tmp/ft.json" --json
grep -q "stdout: No space left on device" "$tmp/err" && ok "stdout's error named" || bad "/dev/full: $(cat "$tmp/err")"
expect 1 "simulate to a full disk" full $T simulate --seeds 1 --jobs 50
expect 1 "plan -o into a missing directory" $T plan --fabric "$tmp/ft.json" --nodes node001 -o "$tmp/nosuch/p.json"
expect 1 "simulate --svg into a missing directory" $T simulate --svg "$tmp/nosuch/s.svg"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "simulate: --svg $tmp/nosuch/s.svg: cannot write" "$tmp/err" &&
	[ ! -s "$tmp/out" ] && ok "--svg refused before simulating" || bad "--svg: $(cat "$tmp/err")"
# a directory passes access(W_OK): refused by what it is, before the run
expect 1 "simulate --svg DIR" $T simulate --svg "$tmp"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "simulate: --svg $tmp: cannot write: Is a directory" "$tmp/err" &&
	[ ! -s "$tmp/out" ] && ok "--svg DIR refused before simulating" || bad "--svg DIR: $(cat "$tmp/err")"
for c in "plan --fabric $tmp/ft.json --nodes node001" "trace $tmp/one0.csv" \
	"discover --ibnetdiscover $tmp/ft.json"; do
	printf 'submit_s,gpus,run_s\n0,1,10\n' >"$tmp/one0.csv"
	# shellcheck disable=SC2086 # c is the command and its options
	expect 1 "${c%% *} -o DIR" $T $c -o "$tmp"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "${c%% *}: -o $tmp: cannot write: Is a directory" "$tmp/err" &&
		ok "${c%% *} -o DIR refused first" || bad "${c%% *} -o DIR: $(cat "$tmp/err")"
done

# ---- options that would be ignored are refused ----
printf 'submit_s,gpus,run_s\n0,1,10\n' >"$tmp/one.csv"
expect 2 "simulate --policies ''" $T simulate --policies ''
grep -q "option '--policies' has an empty value" "$tmp/err" && ok "empty policy list named" ||
	bad "--policies '': $(cat "$tmp/err")"
expect 2 "simulate --policies ," $T simulate --policies ,
grep -q "no policy named" "$tmp/err" && ok "a list of no policy named" || bad "--policies ,: $(cat "$tmp/err")"
expect 2 "simulate --policies a,,b" $T simulate --policies topoplace,,random
grep -q "simulate: --policies: an empty item" "$tmp/err" && ok "an empty item in the list refused" ||
	bad "--policies a,,b: $(cat "$tmp/err")"
expect 2 "simulate --policies twice the same" $T simulate --policies topoplace,topoplace
grep -q "a policy named twice" "$tmp/err" && ok "twice named" || bad "--policies x,x: $(cat "$tmp/err")"
expect 2 "simulate --trace with --jobs" $T simulate --trace "$tmp/one.csv" --jobs 5
grep -q "\-\-jobs shapes a synthetic trace" "$tmp/err" && ok "--jobs with --trace named" || bad "--jobs: $(cat "$tmp/err")"
expect 2 "trace --assume-gpus on a CSV" $T trace "$tmp/one.csv" --assume-gpus all
grep -q "one.csv is a CSV trace" "$tmp/err" && ok "--assume-gpus on a CSV named" || bad "--assume-gpus: $(cat "$tmp/err")"

# ---- a fabric without hosts (CAs with the firmware's default names) has
# no topology.conf to write ----
if [ -f "$TP_FIXTURES/ib/jabl-ibtopotool/1.topo" ]; then
	$T discover --ibnetdiscover "$TP_FIXTURES/ib/jabl-ibtopotool/1.topo" -o "$tmp/nohosts.json" 2>/dev/null
	expect 2 "topology-conf of a fabric without hosts" $T fabric topology-conf "$tmp/nohosts.json"
	grep -q "nohosts.json: no hosts in the fabric" "$tmp/err" && ok "no hosts named" || bad "no hosts: $(cat "$tmp/err")"
fi

# ---- two leaves cabled to each other and to nothing above (jabl's third
# dump): one tree, its top without switches, the hosts priced over the
# cable ----
if [ -f "$TP_FIXTURES/ib/jabl-ibtopotool/3.topo" ]; then
	expect 0 "discover a fabric with a leaf-to-leaf cable" \
		$T discover --ibnetdiscover "$TP_FIXTURES/ib/jabl-ibtopotool/3.topo" -o "$tmp/j3.json"
	expect 0 "its topology.conf" $T fabric topology-conf "$tmp/j3.json"
	grep -q '^SwitchName=g2-1 Switches=g1-\[1-2\]$' "$tmp/out" &&
		grep -q '^# g2-1: no switch: ' "$tmp/out" &&
		ok "the two leaves under one parent" || bad "leaf-to-leaf tree: $(cat "$tmp/out")"
	expect 0 "hosts on both leaves priced" \
		$T cost --fabric "$tmp/j3.json" --hosts r-ufm96,r-ufm216 --bytes 1G
fi

# ---- a dump cut short at a block boundary parses (it is a dump of a
# smaller fabric) but says that cabled nodes were never described ----
if [ -f "$TP_FIXTURES/ib/NVIDIA-topograph/ibnetdiscover-example.out" ]; then
	head -c 100000 "$TP_FIXTURES/ib/NVIDIA-topograph/ibnetdiscover-example.out" >"$tmp/cut.out"
	expect 0 "discover a dump cut short" $T discover --ibnetdiscover "$tmp/cut.out" -o "$tmp/cut.json"
	grep -q "cut.out: 9 switches and 554 CAs cabled but never described (a dump cut short?)" "$tmp/err" &&
		ok "the cut is warned about" || bad "cut dump: $(cat "$tmp/err")"
	expect 0 "the whole dump" $T discover --ibnetdiscover "$TP_FIXTURES/ib/NVIDIA-topograph/ibnetdiscover-example.out" -o "$tmp/whole.json"
	grep -q "never described" "$tmp/err" && bad "whole dump warned: $(cat "$tmp/err")" || ok "the whole dump is not"
fi

# ---- two subnets with one head node on both (plafrim2): the compute
# hosts' one leaf is the rail count, none of them "degraded" (the head
# node's two leaves made 96 of 97 hosts degraded) ----
p2=$TP_FIXTURES/ib/hwloc-netloc/plafrim2
if [ -f "$p2/ib-subnet-fe80_0000_0000_0000.txt" ]; then
	expect 0 "discover plafrim2's two subnets" $T discover --ibnetdiscover \
		"$p2/ib-subnet-fe80_0000_0000_0000.txt" "$p2/ib-subnet-fe80_0000_0000_0001.txt" -o "$tmp/p2.json"
	grep -q "97 hosts, 8 switches, 178 links, 0 GPUs, 1 rail$" "$tmp/err" && ! grep -q degraded "$tmp/err" &&
		ok "one rail, no host degraded" || bad "plafrim2 rails: $(cat "$tmp/err")"
	# the head node on both subnets joins no leaves: subnet 1's host is
	# not grouped (nor put under spines) with subnet 0's
	expect 0 "plafrim2 topology.conf" $T fabric topology-conf "$tmp/p2.json"
	grep -q "^SwitchName=g1-[0-9]* Nodes=sirocco06$" "$tmp/out" && ! grep -q "Nodes=.*bright.*sirocco06" "$tmp/out" &&
		ok "sirocco06 (subnet 1) in a group of its own" || bad "plafrim2 groups: $(cat "$tmp/out")"
fi
# a rail fabric (one subnet a rail) where 5 of 8 hosts lost their second
# rail: the 3 hosts on both subnets are no gateways, so the rails stay 2
# and each unit's two rail leaves one group (a mode of the leaf counts
# made rails 1 and split them)
$T fabric generate rail --sus 2 --hosts-per-su 4 --rails 2 --gpus-per-host 2 -o "$tmp/rl.json" >/dev/null
jq -c '[.cas | to_entries[] | select(.value.desc | test("^dgx00[12356] mlx5_1$")) | .key] as $d |
	.links |= map(select(((.[0] == "ca" and (.[1] as $i | $d | index($i)) != null) or
		(.[3] == "ca" and (.[4] as $i | $d | index($i)) != null)) | not))' "$tmp/rl.json" >"$tmp/rlx.json"
expect 0 "topology-conf of a rail fabric, 5 hosts on one rail" $T fabric topology-conf "$tmp/rlx.json"
grep -q "^SwitchName=g1-1 Nodes=dgx\[001-004\] LinkSpeed=3200$" "$tmp/out" &&
	ok "the unit's two rail leaves stay one group" || bad "rail groups: $(cat "$tmp/out")"
expect 0 "fabric show of it" $T fabric show "$tmp/rlx.json"
grep -q "rails          2 " "$tmp/out" && grep -q "5 degraded" "$tmp/out" &&
	ok "2 rails, the 5 hosts degraded" || bad "rails: $(cat "$tmp/out")"
# the main job's fabric (generated, cables down on some hosts) gives no
# warning: a GPU whose NIC's cable is down is not a naming mismatch
expect 0 "simulate, one short seed" $T simulate --seeds 1 --jobs 100
[ ! -s "$tmp/err" ] && ok "simulate warns of nothing" || bad "simulate stderr: $(cat "$tmp/err")"

# ---- node data naming NICs the fabric calls otherwise (nvidia-smi's
# mlx5_N against the dump's HCA-N descriptions): said, not silent ----
nv=$TP_FIXTURES/ib/NVIDIA-topograph/ibnetdiscover-example.out
a100=$TP_FIXTURES/nvidia-smi/dgx-a100_topo-m.gengwg-cheatsheets.txt
if [ -f "$nv" ] && [ -f "$a100" ]; then
	mkdir -p "$tmp/smi"
	cp "$a100" "$tmp/smi/a05-p1-dgx-01-c01.txt"
	expect 0 "discover with nvidia-smi data naming mlx5 NICs" \
		$T discover --ibnetdiscover "$nv" --nvidia-smi "$tmp/smi" -o "$tmp/nvx.json"
	grep -q "1 host's GPUs name NICs the fabric does not call so (e.g. a05-p1-dgx-01-c01: mlx5_0, its CAs 'HCA-1'" "$tmp/err" &&
		ok "the unmatched NIC names are warned about" || bad "NIC names: $(cat "$tmp/err")"
fi

# ---- monitor --state-out naming a fabric model (a slip of the keyboard)
# is refused before any sweep, the file untouched ----
cp "$tmp/ft.json" "$tmp/ft-copy.json"
expect 2 "monitor --state-out a fabric file" $T monitor --fabric "$tmp/ft.json" --state-out "$tmp/ft-copy.json"
grep -q "state-out .*ft-copy.json: a topoplace-fabric/1 file, not topoplace-state/1: not overwritten" "$tmp/err" &&
	cmp -s "$tmp/ft.json" "$tmp/ft-copy.json" && ok "refused, the file untouched" ||
	bad "monitor --state-out fabric: $(cat "$tmp/err")"

# ---- trace --price: records that overlap on the same GPUs are counted
# and named, not priced as if the state held both ----
$T fabric generate fat-tree --leaves 2 --hosts-per-leaf 2 --gpus-per-host 4 -o "$tmp/f4.json" >/dev/null
{
	echo 'JobID|Submit|Start|End|NNodes|NodeList|AllocTRES'
	echo '1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T01:00:00|2|node[001-002]|gres/gpu=8,node=2'
	echo '2|2026-12-01T00:00:00|2026-12-01T00:10:00|2026-12-01T01:00:00|2|node[001-002]|gres/gpu=8,node=2'
} >"$tmp/ov.txt"
expect 0 "trace --price with overlapping records" $T trace "$tmp/ov.txt" --price --fabric "$tmp/f4.json"
grep -q "^1 record found GPUs already held.*the first: job 2 (line 3)" "$tmp/out" &&
	ok "the overlap is counted and named" || bad "overlap: $(cat "$tmp/out")"
# a host down in --state is not an overlap of records
head -n 2 "$tmp/ov.txt" >"$tmp/ov1.txt"
printf '{"format":"topoplace-state/1","down":["node001"]}\n' >"$tmp/down.json"
expect 0 "trace --price, a record's host down in --state" \
	$T trace "$tmp/ov1.txt" --price --fabric "$tmp/f4.json" --state "$tmp/down.json"
grep -q "already held" "$tmp/out" && bad "a down host called an overlap: $(cat "$tmp/out")" ||
	ok "a down host is no overlap"

# ---- trace --price: nothing priced reads null, not 0; a trace with no
# node list at all is refused, as simulate --deflate-runs refuses it ----
sed 's/node\[001-002\]/gone[1-2]/' "$tmp/ov1.txt" >"$tmp/gone.txt"
expect 0 "trace --price, no record's hosts in the fabric" $T trace "$tmp/gone.txt" --price \
	--fabric "$tmp/f4.json" --json
jq -e '(.priced == 0) and (.not_priced == 1) and ([.slowdown_mean, .slowdown_alone_mean, .slowdown_se,
	.slowdown_p95, .slowdown_max, .pick.slowdown_mean, .pick.ratio_mean, .pick.ratio_se] | all(. == null))' \
	"$tmp/out" >/dev/null && ok "trace --price: no job priced, the slowdowns null" ||
	bad "trace --price, nothing priced: $(cat "$tmp/out")"
expect 0 "trace --price text, no job priced" $T trace "$tmp/gone.txt" --price --fabric "$tmp/f4.json"
grep -q "slowdown.*mean" "$tmp/out" && bad "trace --price text with no job priced: $(cat "$tmp/out")" ||
	ok "trace --price text: no slowdown figures without a job priced"
# one job priced: a mean with no error bar (null), not +- 0; two: a number
expect 0 "trace --price, one job priced" $T trace "$tmp/ov1.txt" --price --fabric "$tmp/f4.json" --json
jq -e '(.priced == 1) and (.slowdown_mean != null) and (.pick.ratio_mean != null) and
	(.slowdown_se == null) and (.pick.ratio_se == null)' "$tmp/out" >/dev/null &&
	ok "trace --price: one job, the standard errors null" || bad "trace --price, one job: $(cat "$tmp/out")"
expect 0 "trace --price text, one job priced" $T trace "$tmp/ov1.txt" --price --fabric "$tmp/f4.json"
! grep -q -- "+-" "$tmp/out" && [ "$(grep -c "one job: no error bar" "$tmp/out")" -eq 2 ] &&
	ok "trace --price text: one job, no error bar said" || bad "trace --price text, one job: $(cat "$tmp/out")"
expect 0 "trace --price, two jobs priced" $T trace "$tmp/ov.txt" --price --fabric "$tmp/f4.json" --json
jq -e '(.priced == 2) and (.slowdown_se | type == "number") and (.pick.ratio_se | type == "number")' \
	"$tmp/out" >/dev/null && ok "trace --price: two jobs, the standard errors numbers" ||
	bad "trace --price, two jobs: $(cat "$tmp/out")"
printf 'submit_s,nodes,gpus_per_node,run_s\n0,2,4,100\n' >"$tmp/nolist.csv"
sed 's/|NodeList//; s/|node\[001-002\]//' "$tmp/ov1.txt" >"$tmp/nolist.txt"
for f in nolist.csv nolist.txt; do
	expect 2 "trace --price on $f" $T trace "$tmp/$f" --price --fabric "$tmp/f4.json"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "trace: --price: $tmp/$f .*node list" "$tmp/err" &&
		[ ! -s "$tmp/out" ] && ok "trace --price: $f without node lists refused" || bad "$f: $(cat "$tmp/err")"
done
expect 2 "simulate --deflate-runs, sacct without NodeList" $T simulate --trace "$tmp/nolist.txt" \
	--fabric "$tmp/f4.json" --deflate-runs
grep -q "simulate: --deflate-runs: $tmp/nolist.txt (sacct) records no job's node list" "$tmp/err" &&
	ok "simulate --deflate-runs: sacct without NodeList refused" || bad "--deflate-runs: $(cat "$tmp/err")"
# --json says whether run times were deflated and how many, and what the
# header says Slurm's records left out (trace --json's names)
{
	echo 'JobID|Submit|Start|End|NNodes|NodeList|AllocTRES|State'
	echo '1|2026-12-01T00:00:00|2026-12-01T00:00:00|2026-12-01T01:00:00|2|node[001,003]|gres/gpu=8,node=2|COMPLETED'
	echo '2|2026-12-01T00:00:00|Unknown|Unknown|2|None assigned|gres/gpu=8,node=2|CANCELLED by 0'
	echo '3|2026-12-01T00:00:00|2026-12-01T00:10:00|2026-12-01T01:00:00|1|node002|cpu=4|COMPLETED'
} >"$tmp/defl.txt"
for d in "" --deflate-runs; do
	expect 0 "simulate $d --json on Slurm's records" $T simulate --trace "$tmp/defl.txt" --fabric "$tmp/f4.json" \
		--policies first-fit $d --json
	cp "$tmp/out" "$tmp/defl$d.json"
done
jq -e '(.deflate_runs == false) and (.runs_deflated == null) and
	(.left_out == {"no_gpu": 1, "not_run": 1, "steps": 0, "ended_before_start": 0})' "$tmp/defl.json" >/dev/null &&
	jq -e '(.deflate_runs == true) and (.runs_deflated == 1) and (.left_out.no_gpu == 1)' \
		"$tmp/defl--deflate-runs.json" >/dev/null &&
	ok "simulate --json: deflate_runs, runs_deflated, left_out" ||
	bad "simulate --json deflation: $(jq -c '[.deflate_runs, .runs_deflated, .left_out]' "$tmp/defl.json" \
		"$tmp/defl--deflate-runs.json")"
expect 0 "simulate --deflate-runs on one deflated job" $T simulate --trace "$tmp/defl.txt" --fabric "$tmp/f4.json" \
	--policies first-fit --deflate-runs
grep -q "; 1 run time deflated by what its hosts cost it;" "$tmp/out" &&
	ok "simulate --deflate-runs: one run time, in the singular" || bad "deflated count: $(head -3 "$tmp/out")"
expect 0 "simulate --json on a CSV trace" $T simulate --trace "$tmp/three.csv" --policies first-fit --json
jq -e '(.deflate_runs == false) and (.runs_deflated == null) and (.left_out == null)' "$tmp/out" >/dev/null &&
	ok "simulate --json on a CSV: nothing deflated or left out by Slurm's rules" ||
	bad "simulate --json CSV: $(jq -c '[.deflate_runs, .runs_deflated, .left_out]' "$tmp/out")"

# ---- simulate --seed: every seed written exactly in the JSON (cJSON's
# doubles print 9007199254740991 as 9.00719925474099e+15); past 2^53,
# which a JSON number cannot hold exactly, refused on one line ----
expect 0 "simulate --seed 2^53-2 --seeds 3 --json" $T simulate --jobs 20 --seeds 3 --seed 9007199254740990 \
	--policies first-fit --json
s3=9007199254740990,9007199254740991,9007199254740992 # the seeds; per_seed: 2 policies
jeq "$tmp/out" '[.seed, .seeds, [.policies[].per_seed[].seed]] | flatten | map(tostring) | join(",")' \
	"9007199254740990,$s3,$s3,$s3" "simulate --json: seeds up to 2^53 exact"
for a in "--seed 9007199254740991 --seeds 3" "--seed 9007199254740993 --seeds 1"; do
	# shellcheck disable=SC2086 # two options a case
	expect 2 "simulate $a" $T simulate --jobs 20 $a --json
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "9007199254740992" "$tmp/err" && [ ! -s "$tmp/out" ] &&
		ok "simulate $a: refused on one line naming 2^53" || bad "simulate $a: $(cat "$tmp/err")"
done

# ---- simulate --price-budget with no topoplace policy bounds nothing:
# refused, not written to the JSON as if it had; the baseline's verdict
# reads "baseline" in every size class, as at the top ----
expect 2 "simulate --price-budget without topoplace" $T simulate --jobs 20 --seeds 2 \
	--policies first-fit,slurm-tree --price-budget 8 --json
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "simulate: --price-budget 8 bounds the topoplace policy" "$tmp/err" &&
	[ ! -s "$tmp/out" ] && ok "--price-budget without topoplace refused on one line" ||
	bad "--price-budget without topoplace: $(cat "$tmp/err")"
expect 0 "simulate --price-budget, topoplace the baseline" $T simulate --jobs 20 --seeds 2 \
	--policies first-fit --baseline topoplace --price-budget 8 --json
jq -e '(.price_budget == 8) and ([.policies.topoplace.verdict, .policies.topoplace.by_size[].verdict] |
	all(. == "baseline"))' "$tmp/out" >/dev/null &&
	ok "the baseline's by_size verdicts read baseline" ||
	bad "baseline verdicts: $(jq -c '[.price_budget, .policies.topoplace.by_size]' "$tmp/out")"
expect 0 "simulate --json without topoplace" $T simulate --jobs 20 --seeds 2 --policies first-fit,slurm-tree --json
jeq "$tmp/out" '.price_budget' null "simulate --json: no budget without topoplace"

# ---- a GUID that is both a switch and a CA: refused, never a node cabled
# to itself (discover, fabric diff, a fabric file) ----
printf '%s\n' \
	"CA 3 1 0x0002c90300000011 4x EDR - SW 1 1 0x0002c90300000011 ( 'node001 HCA-1' - 'leaf01' )" \
	"CA 4 1 0x0002c90300000012 4x EDR - SW 1 2 0x0002c90300000011 ( 'node002 HCA-1' - 'leaf01' )" \
	>"$tmp/sw_ca.txt"
expect 2 "discover: a GUID both a switch and a CA" $T discover -q --ibnetdiscover "$tmp/sw_ca.txt" -o "$tmp/sw_ca.json"
[ "$(wc -l <"$tmp/err")" -eq 1 ] &&
	grep -q "sw_ca.txt:1: GUID 0x0002c90300000011 is both a switch and a CA" "$tmp/err" && [ ! -e "$tmp/sw_ca.json" ] &&
	ok "the GUID and its line named" || bad "switch and CA GUID: $(cat "$tmp/err")"
expect 2 "fabric diff against that dump" $T fabric diff --fabric "$tmp/ft.json" --ibnetdiscover "$tmp/sw_ca.txt"
jq -c '.cas[0].guid = .switches[0].guid' "$tmp/ft.json" >"$tmp/sw_ca_j.json"
expect 2 "a fabric file with a GUID both a switch and a CA" $T fabric show "$tmp/sw_ca_j.json"
grep -q "sw_ca_j.json: cas\[0\]: GUID .* is both a switch (switches\[0\]) and a CA" "$tmp/err" &&
	ok "both objects named" || bad "JSON switch and CA GUID: $(cat "$tmp/err")"

finish
