"""What a formula means on words: truth tables over batches of words, and the equivalent minimal DFA.

See :mod:`langclass.core.logic.formulas` for the semantics (readout at position N + 1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Union

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import AlphabetError, FormulaSyntaxError, InputError, LimitExceeded, UnknownSymbolError
from langclass.core.base.limits import DEFAULT_LIMITS, Limits
from .parser import _coerce
from .syntax import And, Atom, Bottom, Formula, Iff, Implies, Mod, Not, Or, Past, Since, Top, Yesterday, past, subformulas

__all__ = ["truth_table", "evaluate_batch", "evaluate", "formula_to_dfa"]

# ------------------------------------------------------------------ evaluation
def truth_table(formula: Union[str, Formula], alphabet: Sequence[str], words: np.ndarray,
                limits: Limits = DEFAULT_LIMITS) -> dict[Formula, np.ndarray]:
    """Truth values of every subformula at every position of a batch of equal-length words.

    Args:
        formula: a formula or its text.
        alphabet: Σ; ``words`` hold letter indices into it.
        words: ``int`` array ``[B, N]`` (all words of length N; N may be 0).

    Returns:
        ``{subformula: bool array [B, N + 2]}``; column i is position i (column 0 = BOS, always
        False; column N + 1 = the readout position).
    """
    f, alpha = _coerce(formula, alphabet, limits)
    w = np.asarray(words, dtype=np.int64)
    if w.ndim != 2:
        raise InputError("words must be a 2-D array [batch, length] of letter indices", field="words")
    B, N = w.shape
    if w.size and (w.min() < 0 or w.max() >= len(alpha)):
        raise InputError("a letter index is outside the alphabet", field="words")
    pos = np.arange(N + 2)
    string_pos = (pos >= 1) & (pos <= N)
    letter = np.full((B, N + 2), -1, dtype=np.int64)
    letter[:, 1:N + 1] = w
    idx = {s: i for i, s in enumerate(alpha)}
    val: dict[Formula, np.ndarray] = {}
    for n in subformulas(f):
        if isinstance(n, Atom):
            v = letter == idx[n.symbol]
        elif isinstance(n, Top):
            v = np.broadcast_to(string_pos | (pos == N + 1), (B, N + 2)).copy()
        elif isinstance(n, Bottom):
            v = np.zeros((B, N + 2), dtype=bool)
        elif isinstance(n, Mod):
            v = np.broadcast_to((pos % n.m) == n.r, (B, N + 2)).copy()
        elif isinstance(n, Not):
            v = ~val[n.arg]
        elif isinstance(n, And):
            v = val[n.left] & val[n.right]
        elif isinstance(n, Or):
            v = val[n.left] | val[n.right]
        elif isinstance(n, Implies):
            v = ~val[n.left] | val[n.right]
        elif isinstance(n, Iff):
            v = val[n.left] == val[n.right]
        elif isinstance(n, Past):
            a = val[n.arg] & string_pos  # only string positions count as witnesses
            cum = np.logical_or.accumulate(a, axis=1)
            v = np.zeros_like(a)
            v[:, 1:] = cum[:, :-1]
        elif isinstance(n, Yesterday):
            a = val[n.arg]
            v = np.zeros_like(a)
            if n.k < N + 2:
                v[:, n.k + 1:] = a[:, 1:N + 2 - n.k]  # position i > k reads i − k ≥ 1
        elif isinstance(n, Since):
            l, r = val[n.left], val[n.right]
            v = np.zeros_like(l)
            for i in range(2, N + 2):  # S(i) = r(i−1) ∨ (l(i−1) ∧ S(i−1)), S(1) = False
                v[:, i] = r[:, i - 1] | (l[:, i - 1] & v[:, i - 1])
        else:  # pragma: no cover
            raise TypeError(f"unknown node {n!r}")
        v[:, 0] = False
        val[n] = v
    return val


def evaluate_batch(formula: Union[str, Formula], alphabet: Sequence[str], words: np.ndarray,
                   limits: Limits = DEFAULT_LIMITS) -> np.ndarray:
    """Acceptance ``w, N+1 ⊨ φ`` for a batch ``[B, N]`` of letter-index words: bool array ``[B]``."""
    f, alpha = _coerce(formula, alphabet, limits)
    w = np.asarray(words, dtype=np.int64)
    return truth_table(f, alpha, w, limits)[f][:, w.shape[1] + 1]


def evaluate(formula: Union[str, Formula], word: Sequence[str], alphabet: Sequence[str],
             position: int | None = None, limits: Limits = DEFAULT_LIMITS) -> bool:
    """``w, i ⊨ φ`` for one word (a sequence of symbols, or a str of one-character symbols).

    Args:
        position: i ∈ [1, N+1]; default the readout position N + 1 (acceptance, Eq. 11).

    Raises:
        UnknownSymbolError: a letter outside the alphabet. InputError: position out of range.
    """
    f, alpha = _coerce(formula, alphabet, limits)
    idx = {s: i for i, s in enumerate(alpha)}
    try:
        enc = [idx[s] for s in word]
    except KeyError as e:
        raise UnknownSymbolError(f"symbol {e.args[0]!r} is not in the alphabet {list(alpha)}", symbol=e.args[0]) from None
    N = len(enc)
    i = N + 1 if position is None else int(position)
    if not 1 <= i <= N + 1:
        raise InputError(f"position {i} is outside 1..{N + 1}", field="position")
    table = truth_table(f, alpha, np.asarray([enc], dtype=np.int64).reshape(1, N), limits)
    return bool(table[f][0, i])


# ------------------------------------------------------------------ formula → DFA
def formula_to_dfa(formula: Union[str, Formula], alphabet: Sequence[str], limits: Limits = DEFAULT_LIMITS) -> DFA:
    """The canonical minimal complete DFA of L(φ) = {w : w, N+1 ⊨ φ}.

    Construction: a deterministic "past state" automaton. After reading w_1 ⋯ w_t the state holds
    (t mod M, one bit per temporal node giving its truth value at position t + 1), where M is the lcm
    of the moduli of MOD atoms: for ``P ψ`` the bit ∃ j ≤ t ψ(j), for ``ψ1 S ψ2`` its value at t + 1,
    for ``Y^k ψ`` a k-bit shift register of ψ(t), …, ψ(t−k+1) (False before position 1). Reading
    letter a evaluates every subformula at position t + 1 from the bits and a, then updates the bits;
    a state accepts when φ holds at the readout position t + 1 (no letter there). Only reachable
    states are built, then minimized (Hopcroft) and numbered canonically.

    Past LTL evaluated at the last position is deterministic in this way (every past operator is a
    function of the previous position's values), which is why formulas are a third input format.

    Args:
        formula: formula text (see :func:`parse_formula`) or a :class:`Formula`.
        alphabet: Σ.
        limits: parse limits; ``max_states`` bounds the reachable states built; ``time_limit_s``.

    Returns:
        The canonical :class:`~langclass.core.automata.automaton.DFA`.

    Raises:
        FormulaSyntaxError, UnknownSymbolError, AlphabetError: bad input.
        LimitExceeded: ``max_states`` (``limit="max_states"``); TimeLimitExceeded.

    Example:
        >>> formula_to_dfa("MOD(2,1)", ["a"]).num_states   # (aa)*
        2
    """
    f, alpha = _coerce(formula, alphabet, limits)
    deadline = limits.deadline()
    nodes = subformulas(f)
    pos_of = {n: i for i, n in enumerate(nodes)}
    M = 1
    for n in nodes:
        if isinstance(n, Mod):
            M = M * n.m // math.gcd(M, n.m)
            limits.check("max_states", M)
    # bit layout
    slots: dict[Formula, tuple[int, int]] = {}
    nbits = 0
    for n in nodes:
        if isinstance(n, (Past, Since)):
            slots[n] = (nbits, 1)
            nbits += 1
        elif isinstance(n, Yesterday):
            slots[n] = (nbits, n.k)
            nbits += n.k
    k = len(alpha)

    # Breadth-first over the reachable states, a whole frontier at a time: every node is evaluated as
    # a boolean vector over the frontier (numpy), states are deduplicated by their packed bytes.
    sym_index = {a: i for i, a in enumerate(alpha)}

    def values_at(counter_next: np.ndarray, bits: np.ndarray, letter: int) -> list[np.ndarray]:
        """Node values ``[len(nodes)]`` of bool arrays ``[S]`` at the next position, given the states'
        counters ``[S]`` (already advanced) and bits ``[S, nbits]``; ``letter = -1`` at the readout."""
        S = bits.shape[0]
        false = np.zeros(S, dtype=bool)
        true = np.ones(S, dtype=bool)
        v: list[np.ndarray] = [false] * len(nodes)
        for i, n in enumerate(nodes):
            t = type(n)
            if t is Atom:
                v[i] = true if letter >= 0 and sym_index.get(n.symbol) == letter else false
            elif t is Top:
                v[i] = true
            elif t is Bottom:
                v[i] = false
            elif t is Mod:
                v[i] = counter_next % n.m == n.r
            elif t is Not:
                v[i] = ~v[pos_of[n.arg]]
            elif t is And:
                v[i] = v[pos_of[n.left]] & v[pos_of[n.right]]
            elif t is Or:
                v[i] = v[pos_of[n.left]] | v[pos_of[n.right]]
            elif t is Implies:
                v[i] = ~v[pos_of[n.left]] | v[pos_of[n.right]]
            elif t is Iff:
                v[i] = v[pos_of[n.left]] == v[pos_of[n.right]]
            elif t is Past or t is Since:
                v[i] = bits[:, slots[n][0]]
            elif t is Yesterday:
                s0, kk = slots[n]
                v[i] = bits[:, s0 + kk - 1]
        return v

    def step(counter: np.ndarray, bits: np.ndarray, letter: int) -> tuple[np.ndarray, np.ndarray]:
        nxt = (counter + 1) % M
        v = values_at(nxt, bits, letter)
        nb = bits.copy()
        for n, (s0, kk) in slots.items():
            if isinstance(n, Past):
                nb[:, s0] = bits[:, s0] | v[pos_of[n.arg]]
            elif isinstance(n, Since):
                nb[:, s0] = v[pos_of[n.right]] | (v[pos_of[n.left]] & bits[:, s0])
            else:  # shift register: nb[s] = ψ(t+1), nb[s+1] = ψ(t), ...
                nb[:, s0 + 1:s0 + kk] = bits[:, s0:s0 + kk - 1]
                nb[:, s0] = v[pos_of[n.arg]]
        return nxt, nb

    def keys(counter: np.ndarray, bits: np.ndarray) -> list[bytes]:
        packed = np.packbits(bits, axis=1) if nbits else np.zeros((bits.shape[0], 0), dtype=np.uint8)
        both = np.concatenate([counter.astype(">i8").view(np.uint8).reshape(-1, 8), packed], axis=1)
        return [r.tobytes() for r in both]

    counters = [np.zeros(1, dtype=np.int64)]
    bitrows = [np.zeros((1, nbits), dtype=bool)]
    index = {keys(counters[0], bitrows[0])[0]: 0}
    n_states = 1
    root = pos_of[f]
    accepting_parts: list[np.ndarray] = []
    row_parts: list[np.ndarray] = []
    f_counter, f_bits = counters[0], bitrows[0]
    while f_counter.size:
        deadline.check("formula_to_dfa")
        accepting_parts.append(values_at((f_counter + 1) % M, f_bits, -1)[root])
        rows_here = np.empty((f_counter.size, k), dtype=np.int64)
        new_c: list[np.ndarray] = []
        new_b: list[np.ndarray] = []
        for a in range(k):
            nc, nb = step(f_counter, f_bits, a)
            for r, key in enumerate(keys(nc, nb)):
                j = index.get(key)
                if j is None:
                    j = index[key] = n_states
                    n_states += 1
                    if n_states > limits.max_states:
                        raise LimitExceeded("max_states", limits.max_states,
                                            f"the formula's state automaton exceeds max_states={limits.max_states}")
                    new_c.append(nc[r:r + 1])
                    new_b.append(nb[r:r + 1])
                rows_here[r, a] = j
        row_parts.append(rows_here)
        f_counter = np.concatenate(new_c) if new_c else np.zeros(0, dtype=np.int64)
        f_bits = np.concatenate(new_b) if new_b else np.zeros((0, nbits), dtype=bool)
    rows = np.concatenate(row_parts) if row_parts else np.zeros((0, k), dtype=np.int64)
    accepting = np.concatenate(accepting_parts)
    dfa = DFA(alpha, rows.astype(np.int32).reshape(len(rows), k), 0, accepting.astype(bool))
    return dfa.canonical()
