"""Definite / reverse definite languages found on the DFA alone (used when the monoid is over its cap):
agreement with the algebraic tests (se = e, resp. es = e, for idempotents e of the syntactic
semigroup) on random DFAs, the least k against brute force over words, the analysis over the cap and
the replay of the certificate."""

from __future__ import annotations

import itertools
import random

import pytest

from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.algebra.classes import DECIDERS, Context, ReplayError, monoid_extras, replay
from langclass.core.algebra.classes.definite import Definite, check_definite, find_definite
from langclass.core.base.limits import Limits
from langclass.core.algebra.monoid import transition_monoid
from langclass.core.ingest.parse import parse_regex


def _least_k_brute(d: DFA, side: str) -> int | None:
    A = d.canonical()
    n = A.num_states
    for k in range(0, n + 1):
        ok = True
        for w in itertools.product(range(A.num_letters), repeat=k):
            if side == "suffix":
                ends = {A.run([A.alphabet[a] for a in w], q) for q in range(n)}
                ok = len(ends) == 1
            else:
                q = A.run([A.alphabet[a] for a in w])
                ok = all(A.transitions[q, a] == q for a in range(A.num_letters))
            if not ok:
                break
        if ok:
            return k
    return None


def test_definite_agrees_with_the_monoid_and_brute_force():
    rng = random.Random(5)
    seen = {"suffix": 0, "prefix": 0, "none": 0}
    for _ in range(250):
        n, k = rng.randint(1, 5), rng.randint(1, 2)
        table = [[rng.randrange(n) for _ in range(k)] for _ in range(n)]
        acc = [q for q in range(n) if rng.random() < 0.5]
        r = rng.random()
        if r < 0.4:  # shift registers and sinks make definite languages common
            table = [[min(n - 1, (2 * q + a) % n) if rng.random() < 0.8 else n - 1 for a in range(k)] for q in range(n)]
        elif r < 0.7:  # a DAG into an accepting and a rejecting sink: reverse definite
            n = max(n, 3)
            table = [[rng.randrange(q + 1, n) for _ in range(k)] for q in range(n - 2)] + [[n - 2] * k, [n - 1] * k]
            acc = [q for q in range(n - 2) if rng.random() < 0.5] + [n - 2]
        d = DFA.from_table("ab"[:k], table, 0, acc).canonical()
        ctx = Context(d, transition_monoid(d))
        ex = monoid_extras(ctx)
        cert = find_definite(d)
        suffix, prefix = _least_k_brute(d, "suffix"), _least_k_brute(d, "prefix")
        assert (suffix is not None) == ex["definite"]
        if cert is not None and cert.side == "suffix":
            assert cert.k == suffix
        elif cert is not None:
            assert suffix is None and cert.k == prefix and ex["reverse_definite"]
        else:
            assert suffix is None and prefix is None and not ex["reverse_definite"]
        if cert is not None:
            check_definite(d, cert)
            assert DECIDERS["fo2"](ctx).member is True  # (reverse) definite ⇒ DA
        seen[cert.side if cert else "none"] += 1
    assert min(seen.values()) >= 10, seen


def test_definite_language_over_the_monoid_cap_is_decided_and_replays():
    d = parse_regex("(a|b)*a(a|b){6}", ["a", "b"])  # 128 states; its monoid is over a cap of 100 entries
    r = analyze(d, Limits(max_monoid_entries=100, time_limit_s=None))
    assert "error" in r.monoid_summary
    lt = r.classes["locally_testable"]
    assert lt.member is True and lt.method == "automaton" and lt.certificate == Definite(7, "suffix")
    assert r.classes["fo2"].member is True and r.classes["fo2"].certificate == Definite(7, "suffix")
    for key in ("locally_threshold_testable", "ltl_p_y", "star_free", "fo_mod", "fo2_mod"):
        assert r.classes[key].member is True and r.classes[key].method == "lattice"
    assert r.classes["piecewise_testable"].member is False
    undecided = {k for k, c in r.classes.items() if c.member is None}
    # only the future-time classes LTL[F] and LTL[F,MOD] need the monoid here (no inclusion decides them)
    assert undecided <= {"ltl_f", "ltl_f_mod"}, undecided
    assert all("stored entries" in r.classes[k].reason for k in undecided)
    for res in r.classes.values():
        replay(d, res.to_dict())
    bad = lt.to_dict()
    bad["certificate"] = {"k": 6, "side": "suffix"}
    with pytest.raises(ReplayError):
        replay(d, bad)
    # the same answers as with the monoid
    full = analyze(d, Limits(time_limit_s=None))
    for key in ("locally_testable", "locally_threshold_testable", "ltl_p_y", "star_free", "fo_mod", "fo2", "fo2_mod"):
        assert full.classes[key].member is True


def test_reverse_definite_over_the_cap():
    d = parse_regex("(a|b){3}a(a|b)*", ["a", "b"])  # the 4th letter is a
    r = analyze(d, Limits(max_monoid_entries=10, time_limit_s=None))
    lt = r.classes["locally_testable"]
    assert lt.member is True and lt.certificate == Definite(4, "prefix")
    assert r.classes["fo2"].member is True and analyze(d, Limits(time_limit_s=None)).classes["fo2"].member is True
    for res in r.classes.values():
        replay(d, res.to_dict())
    with pytest.raises(ReplayError):
        replay(d, {**lt.to_dict(), "certificate": {"k": 3, "side": "prefix"}})
