"""The ``crasp`` class (C-RASP ∩ regular, issue 32): decisions, programs, certificates, closure properties.

Independent checks: every member's program runs on every word to length 10 and on random long words
and must agree with the DFA; the balanced morphisms found over fundamental cycles span exactly the
null space of the Parikh vectors of all simple cycles (brute force); the answer is closed under the
operations C-RASP is closed under (complement, union, intersection, quotients, inverse letter-to-letter
morphisms); LTL[P] ⊆ C-RASP ⊆ star-free on random DFAs; tampering with any field fails the replay.
"""

from __future__ import annotations

import copy
import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from langclass.core.algebra.classes import REGISTRY, decide_crasp, replay
from langclass.core.algebra.classes.context import Context
from langclass.core.algebra.classes.crasp import crasp_components
from langclass.core.algebra.classes.crasp_fixpoint import nullspace
from langclass.core.automata.automaton import DFA
from langclass.core.ingest.parse import parse_regex
from langclass.core.logic.crasp import CraspProgram, iter_words

# (regex, alphabet, member by the definition); the reference decider's own test list, decided from
# the definition: (a|b)*b and a(a|b)*b are members (program Q_b, and "first letter a" by a count = 1)
CASES = [
    ("(ab|ba)*", "ab", True), ("(aa)*", "a", False), ("(bab|b)*", "ab", False), ("(ab)*", "ab", True),
    ("(a|b)*b", "ab", True), ("a(a|b)*b", "ab", True), ("(a|b)*bb(a|b)*", "ab", False),
    ("(aa(ba)*abb(ab)*b)*", "ab", True), ("(aa*bb*)(aa*bb*)*", "ab", True), ("(aa*bb*)(aa*bb*)(aa*bb*)", "ab", True),
    ("(ab)(ab)*aa*", "ab", True), ("(ab)(ab)*aa*bb*", "ab", True), ("(ab)(ab)*b(ab)(ab)*", "ab", True),
    ("(ab)(ab)*bb*(ab)(ab)*", "ab", True), ("((ab)(ab)*bb*)*", "ab", False),
    ("((ab)(ab)*bb*)((ab)(ab)*bb*)((ab)(ab)*bb*)", "ab", True), ("(ab|bba)*", "ab", False),
    ("(ab|aabb)*", "ab", False), ("(bbac)*", "abc", True), ("(a|b|c)*ac*", "abc", False),
    ("((a|b)(a|b))*", "ab", False), ("a*b*", "ab", True), ("(a|b)*a(a|b)", "ab", False),
]


def _dfa(rx: str, al: str) -> DFA:
    return parse_regex(rx, list(al))


def _agrees_everywhere(dfa: DFA, prog: CraspProgram, max_len: int, rng: random.Random, n_random: int = 20,
                       long_len: int = 300) -> None:
    A = dfa.canonical()
    for w in iter_words(A.alphabet, max_len):
        if len(w) == max_len or not w:  # the program is causal: its value at each position answers that prefix
            vals = prog.evaluate_all(list(w))[prog.output] if w else []
            q = A.initial
            assert prog.evaluate([]) == bool(A.accepting[q])
            for i, a in enumerate(w):
                q = A.run([a], q)
                assert vals[i] == bool(A.accepting[q]), ("".join(w[:i + 1]), A.to_canonical_dict())
    for _ in range(n_random):
        w = [rng.choice(A.alphabet) for _ in range(rng.randint(long_len // 2, long_len))]
        assert prog.evaluate(w) == A.accepts(w), A.to_canonical_dict()


@pytest.mark.parametrize("rx,al,member", CASES)
def test_decisions_programs_and_replay(rx, al, member):
    dfa = _dfa(rx, al)
    r = decide_crasp(Context(dfa.canonical()))
    assert r.member is member, r.reason
    replay(dfa, json.loads(json.dumps(r.to_dict())))
    if member:
        prog = CraspProgram.from_json(r.certificate.program)
        assert r.certificate.depth == prog.depth() >= 0
        _agrees_everywhere(dfa, prog, 8 if len(al) <= 2 else 5, random.Random(1), n_random=2, long_len=2000)
    else:
        w = r.witness
        assert w.p != w.q and w.successors[0] != w.successors[1]


@pytest.mark.slow
@pytest.mark.parametrize("rx,al", [(rx, al) for rx, al, member in CASES if member])
def test_member_programs_on_every_word_to_length_10_and_long_random_words(rx, al):
    dfa = _dfa(rx, al)
    prog = CraspProgram.from_json(decide_crasp(Context(dfa.canonical())).certificate.program)
    _agrees_everywhere(dfa, prog, 10 if len(al) <= 2 else 7, random.Random(2), n_random=20, long_len=4000)


@st.composite
def dfas(draw, n_max: int = 6, k_max: int = 3):
    n = draw(st.integers(1, n_max))
    k = draw(st.integers(1, k_max))
    table = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=k, max_size=k), min_size=n, max_size=n))
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA.from_table("abc"[:k], table, 0, [q for q in range(n) if acc[q]]).canonical()


@st.composite
def structured_dfas(draw):
    """Chains of cycles with chords over {a, b}: components with several states are frequent (uniform random
    DFAs are mostly one big component), so members with several levels and entries occur."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    n = sum(sizes)
    table = [[0, 0] for _ in range(n)]
    start = 0
    for si, s in enumerate(sizes):
        nxt = start + s if si + 1 < len(sizes) else None
        for i in range(s):
            q = start + i
            a = draw(st.integers(0, 1))
            table[q][a] = start + (i + 1) % s
            other = draw(st.sampled_from(["self", "cycle", "next"] if nxt is not None else ["self", "cycle"]))
            table[q][1 - a] = (q if other == "self" else start + draw(st.integers(0, s - 1)) if other == "cycle"
                               else draw(st.integers(nxt, n - 1)))
        start += s
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return DFA.from_table("ab", table, 0, [q for q in range(n) if acc[q]]).canonical()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(dfas(), structured_dfas()))
def test_every_member_program_agrees_with_the_dfa_and_evidence_replays(dfa):
    r = decide_crasp(Context(dfa))
    replay(dfa, r.to_dict())
    if r.member:
        prog = CraspProgram.from_json(r.certificate.program)  # every operation through CraspOp's own checks
        assert prog.to_json() == r.certificate.program  # the construction's trusted operations are exactly those
        _agrees_everywhere(dfa, prog, 10 if dfa.num_letters <= 2 else 6, random.Random(7), n_random=5)


def _simple_cycles_parikh(t, states, labels_of_edge):
    """Label-count vectors of every simple cycle of the component (brute force, small components only)."""
    pos = set(states)
    out = []
    edges = [(p, a, t[p][a]) for p in states for a in range(len(t[p])) if t[p][a] in pos]

    def walk(start, v, seen, vec):
        for (p, a, q) in edges:
            if p != v or q < start:
                continue
            v2 = dict(vec)
            lb = labels_of_edge[(p, a)]
            v2[lb] = v2.get(lb, 0) + 1
            if q == start:
                out.append(v2)
            elif q not in seen:
                walk(start, q, seen | {q}, v2)

    for s in states:
        walk(s, s, {s}, {})
    return out


def _rank(rows, ncols):
    return ncols - len(nullspace(rows, ncols))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(dfas(n_max=5, k_max=2), structured_dfas()))
def test_fundamental_cycles_span_the_same_balanced_morphisms_as_all_simple_cycles(dfa):
    t = dfa.transitions.tolist()
    from langclass.core.automata.smallgraph import strong_labels

    comp = strong_labels([sorted(set(r)) for r in t])
    for cf in crasp_components(t, comp):
        classes = (0,) * len(cf.states)
        pos = {q: i for i, q in enumerate(cf.states)}
        for lv in cf.levels:
            lab = {(p, a): (classes[pos[p]], a) for p in cf.states for a in range(len(t[p])) if t[p][a] in pos}
            li = {lb: i for i, lb in enumerate(lv.labels)}
            cyc = [[v.get(lb, 0) for lb in lv.labels] for v in _simple_cycles_parikh(t, cf.states, lab)]
            brute = nullspace(cyc, len(li))
            cols = [list(c) for c in zip(*lv.morphism)] if lv.morphism and lv.morphism[0] else []
            assert len(cols) == len(brute)
            for c in cols:  # every basis column vanishes on every simple cycle
                assert all(sum(x * y for x, y in zip(c, row)) == 0 for row in cyc)
            if cols:
                assert _rank(cols, len(li)) == len(cols)
            classes = lv.classes


def _product(d1: DFA, d2: DFA, op) -> DFA:
    n1, n2 = d1.num_states, d2.num_states
    table = [[d1.transitions[q // n2, a] * n2 + d2.transitions[q % n2, a] for a in range(d1.num_letters)]
             for q in range(n1 * n2)]
    acc = [q for q in range(n1 * n2) if op(bool(d1.accepting[q // n2]), bool(d2.accepting[q % n2]))]
    return DFA.from_table(d1.alphabet, [[int(x) for x in r] for r in table], d1.initial * n2 + d2.initial, acc).canonical()


def _member(dfa: DFA) -> bool:
    return bool(decide_crasp(Context(dfa.canonical())).member)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(dfas(n_max=4, k_max=2), structured_dfas()), st.one_of(dfas(n_max=4, k_max=2), structured_dfas()))
def test_closure_properties_of_c_rasp(d1, d2):
    """C-RASP is closed under Boolean operations, left and right quotients by a letter and inverse
    letter-to-letter morphisms (docs/crasp.md); the decider must respect that."""
    t = d1.transitions.tolist()
    acc = [bool(x) for x in d1.accepting]
    n = d1.num_states
    m1 = _member(d1)
    comp = DFA.from_table(d1.alphabet, t, d1.initial, [q for q in range(n) if not acc[q]])
    assert _member(comp) == m1
    for a in range(d1.num_letters):
        left = DFA.from_table(d1.alphabet, t, t[d1.initial][a], [q for q in range(n) if acc[q]])
        right = DFA.from_table(d1.alphabet, t, d1.initial, [q for q in range(n) if acc[t[q][a]]])
        if m1:
            assert _member(left) and _member(right)
    if d1.num_letters == 2:  # swap the letters (an inverse letter-to-letter morphism)
        sw = DFA.from_table(d1.alphabet, [[r[1], r[0]] for r in t], d1.initial, [q for q in range(n) if acc[q]])
        assert _member(sw) == m1
    if d2.alphabet == d1.alphabet and m1 and _member(d2):
        assert _member(_product(d1, d2, lambda x, y: x and y))
        assert _member(_product(d1, d2, lambda x, y: x or y))


def test_inclusions_on_random_dfas():
    from langclass.core.classification.analysis import analyze

    rng = random.Random(20261206)
    seen = {"ltl_p": 0, "crasp_not_ltl_p": 0}
    for _ in range(120):
        n, k = rng.randint(1, 5), rng.randint(1, 2)
        table = [[rng.randrange(n) for _ in range(k)] for _ in range(n)]
        dfa = DFA.from_table("ab"[:k], table, 0, [q for q in range(n) if rng.random() < 0.5])
        a = analyze(dfa)  # check_consistency asserts every inclusion of the lattice, crasp's among them
        m = {key: r.member for key, r in a.classes.items()}
        if m["ltl_p"]:
            assert m["crasp"] is True
            seen["ltl_p"] += 1
        if m["crasp"]:
            assert m["star_free"] is True
            seen["crasp_not_ltl_p"] += not m["ltl_p"]
    assert all(v > 0 for v in seen.values()), seen
    m = {key: r.member for key, r in analyze(_dfa("(a|b)*bb(a|b)*", "ab")).classes.items()}
    assert m["star_free"] and m["ltl_p_y"] and not m["crasp"]  # both inclusions are strict
    m = {key: r.member for key, r in analyze(_dfa("(ab|ba)*", "ab")).classes.items()}
    assert m["crasp"] and not m["ltl_p"] and not m["ltl_p_y"] and not m["ltl_p_mod"]


# ----------------------------------------------------------------------------- tampering


def _tamper(dfa: DFA, rec: dict, path: list, value) -> None:
    d = copy.deepcopy(rec)
    node = d
    for p in path[:-1]:
        node = node[p]
    node[path[-1]] = value(node[path[-1]]) if callable(value) else value
    with pytest.raises(AssertionError):
        replay(dfa, d)


def test_every_certificate_field_is_checked():
    dfa = _dfa("(b*ac)*", "abc")  # its big component needs two levels (the second splits nothing)
    rec = decide_crasp(Context(dfa.canonical())).to_dict()
    replay(dfa, rec)
    cert = rec["certificate"]
    multi = next(i for i, c in enumerate(cert["components"]) if len(c["levels"]) >= 2)
    base = ["certificate", "components"]
    _tamper(dfa, rec, base, lambda cs: cs[1:])  # a component left out
    _tamper(dfa, rec, base, lambda cs: cs[::-1])  # not predecessors first
    _tamper(dfa, rec, base + [multi, "states"], lambda s: s[:-1])
    _tamper(dfa, rec, base + [multi, "levels"], lambda lv: lv[:-1])  # stops before the fixed point
    _tamper(dfa, rec, base + [multi, "levels"], lambda lv: lv + [lv[-1]])  # a level after it
    lv0 = base + [multi, "levels", 0]
    _tamper(dfa, rec, lv0 + ["labels"], lambda ls: ls[::-1])
    _tamper(dfa, rec, lv0 + ["morphism"], lambda m: [[x + 1 for x in r] for r in m])
    _tamper(dfa, rec, lv0 + ["morphism"], lambda m: [r + r for r in m])  # dependent columns
    _tamper(dfa, rec, lv0 + ["morphism"], lambda m: [r[:-1] for r in m])  # not all balanced morphisms
    _tamper(dfa, rec, lv0 + ["potentials"], lambda p: [p[0]] + [[x + 1 for x in r] for r in p[1:]])
    _tamper(dfa, rec, lv0 + ["classes"], lambda c: [0] * len(c))
    _tamper(dfa, rec, ["certificate", "depth"], lambda d: d + 1)
    _tamper(dfa, rec, ["certificate", "program"], None)
    _tamper(dfa, rec, ["certificate", "program", "accepts_empty"], lambda b: not b)
    _tamper(dfa, rec, ["certificate", "program", "output"], lambda o: rec["certificate"]["program"]["ops"][0]["name"])
    _tamper(dfa, rec, ["certificate", "program", "ops"], lambda ops: [
        dict(op, args=[">=" if x == "==" else x for x in op["args"]]) if op["kind"] == "compare" else op for op in ops])


def test_every_witness_field_is_checked():
    dfa = _dfa("(bab|b)*", "ab")
    rec = decide_crasp(Context(dfa.canonical())).to_dict()
    replay(dfa, rec)
    w = ["witness"]
    _tamper(dfa, rec, w + ["p"], lambda p: rec["witness"]["q"])
    _tamper(dfa, rec, w + ["q"], lambda q: next(s for s in rec["witness"]["component"]["states"]
                                                if s not in (q, rec["witness"]["p"])) if len(rec["witness"]["component"]["states"]) > 2 else 99)
    _tamper(dfa, rec, w + ["letter"], lambda a: "b" if a == "a" else "a")
    _tamper(dfa, rec, w + ["successors"], lambda s: s[::-1])
    _tamper(dfa, rec, w + ["component", "states"], lambda s: s[:-1])
    _tamper(dfa, rec, w + ["component", "levels", 0, "potentials"], lambda p: [[0]] + [[1]] * (len(p) - 1))
    _tamper(dfa, rec, w + ["component", "levels", 0, "morphism"], lambda m: [[1]] * len(m))
    _tamper(dfa, rec, w + ["component", "levels", 0, "classes"], lambda c: list(range(len(c))))



def test_causal_encoding_answer_is_labelled_and_follows_the_class():
    from langclass.core.classification.analysis import analyze

    member = analyze(_dfa("(ab|ba)*", "ab"))
    e = member.encodings["causal"]
    assert e["encoding"] == "nope" and e["class"] == "crasp" and "non-strict" in e["setting"]
    depth = member.classes["crasp"].certificate.depth
    assert f"depth {depth} (upper bound from the constructed program)" in e["name"] and e["parameters"]["depth"] == depth
    assert member.encodings["soft"]["encoding"] != "nope"  # fixed precision: NoPE is LTL[P] only
    assert {f: x["setting"] for f, x in member.encodings.items()}.keys() == {"soft", "hard", "causal"}
    non = analyze(_dfa("(aa)*", "a")).encodings["causal"]
    assert non["encoding"] is None and non["name"].startswith("no C-RASP program")
    assert non["outside"]["class"] == "crasp" and non["outside"]["witness"]["letter"] == "a"
    both = analyze(_dfa("a*b*", "ab")).encodings
    assert both["soft"]["encoding"] == both["causal"]["encoding"] == "nope"


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6).flatmap(lambda c: st.lists(st.lists(st.integers(-4, 4), min_size=c, max_size=c), max_size=6)
                                 .map(lambda rows: (rows, c))))
def test_integer_elimination_null_space_against_sympy(rc):
    import sympy

    rows, ncols = rc
    basis = nullspace(rows, ncols)
    assert all(sum(x * y for x, y in zip(r, b)) == 0 for r in rows for b in basis)
    rank = sympy.Matrix(rows).rank() if rows else 0
    assert len(basis) == ncols - rank
    if basis:
        assert sympy.Matrix(basis).rank() == len(basis)


def _short_only(program: dict, bound: int = 1000) -> dict:
    """The genuine program with its output also requiring "length < bound": right on every word replay
    runs, wrong on the long members (found by a new user's audit)."""
    ops = [dict(o) for o in program["ops"]]
    symbols = [o["name"] for o in ops if o["kind"] == "symbol"]
    ops += [{"name": "__any", "kind": "or", "args": symbols}, {"name": "__len", "kind": "count", "args": ["__any"]},
            {"name": "__bound", "kind": "linear", "args": [[], bound]},
            {"name": "__short", "kind": "compare", "args": ["__len", "<", "__bound"]},
            {"name": "__out", "kind": "and", "args": [program["output"], "__short"]}]
    return {**program, "ops": ops, "output": "__out"}


def test_replay_refuses_a_program_that_is_wrong_only_on_long_words() -> None:
    import copy

    import langclass
    from langclass.core.algebra.classes import replay
    from langclass.core.algebra.classes.replaykit import ReplayError

    d = langclass.classify("(ab|ba)*", alphabet="ab").to_dict()
    rec = copy.deepcopy(d["classes"]["crasp"])
    replay(d["dfa"], rec)
    rec["certificate"]["program"] = _short_only(rec["certificate"]["program"])
    with pytest.raises(ReplayError, match="not the one the balanced morphisms"):
        replay(d["dfa"], rec)


def test_a_causal_construction_of_another_languages_program_is_not_exact() -> None:
    import langclass
    from langclass.models.construct.verify import run_construction

    program = _short_only(langclass.classify("(ab|ba)*", alphabet="ab").to_dict()["classes"]["crasp"]["certificate"]["program"], 40)
    r = run_construction({"regex": "(ab|ba)*", "alphabet": ["a", "b"], "setting": "causal", "crasp_program": program,
                          "all_words_up_to": 6, "random_words": 8, "random_max_length": 120})
    assert r["agrees_with_dfa"] is False and r["exact"] is False


def test_non_member_reason_abbreviates_a_large_component() -> None:
    """The reason names a large strongly connected component by its first states and its size; the
    witness keeps the whole list (a 200-state cycle gave a reason of several kB before)."""
    n = 200
    dfa = DFA.from_table(("a",), [[(q + 1) % n] for q in range(n)], 0, [0])
    res = decide_crasp(Context(dfa))
    assert res.member is False
    assert f"… ({n} states)]" in res.reason and len(res.reason) < 600
    assert len(res.witness.component.states) == n
