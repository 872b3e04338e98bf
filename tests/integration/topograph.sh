#!/bin/sh
# fabric topology-conf against NVIDIA topograph's own topology.conf for the
# same cluster (the fixtures' slurm/NVIDIA-topograph, its slinky-oci-sim
# tree and slinky-dra block models): the fabric those models describe,
# written by topoplace, must give the same switches over the same hosts
# (tree) and the same blocks in the same order (block), names aside.
# topograph stops BlockSizes at 32 where topoplace doubles on while the 12
# blocks hold it (64: blocks 1-8), so theirs must be a prefix of ours.
. "$(dirname "$0")/lib.sh"
T=$TOPOPLACE
PY=/usr/bin/python3
[ -x "$PY" ] || skip_all "$PY absent (Debian python3)"
ref=${TP_FIXTURES:-}/slurm/NVIDIA-topograph
[ -n "${TP_FIXTURES:-}" ] && [ -f "$ref/expected.slinky-oci-sim-tree.conf" ] ||
	skip_all "fixtures absent (TP_FIXTURES)"
H="$PY $(dirname "$0")/topograph.py"

$H fabric "$tmp/oci.json" && $H fabric "$tmp/dra.json" --domains || { bad "the models' fabrics"; finish; }
expect 0 "topology-conf, tree" $T fabric topology-conf "$tmp/oci.json" -o "$tmp/tree.conf"
if $H tree "$tmp/tree.conf" "$ref/expected.slinky-oci-sim-tree.conf" >"$tmp/cmp" 2>&1; then
	ok "topograph's tree: $(cat "$tmp/cmp")"
else
	bad "tree against topograph's: $(cat "$tmp/cmp")"
fi
expect 0 "topology-conf --block" $T fabric topology-conf "$tmp/dra.json" --block -o "$tmp/block.conf"
if $H block "$tmp/block.conf" "$ref/expected.slinky-dra-block.conf" >"$tmp/cmp" 2>&1; then
	ok "topograph's blocks: $(cat "$tmp/cmp")"
else
	bad "blocks against topograph's: $(cat "$tmp/cmp")"
fi
finish
