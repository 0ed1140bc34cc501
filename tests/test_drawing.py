"""The SVG drawing of a DFA and the egg-box diagram (checked against the DFA and Green's relations)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from langclass.core.drawing.svg import dfa_svg, edge_label, eggbox, eggbox_html, layered_layout
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.ingest.parse import parse_regex

NS = "{http://www.w3.org/2000/svg}"
REGEXES = ["(ab)*", "(a|b)*a(a|b)(a|b)", "a(ab)*b|ba*", "(aa)*", "((a|b)(a|b)(a|b))*", "a*b*a*"]


@pytest.mark.parametrize("regex", REGEXES)
def test_svg_has_every_state_and_every_transition(regex: str) -> None:
    dfa = parse_regex(regex, ["a", "b"])
    root = ET.fromstring(dfa_svg(dfa))
    groups = list(root.iter(f"{NS}g"))
    states = {int(g.get("data-state")) for g in groups if (g.get("class") or "").startswith("state")}
    assert states == set(range(dfa.num_states))
    drawn: dict[tuple[int, int], str] = {}
    for g in groups:
        if g.get("class") == "edge":
            drawn[int(g.get("data-from")), int(g.get("data-to"))] = g.find(f"{NS}text").text
    expected: dict[tuple[int, int], list[str]] = {}
    for q in range(dfa.num_states):
        for s, r in zip(dfa.alphabet, dfa.transitions[q].tolist()):
            expected.setdefault((q, r), []).append(s)
    assert drawn == {k: edge_label(v) for k, v in expected.items()}


def test_layout_columns_are_bfs_distances() -> None:
    dfa = parse_regex("abab", ["a", "b"])
    pos = layered_layout(dfa)
    sink = [q for q in range(dfa.num_states) if (dfa.transitions[q] == q).all() and not dfa.accepting[q]]
    for i in range(5):
        assert pos[dfa.run("abab"[:i])][0] == i  # abab: a chain, column = distance from the initial state
    assert pos[sink[0]][0] == max(p[0] for p in pos.values())


def test_hide_sink_and_names() -> None:
    dfa = parse_regex("ab", ["a", "b"])
    svg = dfa_svg(dfa, hide_sink=True, state_names={0: ["start"], 1: ["x", "y"]})
    root = ET.fromstring(svg)
    states = [g for g in root.iter(f"{NS}g") if (g.get("class") or "").startswith("state")]
    assert len(states) == dfa.num_states - 1
    labels = [g.find(f"{NS}text").text for g in states]
    assert "start" in labels and "x,y" in labels  # merged states: every name (before: "x+1")


def test_tomita3_labels_are_the_users_names_and_never_repeat() -> None:
    """Tomita 3 given with integer state names, 0 and 2 equivalent and a missing edge (an implicit
    sink): the merged node is labelled ``0,2`` (before: ``0+1``, read as a name), and the sink ``⊥``
    (before: its canonical number 4, the label of the user's state 4 too)."""
    import langclass
    from langclass.core.drawing.svg import state_label

    doc = {"alphabet": ["0", "1"], "states": [0, 1, 2, 3, 4], "initial": 0, "accepting": [0, 1, 2, 4],
           "transitions": {"0": {"0": 2, "1": 1}, "2": {"0": 0, "1": 1}, "1": {"0": 3, "1": 0}, "3": {"0": 4},
                           "4": {"0": 3, "1": 1}}}
    r = langclass.classify(dfa=doc)
    root = ET.fromstring(dfa_svg(r.dfa, state_names=r.state_names))
    states = [g for g in root.iter(f"{NS}g") if (g.get("class") or "").startswith("state")]
    labels = [g.find(f"{NS}text").text for g in states]
    assert sorted(labels) == sorted(["0,2", "1", "3", "4", "⊥"]) and len(set(labels)) == len(labels)
    assert state_label(3, ["a-long-name", "b"], named=True) == "a-long-…"
    assert state_label(3, [], named=False) == "3" and state_label(3, [], named=True) == "#3"


def test_edge_labels_are_unambiguous() -> None:
    assert edge_label(["a", "b"]) == "a | b"
    assert edge_label([",", "|"]) == ', | "|"'
    assert edge_label(["a b"]) == '"a b"'


@pytest.mark.parametrize("regex", ["(ab)*", "(aa)*", "a*b*a*", "((a|b)(a|b)(a|b))*", "(a|b)*a(a|b)"])
def test_eggbox_is_greens_structure(regex: str) -> None:
    M = transition_monoid(parse_regex(regex, ["a", "b"]))
    g = M.green
    box = eggbox(M, max_d_classes=1000, max_side=1000, max_cell=1000)
    assert not box.truncated and box.total_d_classes == int(g["J"].max()) + 1
    seen: list[int] = []
    stars = 0
    for d in box.d_classes:
        for row in d["rows"]:
            r_ids = {int(g["R"][e["id"]]) for cell in row for e in cell["elements"]}
            assert len(r_ids) == 1  # a row is one R-class
            for cell in row:
                ids = [e["id"] for e in cell["elements"]]
                if ids:
                    assert len({int(g["H"][x]) for x in ids}) == 1  # a cell is one H-class
                    assert len(ids) == int(np.sum(g["H"] == g["H"][ids[0]]))
                seen += ids
                stars += sum(e["idempotent"] for e in cell["elements"])
                assert (cell["group"] is not None) == any(M.idempotent[x] for x in ids)
        cols = list(zip(*d["rows"]))
        for col in cols:
            l_ids = {int(g["L"][e["id"]]) for cell in col for e in cell["elements"]}
            assert len(l_ids) == 1  # a column is one L-class
    assert sorted(seen) == list(range(M.size))
    assert stars == int(M.idempotent.sum())
    html = eggbox_html(box)
    assert html.count('class="dclass') == box.total_d_classes and html.count("*") == stars


def test_eggbox_names_groups_and_pages() -> None:
    M = transition_monoid(parse_regex("((a|b)(a|b)(a|b))*", ["a", "b"]))
    box = eggbox(M)
    assert any(cell["group"] == "Z3" for d in box.d_classes for row in d["rows"] for cell in row)
    small = eggbox(transition_monoid(parse_regex("a*b*a*", ["a", "b"])), max_d_classes=1)
    assert len(small.d_classes) == 1 and small.truncated
    assert "summarized" in eggbox_html(small)


@pytest.mark.parametrize("n", range(2, 15))
def test_long_cycle_back_edges_stay_inside_the_viewbox(n: int) -> None:
    """(a^n)*: the back edge n-1 -> 0 arcs high above the row; every arc point, label and circle
    must lie inside the viewBox (it used to put labels at negative y, cut off)."""
    import re

    svg = dfa_svg(parse_regex(f"(a{{{n}}})*", ["a"]).canonical())
    root = ET.fromstring(svg)
    bx, by, bw, bh = (float(v) for v in root.get("viewBox").split())
    assert float(root.get("width")) == bw and float(root.get("height")) == bh

    def inside(x: float, y: float) -> bool:
        return bx <= x <= bx + bw and by <= y <= by + bh

    ns = "{http://www.w3.org/2000/svg}"
    texts = list(root.iter(f"{ns}text"))
    assert len(texts) >= n
    for t in texts:
        assert inside(float(t.get("x")), float(t.get("y"))), (t.text, t.get("x"), t.get("y"), root.get("viewBox"))
    paths = [p for p in root.iter(f"{ns}path") if p.get("d", "").startswith("M") and "," in p.get("d")]
    assert len(paths) >= n
    for p in paths:
        if p.get("d") == "M0,0 L10,5 L0,10 z":
            continue  # the arrow-head marker, in its own viewBox
        nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", p.get("d"))]
        for x, y in zip(nums[::2], nums[1::2]):
            assert inside(x, y), (p.get("d"), root.get("viewBox"))
    for c in root.iter(f"{ns}circle"):
        r = float(c.get("r"))
        assert inside(float(c.get("cx")) - r, float(c.get("cy")) - r) and inside(float(c.get("cx")) + r, float(c.get("cy")) + r)


def test_lattice_labels_are_whole_and_fit_their_boxes() -> None:
    """Every class name is drawn in full (two lines when long), never cut with an ellipsis."""
    import re

    import html

    from langclass.core.drawing.svg import _CHAR_W, lattice_svg
    from langclass.core.algebra.lattice import CLASS_INFO, CLASS_KEYS

    svg = lattice_svg({k: True for k in CLASS_KEYS})
    assert "…" not in svg
    box_w = float(re.search(r'<rect [^>]*? width="([\d.]+)"', svg).group(1))
    for k in CLASS_KEYS:
        group = re.search(rf'data-class="{k}">(.*?)</g>', svg).group(1)
        lines = re.findall(r"<text [^>]*>([^<]*)</text>", group)
        assert html.unescape(" ".join(lines)) == CLASS_INFO[k].name.split(" (")[0]
        assert all(len(line) * 12 * _CHAR_W <= box_w - 12 for line in lines), (k, lines)
    assert len(re.findall(r"<text ", re.search(r'data-class="locally_threshold_testable">(.*?)</g>', svg).group(1))) == 2
