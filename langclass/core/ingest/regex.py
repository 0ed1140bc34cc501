"""Regular expressions over an explicit alphabet → canonical minimal complete DFA.

The syntax is documented in ``docs/regex.md`` (one syntax, textbook operators plus ``&`` and ``~``).
Pipeline:

1. the text is NFC-normalized and parsed with a LALR(1) grammar (lark) into a small AST
   (:class:`Node`); syntax errors become :class:`RegexSyntaxError` with the 0-based ``position``;
2. every symbol is checked against the declared alphabet (:class:`UnknownSymbolError`, never a
   silent alphabet extension);
3. the AST is compiled to a Thompson ε-NFA (K. Thompson, "Regular expression search algorithm",
   CACM 1968); ``&`` and ``~`` sub-expressions are first determinized, minimized and combined by
   the DFA product / complement, then embedded back into the NFA;
4. the subset construction (Rabin & Scott, "Finite automata and their decision problems", 1959)
   yields a complete DFA (the empty set is the sink), which :meth:`DFA.canonical` minimizes
   (Hopcroft 1971) and numbers breadth-first.

Every step is bounded by :class:`~langclass.core.base.limits.Limits`: ``max_regex_length``,
``max_nesting_depth``, ``max_repetition``, ``max_states`` (NFA size after expanding bounded
repetitions, every intermediate DFA, products) and ``time_limit_s`` (via a :class:`Deadline`).
All compilation is iterative, so deep nesting never hits Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.limits import DEFAULT_LIMITS, Deadline, Limits
from .regex_syntax import RESERVED, Node, parse_regex_ast, render  # noqa: F401 - re-exported
from .regex_syntax import _pop, _postorder

__all__ = ["Node", "parse_regex_ast", "compile_regex", "regex_to_dfa", "RESERVED", "render"]

# ------------------------------------------------------------------------------ NFA builder


class _NFA:
    """Thompson ε-NFA under construction: states are ints; a fragment is (start, end, lo) where the
    fragment's states are exactly ``lo..(current size-1)`` at the time it was finished."""

    __slots__ = ("eps", "trans", "k", "max_states")

    def __init__(self, k: int, max_states: int | None) -> None:
        self.eps: list[list[int]] = []
        self.trans: list[list[tuple[int, int]]] = []
        self.k = k
        self.max_states = max_states

    def new(self) -> int:
        self.eps.append([])
        self.trans.append([])
        if self.max_states is not None and len(self.eps) > 4 * self.max_states + 16:
            from langclass.core.base.errors import LimitExceeded

            raise LimitExceeded(
                "max_states",
                self.max_states,
                f"the regex expands to more than {4 * self.max_states} NFA states (max_states={self.max_states})",
                field="regex",
            )
        return len(self.eps) - 1

    def copy(self, frag: tuple[int, int, int], hi: int) -> tuple[int, int, int]:
        """A fresh copy of a finished fragment whose states are exactly ``lo..hi-1``."""
        start, end, lo = frag
        base = len(self.eps)
        off = base - lo
        for s in range(lo, hi):
            self.new()
        for s in range(lo, hi):
            self.eps[s + off] = [t + off for t in self.eps[s]]
            self.trans[s + off] = [(a, t + off) for a, t in self.trans[s]]
        return start + off, end + off, base


def _nfa_size_estimate(root: Node, k: int) -> int:
    """Upper bound on Thompson NFA states, bounded repetitions expanded (exact ints, no overflow risk)."""
    size: list[int] = []
    for n in _postorder(root):
        cs = _pop(size, len(n.children))
        if n.op in ("sym", "any", "eps", "empty"):
            s = 2
        elif n.op in ("union", "inter", "concat"):
            s = sum(cs) + 2
        elif n.op in ("star", "plus", "opt", "compl"):
            s = cs[0] + 2
        elif n.op == "repeat":
            lo, hi = n.value  # type: ignore[misc]
            copies = (lo + 1) if hi is None else max(hi, 1)
            s = cs[0] * copies + 2 * copies + 2
        else:  # pragma: no cover
            raise AssertionError(n.op)
        size.append(s)
    return size[0]


def compile_regex(root: Node, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None) -> DFA:
    """Compile an AST to a complete DFA (not yet minimized; the caller canonicalizes).

    Raises:
        LimitExceeded: ``max_states`` (NFA after expansion, any DFA, any product) or
            ``time_limit_s`` (:class:`TimeLimitExceeded`).
    """
    deadline = deadline or limits.deadline()
    k = len(alphabet)
    if limits.max_states is not None:
        est = _nfa_size_estimate(root, k)
        if est > 4 * limits.max_states:
            from langclass.core.base.errors import LimitExceeded

            raise LimitExceeded(
                "max_states",
                limits.max_states,
                f"the regex expands (bounded repetitions written out) to about {est} NFA states, more than "
                f"4·max_states={4 * limits.max_states}",
                field="regex",
            )
    nfa = _NFA(k, limits.max_states)
    frags: list[tuple[int, int, int]] = []
    for n in _postorder(root):
        deadline.check("regex compilation")
        cs = _pop(frags, len(n.children))
        lo = cs[0][2] if cs else len(nfa.eps)
        op = n.op
        if op in ("sym", "any", "empty"):
            s, e = nfa.new(), nfa.new()
            if op == "sym":
                nfa.trans[s].append((int(n.value), e))  # type: ignore[arg-type]
            elif op == "any":
                nfa.trans[s].extend((a, e) for a in range(k))
            frag = (s, e, lo)
        elif op == "eps":
            s = nfa.new()
            frag = (s, s, lo)
        elif op == "concat":
            for (s1, e1, _), (s2, e2, _) in zip(cs, cs[1:]):
                nfa.eps[e1].append(s2)
            frag = (cs[0][0], cs[-1][1], lo)
        elif op == "union":
            s, e = nfa.new(), nfa.new()
            for cs_, ce_, _ in cs:
                nfa.eps[s].append(cs_)
                nfa.eps[ce_].append(e)
            frag = (s, e, lo)
        elif op in ("star", "plus", "opt"):
            (cs_, ce_, _), = cs
            s, e = nfa.new(), nfa.new()
            nfa.eps[s].append(cs_)
            nfa.eps[ce_].append(e)
            if op in ("star", "plus"):
                nfa.eps[ce_].append(cs_)
            if op in ("star", "opt"):
                nfa.eps[s].append(e)
            frag = (s, e, lo)
        elif op == "repeat":
            nlo, nhi = n.value  # type: ignore[misc]
            base = cs[0]
            pieces: list[tuple[int, int, int]] = []
            copies_needed = nlo + (1 if nhi is None else nhi - nlo)
            base_hi = len(nfa.eps)
            for i in range(copies_needed):
                pieces.append(base if i == 0 else nfa.copy(base, base_hi))
            s, e = nfa.new(), nfa.new()
            if copies_needed == 0:  # X{0} = X{0,0} = {ε}: the copy of X is dropped
                nfa.eps[s].append(e)
            else:
                nfa.eps[s].append(pieces[0][0])
                for (s1, e1, _), (s2, e2, _) in zip(pieces, pieces[1:]):
                    nfa.eps[e1].append(s2)
                nfa.eps[pieces[-1][1]].append(e)
                if nlo == 0:
                    nfa.eps[s].append(e)
                if nhi is None:  # last copy starred: X{n,} = X^n X*  (n ≥ 1 here, or X{0,} = X*)
                    ls, le, _ = pieces[-1]
                    nfa.eps[le].append(ls)
                    if nlo > 0:
                        # pieces[-1] is the (n+1)-th copy and must be optional
                        prev_end = pieces[-2][1] if len(pieces) >= 2 else s
                        nfa.eps[prev_end].append(e)
                else:
                    # copies nlo+1..nhi are optional: from the end of copy i (i ≥ nlo) one may jump to e
                    for i in range(max(nlo, 1), nhi):
                        nfa.eps[pieces[i - 1][1]].append(e)
            frag = (s, e, lo)
        elif op in ("inter", "compl"):
            dfas = [_determinize(nfa, c[0], c[1], k, alphabet, limits, deadline).canonical() for c in cs]
            if op == "compl":
                d = dfas[0].complement()
            else:
                d = dfas[0]
                for other in dfas[1:]:
                    d = d.product(other, "and", limits=limits).canonical()
            frag = _embed(nfa, d, lo)
        else:  # pragma: no cover
            raise AssertionError(op)
        frags.append(frag)
    s, e, _ = frags[0]
    return _determinize(nfa, s, e, k, alphabet, limits, deadline)


def _embed(nfa: _NFA, d: DFA, lo: int) -> tuple[int, int, int]:
    """Add the useful part of DFA ``d`` (states that can reach acceptance) as an NFA fragment."""
    d = d.canonical()
    t = d.transitions
    n = d.num_states
    # co-reachable states (can reach an accepting state)
    alive = d.accepting.copy()
    rev: list[list[int]] = [[] for _ in range(n)]
    for q, row in enumerate(t.tolist()):
        for r in row:
            rev[r].append(q)
    stack = [int(q) for q in np.flatnonzero(alive)]
    while stack:
        r = stack.pop()
        for q in rev[r]:
            if not alive[q]:
                alive[q] = True
                stack.append(q)
    ids = {}
    for q in range(n):
        ids[q] = nfa.new()
    e = nfa.new()
    tl = t.tolist()
    for q in range(n):
        if not alive[q]:
            continue
        for a, r in enumerate(tl[q]):
            if alive[r]:
                nfa.trans[ids[q]].append((a, ids[r]))
        if d.accepting[q]:
            nfa.eps[ids[q]].append(e)
    return ids[d.initial], e, lo


_CHUNK = 12
_CHUNK_MASK = (1 << _CHUNK) - 1


def _determinize(nfa: _NFA, start: int, final: int, k: int, alphabet: Sequence[str], limits: Limits, deadline: Deadline) -> DFA:
    """Subset construction on the part of ``nfa`` reachable from ``start`` with accepting state ``final``.

    Subsets are restricted to *important* NFA states (with a letter transition, or ``final``), encoded
    as Python-int bitmasks; the empty subset is the sink. Raises LimitExceeded(``max_states``).
    """
    eps, trans = nfa.eps, nfa.trans
    bit: dict[int, int] = {}  # important NFA state -> bit index
    closure_memo: dict[int, int] = {}

    def closure(s0: int) -> int:
        m = closure_memo.get(s0)
        if m is not None:
            return m
        seen = {s0}
        stack = [s0]
        mask = 0
        while stack:
            s = stack.pop()
            if trans[s] or s == final:
                b = bit.get(s)
                if b is None:
                    b = bit[s] = len(bit)
                    members.append(s)
                mask |= 1 << b
            for t in eps[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
        closure_memo[s0] = mask
        return mask

    members: list[int] = []  # bit index -> NFA state
    succ: list[list[tuple[int, int]] | None] = []  # bit index -> [(letter, closure mask)]

    def successors(b: int) -> list[tuple[int, int]]:
        while len(succ) <= b:
            succ.append(None)
        v = succ[b]
        if v is None:
            acc: dict[int, int] = {}
            for a, t in trans[members[b]]:
                acc[a] = acc.get(a, 0) | closure(t)
            v = succ[b] = list(acc.items())
        return v

    chunk_cache: list[dict[int, list[tuple[int, int]]]] = []
    start_mask = closure(start)
    index: dict[int, int] = {start_mask: 0}
    order = [start_mask]
    rows: list[list[int]] = []
    max_states = limits.max_states
    head = 0
    while head < len(order):
        if head & 1023 == 0:
            deadline.check("subset construction")
        S = order[head]
        head += 1
        nxt = [0] * k
        m = S
        while m:
            # take the 12-bit chunk holding the lowest set bit; its successor masks are memoized
            low = m & -m
            c = (low.bit_length() - 1) // _CHUNK
            shift = c * _CHUNK
            v = (m >> shift) & _CHUNK_MASK
            m &= ~(_CHUNK_MASK << shift)
            while len(chunk_cache) <= c:
                chunk_cache.append({})
            cached = chunk_cache[c].get(v)
            if cached is None:
                acc_masks: dict[int, int] = {}
                w = v
                while w:
                    lw = w & -w
                    b = shift + lw.bit_length() - 1
                    w ^= lw
                    for a, mask in successors(b):
                        acc_masks[a] = acc_masks.get(a, 0) | mask
                cached = chunk_cache[c][v] = list(acc_masks.items())
            for a, mask in cached:
                nxt[a] |= mask
        row = []
        for T in nxt:
            j = index.get(T)
            if j is None:
                j = index[T] = len(order)
                order.append(T)
                if max_states is not None and len(order) > max_states:
                    from langclass.core.base.errors import LimitExceeded

                    raise LimitExceeded(
                        "max_states",
                        max_states,
                        f"determinization produced more than max_states={max_states} DFA states",
                        field="regex",
                    )
            row.append(j)
        rows.append(row)
    fbit = bit.get(final)
    if fbit is None:
        acc = np.zeros(len(order), dtype=bool)
    else:
        acc = np.fromiter(((S >> fbit) & 1 for S in order), dtype=bool, count=len(order))
    return DFA(tuple(alphabet), np.asarray(rows, dtype=np.int32).reshape(len(order), k), 0, acc)


def regex_to_dfa(text: str, alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS, deadline: Deadline | None = None) -> DFA:
    """Parse and compile ``text`` over the (normalized) ``alphabet``; returns the canonical minimal complete DFA."""
    deadline = deadline or limits.deadline()
    root = parse_regex_ast(text, alphabet, limits)
    dfa = compile_regex(root, alphabet, limits, deadline)
    deadline.check("minimization")
    return dfa.canonical()
