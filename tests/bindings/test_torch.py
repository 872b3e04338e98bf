"""bindings/torch/topoplace_coll against torch itself (run by tests/bindings/torch.sh).

4 ranks on this host, over loopback, from a plan `topoplace plan` made for
2 hosts x 2 GPUs on a generated 2-leaf fabric (so the communicator has
shared-memory pairs, TCP pairs and two level-1 groups). Each rank joins
torch's gloo process group and a topoplace_coll.Communicator, then:
  - DDP with allreduce_hook (dense) and DDP with no hook (torch's gloo
    all-reduce) train the same model from the same seed on the same
    batches, with gradient accumulation under no_sync() every third step:
    the parameters must agree within fp32 reduction-order tolerance (the
    library sums the 4 ranks in its ring's order, gloo in its own, so a
    sum may differ in the last bit; 1/4 scaling is exact either way);
    the largest difference is printed; with small buckets (several
    Futures in flight at once) the asynchronous hook gives parameters
    bitwise equal to the synchronous one, dense and int8-compressed
  - all_reduce_async: several calls in flight complete in order with the
    right sums, a synchronous call after them waits its turn, bad
    arguments raise at once
  - all_reduce on odd sizes (0, 1, 7, 1023, 65537) and every supported
    dtype equals the reference reduced in float64; ops sum/avg/max/min;
    algorithms ring/tree/hierarchical
  - rejected clearly: unsupported dtypes (uint8, int16, complex64, bool),
    non-contiguous tensors, unknown op/algorithm/compressor, a closed
    communicator, a rank the plan lacks
  - compression: when the library lacks it, every compressor raises
    CompressionUnavailable (all_reduce and TopoplaceState); when it has
    it, each compressor gives every rank the same result and, with error
    feedback, the mean of repeated calls approaches the dense average;
    the hook's momentum (TopoplaceState momentum=): the velocity it keeps
    for int8 / 1-bit is m u + g; top-k's, in the library, matches DGC done
    by hand (masked where this rank sent, or not at all), flat and
    hierarchical (the group's velocity and residual per shard);
    warmup_steps lowers the top-k fraction from 25% to its target; the
    dense steps' velocity carries over into the library's; per_tensor
    and clip_norm as by hand
Prints TAP-ish "ok"/"FAIL" lines; exit 0 all passed, 1 a failure, 77 no torch.
"""

import os
import sys
import traceback

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
except ImportError as e:
    print("SKIP: torch not importable by %s: %s (apt-get install python3-torch)" % (sys.executable, e))
    sys.exit(77)

WORLD = 4
STEPS = 12


def model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(33, 257), torch.nn.ReLU(), torch.nn.Linear(257, 129), torch.nn.ReLU(),
        torch.nn.Linear(129, 10))


def train(ddp, rank, momentum=0.9):
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=momentum)
    g = torch.Generator().manual_seed(1000 + rank)
    for step in range(STEPS):
        x = torch.randn(16, 33, generator=g)
        y = torch.randint(0, 10, (16,), generator=g)
        if step % 3 == 1:  # accumulate this micro-batch without syncing
            with ddp.no_sync():
                torch.nn.functional.cross_entropy(ddp(x), y).backward()
            continue
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
        opt.zero_grad()
    return [p.detach().clone() for p in ddp.parameters()]


class Checks:
    def __init__(self, rank):
        self.rank, self.failed, self.lines = rank, 0, []

    def ok(self, cond, what):
        if not cond:
            self.failed += 1
        self.lines.append("%s - %s" % ("ok" if cond else "FAIL", what))

    def raises(self, exc, needle, what, fn, *a, **kw):
        try:
            fn(*a, **kw)
        except exc as e:
            self.ok(needle in str(e), "%s: %s: %s" % (what, type(e).__name__, e))
            return
        except Exception as e:  # noqa: BLE001 - report the wrong kind
            self.ok(False, "%s: raised %s: %s" % (what, type(e).__name__, e))
            return
        self.ok(False, "%s: no exception" % what)


def check_ddp(c, tc, comm, rank):
    from torch.nn.parallel import DistributedDataParallel as DDP
    from topoplace_coll.hooks import TopoplaceState, allreduce_hook

    # (DDP's first bucket holds 1 MB whatever bucket_cap_mb says: one bucket here)
    ref = train(DDP(model(7), bucket_cap_mb=0.05), rank)
    ddp = DDP(model(7), bucket_cap_mb=0.05)
    state = TopoplaceState(comm)
    ddp.register_comm_hook(state, allreduce_hook)
    got = train(ddp, rank)
    diff = max((a - b).abs().max().item() for a, b in zip(ref, got))
    scale = max(a.abs().max().item() for a in ref)
    bitwise = all(torch.equal(a, b) for a, b in zip(ref, got))
    c.ok(diff <= 1e-5 * scale, "DDP %d steps, dense hook vs gloo: max |diff| %.3g (params up to %.3g)%s"
         % (STEPS, diff, scale, ", bitwise equal" if bitwise else ""))
    # no_sync steps do not count: 12 steps, every third accumulated
    c.ok(state.iter == STEPS - STEPS // 3, "state.iter counts synchronised steps (%d)" % state.iter)
    c.ok(len(state.keys) == 0, "dense: no error-feedback keys")
    # all ranks hold the same parameters
    flat = torch.cat([p.flatten() for p in got])
    mx, mn = flat.clone(), flat.clone()
    comm.all_reduce(mx, op="max")
    comm.all_reduce(mn, op="min")
    c.ok(torch.equal(mx, mn), "parameters identical on every rank")
    # the DDP model's group must be the communicator's ranks: a 2-rank
    # group beside the 4-rank communicator is refused at once (on the
    # ranks outside it too), the whole group accepted
    sub = dist.new_group([0, 1])
    c.raises(ValueError, "the communicator has 4 ranks, the process group %s"
             % ("has 2" if rank < 2 else "does not hold this rank"),
             "TopoplaceState(process_group=) of 2 ranks beside a 4-rank communicator refused",
             TopoplaceState, comm, process_group=sub)
    whole = dist.new_group([0, 1, 2, 3])
    c.ok(TopoplaceState(comm, process_group=whole).check_group(),
         "TopoplaceState(process_group=) of the communicator's 4 ranks accepted")
    check_async_hook(c, tc, comm, rank)


def check_async_hook(c, tc, comm, rank):
    """The progress thread changes when the library runs, not what it
    computes: with several buckets in flight, async == sync bitwise."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    from topoplace_coll.hooks import TopoplaceState, allreduce_hook

    first = dist._DEFAULT_FIRST_BUCKET_BYTES
    dist._DEFAULT_FIRST_BUCKET_BYTES = 16 << 10
    try:
        for comp in (None, "int8") if tc.have_compression() else (None,):
            got = {}
            for async_op in (False, True):
                ddp = DDP(model(11), bucket_cap_mb=0.03)
                state = TopoplaceState(comm, compressor=comp, async_op=async_op, key_base=500 + 100 * async_op)
                ddp.register_comm_hook(state, allreduce_hook)
                got[async_op] = train(ddp, rank)
            nb = len({k[0] for k in state.keys}) if comp else 0
            c.ok(all(torch.equal(a, b) for a, b in zip(got[False], got[True])),
                 "DDP %s hook: asynchronous == synchronous bitwise (%s)"
                 % (comp or "dense", "%d buckets" % nb if comp else "several buckets"))
    finally:
        dist._DEFAULT_FIRST_BUCKET_BYTES = first


def check_async(c, tc, comm, rank):
    ts = [torch.full((n,), float(rank + 1)) for n in (100003, 7, 65537, 1)]
    futs = [comm.all_reduce_async(t, op="sum", algorithm=a)
            for t, a in zip(ts, ("ring", "tree", "hierarchical", "auto"))]
    t = torch.full((9,), float(rank))
    comm.all_reduce(t)  # queued behind the four, on the same thread
    done = [f.wait() for f in futs]
    c.ok(all(d is x and bool((x == 10.0).all()) for d, x in zip(done, ts)) and bool((t == 6.0).all()),
         "all_reduce_async: 4 calls in flight and a synchronous one after them: sums right")
    c.raises(ValueError, "op", "all_reduce_async: bad op raises at once", comm.all_reduce_async,
             torch.zeros(3), op="xor")


def check_allreduce(c, tc, comm, rank):
    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]
    for n in (0, 1, 7, 1023, 65537):
        for dt in dtypes:
            for op in ("sum", "avg", "max", "min"):
                base = [torch.randint(-50, 50, (n,), generator=torch.Generator().manual_seed(n * 31 + r))
                        .to(torch.float64) for r in range(comm.size)]
                t = base[rank].to(dt, copy=True)
                comm.all_reduce(t, op=op)
                stack = torch.stack(base) if n else torch.zeros(comm.size, 0, dtype=torch.float64)
                want = {"sum": stack.sum(0), "max": stack.max(0).values if n else stack.sum(0),
                        "min": stack.min(0).values if n else stack.sum(0)}.get(op)
                if op == "avg":
                    want = stack.sum(0) / comm.size
                    if not dt.is_floating_point:
                        want = torch.div(stack.sum(0), comm.size, rounding_mode="trunc")
                tol = {torch.float16: 0.5, torch.bfloat16: 2.0}.get(dt, 0.0)
                err = (t.to(torch.float64) - want).abs().max().item() if n else 0.0
                if err > tol:
                    c.ok(False, "all_reduce n=%d %s %s: max error %g" % (n, dt, op, err))
    c.ok(True, "all_reduce: 5 sizes x 6 dtypes x 4 ops = reference (float64; fp16/bf16 within rounding)")
    for algo in ("ring", "tree", "hierarchical", "auto"):
        t = torch.full((100003,), float(rank + 1))
        comm.all_reduce(t, algorithm=algo)
        c.ok(bool((t == 10.0).all()), "algorithm %s: 100003 floats summed" % algo)
    # a view: contiguous slice of a larger tensor reduces only its own part
    big = torch.full((10,), float(rank))
    comm.all_reduce(big[2:5])
    c.ok(big[2:5].tolist() == [6.0] * 3 and big[0].item() == rank, "contiguous slice in place")
    t = torch.arange(5, dtype=torch.float32) * (rank + 1)
    comm.broadcast(t, root=2)
    c.ok(t.tolist() == [0.0, 3.0, 6.0, 9.0, 12.0], "broadcast from rank 2")
    comm.barrier()


def check_rejects(c, tc, comm, rank, plan):
    for dt in (torch.uint8, torch.int16, torch.complex64, torch.bool):
        c.raises(TypeError, "not supported", "dtype %s rejected" % dt, comm.all_reduce, torch.zeros(4, dtype=dt))
    c.raises(ValueError, "not contiguous", "non-contiguous rejected", comm.all_reduce, torch.zeros(4, 4).t())
    c.raises(ValueError, "op 'prod'", "unknown op rejected", comm.all_reduce, torch.zeros(4), op="prod")
    c.raises(ValueError, "algorithm 'fastest'", "unknown algorithm rejected", comm.all_reduce, torch.zeros(4),
             algorithm="fastest")
    c.raises(ValueError, "compressor 'zip'", "unknown compressor rejected", comm.all_reduce, torch.zeros(4),
             compressor="zip")
    c.raises(TypeError, "float32", "compressed float64 rejected", comm.all_reduce,
             torch.zeros(4, dtype=torch.float64), compressor="int8")
    c.raises(TypeError, "torch.Tensor", "a list rejected", comm.all_reduce, [1.0, 2.0])
    # every argument checked, also those the call does not use
    c.raises(ValueError, "algorithm 'bogus'", "algorithm checked on a compressed call", comm.all_reduce,
             torch.zeros(4), compressor="int8", algorithm="bogus")
    c.raises(ValueError, "block -5", "block checked on a dense call", comm.all_reduce, torch.zeros(4), block=-5)
    c.raises(ValueError, "topk_fraction", "topk_fraction checked on a dense call", comm.all_reduce,
             torch.zeros(4), topk_fraction=-1)
    c.raises(ValueError, "hierarchical", "hierarchical checked on a dense call", comm.all_reduce,
             torch.zeros(4), hierarchical="garbage")
    c.raises(ValueError, "key -1", "a negative key refused (it would share 2**64-1's residuals)",
             comm.all_reduce, torch.zeros(4), compressor="int8", key=-1)
    c.raises(TypeError, "key must be an integer", "a float key refused", comm.all_reduce, torch.zeros(4),
             compressor="int8", key=1.5)
    c.raises(ValueError, "topk_fraction 5.0", "TopoplaceState checks the compressor's options at once",
             tc.hooks.TopoplaceState, comm, compressor="topk", topk_fraction=5.0)
    c.raises(ValueError, "multiple of 32", "TopoplaceState: a 1-bit block not a multiple of 32",
             tc.hooks.TopoplaceState, comm, compressor="1bit", block=48)
    if rank == 0:
        c.raises(tc.TopoplaceError, "rank 9", "rank outside the plan: library's reason", tc.Communicator,
                 plan=plan, rank=9, master_addr="127.0.0.1", master_port=1)
        c.raises(tc.TopoplaceError, "nosuch.json", "missing plan named", tc.Communicator,
                 plan="/nonexistent/nosuch.json", rank=0, master_addr="127.0.0.1", master_port=1)


def check_compression(c, tc, comm, rank):
    from topoplace_coll.hooks import TopoplaceState

    kinds = ("int8", "1bit", "topk")
    if not tc.have_compression():
        for k in kinds:
            c.raises(tc.CompressionUnavailable, "has no compression", "%s: library without compression" % k,
                     comm.all_reduce, torch.zeros(8), compressor=k)
            c.raises(tc.CompressionUnavailable, "has no compression", "%s: TopoplaceState refuses" % k,
                     TopoplaceState, comm, compressor=k)
        c.lines.append("# compression absent from %s: the error path was checked" % tc.library_path())
        return
    c.lines.append("# compression present in %s: running each compressor" % tc.library_path())
    from torch.nn.parallel import DistributedDataParallel as DDP
    from topoplace_coll.hooks import allreduce_hook

    # the hook compressed, after 3 dense steps: one residual key per
    # (bucket index, size), parameters finite and the same on every rank
    ddp = DDP(model(7), bucket_cap_mb=0.05)
    state = TopoplaceState(comm, compressor="int8", start_iter=3)
    ddp.register_comm_hook(state, allreduce_hook)
    got = torch.cat([p.flatten() for p in train(ddp, rank)])
    nb = len({k[0] for k in state.keys})
    c.ok(nb >= 1 and len(state.keys) == nb, "int8 hook: %d residual keys for %d buckets %s"
         % (len(state.keys), nb, sorted(state.keys)))
    mx, mn = got.clone(), got.clone()
    comm.all_reduce(mx, op="max")
    comm.all_reduce(mn, op="min")
    c.ok(bool(torch.isfinite(got).all()) and torch.equal(mx, mn), "int8 hook: parameters finite, same on every rank")
    check_dgc(c, comm, rank)
    check_rebuild(c, comm, rank)
    g = torch.Generator().manual_seed(99)
    data = torch.randn(comm.size, 4099, generator=g)
    want = data.mean(0)
    for k in kinds:
        for hier in (True, False):
            # error feedback: the mean of the results of repeated calls on
            # the same input approaches the true average (what compression
            # drops comes back later), so its error shrinks with the calls
            acc, errs = torch.zeros(4099), {}
            key = 1 + kinds.index(k) * 2 + hier
            for call in range(1, 41):
                t = data[rank].clone()
                # top-k at 10% (the default 1% needs ~100 calls to come round)
                comm.all_reduce(t, op="avg", compressor=k, hierarchical=hier, key=key,
                                topk_fraction=0.1 if k == "topk" else None)
                acc += t
                if call in (10, 40):
                    errs[call] = ((acc / call) - want).norm().item() / want.norm().item()
            c.ok(errs[40] < 0.01 or errs[40] < 0.6 * errs[10],
                 "%s hierarchical=%s, error feedback: relative error of the mean %.3g after 10 calls, %.3g "
                 "after 40" % (k, hier, errs[10], errs[40]))
            mx, mn = t.clone(), t.clone()
            comm.all_reduce(mx, op="max")
            comm.all_reduce(mn, op="min")
            c.ok(torch.equal(mx, mn), "%s hierarchical=%s: the same result on every rank" % (k, hier))
    # the segment pipeline through the binding: overlapped and one stage at
    # a time give the same bits; hierarchical="group" runs; bad values raise
    got = []
    for key, overlap in ((90, True), (91, False)):
        t = data[rank].clone()
        comm.all_reduce(t, op="avg", compressor="int8", key=key, segment=1024, overlap=overlap)
        got.append(t)
    c.ok(torch.equal(got[0], got[1]), "int8 segment=1024: overlap on and off give the same bits")
    # top-k's threshold: on 1,000 equal entries the sampled threshold sends
    # every entry at it up to 2k (20), the exact one the first k (10)
    for thr, want_nz in (("sampled", 20), ("exact", 10), (None, 20)):
        t = torch.ones(1000)
        comm.all_reduce(t, compressor="topk", hierarchical=False, error_feedback=False,
                        topk_fraction=0.01, topk_threshold=thr)
        nz = int((t != 0).sum())
        c.ok(nz == want_nz, "topk_threshold=%s: %d entries sent of 1,000 equal ones (want %d)"
             % (thr, nz, want_nz))
    c.raises(ValueError, "topk_threshold", "unknown topk_threshold rejected", comm.all_reduce, torch.zeros(4),
             compressor="topk", topk_threshold="approx")
    c.raises(ValueError, "topk_threshold", "TopoplaceState checks topk_threshold at once", TopoplaceState,
             comm, compressor="topk", topk_threshold="exactly")
    c.raises(ValueError, "segment", "negative segment rejected", comm.all_reduce, torch.zeros(4),
             compressor="int8", segment=-1)
    c.raises(ValueError, "segment", "bool segment rejected", comm.all_reduce, torch.zeros(4),
             compressor="int8", segment=True)
    c.raises(ValueError, "overlap", "overlap=1 rejected", comm.all_reduce, torch.zeros(4),
             compressor="int8", overlap=1)
    c.raises(ValueError, "hierarchical", "bad hierarchical rejected", comm.all_reduce, torch.zeros(4),
             compressor="int8", hierarchical="leaf")


def check_rebuild(c, comm, rank):
    """DDP's rebuild after the first step can keep a bucket's index and
    size and reverse its parameters (a model under one bucket's size):
    the first layout's residual must not be added to the second's
    gradients. A new layout starts from a fresh residual; the old key is
    freed; a layout that stays keeps its residual. Then a float64 bucket:
    compressed as float32, the same values, handed back as float64."""
    from topoplace_coll.hooks import TopoplaceState, allreduce_hook

    a, b = torch.zeros(300), torch.zeros(200)
    ref = torch.arange(1.0, 501.0)  # rank 0's gradient; the others' are zero
    grad = ref if rank == 0 else torch.zeros(500)
    state = TopoplaceState(comm, compressor="topk", hierarchical=False, topk_fraction=0.01,
                           async_op=rank % 2 == 0)
    allreduce_hook(state, FakeBucket(grad.clone(), params=[a, b])).wait()
    out = allreduce_hook(state, FakeBucket(torch.zeros(500), params=[b, a])).wait()
    c.ok(torch.count_nonzero(out).item() == 0 and len(state.keys) == 1,
         "top-k hook, a bucket rebuilt with its parameters reversed: %d entries of the old layout's "
         "residual sent, %d keys kept" % (torch.count_nonzero(out).item(), len(state.keys)))
    allreduce_hook(state, FakeBucket(grad.clone(), params=[b, a])).wait()
    out = allreduce_hook(state, FakeBucket(torch.zeros(500), params=[b, a])).wait()
    # rank 0's residual: grad but the entries sent first (the largest,
    # from 495 on), next sent where grad has them, over the ranks
    sent = out.nonzero().flatten()
    c.ok(len(sent) > 0 and int(sent.max()) < 495 and
         torch.equal(out[sent], ref[sent] / comm.size),
         "top-k hook, the same layout again: its residual sent where it belongs (%s)" % sent.tolist())
    x = torch.linspace(-1, 1, 1000, dtype=torch.float64) * (rank + 1)
    got = []
    for dt in (torch.float32, torch.float64):
        st = TopoplaceState(comm, compressor="int8", key_base=1000 + 10 * len(got), async_op=rank < 2)
        got.append(allreduce_hook(st, FakeBucket(x.to(dt).clone())).wait())
    c.ok(got[1].dtype == torch.float64 and torch.equal(got[1].float(), got[0]),
         "int8 hook on a float64 bucket: compressed as float32, handed back as %s" % got[1].dtype)


def intra_group_bytes(comm):
    """Bytes this rank sent to ranks of its own level-1 group since
    reset_stats()."""
    return sum(comm.sent_bytes(p) for p in range(comm.size) if p != comm.rank) - comm.cross_bytes()


def check_group_level(c, tc, rank, plan, port):
    """hierarchical='group' where each level-1 group holds 2 hosts (the plan
    of torch.sh: 4 hosts x 1 GPU on 2 leaves): int8 compresses the group
    level's reduce-scatter and all-gather, so the bytes to this rank's
    group peer drop (int8: ~3.9x; at least 3x asked) against
    hierarchical=True (that level dense), and the average is the float64
    reference's within int8's bound, the same on every rank; with the
    segment pipeline (segment=1024) too. A group of one host has no
    group-level traffic at all: that fails here, not passes.
    The bound: int8 rounds to the nearest step, at most 1/254 of its
    block's largest |value| off; with every input within A, the quantised
    hops carry values of at most A (the group reduce-scatter: one rank's),
    2A (the cross reduce-scatter: a group's sum) and 4A twice (the cross
    and group all-gathers' owners: the whole sum); with the group level
    dense only the cross two. The average divides the sum's error by 4."""
    if not tc.have_compression():
        return
    comm = tc.Communicator(plan=plan, rank=rank, master_addr="127.0.0.1", master_port=port, timeout_s=60)
    c.ok(comm.size == WORLD and comm.nhosts == WORLD, "group plan: %d ranks on %d hosts" % (comm.size, comm.nhosts))
    g = torch.Generator().manual_seed(123)
    data = torch.randn(comm.size, 4099, generator=g)
    want = data.double().mean(0)
    a = data.abs().max().item()
    hops = {True: 2 + 4, "group": 1 + 2 + 4 + 4}
    moved = {}
    for hier, seg, key in ((True, None, 1), ("group", None, 2), ("group", 1024, 3)):
        t = data[rank].clone()
        comm.reset_stats()
        comm.all_reduce(t, op="avg", compressor="int8", hierarchical=hier, key=key, segment=seg)
        moved[hier, seg] = intra_group_bytes(comm)
        err = (t.double() - want).abs().max().item()
        lim = hops[hier] * a / 254 / comm.size * 1.001
        mx, mn = t.clone(), t.clone()
        comm.all_reduce(mx, op="max")
        comm.all_reduce(mn, op="min")
        c.ok(err <= lim and torch.equal(mx, mn), "int8 hierarchical=%r segment=%s: max error %.3g (bound %.3g), "
             "the same on every rank" % (hier, seg, err, lim))
    dense, comp = moved[True, None], moved["group", None]
    c.ok(dense > 0 and comp * 3 <= dense, "int8 hierarchical='group': %d bytes to the group peer, %d with that "
         "level dense (%.1fx)" % (comp, dense, dense / comp if comp else float("inf")))
    c.ok(0 < moved["group", 1024] * 3 <= dense, "int8 hierarchical='group' segment=1024: %d bytes to the group "
         "peer" % moved["group", 1024])
    # 1-bit on the same levels: one result on every rank, fewer bytes to
    # the group peer than int8's
    t = data[rank].clone()
    comm.reset_stats()
    comm.all_reduce(t, op="avg", compressor="1bit", hierarchical="group", key=4)
    one = intra_group_bytes(comm)
    mx, mn = t.clone(), t.clone()
    comm.all_reduce(mx, op="max")
    comm.all_reduce(mn, op="min")
    c.ok(bool(torch.isfinite(t).all()) and torch.equal(mx, mn) and 0 < one < comp,
         "1bit hierarchical='group': the same on every rank, %d bytes to the group peer (int8 %d)" % (one, comp))
    comm.close()


class FakeBucket:
    """The part of DDP's GradBucket allreduce_hook reads."""

    def __init__(self, buf, sizes=None, params=()):
        self.buf = buf
        self.sizes = sizes or [buf.numel()]
        self.params = list(params)

    def buffer(self):
        return self.buf

    def parameters(self):
        return self.params

    def gradients(self):
        return list(self.buf.split(self.sizes))

    def index(self):
        return 0

    def is_last(self):
        return True


def topk_momentum_reference(comm, grads, m, frac, mask, dense=0):
    """DGC on every rank, flat: u = m u + g, v += u, send the top-k of v,
    clear v (and, mask, u) where sent; the averages of what the ranks sent.
    The first `dense` steps send u whole (momentum SGD)."""
    u, v, outs = torch.zeros_like(grads[0]), torch.zeros_like(grads[0]), []
    k = -(-int(frac * 1e6) * grads[0].numel() // 1000000)
    for step, g in enumerate(grads):
        u = m * u + g
        if step < dense:
            outs.append(comm.all_reduce(u.double(), op="avg").float())
            continue
        v += u
        idx = v.abs().topk(k).indices
        sent = torch.zeros_like(v)
        sent[idx] = v[idx]
        v[idx] = 0
        if mask:
            u[idx] = 0
        outs.append(comm.all_reduce(sent.double(), op="avg").float())
    return outs


def check_dgc(c, comm, rank):
    """Momentum: int8 / 1-bit in the hook (it sends u = m u + g); top-k in
    the library, which keeps u where it compresses and clears it exactly
    where this rank sent (flat: checked against DGC done by hand)."""
    from topoplace_coll.hooks import TopoplaceState, allreduce_hook

    c.raises(ValueError, "momentum", "momentum without a compressor refused", TopoplaceState, comm,
             momentum=0.9)
    c.raises(ValueError, "momentum", "top-k momentum without error feedback refused", TopoplaceState,
             comm, compressor="topk", momentum=0.9, error_feedback=False)
    c.raises(ValueError, "warmup_steps", "warmup_steps with 1bit refused", TopoplaceState, comm,
             compressor="1bit", warmup_steps=3)

    # the library's rules, said before it is called (ValueError, as the module says)
    c.raises(ValueError, "momentum", "library momentum with int8 refused", comm.all_reduce,
             torch.ones(64), compressor="int8", momentum=0.5)
    c.raises(ValueError, "op 'max'", "compressed max refused", comm.all_reduce,
             torch.ones(64), op="max", compressor="int8")
    g = torch.Generator().manual_seed(5 + rank)
    grads = [torch.randn(4099, generator=g) for _ in range(4)]
    for mask in (True, False):
        want = topk_momentum_reference(comm, grads, 0.5, 0.05, mask)
        for async_op in (False, True):
            state = TopoplaceState(comm, compressor="topk", momentum=0.5, topk_fraction=0.05,
                                   hierarchical=False, momentum_masking=mask,
                                   key_base=700 + 10 * async_op + 20 * mask, async_op=async_op)
            err = max((allreduce_hook(state, FakeBucket(gr.clone())).wait() - w).abs().max().item()
                      for gr, w in zip(grads, want))
            c.ok(err < 1e-5, "top-k momentum in the library (masking=%s, async_op=%s): 4 steps as "
                 "DGC by hand, max error %.2g" % (mask, async_op, err))
    want = topk_momentum_reference(comm, grads, 0.5, 0.05, True, dense=2)
    state = TopoplaceState(comm, compressor="topk", momentum=0.5, topk_fraction=0.05, hierarchical=False,
                           start_iter=2, key_base=740)
    err = max((allreduce_hook(state, FakeBucket(gr.clone())).wait() - w).abs().max().item()
              for gr, w in zip(grads, want))
    c.ok(err < 1e-5 and not state.velocity, "top-k momentum after 2 dense steps: the dense velocity "
         "carries over into the library's, max error %.2g" % err)
    state = TopoplaceState(comm, compressor="1bit", momentum=0.5, key_base=720, async_op=False)
    grads = [torch.randn(4099, generator=g) for _ in range(2)]
    for grad in grads:
        allreduce_hook(state, FakeBucket(grad.clone())).wait()
    c.ok(torch.equal(state.velocity[state.key(FakeBucket(grads[0]))], 0.5 * grads[0] + grads[1]),
         "hook momentum, 1-bit: velocity 0.5 u + g, never masked")
    state = TopoplaceState(comm, compressor="topk", topk_fraction=0.01, warmup_steps=4)
    fr = []
    for state.iter in range(6):
        fr.append(state.fraction())
    c.ok(fr[0] == 0.25 and fr[0] > fr[1] > fr[2] > fr[3] > 0.01 and fr[4] == fr[5] == 0.01,
         "warmup_steps: kept fraction falls from 25%% to 1%%: %s" % ["%.3g" % f for f in fr])
    mk = []
    for state.iter in range(6):
        mk.append(state.masking())
    c.ok(mk == [f <= 0.02 for f in fr] and mk[-1],
         "warmup_steps: momentum masked only once the fraction is at most 2%%: %s" % mk)
    state.momentum_masking = False
    c.ok(not any(state.masking() for state.iter in range(6)), "momentum_masking=False: never masked")
    check_dgc_hier(c, comm, rank)
    check_topk_recipes(c, comm, rank)


def topk_hier_reference(grads, m, frac, mask):
    """DGC in the hierarchical schedule, by hand, from every rank's
    gradients (grads[rank][step]): each host (here a level-1 group) sums
    its 2 ranks' gradients; each half of that sum (the shard one rank
    compresses) has its velocity u = m u + x and residual v += u; the
    top-k of each half of v is sent and cleared there (and, mask, u);
    the result is the sum of both groups' messages over the 4 ranks."""
    n = grads[0][0].numel()
    halves = [(0, (n + 1) // 2), ((n + 1) // 2, n // 2)]  # the library's split: first the larger
    u = [torch.zeros(n) for _ in range(2)]
    v = [torch.zeros(n) for _ in range(2)]
    outs = []
    for step in range(len(grads[0])):
        out = torch.zeros(n)
        for h in range(2):
            x = grads[2 * h][step] + grads[2 * h + 1][step]
            u[h] = m * u[h] + x
            v[h] += u[h]
            for o, cnt in halves:
                k = -(-int(frac * 1e6) * cnt // 1000000)
                idx = v[h][o:o + cnt].abs().topk(k).indices + o
                out[idx] += v[h][idx]
                v[h][idx] = 0
                if mask:
                    u[h][idx] = 0
        outs.append(out / 4)
    return outs


def check_dgc_hier(c, comm, rank):
    """The bench's top-k (hierarchical=True, momentum in the library): the
    velocity and residual are the group's, one per shard; 5 steps against
    topk_hier_reference (ranks 0-1 one host and group, 2-3 the other)."""
    from topoplace_coll.hooks import TopoplaceState, allreduce_hook

    grads = [[torch.randn(4099, generator=torch.Generator().manual_seed(900 + 10 * r + s))
              for s in range(5)] for r in range(4)]
    for mask in (True, False):
        want = topk_hier_reference(grads, 0.9, 0.05, mask)
        state = TopoplaceState(comm, compressor="topk", momentum=0.9, topk_fraction=0.05,
                               momentum_masking=mask, key_base=760 + 10 * mask)
        err = max((allreduce_hook(state, FakeBucket(gr.clone())).wait() - w).abs().max().item()
                  for gr, w in zip(grads[rank], want))
        c.ok(err < 1e-5, "hierarchical top-k momentum (masking=%s): 5 steps as DGC by hand on the "
             "groups' shards, max error %.2g" % (mask, err))


def check_topk_recipes(c, comm, rank):
    """per_tensor: each parameter's slice of the bucket is its own top-k
    call (and residual); clip_norm: each rank's bucket scaled to norm <=
    clip_norm / sqrt(ranks) before it is sent."""
    from topoplace_coll.hooks import TopoplaceState, allreduce_hook

    c.raises(ValueError, "clip_norm", "clip_norm with 1bit refused", TopoplaceState, comm,
             compressor="1bit", clip_norm=1.0)
    c.raises(ValueError, "per_tensor", "per_tensor with int8 refused", TopoplaceState, comm,
             compressor="int8", per_tensor=True)
    g = torch.Generator().manual_seed(50 + rank)
    sizes = [7, 3001, 130]
    grads = [torch.randn(sum(sizes), generator=g) * torch.linspace(0.1, 10, sum(sizes)) for _ in range(3)]
    parts = [topk_momentum_reference(comm, [gr.split(sizes)[i] for gr in grads], 0.0, 0.05, False)
             for i in range(len(sizes))]
    want = [torch.cat([p[s] for p in parts]) for s in range(len(grads))]
    for async_op in (False, True):
        state = TopoplaceState(comm, compressor="topk", topk_fraction=0.05, hierarchical=False,
                               per_tensor=True, key_base=800 + 10 * async_op, async_op=async_op)
        err = max((allreduce_hook(state, FakeBucket(gr.clone(), sizes)).wait() - w).abs().max().item()
                  for gr, w in zip(grads, want))
        c.ok(err < 1e-5, "per_tensor (async_op=%s): top-5%% of each slice as by hand, max error %.2g"
             % (async_op, err))
    x = torch.full((1000,), float(rank + 1))
    want = comm.all_reduce(x * torch.clamp(1.5 / 2 / x.norm(), max=1.0), op="avg")
    state = TopoplaceState(comm, compressor="topk", topk_fraction=1.0, clip_norm=1.5, key_base=830)
    got = allreduce_hook(state, FakeBucket(x.clone())).wait()
    c.ok((got - want).abs().max().item() < 1e-6, "clip_norm 1.5 over 4 ranks: each bucket scaled to "
         "norm 0.75 before the all-reduce")


def check_hook_state(c, tc, comm, rank, plan, port):
    """What a PyTorch user leans on beyond the numbers (review, s39)."""
    import pickle

    from topoplace_coll.hooks import TopoplaceState, allreduce_hook

    # float16 avg: the hook divides before it sums (the library sums,
    # then divides: 4 x 40000 overflows float16, their mean does not)
    h = torch.full((64,), 40000.0, dtype=torch.float16)
    got = allreduce_hook(TopoplaceState(comm, async_op=False), FakeBucket(h)).wait()
    c.ok(bool(torch.isfinite(got).all()) and got[0].item() == 40000.0,
         "float16 bucket of 40000 averaged over %d ranks: %g (not inf)" % (WORLD, got[0].item()))
    # two states on one communicator: their own error-feedback keys
    a, b = TopoplaceState(comm), TopoplaceState(comm)
    c.ok(a.key_base != b.key_base, "two states of one communicator: key bases %d and %d"
         % (a.key_base, b.key_base))
    # a restored state without its communicator says so
    st = pickle.loads(pickle.dumps(TopoplaceState(comm)))
    c.raises(RuntimeError, "comm is None", "restored state without state.comm", allreduce_hook, st,
             FakeBucket(torch.ones(4)))
    # given one again (in a new process: a new communicator), it takes a
    # key base of that communicator's, apart from a fresh state's there
    # (it kept its pickled base, 0 as the fresh one's), and no old keys
    import types
    old, new = types.SimpleNamespace(), types.SimpleNamespace()
    st = TopoplaceState(old)
    st.keys[("old",)] = 5
    st = pickle.loads(pickle.dumps(st))
    st.comm = new
    fresh = TopoplaceState(new)
    c.ok(st.key_base != fresh.key_base and not st.keys and st.comm is new,
         "a restored state given a new communicator: key bases %d and a fresh state's %d"
         % (st.key_base, fresh.key_base))
    # set to None and back to the same one: the same keys
    st.keys[("kept",)] = 7
    base = st.key_base
    st.comm = None
    st.comm = new
    c.ok(st.key_base == base and ("kept",) in st.keys, "comm None and back: key base %d kept" % base)
    # a pickle of the previous version (no _key_base_auto): its default
    # base is taken for one, so it too gets a new communicator's
    d = TopoplaceState(types.SimpleNamespace()).__getstate__()
    d.pop("_key_base_auto")
    d.pop("_base_of", None)
    older = TopoplaceState.__new__(TopoplaceState)
    older.__setstate__(d)
    other = types.SimpleNamespace()
    older.comm = other
    fresh = TopoplaceState(other)
    c.ok(older.key_base != fresh.key_base, "an older pickle given a new communicator: key bases %d and %d"
         % (older.key_base, fresh.key_base))
    # TopoplaceError crosses a process boundary (pickled) whole
    e = tc.TopoplaceError("allreduce", -9, "rank 3 (host node07) closed the connection")
    e2 = pickle.loads(pickle.dumps(e))
    c.ok(type(e2) is tc.TopoplaceError and str(e2) == str(e) and e2.code == -9,
         "TopoplaceError pickles: %s" % e2)
    # momentum over buckets whose parameters are unknown (no spans):
    # a second layout starts from zero, no error
    if tc.have_compression():
        st = TopoplaceState(comm, compressor="int8", momentum=0.9, start_iter=10 ** 6, async_op=False)
        allreduce_hook(st, FakeBucket(torch.ones(8)))
        b = FakeBucket(torch.ones(16))
        got = allreduce_hook(st, b).wait()
        c.ok(got[0].item() == 1.0, "momentum over two layouts without parameter spans: %g"
             % got[0].item())
    # a Future's callback may wait on a call it makes (PowerSGD's hook
    # does): it runs at once instead of queued behind the callback
    t1, t2 = torch.ones(1000), torch.ones(10)
    chained = comm.all_reduce_async(t1).then(lambda f: comm.all_reduce_async(t2).wait()[0].item())
    c.ok(chained.wait() == WORLD, "a callback waits on an all_reduce_async it made: %s" % chained.value())
    if tc.have_compression():
        # the hook's momentum (dense steps: momentum SGD) survives DDP's
        # bucket rebuild after the first step: equal to the optimizer's
        from torch.nn.parallel import DistributedDataParallel as DDP
        ref = train(DDP(model(7), bucket_cap_mb=0.05), rank, momentum=0.9)
        ddp = DDP(model(7), bucket_cap_mb=0.05)
        ddp.register_comm_hook(TopoplaceState(comm, compressor="int8", momentum=0.9, start_iter=10 ** 6),
                               allreduce_hook)
        got = train(ddp, rank, momentum=0.0)
        diff = max((x - y).abs().max().item() for x, y in zip(ref, got))
        scale = max(x.abs().max().item() for x in ref)
        c.ok(diff <= 1e-5 * scale, "hook momentum 0.9 (dense steps) vs the optimizer's across DDP's rebuild: "
             "max |diff| %.3g (params up to %.3g)" % (diff, scale))
    # close() in a Future's callback, with a call queued behind it: the
    # queued call runs first, then the communicator goes (it was destroyed
    # under the call, which then crashed)
    c2 = tc.Communicator(plan=plan, rank=rank, master_addr="127.0.0.1", master_port=port, timeout_s=20)
    big, small = torch.ones(1 << 22), torch.ones(16)
    f1 = c2.all_reduce_async(big)
    f1.then(lambda f: c2.close())
    try:
        v = c2.all_reduce_async(small).wait()[0].item()
        what = "the call queued behind it summed %g" % v
        good = v == WORLD
    except (ValueError, tc.TopoplaceError) as ex:  # closed first (f1 was quick)
        what, good = "the next call: %s" % ex, True
    f1.wait()
    c.ok(good and c2.detail() == "", "close() in a Future's callback: no crash; %s" % what)


def check_mismatch(c, tc, rank, plan, port):
    """TOPOPLACE_COLL_CHECK=1: a rank whose tensor differs (a bucket of
    another size) fails every rank's call at once, named, instead of a
    hang; the communicator stays usable."""
    os.environ["TOPOPLACE_COLL_CHECK"] = "1"
    try:
        comm = tc.Communicator(plan=plan, rank=rank, master_addr="127.0.0.1", master_port=port, timeout_s=60)
    finally:
        del os.environ["TOPOPLACE_COLL_CHECK"]
    want = "this rank allreduce #1 (count 8" if rank == 3 else "rank 3 called allreduce #1 (count 8, fp32"
    c.raises(tc.TopoplaceError, want, "TOPOPLACE_COLL_CHECK: rank 3's odd tensor size named on every rank",
             comm.all_reduce, torch.ones(8 if rank == 3 else 16))
    t = torch.ones(16)
    comm.all_reduce(t)
    c.ok(t[0].item() == WORLD, "TOPOPLACE_COLL_CHECK: the next agreed all-reduce sums (%g)" % t[0].item())
    # a call Python refuses on one rank (before the library) still takes
    # its part in the check: the others fail naming it instead of pairing
    # with that rank's next call, and the next agreed call sums right
    if rank == 2:
        c.raises(TypeError, "not supported", "TOPOPLACE_COLL_CHECK: rank 2's int16 refused in Python",
                 comm.all_reduce, torch.ones(16, dtype=torch.int16))
    else:
        c.raises(tc.TopoplaceError, "rank 2 called allreduce #3 (count 0",
                 "TOPOPLACE_COLL_CHECK: rank 2's call refused in Python named on every rank",
                 comm.all_reduce, torch.ones(16))
    why = comm.detail()  # in order with the calls, on their thread
    c.ok(why != "", "detail() after the refused call: %s" % why)
    t = torch.ones(16)
    comm.all_reduce(t)
    c.ok(t[0].item() == WORLD, "TOPOPLACE_COLL_CHECK: after a refusal the next call sums (%g)" % t[0].item())
    comm.close()
    c.ok(comm.detail() == "", "detail() of a closed communicator: empty, no crash")


def check_unchecked_refusal(c, tc, rank, plan, port):
    """Without TOPOPLACE_COLL_CHECK a call Python refuses on one rank breaks
    the communicator, as a bad call the library refuses does: the other
    ranks went on into theirs, which would otherwise pair with that rank's
    next call and return wrong data as success (rank 1's 1 + 2 read 10 + 2).
    Every rank's next call raises; none returns."""
    comm = tc.Communicator(plan=plan, rank=rank, master_addr="127.0.0.1", master_port=port, timeout_s=20)
    # (unchecked, no argument exchange adds bytes:) a ring over 2 hosts x
    # 2 ranks crosses between the groups twice (1 -> 2, 3 -> 0), each edge
    # carrying 2 (P-1)/P of the 256 KiB
    comm.reset_stats()
    comm.all_reduce(torch.zeros(1 << 16), algorithm="ring")
    cb = torch.tensor([comm.cross_bytes()], dtype=torch.int64)
    comm.all_reduce(cb)
    c.ok(cb.item() == 2 * (1 << 18) * 3 // 2, "cross_bytes of a 256 KiB ring all-reduce, all ranks: %d"
         % cb.item())
    t = torch.ones(4)
    comm.all_reduce(t)
    c.ok(t[0].item() == WORLD, "unchecked: a first call sums (%g)" % t[0].item())
    if rank == 1:
        c.raises(ValueError, "contiguous", "unchecked: rank 1's transposed tensor refused in Python",
                 comm.all_reduce, torch.zeros(4, 4).t())
    else:
        t = torch.full((4,), 10.0)
        c.raises(tc.TopoplaceError, "", "unchecked: rank %d's call, paired with rank 1's refused one, fails" % rank,
                 comm.all_reduce, t)
    t = torch.full((4,), float(rank))
    # rank 1 is told why: its own refusal, not the placeholder arguments
    # its refused call gave the library
    c.raises(tc.TopoplaceError, "this rank refused an earlier call (allreduce: " if rank == 1 else "",
             "unchecked: rank %d's next call fails, no wrong sum" % rank, comm.all_reduce, t)
    comm.close()


def worker(rank, plan, port, gloo_port, group_plan, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(gloo_port), OMP_NUM_THREADS="1",
                      GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(1)
    c = Checks(rank)
    try:
        import topoplace_coll as tc

        dist.init_process_group("gloo", rank=rank, world_size=WORLD)
        # checked: the argument checks below refuse calls on every rank
        # and go on with the communicator (check_unchecked_refusal: without)
        os.environ["TOPOPLACE_COLL_CHECK"] = "1"
        try:
            comm = tc.Communicator(plan=plan, rank=rank, master_addr="127.0.0.1", master_port=port, timeout_s=60)
        finally:
            del os.environ["TOPOPLACE_COLL_CHECK"]
        c.ok(comm.size == WORLD and comm.rank == rank and comm.nhosts == 2, "communicator %r" % comm)
        check_ddp(c, tc, comm, rank)
        check_allreduce(c, tc, comm, rank)
        check_async(c, tc, comm, rank)
        check_rejects(c, tc, comm, rank, plan)
        check_compression(c, tc, comm, rank)
        check_group_level(c, tc, rank, group_plan, port + 1)
        check_mismatch(c, tc, rank, plan, port + 3)
        check_hook_state(c, tc, comm, rank, plan, port + 5)
        check_unchecked_refusal(c, tc, rank, plan, port + 7)
        comm.close()
        c.raises(ValueError, "closed", "closed communicator rejected", comm.all_reduce, torch.zeros(2))
        dist.destroy_process_group()
    except Exception:  # noqa: BLE001 - report it as a failure of this rank
        c.ok(False, "rank %d raised:\n%s" % (rank, traceback.format_exc()))
    q.put((rank, c.failed, c.lines))


def main():
    plan, port, gloo_port, group_plan = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    import topoplace_coll as tc

    print("# torch %s, library %s, compression %s" % (torch.__version__, tc.library_path(),
                                                      "present" if tc.have_compression() else "absent"))
    return run_ranks(WORLD, worker, (plan, port, gloo_port, group_plan))


def run_ranks(world, target, args, timeout=300):
    """target(rank, *args, q) in `world` spawned processes, each putting
    (rank, failures, lines) on q; prints rank 0's lines and a failing
    rank's; returns the exit status (0 all passed, 1 not)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=target, args=(r,) + tuple(args) + (q,)) for r in range(world)]
    for p in procs:
        p.start()
    results = {}
    for _ in procs:
        try:
            r, failed, lines = q.get(timeout=timeout)
        except Exception:  # noqa: BLE001 - queue.Empty: a rank died
            break
        results[r] = (failed, lines)
    for p in procs:
        p.join(10)
        if p.is_alive():
            p.kill()
    failed = 0
    for r in range(world):
        if r not in results:
            print("FAIL - rank %d reported nothing (exit %s)" % (r, procs[r].exitcode))
            failed += 1
            continue
        f, lines = results[r]
        failed += f
        for line in lines if r == 0 or f else []:
            print(line if r == 0 else "rank %d: %s" % (r, line))
    print("all passed" if failed == 0 else "%d failed" % failed)
    return 1 if failed else 0

if __name__ == "__main__":
    sys.exit(main())
