#!/bin/sh
# Quick start, part 1: install what topoplace needs (Debian 12, as root),
# build it, and run the main job on built-in data: generate the default
# rail-optimized SuperPOD-style fabric and show its model.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh" >/dev/null
tp="$top/build/cli/topoplace"
out="$top/build/default-fabric.json"
"$tp" fabric generate rail -o "$out"
"$tp" fabric show "$out"
