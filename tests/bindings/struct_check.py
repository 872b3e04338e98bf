"""The binding's ctypes mirrors of tp_coll.h's option structs against the C
compiler's layout (run by tests/bindings/torch.sh; needs no torch).

A struct that grows in C but not in _lib.py makes tp_coll_*_defaults()
write past the ctypes buffer and the library read garbage (a field the
mirror lacks), so every field's offset and each struct's size must match.
Usage: struct_check.py SRCDIR WORKDIR (TOPOPLACE_COLL_LIB names the library
_lib.py loads). Prints "ok"/"FAIL" lines; exit 0 all matched, 1 not.
"""

import ctypes
import importlib.util
import os
import subprocess
import sys

src, work = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("tp_lib", os.path.join(src, "bindings/torch/topoplace_coll/_lib.py"))
lib = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lib)

MIRRORS = {"tp_coll_opts_t": lib.CollOpts, "tp_coll_comp_opts_t": lib.CompOpts}
lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "tp_coll.h"', "int main(void)", "{"]
want = []
for ctype, py in MIRRORS.items():
    lines.append('\tprintf("%%zu\\n", sizeof(%s));' % ctype)
    want.append(("sizeof(%s)" % ctype, ctypes.sizeof(py)))
    for name, _ in py._fields_:
        lines.append('\tprintf("%%zu\\n", offsetof(%s, %s));' % (ctype, name))
        want.append(("offsetof(%s, %s)" % (ctype, name), getattr(py, name).offset))
lines += ["\treturn 0;", "}"]
c_file, exe = os.path.join(work, "layout.c"), os.path.join(work, "layout")
with open(c_file, "w") as f:
    f.write("\n".join(lines) + "\n")
cc = os.environ.get("CC", "cc")
r = subprocess.run([cc, "-I", os.path.join(src, "coll"), "-I", os.path.join(src, "common"), "-o", exe, c_file],
                   capture_output=True, text=True)
if r.returncode:
    print("FAIL - %s cannot build the layout probe (a field the C struct lacks?):\n%s" % (cc, r.stderr))
    sys.exit(1)
got = [int(v) for v in subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split()]
failed = 0
for (what, py_value), c_value in zip(want, got):
    if py_value != c_value:
        print("FAIL - %s: %d in C, %d in _lib.py" % (what, c_value, py_value))
        failed += 1
print("%s - %d sizes and offsets of %s as the C compiler lays them out"
      % ("ok" if not failed else "FAIL", len(want), ", ".join(MIRRORS)))
sys.exit(1 if failed else 0)
