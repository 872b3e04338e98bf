#!/bin/sh
# Quick start, part 1: install what topoplace needs (Debian 12, as root),
# build it, and run the main job on built-in data: simulate every placement
# policy on the built-in rail-optimized SuperPOD-style fabric (1,024 GPUs)
# with a synthetic LLM-cluster trace, one row per policy.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh" >/dev/null
exec "$top/build/cli/topoplace" simulate "$@"
