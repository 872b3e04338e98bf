#!/usr/bin/python3
"""Train a small MLP with DistributedDataParallel on synthetic data, with
torch's own gloo all-reduce, PowerSGD, or libtopoplace-coll (dense or
compressed) as the gradient all-reduce.

Run one process per rank (srun, or by hand). Rank and world size come
from, in order: the SPANK plugin's TOPOPLACE_RANK / TOPOPLACE_WORLD_SIZE
(topoplace backend), Slurm's SLURM_PROCID / SLURM_NTASKS, torch's RANK /
WORLD_SIZE. torch's process group (gloo) always exists - DDP needs it to
broadcast the initial parameters - and meets at MASTER_ADDR:MASTER_PORT;
libtopoplace-coll meets at TOPO_MASTER_PORT (default MASTER_PORT + 1) on
the same address.

Data: a fixed random "teacher" MLP labels Gaussian inputs (10 classes);
every rank draws its own training set from --seed + rank, the held-out
set comes from a different seed. Everything is deterministic. --fresh:
every step draws a new batch instead (its own stream per rank), so
final_loss is measured on samples no step trained on.

Printed by rank 0 (and appended to --json FILE as one JSON line):
final_loss   cross-entropy of the final model on the --samples sets, mean
             over ranks: the sets trained on, or with --fresh sets never
             trained on, two different measures; final_loss_on says which
final_loss_on
             "train" (the sets the steps drew from) or "unseen" (--fresh);
             compare final_loss only between runs that agree on it
accuracy     on the held-out set
step_s       median wall time of a training step (after 2 warm-up steps, and
             after --start-iter dense ones when compressing)
uplink_bytes_lib
             bytes the library sent between level-1 groups, all ranks
             (topoplace backend only; null otherwise)
phases_ms    where a step's time went, mean per measured step and over
             ranks: forward, backward (with DDP's wait for the all-reduce),
             optimizer; topoplace also: hook (Python time inside the comm
             hook; hook_cpu its CPU time, the rest is waiting for a core), tail (backward's time after the hook handed over the
             last bucket: waiting for the all-reduce), queued (calls
             waiting for the progress thread), and the library's own
             phases (call, inner, cross, compress, decompress; see
             Communicator.phase_times())

--backend none runs DDP with a hook that communicates nothing (each rank
keeps its own gradient): the compute floor of a step.

    srun -n 8 ddp_train.py --backend topoplace --compressor topk --steps 100
"""

import argparse
import json
import os
import statistics
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def env_int(*names):
    for n in names:
        v = os.environ.get(n)
        if v not in (None, ""):
            return int(v)
    return None


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=["gloo", "topoplace", "powersgd", "none"], default="topoplace",
                   help="gradient all-reduce: torch gloo, the libtopoplace-coll hook, torch's "
                        "PowerSGD hook on gloo (its buckets one after another, on a process group "
                        "of its own: torch 1.13's hook hangs or aborts on gloo otherwise), or none "
                        "(compute only; default topoplace)")
    p.add_argument("--compressor", choices=["none", "int8", "1bit", "topk"], default="none")
    p.add_argument("--flat", action="store_true",
                   help="compress every hop (default: only across level-1 groups)")
    p.add_argument("--no-error-feedback", action="store_true")
    p.add_argument("--algorithm", default="auto", help="dense algorithm (auto, ring, hierarchical, tree)")
    p.add_argument("--start-iter", type=int, default=0,
                   help="dense warm-up: synchronised steps reduced dense before compression starts "
                        "(default 0)")
    p.add_argument("--sync-hook", action="store_true",
                   help="reduce on the autograd thread (default: the hook returns a Future the "
                        "library's progress thread completes, overlapping backward)")
    p.add_argument("--topk-fraction", type=float, default=None)
    p.add_argument("--topk-threshold", choices=("sampled", "exact"), default=None,
                   help="top-k selection: every entry at or above a sampled threshold, up to 2k "
                        "(the library's default), or exactly the k largest")
    p.add_argument("--hook-momentum", action="store_true",
                   help="momentum in the hook (TopoplaceState momentum=0.9: the compressors send the "
                        "velocity; top-k with DGC's momentum correction and masking) with the "
                        "optimizer's momentum off")
    p.add_argument("--no-momentum-masking", action="store_true",
                   help="top-k with --hook-momentum: keep the velocity where sent "
                        "(TopoplaceState momentum_masking=False)")
    p.add_argument("--warmup-steps", type=int, default=0,
                   help="top-k: compressed steps over which the kept fraction falls from 25%% to "
                        "--topk-fraction, the velocity masked only once it is at most 2%% "
                        "(TopoplaceState warmup_steps; default 0)")
    p.add_argument("--clip-norm", type=float, default=None,
                   help="top-k: DGC's local gradient clipping, each rank's bucket to norm <= "
                        "CLIP/sqrt(ranks) (TopoplaceState clip_norm; default off)")
    p.add_argument("--per-tensor", action="store_true",
                   help="top-k: keep the fraction of each parameter's gradient, not of the "
                        "bucket (TopoplaceState per_tensor=True)")
    p.add_argument("--block", type=int, default=None,
                   help="int8 / 1-bit elements per scale (default: the library's)")
    p.add_argument("--compress-group", action="store_true",
                   help="compress the level-1 group's stages too (dense only inside hosts)")
    p.add_argument("--segment", type=int, default=None,
                   help="hierarchical int8 / 1-bit: elements per pipeline segment (default: "
                        "the library's, 1048576; 0: a bucket at once)")
    p.add_argument("--no-overlap", action="store_true",
                   help="run the pipeline's segments one stage at a time (same result)")
    p.add_argument("--powersgd-rank", type=int, default=1)
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--samples", type=int, default=2048, help="training samples per rank")
    p.add_argument("--fresh", action="store_true",
                   help="a new batch from the teacher's distribution every step (one pass, no "
                        "sample seen twice, as large-model training); the --samples set is then "
                        "only evaluated (final_loss), never trained on")
    p.add_argument("--holdout", type=int, default=4096, help="held-out samples (default 4096)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--lr-warmup", type=int, default=0,
                   help="steps over which the learning rate rises linearly from --lr/N to --lr "
                        "(Goyal et al.'s warm-up, which DGC uses; default 0: none)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bucket-mb", type=float, default=25.0, help="DDP bucket_cap_mb")
    p.add_argument("--name", default=None, help="run name in the output (default: from the options)")
    p.add_argument("--json", default=None, help="append rank 0's result line to FILE")
    p.add_argument("--plan", default=None, help="plan file (default: $TOPOPLACE_PLAN)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds a collective may wait before it fails (gloo and the library)")
    a = p.parse_args()
    if a.flat and a.compress_group:
        p.error("--flat and --compress-group: choose one (--flat compresses every level)")
    if a.steps < 1 or a.batch < 1 or a.hidden < 1:
        p.error("--steps, --batch and --hidden are at least 1")
    return a


IN, CLASSES, MOMENTUM = 64, 10, 0.9


def teacher_data(n, seed):
    return teacher_batch(n, torch.Generator().manual_seed(seed))


def teacher_batch(n, g):
    """n samples drawn from generator g, labelled by the teacher."""
    t = torch.Generator().manual_seed(12345)  # the teacher is the same everywhere
    w1, w2 = torch.randn(IN, 64, generator=t), torch.randn(64, CLASSES, generator=t)
    x = torch.randn(n, IN, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(1)
    return x, y


def powersgd_group(a, rank, world):
    """A gloo process group with a worker for each all-reduce a serial PowerSGD chain waits for."""
    from torch._C._distributed_c10d import ProcessGroupGloo

    opts = ProcessGroupGloo._Options()
    iface = os.environ.get("GLOO_SOCKET_IFNAME")
    # a comma-separated list, as torch's own gloo set-up reads it
    opts._devices = [ProcessGroupGloo.create_device(interface=i) for i in iface.split(",")] \
        if iface else [ProcessGroupGloo.create_default_device()]
    # at most three busy at once (the chain's waiting callback, the
    # hook's own waiting callback, the all-reduce it runs), with room
    opts._threads = 6
    opts._timeout = timedelta(seconds=a.timeout)
    store = dist.PrefixStore("powersgd", dist.distributed_c10d._get_default_store())
    return ProcessGroupGloo(store, rank, world, opts)


def serial_hook(hook):
    """hook, each bucket's call started when the previous bucket's future is done."""
    last = [None]

    def after(prev, state, bucket):
        prev.value()  # the previous bucket's error ends the chain here
        return hook(state, bucket).wait()

    def run(state, bucket):
        prev = last[0]
        fut = hook(state, bucket) if prev is None else \
            prev.then(lambda f: after(f, state, bucket))
        last[0] = None if bucket.is_last() else fut
        return fut
    return run


def main():
    a = parse()
    topo = a.backend == "topoplace"
    rank = env_int("TOPOPLACE_RANK", "SLURM_PROCID", "RANK") if topo else env_int("SLURM_PROCID", "RANK")
    world = env_int("TOPOPLACE_WORLD_SIZE", "SLURM_NTASKS", "WORLD_SIZE") if topo else \
        env_int("SLURM_NTASKS", "WORLD_SIZE")
    if rank is None or world is None:
        sys.exit("ddp_train: no rank/world size in the environment (TOPOPLACE_RANK, SLURM_PROCID or RANK)")
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=a.timeout))

    torch.manual_seed(a.seed)
    model = torch.nn.Sequential(torch.nn.Linear(IN, a.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(a.hidden, CLASSES))
    # PowerSGD on torch 1.13's gloo, as measured here (8 ranks, several
    # buckets): its hook issues its second and third all-reduce from a
    # future's callback, on a gloo worker thread, and waits there. With a
    # bucket per worker waiting so (gloo has 2) the job hangs; with more
    # workers the buckets' callbacks issue their all-reduces in a
    # different order on different ranks and gloo aborts ("op.preamble.
    # length <= op.nbytes"). So each bucket's hook starts when the
    # previous bucket's is done (serial_hook), on a process group of its
    # own with a worker for each wait in that chain.
    group = powersgd_group(a, rank, world) if a.backend == "powersgd" else None
    ddp = DDP(model, bucket_cap_mb=a.bucket_mb, process_group=group)
    comm = None
    if topo:
        import topoplace_coll as tc
        from topoplace_coll.hooks import TopoplaceState, allreduce_hook

        port = env_int("TOPO_MASTER_PORT") or int(os.environ["MASTER_PORT"]) + 1
        if a.plan:
            comm = tc.Communicator(plan=a.plan, rank=rank, master_addr=os.environ["MASTER_ADDR"],
                                   master_port=port, timeout_s=a.timeout)
        else:
            comm = tc.Communicator(master_addr=os.environ["MASTER_ADDR"], master_port=port,
                                   timeout_s=a.timeout)
        state = TopoplaceState(comm, compressor=a.compressor,
                               hierarchical="group" if a.compress_group else not a.flat,
                               error_feedback=not a.no_error_feedback, start_iter=a.start_iter,
                               algorithm=a.algorithm, topk_fraction=a.topk_fraction, block=a.block,
                               async_op=not a.sync_hook, momentum=MOMENTUM if a.hook_momentum else None,
                               momentum_masking=not a.no_momentum_masking, warmup_steps=a.warmup_steps,
                               clip_norm=a.clip_norm, per_tensor=a.per_tensor,
                               segment=a.segment, overlap=False if a.no_overlap else None,
                               topk_threshold=a.topk_threshold)
        ddp.register_comm_hook(state, allreduce_hook)
    elif a.backend == "powersgd":
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps

        state = ps.PowerSGDState(process_group=group, matrix_approximation_rank=a.powersgd_rank,
                                 start_powerSGD_iter=max(2, a.start_iter),
                                 use_error_feedback=not a.no_error_feedback)
        ddp.register_comm_hook(state, serial_hook(ps.powerSGD_hook))
    elif a.backend == "none":
        def no_comm(_, bucket):
            fut = torch.futures.Future()
            fut.set_result(bucket.buffer())
            return fut
        ddp.register_comm_hook(None, no_comm)

    # data seeds: seed*1000 + rank (training set), + 999 (held out), + 500
    # + rank (--fresh streams): distinct while ranks stay under 500
    if world > 499:
        sys.exit("ddp_train.py: %d ranks; the data seeds stay apart for at most 499" % world)
    x, y = teacher_data(a.samples, a.seed * 1000 + rank)
    hx, hy = teacher_data(a.holdout, a.seed * 1000 + 999)
    # with --hook-momentum the hook applies the momentum (to what it sends)
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=0.0 if topo and a.hook_momentum else MOMENTUM)
    order = torch.Generator().manual_seed(a.seed + rank)
    fresh = torch.Generator().manual_seed(a.seed * 1000 + 500 + rank) if a.fresh else None
    times = []
    # the median over compressed steps only: not the 2 first nor the dense warm-up
    skip = 2 + (a.start_iter if topo and a.compressor != "none" else 0)
    ph = {k: 0.0 for k in ("forward", "backward", "optimizer", "hook", "hook_cpu", "tail")}
    if comm is not None:
        comm.reset_stats()
    for step in range(a.steps):
        if step == min(skip, a.steps - 1):
            ph = {k: 0.0 for k in ph}
            lib0 = comm.phase_times() if comm is not None else {}
            hook0 = (state.hook_s, state.hook_cpu_s) if comm is not None else (0.0, 0.0)
        if step < a.lr_warmup:
            for g in opt.param_groups:
                g["lr"] = a.lr * (step + 1) / a.lr_warmup
        if fresh is not None:
            bx, by = teacher_batch(a.batch, fresh)
        else:
            idx = torch.randint(0, a.samples, (a.batch,), generator=order)
            bx, by = x[idx], y[idx]
        t0 = time.perf_counter()
        loss = F.cross_entropy(ddp(bx), by)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        opt.zero_grad()
        t3 = time.perf_counter()
        times.append(t3 - t0)
        ph["forward"] += t1 - t0
        ph["backward"] += t2 - t1
        ph["optimizer"] += t3 - t2
        if comm is not None and state.last_hook_t is not None:
            ph["tail"] += t2 - max(t1, state.last_hook_t)
    if comm is not None:
        ph["hook"], ph["hook_cpu"] = state.hook_s - hook0[0], state.hook_cpu_s - hook0[1]
        ph.update({k: v - lib0.get(k, 0.0) for k, v in comm.phase_times().items()})
    else:
        del ph["hook"], ph["hook_cpu"], ph["tail"]
    measured = a.steps - min(skip, a.steps - 1)
    with torch.no_grad():
        stats = torch.tensor([F.cross_entropy(model(x), y).item(),
                              float(comm.cross_bytes()) if comm is not None else 0.0,
                              statistics.median(times[skip:] or times)], dtype=torch.float64)
        dist.all_reduce(stats)
        names = sorted(ph)
        phs = torch.tensor([ph[k] for k in names], dtype=torch.float64)
        dist.all_reduce(phs)
        phases = {k: round(v * 1e3 / world / measured, 3) for k, v in zip(names, phs.tolist())}
        acc = (model(hx).argmax(1) == hy).float().mean().item()
    if rank == 0:
        comp = None if a.compressor == "none" or not topo else a.compressor
        print("ddp_train: %s phases (ms/step, mean): %s" % (
            a.name or a.backend, " ".join("%s %.2f" % kv for kv in phases.items())), flush=True)
        name = a.name or (a.backend if a.backend != "topoplace" else
                          "dense" if comp is None else
                          "%s-%s%s%s%s" % (comp, "flat" if a.flat else "group" if a.compress_group else "hier",
                                           "-noef" if a.no_error_feedback else "",
                                           "-mom" if a.hook_momentum else "",
                                           "-nomask" if a.no_momentum_masking else ""))
        res = {"name": name, "backend": a.backend, "compressor": comp if topo else
               ("powersgd" if a.backend == "powersgd" else None),
               "hierarchical": bool(topo and comp is not None and not a.flat),
               "compress_group": bool(topo and comp is not None and a.compress_group),
               "error_feedback": not a.no_error_feedback, "start_iter": a.start_iter,
               "sync_hook": a.sync_hook, "hook_momentum": a.hook_momentum,
               "momentum_masking": not a.no_momentum_masking, "block": a.block,
               "segment": a.segment, "overlap": not a.no_overlap,
               "lr_warmup": a.lr_warmup, "fresh": a.fresh, "seed": a.seed,
               "final_loss": stats[0].item() / world,
               "final_loss_on": "unseen" if a.fresh else "train",
               "accuracy": acc, "uplink_bytes_lib": int(stats[1].item()) if topo else None,
               "step_s": stats[2].item() / world, "steps": a.steps, "ranks": world,
               "phases_ms": phases,
               "params": sum(p.numel() for p in model.parameters())}
        print("ddp_train: %s: final loss (%s) %.4f, held-out accuracy %.3f, %.1f ms/step (median, "
              "mean over ranks), %s" % (name, res["final_loss_on"], res["final_loss"], acc,
                                        res["step_s"] * 1e3,
                                        "library up-link bytes %d" % res["uplink_bytes_lib"]
                                        if topo else "no library counter"), flush=True)
        if a.json:
            with open(a.json, "a") as f:
                f.write(json.dumps(res) + "\n")
    if comm is not None:
        comm.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
