"""Training and test data drawn from the canonical DFA of a language.

For every length ``n`` the strings of length ``n`` split into ``L ∩ Σ^n`` (positives) and
``Σ^n \\ L`` (negatives). Both are sampled *uniformly* by exact path counting on the minimal
complete DFA: ``acc[m][q]`` = number of words of length ``m`` leading from state ``q`` to an
accepting state (Python ints, so exact at every length), ``rej[m][q] = |Σ|^m − acc[m][q]``. A word
is drawn by drawing its rank ``r`` uniformly in ``[0, count)`` and unranking it in
lexicographic (alphabet) order — one exact big-integer draw per word, no floating point.

Uniform negatives alone make many languages trivial (for ``(aa)*`` over ``{a, b}`` almost every
negative contains a ``b``), so a second scheme draws *near misses*: a uniformly drawn positive of
a neighbouring length with one random edit (substitution, insertion or deletion) that lands
outside L. By default half of the negatives are near misses. Lengths where both classes exist
are balanced (half positives, half negatives); lengths with only one class get only that class.

Every label is re-checked against the DFA before it is returned (an internal error is raised if a
sampled word does not have the label it was drawn for).

Protocol source: *Disentangling the Expressivity of RoPE*, App. E.2 (train lengths ≤ 40, test
lengths 41–500, 512 strings per test length).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded

__all__ = [
    "LanguageSampler",
    "LabeledWords",
    "NEAR_MISS_EDITS",
    "DEFAULT_NEAR_MISS_FRACTION",
    "MAX_SAMPLER_LENGTH",
]

NEAR_MISS_EDITS = ("substitution", "insertion", "deletion")
"""The one-edit operations used to turn a positive into a near-miss negative."""

DEFAULT_NEAR_MISS_FRACTION = 0.5
"""Default share of negatives that are near misses (the rest are uniform negatives)."""

MAX_SAMPLER_LENGTH = 100_000
"""Longest word length a :class:`LanguageSampler` accepts (limit name ``max_sample_length``)."""

_NEAR_MISS_TRIES = 32
_UNRANK_MEMO_CLASS = 64  # unranked words are remembered for (length, class) pairs with at most this many words
_UNRANK_MEMO_SIZE = 1 << 14  # remembered unranked words (then the memo starts afresh)
_EDIT_MEMO_SIZE = 1 << 14  # words whose leaving edits a sampler remembers (then the memo starts afresh)
_NEAR_MISS_SOURCE_TRIES = 8  # positives tried before falling back to negatives with a positive neighbour


@dataclass(frozen=True)
class LabeledWords:
    """A list of labelled words.

    Attributes:
        words: tuple of words, each a tuple of letter indices into the DFA alphabet.
        labels: tuple of bools, ``labels[i]`` is ``words[i] ∈ L`` (checked against the DFA).
        kinds: tuple of str, how each word was drawn: ``"positive"``, ``"uniform"`` (uniform
            negative) or ``"near_miss"``.
    """

    words: tuple[tuple[int, ...], ...]
    labels: tuple[bool, ...]
    kinds: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.words)

    def symbols(self, alphabet: Sequence[str]) -> list[tuple[str, ...]]:
        """The words as tuples of alphabet symbols."""
        return [tuple(alphabet[i] for i in w) for w in self.words]

    def to_dict(self, alphabet: Sequence[str]) -> dict:
        """JSON-ready ``{"words": [[symbol, ...], ...], "labels": [...], "kinds": [...]}``."""
        return {"words": [list(w) for w in self.symbols(alphabet)], "labels": list(self.labels), "kinds": list(self.kinds)}


class LanguageSampler:
    """Exact uniform sampler of positives / negatives of each length, plus near misses.

    Args:
        dfa: any complete DFA; it is replaced by its canonical minimal DFA.
        max_length: the longest length that will be sampled (the counting table is built for
            lengths ``0 .. max_length + 1``; the ``+1`` serves deletion near misses).

    Raises:
        InputError: ``max_length`` is negative.
        LimitExceeded: ``max_length`` exceeds ``MAX_SAMPLER_LENGTH`` (limit ``max_sample_length``).

    Cost: O(max_length · |Q| · |Σ|) big-integer additions to build; a word of length n costs
    O(n · |Σ|) big-integer comparisons.

    Example:
        >>> from langclass.core.automata.automaton import DFA
        >>> aa = DFA.from_table(["a", "b"], [[1, 2], [0, 2], [2, 2]], 0, [0])  # (aa)* over {a,b}
        >>> s = LanguageSampler(aa, 6)
        >>> s.count(4), s.count(3)
        ((1, 15), (0, 8))
        >>> s.sample(4, True, random.Random(0))
        (0, 0, 0, 0)
    """

    def __init__(self, dfa: DFA, max_length: int) -> None:
        if not isinstance(max_length, int) or max_length < 0:
            raise InputError(f"max_length must be a non-negative integer, got {max_length!r}", field="max_length")
        if max_length > MAX_SAMPLER_LENGTH:
            raise LimitExceeded("max_sample_length", MAX_SAMPLER_LENGTH, f"word length {max_length} exceeds max_sample_length={MAX_SAMPLER_LENGTH}")
        self.dfa = dfa.canonical()
        self.alphabet = self.dfa.alphabet
        self.max_length = max_length
        self._delta: list[list[int]] = self.dfa.transitions.tolist()
        self._accepting: list[bool] = [bool(x) for x in self.dfa.accepting]
        n, k = self.dfa.num_states, self.dfa.num_letters
        top = max_length + 1
        acc: list[list[int]] = [[1 if a else 0 for a in self._accepting]]
        for _ in range(top):
            prev = acc[-1]
            acc.append([sum(prev[r] for r in self._delta[q]) for q in range(n)])
        self._acc = acc  # acc[m][q] = |{w ∈ Σ^m : δ(q, w) ∈ F}|
        self._pow = [k**m for m in range(top + 1)]
        self._rej: list[list[int]] = []  # rej[m][q] = k^m − acc[m][q], filled on demand up to the longest length drawn
        self._verify_delta: list[list[int]] = self.dfa.transitions.tolist()  # a separate copy for verify()
        self._verify_accepting: list[bool] = [bool(x) for x in self.dfa.accepting]
        self._unrank_memo: dict[tuple[int, bool, int], tuple[int, ...]] = {}
        self._edit_memo: dict[tuple[tuple[int, ...], str], list[tuple[int, int]]] = {}

    # ------------------------------------------------------------------ counting
    def _check_length(self, length: int, extra: int = 0) -> None:
        if not isinstance(length, (int, np.integer)) or length < 0:
            raise InputError(f"length must be a non-negative integer, got {length!r}", field="length")
        if length + extra > self.max_length + 1:
            raise InputError(f"length {length} is beyond this sampler's max_length={self.max_length}", field="length")

    def count(self, length: int) -> tuple[int, int]:
        """``(|L ∩ Σ^n|, |Σ^n \\ L|)`` for ``n = length`` (exact Python ints)."""
        self._check_length(length)
        a = self._acc[length][self.dfa.initial]
        return a, self._pow[length] - a

    def _count_from(self, m: int, q: int, accepted: bool) -> int:
        a = self._acc[m][q]
        return a if accepted else self._pow[m] - a

    def _counts(self, accepted: bool, length: int) -> list[list[int]]:
        """``acc`` (``accepted``) or the rejecting counts ``rej[m][q] = |Σ|^m − acc[m][q]``, the
        latter extended on demand so that rows ``0 .. length`` exist."""
        if accepted:
            return self._acc
        rej = self._rej
        for m in range(len(rej), length + 1):
            p = self._pow[m]
            rej.append([p - a for a in self._acc[m]])
        return rej

    # ------------------------------------------------------------------ sampling
    def unrank(self, length: int, accepted: bool, rank: int) -> tuple[int, ...]:
        """The ``rank``-th word (0-based, lexicographic in alphabet order) of length ``length``
        in L (``accepted``) or in its complement, as letter indices.

        Raises:
            InputError: ``rank`` is outside ``[0, count)``.
        """
        self._check_length(length)
        total = self._count_from(length, self.dfa.initial, accepted)
        if not 0 <= rank < total:
            raise InputError(f"rank {rank} outside [0, {total})", field="rank")
        return self._unrank(length, accepted, rank)

    def _unrank(self, length: int, accepted: bool, rank: int) -> tuple[int, ...]:
        """:meth:`unrank` without the argument checks (a length the table covers, a rank in range)."""
        cnt = self._counts(accepted, length)
        if cnt[length][self.dfa.initial] <= _UNRANK_MEMO_CLASS:  # few words of this length and class: they recur, remember them
            key = (length, accepted, rank)
            memo = self._unrank_memo
            got = memo.get(key)
            if got is None:
                if len(memo) >= _UNRANK_MEMO_SIZE:
                    memo.clear()
                got = memo[key] = self._unrank_walk(cnt, length, rank)
            return got
        return self._unrank_walk(cnt, length, rank)

    def _unrank_walk(self, cnt: list[list[int]], length: int, rank: int) -> tuple[int, ...]:
        """The lexicographic unranking walk of :meth:`unrank` over the count table ``cnt``."""
        q = self.dfa.initial
        word: list[int] = []
        append = word.append
        delta = self._delta
        for m in range(length - 1, -1, -1):
            row = cnt[m]  # counts of the words of length m left after this letter
            for a, r in enumerate(delta[q]):
                c = row[r]
                if rank < c:
                    append(a)
                    q = r
                    break
                rank -= c
        return tuple(word)

    def sample(self, length: int, accepted: bool, rng: random.Random) -> tuple[int, ...] | None:
        """A word of length ``length`` drawn uniformly from ``L ∩ Σ^n`` (``accepted``) or
        ``Σ^n \\ L``; ``None`` when that set is empty. ``rng`` is a :class:`random.Random`."""
        self._check_length(length)
        return self._sample(length, accepted, rng)

    def _sample(self, length: int, accepted: bool, rng: random.Random) -> tuple[int, ...] | None:
        """:meth:`sample` without the length check."""
        total = self._count_from(length, self.dfa.initial, accepted)
        if total == 0:
            return None
        return self._unrank(length, accepted, rng.randrange(total))

    def accepts(self, word: Sequence[int]) -> bool:
        """Membership of a word given as letter indices."""
        q = self.dfa.initial
        d = self._delta
        for a in word:
            q = d[q][a]
        return self._accepting[q]

    def near_miss_sources(self, length: int) -> list[str]:
        """The edit kinds that can produce a word of length ``length`` from a positive."""
        kinds = []
        k = len(self.alphabet)
        if k > 1 and self._acc[length][self.dfa.initial] > 0:
            kinds.append("substitution")
        if length >= 1 and self._acc[length - 1][self.dfa.initial] > 0:
            kinds.append("insertion")
        if length + 1 <= self.max_length + 1 and self._acc[length + 1][self.dfa.initial] > 0:
            kinds.append("deletion")
        return kinds

    def _edits_leaving_l(self, word: Sequence[int], kind: str) -> list[tuple[int, int]]:
        """:meth:`_edits_of` through a memo of the last :data:`_EDIT_MEMO_SIZE` words asked
        about (languages with few words per length draw the same near-miss sources again and
        again). The returned list is shared: callers must not modify it."""
        key = (tuple(word), kind)
        memo = self._edit_memo
        got = memo.get(key)
        if got is None:
            if len(memo) >= _EDIT_MEMO_SIZE:
                memo.clear()
            got = memo[key] = self._edits_of(key[0], kind)
        return got

    def _edits_of(self, word: Sequence[int], kind: str) -> list[tuple[int, int]]:
        """All one-edit operations ``(position, letter)`` of ``kind`` that take ``word`` outside L.

        Uses forward states ``f[i] = δ(q0, word[:i])`` and backward acceptance sets
        ``B[i] = {q : δ(q, word[i:]) ∈ F}``: substituting ``c`` at ``i`` is accepted iff
        ``δ(f[i], c) ∈ B[i+1]``, inserting ``c`` before ``i`` iff ``δ(f[i], c) ∈ B[i]``, deleting
        position ``i`` iff ``f[i] ∈ B[i+1]``. O(|word| · (|Q| + |Σ|)). For deletions ``letter`` is -1.
        """
        d = self._delta
        m = len(word)
        nq = len(d)
        f = [self.dfa.initial]
        for a in word:
            f.append(d[f[-1]][a])
        back = [self._accepting]
        for i in range(m - 1, -1, -1):
            nxt = back[-1]
            a = word[i]
            back.append([nxt[d[q][a]] for q in range(nq)])
        back.reverse()  # back[i] = acceptance set of suffix word[i:]
        k = len(self.alphabet)
        out: list[tuple[int, int]] = []
        if kind == "substitution":
            for i in range(m):
                row, ok = d[f[i]], back[i + 1]
                out.extend((i, c) for c in range(k) if c != word[i] and not ok[row[c]])
        elif kind == "insertion":
            for i in range(m + 1):
                row, ok = d[f[i]], back[i]
                out.extend((i, c) for c in range(k) if not ok[row[c]])
        else:
            out.extend((i, -1) for i in range(m) if not back[i + 1][f[i]])
        return out

    def has_positive_neighbour(self, word: Sequence[int]) -> bool:
        """Whether some single substitution, insertion or deletion turns ``word`` into a member of L."""
        k = len(self.alphabet)
        m = len(word)
        total = {"substitution": m * (k - 1), "insertion": (m + 1) * k, "deletion": m}
        return any(len(self._edits_leaving_l(word, kind)) < total[kind] for kind in NEAR_MISS_EDITS)

    def near_miss(self, length: int, rng: random.Random) -> tuple[int, ...] | None:
        """A negative of length ``length`` one edit away from a positive, or ``None``.

        First (up to 8 tries) draws an edit kind uniformly among those with a positive source
        length (substitution: n, insertion: n − 1, deletion: n + 1), a source positive uniformly,
        and then one edit uniformly among the edits of that kind that leave L (computed exactly
        with forward/backward state sets). If that keeps failing (e.g. every positive is deep
        inside L), draws uniform negatives and keeps the first one with a positive neighbour
        (up to 32 tries). The distribution is *not* uniform over near-miss words; these are hard
        negatives that differ from a positive in one place.
        """
        self._check_length(length)
        kinds = self.near_miss_sources(length)
        init = self.dfa.initial
        for _ in range(_NEAR_MISS_SOURCE_TRIES if kinds else 0):
            kind = kinds[rng.randrange(len(kinds))]
            src_len = {"substitution": length, "insertion": length - 1, "deletion": length + 1}[kind]
            src = list(self._unrank(src_len, True, rng.randrange(self._acc[src_len][init])))
            edits = self._edits_leaving_l(src, kind)
            if not edits:
                continue
            i, c = edits[rng.randrange(len(edits))]
            if kind == "substitution":
                src[i] = c
            elif kind == "insertion":
                src.insert(i, c)
            else:
                del src[i]
            word = tuple(src)
            assert not self.accepts(word) and len(word) == length
            return word
        if self.count(length)[1] == 0:
            return None
        for _ in range(_NEAR_MISS_TRIES):
            w = self._sample(length, False, rng)
            assert w is not None
            if self.has_positive_neighbour(w):
                return w
        return None

    def negative(self, length: int, rng: random.Random, near_miss: bool) -> tuple[tuple[int, ...], str] | None:
        """A negative of length ``length`` and its kind (``"near_miss"`` or ``"uniform"``).

        With ``near_miss`` a near miss is tried first; when none is found a uniform negative is
        returned instead (kind ``"uniform"``). ``None`` when no negative of that length exists.
        """
        self._check_length(length)
        if near_miss:
            w = self.near_miss(length, rng)
            if w is not None:
                return w, "near_miss"
        w = self._sample(length, False, rng)
        return None if w is None else (w, "uniform")

    def draw(self, length: int, count: int, rng: random.Random, near_miss_fraction: float = DEFAULT_NEAR_MISS_FRACTION) -> LabeledWords:
        """``count`` labelled words of length ``length``: balanced where both classes exist.

        Positives get ``ceil(count / 2)`` when both classes are non-empty; of the negatives,
        ``round(near_miss_fraction · #negatives)`` are near misses (falling back to uniform
        negatives where no near miss exists). Lengths with a single class get only that class.
        Labels are re-checked against the DFA.

        Raises:
            InputError: ``count < 0`` or ``near_miss_fraction`` outside [0, 1].
        """
        if count < 0:
            raise InputError(f"count must be non-negative, got {count}", field="count")
        if not 0.0 <= near_miss_fraction <= 1.0:
            raise InputError(f"near_miss_fraction must lie in [0, 1], got {near_miss_fraction}", field="near_miss_fraction")
        n_acc, n_rej = self.count(length)
        if n_acc and n_rej:
            n_pos = (count + 1) // 2
        elif n_acc:
            n_pos = count
        else:
            n_pos = 0
        n_neg = count - n_pos
        n_near = int(round(near_miss_fraction * n_neg))
        words: list[tuple[int, ...]] = []
        labels: list[bool] = []
        kinds: list[str] = []
        for _ in range(n_pos):
            w = self.sample(length, True, rng)
            assert w is not None
            words.append(w)
            labels.append(True)
            kinds.append("positive")
        for i in range(n_neg):
            got = self.negative(length, rng, near_miss=i < n_near)
            assert got is not None
            words.append(got[0])
            labels.append(False)
            kinds.append(got[1])
        order = list(range(len(words)))
        rng.shuffle(order)
        out = LabeledWords(tuple(words[i] for i in order), tuple(labels[i] for i in order), tuple(kinds[i] for i in order))
        self.verify(out)
        return out

    def draw_mixed(
        self,
        lengths: Sequence[int],
        count: int,
        rng: random.Random,
        near_miss_fraction: float = DEFAULT_NEAR_MISS_FRACTION,
    ) -> LabeledWords:
        """``count`` labelled words, each with a length drawn uniformly from ``lengths`` and then
        (where both classes exist at that length) a fair coin for its label; a negative is a near
        miss with probability ``near_miss_fraction``. Used for training batches.
        """
        if not lengths:
            raise InputError("no lengths to sample from", field="lengths")
        for n in set(lengths):
            self._check_length(n)
        acc, pw, init = self._acc, self._pow, self.dfa.initial
        words: list[tuple[int, ...]] = []
        labels: list[bool] = []
        kinds: list[str] = []
        for _ in range(count):
            n = lengths[rng.randrange(len(lengths))]
            n_acc = acc[n][init]
            n_rej = pw[n] - n_acc
            positive = bool(n_acc) and (not n_rej or rng.random() < 0.5)
            if positive:
                w = self._sample(n, True, rng)
                assert w is not None
                words.append(w)
                kinds.append("positive")
            else:
                got = self.negative(n, rng, near_miss=rng.random() < near_miss_fraction)
                assert got is not None
                words.append(got[0])
                kinds.append(got[1])
            labels.append(positive)
        out = LabeledWords(tuple(words), tuple(labels), tuple(kinds))
        self.verify(out)
        return out

    def verify(self, data: LabeledWords) -> None:
        """Re-check every label against the (independently stored) DFA.

        Raises:
            RuntimeError: a label disagrees with the DFA (a bug in this module, never user input).
        """
        delta, accepting, q0 = self._verify_delta, self._verify_accepting, self.dfa.initial
        for w, y in zip(data.words, data.labels):
            q = q0
            for a in w:
                q = delta[q][a]
            if accepting[q] != y:
                raise RuntimeError(f"sampler bug: word {w} labelled {y} but the DFA says {not y}")
