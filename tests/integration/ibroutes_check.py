#!/usr/bin/python3
"""Check a fabric model's up/down orientation against a subnet manager's
forwarding tables (the ibroute files hwloc's netloc kept beside each dump).

    ibroutes_check.py FABRIC.json IBROUTES_DIR [MIN_HOPS [MIN_LAST]]

FABRIC.json is `topoplace discover`'s model of the same dump: its switches'
level and rank (both computed by topoplace) decide which way each cable
runs, as tp_fabric_switch_above() does. For every switch table and every
destination CA on a host, the port the subnet manager forwards to must be
a hop topoplace's routing allows there: down (towards a switch that
reaches the destination's leaf downward) when the switch reaches it
downward, else up. A last hop, from the destination's leaf, must leave by
the port the model cables that CA to (a CA is known by its port GUID, else
by a description no other CA has). Prints the counts; exit 1 when a hop
disagrees or fewer than MIN_HOPS (default 1) switch hops or MIN_LAST
(default 1) last hops were checked, 2 on bad input.
"""
import glob
import json
import os
import re
import sys


def main():
    if len(sys.argv) not in (3, 4, 5):
        sys.exit(__doc__)
    fabric, tables = sys.argv[1], sys.argv[2]
    min_hops = int(sys.argv[3]) if len(sys.argv) >= 4 else 1
    min_last = int(sys.argv[4]) if len(sys.argv) == 5 else 1
    try:
        f = json.load(open(fabric))
    except (OSError, ValueError) as e:
        print("ibroutes_check: %s: %s" % (fabric, e), file=sys.stderr)
        return 2
    sw = f["switches"]
    level = [s["level"] for s in sw]
    rank = [s["rank"] for s in sw]
    by_guid = {int(s["guid"], 16): i for i, s in enumerate(sw)}
    by_desc = {c["desc"]: i for i, c in enumerate(f["cas"])}
    by_ca_guid = {int(c["guid"], 16): i for i, c in enumerate(f["cas"])}
    ndesc = {}
    for c in f["cas"]:
        ndesc[c["desc"]] = ndesc.get(c["desc"], 0) + 1
    port_to = {}  # (switch, port) -> (kind, index)
    nbrs = [set() for _ in sw]
    ca_leaf = {}
    for l in f["links"]:
        k0, n0, p0, k1, n1, p1 = l[:6]
        if k0 == "switch":
            port_to[(n0, p0)] = (k1, n1)
        if k1 == "switch":
            port_to[(n1, p1)] = (k0, n0)
        if k0 == "switch" and k1 == "switch" and n0 != n1:
            nbrs[n0].add(n1)
            nbrs[n1].add(n0)
        if k0 == "switch" and k1 == "ca":
            ca_leaf.setdefault(n1, n0)
        if k1 == "switch" and k0 == "ca":
            ca_leaf.setdefault(n0, n1)

    def above(a, b):  # tp_fabric_switch_above
        if level[a] < 1 or level[b] < 1 or a == b:
            return False
        if level[a] != level[b]:
            return level[a] == level[b] + 1
        return rank[a] < rank[b] if rank[a] != rank[b] else a < b

    reach = {}

    def reaches(s):  # s and the switches below it
        if s not in reach:
            r = {s}
            for u in nbrs[s]:
                if above(s, u):
                    r |= reaches(u)
            reach[s] = r
        return reach[s]

    sys.setrecursionlimit(10000)
    ok = bad = last_ok = last_bad = 0
    for path in sorted(glob.glob(os.path.join(tables, "*"))):
        lines = open(path, errors="replace").read().splitlines()
        m = re.search(r"guid (0x[0-9a-fA-F]+)", lines[0] if lines else "")
        if not m or int(m.group(1), 16) not in by_guid:
            print("ibroutes_check: %s: no switch of the fabric" % path, file=sys.stderr)
            return 2
        s = by_guid[int(m.group(1), 16)]
        for ln in lines[1:]:
            m = re.match(r"0x[0-9a-fA-F]+ (\d+) : \(Channel Adapter portguid (0x[0-9a-fA-F]+): '(.*)'\)", ln)
            if not m:
                continue
            port, ca = int(m.group(1)), by_ca_guid.get(int(m.group(2), 16))
            if ca is None and ndesc.get(m.group(3)) == 1:
                ca = by_desc[m.group(3)]
            if ca is None or ca not in ca_leaf or (s, int(port)) not in port_to:
                continue
            kind, n = port_to[(s, port)]
            if kind == "ca":
                if n == ca:
                    last_ok += 1
                else:
                    last_bad += 1
                    if last_bad <= 5:
                        print("ibroutes_check: %s: to %s the SM leaves %s by port %d, "
                              "the model's cable to %s" % (path, m.group(3), sw[s]["desc"],
                                                           port, f["cas"][n]["desc"]))
                continue
            if kind != "switch":
                continue
            leaf = ca_leaf[ca]
            if leaf in reaches(s):
                allowed = {u for u in nbrs[s] if above(s, u) and leaf in reaches(u)}
            else:
                allowed = {u for u in nbrs[s] if above(u, s)}
            if n in allowed:
                ok += 1
            else:
                bad += 1
                if bad <= 5:
                    print("ibroutes_check: %s: to %s the SM goes %s -> %s, a hop the "
                          "model does not take" % (path, m.group(3), sw[s]["desc"], sw[n]["desc"]))
    print("ibroutes_check: %d switch hops as the model routes, %d not; "
          "%d last hops to the CA's own port, %d not" % (ok, bad, last_ok, last_bad))
    return 0 if bad == 0 and last_bad == 0 and ok >= min_hops and last_ok >= min_last else 1


if __name__ == "__main__":
    sys.exit(main())
