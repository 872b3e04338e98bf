#!/bin/sh
# ibsim-run.sh - run the ibsim InfiniBand fabric simulator (Debian
# ibsim-utils + libumad2sim0) for live-discovery tests without hardware.
#
#   ibsim-run.sh start NETFILE [SOCKNAME]
#       Start ibsim in the background on NETFILE (ibsim net format, or real
#       `ibnetdiscover` output), sized for the file, and wait until it is
#       ready. Prints shell assignments to eval:
#         IBSIM_PID=...  IBSIM_SOCKNAME=...  IBSIM_DIR=...  UMAD2SIM=...
#       With TP_IBSIM_CONSOLE=1 ibsim keeps its console: it reads commands
#       (Unlink, ReLink, Error, PerformanceSet ...) from the FIFO
#       $IBSIM_DIR/console, held open by a helper so ibsim never sees EOF
#       (it spins after EOF). Send one with `ibsim-run.sh console DIR CMD`.
#   ibsim-run.sh sm DIR
#       Start opensm (preloaded with umad2sim) on the ibsim started with
#       IBSIM_DIR=DIR and wait until it is master (LIDs assigned, routes
#       set), so LID-routed queries (PMA, SA) work. It keeps running, to
#       re-route when links change, until `stop` stops ibsim. Its cache
#       (OSM_CACHE_DIR) is DIR/sm/cache unless the environment sets one.
#   ibsim-run.sh console DIR COMMAND
#       Send one console line (< 128 bytes) to an ibsim started with
#       TP_IBSIM_CONSOLE=1.
#   ibsim-run.sh exec SOCKNAME -- CMD [ARG...]
#       Run CMD as a client of that ibsim (LD_PRELOAD=libumad2sim) under
#       timeout, in a private temporary working directory (umad2sim writes
#       ./sys-<pid> there), so give CMD absolute paths. Exit status is
#       CMD's; 124 when it timed out.
#   ibsim-run.sh stop PID
#       Stop an ibsim started by `start` (checks that PID is ibsim) and
#       remove its directory.
#
# Environment: TP_IBSIM_START_TIMEOUT (s, default 120) bounds the wait for
# ibsim to come up; TP_IBSIM_TIMEOUT (s, default 120) bounds `exec`;
# TP_UMAD2SIM overrides the libumad2sim.so path; SIM_HOST (passed through)
# picks the node a client attaches to; TMPDIR is honoured.
#
# A client preloaded with umad2sim blocks forever when no ibsim answers on
# its IBSIM_SOCKNAME, hence the timeout on every `exec`. Parallel runs need
# distinct socket names; the default one is unique per start.
#
# Exit status: 0 done; 1 failed (ibsim would not load the net file, opensm
# would not become master, ...); 2 usage; 3 ibsim, opensm or libumad2sim
# is not installed (what a test may skip for: a tool that is installed but
# fails is a failure).
set -eu

prog=${0##*/}

die() {
	echo "$prog: $*" >&2
	exit 1
}

# absent MSG: a program or library this needs is not installed (exit 3)
absent() {
	echo "$prog: $*" >&2
	exit 3
}

usage() {
	cat >&2 <<EOF
usage: $prog start NETFILE [SOCKNAME]
       $prog sm DIR
       $prog console DIR COMMAND
       $prog exec SOCKNAME -- CMD [ARG...]
       $prog stop PID
       $prog --help
EOF
	exit 2
}

# --help: the comment at the top, on stdout
help() {
	sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'
	exit 0
}

find_umad2sim() {
	if [ -n "${TP_UMAD2SIM:-}" ]; then
		[ -r "$TP_UMAD2SIM" ] || die "TP_UMAD2SIM=$TP_UMAD2SIM: not readable"
		echo "$TP_UMAD2SIM"
		return 0
	fi
	for lib in /usr/lib/*/umad2sim/libumad2sim.so \
		/usr/lib64/umad2sim/libumad2sim.so \
		/usr/lib/umad2sim/libumad2sim.so; do
		if [ -r "$lib" ]; then
			echo "$lib"
			return 0
		fi
	done
	return 1
}

# ibsim's defaults hold 2048 nodes, 256 switches and 13312 ports; bigger
# fabrics fail to load without -N/-S/-P. Count what the file declares
# (a switch also has port 0) and leave headroom; never go below defaults.
size_args() {
	awk '
	$1 == "Switch" { sw++; nodes++; ports += $2 + 1; next }
	$1 == "Ca" || $1 == "Hca" || $1 == "Rt" { nodes++; ports += $2 + 1 }
	function atleast(n, d) { n = int(n * 1.25) + 64; return n > d ? n : d }
	END {
		printf "-N %d -S %d -P %d\n", atleast(nodes, 2048),
			atleast(sw, 256), atleast(ports, 13312)
	}' "$1"
}

cmd_start() {
	[ $# -ge 1 ] && [ $# -le 2 ] || usage
	net=$1
	[ -r "$net" ] || die "$net: no such file or not readable"
	command -v ibsim >/dev/null 2>&1 ||
		absent "ibsim not found (apt-get install ibsim-utils)"
	find_umad2sim >/dev/null ||
		absent "libumad2sim.so not found (apt-get install libumad2sim0)"
	case $net in
	/*) ;;
	*) net=$(pwd)/$net ;;
	esac
	dir=$(mktemp -d "${TMPDIR:-/tmp}/tp-ibsim.XXXXXX")
	sock=${2:-${dir##*/}}
	limits=$(size_args "$net")
	# -s: links come up at start; -n: no console, so stdin is unused.
	if [ "${TP_IBSIM_CONSOLE:-0}" = 1 ]; then
		mkfifo "$dir/console"
		# shellcheck disable=SC2086
		(cd "$dir" && IBSIM_SOCKNAME=$sock exec ibsim -s $limits "$net" \
			<"$dir/console" >"$dir/ibsim.log" 2>&1) &
		pid=$!
		(exec sleep 2147483647 >"$dir/console") &
		echo "$!" >"$dir/holder.pid"
	else
		# shellcheck disable=SC2086
		(cd "$dir" && IBSIM_SOCKNAME=$sock exec ibsim -s -n $limits "$net" \
			</dev/null >"$dir/ibsim.log" 2>&1) &
		pid=$!
	fi
	echo "$pid" >"$dir/ibsim.pid"

	limit=${TP_IBSIM_START_TIMEOUT:-120}
	waited=0
	# Poll ten times a second: small fabrics are up in well under 1 s.
	while ! grep -q 'Network simulator ready' "$dir/ibsim.log" 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 5 "$dir/ibsim.log" >&2 || true
			rm -rf "$dir"
			die "ibsim exited while loading $net (log above)"
		fi
		if [ "$waited" -ge $((limit * 10)) ]; then
			kill "$pid" 2>/dev/null || true
			tail -n 5 "$dir/ibsim.log" >&2 || true
			rm -rf "$dir"
			die "ibsim not ready after ${limit}s (TP_IBSIM_START_TIMEOUT)"
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	echo "IBSIM_PID=$pid"
	echo "IBSIM_SOCKNAME=$sock"
	echo "IBSIM_DIR=$dir"
	echo "UMAD2SIM=$(find_umad2sim)"
}

cmd_sm() {
	[ $# -eq 1 ] || usage
	dir=$1
	[ -f "$dir/ibsim.pid" ] || die "$dir: not a directory of ibsim-run.sh start"
	command -v opensm >/dev/null 2>&1 || absent "opensm not found (apt-get install opensm)"
	lib=$(find_umad2sim) ||
		absent "libumad2sim.so not found (apt-get install libumad2sim0)"
	sock=$(tr '\0' '\n' <"/proc/$(cat "$dir/ibsim.pid")/environ" |
		sed -n 's/^IBSIM_SOCKNAME=//p')
	# Its own cache (guid2lid, neighbors) unless OSM_CACHE_DIR says
	# otherwise: /var/cache/opensm is shared by every opensm here, and the
	# generated fabrics reuse GUIDs, so one fabric's LIDs would seed
	# another's.
	cache=${OSM_CACHE_DIR:-$dir/sm/cache}
	mkdir -p "$dir/sm" "$cache"
	# Its working directory catches umad2sim's sys-<pid> tree. -d2: the
	# log is flushed at each line, so that a reader can time what opensm
	# did (bench_health_select.sh); it logs a few lines per sweep.
	(cd "$dir/sm" && IBSIM_SOCKNAME=$sock LD_PRELOAD=$lib \
		OSM_CACHE_DIR=$cache exec opensm -d2 -f "$dir/sm/opensm.log" >"$dir/sm/out" 2>&1) &
	echo "$!" >"$dir/sm.pid"
	# stdout says MASTER right after the first sweep (SUBNET UP in
	# ~0.15 s on small fabrics, ~1 s at 2,048 hosts).
	limit=${TP_IBSIM_START_TIMEOUT:-120}
	n=0
	until grep -q 'Entering MASTER state' "$dir/sm/out" 2>/dev/null; do
		[ "$n" -lt $((limit * 10)) ] || die "opensm not master after ${limit}s"
		kill -0 "$(cat "$dir/sm.pid")" 2>/dev/null ||
			die "opensm exited: $(tail -n 3 "$dir/sm/out")"
		sleep 0.1
		n=$((n + 1))
	done
	# routes are set once the heavy sweep is over: wait for quiet CPU
	sleep 1
}

cmd_console() {
	[ $# -eq 2 ] || usage
	[ -p "$1/console" ] || die "$1/console: not an ibsim console FIFO"
	[ ${#2} -lt 128 ] || die "console line longer than 127 bytes"
	printf '%s\n' "$2" >"$1/console"
}

cmd_exec() {
	[ $# -ge 3 ] && [ "$2" = "--" ] || usage
	sock=$1
	shift 2
	lib=$(find_umad2sim) ||
		absent "libumad2sim.so not found (apt-get install libumad2sim0)"
	wd=$(mktemp -d "${TMPDIR:-/tmp}/tp-ibsim-client.XXXXXX")
	rc=0
	(cd "$wd" && exec timeout "${TP_IBSIM_TIMEOUT:-120}" \
		env IBSIM_SOCKNAME="$sock" LD_PRELOAD="$lib" "$@") || rc=$?
	rm -rf "$wd"
	[ "$rc" -ne 124 ] ||
		echo "$prog: '$1' timed out after ${TP_IBSIM_TIMEOUT:-120}s (is ibsim running on '$sock'?)" >&2
	return "$rc"
}

# Running, not just a zombie: once `start` has exited ibsim belongs to
# init, which may take its time to reap it.
alive() {
	st=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

cmd_stop() {
	[ $# -eq 1 ] || usage
	pid=$1
	case $pid in
	'' | *[!0-9]*) die "stop: '$pid' is not a PID" ;;
	esac
	[ -r "/proc/$pid/comm" ] || die "stop: no process $pid"
	[ "$(cat "/proc/$pid/comm")" = ibsim ] ||
		die "stop: process $pid is not ibsim"
	dir=$(readlink "/proc/$pid/cwd" 2>/dev/null || true)
	# opensm first, while its ibsim still answers (a umad2sim client whose
	# ibsim is gone may block for ever); it may sit out SIGTERM during a
	# sweep of a large fabric, hence the KILL after 5 s.
	if [ -f "$dir/sm.pid" ]; then
		sp=$(cat "$dir/sm.pid")
		if [ "$(cat "/proc/$sp/comm" 2>/dev/null)" = opensm ]; then
			kill "$sp" 2>/dev/null || true
			n=0
			while alive "$sp" && [ "$n" -lt 50 ]; do
				sleep 0.1
				n=$((n + 1))
			done
			! alive "$sp" || kill -9 "$sp" 2>/dev/null || true
		fi
	fi
	kill "$pid" 2>/dev/null || true
	if [ -f "$dir/holder.pid" ]; then
		hp=$(cat "$dir/holder.pid")
		[ "$(cat "/proc/$hp/comm" 2>/dev/null)" = sleep ] &&
			kill "$hp" 2>/dev/null
	fi
	n=0
	while alive "$pid" && [ "$n" -lt 50 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if alive "$pid"; then
		kill -9 "$pid" 2>/dev/null || true
	fi
	# Only ever remove a directory this script created.
	case ${dir##*/} in
	tp-ibsim.??????) [ -f "$dir/ibsim.pid" ] && rm -rf "$dir" ;;
	esac
	return 0
}

[ $# -ge 1 ] || usage
sub=$1
shift
case $sub in
start) cmd_start "$@" ;;
exec) cmd_exec "$@" ;;
console) cmd_console "$@" ;;
sm) cmd_sm "$@" ;;
stop) cmd_stop "$@" ;;
-h | --help) help ;;
*) usage ;;
esac
