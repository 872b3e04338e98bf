#!/bin/sh
# topology/topoplace in native mode (Slurm 24.11) prices with the same link
# state as the simulator: a real mini-cluster (contrib/slurm-cluster.sh,
# 8 nodes with 4 fake GPUs on the interleaved 2-leaf fabric, 2 up-links per
# leaf) whose topoplace.conf names a LinkState file:
#   - with one up-link of a leaf marked unhealthy, a 6-node job (one whole
#     leaf and two hosts of the other) lands where `topoplace place --fabric
#     F --state <the same file> --policy topoplace` puts it, which is not
#     where it goes on healthy links
#   - the file rewritten (another up-link unhealthy): slurmctld picks it up
#     without a restart and the next spanning job follows the new answer
#   - a corrupt file: logged, the last good links kept, slurmctld up
#   - a FIFO: logged, never opened; the next regular file is read
#   - a path that cannot be looked at (a link loop): logged once, the last
#     good links kept; the file there again is read
#   - each failure logged once however often the file is looked at
#   - the file removed: links healthy again, the answer on healthy links
#   - healthy links with only one-node jobs running (no traffic): priced
#     all the same, a 4-node job lands where `topoplace place` puts it
# Runs beside other clusters: its own network (TP_LS_NET, default
# 10.204.0) and port (TP_LS_PORT, 6947). Needs root, the 24.11 build and
# the native plugin; exit 77 if not.
. "$(dirname "$0")/lib.sh"

need_slurm 24
need_plugins topology_topoplace
NET=${TP_LS_NET:-10.204.0}
PORT=${TP_LS_PORT:-6947}
dir=$tmp/cluster

linkstate_cluster "$NET" "$PORT"

# write_links FILE HEALTH LINK...: a topoplace-state/1 file marking the
# links at HEALTH, written beside and renamed over FILE (as a monitor does)
write_links() {
	f=$1 h=$2
	shift 2
	{
		printf '{"format":"topoplace-state/1","links":['
		sep=
		for l in "$@"; do
			printf '%s{"link":%s,"health":%s}' "$sep" "$l" "$h"
			sep=,
		done
		printf ']}\n'
	} >"$f.tmp" && mv "$f.tmp" "$f"
}
# the fabric's up-links: switch-to-switch links, by index
jq -r '.links | to_entries[] | select(.value[0] == "switch" and .value[3] == "switch") | .key' \
	"$fabric" >"$tmp/uplinks"
set -- $(cat "$tmp/uplinks")
[ $# -eq 4 ] && ok "fabric has 4 up-links ($*)" || bad "fabric up-links: $* (wanted 4)"
up0=${1:-0} up1=${2:-1}

# ---- healthy links: the structural answer ----
spanning healthy ""
healthy=$got

# ---- one up-link of leaf 0 unhealthy ----
write_links "$links" 0.1 "$up0"
cp "$links" "$tmp/links1.json"
wait_log "LinkState .*: 1 of [0-9]* links degraded" 1 &&
	ok "log: $(grep -o 'LinkState .*links degraded.*' "$log" | tail -1)" ||
	bad "slurmctld read the new LinkState file"
spanning degraded1 "$tmp/links1.json"
first=$got
[ "$first" != "$healthy" ] && ok "an unhealthy up-link moves the job ($healthy -> $first)" ||
	bad "the job lands as on healthy links ($first)"

# ---- the file rewritten: the other up-link of that leaf ----
write_links "$links" 0.1 "$up1"
cp "$links" "$tmp/links2.json"
wait_log "LinkState .*: 1 of [0-9]* links degraded" 2 &&
	ok "changed file picked up without a restart" || bad "changed LinkState file picked up"
spanning degraded2 "$tmp/links2.json"
[ "$got" != "$first" ] && ok "the new file moves the job again ($first -> $got)" ||
	bad "the job lands as with the old file ($got)"

# ---- a corrupt file: the last good links kept ----
# written beside and renamed over it: a look never sees it half written
printf '{"format":"topoplace-state/1","links":[{"link":' >"$links.tmp" && mv "$links.tmp" "$links"
wait_log "LinkState .*last good link state kept" 1 &&
	ok "log: $(grep -o 'LinkState .*last good link state kept' "$log" | tail -1 | cut -c1-140)" ||
	bad "a corrupt LinkState file is logged"
timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && ok "slurmctld up with a corrupt LinkState" ||
	bad "slurmctld up with a corrupt LinkState"
spanning corrupt "$tmp/links2.json"
# looked at every 250 ms while the job ran: one line all the same
n=$(grep -c "LinkState .*last good link state kept" "$log")
[ "$n" -eq 1 ] && ok "the corrupt file logged once over many looks" ||
	bad "the corrupt file logged $n times"

# ---- hostile content: wrong types, out-of-range links, huge numbers ----
for bad_json in '[]' '{"format":"topoplace-state/1","links":[{"link":99999,"health":0.5}]}' \
	'{"format":"topoplace-state/1","links":[{"link":0,"health":-1}]}' \
	'{"format":"topoplace-state/1","links":[{"link":0,"background_gbps":1e400}]}' \
	'{"format":"topoplace-state/1","jobs":[{"id":1,"hosts":{"nope":4}}]}'; do
	printf '%s\n' "$bad_json" >"$links"
	sleep 1.2
done
timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && ok "slurmctld up after hostile LinkState files" ||
	bad "slurmctld up after hostile LinkState files"

# ---- a FIFO: never opened (its open would block the writer until someone
# wrote it, and with it every later LinkState change) ----
rm -f "$links"
mkfifo "$links"
wait_log "LinkState .*not a regular file" 1 &&
	ok "log: $(grep -o 'LinkState .*not a regular file' "$log" | tail -1)" ||
	bad "a FIFO as LinkState is logged"
n=$(grep -c "LinkState .*: 1 of [0-9]* links degraded" "$log")
# renamed over the FIFO: no look finds the path empty, which would log
# "no such file" and leave nothing to recover from
write_links "$links" 0.1 "$up0"
wait_log "LinkState .*: 1 of [0-9]* links degraded" $((n + 1)) &&
	ok "a regular file after the FIFO is read" ||
	bad "the writer stuck on the FIFO: a later LinkState file not read"
# a bad file mended is "good again" (topoplace.conf(5) keeps "readable
# again" for one that could not be read: the link loop below)
grep -q "LinkState .*good again: 1 of [0-9]* links degraded" "$log" &&
	! grep -q "LinkState .*readable again" "$log" &&
	ok "log: $(grep -o 'LinkState .*good again: .*' "$log" | tail -1 | cut -c1-120)" ||
	bad "the FIFO's recovery: $(grep -o 'LinkState .*again.*' "$log" | tail -1)"
timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP' && ok "slurmctld up after a FIFO LinkState" ||
	bad "slurmctld up after a FIFO LinkState"

# ---- a path that cannot be looked at (a link loop; a directory on it
# that slurmctld cannot search does the same): logged once, the last good
# links kept; a file there again is read ----
n=$(grep -c "LinkState .*: 1 of [0-9]* links degraded" "$log")
r=$(grep -c "LinkState .*readable again" "$log")
gone=$(grep -c "LinkState .*no such file" "$log")
# a link into a loop (x -> y -> x) renamed over the file: no look sees
# the path empty
ln -s "$links.y" "$links.x" && ln -s "$links.x" "$links.y" &&
	ln -s "$links.x" "$links.tmp" && mv -T "$links.tmp" "$links" ||
	bad "a link loop at the LinkState path"
wait_log "LinkState .*cannot look at it" 1 &&
	ok "log: $(grep -o 'LinkState .*cannot look at it.*' "$log" | tail -1)" ||
	bad "a LinkState path that cannot be looked at is logged"
# the links written after the FIFO (links1.json's) still price the job,
# while the writer looks at the loop every 250 ms
spanning loop "$tmp/links1.json"
c=$(grep -c "LinkState .*cannot look at it" "$log")
[ "$c" -eq 1 ] && ok "logged once over many looks" || bad "logged $c times over many looks"
[ "$(grep -c "LinkState .*no such file" "$log")" -eq "$gone" ] &&
	ok "a link loop is not a removed file" || bad "a link loop read as a removed file"
write_links "$links" 0.1 "$up0" # renamed over the loop
rm -f "$links.x" "$links.y"
wait_log "LinkState .*readable again: 1 of [0-9]* links degraded" $((r + 1)) &&
	[ "$(grep -c "LinkState .*: 1 of [0-9]* links degraded" "$log")" -eq $((n + 1)) ] &&
	ok "the file there again is read, its recovery logged" ||
	bad "LinkState not read again after the path could be looked at"

# ---- the file removed: healthy links again ----
rm -f "$links"
wait_log "LinkState .*no such file: links healthy" 1 && ok "a removed file: links healthy" ||
	bad "a removed LinkState file is logged"
spanning removed ""
[ "$got" = "$healthy" ] && ok "healthy links: the answer on healthy links again ($got)" ||
	bad "after the file went: $got, healthy: $healthy"

# ---- healthy, idle links are priced too ----
# node001 and node002 (one in each leaf) busy with one-node jobs, which
# load no link: a 4-node job. The structure alone takes three hosts of one
# leaf and one of the other; pricing, as `topoplace place` does, takes
# two and two (a ring about 11% faster on this fabric).
b1=$(timeout 10 sbatch --parsable -J idle1 -o /dev/null -N 1 --exclusive -w node001 --wrap 'sleep 60')
b2=$(timeout 10 sbatch --parsable -J idle2 -o /dev/null -N 1 --exclusive -w node002 --wrap 'sleep 60')
wait_state "$b1" RUNNING && wait_state "$b2" RUNNING || bad "one-node jobs $b1 $b2 running"
printf '{"format":"topoplace-state/1","jobs":[{"id":1,"hosts":{"node001":4}},{"id":2,"hosts":{"node002":4}}]}\n' \
	>"$tmp/busy.json"
want=$(place nodes=4,exclusive "$tmp/busy.json")
j=$(timeout 10 sbatch --parsable -J idle4 -o /dev/null -N 4 --exclusive --wrap 'sleep 2')
wait_state "$j" RUNNING COMPLETED || bad "job $j (4 nodes) ran"
got=$(hostset "$(field "$j" NodeList)")
echo "# healthy idle links: job $j on $got; topoplace place --state: $want"
[ "$got" = "$want" ] && ok "healthy, idle links priced: job $j = topoplace place ($want)" ||
	bad "healthy, idle links: job $j on $got, topoplace place: $want"
timeout 10 scancel "$b1" "$b2" "$j" >/dev/null 2>&1

timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
if grep -h 'RaisedSignal\|Segmentation' "$dir"/log/slurmd-*.log "$log" >"$tmp/crash" 2>/dev/null && [ -s "$tmp/crash" ]; then
	bad "a crash: $(head -1 "$tmp/crash")"
else
	ok "no crash"
fi
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
