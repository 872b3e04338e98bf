#!/bin/sh
# Quick start, part 1: install what topoplace needs (Debian 12, as root),
# build it, and run the main job on built-in data: simulate every placement
# policy on the built-in fabric (a 2:1 fat tree of 8 leaves x 8 hosts x 8
# GPUs, one NIC per GPU, each cable down or at half width with
# probability 5%: 25 of its 768 down, 24 halved) with a synthetic
# LLM-cluster trace over 24 seeds, one row per policy. Arguments go to
# `topoplace simulate` (`build/cli/topoplace simulate --help` lists them);
# --help first prints this and changes nothing.
set -eu
case ${1:-} in
-h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d;s/^# \{0,1\}//'; exit 0 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh" >/dev/null
exec "$top/build/cli/topoplace" simulate "$@"
