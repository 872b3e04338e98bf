"""ctypes declarations of libtopoplace-coll (coll/tp_coll.h).

Where the library comes from, first match wins:
  1. $TOPOPLACE_COLL_LIB, a path to the shared object (only that: a path
     that does not load is an error, never a silent fallback);
  2. the build tree next to this package, SRCDIR/build/coll/.libs, when
     the package is imported from the source tree;
  3. the libdir `make install` recorded beside the installed package
     (_install.py), then the dynamic loader's own search.

ctypes drops the GIL for the duration of each call, so a collective
blocks only the calling thread.
"""

import ctypes
import ctypes.util
import os

# The -version-info current of coll/Makefile.am (tests/bindings/torch.sh
# checks it against the built library's soname).
SONAME = "libtopoplace-coll.so.3"

# tp_coll.h enums (ABI: the values are the contract).
DTYPES = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "int32": 4, "int64": 5}
OPS = {"sum": 0, "avg": 1, "max": 2, "min": 3}
ALGOS = {"auto": 0, "ring": 1, "hierarchical": 2, "tree": 3}
COMPRESSORS = {None: 0, "none": 0, "int8": 1, "1bit": 2, "topk": 3}
LEVEL_HOST, LEVEL_GROUP, LEVEL_CROSS = 1, 2, 4


class CollOpts(ctypes.Structure):
    """tp_coll_opts_t"""

    _fields_ = [
        ("master_addr", ctypes.c_char_p),
        ("master_port", ctypes.c_int),
        ("timeout_s", ctypes.c_double),
        ("chunk_bytes", ctypes.c_size_t),
        ("sockets", ctypes.c_int),
    ]


class CompOpts(ctypes.Structure):
    """tp_coll_comp_opts_t (compression, issue 10)"""

    _fields_ = [
        ("kind", ctypes.c_int),
        ("levels", ctypes.c_uint),
        ("block", ctypes.c_uint),
        ("topk_fraction", ctypes.c_double),
        ("stochastic", ctypes.c_bool),
        ("error_feedback", ctypes.c_bool),
        ("seed", ctypes.c_uint64),
        ("momentum", ctypes.c_float),
        ("momentum_masking", ctypes.c_bool),
        ("segment", ctypes.c_size_t),
        ("overlap", ctypes.c_bool),
        ("topk_exact", ctypes.c_bool),
    ]


_P = ctypes.c_void_p
_ERR = ctypes.c_int
_REQUIRED = {
    "tp_strerror": (ctypes.c_char_p, [_ERR]),
    "tp_free": (None, [_P]),
    "tp_coll_opts_defaults": (None, [ctypes.POINTER(CollOpts)]),
    "tp_coll_comm_init_file": (
        _ERR,
        [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(CollOpts), ctypes.POINTER(_P), ctypes.POINTER(_P)],
    ),
    "tp_coll_comm_init_env": (_ERR, [ctypes.POINTER(CollOpts), ctypes.POINTER(_P), ctypes.POINTER(_P)]),
    "tp_coll_comm_destroy": (None, [_P]),
    "tp_coll_comm_rank": (ctypes.c_int, [_P]),
    "tp_coll_comm_size": (ctypes.c_int, [_P]),
    "tp_coll_comm_nhosts": (ctypes.c_int, [_P]),
    "tp_coll_comm_detail": (ctypes.c_char_p, [_P]),
    "tp_coll_comm_sent_bytes": (ctypes.c_uint64, [_P, ctypes.c_int]),
    "tp_coll_comm_stats_reset": (None, [_P]),
    "tp_coll_allreduce": (_ERR, [_P, _P, _P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int]),
    "tp_coll_broadcast": (_ERR, [_P, _P, ctypes.c_size_t, ctypes.c_int, ctypes.c_int]),
    "tp_coll_barrier": (_ERR, [_P]),
}
# Compression (issue 10): present only in a library that has it.
_OPTIONAL = {
    "tp_coll_comp_opts_defaults": (None, [ctypes.POINTER(CompOpts)]),
    "tp_coll_allreduce_compressed": (
        _ERR,
        [_P, _P, ctypes.c_size_t, ctypes.c_int, ctypes.POINTER(CompOpts), ctypes.c_uint64],
    ),
    "tp_coll_comm_cross_bytes": (ctypes.c_uint64, [_P]),
    "tp_coll_comm_phase_ns": (ctypes.c_uint64, [_P, ctypes.c_int]),
    "tp_coll_comm_comp_reset": (None, [_P]),
    "tp_coll_comm_comp_forget": (None, [_P, ctypes.c_uint64]),
}
# tp_coll_phase_t, in order
PHASES = ("call", "inner", "cross", "compress", "decompress")


def _candidates():
    path = os.environ.get("TOPOPLACE_COLL_LIB")
    if path:
        return [path], True
    try:
        from . import _install  # written by `make install`

        # installed: the library installed with it (a path relative to an
        # installed package's directory means nothing)
        out = [os.path.join(_install.LIBDIR, SONAME)]
    except ImportError:
        # the source tree: contrib/build.sh's build directory
        here = os.path.dirname(os.path.abspath(__file__))
        out = [os.path.join(here, "..", "..", "..", "build", "coll", ".libs", "libtopoplace-coll.so")]
    # by the soname only: find_library() answers with whatever version
    # the loader's cache holds (an older .so.0 would take these structs'
    # newer fields for its own and speak another wire format)
    out.append(SONAME)
    return out, False


def _load():
    paths, explicit = _candidates()
    tried = []
    for p in paths:
        if os.sep in p and not os.path.exists(p):
            if explicit:
                raise ImportError("TOPOPLACE_COLL_LIB=%s: no such file" % p)
            tried.append(p + " (absent)")
            continue
        try:
            lib = ctypes.CDLL(p)
        except OSError as e:
            if explicit:
                raise ImportError("TOPOPLACE_COLL_LIB=%s: %s" % (p, e)) from None
            tried.append("%s (%s)" % (p, e))
            continue
        return lib, os.path.realpath(p) if os.sep in p else p
    raise ImportError(
        "libtopoplace-coll not found; set TOPOPLACE_COLL_LIB to its path (tried: %s)" % "; ".join(tried)
    )


def _declare(lib, table, optional):
    have = set()
    for name, (res, args) in table.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if optional:
                continue
            raise ImportError("%s lacks %s: not libtopoplace-coll, or too old" % (LIB_PATH, name)) from None
        fn.restype = res
        fn.argtypes = args
        have.add(name)
    return have


LIB, LIB_PATH = _load()
_declare(LIB, _REQUIRED, False)
OPTIONAL = _declare(LIB, _OPTIONAL, True)
HAVE_COMPRESSION = {"tp_coll_comp_opts_defaults", "tp_coll_allreduce_compressed"} <= OPTIONAL


def strerror(code):
    s = LIB.tp_strerror(code)
    return s.decode() if s else "error %d" % code


def take_string(ptr):
    """Copy a char * the library allocated and free it with tp_free()."""
    if not ptr:
        return ""
    s = ctypes.cast(ptr, ctypes.c_char_p).value.decode(errors="replace")
    LIB.tp_free(ptr)
    return s
