"""A census of small regular languages: every language whose minimal complete DFA has at most N
states over K letters, each exactly once, classified in every class of the lattice.

Enumeration (:mod:`langclass.core.automata.enumerate`). Breadth-first numbered transition tables
of initially connected DFAs, each accepting set that makes one minimal: every language once (the
proof is in that module). The shards (:func:`shards`: the valid table prefixes of one length, per
state number) partition the tables, so any set of finished shards counts disjoint sets of
languages, and the counts do not depend on where or in which order the shards ran.

Classification once per syntactic morphism. The transition monoid of a minimal DFA with its letter
generators is the syntactic morphism η: Σ* → M of its language. Every minimal accepting set of one
table gives the same transition monoid, and a language and its complement share their minimal DFA
up to the accepting set — so a class that is a property of η (a variety, ne- or lm-variety of
languages, hence closed under complement) has one answer per table. Every class of the lattice is
such a class except those named in :data:`~langclass.core.algebra.lattice.ACCEPTANCE_DEPENDENT`
(none at present); those are decided per language. Going further, η is determined up to
isomorphism by its right Cayley graph with the elements numbered in shortlex order of their least
words (the ``right`` array of :func:`~langclass.core.algebra.monoid.transition_monoid`, whose
breadth-first closure numbers them so), so the answers are cached by that key: tables with the same monoid
are classified once. Every class of the lattice is also closed under renaming the letters (a bijection
π of Σ maps a formula of each logic to one of the same logic, and the algebraic characterizations
are properties of the monoid with its *set* of letter images, which η∘π shares), so the key is the
least, over the orderings of the letters (up to :data:`MAX_KEY_LETTERS` letters), of the Cayley
graph renumbered breadth-first in that letter order (:func:`cayley_key`): a table and its
letter-swapped twin are classified once. The deciders are the registry's
(:data:`~langclass.core.algebra.classes.REGISTRY`, every key of
:data:`~langclass.core.algebra.lattice.CLASS_KEYS`), those with the most subclasses first, and a class
whose answer the lattice's inclusions already imply is not decided again (:func:`classify`).

The number of languages with a minimal DFA of exactly n states over k letters is published
(:data:`PUBLISHED`, :data:`PUBLISHED_SOURCES`); :attr:`Census.matches_published` compares.
"""

from __future__ import annotations

import itertools
from array import array
from operator import itemgetter
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from langclass.core.automata.enumerate import (PUBLISHED, PUBLISHED_SOURCES, bfs_tables, is_minimal, minimal_dfas,
                                               minimal_masks)
from langclass.core.base.errors import LimitExceeded
from langclass.core.census.shards import SHARD_TARGET, Checkpoint, CheckpointMismatch, Shard, ShardResult, shards

__all__ = ["PUBLISHED", "PUBLISHED_SOURCES", "MAX_CENSUS_LANGUAGES", "SHARD_TARGET", "bfs_tables", "is_minimal",
           "minimal_masks", "minimal_dfas", "classify", "Shard", "ShardResult", "shards", "run_shard",
           "Checkpoint", "CheckpointMismatch", "Census", "census", "expected_languages", "format_census",
           "profile_text", "cayley_graph", "cayley_key"]

MAX_CENSUS_LANGUAGES = 10_000_000
"""Largest census run by default (number of languages, from :data:`PUBLISHED` or a bound):
N = 5 over two letters (3.76 million) and N = 4 over three (2.05 million) run; N = 6 over two
letters (290 million) is refused unless the caller raises ``max_languages``."""

MAX_CAYLEY_CACHE = 500_000
"""Entries of the per-process cache of answers by syntactic monoid (cleared when full)."""

MAX_KEY_LETTERS = 3
"""The cache key of :func:`cayley_key` is minimized over every ordering of the letters up to this
many letters (3! = 6 renumberings); with more letters the key is the Cayley graph as numbered."""


def cayley_graph(table: Sequence[int], n: int, k: int, bound: int) -> list[list[int]] | None:
    """The right Cayley graph of the transition monoid of a complete DFA, in plain Python.

    Args:
        table: flattened transition table (``table[q*k + a]`` = q·a) of a *minimal* complete DFA
            with every state reachable (any state numbering: the graph does not depend on it).
        n, k: states and letters.
        bound: give up beyond this many elements.

    Returns:
        ``right[x][a]`` = x·a, the elements numbered in shortlex order of their least words
        (identity 0) — the same numbering and graph as the ``right`` array of
        :func:`~langclass.core.algebra.monoid.transition_monoid` (the same breadth-first closure,
        element order then letter order; a test compares); ``None`` when the monoid has more than
        ``bound`` elements.
    """
    letters = [tuple(table[q * k + a] for q in range(n)) for a in range(k)]  # letters[a][q] = q·a
    ident = tuple(range(n))
    index = {ident: 0}
    rows = [ident]
    right: list[list[int]] = []
    for row in rows:  # grows while it is read: the breadth-first closure
        image = itemgetter(*row) if n > 1 else (lambda g, q=row[0]: (g[q],))
        out = []
        for g in letters:
            y = image(g)
            v = index.get(y)
            if v is None:
                v = len(rows)
                if v >= bound:
                    return None
                index[y] = v
                rows.append(y)
            out.append(v)
        right.append(out)
    return right


def _packed(values: Iterable[int], size: int) -> bytes:
    """Flattened graph entries as compact bytes (uint16 below 65,536 elements, else uint32; a type
    letter first, so the two never meet)."""
    code = "H" if size < 1 << 16 else "I"
    return code.encode() + array(code, values).tobytes()


def cayley_key(right: Sequence[Sequence[int]]) -> bytes:
    """A key of the syntactic morphism up to isomorphism *and* renaming of the letters.

    Args:
        right: ``[|M|][k]`` the right Cayley graph of a transition monoid, elements numbered in
            shortlex order of their least words (identity 0), as :func:`cayley_graph` and
            :func:`~langclass.core.algebra.monoid.transition_monoid` number them.

    Returns:
        The least (flattened into compact bytes, compared bytewise), over the orderings π of the
        letters (all of them for k ≤ :data:`MAX_KEY_LETTERS`, else the identity alone), of the graph
        renumbered breadth-first from the identity reading the letters in the order π, columns
        permuted likewise. For the identity ordering that is ``right`` itself. Two morphisms get the same
        key iff one is the other with the letters renamed, up to isomorphism (the renumbered graph
        is the Cayley graph of η∘π in shortlex order, and a Cayley graph rooted at the identity
        determines the monoid and its letter images: x·y is read by following a word of y from x).
    """
    rows = [list(r) for r in right]
    size = len(rows)
    k = len(rows[0]) if rows else 0
    best = _packed((v for r in rows for v in r), size)
    if k < 2 or k > MAX_KEY_LETTERS:
        return best
    for perm in itertools.permutations(range(k)):
        if perm == tuple(range(k)):
            continue
        new = [-1] * size
        new[0] = 0
        order = [0]
        for x in order:  # grows while it is read: a breadth-first search
            row = rows[x]
            for a in perm:
                y = row[a]
                if new[y] < 0:
                    new[y] = len(order)
                    order.append(y)
        key = _packed((new[rows[x][a]] for x in order for a in perm), size)
        if key < best:
            best = key
    return best


def _alphabet(k: int) -> list[str]:
    return [chr(ord("a") + i) for i in range(k)]


# ============================================================================ classification


def _lattice_closures() -> tuple[tuple[str, ...], dict[str, list[str]], dict[str, list[str]]]:
    from langclass.core.algebra.lattice import CLASS_KEYS, implied_by

    up = {key: implied_by(key) for key in CLASS_KEYS}
    down = {key: [s for s in CLASS_KEYS if key in up[s]] for key in CLASS_KEYS}
    return CLASS_KEYS, up, down


def classify(dfa: Any, keys: Iterable[str] | None = None, limits: Any = None, *, monoid: Any = None) -> dict[str, bool | None]:
    """Membership of L(dfa) in the classes ``keys`` (default: every class of the lattice), by the
    registered deciders, skipping any class the inclusions already decide.

    The classes with the most subclasses are decided first (the monoid is built once, when the
    first decider that needs it runs); after each answer every class it implies (a member is in every superclass, a non-member in no
    subclass; :data:`~langclass.core.algebra.lattice.INCLUSIONS`) is filled in without running its
    decider. The answers are those of :func:`~langclass.core.classification.analysis.analyze` (a test compares on
    every language with at most three states over two letters), without certificates.

    Args:
        dfa: a complete DFA (minimized and canonically renumbered here).
        keys: class keys to answer (others may be answered too, as a side effect of the lattice).
        limits: :class:`~langclass.core.base.limits.Limits` for the monoid (default limits).
        monoid: the transition monoid of ``dfa`` when the caller has it (built here otherwise).

    Returns:
        class key → ``True`` / ``False``, or ``None`` where a limit stopped the decision. (An answer
        the lattice implies is never decided again, so there is no cross-check here;
        ``analyze(..., cross_check=True)`` runs every decider and compares.)
    """
    from langclass.core.algebra.classes import REGISTRY, Context
    from langclass.core.algebra.monoid import transition_monoid
    from langclass.core.base.limits import DEFAULT_LIMITS

    all_keys, up, down = _CLOSURES if _CLOSURES else _set_closures()
    wanted = list(all_keys if keys is None else keys)
    limits = limits or DEFAULT_LIMITS
    A = dfa.canonical()
    ctx = Context(A, monoid, limits)
    members: dict[str, bool | None] = {key: None for key in all_keys}
    # the classes with the most subclasses first: a non-member of one (the common case) answers all of them
    order = sorted(wanted, key=lambda key: -len(down[key]))
    monoid_failed = False
    for key in order:
        if members[key] is not None:
            continue
        if not REGISTRY[key].on_automaton and ctx.monoid is None:
            if monoid_failed:
                continue
            try:
                ctx.monoid = transition_monoid(A, limits)
            except LimitExceeded:
                monoid_failed = True
                continue
        try:
            val = REGISTRY[key].decide(ctx).member
        except LimitExceeded:
            val = None
        if val is None:
            continue
        members[key] = val
        for other in (up[key] if val else down[key]):
            members[other] = val
    return members


_CLOSURES: tuple = ()


def _set_closures() -> tuple:
    global _CLOSURES
    _CLOSURES = _lattice_closures()
    return _CLOSURES


_CACHE: dict[bytes, tuple[bool | None, ...]] = {}

KEY_CLOSURE_BOUND = 4096
"""Monoids up to this many elements are keyed from :func:`cayley_graph` before any
:class:`~langclass.core.algebra.monoid.TransitionMonoid` is built (a cache hit then builds none);
a larger one is enumerated by :func:`~langclass.core.algebra.monoid.transition_monoid` under the
default limits."""


def _profile_of_table(table: tuple[int, ...], mask: int, n: int, k: int, keys: tuple[str, ...]) -> tuple[bool | None, ...]:
    """The answers of the acceptance-independent ``keys`` for a table (with any minimal ``mask``),
    cached by the transition monoid's right Cayley graph up to renaming the letters (:func:`cayley_key`)."""
    from langclass.core.algebra.monoid import transition_monoid
    from langclass.core.automata.automaton import DFA

    graph = cayley_graph(table, n, k, KEY_CLOSURE_BOUND)  # the table is minimal for mask, all states reachable
    ck = None
    if graph is not None:
        flat = _packed((v for row in graph for v in row), len(graph))  # as numbered: a hit needs no renumbering
        if (hit := _CACHE.get(flat)) is not None and len(hit) == len(keys):
            return hit
        ck = cayley_key(graph)
        if (hit := _CACHE.get(ck)) is not None and len(hit) == len(keys):
            _CACHE[flat] = hit
            return hit
    rows = [list(table[q * k:(q + 1) * k]) for q in range(n)]
    dfa = DFA.from_table(_alphabet(k), rows, 0, [q for q in range(n) if mask >> q & 1])
    try:
        monoid = transition_monoid(dfa)
    except LimitExceeded:
        m = classify(dfa, keys)
        return tuple(m[key] for key in keys)
    if ck is None:
        ck = cayley_key(monoid.right.tolist())
        if (hit := _CACHE.get(ck)) is not None and len(hit) == len(keys):
            return hit
    m = classify(dfa, keys, monoid=monoid)
    prof = tuple(m[key] for key in keys)
    if len(_CACHE) >= MAX_CAYLEY_CACHE:
        _CACHE.clear()
    _CACHE[ck] = prof
    if graph is not None:
        _CACHE[flat] = prof  # both keys are Cayley graphs of this morphism (up to renaming the letters)
    return prof


def profile_text(profile: tuple[bool | None, ...]) -> str:
    """A membership profile as text, one character per class: ``1`` member, ``0`` not, ``-`` undecided."""
    return "".join("-" if v is None else "1" if v else "0" for v in profile)


def _profile_from_text(s: str) -> tuple[bool | None, ...]:
    return tuple(None if c == "-" else c == "1" for c in s)


def _batches(it: Iterator[tuple[int, ...]], size: int) -> Iterator[list[tuple[int, ...]]]:
    while batch := list(itertools.islice(it, size)):
        yield batch


def run_shard(shard: Shard, class_keys: tuple[str, ...] | None = None, *, members: bool = True) -> ShardResult:
    """Enumerate, filter and classify the languages of one shard.

    Args:
        shard: the tables to cover.
        class_keys: the classes to answer, in profile order (default: the lattice's
            :data:`~langclass.core.algebra.lattice.CLASS_KEYS`; the census passes its own so a
            worker on another machine answers the same classes or fails).
        members: also return the per-language records (table, mask, profile index; 2 + 2 + n·k
            bytes per language).

    Returns:
        :class:`ShardResult`.

    Raises:
        ValueError: ``class_keys`` names a class this process's lattice does not have.
    """
    from langclass.core.algebra.lattice import ACCEPTANCE_DEPENDENT, CLASS_KEYS

    keys = tuple(CLASS_KEYS if class_keys is None else class_keys)
    unknown = [key for key in keys if key not in CLASS_KEYS]
    if unknown:
        raise ValueError(f"class keys {unknown} are not in this worker's lattice (different code versions?)")
    fixed = tuple(key for key in keys if key not in ACCEPTANCE_DEPENDENT)
    per_language = tuple(key for key in keys if key in ACCEPTANCE_DEPENDENT)
    t0 = time.perf_counter()
    n, k = shard.n, shard.k
    batch = max(1, (1 << 20) // ((1 << n) * n * n))
    counts: Counter[tuple[bool | None, ...]] = Counter()  # insertion order = profile index order
    index: dict[tuple[bool | None, ...], int] = {}
    rec_tables: list[np.ndarray] = []
    rec_masks: list[np.ndarray] = []
    rec_profiles: list[np.ndarray] = []
    tables = languages = 0
    for chunk in _batches(bfs_tables(n, k, shard.prefix), batch):
        arr = np.asarray(chunk, dtype=np.int64)
        ok = minimal_masks(arr, n, k)
        tables += len(chunk)
        for i, (table, row) in enumerate(zip(chunk, ok)):
            good = np.flatnonzero(row)
            if good.size == 0:
                continue
            languages += int(good.size)
            base = dict(zip(fixed, _profile_of_table(table, int(good[0]), n, k, fixed))) if fixed else {}
            if not per_language:
                prof = tuple(base[key] for key in keys)
                counts[prof] += int(good.size)
                pids = np.full(good.size, index.setdefault(prof, len(index)), dtype=np.uint16)
            else:
                from langclass.core.automata.automaton import DFA

                rows = [list(table[q * k:(q + 1) * k]) for q in range(n)]
                ids = []
                for mask in good.tolist():
                    dfa = DFA.from_table(_alphabet(k), rows, 0, [q for q in range(n) if mask >> q & 1])
                    extra = classify(dfa, per_language)
                    prof = tuple(base[key] if key in base else extra[key] for key in keys)
                    counts[prof] += 1
                    ids.append(index.setdefault(prof, len(index)))
                pids = np.asarray(ids, dtype=np.uint16)
            if members:
                rec_tables.append(np.broadcast_to(arr[i].astype(np.uint8), (good.size, n * k)))
                rec_masks.append(good.astype(np.uint16))
                rec_profiles.append(pids)
    if len(index) > np.iinfo(np.uint16).max:  # pragma: no cover - far beyond the lattice's profiles
        raise ValueError(f"shard {shard.id} has {len(index)} distinct profiles, more than a uint16 index holds")
    profiles = {profile_text(p): c for p, c in counts.items()}
    if not members:
        return ShardResult(shard.id, n, tables, languages, profiles, time.perf_counter() - t0)
    return ShardResult(shard.id, n, tables, languages, profiles, time.perf_counter() - t0,
                       np.concatenate(rec_tables) if rec_tables else np.zeros((0, n * k), np.uint8),
                       np.concatenate(rec_masks) if rec_masks else np.zeros(0, np.uint16),
                       np.concatenate(rec_profiles) if rec_profiles else np.zeros(0, np.uint16))


# ============================================================================ the census


@dataclass(frozen=True)
class Census:
    """The result of :func:`census`.

    Attributes:
        max_states, alphabet_size: N and K.
        by_states: ``{n: languages with a minimal DFA of exactly n states}``.
        published: ``{n: the published count}`` where known.
        profiles: ``{membership tuple (in class_keys order): languages}``.
        seconds: compute time: the sum of every shard's own run time (:attr:`ShardResult.seconds`),
            shards resumed from a checkpoint included with the seconds they took then — so a run
            resumed, or read back whole from a checkpoint, reports what the census cost.
        wall_seconds: wall-clock time of this invocation (small when most shards were resumed).
        jobs: worker processes (or Ray's CPUs) used.
        class_keys: the classes, in profile order.
        tables: transition tables enumerated.
        shards: shards of the run; ``resumed`` of them came from the checkpoint.
        executor: ``"local"`` or ``"ray"``.
        members: per-language records when the run kept them (``keep_members``): ``{n: (tables
            uint8 [m, n*k], masks uint16 [m], profile ids int32 [m])}`` in enumeration order, a
            profile id indexing ``list(profiles)``; ``None`` otherwise.
    """

    max_states: int
    alphabet_size: int
    by_states: dict[int, int]
    published: dict[int, int]
    profiles: dict[tuple[bool | None, ...], int]
    seconds: float
    jobs: int = 1
    class_keys: tuple[str, ...] = field(default=())
    tables: int = 0
    shards: int = 0
    resumed: int = 0
    executor: str = "local"
    members: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = field(default=None, compare=False, repr=False)
    wall_seconds: float = 0.0

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
        """Languages in every class of ``member_of`` and in none of ``not_member_of``.

        Raises:
            KeyError: a key is not a class of this census."""
        idx = {k: i for i, k in enumerate(self.class_keys)}
        ia = [idx[a] for a in member_of]
        ib = [idx[b] for b in not_member_of]
        return sum(c for prof, c in self.profiles.items()
                   if all(prof[i] is True for i in ia) and all(prof[i] is False for i in ib))

    def to_dict(self) -> dict[str, Any]:
        from langclass.core.algebra.lattice import INCLUSIONS

        keys = self.class_keys
        return {
            "max_states": self.max_states, "alphabet_size": self.alphabet_size, "total": self.total,
            "by_states": {str(n): c for n, c in self.by_states.items()},
            "published": {str(n): c for n, c in self.published.items()},
            "matches_published": self.matches_published,
            "class_keys": list(keys),
            "classes": {k: self.count((k,)) for k in keys},
            "intersections": {f"{a}&{b}": self.count((a, b)) for a, b in itertools.combinations(keys, 2)},
            "differences": {f"{sup}-{sub}": self.count((sup,), (sub,)) for sub, sup in INCLUSIONS
                            if sub in keys and sup in keys},
            "undecided": sum(c for p, c in self.profiles.items() if None in p),
            "profiles": {profile_text(p): c for p, c in sorted(self.profiles.items(), key=lambda kv: -kv[1])},
            "tables": self.tables, "shards": self.shards, "resumed_shards": self.resumed,
            "seconds": round(self.seconds, 2), "wall_seconds": round(self.wall_seconds, 2), "jobs": self.jobs, "executor": self.executor,
        }


ShardRunner = Callable[[list[Shard], tuple[str, ...]], Iterator[ShardResult]]
"""Runs shards (in any order, concurrently or not) and yields each one's result as it finishes."""


def _run_one(args: tuple[Shard, tuple[str, ...]]) -> ShardResult:
    return run_shard(*args)


def local_runner(jobs: int) -> ShardRunner:
    """A :data:`ShardRunner` on this machine: in this process (``jobs`` ≤ 1) or a pool of ``jobs``
    processes (results as they finish; Ctrl-C cancels the shards not started)."""

    def run(todo: list[Shard], keys: tuple[str, ...]) -> Iterator[ShardResult]:
        if jobs <= 1:
            for s in todo:
                yield run_shard(s, keys)
            return
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        pool = ProcessPoolExecutor(max_workers=jobs)
        try:
            pending = {pool.submit(_run_one, (s, keys)) for s in todo}
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    yield f.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    return run


def expected_languages(max_states: int, alphabet_size: int) -> int:
    """The published number of languages with at most N states over K letters, or where a count is
    not published the bound n^(n·K)·2^n (tables times accepting sets) for that n."""
    pub = PUBLISHED.get(alphabet_size, {})
    return sum(pub.get(n, n ** (n * alphabet_size) * 2 ** n) for n in range(1, max_states + 1))


def census(max_states: int, alphabet_size: int, *, jobs: int = 1, runner: ShardRunner | None = None,
           checkpoint: str | os.PathLike[str] | None = None, max_languages: int = MAX_CENSUS_LANGUAGES,
           shard_target: int = SHARD_TARGET, executor: str = "local",
           progress: Callable[[int, int, int], None] | None = None, keep_members: bool = False) -> Census:
    """Enumerate and classify every language with a minimal complete DFA of at most ``max_states``
    states over ``alphabet_size`` letters (``a``, ``b``, ...), shard by shard.

    Args:
        max_states: N ≥ 1 (at most 10: a shard id writes table entries as digits).
        alphabet_size: K ≥ 1.
        jobs: worker processes of the default runner (1: in this process).
        runner: how to run the shards (default :func:`local_runner`; the Ray one is
            :func:`langclass.app.execution.census_ray.ray_runner`).
        checkpoint: a JSON-lines file of finished shards (:class:`Checkpoint`): shards found there
            are not run again, and each finished shard is appended. It is left in place (the
            caller removes it with :meth:`Checkpoint.remove` once the result is kept: the CLI does
            after storing the run).
        max_languages: the limit below.
        shard_target: shards per state number (:func:`shards`).
        executor: recorded in the result (``"local"``, ``"ray"``).
        progress: called with (shards done, shards in all, languages counted so far).
        keep_members: keep every language's record (:attr:`Census.members`; with a checkpoint, also
            in its sidecar folder so a resumed run has them all). The runner must then return shards
            with records (the local and Ray runners do).

    Returns:
        :class:`Census`.

    Raises:
        ValueError: N outside 1..10 or K below 1.
        LimitExceeded: ``max_census_languages`` — :func:`expected_languages` exceeds ``max_languages``
            (checked before any work).
        CheckpointMismatch: the checkpoint file is of another census.
    """
    from langclass.core.algebra.lattice import CLASS_KEYS
    from langclass.version import package_version

    if not 1 <= max_states <= 10 or alphabet_size < 1:
        raise ValueError("max_states must be in 1..10 and alphabet_size at least 1")
    expected = expected_languages(max_states, alphabet_size)
    if expected > max_languages:
        raise LimitExceeded("max_census_languages", max_languages,
                            f"N={max_states}, K={alphabet_size} means up to {expected} languages; "
                            f"max_census_languages={max_languages}")
    t0 = time.perf_counter()
    keys = tuple(CLASS_KEYS)
    plan = shards(max_states, alphabet_size, shard_target)
    header = {"max_states": max_states, "alphabet_size": alphabet_size, "class_keys": list(keys),
              "package_version": package_version(), "shard_target": shard_target, "shards": len(plan)}
    ckpt = Checkpoint(checkpoint, header, members=keep_members) if checkpoint is not None else None
    done: dict[str, ShardResult] = dict(ckpt.done) if ckpt else {}
    resumed = sum(1 for s in plan if s.id in done)
    todo = [s for s in plan if s.id not in done]
    langs = sum(r.languages for r in done.values())
    if progress:
        progress(len(done), len(plan), langs)
    run = runner or local_runner(jobs)
    for r in run(todo, keys):
        if keep_members and not r.has_members:
            raise ValueError(f"the runner returned shard {r.shard_id} without per-language records")
        if not keep_members and r.has_members:
            r = replace(r, member_tables=None, member_masks=None, member_profiles=None)  # bounded memory
        done[r.shard_id] = r
        if ckpt:
            ckpt.add(r)
        langs += r.languages
        if progress:
            progress(len(done), len(plan), langs)
    by_states = {n: 0 for n in range(1, max_states + 1)}
    profiles: Counter[tuple[bool | None, ...]] = Counter()
    tables = 0
    compute = 0.0
    for s in plan:
        r = done[s.id]
        by_states[r.n] += r.languages
        tables += r.tables
        compute += r.seconds
        for p, c in r.profiles.items():
            profiles[_profile_from_text(p)] += c
    members = _gather_members(plan, done, list(profiles), max_states, alphabet_size) if keep_members else None
    pub = PUBLISHED.get(alphabet_size, {})
    return Census(max_states, alphabet_size, by_states, {n: pub[n] for n in by_states if n in pub}, dict(profiles),
                  compute, jobs, keys, tables, len(plan), resumed, executor, members,
                  wall_seconds=time.perf_counter() - t0)


def _gather_members(plan: list[Shard], done: dict[str, ShardResult], order: list[tuple[bool | None, ...]],
                    max_states: int, k: int) -> dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The shards' records concatenated per state number (plan order), profile ids made global."""
    gid = {profile_text(p): i for i, p in enumerate(order)}
    out: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for n in range(1, max_states + 1):
        parts = [done[s.id] for s in plan if s.n == n]
        t = [r.member_tables for r in parts]
        m = [r.member_masks for r in parts]
        p = [np.asarray([gid[x] for x in r.profiles], dtype=np.int32)[r.member_profiles] for r in parts]
        out[n] = (np.concatenate(t) if t else np.zeros((0, n * k), np.uint8),  # type: ignore[arg-type]
                  np.concatenate(m) if m else np.zeros(0, np.uint16),  # type: ignore[arg-type]
                  np.concatenate(p) if p else np.zeros(0, np.int32))
        for r in parts:  # the per-shard copies are no longer needed
            done[r.shard_id] = replace(r, member_tables=None, member_masks=None, member_profiles=None)
    return out


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
    lines.append(f"published: {PUBLISHED_SOURCES.get(c.alphabet_size, 'none known')}")
    lines.append("")
    w = max(len(v) for v in name.values()) + 2
    lines.append(f"{'class':<{w}}{'members':>10}{'share':>8}")
    for k in keys:
        m = c.count((k,))
        lines.append(f"{name[k]:<{w}}{m:>10}{m / c.total:>8.1%}")
    lines.append("")
    lines.append("strict parts of the inclusions (in the larger class, not in the smaller):")
    for sub, sup in INCLUSIONS:
        if sub in name and sup in name:
            lines.append(f"  {name[sup]} \\ {name[sub]}: {c.count((sup,), (sub,))}")
    lines.append("")
    lines.append("pairwise intersections |A ∩ B| (columns: the classes in the order above, numbered):")
    cw = max(7, len(str(c.total)) + 1)
    lines.append(" " * w + "".join(f"{i + 1:>{cw}}" for i in range(len(keys))))
    for i, a in enumerate(keys):
        cells = "".join(f"{c.count((a, b)):>{cw}}" for b in keys)
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
    how = f"{c.jobs} worker process{'es' if c.jobs != 1 else ''}" if c.executor == "local" else f"Ray ({c.jobs} CPUs)"
    resumed = f", {c.resumed} of {c.shards} shards from the checkpoint" if c.resumed else ""
    lines.append(f"{c.seconds:.1f} s of compute ({c.wall_seconds:.1f} s wall) with {how}; {c.tables} tables in "
                 f"{c.shards} shards{resumed}")
    return "\n".join(lines)
