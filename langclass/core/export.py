"""Export a DFA: the DFA JSON input schema (round-trips through :func:`parse.parse_dfa_json`) and Graphviz DOT."""

from __future__ import annotations

import json

import numpy as np

from .automaton import DFA

__all__ = ["dfa_to_json", "dfa_to_dot", "sink_states"]


def dfa_to_json(dfa: DFA) -> dict:
    """The DFA in the input schema, with integer state names ``0..n-1`` (the DFA's own numbering).

    Returns:
        ``{"alphabet": [...], "states": [0, ..., n-1], "initial": q0, "accepting": [...],
        "transitions": {"q": {symbol: q'}}}``; JSON object keys are strings (``"0"``), values are
        ints. Every transition is listed (the DFA is complete), so the sink is explicit.
        ``parse_dfa_json(dfa_to_json(d))`` has the fingerprint of ``d``.
    """
    tl = dfa.transitions.tolist()
    return {
        "alphabet": list(dfa.alphabet),
        "states": list(range(dfa.num_states)),
        "initial": int(dfa.initial),
        "accepting": dfa.accepting_states,
        "transitions": {str(q): {s: int(r) for s, r in zip(dfa.alphabet, row)} for q, row in enumerate(tl)},
    }


def sink_states(dfa: DFA) -> np.ndarray:
    """Boolean mask ``[n]`` of rejecting states that loop on every letter (the textbook sink)."""
    t = dfa.transitions
    loops = (t == np.arange(dfa.num_states)[:, None]).all(axis=1)
    return loops & ~dfa.accepting


def _dot_id(text: str) -> str:
    """A DOT double-quoted string (backslash and quote escaped, newlines as \\n)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def dfa_to_dot(dfa: DFA, *, name: str = "dfa", hide_sink: bool = False) -> str:
    """Graphviz DOT text of the DFA.

    Accepting states are double circles, the initial state has an arrow from an invisible node,
    parallel edges are merged with comma-separated labels (symbols in alphabet order; symbols
    containing ``,`` are quoted with ``json.dumps``).

    Args:
        name: the graph name.
        hide_sink: omit rejecting states that loop on every letter (and edges into them).
    """
    hidden = sink_states(dfa) if hide_sink else np.zeros(dfa.num_states, dtype=bool)
    lines = [f"digraph {_dot_id(name)} {{", "  rankdir=LR;", '  __start [shape=point, label=""];']
    for q in range(dfa.num_states):
        if hidden[q]:
            continue
        shape = "doublecircle" if dfa.accepting[q] else "circle"
        lines.append(f"  {q} [shape={shape}, label={_dot_id(str(q))}];")
    lines.append(f"  __start -> {dfa.initial};")
    tl = dfa.transitions.tolist()
    for q, row in enumerate(tl):
        if hidden[q]:
            continue
        grouped: dict[int, list[str]] = {}
        for s, r in zip(dfa.alphabet, row):
            if hidden[r]:
                continue
            grouped.setdefault(r, []).append(json.dumps(s, ensure_ascii=False) if ("," in s or s.strip() != s) else s)
        for r, syms in grouped.items():
            lines.append(f"  {q} -> {r} [label={_dot_id(','.join(syms))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
