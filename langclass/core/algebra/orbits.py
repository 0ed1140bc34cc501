"""Unary temporal logic over a class C of gap languages, decided on the C-orbits of the syntactic morphism.

For a class C of "gap" languages, PL(C), FL(C) and TL(C) are the languages of unary temporal logic
whose past (P_K φ: φ held at an earlier position j and the infix strictly between j and now is in
K ∈ C), future (F_K) or both modalities range over C. T. Place & M. Zeitoun ("A generic
characterization of generalized unary temporal logic and two-variable first-order logic", CSL 2024,
the main theorems for TL(C), PL(C) and FL(C)) decide them on the **C-orbits** of the syntactic
morphism η: Σ* → M: for an idempotent e, the C-orbit of e is {e·t·e : (e, t) is a C-pair}, and

* L ∈ PL(C) ⇔ every C-orbit is R-trivial,
* L ∈ FL(C) ⇔ every C-orbit is L-trivial,
* L ∈ TL(C) ⇔ every C-orbit is in DA

(Green's relations and DA taken inside the orbit, a monoid with identity e). This module computes
the orbits for the four gap classes

==========  =========================================  =====================================
gap         C                                          the C-orbit of an idempotent e
==========  =========================================  =====================================
``ST``      {∅, Σ*}                                    e·M·e
``DD``      ST⁺ = {∅, {ε}, Σ⁺, Σ*}                     e·M·e, but {1} when only ε maps to 1
``MOD``     length modulo m                            e·K_m·e
``MOD+``    MOD⁺: length modulo m, ε apart             e·K_m·e, but {1} when only ε maps to 1
==========  =========================================  =====================================

where K_m = η((Σ^m)*) is the MOD_m-kernel: the elements with an antecedent of length ≡ 0 (mod m).
Why these are the orbits: an idempotent e = η(u) has antecedents u^j of every length j·|u|, so for
t ∈ K_m, (e, t) is never separated by a length class mod m; conversely if some u ∈ η⁻¹(e),
v ∈ η⁻¹(t) have |u| ≡ |v| (mod m), then e·t·e = η(u^{m-1}·v·u^m)·… lies in e·K_m·e (the word
u^{m-1}v has length ≡ m|u| ≡ 0). With ε apart (DD, MOD⁺) the pairs are the same between nonempty
words, and only (1, 1) pairs with the empty word — so the orbit of 1 is {1} unless 1 has a
nonempty antecedent.

This gives, with one algorithm: PL(ST) = LTL[P], PL(DD) = LTL[P,Y], PL(MOD) = LTL[P,MOD],
PL(MOD⁺) = LTL[P,Y,MOD]; TL(ST) = FO²[<], TL(DD) = FO²[<,+1], TL(MOD) = FO²[<,MOD],
TL(MOD⁺) = FO²[<,+1,MOD]; FL(ST) = LTL[F], FL(DD) = LTL[F,X], FL(MOD) = LTL[F,MOD],
FL(MOD⁺) = LTL[F,X,MOD]. For MOD and MOD⁺ the union over m is decided through the **stable
modulus** s (the stability index, least s ≥ 1 with η(Σ^s) = η(Σ^{2s})): η(Σ^s) is then an
idempotent set, so K_s = {1} ∪ η(Σ^s) ⊆ K_m for every m (a word of length j·s maps into η(Σ^s) =
η(Σ^{m·s}), and m·s ≡ 0 mod m). Orbits only shrink as K_m does, so L is in the union iff the
orbits at m = s have the property, and the **period** — the least m whose orbits all have it,
i.e. the least m with L in PL(MOD_m⁺) (resp. FL, TL, without ⁺) — is at most s.

**Which m can be the least one.** Let S_j = η(Σ^j) (S_0 = {1}); the sequence is eventually periodic,
with preperiod i and period p (:attr:`~langclass.core.algebra.monoid.TransitionMonoid.level_period`),
and p divides s (s = p·⌈i/p⌉). Write P(m) for "the orbits at m all have the property" and
d = gcd(m, p). Then **P(m) ⇔ P(d)**, so the least m divides p (if P(m), then P(d) with d ≤ m and
d | p), and membership is decided at m = p (P(s) ⇔ P(gcd(s, p)) = P(p)). The search tries the
divisors of p in increasing order — for a DFA that is one cycle of length n, p = n and the
candidates are the divisors of n instead of 1, …, n. Proof. d | m gives K_m ⊆ K_d, so P(d) ⇒ P(m)
(orbits shrink). Conversely, *lifting*: an element z with antecedents of unboundedly large lengths
≡ 0 (mod d) lies in K_m — take such a length ℓ ≥ i; since d = gcd(m, p) divides ℓ there is ℓ' ≥ i
with ℓ' ≡ ℓ (mod p) and m | ℓ' (Chinese remainders), and S_ℓ' = S_ℓ ∋ z. Now let x ≠ y be
R-equivalent in the orbit O_d of an idempotent e at d (x·u = y, y·v = x, u, v ∈ O_d; the L case is
dual). Then x = x·(vu)^k for every k, and vu has an antecedent of positive length ≡ 0 (mod d) (else
u = v = 1 and x = y), so x, and likewise y, lift into K_m; u' = u·(vu)^ω and v' = v·(uv)^ω equal
u·(vu)^{ωt}, v·(uv)^{ωt} for every t ≥ 1, so they lift too, and x·u' = y·(vu)^ω = y,
y·v' = x·(uv)^ω = x. All four are fixed by e on both sides and lie in K_m, hence in the orbit O_m
= e·K_m·e (the same idempotents are concerned at m and d), and O_m is not R-trivial. For DA, a
non-idempotent z R-equivalent in O_d to an idempotent f (z·t = f, f·z = z) gives z and f lifted as
above, t·f = t·f^k lifted as well, z·(t·f) = f, so the R-class of f in O_m holds the
non-idempotent z. Hence ¬P(d) ⇒ ¬P(m). A non-member's witness is reported at the stable modulus s
(its words lie in every kernel): the violation found at p is lifted as above with m = s — the
lifted elements lie in K_s = {1} ∪ η(Σ^s) and get words of length exactly s from the stable
semigroup, so no residue graph of s is built.

How it is computed, for one modulus m, in O(m·|M|·|Σ|): the graph on M × Z_m with edges
(x, r) → (x·a, r+1 mod m). Its nodes reachable from (1, 0) with r = 0 are K_m (with a word of
length ≡ 0 mod m for each, from the BFS tree); for x, y ∈ K_m, x·K_m = y·K_m iff (x, 0) and (y, 0)
lie in one strong component, so R of the monoid K_m is read off the components; L likewise on the
left Cayley graph. Only the nodes reachable from (1, 0) matter (every node reachable from a (x, 0)
with x ∈ K_m is one of them), and for m | p they are {(1, 0)} ∪ {(x, j mod m) : x ∈ S_j, 1 ≤ j < i + p}
(S_j = S_{j−p} for j ≥ i + p, and m | p keeps the residue): when these Λ + 1 nodes (Λ = Σ_{j < i+p} |S_j|)
are far fewer than m·|M|, the graph is built on them alone — a cycle of length n has n of them at
every m instead of m·n. Inside an orbit O = e·K_m·e, R of O is R of K_m restricted (x = y·t with t ∈ K_m
gives x = y·(e t e)), so O is R-trivial iff no two of its elements share a component; it is in DA
iff in every R-class of O that holds an idempotent every element is idempotent (an element is
regular iff its R-class holds an idempotent). The orbits of idempotents in one D-class are
isomorphic (s ↦ ā·s·a for e = a·ā, f = ā·a, with a padded by powers of ā·a to keep lengths ≡ 0
mod m) and e' ≤ e gives e'·K_m·e' ⊆ e·K_m·e, so one idempotent per D-class is checked; without ⁺
the orbit of 1, K_m itself, contains every other.

Public interface::

    unary_temporal(monoid, gap: str, side: str, *, deadline=None, engine=None) -> UnaryTemporal

``gap`` ∈ :data:`GAPS` (``"ST"``, ``"DD"``, ``"MOD"``, ``"MOD+"``), ``side`` ∈ :data:`SIDES`
(``"past"`` = PL, R-trivial; ``"future"`` = FL, L-trivial; ``"both"`` = TL, DA). The verdict has
``.member``, ``.period`` (least m; 1 for ST and DD; ``None`` for a non-member), ``.modulus`` (the m
of ``.orbits`` and ``.witness``: the period of a member, the stable modulus of a non-member),
``.orbits`` (the checked orbits at that modulus) and ``.witness`` (an :class:`OrbitViolation`, or
``None``). :class:`OrbitEngine` caches kernels and components across calls on one monoid;
:data:`CLASS_OF` maps each of the twelve logics to its (gap, side).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.sparse import csr_matrix

from langclass.core.base.errors import InputError, LimitExceeded
from langclass.core.base.limits import Deadline

from .residue import (
    Kernel, StableKernel, bfs_and_components, csr, divisors, path_letters, positions, reachable_kernel,
    reachable_left_components, residue_table,
)

__all__ = [
    "GAPS",
    "SIDES",
    "CLASS_OF",
    "ORBIT_WORK_BUDGET",
    "Kernel",
    "StableKernel",
    "Orbit",
    "OrbitViolation",
    "UnaryTemporal",
    "OrbitEngine",
    "unary_temporal",
    "divisors",
]

GAPS: tuple[str, ...] = ("ST", "DD", "MOD", "MOD+")
"""The gap classes: trivial, ε apart (ST⁺), length modulo m, length modulo m with ε apart."""

SIDES: tuple[str, ...] = ("past", "future", "both")
"""PL(C) (R-trivial orbits), FL(C) (L-trivial orbits), TL(C) (orbits in DA)."""

CLASS_OF: dict[str, tuple[str, str]] = {
    "ltl_p": ("ST", "past"),
    "ltl_p_y": ("DD", "past"),
    "ltl_p_mod": ("MOD", "past"),
    "ltl_p_y_mod": ("MOD+", "past"),
    "fo2": ("ST", "both"),
    "fo2_succ": ("DD", "both"),
    "fo2_mod": ("MOD", "both"),
    "fo2_succ_mod": ("MOD+", "both"),
    "ltl_f": ("ST", "future"),
    "ltl_f_x": ("DD", "future"),
    "ltl_f_mod": ("MOD", "future"),
    "ltl_f_x_mod": ("MOD+", "future"),
}
"""Class key → (gap, side): PL(ST) = LTL[P], …, TL(MOD⁺) = FO²[<,+1,MOD], FL(MOD⁺) = LTL[F,X,MOD]."""

ORBIT_WORK_BUDGET = 30_000_000
"""Edges m·|M|·|Σ| of the residue graphs one decision may build, summed over the moduli it tries
(the period p of the levels η(Σ^j) first, then its divisors for the least period; the stable
modulus s for a non-member's witness only if lifting the violation at p to s fails a check); beyond it ``LimitExceeded`` (``orbit_work``) is
raised before the work. A graph built on its reachable nodes only counts those nodes times |Σ|."""

SMALL_TABLE_SIZE = 256
"""Witness steps of a monoid with at most this many elements read its multiplication table."""

PATH_FACTOR = 16
"""A witness step t with x·t = y is read off a shortest path of the residue graph instead of the
products of x with the whole orbit when those (|O|·ℓ steps, ℓ the longest shortlex word) cost more
than this many times the graph's edges (a sparse graph and a breadth-first search cost about that
many vectorized steps per edge; T7: ℓ = 17, the products win; a cycle of length n: ℓ = n − 1, the
path wins)."""

REACHABLE_FACTOR = 4
"""The residue graph of a modulus m | p is built on its reachable nodes alone (the module docstring)
when they are at most m·|M| / this many."""


@dataclass(frozen=True)
class Orbit:
    """The C-orbit e·K·e of an idempotent e: ``elements`` sorted element ids (e among them)."""

    idempotent: int
    elements: tuple[int, ...]


@dataclass(frozen=True)
class OrbitViolation:
    """Elements of one C-orbit that break the property, all in the orbit of ``idempotent``.

    ``relation`` ``"R"``: x ≠ y with x·u = y and y·v = x; ``"L"``: x ≠ y with u·x = y and
    v·y = x; ``"DA"``: (x·y)^ω·x·(x·y)^ω ≠ (x·y)^ω, with u = (x·y)^ω and v = the left side.
    x, y, u, v all lie in the orbit.
    """

    idempotent: int
    relation: str
    x: int
    y: int
    u: int
    v: int


@dataclass(frozen=True)
class UnaryTemporal:
    """The verdict of :func:`unary_temporal`.

    Attributes:
        gap, side: as asked.
        member: every C-orbit has the property.
        period: the least modulus m whose orbits all have it (1 for ST, DD); ``None`` when not a member.
        modulus: the m of ``orbits`` and ``witness``: the period (member) or the stable modulus
            (non-member; 1 for ST, DD).
        orbits: the orbits checked at ``modulus`` (one idempotent per D-class of the idempotents
            concerned; the trivial orbit {1} of a morphism where only ε maps to 1 is not listed).
        witness: the violation (non-members), else ``None``.
        kernel: the kernel K_modulus (words of length ≡ 0 mod m for its elements: :meth:`Kernel.word`).
        stable_modulus: the stable modulus s (1 for ST, DD).
    """

    gap: str
    side: str
    member: bool
    period: int | None
    modulus: int
    orbits: tuple[Orbit, ...]
    witness: OrbitViolation | None
    kernel: Kernel
    stable_modulus: int


class OrbitEngine:
    """Kernels, residue-graph components and orbits of one transition monoid, cached across decisions.

    Args:
        monoid: a :class:`~langclass.core.algebra.monoid.TransitionMonoid` (the syntactic monoid).
        deadline: checked between moduli and orbits.
        work_budget: see :data:`ORBIT_WORK_BUDGET`.
        mult_table: returns the monoid's multiplication table (a caller's shared copy) or ``None``
            (not worth building: products instead), for the witness steps of a monoid of at most
            :data:`SMALL_TABLE_SIZE` elements (one row or column each).
    """

    def __init__(self, monoid: Any, deadline: Deadline | None = None, work_budget: int = ORBIT_WORK_BUDGET,
                 mult_table: Callable[[], np.ndarray] | None = None) -> None:
        self.M = monoid
        self._mult_table = mult_table
        self._table: np.ndarray | None = None
        self.deadline = deadline
        self.work_budget = work_budget
        self._work = 0
        self._kernels: dict[int, Kernel] = {}
        self._rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._reps: dict[bool, tuple[int, ...]] = {}
        self._paths: dict[tuple[int, str], csr_matrix] = {}
        self._checks: dict[tuple[bool, str, int], tuple] = {}

    # ------------------------------------------------------------------ pieces
    def _check(self, step: str) -> None:
        if self.deadline is not None:
            self.deadline.check(step)

    def _charge(self, modulus: int) -> None:
        cost = modulus * self.M.size * int(self.M.right.shape[1])
        if self._work + cost > self.work_budget:
            raise LimitExceeded("orbit_work", self.work_budget,
                                f"the residue graphs of the orbit computation need {self._work + cost} edges "
                                f"(modulus {modulus}, {self.M.size} elements), over orbit_work={self.work_budget}")
        self._work += cost

    def kernel(self, modulus: int, *, left: bool = False) -> Kernel:
        """K_m with its breadth-first tree and the right (and, with ``left``, left) residue components.

        Raises:
            LimitExceeded: ``orbit_work`` (before the work).
            TimeLimitExceeded: the deadline passed.
        """
        ker = self._kernels.get(modulus)
        if ker is not None and (not left or ker.left_scc is not None):
            return ker
        M = self.M
        size = M.size
        if ker is None and modulus == 1:  # K_1 = M: the monoid's own BFS tree and R-classes
            ker = Kernel(1, np.ones(size, dtype=bool), M.parent.astype(np.int64), M.right.astype(np.int64),
                         M.green["R"], M.green["L"], M.last_letter)
        if ker is None and self._reachable_only(modulus):
            ker = self._reachable_kernel(modulus)
        if ker is None:
            self._charge(modulus)
            self._check("orbits: kernel")
            tab = residue_table(M.right, modulus)
            pred, rscc = bfs_and_components(tab)
            mask = (pred.reshape(size, modulus)[:, 0] >= 0)
            mask[0] = True
            ker = Kernel(modulus, mask, pred, tab, rscc.reshape(size, modulus)[:, 0].copy(), None)
        if left and ker.nodes is not None:
            self._charge_edges(ker.nodes.size * int(M.right.shape[1]), modulus)
            self._check("orbits: left components")
            ker = reachable_left_components(M, ker)
        elif left:
            self._charge(modulus)
            self._check("orbits: left components")
            _, lscc = bfs_and_components(residue_table(M.left, modulus), bfs=False)
            ker = Kernel(ker.modulus, ker.mask, ker.pred, ker.table, ker.right_scc, lscc.reshape(size, modulus)[:, 0].copy(),
                         ker.letter)
        self._kernels[modulus] = ker
        return ker

    def _reachable_only(self, modulus: int) -> bool:
        """Build K_m on its reachable nodes only: m > 1 divides p and Λ + 1 ≤ m·|M| / :data:`REACHABLE_FACTOR`."""
        M = self.M
        return (modulus > 1 and M.level_period % modulus == 0
                and (M.level_total + 1) * REACHABLE_FACTOR <= modulus * M.size)

    def _charge_edges(self, cost: int, modulus: int) -> None:
        if self._work + cost > self.work_budget:
            raise LimitExceeded("orbit_work", self.work_budget,
                                f"the residue graphs of the orbit computation need {self._work + cost} edges "
                                f"(modulus {modulus}, {self.M.size} elements), over orbit_work={self.work_budget}")
        self._work += cost

    def _reachable_kernel(self, modulus: int) -> Kernel:
        """K_m for m | p on its reachable nodes (:func:`~langclass.core.algebra.residue.reachable_kernel`)."""
        M = self.M
        self._charge_edges((M.level_total + 1) * int(M.right.shape[1]), modulus)
        self._check("orbits: kernel")
        return reachable_kernel(M, modulus)

    def _fixes(self, e: int) -> tuple[np.ndarray, np.ndarray]:
        """``(e·y for every y, y·e for every y)`` as ``int64 [|M|]`` arrays (Cayley graphs, no lookup)."""
        got = self._rows.get(e)
        if got is None:
            M = self.M
            got = (M.left_multiples([e], self.deadline)[0], M.right_multiples([e], self.deadline)[:, 0])
            self._rows[e] = got
        return got

    def idempotent_reps(self, plus: bool) -> tuple[int, ...]:
        """The idempotents whose orbits are checked: without ⁺, or when 1 has a nonempty antecedent,
        the identity alone (its orbit K_m contains every other); else one idempotent ≠ 1 per D-class."""
        got = self._reps.get(plus)
        if got is None:
            M = self.M
            if not plus or M.identity_in_semigroup:
                got = (0,)
            else:
                J = M.green["J"]
                idem = np.flatnonzero(M.idempotent)
                idem = idem[idem != 0]
                _, first = np.unique(J[idem], return_index=True)
                got = tuple(int(e) for e in idem[np.sort(first)])
            self._reps[plus] = got
        return got

    def orbit(self, e: int, ker: Kernel) -> np.ndarray:
        """Sorted ids of e·K_m·e."""
        if e == 0:
            return np.flatnonzero(ker.mask)
        ey, ye = self._fixes(e)
        return np.unique(ye[ey[np.flatnonzero(ker.mask)]])

    # ------------------------------------------------------------------ one modulus
    def check(self, gap: str, side: str, modulus: int, *, witness: bool = True
              ) -> tuple[tuple[Orbit, ...], OrbitViolation | bool | None, Kernel]:
        """The orbits at one modulus and the first violation found (``None`` when all have the property;
        without ``witness``, ``True`` instead of the violation — the verdict alone, no products).

        The answer depends on the gap only through ε being apart (DD, MOD⁺) or not, so it is kept
        per (ε apart, side, modulus): MOD at m = 1 is ST's check, MOD⁺ at m = 1 is DD's."""
        plus = gap in ("DD", "MOD+")
        memo = self._checks.get((plus, side, modulus))
        if memo is not None and (memo[1] is None or not witness or isinstance(memo[1], OrbitViolation)):
            return memo if witness or memo[1] is None else (memo[0], True, memo[2])
        got = self._check_uncached(plus, side, modulus, witness)
        self._checks[(plus, side, modulus)] = got
        return got

    def _check_uncached(self, plus: bool, side: str, modulus: int, witness: bool
                        ) -> tuple[tuple[Orbit, ...], OrbitViolation | bool | None, Kernel]:
        ker = self.kernel(modulus, left=side == "future")
        M = self.M
        idem = M.idempotent
        orbits: list[Orbit] = []
        for e in self.idempotent_reps(plus):
            self._check("orbits")
            O = self.orbit(e, ker)
            orbits.append(Orbit(e, tuple(O.tolist())))
            viol = self._violation(e, O, ker, side, idem, witness)
            if viol is not None:
                return tuple(orbits), viol, ker
        return tuple(orbits), None, ker

    def _violation(self, e: int, O: np.ndarray, ker: Kernel, side: str, idem: np.ndarray,
                   witness: bool = True) -> OrbitViolation | bool | None:
        lab = ker.left_scc if side == "future" else ker.right_scc
        labs = lab[O]
        order = np.argsort(labs, kind="stable")
        sl = labs[order]
        if side in ("past", "future"):
            dup = np.flatnonzero(sl[1:] == sl[:-1])
            if dup.size == 0:
                return None
            if not witness:
                return True
            x, y = int(O[order[dup[0]]]), int(O[order[dup[0] + 1]])
            rel = "R" if side == "past" else "L"
            return OrbitViolation(e, rel, x, y, self._step(x, y, O, rel, e, ker), self._step(y, x, O, rel, e, ker))
        # DA: an R-class of O holding an idempotent and a non-idempotent
        io = idem[O]
        for c in np.unique(labs).tolist():
            sel = labs == c
            if io[sel].any() and not io[sel].all():
                if not witness:
                    return True
                z = int(O[sel & ~io][0])
                f = int(O[sel & io][0])
                t = self._step(z, f, O, "R", e, ker)  # z·t = f, t ∈ O
                M = self.M
                assert M.multiply(z, t) == f
                lhs = M.product(f, z, f)
                assert lhs != f
                return OrbitViolation(e, "DA", z, t, f, lhs)
        return None

    def _lift(self, gap: str, s: int, orbits: tuple[Orbit, ...], viol: OrbitViolation
              ) -> tuple[tuple[Orbit, ...], OrbitViolation, Kernel] | None:
        """The violation at p carried to the stable modulus s without the residue graph of s (the
        lifting of the module docstring): for R, x and y stay and u' = u·(v·u)^ω, v' = v·(u·v)^ω
        (for L, u' = (u·v)^ω·u, v' = (v·u)^ω·v); for DA, t' = t·f. Each lies in η(Σ^s) and is
        fixed by e on both sides, so in the orbit e·K_s·e, K_s = {1} ∪ η(Σ^s), whose orbits are
        listed up to e (the earlier ones have the property at p, so at s). ``None`` when a check of
        that fails (the caller then builds the residue graph of s)."""
        M = self.M
        mask = M.stable.copy()
        mask[0] = True
        ker = StableKernel(s, mask, np.zeros(0, dtype=np.int64), np.zeros((0, int(M.right.shape[1])), dtype=np.int64),
                           np.zeros(0, dtype=np.int64), None, monoid=M)
        e, x, y, u, v = viol.idempotent, viol.x, viol.y, viol.u, viol.v
        omega = M.idempotent_of_group
        if viol.relation == "R":
            lifted = OrbitViolation(e, "R", x, y, M.multiply(u, omega(M.multiply(v, u))), M.multiply(v, omega(M.multiply(u, v))))
            fixed = (x, y, lifted.u, lifted.v)
        elif viol.relation == "L":
            lifted = OrbitViolation(e, "L", x, y, M.multiply(omega(M.multiply(u, v)), u), M.multiply(omega(M.multiply(v, u)), v))
            fixed = (x, y, lifted.u, lifted.v)
        else:
            lifted = OrbitViolation(e, "DA", x, M.multiply(y, u), u, v)
            fixed = (x, lifted.y, u, v)
        out = []
        for o in orbits:
            O = self.orbit(o.idempotent, ker)
            out.append(Orbit(o.idempotent, tuple(O.tolist())))
        if out[-1].idempotent != e or not np.isin(np.asarray(fixed, dtype=np.int64), O).all():
            return None
        ok = (M.multiply(x, lifted.u) == y and M.multiply(y, lifted.v) == x if lifted.relation == "R" else
              M.multiply(lifted.u, x) == y and M.multiply(lifted.v, y) == x if lifted.relation == "L" else
              M.multiply(x, lifted.y) == u and M.product(u, x, u) == v != u)
        return (tuple(out), lifted, ker) if ok else None

    def _step(self, x: int, y: int, O: np.ndarray, rel: str, e: int = 0, ker: Kernel | None = None) -> int:
        """A t of the orbit O = e·K_m·e with x·t = y (``rel`` "R") or t·x = y ("L"); x, y ∈ O in one
        R- (L-) class of O, so one exists (R of O is R of K_m restricted, see the module docstring).

        The least such t, from the products of x with all of O, when those cost at most
        :data:`PATH_FACTOR` times the residue graph (|O|·ℓ steps, ℓ the longest shortlex word);
        else from a shortest path (x, 0) → (y, 0) in the residue graph of ``ker``: its word w has
        |w| ≡ 0 (mod m) and x·η(w) = y, so t = e·η(w)·e ∈ O and x·t = x·η(w)·e = y·e = y (dually L,
        with w read backwards)."""
        M = self.M
        T = self._small_table()
        if T is not None:  # the same least t, read off the multiplication table
            hit = np.flatnonzero((T[x, O] if rel == "R" else T[O, x]) == y)
            assert hit.size, "x and y are equivalent inside the orbit"
            return int(O[hit[0]])
        if ker is not None:
            nodes = ker.nodes.size if ker.nodes is not None else M.size * ker.modulus
            if O.size * int(M.lengths[O].max()) > PATH_FACTOR * nodes * int(M.right.shape[1]):
                return self._step_by_path(x, y, rel, e, ker)
        xs = np.full(O.size, x, dtype=np.int64)
        prods = M.multiply_many(xs, O) if rel == "R" else M.multiply_many(O, xs)
        hit = np.flatnonzero(prods == y)
        assert hit.size, "x and y are equivalent inside the orbit"
        return int(O[hit[0]])

    def _small_table(self) -> np.ndarray | None:
        """The multiplication table for a monoid of at most :data:`SMALL_TABLE_SIZE` elements, else
        ``None``: the caller's (``mult_table``, which may answer ``None`` when its policy says the
        table does not pay — then the products are taken), or one computed once."""
        if self.M.size > SMALL_TABLE_SIZE:
            return None
        if self._mult_table is not None:
            return self._mult_table()
        if self._table is None:
            self._table = self.M.multiplication_table(self.deadline)
        return self._table

    def _step_by_path(self, x: int, y: int, rel: str, e: int, ker: Kernel) -> int:
        """:meth:`_step` through a shortest path in the right ("R") or left ("L") residue graph."""
        M = self.M
        m = ker.modulus
        cayley = M.right if rel == "R" else M.left
        if ker.nodes is not None:
            xs, rs = ker.nodes // m, ker.nodes % m
            tab = positions(ker.nodes, cayley[xs].astype(np.int64) * m + ((rs + 1) % m)[:, None])
            src, dst = (int(np.searchsorted(ker.nodes, z * m)) for z in (x, y))
        else:
            tab = cayley.astype(np.int64) if m == 1 else residue_table(cayley, m)
            src, dst = x * m, y * m
        key = (m, rel)
        graph = self._paths.get(key)
        if graph is None:
            graph = self._paths[key] = csr(tab)
        letters = path_letters(tab, src, dst, graph)
        if rel == "L":
            letters.reverse()
        t = 0
        for a in letters:
            t = int(M.right[t, a])
        if e != 0:
            t = M.product(e, t, e)
        assert (M.multiply(x, t) if rel == "R" else M.multiply(t, x)) == y, "a path of the residue graph"
        return t

    # ------------------------------------------------------------------ decision
    def decide(self, gap: str, side: str) -> UnaryTemporal:
        """See :func:`unary_temporal`."""
        if gap not in GAPS:
            raise InputError(f"unknown gap class {gap!r}; expected one of {', '.join(GAPS)}", field="gap")
        if side not in SIDES:
            raise InputError(f"unknown side {side!r}; expected one of {', '.join(SIDES)}", field="side")
        mod = gap in ("MOD", "MOD+")
        s = self.M.stability_index if mod else 1
        p = self.M.level_period if mod else 1
        # P(m) ⇔ P(gcd(m, p)) (module docstring): decide at p, then the least divisor of p that works
        orbits, viol, ker = self.check(gap, side, p)  # each residue graph is charged before it is built
        if viol is not None:
            if p != s:  # the witness is given at the stable modulus (its words lie in every kernel)
                lifted = self._lift(gap, s, orbits, viol)
                if lifted is not None:
                    orbits, viol, ker = lifted
                else:
                    orbits, viol, ker = self.check(gap, side, s)
                assert viol is not None, "P(s) ⇔ P(p)"
            return UnaryTemporal(gap, side, False, None, s, orbits, viol, ker, s)
        for m in divisors(p)[:-1]:
            self._check("orbits: least period")
            o2, v2, k2 = self.check(gap, side, m, witness=False)
            if v2 is None:
                return UnaryTemporal(gap, side, True, m, m, o2, None, k2, s)
        return UnaryTemporal(gap, side, True, p, p, orbits, None, ker, s)


def unary_temporal(monoid: Any, gap: str, side: str, *, deadline: Deadline | None = None,
                   engine: OrbitEngine | None = None) -> UnaryTemporal:
    """Decide PL(C), FL(C) or TL(C) for the gap class C on the C-orbits of a syntactic monoid.

    Args:
        monoid: the :class:`~langclass.core.algebra.monoid.TransitionMonoid` of a minimal DFA.
        gap: ``"ST"``, ``"DD"``, ``"MOD"`` or ``"MOD+"`` (:data:`GAPS`).
        side: ``"past"`` (PL: R-trivial orbits), ``"future"`` (FL: L-trivial), ``"both"`` (TL: DA).
        deadline: checked between moduli and orbits.
        engine: an :class:`OrbitEngine` of the same monoid to share kernels with other decisions.

    Returns:
        :class:`UnaryTemporal` (``member``, ``period``, ``modulus``, ``orbits``, ``witness``).

    Raises:
        InputError: an unknown gap or side.
        LimitExceeded: ``orbit_work`` (the residue graphs exceed :data:`ORBIT_WORK_BUDGET`), before the work.
        TimeLimitExceeded: the deadline passed.

    Source: T. Place & M. Zeitoun, "A generic characterization of generalized unary temporal logic
    and two-variable first-order logic" (CSL 2024): L ∈ TL(C) ⇔ every C-orbit is in DA, L ∈ PL(C) ⇔
    every C-orbit is R-trivial, L ∈ FL(C) ⇔ every C-orbit is L-trivial (C a prevariety; MOD_m and
    MOD_m⁺ are, for each m); the orbits for the gap classes are derived in the module docstring.
    """
    eng = engine if engine is not None else OrbitEngine(monoid, deadline)
    if eng.M is not monoid:
        raise ValueError("the engine belongs to another monoid")
    return eng.decide(gap, side)
