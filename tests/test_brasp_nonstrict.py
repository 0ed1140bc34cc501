"""The non-strict B-RASP translation (Masked Hard-Attention Transformers Recognize Exactly the
Star-Free Languages, §7.2 / Thm 18): P′.X(w, i) = P.X(d(w), b(i)) for every vector of random programs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.base.errors import UnsupportedError
from langclass.core.logic.brasp import DYCK_1_DEPTH_2, formula_to_brasp, parse_program, run_program
from langclass.core.logic.brasp_nonstrict import destutter, is_nonstrict, nonstrict_program
from langclass.core.logic.brasp_program import MASKS, AttentionOp, BAnd, BConst, BNot, BOr, BVar, PositionOp, Program


def _expr(draw, names, sides, depth):
    kind = draw(st.integers(0, 5)) if depth > 0 else draw(st.integers(0, 1))
    if kind == 0 and draw(st.booleans()) and depth < 2:
        return BConst(draw(st.booleans()))
    if kind <= 1:
        return BVar(draw(st.sampled_from(names)), draw(st.sampled_from(sides)))
    if kind == 2:
        return BNot(_expr(draw, names, sides, depth - 1))
    args = tuple(_expr(draw, names, sides, depth - 1) for _ in range(draw(st.integers(2, 3))))
    return BAnd(args) if kind == 3 else BOr(args)


@st.composite
def programs(draw):
    alphabet = draw(st.sampled_from(["ab", "abc", "a"]))
    initial = {f"Q_{a}": a for a in alphabet}
    names = list(initial)
    ops = []
    for t in range(draw(st.integers(1, 6))):
        name = f"V{t}"
        if draw(st.integers(0, 3)) == 0:
            ops.append(PositionOp(name, _expr(draw, names, ["i"], 2)))
        else:
            ops.append(AttentionOp(name, draw(st.sampled_from(["leftmost", "rightmost"])), draw(st.sampled_from(MASKS)),
                                   _expr(draw, names, ["i", "j"], 2), _expr(draw, names, ["i", "j"], 2),
                                   _expr(draw, names, ["i"], 1)))
        names.append(name)
    return Program(tuple(alphabet), tuple(ops), ops[-1].name, draw(st.booleans()), initial, 1)


def _check_star(program: Program, words: list[list[int]]) -> None:
    ns = nonstrict_program(program)
    assert is_nonstrict(ns)
    assert ns.output == program.output and ns.empty_accept == program.empty_accept
    for w in words:
        d, blocks = destutter(w)
        original = run_program(program, np.array([d]))
        translated = run_program(ns, np.array([w]))
        for name in program.names:  # (★): every vector of P, read on the destuttered word at the block
            assert (translated[name][0] == original[name][0][blocks]).all(), (name, w)


@settings(max_examples=40, deadline=None)
@given(programs(), st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=9), min_size=1, max_size=6))
def test_translation_reads_the_destuttered_word(program, words):
    k = len(program.alphabet)
    _check_star(program, [[x % k for x in w] for w in words])


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(programs(), st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=11), min_size=1, max_size=12))
def test_translation_reads_the_destuttered_word_many(program, words):
    k = len(program.alphabet)
    _check_star(program, [[x % k for x in w] for w in words])


def test_dyck_program_translates_to_its_destuttered_language():
    # Dyck-1 of depth 2 is not stutter-invariant: the translation accepts w iff d(w) is in it
    prog = parse_program(DYCK_1_DEPTH_2, ["a", "b"])
    _check_star(prog, [[0, 0, 1, 1], [0, 1, 0, 1], [0, 1], [1, 0], [0, 0, 0, 1, 1, 1]])
    ns = nonstrict_program(prog)
    deep = np.array([[0, 0, 0, 1, 1, 1]])  # aaabbb has depth 3: not in L_{1,2}, but d(aaabbb) = ab is
    assert not run_program(prog, deep)[prog.output][0, -1]
    assert run_program(ns, deep)[ns.output][0, -1]


def test_destutter_and_blocks():
    assert destutter("aabbba") == (list("aba"), [0, 0, 1, 1, 1, 2])
    assert destutter([]) == ([], [])


def test_formula_program_is_translated_with_strict_masks_gone():
    prog = formula_to_brasp("P(b & Y a)", ["a", "b"])
    assert not is_nonstrict(prog)
    ns = nonstrict_program(prog)
    assert {op.mask for op in ns.ops if isinstance(op, AttentionOp)} <= {"future_nonstrict", "past_nonstrict"}


def test_position_marks_are_refused():
    prog = formula_to_brasp("MOD(2,1)", ["a"])
    with pytest.raises(UnsupportedError, match="position marks"):
        nonstrict_program(prog)
