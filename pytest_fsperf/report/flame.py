"""A differential flame graph as inline SVG (no script, no network): the shape is B's profile
(each frame as wide as its share of B's samples, callers below callees), the colour how its
share moved from A (red: more of the daemon's samples in B, blue: fewer; white: the same),
as in Brendan Gregg's differential flame graphs. Drawn here: no renderer that is kept up
writes a self-contained SVG from Python (flamegraph.pl and inferno are other languages'
tools; d3-flame-graph needs its script and d3)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field

W, ROW, MIN_W = 960, 16, 1.0  # width, frame height, narrowest frame drawn (px)


@dataclass
class Node:
    count: int = 0
    children: dict[str, Node] = field(default_factory=dict)


def tree(folded: Sequence[tuple[str, int]] | Sequence[Sequence[object]]) -> Node:
    root = Node()
    for stack, n in folded:
        count = int(str(n))
        root.count += count
        node = root
        for frame in str(stack).split(";"):
            node = node.children.setdefault(frame, Node())
            node.count += count
    return root


def _colour(delta: float) -> str:
    """delta: the frame's share in B less its share in A (-1..1)."""
    strength = min(1.0, abs(delta) * 5)  # 20 points of the samples is full colour
    fade = int(255 * (1 - strength))
    return f"rgb(255,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},255)"


def svg(a: Sequence[Sequence[object]], b: Sequence[Sequence[object]], title: str) -> str:
    ta, tb = tree(a), tree(b)
    if not tb.count or not ta.count:
        return ""
    rects: list[str] = []
    depth_max = 0

    def draw(nb: Node, na: Node | None, x: float, depth: int) -> None:
        nonlocal depth_max
        for name, child in sorted(nb.children.items()):
            width = W * child.count / tb.count
            if width < MIN_W:
                continue
            other = na.children.get(name) if na else None
            share_b, share_a = child.count / tb.count, (other.count / ta.count if other else 0.0)
            depth_max = max(depth_max, depth)
            tip = f"{name}: {100 * share_a:.1f}% of A's samples, {100 * share_b:.1f}% of B's"
            rects.append(f'<g><title>{html.escape(tip)}</title><rect class="mark" x="{x:.1f}" '
                         f'y="{{y{depth}}}" width="{width:.1f}" height="{ROW - 1}" '
                         f'fill="{_colour(share_b - share_a)}" stroke="#bbb" stroke-width="0.3"/>'
                         + (f'<text x="{x + 2:.1f}" y="{{t{depth}}}">'
                            f'{html.escape(name[: int(width / 7)])}</text>' if width > 30 else "")
                         + "</g>")
            draw(child, other, x, depth + 1)
            x += width

    draw(tb, ta, 0.0, 0)
    height = (depth_max + 1) * ROW + 24
    body = "".join(rects)
    for d in range(depth_max + 1):  # callers at the bottom
        y = height - (d + 1) * ROW
        body = body.replace(f"{{y{d}}}", str(y)).replace(f"{{t{d}}}", str(y + ROW - 4))
    nameless = sum(int(str(n)) for stack, n in b  # after the thread's name, no frame named
                   if all(f.startswith("[unknown") for f in str(stack).split(";")[1:]))
    why = ""
    if nameless >= tb.count / 2:
        why = ("<p>Most of B's samples are <code>[unknown]</code>: the daemon's binary has no "
               "symbols (stripped, or built without them), so perf cannot name its functions. A "
               "build with symbols (<code>-g</code>, not stripped) names them here.</p>")
    return (f'<svg class="chart" width="{W}" height="{height}" viewBox="0 0 {W} {height}" '
            f'role="img" aria-label="{html.escape(title)}"><text x="0" y="14" font-weight="bold">'
            f'{html.escape(title)}</text>{body}</svg>{why}')
