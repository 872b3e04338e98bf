#!/usr/bin/python3
"""Pure-torch reference of ddp_train.py's training with top-k (issue 10):
one process simulates the 8 ranks (4 hosts x 2, two level-1 groups of 4)
of tests/bench/bench_ddp_local.sh, with ddp_train.py's model, data split,
seed, batch order, optimizer and learning rate, and the hierarchical
compressed all-reduce as libtopoplace-coll runs it: dense sum inside each
group, top-k of the group's shard sum plus residual (DGC's momentum
correction and masking with --hook-momentum), exchange between the
groups, average. No library, no sockets: the question it answers is
whether a gap to dense is the algorithm's or the implementation's.

Prints one JSON line per run (final_loss as ddp_train.py computes it:
the final model's cross-entropy on each rank's training set, mean over
ranks, and final_loss_on as its: "train", or "unseen" with --fresh, where
no step drew from that set; held-out accuracy), and with --curve the loss
of every step.

Buckets are DDP's with --bucket-mb 0.25 (torch 1.13): step 0 one bucket
of every parameter in forward order, then [4.bias 4.weight 2.bias
2.weight] and [0.bias 0.weight]; per bucket layout its own hook velocity
and library residual, as TopoplaceState keys them. Each group's bucket is
cut in 4 shards (the hierarchical reduce-scatter over 2 ranks a host,
then 2 hosts a group), each the shard one rank compresses.

Variants (--scope, --threshold, --ef, --nesterov, --decay) change one
thing of the library's scheme at a time; the defaults are the library's.
--ef ef21 / ef21m replace error feedback by EF21's trackers (not in the
library: tried 2026-12-04, far worse, see hooks.py).

    topk_reference.py --seed 1 --mode topk --start-iter 10
    topk_reference.py --seed 1 --mode dense
"""

import argparse
import json
import math

import torch
import torch.nn.functional as F

IN, CLASSES, MOMENTUM = 64, 10, 0.9
# The plan bench_ddp_local.sh makes interleaves the hosts over the 2 leaves
# (node001, node003 on one; node002, node004 on the other) and numbers the
# ranks in the plan's host order, so each level-1 group holds 4
# consecutive ranks (coll/comm.c: groups from first_rank)
GROUPS = ([0, 1, 2, 3], [4, 5, 6, 7])
SAMPLES_MAX = 65536  # the library's sampled threshold: sample size
SLACK = 2.0  # and capacity = SLACK x k


def teacher_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.Generator().manual_seed(12345)
    w1, w2 = torch.randn(IN, 64, generator=t), torch.randn(64, CLASSES, generator=t)
    x = torch.randn(n, IN, generator=g)
    y = (torch.tanh(x @ w1) @ w2).argmax(1)
    return x, y


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=["dense", "topk"], default="topk")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--samples", type=int, default=2048)
    p.add_argument("--holdout", type=int, default=4096)
    p.add_argument("--fresh", action="store_true",
                   help="a new batch from the distribution every step (ddp_train.py --fresh)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--start-iter", type=int, default=10)
    p.add_argument("--fraction", type=float, default=0.01)
    p.add_argument("--no-hook-momentum", action="store_true",
                   help="the optimizer's momentum on the compressed average (ddp_train.py "
                        "without --hook-momentum)")
    p.add_argument("--no-masking", action="store_true")
    p.add_argument("--warmup-steps", type=int, default=0,
                   help="the hook's warmup_steps: the kept fraction falls from 25%% to "
                        "--fraction over the first N compressed steps, the velocity masked "
                        "only once it is at most 2%%")
    p.add_argument("--scope", choices=["shard", "bucket"], default="shard",
                   help="k over each rank's shard of the group sum (the library), over the "
                        "group's whole bucket")
    p.add_argument("--threshold", choices=["sampled", "exact"], default="sampled",
                   help="the library's sampled threshold (65536 samples, up to 2k sent in "
                        "index order) or the exact k largest")
    p.add_argument("--ef", choices=["velocity", "gradient", "ef21", "ef21m"], default="velocity",
                   help="DGC (residual accumulates the velocity), EF on the gradient with "
                        "the momentum applied to the exchanged average (every group the same "
                        "velocity), or EF21 (Richtarik et al. 2021): each group keeps a dense "
                        "tracker of its sum and sends top-k of the difference, the step uses "
                        "the trackers' sum, with the optimizer's momentum (ef21) or on each "
                        "group's heavy-ball velocity (ef21m, EF21-SGDM's order)")
    p.add_argument("--nesterov", action="store_true", help="DGC's Nesterov form: send m u + g")
    p.add_argument("--decay", type=float, default=1.0, help="residual *= DECAY every step")
    p.add_argument("--curve", action="store_true", help="print the loss of every step")
    p.add_argument("--name", default=None)
    return p.parse_args()


def topk_mask(v, frac, threshold):
    """Which entries of v the library sends: exact k largest |v|, or its
    sampled threshold (k-th largest of an even sample, every entry at or
    above it, the first SLACK x k in index order)."""
    n = v.numel()
    a = v.abs()
    k = max(1, math.ceil(frac * n))
    if threshold == "exact" or n <= SAMPLES_MAX:
        m = torch.zeros(n, dtype=torch.bool)
        m[torch.topk(a, k, sorted=False).indices] = True
        return m
    idx = torch.arange(SAMPLES_MAX, dtype=torch.int64) * n // SAMPLES_MAX
    ks = max(1, math.ceil(frac * SAMPLES_MAX))
    t = torch.topk(a[idx], ks).values[-1]
    m = a >= t
    cap = int(min(n, k * SLACK))
    if int(m.sum()) > cap:
        keep = m.nonzero().squeeze(1)[:cap]
        m = torch.zeros(n, dtype=torch.bool)
        m[keep] = True
    return m


def shards(n):
    """The 4 shards of a group's bucket: 2 per host, then 2 hosts."""
    out = []
    for h in range(2):
        ho, hc = seg(n, 2, h)
        for g in range(2):
            so, sc = seg(hc, 2, g)
            out.append((ho + so, sc))
    return out


def seg(n, parts, i):
    base, rem = divmod(n, parts)
    return i * base + min(i, rem), base + (1 if i < rem else 0)


class Sim:
    """The hook's and the library's state, per bucket key."""

    def __init__(self, a):
        self.a = a
        self.hook_u = {}  # key -> [per-rank velocity] (dense steps)
        self.vel = {}  # key -> [per-group velocity] (library, top-k)
        self.res = {}  # key -> [per-group residual]
        self.sent = 0
        self.track = {}  # EF21: key -> [per-group tracker]
        self.total = {}  # EF21: key -> the trackers' sum
        self.gvel = {}  # EF21 ef21m: key -> [per-group velocity]

    def reduce(self, key, bufs, step):
        """The averaged bucket from the ranks' bucket buffers."""
        a = self.a
        hook_mom = not a.no_hook_momentum
        topk = a.mode == "topk" and step >= a.start_iter
        if hook_mom and a.mode == "topk" and a.ef == "velocity" and (not topk or key in self.hook_u):
            u = self.hook_u.setdefault(key, [torch.zeros_like(b) for b in bufs])
            for r, b in enumerate(bufs):
                u[r].mul_(MOMENTUM).add_(b)
                bufs[r] = u[r].clone()
            if topk:
                del self.hook_u[key]
        if a.ef in ("ef21", "ef21m"):
            return self.reduce_ef21(key, bufs, topk)
        if not topk:
            return torch.stack(bufs).sum(0) / a.ranks
        n = bufs[0].numel()
        if key not in self.res:
            self.res[key] = [torch.zeros(n) for _ in GROUPS]
            self.vel[key] = [torch.zeros(n) for _ in GROUPS]
        out = torch.zeros(n)
        for j, grp in enumerate(GROUPS):
            x = torch.stack([bufs[r] for r in grp]).sum(0)
            res, vel = self.res[key][j], self.vel[key][j]
            res.mul_(a.decay)
            if hook_mom and a.ef == "velocity":
                vel.mul_(MOMENTUM).add_(x)
                res.add_(vel * MOMENTUM + x if a.nesterov else vel)
            else:
                res.add_(x)
            spans = [(0, n)] if a.scope != "shard" else shards(n)
            t, frac = step - a.start_iter, a.fraction
            if t < a.warmup_steps:
                frac = max(a.fraction, 0.25 * math.exp(t / a.warmup_steps *
                                                       math.log(a.fraction / 0.25)))
            for o, c in spans:
                m = topk_mask(res[o:o + c], frac, a.threshold)
                out[o:o + c][m] += res[o:o + c][m]
                res[o:o + c][m] = 0.0
                if hook_mom and a.ef == "velocity" and not a.no_masking and (
                        t >= a.warmup_steps or frac <= 0.02):
                    vel[o:o + c][m] = 0.0
                self.sent += int(m.sum())
        return out / a.ranks


    def reduce_ef21(self, key, bufs, topk):
        """EF21: the dense steps set each group's tracker to its sum; then
        each group sends top-k (per shard) of sum - tracker and adds it to
        its tracker; every rank adds what all sent to the trackers' sum."""
        a = self.a
        n = bufs[0].numel()
        xs = [torch.stack([bufs[r] for r in grp]).sum(0) for grp in GROUPS]
        if a.ef == "ef21m":
            vel = self.gvel.setdefault(key, [torch.zeros(n) for _ in GROUPS])
            for j, x in enumerate(xs):
                vel[j].mul_(MOMENTUM).add_(x)
                xs[j] = vel[j].clone()
        if not topk or key not in self.track:
            self.track[key] = [x.clone() for x in xs]
            self.total[key] = torch.stack(xs).sum(0)
            return self.total[key] / a.ranks
        total = self.total[key]
        for j, x in enumerate(xs):
            d = x - self.track[key][j]
            for o, c in shards(n):
                m = topk_mask(d[o:o + c], a.fraction, a.threshold)
                self.track[key][j][o:o + c][m] += d[o:o + c][m]
                total[o:o + c][m] += d[o:o + c][m]
                self.sent += int(m.sum())
        return total / a.ranks


def main():
    a = parse()
    a.ranks = sum(len(g) for g in GROUPS)  # the 8 ranks of bench_ddp_local.sh
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    model = torch.nn.Sequential(torch.nn.Linear(IN, a.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(a.hidden, a.hidden), torch.nn.ReLU(),
                                torch.nn.Linear(a.hidden, CLASSES))
    params = list(model.parameters())
    # DDP's buckets (see the docstring): parameter indices in bucket order
    first = [list(range(len(params)))]
    later = [[5, 4, 3, 2], [1, 0]]
    data = [teacher_data(a.samples, a.seed * 1000 + r) for r in range(a.ranks)]
    hx, hy = teacher_data(a.holdout, a.seed * 1000 + 999)
    orders = [torch.Generator().manual_seed(a.seed + r) for r in range(a.ranks)]
    fresh = [torch.Generator().manual_seed(a.seed * 1000 + 500 + r) for r in range(a.ranks)]
    dense_mom = a.mode == "dense" or a.no_hook_momentum or a.ef in ("gradient", "ef21")
    opt = torch.optim.SGD(params, lr=a.lr, momentum=MOMENTUM if dense_mom else 0.0)
    sim = Sim(a)
    curve = []
    for step in range(a.steps):
        grads = []
        losses = []
        for r in range(a.ranks):
            if a.fresh:
                xb, yb = fresh_batch(a.batch, fresh[r])
            else:
                x, y = data[r]
                idx = torch.randint(0, a.samples, (a.batch,), generator=orders[r])
                xb, yb = x[idx], y[idx]
            model.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            losses.append(loss.item())
            grads.append([p.grad.detach().clone() for p in params])
        curve.append(sum(losses) / len(losses))
        buckets = first if step == 0 else later
        for bi, plist in enumerate(buckets):
            bufs = [torch.cat([g[i].reshape(-1) for i in plist]) for g in grads]
            key = (bi, bufs[0].numel())
            avg = sim.reduce(key, bufs, step)
            at = 0
            for i in plist:
                n = params[i].numel()
                params[i].grad = avg[at:at + n].view_as(params[i]).clone()
                at += n
        opt.step()
    with torch.no_grad():
        final = sum(F.cross_entropy(model(x), y).item() for x, y in data) / a.ranks
        acc = (model(hx).argmax(1) == hy).float().mean().item()
    res = {"name": a.name or a.mode, "seed": a.seed, "mode": a.mode, "steps": a.steps,
           "fresh": a.fresh, "scope": a.scope, "threshold": a.threshold, "ef": a.ef,
           "nesterov": a.nesterov, "decay": a.decay, "start_iter": a.start_iter, "warmup_steps": a.warmup_steps,
           "final_loss": final, "final_loss_on": "unseen" if a.fresh else "train",
           "accuracy": acc, "sent": sim.sent}
    if a.curve:
        res["curve"] = [round(v, 5) for v in curve]
    print(json.dumps(res), flush=True)


def fresh_batch(n, gen):
    """n new samples of the teacher's distribution."""
    t = torch.Generator().manual_seed(12345)
    w1, w2 = torch.randn(IN, 64, generator=t), torch.randn(64, CLASSES, generator=t)
    x = torch.randn(n, IN, generator=gen)
    return x, (torch.tanh(x @ w1) @ w2).argmax(1)


if __name__ == "__main__":
    main()
