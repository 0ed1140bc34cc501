"""A census of small regular languages: every language whose minimal complete DFA has at most N
states over K letters, each exactly once, classified in every class of the lattice.

Enumeration. A minimal complete DFA is initially connected, and an initially connected DFA has
exactly one breadth-first numbering (states numbered in the order a breadth-first search from the
initial state meets them, letters in alphabet order — the numbering of
:meth:`~langclass.core.automata.automaton.DFA.canonical`). In that numbering, reading the transition table
row by row (state 0 letter 0, state 0 letter 1, ...), new states appear in increasing order and
each state appears before its own row is read. :func:`bfs_tables` generates exactly those tables;
each accepting set that makes the DFA minimal (Moore's refinement ends with N classes) gives one
language, and two different (table, accepting set) pairs never give the same language (the
minimal DFA is unique up to isomorphism, and the numbering removes the isomorphism).

The number of languages with a minimal DFA of exactly n states over k letters is published:
Domaratzki, Kisman & Shallit, "On the number of distinct languages accepted by finite automata
with n states" (Journal of Automata, Languages and Combinatorics 7, 2002, Section 6), tabulated as
OEIS A129622 for two letters (2, 24, 1028, 56014, 3705306) and A059412 for one letter; three
letters: 2, 112, 41928 (O'Dwyer, "Counting distinct n-state DFAs", 2024). :data:`PUBLISHED`.

Complement symmetry. L and its complement have the same minimal DFA (accepting set flipped) and
the same syntactic monoid, and every class here is closed under complement (each is a variety of
languages, or a Boolean algebra of automaton conditions), so only the language of each pair whose
initial state rejects is classified and counted twice (``use_complement=False`` classifies both;
the tests check the two agree).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from langclass.core.base.errors import LimitExceeded

__all__ = ["PUBLISHED", "MAX_CENSUS_LANGUAGES", "bfs_tables", "is_minimal", "minimal_dfas", "Census", "census",
           "format_census"]

PUBLISHED: dict[int, dict[int, int]] = {
    1: {1: 2, 2: 4, 3: 12, 4: 30, 5: 78},
    2: {1: 2, 2: 24, 3: 1028, 4: 56014, 5: 3705306},
    3: {1: 2, 2: 112, 3: 41928},
}
"""``PUBLISHED[k][n]``: languages whose minimal complete DFA has exactly n states over k letters."""

MAX_CENSUS_LANGUAGES = 500_000
"""Largest census run (number of languages, from :data:`PUBLISHED` or counted): N = 5 over two
letters (3.7 million) is refused."""


def bfs_tables(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Every transition table (flattened, ``t[q*k + a]``) of an initially connected DFA with states
    ``0..n-1`` numbered breadth-first from state 0."""
    total = n * k
    table = [0] * total

    def rec(p: int, seen: int) -> Iterator[tuple[int, ...]]:
        if p == total:
            if seen == n:
                yield tuple(table)
            return
        if p // k >= seen:  # the row's state has not been reached: not initially connected
            return
        # states still to discover must each be found by some later position
        if n - seen > total - p:
            return
        for v in range(min(seen + 1, n)):
            table[p] = v
            yield from rec(p + 1, seen + (v == seen))

    yield from rec(0, 1)


def is_minimal(table: tuple[int, ...], accepting: int, n: int, k: int) -> bool:
    """Moore's refinement on an initially connected DFA: minimal iff it ends with n classes.

    ``accepting`` is a bit mask (bit q = state q accepts)."""
    cls = [(accepting >> q) & 1 for q in range(n)]
    count = len(set(cls))
    while True:
        sig = [(cls[q], *(cls[table[q * k + a]] for a in range(k))) for q in range(n)]
        ids: dict[tuple[int, ...], int] = {}
        new = [ids.setdefault(s, len(ids)) for s in sig]
        if len(ids) == n:
            return True
        if len(ids) == count:
            return False
        cls, count = new, len(ids)


def minimal_dfas(n: int, k: int, *, initial_rejecting_only: bool = False) -> Iterator[tuple[tuple[int, ...], int]]:
    """``(table, accepting mask)`` of every minimal complete DFA with exactly n states over k
    letters, breadth-first numbered (each language once)."""
    for table in bfs_tables(n, k):
        for mask in range(1 << n):
            if initial_rejecting_only and mask & 1:
                continue
            if is_minimal(table, mask, n, k):
                yield table, mask


def _alphabet(k: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(k)]


def _classify_chunk(args: tuple[int, int, list[tuple[tuple[int, ...], int]]]) -> list[tuple[bool | None, ...]]:
    from .analysis import analyze
    from langclass.core.automata.automaton import DFA
    from langclass.core.algebra.lattice import CLASS_KEYS

    n, k, items = args
    alphabet = _alphabet(k)
    out = []
    for table, mask in items:
        rows = [list(table[q * k:(q + 1) * k]) for q in range(n)]
        dfa = DFA.from_table(alphabet, rows, 0, [q for q in range(n) if mask >> q & 1])
        a = analyze(dfa)
        out.append(tuple(a.classes[key].member for key in CLASS_KEYS))
    return out


@dataclass(frozen=True)
class Census:
    """The result of :func:`census`.

    Attributes:
        max_states, alphabet_size: N and K.
        by_states: ``{n: languages with a minimal DFA of exactly n states}``.
        published: ``{n: the published count}`` where known.
        profiles: ``{membership tuple (in CLASS_KEYS order): languages}``.
        seconds: wall-clock time of the run.
    """

    max_states: int
    alphabet_size: int
    by_states: dict[int, int]
    published: dict[int, int]
    profiles: dict[tuple[bool | None, ...], int]
    seconds: float
    jobs: int = 1
    class_keys: tuple[str, ...] = field(default=())

    @property
    def total(self) -> int:
        return sum(self.by_states.values())

    @property
    def matches_published(self) -> bool | None:
        """The count per n equals the published one for every n (None when none is published)."""
        known = [n for n in self.by_states if n in self.published]
        if not known:
            return None
        return all(self.by_states[n] == self.published[n] for n in known)

    def count(self, member_of: tuple[str, ...] = (), not_member_of: tuple[str, ...] = ()) -> int:
        """Languages in every class of ``member_of`` and in none of ``not_member_of``."""
        idx = {k: i for i, k in enumerate(self.class_keys)}
        return sum(c for prof, c in self.profiles.items()
                   if all(prof[idx[a]] is True for a in member_of) and all(prof[idx[b]] is False for b in not_member_of))

    def to_dict(self) -> dict[str, Any]:
        from langclass.core.algebra.lattice import INCLUSIONS

        keys = self.class_keys
        return {
            "max_states": self.max_states, "alphabet_size": self.alphabet_size, "total": self.total,
            "by_states": {str(n): c for n, c in self.by_states.items()},
            "published": {str(n): c for n, c in self.published.items()},
            "matches_published": self.matches_published,
            "classes": {k: self.count((k,)) for k in keys},
            "intersections": {f"{a}&{b}": self.count((a, b)) for a, b in itertools.combinations(keys, 2)},
            "differences": {f"{sup}-{sub}": self.count((sup,), (sub,)) for sub, sup in INCLUSIONS},
            "undecided": sum(c for p, c in self.profiles.items() if None in p),
            "seconds": round(self.seconds, 2), "jobs": self.jobs,
        }


def census(max_states: int, alphabet_size: int, *, jobs: int = 1, use_complement: bool = True,
           chunk: int = 400, progress: Callable[[int, int], None] | None = None) -> Census:
    """Enumerate and classify every language with a minimal complete DFA of at most ``max_states``
    states over ``alphabet_size`` letters (``a``, ``b``, ...).

    Args:
        max_states: N ≥ 1.
        alphabet_size: K ≥ 1.
        jobs: worker processes for the classification (1: in this process).
        use_complement: classify one language of each complementary pair and count it twice.
        chunk: languages per task sent to a worker.
        progress: called with (languages classified, languages to classify).

    Returns:
        :class:`Census`.

    Raises:
        ValueError: N or K below 1.
        LimitExceeded: ``max_census_languages`` — the published count for (N, K) (or, where none
            is published, the bound n^(n·K)·2^n per n) exceeds :data:`MAX_CENSUS_LANGUAGES`.
    """
    from langclass.core.algebra.lattice import CLASS_KEYS

    if max_states < 1 or alphabet_size < 1:
        raise ValueError("max_states and alphabet_size must be at least 1")
    pub = PUBLISHED.get(alphabet_size, {})
    # the published count where there is one, else a bound: n^(n·k) tables times 2^n accepting sets
    expected = sum(pub.get(n, n ** (n * alphabet_size) * 2 ** n) for n in range(1, max_states + 1))
    if expected > MAX_CENSUS_LANGUAGES:
        raise LimitExceeded("max_census_languages", MAX_CENSUS_LANGUAGES,
                            f"N={max_states}, K={alphabet_size} means up to {expected} languages; "
                            f"max_census_languages={MAX_CENSUS_LANGUAGES}")
    t0 = time.perf_counter()
    weight = 2 if use_complement else 1
    by_states: dict[int, int] = {}
    tasks: list[tuple[int, int, list]] = []
    for n in range(1, max_states + 1):
        items = list(minimal_dfas(n, alphabet_size, initial_rejecting_only=use_complement))
        by_states[n] = weight * len(items)
        tasks.extend((n, alphabet_size, items[i:i + chunk]) for i in range(0, len(items), chunk))
    todo = sum(len(t[2]) for t in tasks)
    profiles: Counter = Counter()
    done = 0

    def take(result: list) -> None:
        nonlocal done
        for prof in result:
            profiles[prof] += weight
        done += len(result)
        if progress:
            progress(done, todo)

    if jobs <= 1:
        for t in tasks:
            take(_classify_chunk(t))
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            for result in pool.map(_classify_chunk, tasks):
                take(result)
    return Census(max_states, alphabet_size, by_states, {n: pub[n] for n in by_states if n in pub}, dict(profiles),
                  time.perf_counter() - t0, jobs, CLASS_KEYS)


def format_census(c: Census, *, profiles: int = 12) -> str:
    """The census as text: counts per n against the literature, per class, the differences along
    every inclusion of the lattice, the pairwise intersections and the most common membership profiles."""
    from langclass.core.algebra.lattice import CLASS_INFO, INCLUSIONS

    keys = c.class_keys
    name = {k: CLASS_INFO[k].name for k in keys}
    lines = [f"census: every language with a minimal complete DFA of at most {c.max_states} states over "
             f"{c.alphabet_size} letter{'s' if c.alphabet_size != 1 else ''} ({', '.join(_alphabet(c.alphabet_size))})", ""]
    lines.append(f"{'states':>6}  {'languages':>10}  {'published':>10}")
    for n, cnt in c.by_states.items():
        pub = c.published.get(n)
        mark = "" if pub is None else ("  ok" if pub == cnt else "  MISMATCH")
        lines.append(f"{n:>6}  {cnt:>10}  {pub if pub is not None else '—':>10}{mark}")
    pub_total = sum(c.published.values()) if len(c.published) == len(c.by_states) else None
    lines.append(f"{'total':>6}  {c.total:>10}  {pub_total if pub_total is not None else '—':>10}")
    lines.append("published: Domaratzki, Kisman & Shallit, On the number of distinct languages accepted by finite "
                 "automata with n states (2002), §6 / OEIS A129622, A059412")
    lines.append("")
    w = max(len(v) for v in name.values()) + 2
    lines.append(f"{'class':<{w}}{'members':>9}{'share':>8}")
    for k in keys:
        m = c.count((k,))
        lines.append(f"{name[k]:<{w}}{m:>9}{m / c.total:>8.1%}")
    lines.append("")
    lines.append("strict parts of the inclusions (in the larger class, not in the smaller):")
    for sub, sup in INCLUSIONS:
        lines.append(f"  {name[sup]} \\ {name[sub]}: {c.count((sup,), (sub,))}")
    lines.append("")
    lines.append("pairwise intersections |A ∩ B| (columns: the classes in the order above, numbered):")
    lines.append(" " * w + "".join(f"{i + 1:>7}" for i in range(len(keys))))
    for i, a in enumerate(keys):
        cells = "".join(f"{c.count((a, b)):>7}" for b in keys)
        lines.append(f"{f'{i + 1:>2} ' + name[a]:<{w}}{cells}")
    undecided = sum(v for p, v in c.profiles.items() if None in p)
    if undecided:
        lines.append(f"undecided (a limit was hit): {undecided}")
    lines.append("")
    lines.append(f"most common membership profiles ({len(c.profiles)} distinct):")
    for prof, cnt in sorted(c.profiles.items(), key=lambda kv: -kv[1])[:profiles]:
        yes = [name[k] for k, v in zip(keys, prof) if v]
        lines.append(f"  {cnt:>8}  {', '.join(yes) or '(none of the classes)'}")
    lines.append("")
    lines.append(f"{c.seconds:.1f} s with {c.jobs} worker process{'es' if c.jobs != 1 else ''}")
    return "\n".join(lines)
