"""A stratified sample of census languages: the cells of the lattice, and ``per_cell`` languages drawn
uniformly from each.

The cells partition the regular languages by the strongest position information a transformer
needs (*Disentangling the Expressivity of RoPE*, §2.2, Thm 3.1, Thm 3.2, Cor. 4.1; the inclusions of
:data:`~langclass.core.algebra.lattice.INCLUSIONS`: LTL[P] ⊆ LTL[P,MOD] ⊆ LTL[P,Y,MOD] ⊆ FO[<,MOD],
LTL[P] ⊆ LTL[P,Y] ⊆ LTL[P,Y,MOD], LTL[P,Y] ⊆ star-free ⊆ FO[<,MOD]):

==========  ==================================================  ====================
cell        languages                                           class keys
==========  ==================================================  ====================
1 ltl_p     LTL[P]                                              ltl_p
2 mod       LTL[P,MOD] \\ LTL[P]                                 ltl_p_mod ∧ ¬ltl_p
3 y         LTL[P,Y] \\ LTL[P,MOD]                               ltl_p_y ∧ ¬ltl_p_mod
4 y_mod     LTL[P,Y,MOD] \\ (LTL[P,Y] ∪ LTL[P,MOD])              ltl_p_y_mod ∧ ¬ltl_p_y ∧ ¬ltl_p_mod
5 sf        star-free \\ LTL[P,Y,MOD]                            star_free ∧ ¬ltl_p_y_mod
6 fo_mod    FO[<,MOD] \\ (star-free ∪ LTL[P,Y,MOD])              fo_mod ∧ ¬star_free ∧ ¬ltl_p_y_mod
7 beyond    not in FO[<,MOD] (not in AC⁰)                        ¬fo_mod
==========  ==================================================  ====================

Cell 5 is written star-free \\ LTL[P,Y,MOD] so that the seven cells are disjoint by construction:
a star-free language of LTL[P,Y,MOD] \\ LTL[P,Y] (if any) is in cell 4. With every class decided,
each language is in exactly one cell (the first whose condition holds; ``tests/test_census_sample``
checks on every language of at most three states over two letters that exactly one condition
holds). A language with an undecided class a condition needs is in no cell (:func:`cell_of` gives
None) and is counted as undecided.

The causal setting (:data:`CAUSAL_CELLS`) splits every cell by C-RASP membership (class key
``crasp``, the languages a causal NoPE transformer recognizes with counting precision — *Counting
Like Transformers: Compiling Temporal Counting Logic into Softmax Transformers*): cell ``X`` becomes
``X_crasp`` (X ∩ C-RASP) and ``X_not_crasp`` (X \\ C-RASP). The fourteen cells are disjoint because
the seven are and each is cut by one condition and its negation; ``tests/test_census_sample`` checks
that exactly one holds on every language of at most three states over two letters.

Sampling (:func:`stratified_sample`): one pass over any iterable of ``(dfa, profile)`` — the
enumeration :func:`census_languages`, or a stored census run — with one reservoir per cell
(Algorithm R, Vitter, "Random sampling with a reservoir"): every language of a cell is kept with
probability ``per_cell / n_cell``, deterministically given the seed and the order of the iterable.
Trivial languages (∅, Σ*) and languages with words of one class only at every test length (no
length generalization can be tested on them; ``test_lengths``) are not sampled, only counted.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded

__all__ = ["CELLS", "CELL_NAMES", "CELL_KEYS", "CAUSAL_CELLS", "CAUSAL_CELL_NAMES", "CAUSAL_CELL_KEYS", "PARTITIONS", "MAX_SAMPLE_LANGUAGES", "cell_of", "cell_conditions", "check_census_size", "census_languages",
           "two_class_lengths", "Sample", "stratified_sample"]

CELL_KEYS: tuple[str, ...] = ("ltl_p", "ltl_p_mod", "ltl_p_y", "ltl_p_y_mod", "star_free", "fo_mod")
"""The class keys the cells are defined by."""

# cell → (class keys that must be members, class keys that must not)
CELLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ltl_p": (("ltl_p",), ()),
    "mod": (("ltl_p_mod",), ("ltl_p",)),
    "y": (("ltl_p_y",), ("ltl_p_mod",)),
    "y_mod": (("ltl_p_y_mod",), ("ltl_p_y", "ltl_p_mod")),
    "sf": (("star_free",), ("ltl_p_y_mod",)),
    "fo_mod": (("fo_mod",), ("star_free", "ltl_p_y_mod")),
    "beyond": ((), ("fo_mod",)),
}
"""Cell key → (classes the language is in, classes it is not in); see the module table."""

CELL_NAMES: dict[str, str] = {
    "ltl_p": "LTL[P]",
    "mod": "LTL[P,MOD] \\ LTL[P]",
    "y": "LTL[P,Y] \\ LTL[P,MOD]",
    "y_mod": "LTL[P,Y,MOD] \\ (LTL[P,Y] ∪ LTL[P,MOD])",
    "sf": "star-free \\ LTL[P,Y,MOD]",
    "fo_mod": "FO[<,MOD] \\ (star-free ∪ LTL[P,Y,MOD])",
    "beyond": "beyond FO[<,MOD]",
}
"""Cell key → display name."""

CAUSAL_CELL_KEYS: tuple[str, ...] = CELL_KEYS + ("crasp",)
"""The class keys the causal setting's cells are defined by."""

CAUSAL_CELLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    f"{cell}{suffix}": (inside + (("crasp",) if suffix == "_crasp" else ()), outside + (() if suffix == "_crasp" else ("crasp",)))
    for cell, (inside, outside) in CELLS.items() for suffix in ("_crasp", "_not_crasp")
}
"""The causal setting's cells: every cell of :data:`CELLS` split into its C-RASP part and the rest."""

CAUSAL_CELL_NAMES: dict[str, str] = {
    f"{cell}{suffix}": (f"({name})" if "\\" in name else name) + (" ∩ C-RASP" if suffix == "_crasp" else " \\ C-RASP")
    for cell, name in CELL_NAMES.items() for suffix in ("_crasp", "_not_crasp")
}
"""Causal cell key → display name."""

PARTITIONS: dict[str, tuple[Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]], Mapping[str, str], tuple[str, ...]]] = {
    "strict": (CELLS, CELL_NAMES, CELL_KEYS),
    "causal": (CAUSAL_CELLS, CAUSAL_CELL_NAMES, CAUSAL_CELL_KEYS),
}
"""Training setting → (cells, their display names, the class keys they need)."""

MAX_SAMPLE_LANGUAGES = 2_000_000
"""Most census languages one sampling pass reads (limit ``max_sample_languages``: N ≤ 4 over two letters
is 57,068; N = 5 is 3.76 million and needs a stored census run or a raised limit)."""


def cell_conditions(profile: Mapping[str, bool | None],
                    cells: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = CELLS) -> dict[str, bool | None]:
    """Cell → whether its condition holds (None where an undecided class leaves it open); ``cells``
    is :data:`CELLS` or :data:`CAUSAL_CELLS`."""
    out: dict[str, bool | None] = {}
    for cell, (inside, outside) in cells.items():
        vals = [profile.get(k) for k in inside] + [None if profile.get(k) is None else not profile.get(k) for k in outside]
        out[cell] = False if any(v is False for v in vals) else None if any(v is None for v in vals) else True
    return out


def cell_of(profile: Mapping[str, bool | None],
            cells: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = CELLS) -> str | None:
    """The cell of a language from its class memberships (``{class_key: bool | None}``), or None when
    an undecided class leaves the cell open; ``cells`` is :data:`CELLS` or :data:`CAUSAL_CELLS`."""
    conds = cell_conditions(profile, cells)
    for cell in cells:
        if conds[cell] is None:
            return None
        if conds[cell]:
            return cell
    raise AssertionError(f"no cell holds for the profile {dict(profile)}; the lattice's inclusions are violated")


def check_census_size(max_states: int, alphabet_size: int, *, max_languages: int = MAX_SAMPLE_LANGUAGES) -> int:
    """The number of languages :func:`census_languages` would read (the published counts,
    :func:`langclass.core.census.run.expected_languages`), checked before anything is enumerated — the
    sweep job calls it before it is queued.

    Raises:
        InputError: ``max_states`` or ``alphabet_size`` < 1.
        LimitExceeded: ``max_sample_languages`` — more languages than ``max_languages``.
    """
    from langclass.core.census.run import expected_languages

    if max_states < 1 or alphabet_size < 1:
        raise InputError("states and alphabet must be ≥ 1", field="states" if max_states < 1 else "alphabet")
    total = expected_languages(max_states, alphabet_size)
    if total > max_languages:
        raise LimitExceeded("max_sample_languages", max_languages,
                            f"the census of ≤ {max_states} states over {alphabet_size} letters has {total:,} languages, more than "
                            f"max_sample_languages = {max_languages:,}", field="states")
    return total


def census_languages(max_states: int, alphabet_size: int, *, max_languages: int = MAX_SAMPLE_LANGUAGES,
                     keys: Sequence[str] = CELL_KEYS) -> Iterator[tuple[DFA, dict[str, bool | None]]]:
    """Every language with a minimal complete DFA of at most ``max_states`` states over the letters
    a, b, … (each once, :func:`langclass.core.automata.enumerate.minimal_dfas`) with its classification
    in the classes ``keys`` (default the cell classes; :data:`CAUSAL_CELL_KEYS` for the causal cells;
    :func:`langclass.core.census.run.classify`).

    Raises:
        LimitExceeded: ``max_sample_languages`` — more languages than ``max_languages`` (checked from
            the published counts before anything is enumerated).
    """
    from langclass.core.automata.enumerate import minimal_dfas
    from langclass.core.census.run import classify

    check_census_size(max_states, alphabet_size, max_languages=max_languages)
    letters = [chr(ord("a") + i) for i in range(alphabet_size)]
    for n in range(1, max_states + 1):
        for table, mask in minimal_dfas(n, alphabet_size):
            rows = [list(table[q * alphabet_size:(q + 1) * alphabet_size]) for q in range(n)]
            dfa = DFA.from_table(letters, rows, 0, [q for q in range(n) if mask >> q & 1])
            yield dfa, classify(dfa, tuple(keys))


def two_class_lengths(dfa: DFA, lengths: Sequence[int]) -> list[int]:
    """The lengths among ``lengths`` at which L(dfa) has both a word and a non-word (exact counts by
    dynamic programming over the states; O(max length × states × letters) integer additions)."""
    if not lengths:
        return []
    want = set(lengths)
    k = len(dfa.alphabet)
    trans = dfa.transitions.tolist()
    accepting = {q for q, a in enumerate(dfa.accepting.tolist()) if a}
    counts = [0] * dfa.num_states
    counts[int(dfa.initial)] = 1
    total = 1
    out = []
    for n in range(0, max(lengths) + 1):
        if n in want:
            acc = sum(c for q, c in enumerate(counts) if q in accepting)
            if 0 < acc < total:
                out.append(n)
        nxt = [0] * dfa.num_states
        for q, c in enumerate(counts):
            if c:
                for r in trans[q]:
                    nxt[r] += c
        counts = nxt
        total *= k
    return sorted(out)


@dataclass
class Sample:
    """The drawn languages and what was counted on the way.

    Attributes:
        languages: cell → the drawn ``(dfa, profile)`` pairs, in enumeration order.
        counts: cell → languages of the cell that could be drawn.
        trivial: languages with one class of words at every test length (∅ and Σ* among them), not drawn.
        undecided: languages whose cell an undecided class leaves open.
        seen: languages read.
    """

    languages: dict[str, list[tuple[DFA, dict[str, bool | None]]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    trivial: int = 0
    undecided: int = 0
    seen: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (the drawn languages as canonical DFA JSON and fingerprint)."""
        return {
            "counts": dict(self.counts),
            "drawn": {c: len(v) for c, v in self.languages.items()},
            "trivial": self.trivial,
            "undecided": self.undecided,
            "seen": self.seen,
        }


def stratified_sample(items: Iterable[tuple[DFA, Mapping[str, bool | None]]], per_cell: int, seed: int, *,
                      test_lengths: Sequence[int] | None = None, cells: Sequence[str] | None = None,
                      partition: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = CELLS) -> Sample:
    """Draw up to ``per_cell`` languages uniformly from each cell, in one pass (one reservoir per cell).

    Args:
        items: ``(dfa, profile)`` pairs, each language once (:func:`census_languages` or a stored run).
        per_cell: languages per cell (≥ 1); a cell with fewer has all of them drawn.
        seed: seeds the reservoirs (one :class:`random.Random` per cell, seeded from ``seed`` and the
            cell key), so the draw depends only on the seed and the order of ``items``.
        test_lengths: when given, a language with words of one class only at every one of these
            lengths is not drawn (counted in ``trivial``); without it only ∅ and Σ* are excluded.
        cells: the cells to draw from (default: all of ``partition``).
        partition: the cells: :data:`CELLS` (strict setting) or :data:`CAUSAL_CELLS` (causal setting;
            the profiles must then hold ``crasp``).

    Returns:
        :class:`Sample` — the drawn languages of each cell in enumeration order.

    Raises:
        InputError: ``per_cell`` < 1 or an unknown cell.
    """
    if per_cell < 1:
        raise InputError("per_cell must be ≥ 1", field="per_cell")
    cells = list(cells or partition)
    for c in cells:
        if c not in partition:
            raise InputError(f"unknown cell {c!r}; expected one of {', '.join(partition)}", field="cells")
    rngs = {c: random.Random(f"{seed}:{c}") for c in cells}
    reservoirs: dict[str, list[tuple[int, DFA, dict[str, bool | None]]]] = {c: [] for c in cells}
    sample = Sample(counts={c: 0 for c in cells})
    for i, (dfa, profile) in enumerate(items):
        sample.seen += 1
        cell = cell_of(profile, partition)
        if cell is None:
            sample.undecided += 1
            continue
        if cell not in reservoirs:
            continue
        if test_lengths is not None:
            trivial = not two_class_lengths(dfa, test_lengths)
        else:
            trivial = dfa.num_states == 1
        if trivial:
            sample.trivial += 1
            continue
        seen = sample.counts[cell]
        sample.counts[cell] = seen + 1
        res = reservoirs[cell]
        if seen < per_cell:
            res.append((i, dfa, dict(profile)))
        else:
            j = rngs[cell].randrange(seen + 1)
            if j < per_cell:
                res[j] = (i, dfa, dict(profile))
    sample.languages = {c: [(d, p) for _i, d, p in sorted(reservoirs[c], key=lambda t: t[0])] for c in cells}
    return sample
