"""Words of a DFA: enumeration, exact counting per length, uniform sampling.

Counts are exact Python integers (no overflow: |Σ|^n for n in the thousands has thousands of
digits). Sampling is *exactly* uniform among the accepted (or rejected) words of a given length,
by the standard path-counting method: with ``W_j(q)`` = number of words of length ``j`` leading
from ``q`` into the target set, letter ``a`` is chosen at state ``q`` with probability
``W_{j-1}(δ(q,a)) / W_j(q)`` (Nijenhuis & Wilf, "Combinatorial Algorithms", 1978, ch. 13;
Hickey & Cohen, "Uniform random generation of strings in a context-free language", 1983).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from functools import lru_cache

import numpy as np

from .automaton import DFA
from langclass.core.base.errors import InputError

__all__ = ["enumerate_words", "count_words", "count_words_table", "sample_word", "WordSampler"]


def enumerate_words(alphabet: Sequence[str], max_length: int, min_length: int = 0) -> Iterator[tuple[str, ...]]:
    """All words over ``alphabet`` with ``min_length ≤ |w| ≤ max_length``, in shortlex order
    (by length, then lexicographically in alphabet order). The empty word is ``()``.

    There are Σ_{n} |Σ|^n of them: the caller bounds ``max_length``.

    Example:
        >>> list(enumerate_words(["a", "b"], 2))
        [(), ('a',), ('b',), ('a', 'a'), ('a', 'b'), ('b', 'a'), ('b', 'b')]
    """
    alphabet = tuple(alphabet)
    for n in range(max(0, min_length), max_length + 1):
        yield from itertools.product(alphabet, repeat=n)


def _check_length(length: int) -> int:
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise InputError(f"word length must be a non-negative integer, not {length!r}", field="length")
    return int(length)


def _backward_layers(dfa: DFA, target: np.ndarray, length: int, keep: bool) -> list[np.ndarray]:
    """``W_j`` for j = 0..length as object arrays ``[n]`` (only the last one unless ``keep``)."""
    t = dfa.transitions
    w = np.array([int(x) for x in target], dtype=object)
    layers = [w]
    for _ in range(length):
        w = w[t].sum(axis=1) if dfa.num_letters > 1 else w[t[:, 0]].copy()
        if keep:
            layers.append(w)
        else:
            layers[0] = w
    return layers


def count_words(dfa: DFA, length: int) -> tuple[int, int]:
    """Exact numbers of accepted and rejected words of length ``length``.

    Args:
        dfa: any complete DFA.
        length: n ≥ 0 (thousands are fine: O(n · |Q| · |Σ|) big-integer additions).

    Returns:
        ``(accepted, rejected)`` as Python ints; ``accepted + rejected == |Σ|**length``.

    Raises:
        InputError: ``length`` is not a non-negative integer.

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> count_words(parse_regex("(a|b)*a", ["a", "b"]), 3)
        (4, 4)
    """
    length = _check_length(length)
    w = _backward_layers(dfa, dfa.accepting, length, keep=False)[0]
    acc = int(w[dfa.initial])
    return acc, dfa.num_letters**length - acc


def count_words_table(dfa: DFA, max_length: int) -> list[tuple[int, int]]:
    """``[count_words(dfa, n) for n in range(max_length + 1)]`` in one forward pass."""
    max_length = _check_length(max_length)
    t = dfa.transitions
    n = dfa.num_states
    v = np.zeros(n, dtype=object)
    v[:] = 0
    v[dfa.initial] = 1
    out = []
    k = dfa.num_letters
    acc_mask = dfa.accepting
    flat_targets = t.ravel()
    for length in range(max_length + 1):
        a = int(v[acc_mask].sum()) if acc_mask.any() else 0
        out.append((a, k**length - a))
        if length == max_length:
            break
        nv = np.zeros(n, dtype=object)
        nv[:] = 0
        np.add.at(nv, flat_targets, np.repeat(v, k))
        v = nv
    return out


def _randbelow(rng: np.random.Generator, bound: int) -> int:
    """Uniform integer in ``[0, bound)`` for an arbitrarily large Python int ``bound`` (rejection sampling)."""
    if bound <= 0:
        raise ValueError("bound must be positive")
    if bound <= 2**62:
        return int(rng.integers(0, bound))
    bits = bound.bit_length()
    words = (bits + 31) // 32
    while True:
        chunks = rng.integers(0, 2**32, size=words, dtype=np.uint64)
        x = 0
        for c in chunks.tolist():
            x = (x << 32) | int(c)
        x >>= words * 32 - bits
        if x < bound:
            return x


class WordSampler:
    """Uniform sampler of accepted / rejected words of a DFA; caches the path-count tables.

    Memory: O(max length sampled · |Q|) big integers per target (accepted / rejected).

    Example:
        >>> from langclass.core.ingest.parse import parse_regex
        >>> s = WordSampler(parse_regex("(ab)*", ["a", "b"]))
        >>> s.sample(4, True, np.random.default_rng(0))
        ('a', 'b', 'a', 'b')
    """

    def __init__(self, dfa: DFA) -> None:
        self.dfa = dfa
        self._tables: dict[bool, list[np.ndarray]] = {}
        self._tl = dfa.transitions.tolist()

    def _table(self, accepted: bool, length: int) -> list[np.ndarray]:
        layers = self._tables.get(accepted)
        target = self.dfa.accepting if accepted else ~self.dfa.accepting
        if layers is None:
            layers = _backward_layers(self.dfa, target, 0, keep=True)
            self._tables[accepted] = layers
        t = self.dfa.transitions
        while len(layers) <= length:
            w = layers[-1]
            layers.append(w[t].sum(axis=1) if self.dfa.num_letters > 1 else w[t[:, 0]].copy())
        return layers

    def count(self, length: int, accepted: bool = True) -> int:
        """Number of accepted (or rejected) words of length ``length``."""
        length = _check_length(length)
        return int(self._table(bool(accepted), length)[length][self.dfa.initial])

    def sample(self, length: int, accepted: bool, rng: np.random.Generator) -> tuple[str, ...] | None:
        """A word of length ``length`` drawn uniformly among the accepted (``accepted=True``) or
        rejected words, or ``None`` when there is none."""
        length = _check_length(length)
        layers = self._table(bool(accepted), length)
        q = self.dfa.initial
        total = int(layers[length][q])
        if total == 0:
            return None
        alphabet = self.dfa.alphabet
        tl = self._tl
        word: list[str] = []
        for j in range(length, 0, -1):
            r = _randbelow(rng, int(layers[j][q]))
            below = layers[j - 1]
            for a, nxt in enumerate(tl[q]):
                c = int(below[nxt])
                if r < c:
                    word.append(alphabet[a])
                    q = nxt
                    break
                r -= c
            else:  # pragma: no cover - the counts are exact
                raise AssertionError("path counts are inconsistent")
        return tuple(word)


@lru_cache(maxsize=32)
def _sampler(dfa: DFA) -> WordSampler:
    return WordSampler(dfa)


def sample_word(dfa: DFA, length: int, accepted: bool, rng: np.random.Generator) -> tuple[str, ...] | None:
    """A uniformly random accepted (or rejected) word of length ``length``, or ``None`` if none exists.

    Exactly uniform given a uniform ``rng`` (exact path counting with Python ints); deterministic
    for a seeded ``numpy.random.Generator``. Path-count tables are cached per DFA (32 most recent).

    Args:
        dfa: a complete DFA.
        length: n ≥ 0.
        accepted: ``True`` for a word of L, ``False`` for a word of Σ^n \\ L.
        rng: ``numpy.random.default_rng(seed)``.

    Returns:
        tuple of symbols, or ``None``.

    Raises:
        InputError: ``length`` is not a non-negative integer.
    """
    return _sampler(dfa).sample(length, accepted, rng)
