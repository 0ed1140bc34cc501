"""Groups in the monoid: star-free (no group at all) and FO[<,MOD] (no group in the stable semigroup).

* star-free = FO[<] = LTL[S] ⇔ the syntactic monoid is aperiodic (M. P. Schützenberger, "On finite
  monoids having only trivial subgroups", 1965).
* FO[<,MOD] (regular ∩ AC⁰) ⇔ quasi-aperiodic: the stable semigroup T = η(Σ^s) has only trivial
  groups (Barrington, Compton, Straubing & Thérien, "Regular languages in NC¹", 1992).

A non-member's witness is a counter (q·w^m = q ≠ q·w); a member's certificate carries the whole
monoid as words when it is small (:class:`~langclass.core.algebra.classes.evidence.MonoidWords`), so a
replay rebuilds it and checks the claim by the definition. :func:`find_counter_dfa` looks for a
counter on the DFA alone when the monoid is over its cap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .base import ClassResult, Decider, Evidence, make_result, register, show, words
from .context import Context
from .evidence import Counter, MonoidWords, monoid_words
from .replaykit import Checker, ReplayError
from langclass.core.base.wording import count_noun

__all__ = ["decide_star_free", "decide_fo_mod", "find_counter_dfa", "counter_from_element", "need_monoid",
           "Aperiodic", "QuasiAperiodic", "StableCounter", "GroupEvidence"]


@dataclass(frozen=True)
class Aperiodic(Evidence):
    """The monoid (``monoid_size`` elements) satisfies x^N = x^{N+1} for every x, N = ``aperiodicity_index``
    the least such N; ``monoid`` lists it as words (``None`` over the certificate cap)."""

    CHECK = "the listed words are the whole monoid, and N is the least exponent with x^N = x^{N+1} for all x"
    monoid_size: int
    aperiodicity_index: int
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class QuasiAperiodic(Evidence):
    """The stable semigroup T = η(Σ^s) (``stable_semigroup_size`` elements) contains no non-trivial
    group: x^ω·x = x^ω for every x ∈ T; ``monoid`` lists the monoid as words (``None`` over the cap)."""

    CHECK = ("the listed words are the whole monoid; s is the least s ≥ 1 with η(Σ^s) = η(Σ^2s), "
             "|η(Σ^s)| is as stated and x^ω·x = x^ω for every x in it")
    stability_index: int
    stable_semigroup_size: int
    monoid: MonoidWords | None = None


@dataclass(frozen=True)
class GroupEvidence(Evidence):
    """A finite group in the monoid (see :class:`~langclass.core.algebra.monoid.GroupInfo`), its generators
    given as words acting as the listed permutations of ``points``."""

    CHECK = "each generator word maps points[i] to points[permutation[i]]"
    idempotent: int
    order: int
    degree: int
    name: str
    abelian: bool
    cyclic: bool
    solvable: bool
    generators: tuple[int, ...]
    generator_words: tuple[tuple[str, ...], ...]
    permutations: tuple[tuple[int, ...], ...]
    points: tuple[int, ...]

    @classmethod
    def of(cls, g, generator_words) -> GroupEvidence:
        """From a :class:`~langclass.core.algebra.monoid.GroupInfo` with the given generator words."""
        return cls(g.idempotent, g.order, g.degree, g.name, g.abelian, g.cyclic, g.solvable, tuple(g.generators),
                   tuple(words(w) for w in generator_words), tuple(tuple(p) for p in g.permutations), tuple(g.points))


@dataclass(frozen=True)
class StableCounter(Evidence):
    """A counter whose word has length exactly s (so η(w) lies in the stable semigroup), and the
    group of T it lies in."""

    CHECK = "|w| = s, q·w ≠ q and q·w^m = q; the group's generator words have length s and permute its points"
    word: tuple[str, ...]
    state: int
    m: int
    cycle: tuple[int, ...]
    prefix: tuple[str, ...]
    stability_index: int
    group: GroupEvidence


def need_monoid(ctx: Context):
    """The context's monoid.

    Raises:
        ValueError: the decision needs the transition monoid and the context has none.
    """
    if ctx.monoid is None:
        raise ValueError("this decision needs the transition monoid")
    return ctx.monoid


def counter_from_element(ctx: Context, x: int) -> Counter:
    """A counter: state q and m ≥ 2 with q·w^m = q ≠ q·w, w the word of x (x^{ω+1} ≠ x^ω)."""
    M = ctx.monoid
    ex = M.elements[x].astype(np.int64)
    w = M.elements[M.idempotent_of_group(x)].astype(np.int64)
    img = np.unique(w)
    moved = img[ex[img] != img]
    q = int(moved[0])
    cyc = [q]
    r = int(ex[q])
    while r != q:
        cyc.append(r)
        r = int(ex[r])
    return Counter(words(M.word(x)), q, len(cyc), tuple(cyc), words(ctx.access_word(q)))


def _aperiodicity_index(ctx: Context) -> int:
    """The least N with x^N = x^{N+1} for all x; an element stays stable once it is, so only the
    elements not yet stable are carried to the next power."""
    M = ctx.monoid
    T = ctx.table_if_built()
    N = 1
    active = np.arange(M.size)
    P = active.copy()  # P[i] = active[i]^N
    while True:
        ctx.check_time("star-free")
        # with the table: on element ids; without: x^{N+1} = x^N·x by reading x's word on the right Cayley graph
        PX = T[P, active] if T is not None else M.multiply_many(P, active)
        moving = PX != P
        if not moving.any():
            return N
        active, P = active[moving], PX[moving]
        N += 1


def decide_star_free(ctx: Context) -> ClassResult:
    """Star-free = FO[<] = LTL[S] ⇔ the syntactic monoid is aperiodic (Schützenberger 1965)."""
    M = need_monoid(ctx)
    viol = M.nontrivial_group_elements
    if not viol.any():
        N = _aperiodicity_index(ctx)
        return make_result("star_free", True,
                           f"the syntactic monoid ({count_noun(M.size, 'element')}) is aperiodic: x^{N} = x^{N + 1} for every element x",
                           Aperiodic(M.size, N, monoid_words(M)), None)
    x = int(np.flatnonzero(viol)[0])
    wit = counter_from_element(ctx, x)
    return make_result("star_free", False,
                       f"the word {show(M.word(x))} is a counter: from state {wit.state} it cycles with period {wit.m} "
                       f"({' → '.join(map(str, wit.cycle))}), so the monoid contains the group Z{wit.m}",
                       wit, wit)


def decide_fo_mod(ctx: Context) -> ClassResult:
    """FO[<,MOD] (regular ∩ AC⁰) ⇔ quasi-aperiodic: T = η(Σ^s) has only trivial groups
    (Barrington, Compton, Straubing & Thérien 1992)."""
    M = need_monoid(ctx)
    s = M.stability_index
    viol = M.nontrivial_group_elements & M.stable
    if not viol.any():
        return make_result("fo_mod", True,
                           f"the stable semigroup η(Σ^{s}) ({count_noun(M.stable_size, 'element')}, s = {s}) contains no non-trivial group",
                           QuasiAperiodic(s, M.stable_size, monoid_words(M)), None)
    x = int(np.flatnonzero(viol)[0])
    c = counter_from_element(ctx, x)
    e = M.idempotent_of_group(x)
    g = M.maximal_subgroup(e, within=M.stable)
    group = GroupEvidence.of(g, [M.stable_word(h) for h in g.generators])
    wit = StableCounter(words(M.stable_word(x)), c.state, c.m, c.cycle, c.prefix, s, group)
    return make_result("fo_mod", False,
                       f"the stable semigroup η(Σ^{s}) contains η({show(wit.word)}), which generates a cyclic group of "
                       f"order {wit.m} (inside {g.name}), so the language is not in AC⁰", wit, wit)


def find_counter_dfa(dfa, max_work: int = 50_000_000, max_length: int = 12) -> Counter | None:
    """Search short words for a counter (q·w^m = q ≠ q·w, m ≥ 2) directly on the DFA, without the monoid.

    Words are tried in shortlex order (one per distinct transformation) until ``max_work`` state
    updates or ``max_length``. A counter proves the language is not star-free (McNaughton & Papert 1971);
    finding none proves nothing (aperiodicity is PSPACE-complete on DFAs, Cho & Huynh 1991).

    Returns:
        a :class:`~langclass.core.algebra.classes.evidence.Counter`, or ``None``.
    """
    A = dfa.canonical()
    n, k = A.num_states, A.num_letters
    t = A.transitions.astype(np.int64)
    ctx = Context(A)
    seen = {np.arange(n).tobytes()}
    frontier = [(np.arange(n, dtype=np.int64), ())]
    work = 0
    logn = max(1, int(math.ceil(math.log2(max(n, 2)))))
    for _ in range(max_length):
        nxt = []
        for f, w in frontier:
            for a in range(k):
                g = t[f, a]
                key = g.tobytes()
                if key in seen:
                    continue
                seen.add(key)
                word = w + (A.alphabet[a],)
                # y = g^n lies on the cycles; g has a non-trivial cycle iff g moves some point of im y
                y = np.arange(n)
                base, p = g, n
                while p:
                    if p & 1:
                        y = base[y]
                    p >>= 1
                    if p:
                        base = base[base]
                work += n * (2 * logn + 2)
                img = np.unique(y)
                moved = img[g[img] != img]
                if moved.size:
                    q = int(moved[0])
                    cyc = [q]
                    r = int(g[q])
                    while r != q:
                        cyc.append(r)
                        r = int(g[r])
                    return Counter(words(word), q, len(cyc), tuple(cyc), words(ctx.access_word(q)))
                nxt.append((g, word))
                if work > max_work:
                    return None
        frontier = nxt
        if not frontier:
            break
    return None


# ============================================================================ replay


def replay_counter(chk: Checker, wit) -> None:
    """q·w ≠ q, q·w^m = q with m ≥ 2, and the prefix leads to q (a :class:`Counter` or a record with its fields)."""
    w, q, m = wit.word, wit.state, wit.m
    if not (m >= 2 and chk.run(w, q) != q and chk.run(list(w) * m, q) == q):
        raise ReplayError('check `m >= 2 and chk.run(w, q) != q and chk.run(list(w) * m, q) == q` in replay_counter does not hold')
    cyc = [q]
    for _ in range(m - 1):
        cyc.append(chk.run(w, cyc[-1]))
    if tuple(cyc) != tuple(wit.cycle):
        raise ReplayError("the cycle is not q, q·w, …")
    if chk.run(wit.prefix) != q:
        raise ReplayError('check `chk.run(wit.prefix) == q` in replay_counter does not hold')


def _replay_star_free_yes(chk: Checker, cert: Aperiodic) -> None:
    if cert.monoid is None:
        return
    W = chk.monoid(cert.monoid)
    if W.m != cert.monoid_size:
        raise ReplayError('check `W.m == cert.monoid_size` in _replay_star_free_yes does not hold')
    ar = np.arange(W.m)
    N = cert.aperiodicity_index
    P = ar.copy()
    prev = None
    for _ in range(N - 1):
        prev = P
        P = W.T[P, ar]
    if not (W.T[P, ar] == P).all():
        raise ReplayError(f"x^{N} ≠ x^{N + 1} for some element")
    if not (N == 1 or not (P == prev).all()):
        raise ReplayError(f"x^{N - 1} = x^{N} already holds for every element: N is not least")


def _replay_fo_mod_yes(chk: Checker, cert: QuasiAperiodic) -> None:
    if cert.monoid is None:
        return
    W = chk.monoid(cert.monoid)
    s, stable = W.levels()
    if not (s == cert.stability_index and int(stable.sum()) == cert.stable_semigroup_size):
        raise ReplayError('check `s == cert.stability_index and int(stable.sum()) == cert.stable_semigroup_size` in _replay_fo_mod_yes does not hold')
    for x in np.flatnonzero(stable).tolist():
        e = W.omega_idempotent(x)
        if W.T[e, x] != e:
            raise ReplayError("an element of the stable semigroup generates a non-trivial group")


def _replay_group(chk: Checker, g: GroupEvidence, length: int | None = None) -> None:
    if len(g.generator_words) != len(g.permutations):
        raise ReplayError('check `len(g.generator_words) == len(g.permutations)` in _replay_group does not hold')
    for w, perm in zip(g.generator_words, g.permutations):
        if not (length is None or len(w) == length):
            raise ReplayError('check `length is None or len(w) == length` in _replay_group does not hold')
        if sorted(perm) != list(range(len(g.points))):
            raise ReplayError('check `sorted(perm) == list(range(len(g.points)))` in _replay_group does not hold')
        for i, p in enumerate(g.points):
            if chk.run(w, p) != g.points[perm[i]]:
                raise ReplayError("a generator does not act as its permutation")


def _replay_fo_mod_no(chk: Checker, wit: StableCounter) -> None:
    replay_counter(chk, wit)
    if len(wit.word) != wit.stability_index:
        raise ReplayError('check `len(wit.word) == wit.stability_index` in _replay_fo_mod_no does not hold')
    _replay_group(chk, wit.group, wit.stability_index)


register(Decider("star_free", decide_star_free, (Aperiodic,), (Counter,), _replay_star_free_yes, replay_counter))
register(Decider("fo_mod", decide_fo_mod, (QuasiAperiodic,), (StableCounter,), _replay_fo_mod_yes,
                 _replay_fo_mod_no))
