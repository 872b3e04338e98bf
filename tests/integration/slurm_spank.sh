#!/bin/sh
# spank_topoplace in a real mini-cluster (contrib/slurm-cluster.sh, Slurm
# 22.05: munged, slurmctld, 8 slurmd in network namespaces, 4 fake GPUs
# each) with topology/topoplace, on the default interleaved fabric (odd
# hosts on leaf01, even on leaf02), jobs run by a non-root user (tpuser,
# created when absent):
#   - every task of an 8-node srun step sees TOPOPLACE_PLAN/RANK/
#     LOCAL_RANK/WORLD_SIZE/NODE_RANK and NCCL_IB_HCA; the batch script
#     itself sees none of them
#   - the plan file is the user's, 0600, in a root directory (0711) the
#     user cannot add files to;
#     its ring is `topoplace plan --json`'s for the job's nodes
#   - SLURM_PROCID follows the fabric (topology plugin), and TOPOPLACE_RANK
#     equals it
#   - a user-set NCCL_IB_HCA survives (and slurmd says it was kept);
#     --topoplace=off sets nothing; --topoplace=bogus is refused by srun;
#     --topoplace=verbose prints one line per node
#   - a planted symlink in place of the job directory is refused, the job
#     runs; with the fabric file removed the job runs, untouched, and each
#     slurmd logs one line
#   - job directories are gone after the jobs
#   - a heterogeneous step runs without a plan, one info line a node
#   - a step started from inside a task (srun --overlap in an srun) gets
#     its own plan and ranks, not its outer step's, also with =off
# Needs root, the Slurm packages, the built SPANK and topology plugins;
# exit 77 if not. Network and port: TP_SPANK_NET (10.216.0), TP_SPANK_PORT
# (7017), so it runs beside the other mini-cluster tests.
. "$(dirname "$0")/lib.sh"

need_slurm 22 runuser
need_plugins spank_topoplace topology_topoplace
NET=${TP_SPANK_NET:-10.216.0}
PORT=${TP_SPANK_PORT:-7017}
USER_NAME=${TP_SPANK_USER:-tpuser}
if ! id "$USER_NAME" >/dev/null 2>&1; then
	useradd -M -r -d /nonexistent -s /bin/sh "$USER_NAME" 2>/dev/null ||
		skip_all "cannot create user $USER_NAME"
fi
uid=$(id -u "$USER_NAME")
# the copy the cluster stages in its directory: srun loads it as the user
PLUGIN_SO=@DIR@/plugins/spank_topoplace.so

# The job's user must reach the cluster directory (plans, slurm.conf) and
# a working directory of its own.
chmod 755 "$tmp"
dir=$tmp/cluster
work=$tmp/work
mkdir -p "$work"
chown "$USER_NAME" "$work"

t0=$(date +%s)
cluster_trap 'slurmd-node*.log' topoplace 20

# basedir and sysfs per "node": they share one file system here (a real node's /run
# is its own); %h is the node's hostname.
cat >"$tmp/plugstack.conf" <<EOF
optional $PLUGIN_SO fabric=@DIR@/fabric.json basedir=@DIR@/tprun/%h mode=auto topodir=@DIR@/nccltopo sysfs=@DIR@/sysfs/%h
EOF
cat >"$tmp/topoplace.conf" <<'EOF'
FabricFile=@DIR@/fabric.json
EOF
echo "PlugStackConfig=$dir/plugstack.conf" >"$tmp/extra.conf"

echo "# $CLUSTER start --topology topoplace --nodes 8 --net $NET --port $PORT --dir $dir"
if ! timeout 90 "$CLUSTER" start --topology topoplace --plugin-dir "$PLUGIN_DIR" \
	--nodes 8 --gpus-per-node 4 --dir "$dir" --timeout 40 --net "$NET" --port "$PORT" \
	--extra-file "$tmp/topoplace.conf" --extra-file "$tmp/plugstack.conf" \
	--slurm-conf-extra "$tmp/extra.conf" >"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start"
	finish
fi
ok "cluster up in $(($(date +%s) - t0)) s"
export SLURM_CONF=$dir/slurm.conf
# munge clients of the job's user need the socket's directory (the key
# stays root's, 0400); the per-node plan directories' parent
chmod 755 "$dir/munge"
mkdir -p "$dir/tprun"

# Each node's /sys/class/infiniband as the kernel would show it: the
# fabric's CAs of that host with their node GUIDs (the plugin exports only
# devices it finds there).
fake_sysfs() {
	rm -rf "$dir/sysfs"
	/usr/bin/python3 - "$dir/fabric.json" "$dir/sysfs" <<'PY'
import json, os, sys
fab = json.load(open(sys.argv[1]))
for ca in fab["cas"]:
    host, _, dev = ca["desc"].partition(" ")
    if not dev:
        continue
    d = os.path.join(sys.argv[2], host, "class", "infiniband", dev)
    os.makedirs(d)
    g = "%016x" % int(ca["guid"], 16)
    with open(os.path.join(d, "node_guid"), "w") as f:
        f.write(":".join(g[i:i + 4] for i in range(0, 16, 4)) + "\n")
PY
}
fake_sysfs
as_user() { (cd "$work" && runuser -u "$USER_NAME" -- "$@"); }
wait_done() { # JOBID: wait (<= 60 s) until it left the queue
	i=0
	while [ $i -lt 300 ]; do
		# a client that timed out (loaded machine) says nothing: ask again
		if q=$(timeout 10 squeue -h -j "$1" -o %i 2>"$tmp/squeue.err"); then
			[ -z "$q" ] && return 0
		elif grep -q 'Invalid job id' "$tmp/squeue.err"; then
			return 0
		fi
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
jobdirs() { # JOBID: job directories left on any node
	ls -d "$dir"/tprun/*/"job$1" 2>/dev/null | wc -l
}
nodelog() { # NODE: its slurmd log
	echo "$dir/log/slurmd-$1.log"
}

# ---- one job, 8 nodes, 2 tasks each ----
cat >"$work/job.sh" <<'EOF'
#!/bin/sh
echo "batch nodelist=$SLURM_JOB_NODELIST plan=${TOPOPLACE_PLAN:-unset} hca=${NCCL_IB_HCA:-unset}"
srun -l sh -c 'echo "env $(hostname) $SLURM_PROCID ${TOPOPLACE_RANK:-x} ${TOPOPLACE_LOCAL_RANK:-x} ${TOPOPLACE_WORLD_SIZE:-x} ${TOPOPLACE_NODE_RANK:-x} ${NCCL_IB_HCA:-x} ${NCCL_CROSS_NIC:-x} ${TOPOPLACE_PLAN:-x}"
if [ "$SLURM_LOCALID" = 0 ] && [ -n "${TOPOPLACE_PLAN:-}" ]; then
	echo "stat $(hostname) $(stat -c "%U %a" "$TOPOPLACE_PLAN") $(stat -c "%U %a" "$(dirname "$TOPOPLACE_PLAN")")"
	cp "$TOPOPLACE_PLAN" "plan-$(hostname).json"
	# the job directory belongs to root: the user cannot add files
	case $(hostname) in
	node005) touch "$(dirname "$TOPOPLACE_PLAN")/mine.txt" 2>/dev/null ||
		echo "mine denied $(hostname)" ;;
	esac
fi'
NCCL_IB_HCA==mlx5_7 srun -l sh -c 'echo "user $(hostname) ${NCCL_IB_HCA:-x} ${TOPOPLACE_PLAN:-x}"'
srun -l --topoplace=off sh -c 'echo "off $(hostname) ${TOPOPLACE_PLAN:-x} ${NCCL_IB_HCA:-x}"'
srun --topoplace=verbose -N 2 -n 2 true
if srun --topoplace=bogus true 2>bogus.err; then echo "bogus accepted"; else echo "bogus refused"; fi
# steps started from inside a task inherit its step's variables
srun -N1 -n1 sh -c 'echo "outer ${TOPOPLACE_STEP:-x} ${TOPOPLACE_WORLD_SIZE:-x}"
srun --overlap -N4 -n8 sh -c "echo \"nested \$SLURM_PROCID \${TOPOPLACE_RANK:-x} \${TOPOPLACE_WORLD_SIZE:-x} \${TOPOPLACE_STEP:-x} \${TOPOPLACE_PLAN:-x} \${NCCL_IB_HCA:-x}\""
srun --overlap --topoplace=off -N2 -n2 sh -c "echo \"nestoff \${TOPOPLACE_PLAN:-x} \${TOPOPLACE_RANK:-x} \${TOPOPLACE_STEP:-x}\""
NCCL_IB_HCA==mlx5_9 srun --overlap -N2 -n2 sh -c "echo \"nestuser \${NCCL_IB_HCA:-x} \${TOPOPLACE_WORLD_SIZE:-x}\""'
EOF
chmod 755 "$work/job.sh"
j1=$(as_user timeout 10 sbatch --parsable -J a -N 8 --ntasks-per-node=2 -o "$work/a.out" "$work/job.sh")
[ -n "$j1" ] || { bad "sbatch as $USER_NAME"; finish; }
# a crashed step's plan file (root's, as the plugin writes it): the job
# epilog sweeps it; the first step takes the root-made directory as is
mkdir -p "$dir/tprun/node003/job$j1" && : >"$dir/tprun/node003/job$j1/plan-step99.json"
chmod 711 "$dir/tprun/node003/job$j1"
wait_done "$j1" && ok "job $j1 ($USER_NAME, 8 nodes x 2 tasks) finished" || bad "job $j1 finished in 60 s"
state=$(timeout 10 scontrol show job "$j1" | tr ' ' '\n' | sed -n 's/^JobState=//p')
[ "$state" = COMPLETED ] && ok "job $j1 COMPLETED" || bad "job $j1 state $state"
sed -n 1p "$work/a.out" | sed 's/^/# /'
grep -q '^batch .*plan=unset hca=unset' "$work/a.out" && ok "batch script: no TOPOPLACE_PLAN/NCCL_IB_HCA" ||
	bad "batch script saw the variables: $(sed -n 1p "$work/a.out")"

# env lines, "N: env " cut: host procid rank local world noderank hca crossnic plan
grep ': env ' "$work/a.out" | sed 's/^ *[0-9]*: env //' | sort -k2,2n >"$tmp/env"
n=$(wc -l <"$tmp/env")
[ "$n" -eq 16 ] && ok "16 tasks reported" || bad "tasks reported: $n"
missing=$(awk '$3 == "x" || $4 == "x" || $5 == "x" || $6 == "x" || $7 == "x" || $9 == "x"' "$tmp/env" | wc -l)
[ "$missing" -eq 0 ] && ok "every task sees TOPOPLACE_PLAN/RANK/LOCAL_RANK/WORLD_SIZE/NODE_RANK and NCCL_IB_HCA" ||
	bad "$missing task(s) miss a variable"
awk '$5 != 16' "$tmp/env" | grep -q . && bad "TOPOPLACE_WORLD_SIZE != 16" || ok "TOPOPLACE_WORLD_SIZE = 16 everywhere"
awk '$7 != "=mlx5_0"' "$tmp/env" | grep -q . && bad "NCCL_IB_HCA: $(cut -d' ' -f7 "$tmp/env" | sort -u | tr '\n' ' ')" ||
	ok "NCCL_IB_HCA = =mlx5_0 (the hosts' HCA, exact match)"
awk '$8 != "x"' "$tmp/env" | grep -q . && bad "NCCL_CROSS_NIC set with one HCA per host" ||
	ok "NCCL_CROSS_NIC left unset (one HCA per host)"
awk '$2 != $3' "$tmp/env" | grep -q . && bad "TOPOPLACE_RANK != SLURM_PROCID: $(awk '$2 != $3' "$tmp/env" | head -3 | tr '\n' ';')" ||
	ok "TOPOPLACE_RANK = SLURM_PROCID for all 16 tasks"
ranks=$(awk '$4 == 0 { printf "%s=%s ", $2, $1 }' "$tmp/env")
echo "# SLURM_PROCID of each node's first task: $ranks"
[ "$ranks" = "0=node001 2=node003 4=node005 6=node007 8=node002 10=node004 12=node006 14=node008 " ] &&
	ok "SLURM_PROCID follows the fabric (leaf01's hosts, then leaf02's)" || bad "SLURM_PROCID order: $ranks"
bad_nr=$(awk '{ if ($6 != int($2 / 2)) print }' "$tmp/env" | wc -l)
[ "$bad_nr" -eq 0 ] && ok "TOPOPLACE_NODE_RANK = ring position" || bad "TOPOPLACE_NODE_RANK wrong on $bad_nr task(s)"

# ownership and modes, seen from the tasks
grep ': stat ' "$work/a.out" | sed 's/^ *[0-9]*: stat //' | sort >"$tmp/stat"
sn=$(wc -l <"$tmp/stat")
badst=$(awk -v u="$USER_NAME" '!($2 == u && $3 == 600 && $4 == "root" && $5 == 711)' "$tmp/stat" | wc -l)
[ "$sn" -eq 8 ] && [ "$badst" -eq 0 ] && ok "plan file $USER_NAME 0600, directory root 0711 on all 8 nodes" ||
	bad "plan ownership/modes: $(tr '\n' ';' <"$tmp/stat")"
echo "# TOPOPLACE_PLAN on node001: $(awk '$1 == "node001" {print $9; exit}' "$tmp/env")"

# the ring against topoplace plan for the job's nodes
nodes=$(timeout 10 scontrol show job "$j1" | tr ' ' '\n' | sed -n 's/^NodeList=//p')
"$TOPOPLACE" plan --fabric "$dir/fabric.json" --nodes "$nodes" --json >"$tmp/plan.json" 2>"$tmp/err"
want=$(jq -c .ring "$tmp/plan.json")
echo "# topoplace plan --nodes $nodes: ring $want"
same=0
for f in "$work"/plan-node*.json; do
	[ -f "$f" ] || continue
	got=$(jq -c .ring "$f")
	[ "$got" = "$want" ] && same=$((same + 1)) || echo "# $f: ring $got"
done
[ "$same" -eq 8 ] && ok "all 8 plan files: ring = topoplace plan's ($want)" || bad "plan rings: $same of 8 match"
jq -e '.world_size == 16 and .format == "topoplace-plan/1"' "$work/plan-node001.json" >/dev/null 2>&1 &&
	ok "plan: topoplace-plan/1, world_size 16 (2 ranks per host)" || bad "plan world_size/format"

# a user-set NCCL_IB_HCA survives
un=$(grep -c ': user node[0-9]* =mlx5_7 /' "$work/a.out")
[ "$un" -eq 16 ] && ok "user's NCCL_IB_HCA==mlx5_7 survives in all 16 tasks (TOPOPLACE_PLAN still set)" ||
	bad "user's NCCL_IB_HCA: $(grep ': user ' "$work/a.out" | head -2 | tr '\n' ';')"
grep -q "spank/topoplace: job $j1 step 1: kept the job's own NCCL_IB_HCA" "$(nodelog node001)" &&
	ok "slurmd: kept the job's own NCCL_IB_HCA" || bad "slurmd: no 'kept' line"
off=$(grep -c ': off node[0-9]* x x$' "$work/a.out")
[ "$off" -eq 16 ] && ok "--topoplace=off: nothing set in 16 tasks" || bad "--topoplace=off: $off of 16 clean"
vb=$(grep -c '^topoplace: node[0-9]* node [0-9]*/2 ' "$work/a.out")
[ "$vb" -eq 2 ] && ok "--topoplace=verbose: one line per node ($(grep -m1 '^topoplace: ' "$work/a.out"))" ||
	bad "--topoplace=verbose lines: $vb"
grep -q '^bogus refused' "$work/a.out" && ok "--topoplace=bogus refused by srun ($(head -1 "$work/bogus.err"))" ||
	bad "--topoplace=bogus: $(grep bogus "$work/a.out")"
# a step started from inside a task: its own plan, ranks and world, not
# the outer step's (inherited through srun's environment, they passed for
# the user's own); --topoplace=off there leaves none of the outer's
outer=$(sed -n 's/^outer \([0-9.]*\) 1$/\1/p' "$work/a.out")
# (Slurm lays this step's tasks out cyclically: TOPOPLACE_RANK, in plan
# order, is then not SLURM_PROCID, but each of 0-7 once)
sed -n 's/^nested //p' "$work/a.out" | sort -k2,2n >"$tmp/nested"
inner=$(awk '{print $4}' "$tmp/nested" | sort -u)
if [ -n "$outer" ] && [ "$(wc -l <"$tmp/nested")" -eq 8 ] &&
	[ "$(awk '$2 == NR - 1 && $3 == 8 && $6 == "=mlx5_0"' "$tmp/nested" | wc -l)" -eq 8 ] &&
	[ "$(echo "$inner" | wc -l)" -eq 1 ] && [ "$inner" != "$outer" ] &&
	[ "${inner%.*}" = "$j1" ] &&
	[ "$(awk -v s="/plan-step${inner#*.}.json" 'substr($5, length($5) - length(s) + 1) == s' "$tmp/nested" | wc -l)" -eq 8 ]; then
	ok "step $inner started from inside step $outer's task: ranks 0-7, world 8, its own plan (not the outer's world 1)"
else
	bad "nested step (outer '$outer'): $(tr '\n' ';' <"$tmp/nested" | cut -c 1-400)"
fi
no=$(grep -c '^nestoff x x x$' "$work/a.out")
[ "$no" -eq 2 ] && ok "--topoplace=off inside a task's srun: none of the outer step's variables" ||
	bad "--topoplace=off nested: $(grep '^nestoff' "$work/a.out" | tr '\n' ';')"
nu=$(grep -c '^nestuser =mlx5_9 2$' "$work/a.out")
[ "$nu" -eq 2 ] && ok "NCCL_IB_HCA set again inside a task: the inner step keeps the user's (=mlx5_9), world 2" ||
	bad "user's NCCL_IB_HCA inside a task: $(grep '^nestuser' "$work/a.out" | tr '\n' ';')"
dropped=$(cat "$dir"/log/slurmd-node*.log | grep -c "spank/topoplace: job $j1 step [0-9]*: dropped what step $outer set (TOPOPLACE_PLAN,")
[ "$dropped" -ge 4 ] && ok "slurmd: $dropped lines say the inner steps dropped step $outer's variables" ||
	bad "slurmd: $dropped 'dropped' lines"

sleep 1
left=$(jobdirs "$j1")
grep -q ': mine denied node005$' "$work/a.out" && ok "the user cannot add a file to the job directory" ||
	bad "the user wrote into the job directory"
[ "$left" -eq 0 ] &&
	ok "job $j1: job directories gone (node003's stale plan-step99.json swept by the epilog)" ||
	bad "job $j1: $left job directories left ($(ls -d "$dir"/tprun/*/job"$j1" 2>/dev/null | tr '\n' ' ')): $(ls -A "$dir"/tprun/*/job"$j1" 2>/dev/null | tr '\n' ' ')"

# ---- a planted symlink where the next job's directory goes ----
j2=$((j1 + 1))
mkdir -p "$tmp/target"
ln -s "$tmp/target" "$dir/tprun/node001/job$j2"
j=$(as_user timeout 10 sbatch --parsable -J b -N 8 -o "$work/b.out" \
	--wrap 'srun sh -c "echo \$(hostname) \${TOPOPLACE_PLAN:-x}"')
wait_done "$j" || bad "job $j finished in 60 s"
if [ "$j" = "$j2" ]; then
	grep -q "node001 x$" "$work/b.out" && ok "symlinked job directory: node001 left untouched, job ran" ||
		bad "symlinked job directory: node001 $(grep node001 "$work/b.out")"
	grep -q "spank/topoplace: job $j2 step 0: .*job$j2: not a directory: refused" "$(nodelog node001)" &&
		ok "slurmd node001: $(grep -o "spank/topoplace: job $j2 step 0: .*" "$(nodelog node001)" | head -1)" ||
		bad "symlink refusal not logged"
	[ -z "$(ls -A "$tmp/target")" ] && [ -L "$dir/tprun/node001/job$j2" ] &&
		ok "symlink target untouched" || bad "symlink target written or link removed"
	others=$(grep -c "node00[2-8] $dir/tprun/node00[2-8]/job$j2/plan-step0.json" "$work/b.out")
	[ "$others" -eq 7 ] && ok "the other 7 nodes got their plan" || bad "other nodes: $others of 7"
else
	echo "# job id $j, not $j2 (another job in between): symlink check skipped"
fi
rm -f "$dir/tprun/node001/job$j2"

# ---- a heterogeneous step: SLURM_STEP_NODELIST names both components'
# nodes, Slurm's items one component's: no plan, said at info level, not
# as an error on every node ----
cat >"$work/het.sh" <<'EOF'
#!/bin/sh
#SBATCH -N 1
#SBATCH hetjob
#SBATCH -N 1
srun --het-group=0,1 sh -c 'echo "het $(hostname) ${TOPOPLACE_PLAN:-x}"'
EOF
j=$(as_user timeout 10 sbatch --parsable -J het -o "$work/het.out" "$work/het.sh")
j=${j%%+*}
if [ -n "$j" ] && wait_done "$j"; then
	hosts=$(sed -n 's/^het \(node[0-9]*\) x$/\1/p' "$work/het.out" | sort -u | wc -l)
	[ "$hosts" -eq 2 ] && ok "het step: both components' tasks ran, without a plan" ||
		bad "het step output: $(head -c 300 "$work/het.out")"
	said=$(cat "$dir"/log/slurmd-node*.log | grep -c "spank/topoplace: job [0-9]* step 0: a heterogeneous step (2 nodes, this component's 1): no plan for it")
	errs=$(cat "$dir"/log/slurmd-node*.log | grep "error: spank/topoplace: job [0-9]* step 0: " | grep -c "job $j step\|job $((j + 1)) step")
	[ "$said" -eq 2 ] && [ "$errs" -eq 0 ] && ok "het step: one info line on each of its 2 nodes, no error" ||
		bad "het step: $said info lines, $errs error lines"
else
	bad "het job ${j:-none} did not finish: $(head -c 200 "$work/het.out" 2>/dev/null)"
fi

# ---- no fabric: the job runs, untouched; each slurmd logs one line ----
mv "$dir/fabric.json" "$tmp/fabric.json"
j=$(as_user timeout 10 sbatch --parsable -J c -N 8 -o "$work/c.out" \
	--wrap 'srun sh -c "echo \$(hostname) \${TOPOPLACE_PLAN:-x} \${NCCL_IB_HCA:-x}"')
wait_done "$j" || bad "job $j finished in 60 s"
state=$(timeout 10 scontrol show job "$j" | tr ' ' '\n' | sed -n 's/^JobState=//p')
clean=$(grep -c '^node[0-9]* x x$' "$work/c.out")
[ "$state" = COMPLETED ] && [ "$clean" -eq 8 ] && ok "fabric removed: job $j COMPLETED, 8 tasks without variables" ||
	bad "fabric removed: state $state, $clean of 8 clean"
lines=0
for i in 1 2 3 4 5 6 7 8; do
	c=$(grep -c "spank/topoplace: job $j " "$(nodelog "$(printf node%03d $i)")")
	[ "$c" -eq 1 ] && lines=$((lines + 1))
done
[ "$lines" -eq 8 ] && ok "fabric removed: exactly one line in each slurmd log" ||
	bad "fabric removed: $lines of 8 slurmd logs with exactly one line"
echo "# $(grep -h "spank/topoplace: job $j " "$(nodelog node001)" | head -1)"

# ---- a rail-optimized fabric (read at each step; slurmctld keeps its
# interleaved table): 4 HCAs in rail order, NCCL_CROSS_NIC=0, and
# TOPOPLACE_RANK in the plan's order even where SLURM_PROCID is not; an
# NCCL topology file for node001, an hwloc XML (not converted) for node002
"$TOPOPLACE" fabric generate rail --sus 2 --hosts-per-su 4 --rails 4 --spines-per-rail 1 \
	--gpus-per-host 4 --prefix node -o "$dir/fabric.json" >/dev/null
mkdir -p "$dir/nccltopo"
printf '<system version="1">\n</system>\n' >"$dir/nccltopo/node001.xml"
printf '<?xml version="1.0"?>\n<topology version="2.0">\n</topology>\n' >"$dir/nccltopo/node002.xml"
# node008 has none of its fabric HCAs; node007 only two of them
fake_sysfs
rm -rf "$dir/sysfs/node008/class/infiniband" "$dir/sysfs/node007/class/infiniband/mlx5_1" \
	"$dir/sysfs/node007/class/infiniband/mlx5_3"
printf '<system version="1">\n<net name="mlx5_3"/>\n</system>\n' >"$dir/nccltopo/node007.xml"
printf '<system version="1">\n</system>\n' >"$dir/nccltopo/node008.xml"
j=$(as_user timeout 10 sbatch --parsable -J d -N 8 -o "$work/d.out" \
	--wrap 'srun sh -c "echo rail \$(hostname) \$SLURM_PROCID \$TOPOPLACE_RANK \${NCCL_IB_HCA:-x} \${NCCL_CROSS_NIC:-x} \${NCCL_TOPO_FILE:-x}"')
wait_done "$j" || bad "job $j finished in 60 s"
grep '^rail ' "$work/d.out" | sort -k2 >"$tmp/rail"
n=$(awk '$5 == "=mlx5_0,mlx5_1,mlx5_2,mlx5_3" && $6 == 0' "$tmp/rail" | wc -l)
[ "$n" -eq 6 ] && ok "rail fabric: NCCL_IB_HCA==mlx5_0,mlx5_1,mlx5_2,mlx5_3 and NCCL_CROSS_NIC=0 on the 6 full nodes" ||
	bad "rail fabric: $(tr '\n' ';' <"$tmp/rail")"
l7=$(awk '$2 == "node007" { print $5, $7 }' "$tmp/rail")
l8=$(awk '$2 == "node008" { print $5, $7 }' "$tmp/rail")
[ "$l7" = "=mlx5_0,mlx5_2 x" ] && [ "$l8" = "x x" ] &&
	ok "only devices the node has: node007 =mlx5_0,mlx5_2 (its topology file names mlx5_3: unset), node008 nothing" ||
	bad "local HCAs: node007 '$l7', node008 '$l8'"
c=$(grep -c "spank/topoplace: job $j step 0: none of node008's HCAs" "$(nodelog node008)")
[ "$c" -eq 1 ] && ok "node008: one line says no HCA of the fabric is there" ||
	bad "node008: $c lines about its HCAs"

# ---- a step given GPUs other than 0..k-1: another job holds node001's GPUs 0 and 1, so the
# step's two tasks there run on GPUs 2 and 3 (SLURM_STEP_GPUS) and each leaves by its own
# GPU's HCA (TOPOPLACE_COLL_HCA=mlx5_2, mlx5_3; the plan gave local ranks 0 and 1 mlx5_0 and
# mlx5_1); on node002 the step has GPUs 0 and 1, the plan's: nothing set there ----
hold=$(as_user timeout 10 sbatch --parsable -J hold -w node001 -N 1 -n 1 --gres=gpu:2 \
	-o /dev/null --wrap 'sleep 300')
i=0
until [ "$(timeout 10 squeue -h -j "$hold" -o %T 2>/dev/null)" = RUNNING ] || [ $i -ge 100 ]; do
	sleep 0.3
	i=$((i + 1))
done
as_user timeout 60 srun -J gpus -w node001,node002 -N 2 --ntasks-per-node 2 --gres=gpu:2 sh -c \
	'echo "g $(hostname) $SLURM_LOCALID ${SLURM_STEP_GPUS:-x} ${TOPOPLACE_COLL_HCA:-x}"' \
	>"$tmp/gpus.out" 2>"$tmp/gpus.err" || bad "srun gpus: $(head -c 200 "$tmp/gpus.err")"
timeout 10 scancel "$hold"
got=$(grep '^g ' "$tmp/gpus.out" | sort | cut -d' ' -f2- | paste -sd ';')
[ "$got" = "node001 0 2,3 mlx5_2;node001 1 2,3 mlx5_3;node002 0 0,1 x;node002 1 0,1 x" ] &&
	ok "GPUs 2 and 3 of node001: its tasks leave by mlx5_2 and mlx5_3, node002's (GPUs 0, 1) by the plan's" ||
	bad "a step on GPUs other than 0..k-1: '$got'"
c=$(grep -c "spank/topoplace: job $j step 0: 2 of node007's HCAs in the fabric (by node GUID) not under .*: left out of NCCL_IB_HCA" "$(nodelog node007)")
[ "$c" -eq 1 ] && ok "node007: one line names the 2 HCAs left out" ||
	bad "node007: $c lines about its missing HCAs"
rm -f "$dir/nccltopo/node007.xml" "$dir/nccltopo/node008.xml"
rk=$(awk '{ printf "%s=%s ", $2, $4 }' "$tmp/rail")
pr=$(awk '{ printf "%s=%s ", $2, $3 }' "$tmp/rail")
echo "# rail fabric: TOPOPLACE_RANK $rk"
echo "# rail fabric: SLURM_PROCID   $pr (slurmctld's interleaved table)"
[ "$rk" = "node001=0 node002=1 node003=2 node004=3 node005=4 node006=5 node007=6 node008=7 " ] &&
	ok "rail fabric: TOPOPLACE_RANK follows the plan's ring (SU 1, then SU 2)" || bad "rail fabric ranks: $rk"
t1=$(awk '$2 == "node001" { print $7 }' "$tmp/rail")
t2=$(awk '$2 == "node002" { print $7 }' "$tmp/rail")
[ "$t1" = "$dir/nccltopo/node001.xml" ] && [ "$t2" = x ] &&
	ok "NCCL_TOPO_FILE: node001's NCCL topology set, node002's hwloc XML not" ||
	bad "NCCL_TOPO_FILE: node001 '$t1', node002 '$t2'"

# ---- a fabric without the job's hosts: runs, untouched, one line ----
"$TOPOPLACE" fabric generate fat-tree --nics-per-host 1 --uplinks 2 --leaves 2 --spines 1 --hosts-per-leaf 4 \
	--prefix gpu -o "$dir/fabric.json" >/dev/null
j=$(as_user timeout 10 sbatch --parsable -J e -N 8 -o "$work/e.out" \
	--wrap 'srun sh -c "echo \$(hostname) \${TOPOPLACE_PLAN:-x} \${NCCL_IB_HCA:-x}"')
wait_done "$j" || bad "job $j finished in 60 s"
clean=$(grep -c '^node[0-9]* x x$' "$work/e.out")
c=$(grep -c "spank/topoplace: job $j " "$(nodelog node004)")
e=$(grep "spank/topoplace: job $j " "$(nodelog node004)" | grep -c "error:")
[ "$clean" -eq 8 ] && [ "$c" -eq 1 ] && [ "$e" -eq 0 ] &&
	ok "hosts not in the fabric: 8 tasks untouched, one line on node004, not an error" ||
	bad "hosts not in the fabric: $clean of 8 clean, $c lines, $e at error level"
echo "# $(grep -h "spank/topoplace: job $j " "$(nodelog node004)" | head -1)"
mv "$tmp/fabric.json" "$dir/fabric.json"

# ---- a basedir near PATH_MAX: the plan path that would not fit is refused ----
# The plan goes to BASEDIR/job<ID>/plan-step<S>.json in a 4096-byte buffer;
# a basedir of 4083-4090 bytes (each "/%h" in plugstack.conf, whose lines
# stop at 4095 bytes, grows to "/node001") leaves it no room: refused in
# one line, nothing exported, no file left. The control, ~30 bytes
# shorter, fits: the step gets its plan.
deep_step() { # K NAME: a 1-node step with basedir $tmp/d + K x "/%h"
	b=$tmp/d
	for _ in $(seq "$1"); do b="$b/%h"; done
	mkdir -p "$(echo "$b" | sed 's|%h|node001|g')"
	cp "$dir/plugstack.conf" "$tmp/plugstack.saved"
	sed "s|basedir=[^ ]*|basedir=$b|" "$tmp/plugstack.saved" >"$dir/plugstack.conf"
	as_user timeout 60 srun -J "$2" -w node001 -N 1 sh -c 'echo "$SLURM_JOB_ID ${TOPOPLACE_PLAN:-x}"' >"$tmp/$2.out" 2>&1 ||
		bad "srun with basedir $2"
	cp "$tmp/plugstack.saved" "$dir/plugstack.conf"
	read -r j plan <"$tmp/$2.out" || j=none
}
base=$((${#tmp} + 2))
deep_step $(((4090 - base) / 8)) deep
l=$(grep "spank/topoplace: job $j step 0: " "$(nodelog node001)" | tail -n 1)
case $l in *"plan path too long ("*") under $tmp/d/node001/"*"...: environment unchanged") true ;; *) false ;; esac &&
	[ "$plan" = x ] && [ -z "$(find "$tmp/d" -name 'plan-step*')" ] &&
	ok "basedir of $((base + (4090 - base) / 8 * 8)) bytes: plan path refused in one line, nothing set, no file" ||
	bad "basedir near PATH_MAX: TOPOPLACE_PLAN ${#plan} bytes, $(echo "$l" | cut -c 1-200)"
deep_step $(((4060 - base) / 8)) deep2
[ ${#plan} -gt 4070 ] && [ "${plan%/plan-step0.json}" != "$plan" ] &&
	ok "basedir of $((base + (4060 - base) / 8 * 8)) bytes: the plan path fits (${#plan} bytes), set" ||
	bad "the control: TOPOPLACE_PLAN '$(echo "$plan" | cut -c 1-100)' ($(tail -n 1 "$tmp/deep2.out" | cut -c 1-200))"

# ---- a basedir the job's user cannot search (0700: made under slurmd's
# umask 077 by an older plugin, or by a concurrent step before its
# chmod): made searchable, and the task reads its plan ----
mkdir -p "$tmp/b700/node001"
chmod 0700 "$tmp/b700/node001"
cp "$dir/plugstack.conf" "$tmp/plugstack.saved"
sed "s|basedir=[^ ]*|basedir=$tmp/b700/%h|" "$tmp/plugstack.saved" >"$dir/plugstack.conf"
as_user timeout 60 srun -J b700 -w node001 -N 1 sh -c 'echo "$SLURM_JOB_ID $(grep -c topoplace-plan/1 "$TOPOPLACE_PLAN" 2>&1)"' \
	>"$tmp/b700.out" 2>"$tmp/b700.err" || bad "srun with a 0700 basedir: $(head -c 200 "$tmp/b700.err")"
cp "$tmp/plugstack.saved" "$dir/plugstack.conf"
read -r j head <"$tmp/b700.out" || j=none
mode=$(stat -c %a "$tmp/b700/node001")
[ "$mode" = 711 ] && [ "$head" = 1 ] &&
	ok "a 0700 basedir: made 0711, the job's user reads its plan" ||
	bad "a 0700 basedir: mode $mode, the task read '$head' ($(head -c 200 "$tmp/b700.err"))"

# ---- conf= whose FabricFile is relative: it lies beside the conf, as
# slurmctld and `topoplace config --check` read it (slurmstepd's working
# directory is not the conf's); a name found nowhere else ----
mkdir -p "$dir/rel"
cp "$dir/fabric.json" "$dir/rel/rel-fabric.json"
echo "FabricFile=rel-fabric.json" >"$dir/rel/topoplace.conf"
cp "$dir/plugstack.conf" "$tmp/plugstack.saved"
sed "s|fabric=[^ ]*|conf=$dir/rel/topoplace.conf|" "$tmp/plugstack.saved" >"$dir/plugstack.conf"
# (srun's own lines, "job N queued and waiting for resources" while the
# last job's node ends, go to the .err file: the .out holds the task's)
as_user timeout 60 srun -J relconf -w node001 -N 1 sh -c 'echo "$SLURM_JOB_ID ${TOPOPLACE_PLAN:-x}"' \
	>"$tmp/relconf.out" 2>"$tmp/relconf.err" ||
	bad "srun with conf= and a relative FabricFile: $(head -c 200 "$tmp/relconf.err")"
cp "$tmp/plugstack.saved" "$dir/plugstack.conf"
read -r j plan <"$tmp/relconf.out" || j=none
[ "${plan%/plan-step0.json}" != "$plan" ] &&
	ok "conf= with FabricFile=rel-fabric.json: read beside the conf, plan set" ||
	bad "conf= with a relative FabricFile: TOPOPLACE_PLAN '$plan', $(grep "spank/topoplace: job $j " "$(nodelog node001)" | tail -n 1 | cut -c 1-200)"

# ---- NicsByRate: a rail fabric (4 NICs a host) where node002's mlx5_1
# is cabled at half width; with NicsByRate=yes the step's plan weighs
# local rank 1 half the others (libtopoplace-coll splits each host's data
# so), without it the plan has no weights ----
"$TOPOPLACE" fabric generate rail --sus 2 --hosts-per-su 4 --rails 4 --spines-per-rail 1 \
	--gpus-per-host 4 --prefix node -o "$dir/rel/rail.json" >/dev/null
/usr/bin/python3 - "$dir/rel/rail.json" "$dir/rel/half.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ca = [i for i, c in enumerate(d["cas"]) if c["desc"] == "node002 mlx5_1"]
for l in d["links"]:
    for e in (0, 3):
        if ca and l[e] == "ca" and l[e + 1] == ca[0]:
            l[6] //= 2
json.dump(d, open(sys.argv[2], "w"))
PY
# NAME CONF-LINES [REGEX]: node001+node002, 4 tasks each; what of the
# plan matches REGEX (default: its weights), each match once, joined by
# "|", or "none"
# (HOSTS: the two hosts, node001,node002 unless set)
weights_step() {
	printf 'FabricFile=half.json\n%s\n' "$2" >"$dir/rel/topoplace.conf"
	sed "s|fabric=[^ ]*|conf=$dir/rel/topoplace.conf|" "$tmp/plugstack.saved" >"$dir/plugstack.conf"
	as_user timeout 60 srun -J "$1" -w "${HOSTS:-node001,node002}" -N 2 --ntasks-per-node 4 sh -c \
		'if [ "$SLURM_PROCID" = 0 ]; then m=$(grep -o "$0" "$TOPOPLACE_PLAN" | sort -u | paste -sd "|"); echo "w ${m:-none}"; fi' \
		"${3:-\"rank_weights\": \[[^]]*\]}" \
		>"$tmp/$1.out" 2>"$tmp/$1.err" || bad "srun $1: $(head -c 200 "$tmp/$1.err")"
	cp "$tmp/plugstack.saved" "$dir/plugstack.conf"
	sed -n 's/^w //p' "$tmp/$1.out"
}
cp "$dir/plugstack.conf" "$tmp/plugstack.saved"
w=$(weights_step byrate "NicsByRate=yes")
[ "$w" = '"rank_weights": [1024, 512, 1024, 1024]' ] &&
	ok "NicsByRate=yes: the step's plan weighs node002's half-width NIC's rank half ($w)" ||
	bad "NicsByRate=yes: plan weights '$w'"
w=$(weights_step even "")
[ "$w" = none ] && ok "NicsByRate unset: the step's plan splits evenly (no rank_weights)" ||
	bad "NicsByRate unset: plan weights '$w'"

# ---- PlanPriceMaxHosts: by default the step's plan is priced by the cost
# model, which recommends each size's all-reduce (every size); a step of
# more hosts gets the rule ----
w=$(weights_step priced "NicsByRate=yes" '"basis": "[a-z]*"')
[ "$w" = '"basis": "model"' ] &&
	ok "PlanPriceMaxHosts unset: the step's plan recommends by the model ($w)" ||
	bad "PlanPriceMaxHosts unset: plan's recommendations '$w'"
w=$(weights_step priced2 "PlanPriceMaxHosts=2" '"basis": "[a-z]*"')
[ "$w" = '"basis": "model"' ] && ok "PlanPriceMaxHosts=2: a 2-host step's plan is priced" ||
	bad "PlanPriceMaxHosts=2: plan's recommendations '$w'"
w=$(weights_step ruled "PlanPriceMaxHosts=1" '"basis": "[a-z]*"')
[ "$w" = '"basis": "rule"' ] && ok "PlanPriceMaxHosts=1: a 2-host step's plan recommends by rule ($w)" ||
	bad "PlanPriceMaxHosts=1: plan's recommendations '$w'"
# the job's TOPOPLACE_COLL_SHM=0 (host phases as rings) is how the plan is
# priced: it says so; without it, the host segment (nothing said)
w=$(export TOPOPLACE_COLL_SHM=0; weights_step rings "" '"host_segment": [a-z]*')
[ "$w" = '"host_segment": false' ] && ok "TOPOPLACE_COLL_SHM=0: the step's plan priced rings ($w)" ||
	bad "TOPOPLACE_COLL_SHM=0: plan's host_segment '$w'"
w=$(weights_step segment "" '"host_segment": [a-z]*')
[ "$w" = none ] && ok "TOPOPLACE_COLL_SHM unset: the step's plan priced the host segment" ||
	bad "TOPOPLACE_COLL_SHM unset: plan's host_segment '$w'"
# the hierarchical pipeline priced with the job's TOPOPLACE_COLL_SEGMENT: a step over two
# scalable units (node001, node005) runs 256 MiB and 1 GiB pipelined by default, nothing with
# TOPOPLACE_COLL_SEGMENT=0 (topoplace plan gives the same on this fabric)
w=$(export HOSTS=node001,node005; weights_step pipe "" '"hier_pipelined": \[[^]]*\]')
[ "$w" = '"hier_pipelined": [false, false, false, true, true]' ] &&
	ok "TOPOPLACE_COLL_SEGMENT unset: the step's plan pipelines 256 MiB and 1 GiB" ||
	bad "TOPOPLACE_COLL_SEGMENT unset: plan's '$w'"
w=$(export HOSTS=node001,node005 TOPOPLACE_COLL_SEGMENT=0; weights_step whole "" '"hier_pipelined": \[[^]]*\]')
[ "$w" = '"hier_pipelined": [false, false, false, false, false]' ] &&
	ok "TOPOPLACE_COLL_SEGMENT=0: the step's plan runs every size in one piece" ||
	bad "TOPOPLACE_COLL_SEGMENT=0: plan's '$w'"

# ---- LinkState: the step's plan is priced on the links topoplace.conf's LinkState gives
# (every switch-to-switch cable at a tenth of its lanes): over two scalable units its
# hierarchical predictions are topoplace plan --state's, slower than on healthy links; a
# LinkState that is not there prices healthy links, and says so in slurmd's log ----
jq '{format: "topoplace-state/1", links: [.links | to_entries[] |
	select(.value[0] == "switch" and .value[3] == "switch") | {link: .key, health: 0.1}]}' \
	"$dir/rel/half.json" >"$dir/rel/links.json"
hier='"hierarchical": \[[^]]*\]'
cli_hier() {
	"$TOPOPLACE" plan --fabric "$dir/rel/half.json" --nodes node001,node005 --json "$@" |
		grep -o "$hier"
}
healthy=$(cli_hier)
degraded=$(cli_hier --state "$dir/rel/links.json")
w=$(export HOSTS=node001,node005; weights_step links "LinkState=links.json" "$hier")
[ -n "$degraded" ] && [ "$w" = "$degraded" ] && [ "$w" != "$healthy" ] &&
	ok "LinkState: the step's plan priced on its degraded up-links (= plan --state)" ||
	bad "LinkState: the step's plan predicts '$w', plan --state '$degraded', healthy '$healthy'"
w=$(export HOSTS=node001,node005; weights_step nolinks "LinkState=no-links.json" "$hier")
[ -n "$healthy" ] && [ "$w" = "$healthy" ] &&
	grep -q "spank/topoplace: job [0-9]* step [0-9]*: LinkState .*no-links.json.*: plan priced on healthy links" \
		"$(nodelog node001)" &&
	ok "LinkState missing: the step's plan priced on healthy links (= plan), logged" ||
	bad "LinkState missing: '$w' (plan: '$healthy'), log: $(grep 'LinkState' "$(nodelog node001)" | tail -n 1 | cut -c 1-200)"

# ---- PlanMaxRanks: a step of more tasks gets no plan (one info line on
# each node), one of exactly that many gets its plan ----
w=$(weights_step capped8 "$(printf 'NicsByRate=yes\nPlanMaxRanks=8')")
[ "$w" = '"rank_weights": [1024, 512, 1024, 1024]' ] &&
	ok "PlanMaxRanks=8: an 8-task step gets its plan" || bad "PlanMaxRanks=8: plan weights '$w'"
printf 'FabricFile=half.json\nPlanMaxRanks=7\n' >"$dir/rel/topoplace.conf"
sed "s|fabric=[^ ]*|conf=$dir/rel/topoplace.conf|" "$tmp/plugstack.saved" >"$dir/plugstack.conf"
as_user timeout 60 srun -J capped7 -w node001,node002 -N 2 --ntasks-per-node 4 sh -c \
	'echo "$SLURM_JOB_ID ${TOPOPLACE_PLAN:-x} ${TOPOPLACE_RANK:-x}"' \
	>"$tmp/capped7.out" 2>"$tmp/capped7.err" || bad "srun capped7: $(head -c 200 "$tmp/capped7.err")"
cp "$tmp/plugstack.saved" "$dir/plugstack.conf"
read -r j _ <"$tmp/capped7.out" || j=none
unset_n=$(grep -c ' x x$' "$tmp/capped7.out")
l=$(grep "spank/topoplace: job $j step 0: " "$(nodelog node002)" | tail -n 1)
case $l in *error:*) false ;; *"8 tasks, more than PlanMaxRanks (7): no plan for it: environment unchanged") true ;; *) false ;; esac &&
	[ "$unset_n" -eq 8 ] && ok "PlanMaxRanks=7: an 8-task step runs without a plan, one info line" ||
	bad "PlanMaxRanks=7: $unset_n of 8 tasks without a plan, $(echo "$l" | cut -c 1-200)"

# ---- a node list with a line break, from a modified client ----
# (tests/integration/tp_srun_shim.c preloaded into srun sends it as is):
# the hostlist reads the break as a separator, the second name is not in
# the fabric, and the refusal must stay one line of slurmd's log, the
# client's text quoted, never a line of the client's making
shim=$builddir/tests/integration/.libs/tp_srun_shim.so
if [ -f "$shim" ]; then
	nl='node001
TPFORGED'
	as_user env TP_SHIM_STEP_NODELIST="$nl" LD_PRELOAD="$shim" timeout 60 \
		srun -J forged -w node001,node002 -N 2 sh -c 'echo "$SLURM_JOB_ID ${TOPOPLACE_PLAN:-x}"' \
		>"$tmp/forged.out" 2>"$tmp/forged.err" ||
		bad "srun with a forged node list: $(head -c 200 "$tmp/forged.err")"
	read -r j plan <"$tmp/forged.out" || j=none
	l=$(grep "spank/topoplace: job $j step 0: " "$(nodelog node001)" | tail -n 1)
	forged=$(grep -c '^TPFORGED' "$(nodelog node001)")
	case $l in *'node001\x0aTPFORGED'*": environment unchanged") true ;; *) false ;; esac &&
		[ "$forged" -eq 0 ] && [ "$plan" = x ] &&
		ok "node list with a line break: refused in one line, quoted ($(echo "$l" | grep -o 'plan for.*' | cut -c 1-120))" ||
		bad "node list with a line break: $forged forged line(s), plan '$plan', line: $(echo "$l" | cut -c 1-200)"
else
	bad "$shim not built (make -C tests check builds it)"
fi

sleep 1
left=$(ls -d "$dir"/tprun/*/job* 2>/dev/null | wc -l)
[ "$left" -eq 0 ] && ok "no job directory left anywhere" || bad "$left job directories left"
timeout 10 scontrol ping 2>&1 | grep -q 'is UP' && ok "slurmctld still up" || bad "slurmctld still up"
echo "# total $(($(date +%s) - t0)) s before teardown"
finish
