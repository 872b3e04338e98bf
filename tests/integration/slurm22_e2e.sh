#!/bin/sh
# The end-to-end chain of issue 9 on Debian's Slurm 22.05 with the
# 22.05-compatible topology/topoplace and SPANK plugins: the same checks as
# slurm_e2e.sh (placement inside one leaf as `topoplace place` says, the plan
# handed to every task, libtopoplace-coll running from it, Open MPI and Gloo
# on the same allocation), on its own networks (TP_E2E22_NET, 10.207.0; the
# data net is the next /24) and namespaces (tpy-), so both can run in one
# `make check-slurm`.
TP_E2E_SLURM=22
TP_E2E_NET=${TP_E2E22_NET:-10.207.0}
TP_E2E_PORT=${TP_E2E22_PORT:-6958}
TP_E2E_PREFIX=${TP_E2E22_PREFIX:-tpy-}
export TP_E2E_SLURM TP_E2E_NET TP_E2E_PORT TP_E2E_PREFIX
exec sh "$(dirname "$0")/slurm_e2e.sh"
