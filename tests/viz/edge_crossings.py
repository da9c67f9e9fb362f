#!/usr/bin/env python3
"""edge_crossings.py SVG... — how often a picture's refused-candidate edges (dashed red) pass through a
fusion box that holds neither of their ends, measured on Graphviz's own SVG: each cluster's box, each
node's box, each edge's Bézier path sampled every few pixels. Prints one line per file and a total:
    FILE: R refused edges, C cross a foreign fusion box (B boxes crossed), E of all E_all edges cross one
With --max-refused N (and --max-all N) it exits 1 when the totals exceed them (a test's floor)."""
import html
import re
import sys


def numbers(text):
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def bbox(points):
    xs, ys = points[0::2], points[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def shape_box(block):
    pts = []
    for m in re.finditer(r'<(?:path|polygon)[^>]* (?:d|points)="([^"]*)"', block):
        pts += numbers(m.group(1))
    for m in re.finditer(r'<ellipse[^>]* cx="([^"]*)" cy="([^"]*)" rx="([^"]*)" ry="([^"]*)"', block):
        cx, cy, rx, ry = map(float, m.groups())
        pts += [cx - rx, cy - ry, cx + rx, cy + ry]
    return bbox(pts) if pts else None


def bezier_points(d):
    """Points along an SVG path of M and C commands (Graphviz's edge splines)."""
    out = []
    for seg in re.finditer(r"([MC])([^MC]*)", d):
        v = numbers(seg.group(2))
        if seg.group(1) == "M":
            cur = v[0:2]
            out.append(tuple(cur))
            continue
        for k in range(0, len(v) - 5, 6):
            p0, p1, p2, p3 = cur, v[k:k + 2], v[k + 2:k + 4], v[k + 4:k + 6]
            for i in range(1, 21):
                t = i / 20
                a, b, c, e = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t * t, t ** 3
                out.append((a * p0[0] + b * p1[0] + c * p2[0] + e * p3[0], a * p0[1] + b * p1[1] + c * p2[1] + e * p3[1]))
            cur = p3
    return out


def inside(box, p, margin=2.0):
    return box[0] + margin < p[0] < box[2] - margin and box[1] + margin < p[1] < box[3] - margin


def analyse(svg):
    clusters, nodes, edges = [], {}, []
    for g in re.finditer(r'<g id="[^"]*" class="(cluster|node|edge)">\s*<title>([^<]*)</title>(.*?)</g>\s*(?=<!--|<g id=|</g>\s*</svg>|</svg>)',
                         svg, re.S):
        kind, title, body = g.group(1), html.unescape(g.group(2)), g.group(3)
        if kind == "cluster":
            b = shape_box(body)
            if b:
                clusters.append((title, b))
        elif kind == "node":
            b = shape_box(body)
            if b:
                nodes[title] = ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)
        else:
            m = re.search(r'<path fill="none"([^>]*) d="([^"]*)"', body)
            if m and "->" in title:
                tail, head = title.split("->", 1)
                refused = 'stroke="#d62728"' in m.group(1) and "stroke-dasharray" in m.group(1)
                edges.append((tail, head, refused, bezier_points(m.group(2))))
    refused = crossing = boxes = crossing_all = 0
    for tail, head, is_refused, pts in edges:
        ends = [nodes.get(tail), nodes.get(head)]
        hit = 0
        for _, box in clusters:
            if any(e and inside(box, e, 0) for e in ends):
                continue
            if sum(inside(box, p) for p in pts) >= 2:
                hit += 1
        refused += is_refused
        crossing += is_refused and hit > 0
        boxes += hit if is_refused else 0
        crossing_all += hit > 0
    return refused, crossing, boxes, crossing_all, len(edges)


def main():
    args = sys.argv[1:]
    limits = {}
    while args and args[0].startswith("--max-"):
        limits[args[0]] = int(args[1])
        args = args[2:]
    tot = [0, 0, 0, 0, 0]
    for path in args:
        r = analyse(open(path).read())
        tot = [a + b for a, b in zip(tot, r)]
        print(f"{path}: {r[0]} refused edges, {r[1]} cross a foreign fusion box ({r[2]} boxes crossed), "
              f"{r[3]} of all {r[4]} edges cross one")
    print(f"total: {tot[0]} refused edges, {tot[1]} cross a foreign fusion box ({tot[2]} boxes crossed), "
          f"{tot[3]} of all {tot[4]} edges cross one")
    bad = tot[1] > limits.get("--max-refused", tot[1]) or tot[3] > limits.get("--max-all", tot[3])
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
