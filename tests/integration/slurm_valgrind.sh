#!/bin/sh
# slurmctld 22.05 under valgrind with topology/topoplace and
# job_submit/topoplace loaded from the build tree: jobs, a reconfigure with
# a corrupt fabric, another with the good one, then a clean shutdown. The
# plugins must cause no invalid access and leak nothing ("definitely lost"
# with one of our frames on the stack); Slurm's own findings are not ours
# to judge and are only counted.
# TP_VG_GEN=24 (slurm24_valgrind.sh): slurmctld 24.11 with the native
# topology/topoplace instead, whose engine picks the nodes and whose
# writer thread records the decisions; no reconfigure there (24.11 execs a
# new slurmctld, outside valgrind), the corrupt fabric is
# slurm24_topoplace.sh's; a LinkState file is written, rewritten and
# corrupted while jobs run (the writer's link state and traffic).
# Both run node001's slurmd under valgrind, and with it (through
# --trace-children) every slurmstepd it starts, which loads
# spank_topoplace: hostile step lists sent as a modified client would
# (tp_srun_shim.so preloaded into srun), which the plugin must refuse in
# one line (24.11: two of them); on 22.05 also steps
# with odd node lists and task layouts, a user-set SLURM_STEP_NODELIST and
# SLURM_STEP_TASKS_PER_NODE of 100 KB (stock srun replaces them) and a
# corrupt fabric file. slurmd and each slurmstepd must end with "ERROR
# SUMMARY: 0 errors" and slurmd must still serve steps.
# Needs root, Slurm, valgrind and the built plugins; exit 77 if not.
. "$(dirname "$0")/lib.sh"

gen=${TP_VG_GEN:-22}
need_slurm "$gen" valgrind
if [ "$gen" = 24 ]; then
	need_plugins topology_topoplace
	set -- --slurm-prefix "$PREFIX"
	vgnet=10.218.0 vgport=7317
else
	need_plugins topology_topoplace job_submit_topoplace
	set --
	vgnet=10.217.0 vgport=7117
fi
dir=$tmp/cluster
vg=$tmp/valgrind.log

cluster_trap

cat >"$tmp/topoplace.conf" <<'EOF2'
FabricFile=@DIR@/fabric.json
SwitchWait=60
EOF2
# 24.11: the selection prices with a LinkState file, changed mid-run
[ "$gen" = 24 ] && echo "LinkState=links.json" >>"$tmp/topoplace.conf"
# links FILE HEALTH LINK: one up-link at HEALTH, renamed over FILE
links() {
	printf '{"format":"topoplace-state/1","links":[{"link":%s,"health":%s}]}\n' "$3" "$2" >"$1.tmp" &&
		mv "$1.tmp" "$1"
}
: >"$tmp/extra.conf"
# 22.05: slurmd verbose, for the line it logs once its configuration is
# read (reconfigured below)
if [ "$gen" = 22 ]; then
	echo 'JobSubmitPlugins=job_submit/topoplace' >"$tmp/extra.conf"
	export TP_SLURMD_DEBUG=verbose
fi
need_plugins spank_topoplace
echo "PlugStackConfig=$dir/plugstack.conf" >>"$tmp/extra.conf"
echo "optional @DIR@/plugins/spank_topoplace.so fabric=@DIR@/fabric.json basedir=@DIR@/tprun/%h" >"$tmp/plugstack.conf"
set -- "$@" --extra-file "$tmp/plugstack.conf"
# node001's slurmd and the slurmstepds it execs (never what they run:
# tasks, scripts), one log per process
export TP_SLURMD_NAME=memcheck-amd64-
# valgrind's gdbserver FIFOs (--vgdb=yes, its default) under $tmp: in /tmp
# they outlived every daemon that did not exit by itself, one set a run
vgdbp=$tmp/vgdb
export TP_SLURMD_WRAPPER="valgrind --vgdb-prefix=$vgdbp --trace-children=yes --trace-children-skip=*/bin/*,*/spool/* --child-silent-after-fork=yes --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=none --num-callers=30 --log-file=$tmp/vgd.%p.log"
# valgrind makes slurmctld slow: a longer message timeout for clients
echo "MessageTimeout=20" >>"$tmp/extra.conf"
# bounds slurmd's wait for its threads at SIGTERM (below)
echo "PrologEpilogTimeout=60" >>"$tmp/extra.conf"

export TP_CTLD_NAME=memcheck-amd64-
export TP_CTLD_WRAPPER="valgrind --vgdb-prefix=$vgdbp --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite --num-callers=30 --log-file=$vg"
if ! timeout 240 "$CLUSTER" start "$@" --topology topoplace --plugin-dir "$PLUGIN_DIR" \
	--nodes 8 --gpus-per-node 4 --dir "$dir" --timeout 120 \
	--net "${TP_VG_NET:-$vgnet}" --port "${TP_VG_PORT:-$vgport}" \
	--extra-file "$tmp/topoplace.conf" --slurm-conf-extra "$tmp/extra.conf" \
	>"$tmp/start.out" 2>&1; then
	cat "$tmp/start.out"
	bad "cluster start under valgrind"
	finish
fi
ok "slurmctld up under valgrind"
export SLURM_CONF=$dir/slurm.conf
# ---- node001: steps in one allocation ($alloc), hostile ones among them
step() { timeout 120 srun --jobid="$alloc" "$@"; }
# a modified client (tests/integration/tp_srun_shim.c preloaded into
# srun) sends what it likes: the plugin, as root in node001's
# slurmstepd under valgrind, must refuse each with one short line
shim=$builddir/tests/integration/.libs/tp_srun_shim.so
[ -f "$shim" ] || bad "$shim not built (make -C tests check builds it)"
# hostile K NAME NODELIST TASKS_PER_NODE WHY: a step sent with them,
# in the background (--overlap: the four share node001's CPUs and
# memory); hostile_check K ... once they all ended
hostile() {
	TP_SHIM_STEP_NODELIST=$3 TP_SHIM_STEP_TASKS_PER_NODE=$4 LD_PRELOAD=$shim \
		step --overlap -w node001 -N 1 \
		sh -c 'echo "$SLURM_STEP_ID ${#SLURM_STEP_NODELIST} ${#SLURM_STEP_TASKS_PER_NODE}"' \
		>"$tmp/shim$1.out" 2>"$tmp/shim$1.err" ||
		echo "srun failed: $(head -c 200 "$tmp/shim$1.err")" >>"$tmp/shim$1.out"
}
hostile_check() {
	read -r s nl tl <"$tmp/shim$1.out" || s=none
	line=$(grep "spank/topoplace: job $alloc step $s: " "$dir/log/slurmd-node001.log" | tail -n 1)
	[ "$nl" = ${#3} ] && [ "$tl" = ${#4} ] &&
		ok "$2: the step got the client's values ($nl and $tl bytes)" ||
		bad "$2: the step got ${nl:-?} and ${tl:-?} bytes, sent ${#3} and ${#4}: $(head -c 200 "$tmp/shim$1.out")"
	case $line in
	*"$5"*": environment unchanged") [ ${#line} -le 600 ] ;;
	*) false ;;
	esac && ok "$2: the plugin refused it in one line (${#line} bytes)" ||
		bad "$2: the plugin's line: $(echo "$line" | cut -c 1-300)"
}
big=$(head -c 100000 /dev/zero | tr '\000' n)
cat >"$tmp/cases" <<EOF2
1|100 KB names|$big[1-999999]|1(x$big)|SLURM_STEP_NODELIST "nnnn
2|10^6 names in a 1-node step|node[1-999999]|1(x999999)|more hosts than the step's nodes
3|a 100 KB task count|node001|1(x$big)|SLURM_STEP_TASKS_PER_NODE "1(xnnnn
4|a task count past 2^64|node001|18446744073709551617|does not cover 1 hosts
5|4096 tasks in a 1-task step|node001|4096|SLURM_STEP_TASKS_PER_NODE "4096": 4096 tasks, the step has 1
EOF2
# hostile_all K...: cases K (lines of $tmp/cases) all at once, then checked
hostile_all() {
	pids=
	for c in "$@"; do
		sed -n "${c}p" "$tmp/cases" >"$tmp/case$c"
		IFS='|' read -r k name nl tpn why <"$tmp/case$c"
		hostile "$k" "$name" "$nl" "$tpn" "$why" &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	for c in "$@"; do
		IFS='|' read -r k name nl tpn why <"$tmp/case$c"
		hostile_check "$k" "$name" "$nl" "$tpn" "$why"
	done
}
# no job running or completing before a reconfigure: a step's
# completion message that reaches slurmctld (under valgrind) while it
# reconfigures times out, and slurmstepd retries it only 60 s later
# (slurmstepd/mgr.c), the job COMPLETING all along
none_left() { timeout 10 squeue -h -t R,CG -o %i >"$tmp/left" 2>/dev/null && [ ! -s "$tmp/left" ]; }
quiet() { poll 60 none_left; }

# ctld_wait PATTERN N SECONDS: until slurmctld's log has N lines matching
ctld_wait() { poll "$3" lines_at_least "$dir/log/slurmctld.log" "$1" "$2"; }
if [ "$gen" = 24 ]; then
	links "$dir/links.json" 0.25 8
	# a hostile decisions file for the writer's first append (which
	# counts the lines and drops a last one cut short): junk, a NUL, a
	# 200 KB line, and a record without its end
	{
		echo 'not json'
		printf 'a\000b\n'
		head -c 200000 /dev/zero | tr '\000' x
		echo
		printf '{"format":"topoplace-decision/1","job_id":9'
	} >"$dir/state/topoplace-decisions.jsonl"
	chown --reference="$dir/state" "$dir/state/topoplace-decisions.jsonl"
	ctld_wait 'LinkState .*links degraded' 1 60
fi
timeout 120 srun -N 4 --exclusive hostname >/dev/null 2>&1 && ok "4-node step ran" || bad "4-node step"
timeout 60 sbatch -o /dev/null -N 6 --wrap true >/dev/null 2>&1 && ok "6-node batch job submitted" || bad "sbatch"
if [ "$gen" = 24 ]; then
	# more selections, so decisions are confirmed and the writer runs;
	# a spanning job while another runs (its traffic in the background),
	# the link file rewritten, then corrupt
	timeout 60 sbatch -o /dev/null -N 2 --exclusive --wrap 'sleep 20' >/dev/null 2>&1 || bad "sbatch -N 2"
	for n in 2 3 1 5; do
		timeout 120 srun -N $n hostname >/dev/null 2>&1 || bad "srun -N $n"
	done
	# each file read before the next replaces it: the writer thread
	# looks every 250 ms, but under valgrind on a loaded machine it may
	# not run for seconds
	links "$dir/links.json" 0.5 9
	ctld_wait 'LinkState .*links degraded' 2 60
	timeout 120 srun -N 5 hostname >/dev/null 2>&1 || bad "srun -N 5 (new links)"
	printf '{"format":"topoplace-state/1","links":[' >"$dir/links.json"
	ctld_wait 'LinkState .*last good link state kept' 1 60
	timeout 120 srun -N 6 hostname >/dev/null 2>&1 || bad "srun -N 6 (corrupt links)"
	ok "more steps ran"
	[ "$(grep -c 'LinkState .*links degraded' "$dir/log/slurmctld.log")" -ge 2 ] &&
		grep -q 'LinkState .*last good link state kept' "$dir/log/slurmctld.log" &&
		ok "the LinkState file was read twice, then found corrupt" ||
		bad "LinkState reads in the log: $(grep -c 'LinkState' "$dir/log/slurmctld.log")"
	dec=$dir/state/topoplace-decisions.jsonl
	poll 60 grep -qs '"decision_ms"' "$dec" && ok "the writer thread recorded decisions" ||
		bad "no decision recorded"
	# the cut record dropped, not glued to the first new one
	[ "$(grep -c '"job_id":9{' "$dec")" -eq 0 ] && tail -n 1 "$dec" | jq -e .decision_ms >/dev/null &&
		ok "the hostile decisions file: cut record dropped, new records whole" ||
		bad "decisions file after the hostile one: $(tail -c 200 "$dec")"
	# node001's slurmd and its slurmstepds (24.11's) under valgrind: two
	# hostile step lists from a modified client, inside a batch job (this
	# build has no salloc); the plain step is the "still serves" one below
	mkdir -p "$dir/tprun"
	alloc=$(timeout 60 sbatch --parsable -o /dev/null -w node001 -N 1 --wrap 'sleep 600' 2>"$tmp/salloc.err")
	[ -n "$alloc" ] && wait_state -t 60 "$alloc" RUNNING && ok "job $alloc running on node001" ||
		bad "sbatch on node001: ${alloc:-$(head -c 300 "$tmp/salloc.err")}"
	hostile_all 1 3
	timeout 60 scancel "$alloc" || bad "scancel $alloc"
else
	# job_submit: GPU counts whose sum passes 2^64 saturate. Wrapped (to
	# 0 GPUs, or to 0 nodes in the rounding up) the job would be sized by
	# -N 2 alone and given --switches=1; saturated it fits no leaf and is
	# left alone. The control: the same form with small counts is sized
	# from --gpus (6 GPUs, 4 per node: 2 nodes).
	for g in a:4,b:2 a:18446744073709551614,b:2; do
		j=$(timeout 60 sbatch --parsable -H -N 2 --gpus=$g --wrap true 2>"$tmp/gres.err")
		timeout 60 scontrol show job "$j" 2>/dev/null | grep -o 'Switches=[^ ]*\|AdminComment=.*' | tr '\n' ' ' >"$tmp/gres.$g"
		timeout 60 scancel "$j" 2>/dev/null
		echo "# --gpus=$g: job ${j:-none} $(cat "$tmp/gres.$g") $(head -c 200 "$tmp/gres.err")"
	done
	grep -q 'AdminComment=topoplace: switches=1@60s for 2 node(s) (from --gpus)' "$tmp/gres.a:4,b:2" &&
		ok "--gpus=a:4,b:2: sized from --gpus (the control)" || bad "--gpus=a:4,b:2 not sized from --gpus"
	[ -n "$j" ] && ! grep -q 'AdminComment=topoplace' "$tmp/gres.a:18446744073709551614,b:2" &&
		ok "--gpus=a:2^64-2,b:2: the sum saturates, the job is left alone" ||
		bad "--gpus=a:2^64-2,b:2: the sum wrapped"
	# steps through node001's slurmstepd under valgrind: odd layouts,
	# then hostile step environments. They share one allocation, so no
	# job epilog (a slurmstepd under valgrind) runs between them;
	# --switches=2 is the user's, which job_submit/topoplace leaves
	# alone: node[001-004] spans both leaves, and the plugin's 1@60s
	# would hold the job for SwitchWait plus a backfill pass (~90 s)
	mkdir -p "$dir/tprun"
	timeout 120 salloc --no-shell -w 'node[001-004]' -N 4 --exclusive --switches=2 2>"$tmp/salloc.err"
	alloc=$(sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p' "$tmp/salloc.err")
	[ -n "$alloc" ] && ok "allocation $alloc on node[001-004]" || bad "salloc: $(head -c 300 "$tmp/salloc.err")"
	step -w node001,node003,node004 -N 3 -n 7 true >/dev/null 2>&1 &&
		ok "step on node001 with 3,2(x2) tasks per node" || bad "srun -N 3 -n 7"
	printf 'node001\nnode001\nnode002\nnode001\n' >"$tmp/hosts.arb"
	SLURM_HOSTFILE=$tmp/hosts.arb step -m arbitrary -n 4 true >/dev/null 2>&1 &&
		ok "arbitrary distribution node001,node001,node002,node001" || bad "srun -m arbitrary"
	SLURM_STEP_NODELIST="$big[1-999999]" SLURM_STEP_TASKS_PER_NODE="1(x$big)" \
		step -w node001 -N 1 sh -c 'echo "$SLURM_STEP_NODELIST"' >"$tmp/hostile.out" 2>/dev/null ||
		bad "srun with a 100 KB SLURM_STEP_NODELIST in the environment"
	read -r got <"$tmp/hostile.out" || got=
	[ "$got" = node001 ] && ok "a 100 KB SLURM_STEP_NODELIST in the environment: stock srun sent its own (node001)" ||
		bad "the step saw SLURM_STEP_NODELIST of ${#got} bytes"
	hostile_all 1 2 3 4 5
	for p in $pids; do wait "$p"; done
	while IFS='|' read -r k name nl tpn why; do
		hostile_check "$k" "$name" "$nl" "$tpn" "$why"
	done <"$tmp/cases"
	cp "$dir/fabric.json" "$tmp/good.json"
	echo '{"format":"topoplace-fabric/1",' >"$dir/fabric.json"
	step -w node001 -N 1 true >/dev/null 2>&1 &&
		grep -q 'error: spank/topoplace: .*fabric .*: not valid JSON near byte [0-9]*: environment unchanged' "$dir/log/slurmd-node001.log" &&
		ok "step on node001 with a corrupt fabric file: ran, the plugin said why" ||
		bad "step with a corrupt fabric: $(grep spank "$dir/log/slurmd-node001.log" | tail -n 2)"
	timeout 60 scancel "$alloc" || bad "scancel $alloc"
	quiet && ok "allocation $alloc ended (epilog on node001 done)" || bad "jobs still running: $(cat "$tmp/left")"
	# reconfigured N: wait (<= 60 s) until node001's slurmd (under
	# valgrind: ~10 s, taking no connections meanwhile) has read its
	# configuration N times, start included (its gres line each time,
	# at SlurmdDebug=verbose)
	reconfigured() { poll 60 lines_at_least "$dir/log/slurmd-node001.log" 'Gres Name=gpu' "$1"; }
	timeout 60 scontrol reconfigure && reconfigured 2 && ok "reconfigure with a corrupt fabric" || bad "reconfigure (corrupt)"
	timeout 120 srun -N 2 hostname >/dev/null 2>&1 && ok "still scheduling on the flat table" || bad "srun after corrupt fabric"
	cp "$tmp/good.json" "$dir/fabric.json"
	quiet && timeout 60 scontrol reconfigure && reconfigured 3 && ok "reconfigure with the good fabric" || bad "reconfigure (good)"
	timeout 120 srun -N 4 hostname >/dev/null 2>&1 && ok "4-node step after restore" || bad "srun after restore"
fi

# node001's slurmd: still serving, then stopped on its own so valgrind
# has time to write its report; each log is one process. Errors are
# invalid accesses and uses of uninitialised values, whoever's; definite
# leaks are ours to judge only with one of our frames (Slurm 22.05's
# slurmstepd never frees its step record and credential at exit: those
# are counted)
[ "$gen" = 22 ] && minsteps=8 || minsteps=3
timeout 120 srun -w node001 -N 1 true >/dev/null 2>&1 && ok "node001's slurmd still serves steps" ||
	bad "node001 after the hostile steps"
dpid=$(grep -l 'Command: [^ ]*slurmd ' "$tmp"/vgd.*.log 2>/dev/null | head -n 1 | sed 's/.*vgd\.\([0-9]*\)\.log/\1/')
[ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null && ok "slurmd under valgrind alive (pid $dpid)" || bad "slurmd under valgrind gone"
[ -z "$dpid" ] || kill -TERM "$dpid" 2>/dev/null
# slurmd's shutdown waits PrologEpilogTimeout (60 s, set above; unset it
# waits for ever) for its threads (a CI run once lost the report when
# one outlived the 120 s this waited), then valgrind writes the report
gone() { ! kill -0 "$1" 2>/dev/null; }
[ -z "$dpid" ] || poll 300 gone "$dpid" || true
# (seen three times on 24.11.5, 2026-12-04: slurmd had not ended 300 s
# after SIGTERM. The stacks then kept showed it inside Slurm alone: main
# in conmgr_run() -> wait_for_watch(), the watch thread and nine workers
# waiting in event_wait_now(), one worker in wrap_work(); no frame of
# ours.)
# our code, in a valgrind record or a stack: our plugins' .so or source
# names or the tp_ core, not merely a path with "topoplace" in it (the
# 24.11 build's prefix has)
OURS='(topology|job_submit|spank)_topoplace|[^a-z]tp_[a-z_]*[ (]'
# our_threads BT: the threads of a gdb "thread apply all bt" in our code
# (OURS, or a source file of the 24.11 plugin's: its static functions
# match nothing else, so a hang in its decision writer read as Slurm's),
# but for that writer waiting for work (writer_main, nap_ms, then the
# condition variable's wait: it lives until our fini, which a shutdown
# hung inside Slurm has not reached; the stacks kept from 2026-12-07's
# two hangs show it so, and nothing else of ours)
our_threads() {
	awk -v ours="$OURS|topoplace24_[a-z]*\\.c" 'BEGIN{RS=""}
		/^Thread / && $0 ~ ours {
			n = split($0, fr, "\n"); busy = 0
			for (i = 2; i <= n; i++)
				if (fr[i] ~ ours && fr[i] !~ / (writer_main|nap_ms) \(/)
					busy = 1
			if (busy || !/pthread_cond_(timed)?wait/)
				print
		}' "$1"
}
# live_report PID WHAT LOG WAITED: a daemon under valgrind that has not
# ended WAITED after it was asked to: where each of its threads waits,
# through valgrind's gdbserver (valgrind's --vgdb=yes, its default), for
# whoever reads the log; when Slurm's own shutdown hung with none of our
# code on any stack, the errors are in LOG as they happened, and the
# summary and the leak check are asked of the live process (its lines as
# the log writes them, "(+N)" deltas dropped) and added to LOG; then it
# is killed
live_report() {
	timeout 120 gdb -batch -nx -ex "target remote | vgdb --vgdb-prefix=$vgdbp --pid=$1" \
		-ex "info threads" -ex "thread apply all bt 25" \
		>"$tmp/hang.$1.bt" 2>&1
	sed 's/^/# /' "$tmp/hang.$1.bt" | grep -v '^# \(warning\|Reading\|Download\)' | head -n 200
	cp "$tmp/hang.$1.bt" "${TP_VG_KEEP:-/tmp}/$2-hang.$1.bt" 2>/dev/null
	if grep -q '^Thread ' "$tmp/hang.$1.bt" && [ -z "$(our_threads "$tmp/hang.$1.bt")" ]; then
		echo "# $2 (pid $1) still running $4 after it was asked to end, inside Slurm alone (no thread in topoplace's code but an idle decision writer): its report taken live through vgdb"
		# (the leak check first: with --errors-for-leak-kinds=definite
		# its leaks then count in the summary, as at exit)
		{ timeout 120 vgdb --vgdb-prefix="$vgdbp" --pid="$1" leak_check full definite &&
			timeout 60 vgdb --vgdb-prefix="$vgdbp" --pid="$1" v.info all_errors; } 2>/dev/null |
			grep '^==' | sed 's/ (+[0-9,]*)//g' >"$tmp/live.$1" &&
			grep -q 'ERROR SUMMARY' "$tmp/live.$1" &&
			cat "$tmp/live.$1" >>"$3" ||
			bad "$2's report through vgdb"
		kill -KILL "$1" 2>/dev/null
		poll 30 gone "$1" || true
	else
		bad "$2 under valgrind (pid $1) still running $4 after it was asked to end: its shutdown hung"
	fi
}
[ -n "$dpid" ] && kill -0 "$dpid" 2>/dev/null && live_report "$dpid" slurmd "$tmp/vgd.$dpid.log" "300 s"
# a slurmstepd (a valgrind log each) writes its report when it exits; on
# a slow machine the last ones may still be ending: up to 60 s for them
reports_written() {
	for f in "$tmp"/vgd.*.log; do
		[ -f "$f" ] && ! grep -q 'ERROR SUMMARY' "$f" || continue
		grep -q 'Command: [^ ]*slurm\(d\|stepd\)' "$f" || continue
		p=${f##*/vgd.}
		gone "${p%.log}" || return 1
	done
}
poll 60 reports_written || true
nd=0 ns=0 vgbad=0
for f in "$tmp"/vgd.*.log; do
	[ -f "$f" ] || continue
	case $(grep -m 1 'Command:' "$f") in
	*slurmstepd*) ns=$((ns + 1)) what=slurmstepd ;;
	*slurmd*) nd=$((nd + 1)) what=slurmd ;;
	*) continue ;;
	esac
	sum=$(grep 'ERROR SUMMARY' "$f" | tail -n 1 | sed 's/^==[0-9]*== //')
	case $sum in
	"ERROR SUMMARY: 0 errors"*) ;;
	"")
		vgbad=1
		bad "$what $(basename "$f"): no report"
		;;
	*)
		vgbad=1
		bad "$what $(basename "$f"): $sum"
		sed 's/^==[0-9]*== \{0,1\}//' "$f" | awk 'BEGIN{RS=""} /(Invalid|uninitialised|Conditional jump|definitely lost in)/' |
			head -n 40 | sed 's/^/#   /'
		;;
	esac
done
lost=$(cat "$tmp"/vgd.*.log | sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' | tr -d , | awk '{s += $1} END {print s + 0}')
echo "# slurmd + slurmstepds, Slurm's own: $lost bytes definitely lost at exit"
ours=$(cat "$tmp"/vgd.*.log | sed 's/^==[0-9]*== \{0,1\}//' |
	awk -v ours="$OURS" 'BEGIN{RS=""} $0 ~ ours && /definitely lost/' | head -n 60)
[ -z "$ours" ] && ok "no definite leak in topoplace code in slurmd or slurmstepd" || {
	bad "leaks in topoplace code:"
	echo "$ours" | sed 's/^/#   /'
}
[ "$nd" -eq 1 ] && [ "$ns" -ge "$minsteps" ] && [ $vgbad -eq 0 ] && ok "valgrind: 0 errors in slurmd and in each of its $ns slurmstepds" ||
	bad "valgrind reports: $nd slurmd, $ns slurmstepd (want 1 and >= $minsteps)"

# shut down cleanly so fini runs and valgrind writes its report; 24.11
# takes longer than the cluster script waits before SIGKILL, so it is
# asked to shut down first and given its time
wait_report() { poll "$1" grep -qs 'ERROR SUMMARY' "$vg" || true; }
if [ "$gen" = 24 ]; then
	timeout 60 scontrol shutdown slurmctld >/dev/null 2>&1 || bad "scontrol shutdown"
	wait_report 180
	# (a CI run on 2026-12-07 lost the report: slurmctld had not ended
	# 180 s after the shutdown, the machine busy with the distcheck
	# beside it; it passed alone right after)
	# valgrind writing its exit report (the heap summary comes first):
	# it is ending, given more time, never taken live over it
	grep -qs 'HEAP SUMMARY' "$vg" && wait_report 180
	cpid=$(sed -n '1s/^==\([0-9]*\)==.*/\1/p' "$vg")
	[ -n "$cpid" ] && ! grep -qs 'HEAP SUMMARY' "$vg" && kill -0 "$cpid" 2>/dev/null &&
		live_report "$cpid" slurmctld "$vg" "180 s"
fi
timeout 120 "$CLUSTER" stop --dir "$dir" >/dev/null 2>&1 || bad "stop"
wait_report 60
grep -q 'ERROR SUMMARY' "$vg" || { bad "valgrind wrote no report"; finish; }
grep -q 'Command: [^ ]*slurmctld' "$vg" && ok "the report is slurmctld's" || bad "report is not slurmctld's"
grep -q 'topology_topoplace.so\|job_submit_topoplace.so' "$vg" ||
	grep -q 'topology/topoplace' "$dir/log/slurmctld.log" && ok "our plugins were loaded" ||
	bad "plugins not loaded"
leak=$(grep 'definitely lost:' "$vg" | tail -n 1 | sed 's/^==[0-9]*== *//')
[ -n "$leak" ] && echo "# slurmctld as a whole: $leak" ||
	echo "# slurmctld as a whole: $(grep -E 'All heap blocks|in use at exit' "$vg" | tail -n 1 | sed 's/^==[0-9]*== *//')"
ok "valgrind: $(grep 'ERROR SUMMARY' "$vg" | tail -n 1 | sed 's/^==[0-9]*== //')"
# where Slurm's own findings come from, for whoever looks (not judged)
sed 's/^==[0-9]*== \{0,1\}//' "$vg" | awk 'BEGIN{RS=""} /definitely lost in loss record/' |
	head -n 12 | sed 's/^/#   /'
# one record per blank-line separated block; ours when a frame is (OURS)
ours=$(sed 's/^==[0-9]*== \{0,1\}//' "$vg" |
	awk -v ours="$OURS" 'BEGIN{RS=""} $0 ~ ours && /(definitely lost|Invalid (read|write|free)|uninitialised|Conditional jump)/' |
	head -n 60)
if [ -n "$ours" ]; then
	bad "valgrind findings in topoplace code:"
	echo "$ours" | sed 's/^/#   /'
else
	ok "no invalid access or definite leak in topoplace code"
fi
finish
