# Shared helpers for the integration tests (sourced). Each test exits 0 on
# success, 1 on failure, 77 when something optional it needs is absent
# (root, hardware, a package, a feature configure left out), 99 when
# something the build always makes is missing.
set -u
: "${TOPOPLACE:?TOPOPLACE must point at the built topoplace}"
TP_FIXTURES=${TP_FIXTURES:-}
failures=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tp-it.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

ok() { echo "ok - $*"; }
bad() { echo "FAIL - $*"; failures=$((failures + 1)); }
skip_all() { echo "SKIP: $*"; exit 77; }
# error_all MSG: end the test as a hard error (99, automake's ERROR): an
# output the build always makes is missing, which no skip may hide
error_all() { echo "ERROR: $*"; exit 99; }
# expect CODE DESC CMD...: run CMD, check its exit status
expect() {
	want=$1 desc=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -eq "$want" ]; then ok "$desc"; else
		bad "$desc (exit $got, wanted $want)"
		sed 's/^/    /' "$tmp/err" | head -5
	fi
}
# jeq FILE FILTER VALUE DESC: jq filter on FILE equals VALUE
jeq() {
	v=$(jq -r "$2" "$1" 2>/dev/null)
	if [ "$v" = "$3" ]; then ok "$4 ($2 = $3)"; else bad "$4 ($2 = '$v', wanted '$3')"; fi
}
finish() {
	if [ "$failures" -eq 0 ]; then echo "all passed"; exit 0; fi
	echo "$failures failed"
	exit 1
}
# need_slurm GEN [CMD...]: skip (77) unless a mini-cluster of Slurm GEN can
# run here: root, network namespaces and Slurm itself (22:
# Debian's 22.05 in PATH; 24: the private 24.11 build in SLURM24_PREFIX,
# then put first in PATH), plus each CMD. Sets srcdir, builddir, CLUSTER,
# PLUGIN_DIR (our plugins for GEN) and, for 24, PREFIX; exports TOPOPLACE
# (a hard error, 99, when our CLI is missing: the build always makes it;
# the same for CLUSTER, a file of the source tree).
need_slurm() {
	gen=$1
	shift
	[ "$(id -u)" -eq 0 ] || skip_all "needs root (network namespaces)"
	srcdir=${TP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
	builddir=${TP_BUILDDIR:-$(cd "$(dirname "$TOPOPLACE")/.." 2>/dev/null && pwd || echo "$srcdir/build")}
	CLUSTER=$srcdir/contrib/slurm-cluster.sh
	if [ "$gen" = 24 ]; then
		PREFIX=${SLURM24_PREFIX:-/opt/topoplace/slurm-24.11}
		[ -f "$PREFIX/topoplace-build.env" ] ||
			skip_all "Slurm 24.11 not built in $PREFIX (contrib/build-slurm.sh)"
		for b in bin/srun bin/sbatch bin/scontrol bin/sinfo bin/squeue \
			sbin/slurmctld sbin/slurmd sbin/slurmstepd; do
			[ -x "$PREFIX/$b" ] || skip_all "$PREFIX/$b missing (contrib/build-slurm.sh)"
		done
		PATH=$PREFIX/bin:$PREFIX/sbin:$PATH
		export PATH
		PLUGIN_DIR=${TP_PLUGIN24_DIR:-$builddir/plugin/slurm24/.libs}
		set -- munged ip unshare "$@"
	else
		PLUGIN_DIR=${TP_PLUGIN_DIR:-$builddir/plugin/.libs}
		set -- munged slurmctld slurmd srun sbatch scontrol sinfo squeue ip unshare "$@"
	fi
	for b in "$@"; do
		command -v "$b" >/dev/null 2>&1 || skip_all "$b not installed (contrib/install-deps.sh and install-slurm.sh install what the tests need)"
	done
	unshare --net --uts true 2>/dev/null || skip_all "cannot create network namespaces here"
	[ -x "$TOPOPLACE" ] || error_all "$TOPOPLACE not built (make builds it always)"
	[ -x "$CLUSTER" ] || error_all "$CLUSTER missing or not executable (a file of the tree)"
	export TOPOPLACE
}
# need_plugins NAME...: skip (77) unless PLUGIN_DIR holds each NAME.so
need_plugins() {
	for p in "$@"; do
		[ -f "$PLUGIN_DIR/$p.so" ] ||
			skip_all "$p.so not built in $PLUGIN_DIR (configure --with-slurm-src or --with-slurm24; spank needs libslurm-dev)"
	done
}
# stop_cluster: stop the mini-cluster in $dir (contrib/slurm-cluster.sh),
# whatever slurmctld runs now: 24.11's scontrol reconfigure execs a new
# one under a new pid, which the pid list must learn first.
stop_cluster() {
	if [ -f "$dir/pids" ] && [ -s "$dir/run/slurmctld.pid" ]; then
		p=$(cat "$dir/run/slurmctld.pid")
		grep -q "^$p " "$dir/pids" || echo "$p slurmctld" >>"$dir/pids"
	fi
	[ ! -f "$dir/pids" ] || "$CLUSTER" stop --dir "$dir" >/dev/null 2>&1 || true
}
# cluster_trap [LOG [PATTERN [LINES]]]: at exit stop the cluster (timed)
# and, after a failed check, print the last LINES (15) lines of
# $dir/log/LOG (slurmctld.log; a glob for several) that match PATTERN
# (grep -i; default: every line); then remove $tmp.
cluster_trap() {
	trap_log=${1:-slurmctld.log} trap_pat=${2:-} trap_lines=${3:-15}
	trap cluster_cleanup EXIT
	trap 'exit 1' INT TERM HUP
}
cluster_cleanup() {
	t1=$(date +%s)
	if [ -f "$dir/pids" ]; then
		stop_cluster
		echo "# teardown $(($(date +%s) - t1)) s"
	fi
	if [ "$failures" -ne 0 ] && [ -d "$dir/log" ]; then
		echo "# $trap_log${trap_pat:+ (lines matching $trap_pat)}, tail:"
		# shellcheck disable=SC2086 # trap_log may be a glob
		cat "$dir"/log/$trap_log 2>/dev/null | grep -i -- "${trap_pat:-.}" |
			tail -n "$trap_lines" | sed 's/^/#   /'
	fi
	rm -rf "$tmp"
}
command -v jq >/dev/null 2>&1 || skip_all "jq not installed (contrib/install-deps.sh installs it)"
# ibsim_sm_up NETFILE [THEN]: skip (77) unless ibsim, opensm, libumad2sim,
# jq and timeout are here; start ibsim on NETFILE with its console
# (ibsim_con LINE sends one) and opensm, export IBSIM_SOCKNAME/UMAD2SIM,
# and at exit stop MON_PID (a monitor started by the caller, if any), then
# ibsim, then run THEN (default: remove $tmp; cluster_cleanup for a test
# with a cluster).
# The monitor goes first and gets a second signal: a umad2sim client whose
# ibsim is gone blocks for ever. TP_IBSIM_NO_SM=1: no opensm (no LIDs);
# ibsim_sm starts it later. An ibsim that is installed but does not load
# NETFILE (often written by our own `fabric ibsim-net`), or an opensm that
# does not become master, ends the test as failed (1), never as a skip.
ibsim_sm_up() {
	for c in ibsim opensm jq timeout; do
		command -v $c >/dev/null 2>&1 || skip_all "$c not installed"
	done
	IBSIM_RUN=${TP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/contrib/ibsim-run.sh
	MON_PID= IBSIM_PID= ibsim_then=${2:-rm -rf \"\$tmp\"}
	trap 'set +e; ibsim_stop; eval "$ibsim_then"' EXIT
	trap 'exit 1' INT TERM HUP
	unset SIM_HOST || true
	ibsim_rc=0
	TP_IBSIM_CONSOLE=1 "$IBSIM_RUN" start "$1" "tp-it-$$" >"$tmp/ibsim.env" ||
		ibsim_rc=$?
	# 3: ibsim-run.sh found ibsim or libumad2sim not installed
	[ "$ibsim_rc" -ne 3 ] || skip_all "ibsim or libumad2sim not installed"
	[ "$ibsim_rc" -eq 0 ] || { bad "ibsim did not start on $1 (exit $ibsim_rc)"; finish; }
	. "$tmp/ibsim.env"
	export IBSIM_SOCKNAME UMAD2SIM
	[ "${TP_IBSIM_NO_SM:-0}" = 1 ] || ibsim_sm
}
# ibsim_sm: opensm on the ibsim of ibsim_sm_up: LIDs for LID-routed
# queries (PortInfo, PMA), routes while links change; skips (77) only when
# opensm or libumad2sim is not installed, fails the test (1) when opensm
# does not become master
ibsim_sm() {
	ibsim_rc=0
	"$IBSIM_RUN" sm "$IBSIM_DIR" >"$tmp/sm.err" 2>&1 || ibsim_rc=$?
	[ "$ibsim_rc" -ne 3 ] || skip_all "$(cat "$tmp/sm.err")"
	[ "$ibsim_rc" -eq 0 ] || { bad "opensm did not come up: $(cat "$tmp/sm.err")"; finish; }
}
# ibsim_discover OUT: `discover --live` through ibsim into OUT (after
# ibsim_sm_up); skips (77) on a build without libibnetdisc, ends the test
# as failed when the walk fails.
ibsim_discover() {
	ibsim_exec "$TOPOPLACE" discover --live --gpus-per-host 8 -o "$1" \
		2>"$tmp/disc.err" && return 0
	grep -q 'built without' "$tmp/disc.err" && skip_all "built without libibnetdisc"
	cat "$tmp/disc.err"
	bad "discover --live"
	finish
}
ibsim_con() { "$IBSIM_RUN" console "$IBSIM_DIR" "$1"; }
# ibsim_fat16 LIVE: ibsim_sm_up on a generated 16-host fat tree (4 leaves
# of 4 hosts, 2 spines, 1 NIC per host), its live walk into LIVE (the model)
ibsim_fat16() {
	"$TOPOPLACE" fabric generate fat-tree --leaves 4 --spines 2 --hosts-per-leaf 4 \
		--nics-per-host 1 -o "$tmp/gen.json" >/dev/null
	"$TOPOPLACE" fabric ibsim-net "$tmp/gen.json" -o "$tmp/f.net"
	ibsim_sm_up "$tmp/f.net"
	ibsim_discover "$1"
}
# ibsim_link FILTER: the index of the model link ($tmp/live.json, as
# ibsim_fat16 writes it) whose entry in a one-shot `fabric health --json`
# matches the jq FILTER (e.g. '.a == "leaf01:1"'); empty when none
ibsim_link() {
	ibsim_exec "$TOPOPLACE" fabric health --fabric "$tmp/live.json" --all --json \
		2>/dev/null | jq -r ".links[] | select($1) | .link"
}
# ibsim_monitor SECS STATE PROM CMD...: CMD (a `topoplace monitor` writing
# STATE and PROM) as an ibsim client in $tmp/mon for at most SECS, stderr
# in $tmp/mon.err, MON_PID set for ibsim_stop; returns once both files
# exist, ends the test (1) when they do not within 60 s.
ibsim_monitor() {
	mon_secs=$1 mon_state=$2 mon_prom=$3
	shift 3
	mkdir -p "$tmp/mon"
	(cd "$tmp/mon" && LD_PRELOAD=$UMAD2SIM exec timeout --foreground "$mon_secs" "$@" \
		2>"$tmp/mon.err") &
	MON_PID=$!
	mon_n=0
	until [ -s "$mon_state" ] && [ -s "$mon_prom" ]; do
		sleep 0.1
		mon_n=$((mon_n + 1))
		[ "$mon_n" -lt 600 ] || { echo "monitor wrote nothing"; tail -3 "$tmp/mon.err"; exit 1; }
	done
}
# ibsim_exec CMD...: CMD as an ibsim client, bounded by ${TO:-60} s
ibsim_exec() { TP_IBSIM_TIMEOUT=${TO:-60} "$IBSIM_RUN" exec "$IBSIM_SOCKNAME" -- "$@"; }
# (Every step tolerates failure: under set -e the first failing command
# of an exit trap would end it and leave ibsim and opensm running.)
ibsim_stop() {
	if [ -n "$MON_PID" ]; then
		kill "$MON_PID" 2>/dev/null || true
		sleep 0.5
		kill "$MON_PID" 2>/dev/null || true
	fi
	if [ -n "$IBSIM_PID" ]; then
		"$IBSIM_RUN" stop "$IBSIM_PID" >/dev/null 2>&1 || true
	fi
	MON_PID= IBSIM_PID=
}
# ---- jobs on a 24.11 mini-cluster priced with a link state ----------------
# (slurm24_linkstate.sh, slurm24_health.sh) They use $fabric (the cluster's
# fabric.json), $log (slurmctld.log) and $tmp.

# topoplace_cluster8 NET PORT FABRIC COMMENT [CONF_LINE...]: after
# need_slurm 24 (or 22) and cluster_trap, the 8-node topology/topoplace
# cluster (4 fake GPUs each) in $dir on network NET, port PORT. FABRIC:
# the fabric file it runs on ('': the interleaved 2-leaf fat tree
# contrib/slurm-cluster.sh generates); its topoplace.conf: COMMENT (a
# '# ...' line), FabricFile=@DIR@/fabric.json, then the CONF_LINEs. Ends
# the test when the cluster does not start; sets (and exports) SLURM_CONF
# and sets log (slurmctld.log).
topoplace_cluster8() {
	c8_net=$1 c8_port=$2 c8_fabric=$3 c8_t0=$(date +%s)
	printf '%s\n' "$4" 'FabricFile=@DIR@/fabric.json' >"$tmp/topoplace.conf"
	shift 4
	[ $# -eq 0 ] || printf '%s\n' "$@" >>"$tmp/topoplace.conf"
	c8_conf=$*
	echo "# $CLUSTER start ${PREFIX:+--slurm-prefix $PREFIX }--topology topoplace${c8_fabric:+ --fabric $c8_fabric} --nodes 8 --net $c8_net --port $c8_port --dir $dir ($c8_conf)"
	if ! timeout 90 "$CLUSTER" start ${PREFIX:+--slurm-prefix "$PREFIX"} --topology topoplace \
		--plugin-dir "$PLUGIN_DIR" --nodes 8 --gpus-per-node 4 --dir "$dir" --timeout 40 \
		--net "$c8_net" --port "$c8_port" ${c8_fabric:+--fabric "$c8_fabric"} \
		--extra-file "$tmp/topoplace.conf" >"$tmp/start.out" 2>&1; then
		cat "$tmp/start.out"
		bad "cluster start"
		finish
	fi
	ok "cluster up in $(($(date +%s) - c8_t0)) s ($c8_conf)"
	export SLURM_CONF=$dir/slurm.conf
	log=$dir/log/slurmctld.log
}

# cluster8_fabric OUT NICS: the fabric contrib/slurm-cluster.sh generates
# for its 8 nodes (2 leaves, 2 up-links each, node names interleaved over
# the leaves, 4 GPUs a host) with NICS NICs a host (0: one per GPU, the
# generator's default), into OUT; a failure is a failed check.
cluster8_fabric() {
	nics=""
	[ "$2" = 0 ] || nics="--nics-per-host $2"
	# shellcheck disable=SC2086
	"$TOPOPLACE" fabric generate fat-tree $nics --uplinks 2 --leaves 2 --spines 1 \
		--hosts-per-leaf 4 --interleave --gpus-per-host 4 --prefix node -o "$1" >/dev/null ||
		bad "fabric generate"
}
# jobcomp_cluster [START-ARG...]: a 4-node mini-cluster (4 fake GPUs a
# node) in $dir on $NET/$PORT with ${PREFIX:+its Slurm} and a job
# completion log, $dir/jobcomp.log (JobCompType=jobcomp/filetxt), plus the
# START-ARGs (--slurmdbd); ends the test when it does not start, else
# exports SLURM_CONF and sets jc (the log).
jobcomp_cluster() {
	jc=$dir/jobcomp.log
	printf 'JobCompType=jobcomp/filetxt\nJobCompLoc=%s\n' "$jc" >"$tmp/jobcomp.conf"
	echo "# $CLUSTER start ${PREFIX:+--slurm-prefix $PREFIX }$* --nodes 4 --gpus-per-node 4 --net $NET --port $PORT --dir $dir"
	if ! timeout 90 "$CLUSTER" start ${PREFIX:+--slurm-prefix "$PREFIX"} "$@" --nodes 4 --gpus-per-node 4 \
		--dir "$dir" --timeout 40 --net "$NET" --port "$PORT" --slurm-conf-extra "$tmp/jobcomp.conf" \
		>"$tmp/start.out" 2>&1; then
		cat "$tmp/start.out"
		bad "cluster start ($*)"
		finish
	fi
	export SLURM_CONF=$dir/slurm.conf
}
# linkstate_cluster NET PORT: after need_slurm 24 (or 22), topoplace_cluster8
# on the generated fabric whose topoplace.conf names LinkState=links.json
# (absent at start: healthy links); sets SLURM_CONF, log, fabric, links,
# t0 (the start); slurmctld at debug2 (the writer logs each record and
# each job end it takes).
linkstate_cluster() {
	t0=$(date +%s)
	cluster_trap slurmctld.log 'topoplace\|fatal\|error' 25
	# PriceBudget: the simulator's (tp_policy_params_defaults), which
	# the CLI uses, whatever the plugin's default
	topoplace_cluster8 "$1" "$2" '' '# topology/topoplace with a link state (test)' \
		'LinkState=links.json' 'PriceBudget=96'
	fabric=$dir/fabric.json
	links=$dir/links.json
	timeout 10 scontrol setdebug debug2 >/dev/null 2>&1 || bad "scontrol setdebug debug2"
}
# job_record JOBID: scontrol's record of the job, asked again when
# scontrol fails (on a loaded machine a query can time out: an empty
# record read as "no nodes" failed slurm24_linkstate.sh once in CI)
job_record() { slurm_cli scontrol show job "$1" 2>/dev/null; }
field() { # JOBID KEY
	job_record "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
# wait_state [-t SECONDS] JOBID STATE...: wait (<= SECONDS, default 30)
# for one of the states
wait_state() {
	ws_max=150
	[ "$1" = -t ] && { ws_max=$(($2 * 5)); shift 2; }
	j=$1
	shift
	i=0
	while [ $i -lt "$ws_max" ]; do
		st=$(field "$j" JobState)
		for w in "$@"; do [ "$st" = "$w" ] && return 0; done
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
# exclusive_job NAME N: an N-node exclusive 1-second job; its hosts,
# sorted, as $got ("none" when sbatch refused it)
exclusive_job() {
	j=$(timeout 10 sbatch --parsable -J "$1" -o /dev/null -N "$2" --exclusive --wrap 'sleep 1')
	[ -n "$j" ] || { bad "sbatch $1"; got=none; return; }
	wait_state "$j" RUNNING COMPLETED || bad "job $j ($1) ran"
	got=$(hostset "$(field "$j" NodeList)")
	echo "# $1: job $j on $got"
	wait_state "$j" COMPLETED FAILED || bad "job $j ($1) finished"
}
hostset() { # NODELIST -> sorted host names, one line
	timeout 10 scontrol show hostnames "$1" | sort | tr '\n' ' '
}
# sorted_line: stdin's lines sorted onto one line, no trailing space
sorted_line() { sort | tr '\n' ' ' | sed 's/ $//'; }
hostline() { # NODELIST -> sorted host names, one line, no trailing space
	timeout 10 scontrol show hostnames "$1" | sorted_line
}
# place REQUEST [STATE]: the hosts the simulator's engine picks, sorted
place() {
	if [ -n "${2:-}" ]; then
		"$TOPOPLACE" place --fabric "$fabric" --request "$1" --state "$2" --policy topoplace --json
	else
		"$TOPOPLACE" place --fabric "$fabric" --request "$1" --policy topoplace --json
	fi >"$tmp/place.json" 2>"$tmp/place.err" || { echo "none"; return; }
	jq -r '.hosts[]' "$tmp/place.json" | sort | tr '\n' ' '
}
# poll SECONDS CMD...: run CMD every 0.2 s until it succeeds, at most
# SECONDS; fails when it never did
poll() {
	_poll_left=$(($1 * 5))
	shift
	until "$@"; do
		[ "$_poll_left" -gt 0 ] || return 1
		_poll_left=$((_poll_left - 1))
		sleep 0.2
	done
}
# lines_at_least FILE PATTERN N: FILE has N lines matching PATTERN
lines_at_least() { [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ]; }
# wait_log PATTERN N: wait (<= 10 s) until PATTERN is in the log N times
wait_log() { poll 10 lines_at_least "$log" "$1" "$2"; }
# flush: two selections a second apart (each confirms decisions and looks
# for ended jobs), then time for the writer: a finished job's traffic has
# left the background the next choice sees
flush() {
	for k in 1 2; do
		# (asked again when it fails: a loaded machine times clients out)
	slurm_cli srun -N 1 true >/dev/null 2>"$tmp/srun1.err" ||
		bad "srun -N 1 true: $(head -c 300 "$tmp/srun1.err")"
		sleep 1.1
	done
	sleep 1.2
}
# spanning NAME STATE: a 6-node exclusive job; checks it against `place`
# with STATE (empty: healthy) and prints its hosts as $got
spanning() {
	want=$(place nodes=6,exclusive "$2")
	# (6 s: on a loaded machine the selection that confirms the
	# decision can come seconds after the start, and one confirmed only
	# after the job ended is dropped, traffic and end alike)
	j=$(sbatch_named "$1" -o /dev/null -N 6 --exclusive --wrap 'sleep 6')
	[ -n "$j" ] || { bad "sbatch $1"; got=none; return; }
	wait_state "$j" RUNNING COMPLETED || bad "job $j ($1) ran"
	got=$(hostset "$(field "$j" NodeList)")
	# a selection a second later confirms the decision against the
	# running job and the writer takes it: its traffic joins the
	# background. Asked again until the record is written (a selection
	# within a second of the last confirms nothing; a loaded machine
	# times clients out)
	for _ in 1 2 3 4; do
		sleep 1.1
		slurm_cli srun -N 1 true >/dev/null 2>"$tmp/srun1.err" ||
			bad "srun -N 1 true: $(head -c 300 "$tmp/srun1.err")"
		poll 3 lines_at_least "$log" "topology/topoplace: record of JobId=$j in" 1 && break
	done
	# recorded while it still runs (the record in the log before the
	# job is seen running): its traffic must join
	rec_running=
	grep -q "topology/topoplace: record of JobId=$j in" "$log" &&
		[ "$(field "$j" JobState)" = RUNNING ] && rec_running=1
	echo "# $1: job $j on $got; topoplace place${2:+ --state $(basename "$2")}: $want"
	[ "$got" = "$want" ] && ok "$1: job $j = topoplace place${2:+ --state} ($want)" ||
		bad "$1: job $j on $got, topoplace place${2:+ --state}: $want"
	wait_state "$j" COMPLETED FAILED || bad "job $j ($1) finished"
	# the end is queued at a selection that finds the job gone (flush
	# makes two); a loaded machine can want a few more
	for _ in 1 2 3; do
		flush
		grep -q "topology/topoplace: end of JobId=$j in" "$log" && break
	done
	if grep -q "topology/topoplace: record of JobId=$j in.*its traffic joins" "$log"; then
		grep -q "topology/topoplace: end of JobId=$j in" "$log" &&
			ok "$1: the writer took job $j's traffic off the background" ||
			bad "$1: no end of job $j in the log (its traffic joined)"
	elif [ -n "$rec_running" ]; then
		bad "$1: job $j was recorded while it ran, but its traffic did not join"
	elif grep -q "topology/topoplace: record of JobId=$j in" "$log"; then
		# confirmed only once it had ended (a machine too loaded for
		# the job's 6 s): its traffic never joined, so no end comes
		echo "# $1: job $j recorded after it ended: its traffic never joined"
	else
		bad "$1: no record of job $j in the log"
	fi
}


# ---- held job sequences against the simulator (fidelity.sh's runner and
# others). They keep $tmp/jobs: NAME ID NODES GPUS [MODE], MODE x for an
# exclusive job that holds its hosts' GPUs. ----

# slurm_cli CMD...: a Slurm client, retried when it fails (a loaded
# machine makes them time out, even at MessageTimeout=15)
slurm_cli() {
	for _ in 1 2 3 4; do
		timeout 20 "$@" 2>"$tmp/cli.err" && return 0
		sleep 0.5
	done
	cat "$tmp/cli.err" >&2
	return 1
}
# sbatch_named NAME SBATCH-ARGS...: the job id on stdout. A loaded
# machine times clients out (MessageTimeout) although slurmctld may have
# queued the job: a job of that name that was not there before is the
# answer, else it is submitted again (names are unique within a test).
sbatch_named() {
	_name=$1
	shift
	_before=" $(timeout 20 squeue -h -t all -n "$_name" -o %i 2>/dev/null | tr '\n' ' ') "
	for _ in 1 2 3; do
		timeout 20 sbatch --parsable -J "$_name" "$@" 2>"$tmp/sbatch.err" && return 0
		sleep 1
		for _id in $(timeout 20 squeue -h -t all -n "$_name" -o %i 2>/dev/null); do
			case $_before in
			*" $_id "*) ;;
			*)
				echo "$_id"
				return 0
				;;
			esac
		done
	done
	cat "$tmp/sbatch.err" >&2
	return 1
}
# settle NODES: until no job is completing and every node without a
# running job is idle (a node may run several shared jobs: the nodes of
# running jobs are counted once each). A client that times out (a loaded
# machine) proves nothing: ask again.
settle() {
	i=0
	while [ $i -lt 150 ]; do
		i=$((i + 1))
		timeout 10 squeue -h -t CG -o %i >"$tmp/cg" 2>/dev/null &&
			timeout 10 squeue -h -t R -o %N >"$tmp/busy" 2>/dev/null &&
			timeout 10 sinfo -h -N -t idle -o %N >"$tmp/idle" 2>/dev/null ||
			{ sleep 0.5; continue; }
		cg=$(wc -l <"$tmp/cg")
		busy=0
		if [ -s "$tmp/busy" ]; then
			timeout 10 scontrol show hostnames "$(paste -sd, "$tmp/busy")" \
				>"$tmp/busyn" 2>/dev/null || { sleep 0.5; continue; }
			busy=$(sort -u "$tmp/busyn" | wc -l)
		fi
		idle=$(sort -u "$tmp/idle" | wc -l)
		[ "$cg" -eq 0 ] && [ $((idle + busy)) -eq "$1" ] && return 0
		sleep 0.2
	done
	return 1
}
job_of() { awk -v n="$1" '$1 == n { print $2 }' "$tmp/jobs"; }
# state_now FULL UNKNOWN: topoplace-state/1 of what runs now in
# $tmp/state.json: per host, an exclusive (MODE x) job holds FULL GPUs,
# another the GPUs it asked for, a job not in $tmp/jobs UNKNOWN
state_now() {
	slurm_cli squeue -h -t R,CG -o '%i %N' >"$tmp/running" || bad "squeue"
	{
		printf '{"format": "topoplace-state/1", "jobs": ['
		sep=
		while read -r rid nl; do
			rg=$(awk -v i="$rid" -v full="$1" '$2 == i { print ($5 == "x") ? full : $4 }' "$tmp/jobs")
			printf '%s{"id": %s, "hosts": {' "$sep" "$rid"
			hsep=
			for h in $(timeout 10 scontrol show hostnames "$nl"); do
				printf '%s"%s": %s' "$hsep" "$h" "${rg:-$2}"
				hsep=', '
			done
			printf '}}'
			sep=', '
		done <"$tmp/running"
		printf ']}\n'
	} >"$tmp/state.json"
}
