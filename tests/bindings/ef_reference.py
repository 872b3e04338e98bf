"""Error feedback of the compressed all-reduce against a reference of the
scheme (run by tests/bindings/torch.sh; issue 10's error-feedback check).

2 ranks of one host, flat ring (hierarchical=False), 30 calls with the
same key on constant inputs. The reference, in numpy float32, keeps what
the library should keep: each rank's stage-1 residual on the half it
sends (its input + residual, compressed, to the owner) and the owner's
stage-2 residual on the reduced half (compressed again and decoded by
both). The library must give the reference's result at every call: int8
bit for bit, 1-bit to rounding (its block mean sums in another order).
A residual dropped, kept under the wrong position, not carried between
calls or kept for one stage only breaks the match within a few calls.
Usage: ef_reference.py PLAN PORT (PLAN: 2 ranks on one host). Exit 0 all
matched, 1 a mismatch, 77 no torch or numpy.
"""

import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print("SKIP: %s" % e)
    sys.exit(77)

N, BLOCK, CALLS = 1024, 256, 30


def quantise(kind, x):
    y = x.reshape(-1, BLOCK)
    if kind == "1bit":
        s = np.abs(y).mean(1, keepdims=True, dtype=np.float64).astype(np.float32)
        return np.where(y < 0, -s, s).reshape(-1)
    s = np.abs(y).max(1, keepdims=True) / np.float32(127)
    return (np.rint(y / s) * s).astype(np.float32).reshape(-1)


def reference(kind, g, calls):
    half = [slice(0, N // 2), slice(N // 2, N)]
    e1 = [np.zeros(N // 2, np.float32) for _ in g]
    e2 = [np.zeros(N // 2, np.float32) for _ in g]
    for _ in range(calls):
        out = np.zeros(N, np.float32)
        for k in range(2):  # rank k owns half k
            o = 1 - k
            a = g[o][half[k]] + e1[o]
            q = quantise(kind, a)
            e1[o] = a - q
            b = (g[k][half[k]] + q) + e2[k]
            q2 = quantise(kind, b)
            e2[k] = b - q2
            out[half[k]] = q2
        yield out


def worker(rank, plan, port, q):
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    import topoplace_coll as tc

    lines, failed = [], 0
    comm = tc.Communicator(plan=plan, rank=rank, master_addr="127.0.0.1", master_port=port, timeout_s=60)
    rng = np.random.default_rng(3)
    # heavy-tailed, as gradients are: most of a block small, a few large
    g = [(rng.standard_normal(N) * rng.random(N) ** 3).astype(np.float32) for _ in range(2)]
    if not tc.have_compression():
        q.put((rank, 0, ["# the library has no compression: nothing to check"]))
        return
    for key, kind in enumerate(("int8", "1bit"), 1):
        tol = 0.0 if kind == "int8" else 1e-5
        worst, at = 0.0, 0
        for t, want in enumerate(reference(kind, g, CALLS), 1):
            x = torch.from_numpy(g[rank].copy())
            comm.all_reduce(x, op="sum", compressor=kind, hierarchical=False, key=key)
            d = float(np.abs(x.numpy() - want).max() / np.abs(want).max())
            if d > worst or t == 1:
                worst, at = d, t
        ok = worst <= tol
        failed += not ok
        lines.append("%s - %s error feedback, %d calls: library = reference of the two-stage scheme "
                     "(worst relative difference %.2g at call %d, allowed %.0g)"
                     % ("ok" if ok else "FAIL", kind, CALLS, worst, at, tol))
    comm.close()
    q.put((rank, failed, lines))


def main():
    from test_torch import run_ranks

    return run_ranks(2, worker, (sys.argv[1], int(sys.argv[2])), timeout=120)

if __name__ == "__main__":
    sys.exit(main())
