"""Cross-checks of the fast local tests against their straightforward definitions.

The local tests (LTL[P,Y], locally testable, locally threshold testable and the local facts of
``monoid_extras``) read e·M and M·f off a multiplication table built from the Cayley graphs, and
check one maximal idempotent per D-class. Here, on random small DFAs (uniform, "mostly forward"
ones, which are often aperiodic, and k-definite ones, which have many idempotents), every such
answer is compared with

* the same decider without the table (rows and columns from the Cayley graphs, the other code path),
* the textbook definition over *all* idempotents of S = η(Σ⁺), computed by composing transformations
  (no table, no maximality, no D-class reduction).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import langclass.core.algebra.classes as classes
import langclass.core.algebra.classes.context as classes_context
import langclass.core.algebra.classes.delay as classes_delay
from langclass.core.automata.automaton import DFA
from langclass.core.algebra.classes import Context, monoid_extras, replay
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.ingest.parse import parse_regex

# ----------------------------------------------------------------------------- random DFAs


def _uniform(rng: random.Random) -> DFA:
    n, k = rng.randint(1, 5), rng.randint(1, 3)
    t = [[rng.randrange(n) for _ in range(k)] for _ in range(n)]
    return DFA.from_table("abc"[:k], t, 0, [q for q in range(n) if rng.random() < 0.5])


def _forward(rng: random.Random) -> DFA:
    """Transitions mostly go to states ≥ the current one (aperiodic languages are frequent)."""
    n, k = rng.randint(2, 7), rng.randint(2, 3)
    t = [[rng.randrange(q, n) if rng.random() < 0.85 else rng.randrange(n) for _ in range(k)] for q in range(n)]
    return DFA.from_table("abc"[:k], t, 0, [q for q in range(n) if rng.random() < 0.5])


def _definite(rng: random.Random) -> DFA:
    """(Σ* w Σ^j)-style languages and unions: k-definite, many idempotents in few D-classes."""
    sigma = "ab" if rng.random() < 0.7 else "abc"
    alt = "(" + "|".join(sigma) + ")"
    j = rng.randint(0, 3)
    w = "".join(rng.choice(sigma) for _ in range(rng.randint(1, 2)))
    rx = f"{alt}*{w}{alt}{{{j}}}"
    if rng.random() < 0.4:
        rx = f"({rx})|{rng.choice(sigma)}{alt}*"  # mixes in a reverse-definite part
    return parse_regex(rx, list(sigma))


def _samples(seed: int, count: int) -> list[DFA]:
    rng = random.Random(seed)
    makers = [_uniform, _forward, _definite]
    return [makers[i % 3](rng) for i in range(count)]


# ----------------------------------------------------------------------------- definitions


class Plain:
    """S = η(Σ⁺) with products by composing transformations (x·y: apply x, then y)."""

    def __init__(self, dfa: DFA) -> None:
        self.M = transition_monoid(dfa)
        M = self.M
        self.X = M.elements.astype(np.int64)
        self.S = np.flatnonzero(M.in_semigroup)
        self.E = [int(e) for e in self.S if M.idempotent[e]]

    def mul(self, x: int, y: int) -> int:
        return int(self.M.ids_of(self.X[y][self.X[x]][None, :])[0])

    def local(self, e: int, f: int) -> list[int]:
        """eSf = {x ∈ S : e·x = x = x·f}."""
        return [int(x) for x in self.S if self.mul(e, x) == x and self.mul(x, f) == x]

    @staticmethod
    def _trivial(elems: list[int], act) -> bool:
        """No two distinct elements generate the same ideal act(x, elems) (R: x·U, L: U·x) in U = elems."""
        ideals = {}
        for x in elems:
            key = frozenset(act(x, y) for y in elems)
            if key in ideals:
                return False
            ideals[key] = x
        return True

    def eSe_r_trivial(self, e: int, elems: list[int] | None = None) -> bool:
        elems = self.local(e, e) if elems is None else elems
        return self._trivial(elems, lambda x, y: self.mul(x, y))

    def eSe_l_trivial(self, e: int) -> bool:
        elems = self.local(e, e)
        return self._trivial(elems, lambda x, y: self.mul(y, x))

    def locally_r_trivial(self) -> bool:
        return all(self.eSe_r_trivial(e) for e in self.E)

    def locally_l_trivial(self) -> bool:
        return all(self.eSe_l_trivial(e) for e in self.E)

    def locally_testable(self) -> bool:
        for e in self.E:
            U = self.local(e, e)
            if any(self.mul(x, x) != x for x in U):
                return False
            if any(self.mul(x, y) != self.mul(y, x) for x in U for y in U):
                return False
        return True

    def aperiodic(self) -> bool:
        M = self.M
        return all(M.multiply(M.omega[x], x) == M.omega[x] for x in range(M.size))

    def locally_threshold_testable(self) -> bool:
        """S aperiodic and e x f y e z f = e z f y e x f for all idempotents e, f and x, y, z ∈ S
        (e x f ranges exactly over eSf and f y e over fSe)."""
        if not self.aperiodic():
            return False
        for e in self.E:
            for f in self.E:
                U = sorted({self.mul(self.mul(e, x), f) for x in self.S.tolist()})
                V = sorted({self.mul(self.mul(f, y), e) for y in self.S.tolist()})
                for a in U:
                    for b in V:
                        ab = self.mul(a, b)
                        for c in U:
                            if self.mul(ab, c) != self.mul(self.mul(c, b), a):
                                return False
        return True

    def stable_locally_r_trivial(self) -> bool:
        """The ``monoid_extras`` fact: for every idempotent e ∈ T, the M-regular elements of eMe ∩ T
        are pairwise R-inequivalent (R of M)."""
        M = self.M
        R = M.green["R"]
        keep = M.stable & M.regular
        for e in self.E:
            if not M.stable[e]:
                continue
            ids = [x for x in self.local(e, e) if keep[x]]
            if len({int(R[x]) for x in ids}) < len(ids):
                return False
        return True


# ----------------------------------------------------------------------------- tests


@pytest.mark.parametrize("seed", range(3))
def test_multiplication_table_and_cayley_rows_match_composition(seed):
    rng = random.Random(1000 + seed)
    dfas = _samples(seed, 12) + [parse_regex("(a|b)*b(a|b){4}", ["a", "b"])]
    for dfa in dfas:
        M = transition_monoid(dfa)
        m = M.size
        X = M.elements.astype(np.intp)
        ref = np.stack([M.ids_of(X[y][X]) for y in range(m)], axis=1)  # ref[x, y] = x·y
        assert (ref >= 0).all()
        assert np.array_equal(M.multiplication_table(), ref)
        pick = [rng.randrange(m) for _ in range(4)]
        assert np.array_equal(M.left_multiples(pick), ref[pick])
        assert np.array_equal(M.right_multiples(pick), ref[:, pick])
        first, rest = M.suffix_decomposition
        for x in range(1, m):
            w = M.word_indices(x)
            assert first[x] == w[0] and rest[x] == M.element_of_word(M.word(x)[1:])


def _decide_all(dfa: DFA, no_table: bool, monkeypatch) -> tuple[dict, dict]:
    with monkeypatch.context() as mp:
        if no_table:
            mp.setattr(classes_context, "MULT_TABLE_MAX_ENTRIES", 0)
        ctx = Context(dfa, transition_monoid(dfa))
        out = {}
        for key in ("ltl_p_y", "locally_testable", "locally_threshold_testable"):
            r = classes.DECIDERS[key](ctx)
            replay(dfa, r, ctx.monoid)
            out[key] = r.member
        assert (ctx.mult_table is None) == no_table
        sf = classes.decide_star_free(ctx)
        extra = dict(monoid_extras(ctx), aperiodicity_index=sf.certificate.aperiodicity_index if sf.member else None)
        return out, extra


@pytest.mark.parametrize("seed", range(4))
def test_local_classes_fast_path_equals_definition(seed, monkeypatch):
    counts = {True: 0, False: 0}
    for dfa in _samples(seed, 30):
        plain = Plain(dfa)
        fast, extra_fast = _decide_all(dfa, False, monkeypatch)
        slow, extra_slow = _decide_all(dfa, True, monkeypatch)
        assert fast == slow and extra_fast == extra_slow
        want = {"ltl_p_y": plain.locally_r_trivial(), "locally_testable": plain.locally_testable(),
                "locally_threshold_testable": plain.locally_threshold_testable()}
        assert fast == want, (dfa.transitions.tolist(), fast, want)
        assert extra_fast["locally_l_trivial"] == plain.locally_l_trivial()
        assert extra_fast["stable_semigroup_locally_r_trivial"] == plain.stable_locally_r_trivial()
        if plain.aperiodic():  # the least N with x^N = x^{N+1} for every x, by repeated composition
            N, M = 1, plain.M
            while any(M.power(x, N) != M.power(x, N + 1) for x in range(M.size)):
                N += 1
            assert extra_fast["aperiodicity_index"] == N
        for v in want.values():
            counts[v] += 1
    assert counts[True] >= 5 and counts[False] >= 5, counts  # both answers are exercised


def _analysis_record(dfa: DFA) -> dict:
    from langclass.core.classification.analysis import analyze

    d = analyze(dfa).to_dict()
    d.pop("timings_ms")
    return d


@pytest.mark.parametrize("seed", range(2))
def test_rows_on_demand_give_the_same_analysis_as_the_table(seed, monkeypatch):
    """The multiplication table built at the first product (small monoids) and rows/columns computed
    from the Cayley graphs (large ones, until enough are asked for): the same records, evidence included."""
    dfas = _samples(seed, 24) + [parse_regex("(a|b)*b(a|b){4}", ["a", "b"]), parse_regex("(a|b|c)*(ab|ba)c", ["a", "b", "c"])]
    for dfa in dfas:
        with monkeypatch.context() as mp:
            mp.setattr(classes_context, "TABLE_AT_ONCE_ELEMENTS", 10**9)
            table = _analysis_record(dfa)
        with monkeypatch.context() as mp:
            mp.setattr(classes_context, "TABLE_AT_ONCE_ELEMENTS", 0)
            mp.setattr(classes_context, "TABLE_ROWS_DIVISOR", 0)  # never worth it: rows and columns only
            built = []
            real = classes_context.Context.mult_table.func
            mp.setattr(classes_context.Context, "mult_table", property(lambda self: built.append(1) or real(self)))
            rows = _analysis_record(dfa)
            assert not built, "the table was built although rows were asked for"
        assert rows == table


@pytest.mark.parametrize("seed", range(2))
def test_d_class_representatives_cover_the_maximal_idempotents(seed):
    for dfa in _samples(seed, 30):
        M = transition_monoid(dfa)
        ctx = Context(dfa, M)
        maxi, reps = ctx.maximal_idempotents.tolist(), ctx.maximal_idempotent_reps.tolist()
        J = M.green["J"]
        assert set(reps) <= set(maxi)
        assert len({int(J[e]) for e in reps}) == len(reps)
        assert {int(J[e]) for e in maxi} == {int(J[e]) for e in reps}
        # the maximal idempotents by the definition: no other idempotent f of S with e = e·f = f·e
        plain = Plain(dfa)
        want = [e for e in plain.E
                if not any(f != e and plain.mul(e, f) == e and plain.mul(f, e) == e for f in plain.E)]
        if M.identity_in_semigroup:
            want = [0]
        assert sorted(maxi) == sorted(want)
        for e in plain.E[:6]:
            assert np.array_equal(ctx.local_mask(e), ctx.local_mask_reference(e))
        # fixed_masks three ways: composed transformations (no table yet), the table, the Cayley graphs
        es = np.flatnonzero(M.idempotent)
        composed = Context(dfa, M).fixed_masks(es)
        tabled = Context(dfa, M)
        tabled.mult_table  # noqa: B018 - built first, so its rows are read
        by_rows = Context(dfa, M)
        by_rows.__dict__["mult_table"] = None  # neither table nor composition: rows from the Cayley graphs
        for other in (tabled.fixed_masks(es), by_rows.fixed_masks(es)):
            assert all(np.array_equal(a, b) for a, b in zip(composed, other))


def _delay_reference(dfa: DFA, max_k: int) -> int | None:
    """The least k ≤ max_k whose product B_k passes the criterion, B_k built with tuple windows (dictionary BFS)."""
    A = dfa.canonical()
    t = A.transitions.astype(np.int64).tolist()
    for k in range(max_k + 1):
        if classes_delay._delay_ok_dict(t, A.initial, k, 10**6, None):
            return k
    return None


@pytest.mark.parametrize("seed", range(3))
def test_ltl_p_y_delay_numpy_product_equals_dictionary_product(seed):
    members = 0
    for dfa in _samples(seed, 30):
        n = dfa.canonical().num_states
        want = _delay_reference(dfa, n + 2)
        assert classes.ltl_p_y_delay(dfa, max_k=n + 2) == want
        if want is not None and want >= 1:
            members += 1
            assert classes.ltl_p_y_delay(dfa, max_k=n + 2, min_k=want + 1) in (None, want + 1, want + 2)
            assert classes.ltl_p_y_delay(dfa, max_k=want - 1) is None
    assert members >= 3


def test_ltl_p_y_delay_dictionary_fallback_for_wide_windows(monkeypatch):
    dfa = DFA.from_table("a", [[1], [2], [2]], 0, [2])  # a^{≥2}: unary, so B_k stays tiny for any k
    calls = []
    real = classes_delay._delay_ok_dict

    def spy(*a, **kw):
        calls.append(a[2])
        return real(*a, **kw)

    monkeypatch.setattr(classes_delay, "_delay_ok_dict", spy)
    assert classes.ltl_p_y_delay(dfa, min_k=60, max_k=60) == 60  # 3·2^60 keys fit in 62 bits: numpy
    assert calls == []
    monkeypatch.setattr(classes_delay, "_delay_ok_numpy", lambda *a, **kw: pytest.fail("numpy path used"))
    assert classes.ltl_p_y_delay(dfa, min_k=61, max_k=61) == 61  # 3·2^61 do not: dictionary BFS
    assert calls == [61]


def test_ltl_p_y_delay_deadline_is_reported_by_analyze(monkeypatch):
    from langclass.core.classification.analysis import analyze
    from langclass.core.base.limits import Deadline, Limits

    class DelayDeadline(Deadline):
        def check(self, step: str = "") -> None:
            if step == "LTL[P,Y] delay":
                self._end = 0.0
            super().check(step)

    monkeypatch.setattr(Limits, "deadline", lambda self: DelayDeadline(10.0))
    r = analyze(parse_regex("(a|b)*b(a|b){3}", ["a", "b"]))
    assert r.classes["ltl_p_y"].member is True and r.classes["ltl_p"].member is False
    assert r.extra["ltl_p_y_delay"] is None and r.extra["ltl_p_y_delay_error"]["limit"] == "time_limit_s"
    assert r.encodings["soft"]["encoding"] == "rope"


@pytest.mark.parametrize("seed", range(2))
def test_multiply_many_and_idempotents_match_composition(seed):
    rng = np.random.default_rng(seed)
    for dfa in _samples(seed, 15) + [parse_regex("(a|b)*b(a|b){3}", ["a", "b"])]:
        M = transition_monoid(dfa)
        X = M.elements.astype(np.intp)
        xs, ys = rng.integers(0, M.size, 40), rng.integers(0, M.size, 40)
        want = [M.id_of(X[y][X[x]]) for x, y in zip(xs.tolist(), ys.tolist())]
        assert M.multiply_many(xs, ys).tolist() == want
        idem = (np.take_along_axis(X, X, axis=1) == X).all(axis=1)
        assert np.array_equal(M.idempotent, idem)
