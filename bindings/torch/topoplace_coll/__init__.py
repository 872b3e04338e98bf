"""topoplace_coll: PyTorch tensors through libtopoplace-coll.

A thin ctypes binding of the collective library that runs a job's
topoplace plan (man 3 libtopoplace-coll), and a DDP communication hook
built on it (topoplace_coll.hooks).

    import torch, topoplace_coll as tc

    comm = tc.Communicator()            # TOPOPLACE_PLAN / TOPOPLACE_RANK
    # or tc.Communicator(plan="plan.json", rank=3, master_addr="10.0.0.1")
    t = torch.ones(1000)
    comm.all_reduce(t, op="avg")        # in place
    comm.all_reduce(t, compressor="int8", key=7)   # needs compression

    ddp.register_comm_hook(tc.hooks.TopoplaceState(comm), tc.hooks.allreduce_hook)

Tensors: CPU, contiguous; dense all-reduce takes float32, float64,
float16, bfloat16, int32 and int64; the compressed one float32 only.
Anything else raises TypeError or ValueError, and the call is refused
as the library refuses a bad call of its own (other ranks went on into
theirs): with TOPOPLACE_COLL_CHECK=1 (below) every rank's call fails
naming this one and the Communicator stays usable; without it the
Communicator breaks (this rank's next call would pair with the others'
refused one and return wrong data): every rank's calls then raise
TopoplaceError. A failing library call raises TopoplaceError with the library's
one-line reason (which call, which peer); compression options on a
library built without compression raise CompressionUnavailable.

Thread safety follows the library: every rank calls the same
collectives in the same order. With TOPOPLACE_COLL_CHECK=1 in every
rank's environment (before the Communicator is made), each call first
compares every rank's arguments: a rank whose call differs (another
collective, tensor size, dtype, op, algorithm or compressor) makes every
rank's call raise TopoplaceError naming it, instead of a hang. all_reduce_async() hands the call to the
Communicator's progress thread (started on first use) and returns a
torch.futures.Future at once; from then on every call on that
Communicator, synchronous ones too, runs on that thread in the order the
calls were made, so the library sees one caller and the same order on
every rank. Without async calls the Communicator takes one thread at a
time.
"""

import atexit
import concurrent.futures
import ctypes
import json
import numbers
import operator
import os
import queue
import threading
import time
import weakref

from . import _lib

__all__ = [
    "Communicator",
    "TopoplaceError",
    "CompressionUnavailable",
    "all_reduce",
    "default_communicator",
    "have_compression",
    "hooks",
    "library_path",
]

_TORCH_DTYPES = None


class TopoplaceError(RuntimeError):
    """A libtopoplace-coll call failed. `code` is the tp_err_t (negative),
    `name` its description (tp_strerror), the message the library's detail."""

    def __init__(self, call, code, detail):
        self.code = code
        self.name = _lib.strerror(code)
        self._made = (call, code, detail)
        super().__init__("%s: %s (%s)" % (call, detail or self.name, self.name))

    def __reduce__(self):
        # pickled / copied with its own arguments (a worker process's
        # error reaches the parent), not RuntimeError's one message
        return (type(self), self._made)


class CompressionUnavailable(TopoplaceError):
    """The loaded library has no compressed all-reduce."""

    def __init__(self, what):
        self._made = (what,)
        self.code = -6  # TP_ERR_UNSUPPORTED
        self.name = "not supported by this build"
        RuntimeError.__init__(
            self,
            "%s: %s has no compression (tp_coll_allreduce_compressed missing): "
            "build libtopoplace-coll with gradient compression (issue 10)" % (what, _lib.LIB_PATH),
        )


def have_compression():
    """True when the loaded library has the compressed all-reduce."""
    return _lib.HAVE_COMPRESSION


def library_path():
    """The shared object in use."""
    return _lib.LIB_PATH


def _dtype_code(tensor, compressed):
    global _TORCH_DTYPES
    import torch

    if _TORCH_DTYPES is None:
        _TORCH_DTYPES = {getattr(torch, n): c for n, c in _lib.DTYPES.items()}
    if not isinstance(tensor, torch.Tensor):
        raise TypeError("expected a torch.Tensor, got %s" % type(tensor).__name__)
    if tensor.device.type != "cpu":
        raise ValueError("tensor on %s: only CPU tensors are supported" % tensor.device)
    if tensor.is_sparse or tensor.layout != torch.strided:
        raise ValueError("sparse tensors are not supported (layout %s)" % tensor.layout)
    if not tensor.is_contiguous():
        raise ValueError("tensor is not contiguous (shape %s, strides %s): call .contiguous() "
                         "and copy back" % (tuple(tensor.shape), tensor.stride()))
    if compressed and tensor.dtype != torch.float32:
        raise TypeError("compressed all-reduce takes float32 tensors, got %s" % tensor.dtype)
    code = _TORCH_DTYPES.get(tensor.dtype)
    if code is None:
        raise TypeError("dtype %s not supported (supported: %s)"
                        % (tensor.dtype, ", ".join(_lib.DTYPES)))
    return code


def _choice(table, value, what):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError("%s %r: expected one of %s"
                         % (what, value, ", ".join(str(k) for k in table if k is not None))) from None


def _pipeline_opts(segment, overlap):
    """segment (an int in [0, 2**63), None: the library's) and overlap (True, False or None),
    checked where they are given rather than at the first bucket."""
    if segment is not None and (isinstance(segment, bool) or not isinstance(segment, int) or
                                not 0 <= segment < 2 ** 63):
        raise ValueError("segment must be an int in [0, 2**63), got %r" % (segment,))
    if not any(overlap is v for v in (None, True, False)):
        raise ValueError("overlap must be True, False or None, got %r" % (overlap,))
    return segment, overlap


def _flag(value, what, none_ok=False):
    """A switch: True, False, 1 or 0 (or None where none_ok), never a
    string or a float: error_feedback="False" would read as true."""
    if none_ok and value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise ValueError("%s must be True or False%s, got %r"
                     % (what, " (or None)" if none_ok else "", value))


def _int_in(value, lo, hi, what):
    """value, an integer (not a bool, float or string: rank 1.9 would join
    as rank 1), checked to lie in [lo, hi]: ctypes keeps only the low bits
    of a larger one (rank 2**32 + 1 would join as rank 1)."""
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, got %r" % (what, value))
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, got %r" % (what, value)) from None
    if not lo <= v <= hi:
        raise ValueError("%s %d not in [%d, %d]" % (what, v, lo, hi))
    return v


def _fraction(value, what):
    """A float in (0, 1] (the library's top-k fraction), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("%s must be a number in (0, 1], got %r" % (what, value))
    if not 0.0 < float(value) <= 1.0:
        raise ValueError("%s %r not in (0, 1]" % (what, value))
    return float(value)


def _compressor_opts(kind, block, topk_fraction, seed, hierarchical):
    """The compressor's options checked where they are given (a dense call
    and TopoplaceState too), not at the first compressed call: block
    (int8: >= 1; 1-bit: a multiple of 32), topk_fraction, seed,
    hierarchical."""
    if block is not None:
        block = _int_in(block, 1, 2 ** 32 - 1, "block")
        if kind == "1bit" and block % 32:
            raise ValueError("block %d: 1-bit blocks are a multiple of 32" % block)
    topk_fraction = _fraction(topk_fraction, "topk_fraction")
    if seed is not None:
        seed = _int_in(seed, 0, 2 ** 64 - 1, "seed")
    if not (hierarchical == "group" or
            (not isinstance(hierarchical, str) and hierarchical in (True, False))):
        raise ValueError("hierarchical must be True, False or 'group', got %r" % (hierarchical,))
    return block, topk_fraction, seed


def _topk_threshold(value):
    """topk_threshold: None (the library's default), "sampled" or "exact";
    whether top-k selects exactly (True/False/None)."""
    if value is None:
        return None
    if value not in ("sampled", "exact"):
        raise ValueError("topk_threshold must be 'sampled' or 'exact', got %r" % (value,))
    return value == "exact"


_INT_MAX = 2 ** 31 - 1


def _plan_groups(path):
    """rank -> level-1 group id, from a topoplace-plan/1 file."""
    with open(path) as f:
        plan = json.load(f)
    groups = {}
    for h in plan["hosts"]:
        for lr in h["local_ranks"]:
            groups[lr["rank"]] = h["group"]
    return groups


_LIVE = weakref.WeakSet()  # the progress threads running
_LIVE_LOCK = threading.Lock()
_EXIT_JOIN_S = 30.0  # how long exit waits for a thread in a call


@atexit.register
def _stop_progress():
    """At interpreter exit, let every progress thread finish what it was
    given: a daemon thread still inside torch's Future.set_result (DDP's
    callbacks) when Python finalises aborts the process ("terminate called
    without an active exception"). A thread stuck in a call (a hung peer)
    is waited for _EXIT_JOIN_S seconds at most; calls made after this (an
    exit handler registered earlier) run on the caller's thread."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for p in live:
        p.stop(timeout=_EXIT_JOIN_S)


def _call(fn, done):
    """done(fn(), None), or done(None, the exception fn raised)."""
    try:
        r = fn()
    except BaseException as e:  # noqa: BLE001 - handed to whoever waits
        done(None, e)
    else:
        done(r, None)


class _Progress:
    """One thread running a Communicator's library calls in the order they
    were submitted; done(result, exception) is called on that thread."""

    def __init__(self, name):
        self._q = queue.SimpleQueue()
        self.queued_s = 0.0  # calls waiting for the thread (profile)
        self.stopped = False  # no more calls: they run on the caller's thread
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.thread.start()
        with _LIVE_LOCK:
            _LIVE.add(self)

    def _loop(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            fn, done, t = item
            self.queued_s += time.perf_counter() - t
            _call(fn, done)

    def submit(self, fn, done):
        if self.stopped:  # after stop(): on this thread, at once
            _call(fn, done)
        else:
            self._q.put((fn, done, time.perf_counter()))

    def end_queue(self, last=None):
        """No more calls for the thread: it runs what is queued, then
        last(), then ends; True. Already ended (at exit): False, and
        last() runs here once the thread is gone, never while it may
        still be in a call (a hung one the exit's wait gave up on: then it
        is left undone)."""
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if self.stopped:
            if last is not None and not self.thread.is_alive():
                last()
            return False
        self.stopped = True
        if last is not None:
            self._q.put((last, lambda r, e: None, time.perf_counter()))
        self._q.put(None)
        return True

    def stop(self, timeout=None, last=None):
        """end_queue(last), then wait for the thread (timeout seconds at
        most; not when the thread itself stops it: a Communicator whose
        last reference went with a finished call, or closed in a Future's
        callback)."""
        self.end_queue(last)
        if threading.current_thread() is not self.thread:
            self.thread.join(timeout)


class Communicator:
    """A libtopoplace-coll communicator (collective to create: every rank
    of the plan must create it with the same plan and rendezvous).

    plan=None: from the environment the SPANK plugin exports
    (TOPOPLACE_PLAN, TOPOPLACE_RANK, checked against TOPOPLACE_WORLD_SIZE
    and TOPOPLACE_LOCAL_RANK). Otherwise a topoplace-plan/1 path and this
    process's rank. master_addr/master_port: the rendezvous (default
    MASTER_ADDR/MASTER_PORT, then the plan's first host and a port derived
    from the job and step ids; with torch.distributed's env:// or torchrun, whose
    store keeps MASTER_PORT for the whole job, pass another, e.g.
    MASTER_PORT + 1, or make the Communicator before init_process_group:
    the port is free again once init returns); timeout_s: seconds without
    progress before a call fails; chunk_bytes: pipelining unit (same on
    every rank); sockets: TCP connections to each peer on another host,
    1..8, every message striped over them (default
    $TOPOPLACE_COLL_SOCKETS, else 1; same on every rank).
    """

    def __init__(self, plan=None, rank=None, master_addr=None, master_port=0,
                 timeout_s=None, chunk_bytes=None, sockets=None):
        if (plan is None) != (rank is None):
            raise ValueError("give both plan and rank, or neither (environment)")
        opts = _lib.CollOpts()
        _lib.LIB.tp_coll_opts_defaults(ctypes.byref(opts))
        self._addr = master_addr.encode() if master_addr else None
        opts.master_addr = self._addr
        if isinstance(master_port, str) and master_port.strip().isdigit():
            master_port = int(master_port)  # as os.environ["MASTER_PORT"] has it
        opts.master_port = _int_in(master_port or 0, 0, 65535, "master_port")
        if timeout_s is not None:
            opts.timeout_s = float(timeout_s)
        if chunk_bytes is not None:
            opts.chunk_bytes = _int_in(chunk_bytes, 0, 2 ** 64 - 1, "chunk_bytes")
        if sockets is not None:
            opts.sockets = _int_in(sockets, 1, 8, "sockets")
        comm, err = ctypes.c_void_p(), ctypes.c_void_p()
        if plan is None:
            rc = _lib.LIB.tp_coll_comm_init_env(ctypes.byref(opts), ctypes.byref(comm), ctypes.byref(err))
            self.plan_path = os.environ.get("TOPOPLACE_PLAN")
        else:
            self.plan_path = os.fspath(plan)
            rank = _int_in(rank, 0, _INT_MAX, "rank")
            rc = _lib.LIB.tp_coll_comm_init_file(os.fsencode(self.plan_path), rank, ctypes.byref(opts),
                                                 ctypes.byref(comm), ctypes.byref(err))
        if rc != 0:
            raise TopoplaceError("init", rc, _lib.take_string(err))
        self._comm = comm
        self._groups = None
        self._progress = None
        # _comm and _progress change under it (close() may run on the
        # progress thread, in a Future's callback, while other threads
        # submit calls); never held across a wait for the thread
        self._lock = threading.RLock()
        # the library read it at init (every rank alike, or init failed)
        self.rank = _lib.LIB.tp_coll_comm_rank(comm)
        self.size = _lib.LIB.tp_coll_comm_size(comm)
        self.nhosts = _lib.LIB.tp_coll_comm_nhosts(comm)

    def _handle(self, call):
        if not self._comm:
            raise ValueError("%s: communicator is closed" % call)
        return self._comm

    def _run(self, fn):
        """fn() on this thread, or on the progress thread once it exists
        (after every call submitted before), waiting for its result. fn
        holds the communicator it was made with: it runs only while that
        is open (close() waits for a call running here, and destroys after
        the calls queued on the thread)."""
        with self._lock:
            self._handle("call")
            p = self._progress
            if p is None or p.stopped:
                return fn()
            if threading.current_thread() is not p.thread:
                cf = concurrent.futures.Future()
                p.submit(fn, lambda r, e: cf.set_exception(e) if e is not None else cf.set_result(r))
        if threading.current_thread() is p.thread:
            return fn()  # in a callback: in order with it
        return cf.result()

    def _refused(self, call):
        """This rank refused its call before the library saw it (bad
        arguments): a call the library itself refuses (dtype -1) takes
        this rank's part in it. Under TOPOPLACE_COLL_CHECK the library's
        argument check is collective: the other ranks' calls fail naming
        this one and the communicator stays usable. Without it the library
        breaks the communicator, as for a bad call of its own: this rank's
        next call would pair with the others' refused one and return wrong
        data as success (a review found exactly that: a rank that caught
        the ValueError and went on got 10 + 2 for its 1 + 2)."""
        with self._lock:  # as _run: never beside close() or another call
            comm, p = self._comm, self._progress
            if not comm:
                return
            if call == "broadcast":
                def fn():
                    return _lib.LIB.tp_coll_broadcast(comm, None, 0, -1, 0)
            else:
                def fn():
                    return _lib.LIB.tp_coll_allreduce(comm, None, None, 0, -1, 0, 0)
            if p is None or p.stopped:
                fn()
            else:
                p.submit(fn, lambda r, e: None)

    def _checked(self, call, make):
        """make() (a call's argument check), with _refused() when it
        raises."""
        try:
            return make()
        except (TypeError, ValueError) as e:
            self._refusal = "%s: %s" % (call, e)
            self._refused(call)
            raise

    # the library's reason for _refused()'s own call, which a communicator
    # it broke keeps as the cause of every later failure
    _SENTINEL = "bad dtype -1 or op 0"
    _refusal = None

    def _check(self, call, rc, comm):
        """Raise for a failed call, with the reason read at once, on the
        thread that made it, from the communicator it ran on (which a
        close() meanwhile does not destroy before the call returns). A
        communicator broken by this rank's refused call says so, not the
        placeholder arguments _refused() gave the library."""
        if rc != 0:
            s = _lib.LIB.tp_coll_comm_detail(comm)
            detail = s.decode(errors="replace") if s else ""
            if self._refusal and self._SENTINEL in detail:
                detail = ("this rank refused an earlier call (%s), which "
                          "broke the communicator (TOPOPLACE_COLL_CHECK=1 "
                          "keeps it usable)" % self._refusal)
            raise TopoplaceError(call, rc, detail)

    def detail(self):
        """The library's reason for the last failed call ("" when none, or
        closed): after the calls submitted before it, on the thread that
        runs them, so never beside a call writing it or the destroy."""
        with self._lock:
            if not self._comm:
                return ""
            comm = self._comm
        try:
            s = self._run(lambda: _lib.LIB.tp_coll_comm_detail(comm))
        except ValueError:  # closed since
            return ""
        return s.decode(errors="replace") if s else ""

    def all_reduce(self, tensor, *args, **kw):
        """all_reduce(tensor, op="sum", algorithm="auto", compressor=None,
        hierarchical=True, error_feedback=True, key=0, block=None,
        topk_fraction=None, stochastic=None, seed=None, momentum=None,
        momentum_masking=True, segment=None, overlap=None,
        topk_threshold=None)

        Reduce `tensor` over all ranks, in place; returns it.

        op: "sum" or "avg" ("max", "min" too when not compressed).
        algorithm: "auto" (the plan's recommendation), "ring",
        "hierarchical", "tree"; dense only.
        compressor: None (dense, exact up to fp reduction order), "int8"
        (per-block fp32 scale), "1bit" (sign and per-block mean magnitude)
        or "topk" (topk_fraction of the entries, default 1%).
        hierarchical: compress only between level-1 groups (dense and
        exact inside hosts and groups); "group": the group level's
        reduce-scatter and all-gather too (dense only inside hosts; the
        host links then carry the compressed size); False compresses
        every level.
        error_feedback: keep this buffer's compression error and add it
        back next time; the communicator keeps it under `key`, so every
        distinct buffer (gradient bucket) needs its own key, the same on
        every rank. block, topk_fraction, stochastic, seed: the
        compressor's parameters (library defaults when None).
        momentum (top-k with error feedback): DGC's momentum correction
        in the library, which keeps the velocity under `key` where this
        rank compresses and, with momentum_masking, clears it where this
        rank sent; the result is the averaged velocity (see tp_coll.h).
        segment (hierarchical int8 / 1-bit): elements per pipeline segment
        (library default 1048576; 0: the whole tensor at once): the
        compressed exchange across groups of one segment runs while the
        host and group links carry the in-group stages of its neighbours
        (compressed at the group level with hierarchical='group').
        overlap=False runs the segments' stages one after another (the
        same result; to measure what the pipeline gains).
        topk_threshold (top-k): "sampled" (None, the library's default:
        every entry at or above the k-th largest of a 65,536-entry
        sample, up to 2k) or "exact" (exactly the k largest, ties to the
        lower index; a full selection, slower on large tensors).
        """
        return self._run(self._checked("allreduce", lambda: self._all_reduce_call(tensor, *args, **kw)))

    def all_reduce_async(self, tensor, *args, **kw):
        """all_reduce() (same arguments) on the progress thread: returns at once a
        torch.futures.Future that the thread completes with `tensor` (or
        with the TopoplaceError) once the call is done. Bad arguments
        raise here, before anything is queued. Leave `tensor` alone until
        the Future is done."""
        import torch

        fn = self._checked("allreduce", lambda: self._all_reduce_call(tensor, *args, **kw))
        fut = torch.futures.Future()
        done = lambda r, e: fut.set_exception(e) if e is not None else fut.set_result(r)  # noqa: E731
        with self._lock:  # two threads' first calls start one thread
            self._handle("all_reduce_async")  # not closed since fn was made
            if self._progress is None:
                self._progress = _Progress("topoplace-coll rank %d" % self.rank)
            p = self._progress
            here = threading.current_thread() is p.thread
            if not here:
                p.submit(fn, done)
        if here:
            # from a Future's callback (PowerSGD's hook waits on calls it
            # makes there): queued behind the callback, a wait in it
            # would never end; it runs now, in order with the callback
            _call(fn, done)
        return fut

    def _all_reduce_call(self, tensor, op="sum", algorithm="auto", compressor=None, hierarchical=True,
                         error_feedback=True, key=0, block=None, topk_fraction=None, stochastic=None,
                         seed=None, momentum=None, momentum_masking=True, segment=None, overlap=None,
                         topk_threshold=None):
        """Check the arguments (every one, also those a dense call does
        not use); the library call as a function of none."""
        compressed = compressor not in (None, "none")
        dt = _dtype_code(tensor, compressed)
        o = _choice(_lib.OPS, op, "op")
        a = _choice(_lib.ALGOS, algorithm, "algorithm")
        kind = _choice(_lib.COMPRESSORS, compressor, "compressor")
        block, topk_fraction, seed = _compressor_opts(compressor, block, topk_fraction, seed,
                                                      hierarchical)
        if key is not None:
            key = _int_in(key, 0, 2 ** 64 - 1, "key")
        error_feedback = _flag(error_feedback, "error_feedback")
        stochastic = _flag(stochastic, "stochastic", none_ok=True)
        momentum_masking = _flag(momentum_masking, "momentum_masking")
        if momentum is not None and not 0.0 <= float(momentum) < 1.0:
            raise ValueError("momentum %r not in [0, 1)" % (momentum,))
        # the library's own rules (compress.c check_opts), said before it is called
        if compressed and op not in ("sum", "avg"):
            raise ValueError("op %r: the compressed all-reduce sums (op 'sum' or 'avg')" % (op,))
        if compressed and momentum is not None and float(momentum) > 0.0 and (
                compressor != "topk" or not error_feedback):
            raise ValueError("momentum %r: top-k with error feedback only" % (momentum,))
        segment, overlap = _pipeline_opts(segment, overlap)
        exact = _topk_threshold(topk_threshold)
        comm = self._handle("all_reduce")
        ptr = ctypes.c_void_p(tensor.data_ptr())
        n = tensor.numel()
        if not compressed:

            def dense():
                self._check("all_reduce", _lib.LIB.tp_coll_allreduce(comm, ptr, ptr, n, dt, o, a), comm)
                return tensor
            return dense
        if not _lib.HAVE_COMPRESSION:
            raise CompressionUnavailable("all_reduce(compressor=%r)" % compressor)
        c = _lib.CompOpts()
        _lib.LIB.tp_coll_comp_opts_defaults(ctypes.byref(c))
        c.kind = kind
        if hierarchical == "group":
            c.levels = _lib.LEVEL_GROUP | _lib.LEVEL_CROSS
        else:
            c.levels = _lib.LEVEL_CROSS if hierarchical else (_lib.LEVEL_HOST | _lib.LEVEL_GROUP | _lib.LEVEL_CROSS)
        c.error_feedback = bool(error_feedback)
        if block is not None:
            c.block = block
        if topk_fraction is not None:
            c.topk_fraction = topk_fraction
        if stochastic is not None:
            c.stochastic = bool(stochastic)
        if seed is not None:
            c.seed = seed
        if momentum is not None:
            c.momentum = float(momentum)
        c.momentum_masking = bool(momentum_masking)
        if segment is not None:
            c.segment = segment
        if overlap is not None:
            c.overlap = overlap
        if exact is not None:
            c.topk_exact = exact
        key = key or 0

        def compressed_call():
            rc = _lib.LIB.tp_coll_allreduce_compressed(comm, ptr, n, o, ctypes.byref(c), key)
            self._check("all_reduce(compressor=%s)" % compressor, rc, comm)
            return tensor
        return compressed_call

    def broadcast(self, tensor, root=0):
        """Copy root's tensor into every rank's, in place; returns it."""
        dt, root = self._checked("broadcast", lambda: (_dtype_code(tensor, False),
                                                       _int_in(root, 0, self.size - 1, "root")))
        comm = self._handle("broadcast")
        ptr = ctypes.c_void_p(tensor.data_ptr())
        n = tensor.numel()

        def call():
            self._check("broadcast", _lib.LIB.tp_coll_broadcast(comm, ptr, n, dt, root), comm)
            return tensor
        return self._run(call)

    def barrier(self):
        comm = self._handle("barrier")
        self._run(lambda: self._check("barrier", _lib.LIB.tp_coll_barrier(comm), comm))

    def sent_bytes(self, peer):
        """Bytes this rank handed to `peer` since init or reset_stats()."""
        comm = self._handle("sent_bytes")
        peer = _int_in(peer, -2 ** 63, 2 ** 63 - 1, "peer")
        if not 0 <= peer < self.size:  # the library's 0 for a peer out of range
            return 0
        return self._run(lambda: _lib.LIB.tp_coll_comm_sent_bytes(comm, peer))

    def reset_stats(self):
        comm = self._handle("reset_stats")
        self._run(lambda: _lib.LIB.tp_coll_comm_stats_reset(comm))

    def forget_residual(self, key=None):
        """Free the error-feedback residuals (and top-k velocity) the
        library keeps for `key`, or for every key (None): the next
        compressed call with it starts from zero. Not collective; nothing
        for a key without any, or a library without compression."""
        comm = self._handle("forget_residual")
        args = (comm,) if key is None else (comm, _int_in(key, 0, 2 ** 64 - 1, "key"))
        name = "tp_coll_comm_comp_reset" if key is None else "tp_coll_comm_comp_forget"
        if name in _lib.OPTIONAL:
            fn = getattr(_lib.LIB, name)
            self._run(lambda: fn(*args))

    def cross_bytes(self):
        """Bytes this rank sent to ranks of other level-1 groups (across the
        groups' up-links) since init or reset_stats(): the library's own
        counter when it has one, else the per-peer counters summed over
        the peers the plan puts in another group."""
        comm = self._handle("cross_bytes")
        if "tp_coll_comm_cross_bytes" in _lib.OPTIONAL:
            return self._run(lambda: _lib.LIB.tp_coll_comm_cross_bytes(comm))
        if self._groups is None:
            if not self.plan_path:
                raise ValueError("cross_bytes: plan path unknown")
            self._groups = _plan_groups(self.plan_path)
        mine = self._groups[self.rank]
        return self._run(lambda: sum(_lib.LIB.tp_coll_comm_sent_bytes(comm, p)
                                     for p, g in self._groups.items() if g != mine))

    def phase_times(self):
        """Seconds since init or reset_stats() (a profile): the library's
        phases (tp_coll_phase_t: "call" whole all-reduces, "inner" and
        "cross" the hierarchical stages inside and between groups,
        "compress" and "decompress" within those; {} from a library
        without them) and "queued", how long all_reduce_async calls waited
        for the progress thread (not reset by reset_stats())."""
        comm = self._handle("phase_times")
        out = {}
        if "tp_coll_comm_phase_ns" in _lib.OPTIONAL:
            out = self._run(lambda: {name: _lib.LIB.tp_coll_comm_phase_ns(comm, i) / 1e9
                                     for i, name in enumerate(_lib.PHASES)})
        p = self._progress  # once: close() may clear it meanwhile
        out["queued"] = p.queued_s if p is not None else 0.0
        return out

    def close(self):
        """Finish the calls already submitted, stop the progress thread and
        destroy the communicator (not collective; peers still in a call
        fail). Later calls raise ValueError (closed). Called in a Future's
        callback (on the progress thread), it returns at once and the
        communicator goes once the calls queued behind the callback ran."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed before it
            return
        with lock:
            comm, self._comm = self._comm, None
            p, self._progress = self._progress, None

            def destroy():
                _lib.LIB.tp_coll_comm_destroy(comm)
            ended = False
            if p is not None:
                # on the thread, after what is queued (it holds this
                # comm): never under a call still running there
                ended = p.end_queue(last=destroy if comm else None)
            elif comm:
                destroy()  # no thread: no call runs but under this lock
        if ended and threading.current_thread() is not p.thread:
            p.thread.join()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_comm", None):
            self.close()

    def __repr__(self):
        return "<topoplace_coll.Communicator rank %d of %d, %d hosts>" % (self.rank, self.size, self.nhosts)


_default = None


def default_communicator():
    """The process-wide Communicator from the environment, created on first use."""
    global _default
    if _default is None:
        _default = Communicator()
    return _default


def all_reduce(tensor, op="sum", algorithm="auto", compressor=None, hierarchical=True,
               error_feedback=True, comm=None, **kw):
    """Communicator.all_reduce on `comm` (default: default_communicator())."""
    c = comm if comm is not None else default_communicator()
    return c.all_reduce(tensor, op=op, algorithm=algorithm, compressor=compressor,
                        hierarchical=hierarchical, error_feedback=error_feedback, **kw)


from . import hooks  # noqa: E402  (uses the names above)
