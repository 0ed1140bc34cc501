"""LDA (FO²[<,+1]) and QLDA (FO²[<,+1,MOD]) by the local monoids (issue 22, item 2): against a tuple
brute force of eUe ∈ DA, against the lattice's other deciders (inclusions), replayed, tampered."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import HealthCheck, given, settings

from _local_brute import LocalBrute, small_dfas
from langclass.core.algebra import local_da as local_da_module
from langclass.core.algebra.classes import DECIDERS, Context
from langclass.core.algebra.classes.replaykit import Checker, ReplayError
from langclass.core.algebra.local_da import (
    decide_lda, decide_qlda, local_da, replay_local_da, stability_index_of,
)
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.base.errors import LimitExceeded
from langclass.core.ingest.parse import parse_regex
from langclass.core.synthesis.marked_y_mod import ltl_p_y_mod_search

EXAMPLES = [  # regex, alphabet, in LDA (FO²[<,+1]), in QLDA (FO²[<,+1,MOD])
    ("(a|b)*ab(a|b)*", "ab", True, True),  # Σ*abΣ*: FO²[<,+1], not FO²[<]
    ("(ab)*", "ab", True, True),
    ("((a|b)(a|b))*", "ab", False, True),  # even length: not aperiodic, a MOD predicate
    ("((a|b)(a|b))*(a|b)a", "ab", False, True),
    ("(a(ab)*b)*", "ab", False, True),
    ("(b*ab*a)*b*", "ab", False, False),  # an even number of a: a group
    ("(a|b|c)*ac*", "abc", True, True),
]


@pytest.mark.parametrize("regex,alphabet,lda,qlda", EXAMPLES)
def test_known_languages(regex, alphabet, lda, qlda):
    A = parse_regex(regex, list(alphabet))
    brute = LocalBrute(A)
    for modular, want in ((False, lda), (True, qlda)):
        r = local_da(A, modular=modular)
        assert r.member is want and r.variety == ("QLDA" if modular else "LDA"), r.reason
        replay_local_da(A, r.to_dict())
        U = brute.stable() if modular else brute.u(1)
        assert brute.in_lda(U) is want


def _check(A) -> None:
    M = transition_monoid(A)
    ctx = Context(A, M)
    brute = LocalBrute(A)
    lda, qlda = decide_lda(ctx), decide_qlda(ctx)
    assert lda.member == brute.in_lda(brute.u(1))
    assert qlda.member == brute.in_lda(brute.stable())
    replay_local_da(A, lda.to_dict())
    replay_local_da(A, qlda.to_dict())
    assert stability_index_of(A) == M.stability_index == brute.s
    # inclusions: DA ⊆ LDA ⊆ QLDA, QDA ⊆ QLDA, LR ⊆ LDA, LDA ⊆ aperiodic, QLDA ⊆ quasi-aperiodic
    known = {k: DECIDERS[k](ctx).member for k in ("fo2", "fo2_mod", "ltl_p_y", "star_free", "fo_mod",
                                                   "locally_testable")}
    assert not known["fo2"] or lda.member
    assert not known["ltl_p_y"] or lda.member
    assert not known["locally_testable"] or lda.member
    assert not lda.member or qlda.member
    assert not known["fo2_mod"] or qlda.member
    assert not lda.member or known["star_free"]
    assert not qlda.member or known["fo_mod"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=4, k_max=3))
def test_deciders_match_the_brute_force_and_the_lattice(A):
    _check(A)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=5, k_max=3))
def test_deciders_match_the_brute_force_and_the_lattice_many(A):
    _check(A)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_dfas(n_max=4, k_max=2))
def test_ltl_p_y_mod_lies_in_fo2_succ_mod(A):
    """LTL[P,Y,MOD] ⊆ FO²[<,+1,MOD]: a working modulus of the marked route implies QLDA."""
    if ltl_p_y_mod_search(A).member:
        assert local_da(A, modular=True).member


def _tamper(d: dict, kind: str, A) -> list[tuple[str, dict]]:
    ev = d[kind]
    out = [("variety", {**d, "variety": "QLDA" if d["variety"] == "LDA" else "LDA"}),
           ("evidence variety", {**d, kind: {**ev, "variety": "QLDA" if ev["variety"] == "LDA" else "LDA"}}),
           ("stability_index", {**d, kind: {**ev, "stability_index": (ev["stability_index"] or 0) + 1}})]
    if kind == "witness":
        out += [("e", {**d, kind: {**ev, "e": ev["e"] + ev["x"]}}),
                ("x", {**d, kind: {**ev, "x": ev["e"]}}),
                ("x empty", {**d, kind: {**ev, "x": []}}),
                ("z", {**d, kind: {**ev, "z": _bad_z(A, ev)}}),
                ("context", {**d, kind: {**ev, "context": {**ev["context"],
                                                           "first_accepted": not ev["context"]["first_accepted"]}}})]
    else:
        mon = ev["monoid"]
        out += [("semigroup_size", {**d, kind: {**ev, "semigroup_size": ev["semigroup_size"] + 1}}),
                ("idempotents", {**d, kind: {**ev, "idempotents": ev["idempotents"] - 1}}),
                ("monoid", {**d, kind: {**ev, "monoid": {**mon, "parents": mon["parents"][:-1],
                                                         "letters": mon["letters"][:-1]}}})]
    return out


def _bad_z(A, ev) -> list[str]:
    """A word z with x·z·x ≠ x (so the tampered witness claims a false regularity)."""
    chk = Checker(A)
    x = ev["x"]
    return next(z for z in (x + x, [], ev["e"], x, ["a"], ["b"]) if not chk.same(x + z + x, x))


@pytest.mark.parametrize("regex,alphabet,modular", [
    ("((a|b)(a|b))*", "ab", False), ("(b*ab*a)*b*", "ab", True), ("(a(ab)*b)*", "ab", False),
    ("(a|b)*ab(a|b)*", "ab", False), ("(a(ab)*b)*", "ab", True), ("((a|b)(a|b))*(a|b)a", "ab", True),
])
def test_every_field_of_the_evidence_is_checked(regex, alphabet, modular):
    A = parse_regex(regex, list(alphabet))
    d = local_da(A, modular=modular).to_dict()
    replay_local_da(A, d)
    kind = "certificate" if d["member"] else "witness"
    for what, record in _tamper(d, kind, A):
        with pytest.raises(ReplayError):
            replay_local_da(A, record)
            pytest.fail(f"the tampered {what} replays")
    with pytest.raises(ReplayError):
        replay_local_da(A, {**d, "member": not d["member"]})
    with pytest.raises(ReplayError):
        replay_local_da(A, {"variety": "DA", "member": True})


def test_a_certificate_that_claims_a_violating_monoid_fails():
    """The certificate of Σ*abΣ* (in LDA) replayed on (a(ab)*b)* (not in LDA) — its words are refused —
    and the certificate of (a(ab)*b)* for QLDA does not carry over to LDA."""
    A = parse_regex("(a(ab)*b)*", ["a", "b"])
    good = local_da(parse_regex("(a|b)*ab(a|b)*", ["a", "b"])).to_dict()
    with pytest.raises(ReplayError):
        replay_local_da(A, good)
    q = local_da(A, modular=True).to_dict()
    cert = {**q["certificate"], "variety": "LDA", "stability_index": None}
    with pytest.raises(ReplayError):
        replay_local_da(A, {**q, "variety": "LDA", "certificate": cert})


def test_work_limit_is_checked_before_the_search(monkeypatch):
    A = parse_regex("(a(ab)*b)*", ["a", "b"])
    monkeypatch.setattr(local_da_module, "LOCAL_DA_WORK", 10)
    with pytest.raises(LimitExceeded) as e:
        local_da(A)
    assert e.value.limit == "local_da_work"
    assert local_da(parse_regex("(a|b)*ab(a|b)*", ["a", "b"])).member  # nothing to search: no work


def test_stability_index_replay_has_a_limit():
    A = parse_regex("(a(ab)*b)*", ["a", "b"])
    with pytest.raises(LimitExceeded) as e:
        stability_index_of(A, max_transformations=3)
    assert e.value.limit == "replay_levels_max"


def test_docstring_examples():
    assert doctest.testmod(local_da_module, optionflags=doctest.ELLIPSIS).failed == 0
