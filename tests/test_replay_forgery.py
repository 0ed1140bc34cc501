"""Replay cannot be fooled: forged evidence of the opposite verdict is refused for every class (issue 37).

For every class key and random small DFAs, evidence of the *opposite* verdict is built from the key's
certificate (or witness) schema — the evidence dataclasses' type hints, read recursively — with
hypothesis: empty lists, nulls for optional fields, extreme periods and moduli, states outside the
DFA, words with a symbol outside Σ, the DFA's own monoid words, a genuine certificate (witness) of
another language as it is and with its lists emptied, its optional fields nulled and its
``truncated`` flag set, and answers claimed through the lattice carrying such evidence. The verdict
is wrong, so every one must be refused with a ``ReplayError``: any acceptance (or any other
exception) is a hole in the replay. The normal tier draws a few hundred forgeries per key; the slow
tier thousands, on larger DFAs. Alongside, the five reproducers of the issue, each refused with a
message naming what is wrong.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import types
import typing

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import langclass
from langclass.core.algebra.classes import REGISTRY, Evidence, ReplayError, replay
from langclass.core.algebra.classes.evidence import MonoidWords
from langclass.core.algebra.classes.implied import implied_period
from langclass.core.algebra.lattice import CLASS_INFO, implied_by
from langclass.core.algebra.classes.evidence import monoid_words
from langclass.core.algebra.orbits import GAPS, SIDES
from langclass.core.classification.analysis import analyze
from langclass.core.automata.automaton import DFA
from langclass.core.ingest.parse import parse_regex

KEYS = sorted(REGISTRY)

# ----------------------------------------------------------------------------- the languages

OTHERS = [("(aa)*", "a"), ("(ab)*", "ab"), ("a*b*", "ab"), ("(a|b)*ab(a|b)*", "ab"), ("((a|b)(a|b))*", "ab"),
          ("(a|b)*a(a|b)", "ab"), ("b*(ab*ab*)*", "ab"), ("a(a|b)*", "ab"), ("(ab|ba)*", "ab"),
          ("((a|b)*b)?", "ab"), ("((a|b)(a|b))*a", "ab"), ("(aa)*b(bbb)*", "ab"), ("(b*ab*a)*b*", "ab"),
          ("(a|b)*aa(a|b)*", "ab"), ("(ab)*|(ba)*", "ab"), ("((a|b)(a|b)(a|b))*", "ab"), ("(a|b)*(aab|abb)", "ab"),
          ("((a|b)(a|b))*(a|b)a", "ab"), ("(a|b)*", "ab"), ("a", "ab"), ("(a|b)*a(a|b)*b(a|b)*", "ab")]
"""Languages whose genuine evidence is replayed, forged, on the drawn DFAs."""

_POOL: dict[tuple[str, bool], list[dict]] | None = None


def _pool() -> dict[tuple[str, bool], list[dict]]:
    """(key, member) → the genuine evidence records of :data:`OTHERS` (computed once)."""
    global _POOL
    if _POOL is None:
        _POOL = {}
        for rx, al in OTHERS:
            for key, r in analyze(parse_regex(rx, list(al)), cross_check=True).classes.items():
                if r.member is None or r.method == "lattice":
                    continue
                ev = (r.certificate if r.member else r.witness).to_dict()
                _POOL.setdefault((key, bool(r.member)), []).append(json.loads(json.dumps(ev)))
    return _POOL


_ANSWERS: dict[bytes, tuple[DFA, dict, str | None]] = {}


def _answer(dfa: DFA) -> tuple[DFA, dict, str | None]:
    """(canonical DFA, {key: member}, the monoid's words as JSON text or None), cached per DFA."""
    A = dfa.canonical()
    fp = A.transitions.tobytes() + A.accepting.tobytes() + bytes([A.initial, A.num_letters])
    got = _ANSWERS.get(fp)
    if got is None:
        a = analyze(A, cross_check=True)
        mw = monoid_words(a.monoid) if a.monoid is not None else None
        got = _ANSWERS[fp] = (A, {k: r.member for k, r in a.classes.items()}, None if mw is None else json.dumps(mw.to_dict()))
    return got


@st.composite
def dfas(draw, n_max: int = 4, k_max: int = 2):
    n = draw(st.integers(1, n_max))
    k = draw(st.integers(1, k_max))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA.from_table(list("abc"[:k]), table, 0, [q for q in range(n) if acc[q]])


# ----------------------------------------------------------------------------- evidence from the schema

_STRINGS = {  # field name → the values a forger tries (valid ones and junk)
    "gap": list(GAPS) + ["", "MOD++"], "side": list(SIDES) + ["suffix", "prefix", ""],
    "relation": ["R", "L", "DA", ""], "kind": ["not idempotent", "not commutative", "identity", "not aperiodic", ""],
    "name": ["Z2", "Z3", "S3", "A5", "trivial", "abelian group of order 4", "group of order 6"],
    "inclusion": ["", "LTL[P] ⊆ FO²[<]"],
}


def _ints(n: int) -> st.SearchStrategy[int]:
    """Small values, the DFA's borders and extremes: -1, 0, n-1, n, n+1, 2³¹-1, 10¹²."""
    return st.one_of(st.integers(0, 6), st.sampled_from([-1, 0, 1, 2, max(n - 1, 0), n, n + 1, 2**31 - 1, 10**12]))


@functools.cache
def _word(alphabet: tuple[str, ...]) -> st.SearchStrategy[list[str]]:
    alphabet = list(alphabet)
    letters = st.one_of(st.sampled_from(alphabet), st.just("#")) if alphabet else st.just("#")
    return st.one_of(st.just([]), st.lists(st.sampled_from(alphabet), min_size=1, max_size=6),
                     st.lists(letters, max_size=4))


def _value(hint, name: str, alphabet: tuple[str, ...], n: int, monoid: str | None, depth: int) -> st.SearchStrategy:
    """Values of one field (``monoid``: the DFA's own monoid words as JSON text, or None)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        arms = [a for a in typing.get_args(hint) if a is not type(None)]
        inner = st.one_of(*[_value(a, name, alphabet, n, monoid, depth) for a in arms])
        return st.one_of(st.none(), inner) if len(arms) < len(typing.get_args(hint)) else inner
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            if args[0] is str:
                return _word(alphabet)
            return st.lists(_value(args[0], name, alphabet, n, monoid, depth), max_size=3 if depth < 2 else 1)
        return st.tuples(*[_value(a, name, alphabet, n, monoid, depth) for a in args]).map(list)
    if hint is MonoidWords:
        gen = _schema(MonoidWords, alphabet, n, None, depth + 1)
        return st.one_of(st.none(), st.just(json.loads(monoid)), gen) if monoid is not None else st.one_of(st.none(), gen)
    if isinstance(hint, type) and issubclass(hint, Evidence):
        return _schema(hint, alphabet, n, monoid, depth + 1)
    if hint is bool:
        return st.booleans()
    if hint is int:
        return _ints(n)
    if hint is str:
        if name in _STRINGS:
            return st.sampled_from(_STRINGS[name])
        return st.sampled_from(list(alphabet or ["a"]) + ["#", ""])  # a letter (Stutter.a, MergedStates.letter)
    if hint is typing.Any:
        return st.none()
    raise TypeError(f"no strategy for {hint!r} ({name})")


@functools.cache
def _schema(tp: type, alphabet: tuple[str, ...], n: int, monoid: str | None, depth: int = 0) -> st.SearchStrategy[dict]:
    """Records of evidence type ``tp``: every field drawn from its type hint (nested evidence recursively)."""
    hints = typing.get_type_hints(tp)
    fields = {f.name: _value(hints[f.name], f.name, alphabet, n, monoid, depth) for f in dataclasses.fields(tp)}
    return st.fixed_dictionaries(fields)


def _hollowed(ev: dict) -> st.SearchStrategy[dict]:
    """A genuine record with lists emptied, optional parts nulled and ``truncated`` set, field by field."""
    names = [k for k in ev if k != "check"]

    def edit(choices: list[int]) -> dict:
        out = copy.deepcopy(ev)
        for k, c in zip(names, choices):
            v = out[k]
            if c == 1 and isinstance(v, list):
                out[k] = []
            elif c == 2 and isinstance(v, (dict, list)):
                out[k] = None
            elif c == 3 and k == "truncated":
                out[k] = True
        return out

    return st.lists(st.integers(0, 3), min_size=len(names), max_size=len(names)).map(edit)


def _emptied(ev: dict) -> dict:
    """Every list of a genuine record emptied and every nested part nulled (the issue's forgery, generalized)."""
    return {k: ([] if isinstance(v, list) else None if isinstance(v, dict) else v) for k, v in ev.items()}


def _seen(key: str, member: bool) -> dict[str, list]:
    """Field name → the scalar values genuine evidence of ``key`` carries (a forger copies the header)."""
    out: dict[str, list] = {}

    def walk(d: dict) -> None:
        for k, v in d.items():
            if isinstance(v, (str, int)) and k != "check" and v not in out.setdefault(k, []):
                out[k].append(v)
            elif isinstance(v, dict):
                walk(v)

    for ev in _pool().get((key, member), []):
        walk(ev)
    return out


@functools.cache
def _forged_evidence(key: str, member: bool, alphabet: tuple[str, ...], n: int, monoid: str | None) -> st.SearchStrategy[dict]:
    dec = REGISTRY[key]
    types_ = dec.certificate_types if member else dec.witness_types
    schema = st.one_of(*[_schema(tp, alphabet, n, monoid) for tp in types_])
    seen = {k: v for k, v in _seen(key, member).items() if isinstance(v[0], str)}
    if seen:  # the header (gap, side, kind, …) copied from genuine evidence of the key, the rest from the schema
        schema = st.one_of(schema, st.tuples(schema, st.fixed_dictionaries(
            {k: st.sampled_from(v) for k, v in seen.items()})).map(lambda p: {**p[0], **{k: v for k, v in p[1].items() if k in p[0]}}))
    genuine = _pool().get((key, member), [])
    if not genuine:
        return schema
    pick = st.sampled_from(genuine)
    own = None if monoid is None else json.loads(monoid)
    return st.one_of(schema, pick, pick.flatmap(_hollowed), pick.map(_emptied),
                     pick.map(lambda ev: {**ev, "monoid": copy.deepcopy(own)} if "monoid" in ev else ev))


def _record(key: str, member: bool, ev: dict) -> dict:
    rec = {"key": key, "member": member, "certificate": ev, "witness": None if member else ev, "method": "monoid"}
    if key == "ltl_p_mod":
        rec["period"] = ev.get("k") if member and isinstance(ev, dict) else None
    if key == "ltl_p_y_mod":
        rec["period"] = ev.get("period") if member and isinstance(ev, dict) else None
    return rec


@st.composite
def forgeries(draw, key: str, n_max: int, k_max: int):
    """(dfa, record, what) — a record stating the opposite of the DFA's verdict for ``key``; None when the
    DFA's answer for ``key`` is undecided."""
    dfa = draw(dfas(n_max, k_max))
    A, members, monoid = _answer(dfa)
    truth = members[key]
    if truth is None:
        return None
    member = not truth
    alphabet, n = tuple(A.alphabet), A.num_states
    how = draw(st.sampled_from(["direct", "direct", "direct", "lattice"]))
    if how == "direct":
        ev = draw(_forged_evidence(key, member, alphabet, n, monoid))
        rec = _record(key, member, ev)
        if key in ("ltl_p_mod", "ltl_p_y_mod") and draw(st.booleans()):
            rec["period"] = draw(_ints(n))
        return A, rec, "direct"
    # through the lattice: a member because of a subclass, a non-member because of a superclass
    via = [b for b in REGISTRY if (key in implied_by(b) if member else b in implied_by(key))]
    if not via:
        return A, _record(key, member, draw(_forged_evidence(key, member, alphabet, n, monoid))), "direct"
    by = draw(st.sampled_from(via))
    inner = draw(_forged_evidence(by, member, alphabet, n, monoid))
    if member:
        ev = {"implied_by": by, "inclusion": f"{CLASS_INFO[by].name} ⊆ {CLASS_INFO[key].name}", "certificate": inner}
    else:
        ev = {"implied_by": by, "witness": inner}
    rec = {"key": key, "member": member, "certificate": ev, "witness": None if member else ev, "method": "lattice"}
    if key in ("ltl_p_mod", "ltl_p_y_mod"):
        rec["period"] = implied_period(key, by) if member else None
    return A, rec, f"lattice via {by}"


def _refused(case) -> None:
    if case is None:
        return
    A, rec, how = case
    try:
        replay(A, rec)
    except ReplayError:
        return
    raise AssertionError(f"a forged {'certificate' if rec['member'] else 'witness'} ({how}) of {rec['key']} was "
                         f"accepted on the DFA {A.to_json() if hasattr(A, 'to_json') else A}: {json.dumps(rec)[:2000]}")


@pytest.mark.parametrize("key", KEYS)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                   HealthCheck.data_too_large])
@given(data=st.data())
def test_forged_evidence_of_the_opposite_verdict_is_refused(key, data):
    for _ in range(3):
        _refused(data.draw(forgeries(key, 4, 2)))


@pytest.mark.slow
@pytest.mark.parametrize("key", KEYS)
@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                    HealthCheck.data_too_large])
@given(data=st.data())
def test_forged_evidence_of_the_opposite_verdict_is_refused_thoroughly(key, data):
    for _ in range(3):
        _refused(data.draw(forgeries(key, 6, 3)))


# ----------------------------------------------------------------------------- the issue's reproducers


def _orbit_forgery(rx: str, al: str, key: str, gap: str, side: str) -> tuple[dict, dict]:
    d = langclass.classify(rx, alphabet=al, cross_check=True).to_dict()
    rec = copy.deepcopy(d["classes"][key])
    rec.update(member=True, witness=None, period=1,
               certificate={"gap": gap, "side": side, "period": 1, "orbits": [], "truncated": False, "monoid": None})
    return d, rec


@pytest.mark.parametrize("rx, al, key, gap, side, message", [
    ("a(a|b)*", "ab", "ltl_f", "ST", "future", r"not in LTL\[F\].*L-equivalent"),
    ("(a|b|c)*ac*", "abc", "ltl_p_y_mod", "MOD+", "past", r"not in LTL\[P,Y,MOD\].*R-equivalent"),
    ("(aa)*", "a", "fo2_succ", "DD", "both", r"not in FO²\[<,\+1\].*\(xy\)\^ω x \(xy\)\^ω = \(xy\)\^ω"),
])
def test_the_issues_forged_orbit_certificates_of_non_members_are_refused(rx, al, key, gap, side, message):
    d, rec = _orbit_forgery(rx, al, key, gap, side)
    assert d["classes"][key]["member"] is False
    with pytest.raises(ReplayError, match=message):
        replay(d["dfa"], rec)


def test_the_issues_forged_ltl_f_x_mod_certificate_with_a_false_period_is_refused():
    d, rec = _orbit_forgery("(aa)*", "a", "ltl_f_x_mod", "MOD+", "future")
    genuine = d["classes"]["ltl_f_x_mod"]
    assert genuine["member"] is True and genuine["certificate"]["period"] == 2
    replay(d["dfa"], genuine)
    with pytest.raises(ReplayError, match="least modulus is 2, not 1"):
        replay(d["dfa"], rec)


@pytest.mark.parametrize("with_monoid", [True, False])
def test_the_issues_period_changed_to_5_is_refused_with_or_without_the_monoid(with_monoid):
    d = langclass.classify("(ab|ba)*", alphabet="ab").to_dict()
    rec = copy.deepcopy(d["classes"]["ltl_p_y_mod"])
    assert rec["member"] is True and rec["period"] == 2
    replay(d["dfa"], rec)
    rec["period"] = rec["certificate"]["period"] = 5
    if not with_monoid:
        rec["certificate"]["monoid"] = None
    with pytest.raises(ReplayError, match="smaller modulus 2 works too: 5 is not the least"):
        replay(d["dfa"], rec)


# ----------------------------------------------------------------------------- missing parts of other classes


def test_a_truncated_topological_order_never_certifies_a_cycle():
    d = langclass.classify("(ab)*", alphabet="ab").to_dict()
    assert d["classes"]["ltl_p"]["member"] is False
    rec = {"key": "ltl_p", "member": True, "method": "automaton", "witness": None,
           "certificate": {"topological_order": [], "truncated": True}}
    with pytest.raises(ReplayError, match="not partially ordered"):
        replay(d["dfa"], rec)


def test_a_state_outside_the_dfa_is_refused_by_name():
    d = langclass.classify("(a|b)*", alphabet="ab").to_dict()  # one state: a group language
    assert d["classes"]["group"]["member"] is True
    rec = {"key": "group", "member": False, "method": "automaton", "certificate": None,
           "witness": {"letter": "a", "states": [-1, 0], "image": 0}}  # -1 would wrap around to state 0
    with pytest.raises(ReplayError, match=r"witness\.states\[0\] = -1 is not a state"):
        replay(d["dfa"], rec)


def test_an_extreme_counter_period_is_refused_before_any_work():
    d = langclass.classify("a*", alphabet="ab").to_dict()
    assert d["classes"]["star_free"]["member"] is True
    rec = {"key": "star_free", "member": False, "method": "monoid", "certificate": None,
           "witness": {"word": ["a"], "state": 0, "m": 10**12, "cycle": [0], "prefix": []}}
    with pytest.raises(ReplayError, match="period m is between 2"):
        replay(d["dfa"], rec)


def test_a_zero_period_is_refused_not_a_crash():
    d = langclass.classify("a*", alphabet="ab").to_dict()
    rec = {"key": "ltl_p_mod", "member": False, "method": "automaton", "certificate": None,
           "witness": {"p": 0, "q": 1, "period": 0, "u": ["b"], "v": [], "loops": [],
                       "branch": {"state": 0, "letters": ["a", "b"], "successors": [0, 1]}}}
    with pytest.raises(ReplayError):
        replay(d["dfa"], rec)
