"""Interop with automata-lib (optional extra ``langclass[automata]``): conversions both ways agree
with automata-lib's own DFA semantics on every word up to a length, round trips keep the language,
and the traps stay guarded (colliding state names, partial DFAs, frozenset states, non-DFA input)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

automata_dfa = pytest.importorskip("automata.fa.dfa")
automata_nfa = pytest.importorskip("automata.fa.nfa")

import langclass  # noqa: E402
from langclass.core.automata.automaton import DFA  # noqa: E402
from langclass.core.base.errors import AlphabetError, DfaFormatError  # noqa: E402
from langclass.core.ingest.parse import parse_regex  # noqa: E402

ADFA = automata_dfa.DFA


def _words(alphabet: list[str], n: int):
    for k in range(n + 1):
        yield from itertools.product(alphabet, repeat=k)


def _agree(ours: DFA, theirs, alphabet: list[str], n: int = 6) -> None:
    for w in _words(alphabet, n):
        assert ours.accepts(list(w)) == theirs.accepts_input(list(w)), w


@pytest.mark.parametrize("seed", range(12))
def test_random_dfas_both_ways(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, alphabet = int(rng.integers(1, 6)), ["a", "b"] if seed % 2 else ["a", "b", "c"]
    names = [f"s{i}" for i in range(n)] if seed % 3 else list(range(n))
    table = rng.integers(0, n, (n, len(alphabet)))
    final = {names[q] for q in range(n) if rng.random() < 0.5}
    theirs = ADFA(states=set(names), input_symbols=set(alphabet),
                  transitions={names[q]: {s: names[int(table[q, i])] for i, s in enumerate(alphabet)} for q in range(n)},
                  initial_state=names[0], final_states=final)
    ours = langclass.from_automata_lib(theirs)
    _agree(ours, theirs, alphabet)
    back = langclass.to_automata_lib(ours)
    assert back == theirs  # automata-lib's own language equality
    _agree(ours, back, alphabet)


def test_classification_from_and_to_automata_lib() -> None:
    r = langclass.classify("(ab)*", alphabet="ab")
    theirs = langclass.to_automata_lib(r)
    assert theirs.accepts_input("abab") and not theirs.accepts_input("aba")
    assert langclass.classify(dfa=langclass.from_automata_lib(theirs)).id == r.id


def test_traps_stay_guarded() -> None:
    # 2 and "2" are two different states in automata-lib; numbering keeps them apart
    theirs = ADFA(states={2, "2"}, input_symbols={"a"}, transitions={2: {"a": "2"}, "2": {"a": 2}},
                  initial_state=2, final_states={2})
    ours = langclass.from_automata_lib(theirs)
    assert ours.fingerprint() == parse_regex("(aa)*", ["a"]).fingerprint()
    # a partial DFA: missing transitions reject (a sink is added)
    partial = ADFA(states={"p", "q"}, input_symbols={"a", "b"}, transitions={"p": {"a": "q"}, "q": {}},
                   initial_state="p", final_states={"q"}, allow_partial=True)
    ours = langclass.from_automata_lib(partial)
    assert ours.fingerprint() == parse_regex("a", ["a", "b"]).fingerprint()
    _agree(ours, partial, ["a", "b"])
    # frozenset states from the subset construction
    nfa = automata_nfa.NFA(states={"0", "1"}, input_symbols={"a", "b"},
                           transitions={"0": {"a": {"0", "1"}, "b": {"0"}}, "1": {}}, initial_state="0", final_states={"1"})
    det = ADFA.from_nfa(nfa)
    ours = langclass.from_automata_lib(det)
    assert ours.fingerprint() == parse_regex("(a|b)*a", ["a", "b"]).fingerprint()
    # an NFA is refused with a clear error, not mistaken for a DFA
    with pytest.raises(DfaFormatError):
        langclass.from_automata_lib(nfa)
    with pytest.raises(DfaFormatError):
        langclass.from_automata_lib({"states": []})


def test_non_string_symbols_are_refused() -> None:
    theirs = ADFA.__new__(ADFA)
    object.__setattr__(theirs, "states", frozenset({0}))
    object.__setattr__(theirs, "input_symbols", frozenset({1}))
    object.__setattr__(theirs, "transitions", {0: {1: 0}})
    object.__setattr__(theirs, "initial_state", 0)
    object.__setattr__(theirs, "final_states", frozenset())
    with pytest.raises(AlphabetError):
        langclass.from_automata_lib(theirs)
