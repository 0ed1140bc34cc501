"""One alphabet rule for every parser (issue 12: four validators used to disagree)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.logic.brasp import parse_program
from langclass.core.base.errors import AlphabetError, FormulaSyntaxError, LimitExceeded, ProgramSyntaxError
from langclass.core.logic.formulas import formula_to_dfa, parse_formula
from langclass.core.base.inputs import check_alphabet, deepest_paren
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import parse_dfa_json, parse_regex


def _dfa_json(alphabet):
    return {"alphabet": alphabet, "states": [0], "initial": 0, "accepting": [0],
            "transitions": {"0": {s: 0 for s in alphabet}} if isinstance(alphabet, list) else {}}


ENTRY_POINTS = {
    "regex": lambda al: parse_regex("a", al),
    "formula": lambda al: parse_formula("a", al),
    "formula_to_dfa": lambda al: formula_to_dfa("a", al),
    "brasp": lambda al: parse_program("output Q_a", al),
    "dfa_json": lambda al: parse_dfa_json(_dfa_json(al)),
    "dfa": lambda al: DFA(al, np.zeros((1, len(al)), dtype=np.int32), 0, [0]),
}

BAD = [
    ("ab", "alphabet"),  # a plain string: one symbol or two?
    ([], "alphabet"),
    (["a", "a"], "alphabet[1]"),
    (["a", ""], "alphabet[1]"),
    (["a", 3], "alphabet[1]"),
    (["a", "\ud800"], "alphabet[1]"),  # lone surrogate
    (["a", "b\x00"], "alphabet[1]"),  # NUL
    (["a", "\u00e9", "e\u0301"], "alphabet[2]"),  # equal after NFC
]


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("alphabet,field", BAD)
def test_every_parser_refuses_the_same_alphabets_naming_the_same_field(entry, alphabet, field):
    with pytest.raises(AlphabetError) as err:
        ENTRY_POINTS[entry](alphabet)
    assert err.value.field == field, (entry, err.value.field, err.value.detail)


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_every_parser_normalizes_symbols_to_nfc(entry):
    out = ENTRY_POINTS[entry](["a", "e\u0301"])
    alphabet = getattr(out, "alphabet", None)
    if alphabet is not None:
        assert tuple(alphabet) == ("a", "\u00e9")


def test_check_alphabet_limits_and_order():
    assert check_alphabet(["b", "a"]) == ("b", "a")
    with pytest.raises(LimitExceeded):
        check_alphabet(list("abc"), Limits(max_alphabet=2))


def test_deepest_paren_respects_escapes():
    assert deepest_paren("((a))", 2) is None
    assert deepest_paren("((a))", 1) == 1
    assert deepest_paren("\\(\\((a)", 1) == 3  # without an escape character every ( counts
    assert deepest_paren("\\(\\((a)", 1, escape="\\") is None
    assert deepest_paren("(((", 2, escape="\\") == 2


def test_lark_errors_give_positions_in_every_grammar():
    with pytest.raises(FormulaSyntaxError) as f:
        parse_formula("a &", ["a", "b"])
    assert f.value.extra["position"] == 3
    with pytest.raises(FormulaSyntaxError) as f:
        parse_formula("a # b", ["a", "b"])
    assert f.value.extra["position"] == 2 and "'#'" in f.value.detail
    with pytest.raises(ProgramSyntaxError) as p:
        parse_program("X := ", ["a", "b"])
    assert p.value.extra["position"] == 5


# --- where a parse error is: position 0-based, line/column 1-based, of the same character -------------

def _error(parse, text):
    from langclass.core.base.errors import InputError

    with pytest.raises(InputError) as info:
        parse(text)
    return info.value


PARSERS = {
    "regex": lambda t, lim=Limits(): parse_regex(t, ["a", "b"], lim),
    "formula": lambda t, lim=Limits(): parse_formula(t, ["a", "b"], lim),
    "brasp": lambda t, lim=Limits(): parse_program(t, ["a", "b"], lim),
}


@pytest.mark.parametrize("kind,text,where", [
    ("formula", "P(b & Y ", (8, 1, 9)),  # ends too early: the end, not the last token
    ("formula", "a & ", (4, 1, 5)),
    ("formula", "a\n& )", (4, 2, 3)),
    ("formula", "a $ b", (2, 1, 3)),
    ("formula", "P(a", (3, 1, 4)),
    ("brasp", "garbage!!", (7, 1, 8)),
    ("brasp", "x := Q_a\ny := ", (14, 2, 6)),
    ("brasp", "X := Q_a\n?", (9, 2, 1)),
    ("regex", "(a|", (3, 1, 4)),
    ("regex", "a)b", (1, 1, 2)),
    ("regex", "ab\n$", (3, 2, 1)),
])
def test_parse_errors_report_one_consistent_place(kind, text, where):
    err = _error(PARSERS[kind], text)
    assert (err.extra["position"], err.extra["line"], err.extra["column"]) == where, err.to_dict()


@settings(max_examples=400, deadline=None)
@given(kind=st.sampled_from(sorted(PARSERS)), text=st.text(alphabet="ab()|&*!PYS :=Q_X\n$?{},09", min_size=0, max_size=16))
def test_every_positioned_parse_error_agrees_with_itself(kind, text):
    from langclass.core.base.errors import InputError
    from langclass.core.base.inputs import line_column

    try:
        PARSERS[kind](text, Limits(max_nesting_depth=3, max_repetition=5))
    except (InputError, LimitExceeded) as err:
        if "position" in err.extra:
            pos = err.extra["position"]
            assert 0 <= pos <= len(text)
            assert (err.extra["line"], err.extra["column"]) == line_column(text, pos), (text, err.to_dict())
            if f"column {err.extra['column']}" not in err.detail and "column" in err.detail:
                raise AssertionError(f"the message names another column: {err.detail!r} vs {err.to_dict()}")
