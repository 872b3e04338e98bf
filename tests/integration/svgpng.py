#!/usr/bin/python3
"""Look at a picture as a person would: read the SVG for where things are
and what the legend says, decode the PNG rsvg-convert made of it, and
check the colours at those places.

  svgpng.py host SVG PNG HOST LEGEND_ID   host cell has the legend colour
  svgpng.py outline SVG PNG HOST LEGEND_ID  so has its outline (left edge)
  svgpng.py link SVG PNG LINK LEGEND_ID   line (or arc) holding fabric
                                          link LINK has the legend colour
  svgpng.py text SVG WORDS...             each text is in the SVG's text

Exit 0 when every check holds, 1 with a line saying what was seen."""
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

NS = "{http://www.w3.org/2000/svg}"


def png_rgb(path):
    """Pixels of an 8-bit RGB/RGBA non-interlaced PNG as rows of tuples."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and lace == 0, \
                "PNG kind %d/%d/%d" % (depth, ctype, lace)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 4 if ctype == 6 else 3
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else
                                      b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return rows


def rgb(hexcol):
    return tuple(int(hexcol[i:i + 2], 16) for i in (1, 3, 5))


def near(a, b, tol=3):
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def by_id(svg, ident):
    for el in svg.iter():
        if el.get("id") == ident:
            return el
    sys.exit("no element with id %s in the SVG" % ident)


def legend_colour(svg, ident):
    el = by_id(svg, ident)
    return el.get("fill") if el.tag == NS + "rect" else el.get("stroke")


def look(pix, points, want, what):
    seen = []
    for x, y in points:
        got = pix[int(round(y))][int(round(x))]
        if near(got, rgb(want)):
            print("ok: %s at (%d,%d) is %s" % (what, x, y, want))
            return True
        seen.append("#%02x%02x%02x at (%d,%d)" % (got + (x, y)))
    print("FAIL: %s should be %s, saw %s" % (what, want, ", ".join(seen)))
    return False


def main(argv):
    cmd, svg = argv[1], ET.parse(argv[2]).getroot()
    if cmd == "text":
        text = " ".join("".join(t.itertext()) for t in svg.iter(NS + "text"))
        missing = [w for w in argv[3:] if w not in text]
        if missing:
            print("FAIL: not in the picture's text: %s" % missing)
            return 1
        print("ok: text has %s" % argv[3:])
        return 0
    pix, thing, legend = png_rgb(argv[3]), argv[4], argv[5]
    want = legend_colour(svg, legend)
    lx = by_id(svg, legend)
    if lx.tag == NS + "rect":
        lp = (float(lx.get("x")) + 6, float(lx.get("y")) + 6)
    else:
        lp = ((float(lx.get("x1")) + float(lx.get("x2"))) / 2,
              float(lx.get("y1")))
    ok = look(pix, [lp], want, "legend swatch %s" % legend)
    if cmd in ("host", "outline"):
        el = by_id(svg, "host-" + thing)
        x, y = float(el.get("x")), float(el.get("y"))
        w, h = float(el.get("width")), float(el.get("height"))
        if cmd == "host":
            ok &= look(pix, [(x + w / 2, y + h / 2)], want, "host " + thing)
        else:
            ok &= look(pix, [(x, y + h / 2), (x - 0.6, y + h / 2)], want,
                       "outline of host " + thing)
    elif cmd == "link":
        lines = [el for el in list(svg.iter(NS + "line")) + list(svg.iter(NS + "path"))
                 if thing in (el.get("data-links") or "").split(",")]
        if not lines:
            print("FAIL: no line holds link %s" % thing)
            return 1
        el = lines[0]
        ts = (0.5, 0.4, 0.6, 0.3, 0.7)
        if el.tag == NS + "path":  # an arc: "M x1 y1 Q cx cy x2 y2"
            x1, y1, cx, cy, x2, y2 = (float(v) for v in el.get("d").split()
                                      if v not in ("M", "Q"))
            pts = [((1 - t) ** 2 * x1 + 2 * (1 - t) * t * cx + t * t * x2,
                    (1 - t) ** 2 * y1 + 2 * (1 - t) * t * cy + t * t * y2) for t in ts]
        else:
            x1, y1, x2, y2 = (float(el.get(k)) for k in ("x1", "y1", "x2", "y2"))
            pts = [(x1 + (x2 - x1) * t, y1 + (y2 - y1) * t) for t in ts]
        ok &= look(pix, pts, want, "line of link " + thing)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
