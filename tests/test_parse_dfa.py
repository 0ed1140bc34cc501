"""DFA JSON ingest: matching of integer/string names, partial transitions, typed errors naming the item."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from langclass.core.automata.automaton import DFA
from langclass.core.base.errors import AlphabetError, DfaFormatError, InputError, LimitExceeded, UnknownSymbolError
from langclass.core.automata.export import dfa_to_json
from langclass.core.base.limits import Limits
from langclass.core.ingest.parse import normalize_alphabet, parse_dfa_json, parse_regex
from langclass.core.ingest.source import parse_language, source_from_mapping


def base() -> dict:
    return {
        "alphabet": ["a", "b"],
        "states": ["q0", "q1"],
        "initial": "q0",
        "accepting": ["q1"],
        "transitions": {"q0": {"a": "q1", "b": "q0"}, "q1": {"a": "q1", "b": "q0"}},
    }


def test_valid_dfa_is_canonicalized() -> None:
    d = parse_dfa_json(base())
    assert d.fingerprint() == parse_regex("(a|b)*a", ["a", "b"]).fingerprint()
    assert parse_dfa_json(json.dumps(base())) == d
    assert parse_dfa_json(json.dumps(base()).encode()) == d


def test_integer_and_string_state_names_are_matched_up() -> None:
    doc = {
        "alphabet": ["a"],
        "states": [0, 1, "x"],
        "initial": "0",
        "accepting": [1, "x"],
        "transitions": {"0": {"a": "1"}, "1": {"a": 0}, "x": {"a": "x"}},
    }
    d = parse_dfa_json(json.dumps(doc))
    assert d.fingerprint() == parse_regex("(aa)*a", ["a"]).fingerprint()
    # a Python mapping with integer keys works the same way
    doc2 = dict(doc, transitions={0: {"a": 1}, 1: {"a": "0"}})
    assert parse_dfa_json(doc2) == d


def test_partial_transitions_go_to_a_sink() -> None:
    doc = {"alphabet": ["a", "b"], "states": ["s", "t"], "initial": "s", "accepting": ["t"], "transitions": {"s": {"a": "t"}}}
    d = parse_dfa_json(doc)
    assert d.num_states == 3  # s, t and the added sink
    assert d.fingerprint() == parse_regex("a", ["a", "b"]).fingerprint()
    # a complete DFA gets no extra sink
    assert parse_dfa_json(base()).num_states == 2


def test_multicharacter_and_unicode_symbols() -> None:
    doc = {
        "alphabet": ["push", "pop", "e\u0301"],
        "states": [0],
        "initial": 0,
        "accepting": [0],
        "transitions": {"0": {"push": 0, "pop": 0, "\u00e9": 0}},  # NFC-equal to the alphabet symbol
    }
    d = parse_dfa_json(doc)
    assert d.alphabet == ("push", "pop", "\u00e9")
    assert d.accepts(["push", "pop", "e\u0301"])
    assert parse_dfa_json(json.dumps(dfa_to_json(d))).fingerprint() == d.fingerprint()


def test_normalize_alphabet() -> None:
    assert normalize_alphabet(["a", "e\u0301"]) == ("a", "\u00e9")
    with pytest.raises(AlphabetError) as err:
        normalize_alphabet(["\u00e9", "e\u0301"])
    assert err.value.field == "alphabet[1]" and "NFC" in err.value.detail
    with pytest.raises(LimitExceeded) as err2:
        normalize_alphabet(list("abcd"), Limits(max_alphabet=3))
    assert err2.value.limit == "max_alphabet"


def _mutate(**changes) -> dict:
    doc = base()
    for k, v in changes.items():
        if v is KeyError:
            del doc[k]
        else:
            doc[k] = v
    return doc


@pytest.mark.parametrize(
    "doc, error, field",
    [
        (_mutate(alphabet=[]), AlphabetError, "alphabet"),
        (_mutate(alphabet=["a", ""]), AlphabetError, "alphabet[1]"),
        (_mutate(alphabet=["a", 3]), AlphabetError, "alphabet[1]"),
        (_mutate(alphabet=["a", "a"]), AlphabetError, "alphabet[1]"),
        (_mutate(alphabet="ab"), AlphabetError, "alphabet"),
        (_mutate(states=[]), DfaFormatError, "states"),
        (_mutate(states=["q0", "q1", "q1"]), DfaFormatError, "states[2]"),
        (_mutate(states=[1, "1"], initial=1, accepting=[], transitions={}), DfaFormatError, "states[1]"),
        (_mutate(states=["q0", "q1", True]), DfaFormatError, "states[2]"),
        (_mutate(states=["q0", "q1", 2.0]), DfaFormatError, "states[2]"),
        (_mutate(states=["q0", "q1", None]), DfaFormatError, "states[2]"),
        (_mutate(states=["q0", "q1", ""]), DfaFormatError, "states[2]"),
        (_mutate(states="q0"), DfaFormatError, "states"),
        (_mutate(initial="q9"), DfaFormatError, "initial"),
        (_mutate(initial=["q0"]), DfaFormatError, "initial"),
        (_mutate(accepting=["q7"]), DfaFormatError, "accepting[0]"),
        (_mutate(accepting=["q1", "q1"]), DfaFormatError, "accepting[1]"),
        (_mutate(accepting="q1"), DfaFormatError, "accepting"),
        (_mutate(transitions={"q0": {"a": "q5"}}), DfaFormatError, "transitions.q0.a"),
        (_mutate(transitions={"q0": {"a": ["q0", "q1"]}}), DfaFormatError, "transitions.q0.a"),
        (_mutate(transitions={"q0": {"c": "q0"}}), UnknownSymbolError, "transitions.q0.c"),
        (_mutate(transitions={"q0": {"": "q0"}}), UnknownSymbolError, "transitions.q0."),
        (_mutate(transitions={"qq": {"a": "q0"}}), DfaFormatError, "transitions.qq"),
        (_mutate(transitions={"q0": ["q1"]}), DfaFormatError, "transitions.q0"),
        (_mutate(transitions={"q0": "q1"}), DfaFormatError, "transitions.q0"),
        (_mutate(transitions=[]), DfaFormatError, "transitions"),
        (_mutate(transitions={0: {"a": 0}, "0": {"a": 0}}, states=[0], initial=0, accepting=[]), DfaFormatError, "transitions.0"),
        (_mutate(initial=KeyError), DfaFormatError, "initial"),
        (_mutate(transitions=KeyError), DfaFormatError, "transitions"),
        (_mutate(extra=1), DfaFormatError, "extra"),
    ],
)
def test_malformed_dfa_raises_typed_error_naming_the_item(doc: dict, error: type, field: str) -> None:
    with pytest.raises(error) as err:
        parse_dfa_json(doc)
    assert err.value.field == field, err.value.detail
    assert type(err.value) is error
    # the same through JSON text, when JSON can express it
    try:
        text = json.dumps(doc)
    except (TypeError, ValueError):
        return
    if json.loads(text) == doc:
        with pytest.raises(error):
            parse_dfa_json(text)


def test_unicode_symbol_collision_in_a_row() -> None:
    doc = _mutate(alphabet=["\u00e9"], states=["s"], initial="s", accepting=[], transitions={"s": {"\u00e9": "s", "e\u0301": "s"}})
    with pytest.raises(DfaFormatError) as err:
        parse_dfa_json(doc)
    assert "NFC" in err.value.detail


@pytest.mark.parametrize(
    "text, field",
    [
        ('{"alphabet": ["a"], "alphabet": ["b"], "states": [0], "initial": 0, "accepting": [], "transitions": {}}', "alphabet"),
        ('{"alphabet": ["a"], "states": [0], "initial": 0, "accepting": [], "transitions": {"0": {}, "0": {}}}', "transitions.0"),
        ('{"alphabet": ["a"], "states": [0], "initial": 0, "accepting": [], "transitions": {"0": {"a": 0, "a": 0}}}', "transitions.0.a"),
    ],
)
def test_duplicate_json_keys(text: str, field: str) -> None:
    with pytest.raises(DfaFormatError) as err:
        parse_dfa_json(text)
    assert err.value.field == field and "duplicate" in err.value.detail


@pytest.mark.parametrize(
    "data",
    ["", "{", "[1, 2]", "null", '"dfa"', b"\xff\xfe{", '{"alphabet": [NaN]}', "{'alphabet': []}", 42, [1]],
)
def test_not_a_dfa_object(data) -> None:
    with pytest.raises(DfaFormatError):
        parse_dfa_json(data)


def test_state_limit() -> None:
    doc = {"alphabet": ["a"], "states": list(range(11)), "initial": 0, "accepting": [], "transitions": {}}
    with pytest.raises(LimitExceeded) as err:
        parse_dfa_json(doc, Limits(max_states=10))
    assert err.value.limit == "max_states" and err.value.value == 10


def test_unreachable_states_are_removed() -> None:
    doc = base()
    doc["states"] = ["q0", "q1", "island"]
    doc["accepting"] = ["q1", "island"]
    doc["transitions"]["island"] = {"a": "island", "b": "q0"}
    assert parse_dfa_json(doc) == parse_dfa_json(base())


def test_parse_language_dispatch() -> None:
    def parse(spec):
        return parse_language(source_from_mapping(spec)).dfa

    assert parse({"regex": "(a|b)*a", "alphabet": ["a", "b"]}) == parse_dfa_json(base())
    assert parse({"dfa": base()}) == parse_dfa_json(base())
    canonical = parse_dfa_json(base()).to_canonical_dict()  # the list form reads back to the same DFA
    assert parse({"dfa": canonical}) == parse_dfa_json(base())
    with pytest.raises(DfaFormatError) as err:
        parse({"dfa": {**canonical, "transitions": [[0, 9], [1, 0]]}})
    assert err.value.field == "dfa.transitions[0][1]" and "state 0, symbol 'b'" in str(err.value)  # the entry is named
    with pytest.raises(DfaFormatError) as err:
        parse({"dfa": {**canonical, "transitions": [[0, 1], [1]]}})
    assert err.value.field == "dfa.transitions[1]"
    with pytest.raises(DfaFormatError) as err:  # a duplicate accepting state, refused as in the named form
        parse({"dfa": {**canonical, "accepting": [1, 1]}})
    assert err.value.field == "dfa.accepting[1]" and "listed twice" in str(err.value)
    with pytest.raises(DfaFormatError) as err:
        parse({"dfa": {**canonical, "accepting": [0, 7]}})
    assert err.value.field == "dfa.accepting[1]"
    with pytest.raises(DfaFormatError) as err:
        parse({"dfa": _mutate(initial="zz")})
    assert err.value.field == "dfa.initial"
    with pytest.raises(AlphabetError):
        parse({"regex": "a"})
    for bad in ({}, {"regex": "a", "alphabet": ["a"], "dfa": base()}, "a*"):
        with pytest.raises(InputError):
            parse(bad)  # type: ignore[arg-type]


def test_error_dicts_are_json_ready() -> None:
    with pytest.raises(UnknownSymbolError) as err:
        parse_dfa_json(_mutate(transitions={"q0": {"c": "q0"}}))
    d = err.value.to_dict()
    json.dumps(d)
    assert d["code"] == "unknown-symbol" and d["field"] == "transitions.q0.c" and d["symbol"] == "c"


@st.composite
def exported_dfas(draw):
    """A random DFA, and its JSON with random int/str state names, shuffled order and edges into a sink dropped."""
    n = draw(st.integers(1, 7))
    k = draw(st.integers(1, 3))
    alphabet = ["a", "bb", "\u00e9"][:k]
    table = draw(st.lists(st.lists(st.integers(0, n), min_size=k, max_size=k), min_size=n, max_size=n))
    table.append([n] * k)  # state n is a sink
    acc = draw(st.lists(st.booleans(), min_size=n, max_size=n)) + [False]
    init = draw(st.integers(0, n - 1))
    names = draw(
        st.lists(st.one_of(st.integers(0, 50), st.text("xyz", min_size=1, max_size=3)), min_size=n, max_size=n, unique_by=str)
    )
    perm = draw(st.permutations(range(n)))
    dfa = DFA(tuple(alphabet), np.array(table), init, np.array(acc))
    doc = {
        "alphabet": alphabet,
        "states": [names[q] for q in perm],
        "initial": names[init],
        "accepting": [names[q] for q in perm if acc[q]],
        "transitions": {str(names[q]): {alphabet[a]: names[r] for a, r in enumerate(table[q]) if r != n} for q in perm},
    }
    return dfa, doc


@settings(max_examples=80, deadline=None)
@given(exported_dfas())
def test_random_dfa_json_round_trips(pair) -> None:
    dfa, doc = pair
    parsed = parse_dfa_json(json.dumps(doc))
    assert parsed.fingerprint() == dfa.fingerprint()
    assert parse_dfa_json(json.dumps(dfa_to_json(parsed))) == parsed


@pytest.mark.parametrize("states", [None, "q0", 3, {"q0": 1}])
def test_list_form_transitions_beside_a_states_key_that_is_no_list_names_states(states: object) -> None:
    """``transitions`` in the list form with a ``states`` key that is not a list is neither form: the
    error names ``states`` (it named a missing ``initial`` before)."""
    with pytest.raises(DfaFormatError) as e:
        parse_dfa_json({"alphabet": ["a"], "states": states, "transitions": [[0]]})
    assert e.value.field == "states" and "list of state names" in str(e.value)
