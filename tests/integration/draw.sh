#!/bin/sh
# topoplace draw and the simulate report, looked at as a person would:
# render the SVG to PNG with rsvg-convert, decode the pixels
# (integration/svgpng.py) and check that a job's hosts wear its legend
# colour, that a degraded cable is drawn in the health colour the legend
# gives, that a loaded up-link turns hot with --heat, and that the labels
# a reader needs (fabric, state, job ids, aggregation) are in the text.
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE
RSVG=${TP_RSVG_CONVERT:-rsvg-convert}
command -v "$RSVG" >/dev/null 2>&1 ||
	skip_all "$RSVG absent (Debian librsvg2-bin; contrib/install-deps.sh)"
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "$PY absent (Debian python3)"
LOOK="$PY $(dirname "$0")/svgpng.py"
png() { "$RSVG" -o "$2" "$1" 2>"$tmp/rsvg.err" || { bad "rsvg-convert $1: $(cat "$tmp/rsvg.err")"; return 1; }; }
check() { if "$@" >"$tmp/look" 2>&1; then ok "$(tail -1 "$tmp/look")"; else bad "$(cat "$tmp/look")"; fi; }

# 4 leaves x 4 hosts x 8 GPUs, 2 spines, one cable from each leaf to each
$T fabric generate fat-tree --nics-per-host 1 --leaves 4 --spines 2 --hosts-per-leaf 4 --uplinks 1 -o "$tmp/ft.json" ||
	{ bad "generate"; finish; }
# the first leaf-spine cable and node001's own cable, from the fabric
up=$(jq '[.links | to_entries[] | select(.value[0] == "switch" and .value[3] == "switch")][0].key' "$tmp/ft.json")
hostl=$(jq '[.links | to_entries[] | select(.value[0] == "ca" or .value[3] == "ca")][0].key' "$tmp/ft.json")
[ -n "$up" ] && [ "$up" != null ] && [ -n "$hostl" ] && [ "$hostl" != null ] ||
	{ bad "cable indices from the fabric JSON (up=$up host=$hostl)"; finish; }

# job 7 across two leaves (its ring crosses the spines), job 12 on one host,
# node016 down, the up-link at half health
cat >"$tmp/state.json" <<J
{"format":"topoplace-state/1","down":["node016"],
 "jobs":[{"id":7,"hosts":{"node001":8,"node002":8,"node005":8,"node006":8}},
         {"id":12,"hosts":{"node010":4}}],
 "links":[{"link":$up,"health":0.5}]}
J
# a file name with XML's special characters stays text
cp "$tmp/state.json" "$tmp/s&<1>.json"
expect 0 "draw" $T draw --fabric "$tmp/ft.json" --state "$tmp/s&<1>.json" -o "$tmp/f.svg"
png "$tmp/f.svg" "$tmp/f.png" && ok "rendered to PNG"
check $LOOK text "$tmp/f.svg" "$tmp/ft.json" "$tmp/s&<1>.json" "job 7 (32 GPUs)" "job 12 (4 GPUs)" \
	"Cables: health" "hosts down" "Aggregated:"
check $LOOK host "$tmp/f.svg" "$tmp/f.png" node001 legend-job-7
check $LOOK host "$tmp/f.svg" "$tmp/f.png" node006 legend-job-7
check $LOOK host "$tmp/f.svg" "$tmp/f.png" node010 legend-job-12
check $LOOK host "$tmp/f.svg" "$tmp/f.png" node016 legend-down
c7=$(grep -o "id='legend-job-7'[^>]*fill='#[0-9a-f]*'" "$tmp/f.svg" | grep -o '#[0-9a-f]*')
c12=$(grep -o "id='legend-job-12'[^>]*fill='#[0-9a-f]*'" "$tmp/f.svg" | grep -o '#[0-9a-f]*')
[ -n "$c7" ] && [ "$c7" != "$c12" ] && ok "jobs 7 and 12 in different colours ($c7, $c12)" ||
	bad "job colours: 7 '$c7', 12 '$c12'"
check $LOOK host "$tmp/f.svg" "$tmp/f.png" node003 legend-free
# health bins: 0 down, 1 below 0.5, 2 0.5-0.75, 3 0.75-1, 4 healthy
check $LOOK link "$tmp/f.svg" "$tmp/f.png" "$up" legend-health-2
check $LOOK link "$tmp/f.svg" "$tmp/f.png" "$hostl" legend-health-4

# a cable going down turns black; a host cable at 0.3 marks its host
sed "s/\"health\":0.5}/\"health\":0},{\"link\":$hostl,\"health\":0.3}/" "$tmp/state.json" >"$tmp/down.json"
expect 0 "draw, cable down" $T draw --fabric "$tmp/ft.json" --state "$tmp/down.json" -o "$tmp/d.svg"
png "$tmp/d.svg" "$tmp/d.png" &&
	check $LOOK link "$tmp/d.svg" "$tmp/d.png" "$up" legend-health-0
check $LOOK text "$tmp/d.svg" "node001: cable (link $hostl) at health 0.30 (state x rate)"
check $LOOK outline "$tmp/d.svg" "$tmp/d.png" node001 legend-weak
check $LOOK host "$tmp/d.svg" "$tmp/d.png" node001 legend-job-7

# heat: job 7's all-reduce crosses the up-links at full rate
expect 0 "draw --heat" $T draw --fabric "$tmp/ft.json" --state "$tmp/state.json" --heat -o "$tmp/h.svg"
png "$tmp/h.svg" "$tmp/h.png"
check $LOOK text "$tmp/h.svg" "Cables: predicted utilisation" "all-reduce of 1 GiB at once" "0 jobs without a live route"
# node001's cable carries job 7's ring: above 75% of its rate
check $LOOK link "$tmp/h.svg" "$tmp/h.png" "$hostl" legend-util-4
# a host cable no job uses is idle
idle=$(jq '[.links | to_entries[] | select(.value[0] == "ca" or .value[3] == "ca")] | .[-1].key' "$tmp/ft.json")
check $LOOK link "$tmp/h.svg" "$tmp/h.png" "$idle" legend-util-0
# node001 down with its cable: job 7 has no route and is said to be left out
sed 's/"down":\["node016"\]/"down":["node016","node001"]/; s/"links":\[.*\]}/"links":[{"link":'"$hostl"',"health":0}]}/' \
	"$tmp/state.json" >"$tmp/cut.json"
expect 0 "draw --heat, a job cut off" $T draw --fabric "$tmp/ft.json" --state "$tmp/cut.json" --heat -o "$tmp/c.svg"
check $LOOK text "$tmp/c.svg" "1 jobs without a live route left out"
# the size in a unit that fits it; "at once" only at duty 1
for c in "64K 1:64 KiB at once" "0 1:0 B at once" "1.5G 0.5:1.5 GiB (duty 0.50" "100000 0.25:97.6562 KiB (duty 0.25"; do
	set -- ${c%%:*}
	expect 0 "draw --heat --bytes $1 --duty $2" $T draw --fabric "$tmp/ft.json" --state "$tmp/state.json" \
		--heat --bytes "$1" --duty "$2" -o "$tmp/b.svg"
	grep -qF "Heat: every job&apos;s all-reduce of ${c#*:}" "$tmp/b.svg" &&
		ok "heat header: ${c#*:}" || bad "heat header for $1, duty $2: $(grep -o "Heat: [^<]*" "$tmp/b.svg")"
done
expect 2 "draw --duty 2" $T draw --fabric "$tmp/ft.json" --heat --duty 2 -o "$tmp/x.svg"
expect 2 "draw --bytes bad" $T draw --fabric "$tmp/ft.json" --heat --bytes 1Q -o "$tmp/x.svg"

# a large fabric aggregates: 16,384 hosts stay a few thousand elements
$T fabric generate fat-tree --nics-per-host 1 --leaves 512 --spines 16 --hosts-per-leaf 32 --uplinks 1 -o "$tmp/big.json" ||
	bad "generate 16,384 hosts"
expect 0 "draw 16,384 hosts" $T draw --fabric "$tmp/big.json" -o "$tmp/big.svg"
n=$(grep -c '<' "$tmp/big.svg")
[ "$n" -lt 30000 ] && ok "16,384 hosts: $n elements" || bad "16,384 hosts: $n elements"
check $LOOK text "$tmp/big.svg" "hosts as one bar of GPUs per group" "16384 hosts"
png "$tmp/big.svg" "$tmp/big.png" && ok "16,384 hosts render"

# two leaves cabled to each other (jabl's third dump): the cable arcs
# above the row, in its health's colour
if [ -f "$TP_FIXTURES/ib/jabl-ibtopotool/3.topo" ]; then
	$T discover -q --ibnetdiscover "$TP_FIXTURES/ib/jabl-ibtopotool/3.topo" -o "$tmp/j3.json"
	ll=$(jq '[.links | to_entries[] | select(.value[0] == "switch" and .value[3] == "switch")][0].key' "$tmp/j3.json")
	printf '{"format":"topoplace-state/1","links":[{"link":%s,"health":0.6}]}\n' "$ll" >"$tmp/j3s.json"
	expect 0 "draw a leaf-to-leaf cable" $T draw --fabric "$tmp/j3.json" --state "$tmp/j3s.json" -o "$tmp/j3.svg"
	grep -q "<path d='M [^']* Q [^']*' fill='none' [^>]*data-links='$ll'" "$tmp/j3.svg" &&
		ok "the cable between the leaves is an arc" || bad "no arc for link $ll"
	png "$tmp/j3.svg" "$tmp/j3.png" &&
		check $LOOK link "$tmp/j3.svg" "$tmp/j3.png" "$ll" legend-health-2
fi

# switch names that share their ends (NVIDIA's SuperPOD dump: "MF0;"
# and ":MQM9701/U1" on every one): the labels keep the part that differs
nv="$TP_FIXTURES/ib/NVIDIA-topograph/ibnetdiscover-example.out"
if [ -f "$nv" ]; then
	$T discover -q --ibnetdiscover "$nv" -o "$tmp/nv.json"
	expect 0 "draw the SuperPOD dump" $T draw --fabric "$tmp/nv.json" -o "$tmp/nv.svg"
	n=$(jq '.switches | length' "$tmp/nv.json")
	d=$(grep -o "<text[^>]*font-size='8' text-anchor='middle'[^>]*>[^<]*" "$tmp/nv.svg" | sed 's/.*>//' | sort -u | wc -l)
	[ "$d" = "$n" ] && ok "$n switches, $d distinct labels" || bad "$n switches, $d distinct labels"
fi

# the simulate report: binned lines per policy, axes, names
expect 0 "simulate --svg" $T simulate --fabric "$tmp/ft.json" --synthetic llm --jobs 120 --seeds 1 \
	--policies topoplace,first-fit --baseline first-fit --svg "$tmp/sim.svg"
png "$tmp/sim.svg" "$tmp/sim.png" && ok "report rendered"
check $LOOK text "$tmp/sim.svg" "Fabric: $tmp/ft.json" "Trace: llm (synthetic, Hu et al." "120 jobs, seed 1" "Fragmentation" \
	"hours since the first arrival" "topoplace, mean" "first-fit, mean" "100%"
np=$(grep -c '<polyline' "$tmp/sim.svg")
[ "$np" -eq 6 ] && ok "3 panels x 2 policies" || bad "$np polylines, wanted 6"
pts=$(grep '<polyline' "$tmp/sim.svg" | tail -1 | tr ' ' '\n' | grep -c ,)
[ "$pts" -le 60 ] && ok "fragmentation: $pts binned points" || bad "fragmentation: $pts points"
finish
