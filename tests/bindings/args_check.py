"""Communicator's integer arguments are range-checked in Python, before
ctypes keeps only their low bits (run by tests/bindings/torch.sh; needs no
torch: a stand-in module when it is absent, as nothing here touches it).

Before the check, rank=2**32 joined a one-rank plan as rank 0 and
master_port=2**32 + p listened on port p, both without a word.
Usage: args_check.py PLAN PORT (a plan of one rank; TOPOPLACE_COLL_LIB
names the library). Prints "ok"/"FAIL" lines; exit 0 all passed, 1 not.
"""

import sys
import types

try:
    import torch  # noqa: F401
except ImportError:
    sys.modules["torch"] = types.ModuleType("torch")
import topoplace_coll as tc  # noqa: E402

plan, port = sys.argv[1], int(sys.argv[2])
failures = 0


def expect_value_error(desc, what, **kw):
    global failures
    args = dict(plan=plan, rank=0, master_addr="127.0.0.1", master_port=port, timeout_s=2)
    args.update(kw)
    try:
        c = tc.Communicator(**args)
    except (ValueError, TypeError) as e:
        if what in str(e):
            print("ok - %s: %s" % (desc, e))
            return
        print("FAIL - %s: ValueError without '%s': %s" % (desc, what, e))
    except Exception as e:  # noqa: BLE001 - any other outcome is the failure
        print("FAIL - %s: %s: %s" % (desc, type(e).__name__, e))
    else:
        print("FAIL - %s: joined as rank %d" % (desc, c.rank))
        c.close()
    failures += 1


expect_value_error("rank 2**32 refused", "rank", rank=2 ** 32)
expect_value_error("rank -1 refused", "rank", rank=-1)
expect_value_error("master_port 2**32 + port refused", "master_port", master_port=2 ** 32 + port)
expect_value_error("master_port 65536 refused", "master_port", master_port=65536)
expect_value_error("chunk_bytes -1 refused", "chunk_bytes", chunk_bytes=-1)
expect_value_error("sockets 9 refused", "sockets", sockets=9)
expect_value_error("sockets 0 refused", "sockets", sockets=0)
# not an integer: rank 1.9 joined as rank 1, "0" and True as rank 0
for bad in (0.5, "0", True):
    expect_value_error("rank %r refused" % (bad,), "rank must be an integer", rank=bad)
# a port as os.environ has it, and hierarchical / topk_fraction as numpy
# or ints give them, are taken
with tc.Communicator(plan=plan, rank=0, master_addr="127.0.0.1", master_port=str(port), timeout_s=2) as c:
    ok = c.rank == 0
    print("%s - master_port as a string of digits" % ("ok" if ok else "FAIL"))
    failures += not ok
try:
    tc._compressor_opts("topk", None, 0.5, None, 1)
    tc._compressor_opts("int8", None, None, None, 0)
    print("ok - hierarchical=1 and 0 taken as True and False")
except (TypeError, ValueError) as e:
    print("FAIL - hierarchical 1/0: %s" % e)
    failures += 1
# switches (error_feedback, async_op, ...): a string was read as true
# (error_feedback="False" kept the residual)
for bad in ("False", "no", 0.0, 2):
    try:
        tc._flag(bad, "error_feedback")
        print("FAIL - error_feedback=%r taken" % (bad,))
        failures += 1
    except ValueError as e:
        print("ok - error_feedback=%r refused: %s" % (bad, e))
ok = (tc._flag(0, "x") is False and tc._flag(True, "x") is True and
      tc._flag(None, "x", none_ok=True) is None)
print("%s - switches: 0, True and (where allowed) None taken" % ("ok" if ok else "FAIL"))
failures += not ok
with tc.Communicator(plan=plan, rank=0, master_addr="127.0.0.1", master_port=port, timeout_s=2,
                     sockets=4) as c:
    ok = c.rank == 0 and c.size == 1 and c.sent_bytes(2 ** 32) == 0
    print("%s - rank 0 of 1 joins (sockets=4); sent_bytes of a peer out of range is 0"
          % ("ok" if ok else "FAIL"))
    failures += not ok
sys.exit(1 if failures else 0)
