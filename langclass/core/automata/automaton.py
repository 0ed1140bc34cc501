"""The DFA value type: complete deterministic automata over an explicit ordered alphabet.

A :class:`DFA` is immutable: states are ``0..n-1``, the transition table is a dense read-only
``numpy`` array of shape ``[n, |Σ|]`` (``int32``), and every DFA is *complete* (a missing edge
must have been sent to an explicit sink by whoever built it). The alphabet is part of the
language's identity: ``a*`` over ``{a}`` and over ``{a, b}`` are different languages.

The canonical form (:meth:`DFA.canonical`) is the minimal complete DFA with states numbered
breadth-first from the initial state, letters taken in alphabet order; its
:meth:`DFA.fingerprint` (SHA-256 of :meth:`DFA.canonical_json`) identifies the language.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from langclass.core.base.errors import AlphabetError, UnknownSymbolError
from langclass.core.base.inputs import check_alphabet

SMALL_CANONICAL_EDGES = 512
"""DFAs with at most this many transitions (states × letters) are minimized in plain Python
(``DFA._canonical_small``); larger ones with numpy. Both give the canonical DFA, which is unique."""

if TYPE_CHECKING:  # pragma: no cover
    from langclass.core.base.limits import Limits

__all__ = ["DFA", "Word"]

Word = Sequence[str]
"""A word is a sequence of symbols (each symbol a non-empty string of the alphabet)."""


@dataclass(frozen=True, eq=False)
class DFA:
    """A complete DFA ``(Σ, Q, q0, F, δ)``.

    Attributes:
        alphabet: the ordered alphabet Σ (tuple of distinct non-empty NFC-normalized strings).
        transitions: ``int32`` array ``[num_states, len(alphabet)]``; ``transitions[q, i]`` is
            δ(q, alphabet[i]). Read-only.
        initial: the initial state q0.
        accepting: boolean array ``[num_states]``; read-only.

    Equality (``==``) is *structural* (same numbering); compare languages with
    :meth:`fingerprint` or :meth:`equivalent`.

    Raises:
        AlphabetError: empty alphabet, empty or duplicate symbols.
        ValueError: malformed arrays (a programming error, not user input).
    """

    alphabet: tuple[str, ...]
    transitions: np.ndarray
    initial: int
    accepting: np.ndarray
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        alphabet = check_alphabet(self.alphabet)
        table = np.array(self.transitions, dtype=np.int32, copy=True)
        if table.ndim != 2 or table.shape[1] != len(alphabet) or table.shape[0] == 0:
            raise ValueError(f"transition table of shape {table.shape} does not fit {len(alphabet)} letters")
        n = table.shape[0]
        if table.min() < 0 or table.max() >= n:
            raise ValueError("transition table points outside the states")
        acc = np.zeros(n, dtype=bool)
        acc_in = np.asarray(self.accepting)
        if acc_in.dtype == bool and acc_in.shape == (n,):
            acc[:] = acc_in
        else:
            idx = np.asarray(list(acc_in.ravel()) if acc_in.ndim else [], dtype=np.int64)
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                raise ValueError("accepting state outside the states")
            acc[idx] = True
        if not 0 <= int(self.initial) < n:
            raise ValueError("initial state outside the states")
        table.setflags(write=False)
        acc.setflags(write=False)
        object.__setattr__(self, "alphabet", alphabet)
        object.__setattr__(self, "transitions", table)
        object.__setattr__(self, "accepting", acc)
        object.__setattr__(self, "initial", int(self.initial))
        object.__setattr__(self, "_index", {s: i for i, s in enumerate(alphabet)})

    # ------------------------------------------------------------------ basics
    @property
    def num_states(self) -> int:
        """Number of states n (the sink, if any, counts)."""
        return int(self.transitions.shape[0])

    @property
    def num_letters(self) -> int:
        """|Σ|."""
        return len(self.alphabet)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DFA):
            return NotImplemented
        return (
            self.alphabet == other.alphabet
            and self.initial == other.initial
            and np.array_equal(self.transitions, other.transitions)
            and np.array_equal(self.accepting, other.accepting)
        )

    def __hash__(self) -> int:
        return hash((self.alphabet, self.initial, self.transitions.tobytes(), self.accepting.tobytes()))

    def __repr__(self) -> str:
        return f"DFA(alphabet={list(self.alphabet)}, states={self.num_states}, initial={self.initial}, accepting={self.accepting_states})"

    @property
    def accepting_states(self) -> list[int]:
        """Sorted list of accepting states."""
        return [int(q) for q in np.flatnonzero(self.accepting)]

    def letter_index(self, symbol: str) -> int:
        """Index of ``symbol`` in the alphabet.

        Raises:
            UnknownSymbolError: ``symbol`` is not in Σ.
        """
        try:
            return self._index[symbol]
        except (KeyError, TypeError):
            if isinstance(symbol, str):
                j = self._index.get(unicodedata.normalize("NFC", symbol))
                if j is not None:
                    return j
            raise UnknownSymbolError(
                f"symbol {symbol!r} is not in the alphabet {list(self.alphabet)}",
                symbol=symbol if isinstance(symbol, str) else repr(symbol),
            ) from None

    def encode(self, word: Word) -> list[int]:
        """Letter indices of ``word`` (a sequence of symbols, or a str when all symbols are one character)."""
        return [self.letter_index(s) for s in word]

    def run(self, word: Word, state: int | None = None) -> int:
        """State reached from ``state`` (default q0) after reading ``word``."""
        q = self.initial if state is None else int(state)
        t = self.transitions
        for i in self.encode(word):
            q = int(t[q, i])
        return q

    def run_indices(self, letters: Iterable[int], state: int | None = None) -> int:
        """Like :meth:`run` but on letter indices."""
        q = self.initial if state is None else int(state)
        t = self.transitions
        for i in letters:
            q = int(t[q, i])
        return q

    def accepts(self, word: Word) -> bool:
        """Membership of ``word`` in L(A)."""
        return bool(self.accepting[self.run(word)])

    # --------------------------------------------------------- constructions
    @classmethod
    def from_table(
        cls, alphabet: Sequence[str], transitions: Sequence[Sequence[int]] | np.ndarray, initial: int, accepting: Iterable[int]
    ) -> DFA:
        """Build from a table of successor indices and a list of accepting states."""
        n = len(transitions)
        acc = np.zeros(n, dtype=bool)
        for q in accepting:
            acc[int(q)] = True
        return cls(tuple(alphabet), np.asarray(transitions, dtype=np.int32).reshape(n, len(alphabet)), int(initial), acc)

    def reachable(self) -> np.ndarray:
        """Boolean mask ``[n]`` of the states reachable from q0."""
        seen = np.zeros(self.num_states, dtype=bool)
        seen[self.initial] = True
        frontier = np.array([self.initial])
        while frontier.size:
            succ = np.unique(self.transitions[frontier].ravel())
            succ = succ[~seen[succ]]
            seen[succ] = True
            frontier = succ
        return seen

    def renumber_bfs(self) -> DFA:
        """Drop unreachable states and number the rest breadth-first from q0, letters in alphabet order."""
        n, t = self.num_states, self.transitions
        order = [self.initial]
        new = np.full(n, -1, dtype=np.int64)
        new[self.initial] = 0
        head = 0
        tl = t.tolist()
        while head < len(order):
            q = order[head]
            head += 1
            for r in tl[q]:
                if new[r] < 0:
                    new[r] = len(order)
                    order.append(r)
        old = np.asarray(order, dtype=np.int64)
        table = new[t[old]]
        return DFA(self.alphabet, table, 0, self.accepting[old])

    def minimize(self) -> DFA:
        """The minimal complete DFA of L(A), canonically numbered (alias of :meth:`canonical`)."""
        return self.canonical()

    def state_partition(self) -> np.ndarray:
        """Myhill–Nerode classes of the states: ``int`` array ``[n]``, equal ids ⇔ equivalent states.

        Vectorized Moore rounds, finished by Hopcroft's O(n |Σ| log n) algorithm when states need
        long distinguishing words (Moore 1956; Hopcroft 1971).
        """
        from .minimize import minimal_partition

        return minimal_partition(self.transitions, self.accepting)

    def canonical(self) -> DFA:
        """The minimal complete DFA (unreachable states removed, equivalent states merged),
        numbered breadth-first from the initial state with letters in alphabet order (unique for
        the language, so the plain-Python path for small DFAs gives the same DFA; a test checks it)."""
        if self.__dict__.get("_is_canonical"):
            return self
        if self.transitions.size <= SMALL_CANONICAL_EDGES:
            return self._canonical_small()
        return self._canonical_numpy()

    def _canonical_small(self) -> DFA:
        """:meth:`canonical` in plain Python: breadth-first trim, Moore's refinement on lists, the
        quotient numbered breadth-first."""
        t = self.transitions.tolist()
        order = [self.initial]
        num = {self.initial: 0}
        for q in order:
            for r in t[q]:
                if r not in num:
                    num[r] = len(order)
                    order.append(r)
        table = [[num[r] for r in t[q]] for q in order]
        acc = [bool(a) for a in self.accepting[order].tolist()]
        block = [int(a) for a in acc]
        count = len(set(block))
        while True:
            ids: dict[tuple[int, ...], int] = {}
            new = [ids.setdefault((block[q], *[block[r] for r in row]), len(ids)) for q, row in enumerate(table)]
            if len(ids) == count:
                break
            block, count = new, len(ids)
        rep: dict[int, int] = {}
        for q, b in enumerate(block):
            rep.setdefault(b, q)
        bnum = {block[0]: 0}
        border = [block[0]]
        for b in border:
            for r in table[rep[b]]:
                if block[r] not in bnum:
                    bnum[block[r]] = len(border)
                    border.append(block[r])
        out = DFA(self.alphabet, [[bnum[block[r]] for r in table[rep[b]]] for b in border], 0,
                  np.asarray([acc[rep[b]] for b in border], dtype=bool))
        object.__setattr__(out, "_is_canonical", True)
        return out

    def _canonical_numpy(self) -> DFA:
        """:meth:`canonical` with numpy (any size): trim, :meth:`state_partition`, quotient, renumber."""
        trimmed = self.renumber_bfs()
        block = trimmed.state_partition()
        nb = int(block.max()) + 1
        rep = np.zeros(nb, dtype=np.int64)
        rep[block[::-1]] = np.arange(trimmed.num_states)[::-1]  # first state of each block
        table = block[trimmed.transitions[rep]]
        acc = trimmed.accepting[rep]
        quotient = DFA(self.alphabet, table, int(block[trimmed.initial]), acc)
        result = quotient.renumber_bfs()
        object.__setattr__(result, "_is_canonical", True)
        return result

    # ------------------------------------------------------------- identity
    def to_canonical_dict(self) -> dict:
        """Canonical JSON object of the *minimal* DFA: states are ``0..n-1`` (BFS order),
        ``transitions`` is a list of rows in alphabet order, ``accepting`` sorted."""
        c = self.canonical()
        return {
            "alphabet": list(c.alphabet),
            "initial": 0,
            "accepting": c.accepting_states,
            "transitions": c.transitions.tolist(),
        }

    def canonical_json(self) -> str:
        """Canonical JSON text (sorted keys, no whitespace, UTF-8 symbols kept) of the minimal DFA."""
        return json.dumps(self.to_canonical_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    @cached_property
    def _fingerprint(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()

    def fingerprint(self) -> str:
        """SHA-256 hex of :meth:`canonical_json`: equal ⇔ same language over the same alphabet."""
        return self._fingerprint

    def equivalent(self, other: DFA) -> bool:
        """L(self) = L(other) over the same alphabet (different alphabets are never equivalent).

        Raises:
            AlphabetError: the alphabets differ (comparing them is almost always a bug).
        """
        if self.alphabet != other.alphabet:
            raise AlphabetError(
                f"cannot compare languages over different alphabets {list(self.alphabet)} and {list(other.alphabet)}"
            )
        return self.fingerprint() == other.fingerprint()

    # ------------------------------------------------------- boolean algebra
    def complement(self) -> DFA:
        """Complement with respect to Σ* (same alphabet)."""
        return DFA(self.alphabet, self.transitions, self.initial, ~self.accepting)

    def product(self, other: DFA, op: str, *, limits: "Limits | None" = None) -> DFA:
        """Product automaton for ``op`` in ``{"and", "or", "xor", "diff"}`` (reachable part only).

        Raises:
            AlphabetError: the alphabets differ.
            LimitExceeded: more than ``limits.max_states`` reachable pairs (only when ``limits`` is given).
        """
        if op not in ("and", "or", "xor", "diff"):
            raise ValueError(f"unknown product operation {op!r}")
        max_states = None if limits is None else limits.max_states
        if self.alphabet != other.alphabet:
            raise AlphabetError(
                f"cannot combine languages over different alphabets {list(self.alphabet)} and {list(other.alphabet)}"
            )
        m = other.num_states
        t1, t2 = self.transitions.tolist(), other.transitions.tolist()
        start = self.initial * m + other.initial
        index = {start: 0}
        order = [start]
        rows: list[list[int]] = []
        head = 0
        k = self.num_letters
        while head < len(order):
            pq = order[head]
            head += 1
            p, q = divmod(pq, m)
            row = []
            for a in range(k):
                r = t1[p][a] * m + t2[q][a]
                j = index.get(r)
                if j is None:
                    j = index[r] = len(order)
                    order.append(r)
                    if max_states is not None and len(order) > max_states:
                        from langclass.core.base.errors import LimitExceeded

                        raise LimitExceeded(
                            "max_states", max_states, f"the product automaton has more than max_states={max_states} states"
                        )
                row.append(j)
            rows.append(row)
        pairs = np.asarray(order, dtype=np.int64)
        a1 = self.accepting[pairs // m]
        a2 = other.accepting[pairs % m]
        acc = {"and": a1 & a2, "or": a1 | a2, "xor": a1 ^ a2, "diff": a1 & ~a2}[op]
        return DFA(self.alphabet, np.asarray(rows, dtype=np.int32), 0, acc)

    def intersection(self, other: DFA) -> DFA:
        """L(self) ∩ L(other)."""
        return self.product(other, "and")

    def union(self, other: DFA) -> DFA:
        """L(self) ∪ L(other)."""
        return self.product(other, "or")

    def is_empty(self) -> bool:
        """L(A) = ∅."""
        return not bool(self.accepting[self.reachable()].any())

    def shortest_accepted(self) -> tuple[str, ...] | None:
        """A shortest accepted word (BFS, letters in alphabet order), or ``None`` if L(A) is empty."""
        from collections import deque

        parent: dict[int, tuple[int, int]] = {}
        seen = {self.initial}
        dq = deque([self.initial])
        tl = self.transitions.tolist()
        while dq:
            q = dq.popleft()
            if self.accepting[q]:
                word: list[str] = []
                while q != self.initial:
                    p, a = parent[q]
                    word.append(self.alphabet[a])
                    q = p
                return tuple(reversed(word))
            for a, r in enumerate(tl[q]):
                if r not in seen:
                    seen.add(r)
                    parent[r] = (q, a)
                    dq.append(r)
        return None

    def counterexample(self, other: DFA) -> tuple[str, ...] | None:
        """A shortest word in the symmetric difference of the two languages, or ``None`` if equivalent."""
        return self.product(other, "xor").shortest_accepted()
