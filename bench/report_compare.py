#!/usr/bin/env python3
"""report_compare.py A.html B.html — do two `report` pages say the same thing?

Used to check a change to how the report is drawn (bench/viz_render.md): the text of the two pages
outside their pictures must be identical, byte for byte, and each picture must hold the same
things: the same nodes (title, label text, tooltip, shape colours), the same edges (ends, label,
tooltip, colour, style), the same clusters (title, label, colours). Positions, the order in which
Graphviz wrote them and how an edge label is attached (label or xlabel) are not compared: they are
the layout, not what the picture says.

Prints one line per page part that differs and exits 1, or prints what it compared and exits 0.
With --same-layout the pictures must also be byte-identical.
"""
import html
import re
import sys
from collections import Counter

SVG = re.compile(r"<svg.*?</svg>", re.S)
GROUP = re.compile(r'<g id="(?:node|edge|clust|a_)[^"]*" class="(node|edge|cluster)">(.*?)</g>\n(?=<!--|<g id|</g>|</svg>)', re.S)
TITLE = re.compile(r"<title>(.*?)</title>", re.S)
TEXT = re.compile(r"<text[^>]*?(?: fill=\"([^\"]*)\")?[^>]*>(.*?)</text>", re.S)
LINK = re.compile(r'xlink:title="([^"]*)"')
PAINT = re.compile(r'<(?:polygon|path|ellipse|polyline)[^>]*?fill="([^"]*)"[^>]*?stroke="([^"]*)"(?:[^>]*?stroke-width="([^"]*)")?(?:[^>]*?stroke-dasharray="([^"]*)")?')


def parts(page):
    text = open(page, encoding="utf-8").read()
    return SVG.sub("<svg/>", text), SVG.findall(text)


def meaning(svg):
    """What a picture says, as a multiset of its elements' contents."""
    things = Counter()
    # The graph's own title and label (texts outside any node, edge or cluster group).
    for kind, body in GROUP.findall(svg):
        title = html.unescape(" ".join(TITLE.findall(body)))
        texts = tuple(html.unescape(t) for _, t in TEXT.findall(body))
        links = tuple(sorted(set(html.unescape(t) for t in LINK.findall(body))))
        paint = tuple(sorted(set((f, s, w or "", d or "") for f, s, w, d in PAINT.findall(body))))
        things[(kind, title, tuple(sorted(texts)), links, paint)] += 1
    rest = GROUP.sub("", svg)
    things[("graph", tuple(sorted(html.unescape(t) for _, t in TEXT.findall(rest))))] += 1
    return things


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    same_layout = "--same-layout" in sys.argv
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    (ta, pa), (tb, pb) = parts(args[0]), parts(args[1])
    bad = 0
    if ta != tb:
        la, lb = ta.splitlines(), tb.splitlines()
        k = next((i for i in range(min(len(la), len(lb))) if la[i] != lb[i]), min(len(la), len(lb)))
        print(f"the page's text differs at line {k + 1}:\n  {la[k][:200] if k < len(la) else '(end)'}\n  "
              f"{lb[k][:200] if k < len(lb) else '(end)'}")
        bad += 1
    if len(pa) != len(pb):
        print(f"{len(pa)} pictures against {len(pb)}")
        bad += 1
    identical = 0
    for k, (a, b) in enumerate(zip(pa, pb)):
        if a == b:
            identical += 1
            continue
        if same_layout:
            print(f"picture {k + 1}: not byte-identical")
            bad += 1
            continue
        ma, mb = meaning(a), meaning(b)
        if ma != mb:
            only_a, only_b = ma - mb, mb - ma
            print(f"picture {k + 1}: {sum(only_a.values())} elements only in the first, {sum(only_b.values())} only in "
                  f"the second, e.g.\n  {next(iter(only_a), None)}\n  {next(iter(only_b), None)}")
            bad += 1
    if bad:
        return 1
    print(f"same page text; {len(pa)} pictures, {identical} byte-identical, {len(pa) - identical} the same elements "
          "laid out differently")
    return 0


if __name__ == "__main__":
    sys.exit(main())
