"""Replay recomputes what evidence claims from the DFA (issue 24 item 4).

* The forged witnesses of the issue are refused: an FO[<,MOD] counter and an FO²[<,MOD] pair of
  length 1 claiming ``stability_index: 1`` where s = 2, and an LTL[P,MOD] certificate with a made-up
  ``hasse``.
* Certificates of monoids over ``CERT_MONOID_MAX`` (no words listed) are checked all the same: the
  replay enumerates the monoid on the DFA.
* Every field of every evidence dataclass is tampered with and the replay must refuse it. The
  dataclasses are enumerated from the registry (recursively through nested evidence), so a new field
  is tampered with too, and a new evidence class the language pool never produces fails the test.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import typing

import pytest

from langclass.core.algebra.classes import REGISTRY, Evidence, Implied, ImpliedWitness, ReplayError, replay
from langclass.core.algebra.classes.evidence import CERT_MONOID_MAX
from langclass.core.algebra.classes.replaykit import Checker
from langclass.core.classification.analysis import analyze
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_regex


def _dfa(rx: str, al: str = "ab"):
    return parse_regex(rx, list(al))


def _record(key: str, member: bool, ev: dict) -> dict:
    return {"key": key, "member": member, "certificate": ev, "witness": None if member else ev, "method": "monoid"}


# ------------------------------------------------------------------ the forgeries


def test_forged_fo_mod_counter_with_a_wrong_stability_index_is_refused():
    dfa = _dfa("((a|b)(a|b))*a")
    a = analyze(dfa, cross_check=True)
    assert a.classes["fo_mod"].member is True and a.monoid.stability_index == 2
    W = Checker(dfa).closure()
    e, g = W.element(["a", "a"]), W.element(["a"])
    points = sorted(set(W.X[e].tolist()))
    chk = Checker(dfa)
    perm = [points.index(chk.run(["a"], p)) for p in points]
    q = dfa.canonical().initial
    forged = {"word": ["a"], "state": q, "m": 2, "cycle": [q, chk.run(["a"], q)], "prefix": [], "stability_index": 1,
              "group": {"idempotent": e, "order": 2, "degree": len(points), "name": "Z2", "abelian": True, "cyclic": True,
                        "solvable": True, "generators": [g], "generator_words": [["a"]], "permutations": [perm],
                        "points": points}}
    with pytest.raises(ReplayError, match="stability index is 2, not 1"):
        replay(dfa, _record("fo_mod", False, forged))


def test_forged_fo2_mod_witness_with_a_wrong_stability_index_is_refused():
    dfa = _dfa("(ab)*")
    a = analyze(dfa, cross_check=True)
    assert a.classes["fo2_mod"].member is True and a.monoid.stability_index == 2
    q0 = dfa.canonical().initial
    forged = {"x": ["a"], "y": ["b"], "omega": 1, "xy_omega": ["a", "b"], "lhs": ["a", "b", "a", "a", "b"],
              "context": {"state": q0, "prefix": [], "suffix": [], "first_accepted": False}, "stability_index": 1}
    with pytest.raises(ReplayError, match="stability index is 2, not 1"):
        replay(dfa, _record("fo2_mod", False, forged))


def test_forged_hasse_diagram_is_refused():
    dfa = _dfa("a(a|b)*")
    rec = analyze(dfa, cross_check=True).classes["ltl_p_mod"].to_dict()
    assert rec["member"] and rec["certificate"]["hasse"] is not None
    replay(dfa, rec)
    rec["certificate"]["hasse"] = [[0, 99], [99, 0]]
    with pytest.raises(ReplayError, match="hasse"):
        replay(dfa, rec)
    rec["certificate"]["hasse"] = None  # left out where it is due
    with pytest.raises(ReplayError, match="hasse"):
        replay(dfa, rec)


def test_certificates_without_the_monoids_words_are_replayed_on_the_dfa():
    dfa = _dfa("(a|b)*a" + "(a|b)" * 8)  # 1023 elements: over CERT_MONOID_MAX, no words listed
    a = analyze(dfa, cross_check=True)
    assert a.monoid.size > CERT_MONOID_MAX
    fm = a.classes["fo_mod"].to_dict()
    assert fm["member"] and fm["certificate"]["monoid"] is None
    replay(dfa, fm)
    for field, delta in (("stability_index", 1), ("stable_semigroup_size", 1)):
        bad = copy.deepcopy(fm)
        bad["certificate"][field] += delta
        with pytest.raises(ReplayError):
            replay(dfa, bad)
    sf = a.classes["star_free"].to_dict()
    bad = copy.deepcopy(sf)
    bad["certificate"]["monoid_size"] += 1
    with pytest.raises(ReplayError):
        replay(dfa, bad)


def test_the_replays_closure_is_the_deciders_monoid_with_the_same_words():
    for rx in ("(a|b)*ab(a|b)*", "((a|b)(a|b))*a", "(b*ab*a)*b*", "(a|b)*a(a|b)(a|b)"):
        dfa = _dfa(rx)
        M = analyze(dfa, cross_check=True).monoid
        W = Checker(dfa).closure()
        assert W.m == M.size
        assert list(W.words.parents) == M.parent[1:].tolist()
        s, stable = W.levels()
        assert (s, int(stable.sum())) == (M.stability_index, M.stable_size)
        assert W.regular.tolist() == M.regular.tolist()
        assert W.idempotent.tolist() == M.idempotent.tolist()


def test_a_replay_over_its_bound_names_the_bound():
    from langclass.core.base.errors import LimitExceeded

    dfa = _dfa("(a|b)*a" + "(a|b)" * 8)
    rec = analyze(dfa, cross_check=True).classes["fo_mod"].to_dict()
    with pytest.raises(LimitExceeded) as info:
        replay(dfa, rec, limits=Limits(max_monoid_size=100))
    assert info.value.limit == "max_monoid_size"


# ------------------------------------------------------------------ every field of every evidence class


def _evidence_classes() -> dict[type, tuple[str, ...]]:
    seen: dict[type, tuple[str, ...]] = {}

    def visit(tp) -> None:
        if not (isinstance(tp, type) and issubclass(tp, Evidence)) or tp in seen:
            return
        seen[tp] = tuple(f.name for f in dataclasses.fields(tp))
        hints = typing.get_type_hints(tp)
        for f in dataclasses.fields(tp):
            stack = [hints[f.name]]
            while stack:
                h = stack.pop()
                visit(h)
                stack += list(typing.get_args(h))

    for d in REGISTRY.values():
        for tp in d.certificate_types + d.witness_types:
            visit(tp)
    visit(Implied)
    visit(ImpliedWitness)
    return seen


POOL = [  # (regex, alphabet, limits or None)
    ("(aa)*", "a", None), ("(ab)*", "ab", None), ("a*b*", "ab", None), ("(a|b)*ab(a|b)*", "ab", None),
    ("((a|b)(a|b))*", "ab", None), ("(a|b)*a(a|b)", "ab", None), ("b*(ab*ab*)*", "ab", None),
    ("(a|b|c)*ab(a|b|c)*", "abc", None), ("a(a|b)*", "ab", None), ("(ab|ba)*", "ab", None),
    ("((a|b)*b)?", "ab", None), ("((a|b)(a|b))*a", "ab", None), ("(aa)*b(bbb)*", "ab", None),
    ("(b*ab*a)*b*", "ab", None), ("(a|b)*aa(a|b)*", "ab", None), ("(ab)*|(ba)*", "ab", None),
    ("a(b|c)*a", "abc", None), ("((a|b)(a|b)(a|b))*", "ab", None), ("(a|b)*(aab|abb)", "ab", None),
    ("(a|b)*a(a|b)", "ab", Limits(max_monoid_size=2)), ("ab(a|b)*", "ab", Limits(max_monoid_size=2)),
    ("(a|b)*ab", "ab", Limits(max_monoid_size=2)),
]

OVERRIDES: dict[tuple[str, str], typing.Callable[[typing.Any, list[str]], typing.Any]] = {
    # a generic change that would still be true of some instance gets a pointed one here
    ("Definite", "side"): lambda v, al: "prefix" if v == "suffix" else "suffix",
    ("Definite", "k"): lambda v, al: v + 1 if v > 0 else 1,
    ("LTWitness", "kind"): lambda v, al: "not commutative" if v == "not idempotent" else "not idempotent",
    # in these orbits every other element y' of e·M·e keeps (xy')^ω·x·(xy')^ω ≠ (xy')^ω true (the orbit of
    # a group), so a changed y is another true witness; the pointed change is a letter outside Σ
    ("OrbitDAWitness", "y"): lambda v, al: list(v) + ["#"],
}


def _corrupt(value: typing.Any, alphabet: list[str], chk: Checker) -> typing.Any:
    """A generic wrong value of the same JSON shape (a nested object: its first field corrupted; a word:
    one letter more or less, chosen so that it denotes another element — another word of the same
    element would state the same fact)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if value is None:
        return [alphabet[0]]
    if isinstance(value, dict):
        out = copy.deepcopy(value)
        first = next(k for k in out if k != "check")
        out[first] = _corrupt(out[first], alphabet, chk)
        return out
    if isinstance(value, list):
        if not value:
            return [alphabet[0]]
        if all(isinstance(x, str) for x in value):
            for cand in [value + [a] for a in alphabet] + [[a] + value for a in alphabet] + [value[:-1]]:
                if not chk.same(cand, value):
                    return cand
            raise AssertionError(f"no one-letter change of {value} denotes another element")
        if all(isinstance(x, int) and not isinstance(x, bool) for x in value):
            return [value[0] + 1] + value[1:]
        return [_corrupt(value[0], alphabet, chk)] + copy.deepcopy(value[1:])
    raise TypeError(type(value))


def _instances():
    """(evidence class, record, path to the evidence dict, dfa, alphabet) for every evidence object of the pool."""
    for rx, al, limits in POOL:
        dfa = _dfa(rx, al)
        a = analyze(dfa, limits, cross_check=True) if limits is not None else analyze(dfa, cross_check=True)
        for key, r in a.classes.items():
            if r.member is None:
                continue
            kind = "certificate" if r.member else "witness"
            rec = json.loads(json.dumps(r.to_dict()))

            def walk(obj, path):
                yield type(obj), path
                for f in dataclasses.fields(obj):
                    v = getattr(obj, f.name)
                    if isinstance(v, Evidence):
                        yield from walk(v, path + (f.name,))
                    elif isinstance(v, tuple):
                        for i, x in enumerate(v):
                            if isinstance(x, Evidence):
                                yield from walk(x, path + (f.name, i))

            for tp, path in walk(r.certificate if r.member else r.witness, (kind,)):
                yield tp, rec, path, dfa, list(al), rx, key


def _get(d, path):
    for p in path:
        d = d[p]
    return d


def test_every_field_of_every_evidence_class_is_checked_by_the_replay():
    classes = _evidence_classes()
    found: dict[tuple[str, str], list] = {}
    for tp, rec, path, dfa, al, rx, key in _instances():
        for f in classes[tp]:
            found.setdefault((tp.__name__, f), []).append((rec, path, dfa, al, rx, key))
    wanted = {(tp.__name__, f) for tp, fields in classes.items() for f in fields}
    assert wanted - set(found) == set(), "evidence fields no language of POOL produces: extend POOL"
    accepted = []
    for (cls, field), cases in sorted(found.items()):
        for rec, path, dfa, al, rx, key in cases[:4]:
            bad = copy.deepcopy(rec)
            ev = _get(bad, path)
            old = ev[field]
            ev[field] = OVERRIDES[(cls, field)](old, al) if (cls, field) in OVERRIDES else _corrupt(old, al, Checker(dfa))
            if bad["member"] is False:  # a non-member's certificate repeats its witness
                bad["certificate"] = bad["witness"]
            try:
                replay(dfa, bad)
            except ReplayError:
                continue
            accepted.append(f"{cls}.{field} in {rx} {key}: {old!r} -> {ev[field]!r}")
    assert accepted == [], "\n".join(accepted)
