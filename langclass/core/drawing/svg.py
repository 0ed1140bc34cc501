"""Pictures without Graphviz: the DFA as SVG (a layered layout drawn here) and the egg-box diagram.

:func:`dfa_svg` lays the states out in columns by breadth-first distance from the initial state
(the order :meth:`~langclass.core.automata.automaton.DFA.canonical` numbers them in), orders each column by
the mean row of its predecessors (one barycenter sweep, as in Sugiyama, Tagawa & Toda, "Methods for
visual understanding of hierarchical system structures", 1981), and draws edges between adjacent
columns straight and every other edge as a quadratic curve bent away from the straight line, so
two opposite edges never overlap. Parallel edges are merged; their label lists the symbols in
alphabet order separated by ``" | "`` (a symbol containing ``|``, a space or a quote is written as
a JSON string), so the label is never ambiguous.

:func:`eggbox` arranges the syntactic monoid by Green's relations (Green, "On the structure of
semigroups", 1951): one box per D-class, rows its R-classes, columns its L-classes, each cell an
H-class listing its elements by their shortlex-least words; an H-class that contains an idempotent
is a group (Green's theorem) and carries that group's name; idempotents are starred.
:func:`eggbox_html` renders it as HTML tables (what the web pages and notebooks show).

No third-party drawing library is needed: the output is plain SVG/HTML text.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.limits import DEFAULT_LIMITS, Limits

__all__ = ["dfa_svg", "edge_label", "layered_layout", "eggbox", "eggbox_html", "EggBox", "word_text", "lattice_svg",
           "user_state_names", "eggbox_of"]

_R = 18.0  # node radius (px)
_DX = 120.0  # column distance
_DY = 86.0  # row distance
_MARGIN = 46.0


def word_text(word: Sequence[str]) -> str:
    """A word as text, as reasons write it (:func:`langclass.core.algebra.classes.base.show`): ``ε``
    for the empty word, run together when every symbol is one letter, quoted and separated by
    spaces when every symbol is one character but some is not a letter (``"0 1 1"``), else joined
    with ``·`` (``["x1", "x2"]`` → ``x1·x2``)."""
    from langclass.core.algebra.classes.base import show

    return show(word)


def _symbol(s: str) -> str:
    if s == "" or any(c in s for c in '| "\\') or s != s.strip():
        return json.dumps(s, ensure_ascii=False)
    return s


def edge_label(symbols: Sequence[str]) -> str:
    """The label of a merged edge: its symbols separated by ``" | "`` (ambiguous symbols quoted).

    >>> edge_label(["a", "b"]), edge_label([",", "a|b"])
    ('a | b', ', | "a|b"')
    """
    return " | ".join(_symbol(s) for s in symbols)


def layered_layout(dfa: DFA) -> dict[int, tuple[float, float]]:
    """``{state: (column, row)}``: column = breadth-first distance from the initial state (states
    the initial state cannot reach go to one extra column), rows ordered by one barycenter sweep.
    """
    n = dfa.num_states
    tl = dfa.transitions.tolist()
    depth = [-1] * n
    depth[dfa.initial] = 0
    queue = [dfa.initial]
    for q in queue:
        for r in tl[q]:
            if depth[r] < 0:
                depth[r] = depth[q] + 1
                queue.append(r)
    last = max(depth) + 1
    depth = [d if d >= 0 else last for d in depth]
    sink = _sink_mask(dfa)
    if sink.any() and not sink[dfa.initial]:  # the sink gets a column of its own, at the right
        right = max(d for q, d in enumerate(depth) if not sink[q]) + 1
        depth = [right if sink[q] else d for q, d in enumerate(depth)]
    columns: dict[int, list[int]] = {}
    for q in range(n):
        columns.setdefault(depth[q], []).append(q)
    row: dict[int, float] = {}
    preds: list[list[int]] = [[] for _ in range(n)]
    for q in range(n):
        for r in tl[q]:
            if r != q:
                preds[r].append(q)
    for c in sorted(columns):
        states = columns[c]
        if c > 0:
            def bary(q: int) -> float:
                rows = [row[p] for p in preds[q] if p in row]
                return sum(rows) / len(rows) if rows else float(q)
            states.sort(key=lambda q: (bary(q), q))
        for i, q in enumerate(states):
            row[q] = i - (len(states) - 1) / 2
    return {q: (float(depth[q]), row[q]) for q in range(n)}


def _sink_mask(dfa: DFA) -> np.ndarray:
    t = dfa.transitions
    return (t == np.arange(dfa.num_states)[:, None]).all(axis=1) & ~dfa.accepting


def dfa_svg(dfa: DFA, *, state_names: Mapping[int, Sequence[str]] | None = None, hide_sink: bool = False,
            title: str | None = None) -> str:
    """The DFA as a standalone SVG document (no Graphviz needed).

    Args:
        dfa: any complete DFA (drawn as numbered; pass the canonical DFA for the canonical picture).
        state_names: optional ``{state: [user names]}`` (e.g. the names of a DFA JSON input that
            minimization merged into that state); shown as the node label (:func:`state_label`:
            the names joined by commas, ``⊥`` for the added sink) and in full in the node's tooltip.
        hide_sink: leave out rejecting states that loop on every letter (and edges into them).
        title: text of the SVG ``<title>``.

    Returns:
        SVG text. Accepting states are double circles, the initial state has an arrow coming from
        the left, a sink is dashed grey; every ``<g class="state">`` has ``data-state`` (the
        number) and every ``<g class="edge">`` has ``data-from``/``data-to``.
    """
    n = dfa.num_states
    sink = _sink_mask(dfa) if hide_sink else np.zeros(n, dtype=bool)
    sink_style = _sink_mask(dfa)
    pos_grid = layered_layout(dfa)
    shown = [q for q in range(n) if not sink[q]]
    if not shown:
        shown = [dfa.initial]
    min_row = min(pos_grid[q][1] for q in shown)
    max_row = max(pos_grid[q][1] for q in shown)
    max_col = max(pos_grid[q][0] for q in shown)
    pos = {q: (_MARGIN + 40 + c * _DX, _MARGIN + 24 + (r - min_row) * _DY) for q, (c, r) in pos_grid.items()}
    width = _MARGIN * 2 + 40 + max_col * _DX + 20
    height = _MARGIN * 2 + 24 + (max_row - min_row) * _DY + 30
    edges: dict[tuple[int, int], list[str]] = {}
    for q in shown:
        for s, r in zip(dfa.alphabet, dfa.transitions[q].tolist()):
            if sink[r]:
                continue
            edges.setdefault((q, int(r)), []).append(s)
    out: list[str] = []
    # bounding box of everything drawn: the layout box, then every Bézier control polygon (it
    # contains its curve), every label (text box around its baseline) and every circle
    box = [0.0, 0.0, width, height]

    def cover(x: float, y: float, pad_x: float = 4.0, pad_y: float = 4.0) -> None:
        box[0], box[1] = min(box[0], x - pad_x), min(box[1], y - pad_y)
        box[2], box[3] = max(box[2], x + pad_x), max(box[3], y + pad_y)

    def cover_text(x: float, y: float, text: str) -> None:  # text-anchor middle, 13px font, y = baseline
        half = 4.0 + 4.0 * len(text)
        cover(x - half, y - 14.0, 0.0, 0.0)
        cover(x + half, y + 5.0, 0.0, 0.0)

    x0, y0 = pos[dfa.initial]
    cover(x0 - _R - 34, y0)
    out.append(f'<line class="start" x1="{x0 - _R - 34:.1f}" y1="{y0:.1f}" x2="{x0 - _R - 1:.1f}" y2="{y0:.1f}" '
               'stroke="#333" stroke-width="1.4" marker-end="url(#arrow)"/>')
    for (q, r), syms in edges.items():
        label = html.escape(edge_label(syms))
        xq, yq = pos[q]
        attrs = f'class="edge" data-from="{q}" data-to="{r}"'
        if q == r:  # self-loop on the side away from the middle row (above the upper half, below the lower)
            a, up = 0.55, (-1.0 if pos_grid[q][1] <= 0 else 1.0)
            sx, sy = xq - _R * math.sin(a), yq + up * _R * math.cos(a)
            ex, ey = xq + _R * math.sin(a), yq + up * _R * math.cos(a)
            ty = yq + up * 52 + (0 if up < 0 else 10)
            for px, py in ((sx, sy), (xq - 30, yq + up * 62), (xq + 30, yq + up * 62), (ex, ey)):
                cover(px, py)
            cover_text(xq, ty, edge_label(syms))
            out.append(f'<g {attrs}><path d="M{sx:.1f},{sy:.1f} C{xq - 30:.1f},{yq + up * 62:.1f} {xq + 30:.1f},{yq + up * 62:.1f} '
                       f'{ex:.1f},{ey:.1f}" fill="none" stroke="#333" stroke-width="1.4" marker-end="url(#arrow)"/>'
                       f'<text x="{xq:.1f}" y="{ty:.1f}" text-anchor="middle">{label}</text></g>')
            continue
        xr, yr = pos[r]
        dx, dy = xr - xq, yr - yq
        dist = math.hypot(dx, dy) or 1.0
        ux, uy = dx / dist, dy / dist
        nx, ny = -uy, ux
        adjacent_forward = pos_grid[r][0] == pos_grid[q][0] + 1 and (r, q) not in edges
        bend = 0.0 if adjacent_forward else (22.0 + 0.18 * dist)
        cx, cy = (xq + xr) / 2 + nx * bend, (yq + yr) / 2 + ny * bend
        # endpoints on the circles, aimed at the control point
        def clip(x: float, y: float, tx: float, ty: float) -> tuple[float, float]:
            d = math.hypot(tx - x, ty - y) or 1.0
            return x + (tx - x) / d * _R, y + (ty - y) / d * _R
        sx, sy = clip(xq, yq, cx, cy)
        ex, ey = clip(xr, yr, cx, cy)
        mx, my = 0.25 * sx + 0.5 * cx + 0.25 * ex, 0.25 * sy + 0.5 * cy + 0.25 * ey
        lx, ly = mx + nx * 9, my + ny * 9 + 4
        for px, py in ((sx, sy), (cx, cy), (ex, ey)):
            cover(px, py)
        cover_text(lx, ly, edge_label(syms))
        out.append(f'<g {attrs}><path d="M{sx:.1f},{sy:.1f} Q{cx:.1f},{cy:.1f} {ex:.1f},{ey:.1f}" fill="none" '
                   f'stroke="#333" stroke-width="1.4" marker-end="url(#arrow)"/>'
                   f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="middle" paint-order="stroke" stroke="#fff" '
                   f'stroke-width="3">{label}</text></g>')
    for q in shown:
        x, y = pos[q]
        cover(x, y, _R + 2, _R + 2)
        names = list(state_names.get(q, ())) if state_names else []
        text = state_label(q, names, named=bool(state_names), sink=bool(sink_style[q]))
        tip = f"state {q}" + (f" = {', '.join(names)}" if names else
                              (" = the sink added for missing transitions" if state_names and sink_style[q] else ""))
        tip += (" (initial)" if q == dfa.initial else "") + (" accepting" if dfa.accepting[q] else "")
        dashed = ' stroke-dasharray="4 3"' if sink_style[q] else ""
        colour = "#999" if sink_style[q] else "#222"
        fill = "#eef5ff" if dfa.accepting[q] else "#fff"
        ring = (f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{_R - 4:.1f}" fill="none" stroke="{colour}" stroke-width="1.2"/>'
                if dfa.accepting[q] else "")
        out.append(f'<g class="state{" accepting" if dfa.accepting[q] else ""}" data-state="{q}"><title>{html.escape(tip)}</title>'
                   f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{_R:.1f}" fill="{fill}" stroke="{colour}" stroke-width="1.5"{dashed}/>'
                   f'{ring}<text x="{x:.1f}" y="{y + 4.5:.1f}" text-anchor="middle">{html.escape(text)}</text></g>')
    bx, by = math.floor(box[0]), math.floor(box[1])
    bw, bh = math.ceil(box[2]) - bx, math.ceil(box[3]) - by
    head = [f'<svg xmlns="http://www.w3.org/2000/svg" class="dfa" width="{bw}" height="{bh}" '
            f'viewBox="{bx} {by} {bw} {bh}" font-family="sans-serif" font-size="13">',
            f"<title>{html.escape(title or f'DFA with {n} states')}</title>",
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>']
    out.append("</svg>")
    return "\n".join(head + out)


# ============================================================================ egg-box


@dataclass(frozen=True)
class EggBox:
    """The egg-box diagram of a monoid, possibly summarized.

    Attributes:
        d_classes: one dict per D-class shown, in the order of their least element (the
            shortlex-least word; the identity's class first). Each: ``{"id", "size", "regular",
            "r_classes", "l_classes", "rows": [[cell, ...], ...]}`` where a cell is
            ``{"elements": [{"id", "word", "idempotent"}], "more": int, "group": str | None}``
            (``more`` counts elements left out of a large cell).
        total_d_classes: the number of D-classes of the monoid.
        truncated: a limit left some D-classes, rows, columns or elements out.
    """

    d_classes: tuple[dict[str, Any], ...]
    total_d_classes: int
    truncated: bool


def eggbox(monoid: Any, *, offset: int = 0, max_d_classes: int = 20, max_side: int = 12, max_cell: int = 6) -> EggBox:
    """The egg-box diagram of a :class:`~langclass.core.algebra.monoid.TransitionMonoid`.

    Args:
        monoid: the transition monoid (its ``green`` relations, ``idempotent`` flags, ``word``).
        offset: index of the first D-class shown (D-classes in order of their least element id,
            i.e. of their shortlex-least word); pages of ``max_d_classes``.
        max_d_classes: D-classes per page.
        max_side: at most this many R-classes (rows) and L-classes (columns) per D-class.
        max_cell: at most this many elements listed per H-class (the rest counted in ``more``).

    Returns:
        :class:`EggBox`. The group of an H-class with an idempotent e is the maximal subgroup H_e,
        named by :meth:`~langclass.core.algebra.monoid.TransitionMonoid.maximal_subgroup`.
    """
    g = monoid.green
    J, R, L, H = (np.asarray(g[k]) for k in ("J", "R", "L", "H"))
    idem = np.asarray(monoid.idempotent)
    nj = int(J.max()) + 1
    firsts = sorted(range(nj), key=lambda j: int(np.flatnonzero(J == j)[0]))
    page = firsts[offset:offset + max_d_classes]
    truncated = len(page) < nj
    boxes = []
    for j in page:
        mem = np.flatnonzero(J == j)
        rows = list(dict.fromkeys(int(R[x]) for x in mem))
        cols = list(dict.fromkeys(int(L[x]) for x in mem))
        if len(rows) > max_side or len(cols) > max_side:
            truncated = True
        rows, cols = rows[:max_side], cols[:max_side]
        regular = bool(idem[mem].any())
        grid = []
        for rc in rows:
            line = []
            for lc in cols:
                cell = [int(x) for x in mem if R[x] == rc and L[x] == lc]
                group = None
                es = [x for x in cell if idem[x]]
                if es:
                    gi = monoid.maximal_subgroup(es[0])
                    group = gi.name if gi.order > 1 else "trivial"
                shown = cell[:max_cell]
                if len(cell) > max_cell:
                    truncated = True
                line.append({
                    "elements": [{"id": x, "word": word_text(monoid.word(x)), "idempotent": bool(idem[x])} for x in shown],
                    "more": len(cell) - len(shown),
                    "group": group,
                })
            grid.append(line)
        boxes.append({"id": j, "size": int(mem.size), "regular": regular, "r_classes": len(set(R[mem].tolist())),
                      "l_classes": len(set(L[mem].tolist())), "rows": grid})
    return EggBox(tuple(boxes), nj, truncated)


def eggbox_html(box: EggBox) -> str:
    """HTML of an :class:`EggBox`: one ``<table class="dclass">`` per D-class (rows R-classes,
    columns L-classes); idempotents are marked ``*``, group H-classes shaded with the group's name."""
    parts = ['<div class="eggbox">']
    for d in box.d_classes:
        parts.append(f'<table class="dclass{" regular" if d["regular"] else ""}" data-dclass="{d["id"]}">'
                     f'<caption>D-class {d["id"]}: {d["size"]} element{"s" if d["size"] != 1 else ""}, '
                     f'{d["r_classes"]} R × {d["l_classes"]} L{"" if d["regular"] else " (not regular)"}</caption>')
        for line in d["rows"]:
            parts.append("<tr>")
            for cell in line:
                cls = "hclass group" if cell["group"] else "hclass"
                words = ", ".join(html.escape(e["word"]) + ("*" if e["idempotent"] else "") for e in cell["elements"])
                if cell["more"]:
                    words += f" (+{cell['more']})"
                grp = f'<div class="gname">{html.escape(cell["group"])}</div>' if cell["group"] else ""
                parts.append(f'<td class="{cls}">{words}{grp}</td>')
            parts.append("</tr>")
        parts.append("</table>")
    if box.truncated:
        parts.append(f'<p class="note">summarized: {len(box.d_classes)} of {box.total_d_classes} D-classes shown '
                     "(large classes and cells are cut)</p>")
    parts.append("</div>")
    return "".join(parts)


def eggbox_of(dfa: DFA, limits: Limits = DEFAULT_LIMITS, *, offset: int = 0, max_d_classes: int = 20) -> EggBox:
    """:func:`eggbox` of the syntactic monoid of ``dfa`` (enumerated under ``limits``).

    Raises:
        LimitExceeded: ``max_monoid_size`` / ``max_monoid_entries`` / ``time_limit_s``.
    """
    from langclass.core.algebra.monoid import transition_monoid

    return eggbox(transition_monoid(dfa, limits), offset=offset, max_d_classes=max_d_classes)


def state_label(q: int, names: Sequence[str], *, named: bool, sink: bool = False) -> str:
    """A node's label in :func:`dfa_svg` (at most 8 characters; the tooltip has every name).

    Without user names: the state's number. With them (``named``): the one name, or the merged
    names joined by commas (``0,2``; cut with ``…`` past 8 characters) — never ``0+1``, which read as
    a name when names are digits; a state with no user name is the sink added for missing
    transitions, ``⊥`` — never its number, which could repeat a user's name (two nodes "4")."""
    if not named:
        text = str(q)
    elif not names:
        text = "⊥" if sink else f"#{q}"
    else:
        text = ",".join(str(n) for n in names)
    return text if len(text) <= 8 else text[:7] + "…"


def user_state_names(doc: Mapping[str, Any], dfa: DFA) -> dict[int, tuple[str, ...]]:
    """``{canonical state: (user state names...)}`` for a DFA given in the DFA JSON input schema.

    Walks the user's automaton and the canonical minimal DFA ``dfa`` in lockstep from their initial
    states (breadth-first), so each reachable user state meets the canonical state it was merged
    into. User states that the initial state cannot reach do not appear; a missing user transition
    (the implicit sink) is not followed.
    """
    names: dict[int, list[str]] = {}
    trans = doc.get("transitions") or {}
    rows = {str(k): v for k, v in trans.items()} if isinstance(trans, Mapping) else {}
    index = {s: i for i, s in enumerate(dfa.alphabet)}
    start = (str(doc.get("initial")), dfa.initial)
    seen = {start}
    queue = [start]
    for user, q in queue:
        names.setdefault(q, [])
        if user not in names[q]:
            names[q].append(user)
        row = rows.get(user)
        if not isinstance(row, Mapping):
            continue
        for sym, target in row.items():
            if sym not in index or isinstance(target, (list, dict)):
                continue
            pair = (str(target), int(dfa.transitions[q, index[sym]]))
            if pair not in seen:
                seen.add(pair)
                queue.append(pair)
    return {q: tuple(v) for q, v in sorted(names.items())}


# ============================================================================ class lattice


def _lattice_levels() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Level of each class (longest chain of inclusions below it) and the covering pairs (sub, sup)."""
    from langclass.core.algebra.lattice import CLASS_KEYS, INCLUSIONS

    above: dict[str, set[str]] = {k: set() for k in CLASS_KEYS}
    for sub, sup in INCLUSIONS:
        above[sub].add(sup)
    # transitive closure, then the covering pairs (no class strictly between)
    closure = {k: set(v) for k, v in above.items()}
    changed = True
    while changed:
        changed = False
        for k in CLASS_KEYS:
            extra = set().union(*(closure[m] for m in closure[k])) - closure[k] if closure[k] else set()
            if extra:
                closure[k] |= extra
                changed = True
    covers = [(a, b) for a in CLASS_KEYS for b in sorted(closure[a])
              if not any(b in closure[m] for m in closure[a] if m != b)]
    level: dict[str, int] = {}

    def lvl(k: str) -> int:
        if k not in level:
            below = [a for a, b in covers if b == k]
            level[k] = 1 + max((lvl(a) for a in below), default=-1)
        return level[k]

    for k in CLASS_KEYS:
        lvl(k)
    return level, covers


_CHAR_W = 0.6  # upper bound of a sans-serif character's advance, in em (12px: ≤ 7.2 px)


def _box_label(name: str, cx: float, cy: float, max_w: float, font_px: float = 12.0) -> str:
    """``name`` as centred SVG text that fits ``max_w`` px: one line when it fits, else two lines
    split at the space nearest the middle; a line that still does not fit is squeezed to the width
    (``textLength``) — never cut off."""
    def fits(t: str) -> bool:
        return len(t) * font_px * _CHAR_W <= max_w

    if fits(name) or " " not in name:
        lines = [name]
    else:
        mid = len(name) / 2
        cut = min((i for i, c in enumerate(name) if c == " "), key=lambda i: abs(i - mid))
        lines = [name[:cut], name[cut + 1:]]
    step = font_px + 1
    y0 = cy + font_px / 3 - step * (len(lines) - 1) / 2
    spans = []
    for i, line in enumerate(lines):
        squeeze = "" if fits(line) else f' textLength="{max_w:.0f}" lengthAdjust="spacingAndGlyphs"'
        spans.append(f'<text x="{cx:.1f}" y="{y0 + i * step:.1f}" text-anchor="middle"{squeeze}>{html.escape(line)}</text>')
    return "".join(spans)


def lattice_svg(members: Mapping[str, bool | None], *, href: str = "#class-{key}",
                counts: Mapping[str, int] | None = None, total: int | None = None) -> str:
    """The class lattice as SVG: one box per class (bottom: the smallest classes), an edge for each
    covering inclusion, members green, non-members red, undecided grey; each box links to
    ``href.format(key=...)`` (the certificate on the page).

    Args:
        members: class key → ``True`` / ``False`` / ``None``.
        counts: class key → number of languages (a census): each box then shows its count (and the
            share of ``total`` when given) under the name, in neutral blue (``members`` is ignored).
    """
    from langclass.core.algebra.lattice import CLASS_INFO, CLASS_KEYS

    level, covers = _lattice_levels()
    top = max(level.values())
    rows: dict[int, list[str]] = {}
    for k in CLASS_KEYS:
        rows.setdefault(level[k], []).append(k)
    bw, bh, gx, gy = 150.0, (48.0 if counts is not None else 34.0), 18.0, 46.0
    width = max(len(r) for r in rows.values()) * (bw + gx) + gx
    height = (top + 1) * (bh + gy) + gy
    pos: dict[str, tuple[float, float]] = {}
    for lv, keys in rows.items():
        keys.sort(key=lambda k: CLASS_KEYS.index(k))
        span = len(keys) * (bw + gx) - gx
        x0 = (width - span) / 2
        for i, k in enumerate(keys):
            pos[k] = (x0 + i * (bw + gx), gy / 2 + (top - lv) * (bh + gy))
    fill = {True: "#d9f2d9", False: "#f8d7d7", None: "#e6e6e6"}
    stroke = {True: "#2e7d32", False: "#c62828", None: "#777"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="lattice" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="sans-serif" font-size="12">',
           ("<title>class lattice: the number of languages in each class; lines are inclusions</title>" if counts is not None
            else "<title>class lattice: green member, red not a member, grey undecided; lines are inclusions</title>")]
    for a, b in covers:
        (xa, ya), (xb, yb) = pos[a], pos[b]
        out.append(f'<line x1="{xa + bw / 2:.1f}" y1="{ya:.1f}" x2="{xb + bw / 2:.1f}" y2="{yb + bh:.1f}" stroke="#999"/>')
    for k in CLASS_KEYS:
        x, y = pos[k]
        if counts is not None:
            c = int(counts.get(k, 0))
            share = f" ({c / total:.1%})" if total else ""
            label = _box_label(CLASS_INFO[k].name.split(" (")[0], x + bw / 2, y + bh / 2 - 8, bw - 12)
            out.append(f'<a href="{html.escape(href.format(key=k))}"><g class="class count" data-class="{k}" data-count="{c}">'
                       f"<title>{html.escape(CLASS_INFO[k].name)}: {c} languages{share}</title>"
                       f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw:.0f}" height="{bh:.0f}" rx="6" fill="#dde8f6" '
                       f'stroke="#1f5aa6" stroke-width="2"/>'
                       f'{label}<text class="count" x="{x + bw / 2:.1f}" y="{y + bh - 7:.1f}" text-anchor="middle" '
                       f'font-weight="bold">{c:,}{html.escape(share)}</text></g></a>')
            continue
        m = members.get(k)
        word = {True: "yes", False: "no", None: "?"}[m]
        label = _box_label(CLASS_INFO[k].name.split(" (")[0], x + bw / 2, y + bh / 2, bw - 12)
        out.append(f'<a href="{html.escape(href.format(key=k))}"><g class="class {word}" data-class="{k}">'
                   f"<title>{html.escape(CLASS_INFO[k].name)}: {word}</title>"
                   f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw:.0f}" height="{bh:.0f}" rx="6" fill="{fill[m]}" '
                   f'stroke="{stroke[m]}" stroke-width="2"/>'
                   f"{label}</g></a>")
    out.append("</svg>")
    return "\n".join(out)
