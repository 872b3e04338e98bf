#!/bin/sh
# slurmctld 24.11 under valgrind with the native topology/topoplace (its
# engine and its decision writer thread): slurm_valgrind.sh with
# TP_VG_GEN=24, on a network of its own.
TP_VG_GEN=24 exec sh "$(dirname "$0")/slurm_valgrind.sh"
