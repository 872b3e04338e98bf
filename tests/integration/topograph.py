#!/usr/bin/python3
"""Helper of integration/topograph.sh.

  topograph.py fabric OUT.json [--domains]
      the topology NVIDIA topograph's slinky-oci-sim test model describes
      (a core switch, 6 spines of 2 leaves each, 8 hosts srvSLNN a leaf),
      as a topoplace-fabric/1 file; --domains: each leaf's 8 hosts one
      NVLink domain (its slinky-dra block model)
  topograph.py tree OURS.conf EXPECTED.conf
      the two topology.conf trees are the same but for switch names: each
      switch compared by the hosts below it and its level
  topograph.py block OURS.conf EXPECTED.conf
      the same BlockName lines in order but for names; EXPECTED's
      BlockSizes a prefix of ours (printed)
Exit 0 and one line when they agree, 1 and what differs otherwise.
"""

import json
import re
import sys


def fabric(out, domains):
    sw, cas, links, doms = [], [], [], []

    def addsw(desc, ports):
        sw.append({"guid": "0x%016x" % (0x1000 + len(sw)), "desc": desc, "ports": ports,
                   "subnet": 0})
        return len(sw) - 1

    core = addsw("core", 6)
    for s in range(6):
        sp = addsw("spine-%d" % (s + 1), 3)
        links.append(["switch", core, s + 1, "switch", sp, 3, 4, 100, True])
        for lf_i in range(2):
            lf = addsw("leaf-%d-%d" % (s + 1, lf_i + 1), 9)
            links.append(["switch", sp, lf_i + 1, "switch", lf, 9, 4, 100, True])
            for n in range(8):
                name = "srv%d%d%02d" % (s + 1, lf_i + 1, n + 1)
                cas.append({"guid": "0x%016x" % (0x9000 + len(cas)), "desc": name + " mlx5_0",
                            "ports": 1, "subnet": 0})
                links.append(["switch", lf, n + 1, "ca", len(cas) - 1, 1, 4, 100, True])
                if domains:
                    doms.append({"domain": "nvl-%d-%d" % (s + 1, lf_i + 1), "host": name})
    with open(out, "w") as fp:
        json.dump({"format": "topoplace-fabric/1", "subnets": 1, "switches": sw, "cas": cas,
                   "links": links, "hosts": [], "guid_map": [], "nvlink_domains": doms,
                   "warnings": []}, fp)


def expand(hl):
    """Slurm's host list syntax, as these files use it: prefix[a-b,c]."""
    out = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]+)\])?", hl):
        pre, rng = m.group(1), m.group(2)
        if rng is None:
            out.append(pre)
            continue
        for part in rng.split(","):
            a, _, b = part.partition("-")
            b = b or a
            for i in range(int(a), int(b) + 1):
                out.append(pre + str(i).zfill(len(a)))
    return out


def conf(path):
    """(kind, name, {key: value}) of each line that is not a comment."""
    lines = []
    with open(path) as fp:
        for ln in fp:
            ln = ln.split("#", 1)[0].strip()
            if not ln:
                continue
            kv = dict(f.split("=", 1) for f in ln.split())
            lines.append(kv)
    return lines


def tree(ours, want):
    def shape(path):
        sw = {kv["SwitchName"]: kv for kv in conf(path) if "SwitchName" in kv}
        memo = {}

        def below(name):  # (level, hosts)
            if name not in memo:
                kv = sw[name]
                if "Nodes" in kv:
                    memo[name] = (1, frozenset(expand(kv["Nodes"])))
                else:
                    kids = [below(k) for k in expand(kv["Switches"])]
                    memo[name] = (1 + max(k[0] for k in kids),
                                  frozenset().union(*(k[1] for k in kids)))
            return memo[name]

        return sorted((lv, sorted(h)) for lv, h in (below(n) for n in sw))

    a, b = shape(ours), shape(want)
    if a != b:
        print("trees differ:\n ours %s\n want %s" % (a, b))
        return 1
    print("the same tree: %d switches, %d levels" % (len(a), max(x[0] for x in a)))
    return 0


def block(ours, want):
    def shape(path):
        kvs = conf(path)
        blocks = [sorted(expand(kv["Nodes"])) for kv in kvs if "BlockName" in kv]
        sizes = [kv["BlockSizes"] for kv in kvs if "BlockSizes" in kv]
        return blocks, (sizes[0].split(",") if sizes else [])

    (ba, sa), (bb, sb) = shape(ours), shape(want)
    if ba != bb:
        print("blocks differ:\n ours %s\n want %s" % (ba, bb))
        return 1
    if sa[:len(sb)] != sb:
        print("BlockSizes %s do not start with topograph's %s" % (",".join(sa), ",".join(sb)))
        return 1
    print("the same %d blocks; BlockSizes %s (topograph %s)" % (len(ba), ",".join(sa),
                                                               ",".join(sb)))
    return 0


def main():
    if sys.argv[1] == "fabric":
        fabric(sys.argv[2], "--domains" in sys.argv[3:])
        return 0
    return {"tree": tree, "block": block}[sys.argv[1]](sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    sys.exit(main())
