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
from .replaykit import Checker, ReplayError, same_figures
from ..monoid.groups import center_is_trivial, group_name
from ..monoid.permgroup import PermGroup, solvable_by_order
from langclass.core.base.errors import LimitExceeded
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
    if not 2 <= m <= chk.n:  # a cycle of states: at most n long (also bounds the word w^m run below)
        raise ReplayError(f"a counter's period m is between 2 and the number of states {chk.n}, not {m}")
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
    """The verdict and the figures recomputed by the decision procedure on the DFA; with the monoid's
    words (small monoids) also by the definition on the replay's own enumeration."""
    same_figures(cert, chk.require_member("star_free").certificate, ("monoid_size", "aperiodicity_index"))
    if cert.monoid is None and not chk.small():
        return
    W = chk.monoid(cert.monoid)  # enumerated on the DFA (the certificate's words must be its tree)
    if W.m != cert.monoid_size:
        raise ReplayError(f"the monoid has {W.m} elements, not {cert.monoid_size}")
    ar = np.arange(W.m)
    N = cert.aperiodicity_index
    if not 1 <= N <= max(1, chk.n):  # the index of a transformation of n points is at most n
        raise ReplayError(f"the aperiodicity index is between 1 and the number of states {chk.n}, not {N}")
    P = W.powers(ar, N)
    if not (_then(P, W.X) == P).all():
        raise ReplayError(f"x^{N} ≠ x^{N + 1} for some element")
    if N > 1 and (_then(W.powers(ar, N - 1), W.X) == W.powers(ar, N - 1)).all():
        raise ReplayError(f"x^{N - 1} = x^{N} already holds for every element: N is not least")


def _then(P: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Rows P[i] followed by X[i] (x^p·x on transformations)."""
    return np.take_along_axis(X, P, axis=1)


def _replay_fo_mod_yes(chk: Checker, cert: QuasiAperiodic) -> None:
    same_figures(cert, chk.require_member("fo_mod").certificate, ("stability_index", "stable_semigroup_size"))
    if cert.monoid is None and not chk.small():
        return
    W = chk.monoid(cert.monoid)
    s, stable = W.levels()
    if s != cert.stability_index:
        raise ReplayError(f"the stability index is {s}, not {cert.stability_index}")
    if int(stable.sum()) != cert.stable_semigroup_size:
        raise ReplayError(f"η(Σ^{s}) has {int(stable.sum())} elements, not {cert.stable_semigroup_size}")
    if not W.aperiodic(np.flatnonzero(stable)).all():
        raise ReplayError("an element of the stable semigroup generates a non-trivial group")


REPLAY_GROUP_ORDER = 20_160
"""A replay enumerates a witness's group (to check its order, name and properties) up to this order
(|A8|); a larger one raises ``LimitExceeded("replay_group_order")``."""


def _generated_group(perms: list[tuple[int, ...]], degree: int) -> tuple[np.ndarray, set[bytes]]:
    """``(rows [N, degree], their bytes)``: every element of the permutation group generated by
    ``perms`` (breadth-first closure on whole frontiers, "g then p" = p[g]).

    Raises:
        LimitExceeded: ``replay_group_order`` (more than :data:`REPLAY_GROUP_ORDER` elements)."""
    ident = np.arange(degree, dtype=np.int64)
    gens = np.asarray(perms, dtype=np.int64).reshape(len(perms), degree)
    seen = {ident.tobytes()}
    rows = [ident]
    frontier = ident[None, :]
    while frontier.shape[0] and gens.shape[0]:
        cand = np.unique(gens[:, frontier].reshape(-1, degree), axis=0)  # [g, f, d]: each g then each p
        new = [r for r in cand if r.tobytes() not in seen]
        for r in new:
            seen.add(r.tobytes())
        rows += new
        if len(rows) > REPLAY_GROUP_ORDER:
            raise LimitExceeded("replay_group_order", REPLAY_GROUP_ORDER,
                                f"the witness's group has more than {REPLAY_GROUP_ORDER} elements")
        frontier = np.asarray(new, dtype=np.int64).reshape(-1, degree)
    return np.stack(rows), seen


def _replay_group(chk: Checker, g: GroupEvidence, length: int | None = None, counter=None) -> None:
    """Every field of a group: e idempotent with image ``points``; each generator (id and word, of
    length ``length`` when given) lies in the H-class of e and acts on the points as its permutation;
    the group they generate (enumerated from the permutations) has the stated order and contains the
    element of the ``counter`` word (when given); its properties and name are recomputed with the
    classification's :class:`~langclass.core.algebra.monoid.permgroup.PermGroup` and compared."""
    if len(g.generator_words) != len(g.permutations) or len(g.generators) != len(g.permutations):
        raise ReplayError("generators, generator_words and permutations differ in length")
    W = chk.closure()
    if not (0 <= g.idempotent < W.m and W.idempotent[g.idempotent]):
        raise ReplayError(f"element {g.idempotent} is not an idempotent of the monoid")
    image = tuple(sorted(set(W.X[g.idempotent].tolist())))
    if tuple(g.points) != image:
        raise ReplayError("points are not the image of the idempotent")
    if g.degree != len(g.points):
        raise ReplayError("the degree is the number of points")
    e = g.idempotent
    for x, w, perm in zip(g.generators, g.generator_words, g.permutations):
        if not (length is None or len(w) == length):
            raise ReplayError(f"a generator word has length {len(w)}, not s = {length}")
        if W.element(w) != x:
            raise ReplayError(f"the generator word {list(w)} is not element {x}")
        if not (W.product(e, x) == x == W.product(x, e)):
            raise ReplayError(f"generator {x} does not lie in the group of idempotent {e}")
        if sorted(perm) != list(range(len(g.points))):
            raise ReplayError("a permutation does not permute the points")
        for i, p in enumerate(g.points):
            if chk.run(w, p) != g.points[perm[i]]:
                raise ReplayError("a generator does not act as its permutation")
    perms = [tuple(p) for p in g.permutations]
    rows, members = _generated_group(perms, g.degree)
    if rows.shape[0] != g.order:
        raise ReplayError(f"the generators generate a group of order {rows.shape[0]}, not {g.order}")
    if counter is not None:  # the counter's element lies in this group: in eMe, a permutation of the points
        x = W.element(counter)
        act = [chk.run(counter, p) for p in g.points]
        if not (W.product(e, x) == x == W.product(x, e)) or sorted(act) != list(g.points):
            raise ReplayError(f"the counter word {list(counter)} does not lie in the group of idempotent {e}")
        if np.asarray([g.points.index(q) for q in act], dtype=np.int64).tobytes() not in members:
            raise ReplayError(f"the counter word {list(counter)} acts as no element of the listed group")
    # the group's facts by the classification's own engine on the enumerated group
    G = PermGroup(rows)
    idx = G.index(np.asarray(perms, dtype=np.int64).reshape(len(perms), g.degree)).tolist()
    abelian = G.commute(idx)
    cyclic = abelian and G.is_cyclic_abelian()
    solvable = abelian or solvable_by_order(g.order) or G.is_solvable(idx)
    if (g.abelian, g.cyclic, g.solvable) != (abelian, cyclic, solvable):
        raise ReplayError(f"the group is abelian={abelian}, cyclic={cyclic}, solvable={solvable}")
    name = group_name(g.order, perms, abelian, cyclic, solvable, lambda: center_is_trivial(G, idx))
    if g.name != name:
        raise ReplayError(f"the group is {name}, not {g.name}")


def _replay_fo_mod_no(chk: Checker, wit: StableCounter) -> None:
    replay_counter(chk, wit)
    s, stable = chk.closure().levels()  # recomputed on the DFA, never read from the witness
    if wit.stability_index != s:
        raise ReplayError(f"the stability index is {s}, not {wit.stability_index}")
    if len(wit.word) != s:
        raise ReplayError(f"the counter word has length {len(wit.word)}, not s = {s}: it need not lie in η(Σ^s)")
    _replay_group(chk, wit.group, s, wit.word)


register(Decider("star_free", decide_star_free, (Aperiodic,), (Counter,), _replay_star_free_yes, replay_counter))
register(Decider("fo_mod", decide_fo_mod, (QuasiAperiodic,), (StableCounter,), _replay_fo_mod_yes,
                 _replay_fo_mod_no))
