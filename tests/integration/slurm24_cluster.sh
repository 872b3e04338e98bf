#!/bin/sh
# slurm_cluster.sh on the private Slurm 24.11 (contrib/build-slurm.sh):
# native-mode daemons and clients, their config, topology/tree placement.
TP_GEN=24 exec sh "$(dirname "$0")/slurm_cluster.sh"
