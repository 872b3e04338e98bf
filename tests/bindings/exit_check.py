"""A DDP job through the async hook that never closes its Communicator
(the README's snippet, as users write it) exits 0. The progress thread is
a daemon: still inside torch's Future.set_result (DDP's callbacks) when
Python finalised, it aborted the process ("terminate called without an
active exception", exit 134) in 3 of 5 runs; an atexit handler now lets
it finish first. Usage: exit_check.py GLOO_PORT, with TOPOPLACE_PLAN,
TOPOPLACE_RANK, MASTER_ADDR/MASTER_PORT set (run by tests/bindings/torch.sh).
"""

import sys

import torch
import torch.distributed as dist

import topoplace_coll as tc
from topoplace_coll.hooks import TopoplaceState, allreduce_hook

torch.set_num_threads(1)
comm = tc.Communicator(timeout_s=60)
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[1], rank=comm.rank,
                        world_size=comm.size)
ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64))
ddp.register_comm_hook(TopoplaceState(comm), allreduce_hook)
for _ in range(3):
    ddp(torch.randn(4, 64)).sum().backward()
# no comm.close(), no destroy_process_group(): the interpreter's exit
