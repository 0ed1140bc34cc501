"""One language source, read and parsed in one place (issue 12): the API, the CLI, the Python API,
batch rows and job specs all go through langclass.core.ingest.source."""

from __future__ import annotations

import json

import numpy as np
import pytest

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import AlphabetError, DfaFormatError, InputError, UnsupportedError
from langclass.core.ingest.parse import parse_regex
from langclass.core.ingest.source import (
    DfaSource,
    FormulaSource,
    ProgramSource,
    RegexSource,
    language_source,
    parse_language,
    source_from_mapping,
)

AB = parse_regex("(ab)*", ["a", "b"])


@pytest.mark.parametrize("spelling,none,both", [
    ("api", "give exactly one of 'regex', 'dfa' or 'formula' (got none)", "(got 'regex' and 'formula')"),
    ("cli", "give exactly one of --regex, --dfa or --formula (got none)", "(got --regex and --formula)"),
    ("python", "give exactly one of regex, dfa= or formula= (got none)", "(got regex and formula=)"),
])
def test_exactly_one_kind_in_each_interface_spelling(spelling, none, both):
    with pytest.raises(InputError) as err:
        language_source(spelling=spelling)
    assert str(err.value) == none and err.value.field == "regex"
    with pytest.raises(InputError) as err:
        language_source(regex="a", formula="a", alphabet=["a"], spelling=spelling)
    assert str(err.value).endswith(both) and err.value.field == "formula"


def test_each_kind_reads_to_its_typed_source_and_needs_an_alphabet():
    assert language_source(regex="a*", alphabet=["a"]) == RegexSource("a*", ["a"])
    assert language_source(formula="P a", alphabet=["a"]) == FormulaSource("P a", ["a"])
    assert language_source(program="output Q_a", alphabet=["a"], kinds=("program",)) == ProgramSource("output Q_a", ["a"])
    assert isinstance(source_from_mapping({"dfa": AB.to_canonical_dict()}), DfaSource)
    for kind in ("regex", "formula"):
        with pytest.raises(AlphabetError) as err:
            language_source(**{kind: "a"})
        assert err.value.field == "alphabet"
    with pytest.raises(InputError, match="got 'program'"):
        language_source(program="output Q_a", alphabet=["a"])  # not a kind this interface takes
    with pytest.raises(InputError, match="got str"):
        source_from_mapping("a*")


def test_every_dfa_form_parses_to_the_same_language_and_fields_are_prefixed():
    canon = AB.to_canonical_dict()
    forms = [canon, json.dumps(canon), json.dumps(canon).encode(), AB,
             {"alphabet": ["a", "b"], "states": ["s", "t"], "initial": "s", "accepting": ["s"],
              "transitions": {"s": {"a": "t"}, "t": {"b": "s"}}}]
    fps = {parse_language(DfaSource(f)).fingerprint for f in forms}
    assert fps == {AB.fingerprint()}
    with pytest.raises(DfaFormatError) as err:
        parse_language(DfaSource({**canon, "initial": 7}, field="language"))
    assert err.value.field == "language.initial"
    with pytest.raises(DfaFormatError) as err:
        parse_language(DfaSource([1, 2]))  # type: ignore[arg-type]
    assert err.value.field == "dfa"
    with pytest.raises(AlphabetError):
        parse_language(DfaSource(canon, alphabet=("b", "a")))
    assert parse_language(DfaSource(canon, alphabet=("a", "b"))).fingerprint == AB.fingerprint()


def test_the_source_record_and_the_formula_are_kept():
    p = parse_language(FormulaSource("MOD(2,5) & a", ["a", "b"]))
    assert p.source["kind"] == "formula" and p.source["notes"] == ["MOD(2,5) is read as MOD(2,1): the remainder is taken modulo m"]
    assert p.formula is not None and p.source["parsed"] == p.formula.text()
    r = parse_language(RegexSource("(ab)*", ["a", "b"]))
    assert r.source == {"kind": "regex", "regex": "(ab)*", "alphabet": ["a", "b"]} and r.dfa == AB
    d = parse_language(DfaSource(DFA(("a",), np.array([[0]]), 0, [0])))
    assert d.source["kind"] == "dfa" and d.document is None
    with pytest.raises(UnsupportedError):
        parse_language(ProgramSource("output Q_a", ["a"]))


def test_interfaces_share_the_reader():
    """The API service, the Python API and the CLI's train/construct options report the same rule."""
    from langclass.api import classify
    from langclass.app.usecases.service import parse_language as api_parse
    from langclass.core.base.limits import Limits

    with pytest.raises(InputError, match=r"^give exactly one of 'regex', 'dfa' or 'formula' \(got none\)$"):
        api_parse(limits=Limits())
    with pytest.raises(InputError, match=r"^give exactly one of regex, dfa= or formula= \(got none\)$"):
        classify()
    assert api_parse(dfa=json.dumps(AB.to_canonical_dict()), limits=Limits()).fingerprint == AB.fingerprint()
