"""Export a DFA: the DFA JSON input schema (round-trips through :func:`parse.parse_dfa_json`) and Graphviz DOT."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from .automaton import DFA

__all__ = ["dfa_to_json", "dfa_to_dot", "edge_label", "sink_states", "state_names"]


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


def state_names(original: DFA, names: Sequence[str], minimal: DFA) -> dict[int, list[str]]:
    """The user's state names of each state of ``minimal``: the states of ``original`` (a DFA for the
    same language, e.g. :func:`~langclass.core.ingest.parse.read_dfa_json`'s) that it merges.

    Walks the product of the two automata from their initial states (breadth first): a reachable
    original state ``p`` paired with minimal state ``q`` is equivalent to ``q`` (same residual
    language), so ``names[p]`` belongs to ``q``. Unreachable original states and the added sink
    (index ``>= len(names)``) are left out.

    Returns:
        ``{minimal state: [names in the order of the original states]}``, only states with a name.

    Raises:
        ValueError: the two automata disagree on acceptance somewhere (not the same language).
    """
    if tuple(original.alphabet) != tuple(minimal.alphabet):
        raise ValueError("the two DFAs have different alphabets")
    ot, mt = original.transitions.tolist(), minimal.transitions.tolist()
    start = (int(original.initial), int(minimal.initial))
    seen = {start}
    queue = deque([start])
    owner: dict[int, int] = {}
    while queue:
        p, q = queue.popleft()
        if bool(original.accepting[p]) != bool(minimal.accepting[q]):
            raise ValueError(f"original state {p} and minimal state {q} are reached by one word but differ on acceptance")
        owner[p] = q
        for a in range(len(original.alphabet)):
            nxt = (ot[p][a], mt[q][a])
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    out: dict[int, list[str]] = {}
    for p in sorted(owner):
        if p < len(names):
            out.setdefault(owner[p], []).append(str(names[p]))
    return out


def _plain_symbol(s: str) -> bool:
    """A symbol that reads unambiguously in a comma-joined edge label: one visible character, not a
    comma, quote or backslash."""
    return len(s) == 1 and s not in ',"\\' and not s.isspace()


def edge_label(symbols: Sequence[str], alphabet: Sequence[str]) -> str:
    """The label of an edge carrying ``symbols``: comma-joined when every symbol of the alphabet is
    one plain character (``a,b``); otherwise each symbol JSON-quoted and joined by ``", "``
    (``"x1", "x,2"``), which reads back as a JSON array. Either way a label names exactly one set."""
    if all(_plain_symbol(s) for s in alphabet):
        return ",".join(symbols)
    return ", ".join(json.dumps(s, ensure_ascii=False) for s in symbols)


def dfa_to_dot(dfa: DFA, *, name: str = "dfa", hide_sink: bool = False,
               names: Mapping[int, Sequence[str]] | None = None) -> str:
    """Graphviz DOT text of the DFA.

    Accepting states are double circles, the initial state has an arrow from an invisible node,
    parallel edges are merged into one whose label lists their symbols in alphabet order
    (:func:`edge_label`: comma-joined single characters, or JSON-quoted symbols when some symbol of
    the alphabet is longer, a comma, a quote, a backslash or a space).

    Args:
        name: the graph name.
        hide_sink: omit rejecting states that loop on every letter (and edges into them).
        names: the user's names of each state (:func:`state_names`); a named state is labelled
            ``0 (s)``, or ``1 (t | u)`` when it merges several of the user's states.
    """
    hidden = sink_states(dfa) if hide_sink else np.zeros(dfa.num_states, dtype=bool)
    names = names or {}
    lines = [f"digraph {_dot_id(name)} {{", "  rankdir=LR;", '  __start [shape=point, label=""];']
    for q in range(dfa.num_states):
        if hidden[q]:
            continue
        shape = "doublecircle" if dfa.accepting[q] else "circle"
        label = str(q) + (f" ({' | '.join(names[q])})" if names.get(q) else "")
        lines.append(f"  {q} [shape={shape}, label={_dot_id(label)}];")
    lines.append(f"  __start -> {dfa.initial};")
    tl = dfa.transitions.tolist()
    for q, row in enumerate(tl):
        if hidden[q]:
            continue
        grouped: dict[int, list[str]] = {}
        for s, r in zip(dfa.alphabet, row):
            if hidden[r]:
                continue
            grouped.setdefault(r, []).append(s)
        for r, syms in grouped.items():
            lines.append(f"  {q} -> {r} [label={_dot_id(edge_label(syms, dfa.alphabet))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
