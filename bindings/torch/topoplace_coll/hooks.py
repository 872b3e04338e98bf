"""A DDP communication hook over libtopoplace-coll, modelled on PyTorch's
PowerSGD hook (torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook):
a state object holding the communicator, the options, the error-feedback
keys and the step counter, and a hook function.

    from topoplace_coll import Communicator
    from topoplace_coll.hooks import TopoplaceState, allreduce_hook

    comm = Communicator()                       # from the SPANK environment
    state = TopoplaceState(comm, compressor="topk", start_iter=10)
    ddp.register_comm_hook(state, allreduce_hook)

The hook averages each gradient bucket over the ranks, in place, through
the library: dense (the plan's algorithm; `algorithm` chooses) while
`state.iter < state.start_iter` or when `compressor` is None, compressed
afterwards. With hierarchical=True (the default) only the exchange
between level-1 groups (the oversubscribed up-links) is compressed;
inside hosts and groups the reduction stays dense and exact.

Error feedback: the library keeps each bucket's residual, under a key the
state assigns per bucket layout: its index, its size and its parameters
in order. DDP rebuilds its buckets after the first iteration, in the
order the gradients became ready: an index can change size, and a bucket
can keep its index and size with its parameters reversed (a model under
one bucket's size), so index and size alone would add a residual (and a
velocity) to other parameters' gradients. A new layout gets a new key and
so a fresh residual; the keys of a layout no step uses any more (DDP's
first buckets) are freed when the step's last bucket is handed over.
Every rank assigns the same keys because DDP builds the same buckets on
every rank.

Gradients that are not float32 (a float64 or float16 model) are
compressed as float32 copies, and the result copied back; dense steps
reduce them as they are.

Gradient accumulation: under ddp.no_sync() DDP does not call the hook at
all; the accumulated gradients are reduced at the next synchronised
backward, and `iter` counts synchronised steps only (as PowerSGD does).

Overlap: with async_op=True (the default) the hook hands the bucket to
the communicator's progress thread (Communicator.all_reduce_async) and
returns its Future at once, so the bucket's all-reduce runs while
autograd computes the next buckets' gradients; DDP waits for the Futures
at the end of backward. DDP calls the hook for its buckets in index
order on every rank, and the thread runs them in that order, so every
rank issues the same library calls in the same order. One call runs at
a time: bucket k+1's all-reduce starts when bucket k's is done. Inside
one hierarchical int8 / 1-bit call the library pipelines the bucket by
segments (segment=, overlap=; see Communicator.all_reduce), so a large
bucket's exchange across groups runs behind its own in-group stages.
async_op=False reduces on the autograd thread and returns a completed
Future (no overlap).

Momentum in the hook (momentum=M): compressing the gradient and then
applying momentum SGD to the compressed average lets the optimizer's
velocity amplify what compression delays; compressing the velocity
instead (1-bit Adam compresses its momentum, Deep Gradient Compression
(Lin et al. 2018) corrects top-k's) keeps convergence. The hook keeps
each bucket's velocity u = M u + g and hands u to the all-reduce; the
optimizer then runs without momentum (plain SGD, same learning rate).
Dense steps (before start_iter) send u whole, which is momentum SGD;
a bucket layout DDP's rebuild makes takes each parameter's velocity
from the layout that held it.
Top-k hands the momentum to the library (all_reduce(momentum=)), which
keeps u where the top-k is chosen: per rank when flat; with
hierarchical=True at the rank that compresses each shard of its group's
dense sum, so u is the group's velocity (the sum of its ranks', as the
group reduction is linear). There DGC's momentum factor masking clears u
at the entries this rank (its group) sent, and only those: its
error-feedback residual is DGC's local accumulation v (v += u, send
top-k of v, keep the rest); momentum_masking=False keeps u. (A hook
masking its own u where the result is non-zero would also clear the
entries other ranks or groups sent.) warmup_steps (top-k): the first compressed steps keep a
larger fraction, falling exponentially from 25% to topk_fraction (DGC's
rising sparsity; traffic is higher while it lasts). After start_iter
dense steps the velocity carries over: the first top-k step of a bucket
sends M u + g from the hook's own u, and the library's velocity (zero
until then) goes on from that sum.

Two more of DGC's recipes, off by default: clip_norm clips each rank's
bucket to norm <= clip_norm / sqrt(ranks) before it is sent (DGC's
local gradient clipping); per_tensor keeps topk_fraction of every
parameter's gradient instead of the bucket's (one library call and
residual per parameter). DGC's learning-rate warm-up is the optimizer's,
not the hook's (contrib/examples/ddp_train.py --lr-warmup).

What was tried for top-1% (README, issue 10; final loss against dense
on 8 loopback ranks, tests/bench/bench_ddp_local.sh, 200 steps, hidden
512, batch 16, 0.25 MB buckets; seeds 1-3, mean +- standard error,
unless said otherwise). Until 2026-12-07 the goal, 2%, was met by none
of these:
  top-k with the optimizer's momentum                    +12.6%
  momentum=0.9 in the hook, masking (--hook-momentum)    +4.45 +- 0.18%
    without masking (seeds 1-2)                          +4.7 +- 0.3%
    after start_iter=10 dense steps, velocity carried    +4.40 +- 0.19%
    that plus warmup_steps=20, masking throughout        +5.06 +- 0.27%
  clip_norm=4 (--clip-norm 4)                            +5.15 +- 0.07%
  per_tensor=True (--per-tensor)                         +11.2 +- 1.9%
  with --hook-momentum --start-iter 10:
    hierarchical=False (every hop compressed)            +4.83 +- 0.18%
    learning-rate warm-up over 20 steps (--lr-warmup 20) +4.91 +- 0.18%
    1,000 steps (hidden 256)                             +15.2 +- 1.7%
contrib/examples/topk_reference.py (the same 8 ranks simulated in plain
torch, the library's scheme) gives +4.41 +- 0.09% against the library's
+4.40 +- 0.19%: the gap is the algorithm's. Its variants, none better
beyond 2 standard errors: exact threshold (--threshold exact)
+4.32 +- 0.17%, k over the group's whole bucket (--scope bucket)
+4.47 +- 0.26%, Nesterov (--nesterov) +3.93 +- 0.57%, residual decay
0.95 (--decay 0.95) +7.94 +- 0.41%, error feedback on the gradient with
the optimizer's momentum (--ef gradient) +11.0 +- 0.7%, EF21's
trackers instead of error feedback (--ef ef21, 2026-12-04) +112 +- 18%,
EF21 on each group's heavy-ball velocity (--ef ef21m) +13.3 +- 2.8%.
Masking suits small fractions only (reference, --start-iter 10, seeds
1-3, with / without masking): 1% +4.43 +- 0.11 / +6.22 +- 1.28%, 2%
+4.89 +- 0.38 / +4.92 +- 1.42%, 5% +7.52 +- 0.21 / +3.42 +- 1.25%, 10%
+14.22 +- 0.55 / +1.58 +- 0.52%: an entry sent every step loses its
velocity's tail each time (at 100% masking is SGD without momentum), so
above about 2% pass momentum_masking=False.
Over fresh
samples (ddp_train.py --fresh: one pass, the loss on samples never
trained on) top-1% with --hook-momentum --start-iter 10 gives
-2.03 +- 0.22%: no worse than dense there.
What meets it (2026-12-07): DGC's sparsity warm-up with the velocity
masked only once the fraction is at most 2% (the rule above; masking
while the warm-up keeps 25% cost more than the warm-up gained). With
--hook-momentum --start-iter 10, seeds 1-5, the library's up-link bytes
against dense's beside each:
  no warm-up                                   +4.11 +- 0.20%   17.3x less
  warmup_steps=20                              +3.46 +- 0.19%   15.8x
  warmup_steps=50                              +2.34 +- 0.25%   14.2x
  warmup_steps=100                             +1.36 +- 0.41%   12.1x
  warmup_steps=150                             -0.07 +- 0.36%   10.6x
so top-1% reaches dense's loss once the warm-up is most of this short
run (150 of its 190 compressed steps), still sending 10.6x less across
the up-link; held-out accuracy +0.008 +- 0.003 over dense.
topk_reference.py --warmup-steps N gives the same (seeds 1-3: +2.01 +-
0.30% at 100, +0.45 +- 0.31% at 150, against the library's +1.94 and
+0.41 on those seeds).
"""

import math
import time
import weakref

import torch

from . import (CompressionUnavailable, _choice, _compressor_opts, _flag, _int_in, _lib,
               _pipeline_opts, _topk_threshold, have_compression)

__all__ = ["TopoplaceState", "allreduce_hook"]

# Momentum factor masking during the sparsity warm-up only at this
# fraction or below (see "Masking suits small fractions only" above).
MASK_MAX_FRACTION = 0.02


class TopoplaceState:
    """Options and per-bucket state of allreduce_hook.

    comm            a topoplace_coll.Communicator over the DDP ranks, in
                    the same rank order as the process group (the SPANK
                    plugin's TOPOPLACE_RANK; pass it as torch's rank too)
    compressor      None (dense), "int8", "1bit" or "topk"
    hierarchical    compress only across level-1 groups (True), across and
                    inside them ("group": dense only inside hosts) or
                    every hop
    error_feedback  keep and re-add each bucket's compression error
    start_iter      synchronised steps reduced dense before compression
                    starts (PowerSGD's start_powerSGD_iter; default 0)
    algorithm       dense algorithm: "auto", "ring", "hierarchical", "tree"
    block, topk_fraction, stochastic, seed, segment, overlap, topk_threshold
                    compressor parameters (library defaults when None;
                    segment and overlap: the hierarchical int8 / 1-bit
                    pipeline; topk_threshold "sampled" or "exact": see
                    Communicator.all_reduce)
    key_base        added to every error-feedback key: separates the
                    residuals of two DDP models sharing one communicator
                    (default None: each state of a communicator gets its
                    own, 0 for the first, 2^40 apart)
    async_op        reduce on the communicator's progress thread,
                    overlapping backward (default True; see above)
    momentum        the velocity factor (e.g. 0.9; default None: off),
                    applied by the hook (int8, 1-bit, dense steps) or
                    the library (top-k, needs error_feedback); run the
                    optimizer without momentum
    momentum_masking
                    top-k with momentum: clear the velocity where this
                    rank (its group) sent (DGC's masking; default True,
                    for fractions of about 2% and below: above, it
                    costs convergence, see the list above)
    warmup_steps    top-k: compressed steps over which the kept fraction
                    falls from 25% to topk_fraction (default 0); with
                    momentum_masking, masking starts once the fraction
                    is at most 2%
    clip_norm       top-k: clip each rank's bucket to norm <= clip_norm /
                    sqrt(ranks) before it is sent (default None: off)
    per_tensor      top-k: k per parameter, not per bucket (default False)
    process_group   the DDP model's process group, when it is not the
                    default one (default None: not checked; the hook
                    cannot see DDP's group); given, once torch.distributed
                    is initialised its size must be the communicator's, or
                    the state (at once, or at the hook's first call)
                    raises ValueError: DDP on a sub-group with a
                    communicator over every rank would average over the
                    wrong ranks

    Pickled (a checkpoint), a state keeps its options and counters, not
    its communicator (set state.comm again), its process_group nor its velocity and
    residuals: their keys hold the parameters' addresses. Given a
    communicator, a state whose key_base was left to it takes a base of
    that communicator's, as a fresh state would.

    Raises CompressionUnavailable at once when a compressor is asked of a
    library without compression, ValueError for an unknown option value
    and TypeError for one of the wrong type (key_base=1.5, start_iter=None).
    `iter` counts synchronised steps; `keys` maps each bucket layout in
    use ((index, numel, parameters' addresses, piece)) to its residual
    key; `hook_s` sums the time spent in the hook itself
    (`hook_cpu_s` its CPU time) and `last_hook_t` is when it last
    returned (time.perf_counter()).
    """

    def __init__(self, comm, compressor=None, hierarchical=True, error_feedback=True, start_iter=0,
                 algorithm="auto", block=None, topk_fraction=None, stochastic=None, seed=None,
                 key_base=None, async_op=True, momentum=None, momentum_masking=True, warmup_steps=0,
                 clip_norm=None, per_tensor=False, segment=None, overlap=None, topk_threshold=None,
                 process_group=None):
        _choice(_lib.COMPRESSORS, compressor, "compressor")
        _choice(_lib.ALGOS, algorithm, "algorithm")
        if compressor == "none":
            compressor = None
        if compressor is not None and not have_compression():
            raise CompressionUnavailable("TopoplaceState(compressor=%r)" % compressor)
        start_iter = _int_in(start_iter, 0, 2 ** 63 - 1, "start_iter")
        error_feedback = _flag(error_feedback, "error_feedback")
        stochastic = _flag(stochastic, "stochastic", none_ok=True)
        async_op = _flag(async_op, "async_op")
        momentum_masking = _flag(momentum_masking, "momentum_masking")
        per_tensor = _flag(per_tensor, "per_tensor")
        if momentum is not None and (compressor is None or not 0.0 <= float(momentum) < 1.0 or
                                     (compressor == "topk" and not error_feedback)):
            raise ValueError("momentum=%r: a factor in [0, 1), for a compressor (top-k: with "
                             "error_feedback)" % (momentum,))
        if int(warmup_steps) < 0 or (warmup_steps and compressor != "topk"):
            raise ValueError("warmup_steps=%r: >= 0, for compressor='topk' only" % (warmup_steps,))
        if clip_norm is not None and (compressor != "topk" or not float(clip_norm) > 0.0):
            raise ValueError("clip_norm=%r: > 0, for compressor='topk' only" % (clip_norm,))
        segment, overlap = _pipeline_opts(segment, overlap)
        _topk_threshold(topk_threshold)
        # the compressor's options fail here, not at step start_iter
        block, topk_fraction, seed = _compressor_opts(compressor, block, topk_fraction, seed,
                                                      hierarchical)
        self._key_base_auto = key_base is None
        key_base = _int_in(0 if key_base is None else key_base, 0, 2 ** 63 - 1, "key_base")
        if per_tensor and compressor != "topk":
            raise ValueError("per_tensor: for compressor='topk' only")
        self._comm = None
        self._base_of = lambda: None  # the communicator the keys are of
        self.compressor = compressor
        if hierarchical not in (True, False, "group"):
            raise ValueError("hierarchical must be True, False or 'group', got %r" % (hierarchical,))
        self.hierarchical = hierarchical if hierarchical == "group" else bool(hierarchical)
        self.error_feedback = bool(error_feedback)
        self.start_iter = int(start_iter)
        self.algorithm = algorithm
        self.params = {"block": block, "topk_fraction": topk_fraction, "stochastic": stochastic,
                       "seed": seed, "segment": segment, "overlap": overlap,
                       "topk_threshold": topk_threshold}
        self.key_base = int(key_base)
        self.async_op = bool(async_op)
        self.momentum = None if momentum is None else float(momentum)
        self.momentum_masking = bool(momentum_masking)
        self.warmup_steps = int(warmup_steps)
        self.clip_norm = None if clip_norm is None else float(clip_norm)
        self.per_tensor = bool(per_tensor)
        self.iter = 0
        self.keys = {}
        self.keys_made = 0  # keys handed out: a new one is never reused
        self.keys_used = set()  # keys of the step under way
        self.velocity = {}
        self.vel_params = {}  # key: its parameters' (address, offset, numel)
        self.hook_s = 0.0  # profile: seconds spent in allreduce_hook itself
        self.hook_cpu_s = 0.0  # the CPU time of those (time.thread_time())
        self.last_hook_t = None  # time.perf_counter() when it last returned
        self.process_group = process_group
        self._group_ok = False  # comm's size checked against the group's
        self.comm = comm
        self.check_group()

    @property
    def comm(self):
        return self._comm

    @comm.setter
    def comm(self, comm):
        # each state of one communicator its own keys (two models, or a
        # model and its EMA copy, would share and free each other's
        # residuals): the first gets 0, the next 2^40 on. A state given
        # another communicator (restored from a checkpoint) takes a base
        # of the new one's, so it cannot meet a fresh state's there; its
        # old keys, residuals and velocity are the old one's: dropped
        # (set to None and back to the same one: nothing changes)
        if comm is not None and comm is not self._comm and comm is not self._base_of():
            old = self._comm
            if old is not None and getattr(old, "forget_residual", None):
                for v in self.keys.values():  # the old one's memory
                    try:
                        old.forget_residual(v)
                    except (ValueError, RuntimeError):
                        break  # closed
            if self._key_base_auto:
                n = getattr(comm, "_hook_states", 0)
                comm._hook_states = n + 1
                self.key_base = n << 40
            self.keys.clear()
            self.keys_used.clear()
            self.velocity.clear()
            self.vel_params.clear()
            try:
                self._base_of = weakref.ref(comm)
            except TypeError:  # an object without weak references
                self._base_of = lambda c=comm: c
        if comm is not self._comm:
            self._group_ok = False
        self._comm = comm

    def check_group(self):
        """True once the communicator's size is process_group's (or no
        group was given: nothing to check); False while either is not
        there yet (no communicator, torch.distributed not initialised);
        raises ValueError when they differ."""
        import torch.distributed as dist

        g = self.process_group
        size = getattr(self._comm, "size", None)  # (None: a stand-in's)
        if g is None:
            self._group_ok = True
        if self._group_ok or size is None or not (dist.is_available() and dist.is_initialized()):
            return self._group_ok
        n = dist.get_world_size(g)
        if n != size:
            raise ValueError("TopoplaceState: the communicator has %d ranks, the process group "
                             "%s: give a communicator over the DDP model's ranks"
                             % (size, "does not hold this rank" if n < 0 else "has %d" % n))
        self._group_ok = True
        return True

    def key(self, bucket, piece=None):
        """The error-feedback key of this bucket's layout (of one of its
        pieces with per_tensor)."""
        params = getattr(bucket, "parameters", None)
        layout = tuple(p.data_ptr() for p in params()) if params else ()
        k = (bucket.index(), bucket.buffer().numel(), layout, piece)
        if k not in self.keys:
            self.keys_made += 1
            self.keys[k] = self.key_base + self.keys_made
        self.keys_used.add(self.keys[k])
        return self.keys[k]

    def drop_unused(self):
        """At the end of a step: free the residuals and velocities of the
        keys it did not use (layouts DDP rebuilt away)."""
        used, self.keys_used = self.keys_used, set()
        if not used:
            return  # a dense step without momentum uses no key
        for k in [k for k, v in self.keys.items() if v not in used]:
            v = self.keys.pop(k)
            self.velocity.pop(v, None)
            self.vel_params.pop(v, None)
            if self.comm is not None:
                self.comm.forget_residual(v)

    def compressing(self):
        return self.compressor is not None and self.iter >= self.start_iter

    def fraction(self):
        """The top-k fraction of this step (None: the library's default)."""
        step, n = self.iter - self.start_iter, self.warmup_steps
        if step >= n:
            return self.params["topk_fraction"]
        end = self.params["topk_fraction"] or 0.01
        return max(end, 0.25 * math.exp(step / n * math.log(end / 0.25)))

    def masking(self):
        """Momentum factor masking this step: as asked, but not while the
        sparsity warm-up keeps more than MASK_MAX_FRACTION (an entry sent
        every step would lose its velocity's tail each time)."""
        f = self.fraction()
        return self.momentum_masking and (f is None or f <= MASK_MAX_FRACTION or
                                          self.iter - self.start_iter >= self.warmup_steps)

    def corrected(self, key, grad, bucket=None):
        """Momentum correction: the bucket's velocity u = momentum u + grad,
        copied into grad; returns u. A layout not seen before (DDP's
        rebuild after the first step regroups the parameters) starts from
        the velocity its parameters had in the layouts before it."""
        u = self.velocity.get(key)
        if u is None or u.numel() != grad.numel():
            spans = _param_spans(grad, bucket)
            u = self.velocity[key] = self._carried(grad, spans)
            self.vel_params[key] = spans
        u.mul_(self.momentum).add_(grad)
        grad.copy_(u)
        return u

    def _carried(self, grad, spans):
        """Zeros shaped as grad, with each parameter's slice of spans taken
        from another layout's velocity that holds that parameter."""
        u = torch.zeros_like(grad)
        where = {}
        for k, ps in self.vel_params.items():
            v = self.velocity.get(k)
            for ptr, at, n in (ps or () if v is not None else ()):
                where[ptr] = (v, at, n)
        for ptr, at, n in spans or ():
            hit = where.get(ptr)
            if hit is not None and hit[2] == n:
                u[at:at + n].copy_(hit[0][hit[1]:hit[1] + n])
        return u

    def drop_velocity(self, key):
        self.velocity.pop(key, None)
        self.vel_params.pop(key, None)

    def __getstate__(self):
        # As PowerSGDState: a checkpoint keeps options and counters, not the
        # communicator (give the restored state a new one: state.comm = ...).
        # Its keys hold the parameters' addresses: in another process the
        # velocity and residuals start again from zero.
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_comm", "_base_of", "process_group", "_group_ok")}

    def __setstate__(self, d):
        d.pop("comm", None)  # (an older version's pickle)
        self.__dict__.update(d)
        # an older version's pickle: its default bases were multiples of
        # 2^40 (an explicit one such is taken for one of those)
        self.__dict__.setdefault("_key_base_auto", self.key_base % (1 << 40) == 0)
        self._comm = None
        self._base_of = lambda: None
        self.process_group = None  # a group is this process's: give it again
        self._group_ok = False


def allreduce_hook(state, bucket):
    """DDP comm hook: average `bucket` over the ranks through libtopoplace-coll
    (see TopoplaceState). Returns a Future holding the bucket: completed by
    the progress thread (async_op) or already completed."""
    t0, c0 = time.perf_counter(), time.thread_time()
    fut = _hook(state, bucket)
    state.hook_cpu_s += time.thread_time() - c0
    state.last_hook_t = time.perf_counter()
    state.hook_s += state.last_hook_t - t0
    return fut


def _hook(state, bucket):
    if state.comm is None:
        raise RuntimeError("TopoplaceState.comm is None: a restored state needs its "
                           "communicator again (state.comm = topoplace_coll.Communicator(...))")
    if not state._group_ok:
        state.check_group()
    out = bucket.buffer()
    topk = state.compressing() and state.compressor == "topk"
    # the library compresses float32: other gradients go as a copy
    buf = out.float() if state.compressing() and out.dtype != torch.float32 else out
    key = state.key(bucket) if state.compressing() or state.momentum is not None else None
    if topk and state.clip_norm is not None:
        _clip(buf, state.clip_norm / math.sqrt(state.comm.size))
    if state.momentum is not None and (not topk or key in state.velocity):
        # int8 / 1-bit send every entry: u unmasked. Top-k's first step
        # sends M u + g from the dense steps' u, from which the library's
        # own velocity (zero until now) goes on: u carries over.
        state.corrected(key, buf, bucket)
        if topk:
            state.drop_velocity(key)
    if state.compressing():
        kw = dict(compressor=state.compressor, hierarchical=state.hierarchical,
                  error_feedback=state.error_feedback, **state.params)
        if topk:
            kw.update(topk_fraction=state.fraction(), momentum=state.momentum,
                      momentum_masking=state.masking())
    else:
        kw = dict(algorithm=state.algorithm)  # with momentum: momentum SGD
    last = bucket.is_last()
    if last:
        state.iter += 1
    if topk and state.per_tensor:
        pieces = _tensor_slices(buf, bucket)
        keys = [state.key(bucket, i) for i in range(len(pieces))]
    else:
        pieces, keys = [buf], [key]
    op = "avg"
    if buf.dtype == torch.float16:
        # the library sums, then divides: a sum of float16 gradients can
        # overflow where their mean does not; divide first, as torch's
        # own allreduce_hook does
        buf.div_(state.comm.size)
        op = "sum"
    if state.async_op:
        futs = [state.comm.all_reduce_async(t, op=op, key=k, **kw) for t, k in zip(pieces, keys)]
        if last:
            state.drop_unused()
        # through then(): torch 1.13's DDP reads a Future completed with
        # set_exception as a value ("Unable to cast ... to Tensor"); a
        # callback that raises marks the Future failed, with the library's
        # message
        return torch.futures.collect_all(futs).then(lambda f: _whole(f, buf, out))
    for t, k in zip(pieces, keys):
        state.comm.all_reduce(t, op=op, key=k, **kw)
    if last:
        state.drop_unused()
    if buf is not out:
        out.copy_(buf)
    fut = torch.futures.Future()
    fut.set_result(out)
    return fut


def _whole(done, buf, out):
    """out (holding buf's values when buf is its float32 copy), once every
    piece's Future in done (collect_all's) succeeded."""
    for f in done.value():
        f.value()  # raises the piece's TopoplaceError
    if buf is not out:
        out.copy_(buf)
    return out


def _clip(buf, limit):
    """DGC's local gradient clipping: scale buf to norm <= limit."""
    norm = float(buf.norm())
    if norm > limit:
        buf.mul_(limit / norm)


def _param_spans(buf, bucket):
    """(address, offset, numel) of each parameter's gradient in buf, in the
    bucket's order; None when they do not tile buf."""
    params = getattr(bucket, "parameters", None) if bucket is not None else None
    if params is None:
        return None
    out, at = [], 0
    for p in params():
        out.append((p.data_ptr(), at, p.numel()))
        at += p.numel()
    return out if at == buf.numel() else None


def _tensor_slices(buf, bucket):
    """Views of buf, one per parameter gradient, in the bucket's order."""
    out, at = [], 0
    for g in bucket.gradients():
        out.append(buf[at:at + g.numel()])
        at += g.numel()
    if at != buf.numel():  # padding or an unknown layout: one piece
        return [buf]
    return out
