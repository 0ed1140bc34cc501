"""The C-orbit engine for unary temporal logic (langclass.core.algebra.orbits), checked three ways.

1. Against the specialized deciders on every class both decide: PL(ST) = LTL[P] (partially ordered
   DFA), PL(DD) = LTL[P,Y] (locally R-trivial), PL(MOD) = LTL[P,MOD] (SCCs simple cycles, with the
   same least period k), TL(ST) = FO²[<] (DA), TL(MOD) = FO²[<,MOD] (QDA).
2. Against a brute force of the *definition* on tiny DFAs: the C-pairs (s, t) — some antecedents of
   s and t of equal length mod m (and both empty or both nonempty for DD, MOD⁺) — give the orbits
   {e·t·e : (e, t) a C-pair} for every idempotent e; Green's relations and DA are then checked by
   products inside each orbit, and the least m is searched without the stable-modulus argument.
3. The mirror: FL(C) of L is PL(C) of the reversed language, TL(C) is closed under reversal.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from langclass.core.algebra.classes import DECIDERS, Context
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.algebra.orbits import CLASS_OF, GAPS, SIDES, OrbitEngine, unary_temporal
from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import InputError, LimitExceeded
from langclass.core.ingest.parse import parse_regex


@st.composite
def dfas(draw, n_max: int = 5, k_max: int = 3):
    n = draw(st.integers(1, n_max))
    k = draw(st.integers(1, k_max))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA.from_table("abc"[:k], table, 0, [q for q in range(n) if acc[q]]).canonical()


SHARED = ("ltl_p", "ltl_p_y", "ltl_p_mod", "fo2", "fo2_mod")


def _agree_with_specialized(dfa: DFA) -> None:
    A = dfa.canonical()
    M = transition_monoid(A)
    ctx = Context(A, M)
    eng = OrbitEngine(M)
    for key in SHARED:
        gap, side = CLASS_OF[key]
        v = unary_temporal(M, gap, side, engine=eng)
        r = DECIDERS[key](ctx)
        assert v.member == r.member, (key, A.to_canonical_dict())
        if key == "ltl_p_mod":
            assert v.period == r.period, (A.to_canonical_dict(), v.period, r.period)
        if gap in ("ST", "DD"):
            assert v.period == (1 if v.member else None)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas(n_max=5, k_max=3))
def test_engine_equals_the_specialized_deciders(dfa):
    _agree_with_specialized(dfa)


@pytest.mark.slow
@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas(n_max=6, k_max=3))
def test_engine_equals_the_specialized_deciders_many(dfa):
    _agree_with_specialized(dfa)


# ----------------------------------------------------------------------------- brute force of the definition


class PairBrute:
    """The monoid as tuples; C-orbits from C-pairs; properties by products inside each orbit."""

    def __init__(self, dfa: DFA) -> None:
        A = dfa.canonical()
        n = A.num_states
        self.letters = [tuple(int(A.transitions[q, a]) for q in range(n)) for a in range(A.num_letters)]
        self.one = tuple(range(n))
        seen, frontier = {self.one}, [self.one]
        while frontier:
            nxt = []
            for x in frontier:
                for g in self.letters:
                    y = self.mul(x, g)
                    if y not in seen:
                        seen.add(y)
                        nxt.append(y)
            frontier = nxt
        self.M = sorted(seen)
        self.E = [e for e in self.M if self.mul(e, e) == e]

    @staticmethod
    def mul(x, y):
        return tuple(y[q] for q in x)

    def stability_index(self) -> int:
        levels = [frozenset(self.letters)]
        while True:
            j = len(levels)
            for s in range(1, j // 2 + 1):
                if levels[s - 1] == levels[2 * s - 1]:
                    return s
            levels.append(frozenset(self.mul(x, g) for x in levels[-1] for g in self.letters))

    def residues(self, m: int) -> dict:
        """x → the residues mod m of the lengths of its *nonempty* antecedents."""
        res = {x: set() for x in self.M}
        seen = {(g, 1 % m) for g in self.letters}
        frontier = list(seen)
        while frontier:
            nxt = []
            for x, r in frontier:
                res[x].add(r)
                for g in self.letters:
                    y = (self.mul(x, g), (r + 1) % m)
                    if y not in seen:
                        seen.add(y)
                        nxt.append(y)
            frontier = nxt
        return res

    def orbits(self, gap: str, m: int) -> list[tuple[tuple, set]]:
        plus = gap in ("DD", "MOD+")
        res = self.residues(m)
        out = []
        for e in self.E:
            ts = []
            for t in self.M:
                both_nonempty = bool(res[e] & res[t])
                both_empty = e == self.one and t == self.one
                if plus:
                    pair = both_nonempty or both_empty
                else:  # the empty word has length 0 and lies in the residue class 0
                    re_ = res[e] | ({0} if e == self.one else set())
                    rt = res[t] | ({0} if t == self.one else set())
                    pair = bool(re_ & rt)
                if pair:
                    ts.append(t)
            out.append((e, {self.mul(self.mul(e, t), e) for t in ts}))
        return out

    def holds(self, O: set, side: str) -> bool:
        if side == "past":
            ideals = {x: frozenset(self.mul(x, y) for y in O) for x in O}
        elif side == "future":
            ideals = {x: frozenset(self.mul(y, x) for y in O) for x in O}
        else:
            for x in O:
                regular = any(self.mul(self.mul(x, y), x) == x for y in O)
                if regular and self.mul(x, x) != x:
                    return False
            return True
        return len(set(ideals.values())) == len(O)

    def decide(self, gap: str, side: str, m_max: int) -> int | None:
        """The least m ≤ m_max whose orbits all have the property (ST, DD: m = 1 only)."""
        for m in range(1, (m_max if gap in ("MOD", "MOD+") else 1) + 1):
            if all(self.holds(O, side) for _, O in self.orbits(gap, m)):
                return m
        return None


def _agree_with_brute(dfa: DFA) -> None:
    b = PairBrute(dfa)
    M = transition_monoid(dfa)
    eng = OrbitEngine(M)
    s = b.stability_index()
    assert s == M.stability_index
    m_max = max(12, 2 * s)  # beyond the stable modulus: the brute force does not rely on it
    for gap in GAPS:
        for side in SIDES:
            v = unary_temporal(M, gap, side, engine=eng)
            expected = b.decide(gap, side, m_max)
            assert v.period == expected, (gap, side, dfa.to_canonical_dict(), v.period, expected)
            assert v.member == (expected is not None)
            # the listed orbits are orbits of the definition at the verdict's modulus
            brute_orbits = {e: O for e, O in b.orbits(gap, v.modulus)}
            for orb in v.orbits:
                e = tuple(int(q) for q in M.elements[orb.idempotent])
                assert {tuple(int(q) for q in M.elements[x]) for x in orb.elements} == brute_orbits[e]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas(n_max=4, k_max=2))
def test_engine_equals_the_definition_by_brute_force(dfa):
    assume(len(PairBrute(dfa).M) <= 40)
    _agree_with_brute(dfa)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas(n_max=5, k_max=3))
def test_engine_equals_the_definition_by_brute_force_many(dfa):
    assume(len(PairBrute(dfa).M) <= 80)
    _agree_with_brute(dfa)


# ----------------------------------------------------------------------------- the mirror


def reverse_dfa(dfa: DFA) -> DFA:
    """The minimal DFA of the reversed language (subset construction on the reversed transitions)."""
    A = dfa.canonical()
    n, k = A.num_states, A.num_letters
    t = A.transitions.tolist()
    start = frozenset(q for q in range(n) if A.accepting[q])
    index, order = {start: 0}, [start]
    table: list[list[int]] = []
    i = 0
    while i < len(order):
        S = order[i]
        row = []
        for a in range(k):
            T = frozenset(q for q in range(n) if t[q][a] in S)
            if T not in index:
                index[T] = len(order)
                order.append(T)
            row.append(index[T])
        table.append(row)
        i += 1
    acc = [j for j, S in enumerate(order) if A.initial in S]
    return DFA.from_table(list(A.alphabet), table, 0, acc).canonical()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dfas(n_max=5, k_max=3))
def test_future_is_the_past_of_the_reversed_language(dfa):
    M, R = transition_monoid(dfa), transition_monoid(reverse_dfa(dfa))
    ef, er = OrbitEngine(M), OrbitEngine(R)
    for gap in GAPS:
        fut = unary_temporal(M, gap, "future", engine=ef)
        past_rev = unary_temporal(R, gap, "past", engine=er)
        assert (fut.member, fut.period) == (past_rev.member, past_rev.period), gap
        both, both_rev = unary_temporal(M, gap, "both", engine=ef), unary_temporal(R, gap, "both", engine=er)
        assert (both.member, both.period) == (both_rev.member, both_rev.period), gap


# ----------------------------------------------------------------------------- examples, witnesses, limits


def _verdicts(regex: str, alphabet: str):
    M = transition_monoid(parse_regex(regex, list(alphabet)).canonical())
    eng = OrbitEngine(M)
    return M, {key: unary_temporal(M, *gs, engine=eng) for key, gs in CLASS_OF.items()}


def test_even_length_ending_in_a_needs_both_y_and_mod():
    _, v = _verdicts("((a|b)(a|b))*(a|b)a", "ab")
    assert v["ltl_p_y_mod"].member and v["ltl_p_y_mod"].period == 2
    assert not v["ltl_p_y"].member and not v["ltl_p_mod"].member
    assert v["fo2_succ_mod"].member and not v["fo2_succ"].member


def test_the_issue_non_member_and_its_witness():
    M, v = _verdicts("(a|b|c)*ac*", "abc")
    w = v["ltl_p_y_mod"]
    assert not w.member and w.witness is not None and w.witness.relation == "R"
    x, y, u, vv, e = w.witness.x, w.witness.y, w.witness.u, w.witness.v, w.witness.idempotent
    assert x != y and M.multiply(x, u) == y and M.multiply(y, vv) == x
    orbit = set(next(o for o in w.orbits if o.idempotent == e).elements)
    assert {x, y, u, vv} <= orbit
    for z in (x, y, u, vv):
        word = w.kernel.word(z)
        assert len(word) % w.modulus == 0 and M.element_of_word([M.dfa.alphabet[a] for a in word]) == z
    assert v["fo2"].member  # the last a is followed by c's only: DA (FO²[<] says it)


def test_known_classes_of_small_examples():
    _, v = _verdicts("(ab|ba)*", "ab")
    assert v["ltl_p_y_mod"].member and v["ltl_p_y_mod"].period == 2 and not v["ltl_p_y"].member
    _, v = _verdicts("(a|b)*a", "ab")  # Σ*a: Y at the end, no modulus; not R-trivial
    assert v["ltl_p_y"].member and v["ltl_p_y_mod"].period == 1 and not v["ltl_p"].member and not v["ltl_p_mod"].member
    _, v = _verdicts("a(a|b)*", "ab")  # aΣ*: the first letter needs X (or Y) but no modulus
    assert v["ltl_p"].member and v["ltl_f_x"].member and v["ltl_f_x"].period == 1
    assert not v["ltl_f"].member and not v["ltl_f_mod"].member and v["fo2"].member
    _, v = _verdicts("(aa)*", "a")
    assert all(v[k].member and v[k].period == 2 for k in ("ltl_p_mod", "ltl_p_y_mod", "ltl_f_mod", "fo2_succ_mod"))


def test_da_violation_is_a_da_violation():
    M, v = _verdicts("(ab)*", "ab")  # a·b·a = a but a² ≠ a: not DA; the local monoids and K_2 are
    assert not v["fo2"].member and v["fo2_succ"].member and v["fo2_mod"].member and v["fo2_succ_mod"].member
    assert v["fo2_mod"].period == 2 and v["fo2_succ"].period == 1
    w = v["fo2"].witness
    assert w.relation == "DA"
    if True:
        xy = M.multiply(w.x, w.y)
        assert M.omega[xy] == w.u and M.product(w.u, w.x, w.u) == w.v != w.u


def test_unknown_gap_or_side_and_the_work_limit():
    M = transition_monoid(parse_regex("(aaa)*", ["a"]).canonical())
    with pytest.raises(InputError, match="gap"):
        unary_temporal(M, "GR", "past")
    with pytest.raises(InputError, match="side"):
        unary_temporal(M, "MOD", "sideways")
    with pytest.raises(LimitExceeded) as err:
        unary_temporal(M, "MOD+", "past", engine=OrbitEngine(M, work_budget=2))
    assert err.value.extra.get("limit", "orbit_work") == "orbit_work" and "orbit_work" in str(err.value)
    with pytest.raises(ValueError, match="another monoid"):
        unary_temporal(M, "ST", "past", engine=OrbitEngine(transition_monoid(parse_regex("a", ["a"]).canonical())))


def test_periods_are_monotone_along_the_inclusions():
    for regex, alphabet in [("((a|b)(a|b))*(a|b)a", "ab"), ("(aa)*", "a"), ("(a(aaa)*b)*", "ab"), ("(ab|ba)*", "ab")]:
        _, v = _verdicts(regex, alphabet)
        for sub, sup in [("ltl_p_mod", "ltl_p_y_mod"), ("ltl_f_mod", "ltl_f_x_mod"), ("fo2_mod", "fo2_succ_mod"),
                         ("ltl_p_y_mod", "fo2_succ_mod"), ("ltl_f_x_mod", "fo2_succ_mod")]:
            if v[sub].member:
                assert v[sup].member and v[sup].period <= v[sub].period
