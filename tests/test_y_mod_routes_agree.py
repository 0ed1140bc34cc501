"""The two decisions of LTL[P,Y,MOD], and of FO²[<,+1] / FO²[<,+1,MOD], agree on every random DFA (issue 22).

* LTL[P,Y,MOD]: the C-orbit engine (PL(MOD⁺), :mod:`langclass.core.algebra.orbits`, and the
  registered ``ltl_p_y_mod`` decider with its period) against the marked alphabet
  (:mod:`langclass.core.synthesis.marked_y_mod`: K_m ∈ LTL[P,Y] by the specialized LTL[P,Y]
  decider): same answer, and the period is the least working modulus.
* FO²[<,+1] = TL(DD) against LDA, FO²[<,+1,MOD] = TL(MOD⁺) against QLDA
  (:mod:`langclass.core.algebra.local_da`).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from _local_brute import small_dfas
from langclass.core.algebra.classes import DECIDERS, Context, replay
from langclass.core.algebra.local_da import decide_lda, decide_qlda
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.algebra.orbits import OrbitEngine, unary_temporal
from langclass.core.base.errors import LimitExceeded
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex
from langclass.core.synthesis.marked_y_mod import ltl_p_y_mod_search

LIMITS = Limits(max_monoid_size=20_000)
"""The marked monoids grow as m²·|M|; a draw past this cap is left out (its limit is tested elsewhere)."""


def _agree(A) -> None:
    M = transition_monoid(A)
    engine = OrbitEngine(M)
    ctx = Context(A, M)
    orbit = unary_temporal(M, "MOD+", "past", engine=engine)
    registered = DECIDERS["ltl_p_y_mod"](ctx)
    assert registered.member == orbit.member and registered.period == orbit.period
    replay(A, registered)
    try:
        marked = ltl_p_y_mod_search(A, LIMITS, monoid=M)
    except LimitExceeded:
        marked = None
    if marked is not None:
        assert marked.member == orbit.member
        assert marked.modulus == orbit.period
        assert marked.stability_index == orbit.stable_modulus or not orbit.member
    assert decide_lda(ctx).member == unary_temporal(M, "DD", "both", engine=engine).member == \
        DECIDERS["fo2_succ"](ctx).member
    assert decide_qlda(ctx).member == unary_temporal(M, "MOD+", "both", engine=engine).member == \
        DECIDERS["fo2_succ_mod"](ctx).member


@pytest.mark.parametrize("regex,alphabet,period", [
    ("((a|b)(a|b))*(a|b)a", "ab", 2), ("(ab|ba)*", "ab", 2), ("(a|b|c)*ac*", "abc", None),
    ("((a|b)(a|b)(a|b))*(a|b)a", "ab", 3), ("(ab)*", "ab", 1),
])
def test_known_languages(regex, alphabet, period):
    A = parse_regex(regex, list(alphabet)).canonical()
    _agree(A)
    assert ltl_p_y_mod_search(A).modulus == period


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=4, k_max=2))
def test_both_routes_agree_on_random_dfas(A):
    _agree(A)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=5, k_max=3))
def test_both_routes_agree_on_random_dfas_many(A):
    _agree(A)
