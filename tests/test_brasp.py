"""Tests for core.brasp: the Dyck-1 depth-2 program reproduces the source's tables, parsing errors,
LTL → B-RASP agrees with formula semantics, and the hard-attention transformer simulates programs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.logic.brasp import (
    DYCK_1_DEPTH_2, accepts, accepts_batch, formula_to_brasp, parse_program, run_program,
)
from langclass.core.base.errors import ProgramSyntaxError, UnknownSymbolError, UnsupportedError
from langclass.core.logic.formulas import Atom, BOTTOM, TOP, And, Iff, Implies, Not, Or, Past, Since, Yesterday, evaluate_batch
from langclass.models.construct import build_brasp_transformer

from _ground_truth import LANGUAGES as GT


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """The constructed models are tiny; one intra-op thread avoids oversubscribing shared CPUs."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def gt_dfa(name_prefix: str) -> DFA:
    e = next(e for e in GT if e["name"].startswith(name_prefix))
    d = e["dfa"]
    idx = {s: i for i, s in enumerate(d["states"])}
    table = [[idx[d["transitions"][s][a]] for a in e["alphabet"]] for s in d["states"]]
    return DFA.from_table(e["alphabet"], table, idx[d["initial"]], [idx[s] for s in d["accepting"]])


def words_of(k: int, n: int) -> np.ndarray:
    return np.array(list(itertools.product(range(k), repeat=n)), dtype=np.int64).reshape(k ** n, n)


DYCK = parse_program(DYCK_1_DEPTH_2, ["a", "b"])


def test_dyck_reproduces_figure_3_and_section_4_1():
    # Figure 3 (ℓℓrrℓℓrℓrr, accepted) and §4.1 (ℓrrℓℓℓrrrℓ, rejected) of the source, ℓ = a, r = b
    fig3 = {"P_l": "0110011010", "S_r": "0110010110", "I": "0110011110", "B_l": "0111011111",
            "A_r": "1110111110", "C": "1111111111", "Y": "1111111111"}
    sec41 = {"P_l": "0100111000", "S_r": "1100011100", "I": "1100011000", "B_l": "0000111100",
             "A_r": "1100111100", "C": "1100111100", "Y": "0000000000"}
    for word, table in (("aabbaababb", fig3), ("abbaaabbba", sec41)):
        w = np.array([[0 if c == "a" else 1 for c in word]])
        vals = run_program(DYCK, w)
        for name, row in table.items():
            assert "".join(str(int(v)) for v in vals[name][0]) == row, (word, name)
    assert accepts(DYCK, "aabbaababb") and not accepts(DYCK, "abbaaabbba")


def test_dyck_program_is_the_ground_truth_language():
    dfa = gt_dfa("D_2")
    assert DYCK.empty_accept and dfa.accepts("")
    for n in range(1, 13):
        w = words_of(2, n)
        want = np.array([dfa.accepting[dfa.run_indices(x)] for x in w.tolist()])
        assert np.array_equal(accepts_batch(DYCK, w), want), n
    assert DYCK.depth == 3


def test_program_text_roundtrip_and_syntax_variants():
    p = parse_program("X := ▶_j [j < i, Q_a(j)] 1 : 0; Z := ◀j [j >= i, X(i) & !X(j)] Q(\"b\")(j) : X\noutput X", ["a", "b"])
    assert p.output == "X" and p.ops[1].mask == "past_nonstrict" and p.ops[1].direction == "leftmost"
    assert parse_program(p.text(), ["a", "b"]) == p
    assert parse_program(DYCK.text(), ["a", "b"]) == DYCK


@pytest.mark.parametrize("text,match", [
    ("X := Q_a & Y", "used before it is defined"),
    ("X := Q_a\nX := Q_b", "defined twice"),
    ("X := >j [j < i, Q_a] 1 : 0", "write Q_a"),
    ("X := >j [j < i, 1] 1 : Q_a(j)", "only appear in a score or value"),
    ("X := >j [j << i, 1] 1 : 0", "line 1"),
    ("X := Q_a\noutput Z", "not defined"),
    ("", "defines no vector"),
])
def test_program_errors(text, match):
    with pytest.raises(ProgramSyntaxError, match=match):
        parse_program(text, ["a", "b"])


def test_unknown_symbol_in_program():
    with pytest.raises(UnknownSymbolError):
        parse_program("X := Q_c", ["a", "b"])


def test_mod_becomes_position_marks():
    prog = formula_to_brasp("MOD(2,1) & P(MOD(3,0) & a)", ["a", "b"])
    assert prog.modulus == 6 and "marks 6" in prog.text()
    w = np.array([[0, 1, 0, 0, 1, 1, 0]])
    for n in range(1, 8):
        got = accepts_batch(prog, w[:, :n])[0]
        assert got == evaluate_batch("MOD(2,1) & P(MOD(3,0) & a)", ["a", "b"], w[:, :n])[0]


def formulas_no_mod():
    leaves = st.sampled_from([Atom("a"), Atom("b"), TOP, BOTTOM])

    def extend(children):
        return st.one_of(
            st.builds(Not, children), st.builds(Past, children), st.builds(Yesterday, children, st.integers(1, 2)),
            st.builds(And, children, children), st.builds(Or, children, children),
            st.builds(Implies, children, children), st.builds(Iff, children, children), st.builds(Since, children, children),
        )

    return st.recursive(leaves, extend, max_leaves=7)


@settings(max_examples=60, deadline=None)
@given(formulas_no_mod())
def test_formula_to_brasp_agrees_with_semantics(f):
    """Lemma 4 translation + readout vectors = evaluation at N + 1, on all words ≤ 6 (and ε)."""
    p = formula_to_brasp(f, ["a", "b"])
    for n in range(0, 7):
        w = words_of(2, n)
        assert np.array_equal(accepts_batch(p, w), evaluate_batch(f, ["a", "b"], w)), (f.text(), n)


@settings(max_examples=12, deadline=None)
@given(formulas_no_mod())
def test_hard_attention_transformer_simulates_translated_formulas(f):
    p = formula_to_brasp(f, ["a", "b"])
    model = build_brasp_transformer(p)
    for n in range(1, 7):
        w = words_of(2, n)
        with torch.no_grad():
            h = model(torch.from_numpy(w))
            logits = model.readout(h[:, -1])[:, 0]
        assert np.array_equal((logits > 0).numpy(), evaluate_batch(f, ["a", "b"], w))
        vals = run_program(p, w)
        got = model.vector_values(h)
        for name, v in vals.items():
            assert np.array_equal(got[name].numpy(), v.astype(np.float64)), name


def test_dyck_transformer_simulates_every_vector():
    model = build_brasp_transformer(DYCK)
    d = model.describe()
    assert d["layers"] == DYCK.depth + 1  # Thm 24: depth k program → k + 1 layers
    for n in range(1, 11):
        w = words_of(2, n)
        with torch.no_grad():
            h = model(torch.from_numpy(w))
        vals = run_program(DYCK, w)
        got = model.vector_values(h)
        for name, v in vals.items():
            assert np.array_equal(got[name].numpy(), v.astype(np.float64)), (n, name)
