"""Export: JSON schema round trip and Graphviz DOT."""

from __future__ import annotations

import json

import numpy as np

from langclass.core.automaton import DFA
from langclass.core.export import dfa_to_dot, dfa_to_json, sink_states
from langclass.core.parse import parse_dfa_json, parse_regex


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
    assert '\\"' in text and "\\\\" in text and '\\",\\"' in text  # quote, backslash and quoted comma escaped
    assert np.array_equal(sink_states(q), [False])
