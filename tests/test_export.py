"""Export: JSON schema round trip and Graphviz DOT."""

from __future__ import annotations

import json

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.automata.export import dfa_to_dot, dfa_to_json, sink_states
from langclass.core.ingest.parse import parse_dfa_json, parse_regex


def test_json_round_trip_keeps_fingerprint() -> None:
    for r, alpha in [("(ab)*", "ab"), ("(a|b)*a(a|b){3}", "ab"), ("∅", "a"), ("(0|1)*&~(.*000.*)", "01")]:
        d = parse_regex(r, list(alpha))
        j = dfa_to_json(d)
        assert j["states"] == list(range(d.num_states)) and j["initial"] == 0
        assert parse_dfa_json(json.dumps(j)).fingerprint() == d.fingerprint()


def test_json_of_non_canonical_dfa() -> None:
    d = DFA.from_table(["x", "y z"], [[1, 2], [1, 1], [2, 2]], 0, [1])
    j = dfa_to_json(d)
    assert j["transitions"]["0"] == {"x": 1, "y z": 2}
    assert parse_dfa_json(j).fingerprint() == d.fingerprint()


def test_dot_output() -> None:
    d = parse_regex("a(a|b)*", ["a", "b"])
    dot = dfa_to_dot(d)
    assert dot.startswith('digraph "dfa" {') and dot.rstrip().endswith("}")
    assert "1 [shape=doublecircle" in dot and "__start -> 0;" in dot
    assert '1 -> 1 [label="a,b"];' in dot
    hidden = dfa_to_dot(d, hide_sink=True)
    assert "2 [" not in hidden and "-> 2" not in hidden
    assert sink_states(d).tolist() == [False, False, True]
    q = DFA.from_table(['"', "\\", ","], [[0, 0, 0]], 0, [0])
    text = dfa_to_dot(q)
    assert '\\"' in text and "\\\\" in text and '\\", \\"' in text  # quote, backslash and quoted comma escaped
    assert np.array_equal(sink_states(q), [False])


def _dot_edges(dot: str) -> dict[tuple[int, int], str]:
    """(source, target) → the label text as Graphviz reads it (DOT string escapes undone)."""
    import re

    out = {}
    for m in re.finditer(r'^  (\d+) -> (\d+) \[label="((?:[^"\\]|\\.)*)"\];$', dot, re.M):
        out[(int(m.group(1)), int(m.group(2)))] = re.sub(r"\\(.)", r"\1", m.group(3))
    return out


def test_dot_edge_labels_name_exactly_one_symbol_set() -> None:
    """With a comma (or a multi-character symbol) in the alphabet, every label is a JSON list of the
    edge's symbols: reading it back gives exactly the symbols of the edge, for every edge."""
    import json

    from langclass.core.automata.export import edge_label

    alphabet = ["a", ",", "a,b", "b"]
    d = DFA.from_table(alphabet, [[1, 1, 0, 1], [1, 0, 1, 0]], 0, [1])
    edges = _dot_edges(dfa_to_dot(d))
    for q in range(2):
        for r in range(2):
            want = [s for s, t in zip(alphabet, d.transitions[q].tolist()) if t == r]
            if want:
                assert json.loads("[" + edges[(q, r)] + "]") == want, edges[(q, r)]
    # the old comma-joined label of {"a", ","} and of {"a,"} … would both have read 'a,,'
    assert edge_label(["a", ","], alphabet) != edge_label(["a,b"], alphabet)
    # plain one-character alphabets keep the short form
    assert edge_label(["a", "b"], ["a", "b"]) == "a,b"


def test_dot_keeps_the_users_state_names() -> None:
    from langclass.core.automata.export import state_names
    from langclass.core.ingest.parse import parse_dfa_json, read_dfa_json

    doc = {"alphabet": ["a", "b"], "states": ["even", "odd", "even2", "dead"], "initial": "even",
           "accepting": ["even", "even2"],
           "transitions": {"even": {"a": "odd", "b": "even2"}, "odd": {"a": "even2", "b": "odd"},
                           "even2": {"a": "odd", "b": "even"}, "dead": {"a": "dead", "b": "dead"}}}
    raw, names = read_dfa_json(doc)
    minimal = parse_dfa_json(doc)
    assert minimal.num_states == 2
    got = state_names(raw, names, minimal)
    assert got == {minimal.initial: ["even", "even2"], 1 - minimal.initial: ["odd"]}  # 'dead' is unreachable
    dot = dfa_to_dot(minimal, names=got)
    assert f'{minimal.initial} [shape=doublecircle, label="{minimal.initial} (even | even2)"];' in dot
    # a partial DFA: the added sink has no user name
    raw, names = read_dfa_json({"alphabet": ["a"], "states": ["s"], "initial": "s", "accepting": ["s"], "transitions": {}})
    minimal = parse_dfa_json({"alphabet": ["a"], "states": ["s"], "initial": "s", "accepting": ["s"], "transitions": {}})
    assert state_names(raw, names, minimal) == {minimal.initial: ["s"]}
