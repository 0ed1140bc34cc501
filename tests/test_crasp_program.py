"""C-RASP programs (langclass.core.logic.crasp): interpreter against independent oracles, depth,
JSON round trip, validation of hostile input, text."""

from __future__ import annotations

import json
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.base.errors import InputError
from langclass.core.logic.crasp import (
    MAX_ABS_INT, MAX_OPS, CraspOp, CraspProgram, iter_words,
)

from _crasp_programs import EXPECTED_DEPTH, ORACLES, ab_star, majority, programs


@pytest.mark.parametrize("key", sorted(ORACLES))
def test_interpreter_agrees_with_oracle_on_all_short_words(key):
    make, oracle = ORACLES[key]
    prog = make()
    max_len = 10 if len(prog.alphabet) == 2 else 7
    for w in iter_words(prog.alphabet, max_len):
        s = "".join(w)
        assert prog.evaluate(s) == oracle(s), (key, s)


@pytest.mark.parametrize("key", sorted(ORACLES))
def test_depth_of_hand_written_programs(key):
    assert ORACLES[key][0]().depth() == EXPECTED_DEPTH[key]


def test_depths_per_operation_and_needed():
    p = ab_star()
    d = p.depths()
    assert d["Qa"] == 0 and d["A"] == 1 and d["D"] == 1 and d["Bad"] == 1 and d["NBad"] == 2
    assert d["One"] == 0 and d["Out"] == 2
    # an unused op deeper than the output does not raise the depth
    extra = CraspProgram(p.alphabet, p.ops + (CraspOp("Deep", "count", ("Out",)),), "Even", True)
    assert extra.depth() == 1 and extra.depths()["Deep"] == 3
    assert {o.name for o in extra.needed()} == {"Qa", "Qb", "A", "B", "D", "Zero", "Even"}


def test_evaluate_all_values():
    vals = majority().evaluate_all("aab")
    assert vals["A"] == [1, 2, 2] and vals["B"] == [0, 0, 1]
    assert vals["Out"] == [True, True, True]
    assert majority().evaluate("abb") is False and majority().evaluate(["a"]) is True
    assert majority().evaluate("") is False and ab_star().evaluate("") is True


def test_unknown_symbol_in_word_is_input_error():
    with pytest.raises(InputError):
        majority().evaluate("abc")


@pytest.mark.parametrize("key", sorted(ORACLES))
def test_json_round_trip(key):
    p = ORACLES[key][0]()
    d = json.loads(json.dumps(p.to_json()))
    q = CraspProgram.from_json(d)
    assert q == p and hash(q) == hash(p)
    assert q.to_json() == p.to_json()


def test_render_lists_every_op_and_the_output():
    text = ab_star().render()
    lines = text.splitlines()
    assert len(lines) == len(ab_star().ops) + 2
    assert any(ln.split()[:4] == ["D", ":=", "A", "−"] and ln.split()[4] == "B" for ln in lines)
    assert "#[j ≤ i] Qa" in text and "Out" in lines[-1] and "accepted" in lines[-1]
    assert "depth 2" in lines[0]
    lin = CraspOp("X", "linear", (((-2, "A"), (1, "B")), -3))
    assert lin.text() == "−2·A + B − 3"
    assert CraspOp("K", "linear", ((), 5)).text() == "5"


# ------------------------------------------------------------------ hostile input
def _good() -> dict:
    return majority().to_json()


def _mut(fn) -> dict:
    d = json.loads(json.dumps(_good()))
    fn(d)
    return d


HOSTILE = {
    "not an object": lambda: [1, 2],
    "unknown key": lambda: _mut(lambda d: d.update(evil=1)),
    "missing output": lambda: _mut(lambda d: d.pop("output")),
    "bad format": lambda: _mut(lambda d: d.update(format="crasp-program/9")),
    "alphabet not list": lambda: _mut(lambda d: d.update(alphabet="ab")),
    "empty alphabet": lambda: _mut(lambda d: d.update(alphabet=[])),
    "duplicate symbol": lambda: _mut(lambda d: d.update(alphabet=["a", "a"])),
    "empty ops": lambda: _mut(lambda d: d.update(ops=[])),
    "ops not list": lambda: _mut(lambda d: d.update(ops={"a": 1})),
    "op extra key": lambda: _mut(lambda d: d["ops"][0].update(x=1)),
    "unknown kind": lambda: _mut(lambda d: d["ops"][0].update(kind="eval")),
    "symbol outside alphabet": lambda: _mut(lambda d: d["ops"][0].update(args=["z"])),
    "use before definition": lambda: _mut(lambda d: d["ops"].reverse()),
    "duplicate name": lambda: _mut(lambda d: d["ops"][1].update(name="Qa")),
    "count of a count": lambda: _mut(lambda d: d["ops"].append({"name": "X", "kind": "count", "args": ["A"]})),
    "compare of bools": lambda: _mut(lambda d: d["ops"].append(
        {"name": "X", "kind": "compare", "args": ["Qa", "<", "Qb"]})),
    "bad relation": lambda: _mut(lambda d: d["ops"][-1].update(args=["A", "=<", "B"])),
    "output is a count": lambda: _mut(lambda d: d.update(output="A")),
    "output undefined": lambda: _mut(lambda d: d.update(output="Nope")),
    "accepts_empty not bool": lambda: _mut(lambda d: d.update(accepts_empty=0)),
    "const_bool of int": lambda: _mut(lambda d: d["ops"].append({"name": "T", "kind": "const_bool", "args": [1]})),
    "bool coefficient": lambda: _mut(lambda d: d["ops"].append(
        {"name": "X", "kind": "linear", "args": [[[True, "A"]], 0]})),
    "float constant": lambda: _mut(lambda d: d["ops"].append({"name": "X", "kind": "linear", "args": [[], 1.5]})),
    "huge coefficient": lambda: _mut(lambda d: d["ops"].append(
        {"name": "X", "kind": "linear", "args": [[[MAX_ABS_INT + 1, "A"]], 0]})),
    "deep nesting": lambda: _mut(lambda d: d["ops"].append(
        {"name": "X", "kind": "linear", "args": [[[[[[1]]]]], 0]})),
    "empty and": lambda: _mut(lambda d: d["ops"].append({"name": "X", "kind": "and", "args": []})),
    "name with space": lambda: _mut(lambda d: d["ops"].append({"name": "a b", "kind": "not", "args": ["Qa"]})),
    "name too long": lambda: _mut(lambda d: d["ops"].append({"name": "x" * 65, "kind": "not", "args": ["Qa"]})),
    "name not string": lambda: _mut(lambda d: d["ops"].append({"name": 7, "kind": "not", "args": ["Qa"]})),
    "args dict": lambda: _mut(lambda d: d["ops"][0].update(args={"a": 1})),
    "null in args": lambda: _mut(lambda d: d["ops"][0].update(args=[None])),
    "too many ops": lambda: _mut(lambda d: d.update(ops=[{"name": f"T{i}", "kind": "const_bool", "args": [True]}
                                                         for i in range(MAX_OPS + 1)])),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_json_is_refused_with_input_error(case):
    with pytest.raises(InputError):
        CraspProgram.from_json(HOSTILE[case]())


def test_good_json_still_loads():
    assert CraspProgram.from_json(_good()) == majority()


# ------------------------------------------------------------------ random programs
def _by_definition(prog: CraspProgram, word: str, name: str, i: int):
    """Value of ``name`` at position ``i`` straight from the definition (recursive, no prefix sums)."""
    op = prog.op(name)
    k, a = op.kind, op.args
    if k == "symbol":
        return word[i] == a[0]
    if k == "const_bool":
        return a[0]
    if k == "not":
        return not _by_definition(prog, word, a[0], i)
    if k == "and":
        return all(_by_definition(prog, word, x, i) for x in a)
    if k == "or":
        return any(_by_definition(prog, word, x, i) for x in a)
    if k == "count":
        return sum(1 for j in range(i + 1) if _by_definition(prog, word, a[0], j))
    if k == "linear":
        return sum(c * _by_definition(prog, word, x, i) for c, x in a[0]) + a[1]
    x, y = _by_definition(prog, word, a[0], i), _by_definition(prog, word, a[2], i)
    return {"<": x < y, "<=": x <= y, "==": x == y, "!=": x != y, ">": x > y, ">=": x >= y}[a[1]]


@settings(max_examples=40, deadline=None)
@given(programs())
def test_random_programs_round_trip_and_match_the_definition(prog):
    q = CraspProgram.from_json(json.loads(json.dumps(prog.to_json())))
    assert q == prog
    assert q.render() == prog.render()
    for n in range(6):
        for w in product("ab", repeat=n):
            s = "".join(w)
            want = prog.accepts_empty if not s else bool(_by_definition(prog, s, prog.output, n - 1))
            assert prog.evaluate(s) == want == q.evaluate(s)


@settings(max_examples=30, deadline=None)
@given(programs(), st.integers(0, 7), st.integers(0, 2**31))
def test_batch_interpreter_equals_the_word_interpreter(prog, n, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    words = rng.integers(0, 2, size=(5, n))
    batch = prog.evaluate_batch(words)
    for b in range(5):
        one = prog.evaluate_all([prog.alphabet[i] for i in words[b]])
        for name, col in one.items():
            assert [x for x in batch[name][b].tolist()] == col


def test_batch_interpreter_uses_exact_integers_for_huge_counts():
    import numpy as np

    ops = (CraspOp("Qa", "symbol", ("a",)), CraspOp("A", "count", ("Qa",)),
           CraspOp("X", "linear", (((MAX_ABS_INT, "A"),), 0)), CraspOp("Y", "linear", (((MAX_ABS_INT, "X"),), 0)),
           CraspOp("Z", "linear", (((MAX_ABS_INT, "Y"),), -1)), CraspOp("K", "linear", ((), 0)),
           CraspOp("Out", "compare", ("Z", ">", "K")))
    p = CraspProgram(("a", "b"), ops, "Out", False)
    vals = p.evaluate_batch(np.zeros((1, 3), dtype=np.int64))
    assert vals["Z"][0, 2] == 3 * MAX_ABS_INT ** 3 - 1 and vals["Out"][0].tolist() == [True] * 3
    with pytest.raises(InputError):
        p.evaluate_batch(np.array([[0, 2]]))
