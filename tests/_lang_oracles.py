"""Independent oracles for the ingest tests (no automata involved).

* :func:`set_semantics` — the language of a regex AST restricted to words of length ≤ L, computed
  directly from the set definitions (union, concatenation, star, …, intersection, complement
  w.r.t. Σ^{≤L}); exact because concatenation only adds lengths.
* :func:`to_python_re` — a Python ``re`` pattern for the ``&``/``~``-free fragment.
"""

from __future__ import annotations

import re
from itertools import product

from langclass.core.ingest.regex import Node


def all_words(k: int, max_len: int) -> list[tuple[int, ...]]:
    return [w for n in range(max_len + 1) for w in product(range(k), repeat=n)]


def _concat(a: set, b: set, max_len: int) -> set:
    by_len: dict[int, list] = {}
    for v in b:
        by_len.setdefault(len(v), []).append(v)
    out = set()
    for u in a:
        for n in range(max_len - len(u) + 1):
            for v in by_len.get(n, ()):
                out.add(u + v)
    return out


def _star_from(base: set, start: set, max_len: int) -> set:
    result = set(start)
    frontier = set(start)
    while frontier:
        new = _concat(frontier, base, max_len) - result
        result |= new
        frontier = new
    return result


def set_semantics(node: Node, k: int, max_len: int) -> set[tuple[int, ...]]:
    """L(node) ∩ Σ^{≤max_len} as a set of letter-index tuples (letters 0..k-1)."""
    op, cs = node.op, node.children
    if op == "sym":
        return {(int(node.value),)} if max_len >= 1 else set()
    if op == "any":
        return {(a,) for a in range(k)} if max_len >= 1 else set()
    if op == "eps":
        return {()}
    if op == "empty":
        return set()
    subs = [set_semantics(c, k, max_len) for c in cs]
    if op == "union":
        return set().union(*subs)
    if op == "inter":
        out = subs[0]
        for s in subs[1:]:
            out = out & s
        return out
    if op == "concat":
        out = subs[0]
        for s in subs[1:]:
            out = _concat(out, s, max_len)
        return out
    if op == "star":
        return _star_from(subs[0], {()}, max_len)
    if op == "plus":
        return _star_from(subs[0], subs[0], max_len)
    if op == "opt":
        return subs[0] | {()}
    if op == "compl":
        return set(all_words(k, max_len)) - subs[0]
    if op == "repeat":
        lo, hi = node.value
        power = {()}
        out = set()
        r = 0
        while True:
            if r >= lo and (hi is None or r <= hi):
                out |= power
            if hi is not None and r >= hi:
                break
            if hi is None and r >= lo:
                return out | _star_from(subs[0], power, max_len)
            power = _concat(power, subs[0], max_len)
            r += 1
        return out
    raise AssertionError(op)


def has_boolean_ops(node: Node) -> bool:
    return node.op in ("inter", "compl") or any(has_boolean_ops(c) for c in node.children)


def to_python_re(node: Node, alphabet: list[str]) -> str:
    """Python ``re`` pattern (use with ``fullmatch``) for an AST without ``&`` / ``~``."""
    op, cs = node.op, node.children
    if op == "sym":
        return re.escape(alphabet[int(node.value)])
    if op == "any":
        return "(?:" + "|".join(re.escape(s) for s in alphabet) + ")"
    if op == "eps":
        return "(?:)"
    if op == "empty":
        return "(?!)"
    sub = [to_python_re(c, alphabet) for c in cs]
    if op == "union":
        return "(?:" + "|".join(sub) + ")"
    if op == "concat":
        return "(?:" + "".join(sub) + ")"
    if op in ("star", "plus", "opt"):
        return "(?:" + sub[0] + ")" + {"star": "*", "plus": "+", "opt": "?"}[op]
    if op == "repeat":
        lo, hi = node.value
        return "(?:" + sub[0] + ")" + ("{%d,}" % lo if hi is None else "{%d,%d}" % (lo, hi))
    raise AssertionError(op)
